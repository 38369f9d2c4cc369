/* test_notes.c - the notes index (src/notes, include/laya.h): FTS5 is
 * there, the title's weight changes the order, edited notes are indexed
 * again and unchanged ones are not, deleted ones go, binary, huge, broken
 * and unreadable files are skipped with their reasons, Chinese matches
 * (the hand-made set of tests/fixtures/notes_zh), the terms of a sentence,
 * a session's cache that asks the index only at word ends, hostile queries
 * and files, modes 0700/0600; a search's scores are FTS5's bm25, common
 * terms are left out and the cost bounded, snippets, the tokenizer's
 * tokens, the index kept in few segments, processes creating one index
 * at once. Every index lives in a temporary folder. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "notes/notes.h"
#include "server/proto.h"
#include "test_engine_util.h"

/* The hand-made Chinese set: how many of its 20 queries must find their
 * note among the top 3 (the bigram tokenizer finds all 20: docs/DESIGN.md). */
enum { ZH_QUERIES = 20, ZH_MIN_TOP3 = 19 };

/* laya_bm25 repeats FTS5's bm25 operation for operation: the same numbers
 * up to rounding (none expected; a slack for another compiler's choices). */
#define BM25_RTOL 1e-12

/* d = a/b; "" when it does not fit (the test then fails on the file). */
static char *join(char *d, size_t n, const char *a, const char *b) {
    if (snprintf(d, n, "%s/%s", a, b) >= (int)n) d[0] = 0;
    return d;
}

static void put(const char *dir, const char *name, const char *text, size_t n) {
    char p[4096];
    join(p, sizeof p, dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) return;
    fwrite(text, 1, n, f);
    fclose(f);
}

static void puts_note(const char *dir, const char *name, const char *text) { put(dir, name, text, strlen(text)); }

/* Sets a file's modification time to t seconds (so a test need not sleep
 * to make an edit visible). */
static void set_mtime(const char *dir, const char *name, time_t t) {
    char p[4096];
    join(p, sizeof p, dir, name);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    utimensat(AT_FDCWD, p, ts, 0);
}

/* What a run reported, per file. */
typedef struct {
    char path[16][256];
    int ev[16];
    char why[16][160];
    int n;
} events;

static void on_event(void *ctx, laya_note_event ev, const char *path, const char *reason) {
    events *e = ctx;
    if (e->n >= 16) return;
    const char *base = strrchr(path, '/');
    snprintf(e->path[e->n], sizeof e->path[0], "%s", base ? base + 1 : path);
    snprintf(e->why[e->n], sizeof e->why[0], "%s", reason ? reason : "");
    e->ev[e->n++] = (int)ev;
}

/* The event reported for the file named name, or -1. */
static int event_of(const events *e, const char *name, const char **why) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->path[i], name)) {
            if (why) *why = e->why[i];
            return e->ev[i];
        }
    return -1;
}

static const char *mkdir_in(const char *base, const char *name, char *buf, size_t n) {
    join(buf, n, base, name);
    mkdir(buf, 0755);
    return buf;
}

/* The rank (0-based) of the note whose path ends in name among hits, or -1. */
static int rank_of(const laya_note *h, int n, const char *name) {
    size_t l = strlen(name);
    for (int i = 0; i < n; i++) {
        size_t pl = strlen(h[i].path);
        if (pl >= l && !strcmp(h[i].path + pl - l, name)) return i;
    }
    return -1;
}

TEST(notes_fts5_is_compiled_in) {
    CHECKF(sqlite3_compileoption_used("ENABLE_FTS5"),
           "this SQLite (%s) was built without FTS5: the notes index needs it (Debian's libsqlite3-0 has it)",
           sqlite3_libversion());
    laya_notes *n = NULL;
    char err[256] = "";
    CHECKF(laya_notes_open(":memory:", 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    laya_notes_free(n);
}

/* Processes creating the same new index at one moment all get it: one
 * makes the schema, the others see nothing of it or all of it. */
static int open_index(const void *path, char *err, size_t errlen) {
    laya_notes *n = NULL;
    if (laya_notes_open(path, 1, &n, err, errlen) != LAYA_OK) return 1;
    laya_notes_free(n);
    return 0;
}

TEST(notes_index_opened_at_once_by_many) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    for (int r = 0; r < 8; r++) {
        char db[4096], name[32], msg[512];
        snprintf(name, sizeof name, "n%d.db", r);
        join(db, sizeof db, tmp, name);
        CHECKF(test_at_once(5, open_index, db, msg, sizeof msg) == 0,
               "round %d: a process could not open the new index: %s", r, msg);
    }
}

TEST(notes_title_weight_changes_the_order) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    char d[4096], db[4096], err[512] = "";
    mkdir_in(tmp, "w", d, sizeof d);
    join(db, sizeof db, tmp, "n.db");
    /* The word once in a title against twice in a body of the same length:
     * unweighted bm25 puts the body first, x3 the title. */
    puts_note(d, "a.md", "# Zephyr\nnotes on wind and the weather this week in the hills\n");
    puts_note(d, "b.md", "# Weather\nnotes on zephyr wind and zephyr weather in the hills\n");
    laya_notes *n = NULL;
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    laya_notes_summary s;
    CHECKF(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(s.added == 2 && s.notes == 2);
    laya_note h[4];
    int nh = 0;
    CHECK(laya_notes_search(n, "zephyr", 6, 4, h, &nh, err, sizeof err) == LAYA_OK);
    CHECKF(nh == 2 && rank_of(h, nh, "/a.md") == 0, "weighted: %d hits, a.md at %d", nh, rank_of(h, nh, "/a.md"));
    CHECK(!strcmp(h[0].title, "Zephyr") && !strcmp(h[1].title, "Weather"));
    CHECKF(strstr(h[1].snippet, "[zephyr]"), "snippet %s", h[1].snippet);
    laya_notes_free(n);
    /* The same file ranked without the weights (the tokenizer registered on
     * a plain connection): the other order, so the weight is what decides. */
    sqlite3 *db3 = NULL;
    int no_fts5 = 0;
    CHECK(sqlite3_open(db, &db3) == SQLITE_OK && notes_tok_register(db3, &no_fts5) == SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CHECK(sqlite3_prepare_v2(db3,
                             "SELECT f.path FROM notes JOIN files f ON f.id = notes.rowid WHERE notes MATCH 'zephyr' "
                             "ORDER BY bm25(notes, 1.0, 1.0)",
                             -1, &q, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(q) == SQLITE_ROW);
    const char *first = (const char *)sqlite3_column_text(q, 0);
    CHECKF(strstr(first, "/b.md") != NULL, "unweighted first: %s", first);
    sqlite3_finalize(q);
    sqlite3_close(db3);
}

TEST(notes_incremental_edit_unchanged_delete) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    char d[4096], sub[4096], db[4096], err[512] = "";
    mkdir_in(tmp, "inc", d, sizeof d);
    mkdir_in(d, "sub", sub, sizeof sub);
    join(db, sizeof db, tmp, "n.db");
    puts_note(d, "one.md", "# One\nalpha bravo\n");
    puts_note(d, "two.md", "# Two\ncharlie delta\n");
    puts_note(sub, "three.markdown", "echo foxtrot\n");
    puts_note(d, "ignored.txt", "alpha bravo charlie\n");
    laya_notes *n = NULL;
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    events e = {0};
    laya_notes_summary s;
    CHECKF(laya_notes_index(n, d, on_event, &e, &s, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(s.added == 3 && s.notes == 3 && s.skipped == 0, "added %lld", (long long)s.added);
    CHECK(event_of(&e, "ignored.txt", NULL) == -1);
    laya_note h[4];
    int nh = 0;
    CHECK(laya_notes_search(n, "foxtrot", 7, 4, h, &nh, err, sizeof err) == LAYA_OK && nh == 1);
    CHECKF(!strcmp(h[0].title, "three"), "a note without a heading is titled by its name: %s", h[0].title);
    /* Edit one (new time and content), touch another (new time, same content). */
    puts_note(d, "one.md", "# One\nalpha golf\n");
    set_mtime(d, "one.md", 1700000000);
    set_mtime(d, "two.md", 1700000000);
    memset(&e, 0, sizeof e);
    CHECKF(laya_notes_index(n, d, on_event, &e, &s, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(s.updated == 1 && s.unchanged == 2 && s.added == 0 && s.removed == 0, "updated %lld unchanged %lld",
           (long long)s.updated, (long long)s.unchanged);
    CHECK(event_of(&e, "one.md", NULL) == LAYA_NOTE_UPDATED);
    CHECK(event_of(&e, "two.md", NULL) == LAYA_NOTE_UNCHANGED);
    CHECK(laya_notes_search(n, "bravo", 5, 4, h, &nh, err, sizeof err) == LAYA_OK && nh == 0);
    CHECK(laya_notes_search(n, "golf", 4, 4, h, &nh, err, sizeof err) == LAYA_OK && nh == 1);
    /* Delete one, and index another folder beside: its notes stay. */
    char p[4096], other[4096];
    join(p, sizeof p, d, "two.md");
    CHECK(unlink(p) == 0);
    mkdir_in(tmp, "other", other, sizeof other);
    puts_note(other, "x.md", "charlie elsewhere\n");
    CHECK(laya_notes_index(n, other, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.added == 1 && s.notes == 4);
    memset(&e, 0, sizeof e);
    CHECK(laya_notes_index(n, d, on_event, &e, &s, err, sizeof err) == LAYA_OK);
    CHECKF(s.removed == 1 && s.unchanged == 2 && s.notes == 3, "removed %lld notes %lld", (long long)s.removed,
           (long long)s.notes);
    CHECK(event_of(&e, "two.md", NULL) == LAYA_NOTE_REMOVED);
    CHECK(laya_notes_search(n, "charlie", 7, 4, h, &nh, err, sizeof err) == LAYA_OK && nh == 1);
    CHECK(rank_of(h, nh, "/x.md") == 0);
    CHECKF(laya_notes_check(n, err, sizeof err) == LAYA_OK, "%s", err);
    laya_notes_free(n);
}

TEST(notes_bad_files_are_skipped_with_reasons) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    char d[4096], db[4096], err[512] = "";
    mkdir_in(tmp, "bad", d, sizeof d);
    join(db, sizeof db, tmp, "n.db");
    puts_note(d, "good.md", "# Good\nkilo lima\n");
    put(d, "binary.md", "kilo\0lima", 9);
    puts_note(d, "broken.md", "kilo \xc3\x28 lima\n");
    puts_note(d, "surrogate.md", "kilo \xed\xa0\x80 lima\n");
    puts_note(d, "was_good.md", "kilo mike\n");
    char p[4096];
    join(p, sizeof p, d, "huge.md");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)LAYA_NOTES_MAX_FILE + 1) == 0);
    close(fd);
    join(p, sizeof p, d, "fifo.md");
    CHECK(mkfifo(p, 0644) == 0);
    join(p, sizeof p, d, "link.md");
    CHECK(symlink("good.md", p) == 0);
    laya_notes *n = NULL;
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    events e = {0};
    laya_notes_summary s;
    CHECKF(laya_notes_index(n, d, on_event, &e, &s, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(s.added == 2 && s.skipped == 6, "added %lld skipped %lld", (long long)s.added, (long long)s.skipped);
    const char *why = NULL;
    CHECK(event_of(&e, "binary.md", &why) == LAYA_NOTE_SKIPPED && strstr(why, "binary"));
    CHECK(event_of(&e, "broken.md", &why) == LAYA_NOTE_SKIPPED && strstr(why, "UTF-8") && strstr(why, "byte 5"));
    CHECK(event_of(&e, "surrogate.md", &why) == LAYA_NOTE_SKIPPED && strstr(why, "UTF-8"));
    CHECK(event_of(&e, "huge.md", &why) == LAYA_NOTE_SKIPPED && strstr(why, "larger than 4 MiB"));
    CHECK(event_of(&e, "fifo.md", &why) == LAYA_NOTE_SKIPPED && strstr(why, "not a regular file"));
    CHECK(event_of(&e, "link.md", &why) == LAYA_NOTE_SKIPPED && strstr(why, "symbolic link"));
    /* A note that turns binary leaves the index. */
    put(d, "was_good.md", "kilo\0mike", 9);
    set_mtime(d, "was_good.md", 1700000000);
    CHECK(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK);
    CHECK(s.removed == 1 && s.skipped == 7 && s.notes == 1);
    laya_note h[4];
    int nh = 0;
    CHECK(laya_notes_search(n, "kilo", 4, 4, h, &nh, err, sizeof err) == LAYA_OK && nh == 1);
    CHECK(rank_of(h, nh, "/good.md") == 0);
    laya_notes_free(n);
}

/* Unreadable files and folders: the index runs as a user that cannot read
 * them (as root, in a child switched to nobody, since root reads all). */
TEST(notes_unreadable_folder_keeps_its_notes) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    char d[4096], sec[4096], db[4096], err[512] = "";
    mkdir_in(tmp, "unr", d, sizeof d);
    mkdir_in(d, "secret", sec, sizeof sec);
    join(db, sizeof db, tmp, "unr.db");
    puts_note(d, "open.md", "november\n");
    puts_note(d, "closed.md", "oscar\n");
    puts_note(sec, "inner.md", "papa\n");
    int uid = geteuid() == 0 ? 65534 : (int)geteuid();
    if (uid != (int)geteuid()) {
        CHECK(chmod(tmp, 0777) == 0 && chown(d, 65534, 65534) == 0 && chown(sec, 65534, 65534) == 0);
        char p[4096];
        const char *files[] = {"open.md", "closed.md"};
        for (int i = 0; i < 2; i++) {
            snprintf(p, sizeof p, "%s/%s", d, files[i]);
            CHECK(chown(p, 65534, 65534) == 0);
        }
        join(p, sizeof p, sec, "inner.md");
        CHECK(chown(p, 65534, 65534) == 0);
    }
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (uid != (int)geteuid() && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
        laya_notes *n = NULL;
        laya_notes_summary s;
        if (laya_notes_open(db, 1, &n, err, sizeof err) != LAYA_OK) _exit(11);
        if (laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) != LAYA_OK || s.added != 3) _exit(12);
        char p[4096];
        join(p, sizeof p, d, "closed.md");
        chmod(p, 0);
        set_mtime(d, "closed.md", 1700000000);
        chmod(sec, 0);
        events e = {0};
        if (laya_notes_index(n, d, on_event, &e, &s, err, sizeof err) != LAYA_OK) _exit(13);
        const char *why = NULL;
        if (event_of(&e, "closed.md", &why) != LAYA_NOTE_SKIPPED || !strstr(why, "cannot be read")) _exit(14);
        if (event_of(&e, "secret", &why) != LAYA_NOTE_SKIPPED || !strstr(why, "folder cannot be read")) _exit(15);
        /* The folder's note is kept; the unreadable file's goes. */
        laya_note h[2];
        int nh = 0;
        if (laya_notes_search(n, "papa", 4, 2, h, &nh, err, sizeof err) != LAYA_OK || nh != 1) _exit(16);
        if (laya_notes_search(n, "oscar", 5, 2, h, &nh, err, sizeof err) != LAYA_OK || nh != 0) _exit(17);
        chmod(sec, 0755);
        laya_notes_free(n);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", WEXITSTATUS(status));
}

TEST(notes_chinese_set_matches) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    char db[4096], err[512] = "";
    join(db, sizeof db, tmp, "zh.db");
    laya_notes *n = NULL;
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    laya_notes_summary s;
    CHECKF(laya_notes_index(n, test_fixture("notes_zh"), NULL, NULL, &s, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(s.added == 12);
    char path[4096];
    snprintf(path, sizeof path, "%s/queries.tsv", test_fixture("notes_zh"));
    FILE *f = fopen(path, "r");
    CHECK(f);
    char line[512];
    int queries = 0, top3 = 0;
    struct notes_link *l = notes_link_new(n);
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        char want[64];
        snprintf(want, sizeof want, "/%.*s.md", (int)strcspn(tab + 1, "\r\n"), tab + 1);
        /* As typed: the sentence with a final full stop (a word end). */
        char ctx[520];
        snprintf(ctx, sizeof ctx, "%s。", line);
        const laya_note *h = NULL;
        int nh = 0;
        CHECK(notes_link_related(l, ctx, strlen(ctx), 3, &h, &nh) == LAYA_OK);
        queries++;
        if (rank_of(h, nh, want) >= 0) top3++;
        else fprintf(stderr, "  miss: %s (want %s, got %s)\n", line, want, nh ? h[0].path : "nothing");
    }
    fclose(f);
    notes_link_free(l);
    CHECK(queries == ZH_QUERIES);
    CHECKF(top3 >= ZH_MIN_TOP3, "%d of %d queries found their note in the top 3", top3, queries);
    laya_note h[3];
    int nh = 0;
    CHECK(laya_notes_search(n, "北京", strlen("北京"), 3, h, &nh, err, sizeof err) == LAYA_OK && nh == 1);
    CHECKF(strstr(h[0].snippet, "[北京]") && !strcmp(h[0].title, "北京出差安排"), "%s / %s", h[0].title, h[0].snippet);
    /* A lone character is a prefix in a search box. */
    CHECK(laya_notes_search(n, "茶", strlen("茶"), 3, h, &nh, err, sizeof err) == LAYA_OK && nh == 1);
    CHECK(rank_of(h, nh, "/zhangsan.md") == 0);
    laya_notes_free(n);
}

TEST(notes_terms_of_a_sentence) {
    char q[NOTES_MAX_QUERY];
    CHECK(notes_query("The meeting with Alice and Bo about the budget", 47, NOTES_TERMS_TYPING, q, sizeof q) == 4);
    CHECKF(!strcmp(q, "\"alice\" OR \"bo\" OR \"budget\" OR \"meeting\""), "%s", q);
    /* "Bo" is a name (capitalised), "bo" not; stop words and short words go. */
    CHECK(notes_query("it is a bo of the", 17, NOTES_TERMS_TYPING, q, sizeof q) == 0 && !q[0]);
    /* Chinese: cut at function characters, then bigrams; a lone one dropped. */
    const char *zh = "我们明天和张三开会";
    CHECK(notes_query(zh, strlen(zh), NOTES_TERMS_TYPING, q, sizeof q) == 4);
    CHECKF(strstr(q, "\"明天\"") && strstr(q, "\"张三\"") && strstr(q, "\"三开\"") && strstr(q, "\"开会\"") &&
               !strstr(q, "我"),
           "%s", q);
    CHECK(notes_query("茶", 3, NOTES_TERMS_SEARCH, q, sizeof q) == 1 && !strcmp(q, "\"茶\"*"));
    /* FTS5 syntax in the text is only separators. */
    CHECK(notes_query("\"a\" AND (b* OR NEAR(c", 21, NOTES_TERMS_SEARCH, q, sizeof q) == 6);
    /* Never more than NOTES_MAX_TERMS, and the ones nearest the cursor. */
    char many[2048] = "";
    for (int i = 0; i < 40; i++) snprintf(many + strlen(many), sizeof many - strlen(many), "word%02d ", i);
    CHECK(notes_query(many, strlen(many), NOTES_TERMS_TYPING, q, sizeof q) == NOTES_MAX_TERMS);
    CHECK(strstr(q, "word39") && !strstr(q, "word00"));
    /* A small buffer cuts whole terms. */
    CHECK(notes_query("alpha bravo charlie", 19, NOTES_TERMS_TYPING, q, 20) == 2 && !strcmp(q, "\"alpha\" OR \"bravo\""));
    /* The sentence: back to its end mark, without the word being typed. */
    size_t a, b;
    const char *ctx = "Done. Call Alice about the bud";
    notes_sentence(ctx, strlen(ctx), &a, &b);
    CHECKF(a == 5 && b == strlen(ctx) - 3, "%zu..%zu", a, b);
    const char *zc = "好的。明天去北京";
    notes_sentence(zc, strlen(zc), &a, &b);
    CHECK(a == strlen("好的。") && b == strlen(zc));
    const char *done = "Hi. Call Alice. ";
    notes_sentence(done, strlen(done), &a, &b);
    CHECKF(a == 3 && b == strlen(done), "%zu..%zu", a, b);
    /* Hostile bytes: never past the ends. */
    const char *junk = "\xff\xfe abc \xe4\xb8";
    notes_sentence(junk, strlen(junk), &a, &b);
    CHECK(a <= b && b <= strlen(junk));
    CHECK(notes_query(junk, strlen(junk), NOTES_TERMS_SEARCH, q, sizeof q) == 1);
}

TEST(notes_link_asks_the_index_only_at_word_ends) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    char d[4096], err[512] = "";
    mkdir_in(tmp, "link", d, sizeof d);
    puts_note(d, "alice.md", "# Alice\nphone number and birthday\n");
    puts_note(d, "budget.md", "# Budget 2027\nthe numbers for next year\n");
    laya_notes *n = NULL;
    CHECK(laya_notes_open(":memory:", 1, &n, err, sizeof err) == LAYA_OK);
    laya_notes_summary s;
    CHECK(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.added == 2);
    struct notes_link *l = notes_link_new(n);
    CHECK(l);
    const char *text = "I will call Alice about the budget tomorrow";
    uint64_t queries = 0;
    int last_n = 0;
    const laya_note *h = NULL;
    for (size_t i = 1; i <= strlen(text); i++) {
        int nh = 0;
        CHECK(notes_link_related(l, text, i, 3, &h, &nh) == LAYA_OK);
        if (i == strlen("I will call Alice ")) CHECK(nh == 1 && rank_of(h, nh, "/alice.md") == 0);
        if (i == strlen("I will call Alice about the budget ")) CHECK(nh == 2);
        last_n = nh;
    }
    queries = notes_link_queries(l);
    /* Terms change at "call ", "Alice ", "budget " (and "tomorrow" is still
     * being typed): three queries for 43 keystrokes. */
    CHECKF(queries == 3, "%llu queries", (unsigned long long)queries);
    CHECK(last_n == 2);
    /* A finished sentence stays current until the next one starts. */
    int nh = 0;
    CHECK(notes_link_related(l, "Alice budget. ", 14, 3, &h, &nh) == LAYA_OK && nh == 2);
    CHECK(notes_link_related(l, "Alice budget. Ne", 16, 3, &h, &nh) == LAYA_OK && nh == 0);
    notes_link_free(l);
    laya_notes_free(n);
}

TEST(notes_hostile_files_and_modes) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    char dir[4096], db[4096], err[512] = "";
    join(dir, sizeof dir, tmp, "xdg");
    setenv("XDG_DATA_HOME", dir, 1);
    char def[4096];
    CHECK(laya_notes_default_path(def, sizeof def, err, sizeof err) == LAYA_OK);
    CHECK(!strcmp(def + strlen(dir), "/laya/notes.db"));
    laya_notes *n = NULL;
    CHECKF(laya_notes_open(NULL, 0, &n, err, sizeof err) == LAYA_ERR_IO && strstr(err, "laya notes index"), "%s", err);
    mode_t old = umask(0);
    laya_status st = laya_notes_open(NULL, 1, &n, err, sizeof err);
    umask(old);
    CHECKF(st == LAYA_OK, "%s", err);
    laya_notes_free(n);
    struct stat sb;
    CHECK(stat(def, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    join(db, sizeof db, dir, "laya");
    CHECK(stat(db, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    /* Another program's database, and a file of garbage: refused, unchanged. */
    join(db, sizeof db, tmp, "other.db");
    sqlite3 *o = NULL;
    CHECK(sqlite3_open(db, &o) == SQLITE_OK && sqlite3_exec(o, "CREATE TABLE t(x)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(o);
    CHECK(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "not a Laya notes index"));
    join(db, sizeof db, tmp, "garbage.db");
    put(tmp, "garbage.db", "this is not a database at all, not even close......", 52);
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "damaged"), "%s", err);
    CHECK(laya_notes_open(tmp, 1, &n, err, sizeof err) == LAYA_ERR_IO && strstr(err, "is a folder"));
    /* Indexing what is not a folder. */
    CHECK(laya_notes_open(":memory:", 1, &n, err, sizeof err) == LAYA_OK);
    laya_notes_summary s;
    CHECK(laya_notes_index(n, db, NULL, NULL, &s, err, sizeof err) == LAYA_ERR_ARG && strstr(err, "not a folder"));
    CHECK(laya_notes_index(n, "/nonexistent/notes", NULL, NULL, &s, err, sizeof err) == LAYA_ERR_IO);
    /* Queries are words, never FTS5 syntax. */
    laya_note h[2];
    int nh = 7;
    const char *bad = "\"unterminated AND ( NEAR(x* OR ^";
    CHECKF(laya_notes_search(n, bad, strlen(bad), 2, h, &nh, err, sizeof err) == LAYA_OK && nh == 0, "%s", err);
    CHECK(laya_notes_search(n, "", 0, 2, h, &nh, err, sizeof err) == LAYA_OK && nh == 0);
    CHECK(laya_notes_search(n, "x", 1, LAYA_NOTES_MAX_K + 1, h, &nh, err, sizeof err) == LAYA_ERR_ARG);
    laya_notes_free(n);
}

/* The protocol: suggest replies carry "notes" with an index attached and a
 * match, none when private or without an index; the notes op searches. */
TEST(notes_in_the_protocol) {
    char tmp[256], d[4096], err[512] = "";
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    mkdir_in(tmp, "proto", d, sizeof d);
    puts_note(d, "alice.md", "# Alice\nher phone number and birthday\n");
    laya_notes *n = NULL;
    laya_notes_summary s;
    CHECK(laya_notes_open(":memory:", 1, &n, err, sizeof err) == LAYA_OK);
    CHECK(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.added == 1);
    float *w = NULL;
    laya_model *lm = te_model(300, 16, 8, 1, 3, 0.5f, 3, &w);
    CHECK(lm);
    laya_search_opts cfg = laya_search_defaults();
    proto *p = NULL, *bare = NULL;
    CHECK(proto_new(lm, &cfg, 4, &p) == LAYA_OK && proto_new(lm, &cfg, 4, &bare) == LAYA_OK);
    proto_set_notes(p, n);
    static const char sug[] = "{\"op\":\"suggest\",\"session\":\"a\",\"context\":\"I will call Alice \"}";
    char *r = proto_handle(p, 1, sug, strlen(sug));
    json_t *j = r ? json_loads(r, 0, NULL) : NULL;
    json_t *notes = json_object_get(j, "notes");
    CHECKF(json_is_array(notes) && json_array_size(notes) == 1, "%s", r ? r : "(null)");
    json_t *o = json_array_get(notes, 0);
    CHECK(!strcmp(json_string_value(json_object_get(o, "title")), "Alice"));
    CHECK(strstr(json_string_value(json_object_get(o, "path")), "/alice.md"));
    CHECK(strstr(json_string_value(json_object_get(o, "snippet")), "[Alice]"));
    CHECK(json_is_array(json_object_get(j, "suggestions")));
    json_decref(j);
    free(r);
    /* Private: nothing looked up. No match, no index: no "notes" at all. */
    static const char priv[] = "{\"op\":\"suggest\",\"session\":\"b\",\"context\":\"Alice \",\"private\":true}";
    static const char miss[] = "{\"op\":\"suggest\",\"session\":\"c\",\"context\":\"nothing related here \"}";
    const char *const none[] = {priv, miss};
    for (int i = 0; i < 3; i++) {
        r = i < 2 ? proto_handle(p, 1, none[i], strlen(none[i])) : proto_handle(bare, 1, sug, strlen(sug));
        CHECKF(r && strstr(r, "\"suggestions\"") && !strstr(r, "\"notes\""), "%d: %s", i, r ? r : "(null)");
        free(r);
    }
    static const char op[] = "{\"op\":\"notes\",\"query\":\"birthday\",\"k\":2}";
    r = proto_handle(p, 1, op, strlen(op));
    CHECKF(r && strstr(r, "\"notes\":[{") && strstr(r, "[birthday]") && strstr(r, "\"score\""), "%s", r);
    free(r);
    static const char badk[] = "{\"op\":\"notes\",\"query\":\"x\",\"k\":99}";
    r = proto_handle(p, 1, badk, strlen(badk));
    CHECK(r && strstr(r, "\"error\"") && strstr(r, "\\\"k\\\""));
    free(r);
    r = proto_handle(bare, 1, op, strlen(op));
    CHECK(r && strstr(r, "\"error\"") && strstr(r, "--notes"));
    free(r);
    proto_free(p);
    proto_free(bare);
    laya_model_free(lm);
    free(w);
    laya_notes_free(n);
}

/* The FTS5 query and scores FTS5's own bm25 gives for query (as a search
 * box asks it), best first, ties by rowid: what laya_notes_search must
 * return. Paths into path[i] (cap bytes each). */
static int fts5_ranking(const char *db, const char *query, char path[][256], double *score, int cap) {
    sqlite3 *d = NULL;
    int no_fts5 = 0, n = 0;
    char q[NOTES_MAX_QUERY];
    notes_query(query, strlen(query), NOTES_TERMS_SEARCH, q, sizeof q);
    if (sqlite3_open(db, &d) != SQLITE_OK || notes_tok_register(d, &no_fts5) != SQLITE_OK) return -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d,
                           "SELECT f.path, bm25(notes, 3.0, 1.0) AS s FROM notes JOIN files f ON f.id = notes.rowid "
                           "WHERE notes MATCH ?1 ORDER BY s, notes.rowid",
                           -1, &st, NULL) != SQLITE_OK)
        n = -1;
    sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
    while (n >= 0 && n < cap && sqlite3_step(st) == SQLITE_ROW) {
        snprintf(path[n], 256, "%s", (const char *)sqlite3_column_text(st, 0));
        score[n++] = sqlite3_column_double(st, 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(d);
    return n;
}

/* A search's order and scores are those of FTS5's bm25(notes, 3.0, 1.0),
 * also after another connection changed the file (the lengths and the
 * number of notes a search keeps in memory are read again). */
TEST(notes_scores_are_fts5_bm25) {
    char tmp[256], d[4096], d2[4096], db[4096], err[512] = "";
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    mkdir_in(tmp, "bm", d, sizeof d);
    mkdir_in(tmp, "bm2", d2, sizeof d2);
    join(db, sizeof db, tmp, "bm.db");
    puts_note(d, "a.md", "# Zephyr\nnotes on wind and the weather this week in the hills\n");
    puts_note(d, "b.md", "# Weather\nnotes on zephyr wind and zephyr weather in the hills\n");
    puts_note(d, "c.md", "a long note about the budget, the budget meeting with Alice and many other words to make "
                         "it longer than the others: wind, rain, hills, roads, maps, trains and the weather\n");
    puts_note(d, "d.md", "# Alice\nmeetings with Alice about wind farms\n");
    puts_note(d, "e.md", "# 北京出差\n明天去北京见客户，带上合同。喝茶，茶具\n");
    puts_note(d, "f.md", "上海的客户下周来北京\n");
    laya_notes *n = NULL;
    laya_notes_summary s;
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.added == 6, "%s", err);
    static const char *const queries[] = {"zephyr wind", "budget meeting Alice", "北京客户", "茶", "hills weather"};
    for (int round = 0; round < 2; round++) {
        for (size_t qi = 0; qi < sizeof queries / sizeof queries[0]; qi++) {
            laya_note h[LAYA_NOTES_MAX_K];
            int nh = 0;
            char want[LAYA_NOTES_MAX_K][256];
            double ws[LAYA_NOTES_MAX_K];
            CHECK(laya_notes_search(n, queries[qi], strlen(queries[qi]), LAYA_NOTES_MAX_K, h, &nh, err, sizeof err) ==
                  LAYA_OK);
            int nw = fts5_ranking(db, queries[qi], want, ws, LAYA_NOTES_MAX_K);
            CHECKF(nh > 0 && nh == nw, "%s: %d hits, FTS5 %d", queries[qi], nh, nw);
            for (int i = 0; i < nh; i++) {
                CHECKF(!strcmp(h[i].path, want[i]), "%s #%d: %s, FTS5 %s", queries[qi], i, h[i].path, want[i]);
                CHECK_NEAR(h[i].score, ws[i], 0.0, BM25_RTOL);
            }
        }
        /* Another connection adds notes: every length, the number of notes
         * and each idf change under the first one. */
        laya_notes *other = NULL;
        CHECK(laya_notes_open(db, 0, &other, err, sizeof err) == LAYA_OK);
        puts_note(d2, "g.md", "# Wind\nwind wind wind and more wind over the hills, budget for Alice\n");
        puts_note(d2, "h.md", "北京北京北京的客户\n");
        CHECK(laya_notes_index(other, d2, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.notes == 8);
        laya_notes_free(other);
    }
    laya_notes_free(n);
}

/* The terms a related-notes query keeps (notes_store.c: pick_terms). */
TEST(notes_common_terms_are_left_out) {
    char tmp[256], d[4096], db[4096], name[64], text[256], err[512] = "";
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    mkdir_in(tmp, "common", d, sizeof d);
    join(db, sizeof db, tmp, "common.db");
    /* "meeting" in more than NOTES_DF_MIN notes: left out; "zanzibar" in one. */
    enum { COMMON = NOTES_DF_MIN + 36 };
    for (int i = 0; i < COMMON; i++) {
        snprintf(name, sizeof name, "m%03d.md", i);
        snprintf(text, sizeof text, "meeting number %d%s\n", i, i == 7 ? " in zanzibar" : "");
        puts_note(d, name, text);
    }
    laya_notes *n = NULL;
    laya_notes_summary s;
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.added == COMMON, "%s", err);
    laya_note h[LAYA_NOTES_MAX_K];
    int nh = -1;
    CHECK(laya_notes_search(n, "meeting", 7, 3, h, &nh, err, sizeof err) == LAYA_OK);
    CHECKF(nh == 0, "a term in %d of %d notes is asked (%d hits)", COMMON, COMMON, nh);
    const char *q = "the meeting in Zanzibar";
    CHECK(laya_notes_search(n, q, strlen(q), 3, h, &nh, err, sizeof err) == LAYA_OK);
    CHECKF(nh == 1 && rank_of(h, nh, "/m007.md") == 0, "%d hits", nh);
    laya_notes_free(n);
    /* Under the limit, the rarest terms while the notes they hold add up to
     * NOTES_POSTINGS: alpha..delta hold 50+55+60+62 = 227 notes, echo 63
     * more, which would pass 256, so echo's notes are not scored (they
     * would rank first: echo is in their titles, which count three times). */
    static const char *const words[] = {"alpha", "bravo", "charlie", "delta", "echo"};
    static const int holders[] = {50, 55, 60, 62, 63};
    _Static_assert(50 + 55 + 60 + 62 <= NOTES_POSTINGS && 50 + 55 + 60 + 62 + 63 > NOTES_POSTINGS, "see above");
    mkdir_in(tmp, "budget", d, sizeof d);
    join(db, sizeof db, tmp, "budget.db");
    int at = 0;
    for (int w = 0; w < 5; w++)
        for (int i = 0; i < holders[w]; i++, at++) {
            snprintf(name, sizeof name, "%s%02d.md", words[w], i);
            snprintf(text, sizeof text, "%s%s\nnote %d about %s\n", w == 4 ? "# " : "", w == 4 ? words[w] : "",
                     at, words[w]);
            puts_note(d, name, text);
        }
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.added == at, "%s", err);
    q = "alpha bravo charlie delta echo";
    CHECK(laya_notes_search(n, q, strlen(q), LAYA_NOTES_MAX_K, h, &nh, err, sizeof err) == LAYA_OK);
    CHECK(nh == LAYA_NOTES_MAX_K);
    for (int i = 0; i < nh; i++) CHECKF(!strstr(h[i].path, "/echo"), "%s scored", h[i].path);
    /* Alone, the rarest term is always asked. */
    CHECK(laya_notes_search(n, "echo", 4, 3, h, &nh, err, sizeof err) == LAYA_OK && nh == 3);
    CHECK(strstr(h[0].path, "/echo"));
    laya_notes_free(n);
}

/* notes_snippet: the window with the most terms, centred; matches in
 * brackets as written; overlapping CJK bigrams in one pair; cut to fit. */
TEST(notes_snippets) {
    sqlite3 *db = NULL;
    int no_fts5 = 0;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK && notes_tok_register(db, &no_fts5) == SQLITE_OK);
    notes_stemmer *st = notes_stemmer_new(db);
    notes_rank *r = calloc(1, sizeof *r);
    CHECK(st && r);
    char out[LAYA_NOTE_SNIPPET];
    /* Porter's form of "meetings" matches "Meetings" (brackets keep the case). */
    r->nt = 1;
    snprintf(r->t[0].stem, sizeof r->t[0].stem, "meet");
    r->t[0].stem_len = 4;
    const char *en = "w00 w01 w02 w03 w04 w05 w06 w07 w08 w09 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 Meetings "
                     "w21 w22 w23 w24 w25 w26 w27 w28 w29.";
    notes_snippet(r, st, en, strlen(en), out, sizeof out);
    CHECKF(!strcmp(out, "...w15 w16 w17 w18 w19 [Meetings] w21 w22 w23 w24 w25 w26..."), "%s", out);
    /* No match: the start; a short body: all of it. */
    snprintf(r->t[0].stem, sizeof r->t[0].stem, "absent");
    r->t[0].stem_len = 6;
    notes_snippet(r, st, en, strlen(en), out, sizeof out);
    CHECKF(!strcmp(out, "w00 w01 w02 w03 w04 w05 w06 w07 w08 w09 w10 w11..."), "%s", out);
    notes_snippet(r, st, "# Short\nonly this.", 18, out, sizeof out);
    CHECKF(!strcmp(out, "# Short\nonly this."), "%s", out);
    /* 北京 and 京天 overlap in 北京天: one pair of brackets; 天安 does not match. */
    r->nt = 2;
    snprintf(r->t[0].stem, sizeof r->t[0].stem, "北京");
    snprintf(r->t[1].stem, sizeof r->t[1].stem, "京天");
    r->t[0].stem_len = r->t[1].stem_len = 6;
    const char *zh = "明天去北京天安门，北京";
    notes_snippet(r, st, zh, strlen(zh), out, sizeof out);
    CHECKF(!strcmp(out, "明天去[北京天]安门，[北京]"), "%s", out);
    /* A prefix term (a lone character in a search box). */
    r->nt = 1;
    snprintf(r->t[0].stem, sizeof r->t[0].stem, "茶");
    r->t[0].stem_len = 3;
    r->t[0].prefix = 1;
    const char *tea = "他喜欢喝茶，可以送他一套茶具。";
    notes_snippet(r, st, tea, strlen(tea), out, sizeof out);
    CHECKF(strstr(out, "[茶具]") && !strstr(out, "[喝茶]"), "%s", out);
    /* The most distinct terms win over the most matches of one. */
    r->nt = 2;
    r->t[0].prefix = 0;
    snprintf(r->t[0].stem, sizeof r->t[0].stem, "x");
    snprintf(r->t[1].stem, sizeof r->t[1].stem, "y");
    r->t[0].stem_len = r->t[1].stem_len = 1;
    const char *xy = "x x x x x x x x x x x x a b c d e f g h i j k l m n o p q r s x y";
    notes_snippet(r, st, xy, strlen(xy), out, sizeof out);
    CHECKF(strstr(out, "[x] [y]"), "%s", out);
    /* Cut to the buffer, NUL-terminated; hostile bytes are only separators. */
    char small[8];
    memset(small, 'Z', sizeof small);
    notes_snippet(r, st, xy, strlen(xy), small, sizeof small);
    CHECK(memchr(small, 0, sizeof small) && strlen(small) == sizeof small - 1);
    const char *junk = "\xff x \xe4\xb8 y \xc0\xaf";
    notes_snippet(r, st, junk, strlen(junk), out, sizeof out);
    CHECKF(strstr(out, "[x]") && strstr(out, "[y]"), "%s", out);
    free(r);
    notes_stemmer_free(st);
    sqlite3_close(db);
}

/* Runs that each change a note add a segment to the full-text index (FTS5
 * merges small ones only once 16 pile up); an index run merges them when
 * there are more than NOTES_SEGMENTS_MAX. */
TEST(notes_index_stays_in_few_segments) {
    char tmp[256], d[4096], db[4096], name[64], err[512] = "";
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    mkdir_in(tmp, "seg", d, sizeof d);
    join(db, sizeof db, tmp, "seg.db");
    laya_notes *n = NULL;
    laya_notes_summary s;
    CHECKF(laya_notes_open(db, 1, &n, err, sizeof err) == LAYA_OK, "%s", err);
    sqlite3 *d3 = NULL;
    CHECK(sqlite3_open(db, &d3) == SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CHECK(sqlite3_prepare_v2(d3, "SELECT count(DISTINCT segid) FROM notes_idx", -1, &q, NULL) == SQLITE_OK);
    int most = 0;
    for (int run = 0; run < 3 * NOTES_SEGMENTS_MAX; run++) {
        snprintf(name, sizeof name, "n%02d.md", run);
        puts_note(d, name, "one more note\n");
        CHECK(laya_notes_index(n, d, NULL, NULL, &s, err, sizeof err) == LAYA_OK && s.added == 1);
        CHECK(sqlite3_step(q) == SQLITE_ROW);
        int segments = sqlite3_column_int(q, 0);
        sqlite3_reset(q);
        CHECKF(segments >= 1 && segments <= NOTES_SEGMENTS_MAX, "run %d: %d segments", run, segments);
        if (segments > most) most = segments;
    }
    /* It did not stay at one by itself. */
    CHECK(most == NOTES_SEGMENTS_MAX);
    sqlite3_finalize(q);
    sqlite3_close(d3);
    laya_note h[LAYA_NOTES_MAX_K];
    int nh = 0;
    CHECK(laya_notes_search(n, "note", 4, LAYA_NOTES_MAX_K, h, &nh, err, sizeof err) == LAYA_OK &&
          nh == LAYA_NOTES_MAX_K);
    CHECKF(laya_notes_check(n, err, sizeof err) == LAYA_OK, "%s", err);
    laya_notes_free(n);
}

static int token_line(void *ctx, const char *t, int len, int start, int end) {
    char *line = ctx;
    size_t l = strlen(line);
    snprintf(line + l, 512 - l, "%.*s@%d-%d ", len, t, start, end);
    return 0;
}

/* The tokenizer's tokens and byte ranges, pinned (the index holds them:
 * a change would need every note indexed again): ASCII folded, porter on
 * top, CJK bigrams, a lone CJK character, bytes that are not UTF-8 and
 * emoji as separators. */
TEST(notes_tokenizer_pins_its_tokens) {
    sqlite3 *db = NULL;
    int no_fts5 = 0;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK && notes_tok_register(db, &no_fts5) == SQLITE_OK);
    notes_stemmer *st = notes_stemmer_new(db);
    CHECK(st);
    static const char *const text[][2] = {
        {"Hello_World 42 naïve Ünïcode", "hello_world@0-11 42@12-14 naïv@15-21 Ünïcode@22-31 "},
        {"北京天气。好\xe4\xb8", "北京@0-6 京天@3-9 天气@6-12 好@15-18 "},
        {"\xff" "abc\xc0\xaf" "de\xed\xa0\x80" "fg 😀 x", "abc@1-4 de@6-8 fg@11-13 x@19-20 "},
    };
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) {
        char line[512] = "";
        notes_stem_each(st, text[i][0], strlen(text[i][0]), token_line, line);
        CHECKF(!strcmp(line, text[i][1]), "%zu: %s", i, line);
    }
    notes_stemmer_free(st);
    sqlite3_close(db);
}
