/* kern_impl.h - what the kernel files share with each other (kern_ref.c,
 * kern_avx2.c, kern_avx512.c, kern_dispatch.c). Other modules use kern.h.
 *
 * Adding a weight type (q8, q4): give row_dot_ref/kern_row_f32 in kern_ref.c
 * a case (the specification), then optionally a vector loop in the per-ISA
 * files; until a per-ISA file handles a type its table functions fall back to
 * the _ref function for it, so every table is always complete.
 *
 * Shape letters: R rows, C columns, N vectors. */
#ifndef LAYA_KERN_IMPL_H
#define LAYA_KERN_IMPL_H

#include "kern/kern.h"

/* The scalar references: the specification of every table entry. They
 * accumulate in f32 in column order, without FMA contraction. */
void kern_matvec_ref(const qmat *w, const float *x, float *y);
void kern_matmat_ref(const qmat *w, const float *x, int n, float *y);
void kern_dot_rows_ref(const qmat *w, const int32_t *rows, int n, const float *x, float *y);

extern const kern_table kern_table_ref;
extern const kern_table kern_table_avx2;    /* needs AVX2, FMA, F16C */
extern const kern_table kern_table_avx512;  /* needs AVX-512 F, BW, VL, DQ */

/* CPU features usable by this process (CPUID and the OS-enabled state in
 * XCR0 from XGETBV both agree). */
enum { KERN_CPU_AVX2 = 1u, KERN_CPU_AVX512 = 2u, KERN_CPU_AVX512_VNNI = 4u };
unsigned kern_cpu_features(void);

#endif
