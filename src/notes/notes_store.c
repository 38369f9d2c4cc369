/* notes_store.c - the notes index file (notes.h): opening it as hostile
 * input, indexing a folder incrementally in batches, searching, checking. */
#include "notes/notes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"
#include "util/sqlite_file.h"
#include "util/topk.h"
#include "util/utf8.h"

enum {
    HASH_BYTES = 16,     /* BLAKE2b-128: equal content, equal hash; a collision would keep a stale note */
    MAX_DEPTH = 64,      /* folders below the one indexed */
    MAX_UNREADABLE = 64, /* unreadable folders remembered per run (their notes are kept) */
    DF_CACHE = 1024,     /* document frequencies a search remembers (a power of 2) */
    DF_KEY = 48,         /* bytes of a term they are remembered for, NUL included (longer: read each time) */
    SNIP_FETCH = 32768   /* characters of a body read for its snippet (NOTES_SNIP_SCAN tokens fit) */
};

#define IN_MEMORY ":memory:"

/* A term's document frequency as last read from the terms table. */
typedef struct {
    char stem[DF_KEY];   /* "": empty slot */
    int64_t df;
} df_slot;

struct laya_notes {
    pthread_mutex_t mu;
    sqlite3 *db;
    sqlite3_stmt *get, *add_file, *set_file, *touch, *del_file, *add_note, *del_note, *count;
    sqlite3_stmt *df, *df_add, *df_gone, *old_text;   /* the terms table */
    sqlite3_stmt *scan, *fetch, *version, *begin, *end;   /* searching */
    notes_stemmer *stem;
    /* What searches read from memory (the lengths, notes_rank.c) or cache
     * (df), as of data_version; stale: this connection wrote since. */
    notes_rank rank;
    df_slot dfc[DF_CACHE];
    int64_t data_version;
    int stale;
    char path[NOTES_PATH_MAX];
};

/* ---- errors ------------------------------------------------------------------ */

/* A SQLite failure while `doing`, as a status and a sentence with a hint;
 * call right after the failing call (the message is the connection's). */
static laya_status fail(laya_notes *n, int rc, const char *doing, char *err, size_t errlen) {
    const char *msg = n->db ? sqlite3_errmsg(n->db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return err_set(err, errlen, LAYA_ERR_IO,
                       "notes index %s is locked by another process (waited %d ms while %s): try again when the "
                       "other `laya notes index` is done",
                       n->path, NOTES_BUSY_MS, doing);
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "notes index %s is damaged or not a database (%s while %s): remove it and run `laya notes "
                       "index DIR` again (it only holds what your notes hold)",
                       n->path, msg, doing);
    case SQLITE_NOMEM: return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory while %s", doing);
    case SQLITE_FULL:
        return err_set(err, errlen, LAYA_ERR_IO, "notes index %s: the disk is full (while %s)", n->path, doing);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
        return err_set(err, errlen, LAYA_ERR_IO, "notes index %s: %s while %s (check the file and its folder)",
                       n->path, msg, doing);
    case SQLITE_MISUSE: return err_set(err, errlen, LAYA_ERR_INTERNAL, "notes index: %s while %s", msg, doing);
    default: return err_set(err, errlen, LAYA_ERR_FORMAT, "notes index %s: %s while %s", n->path, msg, doing);
    }
}

static laya_status exec(laya_notes *n, const char *sql, const char *doing, char *err, size_t errlen) {
    int rc = sqlite3_exec(n->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? LAYA_OK : fail(n, rc, doing, err, errlen);
}

static void rollback(laya_notes *n) {
    if (!sqlite3_get_autocommit(n->db)) sqlite3_exec(n->db, "ROLLBACK", NULL, NULL, NULL);
}

static laya_status query_int(laya_notes *n, const char *sql, int64_t *v, const char *doing, char *err,
                             size_t errlen) {
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(n->db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    *v = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    laya_status st = rc == SQLITE_ROW || rc == SQLITE_DONE ? LAYA_OK : fail(n, rc, doing, err, errlen);
    sqlite3_finalize(q);
    return st;
}

/* Steps a statement that yields no row, then resets it. */
static laya_status run(laya_notes *n, sqlite3_stmt *q, const char *doing, char *err, size_t errlen) {
    int rc = sqlite3_step(q);
    laya_status st = rc == SQLITE_DONE || rc == SQLITE_ROW ? LAYA_OK : fail(n, rc, doing, err, errlen);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return st;
}

/* ---- the file ------------------------------------------------------------------ */

/* The file as sqlite_file.c names it in messages. */
static const sqlfile_kind notes_file = {"notes index", "notes.db", "--db PATH", "run `laya notes index DIR` first"};

laya_status laya_notes_default_path(char *buf, size_t n, char *err, size_t errlen) {
    if (!buf || !n) return LAYA_ERR_ARG;
    return sqlfile_default_path(&notes_file, buf, n, err, errlen);
}

/* ---- schema ---------------------------------------------------------------------- */

static const char *const schema_sql =
    "CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, mtime_ns INTEGER NOT NULL, "
    "size INTEGER NOT NULL, hash BLOB NOT NULL, seen INTEGER NOT NULL);"
    "CREATE TABLE terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE VIRTUAL TABLE notes USING fts5(title, body, tokenize = 'porter laya');"
    "INSERT INTO notes(notes, rank) VALUES('rank', 'bm25(3.0, 1.0)');";

/* What a current file holds: these tables (FTS5's shadow tables
 * included) and no trigger or view, which would run or hide code. */
static laya_status check_schema(laya_notes *n, int *fresh, char *err, size_t errlen) {
    int64_t app, version, tables, ours, others;
    laya_status st;
    if ((st = query_int(n, "PRAGMA application_id", &app, "reading the file header", err, errlen)) ||
        (st = query_int(n, "PRAGMA user_version", &version, "reading the file header", err, errlen)) ||
        (st = query_int(n, "SELECT count(*) FROM sqlite_master", &tables, "reading the schema", err, errlen)))
        return st;
    *fresh = app == 0 && version == 0 && tables == 0;
    if (*fresh) return LAYA_OK;
    if (app != NOTES_APP_ID)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "%s is a SQLite database of another program (application_id 0x%08" PRIx64
                       "), not a Laya notes index: pass another --db PATH",
                       n->path, (uint64_t)app & 0xffffffffu);
    if (version > NOTES_SCHEMA)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "notes index %s is from a newer Laya (schema %" PRId64 ", this build reads %d): upgrade "
                       "Laya, or pass another --db PATH; the file was not changed",
                       n->path, version, NOTES_SCHEMA);
    if ((st = query_int(n,
                        "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'index') AND name IN ('files', "
                        "'terms', 'notes', 'notes_data', 'notes_idx', 'notes_content', 'notes_docsize', 'notes_config')",
                        &ours, "reading the schema", err, errlen)) ||
        (st = query_int(n,
                        "SELECT count(*) FROM sqlite_master WHERE type IN ('trigger', 'view') OR (type = 'table' AND "
                        "name NOT IN ('files', 'terms', 'notes', 'notes_data', 'notes_idx', 'notes_content', "
                        "'notes_docsize', 'notes_config'))",
                        &others, "reading the schema", err, errlen)))
        return st;
    if (version != NOTES_SCHEMA || ours != 8 || others != 0)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "notes index %s does not hold Laya's tables as this build writes them (damaged or edited by "
                       "hand): remove it and run `laya notes index DIR` again",
                       n->path);
    return LAYA_OK;
}

/* Brings what searches keep in memory up to date with the file: the
 * lengths and the cached document frequencies are read again when this
 * connection wrote (stale) or another one did (PRAGMA data_version, which
 * changes on every commit of another connection, such as a `laya notes
 * index` beside a running `laya serve`). Lock held. */
static laya_status refresh(laya_notes *n, char *err, size_t errlen) {
    int rc = sqlite3_step(n->version);
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(n->version, 0) : 0;
    sqlite3_reset(n->version);
    if (rc != SQLITE_ROW) return fail(n, rc, "checking for changes", err, errlen);
    if (!n->stale && v == n->data_version) return LAYA_OK;
    for (int i = 0; i < DF_CACHE; i++) n->dfc[i].stem[0] = 0;
    if ((rc = notes_lens_load(n->db, &n->rank)) != SQLITE_OK) return fail(n, rc, "reading the notes' sizes", err, errlen);
    n->data_version = v;
    n->stale = 0;
    return LAYA_OK;
}

static laya_status prepare(laya_notes *n, sqlite3_stmt **q, const char *sql, char *err, size_t errlen) {
    int rc = sqlite3_prepare_v3(n->db, sql, -1, SQLITE_PREPARE_PERSISTENT, q, NULL);
    return rc == SQLITE_OK ? LAYA_OK : fail(n, rc, "preparing a statement", err, errlen);
}

static laya_status open_db(laya_notes *n, int create, char *err, size_t errlen) {
    int mem = !strcmp(n->path, IN_MEMORY);
    laya_status st;
    if (!mem && (st = sqlfile_check(&notes_file, n->path, create, err, errlen))) return st;
    int rc = sqlfile_open(n->path, NOTES_BUSY_MS, &n->db);
    if (rc != SQLITE_OK) return fail(n, rc, "opening", err, errlen);
    int no_fts5 = 0;
    rc = notes_tok_register(n->db, &no_fts5);
    if (no_fts5)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "the SQLite library in use (%s) was built without FTS5, which the notes index needs: install "
                       "Debian's libsqlite3-0 (it has FTS5) or a SQLite built with SQLITE_ENABLE_FTS5",
                       sqlite3_libversion());
    if (rc == SQLITE_OK) rc = notes_rank_register(n->db, &n->rank);
    if (rc != SQLITE_OK) return fail(n, rc, "registering the tokenizer and laya_bm25", err, errlen);
    /* A 16 MiB page cache and reads through mmap: the index of 10,000
     * notes (16 MiB) stays in memory between keystrokes. */
    if ((st = exec(n,
                   "PRAGMA secure_delete = ON; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16384; "
                   "PRAGMA mmap_size = 268435456;",
                   "configuring", err, errlen)))
        return st;
    int fresh;
    /* One read transaction, or another process creating the index between
     * the reads would make a new file look foreign. */
    if ((st = exec(n, "BEGIN", "reading the file header", err, errlen))) return st;
    st = check_schema(n, &fresh, err, errlen);
    if (st == LAYA_OK) st = exec(n, "COMMIT", "reading the file header", err, errlen);
    if (st) {
        rollback(n);
        return st;
    }
    if (!mem) {
        int wal = 0;
        if ((st = sqlfile_make_private(n->path, err, errlen))) return st;
        if ((rc = sqlfile_wal(n->db, NOTES_BUSY_MS, &wal)) != SQLITE_OK)
            return fail(n, rc, "switching to WAL", err, errlen);
        if (!wal)
            return err_set(err, errlen, LAYA_ERR_IO,
                           "notes index %s cannot use write-ahead logging (a network file system?): keep it on a "
                           "local disk", n->path);
    }
    if (fresh) {
        if ((st = exec(n, "BEGIN IMMEDIATE", "creating the index", err, errlen))) return st;
        /* Another process may have created it meanwhile. */
        if ((st = check_schema(n, &fresh, err, errlen))) goto undo;
        if (fresh) {
            char ver[96];
            snprintf(ver, sizeof ver, "PRAGMA application_id = %d; PRAGMA user_version = %d;", NOTES_APP_ID,
                     NOTES_SCHEMA);
            if ((st = exec(n, schema_sql, "creating the index", err, errlen)) ||
                (st = exec(n, ver, "creating the index", err, errlen)))
                goto undo;
        }
        if ((st = exec(n, "COMMIT", "creating the index", err, errlen))) goto undo;
    }
    if (!mem && (st = sqlfile_make_private(n->path, err, errlen))) return st;
    if ((st = prepare(n, &n->get, "SELECT id, mtime_ns, size, hash FROM files WHERE path = ?1", err, errlen)) ||
        (st = prepare(n, &n->add_file,
                      "INSERT INTO files(path, mtime_ns, size, hash, seen) VALUES(?1, ?2, ?3, ?4, ?5)", err, errlen)) ||
        (st = prepare(n, &n->set_file, "UPDATE files SET mtime_ns = ?2, size = ?3, hash = ?4, seen = ?5 WHERE id = ?1",
                      err, errlen)) ||
        (st = prepare(n, &n->touch, "UPDATE files SET seen = ?2 WHERE id = ?1", err, errlen)) ||
        (st = prepare(n, &n->del_file, "DELETE FROM files WHERE id = ?1", err, errlen)) ||
        (st = prepare(n, &n->add_note, "INSERT INTO notes(rowid, title, body) VALUES(?1, ?2, ?3)", err, errlen)) ||
        (st = prepare(n, &n->del_note, "DELETE FROM notes WHERE rowid = ?1", err, errlen)) ||
        (st = prepare(n, &n->count, "SELECT count(*) FROM files", err, errlen)) ||
        (st = prepare(n, &n->df, "SELECT df FROM terms WHERE term = ?1", err, errlen)) ||
        (st = prepare(n, &n->df_add,
                      "INSERT INTO terms(term, df) VALUES(?1, ?2) ON CONFLICT(term) DO UPDATE SET df = df + ?2", err,
                      errlen)) ||
        (st = prepare(n, &n->df_gone, "DELETE FROM terms WHERE term = ?1 AND df <= 0", err, errlen)) ||
        (st = prepare(n, &n->old_text, "SELECT title, body FROM notes WHERE rowid = ?1", err, errlen)) ||
        /* A search in two steps (notes_search_query): every matching note
         * scored, then the k best read by rowid for their snippets. */
        (st = prepare(n, &n->scan, "SELECT rowid, laya_bm25(notes) FROM notes WHERE notes MATCH ?1", err, errlen)) ||
        (st = prepare(n, &n->fetch,
                      "SELECT f.path, n.title, substr(n.body, 1, ?2) FROM files AS f JOIN notes AS n ON n.rowid = f.id "
                      "WHERE f.id = ?1",
                      err, errlen)) ||
        (st = prepare(n, &n->version, "PRAGMA data_version", err, errlen)) ||
        (st = prepare(n, &n->begin, "BEGIN", err, errlen)) || (st = prepare(n, &n->end, "COMMIT", err, errlen)))
        return st;
    if (!(n->stem = notes_stemmer_new(n->db)))
        return err_set(err, errlen, LAYA_ERR_INTERNAL, "notes index: FTS5's porter tokenizer is missing");
    n->stale = 1;
    return refresh(n, err, errlen);
undo:
    rollback(n);
    return st;
}

laya_status laya_notes_open(const char *path, int create, laya_notes **out, char *err, size_t errlen) {
    if (!out) return LAYA_ERR_ARG;
    *out = NULL;
    laya_notes *n = calloc(1, sizeof *n);
    if (!n) return LAYA_ERR_NOMEM;
    pthread_mutex_init(&n->mu, NULL);
    laya_status st = LAYA_OK;
    if (!path) st = laya_notes_default_path(n->path, sizeof n->path, err, errlen);
    else if (!*path) st = err_set(err, errlen, LAYA_ERR_ARG, "the notes index's path is empty");
    else if (strlen(path) >= sizeof n->path)
        st = err_set(err, errlen, LAYA_ERR_LIMIT, "the notes index's path is too long (%zu bytes)", strlen(path));
    else snprintf(n->path, sizeof n->path, "%s", path);
    if (st == LAYA_OK && sodium_init() < 0) st = err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to start");
    if (st == LAYA_OK) st = open_db(n, create, err, errlen);
    if (st != LAYA_OK) {
        laya_notes_free(n);
        return st;
    }
    *out = n;
    return LAYA_OK;
}

void laya_notes_free(laya_notes *n) {
    if (!n) return;
    sqlite3_stmt *q[] = {n->get, n->add_file, n->set_file, n->touch, n->del_file, n->add_note, n->del_note,
                         n->count,   n->df,       n->df_add,    n->df_gone, n->old_text, n->scan, n->fetch,
                         n->version, n->begin,    n->end};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) sqlite3_finalize(q[i]);
    notes_stemmer_free(n->stem);
    notes_lens_free(&n->rank.lens);
    sqlite3_close_v2(n->db);
    pthread_mutex_destroy(&n->mu);
    free(n);
}

const char *laya_notes_path(const laya_notes *n) { return n ? n->path : ""; }

/* ---- indexing ------------------------------------------------------------------- */

/* One run of laya_notes_index. */
typedef struct {
    laya_notes *n;
    laya_notes_report fn;
    void *ctx;
    laya_notes_summary sum;
    int64_t run;        /* this run's stamp in files.seen */
    int batch;          /* files written in the open transaction */
    char *unreadable[MAX_UNREADABLE];
    int n_unreadable, unreadable_lost;   /* lost: more than MAX_UNREADABLE (then nothing is removed) */
    char *err;
    size_t errlen;
} indexer;

static void report(indexer *x, laya_note_event ev, const char *path, const char *reason) {
    switch (ev) {
    case LAYA_NOTE_ADDED: x->sum.added++; break;
    case LAYA_NOTE_UPDATED: x->sum.updated++; break;
    case LAYA_NOTE_UNCHANGED: x->sum.unchanged++; break;
    case LAYA_NOTE_REMOVED: x->sum.removed++; break;
    case LAYA_NOTE_SKIPPED: x->sum.skipped++; break;
    }
    if (x->fn) x->fn(x->ctx, ev, path, reason);
}

/* Counts a written file; every NOTES_BATCH of them the transaction commits
 * and a new one begins (what a kill can lose is at most one batch). */
static laya_status wrote(indexer *x) {
    if (++x->batch < NOTES_BATCH) return LAYA_OK;
    x->batch = 0;
    laya_status st = exec(x->n, "COMMIT", "saving a batch", x->err, x->errlen);
    return st ? st : exec(x->n, "BEGIN IMMEDIATE", "starting a batch", x->err, x->errlen);
}

static int is_note_name(const char *name) {
    size_t l = strlen(name);
    return (l > 3 && !strcmp(name + l - 3, ".md")) || (l > 9 && !strcmp(name + l - 9, ".markdown"));
}

/* The title of a note: its first line that starts with "# ", else its file
 * name without the extension; cut at a character to fit, into t. */
static void note_title(const char *text, size_t len, const char *path, char *t, size_t tcap) {
    const char *a = NULL;
    size_t al = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len;
        if (e - i >= 2 && text[i] == '#' && text[i + 1] == ' ') {
            a = text + i + 2;
            al = e - i - 2;
            while (al && (a[al - 1] == '\r' || a[al - 1] == ' ' || a[al - 1] == '#' || a[al - 1] == '\t')) al--;
            while (al && (*a == ' ' || *a == '\t')) a++, al--;
            if (al) break;
        }
        i = e + 1;
    }
    if (!al) {
        const char *base = strrchr(path, '/');
        a = base ? base + 1 : path;
        const char *dot = strrchr(a, '.');
        al = dot && dot > a ? (size_t)(dot - a) : strlen(a);
    }
    if (al >= tcap) al = tcap - 1;
    while (al && !utf8_valid((const uint8_t *)a, al)) al--;
    memcpy(t, a, al);
    t[al] = 0;
}

/* The offset of the first byte of s[0..n) that is not part of valid UTF-8. */
static size_t first_invalid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n && utf8_cp_at(s, n, i) != UTF8_NONE) i = utf8_next(s, n, i);
    return i;
}

/* Reads path (size bytes per stat) into *buf (malloc'd, owned by the
 * caller) or says in why (why[0] != 0) why it is skipped. */
static laya_status read_note(const char *path, int64_t size, char **buf, size_t *len, char *why, size_t whylen) {
    *buf = NULL;
    why[0] = 0;
    if (size > LAYA_NOTES_MAX_FILE) {
        snprintf(why, whylen, "larger than %d MiB (%" PRId64 " bytes)", LAYA_NOTES_MAX_FILE >> 20, size);
        return LAYA_OK;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(why, whylen, "cannot be read: %s", strerror(errno));
        return LAYA_OK;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(why, whylen, "not a regular file");
        return LAYA_OK;
    }
    /* One byte more than allowed: a file that grew since stat is caught. */
    char *b = malloc((size_t)LAYA_NOTES_MAX_FILE + 1);
    if (!b) {
        close(fd);
        return LAYA_ERR_NOMEM;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, b + got, (size_t)LAYA_NOTES_MAX_FILE + 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(why, whylen, "cannot be read: %s", strerror(errno));
            break;
        }
        if (r == 0 || (got += (size_t)r) > (size_t)LAYA_NOTES_MAX_FILE) break;
    }
    close(fd);
    if (!why[0] && got > (size_t)LAYA_NOTES_MAX_FILE)
        snprintf(why, whylen, "larger than %d MiB", LAYA_NOTES_MAX_FILE >> 20);
    const char *nul = why[0] ? NULL : memchr(b, 0, got);
    if (nul) snprintf(why, whylen, "a binary file (a NUL byte at offset %zu)", (size_t)(nul - b));
    if (!why[0] && !utf8_valid((const uint8_t *)b, got))
        snprintf(why, whylen, "not valid UTF-8 (at byte %zu): convert it with iconv", first_invalid((uint8_t *)b, got));
    if (why[0]) {
        free(b);
        return LAYA_OK;
    }
    *buf = b;
    *len = got;
    return LAYA_OK;
}

/* ---- document frequencies (the terms table) ---- */

typedef struct {
    char **t;
    size_t n, cap;
    int oom;
} tokset;

static int tok_collect(void *ctx, const char *tok, int len, int start, int end) {
    (void)start, (void)end;
    tokset *s = ctx;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        char **nt = realloc(s->t, cap * sizeof *nt);
        if (!nt) return s->oom = 1;
        s->t = nt;
        s->cap = cap;
    }
    if (!(s->t[s->n] = strndup(tok, (size_t)len))) return s->oom = 1;
    s->n++;
    return 0;
}

static int cmp_pstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Adds delta (+1 or -1) to the document frequency of each distinct token
 * of a note's title and body. */
static laya_status count_terms(indexer *x, const char *title, const char *body, size_t blen, int delta) {
    laya_notes *n = x->n;
    tokset s = {0};
    notes_stem_each(n->stem, title, strlen(title), tok_collect, &s);
    if (!s.oom) notes_stem_each(n->stem, body, blen, tok_collect, &s);
    laya_status st = s.oom ? err_set(x->err, x->errlen, LAYA_ERR_NOMEM, "out of memory counting terms") : LAYA_OK;
    if (s.n) qsort(s.t, s.n, sizeof *s.t, cmp_pstr);
    for (size_t i = 0; i < s.n && st == LAYA_OK; i++) {
        if (i && !strcmp(s.t[i], s.t[i - 1])) continue;
        sqlite3_bind_text(n->df_add, 1, s.t[i], -1, SQLITE_STATIC);
        sqlite3_bind_int(n->df_add, 2, delta);
        st = run(n, n->df_add, "counting terms", x->err, x->errlen);
        if (st == LAYA_OK && delta < 0) {
            sqlite3_bind_text(n->df_gone, 1, s.t[i], -1, SQLITE_STATIC);
            st = run(n, n->df_gone, "counting terms", x->err, x->errlen);
        }
    }
    for (size_t i = 0; i < s.n; i++) free(s.t[i]);
    free(s.t);
    return st;
}

/* Takes the indexed note id out of the counts and of the full-text index. */
static laya_status unindex(indexer *x, int64_t id) {
    laya_notes *n = x->n;
    sqlite3_bind_int64(n->old_text, 1, id);
    int rc = sqlite3_step(n->old_text);
    laya_status st = LAYA_OK;
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(n->old_text, 0);
        const char *b = (const char *)sqlite3_column_text(n->old_text, 1);
        size_t bl = (size_t)sqlite3_column_bytes(n->old_text, 1);
        char *tc = strdup(t ? t : ""), *bc = malloc(bl + 1);
        if (tc && bc) {
            memcpy(bc, b ? b : "", b ? bl : 0);
            bc[b ? bl : 0] = 0;
        }
        sqlite3_reset(n->old_text);
        st = tc && bc ? count_terms(x, tc, bc, b ? bl : 0, -1)
                      : err_set(x->err, x->errlen, LAYA_ERR_NOMEM, "out of memory removing a note");
        free(tc);
        free(bc);
    } else {
        if (rc != SQLITE_DONE) st = fail(n, rc, "reading a note's old text", x->err, x->errlen);
        sqlite3_reset(n->old_text);
    }
    sqlite3_clear_bindings(n->old_text);
    if (st != LAYA_OK) return st;
    sqlite3_bind_int64(n->del_note, 1, id);
    return run(n, n->del_note, "removing a note's old text", x->err, x->errlen);
}

static laya_status index_file(indexer *x, const char *path, const struct stat *sb) {
    laya_notes *n = x->n;
    int64_t mtime = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec, size = (int64_t)sb->st_size;
    int64_t id = 0, old_mtime = -1, old_size = -1;
    uint8_t old_hash[HASH_BYTES] = {0}, hash[HASH_BYTES];
    sqlite3_bind_text(n->get, 1, path, -1, SQLITE_STATIC);
    int rc = sqlite3_step(n->get);
    if (rc == SQLITE_ROW) {
        id = sqlite3_column_int64(n->get, 0);
        old_mtime = sqlite3_column_int64(n->get, 1);
        old_size = sqlite3_column_int64(n->get, 2);
        if (sqlite3_column_bytes(n->get, 3) == HASH_BYTES) memcpy(old_hash, sqlite3_column_blob(n->get, 3), HASH_BYTES);
    }
    sqlite3_reset(n->get);
    sqlite3_clear_bindings(n->get);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(n, rc, "looking a note up", x->err, x->errlen);
    laya_status st;
    if (id && old_mtime == mtime && old_size == size) {
        sqlite3_bind_int64(n->touch, 1, id);
        sqlite3_bind_int64(n->touch, 2, x->run);
        if ((st = run(n, n->touch, "marking a note seen", x->err, x->errlen))) return st;
        report(x, LAYA_NOTE_UNCHANGED, path, NULL);
        return wrote(x);
    }
    char *text, why[160];
    size_t len = 0;
    if ((st = read_note(path, size, &text, &len, why, sizeof why)))
        return err_set(x->err, x->errlen, st, "out of memory reading %s", path);
    if (!text) {
        /* Not seen this run: a note indexed before is removed by the sweep. */
        report(x, LAYA_NOTE_SKIPPED, path, why);
        return LAYA_OK;
    }
    crypto_generichash(hash, sizeof hash, (const uint8_t *)text, len, NULL, 0);
    laya_note_event ev;
    if (id && !memcmp(hash, old_hash, sizeof hash)) {
        ev = LAYA_NOTE_UNCHANGED;
    } else if (id) {
        ev = LAYA_NOTE_UPDATED;
        if ((st = unindex(x, id))) goto out;
    } else {
        ev = LAYA_NOTE_ADDED;
        sqlite3_bind_text(n->add_file, 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_int64(n->add_file, 2, mtime);
        sqlite3_bind_int64(n->add_file, 3, size);
        sqlite3_bind_blob(n->add_file, 4, hash, sizeof hash, SQLITE_STATIC);
        sqlite3_bind_int64(n->add_file, 5, x->run);
        if ((st = run(n, n->add_file, "adding a note", x->err, x->errlen))) goto out;
        id = sqlite3_last_insert_rowid(n->db);
    }
    if (ev != LAYA_NOTE_ADDED) {
        sqlite3_bind_int64(n->set_file, 1, id);
        sqlite3_bind_int64(n->set_file, 2, mtime);
        sqlite3_bind_int64(n->set_file, 3, size);
        sqlite3_bind_blob(n->set_file, 4, hash, sizeof hash, SQLITE_STATIC);
        sqlite3_bind_int64(n->set_file, 5, x->run);
        if ((st = run(n, n->set_file, "updating a note", x->err, x->errlen))) goto out;
    }
    if (ev != LAYA_NOTE_UNCHANGED) {
        char title[LAYA_NOTE_TITLE];
        note_title(text, len, path, title, sizeof title);
        sqlite3_bind_int64(n->add_note, 1, id);
        sqlite3_bind_text(n->add_note, 2, title, -1, SQLITE_STATIC);
        sqlite3_bind_text(n->add_note, 3, text, (int)len, SQLITE_STATIC);
        if ((st = run(n, n->add_note, "indexing a note's text", x->err, x->errlen)) ||
            (st = count_terms(x, title, text, len, +1)))
            goto out;
    }
    report(x, ev, path, NULL);
    st = wrote(x);
out:
    free(text);
    return st;
}

static laya_status walk(indexer *x, const char *dir, int depth) {
    if (depth > MAX_DEPTH) {
        report(x, LAYA_NOTE_SKIPPED, dir, "folders nested too deep (more than 64): not read");
        return LAYA_OK;
    }
    DIR *d = opendir(dir);
    if (!d) {
        char why[160];
        snprintf(why, sizeof why, "folder cannot be read: %s (its notes are kept as they were)", strerror(errno));
        if (x->n_unreadable < MAX_UNREADABLE) x->unreadable[x->n_unreadable++] = strdup(dir);
        else x->unreadable_lost = 1;
        report(x, LAYA_NOTE_SKIPPED, dir, why);
        return LAYA_OK;
    }
    laya_status st = LAYA_OK;
    struct dirent *e;
    char path[NOTES_PATH_MAX];
    while (st == LAYA_OK && (e = readdir(d))) {
        /* Hidden entries (.git, .obsidian, editors' swap files) are no notes. */
        if (e->d_name[0] == '.') continue;
        int w = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (w < 0 || (size_t)w >= sizeof path) {
            report(x, LAYA_NOTE_SKIPPED, dir, "a name inside is too long for a path: skipped");
            continue;
        }
        if (lstat(path, &sb) != 0) {
            if (is_note_name(e->d_name)) report(x, LAYA_NOTE_SKIPPED, path, strerror(errno));
            continue;
        }
        if (S_ISDIR(sb.st_mode)) st = walk(x, path, depth + 1);
        else if (!is_note_name(e->d_name)) continue;
        else if (S_ISLNK(sb.st_mode)) report(x, LAYA_NOTE_SKIPPED, path, "a symbolic link (not followed)");
        else if (!S_ISREG(sb.st_mode)) report(x, LAYA_NOTE_SKIPPED, path, "not a regular file");
        else st = index_file(x, path, &sb);
    }
    closedir(d);
    return st;
}

static int under(const char *path, const char *dir) {
    size_t l = strlen(dir);
    return !strncmp(path, dir, l) && path[l] == '/';
}

/* Removes the notes under root that this run did not see, except those
 * under a folder that could not be read. */
static laya_status sweep(indexer *x, const char *root) {
    laya_notes *n = x->n;
    if (x->unreadable_lost) return LAYA_OK;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(n->db, "SELECT id, path FROM files WHERE seen <> ?1 AND substr(path, 1, ?3) = ?2",
                                -1, &q, NULL);
    if (rc != SQLITE_OK) return fail(n, rc, "finding removed notes", x->err, x->errlen);
    char prefix[NOTES_PATH_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s/", root);
    sqlite3_bind_int64(q, 1, x->run);
    sqlite3_bind_text(q, 2, prefix, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, (int)strlen(prefix));
    laya_status st = LAYA_OK;
    int64_t *ids = NULL;
    char **paths = NULL;
    size_t cnt = 0, cap = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(q, 1);
        int keep = 0;
        for (int i = 0; i < x->n_unreadable && !keep; i++) keep = x->unreadable[i] && under(p, x->unreadable[i]);
        if (keep) continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 64;
            int64_t *ni = realloc(ids, cap * sizeof *ids);
            if (ni) ids = ni;
            char **np = realloc(paths, cap * sizeof *paths);
            if (np) paths = np;
            if (!ni || !np) {
                st = LAYA_ERR_NOMEM;
                break;
            }
        }
        ids[cnt] = sqlite3_column_int64(q, 0);
        if (!(paths[cnt] = strdup(p))) {
            st = LAYA_ERR_NOMEM;
            break;
        }
        cnt++;
    }
    if (st == LAYA_OK && rc != SQLITE_DONE) st = fail(n, rc, "finding removed notes", x->err, x->errlen);
    sqlite3_finalize(q);
    if (st == LAYA_ERR_NOMEM) err_set(x->err, x->errlen, st, "out of memory finding removed notes");
    for (size_t i = 0; i < cnt && st == LAYA_OK; i++) {
        sqlite3_bind_int64(n->del_file, 1, ids[i]);
        if ((st = unindex(x, ids[i])) ||
            (st = run(n, n->del_file, "removing a note", x->err, x->errlen)))
            break;
        report(x, LAYA_NOTE_REMOVED, paths[i], NULL);
        st = wrote(x);
    }
    for (size_t i = 0; i < cnt; i++) free(paths[i]);
    free(paths);
    free(ids);
    return st;
}

/* Merges the full-text index into one segment when a run that changed it
 * left more than NOTES_SEGMENTS_MAX: a query looks each of its terms up in
 * every segment, so their number multiplies its fixed cost (docs/DESIGN.md,
 * "Notes"). Each segment has rows in notes_idx. Lock held. */
static laya_status compact(laya_notes *n, char *err, size_t errlen) {
    int64_t segments = 0;
    laya_status st = query_int(n, "SELECT count(DISTINCT segid) FROM notes_idx", &segments, "counting the index's "
                               "segments", err, errlen);
    if (st == LAYA_OK && segments > NOTES_SEGMENTS_MAX)
        st = exec(n, "INSERT INTO notes(notes) VALUES('optimize')", "merging the index's segments", err, errlen);
    return st;
}

laya_status laya_notes_index(laya_notes *n, const char *dir, laya_notes_report fn, void *ctx,
                             laya_notes_summary *sum, char *err, size_t errlen) {
    if (sum) memset(sum, 0, sizeof *sum);
    if (!n || !dir) return LAYA_ERR_ARG;
    char root[PATH_MAX];
    struct stat sb;
    if (!realpath(dir, root) || stat(root, &sb) != 0)
        return err_set(err, errlen, LAYA_ERR_IO, "cannot index %s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return err_set(err, errlen, LAYA_ERR_ARG, "cannot index %s: not a folder", dir);
    if (strlen(root) + 2 >= NOTES_PATH_MAX) return err_set(err, errlen, LAYA_ERR_LIMIT, "folder path too long: %s", dir);
    if (!strcmp(root, "/"))
        return err_set(err, errlen, LAYA_ERR_ARG, "refusing to index the whole file system (/): pass your notes folder");
    indexer x = {.n = n, .fn = fn, .ctx = ctx, .err = err, .errlen = errlen};
    pthread_mutex_lock(&n->mu);
    laya_status st = exec(n, "BEGIN IMMEDIATE", "starting to index", err, errlen);
    if (st == LAYA_OK) st = query_int(n, "SELECT coalesce(max(seen), 0) + 1 FROM files", &x.run, "starting", err, errlen);
    if (st == LAYA_OK) st = walk(&x, root, 0);
    if (st == LAYA_OK) st = sweep(&x, root);
    if (st == LAYA_OK) st = exec(n, "COMMIT", "saving the index", err, errlen);
    if (st != LAYA_OK) rollback(n);
    if (st == LAYA_OK && x.sum.added + x.sum.updated + x.sum.removed > 0) st = compact(n, err, errlen);
    int64_t total = 0;
    if (st == LAYA_OK) st = query_int(n, "SELECT count(*) FROM files", &total, "counting notes", err, errlen);
    /* The next search's state is read now, not on its keystroke. */
    n->stale = 1;
    if (st == LAYA_OK) st = refresh(n, err, errlen);
    pthread_mutex_unlock(&n->mu);
    for (int i = 0; i < x.n_unreadable; i++) free(x.unreadable[i]);
    x.sum.notes = total;
    if (sum) *sum = x.sum;
    return st;
}

/* ---- searching ------------------------------------------------------------------ */

/* Copies s into d (cap bytes), blanks for line breaks and tabs, cut at a
 * character boundary. */
static void copy_text(char *d, size_t cap, const char *s) {
    size_t l = s ? strlen(s) : 0;
    if (l >= cap) l = cap - 1;
    while (l && !utf8_valid((const uint8_t *)s, l)) l--;
    for (size_t i = 0; i < l; i++) d[i] = s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i];
    d[l] = 0;
}

/* The document frequency of the index form tok[0..len): from the cache,
 * else the terms table (0 when no note holds it). Lock held. */
static int64_t doc_freq(laya_notes *n, const char *tok, size_t len) {
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)tok[i]) * 16777619u;
    df_slot *c = &n->dfc[h & (DF_CACHE - 1)];
    if (len < DF_KEY && c->stem[0] && !c->stem[len] && !memcmp(c->stem, tok, len)) return c->df;
    int64_t df = 0;
    sqlite3_bind_text(n->df, 1, tok, (int)len, SQLITE_STATIC);
    if (sqlite3_step(n->df) == SQLITE_ROW) df = sqlite3_column_int64(n->df, 0);
    sqlite3_reset(n->df);
    sqlite3_clear_bindings(n->df);
    if (len < DF_KEY) {
        memcpy(c->stem, tok, len);
        c->stem[len] = 0;
        c->df = df;
    }
    return df;
}

/* Picks the terms of the query q (notes_query's `"t" OR "t"*...`) that say
 * most about which note is related at a bounded cost, into n->rank (with
 * their idf) and the FTS5 query d. A term held by more than
 * max(NOTES_DF_MIN, NOTES_DF_FRAC of the notes) goes: its bm25 weight is
 * near zero and every note holding it would be scored. Of the rest, the
 * rarest are kept while the notes they hold add up to at most
 * NOTES_POSTINGS (the rarest one always): each note a term holds is
 * scored, so this bounds the query's cost whatever the number of notes.
 * Prefix terms (a lone CJK character in a search box) are kept and not
 * counted. Lock held. Returns the terms kept. */
typedef struct {
    const char *p;   /* `"term"` or `"term"*` in q */
    size_t len;
    notes_qterm t;
} pick;

static int cmp_df(const void *a, const void *b) {
    int64_t x = ((const pick *)a)->t.df, y = ((const pick *)b)->t.df;
    return (x > y) - (x < y);
}

static int pick_terms(laya_notes *n, const char *q, char *d, size_t cap) {
    int64_t total = (int64_t)n->rank.lens.n, limit = (int64_t)(NOTES_DF_FRAC * (double)total);
    if (limit < NOTES_DF_MIN) limit = NOTES_DF_MIN;
    pick t[NOTES_MAX_TERMS];
    int nt = 0;
    for (const char *p = q; *p == '"' && nt < NOTES_MAX_TERMS;) {
        const char *e = strchr(p + 1, '"');
        if (!e) break;
        int prefix = e[1] == '*';
        size_t len = (size_t)(e - p) + 1 + (size_t)prefix, tl = (size_t)(e - p - 1);
        pick *k = &t[nt];
        if (prefix) {
            /* Asked as typed (a CJK character): FTS5 matches tokens that start with it. */
            if (tl >= sizeof k->t.stem) tl = 0;
            memcpy(k->t.stem, p + 1, tl);
            k->t.stem[tl] = 0;
        } else {
            tl = notes_stem(n->stem, p + 1, tl, k->t.stem, sizeof k->t.stem);
        }
        int64_t df = tl && !prefix ? doc_freq(n, k->t.stem, tl) : 0;
        if (tl && (prefix || (df > 0 && df <= limit))) {
            k->p = p;
            k->len = len;
            k->t.stem_len = (int)tl;
            k->t.prefix = prefix;
            k->t.df = df;
            nt++;
        }
        p += len;
        if (!strncmp(p, " OR ", 4)) p += 4;
    }
    qsort(t, (size_t)nt, sizeof t[0], cmp_df);
    size_t o = 0;
    int kept = 0;
    int64_t postings = 0;
    d[0] = 0;
    for (int i = 0; i < nt; i++) {
        if (kept && postings + t[i].t.df > NOTES_POSTINGS) break;
        if (o + t[i].len + 5 >= cap) break;
        postings += t[i].t.df;
        if (kept) memcpy(d + o, " OR ", 4), o += 4;
        memcpy(d + o, t[i].p, t[i].len);
        o += t[i].len;
        d[o] = 0;
        notes_qterm *r = &n->rank.t[kept++];
        *r = t[i].t;
        /* A prefix's notes are counted by laya_bm25 on the first row. */
        if (r->prefix) r->df = -1;
        else r->idf = notes_idf(total, r->df);
    }
    n->rank.nt = kept;
    return kept;
}

/* One of the best notes while the scan runs. */
typedef struct {
    int64_t id;
    double score;
} best;

static int better(const void *x, const void *y) { return ((const best *)x)->score < ((const best *)y)->score; }

laya_status notes_search_query(laya_notes *n, const char *q0, int k, laya_note *out, int *n_out, char *err,
                               size_t errlen) {
    *n_out = 0;
    if (!q0[0] || k <= 0) return LAYA_OK;
    if (k > LAYA_NOTES_MAX_K) k = LAYA_NOTES_MAX_K;
    pthread_mutex_lock(&n->mu);
    /* One read transaction for the whole search: each statement outside one
     * would take and drop WAL's read lock itself (2-3 us each, a dozen of
     * them), and all of them see the same state of the file. */
    laya_status st = run(n, n->begin, "starting a search", err, errlen);
    char q[NOTES_MAX_QUERY];
    if (st == LAYA_OK) st = refresh(n, err, errlen);
    if (st != LAYA_OK || !pick_terms(n, q0, q, sizeof q)) {
        rollback(n);
        pthread_mutex_unlock(&n->mu);
        return st;
    }
    /* Every matching note scored (laya_bm25), the k best kept... */
    best top[LAYA_NOTES_MAX_K];
    int got = 0, rc;
    sqlite3_bind_text(n->scan, 1, q, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(n->scan)) == SQLITE_ROW) {
        best b = {sqlite3_column_int64(n->scan, 0), sqlite3_column_double(n->scan, 1)};
        topk_insert(top, sizeof top[0], &got, k, &b, better);
    }
    if (rc != SQLITE_DONE) st = fail(n, rc, "searching", err, errlen);
    sqlite3_reset(n->scan);
    sqlite3_clear_bindings(n->scan);
    /* ... and only they read, with a snippet made here. */
    int shown = 0;
    for (int i = 0; i < got && st == LAYA_OK; i++) {
        sqlite3_bind_int64(n->fetch, 1, top[i].id);
        sqlite3_bind_int(n->fetch, 2, SNIP_FETCH);
        if ((rc = sqlite3_step(n->fetch)) == SQLITE_ROW) {
            laya_note *o = &out[shown++];
            char snip[LAYA_NOTE_SNIPPET];
            const char *body = (const char *)sqlite3_column_text(n->fetch, 2);
            notes_snippet(&n->rank, n->stem, body ? body : "", (size_t)sqlite3_column_bytes(n->fetch, 2), snip,
                          sizeof snip);
            copy_text(o->path, sizeof o->path, (const char *)sqlite3_column_text(n->fetch, 0));
            copy_text(o->title, sizeof o->title, (const char *)sqlite3_column_text(n->fetch, 1));
            copy_text(o->snippet, sizeof o->snippet, snip);
            o->score = top[i].score;
        } else if (rc != SQLITE_DONE) {
            st = fail(n, rc, "reading a note", err, errlen);
        }
        sqlite3_reset(n->fetch);
        sqlite3_clear_bindings(n->fetch);
    }
    if (st == LAYA_OK) st = run(n, n->end, "ending a search", err, errlen);
    rollback(n);
    pthread_mutex_unlock(&n->mu);
    *n_out = st == LAYA_OK ? shown : 0;
    return st;
}

laya_status laya_notes_search(laya_notes *n, const char *query, size_t len, int k, laya_note *out, int *n_out,
                              char *err, size_t errlen) {
    if (n_out) *n_out = 0;
    if (!n || (!query && len) || !out || !n_out || k < 0 || k > LAYA_NOTES_MAX_K) return LAYA_ERR_ARG;
    char q[NOTES_MAX_QUERY];
    if (!notes_query(query, len, NOTES_TERMS_SEARCH, q, sizeof q)) return LAYA_OK;
    return notes_search_query(n, q, k, out, n_out, err, errlen);
}

laya_status laya_notes_check(laya_notes *n, char *err, size_t errlen) {
    if (!n) return LAYA_ERR_ARG;
    pthread_mutex_lock(&n->mu);
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(n->db, "PRAGMA integrity_check", -1, &q, NULL);
    laya_status st = LAYA_OK;
    if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(q, 0);
        if (!r || strcmp(r, "ok"))
            st = err_set(err, errlen, LAYA_ERR_FORMAT, "notes index %s is damaged: %s", n->path, r ? r : "?");
    } else {
        st = fail(n, rc, "checking", err, errlen);
    }
    sqlite3_finalize(q);
    if (st == LAYA_OK) {
        int64_t orphans = 0;
        st = exec(n, "INSERT INTO notes(notes, rank) VALUES('integrity-check', 1)", "checking the full-text index", err,
                  errlen);
        if (st == LAYA_OK)
            st = query_int(n,
                           "SELECT (SELECT count(*) FROM files WHERE id NOT IN (SELECT rowid FROM notes)) + "
                           "(SELECT count(*) FROM notes WHERE rowid NOT IN (SELECT id FROM files))",
                           &orphans, "checking", err, errlen);
        if (st == LAYA_OK && orphans)
            st = err_set(err, errlen, LAYA_ERR_FORMAT, "notes index %s: %" PRId64 " notes and files out of step",
                         n->path, orphans);
    }
    pthread_mutex_unlock(&n->mu);
    return st;
}
