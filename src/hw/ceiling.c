/* Precisions and ceilings: the names of the precisions, which ceiling of a device applies to an
 * op class at a precision (tensor or vector units), the ridge point, the one rule for the peak
 * utilization is quoted against, and the named interconnects. Pure functions of a device's
 * figures: no table, no files. */
#include "hw.h"

#include <string.h>
#include <strings.h>

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- precisions ---- */

static const char *const precision_names[] = {
    [FM_PREC_FP64] = "fp64", [FM_PREC_FP32] = "fp32", [FM_PREC_TF32] = "tf32",
    [FM_PREC_FP16] = "fp16", [FM_PREC_BF16] = "bf16", [FM_PREC_FP8] = "fp8",
    [FM_PREC_INT8] = "int8",
};
_Static_assert(FM_COUNT_OF(precision_names) == FM_PREC_COUNT,
               "precision_names must cover enum fm_precision");

const char *fm_precision_name(enum fm_precision p)
{
    return (unsigned)p < FM_PREC_COUNT ? precision_names[p] : "?";
}

bool fm_precision_parse(const char *s, enum fm_precision *out)
{
    static const struct {
        const char *alias;
        enum fm_precision p;
    } aliases[] = {
        {"float64", FM_PREC_FP64}, {"double", FM_PREC_FP64},   {"float32", FM_PREC_FP32},
        {"float", FM_PREC_FP32},   {"single", FM_PREC_FP32},   {"float16", FM_PREC_FP16},
        {"half", FM_PREC_FP16},    {"bfloat16", FM_PREC_BF16}, {"e4m3", FM_PREC_FP8},
    };
    if (!s)
        return false;
    for (int i = 0; i < FM_PREC_COUNT; i++) {
        if (strcasecmp(s, precision_names[i]) == 0) {
            *out = (enum fm_precision)i;
            return true;
        }
    }
    for (size_t i = 0; i < FM_COUNT_OF(aliases); i++) {
        if (strcasecmp(s, aliases[i].alias) == 0) {
            *out = aliases[i].p;
            return true;
        }
    }
    return false;
}

bool fm_precision_parse_policy(const char *s, enum fm_precision *out, bool *torch_default)
{
    if (s && strcasecmp(s, "torch-default") == 0) {
        *out = FM_PREC_FP32;
        *torch_default = true;
        return true;
    }
    if (!fm_precision_parse(s, out))
        return false;
    *torch_default = false;
    return true;
}

bool fm_precision_tensor_class(enum fm_class cls)
{
    return cls == FM_CLASS_CONV || cls == FM_CLASS_MATMUL || cls == FM_CLASS_ATTENTION;
}

/* ---- ceilings ---- */

/* Which ceiling applies (docs/devices.md, "Which ceiling applies"):
 *  - conv, matmul and attention use the matrix units of that precision when the device has
 *    them (fp64 too: A100/H100 run DGEMM on fp64 tensor cores);
 *  - otherwise the vector units of that precision (P100 runs fp16 at twice its fp32 rate);
 *  - tf32 exists only on matrix units: elsewhere it is fp32 arithmetic;
 *  - fp16 and bf16 without a vector figure run at the fp32 vector rate: frameworks compute
 *    reduced-precision elementwise ops in fp32 ("opmath") and Kepler has no fp16 math;
 *  - fp8 and int8 are matrix-unit formats: a conv/matmul without such units has no ceiling
 *    (0: the caller reports it), and every other op computes in fp32 on the vector units. */
double fm_device_ceiling(const struct fm_device *dev, enum fm_class cls, enum fm_precision prec,
                         enum fm_precision *applied, bool *tensor)
{
    enum fm_precision used = prec;
    bool on_tensor = false;
    double peak = 0.0;
    if (dev && (unsigned)prec < FM_PREC_COUNT) {
        bool matrix_op = fm_precision_tensor_class(cls);
        if (matrix_op && dev->peak_tensor[prec] > 0) {
            peak = dev->peak_tensor[prec];
            on_tensor = true;
        } else {
            switch (prec) {
            case FM_PREC_FP64:
                break;
            case FM_PREC_TF32:
                used = FM_PREC_FP32;
                break;
            case FM_PREC_FP16:
            case FM_PREC_BF16:
                if (!(dev->peak_vector[prec] > 0))
                    used = FM_PREC_FP32;
                break;
            case FM_PREC_FP8:
            case FM_PREC_INT8:
                if (!matrix_op)
                    used = FM_PREC_FP32;
                break;
            default:
                break;
            }
            peak = dev->peak_vector[used];
        }
    }
    if (applied)
        *applied = used;
    if (tensor)
        *tensor = on_tensor;
    return peak;
}

double fm_device_peak(const struct fm_device *dev, enum fm_class cls, enum fm_precision prec)
{
    return fm_device_ceiling(dev, cls, prec, NULL, NULL);
}

/* The ridge point of Williams, Waterman and Patterson's roofline: the intensity at which the
 * memory slope (intensity x bandwidth) meets the flat compute roof. */
double fm_device_ridge(const struct fm_device *dev, enum fm_class cls, enum fm_precision prec)
{
    double peak = fm_device_peak(dev, cls, prec);
    if (peak <= 0 || !dev || dev->mem_bw <= 0)
        return 0.0;
    return peak / dev->mem_bw;
}

bool fm_device_has_tensor(const struct fm_device *dev)
{
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        if (dev->peak_tensor[p] > 0)
            return true;
    }
    return false;
}

/* The one rule for the peak utilization is quoted against, so that predict, utilization and
 * measure divide by the same figure: the headline ceiling of the chosen precision for
 * conv/matmul (its matrix units when the device has them, what MFU conventionally uses);
 * torch-default: the TF32 ceiling PyTorch's convolutions run on. */
double fm_device_util_peak(const struct fm_device *dev, enum fm_precision prec, bool torch_default)
{
    return torch_default ? fm_device_peak(dev, FM_CLASS_CONV, FM_PREC_TF32)
                         : fm_device_peak(dev, FM_CLASS_MATMUL, prec);
}

/* ---- links ---- */

const struct fm_link *fm_link_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < fm_link_count(); i++) {
        const struct fm_link *l = fm_link_get(i);
        if (strcasecmp(l->name, name) == 0)
            return l;
    }
    return NULL;
}
