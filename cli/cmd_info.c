/* larmor-cli info: what a file holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

int cmd_info(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        puts("usage: larmor-cli info FILE...   (.cfl/.hdr, .nii/.nii.gz, .h5, .bin, an IMPATIENT directory)\n"
             "       FILE may be preceded by --fieldmap (a field map in Hz: matrix and range)\n"
             "       or --times (sample times .cfl [1, samples, spokes]: readouts and range, checked)");
        return argc < 2 ? 2 : 0;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        lm_error err = {0};
        char *text = NULL;
        lm_code (*info)(const char *, char **, lm_error *) = lm_file_info;
        if (!strcmp(argv[i], "--fieldmap") || !strcmp(argv[i], "--times")) {
            info = argv[i][2] == 'f' ? lm_fieldmap_info : lm_times_info;
            if (++i == argc) {
                rc = cli_errorf("info: %s needs a file", argv[i - 1]);
                break;
            }
        } else if (lm_is_impatient_dir(argv[i])) {
            info = lm_impatient_info;
        }
        if (info(argv[i], &text, &err) != LM_OK) {
            rc = cli_error(&err);
            continue;
        }
        printf("%s", text);
        if (text[0] && text[strlen(text) - 1] != '\n')
            putchar('\n');
        free(text);
    }
    return rc;
}
