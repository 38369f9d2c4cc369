/* test_sim.c - the typing simulator reproduces the published statistics on a
 * long text, replays to the text it typed, and is deterministic per seed. */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "util/utf8.h"

/* A long English-like text from a fixed word list and a fixed LCG, so the
 * test needs no corpus: words, spaces, some capitals, commas, full stops and
 * newlines, as in prose. */
static char *make_text(size_t n_bytes) {
    static const char *words[] = {
        "the", "of", "and", "to", "a", "in", "that", "is", "was", "he", "for", "it", "with",
        "as", "his", "on", "be", "at", "by", "had", "not", "are", "but", "from", "or", "have",
        "an", "they", "which", "one", "you", "were", "her", "all", "she", "there", "would",
        "their", "we", "him", "been", "has", "when", "who", "will", "more", "no", "if", "out",
        "letter", "meeting", "tomorrow", "morning", "regards", "question", "understand",
        "whether", "something", "between", "because", "important", "Elizabeth", "London"};
    size_t nw = sizeof words / sizeof words[0];
    char *t = malloc(n_bytes + 32);
    size_t len = 0;
    uint32_t x = 12345;
    int start = 1;
    while (len < n_bytes) {
        x = x * 1664525u + 1013904223u;
        const char *w = words[(x >> 8) % nw];
        size_t wl = strlen(w);
        memcpy(t + len, w, wl);
        if (start && t[len] >= 'a' && t[len] <= 'z') t[len] = (char)(t[len] - 32);
        len += wl;
        start = 0;
        uint32_t r = (x >> 20) % 64;
        if (r == 0) { t[len++] = '.'; t[len++] = '\n'; start = 1; }
        else if (r < 4) { t[len++] = '.'; t[len++] = ' '; start = 1; }
        else if (r < 8) { t[len++] = ','; t[len++] = ' '; }
        else t[len++] = ' ';
    }
    t[len] = 0;
    return t;
}

/* Levenshtein distance (bytes) restricted to |i - j| <= band; uncorrected
 * typos are local and their insertions/omissions drift far less than band. */
static size_t banded_edit(const char *a, size_t na, const char *b, size_t nb, size_t band) {
    size_t w = 2 * band + 1, big = (size_t)-1 / 4;
    size_t *prev = malloc(w * sizeof *prev), *cur = malloc(w * sizeof *cur);
    /* cell (i, j) lives at index j - i + band */
    for (size_t k = 0; k < w; k++) prev[k] = big;
    for (size_t j = 0; j <= band && j <= nb; j++) prev[j + band] = j;
    for (size_t i = 1; i <= na; i++) {
        for (size_t k = 0; k < w; k++) {
            cur[k] = big;
            long j = (long)i + (long)k - (long)band;
            if (j < 0 || j > (long)nb) continue;
            if (j == 0) { cur[k] = i; continue; }
            size_t best = big;
            /* (i-1, j-1): same diagonal index in prev */
            size_t sub = prev[k] + (a[i - 1] != b[j - 1]);
            if (sub < best) best = sub;
            if (k + 1 < w && prev[k + 1] + 1 < best) best = prev[k + 1] + 1; /* (i-1, j) */
            if (k > 0 && cur[k - 1] + 1 < best) best = cur[k - 1] + 1;       /* (i, j-1) */
            cur[k] = best;
        }
        size_t *t = prev; prev = cur; cur = t;
    }
    long k = (long)nb - (long)na + (long)band;
    size_t d = (k >= 0 && k < (long)w) ? prev[k] : big;
    free(prev);
    free(cur);
    return d;
}

TEST(sim_statistics_match_published) {
    size_t n = 200000;
    char *text = make_text(n);
    n = strlen(text);
    sim_params p;
    sim_params_default(&p);
    sim_event *ev;
    size_t ne;
    char err[256] = "";
    CHECKF(sim_run(&p, 42, text, n, &ev, &ne, err, sizeof err) == LAYA_OK, "%s", err);
    double sum = 0, sum2 = 0, hold = 0;
    size_t rolled = 0, bs = 0, typo = 0;
    for (size_t i = 0; i < ne; i++) {
        if (i > 0) {
            double d = ev[i].time_ms - ev[i - 1].time_ms;
            CHECK(d > 0);
            sum += d;
            sum2 += d * d;
            if (ev[i - 1].time_ms + ev[i - 1].hold_ms > ev[i].time_ms) rolled++;
            CHECK(!!(ev[i - 1].flags & SIM_F_ROLLOVER) ==
                  (ev[i - 1].time_ms + ev[i - 1].hold_ms > ev[i].time_ms));
        }
        hold += ev[i].hold_ms;
        bs += ev[i].kind == SIM_BACKSPACE;
        typo += !!(ev[i].flags & SIM_F_TYPO);
    }
    double m = sum / (double)(ne - 1), sd = sqrt(sum2 / (double)(ne - 1) - m * m);
    double kspc = (double)ne / (double)utf8_count((const uint8_t *)text, n);
    printf("    iki mean %.1f sd %.1f, hold %.1f, rollover %.3f, kspc %.3f, backspaces %.4f/char, "
           "typo keys %.4f/char\n", m, sd, hold / (double)ne, (double)rolled / (double)(ne - 1),
           kspc, (double)bs / (double)n, (double)typo / (double)n);
    CHECK_NEAR(m, 239, 0, 0.03);
    CHECK_NEAR(sd, 112, 0, 0.06);
    CHECK_NEAR(hold / (double)ne, 116, 0, 0.06);
    CHECK_NEAR((double)rolled / (double)(ne - 1), 0.25, 0.015, 0);
    CHECK_NEAR(kspc, 1.17, 0.03, 0);
    /* substitutions and insertions each put one wrong key down (retyping can
     * err again, so a little above 1.65% + 0.67%) */
    CHECK_NEAR((double)typo / (double)n, 0.0165 + 0.0067, 0, 0.15);
    free(ev);
    free(text);
}

TEST(sim_uncorrected_errors_match_published) {
    size_t n = 40000;
    char *text = make_text(n);
    n = strlen(text);
    sim_params p;
    sim_params_default(&p);
    sim_event *ev;
    size_t ne, rl;
    char *typed;
    CHECK(sim_run(&p, 7, text, n, &ev, &ne, NULL, 0) == LAYA_OK);
    CHECK(sim_replay(ev, ne, &typed, &rl) == LAYA_OK);
    double rate = (double)banded_edit(text, n, typed, rl, 300) / (double)n;
    printf("    uncorrected edit rate %.4f\n", rate);
    CHECK_NEAR(rate, 0.012, 0.002, 0);
    free(typed);
    free(ev);
    free(text);
}

TEST(sim_corrected_replays_to_text) {
    const char *texts[] = {
        NULL, /* the long generated text */
        "Best regards,\nAnna",
        "订个外卖，还是订个酒店？我们明天见。",
        "mixed: café 東京 🙂 and \xff\xfe invalid bytes \xe4\xb8",
        "a",
        "",
    };
    char *gen = make_text(30000);
    texts[0] = gen;
    sim_params p;
    sim_params_corrected(&p);
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        for (uint64_t seed = 1; seed <= 5; seed++) {
            sim_event *ev;
            size_t ne, rl;
            char *typed;
            size_t n = strlen(texts[t]);
            CHECK(sim_run(&p, seed, texts[t], n, &ev, &ne, NULL, 0) == LAYA_OK);
            CHECK(sim_replay(ev, ne, &typed, &rl) == LAYA_OK);
            CHECKF(rl == n && memcmp(typed, texts[t], n) == 0, "text %zu seed %llu replays wrong",
                   t, (unsigned long long)seed);
            if (t == 0) {
                size_t bs = 0;
                for (size_t i = 0; i < ne; i++) bs += ev[i].kind == SIM_BACKSPACE;
                CHECK(bs > 100); /* it really made and fixed typos */
            }
            free(typed);
            free(ev);
        }
    }
    free(gen);
}

TEST(sim_cjk_typos_use_text_characters) {
    /* A CJK substitution types another character of the text: every char
     * event is a whole character from the text. */
    const char *text = "我们明天上午十点开会讨论这个问题然后一起去吃午饭。";
    sim_params p;
    sim_params_corrected(&p);
    p.p_sub = 0.3;
    p.p_insert = 0.1;
    sim_event *ev;
    size_t ne;
    CHECK(sim_run(&p, 3, text, strlen(text), &ev, &ne, NULL, 0) == LAYA_OK);
    size_t typos = 0;
    for (size_t i = 0; i < ne; i++) {
        if (ev[i].kind != SIM_CHAR) continue;
        CHECK(ev[i].len == 3);
        char c[4] = {0};
        memcpy(c, ev[i].bytes, 3);
        CHECK(strstr(text, c) != NULL);
        typos += !!(ev[i].flags & SIM_F_TYPO);
    }
    CHECK(typos > 0);
    free(ev);
}

TEST(sim_deterministic_per_seed) {
    char *text = make_text(5000);
    size_t n = strlen(text);
    sim_params p;
    sim_params_default(&p);
    sim_event *a, *b, *c;
    size_t na, nb, nc;
    CHECK(sim_run(&p, 99, text, n, &a, &na, NULL, 0) == LAYA_OK);
    CHECK(sim_run(&p, 99, text, n, &b, &nb, NULL, 0) == LAYA_OK);
    CHECK(sim_run(&p, 100, text, n, &c, &nc, NULL, 0) == LAYA_OK);
    CHECK(na == nb && memcmp(a, b, na * sizeof *a) == 0);
    int differs = nc != na;
    for (size_t i = 0; !differs && i < na; i++) differs = a[i].time_ms != c[i].time_ms;
    CHECK(differs);
    free(a);
    free(b);
    free(c);
    free(text);
}

TEST(sim_rejects_bad_params) {
    sim_params p;
    sim_params_default(&p);
    p.iki_sd_ms = 10; /* cannot hold a 25% share of 80 ms intervals around a 239 ms mean */
    sim_event *ev = (sim_event *)1;
    size_t ne = 1;
    char err[256] = "";
    CHECK(sim_run(&p, 1, "abc", 3, &ev, &ne, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "rollover") != NULL);
    CHECK(ev == NULL && ne == 0);
    sim_params_default(&p);
    p.p_uncorrected = 0.5;
    CHECK(sim_run(&p, 1, "abc", 3, &ev, &ne, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(sim_run(&p, 1, NULL, 3, &ev, &ne, err, sizeof err) == LAYA_ERR_ARG);
}
