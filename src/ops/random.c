/* Random generators: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial. What a
 * training step spends drawing random numbers (stochastic depth draws one Bernoulli per sample
 * through RandomUniformLike and a comparison; dropout-like masks). No gradient flows through a
 * generator: its outputs carry none (fm_op_is_random: the graph stops gradients there), and
 * Bernoulli's and Multinomial's probabilities get none from it (PyTorch defines no derivative
 * for bernoulli or multinomial sampling), so nothing is counted for backward and nothing is
 * kept.
 *
 * A random draw is counted as one special operation: a function evaluation per element, as an
 * exp is, not the generator's integer arithmetic (Philox's rounds or a Mersenne twister's
 * shifts, which are no floating-point work but are not free). Per element of the output E:
 *   uniform (low + (high - low) u)      1 special (the draw), 1 mul, 1 add
 *   normal  (mean + scale z, z by Box-Muller from a pair of uniform draws: per pair a log, a
 *           sqrt, a cos and a sin (4 special) and -2 ln u1, 2 pi u2, r cos t, r sin t (4 mul))
 *                                       3 special, 3 mul, 1 add
 *   bernoulli (u < p)                   1 special, 1 cmp; reads p, writes the output
 * Multinomial, input (B, C) unnormalized log-probabilities, S samples per row: per row C exp
 * (special) and C - 1 adds (the running sum); per sample a draw (special), a mul (u times the
 * total) and a binary search over the C sums, ceil(log2 C) compares:
 *   B (C special + (C - 1) add) + B S (1 special + 1 mul + ceil(log2 C) cmp)
 * Bytes: the *Like ops and RandomUniform/RandomNormal read nothing (the input's shape only) and
 * write the output; Bernoulli and Multinomial read their input and write the output.
 * PyTorch's FlopCounterMode, fvcore and the other counters count random ops as zero.
 *
 * attrs: ints = {enum fm_dtype of the output, seed given (0/1), seed, then RandomUniform's and
 * RandomNormal's shape, or Multinomial's sample_size}; uniform: lo = low, hi = high; normal:
 * alpha = mean, beta = scale. */
#include "ops.h"

enum { RND_DTYPE = 0, RND_HAS_SEED, RND_SEED, RND_EXTRA };

static enum fm_status random_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_attrs *a = &n->attrs;
    if (a->nints < RND_EXTRA || a->ints[RND_DTYPE] < 0 || a->ints[RND_DTYPE] >= FM_DTYPE_COUNT)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): expects {dtype, seed given, "
                        "seed, ...}", n->name, n->op_name);
    enum fm_dtype dt = (enum fm_dtype)a->ints[RND_DTYPE];
    struct fm_shape y;
    switch (n->op) {
    case FM_OP_RANDOM_UNIFORM:
    case FM_OP_RANDOM_NORMAL: {
        int r = a->nints - RND_EXTRA;
        if (r > FM_MAX_DIMS)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): rank %d is more than %d",
                            n->name, n->op_name, r, FM_MAX_DIMS);
        y.rank = r;
        for (int i = 0; i < r; i++) {
            if (a->ints[RND_EXTRA + i] < 0)
                return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): dim %d is %lld",
                                n->name, n->op_name, i, (long long)a->ints[RND_EXTRA + i]);
            y.dims[i] = a->ints[RND_EXTRA + i];
        }
        break;
    }
    case FM_OP_MULTINOMIAL: {
        enum fm_status st = fm_shape_expect_rank(call, 0, 2, 2);
        if (st)
            return st;
        int64_t s = a->nints > RND_EXTRA ? a->ints[RND_EXTRA] : 0;
        if (s < 1)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Multinomial): sample_size "
                            "%lld", n->name, (long long)s);
        if (dt != FM_DTYPE_INT32 && dt != FM_DTYPE_INT64)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Multinomial): the output is "
                            "int32 or int64, not %s", n->name, fm_dtype_name(dt));
        y.rank = 2;
        y.dims[0] = call->in[0]->shape.dims[0];
        y.dims[1] = s;
        break;
    }
    default:   /* the *Like ops and Bernoulli: the input's shape */
        y = call->in[0]->shape;
        break;
    }
    if (n->op != FM_OP_MULTINOMIAL && n->op != FM_OP_BERNOULLI && !fm_dtype_is_float(dt))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): the output is a float type, "
                        "not %s", n->name, n->op_name, fm_dtype_name(dt));
    call->out_shape[0] = y;
    call->out_dtype[0] = dt;
    return FM_OK;
}

static uint64_t ceil_log2(uint64_t c)
{
    uint64_t k = 0;
    while (k < 64 && ((uint64_t)1 << k) < c)
        k++;
    return k;
}

static enum fm_status random_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    uint64_t e = fm_cost_numel(call, call->out[0]);
    switch (n->op) {
    case FM_OP_RANDOM_UNIFORM:
    case FM_OP_RANDOM_UNIFORM_LIKE:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
        break;
    case FM_OP_RANDOM_NORMAL:
    case FM_OP_RANDOM_NORMAL_LIKE:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, fm_cmul(&call->ovf, 3, e));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cmul(&call->ovf, 3, e));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
        break;
    case FM_OP_BERNOULLI:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
        fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[0]));
        break;
    case FM_OP_MULTINOMIAL: {
        const struct fm_shape *x = &call->in[0]->shape;
        uint64_t b = (uint64_t)x->dims[0], c = (uint64_t)x->dims[1];
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, fm_cmul(&call->ovf, b, c));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(&call->ovf, b, c ? c - 1 : 0));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, e);   /* e = B S */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cmul(&call->ovf, e, ceil_log2(c)));
        fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[0]));
        break;
    }
    default:
        return fm_error(call->ctx, FM_ERR_UNSUPPORTED, "layer '%s': %s is not a random op",
                        n->name, n->op_name);
    }
    fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[0]));
    return FM_OK;
}

bool fm_op_is_random(enum fm_op op)
{
    return op == FM_OP_RANDOM_UNIFORM || op == FM_OP_RANDOM_NORMAL ||
           op == FM_OP_RANDOM_UNIFORM_LIKE || op == FM_OP_RANDOM_NORMAL_LIKE ||
           op == FM_OP_BERNOULLI || op == FM_OP_MULTINOMIAL;
}

/* min inputs, max inputs, outputs, shape rule, cost rule */
const struct fm_op_desc fm_op_random_uniform_desc = {0, 0, 1, random_shape, random_cost};
const struct fm_op_desc fm_op_random_normal_desc = {0, 0, 1, random_shape, random_cost};
const struct fm_op_desc fm_op_random_uniform_like_desc = {1, 1, 1, random_shape, random_cost};
const struct fm_op_desc fm_op_random_normal_like_desc = {1, 1, 1, random_shape, random_cost};
const struct fm_op_desc fm_op_bernoulli_desc = {1, 1, 1, random_shape, random_cost};
const struct fm_op_desc fm_op_multinomial_desc = {1, 1, 1, random_shape, random_cost};
