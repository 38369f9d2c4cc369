/* learn_store.h - the user's committed text on disk (C8): one SQLite
 * database shared by every process of the user (the daemon, `laya type`,
 * the IBus and fcitx5 engines), each with its own connection.
 *
 * File: $XDG_DATA_HOME/laya/memory.db (XDG_DATA_HOME unset, empty or
 * relative: $HOME/.local/share), or an explicit path; ":memory:" is a
 * private in-memory store (tests, `laya eval`). Missing parent directories
 * are created 0700; the file is created 0600 and made 0600 when looser, and
 * SQLite gives its -wal and -shm files the database file's mode. Anything
 * that is not a regular file (directory, FIFO, device, dangling symlink) is
 * refused before SQLite touches it, so opening never hangs.
 *
 * Connection: WAL (readers never wait for the writer), synchronous=NORMAL
 * (a commit is durable against a killed process, which is what the kill -9
 * test checks; a power cut may lose the last commits but never corrupts),
 * secure_delete=ON and temp_store=MEMORY (forgotten text is overwritten
 * with zeros, and no sort or group ever spills text to a temp file),
 * busy_timeout LEARN_STORE_BUSY_MS (writers hold the lock for one short
 * transaction), trusted_schema=OFF and the defensive flag (the file is
 * hostile input).
 *
 * Schema (PRAGMA application_id = LEARN_STORE_APP_ID, user_version = the
 * schema number):
 *   v1  commits(id INTEGER PRIMARY KEY, text TEXT NOT NULL, t INTEGER NOT NULL)
 *   v2  commits(id INTEGER PRIMARY KEY AUTOINCREMENT, text BLOB NOT NULL,
 *               t INTEGER NOT NULL)        -- t: unix seconds at commit
 *       meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID
 *         'incognito'   0/1, read inside every add's transaction
 *         'generation'  +1 on every forget that removed something
 *   v3  feedback(ctx BLOB, text BLOB, ign REAL, acc REAL, clock INTEGER,
 *                t INTEGER, PRIMARY KEY(ctx, text)) WITHOUT ROWID
 *         -- what the typist did with text shown after context ctx
 *            (learn_fb.h): ignored / accepted counts, decayed, as of the
 *            feedback clock value `clock`; t: unix seconds of the last change
 *       index feedback_clock(clock)
 *       meta 'fb_clock'  the feedback clock: + the events of every write
 * v2 keeps text as BLOB (bytes are never reinterpreted: embedded NULs stay),
 * never reuses an id (AUTOINCREMENT), so "every row with id > N" is what a
 * reader has not seen yet unless the generation moved, and persists the
 * incognito switch for every process. Opening migrates an older file in one
 * transaction (v0 = a new empty file); a file from a newer schema, a SQLite
 * file of another program, or a file that is not SQLite is refused and not
 * modified.
 *
 * Bounds: one commit is at most LEARN_STORE_MAX_TEXT bytes of valid UTF-8
 * (RFC 3629; NUL allowed). The store keeps at most cap rows (default
 * LEARN_STORE_DEFAULT_CAP): an add that takes the row count over the cap
 * deletes the oldest commits, in the same transaction, down to 95% of the
 * cap, so eviction runs once per cap/20 adds. A connection counts rows only
 * when its upper bound (rows at its last count + ids taken since) passes
 * the cap, so an ordinary add costs no count. Eviction does not move the
 * generation: it is not a privacy request, and the other processes' indexes
 * drop old text by their own byte cap.
 *
 * Errors: every function that touches the file returns a laya_status and
 * fills err (optional) with one sentence naming the store and a hint.
 * A learn_store is used by one thread at a time (laya_memory holds a mutex)
 * and never across fork(); a child must not open one while the parent's is
 * in its memory (SQLite's per-process lock bookkeeping would be shared). */
#ifndef LAYA_LEARN_STORE_H
#define LAYA_LEARN_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "learn/learn_fb.h"

enum {
    LEARN_STORE_SCHEMA = 3,            /* the schema this build writes and reads up to */
    LEARN_STORE_APP_ID = 0x4C415941,   /* "LAYA" */
    LEARN_STORE_MAX_TEXT = 64 * 1024,  /* bytes in one commit */
    LEARN_STORE_DEFAULT_CAP = 100000,  /* rows */
    LEARN_STORE_BUSY_MS = 1000,
    LEARN_STORE_PATH_MAX = 4096
};

#define LEARN_STORE_IN_MEMORY ":memory:"

typedef struct learn_store learn_store;

/* The default path into buf (n bytes); creates nothing. LAYA_ERR_ARG when
 * neither $XDG_DATA_HOME nor $HOME is an absolute path, LAYA_ERR_LIMIT when
 * it does not fit. */
laya_status learn_store_default_path(char *buf, size_t n, char *err, size_t errlen);

/* Opens (creating or migrating as needed) the store at path (NULL: the
 * default path). *out is owned by the caller (learn_store_close). On error
 * nothing is returned and a file that was refused is left unmodified. */
laya_status learn_store_open(const char *path, learn_store **out, char *err, size_t errlen);

/* Closes the connection (the last one to close checkpoints and removes the
 * WAL). NULL is ignored. */
void learn_store_close(learn_store *s);

/* The path this store was opened with. Valid until close. */
const char *learn_store_path(const learn_store *s);

/* Sets the row cap (>= 1) for this connection's adds. */
void learn_store_set_cap(learn_store *s, int64_t cap);

/* Stores one commit made at unix time t, in one transaction, evicting the
 * oldest commits when over the cap. *id (optional) receives the new id, or
 * 0 when nothing was stored: incognito is on (checked inside the same
 * transaction, so `incognito on` from another process takes effect for
 * every later add) or len is 0. LAYA_ERR_LIMIT beyond LEARN_STORE_MAX_TEXT,
 * LAYA_ERR_FORMAT for invalid UTF-8; on any error nothing is stored. */
laya_status learn_store_add(learn_store *s, const uint8_t *text, size_t len, int64_t t, int64_t *id,
                            char *err, size_t errlen);

/* A consistent view for a reader that mirrors the store: between
 * begin_read and end_read every call sees one snapshot, so the generation
 * and the rows read belong together. */
typedef struct {
    int64_t generation;
    int incognito;
    int64_t fb_clock;   /* the feedback clock */
} learn_store_state;

/* Called for each row in id order; text is valid only during the call.
 * Nonzero stops the visit (the function still returns LAYA_OK). */
typedef int (*learn_store_row_fn)(void *ctx, int64_t id, const uint8_t *text, size_t len, int64_t t);

laya_status learn_store_begin_read(learn_store *s, char *err, size_t errlen);
laya_status learn_store_state_get(learn_store *s, learn_store_state *state, char *err, size_t errlen);
/* Visits every commit with id > since_id in order. */
laya_status learn_store_rows(learn_store *s, int64_t since_id, learn_store_row_fn fn, void *ctx, char *err,
                             size_t errlen);
/* *since_id = the id before the newest commits whose texts (plus one
 * separator byte each) add up to at least bytes, so learn_store_rows from
 * it visits just those; 0 when the whole store holds less. Reads only the
 * lengths. For a reader whose index keeps at most bytes of the newest
 * text: the older rows would be dropped again at once. */
laya_status learn_store_tail(learn_store *s, int64_t bytes, int64_t *since_id, char *err, size_t errlen);
/* Ends the read transaction; a no-op when none is open. */
void learn_store_end_read(learn_store *s);

/* The largest id in the store, 0 when empty. */
laya_status learn_store_max_id(learn_store *s, int64_t *id, char *err, size_t errlen);

/* *changed = 1 when another connection committed since this connection's
 * previous call (its own commits do not count), else 0. The first call
 * after open compares with the state at open. When the header of the
 * WAL-index in the -shm file is as this connection saw it last, the answer
 * is 0 from a 48-byte compare (~0.1 us); otherwise PRAGMA data_version
 * decides (~2-15 us: two fcntl locks). */
laya_status learn_store_changed(learn_store *s, int *changed, char *err, size_t errlen);
/* The reference learn_store_changed is tested against: data_version only. */
laya_status learn_store_changed_ref(learn_store *s, int *changed, char *err, size_t errlen);
/* 1 iff learn_store_changed has its fast path (a WAL-index header). */
int learn_store_fast_changed(const learn_store *s);

/* Forgetting: each deletes commits and feedback rows in one transaction,
 * moves the generation when it removed something, then checkpoints with
 * TRUNCATE so the old page images leave the WAL; with secure_delete the
 * bytes are zeros in the database file. If another process is reading at
 * that moment the checkpoint is partial (the forget still holds): the stale
 * WAL frames are overwritten by later writes and the WAL is removed when
 * the last connection closes. *removed (optional) receives the number of
 * commits deleted, learn_store_fb_forgotten the number of feedback rows.
 * Feedback rows: all; those changed at or after t; those whose context,
 * text or the two joined hold the word (learn_word_in); for forget_text
 * those whose context or text (non-empty) occurs in the text, byte for
 * byte (a row that may be a trace of it: shown after part of it, or made
 * from it). */
laya_status learn_store_forget_all(learn_store *s, int64_t *removed, char *err, size_t errlen);
/* Every commit made at or after unix time t. */
laya_status learn_store_forget_since(learn_store *s, int64_t t, int64_t *removed, char *err, size_t errlen);
/* Every commit that contains word (learn_word_in). word: 1..MAX_TEXT bytes
 * of valid UTF-8, else LAYA_ERR_ARG / LAYA_ERR_LIMIT. */
laya_status learn_store_forget_word(learn_store *s, const uint8_t *word, size_t len, int64_t *removed,
                                    char *err, size_t errlen);

/* Every commit whose text is exactly text[0..len) (byte for byte: one
 * entry of learn_store_list), and the feedback rows whose context or text
 * occurs in it. 1..MAX_TEXT bytes, else LAYA_ERR_ARG / LAYA_ERR_LIMIT; any
 * bytes (a damaged store's invalid UTF-8 included). */
laya_status learn_store_forget_text(learn_store *s, const uint8_t *text, size_t len, int64_t *removed,
                                    char *err, size_t errlen);

/* Every distinct text with how often and when (first and last commit time)
 * it was committed, most recently committed first. text is valid only
 * during the call; fn must not call the store. Nonzero from fn stops. */
typedef int (*learn_store_list_fn)(void *ctx, const uint8_t *text, size_t len, int64_t count, int64_t first,
                                   int64_t last);
laya_status learn_store_list(learn_store *s, learn_store_list_fn fn, void *ctx, char *err, size_t errlen);

/* Feedback rows the last forget on this connection removed. */
int64_t learn_store_fb_forgotten(const learn_store *s);

/* ---- feedback (learn_fb.h) ----
 * The rows of learn_fb.h with their texts. A write adds the pending changes
 * of one process to the rows (each decayed to the new clock first), in one
 * transaction that also moves the clock by the events written and evicts
 * the oldest rows (by clock) down to 95% of the feedback cap
 * (LEARN_FB_DEFAULT_CAP) when over it. */

/* Sets the feedback row cap (>= 1) for this connection's writes. */
void learn_store_set_fb_cap(learn_store *s, int64_t cap);

laya_status learn_store_fb_clock(learn_store *s, int64_t *clock, char *err, size_t errlen);
laya_status learn_store_fb_count(learn_store *s, int64_t *n, char *err, size_t errlen);

/* Called per row: key and text valid only during the call; ign and acc as
 * of clock; t unix seconds. Nonzero stops the visit. */
typedef int (*learn_store_fb_fn)(void *ctx, const uint8_t *key, size_t klen, const uint8_t *text, size_t tlen,
                                 double ign, double acc, int64_t clock, int64_t t);
/* Visits the rows with clock > since, newest first, at most limit (-1:
 * all). Inside begin_read/end_read to see them with the clock. */
laya_status learn_store_fb_rows(learn_store *s, int64_t since, int64_t limit, learn_store_fb_fn fn, void *ctx,
                                char *err, size_t errlen);

enum { LEARN_STORE_FB_INCOGNITO = 1, LEARN_STORE_FB_FORGOTTEN = 2 };
typedef struct {
    int written;                   /* rows written (0: refused or nothing) */
    int refused;                   /* LEARN_STORE_FB_*: incognito is on, or the generation moved */
    int64_t clock_before, clock_after;
    double ign[LEARN_FB_PENDING], acc[LEARN_FB_PENDING];   /* each row as written */
} learn_store_fb_result;

/* Writes rows[0..n) (pending changes holding `events` events) unless,
 * read inside the transaction, incognito is on or the generation is not
 * `generation` (a forget since the writer last read: its changes may hold
 * what was forgotten): then nothing is written and r->refused says why.
 * On error nothing is written. */
laya_status learn_store_fb_write(learn_store *s, const learn_fb_change *rows, int n, int events,
                                 int64_t generation, learn_store_fb_result *r, char *err, size_t errlen);

laya_status learn_store_get_incognito(learn_store *s, int *on, char *err, size_t errlen);
laya_status learn_store_set_incognito(learn_store *s, int on, char *err, size_t errlen);

/* 1 iff text contains word at word boundaries: an occurrence counts when a
 * word character at either end of the word is not continued by a word
 * character in the text ("Tom" is in "Tom," and "to Tom" but not in
 * "Tomato"). Word characters: ASCII letters, digits and '_', and non-ASCII
 * letters outside the CJK scripts. CJK characters (Han, kana, Hangul),
 * punctuation, symbols and emoji are never word characters, so a CJK word
 * matches as a substring ("外卖" is in "订个外卖吧"). ASCII letters match
 * case-insensitively (forgetting "tom" forgets "Tom": a privacy request
 * errs on the side of removing more). Bytes that are not valid UTF-8 count
 * as non-word characters. */
int learn_word_in(const uint8_t *text, size_t n, const uint8_t *word, size_t wn);

#endif
