/* session.h - private to src/engine: the layout of a model and a session,
 * shared by engine.c (contexts, checkpoints) and suggest.c (search).
 *
 * Shape letters: V vocab, H hidden, B beams, S model_state_floats. */
#ifndef LAYA_ENGINE_SESSION_H
#define LAYA_ENGINE_SESSION_H

#include "engine/context.h"
#include "engine/nc.h"
#include "engine/search.h"

/* Per-token facts the search needs, computed once per model. */
enum {
    TF_SPECIAL = 1,   /* no bytes (BOS, EOS, PAD, reserved): never generated */
    TF_STOP = 2,      /* contains a newline or control byte: ends a suggestion */
    TF_BOUNDARY = 4,  /* starts with what ends a word: space, punctuation, a
                         CJK character (each one is a word of its own) */
    TF_BLANK = 8,     /* starts with a space (a TF_BOUNDARY token) */
};

struct laya_model {
    model *m;
    int own;
    uint8_t *tflags;  /* (V) TF_* */
};

enum { ENGINE_JUNK_CACHE = 64, ENGINE_FB_KEY = 128 /* LEARN_FB_KEY_MAX */ };
struct laya_session {
    const laya_model *lm;
    const model *m;
    model_cfg cfg;
    engine_cfg ec;

    engine_context cx;              /* context.h: the text, its stable tokens, the model states */
    engine_search sr;               /* search.h: the suggestion search, its candidates */

    /* Personal memory (blend.c): the index the search consults (borrowed;
     * NULL: none), how much it is trusted, and the privacy switch. */
    const struct learn_index *lix;
    struct laya_memory *memory;     /* laya_session_set_memory (borrowed); the history comes from it */
    double learn_kappa;
    int private_field;              /* a password or private field: no memory */
    int learn_on;                   /* consult the memory and the text typed */
    /* The text being typed as a memory of its own (the session's last
     * ENGINE_WINDOW bytes, complete units only): names and phrases that
     * recur inside a document before anything is committed. */
    struct learn_index *cix;
    size_t cix_end;                 /* ctx[..cix_end) is in cix; SIZE_MAX: rebuild */
    uint64_t junk_hash[ENGINE_JUNK_CACHE];   /* blend.c: words judged, by hash (0: none) */
    uint8_t junk_verdict[ENGINE_JUNK_CACHE];
    /* The list last shown (laya_suggest, laya_session_shown) and the key of
     * the context it was made for (learn_fb_key), awaiting
     * laya_session_feedback; shown_n 0: none (or no memory to learn it). */
    uint8_t shown_key[ENGINE_FB_KEY];
    size_t shown_klen;
    int shown_n;
    uint8_t shown_text[ENGINE_MAX_K][ENGINE_MAX_GEN];
    size_t shown_len[ENGINE_MAX_K];

    engine_nc nc;                   /* nc.h: the continuous cache, the search's scoring plug-in */

    /* The keystroke pipeline's state (pipeline.h; NULL until the first
     * laya_session_event) and the field's secret flag (engine_gate). */
    struct engine_pipe *pipe;
    int secret_field;

    /* Related notes (src/notes): the attached index and its cache (NULL: none). */
    struct notes_link *notes;

    /* The intent head (borrowed; NULL: none) and its last answer, for the
     * stable state of version intent_ver - 1 (0: none yet). */
    const struct laya_intent *intent;
    uint64_t intent_ver;
    float intent_p[LAYA_INTENT_CLASSES];
};

/* The privacy gate, one place for every rule that protects the user
 * (engine.c; docs/DESIGN.md, "Privacy"):
 *  ENGINE_GATE_SECRET  a secret field (password, PIN) or a password prompt
 *                      before the cursor on the current line: nothing shown,
 *                      looked up (notes, intent), learned or kept;
 *  ENGINE_GATE_PRIVATE a private field: the model's suggestions only, nothing
 *                      from the memory, notes or intent, nothing learned or kept;
 *  ENGINE_GATE_OPEN    otherwise (incognito is the memory's: it keeps nothing,
 *                      learn.c and learn_store.c refuse every write). */
enum { ENGINE_GATE_OPEN = 0, ENGINE_GATE_PRIVATE = 1, ENGINE_GATE_SECRET = 2 };
int engine_gate(const laya_session *s);
/* The same for text[0..len) before the cursor in place of the session's. */
int engine_gate_at(const laya_session *s, const uint8_t *text, size_t len);
/* Sets the field's flags (the pipeline, on every event). */
void engine_set_field(laya_session *s, int secret, int priv);

/* suggest.c */
laya_status engine_suggest(laya_session *s, int k, laya_suggestion *out, int *n_out);
/* suggest.c: the search engine_suggest makes for k suggestions, for its
 * model steps only (laya_session_prefetch): the nodes it computes are kept
 * for the next keystroke, the candidates dropped, its work counted in
 * ahead_steps / ahead_logits instead of the search counters. */
void engine_search_ahead(laya_session *s, int k);

/* blend.c: mixes what the personal memory proposes for the context into the
 * search's candidates s->cand[0..n_cand) (probabilities and scores set), k
 * of which will be shown; nothing changes when the session has no memory
 * or it proposes nothing. */
void engine_blend_memory(laya_session *s, int k);
/* blend.c: 1 while the session's memory is incognito (brought up to other
 * processes' switches first), else 0: the text typed is then not learned
 * from, by the unit memory or by the continuous cache. */
int engine_memory_incognito(laya_session *s);
/* blend.c: adds what the model file's next-word prior proposes (prior.h),
 * with trust ec.prior_weight; a candidate it has nothing for keeps its
 * probability, and nothing changes without a prior or at 0. */
void engine_blend_prior(laya_session *s);

/* Fills lm->tflags from the tokenizer (engine_model_wrap). */
void engine_token_flags(const tok *t, int32_t V, uint8_t *flags);

#endif
