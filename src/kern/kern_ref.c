/* kern_ref.c - the scalar reference kernels: the specification of what every
 * per-ISA table computes. Plain loops, f32 accumulation in column order, no
 * FMA contraction (built with -std=c11, which implies -ffp-contract=off, and
 * without ISA flags), so the result is exactly reproducible.
 *
 * Shape letters: R rows, C columns, N vectors. */
#include "kern/kern_impl.h"

#include <math.h>
#include <string.h>

/* W[r] . x for one row: the one place that knows how each type is stored. */
static float row_dot_ref(const qmat *w, int32_t r, const float *x) {
    const size_t C = (size_t)w->cols;
    float acc = 0.0f;
    switch (w->type) {
    case QT_F32: {
        const float *row = (const float *)w->data + (size_t)r * C;
        for (size_t c = 0; c < C; c++) acc += row[c] * x[c];
        return acc;
    }
    case QT_F16: {
        const uint16_t *row = (const uint16_t *)w->data + (size_t)r * C;
        for (size_t c = 0; c < C; c++) acc += kern_f16_to_f32(row[c]) * x[c];
        return acc;
    }
    case QT_Q8:
    case QT_Q4:
        break;
    }
    /* q8/q4 belong to the quantize module; no loader constructs them until
     * it lands, and a NaN makes any premature use loud. */
    return NAN;
}

void kern_row_f32(const qmat *w, int32_t r, float *out) {
    const size_t C = (size_t)w->cols;
    switch (w->type) {
    case QT_F32:
        memcpy(out, (const float *)w->data + (size_t)r * C, C * sizeof *out);
        return;
    case QT_F16: {
        const uint16_t *row = (const uint16_t *)w->data + (size_t)r * C;
        for (size_t c = 0; c < C; c++) out[c] = kern_f16_to_f32(row[c]);
        return;
    }
    case QT_Q8:
    case QT_Q4:
        break;
    }
    for (size_t c = 0; c < C; c++) out[c] = NAN;
}

void kern_matvec_ref(const qmat *w, const float *x, float *y) {
    for (int32_t r = 0; r < w->rows; r++) y[r] = row_dot_ref(w, r, x);
}

void kern_matmat_ref(const qmat *w, const float *x, int n, float *y) {
    const size_t R = (size_t)w->rows, C = (size_t)w->cols;
    for (int i = 0; i < n; i++)
        for (int32_t r = 0; r < w->rows; r++)
            y[(size_t)i * R + (size_t)r] = row_dot_ref(w, r, x + (size_t)i * C);
}

void kern_dot_rows_ref(const qmat *w, const int32_t *rows, int n, const float *x, float *y) {
    for (int i = 0; i < n; i++) y[i] = row_dot_ref(w, rows[i], x);
}

const kern_table kern_table_ref = {
    .name = "ref",
    .matvec = kern_matvec_ref,
    .matmat = kern_matmat_ref,
    .dot_rows = kern_dot_rows_ref,
};
