/* cmd_bench.c - `laya bench [--model PATH] [--kb N] [--memory PATH [--history F]
 * [--feedback]] [TEXT...]`: the end-to-end
 * keystroke benchmark of docs/EVALUATION.md ("Latency and memory"), one thread.
 *
 * For every character of each text: the context is the text up to and
 * including it, with k=3 suggestions asked for: one CONTEXT event of the
 * keystroke pipeline (laya_session_event), what `laya serve` does per
 * request (the privacy gate, word boundaries and all). Reports per keystroke p50/p99/max and mean, the model steps per
 * keystroke (those that read the context plus those of the search), the
 * full logits vectors (V dot products each) the search computed, the
 * share of keystrokes with a suggestion; then cold start (process start to
 * first suggestion: `laya complete` spawned and timed to its exit, best of
 * 5, and in-process from before the model load), peak resident memory
 * (VmHWM of this process and ru_maxrss of the spawned `laya complete`) and
 * the kernel table in use.
 *
 * With --memory, learning is on as in `laya serve` (the store's index and the
 * text typed in the session, queried and mixed in at every keystroke);
 * --history F first commits F to that store line by line (`--memory
 * :memory: --history F`: a throw-away store holding F), untimed. Learning's
 * price per keystroke is then the difference from a run without --memory.
 * --feedback passes over every list shown (a DISMISS event, the protocol's
 * feedback -1, outside the keystroke's time, timed on its own): the feedback table grows
 * by up to 3 rows a keystroke and is consulted at every one, the worst
 * case of a typist who never takes a suggestion. Its price is the
 * difference from the same run without --feedback.
 * --prefetch calls laya_session_prefetch after each keystroke, outside its
 * time (what the IBus engine and the fcitx5 addon do while they wait for the
 * next key), timed on its own, its model steps reported apart: the
 * keystroke columns are then what a typist who pauses between keys waits.
 * --keys FILE writes one tab-separated line per keystroke (text, index, the
 * character typed, ms, model steps, full logits vectors, suggestions shown,
 * prefetch ms), for finding which keys make the tail of the distribution.
 *
 * Texts: the arguments, else the first --kb KB (default 8) of
 * data/corpus/en/valid.txt and data/corpus/zh/valid.txt, else
 * bench/texts/{en,zh}.txt. Benchmarks report; nothing here asserts a time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "util/utf8.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya bench [--model PATH] [--kb N] [--memory PATH [--history F] [--feedback]] [--prefetch]\n"
            "                  [--keys FILE]\n"
            "                  " CLI_SEARCH_USAGE " [TEXT...]\n"
            "Per-keystroke latency (context with one more character in, k=3 suggestions out),\n"
            "model steps and full logits vectors per keystroke, cold start, peak memory; one\n"
            "thread. TEXT defaults to the first N KB (default 8) of data/corpus/{en,zh}/valid.txt,\n"
            "else bench/texts/*.txt. --memory: learning on with that store (:memory: for a\n"
            "throw-away one), --history F: F committed to it line by line first (untimed),\n"
            "--feedback: every list shown is passed over (feedback -1), timed on its own.\n"
            "--prefetch: laya_session_prefetch between keys, as a front end's idle callback\n"
            "does (timed on its own; its model steps are not in the keystroke's).\n"
            "--keys FILE: one tab-separated line per keystroke: text, index, character\n"
            "(escaped), ms, model steps, logits vectors, suggestions shown, prefetch ms.\n");
}

/* The first max_bytes of path (0: all), cut back to whole UTF-8 characters;
 * NULL if unreadable. */
static char *read_text(const char *path, size_t max_bytes, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = max_bytes ? max_bytes : (size_t)1 << 20, n = 0;
    char *b = malloc(cap);
    if (!b) cli_die("out of memory");
    for (;;) {
        if (n == cap) {
            if (max_bytes) break;
            if (cap >= LAYA_MAX_CONTEXT) cli_die("%s: longer than %d bytes", path, LAYA_MAX_CONTEXT);
            cap *= 2;
            b = realloc(b, cap);
            if (!b) cli_die("out of memory");
        }
        size_t r = fread(b + n, 1, cap - n, f);
        if (r == 0) break;
        n += r;
    }
    fclose(f);
    n -= utf8_incomplete_tail((const uint8_t *)b, n);
    if (!utf8_valid((const uint8_t *)b, n)) cli_die("%s: not valid UTF-8", path);
    *len = n;
    return b;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What every text is run with. */
typedef struct {
    const laya_search_opts *cfg;
    laya_memory *mem;  /* learning on, or NULL */
    int feedback, prefetch;
    FILE *keys;  /* --keys: the per-keystroke record, or NULL */
} bench_run;

static void run_text(laya_model *m, const bench_run *r, const char *name, const char *text, size_t len,
                     const char *src) {
    const laya_search_opts *cfg = r->cfg;
    laya_memory *mem = r->mem;
    int feedback = r->feedback, prefetch = r->prefetch;
    laya_session *s = NULL;
    laya_status st = laya_session_new(m, &s);
    if (st == LAYA_OK) st = laya_session_set_search(s, cfg);
    if (st == LAYA_OK && mem) st = laya_session_set_memory(s, mem);
    if (st != LAYA_OK) cli_die("cannot open a session: %s", laya_status_str(st));
    size_t nk = utf8_count((const uint8_t *)text, len);
    double *ms = malloc((nk + 1) * sizeof *ms), *fb_ms = malloc((nk + 1) * sizeof *fb_ms);
    double *pf_ms = malloc((nk + 1) * sizeof *pf_ms);
    if (!ms || !fb_ms || !pf_ms) cli_die("out of memory");
    size_t nf = 0, np = 0;
    laya_session_stats ss;
    laya_session_get_stats(s, &ss);
    uint64_t steps0 = ss.steps + ss.search_steps, worst_steps = 0;
    uint64_t logits0 = ss.search_logits, ahead0 = ss.ahead_steps;
    size_t k = 0, shown = 0;
    for (size_t i = 0; i < len;) {
        size_t at = i;
        i = utf8_next((const uint8_t *)text, len, i);
        laya_suggestion out[3];
        int n = 0;
        laya_session_get_stats(s, &ss);
        uint64_t before = ss.steps + ss.search_steps, logits_before = ss.search_logits;
        laya_input in = {.kind = LAYA_INPUT_CONTEXT, .text = text, .len = i, .field = LAYA_FIELD_CLIENT_JUDGES,
                         .want = LAYA_WANT_SUGGEST, .k = 3, .t_ms = -1};
        laya_view v;
        double t0 = cli_now_s();
        st = laya_session_event(s, &in, &v);
        ms[k++] = 1e3 * (cli_now_s() - t0);
        n = v.n < 3 ? v.n : 3;
        memcpy(out, v.list, (size_t)n * sizeof *out);
        if (st != LAYA_OK) cli_die("%s: keystroke %zu: %s", name, k, laya_status_str(st));
        if (feedback && n > 0) {
            double t1 = cli_now_s();
            laya_input d = {.kind = LAYA_INPUT_DISMISS, .field = LAYA_FIELD_CLIENT_JUDGES, .t_ms = -1};
            laya_view dv;
            st = laya_session_event(s, &d, &dv);
            fb_ms[nf++] = 1e3 * (cli_now_s() - t1);
            if (st != LAYA_OK) cli_die("%s: feedback at keystroke %zu: %s", name, k, laya_status_str(st));
        }
        if (prefetch) {
            double t1 = cli_now_s();
            int more = 1;
            while (st == LAYA_OK && more) st = laya_session_prefetch(s, &more);
            pf_ms[np++] = 1e3 * (cli_now_s() - t1);
            if (st != LAYA_OK) cli_die("%s: prefetch at keystroke %zu: %s", name, k, laya_status_str(st));
        }
        laya_session_get_stats(s, &ss);
        uint64_t used = ss.steps + ss.search_steps - before;
        if (used > worst_steps) worst_steps = used;
        shown += n > 0;
        if (r->keys) {
            /* steps and logits are the keystroke's: the prefetch's are counted apart */
            fprintf(r->keys, "%s\t%zu\t", name, k - 1);
            cli_put_escaped(r->keys, text + at, i - at, 0);
            fprintf(r->keys, "\t%.4f\t%llu\t%llu\t%d\t%.4f\n", ms[k - 1], (unsigned long long)used,
                    (unsigned long long)(ss.search_logits - logits_before), n, prefetch ? pf_ms[np - 1] : 0.0);
        }
    }
    double sum = 0;
    for (size_t i = 0; i < k; i++) sum += ms[i];
    laya_session_get_stats(s, &ss);
    uint64_t steps = ss.steps + ss.search_steps - steps0;
    double logits = (double)(ss.search_logits - logits0) / (double)k;
    qsort(ms, k, sizeof *ms, cmp_double);
    printf("%-10.10s %7zu %8.3f %8.3f %8.3f %8.3f %7.2f %5llu %7.2f %6.0f%%  %s (%zu bytes)\n", name, k,
           ms[k / 2], ms[(size_t)(0.99 * (double)(k - 1))], ms[k - 1], sum / (double)k,
           (double)steps / (double)k, (unsigned long long)worst_steps, logits,
           100.0 * (double)shown / (double)k, src, len);
    if (nf) {
        qsort(fb_ms, nf, sizeof *fb_ms, cmp_double);
        printf("%-10.10s %7zu lists passed over: laya_session_feedback p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
               "  feedback", nf, fb_ms[nf / 2], fb_ms[(size_t)(0.99 * (double)(nf - 1))], fb_ms[nf - 1]);
    }
    if (np) {
        qsort(pf_ms, np, sizeof *pf_ms, cmp_double);
        printf("%-10.10s %7zu laya_session_prefetch between keys: p50 %.3f ms, p99 %.3f ms; %.2f model steps a key ahead\n",
               "  prefetch", np, pf_ms[np / 2], pf_ms[(size_t)(0.99 * (double)(np - 1))],
               (double)(ss.ahead_steps - ahead0) / (double)k);
    }
    free(pf_ms);
    free(fb_ms);
    free(ms);
    laya_session_free(s);
}

static long vm_hwm_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb;
}

/* Spawns `laya complete --model PATH -k 3 TEXT` (this executable) and times
 * it from fork to exit: process start to first suggestion, plus its exit.
 * *rss_kb: its peak resident set. Returns seconds, or -1. */
static double spawn_complete(const char *model_path, long *rss_kb) {
    fflush(stdout);
    double t0 = cli_now_s();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(127);
        execl("/proc/self/exe", "laya", "complete", "--model", model_path, "-k", "3", "Best re",
              (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    *rss_kb = ru.ru_maxrss;
    return cli_now_s() - t0;
}

int cmd_bench(int argc, char **argv) {
    double t_start = cli_now_s();
    const char *model_arg = NULL, *memory_arg = NULL, *history = NULL;
    const char *texts[16];
    const char *keys_path = NULL;
    int nt = 0, kb = 8, feedback = 0, prefetch = 0;
    laya_search_opts cfg = laya_search_defaults();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = cli_search_opt(argc, argv, i, &cfg);
        if (used) {
            i += used - 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model")) {
            if (!v) cli_die("--model expects a path");
            model_arg = v;
            i++;
        } else if (!strcmp(a, "--memory")) {
            if (!v) cli_die("--memory expects a path (:memory: for a throw-away store)");
            memory_arg = v;
            i++;
        } else if (!strcmp(a, "--history")) {
            if (!v) cli_die("--history expects a file");
            history = v;
            i++;
        } else if (!strcmp(a, "--feedback")) {
            feedback = 1;
        } else if (!strcmp(a, "--prefetch")) {
            prefetch = 1;
        } else if (!strcmp(a, "--keys")) {
            if (!v) cli_die("--keys expects a file to write");
            keys_path = v;
            i++;
        } else if (!strcmp(a, "--kb")) {
            kb = (int)cli_int(a, v, 0, 1 << 20);
            i++;
        } else if (a[0] == '-' && a[1]) {
            usage(stderr);
            cli_die("bench: unknown option '%s'", a);
        } else {
            if (nt == 16) cli_die("bench: at most 16 texts");
            texts[nt++] = a;
        }
    }
    const char *model_path = cli_model_path(model_arg);
    if (history && !memory_arg) cli_die("bench: --history needs --memory");
    if (feedback && !memory_arg) cli_die("bench: --feedback needs --memory (feedback is learned into it)");

    /* In-process cold start: model load, session, first suggestion. */
    double t0 = cli_now_s();
    laya_model *m = cli_load_model(model_path);
    laya_session *s = NULL;
    laya_suggestion out[3];
    int n = 0;
    if (laya_session_new(m, &s) != LAYA_OK || laya_session_set_context(s, "Best re", 7) != LAYA_OK ||
        laya_suggest(s, 3, out, &n) != LAYA_OK)
        cli_die("cannot run a first suggestion");
    double t_first = cli_now_s() - t0, t_proc = cli_now_s() - t_start;
    laya_session_free(s);

    FILE *keys = NULL;
    if (keys_path) {
        keys = fopen(keys_path, "w");
        if (!keys) cli_die("bench: cannot write '%s': %s", keys_path, strerror(errno));
        fputs("text\tkey\tchar\tms\tsteps\tlogits\tshown\tprefetch_ms\n", keys);
    }
    laya_memory *mem = memory_arg ? cli_open_memory(memory_arg) : NULL;
    size_t hist_bytes = 0;
    if (history) {
        char *h = read_text(history, 0, &hist_bytes);
        if (!h) cli_die("cannot read '%s': %s", history, strerror(errno));
        char err[512] = "";
        for (size_t a = 0, b; a < hist_bytes; a = b + 1) {
            const char *nl = memchr(h + a, '\n', hist_bytes - a);
            b = nl ? (size_t)(nl - h) : hist_bytes;
            if (b > a && laya_memory_commit(mem, h + a, b - a, NULL, err, sizeof err) != LAYA_OK)
                cli_die("bench: cannot commit the history: %s", err);
        }
        free(h);
    }
    char err[512] = "";
    if (mem && laya_memory_prepare(mem, err, sizeof err) != LAYA_OK) cli_die("bench: cannot read the memory: %s", err);

    laya_model_info c;
    laya_model_describe(m, &c);
    printf("model: %s (V=%d H=%d D=%d L=%d W=%d); kernels: %s; search: beam %d, max %d tokens, %d steps (%d after CJK); k=3, one thread\n",
           model_path, c.vocab, c.hidden, c.embed, c.layers, c.window, c.kernels, cfg.beam, cfg.max_tokens, cfg.max_steps,
           cfg.cjk_steps);
    if (mem)
        printf("learning on: memory %s%s%s (%zu bytes committed first); continuous cache weight %.2f (%.2f after CJK)\n",
               laya_memory_path(mem), history ? ", history " : "", history ? history : "", hist_bytes,
               (double)cfg.cache_weight, (double)cfg.cjk_cache_weight);
    printf("%-10s %7s %8s %8s %8s %8s %7s %5s %7s %7s  %s\n", "text", "keys", "p50 ms", "p99 ms", "max ms",
           "mean ms", "steps", "max", "logits", "shown", "source");
    static const char *const defaults[][2] = {{"data/corpus/en/valid.txt", "bench/texts/en.txt"},
                                              {"data/corpus/zh/valid.txt", "bench/texts/zh.txt"}};
    int ndef = nt ? nt : 2;
    for (int i = 0; i < ndef; i++) {
        const char *path = nt ? texts[i] : defaults[i][0];
        size_t len = 0;
        char *t = read_text(path, nt ? 0 : (size_t)kb * 1024, &len);
        if (!t && !nt) t = read_text(path = defaults[i][1], 0, &len);
        if (!t) cli_die("cannot read '%s': %s", path, strerror(errno));
        const char *slash = strrchr(path, '/');
        char name[64];
        snprintf(name, sizeof name, "%s", nt ? (slash ? slash + 1 : path) : i ? "chinese" : "english");
        bench_run r = {&cfg, mem, feedback, prefetch, keys};
        run_text(m, &r, name, t, len, path);
        free(t);
    }
    laya_memory_free(mem);
    laya_model_free(m);
    if (keys && fclose(keys) != 0) cli_die("bench: cannot write '%s': %s", keys_path, strerror(errno));

    double best = -1;
    long rss = 0;
    for (int r = 0; r < 5; r++) {
        long kb_r = 0;
        double t = spawn_complete(model_path, &kb_r);
        if (t >= 0 && (best < 0 || t < best)) best = t, rss = kb_r;
    }
    if (best >= 0)
        printf("cold start: %.1f ms (laya complete, spawn to exit, best of 5), %.1f ms in-process "
               "(load + first suggestion; %.1f ms since process start)\n",
               1e3 * best, 1e3 * t_first, 1e3 * t_proc);
    else
        printf("cold start: %.1f ms in-process (load + first suggestion); spawning laya complete failed\n",
               1e3 * t_first);
    printf("peak RSS: %.1f MB (this process, VmHWM), %.1f MB (laya complete, ru_maxrss)\n",
           (double)vm_hwm_kb() / 1024.0, (double)rss / 1024.0);
    return 0;
}
