/* flopmeter nsys FILE.csv: a summary `nsys stats --format csv` wrote, the CUDA kernel summary,
 * an NVTX range summary or a GPU-per-range summary (told apart by its header), per kernel or
 * range and in total. */
#include "cli.h"

static const char description[] =
    "Reads one report of `nsys stats --format csv`: cuda_gpu_kern_sum (older: gpukernsum), the\n"
    "GPU time and instances of each kernel; nvtx_sum (older: nvtxsum), the CPU-side time and\n"
    "instances of each NVTX range; nvtx_gpu_proj_sum, the GPU time of each NVTX range (its\n"
    "instances projected onto the GPU), with its GPU operations and CPU time; or nvtx_kern_sum\n"
    "(older: nvtxkernsum), the kernels launched in each range and their time. Which one it is\n"
    "comes from the file's header.\n\n"
    "examples:\n"
    "  nsys stats --report cuda_gpu_kern_sum --format csv run.nsys-rep > kernels.csv\n"
    "  flopmeter nsys kernels.csv --format json\n"
    "  nsys stats --report nvtx_gpu_proj_sum --format csv -o gpu run.nsys-rep\n"
    "  flopmeter nsys gpu_nvtx_gpu_proj_sum.csv";

int cmd_nsys(struct cli_run *run, int argc, char **argv)
{
    enum fm_format format = FM_FORMAT_TABLE;
    struct cli_opt opts[] = {
        {"format", CLI_PARSED, &format, cli_parse_format, "table|csv|json", "output format",
         NULL, NULL},
        {0}};
    const char *pos[1];
    int r = cli_parse("nsys", "FILE.csv [--format table|csv|json]", description, opts, argc,
                      argv, pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = run->ctx;
    struct fm_nsys_summary *s = NULL;
    enum fm_status st = fm_nsys_read_file(ctx, pos[0], &s);
    if (st) {
        r = cli_fail(ctx, st);
    } else {
        struct fm_report_opts ro;
        fm_report_opts_init(&ro);
        ro.format = format;
        run->status = fm_report_nsys(cli_out(run), s, &ro);
        r = FM_EXIT_OK;
    }
    fm_nsys_summary_free(s);
    return r;
}
