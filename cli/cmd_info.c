/* larmor-cli info: what a file holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "lm_io.h"

int cmd_info(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        puts("usage: larmor-cli info FILE...   (.cfl/.hdr, .nii/.nii.gz, .h5, .bin)");
        return argc < 2 ? 2 : 0;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        lm_error err = {0};
        char *text = NULL;
        if (lm_file_info(argv[i], &text, &err) != LM_OK) {
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
