/* kern_f16.c - the scalar IEEE binary16 <-> f32 conversions (kern.h): the
 * f16 weight type's specification, used by the reference kernels, the
 * model file's loader and writer, and the tests (test_kern.c checks both
 * directions against the compiler's _Float16 over every f16). The vector
 * kernels convert with F16C instead; f16 -> f32 is exact either way. */
#include "kern/kern.h"

#include <string.h>

/* binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Every f16 is
 * exactly representable in f32, so this direction is exact. */
float kern_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, u;
    if (e == 0) {
        float v = (float)m * 0x1p-24f;  /* zero or subnormal: m * 2^-24, exact */
        memcpy(&u, &v, sizeof u);
        u |= sign;
    } else if (e == 31) {
        u = sign | 0x7F800000u | (m << 13);  /* inf, or NaN with its payload */
    } else {
        u = sign | ((e + 112) << 23) | (m << 13);  /* rebias 15 -> 127 */
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest, ties to even; overflow to inf; NaN stays a (quiet) NaN. */
uint16_t kern_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a >= 0x7F800000u)  /* inf or NaN */
        return (uint16_t)(sign | 0x7C00u | (a > 0x7F800000u ? 0x200u | ((a >> 13) & 0x3FFu) : 0));
    if (a >= 0x477FF000u)  /* >= 65520 = halfway from 65504 to 2^16: rounds to inf */
        return (uint16_t)(sign | 0x7C00u);
    if (a < 0x38800000u) {  /* below 2^-14: an f16 subnormal (units of 2^-24) or zero */
        uint32_t e = a >> 23, shift = 126 - e;  /* value = mant * 2^-shift units */
        if (shift >= 25) return sign;  /* < half a unit */
        uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);  /* q = 0x400 is the smallest normal: correct */
    }
    uint32_t q = (a >> 13) - (112u << 10), rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;  /* carry may bump the exponent */
    return (uint16_t)(sign | q);
}
