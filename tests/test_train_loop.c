/* test_train_loop.c - train_run end to end on a small corpus: the files it
 * writes, the best model loads, bad input is refused, and a run stopped
 * halfway and resumed from last.ckpt ends bit-identical to one that ran
 * straight through. */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "laya.h"
#include "model/model.h"
#include "model/model_sign.h"
#include "tok/tok.h"
#include "tok/tok_stream.h"
#include "train/train.h"

static void write_stream(const tok *t, const char *text_path, const char *out) {
    FILE *f = fopen(text_path, "rb");
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    int32_t *ids = malloc(sizeof(int32_t) * (n + 1));
    ids[0] = TOK_BOS;
    size_t k = 1 + tok_encode(t, buf, n, ids + 1, n);
    uint8_t hdr[TOK_STREAM_HEADER], sha[32];
    tok_sha256(t, sha);
    tok_stream_header(hdr, tok_vocab_size(t), k, sha);
    f = fopen(out, "wb");
    fwrite(hdr, 1, sizeof hdr, f);
    for (size_t i = 0; i < k; i++) {
        uint16_t v = (uint16_t)ids[i];
        fwrite(&v, 2, 1, f);
    }
    fclose(f);
    free(ids);
}

typedef struct {
    char dir[256], tokp[320], trainp[320], validp[320];
} corpus;

static int make_corpus(corpus *c) {
    snprintf(c->dir, sizeof c->dir, "%s", test_tmpdir());
    char txt[320];
    snprintf(txt, sizeof txt, "%s/text.txt", c->dir);
    FILE *f = fopen(txt, "w");
    for (int i = 0; i < 120; i++)
        fprintf(f, "Best regards, Laya %d. The quick brown fox jumps over the lazy dog. 订个外卖 订个酒店\n", i);
    fclose(f);
    const char *paths[1] = {txt};
    tok *t = NULL;
    char err[256];
    if (tok_train(paths, 1, 300, NULL, NULL, &t, err, sizeof err) != LAYA_OK) return 0;
    snprintf(c->tokp, sizeof c->tokp, "%s/t.tok", c->dir);
    snprintf(c->trainp, sizeof c->trainp, "%s/train.tokens", c->dir);
    snprintf(c->validp, sizeof c->validp, "%s/valid.tokens", c->dir);
    if (tok_save_file(t, c->tokp, err, sizeof err) != LAYA_OK) return 0;
    write_stream(t, txt, c->trainp);
    write_stream(t, txt, c->validp);
    tok_free(t);
    return 1;
}

static void opts(train_opts *o, const corpus *c, const char *out) {
    train_opts_default(o);
    o->train_path = c->trainp;
    o->valid_paths[0] = c->validp;
    o->n_valid = 1;
    o->tok_path = c->tokp;
    o->out_dir = out;
    o->cfg.H = 16;
    o->cfg.D = 8;
    o->cfg.L = 2;
    o->B = 4;
    o->T = 16;
    o->steps = 30;
    o->warmup = 5;
    o->eval_every = 10;
    o->eval_tokens = 512;
    o->lr = 5e-3f;
}

static void stop_at_10(void *ctx, const train_progress *p) {
    if (p->step >= 10) *(volatile int *)ctx = 1;
}

TEST(train_run_resume_is_exact) {
    corpus c;
    CHECK(make_corpus(&c));
    char a[400], b[400], err[512] = "";
    snprintf(a, sizeof a, "%s/a", c.dir);
    snprintf(b, sizeof b, "%s/b", c.dir);
    train_opts o;
    opts(&o, &c, a);
    CHECKF(train_run(&o, NULL, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    volatile int stop = 0;
    opts(&o, &c, b);
    CHECKF(train_run(&o, stop_at_10, (void *)&stop, &stop, err, sizeof err) == LAYA_OK, "%s", err);
    o.resume = 1;
    CHECKF(train_run(&o, NULL, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);

    model_cfg cfg = o.cfg;
    cfg.V = 300;
    size_t np = model_n_params(&cfg), ns = (size_t)cfg.L * o.B * cfg.H;
    float *x[4], *y[4];
    size_t sz[4] = {np, np, np, ns};
    for (int i = 0; i < 4; i++) {
        x[i] = malloc(sz[i] * 4);
        y[i] = malloc(sz[i] * 4);
    }
    train_ckpt_meta ma, mb;
    char pa[420], pb[420];
    snprintf(pa, sizeof pa, "%s/last.ckpt", a);
    snprintf(pb, sizeof pb, "%s/last.ckpt", b);
    CHECKF(train_ckpt_load(pa, &cfg, o.B, o.T, 1, &ma, x[0], x[1], x[2], x[3], err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(train_ckpt_load(pb, &cfg, o.B, o.T, 1, &mb, y[0], y[1], y[2], y[3], err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(ma.step == 30 && mb.step == 30 && ma.tokens == mb.tokens);
    for (int i = 0; i < 4; i++) CHECKF(memcmp(x[i], y[i], sz[i] * 4) == 0, "section %d differs after resume", i);

    /* The log has a header and one row per evaluation, the best model loads. */
    char lp[420], line[512];
    snprintf(lp, sizeof lp, "%s/log.csv", a);
    FILE *f = fopen(lp, "r");
    CHECK(f);
    int rows = 0;
    while (fgets(line, sizeof line, f)) rows++;
    fclose(f);
    CHECK(rows == 4);
    snprintf(lp, sizeof lp, "%s/best.safetensors", a);
    model *m = NULL;
    CHECKF(model_load_opts(lp, &(model_trust){.allow_unsigned = 1}, &m, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(m->cfg.H == 16 && m->cfg.V == 300);
    model_free(m);
}

TEST(train_run_refuses_bad_input) {
    corpus c;
    CHECK(make_corpus(&c));
    char out[400], err[512] = "";
    snprintf(out, sizeof out, "%s/o", c.dir);
    train_opts o;
    opts(&o, &c, out);
    o.train_path = c.tokp; /* a tokenizer is not a token stream */
    CHECK(train_run(&o, NULL, NULL, NULL, err, sizeof err) != LAYA_OK);
    CHECK(*err);
    opts(&o, &c, out);
    o.B = 4000; /* more streams than the file can feed */
    o.T = 64;
    CHECK(train_run(&o, NULL, NULL, NULL, err, sizeof err) == LAYA_ERR_FORMAT);
    CHECK(strstr(err, "too few"));
    opts(&o, &c, out);
    o.resume = 1; /* nothing to resume */
    CHECK(train_run(&o, NULL, NULL, NULL, err, sizeof err) == LAYA_ERR_IO);
    opts(&o, &c, out);
    o.time_budget = 10; /* both --steps and a budget */
    CHECK(train_run(&o, NULL, NULL, NULL, err, sizeof err) == LAYA_ERR_ARG);
}

static void keep_bpb(void *ctx, const train_progress *p) {
    if (p->n_valid > 0) *(double *)ctx = p->valid_bpb[0];
}

/* The trainer's validation figure is the one runs are chosen by, so it must
 * read a file as the engine does: with the context carried from the start.
 * Split into as many rows as the batch is wide, a short file was read as
 * rows of one window each, every row from a cold state, and scored several
 * percent worse than the engine scores it (a 64 KB genre split: 1.605 vs
 * 1.560 bits per byte; here 2.975 vs 2.921, now 2.9215). The shipped
 * model, one step at a learning rate of 1e-9, on the first 6 KB of
 * docs/DESIGN.md as of 2026-12-07, pinned in tests/fixtures/design_head.txt:
 * the trainer's figure leaves out each row's first token and its last
 * partial window and starts its few rows cold, so it moves with the text
 * (DESIGN.md's Layers section moved it 0.6% off the engine's). */
TEST(train_validation_reads_a_file_as_the_engine_does) {
    char dir[256], txt[320], validp[320], err[512] = "";
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(txt, sizeof txt, "%s/design.txt", dir);
    snprintf(validp, sizeof validp, "%s/valid.tokens", dir);
    static char text[6001];
    FILE *f = fopen(test_fixture("design_head.txt"), "rb");
    CHECK(f);
    size_t n = fread(text, 1, 6000, f);
    fclose(f);
    while (n > 0 && text[n - 1] != '\n') n--;
    CHECK(n > 4000);
    f = fopen(txt, "wb");
    CHECK(f && fwrite(text, 1, n, f) == n);
    fclose(f);
    tok *t = NULL;
    CHECKF(tok_load_file("models/tokenizer.tok", &t, err, sizeof err) == LAYA_OK, "%s", err);
    write_stream(t, txt, validp);
    tok_free(t);

    train_opts o;
    train_opts_default(&o);
    o.train_path = validp;
    o.valid_paths[0] = validp;
    o.n_valid = 1;
    o.tok_path = "models/tokenizer.tok";
    o.init_path = "models/default.safetensors";
    snprintf(txt, sizeof txt, "%s/run", dir);
    o.out_dir = txt;
    o.cfg.H = 384;
    o.cfg.D = 64;
    o.cfg.L = 3;
    o.cfg.W = 5;
    o.B = 32;
    o.T = 32;
    o.steps = 1;
    o.warmup = 1;
    o.eval_every = 1;
    o.eval_tokens = 0;
    o.lr = 1e-9f;
    o.dropout = 0;
    double trainer = 0;
    CHECKF(train_run(&o, keep_bpb, &trainer, NULL, err, sizeof err) == LAYA_OK, "%s", err);

    laya_model *m = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &m, err, sizeof err) == LAYA_OK, "%s", err);
    double bits = 0;
    CHECK(laya_score(m, text, n, &bits) == LAYA_OK);
    laya_model_free(m);
    double engine = bits / (double)n;
    CHECKF(trainer > 0 && fabs(trainer / engine - 1) < 0.005, "trainer %.4f vs engine %.4f bits/byte", trainer,
           engine);
}
