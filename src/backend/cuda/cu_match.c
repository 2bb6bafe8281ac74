/* Matches the name a GPU gives itself (cudaDeviceProp.name, NVML's name: "NVIDIA H100 80GB
 * HBM3", "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB") to a device-table entry by words: an
 * entry fits when every word of one of its names or aliases occurs in the GPU's name; the fit
 * with the most words wins. No fuzzy distance: a wrong datasheet is worse than none. */
#include "cu.h"

#include <ctype.h>
#include <string.h>

/* Splits s into lower-case alphanumeric words; returns how many (at most max). */
static int words(const char *s, char out[][32], int max)
{
    int n = 0;
    while (*s && n < max) {
        while (*s && !isalnum((unsigned char)*s))
            s++;
        int len = 0;
        while (*s && isalnum((unsigned char)*s)) {
            if (len < 31)
                out[n][len++] = (char)tolower((unsigned char)*s);
            s++;
        }
        if (len) {
            out[n][len] = '\0';
            n++;
        }
    }
    return n;
}

/* All words of candidate occur among the GPU's words: how many, or 0 when one is missing.
 * The vendor's own word ("nvidia") counts for nothing. */
static int fit(const char *candidate, char gpu[][32], int ng)
{
    char w[16][32];
    int nw = words(candidate, w, 16), hits = 0;
    for (int i = 0; i < nw; i++) {
        if (strcmp(w[i], "nvidia") == 0)
            continue;
        bool found = false;
        for (int j = 0; j < ng && !found; j++)
            found = strcmp(w[i], gpu[j]) == 0;
        if (!found)
            return 0;
        hits++;
    }
    return hits;
}

enum fm_status fm_cuda_match_device(struct fm_ctx *ctx, const struct fm_devices *devs,
                                    const char *gpu_name, const struct fm_device **out)
{
    *out = NULL;
    char gpu[24][32];
    int ng = words(gpu_name ? gpu_name : "", gpu, 24);
    int best = 0;
    for (size_t i = 0; i < fm_devices_count(devs); i++) {
        const struct fm_device *d = fm_devices_get(devs, i);
        if (!d->kind || strcmp(d->kind, "gpu") != 0)
            continue;
        int score = fit(d->name, gpu, ng);
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", d->aliases ? d->aliases : "");
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            int sc = fit(tok, gpu, ng);
            if (sc > score)
                score = sc;
        }
        if (score > best) {
            best = score;
            *out = d;
        }
    }
    if (!*out)
        return fm_error(ctx, FM_ERR_NOT_FOUND, "GPU '%s' is not in the device table (flopmeter "
                        "devices lists it; --devices FILE adds an entry)", gpu_name ? gpu_name : "");
    return FM_OK;
}
