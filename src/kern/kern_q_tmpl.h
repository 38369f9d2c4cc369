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
 *     acc += (s_g * d_g) * I_g   (8 lanes, FMA),   then acc += b_g * sx_g,
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

/* min(n, 8) floats from p, zeros after: never reads past p[n-1]. */
static inline __m256 q_load8(const float *p, int32_t n) {
    if (n >= 8) return _mm256_loadu_ps(p);
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_maskload_ps(p, m);
}

/* out[i*NV + j] = W[rows[i]] . x_j for NR rows against NV quantized vectors
 * (NR*NV <= 4): each loaded weight chunk serves NV vectors, each x chunk NR
 * rows. NR, NV, q4 and G (== w->group) are constants at every call; the
 * loops over them are unrolled (pragmas: -O2 alone leaves them rolled, with
 * I and acc in memory; a run-time G costs register copies per group). */
static inline __attribute__((always_inline)) void
qtile(const qmat *w, const int32_t *rows, const kern_qx *const *xs, int NR, int NV, float *out,
      int q4, const int32_t G) {
    const int32_t NG = w->cols / G;
    const size_t rb = quant_row_bytes(q4 ? 4 : 8, w->cols), gb = q4 ? (size_t)G / 2 : (size_t)G;
    const uint8_t *p[4];
    const float *sc[4], *bi[4];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < NR; i++) {
        p[i] = (const uint8_t *)w->data + (size_t)rows[i] * rb;
        sc[i] = w->scales + (size_t)rows[i] * NG;
        bi[i] = w->biases + (size_t)rows[i] * NG;
    }
    /* s_g * d_g per (row, vector) in a pre-pass, 8 groups at a time, so the
     * group loop spends only a convert and an FMA with a broadcast load */
    float sd[4][KERN_QX_MAX_GROUPS] __attribute__((aligned(32)));
    _Pragma("GCC unroll 4")
    for (int i = 0; i < NR; i++)
        _Pragma("GCC unroll 4")
        for (int j = 0; j < NV; j++)
            for (int32_t g = 0; g < NG; g += 8)
                _mm256_store_ps(&sd[i * NV + j][g], _mm256_mul_ps(q_load8(sc[i] + g, NG - g),
                                                                  q_load8(xs[j]->d + g, NG - g)));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[4];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NR * NV; k++) acc[k] = _mm256_setzero_ps();
    for (int32_t g = 0; g < NG; g++) {
        __m256i I[4];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NR * NV; k++) I[k] = _mm256_setzero_si256();
        const size_t gx = (size_t)g * (size_t)G;
        if (q4 && G == 32) {
            /* 16 bytes: low nibbles (even columns) then high (odd), as xq */
            _Pragma("GCC unroll 4")
            for (int i = 0; i < NR; i++) {
                __m128i v = _mm_loadu_si128((const __m128i *)(p[i] + g * gb));
                __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), m4);
                _Pragma("GCC unroll 4")
                for (int j = 0; j < NV; j++)
                    I[i * NV + j] = Q_DOT4(I[i * NV + j], u, _mm256_load_si256((const __m256i *)(xs[j]->q + gx)));
            }
        } else if (q4) {
            /* 32 bytes = 64 columns: xq holds their even columns, then odd */
            for (size_t o = 0; o < gb; o += 32)
                _Pragma("GCC unroll 4")
                for (int i = 0; i < NR; i++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(p[i] + g * gb + o));
                    __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    _Pragma("GCC unroll 4")
                    for (int j = 0; j < NV; j++) {
                        const int8_t *xq = xs[j]->q + gx + 2 * o;
                        I[i * NV + j] = Q_DOT4(I[i * NV + j], lo, _mm256_load_si256((const __m256i *)xq));
                        I[i * NV + j] = Q_DOT4(I[i * NV + j], hi, _mm256_load_si256((const __m256i *)(xq + 32)));
                    }
                }
        } else {
            for (size_t o = 0; o < gb; o += 32)
                _Pragma("GCC unroll 4")
                for (int i = 0; i < NR; i++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(p[i] + g * gb + o));
                    _Pragma("GCC unroll 4")
                    for (int j = 0; j < NV; j++)
                        I[i * NV + j] = Q_DOT8(I[i * NV + j], v,
                                               _mm256_load_si256((const __m256i *)(xs[j]->q + gx + o)));
                }
        }
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NR * NV; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I[k]), _mm256_broadcast_ss(&sd[k][g]), acc[k]);
    }
    /* the bias terms, sum_g b_g sx_g (and the AVX2 q8 offset's), 8 groups
     * at a time into the same accumulator */
    _Pragma("GCC unroll 4")
    for (int i = 0; i < NR; i++)
        _Pragma("GCC unroll 4")
        for (int j = 0; j < NV; j++) {
            const int k = i * NV + j;
            for (int32_t g = 0; g < NG; g += 8) {
                acc[k] = _mm256_fmadd_ps(q_load8(bi[i] + g, NG - g), q_load8(xs[j]->s + g, NG - g), acc[k]);
                if (!q4 && Q8_OFFSET) {
                    /* sq is int32: loaded bit for bit through the float mask load */
                    __m256i sq = _mm256_castps_si256(q_load8((const float *)(const void *)(xs[j]->sq + g), NG - g));
                    __m256 off = _mm256_mul_ps(_mm256_cvtepi32_ps(sq), _mm256_set1_ps((float)Q8_OFFSET));
                    acc[k] = _mm256_fmadd_ps(_mm256_load_ps(&sd[k][g]), off, acc[k]);
                }
            }
        }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NR * NV; k++) out[k] = q_hsum(acc[k]);
}

/* ---- panels (kern.h: the panel form) ---- */

static inline int32_t q_ld32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Y(NV, R) rows 8 p0 .. 8 (p0 + NP) - 1 against NV quantized vectors (x in
 * natural column order): each 32-byte chunk of a panel holds 4 columns (q4:
 * 8) of its 8 rows, multiplied by those columns of x broadcast to every
 * lane, so lane r accumulates row r's integer dot. NA integer accumulators
 * per (panel, vector) take a group's chunks in turn: NP * NV * NA
 * independent dot chains hide the dot instruction's latency. Per group the
 * f32 part is one FMA for 8 rows: acc += (s_g * d_g) * I_g + b_g * sx_g,
 * with the AVX2 q8 offset added to I_g in int32 (exact). */
static inline __attribute__((always_inline)) void
ptile(const qmat *w, const kern_panel *pv, int32_t p0, const kern_qx *const *xs, int NP, int NV,
      int NA, float *y, int q4, const int32_t G) {
    const int32_t R = w->rows, NG = w->cols / G;
    const int CH = q4 ? 8 : 4, NC = G / CH;   /* columns per chunk, chunks per group */
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[8];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < NP * NV; k++) acc[k] = _mm256_setzero_ps();
    for (int32_t g = 0; g < NG; g++) {
        __m256i I[16];
        _Pragma("GCC unroll 16")
        for (int k = 0; k < NP * NV * NA; k++) I[k] = _mm256_setzero_si256();
        const uint8_t *cp[4];
        _Pragma("GCC unroll 4")
        for (int p = 0; p < NP; p++) cp[p] = pv->codes + (size_t)(p0 + p) * pv->stride + (size_t)g * NC * 32;
        _Pragma("GCC unroll 32")
        for (int c = 0; c < NC; c++) {
            const int a = c % NA;
            const size_t col = (size_t)g * G + (size_t)c * CH;
            __m256i xb[4], xh[4];
            _Pragma("GCC unroll 4")
            for (int j = 0; j < NV; j++) {
                xb[j] = _mm256_set1_epi32(q_ld32(xs[j]->q + col));
                if (q4) xh[j] = _mm256_set1_epi32(q_ld32(xs[j]->q + col + 4));
            }
            _Pragma("GCC unroll 4")
            for (int p = 0; p < NP; p++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(cp[p] + 32 * c));
                if (q4) {
                    __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    _Pragma("GCC unroll 4")
                    for (int j = 0; j < NV; j++) {
                        const int k = (p * NV + j) * NA + a;
                        I[k] = Q_DOT4(Q_DOT4(I[k], lo, xb[j]), hi, xh[j]);
                    }
                } else {
                    _Pragma("GCC unroll 4")
                    for (int j = 0; j < NV; j++) {
                        const int k = (p * NV + j) * NA + a;
                        I[k] = Q_DOT8(I[k], v, xb[j]);
                    }
                }
            }
        }
        _Pragma("GCC unroll 4")
        for (int p = 0; p < NP; p++) {
            const size_t at = ((size_t)(p0 + p) * NG + g) * KERN_PANEL_ROWS;
            const __m256 s = _mm256_loadu_ps(pv->scales + at), b = _mm256_loadu_ps(pv->biases + at);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < NV; j++) {
                const int k = (p * NV + j) * NA;
                __m256i Is = I[k];
                _Pragma("GCC unroll 4")
                for (int a = 1; a < NA; a++) Is = _mm256_add_epi32(Is, I[k + a]);
                if (!q4 && Q8_OFFSET) Is = _mm256_add_epi32(Is, _mm256_set1_epi32(Q8_OFFSET * xs[j]->sq[g]));
                __m256 sd = _mm256_mul_ps(s, _mm256_set1_ps(xs[j]->d[g]));
                acc[p * NV + j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Is), sd, acc[p * NV + j]);
                acc[p * NV + j] = _mm256_fmadd_ps(b, _mm256_set1_ps(xs[j]->s[g]), acc[p * NV + j]);
            }
        }
    }
    _Pragma("GCC unroll 4")
    for (int p = 0; p < NP; p++) {
        const int32_t r0 = (p0 + p) * KERN_PANEL_ROWS, nr = R - r0 < 8 ? R - r0 : 8;
        _Pragma("GCC unroll 4")
        for (int j = 0; j < NV; j++) {
            float *dst = y + (size_t)j * (size_t)R + (size_t)r0;
            if (nr == 8) {
                _mm256_storeu_ps(dst, acc[p * NV + j]);
            } else {
                float t[8];
                _mm256_storeu_ps(t, acc[p * NV + j]);
                memcpy(dst, t, (size_t)nr * sizeof *t);
            }
        }
    }
}

/* Every panel against nv <= 4 vectors: blocks of NP panels (the tail one
 * at a time), NP and NA chosen per nv to keep 8 or more dot chains within
 * the registers. */
static inline __attribute__((always_inline)) void
q_panels(const qmat *w, const kern_qx *const *xs, int nv, float *y, int q4, int32_t G) {
    const kern_panel pv = kern_panel_view(w);
    const int32_t NPn = (w->rows + KERN_PANEL_ROWS - 1) / KERN_PANEL_ROWS;
    int32_t p = 0;
    switch (nv) {
    case 1: for (; p + 4 <= NPn; p += 4) ptile(w, &pv, p, xs, 4, 1, 2, y, q4, G); break;
    case 2: for (; p + 2 <= NPn; p += 2) ptile(w, &pv, p, xs, 2, 2, 2, y, q4, G); break;
    case 3: for (; p + 2 <= NPn; p += 2) ptile(w, &pv, p, xs, 2, 3, 2, y, q4, G); break;
    default: for (; p + 2 <= NPn; p += 2) ptile(w, &pv, p, xs, 2, 4, 1, y, q4, G); break;
    }
    for (; p < NPn; p++) switch (nv) {
        case 1: ptile(w, &pv, p, xs, 1, 1, 4, y, q4, G); break;
        case 2: ptile(w, &pv, p, xs, 1, 2, 4, y, q4, G); break;
        case 3: ptile(w, &pv, p, xs, 1, 3, 2, y, q4, G); break;
        default: ptile(w, &pv, p, xs, 1, 4, 2, y, q4, G); break;
        }
}

/* The three table entries over qtile; every non-fast shape takes the
 * reference (kern_q_fast). Q_VARIANTS(call) expands call(q4, G) once per
 * type and group, so each gets its own constant-folded loops. */
#define Q_VARIANTS(w, call)                                          \
    switch ((w)->group * 2 + ((w)->type == QT_Q4)) {                 \
    case 64: call(0, 32); break;                                     \
    case 65: call(1, 32); break;                                     \
    case 128: call(0, 64); break;                                    \
    case 129: call(1, 64); break;                                    \
    case 256: call(0, 128); break;                                   \
    default: call(1, 128); break;                                    \
    }

static inline __attribute__((always_inline)) void
q_rows(const qmat *w, const int32_t *rows, int n, const kern_qx *qx, float *y, int q4, int32_t G) {
    const kern_qx *xs[1] = {qx};
    int i = 0;
    for (; i + 4 <= n; i += 4) qtile(w, rows + i, xs, 4, 1, y + i, q4, G);
    for (; i < n; i++) qtile(w, rows + i, xs, 1, 1, y + i, q4, G);
}

static void q_matvec(const qmat *w, const float *x, float *y) {
    if (!kern_q_fast(w)) {
        kern_matvec_ref(w, x, y);
        return;
    }
    kern_qx qx;
    if (w->panel) {
        const kern_qx *xs[1] = {&qx};
        kern_quant_x_avx2(x, w->cols, w->group, 0, &qx);
#define Q_CALL(q4, G) q_panels(w, xs, 1, y, q4, G)
        Q_VARIANTS(w, Q_CALL)
#undef Q_CALL
        return;
    }
    kern_quant_x_avx2(x, w->cols, w->group, w->type == QT_Q4, &qx);
    int32_t rows[64];
    for (int32_t r0 = 0; r0 < w->rows; r0 += 64) {
        int n = w->rows - r0 < 64 ? w->rows - r0 : 64;
        for (int i = 0; i < n; i++) rows[i] = r0 + i;
#define Q_CALL(q4, G) q_rows(w, rows, n, &qx, y + r0, q4, G)
        Q_VARIANTS(w, Q_CALL)
#undef Q_CALL
    }
}

static void q_dot_rows(const qmat *w, const int32_t *rows, int n, const float *x, float *y) {
    if (!kern_q_fast(w)) {
        kern_dot_rows_ref(w, rows, n, x, y);
        return;
    }
    kern_qx qx;
    kern_quant_x_avx2(x, w->cols, w->group, w->type == QT_Q4, &qx);
    if (w->data) {
#define Q_CALL(q4, G) q_rows(w, rows, n, &qx, y, q4, G)
        Q_VARIANTS(w, Q_CALL)
#undef Q_CALL
        return;
    }
    /* Panel form only (a model file stored so): 4 rows at a time read back
     * into the stored form (kern_panel_row, exact), then the same loops, so
     * the same sums bit for bit as from the stored file. */
    enum { NB = 4 };
    uint8_t codes[NB * KERN_QX_MAX_COLS];
    float sc[NB * KERN_QX_MAX_GROUPS], bi[NB * KERN_QX_MAX_GROUPS];
    const int32_t NG = w->cols / w->group, at[NB] = {0, 1, 2, 3};
    const size_t rb = quant_row_bytes(w->type == QT_Q4 ? 4 : 8, w->cols);
    qmat lw = *w;
    lw.data = codes;
    lw.scales = sc;
    lw.biases = bi;
    lw.panel = NULL;
    for (int i = 0; i < n; i += NB) {
        const int nb = n - i < NB ? n - i : NB;
        for (int j = 0; j < nb; j++)
            kern_panel_row(w, rows[i + j], codes + (size_t)j * rb, sc + (size_t)j * NG, bi + (size_t)j * NG);
        lw.rows = nb;
#define Q_CALL(q4, G) q_rows(&lw, at, nb, &qx, y + i, q4, G)
        Q_VARIANTS(w, Q_CALL)
#undef Q_CALL
    }
}

/* One row against nv <= 4 vectors, for every row: the matrix is streamed
 * once per block of 4 vectors (N <= 4 for the beams: once). */
static inline __attribute__((always_inline)) void
q_matmat_block(const qmat *w, const kern_qx *const *xs, int nv, float *y, int q4, int32_t G) {
    const int64_t R = w->rows;
    for (int32_t r = 0; r < w->rows; r++) {
        float o[4];
        switch (nv) {
        case 1: qtile(w, &r, xs, 1, 1, o, q4, G); break;
        case 2: qtile(w, &r, xs, 1, 2, o, q4, G); break;
        case 3: qtile(w, &r, xs, 1, 3, o, q4, G); break;
        default: qtile(w, &r, xs, 1, 4, o, q4, G); break;
        }
        for (int j = 0; j < nv; j++) y[j * R + r] = o[j];
    }
}

static void q_matmat(const qmat *w, const float *x, int n, float *y) {
    if (!kern_q_fast(w)) {
        kern_matmat_ref(w, x, n, y);
        return;
    }
    kern_qx qx[4];
    const kern_qx *xs[4] = {&qx[0], &qx[1], &qx[2], &qx[3]};
    const int64_t R = w->rows, C = w->cols;
    for (int i = 0; i < n; i += 4) {
        int nv = n - i < 4 ? n - i : 4;
        const int order = w->type == QT_Q4 && !w->panel;
        for (int j = 0; j < nv; j++) kern_quant_x_avx2(x + (i + j) * C, w->cols, w->group, order, &qx[j]);
        if (w->panel) {
            /* rows of y for vectors i.. : y + i * R, row stride R */
#define Q_CALL(q4, G) q_panels(w, xs, nv, y + i * R, q4, G)
            Q_VARIANTS(w, Q_CALL)
#undef Q_CALL
            continue;
        }
#define Q_CALL(q4, G) q_matmat_block(w, xs, nv, y + i * R, q4, G)
        Q_VARIANTS(w, Q_CALL)
#undef Q_CALL
    }
}
