/* PLACEHOLDER until its issue lands: replaced by the real command. */
#include "cli.h"

int cmd_roofline(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "flopmeter: 'roofline' is not available in this build yet\n");
    return FM_EXIT_FAIL;
}
