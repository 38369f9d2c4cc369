/* cuda_rec.cu - persistent GRU recurrences (cuda_ctx_set_persist): the T
 * dependent steps of a layer's forward or backward recurrence run inside
 * ONE cooperative kernel instead of T cuBLAS products and T gate kernels.
 *
 * Why: a (256,768)x(768,2304) product is 0.9 GFLOP, a microsecond of the
 * chip's tensor rate, but as a cuBLAS call plus a gate kernel it costs
 * ~18 us forward and ~34 us backward (launch gaps, a fresh read of W_hh,
 * a round trip of the gates through memory). Here every block keeps its
 * slice of W_hh in REGISTERS for the whole sequence (bf16, the mma.sync
 * B fragments), each step moves only the new state (bf16) through L2, and
 * the gate math runs on the product's accumulators in registers.
 *
 * Decomposition (PU = 24 hidden units x PB = 64 batch rows per block, grid
 * (H/PU, B/PB), one block per SM, all co-resident: a cooperative launch):
 * - forward: warp (ug, kq), ug < 3 a group of 8 units, kq < 4 a quarter of
 *   K = H, computes the r, z, n pre-activations of its 8 units for the 64
 *   rows over its K quarter (3 n8 tiles x 4 m16 tiles); the quarters are
 *   summed in shared memory in a fixed order (deterministic); warp (ug, kq)
 *   then owns m-tile kq of its units: gates, h, and the bf16 copy of h for
 *   the next step.
 * - backward: dhc_{t-1} = d_t z_t + dgh_t W_hh, K = G = 3H. Warp kw < 12
 *   computes all 24 units' partial over a twelfth of K; warp kw then owns
 *   tile (m = kw/3, units kw%3) for the gate gradients.
 * - between steps the blocks of one batch block (the H/PU blocks that share
 *   its rows) meet at a counter in global memory (release: a gpu-scope
 *   release reduction after the block barrier; acquire: a load.acquire
 *   spin), nothing else waits. Only the exchanged state is written before
 *   the release; the f32 outputs are stored after it.
 *
 * The exchanged state (h forward, dgh backward) is stored in mma fragment
 * order: a 16x16 bf16 tile is 32 lanes x 16 bytes, so a warp reads an A
 * fragment with one coalesced 16-byte load per lane. Double-buffered: a
 * step reads the buffer the previous step wrote and writes the other; a block can only
 * overwrite a buffer after every block of its batch block has signalled the
 * step that read it.
 *
 * Numerics: the recurrent products take bf16 operands (W_hh and the state
 * rounded to nearest even) with f32 accumulation, as CUDA_MATH_BF16's
 * cuBLAS products do; gates, h and the carried gradient stay f32, and the
 * backward writes dgi/dgh in bf16 (the operands of the weight-gradient
 * products after it, rounded as cuBLAS would round them).
 * The sums over K quarters/twelfths are in a fixed order, so runs are
 * bit-reproducible. Shapes: H a multiple of 192 up to 768, B a multiple of
 * 64, (H/24)*(B/64) blocks co-resident (128 at H=768, B=256 on an H200).
 *
 * The kernels live in cuda_rec_kern.cuh, shared with the timing harness
 * and its knock-out variants (bench/cuda/bench_cuda_rec.cu). */
#include "cuda/cuda_ops.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "cuda/cuda_rec_kern.cuh"

extern "C" {
#include "util/err.h"
}


laya_status cuda_ctx_set_persist(cuda_ctx *c, int B, int H, char *err, size_t errlen) {
    c->persist = 0;
    fwd_fn f = nullptr;
    bwd_fn b = nullptr;
    if (!rec_kernels(H, &f, &b))
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "persistent recurrence: H=%d is not 192, 384, 576 or 768",
                       H);
    if (B < PB || B % PB != 0)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "persistent recurrence: batch %d is not a multiple of %d",
                       B, PB);
    int dev = 0, coop = 0, sms = 0, occ_f = 0, occ_b = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    size_t sf = fwd_smem(H), sb = bwd_smem();
    if (!coop || !prepare(f, b, H) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_f, (const void *)f, NTH, sf) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_b, (const void *)b, NTH, sb)) {
        cudaGetLastError();
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "persistent recurrence: no cooperative launch with %zu KB of shared memory here", sf >> 10);
    }
    long blocks = (long)(H / PU) * (B / PB), fit = (long)sms * (occ_f < occ_b ? occ_f : occ_b);
    if (blocks > fit)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "persistent recurrence: %ld blocks for B=%d H=%d, only %ld fit on the GPU at once", blocks, B,
                       H, fit);
    /* the exchange buffers, then a bf16 copy of W_ih (G,H) */
    size_t xb = (2 * (size_t)B * 3 * H + 3 * (size_t)H * H) * sizeof(__nv_bfloat16);
    size_t bars = (size_t)(B / PB) * sizeof(unsigned);
    if (c->rec_xch_bytes < xb || c->rec_bar_n < B / PB) {
        if (c->rec_xch) cudaFree(c->rec_xch);
        if (c->rec_bar) cudaFree(c->rec_bar);
        c->rec_xch = NULL, c->rec_bar = NULL, c->rec_xch_bytes = 0, c->rec_bar_n = 0;
        if (cudaMalloc(&c->rec_xch, xb) != cudaSuccess || cudaMalloc((void **)&c->rec_bar, bars) != cudaSuccess) {
            cudaGetLastError();
            return err_set(err, errlen, LAYA_ERR_NOMEM, "persistent recurrence: cannot allocate %zu bytes", xb);
        }
        c->rec_xch_bytes = xb;
        c->rec_bar_n = B / PB;
    }
    c->rec_w16 = (char *)c->rec_xch + 2 * (size_t)B * 3 * H * sizeof(__nv_bfloat16);
    c->rec_B = B;
    c->rec_H = H;
    c->persist = 1;
    return LAYA_OK;
}

int cuda_rec_applies(const cuda_ctx *c, int B, int H) {
    return c->persist && H == c->rec_H && B >= PB && B % PB == 0 && B <= c->rec_B;
}

void cuda_rec_free(cuda_ctx *c) {
    if (c->rec_xch) cudaFree(c->rec_xch);
    if (c->rec_bar) cudaFree(c->rec_bar);
    c->rec_xch = NULL, c->rec_bar = NULL, c->rec_xch_bytes = 0, c->rec_bar_n = 0, c->persist = 0;
}

void cuda_rec_fwd(cuda_ctx *c, const cuda_gru_w *w, int B, int T, int H, float *gates, float *ghn, float *hprev,
                  float *h) {
    fwd_fn f = nullptr;
    bwd_fn b = nullptr;
    rec_kernels(H, &f, &b);
    cudaError_t e = launch_fwd(f, (cudaStream_t)c->stream, w->w_hh, w->b_ih, w->b_hh, B, T, H, gates, ghn, hprev, h,
                               (__nv_bfloat16 *)c->rec_xch, c->rec_bar);
    if (e != cudaSuccess && !c->rec_status) c->rec_status = (int)e;
}

void cuda_rec_bwd(cuda_ctx *c, const cuda_gru_w *w, int B, int T, int H, const float *gates, const float *ghn,
                  const float *hprev, const float *dh, void *dgi16, void *dgh16, float *dhc) {
    fwd_fn f = nullptr;
    bwd_fn b = nullptr;
    rec_kernels(H, &f, &b);
    cudaError_t e = launch_bwd(b, (cudaStream_t)c->stream, w->w_hh, B, T, H, gates, ghn, hprev, dh,
                               (__nv_bfloat16 *)dgi16, (__nv_bfloat16 *)dgh16, dhc, (__nv_bfloat16 *)c->rec_xch,
                               c->rec_bar);
    if (e != cudaSuccess && !c->rec_status) c->rec_status = (int)e;
}

