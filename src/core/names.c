/* Names and sizes of the small enums (dtype, role, class, phase, primitive, mode, optimizer),
 * each table checked against its enum's _COUNT. */
#include "internal.h"

#include <string.h>
#include <strings.h>

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    const char *name;
    size_t size;
    bool is_float;
} dtypes[] = {
    [FM_DTYPE_FP32] = {"fp32", 4, true},   [FM_DTYPE_FP16] = {"fp16", 2, true},
    [FM_DTYPE_BF16] = {"bf16", 2, true},   [FM_DTYPE_FP64] = {"fp64", 8, true},
    [FM_DTYPE_FP8] = {"fp8", 1, true},     [FM_DTYPE_INT64] = {"int64", 8, false},
    [FM_DTYPE_INT32] = {"int32", 4, false}, [FM_DTYPE_INT16] = {"int16", 2, false},
    [FM_DTYPE_INT8] = {"int8", 1, false},  [FM_DTYPE_UINT8] = {"uint8", 1, false},
    [FM_DTYPE_BOOL] = {"bool", 1, false},
};
_Static_assert(FM_COUNT_OF(dtypes) == FM_DTYPE_COUNT, "dtypes must cover enum fm_dtype");

size_t fm_dtype_size(enum fm_dtype dtype)
{
    return (unsigned)dtype < FM_DTYPE_COUNT ? dtypes[dtype].size : 0;
}
const char *fm_dtype_name(enum fm_dtype dtype)
{
    return (unsigned)dtype < FM_DTYPE_COUNT ? dtypes[dtype].name : "?";
}
bool fm_dtype_is_float(enum fm_dtype dtype)
{
    return (unsigned)dtype < FM_DTYPE_COUNT && dtypes[dtype].is_float;
}

bool fm_dtype_parse(const char *s, enum fm_dtype *out)
{
    static const struct {
        const char *alias;
        enum fm_dtype dtype;
    } aliases[] = {
        {"float32", FM_DTYPE_FP32}, {"float", FM_DTYPE_FP32},    {"float16", FM_DTYPE_FP16},
        {"half", FM_DTYPE_FP16},    {"bfloat16", FM_DTYPE_BF16}, {"float64", FM_DTYPE_FP64},
        {"double", FM_DTYPE_FP64},
    };
    for (size_t i = 0; i < FM_DTYPE_COUNT; i++) {
        if (strcasecmp(s, dtypes[i].name) == 0) {
            *out = (enum fm_dtype)i;
            return true;
        }
    }
    for (size_t i = 0; i < FM_COUNT_OF(aliases); i++) {
        if (strcasecmp(s, aliases[i].alias) == 0) {
            *out = aliases[i].dtype;
            return true;
        }
    }
    return false;
}

static const char *const roles[] = {
    [FM_ROLE_INPUT] = "input",   [FM_ROLE_PARAM] = "parameter", [FM_ROLE_BUFFER] = "buffer",
    [FM_ROLE_ACTIVATION] = "activation", [FM_ROLE_CONST] = "constant",
};
_Static_assert(FM_COUNT_OF(roles) == FM_ROLE_COUNT, "roles must cover enum fm_role");
const char *fm_role_name(enum fm_role role)
{
    return (unsigned)role < FM_ROLE_COUNT ? roles[role] : "?";
}

static const char *const classes[] = {
    [FM_CLASS_CONV] = "conv",
    [FM_CLASS_MATMUL] = "matmul",
    [FM_CLASS_NORM] = "norm",
    [FM_CLASS_ACTIVATION] = "activation",
    [FM_CLASS_POOL] = "pool",
    [FM_CLASS_ELEMENTWISE] = "elementwise",
    [FM_CLASS_REDUCTION] = "reduction",
    [FM_CLASS_DATA_MOVEMENT] = "data_movement",
    [FM_CLASS_EMBEDDING] = "embedding",
    [FM_CLASS_ATTENTION] = "attention",
    [FM_CLASS_LOSS] = "loss",
    [FM_CLASS_OTHER] = "other",
};
_Static_assert(FM_COUNT_OF(classes) == FM_CLASS_COUNT, "classes must cover enum fm_class");
const char *fm_class_name(enum fm_class cls)
{
    return (unsigned)cls < FM_CLASS_COUNT ? classes[cls] : "?";
}

static const char *const phases[] = {
    [FM_PHASE_FWD] = "fwd",
    [FM_PHASE_BWD_DATA] = "bwd_data",
    [FM_PHASE_BWD_WEIGHT] = "bwd_weight",
    [FM_PHASE_OPTIMIZER] = "optimizer",
};
_Static_assert(FM_COUNT_OF(phases) == FM_PHASE_COUNT, "phases must cover enum fm_phase");
const char *fm_phase_name(enum fm_phase phase)
{
    return (unsigned)phase < FM_PHASE_COUNT ? phases[phase] : "?";
}

static const char *const prims[] = {
    [FM_PRIM_MAC] = "mac", [FM_PRIM_ADD] = "add", [FM_PRIM_MUL] = "mul",
    [FM_PRIM_DIV] = "div", [FM_PRIM_CMP] = "cmp", [FM_PRIM_SPECIAL] = "special",
};
_Static_assert(FM_COUNT_OF(prims) == FM_PRIM_COUNT, "prims must cover enum fm_prim");
const char *fm_prim_name(enum fm_prim prim)
{
    return (unsigned)prim < FM_PRIM_COUNT ? prims[prim] : "?";
}

static const char *const modes[] = {[FM_MODE_TRAIN] = "train", [FM_MODE_INFER] = "infer"};
_Static_assert(FM_COUNT_OF(modes) == FM_MODE_COUNT, "modes must cover enum fm_mode");
const char *fm_mode_name(enum fm_mode mode)
{
    return (unsigned)mode < FM_MODE_COUNT ? modes[mode] : "?";
}

static const char *const optimizers[] = {
    [FM_OPTIM_SGD] = "sgd", [FM_OPTIM_ADAM] = "adam", [FM_OPTIM_NONE] = "none"};
_Static_assert(FM_COUNT_OF(optimizers) == FM_OPTIM_COUNT, "optimizers must cover enum");
const char *fm_optimizer_name(enum fm_optimizer opt)
{
    return (unsigned)opt < FM_OPTIM_COUNT ? optimizers[opt] : "?";
}

bool fm_optimizer_parse(const char *s, enum fm_optimizer *out)
{
    for (int i = 0; s && i < FM_OPTIM_COUNT; i++) {
        if (strcasecmp(s, optimizers[i]) == 0) {
            *out = (enum fm_optimizer)i;
            return true;
        }
    }
    return false;
}

static const char *const formats[] = {
    [FM_FORMAT_TABLE] = "table", [FM_FORMAT_CSV] = "csv", [FM_FORMAT_JSON] = "json"};
_Static_assert(FM_COUNT_OF(formats) == FM_FORMAT_COUNT, "formats must cover enum fm_format");
const char *fm_format_name(enum fm_format format)
{
    return (unsigned)format < FM_FORMAT_COUNT ? formats[format] : "?";
}

bool fm_format_parse(const char *s, enum fm_format *out)
{
    for (int i = 0; s && i < FM_FORMAT_COUNT; i++) {
        if (strcasecmp(s, formats[i]) == 0) {
            *out = (enum fm_format)i;
            return true;
        }
    }
    return false;
}
