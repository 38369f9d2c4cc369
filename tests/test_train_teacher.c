/* test_train_teacher.c - the teacher's soft targets (train_teacher.c)
 * against a plain reference over the shipped model's prior and tokenizer,
 * and the batch layout train_teacher_batch gives the trainers. */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "train/train.h"
#include "util/utf8.h"

/* The reference: at stream index i, the text decoded since the last
 * special token; when token i starts a word (the file's cases A-C), the
 * prior's followers of that text (plus a blank in case A), each mapped to
 * the first token of its encoding (with a leading blank in case A), their
 * probabilities summed per token, the TRAIN_SOFT_K largest times weight. */
static int ref_targets(const model *m, const uint16_t *ids, uint64_t i, float weight, int32_t *tok_out,
                       float *w_out) {
    uint8_t text[4096];
    size_t len = 0, n = 0;
    uint64_t from = i;
    while (from > 0) {
        tok_bytes(m->tok, ids[from - 1], &n);
        if (n == 0) break;
        from--;
    }
    for (uint64_t j = from; j < i; j++) {
        const uint8_t *b = tok_bytes(m->tok, ids[j], &n);
        if (len + n + 1 >= sizeof text) return -1;  /* the test's texts are short */
        memcpy(text + len, b, n);
        len += n;
    }
    const uint8_t *b = tok_bytes(m->tok, ids[i], &n);
    int space = n >= 2 && b[0] == ' ' && ((b[1] | 32) >= 'a' && (b[1] | 32) <= 'z');
    int line = !space && ((b[0] | 32) >= 'a' && (b[0] | 32) <= 'z') && (len == 0 || text[len - 1] == '\n');
    int32_t cp = utf8_cp_at(b, n, 0);
    int han = cp >= 0x4E00 && cp <= 0x9FFF;
    if (!space && !line && !han) return 0;
    if (space) text[len++] = ' ';
    prior_cand c[PRIOR_MAX_CAND];
    int nc = prior_query(&m->prior, text, len, c, PRIOR_MAX_CAND);
    int32_t ids_f[PRIOR_MAX_CAND];
    double p[PRIOR_MAX_CAND];
    int k = 0;
    for (int f = 0; f < nc; f++) {
        uint8_t w[PRIOR_MAX_WORD + 1];
        int32_t enc[PRIOR_MAX_WORD + 1];
        size_t wl = 0;
        if (space) w[wl++] = ' ';
        memcpy(w + wl, c[f].text, (size_t)c[f].len);
        wl += (size_t)c[f].len;
        size_t ne = tok_encode(m->tok, w, wl, enc, PRIOR_MAX_WORD + 1);
        if (!ne || (enc[0] >= TOK_BOS && enc[0] < TOK_FIRST_MERGE)) continue;
        int j = 0;
        while (j < k && ids_f[j] != enc[0]) j++;
        if (j == k) ids_f[k] = enc[0], p[k++] = 0;
        p[j] += c[f].p;
    }
    int out = 0;
    for (; out < k && out < TRAIN_SOFT_K; out++) {
        int best = -1;
        for (int j = 0; j < k; j++)
            if (p[j] >= 0 && (best < 0 || p[j] > p[best])) best = j;
        tok_out[out] = ids_f[best];
        w_out[out] = (float)(weight * p[best]);
        p[best] = -1;
    }
    return out;
}

static const char TEXT[] =
    "Thank you for your help. It was nice to meet you.\n"
    "Can you send the report?\n"
    "谢谢你的帮助。我们明天见。\n"
    "Hi Anna, the weather is good today and I will see you in the morning.";

TEST(train_teacher_matches_reference_on_the_shipped_prior) {
    model *m = NULL;
    char err[256];
    CHECKF(model_load("models/default.safetensors", &m, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(m->prior.nw > 0);
    int32_t enc[512];
    size_t ne = tok_encode(m->tok, (const uint8_t *)TEXT, strlen(TEXT), enc + 1, 511);
    enc[0] = TOK_BOS;
    uint16_t ids[512];
    for (size_t i = 0; i <= ne; i++) ids[i] = (uint16_t)enc[i];
    tok_stream s = {.ids = ids, .n = ne + 1, .vocab_size = tok_vocab_size(m->tok)};
    train_teacher t;
    CHECKF(train_teacher_build(&t, &s, m->tok, &m->prior, 0.4f, 0, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(t.n == s.n && t.off[0] == 0);
    uint64_t with = 0;
    for (uint64_t i = 0; i < s.n; i++) {
        int32_t rt[TRAIN_SOFT_K];
        float rw[TRAIN_SOFT_K];
        int k = i == 0 ? 0 : ref_targets(m, ids, i, 0.4f, rt, rw);
        CHECK(k >= 0);
        int got = (int)(t.off[i + 1] - t.off[i]);
        CHECKF(got == k, "position %llu: %d soft targets, the reference %d", (unsigned long long)i, got, k);
        if (got != k) break;
        float sum = 0;
        for (int j = 0; j < k; j++) {
            uint32_t at = t.off[i] + (uint32_t)j;
            CHECKF(t.tok[at] == rt[j] && t.w[at] == rw[j], "position %llu slot %d: %d %g, the reference %d %g",
                   (unsigned long long)i, j, t.tok[at], t.w[at], rt[j], rw[j]);
            CHECK(j == 0 || t.w[at] <= t.w[at - 1]);
            sum += t.w[at];
        }
        CHECK(sum <= 0.4f + 1e-6f);
        with += k > 0;
    }
    CHECK(with == t.positions);
    /* the text has word starts the English and the Chinese halves know */
    CHECKF(t.positions >= 10, "%llu positions", (unsigned long long)t.positions);
    int32_t you[4];
    CHECK(tok_encode(m->tok, (const uint8_t *)" you", 4, you, 4) == 1);
    /* after "Thank", " you" is among the targets of the position of " you" */
    int found = 0;
    for (uint64_t i = 1; i + 1 < s.n && !found; i++)
        if (ids[i] == you[0])
            for (uint32_t j = t.off[i]; j < t.off[i + 1]; j++) found |= t.tok[j] == you[0];
    CHECK(found);

    /* The batch layout: row b, window w, time t is the target at index
     * b*shard + w*T + t + 1, as train_batch reads it. */
    int B = 2, T = 5;
    int32_t st[2 * 5 * TRAIN_SOFT_K];
    float sw[2 * 5 * TRAIN_SOFT_K];
    int32_t toks[2 * 6];
    int64_t shard = (int64_t)(s.n / 2);
    for (int64_t w = 0; w < 3; w++) {
        train_batch(&s, B, T, w, toks);
        train_teacher_batch(&t, &s, B, T, w, st, sw);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < T; i++) {
                uint64_t pos = (uint64_t)(b * shard + w * T + i + 1);
                CHECK(toks[b * (T + 1) + i + 1] == ids[pos]);
                const int32_t *rs = st + (b * T + i) * TRAIN_SOFT_K;
                const float *rw = sw + (b * T + i) * TRAIN_SOFT_K;
                uint32_t k = t.off[pos + 1] - t.off[pos];
                for (uint32_t j = 0; j < TRAIN_SOFT_K; j++) {
                    if (j < k) CHECK(rs[j] == t.tok[t.off[pos] + j] && rw[j] == t.w[t.off[pos] + j]);
                    else CHECK(rs[j] == -1 && rw[j] == 0);
                }
            }
    }
    train_teacher_free(&t);
    /* bad weights and a prior-less file are refused */
    CHECK(train_teacher_build(&t, &s, m->tok, &m->prior, 0.0f, 0, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(train_teacher_build(&t, &s, m->tok, &m->prior, 1.5f, 0, err, sizeof err) == LAYA_ERR_ARG);
    prior none = {0};
    CHECK(train_teacher_build(&t, &s, m->tok, &none, 0.3f, 0, err, sizeof err) == LAYA_ERR_ARG);
    model_free(m);
}
