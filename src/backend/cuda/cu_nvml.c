/* NVML, opened at run time with dlopen so that flopmeter neither needs nvml.h to build nor the
 * library to run: the SM clock now (for reports next to the measured times). Absent NVML, or
 * any NVML failure, just means "clock unknown" (0). The prototypes are NVML's documented C
 * API (nvml.h, CUDA 11-13), reduced to the calls used. */
#include "cu.h"

#include <dlfcn.h>
#include <string.h>

#define NVML_SUCCESS 0
#define NVML_CLOCK_SM 1

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_shutdown_fn)(void);
typedef int (*nvml_by_pci_fn)(const char *bus_id, void **device);
typedef int (*nvml_clock_fn)(void *device, int type, unsigned *mhz);

/* dlsym returns an object pointer; POSIX guarantees it converts to a function pointer, ISO C
 * does not, so copy the bits rather than cast */
static void *sym(void *lib, const char *name, size_t size, void *fn)
{
    void *p = dlsym(lib, name);
    if (p)
        memcpy(fn, &p, size);
    return p;
}

void cu_nvml_open(struct cu_state *s)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    nvml_init_fn init = NULL;
    nvml_shutdown_fn shutdown = NULL;
    nvml_by_pci_fn by_pci = NULL;
    nvml_clock_fn clock = NULL;
    char bus[64];
    void *dev = NULL;
    if (!sym(lib, "nvmlInit_v2", sizeof(init), &init) ||
        !sym(lib, "nvmlShutdown", sizeof(shutdown), &shutdown) ||
        !sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", sizeof(by_pci), &by_pci) ||
        !sym(lib, "nvmlDeviceGetClockInfo", sizeof(clock), &clock) || init() != NVML_SUCCESS) {
        dlclose(lib);
        return;
    }
    /* CUDA and NVML may number devices differently: match by PCI bus id */
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), s->device) != cudaSuccess ||
        by_pci(bus, &dev) != NVML_SUCCESS) {
        shutdown();
        dlclose(lib);
        return;
    }
    s->nvml = lib;
    s->nvml_dev = dev;
    s->nvml_clock = clock;
    s->nvml_shutdown = shutdown;
}

double cu_nvml_clock(struct cu_state *s)
{
    unsigned mhz = 0;
    if (!s->nvml || s->nvml_clock(s->nvml_dev, NVML_CLOCK_SM, &mhz) != NVML_SUCCESS)
        return 0.0;
    return (double)mhz;
}

void cu_nvml_close(struct cu_state *s)
{
    if (!s->nvml)
        return;
    s->nvml_shutdown();
    dlclose(s->nvml);
    s->nvml = NULL;
}
