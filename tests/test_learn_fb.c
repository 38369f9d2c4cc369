/* test_learn_fb.c - the feedback table (learn/learn_fb.h) on its own: the
 * key of a context, the factor's formula and its decay, the skip-above
 * rule, and the cap. The store and the engine are in test_learn_store.c
 * and test_engine_learn.c. */
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "learn/learn_fb.h"

/* Factors are products and quotients of small counts and one exp2: equal
 * to the formula within a double's rounding when the counts are of one
 * event; counts a few events apart have decayed by 2^(-n / HALF_LIFE),
 * under 0.1% for n < 3. */
#define FB_TOL 1e-12
#define FB_DECAY_TOL 1e-3

static const char *key_of(const char *ctx) {
    static char buf[LEARN_FB_KEY_MAX + 1];
    size_t kl;
    const uint8_t *k = learn_fb_key((const uint8_t *)ctx, strlen(ctx), &kl);
    memcpy(buf, k, kl);
    buf[kl] = 0;
    return buf;
}

TEST(learn_fb_key_is_the_partial_word_and_the_unit_before) {
    CHECK(!strcmp(key_of("I sent it to the k"), "to the k"));
    CHECK(!strcmp(key_of("Thanks.\nBest re"), "Best re"));
    CHECK(!strcmp(key_of("Thanks.\nBe"), "Be"));        /* never across a line break */
    CHECK(!strcmp(key_of("zero one two "), "one two "));   /* a next word: the blank stays */
    CHECK(!strcmp(key_of("last line\n"), ""));
    CHECK(!strcmp(key_of("Oh. Hello, wor"), "Hello, wor"));   /* punctuation is a unit of its own */
    CHECK(!strcmp(key_of("我们明天"), "明天"));          /* one CJK character is a unit */
    CHECK(!strcmp(key_of(""), ""));
    /* a context longer than the key keeps its last bytes, from a character start */
    char longw[400];
    memset(longw, 'a', sizeof longw);
    memcpy(longw, "x ", 2);
    longw[sizeof longw - 1] = 0;
    CHECK(strlen(key_of(longw)) == LEARN_FB_KEY_MAX);
    char cjk[3 * 60 + 1] = "";
    for (int i = 0; i < 60; i++) strcat(cjk, "\xe5\xa4\xa9");   /* 天 x 60: one unit each */
    CHECK(!strcmp(key_of(cjk), "天天"));
}

static double factor(const learn_fb *f, const char *key, const char *text) {
    return learn_fb_factor(f, learn_fb_key_hash((const uint8_t *)key, strlen(key)), (const uint8_t *)text,
                           strlen(text), 0);
}

static laya_status event(learn_fb *f, const char *key, const char *const *texts, int n, int accepted) {
    size_t lens[16];
    for (int i = 0; i < n; i++) lens[i] = strlen(texts[i]);
    return learn_fb_record(f, (const uint8_t *)key, strlen(key), (const uint8_t *const *)texts, lens, n, accepted,
                           1000);
}

TEST(learn_fb_factor_follows_the_formula) {
    learn_fb *f = NULL;
    CHECK(learn_fb_new(1024, &f) == LAYA_OK);
    CHECK(factor(f, "the k", "ey") == 1.0);   /* no row: exactly 1 */
    const char *shown[] = {"ey", "ernel module", "ind"};
    CHECK(event(f, "the k", shown, 3, -1) == LAYA_OK);
    for (int i = 0; i < 3; i++) CHECK_NEAR(factor(f, "the k", shown[i]), 1 / (1 + LEARN_FB_ALPHA), 0, FB_TOL);
    /* another context, another text: untouched */
    CHECK(factor(f, "a k", "ey") == 1.0);
    CHECK(factor(f, "the k", "ernel") == 1.0);
    /* taken once after being passed over once: net 0, back to 1 */
    CHECK(event(f, "the k", shown, 3, 0) == LAYA_OK);
    CHECK_NEAR(factor(f, "the k", "ey"), 1.0, FB_DECAY_TOL, 0);
    /* taken again: a boost of BOOST a / (1 + a) with a = 1 */
    CHECK(event(f, "the k", shown, 1, 0) == LAYA_OK);
    CHECK_NEAR(factor(f, "the k", "ey"), 1 + LEARN_FB_BOOST / 2, FB_DECAY_TOL, 0);
    /* penalty_only leaves a boosted row at 1 */
    CHECK(learn_fb_factor(f, learn_fb_key_hash((const uint8_t *)"the k", 5), (const uint8_t *)"ey", 2, 1) == 1.0);
    /* out-of-range index */
    CHECK(event(f, "the k", shown, 3, 3) == LAYA_ERR_ARG);
    learn_fb_free(f);
}

TEST(learn_fb_taken_judges_only_what_was_read_past) {
    learn_fb *f = NULL;
    CHECK(learn_fb_new(1024, &f) == LAYA_OK);
    /* taken: the third. The first is a prefix of it (right, only shorter),
     * the second was read past, the fourth perhaps never read. */
    const char *shown[] = {"ernel", "ey", "ernel module", "ind"};
    CHECK(event(f, "the k", shown, 4, 2) == LAYA_OK);
    CHECK(factor(f, "the k", "ernel") == 1.0);
    CHECK(factor(f, "the k", "ey") < 1.0);
    CHECK(factor(f, "the k", "ernel module") > 1.0);
    CHECK(factor(f, "the k", "ind") == 1.0);
    learn_fb_free(f);
}

TEST(learn_fb_counts_decay_with_use) {
    learn_fb *f = NULL;
    CHECK(learn_fb_new(4096, &f) == LAYA_OK);
    const char *shown[] = {"ey"};
    for (int i = 0; i < 3; i++) CHECK(event(f, "the k", shown, 1, -1) == LAYA_OK);
    CHECK_NEAR(factor(f, "the k", "ey"), 1 / (1 + 3 * LEARN_FB_ALPHA), FB_DECAY_TOL, 0);
    /* one half-life of events elsewhere: the count is halved */
    int64_t t0 = learn_fb_now(f);
    const char *other[] = {"x"};
    while (learn_fb_now(f) < t0 + (int64_t)LEARN_FB_HALF_LIFE) CHECK(event(f, "zz", other, 1, -1) == LAYA_OK);
    CHECK_NEAR(factor(f, "the k", "ey"), 1 / (1 + 1.5 * LEARN_FB_ALPHA), FB_DECAY_TOL, 0);
    /* and a new pass over it adds to what is left */
    CHECK(event(f, "the k", shown, 1, -1) == LAYA_OK);
    CHECK_NEAR(factor(f, "the k", "ey"), 1 / (1 + 2.5 * LEARN_FB_ALPHA), FB_DECAY_TOL, 0);
    learn_fb_free(f);
}

/* What a write of every pending change to the store does to the table. */
static void store_took_all(learn_fb *f) {
    const learn_fb_change *rows;
    int n, events;
    learn_fb_pending(f, &rows, &n, &events);
    learn_fb_pending_taken(f, n);
    learn_fb_pending_drop(f, n);
}

TEST(learn_fb_cap_keeps_the_newest) {
    learn_fb *f = NULL;
    CHECK(learn_fb_new(64, &f) == LAYA_OK);
    char key[32];
    const char *shown[] = {"w"};
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        CHECK(event(f, key, shown, 1, -1) == LAYA_OK);
        CHECK(learn_fb_rows(f) <= 64);
        if (i % 32 == 31) store_took_all(f);
    }
    store_took_all(f);
    CHECK(factor(f, "k999", "w") < 1.0);
    CHECK(factor(f, "k0", "w") == 1.0);
    /* pending rows are never dropped: a table full of them takes no more */
    learn_fb *g = NULL;
    CHECK(learn_fb_new(64, &g) == LAYA_OK);
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "p%d", i);
        CHECK(event(g, key, shown, 1, -1) == LAYA_OK);
    }
    const learn_fb_change *rows;
    int n, events;
    learn_fb_pending(g, &rows, &n, &events);
    CHECK(events == 200 && n == 64 && learn_fb_rows(g) == 64);
    CHECK(factor(g, "p0", "w") < 1.0 && factor(g, "p199", "w") == 1.0);
    learn_fb_clear(g);
    CHECK(learn_fb_rows(g) == 0 && factor(g, "p0", "w") == 1.0);
    learn_fb_free(f);
    learn_fb_free(g);
}
