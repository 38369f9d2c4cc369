/* cuda_dp.c - data-parallel steps over the GPUs of one host (cuda_dp.h). */
#include "cuda/cuda_dp.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

laya_status cuda_dp_init(cuda_dp *dp, int n, int use_nccl, const model_cfg *c, int B, int T, float dropout,
                         cuda_math math, char *err, size_t errlen) {
    memset(dp, 0, sizeof *dp);
    if (n < 1 || n > CUDA_DP_MAX)
        return err_set(err, errlen, LAYA_ERR_ARG, "--gpus %d outside 1..%d", n, CUDA_DP_MAX);
    if (B % n != 0)
        return err_set(err, errlen, LAYA_ERR_ARG,
                       "--batch %d is not a multiple of --gpus %d (every GPU takes batch/gpus streams)", B, n);
    if (!use_nccl && n > 1) return err_set(err, errlen, LAYA_ERR_ARG, "%d replicas need NCCL", n);
    int have = cuda_device_count();
    if (have < n)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "--gpus %d: only %d CUDA device%s usable", n, have,
                       have == 1 ? "" : "s");
    dp->n = n;
    dp->B = B;
    dp->T = T;
    dp->Bl = B / n;
    dp->cfg = *c;
    dp->P = model_n_params(c);
    laya_status st = LAYA_OK;
    if (use_nccl && (st = cuda_nccl_open(&dp->nccl, err, errlen)) != LAYA_OK) return st;
    dp->h_state = malloc((size_t)c->L * dp->Bl * c->H * sizeof(float));
    if (!dp->h_state) {
        cuda_dp_free(dp);
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate the carried-state scratch");
    }
    for (int r = 0; r < n; r++) {
        cudaSetDevice(r);
        if ((st = cuda_trainer_init(&dp->ct[r], c, dp->Bl, T, dropout, math, err, errlen)) != LAYA_OK) {
            cuda_dp_free(dp);
            return st;
        }
        dp->n_ok++;
    }
    if (dp->nccl.lib) {
        int devs[CUDA_DP_MAX];
        for (int r = 0; r < n; r++) devs[r] = r;
        int res = dp->nccl.CommInitAll(dp->comm, n, devs);
        if (res != NCCL_SUCCESS) {
            memset(dp->comm, 0, sizeof dp->comm);
            st = cuda_nccl_err(&dp->nccl, res, "creating the NCCL communicators", err, errlen);
            cuda_dp_free(dp);
            return st;
        }
    }
    cudaSetDevice(0);
    return LAYA_OK;
}

void cuda_dp_free(cuda_dp *dp) {
    for (int r = 0; r < dp->n; r++)
        if (dp->comm[r]) dp->nccl.CommDestroy(dp->comm[r]);
    for (int r = 0; r < dp->n_ok; r++) cuda_trainer_free(&dp->ct[r]);
    if (dp->nccl.lib) cuda_nccl_close(&dp->nccl);
    int had = dp->n_ok;
    free(dp->h_state);
    memset(dp, 0, sizeof *dp);
    if (had) cudaSetDevice(0);
}

/* Replica r's rows of a state (L,B,H) <-> its own (L,Bl,H). */
static void state_rows(const cuda_dp *dp, int r, float *global, float *local, int to_local) {
    size_t H = (size_t)dp->cfg.H, B = (size_t)dp->B, Bl = (size_t)dp->Bl, row = H * sizeof(float);
    for (size_t l = 0; l < (size_t)dp->cfg.L; l++) {
        float *g = global + (l * B + (size_t)r * Bl) * H, *x = local + l * Bl * H;
        if (to_local)
            memcpy(x, g, Bl * row);
        else
            memcpy(g, x, Bl * row);
    }
}

laya_status cuda_dp_load(cuda_dp *dp, const float *params, const float *m, const float *v, const float *state,
                         char *err, size_t errlen) {
    size_t S = (size_t)dp->cfg.L * dp->Bl * dp->cfg.H;
    for (int r = 0; r < dp->n; r++) {
        cuda_trainer *ct = &dp->ct[r];
        laya_status st = cuda_trainer_set(ct, params, m, v, err, errlen);
        if (st != LAYA_OK) return st;
        if (state) {
            state_rows(dp, r, (float *)state, dp->h_state, 1);
            st = cuda_state_set(ct, CUDA_SLOT_TRAIN, dp->h_state, S, err, errlen);
        } else {
            st = cuda_state_zero(ct, CUDA_SLOT_TRAIN, err, errlen);
        }
        if (st != LAYA_OK) return st;
    }
    return LAYA_OK;
}

laya_status cuda_dp_store(cuda_dp *dp, float *params, float *m, float *v, float *state, char *err, size_t errlen) {
    size_t S = (size_t)dp->cfg.L * dp->Bl * dp->cfg.H;
    laya_status st = cuda_trainer_get(&dp->ct[0], params, m, v, err, errlen);
    for (int r = 0; state && st == LAYA_OK && r < dp->n; r++) {
        st = cuda_state_get(&dp->ct[r], CUDA_SLOT_TRAIN, dp->h_state, S, err, errlen);
        if (st == LAYA_OK) state_rows(dp, r, state, dp->h_state, 0);
    }
    return st;
}

laya_status cuda_dp_state_zero(cuda_dp *dp, int slot, char *err, size_t errlen) {
    laya_status st = LAYA_OK;
    for (int r = 0; st == LAYA_OK && r < dp->n; r++) st = cuda_state_zero(&dp->ct[r], slot, err, errlen);
    return st;
}

void cuda_dp_soft(cuda_dp *dp, const int32_t *soft_tok, const float *soft_w) {
    for (int r = 0; r < dp->n; r++) {
        size_t at = (size_t)r * dp->Bl * dp->T * CUDA_SOFT_K;
        cuda_trainer_soft(&dp->ct[r], soft_tok ? soft_tok + at : NULL, soft_tok ? soft_w + at : NULL);
    }
}

/* Targets of toks (nb, T+1) the loss counts (as stage() in cuda_train.c). */
static int64_t count_targets(const cuda_dp *dp, const int32_t *toks, int nb) {
    int T = dp->T;
    int64_t cnt = 0;
    for (int b = 0; b < nb; b++)
        for (int t = 1; t <= T; t++) {
            int32_t y = toks[(size_t)b * (T + 1) + t];
            cnt += y != TOK_PAD && y >= 0 && y < dp->cfg.V;
        }
    return cnt;
}

/* Forward + backward enqueued on every replica, then one grouped in-place
 * all-reduce of the gradients and the loss sums (nothing waits). */
static laya_status launch_and_reduce(cuda_dp *dp, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                                     const train_adamw *o, float lr, float clip, char *err, size_t errlen) {
    cuda_shard sh = {.count = count_targets(dp, toks, dp->B)};
    for (int r = 0; r < dp->n; r++) {
        sh.row0 = r * dp->Bl;
        laya_status st = cuda_trainer_step_launch(&dp->ct[r], toks + (size_t)sh.row0 * (dp->T + 1), slot, seed, step,
                                                  o, lr, clip, &sh, err, errlen);
        if (st != LAYA_OK) return st;
    }
    if (!dp->nccl.lib) return LAYA_OK;
    const cuda_nccl *nc = &dp->nccl;
    int res = nc->GroupStart();
    for (int r = 0; res == NCCL_SUCCESS && r < dp->n; r++) {
        cuda_trainer *ct = &dp->ct[r];
        res = nc->AllReduce(ct->grads, ct->grads, dp->P, NCCL_FLOAT32, NCCL_SUM, dp->comm[r], ct->ctx.stream);
        if (res == NCCL_SUCCESS)
            res = nc->AllReduce(ct->out, ct->out, 1, NCCL_FLOAT64, NCCL_SUM, dp->comm[r], ct->ctx.stream);
    }
    int end = nc->GroupEnd();
    return cuda_nccl_err(nc, res != NCCL_SUCCESS ? res : end, "all-reducing the gradients", err, errlen);
}

laya_status cuda_dp_forward_backward(cuda_dp *dp, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                                     const train_adamw *o, float lr, float clip, char *err, size_t errlen) {
    laya_status st = launch_and_reduce(dp, toks, slot, seed, step, o, lr, clip, err, errlen);
    for (int r = 0; st == LAYA_OK && r < dp->n; r++)
        st = cuda_ctx_sync(&dp->ct[r].ctx, "data-parallel forward and backward", err, errlen);
    return st;
}

laya_status cuda_dp_step(cuda_dp *dp, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                         const train_adamw *o, float lr, float clip, double *loss, double *norm, char *err,
                         size_t errlen) {
    laya_status st = launch_and_reduce(dp, toks, slot, seed, step, o, lr, clip, err, errlen);
    for (int r = 0; st == LAYA_OK && r < dp->n; r++) st = cuda_trainer_step_apply(&dp->ct[r], err, errlen);
    /* Every replica holds the same sums: replica 0 reports them. */
    for (int r = dp->n - 1; st == LAYA_OK && r >= 0; r--) {
        double l, g;
        st = cuda_trainer_step_finish(&dp->ct[r], &l, &g, err, errlen);
        if (r == 0 && st == LAYA_OK) {
            *loss = l;
            if (norm) *norm = g;
        }
    }
    return st;
}

laya_status cuda_dp_eval(cuda_dp *dp, const int32_t *toks, int nb, int slot, double *loss_sum, int64_t *count,
                         char *err, size_t errlen) {
    if (nb < 1 || nb > dp->B) return err_set(err, errlen, LAYA_ERR_ARG, "evaluation of %d streams (1..%d)", nb, dp->B);
    /* Rows [r*nb/n, (r+1)*nb/n): at most ceil(nb/n) <= B/n per replica, the
     * same split for every window of a file, so each replica keeps carrying
     * the states of the same streams. */
    for (int r = 0; r < dp->n; r++) {
        int lo = (int)((int64_t)nb * r / dp->n), hi = (int)((int64_t)nb * (r + 1) / dp->n);
        if (hi <= lo) continue;
        double l;
        cuda_trainer *ct = &dp->ct[r];
        laya_status st = cuda_trainer_forward(ct, toks + (size_t)lo * (dp->T + 1), hi - lo, slot, 0, 0, 0, 0, &l,
                                              err, errlen);
        if (st != LAYA_OK) return st;
        *loss_sum += ct->loss_sum;
        *count += ct->count;
    }
    return LAYA_OK;
}
