/* One function per larmor-cli command; argv[0] is the command name. */
#ifndef LM_CLI_COMMANDS_H
#define LM_CLI_COMMANDS_H

int cmd_phantom(int argc, char **argv);
int cmd_recon(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_q(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_variants(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_send(int argc, char **argv);

/* The command of that name (larmor-cli.c's table), or NULL. */
typedef int (*cli_command_fn)(int argc, char **argv);
cli_command_fn cli_command_find(const char *name);

#endif
