/* The measurement driver shared by every backend: chooses the backend for a device string,
 * runs warm-up steps (discarded) and timed steps, and keeps every step time, the median and
 * spread, and per-node medians. Timing itself is the backend's (events on GPUs). */
#include "backend.h"
#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>

void fm_measure_opts_init(struct fm_measure_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->device = "cpu";
    o->mode = FM_MODE_TRAIN;
    o->precision = FM_PREC_FP32;
    o->warmup = 3;
    o->steps = 10;
    o->per_layer = true;
    o->seed = 1;
    o->lr = 0.01;
    o->momentum = 0.9;
}

enum fm_status fm_backend_for(struct fm_ctx *ctx, const char *device, const struct fm_backend **out)
{
    *out = NULL;
    struct fm_target t;
    enum fm_status st = fm_target_parse(ctx, device, &t);
    if (st)   /* the message names the string; a string that is no device at all is a bad option */
        return st == FM_ERR_NOT_FOUND ? FM_ERR_INVALID : st;
    if (t.kind == FM_TARGET_CPU) {
        *out = fm_backend_cpu();
        if (!*out)
            return fm_error(ctx, FM_ERR_UNSUPPORTED,
                            "this flopmeter was built without the CPU backend (install "
                            "libdnnl-dev and rebuild)");
        return FM_OK;
    }
    *out = fm_backend_cuda();
    if (!*out)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "this flopmeter was built without the CUDA backend (needs the CUDA "
                        "toolkit and cuDNN at build time)");
    return FM_OK;
}

static double median_of(double *v, size_t n)
{
    double lo, med, hi;
    fm_stats_summary(v, n, &lo, &med, &hi);
    return med;
}

void fm_measurement_free(struct fm_measurement *m)
{
    if (!m)
        return;
    struct fm_ctx *ctx = m->ctx;
    fm_dealloc(ctx, m->step_ms);
    fm_dealloc(ctx, m->nodes);
    fm_dealloc(ctx, m);
}

enum fm_status fm_measure_check(struct fm_ctx *ctx, const struct fm_graph *g, const char *device,
                                struct fm_backend_check *out)
{
    memset(out, 0, sizeof(*out));
    if (!fm_graph_topo_order(g))
        return fm_error(ctx, FM_ERR_GRAPH, "graph must be finalized before it is checked");
    const struct fm_backend *be;
    enum fm_status st = fm_backend_for(ctx, device, &be);
    if (st)
        return st;
    snprintf(out->backend, sizeof(out->backend), "%s", be->name);
    out->n_nodes = fm_graph_node_count(g);
    const fm_nid *topo = fm_graph_topo_order(g);
    for (size_t i = 0; i < out->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, topo[i]);
        if (be->supports(ctx, g, topo[i]) == FM_OK) {
            out->n_supported++;
            continue;
        }
        size_t k = 0;
        while (k < out->n_gaps && strcmp(out->gaps[k].op, n->op_name) != 0)
            k++;
        if (k == out->n_gaps) {
            if (k == FM_MAX_GAPS) {
                out->more_gaps = true;
                continue;
            }
            out->gaps[k].op = n->op_name;
            out->gaps[k].first_layer = n->name;
            snprintf(out->gaps[k].reason, sizeof(out->gaps[k].reason), "%s", fm_ctx_error(ctx));
            out->n_gaps++;
        }
        out->gaps[k].nodes++;
    }
    return FM_OK;
}

enum fm_status fm_measure_check_error(struct fm_ctx *ctx, const struct fm_backend_check *c)
{
    if (!c->n_gaps)
        return FM_OK;
    if (c->n_gaps == 1 && c->gaps[0].nodes == 1)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "%s", c->gaps[0].reason);
    char list[768];
    size_t len = 0;
    list[0] = '\0';
    for (size_t k = 0; k < c->n_gaps && len < sizeof(list); k++)
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s (%llu layer%s)",
                                k ? ", " : "", c->gaps[k].op,
                                (unsigned long long)c->gaps[k].nodes,
                                c->gaps[k].nodes == 1 ? "" : "s");
    return fm_error(ctx, FM_ERR_UNSUPPORTED, "the %s backend cannot run %zu of this model's %zu "
                    "layers: %s%s; nothing was run. The first: %s",
                    c->backend, c->n_nodes - c->n_supported, c->n_nodes, list,
                    c->more_gaps ? ", and more" : "", c->gaps[0].reason);
}

enum fm_status fm_measure(struct fm_ctx *ctx, const struct fm_graph *g,
                          const struct fm_measure_opts *opts, struct fm_measurement **out)
{
    *out = NULL;
    if (!fm_graph_topo_order(g))
        return fm_error(ctx, FM_ERR_GRAPH, "graph must be finalized before it is measured");
    if (opts->steps <= 0 || opts->warmup < 0)
        return fm_error(ctx, FM_ERR_INVALID, "steps must be positive and warm-up non-negative");
    const struct fm_backend *be;
    enum fm_status st = fm_backend_for(ctx, opts->device, &be);
    if (st)
        return st;
    /* what the backend can run is asked here, of every node, before anything is prepared
     * (prepare asks its supports() again only to guard callers of the backend itself) */
    {
        struct fm_backend_check check;
        if ((st = fm_measure_check(ctx, g, opts->device, &check)) ||
            (st = fm_measure_check_error(ctx, &check)))
            return st;
    }
    size_t nn = fm_graph_node_count(g);
    size_t steps = (size_t)opts->steps;
    struct fm_measurement *m = fm_alloc(ctx, sizeof(*m));
    double *samples = fm_alloc(ctx, sizeof(double) * steps * (opts->per_layer ? nn * FM_PHASE_COUNT + 1 : 1));
    struct fm_node_timing *step_nodes = opts->per_layer ? fm_alloc(ctx, sizeof(*step_nodes) * nn + 1) : NULL;
    void *state = NULL;
    if (m)
        m->ctx = ctx;
    if (!m || !samples || (opts->per_layer && !step_nodes)) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory preparing the measurement");
        goto fail;
    }
    m->step_ms = fm_alloc(ctx, sizeof(double) * steps);
    if (opts->per_layer)
        m->nodes = fm_alloc(ctx, sizeof(*m->nodes) * nn + 1);
    if (!m->step_ms || (opts->per_layer && !m->nodes)) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory preparing the measurement");
        goto fail;
    }
    snprintf(m->backend, sizeof(m->backend), "%s", be->name);
    m->precision = opts->precision;
    m->n_steps = steps;
    m->n_nodes = opts->per_layer ? nn : 0;
    if (opts->progress)
        opts->progress(opts->progress_user, "preparing", 0, 1);
    st = be->prepare(ctx, g, opts, &state);
    if (st)
        goto fail;
    snprintf(m->device_name, sizeof(m->device_name), "%s", be->device_name(state));
    m->threads = be->threads ? be->threads(state) : 0;
    m->cold_cache = opts->per_layer && be->cold_cache && be->cold_cache(state);
    int total = opts->warmup + opts->steps;
    for (int i = 0; i < total; i++) {
        bool timed = i >= opts->warmup;
        struct fm_step_timing t = {0};
        if (step_nodes) {
            memset(step_nodes, 0, sizeof(*step_nodes) * nn);
            t.nodes = step_nodes;
        }
        if (opts->progress)
            opts->progress(opts->progress_user, timed ? "timed steps" : "warm-up", i, total);
        st = be->step(state, &t);
        if (st)
            goto fail;
        if (!timed)
            continue;
        size_t k = (size_t)(i - opts->warmup);
        m->step_ms[k] = t.step_ms;
        if (k == 0)
            m->loss_first = t.loss;
        m->loss_last = t.loss;
        if (step_nodes) {
            for (size_t n = 0; n < nn; n++) {
                for (int p = 0; p < FM_PHASE_COUNT; p++)
                    samples[(n * FM_PHASE_COUNT + (size_t)p) * steps + k] = step_nodes[n].ms[p];
                m->nodes[n].bwd_split = step_nodes[n].bwd_split;
            }
        }
    }
    if (opts->progress)
        opts->progress(opts->progress_user, "done", total, total);
    if (be->clock_mhz)
        m->clock_mhz = be->clock_mhz(state);
    {
        double *tmp = fm_alloc(ctx, sizeof(double) * steps);
        if (!tmp) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory");
            goto fail;
        }
        memcpy(tmp, m->step_ms, sizeof(double) * steps);
        m->step_ms_median = median_of(tmp, steps);
        m->step_ms_min = tmp[0];
        m->step_ms_max = tmp[steps - 1];
        if (step_nodes) {
            for (size_t n = 0; n < nn; n++) {
                for (int p = 0; p < FM_PHASE_COUNT; p++)
                    m->nodes[n].ms[p] =
                        median_of(&samples[(n * FM_PHASE_COUNT + (size_t)p) * steps], steps);
            }
        }
        fm_dealloc(ctx, tmp);
    }
    be->release(state);
    fm_dealloc(ctx, samples);
    fm_dealloc(ctx, step_nodes);
    *out = m;
    return FM_OK;
fail:
    if (state)
        be->release(state);
    fm_dealloc(ctx, samples);
    fm_dealloc(ctx, step_nodes);
    fm_measurement_free(m);
    return st;
}
