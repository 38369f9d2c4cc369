/* kern_ref.c - the scalar reference kernels: the specification of what every
 * per-ISA table computes. Plain loops, f32 accumulation in column order, no
 * FMA contraction (built with -std=c11, which implies -ffp-contract=off, and
 * without ISA flags), so the result is exactly reproducible.
 *
 * Shape letters: R rows, C columns, N vectors. */
#include "kern/kern_impl.h"
#include "kern/quant.h"

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
    /* q8/q4 (quant.h), factored per group g as every kernel computes it:
     *   sum_c (s q_c + b) x_c = s * sum_c q_c x_c + b * sum_c x_c
     * (equal in exact arithmetic; in f32 the factored form rounds less). */
    const int32_t G = w->group, NG = w->cols / G;
    const int q4 = w->type == QT_Q4;
    kern_qrow_buf buf;
    const uint8_t *row;
    const float *s, *b;
    kern_q_row(w, r, &buf, &row, &s, &b);
    for (int32_t g = 0; g < NG; g++) {
        float a = 0.0f, sx = 0.0f;
        for (int32_t i = 0; i < G; i++) {
            size_t c = (size_t)g * G + i;
            a += (float)kern_qcode(row, c, q4) * x[c];
            sx += x[c];
        }
        acc += s[g] * a + b[g] * sx;
    }
    return acc;
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
    const int q4 = w->type == QT_Q4;
    kern_qrow_buf buf;
    const uint8_t *row;
    const float *s, *b;
    kern_q_row(w, r, &buf, &row, &s, &b);
    for (size_t c = 0; c < C; c++) {
        size_t g = c / (size_t)w->group;
        out[c] = s[g] * (float)kern_qcode(row, c, q4) + b[g];
    }
}

void kern_q_row(const qmat *w, int32_t r, kern_qrow_buf *buf, const uint8_t **codes, const float **scales,
                const float **biases) {
    const int32_t NG = w->cols / w->group;
    if (!w->data) {
        kern_panel_row(w, r, buf->codes, buf->scales, buf->biases);
        *codes = buf->codes;
        *scales = buf->scales;
        *biases = buf->biases;
        return;
    }
    *codes = (const uint8_t *)w->data + (size_t)r * quant_row_bytes(w->type == QT_Q4 ? 4 : 8, w->cols);
    *scales = w->scales + (size_t)r * NG;
    *biases = w->biases + (size_t)r * NG;
}

void kern_quant_x(const float *x, int32_t C, int32_t G, int q4_order, kern_qx *out) {
    const int32_t NG = C / G, P = G < 64 ? G : 64;
    for (int32_t g = 0; g < NG; g++) {
        const float *p = x + (size_t)g * G;
        float amax = 0.0f, sx = 0.0f;
        for (int32_t i = 0; i < G; i++) {
            float a = fabsf(p[i]);
            amax = a > amax ? a : amax;  /* a NaN is skipped here but reaches y through sx */
            sx += p[i];
        }
        float d = amax / 127.0f, inv = amax > 0 ? 1.0f / d : 0.0f;
        int32_t sq = 0;
        for (int32_t i = 0; i < G; i++) {
            float t = p[i] * inv;
            t = t > 127.0f ? 127.0f : t < -127.0f ? -127.0f : t;
            /* round to nearest, ties to even: adding 1.5*2^23 leaves no fraction
             * bits (|t| <= 127), exact in one f32 add; no libm call */
            int32_t v = t == t ? (int32_t)((t + 0x1.8p23f) - 0x1.8p23f) : 0;
            /* q4_order: column i of a block of P sits at i/2, or P/2 + i/2 if odd */
            int32_t at = !q4_order ? i : i / P * P + (i % P) / 2 + (i & 1) * (P / 2);
            out->q[g * G + at] = (int8_t)v;
            sq += v;
        }
        out->d[g] = d;
        out->s[g] = sx;
        out->sq[g] = sq;
    }
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

static float sigmoid_ref(float a) { return 1.0f / (1.0f + expf(-a)); }

void kern_gru_gates_span(int H, int i0, const float *gi, const float *gh, const float *b_ih,
                         const float *b_hh, float *h) {
    for (int i = i0; i < H; i++) {
        float r = sigmoid_ref(gi[i] + b_ih[i] + gh[i] + b_hh[i]);
        float z = sigmoid_ref(gi[H + i] + b_ih[H + i] + gh[H + i] + b_hh[H + i]);
        float n = tanhf(gi[2 * H + i] + b_ih[2 * H + i] + r * (gh[2 * H + i] + b_hh[2 * H + i]));
        h[i] = (1.0f - z) * n + z * h[i];
    }
}

void kern_gru_gates_ref(int H, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                        float *h) {
    kern_gru_gates_span(H, 0, gi, gh, b_ih, b_hh, h);
}

void kern_logit_mass_ref(const float *lg, const float *w, const float *e, const float *f, int n, float *mx,
                         double *z, double *ze, double *zf) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++) {
        float v = w[i] > 0 ? lg[i] : -INFINITY;
        m = v > m ? v : m;
    }
    *mx = m;
    *z = *ze = *zf = 0;
    kern_logit_mass_span(lg, w, e, f, 0, n, m, z, ze, zf);
}

void kern_logit_mass_span(const float *lg, const float *w, const float *e, const float *f, int i0, int n, float m,
                          double *z, double *ze, double *zf) {
    for (int i = i0; i < n; i++) {
        float d = lg[i] - m;
        if (!(d > -40.0f)) continue;
        float x = expf(d);
        *z += (double)(w[i] * x);
        *ze += (double)(e[i] * x);
        *zf += (double)(f[i] * x);
    }
}

int kern_logit_top_ref(const float *lg, const float *g, int n, int k, int32_t *ids, float *vals) {
    int nt = 0;
    if (k <= 0) return 0;
    for (int i = 0; i < n; i++)
        if (g[i] > 0) kern_top_insert(i, lg[i], k, &nt, ids, vals);
    return nt;
}

const kern_table kern_table_ref = {
    .name = "ref",
    .matvec = kern_matvec_ref,
    .matmat = kern_matmat_ref,
    .dot_rows = kern_dot_rows_ref,
    .gru_gates = kern_gru_gates_ref,
    .logit_mass = kern_logit_mass_ref,
    .logit_top = kern_logit_top_ref,
};
