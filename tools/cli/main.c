/* flopmeter's entry point: the command table and dispatch. Each command is a cmd_<name>.c, run
 * through cli_run (run.c). */
#include "cli.h"

#include <string.h>

static const struct cli_cmd commands[] = {
    {"count", cmd_count, "FLOPs, MACs, bytes, parameters and memory of a model, per layer"},
    {"models", cmd_models, "list the built-in architectures"},
    {"devices", cmd_devices, "list the device table (GPUs, TPUs; your CPU via probe --save)"},
    {"device", cmd_device, "show one device's figures and their sources"},
    {"roofline", cmd_roofline, "place each layer and the network on a device's roofline"},
    {"predict", cmd_predict, "predict step, epoch and training time on a device (PALEO)"},
    {"plan", cmd_plan, "a parallel training plan on a GPU cluster: memory, step time, MFU"},
    {"utilization", cmd_utilization, "utilization from a measured step or epoch time"},
    {"probe", cmd_probe, "measure this machine's (or a GPU's) peak FLOP/s and bandwidth"},
    {"measure", cmd_measure, "run and time real training or inference steps (CPU or CUDA)"},
    {"calibrate", cmd_calibrate, "time single layers on a device and fit its time model"},
    {"trace", cmd_trace, "steps, op times and utilization from a PyTorch profiler trace"},
    {"ncu", cmd_ncu, "read an Nsight Compute CSV: FLOPs, DRAM bytes, time per kernel"},
    {"nsys", cmd_nsys, "read an Nsight Systems kernel or NVTX summary (nsys stats CSV)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: flopmeter COMMAND [options]   (flopmeter COMMAND --help for its options)\n\n"
               "flopmeter counts the work of neural-network training (forward, backward split "
               "into\n"
               "input and weight gradients, optimizer), bounds it on a device's roofline, and\n"
               "measures it for real. FLOPs = 2 x MACs + other ops; every number says its unit.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nMODEL is a built-in name (flopmeter models) or a path to an .onnx file.\n"
               "exit status: 0 success, 1 failure, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return FM_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        if (argc > 2 && strcmp(cmd, "help") == 0) {
            for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                if (strcmp(commands[i].name, argv[2]) == 0) {
                    char *args[] = {argv[2], "--help", NULL};
                    return cli_run(&commands[i], 2, args);
                }
            }
        }
        usage(stdout);
        return FM_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("flopmeter %s\n", FM_VERSION);
        return FM_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(commands[i].name, cmd) == 0)
            return cli_run(&commands[i], argc - 1, argv + 1);
    }
    const char *names[sizeof(commands) / sizeof(commands[0])];
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        names[i] = commands[i].name;
    const char *near = fm_nearest_name(cmd, names, sizeof(names) / sizeof(names[0]));
    if (near)
        fprintf(stderr, "flopmeter: unknown command '%s'; did you mean '%s'?\n\n", cmd, near);
    else
        fprintf(stderr, "flopmeter: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return FM_EXIT_USAGE;
}
