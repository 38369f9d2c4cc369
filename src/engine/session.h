/* session.h - private to src/engine: the layout of a model and a session,
 * shared by engine.c (contexts, checkpoints) and suggest.c (search).
 *
 * Shape letters: V vocab, H hidden, B beams, S model_state_floats. */
#ifndef LAYA_ENGINE_SESSION_H
#define LAYA_ENGINE_SESSION_H

#include "engine/engine.h"

/* Per-token facts the search needs, computed once per model. */
enum {
    TF_SPECIAL = 1,   /* no bytes (BOS, EOS, PAD, reserved): never generated */
    TF_STOP = 2,      /* contains a newline or control byte: ends a suggestion */
    TF_BOUNDARY = 4,  /* starts with what ends a word: space, punctuation, a
                         CJK character (each one is a word of its own) */
};

struct laya_model {
    model *m;
    int own;
    uint8_t *tflags;  /* (V) TF_* */
};

/* A model state plus the output vector y of the step that produced it. */
typedef struct {
    model_state st;   /* st.n = tokens consumed; -1 marks an unused slot */
    float *y;         /* (H) */
} ckpt;

/* One hypothesis of the suggestion search. */
typedef struct {
    ckpt c;
    double lp;                      /* log probability so far */
    int r;                          /* bytes of the typed tail matched */
    int ntok;                       /* tokens generated after the tail */
    int glen;                       /* bytes generated beyond the tail */
    uint8_t gen[ENGINE_MAX_GEN];
} beam;

/* An expansion under consideration: beam parent, token id, new score. */
typedef struct {
    int parent;
    int32_t id;
    double lp;
} expansion;

typedef struct {
    uint8_t text[ENGINE_MAX_GEN];
    int len;
    double prob;
    double score;
} candidate;

enum { ENGINE_MAX_CAND = 64 };

struct laya_session {
    const laya_model *lm;
    const model *m;
    model_cfg cfg;
    engine_cfg ec;

    /* Context: every byte before the cursor; the model reads ctx[origin..len). */
    uint8_t *ctx;
    size_t len, cap;
    size_t origin;
    size_t stable;          /* absolute end of the stable tokens (tail start) */

    /* Stable tokens: tok[0] = TOK_BOS; tok_end[i] = end of token i in bytes
     * relative to origin; chunk[i] = 1 if a pre-tokenizer chunk ends there. */
    int32_t *tok;
    uint32_t *tok_end;
    uint8_t *chunk;
    size_t n_tok, tok_cap;
    int32_t *enc;           /* (tok_cap) scratch for re-encoding */
    uint32_t *enc_end;
    uint8_t *enc_chunk;

    /* Model: cur is the state after all n_tok stable tokens. */
    ckpt cur, bos;
    ckpt ring[ENGINE_RING];         /* slot = count % ENGINE_RING */
    ckpt sparse[ENGINE_SPARSE];     /* increasing counts */
    int n_sparse;
    int64_t sparse_step;
    float *scratch;                 /* model_scratch_floats */
    uint64_t steps;

    /* Search scratch, allocated once with the session. */
    beam beams[2][ENGINE_MAX_BEAM];
    expansion pool[ENGINE_MAX_BEAM * ENGINE_MAX_BEAM];
    candidate cand[ENGINE_MAX_CAND];
    int n_cand;
    float *logits;                  /* (2V): logits, and gathered ones */
    int32_t *ids;                   /* (V) allowed ids under a constraint */
    uint8_t out_text[ENGINE_MAX_K][ENGINE_MAX_GEN + 1];  /* NUL-terminated */

    float *mem;                     /* the one block all float arrays live in */
};

/* suggest.c */
laya_status engine_suggest(laya_session *s, int k, laya_suggestion *out, int *n_out);
/* Fills lm->tflags from the tokenizer (engine_model_wrap). */
void engine_token_flags(const tok *t, int32_t V, uint8_t *flags);

#endif
