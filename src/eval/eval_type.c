/* eval_type.c - the typists, the acceptance rule and the loop they share
 * (eval.h).
 *
 * The loop: before every keystroke the typist's screen (the text so far,
 * typos included) goes to the engine as the context. When the screen is
 * free of typos and a suggestion is a prefix of the rest of the text, the
 * typist accepts the longest such one at the cost of one keystroke
 * (eval_accept); otherwise it presses its next key. With learning, every
 * line of the text that is finished on screen is committed, and the rest
 * at the end.
 *
 * The perfect typist (docs/EVALUATION.md) types one character per keystroke
 * and never errs; its requests carry no timing, and with `feedback` it
 * reports each list it took from or passed over, as the simulated typist
 * does. The simulated typist
 * (src/sim) types the text in windows of EVAL_SIM_WINDOW characters, every
 * typo corrected, so a window's keystrokes replay to exactly its text. Its
 * requests carry "t_ms" (the time of the keystroke that made the screen) and
 * "decide"; acceptances and passed-over lists are sent as feedback. After
 * an acceptance it starts a new window at the new position, one mean
 * interval later. Windows are seeded by (seed, position), so the typist
 * without suggestions (the baseline) and every pass type the same stretches
 * the same way. */
#include "eval/eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "sim/sim.h"
#include "util/err.h"

static size_t ch_len(const char *s, size_t n) { return utf8_next((const uint8_t *)s, n, 0); }

static size_t count_chars(const char *s, size_t n) { return utf8_count((const uint8_t *)s, n); }

size_t eval_accept(const eval_reply *r, int k, const char *rest, size_t n, int *idx, int *shown) {
    size_t best = 0;
    int b = -1, nonempty = 0;
    for (int i = 0; i < r->n && i < k; i++) {
        size_t l = r->len[i];
        if (!l) continue;
        nonempty++;
        if (l <= n && l > best && !memcmp(r->s[i], rest, l) &&
            (l == n || ((unsigned char)rest[l] & 0xC0) != 0x80))
            best = l, b = i;
    }
    if (idx) *idx = b;
    if (shown) *shown = nonempty;
    return best;
}

void eval_stats_add(eval_stats *a, const eval_stats *s) {
    a->chars += s->chars, a->base += s->base, a->keys += s->keys, a->shown += s->shown;
    a->accepted += s->accepted, a->accepted_chars += s->accepted_chars;
    a->held_low += s->held_low, a->held_burst += s->held_burst, a->held_backspace += s->held_backspace;
    a->se_blocks += s->se_blocks;
    a->se_k += s->se_k, a->se_c += s->se_c, a->se_kk += s->se_kk, a->se_cc += s->se_cc, a->se_kc += s->se_kc;
}

double eval_ksr(const eval_stats *s) {
    return s->base ? 1.0 - (double)s->keys / (double)s->base : NAN;
}

double eval_ksr_se(const eval_stats *s) {
    if (s->se_blocks < 2 || s->se_c <= 0) return NAN;
    const double n = (double)s->se_blocks, r = s->se_k / s->se_c;
    double ss = s->se_kk - 2 * r * s->se_kc + r * r * s->se_cc;   /* sum (k_b - r c_b)^2 */
    if (ss < 0) ss = 0;   /* rounding */
    return sqrt(n / (n - 1) * ss) / s->se_c;
}

/* Adds one block of k keystrokes over c characters to s's sums. */
static void se_block(eval_stats *s, double k, double c) {
    s->se_blocks++;
    s->se_k += k, s->se_c += c, s->se_kk += k * k, s->se_cc += c * c, s->se_kc += k * c;
}

/* The perfect typist's blocks: where the text's position is (characters
 * typed or accepted) and the keystrokes at the current block's start. */
typedef struct {
    size_t bytes, chars;      /* of the text behind the position */
    size_t block_start;       /* the current block's first character */
    size_t keys_at_start;
} se_track;

/* Moves the position to good bytes (keys so far); closes each block it
 * passes: the first with the keystrokes since it began, any it jumped over
 * (inside one acceptance) with none. At the end (done) closes the last. */
static void se_advance(se_track *tr, eval_stats *s, const eval_text *t, size_t good, int done) {
    tr->chars += count_chars(t->bytes + tr->bytes, good - tr->bytes);
    tr->bytes = good;
    while (tr->chars >= tr->block_start + EVAL_SE_CHARS) {
        se_block(s, (double)(s->keys - tr->keys_at_start), EVAL_SE_CHARS);
        tr->block_start += EVAL_SE_CHARS;
        tr->keys_at_start = s->keys;
    }
    if (done && tr->chars > tr->block_start) {
        se_block(s, (double)(s->keys - tr->keys_at_start), (double)(tr->chars - tr->block_start));
        tr->block_start = tr->chars;
        tr->keys_at_start = s->keys;
    }
}

laya_status eval_samples_add(eval_samples *s, double x) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v) return LAYA_ERR_NOMEM;
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = x;
    return LAYA_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double eval_samples_pct(eval_samples *s, double q) {
    if (!s->n) return NAN;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    size_t r = (size_t)ceil(q * (double)s->n);
    return s->v[r ? r - 1 : 0];
}

void eval_samples_free(eval_samples *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ---- the typists --------------------------------------------------------- */

/* One typist over one text: the screen, how much of it is right, and the
 * next key. The perfect typist's screen is always right. */
typedef struct {
    const eval_text *t;
    char *scr;            /* the screen (sim: may hold one window's typos) */
    size_t slen, good;    /* screen length; its prefix that matches the text */
    double t_last;        /* time of the keystroke that made the screen; < 0: untimed */
    /* sim only */
    sim_params sp;
    uint64_t seed;
    sim_event *ev;
    size_t n_ev, i_ev;
    double t0;            /* time of the window's first keystroke */
} typist;

/* The end of the window of EVAL_SIM_WINDOW characters from pos. */
static size_t window_end(const eval_text *t, size_t pos) {
    for (int c = 0; c < EVAL_SIM_WINDOW && pos < t->len; c++) pos += ch_len(t->bytes + pos, t->len - pos);
    return pos;
}

static laya_status win_load(typist *ty, size_t pos, double t0, char *err, size_t errlen) {
    free(ty->ev);
    ty->ev = NULL;
    ty->i_ev = 0;
    ty->t0 = t0;
    const eval_text *t = ty->t;
    return sim_run(&ty->sp, ty->seed ^ ((uint64_t)pos * 0x9e3779b97f4a7c15ull), t->bytes + pos,
                   window_end(t, pos) - pos, &ty->ev, &ty->n_ev, err, errlen);
}

/* Keystrokes the simulated typist needs for t without suggestions. */
static laya_status sim_baseline(typist *ty, size_t *keys, char *err, size_t errlen) {
    *keys = 0;
    for (size_t pos = 0; pos < ty->t->len; pos = window_end(ty->t, pos)) {
        laya_status st = win_load(ty, pos, 0, err, errlen);
        if (st != LAYA_OK) return st;
        *keys += ty->n_ev;
    }
    return LAYA_OK;
}

static int typist_done(const typist *ty) { return ty->slen == ty->t->len && ty->good == ty->slen; }

/* The typist's own next keystroke. */
static laya_status typist_key(typist *ty, const eval_type_opts *o, char *err, size_t errlen) {
    const eval_text *t = ty->t;
    if (o->typist == EVAL_PERFECT) {
        size_t l = ch_len(t->bytes + ty->slen, t->len - ty->slen);
        memcpy(ty->scr + ty->slen, t->bytes + ty->slen, l);
        ty->good = ty->slen += l;
        return LAYA_OK;
    }
    if (ty->i_ev == ty->n_ev) {
        if (ty->good != ty->slen)
            return err_set(err, errlen, LAYA_ERR_INTERNAL, "simulator: a window ended with a typo on screen");
        laya_status st = win_load(ty, ty->slen, ty->t_last + ty->sp.iki_mean_ms, err, errlen);
        if (st != LAYA_OK) return st;
    }
    const sim_event *k = &ty->ev[ty->i_ev++];
    ty->t_last = ty->t0 + k->time_ms;
    if (k->kind == SIM_CHAR) {
        if (ty->good == ty->slen && k->len <= t->len - ty->slen &&
            !memcmp(t->bytes + ty->slen, k->bytes, k->len))
            ty->good += k->len;
        memcpy(ty->scr + ty->slen, k->bytes, k->len);
        ty->slen += k->len;
    } else {
        ty->slen = utf8_prev((const uint8_t *)ty->scr, ty->slen);
        if (ty->good > ty->slen) ty->good = ty->slen;
    }
    return LAYA_OK;
}

/* The time the typist's next key would go down (sim), where an acceptance
 * lands. The window is refilled first if it is used up. */
static laya_status typist_next_t(typist *ty, const eval_type_opts *o, double *t, char *err, size_t errlen) {
    *t = -1;
    if (o->typist == EVAL_PERFECT) return LAYA_OK;
    if (ty->i_ev == ty->n_ev) {
        laya_status st = win_load(ty, ty->slen, ty->t_last + ty->sp.iki_mean_ms, err, errlen);
        if (st != LAYA_OK) return st;
    }
    *t = ty->t0 + ty->ev[ty->i_ev].time_ms;
    return LAYA_OK;
}

/* Takes n bytes of the text at once (one keystroke, at time t_ms). */
static laya_status typist_accept(typist *ty, const eval_type_opts *o, size_t n, double t_ms,
                                 char *err, size_t errlen) {
    memcpy(ty->scr + ty->slen, ty->t->bytes + ty->slen, n);
    ty->good = ty->slen += n;
    if (o->typist == EVAL_PERFECT) return LAYA_OK;
    ty->t_last = t_ms;
    return win_load(ty, ty->slen, t_ms + ty->sp.iki_mean_ms, err, errlen);
}

/* ---- the loop ------------------------------------------------------------ */

/* With learning: commits the text's finished lines up to the screen's right
 * part (all of it at the end). */
static laya_status learn_lines(const eval_client *c, const eval_type_opts *o, eval_caps *caps,
                               const typist *ty, size_t *committed, char *err, size_t errlen) {
    if (!o->learn || caps->no_commit || !c->commit) return LAYA_OK;
    const eval_text *t = ty->t;
    size_t end = *committed;
    if (typist_done(ty)) end = t->len;
    else
        for (size_t i = *committed; i < ty->good; i++)
            if (t->bytes[i] == '\n') end = i + 1;
    if (end == *committed) return LAYA_OK;
    laya_status st = c->commit(c->ctx, o->sid, t->bytes + *committed, end - *committed, err, errlen);
    *committed = end;
    if (st != LAYA_ERR_UNSUPPORTED) return st;
    caps->no_commit = 1;
    snprintf(caps->why_commit, sizeof caps->why_commit, "%s", err ? err : "");
    return LAYA_OK;
}

static laya_status feedback(const eval_client *c, const eval_type_opts *o, eval_caps *caps, int idx,
                            double t_ms, char *err, size_t errlen) {
    if ((o->typist == EVAL_PERFECT && !o->feedback) || caps->no_feedback || !c->feedback) return LAYA_OK;
    laya_status st = c->feedback(c->ctx, o->sid, idx, t_ms, err, errlen);
    if (st != LAYA_ERR_UNSUPPORTED) return st;
    caps->no_feedback = 1;
    snprintf(caps->why_feedback, sizeof caps->why_feedback, "%s", err ? err : "");
    return LAYA_OK;
}

/* One request, its reply counted and its acceptance applied; *took says
 * whether a suggestion was accepted. */
static laya_status step(const eval_client *c, const eval_type_opts *o, eval_caps *caps, typist *ty,
                        eval_stats *st, eval_samples *eng_us, eval_samples *rtt_us, char *err,
                        size_t errlen) {
    const eval_text *t = ty->t;
    eval_reply r;
    double t_ms = o->typist == EVAL_SIM ? ty->t_last : -1;
    laya_status s = c->suggest(c->ctx, o->sid, ty->scr, ty->slen, o->k, t_ms, o->decide, &r, err, errlen);
    if (s != LAYA_OK) return s;
    if ((rtt_us && eval_samples_add(rtt_us, r.rtt_us)) || (eng_us && r.us >= 0 && eval_samples_add(eng_us, r.us)))
        return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    st->held_low += r.held == EVAL_HELD_LOW;
    st->held_burst += r.held == EVAL_HELD_BURST;
    st->held_backspace += r.held == EVAL_HELD_BACKSPACE;
    int idx, shown;
    size_t best = eval_accept(&r, o->k, t->bytes + ty->slen, t->len - ty->slen, &idx, &shown);
    if (ty->good != ty->slen) best = 0, idx = -1;   /* typos on screen: nothing fits */
    st->shown += shown > 0;
    st->keys++;
    double t_next;
    if ((s = typist_next_t(ty, o, &t_next, err, errlen)) != LAYA_OK) return s;
    if (best) {
        st->accepted++;
        st->accepted_chars += count_chars(t->bytes + ty->slen, best);
        if ((s = feedback(c, o, caps, idx, t_next, err, errlen)) != LAYA_OK) return s;
        return typist_accept(ty, o, best, t_next, err, errlen);
    }
    if (shown && (s = feedback(c, o, caps, -1, t_next, err, errlen)) != LAYA_OK) return s;
    return typist_key(ty, o, err, errlen);
}

laya_status eval_type_text(const eval_client *c, const eval_text *t, const eval_type_opts *o,
                           eval_caps *caps, eval_stats *st, eval_samples *eng_us,
                           eval_samples *rtt_us, eval_progress_fn progress, void *pctx, char *err,
                           size_t errlen) {
    if (o->k < 1 || o->k > EVAL_MAX_K) return err_set(err, errlen, LAYA_ERR_ARG, "k must be 1..%d", EVAL_MAX_K);
    typist ty = {.t = t, .seed = o->seed, .t_last = o->typist == EVAL_SIM ? 0 : -1};
    sim_params_corrected(&ty.sp);
    ty.scr = malloc(t->len + 4 * EVAL_SIM_WINDOW + 16);
    if (!ty.scr) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    eval_stats s = {.chars = t->chars, .base = t->chars};
    laya_status rc = LAYA_OK;
    if (o->typist == EVAL_SIM && ((rc = sim_baseline(&ty, &s.base, err, errlen)) != LAYA_OK ||
                                  (rc = win_load(&ty, 0, 0, err, errlen)) != LAYA_OK))
        goto done;
    size_t committed = 0, last_report = 0;
    se_track tr = {0};
    while (!typist_done(&ty)) {
        if ((rc = step(c, o, caps, &ty, &s, eng_us, rtt_us, err, errlen)) != LAYA_OK ||
            (rc = learn_lines(c, o, caps, &ty, &committed, err, errlen)) != LAYA_OK)
            goto done;
        if (o->typist == EVAL_PERFECT) se_advance(&tr, &s, t, ty.good, typist_done(&ty));
        if (progress && s.keys - last_report >= 256) {
            last_report = s.keys;
            progress(pctx, t, count_chars(t->bytes, ty.good), &s);
        }
    }
done:
    eval_stats_add(st, &s);
    free(ty.ev);
    free(ty.scr);
    return rc;
}

/* ---- next-word accuracy -------------------------------------------------- */

/* The first word of s[0..n): up to the first white space, trailing ASCII
 * punctuation dropped (so "regards," matches "regards"). */
static size_t first_word(const char *s, size_t n) {
    size_t w = 0;
    while (w < n && !utf8_blank((uint8_t)s[w])) w++;
    while (w > 0 && strchr(".,;:!?\"')]}", s[w - 1])) w--;
    return w;
}

laya_status eval_next_words(const eval_client *c, const eval_text *t, int k, const char *sid,
                            eval_words *w, char *err, size_t errlen) {
    for (size_t pos = 1; pos < t->len; pos++) {
        if (!utf8_blank((uint8_t)t->bytes[pos - 1]) || utf8_blank((uint8_t)t->bytes[pos])) continue;
        size_t want = first_word(t->bytes + pos, t->len - pos);
        if (!want) continue;
        eval_reply r;
        laya_status st = c->suggest(c->ctx, sid, t->bytes, pos, k, -1, 0, &r, err, errlen);
        if (st != LAYA_OK) return st;
        int hit = 0;
        for (int i = 0; i < r.n && i < k; i++)
            if (first_word(r.s[i], r.len[i]) == want && !memcmp(r.s[i], t->bytes + pos, want)) {
                if (i == 0) w->top1++;
                hit = 1;
            }
        w->n++;
        w->topk += (size_t)hit;
    }
    return c->reset(c->ctx, sid, err, errlen);
}
