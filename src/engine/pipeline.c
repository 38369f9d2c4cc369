/* pipeline.c - laya_session_event (include/laya.h): one keystroke, from
 * what the typist did to what the front end shows, for every front end.
 *
 * The rules that live here and nowhere else:
 *  - The gate (engine_gate, engine.c): secret fields and password prompts
 *    get nothing at all; private fields get the model's suggestions only;
 *    the engine's own functions (laya_suggest, laya_session_notes,
 *    laya_session_intent, laya_session_feedback) read the same gate, so a
 *    program that calls them directly is held by it too.
 *  - The verdict on the list shown (laya_session_feedback, and the decider's
 *    ACCEPTED/IGNORED): taken (ACCEPT), passed over (DISMISS, or typing on
 *    past it: a KEY, an ERASE, a CONTEXT that adds text at the end), or no
 *    verdict (a cursor move, any other edit, a focus change: the list is
 *    dropped unjudged; a COMMIT, which is learning, not a key). It is the
 *    rule `laya eval --feedback`'s typists follow (src/eval/eval_type.c),
 *    which chose the constants. A client that reports every verdict itself
 *    (LAYA_FIELD_CLIENT_JUDGES: the protocol) is judged only by what it
 *    reports, and its list stays to be judged until the next one.
 *  - Spacing: a suggestion may end with the blank after its word. Right
 *    after one was accepted, a blank typed is absorbed (no double blank),
 *    and . , ; : ! ? go before the blank ("help " + "." is "help. "), where
 *    the front end can delete (not LAYA_FIELD_NO_DELETE).
 *  - The decision: the session's decider hears every change of the context
 *    (decide_track_context: one character more is a key, one fewer a
 *    backspace, anything else a jump) and every verdict, and filters the
 *    list where the front end asks (LAYA_WANT_DECIDE).
 *  - Learning: COMMIT stores the text (redacted after a password prompt:
 *    learn.c) unless the field is secret or private; feedback reaches the
 *    disk only with committed text that holds its context (learn.c).
 *  - Word boundaries: a suggestion ending inside a Chinese word that a
 *    longer one in the list finishes is dropped, its slot refilled
 *    (drop_cut_words); the decision's first word never ends inside one
 *    (word_end).
 *  - Coalescing: a context with nothing wanted, or the text an ACCEPT
 *    leaves, is noted and read by the engine only when an event needs it
 *    (read_noted), so a stale request steps no model.
 * docs/DESIGN.md, "The keystroke pipeline", draws it. */
#include "engine/pipeline.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/decide.h"
#include "engine/session.h"
#include "prior/prior.h"
#include "util/utf8.h"

struct engine_pipe {
    laya_decider *d;          /* made on the first LAYA_WANT_DECIDE */
    int spaced;               /* the last event accepted a text that ends in a blank */
    int n;                    /* the list last shown (0: none, or judged) */
    uint8_t text[LAYA_MAX_K][LAYA_MAX_SUGGESTION];
    size_t len[LAYA_MAX_K];
    uint8_t ins[LAYA_MAX_SUGGESTION + 4];   /* view.insert's bytes */
    char err[256];                           /* view.error's */
    /* A context given with nothing wanted (a request already stale: a newer
     * one is queued) is only noted: the engine reads it when something is
     * asked, so coalesced keystrokes cost no model step. pend_on 0: none. */
    uint8_t *pend;
    size_t pend_len, pend_cap;
    int pend_on;
};

engine_pipe *engine_pipe_new(void) { return calloc(1, sizeof(engine_pipe)); }

void engine_pipe_free(engine_pipe *p) {
    if (!p) return;
    laya_decider_free(p->d);
    free(p->pend);
    free(p);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static engine_pipe *pipe_of(laya_session *s) {
    if (!s->pipe) s->pipe = engine_pipe_new();
    return s->pipe;
}

laya_decider *laya_session_decider(laya_session *s) { return s && s->pipe ? s->pipe->d : NULL; }

/* The verdict on the list shown: taken (i >= 0) or passed over (-1), once. */
static laya_status verdict(laya_session *s, engine_pipe *p, int i, double t) {
    if (!p->n) return LAYA_OK;
    p->n = 0;
    if (p->d && i >= 0) laya_decide_event(p->d, LAYA_EVENT_ACCEPTED, t);
    else if (p->d) laya_decide_event(p->d, LAYA_EVENT_IGNORED, t);
    laya_status st = laya_session_feedback(s, i);
    return st == LAYA_ERR_ARG ? LAYA_OK : st;
}

/* Typing on past the list: passed over, unless the client reports every
 * verdict itself (LAYA_FIELD_CLIENT_JUDGES: the protocol's feedback). */
static laya_status passed_over(laya_session *s, engine_pipe *p, const laya_input *in, double t) {
    if (in->field & LAYA_FIELD_CLIENT_JUDGES) return LAYA_OK;
    return verdict(s, p, -1, t);
}

/* The context becomes s->cx.ctx[0..keep) + add[0..n): appended in place
 * when nothing is erased (every key but punctuation before an accepted
 * blank), else through a copy. */
static laya_status edit(laya_session *s, size_t keep, const uint8_t *add, size_t n) {
    if (keep == s->cx.len) return n ? laya_session_type(s, (const char *)add, n) : LAYA_OK;
    size_t len = keep + n;
    uint8_t *t = malloc(len ? len : 1);
    if (!t) return LAYA_ERR_NOMEM;
    memcpy(t, s->cx.ctx, keep);
    if (n) memcpy(t + keep, add, n);
    laya_status st = laya_session_set_context(s, (const char *)t, len);
    free(t);
    return st;
}

/* The context as the front end last gave it: the noted one, else the
 * engine's. */
static const uint8_t *context_now(const laya_session *s, const engine_pipe *p, size_t *n) {
    *n = p->pend_on ? p->pend_len : s->cx.len;
    return p->pend_on ? p->pend : s->cx.ctx;
}

/* The context grows by text typed at its end (t[0..n) begins with it):
 * typing on past the list, by keys the front end let through or by
 * another input method's commit. */
static int typed_on(const uint8_t *c, size_t len, const uint8_t *t, size_t n) {
    return n > len && (len == 0 || !memcmp(c, t, len));
}

/* a[0..na) and b[0..nb) hold the same bytes (either may be NULL when empty). */
static int same_text(const void *a, size_t na, const void *b, size_t nb) {
    return na == nb && (na == 0 || !memcmp(a, b, na));
}

/* Notes a[0..na) + b[0..nb) as the context for later; a may be the noted
 * context itself (then only b is appended). LAYA_ERR_NOMEM leaves the note
 * as it was. */
static laya_status note_joined(engine_pipe *p, const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    size_t n = na + nb;
    const int self = a == p->pend;
    if (n > p->pend_cap) {
        uint8_t *x = realloc(p->pend, n);
        if (!x) return LAYA_ERR_NOMEM;
        p->pend = x;
        p->pend_cap = n;
    }
    if (na && !self) memcpy(p->pend, a, na);
    if (nb) memcpy(p->pend + na, b, nb);
    p->pend_len = n;
    p->pend_on = 1;
    return LAYA_OK;
}

/* A noted copy of a long context (a pasted document, a hostile client's
 * megabytes) is not kept once it is read or replaced: the session holds the
 * text already, and a daemon holds many sessions. */
enum { PIPE_KEEP_NOTE = 64 * 1024 };
static void drop_large_note(engine_pipe *p) {
    if (p->pend_on || p->pend_cap <= PIPE_KEEP_NOTE) return;
    free(p->pend);
    p->pend = NULL;
    p->pend_cap = p->pend_len = 0;
}

/* The engine reads the noted context, if any. */
static laya_status read_noted(laya_session *s, engine_pipe *p) {
    if (!p->pend_on) return LAYA_OK;
    p->pend_on = 0;
    laya_status st = laya_session_set_context(s, (const char *)p->pend, p->pend_len);
    drop_large_note(p);
    return st;
}

/* The key c[0..n) typed, spaced: what to erase and insert (into p->ins). */
static size_t key_edit(const laya_session *s, engine_pipe *p, const uint8_t *c, size_t n, unsigned field,
                       int spaced, size_t *erase) {
    *erase = 0;
    const int at_blank = s->cx.len > 0 && s->cx.ctx[s->cx.len - 1] == ' ';
    if (spaced && at_blank && n == 1 && c[0] == ' ') return 0;
    if (spaced && at_blank && n == 1 && laya_goes_before_blank(c[0]) && !(field & LAYA_FIELD_NO_DELETE)) {
        *erase = 1;
        p->ins[0] = c[0];
        p->ins[1] = ' ';
        return 2;
    }
    memcpy(p->ins, c, n);
    return n;
}

/* The bytes ACCEPT inserts: suggestion i whole, or its first word. */
static size_t accept_text(engine_pipe *p, int i, int word) {
    size_t n = p->len[i];
    if (word) n = decide_first_word_end(p->text[i], n);
    memcpy(p->ins, p->text[i], n);
    return n;
}

/* Where the context's last PRIOR_MAX_CHARS characters start: a word of the
 * prior may begin before the cursor. */
static size_t word_context_start(const laya_session *s) {
    size_t c0 = s->cx.len;
    for (int i = 0; i < PRIOR_MAX_CHARS && c0 > 0; i++) c0 = utf8_prev(s->cx.ctx, c0);
    return c0;
}

/* Word boundaries: a suggestion that ends inside a Chinese word, where a
 * longer one in the list goes on with that word, is dropped (我们明天 was
 * offered 的地方 and 的地, and Tab after the decision's cut gave 的地). The
 * words are the model file's prior's (prior_splits_word); without a prior
 * nothing is dropped. Returns the new count. */
static int drop_cut_words(const laya_session *s, laya_suggestion *out, int n) {
    const prior *pr = &s->m->prior;
    if (!pr->nw) return n;
    const size_t c0 = word_context_start(s), m = s->cx.len - c0;
    uint8_t t[4 * PRIOR_MAX_CHARS + LAYA_MAX_SUGGESTION];
    memcpy(t, s->cx.ctx + c0, m);
    int w = 0;
    for (int i = 0; i < n; i++) {
        int cut = 0;
        const laya_suggestion *a = &out[i];
        for (int j = 0; j < n && !cut && a->len; j++) {
            const laya_suggestion *b = &out[j];
            if (b->len <= a->len || memcmp(a->text, b->text, a->len)) continue;
            memcpy(t + m, b->text, b->len);
            cut = prior_splits_word(pr, t, m + b->len, m + a->len);
        }
        if (!cut) out[w++] = out[i];
    }
    return w;
}

/* The decision's first word (decide_first_word_end: a word, or two CJK
 * characters), moved on while its end splits a Chinese word of the prior:
 * 的地方 stays whole instead of 的地. */
static size_t word_end(void *vs, const uint8_t *t, size_t n) {
    const laya_session *s = vs;
    size_t e = decide_first_word_end(t, n);
    const prior *pr = &s->m->prior;
    if (!pr->nw || e >= n || e == 0 || !utf8_cjk_at(t, n, e) || n > LAYA_MAX_SUGGESTION) return e;
    const size_t c0 = word_context_start(s), m = s->cx.len - c0;
    uint8_t buf[4 * PRIOR_MAX_CHARS + LAYA_MAX_SUGGESTION];
    memcpy(buf, s->cx.ctx + c0, m);
    memcpy(buf + m, t, n);
    while (e < n && utf8_cjk_at(t, n, e) && prior_splits_word(pr, buf, m + n, m + e)) e = utf8_next(t, n, e);
    return e;
}

/* Suggestions, decision, the list kept for its verdict. */
static laya_status show(laya_session *s, engine_pipe *p, const laya_input *in, double t, laya_view *v) {
    int k = in->k ? in->k : 3;
    laya_suggestion *out = v->list;
    int n = 0;
    laya_status st = laya_suggest(s, k, out, &n);
    if (st != LAYA_OK) return st;
    int had = n;
    n = drop_cut_words(s, out, n);
    if (n < had && had == k && k < LAYA_MAX_K) {
        /* a half word dropped: the slot goes to the next suggestion (one
         * more asked for, mostly from the search nodes just computed) */
        int m = 0;
        if ((st = laya_suggest(s, k + 1, out, &m)) != LAYA_OK) return st;
        n = drop_cut_words(s, out, m);
        if (n > k) n = k;
    }
    int cut = n != had;
    if (in->field & LAYA_FIELD_ONE_LINE) {
        /* one line: a suggestion stops at its first control character (a
         * line break); one left empty is dropped */
        int w = 0;
        for (int i = 0; i < n; i++) {
            laya_suggestion x = out[i];
            for (size_t j = 0; j < x.len; j++)
                if ((unsigned char)x.text[j] < 0x20) x.len = j;
            cut |= x.len != out[i].len;
            if (x.len) out[w++] = x;
        }
        cut |= w != n;
        n = w;
    }
    if (in->want & LAYA_WANT_DECIDE) {
        st = decide_words(p->d, t, out, n, out, &n, word_end, s);
        if (st != LAYA_OK) return st;
        if (!n) v->held = decide_reason_str(decide_last_reason(p->d));
        cut = 1;
    }
    /* feedback judges what was shown: the cut of the list */
    if (cut) laya_session_shown(s, out, n);
    for (int i = 0; i < n; i++) {
        memcpy(p->text[i], out[i].text, out[i].len);
        p->len[i] = out[i].len;
    }
    p->n = n;
    v->n = n;
    return LAYA_OK;
}

laya_status laya_session_event(laya_session *s, const laya_input *in, laya_view *v) {
    if (!s || !in || !v || in->k < 0 || in->k > LAYA_MAX_K || (in->len && !in->text) ||
        (unsigned)in->kind > LAYA_INPUT_SHOW)
        return LAYA_ERR_ARG;
    memset(v, 0, sizeof *v);
    engine_pipe *p = pipe_of(s);
    if (!p) return LAYA_ERR_NOMEM;
    if ((in->want & LAYA_WANT_DECIDE) && !p->d && laya_decider_new(&p->d) != LAYA_OK) return LAYA_ERR_NOMEM;
    if (in->kind == LAYA_INPUT_ACCEPT && (in->index < 0 || in->index >= p->n)) return LAYA_ERR_ARG;
    const double t = in->t_ms >= 0 ? in->t_ms : now_ms();

    /* The field, then the gate. */
    engine_set_field(s, (in->field & LAYA_FIELD_SECRET) != 0, (in->field & LAYA_FIELD_PRIVATE) != 0);
    const int spaced = p->spaced;
    p->spaced = 0;
    laya_status st = LAYA_OK, late = LAYA_OK;
    size_t len0;
    const uint8_t *c0 = context_now(s, p, &len0);

    /* A context with nothing wanted is noted, not read (coalescing). */
    if (in->kind == LAYA_INPUT_CONTEXT && !in->want) {
        if (same_text(in->text, in->len, c0, len0)) {
            p->spaced = spaced;
        } else {
            if (typed_on(c0, len0, (const uint8_t *)in->text, in->len)) late = passed_over(s, p, in, t);
            if (!(in->field & LAYA_FIELD_CLIENT_JUDGES)) p->n = 0;
            if ((st = note_joined(p, (const uint8_t *)in->text, in->len, NULL, 0)) != LAYA_OK) return st;
        }
        if (p->d) decide_track_context(p->d, in->text, in->len, t);
        v->gate = engine_gate_at(s, (const uint8_t *)in->text, in->len);
        v->changed = !same_text(in->text, in->len, c0, len0);
        return late;
    }
    /* A new context replaces the noted one; KEY and ERASE read it (they
     * edit the engine's text); the rest leave it noted until something is
     * wanted (below), so a protocol client's accept and commit between two
     * contexts read no text the client never had. */
    const int echo = in->kind == LAYA_INPUT_CONTEXT && same_text(in->text, in->len, c0, len0);
    if (in->kind == LAYA_INPUT_CONTEXT || in->kind == LAYA_INPUT_FOCUS) {
        if (echo) p->spaced = spaced;   /* a front end's echo of the text it was given */
        else if (in->kind == LAYA_INPUT_CONTEXT && typed_on(c0, len0, (const uint8_t *)in->text, in->len))
            late = passed_over(s, p, in, t);
        p->pend_on = 0;
        drop_large_note(p);
    } else if ((in->kind == LAYA_INPUT_KEY || in->kind == LAYA_INPUT_ERASE) && (st = read_noted(s, p)) != LAYA_OK) {
        return st;
    }

    /* The event. */
    switch (in->kind) {
    case LAYA_INPUT_CONTEXT:
        /* a new text drops the list unjudged, unless the client judges its
         * lists itself: then it stays to be judged until the next one */
        if (!echo && !(in->field & LAYA_FIELD_CLIENT_JUDGES)) p->n = 0;
        st = laya_session_set_context(s, in->text, in->len);
        break;
    case LAYA_INPUT_KEY: {
        if (!in->len || utf8_next((const uint8_t *)in->text, in->len, 0) != in->len) return LAYA_ERR_ARG;
        late = passed_over(s, p, in, t);
        size_t erase;
        size_t n = key_edit(s, p, (const uint8_t *)in->text, in->len, in->field, spaced, &erase);
        v->erase = erase;
        v->insert = (const char *)p->ins;
        v->insert_len = n;
        st = edit(s, s->cx.len - erase, p->ins, n);
        /* an absorbed blank leaves the accepted blank where it was */
        if (!n && !erase) p->spaced = 1;
        break;
    }
    case LAYA_INPUT_ERASE:
        late = passed_over(s, p, in, t);
        if (s->cx.len) st = laya_session_backspace(s, 1);
        break;
    case LAYA_INPUT_ACCEPT: {
        size_t n = accept_text(p, in->index, in->word);
        late = verdict(s, p, in->index, t);
        v->insert = (const char *)p->ins;
        v->insert_len = n;
        /* noted, not read: the next event reads it (a KEY, a SHOW) or
         * replaces it (the client's next context, which the engine then
         * reads once) */
        st = note_joined(p, c0, len0, p->ins, n);
        p->spaced = n > 0 && p->ins[n - 1] == ' ';
        break;
    }
    case LAYA_INPUT_DISMISS:
        late = verdict(s, p, -1, t);
        break;
    case LAYA_INPUT_COMMIT:
        /* learning, not a key: the list shown is not judged (a front end
         * whose Enter ends the line passes it over with DISMISS first) */
        if (in->len && s->mem.memory && engine_gate_at(s, c0, len0) == ENGINE_GATE_OPEN) {
            p->err[0] = 0;
            late = laya_memory_commit(s->mem.memory, in->text, in->len, &v->learned, p->err, sizeof p->err);
            if (late != LAYA_OK) v->error = p->err[0] ? p->err : laya_status_str(late);
        }
        break;
    case LAYA_INPUT_FOCUS:
        p->n = 0;
        if (p->d) decide_forget_context(p->d);
        st = laya_session_set_context(s, in->text, in->len);
        break;
    case LAYA_INPUT_SHOW:
        break;
    }
    if (st != LAYA_OK) return st;
    v->changed = s->cx.len != len0 || in->kind == LAYA_INPUT_ACCEPT || v->erase;
    /* the decider hears the new context; an accepted text is a jump it
     * hears with the next event, at that event's time (the protocol's
     * feedback comes before the client's next context) */
    if (p->d && in->kind != LAYA_INPUT_ACCEPT) decide_track_context(p->d, (const char *)s->cx.ctx, s->cx.len, t);

    /* What to show, for the context as it now is (an accepted text noted
     * above is read when something is wanted at once). */
    if (in->want && (st = read_noted(s, p)) != LAYA_OK) return st;
    size_t cl;
    const uint8_t *cn = context_now(s, p, &cl);
    const int gate = engine_gate_at(s, cn, cl);
    v->gate = gate;
    if (gate == ENGINE_GATE_SECRET || in->kind == LAYA_INPUT_DISMISS || !(in->want & LAYA_WANT_SUGGEST)) {
        /* nothing on screen now: nothing to judge later */
        if (in->kind != LAYA_INPUT_SHOW || gate == ENGINE_GATE_SECRET) p->n = 0;
    } else if ((st = show(s, p, in, t, v)) != LAYA_OK) {
        return st;
    }
    if ((in->want & LAYA_WANT_INTENT) && gate == ENGINE_GATE_OPEN)
        laya_session_intent(s, &v->intent, &v->intent_p);
    if ((in->want & LAYA_WANT_NOTES) && gate == ENGINE_GATE_OPEN &&
        laya_session_notes(s, LAYA_VIEW_NOTES, &v->notes, &v->n_notes) != LAYA_OK)
        v->n_notes = 0;
    return late;
}
