/* test_kern.c - every kernel table this CPU can run against the scalar
 * references (kern_ref.c), over awkward sizes, for f32 and f16 weights; the
 * f16 conversions against the compiler's own _Float16; and a demonstration
 * that the checker catches a deliberately broken kernel.
 *
 * Tolerance: a vector kernel sums in another order (lanes, FMA), so it may
 * differ from the reference by a few ulps of S = sum_c |w_c x_c| (the error
 * bound of any f32 summation order scales with S, not with the result). We
 * accept |got - ref| <= 1e-6 + 1e-5 * S. A wrong or missing term moves the
 * result by about S/C >= 1e-3 S for C <= 1023: two orders above the bound.
 *
 * Shape letters: R rows, C columns, N vectors. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern/kern_impl.h"

static const int sizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 255, 1023};
enum { N_SIZES = sizeof sizes / sizeof sizes[0] };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) {  /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) * 0x1p-52 - 1.0);
}

/* A random (R, C) matrix of type t; *buf receives the storage to free. */
static qmat make_mat(qtype t, int R, int C, void **buf) {
    size_t n = (size_t)R * (size_t)C;
    qmat w = {.type = t, .rows = R, .cols = C};
    if (t == QT_F32) {
        float *p = malloc(n * sizeof *p);
        for (size_t i = 0; i < n; i++) p[i] = frand();
        *buf = p;
    } else {
        uint16_t *p = malloc(n * sizeof *p);
        for (size_t i = 0; i < n; i++) p[i] = kern_f32_to_f16(frand());
        *buf = p;
    }
    w.data = *buf;
    return w;
}

/* S = sum_c |W[r][c] x[c]|, the scale of the summation error of row r. */
static double abs_sum(const qmat *w, int32_t r, const float *x) {
    float *row = malloc((size_t)w->cols * sizeof *row);
    kern_row_f32(w, r, row);
    double s = 0;
    for (int c = 0; c < w->cols; c++) s += fabs((double)row[c] * x[c]);
    free(row);
    return s;
}

static int close_enough(float got, float want, double S) {
    return fabs((double)got - (double)want) <= 1e-6 + 1e-5 * S;
}

/* Compares t's three kernels with the references on one random (R, C)
 * matrix of type ty. Returns 0 if all agree, else 1 with a reason in why. */
static int compare(const kern_table *t, qtype ty, int R, int C, char *why, size_t whylen) {
    void *buf;
    qmat w = make_mat(ty, R, C, &buf);
    enum { NMAX = 6 };
    float *x = malloc((size_t)NMAX * C * sizeof *x);
    size_t ny = (size_t)NMAX * R + 16;  /* matmat outputs, or up to 9 dot_rows */
    float *y = malloc(ny * sizeof *y), *yr = malloc(ny * sizeof *yr);
    int bad = 0;
    for (int i = 0; i < NMAX * C; i++) x[i] = frand();

    t->matvec(&w, x, y);
    kern_matvec_ref(&w, x, yr);
    for (int r = 0; r < R && !bad; r++)
        if (!close_enough(y[r], yr[r], abs_sum(&w, r, x))) {
            snprintf(why, whylen, "%s matvec type %d R=%d C=%d: y[%d]=%.9g ref %.9g",
                     t->name, ty, R, C, r, y[r], yr[r]);
            bad = 1;
        }
    static const int ns[] = {1, 3, 4, 5, NMAX};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0] && !bad; k++) {
        int n = ns[k];
        t->matmat(&w, x, n, y);
        kern_matmat_ref(&w, x, n, yr);
        for (int i = 0; i < n && !bad; i++)
            for (int r = 0; r < R && !bad; r++)
                if (!close_enough(y[i * R + r], yr[i * R + r], abs_sum(&w, r, x + i * C))) {
                    snprintf(why, whylen, "%s matmat type %d R=%d C=%d N=%d: y[%d][%d]=%.9g ref %.9g",
                             t->name, ty, R, C, n, i, r, y[i * R + r], yr[i * R + r]);
                    bad = 1;
                }
    }
    int32_t rows[9];
    for (int k = 0; k < 9; k++) rows[k] = (int32_t)((unsigned)k * 7919u % (unsigned)R);
    rows[8] = R - 1;  /* the last row, and repeats when R < 9 */
    static const int nr[] = {1, 4, 9};
    for (size_t k = 0; k < sizeof nr / sizeof nr[0] && !bad; k++) {
        t->dot_rows(&w, rows, nr[k], x, y);
        kern_dot_rows_ref(&w, rows, nr[k], x, yr);
        for (int i = 0; i < nr[k] && !bad; i++)
            if (!close_enough(y[i], yr[i], abs_sum(&w, rows[i], x))) {
                snprintf(why, whylen, "%s dot_rows type %d R=%d C=%d: y[%d] (row %d)=%.9g ref %.9g",
                         t->name, ty, R, C, i, rows[i], y[i], yr[i]);
                bad = 1;
            }
    }
    free(buf);
    free(x);
    free(y);
    free(yr);
    return bad;
}

/* Every vector table usable here, against the references. */
static void check_isa(const char *name) {
    const kern_table *t = kern_by_name(name);
    if (!t) SKIP("this CPU lacks the instruction set");
    char why[256];
    for (int ty = QT_F32; ty <= QT_F16; ty++)
        for (int i = 0; i < N_SIZES; i++)
            for (int j = 0; j < N_SIZES; j++) {
                int R = sizes[i], C = sizes[j];
                if ((long)R * C > 255 * 1023) continue;  /* keep the sweep fast */
                CHECKF(!compare(t, (qtype)ty, R, C, why, sizeof why), "%s", why);
            }
    /* the biggest sizes once each way */
    CHECKF(!compare(t, QT_F32, 1023, 1023, why, sizeof why), "%s", why);
    CHECKF(!compare(t, QT_F16, 1023, 1023, why, sizeof why), "%s", why);
}

/* Within one table, a row's value must not depend on which kernel computed
 * it: matvec (rows in fours, the rest one by one), matmat (vectors in fours,
 * the rest one by one) and dot_rows (asked rows in fours) give the same bits
 * for the same row and vector. The search computes a node's logits with
 * whichever fits (a full row, the allowed ids, a batch of nodes), and its
 * suggestions must not depend on that (tests/test_engine_suggest.c:
 * pruning is exact). Returns 0, or 1 with a reason. */
static int consistent(const kern_table *t, qtype ty, int R, int C, char *why, size_t whylen) {
    void *buf;
    qmat w = make_mat(ty, R, C, &buf);
    enum { NV = 7 };
    float *x = malloc((size_t)NV * C * sizeof *x);
    float *yv = malloc((size_t)NV * R * sizeof *yv), *ym = malloc((size_t)NV * R * sizeof *ym);
    float *yd = malloc((size_t)R * sizeof *yd);
    int32_t *rows = malloc((size_t)R * sizeof *rows);
    int bad = 0;
    for (int i = 0; i < NV * C; i++) x[i] = frand();
    for (int i = 0; i < NV; i++) t->matvec(&w, x + (size_t)i * C, yv + (size_t)i * R);
    t->matmat(&w, x, NV, ym);
    for (int r = 0; r < R; r++) rows[r] = R - 1 - r;  /* reversed: every row in another group of four */
    t->dot_rows(&w, rows, R, x, yd);
    for (int i = 0; i < NV * R && !bad; i++)
        if (memcmp(&yv[i], &ym[i], sizeof(float))) {
            snprintf(why, whylen, "%s type %d R=%d C=%d: matvec %.9g, matmat %.9g (vector %d row %d)", t->name, ty,
                     R, C, yv[i], ym[i], i / R, i % R);
            bad = 1;
        }
    for (int r = 0; r < R && !bad; r++)
        if (memcmp(&yd[r], &yv[rows[r]], sizeof(float))) {
            snprintf(why, whylen, "%s type %d R=%d C=%d: dot_rows %.9g, matvec %.9g (row %d)", t->name, ty, R, C,
                     yd[r], yv[rows[r]], rows[r]);
            bad = 1;
        }
    free(buf), free(x), free(yv), free(ym), free(yd), free(rows);
    return bad;
}

static void check_consistent(const kern_table *t) {
    char why[256];
    for (int ty = QT_F32; ty <= QT_F16; ty++)
        for (int i = 0; i < N_SIZES; i++)
            for (int j = 0; j < N_SIZES; j++) {
                int R = sizes[i], C = sizes[j];
                if ((long)R * C > 255 * 1023) continue;
                CHECKF(!consistent(t, (qtype)ty, R, C, why, sizeof why), "%s", why);
            }
}

TEST(kern_avx2_matches_ref) { check_isa("avx2"); }
TEST(kern_avx2_kernels_agree_per_row) {
    const kern_table *t = kern_by_name("avx2");
    if (!t) SKIP("this CPU lacks the instruction set");
    check_consistent(t);
}
TEST(kern_avx512_kernels_agree_per_row) {
    const kern_table *t = kern_by_name("avx512");
    if (!t) SKIP("this CPU lacks the instruction set");
    check_consistent(t);
}

/* The check above fails on a table whose dot1 sums in two chains (as the
 * AVX2 and AVX-512 dot1 did before 2026-12-04): a dot_rows that computes
 * every row alone with such a sum disagrees with matvec's groups of four. */
static float dot1_two_chains(const qmat *w, int32_t r, const float *x) {
    float *row = malloc((size_t)w->cols * sizeof *row);
    kern_row_f32(w, r, row);
    float a[2] = {0, 0};
    for (int c = 0; c < w->cols; c++) a[(c / 8) & 1] = fmaf(row[c], x[c], a[(c / 8) & 1]);
    free(row);
    return a[0] + a[1];
}
static void dot_rows_two_chains(const qmat *w, const int32_t *rows, int n, const float *x, float *y) {
    for (int i = 0; i < n; i++) y[i] = dot1_two_chains(w, rows[i], x);
}
TEST(kern_agreement_checker_catches_two_chains) {
    const kern_table *t = kern_by_name("avx2");
    if (!t) t = kern_by_name("ref");
    kern_table broken = *t;
    broken.dot_rows = dot_rows_two_chains;
    char why[256];
    CHECK(consistent(&broken, QT_F32, 17, 255, why, sizeof why) == 1);
    printf("    caught: %s\n", why);
}
TEST(kern_avx512_matches_ref) { check_isa("avx512"); }

/* The reference matvec with a deliberate off-by-one: the last column of any
 * row whose length is not a multiple of 16 is dropped, as a vector kernel
 * with a wrong tail mask would do. */
static void broken_matvec(const qmat *w, const float *x, float *y) {
    const float *p = w->data;
    int C = w->cols, end = C % 16 ? C - 1 : C;
    for (int r = 0; r < w->rows; r++) {
        float acc = 0;
        for (int c = 0; c < end; c++) acc += p[(size_t)r * C + c] * x[c];
        y[r] = acc;
    }
}

/* The checker must catch it: the same compare() reports the tail sizes as
 * mismatching and still accepts the sizes the bug does not touch. */
TEST(kern_checker_catches_broken_kernel) {
    const kern_table broken = {.name = "broken", .matvec = broken_matvec,
                               .matmat = kern_matmat_ref, .dot_rows = kern_dot_rows_ref};
    char why[256];
    static const int tails[] = {1, 7, 17, 33, 255, 1023};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        why[0] = 0;
        CHECKF(compare(&broken, QT_F32, 33, tails[i], why, sizeof why),
               "broken kernel accepted at C=%d", tails[i]);
        CHECK(strstr(why, "broken matvec") != NULL);
    }
    CHECK(!compare(&broken, QT_F32, 33, 64, why, sizeof why));
    CHECK(!compare(&broken, QT_F32, 7, 1024, why, sizeof why));
}

TEST(kern_ref_small_exact) {
    /* W = [[1,2,3],[4,5,6]], x = [1,0.5,-1]: exact in binary */
    const float wf[] = {1, 2, 3, 4, 5, 6}, x[] = {1, 0.5f, -1};
    uint16_t wh[6];
    for (int i = 0; i < 6; i++) wh[i] = kern_f32_to_f16(wf[i]);
    qmat a = {.type = QT_F32, .rows = 2, .cols = 3, .data = wf};
    qmat b = {.type = QT_F16, .rows = 2, .cols = 3, .data = wh};
    float y[2], z[2];
    kern_matvec_ref(&a, x, y);
    kern_matvec_ref(&b, x, z);
    CHECK(y[0] == -1.0f && y[1] == 0.5f);
    CHECK(z[0] == -1.0f && z[1] == 0.5f);
    int32_t rows[] = {1, 1, 0};
    float d[3];
    kern_dot_rows_ref(&b, rows, 3, x, d);
    CHECK(d[0] == 0.5f && d[1] == 0.5f && d[2] == -1.0f);
    float row[3];
    kern_row_f32(&b, 1, row);
    CHECK(row[0] == 4 && row[1] == 5 && row[2] == 6);
}

TEST(kern_f16_to_f32_exhaustive) {
    for (uint32_t h = 0; h < 65536; h++) {
        _Float16 hf;
        uint16_t hb = (uint16_t)h;
        memcpy(&hf, &hb, sizeof hf);
        float want = (float)hf, got = kern_f16_to_f32(hb);
        if (isnan(want)) {
            CHECKF(isnan(got), "h=0x%04x: got %g, want NaN", h, got);
            continue;
        }
        uint32_t gu, wu;
        memcpy(&gu, &got, 4);
        memcpy(&wu, &want, 4);
        CHECKF(gu == wu, "h=0x%04x: got %a, want %a", h, got, want);
        /* and back: every non-NaN f16 round-trips exactly */
        CHECKF(kern_f32_to_f16(got) == hb, "h=0x%04x does not round-trip", h);
    }
}

static int f32_to_f16_ok(float f) {
    _Float16 w = (_Float16)f;
    uint16_t wb, gb = kern_f32_to_f16(f);
    memcpy(&wb, &w, sizeof wb);
    if (isnan(f)) return (gb & 0x7C00) == 0x7C00 && (gb & 0x3FF) != 0;
    return gb == wb;
}

TEST(kern_f32_to_f16_rounding) {
    /* every f16 value, and the halfway points and their neighbours */
    for (uint32_t h = 0; h < 0x7C00; h++) {
        float a = kern_f16_to_f32((uint16_t)h), b = kern_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)(((double)a + (double)b) / 2);  /* exact: f16 has 11 bits */
        const float probes[] = {a, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), -mid};
        for (int i = 0; i < 5; i++)
            CHECKF(f32_to_f16_ok(probes[i]), "f=%a: got 0x%04x", probes[i], kern_f32_to_f16(probes[i]));
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.99f, 65520.0f,
                             1e10f, -1e10f, 0x1p-24f, 0x1p-25f, 0x1.000002p-25f, 0x1p-26f, 1e-45f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        CHECKF(f32_to_f16_ok(special[i]), "f=%a: got 0x%04x", special[i], kern_f32_to_f16(special[i]));
    for (int i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)(frand() * 2147483648.0f) ^ ((uint32_t)(frand() * 65536.0f) << 16);
        float f;
        memcpy(&f, &u, 4);
        CHECKF(f32_to_f16_ok(f), "f=%a (0x%08x): got 0x%04x", f, u, kern_f32_to_f16(f));
    }
}

/* Detection and the LAYA_KERN override. kern_get() decides once per
 * process; the runner forks a fresh child per test, so this is the first
 * call here (under LAYA_TEST_NOFORK it may not be, and is skipped). */
TEST(kern_dispatch_override) {
    if (getenv("LAYA_TEST_NOFORK")) SKIP("needs a fresh process");
    CHECK(kern_by_name("ref") == &kern_table_ref);
    CHECK(kern_by_name("nonsense") == NULL);
    CHECK(kern_by_name(NULL) == NULL);
    unsigned f = kern_cpu_features();
    CHECK((kern_by_name("avx2") != NULL) == ((f & KERN_CPU_AVX2) != 0));
    CHECK((kern_by_name("avx512") != NULL) == ((f & KERN_CPU_AVX512) != 0));
    setenv("LAYA_KERN", "ref", 1);
    CHECK(strcmp(kern_get()->name, "ref") == 0);
    CHECK(kern_get() == &kern_table_ref);
}

/* The override's fallback, for every combination of CPU features: a known
 * usable name wins; an unknown one, one the CPU cannot run, or none, gives
 * the best table the features allow. */
TEST(kern_dispatch_override_fallback) {
    const unsigned none = 0, avx2 = KERN_CPU_AVX2, avx512 = KERN_CPU_AVX2 | KERN_CPU_AVX512;
    static const char *const junk[] = {NULL, "", "nonsense", "AVX2", "avx2 ", "avx51"};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        CHECKF(kern_pick(none, junk[i]) == &kern_table_ref, "'%s'", junk[i] ? junk[i] : "(null)");
        CHECKF(kern_pick(avx2, junk[i]) == &kern_table_avx2, "'%s'", junk[i] ? junk[i] : "(null)");
        CHECKF(kern_pick(avx512, junk[i]) == &kern_table_avx512, "'%s'", junk[i] ? junk[i] : "(null)");
    }
    CHECK(kern_pick(none, "avx2") == &kern_table_ref);       /* unusable here */
    CHECK(kern_pick(none, "avx512") == &kern_table_ref);
    CHECK(kern_pick(avx2, "avx512") == &kern_table_avx2);
    CHECK(kern_pick(avx512, "ref") == &kern_table_ref);      /* usable: it wins */
    CHECK(kern_pick(avx512, "avx2") == &kern_table_avx2);
    CHECK(kern_pick(avx2, "ref") == &kern_table_ref);
}

/* kern_get itself with an override this process cannot honour: the best
 * table, as with none. */
TEST(kern_dispatch_override_ignores_an_unknown_name) {
    if (getenv("LAYA_TEST_NOFORK")) SKIP("needs a fresh process");
    setenv("LAYA_KERN", "no-such-table", 1);
    CHECK(kern_get() == kern_pick(kern_cpu_features(), NULL));
    CHECK(kern_get() != &kern_table_ref || !(kern_cpu_features() & KERN_CPU_AVX2));
}

/* The GRU gates of every table against the reference, over awkward H (the
 * 8-lane loop and its scalar tail) and pre-activations from -40 to 40
 * (saturated sigmoid and tanh included). The vector exp, sigmoid and tanh
 * are within 4 ulp (vmath.h), so h moves by at most a few 1e-7; 1e-6
 * absolute is the bound, while a wrong gate moves h by about 0.1. */
static void check_gates(const kern_table *t) {
    static const int hs[] = {1, 7, 8, 9, 16, 23, 384};
    for (size_t k = 0; k < sizeof hs / sizeof hs[0]; k++) {
        int H = hs[k], G = 3 * H;
        float *gi = malloc(sizeof(float) * G), *gh = malloc(sizeof(float) * G);
        float *bi = malloc(sizeof(float) * G), *bh = malloc(sizeof(float) * G);
        float *h0 = malloc(sizeof(float) * H), *h1 = malloc(sizeof(float) * H);
        float amp = k % 2 ? 20.0f : 2.0f;
        for (int i = 0; i < G; i++) {
            gi[i] = amp * frand();
            gh[i] = amp * frand();
            bi[i] = frand();
            bh[i] = frand();
        }
        for (int i = 0; i < H; i++) h0[i] = h1[i] = frand();
        kern_gru_gates_ref(H, gi, gh, bi, bh, h0);
        t->gru_gates(H, gi, gh, bi, bh, h1);
        for (int i = 0; i < H; i++)
            CHECKF(fabsf(h0[i] - h1[i]) <= 1e-6f, "%s H=%d unit %d: %.9g vs ref %.9g", t->name, H, i,
                   (double)h1[i], (double)h0[i]);
        free(gi), free(gh), free(bi), free(bh), free(h0), free(h1);
    }
}

/* Runs check on every vector table this CPU has; returns how many. */
static int for_vector_tables(void (*check)(const kern_table *)) {
    const char *names[] = {"avx2", "avx512"};
    int ran = 0;
    for (int i = 0; i < 2; i++) {
        const kern_table *t = kern_by_name(names[i]);
        if (!t) continue;
        check(t);
        ran++;
    }
    return ran;
}

TEST(kern_gru_gates_match_ref) {
    if (!for_vector_tables(check_gates)) SKIP("this CPU has neither AVX2 nor AVX-512");
}

/* logit_mass of every table against the reference: the same max (a max is
 * exact in any order), the sums within 1e-6 relative (vexp's 2 ulp and
 * another summation order; a missing or doubled term moves them by more
 * than 1e-4 for these n). Weights: some tokens out of the normaliser, some
 * ending a word; logits spread so that some fall below the -40 cut. */
static void check_logit_mass(const kern_table *k) {
    static const int ns[] = {1, 7, 8, 9, 100, 8192};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        int n = ns[a];
        float *lg = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n), *e = malloc(sizeof(float) * n);
        float *f = malloc(sizeof(float) * n);
        for (int i = 0; i < n; i++) {
            lg[i] = 30.0f * frand();
            w[i] = (i % 5 == 3 && n > 1) ? 0.0f : 1.0f;
            e[i] = (w[i] > 0 && i % 3 == 0) ? 1.0f : 0.0f;
            f[i] = (e[i] > 0 && i % 2 == 0) ? 1.0f : 0.0f;
        }
        float m0, m1;
        double z0, z1, e0, e1, f0, f1;
        kern_logit_mass_ref(lg, w, e, f, n, &m0, &z0, &e0, &f0);
        k->logit_mass(lg, w, e, f, n, &m1, &z1, &e1, &f1);
        CHECKF(m0 == m1, "%s n=%d: max %.9g vs ref %.9g", k->name, n, (double)m1, (double)m0);
        CHECKF(fabs(z1 - z0) <= 1e-6 * z0, "%s n=%d: z %.12g vs ref %.12g", k->name, n, z1, z0);
        CHECKF(fabs(e1 - e0) <= 1e-6 * z0, "%s n=%d: ze %.12g vs ref %.12g", k->name, n, e1, e0);
        CHECKF(fabs(f1 - f0) <= 1e-6 * z0, "%s n=%d: zf %.12g vs ref %.12g", k->name, n, f1, f0);
        CHECKF(n < 100 || (f0 > 0 && f0 < e0 && e0 < z0), "n=%d: the three masses are not distinct", n);
        free(lg), free(w), free(e), free(f);
    }
}

TEST(kern_logit_mass_match_ref) {
    if (!for_vector_tables(check_logit_mass)) SKIP("this CPU has neither AVX2 nor AVX-512");
}

/* logit_top of every table equals the reference exactly (ids, values and
 * count), over awkward n, k from 1 to past n, masked-out tokens, and ties
 * (values on a coarse grid, so many equal): the order of equal values is
 * part of the contract. */
static int top_differs(const kern_table *t, const float *lg, const float *g, int n, int k, char *why,
                       size_t wl) {
    int32_t i0[64], i1[64];
    float v0[64], v1[64];
    int n0 = kern_logit_top_ref(lg, g, n, k, i0, v0), n1 = t->logit_top(lg, g, n, k, i1, v1);
    if (n0 != n1) return snprintf(why, wl, "%s n=%d k=%d: count %d vs ref %d", t->name, n, k, n1, n0), 1;
    for (int j = 0; j < n0; j++)
        if (i0[j] != i1[j] || v0[j] != v1[j])
            return snprintf(why, wl, "%s n=%d k=%d: #%d is %d (%g) vs ref %d (%g)", t->name, n, k, j, i1[j],
                            (double)v1[j], i0[j], (double)v0[j]), 1;
    return 0;
}

static void check_logit_top(const kern_table *t) {
    static const int ns[] = {1, 7, 8, 9, 31, 100, 8192};
    static const int ks[] = {1, 2, 5, 24, 64};
    char why[200];
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        int n = ns[a];
        float *lg = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n);
        for (int ties = 0; ties < 2; ties++) {
            for (int i = 0; i < n; i++) {
                lg[i] = ties ? (float)(int)(8.0f * frand()) : 30.0f * frand();
                g[i] = i % 7 == 2 ? 0.0f : 1.0f;
            }
            for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++)
                CHECKF(!top_differs(t, lg, g, n, ks[b], why, sizeof why), "%s", why);
        }
        free(lg), free(g);
    }
}

TEST(kern_logit_top_match_ref) {
    if (!for_vector_tables(check_logit_top)) SKIP("this CPU has neither AVX2 nor AVX-512");
}

/* The check names a top-k that drops the ties' order (a later equal value
 * before an earlier one) and one that skips the last block's tail. */
static int top_late_ties(const float *lg, const float *g, int n, int k, int32_t *ids, float *vals) {
    int nt = 0;
    for (int i = n - 1; i >= 0; i--)
        if (g[i] > 0) kern_top_insert(i, lg[i], k, &nt, ids, vals);
    return nt;
}
static int top_no_tail(const float *lg, const float *g, int n, int k, int32_t *ids, float *vals) {
    return kern_logit_top_ref(lg, g, n / 8 * 8, k, ids, vals);
}

TEST(kern_logit_top_checker_catches_broken) {
    kern_table late = {.name = "late-ties", .logit_top = top_late_ties};
    kern_table tail = {.name = "no-tail", .logit_top = top_no_tail};
    float lg[13] = {1, 3, 3, 0, 2, 3, 1, 0, 0, 0, 0, 0, 9}, g[13];
    for (int i = 0; i < 13; i++) g[i] = 1.0f;
    char why[200];
    CHECK(top_differs(&late, lg, g, 13, 3, why, sizeof why));
    CHECK(strstr(why, "late-ties") != NULL);
    CHECK(top_differs(&tail, lg, g, 13, 3, why, sizeof why));
    CHECK(!top_differs(&kern_table_ref, lg, g, 13, 3, why, sizeof why));
}
