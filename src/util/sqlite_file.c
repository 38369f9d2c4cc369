/* sqlite_file.c - the private SQLite files (sqlite_file.h). */
#include "util/sqlite_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"
#include "util/file.h"

laya_status sqlfile_default_path(const sqlfile_kind *k, char *buf, size_t n, char *err, size_t errlen) {
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int w;
    if (xdg && xdg[0] == '/') w = snprintf(buf, n, "%s/laya/%s", xdg, k->name);
    else if (home && home[0] == '/') w = snprintf(buf, n, "%s/.local/share/laya/%s", home, k->name);
    else
        return err_set(err, errlen, LAYA_ERR_ARG,
                       "no place for the %s: neither $XDG_DATA_HOME nor $HOME is an absolute path (set one, or pass "
                       "%s)",
                       k->what, k->flag);
    if (w < 0 || (size_t)w >= n) return err_set(err, errlen, LAYA_ERR_LIMIT, "the %s's path is too long", k->what);
    return LAYA_OK;
}

/* Creates the missing folders above the file at path, each 0700. */
static laya_status make_parents(const sqlfile_kind *k, const char *path, char *err, size_t errlen) {
    char dir[SQLFILE_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        struct stat st;
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return err_set(err, errlen, LAYA_ERR_IO, "cannot create folder %s for the %s: %s", dir, k->what,
                           strerror(errno));
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return err_set(err, errlen, LAYA_ERR_IO, "%s is in the %s's path but is not a folder", dir, k->what);
        *p = '/';
    }
    return LAYA_OK;
}

laya_status sqlfile_check(const sqlfile_kind *k, const char *path, int create, char *err, size_t errlen) {
    laya_status st;
    if (create && (st = make_parents(k, path, err, errlen))) return st;
    struct stat sb;
    int fd = open(path, O_RDWR | (create ? O_CREAT : 0) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EISDIR)
            return err_set(err, errlen, LAYA_ERR_IO, "%s %s is a folder: pass a file path, such as %s/%s", k->what,
                           path, path, k->name);
        if (errno == ENOENT && !create && k->missing)
            return err_set(err, errlen, LAYA_ERR_IO, "there is no %s at %s: %s", k->what, path, k->missing);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot open %s%s %s: %s", create ? "or create " : "", k->what, path,
                       strerror(errno));
    }
    int ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    close(fd);
    if (!ok)
        return err_set(err, errlen, LAYA_ERR_IO, "%s %s is %s, not a regular file: pass a file path", k->what, path,
                       file_kind(sb.st_mode));
    static const char *const side[] = {"-wal", "-shm"};
    for (int i = 0; i < 2; i++) {
        char p[SQLFILE_PATH_MAX + 8];
        snprintf(p, sizeof p, "%s%s", path, side[i]);
        if (lstat(p, &sb) == 0 && (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)))
            return err_set(err, errlen, LAYA_ERR_IO, "%s (beside the %s) is not a regular file: remove it", p,
                           k->what);
    }
    return LAYA_OK;
}

laya_status sqlfile_make_private(const char *path, char *err, size_t errlen) {
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[SQLFILE_PATH_MAX + 8];
        struct stat st;
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        if (stat(p, &st) != 0 || !(st.st_mode & 077)) continue;
        if (chmod(p, 0600) != 0)
            return err_set(err, errlen, LAYA_ERR_IO,
                           "%s holds private text but is readable by others (mode %03o) and cannot be made 0600: %s",
                           p, (unsigned)(st.st_mode & 0777), strerror(errno));
    }
    return LAYA_OK;
}

int sqlfile_open(const char *path, int busy_ms, sqlite3 **db) {
    int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) return rc;
    sqlite3_extended_result_codes(*db, 1);
    sqlite3_busy_timeout(*db, busy_ms);
    sqlite3_db_config(*db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(*db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    return SQLITE_OK;
}

int sqlfile_wal(sqlite3 *db, int busy_ms, int *wal) {
    /* The switch writes the file's header, and SQLite answers BUSY at once,
     * without its busy handler, where waiting could deadlock (another
     * process switching or creating the schema at the same moment): so the
     * switch is tried again, a few milliseconds apart, for up to busy_ms. */
    struct timespec t0, now, nap = {0, 2 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc;
    for (;;) {
        sqlite3_stmt *q = NULL;
        rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &q, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_step(q);
        *wal = rc == SQLITE_ROW && !sqlite3_strnicmp((const char *)sqlite3_column_text(q, 0), "wal", 3);
        sqlite3_finalize(q);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= busy_ms) break;
        nanosleep(&nap, NULL);
    }
    if (rc != SQLITE_ROW) return rc;
    return *wal ? sqlite3_exec(db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) : SQLITE_OK;
}
