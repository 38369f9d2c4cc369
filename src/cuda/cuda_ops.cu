/* cuda_ops.cu - kernels and cuBLAS calls of the CUDA trainer; the contract
 * of each function is in cuda_ops.h, its specification the CPU op of the
 * same name in src/train/train_ops.c (same formulas, same operation order
 * inside each element, so differences come from summation order and the
 * matrix units only).
 *
 * Launch shapes: element-wise kernels one thread per element; per-row
 * reductions (RMSNorm, softmax) one block per row; attention one warp per
 * row (D is spread over the lanes, the W <= 16 scores live in registers,
 * indexed only by unrolled constants). */
#include "cuda/cuda_ops.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "util/err.h"
}

static inline cudaStream_t S(const cuda_ctx *c) { return (cudaStream_t)c->stream; }
static inline unsigned nblk(size_t n, unsigned t) { return (unsigned)((n + t - 1) / t); }

/* ---- context ---- */

enum { BLAS_WS_BYTES = 32 << 20 };

int cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

void cuda_device_name(char *buf, size_t n) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        snprintf(buf, n, "no CUDA device");
        return;
    }
    snprintf(buf, n, "%s, %d SMs, %.0f GiB", p.name, p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30));
}

laya_status cuda_ctx_init(cuda_ctx *c, cuda_math math, size_t red_floats, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->math = math;
    c->split = 1;
    if (cuda_device_count() < 1)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "no CUDA device (driver missing or no GPU)");
    cudaStream_t st;
    cublasHandle_t h;
    /* A blocking stream: plain cudaMemcpy/cudaMemset calls (legacy default
     * stream) stay ordered with the work enqueued here. */
    if (cudaStreamCreate(&st) != cudaSuccess)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot create a CUDA stream: %s",
                       cudaGetErrorString(cudaGetLastError()));
    c->stream = st;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        cuda_ctx_free(c);
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot create a cuBLAS handle");
    }
    c->blas = h;
    c->red_floats = red_floats < 2 * CUDA_SUMSQ_BLOCKS + 2 ? 2 * CUDA_SUMSQ_BLOCKS + 2 : red_floats;
    if (cudaMalloc(&c->blas_ws, BLAS_WS_BYTES) != cudaSuccess ||
        cudaMalloc((void **)&c->red, c->red_floats * sizeof(float)) != cudaSuccess) {
        cudaGetLastError();
        cuda_ctx_free(c);
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate CUDA scratch memory");
    }
    /* A fixed workspace: cuBLAS then allocates nothing while a graph is
     * being captured. */
    if (cublasSetStream(h, st) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(h, c->blas_ws, BLAS_WS_BYTES) != CUBLAS_STATUS_SUCCESS ||
        cublasSetMathMode(h, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
        cuda_ctx_free(c);
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot configure cuBLAS");
    }
    return LAYA_OK;
}

static laya_status blas_new(void **h, void **ws, void *stream, char *err, size_t errlen) {
    cublasHandle_t b;
    if (cublasCreate(&b) != CUBLAS_STATUS_SUCCESS)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot create a cuBLAS handle");
    *h = b;
    if (cudaMalloc(ws, BLAS_WS_BYTES) != cudaSuccess) {
        cudaGetLastError();
        *ws = NULL;
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate a cuBLAS workspace");
    }
    if (cublasSetStream(b, (cudaStream_t)stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(b, *ws, BLAS_WS_BYTES) != CUBLAS_STATUS_SUCCESS)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot configure cuBLAS");
    return LAYA_OK;
}

laya_status cuda_ctx_set_split(cuda_ctx *c, int split, char *err, size_t errlen) {
    if (split < 1) split = 1;
    if (split > CUDA_MAX_SPLIT) split = CUDA_MAX_SPLIT;
    if (!c->ev_fork) {
        cudaEvent_t e;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess)
            return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot create a CUDA event");
        c->ev_fork = e;
    }
    for (int k = 0; k < split; k++) {
        if (c->side[k]) continue;
        cudaStream_t st;
        cudaEvent_t e;
        if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
            return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot create a CUDA stream");
        c->side[k] = st;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess)
            return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot create a CUDA event");
        c->ev_join[k] = e;
        laya_status s = blas_new(&c->side_blas[k], &c->side_ws[k], st, err, errlen);
        if (s != LAYA_OK) return s;
    }
    c->split = split;
    return LAYA_OK;
}

void cuda_ctx_free(cuda_ctx *c) {
    for (int k = 0; k < CUDA_MAX_SPLIT; k++) {
        if (c->side_blas[k]) cublasDestroy((cublasHandle_t)c->side_blas[k]);
        if (c->side_ws[k]) cudaFree(c->side_ws[k]);
        if (c->side[k]) cudaStreamDestroy((cudaStream_t)c->side[k]);
        if (c->ev_join[k]) cudaEventDestroy((cudaEvent_t)c->ev_join[k]);
    }
    if (c->ev_fork) cudaEventDestroy((cudaEvent_t)c->ev_fork);
    if (c->blas) cublasDestroy((cublasHandle_t)c->blas);
    if (c->blas_ws) cudaFree(c->blas_ws);
    if (c->red) cudaFree(c->red);
    cuda_rec_free(c);
    if (c->stream) cudaStreamDestroy(S(c));
    memset(c, 0, sizeof *c);
}

laya_status cuda_ctx_check(cuda_ctx *c, const char *what, char *err, size_t errlen) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return err_set(err, errlen, LAYA_ERR_INTERNAL, "%s: CUDA error: %s", what, cudaGetErrorString(e));
    if (c->blas_status) {
        int b = c->blas_status;
        c->blas_status = 0;
        return err_set(err, errlen, LAYA_ERR_INTERNAL, "%s: cuBLAS error %d", what, b);
    }
    if (c->rec_status) {
        cudaError_t r = (cudaError_t)c->rec_status;
        c->rec_status = 0;
        return err_set(err, errlen, LAYA_ERR_INTERNAL,
                       "%s: the persistent recurrence's cooperative launch failed: %s (its blocks must all fit "
                       "on the GPU at once: is another process using it?)", what, cudaGetErrorString(r));
    }
    return LAYA_OK;
}

laya_status cuda_ctx_sync(cuda_ctx *c, const char *what, char *err, size_t errlen) {
    cudaError_t e = cudaStreamSynchronize(S(c));
    if (e != cudaSuccess)
        return err_set(err, errlen, LAYA_ERR_INTERNAL, "%s: CUDA error: %s", what, cudaGetErrorString(e));
    return cuda_ctx_check(c, what, err, errlen);
}

/* ---- matrix products ---- */

static void gemm_h(cuda_ctx *c, void *handle, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                   int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    cublasComputeType_t ct = c->math == CUDA_MATH_TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                             : c->math == CUDA_MATH_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                         : CUBLAS_COMPUTE_32F;
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
     * same arrays, operands swapped. */
    cublasStatus_t st = cublasGemmEx((cublasHandle_t)handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_32F, ldb, A,
                                     CUDA_R_32F, lda, &beta, C, CUDA_R_32F, ldc, ct, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS && !c->blas_status) c->blas_status = (int)st;
}

void cuda_gemm(cuda_ctx *c, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc) {
    gemm_h(c, c->blas, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* As cuda_gemm with bf16 operands (f32 accumulation and C): the products
 * whose operands the persistent recurrences already hold in bf16. */
static void gemm_bf16(cuda_ctx *c, int ta, int tb, int M, int N, int K, float alpha, const __nv_bfloat16 *A, int lda,
                      const __nv_bfloat16 *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    cublasStatus_t st = cublasGemmEx((cublasHandle_t)c->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16BF, ldb, A,
                                     CUDA_R_16BF, lda, &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS && !c->blas_status) c->blas_status = (int)st;
}

/* n f32 -> bf16 (round to nearest even), two per thread. */
__global__ void k_to_bf16(const float *__restrict__ x, size_t n, __nv_bfloat16 *y) {
    size_t i = 2 * ((size_t)blockIdx.x * blockDim.x + threadIdx.x);
    if (i + 1 < n) {
        float2 v = *(const float2 *)(x + i);
        *(__nv_bfloat162 *)(y + i) = __floats2bfloat162_rn(v.x, v.y);
    } else if (i < n) {
        y[i] = __float2bfloat16_rn(x[i]);
    }
}

static void to_bf16(cuda_ctx *c, const float *x, size_t n, __nv_bfloat16 *y) {
    if (n) k_to_bf16<<<nblk((n + 1) / 2, 256), 256, 0, S(c)>>>(x, n, y);
}

/* Batch chain k of n over B rows: rows [*b0, *b0 + *nb). */
static void chain_rows(int B, int n, int k, int *b0, int *nb) {
    *b0 = (int)((long long)B * k / n);
    *nb = (int)((long long)B * (k + 1) / n) - *b0;
}

static int chains(const cuda_ctx *c, int B) { return c->split < B ? c->split : B; }

static void fork_chains(cuda_ctx *c, int n) {
    if (n < 2) return;
    cudaEventRecord((cudaEvent_t)c->ev_fork, S(c));
    for (int k = 0; k < n; k++) cudaStreamWaitEvent((cudaStream_t)c->side[k], (cudaEvent_t)c->ev_fork, 0);
}

static void join_chains(cuda_ctx *c, int n) {
    if (n < 2) return;
    for (int k = 0; k < n; k++) {
        cudaEventRecord((cudaEvent_t)c->ev_join[k], (cudaStream_t)c->side[k]);
        cudaStreamWaitEvent(S(c), (cudaEvent_t)c->ev_join[k], 0);
    }
}

/* ---- block and warp reductions (fixed shapes, so fixed order) ---- */

__device__ inline float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ inline float warp_max(float v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Every thread of the block gets the result; blockDim.x a multiple of 32. */
__device__ float block_sum(float v) {
    __shared__ float sh[32];
    v = warp_sum(v);
    int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    float t = l < (int)(blockDim.x >> 5) ? sh[l] : 0.0f;
    return warp_sum(t);
}

__device__ float block_max(float v) {
    __shared__ float sh[32];
    v = warp_max(v);
    int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    float t = l < (int)(blockDim.x >> 5) ? sh[l] : -INFINITY;
    return warp_max(t);
}

/* Double tree over a block of 1024 threads; thread 0 gets the result. */
__device__ double block_sum_d1024(double v) {
    __shared__ double sh[1024];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    return sh[0];
}

/* ---- column sums ---- */

__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename E>
__global__ void k_colsum_part(const E *__restrict__ a, const float *__restrict__ x,
                              const float *__restrict__ rs, int rows, int cols, int ld, float *part) {
    __shared__ float sh[8][33];
    int col = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y;
    int r0 = (int)((long long)rows * r / CUDA_COLSUM_PARTS);
    int r1 = (int)((long long)rows * (r + 1) / CUDA_COLSUM_PARTS);
    float s = 0.0f;
    if (col < cols)
        for (int n = r0 + (int)threadIdx.y; n < r1; n += 8) {
            float v = to_f(a[(size_t)n * ld + col]);
            if (x) v = v * x[(size_t)n * ld + col] * rs[n];
            s += v;
        }
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
        float t = 0.0f;
        for (int k = 0; k < 8; k++) t += sh[k][threadIdx.x];
        part[(size_t)r * cols + col] = t;
    }
}

__global__ void k_colsum_fin(const float *__restrict__ part, int cols, float *out) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < CUDA_COLSUM_PARTS; r++) s += part[(size_t)r * cols + col];
    out[col] += s;
}

template <typename E>
static void colsum_acc(cuda_ctx *c, const E *a, const float *x, const float *rs, int rows, int cols, int ld,
                       float *out) {
    if (cols <= 0) return;
    if ((size_t)cols * CUDA_COLSUM_PARTS > c->red_floats) {
        if (!c->blas_status) c->blas_status = -1; /* scratch too small: a caller bug */
        return;
    }
    k_colsum_part<E><<<dim3(nblk(cols, 32), CUDA_COLSUM_PARTS), dim3(32, 8), 0, S(c)>>>(a, x, rs, rows, cols, ld,
                                                                                         c->red);
    k_colsum_fin<<<nblk(cols, 256), 256, 0, S(c)>>>(c->red, cols, out);
}

void cuda_colsum_acc(cuda_ctx *c, const float *a, const float *x, const float *rs, int rows, int cols,
                     int ld, float *out) {
    colsum_acc(c, a, x, rs, rows, cols, ld, out);
}

/* ---- embedding ---- */

__global__ void k_embed_fwd(const float *__restrict__ emb, const int32_t *__restrict__ ids, int H, float *x) {
    size_t n = blockIdx.x;
    const float *src = emb + (size_t)ids[n] * H;
    for (int j = threadIdx.x; j < H; j += blockDim.x) x[n * H + j] = src[j];
}

void cuda_embed_fwd(cuda_ctx *c, const float *emb, const int32_t *ids, int N, int H, float *x) {
    if (N > 0) k_embed_fwd<<<N, 256, 0, S(c)>>>(emb, ids, H, x);
}

size_t cuda_embed_index_ints(int N) { return 1 + (size_t)N + ((size_t)N + 1) + (size_t)N; }

void cuda_embed_index(const int32_t *ids, int N, int V, int32_t *counts, int32_t *idx) {
    int32_t *tok = idx + 1, *start = tok + N, *order = start + N + 1;
    memset(counts, 0, (size_t)V * sizeof(int32_t));
    for (int n = 0; n < N; n++)
        if (ids[n] >= 0 && ids[n] < V) counts[ids[n]]++;
    int g = 0, pos = 0;
    for (int v = 0; v < V; v++) {
        if (!counts[v]) continue;
        tok[g] = v;
        start[g] = pos;
        pos += counts[v];
        counts[v] = start[g]; /* from here on: the next free slot of v */
        g++;
    }
    start[g] = pos;
    for (int n = 0; n < N; n++)
        if (ids[n] >= 0 && ids[n] < V) order[counts[ids[n]]++] = n;
    idx[0] = g;
}

__global__ void k_embed_bwd(const int32_t *__restrict__ idx, int N, int H, const float *__restrict__ dx,
                            float *demb) {
    int g = blockIdx.x;
    if (g >= idx[0]) return;
    const int32_t *tok = idx + 1, *start = tok + N, *order = start + N + 1;
    int j = blockIdx.y * blockDim.x + threadIdx.x;
    if (j >= H) return;
    size_t at = (size_t)tok[g] * H + j;
    float s = demb[at];
    int k1 = start[g + 1];
#pragma unroll 8
    for (int k = start[g]; k < k1; k++) s += dx[(size_t)order[k] * H + j];
    demb[at] = s;
}

void cuda_embed_bwd(cuda_ctx *c, const int32_t *idx, int N, int V, int H, const float *dx, float *demb) {
    int groups = N < V ? N : V;
    if (groups > 0) k_embed_bwd<<<dim3(groups, nblk(H, 128)), 128, 0, S(c)>>>(idx, N, H, dx, demb);
}

/* ---- dropout ---- */

__host__ __device__ inline uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t cuda_dropout_key(uint64_t seed, uint64_t salt) { return mix64(seed ^ mix64(salt)); }

__global__ void k_dropout(const uint64_t *__restrict__ key, float p, float sc, size_t n, float *x) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t r = mix64(*key + (uint64_t)i);
    int keep = (double)(r >> 40) * (1.0 / 16777216.0) >= (double)p;
    x[i] = keep ? x[i] * sc : 0.0f;
}

void cuda_dropout(cuda_ctx *c, const uint64_t *key, float p, size_t n, float *x) {
    if (p <= 0.0f || n == 0) return;
    float sc = 1.0f / (1.0f - p);
    k_dropout<<<nblk(n, 256), 256, 0, S(c)>>>(key, p, sc, n, x);
}

/* ---- GRU ---- */

__device__ inline float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Step t: gates of row n = b*T + t from the input projections (in gates,
 * without bias) and the recurrent ones gh (B,G). */
__global__ void k_gru_fwd_step(const float *__restrict__ b_ih, const float *__restrict__ b_hh, int T, int H,
                               int t, int b0, float *gates, const float *__restrict__ gh, float *ghn, float *hprev,
                               float *h) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, b = b0 + (int)blockIdx.y;
    if (j >= H) return;
    size_t n = (size_t)b * T + t, G = 3 * (size_t)H;
    float *gi = gates + n * G;
    const float *g = gh + (size_t)b * G;
    float r = sigm(gi[j] + b_ih[j] + g[j] + b_hh[j]);
    float z = sigm(gi[H + j] + b_ih[H + j] + g[H + j] + b_hh[H + j]);
    float hn = g[2 * H + j] + b_hh[2 * H + j];
    float nn = tanhf(gi[2 * H + j] + b_ih[2 * H + j] + r * hn);
    float hv = (1.0f - z) * nn + z * hprev[n * H + j];
    gi[j] = r;
    gi[H + j] = z;
    gi[2 * H + j] = nn;
    ghn[n * H + j] = hn;
    h[n * H + j] = hv;
    if (t + 1 < T) hprev[(n + 1) * H + j] = hv;
}

void cuda_gru_fwd(cuda_ctx *c, const cuda_gru_w *w, int B, int T, int H, const float *x, const float *h0,
                  float *gates, float *ghn, float *hprev, float *h, float *scratch) {
    int N = B * T, G = 3 * H;
    size_t ldt = (size_t)T * H;
    cuda_gemm(c, 0, 1, N, G, H, 1.0f, x, H, w->w_ih, H, 0.0f, gates, G);
    if (h0)
        cudaMemcpy2DAsync(hprev, ldt * sizeof(float), h0, (size_t)H * sizeof(float), (size_t)H * sizeof(float), B,
                          cudaMemcpyDeviceToDevice, S(c));
    else
        cudaMemset2DAsync(hprev, ldt * sizeof(float), 0, (size_t)H * sizeof(float), B, S(c));
    if (cuda_rec_applies(c, B, H)) {
        cuda_rec_fwd(c, w, B, T, H, gates, ghn, hprev, h);
        return;
    }
    int n = chains(c, B);
    fork_chains(c, n);
    /* Chain k issues its whole recurrence on its own stream and handle. */
    for (int k = 0; k < n; k++) {
        int b0, nb;
        chain_rows(B, n, k, &b0, &nb);
        cudaStream_t st = n > 1 ? (cudaStream_t)c->side[k] : S(c);
        void *hd = n > 1 ? c->side_blas[k] : c->blas;
        dim3 grid(nblk(H, 128), nb);
        for (int t = 0; t < T; t++) {
            gemm_h(c, hd, 0, 1, nb, G, H, 1.0f, hprev + (size_t)b0 * ldt + (size_t)t * H, (int)ldt, w->w_hh, H, 0.0f,
                   scratch + (size_t)b0 * G, G);
            k_gru_fwd_step<<<grid, 128, 0, st>>>(w->b_ih, w->b_hh, T, H, t, b0, gates, scratch, ghn, hprev, h);
        }
    }
    join_chains(c, n);
}

__global__ void k_gru_bwd_step(int T, int H, int t, int b0, const float *__restrict__ gates,
                               const float *__restrict__ ghn, const float *__restrict__ hprev,
                               const float *__restrict__ dh, float *dgi, float *dgh, float *dhc) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, b = b0 + (int)blockIdx.y;
    if (j >= H) return;
    size_t n = (size_t)b * T + t, G = 3 * (size_t)H;
    const float *ga = gates + n * G;
    float *di = dgi + n * G, *dg = dgh + n * G, *dc = dhc + (size_t)b * H;
    float r = ga[j], z = ga[H + j], nn = ga[2 * H + j];
    float d = dh[n * H + j] + dc[j];
    float dnp = d * (1.0f - z) * (1.0f - nn * nn);
    float dzp = d * (hprev[n * H + j] - nn) * z * (1.0f - z);
    float drp = dnp * ghn[n * H + j] * r * (1.0f - r);
    di[j] = drp;
    di[H + j] = dzp;
    di[2 * H + j] = dnp;
    dg[j] = drp;
    dg[H + j] = dzp;
    dg[2 * H + j] = dnp * r;
    dc[j] = d * z;
}

void cuda_gru_bwd(cuda_ctx *c, const cuda_gru_w *w, cuda_gru_g *g, int B, int T, int H, const float *x,
                  const float *gates, const float *ghn, const float *hprev, const float *dh, float *dgi,
                  float *dgh, float *dhc, float *dx) {
    int N = B * T, G = 3 * H;
    if (cuda_rec_applies(c, B, H)) {
        /* bf16 operands throughout, as CUDA_MATH_BF16's cuBLAS products
         * round their f32 operands: dgi16 and dgh16 in dgi's storage, hprev
         * and x in dgh's, W_ih in the context's. */
        __nv_bfloat16 *dgi16 = (__nv_bfloat16 *)dgi, *dgh16 = dgi16 + (size_t)N * G;
        __nv_bfloat16 *h16 = (__nv_bfloat16 *)dgh, *x16 = h16 + (size_t)N * H, *w16 = (__nv_bfloat16 *)c->rec_w16;
        cuda_rec_bwd(c, w, B, T, H, gates, ghn, hprev, dh, dgi16, dgh16, dhc);
        to_bf16(c, hprev, (size_t)N * H, h16);
        to_bf16(c, x, (size_t)N * H, x16);
        to_bf16(c, w->w_ih, (size_t)G * H, w16);
        gemm_bf16(c, 1, 0, G, H, N, 1.0f, dgh16, G, h16, H, 1.0f, g->w_hh, H);
        gemm_bf16(c, 1, 0, G, H, N, 1.0f, dgi16, G, x16, H, 1.0f, g->w_ih, H);
        colsum_acc(c, dgh16, NULL, NULL, N, G, G, g->b_hh);
        colsum_acc(c, dgi16, NULL, NULL, N, G, G, g->b_ih);
        gemm_bf16(c, 0, 0, N, H, G, 1.0f, dgi16, G, w16, H, 0.0f, dx, H);
        return;
    }
    cudaMemsetAsync(dhc, 0, (size_t)B * H * sizeof(float), S(c));
    int n = chains(c, B);
    fork_chains(c, n);
    for (int k = 0; k < n; k++) {
        int b0, nb;
        chain_rows(B, n, k, &b0, &nb);
        cudaStream_t st = n > 1 ? (cudaStream_t)c->side[k] : S(c);
        void *hd = n > 1 ? c->side_blas[k] : c->blas;
        dim3 grid(nblk(H, 128), nb);
        for (int t = T - 1; t >= 0; t--) {
            k_gru_bwd_step<<<grid, 128, 0, st>>>(T, H, t, b0, gates, ghn, hprev, dh, dgi, dgh, dhc);
            if (t > 0)
                gemm_h(c, hd, 0, 0, nb, H, G, 1.0f, dgh + (size_t)b0 * T * G + (size_t)t * G, T * G, w->w_hh, H, 1.0f,
                       dhc + (size_t)b0 * H, H);
        }
    }
    join_chains(c, n);
    cuda_gemm(c, 1, 0, G, H, N, 1.0f, dgh, G, hprev, H, 1.0f, g->w_hh, H);
    cuda_gemm(c, 1, 0, G, H, N, 1.0f, dgi, G, x, H, 1.0f, g->w_ih, H);
    cuda_colsum_acc(c, dgh, NULL, NULL, N, G, G, g->b_hh);
    cuda_colsum_acc(c, dgi, NULL, NULL, N, G, G, g->b_ih);
    cuda_gemm(c, 0, 0, N, H, G, 1.0f, dgi, G, w->w_ih, H, 0.0f, dx, H);
}

/* ---- local attention ---- */

/* One warp per row n: scores against the keys of the last W positions of
 * its window, softmax, and the weighted sum of their values. */
__global__ void k_attn_fwd(const float *__restrict__ qkv, int N, int T, int D, int W, float scale, float *att,
                           float *ctx) {
    int n = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (n >= N) return;
    int t = n % T;
    size_t D3 = 3 * (size_t)D;
    const float *q = qkv + (size_t)n * D3;
    float a[CUDA_MAX_W], mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < CUDA_MAX_W; j++) {
        a[j] = -INFINITY;
        int dt = W - 1 - j;
        if (j < W && dt <= t) {
            const float *k = qkv + (size_t)(n - dt) * D3 + D;
            float s = 0.0f;
            for (int i = lane; i < D; i += 32) s += q[i] * k[i];
            a[j] = warp_sum(s) * scale;
            mx = fmaxf(mx, a[j]);
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < CUDA_MAX_W; j++)
        if (j < W) {
            a[j] = a[j] == -INFINITY ? 0.0f : expf(a[j] - mx);
            sum += a[j];
        }
#pragma unroll
    for (int j = 0; j < CUDA_MAX_W; j++)
        if (j < W) {
            a[j] /= sum;
            if (lane == 0) att[(size_t)n * W + j] = a[j];
        }
    for (int i = lane; i < D; i += 32) {
        float cc = 0.0f;
#pragma unroll
        for (int j = 0; j < CUDA_MAX_W; j++)
            if (j < W && a[j] != 0.0f) cc += a[j] * qkv[(size_t)(n - (W - 1 - j)) * D3 + 2 * D + i];
        ctx[(size_t)n * D + i] = cc;
    }
}

void cuda_attn_fwd(cuda_ctx *c, const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                   const float *h, float *qkv, float *att, float *ctx, float *out) {
    int N = B * T, D3 = 3 * D;
    float scale = 1.0f / sqrtf((float)D);
    cuda_gemm(c, 0, 1, N, D3, H, 1.0f, h, H, wqkv, H, 0.0f, qkv, D3);
    k_attn_fwd<<<nblk((size_t)N * 32, 256), 256, 0, S(c)>>>(qkv, N, T, D, W, scale, att, ctx);
    cudaMemcpyAsync(out, h, (size_t)N * H * sizeof(float), cudaMemcpyDeviceToDevice, S(c));
    cuda_gemm(c, 0, 1, N, H, D, 1.0f, ctx, D, wo, D, 1.0f, out, H);
}

/* Pass A, one warp per row n: score gradients ds (kept in dsc) and dq. */
__global__ void k_attn_bwd_a(const float *__restrict__ qkv, const float *__restrict__ att,
                             const float *__restrict__ dctx, int N, int T, int D, int W, float scale, float *dsc,
                             float *dqkv) {
    int n = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (n >= N) return;
    int t = n % T;
    size_t D3 = 3 * (size_t)D;
    const float *dc = dctx + (size_t)n * D;
    float a[CUDA_MAX_W], da[CUDA_MAX_W], dot = 0.0f;
#pragma unroll
    for (int j = 0; j < CUDA_MAX_W; j++) {
        a[j] = 0.0f;
        da[j] = 0.0f;
        int dt = W - 1 - j;
        if (j < W && dt <= t) {
            a[j] = att[(size_t)n * W + j];
            const float *v = qkv + (size_t)(n - dt) * D3 + 2 * D;
            float s = 0.0f;
            for (int i = lane; i < D; i += 32) s += dc[i] * v[i];
            da[j] = warp_sum(s);
            dot += a[j] * da[j];
        }
    }
    float ds[CUDA_MAX_W];
#pragma unroll
    for (int j = 0; j < CUDA_MAX_W; j++) {
        ds[j] = 0.0f;
        if (j < W && W - 1 - j <= t) ds[j] = a[j] * (da[j] - dot) * scale;
        if (j < W && lane == 0) dsc[(size_t)n * W + j] = ds[j];
    }
    for (int i = lane; i < D; i += 32) {
        float dq = 0.0f;
#pragma unroll
        for (int j = 0; j < CUDA_MAX_W; j++)
            if (j < W && W - 1 - j <= t) dq += ds[j] * qkv[(size_t)(n - (W - 1 - j)) * D3 + D + i];
        dqkv[(size_t)n * D3 + i] = dq;
    }
}

/* Pass B, one warp per row m: dk and dv gathered from the rows n = m..m+W-1
 * of the same window that attend to m, in increasing n (the CPU's order). */
__global__ void k_attn_bwd_b(const float *__restrict__ qkv, const float *__restrict__ att,
                             const float *__restrict__ dctx, const float *__restrict__ dsc, int N, int T, int D,
                             int W, float *dqkv) {
    int m = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (m >= N) return;
    int t = m % T;
    size_t D3 = 3 * (size_t)D;
    for (int i = lane; i < D; i += 32) {
        float dk = 0.0f, dv = 0.0f;
        for (int dt = 0; dt < W && t + dt < T; dt++) {
            size_t n = (size_t)m + dt;
            int j = W - 1 - dt;
            dk += dsc[n * W + j] * qkv[n * D3 + i];
            dv += att[n * W + j] * dctx[n * D + i];
        }
        dqkv[(size_t)m * D3 + D + i] = dk;
        dqkv[(size_t)m * D3 + 2 * D + i] = dv;
    }
}

void cuda_attn_bwd(cuda_ctx *c, const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                   const float *h, const float *qkv, const float *att, const float *ctx, const float *dout,
                   float *dqkv, float *dctx, float *dsc, float *dwqkv, float *dwo, float *dh) {
    int N = B * T, D3 = 3 * D;
    float scale = 1.0f / sqrtf((float)D);
    cuda_gemm(c, 1, 0, H, D, N, 1.0f, dout, H, ctx, D, 1.0f, dwo, D);
    cuda_gemm(c, 0, 0, N, D, H, 1.0f, dout, H, wo, D, 0.0f, dctx, D);
    unsigned grid = nblk((size_t)N * 32, 256);
    k_attn_bwd_a<<<grid, 256, 0, S(c)>>>(qkv, att, dctx, N, T, D, W, scale, dsc, dqkv);
    k_attn_bwd_b<<<grid, 256, 0, S(c)>>>(qkv, att, dctx, dsc, N, T, D, W, dqkv);
    cuda_gemm(c, 1, 0, D3, H, N, 1.0f, dqkv, D3, h, H, 1.0f, dwqkv, H);
    cudaMemcpyAsync(dh, dout, (size_t)N * H * sizeof(float), cudaMemcpyDeviceToDevice, S(c));
    cuda_gemm(c, 0, 0, N, H, D3, 1.0f, dqkv, D3, wqkv, H, 1.0f, dh, H);
}

/* ---- RMSNorm ---- */

__global__ void k_rms_fwd(const float *__restrict__ g, int H, float eps, const float *__restrict__ x, float *y,
                          float *rs) {
    size_t n = blockIdx.x;
    const float *xr = x + n * H;
    float ss = 0.0f;
    for (int j = threadIdx.x; j < H; j += blockDim.x) ss += xr[j] * xr[j];
    ss = block_sum(ss);
    float r = 1.0f / sqrtf(ss / (float)H + eps);
    if (threadIdx.x == 0) rs[n] = r;
    for (int j = threadIdx.x; j < H; j += blockDim.x) y[n * H + j] = xr[j] * r * g[j];
}

void cuda_rmsnorm_fwd(cuda_ctx *c, const float *g, int N, int H, float eps, const float *x, float *y, float *rs) {
    if (N > 0) k_rms_fwd<<<N, 256, 0, S(c)>>>(g, H, eps, x, y, rs);
}

__global__ void k_rms_bwd(const float *__restrict__ g, int H, const float *__restrict__ x,
                          const float *__restrict__ rs, const float *__restrict__ dy, float *dx) {
    size_t n = blockIdx.x;
    const float *xr = x + n * H, *d = dy + n * H;
    float r = rs[n], dot = 0.0f;
    for (int j = threadIdx.x; j < H; j += blockDim.x) dot += d[j] * g[j] * xr[j];
    dot = block_sum(dot);
    float cc = r * r * r * dot / (float)H;
    for (int j = threadIdx.x; j < H; j += blockDim.x) dx[n * H + j] = r * d[j] * g[j] - cc * xr[j];
}

void cuda_rmsnorm_bwd(cuda_ctx *c, const float *g, int N, int H, const float *x, const float *rs,
                      const float *dy, float *dx, float *dg) {
    if (N <= 0) return;
    k_rms_bwd<<<N, 256, 0, S(c)>>>(g, H, x, rs, dy, dx);
    cuda_colsum_acc(c, dy, x, rs, N, H, H, dg);
}

/* ---- softmax cross-entropy ---- */

__global__ void k_xent(int V, const int32_t *__restrict__ tgt, int32_t skip, int mode,
                       const float *__restrict__ scale, const int32_t *__restrict__ soft_tok,
                       const float *__restrict__ soft_w, float *probs, __nv_bfloat16 *dl16, float *row_loss) {
    size_t n = blockIdx.x;
    float *p = probs + n * V;
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, p[i]);
    mx = block_max(mx);
    float s = 0.0f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(p[i] - mx);
    s = block_sum(s);
    int32_t cl = tgt[n];
    int counted = cl != skip && cl >= 0 && cl < V;
    float lc = counted ? p[cl] - mx : 0.0f;
    /* -log p from the logit, not from the rounded probability. */
    if (threadIdx.x == 0) row_loss[n] = counted ? (float)(log((double)s) - (double)lc) : 0.0f;
    if (mode == CUDA_XENT_LOSS) return;
    __syncthreads(); /* every thread has read p[cl] before any writes it */
    float inv = (float)(1.0 / (double)s);
    if (mode == CUDA_XENT_GRAD) {
        float sc = *scale;
        for (int i = threadIdx.x; i < V; i += blockDim.x) {
            float q = 0.0f;
            if (counted) {
                q = expf(p[i] - mx) * inv;
                q *= sc;
                if (i == cl) q -= sc;
            }
            if (dl16)
                dl16[n * V + i] = __float2bfloat16_rn(q);
            else
                p[i] = q;
        }
        /* The row's soft targets (cuda_ops.h): each moves scale*w from the
         * one-hot to its token, by one thread after the others' writes, the
         * target's share in one sum (bf16 rounds the slots' tokens and the
         * target twice). The condition is the same for the whole block. */
        if (soft_tok && counted) {
            __syncthreads();
            if (threadIdx.x == 0) {
                float dcl = 0.0f;
                for (int j = 0; j < CUDA_SOFT_K; j++) {
                    int32_t t = soft_tok[n * CUDA_SOFT_K + j];
                    float d = sc * soft_w[n * CUDA_SOFT_K + j];
                    if (t < 0 || t >= V || d == 0.0f) continue;
                    dcl += d;
                    if (t == cl)
                        dcl -= d;
                    else if (dl16)
                        dl16[n * V + t] = __float2bfloat16_rn(__bfloat162float(dl16[n * V + t]) - d);
                    else
                        p[t] -= d;
                }
                if (dl16)
                    dl16[n * V + cl] = __float2bfloat16_rn(__bfloat162float(dl16[n * V + cl]) + dcl);
                else
                    p[cl] += dcl;
            }
        }
    } else {
        for (int i = threadIdx.x; i < V; i += blockDim.x) p[i] = expf(p[i] - mx) * inv;
    }
}

void cuda_xent_fwd(cuda_ctx *c, const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                   int32_t skip, int mode, const float *scale, const int32_t *soft_tok, const float *soft_w,
                   float *probs, float *row_loss) {
    if (N <= 0) return;
    cuda_gemm(c, 0, 1, N, V, H, 1.0f, y, H, emb, H, 0.0f, probs, V);
    k_xent<<<N, 1024, 0, S(c)>>>(V, tgt, skip, mode, scale, soft_tok, soft_w, probs, NULL, row_loss);
}

void cuda_xent_fwd16(cuda_ctx *c, const void *emb16, int N, int V, int H, const void *y16, const int32_t *tgt,
                     int32_t skip, int mode, const float *scale, const int32_t *soft_tok, const float *soft_w,
                     float *logits, void *dl16, float *row_loss) {
    if (N <= 0) return;
    gemm_bf16(c, 0, 1, N, V, H, 1.0f, (const __nv_bfloat16 *)y16, H, (const __nv_bfloat16 *)emb16, H, 0.0f, logits,
              V);
    k_xent<<<N, 1024, 0, S(c)>>>(V, tgt, skip, mode, scale, soft_tok, soft_w, logits,
                                 mode == CUDA_XENT_GRAD ? (__nv_bfloat16 *)dl16 : NULL, row_loss);
}

void cuda_xent_bwd16(cuda_ctx *c, const void *emb16, int N, int V, int H, const void *y16, const void *dl16,
                     float *demb, float *dy) {
    const __nv_bfloat16 *e = (const __nv_bfloat16 *)emb16, *y = (const __nv_bfloat16 *)y16;
    const __nv_bfloat16 *d = (const __nv_bfloat16 *)dl16;
    gemm_bf16(c, 0, 0, N, H, V, 1.0f, d, V, e, H, 0.0f, dy, H);
    gemm_bf16(c, 1, 0, V, H, N, 1.0f, d, V, y, H, 1.0f, demb, H);
}

void cuda_to_bf16(cuda_ctx *c, const float *x, size_t n, void *y) { to_bf16(c, x, n, (__nv_bfloat16 *)y); }

__global__ void k_xent_grad(int V, const int32_t *__restrict__ tgt, int32_t skip, float scale, float *probs) {
    size_t n = blockIdx.x;
    float *p = probs + n * V;
    int32_t cl = tgt[n];
    int counted = cl != skip && cl >= 0 && cl < V;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        float q = 0.0f;
        if (counted) {
            q = p[i] * scale;
            if (i == cl) q -= scale;
        }
        p[i] = q;
    }
}

void cuda_xent_grad(cuda_ctx *c, int N, int V, const int32_t *tgt, int32_t skip, float scale, float *probs) {
    if (N > 0) k_xent_grad<<<N, 256, 0, S(c)>>>(V, tgt, skip, scale, probs);
}

void cuda_xent_bwd(cuda_ctx *c, const float *emb, int N, int V, int H, const float *y, const float *dlogits,
                   float *demb, float *dy) {
    cuda_gemm(c, 0, 0, N, H, V, 1.0f, dlogits, V, emb, H, 0.0f, dy, H);
    cuda_gemm(c, 1, 0, V, H, N, 1.0f, dlogits, V, y, H, 1.0f, demb, H);
}

/* ---- reductions, optimizer ---- */

__global__ void k_sum(const float *__restrict__ x, int n, double *out) {
    double s = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
    s = block_sum_d1024(s);
    if (threadIdx.x == 0) *out = s;
}

void cuda_sum(cuda_ctx *c, const float *x, int n, double *out) { k_sum<<<1, 1024, 0, S(c)>>>(x, n, out); }

__global__ void k_sumsq_part(const float *__restrict__ g, size_t n, double *part) {
    __shared__ double sh[256];
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += (double)g[i] * g[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

__global__ void k_sumsq_fin(const double *__restrict__ part, double *norm) {
    double s = block_sum_d1024(part[threadIdx.x]);
    if (threadIdx.x == 0) *norm = sqrt(s);
}

void cuda_grad_norm(cuda_ctx *c, const float *g, size_t n, double *norm) {
    double *part = (double *)c->red;
    k_sumsq_part<<<CUDA_SUMSQ_BLOCKS, 256, 0, S(c)>>>(g, n, part);
    k_sumsq_fin<<<1, CUDA_SUMSQ_BLOCKS, 0, S(c)>>>(part, norm);
}

__global__ void k_adamw(const cuda_adam_vars *__restrict__ vars, const double *__restrict__ norm, float b1,
                        float b2, float eps, float wd, int decay, size_t n, float *params,
                        const float *__restrict__ grads, float *m, float *v) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float lr = vars->lr, clip = vars->clip;
    double nm = *norm;
    float g = grads[i];
    if (clip > 0 && nm > clip) g *= (float)(clip / nm);
    float dec = decay ? 1.0f - lr * wd : 1.0f;
    float mi = b1 * m[i] + (1.0f - b1) * g;
    float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float mh = mi / vars->bc1, vh = vi / vars->bc2;
    params[i] = params[i] * dec - lr * mh / (sqrtf(vh) + eps);
}

void cuda_adamw(cuda_ctx *c, const cuda_adam_vars *vars, const double *norm, float beta1, float beta2,
                float eps, float wd, int decay, size_t n, float *params, const float *grads, float *m,
                float *v) {
    if (n) k_adamw<<<nblk(n, 256), 256, 0, S(c)>>>(vars, norm, beta1, beta2, eps, wd, decay, n, params, grads, m, v);
}

__global__ void k_fill_nan(float *x, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __int_as_float(0x7fc00000);
}

void cuda_fill_nan(cuda_ctx *c, float *x, size_t n) {
    if (n) k_fill_nan<<<nblk(n, 256), 256, 0, S(c)>>>(x, n);
}
