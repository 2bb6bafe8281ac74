/* Random generators on the CPU backend: RandomUniform(Like), RandomNormal(Like), Bernoulli,
 * Multinomial. Every step draws afresh, per element (per sample for Multinomial), as a
 * training step does (stochastic depth's per-sample mask, a dropout-like draw): element i of
 * step k comes from a counter-based hash of (the run's seed, the node, the node's own seed
 * attribute when the file gives one, k, i), so the draws are reproducible from the run's seed,
 * differ from step to step and from node to node, and run on the step's threads in any order.
 * A file's seed does not freeze the draw over steps (ONNX's meaning of a seed is one
 * reproducible sequence; a training step with one fixed mask would not be training): it is
 * mixed in. Uniform numbers have 24 random bits (float32's mantissa); normal ones come from
 * Box-Muller with two of them. No backward: nothing flows through a draw (src/ops/random.c).
 * Not done: integer or fp16 outputs of the uniform and normal generators (the backend runs
 * fp32 graphs). */
#include "cpu.h"

#include <math.h>

struct rnd_arg {
    enum fm_op op;
    uint64_t key;           /* the run's seed, the node, the node's seed */
    uint64_t n;             /* output elements */
    double lo, hi;          /* uniform bounds; normal: mean, scale */
    int32_t *iout;          /* integer output (Multinomial, Bernoulli to bool/int), or NULL */
    int64_t rows, classes;  /* Multinomial */
    float *cum;             /* Multinomial: one row's running sums */
};

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The k-th uniform number in [0, 1) of stream `key`: 24 bits of a hash. */
static float uniform01(uint64_t key, uint64_t k)
{
    return (float)(mix64(key + (k + 1) * 0x9e3779b97f4a7c15ull) >> 40) * (1.0f / 16777216.0f);
}

static uint64_t step_key(const struct fm_cpu *s, const struct rnd_arg *a)
{
    return mix64(a->key ^ mix64(s->step_index + 0x632be59bd9b4e019ull));
}

/* memories: the output (float), or none (integer output); Bernoulli: p first */
static enum fm_status rnd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct rnd_arg *a = arg;
    uint64_t key = step_key(s, a);
    const int64_t n = (int64_t)a->n;
    switch (a->op) {
    case FM_OP_RANDOM_UNIFORM:
    case FM_OP_RANDOM_UNIFORM_LIKE: {
        float *y = fm_cpu_item_f32(it, 0);
        const float lo = (float)a->lo, w = (float)(a->hi - a->lo);
        FM_CPU_PARALLEL
        for (int64_t i = 0; i < n; i++)
            y[i] = lo + w * uniform01(key, (uint64_t)i);
        break;
    }
    case FM_OP_RANDOM_NORMAL:
    case FM_OP_RANDOM_NORMAL_LIKE: {
        float *y = fm_cpu_item_f32(it, 0);
        const double mean = a->lo, scale = a->hi;
        FM_CPU_PARALLEL
        for (int64_t i = 0; i < n; i++) {
            double u1 = 1.0 - uniform01(key, 2 * (uint64_t)i);   /* (0, 1]: log is finite */
            double u2 = uniform01(key, 2 * (uint64_t)i + 1);
            double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
            y[i] = (float)(mean + scale * z);
        }
        break;
    }
    case FM_OP_BERNOULLI: {
        const float *p = fm_cpu_item_f32(it, 0);
        float *y = a->iout ? NULL : fm_cpu_item_f32(it, 1);
        int32_t *yi = a->iout;
        FM_CPU_PARALLEL
        for (int64_t i = 0; i < n; i++) {
            bool one = uniform01(key, (uint64_t)i) < p[i];
            if (yi)
                yi[i] = one;
            else
                y[i] = one ? 1.0f : 0.0f;
        }
        break;
    }
    case FM_OP_MULTINOMIAL: {
        const float *x = fm_cpu_item_f32(it, 0);
        const int64_t c = a->classes, samples = a->rows ? n / a->rows : 0;
        for (int64_t r = 0; r < a->rows; r++) {
            const float *row = x + r * c;
            float mx = -INFINITY, total = 0.0f;
            for (int64_t j = 0; j < c; j++)
                mx = row[j] > mx ? row[j] : mx;
            for (int64_t j = 0; j < c; j++) {
                total += isfinite(mx) ? expf(row[j] - mx) : 1.0f;
                a->cum[j] = total;
            }
            for (int64_t k = 0; k < samples; k++) {
                float t = uniform01(key, (uint64_t)(r * samples + k)) * total;
                int64_t lo = 0, hi = c - 1;   /* the first class whose running sum passes t */
                while (lo < hi) {
                    int64_t mid = lo + (hi - lo) / 2;
                    if (a->cum[mid] > t)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                a->iout[r * samples + k] = (int32_t)lo;
            }
        }
        break;
    }
    default:
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': not a random op",
                        fm_cpu_node_name(s, it->node));
    }
    return FM_OK;
}

enum fm_status fm_cpu_random_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    const struct fm_tensor *y = fm_graph_tensor(g, n->out[0]);
    if (n->op != FM_OP_MULTINOMIAL && n->op != FM_OP_BERNOULLI && !fm_dtype_is_float(y->dtype))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): a %s output is not "
                        "implemented on the CPU backend; nothing was run", n->name, n->op_name,
                        fm_dtype_name(y->dtype));
    if ((n->op == FM_OP_MULTINOMIAL || n->op == FM_OP_BERNOULLI) &&
        !fm_dtype_is_float(fm_graph_tensor(g, n->in[0])->dtype))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): integer probabilities are "
                        "not implemented on the CPU backend; nothing was run", n->name,
                        n->op_name);
    return FM_OK;
}

enum fm_status fm_cpu_random_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct rnd_arg *a = fm_cpu_buf(s, sizeof(*a));
    if (!a)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    fm_tid y = n->out[0];
    enum fm_status st = fm_cpu_place_out(s, y);
    if (st)
        return st;
    const struct fm_attrs *at = &n->attrs;
    a->op = n->op;
    a->n = s->t[y].numel;
    a->key = mix64(s->opts.seed * 0x9e3779b97f4a7c15ull + (uint64_t)id) ^
             (at->nints > 2 && at->ints[1] ? mix64((uint64_t)at->ints[2] + 0x2545f4914f6cdd1dull)
                                            : 0);
    bool normal = n->op == FM_OP_RANDOM_NORMAL || n->op == FM_OP_RANDOM_NORMAL_LIKE;
    a->lo = normal ? at->alpha : at->lo;
    a->hi = normal ? at->beta : at->hi;
    a->iout = fm_cpu_is_int(s, y) ? fm_cpu_ints(s, y) : NULL;
    dnnl_memory_t mems[2];
    int nm = 0;
    if (n->op == FM_OP_BERNOULLI || n->op == FM_OP_MULTINOMIAL) {
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[0], false, &mems[nm++]);
        if (st)
            return st;
    }
    if (n->op == FM_OP_MULTINOMIAL) {
        const struct fm_shape *x = &fm_graph_tensor(s->g, n->in[0])->shape;
        a->rows = x->dims[0];
        a->classes = x->dims[1];
        a->cum = fm_cpu_buf(s, (size_t)(a->classes ? a->classes : 1) * sizeof(float));
        if (!a->cum)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    }
    if (!a->iout)
        mems[nm++] = s->t[y].val_mem;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, rnd_fn, a, mems, nm);
}
