/* eval_run.c - runs of an evaluation and their report (eval.h).
 *
 * A run is one freshly started engine (an empty store: a learning engine
 * never sees a text before the run types it) that types every text
 * `passes` times, each text in its own session, reset after it. The first
 * run also measures bits per byte (the optional score op) before typing
 * each text, and every run measures the cold start: process start to the
 * answer of a first suggest with an empty context. */
#include "eval/eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/err.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static laya_status cold_start(const eval_engine *eng, eval_client *c, int k, eval_report *rep,
                              char *err, size_t errlen) {
    double t0 = now_ms();
    laya_status st = eng->start(eng->ctx, c, err, errlen);
    if (st != LAYA_OK) return st;
    eval_reply r;
    if ((st = c->suggest(c->ctx, "eval-cold", "", 0, k, -1, 0, &r, err, errlen)) != LAYA_OK) return st;
    if (eval_samples_add(&rep->cold_ms, now_ms() - t0))
        return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    return c->reset(c->ctx, "eval-cold", err, errlen);
}

static laya_status score_text(const eval_client *c, const eval_text *t, int ti, eval_caps *caps,
                              eval_report *rep, char *err, size_t errlen) {
    rep->bits[ti] = -1;
    if (caps->no_score || !c->score || !t->len) return LAYA_OK;
    char sid[32];
    snprintf(sid, sizeof sid, "eval-score-%d", ti);
    laya_status st = c->score(c->ctx, sid, t->bytes, t->len, &rep->bits[ti], &rep->bits_bytes[ti], err, errlen);
    if (st == LAYA_ERR_UNSUPPORTED) {
        caps->no_score = 1;
        snprintf(caps->why_score, sizeof caps->why_score, "%s", err ? err : "");
        rep->bits[ti] = -1;
        return LAYA_OK;
    }
    return st != LAYA_OK ? st : c->reset(c->ctx, sid, err, errlen);
}

/* Commits cfg->history line by line (an engine that refuses commits is
 * told nothing: the caller's report says so). */
static laya_status commit_history(const eval_client *c, const eval_cfg *cfg, eval_caps *caps, char *err,
                                  size_t errlen) {
    const eval_text *h = cfg->history;
    if (!h || !c->commit) return LAYA_OK;
    for (size_t a = 0; a < h->len && !caps->no_commit;) {
        const char *nl = memchr(h->bytes + a, '\n', h->len - a);
        size_t b = nl ? (size_t)(nl - h->bytes) + 1 : h->len;
        laya_status st = c->commit(c->ctx, "eval-history", h->bytes + a, b - a, err, errlen);
        if (st == LAYA_ERR_UNSUPPORTED) {
            caps->no_commit = 1;
            snprintf(caps->why_commit, sizeof caps->why_commit, "%s", err);
        } else if (st != LAYA_OK) {
            return st;
        }
        a = b;
    }
    return LAYA_OK;
}

/* One run (see the top of the file) into rep->runs[ri]. */
static laya_status one_run(const eval_engine *eng, const eval_cfg *cfg, const eval_text *texts,
                           int n, eval_report *rep, int ri, int first, eval_progress_fn progress,
                           void *pctx, char *err, size_t errlen) {
    eval_run_result *run = &rep->runs[ri];
    eval_client c;
    eval_caps caps = {.no_score = !cfg->score};
    laya_status st = cold_start(eng, &c, run->k, rep, err, errlen);
    if (st == LAYA_OK) st = commit_history(&c, cfg, &caps, err, errlen);
    for (int p = 0; st == LAYA_OK && p < rep->passes; p++)
        for (int ti = 0; st == LAYA_OK && ti < n; ti++) {
            if (first && p == 0 && (st = score_text(&c, &texts[ti], ti, &caps, rep, err, errlen)) != LAYA_OK)
                break;
            char sid[32];
            snprintf(sid, sizeof sid, "eval-%d", ti);
            eval_type_opts o = {.typist = cfg->typist, .k = run->k, .decide = run->decide,
                                .learn = run->learn, .feedback = cfg->feedback, .seed = cfg->seed, .sid = sid};
            eval_stats *s = &run->pass_text[(size_t)p * (size_t)n + (size_t)ti];
            st = eval_type_text(&c, &texts[ti], &o, &caps, s, &rep->eng_us, &rep->rtt_us, progress,
                                pctx, err, errlen);
            if (st == LAYA_OK) st = c.reset(c.ctx, sid, err, errlen);
            eval_stats_add(&run->pass_total[p], s);
        }
    eng->stop(eng->ctx);
    /* the first refusal of each op, for the report */
    eval_caps *rf = &rep->refused;
    if (caps.no_commit && !rf->no_commit) rf->no_commit = 1, memcpy(rf->why_commit, caps.why_commit, sizeof rf->why_commit);
    if (caps.no_feedback && !rf->no_feedback)
        rf->no_feedback = 1, memcpy(rf->why_feedback, caps.why_feedback, sizeof rf->why_feedback);
    if (caps.no_score && cfg->score && !rf->no_score)
        rf->no_score = 1, memcpy(rf->why_score, caps.why_score, sizeof rf->why_score);
    return st;
}

static laya_status next_words(const eval_engine *eng, const eval_cfg *cfg, const eval_text *texts,
                              int n, eval_report *rep, char *err, size_t errlen) {
    if (!(rep->words = calloc((size_t)n, sizeof *rep->words)))
        return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    eval_client c;
    laya_status st = eng->start(eng->ctx, &c, err, errlen);
    for (int ti = 0; st == LAYA_OK && ti < n; ti++) {
        char sid[32];
        snprintf(sid, sizeof sid, "eval-words-%d", ti);
        st = eval_next_words(&c, &texts[ti], cfg->ks[0], sid, &rep->words[ti], err, errlen);
        rep->words_total.n += rep->words[ti].n;
        rep->words_total.top1 += rep->words[ti].top1;
        rep->words_total.topk += rep->words[ti].topk;
    }
    eng->stop(eng->ctx);
    return st;
}

laya_status eval_run(const eval_engine *eng, const eval_cfg *cfg, const eval_text *texts, int n,
                     eval_report *rep, eval_progress_fn progress, void *pctx, char *err,
                     size_t errlen) {
    memset(rep, 0, sizeof *rep);
    if (n < 1 || cfg->n_ks < 1 || cfg->n_ks > 2 || cfg->passes < 1 || cfg->passes > EVAL_MAX_PASSES)
        return err_set(err, errlen, LAYA_ERR_ARG, "eval: 1 text or more, 1..%d passes", EVAL_MAX_PASSES);
    rep->n_texts = n;
    rep->passes = cfg->passes;
    rep->typist = cfg->typist;
    rep->seed = cfg->seed;
    /* The runs: every k (and decision mode) without learning, then the
     * first k (and first mode) with it. */
    int modes[2], n_modes = 0;
    if (cfg->typist == EVAL_SIM) {
        for (int m = 0; m < 2; m++)
            if (cfg->decide[m]) modes[n_modes++] = m;
    } else {
        modes[n_modes++] = 0;
    }
    if (!n_modes) return err_set(err, errlen, LAYA_ERR_ARG, "eval: no decision mode to run");
    int n_runs = cfg->n_ks * n_modes + (cfg->learn ? 1 : 0);
    rep->runs = calloc((size_t)n_runs, sizeof *rep->runs);
    rep->bits = calloc((size_t)n, sizeof *rep->bits);
    rep->bits_bytes = calloc((size_t)n, sizeof *rep->bits_bytes);
    if (!rep->runs || !rep->bits || !rep->bits_bytes) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    for (int ti = 0; ti < n; ti++) rep->bits[ti] = -1;
    for (int p = 0; p < cfg->n_ks; p++)
        for (int m = 0; m < n_modes; m++)
            rep->runs[rep->n_runs++] = (eval_run_result){.k = cfg->ks[p], .decide = modes[m]};
    if (cfg->learn) rep->runs[rep->n_runs++] = (eval_run_result){.k = cfg->ks[0], .decide = modes[0], .learn = 1};
    for (int r = 0; r < rep->n_runs; r++) {
        rep->runs[r].pass_text = calloc((size_t)cfg->passes * (size_t)n, sizeof(eval_stats));
        rep->runs[r].pass_total = calloc((size_t)cfg->passes, sizeof(eval_stats));
        if (!rep->runs[r].pass_text || !rep->runs[r].pass_total)
            return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    }
    laya_status st = LAYA_OK;
    if (cfg->next_words && (st = next_words(eng, cfg, texts, n, rep, err, errlen)) != LAYA_OK) return st;
    for (int r = 0; r < rep->n_runs; r++)
        if ((st = one_run(eng, cfg, texts, n, rep, r, r == 0 && cfg->typist == EVAL_PERFECT, progress,
                          pctx, err, errlen)) != LAYA_OK)
            return st;
    return LAYA_OK;
}

void eval_report_free(eval_report *rep) {
    for (int r = 0; rep->runs && r < rep->n_runs; r++) {
        free(rep->runs[r].pass_text);
        free(rep->runs[r].pass_total);
    }
    free(rep->runs);
    free(rep->words);
    free(rep->bits);
    free(rep->bits_bytes);
    eval_samples_free(&rep->eng_us);
    eval_samples_free(&rep->rtt_us);
    eval_samples_free(&rep->cold_ms);
    memset(rep, 0, sizeof *rep);
}

/* ---- JSON ---------------------------------------------------------------- */

static double ratio(size_t a, size_t b) { return b ? (double)a / (double)b : NAN; }

static json_t *num(double x) { return isnan(x) ? json_null() : json_real(x); }

static json_t *lat_json(const eval_samples *s0) {
    eval_samples *s = (eval_samples *)s0;   /* sorting in place changes no figure */
    if (!s->n) return json_null();
    /* the percentiles sort the samples: only then is the last the largest
     * (inside one call's arguments the order of evaluation is unspecified) */
    double p50 = eval_samples_pct(s, 0.5), p99 = eval_samples_pct(s, 0.99), max = s->v[s->n - 1];
    return json_pack("{s:I,s:o,s:o,s:o}", "n", (json_int_t)s->n, "p50", json_real(p50), "p99", json_real(p99),
                     "max", json_real(max));
}

/* The figures of one text (or the total) in one run and pass. */
static json_t *stats_json(const eval_run_result *run, int pass, const eval_stats *s, int sim) {
    json_t *j = json_pack("{s:i,s:b,s:i,s:o,s:I,s:I,s:I,s:I,s:o}", "k", run->k, "learn", run->learn,
                          "pass", pass + 1, "ksr", num(eval_ksr(s)), "keystrokes", (json_int_t)s->keys,
                          "shown", (json_int_t)s->shown, "accepted", (json_int_t)s->accepted,
                          "accepted_chars", (json_int_t)s->accepted_chars, "precision",
                          num(ratio(s->accepted, s->shown)));
    if (j && !sim) json_object_set_new(j, "ksr_se", num(eval_ksr_se(s)));
    if (j && sim)
        json_object_update_new(j, json_pack("{s:b,s:I,s:{s:I,s:I,s:I}}", "decide", run->decide,
                                            "base_keystrokes", (json_int_t)s->base, "held", "low",
                                            (json_int_t)s->held_low, "burst", (json_int_t)s->held_burst,
                                            "backspace", (json_int_t)s->held_backspace));
    return j;
}

static json_t *text_json(const eval_report *rep, const char *name, size_t chars, size_t bytes,
                         int ti, const eval_words *w, double bits, double bbytes, int k0) {
    int sim = rep->typist == EVAL_SIM;
    json_t *runs = json_array(), *base = json_array();
    for (int r = 0; r < rep->n_runs; r++)
        for (int p = 0; p < rep->passes; p++) {
            const eval_run_result *run = &rep->runs[r];
            const eval_stats *s = ti < 0 ? &run->pass_total[p] : &run->pass_text[p * rep->n_texts + ti];
            json_array_append_new(runs, stats_json(run, p, s, sim));
            if (!run->learn && p == 0 && !run->decide)
                json_array_append_new(base, stats_json(run, p, s, sim));
        }
    json_t *nw = !w ? json_null()
                    : json_pack("{s:I,s:o,s:o}", "word_starts", (json_int_t)w->n, "top1",
                                num(ratio(w->top1, w->n)), "topk", num(k0 > 1 ? ratio(w->topk, w->n) : NAN));
    return json_pack("{s:s,s:I,s:I,s:o,s:o,s:o,s:o}", "text", name, "chars", (json_int_t)chars, "bytes",
                     (json_int_t)bytes, "passes", base, "runs", runs, "next_word", nw, "bpb",
                     num(bits >= 0 && bbytes > 0 ? bits / bbytes : NAN));
}

json_t *eval_report_json(const eval_report *rep, const eval_cfg *cfg, const eval_text *texts,
                         const char *engine, const char *metric) {
    json_t *rows = json_array();
    size_t chars = 0, bytes = 0;
    double bits = 0, bbytes = 0;
    int have_bits = 1;
    for (int i = 0; i < rep->n_texts; i++) {
        json_array_append_new(rows, text_json(rep, texts[i].name, texts[i].chars, texts[i].len, i,
                                              rep->words ? &rep->words[i] : NULL, rep->bits[i],
                                              rep->bits_bytes[i], cfg->ks[0]));
        chars += texts[i].chars, bytes += texts[i].len;
        if (rep->bits[i] < 0 && texts[i].len) have_bits = 0;
        else bits += rep->bits[i] > 0 ? rep->bits[i] : 0, bbytes += rep->bits_bytes[i];
    }
    if (rep->n_texts > 1)
        json_array_append_new(rows, text_json(rep, "(all)", chars, bytes, -1,
                                              rep->words ? &rep->words_total : NULL,
                                              have_bits ? bits : -1, bbytes, cfg->ks[0]));
    json_t *lat = json_pack("{s:o,s:o,s:o}", "engine_us", lat_json(&rep->eng_us), "rtt_us",
                            lat_json(&rep->rtt_us), "cold_start_ms", lat_json(&rep->cold_ms));
    return json_pack("{s:s,s:s,s:s,s:i,s:i,s:b,s:b,s:I,s:o,s:o}", "engine", engine, "metric", metric,
                     "typist", rep->typist == EVAL_SIM ? "sim" : "perfect", "k", cfg->ks[0],
                     "passes", rep->passes, "learn", cfg->learn, "feedback",
                     cfg->feedback || rep->typist == EVAL_SIM, "seed", (json_int_t)rep->seed, "texts", rows,
                     "latency", lat);
}
