/* kern_avx2.c - AVX2 + FMA + F16C vector loops for f32 and f16 weights.
 * Built with the AVX2 flags (Makefile); called only when kern_cpu_features()
 * reports AVX2. AVX2 has no masked 16-bit load, so a column tail (C % 8) is
 * copied into a zero-padded block of 8 and then takes the same vector path.
 * Results differ from kern_ref.c only by summation order (8 lanes, FMA).
 *
 * Each loop is written once as an always-inline function of a constant
 * `f16` flag; the wrappers below instantiate it per type.
 *
 * Shape letters: R rows, C columns, N vectors. */
#include "kern/kern_impl.h"

#include <immintrin.h>

#include "kern/quant.h"
#include "kern/vmath.h"
#include <math.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

/* 8 weights of row p starting at column c, as f32. */
INLINE __m256 ldw(const void *p, int64_t c, int f16) {
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + c)));
    return _mm256_loadu_ps((const float *)p + c);
}

/* The t < 8 weights of row p from column c, zero-padded to 8. */
INLINE __m256 ldw_tail(const void *p, int64_t c, int64_t t, int f16) {
    if (f16) {
        uint16_t b[8] = {0};
        memcpy(b, (const uint16_t *)p + c, (size_t)t * sizeof b[0]);
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
    }
    float b[8] = {0};
    memcpy(b, (const float *)p + c, (size_t)t * sizeof b[0]);
    return _mm256_loadu_ps(b);
}

INLINE __m256 ldx_tail(const float *x, int64_t c, int64_t t) {
    float b[8] = {0};
    memcpy(b, x + c, (size_t)t * sizeof b[0]);
    return _mm256_loadu_ps(b);
}

INLINE float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* out[0..4) = p0..p3 . x: four independent FMA chains sharing each load of x. */
INLINE void dot4(const void *p0, const void *p1, const void *p2, const void *p3,
                 const float *x, int64_t C, float *out, int f16) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 8 <= C; c += 8) {
        __m256 xv = _mm256_loadu_ps(x + c);
        a0 = _mm256_fmadd_ps(ldw(p0, c, f16), xv, a0);
        a1 = _mm256_fmadd_ps(ldw(p1, c, f16), xv, a1);
        a2 = _mm256_fmadd_ps(ldw(p2, c, f16), xv, a2);
        a3 = _mm256_fmadd_ps(ldw(p3, c, f16), xv, a3);
    }
    if (c < C) {
        int64_t t = C - c;
        __m256 xv = ldx_tail(x, c, t);
        a0 = _mm256_fmadd_ps(ldw_tail(p0, c, t, f16), xv, a0);
        a1 = _mm256_fmadd_ps(ldw_tail(p1, c, t, f16), xv, a1);
        a2 = _mm256_fmadd_ps(ldw_tail(p2, c, t, f16), xv, a2);
        a3 = _mm256_fmadd_ps(ldw_tail(p3, c, t, f16), xv, a3);
    }
    out[0] = hsum(a0);
    out[1] = hsum(a1);
    out[2] = hsum(a2);
    out[3] = hsum(a3);
}

/* One row . x with the very operations of one lane of dot4 and row4 (one
 * FMA chain, then the tail, then hsum): a row gives the same bits whichever
 * of the three computes it, so matvec, matmat and dot_rows agree bit for
 * bit and the search's result does not depend on how its rows were
 * batched (tests/test_engine_suggest.c, pruning). A second chain would be
 * faster for one long row, but dot1 only takes the rows and vectors left
 * over from the groups of four. */
INLINE float dot1(const void *p, const float *x, int64_t C, int f16) {
    __m256 a0 = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= C; c += 8)
        a0 = _mm256_fmadd_ps(ldw(p, c, f16), _mm256_loadu_ps(x + c), a0);
    if (c < C)
        a0 = _mm256_fmadd_ps(ldw_tail(p, c, C - c, f16), ldx_tail(x, c, C - c), a0);
    return hsum(a0);
}

/* One row against four vectors: each weight is loaded (and converted) once
 * and used four times; the row stays in L1 across the vector blocks, so the
 * matrix is streamed from memory once for all N vectors. */
INLINE void row4(const void *p, const float *x0, const float *x1, const float *x2,
                 const float *x3, int64_t C, float out[4], int f16) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 8 <= C; c += 8) {
        __m256 wv = ldw(p, c, f16);
        a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x0 + c), a0);
        a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x1 + c), a1);
        a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x2 + c), a2);
        a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x3 + c), a3);
    }
    if (c < C) {
        int64_t t = C - c;
        __m256 wv = ldw_tail(p, c, t, f16);
        a0 = _mm256_fmadd_ps(wv, ldx_tail(x0, c, t), a0);
        a1 = _mm256_fmadd_ps(wv, ldx_tail(x1, c, t), a1);
        a2 = _mm256_fmadd_ps(wv, ldx_tail(x2, c, t), a2);
        a3 = _mm256_fmadd_ps(wv, ldx_tail(x3, c, t), a3);
    }
    out[0] = hsum(a0);
    out[1] = hsum(a1);
    out[2] = hsum(a2);
    out[3] = hsum(a3);
}

/* row_at, matvec_t, matmat_t, dot_rows_t over this file's dot1/dot4/row4 */
#include "kern/kern_f_tmpl.h"

/* ---- q8/q4 (kern_q_tmpl.h): integer dots from vpmaddubsw, which adds
 * pairs of u8*s8 products into int16 with saturation. q4 codes (<= 15) keep
 * a pair within 2*15*127; q8 codes would not (2*255*127 > 32767), so Q_DOT8
 * uses q - 128 (in -128..127): |q-128| as u8 times xq carrying q-128's sign,
 * a pair at most 2*128*127 = 32512, and the template adds 128*sum(xq) back. */
static inline __m256i q_dot4_avx2(__m256i acc, __m256i w, __m256i x) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
}
static inline __m256i q_dot8_avx2(__m256i acc, __m256i w, __m256i x) {
    __m256i c = _mm256_xor_si256(w, _mm256_set1_epi8((char)0x80));  /* q - 128 as s8 */
    return q_dot4_avx2(acc, _mm256_abs_epi8(c), _mm256_sign_epi8(x, c));
}
#define Q_DOT4 q_dot4_avx2
#define Q_DOT8 q_dot8_avx2
#define Q8_OFFSET 128
#include "kern/kern_q_tmpl.h"

void kern_q_matvec_avx2(const qmat *w, const float *x, float *y) { q_matvec(w, x, y); }
void kern_q_matmat_avx2(const qmat *w, const float *x, int n, float *y) { q_matmat(w, x, n, y); }
void kern_q_dot_rows_avx2(const qmat *w, const int32_t *rows, int n, const float *x, float *y) {
    q_dot_rows(w, rows, n, x, y);
}

static void matvec(const qmat *w, const float *x, float *y) {
    switch (w->type) {
    case QT_F32: matvec_t(w, x, y, 0); return;
    case QT_F16: matvec_t(w, x, y, 1); return;
    case QT_Q8: case QT_Q4: q_matvec(w, x, y); return;
    }
    kern_matvec_ref(w, x, y);
}

static void matmat(const qmat *w, const float *x, int n, float *y) {
    switch (w->type) {
    case QT_F32: matmat_t(w, x, n, y, 0); return;
    case QT_F16: matmat_t(w, x, n, y, 1); return;
    case QT_Q8: case QT_Q4: q_matmat(w, x, n, y); return;
    }
    kern_matmat_ref(w, x, n, y);
}

static void dot_rows(const qmat *w, const int32_t *rows, int n, const float *x, float *y) {
    switch (w->type) {
    case QT_F32: dot_rows_t(w, rows, n, x, y, 0); return;
    case QT_F16: dot_rows_t(w, rows, n, x, y, 1); return;
    case QT_Q8: case QT_Q4: q_dot_rows(w, rows, n, x, y); return;
    }
    kern_dot_rows_ref(w, rows, n, x, y);
}

void kern_quant_x_avx2(const float *x, int32_t C, int32_t G, int q4_order, kern_qx *out) {
    if (q4_order || G % 8) {
        kern_quant_x(x, C, G, q4_order, out);
        return;
    }
    const int32_t NG = C / G;
    const __m256 sign = _mm256_set1_ps(-0.0f), hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
    const __m256 magic = _mm256_set1_ps(0x1.8p23f);
    for (int32_t g = 0; g < NG; g++) {
        const float *p = x + (size_t)g * G;
        /* max |x|: a NaN lane keeps the running max (max_ps returns its
         * second operand then), as the reference skips it */
        __m256 am = _mm256_setzero_ps();
        for (int32_t i = 0; i < G; i += 8) am = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(p + i)), am);
        float lanes[8];
        _mm256_storeu_ps(lanes, am);
        float amax = 0.0f, sx = 0.0f;
        for (int k = 0; k < 8; k++) amax = lanes[k] > amax ? lanes[k] : amax;
        for (int32_t i = 0; i < G; i++) sx += p[i];   /* the reference's order */
        float d = amax / 127.0f, inv = amax > 0 ? 1.0f / d : 0.0f;
        const __m256 iv = _mm256_set1_ps(inv);
        __m256i sq = _mm256_setzero_si256();
        for (int32_t i = 0; i < G; i += 8) {
            __m256 t = _mm256_mul_ps(_mm256_loadu_ps(p + i), iv);
            __m256 ok = _mm256_cmp_ps(t, t, _CMP_ORD_Q);   /* NaN -> 0 */
            t = _mm256_max_ps(_mm256_min_ps(t, hi), lo);
            t = _mm256_sub_ps(_mm256_add_ps(t, magic), magic);
            __m256i v = _mm256_and_si256(_mm256_cvttps_epi32(t), _mm256_castps_si256(ok));
            sq = _mm256_add_epi32(sq, v);
            __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            _mm_storel_epi64((__m128i *)(void *)(out->q + (size_t)g * G + i), _mm_packs_epi16(w16, w16));
        }
        int32_t s4[8];
        _mm256_storeu_si256((__m256i *)(void *)s4, sq);
        out->d[g] = d;
        out->s[g] = sx;
        out->sq[g] = s4[0] + s4[1] + s4[2] + s4[3] + s4[4] + s4[5] + s4[6] + s4[7];
    }
}

void kern_gru_gates_avx2(int H, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                         float *h) {
    int i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= H; i += 8) {
#define LD(p, o) _mm256_loadu_ps((p) + (o) + i)
        __m256 r = vsigmoid(_mm256_add_ps(_mm256_add_ps(LD(gi, 0), LD(b_ih, 0)),
                                          _mm256_add_ps(LD(gh, 0), LD(b_hh, 0))));
        __m256 z = vsigmoid(_mm256_add_ps(_mm256_add_ps(LD(gi, H), LD(b_ih, H)),
                                          _mm256_add_ps(LD(gh, H), LD(b_hh, H))));
        __m256 n = vtanh(_mm256_add_ps(_mm256_add_ps(LD(gi, 2 * H), LD(b_ih, 2 * H)),
                                       _mm256_mul_ps(r, _mm256_add_ps(LD(gh, 2 * H), LD(b_hh, 2 * H)))));
        __m256 hv = LD(h, 0);
#undef LD
        _mm256_storeu_ps(h + i, _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(one, z), n), _mm256_mul_ps(z, hv)));
    }
    kern_gru_gates_span(H, i, gi, gh, b_ih, b_hh, h);  /* the last H % 8 units */
}

void kern_logit_mass_avx2(const float *lg, const float *w, const float *e, const float *f, int n, float *mx,
                          double *z, double *ze, double *zf) {
    const __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    __m256 m8 = ninf;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 keep = _mm256_cmp_ps(_mm256_loadu_ps(w + i), zero, _CMP_GT_OQ);
        m8 = _mm256_max_ps(m8, _mm256_blendv_ps(ninf, _mm256_loadu_ps(lg + i), keep));
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, m8);
    float m = -INFINITY;
    for (int k = 0; k < 8; k++) m = lanes[k] > m ? lanes[k] : m;
    for (int k = i; k < n; k++)
        if (w[k] > 0 && lg[k] > m) m = lg[k];
    /* Products in f32 as the reference forms them; each lane adds 4 of them
     * in f32 (nonnegative terms: relative error <= 3 * 2^-24 of the sum),
     * then the partial sums are widened to double and summed in 4 double
     * lanes per sum. */
    const __m256 mv = _mm256_set1_ps(m), cut = _mm256_set1_ps(-40.0f);
    __m256d z0 = _mm256_setzero_pd(), z1 = z0, e0 = z0, e1 = z0, f0 = z0, f1 = z0;
    i = 0;
    while (i + 8 <= n) {
        __m256 pz = _mm256_setzero_ps(), pe = pz, pf = pz;
        for (int r = 0; r < 4 && i + 8 <= n; r++, i += 8) {
            __m256 d = _mm256_sub_ps(_mm256_loadu_ps(lg + i), mv);
            __m256 x = _mm256_and_ps(vexp(d), _mm256_cmp_ps(d, cut, _CMP_GT_OQ));
            pz = _mm256_add_ps(pz, _mm256_mul_ps(_mm256_loadu_ps(w + i), x));
            pe = _mm256_add_ps(pe, _mm256_mul_ps(_mm256_loadu_ps(e + i), x));
            pf = _mm256_add_ps(pf, _mm256_mul_ps(_mm256_loadu_ps(f + i), x));
        }
        z0 = _mm256_add_pd(z0, _mm256_cvtps_pd(_mm256_castps256_ps128(pz)));
        z1 = _mm256_add_pd(z1, _mm256_cvtps_pd(_mm256_extractf128_ps(pz, 1)));
        e0 = _mm256_add_pd(e0, _mm256_cvtps_pd(_mm256_castps256_ps128(pe)));
        e1 = _mm256_add_pd(e1, _mm256_cvtps_pd(_mm256_extractf128_ps(pe, 1)));
        f0 = _mm256_add_pd(f0, _mm256_cvtps_pd(_mm256_castps256_ps128(pf)));
        f1 = _mm256_add_pd(f1, _mm256_cvtps_pd(_mm256_extractf128_ps(pf, 1)));
    }
    double dz[4], de[4], df[4];
    _mm256_storeu_pd(dz, _mm256_add_pd(z0, z1));
    _mm256_storeu_pd(de, _mm256_add_pd(e0, e1));
    _mm256_storeu_pd(df, _mm256_add_pd(f0, f1));
    *mx = m;
    *z = (dz[0] + dz[1]) + (dz[2] + dz[3]);
    *ze = (de[0] + de[1]) + (de[2] + de[3]);
    *zf = (df[0] + df[1]) + (df[2] + df[3]);
    kern_logit_mass_span(lg, w, e, f, i, n, m, z, ze, zf);  /* the last n % 8 terms */
}

/* 8 logits per compare against the current k-th value (-inf until k are
 * held): only lanes that beat it reach the reference's insertion, in index
 * order, so the result is the reference's exactly. Once the list fills,
 * nearly every block is one compare and one mask test. */
int kern_logit_top_avx2(const float *lg, const float *g, int n, int k, int32_t *ids, float *vals) {
    int nt = 0;
    if (k <= 0) return 0;
    const __m256 zero = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(lg + i), ok = _mm256_cmp_ps(_mm256_loadu_ps(g + i), zero, _CMP_GT_OQ);
        if (nt == k) ok = _mm256_and_ps(ok, _mm256_cmp_ps(v, _mm256_set1_ps(vals[k - 1]), _CMP_GT_OQ));
        unsigned m = (unsigned)_mm256_movemask_ps(ok);
        while (m) {
            int b = __builtin_ctz(m);
            m &= m - 1;
            kern_top_insert(i + b, lg[i + b], k, &nt, ids, vals);
        }
    }
    for (; i < n; i++)
        if (g[i] > 0) kern_top_insert(i, lg[i], k, &nt, ids, vals);
    return nt;
}

const kern_table kern_table_avx2 = {
    .name = "avx2",
    .matvec = matvec,
    .matmat = matmat,
    .dot_rows = dot_rows,
    .gru_gates = kern_gru_gates_avx2,
    .logit_mass = kern_logit_mass_avx2,
    .logit_top = kern_logit_top_avx2,
};
