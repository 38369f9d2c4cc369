/* cmd_intent.c - `laya intent`: train, evaluate and try the intent head (C10).
 *
 *   laya intent train [--model M] [--data TSV] [--out FILE] [--epochs N] [--seed S] [--allow-unsigned]
 *   laya intent eval TSV [--model M] [--head FILE] [--matrix OUT] [--allow-unsigned]
 *   laya intent classify TEXT... [--model M] [--head FILE] [--allow-unsigned]
 *   laya intent bench [--model M] [--head FILE] [--allow-unsigned]
 *
 * A TSV has one example a line: a class name, a TAB, the text (blank lines
 * and lines starting with '#' are skipped). The head reads the model's
 * state after the text's stable tokens, exactly as a session does while
 * the text is typed (laya_session_set_context, then the session's state). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/engine.h"
#include "engine/front.h"
#include "intent/intent.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya intent train [--model M] [--data TSV] [--out FILE] [--epochs N] [--seed S]\n"
            "       laya intent eval TSV [--model M] [--head FILE] [--matrix OUT]\n"
            "       laya intent classify TEXT... [--model M] [--head FILE]\n"
            "       laya intent bench [--model M] [--head FILE]\n"
            "train fits the intent head (two layers, 128 hidden, over the frozen model's state\n"
            "at the end of the text) on TSV (default data/intent/train.tsv, made by\n"
            "scripts/intent/label.py): one 'class<TAB>text' a line. 10%% of it is held out to\n"
            "measure the reporting threshold. Each text is read twice: as it is and with a\n"
            "blank after it (its last word finished). It writes FILE (default the model's path with\n"
            ".safetensors replaced by .intent.safetensors), which sessions and `laya serve`\n"
            "load beside the model. Sign it with `laya sign FILE --key K`, or load it with\n"
            "--allow-unsigned / LAYA_ALLOW_UNSIGNED=1.\n"
            "eval prints per-class precision and recall and the confusion matrix on TSV;\n"
            "--matrix OUT also writes the matrix as numbers (scripts/intent/plot_confusion.sh).\n"
            "classify prints each TEXT's most likely class and its probability; bench times\n"
            "the head's product per keystroke.\n"
            "Classes: schedule_meeting send_email search_web file_operation app_switch\n"
            "system_control text_edit other.\n");
}

typedef struct {
    int *label;
    char **text;
    int n, cap;
} examples;

static void read_tsv(const char *path, examples *ex) {
    FILE *f = fopen(path, "r");
    if (!f) cli_die("intent: cannot read %s (make the training set with scripts/intent/label.py)", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int ln = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        ln++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len || line[0] == '#') continue;
        char *tab = strchr(line, '\t');
        if (!tab) cli_die("intent: %s:%d: expected 'class<TAB>text'", path, ln);
        *tab = 0;
        int c = intent_class(line);
        if (c < 0) cli_die("intent: %s:%d: unknown class '%.40s'", path, ln, line);
        if (!tab[1]) cli_die("intent: %s:%d: empty text", path, ln);
        if (ex->n == ex->cap) {
            ex->cap = ex->cap ? 2 * ex->cap : 1024;
            ex->label = realloc(ex->label, (size_t)ex->cap * sizeof *ex->label);
            ex->text = realloc(ex->text, (size_t)ex->cap * sizeof *ex->text);
            if (!ex->label || !ex->text) cli_die("intent: out of memory");
        }
        ex->label[ex->n] = c;
        if (!(ex->text[ex->n++] = strdup(tab + 1))) cli_die("intent: out of memory");
    }
    free(line);
    fclose(f);
    if (!ex->n) cli_die("intent: %s holds no examples", path);
}

static void free_examples(examples *ex) {
    for (int i = 0; i < ex->n; i++) free(ex->text[i]);
    free(ex->text);
    free(ex->label);
}

/* The session's state y after reading text afresh (with a blank after
 * it when space is set: the word just finished), into y (H). */
static void features(laya_session *s, const char *text, int space, float *y, int H) {
    laya_status st = laya_session_reset(s);
    if (!st) st = laya_session_set_context(s, text, strlen(text));
    if (!st && space) st = laya_session_type(s, " ", 1);
    if (st) cli_die("intent: reading a text failed: %s", laya_status_str(st));
    const float *sy;
    engine_state(s, &sy);
    memcpy(y, sy, (size_t)H * sizeof *y);
}

typedef struct {
    int tty;
    double t0;
} progress;

static void on_epoch(void *ctx, int epoch, double loss, double acc) {
    progress *p = ctx;
    fprintf(stderr, "%sepoch %3d  loss %.4f  train accuracy %.3f  %.1f s%s", p->tty ? "\r" : "", epoch, loss, acc,
            cli_now_s() - p->t0, p->tty ? "" : "\n");
}

/* The smallest threshold (0.30, 0.35, ... 0.95) at which at least
 * INTENT_TARGET_PRECISION of the held-out examples reported (argmax not
 * other, p above it) are right; 0.95 when none. */
#define INTENT_TARGET_PRECISION 0.95
static float pick_threshold(const intent_head *h, const float *X, const int *label, int n, double *prec,
                            int *reported) {
    float hid[INTENT_F], p[INTENT_C];
    float *best_p = malloc((size_t)n * sizeof *best_p);
    int *best_c = malloc((size_t)n * sizeof *best_c);
    if (!best_p || !best_c) cli_die("intent: out of memory");
    for (int i = 0; i < n; i++) {
        intent_forward(h, X + (size_t)i * h->H, hid, p);
        int b = 0;
        for (int c = 1; c < INTENT_C; c++)
            if (p[c] > p[b]) b = c;
        best_c[i] = b;
        best_p[i] = p[b];
    }
    float thr = 0.95f;
    for (int k = 0; k <= 13; k++) {
        float t = 0.30f + 0.05f * (float)k;
        int rep = 0, ok = 0;
        for (int i = 0; i < n; i++)
            if (best_c[i] != INTENT_OTHER && best_p[i] > t) {
                rep++;
                ok += best_c[i] == label[i];
            }
        *prec = rep ? (double)ok / rep : 1;
        *reported = rep;
        if (*prec >= INTENT_TARGET_PRECISION) {
            thr = t;
            break;
        }
    }
    free(best_p);
    free(best_c);
    return thr;
}

static int cmd_intent_train(int argc, char **argv) {
    const char *model_path = NULL, *data = "data/intent/train.tsv", *out = NULL;
    int allow_unsigned = 0;
    intent_train_cfg cfg = intent_train_defaults();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--model") && v) model_path = argv[++i];
        else if (!strcmp(a, "--data") && v) data = argv[++i];
        else if (!strcmp(a, "--out") && v) out = argv[++i];
        else if (!strcmp(a, "--epochs")) cfg.epochs = (int)cli_int(a, argv[++i], 1, 10000);
        else if (!strcmp(a, "--seed")) cfg.seed = (uint64_t)cli_int(a, argv[++i], 0, 1L << 40);
        else if (!strcmp(a, "--allow-unsigned")) allow_unsigned = 1;
        else cli_die("intent train: unknown argument '%s' (laya intent --help)", a);
    }
    const char *mp = cli_model_path(model_path);
    char mpath[4096], opath[4096];
    snprintf(mpath, sizeof mpath, "%s", mp);
    laya_model *m = cli_load_model_opts(mpath, allow_unsigned);
    if (!out) {
        front_intent_path(mpath, opath, sizeof opath);
        out = opath;
    }
    char sum[65];
    if (model_identity(engine_model(m), sum) != LAYA_OK) cli_die("intent train: %s has no data_blake2b", mpath);
    examples ex = {0};
    read_tsv(data, &ex);
    const int H = engine_model(m)->cfg.H;
    /* Each example twice: as typed up to its last character, and with the
     * blank that ends its last word (a session reports at both). */
    float *X = malloc((size_t)2 * ex.n * H * sizeof *X);
    if (!X) cli_die("intent train: out of memory");
    laya_session *s;
    if (laya_session_new(m, &s) != LAYA_OK) cli_die("intent train: cannot open a session");
    int tty = isatty(2);
    double t0 = cli_now_s();
    for (int i = 0; i < ex.n; i++) {
        features(s, ex.text[i], 0, X + (size_t)(2 * i) * H, H);
        features(s, ex.text[i], 1, X + (size_t)(2 * i + 1) * H, H);
        if (tty && (i % 200 == 0 || i == ex.n - 1))
            fprintf(stderr, "\rreading %d/%d examples through the model", i + 1, ex.n);
    }
    fprintf(stderr, "%sread %d examples in %.1f s\n", tty ? "\r" : "", ex.n, cli_now_s() - t0);
    /* Every tenth example (both its rows) is held out (the file is
     * shuffled by label.py). */
    int ntr = 0, nho = 0;
    float *Xt = malloc((size_t)2 * ex.n * H * sizeof *Xt), *Xh = malloc((size_t)2 * ex.n * H * sizeof *Xh);
    int *lt = malloc((size_t)2 * ex.n * sizeof *lt), *lh = malloc((size_t)2 * ex.n * sizeof *lh);
    if (!Xt || !Xh || !lt || !lh) cli_die("intent train: out of memory");
    for (int r = 0; r < 2 * ex.n; r++) {
        int ho = r / 2 % 10 == 9;
        memcpy((ho ? Xh : Xt) + (size_t)(ho ? nho : ntr) * H, X + (size_t)r * H, (size_t)H * sizeof *X);
        if (ho) lh[nho++] = ex.label[r / 2];
        else lt[ntr++] = ex.label[r / 2];
    }
    intent_head *h;
    if (intent_new(H, &h) != LAYA_OK) cli_die("intent train: out of memory");
    progress p = {tty, cli_now_s()};
    double loss;
    char err[512] = "";
    laya_status st = intent_train(h, Xt, lt, ntr, &cfg, on_epoch, &p, &loss, err, sizeof err);
    if (tty) fputc('\n', stderr);
    if (st) cli_die("intent train: %s", err);
    double prec;
    int rep, ev = 0;
    for (int i = 0; i < nho; i++) ev += lh[i] != INTENT_OTHER;
    h->threshold = pick_threshold(h, Xh, lh, nho, &prec, &rep);
    float wc[INTENT_C];
    intent_class_weights(lh, nho, wc);
    double hl = intent_loss(h, Xh, lh, nho, wc, NULL);
    if ((st = intent_save(h, out, sum, err, sizeof err)) != LAYA_OK) cli_die("intent train: %s", err);
    printf("trained on %d rows (%d epochs, final loss %.4f); held out %d: loss %.4f\n", ntr, cfg.epochs, loss,
           nho, hl);
    printf("threshold %.2f: %d of %d held-out intents reported, precision %.3f\n", h->threshold, rep, ev, prec);
    printf("wrote %s (sign it: laya sign %s --key KEY)\n", out, out);
    intent_free(h);
    laya_session_free(s);
    laya_model_free(m);
    free(X);
    free(Xt);
    free(Xh);
    free(lt);
    free(lh);
    free_examples(&ex);
    return 0;
}

laya_intent *cli_load_intent(const laya_model *m, const char *model_path, const char *explicit_path,
                             int allow_unsigned, int required) {
    char path[4096], err[512] = "";
    if (explicit_path) snprintf(path, sizeof path, "%s", explicit_path);
    else front_intent_path(model_path, path, sizeof path);
    if (!explicit_path && !required && access(path, F_OK) != 0) return NULL;
    laya_load_opts o = {.flags = allow_unsigned ? LAYA_LOAD_ALLOW_UNSIGNED : 0};
    laya_intent *h = NULL;
    laya_status st = laya_intent_load(path, m, &o, &h, err, sizeof err);
    if (st != LAYA_OK) {
        if (required || explicit_path) cli_die("intent: %s", *err ? err : laya_status_str(st));
        fprintf(stderr, "laya: intent head left out: %s\n", err);
        return NULL;
    }
    return h;
}

typedef struct {
    const char *model, *head, *matrix;
    int allow_unsigned;
    char **rest;
    int n_rest;
} common_args;

static void parse_common(int argc, char **argv, common_args *a) {
    memset(a, 0, sizeof *a);
    a->rest = calloc((size_t)argc, sizeof *a->rest);
    if (!a->rest) cli_die("intent: out of memory");
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--model") && v) a->model = argv[++i];
        else if (!strcmp(s, "--head") && v) a->head = argv[++i];
        else if (!strcmp(s, "--matrix") && v) a->matrix = argv[++i];
        else if (!strcmp(s, "--allow-unsigned")) a->allow_unsigned = 1;
        else if (s[0] == '-' && s[1] && s[1] != '-') cli_die("intent: unknown option '%s' (laya intent --help)", s);
        else if (!strncmp(s, "--", 2)) cli_die("intent: unknown option '%s' (laya intent --help)", s);
        else a->rest[a->n_rest++] = argv[i];
    }
}

static int cmd_intent_eval(int argc, char **argv) {
    common_args a;
    parse_common(argc, argv, &a);
    if (a.n_rest != 1) cli_die("intent eval: expected one TSV file (laya intent --help)");
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s", cli_model_path(a.model));
    laya_model *m = cli_load_model_opts(mpath, a.allow_unsigned);
    laya_intent *h = cli_load_intent(m, mpath, a.head, a.allow_unsigned, 1);
    examples ex = {0};
    read_tsv(a.rest[0], &ex);
    laya_session *s;
    if (laya_session_new(m, &s) != LAYA_OK || laya_session_set_intent(s, h) != LAYA_OK)
        cli_die("intent eval: cannot open a session");
    long cm[INTENT_C][INTENT_C] = {{0}};
    int rep = 0, rep_ok = 0, events = 0, correct = 0;
    for (int i = 0; i < ex.n; i++) {
        float p[INTENT_C];
        if (laya_session_reset(s) || laya_session_set_context(s, ex.text[i], strlen(ex.text[i])) ||
            laya_session_intent_probs(s, p))
            cli_die("intent eval: reading line %d failed", i + 1);
        int b = 0;
        for (int c = 1; c < INTENT_C; c++)
            if (p[c] > p[b]) b = c;
        cm[ex.label[i]][b]++;
        correct += b == ex.label[i];
        const char *name;
        float q;
        laya_session_intent(s, &name, &q);
        events += ex.label[i] != INTENT_OTHER;
        if (name) {
            rep++;
            rep_ok += intent_class(name) == ex.label[i];
        }
    }
    printf("%s: %d lines, accuracy %.3f (argmax over the 8 classes)\n", a.rest[0], ex.n, (double)correct / ex.n);
    printf("%-17s %9s %7s %7s\n", "class", "precision", "recall", "lines");
    double mp = 0, mr = 0;
    for (int c = 0; c < INTENT_C; c++) {
        long tp = cm[c][c], row = 0, col = 0;
        for (int k = 0; k < INTENT_C; k++) {
            row += cm[c][k];
            col += cm[k][c];
        }
        double pr = col ? (double)tp / col : 0, rc = row ? (double)tp / row : 0;
        mp += pr;
        mr += rc;
        printf("%-17s %9.3f %7.3f %7ld\n", intent_names[c], pr, rc, row);
    }
    printf("%-17s %9.3f %7.3f\n", "macro mean", mp / INTENT_C, mr / INTENT_C);
    printf("reported (p > threshold %.2f, not other): %d events, %.3f of them right; %.3f of the %d intent "
           "lines reported correctly\n",
           laya_intent_threshold(h), rep, rep ? (double)rep_ok / rep : 0, events ? (double)rep_ok / events : 0,
           events);
    printf("confusion matrix (rows: the label, columns: the head's argmax)\n%-17s", "");
    for (int c = 0; c < INTENT_C; c++) printf(" %5.5s", intent_names[c]);
    printf("\n");
    for (int r = 0; r < INTENT_C; r++) {
        printf("%-17s", intent_names[r]);
        for (int c = 0; c < INTENT_C; c++) printf(" %5ld", cm[r][c]);
        printf("\n");
    }
    if (a.matrix) {
        FILE *f = fopen(a.matrix, "w");
        if (!f) cli_die("intent eval: cannot write %s", a.matrix);
        for (int r = 0; r < INTENT_C; r++)
            for (int c = 0; c < INTENT_C; c++) fprintf(f, "%d %d %ld%s", c, r, cm[r][c], c == INTENT_C - 1 ? "\n\n" : "\n");
        fclose(f);
    }
    laya_session_free(s);
    laya_intent_free(h);
    laya_model_free(m);
    free_examples(&ex);
    free(a.rest);
    return 0;
}

static int cmd_intent_classify(int argc, char **argv) {
    common_args a;
    parse_common(argc, argv, &a);
    if (!a.n_rest) cli_die("intent classify: expected TEXT (laya intent --help)");
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s", cli_model_path(a.model));
    laya_model *m = cli_load_model_opts(mpath, a.allow_unsigned);
    laya_intent *h = cli_load_intent(m, mpath, a.head, a.allow_unsigned, 1);
    laya_session *s;
    if (laya_session_new(m, &s) != LAYA_OK || laya_session_set_intent(s, h) != LAYA_OK)
        cli_die("intent classify: cannot open a session");
    for (int i = 0; i < a.n_rest; i++) {
        float p[INTENT_C];
        if (laya_session_reset(s) || laya_session_set_context(s, a.rest[i], strlen(a.rest[i])) ||
            laya_session_intent_probs(s, p))
            cli_die("intent classify: reading the text failed");
        int b = 0;
        for (int c = 1; c < INTENT_C; c++)
            if (p[c] > p[b]) b = c;
        const char *name;
        float q;
        laya_session_intent(s, &name, &q);
        printf("%s\t%.3f\t%s\t%s\n", intent_names[b], p[b], name ? "reported" : "not reported", a.rest[i]);
    }
    laya_session_free(s);
    laya_intent_free(h);
    laya_model_free(m);
    free(a.rest);
    return 0;
}

/* The head's cost per keystroke: one intent_forward (the product a
 * session pays when its stable state changed), timed over many calls on
 * a real state, against one model step for scale. */
static int cmd_intent_bench(int argc, char **argv) {
    common_args a;
    parse_common(argc, argv, &a);
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s", cli_model_path(a.model));
    laya_model *m = cli_load_model_opts(mpath, a.allow_unsigned);
    laya_intent *h = cli_load_intent(m, mpath, a.head, a.allow_unsigned, 1);
    laya_session *s;
    const char *text = "please send an email to Anna about the budget ";
    if (laya_session_new(m, &s) != LAYA_OK || laya_session_set_context(s, text, strlen(text)) != LAYA_OK)
        cli_die("intent bench: cannot open a session");
    const float *y;
    engine_state(s, &y);
    float hid[INTENT_F], p[INTENT_C];
    const int reps = 20000;
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = cli_now_s();
        for (int i = 0; i < reps; i++) intent_forward(h, y, hid, p);
        double us = (cli_now_s() - t0) * 1e6 / reps;
        if (us < best) best = us;
    }
    laya_session_stats st0, st1;
    laya_session_get_stats(s, &st0);
    const char *more = "x";
    double t0 = cli_now_s();
    int steps = 0;
    for (int i = 0; i < 200; i++) {
        laya_session_type(s, more, 1);
        laya_session_type(s, " ", 1);
    }
    laya_session_get_stats(s, &st1);
    steps = (int)(st1.steps - st0.steps);
    double step_us = steps ? (cli_now_s() - t0) * 1e6 / steps : 0;
    printf("intent head: %.2f us per product (best of 5 x %d; %zu parameters, %.0f kFLOP)\n", best, reps,
           intent_n_params(h->H), 2.0 * (double)intent_n_params(h->H) / 1000);
    printf("model step for scale: %.1f us (%d steps reading text)\n", step_us, steps);
    laya_session_free(s);
    laya_intent_free(h);
    laya_model_free(m);
    free(a.rest);
    return 0;
}

int cmd_intent(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2;
    }
    if (!strcmp(argv[1], "train")) return cmd_intent_train(argc, argv);
    if (!strcmp(argv[1], "eval")) return cmd_intent_eval(argc, argv);
    if (!strcmp(argv[1], "classify")) return cmd_intent_classify(argc, argv);
    if (!strcmp(argv[1], "bench")) return cmd_intent_bench(argc, argv);
    cli_die("intent: unknown subcommand '%s' (expected train, eval, classify or bench)", argv[1]);
}
