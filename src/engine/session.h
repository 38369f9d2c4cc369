/* session.h - private to src/engine: the layout of a model and a session,
 * shared by engine.c (contexts, checkpoints) and suggest.c (search).
 *
 * Shape letters: V vocab, H hidden, B beams, S model_state_floats. */
#ifndef LAYA_ENGINE_SESSION_H
#define LAYA_ENGINE_SESSION_H

#include "engine/context.h"
#include "engine/nc.h"

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

/* A search node: the model state after the stable tokens and then a path
 * of tokens, with what the search needs of its logits once the typed tail
 * is matched (the summary). Nodes are keyed by (parent id, token) and kept
 * across keystrokes while the stable state (cur) does not change, so a
 * search that walks a path an earlier one walked steps no model. */
/* ENGINE_GEN_BEAMS: the beams of one depth of the search: up to the beam
 * width that have matched the typed tail and as many that have not yet
 * (suggest.c, next_generation). */
enum { ENGINE_NODES = 48, ENGINE_TOPN = 24, ENGINE_GEN_BEAMS = 2 * ENGINE_MAX_BEAM };
/* ENGINE_KEPT: full logits vectors kept for nodes that may become the root
 * (suggest.c, keep_logits). */
enum { ENGINE_KEPT = 4 };
typedef struct {
    ckpt c;
    uint64_t id;                  /* unique while cur is unchanged; 0: unused */
    uint64_t parent;              /* the parent's id (the root's for depth 1) */
    int32_t tok;                  /* the token consumed last */
    uint32_t used;                /* last search depth stamp that used it */
    int has_sum;
    double lz;                    /* log of the softmax normaliser */
    double pend;                  /* next-token mass that ends a word */
    double psp;                   /* next-token mass that starts with a blank (part of pend) */
    int nt;                       /* best non-special tokens, best first */
    int32_t top[ENGINE_TOPN];
    float tv[ENGINE_TOPN];        /* their logits */
    engine_nc_dist nc;            /* the continuous cache's distribution here (nc.h) */
} node;

/* One hypothesis of the suggestion search. */
typedef struct {
    int node;                       /* index into the session's nodes */
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
    double sp;      /* of prob, the search's mass that went on with a blank: the
                       probability of its twin text + " " (suggest.c emit_spaced) */
} candidate;

enum { ENGINE_MAX_CAND = 128, ENGINE_JUNK_CACHE = 64, ENGINE_FB_KEY = 128 /* LEARN_FB_KEY_MAX */ };
/* Next keys laya_session_prefetch computes ahead: the best suggestion's
 * first character is the next key in 48% of English keystrokes, the two
 * best first characters in 55% (the median keystroke then a guess that
 * was right: docs/RESULTS.md, "Computing ahead between keys"). */
enum { ENGINE_GUESSES = 2 };

struct laya_session {
    const laya_model *lm;
    const model *m;
    model_cfg cfg;
    engine_cfg ec;

    engine_context cx;              /* context.h: the text, its stable tokens, the model states */
    uint64_t search_steps;          /* model steps of the suggestion searches */
    uint64_t search_logits;         /* full (V) logits vectors they computed */
    uint64_t ahead_steps, ahead_logits;  /* the same, of laya_session_prefetch's searches */
    /* The next characters laya_session_prefetch guesses: the first of the
     * best suggestion the last laya_suggest returned and the first of the
     * next one that begins otherwise (n_guess of them, guess_n[i] bytes
     * each; guess_done of them computed ahead already), for that context
     * (any edit clears them) and that k. */
    uint8_t guess[ENGINE_GUESSES][4];
    int guess_n[ENGINE_GUESSES], n_guess, guess_done, guess_k;

    /* Search scratch, allocated once with the session (engine_search_init). */
    beam beams[2][ENGINE_GEN_BEAMS];
    expansion pool[ENGINE_GEN_BEAMS * ENGINE_GEN_BEAMS];
    candidate cand[ENGINE_MAX_CAND];
    int n_cand;
    node nodes[ENGINE_NODES + 1];   /* the last one is the root: cur itself */
    uint64_t next_id;               /* node ids handed out */
    uint64_t nodes_ver;             /* the version of cur (cx.cur_ver) the nodes are of */
    uint64_t nodes_rewinds;         /* cx.rewinds as of the nodes' root */
    int64_t root_n;                 /* tokens consumed by the nodes' root */
    uint32_t stamp;                 /* search depth stamp */
    int root_logits_ok;
    float *root_logits;             /* (V) logits of cur, while nodes_ver == cur_ver */
    /* Full logits of nodes whose path ends where the typed tail ends (the
     * word just typed: a blank or punctuation next makes it the root),
     * ENGINE_KEPT in turn, by node id (ids are never reused; 0: none). */
    float *kept_logits;             /* (ENGINE_KEPT, V) */
    uint64_t kept_id[ENGINE_KEPT];
    int kept_next;
    float *logits;                  /* (B, V) batched logits; (V) gathered ones */
    float *ybatch;                  /* (B, H) */
    float *bscratch;                /* model_batch_scratch_floats(B) */
    float *wz, *wend;               /* (V) 1 for tokens in the normaliser / ending a word */
    float *wgen;                    /* (V) 1 for tokens a suggestion may contain */
    float *wsp;                     /* (V) 1 for tokens that start with a blank */
    float *search_mem;              /* the block all of the above floats live in */
    int32_t *ids;                   /* (V) allowed ids under a constraint */
    uint8_t out_text[ENGINE_MAX_K][ENGINE_MAX_GEN + 1];  /* NUL-terminated */

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
/* suggest.c: the candidates shown, picked as a set (see there): the
 * indices into s->cand of at most k distinct texts (in capitals when caps)
 * at or above the probability floor, in the order shown. Returns how many. */
int engine_pick(const laya_session *s, int k, int caps, int *picked);
/* blend.c: 1 while the session's memory is incognito (brought up to other
 * processes' switches first), else 0: the text typed is then not learned
 * from, by the unit memory or by the continuous cache. */
int engine_memory_incognito(laya_session *s);
/* blend.c: adds what the model file's next-word prior proposes (prior.h),
 * with trust ec.prior_weight; a candidate it has nothing for keeps its
 * probability, and nothing changes without a prior or at 0. */
void engine_blend_prior(laya_session *s);

/* The kept search node whose state is cur's after consuming token id (its
 * path from the root is the stable tokens fed since the root, then id), or
 * -1: feeding a token the last search already stepped costs a copy. */
int engine_node_next(const laya_session *s, int32_t id);
/* Allocates and frees the search scratch of a session (one block). */
laya_status engine_search_init(laya_session *s);
void engine_search_free(laya_session *s);
/* Fills lm->tflags from the tokenizer (engine_model_wrap). */
void engine_token_flags(const tok *t, int32_t V, uint8_t *flags);

#endif
