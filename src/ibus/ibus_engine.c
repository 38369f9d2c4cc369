/* ibus_engine.c - the Laya IBus engine: ghost text and a candidate list.
 *
 * Contract (issue 7):
 *  - The application's text is never changed unless the user accepts a
 *    suggestion: every key but the few below is passed through unchanged
 *    (process_key_event returns FALSE). The ghost is a pre-edit string in
 *    grey with the cursor at its start, in IBUS_ENGINE_PREEDIT_CLEAR mode,
 *    so a focus change or reset drops it instead of committing it.
 *  - While a ghost is shown: Tab accepts the first suggestion, Alt+1..3 or a
 *    click in the candidate list accepts that one, Esc dismisses. Those keys
 *    are consumed; everything else passes through.
 *  - Context: the text before the cursor from the client's surrounding text
 *    where the client provides it, else the engine's own record of the keys
 *    typed since the last focus change, reset or cursor movement.
 *  - Privacy: the content type is read on every key (IBus forwards it only
 *    when it changes). PASSWORD and PIN fields: nothing is shown, nothing
 *    recorded, no model call. Nothing typed is ever logged or written.
 *    (The PRIVATE hint forbids learning; this engine does not learn yet, so
 *    it has nothing more to switch off there.)
 *  - Suggestions are computed after the key's reply is sent (an idle
 *    callback), so the key reaches the application first; keys that arrive
 *    faster than suggestions are computed coalesce into one computation for
 *    the newest context. */
#include "ibus/ibus_laya.h"

#include <string.h>

enum { N_CANDIDATES = 3, MAX_RECORD = 4096 };

typedef struct {
    IBusEngine parent;
    laya_session *session;     /* NULL when there is no model */
    GString *typed;            /* our record of the text before the cursor */
    IBusLookupTable *table;
    char *cand[N_CANDIDATES];  /* shown suggestions (owned); cand[0] is the ghost */
    int n_cand;
    guint idle_id;             /* pending suggestion computation, 0 if none */
} IBusLayaEngine;

typedef struct {
    IBusEngineClass parent;
    const laya_model *model;
} IBusLayaEngineClass;

G_DEFINE_TYPE(IBusLayaEngine, ibus_laya_engine, IBUS_TYPE_ENGINE)

void ibus_laya_set_model(const laya_model *m) {
    IBusLayaEngineClass *k = g_type_class_ref(IBUS_TYPE_LAYA_ENGINE);
    k->model = m;
    g_type_class_unref(k);
}

static const laya_model *model_of(IBusLayaEngine *e) {
    return ((IBusLayaEngineClass *)G_OBJECT_GET_CLASS(e))->model;
}

static void ibus_laya_engine_init(IBusLayaEngine *e) {
    e->typed = g_string_new(NULL);
    e->table = ibus_lookup_table_new(N_CANDIDATES, 0, TRUE, TRUE);
    g_object_ref_sink(e->table);
    ibus_lookup_table_set_orientation(e->table, IBUS_ORIENTATION_VERTICAL);
    const laya_model *m = model_of(e);
    if (m && laya_session_new(m, &e->session) != LAYA_OK) e->session = NULL;
}

static void clear_candidates(IBusLayaEngine *e) {
    for (int i = 0; i < e->n_cand; i++) g_free(e->cand[i]);
    e->n_cand = 0;
}

static void cancel_pending(IBusLayaEngine *e) {
    if (e->idle_id) g_source_remove(e->idle_id);
    e->idle_id = 0;
}

/* Takes the ghost and the list off the screen. */
static void hide(IBusLayaEngine *e) {
    IBusEngine *ie = (IBusEngine *)e;
    if (!e->n_cand) return;
    clear_candidates(e);
    ibus_engine_update_preedit_text_with_mode(ie, ibus_text_new_from_static_string(""), 0, FALSE,
                                              IBUS_ENGINE_PREEDIT_CLEAR);
    ibus_engine_hide_lookup_table(ie);
}

/* Forgets the context: the cursor may be anywhere now. */
static void forget(IBusLayaEngine *e) {
    cancel_pending(e);
    hide(e);
    g_string_truncate(e->typed, 0);
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

/* PASSWORD and PIN fields get nothing from us. */
static gboolean silent_field(IBusEngine *ie) {
    guint purpose = 0, hints = 0;
    ibus_engine_get_content_type(ie, &purpose, &hints);
    return purpose == IBUS_INPUT_PURPOSE_PASSWORD || purpose == IBUS_INPUT_PURPOSE_PIN;
}

static void show(IBusLayaEngine *e) {
    IBusEngine *ie = (IBusEngine *)e;
    const char *ghost = e->cand[0];
    IBusText *t = ibus_text_new_from_string(ghost);
    ibus_text_append_attribute(t, IBUS_ATTR_TYPE_FOREGROUND, 0x808080, 0, (gint)g_utf8_strlen(ghost, -1));
    /* Cursor 0: the caret stays where the user is typing, before the ghost. */
    ibus_engine_update_preedit_text_with_mode(ie, t, 0, TRUE, IBUS_ENGINE_PREEDIT_CLEAR);
    ibus_lookup_table_clear(e->table);
    for (int i = 0; i < e->n_cand; i++) {
        char label[4] = {(char)('1' + i), 0};
        ibus_lookup_table_append_candidate(e->table, ibus_text_new_from_string(e->cand[i]));
        ibus_lookup_table_set_label(e->table, (guint)i, ibus_text_new_from_string(label));
    }
    ibus_engine_update_lookup_table(ie, e->table, TRUE);
}

static gboolean compute(gpointer data) {
    IBusLayaEngine *e = data;
    e->idle_id = 0;
    hide(e);
    if (!e->session || !e->typed->len || silent_field((IBusEngine *)e)) return G_SOURCE_REMOVE;
    laya_suggestion out[N_CANDIDATES];
    int n = 0;
    if (laya_session_set_context(e->session, e->typed->str, e->typed->len) != LAYA_OK ||
        laya_suggest(e->session, N_CANDIDATES, out, &n) != LAYA_OK)
        return G_SOURCE_REMOVE;
    for (int i = 0; i < n; i++)
        if (out[i].len) e->cand[e->n_cand++] = g_strndup(out[i].text, out[i].len);
    if (e->n_cand) show(e);
    return G_SOURCE_REMOVE;
}

static void accept(IBusLayaEngine *e, int i) {
    if (i < 0 || i >= e->n_cand) return;
    char *text = e->cand[i];
    e->cand[i] = NULL;
    hide(e);
    ibus_engine_commit_text((IBusEngine *)e, ibus_text_new_from_string(text));
    g_string_append(e->typed, text);
    g_free(text);
}

/* Brings e->typed in line with the client's view of the text before the
 * cursor, where it has one. A client's surrounding text may lag by the
 * keys still in flight; a record that extends it is kept. */
static void sync_context(IBusLayaEngine *e) {
    IBusEngine *ie = (IBusEngine *)e;
    if (!(ie->client_capabilities & IBUS_CAP_SURROUNDING_TEXT)) return;
    IBusText *t = NULL;
    guint cursor = 0, anchor = 0;
    ibus_engine_get_surrounding_text(ie, &t, &cursor, &anchor);
    if (!t || !t->text) return;
    guint at = MIN(cursor, anchor);   /* a typed key replaces the selection */
    glong nchars = g_utf8_strlen(t->text, -1);
    if (at > (guint)nchars) return;
    size_t len = (size_t)(g_utf8_offset_to_pointer(t->text, at) - t->text);
    if (e->typed->len > len && !memcmp(e->typed->str, t->text, len)) return;
    g_string_truncate(e->typed, 0);
    g_string_append_len(e->typed, t->text, (gssize)len);
}

static gboolean is_modifier(guint keyval) {
    return (keyval >= IBUS_KEY_Shift_L && keyval <= IBUS_KEY_Hyper_R) ||
           (keyval >= IBUS_KEY_ISO_Lock && keyval <= IBUS_KEY_ISO_Level5_Lock) || keyval == IBUS_KEY_Num_Lock;
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
    if (e->n_cand) {
        if (keyval == IBUS_KEY_Tab && !mods) {
            accept(e, 0);
            return TRUE;
        }
        if (keyval == IBUS_KEY_Escape && !mods) {
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
        cancel_pending(e);
        hide(e);
        sync_context(e);
        if (e->typed->len > MAX_RECORD) g_string_erase(e->typed, 0, (gssize)(e->typed->len - MAX_RECORD / 2));
        g_string_append_unichar(e->typed, c);
        e->idle_id = g_idle_add(compute, e);
        return FALSE;
    }
    /* Any other key may move the cursor or edit in ways we cannot follow:
     * Backspace we can, the rest makes us re-read the context. */
    cancel_pending(e);
    hide(e);
    if (keyval == IBUS_KEY_BackSpace && !mods && e->typed->len) {
        const char *prev = g_utf8_find_prev_char(e->typed->str, e->typed->str + e->typed->len);
        g_string_truncate(e->typed, prev ? (gsize)(prev - e->typed->str) : 0);
    } else {
        g_string_truncate(e->typed, 0);
    }
    return FALSE;
}

static void candidate_clicked(IBusEngine *ie, guint index, guint button, guint state) {
    accept((IBusLayaEngine *)ie, (int)index);
}

static void focus_in(IBusEngine *ie) {
    forget((IBusLayaEngine *)ie);
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
    ec->focus_in = focus_in;
    ec->focus_out = focus_out;
    ec->reset = reset;
    ec->enable = enable;
    ec->disable = disable;
}
