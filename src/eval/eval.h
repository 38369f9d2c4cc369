/* eval.h - the evaluation library (C12): the measurement behind `laya eval`,
 * apart from argument parsing and printing, so the metric itself is tested
 * in-process (tests/test_eval.c).
 *
 * Pieces, each in its own file:
 *  - eval_text.c   texts: loading, UTF-8 repair, characters and script counts
 *  - eval_proc.c   an engine under test: a child process speaking the
 *                  JSON-lines protocol (docs/PROTOCOL.md), behind eval_client
 *  - eval_type.c   the typists (the perfect one of docs/EVALUATION.md and the
 *                  simulated one of src/sim) behind one loop, and the one
 *                  acceptance rule; next-word accuracy
 *  - eval_run.c    runs: passes, learning, cold start, bits per byte, and the
 *                  report (eval_report, its JSON form)
 * Nothing here prints or exits: every failure is a laya_status and a sentence
 * in the caller's error buffer. */
#ifndef LAYA_EVAL_H
#define LAYA_EVAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "laya.h"

enum {
    EVAL_MAX_K = 16,        /* suggestions per request the typist looks at */
    EVAL_MAX_PASSES = 16,   /* --passes: the same texts again in one engine process */
    EVAL_SIM_WINDOW = 256   /* characters the simulator types per window */
};

/* ---- texts (eval_text.c) ------------------------------------------------- */

typedef struct {
    const char *name;  /* as given (borrowed) */
    char *bytes;       /* valid UTF-8, NUL-terminated (owned) */
    size_t len;        /* bytes */
    size_t chars;      /* UTF-8 characters */
    size_t cjk;        /* characters in CJK ranges (utf8 module), for --lang auto */
    size_t nonspace;   /* characters other than blanks */
    size_t replaced;   /* invalid bytes or NULs replaced by U+FFFD */
} eval_text;

/* Reads path ("-" is stdin), replaces invalid UTF-8 (which JSON cannot
 * carry) and NULs by U+FFFD and keeps at most max_chars characters. On
 * failure t is left empty (nothing to free). */
laya_status eval_text_load(const char *path, size_t max_chars, eval_text *t, char *err, size_t errlen);
/* The same from bytes in memory (copied); name is borrowed. */
laya_status eval_text_from(const char *name, const char *bytes, size_t len, size_t max_chars,
                           eval_text *t);
void eval_text_free(eval_text *t);

/* ---- the engine under test (eval_proc.c) --------------------------------- */

typedef enum { EVAL_HELD_NONE = 0, EVAL_HELD_LOW, EVAL_HELD_BURST, EVAL_HELD_BACKSPACE } eval_held;

/* One reply to a suggest request. s[i] stays valid until the next request
 * to the same client. */
typedef struct {
    int n;                       /* suggestions kept (the first EVAL_MAX_K) */
    const char *s[EVAL_MAX_K];
    size_t len[EVAL_MAX_K];
    double us;                   /* engine-reported microseconds; < 0 when absent */
    double rtt_us;               /* wall time of the request */
    eval_held held;              /* why the decision showed nothing */
} eval_reply;

/* What the typists and runs talk to. suggest and reset must work; commit,
 * feedback and score are optional: LAYA_ERR_UNSUPPORTED means the engine
 * answered an error to that op (the caller stops sending it). Any other
 * failure is the engine's fault (it died, timed out, sent garbage) and ends
 * the run. t_ms < 0: no timing (the request carries no "t_ms"). */
typedef struct {
    void *ctx;
    laya_status (*suggest)(void *ctx, const char *sid, const char *context, size_t len, int k,
                           double t_ms, int decide, eval_reply *r, char *err, size_t errlen);
    laya_status (*reset)(void *ctx, const char *sid, char *err, size_t errlen);
    laya_status (*commit)(void *ctx, const char *sid, const char *text, size_t len, char *err,
                          size_t errlen);
    laya_status (*feedback)(void *ctx, const char *sid, int accepted, double t_ms, char *err,
                            size_t errlen);
    laya_status (*score)(void *ctx, const char *sid, const char *text, size_t len, double *bits,
                         double *bytes, char *err, size_t errlen);
} eval_client;

/* An engine as a child process: argv (NULL-terminated, argv[0] looked up in
 * PATH) with pipes on stdin/stdout; its stderr is ours. Its HOME and
 * XDG_DATA_HOME point at a fresh directory under $TMPDIR, removed by
 * eval_proc_stop, so an engine that learns starts from an empty store.
 * Every byte it sends is hostile: lines are bounded, must be JSON objects,
 * and silence is bounded by timeout_ms per reply. */
typedef struct eval_proc eval_proc;
laya_status eval_proc_start(char *const argv[], const char *desc, int timeout_ms, eval_proc **out,
                            char *err, size_t errlen);
/* The client speaking to p (valid while p is). */
eval_client eval_proc_client(eval_proc *p);
/* Closes its stdin, waits briefly, then kills it; removes its directory. */
void eval_proc_stop(eval_proc *p);

/* ---- typists and the acceptance rule (eval_type.c) ----------------------- */

/* The one acceptance rule of docs/EVALUATION.md: among the first k
 * non-empty suggestions of r, the longest that is a byte prefix of
 * rest[0..n) ending on a character boundary. Returns its length (0: none)
 * and its index in *idx (-1: none); *shown counts the non-empty ones. */
size_t eval_accept(const eval_reply *r, int k, const char *rest, size_t n, int *idx, int *shown);

/* Counts of one typist over one text (or a sum of them). */
typedef struct {
    size_t chars;          /* characters of the text */
    size_t base;           /* keystrokes the typist needs without suggestions */
    size_t keys;           /* keystrokes with them (an acceptance is one) */
    size_t shown;          /* requests that showed at least one suggestion */
    size_t accepted, accepted_chars;
    size_t held_low, held_burst, held_backspace;
    /* The perfect typist's text cut into blocks of EVAL_SE_CHARS characters
     * (the last one shorter), for KSR's standard error: how many blocks,
     * and the sums over them of k, c, k^2, c^2 and k c, with k a block's
     * keystrokes (those typed while the text's position was inside it) and
     * c its characters. Zero for the simulated typist. */
    size_t se_blocks;
    double se_k, se_c, se_kk, se_cc, se_kc;
} eval_stats;

enum { EVAL_SE_CHARS = 100 };

void eval_stats_add(eval_stats *sum, const eval_stats *s);
/* 1 - keys / base (NAN when base is 0). */
double eval_ksr(const eval_stats *s);
/* KSR's standard error, its blocks taken as a sample (the ratio
 * estimator's: sqrt(n / (n - 1) * sum (k_b - r c_b)^2) / sum c_b, r =
 * sum k_b / sum c_b); NAN with fewer than 2 blocks. Neighbouring blocks of
 * one text are alike, so it understates the spread a different text of the
 * same kind would show: a floor on the noise, not a confidence interval. */
double eval_ksr_se(const eval_stats *s);

typedef enum { EVAL_PERFECT = 0, EVAL_SIM = 1 } eval_typist_kind;

/* How one text is typed. */
typedef struct {
    eval_typist_kind typist;
    int k;
    int decide;          /* sim only: requests carry "decide":true */
    int learn;           /* commit each finished line (and the rest at the end) */
    int feedback;        /* perfect typist: send feedback too (the sim typist always does) */
    uint64_t seed;       /* sim: windows are seeded by (seed, position) */
    const char *sid;
} eval_type_opts;

/* Latency samples (microseconds). */
typedef struct {
    double *v;
    size_t n, cap;
} eval_samples;

laya_status eval_samples_add(eval_samples *s, double x);
/* Nearest-rank percentile q (0..1] after sorting; NAN when empty. */
double eval_samples_pct(eval_samples *s, double q);
void eval_samples_free(eval_samples *s);

/* Called now and then during a long evaluation (chars of the text done). */
typedef void (*eval_progress_fn)(void *ctx, const eval_text *t, size_t chars_done,
                                 const eval_stats *so_far);

/* Optional ops that answered an error, not to be sent again, and the
 * engine's message for each (for the report). */
typedef struct {
    int no_commit, no_feedback, no_score;
    char why_commit[160], why_feedback[160], why_score[160];
} eval_caps;

/* Types t through c; adds to *st (st->chars and st->base are set) and to
 * the latency samples (either may be NULL). */
laya_status eval_type_text(const eval_client *c, const eval_text *t, const eval_type_opts *o,
                           eval_caps *caps, eval_stats *st, eval_samples *eng_us,
                           eval_samples *rtt_us, eval_progress_fn progress, void *pctx, char *err,
                           size_t errlen);

/* Next-word accuracy: at every word start (after white space), does the
 * first word of the top / any of the k suggestions equal the word that
 * follows (trailing ASCII punctuation dropped)? */
typedef struct {
    size_t n, top1, topk;
} eval_words;

laya_status eval_next_words(const eval_client *c, const eval_text *t, int k, const char *sid,
                            eval_words *w, char *err, size_t errlen);

/* ---- runs and the report (eval_run.c) ------------------------------------ */

/* Starts a fresh engine for each run (an empty store each time). */
typedef struct {
    void *ctx;
    laya_status (*start)(void *ctx, eval_client *c, char *err, size_t errlen);
    void (*stop)(void *ctx);
} eval_engine;

typedef struct {
    int ks[2], n_ks;       /* k first, then 1 (n_ks 1 when k is 1) */
    int passes;            /* the texts typed this many times in one process */
    int learn;             /* also run with a commit after every line */
    int feedback;          /* the perfect typist sends feedback (taken / passed over) */
    eval_typist_kind typist;
    int decide[2];         /* sim: runs with the decision off / on */
    uint64_t seed;
    int next_words;        /* measure next-word accuracy (not for Chinese) */
    int score;             /* ask for bits per byte */
    const eval_text *history;  /* committed line by line to every run's engine
                                  before it types (NULL: none): earlier writing */
} eval_cfg;

/* One run: a fresh engine process, `passes` passes over every text. */
typedef struct {
    int k, learn, decide;
    eval_stats *pass_text;   /* [pass * n_texts + text] */
    eval_stats *pass_total;  /* [pass] */
} eval_run_result;

typedef struct {
    int n_texts, passes;
    eval_typist_kind typist;
    uint64_t seed;
    int n_runs;
    eval_run_result *runs;
    eval_words *words;        /* [text]; NULL when not measured */
    eval_words words_total;
    double *bits, *bits_bytes;/* [text]; bits < 0: not available */
    eval_samples eng_us, rtt_us, cold_ms;
    eval_caps refused;        /* optional ops some run's engine refused */
} eval_report;

/* Runs every configuration of cfg over texts[0..n) and fills *rep (owned by
 * the caller: eval_report_free, also after a failure). Runs, in order: next
 * words (own process), then for each k a run without learning, then (learn)
 * a run at the first k with a commit after every line; with the simulated
 * typist, each k and decision mode. */
laya_status eval_run(const eval_engine *eng, const eval_cfg *cfg, const eval_text *texts, int n,
                     eval_report *rep, eval_progress_fn progress, void *pctx, char *err,
                     size_t errlen);
void eval_report_free(eval_report *rep);

/* The report as JSON (docs/EVALUATION.md gives the fields); NULL when out of
 * memory. metric is "KSR" or "CSR". */
json_t *eval_report_json(const eval_report *rep, const eval_cfg *cfg, const eval_text *texts,
                         const char *engine, const char *metric);

#endif
