/* train_loop.c - the training loop behind `laya train`.
 *
 * One step: the next window of every shard (train_data.c), forward with
 * dropout, backward, global-norm clipping, AdamW at the scheduled rate.
 * Every eval_every steps and at the end: validation loss and bits per byte
 * on each valid file (dropout off, state carried within the file, from zero
 * at its start), a row of OUTDIR/log.csv, OUTDIR/best.safetensors when the
 * first valid file's loss improves, and OUTDIR/last.ckpt.
 *
 * Schedule: with --steps, frac = (step - warmup) / (steps - warmup). With a
 * time budget, frac = training seconds so far / budget, and the budget
 * counts the whole run (resumed runs add to the seconds already spent); the
 * loop stops when the next step plus a final evaluation and checkpoint would
 * overrun it. A time-budget run is therefore not bit-reproducible; a --steps
 * run resumed from last.ckpt is (same thread count).
 *
 * The loop is the same for both trainers: the steps run on a train_backend,
 * the CPU one below (cpu_*) or the GPU one of src/cuda/cuda_loop.c. A loss
 * that is not finite stops the run with an error (last.ckpt keeps the last
 * good state). */
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/err.h"

void train_opts_default(train_opts *o) {
    memset(o, 0, sizeof *o);
    o->cfg = model_cfg_default();
    o->cfg.H = 256;
    o->cfg.D = 64;
    o->B = 32;
    o->T = 64;
    o->lr = 2e-3f;
    o->wd = 0.1f;
    o->dropout = 0.1f;
    o->clip = 1.0f;
    o->warmup = 200;
    o->eval_every = 200;
    o->eval_tokens = 1 << 20;
    o->seed = 1;
    o->carry = 1;
    o->teacher_weight = 0.3f;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    const train_opts *o;
    const train_backend *b;
    int b_ok;            /* b->init succeeded: b->free is due */
    model_cfg cfg;
    tok *tk;
    uint8_t *tok_blob;
    size_t tok_len;
    tok_stream train, valid[TRAIN_MAX_VALID];
    int n_valid_open;
    int32_t *byte_len;   /* (V) bytes of each token, for bits per byte */
    float *params, *m, *v, *state;   /* the host copies (train_backend) */
    int32_t *toks;       /* (B, T+1) */
    train_teacher teacher; /* --teacher: its soft targets over the train stream */
    int32_t *soft_tok;   /* (B*T, TRAIN_SOFT_K) of the batch, or NULL without a teacher */
    float *soft_w;       /* (B*T, TRAIN_SOFT_K) */
    FILE *log;
    char path[4096];
    int64_t nw;          /* windows per pass over the train shards */
    train_ckpt_meta meta;
    train_adamw adam;
    train_progress pr;
    double t_start;      /* now_s() when this run started */
    double elapsed0;     /* seconds trained before it (a resume) */
    double step_s;       /* seconds per step, smoothed */
    double last_eval_s;  /* seconds the last evaluation and checkpoint took */
    double loss_acc;     /* train loss summed since the last log row */
    int loss_n;
} run_ctx;

static void run_free(run_ctx *r) {
    if (r->b_ok) r->b->free(r->b->self);
    free(r->params);
    free(r->m);
    free(r->v);
    free(r->state);
    free(r->toks);
    free(r->soft_tok);
    free(r->soft_w);
    train_teacher_free(&r->teacher);
    free(r->byte_len);
    free(r->tok_blob);
    tok_stream_close(&r->train);
    for (int i = 0; i < r->n_valid_open; i++) tok_stream_close(&r->valid[i]);
    if (r->tk) tok_free(r->tk);
    if (r->log) fclose(r->log);
}

static const char *out_path(run_ctx *r, const char *name) {
    snprintf(r->path, sizeof r->path, "%s/%s", r->o->out_dir, name);
    return r->path;
}

static laya_status open_stream(run_ctx *r, const char *path, tok_stream *s, const uint8_t sha[32],
                               char *err, size_t errlen) {
    laya_status st = tok_stream_open(path, s, err, errlen);
    if (st != LAYA_OK) return st;
    if (s->vocab_size != r->cfg.V || memcmp(s->tok_sha256, sha, 32) != 0)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "token stream '%s' was encoded with another tokenizer than '%s' "
                       "(re-encode it with `laya tokenizer encode`)", path, r->o->tok_path);
    return LAYA_OK;
}

/* Loss (nats/token) and bits per byte of one valid file. */
enum { EVAL_WINDOWS = 16 };
static laya_status evaluate(run_ctx *r, const tok_stream *s, double *loss, double *bpb, char *err,
                            size_t errlen) {
    const train_opts *o = r->o;
    const train_backend *b = r->b;
    int T = o->T;
    /* Parallel rows, each a contiguous shard whose state is carried from
     * window to window: a row starts cold, so few long rows, not the batch
     * width. A 64 KB genre split (~20k tokens) read as 152 rows of one
     * window each was scored with no context at every 129th token, 1-2%
     * worse than the engine scores the whole file; at least EVAL_WINDOWS
     * windows per row keeps the cold starts to a few percent of the tokens. */
    int nb = (int)(s->n / ((uint64_t)(T + 1) * EVAL_WINDOWS));
    if (nb < 1) nb = 1;
    if (nb > o->B) nb = o->B;
    int64_t nw = train_windows(s, nb, T);
    if (o->eval_tokens > 0 && nw * nb * T > o->eval_tokens) nw = o->eval_tokens / ((int64_t)nb * T);
    if (nw < 1) nw = 1;
    laya_status st = b->eval_begin(b->self, err, errlen);
    if (st != LAYA_OK) return st;
    double sum = 0, bytes = 0;
    int64_t cnt = 0;
    for (int64_t w = 0; w < nw; w++) {
        train_batch(s, nb, T, w, r->toks);
        if ((st = b->eval_batch(b->self, r->toks, nb, &sum, &cnt, err, errlen)) != LAYA_OK) return st;
        for (int k = 0; k < nb; k++)
            for (int t = 1; t <= T; t++) {
                int32_t y = r->toks[(size_t)k * (T + 1) + t];
                if (y != TOK_PAD) bytes += r->byte_len[y];
            }
    }
    *loss = cnt ? sum / (double)cnt : 0;
    *bpb = bytes > 0 ? sum / log(2.0) / bytes : 0;
    return LAYA_OK;
}

static laya_status save_best(run_ctx *r, int64_t step, double vloss, char *err, size_t errlen) {
    char meta[512];
    snprintf(meta, sizeof meta,
             "{\"trainer\":\"%s\",\"train_steps\":\"%lld\",\"valid_loss\":\"%.6f\","
             "\"batch\":\"%d\",\"seq\":\"%d\",\"lr\":\"%g\",\"dropout\":\"%g\",\"seed\":\"%llu\"}",
             r->b->trainer, (long long)step, vloss, r->o->B, r->o->T, r->o->lr, r->o->dropout,
             (unsigned long long)r->o->seed);
    return model_save(out_path(r, "best.safetensors"), &r->cfg, r->params, r->o->f16 ? QT_F16 : QT_F32,
                      r->tok_blob, r->tok_len, meta, err, errlen);
}

static laya_status check_opts(const train_opts *o, char *err, size_t errlen) {
    if (!o->train_path || !o->tok_path || !o->out_dir)
        return err_set(err, errlen, LAYA_ERR_ARG, "training needs --train, --tok and -o OUTDIR");
    if (o->n_valid < 1 || o->n_valid > TRAIN_MAX_VALID)
        return err_set(err, errlen, LAYA_ERR_ARG, "training needs 1..%d --valid files", TRAIN_MAX_VALID);
    if (o->B < 1 || o->B > 4096 || o->T < 1 || o->T > 4096)
        return err_set(err, errlen, LAYA_ERR_ARG, "--batch must be 1..4096 and --seq 1..4096");
    if (!(o->lr > 0 && o->lr < 1))
        return err_set(err, errlen, LAYA_ERR_ARG, "--lr %g outside (0,1)", o->lr);
    if (!(o->wd >= 0 && o->wd < 10) || !(o->clip >= 0))
        return err_set(err, errlen, LAYA_ERR_ARG, "--wd must be in [0,10) and --clip >= 0 (0 = off)");
    if (o->warmup < 0 || o->eval_every < 1)
        return err_set(err, errlen, LAYA_ERR_ARG, "--warmup must be >= 0 and --eval-every >= 1");
    if (o->teacher_path && !(o->teacher_weight > 0 && o->teacher_weight <= 1))
        return err_set(err, errlen, LAYA_ERR_ARG, "--teacher-weight %g outside (0, 1]", o->teacher_weight);
    if ((o->steps > 0) == (o->time_budget > 0))
        return err_set(err, errlen, LAYA_ERR_ARG, "give exactly one of --steps N and --time-budget SECONDS");
    return LAYA_OK;
}

/* Loads the tokenizer and opens the train and valid streams, which must
 * have been encoded with it. */
static laya_status run_open_inputs(run_ctx *r, char *err, size_t errlen) {
    const train_opts *o = r->o;
    uint8_t sha[32];
    laya_status st = tok_load_file(o->tok_path, &r->tk, err, errlen);
    if (st != LAYA_OK) return st;
    r->cfg.V = tok_vocab_size(r->tk);
    if ((st = model_cfg_check(&r->cfg, err, errlen)) != LAYA_OK) return st;
    if ((st = tok_save(r->tk, &r->tok_blob, &r->tok_len)) != LAYA_OK || (st = tok_sha256(r->tk, sha)) != LAYA_OK)
        return err_set(err, errlen, st, "cannot serialize tokenizer '%s'", o->tok_path);
    if ((st = open_stream(r, o->train_path, &r->train, sha, err, errlen)) != LAYA_OK) return st;
    for (; r->n_valid_open < o->n_valid; r->n_valid_open++) {
        tok_stream *s = &r->valid[r->n_valid_open];
        if ((st = open_stream(r, o->valid_paths[r->n_valid_open], s, sha, err, errlen)) != LAYA_OK) return st;
        if (s->n < (uint64_t)o->T + 1) {
            st = err_set(err, errlen, LAYA_ERR_FORMAT, "valid file '%s' has %llu tokens; --seq %d needs at least %d",
                         o->valid_paths[r->n_valid_open], (unsigned long long)s->n, o->T, o->T + 1);
            r->n_valid_open++;
            return st;
        }
    }
    r->nw = train_windows(&r->train, o->B, o->T);
    if (r->nw < 1)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "train file '%s' has %llu tokens: too few for --batch %d x --seq %d",
                       o->train_path, (unsigned long long)r->train.n, o->B, o->T);
    return LAYA_OK;
}

/* Creates the output directory and allocates the host copies (parameters,
 * AdamW moments, carried state), the batch and the token byte lengths. */
static laya_status run_alloc(run_ctx *r, char *err, size_t errlen) {
    const train_opts *o = r->o;
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
        return err_set(err, errlen, LAYA_ERR_IO, "cannot create output directory '%s': %s", o->out_dir,
                       strerror(errno));
    size_t P = model_n_params(&r->cfg), S = (size_t)r->cfg.L * o->B * r->cfg.H;
    r->params = calloc(P, sizeof(float));
    r->m = calloc(P, sizeof(float));
    r->v = calloc(P, sizeof(float));
    r->state = calloc(S, sizeof(float));
    r->toks = calloc((size_t)o->B * (o->T + 1), sizeof(int32_t));
    r->byte_len = calloc((size_t)r->cfg.V, sizeof(int32_t));
    if (!r->params || !r->m || !r->v || !r->state || !r->toks || !r->byte_len)
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate %zu parameters and their optimizer state", P);
    for (int32_t i = 0; i < r->cfg.V; i++) {
        size_t len = 0;
        tok_bytes(r->tk, i, &len);
        r->byte_len[i] = (int32_t)len;
    }
    return LAYA_OK;
}

/* --teacher: the soft targets of the whole train stream from the file's
 * next-word prior (its trust as laya_model_load's), and the batch's
 * arrays for them. */
static laya_status run_teacher(run_ctx *r, char *err, size_t errlen) {
    const train_opts *o = r->o;
    model *m = NULL;
    laya_status st = model_load(o->teacher_path, &m, err, errlen);
    if (st != LAYA_OK) return st;
    if (!m->prior.nw) {
        model_free(m);
        return err_set(err, errlen, LAYA_ERR_ARG, "--teacher %s holds no next-word prior (laya prior embed adds one)",
                       o->teacher_path);
    }
    st = train_teacher_build(&r->teacher, &r->train, r->tk, &m->prior, o->teacher_weight, 1, err, errlen);
    model_free(m);
    if (st != LAYA_OK) return st;
    fprintf(stderr, "laya train: teacher %s, weight %g: soft targets at %llu of %llu positions (%.1f%%)\n",
            o->teacher_path, o->teacher_weight, (unsigned long long)r->teacher.positions,
            (unsigned long long)r->teacher.n, r->teacher.n ? 100.0 * (double)r->teacher.positions / (double)r->teacher.n : 0.0);
    size_t NK = (size_t)o->B * o->T * TRAIN_SOFT_K;
    r->soft_tok = malloc(NK * sizeof(int32_t));
    r->soft_w = malloc(NK * sizeof(float));
    if (!r->soft_tok || !r->soft_w)
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate the batch's soft targets");
    return LAYA_OK;
}

/* --init: the parameters of a model file of the run's shape (any dtype the
 * loader reads; its trust as laya_model_load's, LAYA_ALLOW_UNSIGNED for a
 * trainer's own checkpoint), as the run's start. The optimizer starts afresh. */
static laya_status init_from_model(run_ctx *r, const char *path, char *err, size_t errlen) {
    model *m = NULL;
    laya_status st = model_load(path, &m, err, errlen);
    if (st != LAYA_OK) return st;
    const model_cfg *a = &m->cfg, *c = &r->cfg;
    if (a->V != c->V || a->H != c->H || a->D != c->D || a->L != c->L || a->W != c->W) {
        st = err_set(err, errlen, LAYA_ERR_ARG,
                     "--init %s is V=%d H=%d D=%d L=%d W=%d, the run V=%d H=%d D=%d L=%d W=%d", path, a->V, a->H,
                     a->D, a->L, a->W, c->V, c->H, c->D, c->L, c->W);
    } else {
        model_params_read(m, r->params);
    }
    model_free(m);
    return st;
}

/* Starts the backend from fresh parameters, a model file's (--init) or last.ckpt (--resume),
 * and opens log.csv (a fresh one gets its header). */
static laya_status run_start(run_ctx *r, char *err, size_t errlen) {
    const train_opts *o = r->o;
    const train_backend *b = r->b;
    laya_status st = b->init(b->self, &r->cfg, o, err, errlen);
    if (st != LAYA_OK) return st;
    r->b_ok = 1;
    r->meta = (train_ckpt_meta){.seed = o->seed, .best_valid = INFINITY};
    if (o->resume) {
        if ((st = train_ckpt_load(out_path(r, "last.ckpt"), &r->cfg, o->B, o->T, o->carry, &r->meta, r->params,
                                  r->m, r->v, r->state, err, errlen)) != LAYA_OK)
            return st;
    } else if (o->init_path) {
        if ((st = init_from_model(r, o->init_path, err, errlen)) != LAYA_OK) return st;
    } else {
        train_init_params(&r->cfg, r->params, o->seed);
    }
    if ((st = b->load(b->self, r->params, r->m, r->v, r->state, err, errlen)) != LAYA_OK) return st;
    int fresh_log = !o->resume;
    r->log = fopen(out_path(r, "log.csv"), fresh_log ? "w" : "a");
    if (!r->log) return err_set(err, errlen, LAYA_ERR_IO, "cannot write '%s': %s", r->path, strerror(errno));
    if (fresh_log) {
        fprintf(r->log, "step,tokens,train_loss");
        for (int i = 0; i < o->n_valid; i++) fprintf(r->log, ",valid_loss_%d", i + 1);
        for (int i = 0; i < o->n_valid; i++) fprintf(r->log, ",bits_per_byte_%d", i + 1);
        fprintf(r->log, ",lr,seconds\n");
        fflush(r->log);
    }
    return LAYA_OK;
}

/* Seconds trained so far, the runs before a resume included. */
static double run_elapsed(const run_ctx *r) { return r->elapsed0 + (now_s() - r->t_start); }

/* 1 when the run must end before another step: asked to stop, the step
 * count reached, or the time budget too short for one more step and a
 * final evaluation (1.5x the last one, and a second of margin). */
static int run_stopping(const run_ctx *r, volatile int *stop) {
    const train_opts *o = r->o;
    return (stop && *stop) || (o->steps > 0 && r->meta.step >= o->steps) ||
           (o->time_budget > 0 && run_elapsed(r) + r->step_s + 1.5 * r->last_eval_s + 1.0 >= o->time_budget);
}

/* The learning rate of the next step: warm-up, then the cosine over the
 * fraction done (of the steps after warm-up, or of the time budget). */
static float run_lr(const run_ctx *r) {
    const train_opts *o = r->o;
    int64_t step = r->meta.step;
    double frac = o->steps > 0
                      ? (o->steps > o->warmup ? (double)(step - o->warmup) / (double)(o->steps - o->warmup) : 1.0)
                      : run_elapsed(r) / o->time_budget;
    return train_lr_schedule(o->lr, step, o->warmup, frac);
}

/* One optimizer step on the next window of the shards, and the progress
 * report it fills. */
static laya_status run_step(run_ctx *r, char *err, size_t errlen) {
    const train_opts *o = r->o;
    const train_backend *b = r->b;
    train_ckpt_meta *meta = &r->meta;
    double t0 = now_s();
    int64_t w = meta->step % r->nw;
    laya_status st;
    /* A new pass over the shards: the carried state starts over. */
    if (w == 0 && (st = b->reset_state(b->self, err, errlen)) != LAYA_OK) return st;
    train_batch(&r->train, o->B, o->T, w, r->toks);
    if (r->soft_tok) train_teacher_batch(&r->teacher, &r->train, o->B, o->T, w, r->soft_tok, r->soft_w);
    float lr = run_lr(r);
    double loss;
    if ((st = b->step(b->self, r->toks, r->soft_tok, r->soft_w, meta->seed, meta->step, &r->adam, lr, o->clip, &loss,
                      err, errlen)) != LAYA_OK)
        return st;
    if (!isfinite(loss))
        return err_set(err, errlen, LAYA_ERR_INTERNAL,
                       "training loss is %g at step %lld (diverged: lower --lr; last.ckpt is the last good state)",
                       loss, (long long)meta->step);
    meta->step++;
    meta->tokens += (int64_t)o->B * o->T;
    r->loss_acc += loss;
    r->loss_n++;
    double dt = now_s() - t0;
    r->step_s = r->step_s > 0 ? 0.9 * r->step_s + 0.1 * dt : dt;
    double elapsed = run_elapsed(r);
    train_progress *pr = &r->pr;
    pr->step = meta->step;
    pr->tokens = meta->tokens;
    pr->loss = loss;
    pr->lr = lr;
    pr->elapsed_s = elapsed;
    pr->tokens_per_s = (double)o->B * o->T / r->step_s;
    pr->frac = o->steps > 0 ? (double)meta->step / (double)o->steps : elapsed / o->time_budget;
    pr->eta_s = o->steps > 0 ? r->step_s * (double)(o->steps - meta->step) : o->time_budget - elapsed;
    pr->evaluated = pr->best_saved = 0;
    return LAYA_OK;
}

/* Evaluates every valid file and appends a log.csv row: step, tokens, the
 * mean train loss since the last row, each valid loss and bits per byte,
 * the learning rate and the seconds trained. */
static laya_status run_log(run_ctx *r, char *err, size_t errlen) {
    const train_opts *o = r->o;
    train_progress *pr = &r->pr;
    for (int i = 0; i < o->n_valid; i++) {
        laya_status st = evaluate(r, &r->valid[i], &pr->valid_loss[i], &pr->valid_bpb[i], err, errlen);
        if (st != LAYA_OK) return st;
    }
    fprintf(r->log, "%lld,%lld,%.6f", (long long)r->meta.step, (long long)r->meta.tokens,
            r->loss_n ? r->loss_acc / r->loss_n : NAN);
    for (int i = 0; i < o->n_valid; i++) fprintf(r->log, ",%.6f", pr->valid_loss[i]);
    for (int i = 0; i < o->n_valid; i++) fprintf(r->log, ",%.6f", pr->valid_bpb[i]);
    fprintf(r->log, ",%.6g,%.1f\n", pr->lr, run_elapsed(r));
    fflush(r->log);
    r->loss_acc = 0;
    r->loss_n = 0;
    pr->evaluated = 1;
    return LAYA_OK;
}

/* Brings the host copies up to date, saves best.safetensors when the first
 * valid loss improved, and writes last.ckpt. */
static laya_status run_save(run_ctx *r, char *err, size_t errlen) {
    const train_opts *o = r->o;
    train_ckpt_meta *meta = &r->meta;
    laya_status st = r->b->store(r->b->self, r->params, r->m, r->v, r->state, err, errlen);
    if (st != LAYA_OK) return st;
    if (r->pr.valid_loss[0] < meta->best_valid) {
        meta->best_valid = r->pr.valid_loss[0];
        if ((st = save_best(r, meta->step, meta->best_valid, err, errlen)) != LAYA_OK) return st;
        r->pr.best_saved = 1;
    }
    meta->elapsed = run_elapsed(r);
    return train_ckpt_save(out_path(r, "last.ckpt"), &r->cfg, o->B, o->T, o->carry, meta, r->params, r->m, r->v,
                           r->state, err, errlen);
}

laya_status train_run_on(const train_opts *o, const train_backend *b, train_progress_fn fn, void *ctx,
                         volatile int *stop, char *err, size_t errlen) {
    laya_status st = check_opts(o, err, errlen);
    if (st != LAYA_OK) return st;
    run_ctx r = {.o = o, .b = b, .cfg = o->cfg};
    if ((st = run_open_inputs(&r, err, errlen)) != LAYA_OK || (st = run_alloc(&r, err, errlen)) != LAYA_OK ||
        (o->teacher_path && (st = run_teacher(&r, err, errlen)) != LAYA_OK) || (st = run_start(&r, err, errlen)) != LAYA_OK)
        goto out;
    r.adam = (train_adamw){.lr = o->lr, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .wd = o->wd};
    r.t_start = now_s();
    r.elapsed0 = r.meta.elapsed;
    r.pr = (train_progress){.steps = o->steps, .n_valid = o->n_valid};
    /* Every eval_every steps, and once at the end, a log row and a
     * checkpoint; never twice for one step (a resume at a logged step). */
    int64_t logged_step = o->resume ? r.meta.step : -1;
    for (int done = 0; !done;) {
        int report = 0;
        if (!run_stopping(&r, stop)) {
            if ((st = run_step(&r, err, errlen)) != LAYA_OK) goto out;
            report = 1;
        } else {
            done = 1;
        }
        if (r.meta.step != logged_step && (done || r.meta.step % o->eval_every == 0)) {
            logged_step = r.meta.step;
            double te = now_s();
            if ((st = run_log(&r, err, errlen)) != LAYA_OK || (st = run_save(&r, err, errlen)) != LAYA_OK) goto out;
            report = 1;
            r.last_eval_s = now_s() - te;
        }
        if (fn && report) fn(ctx, &r.pr);
    }
out:
    run_free(&r);
    return st;
}

/* ---- the CPU backend: train_model on the host copies in place ---- */

typedef struct {
    const train_opts *o;
    const model_cfg *c;
    train_model tm;
    int tm_ok;
    float *params, *m, *v, *state;   /* the loop's host copies */
    float *grads, *vstate;
    size_t P, S;
} cpu_backend;

static laya_status cpu_init(void *self, const model_cfg *c, const train_opts *o, char *err, size_t errlen) {
    cpu_backend *k = self;
    k->o = o;
    k->c = c;
    k->P = model_n_params(c);
    k->S = (size_t)c->L * o->B * c->H;
    k->grads = calloc(k->P, sizeof(float));
    k->vstate = calloc(k->S, sizeof(float));
    if (!k->grads || !k->vstate)
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate the gradients of %zu parameters", k->P);
    laya_status st = train_model_init(&k->tm, c, o->B, o->T, o->dropout, err, errlen);
    k->tm_ok = st == LAYA_OK;
    return st;
}

static void cpu_free(void *self) {
    cpu_backend *k = self;
    if (k->tm_ok) train_model_free(&k->tm);
    free(k->grads);
    free(k->vstate);
}

static laya_status cpu_load(void *self, float *params, float *m, float *v, float *state, char *err, size_t errlen) {
    cpu_backend *k = self;
    k->params = params, k->m = m, k->v = v, k->state = state;
    return LAYA_OK;
}

static laya_status cpu_reset_state(void *self, char *err, size_t errlen) {
    cpu_backend *k = self;
    memset(k->state, 0, k->S * sizeof(float));
    return LAYA_OK;
}

static laya_status cpu_step(void *self, const int32_t *toks, const int32_t *soft_tok, const float *soft_w,
                            uint64_t seed, int64_t step, const train_adamw *adam, float lr, float clip, double *loss,
                            char *err, size_t errlen) {
    cpu_backend *k = self;
    memset(k->grads, 0, k->P * sizeof(float));
    train_model_soft(&k->tm, soft_tok, soft_w);
    *loss = train_forward(&k->tm, k->params, toks, k->o->B, k->o->carry ? k->state : NULL, 1, seed, (uint64_t)step);
    train_backward(&k->tm, k->params, k->grads);
    train_model_soft(&k->tm, NULL, NULL);
    train_clip_grads(k->grads, k->P, clip);
    train_adamw_step(k->c, adam, lr, step + 1, k->params, k->grads, k->m, k->v);
    return LAYA_OK;
}

static laya_status cpu_eval_begin(void *self, char *err, size_t errlen) {
    cpu_backend *k = self;
    memset(k->vstate, 0, k->S * sizeof(float));
    return LAYA_OK;
}

static laya_status cpu_eval_batch(void *self, const int32_t *toks, int nb, double *loss_sum, int64_t *count,
                                  char *err, size_t errlen) {
    cpu_backend *k = self;
    train_forward(&k->tm, k->params, toks, nb, k->o->carry ? k->vstate : NULL, 0, 0, 0);
    *loss_sum += k->tm.loss_sum;
    *count += k->tm.count;
    return LAYA_OK;
}

static laya_status cpu_store(void *self, float *params, float *m, float *v, float *state, char *err, size_t errlen) {
    return LAYA_OK;   /* it works on the host copies */
}

laya_status train_run(const train_opts *o, train_progress_fn fn, void *ctx, volatile int *stop,
                      char *err, size_t errlen) {
    cpu_backend k = {0};
    train_backend b = {.trainer = "laya cpu reference", .self = &k, .init = cpu_init, .free = cpu_free,
                       .load = cpu_load, .reset_state = cpu_reset_state, .step = cpu_step,
                       .eval_begin = cpu_eval_begin, .eval_batch = cpu_eval_batch, .store = cpu_store};
    return train_run_on(o, &b, fn, ctx, stop, err, errlen);
}
