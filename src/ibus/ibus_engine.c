/* ibus_engine.c - the Laya IBus engine: an adapter between IBus and the
 * library's keystroke pipeline (laya_session_event, include/laya.h).
 *
 * What the library decides, for every front end alike: the suggestions and
 * whether to show them now (the decision), the privacy gate (secret fields,
 * password prompts before the cursor, private fields), what a key typed
 * right after an accepted suggestion does (a blank absorbed, . , ; : ! ?
 * before the blank), the verdict on each list shown (taken, passed over or
 * dropped unjudged: feedback and the decider), and what is learned when a
 * line ends. What this file does: it turns IBus's calls into events, draws
 * the view and keeps the record of the text before the cursor the events
 * describe.
 *  - Events. compute(): CONTEXT (the record) with SUGGEST and DECIDE, and
 *    NOTES where notes are attached. A printable key: KEY; the key goes
 *    through to the client when the view says to insert just it, otherwise
 *    the engine erases and commits what the view says (it may be nothing: an
 *    absorbed blank) and consumes the key. Backspace: ERASE. The accept key,
 *    Alt+N, a click: ACCEPT, whose text is committed. Esc: DISMISS. A line
 *    ends (forget: Enter, a focus change, any other key, which may have
 *    moved the cursor): COMMIT of the line, which judges no list (Enter
 *    passes it over with a DISMISS first; the rest drop it), then FOCUS on
 *    an empty text: where the cursor is now is not known until the next
 *    key. A reset ends no line (see reset()): FOCUS on the record drops the
 *    list unjudged. The field of every event comes from the
 *    content type (PASSWORD or PIN purpose: LAYA_FIELD_SECRET; the PRIVATE
 *    hint: LAYA_FIELD_PRIVATE) and the client's capabilities (without
 *    surrounding text the engine cannot delete: LAYA_FIELD_NO_DELETE).
 *  - The screen. The ghost is a pre-edit string in grey with the cursor at
 *    its start, in IBUS_ENGINE_PREEDIT_CLEAR mode, so a focus change or
 *    reset drops it instead of committing it; the list is the lookup table,
 *    labelled with the keys that really pick ("Alt+1", not "1"); the title
 *    of the note most related to the sentence ("→ title") is auxiliary
 *    text, shown with the list and hidden with it and on Esc. The intent is
 *    not shown: its label is no title for the list (issue 39).
 *  - Keys. The application's text is changed only where the view says so:
 *    every other key passes through (process_key_event returns FALSE).
 *    While suggestions are shown the accept key (Tab, Right or End, from
 *    the settings), Alt+1..Alt+9 and Esc are consumed; everything else
 *    passes through (Tab too when another key accepts), so a plain digit
 *    types the digit.
 *  - Secret fields (PASSWORD or PIN purpose): every key passes through and
 *    none reaches the library, so nothing of the secret is held in this
 *    process or read by the model; the library's gate shuts the rest.
 *  - Settings (src/util/settings.h: on/off, how many, the accept key) are
 *    read at start and again on each focus-in and enable when the file
 *    changed (one stat() otherwise). Off: no event but those that end a
 *    line, so no model call and nothing shown; learning goes on (incognito,
 *    in the memory, is what stops it). The property menu's "Laya settings"
 *    and ibus-setup's Preferences (the component's <setup>) start the
 *    settings window without waiting.
 *  - The record: the text before the cursor from the client's surrounding
 *    text where the client provides it, else the keys typed since the last
 *    focus change, reset or cursor movement; kept to its last MAX_RECORD
 *    bytes or fewer, cut at a character boundary. The session's context is
 *    the record (synced) except after sync_context rewrote it, or while the
 *    settings are off: the next event then begins with a CONTEXT. After a
 *    focus change IBus keeps the last field's surrounding text until the
 *    client sends the new field's (ibus 1.5.27): it is not read until then
 *    (surr_fresh), or the new field's first line would begin with the old
 *    field's text, in the suggestions and in what is committed.
 *  - Suggestions are computed after the key's reply is sent (an idle
 *    callback), so the key reaches the application first; keys that arrive
 *    faster than suggestions are computed coalesce into one computation for
 *    the newest context. Once they are shown, a low-priority idle callback
 *    computes ahead the search the next key needs if it types what the
 *    suggestions guessed (laya_session_prefetch), one guess a turn of the
 *    main loop: a key cancels what is left and waits for one search at
 *    most. Nothing typed is ever logged.
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
    GString *typed;            /* our record of the text before the cursor */
    gboolean synced;           /* the session's context is the record's text */
    IBusLookupTable *table;
    char *cand[MAX_CANDIDATES];  /* shown suggestions (owned); cand[0] is the ghost */
    int pick[MAX_CANDIDATES];    /* cand[i] is the view's list[pick[i]] (ACCEPT's index) */
    int n_cand;
    gboolean table_shown;      /* the lookup table is on screen */
    gboolean note_shown;       /* a note's title is on screen (auxiliary text) */
    gboolean notice_off;       /* Esc dismissed the no-model notice until the next focus */
    gint loc[4];               /* the client's last cursor rectangle: x, y, w, h */
    guint idle_id;             /* pending suggestion computation, 0 if none */
    guint ahead_id;            /* pending laya_session_prefetch, 0 if none */
    gboolean typed_since;      /* keys typed or suggestions taken since the last commit */
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

/* Milliseconds on the monotonic clock (the prefetch's log). */
static double now_ms(void) {
    return (double)g_get_monotonic_time() / 1000.0;
}

static void ibus_laya_engine_init(IBusLayaEngine *e) {
    e->typed = g_string_new(NULL);
    e->synced = TRUE;   /* both empty */
    e->table = ibus_lookup_table_new(MAX_CANDIDATES, 0, TRUE, TRUE);
    g_object_ref_sink(e->table);
    ibus_lookup_table_set_orientation(e->table, IBUS_ORIENTATION_VERTICAL);
    e->loc[0] = e->loc[1] = -1;
    const laya_model *m = class_of(e)->model;
    if (m && laya_session_new(m, &e->session) != LAYA_OK) e->session = NULL;
    if (e->session) laya_session_set_memory(e->session, class_of(e)->memory);
    if (e->session && class_of(e)->notes) laya_session_set_notes(e->session, class_of(e)->notes);
    if (e->session && class_of(e)->intent) laya_session_set_intent(e->session, class_of(e)->intent);
}

/* Suggestions are on: a model, and the settings say so. Off, the session
 * hears only the events that end a line (learning goes on). */
static gboolean suggesting(IBusLayaEngine *e) {
    return e->session && class_of(e)->settings.v.enabled;
}

/* PASSWORD and PIN fields: no key of theirs reaches the library. */
static gboolean silent_field(IBusEngine *ie) {
    guint purpose = 0, hints = 0;
    ibus_engine_get_content_type(ie, &purpose, &hints);
    return purpose == IBUS_INPUT_PURPOSE_PASSWORD || purpose == IBUS_INPUT_PURPOSE_PIN;
}

/* The field, for the library's gate and spacing: read on every event, as
 * IBus forwards the content type only when it changes. */
static unsigned field_of(IBusEngine *ie) {
    guint purpose = 0, hints = 0;
    ibus_engine_get_content_type(ie, &purpose, &hints);
    unsigned f = 0;
    if (purpose == IBUS_INPUT_PURPOSE_PASSWORD || purpose == IBUS_INPUT_PURPOSE_PIN) f |= LAYA_FIELD_SECRET;
    if (hints & IBUS_INPUT_HINT_PRIVATE) f |= LAYA_FIELD_PRIVATE;
    if (!(ie->client_capabilities & IBUS_CAP_SURROUNDING_TEXT)) f |= LAYA_FIELD_NO_DELETE;
    return f;
}

/* One event to the session, in with its field, k and time filled in; *v
 * is its view (zeroed first, so a view the library did not fill has
 * insert NULL). */
static laya_status send_event(IBusLayaEngine *e, laya_input in, laya_view *v) {
    memset(v, 0, sizeof *v);
    const int count = class_of(e)->settings.v.count;
    in.field = field_of((IBusEngine *)e);
    in.k = CLAMP(count, 1, MAX_CANDIDATES);
    in.t_ms = -1;
    laya_status st = laya_session_event(e->session, &in, v);
    /* the status only, never the text */
    if (st != LAYA_OK) g_log("laya", G_LOG_LEVEL_DEBUG, "event %d: %s", (int)in.kind, laya_status_str(st));
    return st;
}

static laya_status event(IBusLayaEngine *e, laya_input_kind kind, const char *text, size_t len, unsigned want,
                         laya_view *v) {
    return send_event(e, (laya_input){.kind = kind, .text = text, .len = len, .want = want}, v);
}

/* The session's context made the record's where it is not (after
 * sync_context rewrote the record, or while the settings were off): the
 * library judges the change (text added at the end passes the list over,
 * any other change drops it). FALSE when the session refused it. */
static gboolean in_step(IBusLayaEngine *e) {
    if (e->synced) return TRUE;
    laya_view v;
    e->synced = event(e, LAYA_INPUT_CONTEXT, e->typed->str, e->typed->len, 0, &v) == LAYA_OK;
    return e->synced;
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

static void hide_note(IBusLayaEngine *e) {
    if (!e->note_shown) return;
    e->note_shown = FALSE;
    ibus_engine_hide_auxiliary_text((IBusEngine *)e);
}

/* The list and the note's title above it. */
static void hide_table(IBusLayaEngine *e) {
    hide_note(e);
    if (!e->table_shown) return;
    e->table_shown = FALSE;
    ibus_engine_hide_lookup_table((IBusEngine *)e);
}

/* Takes the ghost, the list and the note off the screen. */
static void hide(IBusLayaEngine *e) {
    hide_ghost(e);
    hide_table(e);
}

/* Keeps s's last MAX_RECORD bytes or fewer, starting at a character
 * boundary (a cut inside a character would hand the model a stray byte).
 * A record over MAX_RECORD is cut to 3/4 of it, so that the front moves
 * once every MAX_RECORD/4 bytes typed, not on every key: the session's
 * context, which keeps its front, is given the cut record then (compute). */
static void keep_tail(GString *s) {
    if (s->len <= MAX_RECORD) return;
    const uint8_t *u = (const uint8_t *)s->str;
    size_t at = s->len - MAX_RECORD / 4 * 3;
    /* Any character holding byte `at` starts at most 3 bytes before it. */
    size_t i = at > 3 ? at - 3 : 0;
    while (i < at) i = utf8_next(u, s->len, i);
    g_string_erase(s, 0, (gssize)i);
}

/* The line being typed (the record after its last line break) ends: the
 * session learns it (unless its gate forbids: a secret or private field, a
 * password prompt before the cursor) and then knows nothing of where the
 * cursor is. Enter types on past a list still shown: it is passed over
 * (DISMISS, as the library asks of an Enter); anything else (a focus
 * change, a key that may have moved the cursor) drops it unjudged: the
 * typist went elsewhere. */
static void forget(IBusLayaEngine *e, gboolean enter) {
    cancel_pending(e);
    hide(e);
    if (e->session) {
        laya_view v;
        /* the gate reads the session's context */
        if (suggesting(e) && in_step(e) && enter) event(e, LAYA_INPUT_DISMISS, NULL, 0, 0, &v);
        const char *nl = strrchr(e->typed->str, '\n');
        const char *line = nl ? nl + 1 : e->typed->str;
        size_t n = e->typed->len - (size_t)(line - e->typed->str);
        /* the reason names the store, never the text */
        if (e->typed_since && n && event(e, LAYA_INPUT_COMMIT, line, n, 0, &v) != LAYA_OK && v.error)
            g_warning("learning: %s", v.error);
        event(e, LAYA_INPUT_FOCUS, "", 0, 0, &v);
    }
    e->typed_since = FALSE;
    g_string_truncate(e->typed, 0);
    e->synced = TRUE;
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
    laya_session_free(e->session);
    g_string_free(e->typed, TRUE);
    G_OBJECT_CLASS(ibus_laya_engine_parent_class)->finalize(o);
}

/* Shows the no-model notice at the caret (auxiliary text: the panel draws
 * it in the candidate window). */
static void show_notice(IBusLayaEngine *e) {
    const char *notice = class_of(e)->notice;
    if (!notice || e->notice_off) return;
    ibus_engine_update_auxiliary_text((IBusEngine *)e, ibus_text_new_from_string(notice), TRUE);
}

/* The title of the note most related to the sentence typed, as auxiliary
 * text (the panel draws it above the candidates); hidden when none. The
 * index is asked only when the sentence's terms change (the library). */
static void show_note(IBusLayaEngine *e, const laya_view *v) {
    if (!v->n_notes) {
        hide_note(e);
        return;
    }
    char *line = g_strdup_printf("\u2192 %s", v->notes[0].title);
    ibus_engine_update_auxiliary_text((IBusEngine *)e, ibus_text_new_from_string(line), TRUE);
    g_free(line);
    e->note_shown = TRUE;
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

/* The view for the record as it is now: the ghost, the list and the note. */
static gboolean compute(gpointer data) {
    IBusLayaEngine *e = data;
    e->idle_id = 0;
    hide_ghost(e);
    laya_view v = {0};
    const unsigned want = LAYA_WANT_SUGGEST | LAYA_WANT_DECIDE | (class_of(e)->notes ? LAYA_WANT_NOTES : 0);
    /* the model is asked about this context (not while off, not for an empty record) */
    gboolean asked = FALSE;
    if (suggesting(e) && e->typed->len) {
        asked = event(e, LAYA_INPUT_CONTEXT, e->typed->str, e->typed->len, want, &v) == LAYA_OK;
        /* a view not drawn is not judged: the next event drops it */
        e->synced = asked;
    }
    for (int i = 0; asked && i < v.n; i++)
        if (v.list[i].len) {
            e->pick[e->n_cand] = i;
            e->cand[e->n_cand++] = g_strndup(v.list[i].text, v.list[i].len);
        }
    if (e->n_cand) {
        show(e);
        show_note(e, &v);
    } else {
        hide_table(e);
    }
    /* after what is shown has gone out, and below every other event; only
     * where the gate let the model be asked */
    if (asked && v.gate != 2 && !e->ahead_id) e->ahead_id = g_idle_add_full(G_PRIORITY_LOW, prefetch, e, NULL);
    return G_SOURCE_REMOVE;
}

/* Does to the client's text what a KEY's or ACCEPT's view says: erase
 * v->erase bytes before the cursor (IBus counts characters), then commit
 * v->insert; the record follows. */
static void apply_view(IBusLayaEngine *e, const laya_view *v) {
    IBusEngine *ie = (IBusEngine *)e;
    size_t erase = MIN(v->erase, e->typed->len);
    if (erase) {
        glong chars = g_utf8_strlen(e->typed->str + e->typed->len - erase, (gssize)erase);
        ibus_engine_delete_surrounding_text(ie, -(gint)chars, (guint)chars);
        g_string_truncate(e->typed, e->typed->len - erase);
    }
    if (v->insert_len) {
        char *text = g_strndup(v->insert, v->insert_len);
        ibus_engine_commit_text(ie, ibus_text_new_from_string(text));
        g_free(text);
        g_string_append_len(e->typed, v->insert, (gssize)v->insert_len);
    }
    keep_tail(e->typed);
}

static gboolean is_enter(guint keyval) {
    return keyval == IBUS_KEY_Return || keyval == IBUS_KEY_KP_Enter || keyval == IBUS_KEY_ISO_Enter;
}

/* Takes shown suggestion i: the library says what to insert. */
static void accept(IBusLayaEngine *e, int i) {
    if (i < 0 || i >= e->n_cand) return;
    const int index = e->pick[i];
    hide(e);
    cancel_pending(e);
    laya_view v;
    send_event(e, (laya_input){.kind = LAYA_INPUT_ACCEPT, .index = index}, &v);
    /* a store error after the rest was done leaves the view right */
    if (v.insert) apply_view(e, &v);
    else e->synced = FALSE;
    e->typed_since = TRUE;
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
 * keys still in flight; a record that extends it is kept. A rewritten
 * record is no longer the session's context (synced). */
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
    keep_tail(e->typed);
    e->synced = FALSE;
}

/* A character typed, key[0..n): TRUE when the engine applied what the
 * library made of it (a blank absorbed after an accepted one, punctuation
 * before that blank), FALSE when the key goes through to the client as it
 * is. The ghost goes at once (it no longer follows the text); the list
 * stays until this key's suggestions replace it. */
static gboolean type_key(IBusLayaEngine *e, const char *key, size_t n) {
    cancel_pending(e);
    hide_ghost(e);
    sync_context(e);
    laya_view v = {0};
    if (suggesting(e) && in_step(e)) event(e, LAYA_INPUT_KEY, key, n, 0, &v);
    /* a store error after the rest was done leaves the view right */
    gboolean ours = v.insert && !(v.erase == 0 && v.insert_len == n && !memcmp(v.insert, key, n));
    if (ours) {
        apply_view(e, &v);
    } else {
        g_string_append_len(e->typed, key, (gssize)n);
        keep_tail(e->typed);
        /* off, or refused: the next event sets the context first (in_step) */
        if (!v.insert) e->synced = FALSE;
    }
    e->typed_since = TRUE;
    e->idle_id = g_idle_add(compute, e);
    return ours;
}

/* Backspace over the record's last character (the key goes through). */
static void erase(IBusLayaEngine *e) {
    hide_ghost(e);
    laya_view v;
    if (!suggesting(e) || !in_step(e) || event(e, LAYA_INPUT_ERASE, NULL, 0, 0, &v) != LAYA_OK) e->synced = FALSE;
    g_string_truncate(e->typed, utf8_prev((const uint8_t *)e->typed->str, e->typed->len));
    e->idle_id = g_idle_add(compute, e);
}

/* Esc: the list passed over, and everything off the screen. */
static void dismiss(IBusLayaEngine *e) {
    laya_view v;
    event(e, LAYA_INPUT_DISMISS, NULL, 0, 0, &v);
    hide(e);
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
        forget(e, FALSE);
        return FALSE;
    }
    if (is_modifier(keyval)) return FALSE;
    guint mods = state & (IBUS_SHIFT_MASK | IBUS_CONTROL_MASK | IBUS_MOD1_MASK | IBUS_SUPER_MASK | IBUS_META_MASK);
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
            dismiss(e);
            return TRUE;
        }
        if (mods == IBUS_MOD1_MASK && keyval >= IBUS_KEY_1 && keyval < IBUS_KEY_1 + (guint)e->n_cand) {
            accept(e, (int)(keyval - IBUS_KEY_1));
            return TRUE;
        }
    }
    gunichar c = ibus_keyval_to_unicode(keyval);
    if (c >= 0x20 && c != 0x7f && !(mods & ~IBUS_SHIFT_MASK)) {
        char key[6];
        return type_key(e, key, (size_t)g_unichar_to_utf8(c, key));
    }
    /* Any other key may move the cursor or edit in ways we cannot follow:
     * Backspace we can, the rest ends the line. */
    cancel_pending(e);
    if (keyval == IBUS_KEY_BackSpace && !mods && e->typed->len) erase(e);
    else forget(e, is_enter(keyval) && !(mods & ~IBUS_SHIFT_MASK));
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
    forget(e, FALSE);
    e->surr_fresh = FALSE;
    refresh_settings(e);
    ibus_engine_register_properties(ie, class_of(e)->props);
    e->notice_off = FALSE;
    show_notice(e);
}

static void focus_out(IBusEngine *ie) {
    forget((IBusLayaEngine *)ie, FALSE);
}

/* The client changed the text or the cursor itself: a click, an edit of
 * its own, and GTK after a Backspace over a pre-edit (our ghost). That
 * ends no line: a line committed here would be learned half-erased (the
 * name being erased, "Hi Zorblat"). Where the client has surrounding text
 * the next key reads where the cursor is (sync_context) and the line is
 * committed when it ends; without, the record is unknown from here and
 * what was typed before is not learned. The list is dropped unjudged. */
static void reset(IBusEngine *ie) {
    IBusLayaEngine *e = (IBusLayaEngine *)ie;
    cancel_pending(e);
    hide(e);
    if (!(ie->client_capabilities & IBUS_CAP_SURROUNDING_TEXT) || !e->surr_fresh) {
        g_string_truncate(e->typed, 0);
        e->typed_since = FALSE;
    }
    laya_view v;
    e->synced = suggesting(e) && event(e, LAYA_INPUT_FOCUS, e->typed->str, e->typed->len, 0, &v) == LAYA_OK;
}

static void enable(IBusEngine *ie) {
    /* Tells the client we use surrounding text (see ibus_engine_get_surrounding_text). */
    ibus_engine_get_surrounding_text(ie, NULL, NULL, NULL);
    refresh_settings((IBusLayaEngine *)ie);
    show_notice((IBusLayaEngine *)ie);
}

static void disable(IBusEngine *ie) {
    forget((IBusLayaEngine *)ie, FALSE);
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
