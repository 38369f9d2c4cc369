/* session.h - private to src/engine: a model and a session. A session is
 * its components, each with its own struct, header, init and free:
 *   context   context.h  the text, its stable tokens, the model states and
 *                        checkpoints (context.c)
 *   search    search.h   the beam search, its nodes and candidate list,
 *                        counters and the next keys computed ahead (suggest.c)
 *   cache     nc.h       the continuous cache, the search's scoring plug-in
 *                        (nc.c)
 *   experts   experts.h  the personal memory and the feedback on the lists
 *                        shown, over the candidate list (blend.c; the prior
 *                        keeps no state)
 * and what belongs to the session as a whole: the model and the search
 * parameters, the field's flags, the pipeline, notes and intent. A
 * keystroke composes them in engine_suggest (suggest.c); every edit of the
 * text goes through engine.c's apply.
 *
 * Shape letters: V vocab. */
#ifndef LAYA_ENGINE_SESSION_H
#define LAYA_ENGINE_SESSION_H

#include "engine/context.h"
#include "engine/nc.h"
#include "engine/search.h"
#include "engine/experts.h"

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

struct laya_session {
    const laya_model *lm;
    const model *m;
    model_cfg cfg;
    engine_cfg ec;                  /* the search parameters (laya_session_set_search) */

    engine_context cx;              /* context.h */
    engine_search sr;               /* search.h */
    engine_nc nc;                   /* nc.h */
    engine_memory mem;              /* experts.h: the personal memory */
    engine_feedback fb;             /* experts.h: the list shown, awaiting its verdict */

    /* The field's flags (engine_set_field): a password or private field
     * (no memory, nothing learned or kept), a secret one (engine_gate). */
    int private_field;
    int secret_field;

    /* The keystroke pipeline's state (pipeline.h; NULL until the first
     * laya_session_event). */
    struct engine_pipe *pipe;

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

/* suggest.c: the k suggestions for s's context (context -> search ->
 * experts -> pick); out's texts point into the session. */
laya_status engine_suggest(laya_session *s, int k, laya_suggestion *out, int *n_out);
/* suggest.c: the search engine_suggest makes for k suggestions, for its
 * model steps only (laya_session_prefetch): the nodes it computes are kept
 * for the next keystroke, the candidates dropped, its work counted in
 * ahead_steps / ahead_logits instead of the search counters. */
void engine_search_ahead(laya_session *s, int k);

/* Fills lm->tflags from the tokenizer (engine_model_wrap). */
void engine_token_flags(const tok *t, int32_t V, uint8_t *flags);

#endif
