/* model.h - the Laya network (C1): weights layout, model files, stateful step.
 *
 * Architecture (one token at a time; the sequence forward in src/train does
 * the same over (B,T)):
 *   x0 = emb[token]                                         (H)
 *   for l in 0..L-1:
 *     h_l  = GRU_l(x_l, h_l)          gates r,z,n as PyTorch:
 *            r = sig(Wir x + bir + Whr h + bhr)
 *            z = sig(Wiz x + biz + Whz h + bhz)
 *            n = tanh(Win x + bin + r*(Whn h + bhn))
 *            h' = (1-z)*n + z*h
 *     q,k,v = wq h', wk h', wv h'      (D each); k,v pushed into a ring of W
 *     a     = softmax over the last min(W, t+1) positions of q.k_j / sqrt(D)
 *     x_l+1 = h' + wo (sum_j a_j v_j)  (residual)
 *   y = rmsnorm(x_L) * norm            eps = 1e-5
 *   logits = emb y                     (tied with the embedding)
 *
 * Shape letters: V vocab, H hidden, D attention width, L layers, W window,
 * G = 3H gate rows (order r, z, n), B batch, T time. */
#ifndef LAYA_MODEL_H
#define LAYA_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "kern/kern.h"
#include "tok/tok.h"
#include "prior/prior.h"

enum { MODEL_MAX_L = 8, MODEL_MAX_W = 16, MODEL_FORMAT_VERSION = 1 };
#define MODEL_NORM_EPS 1e-5f

typedef struct {
    int32_t V, H, D, L, W;
} model_cfg;

/* The default base-model shape (about 18M parameters). */
model_cfg model_cfg_default(void);
/* Checks ranges (V 260..65536, H 8..4096, D 1..H, L 1..MODEL_MAX_L,
 * W 1..MODEL_MAX_W); fills err and returns LAYA_ERR_FORMAT otherwise. */
laya_status model_cfg_check(const model_cfg *c, char *err, size_t errlen);

/* The f32 parameters, pointers into one flat buffer of model_n_params()
 * floats laid out in exactly this order (the trainer's layout too). */
typedef struct {
    float *w_ih;   /* (3H, H) */
    float *w_hh;   /* (3H, H) */
    float *b_ih;   /* (3H) */
    float *b_hh;   /* (3H) */
    float *wq;     /* (D, H) */
    float *wk;     /* (D, H) */
    float *wv;     /* (D, H) */
    float *wo;     /* (H, D) */
} model_layer_params;

typedef struct {
    float *emb;                              /* (V, H) */
    model_layer_params layer[MODEL_MAX_L];
    float *norm;                             /* (H) */
} model_params;

size_t model_n_params(const model_cfg *c);
void model_params_point(const model_cfg *c, float *base, model_params *p);

/* One named tensor of the layout: safetensors name ("emb", "l0.w_ih", ...,
 * "norm"), shape, and offset in floats into the flat buffer. */
typedef struct {
    char name[24];
    int ndim;
    int64_t shape[2];
    size_t offset;
    int is_matrix;  /* 2-D weights that inference may store quantized */
} model_tensor;
/* Fills out (cap >= 2 + 8*MODEL_MAX_L) and returns the count. */
int model_tensors(const model_cfg *c, model_tensor *out, int cap);

/* ---- Inference model (model_file.c, model_step.c) ---- */

typedef struct {
    qmat w_ih, w_hh, wq, wk, wv, wo;
    const float *b_ih, *b_hh;   /* (3H) */
} model_layer;

typedef struct model {
    model_cfg cfg;
    qmat emb;                   /* (V, H), also the output projection */
    model_layer layer[MODEL_MAX_L];
    const float *norm;          /* (H) */
    tok *tok;                   /* owned */
    char *meta_json;            /* the __metadata__ object, owned */
    void *map; size_t map_len;  /* the read-only mapping, owned (may be NULL) */
    void *owned;                /* converted weights, owned (may be NULL) */
    void *panels;               /* the q8/q4 matrices' panel forms, owned (may be NULL) */
    prior prior;                /* the next-word prior in the mapping (prior.h); nw 0: none */
} model;

/* The names of a prior's tensors in a model file: "prior.words", ... */
#define MODEL_PRIOR_PREFIX "prior."

/* Loads and validates a safetensors model file (see model_file.c for the
 * exact format); touches every weight once. *out owned by the caller.
 * model_load applies laya_model_load's trust (the project keys and the
 * environment, model_sign.h: model_trust_env); model_load_opts exactly
 * the trust given. Untrusted files are refused with LAYA_ERR_SIGNATURE
 * before they are parsed. */
struct model_trust;
laya_status model_load(const char *path, model **out, char *err, size_t errlen);
laya_status model_load_opts(const char *path, const struct model_trust *trust, model **out, char *err,
                            size_t errlen);
void model_free(model *m);

/* Builds an inference model over f32 parameters the caller owns (no copy;
 * params must outlive it) and a tokenizer (ownership passes to the model,
 * may be NULL for tests). */
laya_status model_from_params(const model_cfg *c, const float *params, tok *t, model **out);

/* The weights of m back in the flat f32 layout (model_tensors order,
 * model_n_params floats): dequantized for q8/q4, widened for f16. */
void model_params_read(const model *m, float *params);

/* Writes a model file. params: f32 flat layout. dtype: QT_F32 or QT_F16
 * (quantized types: model_save_quant). tok_blob: serialized tokenizer,
 * stored as the U8 tensor "tokenizer". meta_extra: a JSON object whose
 * string members are added to __metadata__ (provenance), may be NULL. */
laya_status model_save(const char *path, const model_cfg *c, const float *params,
                       qtype dtype, const uint8_t *tok_blob, size_t tok_len,
                       const char *meta_extra, char *err, size_t errlen);
/* As model_save, and dtype may also be QT_Q8 or QT_Q4: every matrix
 * (embedding included) quantized with groups of `group` (32, 64 or 128; it
 * must divide H and D), vectors kept f32. group is ignored for F32/F16. */
laya_status model_save_quant(const char *path, const model_cfg *c, const float *params,
                             qtype dtype, int32_t group, const uint8_t *tok_blob, size_t tok_len,
                             const char *meta_extra, char *err, size_t errlen);
/* How a file lays out its q8/q4 matrices (__metadata__ layout, model_file.c):
 * ROWS, the stored row-major form, which the loader repacks into the panel
 * form the products read (one allocation and copy, ~ the weights' size);
 * PANEL, that panel form itself (kern.h), mapped and used in place. */
typedef enum { MODEL_LAYOUT_ROWS = 0, MODEL_LAYOUT_PANEL = 1 } model_layout;
enum { MODEL_PANEL_VERSION = 1 };   /* __metadata__ layout_version of "panel" */
/* As model_save_quant (dtype QT_Q8 or QT_Q4), in the given layout. */
laya_status model_save_quant_layout(const char *path, const model_cfg *c, const float *params, qtype dtype,
                                    int32_t group, model_layout layout, const uint8_t *tok_blob, size_t tok_len,
                                    const char *meta_extra, char *err, size_t errlen);
/* Writes the q8/q4 model m again in layout, its codes, scales, biases,
 * vectors and tokenizer copied exactly (no re-quantization): the same
 * model, bit for bit, in the other layout (either way; ROWS to ROWS with
 * the input's provenance as meta_extra gives the input's bytes). Refuses
 * (LAYA_ERR_ARG) an f32/f16 model. */
laya_status model_save_relayout(const char *path, const model *m, model_layout layout, const char *meta_extra,
                                char *err, size_t errlen);
/* The model's identity across layouts and priors (64 hex + NUL into hex):
 * its data_blake2b in the row-major layout without a prior, which a
 * panel-layout file or a file with a prior records as rows_blake2b. What an intent head names as its base model. LAYA_OK,
 * or LAYA_ERR_FORMAT if the metadata lacks it. */
laya_status model_identity(const model *m, char hex[65]);

/* 1 if model_save owns the __metadata__ key (meta_extra may not set it). */
int model_meta_reserved(const char *key);

/* ---- Stateful step ---- */

/* The state of one stream of tokens: constant size whatever its length. */
typedef struct {
    int64_t n;    /* tokens consumed so far */
    float *h;     /* (L, H) GRU hidden state of each layer */
    float *k;     /* (L, W, D) ring of keys, slot = position % W */
    float *v;     /* (L, W, D) ring of values */
} model_state;

size_t model_state_floats(const model_cfg *c);
/* Points s into mem (model_state_floats floats, caller-owned) and zeroes it. */
void model_state_init(const model_cfg *c, model_state *s, float *mem);
/* Points s into mem and leaves mem as it is: for a slot that is always
 * copied into (model_state_copy) before it is read, so that a session's
 * spare slots cost no page until they are used. */
void model_state_place(const model_cfg *c, model_state *s, float *mem);
void model_state_copy(const model_cfg *c, model_state *dst, const model_state *src);

/* Scratch floats model_step needs (caller-owned, reused across calls). */
size_t model_scratch_floats(const model_cfg *c);
/* Consumes token; updates s in O(1); writes the final normalized hidden
 * vector y (H) from which logits come. */
void model_step(const model *m, model_state *s, int32_t token, float *scratch, float *y);
/* logits(V) = emb y; and for listed ids only. */
void model_logits(const model *m, const float *y, float *logits);
void model_logits_ids(const model *m, const float *y, const int32_t *ids, int n, float *out);

/* Batched beams: model_step for n (>= 1) distinct states s[i] consuming
 * tokens[i], each weight matrix streamed once for all n (kern matmat)
 * instead of n times. y[i] (H) as model_step's y. Equal to n model_step
 * calls bit for bit on the ref table and for q8/q4 weights on every table
 * (n = 1 included); f32/f16 weights on the vector tables sum in another
 * order (within 1e-5 relative; tests/test_model_step.c checks both).
 * scratch: model_batch_scratch_floats(c, n) floats, caller-owned. */
size_t model_batch_scratch_floats(const model_cfg *c, int n);
void model_step_batch(const model *m, model_state *const *s, const int32_t *tokens, int n,
                      float *scratch, float *const *y);
/* logits (N, V) = Y (N, H) emb^T: one pass over the embedding for n vectors. */
void model_logits_batch(const model *m, const float *y, int n, float *logits);

#endif
