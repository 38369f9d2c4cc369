/* kern_f_tmpl.h - the f32/f16 loop nests, included once by kern_avx2.c and
 * once by kern_avx512.c, each after defining INLINE and its vector
 * primitives over one row p of C weights (f16: p holds binary16):
 *
 *   dot1(p, x, C, f16) -> float          one row . x
 *   dot4(p0, p1, p2, p3, x, C, out, f16)  four rows . x (their cache misses overlap)
 *   row4(p, x0, x1, x2, x3, C, out, f16)  one row . four vectors (each weight loaded once)
 *
 * Shape letters: R rows, C columns, N vectors. */
#ifndef KERN_F_TMPL_H
#define KERN_F_TMPL_H
#else
#error "kern_f_tmpl.h is included once per ISA file"
#endif

INLINE const void *row_at(const qmat *w, int64_t r, int f16) {
    return f16 ? (const void *)((const uint16_t *)w->data + r * w->cols)
               : (const void *)((const float *)w->data + r * w->cols);
}

INLINE void matvec_t(const qmat *w, const float *x, float *y, int f16) {
    const int64_t R = w->rows, C = w->cols;
    int64_t r = 0;
    for (; r + 4 <= R; r += 4)
        dot4(row_at(w, r, f16), row_at(w, r + 1, f16), row_at(w, r + 2, f16),
             row_at(w, r + 3, f16), x, C, y + r, f16);
    for (; r < R; r++) y[r] = dot1(row_at(w, r, f16), x, C, f16);
}

/* N vectors: one pass over the rows, four vectors at a time per row, so
 * the matrix is streamed from memory once for all of them. */
INLINE void matmat_t(const qmat *w, const float *x, int n, float *y, int f16) {
    const int64_t R = w->rows, C = w->cols;
    for (int64_t r = 0; r < R; r++) {
        const void *p = row_at(w, r, f16);
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            float o[4];
            row4(p, x + i * C, x + (i + 1) * C, x + (i + 2) * C, x + (i + 3) * C, C, o, f16);
            for (int j = 0; j < 4; j++) y[(i + j) * R + r] = o[j];
        }
        for (; i < n; i++) y[i * R + r] = dot1(p, x + i * C, C, f16);
    }
}

/* Rows in fours: the scattered rows' cache misses overlap. */
INLINE void dot_rows_t(const qmat *w, const int32_t *rows, int n, const float *x, float *y,
                       int f16) {
    int i = 0;
    for (; i + 4 <= n; i += 4)
        dot4(row_at(w, rows[i], f16), row_at(w, rows[i + 1], f16), row_at(w, rows[i + 2], f16),
             row_at(w, rows[i + 3], f16), x, w->cols, y + i, f16);
    for (; i < n; i++) y[i] = dot1(row_at(w, rows[i], f16), x, w->cols, f16);
}
