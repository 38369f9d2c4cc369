/* prior.h - a static next-word prior from a large n-gram model, consulted
 * by the search at run time (issue 15: an n-gram model's knowledge
 * interpolated inside the search; engine/blend.c mixes it in).
 *
 * The prior is a table of words and, for each, its most probable followers
 * with P(follower | word). Its Chinese half is exported from libime's
 * language model by scripts/corpus/ngram/libime_prior.cc, which documents
 * the tensors (words, word_off, fol_off, fol, fol_p) and the metadata; its
 * English half from pocketsphinx-en-us's trigram model by
 * scripts/corpus/ngram/sphinx_prior.c; scripts/corpus/ngram/prior_table.py
 * joins them into one table. It is stored in a model file as tensors named
 * "prior.<name>" (model_file.c) or in a file of its own with the bare
 * names; either way it is read in place (borrowed from the caller's bytes)
 * after prior_parse validated it as hostile input.
 *
 * A query looks at the text before the cursor:
 * - when it ends in a Han character, the longest word of the table (at most
 *   PRIOR_MAX_CHARS characters, inside the run of Han characters) that the
 *   text ends with and that has followers proposes them;
 * - when it ends in an English word (ASCII letters and apostrophes, at most
 *   PRIOR_LATIN_WORD bytes) and one blank, the first key with followers of
 *   "v w" (the two last words, one blank apart), "<s> w" (w starts a
 *   sentence: the text's start, a line's, or after . ! ?) and "w", in
 *   lower case;
 * - when it is empty, ends in a line break, or in . ! ? and a blank, the key
 *   "<s>" (a sentence's first word), unless Chinese comes last before it
 *   (a Han character or CJK punctuation after the last ASCII letter, within
 *   PRIOR_LOOKBACK bytes): after Chinese, the next sentence is not taken for
 *   English.
 * Text that ends otherwise gets no proposal: the prior knows whole words,
 * not what follows a partial one.
 *
 * Shape letters: NB bytes of words, NW words, NF followers. */
#ifndef LAYA_PRIOR_H
#define LAYA_PRIOR_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "util/st.h"

enum { PRIOR_MAX_CHARS = 6, PRIOR_MAX_CAND = 16, PRIOR_MAX_WORD = 64, PRIOR_LATIN_WORD = 30,
       PRIOR_LOOKBACK = 256 };

typedef struct {
    const uint8_t *words;      /* (NB) the words' bytes, sorted words */
    const uint32_t *word_off;  /* (NW+1) */
    const uint32_t *fol_off;   /* (NW+1) */
    const uint32_t *fol;       /* (NF) follower word ids */
    const float *fol_p;        /* (NF) P(follower | word), decreasing per word */
    uint32_t nw, nf;
} prior;

typedef struct {
    const uint8_t *text;       /* the follower's bytes, inside the prior */
    int len;
    double p;
} prior_cand;

/* Validates the prior's tensors prefix+"words", ... in f and points out at
 * them (f's data must outlive out). present: set to 0 when f holds no
 * tensor of the prior at all (out zeroed, LAYA_OK), 1 otherwise. Checks
 * dtypes, shapes, offsets increasing and inside their arrays, words sorted
 * and distinct, valid UTF-8, at most PRIOR_MAX_WORD bytes, follower ids in
 * range, probabilities in (0, 1] and decreasing per word. Returns
 * LAYA_ERR_FORMAT with a reason otherwise. */
laya_status prior_parse(const st_file *f, const char *prefix, prior *out, int *present, char *err, size_t errlen);

/* The number of tensors of a prior (what prior_parse found when present). */
enum { PRIOR_TENSORS = 5 };

/* The prior's tensors for st_write, in file order, named prefix+name
 * (names: room for the names, at most 31 bytes each); the st_out point
 * into p's arrays. */
void prior_out(const prior *p, const char *prefix, st_out out[PRIOR_TENSORS], char names[PRIOR_TENSORS][32]);

/* 1 iff name is prefix followed by one of the prior's tensor names. */
int prior_is_tensor(const char *name, const char *prefix);

/* Writes out_path: the model file model_path with the prior of the file
 * prior_path (bare tensor names, validated by prior_parse) added as
 * "prior.<name>" tensors before the tokenizer, and __metadata__ "prior"
 * set to the prior's "source" (a prior already in the model is replaced),
 * and rows_blake2b, the model's identity (model_identity), kept or set to
 * the model's data_blake2b. The data checksum is recomputed; the signature
 * is not (sign the output).
 * Neither input is modified; out_path is written atomically. */
laya_status prior_embed(const char *model_path, const char *prior_path, const char *out_path, char *err,
                        size_t errlen);

/* The followers of the longest word the text ctx[0..len) ends with (see
 * the top), best first, at most max (<= PRIOR_MAX_CAND); 0 when none. The
 * work is at most PRIOR_MAX_CHARS binary searches; nothing is allocated.
 * This function can't fail. */
int prior_query(const prior *p, const uint8_t *ctx, size_t len, prior_cand *out, int max);
/* 1 if w[0..n) is a word of the table (with followers or not). */
int prior_is_word(const prior *p, const uint8_t *w, size_t n);
/* Word boundaries in Chinese (issue 39: 我们明天 was offered 的地 where the
 * word is 的地方): 1 if cutting t[0..n) at byte at (between two CJK
 * characters) splits a word of the table, i.e. a word of at most
 * PRIOR_MAX_CHARS characters of the run around at starts before it and
 * ends after it; 0 otherwise, and without a prior. At most
 * (PRIOR_MAX_CHARS - 1)^2 / 2 lookups of O(log NW). */
int prior_splits_word(const prior *p, const uint8_t *t, size_t n, size_t at);

#endif
