/* Conformance of the ONNX frontend's shape inference against ONNX's own backend node tests
 * (Debian's libonnx-testdata: data/node/<test>/model.onnx with test_data_set_0/input_N.pb and
 * output_N.pb, TensorProtos written by ONNX's test generator, files flopmeter's authors did not
 * make). For every test whose ops flopmeter reads (fm_onnx_op_known), the model is loaded as a
 * user would load it: every graph input's shape bound from its input_N.pb (--input NAME=DIMS);
 * when that is not enough (an operand "not known before running the network"), once more with
 * the values of the integer and bool inputs and of the small float ones (at most 16 elements)
 * bound as well (--value NAME=V,...). Then each graph output's inferred dims (and dtype) are
 * compared with output_N.pb's.
 *
 * Outcomes: accepted and right, accepted and WRONG (a shape differs: always a failure), or
 * declined (the load failed; the message is kept). FM_NODE_TESTS_VERBOSE=1 prints every
 * declined and wrong test. The floor below is the accepted count this frontend reaches; it only
 * ever goes up. */
#include "support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FM_HAVE_ONNX
#include "onnx/onnx.pb-c.h"
#endif

#ifndef FM_ONNX_NODE_TESTS
#define FM_ONNX_NODE_TESTS "/usr/share/libonnx-testdata/data/node"
#endif

/* Accepted tests (right shapes) at least: the count at the last change of the frontend. */
#define NODE_TESTS_ACCEPTED_FLOOR 825

#ifdef FM_HAVE_ONNX

#define MAX_INPUTS 16
#define MAX_VALUES 4096

static void *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        unsigned char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    fclose(f);
    *size = n;
    return buf;
}

static Onnx__TensorProto *read_tensor(const char *dir, const char *kind, size_t i)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/test_data_set_0/%s_%zu.pb", dir, kind, i);
    size_t size;
    void *data = read_all(path, &size);
    if (!data)
        return NULL;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, size, data);
    free(data);
    return t;
}

static bool onnx_dtype(int32_t t, enum fm_dtype *out)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = FM_DTYPE_FP32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *out = FM_DTYPE_FP64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = FM_DTYPE_FP16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = FM_DTYPE_BF16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = FM_DTYPE_INT64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = FM_DTYPE_INT32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = FM_DTYPE_INT8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = FM_DTYPE_UINT8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = FM_DTYPE_BOOL; return true;
    default: return false;
    }
}

static uint64_t elements(const Onnx__TensorProto *t)
{
    uint64_t n = 1;
    for (size_t d = 0; d < t->n_dims; d++)
        n *= t->dims[d] > 0 ? (uint64_t)t->dims[d] : 0;
    return n;
}

/* The integer (or bool) contents of t, at most MAX_VALUES; false if it holds none readable. */
static bool tensor_ints(const Onnx__TensorProto *t, int64_t *out, size_t *n)
{
    uint64_t want = elements(t);
    if (want > MAX_VALUES)
        return false;
    *n = (size_t)want;
    int32_t dt = t->data_type;
    size_t es = dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? 8
                : dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ? 4
                : dt == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? 1 : 0;
    if (!es)
        return false;
    if (t->has_raw_data) {
        if (t->raw_data.len != want * es)
            return false;
        for (size_t i = 0; i < want; i++) {
            const unsigned char *p = t->raw_data.data + i * es;
            uint64_t u = 0;
            for (size_t b = 0; b < es; b++)
                u |= (uint64_t)p[b] << (8 * b);
            out[i] = es == 8 ? (int64_t)u : es == 4 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
        }
        return true;
    }
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && t->n_int64_data == want) {
        memcpy(out, t->int64_data, want * sizeof(*out));
        return true;
    }
    if (dt != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && t->n_int32_data == want) {
        for (size_t i = 0; i < want; i++)
            out[i] = t->int32_data[i];
        return true;
    }
    return false;
}

/* The float contents of a small float tensor (at most 16 elements). */
static bool tensor_floats(const Onnx__TensorProto *t, double *out, size_t *n)
{
    uint64_t want = elements(t);
    if (want > 16)
        return false;
    *n = (size_t)want;
    if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        if (t->has_raw_data && t->raw_data.len == want * 4) {
            for (size_t i = 0; i < want; i++) {
                float f;
                memcpy(&f, t->raw_data.data + 4 * i, 4);
                out[i] = f;
            }
            return true;
        }
        if (t->n_float_data == want) {
            for (size_t i = 0; i < want; i++)
                out[i] = t->float_data[i];
            return true;
        }
    }
    if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
        if (t->has_raw_data && t->raw_data.len == want * 8) {
            memcpy(out, t->raw_data.data, want * 8);
            return true;
        }
        if (t->n_double_data == want) {
            memcpy(out, t->double_data, want * 8);
            return true;
        }
    }
    return false;
}

enum outcome { ACCEPTED, WRONG, DECLINED };

/* Whether the file gives the input's every dim as a number: then the test's data is not bound
 * over it (a user binds only what the file leaves open; two of the tests' input_N.pb even
 * disagree with their model's fixed shape). */
static bool fixed_shape(const Onnx__ValueInfoProto *vi)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || !vi->type->tensor_type->shape)
        return false;
    const Onnx__TensorShapeProto *sp = vi->type->tensor_type->shape;
    for (size_t d = 0; d < sp->n_dim; d++) {
        if (sp->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return false;
    }
    return true;
}

struct inputs {
    struct fm_input_binding shapes[MAX_INPUTS];
    struct fm_value_binding values[MAX_INPUTS];
    int64_t ivals[MAX_INPUTS][MAX_VALUES];
    double fvals[MAX_INPUTS][16];
    size_t n_shapes, n_values;
};

/* Loads dir's model with its inputs bound (values too when with_values) and compares outputs. */
static enum outcome run_one(struct fm_ctx *ctx, const char *dir, const Onnx__GraphProto *gp,
                            struct inputs *in, bool with_values, const char *asked, char *msg,
                            size_t msg_size)
{
    in->n_shapes = in->n_values = 0;
    size_t k = 0;
    for (size_t i = 0; i < gp->n_input && k < MAX_INPUTS; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        bool is_init = false;
        for (size_t j = 0; j < gp->n_initializer; j++)
            is_init |= !strcmp(gp->initializer[j]->name, vi->name);
        if (is_init)
            continue;
        Onnx__TensorProto *t = read_tensor(dir, "input", i);
        if (!t)
            continue;   /* an optional input the test leaves out, or not a tensor */
        if (t->n_dims <= FM_MAX_DIMS && !fixed_shape(vi)) {
            struct fm_input_binding *b = &in->shapes[in->n_shapes++];
            b->name = vi->name;
            b->shape.rank = (int)t->n_dims;
            for (size_t d = 0; d < t->n_dims; d++)
                b->shape.dims[d] = t->dims[d];
        }
        if (with_values) {
            /* integer inputs, and the float ones a previous try named as not known */
            char quoted[300];
            snprintf(quoted, sizeof(quoted), "'%s'", vi->name);
            struct fm_value_binding *v = &in->values[in->n_values];
            memset(v, 0, sizeof(*v));
            v->name = vi->name;
            if (tensor_ints(t, in->ivals[in->n_values], &v->n)) {
                v->ivalues = in->ivals[in->n_values];
                in->n_values++;
            } else if (strstr(asked, quoted) &&
                       tensor_floats(t, in->fvals[in->n_values], &v->n)) {
                v->fvalues = in->fvals[in->n_values];
                in->n_values++;
            }
        }
        onnx__tensor_proto__free_unpacked(t, NULL);
        k++;
    }
    struct fm_load_opts o;
    fm_load_opts_init(&o);
    o.bindings = in->shapes;
    o.n_bindings = in->n_shapes;
    o.values = in->values;
    o.n_values = in->n_values;
    char path[1024];
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    struct fm_graph *g = NULL;
    if (fm_onnx_load_file(ctx, path, &o, &g)) {
        const char *e = fm_ctx_error(ctx);
        const char *tail = strstr(e, "model.onnx: ");
        snprintf(msg, msg_size, "%s", tail ? tail + 12 : e);
        return DECLINED;
    }
    enum outcome r = ACCEPTED;
    for (size_t i = 0; i < gp->n_output && r == ACCEPTED; i++) {
        const Onnx__TypeProto *ty = gp->output[i]->type;
        if (ty && ty->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
            /* a sequence or map (test_if_seq): its file is no TensorProto, and flopmeter
             * models tensors only */
            snprintf(msg, msg_size, "output '%s' is not a tensor (a sequence or map)",
                     gp->output[i]->name);
            r = DECLINED;
            break;
        }
        Onnx__TensorProto *t = read_tensor(dir, "output", i);
        if (!t)
            continue;
        fm_tid id = fm_graph_find_tensor(g, gp->output[i]->name);
        const struct fm_tensor *x = id == FM_NONE ? NULL : fm_graph_tensor(g, id);
        if (!x) {
            /* a secondary output flopmeter does not model (a Dropout mask, LayerNormalization's
             * Mean): the test's outputs are not all inferred, so it does not count as accepted */
            snprintf(msg, msg_size, "output '%s' is not modeled (a secondary output)",
                     gp->output[i]->name);
            r = DECLINED;
        } else if (x->shape.rank != (int)t->n_dims) {
            snprintf(msg, msg_size, "output '%s': rank %d, expected %zu", x->name, x->shape.rank,
                     t->n_dims);
            r = WRONG;
        } else {
            for (int d = 0; d < x->shape.rank; d++) {
                if (x->shape.dims[d] != t->dims[d]) {
                    snprintf(msg, msg_size, "output '%s': dim %d is %lld, expected %lld",
                             x->name, d, (long long)x->shape.dims[d], (long long)t->dims[d]);
                    r = WRONG;
                    break;
                }
            }
            enum fm_dtype want;
            if (r == ACCEPTED && onnx_dtype(t->data_type, &want) && want != x->dtype) {
                snprintf(msg, msg_size, "output '%s': dtype %s, expected %s", x->name,
                         fm_dtype_name(x->dtype), fm_dtype_name(want));
                r = WRONG;
            }
        }
        onnx__tensor_proto__free_unpacked(t, NULL);
    }
    fm_graph_free(g);
    return r;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_node_tests(void **state)
{
    (void)state;
    DIR *d = opendir(FM_ONNX_NODE_TESTS);
    if (!d) {
        printf("skipped: ONNX's node tests are not installed at %s (Debian's libonnx-testdata; "
               "make deps installs it)\n", FM_ONNX_NODE_TESTS);
        skip();
    }
    char **names = NULL;
    size_t n_names = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "test_", 5) != 0)
            continue;
        if (n_names == cap) {
            cap = cap ? cap * 2 : 1024;
            names = realloc(names, cap * sizeof(*names));
            assert_non_null(names);
        }
        names[n_names++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n_names, sizeof(*names), cmp_str);
    bool verbose = getenv("FM_NODE_TESTS_VERBOSE") && !strcmp(getenv("FM_NODE_TESTS_VERBOSE"), "1");
    struct fm_ctx *ctx = test_ctx();
    struct inputs *in = malloc(sizeof(*in));
    assert_non_null(in);
    size_t total = 0, supported = 0, accepted = 0, declined = 0, wrong = 0, with_values = 0;
    for (size_t t = 0; t < n_names; t++) {
        char dir[1024], path[1200];
        snprintf(dir, sizeof(dir), "%s/%s", FM_ONNX_NODE_TESTS, names[t]);
        snprintf(path, sizeof(path), "%s/model.onnx", dir);
        size_t size;
        void *data = read_all(path, &size);
        if (!data)
            continue;
        Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
        free(data);
        if (!m || !m->graph)
            continue;
        total++;
        bool ok = m->graph->n_node > 0;
        for (size_t i = 0; i < m->graph->n_node && ok; i++)
            ok = fm_onnx_op_known(m->graph->node[i]->domain, m->graph->node[i]->op_type);
        if (ok) {
            supported++;
            char msg[512] = "";
            enum outcome r = run_one(ctx, dir, m->graph, in, false, "", msg, sizeof(msg));
            /* as a user would: bind what the message asks for, and try again */
            char asked[2048] = "";
            for (int round = 0; round < 4 && r == DECLINED &&
                                (strstr(msg, "not known before running") ||
                                 strstr(msg, "--value"));
                 round++) {
                size_t len = strlen(asked);
                snprintf(asked + len, sizeof(asked) - len, "%s", msg);
                r = run_one(ctx, dir, m->graph, in, true, asked, msg, sizeof(msg));
                if (r == ACCEPTED)
                    with_values++;
            }
            if (r == ACCEPTED)
                accepted++;
            else if (r == WRONG)
                wrong++;
            else if (r == DECLINED)
                declined++;
            if (verbose && r != ACCEPTED)
                printf("%s %s: %s\n", r == WRONG ? "WRONG" : "declined", names[t], msg);
        }
        onnx__model_proto__free_unpacked(m, NULL);
    }
    printf("ONNX node tests: %zu in all, %zu with ops flopmeter reads; of those %zu accepted "
           "(%.1f%%, %zu of them with input values bound), %zu declined, %zu wrong\n",
           total, supported, accepted,
           supported ? 100.0 * (double)accepted / (double)supported : 0.0,
           with_values, declined, wrong);
    for (size_t t = 0; t < n_names; t++)
        free(names[t]);
    free(names);
    free(in);
    fm_ctx_free(ctx);
    assert_int_equal(wrong, 0);
    /* issue 14's bar: at least 90% of the tests whose ops the frontend reads are accepted, and
     * never fewer than at the last change of the frontend */
    assert_true(accepted * 10 >= supported * 9);
    assert_true(accepted >= NODE_TESTS_ACCEPTED_FLOOR);
}

#else

static void test_node_tests(void **state)
{
    (void)state;
    printf("skipped: this build has no ONNX frontend (FM_HAVE_ONNX undefined)\n");
    skip();
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_tests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
