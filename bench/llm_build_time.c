/* Time and memory of building and counting a language model from its config.json, without the
 * CLI's report: parse, fm_llm_build (training, with the loss), fm_count. Build it against the
 * static library (see bench/RESULTS.md for the command) and run it under /usr/bin/time -v:
 *   llm_build_time CONFIG.json [SEQ]   (default 8192 tokens, batch 1) */
#include "flopmeter.h"
#include "frontend/llm/llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONFIG.json [SEQ]\n", argv[0]);
        return 2;
    }
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return 1;
    static char text[1 << 20];
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    size_t n = fread(text, 1, sizeof(text), f);
    fclose(f);
    struct fm_llm_config *c = malloc(sizeof(*c));
    struct fm_llm_build_opts o;
    fm_llm_build_opts_init(&o);
    o.seq = argc > 2 ? atoll(argv[2]) : 8192;
    o.with_loss = true;
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    struct fm_graph *g = NULL;
    struct fm_counts *k = NULL;
    double t0 = now();
    if (!c || fm_llm_config_parse(ctx, text, n, argv[1], c) || fm_llm_build(ctx, c, &o, &g)) {
        fprintf(stderr, "%s\n", fm_ctx_error(ctx));
        return 1;
    }
    double t1 = now();
    if (fm_count(ctx, g, &co, &k)) {
        fprintf(stderr, "%s\n", fm_ctx_error(ctx));
        return 1;
    }
    double t2 = now();
    printf("%s: %zu nodes, %llu parameters, build %.1f ms, count %.1f ms\n", argv[1],
           fm_graph_node_count(g), (unsigned long long)k->params, (t1 - t0) * 1e3,
           (t2 - t1) * 1e3);
    fm_counts_free(k);
    fm_graph_free(g);
    free(c);
    fm_ctx_free(ctx);
    return 0;
}
