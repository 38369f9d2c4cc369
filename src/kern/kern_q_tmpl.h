/* kern_q_tmpl.h - the q8/q4 loop nest, included once by kern_avx2.c and once
 * by kern_avx512.c, each after defining its integer dot primitives:
 *
 *   Q_DOT4(acc, w, x)  acc (8 x int32) += sums of 4 adjacent w[k]*x[k], for
 *                      32 unsigned bytes w in 0..15 and 32 signed bytes x;
 *   Q_DOT8(acc, w, x)  the same for w in 0..255, except that it may compute
 *                      (w - Q8_OFFSET) * x (AVX2 must, to stay inside int16);
 *   Q8_OFFSET          0 or 128: the sum Q8_OFFSET * sum(xq) is added back
 *                      per group in f32 (exactly: it is below 2^24).
 *
 * Numerics (kern_impl.h): x is quantized per group once per call; the
 * integer dots are exact; per group the f32 part is
 *     acc += (s_g * d_g) * I_g   (8 lanes, FMA),   bacc += b_g * sx_g,
 * so the result differs from the f32 reference by x's quantization plus f32
 * rounding of these few terms.
 *
 * Shape letters: R rows, C columns, G group, NG = C/G groups, N vectors. */
#ifndef KERN_Q_TMPL_H
#define KERN_Q_TMPL_H
#else
#error "kern_q_tmpl.h is included once per ISA file"
#endif

static inline float q_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* out[i*NV + j] = W[rows[i]] . x_j for NR rows against NV quantized vectors
 * (NR*NV <= 4): each loaded weight chunk serves NV vectors, each x chunk NR
 * rows. NR, NV, q4 are constants at every call, so the loops unroll. */
static inline __attribute__((always_inline)) void
qtile(const qmat *w, const int32_t *rows, const kern_qx *const *xs, int NR, int NV, float *out,
      int q4) {
    const int32_t G = w->group, NG = w->cols / G;
    const size_t rb = quant_row_bytes(q4 ? 4 : 8, w->cols), gb = q4 ? (size_t)G / 2 : (size_t)G;
    const uint8_t *p[4];
    const float *sc[4], *bi[4];
    for (int i = 0; i < NR; i++) {
        p[i] = (const uint8_t *)w->data + (size_t)rows[i] * rb;
        sc[i] = w->scales + (size_t)rows[i] * NG;
        bi[i] = w->biases + (size_t)rows[i] * NG;
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[4];
    float bacc[4];
    for (int k = 0; k < NR * NV; k++) {
        acc[k] = _mm256_setzero_ps();
        bacc[k] = 0.0f;
    }
    for (int32_t g = 0; g < NG; g++) {
        __m256i I[4];
        for (int k = 0; k < NR * NV; k++) I[k] = _mm256_setzero_si256();
        const size_t gx = (size_t)g * (size_t)G;
        if (q4 && G == 32) {
            /* 16 bytes: low nibbles (even columns) then high (odd), as xq */
            for (int i = 0; i < NR; i++) {
                __m128i v = _mm_loadu_si128((const __m128i *)(p[i] + g * gb));
                __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), m4);
                for (int j = 0; j < NV; j++)
                    I[i * NV + j] = Q_DOT4(I[i * NV + j], u, _mm256_load_si256((const __m256i *)(xs[j]->q + gx)));
            }
        } else if (q4) {
            /* 32 bytes = 64 columns: xq holds their even columns, then odd */
            for (size_t o = 0; o < gb; o += 32)
                for (int i = 0; i < NR; i++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(p[i] + g * gb + o));
                    __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    for (int j = 0; j < NV; j++) {
                        const int8_t *xq = xs[j]->q + gx + 2 * o;
                        I[i * NV + j] = Q_DOT4(I[i * NV + j], lo, _mm256_load_si256((const __m256i *)xq));
                        I[i * NV + j] = Q_DOT4(I[i * NV + j], hi, _mm256_load_si256((const __m256i *)(xq + 32)));
                    }
                }
        } else {
            for (size_t o = 0; o < gb; o += 32)
                for (int i = 0; i < NR; i++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(p[i] + g * gb + o));
                    for (int j = 0; j < NV; j++)
                        I[i * NV + j] = Q_DOT8(I[i * NV + j], v,
                                               _mm256_load_si256((const __m256i *)(xs[j]->q + gx + o)));
                }
        }
        for (int i = 0; i < NR; i++)
            for (int j = 0; j < NV; j++) {
                const int k = i * NV + j;
                const float sd = sc[i][g] * xs[j]->d[g];
                acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I[k]), _mm256_set1_ps(sd), acc[k]);
                bacc[k] += bi[i][g] * xs[j]->s[g];
                if (!q4 && Q8_OFFSET) bacc[k] += sd * (float)(Q8_OFFSET * xs[j]->sq[g]);
            }
    }
    for (int k = 0; k < NR * NV; k++) out[k] = q_hsum(acc[k]) + bacc[k];
}

/* The three table entries over qtile; every non-fast shape takes the
 * reference (kern_q_fast). */
static inline __attribute__((always_inline)) void
q_rows(const qmat *w, const int32_t *rows, int n, const kern_qx *qx, float *y, int q4) {
    const kern_qx *xs[1] = {qx};
    int i = 0;
    for (; i + 4 <= n; i += 4) qtile(w, rows + i, xs, 4, 1, y + i, q4);
    for (; i < n; i++) qtile(w, rows + i, xs, 1, 1, y + i, q4);
}

static void q_matvec(const qmat *w, const float *x, float *y) {
    if (!kern_q_fast(w)) {
        kern_matvec_ref(w, x, y);
        return;
    }
    kern_qx qx;
    const int q4 = w->type == QT_Q4;
    kern_quant_x(x, w->cols, w->group, q4, &qx);
    int32_t rows[64];
    for (int32_t r0 = 0; r0 < w->rows; r0 += 64) {
        int n = w->rows - r0 < 64 ? w->rows - r0 : 64;
        for (int i = 0; i < n; i++) rows[i] = r0 + i;
        if (q4) q_rows(w, rows, n, &qx, y + r0, 1);
        else q_rows(w, rows, n, &qx, y + r0, 0);
    }
}

static void q_dot_rows(const qmat *w, const int32_t *rows, int n, const float *x, float *y) {
    if (!kern_q_fast(w)) {
        kern_dot_rows_ref(w, rows, n, x, y);
        return;
    }
    kern_qx qx;
    const int q4 = w->type == QT_Q4;
    kern_quant_x(x, w->cols, w->group, q4, &qx);
    if (q4) q_rows(w, rows, n, &qx, y, 1);
    else q_rows(w, rows, n, &qx, y, 0);
}

/* One row against NV vectors, for every row: the matrix is streamed once per
 * block of 4 vectors (N <= 4 for the beams: once). */
static inline __attribute__((always_inline)) void
q_matmat_nv(const qmat *w, const kern_qx *const *xs, int NV, float *y, int q4) {
    const int64_t R = w->rows;
    for (int32_t r = 0; r < w->rows; r++) {
        float o[4];
        qtile(w, &r, xs, 1, NV, o, q4);
        for (int j = 0; j < NV; j++) y[j * R + r] = o[j];
    }
}

static void q_matmat(const qmat *w, const float *x, int n, float *y) {
    if (!kern_q_fast(w)) {
        kern_matmat_ref(w, x, n, y);
        return;
    }
    kern_qx qx[4];
    const kern_qx *xs[4] = {&qx[0], &qx[1], &qx[2], &qx[3]};
    const int q4 = w->type == QT_Q4;
    const int64_t R = w->rows, C = w->cols;
    for (int i = 0; i < n; i += 4) {
        int nv = n - i < 4 ? n - i : 4;
        for (int j = 0; j < nv; j++) kern_quant_x(x + (i + j) * C, w->cols, w->group, q4, &qx[j]);
        float *yi = y + i * R;
        switch (nv * 2 + q4) {
        case 2: q_matmat_nv(w, xs, 1, yi, 0); break;
        case 3: q_matmat_nv(w, xs, 1, yi, 1); break;
        case 4: q_matmat_nv(w, xs, 2, yi, 0); break;
        case 5: q_matmat_nv(w, xs, 2, yi, 1); break;
        case 6: q_matmat_nv(w, xs, 3, yi, 0); break;
        case 7: q_matmat_nv(w, xs, 3, yi, 1); break;
        case 8: q_matmat_nv(w, xs, 4, yi, 0); break;
        default: q_matmat_nv(w, xs, 4, yi, 1); break;
        }
    }
}
