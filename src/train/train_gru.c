/* train_gru.c - the GRU layer over T steps, forward and backward (C6).
 *
 * The recurrence is T dependent small products (B,H)x(H,G), too small for
 * a parallel region each. So one region spans the whole time loop: W_hh is
 * packed once per call into micro-kernel panels (train_gemm.h), hidden units
 * are cut into chunks of NR (and, when there are fewer chunks than threads,
 * the batch rows into groups), and each thread owns the same (chunk, rows)
 * items at every step. Forward, per step: the recurrent product of its items'
 * gate columns (r, z, n of the chunk), then the gate math on them; one
 * barrier per step (the next step reads every unit). Backward, per step: the
 * gate gradients of its items (needing only the carried gradient of its own
 * units), a barrier, then its units' carried gradient dh_{t-1} = d*z +
 * dgh_t W_hh (reading every gate gradient of step t). Each value is summed in
 * a fixed order whatever the thread count. The weight gradients and the
 * input projections are big products, done by train_sgemm outside.
 *
 * Shape letters as train_ops.h; NR, MR the micro-kernel's tile. */
#include "train/train_ops.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_gemm.h"
#include "kern/vmath.h"

/* Lanes 0..k-1 of 8 (k may exceed 8). */
static inline __m256i first(int k) {
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), idx);
}
#define LD(p, m) _mm256_maskload_ps((p), (m))
#define ST(p, m, v) _mm256_maskstore_ps((p), (m), (v))

/* How the (chunk, row group) items are laid out and shared out. */
typedef struct {
    int nc, ng, np;    /* unit chunks, row groups, MR-row panels */
    int items;         /* nc * ng; item i = chunk i / ng, group i % ng */
} gru_plan;

static gru_plan plan(const train_gemm_kern *kn, int B, int H, int nt) {
    gru_plan p;
    p.nc = (H + kn->nr - 1) / kn->nr;
    p.np = (B + kn->mr - 1) / kn->mr;
    p.ng = 1;
    while (p.nc * p.ng < nt && p.ng < p.np) p.ng++;
    p.items = p.nc * p.ng;
    return p;
}

/* Row panels of group g: [*q0, *q1). */
static void group_panels(const gru_plan *p, int g, int *q0, int *q1) {
    *q0 = (int)((long)g * p->np / p->ng);
    *q1 = (int)((long)(g + 1) * p->np / p->ng);
}

/* Packs rows i (i in the group's panels, i < B) of A, row i at A + i*lda,
 * columns 0..K-1, into ap at the panels' place (panel q at q*MR*K). */
static void pack_rows(const train_gemm_kern *kn, const gru_plan *p, int g, int B, int K, const float *A,
                      size_t lda, float *ap) {
    int q0, q1;
    group_panels(p, g, &q0, &q1);
    int i0 = q0 * kn->mr, i1 = q1 * kn->mr < B ? q1 * kn->mr : B;
    if (i1 > i0) train_gemm_pack_a(kn, 0, A, (int)lda, i0, i1 - i0, 0, K, ap + (size_t)q0 * kn->mr * K);
}

/* Per-thread scratch: packed rows (np*MR, max(H,G)) and three tiles. */
typedef struct {
    float *ap, *acc;
    int packed_t, packed_g;
} gru_tls;

static int region_on(int B, int H) { return (double)B * 3 * H * H > 65536.0; }

void train_gru_fwd(const train_gru_w *w, int B, int T, int H, const float *x, const float *h0,
                   float *gates, float *ghn, float *hprev, float *h, float *scratch) {
    (void)scratch;
    int N = B * T, G = 3 * H;
    size_t ldt = (size_t)T * H;
    const train_gemm_kern *kn = train_gemm_kern_get();
    const int MR = kn->mr, NR = kn->nr;
    /* Input projections for all N rows at once. */
    train_sgemm(0, 1, N, G, H, 1.0f, x, H, w->w_ih, H, 0.0f, gates, G);
    for (int b = 0; b < B; b++) {
        float *hp = hprev + (size_t)b * ldt;
        if (h0) memcpy(hp, h0 + (size_t)b * H, (size_t)H * sizeof(float));
        else memset(hp, 0, (size_t)H * sizeof(float));
    }
    int par = region_on(B, H);
    int nt = par ? omp_get_max_threads() : 1;
    gru_plan pl = plan(kn, B, H, nt);
    /* W_hh^T panels: chunk c, gate q at ((c*3 + q) * H) * NR. */
    size_t wsz = (size_t)pl.nc * 3 * H * NR;
    size_t tsz = (size_t)pl.np * MR * H + 3 * (size_t)MR * NR;
    float *wp = aligned_alloc(64, ((wsz + tsz * nt) * sizeof(float) + 63) / 64 * 64);
#pragma omp parallel num_threads(nt) if (par)
    {
        int id = omp_get_thread_num(), n_th = omp_get_num_threads();
#pragma omp for schedule(static)
        for (int cq = 0; cq < pl.nc * 3; cq++) {
            int c = cq / 3, q = cq % 3, j0 = c * NR;
            train_gemm_pack_b(kn, 1, w->w_hh + (size_t)q * H * H, H, 0, H, j0, H - j0 < NR ? H - j0 : NR,
                              wp + (size_t)cq * H * NR);
        }
        float *ap = wp + wsz + tsz * id, *acc = ap + (size_t)pl.np * MR * H;
        int it0 = (int)((long)id * pl.items / n_th), it1 = (int)((long)(id + 1) * pl.items / n_th);
        for (int t = 0; t < T; t++) {
            int packed_g = -1;
            for (int it = it0; it < it1; it++) {
                int c = it / pl.ng, g = it % pl.ng, j0 = c * NR, len = H - j0 < NR ? H - j0 : NR;
                if (g != packed_g) pack_rows(kn, &pl, g, B, H, hprev + (size_t)t * H, ldt, ap);
                packed_g = g;
                int q0, q1;
                group_panels(&pl, g, &q0, &q1);
                for (int q = q0; q < q1; q++) {
                    const float *a = ap + (size_t)q * MR * H;
                    for (int k = 0; k < 3; k++)
                        kn->micro(H, a, wp + ((size_t)c * 3 + k) * H * NR, acc + (size_t)k * MR * NR);
                    for (int i = 0; i < MR && q * MR + i < B; i++) {
                        size_t n = (size_t)(q * MR + i) * T + t;
                        float *gi = gates + n * G;
                        const float *hp = hprev + n * H;
                        const float *ar = acc + i * NR, *az = ar + MR * NR, *an = az + MR * NR;
                        for (int j = 0; j < len; j += 8) {
                            __m256i m = first(len - j);
                            int u = j0 + j;
                            __m256 r = _mm256_add_ps(_mm256_add_ps(LD(gi + u, m), LD(w->b_ih + u, m)), _mm256_loadu_ps(ar + j));
                            r = vsigmoid(_mm256_add_ps(r, LD(w->b_hh + u, m)));
                            __m256 z = _mm256_add_ps(_mm256_add_ps(LD(gi + H + u, m), LD(w->b_ih + H + u, m)),
                                                     _mm256_loadu_ps(az + j));
                            z = vsigmoid(_mm256_add_ps(z, LD(w->b_hh + H + u, m)));
                            __m256 hn = _mm256_add_ps(_mm256_loadu_ps(an + j), LD(w->b_hh + 2 * H + u, m));
                            __m256 nn = _mm256_add_ps(LD(gi + 2 * H + u, m), LD(w->b_ih + 2 * H + u, m));
                            nn = vtanh(_mm256_add_ps(nn, _mm256_mul_ps(r, hn)));
                            __m256 hv = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), z), nn),
                                                      _mm256_mul_ps(z, LD(hp + u, m)));
                            ST(gi + u, m, r);
                            ST(gi + H + u, m, z);
                            ST(gi + 2 * H + u, m, nn);
                            ST(ghn + n * H + u, m, hn);
                            ST(h + n * H + u, m, hv);
                            if (t + 1 < T) ST(hprev + (n + 1) * H + u, m, hv);
                        }
                    }
                }
            }
#pragma omp barrier
        }
    }
    free(wp);
}

/* out[j] += sum over n of a[n*ld + j], for j < cols, n in order. */
static void colsum_acc(const float *a, int rows, int cols, int ld, float *out) {
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= 65536)
    for (int j0 = 0; j0 < cols; j0 += 8) {
        __m256i m = first(cols - j0);
        __m256 s = _mm256_setzero_ps();
        for (int n = 0; n < rows; n++) s = _mm256_add_ps(s, LD(a + (size_t)n * ld + j0, m));
        ST(out + j0, m, _mm256_add_ps(LD(out + j0, m), s));
    }
}

void train_gru_bwd(const train_gru_w *w, train_gru_g *g, int B, int T, int H, const float *x,
                   const float *gates, const float *ghn, const float *hprev, const float *dh,
                   float *dgi, float *dgh, float *dhc, float *dx) {
    int N = B * T, G = 3 * H;
    const train_gemm_kern *kn = train_gemm_kern_get();
    const int MR = kn->mr, NR = kn->nr;
    memset(dhc, 0, (size_t)B * H * sizeof(float));
    int par = region_on(B, H);
    int nt = par ? omp_get_max_threads() : 1;
    gru_plan pl = plan(kn, B, H, nt);
    /* W_hh panels (K = G): chunk c at c * G * NR. */
    size_t wsz = (size_t)pl.nc * G * NR;
    size_t tsz = (size_t)pl.np * MR * G + (size_t)MR * NR;
    float *wp = aligned_alloc(64, ((wsz + tsz * nt) * sizeof(float) + 63) / 64 * 64);
#pragma omp parallel num_threads(nt) if (par)
    {
        int id = omp_get_thread_num(), n_th = omp_get_num_threads();
#pragma omp for schedule(static)
        for (int c = 0; c < pl.nc; c++) {
            int j0 = c * NR;
            train_gemm_pack_b(kn, 0, w->w_hh, H, 0, G, j0, H - j0 < NR ? H - j0 : NR, wp + (size_t)c * G * NR);
        }
        float *ap = wp + wsz + tsz * id, *acc = ap + (size_t)pl.np * MR * G;
        int it0 = (int)((long)id * pl.items / n_th), it1 = (int)((long)(id + 1) * pl.items / n_th);
        for (int t = T - 1; t >= 0; t--) {
            /* Gate gradients of step t for this thread's items. */
            for (int it = it0; it < it1; it++) {
                int c = it / pl.ng, gr = it % pl.ng, j0 = c * NR, len = H - j0 < NR ? H - j0 : NR;
                int q0, q1;
                group_panels(&pl, gr, &q0, &q1);
                for (int b = q0 * MR; b < q1 * MR && b < B; b++) {
                    size_t n = (size_t)b * T + t;
                    const float *ga = gates + n * G;
                    float *di = dgi + n * G, *dg = dgh + n * G, *dc = dhc + (size_t)b * H;
                    for (int j = 0; j < len; j += 8) {
                        __m256i m = first(len - j);
                        int u = j0 + j;
                        __m256 one = _mm256_set1_ps(1.0f);
                        __m256 r = LD(ga + u, m), z = LD(ga + H + u, m), nn = LD(ga + 2 * H + u, m);
                        __m256 d = _mm256_add_ps(LD(dh + n * H + u, m), LD(dc + u, m));
                        __m256 dnp = _mm256_mul_ps(_mm256_mul_ps(d, _mm256_sub_ps(one, z)),
                                                   _mm256_sub_ps(one, _mm256_mul_ps(nn, nn)));
                        __m256 dzp = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(d, _mm256_sub_ps(LD(hprev + n * H + u, m), nn)), z),
                                                   _mm256_sub_ps(one, z));
                        __m256 drp = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dnp, LD(ghn + n * H + u, m)), r),
                                                   _mm256_sub_ps(one, r));
                        ST(di + u, m, drp);
                        ST(di + H + u, m, dzp);
                        ST(di + 2 * H + u, m, dnp);
                        ST(dg + u, m, drp);
                        ST(dg + H + u, m, dzp);
                        ST(dg + 2 * H + u, m, _mm256_mul_ps(dnp, r));
                        ST(dc + u, m, _mm256_mul_ps(d, z));
                    }
                }
            }
            if (t == 0) break; /* no gradient into h0 */
#pragma omp barrier
            /* Through W_hh into the previous state, for this thread's units. */
            int packed_g = -1;
            for (int it = it0; it < it1; it++) {
                int c = it / pl.ng, gr = it % pl.ng, j0 = c * NR, len = H - j0 < NR ? H - j0 : NR;
                if (gr != packed_g) pack_rows(kn, &pl, gr, B, G, dgh + (size_t)t * G, (size_t)T * G, ap);
                packed_g = gr;
                int q0, q1;
                group_panels(&pl, gr, &q0, &q1);
                for (int q = q0; q < q1; q++) {
                    kn->micro(G, ap + (size_t)q * MR * G, wp + (size_t)c * G * NR, acc);
                    for (int i = 0; i < MR && q * MR + i < B; i++) {
                        float *dc = dhc + (size_t)(q * MR + i) * H + j0;
                        for (int j = 0; j < len; j++) dc[j] += acc[i * NR + j];
                    }
                }
            }
        }
    }
    free(wp);
    train_sgemm(1, 0, G, H, N, 1.0f, dgh, G, hprev, H, 1.0f, g->w_hh, H);
    train_sgemm(1, 0, G, H, N, 1.0f, dgi, G, x, H, 1.0f, g->w_ih, H);
    colsum_acc(dgh, N, G, G, g->b_hh);
    colsum_acc(dgi, N, G, G, g->b_ih);
    train_sgemm(0, 0, N, H, G, 1.0f, dgi, G, w->w_ih, H, 0.0f, dx, H);
}
