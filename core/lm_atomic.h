/* Atomic file replacement: write to a temporary file in the destination's
 * folder, then rename over it, so an existing file is never left truncated. */
#ifndef LM_ATOMIC_H
#define LM_ATOMIC_H

#include <stdio.h>

#include "lm_error.h"

typedef struct lm_atomic {
    FILE *f;          /* open for writing (NULL if the writer uses tmp_path itself) */
    char *tmp_path;   /* temporary name, same folder and same extension */
    char *final_path;
} lm_atomic;

/* Opens tmp file; with open_stream == 0 only reserves the name (for
 * libraries that open by name, such as libniftiio). */
lm_code lm_atomic_begin(lm_atomic *a, const char *path, int open_stream, lm_error *err);
/* Flushes, closes and renames (no fsync: atomic against a crash of the
 * process, not durable against a power cut). On failure removes the
 * temporary file. Tests only: after lm_io_fault_set("stop-before-rename")
 * it stops the process with SIGSTOP between the close and the rename. */
lm_code lm_atomic_commit(lm_atomic *a, lm_error *err);
/* Removes the temporary file; the destination is untouched. Commit and
 * abort both release the struct, so abort after commit (or after a failed
 * begin, on a zeroed struct) does nothing: writers can always call it. */
void lm_atomic_abort(lm_atomic *a);
/* Test-only fault injection, set by a front end (larmor-cli and the
 * workbench pass LARMOR_IO_FAULT) or a test: "stop-before-rename" (see
 * lm_atomic_commit), "none", NULL or "" (nothing). Another spec is refused. */
lm_code lm_io_fault_set(const char *spec, lm_error *err);

#endif
