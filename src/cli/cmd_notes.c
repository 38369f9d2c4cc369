/* cmd_notes.c - `laya notes`: index a folder of Markdown notes and search
 * it (C11). Uses only include/laya.h (the notes section). Every command
 * takes --db PATH; without it the default $XDG_DATA_HOME/laya/notes.db.
 *
 *   laya notes index DIR [--db PATH]
 *   laya notes search TERMS... [-k N] [--json] [--db PATH]
 *   laya notes check [--db PATH]
 *   laya notes path [--db PATH] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya notes index DIR [--db PATH]     index the Markdown notes under DIR\n"
            "       laya notes search TERMS... [-k N] [--json] [--db PATH]\n"
            "       laya notes check [--db PATH]         check the index for damage\n"
            "       laya notes path [--db PATH]          where the index is kept\n"
            "index reads every *.md and *.markdown file under DIR (hidden folders and\n"
            "symbolic links left out) and brings the index up to it: new and changed notes\n"
            "are indexed, unchanged ones are not read again, deleted ones are removed.\n"
            "Binary, huge (over 4 MiB), non-UTF-8 and unreadable files are skipped, each\n"
            "with its reason. Running it again after an interruption finishes the job.\n"
            "search prints the best matching notes (title, path, a snippet with the\n"
            "matches in [brackets]; -k N of them, default 5, at most 8); --json prints\n"
            "one JSON object per note. A title (the first '# ' heading) counts three times.\n"
            "The index is --db PATH, else $XDG_DATA_HOME/laya/notes.db (folder 0700,\n"
            "file 0600: it holds your notes' text). `laya serve` attaches it when it\n"
            "exists, and suggestions then carry the notes related to the sentence typed.\n");
}

static void die_status(const char *what, laya_status st, const char *err) {
    cli_die("%s: %s", what, *err ? err : laya_status_str(st));
}

typedef struct {
    int tty;
    double last;
    int64_t seen;
} progress;

static void on_file(void *ctx, laya_note_event ev, const char *path, const char *reason) {
    progress *p = ctx;
    p->seen++;
    if (ev == LAYA_NOTE_SKIPPED) {
        if (p->tty) fputs("\r\033[K", stderr);
        fprintf(stderr, "laya: skipped %s: %s\n", path, reason ? reason : "?");
    }
    double now = cli_now_s();
    if (p->tty && now - p->last > 0.1) {
        p->last = now;
        fprintf(stderr, "\r\033[K%lld files...", (long long)p->seen);
    }
}

static int do_index(const char *dir, const char *db) {
    char err[512] = "";
    laya_notes *n = NULL;
    laya_status st = laya_notes_open(db, 1, &n, err, sizeof err);
    if (st != LAYA_OK) die_status("notes index", st, err);
    progress p = {.tty = isatty(2), .last = cli_now_s()};
    laya_notes_summary s;
    double t0 = cli_now_s();
    st = laya_notes_index(n, dir, on_file, &p, &s, err, sizeof err);
    if (p.tty) fputs("\r\033[K", stderr);
    if (st != LAYA_OK) {
        laya_notes_free(n);
        die_status("notes index", st, err);
    }
    printf("%lld added, %lld updated, %lld removed, %lld unchanged, %lld skipped in %.2f s; %lld notes in %s\n",
           (long long)s.added, (long long)s.updated, (long long)s.removed, (long long)s.unchanged,
           (long long)s.skipped, cli_now_s() - t0, (long long)s.notes, laya_notes_path(n));
    laya_notes_free(n);
    return 0;
}

static int do_search(const char *query, int k, int json, const char *db) {
    char err[512] = "";
    laya_notes *n = NULL;
    laya_status st = laya_notes_open(db, 0, &n, err, sizeof err);
    if (st != LAYA_OK) die_status("notes search", st, err);
    laya_note *hits = calloc(LAYA_NOTES_MAX_K, sizeof *hits);
    if (!hits) cli_die("notes search: out of memory");
    int nh = 0;
    st = laya_notes_search(n, query, strlen(query), k, hits, &nh, err, sizeof err);
    laya_notes_free(n);
    if (st != LAYA_OK) die_status("notes search", st, err);
    for (int i = 0; i < nh; i++) {
        if (json) {
            json_t *o = json_pack("{s:s,s:s,s:s,s:f}", "title", hits[i].title, "path", hits[i].path, "snippet",
                                  hits[i].snippet, "score", hits[i].score);
            char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
            if (!line) cli_die("notes search: out of memory");
            puts(line);
            free(line);
            json_decref(o);
        } else {
            printf("%d. %s\n   %s\n   %s\n", i + 1, hits[i].title, hits[i].path, hits[i].snippet);
        }
    }
    free(hits);
    if (!nh) fprintf(stderr, "laya: no notes match\n");
    return nh ? 0 : 1;
}

static int do_check(const char *db) {
    char err[512] = "";
    laya_notes *n = NULL;
    laya_status st = laya_notes_open(db, 0, &n, err, sizeof err);
    if (st == LAYA_OK) st = laya_notes_check(n, err, sizeof err);
    if (st != LAYA_OK) {
        laya_notes_free(n);
        die_status("notes check", st, err);
    }
    printf("%s: ok\n", laya_notes_path(n));
    laya_notes_free(n);
    return 0;
}

int cmd_notes(int argc, char **argv) {
    const char *db = NULL, *args[64];
    int na = 0, json = 0, k = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--db")) {
            if (i + 1 >= argc) cli_die("notes: --db expects a path");
            db = argv[++i];
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "-k")) {
            k = (int)cli_int("-k", i + 1 < argc ? argv[++i] : NULL, 1, LAYA_NOTES_MAX_K);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "laya: notes: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (na < (int)(sizeof args / sizeof args[0])) {
            args[na++] = argv[i];
        } else {
            cli_die("notes: too many arguments");
        }
    }
    if (!na) {
        usage(stderr);
        return 2;
    }
    const char *sub = args[0];
    if (!strcmp(sub, "index")) {
        if (na != 2) cli_die("notes index: expected one folder, as in: laya notes index ~/notes");
        return do_index(args[1], db);
    }
    if (!strcmp(sub, "search")) {
        if (na < 2) cli_die("notes search: expected the terms to look for, as in: laya notes search \"project plan\"");
        size_t len = 0;
        for (int i = 1; i < na; i++) len += strlen(args[i]) + 1;
        char *q = malloc(len + 1);
        if (!q) cli_die("notes search: out of memory");
        q[0] = 0;
        for (int i = 1; i < na; i++) strcat(strcat(q, i > 1 ? " " : ""), args[i]);
        int rc = do_search(q, k, json, db);
        free(q);
        return rc;
    }
    if (!strcmp(sub, "check")) return do_check(db);
    if (!strcmp(sub, "path")) {
        char p[4096], err[256] = "";
        laya_status st = db ? LAYA_OK : laya_notes_default_path(p, sizeof p, err, sizeof err);
        if (st != LAYA_OK) die_status("notes path", st, err);
        puts(db ? db : p);
        return 0;
    }
    fprintf(stderr, "laya: notes: unknown command '%s' (expected index, search, check or path)\n", sub);
    usage(stderr);
    return 2;
}
