/* nc.h - private to src/engine: the continuous cache (nc.c), the text
 * typed so far as a memory of (output vector, next token) pairs; the
 * search's scoring plug-in, mixed into the model's next-token
 * probabilities at every search node.
 *
 * ENGINE_NC_SIZE: the positions it holds; ENGINE_NC_THETA: the sharpness
 * of its softmax over cosines; ENGINE_NC_RAMP: engine_nc_trust (the three
 * tuned, in tuned.h); ENGINE_NC_TOP: the tokens of a node's distribution
 * kept.
 *
 * Shape letters: V vocab, H hidden, G the q8 group, M the window (m),
 * R the ring's rows (M + NC_SLACK, nc.c), NB = NC_BATCH nodes scored
 * together (nc.c). */
#ifndef LAYA_ENGINE_NC_H
#define LAYA_ENGINE_NC_H

#include "engine/context.h"
#include "engine/tuned.h"

enum { ENGINE_NC_TOP = 16 };

/* The cache's distribution at one search node, valid while ver is the
 * context's cur_ver + 1: its ENGINE_NC_TOP most likely tokens and their
 * cache probabilities (n of them; 0: no text yet). */
typedef struct {
    uint64_t ver;
    int n;
    int32_t id[ENGINE_NC_TOP];
    float p[ENGINE_NC_TOP];
    float null;                 /* the share no position of the window takes */
} engine_nc_dist;

/* The unit output vectors y of the last m positions of the stable text,
 * each with the position it was produced at (pos; its target is the
 * context's tok[pos]); m 0: off. */
typedef struct {
    int m;
    int H, V;                   /* the model's */
    float w;                    /* the weight of this search (set by the search: 0 when
                                   learning is off, incognito or in a private field) */
    int mixing;                 /* engine_nc_mark: a node's distribution is in acc */
    double l1m;                 /* then log(keep) */
    double keep;                /* the model's share: 1 - w (1 - the node's null) */
    uint8_t *panel;             /* (R, H) the unit vectors in q8, in the kernels' panel
                                   form (a ring a little longer than the window) */
    uint8_t *rowq;              /* (H) scratch: one row's codes, */
    float *rowsb;               /* (2 H/G) and its scales and biases */
    int64_t *pos;               /* (R) */
    float *acc;                 /* (V) zeroed scratch */
    float *sim;                 /* (NB, max(R, H)) scratch: similarities */
    float *x;                   /* (NB, H) scratch: the vectors scored together */
    int32_t *touch;             /* (M) scratch */
} engine_nc;

/* Sizes nc for m positions of a model of shape c (0: none), freeing what
 * it held; LAYA_ERR_NOMEM leaves it off. */
laya_status engine_nc_init(engine_nc *nc, const model_cfg *c, int m);
void engine_nc_free(engine_nc *nc);
/* Stores cur's output vector (the context just fed a token); a position
 * whose target lies in a secret or a private field leaves the window. */
void engine_nc_record(engine_nc *nc, const engine_context *cx, int private_field);
/* Whether the search mixes it in: positions held and a weight w > 0. */
int engine_nc_on(const engine_nc *nc);
/* The share of its weight the cache gets with the positions it holds now,
 * n / (n + ENGINE_NC_RAMP) (nc.c says why). */
double engine_nc_trust(const engine_nc *nc, const engine_context *cx);
/* Computes the distributions d[i] of n nodes of output vectors y[i] (H)
 * where stale (repeats and fresh ones skipped; one pass over the ring for
 * every NB). */
void engine_nc_ensure_batch(engine_nc *nc, const engine_context *cx, engine_nc_dist *const *d,
                            const float *const *y, int n);
/* engine_nc_mark(nc, d, 1) makes d the distribution engine_nc_mix mixes
 * into a model log-probability lpm of token id, in O(1) (lpm unchanged
 * where the cache is off or d is empty); engine_nc_mark(nc, d, 0) clears
 * it. */
void engine_nc_mark(engine_nc *nc, const engine_nc_dist *d, int on);
double engine_nc_mix(const engine_nc *nc, int32_t id, double lpm);
/* A node's word-end mass pend with the cache's share (wend (V): 1 for the
 * tokens that end a word). */
double engine_nc_pend(const engine_nc *nc, const engine_nc_dist *d, double pend, const float *wend);

#endif
