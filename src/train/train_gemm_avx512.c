/* train_gemm_avx512.c - the trainer's AVX-512 sgemm micro-kernel: an
 * 8 x 32 tile in 16 zmm accumulators, one fused multiply-add per k and
 * element (the contract in train_gemm.h). Built with AVX-512 flags; only
 * called after train_gemm_kern_get() has checked the CPU and OS. */
#include "train/train_gemm.h"

#include <immintrin.h>

static void micro_avx512(int kc, const float *a, const float *b, float *acc) {
    __m512 c[8][2];
    for (int i = 0; i < 8; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_loadu_ps(b + k * 32), b1 = _mm512_loadu_ps(b + k * 32 + 16);
        for (int i = 0; i < 8; i++) {
            __m512 av = _mm512_set1_ps(a[k * 8 + i]);
            c[i][0] = _mm512_fmadd_ps(av, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(av, b1, c[i][1]);
        }
    }
    for (int i = 0; i < 8; i++) {
        _mm512_storeu_ps(acc + i * 32, c[i][0]);
        _mm512_storeu_ps(acc + i * 32 + 16, c[i][1]);
    }
}

const train_gemm_kern train_gemm_kern_avx512 = {"avx512", 8, 32, micro_avx512};
