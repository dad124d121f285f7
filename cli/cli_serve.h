/* The client side of larmor-cli serve (cmd_serve.c): sends a command to
 * the server at path with this process' standard descriptors and folder,
 * and returns the command's exit status (1 with a one-line error when the
 * server cannot be reached). argv[0] is the command name. */
#ifndef LM_CLI_SERVE_H
#define LM_CLI_SERVE_H

int cli_serve_forward(const char *path, int argc, char **argv);

/* In a command run by larmor-cli serve: the server's encoding cache
 * (lm_encoding_cache.h; --cache-mb), for lm_recon_opts.encodings. NULL
 * outside a server or with --cache-mb 0. */
struct lm_encoding_cache *cli_serve_encodings(void);

#endif
