/* bench_notes.c - the notes index (C11): the latency of the related-notes
 * query on 10,000 generated notes (target p99 <= 0.5 ms), the cost of a
 * keystroke that needs no query (the cache), and the Chinese tokenizers
 * compared on the hand-made set of tests/fixtures/notes_zh: Laya's
 * bigrams against FTS5's trigram tokenizer, both through FTS5 and bm25.
 *
 * The generator writes N_NOTES Markdown files into a temporary folder:
 * a title of two or three words and a body of 60..200 words drawn from a
 * Zipf-like vocabulary of VOCAB made-up words plus a few names, one note in
 * ten in Chinese (characters drawn from a pool of common ones). Queries are
 * sentences made the same way, as typed at a word end. */
#include "bench.h"

#include <ftw.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "laya.h"
#include "notes/notes.h"
#include "util/utf8.h"

enum { N_NOTES = 10000, VOCAB = 5000, N_QUERIES = 2000, N_NAMES = 200 };

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint32_t next_u32(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static double uniform(void) { return (next_u32() + 0.5) / 4294967296.0; }

/* Word w (0..VOCAB) as letters: a made-up but stable spelling. */
static void word(int w, char *out) {
    static const char *syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo",
                                "ze", "pa", "do", "fi", "gu", "ha", "je", "bo"};
    int n = 0;
    out[0] = 0;
    do {
        n += sprintf(out + n, "%s", syl[w % 16]);
        w /= 16;
    } while (w);
    sprintf(out + n, "%s", "x");
}

/* A Zipf(1)-distributed word index: frequent words are frequent. */
static int zipf(void) {
    double h = log((double)VOCAB + 1);
    int w = (int)floor(exp(uniform() * h)) - 1;
    return w < 0 ? 0 : w >= VOCAB ? VOCAB - 1 : w;
}

static const char zh_pool[] = "北京上海会议项目计划客户合同发票酒店预算报告朋友生日茶具火锅牙医搬家签证护照跑步公园"
                              "学习函数列表字典番茄辣椒浇水婚礼摄影请柬厨房用品公司产品发布季度总结周末下午";

static void zh_text(char *out, size_t cap, int chars) {
    const uint8_t *s = (const uint8_t *)zh_pool;
    size_t n = sizeof zh_pool - 1, o = 0, pool_chars = n / 3;
    for (int i = 0; i < chars && o + 4 < cap; i++) {
        size_t c = next_u32() % pool_chars;
        memcpy(out + o, s + 3 * c, 3);
        o += 3;
    }
    out[o] = 0;
}

static void sentence(char *out, size_t cap, int words) {
    size_t o = 0;
    char w[32];
    for (int i = 0; i < words && o + 40 < cap; i++) {
        if (next_u32() % 8 == 0) o += (size_t)snprintf(out + o, cap - o, "Name%d ", (int)(next_u32() % N_NAMES));
        else {
            word(zipf(), w);
            o += (size_t)snprintf(out + o, cap - o, "%s ", w);
        }
    }
    out[o] = 0;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(p);
}

/* Writes the notes into dir. */
static void generate(const char *dir) {
    char path[4400], body[8192], title[256];
    for (int i = 0; i < N_NOTES; i++) {
        snprintf(path, sizeof path, "%s/note%05d.md", dir, i);
        FILE *f = fopen(path, "w");
        if (!f) return;
        if (i % 10 == 9) {
            zh_text(title, sizeof title, 4);
            zh_text(body, sizeof body, 80 + (int)(next_u32() % 200));
        } else {
            sentence(title, sizeof title, 2 + (int)(next_u32() % 2));
            sentence(body, sizeof body, 60 + (int)(next_u32() % 140));
        }
        fprintf(f, "# %s\n\n%s\n", title, body);
        fclose(f);
    }
}

/* CPU seconds of this thread: on a loaded machine the wall clock also
 * counts the time other processes had the core. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void latency(void) {
    char dir[] = "/tmp/laya-bench-notes-XXXXXX";
    if (!mkdtemp(dir)) return;
    char notes[4200], db[4200], err[512] = "";
    snprintf(notes, sizeof notes, "%s/notes", dir);
    snprintf(db, sizeof db, "%s/notes.db", dir);
    mkdir(notes, 0700);
    double t0 = bench_now();
    generate(notes);
    double t_gen = bench_now() - t0;
    laya_notes *n = NULL;
    laya_notes_summary s;
    if (laya_notes_open(db, 1, &n, err, sizeof err) != LAYA_OK) {
        printf("cannot open: %s\n", err);
        return;
    }
    t0 = bench_now();
    laya_status st = laya_notes_index(n, notes, NULL, NULL, &s, err, sizeof err);
    double t_index = bench_now() - t0;
    t0 = bench_now();
    laya_notes_index(n, notes, NULL, NULL, &s, err, sizeof err);
    double t_again = bench_now() - t0;
    if (st != LAYA_OK) {
        printf("index failed: %s\n", err);
        return;
    }
    struct stat sb;
    stat(db, &sb);
    /* The index run merges FTS5's segments (notes_store.c: compact). */
    sqlite3 *raw = NULL;
    sqlite3_stmt *q = NULL;
    int segments = -1;
    if (sqlite3_open(db, &raw) == SQLITE_OK &&
        sqlite3_prepare_v2(raw, "SELECT count(DISTINCT segid) FROM notes_idx", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        segments = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(raw);
    printf("%d notes generated in %.2f s; indexed in %.2f s; again (nothing changed) %.3f s; index %.1f MiB, FTS5 "
           "segments: %d\n",
           N_NOTES, t_gen, t_index, t_again, (double)sb.st_size / (1 << 20), segments);
    /* Each query as the session asks it: the terms of a sentence at a word
     * end, a new term set every time (no cache), top 3 with snippets. */
    double *us = malloc(N_QUERIES * sizeof *us), *us_zh = malloc(N_QUERIES * sizeof *us_zh);
    double *cpu = malloc(N_QUERIES * sizeof *cpu), *cpu_zh = malloc(N_QUERIES * sizeof *cpu_zh);
    char ctx[1024];
    int hits = 0, n_zh = 0;
    for (int i = 0; i < N_QUERIES; i++) {
        int zh = i % 10 == 9;
        if (zh) zh_text(ctx, sizeof ctx, 6 + (int)(next_u32() % 10));
        else sentence(ctx, sizeof ctx, 4 + (int)(next_u32() % 12));
        struct notes_link *l = notes_link_new(n);
        const laya_note *h;
        int nh = 0;
        double c0 = cpu_now();
        t0 = bench_now();
        notes_link_related(l, ctx, strlen(ctx), 3, &h, &nh);
        double dt = (bench_now() - t0) * 1e6, dc = (cpu_now() - c0) * 1e6;
        notes_link_free(l);
        if (zh) cpu_zh[n_zh] = dc, us_zh[n_zh++] = dt;
        else cpu[i - n_zh] = dc, us[i - n_zh] = dt;
        hits += nh > 0;
    }
    int n_en = N_QUERIES - n_zh;
    /* A keystroke inside a word: the cache answers. */
    struct notes_link *l = notes_link_new(n);
    sentence(ctx, sizeof ctx, 12);
    const laya_note *h;
    int nh;
    notes_link_related(l, ctx, strlen(ctx), 3, &h, &nh);
    strcat(ctx, "partia");
    double *us_c = malloc(N_QUERIES * sizeof *us_c);
    for (int i = 0; i < N_QUERIES; i++) {
        t0 = bench_now();
        notes_link_related(l, ctx, strlen(ctx), 3, &h, &nh);
        us_c[i] = (bench_now() - t0) * 1e6;
    }
    notes_link_free(l);
    qsort(us, (size_t)n_en, sizeof *us, cmp_d);
    qsort(us_zh, (size_t)n_zh, sizeof *us_zh, cmp_d);
    qsort(us_c, N_QUERIES, sizeof *us_c, cmp_d);
    qsort(cpu, (size_t)n_en, sizeof *cpu, cmp_d);
    qsort(cpu_zh, (size_t)n_zh, sizeof *cpu_zh, cmp_d);
    printf("%-34s %8s %8s %8s %8s\n", "related notes, top 3 (us)", "n", "p50", "p99", "max");
    printf("%-34s %8d %8.1f %8.1f %8.1f\n", "English sentence, new terms", n_en, us[n_en / 2], us[n_en * 99 / 100],
           us[n_en - 1]);
    printf("%-34s %8d %8.1f %8.1f %8.1f\n", "  the same, thread CPU time", n_en, cpu[n_en / 2], cpu[n_en * 99 / 100],
           cpu[n_en - 1]);
    printf("%-34s %8d %8.1f %8.1f %8.1f\n", "Chinese sentence, new terms", n_zh, us_zh[n_zh / 2],
           us_zh[n_zh * 99 / 100], us_zh[n_zh - 1]);
    printf("%-34s %8d %8.1f %8.1f %8.1f\n", "  the same, thread CPU time", n_zh, cpu_zh[n_zh / 2],
           cpu_zh[n_zh * 99 / 100], cpu_zh[n_zh - 1]);
    printf("%-34s %8d %8.2f %8.2f %8.2f\n", "mid-word keystroke (cached)", N_QUERIES, us_c[N_QUERIES / 2],
           us_c[N_QUERIES * 99 / 100], us_c[N_QUERIES - 1]);
    printf("(%d of %d queries found notes; target p99 <= 500 us)\n", hits, N_QUERIES);
    free(us);
    free(us_zh);
    free(us_c);
    free(cpu);
    free(cpu_zh);
    laya_notes_free(n);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- Chinese: bigrams against trigrams --------------------------------------- */

/* The FTS5 query for a trigram table: every window of three consecutive
 * CJK characters of the sentence, OR'd (what bigrams do with two). A run
 * shorter than three characters cannot be asked: the trigram tokenizer
 * matches nothing shorter. */
static void trigram_query(const char *text, char *q, size_t cap) {
    const uint8_t *s = (const uint8_t *)text;
    size_t n = strlen(text), o = 0, at[3] = {0, 0, 0};
    int run = 0;
    q[0] = 0;
    for (size_t i = 0; i < n; i = utf8_next(s, n, i)) {
        if (utf8_word_class(utf8_cp_at(s, n, i)) != UTF8_WORD_CJK) {
            run = 0;
            continue;
        }
        at[0] = at[1], at[1] = at[2], at[2] = i;
        if (++run < 3) continue;
        size_t end = utf8_next(s, n, i);
        if (o + (end - at[0]) + 8 >= cap) break;
        o += (size_t)snprintf(q + o, cap - o, "%s\"%.*s\"", o ? " OR " : "", (int)(end - at[0]), text + at[0]);
    }
}

static void chinese(void) {
    static const char *names[] = {"beijing", "shanghai", "hotpot", "python", "dentist", "moving",
                                  "wedding", "running", "budget", "zhangsan", "visa",    "garden"};
    enum { N_DOCS = sizeof names / sizeof names[0] };
    sqlite3 *db = NULL;
    int no_fts5;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK || notes_tok_register(db, &no_fts5) != SQLITE_OK) return;
    sqlite3_exec(db,
                 "CREATE VIRTUAL TABLE bi USING fts5(title, body, tokenize = 'porter laya');"
                 "CREATE VIRTUAL TABLE tri USING fts5(title, body, tokenize = 'trigram');",
                 NULL, NULL, NULL);
    char path[512], buf[4096];
    for (int i = 0; i < N_DOCS; i++) {
        snprintf(path, sizeof path, "tests/fixtures/notes_zh/%s.md", names[i]);
        FILE *f = fopen(path, "r");
        if (!f) {
            printf("(run from the repository root: %s missing)\n", path);
            sqlite3_close(db);
            return;
        }
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        buf[len] = 0;
        fclose(f);
        char *nl = strchr(buf, '\n');
        const char *title = buf + 2, *body = nl ? nl + 1 : "";
        if (nl) *nl = 0;
        for (int t = 0; t < 2; t++) {
            sqlite3_stmt *q = NULL;
            sqlite3_prepare_v2(db, t ? "INSERT INTO tri(rowid, title, body) VALUES(?1, ?2, ?3)"
                                     : "INSERT INTO bi(rowid, title, body) VALUES(?1, ?2, ?3)",
                               -1, &q, NULL);
            sqlite3_bind_int(q, 1, i + 1);
            sqlite3_bind_text(q, 2, title, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(q, 3, body, -1, SQLITE_TRANSIENT);
            sqlite3_step(q);
            sqlite3_finalize(q);
        }
    }
    FILE *f = fopen("tests/fixtures/notes_zh/queries.tsv", "r");
    if (!f) return;
    int n_q = 0, top1[2] = {0}, top3[2] = {0}, none[2] = {0};
    double rr[2] = {0};
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        tab[1 + strcspn(tab + 1, "\r\n")] = 0;
        int want = 0;
        for (int i = 0; i < N_DOCS; i++)
            if (!strcmp(names[i], tab + 1)) want = i + 1;
        n_q++;
        for (int t = 0; t < 2; t++) {
            char q[NOTES_MAX_QUERY];
            if (t) trigram_query(line, q, sizeof q);
            else notes_query(line, strlen(line), NOTES_TERMS_TYPING, q, sizeof q);
            int rank = -1;
            if (q[0]) {
                sqlite3_stmt *st = NULL;
                sqlite3_prepare_v2(db, t ? "SELECT rowid FROM tri WHERE tri MATCH ?1 ORDER BY bm25(tri, 3.0, 1.0) LIMIT 3"
                                         : "SELECT rowid FROM bi WHERE bi MATCH ?1 ORDER BY bm25(bi, 3.0, 1.0) LIMIT 3",
                                   -1, &st, NULL);
                sqlite3_bind_text(st, 1, q, -1, SQLITE_TRANSIENT);
                for (int r = 0; sqlite3_step(st) == SQLITE_ROW; r++)
                    if (sqlite3_column_int(st, 0) == want && rank < 0) rank = r;
                sqlite3_finalize(st);
            }
            if (rank == 0) top1[t]++;
            if (rank >= 0) top3[t]++, rr[t] += 1.0 / (rank + 1);
            if (!q[0]) none[t]++;
        }
    }
    fclose(f);
    sqlite3_close(db);
    printf("%-28s %8s %8s %8s %14s\n", "Chinese set (20 queries)", "top-1", "top-3", "MRR@3", "no query");
    const char *label[2] = {"bigrams (laya tokenizer)", "trigram (FTS5)"};
    for (int t = 0; t < 2; t++)
        printf("%-28s %5d/%-2d %5d/%-2d %8.2f %11d/%-2d\n", label[t], top1[t], n_q, top3[t], n_q, rr[t] / n_q,
               none[t], n_q);
}

BENCH(bench_notes) {
    latency();
    chinese();
}
