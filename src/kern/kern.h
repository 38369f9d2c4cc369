/* kern.h - matrix kernels for the keystroke path (C4).
 *
 * A weight matrix is a qmat: R rows of C columns stored in one of the types
 * below, row-major. Every kernel has a scalar _ref twin (kern_ref.c) that is
 * its specification; per-ISA files (kern_avx2.c, kern_avx512.c) hold only
 * the vector loops. kern_get() picks one table on its first call, from
 * CPUID/XGETBV (kern_dispatch.c); LAYA_KERN=ref|avx2|avx512 overrides it
 * so tests can run every path (an unknown or unusable name is ignored).
 *
 * Shape letters: R rows, C columns, N vectors in a small batch. */
#ifndef LAYA_KERN_H
#define LAYA_KERN_H

#include <stddef.h>
#include <stdint.h>

typedef enum { QT_F32 = 0, QT_F16 = 1, QT_Q8 = 2, QT_Q4 = 3 } qtype;

typedef struct {
    qtype type;
    int32_t rows, cols;    /* R, C */
    int32_t group;         /* weights per scale/bias group (q8/q4), else 0 */
    const void *data;      /* (R, C) elements of type (packed for q4); NULL for a
                              q8/q4 matrix held only in panel form */
    const float *scales;   /* (R, C/group) for q8/q4, else NULL */
    const float *biases;   /* (R, C/group) for q8/q4, else NULL */
    const void *panel;     /* the same q8/q4 weights in panel form (kern_panel_pack),
                              which matvec/matmat then read instead; NULL if none.
                              With data NULL (a model file stored in panel form,
                              mapped as it is) it is the only form: dot_rows and
                              kern_row_f32 read a row back from it (kern_panel_row) */
} qmat;

/* ---- Panel form (kern_panel.c) ----
 *
 * The vector q8/q4 products read a matrix in panels of KERN_PANEL_ROWS = 8
 * rows interleaved four columns at a time, so that one 32-byte load feeds
 * eight rows at once and the eight int32 lanes of a dot instruction are
 * eight rows' sums: no horizontal sum per row, and the per-group float work
 * (scale, bias) is one vector operation for eight rows. Derived from the
 * stored (row-major) form at load; dot_rows and kern_row_f32 keep using the
 * row-major form. Layout, NP = ceil(R/8) panels, rows past R zero:
 *   codes  (NP, C/4, 8, 4) q8 bytes: panel p, column quad k, lane r holds
 *          columns 4k..4k+3 of row 8p+r;
 *          q4: (NP, C/8, 8, 4) bytes: byte j of lane r in column octet k
 *          holds column 8k+j in the low nibble and 8k+4+j in the high;
 *   scales (NP, C/G, 8) f32, biases (NP, C/G, 8) f32 (row 8p+r in lane r).
 * Shape letters: NP panels. */
enum { KERN_PANEL_ROWS = 8 };
/* Bytes kern_panel_pack writes for w, or 0 if w has no panel form (not
 * q8/q4, or a shape the vector kernels take the reference for). */
size_t kern_panel_bytes(const qmat *w);
/* Writes w's panel form into mem (kern_panel_bytes(w) bytes, 32-byte
 * aligned, caller-owned); the caller then sets w->panel = mem. */
void kern_panel_pack(const qmat *w, void *mem);
/* Writes one row, r, into w's panel form at mem (which kern_panel_pack made
 * for w's shape; w's type, rows, cols and group are read, not its data):
 * its codes (quant_row_bytes), scales and biases (C/G each) in the stored
 * form. A matrix whose rows change one at a time (the search's continuous
 * cache) is kept in panel form only. */
void kern_panel_write_row(const qmat *w, int32_t r, const uint8_t *codes, const float *scales, const float *biases,
                          void *mem);
/* Row r of w's panel form back in the stored form: codes (quant_row_bytes
 * of one row), scales and biases (C/G each); exactly what kern_panel_pack
 * read for that row. Needs w->panel, type, rows, cols and group only. */
void kern_panel_row(const qmat *w, int32_t r, uint8_t *codes, float *scales, float *biases);

typedef struct {
    const char *name;  /* "ref", "avx2", "avx512" */
    /* y(R) = W(R,C) x(C) */
    void (*matvec)(const qmat *w, const float *x, float *y);
    /* Y(N,R) = X(N,C) W^T: one pass over the weights for N vectors. */
    void (*matmat)(const qmat *w, const float *x, int n, float *y);
    /* y[i] = W[rows[i]] . x for the listed rows only (logits of a few tokens). */
    void (*dot_rows)(const qmat *w, const int32_t *rows, int n, const float *x, float *y);
    /* The GRU update of one layer, in place on h(H), from the gate products
     * gi = W_ih x and gh = W_hh h (3H each: r, z, n; biases not added):
     *   r = sigmoid(gi_r + b_ih_r + gh_r + b_hh_r), z likewise,
     *   n = tanh(gi_n + b_ih_n + r (gh_n + b_hh_n)),  h = (1 - z) n + z h.
     * The vector versions are within a few ulp of the reference (vmath.h). */
    void (*gru_gates)(int H, const float *gi, const float *gh, const float *b_ih, const float *b_hh,
                      float *h);
    /* The mass of logits lg(n) under 0/1 weights w(n), e(n) and f(n)
     * (e[i], f[i] <= w[i]):
     *   *mx = max of lg[i] over w[i] > 0 (-inf if none),
     *   *z = sum_i w[i] exp(lg[i] - mx),  *ze = sum_i e[i] exp(lg[i] - mx),
     *   *zf = sum_i f[i] exp(lg[i] - mx),
     * terms with lg[i] - mx <= -40 dropped (below 1e-17 each). The search's
     * normaliser, word-end mass and blank-first mass of a node. Sums in double (the vector
     * versions add 4 terms per lane in f32 first: relative error < 2e-7);
     * their exp is within 2 ulp (vmath.h). */
    void (*logit_mass)(const float *lg, const float *w, const float *e, const float *f, int n, float *mx,
                       double *z, double *ze, double *zf);
    /* The k largest lg[i] over i with g[i] > 0 (g: 0/1 weights), largest
     * first, an equal value after those of lower index: ids[j], vals[j] for
     * j < the returned count (min(k, such i)). The search's best next
     * tokens of a node. Exactly the reference's result on every table. */
    int (*logit_top)(const float *lg, const float *g, int n, int k, int32_t *ids, float *vals);
} kern_table;

/* The table chosen for this CPU (first call decides; thread-safe after). */
const kern_table *kern_get(void);
/* A table by name, or NULL if unknown or the CPU lacks it. */
const kern_table *kern_by_name(const char *name);

/* out(C) = row r of w as f32 (the embedding lookup; dequantizes q8/q4). */
void kern_row_f32(const qmat *w, int32_t r, float *out);

/* f16 <-> f32 (IEEE binary16, round to nearest even; kern_f16.c). */
float kern_f16_to_f32(uint16_t h);
uint16_t kern_f32_to_f16(float f);

#endif
