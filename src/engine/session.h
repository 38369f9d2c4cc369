/* session.h - private to src/engine: the layout of a model and a session,
 * shared by engine.c (contexts, checkpoints) and suggest.c (search).
 *
 * Shape letters: V vocab, H hidden, B beams, S model_state_floats. */
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
    engine_cfg ec;

    engine_context cx;              /* context.h: the text, its stable tokens, the model states */
    engine_search sr;               /* search.h: the suggestion search, its candidates */

    engine_memory mem;              /* experts.h: the personal memory, an expert */
    engine_feedback fb;             /* experts.h: the list shown, awaiting its verdict */
    int private_field;              /* a password or private field: no memory */
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

/* Fills lm->tflags from the tokenizer (engine_model_wrap). */
void engine_token_flags(const tok *t, int32_t V, uint8_t *flags);

#endif
