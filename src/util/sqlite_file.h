/* sqlite_file.h - the private SQLite files Laya keeps for the user: the
 * memory store (learn_store.c) and the notes index (notes_store.c).
 *
 * What both need before and while SQLite opens them: a default place in
 * the user's data folder; folders 0700 and files 0600 (they hold what the
 * user typed or wrote); anything but a regular file refused before SQLite
 * sees it (a FIFO would hang the open, a folder or a device would fail
 * with an obscure message); the connection opened defensively (a hostile
 * file's triggers and views cannot call functions) and in WAL mode.
 *
 * Each caller describes its file once (sqlfile_kind) for the messages and
 * keeps its own schema checks and its own hints for SQLite's errors. */
#ifndef LAYA_SQLITE_FILE_H
#define LAYA_SQLITE_FILE_H

#include <sqlite3.h>
#include <stddef.h>

#include "laya.h"

enum { SQLFILE_PATH_MAX = 4096 };   /* bytes of a path, NUL included */

typedef struct {
    const char *what;      /* "memory store": the file in messages */
    const char *name;      /* "memory.db": its name in the data folder */
    const char *flag;      /* "--memory PATH": how the user names another one */
    const char *missing;   /* what to do when it is not there and is not to be created (NULL: never happens) */
} sqlfile_kind;

/* $XDG_DATA_HOME/laya/NAME, else $HOME/.local/share/laya/NAME, into buf
 * (n bytes). Creates nothing. LAYA_ERR_ARG when neither variable is an
 * absolute path (the XDG spec says to ignore a relative one),
 * LAYA_ERR_LIMIT when buf is too small. */
laya_status sqlfile_default_path(const sqlfile_kind *k, char *buf, size_t n, char *err, size_t errlen);

/* Before SQLite opens path (shorter than SQLFILE_PATH_MAX): when create,
 * makes the missing folders above it (each 0700; mkdir's mode passes the
 * umask, which can only take permissions away) and an empty file (0600)
 * when nothing is there. Refuses anything but a regular file at path, and
 * at path-wal and path-shm when they exist. Opens path with O_NONBLOCK, so
 * a FIFO returns at once. Changes no file that exists. LAYA_ERR_IO with
 * the reason. */
laya_status sqlfile_check(const sqlfile_kind *k, const char *path, int create, char *err, size_t errlen);

/* Makes path, path-wal and path-shm (those there) 0600 where they are
 * looser. LAYA_ERR_IO when one cannot be made so. */
laya_status sqlfile_make_private(const char *path, char *err, size_t errlen);

/* Opens path read-write (creating it), with extended result codes, a busy
 * timeout of busy_ms, SQLITE_DBCONFIG_DEFENSIVE and an untrusted schema. An
 * SQLite result code; the caller closes *db whatever it is (sqlite3_close_v2
 * takes NULL). */
int sqlfile_open(const char *path, int busy_ms, sqlite3 **db);

/* PRAGMA journal_mode = WAL, then synchronous = NORMAL: a crash of the
 * program loses no commit, one of the system at most the last ones, never
 * the file. *wal 0: the file system cannot (a network one), nothing more is
 * done. A switch refused as busy is tried again for up to busy_ms. An
 * SQLite result code. */
int sqlfile_wal(sqlite3 *db, int busy_ms, int *wal);

#endif
