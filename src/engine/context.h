/* context.h - private to src/engine: a session's context component, the
 * text before the cursor, the stable tokens the model has read of it and
 * the model states after them, with the checkpoints a rewind starts from
 * (context.c says how an edit becomes a re-encode and a rewind).
 *
 * Shape letters: H hidden, S model_state_floats, N tok_cap. */
#ifndef LAYA_ENGINE_CONTEXT_H
#define LAYA_ENGINE_CONTEXT_H

#include "engine/engine.h"

/* A model state plus the output vector y of the step that produced it. */
typedef struct {
    model_state st;   /* (S) st.n = tokens consumed; -1 marks an unused slot */
    float *y;         /* (H) */
} ckpt;

typedef struct {
    /* The text: every byte before the cursor; the model reads ctx[origin..len). */
    uint8_t *ctx;           /* (cap) */
    size_t len, cap;
    size_t origin;
    size_t stable;          /* absolute end of the stable tokens (tail start) */

    /* Stable tokens: tok[0] = TOK_BOS; tok_end[i] = end of token i in bytes
     * relative to origin; chunk[i] = 1 if a pre-tokenizer chunk ends there. */
    int32_t *tok;           /* (N) */
    uint32_t *tok_end;      /* (N) */
    uint8_t *chunk;         /* (N) */
    size_t n_tok, tok_cap;
    int32_t *enc;           /* (N) scratch for re-encoding, as tok */
    uint32_t *enc_end;      /* (N) */
    uint8_t *enc_chunk;     /* (N) */

    /* Model: cur is the state after all n_tok stable tokens. */
    ckpt cur, bos;
    ckpt ring[ENGINE_RING];         /* slot = count % ENGINE_RING */
    ckpt sparse[ENGINE_SPARSE];     /* increasing counts */
    int n_sparse;
    int64_t sparse_step;
    float *scratch;                 /* model_scratch_floats */
    uint64_t steps;                 /* model steps run for the stable tokens */
    uint64_t cur_ver;               /* changes of cur (a fed token, a rewind) */
    uint64_t rewinds;               /* rewinds of cur */
    float *mem;                     /* ((ENGINE_RING + ENGINE_SPARSE + 2) (S + H) + scratch)
                                       the one block the states live in */
} engine_context;

/* Allocates cx for model m and reads BOS into it (the empty text).
 * LAYA_ERR_NOMEM leaves what was allocated for engine_context_free. */
laya_status engine_context_init(engine_context *cx, const model *m);
void engine_context_free(engine_context *cx);   /* of a zeroed or initialized cx */
/* The empty text again (the BOS state kept). */
void engine_context_reset(engine_context *cx, const model *m);

/* Copies the state and output vector of src into dst (both of model c). */
void engine_ckpt_copy(const model_cfg *c, ckpt *dst, const ckpt *src);

/* The length of the common prefix of a and b (n bytes each). */
size_t engine_common_prefix(const uint8_t *a, const uint8_t *b, size_t n);

/* The text becomes ctx[0..keep) + add[0..n) (add may point into ctx).
 * Bytes only: the tokens and states are engine_context_encode's.
 * LAYA_ERR_NOMEM leaves the text as it was. */
laya_status engine_context_edit(engine_context *cx, size_t keep, const uint8_t *add, size_t n);
/* After engine_context_edit(cx, keep, ...) of a text of old_len bytes: the
 * stable tokens that survive are kept, the rest of the stable text
 * re-encoded, and cur rewound to the newest checkpoint at or before the
 * first token that differs. The tokens tok[cur.st.n..n_tok) are then left
 * for engine_context_feed. */
laya_status engine_context_encode(engine_context *cx, const model *m, size_t keep, size_t old_len);
/* Runs token id (the next stable token) through cur and records the
 * checkpoints it produces; known: cur's state after id when the caller has
 * it already (a search node), copied instead of stepped; NULL: a step. */
void engine_context_feed(engine_context *cx, const model *m, int32_t id, const ckpt *known);

#endif
