/* quant.h - the q8 and q4 weight formats (C4), defined once for C and CUDA.
 *
 * Group-wise affine quantization, as MLX does it: each row of an (R, C)
 * matrix is cut into C/G groups of G consecutive weights (G = 32, 64 or 128,
 * G divides C), and every group g has one f32 scale s and one f32 bias b:
 *
 *     w ~ deq(q) = s * q + b,   q in 0..2^bits - 1
 *
 * Storage (three planar arrays, as qmat in kern.h points to them and as the
 * model file stores them as three tensors):
 *   q8:  data (R, C) uint8, one weight per byte, row-major;
 *   q4:  data (R, C/2) uint8, two weights per byte, the LOW nibble first:
 *        byte k of a row holds column 2k in bits 0-3 and 2k+1 in bits 4-7;
 *   scales, biases: (R, C/G) f32 each.
 *
 * Why f32 scales and biases (MLX uses f16): with b = the group minimum and
 * s = (max - min) / (2^bits - 1) kept in f32, the bound |w - deq| <= s/2 holds
 * up to f32 rounding (a few ulps of max|w|); f16 would add |b| * 2^-11 to it,
 * which for q8 groups far from zero exceeds s/2 itself. The cost is 0.5 bit
 * per weight at G = 64 (q4: 5.0 instead of 4.5 bits per weight).
 *
 * Plain C99 with stdint only: nvcc compiles it as C++, hence QUANT_ASSERT. */
#ifndef LAYA_QUANT_H
#define LAYA_QUANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define QUANT_ASSERT(c, m) static_assert(c, m)
#else
#define QUANT_ASSERT(c, m) _Static_assert(c, m)
/* ---- quantizing and dequantizing (quant.c; host C only) ---- */
#ifndef __CUDACC__
#include "laya.h"
#include "kern/kern.h"

/* Quantizes the row-major f32 matrix w (R, C) to bits = 4 or 8 with groups
 * of G: q receives R * quant_row_bytes(bits, C) bytes, scales and biases
 * R * C/G floats each (all caller-owned). Per group, b = min, s = (max -
 * min) / (2^bits - 1), q = round((w - b) / s) (half away from zero), so
 *
 *     |w - (s*q + b)| <= s/2 + 2^-20 * max|w in the group|
 *
 * (s/2 in exact arithmetic; the second term bounds the f32 rounding of s,
 * of (w - b)/s and of s*q + b). A constant group has s = 0 and is exact.
 * Refuses (LAYA_ERR_ARG, with err) bad bits/G, G not dividing C, and
 * non-finite weights or a group range that overflows f32. */
laya_status quant_quantize(const float *w, int32_t R, int32_t C, int bits, int32_t G,
                           uint8_t *q, float *scales, float *biases, char *err, size_t errlen);

/* out (R, C) = s*q + b for every weight of the q8/q4 matrix m: the
 * reference dequantization (what kern_row_f32 does per row). */
void quant_dequantize(const qmat *m, float *out);
#endif

#endif

/* Bumped whenever the meaning of the bytes above changes. Stored in model
 * files as "quant_version"; a reader refuses other versions. */
#define QUANT_FORMAT_VERSION 1

enum {
    QUANT_GROUP_MIN = 32,
    QUANT_GROUP_MAX = 128,
    QUANT_Q8_MAX = 255,  /* largest q8 code */
    QUANT_Q4_MAX = 15    /* largest q4 code */
};

/* One group of 32 weights, the smallest unit every layout is made of: the
 * CUDA and CPU kernels may read a group as whole 16- or 32-byte vectors. */
typedef struct { uint8_t q[32]; } quant_q8_block32;  /* columns 0..31 */
typedef struct { uint8_t q[16]; } quant_q4_block32;  /* low nibble first */

QUANT_ASSERT(sizeof(quant_q8_block32) == 32, "q8: one byte per weight");
QUANT_ASSERT(sizeof(quant_q4_block32) == 16, "q4: two weights per byte");
QUANT_ASSERT(sizeof(float) == 4, "scales and biases are IEEE binary32");
QUANT_ASSERT(QUANT_GROUP_MAX % QUANT_GROUP_MIN == 0, "groups are whole blocks");

/* 1 if bits is 4 or 8 and G is 32, 64 or 128. */
static inline int quant_params_ok(int bits, int32_t G) {
    return (bits == 4 || bits == 8) && (G == 32 || G == 64 || G == 128);
}

/* Bytes of packed data in one row of C weights. */
static inline size_t quant_row_bytes(int bits, int64_t C) {
    return bits == 8 ? (size_t)C : (size_t)C / 2;
}

/* ---- quantizing and dequantizing (quant.c; host C only) ---- */
#ifndef __CUDACC__
#include "laya.h"
#include "kern/kern.h"

/* Quantizes the row-major f32 matrix w (R, C) to bits = 4 or 8 with groups
 * of G: q receives R * quant_row_bytes(bits, C) bytes, scales and biases
 * R * C/G floats each (all caller-owned). Per group, b = min, s = (max -
 * min) / (2^bits - 1), q = round((w - b) / s) (half away from zero), so
 *
 *     |w - (s*q + b)| <= s/2 + 2^-20 * max|w in the group|
 *
 * (s/2 in exact arithmetic; the second term bounds the f32 rounding of s,
 * of (w - b)/s and of s*q + b). A constant group has s = 0 and is exact.
 * Refuses (LAYA_ERR_ARG, with err) bad bits/G, G not dividing C, and
 * non-finite weights or a group range that overflows f32. */
laya_status quant_quantize(const float *w, int32_t R, int32_t C, int bits, int32_t G,
                           uint8_t *q, float *scales, float *biases, char *err, size_t errlen);

/* out (R, C) = s*q + b for every weight of the q8/q4 matrix m: the
 * reference dequantization (what kern_row_f32 does per row). */
void quant_dequantize(const qmat *m, float *out);
#endif

#endif
