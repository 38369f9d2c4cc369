/* test_learn_store.c - the personal memory's store (learn/learn_store.h)
 * and the laya_memory handle over it (learn/learn.h, include/laya.h):
 * round trip and order, hostile text, forgetting that leaves no bytes in
 * the files, incognito, file modes, refused files, the v1 -> v3 and v2 ->
 * v3 migrations, the row cap, the typist's feedback (kept, shared,
 * forgotten, refused in incognito, capped), a second process's commits reaching the index, threads, and
 * a writer killed with SIGKILL thirty times. Every store lives in a
 * temporary folder; $XDG_DATA_HOME and $HOME point there whenever the
 * default path is opened. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "learn/learn.h"
#include "learn/learn_fb.h"
#include "learn/learn_store.h"

enum { KILL_ROUNDS = 30 };

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static char *path_in(char *buf, size_t n, const char *dir, const char *name) {
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

/* The whole file, or NULL (and *n = 0) when it does not exist. */
static uint8_t *slurp(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) == (size_t)len) *n = (size_t)len;
    fclose(f);
    return b;
}

/* 1 iff needle occurs in the database file, its -wal or its -shm. */
static int bytes_on_disk(const char *db, const char *needle) {
    static const char *const suffix[] = {"", "-wal", "-shm"};
    int found = 0;
    for (int i = 0; i < 3 && !found; i++) {
        char p[4200];
        size_t n;
        snprintf(p, sizeof p, "%s%s", db, suffix[i]);
        uint8_t *b = slurp(p, &n);
        found = b && memmem(b, n, needle, strlen(needle)) != NULL;
        free(b);
    }
    return found;
}

typedef struct {
    int n;
    int64_t ids[64], t[64];
    char text[64][256];
    size_t len[64];
} rows_seen;

static int see_row(void *ctx, int64_t id, const uint8_t *text, size_t len, int64_t t) {
    rows_seen *r = ctx;
    if (r->n < 64) {
        r->ids[r->n] = id;
        r->t[r->n] = t;
        r->len[r->n] = len;
        memcpy(r->text[r->n], text, len < 256 ? len : 256);
        r->n++;
    }
    return 0;
}

static int count_rows(learn_store *s) {
    rows_seen r = {0};
    learn_store_rows(s, 0, see_row, &r, NULL, 0);
    return r.n;
}

static int64_t raw_int(const char *path, const char *sql) {
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

static int raw_exec(const char *path, const char *sql) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

/* What a suggesting program does right after open (learn.h). */
static laya_status sync_index(laya_memory *m) {
    learn_memory_lock(m);
    laya_status st = learn_memory_sync(m, NULL, 0);
    learn_memory_unlock(m);
    return st;
}

static size_t index_bytes(laya_memory *m) {
    learn_memory_lock(m);
    size_t n = learn_index_bytes(learn_memory_index(m));
    learn_memory_unlock(m);
    return n;
}

/* ---- basics ------------------------------------------------------------------ */

TEST(learn_store_round_trip_in_order) {
    const char *dir = test_tmpdir();
    char path[512], err[512] = "";
    path_in(path, sizeof path, dir, "m.db");
    static const char nul_text[] = "a\0b";
    const char *texts[] = {"Best regards, Tom", "我想订个外卖", nul_text, "line\nwith newline"};
    size_t lens[] = {17, strlen(texts[1]), 3, 17};
    learn_store *s = NULL;
    CHECKF(learn_store_open(path, &s, err, sizeof err) == LAYA_OK, "%s", err);
    int64_t prev = 0;
    for (int i = 0; i < 4; i++) {
        int64_t id = 0;
        CHECK(learn_store_add(s, (const uint8_t *)texts[i], lens[i], 1000 + i, &id, err, sizeof err) == LAYA_OK);
        CHECK(id > prev);
        prev = id;
    }
    int64_t max_id = 0;
    CHECK(learn_store_max_id(s, &max_id, NULL, 0) == LAYA_OK && max_id == prev);
    learn_store_close(s);
    s = NULL;
    CHECKF(learn_store_open(path, &s, err, sizeof err) == LAYA_OK, "%s", err);
    rows_seen r = {0};
    CHECK(learn_store_rows(s, 0, see_row, &r, NULL, 0) == LAYA_OK);
    CHECK(r.n == 4);
    for (int i = 0; i < 4; i++) {
        CHECKF(r.len[i] == lens[i] && !memcmp(r.text[i], texts[i], lens[i]), "row %d", i);
        CHECK(r.t[i] == 1000 + i);
        CHECK(i == 0 || r.ids[i] > r.ids[i - 1]);
    }
    /* since_id: only the newer rows. */
    rows_seen r2 = {0};
    CHECK(learn_store_rows(s, r.ids[1], see_row, &r2, NULL, 0) == LAYA_OK);
    CHECK(r2.n == 2 && r2.ids[0] == r.ids[2]);
    learn_store_close(s);
    rm_tree(dir);
}

TEST(learn_store_refuses_hostile_text) {
    const char *dir = test_tmpdir();
    char path[512], err[512] = "";
    learn_store *s = NULL;
    CHECK(learn_store_open(path_in(path, sizeof path, dir, "m.db"), &s, err, sizeof err) == LAYA_OK);
    int64_t id = 7;
    CHECK(learn_store_add(s, (const uint8_t *)"ab\xff", 3, 1, &id, err, sizeof err) == LAYA_ERR_FORMAT);
    CHECK(strstr(err, "UTF-8") && id == 0);
    CHECK(learn_store_add(s, (const uint8_t *)"\xed\xa0\x80", 3, 1, &id, NULL, 0) == LAYA_ERR_FORMAT);
    uint8_t *big = malloc(LEARN_STORE_MAX_TEXT + 1);
    memset(big, 'x', LEARN_STORE_MAX_TEXT + 1);
    CHECK(learn_store_add(s, big, LEARN_STORE_MAX_TEXT + 1, 1, &id, err, sizeof err) == LAYA_ERR_LIMIT);
    CHECK(strstr(err, "limit"));
    CHECK(count_rows(s) == 0);
    CHECK(learn_store_add(s, big, LEARN_STORE_MAX_TEXT, 1, &id, NULL, 0) == LAYA_OK && id > 0);
    CHECK(learn_store_add(s, big, 0, 1, &id, NULL, 0) == LAYA_OK && id == 0);
    CHECK(count_rows(s) == 1);
    free(big);
    learn_store_close(s);
    rm_tree(dir);
}

TEST(learn_word_in_boundaries_and_cjk) {
    static const struct { const char *text, *word; int want; } cases[] = {
        {"Best regards, Tom", "Tom", 1},
        {"Tomato soup", "Tom", 0},
        {"Atom", "Tom", 0},
        {"to tom.", "Tom", 1},
        {"TOM", "tom", 1},
        {"x_Tom", "Tom", 0},
        {"Tom2", "Tom", 0},
        {"(Tom)", "Tom", 1},
        {"café noir", "café", 1},
        {"cafés", "café", 0},
        {"Müller", "Müll", 0},
        {"我想订个外卖吧", "外卖", 1},
        {"外卖", "外卖", 1},
        {"汤Tom汤", "Tom", 1},
        {"Tom😀", "Tom", 1},
        {"Best regards, Tom", "regards, Tom", 1},
        {"Best regards, Tommy", "regards, Tom", 0},
        {"@tom", "@tom", 1},
        {"a@tom", "@tom", 1},
        {"", "Tom", 0},
        {"To", "Tom", 0},
        {"订个外", "外卖", 0},
        {"\xffTom\xff", "Tom", 1},
        {"Tom Tomato", "Tomato", 1},
        {"Tomato Tom", "Tom", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = learn_word_in((const uint8_t *)cases[i].text, strlen(cases[i].text),
                                (const uint8_t *)cases[i].word, strlen(cases[i].word));
        CHECKF(got == cases[i].want, "'%s' in '%s': got %d", cases[i].word, cases[i].text, got);
    }
    CHECK(learn_word_in((const uint8_t *)"a\0Tom", 5, (const uint8_t *)"Tom", 3) == 1);
}

/* ---- forgetting -------------------------------------------------------------- */

/* A long text (several pages, so it lives in overflow pages) holding m. */
static char *long_text(const char *m) {
    size_t n = 12000, k = strlen(m);
    char *b = malloc(n + 1);
    for (size_t i = 0; i < n; i++) b[i] = "abcdefgh ijk"[i % 12];
    memcpy(b + 5000, m, k);
    b[n] = 0;
    return b;
}

TEST(learn_store_forget_all_leaves_no_bytes) {
    const char *dir = test_tmpdir();
    char path[512], err[512] = "";
    learn_store *s = NULL;
    CHECK(learn_store_open(path_in(path, sizeof path, dir, "m.db"), &s, err, sizeof err) == LAYA_OK);
    char *lt = long_text("QZXV-long-secret-4417");
    const char *texts[] = {"my pin hint is QZXV-short-secret-9921", lt, "订个外卖QZXV-cjk-secret"};
    for (int i = 0; i < 3; i++)
        CHECK(learn_store_add(s, (const uint8_t *)texts[i], strlen(texts[i]), 5, NULL, err, sizeof err) == LAYA_OK);
    /* The checker sees the text before the forget. */
    CHECK(bytes_on_disk(path, "QZXV-short-secret-9921"));
    CHECK(bytes_on_disk(path, "QZXV-long-secret-4417"));
    int64_t removed = 0, gen0, gen1;
    learn_store_state st;
    CHECK(learn_store_state_get(s, &st, NULL, 0) == LAYA_OK);
    gen0 = st.generation;
    CHECK(learn_store_forget_all(s, &removed, err, sizeof err) == LAYA_OK && removed == 3);
    CHECK(learn_store_state_get(s, &st, NULL, 0) == LAYA_OK);
    gen1 = st.generation;
    CHECK(gen1 == gen0 + 1);
    CHECK(count_rows(s) == 0);
    CHECK(!bytes_on_disk(path, "QZXV-short-secret-9921"));
    CHECK(!bytes_on_disk(path, "QZXV-long-secret-4417"));
    CHECK(!bytes_on_disk(path, "QZXV-cjk-secret"));
    CHECK(!bytes_on_disk(path, "abcdefgh ijk"));
    /* Nothing left to remove: the generation stays. */
    CHECK(learn_store_forget_all(s, &removed, NULL, 0) == LAYA_OK && removed == 0);
    CHECK(learn_store_state_get(s, &st, NULL, 0) == LAYA_OK && st.generation == gen1);
    learn_store_close(s);
    CHECK(!bytes_on_disk(path, "QZXV"));
    free(lt);
    rm_tree(dir);
}

TEST(learn_store_forget_since_and_word) {
    const char *dir = test_tmpdir();
    char path[512], err[512] = "";
    learn_store *s = NULL;
    CHECK(learn_store_open(path_in(path, sizeof path, dir, "m.db"), &s, err, sizeof err) == LAYA_OK);
    const struct { const char *text; int64_t t; } c[] = {
        {"old note KEEP-aaa", 100},         {"Best regards, Tom WORD-bbb", 200}, {"Tomato soup KEEP-ccc", 250},
        {"我想订个外卖 CJK-ddd", 260},      {"dinner with tom WORD-eee", 270},  {"late text SINCE-fff", 300},
        {"later text SINCE-ggg", 400},
    };
    for (int i = 0; i < 7; i++)
        CHECK(learn_store_add(s, (const uint8_t *)c[i].text, strlen(c[i].text), c[i].t, NULL, NULL, 0) == LAYA_OK);
    int64_t removed = -1;
    CHECK(learn_store_forget_since(s, 300, &removed, err, sizeof err) == LAYA_OK && removed == 2);
    CHECK(learn_store_forget_word(s, (const uint8_t *)"Tom", 3, &removed, err, sizeof err) == LAYA_OK);
    CHECK(removed == 2);
    CHECK(learn_store_forget_word(s, (const uint8_t *)"外卖", strlen("外卖"), &removed, NULL, 0) == LAYA_OK);
    CHECK(removed == 1);
    rows_seen r = {0};
    CHECK(learn_store_rows(s, 0, see_row, &r, NULL, 0) == LAYA_OK);
    CHECK(r.n == 2 && strstr(r.text[0], "KEEP-aaa") && strstr(r.text[1], "KEEP-ccc"));
    static const char *const gone[] = {"WORD-bbb", "CJK-ddd", "WORD-eee", "SINCE-fff", "SINCE-ggg", "外卖"};
    for (int i = 0; i < 6; i++) CHECKF(!bytes_on_disk(path, gone[i]), "%s still on disk", gone[i]);
    CHECK(bytes_on_disk(path, "KEEP-ccc"));
    /* Bad words are refused with a reason. */
    CHECK(learn_store_forget_word(s, (const uint8_t *)"", 0, &removed, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(learn_store_forget_word(s, (const uint8_t *)"\xc3", 1, &removed, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "UTF-8"));
    learn_store_close(s);
    rm_tree(dir);
}

typedef struct {
    int n;
    char text[8][64];
    int64_t count[8], first[8], last[8];
} list_seen;

static int see_list(void *ctx, const char *text, size_t len, int64_t count, int64_t first, int64_t last) {
    list_seen *l = ctx;
    if (l->n < 8) {
        snprintf(l->text[l->n], 64, "%.*s", (int)len, text);
        l->count[l->n] = count, l->first[l->n] = first, l->last[l->n] = last;
        l->n++;
    }
    return 0;
}

TEST(learn_memory_list_and_forget) {
    const char *dir = test_tmpdir();
    char path[512], err[512] = "";
    laya_memory *m = NULL;
    CHECKF(laya_memory_open(path_in(path, sizeof path, dir, "m.db"), &m, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(!strcmp(laya_memory_path(m), path));
    CHECK(sync_index(m) == LAYA_OK);
    const struct { const char *text; int64_t t; } c[] = {
        {"Best regards, Tom", 10}, {"hello", 20}, {"Best regards, Tom", 30}, {"bye", 40}, {"hello", 50},
    };
    for (int i = 0; i < 5; i++) {
        int learned = 0;
        CHECK(learn_memory_commit_at(m, c[i].text, strlen(c[i].text), c[i].t, &learned, NULL, 0) == LAYA_OK);
        CHECK(learned == 1);
    }
    list_seen l = {0};
    CHECK(laya_memory_list(m, see_list, &l, NULL, 0) == LAYA_OK);
    CHECK(l.n == 3);
    CHECK(!strcmp(l.text[0], "hello") && l.count[0] == 2 && l.first[0] == 20 && l.last[0] == 50);
    CHECK(!strcmp(l.text[1], "bye") && l.count[1] == 1);
    CHECK(!strcmp(l.text[2], "Best regards, Tom") && l.count[2] == 2 && l.first[2] == 10 && l.last[2] == 30);
    CHECK(index_bytes(m) == 17 + 5 + 17 + 3 + 5 + 4);
    int64_t removed = 0;
    /* forget_text: exactly one entry, never a prefix or a near miss. */
    CHECK(laya_memory_forget_text(m, "Best regards", 12, &removed, err, sizeof err) == LAYA_OK && removed == 0);
    CHECK(laya_memory_forget_text(m, "bye ", 4, &removed, err, sizeof err) == LAYA_OK && removed == 0);
    CHECK(laya_memory_forget_text(m, "bye", 3, &removed, err, sizeof err) == LAYA_OK && removed == 1);
    CHECK(index_bytes(m) == 17 + 5 + 17 + 5 + 3);
    CHECK(laya_memory_forget_text(m, "", 0, &removed, err, sizeof err) == LAYA_ERR_ARG && strstr(err, "empty"));
    CHECK(laya_memory_commit(m, "bye", 3, NULL, NULL, 0) == LAYA_OK);
    CHECK(index_bytes(m) == 17 + 5 + 17 + 5 + 3 + 4);
    CHECK(laya_memory_forget_text(m, "bye", 3, &removed, err, sizeof err) == LAYA_OK && removed == 1);
    CHECK(index_bytes(m) == 17 + 5 + 17 + 5 + 3);
    CHECK(laya_memory_forget_word(m, "tom", 3, &removed, err, sizeof err) == LAYA_OK && removed == 2);
    CHECK(index_bytes(m) == 5 + 5 + 1);
    CHECK(laya_memory_forget_since(m, 45, &removed, NULL, 0) == LAYA_OK && removed == 1);
    CHECK(index_bytes(m) == 5);
    CHECK(laya_memory_forget_all(m, &removed, NULL, 0) == LAYA_OK && removed == 1);
    CHECK(index_bytes(m) == 0);
    l.n = 0;
    CHECK(laya_memory_list(m, see_list, &l, NULL, 0) == LAYA_OK && l.n == 0);
    laya_memory_free(m);
    /* Forgotten stays forgotten after a restart. */
    CHECK(laya_memory_open(path, &m, err, sizeof err) == LAYA_OK);
    CHECK(sync_index(m) == LAYA_OK && index_bytes(m) == 0);
    CHECK(!bytes_on_disk(path, "regards"));
    laya_memory_free(m);
    rm_tree(dir);
}

/* The index is loaded by the first sync, not at open; until then commits
 * and forgets only touch the store, and the first sync sees them all. */
TEST(learn_memory_loads_at_first_sync) {
    const char *dir = test_tmpdir();
    char path[512];
    laya_memory *m = NULL;
    path_in(path, sizeof path, dir, "m.db");
    CHECK(laya_memory_open(path, &m, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_commit(m, "kept", 4, NULL, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_commit(m, "dropped", 7, NULL, NULL, 0) == LAYA_OK);
    int64_t removed;
    CHECK(laya_memory_forget_word(m, "dropped", 7, &removed, NULL, 0) == LAYA_OK && removed == 1);
    CHECK(index_bytes(m) == 0);
    laya_memory_free(m);
    CHECK(laya_memory_open(path, &m, NULL, 0) == LAYA_OK);
    CHECK(index_bytes(m) == 0);
    CHECK(sync_index(m) == LAYA_OK && index_bytes(m) == 4);
    CHECK(laya_memory_commit(m, "next", 4, NULL, NULL, 0) == LAYA_OK);
    CHECK(sync_index(m) == LAYA_OK && index_bytes(m) == 9);
    laya_memory_free(m);
    rm_tree(dir);
}

/* The first sync indexes only the newest commits that fill the index's
 * cap. learn_store_tail finds where they start; the index then knows the
 * same recent words as one fed every commit (the reference), and neither
 * holds the oldest. */
TEST(learn_memory_loads_the_newest_that_fit) {
    const char *dir = test_tmpdir();
    char path[512], t[300];
    enum { ROWS = 3000, LEN = 250 };
    learn_store *s = NULL;
    path_in(path, sizeof path, dir, "m.db");
    CHECK(learn_store_open(path, &s, NULL, 0) == LAYA_OK);
    learn_index *ref = NULL;
    CHECK(learn_index_new(LEARN_INDEX_DEFAULT_CAP, &ref) == LAYA_OK);
    for (int i = 0; i < ROWS; i++) {
        int n = snprintf(t, sizeof t, "w%05d", i);
        memset(t + n, ' ', LEN - (size_t)n);
        memcpy(t + LEN - 12, "lorem ipsum.", 12);
        CHECK(learn_store_add(s, (const uint8_t *)t, LEN, i, NULL, NULL, 0) == LAYA_OK);
        CHECK(learn_index_add(ref, (const uint8_t *)t, LEN) == LAYA_OK);
    }
    int64_t since = -1, max_id = 0;
    CHECK(learn_store_max_id(s, &max_id, NULL, 0) == LAYA_OK && max_id == ROWS);
    CHECK(learn_store_tail(s, 4 * (LEN + 1) - 3, &since, NULL, 0) == LAYA_OK && since == max_id - 4);
    CHECK(learn_store_tail(s, 4 * (LEN + 1), &since, NULL, 0) == LAYA_OK && since == max_id - 4);
    CHECK(learn_store_tail(s, (int64_t)ROWS * (LEN + 1) + 1, &since, NULL, 0) == LAYA_OK && since == 0);
    learn_store_close(s);
    laya_memory *m = NULL;
    CHECK(laya_memory_open(path, &m, NULL, 0) == LAYA_OK);
    CHECK(sync_index(m) == LAYA_OK);
    learn_memory_lock(m);
    const learn_index *ix = learn_memory_index(m);
    CHECK(m->last_id == max_id);
    CHECK(learn_index_bytes(ix) <= LEARN_INDEX_DEFAULT_CAP && learn_index_bytes(ix) >= LEARN_INDEX_DEFAULT_CAP / 2);
    for (int i = 0; i < ROWS; i++) {
        char w[8];
        snprintf(w, sizeof w, "w%05d", i);
        int a = learn_index_word_count(ix, (const uint8_t *)w, 6);
        int b = learn_index_word_count(ref, (const uint8_t *)w, 6);
        if (i >= ROWS - 1000) CHECKF(a == 1 && b == 1, "%s: %d (reference %d)", w, a, b);
        if (i < 100) CHECKF(a == 0 && b == 0, "%s: %d (reference %d)", w, a, b);
    }
    learn_memory_unlock(m);
    laya_memory_free(m);
    learn_index_free(ref);
    rm_tree(dir);
}

/* ---- incognito ----------------------------------------------------------------- */

TEST(learn_memory_incognito_learns_nothing_and_persists) {
    const char *dir = test_tmpdir();
    char path[512], err[512] = "";
    laya_memory *m = NULL, *other = NULL;
    path_in(path, sizeof path, dir, "m.db");
    CHECK(laya_memory_open(path, &m, err, sizeof err) == LAYA_OK);
    CHECK(laya_memory_open(path, &other, err, sizeof err) == LAYA_OK);
    CHECK(sync_index(m) == LAYA_OK);
    int on = -1, learned = -1;
    CHECK(laya_memory_get_incognito(m, &on, NULL, 0) == LAYA_OK && on == 0);
    CHECK(laya_memory_commit(m, "before incognito", 16, &learned, NULL, 0) == LAYA_OK && learned == 1);
    /* Switched on by another handle: m's very next commit obeys, unsynced. */
    CHECK(laya_memory_set_incognito(other, 1, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_commit(m, "PRIVATE-incognito-text", 22, &learned, NULL, 0) == LAYA_OK && learned == 0);
    CHECK(learn_memory_incognito(m) == 1);
    CHECK(laya_memory_commit(other, "PRIVATE-incognito-two", 21, &learned, NULL, 0) == LAYA_OK && learned == 0);
    CHECK(count_rows(m->store) == 1);
    CHECK(!bytes_on_disk(path, "PRIVATE-incognito"));
    CHECK(index_bytes(m) == 16);
    laya_memory_free(m);
    laya_memory_free(other);
    /* Reopened: still on, still learning nothing. */
    CHECK(laya_memory_open(path, &m, err, sizeof err) == LAYA_OK);
    CHECK(sync_index(m) == LAYA_OK && learn_memory_incognito(m) == 1);
    CHECK(laya_memory_get_incognito(m, &on, NULL, 0) == LAYA_OK && on == 1);
    CHECK(laya_memory_commit(m, "PRIVATE-after-reopen", 20, &learned, NULL, 0) == LAYA_OK && learned == 0);
    CHECK(laya_memory_set_incognito(m, 0, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_commit(m, "after incognito", 15, &learned, NULL, 0) == LAYA_OK && learned == 1);
    CHECK(count_rows(m->store) == 2);
    CHECK(!bytes_on_disk(path, "PRIVATE"));
    laya_memory_free(m);
    rm_tree(dir);
}

/* ---- files ----------------------------------------------------------------------- */

static int mode_of(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
}

TEST(learn_store_default_path_and_modes) {
    const char *dir = test_tmpdir();
    char xdg[512], p[600], err[512] = "", buf[LEARN_STORE_PATH_MAX];
    umask(022);
    path_in(xdg, sizeof xdg, dir, "xdg/data");
    setenv("XDG_DATA_HOME", xdg, 1);
    CHECK(learn_store_default_path(buf, sizeof buf, NULL, 0) == LAYA_OK);
    snprintf(p, sizeof p, "%s/laya/memory.db", xdg);
    CHECK(!strcmp(buf, p));
    learn_store *s = NULL;
    CHECKF(learn_store_open(NULL, &s, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(!strcmp(learn_store_path(s), p));
    CHECK(learn_store_add(s, (const uint8_t *)"x", 1, 1, NULL, NULL, 0) == LAYA_OK);
    CHECKF(mode_of(p) == 0600, "db mode %o", mode_of(p));
    snprintf(p, sizeof p, "%s/laya/memory.db-wal", xdg);
    CHECKF(mode_of(p) == 0600, "wal mode %o", mode_of(p));
    snprintf(p, sizeof p, "%s/laya/memory.db-shm", xdg);
    CHECKF(mode_of(p) == 0600, "shm mode %o", mode_of(p));
    snprintf(p, sizeof p, "%s/laya", xdg);
    CHECKF(mode_of(p) == 0700, "dir mode %o", mode_of(p));
    CHECKF(mode_of(xdg) == 0700, "created parent mode %o", mode_of(xdg));
    learn_store_close(s);
    /* Unset, empty or relative XDG_DATA_HOME: $HOME/.local/share. */
    char home[512];
    setenv("HOME", path_in(home, sizeof home, dir, "home"), 1);
    snprintf(p, sizeof p, "%s/.local/share/laya/memory.db", home);
    const char *xdgs[] = {NULL, "", "relative/dir"};
    for (int i = 0; i < 3; i++) {
        if (xdgs[i]) setenv("XDG_DATA_HOME", xdgs[i], 1);
        else unsetenv("XDG_DATA_HOME");
        CHECK(learn_store_default_path(buf, sizeof buf, NULL, 0) == LAYA_OK && !strcmp(buf, p));
    }
    unsetenv("HOME");
    CHECK(learn_store_default_path(buf, sizeof buf, err, sizeof err) == LAYA_ERR_ARG && strstr(err, "--memory"));
    /* A looser existing file is made private. */
    char loose[512];
    path_in(loose, sizeof loose, dir, "loose.db");
    int fd = open(loose, O_CREAT | O_WRONLY, 0644);
    close(fd);
    chmod(loose, 0644);
    CHECK(learn_store_open(loose, &s, err, sizeof err) == LAYA_OK);
    CHECKF(mode_of(loose) == 0600, "mode %o", mode_of(loose));
    learn_store_close(s);
    rm_tree(dir);
}

/* Opening must fail with want in the message, quickly (alarm: a hang
 * kills the test). */
static int refused(const char *path, laya_status want_st, const char *want) {
    char err[512] = "";
    learn_store *s = NULL;
    alarm(10);
    laya_status st = learn_store_open(path, &s, err, sizeof err);
    alarm(0);
    if (st == want_st && s == NULL && strstr(err, want)) return 1;
    fprintf(stderr, "    %s: status %d, '%s'\n", path, (int)st, err);
    learn_store_close(s);
    return 0;
}

TEST(learn_store_refuses_what_is_not_a_file) {
    const char *dir = test_tmpdir();
    char p[512], q[600];
    mkdir(path_in(p, sizeof p, dir, "adir"), 0700);
    CHECK(refused(p, LAYA_ERR_IO, "is a folder"));
    CHECK(mkfifo(path_in(p, sizeof p, dir, "fifo"), 0600) == 0);
    CHECK(refused(p, LAYA_ERR_IO, "named pipe"));
    CHECK(symlink("nowhere", path_in(p, sizeof p, dir, "dangling")) == 0);
    CHECK(refused(p, LAYA_ERR_IO, "link to nothing"));
    CHECK(symlink("fifo", path_in(p, sizeof p, dir, "tofifo")) == 0);
    CHECK(refused(p, LAYA_ERR_IO, "named pipe"));
    CHECK(refused("/dev/null", LAYA_ERR_IO, "device"));
    /* A -wal that is a FIFO. */
    path_in(p, sizeof p, dir, "w.db");
    snprintf(q, sizeof q, "%s-wal", p);
    CHECK(mkfifo(q, 0600) == 0);
    CHECK(refused(p, LAYA_ERR_IO, "not a regular file"));
    /* A symlink to a regular file is followed. */
    learn_store *s = NULL;
    char real[512];
    path_in(real, sizeof real, dir, "real.db");
    CHECK(learn_store_open(real, &s, NULL, 0) == LAYA_OK);
    learn_store_close(s);
    CHECK(symlink("real.db", path_in(p, sizeof p, dir, "link.db")) == 0);
    CHECK(learn_store_open(p, &s, NULL, 0) == LAYA_OK);
    learn_store_close(s);
    rm_tree(dir);
}

TEST(learn_store_refuses_newer_foreign_and_garbage) {
    const char *dir = test_tmpdir();
    char p[512];
    /* Newer schema: refused, the file byte for byte as it was. */
    path_in(p, sizeof p, dir, "newer.db");
    CHECK(raw_exec(p, "PRAGMA application_id = 1279351105; PRAGMA user_version = 5;"
                      "CREATE TABLE future(x); INSERT INTO future VALUES('keep me');") == SQLITE_OK);
    size_t n0, n1;
    uint8_t *before = slurp(p, &n0);
    CHECK(refused(p, LAYA_ERR_UNSUPPORTED, "newer Laya (schema 5, this build reads up to 3)"));
    uint8_t *after = slurp(p, &n1);
    CHECK(n0 == n1 && !memcmp(before, after, n0));
    free(before), free(after);
    /* Another program's database. */
    path_in(p, sizeof p, dir, "foreign.db");
    CHECK(raw_exec(p, "CREATE TABLE places(url); INSERT INTO places VALUES('x');") == SQLITE_OK);
    before = slurp(p, &n0);
    CHECK(refused(p, LAYA_ERR_FORMAT, "another program"));
    after = slurp(p, &n1);
    CHECK(n0 == n1 && !memcmp(before, after, n0));
    free(before), free(after);
    /* Garbage. */
    path_in(p, sizeof p, dir, "garbage.db");
    FILE *f = fopen(p, "wb");
    uint32_t x = 12345;
    for (int i = 0; i < 8192; i++) {
        x = x * 1664525u + 1013904223u;
        fputc((int)(x >> 24), f);
    }
    fclose(f);
    CHECK(refused(p, LAYA_ERR_FORMAT, "not a SQLite database"));
    /* A real store cut in half: refused as damaged at open (the load reads
     * every row). */
    path_in(p, sizeof p, dir, "cut.db");
    learn_store *s = NULL;
    CHECK(learn_store_open(p, &s, NULL, 0) == LAYA_OK);
    char *lt = long_text("cut");
    for (int i = 0; i < 40; i++) learn_store_add(s, (const uint8_t *)lt, 3000 + (size_t)i, i, NULL, NULL, 0);
    learn_store_close(s);
    free(lt);
    size_t n;
    uint8_t *b = slurp(p, &n);
    CHECK(n > 8192);
    CHECK(truncate(p, (off_t)(n / 2)) == 0);
    free(b);
    char err[512] = "";
    laya_memory *m = NULL;
    laya_status st = laya_memory_open(p, &m, err, sizeof err);
    CHECKF(st == LAYA_ERR_FORMAT && strstr(err, "damaged") && strstr(err, "move it away"), "%d %s", (int)st, err);
    rm_tree(dir);
}

TEST(learn_store_refuses_edited_schema) {
    const char *dir = test_tmpdir();
    char p[512];
    static const char *const edits[] = {
        "CREATE TRIGGER spy AFTER INSERT ON commits BEGIN SELECT 1; END;",
        "CREATE VIEW v AS SELECT * FROM commits;",
        "CREATE TABLE extra(x);",
        "DROP TABLE meta;",
    };
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "e%d.db", i);
        learn_store *s = NULL;
        CHECK(learn_store_open(path_in(p, sizeof p, dir, name), &s, NULL, 0) == LAYA_OK);
        learn_store_close(s);
        CHECK(raw_exec(p, edits[i]) == SQLITE_OK);
        CHECKF(refused(p, LAYA_ERR_FORMAT, "Laya's tables"), "edit %d", i);
    }
    rm_tree(dir);
}

TEST(learn_store_migrates_v1) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    path_in(p, sizeof p, dir, "v1.db");
    /* A v1 file as the v1 schema wrote it (learn_store.h). */
    CHECK(raw_exec(p, "PRAGMA application_id = 1279351105;"
                      "CREATE TABLE commits(id INTEGER PRIMARY KEY, text TEXT NOT NULL, t INTEGER NOT NULL);"
                      "INSERT INTO commits VALUES(3, 'Best regards, Tom', 111);"
                      "INSERT INTO commits VALUES(7, '我想订个外卖', 222);"
                      "INSERT INTO commits VALUES(9, 'third', 333);"
                      "PRAGMA user_version = 1;") == SQLITE_OK);
    laya_memory *m = NULL;
    CHECKF(laya_memory_open(p, &m, err, sizeof err) == LAYA_OK, "%s", err);
    rows_seen r = {0};
    CHECK(learn_store_rows(m->store, 0, see_row, &r, NULL, 0) == LAYA_OK);
    CHECK(r.n == 3);
    CHECK(r.ids[0] == 3 && r.ids[1] == 7 && r.ids[2] == 9);
    CHECK(r.len[0] == 17 && !memcmp(r.text[0], "Best regards, Tom", 17) && r.t[0] == 111);
    CHECK(r.len[1] == strlen("我想订个外卖") && !memcmp(r.text[1], "我想订个外卖", r.len[1]));
    CHECK(sync_index(m) == LAYA_OK);
    CHECK(index_bytes(m) == 17 + 1 + strlen("我想订个外卖") + 1 + 5);
    int on = -1;
    CHECK(laya_memory_get_incognito(m, &on, NULL, 0) == LAYA_OK && on == 0);
    int learned = 0;
    CHECK(laya_memory_commit(m, "new", 3, &learned, NULL, 0) == LAYA_OK && learned);
    CHECK(learn_store_max_id(m->store, &r.ids[0], NULL, 0) == LAYA_OK && r.ids[0] == 10);
    laya_memory_free(m);
    CHECK(raw_int(p, "PRAGMA user_version") == LEARN_STORE_SCHEMA);
    CHECK(raw_int(p, "SELECT count(*) FROM commits WHERE typeof(text) = 'blob'") == 4);
    CHECK(raw_int(p, "SELECT value FROM meta WHERE key = 'generation'") == 0);
    CHECK(raw_int(p, "PRAGMA integrity_check") == 0);  /* "ok" reads as 0 */
    rm_tree(dir);
}

TEST(learn_store_migrates_v2) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    path_in(p, sizeof p, dir, "v2.db");
    /* A v2 file as the v2 schema wrote it (learn_store.h): incognito on, a
     * generation moved by forgets. */
    CHECK(raw_exec(p, "PRAGMA application_id = 1279351105;"
                      "CREATE TABLE commits(id INTEGER PRIMARY KEY AUTOINCREMENT, text BLOB NOT NULL, t INTEGER NOT NULL);"
                      "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
                      "INSERT INTO meta(key, value) VALUES('incognito', 1), ('generation', 4);"
                      "INSERT INTO commits(text, t) VALUES(CAST('Best regards, Tom' AS BLOB), 111);"
                      "INSERT INTO commits(text, t) VALUES(CAST('我想订个外卖' AS BLOB), 222);"
                      "PRAGMA user_version = 2;") == SQLITE_OK);
    laya_memory *m = NULL;
    CHECKF(laya_memory_open(p, &m, err, sizeof err) == LAYA_OK, "%s", err);
    rows_seen r = {0};
    CHECK(learn_store_rows(m->store, 0, see_row, &r, NULL, 0) == LAYA_OK);
    CHECK(r.n == 2 && r.ids[0] == 1 && r.len[0] == 17 && !memcmp(r.text[0], "Best regards, Tom", 17));
    int on = -1;
    CHECK(laya_memory_get_incognito(m, &on, NULL, 0) == LAYA_OK && on == 1);
    CHECK(raw_int(p, "PRAGMA user_version") == LEARN_STORE_SCHEMA);
    CHECK(raw_int(p, "SELECT value FROM meta WHERE key = 'generation'") == 4);
    CHECK(raw_int(p, "SELECT value FROM meta WHERE key = 'fb_clock'") == 0);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 0);
    CHECK(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE name = 'feedback_clock'") == 1);
    CHECK(raw_int(p, "PRAGMA integrity_check") == 0);
    /* the migrated store takes feedback once incognito is off */
    CHECK(laya_memory_set_incognito(m, 0, NULL, 0) == LAYA_OK);
    const uint8_t *t[] = {(const uint8_t *)"gards"};
    size_t l[] = {5};
    int learned = 0;
    CHECK(learn_memory_feedback(m, (const uint8_t *)"Best re", 7, t, l, 1, -1, &learned, err, sizeof err) == LAYA_OK);
    CHECK(learned && learn_memory_fb_flush(m, err, sizeof err) == LAYA_OK);
    laya_memory_free(m);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 1);
    CHECK(raw_int(p, "SELECT value FROM meta WHERE key = 'fb_clock'") == 1);
    rm_tree(dir);
}

/* ---- feedback (learn_fb.h) ------------------------------------------------------ */

/* One feedback event: texts shown at key, accepted the index taken. */
static laya_status fb_event(laya_memory *m, const char *key, const char *const *texts, int n, int accepted,
                            int *learned) {
    size_t lens[16];
    for (int i = 0; i < n; i++) lens[i] = strlen(texts[i]);
    return learn_memory_feedback(m, (const uint8_t *)key, strlen(key), (const uint8_t *const *)texts, lens, n,
                                 accepted, learned, NULL, 0);
}

/* What the search would multiply text's probability by after key, as of
 * a sync now. */
static double fb_factor(laya_memory *m, const char *key, const char *text) {
    learn_memory_lock(m);
    learn_memory_sync(m, NULL, 0);
    double f = learn_fb_factor(learn_memory_fb(m), learn_fb_key_hash((const uint8_t *)key, strlen(key)),
                               (const uint8_t *)text, strlen(text), 0);
    learn_memory_unlock(m);
    return f;
}

typedef struct {
    int n;
    char key[16][64], text[16][64];
    double ign[16], acc[16];
} fb_seen;

static int see_fb(void *ctx, const char *key, size_t kl, const char *text, size_t tl, double ign, double acc,
                  int64_t last) {
    fb_seen *f = ctx;
    (void)last;
    if (f->n < 16) {
        snprintf(f->key[f->n], 64, "%.*s", (int)kl, key);
        snprintf(f->text[f->n], 64, "%.*s", (int)tl, text);
        f->ign[f->n] = ign, f->acc[f->n] = acc;
        f->n++;
    }
    return 0;
}

TEST(learn_memory_feedback_is_kept_and_shared) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    laya_memory *m = NULL, *o = NULL;
    CHECK(laya_memory_open(path_in(p, sizeof p, dir, "m.db"), &m, err, sizeof err) == LAYA_OK);
    CHECK(laya_memory_open(p, &o, err, sizeof err) == LAYA_OK);
    CHECK(fb_factor(o, "the k", "ey") == 1.0);   /* loads o's table, empty */
    const char *shown[] = {"ey", "ernel module"};
    int learned = 0;
    CHECK(fb_event(m, "the k", shown, 2, -1, &learned) == LAYA_OK && learned);
    CHECK(fb_event(m, "the k", shown, 2, 1, &learned) == LAYA_OK);
    /* in this process at once; in the store only once written */
    CHECK(fb_factor(m, "the k", "ey") < 0.4);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 0);
    CHECK(fb_factor(o, "the k", "ey") == 1.0);
    CHECK(learn_memory_fb_flush(m, err, sizeof err) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 2);
    CHECK(raw_int(p, "SELECT value FROM meta WHERE key = 'fb_clock'") == 2);
    /* the other process's next sync has it */
    CHECK_NEAR(fb_factor(o, "the k", "ey"), fb_factor(m, "the k", "ey"), 1e-6, 0);
    CHECK(fb_factor(o, "the k", "ernel module") == 1.0 || fabs(fb_factor(o, "the k", "ernel module") - 1) < 1e-3);
    /* and what o adds reaches m, on top of m's own */
    CHECK(fb_event(o, "the k", shown, 1, -1, NULL) == LAYA_OK && learn_memory_fb_flush(o, NULL, 0) == LAYA_OK);
    CHECK(fb_factor(m, "the k", "ey") < fb_factor(m, "the k", "ernel module"));
    CHECK_NEAR(fb_factor(m, "the k", "ey"), fb_factor(o, "the k", "ey"), 1e-6, 0);
    /* the list, decayed to the store's clock */
    fb_seen f = {0};
    CHECK(laya_memory_list_feedback(m, see_fb, &f, err, sizeof err) == LAYA_OK);
    CHECK(f.n == 2);
    for (int i = 0; i < 2; i++) CHECK(!strcmp(f.key[i], "the k"));
    int ey = strcmp(f.text[0], "ey") != 0;
    CHECK(!strcmp(f.text[ey], "ey") && !strcmp(f.text[1 - ey], "ernel module"));
    CHECK_NEAR(f.ign[ey], 3.0, 0.01, 0);
    CHECK_NEAR(f.acc[1 - ey], 1.0, 0.01, 0);
    /* a commit writes the pending feedback whose context it holds; the
     * rest stays in memory, and closing writes nothing */
    CHECK(fb_event(m, "a b", shown, 1, -1, NULL) == LAYA_OK);
    CHECK(laya_memory_commit(m, "text", 4, NULL, NULL, 0) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 2);
    CHECK(fb_factor(m, "a b", "ey") < 1.0);
    CHECK(laya_memory_commit(m, "a b c", 5, NULL, NULL, 0) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 3);
    CHECK(fb_event(m, "c d", shown, 1, -1, NULL) == LAYA_OK);
    laya_memory_free(m);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 3);
    /* a new process loads what was committed */
    CHECK(laya_memory_open(p, &m, err, sizeof err) == LAYA_OK);
    CHECK(fb_factor(m, "c d", "ey") == 1.0 && fb_factor(m, "a b", "ey") < 1.0 && fb_factor(m, "the k", "ey") < 0.3);
    laya_memory_free(m);
    laya_memory_free(o);
    CHECK(raw_int(p, "PRAGMA integrity_check") == 0);
    rm_tree(dir);
}

TEST(learn_memory_feedback_is_forgotten) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    laya_memory *m = NULL, *o = NULL;
    CHECK(laya_memory_open(path_in(p, sizeof p, dir, "m.db"), &m, err, sizeof err) == LAYA_OK);
    CHECK(laya_memory_open(p, &o, err, sizeof err) == LAYA_OK);
    const struct { const char *key, *text; } r[] = {
        {"to Zeb", "ulon QFB-across"},    /* the word across context and text */
        {"Zebulon w", "rote QFB-ctx"},    /* in the context */
        {"see the", " Zebulon QFB-text"}, /* in the text */
        {"the k", "ernel QFB-keep"},      /* kept */
    };
    for (int i = 0; i < 4; i++) CHECK(fb_event(m, r[i].key, &r[i].text, 1, -1, NULL) == LAYA_OK);
    CHECK(learn_memory_fb_flush(m, NULL, 0) == LAYA_OK);
    CHECK(fb_factor(o, "to Zeb", "ulon QFB-across") < 1.0);
    CHECK(bytes_on_disk(p, "QFB-across") && bytes_on_disk(p, "QFB-ctx"));
    /* a pending row holding the word (never on disk) goes from memory too */
    const char *pend = "pending QFB-pend";
    CHECK(fb_event(m, "Zebulon's", &pend, 1, -1, NULL) == LAYA_OK);
    int64_t removed = -1;
    CHECK(laya_memory_forget_word(m, "zebulon", 7, &removed, err, sizeof err) == LAYA_OK && removed == 0);
    CHECK(learn_store_fb_forgotten(m->store) == 3);
    CHECK(fb_factor(m, "Zebulon's", pend) == 1.0);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 1);
    static const char *const gone[] = {"QFB-across", "QFB-ctx", "QFB-text", "QFB-pend"};
    for (int i = 0; i < 4; i++) CHECKF(!bytes_on_disk(p, gone[i]), "%s still on disk", gone[i]);
    CHECK(bytes_on_disk(p, "QFB-keep"));
    /* both processes drop them from their tables */
    for (int i = 0; i < 3; i++) {
        CHECK(fb_factor(m, r[i].key, r[i].text) == 1.0);
        CHECK(fb_factor(o, r[i].key, r[i].text) == 1.0);
    }
    CHECK(fb_factor(o, "the k", "ernel QFB-keep") < 1.0);
    /* since: rows changed at or after the time */
    CHECK(raw_exec(p, "UPDATE feedback SET t = 100") == SQLITE_OK);
    const char *late = "late QFB-since";
    CHECK(fb_event(m, "x y", &late, 1, -1, NULL) == LAYA_OK && learn_memory_fb_flush(m, NULL, 0) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 2);
    CHECK(laya_memory_forget_since(m, 200, &removed, err, sizeof err) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 1 && !bytes_on_disk(p, "QFB-since"));
    CHECK(fb_factor(o, "x y", late) == 1.0 && fb_factor(o, "the k", "ernel QFB-keep") < 1.0);
    /* all */
    CHECK(laya_memory_forget_all(m, &removed, err, sizeof err) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 0 && !bytes_on_disk(p, "QFB"));
    CHECK(fb_factor(m, "the k", "ernel QFB-keep") == 1.0 && fb_factor(o, "the k", "ernel QFB-keep") == 1.0);
    /* o's events from before the forget are not written after it */
    const char *old = "old QFB-stale";
    CHECK(fb_event(o, "q r", &old, 1, -1, NULL) == LAYA_OK);
    laya_memory *w = NULL;
    CHECK(laya_memory_open(p, &w, err, sizeof err) == LAYA_OK);
    CHECK(laya_memory_commit(w, "a forget needs something to remove", 34, NULL, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_forget_all(w, &removed, err, sizeof err) == LAYA_OK && removed == 1);
    laya_memory_free(w);
    CHECK(learn_memory_fb_flush(o, NULL, 0) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 0 && !bytes_on_disk(p, "QFB-stale"));
    CHECK(fb_factor(o, "q r", old) == 1.0);
    laya_memory_free(m);
    laya_memory_free(o);
    rm_tree(dir);
}

/* forget_text takes the feedback rows that may be a trace of the text:
 * context or suggestion inside it, byte for byte; a row that only shares
 * part of one (a prefix, a word) stays, and so does one with an empty
 * context (it would otherwise match every text). */
TEST(learn_memory_feedback_forget_text) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    laya_memory *m = NULL, *o = NULL;
    CHECK(laya_memory_open(path_in(p, sizeof p, dir, "m.db"), &m, err, sizeof err) == LAYA_OK);
    CHECK(laya_memory_open(p, &o, err, sizeof err) == LAYA_OK);
    const char *forgotten = "Dear Ann, QFT-one and QFT-two here";
    CHECK(laya_memory_commit(m, forgotten, strlen(forgotten), NULL, NULL, 0) == LAYA_OK);
    const struct { const char *key, *text; int gone; } r[] = {
        {"Ann, QFT-one", " never QFB-ctx", 1},   /* the context is in the text */
        {"QFB-tk x", "QFT-two here", 1},         /* the suggestion is */
        {"Dear Ann, QFB-near", "here QFB-near2", 0},   /* each only shares a part */
        {"the k", "ernel QFB-keep", 0},          /* nothing in common */
        {"", "QFB-empty", 0},                    /* an empty context is no match */
    };
    for (int i = 0; i < 5; i++) CHECK(fb_event(m, r[i].key, &r[i].text, 1, -1, NULL) == LAYA_OK);
    CHECK(learn_memory_fb_flush(m, NULL, 0) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 5);
    for (int i = 0; i < 5; i++) CHECK(fb_factor(o, r[i].key, r[i].text) < 1.0);
    /* a pending row (not yet in the store) whose context is in the text goes too */
    const char *pend = "pending QFB-pend";
    CHECK(fb_event(m, "QFT-two", &pend, 1, -1, NULL) == LAYA_OK);
    int64_t removed = -1;
    CHECK(laya_memory_forget_text(m, forgotten, strlen(forgotten), &removed, err, sizeof err) == LAYA_OK);
    CHECK(removed == 1 && learn_store_fb_forgotten(m->store) == 2);
    CHECK(fb_factor(m, "QFT-two", pend) == 1.0);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 3);
    static const char *const gone[] = {"QFT-one", "QFT-two", "QFB-ctx", "QFB-tk", "QFB-pend"};
    for (int i = 0; i < 5; i++) CHECKF(!bytes_on_disk(p, gone[i]), "%s still on disk", gone[i]);
    CHECK(bytes_on_disk(p, "QFB-near2") && bytes_on_disk(p, "QFB-keep") && bytes_on_disk(p, "QFB-empty"));
    /* both processes' tables follow the store */
    for (int i = 0; i < 5; i++) {
        CHECKF((fb_factor(m, r[i].key, r[i].text) == 1.0) == r[i].gone, "row %d in m", i);
        CHECKF((fb_factor(o, r[i].key, r[i].text) == 1.0) == r[i].gone, "row %d in o", i);
    }
    CHECK(fb_factor(m, "QFT-two", pend) == 1.0 && fb_factor(o, "QFT-two", pend) == 1.0);
    /* with no commit left to remove, a forget still takes matching rows */
    CHECK(laya_memory_forget_text(m, "the kernel QFB-keep", 19, &removed, err, sizeof err) == LAYA_OK);
    CHECK(removed == 0 && learn_store_fb_forgotten(m->store) == 1 && !bytes_on_disk(p, "QFB-keep"));
    CHECK(fb_factor(o, "the k", "ernel QFB-keep") == 1.0);
    laya_memory_free(m);
    laya_memory_free(o);
    CHECK(raw_int(p, "PRAGMA integrity_check") == 0);
    rm_tree(dir);
}

TEST(learn_memory_feedback_incognito_learns_nothing) {
    const char *dir = test_tmpdir();
    char p[512];
    laya_memory *m = NULL, *o = NULL;
    CHECK(laya_memory_open(path_in(p, sizeof p, dir, "m.db"), &m, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_open(p, &o, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_set_incognito(m, 1, NULL, 0) == LAYA_OK);
    const char *t = "QFB-incognito";
    int learned = 1;
    CHECK(fb_event(m, "a b", &t, 1, -1, &learned) == LAYA_OK && !learned);
    CHECK(fb_factor(m, "a b", t) == 1.0);
    laya_memory_free(m);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 0);
    /* switched on by another process while events wait: they are not written */
    CHECK(laya_memory_open(p, &m, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_set_incognito(m, 0, NULL, 0) == LAYA_OK);
    CHECK(fb_event(o, "a b", &t, 1, -1, &learned) == LAYA_OK && learned);
    CHECK(laya_memory_set_incognito(m, 1, NULL, 0) == LAYA_OK);
    CHECK(learn_memory_fb_flush(o, NULL, 0) == LAYA_OK);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback") == 0 && !bytes_on_disk(p, "QFB-incognito"));
    laya_memory_free(o);
    laya_memory_free(m);
    rm_tree(dir);
}

TEST(learn_store_feedback_cap_evicts_oldest) {
    const char *dir = test_tmpdir();
    char p[512];
    laya_memory *m = NULL;
    CHECK(laya_memory_open(path_in(p, sizeof p, dir, "m.db"), &m, NULL, 0) == LAYA_OK);
    learn_store_set_fb_cap(m->store, 100);
    const char *t = "w";
    for (int i = 0; i < 400; i++) {
        char key[32];
        snprintf(key, sizeof key, "key %d", i);
        CHECK(fb_event(m, key, &t, 1, -1, NULL) == LAYA_OK);
        if (i % 10 == 9) {
            CHECK(learn_memory_fb_flush(m, NULL, 0) == LAYA_OK);
            int rows = (int)raw_int(p, "SELECT count(*) FROM feedback");
            CHECKF(rows <= 100, "%d rows after %d events", rows, i + 1);
        }
    }
    CHECK(raw_int(p, "SELECT count(*) FROM feedback WHERE ctx = CAST('key 399' AS BLOB)") == 1);
    CHECK(raw_int(p, "SELECT count(*) FROM feedback WHERE ctx = CAST('key 0' AS BLOB)") == 0);
    laya_memory_free(m);
    rm_tree(dir);
}

/* ---- the cap ------------------------------------------------------------------- */

TEST(learn_store_cap_evicts_oldest) {
    const char *dir = test_tmpdir();
    char p[512];
    learn_store *s = NULL;
    CHECK(learn_store_open(path_in(p, sizeof p, dir, "cap.db"), &s, NULL, 0) == LAYA_OK);
    learn_store_set_cap(s, 100);
    int evictions = 0, prev = 0;
    for (int i = 0; i < 400; i++) {
        char t[32];
        int n = snprintf(t, sizeof t, "commit %d", i);
        int64_t id;
        CHECK(learn_store_add(s, (const uint8_t *)t, (size_t)n, i, &id, NULL, 0) == LAYA_OK && id == i + 1);
        int rows = (int)raw_int(p, "SELECT count(*) FROM commits");
        CHECKF(rows <= 100, "%d rows after %d adds", rows, i + 1);
        if (rows < prev) {
            evictions++;
            CHECK(rows == 95);
            CHECK(raw_int(p, "SELECT min(id) FROM commits") == id - 94);
        }
        prev = rows;
    }
    /* The 101st row sends the count down to 95: one eviction per 6 adds. */
    CHECKF(evictions == (400 - 100) / 6, "%d evictions", evictions);
    learn_store_close(s);
    rm_tree(dir);
}

/* ---- several connections, threads, processes -------------------------------------- */

TEST(learn_memory_second_connection_syncs) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    laya_memory *a = NULL, *b = NULL;
    path_in(p, sizeof p, dir, "m.db");
    CHECK(laya_memory_open(p, &a, err, sizeof err) == LAYA_OK);
    CHECK(laya_memory_open(p, &b, err, sizeof err) == LAYA_OK);
    CHECK(sync_index(a) == LAYA_OK && sync_index(b) == LAYA_OK);
    int learned;
    CHECK(laya_memory_commit(a, "first from a", 12, &learned, NULL, 0) == LAYA_OK && learned);
    learn_memory_lock(b);
    CHECK(learn_index_bytes(learn_memory_index(b)) == 0);
    uint64_t v0 = learn_memory_version(b);
    CHECK(learn_memory_sync(b, err, sizeof err) == LAYA_OK);
    CHECK(learn_index_bytes(learn_memory_index(b)) == 12);
    CHECK(learn_memory_version(b) != v0);
    /* Nothing new: no change. */
    v0 = learn_memory_version(b);
    CHECK(learn_memory_sync(b, NULL, 0) == LAYA_OK && learn_memory_version(b) == v0);
    learn_memory_unlock(b);
    /* Interleaved commits land in commit order in both indexes. */
    CHECK(laya_memory_commit(a, "second", 6, &learned, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_commit(b, "third", 5, &learned, NULL, 0) == LAYA_OK);
    CHECK(laya_memory_commit(a, "fourth", 6, &learned, NULL, 0) == LAYA_OK);
    int64_t max_id;
    CHECK(learn_store_max_id(a->store, &max_id, NULL, 0) == LAYA_OK);
    laya_memory *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        learn_memory_lock(both[i]);
        CHECK(learn_memory_sync(both[i], NULL, 0) == LAYA_OK);
        CHECK(learn_index_bytes(learn_memory_index(both[i])) == 12 + 1 + 6 + 1 + 5 + 1 + 6);
        CHECK(both[i]->last_id == max_id && !both[i]->stale);
        learn_memory_unlock(both[i]);
    }
    /* A forget in a reaches b's index at b's next sync; incognito too. */
    int64_t removed;
    CHECK(laya_memory_forget_word(a, "third", 5, &removed, NULL, 0) == LAYA_OK && removed == 1);
    CHECK(laya_memory_set_incognito(a, 1, NULL, 0) == LAYA_OK);
    learn_memory_lock(b);
    CHECK(learn_memory_sync(b, NULL, 0) == LAYA_OK);
    CHECK(learn_index_bytes(learn_memory_index(b)) == 12 + 1 + 6 + 1 + 6);
    CHECK(learn_memory_incognito(b) == 1);
    learn_memory_unlock(b);
    laya_memory_free(a);
    laya_memory_free(b);
    rm_tree(dir);
}

/* learn_store_changed (the WAL-index header, then data_version) against
 * its reference (data_version alone) over random commits by another
 * connection, commits of its own, and checkpoints that restart the WAL:
 * both say "changed" exactly when another connection committed. */
TEST(learn_store_changed_matches_reference) {
    const char *dir = test_tmpdir();
    char p[512];
    learn_store *w = NULL, *fast = NULL, *ref = NULL;
    path_in(p, sizeof p, dir, "m.db");
    CHECK(learn_store_open(p, &w, NULL, 0) == LAYA_OK);
    CHECK(learn_store_open(p, &fast, NULL, 0) == LAYA_OK);
    CHECK(learn_store_open(p, &ref, NULL, 0) == LAYA_OK);
    CHECK(learn_store_fast_changed(fast));
    uint32_t rng = 7;
    int n_changed = 0;
    for (int i = 0; i < 400; i++) {
        rng = rng * 1664525u + 1013904223u;
        int action = (int)(rng >> 28) % 5, by_w = 0, by_fast = 0;
        if (action <= 1) by_w = learn_store_add(w, (const uint8_t *)"w", 1, i, NULL, NULL, 0) == LAYA_OK;
        if (action == 2) by_fast = learn_store_add(fast, (const uint8_t *)"f", 1, i, NULL, NULL, 0) == LAYA_OK;
        if (action == 3) {
            by_w = learn_store_add(w, (const uint8_t *)"w", 1, i, NULL, NULL, 0) == LAYA_OK;
            int64_t removed;
            by_w &= learn_store_forget_since(w, i, &removed, NULL, 0) == LAYA_OK;   /* + TRUNCATE checkpoint */
        }
        int cf = -1, cr = -1;
        CHECK(learn_store_changed(fast, &cf, NULL, 0) == LAYA_OK);
        CHECK(learn_store_changed_ref(ref, &cr, NULL, 0) == LAYA_OK);
        CHECKF(cf == by_w, "step %d (action %d): fast says %d", i, action, cf);
        CHECKF(cr == (by_w || by_fast), "step %d (action %d): reference says %d", i, action, cr);
        n_changed += cf;
        /* Asked again with nothing new: unchanged. */
        CHECK(learn_store_changed(fast, &cf, NULL, 0) == LAYA_OK && cf == 0);
        CHECK(learn_store_changed_ref(ref, &cr, NULL, 0) == LAYA_OK && cr == 0);
    }
    CHECK(n_changed > 100);
    learn_store_close(w);
    learn_store_close(fast);
    learn_store_close(ref);
    rm_tree(dir);
}

/* Another process commits; this one's index has each commit at its next
 * sync (the WAL-index header is shared memory between the processes). */
TEST(learn_memory_sees_another_process) {
    const char *dir = test_tmpdir();
    char p[512];
    laya_memory *m = NULL;
    path_in(p, sizeof p, dir, "m.db");
    int go[2], done[2];
    CHECK(pipe(go) == 0 && pipe(done) == 0);
    /* Fork before opening: a child must not open the file while a parent's
     * connection is in its memory (laya.h). */
    pid_t pid = fork();
    if (pid == 0) {
        laya_memory *c = NULL;
        char b;
        close(go[1]), close(done[0]);
        if (laya_memory_open(p, &c, NULL, 0) != LAYA_OK) _exit(2);
        while (read(go[0], &b, 1) == 1) {
            if (laya_memory_commit(c, "0123456789", 10, NULL, NULL, 0) != LAYA_OK) _exit(3);
            if (write(done[1], &b, 1) != 1) _exit(4);
        }
        laya_memory_free(c);
        _exit(0);
    }
    close(go[0]), close(done[1]);
    CHECK(laya_memory_open(p, &m, NULL, 0) == LAYA_OK);
    CHECK(sync_index(m) == LAYA_OK);
    for (int i = 0; i < 50; i++) {
        char b = 'x';
        CHECK(write(go[1], &b, 1) == 1 && read(done[0], &b, 1) == 1);
        learn_memory_lock(m);
        laya_status st = learn_memory_sync(m, NULL, 0);
        size_t n = learn_index_bytes(learn_memory_index(m));
        learn_memory_unlock(m);
        CHECK(st == LAYA_OK);
        CHECKF(n == (size_t)(i + 1) * 11 - 1, "after %d commits the index holds %zu bytes", i + 1, n);
    }
    close(go[1]);
    int wst = 0;
    waitpid(pid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    laya_memory_free(m);
    rm_tree(dir);
}

/* Processes that open a new file at the same moment (an editor and the
 * daemon at login) all get the store: one makes the schema, the others
 * see either nothing or all of it, never half (a race the CI once hit). */
static int open_store(const void *path, char *err, size_t errlen) {
    learn_store *s = NULL;
    if (learn_store_open(path, &s, err, errlen) != LAYA_OK) return 1;
    learn_store_close(s);
    return 0;
}

TEST(learn_store_opened_at_once_by_many) {
    const char *dir = test_tmpdir();
    for (int r = 0; r < 12; r++) {
        char p[512], name[32], msg[512];
        snprintf(name, sizeof name, "m%d.db", r);
        path_in(p, sizeof p, dir, name);
        CHECKF(test_at_once(6, open_store, p, msg, sizeof msg) == 0,
               "round %d: a process could not open the new store: %s", r, msg);
    }
    rm_tree(dir);
}

TEST(learn_memory_in_memory_store) {
    laya_memory *a = NULL, *b = NULL;
    char err[256] = "";
    CHECKF(laya_memory_open(LEARN_STORE_IN_MEMORY, &a, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(laya_memory_open(LEARN_STORE_IN_MEMORY, &b, err, sizeof err) == LAYA_OK);
    int learned;
    CHECK(laya_memory_commit(a, "only in a", 9, &learned, NULL, 0) == LAYA_OK && learned);
    CHECK(access(":memory:", F_OK) != 0);
    learn_memory_lock(b);
    CHECK(learn_memory_sync(b, NULL, 0) == LAYA_OK && learn_index_bytes(learn_memory_index(b)) == 0);
    learn_memory_unlock(b);
    int64_t removed;
    CHECK(laya_memory_forget_all(a, &removed, NULL, 0) == LAYA_OK && removed == 1);
    laya_memory_free(a);
    laya_memory_free(b);
}

enum { THREADS = 4, PER_THREAD = 40 };

static void *commit_many(void *arg) {
    laya_memory *m = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char t[16];
        snprintf(t, sizeof t, "t%03d", i);
        if (laya_memory_commit(m, t, 4, NULL, NULL, 0) != LAYA_OK) return (void *)1;
        learn_memory_lock(m);
        learn_memory_sync(m, NULL, 0);
        learn_memory_unlock(m);
    }
    return NULL;
}

TEST(learn_memory_threads_share_one_handle) {
    const char *dir = test_tmpdir();
    char p[512];
    laya_memory *m = NULL;
    CHECK(laya_memory_open(path_in(p, sizeof p, dir, "m.db"), &m, NULL, 0) == LAYA_OK);
    CHECK(sync_index(m) == LAYA_OK);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, commit_many, m);
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        failures += r != NULL;
    }
    CHECK(failures == 0);
    CHECK(raw_int(p, "SELECT count(*) FROM commits") == THREADS * PER_THREAD);
    CHECK(index_bytes(m) == (size_t)THREADS * PER_THREAD * 5 - 1);
    laya_memory_free(m);
    rm_tree(dir);
}

TEST(learn_store_locked_by_another_process) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    learn_store *s = NULL;
    CHECK(learn_store_open(path_in(p, sizeof p, dir, "m.db"), &s, NULL, 0) == LAYA_OK);
    sqlite3 *other = NULL;
    CHECK(sqlite3_open(p, &other) == SQLITE_OK);
    CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE; INSERT INTO commits(text, t) VALUES(x'41', 1);", NULL, NULL, NULL) ==
          SQLITE_OK);
    CHECK(learn_store_add(s, (const uint8_t *)"x", 1, 1, NULL, err, sizeof err) == LAYA_ERR_IO);
    CHECKF(strstr(err, "locked by another process"), "%s", err);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    CHECK(learn_store_add(s, (const uint8_t *)"x", 1, 1, NULL, NULL, 0) == LAYA_OK);
    learn_store_close(s);
    rm_tree(dir);
}

/* The writer: announces i on the pipe, then commits text i, forever. */
static _Noreturn void kill_writer(const char *path, int round, int fd) {
    laya_memory *m = NULL;
    if (laya_memory_open(path, &m, NULL, 0) != LAYA_OK) _exit(2);
    for (int32_t i = 0;; i++) {
        char t[64];
        int n = snprintf(t, sizeof t, "round %d commit %d", round, (int)i);
        if (write(fd, &i, sizeof i) != sizeof i) _exit(3);
        if (laya_memory_commit(m, t, (size_t)n, NULL, NULL, 0) != LAYA_OK) _exit(4);
    }
}

typedef struct {
    int round, n, bad;
    int32_t max;
} round_seen;

static int see_round(void *ctx, int64_t id, const uint8_t *text, size_t len, int64_t t) {
    round_seen *r = ctx;
    int rd, i;
    char buf[64];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 63 ? len : 63), text);
    if (sscanf(buf, "round %d commit %d", &rd, &i) != 2) r->bad++;
    else if (rd == r->round) {
        if (i != r->n) r->bad++;   /* a hole or a repeat */
        r->n++;
    }
    return 0;
}

TEST(learn_store_survives_kill_9_loop) {
    const char *dir = test_tmpdir();
    char p[512], err[512] = "";
    path_in(p, sizeof p, dir, "kill.db");
    uint32_t rng = 2024;
    int killed_mid = 0, in_loop = 0;
    for (int round = 0; round < KILL_ROUNDS; round++) {
        int fds[2];
        CHECK(pipe(fds) == 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            kill_writer(p, round, fds[1]);
        }
        close(fds[1]);
        /* Even rounds: 0..8 ms after the fork, so some kills land in the
         * open (creation, migration, WAL recovery). Odd rounds: 0..4 ms
         * into the commit loop. */
        int32_t v, last = -1;
        if (round % 2 && read(fds[0], &v, sizeof v) == sizeof v) last = v;
        rng = rng * 1664525u + 1013904223u;
        struct timespec d = {0, (long)(rng >> 8) % (round % 2 ? 4000000L : 8000000L)};
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        int wst = 0;
        waitpid(pid, &wst, 0);
        CHECKF(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "writer exited with %d", wst);
        while (read(fds[0], &v, sizeof v) == sizeof v) last = v;
        close(fds[0]);
        learn_store *s = NULL;
        CHECKF(learn_store_open(p, &s, err, sizeof err) == LAYA_OK, "round %d: %s", round, err);
        round_seen r = {round, 0, 0, 0};
        CHECK(learn_store_rows(s, 0, see_round, &r, err, sizeof err) == LAYA_OK);
        learn_store_close(s);
        /* Commits 0..last-1 returned before `last` was announced: all kept,
         * in order; commit `last` may or may not have landed. */
        CHECKF(!r.bad, "round %d: holes or foreign rows", round);
        CHECKF(last < 0 ? r.n == 0 : (r.n == last || r.n == last + 1), "round %d: %d rows, last announced %d",
               round, r.n, (int)last);
        killed_mid += last >= 0 && r.n == last;
        in_loop += last >= 0;
    }
    CHECKF(in_loop >= KILL_ROUNDS / 2, "only %d kills in the commit loop", in_loop);
    char *msg = NULL;
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(q) == SQLITE_ROW);
    msg = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
    CHECKF(!strcmp(msg, "ok"), "integrity_check: %s", msg);
    free(msg);
    printf("    %d rounds: %d kills in the commit loop, %d of them inside a commit\n", KILL_ROUNDS, in_loop,
           killed_mid);
    rm_tree(dir);
}

/* The cost of learn_memory_sync when no other connection wrote: it runs
 * before every suggestion. Reported, not asserted (a loaded machine). */
TEST(learn_memory_sync_cost_when_unchanged) {
    const char *dir = test_tmpdir();
    char p[512];
    laya_memory *m = NULL;
    CHECK(laya_memory_open(path_in(p, sizeof p, dir, "m.db"), &m, NULL, 0) == LAYA_OK);
    for (int i = 0; i < 100; i++) laya_memory_commit(m, "some text", 9, NULL, NULL, 0);
    enum { N = 20000 };
    learn_memory_lock(m);
    CHECK(learn_memory_sync(m, NULL, 0) == LAYA_OK);
    uint64_t v0 = learn_memory_version(m);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < N; i++) CHECK(learn_memory_sync(m, NULL, 0) == LAYA_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(learn_memory_version(m) == v0);
    learn_memory_unlock(m);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / N;
    printf("    learn_memory_sync, nothing changed: %.2f us\n", us);
    laya_memory_free(m);
    rm_tree(dir);
}
