/* probe --nccl: NCCL's all-reduce, all-gather, reduce-scatter and all-to-all (grouped send/recv,
 * as nccl-tests' alltoall) timed across every visible GPU from one process (ncclCommInitAll),
 * with NCCL opened at run time by dlopen, as cu_nvml.c opens NVML: flopmeter needs neither
 * nccl.h to build nor libnccl to run anything else. The prototypes are NCCL's documented C API
 * (nccl.h, NCCL 2.7 and later), reduced to the calls used. Bus bandwidth follows nccl-tests'
 * doc/PERFORMANCE.md. One node only: what crosses nodes needs one process per node (MPI), which
 * this does not do. */
#include "cu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define NCCL_FLOAT32 7
#define NCCL_SUM 0
#define MAX_GPUS 64

typedef void *nccl_comm;
struct nccl {
    void *lib;
    int (*init_all)(nccl_comm *comms, int n, const int *devs);
    int (*destroy)(nccl_comm comm);
    int (*all_reduce)(const void *s, void *r, size_t n, int type, int op, nccl_comm c,
                      cudaStream_t st);
    int (*all_gather)(const void *s, void *r, size_t n, int type, nccl_comm c, cudaStream_t st);
    int (*reduce_scatter)(const void *s, void *r, size_t n, int type, int op, nccl_comm c,
                          cudaStream_t st);
    int (*send)(const void *s, size_t n, int type, int peer, nccl_comm c, cudaStream_t st);
    int (*recv)(void *r, size_t n, int type, int peer, nccl_comm c, cudaStream_t st);
    int (*group_start)(void);
    int (*group_end)(void);
    const char *(*error_string)(int r);
};

static void *sym(void *lib, const char *name, size_t size, void *fn)
{
    void *p = dlsym(lib, name);
    if (p)
        memcpy(fn, &p, size);
    return p;
}

static bool nccl_open(struct nccl *n)
{
    memset(n, 0, sizeof(*n));
    n->lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        n->lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return false;
    if (!sym(n->lib, "ncclCommInitAll", sizeof(n->init_all), &n->init_all) ||
        !sym(n->lib, "ncclCommDestroy", sizeof(n->destroy), &n->destroy) ||
        !sym(n->lib, "ncclAllReduce", sizeof(n->all_reduce), &n->all_reduce) ||
        !sym(n->lib, "ncclAllGather", sizeof(n->all_gather), &n->all_gather) ||
        !sym(n->lib, "ncclReduceScatter", sizeof(n->reduce_scatter), &n->reduce_scatter) ||
        !sym(n->lib, "ncclSend", sizeof(n->send), &n->send) ||
        !sym(n->lib, "ncclRecv", sizeof(n->recv), &n->recv) ||
        !sym(n->lib, "ncclGroupStart", sizeof(n->group_start), &n->group_start) ||
        !sym(n->lib, "ncclGroupEnd", sizeof(n->group_end), &n->group_end) ||
        !sym(n->lib, "ncclGetErrorString", sizeof(n->error_string), &n->error_string)) {
        dlclose(n->lib);
        n->lib = NULL;
        return false;
    }
    return true;
}

struct rank {
    void *send, *recv;
    cudaStream_t stream;
};

/* One collective on every rank; `floats` is the send count per rank. */
static int launch(struct nccl *n, nccl_comm *comms, struct rank *r, int g, int coll,
                  size_t floats)
{
    int rc = n->group_start();
    for (int i = 0; i < g && !rc; i++) {
        if (cudaSetDevice(i) != cudaSuccess)
            return -1;
        switch (coll) {
        case 0:
            rc = n->all_reduce(r[i].send, r[i].recv, floats, NCCL_FLOAT32, NCCL_SUM, comms[i],
                               r[i].stream);
            break;
        case 1:   /* all-gather: each rank sends floats / g, receives floats */
            rc = n->all_gather(r[i].send, r[i].recv, floats / (size_t)g, NCCL_FLOAT32, comms[i],
                               r[i].stream);
            break;
        case 2:   /* reduce-scatter: each rank sends floats, receives floats / g */
            rc = n->reduce_scatter(r[i].send, r[i].recv, floats / (size_t)g, NCCL_FLOAT32,
                                   NCCL_SUM, comms[i], r[i].stream);
            break;
        default:   /* all-to-all: floats / g to every peer */
            for (int p = 0; p < g && !rc; p++) {
                size_t chunk = floats / (size_t)g;
                rc = n->send((const float *)r[i].send + (size_t)p * chunk, chunk, NCCL_FLOAT32, p,
                             comms[i], r[i].stream);
                if (!rc)
                    rc = n->recv((float *)r[i].recv + (size_t)p * chunk, chunk, NCCL_FLOAT32, p,
                                 comms[i], r[i].stream);
            }
            break;
        }
    }
    int end = n->group_end();
    return rc ? rc : end;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Seconds per collective: 2 warm-up runs, then the mean of `iters`. */
static int time_coll(struct nccl *n, nccl_comm *comms, struct rank *r, int g, int coll,
                     size_t floats, int iters, double *out)
{
    double t0 = 0;
    for (int it = 0; it < iters + 2; it++) {
        if (it == 2) {
            for (int i = 0; i < g; i++) {
                cudaSetDevice(i);
                if (cudaStreamSynchronize(r[i].stream) != cudaSuccess)
                    return -1;
            }
            t0 = now_s();
        }
        int rc = launch(n, comms, r, g, coll, floats);
        if (rc)
            return rc;
    }
    for (int i = 0; i < g; i++) {
        cudaSetDevice(i);
        if (cudaStreamSynchronize(r[i].stream) != cudaSuccess)
            return -1;
    }
    *out = (now_s() - t0) / iters;
    return 0;
}

enum fm_status fm_probe_nccl(struct fm_ctx *ctx, struct fm_nccl_probe *out)
{
    memset(out, 0, sizeof(*out));
    int g = 0;
    if (cudaGetDeviceCount(&g) != cudaSuccess || g < 1)
        return fm_error(ctx, FM_ERR_DEVICE, "no CUDA GPU is visible: nothing for NCCL to time");
    if (g < 2)
        return fm_error(ctx, FM_ERR_DEVICE,
                        "one GPU is visible: collectives need two or more (bus bandwidth over "
                        "one rank is 0)");
    if (g > MAX_GPUS)
        g = MAX_GPUS;
    struct nccl n;
    if (!nccl_open(&n))
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "NCCL (libnccl.so.2) could not be opened, or lacks ncclSend/ncclRecv "
                        "(NCCL 2.7 or later): install NCCL or put it on LD_LIBRARY_PATH");
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        snprintf(out->gpu_name, sizeof(out->gpu_name), "%.95s", prop.name);
    enum fm_status st = FM_OK;
    nccl_comm comms[MAX_GPUS] = {0};
    struct rank r[MAX_GPUS];
    memset(r, 0, sizeof(r));
    int devs[MAX_GPUS];
    for (int i = 0; i < g; i++)
        devs[i] = i;
    /* 256 MiB of floats per buffer (divisible by every rank count up to 64 x 4 bytes) */
    const size_t large = (size_t)64 << 20, small = 2048;
    int rc = n.init_all(comms, g, devs);
    if (rc) {
        st = fm_error(ctx, FM_ERR_BACKEND, "ncclCommInitAll over %d GPUs: %s", g,
                      n.error_string(rc));
        goto out;
    }
    for (int i = 0; i < g; i++) {
        cudaSetDevice(i);
        if (cudaMalloc(&r[i].send, large * 4) != cudaSuccess ||
            cudaMalloc(&r[i].recv, large * 4) != cudaSuccess ||
            cudaStreamCreate(&r[i].stream) != cudaSuccess) {
            st = fm_error(ctx, FM_ERR_DEVICE, "GPU %d: no memory for two 256 MiB buffers", i);
            goto out;
        }
        cudaMemset(r[i].send, 0, large * 4);
    }
    out->gpus = g;
    out->large_bytes = (double)large * 4;
    out->small_bytes = (double)small * 4;
    for (int c = 0; c < 4; c++) {
        double tl = 0, ts = 0;
        size_t lf = large / (size_t)g * (size_t)g, sf = small / (size_t)g * (size_t)g;
        rc = time_coll(&n, comms, r, g, c, lf, 10, &tl);
        if (!rc)
            rc = time_coll(&n, comms, r, g, c, sf, 50, &ts);
        if (rc) {
            st = fm_error(ctx, FM_ERR_BACKEND, "NCCL collective %d failed: %s", c,
                          rc > 0 ? n.error_string(rc) : "a CUDA call failed");
            goto out;
        }
        /* nccl-tests: algbw = S / t; busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n else */
        double f = (double)(g - 1) / g * (c == 0 ? 2.0 : 1.0);
        out->busbw[c] = (double)lf * 4 / tl * f;
        out->small_s[c] = ts;
    }
out:
    for (int i = 0; i < g; i++) {
        cudaSetDevice(i);
        if (r[i].stream)
            cudaStreamDestroy(r[i].stream);
        cudaFree(r[i].send);
        cudaFree(r[i].recv);
        if (comms[i])
            n.destroy(comms[i]);
    }
    dlclose(n.lib);
    return st;
}
