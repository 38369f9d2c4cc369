/* cuda_train.c - the whole network over a batch of windows on the GPU:
 * train_model.c's forward and backward, op for op, through cuda_ops.h;
 * clipping and AdamW; the step captured into one CUDA graph. */
#include "cuda/cuda_train.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

_Static_assert((int)CUDA_MAX_W == (int)MODEL_MAX_W, "the attention kernels hold MODEL_MAX_W scores in registers");

/* A bump allocator over one block: every array 256-byte aligned. */
typedef struct {
    char *base;
    size_t off;
} bump;

static void *take(bump *b, size_t bytes) {
    void *p = b->base ? b->base + b->off : NULL;
    b->off += (bytes + 255) / 256 * 256;
    return p;
}

static void layout(cuda_trainer *ct, bump *bp) {
    size_t H = (size_t)ct->cfg.H, D = (size_t)ct->cfg.D, V = (size_t)ct->cfg.V, L = (size_t)ct->cfg.L;
    size_t W = (size_t)ct->cfg.W, N = (size_t)ct->B * ct->T, B = (size_t)ct->B, G = 3 * H, f = sizeof(float);
    ct->params = take(bp, ct->P * f);
    ct->grads = take(bp, ct->P * f);
    ct->m = take(bp, ct->P * f);
    ct->v = take(bp, ct->P * f);
    for (int s = 0; s < 2; s++) ct->state[s] = take(bp, L * B * H * f);
    for (size_t l = 0; l < L; l++) {
        cuda_layer_cache *c = &ct->lc[l];
        c->xin = take(bp, N * H * f);
        c->gates = take(bp, N * G * f);
        c->ghn = take(bp, N * H * f);
        c->hprev = take(bp, N * H * f);
        c->h = take(bp, N * H * f);
        c->qkv = take(bp, N * 3 * D * f);
        c->att = take(bp, N * W * f);
        c->ctx = take(bp, N * D * f);
    }
    ct->xL = take(bp, N * H * f);
    ct->rs = take(bp, N * f);
    ct->y = take(bp, N * H * f);
    ct->probs = take(bp, N * V * f);
    if (ct->ctx.math == CUDA_MATH_BF16) {
        ct->emb16 = take(bp, V * H * 2);
        ct->y16 = take(bp, N * H * 2);
        ct->dl16 = take(bp, N * V * 2);
    }
    ct->row_loss = take(bp, N * f);
    ct->da = take(bp, N * H * f);
    ct->db = take(bp, N * H * f);
    ct->dgi = take(bp, N * G * f);
    ct->dgh = take(bp, N * G * f);
    ct->dqkv = take(bp, N * 3 * D * f);
    ct->dctx = take(bp, N * D * f);
    ct->dsc = take(bp, N * W * f);
    ct->dhc = take(bp, B * H * f);
    ct->ghs = take(bp, B * G * f);
    ct->in = take(bp, N * sizeof(int32_t));
    ct->tgt = take(bp, N * sizeof(int32_t));
    ct->soft_tok = take(bp, N * CUDA_SOFT_K * sizeof(int32_t));
    ct->soft_w = take(bp, N * CUDA_SOFT_K * sizeof(float));
    ct->eidx = take(bp, cuda_embed_index_ints((int)N) * sizeof(int32_t));
    ct->vars = take(bp, sizeof(cuda_step_vars));
    ct->out = take(bp, 2 * sizeof(double));
}

static laya_status cerr(cudaError_t e, const char *what, char *err, size_t errlen) {
    if (e == cudaSuccess) return LAYA_OK;
    cudaGetLastError();
    return err_set(err, errlen, e == cudaErrorMemoryAllocation ? LAYA_ERR_NOMEM : LAYA_ERR_INTERNAL, "%s: %s",
                   what, cudaGetErrorString(e));
}

static cudaStream_t strm(cuda_trainer *ct) { return (cudaStream_t)ct->ctx.stream; }

void cuda_trainer_use(const cuda_trainer *ct) { cudaSetDevice(ct->device); }

laya_status cuda_trainer_init(cuda_trainer *ct, const model_cfg *c, int B, int T, float dropout,
                              cuda_math math, char *err, size_t errlen) {
    memset(ct, 0, sizeof *ct);
    laya_status st = model_cfg_check(c, err, errlen);
    if (st != LAYA_OK) return st;
    if (B < 1 || T < 1 || (int64_t)B * T > (1 << 24))
        return err_set(err, errlen, LAYA_ERR_ARG, "batch %d x sequence %d out of range (1..2^24 rows)", B, T);
    if (!(dropout >= 0.0f && dropout < 1.0f))
        return err_set(err, errlen, LAYA_ERR_ARG, "dropout %g outside [0,1)", dropout);
    ct->cfg = *c;
    if (cudaGetDevice(&ct->device) != cudaSuccess) {
        cudaGetLastError();
        ct->device = 0;
    }
    ct->B = B;
    ct->T = T;
    ct->dropout = dropout;
    ct->P = model_n_params(c);
    ct->g_slot = -2;
    size_t red = (size_t)CUDA_COLSUM_PARTS * 3 * (size_t)c->H;
    if ((st = cuda_ctx_init(&ct->ctx, math, red, err, errlen)) != LAYA_OK) return st;
    if ((st = cuda_ctx_set_split(&ct->ctx, CUDA_TRAIN_SPLIT, err, errlen)) != LAYA_OK) {
        cuda_trainer_free(ct);
        return st;
    }
    /* bf16 products asked for: the recurrences run persistent where the
     * shape allows (cuda_rec.cu); otherwise they stay cuBLAS calls. */
    if (math == CUDA_MATH_BF16) {
        char why[200];
        if (cuda_ctx_set_persist(&ct->ctx, B, c->H, why, sizeof why) != LAYA_OK) cudaGetLastError();
    }
    bump b = {0};
    layout(ct, &b);
    ct->mem_bytes = b.off;
    size_t N = (size_t)B * T;
    cudaError_t e = cudaMalloc(&ct->mem, b.off);
    if (e != cudaSuccess) {
        cudaGetLastError();
        ct->mem = NULL;
        cuda_trainer_free(ct);
        return err_set(err, errlen, LAYA_ERR_NOMEM,
                       "cannot allocate %.2f GB on the GPU for B=%d T=%d (lower --batch or --seq)",
                       (double)b.off / 1e9, B, T);
    }
    b.base = ct->mem;
    b.off = 0;
    layout(ct, &b);
    size_t hbytes = (2 * N + cuda_embed_index_ints((int)N) + (size_t)c->V) * sizeof(int32_t) +
                    N * CUDA_SOFT_K * (sizeof(int32_t) + sizeof(float)) + sizeof(cuda_step_vars) +
                    2 * sizeof(double) + 64;
    char *h = NULL;
    if ((e = cudaMallocHost((void **)&h, hbytes)) != cudaSuccess) {
        cuda_trainer_free(ct);
        return cerr(e, "cannot allocate pinned host memory", err, errlen);
    }
    ct->h_vars = (cuda_step_vars *)h;
    ct->h_out = (double *)(h + sizeof(cuda_step_vars));
    ct->h_in = (int32_t *)(h + sizeof(cuda_step_vars) + 2 * sizeof(double));
    ct->h_tgt = ct->h_in + N;
    ct->h_eidx = ct->h_tgt + N;
    ct->h_counts = ct->h_eidx + cuda_embed_index_ints((int)N);
    ct->h_soft_tok = ct->h_counts + c->V;
    ct->h_soft_w = (float *)(ct->h_soft_tok + N * CUDA_SOFT_K);
    memset(h, 0, hbytes);
    if ((e = cudaMemsetAsync(ct->mem, 0, ct->mem_bytes, strm(ct))) != cudaSuccess) {
        cuda_trainer_free(ct);
        return cerr(e, "cannot clear GPU memory", err, errlen);
    }
    return cuda_ctx_sync(&ct->ctx, "CUDA trainer setup", err, errlen);
}

static void drop_graph(cuda_trainer *ct) {
    for (int i = 0; i < 2; i++) {
        if (ct->graph_exec[i]) cudaGraphExecDestroy((cudaGraphExec_t)ct->graph_exec[i]);
        if (ct->graph[i]) cudaGraphDestroy((cudaGraph_t)ct->graph[i]);
        ct->graph[i] = ct->graph_exec[i] = NULL;
    }
    ct->g_slot = -2;
}

void cuda_trainer_free(cuda_trainer *ct) {
    if (ct->ctx.stream) cuda_trainer_use(ct);
    drop_graph(ct);
    if (ct->mem) cudaFree(ct->mem);
    if (ct->h_vars) cudaFreeHost(ct->h_vars);
    for (int i = 0; i < ct->prof_n; i++) cudaEventDestroy((cudaEvent_t)ct->prof_ev[i]);
    cuda_ctx_free(&ct->ctx);
    memset(ct, 0, sizeof *ct);
}

laya_status cuda_trainer_set_split(cuda_trainer *ct, int split, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    drop_graph(ct);
    return cuda_ctx_set_split(&ct->ctx, split, err, errlen);
}

laya_status cuda_trainer_set_persist(cuda_trainer *ct, int on, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    drop_graph(ct);
    if (!on) {
        ct->ctx.persist = 0;
        return LAYA_OK;
    }
    return cuda_ctx_set_persist(&ct->ctx, ct->B, ct->cfg.H, err, errlen);
}

laya_status cuda_trainer_set(cuda_trainer *ct, const float *params, const float *m, const float *v,
                             char *err, size_t errlen) {
    cuda_trainer_use(ct);
    size_t bytes = ct->P * sizeof(float);
    cudaError_t e = cudaMemcpy(ct->params, params, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = m ? cudaMemcpy(ct->m, m, bytes, cudaMemcpyHostToDevice) : cudaMemset(ct->m, 0, bytes);
    if (e == cudaSuccess) e = v ? cudaMemcpy(ct->v, v, bytes, cudaMemcpyHostToDevice) : cudaMemset(ct->v, 0, bytes);
    if (e == cudaSuccess) e = cudaDeviceSynchronize(); /* pageable uploads may still be in flight */
    return cerr(e, "copying parameters to the GPU", err, errlen);
}

laya_status cuda_trainer_get(cuda_trainer *ct, float *params, float *m, float *v, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    size_t bytes = ct->P * sizeof(float);
    cudaError_t e = cudaStreamSynchronize(strm(ct));
    if (e == cudaSuccess && params) e = cudaMemcpy(params, ct->params, bytes, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && m) e = cudaMemcpy(m, ct->m, bytes, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && v) e = cudaMemcpy(v, ct->v, bytes, cudaMemcpyDeviceToHost);
    return cerr(e, "copying parameters from the GPU", err, errlen);
}

laya_status cuda_trainer_get_grads(cuda_trainer *ct, float *grads, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    cudaError_t e = cudaStreamSynchronize(strm(ct));
    if (e == cudaSuccess) e = cudaMemcpy(grads, ct->grads, ct->P * sizeof(float), cudaMemcpyDeviceToHost);
    return cerr(e, "copying gradients from the GPU", err, errlen);
}

static size_t state_floats(const cuda_trainer *ct) { return (size_t)ct->cfg.L * ct->B * ct->cfg.H; }

laya_status cuda_state_set(cuda_trainer *ct, int slot, const float *state, size_t floats, char *err,
                           size_t errlen) {
    cuda_trainer_use(ct);
    if ((slot != 0 && slot != 1) || floats > state_floats(ct))
        return err_set(err, errlen, LAYA_ERR_ARG, "state slot %d of %zu floats", slot, floats);
    cudaError_t e = cudaStreamSynchronize(strm(ct));
    if (e == cudaSuccess) e = cudaMemcpy(ct->state[slot], state, floats * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    return cerr(e, "copying the carried state to the GPU", err, errlen);
}

laya_status cuda_state_get(cuda_trainer *ct, int slot, float *state, size_t floats, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    if ((slot != 0 && slot != 1) || floats > state_floats(ct))
        return err_set(err, errlen, LAYA_ERR_ARG, "state slot %d of %zu floats", slot, floats);
    cudaError_t e = cudaStreamSynchronize(strm(ct));
    if (e == cudaSuccess) e = cudaMemcpy(state, ct->state[slot], floats * sizeof(float), cudaMemcpyDeviceToHost);
    return cerr(e, "copying the carried state from the GPU", err, errlen);
}

laya_status cuda_state_zero(cuda_trainer *ct, int slot, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    if (slot != 0 && slot != 1) return err_set(err, errlen, LAYA_ERR_ARG, "state slot %d", slot);
    return cerr(cudaMemsetAsync(ct->state[slot], 0, state_floats(ct) * sizeof(float), strm(ct)),
                "clearing the carried state", err, errlen);
}

/* ---- profiling marks (only outside graph capture) ---- */

static void mark(cuda_trainer *ct, const char *name, int on) {
    if (!on || ct->prof_n >= 128) return;
    if (!ct->prof_ev[ct->prof_n] && cudaEventCreate((cudaEvent_t *)&ct->prof_ev[ct->prof_n]) != cudaSuccess) {
        ct->prof_ev[ct->prof_n] = NULL;
        return;
    }
    ct->prof_name[ct->prof_n] = name;
    cudaEventRecord((cudaEvent_t)ct->prof_ev[ct->prof_n], strm(ct));
    ct->prof_n++;
}

/* ---- staging: inputs and per-step scalars to the device ---- */

static uint64_t layer_salt(uint64_t salt, int l) { return (salt << 4) | (uint64_t)l; }

/* Fills the pinned inputs for toks (nb, T+1) and enqueues their copies.
 * sh (NULL: the whole batch) places the rows in a global batch: the
 * dropout kernel keys element i of the (N,H) input as key + i, so adding
 * the element offset of row row0 to the key gives every element the mask
 * its global index gets on one GPU. */
static void stage(cuda_trainer *ct, const int32_t *toks, int nb, int training, uint64_t seed, uint64_t salt,
                  const cuda_shard *sh) {
    int T = ct->T, N = nb * T;
    int64_t cnt = 0;
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < T; t++) {
            int32_t x = toks[(size_t)b * (T + 1) + t], y = toks[(size_t)b * (T + 1) + t + 1];
            ct->h_in[b * T + t] = x;
            ct->h_tgt[b * T + t] = y;
            cnt += y != TOK_PAD && y >= 0 && y < ct->cfg.V;
        }
    ct->nb = nb;
    ct->count = cnt;
    ct->drop_on = training && ct->dropout > 0.0f;
    cuda_embed_index(ct->h_in, N, ct->cfg.V, ct->h_counts, ct->h_eidx);
    ct->scale_count = sh ? sh->count : cnt;
    uint64_t off = sh ? (uint64_t)sh->row0 * (uint64_t)T * (uint64_t)ct->cfg.H : 0;
    for (int l = 0; l < ct->cfg.L; l++) ct->h_vars->key[l] = cuda_dropout_key(seed, layer_salt(salt, l)) + off;
    ct->h_vars->xent_scale = ct->scale_count ? (float)(1.0 / (double)ct->scale_count) : 0.0f;
    cudaStream_t s = strm(ct);
    cudaMemcpyAsync(ct->in, ct->h_in, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(ct->tgt, ct->h_tgt, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(ct->eidx, ct->h_eidx, cuda_embed_index_ints(N) * sizeof(int32_t), cudaMemcpyHostToDevice, s);
    /* the soft targets (cuda_trainer_soft) of these rows, or none: a slot
     * of weight 0 moves nothing, so clearing the weights clears them */
    size_t NK = (size_t)N * CUDA_SOFT_K;
    if (training && ct->soft_next_tok) {
        memcpy(ct->h_soft_tok, ct->soft_next_tok, NK * sizeof(int32_t));
        memcpy(ct->h_soft_w, ct->soft_next_w, NK * sizeof(float));
        cudaMemcpyAsync(ct->soft_tok, ct->h_soft_tok, NK * sizeof(int32_t), cudaMemcpyHostToDevice, s);
        cudaMemcpyAsync(ct->soft_w, ct->h_soft_w, NK * sizeof(float), cudaMemcpyHostToDevice, s);
        ct->soft_on = 1;
    } else if (ct->soft_on) {
        cudaMemsetAsync(ct->soft_w, 0, (size_t)ct->B * ct->T * CUDA_SOFT_K * sizeof(float), s);
        ct->soft_on = 0;
    }
    cudaMemcpyAsync(ct->vars, ct->h_vars, sizeof(cuda_step_vars), cudaMemcpyHostToDevice, s);
}

_Static_assert((int)CUDA_SOFT_K == (int)TRAIN_SOFT_K, "cuda_ops.h and train.h agree on the soft-target slots");

void cuda_trainer_soft(cuda_trainer *ct, const int32_t *soft_tok, const float *soft_w) {
    ct->soft_next_tok = soft_tok;
    ct->soft_next_w = soft_tok ? soft_w : NULL;
}

/* ---- forward and backward, enqueued (capturable) ---- */

static cuda_gru_w gru_w(const model_layer_params *p) {
    cuda_gru_w w = {p->w_ih, p->w_hh, p->b_ih, p->b_hh};
    return w;
}

static void enq_forward(cuda_trainer *ct, int nb, int slot, int grad, int prof) {
    const model_cfg *c = &ct->cfg;
    cuda_ctx *x = &ct->ctx;
    int T = ct->T, H = c->H, N = nb * T;
    model_params p;
    model_params_point(c, ct->params, &p);
    mark(ct, "embed", prof);
    cuda_embed_fwd(x, p.emb, ct->in, N, H, ct->lc[0].xin);
    for (int l = 0; l < c->L; l++) {
        cuda_layer_cache *lc = &ct->lc[l];
        const model_layer_params *lp = &p.layer[l];
        if (ct->drop_on) cuda_dropout(x, &ct->vars->key[l], ct->dropout, (size_t)N * H, lc->xin);
        cuda_gru_w w = gru_w(lp);
        float *h0 = slot >= 0 ? ct->state[slot] + (size_t)l * nb * H : NULL;
        mark(ct, "gru fwd", prof);
        cuda_gru_fwd(x, &w, nb, T, H, lc->xin, h0, lc->gates, lc->ghn, lc->hprev, lc->h, ct->ghs);
        mark(ct, "attn fwd", prof);
        float *out = l + 1 < c->L ? ct->lc[l + 1].xin : ct->xL;
        cuda_attn_fwd(x, lp->wq, lp->wo, nb, T, H, c->D, c->W, lc->h, lc->qkv, lc->att, lc->ctx, out);
        if (h0)
            cudaMemcpy2DAsync(h0, (size_t)H * sizeof(float), lc->h + (size_t)(T - 1) * H,
                              (size_t)T * H * sizeof(float), (size_t)H * sizeof(float), nb,
                              cudaMemcpyDeviceToDevice, strm(ct));
    }
    mark(ct, "rmsnorm fwd", prof);
    cuda_rmsnorm_fwd(x, p.norm, N, H, MODEL_NORM_EPS, ct->xL, ct->y, ct->rs);
    mark(ct, "logits+softmax", prof);
    if (ct->dl16) {
        cuda_to_bf16(x, p.emb, (size_t)c->V * H, ct->emb16);
        cuda_to_bf16(x, ct->y, (size_t)N * H, ct->y16);
        cuda_xent_fwd16(x, ct->emb16, N, c->V, H, ct->y16, ct->tgt, TOK_PAD, grad ? CUDA_XENT_GRAD : CUDA_XENT_LOSS,
                        &ct->vars->xent_scale, ct->soft_tok, ct->soft_w, ct->probs, ct->dl16, ct->row_loss);
    } else {
        cuda_xent_fwd(x, p.emb, N, c->V, H, ct->y, ct->tgt, TOK_PAD, grad ? CUDA_XENT_GRAD : CUDA_XENT_LOSS,
                      &ct->vars->xent_scale, ct->soft_tok, ct->soft_w, ct->probs, ct->row_loss);
    }
    cuda_sum(x, ct->row_loss, N, &ct->out[0]);
}

static void enq_backward(cuda_trainer *ct, int prof) {
    const model_cfg *c = &ct->cfg;
    cuda_ctx *x = &ct->ctx;
    int T = ct->T, H = c->H, nb = ct->nb, N = nb * T;
    model_params p, g;
    model_params_point(c, ct->params, &p);
    model_params_point(c, ct->grads, &g);
    cudaMemsetAsync(ct->grads, 0, ct->P * sizeof(float), strm(ct));
    mark(ct, "logits bwd", prof);
    if (ct->dl16)
        cuda_xent_bwd16(x, ct->emb16, N, c->V, H, ct->y16, ct->dl16, g.emb, ct->da);
    else
        cuda_xent_bwd(x, p.emb, N, c->V, H, ct->y, ct->probs, g.emb, ct->da);
    mark(ct, "rmsnorm bwd", prof);
    cuda_rmsnorm_bwd(x, p.norm, N, H, ct->xL, ct->rs, ct->da, ct->db, g.norm);
    for (int l = c->L - 1; l >= 0; l--) {
        cuda_layer_cache *lc = &ct->lc[l];
        const model_layer_params *lp = &p.layer[l];
        model_layer_params *lg = &g.layer[l];
        mark(ct, "attn bwd", prof);
        cuda_attn_bwd(x, lp->wq, lp->wo, nb, T, H, c->D, c->W, lc->h, lc->qkv, lc->att, lc->ctx, ct->db, ct->dqkv,
                      ct->dctx, ct->dsc, lg->wq, lg->wo, ct->da);
        mark(ct, "gru bwd", prof);
        cuda_gru_w w = gru_w(lp);
        cuda_gru_g gg = {lg->w_ih, lg->w_hh, lg->b_ih, lg->b_hh};
        cuda_gru_bwd(x, &w, &gg, nb, T, H, lc->xin, lc->gates, lc->ghn, lc->hprev, ct->da, ct->dgi, ct->dgh,
                     ct->dhc, ct->db);
        if (ct->drop_on) cuda_dropout(x, &ct->vars->key[l], ct->dropout, (size_t)N * H, ct->db);
    }
    mark(ct, "embed bwd", prof);
    cuda_embed_bwd(x, ct->eidx, N, c->V, H, ct->db, g.emb);
}

static void enq_optimizer(cuda_trainer *ct, const train_adamw *o, int prof) {
    const model_cfg *c = &ct->cfg;
    cuda_ctx *x = &ct->ctx;
    mark(ct, "clip+adamw", prof);
    cuda_grad_norm(x, ct->grads, ct->P, &ct->out[1]);
    model_tensor ts[2 + 8 * MODEL_MAX_L];
    int nt = model_tensors(c, ts, (int)(sizeof ts / sizeof ts[0]));
    for (int i = 0; i < nt; i++) {
        size_t off = ts[i].offset;
        size_t cnt = (size_t)ts[i].shape[0] * (size_t)(ts[i].ndim == 2 ? ts[i].shape[1] : 1);
        cuda_adamw(x, &ct->vars->adam, &ct->out[1], o->beta1, o->beta2, o->eps, o->wd, ts[i].ndim == 2, cnt,
                   ct->params + off, ct->grads + off, ct->m + off, ct->v + off);
    }
    mark(ct, "end", prof);
}

/* ---- public entry points ---- */

laya_status cuda_trainer_forward(cuda_trainer *ct, const int32_t *toks, int nb, int slot, int training,
                                 int grad, uint64_t seed, uint64_t salt, double *loss, char *err,
                                 size_t errlen) {
    if (nb < 1 || nb > ct->B || slot < -1 || slot > 1)
        return err_set(err, errlen, LAYA_ERR_ARG, "forward over %d streams (1..%d), slot %d", nb, ct->B, slot);
    cuda_trainer_use(ct);
    stage(ct, toks, nb, training, seed, salt, NULL);
    enq_forward(ct, nb, slot, grad, 0);
    cudaMemcpyAsync(ct->h_out, ct->out, sizeof(double), cudaMemcpyDeviceToHost, strm(ct));
    laya_status st = cuda_ctx_sync(&ct->ctx, "CUDA forward", err, errlen);
    if (st != LAYA_OK) return st;
    ct->loss_sum = ct->h_out[0];
    *loss = ct->count ? ct->loss_sum / (double)ct->count : 0.0;
    return LAYA_OK;
}

laya_status cuda_trainer_backward(cuda_trainer *ct, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    enq_backward(ct, 0);
    return cuda_ctx_sync(&ct->ctx, "CUDA backward", err, errlen);
}

static void set_adam_vars(cuda_trainer *ct, const train_adamw *o, float lr, int64_t step, float clip) {
    /* As train_adamw_step: bias corrections in double, then float. */
    ct->h_vars->adam.lr = lr;
    ct->h_vars->adam.bc1 = (float)(1.0 - pow(o->beta1, (double)step));
    ct->h_vars->adam.bc2 = (float)(1.0 - pow(o->beta2, (double)step));
    ct->h_vars->adam.clip = clip;
}

/* Captures what enq enqueues on ct's stream into graph k and instantiates
 * it. On failure nothing is left captured. */
static laya_status capture(cuda_trainer *ct, int k, void (*enq)(cuda_trainer *, const train_adamw *, int),
                           const train_adamw *o, int slot, const char *what, char *err, size_t errlen) {
    cudaStream_t s = strm(ct);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) return cerr(e, "starting CUDA graph capture", err, errlen);
    enq(ct, o, slot);
    e = cudaStreamEndCapture(s, &g);
    if (e != cudaSuccess) return cerr(e, what, err, errlen);
    laya_status st = cuda_ctx_check(&ct->ctx, what, err, errlen);
    if (st != LAYA_OK) {
        cudaGraphDestroy(g);
        return st;
    }
    ct->graph[k] = g;
    e = cudaGraphInstantiate(&ge, g, 0);
    if (e != cudaSuccess) {
        drop_graph(ct);
        return cerr(e, "instantiating the training-step graph", err, errlen);
    }
    ct->graph_exec[k] = ge;
    return LAYA_OK;
}

static void enq_fwd_bwd(cuda_trainer *ct, const train_adamw *o, int slot) {
    (void)o;
    enq_forward(ct, ct->B, slot, 1, 0);
    enq_backward(ct, 0);
}

static void enq_opt_out(cuda_trainer *ct, const train_adamw *o, int slot) {
    (void)slot;
    enq_optimizer(ct, o, 0);
    cudaMemcpyAsync(ct->h_out, ct->out, 2 * sizeof(double), cudaMemcpyDeviceToHost, strm(ct));
}

laya_status cuda_trainer_step_launch(cuda_trainer *ct, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                                     const train_adamw *o, float lr, float clip, const cuda_shard *sh, char *err,
                                     size_t errlen) {
    if (slot != CUDA_SLOT_NONE && slot != CUDA_SLOT_TRAIN)
        return err_set(err, errlen, LAYA_ERR_ARG, "a training step carries slot %d", slot);
    cuda_trainer_use(ct);
    set_adam_vars(ct, o, lr, step + 1, clip);
    /* The copies stage() enqueues run before the graphs, outside them. */
    stage(ct, toks, ct->B, 1, seed, (uint64_t)step, sh);
    laya_status st;
    if (!ct->graph_exec[0] || ct->g_slot != slot || memcmp(&ct->g_adam, o, sizeof *o) != 0) {
        drop_graph(ct);
        if ((st = capture(ct, 0, enq_fwd_bwd, o, slot, "capturing the forward and backward", err, errlen)) !=
                LAYA_OK ||
            (st = capture(ct, 1, enq_opt_out, o, slot, "capturing the optimizer", err, errlen)) != LAYA_OK)
            return st;
        ct->g_slot = slot;
        ct->g_adam = *o;
    }
    return cerr(cudaGraphLaunch((cudaGraphExec_t)ct->graph_exec[0], strm(ct)), "launching the training step", err,
                errlen);
}

laya_status cuda_trainer_step_apply(cuda_trainer *ct, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    if (!ct->graph_exec[1]) return err_set(err, errlen, LAYA_ERR_ARG, "step_apply without step_launch");
    return cerr(cudaGraphLaunch((cudaGraphExec_t)ct->graph_exec[1], strm(ct)), "launching the optimizer", err,
                errlen);
}

laya_status cuda_trainer_step_finish(cuda_trainer *ct, double *loss, double *norm, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    laya_status st = cuda_ctx_sync(&ct->ctx, "CUDA training step", err, errlen);
    if (st != LAYA_OK) return st;
    ct->loss_sum = ct->h_out[0];
    *loss = ct->scale_count ? ct->loss_sum / (double)ct->scale_count : 0.0;
    if (norm) *norm = ct->h_out[1];
    return LAYA_OK;
}

laya_status cuda_trainer_step(cuda_trainer *ct, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                              const train_adamw *o, float lr, float clip, double *loss, double *norm,
                              char *err, size_t errlen) {
    laya_status st = cuda_trainer_step_launch(ct, toks, slot, seed, step, o, lr, clip, NULL, err, errlen);
    if (st == LAYA_OK) st = cuda_trainer_step_apply(ct, err, errlen);
    if (st == LAYA_OK) st = cuda_trainer_step_finish(ct, loss, norm, err, errlen);
    return st;
}

laya_status cuda_trainer_profile(cuda_trainer *ct, const int32_t *toks, char *err, size_t errlen) {
    cuda_trainer_use(ct);
    train_adamw o = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .wd = 0.1f};
    set_adam_vars(ct, &o, 1e-3f, 1, 1.0f);
    stage(ct, toks, ct->B, 1, 1, 1, NULL);
    ct->prof_n = 0;
    enq_forward(ct, ct->B, CUDA_SLOT_TRAIN, 1, 1);
    enq_backward(ct, 1);
    enq_optimizer(ct, &o, 1);
    laya_status st = cuda_ctx_sync(&ct->ctx, "CUDA profile step", err, errlen);
    if (st != LAYA_OK) return st;
    /* Sum the intervals by phase name, in order of first appearance. */
    const char *names[32];
    double ms[32] = {0}, total = 0;
    int nn = 0;
    for (int i = 0; i + 1 < ct->prof_n; i++) {
        float t = 0;
        cudaEventElapsedTime(&t, (cudaEvent_t)ct->prof_ev[i], (cudaEvent_t)ct->prof_ev[i + 1]);
        int k = 0;
        while (k < nn && strcmp(names[k], ct->prof_name[i]) != 0) k++;
        if (k == nn && nn < 32) names[nn++] = ct->prof_name[i];
        if (k < 32) ms[k] += t;
        total += t;
    }
    printf("  %-16s %9s %6s\n", "phase", "ms", "share");
    for (int k = 0; k < nn; k++) printf("  %-16s %9.2f %5.1f%%\n", names[k], ms[k], 100 * ms[k] / total);
    printf("  %-16s %9.2f  (no graph: includes launch gaps)\n", "total", total);
    return LAYA_OK;
}

void cuda_trainer_poison(cuda_trainer *ct) {
    cuda_trainer_use(ct);
    /* Everything after the four parameter-sized arrays and the two state
     * slots is activation or scratch. */
    char *from = (char *)ct->lc[0].xin, *to = (char *)ct->in;
    cuda_fill_nan(&ct->ctx, (float *)from, (size_t)(to - from) / sizeof(float));
    cuda_fill_nan(&ct->ctx, ct->grads, ct->P);
}
