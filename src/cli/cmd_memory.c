/* cmd_memory.c - `laya memory` and `laya incognito`: what Laya has learned
 * from the user's commits and from what the user did with the suggestions
 * shown (feedback), and the switch that stops it learning. Uses
 * only include/laya.h (the personal-memory section) and the library's
 * lookups (engine/front.h). Every command takes --memory PATH; without it
 * $LAYA_MEMORY, else the default $XDG_DATA_HOME/laya/memory.db
 * (front_memory_path). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine/front.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya memory list [--json] [--feedback]  what was learned, most recent first\n"
            "       laya memory add TEXT               learn TEXT as one commit (- reads stdin)\n"
            "       laya memory forget --all | --since DATE | --word WORD | --text TEXT\n"
            "       laya memory export [FILE]          JSON lines (stdout without FILE)\n"
            "       laya memory path                   where the memory is kept\n"
            "       laya incognito on|off|status       stop or resume learning, in every process\n"
            "Every command takes --memory PATH (else $LAYA_MEMORY, else\n"
            "$XDG_DATA_HOME/laya/memory.db, i.e. ~/.local/share/laya/memory.db).\n"
            "DATE is YYYY-MM-DD (from local midnight) or unix seconds; --since forgets\n"
            "what was committed at or after it. --word forgets every commit holding\n"
            "WORD as a whole word (any case for ASCII letters; a CJK word anywhere).\n"
            "--text forgets the commits that are exactly TEXT (one line of memory list).\n"
            "Feedback: the suggestions passed over or taken after a context (the end of\n"
            "the line before the cursor), which rank lower or higher there next time.\n"
            "list --feedback shows them; export writes them after the commits; every\n"
            "forget removes them too: --word those holding WORD (in the context, the\n"
            "suggestion or the two together), --text those whose context or suggestion\n"
            "occurs anywhere in TEXT (a short suggestion such as \"the \" may go with it).\n");
}

static void usage_incognito(FILE *f) {
    fprintf(f,
            "usage: laya incognito on|off|status [--memory PATH]\n"
            "on stops learning in every process that shares the memory (daemon, IBus,\n"
            "fcitx5, laya type), off resumes it; the switch is kept in the memory itself,\n"
            "so it holds across restarts until switched off. status prints on or off.\n"
            "The memory is --memory PATH, else $LAYA_MEMORY, else\n"
            "$XDG_DATA_HOME/laya/memory.db.\n");
}

/* Options shared by every subcommand: --memory PATH and --help (which
 * prints help and exits); the rest (in order) go to args[0..*n). */
static const char *parse_common(int argc, char **argv, const char *cmd, void (*help)(FILE *), const char **args,
                                int *n) {
    const char *path = NULL;
    *n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(stdout);
            exit(0);
        } else if (!strcmp(argv[i], "--memory")) {
            if (i + 1 >= argc) cli_die("%s: --memory expects a path", cmd);
            path = argv[++i];
        } else {
            args[(*n)++] = argv[i];
        }
    }
    return path;
}

static void die_status(const char *what, laya_status st, const char *err) {
    cli_die("%s: %s", what, *err ? err : laya_status_str(st));
}

/* s as a double-quoted string with C escapes, so a newline, a tab, a NUL
 * or a leading space stays visible. */
static void print_quoted(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    cli_put_escaped(f, s, n, '"');
    fputc('"', f);
}

static void local_time(char *buf, size_t n, int64_t t) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M", &tm)) snprintf(buf, n, "@%lld", (long long)t);
}

/* ---- list, export ------------------------------------------------------------ */

typedef struct {
    FILE *out;
    int json;
    int64_t texts, commits, skipped;
} list_ctx;

/* Prints o (taken) as one JSON line with the flags; an object that could
 * not be made or dumped is counted as skipped. */
static void print_json(list_ctx *c, json_t *o, size_t flags) {
    char *d = o ? json_dumps(o, flags) : NULL;
    if (d) fprintf(c->out, "%s\n", d);
    else c->skipped++;
    free(d);
    json_decref(o);
}

/* One JSON line: {"text":..,"count":..,"first":..,"last":..}. Text that is
 * not valid UTF-8 (possible only in a damaged or hand-made file) cannot be
 * JSON: it is counted and skipped. */
static int print_entry(void *vctx, const char *text, size_t len, int64_t count, int64_t first, int64_t last) {
    list_ctx *c = vctx;
    c->texts++;
    c->commits += count;
    if (c->json) {
        json_t *o = json_pack("{s:s%,s:I,s:I,s:I}", "text", text, len, "count", (json_int_t)count, "first",
                              (json_int_t)first, "last", (json_int_t)last);
        print_json(c, o, JSON_COMPACT);
    } else {
        char when[32];
        local_time(when, sizeof when, last);
        fprintf(c->out, "%6lld  %s  ", (long long)count, when);
        print_quoted(c->out, text, len);
        fputc('\n', c->out);
    }
    return ferror(c->out) != 0;
}

/* One feedback entry: a JSON line {"context":..,"text":..,"ignored":..,
 * "accepted":..,"last":..}, or a table row. Counts decay with use, so they
 * are printed with one decimal. */
static int print_feedback(void *vctx, const char *context, size_t clen, const char *text, size_t tlen,
                          double ignored, double accepted, int64_t last) {
    list_ctx *c = vctx;
    c->texts++;
    if (c->json) {
        json_t *o = json_pack("{s:s%,s:s%,s:f,s:f,s:I}", "context", context, clen, "text", text, tlen, "ignored",
                              floor(ignored * 1000 + 0.5) / 1000, "accepted", floor(accepted * 1000 + 0.5) / 1000,
                              "last", (json_int_t)last);
        print_json(c, o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    } else {
        char when[32];
        local_time(when, sizeof when, last);
        fprintf(c->out, "%7.1f %8.1f  %s  ", ignored, accepted, when);
        print_quoted(c->out, context, clen);
        fputs(" -> ", c->out);
        print_quoted(c->out, text, tlen);
        fputc('\n', c->out);
    }
    return ferror(c->out) != 0;
}

/* The number of feedback entries in m; dies on error. */
static int64_t feedback_entries(laya_memory *m, const char *what) {
    int64_t n = 0;
    char err[512] = "";
    laya_status st = front_feedback_entries(m, &n, err, sizeof err);
    if (st != LAYA_OK) die_status(what, st, err);
    return n;
}

/*   laya memory list [--json] [--feedback] [--memory PATH]
 * The commits, or with --feedback the feedback entries. */
static int memory_list(int argc, char **argv) {
    const char *args[64];
    int n;
    const char *path = parse_common(argc, argv, "memory list", usage, args, &n);
    int json = 0, fb = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(args[i], "--json")) json = 1;
        else if (!strcmp(args[i], "--feedback")) fb = 1;
        else cli_die("memory list: unexpected '%s' (laya memory list [--json] [--feedback])", args[i]);
    }
    laya_memory *m = cli_open_memory(path);
    list_ctx c = {stdout, json, 0, 0, 0};
    char err[512] = "";
    laya_status st;
    if (fb) {
        if (!json) printf("ignored accepted  last used         context -> suggestion\n");
        st = laya_memory_list_feedback(m, print_feedback, &c, err, sizeof err);
    } else {
        if (!json) printf(" count  last used         text\n");
        st = laya_memory_list(m, print_entry, &c, err, sizeof err);
    }
    if (st != LAYA_OK) die_status("memory list", st, err);
    if (fflush(stdout) != 0 || ferror(stdout)) cli_die("memory list: cannot write the output: %s", strerror(errno));
    if (c.skipped) fprintf(stderr, "laya: %lld entries are not valid UTF-8 and were left out\n", (long long)c.skipped);
    if (fb) {
        fprintf(stderr, "%lld feedback entries in %s\n", (long long)c.texts, laya_memory_path(m));
    } else {
        int64_t nf = feedback_entries(m, "memory list");
        fprintf(stderr, "%lld texts from %lld commits in %s", (long long)c.texts, (long long)c.commits,
                laya_memory_path(m));
        if (nf) fprintf(stderr, "; and %lld feedback entries (laya memory list --feedback)", (long long)nf);
        fputc('\n', stderr);
    }
    laya_memory_free(m);
    return 0;
}

/*   laya memory export [FILE] [--memory PATH]
 * FILE is created 0600 (it holds the same private text as the store); an
 * existing FILE is replaced. No FILE or "-": stdout. */
static int memory_export(int argc, char **argv) {
    const char *args[64];
    int n;
    const char *path = parse_common(argc, argv, "memory export", usage, args, &n);
    if (n > 1) cli_die("memory export: expected at most one FILE, got '%s' too", args[1]);
    for (int i = 0; i < n; i++)
        if (args[i][0] == '-' && args[i][1]) cli_die("memory export: unknown option '%s'", args[i]);
    const char *file = n ? args[0] : "-";
    laya_memory *m = cli_open_memory(path);
    FILE *out = stdout;
    if (strcmp(file, "-")) {
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) cli_die("memory export: cannot create '%s': %s", file, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077)) fchmod(fd, 0600);
        if (!(out = fdopen(fd, "w"))) cli_die("memory export: cannot write '%s': %s", file, strerror(errno));
    }
    list_ctx c = {out, 1, 0, 0, 0}, f = {out, 1, 0, 0, 0};
    char err[512] = "";
    laya_status st = laya_memory_list(m, print_entry, &c, err, sizeof err);
    if (st == LAYA_OK) st = laya_memory_list_feedback(m, print_feedback, &f, err, sizeof err);
    if (st != LAYA_OK) die_status("memory export", st, err);
    if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0))
        cli_die("memory export: cannot write '%s': %s", file, strerror(errno));
    if (c.skipped + f.skipped)
        fprintf(stderr, "laya: %lld entries are not valid UTF-8 and were left out\n", (long long)(c.skipped + f.skipped));
    fprintf(stderr, "exported %lld texts (%lld commits) and %lld feedback entries from %s%s%s\n",
            (long long)c.texts, (long long)c.commits, (long long)f.texts, laya_memory_path(m),
            out == stdout ? "" : " to ", out == stdout ? "" : file);
    laya_memory_free(m);
    return 0;
}

/* ---- add, forget --------------------------------------------------------------- */

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (!b) cli_die("out of memory");
    for (;;) {
        if (n == cap) {
            if (cap > LAYA_MEMORY_MAX_TEXT) break;   /* too long: the library says so */
            if (!(b = realloc(b, cap *= 2))) cli_die("out of memory");
        }
        size_t r = fread(b + n, 1, cap - n, f);
        if (!r) break;
        n += r;
    }
    if (ferror(f)) cli_die("cannot read stdin: %s", strerror(errno));
    *len = n;
    return b;
}

/*   laya memory add TEXT|- [--memory PATH]
 * Learns TEXT as one commit, as if it had been typed and committed. */
static int memory_add(int argc, char **argv) {
    const char *args[64];
    int n;
    const char *path = parse_common(argc, argv, "memory add", usage, args, &n);
    if (n != 1) cli_die("memory add: expected one TEXT (quote it; - reads stdin)");
    size_t len;
    char *owned = NULL;
    const char *text = args[0];
    if (!strcmp(text, "-")) text = owned = read_all(stdin, &len);
    else len = strlen(text);
    laya_memory *m = cli_open_memory(path);
    int learned = 0;
    char err[512] = "";
    laya_status st = laya_memory_commit(m, text, len, &learned, err, sizeof err);
    if (st != LAYA_OK) die_status("memory add", st, err);
    if (learned) fprintf(stderr, "learned %zu bytes into %s\n", len, laya_memory_path(m));
    else if (len) fprintf(stderr, "not learned: incognito is on (laya incognito off)\n");
    else fprintf(stderr, "not learned: the text is empty\n");
    laya_memory_free(m);
    free(owned);
    return 0;
}

/* DATE: unix seconds, or YYYY-MM-DD read as local midnight (a date that
 * does not exist, such as 2024-02-30, is refused). */
static int64_t parse_date(const char *s) {
    size_t n = strlen(s);
    int digits = n > 0;
    for (size_t i = 0; i < n; i++) digits &= s[i] >= '0' && s[i] <= '9';
    if (digits && n <= 12) return strtoll(s, NULL, 10);
    int shape = n == 10 && s[4] == '-' && s[7] == '-';
    for (size_t i = 0; shape && i < n; i++) shape = i == 4 || i == 7 || (s[i] >= '0' && s[i] <= '9');
    if (shape) {
        int y = atoi(s), mo = atoi(s + 5), d = atoi(s + 8);
        struct tm tm = {0};
        tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d, tm.tm_isdst = -1;
        time_t t = mktime(&tm);
        if (t != (time_t)-1 && tm.tm_year == y - 1900 && tm.tm_mon == mo - 1 && tm.tm_mday == d) return (int64_t)t;
    }
    cli_die("memory forget: --since expects a date YYYY-MM-DD or unix seconds, got '%s'", s);
}

/*   laya memory forget --all | --since DATE | --word WORD | --text TEXT  [--memory PATH]
 * Asks nothing; prints what it removed. */
static int memory_forget(int argc, char **argv) {
    const char *args[64];
    int n;
    const char *path = parse_common(argc, argv, "memory forget", usage, args, &n);
    int all = 0, chosen = 0;
    const char *since = NULL, *word = NULL, *text = NULL;
    for (int i = 0; i < n; i++) {
        if (!strcmp(args[i], "--all")) all = 1, chosen++;
        else if (!strcmp(args[i], "--since") || !strcmp(args[i], "--word") || !strcmp(args[i], "--text")) {
            if (i + 1 >= n) cli_die("memory forget: %s expects a value", args[i]);
            if (args[i][2] == 's') since = args[++i];
            else if (args[i][2] == 'w') word = args[++i];
            else text = args[++i];
            chosen++;
        } else cli_die("memory forget: unexpected '%s'", args[i]);
    }
    if (chosen != 1) cli_die("memory forget: give exactly one of --all, --since DATE, --word WORD, --text TEXT");
    int64_t t = since ? parse_date(since) : 0, removed = 0;
    if (word && !*word) cli_die("memory forget: --word expects a non-empty word");
    if (text && !*text) cli_die("memory forget: --text expects a non-empty text");
    laya_memory *m = cli_open_memory(path);
    char err[512] = "";
    int64_t fb0 = feedback_entries(m, "memory forget");
    laya_status st = all     ? laya_memory_forget_all(m, &removed, err, sizeof err)
                     : since ? laya_memory_forget_since(m, t, &removed, err, sizeof err)
                     : word  ? laya_memory_forget_word(m, word, strlen(word), &removed, err, sizeof err)
                             : laya_memory_forget_text(m, text, strlen(text), &removed, err, sizeof err);
    if (st != LAYA_OK) die_status("memory forget", st, err);
    int64_t fb_removed = fb0 - feedback_entries(m, "memory forget");
    if (all) {
        printf("forgot everything: %lld commits and %lld feedback entries removed from %s\n", (long long)removed,
               (long long)fb_removed, laya_memory_path(m));
    } else if (since) {
        char when[32];
        local_time(when, sizeof when, t);
        printf("forgot %lld commits and %lld feedback entries made since %s\n", (long long)removed,
               (long long)fb_removed, when);
    } else if (word) {
        printf("forgot %lld commits and %lld feedback entries containing ", (long long)removed, (long long)fb_removed);
        print_quoted(stdout, word, strlen(word));
        putchar('\n');
    } else {
        printf("forgot %lld commits that are exactly ", (long long)removed);
        print_quoted(stdout, text, strlen(text));
        printf(" and %lld feedback entries found in it\n", (long long)fb_removed);
    }
    laya_memory_free(m);
    return 0;
}

/*   laya memory path [--memory PATH]
 * Prints the path the other commands would use; creates nothing. */
static int memory_path(int argc, char **argv) {
    const char *args[64];
    int n;
    const char *path = front_memory_path(parse_common(argc, argv, "memory path", usage, args, &n));
    if (n) cli_die("memory path: unexpected '%s'", args[0]);
    char buf[4096], err[512] = "";
    if (!path) {
        laya_status st = laya_memory_default_path(buf, sizeof buf, err, sizeof err);
        if (st != LAYA_OK) die_status("memory path", st, err);
        path = buf;
    }
    puts(path);
    return 0;
}

int cmd_memory(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        usage(stdout);
        return 0;
    }
    if (argc > 64) cli_die("memory: too many arguments");
    if (!strcmp(sub, "list")) return memory_list(argc - 1, argv + 1);
    if (!strcmp(sub, "add")) return memory_add(argc - 1, argv + 1);
    if (!strcmp(sub, "forget")) return memory_forget(argc - 1, argv + 1);
    if (!strcmp(sub, "export")) return memory_export(argc - 1, argv + 1);
    if (!strcmp(sub, "path")) return memory_path(argc - 1, argv + 1);
    usage(stderr);
    cli_die("memory: unknown subcommand '%s'", sub);
}

/*   laya incognito on|off|status [--memory PATH]
 * The switch is kept in the store, so it holds for every process using it
 * (daemon, IBus, `laya type`) until switched off. status prints on or off. */
int cmd_incognito(int argc, char **argv) {
    if (argc > 64) cli_die("incognito: too many arguments");
    const char *args[64];
    int n;
    const char *path = parse_common(argc, argv, "incognito", usage_incognito, args, &n);
    for (int i = 0; i < n; i++)
        if (args[i][0] == '-') cli_die("incognito: unknown option '%s'", args[i]);
    if (n != 1 || (strcmp(args[0], "on") && strcmp(args[0], "off") && strcmp(args[0], "status"))) {
        usage_incognito(stderr);
        if (n >= 1) cli_die("incognito: unknown argument '%s' (expected on, off or status)", args[0]);
        cli_die("incognito: expected on, off or status");
    }
    laya_memory *m = cli_open_memory(path);
    char err[512] = "";
    laya_status st;
    if (!strcmp(args[0], "status")) {
        int on = 0;
        if ((st = laya_memory_get_incognito(m, &on, err, sizeof err)) != LAYA_OK) die_status("incognito", st, err);
        puts(on ? "on" : "off");
    } else {
        int on = !strcmp(args[0], "on");
        if ((st = laya_memory_set_incognito(m, on, err, sizeof err)) != LAYA_OK) die_status("incognito", st, err);
        printf(on ? "incognito is on: no Laya process learns anything until 'laya incognito off'\n"
                  : "incognito is off: Laya learns from what you commit\n");
    }
    laya_memory_free(m);
    return 0;
}
