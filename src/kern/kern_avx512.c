/* kern_avx512.c - AVX-512 (F, BW, VL, DQ) vector loops for f32 and f16
 * weights. Built with the AVX-512 flags (Makefile); called only when
 * kern_cpu_features() reports AVX-512. Column tails use masked loads, so no
 * scalar tail loop. Results differ from kern_ref.c only by summation order
 * (16 lanes, FMA); tests/test_kern.c bounds the difference.
 *
 * Each loop is written once as an always-inline function of a constant
 * `f16` flag; the wrappers below instantiate it per type.
 *
 * Shape letters: R rows, C columns, N vectors. */
#include "kern/kern_impl.h"

#include <immintrin.h>
#include <string.h>

#include "kern/quant.h"

#define INLINE static inline __attribute__((always_inline))

/* 16 weights of row p starting at column c, as f32; m masks a short tail. */
INLINE __m512 ldw(const void *p, int64_t c, __mmask16 m, int f16) {
    if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + c));
    return _mm512_maskz_loadu_ps(m, (const float *)p + c);
}

INLINE __mmask16 tail_mask(int64_t C) {
    return (__mmask16)((1u << (C & 15)) - 1u);
}

/* out[0..4) = p0..p3 . x: four independent FMA chains sharing each load of x. */
INLINE void dot4(const void *p0, const void *p1, const void *p2, const void *p3,
                 const float *x, int64_t C, float *out, int f16) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const __mmask16 all = 0xFFFF;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16) {
        __m512 xv = _mm512_loadu_ps(x + c);
        a0 = _mm512_fmadd_ps(ldw(p0, c, all, f16), xv, a0);
        a1 = _mm512_fmadd_ps(ldw(p1, c, all, f16), xv, a1);
        a2 = _mm512_fmadd_ps(ldw(p2, c, all, f16), xv, a2);
        a3 = _mm512_fmadd_ps(ldw(p3, c, all, f16), xv, a3);
    }
    if (c < C) {
        __mmask16 m = tail_mask(C);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + c);
        a0 = _mm512_fmadd_ps(ldw(p0, c, m, f16), xv, a0);
        a1 = _mm512_fmadd_ps(ldw(p1, c, m, f16), xv, a1);
        a2 = _mm512_fmadd_ps(ldw(p2, c, m, f16), xv, a2);
        a3 = _mm512_fmadd_ps(ldw(p3, c, m, f16), xv, a3);
    }
    out[0] = _mm512_reduce_add_ps(a0);
    out[1] = _mm512_reduce_add_ps(a1);
    out[2] = _mm512_reduce_add_ps(a2);
    out[3] = _mm512_reduce_add_ps(a3);
}

/* One row . x with the very operations of one lane of dot4 and row4 (see
 * kern_avx2.c's dot1: the three kernels agree bit for bit). */
INLINE float dot1(const void *p, const float *x, int64_t C, int f16) {
    __m512 a0 = _mm512_setzero_ps();
    const __mmask16 all = 0xFFFF;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16)
        a0 = _mm512_fmadd_ps(ldw(p, c, all, f16), _mm512_loadu_ps(x + c), a0);
    if (c < C) {
        __mmask16 m = tail_mask(C);
        a0 = _mm512_fmadd_ps(ldw(p, c, m, f16), _mm512_maskz_loadu_ps(m, x + c), a0);
    }
    return _mm512_reduce_add_ps(a0);
}

/* One row against four vectors: each weight is loaded (and converted) once
 * and used four times; the row stays in L1 across the vector blocks, so the
 * matrix is streamed from memory once for all N vectors. */
INLINE void row4(const void *p, const float *x0, const float *x1, const float *x2,
                 const float *x3, int64_t C, float out[4], int f16) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const __mmask16 all = 0xFFFF;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16) {
        __m512 wv = ldw(p, c, all, f16);
        a0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x0 + c), a0);
        a1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x1 + c), a1);
        a2 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x2 + c), a2);
        a3 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x3 + c), a3);
    }
    if (c < C) {
        __mmask16 m = tail_mask(C);
        __m512 wv = ldw(p, c, m, f16);
        a0 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x0 + c), a0);
        a1 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x1 + c), a1);
        a2 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x2 + c), a2);
        a3 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x3 + c), a3);
    }
    out[0] = _mm512_reduce_add_ps(a0);
    out[1] = _mm512_reduce_add_ps(a1);
    out[2] = _mm512_reduce_add_ps(a2);
    out[3] = _mm512_reduce_add_ps(a3);
}

/* row_at, matvec_t, matmat_t, dot_rows_t over this file's dot1/dot4/row4 */
#include "kern/kern_f_tmpl.h"

/* ---- q8/q4 (kern_q_tmpl.h): vpdpbusd adds four u8*s8 products straight
 * into each int32 lane (no int16 step, no saturation), so q8 codes need no
 * offset. 256-bit vectors (AVX-512 VL): on Zen 4 a 512-bit op is two 256-bit
 * halves, and the 32-byte chunks match the q4 group of 64 exactly. Without
 * VNNI the table uses the AVX2 loops. */
static inline __m256i q_dot_vnni(__m256i acc, __m256i w, __m256i x) {
    return _mm256_dpbusd_epi32(acc, w, x);
}
#define Q_DOT4 q_dot_vnni
#define Q_DOT8 q_dot_vnni
#define Q8_OFFSET 0
#include "kern/kern_q_tmpl.h"

static int have_vnni(void) { return (kern_cpu_features() & KERN_CPU_AVX512_VNNI) != 0; }

static void matvec(const qmat *w, const float *x, float *y) {
    switch (w->type) {
    case QT_F32: matvec_t(w, x, y, 0); return;
    case QT_F16: matvec_t(w, x, y, 1); return;
    case QT_Q8: case QT_Q4: 
        if (have_vnni()) q_matvec(w, x, y);
        else kern_q_matvec_avx2(w, x, y);
        return;
    }
    kern_matvec_ref(w, x, y);
}

static void matmat(const qmat *w, const float *x, int n, float *y) {
    switch (w->type) {
    case QT_F32: matmat_t(w, x, n, y, 0); return;
    case QT_F16: matmat_t(w, x, n, y, 1); return;
    case QT_Q8: case QT_Q4: 
        if (have_vnni()) q_matmat(w, x, n, y);
        else kern_q_matmat_avx2(w, x, n, y);
        return;
    }
    kern_matmat_ref(w, x, n, y);
}

static void dot_rows(const qmat *w, const int32_t *rows, int n, const float *x, float *y) {
    switch (w->type) {
    case QT_F32: dot_rows_t(w, rows, n, x, y, 0); return;
    case QT_F16: dot_rows_t(w, rows, n, x, y, 1); return;
    case QT_Q8: case QT_Q4: 
        if (have_vnni()) q_dot_rows(w, rows, n, x, y);
        else kern_q_dot_rows_avx2(w, rows, n, x, y);
        return;
    }
    kern_dot_rows_ref(w, rows, n, x, y);
}

const kern_table kern_table_avx512 = {
    .name = "avx512",
    .matvec = matvec,
    .matmat = matmat,
    .dot_rows = dot_rows,
    .gru_gates = kern_gru_gates_avx2,  /* 8 lanes: the gates are a small share of a step */
    .logit_mass = kern_logit_mass_avx2,
    .logit_top = kern_logit_top_avx2,
};
