/* larmor-cli info: what a file holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

/* --json: the geometry of a volume (NIfTI, cfl, DICOM) as one JSON line:
 * dims, voxel size and the 4x4 index -> RAS mm affine. */
static int info_json(const char *path, const char *series)
{
    lm_error err = {0};
    lm_volume *v = NULL;
    if (lm_load_volume_series(path, series, &v, &err) != LM_OK)
        return cli_error(&err);
    printf("{");
    cli_json_str(stdout, "path", path, 1);
    printf("\"dims\": [%lld, %lld, %lld], ", (long long)v->dims[0], (long long)v->dims[1], (long long)v->dims[2]);
    printf("\"voxel_mm\": [%.10g, %.10g, %.10g], ", v->voxel_mm[0], v->voxel_mm[1], v->voxel_mm[2]);
    printf("\"affine\": [");
    for (int r = 0; r < 4; r++)
        printf("%s[%.10g, %.10g, %.10g, %.10g]", r ? ", " : "", v->affine[r][0], v->affine[r][1], v->affine[r][2],
               v->affine[r][3]);
    printf("], ");
    cli_json_bool(stdout, "geometry", !v->no_geometry, 0);
    printf("}\n");
    lm_volume_free(v);
    return 0;
}

int cmd_info(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        puts("usage: larmor-cli info FILE...   (.cfl/.hdr, .nii/.nii.gz, .h5, .bin, an IMPATIENT directory)\n"
             "       FILE may be preceded by --fieldmap (a field map in Hz: matrix and range)\n"
             "       or --times (sample times .cfl [1, samples, spokes]: readouts and range, checked)\n"
             "       larmor-cli info --json [--series UID] VOLUME...   (NIfTI, cfl, a DICOM folder or file):\n"
             "       one JSON line each: dims, voxel_mm and the 4x4 affine (index -> RAS mm, NIfTI's sform)");
        return argc < 2 ? 2 : 0;
    }
    int rc = 0, json = 0;
    const char *series = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--series") && i + 1 < argc)
            series = argv[++i];
    }
    if (json) {
        for (int i = 1; i < argc; i++) {
            if (!strcmp(argv[i], "--series"))
                i++;
            else if (strcmp(argv[i], "--json"))
                rc |= info_json(argv[i], series);
        }
        return rc;
    }
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
