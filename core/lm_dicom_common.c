/* The parts of the DICOM front door that need no dcmtk (docs/dicom.md):
 * option names, the output-folder rule and telling a DICOM input apart, so
 * a build without dcmtk still names DICOM inputs and refuses them clearly. */
#include "lm_dicom.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

lm_code lm_dicom_part_parse(const char *s, lm_dicom_part *out, lm_error *err)
{
    static const struct {
        const char *name;
        lm_dicom_part p;
    } t[] = {{"magnitude", LM_DICOM_MAGNITUDE}, {"phase", LM_DICOM_PHASE}, {"real", LM_DICOM_REAL},
             {"imag", LM_DICOM_IMAG}, {"imaginary", LM_DICOM_IMAG}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (s && !strcmp(s, t[i].name)) {
            *out = t[i].p;
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID, "--dicom-part: '%s' is not magnitude, phase, real or imag", s ? s : "");
}

const char *lm_dicom_part_name(lm_dicom_part p)
{
    switch (p) {
    case LM_DICOM_PHASE: return "phase";
    case LM_DICOM_REAL: return "real";
    case LM_DICOM_IMAG: return "imag";
    default: return "magnitude";
    }
}

void lm_dicom_write_opts_init(lm_dicom_write_opts *o)
{
    memset(o, 0, sizeof *o);
}

lm_code lm_dicom_check_out_dir(const char *dir, lm_error *err)
{
    struct stat st;
    if (!dir || !*dir)
        return lm_fail(err, LM_ERR_INVALID, "--out-dicom: an empty folder name");
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? LM_OK : lm_fail(err, LM_ERR_IO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return lm_fail(err, LM_ERR_INVALID, "%s: exists and is not a folder; nothing written", dir);
    DIR *dp = opendir(dir);
    if (!dp)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open the folder: %s", dir, strerror(errno));
    int empty = 1;
    for (struct dirent *e; (e = readdir(dp));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = 0;
    closedir(dp);
    return empty ? LM_OK : lm_fail(err, LM_ERR_INVALID, "%s: the folder exists and is not empty; nothing written", dir);
}

int lm_dicom_has_preamble(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char b[132];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    return n == sizeof b && memcmp(b + 128, "DICM", 4) == 0;
}

int lm_dicom_is_candidate(const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0)
        return 0;
    return S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && lm_dicom_has_preamble(path));
}
