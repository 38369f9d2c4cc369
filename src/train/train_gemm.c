/* train_gemm.c - the trainer's single-precision matrix multiply.
 *
 * Classic three-level blocking (Goto/BLIS style, written from the idea, not
 * from their code): for each K block of KC, op(B) is packed into panels of
 * NR columns (k-major), and each thread packs its MC-row block of op(A) into
 * panels of MR rows; a register-tiled MR x NR micro-kernel (train_gemm.h:
 * AVX2+FMA here, 6 x 16 in 12 accumulators; AVX-512 in train_gemm_avx512.c)
 * runs over the packed panels. Edges are zero-padded in the packs, so the
 * kernel has no edge cases; partial tiles go through a small buffer. Tiles
 * of C are distributed over threads; every element of C sums over K in the
 * same order whatever the thread count. */
#include "train/train_ops.h"
#include "train/train_gemm.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

/* KC = 512: a 32-column B panel (64 KB) streams from L2 fast enough for
 * the kernel, and a long K (the logits backward, K = V) passes over C half
 * as often as with 256 (measured 4-8% on those products). */
enum { KC = 512, MC = 96 };

static void micro_avx2(int kc, const float *a, const float *b, float *acc) {
    __m256 c[6][2];
    for (int i = 0; i < 6; i++) c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(b + k * 16), b1 = _mm256_loadu_ps(b + k * 16 + 8);
        for (int i = 0; i < 6; i++) {
            __m256 av = _mm256_broadcast_ss(a + k * 6 + i);
            c[i][0] = _mm256_fmadd_ps(av, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(av, b1, c[i][1]);
        }
    }
    for (int i = 0; i < 6; i++) {
        _mm256_storeu_ps(acc + i * 16, c[i][0]);
        _mm256_storeu_ps(acc + i * 16 + 8, c[i][1]);
    }
}

const train_gemm_kern train_gemm_kern_avx2 = {"avx2", 6, 16, micro_avx2};

static const train_gemm_kern *chosen;
static void choose(void) {
    const char *e = getenv("LAYA_KERN");
    int force2 = e && (!strcmp(e, "avx2") || !strcmp(e, "ref"));
    __builtin_cpu_init();
    /* libgcc's check includes the OS saving the ZMM state (XGETBV). */
    chosen = !force2 && __builtin_cpu_supports("avx512f") ? &train_gemm_kern_avx512 : &train_gemm_kern_avx2;
}
const train_gemm_kern *train_gemm_kern_get(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose);
    return chosen;
}

static inline float elt(const float *X, int ld, int trans, int r, int c) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* One MR-row panel; MR is a constant at each call site, so the copies
 * unroll into vector moves. */
static inline __attribute__((always_inline)) void pack_a_panel(const int MR, int ta, const float *A, int lda,
                                                              int r0, int mr, int k0, int kc, float *dst) {
    if (mr == MR && !ta) {
        const float *rows[16];
        for (int i = 0; i < MR; i++) rows[i] = A + (size_t)(r0 + i) * lda + k0;
        for (int k = 0; k < kc; k++)
            for (int i = 0; i < MR; i++) dst[k * MR + i] = rows[i][k];
        return;
    }
    if (mr == MR) {
        for (int k = 0; k < kc; k++) memcpy(dst + (size_t)k * MR, A + (size_t)(k0 + k) * lda + r0, MR * sizeof(float));
        return;
    }
    for (int k = 0; k < kc; k++)
        for (int i = 0; i < MR; i++)
            dst[k * MR + i] = i < mr ? (ta ? A[(size_t)(k0 + k) * lda + r0 + i] : A[(size_t)(r0 + i) * lda + k0 + k])
                                     : 0.0f;
}

void train_gemm_pack_a(const train_gemm_kern *kn, int ta, const float *A, int lda, int i0, int mc, int k0,
                       int kc, float *ap) {
    int MR = kn->mr;
    for (int ip = 0; ip < mc; ip += MR) {
        float *dst = ap + (size_t)ip * kc;
        int mr = mc - ip < MR ? mc - ip : MR;
        if (MR == 8) pack_a_panel(8, ta, A, lda, i0 + ip, mr, k0, kc, dst);
        else if (MR == 6) pack_a_panel(6, ta, A, lda, i0 + ip, mr, k0, kc, dst);
        else pack_a_panel(MR, ta, A, lda, i0 + ip, mr, k0, kc, dst);
    }
}

void train_gemm_pack_b(const train_gemm_kern *kn, int tb, const float *B, int ldb, int k0, int kc, int j0,
                       int nr, float *bp) {
    int NR = kn->nr;
    if (tb) {
        for (int j = 0; j < NR; j++) {
            const float *src = B + (size_t)(j0 + j) * ldb + k0;
            if (j < nr)
                for (int k = 0; k < kc; k++) bp[(size_t)k * NR + j] = src[k];
            else
                for (int k = 0; k < kc; k++) bp[(size_t)k * NR + j] = 0.0f;
        }
        return;
    }
    for (int k = 0; k < kc; k++) {
        float *dst = bp + (size_t)k * NR;
        const float *src = B + (size_t)(k0 + k) * ldb + j0;
        if (nr == NR) {
            memcpy(dst, src, (size_t)NR * sizeof(float));
            continue;
        }
        for (int j = 0; j < NR; j++) dst[j] = j < nr ? src[j] : 0.0f;
    }
}

void train_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc) {
    train_sgemm_kern(train_gemm_kern_get(), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void train_sgemm_kern(const train_gemm_kern *kn, int ta, int tb, int M, int N, int K, float alpha,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
        return;
    }
    const int MR = kn->mr, NR = kn->nr;
    int npan = (N + NR - 1) / NR;
    int kcmax = K < KC ? K : KC;
    int nt = omp_get_max_threads();
    /* Packed B, then one packed A block per thread. */
    size_t bsz = (size_t)npan * NR * kcmax, asz = (size_t)MC * kcmax;
    float *bp = aligned_alloc(64, ((bsz + asz * nt) * sizeof(float) + 63) / 64 * 64);
    int mblocks = (M + MC - 1) / MC;
    /* Column tile width (in panels): wide for cache reuse of the A block,
     * narrowed until there are enough tiles to keep every thread busy. */
    int tp = 16;
    while (tp > 1 && mblocks * ((npan + tp - 1) / tp) < 2 * nt) tp /= 2;
    int ntiles_n = (npan + tp - 1) / tp;
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = K - k0 < KC ? K - k0 : KC;
        float b_eff = k0 == 0 ? beta : 1.0f;
        /* Small products (the tests' tiny models) are not worth a team. */
#pragma omp parallel if ((double)M * N * kc > 65536.0)
        {
#pragma omp for schedule(static)
            for (int p = 0; p < npan; p++) {
                int j0 = p * NR;
                train_gemm_pack_b(kn, tb, B, ldb, k0, kc, j0, N - j0 < NR ? N - j0 : NR, bp + (size_t)p * NR * kc);
            }
            float *ap = bp + bsz + asz * omp_get_thread_num();
            float acc[32 * 32];
#pragma omp for collapse(2) schedule(dynamic)
            for (int mb = 0; mb < mblocks; mb++) {
                for (int nb = 0; nb < ntiles_n; nb++) {
                    int i0 = mb * MC, mc = M - i0 < MC ? M - i0 : MC;
                    train_gemm_pack_a(kn, ta, A, lda, i0, mc, k0, kc, ap);
                    int p1 = (nb + 1) * tp < npan ? (nb + 1) * tp : npan;
                    for (int p = nb * tp; p < p1; p++) {
                        int j0 = p * NR, nr = N - j0 < NR ? N - j0 : NR;
                        for (int ip = 0; ip < mc; ip += MR) {
                            int mr = mc - ip < MR ? mc - ip : MR;
                            kn->micro(kc, ap + (size_t)ip * kc, bp + (size_t)p * NR * kc, acc);
                            for (int i = 0; i < mr; i++) {
                                float *c = C + (size_t)(i0 + ip + i) * ldc + j0;
                                const float *s = acc + i * NR;
                                if (b_eff == 0.0f)
                                    for (int j = 0; j < nr; j++) c[j] = alpha * s[j];
                                else if (b_eff == 1.0f)
                                    for (int j = 0; j < nr; j++) c[j] += alpha * s[j];
                                else
                                    for (int j = 0; j < nr; j++) c[j] = alpha * s[j] + b_eff * c[j];
                            }
                        }
                    }
                }
            }
        }
    }
    free(bp);
}

void train_sgemm_ref(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)elt(A, lda, ta, i, k) * (double)elt(B, ldb, tb, k, j);
            float *c = C + (size_t)i * ldc + j;
            *c = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * *c));
        }
}
