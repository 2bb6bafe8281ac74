/* The parallel plan's report: a table (the plan, memory per GPU by item, the step's time by
 * part and by collective, MFU, HFU, tokens/s, the training time for a token budget, the search's
 * runners-up) or JSON (docs/json.md, "plan"). It computes nothing. */
#include "../analysis/plan.h"
#include "../core/jsonw.h"

#include <stdio.h>
#include <string.h>

static const char *rc_name(enum fm_recompute r)
{
    return r == FM_RECOMPUTE_FULL ? "full" : r == FM_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

static void plan_line(FILE *f, const struct fm_plan_cfg *c)
{
    fprintf(f, "tp %d  pp %d  dp %d  cp %d  ep %d", c->tp, c->pp, c->dp, c->cp, c->ep);
    if (c->v > 1)
        fprintf(f, "  interleave %d", c->v);
    fprintf(f, "  zero %d%s  recompute %s  micro-batch %lld  micro-batches %lld", c->zero,
            c->sp ? "  sequence-parallel" : "", rc_name(c->recompute), (long long)c->mb,
            (long long)c->m);
}

static void table(FILE *f, const struct fm_plan *p)
{
    const struct fm_plan_eval *e = &p->eval;
    char a[FM_FORMAT_SIZE], b[FM_FORMAT_SIZE];
    fprintf(f, "plan: %s on %d x %s (%s: %d GPUs a node; %s; %s)\n", p->model.name,
            p->env.gpus, p->dev->name, p->cluster.name, p->cluster.gpus_per_node,
            p->cluster.intra_link, p->cluster.inter_link);
    fprintf(f, "  ");
    plan_line(f, &e->cfg);
    if (p->generic)
        fprintf(f, "\n  global batch %lld samples, %s\n", (long long)e->cfg.gb,
                fm_precision_name(p->env.precision));
    else if (e->cfg.dseq > 0)
        fprintf(f, "\n  global batch %lld x (%lld source + %lld target) tokens, %s, %s "
                   "attention\n",
                (long long)e->cfg.gb, (long long)e->cfg.seq, (long long)e->cfg.dseq,
                fm_precision_name(p->env.precision), p->env.flash ? "flash" : "unfused");
    else
        fprintf(f, "\n  global batch %lld x %lld tokens, %s, %s attention\n",
                (long long)e->cfg.gb, (long long)e->cfg.seq,
                fm_precision_name(p->env.precision), p->env.flash ? "flash" : "unfused");
    int split = p->generic ? 0 : fm_plan_t5_split(&p->env, &e->cfg);
    if (split) {   /* T5 on pipeline stages: where each stack lies */
        char enc[32], dec[32];
        int last = e->cfg.pp - 1;
        snprintf(enc, sizeof(enc), split > 1 ? "stages 0-%d" : "stage %d", split - 1);
        if (last > split)
            snprintf(dec, sizeof(dec), "stages %d-%d", split, last);
        else
            snprintf(dec, sizeof(dec), "stage %d", split);
        fprintf(f, "  stages: the encoder's %lld layers on %s, the decoder's %lld on %s (split "
                   "rank %d)\n",
                (long long)p->model.layers, enc, (long long)p->model.decoder_layers, dec, split);
    }
    if (p->note[0])
        fprintf(f, "  note: %s\n", p->note);
    if (p->graph_note[0])
        fprintf(f, "  check: %s\n", p->graph_note);
    if (p->timing_note[0])
        fprintf(f, "  timing: %s\n", p->timing_note);
    fprintf(f, "\nmemory per GPU (the stage that needs the most)\n");
    fprintf(f, "  %-34s %12s\n", "weights", fm_format_bytes(e->mem_weights, a));
    fprintf(f, "  %-34s %12s\n", "gradients", fm_format_bytes(e->mem_grads, a));
    fprintf(f, "  %-34s %12s\n", "optimizer states", fm_format_bytes(e->mem_optimizer, a));
    char lbl[64];
    snprintf(lbl, sizeof(lbl), "activations (%.2f micro-batches)", e->in_flight);
    fprintf(f, "  %-34s %12s\n", lbl, fm_format_bytes(e->mem_activations, a));
    fprintf(f, "  %-34s %12s\n", "communication buffers", fm_format_bytes(e->mem_buffers, a));
    fprintf(f, "  %-34s %12s of %s: %s\n", "total", fm_format_bytes(e->mem_total, a),
            fm_format_bytes(p->dev->mem_bytes, b), e->fits ? "fits" : "DOES NOT FIT");
    fprintf(f, "\nstep time                            %12s\n", fm_format_time(e->step_s, a));
    fprintf(f, "  %-34s %12s\n", "compute (forward + backward)", fm_format_time(e->t_compute, a));
    fprintf(f, "  %-34s %12s\n", "recompute", fm_format_time(e->t_recompute, a));
    fprintf(f, "  %-34s %12s\n", "pipeline bubble", fm_format_time(e->t_bubble, a));
    fprintf(f, "  %-34s %12s\n", "optimizer", fm_format_time(e->t_optimizer, a));
    fprintf(f, "  %-34s %12s\n", "communication exposed", fm_format_time(e->t_comm_exposed, a));
    for (int k = 0; k < FM_PLAN_COMM_COUNT; k++) {
        const struct fm_plan_comm *x = &e->comm[k];
        if (!(x->time_s > 0))
            continue;
        char cl[96];
        snprintf(cl, sizeof(cl), "%s %s x%d %s", x->what,
                 k == FM_PLAN_COMM_TP && x->coll == FM_COLL_REDUCESCATTER
                     ? "reduce-scatter + all-gather" : fm_coll_name(x->coll), x->group,
                 x->inter ? "inter-node" : "NVLink");
        fprintf(f, "    %-54s %10s exposed of %s\n", cl, fm_format_time(x->exposed_s, a),
                fm_format_time(x->time_s, b));
    }
    fprintf(f, "\nMFU %.1f%%  HFU %.1f%%  (of %s %s peak %s FLOP/s)\n", 100 * e->mfu,
            100 * e->hfu, p->dev->name, fm_precision_name(p->env.precision),
            fm_format_si(p->peak, a));
    fprintf(f, "%s/s %s  (%s per GPU)\n", p->generic ? "samples" : "tokens",
            fm_format_si(e->tokens_per_s, a),
            fm_format_si(e->tokens_per_s / p->env.gpus, b));
    if (p->opts.tokens > 0) {
        fprintf(f, "%s tokens: %s, ", fm_format_si(p->opts.tokens, a),
                fm_format_time(p->tokens_time_s, b));
        fprintf(f, "%s GPU-hours\n", fm_format_si(p->gpu_hours, a));
    }
    if (p->searched) {
        fprintf(f, "\nsearch: %ld plans tried, %ld valid, %ld fit%s; the fastest:\n",
                p->search.evaluated, p->search.valid, p->search.fitting,
                p->search.zero_searched ? " (ZeRO 0 to 3: each layout at its fastest stage)"
                                        : "");
        for (int i = 0; i < p->search.n_best; i++) {
            const struct fm_plan_eval *x = &p->search.best[i];
            fprintf(f, "  %d. %9s  MFU %4.1f%%  %8s  ", i + 1, fm_format_time(x->step_s, a),
                    100 * x->mfu, fm_format_bytes(x->mem_total, b));
            plan_line(f, &x->cfg);
            fprintf(f, "\n     %s\n", p->search.why[i]);
        }
    }
}

static void json_cfg(struct fm_jw *w, const struct fm_plan_cfg *c)
{
    fm_jw_i64(w, "tp", c->tp);
    fm_jw_i64(w, "pp", c->pp);
    fm_jw_i64(w, "dp", c->dp);
    fm_jw_i64(w, "cp", c->cp);
    fm_jw_i64(w, "ep", c->ep);
    fm_jw_i64(w, "interleave", c->v);
    fm_jw_i64(w, "zero", c->zero);
    fm_jw_bool(w, "sequence_parallel", c->sp);
    fm_jw_string(w, "recompute", rc_name(c->recompute));
    fm_jw_i64(w, "micro_batch", c->mb);
    fm_jw_i64(w, "global_batch", c->gb);
    fm_jw_i64(w, "micro_batches", c->m);
    fm_jw_i64(w, "seq", c->seq);
    if (c->dseq > 0)   /* T5 only: the other models' reports keep their keys */
        fm_jw_i64(w, "decoder_seq", c->dseq);
}

static void json_eval(struct fm_jw *w, const struct fm_plan_eval *e)
{
    json_cfg(w, &e->cfg);
    fm_jw_double(w, "step_s", e->step_s);
    fm_jw_double(w, "mfu", e->mfu);
    fm_jw_double(w, "hfu", e->hfu);
    fm_jw_double(w, "tokens_per_s", e->tokens_per_s);
    fm_jw_double(w, "memory_per_gpu_bytes", e->mem_total);
    fm_jw_bool(w, "fits", e->fits);
}

static void json(FILE *f, const struct fm_plan *p)
{
    const struct fm_plan_eval *e = &p->eval;
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "model", p->model.name);
    fm_jw_string(&w, "device", p->dev->name);
    fm_jw_string(&w, "cluster", p->cluster.name);
    fm_jw_i64(&w, "gpus", p->env.gpus);
    fm_jw_string(&w, "precision", fm_precision_name(p->env.precision));
    json_eval(&w, e);
    fm_jw_double(&w, "peak_flops_per_gpu", p->peak);
    fm_jw_double(&w, "model_flops_per_step", e->model_flops);
    fm_jw_double(&w, "hardware_flops_per_step", e->hardware_flops);
    fm_jw_double(&w, "params_per_gpu", e->params_per_gpu);
    int split = p->generic ? 0 : fm_plan_t5_split(&p->env, &e->cfg);
    if (split)   /* T5 on pipeline stages only: the first decoder stage */
        fm_jw_i64(&w, "split_rank", split);
    if (p->calibrated)   /* absent: the roofline with the fractions, as before the key */
        fm_jw_string(&w, "compute_timing", "calibration");
    if (p->graph_note[0]) {
        fm_jw_object(&w, "graph_check", true);
        fm_jw_bool(&w, "equal", p->graph_equal);
        fm_jw_double(&w, "graph_flops_per_sequence", p->graph_flops);
        fm_jw_double(&w, "graph_params", p->graph_params);
        fm_jw_end(&w);
    }
    fm_jw_object(&w, "memory", false);
    fm_jw_double(&w, "weights_bytes", e->mem_weights);
    fm_jw_double(&w, "gradients_bytes", e->mem_grads);
    fm_jw_double(&w, "optimizer_bytes", e->mem_optimizer);
    fm_jw_double(&w, "activations_bytes", e->mem_activations);
    fm_jw_double(&w, "buffers_bytes", e->mem_buffers);
    fm_jw_double(&w, "in_flight_micro_batches", e->in_flight);
    fm_jw_double(&w, "device_bytes", p->dev->mem_bytes);
    fm_jw_end(&w);
    fm_jw_object(&w, "time", false);
    fm_jw_double(&w, "compute_s", e->t_compute);
    fm_jw_double(&w, "recompute_s", e->t_recompute);
    fm_jw_double(&w, "bubble_s", e->t_bubble);
    fm_jw_double(&w, "optimizer_s", e->t_optimizer);
    fm_jw_double(&w, "communication_exposed_s", e->t_comm_exposed);
    fm_jw_end(&w);
    fm_jw_array(&w, "communication", false);
    for (int k = 0; k < FM_PLAN_COMM_COUNT; k++) {
        const struct fm_plan_comm *x = &e->comm[k];
        if (!(x->time_s > 0))
            continue;
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "what", x->what);
        fm_jw_string(&w, "collective", fm_coll_name(x->coll));
        fm_jw_i64(&w, "group", x->group);
        fm_jw_string(&w, "link", x->inter ? "inter-node" : "intra-node");
        fm_jw_double(&w, "bytes", x->bytes);
        fm_jw_double(&w, "time_s", x->time_s);
        fm_jw_double(&w, "exposed_s", x->exposed_s);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    if (p->opts.tokens > 0) {
        fm_jw_double(&w, "tokens", p->opts.tokens);
        fm_jw_double(&w, "training_time_s", p->tokens_time_s);
        fm_jw_double(&w, "gpu_hours", p->gpu_hours);
    }
    if (p->searched) {
        fm_jw_array(&w, "search", false);
        for (int i = 0; i < p->search.n_best; i++) {
            fm_jw_object(&w, NULL, true);
            json_eval(&w, &p->search.best[i]);
            fm_jw_string(&w, "why", p->search.why[i]);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_plan(FILE *f, const struct fm_plan *p, enum fm_format fmt)
{
    if (fmt == FM_FORMAT_JSON)
        json(f, p);
    else if (fmt == FM_FORMAT_TABLE)
        table(f, p);
    else
        return fm_error(p->ctx, FM_ERR_INVALID, "plan renders table or json, not %s",
                        fm_format_name(fmt));
    return ferror(f) ? fm_error(p->ctx, FM_ERR_IO, "writing the plan failed") : FM_OK;
}

enum fm_status fm_report_nccl(FILE *f, const struct fm_nccl_probe *p)
{
    static const char *const names[4] = {"all-reduce", "all-gather", "reduce-scatter",
                                         "all-to-all"};
    char a[FM_FORMAT_SIZE], b[FM_FORMAT_SIZE], c[FM_FORMAT_SIZE];
    fprintf(f, "NCCL across %d x %s (one process; bus bandwidth as nccl-tests)\n", p->gpus,
            p->gpu_name);
    fprintf(f, "  %-16s %14s at %-10s %12s at %s\n", "collective", "bus bandwidth",
            fm_format_bytes(p->large_bytes, a), "time", fm_format_bytes(p->small_bytes, b));
    for (int i = 0; i < 4; i++) {
        snprintf(c, sizeof(c), "%.1f GB/s", p->busbw[i] / 1e9);
        fprintf(f, "  %-16s %14s    %-10s %12s\n", names[i], c, "",
                fm_format_time(p->small_s[i], a));
    }
    return ferror(f) ? FM_ERR_IO : FM_OK;
}
