/* The client side of larmor-cli serve (cmd_serve.c): sends a command to
 * the server at path with this process' standard descriptors and folder,
 * and returns the command's exit status (1 with a one-line error when the
 * server cannot be reached). argv[0] is the command name. */
#ifndef LM_CLI_SERVE_H
#define LM_CLI_SERVE_H

int cli_serve_forward(const char *path, int argc, char **argv);

#endif
