/* PLACEHOLDER until its issue lands: replaced by the real command. */
#include "cli.h"

int cmd_devices(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "flopmeter: 'devices' is not available in this build yet\n");
    return FM_EXIT_FAIL;
}

int cmd_device(int argc, char **argv)
{
    return cmd_devices(argc, argv);
}
