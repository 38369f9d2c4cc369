/* kern_dispatch.c - picks the kernel table once per process, and the scalar
 * f16 conversions.
 *
 * Detection: a vector ISA is usable only when CPUID reports it AND the OS
 * saves its registers on context switch (XCR0 via XGETBV): AVX needs XCR0
 * bits 1-2 (SSE, AVX state), AVX-512 also bits 5-7 (opmask, ZMM0-15 upper
 * halves, ZMM16-31). kern_get() takes the best usable table, unless
 * LAYA_KERN=ref|avx2|avx512 names another usable one (an unknown or
 * unusable name is ignored: the library never fails or prints over it). */
#include "kern/kern_impl.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static unsigned detect(void) {
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int fma = (c & bit_FMA) != 0, f16c = (c & bit_F16C) != 0;
    if (!(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if ((b & bit_AVX2) && fma && f16c) f |= KERN_CPU_AVX2;
    const unsigned need512 = bit_AVX512F | bit_AVX512BW | bit_AVX512VL | bit_AVX512DQ;
    if ((f & KERN_CPU_AVX2) && (b & need512) == need512 && (xcr0 & 0xE6) == 0xE6) {
        f |= KERN_CPU_AVX512;
        if (c & bit_AVX512VNNI) f |= KERN_CPU_AVX512_VNNI;
    }
    return f;
}

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static unsigned cpu_features;
static void cpu_init(void) { cpu_features = detect(); }

unsigned kern_cpu_features(void) {
    pthread_once(&cpu_once, cpu_init);
    return cpu_features;
}

const kern_table *kern_by_name(const char *name) {
    if (!name) return NULL;
    unsigned f = kern_cpu_features();
    if (strcmp(name, "ref") == 0) return &kern_table_ref;
    if (strcmp(name, "avx2") == 0) return (f & KERN_CPU_AVX2) ? &kern_table_avx2 : NULL;
    if (strcmp(name, "avx512") == 0) return (f & KERN_CPU_AVX512) ? &kern_table_avx512 : NULL;
    return NULL;
}

static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static const kern_table *chosen;

static void table_init(void) {
    const kern_table *t = kern_by_name(getenv("LAYA_KERN"));
    if (!t) t = kern_by_name("avx512");
    if (!t) t = kern_by_name("avx2");
    if (!t) t = &kern_table_ref;
    chosen = t;
}

const kern_table *kern_get(void) {
    pthread_once(&table_once, table_init);
    return chosen;
}

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
