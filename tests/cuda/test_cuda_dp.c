/* test_cuda_dp.c - data-parallel training (cuda_dp.h) against the one-GPU
 * trainer: one replica through NCCL gives exactly the one-GPU gradients
 * and parameters (the same kernels, and an all-reduce of one rank is a
 * copy); two replicas give the one-GPU step of the same global batch
 * within the f32 tolerance of test_cuda_step.c (only the summation order
 * of the gradients differs), dropout and the carried state included; and
 * two replicas stay bit-identical over several steps. Skips without a GPU,
 * without NCCL (libnccl.so.2: see cuda_nccl.h) or with too few GPUs. */
#include <stdio.h>

#include "cuda/cuda_dp.h"
#include "cuda_test_util.h"

#define NEED_GPUS(n)                                                                   \
    do {                                                                               \
        if (cuda_device_count() < (n)) SKIP("fewer than " #n " CUDA devices");         \
    } while (0)

#define NEED_NCCL()                                                                    \
    do {                                                                               \
        cuda_nccl nc_;                                                                 \
        char e_[512];                                                                  \
        if (cuda_nccl_open(&nc_, e_, sizeof e_) != LAYA_OK) SKIP("no NCCL library");   \
        cuda_nccl_close(&nc_);                                                         \
    } while (0)

/* f32 products: the tolerances of test_cuda_step.c's f32 case. */
#define DP_LOSS_TOL 1e-5
#define DP_GRAD_TOL 1e-3

static const train_adamw ADAM = {.lr = 2e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .wd = 0.1f};

static void make_batch(int32_t *toks, int B, int T, int V, uint64_t *s) {
    for (int i = 0; i < B * (T + 1); i++) toks[i] = (int32_t)(tu_next(s) % (unsigned)V);
    toks[T] = TOK_PAD;                 /* a target not counted, in replica 0's rows */
    toks[(B - 1) * (T + 1) + 3] = TOK_PAD; /* and one in the last replica's */
}

static float *start_params(const model_cfg *c) {
    size_t P = model_n_params(c);
    float *p = malloc(P * 4);
    train_init_params(c, p, 3);
    for (size_t i = 0; i < P; i++) p[i] *= 2.0f; /* away from the near-linear start */
    return p;
}

/* Worst relative error over the parameter tensors of a and b. */
static double worst_tensor(const model_cfg *c, const float *got, const float *want, const char **name) {
    model_tensor ts[2 + 8 * MODEL_MAX_L];
    int nt = model_tensors(c, ts, (int)(sizeof ts / sizeof ts[0]));
    double worst = 0;
    for (int i = 0; i < nt; i++) {
        size_t cnt = (size_t)ts[i].shape[0] * (size_t)(ts[i].ndim == 2 ? ts[i].shape[1] : 1);
        double e = tu_relerr(got + ts[i].offset, want + ts[i].offset, cnt);
        if (!(e <= worst)) worst = e, *name = ts[i].name;
    }
    return worst;
}

/* cuda_dp_init's argument checks need no GPU. */
TEST(cuda_dp_rejects_uneven_batch) {
    cuda_dp dp;
    char err[512] = "";
    model_cfg cfg = {.V = 300, .H = 48, .D = 20, .L = 2, .W = 5};
    CHECK(cuda_dp_init(&dp, 3, 1, &cfg, 8, 4, 0.0f, CUDA_MATH_F32, err, sizeof err) == LAYA_ERR_ARG);
    printf("    %s\n", err);
    CHECK(strstr(err, "multiple") != NULL);
    CHECK(cuda_dp_init(&dp, 0, 1, &cfg, 8, 4, 0.0f, CUDA_MATH_F32, err, sizeof err) == LAYA_ERR_ARG);
}

/* (1) One replica through NCCL: the gradients and, after three steps, the
 * parameters, moments and carried state equal the plain trainer's bit for
 * bit. */
TEST(cuda_dp_one_rank_equals_single_gpu) {
    NEED_GPU();
    NEED_NCCL();
    model_cfg cfg = {.V = 1000, .H = 128, .D = 64, .L = 3, .W = 5};
    int B = 8, T = 32;
    char err[512];
    size_t P = model_n_params(&cfg), S = (size_t)cfg.L * B * cfg.H;
    uint64_t s = 4321;
    float *p = start_params(&cfg), *st = tu_rand(S, 0.5f, &s);
    float *g1 = malloc(P * 4), *gd = malloc(P * 4), *a = malloc(P * 4), *b = malloc(P * 4);
    float *sa = malloc(S * 4), *sb = malloc(S * 4);
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    cuda_trainer ct;
    cuda_dp dp;
    CHECKF(cuda_trainer_init(&ct, &cfg, B, T, 0.1f, CUDA_MATH_F32, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_init(&dp, 1, 1, &cfg, B, T, 0.1f, CUDA_MATH_F32, err, sizeof err) == LAYA_OK, "%s", err);
    printf("    NCCL %d from %s\n", dp.nccl.version, dp.nccl.path);
    CHECKF(cuda_trainer_set(&ct, p, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_state_set(&ct, CUDA_SLOT_TRAIN, st, S, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_load(&dp, p, NULL, NULL, st, err, sizeof err) == LAYA_OK, "%s", err);

    make_batch(toks, B, T, cfg.V, &s);
    CHECKF(cuda_trainer_step_launch(&ct, toks, CUDA_SLOT_NONE, 5, 0, &ADAM, 1e-3f, 1.0f, NULL, err, sizeof err) ==
               LAYA_OK, "%s", err);
    CHECKF(cuda_trainer_get_grads(&ct, g1, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_forward_backward(&dp, toks, CUDA_SLOT_NONE, 5, 0, &ADAM, 1e-3f, 1.0f, err, sizeof err) == LAYA_OK,
           "%s", err);
    CHECKF(cuda_trainer_get_grads(&dp.ct[0], gd, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(memcmp(g1, gd, P * 4) == 0, "one-rank NCCL gradients differ from the one-GPU trainer's");

    for (int k = 0; k < 3; k++) {
        make_batch(toks, B, T, cfg.V, &s);
        double l1, ld, n1, nd;
        CHECKF(cuda_trainer_step(&ct, toks, CUDA_SLOT_TRAIN, 9, k, &ADAM, 2e-3f, 0.5f, &l1, &n1, err, sizeof err) ==
                   LAYA_OK, "%s", err);
        CHECKF(cuda_dp_step(&dp, toks, CUDA_SLOT_TRAIN, 9, k, &ADAM, 2e-3f, 0.5f, &ld, &nd, err, sizeof err) ==
                   LAYA_OK, "%s", err);
        printf("    step %d: loss %.9f / %.9f, norm %.9g / %.9g\n", k, l1, ld, n1, nd);
        CHECK(l1 == ld && n1 == nd);
    }
    CHECKF(cuda_trainer_get(&ct, a, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_state_get(&ct, CUDA_SLOT_TRAIN, sa, S, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_store(&dp, b, NULL, NULL, sb, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(memcmp(a, b, P * 4) == 0);
    CHECK(memcmp(sa, sb, S * 4) == 0);
    CHECKF(cuda_trainer_get(&ct, NULL, a, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_store(&dp, NULL, b, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(memcmp(a, b, P * 4) == 0);

    cuda_dp_free(&dp);
    cuda_trainer_free(&ct);
    free(p), free(st), free(g1), free(gd), free(a), free(b), free(sa), free(sb), free(toks);
}

/* (2) Two replicas against one GPU on the same global batch, f32
 * products, dropout on, a non-zero carried state: the loss and gradient
 * norm of two steps, the gradients of a third, the gathered carried state
 * and the parameters. */
TEST(cuda_dp_two_gpus_match_one) {
    NEED_GPUS(2);
    NEED_NCCL();
    model_cfg cfg = {.V = 1000, .H = 128, .D = 64, .L = 3, .W = 5};
    int B = 8, T = 32;
    char err[512];
    size_t P = model_n_params(&cfg), S = (size_t)cfg.L * B * cfg.H;
    uint64_t s = 777;
    float *p = start_params(&cfg), *st = tu_rand(S, 0.5f, &s);
    float *g1 = malloc(P * 4), *g2 = malloc(P * 4), *a = malloc(P * 4), *b = malloc(P * 4);
    float *sa = malloc(S * 4), *sb = malloc(S * 4);
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    cuda_trainer ct;
    cuda_dp dp;
    CHECKF(cuda_trainer_init(&ct, &cfg, B, T, 0.2f, CUDA_MATH_F32, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_init(&dp, 2, 1, &cfg, B, T, 0.2f, CUDA_MATH_F32, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_trainer_set(&ct, p, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_state_set(&ct, CUDA_SLOT_TRAIN, st, S, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_load(&dp, p, NULL, NULL, st, err, sizeof err) == LAYA_OK, "%s", err);
    for (int k = 0; k < 2; k++) {
        make_batch(toks, B, T, cfg.V, &s);
        double l1, l2, n1, n2;
        CHECKF(cuda_trainer_step(&ct, toks, CUDA_SLOT_TRAIN, 11, k, &ADAM, 2e-3f, 0.5f, &l1, &n1, err, sizeof err) ==
                   LAYA_OK, "%s", err);
        CHECKF(cuda_dp_step(&dp, toks, CUDA_SLOT_TRAIN, 11, k, &ADAM, 2e-3f, 0.5f, &l2, &n2, err, sizeof err) ==
                   LAYA_OK, "%s", err);
        double le = fabs(l2 - l1) / l1, ne = fabs(n2 - n1) / n1;
        printf("    step %d: loss 1 GPU %.9f, 2 GPUs %.9f (rel %.1e); norm %.9g / %.9g (rel %.1e)\n", k, l1, l2, le, n1,
               n2, ne);
        CHECKF(le <= DP_LOSS_TOL, "step %d: loss relative error %.2e", k, le);
        CHECKF(ne <= DP_GRAD_TOL, "step %d: gradient norm relative error %.2e", k, ne);
    }
    make_batch(toks, B, T, cfg.V, &s);
    CHECKF(cuda_trainer_step_launch(&ct, toks, CUDA_SLOT_TRAIN, 11, 2, &ADAM, 2e-3f, 0.5f, NULL, err, sizeof err) ==
               LAYA_OK, "%s", err);
    CHECKF(cuda_trainer_get_grads(&ct, g1, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_forward_backward(&dp, toks, CUDA_SLOT_TRAIN, 11, 2, &ADAM, 2e-3f, 0.5f, err, sizeof err) ==
               LAYA_OK, "%s", err);
    for (int r = 0; r < 2; r++) {
        const char *name = "";
        CHECKF(cuda_trainer_get_grads(&dp.ct[r], g2, err, sizeof err) == LAYA_OK, "%s", err);
        double e = worst_tensor(&cfg, g2, g1, &name);
        printf("    step 2, replica %d: worst gradient tensor %s rel %.2e (tol %.0e)\n", r, name, e, DP_GRAD_TOL);
        CHECKF(e <= DP_GRAD_TOL, "replica %d: gradient of %s relative error %.2e", r, name, e);
    }
    CHECKF(cuda_state_get(&ct, CUDA_SLOT_TRAIN, sa, S, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_trainer_get(&ct, a, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(cuda_dp_store(&dp, b, NULL, NULL, sb, err, sizeof err) == LAYA_OK, "%s", err);
    double se = tu_relerr(sb, sa, S);
    for (size_t i = 0; i < P; i++) a[i] -= p[i], b[i] -= p[i];
    double ue = tu_relerr(b, a, P);
    printf("    gathered carried state rel %.2e; parameter change after 2 steps rel %.2e\n", se, ue);
    CHECKF(se <= DP_LOSS_TOL * 10, "carried state relative error %.2e", se);
    CHECKF(ue <= DP_GRAD_TOL * 10, "parameter update relative error %.2e", ue);

    cuda_dp_free(&dp);
    cuda_trainer_free(&ct);
    free(p), free(st), free(g1), free(g2), free(a), free(b), free(sa), free(sb), free(toks);
}

/* (3) Two replicas stay bit-identical: parameters and both moments after
 * four steps, in bf16 on a shape the persistent recurrences cover (64 rows
 * per replica). */
TEST(cuda_dp_replicas_stay_identical) {
    NEED_GPUS(2);
    NEED_NCCL();
    model_cfg cfg = {.V = 500, .H = 192, .D = 32, .L = 2, .W = 5};
    int B = 128, T = 16;
    char err[512];
    size_t P = model_n_params(&cfg);
    uint64_t s = 31;
    float *p = start_params(&cfg), *x[2][3];
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    cuda_dp dp;
    CHECKF(cuda_dp_init(&dp, 2, 1, &cfg, B, T, 0.1f, CUDA_MATH_BF16, err, sizeof err) == LAYA_OK, "%s", err);
    printf("    replica 0 %s persistent recurrences\n", dp.ct[0].ctx.persist ? "with" : "without");
    CHECKF(cuda_dp_load(&dp, p, NULL, NULL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    for (int k = 0; k < 4; k++) {
        make_batch(toks, B, T, cfg.V, &s);
        double l, n;
        CHECKF(cuda_dp_step(&dp, toks, CUDA_SLOT_TRAIN, 3, k, &ADAM, 2e-3f, 1.0f, &l, &n, err, sizeof err) == LAYA_OK,
               "%s", err);
        printf("    step %d: loss %.6f norm %.6g\n", k, l, n);
    }
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 3; i++) x[r][i] = malloc(P * 4);
        CHECKF(cuda_trainer_get(&dp.ct[r], x[r][0], x[r][1], x[r][2], err, sizeof err) == LAYA_OK, "%s", err);
    }
    CHECKF(memcmp(x[0][0], x[1][0], P * 4) == 0, "the replicas' parameters differ");
    CHECKF(memcmp(x[0][1], x[1][1], P * 4) == 0, "the replicas' first moments differ");
    CHECKF(memcmp(x[0][2], x[1][2], P * 4) == 0, "the replicas' second moments differ");
    cuda_dp_free(&dp);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++) free(x[r][i]);
    free(p), free(toks);
}
