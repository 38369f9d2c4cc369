/* suggest.c - a keystroke's suggestions: engine_suggest (at the end) reads
 * top to bottom as the steps, context -> search -> experts -> pick, over
 * the session's components; and the search component itself (search.h), a
 * prefix-constrained beam search over tokens from the context's stable
 * state, with the pick of the k shown from its candidates.
 *
 * The unfinished tail (the half-typed word with its leading space, or the
 * last bytes of a CJK run) constrains the first tokens: a token is allowed if
 * its bytes extend what remains of the tail (tok_extending) or are a proper
 * prefix of it (tok_prefixes). While constrained, only the allowed ids get
 * logits (model_logits_ids), scored by the model's own probability (the
 * node's full normaliser, not a softmax among the allowed ids): a split the
 * model never saw in training, such as a CJK character cut into its bytes,
 * then keeps the low probability the model gives it instead of being forced
 * to certainty, and the canonical paths win the beam. The probability of the
 * tail itself (the mass of every expansion that covers it) divides the
 * candidates at the end, so a suggestion's probability is conditional on what
 * was typed. Once the tail is matched, full logits are used and every byte
 * produced is suggestion text.
 *
 * A beam's text becomes a candidate when the model expects a word to end
 * there: its probability is the beam's times the next-token mass that starts
 * with a boundary (space, punctuation, newline, end of text, a CJK character).
 * Beams continue into the next words up to max_words, max_tokens and
 * max_bytes, never across a newline, and stop after a sentence end.
 * Candidates reached by several token paths add up. They are ranked by
 * prob * saved^len_exp (engine_rank_score; len_exp = 1: the expected
 * keystrokes saved), where saved is the candidate's characters, less one
 * for a candidate that starts with a CJK character: accepting costs a
 * keystroke (docs/EVALUATION.md), and without the -1 the sure one-character
 * CJK suggestions, which save nothing, crowded out the two-character words
 * (Chinese CSR@3 0.117 -> 0.124, CSR@1 0.073 -> 0.085 on 2,000 chars). In
 * alphabetic text the plain count ranked better (0.1-0.2 points of KSR on
 * two 6,000-character slices) and is kept. The k shown are then picked
 * from the candidates as a set (engine_pick, below).
 *
 * Cost (the keystroke path). Each depth of the search is one batched model
 * step for all of its new beams (model_step_batch: every matrix streamed once
 * for the batch) and one batched logits product for every beam whose node
 * has no summary yet (model_logits_batch, summarize_free: the normaliser a
 * beam under the constraint needs, everything a matched one expands from);
 * a beam still under the constraint then reads its allowed ids' logits
 * (model_logits_ids), or all V of them when the tail allows more than V/4
 * tokens; the root's full logits are kept until the stable state changes
 * (typing on inside a word re-expands the root with every character). A
 * root rerooted onto a
 * summarized node (the usual case at a word's end, and in CJK text at
 * every fourth character, where a 4-character chunk becomes stable) needs
 * no full logits for its summary, and a blank's many allowed tokens take
 * the full logits the last search kept for that node (keep_logits: the
 * word just typed, or the word before a blank computed ahead). Every state the
 * search computes is a node kept for later keystrokes, keyed by its token
 * path from the stable state, with the summary of its logits (normaliser,
 * word-end mass, best tokens): typing on inside a word, which leaves the
 * stable state unchanged, re-walks mostly known paths at no model cost, and
 * the suggestions are exactly those of a search from scratch.
 * Budget: a search visits at most ec.max_steps nodes (each a model step when
 * not known), counted the same whether known or not so that the suggestions
 * never depend on what earlier keystrokes left behind. One keystroke thus
 * costs at most max_steps model steps, in about max_steps / beam batched
 * passes, and one batched logits product per depth. A beam that will not
 * expand (a leaf) is computed only if its candidate could still rank among
 * the k shown (hopeless_leaf: an exact bound, tested against the unpruned
 * search); most of the last depth's leaves cannot (laya bench: model steps
 * per keystroke -20% in English, -15% in Chinese).
 *
 * Numerics: log-probabilities in double; softmax by max subtraction, so no
 * overflow for any float logits. Everything lives in the search's scratch
 * (engine_search_init, one block): no allocation here. Memory: ENGINE_NODES
 * states of S + H floats and (ENGINE_GEN_BEAMS + ENGINE_KEPT + 5) V floats
 * with the batch's scratch, 1.8 MB for the shipped model (V = 8192, H =
 * 384, S = 3072). */
#include "engine/session.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/topk.h"
#include "util/utf8.h"
#include "kern/kern.h"

/* ---- per-token flags ---- */

static int boundary_byte(uint8_t b) {
    if (b < 0x20 || b == ' ' || b == 0x7F) return 1;
    if (b < 0x80) return b != '\'' && b != '-' && b != '_' && !(b >= '0' && b <= '9') &&
                         !(b >= 'A' && b <= 'Z') && !(b >= 'a' && b <= 'z');
    return utf8_lead_ends_word(b);
}

void engine_token_flags(const tok *t, int32_t V, uint8_t *flags) {
    int32_t tv = tok_vocab_size(t);
    for (int32_t id = 0; id < V; id++) {
        size_t n = 0;
        const uint8_t *b = id < tv ? tok_bytes(t, id, &n) : NULL;
        if (!b || n == 0) {
            flags[id] = TF_SPECIAL;
            continue;
        }
        uint8_t f = boundary_byte(b[0]) ? TF_BOUNDARY : 0;
        if (b[0] == ' ') f |= TF_BLANK;
        for (size_t i = 0; i < n; i++)
            if (b[i] < 0x20 || b[i] == 0x7F) f |= TF_STOP;
        flags[id] = f;
    }
}

/* ---- search scratch and nodes ---- */

laya_status engine_search_init(engine_search *sr, const laya_model *lm) {
    const model_cfg *c = &lm->m->cfg;
    size_t per = model_state_floats(c) + (size_t)c->H;
    size_t total = ENGINE_NODES * per + (size_t)(ENGINE_GEN_BEAMS + 1 + ENGINE_KEPT) * (size_t)c->V +
                   (size_t)ENGINE_GEN_BEAMS * (size_t)c->H + model_batch_scratch_floats(c, ENGINE_GEN_BEAMS) +
                   4 * (size_t)c->V;
    sr->search_mem = malloc(total * sizeof(float));
    sr->ids = malloc((size_t)c->V * sizeof(int32_t));
    if (!sr->search_mem || !sr->ids) return LAYA_ERR_NOMEM;
    float *p = sr->search_mem;
    for (int i = 0; i < ENGINE_NODES; i++) {
        node *n = &sr->nodes[i];
        model_state_place(c, &n->c.st, p);  /* node_new copies its parent in */
        p += model_state_floats(c);
        n->c.y = p;
        p += c->H;
        n->id = 0;
    }
    sr->root_logits = p;
    p += c->V;
    sr->kept_logits = p;
    p += (size_t)ENGINE_KEPT * (size_t)c->V;
    for (int i = 0; i < ENGINE_KEPT; i++) sr->kept_id[i] = 0;
    sr->kept_next = 0;
    sr->logits = p;
    p += (size_t)ENGINE_GEN_BEAMS * (size_t)c->V;
    sr->ybatch = p;
    p += (size_t)ENGINE_GEN_BEAMS * (size_t)c->H;
    sr->bscratch = p;
    p += model_batch_scratch_floats(c, ENGINE_GEN_BEAMS);
    /* Which tokens the normaliser and the word-end mass count, and which
     * may be generated (summarize). */
    const uint8_t *fl = lm->tflags;
    sr->wz = p;
    sr->wend = p + c->V;
    sr->wgen = p + 2 * (size_t)c->V;
    sr->wsp = p + 3 * (size_t)c->V;
    for (int32_t i = 0; i < c->V; i++) {
        int next = !(fl[i] & TF_SPECIAL) || i == TOK_EOS;
        sr->wz[i] = next ? 1.0f : 0.0f;
        sr->wend[i] = next && (i == TOK_EOS || (fl[i] & (TF_BOUNDARY | TF_STOP))) ? 1.0f : 0.0f;
        sr->wgen[i] = fl[i] & (TF_SPECIAL | TF_STOP) ? 0.0f : 1.0f;
        sr->wsp[i] = fl[i] & TF_BLANK ? 1.0f : 0.0f;
    }
    sr->next_id = 1;
    return LAYA_OK;
}

void engine_search_free(engine_search *sr) {
    free(sr->search_mem);
    free(sr->ids);
    sr->search_mem = NULL;
    sr->ids = NULL;
}

/* The kept node for the parent's path plus token id, or -1. */
static int node_find(const engine_search *sr, int parent, int32_t id) {
    uint64_t pid = sr->nodes[parent].id;
    for (int i = 0; i < ENGINE_NODES; i++)
        if (sr->nodes[i].id && sr->nodes[i].parent == pid && sr->nodes[i].tok == id) return i;
    return -1;
}

/* The kept node whose path from the root is the stable tokens the model
 * has consumed since the root (cur's state: the root itself when none),
 * or -1 when the nodes are not of this text (a rewind since) or lack it. */
static int node_at_cur(const engine_search *sr, const engine_context *cx) {
    if (!sr->nodes[ENGINE_NODES].id || cx->rewinds != sr->nodes_rewinds || cx->cur.st.n < sr->root_n ||
        (size_t)cx->cur.st.n > cx->n_tok)
        return -1;
    int at = ENGINE_NODES;
    for (int64_t t = sr->root_n; t < cx->cur.st.n && at >= 0; t++) at = node_find(sr, at, cx->tok[t]);
    return at;
}

const ckpt *engine_search_known(const engine_search *sr, const engine_context *cx, int32_t id) {
    int at = node_at_cur(sr, cx);
    int ni = at >= 0 ? node_find(sr, at, id) : -1;
    return ni >= 0 ? &sr->nodes[ni].c : NULL;
}

/* A fresh node for the parent's path plus token id, the parent's state
 * copied in (to be stepped): the slot of the least recently used node that
 * no beam of this depth or the last one holds. -1 if none (cannot happen
 * while ENGINE_NODES >= 2 * ENGINE_GEN_BEAMS). */
static int node_new(engine_search *sr, const model_cfg *c, int parent, int32_t id) {
    int victim = -1;
    for (int i = 0; i < ENGINE_NODES; i++) {
        const node *n = &sr->nodes[i];
        if (!n->id) { victim = i; break; }
        if (n->used + 1 >= sr->stamp) continue;  /* held by a live beam */
        if (victim < 0 || n->used < sr->nodes[victim].used) victim = i;
    }
    if (victim < 0) return -1;
    node *n = &sr->nodes[victim];
    const node *p = &sr->nodes[parent];
    n->id = sr->next_id++;
    n->parent = p->id;
    n->tok = id;
    n->used = sr->stamp;
    n->has_sum = 0;
    n->nc.ver = 0;
    model_state_copy(c, &n->c.st, &p->c.st);
    memcpy(n->c.y, p->c.y, (size_t)c->H * sizeof(float));
    return victim;
}

/* ---- helpers ---- */

static int is_space(uint8_t b) { return b == ' ' || b == '\t'; }

/* Maximal runs of non-space bytes in s[0..n): the words a text spans. */
static int count_words(const uint8_t *s, int n) {
    int w = 0;
    for (int i = 0; i < n; i++)
        if (!is_space(s[i]) && (i == 0 || is_space(s[i - 1]))) w++;
    return w;
}

static int ends_sentence(const uint8_t *s, int n) {
    if (n == 0) return 0;
    uint8_t c = s[n - 1];
    if (c == '.' || c == '!' || c == '?') return 1;
    /* 。 ！ ？ */
    return n >= 3 && ((s[n - 3] == 0xE3 && s[n - 2] == 0x80 && s[n - 1] == 0x82) ||
                      (s[n - 3] == 0xEF && s[n - 2] == 0xBC && (s[n - 1] == 0x81 || s[n - 1] == 0x9F)));
}

/* The search state that is the same for every beam of one call. */
typedef struct {
    engine_search *sr;
    const engine_context *cx;
    const laya_model *lm;
    const model *mod;
    const engine_cfg *ec;
    engine_nc *nc;         /* the continuous cache, mixed in (nc.h) */
    const uint8_t *tail;   /* the typed, unfinished tail (engine_query) */
    int m;                 /* its length */
    const uint8_t *lead;   /* a character the context leaves incomplete */
    int nlead;
    int width;
    int np;                /* expansions in sr->pool */
    int budget;            /* nodes this search may visit: ec.max_steps, or
                              ec.cjk_steps after a CJK character */
    int steps_left;        /* of which it may still visit */
    double pmass;          /* probability of the typed tail: the mass of every
                              expansion that covers it (see expand_constrained) */
    int k;                 /* suggestions asked for (0: no pruning by the k-th best) */
    int split;             /* beams past the tail and inside it get width
                              slots each (expand_constrained) */
    int after_cjk;         /* the context ends in a CJK character */
} search;

/* Word boundaries (issue 39): right after a CJK character, the continuous
 * cache proposes no token of its own that begins with an ASCII letter or
 * digit: the cache's states after a Chinese word can resemble those at a
 * line start, and "我们明天" was offered "Thus" / "Th" after one committed
 * English line. The model's own tokens keep their probability (mixed
 * Chinese and English the model knows still comes). */
static int cache_token_allowed(const search *q, const beam *b, int32_t id) {
    if (!q->after_cjk || b->glen) return 1;
    size_t n;
    const uint8_t *t = tok_bytes(q->mod->tok, id, &n);
    const uint8_t c = n ? t[0] : 0;
    return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'));
}

/* 1 iff lead + gen + add is valid UTF-8 so far (complete or not). */
static int utf8_ok(const search *q, const uint8_t *gen, int glen, const uint8_t *add, int alen,
                   int need_complete) {
    uint8_t buf[4 + 2 * ENGINE_MAX_GEN];
    memcpy(buf, q->lead, (size_t)q->nlead);
    if (glen) memcpy(buf + q->nlead, gen, (size_t)glen);
    if (alen) memcpy(buf + q->nlead + glen, add, (size_t)alen);
    int r = utf8_check(buf, (size_t)(q->nlead + glen + alen));
    return need_complete ? r == 0 : r >= 0;
}

/* 1 if b's text may be a candidate: not empty, not ending in a blank, whole
 * UTF-8 (with the lead the context left incomplete). */
static int emittable(const search *q, const beam *b) {
    if (b->glen == 0 || is_space(b->gen[b->glen - 1])) return 0;
    return utf8_ok(q, b->gen, b->glen, NULL, 0, 1);
}

/* The candidate with b's text, or -1. */
static int cand_find(const engine_cands *cl, const beam *b) {
    for (int i = 0; i < cl->n; i++)
        if (cl->cand[i].len == b->glen && !memcmp(cl->cand[i].text, b->gen, (size_t)b->glen)) return i;
    return -1;
}

/* Adds prob (and sp: of it, the mass that goes on with a blank) to the
 * candidate with b's text, a new one if there is none; a full list gives up
 * its least likely for it, if that is less likely. */
static void cand_add(engine_cands *cl, const beam *b, double prob, double sp) {
    int at = cand_find(cl, b);
    if (at >= 0) {
        cl->cand[at].prob += prob;
        cl->cand[at].sp += sp;
        return;
    }
    int slot = cl->n;
    if (slot == ENGINE_MAX_CAND) {
        /* Full: replace the least likely. */
        slot = 0;
        for (int i = 1; i < cl->n; i++)
            if (cl->cand[i].prob < cl->cand[slot].prob) slot = i;
        if (cl->cand[slot].prob >= prob) return;
    } else {
        cl->n++;
    }
    candidate *c = &cl->cand[slot];
    memcpy(c->text, b->gen, (size_t)b->glen);
    c->len = b->glen;
    c->prob = prob;
    c->sp = sp;
}

/* b's text as a candidate of probability prob, of which sp goes on with a
 * blank (emit_spaced offers that twin). */
static void emit(search *q, const beam *b, double prob, double sp) {
    if (prob > 0 && emittable(q, b)) cand_add(&q->sr->cands, b, prob, sp);
}

/* 1 if the text gen[0..glen) may have a twin with one blank more: it ends
 * in an ASCII byte (alphabetic text, not a CJK word) and the blank fits in
 * max_bytes. */
static int spaceable(const engine_cfg *ec, const uint8_t *gen, int glen) {
    return glen > 0 && glen + 1 <= ec->max_bytes && gen[glen - 1] < 0x80;
}

/* b's text and a blank, as a candidate of probability prob: a word the
 * text goes on from with a blank saves that keystroke too (spaceable
 * texts only). (emit refuses a text that ends in a blank: this is the one
 * way in for one.) */
static void emit_spaced(search *q, const beam *b, double prob) {
    engine_search *sr = q->sr;
    if (!(prob > 0) || !emittable(q, b) || !spaceable(q->ec, b->gen, b->glen)) return;
    beam t = *b;
    t.gen[t.glen++] = ' ';
    cand_add(&sr->cands, &t, prob, 0);
}

static int expansion_beats(const void *x, const void *y) {
    return ((const expansion *)x)->lp > ((const expansion *)y)->lp;
}

/* Adds expansion (parent, id, lp) to the pool, keeping per list only the
 * best q->width (the list starts at pool[start]; a parent has one list, or
 * two while constrained: see expand_constrained): the pool is then at most
 * ENGINE_GEN_BEAMS^2. */
static void pool_add(search *q, int start, int parent, int32_t id, double lp) {
    int n = q->np - start;
    expansion e = {.parent = parent, .id = id, .lp = lp};
    topk_insert(q->sr->pool + start, sizeof e, &n, q->width, &e, expansion_beats);
    q->np = start + n;
}

/* Keeps lg (V), the full logits of node id, for reroot: the node's path
 * ends where the typed tail ends (or, computing ahead, where a guessed blank
 * or punctuation begins), so the next key, a blank or punctuation, may make
 * it the root, whose logits a blank's many allowed tokens need. The kernels
 * give a row the same bits whichever product computed it (tests/test_kern.c:
 * consistent), so the kept vector is the one the root would compute. */
static void keep_logits(engine_search *sr, int32_t V, uint64_t id, const float *lg) {
    for (int i = 0; i < ENGINE_KEPT; i++)
        if (sr->kept_id[i] == id) return;
    const int k = sr->kept_next;
    memcpy(sr->kept_logits + (size_t)k * (size_t)V, lg, (size_t)V * sizeof(float));
    sr->kept_id[k] = id;
    sr->kept_next = (k + 1) % ENGINE_KEPT;
}

/* Expands a beam that has not matched the whole tail yet. */
static void expand_constrained(search *q, int bi) {
    engine_search *sr = q->sr;
    const model *m = q->mod;
    const tok *tk = m->tok;
    const uint8_t *fl = q->lm->tflags;
    beam *b = &sr->beams[0][bi];
    int32_t V = q->mod->cfg.V;
    const uint8_t *rem = q->tail + b->r;
    size_t rn = (size_t)(q->m - b->r);
    size_t n1 = tok_extending(tk, rem, rn, sr->ids, (size_t)V);
    if (n1 > (size_t)V) n1 = (size_t)V;
    size_t n2 = tok_prefixes(tk, rem, rn, sr->ids + n1, (size_t)V - n1);
    if (n2 > (size_t)V - n1) n2 = (size_t)V - n1;
    int n = 0;
    for (size_t i = 0; i < n1 + n2; i++) {
        int32_t id = sr->ids[i];
        if (id < 0 || id >= V || (fl[id] & TF_SPECIAL)) continue;
        size_t tn;
        const uint8_t *tb = tok_bytes(tk, id, &tn);
        if (tn > rn) {
            /* Goes past the tail: what it adds must be fit to show. */
            if ((fl[id] & TF_STOP) || (int)(tn - rn) > q->ec->max_bytes) continue;
            if (!utf8_ok(q, NULL, 0, tb + rn, (int)(tn - rn), 0)) continue;
        }
        sr->ids[n++] = id;
    }
    if (n == 0) return;
    float *lg = sr->logits;
    const node *nd = &sr->nodes[b->node];
    if (b->node == ENGINE_NODES && (sr->root_logits_ok || n > V / 4)) {
        /* The root: its full logits serve every tail typed on the same state
         * (kept from summarize_free, or computed here once). */
        if (!sr->root_logits_ok) {
            model_logits(m, nd->c.y, sr->root_logits);
            sr->root_logits_ok = 1;
            sr->search_logits++;
        }
        for (int i = 0; i < n; i++) lg[i] = sr->root_logits[sr->ids[i]];
    } else if (n > V / 4) {
        /* (many tokens allowed: the rest of the tail begins a chunk, a blank
         * typed ahead, and the node is the word before it) */
        float *all = sr->logits + V;
        model_logits(m, sr->nodes[b->node].c.y, all);
        sr->search_logits++;
        keep_logits(sr, V, nd->id, all);
        for (int i = 0; i < n; i++) lg[i] = all[sr->ids[i]];
    } else {
        model_logits_ids(m, sr->nodes[b->node].c.y, sr->ids, n, lg);
    }
    /* Two lists: the tokens that finish the tail and those that consume
     * only part of it. A part's probability is not comparable with a whole
     * word's: " up" (e^-7.9 after "thanks for the") is mostly the mass of
     * " up" + " ", and " " (e^-6.6) of every word, while " update" (e^-12.8)
     * is all about the word typed; in one list of three the splits crowded
     * the word out and "the upd" was completed by " upd"+"o"+"or". Each list
     * keeps its best width (next_generation admits width of each kind). */
    engine_nc_mark(q->nc, &nd->nc, 1);  /* the node's cache distribution: engine_search_run's batch */
    int start = q->np;
    for (int pass = 0; pass < 2; pass++) {
        if (q->split) start = q->np;
        for (int i = 0; i < n; i++) {
            size_t tn;
            tok_bytes(tk, sr->ids[i], &tn);
            if ((tn >= rn) != (pass == 0)) continue;
            double lp = b->lp + engine_nc_mix(q->nc, sr->ids[i], (double)lg[i] - nd->lz);
            if (pass == 0) q->pmass += exp(lp);
            pool_add(q, start, bi, sr->ids[i], lp);
        }
    }
    engine_nc_mark(q->nc, &nd->nc, 0);
}

/* The summary of a node's logits lg (V) that a free expansion needs: the
 * log normaliser over every token that may come next (specials excluded,
 * end of text included), the share of that mass which ends a word, and the
 * ENGINE_TOPN highest tokens that may be generated. */
static void summarize(const engine_search *sr, int32_t V, const float *lg, node *nd) {
    /* Terms below e^-40 of the largest are dropped: at most V e^-40 < 1e-13
     * of the sum for any V <= 65536 (kern.h: logit_mass). */
    float mx;
    double z, zend;
    double zsp;
    kern_get()->logit_mass(lg, sr->wz, sr->wend, sr->wsp, V, &mx, &z, &zend, &zsp);
    nd->lz = (double)mx + log(z);
    nd->pend = zend / z;
    nd->psp = zsp / z;
    /* Best tokens: those that may be generated (sr->wgen). */
    int nt = kern_get()->logit_top(lg, sr->wgen, V, ENGINE_TOPN, nd->top, nd->tv);
    nd->nt = nt;
    nd->has_sum = 1;
}

/* Summarizes the node of every beam whose node lacks it (constrained beams
 * need the normaliser, matched ones everything): one batched logits product
 * for all of them. */
static void summarize_free(search *q, int nb) {
    engine_search *sr = q->sr;
    const int H = q->mod->cfg.H;
    const int32_t V = q->mod->cfg.V;
    int idx[ENGINE_GEN_BEAMS], at_end[ENGINE_GEN_BEAMS], n = 0;
    for (int i = 0; i < nb; i++) {
        const beam *b = &sr->beams[0][i];
        /* (a root rerooted onto a summarized node keeps its summary; its
         * logits are computed only if a tail needs many of them) */
        if (b->node < 0 || sr->nodes[b->node].has_sum) continue;
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= idx[j] == b->node;
        if (dup) continue;
        memcpy(sr->ybatch + (size_t)n * H, sr->nodes[b->node].c.y, (size_t)H * sizeof(float));
        at_end[n] = q->m > 0 && b->r == q->m && b->glen == 0;
        idx[n++] = b->node;
    }
    if (n == 0) return;
    model_logits_batch(q->mod, sr->ybatch, n, sr->logits);
    sr->search_logits += (uint64_t)n;
    for (int j = 0; j < n; j++) {
        const float *lg = sr->logits + (size_t)j * V;
        if (idx[j] == ENGINE_NODES && !sr->root_logits_ok) {
            memcpy(sr->root_logits, lg, (size_t)V * sizeof(float));
            sr->root_logits_ok = 1;
        } else if (idx[j] != ENGINE_NODES && at_end[j]) {
            keep_logits(sr, V, sr->nodes[idx[j]].id, lg);
        }
        summarize(sr, V, lg, &sr->nodes[idx[j]]);
    }
}

/* Scores a beam that has matched the tail (its node summarized): emits its
 * text as a candidate and expands it with the best admissible next tokens. */
static void expand_free(search *q, int bi) {
    engine_search *sr = q->sr;
    const tok *tk = q->mod->tok;
    const beam *b = &sr->beams[0][bi];
    const node *nd = &sr->nodes[b->node];  /* its cache distribution: engine_search_run's batch */
    /* the word-end mass with the cache's share (engine_nc_pend), of which
     * the model's share of blanks goes on with one */
    double pe = exp(b->lp) * engine_nc_pend(q->nc, &nd->nc, nd->pend, sr->wend);
    double psp = nd->pend > 0 ? pe * (nd->psp / nd->pend) : 0;
    if (!(psp <= pe)) psp = pe;
    if (!spaceable(q->ec, b->gen, b->glen)) psp = 0;
    emit(q, b, pe, psp);
    emit_spaced(q, b, psp);
    if (b->ntok >= q->ec->max_tokens || ends_sentence(b->gen, b->glen)) return;
    /* The node's best tokens, and the cache's (mixed: engine_nc_mix), best
     * first. */
    expansion top[ENGINE_TOPN + ENGINE_NC_TOP];
    int ntop = 0;
    engine_nc_mark(q->nc, &nd->nc, 1);
    for (int i = 0; i < nd->nt; i++) {
        expansion e = {.id = nd->top[i], .lp = engine_nc_mix(q->nc, nd->top[i], (double)nd->tv[i] - nd->lz)};
        topk_insert(top, sizeof e, &ntop, ENGINE_TOPN + ENGINE_NC_TOP, &e, expansion_beats);
    }
    if (engine_nc_on(q->nc)) {
        /* the cache's tokens outside the node's best: their logits */
        int32_t ids[ENGINE_NC_TOP];
        float lgs[ENGINE_NC_TOP];
        int n = 0;
        for (int i = 0; i < nd->nc.n; i++) {
            int32_t id = nd->nc.id[i];
            int dup = !(sr->wgen[id] > 0) || !cache_token_allowed(q, b, id);
            for (int j = 0; j < nd->nt && !dup; j++) dup = nd->top[j] == id;
            if (!dup) ids[n++] = id;
        }
        if (n) model_logits_ids(q->mod, nd->c.y, ids, n, lgs);
        for (int i = 0; i < n; i++) {
            expansion e = {.id = ids[i], .lp = engine_nc_mix(q->nc, ids[i], (double)lgs[i] - nd->lz)};
            topk_insert(top, sizeof e, &ntop, ENGINE_TOPN + ENGINE_NC_TOP, &e, expansion_beats);
        }
    }
    engine_nc_mark(q->nc, &nd->nc, 0);
    int start = q->np, taken = 0;
    for (int i = 0; i < ntop && taken < q->width; i++) {
        size_t tn;
        const uint8_t *tb = tok_bytes(tk, top[i].id, &tn);
        if (b->glen + (int)tn > q->ec->max_bytes) continue;
        if (!utf8_ok(q, b->gen, b->glen, tb, (int)tn, 0)) continue;
        uint8_t tmp[2 * ENGINE_MAX_GEN];
        memcpy(tmp, b->gen, (size_t)b->glen);
        memcpy(tmp + b->glen, tb, tn);
        if (count_words(tmp, b->glen + (int)tn) > q->ec->max_words) continue;
        pool_add(q, start, bi, top[i].id, b->lp + top[i].lp);
        taken++;
    }
}

double engine_rank_score(const uint8_t *text, int len, double prob, float len_exp) {
    size_t i = 0;
    while (i < (size_t)len && is_space(text[i])) i++;
    double saved = (double)utf8_count(text, (size_t)len);
    if (i < (size_t)len && utf8_cjk_at(text, (size_t)len, i)) saved -= 1;
    return prob * pow(saved, (double)len_exp);
}

/* The score a candidate ranks by (before the division by the tail's mass,
 * which all candidates share). */
double engine_cand_score(const engine_cfg *ec, const uint8_t *text, int len, double prob) {
    return engine_rank_score(text, len, prob, ec->len_exp);
}

/* ---- the list shown: k suggestions chosen as a set ----
 *
 * The typist takes the longest suggestion the text goes on with, so a
 * suggestion that extends another one shown by whole words ("nd the" after
 * "nd") saves only its extra characters: listing both spends a place on
 * what the shorter one already offers. The k shown are picked greedily:
 * first the best by score, then each time the candidate that adds most,
 * its probability times its saving beyond the longest shown text it
 * extends by whole words (pick_gain; ties: the higher score, then the
 * earlier). Only whole-word extensions count as covered ("n" for "an" does
 * not cover "nd" for "and"), so in CJK text, with no blanks, the picks are
 * the k best by score as before. What a candidate adds is at least its
 * probability times the saving of its last word (pick_floor: as if every
 * earlier word of it were shown), which never falls as the search goes on,
 * so the k-th best such floor bounds the pruning (kth_score) exactly: a
 * candidate whose score is below it adds less than any pick at every step.
 * English dialogue KSR@3 +0.7 points, letters +0.1, everyday +0.45,
 * manuals -0.1 against the k best by score; the simulated typist with the
 * decision within noise (docs/RESULTS.md, "Choosing the k shown as a set"). */

/* What taking text saves, as the ranking counts it (probability 1). */
static double saved_of(const engine_cfg *ec, const uint8_t *text, int len) {
    return engine_rank_score(text, len, 1.0, ec->len_exp);
}

/* 1 if a[0..na) is a proper prefix of c[0..nc) that ends where a word of c
 * ends (c goes on with a blank there). */
static int word_prefix(const uint8_t *a, int na, const uint8_t *c, int nc) {
    return na > 0 && na < nc && is_space(c[na]) && !memcmp(a, c, (size_t)na);
}

/* 1 if o is a's text and one blank: its twin (emit_spaced). */
static int spaced_twin(const uint8_t *a, int na, const uint8_t *o, int no) {
    return no == na + 1 && o[na] == ' ' && !memcmp(a, o, (size_t)na);
}

static double pick_gain(const engine_cands *cl, const engine_cfg *ec, const candidate *c, const int *picked, int np) {
    double base = 0, cov = 0;
    for (int j = 0; j < np; j++) {
        const candidate *o = &cl->cand[picked[j]];
        /* its twin shown: where the text goes on with the blank, the twin is taken */
        if (spaced_twin(c->text, c->len, o->text, o->len)) cov = o->prob < c->prob ? o->prob : c->prob;
        if (!word_prefix(o->text, o->len, c->text, c->len)) continue;
        double v = saved_of(ec, o->text, o->len);
        if (v > base) base = v;
    }
    return (c->prob - cov) * (saved_of(ec, c->text, c->len) - base);
}

/* The last word's saving of c: what it adds at the least when every
 * earlier word of it is shown. */
static double last_word_saving(const engine_cfg *ec, const candidate *c) {
    int j = c->len - 1;
    while (j > 0 && !is_space(c->text[j])) j--;
    return saved_of(ec, c->text, c->len) - (j > 0 ? saved_of(ec, c->text, j) : 0);
}

/* What c adds to any list it is not in, at the least (pick_gain): its last
 * word's saving, on the mass that does not go on with a blank (c's twin
 * may be shown; kth_score counts a candidate and its twin together, which
 * bounds the pair higher). */
static double pick_floor(const engine_cfg *ec, const candidate *c) {
    double p = c->prob - c->sp;
    return (p > 0 ? p : 0) * last_word_saving(ec, c);
}
/* b as shown: an ASCII lowercase letter in capitals when caps is set. */
static inline uint8_t shown_byte(uint8_t b, int caps) {
    return caps && b >= 'a' && b <= 'z' ? (uint8_t)(b - 32) : b;
}

/* The same text on screen: equal bytes, or equal in capitals (caps). */
static int same_shown(const candidate *a, const candidate *b, int caps) {
    if (a->len != b->len) return 0;
    for (int i = 0; i < a->len; i++)
        if (shown_byte(a->text[i], caps) != shown_byte(b->text[i], caps)) return 0;
    return 1;
}

int engine_pick(const engine_cands *cl, const engine_cfg *ec, int k, int caps, int *picked) {
    int np = 0;
    while (np < k) {
        int best = -1;
        double bg = 0, bs = 0;
        for (int i = 0; i < cl->n; i++) {
            const candidate *c = &cl->cand[i];
            if (c->prob < (double)ec->min_prob) continue;
            int skip = 0;
            for (int j = 0; j < np && !skip; j++) skip = picked[j] == i || same_shown(&cl->cand[picked[j]], c, caps);
            if (skip) continue;
            double g = pick_gain(cl, ec, c, picked, np);
            if (best < 0 || g > bg || (g == bg && c->score > bs)) best = i, bg = g, bs = c->score;
        }
        if (best < 0) break;
        picked[np++] = best;
    }
    return np;
}

static int double_beats(const void *x, const void *y) { return *(const double *)x > *(const double *)y; }

/* The k-th best floor so far among the candidates that may be shown, 0
 * while there are fewer than k. Each floor is what a candidate adds to a
 * list at the least while it is not picked (pick_floor), except that a
 * candidate X and its twin X + " " count as one: while neither is picked,
 * X adds at least P(X) times its last word's saving and the twin P(twin)
 * times one more, so the pair guarantees the larger of the two for one
 * place (and once one of them is picked, that pick used the place). Every
 * floor only grows as paths add up, so the bound only grows during a
 * search, and every pick adds at least it. A candidate below the probability floor
 * (ec.min_prob, after the division by the tail's mass) is not shown and
 * bounds nothing; which ones those are is known only once the tail's mass
 * is whole (final: no beam left inside the tail), so before that, with a
 * floor, the bound is 0. */
static double kth_score(const search *q, int final) {
    const engine_search *sr = q->sr;
    if (q->k <= 0 || sr->cands.n < q->k) return 0;
    double floor = (double)q->ec->min_prob;
    if (floor > 0 && !final) return 0;
    if (q->m > 0 && q->pmass > 0) floor *= q->pmass;
    double best[ENGINE_MAX_K];
    int n = 0;
    for (int i = 0; i < sr->cands.n; i++) {
        const candidate *c = &sr->cands.cand[i];
        if (c->prob < floor) continue;
        /* a twin counts with its text (below) when that is in the list */
        int twin_of = -1;
        if (c->len > 1 && c->text[c->len - 1] == ' ')
            for (int j = 0; j < sr->cands.n && twin_of < 0; j++)
                if (sr->cands.cand[j].sp > 0 &&
                    spaced_twin(sr->cands.cand[j].text, sr->cands.cand[j].len, c->text, c->len))
                    twin_of = j;
        if (twin_of >= 0 && sr->cands.cand[twin_of].prob >= floor) continue;
        double v = pick_floor(q->ec, c);
        if (c->sp > 0) {
            for (int j = 0; j < sr->cands.n; j++) {
                const candidate *t = &sr->cands.cand[j];
                if (t->prob < floor || !spaced_twin(c->text, c->len, t->text, t->len)) continue;
                /* the twin's last word is X's with the blank */
                double lw = last_word_saving(q->ec, c), a = c->prob * lw;
                double b = t->prob * (lw + saved_of(q->ec, t->text, t->len) - saved_of(q->ec, c->text, c->len));
                v = a > b ? a : b;
                break;
            }
        }
        topk_insert(best, sizeof v, &n, q->k, &v, double_beats);
    }
    return n < q->k ? 0 : best[q->k - 1];
}

/* 1 if the new beam c can never be shown: a leaf (it will not expand: the
 * token budget is spent or a sentence ended) whose candidate, at the most
 * its probability times a word-end mass of 1, plus what its text already
 * holds from other paths, scores below the current k-th best floor (it
 * would add less than any pick: engine_pick); or whose text cannot be a
 * candidate at all. Exact: such a beam changes no suggestion,
 * so it is neither stepped nor summarized (its slot in the beam and the
 * budget stay taken, so the other beams are those of an unpruned search).
 * Only while the candidate list cannot fill (a search emits at most one
 * candidate per node, max_steps + 1): a full list evicts, and what it
 * evicts would depend on the pruned candidates. */
static int hopeless_leaf(const search *q, const beam *c, double kth) {
    const engine_search *sr = q->sr;
    if (!q->ec->prune || 2 * (q->budget + 1) >= ENGINE_MAX_CAND) return 0;
    if (c->r < q->m || (c->ntok < q->ec->max_tokens && !ends_sentence(c->gen, c->glen))) return 0;
    if (!emittable(q, c)) return 1;
    int at = cand_find(&sr->cands, c);
    double prob = exp(c->lp) + (at >= 0 ? sr->cands.cand[at].prob : 0.0);
    if (engine_cand_score(q->ec, c->gen, c->glen, prob) >= kth) return 0;
    /* its text and a blank (emit_spaced), likewise */
    if (!spaceable(q->ec, c->gen, c->glen)) return 1;
    beam t = *c;
    t.gen[t.glen++] = ' ';
    at = cand_find(&sr->cands, &t);
    prob = exp(c->lp) + (at >= 0 ? sr->cands.cand[at].prob : 0.0);
    return engine_cand_score(q->ec, t.gen, t.glen, prob) < kth;
}

/* Child c of beam par through token id: what it consumes of the tail and
 * what it generates past it (the part of a token beyond the tail). */
static void beam_child(const search *q, const beam *par, int32_t id, beam *c) {
    size_t tn;
    const uint8_t *tb = tok_bytes(q->mod->tok, id, &tn);
    c->r = par->r;
    c->glen = par->glen;
    c->ntok = par->ntok;
    memcpy(c->gen, par->gen, (size_t)par->glen);
    size_t rn = (size_t)(q->m - par->r);
    if (par->r < q->m && tn <= rn) {
        c->r += (int)tn;
    } else {
        size_t skip = par->r < q->m ? rn : 0;
        c->r = q->m;
        memcpy(c->gen + c->glen, tb + skip, tn - skip);
        c->glen += (int)(tn - skip);
        c->ntok++;
    }
}

/* The beam among gen[0..nb) at the same place as c (tail consumed, text
 * generated), or -1. */
static int beam_find(const beam *gen, int nb, const beam *c) {
    for (int j = nb - 1; j >= 0; j--)
        if (gen[j].r == c->r && gen[j].glen == c->glen && !memcmp(gen[j].gen, c->gen, (size_t)c->glen))
            return j;
    return -1;
}

/* Fills generation 1 from the sorted pool: the best q->width expansions
 * that have matched the tail and the best q->width that have not (so a
 * generation holds at most ENGINE_GEN_BEAMS), one beam per place, merging
 * those that reach the same one (their probabilities add, in log space),
 * within the step budget. Each new beam's parent node and token go to
 * par_of and tok_of. Returns the count. */
static int next_generation(search *q, int *par_of, int32_t *tok_of) {
    engine_search *sr = q->sr;
    const expansion *p = sr->pool;
    int nb = 0, kind[2] = {0, 0};  /* beams inside the tail, past it (one kind unless q->split) */
    for (int i = 0; i < q->np && kind[0] + kind[1] < (q->split ? 2 : 1) * q->width; i++) {
        const beam *par = &sr->beams[0][p[i].parent];
        beam *c = &sr->beams[1][nb];
        beam_child(q, par, p[i].id, c);
        int dup = beam_find(sr->beams[1], nb, c);
        if (dup >= 0) {
            beam *d = &sr->beams[1][dup];
            double hi = d->lp > p[i].lp ? d->lp : p[i].lp, lo = d->lp > p[i].lp ? p[i].lp : d->lp;
            d->lp = hi + log1p(exp(lo - hi));
            continue;
        }
        int past = q->split && c->r == q->m;
        if (kind[past] == q->width) continue;
        if (q->steps_left == 0) break;
        kind[past]++;
        c->lp = p[i].lp;
        par_of[nb] = par->node;
        tok_of[nb] = p[i].id;
        q->steps_left--;
        nb++;
    }
    return nb;
}

/* Gives each beam of generation 1 its node, once the generation (and its
 * merged probabilities) is whole: known nodes are reused, new ones stepped
 * together in one batch; hopeless leaves (hopeless_leaf) get none (-1). */
static void attach_nodes(search *q, int nb, const int *par_of, const int32_t *tok_of) {
    engine_search *sr = q->sr;
    int inside = 0;
    for (int i = 0; i < nb; i++) inside |= sr->beams[1][i].r < q->m;
    const double kth = kth_score(q, !inside);
    model_state *st[ENGINE_GEN_BEAMS];
    float *ys[ENGINE_GEN_BEAMS];
    int32_t toks[ENGINE_GEN_BEAMS];
    int nstep = 0;
    for (int i = 0; i < nb; i++) {
        beam *c = &sr->beams[1][i];
        if (hopeless_leaf(q, c, kth)) {
            c->node = -1;
            continue;
        }
        int ni = node_find(sr, par_of[i], tok_of[i]);
        if (ni >= 0) {
            sr->nodes[ni].used = sr->stamp;
        } else {
            ni = node_new(sr, &q->mod->cfg, par_of[i], tok_of[i]);
            if (ni >= 0) {
                st[nstep] = &sr->nodes[ni].c.st;
                ys[nstep] = sr->nodes[ni].c.y;
                toks[nstep++] = tok_of[i];
            }
        }
        c->node = ni;  /* -1 only if no slot is free: cannot happen (node_new) */
    }
    if (nstep) {
        model_step_batch(q->mod, st, toks, nstep, sr->bscratch, ys);
        sr->search_steps += (uint64_t)nstep;
    }
}

/* Builds the next generation from the pool (next_generation, then
 * attach_nodes); it becomes generation 0. Returns its size. */
static int advance(search *q) {
    engine_search *sr = q->sr;
    /* Sort the pool by score, best first (at most ENGINE_GEN_BEAMS^2 entries). */
    expansion tmp;
    topk_sort(sr->pool, sizeof *sr->pool, q->np, expansion_beats, &tmp);
    sr->stamp++;
    int par_of[ENGINE_GEN_BEAMS];
    int32_t tok_of[ENGINE_GEN_BEAMS];
    int nb = next_generation(q, par_of, tok_of);
    attach_nodes(q, nb, par_of, tok_of);
    /* The new generation becomes generation 0 (beams hold node indices). */
    for (int i = 0; i < nb; i++) sr->beams[0][i] = sr->beams[1][i];
    return nb;
}

/* The stable state changed. When it only moved forward along a path the
 * kept nodes cover (the word just finished was among the beams, the usual
 * case at a space), that path's node becomes the root and its subtree is
 * kept: the next word's search then starts from known states. The kept
 * states are those the context would have stepped itself: model_step_batch
 * equals model_step bit for bit for q8 and q4 weights (the shipped model)
 * and on the ref table; f32/f16 weights on the vector tables round
 * otherwise, within 1e-5 relative (model.h). Otherwise every kept node is
 * dropped. */
static void reroot(engine_search *sr, const engine_context *cx, int32_t V) {
    node *root = &sr->nodes[ENGINE_NODES];
    int at = cx->cur.st.n > sr->root_n ? node_at_cur(sr, cx) : -1;
    sr->root_logits_ok = 0;
    if (at >= 0) {
        node *nd = &sr->nodes[at];
        /* its full logits, when a search kept them (keep_logits): cur's
         * state is a copy of the node's (feed), so they are cur's */
        for (int i = 0; i < ENGINE_KEPT && !sr->root_logits_ok; i++)
            if (sr->kept_id[i] == nd->id) {
                memcpy(sr->root_logits, sr->kept_logits + (size_t)i * (size_t)V,
                       (size_t)V * sizeof(float));
                sr->root_logits_ok = 1;
            }
        root->id = nd->id;
        root->has_sum = nd->has_sum;
        root->lz = nd->lz;
        root->pend = nd->pend;
        root->psp = nd->psp;
        root->nt = nd->nt;
        memcpy(root->top, nd->top, sizeof root->top);
        memcpy(root->tv, nd->tv, sizeof root->tv);
        nd->id = 0;  /* the root replaces it */
    } else {
        for (int i = 0; i < ENGINE_NODES; i++) sr->nodes[i].id = 0;
        root->id = sr->next_id++;
        root->has_sum = 0;
    }
    root->c = cx->cur;
    root->nc.ver = 0;
    sr->nodes_ver = cx->cur_ver;
    sr->nodes_rewinds = cx->rewinds;
    sr->root_n = cx->cur.st.n;
}

static int cand_beats(const void *x, const void *y) {
    return ((const candidate *)x)->score > ((const candidate *)y)->score;
}

/* 1 if s[0..n) has at least two ASCII letters, no lowercase one and
 * nothing beyond ASCII. */
static int in_capitals(const uint8_t *s, size_t n) {
    int up = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 0x80 || (s[i] >= 'a' && s[i] <= 'z')) return 0;
        up += s[i] >= 'A' && s[i] <= 'Z';
    }
    return up >= 2;
}

/* Typing with caps lock: the tail t (m bytes) and the word before it (in
 * ctx[0..stable)) both in capitals. Then the tail goes to out in
 * lowercase and 1 is returned; else 0 (out untouched). The model has read
 * far more lowercase words than words in capitals, which the tokenizer cuts
 * into small pieces ("YOUR HEL" -> "O", while "your hel" -> "p"), so such
 * a word is completed as its lowercase form and the suggestions are put in
 * capitals, as the typist writes. A word in capitals among lowercase ones
 * is most likely an acronym ("MIME", "SMTP"), which the model knows in
 * capitals: left as typed. */
static int fold_caps(const uint8_t *ctx, size_t stable, const uint8_t *t, int m, uint8_t *out) {
    if (!in_capitals(t, (size_t)m)) return 0;
    size_t e = stable;
    while (e > 0 && is_space(ctx[e - 1])) e--;
    size_t b = e;
    while (b > 0 && !is_space(ctx[b - 1]) && ctx[b - 1] != '\n' && e - b < 64) b--;
    if (!in_capitals(ctx + b, e - b)) return 0;
    for (int i = 0; i < m; i++) out[i] = t[i] >= 'A' && t[i] <= 'Z' ? (uint8_t)(t[i] + 32) : t[i];
    return 1;
}

int engine_search_query(const engine_context *cx, int k, engine_query *q) {
    if (k == 0) return 0;
    q->k = k < ENGINE_MAX_K ? k : ENGINE_MAX_K;
    q->tail = cx->ctx + cx->stable;
    q->m = (int)(cx->len - cx->stable);
    if (q->m > ENGINE_MAX_TAIL) return 0;  /* no word is that long: nothing to complete */
    q->caps = fold_caps(cx->ctx, cx->stable, q->tail, q->m, q->folded);
    if (q->caps) q->tail = q->folded;
    size_t nl = utf8_incomplete_tail(cx->ctx, cx->len);
    if (nl > (size_t)q->m) nl = (size_t)q->m;
    memcpy(q->lead, cx->ctx + cx->len - nl, nl);
    q->nlead = (int)nl;
    size_t last = utf8_prev(cx->ctx, cx->len);
    q->after_cjk = cx->len > 0 && utf8_cjk_at(cx->ctx, cx->len, last);
    return 1;
}

void engine_search_run(engine_search *sr, const engine_query *qy, const engine_context *cx, const laya_model *lm,
                       const engine_cfg *ec, engine_nc *nc) {
    sr->cands.n = 0;
    /* (in capitals, candidates that differ only in case become one: the
     * k-th best before that is no bound on what is shown, so no pruning
     * by it) */
    search q = {.sr = sr, .cx = cx, .lm = lm, .mod = lm->m, .ec = ec, .nc = nc, .tail = qy->tail, .m = qy->m,
                .lead = qy->lead, .nlead = qy->nlead, .width = ec->beam, .k = qy->caps ? 0 : qy->k,
                .after_cjk = qy->after_cjk};
    if (sr->nodes_ver != cx->cur_ver || !sr->nodes[ENGINE_NODES].id) reroot(sr, cx, lm->m->cfg.V);
    sr->nodes[ENGINE_NODES].used = ++sr->stamp;
    q.budget = qy->after_cjk ? ec->cjk_steps : ec->max_steps;
    q.steps_left = q.budget;
    /* Inside a CJK run the tail's characters are whole (an input method
     * commits them) and a token that covers part of it is the usual
     * segmentation, not a split of a word: one list there. Two lists cost
     * Chinese 0.8 points of CSR@3 over six 1,500-character slices of
     * valid.txt (the extra beams spend the step budget) and gave English
     * 1.5-3 points of KSR@3 on each of five 3,000-character ones. */
    q.split = 1;
    for (int i = 0; i < q.m && q.split; i++) q.split = !utf8_cjk_at(q.tail, (size_t)q.m, (size_t)i);
    beam *b0 = &sr->beams[0][0];
    b0->node = ENGINE_NODES;
    b0->lp = 0;
    b0->r = b0->glen = b0->ntok = 0;
    int nb = 1;
    for (int iter = 0;; iter++) {
        q.np = 0;
        summarize_free(&q, nb);
        /* the cache's distributions of this depth's nodes, in one batch */
        engine_nc_dist *nds[ENGINE_GEN_BEAMS];
        const float *ys[ENGINE_GEN_BEAMS];
        int nn = 0;
        for (int i = 0; i < nb; i++)
            if (sr->beams[0][i].node >= 0) {
                ys[nn] = sr->nodes[sr->beams[0][i].node].c.y;
                nds[nn++] = &sr->nodes[sr->beams[0][i].node].nc;
            }
        engine_nc_ensure_batch(nc, cx, nds, ys, nn);
        for (int i = 0; i < nb; i++) {
            if (sr->beams[0][i].node < 0) continue;  /* a hopeless leaf */
            if (sr->beams[0][i].r < q.m) expand_constrained(&q, i);
            else expand_free(&q, i);
        }
        if (q.np == 0 || iter > q.m + ec->max_tokens) break;
        nb = advance(&q);
        if (nb == 0) break;
    }

    /* Conditional on the typed tail (the ranking does not change). */
    double norm = q.m > 0 && q.pmass > 0 ? 1.0 / q.pmass : 1.0;
    for (int i = 0; i < sr->cands.n; i++) {
        candidate *c = &sr->cands.cand[i];
        c->prob *= norm;
        c->score = engine_cand_score(ec, c->text, c->len, c->prob);
    }
}

/* The continuous cache's weight for a search: none while learning is off,
 * incognito or in a private field, less while the text typed is short
 * (engine_nc_trust). */
static float cache_weight(laya_session *s, int after_cjk) {
    float w = !s->mem.learn_on || engine_memory_incognito(&s->mem) ? 0
              : after_cjk                                        ? s->ec.cjk_cache_weight
                                                                 : s->ec.cache_weight;
    w *= engine_nc_trust(&s->nc, &s->cx);
    return s->private_field ? 0 : w;
}

/* The k picked, written out as shown (in capitals when caps: "Me" and
 * "me" were one, same_shown). Returns n. */
static int show_list(engine_search *sr, const int *picked, int n, int caps, laya_suggestion *out) {
    for (int i = 0; i < n; i++) {
        const candidate *c = &sr->cands.cand[picked[i]];
        uint8_t *t = sr->out_text[i];
        for (int j = 0; j < c->len; j++) t[j] = shown_byte(c->text[j], caps);
        t[c->len] = 0;
        out[i].text = (const char *)t;
        out[i].len = (size_t)c->len;
        out[i].prob = (float)(c->prob > 1 ? 1 : c->prob);
    }
    return n;
}

/* One keystroke's suggestions, top to bottom. The stable state is already
 * fed (engine.c, apply: every edit); whether and how much of the list is
 * shown is the pipeline's decision (pipeline.c). */
laya_status engine_suggest(laya_session *s, int k, laya_suggestion *out, int *n_out) {
    engine_cands *cl = &s->sr.cands;
    *n_out = cl->n = 0;
    /* context: the unfinished tail to complete */
    engine_query q;
    if (!engine_search_query(&s->cx, k, &q)) return LAYA_OK;
    /* search: the model's candidates, the continuous cache mixed in */
    s->nc.w = cache_weight(s, q.after_cjk);
    engine_search_run(&s->sr, &q, &s->cx, s->lm, &s->ec, &s->nc);
    /* experts, in turn over the candidates: the prior, the memory with the
     * feedback inside it (blend.c says why); none for a tail typed in
     * capitals (the model alone completes it), no memory in a private field */
    if (!q.caps) engine_blend_prior(cl, &s->m->prior, &s->ec, s->cx.ctx, s->cx.len);
    if (!q.caps && !s->private_field) engine_blend_memory(cl, &s->mem, s->lm, &s->ec, &s->cx, k);
    /* pick: best first (ties in emission order), then the k shown as a set */
    candidate tmp;
    topk_sort(cl->cand, sizeof *cl->cand, cl->n, cand_beats, &tmp);
    int picked[ENGINE_MAX_K];
    const int n = engine_pick(cl, &s->ec, q.k, q.caps, picked);
    *n_out = show_list(&s->sr, picked, n, q.caps, out);
    return LAYA_OK;
}

void engine_search_ahead(laya_session *s, int k) {
    engine_search *sr = &s->sr;
    uint64_t steps = sr->search_steps, logits = sr->search_logits;
    engine_query q;
    if (engine_search_query(&s->cx, k, &q)) {
        s->nc.w = cache_weight(s, q.after_cjk);
        engine_search_run(sr, &q, &s->cx, s->lm, &s->ec, &s->nc);
    }
    sr->cands.n = 0;
    sr->ahead_steps += sr->search_steps - steps;
    sr->ahead_logits += sr->search_logits - logits;
    sr->search_steps = steps;
    sr->search_logits = logits;
}

/* ---- the promises of engine_suggest, checked (engine.h) ---- */

/* Relative slack of the rank-score order seen through the public list:
 * prob is handed out as a float (2^-24 relative) while the ranking used
 * the double. */
#define RANK_FLOAT_SLACK 1e-6

static laya_status broken(char *why, size_t whylen, int i, const char *what) {
    return err_set(why, whylen, LAYA_ERR_INTERNAL, "suggestion %d: %s", i, what);
}

/* What every suggestion must be on its own: text to insert, complete UTF-8
 * after the character the context leaves open, within the length and word
 * limits, never a control byte (no newline), ending in a blank only as one
 * space after an ASCII character (emit_spaced). */
static laya_status check_one(const laya_session *s, const laya_suggestion *o, int i, char *why, size_t whylen) {
    const uint8_t *t = (const uint8_t *)o->text;
    if (!t || o->len == 0) return broken(why, whylen, i, "empty");
    if (o->len > (size_t)s->ec.max_bytes) return broken(why, whylen, i, "longer than max_bytes");
    for (size_t j = 0; j < o->len; j++)
        if (t[j] < 0x20 || t[j] == 0x7F) return broken(why, whylen, i, "holds a control byte");
    if (is_space(t[o->len - 1]) && (t[o->len - 1] != ' ' || o->len < 2 || is_space(t[o->len - 2]) ||
                                     t[o->len - 2] >= 0x80))
        return broken(why, whylen, i, "ends in a blank that is not one space after an ASCII character");
    if (count_words(t, (int)o->len) > s->ec.max_words) return broken(why, whylen, i, "spans more than max_words");
    uint8_t buf[4 + ENGINE_MAX_GEN];
    size_t nl = utf8_incomplete_tail(s->cx.ctx, s->cx.len);
    memcpy(buf, s->cx.ctx + s->cx.len - nl, nl);
    memcpy(buf + nl, t, o->len);
    if (!utf8_valid(buf, nl + o->len)) return broken(why, whylen, i, "not complete UTF-8 after the context");
    if (!(o->prob > 0 && o->prob <= 1)) return broken(why, whylen, i, "probability outside (0, 1]");
    if (o->prob < s->ec.min_prob) return broken(why, whylen, i, "below the probability floor");
    return LAYA_OK;
}

/* What out[i] adds to out[0..i), as pick_gain counts it, from the public
 * list alone (the float probabilities). */
static double list_gain(const laya_suggestion *out, int i, float len_exp) {
    const uint8_t *t = (const uint8_t *)out[i].text;
    double base = 0, cov = 0;
    for (int j = 0; j < i; j++) {
        if (spaced_twin(t, (int)out[i].len, (const uint8_t *)out[j].text, (int)out[j].len))
            cov = out[j].prob < out[i].prob ? out[j].prob : out[i].prob;
        if (word_prefix((const uint8_t *)out[j].text, (int)out[j].len, t, (int)out[i].len)) {
            double v = engine_rank_score((const uint8_t *)out[j].text, (int)out[j].len, 1.0, len_exp);
            if (v > base) base = v;
        }
    }
    return ((double)out[i].prob - cov) * (engine_rank_score(t, (int)out[i].len, 1.0, len_exp) - base);
}

/* The candidate shown as o (in capitals when caps), at or above the floor;
 * -1 if none. */
static int shown_cand(const laya_session *s, const laya_suggestion *o, int caps) {
    candidate v = {.len = (int)o->len};
    memcpy(v.text, o->text, o->len);
    for (int i = 0; i < s->sr.cands.n; i++)
        if (s->sr.cands.cand[i].prob >= (double)s->ec.min_prob && same_shown(&s->sr.cands.cand[i], &v, caps)) return i;
    return -1;
}

laya_status engine_suggest_invariants(const laya_session *s, int k, const laya_suggestion *out, int n, char *why,
                                      size_t whylen) {
    if (!s || k < 0 || k > ENGINE_MAX_K || n < 0 || (n && !out))
        return err_set(why, whylen, LAYA_ERR_ARG, "engine_suggest_invariants: bad arguments");
    if (n > k) return err_set(why, whylen, LAYA_ERR_INTERNAL, "%d suggestions for k = %d", n, k);
    for (int i = 0; i < n; i++) {
        laya_status st = check_one(s, &out[i], i, why, whylen);
        if (st != LAYA_OK) return st;
        for (int j = 0; j < i; j++)
            if (out[j].len == out[i].len && !memcmp(out[j].text, out[i].text, out[i].len))
                return broken(why, whylen, i, "repeats an earlier one");
        /* each adds no more than the one before it (the picks' gains fall:
         * a probability clamped to 1 says nothing of the order) */
        if (i == 0 || !(out[i - 1].prob < 1) || !(out[i].prob < 1)) continue;
        if (list_gain(out, i, s->ec.len_exp) > list_gain(out, i - 1, s->ec.len_exp) * (1 + RANK_FLOAT_SLACK))
            return broken(why, whylen, i, "adds more than the one before it");
    }
    /* Against the search's own list (sorted best first by the exact score):
     * every suggestion is one of its candidates at or above the floor (in
     * capitals when the tail was folded); the first is the best of them;
     * each next one adds at least as much to those before it as any other
     * candidate would (engine_pick); fewer than k only when fewer exist. */
    int m = (int)(s->cx.len - s->cx.stable), caps = 0;
    uint8_t folded[ENGINE_MAX_TAIL];
    if (m <= ENGINE_MAX_TAIL) caps = fold_caps(s->cx.ctx, s->cx.stable, s->cx.ctx + s->cx.stable, m, folded);
    for (int i = 1; i < s->sr.cands.n; i++)
        if (s->sr.cands.cand[i].score > s->sr.cands.cand[i - 1].score)
            return err_set(why, whylen, LAYA_ERR_INTERNAL, "candidate %d outranks the one before it", i);
    int at[ENGINE_MAX_K];
    for (int i = 0; i < n; i++) {
        at[i] = shown_cand(s, &out[i], caps);
        if (at[i] < 0) return broken(why, whylen, i, "is none of the search's candidates at or above the floor");
        const double mine = pick_gain(&s->sr.cands, &s->ec, &s->sr.cands.cand[at[i]], at, i);
        for (int c = 0; c < s->sr.cands.n; c++) {
            const candidate *o = &s->sr.cands.cand[c];
            int shown = o->prob < (double)s->ec.min_prob;
            for (int j = 0; j <= i && !shown; j++) shown = same_shown(&s->sr.cands.cand[at[j]], o, caps);
            if (!shown && pick_gain(&s->sr.cands, &s->ec, o, at, i) > mine * (1 + RANK_FLOAT_SLACK))
                return err_set(why, whylen, LAYA_ERR_INTERNAL, "suggestion %d: candidate %d would add more", i, c);
        }
    }
    if (n < k) {
        for (int c = 0; c < s->sr.cands.n; c++) {
            const candidate *o = &s->sr.cands.cand[c];
            int shown = o->prob < (double)s->ec.min_prob;
            for (int j = 0; j < n && !shown; j++) shown = same_shown(&s->sr.cands.cand[at[j]], o, caps);
            if (!shown)
                return err_set(why, whylen, LAYA_ERR_INTERNAL, "%d suggestions for k = %d, but a distinct candidate "
                               "%d is left out", n, k, c);
        }
    }
    return LAYA_OK;
}
