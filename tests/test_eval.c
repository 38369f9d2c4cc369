/* test_eval.c - the evaluation library's metric in-process: the acceptance
 * rule, the typists' keystroke counts against hand-counted answers, and the
 * commits of a learning run. The engine here is an in-process oracle that
 * knows the text: it proposes the rest of the current word and a space. */
#include <math.h>
#include <string.h>

#include "eval/eval.h"
#include "test.h"

typedef struct {
    const char *truth;     /* the text the typist types */
    int silent;            /* propose nothing */
    char sug[2][256];
    char commits[512];     /* every commit, joined by '|' */
    int n_commit, n_reset, n_suggest;
} oracle;

static laya_status o_suggest(void *ctx, const char *sid, const char *context, size_t len, int k,
                             double t_ms, int decide, eval_reply *r, char *err, size_t errlen) {
    oracle *o = ctx;
    memset(r, 0, sizeof *r);
    r->us = 5;
    o->n_suggest++;
    if (o->silent || strncmp(context, o->truth, len)) return LAYA_OK;
    /* the rest of the word at the cursor, then one space if one follows */
    const char *rest = o->truth + len;
    size_t w = strcspn(rest, " \n");
    if (!w) return LAYA_OK;
    size_t l = w + (rest[w] == ' ');
    snprintf(o->sug[0], sizeof o->sug[0], "%.*s", (int)l, rest);
    snprintf(o->sug[1], sizeof o->sug[1], "%.*sX", (int)w, rest);   /* a wrong one */
    r->s[0] = o->sug[1], r->len[0] = w + 1;
    r->s[1] = o->sug[0], r->len[1] = l;
    r->n = 2;
    return LAYA_OK;
}

static laya_status o_reset(void *ctx, const char *sid, char *err, size_t errlen) {
    ((oracle *)ctx)->n_reset++;
    return LAYA_OK;
}

static laya_status o_commit(void *ctx, const char *sid, const char *text, size_t len, char *err,
                            size_t errlen) {
    oracle *o = ctx;
    size_t n = strlen(o->commits);
    snprintf(o->commits + n, sizeof o->commits - n, "%s%.*s", o->n_commit++ ? "|" : "", (int)len, text);
    return LAYA_OK;
}

static eval_client client_of(oracle *o) {
    return (eval_client){.ctx = o, .suggest = o_suggest, .reset = o_reset, .commit = o_commit};
}

/* The perfect typist over t against the oracle o at k, no learning; the
 * counts are added to *st. */
static laya_status type_with_oracle(const eval_text *t, oracle *o, int k, eval_stats *st) {
    eval_client c = client_of(o);
    eval_caps caps = {0};
    eval_type_opts opt = {.typist = EVAL_PERFECT, .k = k, .sid = "s"};
    char err[256];
    return eval_type_text(&c, t, &opt, &caps, st, NULL, NULL, NULL, NULL, err, sizeof err);
}

TEST(eval_accept_longest_prefix_on_a_character_boundary) {
    eval_reply r = {.n = 4, .s = {"ca", "", "cat s", "caf\xC3"}, .len = {2, 0, 5, 4}};
    int idx, shown;
    CHECK(eval_accept(&r, 3, "cat sat", 7, &idx, &shown) == 5 && idx == 2 && shown == 2);
    /* only the first k count */
    CHECK(eval_accept(&r, 1, "cat sat", 7, &idx, &shown) == 2 && idx == 0 && shown == 1);
    /* a suggestion that ends inside a character is no prefix */
    CHECK(eval_accept(&r, 4, "caf\xC3\xA9", 5, &idx, &shown) == 2 && idx == 0 && shown == 3);
    /* not a prefix, or longer than the rest */
    CHECK(eval_accept(&r, 3, "dog", 3, &idx, &shown) == 0 && idx == -1);
    CHECK(eval_accept(&r, 3, "cat ", 4, &idx, &shown) == 2 && idx == 0);
}

TEST(eval_perfect_typist_counts_keystrokes) {
    eval_text t;
    CHECK(eval_text_from("a", "the cat sat", 11, 1000, &t) == LAYA_OK);
    oracle o = {.truth = t.bytes};
    eval_stats st = {0};
    CHECK(type_with_oracle(&t, &o, 3, &st) == LAYA_OK);
    /* accept "the ", "cat ", "sat": 3 keystrokes for 11 characters */
    CHECKF(st.keys == 3 && st.chars == 11 && st.base == 11 && st.accepted == 3, "keys %zu", st.keys);
    CHECK(st.shown == 3 && st.accepted_chars == 11);
    CHECK_NEAR(eval_ksr(&st), 8.0 / 11.0, 1e-12, 0);
    CHECK(o.n_commit == 0);   /* no learning asked for */
    /* at k=1 only the wrong suggestion is seen: every character typed */
    eval_stats s1 = {0};
    CHECK(type_with_oracle(&t, &o, 1, &s1) == LAYA_OK);
    CHECK(s1.keys == 11 && s1.accepted == 0 && s1.shown == 9);
    eval_text_free(&t);
}

/* KSR's standard error from blocks of EVAL_SE_CHARS characters: with the
 * oracle at k=3 every word costs one keystroke, taken where the word
 * starts, so a block's keystrokes are the word starts inside it. One word
 * of 230 letters is accepted in one keystroke across two block boundaries:
 * the block it jumps over counts no keystroke. */
TEST(eval_ksr_standard_error_from_blocks) {
    char text[1024];
    size_t n = 0;
    for (int w = 0; n < 600; w++) {
        int len = w == 20 ? 230 : 1 + (w * 7) % 12;
        if (n) text[n++] = ' ';
        for (int i = 0; i < len; i++) text[n++] = (char)('a' + (w + i) % 26);
    }
    text[n] = 0;
    /* the answer by hand: word starts per block */
    enum { B = EVAL_SE_CHARS };
    double kb[16] = {0}, cb[16] = {0};
    size_t nb = (n + B - 1) / B;
    for (size_t i = 0; i < n; i++) {
        cb[i / B]++;
        if (text[i] != ' ' && (i == 0 || text[i - 1] == ' ')) kb[i / B]++;
    }
    double K = 0, C = 0, kk = 0, cc = 0, kc = 0;
    int empty = 0;
    for (size_t b = 0; b < nb; b++) {
        K += kb[b], C += cb[b], kk += kb[b] * kb[b], cc += cb[b] * cb[b], kc += kb[b] * cb[b];
        empty += kb[b] == 0;
    }
    CHECK(empty >= 1);   /* the long word jumps over a block */
    double r = K / C, want = sqrt((double)nb / (double)(nb - 1) * (kk - 2 * r * kc + r * r * cc)) / C;

    eval_text t;
    CHECK(eval_text_from("a", text, n, 100000, &t) == LAYA_OK);
    oracle o = {.truth = t.bytes};
    eval_stats st = {0};
    CHECK(type_with_oracle(&t, &o, 3, &st) == LAYA_OK);
    CHECKF(st.keys == (size_t)K && st.se_blocks == nb, "keys %zu (want %g), blocks %zu (want %zu)", st.keys, K,
           st.se_blocks, nb);
    CHECK(st.se_k == K && st.se_c == C && st.se_kk == kk && st.se_cc == cc && st.se_kc == kc);
    CHECK_NEAR(eval_ksr_se(&st), want, 1e-12, 0);
    CHECK(want > 0.01);
    /* sums of two runs add block by block; fewer than two blocks: no error */
    eval_stats two = {0};
    eval_stats_add(&two, &st);
    eval_stats_add(&two, &st);
    CHECK(two.se_blocks == 2 * nb && two.se_kk == 2 * kk);
    CHECK_NEAR(eval_ksr_se(&two), want * sqrt((2.0 * nb / (2.0 * nb - 1)) / ((double)nb / (nb - 1)) / 2), 1e-12, 0);
    eval_stats one = {.se_blocks = 1, .se_k = 3, .se_c = 50, .se_kk = 9, .se_cc = 2500, .se_kc = 150};
    CHECK(isnan(eval_ksr_se(&one)));
    eval_text_free(&t);
}

TEST(eval_silent_engine_saves_nothing_for_either_typist) {
    eval_text t;
    const char *s = "one line\nand \xE4\xB8\xAD\xE6\x96\x87 two";
    CHECK(eval_text_from("a", s, strlen(s), 1000, &t) == LAYA_OK);
    oracle o = {.truth = t.bytes, .silent = 1};
    eval_client c = client_of(&o);
    eval_caps caps = {0};
    char err[256];
    eval_stats p = {0}, m = {0};
    eval_type_opts opt = {.typist = EVAL_PERFECT, .k = 3, .sid = "s"};
    CHECK(eval_type_text(&c, &t, &opt, &caps, &p, NULL, NULL, NULL, NULL, err, sizeof err) == LAYA_OK);
    CHECK(p.keys == t.chars && p.chars == 19 && p.shown == 0 && eval_ksr(&p) == 0);
    opt.typist = EVAL_SIM;
    opt.seed = 7;
    CHECK(eval_type_text(&c, &t, &opt, &caps, &m, NULL, NULL, NULL, NULL, err, sizeof err) == LAYA_OK);
    /* the simulated typist errs and corrects: as many keys as its baseline */
    CHECKF(m.keys == m.base && m.base >= t.chars && eval_ksr(&m) == 0, "keys %zu base %zu", m.keys, m.base);
    eval_text_free(&t);
}

TEST(eval_learning_commits_each_finished_line) {
    eval_text t;
    const char *s = "Best regards,\nTom\nend";
    CHECK(eval_text_from("a", s, strlen(s), 1000, &t) == LAYA_OK);
    oracle o = {.truth = t.bytes};
    eval_client c = client_of(&o);
    eval_caps caps = {0};
    eval_stats st = {0};
    eval_type_opts opt = {.typist = EVAL_PERFECT, .k = 3, .learn = 1, .sid = "s"};
    char err[256];
    CHECK(eval_type_text(&c, &t, &opt, &caps, &st, NULL, NULL, NULL, NULL, err, sizeof err) == LAYA_OK);
    CHECKF(!strcmp(o.commits, "Best regards,\n|Tom\n|end"), "commits '%s'", o.commits);
    eval_text_free(&t);
}

TEST(eval_text_repairs_utf8) {
    eval_text t;
    const char raw[] = "a\xFF" "b\0c\xE4\xB8\xAD";
    CHECK(eval_text_from("x", raw, sizeof raw - 1, 1000, &t) == LAYA_OK);
    CHECK(t.replaced == 2 && t.chars == 6 && t.cjk == 1);
    CHECK(!strcmp(t.bytes, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xE4\xB8\xAD"));
    eval_text_free(&t);
    CHECK(eval_text_from("x", raw, sizeof raw - 1, 2, &t) == LAYA_OK && t.chars == 2 && t.len == 4);
    eval_text_free(&t);
}

/* The runs: a fresh engine per run, passes in one process, the learning run
 * last, and the report's totals. */
typedef struct {
    oracle *o;
    int starts, stops;
} factory;

static laya_status f_start(void *ctx, eval_client *c, char *err, size_t errlen) {
    factory *f = ctx;
    f->starts++;
    *c = client_of(f->o);
    return LAYA_OK;
}

static void f_stop(void *ctx) { ((factory *)ctx)->stops++; }

TEST(eval_run_passes_and_learning) {
    eval_text t[2];
    CHECK(eval_text_from("a", "the cat sat", 11, 1000, &t[0]) == LAYA_OK);
    CHECK(eval_text_from("b", "the cat sat", 11, 1000, &t[1]) == LAYA_OK);
    oracle o = {.truth = t[0].bytes};
    factory f = {.o = &o};
    eval_engine eng = {.ctx = &f, .start = f_start, .stop = f_stop};
    eval_cfg cfg = {.ks = {3, 1}, .n_ks = 2, .passes = 2, .learn = 1, .typist = EVAL_PERFECT, .seed = 1};
    eval_report rep;
    char err[256];
    CHECK(eval_run(&eng, &cfg, t, 2, &rep, NULL, NULL, err, sizeof err) == LAYA_OK);
    CHECK(f.starts == 3 && f.stops == 3 && rep.n_runs == 3);
    CHECK(rep.runs[0].k == 3 && !rep.runs[0].learn && rep.runs[1].k == 1 && rep.runs[2].learn);
    CHECK(rep.runs[0].pass_total[1].keys == 6 && rep.runs[0].pass_total[1].chars == 22);
    CHECK(rep.cold_ms.n == 3 && rep.words == NULL && rep.bits[0] < 0);
    CHECK(o.n_commit == 4);   /* the learning run: 2 texts x 2 passes */
    json_t *j = eval_report_json(&rep, &cfg, t, "oracle", "KSR");
    CHECK(j && json_array_size(json_object_get(j, "texts")) == 3);
    json_t *all = json_array_get(json_object_get(j, "texts"), 2);
    CHECK(json_array_size(json_object_get(all, "runs")) == 6);
    json_decref(j);
    eval_report_free(&rep);
    eval_text_free(&t[0]);
    eval_text_free(&t[1]);
}
