/* test_engine.c - sessions: diffed contexts and checkpoints against fresh
 * sessions, the O(1) keystroke claims, the window, hostile arguments. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/utf8.h"
#include "test.h"
#include "test_engine_util.h"

static const char *const pieces[] = {
    "a", "e", "t", "h", " ", " ", "the", " report", ",", ".", "\n", "'s", "12", "3",
    "我", "们", "订个", "外卖", "。", "，", "  ", "\t", "\xe4", "\xb8\xad", "XQ", "é",
};

/* Compares s with a fresh session fed its context: tokens exactly, the model
 * state and output vector to 1e-6; and the stable tokens with the tokenizer's
 * own encoding of the whole text (they must be a prefix of it). */
static int same_as_fresh(const laya_model *lm, laya_session *s, const char *text, size_t len) {
    const model *m = engine_model(lm);
    laya_session *f = NULL;
    if (laya_session_new(lm, &f) != LAYA_OK) return 0;
    laya_status st = laya_session_set_context(f, text, len);
    size_t n1, n2;
    const int32_t *t1 = engine_tokens(s, &n1), *t2 = engine_tokens(f, &n2);
    int ok = st == LAYA_OK && n1 == n2 && !memcmp(t1, t2, n1 * sizeof *t1);
    if (!ok) {
        fprintf(stderr, "    tokens differ: %zu vs %zu for %zu bytes:", n1, n2, len);
        for (size_t i = 0; i < len; i++) fprintf(stderr, " %02x", (uint8_t)text[i]);
        fprintf(stderr, "\n    incremental:");
        for (size_t i = 0; i < n1; i++) fprintf(stderr, " %d", t1[i]);
        fprintf(stderr, "\n    fresh:      ");
        for (size_t i = 0; i < n2; i++) fprintf(stderr, " %d", t2[i]);
        fputc('\n', stderr);
    }
    const float *y1, *y2;
    const model_state *a = engine_state(s, &y1), *b = engine_state(f, &y2);
    size_t nf = model_state_floats(&m->cfg);
    if (ok && a->n != b->n) ok = 0;
    for (size_t i = 0; ok && i < nf; i++)
        if (fabsf(a->h[i] - b->h[i]) > 1e-6f) {
            fprintf(stderr, "    state[%zu] %g vs %g\n", i, a->h[i], b->h[i]);
            ok = 0;
        }
    for (int i = 0; ok && i < m->cfg.H; i++)
        if (fabsf(y1[i] - y2[i]) > 1e-6f) ok = 0;
    if (ok && engine_origin(s) == 0) {
        int32_t *all = malloc((len + 1) * sizeof *all);
        size_t na = tok_encode(m->tok, (const uint8_t *)text, len, all, len + 1);
        ok = na + 1 >= n1 && !memcmp(all, t1 + 1, (n1 - 1) * sizeof *all);
        if (!ok) fprintf(stderr, "    stable tokens are not a prefix of tok_encode\n");
        free(all);
    }
    laya_session_free(f);
    return ok;
}

TEST(engine_edits_match_fresh) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    char text[4096];
    size_t len = 0;
    uint32_t rng = 12345;
    int n_pieces = (int)(sizeof pieces / sizeof pieces[0]);
    for (int step = 0; step < 2000; step++) {
        int op = (int)(te_rand(&rng) % 100);
        laya_status st;
        if (op < 55) {                       /* type one piece */
            const char *p = pieces[te_rand(&rng) % (uint32_t)n_pieces];
            size_t n = strlen(p);
            if (len + n >= sizeof text) { len = 0; st = laya_session_reset(s); }
            else {
                memcpy(text + len, p, n);
                len += n;
                st = (step & 1) ? laya_session_type(s, p, n) : laya_session_set_context(s, text, len);
            }
        } else if (op < 75) {                /* backspace 1..3 characters */
            size_t k = 1 + te_rand(&rng) % 3;
            for (size_t i = 0; i < k; i++) len = utf8_prev((const uint8_t *)text, len);
            st = (step & 1) ? laya_session_set_context(s, text, len) : laya_session_backspace(s, k);
        } else if (op < 92) {                /* cursor jump: cut anywhere, type something */
            len = len ? te_rand(&rng) % (uint32_t)len : 0;
            const char *p = pieces[te_rand(&rng) % (uint32_t)n_pieces];
            memcpy(text + len, p, strlen(p));
            len += strlen(p);
            st = laya_session_set_context(s, text, len);
        } else if (op < 97) {                /* paste a long piece */
            for (int i = 0; i < 20 && len + 16 < sizeof text; i++) {
                const char *p = pieces[te_rand(&rng) % (uint32_t)n_pieces];
                memcpy(text + len, p, strlen(p));
                len += strlen(p);
            }
            st = laya_session_set_context(s, text, len);
        } else {                             /* delete everything */
            len = 0;
            st = (step & 1) ? laya_session_set_context(s, text, 0) : laya_session_reset(s);
        }
        CHECKF(st == LAYA_OK, "step %d: status %d", step, (int)st);
        CHECKF(same_as_fresh(lm, s, text, len), "step %d (op %d), %zu bytes", step, op, len);
    }
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* Edits far back in a long context (the common prefix with the old context
 * is found block-wise: laya_session_set_context), at and around the block
 * boundaries: one letter replaced in place (same length) and the text cut
 * there; each must leave the session as a fresh one reading the new text. */
TEST(engine_edits_far_back_match_fresh) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(lm);
    enum { N = 13000 };
    char *text = malloc(N + 1);
    size_t len = 0, n_pieces = sizeof pieces / sizeof pieces[0];
    for (uint32_t rng = 99; len + 32 < N;) {
        const char *p = pieces[te_rand(&rng) % (uint32_t)n_pieces];
        memcpy(text + len, p, strlen(p));
        len += strlen(p);
    }
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    static const size_t at[] = {0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 12287, 12288};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        size_t k = at[i];
        while (k < len && ((uint8_t)text[k] & 0xC0) == 0x80) k++;  /* a character's first byte */
        CHECK(laya_session_set_context(s, text, len) == LAYA_OK);
        char was = text[k];
        if (((uint8_t)was & 0x80) == 0) {
            text[k] = was == 'q' ? 'z' : 'q';
            CHECK(laya_session_set_context(s, text, len) == LAYA_OK);
            CHECKF(same_as_fresh(lm, s, text, len), "letter replaced at %zu", k);
            text[k] = was;
        }
        CHECK(laya_session_set_context(s, text, k) == LAYA_OK);
        CHECKF(same_as_fresh(lm, s, text, k), "cut at %zu", k);
    }
    laya_session_free(s);
    free(text);
    laya_model_free(lm);
    free(params);
}

/* A long text fills the ring and makes the sparse checkpoints thin out;
 * jumps far back must still land on the same state. */
TEST(engine_long_text_rewinds) {
    float *params = NULL;
    laya_model *lm = te_model(300, 12, 4, 1, 5, 0.5f, 3, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    size_t cap = 12000, len = 0;
    char *text = malloc(cap);
    while (len + 400 < cap) {
        size_t n = strlen(te_text) < cap - len ? strlen(te_text) : cap - len;
        memcpy(text + len, te_text, n);
        len += n;
    }
    CHECK(laya_session_set_context(s, text, len) == LAYA_OK);
    size_t n_tok;
    engine_tokens(s, &n_tok);
    CHECK(n_tok > ENGINE_SPARSE * ENGINE_SPARSE_STEP);
    uint32_t rng = 99;
    for (int i = 0; i < 12; i++) {
        size_t cut = te_rand(&rng) % (uint32_t)len;
        text[cut] = (char)('a' + te_rand(&rng) % 26);
        uint64_t before = engine_steps(s);
        CHECK(laya_session_set_context(s, text, len) == LAYA_OK);
        CHECKF(same_as_fresh(lm, s, text, len), "edit at %zu", cut);
        /* A rewind re-reads at most the tokens after the change plus the
         * spacing of the sparse checkpoints. */
        size_t n_after;
        const int32_t *t = engine_tokens(s, &n_after);
        (void)t;
        CHECK(engine_steps(s) - before <= n_after);
    }
    free(text);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* Typing inside a word runs no model step; a finished word costs exactly
 * its tokens; a backspace inside the tail costs nothing. */
TEST(engine_keystroke_costs) {
    float *params = NULL;
    laya_model *lm = te_model(400, 16, 8, 2, 3, 0.5f, 5, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    CHECK(laya_session_set_context(s, "Thank you for the", 17) == LAYA_OK);
    uint64_t st0 = engine_steps(s);
    size_t n0;
    engine_tokens(s, &n0);
    CHECK(laya_session_type(s, " rep", 4) == LAYA_OK);
    CHECK(laya_session_type(s, "o", 1) == LAYA_OK);
    CHECK(laya_session_backspace(s, 1) == LAYA_OK);
    CHECK(laya_session_type(s, "or", 2) == LAYA_OK);
    size_t n1;
    engine_tokens(s, &n1);
    /* " the" became stable when the space arrived: its tokens, nothing more. */
    CHECK(engine_steps(s) - st0 == n1 - n0);
    uint64_t st1 = engine_steps(s);
    CHECK(laya_session_type(s, "t", 1) == LAYA_OK);
    CHECK(engine_steps(s) == st1);
    CHECK(engine_tail_start(s) == 17);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

TEST(engine_window_bounds_history) {
    float *params = NULL;
    laya_model *lm = te_model(300, 8, 4, 1, 2, 0.5f, 11, &params);
    CHECK(lm);
    laya_session *s = NULL, *f = NULL;
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    size_t len = ENGINE_WINDOW + 5000, n = strlen(te_text);
    char *text = malloc(len);
    for (size_t i = 0; i < len; i++) text[i] = te_text[i % n];
    CHECK(laya_session_set_context(s, text, len) == LAYA_OK);
    size_t o = engine_origin(s);
    CHECK(o >= len - ENGINE_WINDOW && o < len);
    CHECK(text[o - 1] == ' ' || text[o - 1] == '\n');
    /* The session reads exactly what a fresh session fed the window reads. */
    CHECK(laya_session_new(lm, &f) == LAYA_OK);
    CHECK(laya_session_set_context(f, text + o, len - o) == LAYA_OK);
    size_t n1, n2;
    const int32_t *t1 = engine_tokens(s, &n1), *t2 = engine_tokens(f, &n2);
    CHECK(n1 == n2 && !memcmp(t1, t2, n1 * sizeof *t1));
    /* Typing on does not move the window. */
    CHECK(laya_session_type(s, " more", 5) == LAYA_OK);
    CHECK(engine_origin(s) == o);
    free(text);
    laya_session_free(f);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

TEST(engine_hostile_arguments) {
    float *params = NULL;
    laya_model *lm = te_model(300, 8, 4, 1, 2, 0.5f, 1, &params);
    CHECK(lm);
    laya_session *s = NULL;
    CHECK(laya_session_new(NULL, &s) == LAYA_ERR_ARG);
    CHECK(laya_session_new(lm, NULL) == LAYA_ERR_ARG);
    CHECK(laya_session_new(lm, &s) == LAYA_OK);
    CHECK(laya_session_set_context(NULL, "a", 1) == LAYA_ERR_ARG);
    CHECK(laya_session_set_context(s, NULL, 3) == LAYA_ERR_ARG);
    CHECK(laya_session_set_context(s, NULL, 0) == LAYA_OK);
    CHECK(laya_session_set_context(s, "a", (size_t)ENGINE_MAX_CONTEXT + 1) == LAYA_ERR_LIMIT);
    CHECK(laya_session_type(s, NULL, 2) == LAYA_ERR_ARG);
    CHECK(laya_session_backspace(s, 1000) == LAYA_OK);  /* more than there is: empties */
    laya_suggestion out[16];
    int n = -1;
    CHECK(laya_suggest(s, 17, out, &n) == LAYA_ERR_ARG && n == 0);
    CHECK(laya_suggest(s, -1, out, &n) == LAYA_ERR_ARG);
    CHECK(laya_suggest(s, 3, NULL, &n) == LAYA_ERR_ARG);
    CHECK(laya_suggest(s, 0, out, &n) == LAYA_OK && n == 0);
    /* Invalid UTF-8 and NUL bytes are text like any other. */
    CHECK(laya_session_set_context(s, "ab\xff\xfe\0c\xe4", 7) == LAYA_OK);
    CHECK(laya_suggest(s, 3, out, &n) == LAYA_OK);
    engine_cfg c = engine_cfg_default();
    c.beam = 0;
    CHECK(engine_set_cfg(s, &c) == LAYA_ERR_ARG);
    c = engine_cfg_default();
    c.max_bytes = ENGINE_MAX_GEN + 1;
    CHECK(engine_set_cfg(s, &c) == LAYA_ERR_ARG);
    char err[256] = "";
    laya_model *bad = NULL;
    CHECK(laya_model_load("/nonexistent/model.safetensors", &bad, err, sizeof err) != LAYA_OK);
    CHECK(bad == NULL && err[0]);
    CHECK(laya_model_load(NULL, &bad, err, sizeof err) == LAYA_ERR_ARG);
    laya_session_free(s);
    laya_model_free(lm);
    free(params);
}

/* The public API beside the session calls: search options with their
 * ranges, scoring and the model description agree with the internals. */
TEST(engine_public_search_opts_score_and_describe) {
    float *params = NULL;
    laya_model *m = te_model(300, 16, 8, 2, 5, 0.3f, 11, &params);
    CHECK(m);
    laya_session *s = NULL;
    CHECK(laya_session_new(m, &s) == LAYA_OK);
    laya_search_opts o = laya_search_defaults();
    CHECK(o.beam >= 1 && o.beam <= LAYA_MAX_BEAM && o.max_steps <= LAYA_MAX_STEPS);
    CHECK(laya_session_set_search(s, &o) == LAYA_OK);
    laya_search_opts bad = o;
    bad.beam = LAYA_MAX_BEAM + 1;
    CHECK(laya_session_set_search(s, &bad) == LAYA_ERR_ARG);
    bad = o, bad.max_words = LAYA_MAX_WORDS + 1;
    CHECK(laya_session_set_search(s, &bad) == LAYA_ERR_ARG);
    bad = o, bad.max_bytes = LAYA_MAX_SUGGESTION + 1;
    CHECK(laya_session_set_search(s, &bad) == LAYA_ERR_ARG);
    bad = o, bad.cjk_steps = 0;
    CHECK(laya_session_set_search(s, &bad) == LAYA_ERR_ARG);
    bad = o, bad.cjk_steps = LAYA_MAX_STEPS + 1;
    CHECK(laya_session_set_search(s, &bad) == LAYA_ERR_ARG);
    CHECK(o.cjk_steps >= o.max_steps && o.cjk_steps <= LAYA_MAX_STEPS);
    double b1 = -1, b2 = -2;
    CHECK(laya_score(m, "the cat", 7, &b1) == LAYA_OK && engine_score(m, "the cat", 7, &b2) == LAYA_OK);
    CHECK(b1 > 0 && b1 == b2);
    laya_model_info info;
    CHECK(laya_model_describe(m, &info) == LAYA_OK);
    CHECK(info.vocab == 300 && info.hidden == 16 && info.embed == 8 && info.layers == 2 && info.window == 5);
    CHECK(info.kernels && *info.kernels);
    laya_session_stats st0, st1;
    CHECK(laya_session_get_stats(s, &st0) == LAYA_OK);
    laya_suggestion out[3];
    int n;
    CHECK(laya_session_set_context(s, "the ca", 6) == LAYA_OK && laya_suggest(s, 3, out, &n) == LAYA_OK);
    CHECK(laya_session_get_stats(s, &st1) == LAYA_OK && st1.steps > st0.steps);
    CHECK(st1.steps == engine_steps(s) && st1.search_steps == engine_search_steps(s));
    CHECK(!strcmp(laya_version(), LAYA_VERSION));
    laya_session_free(s);
    laya_model_free(m);
    free(params);
}

/* laya_goes_before_blank: the six marks a front end types before the blank
 * a suggestion brought, nothing else (a code point whose low byte is one of
 * them included). */
TEST(engine_punctuation_goes_before_the_blank) {
    const char *marks = ".,;:!?";
    for (const char *p = marks; *p; p++) CHECKF(laya_goes_before_blank((uint32_t)*p), "'%c'", *p);
    const uint32_t others[] = {0, ' ', 'a', 'Z', '0', '-', '\'', '"', ')', '\n', 0x3002 /* 。 */, 0x12E, 0x12C};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        CHECKF(!laya_goes_before_blank(others[i]), "U+%04X", (unsigned)others[i]);
}
