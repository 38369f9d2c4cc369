/* test_prior.c - the next-word prior (src/prior/prior.h): the longest-word
 * query, every refusal of a broken table, embedding it in a model file, and
 * the search's use of it (weight 0 changes nothing; weight 1 shows exactly
 * the prior's followers; otherwise the model's candidates keep their
 * probabilities and the prior's words are added at the mixture's odds). */
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/engine.h"
#include "model/model.h"
#include "prior/prior.h"
#include "test_engine_util.h"
#include "util/file.h"
#include "util/st.h"

/* A small table: word -> followers (id by the sorted order, made below). */
typedef struct {
    const char *word;
    const char *fol[3];
    float p[3];
} spec;

static const spec SPEC[] = {
    {"订个", {"外卖", "酒店", "机票"}, {0.5f, 0.3f, 0.2f}},
    {"个", {"人", "外卖", NULL}, {0.9f, 0.05f, 0}},
    {"今天", {"天气", NULL, NULL}, {0.4f, 0, 0}},
    {"天", {"气", NULL, NULL}, {0.3f, 0, 0}},
    {"外卖", {NULL}, {0}},
    {"酒店", {NULL}, {0}},
    {"机票", {NULL}, {0}},
    {"人", {NULL}, {0}},
    {"天气", {NULL}, {0}},
    {"气", {NULL}, {0}},
    /* English keys (prior.h): lower case, "<s>" a sentence's start */
    {"<s>", {"The", "Yeah", NULL}, {0.05f, 0.04f, 0}},
    {"<s> hi", {"there", NULL, NULL}, {0.1f, 0, 0}},
    {"hi", {"everyone", NULL, NULL}, {0.02f, 0, 0}},
    {"thank you", {"for", NULL, NULL}, {0.2f, 0, 0}},
    {"you", {"know", NULL, NULL}, {0.1f, 0, 0}},
    {"The", {NULL}, {0}},
    {"Yeah", {NULL}, {0}},
    {"there", {NULL}, {0}},
    {"everyone", {NULL}, {0}},
    {"for", {NULL}, {0}},
    {"know", {NULL}, {0}},
};
enum { NS = sizeof SPEC / sizeof SPEC[0], MAXF = 3 };

typedef struct {
    uint32_t word_off[NS + 1], fol_off[NS + 1], fol[NS * MAXF];
    float fol_p[NS * MAXF];
    char words[256];
    int nw, nf, nb;
} table;

static int by_word(const void *a, const void *b) {
    return strcmp(((const spec *)a)->word, ((const spec *)b)->word);
}

static void make_table(table *t) {
    spec s[NS];
    memcpy(s, SPEC, sizeof s);
    qsort(s, NS, sizeof *s, by_word);
    memset(t, 0, sizeof *t);
    for (int i = 0; i < NS; i++) {
        size_t n = strlen(s[i].word);
        memcpy(t->words + t->nb, s[i].word, n);
        t->nb += (int)n;
        t->word_off[i + 1] = (uint32_t)t->nb;
        for (int j = 0; j < MAXF && s[i].fol[j]; j++) {
            int id = -1;
            for (int k = 0; k < NS; k++)
                if (!strcmp(s[k].word, s[i].fol[j])) id = k;
            t->fol[t->nf] = (uint32_t)id;
            t->fol_p[t->nf++] = s[i].p[j];
        }
        t->fol_off[i + 1] = (uint32_t)t->nf;
    }
    t->nw = NS;
}

static laya_status write_table(const char *path, const table *t, const char *format) {
    st_out o[5] = {
        {.name = "word_off", .dtype = ST_U32, .ndim = 1, .shape = {t->nw + 1}, .src = t->word_off},
        {.name = "fol_off", .dtype = ST_U32, .ndim = 1, .shape = {t->nw + 1}, .src = t->fol_off},
        {.name = "fol", .dtype = ST_U32, .ndim = 1, .shape = {t->nf}, .src = t->fol},
        {.name = "fol_p", .dtype = ST_F32, .ndim = 1, .shape = {t->nf}, .src = t->fol_p},
        {.name = "words", .dtype = ST_U8, .ndim = 1, .shape = {t->nb}, .src = t->words},
    };
    json_t *meta = json_pack("{s:s,s:s,s:s}", "format", format, "format_version", "1", "source", "test table");
    char err[200];
    laya_status st = st_write(path, o, 5, meta, NULL, err, sizeof err);
    json_decref(meta);
    return st;
}

/* Parses the prior file at path: the status, and the prior in *p (its
 * bytes in *map, len bytes: the caller unmaps). */
static laya_status parse_file(const char *path, prior *p, const uint8_t **map, size_t *len, char *err,
                              size_t errlen) {
    laya_status st = file_map_regular(path, "prior", map, len, err, errlen);
    if (st) return st;
    st_file f;
    if ((st = st_parse(*map, *len, &f, err, errlen))) return st;
    int present;
    st = prior_parse(&f, "", p, &present, err, errlen);
    st_free(&f);
    return st == LAYA_OK && !present ? LAYA_ERR_FORMAT : st;
}

static int has(const prior_cand *c, int n, int i, const char *text) {
    return i < n && c[i].len == (int)strlen(text) && !memcmp(c[i].text, text, (size_t)c[i].len);
}

/* The table of SPEC written to test_tmpdir()/name and parsed into *p (its
 * bytes in *map, len bytes: the caller unmaps). */
static laya_status spec_prior(const char *name, prior *p, const uint8_t **map, size_t *len, char *err,
                              size_t errlen) {
    table t;
    make_table(&t);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    laya_status st = write_table(path, &t, "laya-prior");
    return st ? st : parse_file(path, p, map, len, err, errlen);
}

TEST(prior_query_takes_the_longest_word_with_followers) {
    char err[300] = "";
    prior p;
    const uint8_t *map;
    size_t len;
    laya_status st = spec_prior("p.safetensors", &p, &map, &len, err, sizeof err);
    CHECKF(st == LAYA_OK, "%s: %s", laya_status_str(st), err);
    CHECK(p.nw == NS);
    prior_cand c[PRIOR_MAX_CAND];
    const char *q = "我想订个";   /* "订个" beats "个" */
    int n = prior_query(&p, (const uint8_t *)q, strlen(q), c, PRIOR_MAX_CAND);
    CHECK(n == 3 && has(c, n, 0, "外卖") && has(c, n, 1, "酒店") && has(c, n, 2, "机票"));
    CHECK_NEAR(c[0].p, 0.5, 1e-7, 0);
    q = "三个";
    n = prior_query(&p, (const uint8_t *)q, strlen(q), c, PRIOR_MAX_CAND);
    CHECK(n == 2 && has(c, n, 0, "人"));
    q = "今天";   /* the longest word, "今天", not "天" */
    n = prior_query(&p, (const uint8_t *)q, strlen(q), c, 1);
    CHECK(n == 1 && has(c, n, 0, "天气"));
    q = "天气";   /* a word without followers, and "气" has none either */
    CHECK(prior_query(&p, (const uint8_t *)q, strlen(q), c, PRIOR_MAX_CAND) == 0);
    /* the text must end in a Han character; a blank, Latin, punctuation,
     * a partial character or nothing proposes nothing */
    const char *none[] = {"订个 ", "ge", "订个。", "订\xe4\xb8"};
    for (int i = 0; i < 4; i++)
        CHECKF(prior_query(&p, (const uint8_t *)none[i], strlen(none[i]), c, PRIOR_MAX_CAND) == 0, "case %d", i);
    munmap((void *)(uintptr_t)map, len);
}

TEST(prior_query_english_keys_after_a_blank) {
    char err[300] = "";
    prior p;
    const uint8_t *map;
    size_t len;
    laya_status st = spec_prior("pe.safetensors", &p, &map, &len, err, sizeof err);
    CHECKF(st == LAYA_OK, "%s: %s", laya_status_str(st), err);
    prior_cand c[PRIOR_MAX_CAND];
    /* context -> the first follower of the key that answers */
    static const struct {
        const char *ctx, *first;
    } yes[] = {
        {"", "The"},                /* an empty text starts a sentence */
        {"Done. ", "The"},          /* so does a sentence's end */
        {"Really?\" ", "The"},      /* with a closing quote */
        {"line\n", "The"},          /* and a line break */
        {"Hi ", "there"},           /* "<s> hi" before "hi" */
        {"Fine.  Hi ", "there"},
        {"Well, hi ", "everyone"},  /* no word right before: "hi" */
        {"I said hi ", "everyone"}, /* "said hi" unknown: "hi" */
        {"Oh thank YOU ", "for"},   /* "thank you", in lower case */
        {"(you ", "know"},
        {"订个 OK.\n", "The"},     /* the last letter is Latin */
        {"He said \xe2\x80\x9chi.\xe2\x80\x9d\n", "The"},   /* curly quotes are not Chinese */
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        int n = prior_query(&p, (const uint8_t *)yes[i].ctx, strlen(yes[i].ctx), c, PRIOR_MAX_CAND);
        CHECKF(n >= 1 && has(c, n, 0, yes[i].first), "\"%s\": %d followers", yes[i].ctx, n);
    }
    int n = prior_query(&p, (const uint8_t *)"", 0, c, PRIOR_MAX_CAND);
    CHECK(n == 2 && has(c, n, 1, "Yeah"));
    CHECK_NEAR(c[1].p, 0.04, 1e-7, 0);
    /* mid-word, two blanks, after a comma, a word glued to a digit or to a
     * non-ASCII letter, an unknown word: nothing */
    const char *none[] = {"hi", "Hi  ", "Thank you, ", "x3hi ", "\xc3\xa9hi ", "zebra ", "hi\t",
                          "我们走吧。\n", "好的! ", "订个\n\n"};   /* a line after Chinese is not English */
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        CHECKF(prior_query(&p, (const uint8_t *)none[i], strlen(none[i]), c, PRIOR_MAX_CAND) == 0, "\"%s\"",
               none[i]);
    munmap((void *)(uintptr_t)map, len);
}

TEST(prior_parse_refuses_broken_tables) {
    char path[512], err[300];
    snprintf(path, sizeof path, "%s/p.safetensors", test_tmpdir());
    for (int which = 0; which < 7; which++) {
        table t;
        make_table(&t);
        const char *want = NULL;
        switch (which) {
        case 0: t.fol[0] = (uint32_t)NS; want = "out of range"; break;                     /* id too large */
        case 1: {                                                                         /* increasing */
            int w = 0;
            while (t.fol_off[w + 1] - t.fol_off[w] < 2) w++;
            t.fol_p[t.fol_off[w] + 1] = 0.99f;
            want = "out of order";
            break;
        }
        case 2: t.fol_p[0] = 0; want = "(0, 1]"; break;                                   /* zero */
        case 3: t.fol_p[0] = 1.5f; want = "(0, 1]"; break;                                /* above one */
        case 4: {                                                                         /* unsorted */
            char w0[16];
            int l0 = (int)t.word_off[1];
            memcpy(w0, t.words, (size_t)l0);
            memmove(t.words, t.words + l0, (size_t)(t.word_off[2] - (uint32_t)l0));
            memcpy(t.words + (t.word_off[2] - (uint32_t)l0), w0, (size_t)l0);
            t.word_off[1] = t.word_off[2] - (uint32_t)l0;
            want = "sorted";
            break;
        }
        case 5: t.fol_off[NS] = (uint32_t)t.nf - 1; want = "offsets"; break;             /* does not end at NF */
        case 6: t.words[0] = (char)0xff; want = "UTF-8"; break;                          /* not UTF-8 */
        }
        CHECK(write_table(path, &t, "laya-prior") == LAYA_OK);
        prior p;
        const uint8_t *map;
        size_t len;
        err[0] = 0;
        laya_status st = parse_file(path, &p, &map, &len, err, sizeof err);
        munmap((void *)(uintptr_t)map, len);
        CHECKF(st == LAYA_ERR_FORMAT && strstr(err, want), "case %d: %s (%s)", which, laya_status_str(st), err);
    }
}

/* The engine test model saved to dir/plain.safetensors, and with the test
 * table inside it to dir/prior.safetensors; both loaded unsigned. */
static int two_models(const char *dir, laya_model **plain, laya_model **with_prior, float **params) {
    laya_model *lm = te_model(300, 16, 8, 2, 3, 0.5f, 7, params);
    if (!lm) return 0;
    const model *m = engine_model(lm);
    uint8_t *blob;
    size_t bn;
    if (tok_save(m->tok, &blob, &bn) != LAYA_OK) return 0;
    char a[512], b[512], c[512], err[300] = "";
    snprintf(a, sizeof a, "%s/plain.safetensors", dir);
    snprintf(b, sizeof b, "%s/table.safetensors", dir);
    snprintf(c, sizeof c, "%s/prior.safetensors", dir);
    table t;
    make_table(&t);
    int ok = model_save(a, &m->cfg, *params, QT_F32, blob, bn, NULL, err, sizeof err) == LAYA_OK &&
             write_table(b, &t, "laya-prior") == LAYA_OK && prior_embed(a, b, c, err, sizeof err) == LAYA_OK;
    free(blob);
    laya_model_free(lm);
    if (!ok) {
        fprintf(stderr, "two_models: %s\n", err);
        return 0;
    }
    laya_load_opts o = {.flags = LAYA_LOAD_ALLOW_UNSIGNED};
    return laya_model_load_opts(a, &o, plain, err, sizeof err) == LAYA_OK &&
           laya_model_load_opts(c, &o, with_prior, err, sizeof err) == LAYA_OK;
}

/* The k suggestions after text at or above min_prob (out[0..k), their
 * texts in texts). */
static int suggest_k(const laya_model *lm, float weight, const char *text, int k, float min_prob,
                     laya_suggestion *out, char texts[][128]) {
    laya_session *s;
    if (laya_session_new(lm, &s) != LAYA_OK) return -1;
    laya_search_opts o = laya_search_defaults();
    o.prior_weight = weight;
    o.min_prob = min_prob;
    int n = -1;
    if (laya_session_set_search(s, &o) == LAYA_OK && laya_session_type(s, text, strlen(text)) == LAYA_OK &&
        laya_suggest(s, k, out, &n) == LAYA_OK)
        for (int i = 0; i < n; i++) snprintf(texts[i], 128, "%.*s", (int)out[i].len, out[i].text);
    laya_session_free(s);
    return n;
}

static int suggest(const laya_model *lm, float weight, const char *text, laya_suggestion *out, char texts[][128]) {
    return suggest_k(lm, weight, text, 3, laya_search_defaults().min_prob, out, texts);
}

TEST(prior_in_a_model_file_and_in_the_search) {
    laya_model *plain = NULL, *wp = NULL;
    float *params = NULL;
    CHECK(two_models(test_tmpdir(), &plain, &wp, &params));
    CHECK(engine_model(plain)->prior.nw == 0);
    CHECK(engine_model(wp)->prior.nw == NS);
    /* the prior leaves the weights' identity (what an intent head names) as it was */
    char ia[65], ib[65];
    CHECK(model_identity(engine_model(plain), ia) == LAYA_OK && model_identity(engine_model(wp), ib) == LAYA_OK);
    CHECKF(!strcmp(ia, ib), "%s vs %s", ia, ib);
    laya_suggestion a[3], b[3];
    char ta[3][128], tb[3][128];
    /* weight 0, or text the prior has nothing for: the same as without it */
    const char *texts[] = {"我想订个", "Thank you for", "今天"};
    for (int i = 0; i < 3; i++) {
        int na = suggest(plain, 0.5f, texts[i], a, ta), nb = suggest(wp, i == 1 ? 0.5f : 0, texts[i], b, tb);
        CHECKF(na == nb && na >= 0, "%s: %d vs %d", texts[i], na, nb);
        for (int j = 0; j < na; j++) CHECK(!strcmp(ta[j], tb[j]) && a[j].prob == b[j].prob);
    }
    /* weight 1: only the prior speaks, best first by probability x characters saved */
    int n = suggest(wp, 1.0f, "我想订个", b, tb);
    CHECKF(n == 3 && !strcmp(tb[0], "外卖") && !strcmp(tb[1], "酒店") && !strcmp(tb[2], "机票"), "n=%d %s", n,
           n > 0 ? tb[0] : "");
    CHECK_NEAR(b[0].prob, 0.5, 1e-6, 0);
    /* weight 0.5 (odds 1): the prior's best word is among the three, at its probability or more */
    n = suggest(wp, 0.5f, "我想订个", b, tb);
    int found = 0;
    for (int j = 0; j < n; j++) found |= !strcmp(tb[j], "外卖") && b[j].prob >= 0.5f - 1e-6f;
    CHECK(found);
    laya_model_free(plain);
    laya_model_free(wp);
    free(params);
}

/* A word's P(follower | word) in SPEC after word, 0 if not a follower. */
static double spec_p(const char *word, const char *text) {
    for (int i = 0; i < NS; i++)
        for (int j = 0; j < MAXF && !strcmp(SPEC[i].word, word) && SPEC[i].fol[j]; j++)
            if (!strcmp(SPEC[i].fol[j], text)) return SPEC[i].p[j];
    return 0;
}

/* The rule of engine_blend_prior: p = p_model + w / (1 - w) p_prior. A
 * candidate the prior has nothing for keeps the model's probability bit for
 * bit (the former mixture scaled it by 1 - w, which the decision's
 * thresholds then read), the model's candidates keep their order, and the
 * prior's words get their odds on top of what the model gave them. */
TEST(prior_adds_its_words_and_leaves_the_models_probabilities) {
    laya_model *plain = NULL, *wp = NULL;
    float *params = NULL;
    CHECK(two_models(test_tmpdir(), &plain, &wp, &params));
    const char *texts[] = {"今天", "订个"}, *words[] = {"今天", "订个"};
    const float w = 0.6f;
    const double odds = (double)w / (1 - (double)w);
    int kept = 0;   /* the model's candidates compared */
    for (int t = 0; t < 2; t++) {
        laya_suggestion a[LAYA_MAX_K], b[LAYA_MAX_K];
        char ta[LAYA_MAX_K][128], tb[LAYA_MAX_K][128];
        int na = suggest_k(plain, w, texts[t], LAYA_MAX_K, 0, a, ta);
        int nb = suggest_k(wp, w, texts[t], LAYA_MAX_K, 0, b, tb);
        /* the prior adds words (the list may already be full) */
        CHECKF(na >= 1 && (nb > na || nb == LAYA_MAX_K), "%s: %d, %d suggestions", texts[t], na, nb);
        /* the model's own candidates, in their order, each with its probability exactly */
        int j = 0;
        for (int i = 0; i < na && i < LAYA_MAX_K - MAXF; i++) {
            if (spec_p(words[t], ta[i]) > 0) continue;
            while (j < nb && (spec_p(words[t], tb[j]) > 0 || strcmp(tb[j], ta[i]))) j++;
            CHECKF(j < nb && b[j].prob == a[i].prob, "%s: '%s' %.6f -> %.6f", texts[t], ta[i], (double)a[i].prob,
                   j < nb ? (double)b[j].prob : -1.0);
            kept++;
        }
        /* the prior's words: the model's probability (0 when it had none) plus the odds times the prior's */
        int added = 0;
        for (int i = 0; i < nb; i++) {
            double pp = spec_p(words[t], tb[i]), pm = 0;
            if (pp == 0) continue;
            for (int x = 0; x < na; x++)
                if (!strcmp(ta[x], tb[i])) pm = a[x].prob;
            CHECK_NEAR(b[i].prob, pm + odds * pp, 1e-6, 1e-6);
            added++;
        }
        CHECK(added >= 1);
    }
    CHECKF(kept >= 4, "%d", kept);
    laya_model_free(plain);
    laya_model_free(wp);
    free(params);
}

TEST(prior_embed_refuses_what_is_not_a_prior_and_models_refuse_strangers) {
    laya_model *plain = NULL, *wp = NULL;
    float *params = NULL;
    char dir[400], a[512], b[512], c[512], err[300] = "";
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    CHECK(two_models(dir, &plain, &wp, &params));
    laya_model_free(plain);
    laya_model_free(wp);
    free(params);
    snprintf(a, sizeof a, "%s/plain.safetensors", dir);
    snprintf(b, sizeof b, "%s/table.safetensors", dir);
    snprintf(c, sizeof c, "%s/out.safetensors", dir);
    table t;
    make_table(&t);
    /* a table without the format tag; a model where the prior should be */
    CHECK(write_table(b, &t, "something-else") == LAYA_OK);
    laya_status st = prior_embed(a, b, c, err, sizeof err);
    CHECKF(st == LAYA_ERR_FORMAT && strstr(err, "laya-prior"), "%s: %s", laya_status_str(st), err);
    CHECK(prior_embed(b, a, c, err, sizeof err) == LAYA_ERR_FORMAT);
    CHECK(access(c, F_OK) != 0);
    /* a broken table is refused before anything is written */
    t.fol[0] = (uint32_t)NS + 5;
    CHECK(write_table(b, &t, "laya-prior") == LAYA_OK);
    CHECK(prior_embed(a, b, c, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "out of range"));
    CHECK(access(c, F_OK) != 0);
}
