/* notes.h - the user's notes (C11): the laya_notes handle of include/laya.h
 * and the pieces behind it.
 *  - notes_tok.c    the FTS5 tokenizer "laya" and the terms of a sentence
 *  - notes_store.c  the index file: open, index a folder, search, check
 *  - notes_rank.c   a query's scores (bm25 from document lengths held in
 *                   memory) and snippets, made in C for the few notes shown
 *  - notes_link.c   a session's related notes, cached by the term set
 *
 * The file (schema NOTES_SCHEMA, application_id NOTES_APP_ID):
 *   files(id INTEGER PRIMARY KEY, path TEXT UNIQUE, mtime_ns, size, hash BLOB, seen)
 *   notes  FTS5(title, body), rowid = files.id, tokenize 'porter laya'
 *   terms(term PRIMARY KEY, df): in how many notes each token is, kept in
 *          step with notes, so a query can leave out the commonest terms
 *          at the cost of a B-tree lookup (FTS5's own fts5vocab counts by
 *          reading the term's whole list: milliseconds for a common word)
 * path is absolute (the folder's realpath joined with the name under it);
 * hash is BLAKE2b-128 (libsodium) of the bytes; seen is the run that last
 * saw the file, so what a run did not see under its folder is removed.
 *
 * Ranking: bm25(notes, 3.0, 1.0) (the table's rank): a term in the title
 * counts three times as much as one in the body. A search computes the
 * same numbers itself (notes_rank.c: laya_bm25) without FTS5's per-row
 * lookups of document lengths.
 *
 * Tokenizer "laya" (notes_tok.c), the same for notes and queries: a run of
 * letters and digits of a script written with spaces is one token (ASCII
 * folded to lower case; porter, which wraps it, stems English); a run of
 * CJK characters (Han, kana, Hangul: utf8_word_class) becomes its
 * overlapping character bigrams ("北京天气" -> 北京 京天 天气), a lone
 * character itself. Bigrams need no dictionary and match two-character
 * words, the commonest length in Chinese, which FTS5's trigram tokenizer
 * cannot (docs/DESIGN.md: the measurement). Everything else separates. */
#ifndef LAYA_NOTES_H
#define LAYA_NOTES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "laya.h"

enum {
    NOTES_SCHEMA = 1,
    NOTES_APP_ID = 0x4c594e31,   /* "LYN1" */
    NOTES_PATH_MAX = 4096,
    NOTES_BATCH = 200,           /* files per transaction while indexing */
    NOTES_BUSY_MS = 2000,
    NOTES_MAX_TERMS = 24,        /* terms of one query (the ones nearest the cursor) */
    NOTES_MAX_QUERY = 2048,      /* bytes of the FTS5 query built from them */
    NOTES_SENTENCE_MAX = 600,    /* bytes before the cursor a sentence may span */
    NOTES_DF_MIN = 64,           /* a term in at most this many notes is always asked */
    NOTES_POSTINGS = 256,        /* notes a related-notes query may score (notes_store.c: pick_terms) */
    NOTES_STEM_MAX = 256,        /* bytes of a term's index form, NUL included */
    NOTES_SNIP_TOKENS = 12,      /* tokens of a snippet */
    NOTES_SNIP_SCAN = 4096,      /* tokens of a note's body a snippet looks at (its cost is bounded) */
    NOTES_SEGMENTS_MAX = 4       /* FTS5 segments an index run leaves (more: 'optimize'; notes_store.c) */
};
/* ... or in at most this share of them (notes_store.c: pick_terms). */
#define NOTES_DF_FRAC 0.02
/* The columns' weights in bm25 (the schema's rank says the same). */
#define NOTES_W_TITLE 3.0
#define NOTES_W_BODY 1.0

/* The fts5_api of db (https://sqlite.org/fts5.html#extending_fts5), NULL
 * when this SQLite has no FTS5. */
fts5_api *notes_fts5(sqlite3 *db);

/* Registers the tokenizer "laya" on db. SQLITE_ERROR when the SQLite in use
 * has no FTS5 (then *no_fts5 is 1). */
int notes_tok_register(sqlite3 *db, int *no_fts5);

/* The index form of one query term (what porter over "laya" makes of it:
 * "meetings" -> "meet"), for looking its document frequency up. */
typedef struct notes_stemmer notes_stemmer;
/* NULL when the tokenizers cannot be found (no FTS5, or not registered). */
notes_stemmer *notes_stemmer_new(sqlite3 *db);
void notes_stemmer_free(notes_stemmer *st);
/* The first token of term[0..n) into out (cap bytes, NUL-terminated);
 * returns its length, 0 when there is none. */
size_t notes_stem(notes_stemmer *st, const char *term, size_t n, char *out, size_t cap);
/* Calls fn with each token of a document's text[0..n) in index form (a
 * token may come more than once) and the bytes text[start..end) it was
 * made of. fn returns nonzero to stop. */
typedef int (*notes_token_fn)(void *ctx, const char *tok, int len, int start, int end);
void notes_stem_each(notes_stemmer *st, const char *text, size_t n, notes_token_fn fn, void *ctx);

/* Which terms notes_query takes. */
enum {
    NOTES_TERMS_TYPING = 0,   /* the current sentence: stop words, lone CJK characters and short words dropped */
    NOTES_TERMS_SEARCH = 1    /* a search box: every word; a lone CJK character as a prefix */
};

/* The FTS5 query (at most NOTES_MAX_QUERY bytes, NUL-terminated, into q)
 * for the terms of text[0..n): `"t1" OR "t2" ...`, sorted and without
 * repeats, so two texts with the same terms give the same query (the cache
 * key of notes_link.c). Returns the number of terms (0: q is ""). Never
 * fails: text may be any bytes. */
int notes_query(const char *text, size_t n, int mode, char *q, size_t qcap);

/* Where the sentence being typed starts in ctx[0..n) and where its last
 * finished word ends: ctx[*start..*end) holds the words to look up. A word
 * still being typed (letters right before the cursor) is left out; a CJK
 * character counts as finished (an IME commits it whole). A sentence whose
 * end mark was just typed (nothing but blanks after it) is still the
 * current one, until the next one starts. */
void notes_sentence(const char *ctx, size_t n, size_t *start, size_t *end);

/* ---- notes_rank.c -------------------------------------------------------------- */

/* One term of a query as the search asks it: phrase i of the FTS5 query is
 * t[i] of the notes_rank below. */
typedef struct {
    char stem[NOTES_STEM_MAX];   /* index form; a prefix term's prefix */
    int stem_len, prefix;
    int64_t df;                  /* notes holding it; -1 unknown (a prefix: laya_bm25 counts them) */
    double idf;                  /* bm25's log((N - df + 0.5) / (df + 0.5)), at least 1e-6 */
} notes_qterm;

/* The tokens each note holds, title and body together (FTS5's document
 * size), sorted by rowid. */
typedef struct {
    int64_t *id;
    uint32_t *ntok;
    size_t n, cap;
    int64_t tokens;              /* their sum */
} notes_lens;

/* A token of a note's body, for its snippet. */
typedef struct {
    int start, end;              /* bytes of the body */
    int term;                    /* the query term it matches, -1 none */
} notes_snip_tok;

/* What laya_bm25 reads: the lengths (kept by notes_store.c) and the query
 * being run. Guarded by the laya_notes lock. */
typedef struct {
    notes_lens lens;
    notes_qterm t[NOTES_MAX_TERMS];
    int nt;
    notes_snip_tok tok[NOTES_SNIP_SCAN];   /* notes_snippet's scratch */
} notes_rank;

/* Registers laya_bm25(notes) on db, reading r. SQLITE_ERROR without FTS5. */
int notes_rank_register(sqlite3 *db, notes_rank *r);
/* Reads the document sizes of the FTS5 table notes (its notes_docsize)
 * into r->lens, growing its arrays as needed (they stay allocated). An
 * SQLite result code; on failure r->lens is empty. */
int notes_lens_load(sqlite3 *db, notes_rank *r);
void notes_lens_free(notes_lens *l);
/* idf of a term held by df of n notes, as FTS5's bm25 computes it. */
double notes_idf(int64_t n, int64_t df);
/* The snippet of body[0..n) for the query in r: the window of
 * NOTES_SNIP_TOKENS tokens holding the most of its terms, the matches in
 * [brackets], "..." where text was left out; into out (cap bytes,
 * NUL-terminated, possibly cut inside a character: the caller cuts at
 * one). st stems the body as the index did. */
void notes_snippet(notes_rank *r, notes_stemmer *st, const char *body, size_t n, char *out, size_t cap);

/* notes_store.c: a search for an FTS5 query q (from notes_query). */
laya_status notes_search_query(laya_notes *n, const char *q, int k, laya_note *out, int *n_out, char *err,
                               size_t errlen);

/* notes_link.c: what a session keeps of its notes (engine.c owns the
 * pointer and calls these). */
struct notes_link;
struct notes_link *notes_link_new(laya_notes *n);
void notes_link_free(struct notes_link *l);
/* The related notes for context ctx[0..len) (see laya_session_notes). */
laya_status notes_link_related(struct notes_link *l, const char *ctx, size_t len, int k, const laya_note **out,
                               int *n_out);
/* Queries the index has answered through l (tests: the cache works). */
uint64_t notes_link_queries(const struct notes_link *l);

#endif
