/* bench_kern.c - GB/s of weights streamed by matvec and matmat (N = 4), per
 * kernel table and weight type (f32, f16, q8, q4), beside the floor: this machine's own read bandwidth over a
 * buffer of the same size, measured in the same run (a sum of 16-byte
 * vectors into 8 independent accumulators: two loads per cycle already
 * exceed what L2/L3/DRAM deliver to one core, so wider loads would not
 * raise the floor). Every matrix is hot (repeated), so small sizes measure the
 * cache the weights fit in; that is the keystroke path's situation too.
 *
 * Shape letters: R rows, C columns. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern/kern.h"
#include "kern/quant.h"

enum { QGROUP = 64 };  /* the q8/q4 group benchmarked */

static volatile uint64_t sink_u;
static volatile float sink_f;

typedef uint64_t v2u __attribute__((vector_size(16)));

/* GB/s of reading n_vec 16-byte vectors, best of a few timed batches. */
static double read_bw(const void *buf, size_t n_vec) {
    const v2u *p = buf;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        int iters = 0;
        double t0 = bench_now(), t;
        do {
            v2u a0 = {0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (size_t i = 0; i + 8 <= n_vec; i += 8) {
                a0 += p[i];
                a1 += p[i + 1];
                a2 += p[i + 2];
                a3 += p[i + 3];
                a4 += p[i + 4];
                a5 += p[i + 5];
                a6 += p[i + 6];
                a7 += p[i + 7];
            }
            v2u s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
            sink_u = s[0] + s[1];
            iters++;
            t = bench_now() - t0;
        } while (t < 0.05);
        double gbs = (double)n_vec * 16 * iters / t / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* GB/s of weights streamed by one kernel call (n = 0: matvec, else matmat
 * of n vectors, which reads the weights once), best of a few timed batches. */
static double kern_bw(const kern_table *k, const qmat *w, const float *x, float *y, int n, size_t bytes) {
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        int iters = 0;
        double t0 = bench_now(), t;
        do {
            if (n) k->matmat(w, x, n, y);
            else k->matvec(w, x, y);
            iters++;
            t = bench_now() - t0;
        } while (t < 0.04);
        sink_f = y[0];
        double gbs = (double)bytes * iters / t / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* Weights of every type for one shape; bytes counts everything a kernel
 * reads per pass (for q8/q4: packed codes + f32 scales + f32 biases). */
typedef struct {
    float *wf, *s8, *b8, *s4, *b4;
    uint16_t *wh;
    uint8_t *q8, *q4;
} weights;

static qmat shape_mat(const weights *W, qtype ty, int R, int C, size_t *bytes) {
    size_t n = (size_t)R * C, ng = n / QGROUP;
    switch (ty) {
    case QT_F32: *bytes = 4 * n; return (qmat){.type = ty, .rows = R, .cols = C, .data = W->wf};
    case QT_F16: *bytes = 2 * n; return (qmat){.type = ty, .rows = R, .cols = C, .data = W->wh};
    case QT_Q8:
        *bytes = n + 8 * ng;
        return (qmat){.type = ty, .rows = R, .cols = C, .group = QGROUP, .data = W->q8, .scales = W->s8,
                      .biases = W->b8};
    case QT_Q4: break;
    }
    *bytes = n / 2 + 8 * ng;
    return (qmat){.type = ty, .rows = R, .cols = C, .group = QGROUP, .data = W->q4, .scales = W->s4,
                  .biases = W->b4};
}

BENCH(kern_matvec) {
    /* the H = 768 shapes, and the shipped model's logits (8192 x 384) */
    static const int shapes[][2] = {{768, 768}, {2304, 768}, {8192, 768}, {8192, 384}};
    static const char *isas[] = {"ref", "avx2", "avx512"};
    static const char *tnames[] = {"f32", "f16", "q8", "q4"};
    enum { NV = 4 };
    printf("GB/s of weights streamed (q8/q4: group %d, codes + f32 scales + biases, read in the\n"
           "panel form the engine uses); floor: a plain read of a buffer of the same size in the\n"
           "same run; mm4: matmat of 4 vectors, one pass\n", QGROUP);
    printf("%-10s %-4s %-7s %8s %8s %8s %9s %9s\n", "R x C", "type", "isa", "matvec", "mm4", "floor",
           "mv/floor", "mm4/floor");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int R = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)R * C, ng = n / QGROUP;
        weights W = {
            .wf = malloc(n * sizeof(float)), .wh = malloc(n * sizeof(uint16_t)),
            .q8 = malloc(n), .q4 = malloc(n / 2),
            .s8 = malloc(ng * sizeof(float)), .b8 = malloc(ng * sizeof(float)),
            .s4 = malloc(ng * sizeof(float)), .b4 = malloc(ng * sizeof(float)),
        };
        float *x = malloc((size_t)NV * C * sizeof *x), *y = malloc((size_t)NV * R * sizeof *y);
        for (size_t i = 0; i < n; i++) {
            W.wf[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
            W.wh[i] = kern_f32_to_f16(W.wf[i]);
        }
        if (quant_quantize(W.wf, R, C, 8, QGROUP, W.q8, W.s8, W.b8, NULL, 0) != LAYA_OK ||
            quant_quantize(W.wf, R, C, 4, QGROUP, W.q4, W.s4, W.b4, NULL, 0) != LAYA_OK)
            abort();  /* finite weights, C % QGROUP == 0: a bench bug */
        for (int c = 0; c < NV * C; c++) x[c] = (float)(c % 17) / 17.0f - 0.5f;
        char dims[32];
        snprintf(dims, sizeof dims, "%dx%d", R, C);
        for (int ty = QT_F32; ty <= QT_Q4; ty++) {
            size_t bytes;
            qmat w = shape_mat(&W, (qtype)ty, R, C, &bytes);
            void *panel = NULL;
            size_t pb = kern_panel_bytes(&w);
            if (pb) {
                if (!(panel = aligned_alloc(64, (pb + 63) / 64 * 64))) abort();
                kern_panel_pack(&w, panel);
                w.panel = panel;
            }
            double floor_gbs = read_bw(W.wf, bytes / 16);
            for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
                const kern_table *k = kern_by_name(isas[i]);
                if (!k) continue;
                double mv = kern_bw(k, &w, x, y, 0, bytes), mm = kern_bw(k, &w, x, y, NV, bytes);
                printf("%-10s %-4s %-7s %8.1f %8.1f %8.1f %8.0f%% %8.0f%%\n", dims, tnames[ty], isas[i], mv, mm,
                       floor_gbs, 100 * mv / floor_gbs, 100 * mm / floor_gbs);
                fflush(stdout);
            }
            free(panel);
        }
        free(W.wf);
        free(W.wh);
        free(W.q8);
        free(W.q4);
        free(W.s8);
        free(W.b8);
        free(W.s4);
        free(W.b4);
        free(x);
        free(y);
    }
}
