/* The device table and one device: every figure with its source and whether it is verified, each
 * ceiling with its ridge point, and which ceiling applies to which ops at each precision; as a
 * table, CSV or a device JSON file (fm_devices_write_json). */
#include "report.h"
#include "../hw/hw.h"

#include <stdlib.h>
#include <string.h>

static const char *tflops(double v, bool unverified, char *buf)
{
    if (v <= 0)
        snprintf(buf, 32, "%s", unverified ? "?" : "-");
    else
        snprintf(buf, 32, "%.5g%s", v / 1e12, unverified ? "?" : "");
    return buf;
}

static bool uv_vec(const struct fm_device *d, int p)
{
    return (d->unverified_vector >> p) & 1u;
}

static bool uv_ten(const struct fm_device *d, int p)
{
    return (d->unverified_tensor >> p) & 1u;
}

static const char *first_alias(const struct fm_device *d, char *buf)
{
    snprintf(buf, 32, "%s", d->aliases && *d->aliases ? d->aliases : "");
    char *comma = strchr(buf, ',');
    if (comma)
        *comma = '\0';
    return buf;
}

static void print_table(FILE *f, const struct fm_devices *devs)
{
    fprintf(f, "%-10s %-24s %-16s %6s %6s %7s %8s %7s %7s %7s %7s %7s %6s %6s\n", "alias", "name",
            "arch", "FP64", "FP32", "TF32tc", "FP16tc", "BF16tc", "FP8tc", "INT8tc", "BW GB/s",
            "mem GB", "ridge32", "ridge16");
    bool any_user = false;
    for (size_t i = 0; i < fm_devices_count(devs); i++) {
        const struct fm_device *d = fm_devices_get(devs, i);
        char a[32], b[8][32], fp16[40], bw[32], mem[32];
        bool user = d->origin && strcmp(d->origin, "built-in") != 0;
        any_user |= user;
        /* fp64: the faster of vector and tensor (what a DGEMM gets) */
        double fp64 = d->peak_tensor[FM_PREC_FP64] > d->peak_vector[FM_PREC_FP64]
                          ? d->peak_tensor[FM_PREC_FP64]
                          : d->peak_vector[FM_PREC_FP64];
        bool fp64_uv = uv_vec(d, FM_PREC_FP64) || uv_ten(d, FM_PREC_FP64);
        if (d->peak_tensor[FM_PREC_FP16] > 0)
            tflops(d->peak_tensor[FM_PREC_FP16], uv_ten(d, FM_PREC_FP16), fp16);
        else if (d->peak_vector[FM_PREC_FP16] > 0)
            snprintf(fp16, sizeof(fp16), "%sv",
                     tflops(d->peak_vector[FM_PREC_FP16], uv_vec(d, FM_PREC_FP16), b[7]));
        else
            snprintf(fp16, sizeof(fp16), "-");
        snprintf(bw, sizeof(bw), "%.0f%s", d->mem_bw / 1e9,
                 (d->unverified & FM_DEVF_BANDWIDTH) ? "?" : "");
        snprintf(mem, sizeof(mem), "%.0f%s", d->mem_bytes / 1e9,
                 (d->unverified & FM_DEVF_MEMORY) ? "?" : "");
        double r32 = fm_device_ridge(d, FM_CLASS_CONV, FM_PREC_FP32);
        double r16 = fm_device_ridge(d, FM_CLASS_CONV, FM_PREC_FP16);
        char rr32[32], rr16[32];
        snprintf(rr32, sizeof(rr32), r32 > 0 ? "%.1f" : "-", r32);
        snprintf(rr16, sizeof(rr16), r16 > 0 ? "%.1f" : "-", r16);
        fprintf(f, "%-10s %-24.24s %-16.16s %6s %6s %7s %8s %7s %7s %7s %7s %7s %6s %6s%s\n",
                first_alias(d, a), d->name, d->arch ? d->arch : "", tflops(fp64, fp64_uv, b[0]),
                tflops(d->peak_vector[FM_PREC_FP32], uv_vec(d, FM_PREC_FP32), b[1]),
                tflops(d->peak_tensor[FM_PREC_TF32], uv_ten(d, FM_PREC_TF32), b[2]), fp16,
                tflops(d->peak_tensor[FM_PREC_BF16], uv_ten(d, FM_PREC_BF16), b[3]),
                tflops(d->peak_tensor[FM_PREC_FP8], uv_ten(d, FM_PREC_FP8), b[4]),
                tflops(d->peak_tensor[FM_PREC_INT8], uv_ten(d, FM_PREC_INT8), b[5]), bw, mem, rr32,
                rr16, user ? " *" : "");
    }
    fprintf(f, "TFLOP/s dense (INT8: TOPS); tc = tensor cores (matrix units); FP64 = the faster of "
            "vector and tensor;\nridge = peak / bandwidth in FLOP/byte for fp32 and fp16 "
            "convolutions; ? = unverified; v = vector-unit fp16.\n");
    if (any_user)
        fprintf(f, "* from a device file (flopmeter device NAME shows which)\n");
    fprintf(f, "sources: flopmeter device NAME\n");
}

static void print_csv(FILE *f, const struct fm_devices *devs)
{
    fprintf(f, "name,aliases,kind,arch");
    for (int p = 0; p < FM_PREC_COUNT; p++)
        fprintf(f, ",%s_vector_flops", fm_precision_name((enum fm_precision)p));
    for (int p = 0; p < FM_PREC_COUNT; p++)
        fprintf(f, ",%s_tensor_flops", fm_precision_name((enum fm_precision)p));
    fprintf(f, ",mem_bw_bytes_per_s,mem_bytes,l2_bytes,boost_mhz,units,tdp_w,interconnect,"
            "interconnect_bw_bytes_per_s,unverified_fields,unverified_vector,unverified_tensor,"
            "measured,origin,source\n");
    for (size_t i = 0; i < fm_devices_count(devs); i++) {
        const struct fm_device *d = fm_devices_get(devs, i);
        fprintf(f, "\"%s\",\"%s\",%s,\"%s\"", d->name, d->aliases ? d->aliases : "",
                d->kind ? d->kind : "", d->arch ? d->arch : "");
        for (int p = 0; p < FM_PREC_COUNT; p++)
            fprintf(f, ",%.17g", d->peak_vector[p]);
        for (int p = 0; p < FM_PREC_COUNT; p++)
            fprintf(f, ",%.17g", d->peak_tensor[p]);
        fprintf(f, ",%.17g,%.17g,%.17g,%.17g,%d,%.17g,\"%s\",%.17g,%u,%u,%u,%d,\"%s\",\"",
                d->mem_bw, d->mem_bytes, d->l2_bytes, d->boost_mhz, d->units, d->tdp_w,
                d->interconnect ? d->interconnect : "", d->interconnect_bw, d->unverified,
                d->unverified_vector, d->unverified_tensor, d->measured ? 1 : 0,
                d->origin ? d->origin : "");
        /* CSV quoting: a double quote inside a field is doubled */
        for (const char *s = d->source ? d->source : ""; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fprintf(f, "\"\n");
    }
}

static const char *class_list_tensor = "conv/matmul/attention";

static void print_device(FILE *f, const struct fm_device *d)
{
    char b[4][32];
    fprintf(f, "%s", d->name);
    if (d->aliases && *d->aliases)
        fprintf(f, "   (aliases: %s)", d->aliases);
    fprintf(f, "\n  %s, %s", d->kind ? d->kind : "?", d->arch ? d->arch : "?");
    if (d->units > 0)
        fprintf(f, ", %d %s%s", d->units,
                d->kind && strcmp(d->kind, "cpu") == 0 ? "cores" : "units",
                (d->unverified & FM_DEVF_UNITS) ? "?" : "");
    if (d->boost_mhz > 0 || (d->unverified & FM_DEVF_CLOCK))
        fprintf(f, ", boost %s MHz",
                d->boost_mhz > 0 ? (snprintf(b[0], 32, "%.0f", d->boost_mhz), b[0]) : "?");
    if (d->tdp_w > 0)
        fprintf(f, ", %.0f W%s", d->tdp_w, (d->unverified & FM_DEVF_TDP) ? "?" : "");
    fprintf(f, "%s\n", d->measured ? ", measured (flopmeter probe)" : "");
    fprintf(f, "  memory %s%s, bandwidth %.0f GB/s%s, L2 %s%s\n",
            fm_format_bytes(d->mem_bytes, b[0]), (d->unverified & FM_DEVF_MEMORY) ? "?" : "",
            d->mem_bw / 1e9, (d->unverified & FM_DEVF_BANDWIDTH) ? "?" : "",
            d->l2_bytes > 0 ? fm_format_bytes(d->l2_bytes, b[1]) : "?",
            (d->unverified & FM_DEVF_L2) && d->l2_bytes > 0 ? "?" : "");
    fprintf(f, "  interconnect %s, %s/s per GPU bidirectional%s\n",
            d->interconnect ? d->interconnect : "?",
            d->interconnect_bw > 0 ? fm_format_bytes(d->interconnect_bw, b[0]) : "? B",
            (d->unverified & FM_DEVF_INTERCONNECT) ? " (unverified)" : "");
    fprintf(f, "  source: %s\n  origin: %s\n", d->source ? d->source : "(none given)",
            d->origin ? d->origin : "?");
    fprintf(f, "\n  %-14s %12s %14s\n", "ceiling", "TFLOP/s", "ridge FLOP/B");
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        for (int unit = 0; unit < 2; unit++) {
            double v = unit ? d->peak_tensor[p] : d->peak_vector[p];
            bool uv = unit ? uv_ten(d, p) : uv_vec(d, p);
            if (v <= 0 && !uv)
                continue;
            char label[32];
            snprintf(label, sizeof(label), "%s %s", fm_precision_name((enum fm_precision)p),
                     unit ? "tensor" : "vector");
            fprintf(f, "  %-14s %12s %14.1f\n", label, tflops(v, uv, b[0]),
                    d->mem_bw > 0 ? v / d->mem_bw : 0.0);
        }
    }
    fprintf(f, "\n  which ceiling applies     %-24s %s\n", class_list_tensor, "other ops");
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        double t = fm_device_peak(d, FM_CLASS_CONV, (enum fm_precision)p);
        double o = fm_device_peak(d, FM_CLASS_ELEMENTWISE, (enum fm_precision)p);
        bool on_tensor = d->peak_tensor[p] > 0 && t == d->peak_tensor[p];
        char left[48], right[48];
        if (t > 0)
            snprintf(left, sizeof(left), "%s (%s)", tflops(t, false, b[0]),
                     on_tensor ? "tensor" : "vector");
        else
            snprintf(left, sizeof(left), "none");
        snprintf(right, sizeof(right), o > 0 ? "%s (vector)" : "none",
                 tflops(o, false, b[1]));
        fprintf(f, "  fm_session_opts.precision %-13s %-24s %s\n",
                   fm_precision_name((enum fm_precision)p), left,
                right);
    }
    fprintf(f, "  fm_session_opts.precision torch-default  conv %s, matmul %s (PyTorch: TF32 "
            "convolutions, FP32 matmuls)\n",
            tflops(fm_device_peak(d, FM_CLASS_CONV, FM_PREC_TF32), false, b[0]),
            tflops(fm_device_peak(d, FM_CLASS_MATMUL, FM_PREC_FP32), false, b[1]));
    fprintf(f, "\nTFLOP/s dense (int8: TOPS); ? = the sources could not confirm it; 0 or '-' = not "
            "supported or unknown.\n");
}

enum fm_status fm_report_devices(FILE *f, const struct fm_devices *devs,
                                 const struct fm_report_opts *opts)
{
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    if (format == FM_FORMAT_TABLE) {
        print_table(f, devs);
    } else if (format == FM_FORMAT_CSV) {
        print_csv(f, devs);
    } else {
        size_t nd = fm_devices_count(devs);
        const struct fm_device **list = fm_alloc(devs->ctx, (nd ? nd : 1) * sizeof(*list));
        if (!list)
            return fm_error(devs->ctx, FM_ERR_NOMEM, "out of memory listing %zu devices", nd);
        for (size_t i = 0; i < nd; i++)
            list[i] = fm_devices_get(devs, i);
        fm_devices_write_json(f, list, nd);
        fm_dealloc(devs->ctx, list);
    }
    return fm_report_end(devs->ctx, f);
}

enum fm_status fm_report_device(FILE *f, const struct fm_device *d,
                                const struct fm_report_opts *opts)
{
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    if (format == FM_FORMAT_TABLE) {
        print_device(f, d);
    } else if (format == FM_FORMAT_JSON) {
        fm_devices_write_json(f, &d, 1);
    } else {
        fprintf(f, "precision,unit,peak_flops,ridge_flop_per_byte,unverified\n");
        for (int p = 0; p < FM_PREC_COUNT; p++) {
            for (int unit = 0; unit < 2; unit++) {
                double v = unit ? d->peak_tensor[p] : d->peak_vector[p];
                bool uv = unit ? uv_ten(d, p) : uv_vec(d, p);
                if (v <= 0 && !uv)
                    continue;
                fprintf(f, "%s,%s,%.17g,%.17g,%d\n", fm_precision_name((enum fm_precision)p),
                        unit ? "tensor" : "vector", v, d->mem_bw > 0 ? v / d->mem_bw : 0.0,
                        uv ? 1 : 0);
            }
        }
    }
    return ferror(f) ? FM_ERR_IO : FM_OK;
}
