/* libFuzzer target: device JSON text (fm_devices_add_json) over the built-in table. Checks, on
 * top of the sanitizers: a rejected file leaves a message and the table unchanged; an accepted
 * one yields devices whose figures are finite and non-negative, that the ceiling lookup accepts
 * for every class and precision, and that survive a round trip through fm_devices_write_json
 * (what `flopmeter device --save` writes must load again). */
#include "fuzz_common.h"

#include <math.h>

static void check_device(const struct fm_device *d)
{
    FUZZ_CHECK(d->name && *d->name, "a device without a name was accepted");
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        FUZZ_CHECK(isfinite(d->peak_vector[p]) && d->peak_vector[p] >= 0, "bad vector peak");
        FUZZ_CHECK(isfinite(d->peak_tensor[p]) && d->peak_tensor[p] >= 0, "bad tensor peak");
        for (int c = 0; c < FM_CLASS_COUNT; c++) {
            double peak = fm_device_peak(d, (enum fm_class)c, (enum fm_precision)p);
            FUZZ_CHECK(isfinite(peak) && peak >= 0, "fm_device_peak gave %g", peak);
        }
    }
    FUZZ_CHECK(isfinite(d->mem_bw) && d->mem_bw >= 0, "bad bandwidth");
    FUZZ_CHECK(d->units >= 0, "negative units");
}

int fm_fuzz_device_json(const uint8_t *data, size_t size)
{
    struct fm_ctx *ctx = NULL;
    struct fm_devices *devs = NULL, *again = NULL;
    const struct fm_device **list = NULL;
    char *text = NULL;
    size_t text_len = 0;
    if (fm_ctx_new(NULL, &ctx))
        return 0;
    if (fm_devices_builtin(ctx, &devs))
        goto out;
    size_t n0 = fm_devices_count(devs);
    enum fm_status st = fm_devices_add_json(devs, (const char *)data, size, "fuzz.json");
    fuzz_check_status(ctx, st);
    size_t n = fm_devices_count(devs);
    if (st) {
        FUZZ_CHECK(n == n0, "a rejected file changed the table (%zu -> %zu devices)", n0, n);
        goto out;
    }
    list = calloc(n, sizeof(*list));
    if (!list)
        goto out;
    for (size_t i = 0; i < n; i++) {
        list[i] = fm_devices_get(devs, i);
        check_device(list[i]);
        const struct fm_device *found = NULL;
        FUZZ_CHECK(fm_devices_find(ctx, devs, list[i]->name, &found) == FM_OK && found,
                   "device '%s' cannot be found by its own name", list[i]->name);
    }
    /* round trip: what the writer produces must load into a fresh table */
    FILE *f = open_memstream(&text, &text_len);
    if (!f)
        goto out;
    FUZZ_CHECK(fm_devices_write_json(f, list, n) == FM_OK, "writing devices failed");
    fclose(f);
    if (fm_devices_builtin(ctx, &again))
        goto out;
    st = fm_devices_add_json(again, text, text_len, "round trip");
    FUZZ_CHECK(st == FM_OK, "written devices do not load again: %s", fm_ctx_error(ctx));
out:
    free(text);
    free(list);
    fm_devices_free(again);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_device_json)
