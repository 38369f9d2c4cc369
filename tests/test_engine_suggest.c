/* test_engine_suggest.c - the suggestion search on models whose answers are
 * known: a "unigram" network (every GRU matrix zero, so the output vector is
 * the same after every token and the logits are set through the embedding)
 * gives exact probabilities to check; random networks check the invariants
 * (valid UTF-8, distinct, non-empty, ranked) on many contexts. */
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "engine/engine.h"
#include "util/utf8.h"
#include "test.h"
#include "test_engine_util.h"

/* A model where token id has probability prob[id] at every step (the rest
 * share a negligible mass). H=8, L=1: z-gate bias -30 keeps h' = n =
 * tanh(b_in), the same vector whatever the input, and wo = 0. */
static laya_model *unigram(const int32_t *ids, const double *prob, int n, float **params) {
    laya_model *lm = te_model(300, 8, 4, 1, 2, 0.0f, 1, params);
    if (!lm) return NULL;
    const model *m = engine_model(lm);
    model_params p;
    model_params_point(&m->cfg, *params, &p);
    int H = m->cfg.H;
    for (int i = 0; i < H; i++) {
        p.layer[0].b_ih[H + i] = -30.0f;            /* z ~ 1e-13 */
        p.layer[0].b_ih[2 * H + i] = i == 0 ? 3.0f : 0.0f;
    }
    /* y = rmsnorm(h'): read y[0] from one step, then logits = emb[:,0] y[0]. */
    laya_session *s = NULL;
    if (laya_session_new(lm, &s) != LAYA_OK) return NULL;
    const float *y;
    engine_state(s, &y);
    float y0 = y[0];
    laya_session_free(s);
    for (int32_t v = 0; v < m->cfg.V; v++) p.emb[(size_t)v * H] = -40.0f / y0;
    for (int i = 0; i < n; i++) p.emb[(size_t)ids[i] * H] = (float)log(prob[i]) / y0;
    return lm;
}

static int find(const laya_suggestion *out, int n, const char *text) {
    for (int i = 0; i < n; i++)
        if (out[i].len == strlen(text) && !memcmp(out[i].text, text, out[i].len)) return i;
    return -1;
}

/* P(X) = 0.6, P(' ') = 0.4 at every step. A word ends where a space comes
 * next, so "X" has probability 0.6*0.4, "XX" 0.6^2*0.4, ...; and since
 * every word end is a space, "X " (the word and its blank: emit_spaced) has
 * the same probability and saves one more character. Ranked by
 * prob*length: "X " (0.48), "XX " (0.432), "XXX " (0.346), above XX
 * (0.288). The typed tail is matched first and not repeated: "XX" or " X"
 * typed gives the same answers. */
TEST(engine_suggest_exact_probabilities) {
    float *params = NULL;
    int32_t ids[] = {'X', ' '};
    double pr[] = {0.6, 0.4};
    laya_model *lm = unigram(ids, pr, 2, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    engine_cfg c = engine_cfg_default();
    c.beam = 3;
    c.max_tokens = 4;
    c.max_words = 1;
    c.len_exp = 1.0f;
    CHECK(engine_set_cfg(s, &c) == LAYA_OK);
    const char *ctx[] = {"", "XX", "hello X", "Best regards, X"};
    for (int t = 0; t < 4; t++) {
        CHECK(laya_session_set_context(s, ctx[t], strlen(ctx[t])) == LAYA_OK);
        laya_suggestion out[16];
        int n = 0;
        CHECK(laya_suggest(s, 3, out, &n) == LAYA_OK);
        CHECKF(n == 3, "context '%s': %d suggestions", ctx[t], n);
        CHECKF(find(out, n, "X ") == 0 && find(out, n, "XX ") == 1 && find(out, n, "XXX ") == 2,
               "context '%s': got '%s' '%s' '%s'", ctx[t], out[0].text, out[1].text, out[2].text);
        CHECK_NEAR(out[0].prob, 0.6 * 0.4, 1e-5, 1e-4);
        CHECK_NEAR(out[1].prob, 0.36 * 0.4, 1e-5, 1e-4);
        CHECK_NEAR(out[2].prob, 0.216 * 0.4, 1e-5, 1e-4);
    }
    /* Ranked by probability alone (len_exp 0), the single X wins, with or
     * without its blank (the same probability). */
    c.len_exp = 0.0f;
    CHECK(engine_set_cfg(s, &c) == LAYA_OK);
    laya_suggestion out[16];
    int n = 0;
    CHECK(laya_suggest(s, 1, out, &n) == LAYA_OK && n == 1);
    CHECK(find(out, n, "X") == 0 || find(out, n, "X ") == 0);
    CHECK_NEAR(out[0].prob, 0.6 * 0.4, 1e-5, 1e-4);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* engine_suggest_invariants rejects a list that breaks a promise: from the
 * exact unigram list "X ", "XX ", "XXX " (scores 0.48, 0.432, 0.346), each edit
 * alone: two swapped, one repeated, one dropped, one more than k, a
 * truncated character, a blank at the end, a zero probability. */
TEST(engine_suggest_invariants_catch_broken_lists) {
    float *params = NULL;
    int32_t ids[] = {'X', ' '};
    double pr[] = {0.6, 0.4};
    laya_model *lm = unigram(ids, pr, 2, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    engine_cfg c = engine_cfg_default();
    c.beam = 3;
    c.max_tokens = 4;
    c.max_words = 1;
    c.len_exp = 1.0f;
    CHECK(engine_set_cfg(s, &c) == LAYA_OK);
    CHECK(laya_session_set_context(s, "hello ", 6) == LAYA_OK);
    laya_suggestion out[3], bad[4];
    int n = 0;
    char why[256];
    CHECK(laya_suggest(s, 3, out, &n) == LAYA_OK && n == 3);
    CHECKF(engine_suggest_invariants(s, 3, out, n, why, sizeof why) == LAYA_OK, "%s", why);
    for (int e = 0; e < 9; e++) {
        memcpy(bad, out, sizeof out);
        int nb = 3, k = 3;
        if (e == 0) { bad[0] = out[1]; bad[1] = out[0]; }       /* swapped */
        if (e == 1) bad[2] = out[0];                             /* repeated */
        if (e == 2) nb = 2;                                      /* one left out */
        if (e == 3) { bad[3] = out[2]; nb = 4; }                 /* more than k */
        if (e == 4) { bad[1].text = "X\xe4"; bad[1].len = 2; }   /* truncated */
        if (e == 5) { bad[1].text = "XX  "; bad[1].len = 4; }   /* two blanks at the end */
        if (e == 6) bad[2].prob = 0;
        if (e == 7) k = 2;                                       /* 3 for k = 2 */
        if (e == 8) bad[2].prob = c.min_prob / 2;                /* below the floor */
        CHECKF(engine_suggest_invariants(s, k, bad, nb, why, sizeof why) == LAYA_ERR_INTERNAL,
               "edit %d passed", e);
        printf("    edit %d: %s\n", e, why);
    }
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* With 2 words allowed the search continues over the space: "X X" is
 * 0.6*0.4*0.6*0.4 = 0.0576. */
TEST(engine_suggest_next_word) {
    float *params = NULL;
    int32_t ids[] = {'X', ' '};
    double pr[] = {0.6, 0.4};
    laya_model *lm = unigram(ids, pr, 2, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    engine_cfg c = engine_cfg_default();
    c.beam = 4;
    c.max_tokens = 3;
    c.max_words = 2;
    c.len_exp = 1.0f;
    CHECK(engine_set_cfg(s, &c) == LAYA_OK);
    CHECK(laya_session_set_context(s, "X", 1) == LAYA_OK);
    laya_suggestion out[16];
    int n = 0;
    CHECK(laya_suggest(s, 16, out, &n) == LAYA_OK);
    int i = find(out, n, "X X");
    CHECKF(i >= 0, "no 'X X' among %d", n);
    CHECK_NEAR(out[i].prob, 0.0576, 1e-5, 1e-4);
    CHECK(find(out, n, " X") >= 0);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* Only the three bytes of 中 (E4 B8 AD) are likely: byte orders that are not
 * UTF-8 must never reach a suggestion, and a context that ends inside the
 * character gets the rest of it. */
TEST(engine_suggest_never_broken_utf8) {
    float *params = NULL;
    int32_t ids[] = {0xE4, 0xB8, 0xAD, 0xE3, '.'};
    double pr[] = {0.3, 0.25, 0.25, 0.1, 0.1};
    laya_model *lm = unigram(ids, pr, 5, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    engine_cfg c = engine_cfg_default();
    c.beam = 6;
    c.max_tokens = 7;
    c.max_steps = 24;   /* a wide search: many candidates to check */
    CHECK(engine_set_cfg(s, &c) == LAYA_OK);
    const char *ctx[] = {"", "我们", "我\xe4", "我\xe4\xb8", "ab \xe4\xb8\xad"};
    int total = 0;
    for (int t = 0; t < 5; t++) {
        CHECK(laya_session_set_context(s, ctx[t], strlen(ctx[t])) == LAYA_OK);
        laya_suggestion out[16];
        int n = 0;
        CHECK(laya_suggest(s, 16, out, &n) == LAYA_OK);
        size_t nl = utf8_incomplete_tail((const uint8_t *)ctx[t], strlen(ctx[t]));
        for (int i = 0; i < n; i++) {
            char buf[256];
            memcpy(buf, ctx[t] + strlen(ctx[t]) - nl, nl);
            memcpy(buf + nl, out[i].text, out[i].len);
            CHECKF(out[i].len > 0 && utf8_valid((const uint8_t *)buf, nl + out[i].len),
                   "context %d suggestion %d is broken UTF-8", t, i);
        }
        total += n;
    }
    CHECK(total > 10);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* The budget follows the character before the cursor: cjk_steps after a
 * CJK character, max_steps after anything else (a fresh session each, no
 * pruning, so a search spends what it may). */
TEST(engine_suggest_cjk_budget) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.8f, 33, &params);
    CHECK(lm);
    static const char *const latin[] = {"Thank you for the", "Best re", "the meeting is on Mon"};
    static const char *const cjk[] = {"我们明天", "Thank you 谢", "订个"};
    for (int cj = 2; cj <= 10; cj += 8)
        for (int v = 0; v < 2; v++)
            for (int t = 0; t < 3; t++) {
                const char *ctx = v ? cjk[t] : latin[t];
                engine_cfg c = engine_cfg_default();
                c.max_steps = 2;
                c.cjk_steps = cj;
                c.max_tokens = 4;
                c.prune = 0;
                laya_session *s = NULL;
                CHECK(laya_session_new(lm, &s) == LAYA_OK && engine_set_cfg(s, &c) == LAYA_OK);
                laya_suggestion out[3];
                int n = 0;
                CHECK(laya_session_set_context(s, ctx, strlen(ctx)) == LAYA_OK && laya_suggest(s, 3, out, &n) == LAYA_OK);
                uint64_t used = engine_search_steps(s);
                int budget = v ? cj : 2;
                CHECKF(used <= (uint64_t)budget, "'%s': %llu steps, budget %d", ctx, (unsigned long long)used, budget);
                if (v && cj > 2)
                    CHECKF(used > 2, "'%s': %llu steps, the CJK budget is %d", ctx, (unsigned long long)used, cj);
                laya_session_free(s);
            }
    laya_model_free(lm);
    free(params);
}

/* Random networks, many contexts: every answer non-empty, distinct, within
 * the byte limit, without a newline, valid UTF-8, ranked by score, probs in
 * (0,1], and the same twice in a row; and engine_suggest_invariants holds
 * for every k. */
TEST(engine_suggest_invariants_hold) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.8f, 21, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    engine_cfg c = engine_cfg_default();
    c.beam = 4;
    c.max_tokens = 5;
    c.max_words = 3;
    CHECK(engine_set_cfg(s, &c) == LAYA_OK);
    const char *text = te_text;
    size_t len = strlen(text);
    int shown = 0;
    for (size_t cut = 0; cut <= len; cut += 7) {
        CHECK(laya_session_set_context(s, text, cut) == LAYA_OK);
        laya_suggestion a[16], b[16];
        int na = 0, nb = 0;
        CHECK(laya_suggest(s, 5, a, &na) == LAYA_OK);
        char keep[5][ENGINE_MAX_GEN + 1];
        for (int i = 0; i < na; i++) memcpy(keep[i], a[i].text, a[i].len + 1);
        CHECK(laya_suggest(s, 5, b, &nb) == LAYA_OK && nb == na);
        size_t nl = utf8_incomplete_tail((const uint8_t *)text, cut);
        for (int i = 0; i < na; i++) {
            CHECK(b[i].len > 0 && b[i].len <= (size_t)c.max_bytes);
            CHECK(!memcmp(keep[i], b[i].text, b[i].len) && b[i].text[b[i].len] == 0);
            CHECK(!memchr(b[i].text, '\n', b[i].len));
            CHECK(b[i].prob > 0 && b[i].prob <= 1);
            char buf[256];
            memcpy(buf, text + cut - nl, nl);
            memcpy(buf + nl, b[i].text, b[i].len);
            CHECK(utf8_valid((const uint8_t *)buf, nl + b[i].len));
            for (int j = 0; j < i; j++)
                CHECK(b[j].len != b[i].len || memcmp(b[j].text, b[i].text, b[i].len));
        }
        char why[256];
        CHECKF(engine_suggest_invariants(s, 5, b, nb, why, sizeof why) == LAYA_OK, "at %zu: %s", cut, why);
        int k = 1 + (int)(cut / 7) % ENGINE_MAX_K, nk = 0;
        laya_suggestion o[ENGINE_MAX_K];
        CHECK(laya_suggest(s, k, o, &nk) == LAYA_OK);
        CHECKF(engine_suggest_invariants(s, k, o, nk, why, sizeof why) == LAYA_OK, "at %zu, k %d: %s", cut, k, why);
        shown += na > 0;
    }
    CHECK(shown > 0);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* Bytes of te_text's first at most max bytes, cut back to whole characters. */
static size_t text_head(size_t max) {
    size_t len = strlen(te_text);
    if (len > max) len = max;
    while (len && ((uint8_t)te_text[len] & 0xC0) == 0x80) len--;
    return len;
}

/* The fast keystroke path against its reference: typing a text character by
 * character in one session (search nodes kept and reused across keystrokes,
 * beams stepped in batches) gives the same suggestions as a fresh session
 * per keystroke (no reuse), texts equal and probabilities within 1e-5, for
 * several beam widths and budgets; the reused session runs fewer steps, in
 * its searches and in feeding its stable tokens (a token a search stepped
 * is copied from its node). */
TEST(engine_suggest_reuse_matches_fresh) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.8f, 33, &params);
    CHECK(lm);
    const char *text = te_text;
    size_t len = text_head(300);
    static const int cfgs[][3] = {{3, 4, 24}, {4, 5, 256}, {2, 3, 6}, {1, 2, 3}};
    for (size_t ci = 0; ci < sizeof cfgs / sizeof cfgs[0]; ci++) {
        engine_cfg c = engine_cfg_default();
        c.beam = cfgs[ci][0];
        c.max_tokens = cfgs[ci][1];
        c.max_steps = cfgs[ci][2];
        laya_session *s = NULL;
        CHECK(laya_session_new(lm, &s) == LAYA_OK && engine_set_cfg(s, &c) == LAYA_OK);
        uint64_t fresh_steps = 0;
        for (size_t i = 0; i < len;) {
            i = utf8_next((const uint8_t *)text, len, i);
            laya_suggestion a[3], b[3];
            int na = 0, nb = 0;
            CHECK(laya_session_set_context(s, text, i) == LAYA_OK && laya_suggest(s, 3, a, &na) == LAYA_OK);
            laya_session *f = NULL;
            CHECK(laya_session_new(lm, &f) == LAYA_OK && engine_set_cfg(f, &c) == LAYA_OK);
            CHECK(laya_session_set_context(f, text, i) == LAYA_OK && laya_suggest(f, 3, b, &nb) == LAYA_OK);
            fresh_steps += engine_search_steps(f);
            CHECKF(na == nb, "cfg %zu at %zu: %d vs %d suggestions", ci, i, na, nb);
            for (int j = 0; j < na; j++) {
                CHECKF(a[j].len == b[j].len && !memcmp(a[j].text, b[j].text, a[j].len),
                       "cfg %zu at %zu: '%s' vs '%s'", ci, i, a[j].text, b[j].text);
                CHECK_NEAR(a[j].prob, b[j].prob, 1e-5, 1e-5);
            }
            laya_session_free(f);
        }
        CHECKF(engine_search_steps(s) < fresh_steps, "reused %llu vs fresh %llu steps",
               (unsigned long long)engine_search_steps(s), (unsigned long long)fresh_steps);
        size_t fed;
        engine_tokens(s, &fed);
        CHECKF(engine_steps(s) < fed, "cfg %zu: %llu feeding steps for %zu tokens", ci,
               (unsigned long long)engine_steps(s), fed);
        printf("    beam %d, %d tokens, budget %d: %llu search steps reused vs %llu fresh\n", c.beam,
               c.max_tokens, c.max_steps, (unsigned long long)engine_search_steps(s),
               (unsigned long long)fresh_steps);
        laya_session_free(s);
    }
    laya_model_free(lm);
    free(params);
}

/* Pruning hopeless leaves (suggest.c) against the reference search: typing a
 * text character by character with pruning on and off gives the same
 * suggestions, texts and probabilities bit for bit, at k = 1 and 3 and
 * several beams, budgets and probability floors (a floor hides candidates,
 * so the bound the pruning uses counts only those shown), while the pruned
 * search steps fewer nodes. */
TEST(engine_suggest_pruning_is_exact) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.8f, 33, &params);
    CHECK(lm);
    const char *text = te_text;
    size_t len = text_head(300);
    static const struct {
        int beam, max_tokens, max_steps;
        float min_prob;
    } cfgs[] = {{3, 3, 12, 0.002f}, {4, 5, 40, 0}, {2, 3, 6, 0.05f}, {1, 2, 3, 0}, {3, 3, 12, 0.2f}};
    for (size_t ci = 0; ci < sizeof cfgs / sizeof cfgs[0]; ci++)
        for (int k = 1; k <= 3; k += 2) {
            laya_session *s[2] = {NULL, NULL};
            for (int v = 0; v < 2; v++) {
                engine_cfg c = engine_cfg_default();
                c.beam = cfgs[ci].beam;
                c.max_tokens = cfgs[ci].max_tokens;
                c.max_steps = cfgs[ci].max_steps;
                c.min_prob = cfgs[ci].min_prob;
                c.prune = v;
                CHECK(laya_session_new(lm, &s[v]) == LAYA_OK && engine_set_cfg(s[v], &c) == LAYA_OK);
            }
            for (size_t i = 0; i < len;) {
                i = utf8_next((const uint8_t *)text, len, i);
                laya_suggestion a[3], b[3];
                int na = 0, nb = 0;
                CHECK(laya_session_set_context(s[1], text, i) == LAYA_OK && laya_suggest(s[1], k, a, &na) == LAYA_OK);
                CHECK(laya_session_set_context(s[0], text, i) == LAYA_OK && laya_suggest(s[0], k, b, &nb) == LAYA_OK);
                CHECKF(na == nb, "cfg %zu k %d at %zu: %d vs %d suggestions", ci, k, i, na, nb);
                for (int j = 0; j < na && j < nb; j++)
                    CHECKF(a[j].len == b[j].len && !memcmp(a[j].text, b[j].text, a[j].len) &&
                               a[j].prob == b[j].prob,
                           "cfg %zu k %d at %zu: '%s' %.9g vs '%s' %.9g", ci, k, i, a[j].text,
                           (double)a[j].prob, b[j].text, (double)b[j].prob);
            }
            CHECKF(engine_search_steps(s[1]) < engine_search_steps(s[0]), "cfg %zu k %d: %llu vs %llu steps",
                   ci, k, (unsigned long long)engine_search_steps(s[1]),
                   (unsigned long long)engine_search_steps(s[0]));
            laya_session_free(s[0]);
            laya_session_free(s[1]);
        }
    laya_model_free(lm);
    free(params);
}

/* 1 unless a[0..na) and b[0..nb) are the same list: texts, lengths and
 * probabilities bit for bit. */
static int lists_differ(const laya_suggestion *a, int na, const laya_suggestion *b, int nb) {
    int differ = na != nb;
    for (int j = 0; j < na && j < nb; j++)
        differ |= a[j].len != b[j].len || memcmp(a[j].text, b[j].text, a[j].len) || a[j].prob != b[j].prob;
    return differ;
}

/* Both sessions' lists for text[0..i): s[1]'s into a, s[0]'s into b. 1 if
 * both calls succeeded. */
static int suggest_pair(laya_session *s[2], const char *text, size_t i, int k, laya_suggestion *a, int *na,
                        laya_suggestion *b, int *nb) {
    return laya_session_set_context(s[1], text, i) == LAYA_OK && laya_suggest(s[1], k, a, na) == LAYA_OK &&
           laya_session_set_context(s[0], text, i) == LAYA_OK && laya_suggest(s[0], k, b, nb) == LAYA_OK;
}

/* The same on the shipped model and everyday English, k = 3 and 1, the
 * search as shipped: where a word's twin with its blank (emit_spaced) is a
 * real rival, the floor of a word and its twin (kth_score) is what the
 * pruning rests on. (The test model above, a few hundred characters of
 * training, barely ranks twins against other words: a pair floor inflated
 * a hundredfold passed there; here threefold fails.) */
TEST(engine_suggest_pruning_is_exact_on_the_shipped_model) {
    static const char text[] =
        "Hi Anna, thanks for the update. I will send the report tomorrow morning, "
        "and we can talk about the rest of the plan on Monday. It was nice to meet "
        "you at the conference last week. Best regards, Tom";
    char err[256];
    laya_model *lm = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &lm, err, sizeof err) == LAYA_OK, "%s", err);
    size_t len = strlen(text);
    for (int k = 3; k >= 1; k -= 2) {
        laya_session *s[2] = {NULL, NULL};
        for (int v = 0; v < 2; v++) {
            engine_cfg c = engine_cfg_default();
            c.prune = v;
            CHECK(laya_session_new(lm, &s[v]) == LAYA_OK && engine_set_cfg(s[v], &c) == LAYA_OK);
        }
        int differ = 0;
        for (size_t i = 1; i <= len && !differ; i++) {
            laya_suggestion a[3], b[3];
            int na = 0, nb = 0;
            CHECK(suggest_pair(s, text, i, k, a, &na, b, &nb));
            differ = lists_differ(a, na, b, nb);
            CHECKF(!differ, "k %d after '%.*s': '%s' vs '%s' first", k, (int)i, text, na ? a[0].text : "",
                   nb ? b[0].text : "");
        }
        CHECKF(engine_search_steps(s[1]) < engine_search_steps(s[0]), "k %d: %llu vs %llu steps", k,
               (unsigned long long)engine_search_steps(s[1]), (unsigned long long)engine_search_steps(s[0]));
        laya_session_free(s[0]);
        laya_session_free(s[1]);
    }
    laya_model_free(lm);
}

/* laya_session_prefetch (engine.c) between keystrokes: every list is the
 * one a session without it shows, text and probability, on English, text
 * in capitals and Chinese; the model reads the same context (the same
 * steps: the guesses never move the stable state); and the keystrokes'
 * own searches step less, the prefetch's steps counted apart. Once a call
 * says no guess is left, another steps nothing; a fresh session has no
 * guess. */
TEST(engine_prefetch_changes_nothing_but_the_steps) {
    static const char text[] =
        "Hi Anna, thanks for the update. I will send the report tomorrow morning, "
        "and we can talk about the REST OF THE PLAN on Monday.\n我们明天上午九点开会，"
        "Best regards, Tom";
    char err[256];
    laya_model *lm = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &lm, err, sizeof err) == LAYA_OK, "%s", err);
    size_t len = strlen(text);
    for (int k = 3; k >= 1; k -= 2) {
        laya_session *s[2] = {NULL, NULL};
        for (int v = 0; v < 2; v++) CHECK(laya_session_new(lm, &s[v]) == LAYA_OK);
        laya_session_stats st;
        int more = 1;
        CHECK(laya_session_prefetch(s[1], &more) == LAYA_OK && !more && laya_session_get_stats(s[1], &st) == LAYA_OK);
        CHECKF(st.ahead_steps == 0, "a fresh session prefetched %llu steps", (unsigned long long)st.ahead_steps);
        int differ = 0, again = 0;
        for (size_t i = utf8_next((const uint8_t *)text, len, 0); i <= len && !differ;
             i = i < len ? utf8_next((const uint8_t *)text, len, i) : len + 1) {
            laya_suggestion a[3], b[3];
            int na = 0, nb = 0;
            CHECK(suggest_pair(s, text, i, k, a, &na, b, &nb));
            differ = lists_differ(a, na, b, nb);
            CHECKF(!differ, "k %d after '%.*s': '%s' vs '%s' first", k, (int)i, text, na ? a[0].text : "",
                   nb ? b[0].text : "");
            char first[64] = "";
            if (na) snprintf(first, sizeof first, "%.*s", (int)a[0].len, a[0].text);
            int calls = 0;
            for (more = 1; more && calls < 3; calls++) CHECK(laya_session_prefetch(s[1], &more) == LAYA_OK);
            CHECKF(!more, "k %d after '%.*s': more guesses than %d", k, (int)i, text, calls);
            CHECK(laya_session_get_stats(s[1], &st) == LAYA_OK);
            /* the texts returned stay valid (laya.h) */
            CHECKF(!na || (a[0].len == strlen(first) && !memcmp(a[0].text, first, a[0].len)),
                   "k %d after '%.*s': '%s' became '%.*s'", k, (int)i, text, first, (int)a[0].len, a[0].text);
            uint64_t ahead = st.ahead_steps;
            CHECK(laya_session_prefetch(s[1], &more) == LAYA_OK && !more && laya_session_get_stats(s[1], &st) == LAYA_OK);
            again += st.ahead_steps != ahead;
            /* the context is as it was: the same list again, without a set_context */
            CHECK(laya_suggest(s[1], k, a, &na) == LAYA_OK);
            CHECKF(na == nb && (!na || (a[0].len == strlen(first) && !memcmp(a[0].text, first, a[0].len))),
                   "k %d after '%.*s': '%s' before the prefetch, '%s' after", k, (int)i, text, first,
                   na ? a[0].text : "");
        }
        CHECKF(!again, "k %d: a second prefetch stepped the model %d times", k, again);
        laya_session_stats s0, s1;
        CHECK(laya_session_get_stats(s[0], &s0) == LAYA_OK && laya_session_get_stats(s[1], &s1) == LAYA_OK);
        CHECKF(s0.steps == s1.steps, "k %d: the context read in %llu vs %llu steps", k,
               (unsigned long long)s0.steps, (unsigned long long)s1.steps);
        CHECKF(s1.search_steps < s0.search_steps * 3 / 4 && s1.ahead_steps > 0,
               "k %d: %llu search steps with prefetch (%llu ahead) vs %llu without", k,
               (unsigned long long)s1.search_steps, (unsigned long long)s1.ahead_steps,
               (unsigned long long)s0.search_steps);
        CHECK(s0.ahead_steps == 0);
        laya_session_free(s[0]);
        laya_session_free(s[1]);
    }
    laya_model_free(lm);
}

/* A guess that ends the word (the blank after "your"): the session computes
 * it under the same root (the finished word's path, then the next word's
 * first tokens), and when the blank comes the stable state moves onto that
 * path: the next search steps the model far less than without the
 * prefetch, and its list is the same. */
TEST(engine_prefetch_computes_the_blank_after_a_word) {
    static const char *const ctx[] = {"Thank you for your", "Hi Anna, thanks for the update",
                                      "I will send you the report", "See you at the"};
    char err[256];
    laya_model *lm = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &lm, err, sizeof err) == LAYA_OK, "%s", err);
    uint64_t with = 0, without = 0, lg_with = 0, lg_without = 0;
    int blanks = 0;
    for (size_t c = 0; c < sizeof ctx / sizeof *ctx; c++) {
        laya_session *s[2] = {NULL, NULL};
        for (int v = 0; v < 2; v++) CHECK(laya_session_new(lm, &s[v]) == LAYA_OK);
        laya_suggestion a[3], b[3];
        int na = 0, nb = 0, more = 1, calls = 0;
        const size_t n = strlen(ctx[c]);
        CHECK(suggest_pair(s, ctx[c], n, 3, a, &na, b, &nb) && !lists_differ(a, na, b, nb));
        int blank = 0;
        for (int j = 0; j < na; j++) blank |= a[j].text[0] == ' ';
        blanks += blank;
        while (more && calls++ < 3) CHECK(laya_session_prefetch(s[1], &more) == LAYA_OK);
        laya_session_stats st[2][2];
        for (int v = 0; v < 2; v++) CHECK(laya_session_get_stats(s[v], &st[v][0]) == LAYA_OK);
        char typed[64];
        snprintf(typed, sizeof typed, "%s ", ctx[c]);
        CHECK(suggest_pair(s, typed, n + 1, 3, a, &na, b, &nb));
        CHECKF(!lists_differ(a, na, b, nb), "after '%s': '%s' with the prefetch, '%s' without", typed,
               na ? a[0].text : "", nb ? b[0].text : "");
        for (int v = 0; v < 2; v++) CHECK(laya_session_get_stats(s[v], &st[v][1]) == LAYA_OK);
        /* the blank's model steps (the stable tokens read, by copies of the
         * nodes' states or by steps, and the search) and full logits vectors */
        uint64_t used[2], lg[2];
        for (int v = 0; v < 2; v++) {
            used[v] = st[v][1].steps + st[v][1].search_steps - st[v][0].steps - st[v][0].search_steps;
            lg[v] = st[v][1].search_logits - st[v][0].search_logits;
        }
        CHECK(used[0] >= used[1]);
        if (blank) {
            without += used[0];
            with += used[1];
            lg_without += lg[0];
            lg_with += lg[1];
        }
        laya_session_free(s[0]);
        laya_session_free(s[1]);
    }
    CHECKF(blanks >= 2, "only %d of the contexts had a suggestion that begins with a blank", blanks);
    CHECKF(with * 2 < without, "the blank after a word: %llu model steps with the prefetch, %llu without",
           (unsigned long long)with, (unsigned long long)without);
    /* the new root's full logits too: kept from the search ahead (keep_logits) */
    CHECKF(lg_with * 4 < lg_without, "the blank after a word: %llu full logits vectors with the prefetch, %llu without",
           (unsigned long long)lg_with, (unsigned long long)lg_without);
    laya_model_free(lm);
}

/* Found by fuzz_session: after the guesses were all computed ahead, an
 * edit into a secret ("Password: hun": laya_suggest answers nothing and
 * makes no guesses) left the count of guesses done above the count of
 * guesses, and the next prefetch read past them. It must do nothing. */
TEST(engine_prefetch_after_a_secret_does_nothing) {
    char err[256];
    laya_model *lm = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &lm, err, sizeof err) == LAYA_OK, "%s", err);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    static const char a[] = "I will send you the re", b[] = "Password: hun";
    laya_suggestion out[3];
    int n = 0, more = 1, calls = 0;
    CHECK(laya_session_set_context(s, a, strlen(a)) == LAYA_OK && laya_suggest(s, 3, out, &n) == LAYA_OK && n > 1);
    while (more && calls++ < 3) CHECK(laya_session_prefetch(s, &more) == LAYA_OK);
    CHECKF(!more && calls == 2, "%d calls for the two guesses of '%s'", calls, a);
    laya_session_stats st0, st1;
    CHECK(laya_session_set_context(s, b, strlen(b)) == LAYA_OK && laya_suggest(s, 3, out, &n) == LAYA_OK && n == 0);
    CHECK(laya_session_get_stats(s, &st0) == LAYA_OK);
    CHECK(laya_session_prefetch(s, &more) == LAYA_OK && !more);
    CHECK(laya_session_get_stats(s, &st1) == LAYA_OK && st1.ahead_steps == st0.ahead_steps);
    laya_session_free(s);
    laya_model_free(lm);
}

/* Caps lock: a partial word in capitals after a word in capitals is
 * completed as its lowercase form and shown in capitals: the suggestions
 * for "... PREV WOR" are those for "... PREV wor" with their letters
 * raised, case duplicates dropped, probabilities equal. A single capital,
 * or capitals after a lowercase word (an acronym), are left as typed. */
TEST(engine_suggest_capitals_follow_the_lowercase_word) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.8f, 33, &params);
    CHECK(lm);
    size_t len = text_head(2000), tried = 0;
    char a[2100], b[2100];
    for (size_t i = 60; i + 3 < len && tried < 12; i += 37) {
        while (i + 3 < len && !(te_text[i - 1] == ' ' && islower((unsigned char)te_text[i]) &&
                                islower((unsigned char)te_text[i + 1]) && islower((unsigned char)te_text[i + 2])))
            i++;
        if (i + 3 >= len) break;
        size_t n = i + 3;
        /* a: the previous word and the tail in capitals (caps lock); b: the
         * same with the tail in lowercase */
        size_t pw = i - 1;
        while (pw > 0 && te_text[pw - 1] == ' ') pw--;
        while (pw > 0 && te_text[pw - 1] != ' ' && te_text[pw - 1] != '\n') pw--;
        int letters = 0, ascii = 1;
        for (size_t j = pw; j < i; j++) {
            letters += isalpha((unsigned char)te_text[j]) != 0;
            ascii &= (unsigned char)te_text[j] < 0x80;
        }
        if (letters < 2 || !ascii) continue;  /* caps lock needs a word before */
        tried++;
        memcpy(a, te_text, n);
        for (size_t j = pw; j < n; j++) a[j] = (char)toupper((unsigned char)a[j]);
        memcpy(b, a, n);
        memcpy(b + i, te_text + i, n - i);
        laya_session *sa = NULL, *sb = NULL;
        CHECK(laya_session_new(lm, &sa) == LAYA_OK && laya_session_new(lm, &sb) == LAYA_OK);
        laya_suggestion oa[3], ob[16];
        int na = 0, nb = 0;
        CHECK(laya_session_set_context(sa, a, n) == LAYA_OK && laya_suggest(sa, 3, oa, &na) == LAYA_OK);
        char why[256];
        CHECKF(engine_suggest_invariants(sa, 3, oa, na, why, sizeof why) == LAYA_OK, "at %zu: %s", i, why);
        CHECK(laya_session_set_context(sb, b, n) == LAYA_OK && laya_suggest(sb, 16, ob, &nb) == LAYA_OK);
        char want[3][ENGINE_MAX_GEN + 1];
        float wp[3];
        int nw = 0;
        for (int j = 0; j < nb && nw < 3; j++) {
            char u[ENGINE_MAX_GEN + 1];
            for (size_t c = 0; c <= ob[j].len; c++) u[c] = (char)toupper((unsigned char)ob[j].text[c]);
            int dup = 0;
            for (int q = 0; q < nw; q++) dup |= !strcmp(want[q], u);
            if (dup) continue;
            memcpy(want[nw], u, ob[j].len + 1);
            wp[nw++] = ob[j].prob;
        }
        CHECKF(na == nw, "at %zu: %d vs %d suggestions", i, na, nw);
        for (int j = 0; j < na && j < nw; j++)
            CHECKF(!strcmp(oa[j].text, want[j]) && oa[j].prob == wp[j], "at %zu: '%s' %g vs '%s' %g", i,
                   oa[j].text, (double)oa[j].prob, want[j], (double)wp[j]);
        laya_session_free(sa);
        laya_session_free(sb);
    }
    CHECK(tried >= 5);
    /* no folding: one capital after capitals, capitals after a lowercase word */
    static const char *const kept[][2] = {{"THE T", "THE t"}, {"the TH", "the th"}};
    for (int c = 0; c < 2; c++) {
        laya_session *s2[2];
        laya_suggestion o[2][3];
        int no[2];
        for (int v = 0; v < 2; v++) {
            CHECK(laya_session_new(lm, &s2[v]) == LAYA_OK);
            CHECK(laya_session_set_context(s2[v], kept[c][v], strlen(kept[c][v])) == LAYA_OK &&
                  laya_suggest(s2[v], 3, o[v], &no[v]) == LAYA_OK);
        }
        int differ = no[0] != no[1];
        for (int j = 0; j < no[0] && j < no[1] && !differ; j++) differ = o[0][j].prob != o[1][j].prob;
        CHECKF(differ, "'%s' was folded", kept[c][0]);
        laya_session_free(s2[0]);
        laya_session_free(s2[1]);
    }
    laya_model_free(lm);
    free(params);
}

/* The ranking score: expected characters saved. A CJK candidate saves one
 * character less than it has (accepting costs a keystroke), so a sure
 * single character ranks below a likely two-character word; in alphabetic
 * text the characters are counted whole; blanks before the text do not
 * decide the script. */
TEST(engine_rank_score_counts_what_is_saved) {
    const uint8_t one[] = "\xe4\xbd\xa0", two[] = "\xe4\xbd\xa0\xe5\xa5\xbd", sp[] = " \xe4\xbd\xa0\xe5\xa5\xbd";
    CHECK(engine_rank_score(one, 3, 0.9, 1.0f) == 0.0);
    CHECK_NEAR(engine_rank_score(two, 6, 0.3, 1.0f), 0.3, 1e-12, 0);
    CHECK_NEAR(engine_rank_score(sp, 7, 0.3, 1.0f), 0.6, 1e-12, 0);   /* the blank is a character saved */
    CHECK(engine_rank_score((const uint8_t *)"s", 1, 0.9, 1.0f) > engine_rank_score(two, 6, 0.3, 1.0f));
    CHECK_NEAR(engine_rank_score((const uint8_t *)"ing", 3, 0.5, 1.0f), 1.5, 1e-12, 0);
    CHECK_NEAR(engine_rank_score((const uint8_t *)"ing", 3, 0.5, 2.0f), 4.5, 1e-12, 0);
}
