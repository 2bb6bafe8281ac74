/* Small helpers that several parts of the library share, kept once: FNV-1a hashing of names,
 * edit distance for "did you mean" suggestions, and the min/median/max of repeated timings.
 * Nothing here allocates or reports errors. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t fm_hash_name(uint64_t seed, const char *s)
{
    /* FNV-1a (Fowler, Noll, Vo): 64-bit offset basis and prime; the seed is xored into the
     * basis so that one name gives independent streams for different seeds */
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

size_t fm_edit_distance(const char *a, const char *b)
{
    /* Levenshtein, case-insensitive for ASCII letters, on at most 63 characters of each: names
     * longer than that are never what a user meant to type */
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63)
        la = 63;
    if (lb > 63)
        lb = 63;
    size_t prev[64], cur[64];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + ((a[i - 1] | 0x20) != (b[j - 1] | 0x20));
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(size_t) * (lb + 1));
    }
    return prev[lb];
}

const char *fm_nearest_name(const char *typed, const char *const *names, size_t n)
{
    if (!typed || !*typed)
        return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1, len = strlen(typed);
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        size_t d = fm_edit_distance(typed, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best && best_d <= 2 && 2 * best_d < len ? best : NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void fm_stats_summary(double *v, size_t n, double *min, double *median, double *max)
{
    if (n == 0) {
        *min = *median = *max = 0;
        return;
    }
    qsort(v, n, sizeof(double), cmp_double);
    *min = v[0];
    *max = v[n - 1];
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
