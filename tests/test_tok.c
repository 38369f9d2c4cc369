/* test_tok.c - the tokenizer: pre-tokenizer cases, training on hand-checked
 * corpora, round trips, tail stability, prefix queries, hostile files. */
#include "test.h"

#include <dirent.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tok/tok.h"
#include "tok/tok_stream.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static tok *train_on(const char *fixture, int32_t vocab) {
    char path[4096], err[256] = "";
    snprintf(path, sizeof path, "%s", test_fixture(fixture));
    const char *paths[1] = {path};
    tok *t = NULL;
    if (tok_train(paths, 1, vocab, NULL, NULL, &t, err, sizeof err) != LAYA_OK) {
        fprintf(stderr, "    train on %s: %s\n", path, err);
        return NULL;
    }
    return t;
}

/* "a|b|c": the chunks of text as '|'-joined. */
static void chunks_of(const char *s, char *out, size_t cap) {
    size_t n = strlen(s), k = 0;
    for (size_t a = 0; a < n;) {
        size_t e = tok_chunk_end((const uint8_t *)s, n, a);
        if (a && k + 1 < cap) out[k++] = '|';
        for (size_t i = a; i < e && k + 1 < cap; i++) out[k++] = s[i];
        a = e;
    }
    out[k] = 0;
}

TEST(tok_chunk_cases) {
    static const char *cases[][2] = {
        {"Hello world", "Hello| world"},
        {"don't stop", "don|'t| stop"},
        {"I'm here", "I|'m| here"},
        {"we’ll go", "we|’ll| go"},
        {"a  b", "a| | b"},
        {"a   b", "a|  | b"},
        {"a \tb", "a| \t|b"},
        {"end.  ", "end|.|  "},
        {"x, y!", "x|,| y|!"},
        {"12345 678", "123|45| 678"},
        {"abc123", "abc|123"},
        {"line\n\nnext", "line|\n\n|next"},
        {"a\r\nb", "a|\r\n|b"},
        {"café naïve", "café| naïve"},
        {"我们明天下午三点开会", "我们明天|下午三点|开会"},
        {"你好，世界。", "你好|，|世界|。"},
        {"用 Python 写", "用| Python| |写"},
        {"hi 😀👍🏽!", "hi| 😀👍🏽!"},
        {"こんにちは世界", "こんにち|は世界"},
        {"“引号”", "“|引号|”"},
        {"'quoted'", "'quoted|'"},
        {" 'tis", " 'tis"},
        {"a\xff" "b", "a|\xff|b"},
        {"\xe4\xb8", "\xe4|\xb8"},
        {"x=1;", "x|=|1|;"},
        {"  ", "  "},
    };
    char got[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        chunks_of(cases[i][0], got, sizeof got);
        CHECKF(!strcmp(got, cases[i][1]), "chunks of \"%s\": got \"%s\", want \"%s\"", cases[i][0], got,
               cases[i][1]);
    }
    /* Runs are capped at 64 bytes, whole code points. */
    char long_word[201], long_cjk[3 * 70 + 1];
    memset(long_word, 'a', 200);
    long_word[200] = 0;
    CHECK(tok_chunk_end((const uint8_t *)long_word, 200, 0) == 64);
    for (int i = 0; i < 70; i++) memcpy(long_cjk + 3 * i, "中", 3);
    CHECK(tok_chunk_end((const uint8_t *)long_cjk, 210, 0) == 12);
    char long_emoji[4 * 30];
    for (int i = 0; i < 30; i++) memcpy(long_emoji + 4 * i, "😀", 4);
    CHECK(tok_chunk_end((const uint8_t *)long_emoji, sizeof long_emoji, 0) == 64);
}

TEST(tok_known_merges_tiny) {
    tok *t = train_on("tok/tiny.txt", 1000);
    CHECK(t);
    size_t n;
    uint8_t *want = read_all(test_fixture("tok/tiny.merges"), &n);
    CHECK(want);
    want[n] = 0;
    int32_t id = TOK_FIRST_MERGE;
    for (char *line = strtok((char *)want, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        unsigned l, r;
        CHECK(sscanf(line, "%u %u", &l, &r) == 2);
        CHECKF(id < tok_vocab_size(t), "trainer stopped at %d merges", (int)(id - TOK_FIRST_MERGE));
        size_t bl, bw, br;
        const uint8_t *b = tok_bytes(t, id, &bw), *lb = tok_bytes(t, (int32_t)l, &bl);
        const uint8_t *rb = tok_bytes(t, (int32_t)r, &br);
        CHECKF(bw == bl + br && !memcmp(b, lb, bl) && !memcmp(b + bl, rb, br),
               "merge %d is not (%u, %u)", (int)id, l, r);
        id++;
    }
    CHECKF(tok_vocab_size(t) == id, "vocab %d, want %d (stop below min count)", (int)tok_vocab_size(t), (int)id);
    int32_t out[16];
    CHECK(tok_encode(t, (const uint8_t *)" zw", 3, out, 16) == 1 && out[0] == 262);
    CHECK(tok_encode(t, (const uint8_t *)"xy", 2, out, 16) == 1 && out[0] == 261);
    CHECK(tok_encode(t, (const uint8_t *)" xy", 3, out, 16) == 2 && out[0] == ' ' && out[1] == 261);
    CHECK(tok_encode(t, (const uint8_t *)"zw", 2, out, 16) == 2 && out[0] == 'z');
    free(want);
    tok_free(t);
}

static int round_trip(const tok *t, const uint8_t *s, size_t n) {
    int32_t *ids = malloc(sizeof *ids * (n + 1));
    uint8_t *back = malloc(n + 1);
    size_t k = tok_encode(t, s, n, ids, n + 1);
    size_t m = tok_decode(t, ids, k, back, n + 1);
    int ok = m == n && !memcmp(back, s, n) && k <= n;
    free(ids);
    free(back);
    return ok;
}

TEST(tok_round_trip_random_bytes) {
    tok *t = train_on("tok/mixed.txt", 700);
    CHECK(t);
    uint8_t buf[4096];
    for (int iter = 0; iter < 300; iter++) {
        size_t n = rnd() % sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rnd();
        CHECKF(round_trip(t, buf, n), "random bytes, iteration %d", iter);
    }
    /* Long inputs take the cached path. */
    size_t n = 1 << 17;
    uint8_t *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = rnd() % 4 ? (uint8_t)"ab c'\n\0"[rnd() % 7] : (uint8_t)rnd();
    CHECK(round_trip(t, big, n));
    free(big);
    tok_free(t);
}

/* Every regular file under tests/fixtures (other modules' too). */
static int walk(const tok *t, const char *dir, int *files) {
    DIR *d = opendir(dir);
    if (!d) return 1;
    struct dirent *e;
    int ok = 1;
    while ((e = readdir(d)) && ok) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) ok = walk(t, p, files);
        else if (S_ISREG(st.st_mode) && st.st_size < (64 << 20)) {
            size_t n;
            uint8_t *b = read_all(p, &n);
            if (b && !round_trip(t, b, n)) {
                fprintf(stderr, "    round trip failed on %s\n", p);
                ok = 0;
            }
            free(b);
            (*files)++;
        }
    }
    closedir(d);
    return ok;
}

TEST(tok_round_trip_fixtures) {
    tok *t = train_on("tok/mixed.txt", 700);
    CHECK(t);
    char root[4096];
    snprintf(root, sizeof root, "%s", test_fixture(""));
    int files = 0;
    CHECK(walk(t, root, &files));
    CHECK(files >= 3);
    tok_free(t);
}

TEST(tok_mixed_compresses) {
    /* Trained and encoded on the same 2 KB (where ~230 merges pass the
     * minimum count), the text must shrink well below 1 token per byte (1.77
     * measured): a broken merge order or pair table shows here. */
    tok *t = train_on("tok/mixed.txt", 700);
    CHECK(t);
    size_t n;
    uint8_t *b = read_all(test_fixture("tok/mixed.txt"), &n);
    int32_t *ids = malloc(sizeof *ids * n);
    size_t k = tok_encode(t, b, n, ids, n);
    CHECKF((double)n / (double)k > 1.6, "%.2f bytes/token", (double)n / (double)k);
    free(ids);
    free(b);
    tok_free(t);
}

TEST(tok_train_deterministic) {
    uint8_t *b1, *b2;
    size_t n1, n2;
    omp_set_num_threads(1);
    tok *t1 = train_on("tok/mixed.txt", 600);
    omp_set_num_threads(2);
    tok *t2 = train_on("tok/mixed.txt", 600);
    CHECK(t1 && t2);
    CHECK(tok_save(t1, &b1, &n1) == LAYA_OK && tok_save(t2, &b2, &n2) == LAYA_OK);
    CHECK(n1 == n2 && !memcmp(b1, b2, n1));
    /* save -> load gives the same tokenizer back. */
    tok *t3 = NULL;
    char err[256];
    CHECK(tok_load(b1, n1, &t3, err, sizeof err) == LAYA_OK);
    CHECK(tok_vocab_size(t3) == tok_vocab_size(t1));
    for (int32_t id = 0; id < tok_vocab_size(t1); id++) {
        size_t la, lb;
        const uint8_t *a = tok_bytes(t1, id, &la), *b = tok_bytes(t3, id, &lb);
        CHECK(la == lb && !memcmp(a, b, la));
    }
    free(b1);
    free(b2);
    tok_free(t1);
    tok_free(t2);
    tok_free(t3);
}

/* Random text from pieces that exercise every pre-tokenizer rule. */
static size_t random_text(uint8_t *buf, size_t cap) {
    static const char *pieces[] = {"a", "Zq", "word", " ", "  ", "'", "’", "1", "2024", ".", "!?",
                                   "\n", "\r\n", "\t", "中", "文字", "，", "。", "😀", "é", "\xe4",
                                   "\xb8", "\xff", "\xf0\x9f", "x", "'s", "\xc3", "ー"};
    size_t n = 0;
    size_t want = rnd() % cap;
    while (n < want) {
        const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
        size_t l = strlen(p);
        if (!strcmp(p, "x")) { l = 1; p = "\0"; }
        if (n + l > cap) break;
        memcpy(buf + n, p, l);
        n += l;
    }
    return n;
}

static int starts_with(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return nb <= na && !memcmp(a, b, nb * sizeof *a);
}

TEST(tok_tail_stable_under_append) {
    tok *t = train_on("tok/mixed.txt", 700);
    CHECK(t);
    uint8_t s[600];
    int32_t full[700], pre[700];
    for (int iter = 0; iter < 400; iter++) {
        size_t n = random_text(s, sizeof s);
        size_t nf = tok_encode(t, s, n, full, 700);
        for (size_t k = 0; k <= n; k++) {
            size_t tail = tok_tail_start(t, s, k);
            CHECK(tail <= k);
            size_t np = tok_encode(t, s, tail, pre, 700);
            CHECKF(starts_with(full, nf, pre, np),
                   "iteration %d: tokens before tail %zu of prefix %zu change when text is appended",
                   iter, tail, k);
        }
    }
    /* Plain cases: the word being typed, and a long CJK run. */
    const char *s1 = "Best re";
    CHECK(tok_tail_start(t, (const uint8_t *)s1, strlen(s1)) == 4);
    const char *s2 = "我们明天下午三点开";
    CHECK(tok_tail_start(t, (const uint8_t *)s2, strlen(s2)) == 24);
    const char *s3 = "caf\xc3";
    CHECK(tok_tail_start(t, (const uint8_t *)s3, strlen(s3)) == 0);
    tok_free(t);
}

TEST(tok_streaming_split_matches_whole) {
    /* What `laya tokenizer encode` does: encode up to the tail, keep the
     * tail, append the next block. */
    tok *t = train_on("tok/mixed.txt", 700);
    CHECK(t);
    size_t n;
    uint8_t *b = read_all(test_fixture("tok/mixed.txt"), &n);
    int32_t *whole = malloc(sizeof *whole * n), *parts = malloc(sizeof *parts * n);
    size_t nw = tok_encode(t, b, n, whole, n), np = 0, a = 0;
    for (size_t end = 0; end < n;) {
        end += 1 + rnd() % 37;
        if (end > n) end = n;
        size_t tail = end == n ? n : a + tok_tail_start(t, b + a, end - a);
        np += tok_encode(t, b + a, tail - a, parts + np, n - np);
        a = tail;
    }
    CHECK(np == nw && !memcmp(whole, parts, nw * sizeof *whole));
    free(whole);
    free(parts);
    free(b);
    tok_free(t);
}

static int cmp_i32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

TEST(tok_prefix_queries_match_brute_force) {
    tok *t = train_on("tok/mixed.txt", 700);
    CHECK(t);
    size_t n;
    uint8_t *text = read_all(test_fixture("tok/mixed.txt"), &n);
    int32_t V = tok_vocab_size(t);
    int32_t *got = malloc(sizeof *got * (size_t)V), *want = malloc(sizeof *want * (size_t)V);
    for (int iter = 0; iter < 2000; iter++) {
        uint8_t q[12];
        size_t qn = 1 + rnd() % 6;
        if (iter % 4) memcpy(q, text + rnd() % (n - qn), qn);
        else for (size_t i = 0; i < qn; i++) q[i] = (uint8_t)rnd();
        size_t nw = 0, np = 0;
        for (int32_t id = 0; id < V; id++) {
            size_t len;
            const uint8_t *b = tok_bytes(t, id, &len);
            if (len >= qn && !memcmp(b, q, qn)) want[nw++] = id;
        }
        size_t ng = tok_extending(t, q, qn, got, (size_t)V);
        CHECK(ng == nw);
        qsort(got, ng, sizeof *got, cmp_i32);
        CHECK(!memcmp(got, want, nw * sizeof *got));
        /* Only cap are written, the full count is returned. */
        if (nw > 1) CHECK(tok_extending(t, q, qn, got, 1) == nw);
        for (int32_t id = 0; id < V; id++) {
            size_t len;
            const uint8_t *b = tok_bytes(t, id, &len);
            if (len >= 1 && len < qn && !memcmp(b, q, len)) want[np++] = id;
        }
        ng = tok_prefixes(t, q, qn, got, (size_t)V);
        CHECK(ng == np);
        qsort(got, ng, sizeof *got, cmp_i32);
        CHECK(!memcmp(got, want, np * sizeof *got));
    }
    /* A half-typed multibyte character: 3 bytes of "中" typed 2. */
    size_t ne = tok_extending(t, (const uint8_t *)"\xe4\xb8", 2, got, (size_t)V);
    CHECK(ne >= 1);
    free(got);
    free(want);
    free(text);
    tok_free(t);
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int rejects(const uint8_t *b, size_t n, const char *needle) {
    tok *t = NULL;
    char err[256] = "";
    laya_status st = tok_load(b, n, &t, err, sizeof err);
    if (st == LAYA_OK) {
        tok_free(t);
        fprintf(stderr, "    accepted a bad file (want '%s')\n", needle);
        return 0;
    }
    if (!strstr(err, needle)) {
        fprintf(stderr, "    message \"%s\" lacks \"%s\"\n", err, needle);
        return 0;
    }
    return t == NULL;
}

TEST(tok_hostile_files_rejected) {
    tok *t = train_on("tok/mixed.txt", 300);
    CHECK(t);
    uint8_t *b, *c;
    size_t n;
    CHECK(tok_save(t, &b, &n) == LAYA_OK);
    c = malloc(n + 8);
    for (size_t k = 0; k < n; k++) CHECKF(rejects(b, k, k < 24 ? "truncated" : "truncated"), "len %zu", k);
    memcpy(c, b, n);
    memset(c + n, 0, 8);
    CHECK(rejects(c, n + 8, "trailing"));
    memcpy(c, b, n);
    c[0] = 'X';
    CHECK(rejects(c, n, "magic"));
    memcpy(c, b, n);
    put32(c + 8, 2);
    CHECK(rejects(c, n, "version"));
    memcpy(c, b, n);
    put32(c + 12, 301);
    CHECK(rejects(c, n, "needs exactly"));
    put32(c + 12, 70000);
    CHECK(rejects(c, n, "outside"));
    memcpy(c, b, n);
    put32(c + 16, 5);
    CHECK(rejects(c, n, "special"));
    memcpy(c, b, n);
    put32(c + 20, 9);
    CHECK(rejects(c, n, "pre-tokenizer"));
    /* Merge 265 (entry 5) pointing at itself, at a later id, at a special. */
    memcpy(c, b, n);
    put32(c + 24 + 8 * 5, 265);
    CHECK(rejects(c, n, "below"));
    memcpy(c, b, n);
    put32(c + 24 + 8 * 5 + 4, 0xFFFFFFFF);
    CHECK(rejects(c, n, "below"));
    memcpy(c, b, n);
    put32(c + 24 + 8 * 5, TOK_EOS);
    CHECK(rejects(c, n, "special"));
    /* Duplicate: entry 7 repeats entry 3's pair. */
    memcpy(c, b, n);
    memcpy(c + 24 + 8 * 7, c + 24 + 8 * 3, 8);
    CHECK(rejects(c, n, "duplicate"));
    /* Duplicate by different pairs: "ab" then ("a","b") and ... build by
     * hand: 260 = (a,b), 261 = (260,c) "abc", 262 = (b,c), 263 = (a,262) "abc". */
    uint8_t h[24 + 32];
    memcpy(h, b, 24);
    put32(h + 12, 264);
    uint32_t pairs[4][2] = {{'a', 'b'}, {260, 'c'}, {'b', 'c'}, {'a', 262}};
    for (int i = 0; i < 4; i++) {
        put32(h + 24 + 8 * i, pairs[i][0]);
        put32(h + 28 + 8 * i, pairs[i][1]);
    }
    CHECK(rejects(h, sizeof h, "duplicate entry: token 263"));
    /* The same file without the last merge is fine. */
    put32(h + 12, 263);
    tok *ok = NULL;
    CHECK(tok_load(h, sizeof h - 8, &ok, NULL, 0) == LAYA_OK);
    tok_free(ok);
    /* Runaway lengths: each merge doubles the last one. */
    size_t nl = 24 + 8 * 10;
    uint8_t *l = malloc(nl);
    memcpy(l, b, 24);
    put32(l + 12, 270);
    put32(l + 24, 'a');
    put32(l + 28, 'a');
    for (uint32_t i = 1; i < 10; i++) {
        put32(l + 24 + 8 * i, 259 + i);
        put32(l + 28 + 8 * i, 259 + i);
    }
    CHECK(rejects(l, nl, "bytes long"));
    free(l);
    free(b);
    free(c);
    tok_free(t);
}

TEST(tok_file_round_trip_and_missing) {
    tok *t = train_on("tok/mixed.txt", 400), *u = NULL;
    CHECK(t);
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/x.tok", test_tmpdir());
    CHECK(tok_save_file(t, path, err, sizeof err) == LAYA_OK);
    CHECK(tok_load_file(path, &u, err, sizeof err) == LAYA_OK);
    CHECK(tok_vocab_size(u) == tok_vocab_size(t));
    tok_free(u);
    u = NULL;
    CHECK(tok_load_file("/nonexistent/x.tok", &u, err, sizeof err) == LAYA_ERR_IO);
    CHECK(strstr(err, "/nonexistent/x.tok") != NULL);
    tok_free(t);
}

TEST(tok_stream_reader) {
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/s.tokens", test_tmpdir());
    uint8_t sha[32] = {1, 2, 3};
    uint8_t buf[TOK_STREAM_HEADER + 8];
    tok_stream_header(buf, 300, 4, sha);
    uint16_t ids[4] = {TOK_BOS, 'h', 299, 0};
    memcpy(buf + TOK_STREAM_HEADER, ids, 8);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    tok_stream s;
    CHECK(tok_stream_open(path, &s, err, sizeof err) == LAYA_OK);
    CHECK(s.n == 4 && s.vocab_size == 300 && s.ids[0] == TOK_BOS && s.ids[2] == 299);
    CHECK(!memcmp(s.tok_sha256, sha, 32));
    tok_stream_close(&s);
    /* An id out of range, a short file, a bad magic. */
    buf[TOK_STREAM_HEADER + 4] = 44;
    buf[TOK_STREAM_HEADER + 5] = 1; /* 300 */
    f = fopen(path, "wb");
    fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(tok_stream_open(path, &s, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "not below"));
    f = fopen(path, "wb");
    fwrite(buf, 1, sizeof buf - 1, f);
    fclose(f);
    CHECK(tok_stream_open(path, &s, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "promises"));
    buf[0] = 'Q';
    f = fopen(path, "wb");
    fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(tok_stream_open(path, &s, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "magic"));
}

/* ---- the CJK path (tok_encode_cjk) against the reference BPE ---- */

#include "tok/tok_impl.h"

static size_t put_cp(uint8_t *b, uint32_t cp) {
    b[0] = (uint8_t)(0xE0 | cp >> 12);
    b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    b[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
}

/* Random chunks of 1..21 characters, half of them characters that are one
 * token, half anywhere in U+3000..U+9FFF; both paths must give the same ids. */
static void cjk_matches_ref(const tok *t, int cases) {
    int32_t singles[8192], ns = 0, a[TOK_CHUNK_MAX + 4], b[TOK_CHUNK_MAX + 4];
    for (uint32_t i = 0; i < TOK_CJK_CHARS; i++)
        if (t->cjk_char[i] && ns < 8192) singles[ns++] = (int32_t)(TOK_CJK_FIRST + i);
    int fast = 0;
    for (int c = 0; c < cases; c++) {
        uint8_t s[TOK_CHUNK_MAX];
        size_t n = 0, chars = 1 + rnd() % 21;
        for (size_t k = 0; k < chars; k++) {
            uint32_t cp = ns && rnd() % 2 ? (uint32_t)singles[rnd() % (uint32_t)ns] : TOK_CJK_FIRST + rnd() % TOK_CJK_CHARS;
            n += put_cp(s + n, cp);
        }
        size_t m = tok_encode_cjk(t, s, n, a), r = tok_encode_chunk_ref(t, s, n, b);
        if (!m) continue;
        fast++;
        CHECKF(m == r && !memcmp(a, b, m * sizeof *a), "case %d: %zu ids from the CJK path, %zu from BPE", c, m, r);
    }
    printf("    %d of %d chunks through the CJK path (%d single-token characters)\n", fast, cases, (int)ns);
    CHECK(!t->cjk_ok || fast == cases);
}

TEST(tok_cjk_path_matches_reference) {
    char err[256];
    tok *t = NULL;
    CHECKF(tok_load_file("models/tokenizer.tok", &t, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(t->cjk_ok); /* the shipped merges allow it */
    cjk_matches_ref(t, 20000);
    /* Whole texts: tok_encode (which takes the path) against chunk-by-chunk BPE. */
    size_t n;
    uint8_t *s = read_all(test_fixture("tok/mixed.txt"), &n);
    CHECK(s);
    int32_t *ids = malloc(sizeof *ids * (n + 1)), *ref = malloc(sizeof *ref * (n + 1)), tmp[TOK_CHUNK_MAX];
    size_t k = tok_encode(t, s, n, ids, n + 1), r = 0;
    for (size_t a = 0; a < n;) {
        size_t e = tok_chunk_end(s, n, a), m = tok_encode_chunk_ref(t, s + a, e - a, tmp);
        memcpy(ref + r, tmp, m * sizeof *tmp);
        r += m;
        a = e;
    }
    CHECK(k == r && !memcmp(ids, ref, k * sizeof *ids));
    free(s), free(ids), free(ref);
    tok_free(t);
    tok *tr = train_on("tok/mixed.txt", 1200);
    CHECK(tr);
    printf("    trained on mixed.txt: CJK path %s\n", tr->cjk_ok ? "allowed" : "refused");
    cjk_matches_ref(tr, 5000);
    tok_free(tr);
}

/* A merge across a character boundary ((0xAD, 0xE4): the end of 中 and the
 * start of the next) must turn the path off: forced on, it would differ. */
TEST(tok_cjk_path_refuses_unsafe_merges) {
    const uint16_t merges[2][2] = {{0xAD, 0xE4}, {0xE4, 0xB8}};
    char err[256];
    tok *t = NULL;
    CHECKF(tok_build(TOK_FIRST_MERGE + 2, merges, &t, err, sizeof err) == LAYA_OK, "%s", err);
    const uint8_t s[] = {0xE4, 0xB8, 0xAD, 0xE4, 0xB8, 0xAD}; /* 中中 */
    int32_t a[8], b[8];
    CHECK(!t->cjk_ok);
    CHECK(tok_encode_cjk(t, s, 6, a) == 0);
    size_t r = tok_encode_chunk_ref(t, s, 6, b);
    CHECK(tok_encode(t, s, 6, a, 8) == r && !memcmp(a, b, r * sizeof *a));
    t->cjk_ok = 1; /* the check's reason: forced, the path gives other ids */
    size_t m = tok_encode_cjk(t, s, 6, a);
    CHECK(m != r || memcmp(a, b, r * sizeof *a));
    tok_free(t);
}

/* ---- the tables a load builds (tok_build_sorted, tok_is_whole) against
 * their definitions ---- */

static int cmp_bytes_ref(const tok *t, int32_t a, int32_t b) {
    size_t na, nb;
    const uint8_t *x = tok_bytes(t, a, &na), *y = tok_bytes(t, b, &nb);
    int c = memcmp(x, y, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* t->sorted is every non-special id, each before the next by memcmp order
 * with a prefix first (a check of sortedness and of the count is a check
 * against any correct comparison sort: the strings are distinct). */
static void sorted_matches_definition(const tok *t) {
    int32_t V = tok_vocab_size(t), want = V - TOK_N_SPECIAL;
    CHECKF(t->n_sorted == want, "%d ids in the index, want %d", (int)t->n_sorted, (int)want);
    uint8_t *seen = calloc((size_t)V, 1);
    int bad = 0;
    for (int32_t i = 0; i < t->n_sorted; i++) {
        int32_t id = t->sorted[i];
        if (id < 0 || id >= V || (id >= 256 && id < TOK_FIRST_MERGE) || seen[id]++) bad++;
        else if (i > 0 && cmp_bytes_ref(t, t->sorted[i - 1], id) >= 0) bad++;
    }
    CHECKF(!bad, "%d ids out of order, repeated or special", bad);
    free(seen);
}

TEST(tok_sorted_index_is_in_byte_order) {
    char err[256];
    tok *t = NULL;
    CHECKF(tok_load_file("models/tokenizer.tok", &t, err, sizeof err) == LAYA_OK, "%s", err);
    sorted_matches_definition(t);
    tok_free(t);
    t = train_on("tok/mixed.txt", 700);
    CHECK(t);
    sorted_matches_definition(t);
    tok_free(t);
    /* Ties of the radix sort's 6-byte prefixes: zero bytes after a token
     * ("a", "a\0", "a\0\0"), and tokens sharing more than their first 6
     * bytes ("aaaaaaaa", "aaaaaaaaa", "aaaaaaaa\0", "aaaaaaaab"). */
    enum { A = 'a', B = 'b', Z = 0, F = TOK_FIRST_MERGE };
    const uint16_t merges[][2] = {
        {A, Z},          /* F+0  "a\0" */
        {F + 0, Z},      /* F+1  "a\0\0" */
        {A, A},          /* F+2  "aa" */
        {F + 2, F + 2},  /* F+3  "aaaa" */
        {F + 3, F + 3},  /* F+4  "aaaaaaaa" */
        {F + 4, A},      /* F+5  "aaaaaaaaa" */
        {F + 4, Z},      /* F+6  "aaaaaaaa\0" */
        {F + 4, B},      /* F+7  "aaaaaaaab" */
        {F + 6, Z},      /* F+8  "aaaaaaaa\0\0" */
        {B, F + 4},      /* F+9  "baaaaaaaa" */
        {F + 1, F + 4},  /* F+10 "a\0\0aaaaaaaa" */
    };
    int nm = (int)(sizeof merges / sizeof merges[0]);
    CHECKF(tok_build(F + nm, merges, &t, err, sizeof err) == LAYA_OK, "%s", err);
    sorted_matches_definition(t);
    tok_free(t);
}

/* tok_is_whole, found on first need, against the reference BPE of each
 * token's bytes; asked twice, and after tok_encode has met some tokens.
 * *yes: how many tokens are whole. */
static void whole_matches_reference(const tok *t, const uint8_t *text, size_t n, int *yes_out) {
    int32_t V = tok_vocab_size(t), ids[TOK_CHUNK_MAX + 4];
    int32_t *enc = malloc(sizeof *enc * (n + 1));
    tok_encode(t, text, n, enc, n + 1);
    int bad = 0, yes = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t id = 0; id < V; id++) {
            size_t len;
            const uint8_t *b = tok_bytes(t, id, &len);
            int want = len >= 1 && len <= TOK_CHUNK_MAX && tok_encode_chunk_ref(t, b, len, ids) == 1 && ids[0] == id;
            if (tok_is_whole(t, id) != want) bad++;
            yes += pass == 0 && want;
        }
    free(enc);
    *yes_out = yes;
    CHECKF(!bad, "%d ids disagree", bad);
}

TEST(tok_whole_on_demand_matches_reference) {
    char err[256];
    tok *t = NULL;
    CHECKF(tok_load_file("models/tokenizer.tok", &t, err, sizeof err) == LAYA_OK, "%s", err);
    size_t n;
    uint8_t *s = read_all(test_fixture("tok/mixed.txt"), &n);
    CHECK(s);
    int yes = 0;
    whole_matches_reference(t, s, n, &yes);
    CHECK(yes > tok_vocab_size(t) / 2);
    tok_free(t);
    /* A token that BPE never forms from its own bytes: "abc" = "ab" . "c",
     * but "bc" is the earlier merge, so "abc" encodes as "a" "bc". */
    enum { F = TOK_FIRST_MERGE };
    const uint16_t merges[][2] = {{'b', 'c'}, {'a', 'b'}, {F + 1, 'c'}};
    CHECKF(tok_build(F + 3, merges, &t, err, sizeof err) == LAYA_OK, "%s", err);
    const uint8_t abc[] = "abc abc";
    whole_matches_reference(t, abc, 7, &yes);
    CHECK(yes == 256 + 2);
    CHECK(!tok_is_whole(t, F + 2));
    tok_free(t);
    free(s);
}
