/* Internal to the library: the built-in table and the pieces the device files share (src/hw
 * only), then what the layers above ask of devices and ceilings that a program linking the
 * library does not (src/analysis, src/backend, src/report). Nothing here is public API. */
#ifndef FM_HW_H
#define FM_HW_H

#include "../core/internal.h"

size_t fm_hw_builtin_count(void);
const struct fm_device *fm_hw_builtin(size_t i);


/* Copies a device with its strings into arena (origin set to origin). */
enum fm_status fm_hw_copy(struct fm_arena *arena, const struct fm_device *src, const char *origin,
                          struct fm_device *out);

struct fm_devices {
    struct fm_ctx *ctx;
    struct fm_arena arena;           /* strings of added entries */
    struct fm_device *items;
    size_t n, cap;
};

/* How many words of the best-fitting name or alias of d occur in name, 0 when none fits
 * (device_match.c). */
int fm_hw_match_score(const struct fm_device *d, const char *name);

/* Index of the device whose name or an alias equals name (case-insensitive), or -1. */
long fm_hw_lookup(const struct fm_devices *devs, const char *name);
/* Puts dev (already owned by devs->arena) in place of entry `at`, or appends it when at < 0. */
enum fm_status fm_hw_put(struct fm_devices *devs, long at, const struct fm_device *dev);

/* ---- for the layers above src/hw ---- */

/* Whether an op class may run on matrix units (tensor cores): conv, matmul and attention. */
bool fm_precision_tensor_class(enum fm_class cls);   /* conv, matmul, attention */
/* What a user should know about how query resolved to dev (fm_devices_find): when query is a
 * short name several entries share ("a100": the 80 GB SXM, and the 40 GB and PCIe ones are
 * a100-40gb, a100-pcie), a note naming the others; when a GPU's own name states a memory size
 * the entry does not have ("Tesla V100-SXM2-16GB"), *named_mem_bytes is that size (else 0) and
 * the note says so. note is "" when there is nothing to say. */
void fm_device_name_note(const struct fm_devices *devs, const char *query,
                         const struct fm_device *dev, char *note, size_t size,
                         double *named_mem_bytes);
/* Ridge point of a ceiling: peak / bandwidth in FLOP/byte (0 when either is unknown). */
double fm_device_ridge(const struct fm_device *dev, enum fm_class cls,
                       enum fm_precision prec);
bool fm_device_has_tensor(const struct fm_device *dev);
/* Where a real run (measure, probe) goes: "cpu", or a CUDA GPU as "cuda", "cuda:N" or "gpu"
 * (src/hw/target.c). A device to run on, not a device-table entry to predict with. */
enum fm_target_kind { FM_TARGET_CPU = 0, FM_TARGET_CUDA, FM_TARGET_COUNT };
struct fm_target {
    enum fm_target_kind kind;
    int ordinal;                   /* CUDA device number (cuda:N); 0 for the CPU */
};
const char *fm_target_kind_name(enum fm_target_kind kind);   /* "cpu", "cuda" */
/* Parses a device string (NULL is "cpu"): FM_ERR_NOT_FOUND when text is no device string at
 * all (a device-table name, say), FM_ERR_INVALID when it is a malformed one ("cuda:x"). */
enum fm_status fm_target_parse(struct fm_ctx *ctx, const char *text,
                               struct fm_target *out);

/* Named links for data parallelism: per-GPU bidirectional bandwidth (bytes/s) and source. */
struct fm_link {
    const char *name;              /* "nvlink3", "pcie4" */
    double bw;
    const char *description;
};
size_t fm_link_count(void);
const struct fm_link *fm_link_get(size_t i);
/* case-insensitive; NULL if unknown */
const struct fm_link *fm_link_find(const char *name);

#endif
