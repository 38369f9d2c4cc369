/* test_engine_learn.c - the personal memory inside the search (blend.c):
 * nothing changes without evidence, a remembered line is proposed, and a
 * private field or learning off sees none of it; the typist's feedback
 * (laya_session_feedback): nothing changes without it, a suggestion passed
 * over loses the top and recovers by decay, by being taken, or by a
 * forget, and a first word passed over takes its phrases down; the
 * continuous cache of the text typed (nc.c): what followed a like context
 * is proposed, never off the record, a short text's cache is trusted
 * little, and edits leave it as a fresh read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/decide.h"
#include "engine/session.h"
#include "learn/learn.h"
#include "learn/learn_fb.h"
#include "learn/learn_index.h"
#include "learn/learn_store.h"
#include "test.h"
#include "test_engine_util.h"

/* The k suggestions of s for ctx, as one string joined by '|'. */
static void suggest(laya_session *s, const char *ctx, char *out, size_t cap) {
    laya_suggestion sg[3];
    int n = 0;
    out[0] = 0;
    if (laya_session_set_context(s, ctx, strlen(ctx)) != LAYA_OK || laya_suggest(s, 3, sg, &n) != LAYA_OK) {
        snprintf(out, cap, "(error)");
        return;
    }
    for (int i = 0; i < n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s%.*s@%.6f", i ? "|" : "", (int)sg[i].len, sg[i].text, (double)sg[i].prob);
    }
}

/* A session of m that learns from the text typed in it (no store), or NULL. */
static laya_session *learning_session(laya_model *m) {
    laya_session *s = NULL;
    if (laya_session_new(m, &s) != LAYA_OK) return NULL;
    if (engine_set_learn(s, 1, NULL, 0) != LAYA_OK) {
        laya_session_free(s);
        return NULL;
    }
    return s;
}

/* Types t into s a character at a time, as an input method commits it
 * (every prefix of t that ends on a character boundary); out: the
 * suggestions after the last one. */
static void type_chars(laya_session *s, const char *t, char *out, size_t cap) {
    const size_t n = strlen(t);
    char *pre = malloc(n + 1);
    out[0] = 0;
    if (!pre) return;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && ((unsigned char)t[i] & 0xC0) == 0x80) continue;
        memcpy(pre, t, i);
        pre[i] = 0;
        suggest(s, pre, out, cap);
    }
    free(pre);
}

static int has_ascii_letter(const char *x) {
    for (; *x; x++)
        if ((*x >= 'A' && *x <= 'Z') || (*x >= 'a' && *x <= 'z')) return 1;
    return 0;
}

TEST(engine_learn_changes_nothing_without_evidence) {
    float *params = NULL;
    laya_model *m = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(m);
    learn_index *ix = NULL;
    CHECK(learn_index_new(8192, &ix) == LAYA_OK);
    laya_session *a = NULL, *b = NULL, *c = NULL;
    CHECK(laya_session_new(m, &a) == LAYA_OK && laya_session_new(m, &b) == LAYA_OK &&
          laya_session_new(m, &c) == LAYA_OK);
    CHECK(engine_set_learn(b, 1, ix, 0) == LAYA_OK && engine_set_learn(c, 1, ix, 0) == LAYA_OK);
    /* The continuous cache (nc.c) mixes the text typed into every
     * probability once there is some; c keeps it off to see the memory
     * alone, b has it as shipped. */
    laya_search_opts o = laya_search_defaults();
    CHECK(o.cache_weight > 0 && o.cjk_cache_weight > 0);
    o.cache_weight = o.cjk_cache_weight = 0;
    CHECK(laya_session_set_search(c, &o) == LAYA_OK);
    /* no unit of these contexts recurs and the memory is empty */
    const char *ctx[] = {"the qu", "Best re", "我们明天", "one two three fo", ""};
    char x[512], y[512];
    for (int i = 0; i < 5; i++) {
        suggest(a, ctx[i], x, sizeof x);
        suggest(c, ctx[i], y, sizeof y);
        CHECKF(!strcmp(x, y), "'%s': off '%s' on '%s'", ctx[i], x, y);
    }
    /* with the cache: nothing typed, nothing changes */
    suggest(a, "", x, sizeof x);
    suggest(b, "", y, sizeof y);
    CHECKF(!strcmp(x, y), "empty context: off '%s' on '%s'", x, y);
    laya_session_free(a);
    laya_session_free(b);
    laya_session_free(c);
    learn_index_free(ix);
    laya_model_free(m);
    free(params);
}

TEST(engine_learn_proposes_a_remembered_line_and_respects_privacy) {
    float *params = NULL;
    laya_model *m = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(m);
    learn_index *ix = NULL;
    CHECK(learn_index_new(8192, &ix) == LAYA_OK);
    const char *line = "Best regards, Zebulon Quartermaine";
    for (int i = 0; i < 5; i++) CHECK(learn_index_add(ix, (const uint8_t *)line, strlen(line)) == LAYA_OK);
    laya_session *s = NULL, *off = NULL;
    CHECK(laya_session_new(m, &s) == LAYA_OK && laya_session_new(m, &off) == LAYA_OK);
    CHECK(engine_set_learn(s, 1, ix, 0) == LAYA_OK);
    CHECK(engine_set_learn(off, 0, ix, 0) == LAYA_OK);
    char x[512], y[512];
    suggest(s, "Thanks.\nBest re", x, sizeof x);
    CHECKF(strstr(x, "gards, Zebulon Quartermaine@") == x, "got '%s'", x);
    /* learning off: the memory is not consulted */
    suggest(off, "Thanks.\nBest re", y, sizeof y);
    CHECK(!strstr(y, "Zebulon"));
    /* a private field: the same as off */
    engine_set_private(s, 1);
    suggest(s, "Thanks.\nBest re", x, sizeof x);
    CHECKF(!strcmp(x, y), "private '%s' off '%s'", x, y);
    engine_set_private(s, 0);
    /* the typed text itself: a name that recurs in the document */
    laya_session *t = learning_session(m);
    CHECK(t);
    suggest(t, "I met Xavierra Plimpton today. Plimpton waved. Later Xavierra Pl", x, sizeof x);
    CHECKF(strstr(x, "impton") != NULL, "got '%s'", x);
    /* once: still the document's own word (only the committed history is
     * judged for junk) */
    laya_session_reset(t);
    suggest(t, "I met Xavierra Plimpton today. Later Xavierra Pl", x, sizeof x);
    CHECKF(strstr(x, "impton") != NULL, "the document's name not proposed: '%s'", x);
    /* committed twice it is proposed from the history; once, it is judged
     * junk, and judged where it would be shown: the memory proposes it after
     * its context (it would rank first), so the judgment that blend.c
     * defers to the shown candidates must run */
    const char *met = "I met Xavierra Plimpton today.";
    for (int twice = 1; twice >= 0; twice--) {
        learn_index *hx = NULL;
        laya_session *h = NULL;
        CHECK(learn_index_new(8192, &hx) == LAYA_OK);
        for (int i = 0; i <= twice; i++) CHECK(learn_index_add(hx, (const uint8_t *)met, strlen(met)) == LAYA_OK);
        CHECK(laya_session_new(m, &h) == LAYA_OK && engine_set_learn(h, 1, hx, 0) == LAYA_OK);
        suggest(h, "Later Xavierra Pl", x, sizeof x);
        if (twice)
            CHECKF(strstr(x, "impton") != NULL, "committed twice, not proposed: '%s'", x);
        else
            CHECKF(!strstr(x, "impton"), "junk proposed: '%s'", x);
        laya_session_free(h);
        learn_index_free(hx);
    }
    /* ... but not what was typed after a password prompt (the same text
     * after a colon that asks for no secret is proposed), and nothing at
     * all while the cursor is in the secret */
    suggest(t, "Note: Xavierra Plimpton Xavierra Plimpton\nok Xavierra Pl", x, sizeof x);
    CHECKF(strstr(x, "impton") != NULL, "got '%s'", x);
    laya_session_reset(t);
    suggest(t, "Password: Xavierra Plimpton Xavierra Plimpton\nok Xavierra Pl", x, sizeof x);
    CHECKF(!strstr(x, "impton"), "a secret proposed: '%s'", x);
    laya_suggestion out[3];
    int n = -1;
    const char *in_secret = "[sudo] password for anna: Xavi";
    CHECK(laya_session_set_context(t, in_secret, strlen(in_secret)) == LAYA_OK &&
          laya_suggest(t, 3, out, &n) == LAYA_OK && n == 0);
    laya_session_free(t);
    laya_session_free(s);
    laya_session_free(off);
    learn_index_free(ix);
    laya_model_free(m);
    free(params);
}

/* With the shipped model: a name of the document typed once, which the
 * model scores as it scores key mashing ("Osei" 9.1 bits per byte), is
 * proposed when it comes again (the typed text's memory does not judge
 * junk; blend.c), the cache off so that the memory alone is tested. */
TEST(engine_learn_completes_a_rare_name_of_the_document) {
    char err[256];
    laya_model *m = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &m, err, sizeof err) == LAYA_OK, "%s", err);
    laya_session *s = learning_session(m);
    CHECK(s);
    laya_search_opts o = laya_search_defaults();
    o.cache_weight = o.cjk_cache_weight = 0;
    CHECK(laya_session_set_search(s, &o) == LAYA_OK);
    char x[512];
    suggest(s, "Send it to Kwabena Osei. Ask Kwabena O", x, sizeof x);
    CHECKF(strstr(x, "sei@") != NULL, "got '%s'", x);
    suggest(s, "I met Kwabena Osei at the station. Later Kwab", x, sizeof x);
    CHECKF(strstr(x, "ena@") != NULL, "got '%s'", x);
    laya_session_free(s);
    laya_model_free(m);
}

/* ---- the continuous cache (nc.c) ------------------------------------------ */

/* The made-up name's completion in a list suggest() printed: "ine", alone
 * or with the blank after it (suggest.c emit_spaced). */
static int name_in(const char *list) { return strstr(list, "ine@") || strstr(list, "ine @"); }
static int name_first(const char *list) { return !strncmp(list, "ine@", 4) || !strncmp(list, "ine @", 5); }

/* With the shipped model: a made-up name seen once is completed from the
 * cache, where the state resembles the one it followed, far more surely than
 * the typed text's n-gram memory alone proposes it; off the record and with
 * learning off the cache is not consulted. */
TEST(engine_cache_proposes_what_followed_a_like_context) {
    char err[256];
    laya_model *m = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &m, err, sizeof err) == LAYA_OK, "%s", err);
    laya_session *on = NULL, *off = NULL, *priv = NULL, *nolearn = NULL;
    CHECK(laya_session_new(m, &on) == LAYA_OK && laya_session_new(m, &off) == LAYA_OK &&
          laya_session_new(m, &priv) == LAYA_OK && laya_session_new(m, &nolearn) == LAYA_OK);
    CHECK(engine_set_learn(on, 1, NULL, 0) == LAYA_OK && engine_set_learn(off, 1, NULL, 0) == LAYA_OK &&
          engine_set_learn(priv, 1, NULL, 0) == LAYA_OK);
    laya_search_opts o = laya_search_defaults();
    o.cache_weight = o.cjk_cache_weight = 0;
    CHECK(laya_session_set_search(off, &o) == LAYA_OK);
    engine_set_private(priv, 1);
    const char *ctx = "Our project Zephyrine is late. The deadline for Zephyr";
    char x[512], y[512];
    suggest(on, ctx, x, sizeof x);
    suggest(off, ctx, y, sizeof y);
    /* the name first, alone or with the blank after it */
    CHECKF(name_first(x), "with the cache: '%s'", x);
    /* without the cache the typed text's memory may propose the name too
     * (the document's own words are never judged junk), far less surely */
    const char *w = strstr(y, "ine@"), *ws = strstr(y, "ine @");
    double py = w ? atof(w + 4) : 0, px = atof(strchr(x, '@') + 1);
    if (ws && atof(ws + 5) > py) py = atof(ws + 5);
    CHECKF(px > 3 * py, "without: '%s' (with: '%s')", y, x);
    /* what follows a password prompt is never proposed from the cache,
     * where the same text after another label is */
    suggest(on, "Codename: Zephyrine\nOur project is late. The deadline for Zephyr", x, sizeof x);
    CHECKF(name_first(x), "after a label: '%s'", x);
    suggest(on, "Password: Zephyrine\nOur project is late. The deadline for Zephyr", x, sizeof x);
    CHECKF(!name_in(x), "a secret proposed: '%s'", x);
    /* incognito: the cache is not consulted (as the typed text's memory is not) */
    laya_memory *mem = NULL;
    laya_session *inc = NULL;
    CHECK(laya_memory_open(LEARN_STORE_IN_MEMORY, &mem, NULL, 0) == LAYA_OK);
    CHECK(laya_session_new(m, &inc) == LAYA_OK && laya_session_set_memory(inc, mem) == LAYA_OK);
    suggest(inc, ctx, x, sizeof x);
    CHECKF(name_first(x), "with a memory: '%s'", x);
    CHECK(laya_memory_set_incognito(mem, 1, NULL, 0) == LAYA_OK);
    suggest(inc, ctx, x, sizeof x);
    CHECKF(!name_in(x), "incognito: '%s'", x);
    laya_session_free(inc);
    laya_memory_free(mem);
    /* a private field is learning off, cache included */
    suggest(priv, ctx, x, sizeof x);
    suggest(nolearn, ctx, y, sizeof y);
    CHECKF(!strcmp(x, y), "private '%s', learning off '%s'", x, y);
    CHECKF(!name_in(x), "learning off: '%s'", x);
    laya_session_free(on);
    laya_session_free(off);
    laya_session_free(priv);
    laya_session_free(nolearn);
    laya_model_free(m);
}

/* A cache of a few positions is trusted little (engine_nc_trust): typed
 * key by key, "谢谢你的帮" made the four-token cache put "你的" after
 * anything ("助你的", "助你的你的"); its share of the weight grows with the
 * positions held, n / (n + ENGINE_NC_RAMP), up to the window's 512. */
TEST(engine_cache_is_trusted_as_it_fills) {
    char err[256];
    laya_model *m = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &m, err, sizeof err) == LAYA_OK, "%s", err);
    laya_session *s = learning_session(m);
    CHECK(s);
    CHECK(engine_nc_trust(&s->nc, &s->cx) == 0);
    char x[512];
    type_chars(s, "谢谢你的帮", x, sizeof x);
    CHECKF(!strstr(x, "你的"), "after 谢谢你的帮 typed: '%s'", x);
    const int64_t n = s->cx.cur.st.n - 1;
    CHECKF(n > 0 && n < 8 && fabs(engine_nc_trust(&s->nc, &s->cx) - (double)n / (n + ENGINE_NC_RAMP)) < 1e-12,
           "%lld positions, trust %f", (long long)n, engine_nc_trust(&s->nc, &s->cx));
    /* a long text: the window's 512 positions, never more */
    char *longt = malloc(20000);
    CHECK(longt);
    longt[0] = 0;
    for (int i = 0; i < 200; i++) strcat(longt, "The report is late again. ");
    suggest(s, longt, x, sizeof x);
    CHECKF(s->cx.cur.st.n - 1 > ENGINE_NC_SIZE, "%lld tokens", (long long)s->cx.cur.st.n);
    CHECK(fabs(engine_nc_trust(&s->nc, &s->cx) - (double)ENGINE_NC_SIZE / (ENGINE_NC_SIZE + ENGINE_NC_RAMP)) < 1e-12);
    free(longt);
    laya_session_free(s);
    laya_model_free(m);
}

/* With the shipped model: a cache whose positions resemble nothing proposes
 * nothing. English typed first, then Chinese character by character: the
 * 23 English positions were the cache's whole window, and its softmax gave
 * them all its mass however little they resembled the Chinese context, so
 * "...help 谢谢你的" got "Three" and "Think" (the "Th" of "Thank", which
 * followed the text's start) and "谢谢你" got "Thank you". A name of the
 * English part is still recalled in Chinese ("我每天都用Py" -> "thon"). */
TEST(engine_cache_proposes_nothing_where_nothing_resembles) {
    char err[256];
    laya_model *m = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &m, err, sizeof err) == LAYA_OK, "%s", err);
    laya_session *s = learning_session(m);
    CHECK(s);
    char x[512];
    /* (after "谢" and "谢谢" the model itself proposes " Google" and ".") */
    type_chars(s, "Thank you for your help 谢谢", x, sizeof x);
    const char *after[2] = {"Thank you for your help 谢谢你", "Thank you for your help 谢谢你的"};
    for (int i = 0; i < 2; i++) {
        suggest(s, after[i], x, sizeof x);
        CHECKF(!has_ascii_letter(x), "after '%s': '%s'", after[i], x);
    }
    laya_session_free(s);
    CHECK((s = learning_session(m)) != NULL);
    const char *u = "I use Python every day. 我每天都用Py";
    type_chars(s, u, x, sizeof x);
    CHECKF(strstr(x, "thon") != NULL, "after '%s': '%s'", u, x);
    laya_session_free(s);
    laya_model_free(m);
}

/* The cache is keyed by position: after any edits (typing, backspaces, a
 * jump back, a new text) a session proposes what a fresh session given the
 * same text proposes. */
TEST(engine_cache_after_edits_equals_a_fresh_read) {
    float *params = NULL;
    laya_model *m = te_model(400, 64, 8, 2, 3, 0.5f, 7, &params);
    CHECK(m);
    /* A cache of 16 positions, so that the ring wraps within the text. */
    laya_session *s = learning_session(m);
    CHECK(s && engine_nc_init(&s->nc, &s->cfg, 16) == LAYA_OK);
    const char *text = "The cat sat on the mat. The dog sat on the log. 我们明天见。The cat sat on the";
    char cur[256] = "";
    size_t n = 0;
    uint32_t rng = 5;
    int bad = 0;
    for (int step = 0; step < 300 && !bad; step++) {
        uint32_t r = te_rand(&rng) % 100;
        if (r < 80 && text[n]) {
            /* type the next character of the text (whole UTF-8) */
            size_t l = 1;
            while (((uint8_t)text[n + l] & 0xC0) == 0x80) l++;
            CHECK(laya_session_type(s, text + n, l) == LAYA_OK);
            memcpy(cur + n, text + n, l);
            n += l;
        } else if (r < 92 && n) {
            /* a backspace */
            CHECK(laya_session_backspace(s, 1) == LAYA_OK);
            do n--; while (n && ((uint8_t)cur[n] & 0xC0) == 0x80);
        } else {
            /* back to a word start far behind */
            while (n > 10 && cur[n - 1] != ' ') n--;
            if (n > 10) n -= 10;
            while (n && ((uint8_t)cur[n] & 0xC0) == 0x80) n--;
            CHECK(laya_session_set_context(s, cur, n) == LAYA_OK);
        }
        cur[n] = 0;
        laya_session *f = learning_session(m);
        CHECK(f && engine_nc_init(&f->nc, &f->cfg, 16) == LAYA_OK);
        laya_suggestion a[3], b[3];
        int na = 0, nb = 0;
        CHECK(laya_suggest(s, 3, a, &na) == LAYA_OK);
        CHECK(laya_session_set_context(f, cur, n) == LAYA_OK && laya_suggest(f, 3, b, &nb) == LAYA_OK);
        bad = na != nb;
        for (int i = 0; i < na && !bad; i++)
            bad = a[i].len != b[i].len || memcmp(a[i].text, b[i].text, a[i].len) ||
                  fabsf(a[i].prob - b[i].prob) > 1e-4f * b[i].prob;
        if (bad) fprintf(stderr, "    step %d, context '%s': %d / %d suggestions differ\n", step, cur, na, nb);
        laya_session_free(f);
    }
    CHECK(!bad);
    laya_session_free(s);
    laya_model_free(m);
    free(params);
}

/* ---- feedback (learn_fb.h through laya_session_feedback) ------------------- */

/* The first suggestion of s for ctx (k suggestions asked) into top; the
 * number of suggestions. */
static int top1(laya_session *s, const char *ctx, int k, char *top, size_t cap) {
    laya_suggestion sg[LAYA_MAX_K];
    int n = 0;
    top[0] = 0;
    if (laya_session_set_context(s, ctx, strlen(ctx)) != LAYA_OK || laya_suggest(s, k, sg, &n) != LAYA_OK) return -1;
    if (n) snprintf(top, cap, "%.*s", (int)sg[0].len, sg[0].text);
    return n;
}

static int64_t feedback_rows(laya_memory *m) {
    int64_t n = 0;
    learn_memory_lock(m);
    learn_store_fb_count(m->store, &n, NULL, 0);
    learn_memory_unlock(m);
    return n;
}

TEST(engine_feedback_changes_nothing_without_it) {
    float *params = NULL;
    laya_model *m = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(m);
    laya_memory *mem = NULL;
    CHECK(laya_memory_open(LEARN_STORE_IN_MEMORY, &mem, NULL, 0) == LAYA_OK);
    laya_session *a = NULL, *b = NULL;
    CHECK(laya_session_new(m, &a) == LAYA_OK && laya_session_new(m, &b) == LAYA_OK);
    CHECK(laya_session_set_memory(b, mem) == LAYA_OK);
    const char *ctx[] = {"the qu", "Best re", "我们明天", "one two three fo", ""};
    char x[512], y[512];
    for (int i = 0; i < 5; i++) {
        suggest(a, ctx[i], x, sizeof x);
        suggest(b, ctx[i], y, sizeof y);
        CHECKF(!strcmp(x, y), "'%s': without memory '%s', with an empty one '%s'", ctx[i], x, y);
    }
    /* feedback in other contexts: the table has rows, these contexts none */
    const char *other[] = {"zebra crossing", "quartz wat", "小猫"};
    for (int i = 0; i < 3; i++) {
        suggest(b, other[i], y, sizeof y);
        CHECK(laya_session_feedback(b, -1) == LAYA_OK);
    }
    CHECK(feedback_rows(mem) == 0);   /* not written yet: pending */
    CHECK(learn_memory_fb_flush(mem, NULL, 0) == LAYA_OK && feedback_rows(mem) > 0);
    /* feedback asked for in a private field is not taken */
    int64_t rows = feedback_rows(mem);
    CHECK(laya_session_set_private(b, 1) == LAYA_OK);
    for (int r = 0; r < 4; r++) {
        suggest(b, "the qu", y, sizeof y);
        CHECK(laya_session_feedback(b, -1) == LAYA_OK);
    }
    CHECK(laya_session_set_private(b, 0) == LAYA_OK);
    CHECK(learn_memory_fb_flush(mem, NULL, 0) == LAYA_OK && feedback_rows(mem) == rows);
    for (int i = 0; i < 5; i++) {
        suggest(a, ctx[i], x, sizeof x);
        suggest(b, ctx[i], y, sizeof y);
        CHECKF(!strcmp(x, y), "'%s': without memory '%s', with feedback elsewhere '%s'", ctx[i], x, y);
    }
    /* no list pending: nothing to judge; an index beyond the list is refused */
    CHECK(laya_session_feedback(b, -1) == LAYA_OK);
    suggest(b, "the qu", y, sizeof y);
    CHECK(laya_session_feedback(b, 3) == LAYA_ERR_ARG && laya_session_feedback(b, -2) == LAYA_ERR_ARG);
    laya_session_free(a);
    laya_session_free(b);
    laya_memory_free(mem);
    laya_model_free(m);
    free(params);
}

/* The context every feedback test types, and the number of times its top
 * suggestion is passed over before another one leads: the factor after n
 * passes is 1 / (1 + n) (learn_fb.h), so the top must lead the next one
 * by less than n + 1 times in score. */
#define FB_CTX "I went to the sto"
enum { FB_MAX_PASSES = 8 };

/* Passes over the top suggestion of FB_CTX (shown alone) until another
 * leads; the number of passes, or -1 when FB_MAX_PASSES were not enough. */
static int pass_over_top(laya_session *s, const char *top0) {
    char top[256];
    for (int n = 1; n <= FB_MAX_PASSES; n++) {
        laya_suggestion sg[3];
        int k = 0;
        if (laya_session_set_context(s, FB_CTX, strlen(FB_CTX)) != LAYA_OK || laya_suggest(s, 3, sg, &k) != LAYA_OK ||
            !k || laya_session_shown(s, sg, 1) != LAYA_OK || laya_session_feedback(s, -1) != LAYA_OK)
            return -1;
        if (top1(s, FB_CTX, 3, top, sizeof top) < 1) return -1;
        if (strcmp(top, top0)) return n;
    }
    return -1;
}

TEST(engine_feedback_passed_over_loses_the_top_and_recovers) {
    float *params = NULL;
    laya_model *m = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(m);
    const char *dir = test_tmpdir();
    char path[512], top0[256], top[256];
    snprintf(path, sizeof path, "%s/m.db", dir);
    laya_memory *mem = NULL;
    CHECK(laya_memory_open(path, &mem, NULL, 0) == LAYA_OK);
    laya_session *s = NULL, *alone = NULL;
    CHECK(laya_session_new(m, &s) == LAYA_OK && laya_session_new(m, &alone) == LAYA_OK);
    CHECK(laya_session_set_memory(s, mem) == LAYA_OK);
    CHECK(top1(alone, FB_CTX, 3, top0, sizeof top0) == 3);
    CHECK(top1(s, FB_CTX, 3, top, sizeof top) == 3 && !strcmp(top, top0));
    int n = pass_over_top(s, top0);
    CHECKF(n >= 1, "'%s' still leads after %d passes", top0, FB_MAX_PASSES);
    printf("    '%s' lost the top after %d passes\n", top0, n);
    /* the model alone still leads with it; another context is untouched */
    CHECK(top1(alone, FB_CTX, 3, top, sizeof top) == 3 && !strcmp(top, top0));
    char x[512], y[512];
    suggest(alone, "I went to the sta", x, sizeof x);
    suggest(s, "I went to the sta", y, sizeof y);
    CHECKF(!strcmp(x, y), "'%s' vs '%s'", x, y);
    /* kept with a commit that holds the context: a new process sees it */
    CHECK(laya_memory_commit(mem, FB_CTX, strlen(FB_CTX), NULL, NULL, 0) == LAYA_OK);
    laya_session_free(s);
    laya_memory_free(mem);
    CHECK(laya_memory_open(path, &mem, NULL, 0) == LAYA_OK);
    CHECK(laya_session_new(m, &s) == LAYA_OK && laya_session_set_memory(s, mem) == LAYA_OK);
    CHECK(top1(s, FB_CTX, 3, top, sizeof top) == 3 && strcmp(top, top0));
    /* recovery by taking it: shown again (a front end's own list) and taken
     * as often as it was passed over, and once more */
    for (int i = 0; i <= n; i++) {
        CHECK(top1(s, FB_CTX, 3, top, sizeof top) == 3);
        laya_suggestion mine = {.text = top0, .len = strlen(top0), .prob = 0.5f};
        CHECK(laya_session_shown(s, &mine, 1) == LAYA_OK && laya_session_feedback(s, 0) == LAYA_OK);
    }
    CHECK(top1(s, FB_CTX, 3, top, sizeof top) == 3 && !strcmp(top, top0));
    /* recovery by decay: passed over again, then many events elsewhere */
    CHECK(laya_memory_forget_all(mem, NULL, NULL, 0) == LAYA_OK);
    CHECK(pass_over_top(s, top0) == n);
    const uint8_t *other[] = {(const uint8_t *)"w"};
    size_t ol[] = {1};
    for (int i = 0; i < 12 * (int)LEARN_FB_HALF_LIFE; i++)
        CHECK(learn_memory_feedback(mem, (const uint8_t *)"zz", 2, other, ol, 1, -1, NULL, NULL, 0) == LAYA_OK);
    CHECK(top1(s, FB_CTX, 3, top, sizeof top) == 3);
    CHECKF(!strcmp(top, top0), "after decay '%s', want '%s'", top, top0);
    /* forgetting everything puts it back at once */
    CHECK(pass_over_top(s, top0) == n);
    CHECK(laya_memory_forget_all(mem, NULL, NULL, 0) == LAYA_OK);
    CHECK(top1(s, FB_CTX, 3, top, sizeof top) == 3 && !strcmp(top, top0));
    /* incognito: passes are not kept */
    CHECK(laya_memory_set_incognito(mem, 1, NULL, 0) == LAYA_OK);
    CHECK(pass_over_top(s, top0) == -1 && feedback_rows(mem) == 0);
    laya_session_free(s);
    laya_session_free(alone);
    laya_memory_free(mem);
    laya_model_free(m);
    free(params);
}

TEST(engine_feedback_on_a_first_word_takes_its_phrases_down) {
    float *params = NULL;
    laya_model *m = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(m);
    laya_memory *mem = NULL;
    CHECK(laya_memory_open(LEARN_STORE_IN_MEMORY, &mem, NULL, 0) == LAYA_OK);
    laya_session *s = NULL;
    CHECK(laya_session_new(m, &s) == LAYA_OK && laya_session_set_memory(s, mem) == LAYA_OK);
    /* a remembered line: the memory proposes the rest of it, a phrase */
    const char *line = "Best regards, Zebulon Quartermaine";
    for (int i = 0; i < 5; i++) CHECK(laya_memory_commit(mem, line, strlen(line), NULL, NULL, 0) == LAYA_OK);
    const char *ctx = "Thanks.\nBest re";
    laya_suggestion sg[LAYA_MAX_K];
    int k = 0, at = -1;
    size_t w = 0;
    CHECK(laya_session_set_context(s, ctx, strlen(ctx)) == LAYA_OK && laya_suggest(s, LAYA_MAX_K, sg, &k) == LAYA_OK);
    for (int j = 0; j < k && at < 0; j++)
        if ((w = decide_first_word_end((const uint8_t *)sg[j].text, sg[j].len)) < sg[j].len) at = j;
    CHECKF(at >= 0, "no phrase proposed after '%s'", ctx);
    char phrase[256];
    snprintf(phrase, sizeof phrase, "%.*s", (int)sg[at].len, sg[at].text);
    float p0 = sg[at].prob;
    /* the decision showed its first word alone, passed over: the phrase
     * goes down too, by the same factor */
    laya_suggestion cut = {.text = sg[at].text, .len = w, .prob = p0};
    CHECK(laya_session_shown(s, &cut, 1) == LAYA_OK && laya_session_feedback(s, -1) == LAYA_OK);
    CHECK(laya_suggest(s, LAYA_MAX_K, sg, &k) == LAYA_OK);
    int still = 0;
    for (int i = 0; i < k; i++)
        if (sg[i].len == strlen(phrase) && !memcmp(sg[i].text, phrase, sg[i].len)) {
            still = 1;
            CHECK_NEAR(sg[i].prob, p0 / (1 + LEARN_FB_ALPHA), 0, 1e-5);
        }
    printf("    '%s' after '%.*s' was passed over: %s\n", phrase, (int)w, phrase, still ? "halved" : "out of the list");
    CHECK(still || p0 / (1 + LEARN_FB_ALPHA) < 0.002f);
    laya_session_free(s);
    laya_memory_free(mem);
    laya_model_free(m);
    free(params);
}
