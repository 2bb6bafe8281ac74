/* Deterministic starting values shared by all backends (fm_init_values): one generator
 * (SplitMix64 seeded from the seed and the tensor's name), so the CPU and CUDA backends, and
 * the PyTorch goldens, can start from identical weights and inputs. Never zeros: a test on
 * zeros hides unwritten outputs. Integer inputs are drawn in the range their readers need
 * (class labels, token ids below the table's rows) and masks are ones; constants whose contents
 * the file states start from those. */
#include "backend.h"
#include "../core/internal.h"

#include <math.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static double uniform01(uint64_t *s)
{
    return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t name_seed(uint64_t seed, const char *name)
{
    return fm_hash_name(seed, name);
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* The range an integer tensor's values are drawn in, from the node that reads it: class
 * labels below the logits' last dim; token ids below the row count of the table a Gather or
 * Embedding looks them up in (followed through reshapes and casts, a few nodes deep). 0 when no
 * reader says (see label_range). */
static int64_t range_from_readers(const struct fm_graph *g, fm_tid t, int depth)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] != t)
                continue;
            if (n->op == FM_OP_CROSS_ENTROPY && k == 1) {
                const struct fm_tensor *lg = fm_graph_tensor(g, n->in[0]);
                return lg->shape.dims[lg->shape.rank - 1];
            }
            if (n->op == FM_OP_EMBEDDING && k == 0)
                return fm_graph_tensor(g, n->in[1])->shape.dims[0];
            if (n->op == FM_OP_GATHER && k == 1) {
                const struct fm_tensor *data = fm_graph_tensor(g, n->in[0]);
                int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + data->shape.rank
                                                 : n->attrs.axis;
                if (axis >= 0 && axis < data->shape.rank)
                    return data->shape.dims[axis];
            }
            bool passes = n->op == FM_OP_RESHAPE || n->op == FM_OP_FLATTEN ||
                          n->op == FM_OP_SQUEEZE || n->op == FM_OP_UNSQUEEZE ||
                          n->op == FM_OP_IDENTITY || n->op == FM_OP_CAST ||
                          n->op == FM_OP_EXPAND;
            if (passes && k == 0 && depth < 4 && n->n_out > 0) {
                int64_t r = range_from_readers(g, n->out[0], depth + 1);
                if (r > 0)
                    return r;
            }
        }
    }
    return 0;
}

static bool names_a_mask(const char *name)
{
    for (const char *p = name; *p; p++) {
        if ((p[0] == 'm' || p[0] == 'M') && (p[1] == 'a' || p[1] == 'A') &&
            (p[2] == 's' || p[2] == 'S') && (p[3] == 'k' || p[3] == 'K'))
            return true;
    }
    return false;
}

/* The range of an integer tensor's values: what its readers need (labels, token ids); a mask
 * (an input named "...mask...", or any bool input) is all ones, every position visible; 2
 * (0 or 1) otherwise. */
static int64_t label_range(const struct fm_graph *g, fm_tid t)
{
    int64_t r = range_from_readers(g, t, 0);
    return r > 0 ? r : 2;
}

static bool all_ones(const struct fm_graph *g, fm_tid t)
{
    const struct fm_tensor *ft = fm_graph_tensor(g, t);
    return range_from_readers(g, t, 0) == 0 &&
           (names_a_mask(ft->name) || ft->dtype == FM_DTYPE_BOOL);
}

enum fm_status fm_init_values(struct fm_ctx *ctx, const struct fm_graph *g, fm_tid id,
                              uint64_t seed, float *dst, uint64_t n)
{
    const struct fm_tensor *t = fm_graph_tensor(g, id);
    if (!t)
        return fm_error(ctx, FM_ERR_INVALID, "no tensor with id %d", (int)id);
    uint64_t numel;
    if (fm_shape_numel(&t->shape, &numel) != FM_OK || numel != n)
        return fm_error(ctx, FM_ERR_INVALID, "tensor '%s': %llu values requested, it has %llu",
                        t->name, (unsigned long long)n, (unsigned long long)numel);
    uint64_t s = name_seed(seed, t->name);
    /* constants whose contents the model states (a scale, an epsilon, a mask): those */
    if (t->producer == FM_NONE && t->role == FM_ROLE_CONST && t->nvalue == n &&
        (t->ivalue || t->fvalue)) {
        for (uint64_t i = 0; i < n; i++)
            dst[i] = t->fvalue ? (float)t->fvalue[i] : (float)t->ivalue[i];
        return FM_OK;
    }
    if (!fm_dtype_is_float(t->dtype)) {
        if (all_ones(g, id)) {
            for (uint64_t i = 0; i < n; i++)
                dst[i] = 1.0f;
            return FM_OK;
        }
        int64_t range = label_range(g, id);
        for (uint64_t i = 0; i < n; i++)
            dst[i] = (float)(splitmix64(&s) % (uint64_t)(range > 0 ? range : 1));
        return FM_OK;
    }
    if (t->role == FM_ROLE_PARAM || t->role == FM_ROLE_BUFFER) {
        /* BatchNorm and other norms: weight 1, bias 0 (PyTorch); running stats 0 / 1 */
        const struct fm_node *user = NULL;
        for (size_t i = 0; i < fm_graph_node_count(g) && !user; i++) {
            const struct fm_node *nd = fm_graph_node(g, (fm_nid)i);
            for (int k = 0; k < nd->n_in; k++) {
                if (nd->in[k] == id)
                    user = nd;
            }
        }
        bool norm = user && fm_op_class(user->op) == FM_CLASS_NORM;
        if (norm || t->role == FM_ROLE_BUFFER) {
            float v = (has_suffix(t->name, "running_var") || has_suffix(t->name, "weight") ||
                       has_suffix(t->name, "scale"))
                          ? 1.0f
                          : 0.0f;
            for (uint64_t i = 0; i < n; i++)
                dst[i] = v;
            return FM_OK;
        }
        /* fan-in: weight (out, in, k...) -> in*k..; a bias uses its layer's weight fan-in */
        uint64_t fan_in = 1;
        const struct fm_tensor *w = t;
        if (t->shape.rank <= 1 && user && user->n_in > 1)
            w = fm_graph_tensor(g, user->in[1]);
        if (w->shape.rank >= 2) {
            for (int k = 1; k < w->shape.rank; k++)
                fan_in *= (uint64_t)w->shape.dims[k];
        } else if (w->shape.rank == 1) {
            fan_in = (uint64_t)w->shape.dims[0];
        }
        double bound = 1.0 / sqrt((double)(fan_in ? fan_in : 1));
        for (uint64_t i = 0; i < n; i++)
            dst[i] = (float)((2.0 * uniform01(&s) - 1.0) * bound);
        return FM_OK;
    }
    /* inputs and constants: standard normal (Box-Muller), never exactly zero */
    for (uint64_t i = 0; i < n; i += 2) {
        double u1 = uniform01(&s), u2 = uniform01(&s);
        if (u1 < 1e-300)
            u1 = 1e-300;
        double r = sqrt(-2.0 * log(u1));
        dst[i] = (float)(r * cos(2.0 * M_PI * u2));
        if (i + 1 < n)
            dst[i + 1] = (float)(r * sin(2.0 * M_PI * u2));
    }
    return FM_OK;
}
