/* test_model_step.c - the stateful step against an independent, plain
 * double-precision sequence forward written here from the math in model.h
 * (GRU over the whole sequence, attention over stored keys and values: no
 * ring buffer, no kernels), on every kernel table this CPU can run; the
 * state's constant size; state copies.
 *
 * Shape letters: V vocab, H hidden, D attention width, L layers, W window,
 * G = 3H, T time. */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include "kern/kern.h"
#include "model/model.h"
#include "model/model_sign.h"
#include "tok/tok_impl.h"

enum { T = 20 };
static const model_cfg tiny = {.V = 300, .H = 16, .D = 8, .L = 2, .W = 3};

static uint64_t rng = 0x243F6A8885A308D3ull;
static double urand(void) {  /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-52 - 1.0;
}

/* Random parameters at a scale that keeps the gates away from saturation. */
static float *random_params(const model_cfg *c) {
    size_t n = model_n_params(c);
    float *p = malloc(n * sizeof *p);
    model_tensor t[2 + 8 * MODEL_MAX_L];
    int nt = model_tensors(c, t, 2 + 8 * MODEL_MAX_L);
    for (int i = 0; i < nt; i++) {
        size_t cnt = (size_t)t[i].shape[0] * (size_t)(t[i].ndim == 2 ? t[i].shape[1] : 1);
        double scale = t[i].ndim == 2 ? 1.5 / sqrt((double)t[i].shape[1]) : 0.3;
        if (i == 0) scale = 1.0;  /* emb */
        for (size_t e = 0; e < cnt; e++) p[t[i].offset + e] = (float)(scale * urand());
        if (i == nt - 1)  /* norm around 1 */
            for (size_t e = 0; e < cnt; e++) p[t[i].offset + e] += 1.0f;
    }
    return p;
}

static double sig(double a) { return 1.0 / (1.0 + exp(-a)); }

/* y (T, H): the normalized output at every position, in double. */
static void reference_forward(const model_cfg *c, float *params, const int32_t *ids, double *y) {
    const int H = c->H, D = c->D, W = c->W;
    model_params p;
    model_params_point(c, params, &p);
    double *x = malloc(sizeof(double) * T * H), *hs = malloc(sizeof(double) * T * H);
    double *ks = malloc(sizeof(double) * T * D), *vs = malloc(sizeof(double) * T * D);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < H; i++) x[t * H + i] = p.emb[(size_t)ids[t] * H + i];
    for (int l = 0; l < c->L; l++) {
        const model_layer_params *lp = &p.layer[l];
        for (int t = 0; t < T; t++) {  /* GRU over the sequence */
            const double *xt = x + t * H, *hp = t ? hs + (t - 1) * H : NULL;
            for (int i = 0; i < H; i++) {
                double g[3][2];  /* gate, (input part, hidden part) with biases */
                for (int k = 0; k < 3; k++) {
                    int row = k * H + i;
                    double a = lp->b_ih[row], b = lp->b_hh[row];
                    for (int j = 0; j < H; j++) {
                        a += (double)lp->w_ih[(size_t)row * H + j] * xt[j];
                        if (hp) b += (double)lp->w_hh[(size_t)row * H + j] * hp[j];
                    }
                    g[k][0] = a;
                    g[k][1] = b;
                }
                double r = sig(g[0][0] + g[0][1]), z = sig(g[1][0] + g[1][1]);
                double n = tanh(g[2][0] + r * g[2][1]);
                hs[t * H + i] = (1 - z) * n + z * (hp ? hp[i] : 0.0);
            }
        }
        for (int t = 0; t < T; t++)
            for (int e = 0; e < D; e++) {
                double k = 0, v = 0;
                for (int j = 0; j < H; j++) {
                    k += (double)lp->wk[(size_t)e * H + j] * hs[t * H + j];
                    v += (double)lp->wv[(size_t)e * H + j] * hs[t * H + j];
                }
                ks[t * D + e] = k;
                vs[t * D + e] = v;
            }
        for (int t = 0; t < T; t++) {  /* attention over positions t-W+1..t */
            double q[64], ctx[64] = {0}, sc[32], mx = -1e300, sum = 0;
            int t0 = t - W + 1 < 0 ? 0 : t - W + 1;
            for (int e = 0; e < D; e++) {
                q[e] = 0;
                for (int j = 0; j < H; j++) q[e] += (double)lp->wq[(size_t)e * H + j] * hs[t * H + j];
            }
            for (int s = t0; s <= t; s++) {
                double d = 0;
                for (int e = 0; e < D; e++) d += q[e] * ks[s * D + e];
                sc[s - t0] = d / sqrt((double)D);
                if (sc[s - t0] > mx) mx = sc[s - t0];
            }
            for (int s = t0; s <= t; s++) sum += sc[s - t0] = exp(sc[s - t0] - mx);
            for (int s = t0; s <= t; s++)
                for (int e = 0; e < D; e++) ctx[e] += sc[s - t0] / sum * vs[s * D + e];
            for (int i = 0; i < H; i++) {
                double o = 0;
                for (int e = 0; e < D; e++) o += (double)lp->wo[(size_t)i * D + e] * ctx[e];
                x[t * H + i] = hs[t * H + i] + o;
            }
        }
    }
    for (int t = 0; t < T; t++) {
        double ss = 0;
        for (int i = 0; i < H; i++) ss += x[t * H + i] * x[t * H + i];
        double inv = 1.0 / sqrt(ss / H + 1e-5);
        for (int i = 0; i < H; i++) y[t * H + i] = x[t * H + i] * inv * p.norm[i];
    }
    free(x);
    free(hs);
    free(ks);
    free(vs);
}

static void check_against_reference(const char *isa) {
    if (!kern_by_name(isa)) SKIP("this CPU lacks the instruction set");
    if (getenv("LAYA_TEST_NOFORK")) SKIP("kern_get decides once per process");
    setenv("LAYA_KERN", isa, 1);
    CHECK(strcmp(kern_get()->name, isa) == 0);
    const model_cfg *c = &tiny;
    float *params = random_params(c);
    int32_t seq[T];
    for (int t = 0; t < T; t++) seq[t] = (int32_t)((urand() + 1.0) * 150.0) % c->V;
    seq[0] = 256;  /* BOS */
    double *want = malloc(sizeof(double) * T * c->H);
    reference_forward(c, params, seq, want);

    model *m;
    CHECK(model_from_params(c, params, NULL, &m) == LAYA_OK);
    float *st = malloc(model_state_floats(c) * sizeof *st);
    float *scratch = malloc(model_scratch_floats(c) * sizeof *scratch);
    float y[64], logits[300];
    model_state s;
    model_state_init(c, &s, st);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        model_step(m, &s, seq[t], scratch, y);
        CHECK(s.n == t + 1);
        for (int i = 0; i < c->H; i++) {
            double w = want[t * c->H + i], err = fabs(y[i] - w);
            if (err > worst) worst = err;
            CHECK_NEAR(y[i], w, 1e-5, 1e-5);
        }
        /* logits = emb y, against the same product in double */
        model_logits(m, y, logits);
        for (int v = 0; v < c->V; v += 7) {
            double d = 0, S = 0;
            for (int i = 0; i < c->H; i++) {
                d += (double)params[(size_t)v * c->H + i] * y[i];
                S += fabs((double)params[(size_t)v * c->H + i] * y[i]);
            }
            CHECK_NEAR(logits[v], d, 1e-6 * S, 0);
        }
        int32_t ids[5] = {0, 299, 7, 256, 7};
        float li[5];
        model_logits_ids(m, y, ids, 5, li);
        for (int k = 0; k < 5; k++) CHECK_NEAR(li[k], logits[ids[k]], 1e-6, 1e-6);
    }
    printf("    %s: max |y - reference| over %d steps: %.2g\n", isa, T, worst);
    model_free(m);
    free(params);
    free(want);
    free(st);
    free(scratch);
}

TEST(model_step_matches_reference_ref) { check_against_reference("ref"); }
TEST(model_step_matches_reference_avx2) { check_against_reference("avx2"); }
TEST(model_step_matches_reference_avx512) { check_against_reference("avx512"); }

/* Constant memory: 2000 tokens touch nothing outside the state block and
 * the scratch (guard floats after both stay intact), and the state's size is
 * the same function of the config whatever n is. */
TEST(model_step_constant_state) {
    const model_cfg *c = &tiny;
    float *params = random_params(c);
    model *m;
    CHECK(model_from_params(c, params, NULL, &m) == LAYA_OK);
    size_t ns = model_state_floats(c), nsc = model_scratch_floats(c);
    CHECK(ns == (size_t)c->L * (c->H + 2 * c->W * c->D));
    enum { GUARD = 64 };
    float *st = malloc((ns + GUARD) * sizeof *st), *sc = malloc((nsc + GUARD) * sizeof *sc);
    for (int i = 0; i < GUARD; i++) st[ns + i] = sc[nsc + i] = 12345.0f;
    model_state s;
    model_state_init(c, &s, st);
    float y[64];
    for (int t = 0; t < 2000; t++) {
        model_step(m, &s, (int32_t)(t * 37 % c->V), sc, y);
        CHECK(s.h == st);
    }
    CHECK(s.n == 2000);
    for (int i = 0; i < GUARD; i++) CHECK(st[ns + i] == 12345.0f && sc[nsc + i] == 12345.0f);
    for (int i = 0; i < c->H; i++) CHECK(isfinite(y[i]));
    model_free(m);
    free(params);
    free(st);
    free(sc);
}

/* A copied state continues exactly as the original (bit for bit), and is
 * independent of it afterwards. */
TEST(model_step_state_copy) {
    const model_cfg *c = &tiny;
    float *params = random_params(c);
    model *m;
    CHECK(model_from_params(c, params, NULL, &m) == LAYA_OK);
    size_t ns = model_state_floats(c);
    float *a = malloc(ns * sizeof *a), *b = malloc(ns * sizeof *b);
    float *sc = malloc(model_scratch_floats(c) * sizeof *sc), ya[64], yb[64];
    model_state sa, sb;
    model_state_init(c, &sa, a);
    model_state_init(c, &sb, b);
    for (int t = 0; t < 11; t++) model_step(m, &sa, (int32_t)(t * 13 % c->V), sc, ya);
    model_state_copy(c, &sb, &sa);
    CHECK(sb.n == 11 && sb.h == b);
    for (int t = 0; t < 9; t++) {
        model_step(m, &sa, (int32_t)(t * 5 % c->V), sc, ya);
        model_step(m, &sb, (int32_t)(t * 5 % c->V), sc, yb);
        CHECK(memcmp(ya, yb, sizeof(float) * c->H) == 0);
    }
    CHECK(memcmp(a, b, ns * sizeof *a) == 0);
    model_step(m, &sb, 1, sc, yb);  /* diverge: a must not change */
    CHECK(memcmp(a, b, ns * sizeof *a) != 0 && sa.n == 20 && sb.n == 21);
    model_free(m);
    free(params);
    free(a);
    free(b);
    free(sc);
}

TEST(model_from_params_refuses_bad_config) {
    model_cfg c = tiny;
    float x = 0;
    model *m = (model *)&x;
    c.W = MODEL_MAX_W + 1;
    CHECK(model_from_params(&c, &x, NULL, &m) == LAYA_ERR_ARG && m == NULL);
    c = tiny;
    c.V = 10;
    CHECK(model_from_params(&c, &x, NULL, &m) == LAYA_ERR_ARG);
    CHECK(model_from_params(&tiny, NULL, NULL, &m) == LAYA_ERR_ARG);
}

/* Batched beams: model_step_batch over n states at different positions
 * against n model_step calls, and model_logits_batch against model_logits
 * row by row, on every kernel table and on f32, f16, q8 and q4 weights (the
 * batch goes through matmat, the single step through matvec). Bit for bit
 * on the ref table and for q8/q4 on every table (the panel form does the
 * same float operations per group either way: the shipped model is q8).
 * f32/f16 rows on AVX2/AVX-512 differ in summation order (matvec takes 4
 * rows at a time, matmat 4 vectors, and a lone vector one row at a time),
 * n = 1 included: measured within 5e-7 on y and 3e-6 on logits at H = 64. */
enum { FMT_F32, FMT_Q8, FMT_Q4, FMT_F16, N_FMT };
#define BATCH_ORDER_TOL 1e-5        /* y and state, f32/f16 on vector tables */
#define BATCH_ORDER_LOGIT_TOL 1e-4  /* logits: sums over H of y's differences */
static uint8_t *letter_pair_tokenizer(int32_t V, size_t *n) {
    int M = V - TOK_FIRST_MERGE;
    uint16_t (*merge)[2] = malloc(sizeof *merge * (size_t)M);
    for (int i = 0; i < M; i++) {
        merge[i][0] = (uint16_t)('a' + i % 26);
        merge[i][1] = (uint16_t)('a' + (i / 26) % 26);
    }
    tok *t;
    uint8_t *blob = NULL;
    if (tok_build(V, (const uint16_t (*)[2])merge, &t, NULL, 0) == LAYA_OK) {
        tok_save(t, &blob, n);
        tok_free(t);
    }
    free(merge);
    return blob;
}

static void check_batch(const char *isa) {
    if (!kern_by_name(isa)) SKIP("this CPU lacks the instruction set");
    if (getenv("LAYA_TEST_NOFORK")) SKIP("kern_get decides once per process");
    setenv("LAYA_KERN", isa, 1);
    model_cfg c = tiny;
    c.H = 64;  /* a multiple of the q groups */
    c.D = 32;
    float *params = random_params(&c);
    enum { NB = 8 };
    size_t ns = model_state_floats(&c);
    float *mem = malloc(2 * NB * ns * sizeof *mem);
    float *sc1 = malloc(model_scratch_floats(&c) * sizeof *sc1);
    float *scb = malloc(model_batch_scratch_floats(&c, NB) * sizeof *scb);
    float *yb = malloc((size_t)NB * c.H * sizeof *yb), y1[64];
    float *lb = malloc((size_t)NB * c.V * sizeof *lb), l1[300];
    for (int fmt = 0; fmt < N_FMT; fmt++) {
        model *m = NULL;
        int exact = !strcmp(isa, "ref") || fmt == FMT_Q8 || fmt == FMT_Q4;
        if (fmt == FMT_F32) {
            CHECK(model_from_params(&c, params, NULL, &m) == LAYA_OK);
        } else {
            char path[512], err[256];
            size_t tn = 0;
            uint8_t *tb = letter_pair_tokenizer(c.V, &tn);
            CHECK(tb != NULL);
            snprintf(path, sizeof path, "%s/b%d.safetensors", test_tmpdir(), fmt);
            laya_status st = fmt == FMT_F16
                                 ? model_save(path, &c, params, QT_F16, tb, tn, NULL, err, sizeof err)
                                 : model_save_quant(path, &c, params, fmt == FMT_Q8 ? QT_Q8 : QT_Q4, 32, tb, tn,
                                                    NULL, err, sizeof err);
            free(tb);
            CHECKF(st == LAYA_OK, "%s", err);
            CHECKF(model_load_opts(path, &(model_trust){.allow_unsigned = 1}, &m, err, sizeof err) == LAYA_OK, "%s", err);
        }
        for (int n = 1; n <= NB; n++) {
            model_state a[NB], b[NB], *pb[NB];
            float *py[NB];
            int32_t tk[NB];
            for (int i = 0; i < n; i++) {
                model_state_init(&c, &a[i], mem + (size_t)i * ns);
                model_state_init(&c, &b[i], mem + (size_t)(NB + i) * ns);
                for (int t = 0; t < i * 2 + n % 3; t++) model_step(m, &a[i], (int32_t)((t * 31 + i) % c.V), sc1, y1);
                model_state_copy(&c, &b[i], &a[i]);
                pb[i] = &b[i];
                py[i] = yb + (size_t)i * c.H;
                tk[i] = (int32_t)((i * 97 + n) % c.V);
            }
            for (int rep = 0; rep < 3; rep++) {
                model_step_batch(m, pb, tk, n, scb, py);
                model_logits_batch(m, yb, n, lb);
                for (int i = 0; i < n; i++) {
                    model_step(m, &a[i], tk[i], sc1, y1);
                    CHECK(a[i].n == b[i].n);
                    model_logits(m, y1, l1);
                    if (exact) {
                        CHECKF(!memcmp(py[i], y1, (size_t)c.H * sizeof *y1), "%s fmt %d n %d: y", isa, fmt, n);
                        CHECKF(!memcmp(b[i].h, a[i].h, ns * sizeof *a[i].h), "%s fmt %d n %d: state", isa, fmt, n);
                        CHECKF(!memcmp(lb + (size_t)i * c.V, l1, (size_t)c.V * sizeof *l1), "%s fmt %d n %d: logits",
                               isa, fmt, n);
                    } else {
                        for (int e = 0; e < c.H; e++) CHECK_NEAR(py[i][e], y1[e], BATCH_ORDER_TOL, BATCH_ORDER_TOL);
                        for (size_t e = 0; e < ns; e++)
                            CHECK_NEAR(b[i].h[e], a[i].h[e], BATCH_ORDER_TOL, BATCH_ORDER_TOL);
                        for (int v = 0; v < c.V; v++)
                            CHECK_NEAR(lb[(size_t)i * c.V + v], l1[v], BATCH_ORDER_LOGIT_TOL, BATCH_ORDER_TOL);
                    }
                    tk[i] = (tk[i] + 11) % c.V;
                }
            }
        }
        model_free(m);
    }
    free(params);
    free(mem);
    free(sc1);
    free(scb);
    free(yb);
    free(lb);
}

TEST(model_step_batch_matches_single_ref) { check_batch("ref"); }
TEST(model_step_batch_matches_single_avx2) { check_batch("avx2"); }
TEST(model_step_batch_matches_single_avx512) { check_batch("avx512"); }
