/* learn_index.h - the in-memory index over the user's committed text that
 * the suggestion search consults (C8). It holds no file and no lock: the
 * store (learn_store.h) is where text persists, and whoever owns an index
 * (laya_memory, learn.c) serialises access to it.
 *
 * Contents: the history, i.e. every committed text in commit order, joined
 * by a newline where a commit did not end with one, capped at cap bytes (the
 * oldest text is dropped first, a quarter of the cap at a time). The history
 * is cut into units: a word (letters, digits, ' - _ and any character below
 * U+2000), one character of U+2000 and up (CJK, symbols, emoji: each is a
 * word of its own, as in the search), one ASCII punctuation mark, or a line
 * break; blanks separate units and belong to none. For every unit and every
 * order n = 1..LEARN_ORDER the index keeps where the same n units came
 * before it, and every distinct word with its count.
 *
 * A query (learn_index_query) takes the text before the cursor, splits off
 * the word being typed (the partial word) and looks up the units before it:
 * every earlier place where the same n units were followed by a word that
 * starts with the partial word is a match. Matches at the highest order that
 * has any propose continuations: the rest of the word, and the rest of the
 * line as it was typed there. Without context matches, words of the history
 * that start with the partial word are proposed (order 0).
 *
 * Probabilities: within one order, a continuation's share of the matches;
 * orders are interpolated from the highest down, each order n keeping
 * N/(N + 1) of the mass left (N its matches), the rest going to order n-1
 * (Witten-Bell with one new continuation per order); the rest of a line is
 * discounted per unit it reaches beyond its first word. The confidence of
 * the whole proposal (how much the search should trust it against the
 * model) is the largest over the orders of N/(N + kappa TRUST[n]), with N_w
 * (the count of the best word) for order 0; learn_index.c gives the
 * measured TRUST and REACH tables. */
#ifndef LAYA_LEARN_INDEX_H
#define LAYA_LEARN_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

enum {
    LEARN_INDEX_DEFAULT_CAP = 512 * 1024,  /* bytes of history kept */
    LEARN_ORDER = 4,                       /* units of context matched at most */
    LEARN_MAX_MATCH = 32,                  /* matches looked at per order */
    LEARN_MAX_WALK = 256,                  /* chain entries walked per order at most */
    LEARN_MAX_CAND = 8,                    /* continuations one query proposes */
    LEARN_MAX_TEXT = 96,                   /* bytes of one continuation (LAYA_MAX_SUGGESTION) */
    LEARN_MAX_PARTIAL = 64                 /* a longer partial word gets no proposal */
};

typedef struct learn_index learn_index;

/* A new, empty index keeping at most cap bytes of history (cap >= 4096).
 * *out owned by the caller (learn_index_free). */
laya_status learn_index_new(size_t cap, learn_index **out);
void learn_index_free(learn_index *ix);

/* Forgets everything (after a forget or a reload from the store). */
void learn_index_clear(learn_index *ix);

/* Adds one committed text. Text longer than the cap keeps its last cap
 * bytes. LAYA_ERR_NOMEM leaves the index as it was. */
laya_status learn_index_add(learn_index *ix, const uint8_t *text, size_t len);

/* Appends text to the history as it continues (no newline between): for
 * an index over the text being typed. The caller appends only complete
 * units: text must end where learn_index_complete says. */
laya_status learn_index_append(learn_index *ix, const uint8_t *text, size_t len);

/* Where the complete units of ctx[0..len) end: the start of the partial
 * word (or of a character still missing bytes). */
size_t learn_index_complete(const uint8_t *ctx, size_t len);

/* Where the last `units` complete units before the partial word of
 * ctx[0..len) start (the blanks between them included), never before the
 * start of the current line: len when the context ends in a line break,
 * learn_index_complete(ctx, len) when units is 0. The context a suggestion
 * was shown in (learn_fb.h). */
size_t learn_index_context_start(const uint8_t *ctx, size_t len, int units);

/* Bytes of history held now. */
size_t learn_index_bytes(const learn_index *ix);

/* One proposed continuation: the bytes to insert at the cursor. */
typedef struct {
    uint8_t text[LEARN_MAX_TEXT];
    int len;
    double p;        /* the memory's probability of it, 0..1 */
    int count;       /* matches (or, at order 0, occurrences of the word) behind it */
    int word_end;    /* 1: it ends where the word being typed ends */
    int in_doc;      /* 1: the text being typed proposes it (set by the engine, blend.c;
                        learn_index_query leaves 0) */
} learn_cand;

typedef struct {
    int order;       /* highest order with matches; 0: words only; -1: nothing */
    double conf;     /* how much to trust the proposal, 0..1 (see the top) */
    int n;
    learn_cand c[LEARN_MAX_CAND];
} learn_result;

/* Proposes continuations of ctx[0..len) (the text before the cursor) from
 * the history; kappa (> 0) sets the confidence (see the top). The work is
 * bounded: per order one chain walked for at most LEARN_MAX_MATCH matches
 * and LEARN_MAX_WALK entries (twice when the partial word may be typed in
 * full), and a binary search over the words. This function can't fail;
 * r->n == 0 and r->order == -1 when there is nothing to propose. */
void learn_index_query(const learn_index *ix, const uint8_t *ctx, size_t len, double kappa,
                       learn_result *r);

/* How many times word w[0..n) occurs in the history as a unit (0 if it is
 * not a word). */
int learn_index_word_count(const learn_index *ix, const uint8_t *w, size_t n);

#endif
