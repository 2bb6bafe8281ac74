/* The builder helpers the language-model files share (build_nn.c): each adds one node under
 * the current HF module path (fm_nn's prefix) and returns its output, failing stickily like
 * fm_nn (after the first error every call returns FM_NONE). Internal to src/frontend/llm. */
#ifndef FM_LLM_BUILD_NN_H
#define FM_LLM_BUILD_NN_H

#include "llm.h"
#include "../zoo/nn.h"

struct lm {
    struct fm_nn nn;                 /* graph, dtype, sticky status, module path */
    const struct fm_llm_config *c;
    int64_t batch, seq;              /* the tokens of this pass: seq = 1 when decoding */
    int64_t past;                    /* tokens in the KV cache (decode), else 0 */
    bool decode;
    fm_tid cos, sin;                 /* rotary tables (1, 1, seq, rotary dims) */
    size_t stack[32];                /* prefix lengths saved by lm_push */
    int depth;
};

/* Scopes of the module path: lm_push appends ".<part>" (the part may hold dots), lm_pop
 * returns to the path before the matching push. */
void lm_push(struct lm *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void lm_pop(struct lm *m);

/* A node of op with attrs (NULL: defaults): an op inside the current module, named
 * prefix/name (lm_node, lm_node_n: out[0..n_out)), or a module of its own, prefix.name
 * (lm_module_node: an activation, a LayerNorm, an embedding, an lm_head). */
fm_tid lm_node(struct lm *m, enum fm_op op, const char *name, const struct fm_attrs *a,
               const fm_tid *in, int n_in);
fm_tid lm_module_node(struct lm *m, enum fm_op op, const char *name, const struct fm_attrs *a,
                      const fm_tid *in, int n_in);
enum fm_status lm_node_n(struct lm *m, enum fm_op op, const char *name, const struct fm_attrs *a,
                         const fm_tid *in, int n_in, fm_tid *out, int n_out);
fm_tid lm_param(struct lm *m, const char *name, enum fm_role role, int rank, const int64_t *dims);
fm_tid lm_input(struct lm *m, const char *name, enum fm_dtype dtype, int rank,
                const int64_t *dims);
const struct fm_shape *lm_shape(struct lm *m, fm_tid x);
/* x's last dimension; 0 for FM_NONE (a node that failed) or a scalar */
int64_t lm_last_dim(struct lm *m, fm_tid x);

fm_tid lm_reshape(struct lm *m, const char *name, fm_tid x, int rank, const int64_t *dims);
fm_tid lm_transpose(struct lm *m, const char *name, fm_tid x, int a, int b);
fm_tid lm_split(struct lm *m, const char *name, fm_tid x, int axis, int n, const int64_t *sizes,
                fm_tid *outs);
fm_tid lm_slice_last(struct lm *m, const char *name, fm_tid x, int64_t start, int64_t end);
fm_tid lm_add(struct lm *m, const char *name, fm_tid a, fm_tid b);   /* a + b, an op */
fm_tid lm_mul(struct lm *m, const char *name, fm_tid a, fm_tid b);   /* a * b, an op */
fm_tid lm_concat2(struct lm *m, const char *name, fm_tid a, fm_tid b, int axis);
fm_tid lm_unary(struct lm *m, enum fm_op op, const char *name, fm_tid x);
fm_tid lm_act(struct lm *m, const char *name, enum fm_llm_act act, fm_tid x);
fm_tid lm_scale(struct lm *m, const char *name, fm_tid x, double s);   /* x * constant */
/* RMSNorm (weight (D)) or LayerNorm (weight, bias) over the last dim, as the config says. */
fm_tid lm_norm(struct lm *m, const char *name, fm_tid x, bool rms, bool bias);
fm_tid lm_linear(struct lm *m, const char *name, fm_tid x, int64_t nout, bool bias);
/* GPT-2's Conv1D: weight (in, out), bias (out): a MatMul and an Add */
fm_tid lm_conv1d(struct lm *m, const char *name, fm_tid x, int64_t nout);
/* q*cos + rotate_half(q)*sin over the last dim of x (B, H, S, D), as HF's apply_rotary_pos_emb;
 * rot < D rotates the first rot dims only (GPT-NeoX's partial rotary). */
fm_tid lm_rotary(struct lm *m, const char *name, fm_tid x, fm_tid cos, fm_tid sin, int64_t rot);
/* HF's repeat_kv: (B, KV, S, D) -> (B, KV*rep, S, D) by an expand and a reshape. */
fm_tid lm_repeat_kv(struct lm *m, const char *name, fm_tid x, int64_t rep);

/* The graph parts (build_attn.c, build_moe.c, build_seq2seq.c) */
fm_tid lm_self_attention(struct lm *m, int layer, fm_tid h);
fm_tid lm_mla(struct lm *m, int layer, fm_tid h);
fm_tid lm_gated_mlp(struct lm *m, const char *name, fm_tid h, int64_t ffn, bool bias);
fm_tid lm_moe(struct lm *m, fm_tid h);
enum fm_status lm_build_bert(struct lm *m, fm_tid ids, fm_tid *logits);
enum fm_status lm_build_t5(struct lm *m, fm_tid ids, int64_t enc_seq, int64_t dec_seq,
                           fm_tid *logits);

#endif
