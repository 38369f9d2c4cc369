/* test_learn_index.c - what the memory proposes from committed text: lines
 * that recur, words and names, Chinese, the cap, nothing from nothing, and
 * a rare follower of a context seen thousands of times. */
#include <string.h>

#include "learn/learn_index.h"
#include "test.h"

static learn_index *with(const char *const *lines, int n) {
    learn_index *ix = NULL;
    if (learn_index_new(8192, &ix) != LAYA_OK) return NULL;
    for (int i = 0; i < n; i++) learn_index_add(ix, (const uint8_t *)lines[i], strlen(lines[i]));
    return ix;
}

static int has(const learn_result *r, const char *text) {
    for (int i = 0; i < r->n; i++)
        if (r->c[i].len == (int)strlen(text) && !memcmp(r->c[i].text, text, strlen(text))) return i + 1;
    return 0;
}

static void q(const learn_index *ix, const char *ctx, learn_result *r) {
    learn_index_query(ix, (const uint8_t *)ctx, strlen(ctx), 1.0, r);
}

TEST(learn_index_completes_a_recurring_line) {
    const char *lines[] = {"Thanks for the update.", "Best regards, Tom", "See you soon", "Best regards, Tom"};
    learn_index *ix = with(lines, 4);
    CHECK(ix);
    learn_result r;
    q(ix, "Hi Anna,\nBest re", &r);
    CHECKF(has(&r, "gards, Tom") && has(&r, "gards"), "n=%d first '%.*s'", r.n, r.n ? r.c[0].len : 0,
           r.n ? (const char *)r.c[0].text : "");
    CHECK(r.order >= 1 && r.conf > 0 && r.conf < 1);
    /* the word typed in full: the next one and the rest of the line */
    q(ix, "Best", &r);
    CHECK(has(&r, " regards, Tom"));
    /* after the blank the typist typed: no second blank */
    q(ix, "Best ", &r);
    CHECK(has(&r, "regards, Tom") && !has(&r, " regards, Tom"));
    for (int i = 0; i < r.n; i++) CHECK(r.c[i].p > 0 && r.c[i].p <= 1 && (i == 0 || r.c[i - 1].p >= r.c[i].p));
    learn_index_free(ix);
}

TEST(learn_index_words_without_context) {
    const char *lines[] = {"I met Anastasia at the station.", "Anastasia said hello"};
    learn_index *ix = with(lines, 2);
    CHECK(ix);
    learn_result r;
    q(ix, "Yesterday Anas", &r);   /* no context match: the word itself */
    CHECK(r.order == 0 && has(&r, "tasia"));
    CHECK(learn_index_word_count(ix, (const uint8_t *)"Anastasia", 9) == 2);
    CHECK(learn_index_word_count(ix, (const uint8_t *)"Anas", 4) == 0);
    q(ix, "Yesterday Zq", &r);
    CHECK(r.n == 0 && r.order == -1);
    learn_index_free(ix);
}

TEST(learn_index_chinese_continues_after_characters) {
    const char *lines[] = {"我想订个外卖吧", "明天订个酒店"};
    learn_index *ix = with(lines, 2);
    CHECK(ix);
    learn_result r;
    q(ix, "今天订个", &r);
    CHECKF(has(&r, "外卖吧") || has(&r, "外卖"), "n=%d", r.n);
    CHECK(has(&r, "酒店"));
    learn_index_free(ix);
}

TEST(learn_index_empty_and_cleared_propose_nothing) {
    learn_index *ix = NULL;
    CHECK(learn_index_new(4096, &ix) == LAYA_OK);
    learn_result r;
    q(ix, "Best re", &r);
    CHECK(r.n == 0 && r.order == -1);
    CHECK(learn_index_add(ix, (const uint8_t *)"Best regards", 12) == LAYA_OK);
    q(ix, "Best re", &r);
    CHECK(r.n > 0);
    learn_index_clear(ix);
    q(ix, "Best re", &r);
    CHECK(r.n == 0 && learn_index_bytes(ix) == 0);
    learn_index_free(ix);
}

TEST(learn_index_cap_drops_the_oldest) {
    learn_index *ix = NULL;
    CHECK(learn_index_new(4096, &ix) == LAYA_OK);
    CHECK(learn_index_add(ix, (const uint8_t *)"Zebulon was here", 16) == LAYA_OK);
    char line[64];
    for (int i = 0; i < 400; i++) {
        int n = snprintf(line, sizeof line, "line number %d of the filler", i);
        CHECK(learn_index_add(ix, (const uint8_t *)line, (size_t)n) == LAYA_OK);
        CHECK(learn_index_bytes(ix) <= 4096);
    }
    learn_result r;
    q(ix, "Zebu", &r);
    CHECK(r.n == 0);   /* dropped with the oldest text */
    q(ix, "line number 399 of the fil", &r);
    CHECK(has(&r, "ler"));
    learn_index_free(ix);
}

/* A context followed thousands of times by other words, and once, long
 * ago, by the word being typed: the query walks the chain keyed by the
 * context and the partial word's first byte, so the old match is found
 * at its order (a walk of the context's chain alone would stop at
 * LEARN_MAX_WALK entries of "cat" and "dog" first), and the context typed
 * with no partial word still proposes its newest followers. */
TEST(learn_index_frequent_context_finds_a_rare_follower) {
    learn_index *ix = NULL;
    CHECK(learn_index_new(256 * 1024, &ix) == LAYA_OK);
    const char *old = "we looked at the zebra crossing";
    CHECK(learn_index_add(ix, (const uint8_t *)old, strlen(old)) == LAYA_OK);
    for (int i = 0; i < 4 * LEARN_MAX_WALK; i++) {
        const char *l = i % 2 ? "we looked at the cat" : "we looked at the dog";
        CHECK(learn_index_add(ix, (const uint8_t *)l, strlen(l)) == LAYA_OK);
    }
    learn_result r;
    q(ix, "then we looked at the ze", &r);
    CHECKF(r.order == LEARN_ORDER && has(&r, "bra crossing") && has(&r, "bra "), "order %d n %d", r.order, r.n);
    q(ix, "then we looked at the ", &r);
    CHECK(r.order == LEARN_ORDER && has(&r, "cat") && has(&r, "dog"));
    CHECK(!has(&r, "zebra "));
    q(ix, "then we looked at the c", &r);
    CHECK(has(&r, "at") && !has(&r, "og"));
    learn_index_free(ix);
}
