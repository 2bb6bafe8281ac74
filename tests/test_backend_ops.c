/* Every op on every backend (ggml's test-backend-ops, for flopmeter's measurement backends):
 * each case of tests/data/goldens/backend_ops.txt is one node of one op of FM_OP_LIST with its
 * inputs, and PyTorch's results for it. For every backend built in (cpu, cuda) and every case,
 * the test builds the graph with the public graph API (in training followed by Flatten(axis=1)
 * and CrossEntropy against the golden's labels), asks the backend's supports() about every
 * node, and when all say yes prepares (fp32, lr 0 and momentum 0 so parameters stay put),
 * writes every input's starting value with write(), runs one step and compares the op's
 * outputs, the loss, the gradient of every parameter and the BatchNorm buffers after the step
 * with the goldens. An op a backend does not support is listed with the backend's reason, not
 * failed, so the gap is visible; a refusal that only prepare() makes (supports() said yes) is
 * listed apart, since supports() should have caught it. Per backend the test ends with one
 * line "backend <name>: ..." that counts what ran. It fails when a supported case differs
 * from its golden, when a case cannot be built or run, when a golden names no flopmeter op,
 * or when an op of FM_OP_LIST has no case (so a new op cannot come without one).
 *
 * The goldens are made by tools/make_op_goldens.py (PyTorch, references in float64 from the
 * float32 starting values); the file format is described at the top of both. CI has no
 * PyTorch: the goldens are committed. Without a GPU the CUDA backend prints
 * "backend cuda: skipped: <reason>" and what its supports() says without a device. */
#include "support.h"

#include "backend/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDENS FM_TEST_DATA "/goldens/backend_ops.txt"

/* Tolerance |got - ref| <= atol + rtol |ref|, for outputs, the loss, gradients and buffers.
 * The references are exact (float64, rounded to float32), the backends compute in float32 on
 * tensors of tens to hundreds of elements: a few float32 roundings (6e-8 relative each) per
 * element, plus sums of up to a few hundred terms in other orders. Values here are O(1) and
 * gradients O(1e-3 .. 1e-1) (a mean loss over a handful of rows), so 1e-5 absolute with 1e-4
 * relative leaves a margin of 10 to 100 over what float32 makes (on oneDNN the closest case
 * uses 2% of it), while a wrong formula, a wrong attribute (eps, alpha, a pad) or a gradient
 * delivered twice is off by far more. A case may loosen it with a "tol" line, whose reason is
 * written next to the case in tools/make_op_goldens.py. */
#define DEFAULT_ATOL 1e-5
#define DEFAULT_RTOL 1e-4

#define MAX_IN 16   /* QLinearConv and QGemm take 9 inputs, DynamicQuantizeLSTM 12 */
#define NAME 64

/* ---- the goldens ---- */

struct vec {
    char name[NAME];   /* input name; for outputs the index as text */
    uint64_t n;
    float *v;
};

struct gin {
    bool omitted;
    char name[NAME];
    enum fm_role role;
    enum fm_dtype dtype;
    struct fm_shape shape;
};

struct gcase {
    int line;
    char name[NAME], op_name[NAME];
    bool op_known;
    enum fm_op op;
    bool train;
    int n_out;
    struct fm_attrs attrs;
    struct gin in[MAX_IN];
    int n_in;
    struct vec value[MAX_IN], out[MAX_IN], grad[MAX_IN], state[MAX_IN];
    int n_value, n_outv, n_grad, n_state;
    struct vec labels;
    bool has_labels, has_loss, ended;
    double loss, atol, rtol;
};

static struct {
    struct gcase *c;
    size_t n, cap;
    char error[512];   /* a malformed file: every test fails with this */
} gold;

struct lex {
    char *p;
    int line;
};

/* The next whitespace-separated word, NUL-terminated in place; NULL at the end of the line. */
static char *word(struct lex *l)
{
    while (*l->p == ' ' || *l->p == '\t')
        l->p++;
    if (!*l->p)
        return NULL;
    char *w = l->p;
    while (*l->p && *l->p != ' ' && *l->p != '\t')
        l->p++;
    if (*l->p)
        *l->p++ = '\0';
    return w;
}

static bool parse_error(struct lex *l, const char *what)
{
    if (!gold.error[0])
        snprintf(gold.error, sizeof(gold.error), "%s:%d: %s", GOLDENS, l->line, what);
    return false;
}

static bool number(struct lex *l, double *out)
{
    char *w = word(l), *end;
    if (!w)
        return parse_error(l, "a number is missing");
    *out = strtod(w, &end);
    if (*end)
        return parse_error(l, "not a number");
    return true;
}

static bool integer(struct lex *l, int64_t *out)
{
    char *w = word(l), *end;
    if (!w)
        return parse_error(l, "an integer is missing");
    *out = strtoll(w, &end, 10);
    if (*end)
        return parse_error(l, "not an integer");
    return true;
}

static bool copy_name(struct lex *l, char *dst)
{
    const char *w = word(l);
    if (!w || strlen(w) >= NAME)
        return parse_error(l, "a name is missing or too long");
    strcpy(dst, w);
    return true;
}

/* "<name> <n> v1 ... vn" (with_name) or "<n> v1 ... vn". */
static bool vector(struct lex *l, struct vec *v, bool with_name)
{
    int64_t n;
    if ((with_name && !copy_name(l, v->name)) || !integer(l, &n))
        return false;
    if (n < 0 || n > (1 << 24))
        return parse_error(l, "bad element count");
    v->n = (uint64_t)n;
    v->v = malloc(sizeof(float) * (v->n ? v->n : 1));
    assert_non_null(v->v);
    for (uint64_t i = 0; i < v->n; i++) {
        double d;
        if (!number(l, &d))
            return false;
        v->v[i] = (float)d;
    }
    if (word(l))
        return parse_error(l, "more values than the count says");
    return true;
}

static bool shape(struct lex *l, struct fm_shape *s)
{
    const char *w = word(l);
    memset(s, 0, sizeof(*s));
    if (!w)
        return parse_error(l, "a shape is missing");
    if (strcmp(w, "scalar") == 0)
        return true;
    for (const char *p = w; *p;) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d <= 0 || s->rank == FM_MAX_DIMS || (*end && *end != 'x'))
            return parse_error(l, "bad shape");
        s->dims[s->rank++] = d;
        p = *end ? end + 1 : end;
    }
    return true;
}

static const char *const flag_names[] = {"CEIL_MODE", "COUNT_PAD", "TRANS_A",  "TRANS_B",
                                         "CAUSAL",    "KEEPDIMS",  "GELU_TANH", "INFER_BN"};
static const unsigned flag_bits[] = {FM_ATTR_CEIL_MODE, FM_ATTR_COUNT_PAD, FM_ATTR_TRANS_A,
                                     FM_ATTR_TRANS_B,   FM_ATTR_CAUSAL,    FM_ATTR_KEEPDIMS,
                                     FM_ATTR_GELU_TANH, FM_ATTR_INFER_BN};

static bool attr(struct lex *l, struct fm_attrs *a)
{
    const char *f = word(l);
    if (!f)
        return parse_error(l, "attr without a field");
    struct {
        const char *name;
        int64_t *v;
        int n;
    } ints[] = {{"kernel", a->kernel, 2}, {"stride", a->stride, 2}, {"dilation", a->dilation, 2},
                {"pad", a->pad, 4},       {"output_padding", a->output_padding, 2},
                {"out_size", a->out_size, 2}, {"groups", &a->groups, 1}, {"axis", &a->axis, 1}};
    struct {
        const char *name;
        double *v;
    } reals[] = {{"alpha", &a->alpha}, {"beta", &a->beta}, {"eps", &a->eps},   {"lo", &a->lo},
                 {"hi", &a->hi},       {"ratio", &a->ratio}, {"scale", &a->scale}};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        if (strcmp(f, ints[i].name) != 0)
            continue;
        for (int k = 0; k < ints[i].n; k++) {
            if (!integer(l, &ints[i].v[k]))
                return false;
        }
        return word(l) ? parse_error(l, "too many values for an attr") : true;
    }
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
        if (strcmp(f, reals[i].name) == 0)
            return number(l, reals[i].v) && (word(l) ? parse_error(l, "extra words") : true);
    }
    if (strcmp(f, "ints") == 0) {
        for (const char *w; (w = word(l));) {
            char *end;
            if (a->nints == FM_MAX_INTS)
                return parse_error(l, "too many ints");
            a->ints[a->nints++] = strtoll(w, &end, 10);
            if (*end)
                return parse_error(l, "not an integer");
        }
        return true;
    }
    if (strcmp(f, "flags") == 0) {
        char *w = word(l), *save = NULL;
        if (!w)
            return parse_error(l, "flags without names");
        for (char *t = strtok_r(w, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
            size_t k = 0;
            while (k < sizeof(flag_names) / sizeof(flag_names[0]) && strcmp(t, flag_names[k]))
                k++;
            if (k == sizeof(flag_names) / sizeof(flag_names[0]))
                return parse_error(l, "unknown flag");
            a->flags |= flag_bits[k];
        }
        return true;
    }
    return parse_error(l, "unknown attr field");
}

static bool input(struct lex *l, struct gcase *c)
{
    static const struct {
        const char *name;
        enum fm_role role;
    } roles[] = {{"PARAM", FM_ROLE_PARAM}, {"INPUT", FM_ROLE_INPUT}, {"BUFFER", FM_ROLE_BUFFER},
                 {"CONST", FM_ROLE_CONST}};
    if (c->n_in == MAX_IN)
        return parse_error(l, "too many inputs");
    struct gin *in = &c->in[c->n_in++];
    if (!copy_name(l, in->name))
        return false;
    if (strcmp(in->name, "-") == 0) {
        in->omitted = true;
        return true;
    }
    const char *r = word(l), *d;
    size_t k = 0;
    while (r && k < sizeof(roles) / sizeof(roles[0]) && strcmp(r, roles[k].name))
        k++;
    if (!r || k == sizeof(roles) / sizeof(roles[0]))
        return parse_error(l, "unknown role");
    in->role = roles[k].role;
    if (!(d = word(l)) || !fm_dtype_parse(d, &in->dtype))
        return parse_error(l, "unknown dtype");
    return shape(l, &in->shape);
}

static bool lookup_op(struct gcase *c)
{
    for (int op = 0; op < FM_OP_COUNT; op++) {
        if (strcmp(fm_op_name((enum fm_op)op), c->op_name) == 0) {
            c->op = (enum fm_op)op;
            return c->op_known = true;
        }
    }
    return false;
}

static bool line(struct lex *l, struct gcase **cur)
{
    const char *kw = word(l);
    if (!kw || kw[0] == '#')
        return true;
    struct gcase *c = *cur;
    if (strcmp(kw, "case") == 0) {
        if (c)
            return parse_error(l, "case inside a case (missing 'end')");
        if (gold.n == gold.cap) {
            gold.cap = gold.cap ? 2 * gold.cap : 64;
            gold.c = realloc(gold.c, gold.cap * sizeof(*gold.c));
            assert_non_null(gold.c);
        }
        c = *cur = &gold.c[gold.n++];
        memset(c, 0, sizeof(*c));
        c->line = l->line;
        c->atol = DEFAULT_ATOL;
        c->rtol = DEFAULT_RTOL;
        fm_attrs_init(&c->attrs);
        const char *mode;
        int64_t n_out;
        if (!copy_name(l, c->name) || !copy_name(l, c->op_name) || !(mode = word(l)) ||
            !integer(l, &n_out))
            return parse_error(l, "expected: case <name> <Op> <train|infer> <outputs>");
        if (strcmp(mode, "train") && strcmp(mode, "infer"))
            return parse_error(l, "mode is neither train nor infer");
        if (n_out < 1 || n_out > MAX_IN)
            return parse_error(l, "bad output count");
        c->train = strcmp(mode, "train") == 0;
        c->n_out = (int)n_out;
        lookup_op(c);   /* an unknown name is reported by the coverage test */
        return true;
    }
    if (!c)
        return parse_error(l, "a record outside a case");
    if (strcmp(kw, "attr") == 0)
        return attr(l, &c->attrs);
    if (strcmp(kw, "in") == 0)
        return input(l, c);
    if (strcmp(kw, "labels") == 0)
        return (c->has_labels = true) && vector(l, &c->labels, false);
    if (strcmp(kw, "loss") == 0)
        return (c->has_loss = true) && number(l, &c->loss);
    if (strcmp(kw, "tol") == 0)
        return number(l, &c->atol) && number(l, &c->rtol);
    if (strcmp(kw, "end") == 0) {
        c->ended = true;
        *cur = NULL;
        return true;
    }
    struct {
        const char *kw;
        struct vec *v;
        int *n;
    } vecs[] = {{"value", c->value, &c->n_value}, {"out", c->out, &c->n_outv},
                {"grad", c->grad, &c->n_grad},    {"state", c->state, &c->n_state}};
    for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
        if (strcmp(kw, vecs[i].kw) != 0)
            continue;
        if (*vecs[i].n == MAX_IN)
            return parse_error(l, "too many records of one kind");
        return vector(l, &vecs[i].v[(*vecs[i].n)++], true);
    }
    return parse_error(l, "unknown record");
}

static void load_goldens(void)
{
    FILE *f = fopen(GOLDENS, "r");
    if (!f) {
        snprintf(gold.error, sizeof(gold.error),
                 "cannot open %s (regenerate it with tools/make_op_goldens.py)", GOLDENS);
        return;
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    struct lex l = {NULL, 0};
    struct gcase *cur = NULL;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        l.line++;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        l.p = buf;
        if (!line(&l, &cur))
            break;
    }
    free(buf);
    fclose(f);
    if (cur && !gold.error[0])
        snprintf(gold.error, sizeof(gold.error), "%s: case '%s' has no 'end'", GOLDENS,
                 cur->name);
}

static void free_goldens(void)
{
    for (size_t i = 0; i < gold.n; i++) {
        struct gcase *c = &gold.c[i];
        struct vec *all[] = {c->value, c->out, c->grad, c->state};
        int counts[] = {c->n_value, c->n_outv, c->n_grad, c->n_state};
        for (int k = 0; k < 4; k++) {
            for (int j = 0; j < counts[k]; j++)
                free(all[k][j].v);
        }
        free(c->labels.v);
    }
    free(gold.c);
}

static const struct vec *find_vec(const struct vec *v, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    }
    return NULL;
}

/* ---- running one case on one backend ---- */

enum outcome { RAN, REFUSED, REFUSED_AT_PREPARE, MISMATCHED, FAILED };

struct tally {
    const char *backend;
    int cases[FM_MODE_COUNT];                 /* cases that ran, by mode */
    int refused, refused_prepare, mismatched, failed;
    int op_ran[FM_OP_COUNT][FM_MODE_COUNT];   /* cases of each op that ran */
    int op_refused[FM_OP_COUNT];
    char op_why[FM_OP_COUNT][320];            /* the backend's reason, for the op's first
                                                 refused case */
    char op_cases[FM_OP_COUNT][320];          /* the refused cases, by name */
    double worst;                             /* largest |diff| / tolerance among passes */
    char worst_what[160];
};

/* Records a refusal of case c with the backend's message. */
static void refuse(struct tally *t, const struct gcase *c, bool at_prepare, const char *why)
{
    char *list = t->op_cases[c->op];
    size_t used = strlen(list);
    snprintf(list + used, sizeof(t->op_cases[0]) - used, "%s%s%s", used ? ", " : "", c->name,
             at_prepare ? " (REFUSED AT PREPARE after supports() said yes)" : "");
    if (!t->op_refused[c->op]++)
        snprintf(t->op_why[c->op], sizeof(t->op_why[0]), "%s", why);
    t->refused += !at_prepare;
    t->refused_prepare += at_prepare;
}

struct run {
    const struct fm_backend *be;
    const struct gcase *c;
    struct fm_ctx *ctx;
    struct fm_graph *g;
    struct tally *t;
    fm_tid in[MAX_IN], out[MAX_IN], labels;
    void *state;
    bool bad;                                 /* something differed */
};

/* Compares n values; prints one line for a tensor that differs (with its worst element) and
 * keeps the largest use of the tolerance for the summary. */
static void compare(struct run *r, const char *kind, const char *tensor, const float *got,
                    const float *ref, uint64_t n)
{
    const struct gcase *c = r->c;
    uint64_t off = 0, worst = 0;
    double worst_ratio = -1.0;
    for (uint64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]), tol = c->atol + c->rtol * fabs((double)ref[i]);
        double ratio = isnan(d) ? INFINITY : d / tol;
        if (ratio > 1.0)
            off++;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (off) {
        printf("  MISMATCH %s: %s (%s) %s%s%s: %llu of %llu elements off; worst [%llu]: got "
               "%.9g, ref %.9g (tolerance %.2g + %.2g |ref|)\n",
               r->t->backend, c->name, c->op_name, kind, *tensor ? " " : "", tensor,
               (unsigned long long)off, (unsigned long long)n, (unsigned long long)worst,
               got[worst], ref[worst], c->atol, c->rtol);
        r->bad = true;
    } else if (worst_ratio > r->t->worst) {
        r->t->worst = worst_ratio;
        snprintf(r->t->worst_what, sizeof(r->t->worst_what), "%s %s%s%s", c->name, kind,
                 *tensor ? " " : "", tensor);
    }
}

static enum outcome failed(struct run *r, const char *what, enum fm_status st)
{
    printf("  FAILED %s: %s (%s, golden line %d): %s: %s: %s\n", r->t->backend, r->c->name,
           r->c->op_name, r->c->line, what, fm_status_to_string(st), fm_ctx_error(r->ctx));
    return FAILED;
}

/* The case's graph: its inputs (a name given twice is one tensor in two slots), the op's node,
 * and in training Flatten(axis=1) of output 0 and CrossEntropy against "loss.labels". */
static enum fm_status build(struct run *r)
{
    const struct gcase *c = r->c;
    enum fm_status st = fm_graph_new(r->ctx, c->name, &r->g);
    for (int i = 0; i < c->n_in && !st; i++) {
        const struct gin *in = &c->in[i];
        r->in[i] = in->omitted ? FM_NONE : fm_graph_find_tensor(r->g, in->name);
        if (!in->omitted && r->in[i] == FM_NONE)
            st = fm_graph_add_tensor(r->g, in->name, in->role, in->dtype, &in->shape, &r->in[i]);
    }
    if (!st)
        st = fm_graph_add_node(r->g, c->op, c->name, &c->attrs, r->in, c->n_in, NULL, c->n_out,
                               r->out);
    r->labels = FM_NONE;
    if (!st && c->train && c->has_labels) {
        struct fm_attrs a;
        fm_attrs_init(&a);
        a.axis = 1;
        fm_tid logits, loss;
        st = fm_graph_add_node(r->g, FM_OP_FLATTEN, "loss.flatten", &a, &r->out[0], 1, NULL, 1,
                               &logits);
        struct fm_shape ls = {1, {0}};
        if (!st) {
            ls.dims[0] = fm_graph_tensor(r->g, logits)->shape.dims[0];
            st = fm_graph_add_tensor(r->g, "loss.labels", FM_ROLE_INPUT, FM_DTYPE_INT64, &ls,
                                     &r->labels);
        }
        fm_tid ce_in[2] = {logits, r->labels};
        if (!st)
            st = fm_graph_add_node(r->g, FM_OP_CROSS_ENTROPY, "loss", NULL, ce_in, 2, NULL, 1,
                                   &loss);
    }
    return st ? st : fm_graph_finalize(r->g);
}

static uint64_t numel(const struct fm_graph *g, fm_tid t)
{
    uint64_t n = 0;
    fm_shape_numel(&fm_graph_tensor(g, t)->shape, &n);
    return n;
}

/* Every golden record fits the graph: a value of the right size for every input, outputs of
 * the sizes flopmeter's shape rules give. A difference is the script's or the rule's fault. */
static bool check_sizes(struct run *r)
{
    const struct gcase *c = r->c;
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i].omitted)
            continue;
        const struct vec *v = find_vec(c->value, c->n_value, c->in[i].name);
        if (!v || v->n != numel(r->g, r->in[i])) {
            printf("  FAILED %s: %s: input '%s' has no value of %llu elements in the goldens\n",
                   r->t->backend, c->name, c->in[i].name,
                   (unsigned long long)numel(r->g, r->in[i]));
            return false;
        }
    }
    for (int k = 0; k < c->n_outv; k++) {
        int idx = atoi(c->out[k].name);
        if (idx < 0 || idx >= c->n_out || c->out[k].n != numel(r->g, r->out[idx])) {
            printf("  FAILED %s: %s: golden output %s has %llu elements; flopmeter's shape rule "
                   "gives another shape\n",
                   r->t->backend, c->name, c->out[k].name, (unsigned long long)c->out[k].n);
            return false;
        }
    }
    if (r->labels != FM_NONE && c->labels.n != numel(r->g, r->labels)) {
        printf("  FAILED %s: %s: %llu labels for %llu rows\n", r->t->backend, c->name,
               (unsigned long long)c->labels.n, (unsigned long long)numel(r->g, r->labels));
        return false;
    }
    return true;
}

/* Reads tensor t (or its gradient) and compares it with ref. */
static enum outcome read_compare(struct run *r, const char *kind, const char *tensor, fm_tid t,
                                 bool grad, const struct vec *ref)
{
    float *got = malloc(sizeof(float) * (ref->n ? ref->n : 1));
    assert_non_null(got);
    enum fm_status st = r->be->read(r->state, t, grad, got, ref->n);
    if (!st)
        compare(r, kind, tensor, got, ref->v, ref->n);
    free(got);
    if (st) {
        char what[128];
        snprintf(what, sizeof(what), "read(%s %s)", kind, tensor);
        return failed(r, what, st);
    }
    return RAN;
}

static enum outcome execute(struct run *r)
{
    const struct gcase *c = r->c;
    enum fm_status st;
    for (int i = 0; i < c->n_in; i++) {
        const struct vec *v = c->in[i].omitted ? NULL : find_vec(c->value, c->n_value,
                                                                  c->in[i].name);
        if (v && (st = r->be->write(r->state, r->in[i], v->v, v->n)))
            return failed(r, "write", st);
    }
    if (r->labels != FM_NONE &&
        (st = r->be->write(r->state, r->labels, c->labels.v, c->labels.n)))
        return failed(r, "write(labels)", st);
    struct fm_step_timing t = {0};
    if ((st = r->be->step(r->state, &t)))
        return failed(r, "step", st);
    enum outcome o = RAN;
    for (int k = 0; k < c->n_outv && o == RAN; k++)
        o = read_compare(r, "out", c->out[k].name, r->out[atoi(c->out[k].name)], false,
                         &c->out[k]);
    if (c->train && o == RAN) {
        float got = (float)t.loss, ref = (float)c->loss;
        compare(r, "loss", "", &got, &ref, 1);
    }
    for (int k = 0; k < c->n_grad && o == RAN; k++)
        o = read_compare(r, "grad", c->grad[k].name, fm_graph_find_tensor(r->g, c->grad[k].name),
                         true, &c->grad[k]);
    for (int k = 0; k < c->n_state && o == RAN; k++)
        o = read_compare(r, "state", c->state[k].name,
                         fm_graph_find_tensor(r->g, c->state[k].name), false, &c->state[k]);
    return o == RAN && r->bad ? MISMATCHED : o;
}

/* supports_only: ask supports() and go no further (a backend without its device). */
static enum outcome run_case(const struct fm_backend *be, const struct gcase *c, struct tally *t,
                             bool supports_only)
{
    struct run r = {.be = be, .c = c, .t = t};
    r.ctx = test_ctx();
    enum outcome o = RAN;
    enum fm_status st = build(&r);
    if (st) {
        o = failed(&r, "building the graph (the golden disagrees with flopmeter's rules)", st);
        goto out;
    }
    if (!check_sizes(&r)) {
        o = FAILED;
        goto out;
    }
    for (size_t id = 0; id < fm_graph_node_count(r.g); id++) {
        if (be->supports(r.ctx, r.g, (fm_nid)id) != FM_OK) {
            refuse(t, c, false, fm_ctx_error(r.ctx));
            o = REFUSED;
            goto out;
        }
    }
    if (supports_only)
        goto out;
    struct fm_measure_opts opts;
    fm_measure_opts_init(&opts);
    opts.device = be->name;
    opts.mode = c->train ? FM_MODE_TRAIN : FM_MODE_INFER;
    opts.precision = FM_PREC_FP32;
    opts.per_layer = false;
    opts.lr = 0.0;         /* parameters stay put: the gradients are of the starting values */
    opts.momentum = 0.0;
    st = be->prepare(r.ctx, r.g, &opts, &r.state);
    if (st == FM_ERR_UNSUPPORTED) {
        /* supports() should have said so: listed apart */
        printf("  %s: %s (%s) REFUSED AT PREPARE after supports() said yes: %s\n", t->backend,
               c->name, c->op_name, fm_ctx_error(r.ctx));
        refuse(t, c, true, fm_ctx_error(r.ctx));
        o = REFUSED_AT_PREPARE;
    } else if (st) {
        o = failed(&r, "prepare", st);
    } else {
        o = execute(&r);
        be->release(r.state);
    }
out:
    fm_graph_free(r.g);
    fm_ctx_free(r.ctx);
    return o;
}

/* ---- per backend ---- */

/* Whether be can run here: a tiny inference graph prepared; FM_ERR_DEVICE (no GPU) says no.
 * Other failures are left to the cases, which then report them. */
static bool usable(const struct fm_backend *be, char *why, size_t size)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    struct fm_shape s = {2, {2, 4}};
    fm_tid x, y;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "probe", &g));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &x));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_RELU, "relu", NULL, &x, 1, NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = be->name;
    o.mode = FM_MODE_INFER;
    void *state = NULL;
    enum fm_status st = be->prepare(ctx, g, &o, &state);
    if (!st)
        be->release(state);
    else
        snprintf(why, size, "%s", fm_ctx_error(ctx));
    fm_graph_free(g);
    fm_ctx_free(ctx);
    return st != FM_ERR_DEVICE;
}

/* "A, B, C" of the ops whose cases all were refused; returns their count. */
static int unsupported_ops(const struct tally *t, char *buf, size_t size)
{
    int n = 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int op = 1; op < FM_OP_COUNT; op++) {
        if (t->op_refused[op] && !t->op_ran[op][FM_MODE_TRAIN] && !t->op_ran[op][FM_MODE_INFER]) {
            int w = snprintf(buf + used, size - used, "%s%s", n ? ", " : "",
                             fm_op_name((enum fm_op)op));
            used += w > 0 && (size_t)w < size - used ? (size_t)w : 0;
            n++;
        }
    }
    return n;
}

/* One line per op with refused cases: the ops that never run, then the variants refused of
 * ops that run otherwise; each with the backend's reason for its first refused case. */
static void list_refusals(const struct tally *t)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int op = 1; op < FM_OP_COUNT; op++) {
            bool runs = t->op_ran[op][FM_MODE_TRAIN] || t->op_ran[op][FM_MODE_INFER];
            if (!t->op_refused[op] || runs != (pass == 1))
                continue;
            printf("  %s: %s %s (%s): %s\n", t->backend, fm_op_name((enum fm_op)op),
                   runs ? "runs, but refuses" : "unsupported", t->op_cases[op], t->op_why[op]);
        }
    }
}

static void run_backend(const struct fm_backend *be, const char *name)
{
    if (gold.error[0])
        fail_msg("%s", gold.error);
    if (!be) {
        printf("backend %s: skipped: this build has no %s backend\n", name, name);
        return;
    }
    struct tally *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->backend = name;
    char why[512] = "";
    bool here = usable(be, why, sizeof(why));
    if (!be->write) {
        here = false;
        snprintf(why, sizeof(why), "it has no write(), so the goldens' inputs cannot be set");
    }
    for (size_t i = 0; i < gold.n; i++) {
        const struct gcase *c = &gold.c[i];
        if (!c->op_known)
            continue;   /* the coverage test reports it */
        enum outcome o = run_case(be, c, t, !here);
        enum fm_mode m = c->train ? FM_MODE_TRAIN : FM_MODE_INFER;
        switch (o) {
        case RAN:
        case MISMATCHED:
            t->cases[m]++;
            t->op_ran[c->op][m]++;
            t->mismatched += o == MISMATCHED;
            break;
        case REFUSED:
        case REFUSED_AT_PREPARE:
            break;   /* counted by refuse() */
        case FAILED:
            t->failed++;
            break;
        }
    }
    list_refusals(t);
    char list[4096];
    int n_unsup = unsupported_ops(t, list, sizeof(list));
    if (!here) {
        /* supports() needs no device: what it accepts is still worth seeing */
        int accepted = t->cases[FM_MODE_TRAIN] + t->cases[FM_MODE_INFER], ops = 0;
        for (int op = 1; op < FM_OP_COUNT; op++)
            ops += t->op_ran[op][FM_MODE_TRAIN] || t->op_ran[op][FM_MODE_INFER];
        printf("backend %s: skipped: %s\n", name, why);
        printf("  %s without its device: supports() accepts %d cases of %d ops; %d ops "
               "unsupported: %s\n",
               name, accepted, ops, n_unsup, n_unsup ? list : "none");
        int bad = t->failed;
        free(t);
        if (bad)
            fail_msg("%d cases could not be built", bad);
        return;
    }
    int both = 0, fwd = 0;
    for (int op = 1; op < FM_OP_COUNT; op++) {
        if (t->op_ran[op][FM_MODE_TRAIN])
            both++;
        else if (t->op_ran[op][FM_MODE_INFER])
            fwd++;
    }
    char worst[256] = "";
    if (t->worst > 0.0)
        snprintf(worst, sizeof(worst), "; closest to the tolerance: %s at %.2g of it",
                 t->worst_what, t->worst);
    printf("backend %s: %d ops forward and backward, %d forward only (%d cases in training, %d "
           "in inference); %d ops unsupported: %s; %d cases refused (%d of them only at "
           "prepare); %d mismatched; %d failed%s\n",
           name, both, fwd, t->cases[FM_MODE_TRAIN], t->cases[FM_MODE_INFER], n_unsup,
           n_unsup ? list : "none", t->refused + t->refused_prepare, t->refused_prepare,
           t->mismatched, t->failed, worst);
    int bad = t->mismatched + t->failed;
    free(t);
    if (bad)
        fail_msg("backend %s: %d cases differ from their goldens or failed to run", name, bad);
}

/* ---- the tests ---- */

/* Every op of FM_OP_LIST but Unknown has a case, and every case names a flopmeter op. */
static void goldens_cover_every_op(void **unused)
{
    (void)unused;
    if (gold.error[0])
        fail_msg("%s", gold.error);
    int missing = 0, unknown = 0, malformed = 0;
    bool has[FM_OP_COUNT] = {false};
    for (size_t i = 0; i < gold.n; i++) {
        const struct gcase *c = &gold.c[i];
        if (!c->op_known || c->op == FM_OP_UNKNOWN) {
            printf("  case %s (golden line %d): '%s' is not an op flopmeter counts\n", c->name,
                   c->line, c->op_name);
            unknown++;
            continue;
        }
        has[c->op] = true;
        /* what every case must carry: outputs; in training the loss and every gradient */
        int params = 0;
        for (int k = 0; k < c->n_in; k++) {
            bool again = false;   /* a name given twice is one tensor */
            for (int j = 0; j < k; j++)
                again |= strcmp(c->in[j].name, c->in[k].name) == 0;
            params += !c->in[k].omitted && !again && c->in[k].role == FM_ROLE_PARAM;
        }
        if (c->n_outv != c->n_out || (c->train && (!c->has_loss || c->n_grad != params))) {
            printf("  case %s (golden line %d): outputs, loss or gradients are missing\n",
                   c->name, c->line);
            malformed++;
        }
    }
    for (int op = 1; op < FM_OP_COUNT; op++) {
        if (!has[op]) {
            printf("  op %s has no case in %s (add one to tools/make_op_goldens.py)\n",
                   fm_op_name((enum fm_op)op), GOLDENS);
            missing++;
        }
    }
    printf("goldens: %zu cases of %d ops\n", gold.n, FM_OP_COUNT - 1 - missing);
    if (missing || unknown || malformed)
        fail_msg("%d ops without a case, %d cases of unknown ops, %d malformed cases", missing,
                 unknown, malformed);
}

static void backend_cpu(void **unused)
{
    (void)unused;
    run_backend(fm_backend_cpu(), "cpu");
}

static void backend_cuda(void **unused)
{
    (void)unused;
    run_backend(fm_backend_cuda(), "cuda");
}

int main(int argc, char **argv)
{
    /* the CUDA backend reuses an activation's memory after its last use; the test reads the
     * op's output after the step */
    setenv("FLOPMETER_CUDA_KEEP", "1", 1);
    load_goldens();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(goldens_cover_every_op),
        cmocka_unit_test(backend_cpu),
        cmocka_unit_test(backend_cuda),
    };
    int rc = TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
    free_goldens();
    return rc;
}
