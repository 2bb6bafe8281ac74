/* The built-in architectures: name, family, default input, parameters and the forward pass's
 * MACs and FLOPs at batch 1 (counted, not copied from a table) and a description, as a table,
 * CSV or JSON. */
#include "report.h"
#include "../frontend/llm/llm.h"

#include <inttypes.h>
#include <string.h>

struct model_row {
    const struct fm_zoo_entry *e;
    struct fm_zoo_entry llm;   /* a built-in language model's row (e points to it) */
    char family[48], description[192];
    char input[32];
    bool counted;
    uint64_t params, macs, flops;
};

/* The forward pass of a built graph (st: how building it went; g is freed here). A model that
 * cannot be built or counted shows '?' (null in JSON); running out of memory is no property of
 * the model: it fails the report (FM_ERR_NOMEM, the message on ctx). */
static enum fm_status count_graph(struct fm_ctx *ctx, enum fm_status st, struct fm_graph *g,
                                  struct model_row *r)
{
    struct fm_counts *c = NULL;
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_INFER;
    if (!st)
        st = fm_count(ctx, g, &co, &c);
    if (!st) {
        r->counted = true;
        r->params = c->params;
        r->macs = fm_work_macs(&c->total[FM_PHASE_FWD]);
        r->flops = fm_work_flops(&c->total[FM_PHASE_FWD]);
    }
    fm_counts_free(c);
    fm_graph_free(g);
    return st == FM_ERR_NOMEM ? st : FM_OK;
}

/* A built-in architecture at its default input, batch 1. */
static enum fm_status count_model(struct fm_ctx *ctx, const struct fm_zoo_entry *e,
                                  struct model_row *r)
{
    memset(r, 0, sizeof(*r));
    r->e = e;
    snprintf(r->input, sizeof(r->input), "3x%lldx%lld", (long long)e->default_hw,
             (long long)e->default_hw);
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    struct fm_graph *g = NULL;
    enum fm_status st = fm_zoo_build(ctx, e->name, &zo, &g);
    return count_graph(ctx, st, g, r);
}

/* A built-in language model: one sequence of 2048 tokens (or its maximum), forward. */
static enum fm_status count_llm(struct fm_ctx *ctx, size_t i, struct model_row *r)
{
    memset(r, 0, sizeof(*r));
    r->e = &r->llm;
    r->llm.name = fm_llm_builtin_name(i);
    r->llm.family = r->family;
    r->llm.description = r->description;
    struct fm_llm_config *cfg = fm_alloc(ctx, sizeof(*cfg));
    if (!cfg)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory listing the language models");
    enum fm_status st = fm_llm_config_builtin(ctx, r->llm.name, cfg);
    struct fm_graph *g = NULL;
    if (!st) {
        struct fm_llm_build_opts bo;
        fm_llm_build_opts_init(&bo);
        bo.seq = cfg->max_pos > 0 && cfg->max_pos < 2048 ? cfg->max_pos : 2048;
        snprintf(r->input, sizeof(r->input), "%lld tokens", (long long)bo.seq);
        snprintf(r->family, sizeof(r->family), "%s", cfg->model_type);
        snprintf(r->description, sizeof(r->description), "%s (%s)",
                 fm_llm_arch_name(cfg->arch), fm_llm_builtin_source(i));
        st = fm_llm_build(ctx, cfg, &bo, &g);
    }
    fm_dealloc(ctx, cfg);
    return count_graph(ctx, st, g, r);
}

static void csv_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

enum fm_status fm_report_models(FILE *f, struct fm_ctx *ctx, const struct fm_report_opts *opts)
{
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    struct fm_jw w;
    if (format == FM_FORMAT_TABLE) {
        fprintf(f, "%-20s %-13s %-10s %12s %9s %9s  %s\n", "model", "family", "input", "params",
                "fwd MAC", "fwd FLOP", "description");
    } else if (format == FM_FORMAT_CSV) {
        fprintf(f, "model,family,input,params,fwd_macs,fwd_flops,description\n");
    } else {
        fm_jw_init(&w, f);
        fm_jw_object(&w, NULL, false);
        fm_jw_string(&w, "flopmeter", FM_VERSION);
        fm_jw_string(&w, "counted", "forward pass (inference) at batch 1 and the input shown");
        fm_jw_array(&w, "models", false);
    }
    size_t n_zoo = fm_zoo_count(), n_llm = fm_llm_builtin_count();
    for (size_t i = 0; i < n_zoo + n_llm; i++) {
        struct model_row r;
        enum fm_status st = i < n_zoo ? count_model(ctx, fm_zoo_get(i), &r)
                                      : count_llm(ctx, i - n_zoo, &r);
        if (st)
            return st;
        if (format == FM_FORMAT_TABLE) {
            char params[32] = "?", macs[FM_FORMAT_SIZE] = "?", flops[FM_FORMAT_SIZE] = "?";
            if (r.counted) {
                snprintf(params, sizeof(params), "%" PRIu64, r.params);
                fm_format_si((double)r.macs, macs);
                fm_format_si((double)r.flops, flops);
            }
            fprintf(f, "%-20s %-13s %-10s %12s %9s %9s  %s\n", r.e->name, r.e->family, r.input,
                    params, macs, flops, r.e->description);
        } else if (format == FM_FORMAT_CSV) {
            fprintf(f, "%s,%s,%s,", r.e->name, r.e->family, r.input);
            if (r.counted)
                fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", r.params, r.macs, r.flops);
            else
                fprintf(f, ",,,");
            csv_text(f, r.e->description);
            fputc('\n', f);
        } else {
            fm_jw_object(&w, NULL, true);
            fm_jw_string(&w, "name", r.e->name);
            fm_jw_string(&w, "family", r.e->family);
            fm_jw_string(&w, "input", r.input);
            if (r.counted) {
                fm_jw_u64(&w, "params", r.params);
                fm_jw_u64(&w, "fwd_macs", r.macs);
                fm_jw_u64(&w, "fwd_flops", r.flops);
            } else {
                fm_jw_null(&w, "params");
                fm_jw_null(&w, "fwd_macs");
                fm_jw_null(&w, "fwd_flops");
            }
            fm_jw_string(&w, "description", r.e->description);
            fm_jw_end(&w);
        }
    }
    if (format == FM_FORMAT_JSON) {
        fm_jw_end(&w);
        fm_jw_end(&w);
        fm_jw_finish(&w);
    }
    return fm_report_end(ctx, f);
}
