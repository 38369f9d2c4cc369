/* quant.c - group-wise affine quantization of f32 matrices to q8/q4 and the
 * reference dequantization (formats and error bound: quant.h).
 *
 * Built like kern_ref.c: -std=c11 without ISA flags, so no FMA contraction
 * and the same bytes on every machine.
 *
 * Shape letters: R rows, C columns, G weights per group. */
#include "kern/quant.h"

#include <math.h>
#include <string.h>

#include "util/err.h"

laya_status quant_quantize(const float *w, int32_t R, int32_t C, int bits, int32_t G,
                           uint8_t *q, float *scales, float *biases, char *err, size_t errlen) {
    if (!w || !q || !scales || !biases || R < 0 || C < 0)
        return err_set(err, errlen, LAYA_ERR_ARG, "quant_quantize: missing buffer or negative shape");
    if (!quant_params_ok(bits, G))
        return err_set(err, errlen, LAYA_ERR_ARG, "quantization %d bits, group %d: expected 4 or 8 bits "
                       "and a group of 32, 64 or 128", bits, (int)G);
    if (C % G)
        return err_set(err, errlen, LAYA_ERR_ARG, "%d columns are not a multiple of the group %d: "
                       "use a group that divides them", (int)C, (int)G);
    const int32_t Q = bits == 8 ? QUANT_Q8_MAX : QUANT_Q4_MAX, NG = C / G;
    const size_t rb = quant_row_bytes(bits, C);
    for (int32_t r = 0; r < R; r++) {
        const float *row = w + (size_t)r * (size_t)C;
        uint8_t *qr = q + (size_t)r * rb;
        if (bits == 4) memset(qr, 0, rb);
        for (int32_t g = 0; g < NG; g++) {
            const float *p = row + (size_t)g * (size_t)G;
            float lo = p[0], hi = p[0];
            for (int32_t i = 0; i < G; i++) {
                if (!isfinite(p[i]))
                    return err_set(err, errlen, LAYA_ERR_ARG, "weight (%d, %d) = %g is not finite",
                                   (int)r, (int)(g * G + i), (double)p[i]);
                lo = p[i] < lo ? p[i] : lo;
                hi = p[i] > hi ? p[i] : hi;
            }
            float s = (hi - lo) / (float)Q;
            if (!isfinite(s))
                return err_set(err, errlen, LAYA_ERR_ARG, "row %d group %d: range [%g, %g] overflows f32",
                               (int)r, (int)g, (double)lo, (double)hi);
            scales[(size_t)r * NG + g] = s;
            biases[(size_t)r * NG + g] = lo;
            for (int32_t i = 0; i < G; i++) {
                /* (p - lo) / s is in [0, Q] up to rounding; the clamp keeps it there */
                float t = s > 0 ? roundf((p[i] - lo) / s) : 0.0f;
                int32_t v = t < 0 ? 0 : t > (float)Q ? Q : (int32_t)t;
                int32_t c = g * G + i;
                if (bits == 8) qr[c] = (uint8_t)v;
                else qr[c / 2] |= (uint8_t)(v << (4 * (c & 1)));
            }
        }
    }
    return LAYA_OK;
}

void quant_dequantize(const qmat *m, float *out) {
    for (int32_t r = 0; r < m->rows; r++) kern_row_f32(m, r, out + (size_t)r * (size_t)m->cols);
}
