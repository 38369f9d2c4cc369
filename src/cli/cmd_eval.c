/* cmd_eval.c - `laya eval TEXT...`: shared/EVAL.md's keystroke savings,
 * precision, next-word accuracy, bits per byte and latency, measured through
 * the JSON-lines protocol so that any engine speaking it (Laya's own
 * `laya serve --stdio` by default, a peer's adapter with --engine) is
 * measured by this same code.
 *
 * The typist: before every keystroke it asks for k suggestions with the text
 * so far as context; if some suggestion is a prefix of the rest of the text
 * it accepts the longest one at the cost of one keystroke, else it types one
 * UTF-8 character. Each k is a separate pass over the texts with a freshly
 * started engine, so an engine that learns as it goes never sees a text
 * twice; within a pass each text has its own session and the previous one is
 * reset. Typed lines are committed ({"op":"commit"}) as a front end would.
 *
 * Bits per byte use the optional request {"op":"score","session":S,
 * "text":T} -> {"bits":B,"bytes":N}; an engine answering {"error":...} has
 * no score and gets "n/a". */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "eval.h"
#include "sim/sim.h"

typedef struct {
    const char *path;
    char *bytes;   /* valid UTF-8 (invalid bytes replaced by U+FFFD), NUL-terminated */
    size_t len;    /* bytes */
    size_t chars;
} text;

typedef struct {
    size_t keystrokes, shown, accepted, accepted_chars;
} pass_stats;

typedef struct {
    size_t n, top1, topk;   /* word starts seen, first-word hits in top 1 / top k */
} word_stats;

typedef struct {
    double *v;
    size_t n, cap;
} samples;

typedef struct {
    int ks[2], n_ks;              /* the passes: k = --k first, then 1 */
    int json, commit, zh, timeout_ms;
    const char *engine_cmd, *model;
    text *texts;
    int n_texts;
    pass_stats (*ps)[2];          /* [text][pass] */
    word_stats *ws;               /* [text], from the first pass */
    double *bits, *bits_bytes;    /* [text]; bits < 0: not available */
    samples eng_us, rtt_us, cold_ms;
    int commit_ok, score_ok;
    double last_progress;
} eval_run;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void samples_add(samples *s, double x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) cli_die("out of memory");
    }
    s->v[s->n++] = x;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v: the smallest value with at least q of
 * the samples at or below it. */
static double pct(const samples *s, double q) {
    size_t r = (size_t)ceil(q * (double)s->n);
    return s->v[r ? r - 1 : 0];
}

/* ---- text -------------------------------------------------------------- */

static int is_cjk(uint32_t c) {
    return (c >= 0x3400 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0x20000 && c <= 0x2FFFF) || (c >= 0x3000 && c <= 0x303F) ||
           (c >= 0xFF00 && c <= 0xFFEF);
}

static uint32_t decode(const char *s, size_t l) {
    const unsigned char *u = (const unsigned char *)s;
    if (l == 1) return u[0];
    uint32_t c = u[0] & (0x7F >> l);
    for (size_t i = 1; i < l; i++) c = (c << 6) | (u[i] & 0x3F);
    return c;
}

/* Reads path ("-" is stdin), replaces invalid UTF-8 (which JSON cannot carry)
 * by U+FFFD, keeps at most max_chars characters; counts CJK for --lang auto. */
static void text_load(text *t, const char *path, size_t max_chars, size_t *cjk, size_t *nonspace) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) cli_die("cannot open text '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0, r;
    char *raw = malloc(cap);
    if (!raw) cli_die("out of memory");
    while ((r = fread(raw + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            if (cap > ((size_t)1 << 30)) cli_die("text '%s' is over 1 GiB; use --max-chars", path);
            raw = realloc(raw, cap *= 2);
            if (!raw) cli_die("out of memory");
        }
    }
    if (ferror(f)) cli_die("cannot read text '%s': %s", path, strerror(errno));
    if (f != stdin) fclose(f);
    t->path = path;
    t->bytes = malloc(3 * n + 1);
    if (!t->bytes) cli_die("out of memory");
    size_t out = 0, chars = 0, bad = 0;
    for (size_t i = 0; i < n && chars < max_chars; chars++) {
        size_t l = sim_utf8_len(raw + i, n - i);
        uint32_t c = decode(raw + i, l);
        /* overlong forms, surrogates and code points past U+10FFFF are invalid too */
        int ok = !(l == 1 && (unsigned char)raw[i] >= 0x80) && !(l == 2 && c < 0x80) &&
                 !(l == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) &&
                 !(l == 4 && (c < 0x10000 || c > 0x10FFFF)) && c != 0;
        if (ok) {
            memcpy(t->bytes + out, raw + i, l);
            out += l;
            if (is_cjk(c)) (*cjk)++;
            if (c != ' ' && c != '\n' && c != '\t' && c != '\r') (*nonspace)++;
        } else {
            memcpy(t->bytes + out, "\xEF\xBF\xBD", 3);
            out += 3;
            bad++;
        }
        i += l;
    }
    if (bad)
        fprintf(stderr, "laya eval: %s: %zu invalid UTF-8 byte(s) or NUL replaced by U+FFFD\n",
                path, bad);
    t->bytes[out] = 0;
    t->len = out;
    t->chars = chars;
    free(raw);
}

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* The first word of s[0..n): up to the first white space, trailing ASCII
 * punctuation dropped (so "regards," matches "regards"). */
static size_t first_word(const char *s, size_t n) {
    size_t w = 0;
    while (w < n && !is_space(s[w])) w++;
    while (w > 0 && strchr(".,;:!?\"')]}", s[w - 1])) w--;
    return w;
}

/* ---- the engine ---------------------------------------------------------- */

static void engine_start(eval_run *ev, eval_engine *e) {
    char err[512], exe[PATH_MAX];
    if (ev->engine_cmd) {
        char *argv[] = {"/bin/sh", "-c", (char *)ev->engine_cmd, NULL};
        if (eval_engine_start(e, argv, ev->engine_cmd, ev->timeout_ms, err, sizeof err))
            cli_die("%s", err);
        return;
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) cli_die("cannot find my own executable (/proc/self/exe): %s", strerror(errno));
    exe[n] = 0;
    char *argv[] = {exe, "serve", "--stdio", NULL, NULL, NULL};
    if (ev->model) {
        argv[3] = "--model";
        argv[4] = (char *)ev->model;
    }
    char desc[256];
    snprintf(desc, sizeof desc, "'laya serve --stdio%s%s'", ev->model ? " --model " : "",
             ev->model ? ev->model : "");
    if (eval_engine_start(e, argv, desc, ev->timeout_ms, err, sizeof err)) cli_die("%s", err);
}

/* One request that must succeed; dies with the engine's story otherwise. */
static json_t *ask(eval_engine *e, json_t *req, double *rtt_us) {
    char err[1024];
    json_t *reply;
    double rtt;
    if (!req) cli_die("cannot build a request (out of memory?)");
    if (eval_engine_request(e, req, &reply, &rtt, err, sizeof err)) {
        json_decref(req);
        eval_engine_stop(e);
        cli_die("%s", err);
    }
    json_decref(req);
    if (rtt_us) *rtt_us = rtt;
    return reply;
}

static const char *reply_error(json_t *reply) {
    json_t *e = json_object_get(reply, "error");
    return e ? (json_is_string(e) ? json_string_value(e) : "(non-string error)") : NULL;
}

/* Sends an optional op; returns its reply, or NULL (and clears *ok, noting it
 * once) if the engine answers an error. */
static json_t *ask_optional(eval_engine *e, json_t *req, int *ok, const char *what) {
    json_t *reply = ask(e, req, NULL);
    const char *msg = reply_error(reply);
    if (!msg) return reply;
    if (*ok)
        fprintf(stderr, "laya eval: engine answered an error to %s (\"%s\"); %s\n", what, msg,
                !strcmp(what, "score") ? "bits per byte: n/a" : "not sending it again");
    *ok = 0;
    json_decref(reply);
    return NULL;
}

static void commit(eval_run *ev, eval_engine *e, const char *sid, const char *s, size_t n) {
    if (!ev->commit || !ev->commit_ok || n == 0) return;
    json_t *r = ask_optional(e, json_pack("{s:s,s:s,s:s%}", "op", "commit", "session", sid, "text",
                                          s, n), &ev->commit_ok, "commit");
    json_decref(r);
}

static void score(eval_run *ev, eval_engine *e, int ti) {
    const text *t = &ev->texts[ti];
    ev->bits[ti] = -1;
    if (!ev->score_ok || t->len == 0) return;
    char sid[32];
    snprintf(sid, sizeof sid, "eval-score-%d", ti);
    json_t *r = ask_optional(e, json_pack("{s:s,s:s,s:s%}", "op", "score", "session", sid, "text",
                                          t->bytes, t->len), &ev->score_ok, "score");
    if (!r) return;
    json_t *b = json_object_get(r, "bits"), *n = json_object_get(r, "bytes");
    if (!json_is_number(b) || !json_is_number(n) || json_number_value(n) <= 0 ||
        json_number_value(b) < 0)
        cli_die("engine %s answered \"score\" without numbers \"bits\" >= 0 and \"bytes\" > 0",
                e->desc);
    ev->bits[ti] = json_number_value(b);
    ev->bits_bytes[ti] = json_number_value(n);
    json_decref(r);
    json_decref(ask(e, json_pack("{s:s,s:s}", "op", "reset", "session", sid), NULL));
}

/* ---- one pass of the typist over one text -------------------------------- */

static void progress(eval_run *ev, const text *t, int k, size_t pos_chars, const pass_stats *ps) {
    double now = now_s();
    if (now - ev->last_progress < 3.0) return;
    ev->last_progress = now;
    fprintf(stderr, "laya eval: %s k=%d: %zu/%zu chars, %s so far %.3f\n", t->path, k, pos_chars,
            t->chars, ev->zh ? "CSR" : "KSR",
            pos_chars ? 1.0 - (double)ps->keystrokes / (double)pos_chars : 0.0);
}

static void type_text(eval_run *ev, eval_engine *e, int ti, int k, int first_pass,
                      pass_stats *ps) {
    const text *t = &ev->texts[ti];
    word_stats *ws = &ev->ws[ti];
    char sid[32];
    snprintf(sid, sizeof sid, "eval-%d", ti);
    size_t pos = 0, pos_chars = 0, committed = 0;
    while (pos < t->len) {
        double rtt;
        json_t *reply = ask(e, json_pack("{s:s,s:s,s:s%,s:i}", "op", "suggest", "session", sid,
                                         "context", t->bytes, pos, "k", k), &rtt);
        const char *msg = reply_error(reply);
        if (msg) cli_die("engine %s answered an error: \"%s\"; to request: %.160s", e->desc, msg,
                         e->last_sent);
        json_t *sug = json_object_get(reply, "suggestions"), *us = json_object_get(reply, "us");
        if (!json_is_array(sug))
            cli_die("engine %s answered without a \"suggestions\" array to request: %.160s",
                    e->desc, e->last_sent);
        samples_add(&ev->rtt_us, rtt);
        if (json_is_number(us)) samples_add(&ev->eng_us, json_number_value(us));

        /* Word starts: does the first word of a suggestion equal the next word? */
        size_t rest = t->len - pos;
        int at_word = first_pass && pos > 0 && is_space(t->bytes[pos - 1]) &&
                      !is_space(t->bytes[pos]);
        size_t want = at_word ? first_word(t->bytes + pos, rest) : 0;
        if (want) ws->n++;

        size_t best = 0, n_nonempty = 0, idx;
        int hit = 0;
        json_t *s;
        json_array_foreach(sug, idx, s) {
            if (!json_is_string(s))
                cli_die("engine %s answered a non-string suggestion to request: %.160s", e->desc,
                        e->last_sent);
            if (idx >= (size_t)k) break; /* an engine giving more than k gets no credit for it */
            const char *sv = json_string_value(s);
            size_t sl = json_string_length(s);
            if (sl == 0) continue;
            n_nonempty++;
            /* a byte prefix of the rest that ends on a character boundary */
            if (sl <= rest && sl > best && !memcmp(sv, t->bytes + pos, sl) &&
                (sl == rest || ((unsigned char)t->bytes[pos + sl] & 0xC0) != 0x80))
                best = sl;
            if (want && first_word(sv, sl) == want && !memcmp(sv, t->bytes + pos, want)) {
                if (idx == 0) ws->top1++;
                hit = 1;
            }
        }
        ws->topk += hit;
        json_decref(reply);
        if (n_nonempty) ps->shown++;
        ps->keystrokes++;
        size_t adv = best ? best : sim_utf8_len(t->bytes + pos, rest);
        for (size_t i = 0; i < adv;) {
            i += sim_utf8_len(t->bytes + pos + i, adv - i);
            pos_chars++;
        }
        if (best) {
            ps->accepted++;
            ps->accepted_chars += adv;
        }
        int newline = memchr(t->bytes + pos, '\n', adv) != NULL;
        pos += adv;
        if (newline || pos == t->len) {
            commit(ev, e, sid, t->bytes + committed, pos - committed);
            committed = pos;
        }
        progress(ev, t, k, pos_chars, ps);
    }
}

static void run_pass(eval_run *ev, int pass) {
    int k = ev->ks[pass];
    eval_engine e;
    double t0 = now_s();
    engine_start(ev, &e);
    /* Cold start: process start to the first suggestion (empty context). */
    json_t *r0 = ask(&e, json_pack("{s:s,s:s,s:s,s:i}", "op", "suggest", "session", "eval-cold",
                                   "context", "", "k", k), NULL);
    if (reply_error(r0) || !json_is_array(json_object_get(r0, "suggestions")))
        cli_die("engine %s did not answer a first suggest request properly: %s", e.desc,
                reply_error(r0) ? reply_error(r0) : "no \"suggestions\" array");
    samples_add(&ev->cold_ms, (now_s() - t0) * 1e3);
    json_decref(r0);
    json_decref(ask(&e, json_pack("{s:s,s:s}", "op", "reset", "session", "eval-cold"), NULL));
    ev->commit_ok = 1;
    for (int ti = 0; ti < ev->n_texts; ti++) {
        if (pass == 0) score(ev, &e, ti);
        if (ti > 0) {
            char sid[32];
            snprintf(sid, sizeof sid, "eval-%d", ti - 1);
            json_t *r = ask(&e, json_pack("{s:s,s:s}", "op", "reset", "session", sid), NULL);
            if (reply_error(r))
                fprintf(stderr, "laya eval: engine answered an error to reset: \"%s\"\n",
                        reply_error(r));
            json_decref(r);
        }
        type_text(ev, &e, ti, k, pass == 0, &ev->ps[ti][pass]);
    }
    eval_engine_stop(&e);
}

/* ---- report ------------------------------------------------------------- */

static double ratio(size_t a, size_t b) { return b ? (double)a / (double)b : NAN; }

static json_t *num_or_null(double x) { return isnan(x) ? json_null() : json_real(x); }

static json_t *lat_json(samples *s) {
    if (!s->n) return json_null();
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    return json_pack("{s:I,s:o,s:o,s:o}", "n", (json_int_t)s->n, "p50", json_real(pct(s, 0.5)),
                     "p99", json_real(pct(s, 0.99)), "max", json_real(s->v[s->n - 1]));
}

/* Totals over texts: the sums of counts; bits per byte over all bytes. */
static json_t *row_json(eval_run *ev, const char *name, size_t chars, size_t bytes,
                        const pass_stats ps[2], const word_stats *ws, double bits, double bbytes) {
    json_t *passes = json_array();
    for (int p = 0; p < ev->n_ks; p++)
        json_array_append_new(passes, json_pack(
            "{s:i,s:o,s:I,s:I,s:I,s:o}", "k", ev->ks[p],
            "ksr", num_or_null(chars ? 1.0 - ratio(ps[p].keystrokes, chars) : NAN),
            "keystrokes", (json_int_t)ps[p].keystrokes, "shown", (json_int_t)ps[p].shown,
            "accepted", (json_int_t)ps[p].accepted,
            "precision", num_or_null(ratio(ps[p].accepted, ps[p].shown))));
    json_t *nw = ev->zh ? json_null()
                        : json_pack("{s:I,s:o,s:o}", "word_starts", (json_int_t)ws->n, "top1",
                                    num_or_null(ratio(ws->top1, ws->n)), "topk",
                                    num_or_null(ev->ks[0] > 1 ? ratio(ws->topk, ws->n) : NAN));
    return json_pack("{s:s,s:I,s:I,s:o,s:o,s:o}", "text", name, "chars", (json_int_t)chars,
                     "bytes", (json_int_t)bytes, "passes", passes, "next_word", nw, "bpb",
                     num_or_null(bits >= 0 && bbytes > 0 ? bits / bbytes : NAN));
}

static void fmt(char *out, size_t cap, double x, const char *f) {
    if (isnan(x)) snprintf(out, cap, "n/a");
    else snprintf(out, cap, f, x);
}

static void print_table(eval_run *ev, json_t *rows, json_t *lat) {
    const char *m = ev->zh ? "CSR" : "KSR";
    printf("engine: %s\n", ev->engine_cmd ? ev->engine_cmd : "laya serve --stdio (this binary)");
    printf("%-28s %8s", "text", "chars");
    char h[32];
    for (int p = 0; p < ev->n_ks; p++) {
        snprintf(h, sizeof h, "%s@%d", m, ev->ks[p]);
        printf("  %6s", h);
    }
    snprintf(h, sizeof h, "prec@%d", ev->ks[0]);
    printf("  %6s  next@1", h);
    snprintf(h, sizeof h, "next@%d", ev->ks[0]);
    printf("  %6s    bpb\n", h);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *name = json_string_value(json_object_get(r, "text"));
        size_t nl = strlen(name);
        printf("%-28s %8lld", nl > 28 ? name + nl - 28 : name,
               (long long)json_integer_value(json_object_get(r, "chars")));
        json_t *passes = json_object_get(r, "passes"), *p0 = json_array_get(passes, 0);
        char b[32];
        for (int p = 0; p < ev->n_ks; p++) {
            json_t *v = json_object_get(json_array_get(passes, (size_t)p), "ksr");
            fmt(b, sizeof b, json_is_number(v) ? json_number_value(v) : NAN, "%.4f");
            printf("  %6s", b);
        }
        json_t *pr = json_object_get(p0, "precision"), *nw = json_object_get(r, "next_word");
        fmt(b, sizeof b, json_is_number(pr) ? json_number_value(pr) : NAN, "%.4f");
        printf("  %6s", b);
        json_t *t1 = json_object_get(nw, "top1"), *tk = json_object_get(nw, "topk");
        fmt(b, sizeof b, json_is_number(t1) ? json_number_value(t1) : NAN, "%.4f");
        printf("  %6s", b);
        fmt(b, sizeof b, json_is_number(tk) ? json_number_value(tk) : NAN, "%.4f");
        printf("  %6s", b);
        json_t *bpb = json_object_get(r, "bpb");
        fmt(b, sizeof b, json_is_number(bpb) ? json_number_value(bpb) : NAN, "%.3f");
        printf("  %5s\n", b);
    }
    const char *names[] = {"engine_us", "rtt_us", "cold_start_ms"};
    const char *labels[] = {"latency, engine-reported (us)", "latency, round trip (us)",
                            "cold start to first reply (ms)"};
    for (int l = 0; l < 3; l++) {
        json_t *s = json_object_get(lat, names[l]);
        if (json_is_null(s) || !s) {
            printf("%-32s n/a\n", labels[l]);
            continue;
        }
        printf("%-32s p50 %10.1f  p99 %10.1f  max %10.1f  (n=%lld)\n", labels[l],
               json_real_value(json_object_get(s, "p50")),
               json_real_value(json_object_get(s, "p99")),
               json_real_value(json_object_get(s, "max")),
               (long long)json_integer_value(json_object_get(s, "n")));
    }
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: laya eval TEXT... [--engine \"CMD\"] [--model PATH] [--k 3] [--json]\n"
        "                 [--max-chars N] [--lang en|zh|auto] [--no-commit] [--timeout-ms 30000]\n"
        "Simulates a typist over each TEXT (a file, - for stdin) against an engine speaking\n"
        "the JSON-lines protocol of shared/EVAL.md (default: laya serve --stdio) and reports\n"
        "keystroke savings (KSR; CSR for Chinese) at k and at 1, precision, next-word\n"
        "accuracy, bits per byte (if the engine answers \"score\") and latency.\n");
}

static long parse_num(const char *opt, const char *v, long lo, long hi) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < lo || x > hi)
        cli_die("%s needs a whole number in %ld..%ld (got '%s')", opt, lo, hi, v ? v : "");
    return x;
}

int cmd_eval(int argc, char **argv) {
    eval_run ev = {.ks = {3, 1}, .commit = 1, .timeout_ms = 30000, .score_ok = 1};
    const char *lang = "auto";
    long max_chars = LONG_MAX;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths) cli_die("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--engine")) {
            if (!v || !*v) cli_die("--engine needs a command");
            ev.engine_cmd = v, i++;
        } else if (!strcmp(a, "--model")) {
            if (!v) cli_die("--model needs a path");
            ev.model = v, i++;
        } else if (!strcmp(a, "--k") || !strcmp(a, "-k")) {
            ev.ks[0] = (int)parse_num(a, v, 1, 16), i++;
        } else if (!strcmp(a, "--max-chars")) {
            max_chars = parse_num(a, v, 1, LONG_MAX), i++;
        } else if (!strcmp(a, "--timeout-ms")) {
            ev.timeout_ms = (int)parse_num(a, v, 1, 3600000), i++;
        } else if (!strcmp(a, "--lang")) {
            if (!v || (strcmp(v, "en") && strcmp(v, "zh") && strcmp(v, "auto")))
                cli_die("--lang is en, zh or auto (got '%s')", v ? v : "");
            lang = v, i++;
        } else if (!strcmp(a, "--json")) {
            ev.json = 1;
        } else if (!strcmp(a, "--no-commit")) {
            ev.commit = 0;
        } else if (a[0] == '-' && a[1]) {
            usage(stderr);
            cli_die("eval: unknown option '%s'", a);
        } else {
            paths[ev.n_texts++] = a;
        }
    }
    if (ev.n_texts == 0) {
        usage(stderr);
        cli_die("eval: give at least one TEXT file");
    }
    if (ev.engine_cmd && ev.model)
        fprintf(stderr, "laya eval: --model is ignored with --engine (pass it in the command)\n");
    ev.n_ks = ev.ks[0] == 1 ? 1 : 2;
    ev.texts = calloc((size_t)ev.n_texts, sizeof *ev.texts);
    ev.ps = calloc((size_t)ev.n_texts, sizeof *ev.ps);
    ev.ws = calloc((size_t)ev.n_texts, sizeof *ev.ws);
    ev.bits = calloc((size_t)ev.n_texts, sizeof *ev.bits);
    ev.bits_bytes = calloc((size_t)ev.n_texts, sizeof *ev.bits_bytes);
    if (!ev.texts || !ev.ps || !ev.ws || !ev.bits || !ev.bits_bytes) cli_die("out of memory");
    size_t cjk = 0, nonspace = 0;
    for (int i = 0; i < ev.n_texts; i++)
        text_load(&ev.texts[i], paths[i], (size_t)max_chars, &cjk, &nonspace);
    ev.zh = !strcmp(lang, "zh") || (!strcmp(lang, "auto") && cjk * 10 > nonspace * 3);

    ev.last_progress = now_s();
    for (int p = 0; p < ev.n_ks; p++) run_pass(&ev, p);

    json_t *rows = json_array();
    pass_stats tot[2] = {{0}};
    word_stats wtot = {0};
    size_t chars = 0, bytes = 0;
    double bits = 0, bbytes = 0;
    int have_bits = 1;
    for (int i = 0; i < ev.n_texts; i++) {
        text *t = &ev.texts[i];
        json_array_append_new(rows, row_json(&ev, t->path, t->chars, t->len, ev.ps[i], &ev.ws[i],
                                             ev.bits[i], ev.bits_bytes[i]));
        for (int p = 0; p < ev.n_ks; p++) {
            tot[p].keystrokes += ev.ps[i][p].keystrokes;
            tot[p].shown += ev.ps[i][p].shown;
            tot[p].accepted += ev.ps[i][p].accepted;
        }
        wtot.n += ev.ws[i].n, wtot.top1 += ev.ws[i].top1, wtot.topk += ev.ws[i].topk;
        chars += t->chars, bytes += t->len;
        if (ev.bits[i] < 0 && t->len) have_bits = 0;
        else bits += ev.bits[i] > 0 ? ev.bits[i] : 0, bbytes += ev.bits_bytes[i];
    }
    if (ev.n_texts > 1)
        json_array_append_new(rows, row_json(&ev, "(all)", chars, bytes, tot, &wtot,
                                             have_bits ? bits : -1, bbytes));
    json_t *lat = json_pack("{s:o,s:o,s:o}", "engine_us", lat_json(&ev.eng_us), "rtt_us",
                            lat_json(&ev.rtt_us), "cold_start_ms", lat_json(&ev.cold_ms));
    if (ev.json) {
        json_t *all = json_pack("{s:s,s:s,s:i,s:O,s:O}", "engine",
                                ev.engine_cmd ? ev.engine_cmd : "laya serve --stdio",
                                "metric", ev.zh ? "CSR" : "KSR", "k", ev.ks[0], "texts", rows,
                                "latency", lat);
        char *s = json_dumps(all, JSON_COMPACT | JSON_REAL_PRECISION(6));
        if (!s) cli_die("cannot encode the result");
        puts(s);
        free(s);
        json_decref(all);
    } else {
        print_table(&ev, rows, lat);
    }
    json_decref(rows);
    json_decref(lat);
    for (int i = 0; i < ev.n_texts; i++) free(ev.texts[i].bytes);
    free(ev.texts), free(ev.ps), free(ev.ws), free(ev.bits), free(ev.bits_bytes), free(paths);
    free(ev.eng_us.v), free(ev.rtt_us.v), free(ev.cold_ms.v);
    return 0;
}
