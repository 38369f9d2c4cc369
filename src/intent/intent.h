/* intent.h - the intent head (C10): what the user is doing, from the base
 * model's hidden state.
 *
 * The head reads y, the frozen base model's final normalised hidden vector
 * after the stable tokens of the context (engine.c: the session's cur.y,
 * the output of model_step), and computes
 *     z = relu(W1 y + b1),  logits = W2 z + b2,  p = softmax(logits)
 * over INTENT_C classes (intent_names). Its cost per call is one (F, H)
 * and one (C, F) product: about 50k multiply-adds at H = 384.
 *
 * Shape letters: H the base model's hidden size, F the head's hidden size
 * (INTENT_F), C classes (INTENT_C), N examples.
 *
 * The companion file (MODEL.intent.safetensors, beside the model) is
 * safetensors with the tensors
 *     intent.w1 F32 (F, H)   intent.b1 F32 (F)
 *     intent.w2 F32 (C, F)   intent.b2 F32 (C)
 * and __metadata__ (all strings):
 *     format "laya-intent", format_version "1",
 *     classes   the class names joined by ',' in intent_names' order,
 *     hidden    H,
 *     base_blake2b  the base model's identity (model_identity: its
 *               data_blake2b in the row-major layout, so a head serves
 *               the model's panel-layout file too): a head trained on
 *               another model's states is refused,
 *     threshold the probability above which a class is reported (measured
 *               by `laya intent train` on its held-out split),
 *     data_blake2b  BLAKE2b-256 of the data section (st.h).
 * It is hostile input like the model: signature first (the model's policy,
 * model_sign.h), then the container (st_parse), then every name, dtype,
 * shape, metadata value and the checksum, and every weight finite and at
 * most INTENT_MAX_WEIGHT in magnitude. */
#ifndef LAYA_INTENT_H
#define LAYA_INTENT_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "model/model_sign.h"

enum { INTENT_C = LAYA_INTENT_CLASSES, INTENT_F = 128, INTENT_FORMAT_VERSION = 1 };
/* The loader refuses weights larger in magnitude (a trained head's are
 * below 10: the shipped one's largest is 3.6). */
#define INTENT_MAX_WEIGHT 1e4f

/* Class names, index = class id; the last one, "other", is never reported. */
extern const char *const intent_names[INTENT_C];
enum { INTENT_OTHER = INTENT_C - 1 };
/* The id of name, or -1. */
int intent_class(const char *name);

struct laya_intent {
    int H;
    float threshold;
    char base_blake2b[65];   /* the base model's data_blake2b ("" in memory-only heads) */
    float *w1;   /* (F, H) */
    float *b1;   /* (F) */
    float *w2;   /* (C, F) */
    float *b2;   /* (C) */
    float *mem;  /* the one block they live in */
};
typedef struct laya_intent intent_head;

/* A head for inputs of H floats, weights zero, threshold 0.5. *out owned
 * by the caller (intent_free). */
laya_status intent_new(int H, intent_head **out);
void intent_free(intent_head *h);   /* NULL is ignored */
size_t intent_n_params(int H);

/* p (C) = the head's class probabilities for y (H); hid (F) scratch.
 * Softmax in double after subtracting the max logit: exact to float
 * rounding for any logits. */
void intent_forward(const intent_head *h, const float *y, float *hid, float *p);
/* The specification of intent_forward: plain loops, sums in double. The
 * fast one (the kernel table's f32 matvec) agrees within float rounding of
 * H-term sums (tests/test_intent.c). */
void intent_forward_ref(const intent_head *h, const float *y, float *hid, float *p);

/* Writes h to path (atomically, st_write), with base_blake2b (64 hex) as
 * the base model it belongs to. */
laya_status intent_save(const intent_head *h, const char *path, const char *base_blake2b, char *err,
                        size_t errlen);
/* Loads path under trust t. H and base_blake2b (NULL: not checked) must
 * match the base model (its model_identity). *out owned by the caller.
 * laya_intent_load (engine/load.c) is this over a laya_model. */
laya_status intent_load(const char *path, const model_trust *t, int H, const char *base_blake2b,
                        intent_head **out, char *err, size_t errlen);

/* ---- training (intent_train.c) ----
 * Cross-entropy with class weights wc (C), mean over the examples, plus
 * decay/2 * |W1|^2 + |W2|^2 (biases not decayed); Adam on minibatches. */
typedef struct {
    int epochs;        /* passes over the data */
    int batch;         /* examples per step */
    float lr;          /* Adam step size */
    float decay;       /* L2 weight decay */
    uint64_t seed;     /* initialisation and shuffling */
} intent_train_cfg;

intent_train_cfg intent_train_defaults(void);

/* Called after each epoch with the training loss (weighted mean over the
 * epoch's minibatches) and accuracy. */
typedef void (*intent_progress)(void *ctx, int epoch, double loss, double acc);

/* Class weights that balance the classes: wc[c] = N / (C * n_c), 0 for a
 * class with no example. */
void intent_class_weights(const int *label, int N, float *wc);

/* The loss of h on X (N, H) with labels (N) and weights wc (C) (no
 * decay), and when grad is not NULL its gradient (intent_n_params floats,
 * laid out as h's parameters: w1, b1, w2, b2). Sums in double. */
double intent_loss(const intent_head *h, const float *X, const int *label, int N, const float *wc, double *grad);

/* Trains h (its H set, weights overwritten: initialised from cfg->seed) on
 * X (N, H), label (N). The inputs are standardised per feature (mean and
 * deviation of X) for the optimisation and the standardisation is folded
 * into W1 and b1 afterwards, so the head stays the two layers above.
 * *final_loss (optional): the loss on X afterwards. */
laya_status intent_train(intent_head *h, const float *X, const int *label, int N, const intent_train_cfg *cfg,
                         intent_progress fn, void *ctx, double *final_loss, char *err, size_t errlen);

#endif
