/* kern_dispatch.c - picks the kernel table once per process.
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

/* The table called name if features allow it, else NULL. */
static const kern_table *table_named(unsigned f, const char *name) {
    if (!name) return NULL;
    if (strcmp(name, "ref") == 0) return &kern_table_ref;
    if (strcmp(name, "avx2") == 0) return (f & KERN_CPU_AVX2) ? &kern_table_avx2 : NULL;
    if (strcmp(name, "avx512") == 0) return (f & KERN_CPU_AVX512) ? &kern_table_avx512 : NULL;
    return NULL;
}

const kern_table *kern_by_name(const char *name) { return table_named(kern_cpu_features(), name); }

const kern_table *kern_pick(unsigned features, const char *name) {
    const kern_table *t = table_named(features, name);
    if (!t) t = table_named(features, "avx512");
    if (!t) t = table_named(features, "avx2");
    return t ? t : &kern_table_ref;
}

static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static const kern_table *chosen;

static void table_init(void) { chosen = kern_pick(kern_cpu_features(), getenv("LAYA_KERN")); }

const kern_table *kern_get(void) {
    pthread_once(&table_once, table_init);
    return chosen;
}
