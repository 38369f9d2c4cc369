/* suggest.c - the suggestion search: a prefix-constrained beam search over
 * tokens from the session's stable state.
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
 * for the batch) and one batched logits product for the beams that have
 * matched the tail (model_logits_batch); a beam still under the constraint
 * needs only its allowed ids' logits (model_logits_ids), except the root
 * when the tail allows more than V/4 tokens or its full logits are already
 * there: they are kept until the stable state changes (typing on inside a
 * word re-expands the root with every character). A root rerooted onto a
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
 * overflow for any float logits. Everything lives in the session's scratch
 * (engine_search_init): no allocation here. */
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

laya_status engine_search_init(laya_session *s) {
    const model_cfg *c = &s->cfg;
    size_t per = model_state_floats(c) + (size_t)c->H;
    size_t total = ENGINE_NODES * per + (size_t)(ENGINE_GEN_BEAMS + 1 + ENGINE_KEPT) * (size_t)c->V +
                   (size_t)ENGINE_GEN_BEAMS * (size_t)c->H + model_batch_scratch_floats(c, ENGINE_GEN_BEAMS) +
                   4 * (size_t)c->V;
    s->search_mem = malloc(total * sizeof(float));
    s->ids = malloc((size_t)c->V * sizeof(int32_t));
    if (!s->search_mem || !s->ids) return LAYA_ERR_NOMEM;
    float *p = s->search_mem;
    for (int i = 0; i < ENGINE_NODES; i++) {
        node *n = &s->nodes[i];
        model_state_place(c, &n->c.st, p);  /* node_new copies its parent in */
        p += model_state_floats(c);
        n->c.y = p;
        p += c->H;
        n->id = 0;
    }
    s->root_logits = p;
    p += c->V;
    s->kept_logits = p;
    p += (size_t)ENGINE_KEPT * (size_t)c->V;
    for (int i = 0; i < ENGINE_KEPT; i++) s->kept_id[i] = 0;
    s->kept_next = 0;
    s->logits = p;
    p += (size_t)ENGINE_GEN_BEAMS * (size_t)c->V;
    s->ybatch = p;
    p += (size_t)ENGINE_GEN_BEAMS * (size_t)c->H;
    s->bscratch = p;
    p += model_batch_scratch_floats(c, ENGINE_GEN_BEAMS);
    /* Which tokens the normaliser and the word-end mass count, and which
     * may be generated (summarize). */
    const uint8_t *fl = s->lm->tflags;
    s->wz = p;
    s->wend = p + c->V;
    s->wgen = p + 2 * (size_t)c->V;
    s->wsp = p + 3 * (size_t)c->V;
    for (int32_t i = 0; i < c->V; i++) {
        int next = !(fl[i] & TF_SPECIAL) || i == TOK_EOS;
        s->wz[i] = next ? 1.0f : 0.0f;
        s->wend[i] = next && (i == TOK_EOS || (fl[i] & (TF_BOUNDARY | TF_STOP))) ? 1.0f : 0.0f;
        s->wgen[i] = fl[i] & (TF_SPECIAL | TF_STOP) ? 0.0f : 1.0f;
        s->wsp[i] = fl[i] & TF_BLANK ? 1.0f : 0.0f;
    }
    s->next_id = 1;
    return LAYA_OK;
}

void engine_search_free(laya_session *s) {
    free(s->search_mem);
    free(s->ids);
    s->search_mem = NULL;
    s->ids = NULL;
}

/* The kept node for the parent's path plus token id, or -1. */
static int node_find(const laya_session *s, int parent, int32_t id) {
    uint64_t pid = s->nodes[parent].id;
    for (int i = 0; i < ENGINE_NODES; i++)
        if (s->nodes[i].id && s->nodes[i].parent == pid && s->nodes[i].tok == id) return i;
    return -1;
}

/* The kept node whose path from the root is the stable tokens the model
 * has consumed since the root (cur's state: the root itself when none),
 * or -1 when the nodes are not of this text (a rewind since) or lack it. */
static int node_at_cur(const laya_session *s) {
    if (!s->nodes[ENGINE_NODES].id || s->cx.rewinds != s->nodes_rewinds || s->cx.cur.st.n < s->root_n ||
        (size_t)s->cx.cur.st.n > s->cx.n_tok)
        return -1;
    int at = ENGINE_NODES;
    for (int64_t t = s->root_n; t < s->cx.cur.st.n && at >= 0; t++) at = node_find(s, at, s->cx.tok[t]);
    return at;
}

int engine_node_next(const laya_session *s, int32_t id) {
    int at = node_at_cur(s);
    return at >= 0 ? node_find(s, at, id) : -1;
}

/* A fresh node for the parent's path plus token id, the parent's state
 * copied in (to be stepped): the slot of the least recently used node that
 * no beam of this depth or the last one holds. -1 if none (cannot happen
 * while ENGINE_NODES >= 2 * ENGINE_GEN_BEAMS). */
static int node_new(laya_session *s, int parent, int32_t id) {
    int victim = -1;
    for (int i = 0; i < ENGINE_NODES; i++) {
        const node *n = &s->nodes[i];
        if (!n->id) { victim = i; break; }
        if (n->used + 1 >= s->stamp) continue;  /* held by a live beam */
        if (victim < 0 || n->used < s->nodes[victim].used) victim = i;
    }
    if (victim < 0) return -1;
    node *n = &s->nodes[victim];
    const node *p = &s->nodes[parent];
    n->id = s->next_id++;
    n->parent = p->id;
    n->tok = id;
    n->used = s->stamp;
    n->has_sum = 0;
    n->nc.ver = 0;
    model_state_copy(&s->cfg, &n->c.st, &p->c.st);
    memcpy(n->c.y, p->c.y, (size_t)s->cfg.H * sizeof(float));
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
    laya_session *s;
    const uint8_t *tail;   /* the typed, unfinished tail */
    int m;                 /* its length */
    uint8_t lead[4];       /* a character the context leaves incomplete */
    int nlead;
    int width;
    int np;                /* expansions in s->pool */
    int budget;            /* nodes this search may visit: ec.max_steps, or
                              ec.cjk_steps after a CJK character */
    int steps_left;        /* of which it may still visit */
    double pmass;          /* probability of the typed tail: the mass of every
                              expansion that covers it (see expand_constrained) */
    int k;                 /* suggestions asked for */
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
    const uint8_t *t = tok_bytes(q->s->m->tok, id, &n);
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
static int cand_find(const laya_session *s, const beam *b) {
    for (int i = 0; i < s->n_cand; i++)
        if (s->cand[i].len == b->glen && !memcmp(s->cand[i].text, b->gen, (size_t)b->glen)) return i;
    return -1;
}

/* Adds prob (and sp: of it, the mass that goes on with a blank) to the
 * candidate with b's text, a new one if there is none; a full list gives up
 * its least likely for it, if that is less likely. */
static void cand_add(laya_session *s, const beam *b, double prob, double sp) {
    int at = cand_find(s, b);
    if (at >= 0) {
        s->cand[at].prob += prob;
        s->cand[at].sp += sp;
        return;
    }
    int slot = s->n_cand;
    if (slot == ENGINE_MAX_CAND) {
        /* Full: replace the least likely. */
        slot = 0;
        for (int i = 1; i < s->n_cand; i++)
            if (s->cand[i].prob < s->cand[slot].prob) slot = i;
        if (s->cand[slot].prob >= prob) return;
    } else {
        s->n_cand++;
    }
    candidate *c = &s->cand[slot];
    memcpy(c->text, b->gen, (size_t)b->glen);
    c->len = b->glen;
    c->prob = prob;
    c->sp = sp;
}

/* b's text as a candidate of probability prob, of which sp goes on with a
 * blank (emit_spaced offers that twin). */
static void emit(search *q, const beam *b, double prob, double sp) {
    if (prob > 0 && emittable(q, b)) cand_add(q->s, b, prob, sp);
}

/* 1 if the text gen[0..glen) may have a twin with one blank more: it ends
 * in an ASCII byte (alphabetic text, not a CJK word) and the blank fits in
 * max_bytes. */
static int spaceable(const laya_session *s, const uint8_t *gen, int glen) {
    return glen > 0 && glen + 1 <= s->ec.max_bytes && gen[glen - 1] < 0x80;
}

/* b's text and a blank, as a candidate of probability prob: a word the
 * text goes on from with a blank saves that keystroke too (spaceable
 * texts only). (emit refuses a text that ends in a blank: this is the one
 * way in for one.) */
static void emit_spaced(search *q, const beam *b, double prob) {
    laya_session *s = q->s;
    if (!(prob > 0) || !emittable(q, b) || !spaceable(s, b->gen, b->glen)) return;
    beam t = *b;
    t.gen[t.glen++] = ' ';
    cand_add(s, &t, prob, 0);
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
    topk_insert(q->s->pool + start, sizeof e, &n, q->width, &e, expansion_beats);
    q->np = start + n;
}

/* Keeps lg (V), the full logits of node id, for reroot: the node's path
 * ends where the typed tail ends (or, computing ahead, where a guessed blank
 * or punctuation begins), so the next key, a blank or punctuation, may make
 * it the root, whose logits a blank's many allowed tokens need. The kernels
 * give a row the same bits whichever product computed it (tests/test_kern.c:
 * consistent), so the kept vector is the one the root would compute. */
static void keep_logits(laya_session *s, uint64_t id, const float *lg) {
    for (int i = 0; i < ENGINE_KEPT; i++)
        if (s->kept_id[i] == id) return;
    const int k = s->kept_next;
    memcpy(s->kept_logits + (size_t)k * (size_t)s->cfg.V, lg, (size_t)s->cfg.V * sizeof(float));
    s->kept_id[k] = id;
    s->kept_next = (k + 1) % ENGINE_KEPT;
}

/* Expands a beam that has not matched the whole tail yet. */
static void expand_constrained(search *q, int bi) {
    laya_session *s = q->s;
    const model *m = s->m;
    const tok *tk = m->tok;
    const uint8_t *fl = s->lm->tflags;
    beam *b = &s->beams[0][bi];
    int32_t V = s->cfg.V;
    const uint8_t *rem = q->tail + b->r;
    size_t rn = (size_t)(q->m - b->r);
    size_t n1 = tok_extending(tk, rem, rn, s->ids, (size_t)V);
    if (n1 > (size_t)V) n1 = (size_t)V;
    size_t n2 = tok_prefixes(tk, rem, rn, s->ids + n1, (size_t)V - n1);
    if (n2 > (size_t)V - n1) n2 = (size_t)V - n1;
    int n = 0;
    for (size_t i = 0; i < n1 + n2; i++) {
        int32_t id = s->ids[i];
        if (id < 0 || id >= V || (fl[id] & TF_SPECIAL)) continue;
        size_t tn;
        const uint8_t *tb = tok_bytes(tk, id, &tn);
        if (tn > rn) {
            /* Goes past the tail: what it adds must be fit to show. */
            if ((fl[id] & TF_STOP) || (int)(tn - rn) > s->ec.max_bytes) continue;
            if (!utf8_ok(q, NULL, 0, tb + rn, (int)(tn - rn), 0)) continue;
        }
        s->ids[n++] = id;
    }
    if (n == 0) return;
    float *lg = s->logits;
    const node *nd = &s->nodes[b->node];
    if (b->node == ENGINE_NODES && (s->root_logits_ok || n > V / 4)) {
        /* The root: its full logits serve every tail typed on the same state
         * (kept from summarize_free, or computed here once). */
        if (!s->root_logits_ok) {
            model_logits(m, nd->c.y, s->root_logits);
            s->root_logits_ok = 1;
            s->search_logits++;
        }
        for (int i = 0; i < n; i++) lg[i] = s->root_logits[s->ids[i]];
    } else if (n > V / 4) {
        /* (many tokens allowed: the rest of the tail begins a chunk, a blank
         * typed ahead, and the node is the word before it) */
        float *all = s->logits + V;
        model_logits(m, s->nodes[b->node].c.y, all);
        s->search_logits++;
        keep_logits(s, nd->id, all);
        for (int i = 0; i < n; i++) lg[i] = all[s->ids[i]];
    } else {
        model_logits_ids(m, s->nodes[b->node].c.y, s->ids, n, lg);
    }
    /* Two lists: the tokens that finish the tail and those that consume
     * only part of it. A part's probability is not comparable with a whole
     * word's: " up" (e^-7.9 after "thanks for the") is mostly the mass of
     * " up" + " ", and " " (e^-6.6) of every word, while " update" (e^-12.8)
     * is all about the word typed; in one list of three the splits crowded
     * the word out and "the upd" was completed by " upd"+"o"+"or". Each list
     * keeps its best width (next_generation admits width of each kind). */
    engine_nc_mark(&s->nc, &nd->nc, 1);  /* the node's cache distribution: engine_suggest's batch */
    int start = q->np;
    for (int pass = 0; pass < 2; pass++) {
        if (q->split) start = q->np;
        for (int i = 0; i < n; i++) {
            size_t tn;
            tok_bytes(tk, s->ids[i], &tn);
            if ((tn >= rn) != (pass == 0)) continue;
            double lp = b->lp + engine_nc_mix(&s->nc, s->ids[i], (double)lg[i] - nd->lz);
            if (pass == 0) q->pmass += exp(lp);
            pool_add(q, start, bi, s->ids[i], lp);
        }
    }
    engine_nc_mark(&s->nc, &nd->nc, 0);
}

/* The summary of a node's logits lg (V) that a free expansion needs: the
 * log normaliser over every token that may come next (specials excluded,
 * end of text included), the share of that mass which ends a word, and the
 * ENGINE_TOPN highest tokens that may be generated. */
static void summarize(const laya_session *s, const float *lg, node *nd) {
    int32_t V = s->cfg.V;
    /* Terms below e^-40 of the largest are dropped: at most V e^-40 < 1e-13
     * of the sum for any V <= 65536 (kern.h: logit_mass). */
    float mx;
    double z, zend;
    double zsp;
    kern_get()->logit_mass(lg, s->wz, s->wend, s->wsp, V, &mx, &z, &zend, &zsp);
    nd->lz = (double)mx + log(z);
    nd->pend = zend / z;
    nd->psp = zsp / z;
    /* Best tokens: those that may be generated (s->wgen). */
    int nt = kern_get()->logit_top(lg, s->wgen, V, ENGINE_TOPN, nd->top, nd->tv);
    nd->nt = nt;
    nd->has_sum = 1;
}

/* Summarizes the node of every beam whose node lacks it (constrained beams
 * need the normaliser, matched ones everything): one batched logits product
 * for all of them. */
static void summarize_free(search *q, int nb) {
    laya_session *s = q->s;
    const int H = s->cfg.H;
    const int32_t V = s->cfg.V;
    int idx[ENGINE_GEN_BEAMS], at_end[ENGINE_GEN_BEAMS], n = 0;
    for (int i = 0; i < nb; i++) {
        const beam *b = &s->beams[0][i];
        /* (a root rerooted onto a summarized node keeps its summary; its
         * logits are computed only if a tail needs many of them) */
        if (b->node < 0 || s->nodes[b->node].has_sum) continue;
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= idx[j] == b->node;
        if (dup) continue;
        memcpy(s->ybatch + (size_t)n * H, s->nodes[b->node].c.y, (size_t)H * sizeof(float));
        at_end[n] = q->m > 0 && b->r == q->m && b->glen == 0;
        idx[n++] = b->node;
    }
    if (n == 0) return;
    model_logits_batch(s->m, s->ybatch, n, s->logits);
    s->search_logits += (uint64_t)n;
    for (int j = 0; j < n; j++) {
        const float *lg = s->logits + (size_t)j * V;
        if (idx[j] == ENGINE_NODES && !s->root_logits_ok) {
            memcpy(s->root_logits, lg, (size_t)V * sizeof(float));
            s->root_logits_ok = 1;
        } else if (idx[j] != ENGINE_NODES && at_end[j]) {
            keep_logits(s, s->nodes[idx[j]].id, lg);
        }
        summarize(s, lg, &s->nodes[idx[j]]);
    }
}

/* Scores a beam that has matched the tail (its node summarized): emits its
 * text as a candidate and expands it with the best admissible next tokens. */
static void expand_free(search *q, int bi) {
    laya_session *s = q->s;
    const tok *tk = s->m->tok;
    const beam *b = &s->beams[0][bi];
    const node *nd = &s->nodes[b->node];  /* its cache distribution: engine_suggest's batch */
    /* the word-end mass with the cache's share (engine_nc_pend), of which
     * the model's share of blanks goes on with one */
    double pe = exp(b->lp) * engine_nc_pend(&s->nc, &nd->nc, nd->pend, s->wend), psp = nd->pend > 0 ? pe * (nd->psp / nd->pend) : 0;
    if (!(psp <= pe)) psp = pe;
    if (!spaceable(s, b->gen, b->glen)) psp = 0;
    emit(q, b, pe, psp);
    emit_spaced(q, b, psp);
    if (b->ntok >= s->ec.max_tokens || ends_sentence(b->gen, b->glen)) return;
    /* The node's best tokens, and the cache's (mixed: engine_nc_mix), best
     * first. */
    expansion top[ENGINE_TOPN + ENGINE_NC_TOP];
    int ntop = 0;
    engine_nc_mark(&s->nc, &nd->nc, 1);
    for (int i = 0; i < nd->nt; i++) {
        expansion e = {.id = nd->top[i], .lp = engine_nc_mix(&s->nc, nd->top[i], (double)nd->tv[i] - nd->lz)};
        topk_insert(top, sizeof e, &ntop, ENGINE_TOPN + ENGINE_NC_TOP, &e, expansion_beats);
    }
    if (engine_nc_on(&s->nc)) {
        /* the cache's tokens outside the node's best: their logits */
        int32_t ids[ENGINE_NC_TOP];
        float lgs[ENGINE_NC_TOP];
        int n = 0;
        for (int i = 0; i < nd->nc.n; i++) {
            int32_t id = nd->nc.id[i];
            int dup = !(s->wgen[id] > 0) || !cache_token_allowed(q, b, id);
            for (int j = 0; j < nd->nt && !dup; j++) dup = nd->top[j] == id;
            if (!dup) ids[n++] = id;
        }
        if (n) model_logits_ids(s->m, nd->c.y, ids, n, lgs);
        for (int i = 0; i < n; i++) {
            expansion e = {.id = ids[i], .lp = engine_nc_mix(&s->nc, ids[i], (double)lgs[i] - nd->lz)};
            topk_insert(top, sizeof e, &ntop, ENGINE_TOPN + ENGINE_NC_TOP, &e, expansion_beats);
        }
    }
    engine_nc_mark(&s->nc, &nd->nc, 0);
    int start = q->np, taken = 0;
    for (int i = 0; i < ntop && taken < q->width; i++) {
        size_t tn;
        const uint8_t *tb = tok_bytes(tk, top[i].id, &tn);
        if (b->glen + (int)tn > s->ec.max_bytes) continue;
        if (!utf8_ok(q, b->gen, b->glen, tb, (int)tn, 0)) continue;
        uint8_t tmp[2 * ENGINE_MAX_GEN];
        memcpy(tmp, b->gen, (size_t)b->glen);
        memcpy(tmp + b->glen, tb, tn);
        if (count_words(tmp, b->glen + (int)tn) > s->ec.max_words) continue;
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
static double cand_score(const laya_session *s, const uint8_t *text, int len, double prob) {
    return engine_rank_score(text, len, prob, s->ec.len_exp);
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
static double saved_of(const laya_session *s, const uint8_t *text, int len) {
    return engine_rank_score(text, len, 1.0, s->ec.len_exp);
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

static double pick_gain(const laya_session *s, const candidate *c, const int *picked, int np) {
    double base = 0, cov = 0;
    for (int j = 0; j < np; j++) {
        const candidate *o = &s->cand[picked[j]];
        /* its twin shown: where the text goes on with the blank, the twin is taken */
        if (spaced_twin(c->text, c->len, o->text, o->len)) cov = o->prob < c->prob ? o->prob : c->prob;
        if (!word_prefix(o->text, o->len, c->text, c->len)) continue;
        double v = saved_of(s, o->text, o->len);
        if (v > base) base = v;
    }
    return (c->prob - cov) * (saved_of(s, c->text, c->len) - base);
}

/* The last word's saving of c: what it adds at the least when every
 * earlier word of it is shown. */
static double last_word_saving(const laya_session *s, const candidate *c) {
    int j = c->len - 1;
    while (j > 0 && !is_space(c->text[j])) j--;
    return saved_of(s, c->text, c->len) - (j > 0 ? saved_of(s, c->text, j) : 0);
}

/* What c adds to any list it is not in, at the least (pick_gain): its last
 * word's saving, on the mass that does not go on with a blank (c's twin
 * may be shown; kth_score counts a candidate and its twin together, which
 * bounds the pair higher). */
static double pick_floor(const laya_session *s, const candidate *c) {
    double p = c->prob - c->sp;
    return (p > 0 ? p : 0) * last_word_saving(s, c);
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

int engine_pick(const laya_session *s, int k, int caps, int *picked) {
    int np = 0;
    while (np < k) {
        int best = -1;
        double bg = 0, bs = 0;
        for (int i = 0; i < s->n_cand; i++) {
            const candidate *c = &s->cand[i];
            if (c->prob < (double)s->ec.min_prob) continue;
            int skip = 0;
            for (int j = 0; j < np && !skip; j++) skip = picked[j] == i || same_shown(&s->cand[picked[j]], c, caps);
            if (skip) continue;
            double g = pick_gain(s, c, picked, np);
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
    const laya_session *s = q->s;
    if (q->k <= 0 || s->n_cand < q->k) return 0;
    double floor = (double)s->ec.min_prob;
    if (floor > 0 && !final) return 0;
    if (q->m > 0 && q->pmass > 0) floor *= q->pmass;
    double best[ENGINE_MAX_K];
    int n = 0;
    for (int i = 0; i < s->n_cand; i++) {
        const candidate *c = &s->cand[i];
        if (c->prob < floor) continue;
        /* a twin counts with its text (below) when that is in the list */
        int twin_of = -1;
        if (c->len > 1 && c->text[c->len - 1] == ' ')
            for (int j = 0; j < s->n_cand && twin_of < 0; j++)
                if (s->cand[j].sp > 0 && spaced_twin(s->cand[j].text, s->cand[j].len, c->text, c->len)) twin_of = j;
        if (twin_of >= 0 && s->cand[twin_of].prob >= floor) continue;
        double v = pick_floor(s, c);
        if (c->sp > 0) {
            for (int j = 0; j < s->n_cand; j++) {
                const candidate *t = &s->cand[j];
                if (t->prob < floor || !spaced_twin(c->text, c->len, t->text, t->len)) continue;
                /* the twin's last word is X's with the blank */
                double lw = last_word_saving(s, c), a = c->prob * lw;
                double b = t->prob * (lw + saved_of(s, t->text, t->len) - saved_of(s, c->text, c->len));
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
    const laya_session *s = q->s;
    if (!s->ec.prune || 2 * (q->budget + 1) >= ENGINE_MAX_CAND) return 0;
    if (c->r < q->m || (c->ntok < s->ec.max_tokens && !ends_sentence(c->gen, c->glen))) return 0;
    if (!emittable(q, c)) return 1;
    int at = cand_find(s, c);
    double prob = exp(c->lp) + (at >= 0 ? s->cand[at].prob : 0.0);
    if (cand_score(s, c->gen, c->glen, prob) >= kth) return 0;
    /* its text and a blank (emit_spaced), likewise */
    if (!spaceable(s, c->gen, c->glen)) return 1;
    beam t = *c;
    t.gen[t.glen++] = ' ';
    at = cand_find(s, &t);
    prob = exp(c->lp) + (at >= 0 ? s->cand[at].prob : 0.0);
    return cand_score(s, t.gen, t.glen, prob) < kth;
}

/* Child c of beam par through token id: what it consumes of the tail and
 * what it generates past it (the part of a token beyond the tail). */
static void beam_child(const search *q, const beam *par, int32_t id, beam *c) {
    size_t tn;
    const uint8_t *tb = tok_bytes(q->s->m->tok, id, &tn);
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
    laya_session *s = q->s;
    const expansion *p = s->pool;
    int nb = 0, kind[2] = {0, 0};  /* beams inside the tail, past it (one kind unless q->split) */
    for (int i = 0; i < q->np && kind[0] + kind[1] < (q->split ? 2 : 1) * q->width; i++) {
        const beam *par = &s->beams[0][p[i].parent];
        beam *c = &s->beams[1][nb];
        beam_child(q, par, p[i].id, c);
        int dup = beam_find(s->beams[1], nb, c);
        if (dup >= 0) {
            beam *d = &s->beams[1][dup];
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
    laya_session *s = q->s;
    int inside = 0;
    for (int i = 0; i < nb; i++) inside |= s->beams[1][i].r < q->m;
    const double kth = kth_score(q, !inside);
    model_state *st[ENGINE_GEN_BEAMS];
    float *ys[ENGINE_GEN_BEAMS];
    int32_t toks[ENGINE_GEN_BEAMS];
    int nstep = 0;
    for (int i = 0; i < nb; i++) {
        beam *c = &s->beams[1][i];
        if (hopeless_leaf(q, c, kth)) {
            c->node = -1;
            continue;
        }
        int ni = node_find(s, par_of[i], tok_of[i]);
        if (ni >= 0) {
            s->nodes[ni].used = s->stamp;
        } else {
            ni = node_new(s, par_of[i], tok_of[i]);
            if (ni >= 0) {
                st[nstep] = &s->nodes[ni].c.st;
                ys[nstep] = s->nodes[ni].c.y;
                toks[nstep++] = tok_of[i];
            }
        }
        c->node = ni;  /* -1 only if no slot is free: cannot happen (node_new) */
    }
    if (nstep) {
        model_step_batch(s->m, st, toks, nstep, s->bscratch, ys);
        s->search_steps += (uint64_t)nstep;
    }
}

/* Builds the next generation from the pool (next_generation, then
 * attach_nodes); it becomes generation 0. Returns its size. */
static int advance(search *q) {
    laya_session *s = q->s;
    /* Sort the pool by score, best first (at most ENGINE_GEN_BEAMS^2 entries). */
    expansion tmp;
    topk_sort(s->pool, sizeof *s->pool, q->np, expansion_beats, &tmp);
    s->stamp++;
    int par_of[ENGINE_GEN_BEAMS];
    int32_t tok_of[ENGINE_GEN_BEAMS];
    int nb = next_generation(q, par_of, tok_of);
    attach_nodes(q, nb, par_of, tok_of);
    /* The new generation becomes generation 0 (beams hold node indices). */
    for (int i = 0; i < nb; i++) s->beams[0][i] = s->beams[1][i];
    return nb;
}

/* The stable state changed. When it only moved forward along a path the
 * kept nodes cover (the word just finished was among the beams, the usual
 * case at a space), that path's node becomes the root and its subtree is
 * kept: the next word's search then starts from known states. The kept
 * states differ from those the engine fed by float rounding only (batched vs
 * single products, ~1e-7). Otherwise every kept node is dropped. */
static void reroot(laya_session *s) {
    node *root = &s->nodes[ENGINE_NODES];
    int at = s->cx.cur.st.n > s->root_n ? node_at_cur(s) : -1;
    s->root_logits_ok = 0;
    if (at >= 0) {
        node *nd = &s->nodes[at];
        /* its full logits, when a search kept them (keep_logits): cur's
         * state is a copy of the node's (feed), so they are cur's */
        for (int i = 0; i < ENGINE_KEPT && !s->root_logits_ok; i++)
            if (s->kept_id[i] == nd->id) {
                memcpy(s->root_logits, s->kept_logits + (size_t)i * (size_t)s->cfg.V,
                       (size_t)s->cfg.V * sizeof(float));
                s->root_logits_ok = 1;
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
        for (int i = 0; i < ENGINE_NODES; i++) s->nodes[i].id = 0;
        root->id = s->next_id++;
        root->has_sum = 0;
    }
    root->c = s->cx.cur;
    root->nc.ver = 0;
    s->nodes_ver = s->cx.cur_ver;
    s->nodes_rewinds = s->cx.rewinds;
    s->root_n = s->cx.cur.st.n;
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

/* The search proper: fills s->cand[0..n_cand) with the model's candidates
 * for s's context, their probabilities conditional on the typed tail and
 * their scores set (before the prior and the memory are blended in).
 * Returns 1 when the tail is typed in capitals (fold_caps: the candidates
 * are in lower case and shown in capitals), 0 otherwise, -1 when there is
 * nothing to complete (k 0, or a tail longer than any word). */
static int search_run(laya_session *s, int k) {
    s->n_cand = 0;
    if (k == 0) return -1;
    search q = {.s = s, .tail = s->cx.ctx + s->cx.stable, .m = (int)(s->cx.len - s->cx.stable),
                .width = s->ec.beam, .k = k < ENGINE_MAX_K ? k : ENGINE_MAX_K};
    if (q.m > ENGINE_MAX_TAIL) return -1;  /* no word is that long: nothing to complete */
    uint8_t folded[ENGINE_MAX_TAIL];
    const int caps = fold_caps(s->cx.ctx, s->cx.stable, q.tail, q.m, folded);
    if (caps) {
        q.tail = folded;
        /* candidates that differ only in case become one: the k-th best
         * before that is no bound on what is shown, so no pruning by it */
        q.k = 0;
    }
    size_t nl = utf8_incomplete_tail(s->cx.ctx, s->cx.len);
    if (nl > (size_t)q.m) nl = (size_t)q.m;
    memcpy(q.lead, s->cx.ctx + s->cx.len - nl, nl);
    q.nlead = (int)nl;

    if (s->nodes_ver != s->cx.cur_ver || !s->nodes[ENGINE_NODES].id) reroot(s);
    s->nodes[ENGINE_NODES].used = ++s->stamp;
    size_t last = utf8_prev(s->cx.ctx, s->cx.len);
    const int after_cjk = s->cx.len > 0 && utf8_cjk_at(s->cx.ctx, s->cx.len, last);
    q.budget = after_cjk ? s->ec.cjk_steps : s->ec.max_steps;
    q.after_cjk = after_cjk;
    /* the continuous cache's weight for this search: none while incognito,
     * less while the text typed is short (engine_nc_trust) */
    s->nc.w = !s->learn_on || engine_memory_incognito(s) ? 0
              : after_cjk                                ? s->ec.cjk_cache_weight
                                                         : s->ec.cache_weight;
    s->nc.w *= engine_nc_trust(&s->nc, &s->cx);
    if (s->private_field) s->nc.w = 0;   /* nothing personal in a private field */
    q.steps_left = q.budget;
    /* Inside a CJK run the tail's characters are whole (an input method
     * commits them) and a token that covers part of it is the usual
     * segmentation, not a split of a word: one list there. Two lists cost
     * Chinese 0.8 points of CSR@3 over six 1,500-character slices of
     * valid.txt (the extra beams spend the step budget) and gave English
     * 1.5-3 points of KSR@3 on each of five 3,000-character ones. */
    q.split = 1;
    for (int i = 0; i < q.m && q.split; i++) q.split = !utf8_cjk_at(q.tail, (size_t)q.m, (size_t)i);
    beam *b0 = &s->beams[0][0];
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
            if (s->beams[0][i].node >= 0) {
                ys[nn] = s->nodes[s->beams[0][i].node].c.y;
                nds[nn++] = &s->nodes[s->beams[0][i].node].nc;
            }
        engine_nc_ensure_batch(&s->nc, &s->cx, nds, ys, nn);
        for (int i = 0; i < nb; i++) {
            if (s->beams[0][i].node < 0) continue;  /* a hopeless leaf */
            if (s->beams[0][i].r < q.m) expand_constrained(&q, i);
            else expand_free(&q, i);
        }
        if (q.np == 0 || iter > q.m + s->ec.max_tokens) break;
        nb = advance(&q);
        if (nb == 0) break;
    }

    /* Conditional on the typed tail (the ranking does not change). */
    double norm = q.m > 0 && q.pmass > 0 ? 1.0 / q.pmass : 1.0;
    for (int i = 0; i < s->n_cand; i++) {
        candidate *c = &s->cand[i];
        c->prob *= norm;
        c->score = cand_score(s, c->text, c->len, c->prob);
    }
    return caps;
}

laya_status engine_suggest(laya_session *s, int k, laya_suggestion *out, int *n_out) {
    *n_out = 0;
    const int caps = search_run(s, k);
    if (caps < 0) return LAYA_OK;
    if (!caps) {
        engine_blend_prior(s);
        engine_blend_memory(s, k);
    }
    /* Best first, ties in emission order (at most ENGINE_MAX_CAND entries);
     * then the k shown, picked as a set (engine_pick). */
    candidate tmp;
    topk_sort(s->cand, sizeof *s->cand, s->n_cand, cand_beats, &tmp);
    int picked[ENGINE_MAX_K];
    const int n = engine_pick(s, k < ENGINE_MAX_K ? k : ENGINE_MAX_K, caps, picked);
    for (int i = 0; i < n; i++) {   /* (in capitals, "Me" and "me" were one: same_shown) */
        const candidate *c = &s->cand[picked[i]];
        uint8_t *t = s->out_text[i];
        for (int j = 0; j < c->len; j++) t[j] = shown_byte(c->text[j], caps);
        t[c->len] = 0;
        out[i].text = (const char *)t;
        out[i].len = (size_t)c->len;
        out[i].prob = (float)(c->prob > 1 ? 1 : c->prob);
    }
    *n_out = n;
    return LAYA_OK;
}

void engine_search_ahead(laya_session *s, int k) {
    uint64_t steps = s->search_steps, logits = s->search_logits;
    search_run(s, k);
    s->n_cand = 0;
    s->ahead_steps += s->search_steps - steps;
    s->ahead_logits += s->search_logits - logits;
    s->search_steps = steps;
    s->search_logits = logits;
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
    for (int i = 0; i < s->n_cand; i++)
        if (s->cand[i].prob >= (double)s->ec.min_prob && same_shown(&s->cand[i], &v, caps)) return i;
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
    for (int i = 1; i < s->n_cand; i++)
        if (s->cand[i].score > s->cand[i - 1].score)
            return err_set(why, whylen, LAYA_ERR_INTERNAL, "candidate %d outranks the one before it", i);
    int at[ENGINE_MAX_K];
    for (int i = 0; i < n; i++) {
        at[i] = shown_cand(s, &out[i], caps);
        if (at[i] < 0) return broken(why, whylen, i, "is none of the search's candidates at or above the floor");
        const double mine = pick_gain(s, &s->cand[at[i]], at, i);
        for (int c = 0; c < s->n_cand; c++) {
            const candidate *o = &s->cand[c];
            int shown = o->prob < (double)s->ec.min_prob;
            for (int j = 0; j <= i && !shown; j++) shown = same_shown(&s->cand[at[j]], o, caps);
            if (!shown && pick_gain(s, o, at, i) > mine * (1 + RANK_FLOAT_SLACK))
                return err_set(why, whylen, LAYA_ERR_INTERNAL, "suggestion %d: candidate %d would add more", i, c);
        }
    }
    if (n < k) {
        for (int c = 0; c < s->n_cand; c++) {
            const candidate *o = &s->cand[c];
            int shown = o->prob < (double)s->ec.min_prob;
            for (int j = 0; j < n && !shown; j++) shown = same_shown(&s->cand[at[j]], o, caps);
            if (!shown)
                return err_set(why, whylen, LAYA_ERR_INTERNAL, "%d suggestions for k = %d, but a distinct candidate "
                               "%d is left out", n, k, c);
        }
    }
    return LAYA_OK;
}
