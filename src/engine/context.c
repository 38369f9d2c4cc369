/* context.c - a session's context (context.h): the text before the cursor,
 * its stable tokens and the model states after them, with checkpoints.
 *
 * The stable tokens are those of the text before the unfinished tail
 * (tok_tail_start: they are final whatever is typed next); the model state
 * after them is cur. A new text is diffed against the old one: the stable
 * tokens before the first changed byte are kept (up to the last chunk
 * boundary that stays final), the rest of the stable part is re-encoded
 * chunk by chunk, and the model rewinds to the newest checkpoint at or
 * before the first token that really changed. Typing inside a word changes
 * only the tail: no model step at all.
 *
 * Memory is constant: (ENGINE_RING + ENGINE_SPARSE + 2) states of S + H
 * floats (S = model_state_floats) and the step's scratch, 0.70 MB for the
 * shipped model (S = 3072, H = 384), plus the text and 18 bytes per token
 * of capacity (the stable tokens and their re-encoding scratch). The
 * checkpoints bound a rewind: up to ENGINE_RING tokens back it is free;
 * further back it re-reads at most the spacing of the sparse checkpoints
 * (64 tokens, doubling each time the sparse slots fill, so about
 * n/ENGINE_SPARSE tokens for a text of n tokens), and a text set afresh
 * reads at most ENGINE_WINDOW bytes. */
#include "engine/context.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

/* Points k into *mem and advances it; zeroed, or, unset (a ring or sparse
 * slot: n = -1 until engine_ckpt_copy fills it), left untouched so that its
 * pages cost nothing at a cold start. */
static void ckpt_point(const model_cfg *c, ckpt *k, float **mem, int unset) {
    if (unset) {
        model_state_place(c, &k->st, *mem);
        k->st.n = -1;
    } else {
        model_state_init(c, &k->st, *mem);
    }
    *mem += model_state_floats(c);
    k->y = *mem;
    if (!unset) memset(k->y, 0, (size_t)c->H * sizeof(float));
    *mem += c->H;
}

void engine_ckpt_copy(const model_cfg *c, ckpt *dst, const ckpt *src) {
    model_state_copy(c, &dst->st, &src->st);
    memcpy(dst->y, src->y, (size_t)c->H * sizeof(float));
}

/* Grows the token arrays to hold at least need entries (amortized doubling:
 * typing allocates only when the text outgrows its high-water mark). */
static laya_status tok_reserve(engine_context *cx, size_t need) {
    if (need <= cx->tok_cap) return LAYA_OK;
    size_t cap = cx->tok_cap ? cx->tok_cap : 256;
    while (cap < need) cap *= 2;
    int32_t *t = realloc(cx->tok, cap * sizeof *t);
    if (!t) return LAYA_ERR_NOMEM;
    cx->tok = t;
    uint32_t *e = realloc(cx->tok_end, cap * sizeof *e);
    if (!e) return LAYA_ERR_NOMEM;
    cx->tok_end = e;
    uint8_t *ch = realloc(cx->chunk, cap);
    if (!ch) return LAYA_ERR_NOMEM;
    cx->chunk = ch;
    t = realloc(cx->enc, cap * sizeof *t);
    if (!t) return LAYA_ERR_NOMEM;
    cx->enc = t;
    e = realloc(cx->enc_end, cap * sizeof *e);
    if (!e) return LAYA_ERR_NOMEM;
    cx->enc_end = e;
    ch = realloc(cx->enc_chunk, cap);
    if (!ch) return LAYA_ERR_NOMEM;
    cx->enc_chunk = ch;
    cx->tok_cap = cap;
    return LAYA_OK;
}

static laya_status ctx_reserve(engine_context *cx, size_t need) {
    if (need <= cx->cap) return LAYA_OK;
    size_t cap = cx->cap ? cx->cap : 4096;
    while (cap < need) cap *= 2;
    uint8_t *p = realloc(cx->ctx, cap);
    if (!p) return LAYA_ERR_NOMEM;
    cx->ctx = p;
    cx->cap = cap;
    return LAYA_OK;
}

laya_status engine_context_init(engine_context *cx, const model *m) {
    const model_cfg *c = &m->cfg;
    size_t per = model_state_floats(c) + (size_t)c->H;
    size_t n_ckpt = 2 + ENGINE_RING + ENGINE_SPARSE;
    size_t total = n_ckpt * per + model_scratch_floats(c);
    cx->mem = malloc(total * sizeof(float));
    if (!cx->mem || tok_reserve(cx, 1024) != LAYA_OK || ctx_reserve(cx, 4096) != LAYA_OK) return LAYA_ERR_NOMEM;
    float *p = cx->mem;
    ckpt_point(c, &cx->cur, &p, 0);
    ckpt_point(c, &cx->bos, &p, 0);
    for (int i = 0; i < ENGINE_RING; i++) ckpt_point(c, &cx->ring[i], &p, 1);
    for (int i = 0; i < ENGINE_SPARSE; i++) ckpt_point(c, &cx->sparse[i], &p, 1);
    cx->scratch = p;
    cx->sparse_step = ENGINE_SPARSE_STEP;
    /* Every text starts with BOS: its state is computed once and kept. */
    model_step(m, &cx->bos.st, TOK_BOS, cx->scratch, cx->bos.y);
    cx->steps = 1;
    engine_ckpt_copy(c, &cx->cur, &cx->bos);
    cx->tok[0] = TOK_BOS;
    cx->tok_end[0] = 0;
    cx->chunk[0] = 1;
    cx->n_tok = 1;
    return LAYA_OK;
}

void engine_context_free(engine_context *cx) {
    free(cx->mem);
    free(cx->ctx);
    free(cx->tok);
    free(cx->tok_end);
    free(cx->chunk);
    free(cx->enc);
    free(cx->enc_end);
    free(cx->enc_chunk);
}

void engine_context_feed(engine_context *cx, const model *m, int32_t id, const ckpt *known) {
    const model_cfg *c = &m->cfg;
    if (known) {
        engine_ckpt_copy(c, &cx->cur, known);
    } else {
        model_step(m, &cx->cur.st, id, cx->scratch, cx->cur.y);
        cx->steps++;
    }
    cx->cur_ver++;
    int64_t n = cx->cur.st.n;
    engine_ckpt_copy(c, &cx->ring[n % ENGINE_RING], &cx->cur);
    if (n % cx->sparse_step) return;
    if (cx->n_sparse && cx->sparse[cx->n_sparse - 1].st.n >= n) return;
    if (cx->n_sparse == ENGINE_SPARSE) {
        /* Full: keep every other one (those on the doubled spacing). */
        int w = 0;
        for (int i = 0; i < cx->n_sparse; i++)
            if (cx->sparse[i].st.n % (2 * cx->sparse_step) == 0) {
                if (w != i) engine_ckpt_copy(c, &cx->sparse[w], &cx->sparse[i]);
                w++;
            }
        for (int i = w; i < cx->n_sparse; i++) cx->sparse[i].st.n = -1;
        cx->n_sparse = w;
        cx->sparse_step *= 2;
        if (n % cx->sparse_step) return;
    }
    engine_ckpt_copy(c, &cx->sparse[cx->n_sparse++], &cx->cur);
}

/* Makes cur the state after the first d tokens are consumed or fewer: the
 * newest checkpoint with count <= d. Checkpoints past d are dropped: the
 * tokens they were computed from are about to change. */
static void rewind_to(engine_context *cx, const model_cfg *c, int64_t d) {
    for (int i = 0; i < ENGINE_RING; i++)
        if (cx->ring[i].st.n > d) cx->ring[i].st.n = -1;
    while (cx->n_sparse && cx->sparse[cx->n_sparse - 1].st.n > d) cx->sparse[--cx->n_sparse].st.n = -1;
    if (!cx->n_sparse) cx->sparse_step = ENGINE_SPARSE_STEP;
    if (cx->cur.st.n <= d) return;
    const ckpt *best = &cx->bos;
    for (int i = 0; i < ENGINE_RING; i++)
        if (cx->ring[i].st.n > best->st.n) best = &cx->ring[i];
    if (cx->n_sparse && cx->sparse[cx->n_sparse - 1].st.n > best->st.n) best = &cx->sparse[cx->n_sparse - 1];
    engine_ckpt_copy(c, &cx->cur, best);
    cx->cur_ver++;
    cx->rewinds++;
}

void engine_context_reset(engine_context *cx, const model *m) {
    cx->len = cx->origin = cx->stable = 0;
    cx->n_tok = 1;
    rewind_to(cx, &m->cfg, 1);
}

/* The final chunk boundary of T[0..p): the offset before which the encoding
 * of T[0..p) is the same for any continuation (tok_tail_start). The
 * pre-tokenizer's chunks before any of its boundaries do not depend on what
 * follows, so every stored boundary below the end of T[0..p)'s complete
 * characters is still a boundary and the query can restart there: its cost
 * does not grow with the text. One chunk more is kept as a margin. */
static size_t final_boundary(const engine_context *cx, const tok *tk, const uint8_t *T, size_t p) {
    size_t m = p - utf8_incomplete_tail(T, p);
    size_t from = 0;
    int seen = 0;
    for (size_t i = cx->n_tok; i-- > 1;) {
        if (!cx->chunk[i] || cx->tok_end[i] >= m) continue;
        if (++seen == 2) { from = cx->tok_end[i]; break; }
    }
    return from + tok_tail_start(tk, T + from, p - from);
}

/* (add may point into cx->ctx, which may move when it grows: an offset is
 * kept.) */
laya_status engine_context_edit(engine_context *cx, size_t keep, const uint8_t *add, size_t n) {
    uintptr_t a0 = (uintptr_t)add, c0 = (uintptr_t)cx->ctx;
    int alias = add && a0 >= c0 && a0 < c0 + cx->cap;
    size_t off = alias ? (size_t)(a0 - c0) : 0;
    if (ctx_reserve(cx, keep + n) != LAYA_OK) return LAYA_ERR_NOMEM;
    if (alias) memmove(cx->ctx + keep, cx->ctx + off, n);
    else if (n) memcpy(cx->ctx + keep, add, n);
    cx->len = keep + n;
    return LAYA_OK;
}

/* Which stable tokens survive an edit that kept ctx[0..keep) of old_len
 * bytes: *j tokens (BOS included) ending at *keep_rel (relative to origin),
 * a final boundary of the kept text. */
static void kept_tokens(const engine_context *cx, const tok *tk, size_t keep, size_t old_len, size_t *j,
                        size_t *keep_rel) {
    *j = 1;
    *keep_rel = 0;
    if (keep < cx->origin) return;
    size_t rel_p = keep - cx->origin;
    size_t e_old = cx->stable - cx->origin;
    size_t b = keep == old_len ? e_old : final_boundary(cx, tk, cx->ctx + cx->origin, rel_p);
    size_t kr = b < e_old ? b : e_old;
    size_t n = cx->n_tok;
    while (n > 1 && !(cx->tok_end[n - 1] <= kr && cx->chunk[n - 1])) n--;
    *j = n;
    *keep_rel = cx->tok_end[n - 1];
}

/* Where the model starts reading afresh in a text of len bytes: a word
 * start in the last window (or the first character after half a window
 * without one), 0 when the whole text fits. */
static size_t window_origin(const engine_context *cx, size_t len) {
    if (len <= ENGINE_WINDOW) return 0;
    size_t o = len - ENGINE_WINDOW;
    size_t lim = o + ENGINE_WINDOW / 2;
    while (o < lim && !((cx->ctx[o - 1] == ' ' || cx->ctx[o - 1] == '\n') && (cx->ctx[o] & 0xC0) != 0x80))
        o++;
    while ((cx->ctx[o] & 0xC0) == 0x80 && o < len - 1) o++;
    return o;
}

/* Encodes T[a0..e_end) chunk by chunk into cx->enc (ids), enc_end (their
 * ends) and enc_chunk (1 on a chunk's last token); *ne: the count. T[0..n)
 * is the model's text; e_end is a final boundary and tok_reserve has made
 * room. */
static laya_status encode_span(engine_context *cx, const tok *tk, const uint8_t *T, size_t n, size_t a0,
                               size_t e_end, size_t *ne) {
    *ne = 0;
    for (size_t a = a0; a < e_end;) {
        size_t e = a0 + tok_chunk_end(T + a0, n - a0, a - a0);
        if (e <= a || e > e_end) e = e_end;  /* a tokenizer breaking its contract: stay in bounds */
        size_t cnt = tok_encode(tk, T + a, e - a, cx->enc + *ne, cx->tok_cap - *ne);
        if (cnt > e - a) return LAYA_ERR_INTERNAL;
        size_t end = a;
        for (size_t i = 0; i < cnt; i++) {
            size_t bl;
            tok_bytes(tk, cx->enc[*ne + i], &bl);
            end += bl;
            cx->enc_end[*ne + i] = (uint32_t)end;
            cx->enc_chunk[*ne + i] = 0;
        }
        if (end != e) return LAYA_ERR_INTERNAL;
        *ne += cnt;
        if (cnt) cx->enc_chunk[*ne - 1] = 1;
        a = e;
    }
    return LAYA_OK;
}

laya_status engine_context_encode(engine_context *cx, const model *m, size_t keep, size_t old_len) {
    const tok *tk = m->tok;
    const size_t new_len = cx->len;
    size_t j, keep_rel;
    kept_tokens(cx, tk, keep, old_len, &j, &keep_rel);
    if (keep < cx->origin || new_len - cx->origin - keep_rel > ENGINE_WINDOW) {
        /* The model's text changed before its start, or more than a window
         * of it is new: read afresh. */
        cx->origin = window_origin(cx, new_len);
        j = 1;
        keep_rel = 0;
    }

    /* Re-encode the stable part after keep_rel. */
    const uint8_t *T = cx->ctx + cx->origin;
    size_t rel_len = new_len - cx->origin;
    size_t e_new = keep_rel + tok_tail_start(tk, T + keep_rel, rel_len - keep_rel);
    if (e_new > rel_len) return LAYA_ERR_INTERNAL;
    if (tok_reserve(cx, j + (e_new - keep_rel) + 1) != LAYA_OK) return LAYA_ERR_NOMEM;
    size_t ne;
    laya_status st = encode_span(cx, tk, T, rel_len, keep_rel, e_new, &ne);
    if (st != LAYA_OK) return st;

    /* The first token that differs from what the model has read. */
    size_t d = j;
    while (d - j < ne && d < cx->n_tok && cx->tok[d] == cx->enc[d - j]) d++;
    memcpy(cx->tok + j, cx->enc, ne * sizeof *cx->tok);
    memcpy(cx->tok_end + j, cx->enc_end, ne * sizeof *cx->tok_end);
    memcpy(cx->chunk + j, cx->enc_chunk, ne);
    cx->n_tok = j + ne;
    cx->stable = cx->origin + e_new;

    rewind_to(cx, &m->cfg, (int64_t)d);
    return LAYA_OK;
}

/* libc's vector memcmp over 4 KB blocks, bytes only inside the first block
 * that differs. A byte loop here was 18% of a keystroke at 150 KB of
 * context. */
size_t engine_common_prefix(const uint8_t *a, const uint8_t *b, size_t n) {
    enum { BLK = 4096 };
    size_t p = 0;
    while (n - p >= BLK && memcmp(a + p, b + p, BLK) == 0) p += BLK;
    while (p < n && a[p] == b[p]) p++;
    return p;
}
