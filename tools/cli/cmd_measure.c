/* PLACEHOLDER until its issue lands: replaced by the real command. */
#include "cli.h"

int cmd_measure(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "flopmeter: 'measure' is not available in this build yet\n");
    return FM_EXIT_FAIL;
}
