/* test_quant.c - q8/q4 (quant.h): quantization error within its bound,
 * refusals, the scalar reference against the dequantized matrix, and every
 * vector table against the reference for every group size over awkward
 * shapes; then a demonstration that the checks catch a broken kernel.
 *
 * The vector kernels quantize x per group (kern_impl.h), so three checks:
 *  1. exact: on a grid where every f32 step is exact (scales and biases
 *     powers of two times small integers, x = xq * 2^-7 with a +-127 in
 *     every group so d = 2^-7), kernel == reference == the exact value,
 *     bit for bit. Any integer slip (one code, one nibble) shows here.
 *  2. integer path: on random data, the kernel against y_q computed in
 *     double from the same quantized x: |got - y_q| <= 1e-6 + 1e-5 * S_q,
 *     S_q = sum_g |s d I_g| + |b sx_g| (f32 summation order only).
 *  3. accuracy: the kernel against the f32 reference within
 *     1e-6 + 1e-5 * S + X, X = sum_g s_g sum_c q_c |x_c - d_g xq_c|, the
 *     exact effect of x's quantization (about 1% of S = sum |w x|).
 *
 * Shape letters: R rows, C columns, G group, N vectors. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern/kern_impl.h"
#include "kern/quant.h"

static const int row_sizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 65, 127, 255, 1023};
static const int col_mults[] = {1, 2, 3, 5, 8};
static const int groups[] = {32, 64, 128};

static uint64_t rng = 0xA0761D6478BD642Full;
static uint32_t urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)((double)urand() * 0x1p-31 - 1.0); }  /* [-1, 1) */

typedef struct {
    qmat m;
    uint8_t *q;
    float *s, *b, *w;  /* w: the f32 source, NULL for grid matrices */
    void *panel;       /* m's panel form (with_panel), else NULL */
} qbuf;

static void qbuf_free(qbuf *b) {
    free(b->panel);
    free(b->q);
    free(b->s);
    free(b->b);
    free(b->w);
}

static qbuf qbuf_alloc(qtype t, int R, int C, int G) {
    qbuf b = {.m = {.type = t, .rows = R, .cols = C, .group = G}};
    size_t ng = (size_t)R * (size_t)(C / G);
    b.q = calloc((size_t)R * quant_row_bytes(t == QT_Q4 ? 4 : 8, C), 1);
    b.s = malloc(ng * sizeof *b.s);
    b.b = malloc(ng * sizeof *b.b);
    b.m.data = b.q;
    b.m.scales = b.s;
    b.m.biases = b.b;
    return b;
}

/* Random weights quantized by quant_quantize: uniform in a per-row range,
 * some rows offset far from zero, some groups constant. */
static qbuf make_random(qtype t, int R, int C, int G) {
    qbuf b = qbuf_alloc(t, R, C, G);
    b.w = malloc((size_t)R * C * sizeof *b.w);
    for (int r = 0; r < R; r++) {
        float scale = 0.01f + (float)(urand() % 100) / 50.0f, off = r % 5 == 4 ? 3.0f : 0.0f;
        for (int c = 0; c < C; c++) b.w[(size_t)r * C + c] = off + scale * frand();
        if (r % 7 == 3)
            for (int c = 0; c < G; c++) b.w[(size_t)r * C + c] = 0.25f;
    }
    laya_status st = quant_quantize(b.w, R, C, t == QT_Q4 ? 4 : 8, G, b.q, b.s, b.b, NULL, 0);
    if (st != LAYA_OK) abort();  /* a test bug: the inputs are valid */
    return b;
}

/* The exact grid (see the top): codes random, s = 2^-4 or 2^-5, b = j/32. */
static qbuf make_grid(qtype t, int R, int C, int G) {
    qbuf b = qbuf_alloc(t, R, C, G);
    int Q = t == QT_Q4 ? 15 : 255;
    size_t rb = quant_row_bytes(t == QT_Q4 ? 4 : 8, C), ng = (size_t)R * (size_t)(C / G);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            uint8_t v = (uint8_t)(urand() % (unsigned)(Q + 1));
            if (t == QT_Q8) b.q[(size_t)r * rb + c] = v;
            else b.q[(size_t)r * rb + c / 2] |= (uint8_t)(v << (4 * (c & 1)));
        }
    for (size_t g = 0; g < ng; g++) {
        b.s[g] = urand() & 1 ? 0x1p-4f : 0x1p-5f;
        b.b[g] = (float)((int)(urand() % 17) - 8) / 32.0f;
    }
    return b;
}

/* x on the grid: xq in -31..31, one +-127 per group, times 2^-7. */
static void grid_x(float *x, int C, int G) {
    for (int c = 0; c < C; c++) x[c] = (float)((int)(urand() % 63) - 31) * 0x1p-7f;
    for (int g = 0; g < C / G; g++) x[g * G + (int)(urand() % (unsigned)G)] = (urand() & 1 ? 127 : -127) * 0x1p-7f;
}

static uint32_t code(const qmat *m, int r, int c) {
    const uint8_t *row = (const uint8_t *)m->data + (size_t)r * quant_row_bytes(m->type == QT_Q4 ? 4 : 8, m->cols);
    return m->type == QT_Q4 ? (row[c / 2] >> (4 * (c & 1))) & 15u : row[c];
}

/* Column c's position in the kernels' xq (q4 order, kern_impl.h). */
static int xq_at(int c, int G, int q4) {
    int P = G < 64 ? G : 64, i = c % P;
    return q4 ? c / P * P + i / 2 + (i & 1) * (P / 2) : c;
}

typedef struct { double yq, Sq, X, S; } row_ref;

/* For row r against x: y_q from the integer path in double, its scale S_q,
 * the quantization term X and S = sum |deq(w) x|. */
static row_ref ref_row(const qmat *m, int r, const float *x, const kern_qx *qx) {
    row_ref o = {0};
    const int G = m->group, NG = m->cols / G, q4 = m->type == QT_Q4;
    for (int g = 0; g < NG; g++) {
        double s = m->scales[(size_t)r * NG + g], b = m->biases[(size_t)r * NG + g], d = qx->d[g];
        long long I = 0;
        for (int c = g * G; c < (g + 1) * G; c++) {
            uint32_t q = code(m, r, c);
            int xq = qx->q[xq_at(c, G, q4)];
            I += (long long)q * xq;
            o.X += s * q * fabs((double)x[c] - d * xq);
            o.S += fabs((s * q + b) * x[c]);
        }
        o.yq += s * d * (double)I + b * qx->s[g];
        o.Sq += fabs(s * d * (double)I) + fabs(b * qx->s[g]);
    }
    return o;
}

/* Gives b its panel form (kern.h), which matvec and matmat then read. */
static void with_panel(qbuf *b) {
    size_t n = kern_panel_bytes(&b->m);
    if (!n || !(b->panel = aligned_alloc(32, (n + 31) / 32 * 32))) abort();  /* a test bug */
    kern_panel_pack(&b->m, b->panel);
    b->m.panel = b->panel;
}

/* Compares t's kernels with the references on one (R, C) matrix; grid: the
 * exact check, else checks 2 and 3; panel: the kernels read the panel form.
 * Returns 0, or 1 with a reason. */
static int compare(const kern_table *t, qtype ty, int R, int C, int G, int grid, int panel, char *why,
                   size_t wl) {
    qbuf b = grid ? make_grid(ty, R, C, G) : make_random(ty, R, C, G);
    if (panel) with_panel(&b);
    const qmat *m = &b.m;
    enum { NMAX = 7 };
    float *x = malloc((size_t)NMAX * C * sizeof *x);
    float *y = malloc(((size_t)NMAX * R + 16) * sizeof *y), *yr = malloc(((size_t)NMAX * R + 16) * sizeof *yr);
    kern_qx *qx = malloc(NMAX * sizeof *qx);
    for (int i = 0; i < NMAX; i++) {
        if (grid) grid_x(x + (size_t)i * C, C, G);
        else for (int c = 0; c < C; c++) x[(size_t)i * C + c] = frand() * (c % 9 == 0 ? 4.0f : 1.0f);
        kern_quant_x(x + (size_t)i * C, C, G, ty == QT_Q4, &qx[i]);
    }
    int bad = 0;
    const char *what = "";
    /* check one output: y of row r against vector i */
    #define CHECK_ONE(got, want, r, i)                                                        \
        do {                                                                              \
            row_ref o_ = ref_row(m, (r), x + (size_t)(i) * C, &qx[i]);                    \
            double g_ = (got), w_ = (want);                                               \
            int ok_ = grid ? g_ == w_ && w_ == o_.yq                                      \
                           : fabs(g_ - o_.yq) <= 1e-6 + 1e-5 * o_.Sq &&                   \
                             fabs(g_ - w_) <= 1e-6 + 1e-5 * o_.S + o_.X;                  \
            if (!ok_ && !bad) {                                                           \
                snprintf(why, wl, "%s %s q%d G=%d R=%d C=%d%s%s: row %d vec %d got %.9g ref %.9g " \
                         "int-path %.9g (X %.3g S %.3g)", t->name, what, ty == QT_Q4 ? 4 : 8, G, \
                         R, C, grid ? " grid" : "", panel ? " panel" : "", (r), (i), g_, w_, o_.yq, \
                         o_.X, o_.S);                                                     \
                bad = 1;                                                                  \
            }                                                                             \
        } while (0)

    what = "matvec";
    t->matvec(m, x, y);
    kern_matvec_ref(m, x, yr);
    for (int r = 0; r < R && !bad; r++) CHECK_ONE(y[r], yr[r], r, 0);
    static const int ns[] = {1, 2, 3, 4, 5, NMAX};
    what = "matmat";
    for (size_t k = 0; k < sizeof ns / sizeof ns[0] && !bad; k++) {
        int n = ns[k];
        t->matmat(m, x, n, y);
        kern_matmat_ref(m, x, n, yr);
        for (int i = 0; i < n && !bad; i++)
            for (int r = 0; r < R && !bad; r++) CHECK_ONE(y[(size_t)i * R + r], yr[(size_t)i * R + r], r, i);
    }
    int32_t rows[9];
    for (int k = 0; k < 9; k++) rows[k] = (int32_t)((unsigned)k * 7919u % (unsigned)R);
    rows[8] = R - 1;
    what = "dot_rows";
    static const int nr[] = {1, 4, 9};
    for (size_t k = 0; k < 3 && !bad; k++) {
        t->dot_rows(m, rows, nr[k], x, y);
        kern_dot_rows_ref(m, rows, nr[k], x, yr);
        for (int i = 0; i < nr[k] && !bad; i++) CHECK_ONE(y[i], yr[i], rows[i], 0);
    }
    #undef CHECK_ONE
    free(x);
    free(y);
    free(yr);
    free(qx);
    qbuf_free(&b);
    return bad;
}

/* grid_only: the reference itself (it does not quantize x, so only the
 * exact grid applies to it). */
static void check_table(const kern_table *t, int grid_only) {
    char why[400];
    for (int ty = QT_Q8; ty <= QT_Q4; ty++)
        for (int gi = 0; gi < 3; gi++)
            for (size_t ri = 0; ri < sizeof row_sizes / sizeof row_sizes[0]; ri++)
                for (size_t ci = 0; ci < sizeof col_mults / sizeof col_mults[0]; ci++) {
                    int G = groups[gi], R = row_sizes[ri], C = col_mults[ci] * G;
                    if ((long)R * C > 255 * 1024) continue;  /* keep the sweep fast */
                    for (int panel = 0; panel < 2; panel++) {
                        if (!grid_only) CHECKF(!compare(t, (qtype)ty, R, C, G, 0, panel, why, sizeof why), "%s", why);
                        if (C <= 384) CHECKF(!compare(t, (qtype)ty, R, C, G, 1, panel, why, sizeof why), "%s", why);
                    }
                }
    for (int ty = QT_Q8; ty <= QT_Q4 && !grid_only; ty++)
        for (int panel = 0; panel < 2; panel++)
            CHECKF(!compare(t, (qtype)ty, 1023, 1024, 64, 0, panel, why, sizeof why), "%s", why);
}

TEST(quant_ref_matches_itself_on_grid) { check_table(&kern_table_ref, 1); }

TEST(quant_avx2_matches_ref) {
    const kern_table *t = kern_by_name("avx2");
    if (!t) SKIP("this CPU lacks AVX2");
    check_table(t, 0);
}

TEST(quant_avx512_matches_ref) {
    const kern_table *t = kern_by_name("avx512");
    if (!t) SKIP("this CPU lacks AVX-512");
    check_table(t, 0);
}

/* A kernel whose integer part is off by one in the last group of every row
 * (as a wrong tail in a vector loop would be): the exact grid check must
 * name it, at every shape; the tolerance checks alone could miss an error
 * this small (s*d is about S/8000), which is why the grid exists. */
static void broken_matvec(const qmat *w, const float *x, float *y) {
    kern_matvec_ref(w, x, y);
    kern_qx qx;
    kern_quant_x(x, w->cols, w->group, w->type == QT_Q4, &qx);
    int NG = w->cols / w->group;
    for (int r = 0; r < w->rows; r++) y[r] += w->scales[(size_t)r * NG + NG - 1] * qx.d[NG - 1];
}

/* The q4 loop reading the high nibble first: swaps columns 2k and 2k+1. */
static void swapped_matvec(const qmat *w, const float *x, float *y) {
    float *xs = malloc((size_t)w->cols * sizeof *xs);
    for (int c = 0; c < w->cols; c++) xs[c] = x[c ^ 1];
    kern_matvec_ref(w, xs, y);
    free(xs);
}

TEST(quant_checker_catches_broken_kernel) {
    const kern_table broken = {.name = "broken", .matvec = broken_matvec,
                               .matmat = kern_matmat_ref, .dot_rows = kern_dot_rows_ref};
    const kern_table swapped = {.name = "swapped", .matvec = swapped_matvec,
                                .matmat = kern_matmat_ref, .dot_rows = kern_dot_rows_ref};
    char why[400];
    for (int gi = 0; gi < 3; gi++)
        for (int ty = QT_Q8; ty <= QT_Q4; ty++) {
            why[0] = 0;
            CHECKF(compare(&broken, (qtype)ty, 17, 2 * groups[gi], groups[gi], 1, 0, why, sizeof why),
                   "off-by-one accepted, G=%d", groups[gi]);
            CHECK(strstr(why, "broken matvec") != NULL);
        }
    CHECK(compare(&swapped, QT_Q4, 7, 64, 32, 1, 0, why, sizeof why));
    CHECK(compare(&swapped, QT_Q4, 7, 64, 32, 0, 0, why, sizeof why));
    CHECK(strstr(why, "swapped matvec") != NULL);
    /* and the same harness accepts the reference itself on those shapes */
    CHECK(!compare(&kern_table_ref, QT_Q4, 17, 64, 32, 1, 0, why, sizeof why));
}

/* The vector kernels really read the panel form when a matrix has one (else
 * the panel checks above would pass on the row-major path): one code changed
 * in the panel of the last (partial) panel's last row moves exactly that
 * row's output, in matvec and in matmat, for q8 and q4. */
TEST(quant_panel_is_what_the_kernels_read) {
    int tables = 0;
    static const char *names[] = {"avx2", "avx512"};
    for (int ti = 0; ti < 2; ti++) {
        const kern_table *t = kern_by_name(names[ti]);
        if (!t) continue;
        tables++;
        for (int ty = QT_Q8; ty <= QT_Q4; ty++) {
            enum { R = 13, C = 128, G = 64 };
            qbuf b = make_grid((qtype)ty, R, C, G);
            with_panel(&b);
            float x[2 * C], y0[2 * R], y1[2 * R];
            grid_x(x, C, G);
            grid_x(x + C, C, G);
            x[0] = x[0] == 0 ? 0x1p-7f : x[0];  /* column 0 must count */
            x[C] = x[C] == 0 ? 0x1p-7f : x[C];
            t->matmat(&b.m, x, 2, y0);
            /* row 12 is lane 4 of panel 1; column quad/octet 0, byte 0 */
            uint8_t *code = (uint8_t *)b.panel + kern_panel_view(&b.m).stride + 4 * 4;
            *code ^= 1;
            t->matmat(&b.m, x, 2, y1);
            int moved = 0, others = 0;
            for (int i = 0; i < 2; i++)
                for (int r = 0; r < R; r++) {
                    int d = y0[i * R + r] != y1[i * R + r];
                    if (r == 12) moved += d;
                    else others += d;
                }
            t->matvec(&b.m, x, y1);
            CHECKF(moved == 2 && others == 0 && y1[12] != y0[12], "%s q%d: moved %d others %d",
                   t->name, ty == QT_Q4 ? 4 : 8, moved, others);
            qbuf_free(&b);
        }
    }
    if (!tables) SKIP("this CPU lacks AVX2");
}

/* ---- quantize / dequantize ---- */

TEST(quant_error_within_bound) {
    enum { R = 37, C = 384 };
    float *w = malloc(R * C * sizeof *w), *d = malloc(R * C * sizeof *d);
    uint8_t *q = malloc(R * C);
    float s[R * C / 32], b[R * C / 32];
    for (int bits = 4; bits <= 8; bits += 4)
        for (int gi = 0; gi < 3; gi++) {
            int G = groups[gi], NG = C / G;
            for (int r = 0; r < R; r++) {
                /* ranges from 1e-3 to 1e3, some offset far from zero */
                float mag = powf(10.0f, (float)(r % 7) - 3.0f), off = r % 3 == 2 ? 50.0f * mag : 0.0f;
                for (int c = 0; c < C; c++) w[r * C + c] = off + mag * frand();
            }
            w[5] = w[6] = -0.0f;
            for (int c = 0; c < G; c++) w[C + c] = 1.5f;  /* a constant group: exact */
            CHECK(quant_quantize(w, R, C, bits, G, q, s, b, NULL, 0) == LAYA_OK);
            qmat m = {.type = bits == 4 ? QT_Q4 : QT_Q8, .rows = R, .cols = C, .group = G,
                      .data = q, .scales = s, .biases = b};
            quant_dequantize(&m, d);
            double worst = 0;  /* largest error in units of s/2 */
            for (int r = 0; r < R; r++)
                for (int g = 0; g < NG; g++) {
                    float mx = 0, sg = s[r * NG + g];
                    for (int c = g * G; c < (g + 1) * G; c++) mx = fmaxf(mx, fabsf(w[r * C + c]));
                    for (int c = g * G; c < (g + 1) * G; c++) {
                        double e = fabs((double)w[r * C + c] - d[r * C + c]);
                        CHECKF(e <= sg / 2.0 + 0x1p-20 * mx, "q%d G=%d w[%d][%d]=%.9g deq %.9g s=%g",
                               bits, G, r, c, w[r * C + c], d[r * C + c], sg);
                        if (sg > 0) worst = fmax(worst, e / (sg / 2.0));
                    }
                }
            for (int c = 0; c < G; c++) CHECK(d[C + c] == 1.5f);
            /* the bound is tight: uniform data reaches most of it */
            CHECKF(worst > 0.9, "q%d G=%d: worst error only %.3f of s/2", bits, G, worst);
            /* kern_row_f32 is the same dequantization */
            float row[C];
            kern_row_f32(&m, 11, row);
            CHECK(memcmp(row, d + 11 * C, sizeof row) == 0);
        }
    free(w);
    free(d);
    free(q);
}

TEST(quant_low_nibble_first) {
    /* one group of 32: column c = c % 16, range 0..15 so s = 1, b = 0 */
    float w[32];
    for (int c = 0; c < 32; c++) w[c] = (float)(c % 16);
    uint8_t q[16];
    float s, b;
    CHECK(quant_quantize(w, 1, 32, 4, 32, q, &s, &b, NULL, 0) == LAYA_OK);
    CHECK(s == 1.0f && b == 0.0f);
    CHECK(q[0] == 0x10 && q[1] == 0x32 && q[7] == 0xFE && q[8] == 0x10);
}

TEST(quant_refuses_bad_input) {
    float w[128] = {0}, s[4], b[4];
    uint8_t q[128];
    char err[200];
    CHECK(quant_quantize(w, 1, 128, 5, 64, q, s, b, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(quant_quantize(w, 1, 128, 8, 48, q, s, b, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(quant_quantize(w, 1, 96, 8, 64, q, s, b, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "multiple of the group"));
    w[77] = NAN;
    CHECK(quant_quantize(w, 1, 128, 4, 32, q, s, b, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "(0, 77)"));
    w[77] = 3e38f;
    w[78] = -3e38f;
    CHECK(quant_quantize(w, 1, 128, 4, 32, q, s, b, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "overflows"));
}

/* x quantization: |x - d*xq| <= d/2, the q4 order, sums. */
TEST(quant_x_activation) {
    enum { C = 256 };
    float x[C];
    for (int c = 0; c < C; c++) x[c] = frand() * (c < 64 ? 0.0f : 1.0f + (float)(c % 5));
    for (int gi = 0; gi < 3; gi++)
        for (int q4 = 0; q4 <= 1; q4++) {
            int G = groups[gi];
            kern_qx qx;
            kern_quant_x(x, C, G, q4, &qx);
            for (int g = 0; g < C / G; g++) {
                int sq = 0;
                for (int c = g * G; c < (g + 1) * G; c++) {
                    int v = qx.q[xq_at(c, G, q4)];
                    CHECKF(fabs(x[c] - (double)qx.d[g] * v) <= qx.d[g] * 0.5000001, "G=%d c=%d", G, c);
                    sq += v;
                }
                CHECK(sq == qx.sq[g]);
            }
            CHECK(qx.d[0] == 0.0f || G > 64);  /* the all-zero first 64 columns */
        }
}

/* kern_quant_x_avx2 (what the vector kernels quantize x with) equals
 * kern_quant_x bit for bit: codes, d, sum x and sum of codes, for every
 * group size and both orders, with zero groups, NaN, infinities, ties at
 * .5 and values that round to +-127 among the inputs. */
TEST(quant_x_avx2_equals_ref) {
    if (!kern_by_name("avx2")) SKIP("this CPU has no AVX2");
    static kern_qx a, b;
    static const int cmul[] = {1, 2, 3, 12};
    for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
        for (size_t ci = 0; ci < sizeof cmul / sizeof cmul[0]; ci++)
            for (int q4 = 0; q4 < 2; q4++)
                for (int kind = 0; kind < 4; kind++) {
                    int G = groups[gi], C = G * cmul[ci];
                    float *x = malloc(sizeof(float) * (size_t)C);
                    for (int i = 0; i < C; i++) {
                        x[i] = frand() * (kind == 1 ? 1e-30f : kind == 2 ? 1e30f : 3.0f);
                        if (kind == 3) x[i] = (float)((int)(x[i] * 4)) * 0.5f + 0.25f;  /* ties */
                    }
                    if (C >= 2 * G) memset(x + G, 0, sizeof(float) * (size_t)G);   /* a zero group */
                    if (kind == 2) {
                        x[0] = (float)NAN;
                        x[C - 1] = (float)INFINITY;
                    }
                    memset(&a, 0x5A, sizeof a);
                    memset(&b, 0x5A, sizeof b);
                    kern_quant_x(x, C, G, q4, &a);
                    kern_quant_x_avx2(x, C, G, q4, &b);
                    int NG = C / G;
                    CHECKF(!memcmp(a.q, b.q, (size_t)C) && !memcmp(a.d, b.d, sizeof(float) * NG) &&
                               !memcmp(a.s, b.s, sizeof(float) * NG) && !memcmp(a.sq, b.sq, sizeof(int32_t) * NG),
                           "G=%d C=%d q4=%d kind=%d differ", G, C, q4, kind);
                    free(x);
                }
}

/* kern_panel_write_row: writing every row of a q8 and a q4 matrix one at a
 * time, in a scrambled order, into a form packed from another matrix of
 * the same shape gives exactly kern_panel_pack's bytes. */
TEST(quant_panel_write_row_equals_pack) {
    uint32_t st = 9;
    for (int q4 = 0; q4 < 2; q4++) {
        const int R = 37, C = 128, G = 64, NG = C / G;
        const size_t rb = quant_row_bytes(q4 ? 4 : 8, C);
        uint8_t *data = malloc((size_t)R * rb), *zero = calloc((size_t)R, rb);
        float *sc = malloc((size_t)R * NG * sizeof(float)), *bi = malloc((size_t)R * NG * sizeof(float));
        float *zs = calloc((size_t)R * NG, sizeof(float));
        CHECK(data && zero && sc && bi && zs);
        for (size_t i = 0; i < (size_t)R * rb; i++) data[i] = (uint8_t)((st = st * 1664525u + 1013904223u) >> 24);
        for (int i = 0; i < R * NG; i++) {
            sc[i] = (float)(i % 7 + 1) * 0.01f;
            bi[i] = (float)(i % 5) - 2.0f;
        }
        qmat w = {.type = q4 ? QT_Q4 : QT_Q8, .rows = R, .cols = C, .group = G, .data = data, .scales = sc,
                  .biases = bi};
        qmat z = w;
        z.data = zero;
        z.scales = z.biases = zs;
        size_t n = kern_panel_bytes(&w);
        CHECK(n > 0);
        uint8_t *a = aligned_alloc(32, (n + 31) / 32 * 32), *b = aligned_alloc(32, (n + 31) / 32 * 32);
        CHECK(a && b);
        kern_panel_pack(&w, a);
        kern_panel_pack(&z, b);
        CHECK(memcmp(a, b, n) != 0);
        for (int i = 0; i < R; i++) {
            int r = (i * 11) % R;
            kern_panel_write_row(&w, r, data + (size_t)r * rb, sc + (size_t)r * NG, bi + (size_t)r * NG, b);
        }
        CHECKF(!memcmp(a, b, n), "%s: the rows written one by one differ from the pack", q4 ? "q4" : "q8");
        free(a);
        free(b);
        free(data);
        free(zero);
        free(sc);
        free(bi);
        free(zs);
    }
}
