/* train_teacher.c - soft targets from a next-word prior, for distillation
 * (issue 15: "distillation toward their next-word distributions").
 *
 * The teacher is the static prior a model file carries (src/prior: the
 * followers of a word from libime's and pocketsphinx's n-gram models). It
 * speaks only where a word starts, so soft targets are made only at
 * positions whose target token starts a word:
 *   A. its bytes are a blank then an ASCII letter: the prior is asked about
 *      the text so far plus that blank (the two words before, or "<s>"
 *      after . ! ?), and each follower f stands for the first token of
 *      " f";
 *   B. its first byte is an ASCII letter and the text so far is empty or
 *      ends in a line break: the prior's "<s>" (a sentence's first word),
 *      f standing for the first token of "f";
 *   C. it starts with a Han character: the prior is asked about the text
 *      so far (the longest word it ends with), f standing for the first
 *      token of "f".
 * A follower's probability goes to its first token (followers that share
 * one add up); the TRAIN_SOFT_K tokens of most mass are kept. With weight a
 * the row's target becomes (1 - a*m) onehot(y) + a * sum_j p_j onehot(t_j),
 * m = sum_j p_j: the teacher's P(follower | words) where it has an opinion,
 * the mass it does not place (the words beyond its list) left on the truth.
 * The target's condition (a word follows) is known to the teacher: it only
 * moves mass among words, never away from what kind of token comes next.
 *
 * The text so far is the decoded stream since the last special token
 * (TOK_BOS starts a text), of which the last TEACHER_TAIL bytes are kept:
 * the prior looks back at most two words (English) or PRIOR_MAX_CHARS
 * characters. */
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/utf8.h"

enum { TEACHER_TAIL = 192, TEACHER_BUF = 512 };

/* The first token of " f" (space 1) or "f" (space 0), f the follower's
 * bytes; memo is indexed by the follower's offset in the prior's words
 * (-1: not yet known). */
static int32_t first_token(const tok *tk, const prior *pr, const prior_cand *c, int space, int32_t *memo) {
    size_t at = (size_t)(c->text - pr->words);
    if (memo[at] >= 0) return memo[at];
    uint8_t buf[PRIOR_MAX_WORD + 1];
    int32_t ids[PRIOR_MAX_WORD + 1];
    size_t n = 0;
    if (space) buf[n++] = ' ';
    memcpy(buf + n, c->text, (size_t)c->len);
    n += (size_t)c->len;
    size_t k = tok_encode(tk, buf, n, ids, sizeof ids / sizeof ids[0]);
    memo[at] = k ? ids[0] : TOK_PAD;
    return memo[at];
}

static int ascii_letter(uint8_t b) { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z'); }

/* 1 iff s[0..n) starts with a character of the CJK Unified Ideographs
 * block (U+4E00..U+9FFF), which is what the Chinese half of the prior
 * holds. */
static int starts_han(const uint8_t *s, size_t n) {
    int32_t cp = utf8_cp_at(s, n, 0);
    return cp >= 0x4E00 && cp <= 0x9FFF;
}

/* The soft targets of one position: the prior's followers for ctx, mapped
 * to first tokens, merged, the K of most mass, times weight. Returns how
 * many (0..TRAIN_SOFT_K). */
static int position_targets(const tok *tk, const prior *pr, const uint8_t *ctx, size_t len, int space,
                            int32_t *memo, float weight, uint16_t *tok_out, float *w_out) {
    prior_cand c[PRIOR_MAX_CAND];
    int nc = prior_query(pr, ctx, len, c, PRIOR_MAX_CAND);
    int32_t ids[PRIOR_MAX_CAND];
    double p[PRIOR_MAX_CAND];
    int n = 0;
    for (int i = 0; i < nc; i++) {
        int32_t id = first_token(tk, pr, &c[i], space, memo);
        if (id < TOK_FIRST_MERGE && id >= TOK_BOS) continue;  /* a special: nothing to learn */
        int j = 0;
        while (j < n && ids[j] != id) j++;
        if (j == n) {
            ids[n] = id;
            p[n++] = 0;
        }
        p[j] += c[i].p;
    }
    /* the K of most mass, best first (selection: n <= 16) */
    int k = 0;
    for (; k < n && k < TRAIN_SOFT_K; k++) {
        int b = k;
        for (int j = k + 1; j < n; j++)
            if (p[j] > p[b]) b = j;
        int32_t ti = ids[k];
        double tp = p[k];
        ids[k] = ids[b];
        p[k] = p[b];
        ids[b] = ti;
        p[b] = tp;
        tok_out[k] = (uint16_t)ids[k];
        w_out[k] = (float)(weight * p[k]);
    }
    return k;
}

laya_status train_teacher_build(train_teacher *t, const tok_stream *s, const tok *tk, const prior *pr, float weight,
                                int progress, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    if (!(weight > 0 && weight <= 1))
        return err_set(err, errlen, LAYA_ERR_ARG, "the teacher's weight %g is outside (0, 1]", weight);
    if (!pr->nw) return err_set(err, errlen, LAYA_ERR_ARG, "the teacher file holds no next-word prior");
    size_t nb = pr->word_off[pr->nw];
    int32_t *memo = malloc(2 * (nb + 1) * sizeof(int32_t));
    size_t cap = 1u << 20;
    t->off = malloc((s->n + 1) * sizeof(uint32_t));
    t->tok = malloc(cap * sizeof(uint16_t));
    t->w = malloc(cap * sizeof(float));
    if (!memo || !t->off || !t->tok || !t->w) {
        free(memo);
        train_teacher_free(t);
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate the teacher's targets for %llu tokens",
                       (unsigned long long)s->n);
    }
    memset(memo, 0xFF, 2 * (nb + 1) * sizeof(int32_t));
    int32_t *memo_space = memo, *memo_bare = memo + nb + 1;
    t->n = s->n;
    t->weight = weight;
    uint8_t buf[TEACHER_BUF + 1];
    size_t len = 0, used = 0, at = 0;
    int32_t V = tok_vocab_size(tk);
    for (uint64_t i = 0; i < s->n; i++) {
        t->off[i] = (uint32_t)used;
        size_t n = 0;
        int32_t id = s->ids[i];
        const uint8_t *b = id < V ? tok_bytes(tk, id, &n) : NULL;
        if (i > 0 && b && n > 0) {
            /* is target i the start of a word the prior may know? */
            if (used + TRAIN_SOFT_K > cap && cap * 2 <= UINT32_MAX) {
                cap *= 2;
                uint16_t *nt = realloc(t->tok, cap * sizeof(uint16_t));
                if (nt) t->tok = nt;
                float *nw = nt ? realloc(t->w, cap * sizeof(float)) : NULL;
                if (nw) t->w = nw;
                if (!nt || !nw) {
                    free(memo);
                    train_teacher_free(t);
                    return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot grow the teacher's targets past %zu", cap / 2);
                }
            }
            int k = 0;
            if (used + TRAIN_SOFT_K > cap) {
                /* past 4G pairs (a stream of ~10G tokens): no more targets */
            } else if (n >= 2 && b[0] == ' ' && ascii_letter(b[1])) {
                buf[len] = ' ';
                k = position_targets(tk, pr, buf, len + 1, 1, memo_space, weight, t->tok + used, t->w + used);
            } else if (ascii_letter(b[0]) && (len == 0 || buf[len - 1] == '\n')) {
                k = position_targets(tk, pr, buf, len, 0, memo_bare, weight, t->tok + used, t->w + used);
            } else if (starts_han(b, n)) {
                k = position_targets(tk, pr, buf, len, 0, memo_bare, weight, t->tok + used, t->w + used);
            }
            used += (size_t)k;
            t->positions += k > 0;
        }
        /* the text so far: a special token starts it over */
        if (!b || n == 0) {
            len = 0;
        } else {
            if (n > TEACHER_BUF - TEACHER_TAIL) {
                b += n - (TEACHER_BUF - TEACHER_TAIL);
                n = TEACHER_BUF - TEACHER_TAIL;
            }
            if (len + n > TEACHER_BUF) {
                /* keep the last TEACHER_TAIL bytes, from a UTF-8 lead byte */
                size_t cut = len - TEACHER_TAIL;
                while (cut < len && (buf[cut] & 0xC0) == 0x80) cut++;
                memmove(buf, buf + cut, len - cut);
                len -= cut;
            }
            memcpy(buf + len, b, n);
            len += n;
        }
        if (progress && s->n >= 10 && (i + 1) % (s->n / 10) == 0 && ++at <= 10)
            fprintf(stderr, "laya train: teacher targets %3d%% (%llu of %llu tokens)\n", (int)(10 * at),
                    (unsigned long long)(i + 1), (unsigned long long)s->n);
    }
    t->off[t->n] = (uint32_t)used;
    free(memo);
    return LAYA_OK;
}

void train_teacher_free(train_teacher *t) {
    free(t->off);
    free(t->tok);
    free(t->w);
    memset(t, 0, sizeof *t);
}

void train_teacher_batch(const train_teacher *t, const tok_stream *s, int B, int T, int64_t w, int32_t *soft_tok,
                         float *soft_w) {
    for (int b = 0; b < B; b++) {
        const uint64_t start = train_row_start(s, B, T, w, b);
        for (int i = 0; i < T; i++) {
            size_t row = ((size_t)b * T + (size_t)i) * TRAIN_SOFT_K;
            uint64_t pos = start + (uint64_t)i + 1;  /* the target's index in the stream */
            uint32_t lo = pos < t->n ? t->off[pos] : 0, hi = pos < t->n ? t->off[pos + 1] : 0;
            int k = 0;
            for (uint32_t j = lo; j < hi && k < TRAIN_SOFT_K; j++, k++) {
                soft_tok[row + k] = t->tok[j];
                soft_w[row + k] = t->w[j];
            }
            for (; k < TRAIN_SOFT_K; k++) {
                soft_tok[row + k] = -1;
                soft_w[row + k] = 0;
            }
        }
    }
}
