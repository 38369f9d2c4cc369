/* test_pipeline.c - laya_session_event (include/laya.h): the rules every
 * front end gets from the library, on the shipped model: spacing after an
 * accepted blank, the privacy gate (secret fields, password prompts: no
 * suggestions, notes or intent; private fields: nothing learned), feedback
 * and learning kept on disk only for committed text, and the list the
 * pipeline shows equal to laya_suggest's. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "laya.h"

typedef struct {
    laya_model *m;
    laya_session *s;
    laya_memory *mem;
    char db[512];
} fixture;

static int open_fixture(fixture *f, int with_memory) {
    char err[512] = "";
    memset(f, 0, sizeof *f);
    if (laya_model_load("models/default.safetensors", &f->m, err, sizeof err) != LAYA_OK) return 0;
    if (laya_session_new(f->m, &f->s) != LAYA_OK) return 0;
    if (!with_memory) return 1;
    snprintf(f->db, sizeof f->db, "%s/memory.db", test_tmpdir());
    if (laya_memory_open(f->db, &f->mem, err, sizeof err) != LAYA_OK) return 0;
    return laya_session_set_memory(f->s, f->mem) == LAYA_OK;
}

static void close_fixture(fixture *f) {
    laya_session_free(f->s);
    laya_memory_free(f->mem);
    laya_model_free(f->m);
}

static laya_status ev(fixture *f, laya_input_kind kind, const char *text, unsigned field, unsigned want,
                      laya_view *v) {
    laya_input in = {.kind = kind, .text = text, .len = text ? strlen(text) : 0, .field = field,
                     .want = want, .k = 3, .t_ms = -1};
    return laya_session_event(f->s, &in, v);
}

/* Types text key by key (ASCII), each with the view wanted. */
static int type_keys(fixture *f, const char *text, unsigned field, unsigned want, laya_view *v) {
    for (const char *c = text; *c; c++) {
        char k[2] = {*c, 0};
        if (ev(f, LAYA_INPUT_KEY, k, field, want, v) != LAYA_OK) return 0;
    }
    return 1;
}

/* 1 when needle (n bytes) occurs anywhere in the file at path. */
static int file_holds(const char *path, const char *needle) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    size_t n = strlen(needle), cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    int found = 0;
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += r;
        if (len == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) break;
            buf = b, cap *= 2;
        }
    }
    for (size_t i = 0; buf && i + n <= len && !found; i++) found = !memcmp(buf + i, needle, n);
    free(buf);
    fclose(fp);
    return found;
}

/* A notes folder at dir whose one note names the words of the tests. */
static int mkdir_p_note(const char *dir) {
    char p[700];
    if (mkdir(dir, 0700) != 0) return 0;
    snprintf(p, sizeof p, "%s/report.md", dir);
    FILE *fp = fopen(p, "w");
    if (!fp) return 0;
    fputs("# Tr0ub4dor report\n\nThe Tr0ub4dor report is due on Friday.\n", fp);
    return fclose(fp) == 0;
}

static int count_row(void *ctx, const char *context, size_t clen, const char *text, size_t tlen, double ignored,
                     double accepted, int64_t last) {
    ++*(int *)ctx;
    return 0;
}

/* The store, its -wal and -shm. */
static int store_holds(const fixture *f, const char *needle) {
    char p[600];
    int any = file_holds(f->db, needle);
    snprintf(p, sizeof p, "%s-wal", f->db);
    any |= file_holds(p, needle);
    snprintf(p, sizeof p, "%s-shm", f->db);
    return any | file_holds(p, needle);
}

TEST(pipeline_view_equals_laya_suggest) {
    fixture f;
    CHECK(open_fixture(&f, 0));
    laya_view v;
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Thank you for your he", 0, LAYA_WANT_SUGGEST, &v) == LAYA_OK);
    laya_session *ref;
    CHECK(laya_session_new(f.m, &ref) == LAYA_OK);
    laya_suggestion out[3];
    int n = 0;
    CHECK(laya_session_set_context(ref, "Thank you for your he", 21) == LAYA_OK);
    CHECK(laya_suggest(ref, 3, out, &n) == LAYA_OK);
    CHECK(n > 0 && n == v.n);
    for (int i = 0; i < n; i++) CHECK(out[i].len == v.list[i].len && !memcmp(out[i].text, v.list[i].text, n));
    laya_session_free(ref);
    close_fixture(&f);
}

/* "…updated  C": a blank typed right after an accepted suggestion that
 * ends in one is not doubled; punctuation goes before it. */
TEST(pipeline_no_double_blank_after_an_accepted_blank) {
    fixture f;
    CHECK(open_fixture(&f, 0));
    laya_view v;
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Hi Anna, thanks for the upd", 0, LAYA_WANT_SUGGEST, &v) == LAYA_OK);
    int blank = -1;
    for (int i = 0; i < v.n; i++)
        if (v.list[i].len && v.list[i].text[v.list[i].len - 1] == ' ') blank = i;
    CHECKF(blank >= 0, "no suggestion ends in a blank");
    laya_input acc = {.kind = LAYA_INPUT_ACCEPT, .index = blank, .want = LAYA_WANT_SUGGEST, .t_ms = -1};
    CHECK(laya_session_event(f.s, &acc, &v) == LAYA_OK);
    CHECK(v.insert_len > 0 && v.insert[v.insert_len - 1] == ' ');
    CHECK(ev(&f, LAYA_INPUT_KEY, " ", 0, LAYA_WANT_SUGGEST, &v) == LAYA_OK);
    CHECK(v.erase == 0 && v.insert_len == 0);   /* absorbed */
    CHECK(ev(&f, LAYA_INPUT_KEY, ".", 0, LAYA_WANT_SUGGEST, &v) == LAYA_OK);
    CHECK(v.erase == 1 && v.insert_len == 2 && !memcmp(v.insert, ". ", 2));
    /* and after that, a blank is a blank again */
    CHECK(ev(&f, LAYA_INPUT_KEY, " ", 0, 0, &v) == LAYA_OK);
    CHECK(v.erase == 0 && v.insert_len == 1 && v.insert[0] == ' ');
    /* a front end that cannot delete: punctuation is typed where it falls */
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Hi Anna, thanks for the upd", 0, LAYA_WANT_SUGGEST, &v) == LAYA_OK);
    acc.field = LAYA_FIELD_NO_DELETE;
    CHECK(laya_session_event(f.s, &acc, &v) == LAYA_OK);
    CHECK(ev(&f, LAYA_INPUT_KEY, ",", LAYA_FIELD_NO_DELETE, 0, &v) == LAYA_OK);
    CHECK(v.erase == 0 && v.insert_len == 1);
    close_fixture(&f);
}

/* After a password prompt, and in a secret field, nothing at all: no
 * suggestion, no intent, no notes, nothing learned. */
TEST(pipeline_gate_shuts_after_a_password_prompt) {
    fixture f;
    CHECK(open_fixture(&f, 1));
    char err[512];
    laya_intent *h = NULL;
    CHECKF(laya_intent_load("models/default.intent.safetensors", f.m, NULL, &h, err, sizeof err) == LAYA_OK, "%s",
           err);
    laya_notes *nt = NULL;
    CHECKF(laya_notes_open(":memory:", 1, &nt, err, sizeof err) == LAYA_OK, "%s", err);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/notes", test_tmpdir());
    CHECK(mkdir_p_note(dir));
    CHECK(laya_notes_index(nt, dir, NULL, NULL, NULL, err, sizeof err) == LAYA_OK);
    CHECK(laya_session_set_intent(f.s, h) == LAYA_OK && laya_session_set_notes(f.s, nt) == LAYA_OK);
    const unsigned all = LAYA_WANT_SUGGEST | LAYA_WANT_INTENT | LAYA_WANT_NOTES;
    laya_view v;
    /* open: the same words get notes */
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Please send the Tr0ub4dor report ", 0, all, &v) == LAYA_OK);
    CHECKF(v.gate == 0 && v.n_notes > 0, "gate %d notes %d", v.gate, v.n_notes);
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, "[sudo] password for anna: Tr0ub4dor report ", 0, all, &v) == LAYA_OK);
    CHECK(v.gate == 2 && v.n == 0 && v.n_notes == 0 && v.intent == NULL);
    /* the engine's own functions are held by the same gate */
    const laya_note *hits = NULL;
    int nh = 0;
    const char *iname = "x";
    float ip = 1;
    CHECK(laya_session_notes(f.s, 3, &hits, &nh) == LAYA_OK && nh == 0);
    CHECK(laya_session_intent(f.s, &iname, &ip) == LAYA_OK && iname == NULL);
    /* a secret field: the same */
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Please send the Tr0ub4dor report ", LAYA_FIELD_SECRET, all, &v) == LAYA_OK);
    CHECK(v.gate == 2 && v.n == 0 && v.n_notes == 0 && v.intent == NULL);
    CHECK(ev(&f, LAYA_INPUT_COMMIT, "Tr0ub4dor", LAYA_FIELD_SECRET, 0, &v) == LAYA_OK && !v.learned);
    /* a private field: the model's suggestions, nothing personal, nothing learned */
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Please send the Tr0ub4dor report ", LAYA_FIELD_PRIVATE, all, &v) == LAYA_OK);
    CHECK(v.gate == 1 && v.n_notes == 0 && v.intent == NULL);
    CHECK(ev(&f, LAYA_INPUT_COMMIT, "Tr0ub4dor", LAYA_FIELD_PRIVATE, 0, &v) == LAYA_OK && !v.learned);
    laya_session_set_notes(f.s, NULL);
    laya_session_set_intent(f.s, NULL);
    laya_notes_free(nt);
    laya_intent_free(h);
    CHECK(!store_holds(&f, "Tr0ub4dor"));
    close_fixture(&f);
}

/* Typed, shown suggestions passed over, erased, never committed: no byte
 * of it on disk (memory.db, -wal, -shm), while a committed line keeps its
 * feedback. */
TEST(pipeline_erased_text_leaves_nothing_on_disk) {
    fixture f;
    CHECK(open_fixture(&f, 1));
    laya_view v;
    const unsigned want = LAYA_WANT_SUGGEST;
    CHECK(type_keys(&f, "Hi Zorblatt, thanks", 0, want, &v));
    for (int i = 0; i < 19; i++) CHECK(ev(&f, LAYA_INPUT_ERASE, NULL, 0, want, &v) == LAYA_OK);
    /* a committed line: its text and its feedback reach the disk */
    CHECK(type_keys(&f, "Best regards", 0, want, &v));
    CHECK(ev(&f, LAYA_INPUT_COMMIT, "Best regards", 0, 0, &v) == LAYA_OK && v.learned);
    laya_memory_free(f.mem);   /* what a process leaves behind when it ends */
    f.mem = NULL;
    laya_session_set_memory(f.s, NULL);
    CHECK(store_holds(&f, "Best regards"));
    CHECK(!store_holds(&f, "Zorblatt"));
    CHECK(!store_holds(&f, "Zorbl"));
    char err[512];
    laya_memory *again = NULL;
    CHECKF(laya_memory_open(f.db, &again, err, sizeof err) == LAYA_OK, "%s", err);
    int rows = 0;
    CHECK(laya_memory_list_feedback(again, count_row, &rows, err, sizeof err) == LAYA_OK);
    CHECKF(rows > 0, "the committed line's feedback was not kept");
    laya_memory_free(again);
    close_fixture(&f);
}

/* After one committed English line, 我们明天 was offered "Thus" / "Th" (the
 * continuous cache's own tokens after a Chinese word): no suggestion right
 * after a CJK character begins with a Latin letter that only the cache
 * proposed. */
TEST(pipeline_no_latin_word_glued_to_chinese) {
    fixture f;
    CHECK(open_fixture(&f, 1));
    const char *line = "Thus we agreed to meet on Friday.";
    laya_view v;
    CHECK(ev(&f, LAYA_INPUT_COMMIT, line, 0, 0, &v) == LAYA_OK && v.learned);
    char ctx[128];
    snprintf(ctx, sizeof ctx, "%s\n\xe6\x88\x91\xe4\xbb\xac\xe6\x98\x8e\xe5\xa4\xa9", line);   /* 我们明天 */
    CHECK(ev(&f, LAYA_INPUT_CONTEXT, ctx, 0, LAYA_WANT_SUGGEST, &v) == LAYA_OK);
    CHECK(v.n > 0);
    for (int i = 0; i < v.n; i++) {
        char c = v.list[i].len ? v.list[i].text[0] : 0;
        CHECKF(!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')), "offered '%.*s'", (int)v.list[i].len,
               v.list[i].text);
    }
    close_fixture(&f);
}

/* A Chinese word is not cut: 我们明天 was offered 的地方 and 的地 (the word is
 * 的地方), and Tab after the decision's two-character cut gave 我们明天的地.
 * Every list shown, with and without the decision, keeps no suggestion that
 * ends inside a word another one finishes. */
TEST(pipeline_no_chinese_word_cut_in_half) {
    fixture f;
    CHECK(open_fixture(&f, 0));
    const char *ctx = "\xe6\x88\x91\xe4\xbb\xac\xe6\x98\x8e\xe5\xa4\xa9";   /* 我们明天 */
    const char *half = "\xe7\x9a\x84\xe5\x9c\xb0";                           /* 的地 */
    const unsigned wants[2] = {LAYA_WANT_SUGGEST, LAYA_WANT_SUGGEST | LAYA_WANT_DECIDE};
    for (int w = 0; w < 2; w++) {
        laya_view v;
        CHECK(ev(&f, LAYA_INPUT_CONTEXT, "", 0, 0, &v) == LAYA_OK);
        CHECK(ev(&f, LAYA_INPUT_CONTEXT, ctx, 0, wants[w], &v) == LAYA_OK);
        CHECKF(w == 1 || v.n > 0, "nothing shown");
        for (int i = 0; i < v.n; i++)
            CHECKF(!(v.list[i].len == strlen(half) && !memcmp(v.list[i].text, half, v.list[i].len)),
                   "offered the half word (want %u)", wants[w]);
    }
    close_fixture(&f);
}

/* A client that judges its lists itself (the protocol's feedback) may judge
 * a list after a stale request noted a newer context: the list stays until
 * the next one. A front end that does not is judged by the library, and a
 * new text drops the list unjudged. */
TEST(pipeline_client_judges_the_list_after_a_stale_context) {
    fixture f;
    CHECK(open_fixture(&f, 0));
    const unsigned fields[2] = {LAYA_FIELD_CLIENT_JUDGES, 0};
    for (int i = 0; i < 2; i++) {
        laya_view v;
        CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Thank you for your he", fields[i], LAYA_WANT_SUGGEST, &v) == LAYA_OK);
        CHECK(v.n > 0);
        CHECK(ev(&f, LAYA_INPUT_CONTEXT, "Thank you for your hel", fields[i], 0, &v) == LAYA_OK);
        laya_input acc = {.kind = LAYA_INPUT_ACCEPT, .index = 0, .field = fields[i], .t_ms = -1};
        laya_status st = laya_session_event(f.s, &acc, &v);
        CHECKF(fields[i] ? st == LAYA_OK : st == LAYA_ERR_ARG, "field %u: status %d", fields[i], st);
        CHECK(ev(&f, LAYA_INPUT_FOCUS, "", 0, 0, &v) == LAYA_OK);
    }
    close_fixture(&f);
}
