/* cmd_eval.c - `laya eval`: arguments and printing around the evaluation
 * library (src/eval/eval.h), which holds the typists, the metric and the
 * runs.
 *
 *   laya eval TEXT... [--engine "CMD"] [--model PATH] [--k 3] [--json]
 *                     [--max-chars N] [--lang en|zh|auto] [--learn] [--passes N] [--history F]
 *                     [--feedback] [--timeout-ms 30000] [--sim [--seed S] [--decide on|off|both]]
 *
 * The engine is `laya serve --stdio` of this binary unless --engine gives a
 * command (run by /bin/sh) speaking the same protocol. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "eval/eval.h"

typedef struct {
    const char *cmd, *model;
    int timeout_ms;
    eval_proc *p;
    double last_progress;
    int tty;
} engine_ctx;

static laya_status start(void *ctx, eval_client *c, char *err, size_t errlen) {
    engine_ctx *e = ctx;
    char exe[PATH_MAX], desc[PATH_MAX + 64];
    laya_status st;
    if (e->cmd) {
        char *argv[] = {"/bin/sh", "-c", (char *)e->cmd, NULL};
        st = eval_proc_start(argv, e->cmd, e->timeout_ms, &e->p, err, errlen);
    } else {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) cli_die("cannot find my own executable (/proc/self/exe): %s", strerror(errno));
        exe[n] = 0;
        char *argv[] = {exe, "serve", "--stdio", e->model ? "--model" : NULL, (char *)e->model, NULL};
        snprintf(desc, sizeof desc, "'laya serve --stdio%s%s'", e->model ? " --model " : "",
                 e->model ? e->model : "");
        st = eval_proc_start(argv, desc, e->timeout_ms, &e->p, err, errlen);
    }
    if (st == LAYA_OK) *c = eval_proc_client(e->p);
    return st;
}

static void stop(void *ctx) {
    engine_ctx *e = ctx;
    eval_proc_stop(e->p);
    e->p = NULL;
}

/* On a terminal, a line every 3 s saying how far the typist is. */
static void progress(void *ctx, const eval_text *t, size_t done, const eval_stats *s) {
    engine_ctx *e = ctx;
    double now = cli_now_s();
    if (!e->tty || now - e->last_progress < 3.0) return;
    e->last_progress = now;
    fprintf(stderr, "\rlaya eval: %s: %zu/%zu chars, keystrokes saved so far %.3f ", t->name, done,
            t->chars, done ? 1.0 - (double)s->keys / (double)done : 0.0);
}

static void fmt(char *out, size_t cap, double x, const char *f) { snprintf(out, cap, isnan(x) ? "n/a" : f, x); }

static double ratio(size_t a, size_t b) { return b ? (double)a / (double)b : NAN; }

/* The rows: every text, then the total when there are several. */
static void row(const eval_report *rep, int ti, const eval_text *texts, const char **name, size_t *chars) {
    *name = ti < rep->n_texts ? texts[ti].name : "(all)";
    *chars = 0;
    for (int i = 0; i < rep->n_texts; i++)
        if (ti == rep->n_texts || i == ti) *chars += texts[i].chars;
}

static const eval_stats *stats(const eval_report *rep, int r, int p, int ti) {
    const eval_run_result *run = &rep->runs[r];
    return ti < rep->n_texts ? &run->pass_text[p * rep->n_texts + ti] : &run->pass_total[p];
}

static void print_report(const eval_report *rep, const eval_cfg *cfg, const eval_text *texts,
                         const char *engine, const char *m) {
    int rows = rep->n_texts + (rep->n_texts > 1), w = 8;
    for (int i = 0; i < rep->n_texts; i++)
        if ((int)strlen(texts[i].name) > w) w = (int)strlen(texts[i].name);
    char b[32];
    printf("engine: %s\ntypist: %s%s%s\n", engine, rep->typist == EVAL_SIM ? "simulated (src/sim), seed " : "perfect",
           rep->typist == EVAL_SIM ? (snprintf(b, sizeof b, "%llu", (unsigned long long)rep->seed), b) : "",
           rep->typist == EVAL_PERFECT && cfg->feedback ? ", sends feedback" : "");
    printf("%-*s %8s %3s %5s %4s %6s %7s %7s %7s %7s %7s %7s\n", w, "text", "chars", "k", "learn", "pass",
           rep->typist == EVAL_SIM ? "decide" : "", m, "+-se", "shown", "accept", "prec", "held");
    for (int ti = 0; ti < rows; ti++) {
        const char *name;
        size_t chars;
        row(rep, ti, texts, &name, &chars);
        for (int r = 0; r < rep->n_runs; r++)
            for (int p = 0; p < rep->passes; p++) {
                const eval_stats *s = stats(rep, r, p, ti);
                char k[16], se[16], pr[16], held[48] = "";
                fmt(k, sizeof k, eval_ksr(s), "%.4f");
                fmt(se, sizeof se, eval_ksr_se(s), "%.4f");
                fmt(pr, sizeof pr, ratio(s->accepted, s->shown), "%.4f");
                if (rep->typist == EVAL_SIM)
                    snprintf(held, sizeof held, "%zu/%zu/%zu", s->held_low, s->held_burst, s->held_backspace);
                printf("%-*s %8zu %3d %5s %4d %6s %7s %7s %7zu %7zu %7s %7s\n", w, name, chars, rep->runs[r].k,
                       rep->runs[r].learn ? "on" : "off", p + 1,
                       rep->typist == EVAL_SIM ? (rep->runs[r].decide ? "on" : "off") : "", k, se, s->shown,
                       s->accepted, pr, held);
            }
    }
    if (rep->words || rep->typist == EVAL_PERFECT) {
        printf("\n%-*s %8s %8s %8s\n", w, "text", "next@1", "next@k", "bpb");
        for (int ti = 0; ti < rows; ti++) {
            const char *name;
            size_t chars;
            row(rep, ti, texts, &name, &chars);
            const eval_words *wd = !rep->words ? NULL : ti < rep->n_texts ? &rep->words[ti] : &rep->words_total;
            double bits = 0, bytes = 0;
            for (int i = 0; i < rep->n_texts; i++)
                if (ti == rep->n_texts || i == ti) {
                    if (rep->bits[i] < 0) bits = NAN;
                    bits += rep->bits[i], bytes += rep->bits_bytes[i];
                }
            char t1[16], tk[16], bp[16];
            fmt(t1, sizeof t1, wd ? ratio(wd->top1, wd->n) : NAN, "%.4f");
            fmt(tk, sizeof tk, wd && cfg->ks[0] > 1 ? ratio(wd->topk, wd->n) : NAN, "%.4f");
            fmt(bp, sizeof bp, bytes > 0 ? bits / bytes : NAN, "%.3f");
            printf("%-*s %8s %8s %8s\n", w, name, t1, tk, bp);
        }
    }
    const char *labels[] = {"latency, engine-reported (us)", "latency, round trip (us)",
                            "cold start to first reply (ms)"};
    eval_samples *lat[] = {(eval_samples *)&rep->eng_us, (eval_samples *)&rep->rtt_us,
                           (eval_samples *)&rep->cold_ms};
    printf("\n");
    for (int l = 0; l < 3; l++) {
        if (!lat[l]->n) {
            printf("%-32s n/a\n", labels[l]);
            continue;
        }
        double p50 = eval_samples_pct(lat[l], 0.5), p99 = eval_samples_pct(lat[l], 0.99);
        printf("%-32s p50 %10.1f  p99 %10.1f  max %10.1f  (n=%zu)\n", labels[l], p50, p99,
               lat[l]->v[lat[l]->n - 1], lat[l]->n);
    }
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: laya eval TEXT... [--engine \"CMD\"] [--model PATH] [--k 3] [--json]\n"
        "                 [--max-chars N] [--lang en|zh|auto] [--learn] [--passes N] [--history F]\n"
        "                 [--feedback] [--timeout-ms 30000] [--sim [--seed S] [--decide on|off|both]]\n"
        "Simulates a typist over each TEXT (a file, - for stdin) against an engine speaking\n"
        "the JSON-lines protocol of docs/PROTOCOL.md (default: laya serve --stdio), as\n"
        "docs/EVALUATION.md says, and reports keystroke savings (KSR; CSR for Chinese) at\n"
        "k and at 1 (+-se: its standard error over blocks of 100 characters, perfect typist),\n"
        "precision, next-word accuracy, bits per byte (if the engine answers\n"
        "\"score\") and latency. Every run starts a fresh engine with an empty store.\n"
        "--learn     also run with a commit after every line (learning on)\n"
        "--passes N  type the texts N times in the same engine process (default 1)\n"
        "--history F commit F line by line to each engine before it types (earlier writing)\n"
        "--feedback  the perfect typist also sends feedback: the index taken, or -1 for a\n"
        "            list it passed over (the engine may learn the typist's preferences)\n"
        "--sim       the typist of src/sim instead (timing, typos, backspaces); requests\n"
        "            carry \"t_ms\" and \"decide\", acceptances and rejections are sent as\n"
        "            feedback; KSR is against the same typist without suggestions\n");
}

int cmd_eval(int argc, char **argv) {
    eval_cfg cfg = {.ks = {3, 1}, .passes = 1, .typist = EVAL_PERFECT, .seed = 1, .score = 1};
    engine_ctx ec = {.timeout_ms = 30000, .tty = isatty(2)};
    const char *lang = "auto", *decide = NULL, *history = NULL;
    long max_chars = LONG_MAX;
    int json = 0, n = 0;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths) cli_die("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return free(paths), usage(stdout), 0;
        else if (!strcmp(a, "--engine") && v && *v) ec.cmd = v, i++;
        else if (!strcmp(a, "--model") && v) ec.model = v, i++;
        else if (!strcmp(a, "--k") || !strcmp(a, "-k")) cfg.ks[0] = (int)cli_int(a, v, 1, EVAL_MAX_K), i++;
        else if (!strcmp(a, "--max-chars")) max_chars = cli_int(a, v, 1, LONG_MAX), i++;
        else if (!strcmp(a, "--timeout-ms")) ec.timeout_ms = (int)cli_int(a, v, 1, 3600000), i++;
        else if (!strcmp(a, "--passes")) cfg.passes = (int)cli_int(a, v, 1, EVAL_MAX_PASSES), i++;
        else if (!strcmp(a, "--seed")) cfg.seed = (uint64_t)cli_int(a, v, 0, LONG_MAX), i++;
        else if (!strcmp(a, "--lang") && v && (!strcmp(v, "en") || !strcmp(v, "zh") || !strcmp(v, "auto"))) lang = v, i++;
        else if (!strcmp(a, "--decide") && v && (!strcmp(v, "on") || !strcmp(v, "off") || !strcmp(v, "both"))) decide = v, i++;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--learn")) cfg.learn = 1;
        else if (!strcmp(a, "--feedback")) cfg.feedback = 1;
        else if (!strcmp(a, "--history") && v) history = v, i++;
        else if (!strcmp(a, "--no-commit")) cfg.learn = 0;   /* the default now; kept for old scripts */
        else if (!strcmp(a, "--sim")) cfg.typist = EVAL_SIM;
        else if (!strcmp(a, "--engine") || !strcmp(a, "--model") || !strcmp(a, "--lang") || !strcmp(a, "--decide") ||
                 !strcmp(a, "--history"))
            cli_die("eval: %s needs %s", a, !strcmp(a, "--engine") ? "a command" : !strcmp(a, "--model") || !strcmp(a, "--history") ? "a path"
                    : !strcmp(a, "--lang") ? "en, zh or auto" : "on, off or both");
        else if (a[0] == '-' && a[1]) return usage(stderr), cli_die("eval: unknown option '%s'", a), 2;
        else paths[n++] = a;
    }
    if (!n) return usage(stderr), cli_die("eval: give at least one TEXT file"), 2;
    if (decide && cfg.typist != EVAL_SIM) cli_die("--decide needs --sim (the decision is driven by the typist's timing)");
    if (ec.cmd && ec.model) fprintf(stderr, "laya eval: --model is ignored with --engine (pass it in the command)\n");
    cfg.n_ks = cfg.ks[0] == 1 ? 1 : 2;
    cfg.decide[0] = !decide || strcmp(decide, "on");
    cfg.decide[1] = cfg.typist == EVAL_SIM && (!decide || strcmp(decide, "off"));
    eval_text *texts = calloc((size_t)n, sizeof *texts);
    if (!texts) cli_die("out of memory");
    size_t cjk = 0, nonspace = 0;
    char err[1024];
    for (int i = 0; i < n; i++) {
        if (eval_text_load(paths[i], (size_t)max_chars, &texts[i], err, sizeof err) != LAYA_OK) cli_die("%s", err);
        if (texts[i].replaced)
            fprintf(stderr, "laya eval: %s: %zu invalid UTF-8 byte(s) or NUL replaced by U+FFFD\n",
                    paths[i], texts[i].replaced);
        cjk += texts[i].cjk, nonspace += texts[i].nonspace;
    }
    eval_text hist = {0};
    if (history && eval_text_load(history, (size_t)-1, &hist, err, sizeof err) != LAYA_OK) cli_die("--history: %s", err);
    cfg.history = history ? &hist : NULL;
    int zh = !strcmp(lang, "zh") || (!strcmp(lang, "auto") && cjk * 10 > nonspace * 3);
    cfg.next_words = !zh && cfg.typist == EVAL_PERFECT;
    cfg.score = cfg.typist == EVAL_PERFECT;
    eval_engine eng = {.ctx = &ec, .start = start, .stop = stop};
    eval_report rep;
    ec.last_progress = cli_now_s();
    laya_status st = eval_run(&eng, &cfg, texts, n, &rep, progress, &ec, err, sizeof err);
    if (ec.tty) fprintf(stderr, "\r\033[K");
    if (st != LAYA_OK) cli_die("%s", err);
    const eval_caps *rf = &rep.refused;
    if (rf->no_score) fprintf(stderr, "laya eval: engine answered an error to score (\"%s\"); bits per byte: n/a\n", rf->why_score);
    if (rf->no_commit) fprintf(stderr, "laya eval: engine answered an error to commit (\"%s\"); not sending it again\n", rf->why_commit);
    if (rf->no_feedback)
        fprintf(stderr, "laya eval: engine answered an error to feedback (\"%s\"); not sending it again\n", rf->why_feedback);
    const char *engine = ec.cmd ? ec.cmd : "laya serve --stdio", *metric = zh ? "CSR" : "KSR";
    if (json) {
        json_t *j = eval_report_json(&rep, &cfg, texts, engine, metric);
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
        if (!s) cli_die("cannot encode the result: out of memory");
        puts(s);
        free(s);
        json_decref(j);
    } else {
        print_report(&rep, &cfg, texts, engine, metric);
    }
    eval_report_free(&rep);
    for (int i = 0; i < n; i++) eval_text_free(&texts[i]);
    eval_text_free(&hist);
    free(texts);
    free(paths);
    return 0;
}
