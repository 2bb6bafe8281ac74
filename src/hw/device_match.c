/* How well a device-table entry fits a GPU's own name ("NVIDIA H100 80GB HBM3" from nvidia-smi
 * or cudaDeviceProp, "Tesla V100-SXM2-16GB", "NVIDIA A100-SXM4-40GB"): by words. An entry fits
 * when every word of one of its names or aliases occurs in the GPU's name; the fit with the
 * most words wins, so "h100-pcie" beats "h100" for "NVIDIA H100 PCIe". No fuzzy distance here:
 * a wrong datasheet is worse than none (devices.c suggests near names separately). */
#include "hw.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_WORDS 24
#define WORD_LEN 32

/* Splits s into lower-case alphanumeric words; returns how many (at most max). */
static int words(const char *s, char out[][WORD_LEN], int max)
{
    int n = 0;
    while (*s && n < max) {
        while (*s && !isalnum((unsigned char)*s))
            s++;
        int len = 0;
        while (*s && isalnum((unsigned char)*s)) {
            if (len < WORD_LEN - 1)
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

/* All words of candidate occur among the query's words: how many, or 0 when one is missing.
 * The vendor's own word ("nvidia") counts for nothing: every name has it or none does. */
static int fit(const char *candidate, char query[][WORD_LEN], int nq)
{
    char w[16][WORD_LEN];
    int nw = words(candidate, w, 16), hits = 0;
    for (int i = 0; i < nw; i++) {
        if (strcmp(w[i], "nvidia") == 0)
            continue;
        bool found = false;
        for (int j = 0; j < nq && !found; j++)
            found = strcmp(w[i], query[j]) == 0;
        if (!found)
            return 0;
        hits++;
    }
    return hits;
}

int fm_hw_match_score(const struct fm_device *d, const char *name)
{
    char query[MAX_WORDS][WORD_LEN];
    int nq = words(name ? name : "", query, MAX_WORDS);
    int score = fit(d->name, query, nq);
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", d->aliases ? d->aliases : "");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int sc = fit(tok, query, nq);
        if (sc > score)
            score = sc;
    }
    return score;
}
