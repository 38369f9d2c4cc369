/* cmd_train.c - `laya train`: the CPU reference trainer (src/train) with a
 * progress bar on stderr, SIGINT/SIGTERM as a clean stop (checkpoint, then
 * exit), and the loss curves plotted to OUTDIR/loss.png with gnuplot. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "train/train.h"
#ifdef LAYA_CUDA
#include "cuda/cuda_train.h"
#endif

static const char USAGE[] =
    "usage: laya train --train TRAIN.tokens --valid VALID.tokens[,VALID2.tokens] --tok TOKENIZER.tok\n"
    "                  -o OUTDIR (--steps N | --time-budget SECONDS) [options]\n"
    "  --H 256 --D 64 --L 3 --W 5     model shape (V comes from the tokenizer)\n"
    "  --batch 32 --seq 64            streams per step, tokens per window (truncated BPTT)\n"
    "  --lr 2e-3 --wd 0.1 --dropout 0.1 --clip 1.0 --warmup 200\n"
    "  --eval-every 200 --eval-tokens 1048576   validation cadence and size per file\n"
    "  --resume                       continue OUTDIR/last.ckpt (same shape and options)\n"
    "  --init MODEL                   start from MODEL's weights (same shape; fresh optimizer and\n"
    "                                 schedule): fine-tuning a trained model on new data\n"
    "  --teacher MODEL [--teacher-weight 0.3]   distill toward MODEL's next-word prior: where a\n"
    "                                 word starts, the target mixes in the prior's followers'\n"
    "                                 first tokens at that weight (train_teacher.c); the losses\n"
    "                                 reported stay the plain cross-entropy\n"
    "  --threads N --seed S --f16 --no-carry\n"
    "  --device cpu|cuda --cuda-math bf16|tf32|f32   the GPU trainer (a `make cuda` build); bf16\n"
    "                                 (default) runs the GRU recurrences as persistent kernels\n"
    "                                 when H is 192, 384, 576 or 768 and --batch a multiple of 64\n"
    "  --gpus N                       --device cuda data-parallel on GPUs 0..N-1 of this host: each\n"
    "                                 takes batch/N streams (--batch a multiple of N), gradients summed\n"
    "                                 with NCCL (libnccl.so.2 from $LAYA_NCCL_LIB, the library path or\n"
    "                                 the Python package nvidia-nccl-cu13); same schedule, same files\n"
    "Writes OUTDIR/log.csv, OUTDIR/best.safetensors (best validation loss), OUTDIR/last.ckpt,\n"
    "OUTDIR/loss.png. Ctrl-C stops cleanly after the current step (checkpoint written).\n"
    "The model is unsigned: LAYA_ALLOW_UNSIGNED=1 loads it, or laya sign it with your key.\n";

static volatile int stop_flag;
static void on_signal(int sig) { (void)sig; stop_flag = 1; }

static double parse_num(const char *opt, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) cli_die("%s: '%s' is not a number in %g..%g", opt, s, lo, hi);
    return v;
}

typedef struct {
    double last_draw;
    int tty;
} bar_ctx;

static void fmt_time(double s, char *buf, size_t n) {
    if (!(s >= 0) || s > 1e7) s = 0;
    long t = (long)s;
    snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static void progress(void *vctx, const train_progress *p) {
    bar_ctx *b = vctx;
    char eta[32], el[32];
    fmt_time(p->eta_s, eta, sizeof eta);
    fmt_time(p->elapsed_s, el, sizeof el);
    if (p->evaluated) {
        fprintf(stderr, "%sstep %lld  valid loss %.4f  %.4f bits/byte%s", b->tty ? "\r\033[K" : "",
                (long long)p->step, p->valid_loss[0], p->valid_bpb[0], p->best_saved ? "  (best saved)" : "");
        for (int i = 1; i < p->n_valid; i++) fprintf(stderr, "  [%d] %.4f %.4f bpb", i + 1, p->valid_loss[i], p->valid_bpb[i]);
        fputc('\n', stderr);
    }
    /* The bar is progress: on a terminal only (log.csv has every step). */
    if (!b->tty || (p->elapsed_s - b->last_draw < 0.5 && !p->evaluated)) return;
    b->last_draw = p->elapsed_s;
    int width = 24, fill = (int)(p->frac * width + 0.5);
    if (fill > width) fill = width;
    if (fill < 0) fill = 0;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r\033[K[%s] %3.0f%% step %lld  %.0f tok/s  loss %.4f  lr %.2e  %s  ETA %s", bar,
            100 * p->frac, (long long)p->step, p->tokens_per_s, p->loss, p->lr, el, eta);
    fflush(stderr);
}

/* loss.png from log.csv: train loss and each valid loss against tokens.
 * Returns 1 iff the plot was written. */
static int plot(const char *dir, int n_valid) {
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "laya: gnuplot not found: no loss.png (install gnuplot-nox); log.csv has the numbers\n");
        return 0;
    }
    char script[PATH_MAX], cmd[PATH_MAX + 64];
    snprintf(script, sizeof script, "%s/loss.gp", dir);
    FILE *f = fopen(script, "w");
    if (!f) {
        fprintf(stderr, "laya: cannot write %s: %s\n", script, strerror(errno));
        return 0;
    }
    fprintf(f, "set terminal pngcairo size 900,560\nset output '%s/loss.png'\n", dir);
    fprintf(f, "set datafile separator ','\nset key top right\nset grid\n");
    fprintf(f, "set xlabel 'tokens'\nset ylabel 'loss (nats/token)'\nset title 'laya train'\n");
    fprintf(f, "plot '%s/log.csv' every ::1 using 2:3 with lines lw 2 title 'train'", dir);
    for (int i = 0; i < n_valid; i++)
        fprintf(f, ", '' every ::1 using 2:%d with linespoints title 'valid %d'", 4 + i, i + 1);
    fprintf(f, "\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", script);
    if (system(cmd) != 0) {
        fprintf(stderr, "laya: gnuplot failed: no loss.png\n");
        return 0;
    }
    return 1;
}

int cmd_train(int argc, char **argv) {
    train_opts o;
    train_opts_default(&o);
    int threads = 0, cuda = 0, gpus = 0;
    const char *cuda_math_name = "bf16";
    char *valid_list = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        }
        int flag = !strcmp(a, "--resume") || !strcmp(a, "--f16") || !strcmp(a, "--no-carry");
        if (flag) {
            if (!strcmp(a, "--resume")) o.resume = 1;
            else if (!strcmp(a, "--f16")) o.f16 = 1;
            else o.carry = 0;
            continue;
        }
        if (i + 1 >= argc) {
            fputs(USAGE, stderr);
            cli_die("option '%s' needs a value (or is unknown)", a);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--train")) o.train_path = v;
        else if (!strcmp(a, "--valid")) valid_list = (char *)v;
        else if (!strcmp(a, "--tok")) o.tok_path = v;
        else if (!strcmp(a, "--init")) o.init_path = v;
        else if (!strcmp(a, "--teacher")) o.teacher_path = v;
        else if (!strcmp(a, "--teacher-weight")) o.teacher_weight = (float)parse_num(a, v, 1e-6, 1);
        else if (!strcmp(a, "-o")) o.out_dir = v;
        else if (!strcmp(a, "--H")) o.cfg.H = (int32_t)cli_int(a, v, 8, 4096);
        else if (!strcmp(a, "--D")) o.cfg.D = (int32_t)cli_int(a, v, 1, 4096);
        else if (!strcmp(a, "--L")) o.cfg.L = (int32_t)cli_int(a, v, 1, MODEL_MAX_L);
        else if (!strcmp(a, "--W")) o.cfg.W = (int32_t)cli_int(a, v, 1, MODEL_MAX_W);
        else if (!strcmp(a, "--batch")) o.B = (int)cli_int(a, v, 1, 4096);
        else if (!strcmp(a, "--seq")) o.T = (int)cli_int(a, v, 1, 4096);
        else if (!strcmp(a, "--lr")) o.lr = (float)parse_num(a, v, 1e-9, 1);
        else if (!strcmp(a, "--wd")) o.wd = (float)parse_num(a, v, 0, 10);
        else if (!strcmp(a, "--dropout")) o.dropout = (float)parse_num(a, v, 0, 0.95);
        else if (!strcmp(a, "--clip")) o.clip = (float)parse_num(a, v, 0, 1e9);
        else if (!strcmp(a, "--warmup")) o.warmup = cli_int(a, v, 0, LONG_MAX / 2);
        else if (!strcmp(a, "--steps")) o.steps = cli_int(a, v, 1, LONG_MAX / 2);
        else if (!strcmp(a, "--time-budget")) o.time_budget = parse_num(a, v, 1, 1e8);
        else if (!strcmp(a, "--threads")) threads = (int)cli_int(a, v, 1, 1024);
        else if (!strcmp(a, "--eval-every")) o.eval_every = (int)cli_int(a, v, 1, INT_MAX);
        else if (!strcmp(a, "--eval-tokens")) o.eval_tokens = cli_int(a, v, 0, LONG_MAX / 2);
        else if (!strcmp(a, "--seed")) o.seed = (uint64_t)cli_int(a, v, 0, LONG_MAX);
        else if (!strcmp(a, "--gpus")) gpus = (int)cli_int(a, v, 1, 16);
        else if (!strcmp(a, "--device")) {
            if (strcmp(v, "cpu") && strcmp(v, "cuda")) cli_die("--device: '%s' is not cpu or cuda", v);
            cuda = !strcmp(v, "cuda");
        } else if (!strcmp(a, "--cuda-math")) {
            if (strcmp(v, "tf32") && strcmp(v, "bf16") && strcmp(v, "f32"))
                cli_die("--cuda-math: '%s' is not tf32, bf16 or f32", v);
            cuda_math_name = v;
        }
        else {
            fputs(USAGE, stderr);
            cli_die("unknown option '%s'", a);
        }
    }
    if (!o.train_path || !valid_list || !o.tok_path || !o.out_dir) {
        fputs(USAGE, stderr);
        cli_die("--train, --valid, --tok and -o are required");
    }
    for (char *tokp = strtok(valid_list, ","); tokp; tokp = strtok(NULL, ",")) {
        if (o.n_valid == TRAIN_MAX_VALID) cli_die("--valid: at most %d files", TRAIN_MAX_VALID);
        o.valid_paths[o.n_valid++] = tokp;
    }
    if (o.n_valid == 0) cli_die("--valid: no file given");
    if ((o.steps > 0) == (o.time_budget > 0)) cli_die("give exactly one of --steps N and --time-budget SECONDS");
    if (threads) omp_set_num_threads(threads);
    if (gpus && !cuda) cli_die("--gpus needs --device cuda");
    if (gpus && o.B % gpus)
        cli_die("--batch %d is not a multiple of --gpus %d (each GPU takes batch/gpus streams)", o.B, gpus);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    bar_ctx bc = {.last_draw = -1, .tty = isatty(2)};
    char err[1024] = "";
    laya_status st;
    if (cuda) {
#ifdef LAYA_CUDA
        cuda_math math = !strcmp(cuda_math_name, "f32") ? CUDA_MATH_F32
                         : !strcmp(cuda_math_name, "bf16") ? CUDA_MATH_BF16 : CUDA_MATH_TF32;
        char dev[256];
        cuda_device_name(dev, sizeof dev);
        fprintf(stderr, "laya train: H=%d D=%d L=%d W=%d batch=%d seq=%d, CUDA %s on %s%s%.0d -> %s\n", o.cfg.H,
                o.cfg.D, o.cfg.L, o.cfg.W, o.B, o.T, cuda_math_name, dev, gpus ? " x" : "", gpus, o.out_dir);
        st = cuda_train_run(&o, math, gpus, progress, &bc, &stop_flag, err, sizeof err);
#else
        (void)cuda_math_name;
        (void)gpus;
        cli_die("--device cuda: this laya was built without the CUDA trainer (build it with `make cuda`, "
                "then run build-cuda/laya)");
#endif
    } else {
        fprintf(stderr, "laya train: H=%d D=%d L=%d W=%d batch=%d seq=%d, %d threads -> %s\n", o.cfg.H, o.cfg.D,
                o.cfg.L, o.cfg.W, o.B, o.T, omp_get_max_threads(), o.out_dir);
        st = train_run(&o, progress, &bc, &stop_flag, err, sizeof err);
    }
    if (bc.tty) fputc('\n', stderr);
    if (st != LAYA_OK) cli_die("training failed: %s%s%s", laya_status_str(st), *err ? ": " : "", err);
    int plotted = plot(o.out_dir, o.n_valid);
    fprintf(stderr, "laya train: %s in %s (log.csv, best.safetensors, last.ckpt%s)\n",
            stop_flag ? "stopped; resume with --resume" : "done", o.out_dir, plotted ? ", loss.png" : "");
    fprintf(stderr, "laya train: best.safetensors is unsigned: load it with LAYA_ALLOW_UNSIGNED=1, or sign it "
                    "(laya sign %s/best.safetensors --key KEY.key) and trust your key (LAYA_TRUSTED_KEYS=KEY.pub)\n",
            o.out_dir);
    return 0;
}
