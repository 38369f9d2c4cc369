/* cuda_test_util.h - helpers of the GPU tests: device copies, random
 * arrays, and the comparison every test uses: relative error
 * ||got - want||_2 / ||want||_2 in double, where any NaN (an element a
 * kernel never wrote after the output was poisoned) counts as a failure. */
#ifndef LAYA_CUDA_TEST_UTIL_H
#define LAYA_CUDA_TEST_UTIL_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_ops.h"
#include "test.h"

/* Skips the test when there is no GPU (CI). */
#define NEED_GPU()                                                      \
    do {                                                                \
        if (cuda_device_count() < 1) SKIP("no CUDA device");            \
    } while (0)

static inline uint64_t tu_next(uint64_t *s) {
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* n floats uniform in [-a, a], malloc'd. */
static inline float *tu_rand(size_t n, float a, uint64_t *s) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = a * (float)((double)(tu_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    return x;
}

static inline void *tu_dev(const void *host, size_t bytes) {
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess) return NULL;
    if (host) cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize(); /* a pageable upload may still be in flight */
    return d;
}

/* A device array of n floats filled with NaN. */
static inline float *tu_dev_nan(size_t n) {
    float *d = tu_dev(NULL, n * sizeof(float));
    float *h = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = NAN;
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    free(h);
    return d;
}

static inline float *tu_host(const float *dev, size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    cudaDeviceSynchronize();
    cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost);
    return h;
}

/* Relative L2 error; INFINITY when got holds a NaN or Inf. */
static inline double tu_relerr(const float *got, const float *want, size_t n) {
    double d = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        double e = (double)got[i] - (double)want[i];
        d += e * e;
        w += (double)want[i] * want[i];
    }
    return w > 0 ? sqrt(d / w) : sqrt(d);
}

/* Compares the device array dev (n floats) with want; fails with name. */
#define CHECK_DEV(dev, want, n, tol, name)                                          \
    do {                                                                            \
        float *g_ = tu_host((dev), (n));                                            \
        double e_ = tu_relerr(g_, (want), (n));                                     \
        free(g_);                                                                   \
        printf("    %-34s rel err %.2e (tol %.0e)\n", (name), e_, (double)(tol));   \
        CHECKF(e_ <= (tol), "%s: relative error %.3e > %.1e", (name), e_, (double)(tol)); \
    } while (0)

#endif
