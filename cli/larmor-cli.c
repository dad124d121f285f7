/* larmor-cli: the command-line front end (docs/conventions.md section 5). Each command
 * lives in its own cmd_*.c file and only parses options, loads, calls the
 * library and writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_gpu_visible.h"
#include "cli_serve.h"
#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"phantom", cmd_phantom, "synthesise a benchmark problem or phantom (traj, k-space, truth)"},
    {"recon", cmd_recon, "reconstruct: Toeplitz CG or gridding"},
    {"metrics", cmd_metrics, "PSNR and percent error of an image against a truth"},
    {"q", cmd_q, "compute Q (or F^H d) for a Parboil mri-q / mri-fhd input"},
    {"bench", cmd_bench, "time Q, F^H d and CG for kernel variants (the paper's Figure 9)"},
    {"variants", cmd_variants, "list every kernel variant, available or why not"},
    {"info", cmd_info, "describe what a file holds"},
    {"convert", cmd_convert, "write any input (IMPATIENT dir, .h5, .cfl) as BART cfl files"},
    {"tune", cmd_tune, "tune gpu-tuned for this GPU and store the result"},
    {"demo", cmd_demo, "headless demo: B32 with CG and gridding, NIfTI + PNG + metrics"},
    {"serve", cmd_serve, "run the commands of LARMOR_SERVER=SOCKET clients in one warm process"},
    {"send", cmd_send, "stream an ISMRMRD file to an MRD server (serve --mrd) and write its images"},
};

cli_command_fn cli_command_find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(name, commands[i].name))
            return commands[i].fn;
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: larmor-cli COMMAND [OPTIONS]   (larmor-cli COMMAND --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    cli_trace("main");
    lm_trace_set(getenv("LARMOR_TRACE") ? cli_trace : NULL); /* the library's milestones, every command */
    lm_error terr = {0};
    if (larmor_tuning_init_from_env(&terr) != LM_OK) { /* the LARMOR_* knobs (docs/tuning.md) */
        fprintf(stderr, "larmor-cli: %s\n", terr.msg);
        return 2;
    }
    /* test-only hooks: a bad value injects nothing */
    (void)larmor_fault_set(getenv("LARMOR_GPU_FAULT"), getenv("LARMOR_IO_FAULT"), NULL);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("larmor-cli %s\n", LM_VERSION);
        return 0;
    }
    const char *server = getenv("LARMOR_SERVER");
    if (server && *server && strcmp(argv[1], "serve") != 0) {
        const int rc = cli_serve_forward(server, argc - 1, argv + 1); /* no CUDA in this process */
        cli_trace("command done");
        return rc;
    }
    /* Before any CUDA call: a command on one GPU lets CUDA see only that one
     * (the driver initialises every visible device in the first call). */
    char visible[256];
    if (cli_gpu_visible_for(argc - 1, argv + 1, getenv("CUDA_VISIBLE_DEVICES"), getenv("LARMOR_GPU_DEVICES"),
                            visible, sizeof visible))
        setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    const cli_command_fn fn = cli_command_find(argv[1]);
    if (!fn) {
        fprintf(stderr, "larmor-cli: unknown command '%s' (try larmor-cli --help)\n", argv[1]);
        return 2;
    }
    const int rc = fn(argc - 1, argv + 1);
    larmor_gpu_prewarm_wait(); /* a context still being made must not race the exit */
    cli_trace("command done");
    return rc;
}
