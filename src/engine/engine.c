/* engine.c - implements include/laya.h: models and sessions. A session is
 * the components session.h lists, each with its own state: the context
 * (context.c: the text, its stable tokens, the model states and
 * checkpoints), the search (suggest.c) with the continuous cache as its
 * scoring plug-in (nc.c), and the experts over the candidates (blend.c);
 * this file creates and frees them, routes every edit to them (apply) and
 * holds the public entry points: the privacy gate, the list shown and its
 * feedback, computing ahead between keys, notes and intent.
 *
 * Memory per session is constant: about 2.8 MB for the shipped model
 * (V = 8192, H = 384, S = model_state_floats = 3072): the context's
 * checkpoints 0.70 MB, the search's nodes and scratch 1.8 MB (suggest.c),
 * the cache's ring 0.3 MB (nc.c); plus the text and its tokens. */
#include "engine/session.h"
#include "engine/tuned.h"
#include "engine/pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "kern/kern.h"
#include "intent/intent.h"
#include "notes/notes.h"
#include "util/err.h"
#include "util/privacy.h"

/* ---- models ---- */

laya_status engine_model_wrap(model *m, int own, laya_model **out) {
    if (!m || !out || !m->tok) return LAYA_ERR_ARG;
    laya_model *lm = calloc(1, sizeof *lm);
    if (!lm) return LAYA_ERR_NOMEM;
    lm->tflags = calloc((size_t)m->cfg.V, 1);
    if (!lm->tflags) { free(lm); return LAYA_ERR_NOMEM; }
    if (tok_vocab_size(m->tok) > m->cfg.V) { free(lm->tflags); free(lm); return LAYA_ERR_FORMAT; }
    engine_token_flags(m->tok, m->cfg.V, lm->tflags);
    lm->m = m;
    lm->own = own;
    *out = lm;
    return LAYA_OK;
}

const model *engine_model(const laya_model *lm) { return lm ? lm->m : NULL; }

laya_status laya_model_load(const char *path, laya_model **out, char *err, size_t errlen) {
    if (!path || !out) return err_set(err, errlen, LAYA_ERR_ARG, "laya_model_load: NULL argument");
    *out = NULL;
    model *m = NULL;
    laya_status st = model_load(path, &m, err, errlen);
    if (st != LAYA_OK) return st;
    if (!m->tok) {
        model_free(m);
        return err_set(err, errlen, LAYA_ERR_FORMAT, "%s: the model file has no tokenizer", path);
    }
    st = engine_model_wrap(m, 1, out);
    if (st != LAYA_OK) {
        model_free(m);
        return err_set(err, errlen, st, "%s: %s", path,
                       st == LAYA_ERR_FORMAT ? "the tokenizer has more ids than the model's vocabulary"
                                             : laya_status_str(st));
    }
    return LAYA_OK;
}

void laya_model_free(laya_model *lm) {
    if (!lm) return;
    if (lm->own) model_free(lm->m);
    free(lm->tflags);
    free(lm);
}

/* ---- sessions ---- */

engine_cfg engine_cfg_default(void) {
    /* every value is a tuned default of tuned.h, with its measurement */
    engine_cfg c = {.beam = ENGINE_BEAM, .max_tokens = ENGINE_MAX_TOKENS, .max_words = ENGINE_MAX_WORDS,
                    .max_bytes = ENGINE_MAX_BYTES, .len_exp = ENGINE_LEN_EXP, .max_steps = ENGINE_MAX_STEPS_DEFAULT,
                    .cjk_steps = ENGINE_CJK_STEPS, .prune = 1, .min_prob = ENGINE_MIN_PROB,
                    .prior_weight = ENGINE_PRIOR_WEIGHT, .cache_weight = ENGINE_CACHE_WEIGHT,
                    .cjk_cache_weight = ENGINE_CJK_CACHE_WEIGHT};
    return c;
}

laya_search_opts laya_search_defaults(void) { return engine_cfg_default(); }

laya_status laya_session_set_search(laya_session *s, const laya_search_opts *o) { return engine_set_cfg(s, o); }

laya_status engine_set_cfg(laya_session *s, const engine_cfg *c) {
    if (!s || !c || c->beam < 1 || c->beam > ENGINE_MAX_BEAM || c->max_tokens < 1 ||
        c->max_tokens > LAYA_MAX_TOKENS || c->max_words < 1 || c->max_words > LAYA_MAX_WORDS || c->max_bytes < 1 ||
        c->max_bytes > ENGINE_MAX_GEN || !(c->len_exp >= 0 && c->len_exp <= 4) ||
        c->max_steps < 1 || c->max_steps > ENGINE_MAX_STEPS || c->cjk_steps < 1 ||
        c->cjk_steps > ENGINE_MAX_STEPS || (c->prune != 0 && c->prune != 1) ||
        !(c->min_prob >= 0 && c->min_prob <= 1) || !(c->prior_weight >= 0 && c->prior_weight <= 1) ||
        !(c->cache_weight >= 0 && c->cache_weight <= 0.9f) ||
        !(c->cjk_cache_weight >= 0 && c->cjk_cache_weight <= 0.9f))
        return LAYA_ERR_ARG;
    s->ec = *c;
    return LAYA_OK;
}

/* Runs one token through cur (context.c) and the cache records its output
 * vector. A token the last search already stepped from this state is
 * copied from its node instead (in CJK text, where every fourth character
 * moves the stable state, that is the last chunk's tokens nearly every
 * time). */
static void feed(laya_session *s, int32_t id) {
    engine_context_feed(&s->cx, s->m, id, engine_search_known(&s->sr, &s->cx, id));
    engine_nc_record(&s->nc, &s->cx, s->private_field);
}

laya_status laya_session_new(const laya_model *lm, laya_session **out) {
    if (!lm || !out) return LAYA_ERR_ARG;
    *out = NULL;
    laya_session *s = calloc(1, sizeof *s);
    if (!s) return LAYA_ERR_NOMEM;
    s->lm = lm;
    s->m = lm->m;
    s->cfg = lm->m->cfg;
    s->ec = engine_cfg_default();
    engine_memory_init(&s->mem);
    engine_feedback_init(&s->fb);
    if (engine_context_init(&s->cx, s->m) != LAYA_OK || engine_search_init(&s->sr, s->lm) != LAYA_OK) {
        laya_session_free(s);
        return LAYA_ERR_NOMEM;
    }
    if (engine_nc_init(&s->nc, &s->cfg, ENGINE_NC_SIZE) != LAYA_OK) {
        laya_session_free(s);
        return LAYA_ERR_NOMEM;
    }
    engine_nc_record(&s->nc, &s->cx, s->private_field);
    *out = s;
    return LAYA_OK;
}

void laya_session_free(laya_session *s) {
    if (!s) return;
    engine_context_free(&s->cx);
    engine_search_free(&s->sr);
    engine_memory_free(&s->mem);
    engine_feedback_free(&s->fb);
    engine_nc_free(&s->nc);
    notes_link_free(s->notes);
    engine_pipe_free(s->pipe);
    free(s);
}

/* The text becomes ctx[0..keep) + add[0..n) (context.c), and the typed
 * text's memory is rebuilt where an edit reached into it (blend.c). */
static laya_status ctx_edit(laya_session *s, size_t keep, const uint8_t *add, size_t n) {
    if (engine_context_edit(&s->cx, keep, add, n) != LAYA_OK) return LAYA_ERR_NOMEM;
    engine_memory_edited(&s->mem, keep);
    return LAYA_OK;
}

/* Makes the context ctx[0..keep) + add[0..n): the one edit every public
 * entry point reduces to. add may point into s->cx.ctx. The stable tokens
 * that survive are kept, the rest of the stable text re-encoded, and the
 * model rewound to the first token that differs and fed from there. */
static laya_status apply(laya_session *s, size_t keep, const uint8_t *add, size_t n) {
    if (keep > s->cx.len) return LAYA_ERR_INTERNAL;
    s->sr.guesses.n = s->sr.guesses.done = 0;
    if (n > ENGINE_MAX_CONTEXT - keep) return LAYA_ERR_LIMIT;
    size_t old_len = s->cx.len;
    if (ctx_edit(s, keep, add, n) != LAYA_OK) return LAYA_ERR_NOMEM;
    laya_status st = engine_context_encode(&s->cx, s->m, keep, old_len);
    if (st != LAYA_OK) return st;
    while ((size_t)s->cx.cur.st.n < s->cx.n_tok) feed(s, s->cx.tok[s->cx.cur.st.n]);
    return LAYA_OK;
}

laya_status laya_session_set_context(laya_session *s, const char *text, size_t len) {
    if (!s || (!text && len)) return LAYA_ERR_ARG;
    if (len > ENGINE_MAX_CONTEXT) return LAYA_ERR_LIMIT;
    static const uint8_t none[1];   /* NULL and 0: the empty text */
    const uint8_t *t = text ? (const uint8_t *)text : none;
    size_t p = engine_common_prefix(s->cx.ctx, t, len < s->cx.len ? len : s->cx.len);
    return apply(s, p, t + p, len - p);
}

laya_status laya_session_type(laya_session *s, const char *bytes, size_t len) {
    if (!s || (!bytes && len)) return LAYA_ERR_ARG;
    return apply(s, s->cx.len, (const uint8_t *)bytes, len);
}

laya_status laya_session_backspace(laya_session *s, size_t n_chars) {
    if (!s) return LAYA_ERR_ARG;
    size_t p = s->cx.len;
    for (size_t i = 0; i < n_chars && p > 0; i++) p = utf8_prev(s->cx.ctx, p);
    return apply(s, p, NULL, 0);
}

laya_status laya_session_reset(laya_session *s) {
    if (!s) return LAYA_ERR_ARG;
    engine_context_reset(&s->cx, s->m);
    engine_memory_forget_typed(&s->mem, 0);
    engine_feedback_forget(&s->fb);
    s->sr.guesses.n = s->sr.guesses.done = 0;
    return LAYA_OK;
}

int engine_gate_at(const laya_session *s, const uint8_t *text, size_t len) {
    if (s->secret_field || privacy_secret_typed((const char *)text, len)) return ENGINE_GATE_SECRET;
    return s->private_field ? ENGINE_GATE_PRIVATE : ENGINE_GATE_OPEN;
}

int engine_gate(const laya_session *s) { return engine_gate_at(s, s->cx.ctx, s->cx.len); }

void engine_set_field(laya_session *s, int secret, int priv) {
    if (secret && !s->secret_field) engine_feedback_forget(&s->fb);   /* a list shown before is not judged in there */
    s->secret_field = secret;
    if (priv || secret) {
        if (!s->private_field) engine_set_private(s, 1);
    } else if (s->private_field) {
        engine_set_private(s, 0);
    }
}

/* 1 when feedback on what is shown now may be learned: a memory attached,
 * learning on, the gate open. */
static int feedback_on(const laya_session *s) {
    return s->mem.memory && s->mem.learn_on && engine_gate(s) == ENGINE_GATE_OPEN;
}

int laya_goes_before_blank(uint32_t c) { return c && c < 0x80 && strchr(".,;:!?", (int)c) != NULL; }

/* Keeps as the guesses laya_session_prefetch works on the first character
 * of out's best suggestion and that of the next one that begins otherwise. */
static void set_guesses(engine_guesses *g, const laya_suggestion *out, int n, int k) {
    g->n = g->done = 0;
    g->k = k;
    for (int i = 0; i < n && g->n < ENGINE_GUESSES; i++) {
        size_t e = out[i].len ? utf8_next((const uint8_t *)out[i].text, out[i].len, 0) : 0;
        if (e == 0 || e > sizeof g->text[0]) continue;
        int seen = 0;
        for (int j = 0; j < g->n; j++)
            seen |= g->len[j] == (int)e && !memcmp(g->text[j], out[i].text, e);
        if (seen) continue;
        memcpy(g->text[g->n], out[i].text, e);
        g->len[g->n++] = (int)e;
    }
}

/* Guess g keeps the search's root: the stable tokens, the model's state
 * and the root stay as they are while it is typed (ctx_edit, no re-encode),
 * and the search for the longer tail reuses and leaves its nodes under that
 * root. Two kinds of guess:
 * - it goes on with the typed tail (tok_tail_start 0 from the stable end: a
 *   letter inside the word);
 * - it ends the tail's word and begins the next chunk (tok_tail_start at the
 *   guess: a blank or punctuation after a word), not a control character
 *   (beams never cross a newline). The search then walks the finished
 *   word's token path from the root, constrained by the tail, and expands
 *   the next chunk's first tokens under it; the real key moves the stable
 *   state onto that path, feed() copies its states and reroot() keeps its
 *   subtree (laya bench --keys over English dialogue: model steps on demand
 *   of a blank 2.23 -> 1.20, of punctuation 6.58 -> 5.13, for one step
 *   ahead more a key; docs/RESULTS.md, "Computing ahead between keys").
 * Not a CJK character: inside a CJK run of up to 4 characters (tok_chunk.c)
 * the root stays too, but the guesses are right too rarely there: tried on
 * the Chinese splits, model steps on demand 8.9 -> 7.5 a key for 6.3-6.9
 * more in idle time, p50 -10%; three guesses from the candidates' first
 * characters reach 44% of the keys and 8.7 -> 6.1 steps on demand for 19
 * ahead, and the median key is still a miss (docs/RESULTS.md). */
static int guess_keeps_root(const engine_context *cx, const tok *tk, const uint8_t *g, int gn) {
    size_t m = cx->len - cx->stable;
    if (m == 0 || m + (size_t)gn > ENGINE_MAX_TAIL || (size_t)gn > ENGINE_MAX_CONTEXT - cx->len) return 0;
    uint8_t t[ENGINE_MAX_TAIL];
    memcpy(t, cx->ctx + cx->stable, m);
    memcpy(t + m, g, (size_t)gn);
    if (utf8_cjk_at(t, m + (size_t)gn, m)) return 0;
    const size_t ts = tok_tail_start(tk, t, m + (size_t)gn);
    return ts == 0 || (ts == m && g[0] >= 0x20 && g[0] != 0x7F);
}

laya_status laya_suggest(laya_session *s, int k, laya_suggestion *out, int *n_out) {
    if (n_out) *n_out = 0;
    if (!s || !out || !n_out || k < 0 || k > ENGINE_MAX_K) return LAYA_ERR_ARG;
    engine_feedback_forget(&s->fb);
    /* The gate: in a secret field, and after a prompt for a secret (a
     * terminal's sudo, ssh or gpg prompt, which declares no field purpose)
     * where the rest of the line is the secret, nothing is shown (nor is it
     * kept: learn_index, learn.c). */
    if (engine_gate(s) == ENGINE_GATE_SECRET) return LAYA_OK;
    laya_status st = engine_suggest(s, k, out, n_out);
    if (st == LAYA_OK) set_guesses(&s->sr.guesses, out, *n_out, k);
    if (st == LAYA_OK && *n_out && feedback_on(s)) engine_feedback_shown(&s->fb, s->cx.ctx, s->cx.len, out, *n_out);
    return st;
}

/* Passes over the guesses left that need no work: those that would move
 * the search's root (guess_keeps_root). */
static void skip_guesses(engine_guesses *g, const engine_context *cx, const tok *tk) {
    while (g->done < g->n && !guess_keeps_root(cx, tk, g->text[g->done], g->len[g->done])) g->done++;
}

laya_status laya_session_prefetch(laya_session *s, int *more) {
    if (more) *more = 0;
    if (!s) return LAYA_ERR_ARG;
    engine_guesses *g = &s->sr.guesses;
    skip_guesses(g, &s->cx, s->m->tok);
    if (g->done >= g->n) return LAYA_OK;
    const int i = g->done++;
    const size_t len = s->cx.len;
    /* The guess typed, the search, the guess taken back. Only the tail
     * grows (guess_keeps_root): the stable tokens and the model state are
     * those of the context, so there is nothing for apply to re-encode or
     * feed, and the guesses stay. */
    if (ctx_edit(s, len, g->text[i], (size_t)g->len[i]) != LAYA_OK) return LAYA_ERR_NOMEM;
    engine_search_ahead(s, g->k);
    s->cx.len = len;
    skip_guesses(g, &s->cx, s->m->tok);
    if (more) *more = g->done < g->n;
    return LAYA_OK;
}

laya_status laya_session_shown(laya_session *s, const laya_suggestion *shown, int n) {
    if (!s || n < 0 || n > ENGINE_MAX_K || (n && !shown)) return LAYA_ERR_ARG;
    for (int i = 0; i < n; i++)
        if ((!shown[i].text && shown[i].len) || shown[i].len > ENGINE_MAX_GEN) return LAYA_ERR_ARG;
    if (!feedback_on(s)) {
        engine_feedback_forget(&s->fb);
        return LAYA_OK;
    }
    engine_feedback_shown(&s->fb, NULL, 0, shown, n);
    return LAYA_OK;
}

laya_status laya_session_feedback(laya_session *s, int accepted) {
    if (!s || accepted < -1) return LAYA_ERR_ARG;
    int n = s->fb.shown_n;
    if (!n) return LAYA_OK;
    if (accepted >= n) return LAYA_ERR_ARG;
    engine_feedback_forget(&s->fb);
    if (!feedback_on(s)) return LAYA_OK;
    return engine_feedback_learn(&s->fb, n, s->mem.memory, accepted);
}

/* Numerics: log-softmax in double with max subtraction, summed in double. */
laya_status engine_score(const laya_model *lm, const char *text, size_t len, double *bits) {
    if (!lm || (!text && len) || !bits) return LAYA_ERR_ARG;
    if (len > ENGINE_MAX_CONTEXT) return LAYA_ERR_LIMIT;
    const model *m = lm->m;
    const model_cfg *c = &m->cfg;
    *bits = 0;
    if (len == 0) return LAYA_OK;
    size_t sf = model_state_floats(c);
    float *mem = malloc((sf + model_scratch_floats(c) + 2 * (size_t)c->V + (size_t)c->H) * sizeof(float));
    int32_t *ids = malloc((len + 1) * sizeof *ids);
    if (!mem || !ids) {
        free(mem);
        free(ids);
        return LAYA_ERR_NOMEM;
    }
    model_state st;
    model_state_init(c, &st, mem);
    float *scratch = mem + sf, *logits = scratch + model_scratch_floats(c), *y = logits + c->V;
    ids[0] = TOK_BOS;
    size_t n = 1 + tok_encode(m->tok, (const uint8_t *)text, len, ids + 1, len);
    double total = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        model_step(m, &st, ids[i], scratch, y);
        model_logits(m, y, logits);
        float mx = logits[0];
        for (int32_t v = 1; v < c->V; v++) mx = logits[v] > mx ? logits[v] : mx;
        double z = 0;
        for (int32_t v = 0; v < c->V; v++) z += exp((double)(logits[v] - mx));
        total += ((double)mx + log(z) - (double)logits[ids[i + 1]]) / log(2.0);
    }
    free(mem);
    free(ids);
    *bits = total;
    return LAYA_OK;
}

/* ---- read access for tests and evaluation ---- */

const int32_t *engine_tokens(const laya_session *s, size_t *n) {
    *n = s->cx.n_tok;
    return s->cx.tok;
}

const model_state *engine_state(const laya_session *s, const float **y) {
    if (y) *y = s->cx.cur.y;
    return &s->cx.cur.st;
}

size_t engine_origin(const laya_session *s) { return s->cx.origin; }
size_t engine_tail_start(const laya_session *s) { return s->cx.stable; }
laya_status laya_score(const laya_model *m, const char *text, size_t len, double *bits) {
    return engine_score(m, text, len, bits);
}

const char *laya_version(void) { return LAYA_VERSION; }

laya_status laya_model_describe(const laya_model *lm, laya_model_info *out) {
    if (!lm || !out) return LAYA_ERR_ARG;
    const model_cfg *c = &lm->m->cfg;
    *out = (laya_model_info){.vocab = c->V, .hidden = c->H, .embed = c->D, .layers = c->L,
                             .window = c->W, .kernels = kern_get()->name};
    return LAYA_OK;
}

laya_status laya_session_get_stats(const laya_session *s, laya_session_stats *out) {
    if (!s || !out) return LAYA_ERR_ARG;
    *out = (laya_session_stats){.steps = s->cx.steps, .search_steps = s->sr.search_steps,
                                .search_logits = s->sr.search_logits, .ahead_steps = s->sr.ahead_steps,
                                .ahead_logits = s->sr.ahead_logits};
    return LAYA_OK;
}

laya_status engine_set_learn(laya_session *s, int on, const struct learn_index *ix, double kappa) {
    if (!s || kappa < 0) return LAYA_ERR_ARG;
    s->mem.learn_on = on;
    s->mem.lix = ix;
    s->mem.learn_kappa = kappa > 0 ? kappa : ENGINE_LEARN_KAPPA;
    return LAYA_OK;
}

laya_status laya_session_set_memory(laya_session *s, laya_memory *m) {
    if (!s) return LAYA_ERR_ARG;
    s->mem.memory = m;
    engine_feedback_forget(&s->fb);
    s->mem.lix = NULL;
    s->mem.learn_on = m != NULL;
    return LAYA_OK;
}

laya_status laya_session_set_notes(laya_session *s, laya_notes *n) {
    if (!s) return LAYA_ERR_ARG;
    struct notes_link *l = n ? notes_link_new(n) : NULL;
    if (n && !l) return LAYA_ERR_NOMEM;
    notes_link_free(s->notes);
    s->notes = l;
    return LAYA_OK;
}

laya_status laya_session_notes(laya_session *s, int k, const laya_note **out, int *n_out) {
    if (n_out) *n_out = 0;
    if (!s || !out || !n_out || k < 0 || k > LAYA_NOTES_MAX_K) return LAYA_ERR_ARG;
    *out = NULL;
    if (!s->notes || engine_gate(s) != ENGINE_GATE_OPEN || !k) return LAYA_OK;
    return notes_link_related(s->notes, (const char *)s->cx.ctx, s->cx.len, k, out, n_out);
}

laya_status laya_session_set_intent(laya_session *s, const laya_intent *h) {
    if (!s) return LAYA_ERR_ARG;
    if (h && h->H != s->cfg.H) return LAYA_ERR_ARG;
    s->intent = h;
    s->intent_ver = 0;
    return LAYA_OK;
}

laya_status laya_session_intent_probs(laya_session *s, float p[LAYA_INTENT_CLASSES]) {
    if (!s || !p || !s->intent) return LAYA_ERR_ARG;
    if (s->intent_ver != s->cx.cur_ver + 1) {
        float hid[INTENT_F];
        intent_forward(s->intent, s->cx.cur.y, hid, s->intent_p);
        s->intent_ver = s->cx.cur_ver + 1;
    }
    memcpy(p, s->intent_p, sizeof s->intent_p);
    return LAYA_OK;
}

laya_status laya_session_intent(laya_session *s, const char **name, float *p) {
    if (!s || !name || !p) return LAYA_ERR_ARG;
    *name = NULL;
    *p = 0;
    if (!s->intent || engine_gate(s) != ENGINE_GATE_OPEN) return LAYA_OK;
    float q[LAYA_INTENT_CLASSES];
    laya_session_intent_probs(s, q);
    int best = 0;
    for (int c = 1; c < LAYA_INTENT_CLASSES; c++)
        if (q[c] > q[best]) best = c;
    if (best != INTENT_OTHER && q[best] > s->intent->threshold) {
        *name = intent_names[best];
        *p = q[best];
    }
    return LAYA_OK;
}

laya_status laya_session_set_private(laya_session *s, int on) {
    if (!s) return LAYA_ERR_ARG;
    engine_set_private(s, on != 0);
    return LAYA_OK;
}

void engine_set_private(laya_session *s, int on) {
    s->private_field = on;
    if (on) engine_feedback_forget(&s->fb);   /* a list shown before is not judged in there */
    engine_memory_forget_typed(&s->mem, 1);   /* what was typed there is not kept */
}

uint64_t engine_steps(const laya_session *s) { return s->cx.steps; }
uint64_t engine_search_steps(const laya_session *s) { return s->sr.search_steps; }
