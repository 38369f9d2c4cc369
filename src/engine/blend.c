/* blend.c - the experts over the search's candidate list (experts.h): the
 * model file's next-word prior and the personal memory (C8) with the
 * typist's feedback, each one function over engine_cands that
 * engine_suggest calls in turn; and the state they keep (engine_memory,
 * engine_feedback).
 *
 * The memory (src/learn/learn_index.h) proposes continuations of the text
 * before the cursor with its own probabilities p_mem and a confidence mu
 * (how much evidence stands behind them: many matches of long contexts give
 * mu near 1, one match of a one-word context about 1/(1 + kappa)). The two
 * experts are mixed per candidate:
 *     p = (1 - mu) p_model + mu p_mem,
 * where a text the search did not find has p_model 0 and a text the memory
 * did not propose has p_mem 0, so the model's own candidates keep their
 * order among themselves, and with an empty memory (mu = 0) nothing changes
 * at all (tests/test_engine_learn.c checks both). The mixed candidates are
 * ranked by the search's own score (engine_rank_score), so a remembered
 * line of 40 characters at p 0.5 outranks a one-word completion at 0.9, as
 * it saves more keystrokes.
 *
 * Feedback (learn_fb.h): then every candidate, the model's and the
 * memory's alike, is multiplied by the factor of what the typist did with
 * it in this context before (passed over: down; taken: up a little), and
 * a phrase by the penalty of its first word too (decide.h cuts a phrase
 * to that word, so the word is what was shown and passed over). Applied
 * to both parts before they are mixed, which is the same as applying it
 * to the mix up to rounding, and lets the junk judgment below see the
 * final ranks. No feedback row, no change: the factor is then exactly 1
 * and nothing is touched. It stays inside engine_blend_memory rather than
 * an expert called after it: applied after the mix, f ((1 - mu) p_model +
 * mu p_mem) rounds otherwise than (1 - mu) f p_model + mu f p_mem, and the
 * typo and junk judgments would see the ranks before the feedback (tried
 * 2026-12-07 on an English typing script with memory and feedback through
 * laya_session_event: 414 of its 7,523 lines of output changed, mostly
 * probabilities in their last bits, and one list was held back by the
 * decision where it had been shown).
 *
 * The model file's next-word prior (engine_blend_prior, at the end) is
 * added before the memory by a rule of its own: the mixture's odds without
 * its scaling, so the model's candidates it has nothing for keep their
 * probability exactly.
 *
 * Nothing is proposed in a private field, and only valid UTF-8 that fits a
 * suggestion (ENGINE_MAX_GEN bytes, no newline) is taken. The query's work
 * is bounded (learn_index_query) and allocates nothing. */
#include "engine/experts.h"
#include "engine/tuned.h"

#include <string.h>

#include "engine/decide.h"
#include "util/hash.h"
#include "util/utf8.h"
#include "learn/learn.h"
#include "learn/learn_fb.h"
#include "learn/learn_index.h"
#include "prior/prior.h"

_Static_assert((int)ENGINE_FB_KEY == (int)LEARN_FB_KEY_MAX, "experts.h and learn_fb.h disagree on the feedback key");
_Static_assert((int)ENGINE_MAX_GEN == (int)LEARN_FB_TEXT_MAX, "a shown suggestion must fit a feedback row");
_Static_assert((int)LEARN_MAX_CAND <= (int)PRIOR_MAX_CAND && (int)PRIOR_MAX_WORD <= (int)LEARN_MAX_TEXT,
               "a prior query fills a learn_result");

/* Brings the session's own index up to the complete units of the context
 * (rebuilt from the last ENGINE_WINDOW bytes after an edit). -1: no index
 * (out of memory: the search goes on without it). */
static int sync_typed(engine_memory *mx, const engine_context *cx) {
    if (!mx->cix && learn_index_new(ENGINE_WINDOW + 4096, &mx->cix) != LAYA_OK) return -1;
    size_t end = learn_index_complete(cx->ctx, cx->len);
    if (mx->cix_end == SIZE_MAX || mx->cix_end > end) {
        learn_index_clear(mx->cix);
        size_t from = cx->len > ENGINE_WINDOW ? cx->len - ENGINE_WINDOW : 0;
        while (from > 0 && from < end && cx->ctx[from - 1] != '\n' && cx->ctx[from - 1] != ' ') from++;
        mx->cix_end = from < end ? from : end;
    }
    if (end > mx->cix_end && learn_index_append(mx->cix, cx->ctx + mx->cix_end, end - mx->cix_end) != LAYA_OK) {
        mx->cix_end = SIZE_MAX;
        return -1;
    }
    mx->cix_end = end;
    return 0;
}

/* 1 if a and b (at most ENGINE_MAX_GEN bytes) are one edit apart: a byte
 * inserted, deleted, replaced, or two neighbours swapped. */
static int one_edit(const uint8_t *a, int na, const uint8_t *b, int nb) {
    if (na - nb > 1 || nb - na > 1) return 0;
    int i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    if (i == na && i == nb) return 0;   /* equal */
    if (na == nb) {
        if (!memcmp(a + i + 1, b + i + 1, (size_t)(na - i - 1))) return 1;          /* replaced */
        return i + 1 < na && a[i] == b[i + 1] && a[i + 1] == b[i] &&
               !memcmp(a + i + 2, b + i + 2, (size_t)(na - i - 2));                  /* swapped */
    }
    if (na > nb) return !memcmp(a + i + 1, b + i, (size_t)(nb - i));                 /* inserted */
    return !memcmp(a + i, b + i + 1, (size_t)(na - i));                              /* deleted */
}

/* A likely typo: a word the memory holds once, one edit away from what the
 * model proposes with more probability ("recieve" typed once, "receive"
 * expected by the model). Such a word is never suggested; typed again it
 * counts twice and is the user's spelling. */
static int likely_typo(const engine_cands *cl, const learn_cand *m, double p_mem) {
    if (m->count > 1 || !m->word_end) return 0;
    for (int i = 0; i < cl->n; i++) {
        const candidate *c = &cl->cand[i];
        /* compare the words: the model's candidate may end with a blank */
        int nc = c->len, nm = m->len;
        while (nc > 0 && c->text[nc - 1] == ' ') nc--;
        while (nm > 0 && m->text[nm - 1] == ' ') nm--;
        if (c->prob > p_mem && one_edit(m->text, nm, c->text, nc)) return 1;
    }
    return 0;
}

/* Junk: a word the memory holds once whose letters the model finds
 * improbable as a word on its own, over JUNK_BITS bits per byte (random
 * strings measure 9.4-9.7, real words 1.5-3.8, typos 3.7-5.8, rare names
 * 3.7-5.9 with the shipped model: names and typos stay, key mashing goes).
 * Only words of ASCII letters are judged: CJK words cost 13-14 bits per
 * byte and are not junk. The score costs a model step and a full logits
 * product per token (1-10 ms for a word: too much for every keystroke), so
 * only words the tokenizer cuts into more than JUNK_TOKENS tokens per byte
 * are scored (real words and most names are fewer: " receive" 0.12,
 * " Anastasia" 0.40, " Quartermaine" 0.38; random letters 0.56-1.0), and
 * each verdict is cached per session.
 *
 * Only what rests on the committed history is judged: a word of the
 * document being typed (in_doc) is that document's own, never junk. A flood
 * of random strings or a key-mashed line arrives by commits, and it is the
 * history that carries a word into other documents; inside one document
 * the words judged were its names ("Kwabena" measures 7.9 bits per byte,
 * "Osei" 9.1, as key mashing does), whose recurrence is what learning the
 * typed text is for. */
#define JUNK_BITS 7.0
#define JUNK_TOKENS 0.45

static int junk_word(engine_memory *mx, const laya_model *lm, const engine_context *cx, const learn_cand *m) {
    if (m->count > 1 || !m->word_end || m->in_doc) return 0;
    /* the whole word: the partial word typed, then the completion */
    size_t ps = learn_index_complete(cx->ctx, cx->len);
    uint8_t w[1 + 64 + ENGINE_MAX_GEN];
    size_t n = 0, pl = cx->len - ps;
    if (pl > 64) return 0;
    w[n++] = ' ';
    memcpy(w + n, cx->ctx + ps, pl), n += pl;
    int ml = m->len;
    while (ml > 0 && m->text[ml - 1] == ' ') ml--;
    memcpy(w + n, m->text, (size_t)ml), n += (size_t)ml;
    for (size_t i = 1; i < n; i++)
        if (!((w[i] | 0x20) >= 'a' && (w[i] | 0x20) <= 'z')) return 0;
    int32_t ids[1 + 64 + ENGINE_MAX_GEN];
    const size_t nt = tok_encode(engine_model(lm)->tok, w, n, ids, sizeof ids / sizeof *ids);
    if ((double)nt <= JUNK_TOKENS * (double)n) return 0;
    uint64_t h = hash_fnv1a64(HASH_FNV64_BASIS, w, n);
    h |= 1;   /* 0 marks an empty entry */
    int slot = (int)(h % ENGINE_JUNK_CACHE);
    if (mx->junk_hash[slot] == h) return mx->junk_verdict[slot];
    double bits = 0;
    int verdict = engine_score(lm, (const char *)w, n, &bits) == LAYA_OK && bits / (double)n > JUNK_BITS;
    mx->junk_hash[slot] = h;
    mx->junk_verdict[slot] = (uint8_t)verdict;
    return verdict;
}

/* 1 if candidate i is among the np picked[] (engine_pick). */
static int is_picked(const int *picked, int np, int i) {
    for (int j = 0; j < np; j++)
        if (picked[j] == i) return 1;
    return 0;
}

/* The search's candidate with text[0..len), or a new one at probability 0
 * (*made = 1) when there is none; -1 when there is none and the list is
 * full. What an expert proposes is added to it. */
static int cand_slot(engine_cands *cl, const uint8_t *text, int len, int *made) {
    *made = 0;
    for (int i = 0; i < cl->n; i++)
        if (cl->cand[i].len == len && !memcmp(cl->cand[i].text, text, (size_t)len)) return i;
    if (cl->n == ENGINE_MAX_CAND) return -1;
    candidate *c = &cl->cand[cl->n];
    memcpy(c->text, text, (size_t)len);
    c->len = len;
    c->prob = 0;
    c->sp = 0;
    *made = 1;
    return cl->n++;
}

/* Mixes one memory's proposal into the candidates (see the top), k of
 * which will be shown. A word that may be junk (junk_word) is judged only
 * once its candidate would be shown, and taken out again if it is junk:
 * the judgment costs a model step and a full logits product per token
 * (about one keystroke's work), and it was 55% of what learning cost per
 * keystroke when every proposal was judged (callgrind, laya bench
 * --memory), on the 2% of keystrokes that paid it. What is shown is the
 * same as judging every word first: a candidate's part from a word not
 * judged is left only below the k shown, and a junk word's candidate goes
 * back to its model part exactly (kept, not subtracted) or out of the
 * list, the others keeping their order. */
static void mix(engine_cands *cl, engine_memory *mx, const laya_model *lm, const engine_cfg *ec,
                const engine_context *cx, const learn_result *r, int k) {
    if (r->n == 0 || r->conf <= 0) return;
    double mu = r->conf;
    int typo[LEARN_MAX_CAND] = {0};
    for (int j = 0; j < r->n; j++) typo[j] = likely_typo(cl, &r->c[j], mu * r->c[j].p);
    for (int i = 0; i < cl->n; i++) {
        candidate *c = &cl->cand[i];
        c->prob *= 1 - mu;
        c->score = engine_rank_score(c->text, c->len, c->prob, ec->len_exp);
    }
    int at[LEARN_MAX_CAND];     /* the candidate of proposal j, -1: none */
    int made[LEARN_MAX_CAND];   /* 1: that candidate was made for it */
    double base[LEARN_MAX_CAND];/* its probability before the memory's part */
    for (int j = 0; j < r->n; j++) {
        const learn_cand *m = &r->c[j];
        at[j] = -1;
        if (typo[j] || m->len <= 0 || m->len > ENGINE_MAX_GEN || memchr(m->text, '\n', (size_t)m->len) ||
            !utf8_valid(m->text, (size_t)m->len))
            continue;
        int ci = cand_slot(cl, m->text, m->len, &made[j]);
        if (ci < 0) continue;
        candidate *c = &cl->cand[ci];
        at[j] = ci;
        base[j] = c->prob;
        c->prob += mu * m->p;
        c->score = engine_rank_score(c->text, c->len, c->prob, ec->len_exp);
    }
    /* Judge the words that may be junk once they would be shown; taking
     * one out can bring another up, hence the loop (at most r->n turns). */
    for (int again = 1; again;) {
        again = 0;
        /* What would be shown; it changes only when a junk word goes, which
         * ends this pass. */
        int picked[ENGINE_MAX_K];
        const int np = engine_pick(cl, ec, k < ENGINE_MAX_K ? k : ENGINE_MAX_K, 0, picked);
        for (int j = 0; j < r->n && !again; j++) {
            if (at[j] < 0 || !is_picked(picked, np, at[j])) continue;
            int ci = at[j];
            at[j] = -1;   /* judged */
            if (!junk_word(mx, lm, cx, &r->c[j])) continue;
            again = 1;
            if (!made[j]) {
                cl->cand[ci].prob = base[j];
                cl->cand[ci].score = engine_rank_score(cl->cand[ci].text, cl->cand[ci].len, base[j], ec->len_exp);
                continue;
            }
            memmove(&cl->cand[ci], &cl->cand[ci + 1], (size_t)(cl->n - ci - 1) * sizeof *cl->cand);
            cl->n--;
            for (int x = 0; x < r->n; x++)
                if (at[x] > ci) at[x]--;
        }
    }
}

/* The factor of text[0..len) in the context of key hash kh (see the top). */
static double fb_factor(const learn_fb *fb, uint64_t kh, const uint8_t *text, int len) {
    double f = learn_fb_factor(fb, kh, text, (size_t)len, 0);
    size_t w = decide_first_word_end(text, (size_t)len);
    if (w < (size_t)len) f *= learn_fb_factor(fb, kh, text, w, 1);
    return f;
}

/* The typist's feedback on the candidates and on the memory's proposals
 * r (lock held). */
static void apply_feedback(engine_cands *cl, const learn_fb *fb, const engine_cfg *ec, const engine_context *cx,
                           learn_result *r) {
    if (!learn_fb_rows(fb)) return;
    size_t kl;
    const uint8_t *key = learn_fb_key(cx->ctx, cx->len, &kl);
    uint64_t kh = learn_fb_key_hash(key, kl);
    for (int i = 0; i < cl->n; i++) {
        candidate *c = &cl->cand[i];
        double f = fb_factor(fb, kh, c->text, c->len);
        if (f == 1.0) continue;
        c->prob *= f;
        c->score = engine_rank_score(c->text, c->len, c->prob, ec->len_exp);
    }
    for (int j = 0; j < r->n; j++) r->c[j].p *= fb_factor(fb, kh, r->c[j].text, r->c[j].len);
}

/* The text typed in this session and the committed history often hold the
 * same words (a line is typed, then committed): one proposal from both,
 * each text with the larger of its two probabilities and the larger
 * confidence, so the same evidence is not counted twice. */
static void merge(learn_result *a, const learn_result *b) {
    if (b->n == 0) return;
    if (b->conf > a->conf) a->conf = b->conf, a->order = b->order;
    for (int j = 0; j < b->n; j++) {
        int i = 0;
        while (i < a->n && !(a->c[i].len == b->c[j].len && !memcmp(a->c[i].text, b->c[j].text, (size_t)b->c[j].len)))
            i++;
        if (i < a->n) {
            if (b->c[j].p > a->c[i].p) a->c[i].p = b->c[j].p;
        } else if (a->n < LEARN_MAX_CAND) {
            a->c[a->n++] = b->c[j];
        } else {
            int lo = 0;
            for (int x = 1; x < a->n; x++)
                if (a->c[x].p < a->c[lo].p) lo = x;
            if (a->c[lo].p < b->c[j].p) a->c[lo] = b->c[j];
        }
    }
}


int engine_memory_incognito(engine_memory *mx) {
    laya_memory *mem = mx->memory;
    if (!mem) return 0;
    learn_memory_lock(mem);
    learn_memory_sync(mem, NULL, 0);
    int on = learn_memory_incognito(mem);
    learn_memory_unlock(mem);
    return on;
}

void engine_blend_memory(engine_cands *cl, engine_memory *mx, const laya_model *lm, const engine_cfg *ec,
                         const engine_context *cx, int k) {
    if (!mx->learn_on) return;
    learn_result r = {.order = -1}, h;
    laya_memory *mem = mx->memory;
    const learn_index *hist = mx->lix;
    int incognito = 0;
    if (mem) {
        /* the store's index, brought up to other processes' commits (a
         * data_version compare when nothing changed), held locked while
         * it is read */
        learn_memory_lock(mem);
        learn_memory_sync(mem, NULL, 0);
        hist = learn_memory_index(mem);
        incognito = learn_memory_incognito(mem);
    }
    if (!incognito && sync_typed(mx, cx) == 0) {
        learn_index_query(mx->cix, cx->ctx, cx->len, mx->learn_kappa, &r);
        for (int j = 0; j < r.n; j++) r.c[j].in_doc = 1;
    }
    if (hist) {
        learn_index_query(hist, cx->ctx, cx->len, mx->learn_kappa * ENGINE_HISTORY_KAPPA, &h);
        merge(&r, &h);
    }
    if (mem) {
        apply_feedback(cl, learn_memory_fb(mem), ec, cx, &r);
        learn_memory_unlock(mem);
    }
    mix(cl, mx, lm, ec, cx, &r, k);
}

/* The model file's next-word prior (prior.h): the followers of the word the
 * text ends with, one more expert beside the model with the trust
 * w = ec.prior_weight. Its words are whole words of the n-gram model, so
 * the prior speaks only at a word's end, which in Chinese is any Han
 * character; mid-word the model alone completes.
 *
 * The odds of the mixture (1 - w) p_model + w p_prior, without its scaling:
 *     p = p_model + w / (1 - w) p_prior     (w < 1; clamped to 1),
 * a word the search did not find entering with p_model 0. The candidates
 * rank exactly as under the mixture (it is this divided by 1 - w), but a
 * candidate the prior has nothing for keeps the model's probability to the
 * bit, where the mixture kept only (1 - w) of it after every Han character.
 * That mattered to what reads the probability as a probability: the
 * decision's thresholds (decide.h) and the memory mixed in next, which
 * outweighed the model 1 / (1 - w) times too much there (docs/RESULTS.md,
 * "The Chinese next-word prior": more characters saved with the decision,
 * manuals no longer lose to the prior). The sum over the candidates may
 * pass 1 by up to w / (1 - w) times the followers' mass (in the shipped
 * table a median 0.1 of P(. | word), 0.38 at the 90th percentile, 0.97 at
 * most; one follower 0.38 at most); nothing downstream needs it under 1.
 * At w = 1 the prior alone speaks (the mixture's limit). No judgment of
 * typos or junk: the prior is not the user's typing. */
void engine_blend_prior(engine_cands *cl, const prior *p, const engine_cfg *ec, const uint8_t *ctx, size_t len) {
    double w = ec->prior_weight;
    if (p->nw == 0 || w <= 0) return;
    prior_cand pc[PRIOR_MAX_CAND];
    int n = prior_query(p, ctx, len, pc, (int)LEARN_MAX_CAND);
    if (n == 0) return;
    double odds = w < 1 ? w / (1 - w) : 1;
    if (w >= 1)
        for (int i = 0; i < cl->n; i++) cl->cand[i].prob = cl->cand[i].score = 0;
    for (int j = 0; j < n; j++) {   /* valid UTF-8 of at most PRIOR_MAX_WORD bytes (prior_parse) */
        const prior_cand *m = &pc[j];
        if (m->len <= 0 || m->len > ENGINE_MAX_GEN || memchr(m->text, '\n', (size_t)m->len)) continue;
        int made, ci = cand_slot(cl, m->text, m->len, &made);
        if (ci < 0) continue;
        candidate *c = &cl->cand[ci];
        c->prob += odds * m->p;
        if (c->prob > 1) c->prob = 1;
        c->score = engine_rank_score(c->text, c->len, c->prob, ec->len_exp);
    }
}

/* ---- the experts' state ---- */

void engine_memory_init(engine_memory *mx) {
    memset(mx, 0, sizeof *mx);
    mx->learn_kappa = ENGINE_LEARN_KAPPA;
}

void engine_memory_free(engine_memory *mx) {
    learn_index_free(mx->cix);
    mx->cix = NULL;
}

void engine_memory_edited(engine_memory *mx, size_t keep) {
    if (keep < mx->cix_end) mx->cix_end = SIZE_MAX;
}

void engine_memory_forget_typed(engine_memory *mx, int clear) {
    mx->cix_end = SIZE_MAX;
    if (clear && mx->cix) learn_index_clear(mx->cix);
}

void engine_feedback_init(engine_feedback *fb) { memset(fb, 0, sizeof *fb); }

void engine_feedback_free(engine_feedback *fb) { fb->shown_n = 0; }

void engine_feedback_forget(engine_feedback *fb) { fb->shown_n = 0; }

void engine_feedback_shown(engine_feedback *fb, const uint8_t *ctx, size_t len, const laya_suggestion *out,
                           int n) {
    if (ctx) {
        size_t kl;
        const uint8_t *key = learn_fb_key(ctx, len, &kl);
        memcpy(fb->shown_key, key, kl);
        fb->shown_klen = kl;
    }
    for (int i = 0; i < n; i++) {
        memmove(fb->shown_text[i], out[i].text, out[i].len);
        fb->shown_len[i] = out[i].len;
    }
    fb->shown_n = n;
}

laya_status engine_feedback_learn(const engine_feedback *fb, int n, laya_memory *mem, int accepted) {
    const uint8_t *texts[ENGINE_MAX_K];
    for (int i = 0; i < n; i++) texts[i] = fb->shown_text[i];
    return learn_memory_feedback(mem, fb->shown_key, fb->shown_klen, texts, fb->shown_len, n, accepted, NULL, NULL,
                                 0);
}
