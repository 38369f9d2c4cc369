/* kern_impl.h - what the kernel files share with each other (kern_ref.c,
 * kern_avx2.c, kern_avx512.c, kern_dispatch.c). Other modules use kern.h.
 *
 * Adding a weight type: give row_dot_ref/kern_row_f32 in kern_ref.c
 * a case (the specification), then optionally a vector loop in the per-ISA
 * files; until a per-ISA file handles a type its table functions fall back to
 * the _ref function for it, so every table is always complete.
 *
 * Shape letters: R rows, C columns, N vectors. */
#ifndef LAYA_KERN_IMPL_H
#define LAYA_KERN_IMPL_H

#include <string.h>

#include "kern/kern.h"
#include "util/topk.h"

/* The scalar references: the specification of every table entry. They
 * accumulate in f32 in column order, without FMA contraction. */
void kern_matvec_ref(const qmat *w, const float *x, float *y);
void kern_matmat_ref(const qmat *w, const float *x, int n, float *y);
void kern_dot_rows_ref(const qmat *w, const int32_t *rows, int n, const float *x, float *y);
void kern_gru_gates_ref(int H, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                        float *h);
/* The reference gates for units i0..H-1 only (the vector versions' tail). */
void kern_gru_gates_span(int H, int i0, const float *gi, const float *gh, const float *b_ih,
                         const float *b_hh, float *h);
void kern_logit_mass_ref(const float *lg, const float *w, const float *e, const float *f, int n, float *mx,
                         double *z, double *ze, double *zf);
/* Adds the reference's terms i0..n-1 (given the max m) to *z, *ze and *zf:
 * the reference's sum, and the vector versions' tail. */
void kern_logit_mass_span(const float *lg, const float *w, const float *e, const float *f, int i0, int n, float m,
                          double *z, double *ze, double *zf);
int kern_logit_top_ref(const float *lg, const float *g, int n, int k, int32_t *ids, float *vals);
static inline int kern_float_beats(const void *x, const void *y) {
    return *(const float *)x > *(const float *)y;
}
/* Inserts (i, v) into the sorted list ids/vals of *nt <= k entries (the
 * reference's step; the vector versions call it for every lane that beats
 * the current k-th value): topk_insert on vals, and ids moved alike. A full
 * list takes only a v greater than its last (a NaN never); a filling one
 * takes anything. */
static inline void kern_top_insert(int32_t i, float v, int k, int *nt, int32_t *ids, float *vals) {
    int j = topk_insert(vals, sizeof *vals, nt, k, &v, kern_float_beats);
    if (j < 0) return;
    memmove(ids + j + 1, ids + j, (size_t)(*nt - 1 - j) * sizeof *ids);
    ids[j] = i;
}
/* The 8-lane top-k (kern_avx2.c), shared by the avx2 and avx512 tables. */
int kern_logit_top_avx2(const float *lg, const float *g, int n, int k, int32_t *ids, float *vals);
/* The 8-lane logit mass (kern_avx2.c), shared by the avx2 and avx512 tables. */
void kern_logit_mass_avx2(const float *lg, const float *w, const float *e, const float *f, int n, float *mx,
                          double *z, double *ze, double *zf);
/* The 8-lane gates (kern_avx2.c), shared by the avx2 and avx512 tables. */
void kern_gru_gates_avx2(int H, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                         float *h);

/* ---- q8/q4: the activation side of the integer kernels ----
 *
 * The per-ISA q8/q4 kernels quantize x once per call, per group of G
 * columns (the weights' groups): d = max|x| / 127, xq = x * (1/d) rounded
 * to nearest (ties to even) in -127..127 (0 where d = 0), so |x - d*xq| <=
 * d/2 (plus an ulp of the product). Each group's integer dot
 * I = sum q*xq is then exact (int32), and a row is
 *     y = sum_g [ s_g * d_g * I_g + b_g * sx_g ],   sx_g = sum x (f32),
 * which differs from the f32 reference (kern_ref.c) only through xq:
 *     |y - y_ref| <= sum_g s_g * sum_c q_c * |x_c - d_g xq_c|   (+ f32 rounding)
 * (tests/test_quant.c checks exactly this bound). q4_order stores, within
 * each block of P = min(G, 64) columns, the even columns then the odd ones:
 * the order in which a q4 block's low and high nibbles unpack.
 * Columns beyond KERN_QX_MAX_COLS (H is at most 4096) take the reference. */
enum { KERN_QX_MAX_COLS = 4096, KERN_QX_MAX_GROUPS = KERN_QX_MAX_COLS / 32 };
typedef struct {
    int8_t q[KERN_QX_MAX_COLS] __attribute__((aligned(64)));  /* (C) */
    float d[KERN_QX_MAX_GROUPS];                              /* (C/G) */
    float s[KERN_QX_MAX_GROUPS];                              /* (C/G) */
    int32_t sq[KERN_QX_MAX_GROUPS];                           /* (C/G) sum of xq */
} kern_qx;
void kern_quant_x(const float *x, int32_t C, int32_t G, int q4_order, kern_qx *out);
/* The same, bit for bit, 8 lanes at a time (kern_avx2.c; the q4 order takes
 * kern_quant_x). The per-ISA q8/q4 kernels quantize x with it. */
void kern_quant_x_avx2(const float *x, int32_t C, int32_t G, int q4_order, kern_qx *out);

/* Row r of a q8/q4 matrix as the kernels read it: codes (the stored row),
 * scales and biases (C/G each), pointing into the stored form, or, for a
 * matrix held only in panel form (data NULL), into buf, where the row is
 * read back (kern_panel_row). Such a matrix always has a fast shape
 * (kern_q_fast: C <= KERN_QX_MAX_COLS, G >= 32), which buf is sized for. */
typedef struct {
    uint8_t codes[KERN_QX_MAX_COLS];
    float scales[KERN_QX_MAX_GROUPS], biases[KERN_QX_MAX_GROUPS];
} kern_qrow_buf;
void kern_q_row(const qmat *w, int32_t r, kern_qrow_buf *buf, const uint8_t **codes, const float **scales,
                const float **biases);

/* 1 if w is q8/q4 with a group of 32/64/128 dividing C <= KERN_QX_MAX_COLS. */
static inline int kern_q_fast(const qmat *w) {
    return (w->type == QT_Q8 || w->type == QT_Q4) && (w->group == 32 || w->group == 64 ||
           w->group == 128) && w->cols % w->group == 0 && w->cols <= KERN_QX_MAX_COLS;
}

/* Weight code c of a q8 (q4 = 0) or q4 (q4 = 1, low nibble first) row
 * (quant.h): the one reading of the stored layout. */
static inline uint32_t kern_qcode(const uint8_t *row, size_t c, int q4) {
    return q4 ? (row[c / 2] >> (4 * (c & 1))) & 15u : row[c];
}

/* A matrix's panel block (kern.h) cut into its parts: panel p's codes at
 * codes + p * stride, its scales and biases at (p * NG + g) * 8. */
typedef struct {
    const uint8_t *codes;
    size_t stride;
    const float *scales, *biases;
} kern_panel;
kern_panel kern_panel_view(const qmat *w);

/* The AVX2 q8/q4 entries, which the AVX-512 table also uses on a CPU
 * without VNNI. */
void kern_q_matvec_avx2(const qmat *w, const float *x, float *y);
void kern_q_matmat_avx2(const qmat *w, const float *x, int n, float *y);
void kern_q_dot_rows_avx2(const qmat *w, const int32_t *rows, int n, const float *x, float *y);

extern const kern_table kern_table_ref;
extern const kern_table kern_table_avx2;    /* needs AVX2, FMA, F16C */
extern const kern_table kern_table_avx512;  /* needs AVX-512 F, BW, VL, DQ */

/* CPU features usable by this process (CPUID and the OS-enabled state in
 * XCR0 from XGETBV both agree). */
enum { KERN_CPU_AVX2 = 1u, KERN_CPU_AVX512 = 2u, KERN_CPU_AVX512_VNNI = 4u };
unsigned kern_cpu_features(void);
/* kern_get's choice for a CPU with features: the table called name (the
 * LAYA_KERN override) when it is known and those features allow it, else
 * the best they allow. An unknown or unusable name (or NULL) is ignored,
 * never an error: the library does not fail or print over it. */
const kern_table *kern_pick(unsigned features, const char *name);

#endif
