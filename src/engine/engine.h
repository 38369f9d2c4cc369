/* engine.h - the engine's internal interface beside include/laya.h: wrapping
 * an in-memory model (tests, benchmarks), suggestion-search parameters, and
 * read access to a session's tokens and state (tests, evaluation).
 *
 * Shape letters: V vocab, H hidden. */
#ifndef LAYA_ENGINE_H
#define LAYA_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "model/model.h"

/* Bounds of one session (memory per session is constant, see engine.c):
 *  ENGINE_RING     checkpoints of the last tokens (every token boundary)
 *  ENGINE_SPARSE   checkpoints further back, every ENGINE_SPARSE_STEP tokens
 *                  at first; when full, every other one is dropped and the
 *                  spacing doubles, so they cover any length
 *  ENGINE_WINDOW   a context longer than this, set afresh (a paste, a jump
 *                  far back), is read from a word start near its last
 *                  ENGINE_WINDOW bytes: the worst-case rewind stays bounded
 *  ENGINE_MAX_CONTEXT  longer contexts are refused with LAYA_ERR_LIMIT
 *  ENGINE_MAX_TAIL the longest unfinished tail that suggestions complete
 *  ENGINE_MAX_GEN  the most bytes one suggestion may add */
enum {
    ENGINE_RING = 32,
    ENGINE_SPARSE = 16,
    ENGINE_SPARSE_STEP = 64,
    ENGINE_WINDOW = 32 * 1024,
    ENGINE_MAX_CONTEXT = LAYA_MAX_CONTEXT,
    ENGINE_MAX_TAIL = 64,
    ENGINE_MAX_GEN = LAYA_MAX_SUGGESTION,
    ENGINE_MAX_BEAM = LAYA_MAX_BEAM,
    ENGINE_MAX_K = LAYA_MAX_K,
    ENGINE_MAX_STEPS = LAYA_MAX_STEPS
};


/* Wraps an inference model built in memory (model_from_params). With own=1
 * the wrapper frees m in laya_model_free. *out owned by the caller. */
laya_status engine_model_wrap(model *m, int own, laya_model **out);
const model *engine_model(const laya_model *lm);

/* Suggestion search parameters: the public laya_search_opts (laya.h).
 * max_steps is the number of search nodes (model steps) per keystroke;
 * prune skips leaves that cannot be shown (exact, suggest.c: hopeless_leaf). */
typedef laya_search_opts engine_cfg;

engine_cfg engine_cfg_default(void);

/* The score a suggestion (text, len bytes, probability prob) is ranked by
 * (suggest.c): prob * saved^len_exp, saved = its characters, less one if it
 * starts (after blanks) with a CJK character. */
double engine_rank_score(const uint8_t *text, int len, double prob, float len_exp);
/* Debug and test: checks what laya_suggest promises of out[0..n), the
 * result of the last laya_suggest(s, k, out, &n) on s (nothing may have
 * touched s since): at most k suggestions, each non-empty text within
 * max_bytes and max_words, no control byte, ending in a blank only as one
 * space after an ASCII character (a word and the blank after it), complete
 * UTF-8 after the character the context leaves open, prob in (0, 1] and
 * at least min_prob; no two alike; each adding no more than the one before
 * it (to the float rounding of prob; suggest.c: engine_pick); and every
 * one a candidate of the search at or above min_prob that adds at least as
 * much to those before it as any other candidate would, so fewer than k
 * only when fewer exist. LAYA_OK, or
 * LAYA_ERR_INTERNAL with the first broken promise in why (optional). */
laya_status engine_suggest_invariants(const laya_session *s, int k, const laya_suggestion *out, int n, char *why,
                                      size_t whylen);
/* Checks ranges and applies cfg to s (takes effect at the next laya_suggest). */
laya_status engine_set_cfg(laya_session *s, const engine_cfg *cfg);

/* The stable tokens (BOS first) of the text the model has read, and the
 * model state after them (y: the last step's output vector, H floats).
 * Pointers owned by s, valid until the next call on s. */
const int32_t *engine_tokens(const laya_session *s, size_t *n);
const model_state *engine_state(const laya_session *s, const float **y);
/* Offset in the context where the model's text starts (0 unless the
 * context exceeded ENGINE_WINDOW when it was last set afresh) and where
 * the unfinished tail starts. */
size_t engine_origin(const laya_session *s);
size_t engine_tail_start(const laya_session *s);
/* laya_score (laya.h), BOS first. */
laya_status engine_score(const laya_model *lm, const char *text, size_t len, double *bits);

/* Learning for this session (blend.c): on, the search consults the
 * personal-memory index ix (borrowed: it must outlive the session or be
 * unset; NULL: none; the caller serialises access to it) and the text typed
 * in this session. kappa > 0: how much evidence a memory needs to be
 * trusted (learn_index.h); 0 keeps the default. */
struct learn_index;
laya_status engine_set_learn(laya_session *s, int on, const struct learn_index *ix, double kappa);

/* A private field (password, PIN, the PRIVATE hint): 1 and the search
 * consults no memory and learns nothing typed here. */
void engine_set_private(laya_session *s, int on);

/* Model steps run by this session so far (tests check the O(1) claims). */
uint64_t engine_steps(const laya_session *s);
/* Model steps run by this session's suggestion searches so far. */
uint64_t engine_search_steps(const laya_session *s);

#endif
