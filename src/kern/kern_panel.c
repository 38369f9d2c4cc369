/* kern_panel.c - the panel form of q8/q4 matrices (kern.h): the layout's
 * one definition, written from the row-major stored form at model load.
 * Plain C, no ISA flags: packing runs once per matrix, not per keystroke;
 * kern_panel_row reads one row back (the embedding lookup and the logits of
 * listed tokens of a model stored in panel form).
 *
 * Shape letters: R rows, C columns, G group, NG = C/G groups, NP panels. */
#include "kern/kern_impl.h"
#include "kern/quant.h"

#include <string.h>

enum { PR = KERN_PANEL_ROWS };

/* The three parts of a panel block (kern_impl.h: kern_panel_view). */
kern_panel kern_panel_view(const qmat *w) {
    const int32_t NP = (w->rows + PR - 1) / PR, NG = w->cols / w->group;
    const size_t rb = quant_row_bytes(w->type == QT_Q4 ? 4 : 8, w->cols);
    const uint8_t *p = w->panel;
    kern_panel v = {.codes = p, .stride = PR * rb};
    v.scales = (const float *)(const void *)(p + (size_t)NP * v.stride);
    v.biases = v.scales + (size_t)NP * NG * PR;
    return v;
}

size_t kern_panel_bytes(const qmat *w) {
    if (!kern_q_fast(w) || w->cols % 8) return 0;
    const size_t NP = (size_t)(w->rows + PR - 1) / PR, NG = (size_t)(w->cols / w->group);
    return NP * PR * (quant_row_bytes(w->type == QT_Q4 ? 4 : 8, w->cols) + 2 * NG * sizeof(float));
}

void kern_panel_write_row(const qmat *w, int32_t r, const uint8_t *row, const float *scales, const float *biases,
                          void *mem) {
    const int q4 = w->type == QT_Q4;
    const int32_t C = w->cols, NG = C / w->group;
    qmat v = *w;
    v.panel = mem;
    kern_panel pv = kern_panel_view(&v);
    uint8_t *codes = mem;
    float *sc = (float *)(uintptr_t)pv.scales, *bi = (float *)(uintptr_t)pv.biases;
    const int32_t p = r / PR, lane = r % PR;
    uint8_t *dst = codes + (size_t)p * pv.stride + 4 * (size_t)lane;
    if (!q4) {
        /* quad k of the row -> bytes 32k + 4 lane .. +3 of the panel */
        for (int32_t k = 0; k < C / 4; k++) memcpy(dst + 32 * (size_t)k, row + 4 * (size_t)k, 4);
    } else {
        /* octet k: column 8k+j in the low nibble, 8k+4+j in the high */
        for (int32_t k = 0; k < C / 8; k++)
            for (int j = 0; j < 4; j++) {
                size_t c0 = 8 * (size_t)k + (size_t)j;
                dst[32 * (size_t)k + (size_t)j] =
                    (uint8_t)(kern_qcode(row, c0, 1) | kern_qcode(row, c0 + 4, 1) << 4);
            }
    }
    for (int32_t g = 0; g < NG; g++) {
        sc[((size_t)p * NG + g) * PR + lane] = scales[g];
        bi[((size_t)p * NG + g) * PR + lane] = biases[g];
    }
}

void kern_panel_pack(const qmat *w, void *mem) {
    const int32_t NG = w->cols / w->group;
    const size_t rb = quant_row_bytes(w->type == QT_Q4 ? 4 : 8, w->cols);
    memset(mem, 0, kern_panel_bytes(w));
    for (int32_t r = 0; r < w->rows; r++)
        kern_panel_write_row(w, r, (const uint8_t *)w->data + (size_t)r * rb, w->scales + (size_t)r * NG,
                             w->biases + (size_t)r * NG, mem);
}

void kern_panel_row(const qmat *w, int32_t r, uint8_t *codes, float *scales, float *biases) {
    const int q4 = w->type == QT_Q4;
    const int32_t C = w->cols, NG = C / w->group, p = r / PR, lane = r % PR;
    const kern_panel pv = kern_panel_view(w);
    const uint8_t *src = pv.codes + (size_t)p * pv.stride + 4 * (size_t)lane;
    if (!q4) {
        for (int32_t k = 0; k < C / 4; k++) memcpy(codes + 4 * (size_t)k, src + 32 * (size_t)k, 4);
    } else {
        /* octet k: byte j holds column 8k+j (low) and 8k+4+j (high); the
         * stored row's byte 4k+i holds columns 8k+2i (low) and 8k+2i+1 */
        for (int32_t k = 0; k < C / 8; k++) {
            const uint8_t *b = src + 32 * (size_t)k;
            for (int i = 0; i < 4; i++) {
                const int c0 = 2 * i, c1 = 2 * i + 1;
                const unsigned lo = c0 < 4 ? b[c0] & 15u : b[c0 - 4] >> 4;
                const unsigned hi = c1 < 4 ? b[c1] & 15u : b[c1 - 4] >> 4;
                codes[4 * (size_t)k + (size_t)i] = (uint8_t)(lo | hi << 4);
            }
        }
    }
    for (int32_t g = 0; g < NG; g++) {
        scales[g] = pv.scales[((size_t)p * NG + g) * PR + lane];
        biases[g] = pv.biases[((size_t)p * NG + g) * PR + lane];
    }
}
