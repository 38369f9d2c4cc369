/* test_train_learn.c - the trainer learns: on a repetitive byte-level text a
 * tiny model's loss falls well below log(V) within a few hundred AdamW steps;
 * and the checkpoint round-trips and refuses damage. */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/train.h"

static const char FIXTURE[] =
    "the quick brown fox jumps over the lazy dog. "
    "best regards, laya. see you tomorrow at the meeting. "
    "the quick brown fox jumps over the lazy dog again and again. ";

TEST(train_loss_drops_on_repetitive_text) {
    model_cfg cfg = {.V = 270, .H = 24, .D = 8, .L = 2, .W = 5};
    int B = 4, T = 32;
    size_t np = model_n_params(&cfg), n = strlen(FIXTURE);
    float *p = malloc(np * 4), *g = malloc(np * 4), *m = calloc(np, 4), *v = calloc(np, 4);
    float *state = calloc((size_t)cfg.L * B * cfg.H, 4);
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    train_init_params(&cfg, p, 3);
    train_model tm;
    char err[256];
    CHECK(train_model_init(&tm, &cfg, B, T, 0.0f, err, sizeof err) == LAYA_OK);
    train_adamw o = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .wd = 0.01f};
    double first = 0, last = 0;
    int steps = 200;
    for (int s = 0; s < steps; s++) {
        /* Streams at different offsets of the endlessly repeated text. */
        for (int b = 0; b < B; b++)
            for (int t = 0; t <= T; t++)
                toks[b * (T + 1) + t] = (unsigned char)FIXTURE[((size_t)s * T + (size_t)b * 37 + t) % n];
        memset(g, 0, np * 4);
        double loss = train_forward(&tm, p, toks, B, state, 1, 1, (uint64_t)s);
        train_backward(&tm, p, g);
        train_clip_grads(g, np, 1.0f);
        train_adamw_step(&cfg, &o, train_lr_schedule(o.lr, s, 20, (double)(s - 20) / (steps - 20)), s + 1, p, g, m, v);
        if (s == 0) first = loss;
        last = loss;
    }
    fprintf(stderr, "    loss %.3f -> %.3f (log V = %.3f)\n", first, last, log(270.0));
    CHECK(fabs(first - log(270.0)) < 0.5);
    CHECK(last < 0.25 * log(270.0));
    train_model_free(&tm);
}

TEST(train_checkpoint_roundtrip_and_damage) {
    model_cfg cfg = {.V = 270, .H = 8, .D = 4, .L = 2, .W = 3};
    int B = 2, T = 4;
    size_t np = model_n_params(&cfg), ns = (size_t)cfg.L * B * cfg.H;
    float *a[4], *b[4];
    size_t sz[4] = {np, np, np, ns};
    for (int i = 0; i < 4; i++) {
        a[i] = malloc(sz[i] * 4);
        b[i] = malloc(sz[i] * 4);
        for (size_t j = 0; j < sz[i]; j++) a[i][j] = (float)(i * 1000 + j) * 0.001f;
    }
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/last.ckpt", test_tmpdir());
    train_ckpt_meta meta = {.step = 17, .tokens = 17 * 8, .seed = 5, .elapsed = 3.5, .best_valid = 2.25}, got;
    CHECK(train_ckpt_save(path, &cfg, B, T, 1, &meta, a[0], a[1], a[2], a[3], err, sizeof err) == LAYA_OK);
    CHECK(train_ckpt_load(path, &cfg, B, T, 1, &got, b[0], b[1], b[2], b[3], err, sizeof err) == LAYA_OK);
    CHECK(got.step == 17 && got.tokens == 136 && got.seed == 5 && got.elapsed == 3.5 && got.best_valid == 2.25);
    for (int i = 0; i < 4; i++) CHECK(memcmp(a[i], b[i], sz[i] * 4) == 0);
    /* Another shape is refused with a message naming both. */
    model_cfg other = cfg;
    other.H = 16;
    CHECK(train_ckpt_load(path, &other, B, T, 1, &got, b[0], b[1], b[2], b[3], err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "H=8") && strstr(err, "H=16"));
    /* One flipped byte: sha256 mismatch. */
    FILE *f = fopen(path, "r+b");
    CHECK(f);
    fseek(f, 300, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 300, SEEK_SET);
    fputc(c ^ 1, f);
    fclose(f);
    CHECK(train_ckpt_load(path, &cfg, B, T, 1, &got, b[0], b[1], b[2], b[3], err, sizeof err) == LAYA_ERR_SIGNATURE);
    /* Truncated. */
    CHECK(truncate(path, 500) == 0);
    CHECK(train_ckpt_load(path, &cfg, B, T, 1, &got, b[0], b[1], b[2], b[3], err, sizeof err) == LAYA_ERR_FORMAT);
    CHECK(strstr(err, "truncated"));
}
