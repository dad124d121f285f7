/* larmor-cli tune: placeholder until the GPU engine lands its tuner. */
#include <stdio.h>

#include "cli_util.h"
#include "commands.h"

int cmd_tune(int argc, char **argv)
{
    return cli_errorf("tune: the GPU tuner is not built yet");
}
