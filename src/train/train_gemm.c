/* train_gemm.c - the trainer's single-precision matrix multiply.
 *
 * Classic three-level blocking (Goto/BLIS style, written from the idea, not
 * from their code): for each K block of KC, op(B) is packed into panels of
 * NR columns (k-major), and each thread packs its MC-row block of op(A) into
 * panels of MR rows; a register-tiled MR x NR micro-kernel (12 AVX2
 * accumulators through GCC vector extensions; the file is built with
 * -march=x86-64-v3) runs over the packed panels. Edges are zero-padded in
 * the packs, so the kernel has no edge cases; partial tiles go through a
 * small buffer. Tiles of C are distributed over threads; every element of C
 * sums over K in the same order whatever the thread count. */
#include "train/train_ops.h"

#include <stdlib.h>
#include <string.h>
#include <omp.h>

enum { MR = 6, NR = 16, KC = 256, MC = 96 };

typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void store8(float *p, v8 v) { memcpy(p, &v, sizeof v); }

/* acc(MR,NR) = sum_k a[k*MR+i] * b[k*NR+j] over packed panels. */
static void micro(int kc, const float *a, const float *b, float *acc) {
    v8 c[MR][2];
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = (v8){0};
    for (int k = 0; k < kc; k++) {
        v8 b0 = load8(b + k * NR), b1 = load8(b + k * NR + 8);
        for (int i = 0; i < MR; i++) {
            float s = a[k * MR + i];
            v8 av = {s, s, s, s, s, s, s, s};
            c[i][0] += av * b0;
            c[i][1] += av * b1;
        }
    }
    for (int i = 0; i < MR; i++) {
        store8(acc + i * NR, c[i][0]);
        store8(acc + i * NR + 8, c[i][1]);
    }
}

static inline float elt(const float *X, int ld, int trans, int r, int c) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* Packs op(A)[i0..i0+mc, k0..k0+kc) into MR-row panels, zero-padded. */
static void pack_a(int ta, const float *A, int lda, int i0, int mc, int k0, int kc, float *ap) {
    for (int ip = 0; ip < mc; ip += MR) {
        float *dst = ap + (size_t)ip * kc;
        int mr = mc - ip < MR ? mc - ip : MR;
        for (int k = 0; k < kc; k++)
            for (int i = 0; i < MR; i++)
                dst[k * MR + i] = i < mr ? elt(A, lda, ta, i0 + ip + i, k0 + k) : 0.0f;
    }
}

/* Packs op(B)[k0..k0+kc, j0..j0+nr) into one NR-column panel, zero-padded. */
static void pack_b(int tb, const float *B, int ldb, int k0, int kc, int j0, int nr, float *bp) {
    for (int k = 0; k < kc; k++) {
        float *dst = bp + (size_t)k * NR;
        if (!tb && nr == NR) {
            memcpy(dst, B + (size_t)(k0 + k) * ldb + j0, NR * sizeof(float));
            continue;
        }
        for (int j = 0; j < NR; j++) dst[j] = j < nr ? elt(B, ldb, tb, k0 + k, j0 + j) : 0.0f;
    }
}

void train_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
        return;
    }
    int npan = (N + NR - 1) / NR;
    int kcmax = K < KC ? K : KC;
    float *bp = aligned_alloc(64, ((size_t)npan * NR * kcmax * sizeof(float) + 63) / 64 * 64);
    int nt = omp_get_max_threads();
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
                pack_b(tb, B, ldb, k0, kc, j0, N - j0 < NR ? N - j0 : NR, bp + (size_t)p * NR * kc);
            }
            float ap[MC * KC];
            float acc[MR * NR];
#pragma omp for collapse(2) schedule(dynamic)
            for (int mb = 0; mb < mblocks; mb++) {
                for (int nb = 0; nb < ntiles_n; nb++) {
                    int i0 = mb * MC, mc = M - i0 < MC ? M - i0 : MC;
                    pack_a(ta, A, lda, i0, mc, k0, kc, ap);
                    int p1 = (nb + 1) * tp < npan ? (nb + 1) * tp : npan;
                    for (int p = nb * tp; p < p1; p++) {
                        int j0 = p * NR, nr = N - j0 < NR ? N - j0 : NR;
                        for (int ip = 0; ip < mc; ip += MR) {
                            int mr = mc - ip < MR ? mc - ip : MR;
                            micro(kc, ap + (size_t)ip * kc, bp + (size_t)p * NR * kc, acc);
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
