/* learn_store.c - the SQLite store of committed text (learn_store.h). */
#include "learn/learn_store.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "learn/learn_fb.h"
#include "util/err.h"
#include "util/sqlite_file.h"
#include "util/utf8.h"

/* The WAL-index header (https://www.sqlite.org/walformat.html, "The
 * WAL-Index Header"): the first 48 bytes of the -shm file, which every
 * writer rewrites when it commits (iChange at byte 8 counts transactions;
 * mxFrame, the salts and checksums follow), format version 3007000 at byte
 * 0. WALINDEX_PGSZ is SQLite's shm region size. */
enum { WAL_HDR_WORDS = 12, WAL_INDEX_VERSION = 3007000, WALINDEX_PGSZ = 32768 };

struct learn_store {
    sqlite3 *db;
    sqlite3_stmt *add, *incognito, *generation, *data_version, *rows, *max_id;
    sqlite3_stmt *fb_clock, *fb_get, *fb_put;
    int64_t cap, fb_cap;
    int64_t fb_removed;   /* feedback rows the last forget removed */
    /* An upper bound on the row count: rows_known rows when the largest id
     * was id_known; every later row takes a larger id (ids are never
     * reused), so rows <= rows_known + (max id - id_known). -1: unknown. */
    int64_t rows_known, id_known;
    int64_t data_version_seen;
    /* The WAL-index header in this connection's mapping of the -shm file
     * (NULL: none, e.g. ":memory:"), and the copy seen last. */
    const volatile uint32_t *wal_hdr;
    uint32_t wal_hdr_seen[WAL_HDR_WORDS];
    char path[LEARN_STORE_PATH_MAX];
};

static void map_wal_header(learn_store *s);

/* ---- errors ---------------------------------------------------------------- */

/* Maps a SQLite failure while `doing` to a status and a sentence with a
 * hint. The message is read from the connection, so call it right after the
 * failing call. */
static laya_status fail(learn_store *s, int rc, const char *doing, char *err, size_t errlen) {
    const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return err_set(err, errlen, LAYA_ERR_IO,
                       "memory store %s is locked by another process (waited %d ms while %s): try again; if it "
                       "persists, look for a stuck laya process",
                       s->path, LEARN_STORE_BUSY_MS, doing);
    case SQLITE_NOTADB:
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "memory store %s is not a SQLite database (damaged, or another kind of file): move it "
                       "away and Laya starts an empty one there",
                       s->path);
    case SQLITE_CORRUPT:
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "memory store %s is damaged (%s while %s): move it away (the sqlite3 tool's .recover "
                       "may save its text) and Laya starts an empty one there",
                       s->path, msg, doing);
    case SQLITE_NOMEM: return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory while %s", doing);
    case SQLITE_FULL:
        return err_set(err, errlen, LAYA_ERR_IO, "memory store %s: the disk is full (while %s)", s->path, doing);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
        return err_set(err, errlen, LAYA_ERR_IO, "memory store %s: %s while %s (check the file and its folder)",
                       s->path, msg, doing);
    case SQLITE_MISUSE: return err_set(err, errlen, LAYA_ERR_INTERNAL, "memory store: %s while %s", msg, doing);
    default:
        return err_set(err, errlen, LAYA_ERR_FORMAT, "memory store %s: %s while %s", s->path, msg, doing);
    }
}

static laya_status exec(learn_store *s, const char *sql, const char *doing, char *err, size_t errlen) {
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? LAYA_OK : fail(s, rc, doing, err, errlen);
}

static void rollback(learn_store *s) {
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

static laya_status commit(learn_store *s, const char *doing, char *err, size_t errlen) {
    laya_status st = exec(s, "COMMIT", doing, err, errlen);
    if (st != LAYA_OK) rollback(s);
    return st;
}

/* The single integer a statement yields (0 for no row); resets it. */
static laya_status step_int(learn_store *s, sqlite3_stmt *q, int64_t *v, const char *doing, char *err,
                            size_t errlen) {
    int rc = sqlite3_step(q);
    *v = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    laya_status st = rc == SQLITE_ROW || rc == SQLITE_DONE ? LAYA_OK : fail(s, rc, doing, err, errlen);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return st;
}

static laya_status query_int(learn_store *s, const char *sql, int64_t *v, const char *doing, char *err,
                             size_t errlen) {
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
    if (rc != SQLITE_OK) return fail(s, rc, doing, err, errlen);
    laya_status st = step_int(s, q, v, doing, err, errlen);
    sqlite3_finalize(q);
    return st;
}

/* ---- words ------------------------------------------------------------------ */

enum { CH_OTHER = UTF8_WORD_OTHER, CH_WORD = UTF8_WORD_CHAR, CH_CJK = UTF8_WORD_CJK };

/* The class of the character at s[i..n) (i < n); a byte that does not
 * start valid UTF-8 is CH_OTHER. */
static int class_at(const uint8_t *s, size_t n, size_t i) {
    return utf8_word_class(utf8_cp_at(s, n, i));
}

static int fold(uint8_t b) { return b >= 'A' && b <= 'Z' ? b + 32 : b; }

int learn_word_in(const uint8_t *text, size_t n, const uint8_t *word, size_t wn) {
    if (!wn || wn > n) return 0;
    int need_before = class_at(word, wn, 0) == CH_WORD;
    int need_after = class_at(word, wn, utf8_prev(word, wn)) == CH_WORD;
    int w0 = fold(word[0]);
    for (size_t p = 0; p + wn <= n; p++) {
        if (fold(text[p]) != w0) continue;
        size_t j = 1;
        while (j < wn && fold(text[p + j]) == fold(word[j])) j++;
        if (j < wn) continue;
        if (need_before && p > 0 && class_at(text, n, utf8_prev(text, p)) == CH_WORD) continue;
        if (need_after && p + wn < n && class_at(text, n, p + wn) == CH_WORD) continue;
        return 1;
    }
    return 0;
}

/* SQL laya_has_word(text, word): learn_word_in over the two values' bytes.
 * Registered DIRECTONLY: only our own statements, never a trigger or view
 * in a hostile file, can call it. */
static void sql_has_word(sqlite3_context *cx, int argc, sqlite3_value **argv) {
    const uint8_t *t = sqlite3_value_blob(argv[0]), *w = sqlite3_value_blob(argv[1]);
    size_t tn = (size_t)sqlite3_value_bytes(argv[0]), wn = (size_t)sqlite3_value_bytes(argv[1]);
    sqlite3_result_int(cx, t && w && learn_word_in(t, tn, w, wn));
}

/* SQL laya_fb_has_word(ctx, text, word): the word in the context, in the
 * text shown, or across the two (a context "the k" and a text "ernel"
 * hold "kernel"). DIRECTONLY as laya_has_word. */
static void sql_fb_has_word(sqlite3_context *cx, int argc, sqlite3_value **argv) {
    const uint8_t *k = sqlite3_value_blob(argv[0]), *t = sqlite3_value_blob(argv[1]), *w = sqlite3_value_blob(argv[2]);
    size_t kn = (size_t)sqlite3_value_bytes(argv[0]), tn = (size_t)sqlite3_value_bytes(argv[1]);
    size_t wn = (size_t)sqlite3_value_bytes(argv[2]);
    if (!w) {
        sqlite3_result_int(cx, 0);
        return;
    }
    if ((k && learn_word_in(k, kn, w, wn)) || (t && learn_word_in(t, tn, w, wn))) {
        sqlite3_result_int(cx, 1);
        return;
    }
    uint8_t *both = sqlite3_malloc64(kn + tn + 1);
    if (!both) {
        sqlite3_result_error_nomem(cx);
        return;
    }
    if (kn) memcpy(both, k, kn);
    if (tn) memcpy(both + kn, t, tn);
    sqlite3_result_int(cx, learn_word_in(both, kn + tn, w, wn));
    sqlite3_free(both);
}

/* SQL laya_fb_in_text(ctx, text, forgotten): 1 iff the context or the text
 * shown (either non-empty) occurs in the forgotten text, byte for byte: the
 * row may be a trace of it (a suggestion the memory made from it, or typed
 * right after part of it). Over-matches on purpose (a short suggestion such
 * as "the " occurs in most lines): a forget must leave no trace, and a
 * feedback row costs little to learn again. memmem, not SQLite's instr(),
 * which compares at every byte (a 64 KB text against 32,768 rows). DIRECTONLY
 * as laya_has_word. */
static void sql_fb_in_text(sqlite3_context *cx, int argc, sqlite3_value **argv) {
    const uint8_t *k = sqlite3_value_blob(argv[0]), *t = sqlite3_value_blob(argv[1]), *f = sqlite3_value_blob(argv[2]);
    size_t kn = (size_t)sqlite3_value_bytes(argv[0]), tn = (size_t)sqlite3_value_bytes(argv[1]);
    size_t fn = (size_t)sqlite3_value_bytes(argv[2]);
    int in = f && ((k && kn && memmem(f, fn, k, kn)) || (t && tn && memmem(f, fn, t, tn)));
    sqlite3_result_int(cx, in);
}

/* ---- the file --------------------------------------------------------------- */

/* The file as sqlite_file.c names it in messages. */
static const sqlfile_kind store_file = {"memory store", "memory.db", "--memory PATH", NULL};

laya_status learn_store_default_path(char *buf, size_t n, char *err, size_t errlen) {
    return sqlfile_default_path(&store_file, buf, n, err, errlen);
}

/* A symbolic link to nothing is refused rather than followed: opening it
 * to create the store would create the file wherever it points. */
static laya_status check_link(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && stat(path, &st) != 0)
        return err_set(err, errlen, LAYA_ERR_IO,
                       "memory store %s is a symbolic link to nothing: remove it or point it at a file", path);
    return LAYA_OK;
}

/* ---- schema ----------------------------------------------------------------- */

/* migrate[v] takes a file from schema v to v + 1 (v = 0: a new file). Each
 * runs inside the opening transaction, followed by user_version = v + 1. */
static const char *const migrate[LEARN_STORE_SCHEMA] = {
    "CREATE TABLE commits(id INTEGER PRIMARY KEY, text TEXT NOT NULL, t INTEGER NOT NULL);",

    "CREATE TABLE commits_v2(id INTEGER PRIMARY KEY AUTOINCREMENT, text BLOB NOT NULL, t INTEGER NOT NULL);"
    "INSERT INTO commits_v2(id, text, t) SELECT id, CAST(text AS BLOB), t FROM commits ORDER BY id;"
    "DROP TABLE commits;"
    "ALTER TABLE commits_v2 RENAME TO commits;"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT INTO meta(key, value) VALUES('incognito', 0), ('generation', 0);",

    "CREATE TABLE feedback(ctx BLOB NOT NULL, text BLOB NOT NULL, ign REAL NOT NULL, acc REAL NOT NULL,"
    " clock INTEGER NOT NULL, t INTEGER NOT NULL, PRIMARY KEY(ctx, text)) WITHOUT ROWID;"
    "CREATE INDEX feedback_clock ON feedback(clock);"
    "INSERT INTO meta(key, value) VALUES('fb_clock', 0);",
};

/* Reads the file's identity; refuses (changing nothing) what is not a Laya
 * store of this schema or older. *version: the file's schema. */
static laya_status check_schema(learn_store *s, int64_t *version, char *err, size_t errlen) {
    int64_t app, tables;
    laya_status st;
    if ((st = query_int(s, "PRAGMA application_id", &app, "reading the file header", err, errlen)) ||
        (st = query_int(s, "PRAGMA user_version", version, "reading the file header", err, errlen)) ||
        (st = query_int(s, "SELECT count(*) FROM sqlite_master", &tables, "reading the schema", err, errlen)))
        return st;
    int fresh = app == 0 && *version == 0 && tables == 0;
    if (!fresh && app != LEARN_STORE_APP_ID)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "%s is a SQLite database of another program (application_id 0x%08" PRIx64
                       ", %" PRId64 " tables), not a Laya memory store: pass another --memory PATH",
                       s->path, (uint64_t)app & 0xffffffffu, tables);
    if (*version > LEARN_STORE_SCHEMA)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "memory store %s is from a newer Laya (schema %" PRId64 ", this build reads up to %d): "
                       "upgrade Laya, or pass another --memory PATH; the file was not changed",
                       s->path, *version, LEARN_STORE_SCHEMA);
    if (*version <= 0 && !fresh)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "memory store %s has tables but no schema version (damaged): move it away and Laya starts "
                       "an empty one there",
                       s->path);
    return LAYA_OK;
}

/* A current file must hold exactly Laya's tables and nothing that runs
 * code on its own (triggers) or hides a table (views): anything else was
 * made or edited by hand and is refused rather than trusted. */
static laya_status check_tables(learn_store *s, char *err, size_t errlen) {
    int64_t ours, others;
    laya_status st;
    if ((st = query_int(s,
                        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('commits', 'meta', "
                        "'feedback')",
                        &ours, "reading the schema", err, errlen)) ||
        (st = query_int(s,
                        "SELECT count(*) FROM sqlite_master WHERE type IN ('trigger', 'view') OR (type = 'table' "
                        "AND name NOT IN ('commits', 'meta', 'feedback', 'sqlite_sequence'))",
                        &others, "reading the schema", err, errlen)))
        return st;
    if (ours != 3 || others != 0)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "memory store %s does not hold Laya's tables as this build wrote them (damaged or edited "
                       "by hand): move it away and Laya starts an empty one there",
                       s->path);
    return LAYA_OK;
}

/* Brings the file to LEARN_STORE_SCHEMA in one write transaction. Another
 * process may have done it meanwhile, so the version is read again under
 * the write lock. */
static laya_status upgrade(learn_store *s, char *err, size_t errlen) {
    laya_status st = exec(s, "BEGIN IMMEDIATE", "upgrading the schema", err, errlen);
    if (st != LAYA_OK) return st;
    int64_t v;
    if ((st = check_schema(s, &v, err, errlen))) goto out;
    for (; v < LEARN_STORE_SCHEMA; v++) {
        char sql[128];
        if ((st = exec(s, migrate[v], "upgrading the schema", err, errlen))) goto out;
        snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d;", LEARN_STORE_APP_ID,
                 (int)v + 1);
        if ((st = exec(s, sql, "upgrading the schema", err, errlen))) goto out;
    }
    return commit(s, "upgrading the schema", err, errlen);
out:
    rollback(s);
    return st;
}

static laya_status prepare(learn_store *s, sqlite3_stmt **q, const char *sql, char *err, size_t errlen) {
    int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, q, NULL);
    return rc == SQLITE_OK ? LAYA_OK : fail(s, rc, "preparing a statement", err, errlen);
}

/* ---- open and close --------------------------------------------------------- */

static laya_status open_db(learn_store *s, char *err, size_t errlen) {
    int mem = !strcmp(s->path, LEARN_STORE_IN_MEMORY);
    laya_status st;
    if (!mem && ((st = check_link(s->path, err, errlen)) || (st = sqlfile_check(&store_file, s->path, 1, err, errlen))))
        return st;
    int rc = sqlfile_open(s->path, LEARN_STORE_BUSY_MS, &s->db);
    if (rc != SQLITE_OK) return fail(s, rc, "opening", err, errlen);
    rc = sqlite3_create_function_v2(s->db, "laya_has_word", 2,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, NULL, sql_has_word,
                                    NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(s->db, "laya_fb_has_word", 3,
                                        SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, NULL,
                                        sql_fb_has_word, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(s->db, "laya_fb_in_text", 3,
                                        SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, NULL,
                                        sql_fb_in_text, NULL, NULL, NULL);
    if (rc != SQLITE_OK) return fail(s, rc, "registering a function", err, errlen);
    if ((st = exec(s, "PRAGMA secure_delete = ON; PRAGMA temp_store = MEMORY;", "configuring", err, errlen)))
        return st;
    int64_t v;
    /* Identity first: a refused file must not even be switched to WAL. The
     * three reads share one read transaction, or another process creating
     * the schema between them would make a new file look foreign. */
    if ((st = exec(s, "BEGIN", "reading the file header", err, errlen))) return st;
    st = check_schema(s, &v, err, errlen);
    if (st == LAYA_OK) st = commit(s, "reading the file header", err, errlen);
    else rollback(s);
    if (st) return st;
    if (!mem) {
        int wal = 0;
        if ((st = sqlfile_make_private(s->path, err, errlen))) return st;
        if ((rc = sqlfile_wal(s->db, LEARN_STORE_BUSY_MS, &wal)) != SQLITE_OK)
            return fail(s, rc, "switching to WAL", err, errlen);
        if (!wal)
            return err_set(err, errlen, LAYA_ERR_IO,
                           "memory store %s cannot use write-ahead logging (is it on a network file system?): "
                           "keep it on a local disk",
                           s->path);
    }
    if (v < LEARN_STORE_SCHEMA && (st = upgrade(s, err, errlen))) return st;
    if ((st = check_tables(s, err, errlen))) return st;
    if (!mem && (st = sqlfile_make_private(s->path, err, errlen))) return st;
    if ((st = prepare(s, &s->add, "INSERT INTO commits(text, t) VALUES(?1, ?2)", err, errlen)) ||
        (st = prepare(s, &s->incognito, "SELECT value FROM meta WHERE key = 'incognito'", err, errlen)) ||
        (st = prepare(s, &s->generation, "SELECT value FROM meta WHERE key = 'generation'", err, errlen)) ||
        (st = prepare(s, &s->data_version, "PRAGMA data_version", err, errlen)) ||
        (st = prepare(s, &s->rows, "SELECT id, text, t FROM commits WHERE id > ?1 ORDER BY id", err, errlen)) ||
        (st = prepare(s, &s->max_id, "SELECT coalesce(max(id), 0) FROM commits", err, errlen)) ||
        (st = prepare(s, &s->fb_clock, "SELECT value FROM meta WHERE key = 'fb_clock'", err, errlen)) ||
        (st = prepare(s, &s->fb_get, "SELECT ign, acc, clock FROM feedback WHERE ctx = ?1 AND text = ?2", err,
                      errlen)) ||
        (st = prepare(s, &s->fb_put,
                      "INSERT OR REPLACE INTO feedback(ctx, text, ign, acc, clock, t) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                      err, errlen)))
        return st;
    /* The header's copy is taken before the data version it stands for: a
     * commit in between moves the header, so the next check asks again.
     * The first read maps the WAL-index. */
    if ((st = step_int(s, s->data_version, &s->data_version_seen, "reading the data version", err, errlen)))
        return st;
    if (!mem) map_wal_header(s);
    return step_int(s, s->data_version, &s->data_version_seen, "reading the data version", err, errlen);
}

laya_status learn_store_open(const char *path, learn_store **out, char *err, size_t errlen) {
    if (!out) return LAYA_ERR_ARG;
    *out = NULL;
    learn_store *s = calloc(1, sizeof *s);
    if (!s) return LAYA_ERR_NOMEM;
    s->cap = LEARN_STORE_DEFAULT_CAP;
    s->fb_cap = LEARN_FB_DEFAULT_CAP;
    s->rows_known = -1;
    laya_status st = LAYA_OK;
    if (!path) st = learn_store_default_path(s->path, sizeof s->path, err, errlen);
    else if (!*path) st = err_set(err, errlen, LAYA_ERR_ARG, "the memory store's path is empty");
    else if (strlen(path) >= sizeof s->path)
        st = err_set(err, errlen, LAYA_ERR_LIMIT, "the memory store's path is too long (%zu bytes)", strlen(path));
    else snprintf(s->path, sizeof s->path, "%s", path);
    if (st == LAYA_OK) st = open_db(s, err, errlen);
    if (st != LAYA_OK) {
        learn_store_close(s);
        return st;
    }
    *out = s;
    return LAYA_OK;
}

void learn_store_close(learn_store *s) {
    if (!s) return;
    sqlite3_finalize(s->add);
    sqlite3_finalize(s->incognito);
    sqlite3_finalize(s->generation);
    sqlite3_finalize(s->data_version);
    sqlite3_finalize(s->rows);
    sqlite3_finalize(s->max_id);
    sqlite3_finalize(s->fb_clock);
    sqlite3_finalize(s->fb_get);
    sqlite3_finalize(s->fb_put);
    sqlite3_close_v2(s->db);
    free(s);
}

const char *learn_store_path(const learn_store *s) { return s->path; }

void learn_store_set_cap(learn_store *s, int64_t cap) {
    s->cap = cap < 1 ? 1 : cap;
    s->rows_known = -1;
}

void learn_store_set_fb_cap(learn_store *s, int64_t cap) { s->fb_cap = cap < 1 ? 1 : cap; }

/* ---- adding ----------------------------------------------------------------- */

/* Inside the add transaction, after inserting id: deletes the oldest rows
 * down to 95% of the cap when the count is over it. Fills the new bound. */
static laya_status evict(learn_store *s, int64_t id, int64_t *rows, int64_t *at_id, char *err, size_t errlen) {
    *rows = s->rows_known;
    *at_id = s->id_known;
    if (s->rows_known >= 0 && s->rows_known + (id - s->id_known) <= s->cap) return LAYA_OK;
    int64_t n;
    laya_status st = query_int(s, "SELECT count(*) FROM commits", &n, "counting commits", err, errlen);
    if (st != LAYA_OK) return st;
    if (n > s->cap) {
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(
            s->db, "DELETE FROM commits WHERE id IN (SELECT id FROM commits ORDER BY id LIMIT ?1)", -1, &q, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int64(q, 1, n - (s->cap - s->cap / 20));
            rc = sqlite3_step(q);
        }
        if (rc == SQLITE_DONE) n -= sqlite3_changes64(s->db);
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE) return fail(s, rc, "evicting the oldest commits", err, errlen);
    }
    *rows = n;
    *at_id = id;
    return LAYA_OK;
}

laya_status learn_store_add(learn_store *s, const uint8_t *text, size_t len, int64_t t, int64_t *id,
                            char *err, size_t errlen) {
    if (id) *id = 0;
    if (!s || (!text && len)) return LAYA_ERR_ARG;
    if (len > LEARN_STORE_MAX_TEXT)
        return err_set(err, errlen, LAYA_ERR_LIMIT,
                       "a commit of %zu bytes is over the memory's limit of %d bytes: it was not learned", len,
                       LEARN_STORE_MAX_TEXT);
    if (!utf8_valid(text, len))
        return err_set(err, errlen, LAYA_ERR_FORMAT, "the committed text is not valid UTF-8: it was not learned");
    if (!len) return LAYA_OK;
    const char *doing = "adding a commit";
    laya_status st = exec(s, "BEGIN IMMEDIATE", doing, err, errlen);
    if (st != LAYA_OK) return st;
    int64_t on, nid = 0, rows, at_id;
    if ((st = step_int(s, s->incognito, &on, doing, err, errlen))) goto out;
    if (on) {
        rollback(s);
        return LAYA_OK;
    }
    sqlite3_bind_blob64(s->add, 1, text, len, SQLITE_STATIC);
    sqlite3_bind_int64(s->add, 2, t);
    int rc = sqlite3_step(s->add);
    sqlite3_reset(s->add);
    sqlite3_clear_bindings(s->add);
    if (rc != SQLITE_DONE) {
        st = fail(s, rc, doing, err, errlen);
        goto out;
    }
    nid = sqlite3_last_insert_rowid(s->db);
    if ((st = evict(s, nid, &rows, &at_id, err, errlen))) goto out;
    if ((st = commit(s, doing, err, errlen))) return st;
    s->rows_known = rows;
    s->id_known = at_id;
    if (id) *id = nid;
    return LAYA_OK;
out:
    rollback(s);
    return st;
}

/* ---- reading ---------------------------------------------------------------- */

laya_status learn_store_begin_read(learn_store *s, char *err, size_t errlen) {
    return exec(s, "BEGIN", "starting a read", err, errlen);
}

void learn_store_end_read(learn_store *s) {
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
}

laya_status learn_store_state_get(learn_store *s, learn_store_state *state, char *err, size_t errlen) {
    int64_t on, gen, fc;
    laya_status st;
    if ((st = step_int(s, s->incognito, &on, "reading the incognito switch", err, errlen)) ||
        (st = step_int(s, s->generation, &gen, "reading the generation", err, errlen)) ||
        (st = step_int(s, s->fb_clock, &fc, "reading the feedback clock", err, errlen)))
        return st;
    state->incognito = on != 0;
    state->generation = gen;
    state->fb_clock = fc;
    return LAYA_OK;
}

laya_status learn_store_rows(learn_store *s, int64_t since_id, learn_store_row_fn fn, void *ctx, char *err,
                             size_t errlen) {
    sqlite3_bind_int64(s->rows, 1, since_id);
    int rc;
    while ((rc = sqlite3_step(s->rows)) == SQLITE_ROW) {
        const uint8_t *t = sqlite3_column_blob(s->rows, 1);
        size_t n = (size_t)sqlite3_column_bytes(s->rows, 1);
        if (fn(ctx, sqlite3_column_int64(s->rows, 0), t ? t : (const uint8_t *)"", n,
               sqlite3_column_int64(s->rows, 2))) {
            rc = SQLITE_DONE;
            break;
        }
    }
    laya_status st = rc == SQLITE_DONE ? LAYA_OK : fail(s, rc, "reading commits", err, errlen);
    sqlite3_reset(s->rows);
    sqlite3_clear_bindings(s->rows);
    return st;
}

laya_status learn_store_tail(learn_store *s, int64_t bytes, int64_t *since_id, char *err, size_t errlen) {
    sqlite3_stmt *q = NULL;
    *since_id = 0;
    /* length() of a BLOB comes from the record header: overflow pages are
     * not read. */
    int rc = sqlite3_prepare_v2(s->db, "SELECT id, length(text) FROM commits ORDER BY id DESC", -1, &q, NULL);
    if (rc != SQLITE_OK) return fail(s, rc, "reading commit sizes", err, errlen);
    int64_t sum = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        sum += sqlite3_column_int64(q, 1) + 1;
        if (sum >= bytes) {
            *since_id = sqlite3_column_int64(q, 0) - 1;
            rc = SQLITE_DONE;
            break;
        }
    }
    laya_status st = rc == SQLITE_DONE ? LAYA_OK : fail(s, rc, "reading commit sizes", err, errlen);
    sqlite3_finalize(q);
    return st;
}

laya_status learn_store_max_id(learn_store *s, int64_t *id, char *err, size_t errlen) {
    return step_int(s, s->max_id, id, "reading the newest commit", err, errlen);
}

/* The reference: PRAGMA data_version, which starts a read transaction
 * (two fcntl locks on the -shm file, ~10 us on a loaded machine). */
laya_status learn_store_changed_ref(learn_store *s, int *changed, char *err, size_t errlen) {
    int64_t v;
    laya_status st = step_int(s, s->data_version, &v, "reading the data version", err, errlen);
    if (st != LAYA_OK) return st;
    *changed = v != s->data_version_seen;
    s->data_version_seen = v;
    return LAYA_OK;
}

/* The fast path reads the WAL-index header with plain loads: when it is
 * word for word what this connection saw last, no connection committed
 * since (every commit rewrites it), so the answer is 0 with no lock and no
 * system call. Otherwise data_version decides (the header also moves for
 * this connection's own commits, which do not count). A read torn by a
 * concurrent commit differs from the copy, so it costs a check, never a
 * missed change; a commit not yet in the header has not returned to its
 * writer either. */
laya_status learn_store_changed(learn_store *s, int *changed, char *err, size_t errlen) {
    if (s->wal_hdr) {
        uint32_t h[WAL_HDR_WORDS];
        int same = 1;
        for (int i = 0; i < WAL_HDR_WORDS; i++) {
            h[i] = s->wal_hdr[i];
            same &= h[i] == s->wal_hdr_seen[i];
        }
        if (same) {
            *changed = 0;
            return LAYA_OK;
        }
        laya_status st = learn_store_changed_ref(s, changed, err, errlen);
        if (st == LAYA_OK) memcpy(s->wal_hdr_seen, h, sizeof h);
        return st;
    }
    return learn_store_changed_ref(s, changed, err, errlen);
}

int learn_store_fast_changed(const learn_store *s) { return s->wal_hdr != NULL; }

/* Finds this connection's mapping of the WAL-index (mapped by the read
 * transaction open_db ends with) through the VFS's xShmMap, without
 * extending it. Leaves wal_hdr NULL (data_version on every call) for a
 * store without one or a header of another format version. */
static void map_wal_header(learn_store *s) {
    sqlite3_file *f = NULL;
    if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f || !f->pMethods ||
        f->pMethods->iVersion < 2 || !f->pMethods->xShmMap)
        return;
    void volatile *p = NULL;
    if (f->pMethods->xShmMap(f, 0, WALINDEX_PGSZ, 0, &p) != SQLITE_OK || !p) return;
    const volatile uint32_t *h = p;
    if (h[0] != WAL_INDEX_VERSION) return;
    s->wal_hdr = h;
    for (int i = 0; i < WAL_HDR_WORDS; i++) s->wal_hdr_seen[i] = h[i];
}

/* ---- forgetting ------------------------------------------------------------- */

/* Runs the prepared, bound DELETEs del (commits) and fdel (feedback rows)
 * in one write transaction with the generation bump, then the TRUNCATE
 * checkpoint. Finalizes both. */
static laya_status forget_run(learn_store *s, sqlite3_stmt *del, sqlite3_stmt *fdel, int64_t *removed, char *err,
                              size_t errlen) {
    const char *doing = "forgetting";
    int64_t n = 0, fn = 0;
    s->fb_removed = 0;
    laya_status st = exec(s, "BEGIN IMMEDIATE", doing, err, errlen);
    if (st == LAYA_OK) {
        int rc = sqlite3_step(del);
        if (rc == SQLITE_DONE) {
            n = sqlite3_changes64(s->db);
            rc = sqlite3_step(fdel);
            if (rc == SQLITE_DONE) fn = sqlite3_changes64(s->db);
        }
        if (rc != SQLITE_DONE) st = fail(s, rc, doing, err, errlen);
        else if (n + fn > 0)
            st = exec(s, "UPDATE meta SET value = value + 1 WHERE key = 'generation'", doing, err, errlen);
        if (st == LAYA_OK) st = commit(s, doing, err, errlen);
        else rollback(s);
    }
    sqlite3_finalize(del);
    sqlite3_finalize(fdel);
    if (st != LAYA_OK) return st;
    if (removed) *removed = n;
    s->fb_removed = fn;
    /* Busy (a reader in another process) leaves the forget done but the
     * checkpoint partial: see learn_store.h. */
    sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    return LAYA_OK;
}

/* Prepares the two DELETEs of a forget (fsql NULL: feedback rows are kept,
 * a statement that deletes nothing stands in). */
static laya_status forget_prepare(learn_store *s, const char *sql, const char *fsql, sqlite3_stmt **q,
                                  sqlite3_stmt **fq, char *err, size_t errlen) {
    *q = *fq = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db, fsql ? fsql : "DELETE FROM feedback WHERE 0", -1, fq, NULL);
    if (rc == SQLITE_OK) return LAYA_OK;
    laya_status st = fail(s, rc, "forgetting", err, errlen);
    sqlite3_finalize(*q);
    sqlite3_finalize(*fq);
    *q = *fq = NULL;
    return st;
}

laya_status learn_store_forget_all(learn_store *s, int64_t *removed, char *err, size_t errlen) {
    sqlite3_stmt *q, *fq;
    laya_status st = forget_prepare(s, "DELETE FROM commits", "DELETE FROM feedback", &q, &fq, err, errlen);
    return st ? st : forget_run(s, q, fq, removed, err, errlen);
}

laya_status learn_store_forget_since(learn_store *s, int64_t t, int64_t *removed, char *err, size_t errlen) {
    sqlite3_stmt *q, *fq;
    laya_status st = forget_prepare(s, "DELETE FROM commits WHERE t >= ?1", "DELETE FROM feedback WHERE t >= ?1",
                                    &q, &fq, err, errlen);
    if (st) return st;
    sqlite3_bind_int64(q, 1, t);
    sqlite3_bind_int64(fq, 1, t);
    return forget_run(s, q, fq, removed, err, errlen);
}

laya_status learn_store_forget_word(learn_store *s, const uint8_t *word, size_t len, int64_t *removed,
                                    char *err, size_t errlen) {
    if (!word || !len) return err_set(err, errlen, LAYA_ERR_ARG, "the word to forget is empty");
    if (len > LEARN_STORE_MAX_TEXT)
        return err_set(err, errlen, LAYA_ERR_LIMIT, "the word to forget is longer than %d bytes",
                       LEARN_STORE_MAX_TEXT);
    if (!utf8_valid(word, len)) return err_set(err, errlen, LAYA_ERR_ARG, "the word to forget is not valid UTF-8");
    sqlite3_stmt *q, *fq;
    laya_status st = forget_prepare(s, "DELETE FROM commits WHERE laya_has_word(text, ?1)",
                                    "DELETE FROM feedback WHERE laya_fb_has_word(ctx, text, ?1)", &q, &fq, err,
                                    errlen);
    if (st) return st;
    sqlite3_bind_blob64(q, 1, word, len, SQLITE_STATIC);
    sqlite3_bind_blob64(fq, 1, word, len, SQLITE_STATIC);
    return forget_run(s, q, fq, removed, err, errlen);
}

laya_status learn_store_forget_text(learn_store *s, const uint8_t *text, size_t len, int64_t *removed,
                                    char *err, size_t errlen) {
    if (!text || !len) return err_set(err, errlen, LAYA_ERR_ARG, "the text to forget is empty");
    if (len > LEARN_STORE_MAX_TEXT)
        return err_set(err, errlen, LAYA_ERR_LIMIT, "the text to forget is longer than %d bytes",
                       LEARN_STORE_MAX_TEXT);
    sqlite3_stmt *q, *fq;
    /* Texts are stored as blobs (schema v2), so = compares bytes. */
    laya_status st = forget_prepare(s, "DELETE FROM commits WHERE text = ?1",
                                    "DELETE FROM feedback WHERE laya_fb_in_text(ctx, text, ?1)", &q, &fq, err,
                                    errlen);
    if (st) return st;
    sqlite3_bind_blob64(q, 1, text, len, SQLITE_STATIC);
    sqlite3_bind_blob64(fq, 1, text, len, SQLITE_STATIC);
    return forget_run(s, q, fq, removed, err, errlen);
}

int64_t learn_store_fb_forgotten(const learn_store *s) { return s->fb_removed; }

/* ---- feedback ----------------------------------------------------------------- */

laya_status learn_store_fb_clock(learn_store *s, int64_t *clock, char *err, size_t errlen) {
    return step_int(s, s->fb_clock, clock, "reading the feedback clock", err, errlen);
}

laya_status learn_store_fb_rows(learn_store *s, int64_t since, int64_t limit, learn_store_fb_fn fn, void *ctx,
                                char *err, size_t errlen) {
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT ctx, text, ign, acc, clock, t FROM feedback WHERE clock > ?1 "
                                "ORDER BY clock DESC LIMIT ?2",
                                -1, &q, NULL);
    if (rc != SQLITE_OK) return fail(s, rc, "reading feedback", err, errlen);
    sqlite3_bind_int64(q, 1, since);
    sqlite3_bind_int64(q, 2, limit);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const uint8_t *k = sqlite3_column_blob(q, 0), *t = sqlite3_column_blob(q, 1);
        size_t kn = (size_t)sqlite3_column_bytes(q, 0), tn = (size_t)sqlite3_column_bytes(q, 1);
        if (fn(ctx, k ? k : (const uint8_t *)"", kn, t ? t : (const uint8_t *)"", tn, sqlite3_column_double(q, 2),
               sqlite3_column_double(q, 3), sqlite3_column_int64(q, 4), sqlite3_column_int64(q, 5))) {
            rc = SQLITE_DONE;
            break;
        }
    }
    laya_status st = rc == SQLITE_DONE ? LAYA_OK : fail(s, rc, "reading feedback", err, errlen);
    sqlite3_finalize(q);
    return st;
}

laya_status learn_store_fb_count(learn_store *s, int64_t *n, char *err, size_t errlen) {
    return query_int(s, "SELECT count(*) FROM feedback", n, "counting feedback", err, errlen);
}

/* Inside the write transaction: the oldest rows (by clock) go, down to 95%
 * of the cap, when the count is over it. */
static laya_status fb_evict(learn_store *s, char *err, size_t errlen) {
    int64_t n;
    laya_status st = learn_store_fb_count(s, &n, err, errlen);
    if (st != LAYA_OK || n <= s->fb_cap) return st;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "DELETE FROM feedback WHERE (ctx, text) IN "
                                "(SELECT ctx, text FROM feedback ORDER BY clock LIMIT ?1)",
                                -1, &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, n - (s->fb_cap - s->fb_cap / 20));
        rc = sqlite3_step(q);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? LAYA_OK : fail(s, rc, "evicting the oldest feedback", err, errlen);
}

/* One pending change into its row, decayed to clock c. */
static laya_status fb_put_one(learn_store *s, const learn_fb_change *p, int64_t c, double *ign, double *acc,
                              char *err, size_t errlen) {
    const char *doing = "writing feedback";
    sqlite3_bind_blob64(s->fb_get, 1, p->key, (sqlite3_uint64)p->klen, SQLITE_STATIC);
    sqlite3_bind_blob64(s->fb_get, 2, p->text, (sqlite3_uint64)p->tlen, SQLITE_STATIC);
    int rc = sqlite3_step(s->fb_get);
    *ign = p->d_ign, *acc = p->d_acc;
    if (rc == SQLITE_ROW) {
        int64_t c0 = sqlite3_column_int64(s->fb_get, 2);
        *ign += learn_fb_decay(sqlite3_column_double(s->fb_get, 0), c0, c);
        *acc += learn_fb_decay(sqlite3_column_double(s->fb_get, 1), c0, c);
    }
    sqlite3_reset(s->fb_get);
    sqlite3_clear_bindings(s->fb_get);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(s, rc, doing, err, errlen);
    sqlite3_bind_blob64(s->fb_put, 1, p->key, (sqlite3_uint64)p->klen, SQLITE_STATIC);
    sqlite3_bind_blob64(s->fb_put, 2, p->text, (sqlite3_uint64)p->tlen, SQLITE_STATIC);
    sqlite3_bind_double(s->fb_put, 3, *ign);
    sqlite3_bind_double(s->fb_put, 4, *acc);
    sqlite3_bind_int64(s->fb_put, 5, c);
    sqlite3_bind_int64(s->fb_put, 6, p->t);
    rc = sqlite3_step(s->fb_put);
    sqlite3_reset(s->fb_put);
    sqlite3_clear_bindings(s->fb_put);
    return rc == SQLITE_DONE ? LAYA_OK : fail(s, rc, doing, err, errlen);
}

laya_status learn_store_fb_write(learn_store *s, const learn_fb_change *rows, int n, int events,
                                 int64_t generation, learn_store_fb_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    if (!s || n < 0 || n > LEARN_FB_PENDING || (n && !rows) || events < 0) return LAYA_ERR_ARG;
    if (!n && !events) return LAYA_OK;
    const char *doing = "writing feedback";
    laya_status st = exec(s, "BEGIN IMMEDIATE", doing, err, errlen);
    if (st != LAYA_OK) return st;
    int64_t on, gen, c;
    if ((st = step_int(s, s->incognito, &on, doing, err, errlen)) ||
        (st = step_int(s, s->generation, &gen, doing, err, errlen)) ||
        (st = step_int(s, s->fb_clock, &c, doing, err, errlen)))
        goto out;
    r->clock_before = c;
    if (on || gen != generation) {
        r->refused = on ? LEARN_STORE_FB_INCOGNITO : LEARN_STORE_FB_FORGOTTEN;
        rollback(s);
        return LAYA_OK;
    }
    int64_t c2 = c + (events > 0 ? events : 1);
    for (int i = 0; i < n; i++)
        if ((st = fb_put_one(s, &rows[i], c2, &r->ign[i], &r->acc[i], err, errlen))) goto out;
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE meta SET value = %lld WHERE key = 'fb_clock'", (long long)c2);
    if ((st = exec(s, sql, doing, err, errlen)) || (st = fb_evict(s, err, errlen))) goto out;
    if ((st = commit(s, doing, err, errlen))) return st;
    r->clock_after = c2;
    r->written = n;
    return LAYA_OK;
out:
    rollback(s);
    return st;
}

/* ---- listing and the switch -------------------------------------------------- */

laya_status learn_store_list(learn_store *s, learn_store_list_fn fn, void *ctx, char *err, size_t errlen) {
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT text, count(*), min(t), max(t) FROM commits GROUP BY text "
                                "ORDER BY max(id) DESC",
                                -1, &q, NULL);
    if (rc != SQLITE_OK) return fail(s, rc, "listing", err, errlen);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const uint8_t *t = sqlite3_column_blob(q, 0);
        size_t n = (size_t)sqlite3_column_bytes(q, 0);
        if (fn(ctx, t ? t : (const uint8_t *)"", n, sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2),
               sqlite3_column_int64(q, 3))) {
            rc = SQLITE_DONE;
            break;
        }
    }
    laya_status st = rc == SQLITE_DONE ? LAYA_OK : fail(s, rc, "listing", err, errlen);
    sqlite3_finalize(q);
    return st;
}

laya_status learn_store_get_incognito(learn_store *s, int *on, char *err, size_t errlen) {
    int64_t v;
    laya_status st = step_int(s, s->incognito, &v, "reading the incognito switch", err, errlen);
    if (st == LAYA_OK) *on = v != 0;
    return st;
}

laya_status learn_store_set_incognito(learn_store *s, int on, char *err, size_t errlen) {
    return exec(s, on ? "UPDATE meta SET value = 1 WHERE key = 'incognito'"
                      : "UPDATE meta SET value = 0 WHERE key = 'incognito'",
                "setting the incognito switch", err, errlen);
}
