/* fm_plan_run: resolves the model, device, cluster and defaults of a plan, checks the plan
 * against the model and the GPU count (every refusal names the constraint and the nearest valid
 * value: nothing is rounded), evaluates it (plan.c) or searches (plan_search.c). */
#include "plan.h"
#include "calibration_internal.h"
#include "../hw/hw.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>


/* The per-rank work of the plan (plan.c's formulas) against the graph of the config sharded by
 * tp, built by fm_llm_build and counted by fm_count at batch 1: linear, attention-product and
 * logits MACs and the parameters. The plan says which, in its report. */
static void graph_check(struct fm_plan *p, const struct fm_plan_cfg *c, int tp)
{
    struct fm_ctx *ctx = p->ctx;
    struct fm_llm_config shard;
    fm_plan_shard_config(&p->model, tp, p->env.vocab, &shard);
    struct fm_llm_build_opts bo;
    fm_llm_build_opts_init(&bo);
    bo.seq = c->seq;
    bo.decoder_seq = c->dseq;   /* T5's target tokens; 0 for the others */
    bo.dtype = FM_DTYPE_BF16;
    struct fm_graph *g = NULL;
    struct fm_counts *k = NULL;
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_INFER;   /* the forward is what is compared */
    if (fm_llm_build(ctx, &shard, &bo, &g) || fm_count(ctx, g, &co, &k)) {
        if (tp > 1) {
            /* GPT-2 and GPT-NeoX fuse q, k and v by the hidden size: their config cannot be
             * sharded by heads, so the check runs on the whole model */
            fm_counts_free(k);
            fm_graph_free(g);
            graph_check(p, c, 1);
            return;
        }
        snprintf(p->graph_note, sizeof(p->graph_note),
                 "the sharded config's graph could not be built: %s", fm_ctx_error(ctx));
        goto out;
    }
    double macs = (double)fm_work_macs(&k->by_class[FM_CLASS_MATMUL][FM_PHASE_FWD]) +
                  (double)fm_work_macs(&k->by_class[FM_CLASS_ATTENTION][FM_PHASE_FWD]);
    struct fm_plan_cfg one = *c;
    one.tp = tp;
    one.pp = 1;
    one.v = 1;
    one.ep = 1;
    one.cp = 1;
    one.balance = false;
    double flops, params;
    fm_plan_rank_work_seq(&p->env, &one, &flops, &params);
    p->graph_flops = 2.0 * macs;
    p->graph_params = (double)k->params;
    p->graph_equal = p->graph_flops == flops && p->graph_params == params;
    const char *what = tp == c->tp ? "the config sharded by tp"
                                   : "the whole config: fused q, k, v cannot be sharded by "
                                     "heads in a config";
    if (p->graph_equal)
        snprintf(p->graph_note, sizeof(p->graph_note),
                 "matmul FLOPs and parameters equal the counted graph (%s)", what);
    else
        snprintf(p->graph_note, sizeof(p->graph_note),
                 "the counted graph of %s differs: %.6g FLOPs and %.6g parameters a "
                 "sequence, the plan's formulas %.6g and %.6g",
                 what, p->graph_flops, p->graph_params, flops, params);
out:
    fm_counts_free(k);
    fm_graph_free(g);
}

static const char *default_cluster(const char *device)
{
    static const struct { const char *dev, *cluster; } map[] = {
        {"a100", "dgx-a100"}, {"h100", "dgx-h100"}, {"h200", "hgx-h200"},
        {"h800", "hgx-h800"}, {"b200", "dgx-b200"}, {"gb200", "gb200-nvl72"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcasecmp(device, map[i].dev) == 0)
            return map[i].cluster;
    }
    return NULL;
}

static enum fm_status range(struct fm_ctx *ctx, const char *field, int64_t v, int64_t hi)
{
    if (v < 0 || v > hi)
        return fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.%s must be between 1 and %lld, got "
                                             "%lld", field, (long long)hi, (long long)v);
    return FM_OK;
}

enum fm_status fm_plan_run(struct fm_ctx *ctx, const struct fm_plan_opts *o, struct fm_plan **out)
{
    *out = NULL;
    struct fm_plan *p = fm_alloc(ctx, sizeof(*p));
    if (!p)
        return FM_ERR_NOMEM;
    p->ctx = ctx;
    p->opts = *o;
    enum fm_status st = FM_OK;
    if (o->config_path) {
        char *text = NULL;
        size_t len = 0;
        st = fm_read_text(ctx, o->config_path, "config", 16, &text, &len);
        if (!st)
            st = fm_llm_config_parse(ctx, text, len, o->config_path, &p->model);
        fm_dealloc(ctx, text);
        if (st)
            goto fail;
    } else if (!o->model || !*o->model) {
        st = fm_error(ctx, FM_ERR_INVALID, "a plan needs a model (fm_plan_opts.model or "
                                           "fm_plan_opts.config_path)");
        goto fail;
    } else if (fm_zoo_find(o->model) || (strlen(o->model) > 5 &&
                                         strcasecmp(o->model + strlen(o->model) - 5, ".onnx") ==
                                             0)) {
        p->generic = true;   /* a counted graph: plan_graph.c */
        snprintf(p->model.name, sizeof(p->model.name), "%s", o->model);
    } else if ((st = fm_plan_model(ctx, o->model, &p->model))) {
        goto fail;
    }
    /* the per-rank model covers decoders with multi-head, grouped-query or multi-head latent
     * attention, BERT's encoder with its masked-LM head, and T5's encoder-decoder (one
     * pipeline stage: fm_plan_check) */
    bool t5 = !p->generic && p->model.arch == FM_LLM_T5;
    if (o->decoder_seq && !t5) {
        st = fm_error(ctx, FM_ERR_INVALID,
                      "fm_plan_opts.decoder_seq is the target length of an encoder-decoder "
                      "(T5); %s has no decoder of its own: give fm_plan_opts.seq only",
                      p->model.name);
        goto fail;
    }
    if (t5 && o->calibration) {
        st = fm_error(ctx, FM_ERR_UNSUPPORTED,
                      "fm_plan_opts.calibration times a decoder's layer graph; a plan of T5 "
                      "(%s) is timed by the roofline only: plan it without the calibration",
                      p->model.name);
        goto fail;
    }
    if (p->model.layers > FM_LLM_MAX_LAYERS) {
        st = fm_error(ctx, FM_ERR_INVALID, "%s has %lld layers, more than %d", p->model.name,
                      (long long)p->model.layers, FM_LLM_MAX_LAYERS);
        goto fail;
    }
    if (o->gpus < 1 || o->gpus > 1048576) {
        st = fm_error(ctx, FM_ERR_INVALID,
                      "fm_plan_opts.gpus must be between 1 and 1048576, got %lld",
                      (long long)o->gpus);
        goto fail;
    }
    if (o->seq < 0 || o->decoder_seq < 0) {
        st = o->seq < 0 ? fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.seq must be positive, "
                                                        "got %lld", (long long)o->seq)
                        : fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.decoder_seq must be "
                                                        "positive, got %lld",
                                   (long long)o->decoder_seq);
        goto fail;
    }
    if ((st = range(ctx, "tp", o->tp, o->gpus)) || (st = range(ctx, "pp", o->pp, o->gpus)) ||
        (st = range(ctx, "cp", o->cp, o->gpus)) || (st = range(ctx, "dp", o->dp, o->gpus)) ||
        (st = range(ctx, "ep", o->ep, o->gpus)) || (st = range(ctx, "interleave", o->interleave,
                                                                 1024)))
        goto fail;
    if (o->zero < -1 || o->zero > 3) {
        st = fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.zero must be 0, 1, 2 or 3, got %d",
                      o->zero);
        goto fail;
    }
    if (o->grad_bytes != 2 && o->grad_bytes != 4) {
        st = fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.grad_bytes must be 2 or 4, got %d",
                      o->grad_bytes);
        goto fail;
    }
    /* cluster and device: either names the other */
    const char *dev_name = o->device;
    const char *cl = o->cluster;
    if (!cl && dev_name)
        cl = default_cluster(dev_name);
    if (!cl) {
        st = fm_error(ctx, FM_ERR_INVALID,
                      dev_name ? "no built-in cluster of %s GPUs: give fm_plan_opts.cluster (a "
                                 "cluster file, docs/clusters.md)"
                               : "a plan needs fm_plan_opts.device or fm_plan_opts.cluster%s",
                      dev_name ? dev_name : "");
        goto fail;
    }
    if ((st = fm_cluster_load(ctx, cl, &p->cluster)))
        goto fail;
    if (p->cluster.max_nodes &&
        o->gpus > (int64_t)p->cluster.max_nodes * p->cluster.gpus_per_node) {
        st = fm_error(ctx, FM_ERR_INVALID,
                      "fm_plan_opts.gpus = %lld is more than cluster %s has (%d nodes of %d)",
                      (long long)o->gpus, p->cluster.name, p->cluster.max_nodes,
                      p->cluster.gpus_per_node);
        goto fail;
    }
    if (!dev_name)
        dev_name = p->cluster.device;
    if (!dev_name || !*dev_name) {
        st = fm_error(ctx, FM_ERR_INVALID, "cluster %s names no device; give "
                                           "fm_plan_opts.device", p->cluster.name);
        goto fail;
    }
    if ((st = fm_devices_load(ctx, o->devices_file, &p->devs)) ||
        (st = fm_devices_find(ctx, p->devs, dev_name, &p->dev)))
        goto fail;
    if (o->precision != FM_PREC_BF16 && o->precision != FM_PREC_FP16 &&
        o->precision != FM_PREC_FP8) {
        st = fm_error(ctx, FM_ERR_INVALID,
                      "fm_plan_opts.precision %s: a plan trains in bf16, fp16 or fp8",
                      fm_precision_name(o->precision));
        goto fail;
    }
    if (!(p->dev->peak_tensor[o->precision] > 0)) {
        st = fm_error(ctx, FM_ERR_INVALID, "%s has no %s tensor-core peak in the device table",
                      p->dev->name, fm_precision_name(o->precision));
        goto fail;
    }
    if (!(o->ppp_compute > 0 && o->ppp_compute <= 1) || !(o->ppp_memory > 0 &&
                                                          o->ppp_memory <= 1) ||
        !(o->ppp_comm > 0 && o->ppp_comm <= 1)) {
        st = fm_error(ctx, FM_ERR_INVALID, "PPP fractions must be in (0, 1]");
        goto fail;
    }

    struct fm_plan_cfg c;
    memset(&c, 0, sizeof(c));
    c.tp = o->tp ? (int)o->tp : 1;
    c.pp = o->pp ? (int)o->pp : 1;
    c.cp = o->cp ? (int)o->cp : 1;
    c.ep = o->ep ? (int)o->ep : 1;
    c.v = o->interleave ? (int)o->interleave : 1;
    c.zero = o->fsdp ? 3 : o->zero < 0 ? 1 : o->zero;
    c.sp = o->sequence_parallel;
    c.balance = o->balance_embedding;
    c.recompute = o->recompute;
    c.mb = o->micro_batch ? o->micro_batch : 1;
    c.seq = o->seq ? o->seq : (p->model.max_pos && p->model.max_pos < 2048 ? p->model.max_pos
                                                                           : 2048);
    if (t5) {
        /* T5's pre-training lengths are 512 source tokens (Raffel et al. 2020); the target
         * defaults to the source's length, as fm_llm_build_opts.decoder_seq does */
        c.seq = o->seq ? o->seq : 512;
        c.dseq = o->decoder_seq ? o->decoder_seq : c.seq;
    }
    int64_t tpc = (int64_t)c.tp * c.pp * c.cp;
    if (o->dp) {
        c.dp = (int)o->dp;
    } else if (!o->search) {
        if (o->gpus % tpc) {
            int64_t lo = o->gpus / tpc * tpc, hi = lo + tpc;
            st = fm_error(ctx, FM_ERR_INVALID,
                          "fm_plan_opts.gpus (%lld) is not a multiple of tp x pp x cp = %lld; "
                          "nearest valid: %lld or %lld GPUs",
                          (long long)o->gpus, (long long)tpc, (long long)(lo ? lo : hi),
                          (long long)(lo ? hi : hi + tpc));
            goto fail;
        }
        c.dp = (int)(o->gpus / tpc);
    }
    p->env.cfg = &p->model;
    p->env.dev = p->dev;
    p->env.cluster = &p->cluster;
    p->env.precision = o->precision;
    p->env.gpus = (int)o->gpus;
    p->env.grad_bytes = o->grad_bytes;
    p->env.flash = !o->no_flash_attention;
    p->env.overlap = !o->no_overlap;
    p->env.ppp_compute = o->ppp_compute;
    p->env.ppp_memory = o->ppp_memory;
    p->env.ppp_comm = o->ppp_comm;
    p->peak = fm_device_util_peak(p->dev, o->precision, false);

    if (o->calibration && !p->generic) {
        /* the check predict makes (a counted graph's plan makes it in its session): the
         * calibration's device and precision against the plan's */
        const struct fm_calibration *cal = o->calibration;
        if ((st = fm_calibration_check_as(ctx, cal, p->dev->name, cal->backend, cal->threads,
                                          o->precision, o->force_calibration,
                                          "fm_plan_opts.force_calibration")))
            goto fail;
        if (c.cp > 1 && !o->search) {
            st = fm_error(ctx, FM_ERR_INVALID,
                          "fm_plan_opts.calibration times the graph of the config sharded by "
                          "tp, which cannot show context parallelism (fm_plan_opts.cp = %d: "
                          "each rank's queries against the whole sequence's keys); plan it "
                          "without the calibration or with cp = 1", c.cp);
            goto fail;
        }
    }
    if (p->generic) {
        if (o->search) {
            st = fm_error(ctx, FM_ERR_INVALID, "a search needs a language model's config; %s "
                                               "takes data and pipeline parallelism as given",
                          o->model);
            goto fail;
        }
        c.seq = 0;
        c.gb = o->global_batch ? o->global_batch : c.mb * c.dp * (c.pp > 1 ? 4 * c.pp : 1);
        if ((int64_t)c.tp * c.pp * c.cp * c.dp != o->gpus) {
            st = fm_error(ctx, FM_ERR_INVALID, "tp x pp x cp x dp = %lld, not fm_plan_opts.gpus "
                                               "(%lld)",
                          (long long)c.tp * c.pp * c.cp * c.dp, (long long)o->gpus);
            goto fail;
        }
        if (c.gb % (c.mb * c.dp)) {
            int64_t unit = c.mb * c.dp, lo = c.gb / unit * unit;
            st = fm_error(ctx, FM_ERR_INVALID,
                          "fm_plan_opts.global_batch = %lld is not a multiple of micro_batch x "
                          "dp = %lld x %d; nearest valid: %lld or %lld",
                          (long long)c.gb, (long long)c.mb, c.dp, (long long)(lo ? lo : unit),
                          (long long)(lo ? lo + unit : 2 * unit));
            goto fail;
        }
        c.m = c.gb / (c.mb * c.dp);
        if ((st = fm_plan_graph_eval(p, &c)))
            goto fail;
    } else if (o->search) {
        if (!o->global_batch) {
            st = fm_error(ctx, FM_ERR_INVALID,
                          "a search compares plans at one global batch: give "
                          "fm_plan_opts.global_batch");
            goto fail;
        }
        c.gb = o->global_batch;
        /* the ZeRO stage is searched too unless the user chose one */
        bool search_zero = !o->fsdp && o->zero < 0;
        struct fm_plan_timings *ts = NULL;
        if (o->calibration) {
            ts = &p->search_timings;
            ts->plan = p;
        }
        if ((st = fm_plan_search_run(ctx, &p->env, &c, search_zero, ts, &p->search)))
            goto fail;
        p->searched = true;
        p->eval = p->search.best[0];
        if (ts) {
            /* the note counts the best plan's timed graph */
            int ti = 0, ai = p->eval.cfg.mb == 4 ? 2 : p->eval.cfg.mb == 2 ? 1 : 0;
            while ((1 << ti) < p->eval.cfg.tp)
                ti++;
            fm_plan_calib_note(p, &ts->t[ti][ai]);
        }
    } else {
        if (o->global_batch) {
            c.gb = o->global_batch;
        } else {
            c.gb = c.mb * c.dp * (c.pp > 1 ? 4 * c.pp : 1);
            snprintf(p->note, sizeof(p->note),
                     "global batch not given: %lld sequences (%s micro-batches of %lld per "
                     "data-parallel rank)", (long long)c.gb, c.pp > 1 ? "4 x pp" : "one",
                     (long long)c.mb);
        }
        c.m = c.gb / (c.mb * (c.dp ? c.dp : 1));
        /* Megatron pads the vocabulary to a multiple of 128 x tp */
        int64_t unit = 128 * (int64_t)c.tp;
        p->env.vocab = (p->model.vocab + unit - 1) / unit * unit;
        if ((st = fm_plan_check(ctx, &p->env, &c)))
            goto fail;
        if (o->calibration && (st = fm_plan_calib_time(p, &c)))
            goto fail;
        fm_plan_eval(&p->env, &c, &p->eval);
        graph_check(p, &c, c.tp);
    }
    if (o->tokens > 0) {
        p->tokens_time_s = o->tokens / p->eval.tokens_per_s;
        p->gpu_hours = p->tokens_time_s * (double)o->gpus / 3600.0;
    }
    *out = p;
    return FM_OK;
fail:
    fm_plan_free(p);
    return st;
}

void fm_plan_free(struct fm_plan *p)
{
    if (!p)
        return;
    fm_devices_free(p->devs);
    fm_dealloc(p->ctx, p);
}

void fm_plan_summary(const struct fm_plan *p, struct fm_plan_summary *s)
{
    s->step_s = p->eval.step_s;
    s->mfu = p->eval.mfu;
    s->hfu = p->eval.hfu;
    s->tokens_per_s = p->eval.tokens_per_s;
    s->memory_per_gpu_bytes = p->eval.mem_total;
    s->fits = p->eval.fits;
}

enum fm_status fm_nccl_save_cluster(struct fm_ctx *ctx, const struct fm_nccl_probe *p,
                                    const char *path)
{
    if (p->gpus < 2 || !(p->busbw[0] > 0))
        return fm_error(ctx, FM_ERR_INVALID, "the NCCL probe measured nothing to save");
    struct fm_cluster c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "measured-%dx", p->gpus);
    snprintf(c.device, sizeof(c.device), "%.63s", p->gpu_name);
    c.gpus_per_node = p->gpus;
    snprintf(c.intra_link, sizeof(c.intra_link), "measured by NCCL all-reduce");
    c.intra_bw = p->busbw[0];
    /* a per-step latency from the small all-reduce: its time over NCCL's steps */
    c.intra_lat_s = p->small_s[0] / fm_coll_steps(FM_COLL_ALLREDUCE, p->gpus);
    /* one process sees one node: the network is not measured; HDR's 25 GB/s per GPU stands in,
     * and the file says so */
    snprintf(c.inter_link, sizeof(c.inter_link), "not measured: 200 Gb/s per GPU assumed");
    c.inter_bw = 25e9;
    c.inter_lat_s = 5e-6;
    snprintf(c.source, sizeof(c.source),
             "measured by NCCL's collectives on one node: the bus bandwidth already achieved, "
             "so plan it with a communication fraction of 1; inter_node is not measured, "
             "edit it");
    FILE *f = fopen(path, "w");
    if (!f)
        return fm_error(ctx, FM_ERR_IO, "cannot write %s", path);
    fm_cluster_write_json(f, &c);
    if (fclose(f) != 0)
        return fm_error(ctx, FM_ERR_IO, "writing %s failed", path);
    return FM_OK;
}
