/* bench_cuda_rec.cu - the timing harness of the persistent recurrences
 * (src/cuda/cuda_rec.cu) and its knock-out variants: the kernels of
 * cuda_rec_kern.cuh launched on a problem of their own, with one stage of
 * a step left out at a time (KO_*), so the step's time minus a variant's
 * is that stage's share. Used by bench_cuda_train.c (bench_cuda_rec). */
#include "bench_cuda_rec.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/cuda_rec_kern.cuh"

namespace {

/* The kernels for H with knock-outs ko (0: the trainer's; the knock-out
 * variants are built at H = 768 only). */
bool bench_kernels(int H, int ko, fwd_fn *f, bwd_fn *b) {
    if (!ko) return rec_kernels(H, f, b);
    if (H != 768) return false;
    switch (ko) {
    case KO_WAIT: *f = k_gru_fwd_rec<12, KO_WAIT>, *b = k_gru_bwd_rec<12, KO_WAIT>; return true;
    case KO_LOAD: *f = k_gru_fwd_rec<12, KO_LOAD>, *b = k_gru_bwd_rec<12, KO_LOAD>; return true;
    case KO_MMA: *f = k_gru_fwd_rec<12, KO_MMA>, *b = k_gru_bwd_rec<12, KO_MMA>; return true;
    case KO_GATE_IO: *f = k_gru_fwd_rec<12, KO_GATE_IO>, *b = k_gru_bwd_rec<12, KO_GATE_IO>; return true;
    }
    return false;
}

__global__ void k_fill(float *x, size_t n, uint32_t seed) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t v = (uint32_t)i * 2654435761u ^ seed;
    v ^= v >> 15, v *= 2246822519u, v ^= v >> 13;
    x[i] = (float)(v & 0xffff) / 65536.0f - 0.5f;
}

} // namespace

double cuda_rec_time(int B, int T, int H, int bwd, int ko, int reps) {
    fwd_fn f = nullptr;
    bwd_fn b = nullptr;
    if (!bench_kernels(H, ko, &f, &b) || !prepare(f, b, H) || B % PB) return -1;
    size_t N = (size_t)B * T, G = 3 * (size_t)H;
    size_t nf = G * H + 2 * G + N * G * 2 + N * H * 4 + (size_t)B * H;
    float *m = NULL;
    __nv_bfloat16 *x = NULL;
    unsigned *bar = NULL;
    if (cudaMalloc((void **)&m, nf * 4) || cudaMalloc((void **)&x, 2 * (size_t)B * G * 2) ||
        cudaMalloc((void **)&bar, (size_t)(B / PB) * 4)) {
        cudaGetLastError();
        cudaFree(m), cudaFree(x), cudaFree(bar);
        return -1;
    }
    k_fill<<<(unsigned)((nf + 255) / 256), 256>>>(m, nf, 7u);
    float *whh = m, *bi = whh + G * H, *bh = bi + G, *gates = bh + G, *dg = gates + N * G, *ghn = dg + N * G;
    float *hprev = ghn + N * H, *h = hprev + N * H, *dh = h + N * H, *dhc = dh + N * H;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float ms = -1;
    cudaError_t launched = cudaSuccess;
    for (int r = 0; r <= reps && launched == cudaSuccess; r++) {
        if (r == 1) cudaEventRecord(e0, 0);
        if (bwd)
            launched = launch_bwd(b, 0, whh, B, T, H, gates, ghn, hprev, dh, (__nv_bfloat16 *)dg,
                                  (__nv_bfloat16 *)dg + N * G, dhc, x, bar);
        else
            launched = launch_fwd(f, 0, whh, bi, bh, B, T, H, gates, ghn, hprev, h, x, bar);
    }
    cudaEventRecord(e1, 0);
    if (cudaEventSynchronize(e1) == cudaSuccess) cudaEventElapsedTime(&ms, e0, e1);
    if (cudaGetLastError() != cudaSuccess || launched != cudaSuccess) ms = -1;
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    cudaFree(m), cudaFree(x), cudaFree(bar);
    return ms < 0 ? -1 : 1e3 * ms / reps / T;
}
