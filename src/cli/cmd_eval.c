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
    size_t n, top1, topk;   /* word starts, first-word hits in top 1 / top k */
} word_stats;

typedef struct {
    double *v;
    size_t n, cap;
} samples;

/* One --sim pass over one text: the simulated typist's keystrokes with and
 * without suggestions, and what the engine showed. */
typedef struct {
    size_t base_keys, keys, shown, accepted, accepted_chars;
    size_t held_low, held_burst, held_backspace;   /* replies with "shown":false */
} sim_stats;

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
    /* --sim: passes [k pass][decide off, on], stats per text */
    int sim, decide[2], feedback_ok;
    uint64_t seed;
    sim_stats (*ss)[2][2];
} eval_run;

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

/* The "suggestions" array of a reply to a suggest request, or die naming
 * the engine and the request (an error reply, or no array). */
static json_t *suggestions_of(const eval_engine *e, json_t *reply) {
    const char *msg = reply_error(reply);
    if (msg) cli_die("engine %s answered an error: \"%s\"; to request: %.160s", e->desc, msg, e->last_sent);
    json_t *sug = json_object_get(reply, "suggestions");
    if (!json_is_array(sug))
        cli_die("engine %s answered without a \"suggestions\" array to request: %.160s", e->desc, e->last_sent);
    return sug;
}

static void progress(eval_run *ev, const text *t, int k, size_t pos_chars, const pass_stats *ps) {
    double now = cli_now_s();
    if (now - ev->last_progress < 3.0) return;
    ev->last_progress = now;
    fprintf(stderr, "laya eval: %s k=%d: %zu/%zu chars, %s so far %.3f\n", t->path, k, pos_chars,
            t->chars, ev->zh ? "CSR" : "KSR",
            pos_chars ? 1.0 - (double)ps->keystrokes / (double)pos_chars : 0.0);
}

static void type_text(eval_run *ev, eval_engine *e, int ti, int k, pass_stats *ps) {
    const text *t = &ev->texts[ti];
    char sid[32];
    snprintf(sid, sizeof sid, "eval-%d", ti);
    size_t pos = 0, pos_chars = 0, committed = 0;
    while (pos < t->len) {
        double rtt;
        json_t *reply = ask(e, json_pack("{s:s,s:s,s:s%,s:i}", "op", "suggest", "session", sid,
                                         "context", t->bytes, pos, "k", k), &rtt);
        json_t *sug = suggestions_of(e, reply), *us = json_object_get(reply, "us");
        samples_add(&ev->rtt_us, rtt);
        if (json_is_number(us)) samples_add(&ev->eng_us, json_number_value(us));

        size_t rest = t->len - pos;
        size_t best = 0, n_nonempty = 0, idx;
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
        }
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

/* Next-word accuracy: at every word start of the text (after white space),
 * in its own session, does the first word of the top (any of the k)
 * suggestion(s) equal the word that follows? Every word start is asked, not
 * only those the typist of type_text reaches: an engine whose phrases
 * complete the next word together with the current one would otherwise be
 * left with the hard word starts only. Not part of the latency figures.
 * Its own engine process (run_next_words): an engine that learns as it goes
 * must not have learned the text in a typing pass first. */
static void next_words(eval_run *ev, eval_engine *e, int ti, int k) {
    const text *t = &ev->texts[ti];
    word_stats *ws = &ev->ws[ti];
    char sid[32];
    snprintf(sid, sizeof sid, "eval-words-%d", ti);
    for (size_t pos = 1; pos < t->len; pos++) {
        if (!is_space(t->bytes[pos - 1]) || is_space(t->bytes[pos])) continue;
        size_t want = first_word(t->bytes + pos, t->len - pos);
        if (!want) continue;
        json_t *reply = ask(e, json_pack("{s:s,s:s,s:s%,s:i}", "op", "suggest", "session", sid,
                                         "context", t->bytes, pos, "k", k), NULL);
        json_t *sug = suggestions_of(e, reply), *s;
        size_t idx;
        int hit = 0;
        json_array_foreach(sug, idx, s) {
            if (idx >= (size_t)k || !json_is_string(s)) break;
            const char *sv = json_string_value(s);
            size_t sl = json_string_length(s);
            if (first_word(sv, sl) == want && !memcmp(sv, t->bytes + pos, want)) {
                if (idx == 0) ws->top1++;
                hit = 1;
            }
        }
        ws->n++;
        ws->topk += hit;
        json_decref(reply);
    }
    json_t *r = ask(e, json_pack("{s:s,s:s}", "op", "reset", "session", sid), NULL);
    json_decref(r);
}

static void run_pass(eval_run *ev, int pass) {
    int k = ev->ks[pass];
    eval_engine e;
    double t0 = cli_now_s();
    engine_start(ev, &e);
    /* Cold start: process start to the first suggestion (empty context). */
    json_t *r0 = ask(&e, json_pack("{s:s,s:s,s:s,s:i}", "op", "suggest", "session", "eval-cold",
                                   "context", "", "k", k), NULL);
    if (reply_error(r0) || !json_is_array(json_object_get(r0, "suggestions")))
        cli_die("engine %s did not answer a first suggest request properly: %s", e.desc,
                reply_error(r0) ? reply_error(r0) : "no \"suggestions\" array");
    samples_add(&ev->cold_ms, (cli_now_s() - t0) * 1e3);
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
        type_text(ev, &e, ti, k, &ev->ps[ti][pass]);
    }
    eval_engine_stop(&e);
}

static void run_next_words(eval_run *ev) {
    if (ev->zh) return;
    eval_engine e;
    engine_start(ev, &e);
    for (int ti = 0; ti < ev->n_texts; ti++) next_words(ev, &e, ti, ev->ks[0]);
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

/* ---- --sim: a typist with timing, typos and corrections ------------------
 *
 * The simulator (src/sim) types the text in windows of SIM_WINDOW characters,
 * every typo corrected, so a window's keystrokes replay to exactly its text.
 * Before each keystroke the typist sends the screen's text with "t_ms" (the
 * time of the keystroke that made it) and "decide"; when the screen is still
 * free of typos and a suggestion is a prefix of the rest of the text it takes
 * the longest one (one keystroke, at the time its next key would have gone
 * down) and says so ({"op":"feedback","accepted":i}); a shown list passed
 * over gets "accepted":-1. After an acceptance the simulator starts a new
 * window at the new position, one mean interval later. Windows are seeded by
 * (seed, position), so the typist without suggestions (the KSR baseline) and
 * every pass type the same stretches the same way. */

enum { SIM_WINDOW = 256 };

typedef struct {
    sim_event *ev;
    size_t n, i;
    double t0;   /* time of the window's first keystroke */
} sim_win;

static void win_load(eval_run *ev, sim_win *w, const text *t, size_t pos, double t0) {
    size_t end = pos;
    for (int c = 0; c < SIM_WINDOW && end < t->len; c++) end += sim_utf8_len(t->bytes + end, t->len - end);
    sim_params sp;
    sim_params_corrected(&sp);
    char err[256];
    free(w->ev);
    w->ev = NULL;
    if (sim_run(&sp, ev->seed ^ ((uint64_t)pos * 0x9e3779b97f4a7c15ull), t->bytes + pos, end - pos,
                &w->ev, &w->n, err, sizeof err) != LAYA_OK)
        cli_die("simulator: %s", err);
    w->i = 0;
    w->t0 = t0;
}

static size_t sim_baseline(eval_run *ev, const text *t) {
    sim_win w = {0};
    size_t keys = 0;
    for (size_t pos = 0; pos < t->len;) {
        win_load(ev, &w, t, pos, 0);
        keys += w.n;
        for (int c = 0; c < SIM_WINDOW && pos < t->len; c++) pos += sim_utf8_len(t->bytes + pos, t->len - pos);
    }
    free(w.ev);
    return keys;
}

static void sim_feedback(eval_run *ev, eval_engine *e, const char *sid, int idx, double t_ms) {
    if (!ev->feedback_ok) return;
    json_decref(ask_optional(e, json_pack("{s:s,s:s,s:i,s:f}", "op", "feedback", "session", sid,
                                          "accepted", idx, "t_ms", t_ms),
                             &ev->feedback_ok, "feedback"));
}

static void sim_text(eval_run *ev, eval_engine *e, int ti, int k, int decide, sim_stats *st) {
    const text *t = &ev->texts[ti];
    char sid[32];
    snprintf(sid, sizeof sid, "eval-%d", ti);
    sim_params sp;
    sim_params_corrected(&sp);
    /* The screen: at most one window's typos beyond the text. */
    char *scr = malloc(t->len + 4 * SIM_WINDOW + 16);
    if (!scr) cli_die("out of memory");
    size_t slen = 0, good = 0;   /* screen length; its prefix that matches the text */
    sim_win w = {0};
    win_load(ev, &w, t, 0, 0);
    double t_last = 0;
    st->base_keys = sim_baseline(ev, t);
    while (!(slen == t->len && good == slen)) {
        if (w.i == w.n) {
            if (good != slen) cli_die("simulator: a window ended with a typo on screen (a bug)");
            win_load(ev, &w, t, slen, t_last + sp.iki_mean_ms);
        }
        double rtt;
        json_t *reply = ask(e, json_pack("{s:s,s:s,s:s%,s:i,s:f,s:b}", "op", "suggest", "session", sid,
                                         "context", scr, slen, "k", k, "t_ms", t_last, "decide", decide),
                            &rtt);
        json_t *sug = suggestions_of(e, reply), *us = json_object_get(reply, "us");
        samples_add(&ev->rtt_us, rtt);
        if (json_is_number(us)) samples_add(&ev->eng_us, json_number_value(us));
        const char *held = json_string_value(json_object_get(reply, "held"));
        if (held && !strcmp(held, "low")) st->held_low++;
        else if (held && !strcmp(held, "burst")) st->held_burst++;
        else if (held && !strcmp(held, "backspace")) st->held_backspace++;
        size_t best = 0, n_nonempty = 0, idx, rest = t->len - slen;
        int best_i = -1;
        json_t *sv;
        json_array_foreach(sug, idx, sv) {
            if (!json_is_string(sv)) cli_die("engine %s answered a non-string suggestion", e->desc);
            if (idx >= (size_t)k) break;
            size_t sl = json_string_length(sv);
            if (!sl) continue;
            n_nonempty++;
            if (good == slen && sl <= rest && sl > best && !memcmp(json_string_value(sv), t->bytes + slen, sl) &&
                (sl == rest || ((unsigned char)t->bytes[slen + sl] & 0xC0) != 0x80))
                best = sl, best_i = (int)idx;
        }
        json_decref(reply);
        st->shown += n_nonempty > 0;
        st->keys++;
        double t_next = w.t0 + w.ev[w.i].time_ms;
        if (best) {
            st->accepted++;
            for (size_t i = 0; i < best; i += sim_utf8_len(t->bytes + slen + i, best - i)) st->accepted_chars++;
            memcpy(scr + slen, t->bytes + slen, best);
            good = slen += best;
            sim_feedback(ev, e, sid, best_i, t_next);
            t_last = t_next;
            win_load(ev, &w, t, slen, t_last + sp.iki_mean_ms);
            continue;
        }
        if (n_nonempty) sim_feedback(ev, e, sid, -1, t_next);
        const sim_event *k_ev = &w.ev[w.i++];
        if (k_ev->kind == SIM_CHAR) {
            if (good == slen && k_ev->len <= rest && !memcmp(t->bytes + slen, k_ev->bytes, k_ev->len))
                good += k_ev->len;
            memcpy(scr + slen, k_ev->bytes, k_ev->len);
            slen += k_ev->len;
        } else {
            size_t j = slen;
            while (j > 0 && ((unsigned char)scr[--j] & 0xC0) == 0x80) {}
            slen = j;
            if (good > slen) good = slen;
        }
        t_last = t_next;
    }
    commit(ev, e, sid, t->bytes, t->len);
    free(w.ev);
    free(scr);
}

static void run_sim_pass(eval_run *ev, int pass, int mode) {
    eval_engine e;
    engine_start(ev, &e);
    ev->commit_ok = ev->feedback_ok = 1;
    for (int ti = 0; ti < ev->n_texts; ti++) {
        if (ti > 0) {
            char sid[32];
            snprintf(sid, sizeof sid, "eval-%d", ti - 1);
            json_decref(ask(&e, json_pack("{s:s,s:s}", "op", "reset", "session", sid), NULL));
        }
        sim_text(ev, &e, ti, ev->ks[pass], mode, &ev->ss[ti][pass][mode]);
        fprintf(stderr, "laya eval: --sim %s k=%d decide %s done\n", ev->texts[ti].path, ev->ks[pass],
                mode ? "on" : "off");
    }
    eval_engine_stop(&e);
}

static json_t *sim_json(eval_run *ev, const char *name, size_t chars, const sim_stats *s, int k, int mode) {
    return json_pack("{s:s,s:I,s:i,s:b,s:I,s:I,s:o,s:I,s:I,s:I,s:o,s:{s:I,s:I,s:I}}", "text", name,
                     "chars", (json_int_t)chars, "k", k, "decide", mode,
                     "base_keystrokes", (json_int_t)s->base_keys, "keystrokes", (json_int_t)s->keys,
                     "ksr", num_or_null(s->base_keys ? 1.0 - ratio(s->keys, s->base_keys) : NAN),
                     "shown", (json_int_t)s->shown, "accepted", (json_int_t)s->accepted,
                     "accepted_chars", (json_int_t)s->accepted_chars,
                     "precision", num_or_null(ratio(s->accepted, s->shown)), "held",
                     "low", (json_int_t)s->held_low, "burst", (json_int_t)s->held_burst,
                     "backspace", (json_int_t)s->held_backspace);
}

/* Runs every (k, decide) pass and prints or dumps the table. */
static void sim_report(eval_run *ev) {
    json_t *runs = json_array();
    for (int p = 0; p < ev->n_ks; p++)
        for (int m = 0; m < 2; m++) {
            if (!ev->decide[m]) continue;
            sim_stats tot = {0};
            size_t chars = 0;
            for (int i = 0; i < ev->n_texts; i++) {
                const sim_stats *s = &ev->ss[i][p][m];
                json_array_append_new(runs, sim_json(ev, ev->texts[i].path, ev->texts[i].chars, s, ev->ks[p], m));
                tot.base_keys += s->base_keys, tot.keys += s->keys, tot.shown += s->shown;
                tot.accepted += s->accepted, tot.accepted_chars += s->accepted_chars;
                tot.held_low += s->held_low, tot.held_burst += s->held_burst;
                tot.held_backspace += s->held_backspace;
                chars += ev->texts[i].chars;
            }
            if (ev->n_texts > 1) json_array_append_new(runs, sim_json(ev, "(all)", chars, &tot, ev->ks[p], m));
        }
    json_t *lat = json_pack("{s:o,s:o}", "engine_us", lat_json(&ev->eng_us), "rtt_us", lat_json(&ev->rtt_us));
    const char *eng = ev->engine_cmd ? ev->engine_cmd : "laya serve --stdio";
    if (ev->json) {
        json_t *all = json_pack("{s:s,s:s,s:I,s:O,s:O}", "engine", eng, "mode", "sim", "seed",
                                (json_int_t)ev->seed, "runs", runs, "latency", lat);
        char *str = json_dumps(all, JSON_COMPACT | JSON_REAL_PRECISION(6));
        if (!str) cli_die("cannot encode the result");
        puts(str);
        free(str);
        json_decref(all);
    } else {
        printf("engine: %s\nsimulated typist (seed %llu): typos, corrections and timing from src/sim;\n"
               "KSR = 1 - keystrokes / the same typist's keystrokes without suggestions\n",
               eng, (unsigned long long)ev->seed);
        printf("%-24s %3s %6s %7s %7s %7s %7s %7s %7s  %s\n", "text", "k", "decide", "base", "keys", "KSR",
               "shown", "accept", "prec", "held low/burst/bksp");
        size_t i;
        json_t *r;
        json_array_foreach(runs, i, r) {
            const char *name = json_string_value(json_object_get(r, "text"));
            size_t nl = strlen(name);
            json_t *h = json_object_get(r, "held");
            char kb[16], pb[16];
            json_t *ksr = json_object_get(r, "ksr"), *pr = json_object_get(r, "precision");
            fmt(kb, sizeof kb, json_is_number(ksr) ? json_number_value(ksr) : NAN, "%.4f");
            fmt(pb, sizeof pb, json_is_number(pr) ? json_number_value(pr) : NAN, "%.4f");
            printf("%-24s %3lld %6s %7lld %7lld %7s %7lld %7lld %7s  %lld/%lld/%lld\n",
                   nl > 24 ? name + nl - 24 : name, (long long)json_integer_value(json_object_get(r, "k")),
                   json_is_true(json_object_get(r, "decide")) ? "on" : "off",
                   (long long)json_integer_value(json_object_get(r, "base_keystrokes")),
                   (long long)json_integer_value(json_object_get(r, "keystrokes")), kb,
                   (long long)json_integer_value(json_object_get(r, "shown")),
                   (long long)json_integer_value(json_object_get(r, "accepted")), pb,
                   (long long)json_integer_value(json_object_get(h, "low")),
                   (long long)json_integer_value(json_object_get(h, "burst")),
                   (long long)json_integer_value(json_object_get(h, "backspace")));
        }
        json_t *s = json_object_get(lat, "engine_us");
        if (json_is_object(s))
            printf("%-32s p50 %10.1f  p99 %10.1f  max %10.1f  (n=%lld)\n", "latency, engine-reported (us)",
                   json_real_value(json_object_get(s, "p50")), json_real_value(json_object_get(s, "p99")),
                   json_real_value(json_object_get(s, "max")), (long long)json_integer_value(json_object_get(s, "n")));
    }
    json_decref(runs);
    json_decref(lat);
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: laya eval TEXT... [--engine \"CMD\"] [--model PATH] [--k 3] [--json]\n"
        "                 [--max-chars N] [--lang en|zh|auto] [--no-commit] [--timeout-ms 30000]\n"
        "                 [--sim [--seed S] [--decide on|off|both]]\n"
        "Simulates a typist over each TEXT (a file, - for stdin) against an engine speaking\n"
        "the JSON-lines protocol of shared/EVAL.md (default: laya serve --stdio) and reports\n"
        "keystroke savings (KSR; CSR for Chinese) at k and at 1, precision, next-word\n"
        "accuracy, bits per byte (if the engine answers \"score\") and latency.\n"
        "--sim: the typist of src/sim instead (timing, typos, backspaces); each request\n"
        "carries \"t_ms\" and \"decide\", acceptances and rejections are sent as\n"
        "{\"op\":\"feedback\"}; reports KSR against the same typist without suggestions,\n"
        "shown, accepted and precision with the decision off and on (--decide both).\n");
}

int cmd_eval(int argc, char **argv) {
    eval_run ev = {.ks = {3, 1}, .commit = 1, .timeout_ms = 30000, .score_ok = 1};
    const char *lang = "auto", *decide_opt = NULL;
    long max_chars = LONG_MAX;
    ev.seed = 1;
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
            ev.ks[0] = (int)cli_int(a, v, 1, 16), i++;
        } else if (!strcmp(a, "--max-chars")) {
            max_chars = cli_int(a, v, 1, LONG_MAX), i++;
        } else if (!strcmp(a, "--timeout-ms")) {
            ev.timeout_ms = (int)cli_int(a, v, 1, 3600000), i++;
        } else if (!strcmp(a, "--lang")) {
            if (!v || (strcmp(v, "en") && strcmp(v, "zh") && strcmp(v, "auto")))
                cli_die("--lang is en, zh or auto (got '%s')", v ? v : "");
            lang = v, i++;
        } else if (!strcmp(a, "--json")) {
            ev.json = 1;
        } else if (!strcmp(a, "--no-commit")) {
            ev.commit = 0;
        } else if (!strcmp(a, "--sim")) {
            ev.sim = 1;
        } else if (!strcmp(a, "--seed")) {
            ev.seed = (uint64_t)cli_int(a, v, 0, LONG_MAX), i++;
        } else if (!strcmp(a, "--decide")) {
            if (!v || (strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "both")))
                cli_die("--decide is on, off or both (got '%s')", v ? v : "");
            decide_opt = v, i++;
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

    ev.last_progress = cli_now_s();
    if (decide_opt && !ev.sim) cli_die("--decide needs --sim (the decision is driven by the typist's timing)");
    if (ev.sim) {
        ev.decide[0] = !decide_opt || strcmp(decide_opt, "on");
        ev.decide[1] = !decide_opt || strcmp(decide_opt, "off");
        ev.ss = calloc((size_t)ev.n_texts, sizeof *ev.ss);
        if (!ev.ss) cli_die("out of memory");
        for (int p = 0; p < ev.n_ks; p++)
            for (int m = 0; m < 2; m++)
                if (ev.decide[m]) run_sim_pass(&ev, p, m);
        sim_report(&ev);
        for (int i = 0; i < ev.n_texts; i++) free(ev.texts[i].bytes);
        free(ev.texts), free(ev.ps), free(ev.ws), free(ev.bits), free(ev.bits_bytes), free(paths), free(ev.ss);
        free(ev.eng_us.v), free(ev.rtt_us.v), free(ev.cold_ms.v);
        return 0;
    }
    run_next_words(&ev);
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
