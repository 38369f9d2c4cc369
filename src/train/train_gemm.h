/* train_gemm.h - the pieces of the trainer's sgemm that fused ops reuse:
 * the micro-kernel chosen for this CPU and the panel packings (C6).
 *
 * A micro-kernel computes one MR x NR tile, acc[i*NR + j] = sum over k < kc
 * of a[k*MR + i] * b[k*NR + j], from an A panel (MR rows, k-major) and a B
 * panel (NR columns, k-major), summing k in order 0..kc-1 with one fused
 * multiply-add per step. So a tile's value depends only on the kernel and
 * kc, never on which thread runs it. Shape letters as train_ops.h. */
#ifndef LAYA_TRAIN_GEMM_H
#define LAYA_TRAIN_GEMM_H

typedef struct {
    const char *name;
    int mr, nr;
    void (*micro)(int kc, const float *a, const float *b, float *acc);
} train_gemm_kern;

/* The AVX-512 kernel where the CPU and OS support it, else AVX2+FMA;
 * LAYA_KERN=avx2 forces the latter (tests run both). Chosen once. */
const train_gemm_kern *train_gemm_kern_get(void);
extern const train_gemm_kern train_gemm_kern_avx2, train_gemm_kern_avx512;

/* train_sgemm (train_ops.h) with a given kernel. */
void train_sgemm_kern(const train_gemm_kern *kn, int ta, int tb, int M, int N, int K, float alpha,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* Packs op(A)[i0..i0+mc, k0..k0+kc) into MR-row panels (panel q at
 * ap + q*MR*kc), zero-padded to a multiple of MR rows. */
void train_gemm_pack_a(const train_gemm_kern *kn, int ta, const float *A, int lda, int i0, int mc, int k0,
                       int kc, float *ap);
/* Packs op(B)[k0..k0+kc, j0..j0+nr) into one NR-column panel, zero-padded. */
void train_gemm_pack_b(const train_gemm_kern *kn, int tb, const float *B, int ldb, int k0, int kc, int j0,
                       int nr, float *bp);

#endif
