/* cuda_rec_kern.cuh - the persistent GRU recurrence kernels, shared by
 * src/cuda/cuda_rec.cu (the trainer's instantiations) and
 * bench/cuda/bench_cuda_rec.cu (the timing harness and its knock-out
 * variants). Design, decomposition and numerics: cuda_rec.cu.
 *
 * Everything here has internal linkage (an anonymous namespace): each
 * file that includes it instantiates the kernels it launches. */
#ifndef LAYA_CUDA_REC_KERN_CUH
#define LAYA_CUDA_REC_KERN_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int PU = 24;            /* hidden units per block */
constexpr int PB = 64;            /* batch rows per block (4 m16 tiles) */
constexpr int NW = 12;            /* warps per block */
constexpr int NTH = NW * 32;      /* threads per block */
constexpr int RING = 4;           /* backward: k-steps in flight per warp */
constexpr int TILE = 256;         /* bf16 elements of a 16x16 fragment tile */
constexpr int RED_FLOATS = 12 * 12 * 4 * 32; /* partial sums, both kernels */

__device__ __forceinline__ float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

/* Offset (bf16 elements) of element (row r, column k) of a B x K state in
 * fragment order; k even gives the 4-byte-aligned pair (k, k+1). */
__device__ __forceinline__ size_t frag_at(int r, int k, int K) {
    int m = r >> 4, rr = r & 15, kk = k >> 4, cc = k & 15;
    size_t tile = (size_t)m * (size_t)(K >> 4) + (size_t)kk;
    int lane = (rr & 7) * 4 + ((cc & 7) >> 1), reg = (rr >> 3) + 2 * (cc >> 3);
    return tile * TILE + (size_t)lane * 8 + (size_t)reg * 2 + (size_t)(cc & 1);
}

/* d += a (16x16, row) * b (16x8, col), bf16 in, f32 accumulate. */
__device__ __forceinline__ void mma(float (&d)[4], const uint4 &a, uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

/* The 3 n-tiles (r, z, n gates forward; 3 groups of 8 units backward) of
 * one m-tile against k-step s of the register-held W_hh fragments. */
template <int KS>
__device__ __forceinline__ void mma3(float (&acc)[3][4], const uint4 &a, const uint32_t (&wf)[3][KS][2], int s) {
#pragma unroll
    for (int nt = 0; nt < 3; nt++) mma(acc[nt], a, wf[nt][s][0], wf[nt][s][1]);
}

__device__ __forceinline__ void acc_zero(float (&acc)[4][3][4]) {
#pragma unroll
    for (int m = 0; m < 4; m++)
#pragma unroll
        for (int nt = 0; nt < 3; nt++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[m][nt][c] = 0.0f;
}

__device__ __forceinline__ void cp16(void *dst, const void *src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

/* The block counts in once every thread's writes so far are done: the
 * barrier orders them before thread 0's release (cumulative at gpu scope). */
__device__ __forceinline__ void bar_signal(unsigned *ctr) {
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(ctr) : "memory");
}

/* Thread 0 acquires the count, the barrier orders the block after it. */
__device__ __forceinline__ void bar_wait(const unsigned *ctr, unsigned target) {
    if (threadIdx.x == 0) {
        unsigned v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(ctr) : "memory");
        } while (v < target);
    }
    __syncthreads();
}

/* 8 bytes global -> shared, asynchronously (the gate inputs of a step,
 * fetched before the step's wait so their latency overlaps it). */
__device__ __forceinline__ void cp8(void *dst, const void *src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(src) : "memory");
}

/* Knock-outs for timing only (bench/cuda/bench_cuda_rec.cu): each leaves
 * one stage of a step out, so the step's time minus the variant's is that
 * stage's share. The trainer instantiates KO = 0 only. */
enum { KO_WAIT = 1, KO_LOAD = 2, KO_MMA = 4, KO_GATE_IO = 8 };

/* Forward over T steps. gates (N,G) holds x W_ih^T on entry and r, z, n on
 * exit; hprev (N,H) holds h0 at t=0 on entry. xch: 2 buffers of B x H. */
template <int KS, int KO>
__global__ void __launch_bounds__(NTH, 1)
    k_gru_fwd_rec(const float *__restrict__ w_hh, const float *__restrict__ b_ih, const float *__restrict__ b_hh,
                  int B, int T, int H, float *gates, float *ghn, float *hprev, float *h, __nv_bfloat16 *xch,
                  unsigned *bar) {
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned char *stage = smem;                          /* PB x H bf16, fragment order */
    float *red = (float *)(smem + (size_t)PB * H * 2);    /* [ug 3][m 4][q 4][12][32] */
    float2 *pre = (float2 *)(red + RED_FLOATS) + threadIdx.x; /* [6][NTH]: gate inputs */
    const int ub = blockIdx.x, bb = blockIdx.y, nub = gridDim.x;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
    const int ug = w % 3, kq = w / 3, KT = H >> 4;
    const size_t G = 3 * (size_t)H;

    uint32_t wf[3][KS][2];
#pragma unroll
    for (int nt = 0; nt < 3; nt++) {
        const float *row = w_hh + ((size_t)nt * H + (size_t)(ub * PU + ug * 8 + g)) * H;
#pragma unroll
        for (int s = 0; s < KS; s++) {
            int k0 = kq * KS * 16 + s * 16 + 2 * tg;
            wf[nt][s][0] = pack2(row[k0], row[k0 + 1]);
            wf[nt][s][1] = pack2(row[k0 + 8], row[k0 + 9]);
        }
    }
    /* This lane's elements: rows r0, r0+8 of m-tile kq; units j0, j0+1. */
    const int j0 = ub * PU + ug * 8 + 2 * tg, r0 = bb * PB + kq * 16 + g;
    float bi[3][2], bh[3][2], hp[4];
#pragma unroll
    for (int nt = 0; nt < 3; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) bi[nt][e] = b_ih[nt * H + j0 + e], bh[nt][e] = b_hh[nt * H + j0 + e];
    __nv_bfloat16 *const buf0 = xch, *const buf1 = xch + (size_t)B * H;
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        int r = r0 + 8 * hf;
        for (int e = 0; e < 2; e++) hp[2 * hf + e] = hprev[(size_t)r * T * H + j0 + e];
        *(uint32_t *)(buf0 + frag_at(r, j0, H)) = pack2(hp[2 * hf], hp[2 * hf + 1]);
    }
    bar_signal(bar + bb);

    for (int t = 0; t < T; t++) {
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const float *gi = gates + ((size_t)(r0 + 8 * hf) * T + t) * G + j0;
#pragma unroll
            for (int nt = 0; nt < 3; nt++) cp8(pre + (hf * 3 + nt) * NTH, gi + nt * H);
        }
        cp_commit();
        if (!(KO & KO_WAIT)) bar_wait(bar + bb, (unsigned)nub * (unsigned)(t + 1));
        const unsigned char *src = (const unsigned char *)(((t & 1) ? buf1 : buf0) + (size_t)bb * PB * H);
        if (!(KO & KO_LOAD))
            for (int i = threadIdx.x; i < PB * H / 8; i += NTH) cp16(stage + (size_t)i * 16, src + (size_t)i * 16);
        cp_wait_all();
        __syncthreads();
        float acc[4][3][4];
        acc_zero(acc);
        if (!(KO & KO_MMA))
#pragma unroll
            for (int s = 0; s < KS; s++)
#pragma unroll
                for (int m = 0; m < 4; m++)
                    mma3<KS>(acc[m], *(const uint4 *)(stage + (((size_t)m * KT + kq * KS + s) * 32 + lane) * 16), wf,
                             s);
#pragma unroll
        for (int m = 0; m < 4; m++)
#pragma unroll
            for (int nt = 0; nt < 3; nt++)
#pragma unroll
                for (int c = 0; c < 4; c++) red[(((ug * 4 + m) * 4 + kq) * 12 + nt * 4 + c) * 32 + lane] = acc[m][nt][c];
        __syncthreads();
        float p[3][4];
#pragma unroll
        for (int nt = 0; nt < 3; nt++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                float s = 0.0f;
#pragma unroll
                for (int q = 0; q < 4; q++) s += red[(((ug * 4 + kq) * 4 + q) * 12 + nt * 4 + c) * 32 + lane];
                p[nt][c] = s;
            }
        __nv_bfloat16 *nxt = (t & 1) ? buf0 : buf1;
        float o[2][5][2];
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float2 gr = pre[(hf * 3) * NTH], gz = pre[(hf * 3 + 1) * NTH], gn = pre[(hf * 3 + 2) * NTH];
            float iv[3][2] = {{gr.x, gr.y}, {gz.x, gz.y}, {gn.x, gn.y}};
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int c = 2 * hf + e;
                float rr = sigm(iv[0][e] + bi[0][e] + p[0][c] + bh[0][e]);
                float z = sigm(iv[1][e] + bi[1][e] + p[1][c] + bh[1][e]);
                float hn = p[2][c] + bh[2][e];
                float nn = tanhf(iv[2][e] + bi[2][e] + rr * hn);
                float hv = (1.0f - z) * nn + z * hp[c];
                o[hf][0][e] = rr, o[hf][1][e] = z, o[hf][2][e] = nn, o[hf][3][e] = hn, o[hf][4][e] = hv;
                hp[c] = hv;
            }
            *(uint32_t *)(nxt + frag_at(r0 + 8 * hf, j0, H)) = pack2(o[hf][4][0], o[hf][4][1]);
        }
        /* Only the bf16 state is waited for; the f32 outputs (read after
         * the kernel) are stored after the release, overlapping the next
         * step's wait. */
        bar_signal(bar + bb);
        if (!(KO & KO_GATE_IO))
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                size_t n = (size_t)(r0 + 8 * hf) * T + t;
                float *gi = gates + n * G;
                *(float2 *)(gi + j0) = make_float2(o[hf][0][0], o[hf][0][1]);
                *(float2 *)(gi + H + j0) = make_float2(o[hf][1][0], o[hf][1][1]);
                *(float2 *)(gi + 2 * H + j0) = make_float2(o[hf][2][0], o[hf][2][1]);
                *(float2 *)(ghn + n * H + j0) = make_float2(o[hf][3][0], o[hf][3][1]);
                *(float2 *)(h + n * H + j0) = make_float2(o[hf][4][0], o[hf][4][1]);
                if (t + 1 < T) *(float2 *)(hprev + (n + 1) * H + j0) = make_float2(o[hf][4][0], o[hf][4][1]);
            }
    }
}

/* Backward over T steps, t = T-1 down to 0, as the loop of cuda_gru_bwd:
 * writes dgi, dgh (N,G) in bf16 (the operands of the weight-gradient
 * products that follow) and dhc (B,H) = d_0 z_0. xch: 2 buffers of B x G. */
template <int KS, int KO>
__global__ void __launch_bounds__(NTH, 1)
    k_gru_bwd_rec(const float *__restrict__ w_hh, int B, int T, int H, const float *__restrict__ gates,
                  const float *__restrict__ ghn, const float *__restrict__ hprev, const float *__restrict__ dh,
                  __nv_bfloat16 *dgi, __nv_bfloat16 *dgh, float *dhc, __nv_bfloat16 *xch, unsigned *bar) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int ub = blockIdx.x, bb = blockIdx.y, nub = gridDim.x;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
    const size_t G = 3 * (size_t)H;
    const int KT = (int)(G >> 4);
    uint4 *ring = (uint4 *)smem + (size_t)w * RING * 4 * 32;     /* [RING][m 4][32 lanes] */
    float *red = (float *)(smem + (size_t)NW * RING * 4 * 512);   /* [q 12][tile 12][4][32] */
    float2 *pre = (float2 *)(red + RED_FLOATS) + threadIdx.x;    /* [12][NTH]: gate inputs */

    uint32_t wf[3][KS][2];
#pragma unroll
    for (int nt = 0; nt < 3; nt++) {
        const float *col = w_hh + (size_t)(ub * PU + nt * 8 + g);
#pragma unroll
        for (int s = 0; s < KS; s++) {
            size_t k0 = (size_t)w * KS * 16 + (size_t)s * 16 + 2 * (size_t)tg;
            wf[nt][s][0] = pack2(col[k0 * H], col[(k0 + 1) * H]);
            wf[nt][s][1] = pack2(col[(k0 + 8) * H], col[(k0 + 9) * H]);
        }
    }
    /* This lane's elements: m-tile w/3 rows r0, r0+8; units j0, j0+1. */
    const int mo = w / 3, j0 = ub * PU + (w % 3) * 8 + 2 * tg, r0 = bb * PB + mo * 16 + g;
    float dcz[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    __nv_bfloat16 *const buf0 = xch, *const buf1 = xch + (size_t)B * G;

    for (int t = T - 1; t >= 0; t--) {
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            size_t n = (size_t)(r0 + 8 * hf) * T + t;
            float2 *q = pre + hf * 6 * NTH;
            cp8(q, gates + n * G + j0);
            cp8(q + NTH, gates + n * G + H + j0);
            cp8(q + 2 * NTH, gates + n * G + 2 * H + j0);
            cp8(q + 3 * NTH, ghn + n * H + j0);
            cp8(q + 4 * NTH, hprev + n * H + j0);
            cp8(q + 5 * NTH, dh + n * H + j0);
        }
        cp_commit();
        float rec[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (t < T - 1) {
            if (!(KO & KO_WAIT)) bar_wait(bar + bb, (unsigned)nub * (unsigned)(T - 1 - t));
            /* This warp's twelfth of K: k-steps w*KS .. w*KS+KS-1 of 4 m-tiles. */
            const uint4 *src = (const uint4 *)((((t + 1) & 1) ? buf1 : buf0) + (size_t)bb * PB * G) + lane;
            float acc[4][3][4];
            acc_zero(acc);
#pragma unroll
            for (int s = 0; s < RING - 1; s++) {
                if (s < KS && !(KO & KO_LOAD))
#pragma unroll
                    for (int m = 0; m < 4; m++)
                        cp16(ring + ((s % RING) * 4 + m) * 32 + lane, src + ((size_t)m * KT + w * KS + s) * 32);
                cp_commit();
            }
#pragma unroll
            for (int s = 0; s < KS; s++) {
                int f = s + RING - 1;
                if (f < KS && !(KO & KO_LOAD))
#pragma unroll
                    for (int m = 0; m < 4; m++)
                        cp16(ring + ((f % RING) * 4 + m) * 32 + lane, src + ((size_t)m * KT + w * KS + f) * 32);
                cp_commit();
                cp_wait<RING - 1>();
                if (!(KO & KO_MMA))
#pragma unroll
                    for (int m = 0; m < 4; m++) mma3<KS>(acc[m], ring[((s % RING) * 4 + m) * 32 + lane], wf, s);
            }
#pragma unroll
            for (int m = 0; m < 4; m++)
#pragma unroll
                for (int nt = 0; nt < 3; nt++)
#pragma unroll
                    for (int c = 0; c < 4; c++) red[((w * 12 + m * 3 + nt) * 4 + c) * 32 + lane] = acc[m][nt][c];
            __syncthreads();
#pragma unroll
            for (int c = 0; c < 4; c++) {
                float s = 0.0f;
#pragma unroll
                for (int q = 0; q < NW; q++) s += red[((q * 12 + w) * 4 + c) * 32 + lane];
                rec[c] = s;
            }
        }
        cp_wait_all();
        __nv_bfloat16 *out = (t & 1) ? buf1 : buf0;
        uint32_t ov[2][4];
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            int r = r0 + 8 * hf;
            const float2 *q = pre + hf * 6 * NTH;
            float2 r2 = q[0], z2 = q[NTH], n2 = q[2 * NTH], hn2 = q[3 * NTH], hp2 = q[4 * NTH], dh2 = q[5 * NTH];
            float rv[2] = {r2.x, r2.y}, zv[2] = {z2.x, z2.y}, nv[2] = {n2.x, n2.y}, hnv[2] = {hn2.x, hn2.y};
            float hpv[2] = {hp2.x, hp2.y}, dhv[2] = {dh2.x, dh2.y}, o[4][2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int c = 2 * hf + e;
                float rr = rv[e], z = zv[e], nn = nv[e];
                float d = dhv[e] + (rec[c] + dcz[c]);
                float dnp = d * (1.0f - z) * (1.0f - nn * nn);
                float dzp = d * (hpv[e] - nn) * z * (1.0f - z);
                float drp = dnp * hnv[e] * rr * (1.0f - rr);
                o[0][e] = drp, o[1][e] = dzp, o[2][e] = dnp, o[3][e] = dnp * rr;
                dcz[c] = d * z;
            }
#pragma unroll
            for (int k = 0; k < 4; k++) ov[hf][k] = pack2(o[k][0], o[k][1]);
            *(uint32_t *)(out + frag_at(r, j0, (int)G)) = ov[hf][0];
            *(uint32_t *)(out + frag_at(r, H + j0, (int)G)) = ov[hf][1];
            *(uint32_t *)(out + frag_at(r, 2 * H + j0, (int)G)) = ov[hf][3];
        }
        /* The gradients for the products after the kernel are stored after
         * the release (only the exchanged state is waited for). */
        bar_signal(bar + bb);
        if (!(KO & KO_GATE_IO))
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                size_t n = (size_t)(r0 + 8 * hf) * T + t;
                __nv_bfloat16 *di = dgi + n * G, *dg = dgh + n * G;
                *(uint32_t *)(di + j0) = ov[hf][0];
                *(uint32_t *)(di + H + j0) = ov[hf][1];
                *(uint32_t *)(di + 2 * H + j0) = ov[hf][2];
                *(uint32_t *)(dg + j0) = ov[hf][0];
                *(uint32_t *)(dg + H + j0) = ov[hf][1];
                *(uint32_t *)(dg + 2 * H + j0) = ov[hf][3];
            }
    }
#pragma unroll
    for (int c = 0; c < 4; c++) dhc[(size_t)(r0 + 8 * (c >> 1)) * H + j0 + (c & 1)] = dcz[c];
}

size_t fwd_smem(int H) { return (size_t)PB * H * 2 + (size_t)RED_FLOATS * 4 + 6 * NTH * 8; }
size_t bwd_smem() { return (size_t)NW * RING * 4 * 512 + (size_t)RED_FLOATS * 4 + 12 * NTH * 8; }

typedef void (*fwd_fn)(const float *, const float *, const float *, int, int, int, float *, float *, float *,
                       float *, __nv_bfloat16 *, unsigned *);
typedef void (*bwd_fn)(const float *, int, int, int, const float *, const float *, const float *, const float *,
                       __nv_bfloat16 *, __nv_bfloat16 *, float *, __nv_bfloat16 *, unsigned *);

/* The trainer's instantiations (KO = 0): KS = H/64 k-steps per warp, H in
 * {192, 384, 576, 768}. */
bool rec_kernels(int H, fwd_fn *f, bwd_fn *b) {
    if (H <= 0 || H % 192 != 0 || H > 768) return false;
    switch (H / 64) {
    case 3: *f = k_gru_fwd_rec<3, 0>, *b = k_gru_bwd_rec<3, 0>; return true;
    case 6: *f = k_gru_fwd_rec<6, 0>, *b = k_gru_bwd_rec<6, 0>; return true;
    case 9: *f = k_gru_fwd_rec<9, 0>, *b = k_gru_bwd_rec<9, 0>; return true;
    case 12: *f = k_gru_fwd_rec<12, 0>, *b = k_gru_bwd_rec<12, 0>; return true;
    }
    return false;
}

bool prepare(fwd_fn f, bwd_fn b, int H) {
    return !cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)fwd_smem(H)) &&
           !cudaFuncSetAttribute((const void *)b, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bwd_smem());
}

/* The launches return the cooperative launch's status: it fails (and the
 * kernel does not run) when the grid cannot be co-resident. */
cudaError_t launch_fwd(fwd_fn f, cudaStream_t st, const float *w_hh, const float *b_ih, const float *b_hh, int B,
                       int T, int H, float *gates, float *ghn, float *hprev, float *h, __nv_bfloat16 *x,
                       unsigned *bar) {
    cudaMemsetAsync(bar, 0, (size_t)(B / PB) * sizeof(unsigned), st);
    void *args[] = {&w_hh, &b_ih, &b_hh, &B, &T, &H, &gates, &ghn, &hprev, &h, &x, &bar};
    return cudaLaunchCooperativeKernel((const void *)f, dim3(H / PU, B / PB), dim3(NTH), args, fwd_smem(H), st);
}

cudaError_t launch_bwd(bwd_fn b, cudaStream_t st, const float *w_hh, int B, int T, int H, const float *gates,
                       const float *ghn, const float *hprev, const float *dh, __nv_bfloat16 *dgi, __nv_bfloat16 *dgh,
                       float *dhc, __nv_bfloat16 *x, unsigned *bar) {
    cudaMemsetAsync(bar, 0, (size_t)(B / PB) * sizeof(unsigned), st);
    void *args[] = {&w_hh, &B, &T, &H, &gates, &ghn, &hprev, &dh, &dgi, &dgh, &dhc, &x, &bar};
    return cudaLaunchCooperativeKernel((const void *)b, dim3(H / PU, B / PB), dim3(NTH), args, bwd_smem(), st);
}

} // namespace

#endif
