/* search.h - private to src/engine: the suggestion search (suggest.c), a
 * prefix-constrained beam search over tokens from the context's stable
 * state, as a component of its own: its nodes and beams, the candidate
 * list it fills, its scratch and counters, and the next keys computed
 * ahead. It reads the context (context.h) and scores with the continuous
 * cache plugged in (nc.h).
 *
 * Shape letters: V vocab, H hidden, B = ENGINE_GEN_BEAMS beams, S
 * model_state_floats. */
#ifndef LAYA_ENGINE_SEARCH_H
#define LAYA_ENGINE_SEARCH_H

#include "engine/context.h"
#include "engine/nc.h"

/* ENGINE_NODES: search nodes kept; ENGINE_TOPN: best tokens a node's
 * summary keeps; ENGINE_GEN_BEAMS: the beams of one depth of the search:
 * up to the beam width that have matched the typed tail and as many that
 * have not yet (suggest.c, next_generation). */
enum { ENGINE_NODES = 48, ENGINE_TOPN = 24, ENGINE_GEN_BEAMS = 2 * ENGINE_MAX_BEAM };
/* ENGINE_KEPT: full logits vectors kept for nodes that may become the root
 * (suggest.c, keep_logits). */
enum { ENGINE_KEPT = 4 };
enum { ENGINE_MAX_CAND = 128 };

/* A search node: the model state after the stable tokens and then a path
 * of tokens, with what the search needs of its logits once the typed tail
 * is matched (the summary). Nodes are keyed by (parent id, token) and kept
 * across keystrokes while the stable state (cur) does not change, so a
 * search that walks a path an earlier one walked steps no model. */
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
    int node;                       /* index into the search's nodes */
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

/* The candidate list: what the search fills and the experts (blend.c)
 * rescore, one after the other; engine_pick picks the k shown from it. */
typedef struct {
    candidate cand[ENGINE_MAX_CAND];
    int n;
} engine_cands;

/* The next characters laya_session_prefetch guesses (engine.c): the first
 * of the best suggestion the last laya_suggest returned and the first of
 * the next one that begins otherwise (n of them, len[i] bytes each; done
 * of them computed ahead already), for that context (any edit clears them)
 * and that k. */
typedef struct {
    uint8_t text[ENGINE_GUESSES][4];
    int len[ENGINE_GUESSES], n, done, k;
} engine_guesses;

/* What one search completes, read from the context (engine_search_query):
 * the unfinished tail, in lowercase when typed in capitals (caps: the
 * candidates are shown in capitals), the character the context leaves
 * incomplete (lead), and whether the context ends in a CJK character. */
typedef struct {
    const uint8_t *tail;            /* the context's tail, or folded */
    int m;                          /* its length */
    int caps;
    uint8_t folded[ENGINE_MAX_TAIL];
    uint8_t lead[4];
    int nlead;
    int after_cjk;
    int k;                          /* suggestions asked for (at most ENGINE_MAX_K) */
} engine_query;

typedef struct {
    beam beams[2][ENGINE_GEN_BEAMS];
    expansion pool[ENGINE_GEN_BEAMS * ENGINE_GEN_BEAMS];
    engine_cands cands;
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
    float *search_mem;              /* (ENGINE_NODES (S + H) + (B + 1 + ENGINE_KEPT + 4) V + B H
                                       + bscratch) the block all of the above floats live in */
    int32_t *ids;                   /* (V) allowed ids under a constraint */
    uint8_t out_text[ENGINE_MAX_K][ENGINE_MAX_GEN + 1];  /* the list shown, NUL-terminated */
    uint64_t search_steps;          /* model steps of the suggestion searches */
    uint64_t search_logits;         /* full (V) logits vectors they computed */
    uint64_t ahead_steps, ahead_logits;  /* the same, of laya_session_prefetch's searches */
    engine_guesses guesses;
} engine_search;

/* Allocates the search scratch for model lm (one block) and its token
 * masks; LAYA_ERR_NOMEM leaves what was allocated for engine_search_free. */
laya_status engine_search_init(engine_search *sr, const laya_model *lm);
void engine_search_free(engine_search *sr);

/* The tail of cx's text to complete for k suggestions into *q; 0 when
 * there is nothing to complete (k 0, or a tail longer than any word). */
int engine_search_query(const engine_context *cx, int k, engine_query *q);
/* The search proper: fills sr->cands with the model's candidates for q
 * (the cache nc mixed in at its weight nc->w), their probabilities
 * conditional on the typed tail and their scores set. */
void engine_search_run(engine_search *sr, const engine_query *q, const engine_context *cx, const laya_model *lm,
                       const engine_cfg *ec, engine_nc *nc);

/* The kept search node's state after cur's and then token id (its path
 * from the root is the stable tokens fed since the root, then id), or
 * NULL: feeding a token the last search already stepped costs a copy. */
const ckpt *engine_search_known(const engine_search *sr, const engine_context *cx, int32_t id);

/* The score a candidate ranks by: engine_rank_score with ec's len_exp. */
double engine_cand_score(const engine_cfg *ec, const uint8_t *text, int len, double prob);
/* The candidates shown, picked as a set (suggest.c): the indices into
 * cl->cand of at most k distinct texts (in capitals when caps) at or above
 * the probability floor, in the order shown. Returns how many. */
int engine_pick(const engine_cands *cl, const engine_cfg *ec, int k, int caps, int *picked);

#endif
