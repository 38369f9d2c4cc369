/* ibus_engine.c - the Laya IBus engine: ghost text and a candidate list.
 *
 * Contract:
 *  - The application's text is never changed unless the user accepts a
 *    suggestion: every key but the few below is passed through unchanged
 *    (process_key_event returns FALSE). The ghost is a pre-edit string in
 *    grey with the cursor at its start, in IBUS_ENGINE_PREEDIT_CLEAR mode,
 *    so a focus change or reset drops it instead of committing it.
 *  - While suggestions are shown: the accept key (Tab, Right or End, from
 *    the settings) or Alt+1 accepts the first (the ghost), Alt+2..Alt+9 or
 *    a click in the candidate list the others, Esc dismisses. Those keys
 *    are consumed; everything else passes through (Tab too when another key
 *    accepts), so a plain digit types the digit, and the list's labels name
 *    the keys that really pick ("Alt+1", not "1").
 *  - A suggestion may end with the blank after its word (it saves that
 *    key). When the next key is one of . , ; : ! ? the punctuation goes
 *    before that blank ("help " then "." gives "help. "), where the client
 *    supports surrounding text (deleting the blank needs it); otherwise the
 *    key passes through as any other.
 *  - Settings (src/util/settings.h: on/off, how many, the accept key) are
 *    read at start and again on each focus-in and enable when the file
 *    changed (one stat() otherwise). Off: no model call, nothing shown;
 *    learning goes on (incognito, in the memory, is what stops it). The
 *    property menu's "Laya settings" and ibus-setup's Preferences (the
 *    component's <setup>) start the settings window without waiting.
 *  - Context: the text before the cursor from the client's surrounding text
 *    where the client provides it, else the engine's own record of the keys
 *    typed since the last focus change, reset or cursor movement. Either is
 *    kept to its last MAX_RECORD bytes, cut at a character boundary. After
 *    a focus change IBus keeps the last field's surrounding text until the
 *    client sends the new field's (ibus 1.5.27): it is not read until then
 *    (surr_fresh), or the new field's first line would begin with the old
 *    field's text, in the suggestions and in what is committed.
 *  - What is shown is what the decision (laya_decide) keeps of the
 *    suggestions: it is told every keystroke with its time (characters,
 *    backspaces, jumps), acceptances (Tab, Alt+N, clicks) and rejections
 *    (pass_over), so it holds back during fast bursts and corrections and
 *    adapts to how often this typist takes a suggestion.
 *  - Feedback (laya_session_feedback): a list taken from is reported with
 *    the index taken; a list shown and passed over (Esc, or typing on past
 *    it: pass_over has the rule) with -1, so the memory ranks it lower in
 *    that context next time.
 *  - Privacy: the content type is read on every key (IBus forwards it only
 *    when it changes). PASSWORD and PIN fields: nothing is shown, nothing
 *    recorded, no model call. The PRIVATE hint: nothing learned, nothing
 *    learned shown (private_field). Otherwise the line being typed is
 *    committed to the user's memory when it ends (Enter, a cursor jump,
 *    focus out, reset). Nothing typed is ever logged.
 *  - Suggestions are computed after the key's reply is sent (an idle
 *    callback), so the key reaches the application first; keys that arrive
 *    faster than suggestions are computed coalesce into one computation for
 *    the newest context. Once they are shown, a low-priority idle callback
 *    computes ahead the search the next key needs if it types what the
 *    suggestions guessed (laya_session_prefetch), one guess a turn of the
 *    main loop: a key cancels what is left and waits for one search at
 *    most.
 *  - Without a model, keys pass through and the reason is shown as
 *    auxiliary text at the caret on focus and on each key, until Esc.
 *
 * Where the candidate list appears: ibus-ui-gtk3 (1.5.27) moves its
 * candidate window to the cursor rectangle only from the window's
 * size-allocate handler, and GTK3 drops a move made there while it maps a
 * hidden popup, so a list hidden and shown again stays where it first
 * appeared (the left of the entry). And the client reports the caret's
 * new place only after the key that moved it, usually after the list for
 * that key was sent. So the list stays up between keys (only the ghost is
 * cleared at once), is sent twice when it appears, and is sent again when
 * the cursor rectangle changes under it: each update while it is mapped
 * moves it to the newest rectangle. tests/e2e/drive.py checks where it is. */
#include "ibus/ibus_laya.h"

#include <string.h>

#include "util/settings.h"
#include "util/utf8.h"

#ifndef LAYA_PREFIX
#define LAYA_PREFIX "/usr/local"
#endif

enum { MAX_CANDIDATES = SETTINGS_MAX_COUNT, MAX_RECORD = 4096 };
#define SETTINGS_PROP "laya-settings"

typedef struct {
    IBusEngine parent;
    laya_session *session;     /* NULL when there is no model */
    laya_decider *decider;     /* NULL when there is no model */
    GString *typed;            /* our record of the text before the cursor */
    IBusLookupTable *table;
    char *cand[MAX_CANDIDATES];  /* shown suggestions (owned); cand[0] is the ghost */
    int n_cand;
    gboolean table_shown;      /* the lookup table is on screen */
    gboolean notice_off;       /* Esc dismissed the no-model notice until the next focus */
    gint loc[4];               /* the client's last cursor rectangle: x, y, w, h */
    guint idle_id;             /* pending suggestion computation, 0 if none */
    guint ahead_id;            /* pending laya_session_prefetch, 0 if none */
    gboolean typed_since;      /* keys typed or suggestions taken since the last commit */
    gboolean spaced;           /* the last key accepted a suggestion that ends in a blank */
    gboolean surr_fresh;       /* the client sent its surrounding text since the focus came
                                  (set_surrounding_text); until then IBus still holds the
                                  last field's */
} IBusLayaEngine;

typedef struct {
    IBusEngineClass parent;
    const laya_model *model;
    laya_memory *memory;       /* the user's memory (borrowed), NULL: no learning */
    laya_notes *notes;         /* the user's notes index (borrowed), NULL: none */
    const laya_intent *intent; /* the intent head (borrowed), NULL: none */
    char *notice;              /* why there is no model (owned), NULL with a model */
    settings_watch settings;   /* the user's settings, shared by every engine instance */
    IBusPropList *props;       /* the property menu: "Laya settings" */
} IBusLayaEngineClass;

G_DEFINE_TYPE(IBusLayaEngine, ibus_laya_engine, IBUS_TYPE_ENGINE)

void ibus_laya_set_model(const laya_model *m, const char *notice) {
    IBusLayaEngineClass *k = g_type_class_ref(IBUS_TYPE_LAYA_ENGINE);
    k->model = m;
    g_free(k->notice);
    k->notice = m ? NULL : g_strdup(notice ? notice : "Laya has no model");
    g_type_class_unref(k);
}

void ibus_laya_set_memory(laya_memory *m) {
    IBusLayaEngineClass *k = g_type_class_ref(IBUS_TYPE_LAYA_ENGINE);
    k->memory = m;
    g_type_class_unref(k);
}

void ibus_laya_set_notes(laya_notes *n) {
    IBusLayaEngineClass *k = g_type_class_ref(IBUS_TYPE_LAYA_ENGINE);
    k->notes = n;
    g_type_class_unref(k);
}

void ibus_laya_set_intent(const laya_intent *h) {
    IBusLayaEngineClass *k = g_type_class_ref(IBUS_TYPE_LAYA_ENGINE);
    k->intent = h;
    g_type_class_unref(k);
}

static IBusLayaEngineClass *class_of(IBusLayaEngine *e) {
    return (IBusLayaEngineClass *)G_OBJECT_GET_CLASS(e);
}

/* Milliseconds on the monotonic clock, for the decision. */
static double now_ms(void) {
    return (double)g_get_monotonic_time() / 1000.0;
}

static void decide_event(IBusLayaEngine *e, laya_event kind) {
    if (e->decider) laya_decide_event(e->decider, kind, now_ms());
}

static void ibus_laya_engine_init(IBusLayaEngine *e) {
    e->typed = g_string_new(NULL);
    e->table = ibus_lookup_table_new(MAX_CANDIDATES, 0, TRUE, TRUE);
    g_object_ref_sink(e->table);
    ibus_lookup_table_set_orientation(e->table, IBUS_ORIENTATION_VERTICAL);
    e->loc[0] = e->loc[1] = -1;
    const laya_model *m = class_of(e)->model;
    if (m && (laya_session_new(m, &e->session) != LAYA_OK || laya_decider_new(&e->decider) != LAYA_OK)) {
        laya_session_free(e->session);
        e->session = NULL;
        e->decider = NULL;
    }
    if (e->session) laya_session_set_memory(e->session, class_of(e)->memory);
    if (e->session && class_of(e)->notes) laya_session_set_notes(e->session, class_of(e)->notes);
    if (e->session && class_of(e)->intent) laya_session_set_intent(e->session, class_of(e)->intent);
}

static void clear_candidates(IBusLayaEngine *e) {
    for (int i = 0; i < e->n_cand; i++) g_free(e->cand[i]);
    e->n_cand = 0;
}

static void cancel_pending(IBusLayaEngine *e) {
    if (e->idle_id) g_source_remove(e->idle_id);
    if (e->ahead_id) g_source_remove(e->ahead_id);
    e->idle_id = e->ahead_id = 0;
}

/* Takes the ghost off the screen; the list stays until hide_table. */
static void hide_ghost(IBusLayaEngine *e) {
    if (!e->n_cand) return;
    clear_candidates(e);
    ibus_engine_update_preedit_text_with_mode((IBusEngine *)e, ibus_text_new_from_static_string(""), 0, FALSE,
                                              IBUS_ENGINE_PREEDIT_CLEAR);
}

static void hide_table(IBusLayaEngine *e) {
    if (!e->table_shown) return;
    e->table_shown = FALSE;
    ibus_engine_hide_lookup_table((IBusEngine *)e);
}

/* Takes the ghost and the list off the screen. */
static void hide(IBusLayaEngine *e) {
    hide_ghost(e);
    hide_table(e);
}

/* Forgets the context: the cursor may be anywhere now. */
static gboolean private_field(IBusEngine *ie);

/* The line being typed (the record after its last line break) was really
 * typed: it is learned, unless the field is private or nothing was typed
 * since the last commit. */
static void commit_line(IBusLayaEngine *e) {
    laya_memory *m = class_of(e)->memory;
    if (!m || !e->typed_since || private_field((IBusEngine *)e)) return;
    e->typed_since = FALSE;
    const char *nl = strrchr(e->typed->str, '\n');
    const char *line = nl ? nl + 1 : e->typed->str;
    size_t n = e->typed->len - (size_t)(line - e->typed->str);
    if (n) laya_memory_commit(m, line, n, NULL, NULL, 0);
}

static void forget(IBusLayaEngine *e) {
    commit_line(e);
    cancel_pending(e);
    hide(e);
    g_string_truncate(e->typed, 0);
    decide_event(e, LAYA_EVENT_JUMP);
}

static void ibus_laya_engine_dispose(GObject *o) {
    IBusLayaEngine *e = (IBusLayaEngine *)o;
    cancel_pending(e);
    clear_candidates(e);
    g_clear_object(&e->table);
    G_OBJECT_CLASS(ibus_laya_engine_parent_class)->dispose(o);
}

static void ibus_laya_engine_finalize(GObject *o) {
    IBusLayaEngine *e = (IBusLayaEngine *)o;
    laya_decider_free(e->decider);
    laya_session_free(e->session);
    g_string_free(e->typed, TRUE);
    G_OBJECT_CLASS(ibus_laya_engine_parent_class)->finalize(o);
}

/* Keeps s's last `keep` bytes or fewer, starting at a character boundary
 * (a cut inside a character would hand the model a stray byte). */
static void keep_tail(GString *s, size_t keep) {
    if (s->len <= keep) return;
    const uint8_t *u = (const uint8_t *)s->str;
    size_t at = s->len - keep;
    /* Any character holding byte `at` starts at most 3 bytes before it. */
    size_t i = at > 3 ? at - 3 : 0;
    while (i < at) i = utf8_next(u, s->len, i);
    g_string_erase(s, 0, (gssize)i);
}

/* PASSWORD and PIN fields get nothing from us. */
static gboolean silent_field(IBusEngine *ie) {
    guint purpose = 0, hints = 0;
    ibus_engine_get_content_type(ie, &purpose, &hints);
    return purpose == IBUS_INPUT_PURPOSE_PASSWORD || purpose == IBUS_INPUT_PURPOSE_PIN;
}

/* Fields we learn nothing from and show nothing learned in: the silent
 * ones and those with the PRIVATE hint (a browser's private window). */
static gboolean private_field(IBusEngine *ie) {
    guint purpose = 0, hints = 0;
    ibus_engine_get_content_type(ie, &purpose, &hints);
    return silent_field(ie) || (hints & IBUS_INPUT_HINT_PRIVATE);
}

/* Shows the no-model notice at the caret (auxiliary text: the panel draws
 * it in the candidate window). */
static void show_notice(IBusLayaEngine *e) {
    const char *notice = class_of(e)->notice;
    if (!notice || e->notice_off) return;
    ibus_engine_update_auxiliary_text((IBusEngine *)e, ibus_text_new_from_string(notice), TRUE);
}

/* The title of the note most related to the sentence typed and the
 * intent (C10) when the head is confident ("send_email 0.93"), as
 * auxiliary text (the panel draws it above the candidates); hidden when
 * neither. The index is asked only when the sentence's terms change
 * (laya_session_notes); the head only when the stable tokens changed. */
static void show_note(IBusLayaEngine *e) {
    const laya_note *h = NULL;
    int nh = 0;
    if (!class_of(e)->notes || !e->session || !e->typed->len || laya_session_notes(e->session, 1, &h, &nh) != LAYA_OK)
        nh = 0;
    const char *iname = NULL;
    float ip = 0;
    if (class_of(e)->intent && e->session && e->typed->len) laya_session_intent(e->session, &iname, &ip);
    if (nh || iname) {
        GString *line = g_string_new(NULL);
        if (nh) g_string_append_printf(line, "\u2192 %s", h[0].title);
        if (iname) g_string_append_printf(line, "%s%s %.2f", nh ? "  \u00b7  " : "", iname, ip);
        ibus_engine_update_auxiliary_text((IBusEngine *)e, ibus_text_new_from_string(line->str), TRUE);
        g_string_free(line, TRUE);
    } else if (class_of(e)->notes || class_of(e)->intent) {
        ibus_engine_hide_auxiliary_text((IBusEngine *)e);
    }
}

static void send_table(IBusLayaEngine *e) {
    ibus_engine_update_lookup_table((IBusEngine *)e, e->table, TRUE);
}

/* How a suggestion is drawn (what is inserted stays the suggestion): line
 * breaks as U+23CE, and in the list (`edges`) a space at either end as
 * U+2423, or "lp" and "lp " would look the same. Caller frees. */
static char *visible(const char *s, gboolean edges) {
    GString *v = g_string_new(NULL);
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') g_string_append(v, "\u23ce");
        else if (s[i] == ' ' && edges && (i == 0 || i == n - 1)) g_string_append(v, "\u2423");
        else g_string_append_c(v, s[i]);
    }
    return g_string_free(v, FALSE);
}

static void show(IBusLayaEngine *e) {
    IBusEngine *ie = (IBusEngine *)e;
    char *ghost = visible(e->cand[0], FALSE);
    IBusText *t = ibus_text_new_from_string(ghost);
    ibus_text_append_attribute(t, IBUS_ATTR_TYPE_FOREGROUND, 0x808080, 0, (gint)g_utf8_strlen(ghost, -1));
    /* Cursor 0: the caret stays where the user is typing, before the ghost. */
    ibus_engine_update_preedit_text_with_mode(ie, t, 0, TRUE, IBUS_ENGINE_PREEDIT_CLEAR);
    g_free(ghost);
    ibus_lookup_table_clear(e->table);
    for (int i = 0; i < e->n_cand; i++) {
        char label[8], *shown = visible(e->cand[i], TRUE);
        g_snprintf(label, sizeof label, "Alt+%d", i + 1);
        ibus_lookup_table_append_candidate(e->table, ibus_text_new_from_string(shown));
        g_free(shown);
        ibus_lookup_table_set_label(e->table, (guint)i, ibus_text_new_from_string(label));
    }
    send_table(e);
    /* The second copy moves a list that was hidden (see the top comment). */
    if (!e->table_shown) send_table(e);
    e->table_shown = TRUE;
}

/* While the typist is between keys: the next key's search, if it types
 * what the suggestions guessed (laya_session_prefetch), one guess a call
 * so that a key waits for one search at most. */
static gboolean prefetch(gpointer data) {
    IBusLayaEngine *e = data;
    int more = 0;
    double t0 = now_ms();
    if (e->session && laya_session_prefetch(e->session, &more) == LAYA_OK) {
        /* counts and time only, never the text; shown with G_MESSAGES_DEBUG=laya */
        g_log("laya", G_LOG_LEVEL_DEBUG, "prefetch: %ld us, more %d", (long)((now_ms() - t0) * 1000), more);
        if (more) return G_SOURCE_CONTINUE;
    }
    e->ahead_id = 0;
    return G_SOURCE_REMOVE;
}

static gboolean compute(gpointer data) {
    IBusLayaEngine *e = data;
    e->idle_id = 0;
    hide_ghost(e);
    laya_suggestion out[MAX_CANDIDATES];
    int n = 0;
    const settings_values *v = &class_of(e)->settings.v;
    if (e->session) laya_session_set_private(e->session, private_field((IBusEngine *)e));
    gboolean asked = FALSE;   /* the model was asked about this context */
    if (!e->session || !v->enabled || !e->typed->len || silent_field((IBusEngine *)e) ||
        laya_session_set_context(e->session, e->typed->str, e->typed->len) != LAYA_OK ||
        !(asked = laya_suggest(e->session, v->count, out, &n) == LAYA_OK) ||
        laya_decide(e->decider, now_ms(), out, n, out, &n) != LAYA_OK)
        n = 0;
    int shown = 0;
    for (int i = 0; i < n; i++)
        if (out[i].len) {
            e->cand[e->n_cand++] = g_strndup(out[i].text, out[i].len);
            out[shown++] = out[i];
        }
    /* what is judged by feedback is what the list shows */
    if (e->session) laya_session_shown(e->session, out, shown);
    if (e->n_cand) show(e);
    else hide_table(e);
    show_note(e);
    /* after what is shown has gone out, and below every other event; only
     * for a context the model was just asked about (not in a password
     * field, not while off) */
    if (asked && !e->ahead_id) e->ahead_id = g_idle_add_full(G_PRIORITY_LOW, prefetch, e, NULL);
    return G_SOURCE_REMOVE;
}

/* The list on screen was passed over: the decider and the memory are told
 * (the list is then judged; hide it or replace it after). Nothing when no
 * list is on screen: one the decision held back, one not computed yet (keys
 * faster than the idle callback), one already taken, dismissed or judged.
 *
 * Passed over: Esc, and the keys that type on past the list without taking
 * it: a character, Enter (the evaluation's typists type a line break like
 * any character) and Backspace. The rule is the one `laya eval
 * --feedback` measured and the feedback constants were chosen with
 * (src/eval/eval_type.c, step: every list shown and not taken gets -1,
 * whatever the typist's next key, a Backspace of the simulated typist
 * included), and the decider's (a character or Backspace after a shown list
 * counts as IGNORED): a front end that reported less would learn less than
 * the evaluation assumes. No reading-time rule either: the evaluation has
 * none (its typists judge every list they are shown), and time to read is
 * the decision's business: its burst floor holds back all but the likeliest
 * suggestions while the typist types faster than usual, and what it lets
 * through is judged like any list. Not a verdict: cursor movement,
 * Delete, Tab when it is not the accept key, shortcuts, focus changes and
 * resets (the typist went elsewhere, perhaps to take the text another way;
 * the decider calls these a jump). */
static void pass_over(IBusLayaEngine *e) {
    if (!e->n_cand) return;
    decide_event(e, LAYA_EVENT_IGNORED);
    laya_session_feedback(e->session, -1);
}

static gboolean is_enter(guint keyval) {
    return keyval == IBUS_KEY_Return || keyval == IBUS_KEY_KP_Enter || keyval == IBUS_KEY_ISO_Enter;
}

static void accept(IBusLayaEngine *e, int i) {
    if (i < 0 || i >= e->n_cand) return;
    char *text = e->cand[i];
    e->cand[i] = NULL;
    hide(e);
    ibus_engine_commit_text((IBusEngine *)e, ibus_text_new_from_string(text));
    g_string_append(e->typed, text);
    keep_tail(e->typed, MAX_RECORD);
    e->typed_since = TRUE;
    e->spaced = text[0] && text[strlen(text) - 1] == ' ';
    g_free(text);
    /* Taken, and the text grew by more than a keystroke: no typing
     * interval spans it. Then what may follow the accepted text. */
    decide_event(e, LAYA_EVENT_ACCEPTED);
    decide_event(e, LAYA_EVENT_JUMP);
    /* taken: it ranks a little higher after this context next time */
    laya_session_feedback(e->session, i);
    cancel_pending(e);
    e->idle_id = g_idle_add(compute, e);
}

/* 1 iff our record is the client's text s[0..len) followed by at most
 * MAX_IN_FLIGHT more characters: the keys still in flight, which the
 * client's surrounding text does not show yet. A record cut at the front
 * (keep_tail) matches a long enough tail of s instead of all of it. */
enum { MAX_IN_FLIGHT = 8 };
static gboolean record_extends(const GString *r, const char *s, size_t len) {
    size_t p = r->len;
    for (int j = 0; j < MAX_IN_FLIGHT && p > 0; j++) {
        p = utf8_prev((const uint8_t *)r->str, p);
        if (p <= len && (p == len || p >= MAX_RECORD / 2) && !memcmp(r->str, s + len - p, p)) return TRUE;
    }
    return FALSE;
}

/* Brings e->typed in line with the client's view of the text before the
 * cursor, where it has one. A client's surrounding text may lag by the
 * keys still in flight; a record that extends it is kept. */
static void sync_context(IBusLayaEngine *e) {
    IBusEngine *ie = (IBusEngine *)e;
    if (!(ie->client_capabilities & IBUS_CAP_SURROUNDING_TEXT) || !e->surr_fresh) return;
    IBusText *t = NULL;
    guint cursor = 0, anchor = 0;
    ibus_engine_get_surrounding_text(ie, &t, &cursor, &anchor);
    if (!t || !t->text) return;
    guint at = MIN(cursor, anchor);   /* a typed key replaces the selection */
    glong nchars = g_utf8_strlen(t->text, -1);
    if (at > (guint)nchars) return;
    size_t len = (size_t)(g_utf8_offset_to_pointer(t->text, at) - t->text);
    if (record_extends(e->typed, t->text, len)) return;
    g_string_truncate(e->typed, 0);
    g_string_append_len(e->typed, t->text, (gssize)len);
    keep_tail(e->typed, MAX_RECORD);
}

static gboolean is_modifier(guint keyval) {
    return (keyval >= IBUS_KEY_Shift_L && keyval <= IBUS_KEY_Hyper_R) ||
           (keyval >= IBUS_KEY_ISO_Lock && keyval <= IBUS_KEY_ISO_Level5_Lock) || keyval == IBUS_KEY_Num_Lock;
}

static guint accept_keyval(settings_accept a) {
    return a == SETTINGS_ACCEPT_RIGHT ? IBUS_KEY_Right : a == SETTINGS_ACCEPT_END ? IBUS_KEY_End : IBUS_KEY_Tab;
}

/* The client's surrounding text: kept by IBus (the parent class), and from
 * now on the focused field's. */
static void set_surrounding_text(IBusEngine *ie, IBusText *text, guint cursor, guint anchor) {
    IBUS_ENGINE_CLASS(ibus_laya_engine_parent_class)->set_surrounding_text(ie, text, cursor, anchor);
    ((IBusLayaEngine *)ie)->surr_fresh = TRUE;
}

static gboolean process_key_event(IBusEngine *ie, guint keyval, guint keycode, guint state) {
    IBusLayaEngine *e = (IBusLayaEngine *)ie;
    if (state & IBUS_RELEASE_MASK) return FALSE;
    if (silent_field(ie)) {
        forget(e);
        return FALSE;
    }
    if (is_modifier(keyval)) return FALSE;
    guint mods = state & (IBUS_SHIFT_MASK | IBUS_CONTROL_MASK | IBUS_MOD1_MASK | IBUS_SUPER_MASK | IBUS_META_MASK);
    const gboolean spaced = e->spaced;
    e->spaced = FALSE;
    if (!e->session) {
        if (keyval == IBUS_KEY_Escape && !e->notice_off) {
            e->notice_off = TRUE;
            ibus_engine_hide_auxiliary_text(ie);
        } else {
            show_notice(e);
        }
        return FALSE;
    }
    if (e->n_cand) {
        if (keyval == accept_keyval(class_of(e)->settings.v.accept) && !mods) {
            accept(e, 0);
            return TRUE;
        }
        if (keyval == IBUS_KEY_Escape && !mods) {
            pass_over(e);
            hide(e);
            return TRUE;
        }
        if (mods == IBUS_MOD1_MASK && keyval >= IBUS_KEY_1 && keyval < IBUS_KEY_1 + (guint)e->n_cand) {
            accept(e, (int)(keyval - IBUS_KEY_1));
            return TRUE;
        }
    }
    gunichar c = ibus_keyval_to_unicode(keyval);
    if (c >= 0x20 && c != 0x7f && !(mods & ~IBUS_SHIFT_MASK)) {
        /* Typed on past the list. The ghost goes at once (it no longer
         * follows the text); the list stays until this key's suggestions
         * replace it. */
        pass_over(e);
        cancel_pending(e);
        hide_ghost(e);
        /* A suggestion brought the blank after its word; punctuation typed
         * next goes before it, as on a phone's keyboard: "help " + "." is
         * "help. ". Only where the client lets us delete what we typed. */
        const gboolean before_blank = spaced && laya_goes_before_blank(c) &&
                                      (ie->client_capabilities & IBUS_CAP_SURROUNDING_TEXT) && e->typed->len &&
                                      e->typed->str[e->typed->len - 1] == ' ';
        if (before_blank) {
            char p[3] = {(char)c, ' ', 0};
            ibus_engine_delete_surrounding_text(ie, -1, 1);
            ibus_engine_commit_text(ie, ibus_text_new_from_string(p));
            g_string_truncate(e->typed, e->typed->len - 1);
            g_string_append(e->typed, p);
        } else {
            sync_context(e);
            g_string_append_unichar(e->typed, c);
        }
        keep_tail(e->typed, MAX_RECORD);
        e->typed_since = TRUE;
        decide_event(e, LAYA_EVENT_CHAR);
        e->idle_id = g_idle_add(compute, e);
        return before_blank;   /* the punctuation is ours; any other key the client's */
    }
    /* Any other key may move the cursor or edit in ways we cannot follow:
     * Backspace we can, the rest makes us re-read the context. */
    cancel_pending(e);
    if (keyval == IBUS_KEY_BackSpace && !mods && e->typed->len) {
        pass_over(e);
        hide_ghost(e);
        size_t prev = utf8_prev((const uint8_t *)e->typed->str, e->typed->len);
        g_string_truncate(e->typed, prev);
        decide_event(e, LAYA_EVENT_BACKSPACE);
        e->idle_id = g_idle_add(compute, e);
    } else {
        /* Enter ends the line without the suggestion: passed over. */
        if (is_enter(keyval) && !(mods & ~IBUS_SHIFT_MASK)) pass_over(e);
        forget(e);
    }
    return FALSE;
}

static void candidate_clicked(IBusEngine *ie, guint index, guint button, guint state) {
    accept((IBusLayaEngine *)ie, (int)index);
}

static void set_cursor_location(IBusEngine *ie, gint x, gint y, gint w, gint h) {
    IBusLayaEngine *e = (IBusLayaEngine *)ie;
    if (e->loc[0] == x && e->loc[1] == y && e->loc[2] == w && e->loc[3] == h) return;
    e->loc[0] = x, e->loc[1] = y, e->loc[2] = w, e->loc[3] = h;
    /* The panel now has the new rectangle: an update moves the list there. */
    if (e->table_shown) send_table(e);
}

/* Re-reads the settings if the file changed; a refusal goes to the log
 * (the settings window shows the same reader's message). */
static void refresh_settings(IBusLayaEngine *e) {
    settings_watch *w = &class_of(e)->settings;
    if (settings_watch_refresh(w) && w->err[0]) g_warning("settings: %s", w->err);
}

/* Starts the settings window; never waits for it (GLib reaps it). */
static void open_settings(void) {
    char prog[4096], err[4096 + 512] = "";
    if (settings_program(LAYA_PREFIX, prog, sizeof prog, err, sizeof err) != LAYA_OK) {
        g_warning("%s", err);
        return;
    }
    char *argv[] = {prog, NULL};
    GError *ge = NULL;
    if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &ge)) {
        g_warning("cannot start %s: %s", prog, ge->message);
        g_error_free(ge);
    }
}

static void property_activate(IBusEngine *ie, const gchar *name, guint state) {
    if (!g_strcmp0(name, SETTINGS_PROP)) open_settings();
}

static void focus_in(IBusEngine *ie) {
    IBusLayaEngine *e = (IBusLayaEngine *)ie;
    forget(e);
    e->surr_fresh = FALSE;
    refresh_settings(e);
    ibus_engine_register_properties(ie, class_of(e)->props);
    e->notice_off = FALSE;
    show_notice(e);
}

static void focus_out(IBusEngine *ie) {
    forget((IBusLayaEngine *)ie);
}

static void reset(IBusEngine *ie) {
    forget((IBusLayaEngine *)ie);
}

static void enable(IBusEngine *ie) {
    /* Tells the client we use surrounding text (see ibus_engine_get_surrounding_text). */
    ibus_engine_get_surrounding_text(ie, NULL, NULL, NULL);
    refresh_settings((IBusLayaEngine *)ie);
    show_notice((IBusLayaEngine *)ie);
}

static void disable(IBusEngine *ie) {
    forget((IBusLayaEngine *)ie);
}

static void ibus_laya_engine_class_init(IBusLayaEngineClass *k) {
    GObjectClass *o = G_OBJECT_CLASS(k);
    IBusEngineClass *ec = IBUS_ENGINE_CLASS(k);
    o->dispose = ibus_laya_engine_dispose;
    o->finalize = ibus_laya_engine_finalize;
    ec->process_key_event = process_key_event;
    ec->candidate_clicked = candidate_clicked;
    ec->set_cursor_location = set_cursor_location;
    ec->set_surrounding_text = set_surrounding_text;
    ec->focus_in = focus_in;
    ec->focus_out = focus_out;
    ec->reset = reset;
    ec->enable = enable;
    ec->disable = disable;
    ec->property_activate = property_activate;
    if (settings_watch_init(&k->settings, NULL) != LAYA_OK && k->settings.err[0])
        g_warning("settings: %s", k->settings.err);
    k->props = ibus_prop_list_new();
    g_object_ref_sink(k->props);
    ibus_prop_list_append(k->props, ibus_property_new(SETTINGS_PROP, PROP_TYPE_NORMAL,
                                                      ibus_text_new_from_static_string("Laya settings\u2026"),
                                                      "preferences-system",
                                                      ibus_text_new_from_static_string(
                                                          "Suggestions, the accept key, incognito, what Laya learned"),
                                                      TRUE, TRUE, PROP_STATE_UNCHECKED, NULL));
}
