/* cmd_complete.c - `laya complete [options] TEXT`: prints the k suggestions
 * for TEXT (the text before the cursor), best first, one per line with its
 * probability; --json prints one JSON object instead. TEXT "-" reads the
 * text from stdin, less one trailing newline (echo's, or a here-string's:
 * with it, the suggestions were those for the start of a new line).
 *
 * What is shown is what every front end shows for that text: one CONTEXT
 * event of the library's pipeline (laya_session_event), with the user's
 * memory when it exists (read, never written: complete learns nothing),
 * as `laya serve` and the input methods use it; --no-learn: the model
 * alone. After a password prompt it prints nothing (the privacy gate). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "cli.h"
#include "engine/front.h"
#include "util/utf8.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya complete [--model PATH] [--allow-unsigned] [-k 3] [--json]\n"
            "                     [--memory PATH | --no-learn] " CLI_SEARCH_USAGE " TEXT\n"
            "Prints up to k suggestions for TEXT (what comes before the cursor), best first\n"
            "(by expected keystrokes saved: probability times characters), each as its\n"
            "probability, then the exact text to insert, quoted. TEXT - reads stdin, less one\n"
            "trailing newline. --min-prob P hides suggestions less likely than P (0.002).\n"
            "--allow-unsigned loads a model without a trusted signature (one you trained).\n"
            "The suggestions draw on your memory, as every front end's do (--memory PATH,\n"
            "else $LAYA_MEMORY, else $XDG_DATA_HOME/laya/memory.db, when it exists; it is\n"
            "read, never written); --no-learn: the model alone.\n");
}

/* s quoted as a C/JSON string: a leading space or a tab stays visible. */
static void print_quoted(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c < 0x20 || c == 0x7F) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* All of stdin, at most ENGINE_MAX_CONTEXT bytes (inclusive: a full buffer
 * is refused only if one more byte follows). */
static char *read_stdin(size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b) cli_die("out of memory");
    for (;;) {
        if (n == cap) {
            if (cap >= LAYA_MAX_CONTEXT) {
                char more;
                if (fread(&more, 1, 1, stdin) == 0) break;
                cli_die("stdin holds more than %d bytes (16 MiB), the longest context the engine takes: "
                        "pass the text before the cursor only", LAYA_MAX_CONTEXT);
            }
            cap *= 2;
            b = realloc(b, cap);
            if (!b) cli_die("out of memory");
        }
        size_t r = fread(b + n, 1, cap - n, stdin);
        if (r == 0) break;
        n += r;
    }
    if (ferror(stdin)) cli_die("cannot read stdin: %s", strerror(errno));
    *len = n;
    return b;
}

/* The user's memory where it exists (complete never creates one), read;
 * NULL where there is none. A store that cannot be read is said and left
 * out: the model alone still answers. */
static laya_memory *open_existing_memory(const char *explicit_path) {
    const char *path = front_memory_path(explicit_path);
    char buf[4096], err[1024] = "";
    if (!path) {
        if (laya_memory_default_path(buf, sizeof buf, NULL, 0) != LAYA_OK) return NULL;
        path = buf;
    }
    if (access(path, F_OK) != 0) {
        if (explicit_path) cli_die("complete: no memory at %s (--no-learn for the model alone)", path);
        return NULL;
    }
    laya_memory *m = NULL;
    if (laya_memory_open(path, &m, err, sizeof err) != LAYA_OK || laya_memory_prepare(m, err, sizeof err) != LAYA_OK) {
        fprintf(stderr, "laya complete: the memory is left out: %s\n", *err ? err : "cannot read it");
        laya_memory_free(m);
        return NULL;
    }
    return m;
}

int cmd_complete(int argc, char **argv) {
    const char *model_path = NULL, *text = NULL;
    const char *memory_path = NULL;
    int k = 3, json = 0, allow_unsigned = 0, no_learn = 0;
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
            model_path = v;
            i++;
        } else if (!strcmp(a, "-k")) {
            k = (int)cli_int(a, v, 1, LAYA_MAX_K);
            i++;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--no-learn")) {
            no_learn = 1;
        } else if (!strcmp(a, "--memory")) {
            if (!v) cli_die("--memory expects a path");
            memory_path = v;
            i++;
        } else if (!strcmp(a, "--allow-unsigned")) {
            allow_unsigned = 1;
        } else if (!strcmp(a, "--")) {
            if (i + 1 < argc) text = argv[++i];
            if (i + 1 < argc) cli_die("complete: expected one TEXT argument (quote it)");
        } else if (a[0] == '-' && a[1]) {
            usage(stderr);
            cli_die("complete: unknown option '%s'", a);
        } else {
            if (text) cli_die("complete: expected one TEXT argument, got a second: '%s' (quote the text)", a);
            text = a;
        }
    }
    if (!text) {
        usage(stderr);
        cli_die("complete: missing TEXT");
    }
    size_t len;
    char *owned = NULL;
    if (!strcmp(text, "-")) {
        text = owned = read_stdin(&len);
        if (len && text[len - 1] == '\n') len--;
        if (len && text[len - 1] == '\r') len--;
    } else {
        len = strlen(text);
    }
    if (!utf8_valid((const uint8_t *)text, len))
        cli_die("complete: the text is not valid UTF-8 (check the terminal's locale)");

    laya_model *m = cli_load_model_opts(model_path, allow_unsigned);
    laya_session *s = NULL;
    laya_status st = laya_session_new(m, &s);
    if (st == LAYA_OK) st = laya_session_set_search(s, &cfg);
    if (st != LAYA_OK) cli_die("cannot open a session: %s", laya_status_str(st));
    laya_memory *mem = no_learn ? NULL : open_existing_memory(memory_path);
    if (mem) laya_session_set_memory(s, mem);
    laya_view v;
    laya_input in = {.kind = LAYA_INPUT_CONTEXT, .text = text, .len = len, .want = LAYA_WANT_SUGGEST, .k = k,
                     .t_ms = -1};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = laya_session_event(s, &in, &v);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != LAYA_OK) cli_die("cannot complete: %s", laya_status_str(st));
    const laya_suggestion *out = v.list;
    const int n = v.n;
    double us = 1e6 * (double)(t1.tv_sec - t0.tv_sec) + 1e-3 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, json_pack("{s:s%,s:f}", "text", out[i].text, out[i].len,
                                                 "prob", (double)out[i].prob));
        json_t *o = json_pack("{s:s%,s:o,s:I}", "context", text, len, "suggestions", arr, "us",
                              (json_int_t)(us + 0.5));
        char *d = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!d) cli_die("cannot encode the JSON output");
        puts(d);
        free(d);
        json_decref(o);
    } else {
        for (int i = 0; i < n; i++) {
            printf("%.4f  ", (double)out[i].prob);
            print_quoted(out[i].text, out[i].len);
            putchar('\n');
        }
        if (n == 0 && v.gate == 2)
            fprintf(stderr, "laya: no suggestion: the text ends in a password prompt (nothing is shown there)\n");
        else if (n == 0)
            fprintf(stderr, "laya: no suggestion for this text\n");
    }
    laya_session_free(s);
    laya_memory_free(mem);
    laya_model_free(m);
    free(owned);
    return 0;
}
