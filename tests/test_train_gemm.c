/* test_train_gemm.c - the blocked sgemm against its reference over awkward
 * sizes, all four transpose combinations, alpha/beta and leading dimensions
 * wider than the matrix; and once, that the comparison catches an error. */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_gemm.h"
#include "train/train_ops.h"

/* Every kernel this CPU can run, not only the one train_sgemm picks. */
static const train_gemm_kern *kern_at(int i) {
    if (i == 0) return &train_gemm_kern_avx2;
    if (i == 1 && __builtin_cpu_supports("avx512f")) return &train_gemm_kern_avx512;
    return NULL;
}
static const train_gemm_kern *cur_kern;

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 40) / 16777216.0 * 2.0 - 1.0);
}

/* Runs one case; returns the worst |got-want| / (1e-5 + 1e-4*|want|). */
static double one(int ta, int tb, int M, int N, int K, float alpha, float beta, int pad, int corrupt) {
    uint64_t s = (uint64_t)(M * 131 + N * 7 + K + ta * 3 + tb);
    int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    int lda = ac + pad, ldb = bc + pad, ldc = N + pad;
    float *A = malloc(sizeof(float) * ((size_t)ar * lda + 1)), *B = malloc(sizeof(float) * ((size_t)br * ldb + 1));
    float *C = malloc(sizeof(float) * ((size_t)M * ldc + 1)), *R = malloc(sizeof(float) * ((size_t)M * ldc + 1));
    for (size_t i = 0; i < (size_t)ar * lda; i++) A[i] = frand(&s);
    for (size_t i = 0; i < (size_t)br * ldb; i++) B[i] = frand(&s);
    for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = R[i] = beta == 0.0f ? NAN : frand(&s);
    train_sgemm_kern(cur_kern, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    train_sgemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    if (corrupt) C[(size_t)(M / 2) * ldc + N / 2] += 1e-3f * sqrtf((float)K);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double g = C[(size_t)i * ldc + j], w = R[(size_t)i * ldc + j];
            double e = fabs(g - w) / (1e-5 * sqrt((double)K + 1) + 1e-4 * fabs(w));
            if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
        }
    /* Padding columns untouched. */
    for (int i = 0; i < M && pad; i++)
        for (int j = N; j < ldc; j++)
            if (!(C[(size_t)i * ldc + j] == R[(size_t)i * ldc + j]) && !(isnan(C[(size_t)i * ldc + j]) && isnan(R[(size_t)i * ldc + j])))
                worst = INFINITY;
    free(A);
    free(B);
    free(C);
    free(R);
    return worst;
}

/* The size sweep for cur_kern; returns on the first failure. */
static void sweep(void) {
    static const int sizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 97, 258};
    int ns = (int)(sizeof sizes / sizeof sizes[0]);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int a = 0; a < ns; a++)
                for (int b = 0; b < ns; b += 2)
                    for (int c = 1; c < ns; c += 3) {
                        int M = sizes[a], N = sizes[b], K = sizes[c];
                        float beta = (a + b) % 3 == 0 ? 0.0f : (a % 2 ? 1.0f : 0.5f);
                        double e = one(ta, tb, M, N, K, (c % 2) ? 1.0f : -0.75f, beta, (a + c) % 2 * 3, 0);
                        CHECKF(e <= 1, "%s: ta=%d tb=%d M=%d N=%d K=%d beta=%g: error %.3g x tolerance",
                               cur_kern->name, ta, tb, M, N, K, beta, e);
                    }
    /* K larger than one K block, M larger than one M block. */
    CHECKF(one(0, 1, 200, 70, 600, 1.0f, 0.0f, 0, 0) <= 1, "%s", cur_kern->name);
    CHECKF(one(1, 0, 130, 300, 513, 1.0f, 1.0f, 1, 0) <= 1, "%s", cur_kern->name);
}

TEST(train_gemm_matches_ref) {
    for (int i = 0; i < 2; i++)
        if ((cur_kern = kern_at(i))) sweep();
}

TEST(train_gemm_check_catches_error) {
    cur_kern = train_gemm_kern_get();
    CHECK(one(0, 1, 33, 17, 64, 1.0f, 0.0f, 0, 1) > 1);
}
