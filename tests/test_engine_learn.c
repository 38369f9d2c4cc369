/* test_engine_learn.c - the personal memory inside the search (blend.c):
 * nothing changes without evidence, a remembered line is proposed, and a
 * private field or learning off sees none of it. */
#include <stdlib.h>
#include <string.h>

#include "learn/learn_index.h"
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

TEST(engine_learn_changes_nothing_without_evidence) {
    float *params = NULL;
    laya_model *m = te_model(400, 16, 8, 2, 3, 0.5f, 7, &params);
    CHECK(m);
    learn_index *ix = NULL;
    CHECK(learn_index_new(8192, &ix) == LAYA_OK);
    laya_session *a = NULL, *b = NULL;
    CHECK(laya_session_new(m, &a) == LAYA_OK && laya_session_new(m, &b) == LAYA_OK);
    CHECK(engine_set_learn(b, 1, ix, 0) == LAYA_OK);
    /* no unit of these contexts recurs and the memory is empty */
    const char *ctx[] = {"the qu", "Best re", "我们明天", "one two three fo", ""};
    char x[512], y[512];
    for (int i = 0; i < 5; i++) {
        suggest(a, ctx[i], x, sizeof x);
        suggest(b, ctx[i], y, sizeof y);
        CHECKF(!strcmp(x, y), "'%s': off '%s' on '%s'", ctx[i], x, y);
    }
    laya_session_free(a);
    laya_session_free(b);
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
    laya_session *t = NULL;
    CHECK(laya_session_new(m, &t) == LAYA_OK && engine_set_learn(t, 1, NULL, 0) == LAYA_OK);
    /* twice: a word seen once that the toy model finds improbable is junk */
    suggest(t, "I met Xavierra Plimpton today. Plimpton waved. Later Xavierra Pl", x, sizeof x);
    CHECKF(strstr(x, "impton") != NULL, "got '%s'", x);
    /* once it is judged junk, and judged where it would be shown: the
     * memory proposes it after its context (it would rank first), so the
     * judgment that blend.c defers to the shown candidates must run */
    laya_session_reset(t);
    suggest(t, "I met Xavierra Plimpton today. Later Xavierra Pl", x, sizeof x);
    CHECKF(!strstr(x, "impton"), "junk proposed: '%s'", x);
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
