/* settings_main.c - `laya-settings`, the settings window (GTK 3), opened
 * by `laya settings`, the IBus engine's property menu and the fcitx5
 * addon's Configure entry.
 *
 *   laya-settings [--help | --version]
 *
 * What it shows and where each thing lives:
 *  - Suggestions on/off, how many (1..9), the accept key (Tab, Right, End):
 *    $XDG_CONFIG_HOME/laya/settings.ini (src/util/settings.h has the format).
 *    It is read with the engines' own reader (settings_load), so the window
 *    shows what they do, and written with GKeyFile, which keeps what it does
 *    not know (comments, a newer version's keys) and replaces the file by a
 *    rename, so an engine never reads half a file. Every change is saved at
 *    once; the engines pick it up at their next focus change.
 *  - Incognito and what was learned: the personal memory ($LAYA_MEMORY,
 *    else $XDG_DATA_HOME/laya/memory.db), through include/laya.h. Forget
 *    removes the selected text (laya_memory_forget_text); Forget all asks
 *    first. The list is read again whenever the window gets the focus.
 *
 * The window never blocks an engine: it is its own process (the engines
 * start it and do not wait), it holds no lock on the memory between
 * requests (SQLite in WAL mode: a reader never stops a writer), and a file
 * it cannot read or write is said in the window's status line, never
 * fatal. One window per desktop session: a second start presents the
 * first (GtkApplication; without a session bus each start is its own). */
#include <errno.h>
#include <gtk/gtk.h>
#include <stdio.h>
#include <string.h>

#include "engine/front.h"
#include "util/settings.h"

enum { COL_SHOWN, COL_COUNT, COL_LAST, COL_TEXT, N_COLS };   /* COL_TEXT: the exact bytes (GBytes) */

typedef struct {
    GtkWidget *win, *enabled, *count, *accept[3], *incognito, *search, *view, *forget, *forget_all, *status;
    GtkWidget *summary;     /* what the store holds, as `laya memory list` counts it */
    GtkListStore *store;
    GtkTreeModel *filter;
    char path[SETTINGS_PATH_MAX];   /* settings.ini; "" when there is no place for it */
    laya_memory *mem;               /* NULL: the memory could not be opened (the status line says why) */
    gboolean loading;               /* setting widgets from the file: do not save */
    int64_t texts, commits;
    int64_t feedback;       /* feedback entries in the store (-1: unknown) */
} settings_ui;

static void status(settings_ui *u, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void status(settings_ui *u, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    gtk_label_set_text(GTK_LABEL(u->status), s);
    g_free(s);
}

/* ---- the settings file ---------------------------------------------------- */

static void save(settings_ui *u) {
    if (u->loading) return;
    if (!u->path[0]) {
        status(u, "Not saved: there is no place for the settings file ($XDG_CONFIG_HOME or $HOME)");
        return;
    }
    GKeyFile *kf = g_key_file_new();
    GError *e = NULL;
    /* What is there is kept: comments, other groups, a newer Laya's keys. */
    if (!g_key_file_load_from_file(kf, u->path, G_KEY_FILE_KEEP_COMMENTS, &e)) g_clear_error(&e);
    int accept = 0;
    for (int i = 0; i < 3; i++)
        if (gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(u->accept[i]))) accept = i;
    g_key_file_set_boolean(kf, "suggestions", "enabled",
                           gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(u->enabled)));
    g_key_file_set_integer(kf, "suggestions", "count", gtk_spin_button_get_value_as_int(GTK_SPIN_BUTTON(u->count)));
    g_key_file_set_string(kf, "suggestions", "accept_key", settings_accept_name((settings_accept)accept));
    char *dir = g_path_get_dirname(u->path);
    if (g_mkdir_with_parents(dir, 0700) != 0)
        status(u, "Not saved: cannot create %s: %s", dir, g_strerror(errno));
    else if (!g_key_file_save_to_file(kf, u->path, &e))
        status(u, "Not saved: %s", e->message);
    else
        status(u, "Saved in %s", u->path);
    g_clear_error(&e);
    g_free(dir);
    g_key_file_free(kf);
}

static void load(settings_ui *u) {
    settings_values v;
    settings_defaults(&v);
    char err[512] = "";
    if (settings_default_path(u->path, sizeof u->path, err, sizeof err) != LAYA_OK) u->path[0] = 0;
    else if (settings_load(u->path, &v, err, sizeof err) == LAYA_OK) err[0] = 0;
    u->loading = TRUE;
    gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(u->enabled), v.enabled);
    gtk_spin_button_set_value(GTK_SPIN_BUTTON(u->count), v.count);
    gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(u->accept[v.accept]), TRUE);
    u->loading = FALSE;
    if (*err) status(u, "%s", err);
}

static void on_setting(GtkWidget *w, settings_ui *u) {
    /* A radio button going off also signals: only the one going on saves. */
    if (GTK_IS_RADIO_BUTTON(w) && !gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(w))) return;
    gtk_widget_set_sensitive(u->count, gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(u->enabled)));
    save(u);
}

/* ---- the memory ------------------------------------------------------------- */

/* One line of the list as shown: line breaks and tabs made visible, bytes
 * that are not UTF-8 (only in a damaged store) as U+FFFD. */
static char *shown_text(const char *text, size_t len) {
    char *valid = g_utf8_make_valid(text, (gssize)len);
    GString *s = g_string_new(NULL);
    for (const char *p = valid; *p; p++) {
        if (*p == '\n') g_string_append(s, "\u23ce");
        else if (*p == '\t') g_string_append(s, "\u21e5");
        else g_string_append_c(s, *p);
    }
    g_free(valid);
    return g_string_free(s, FALSE);
}

static int add_row(void *ctx, const char *text, size_t len, int64_t count, int64_t first, int64_t last) {
    settings_ui *u = ctx;
    char *shown = shown_text(text, len);
    GDateTime *t = g_date_time_new_from_unix_local(last);
    char *when = t ? g_date_time_format(t, "%Y-%m-%d %H:%M") : g_strdup("?");
    GBytes *b = g_bytes_new(text, len);
    gtk_list_store_insert_with_values(u->store, NULL, -1, COL_SHOWN, shown, COL_COUNT, (gint64)count, COL_LAST, when,
                                      COL_TEXT, b, -1);
    g_bytes_unref(b);
    g_free(when);
    if (t) g_date_time_unref(t);
    g_free(shown);
    u->texts++;
    u->commits += count;
    return 0;
}

static void select_first(settings_ui *u) {
    GtkTreeSelection *sel = gtk_tree_view_get_selection(GTK_TREE_VIEW(u->view));
    GtkTreeIter it;
    if (!gtk_tree_selection_get_selected(sel, NULL, NULL) && gtk_tree_model_get_iter_first(u->filter, &it))
        gtk_tree_selection_select_iter(sel, &it);
}

static void update_buttons(settings_ui *u) {
    GtkTreeSelection *sel = gtk_tree_view_get_selection(GTK_TREE_VIEW(u->view));
    gtk_widget_set_sensitive(u->forget, u->mem && gtk_tree_selection_get_selected(sel, NULL, NULL));
    /* Forget all is there whenever the store holds anything, feedback alone
     * included (`laya memory forget --all` removes both) */
    gtk_widget_set_sensitive(u->forget_all, u->mem && (u->texts > 0 || u->feedback != 0));
}

/* Selects the visible row holding exactly `text`; 0 if there is none. */
static int select_text(settings_ui *u, GBytes *text) {
    GtkTreeIter it;
    for (gboolean ok = gtk_tree_model_get_iter_first(u->filter, &it); ok; ok = gtk_tree_model_iter_next(u->filter, &it)) {
        GBytes *b = NULL;
        gtk_tree_model_get(u->filter, &it, COL_TEXT, &b, -1);
        gboolean same = b && g_bytes_equal(b, text);
        if (b) g_bytes_unref(b);
        if (same) {
            gtk_tree_selection_select_iter(gtk_tree_view_get_selection(GTK_TREE_VIEW(u->view)), &it);
            return 1;
        }
    }
    return 0;
}

static int64_t feedback_entries(settings_ui *u);

/* Reads the list and the incognito switch from the store again. */
static void reload(settings_ui *u) {
    if (!u->mem) return;
    GtkTreeModel *m;
    GtkTreeIter it;
    GBytes *was = NULL;
    if (gtk_tree_selection_get_selected(gtk_tree_view_get_selection(GTK_TREE_VIEW(u->view)), &m, &it))
        gtk_tree_model_get(m, &it, COL_TEXT, &was, -1);
    gtk_list_store_clear(u->store);
    u->texts = u->commits = 0;
    char err[512] = "";
    if (laya_memory_list(u->mem, add_row, u, err, sizeof err) != LAYA_OK) status(u, "Cannot list the memory: %s", err);
    u->feedback = feedback_entries(u);
    /* the same set `laya memory list` and `list --feedback` count */
    char sum[256];
    snprintf(sum, sizeof sum, "%lld texts from %lld commits; %lld feedback entries (suggestions you took or "
             "passed over, kept with the text they were shown in)",
             (long long)u->texts, (long long)u->commits, (long long)(u->feedback > 0 ? u->feedback : 0));
    gtk_label_set_text(GTK_LABEL(u->summary), sum);
    int on = 0;
    if (laya_memory_get_incognito(u->mem, &on, err, sizeof err) == LAYA_OK) {
        u->loading = TRUE;
        gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(u->incognito), on);
        u->loading = FALSE;
    }
    if (!was || !select_text(u, was)) select_first(u);
    if (was) g_bytes_unref(was);
    update_buttons(u);
}

static gboolean matches(GtkTreeModel *m, GtkTreeIter *it, gpointer data) {
    settings_ui *u = data;
    const char *q = gtk_entry_get_text(GTK_ENTRY(u->search));
    if (!*q) return TRUE;
    char *shown = NULL;
    gtk_tree_model_get(m, it, COL_SHOWN, &shown, -1);
    if (!shown) return FALSE;
    /* Case-folded substring: "tom" finds "Tom"; CJK text as it is. */
    char *a = g_utf8_casefold(shown, -1), *b = g_utf8_casefold(q, -1);
    gboolean yes = strstr(a, b) != NULL;
    g_free(a);
    g_free(b);
    g_free(shown);
    return yes;
}

static void on_search(GtkSearchEntry *e, settings_ui *u) {
    gtk_tree_model_filter_refilter(GTK_TREE_MODEL_FILTER(u->filter));
    select_first(u);
    update_buttons(u);
}

static void on_incognito(GtkToggleButton *b, settings_ui *u) {
    if (u->loading || !u->mem) return;
    int on = gtk_toggle_button_get_active(b);
    char err[512] = "";
    if (laya_memory_set_incognito(u->mem, on, err, sizeof err) != LAYA_OK) status(u, "Incognito not changed: %s", err);
    else status(u, on ? "Incognito is on: Laya learns nothing until you switch it off"
                      : "Incognito is off: Laya learns from what you type again");
}

/* The feedback entries in the memory (what a forget also removes, with the
 * commits it names), -1 if they cannot be read. */
static int64_t feedback_entries(settings_ui *u) {
    int64_t n = 0;
    return front_feedback_entries(u->mem, &n, NULL, 0) == LAYA_OK ? n : -1;
}

/* " and N feedback entries" when a forget took any (the count before, then). */
static const char *feedback_gone(settings_ui *u, int64_t before, char *buf, size_t cap) {
    int64_t after = before >= 0 ? feedback_entries(u) : -1;
    buf[0] = 0;
    if (after >= 0 && before > after)
        snprintf(buf, cap, " and %lld feedback entr%s", (long long)(before - after), before - after == 1 ? "y" : "ies");
    return buf;
}

static void on_forget(GtkButton *b, settings_ui *u) {
    GtkTreeSelection *sel = gtk_tree_view_get_selection(GTK_TREE_VIEW(u->view));
    GtkTreeModel *m;
    GtkTreeIter it;
    if (!u->mem || !gtk_tree_selection_get_selected(sel, &m, &it)) return;
    GBytes *bytes = NULL;
    char *shown = NULL;
    gtk_tree_model_get(m, &it, COL_TEXT, &bytes, COL_SHOWN, &shown, -1);
    gsize len = 0;
    const char *text = g_bytes_get_data(bytes, &len);
    int64_t removed = 0, fb0 = feedback_entries(u);
    char err[512] = "", fb[64];
    if (laya_memory_forget_text(u->mem, text, len, &removed, err, sizeof err) != LAYA_OK)
        status(u, "Not forgotten: %s", err);
    else
        status(u, "Forgot \u201c%s\u201d (%lld commit%s%s)", shown, (long long)removed, removed == 1 ? "" : "s",
               feedback_gone(u, fb0, fb, sizeof fb));
    g_bytes_unref(bytes);
    g_free(shown);
    reload(u);
}

static void on_forget_all(GtkButton *b, settings_ui *u) {
    if (!u->mem) return;
    GtkWidget *d = gtk_message_dialog_new(GTK_WINDOW(u->win), GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT,
                                          GTK_MESSAGE_WARNING, GTK_BUTTONS_NONE,
                                          "Forget everything Laya has learned?");
    gtk_message_dialog_format_secondary_text(GTK_MESSAGE_DIALOG(d),
                                             "%lld texts from %lld commits and %lld feedback entries (the "
                                             "suggestions you took or passed over) will be removed from this "
                                             "computer. This cannot be undone.",
                                             (long long)u->texts, (long long)u->commits,
                                             (long long)(u->feedback > 0 ? u->feedback : 0));
    gtk_dialog_add_button(GTK_DIALOG(d), "_Cancel", GTK_RESPONSE_CANCEL);
    GtkWidget *yes = gtk_dialog_add_button(GTK_DIALOG(d), "_Forget all", GTK_RESPONSE_ACCEPT);
    gtk_style_context_add_class(gtk_widget_get_style_context(yes), "destructive-action");
    gtk_dialog_set_default_response(GTK_DIALOG(d), GTK_RESPONSE_CANCEL);
    gint r = gtk_dialog_run(GTK_DIALOG(d));
    gtk_widget_destroy(d);
    if (r != GTK_RESPONSE_ACCEPT) {
        status(u, "Nothing was forgotten");
        return;
    }
    int64_t removed = 0, fb0 = feedback_entries(u);
    char err[512] = "", fb[64];
    if (laya_memory_forget_all(u->mem, &removed, err, sizeof err) != LAYA_OK) status(u, "Not forgotten: %s", err);
    else
        status(u, "Forgot everything: %lld commits%s removed", (long long)removed, feedback_gone(u, fb0, fb, sizeof fb));
    reload(u);
}

static gboolean on_focus(GtkWidget *w, GdkEvent *e, settings_ui *u) {
    /* Another process may have learned or forgotten meanwhile; the
     * selection is kept when the same text is still there. */
    reload(u);
    return FALSE;
}

/* ---- the window --------------------------------------------------------------- */

static GtkWidget *heading(const char *text) {
    GtkWidget *l = gtk_label_new(NULL);
    char *m = g_markup_printf_escaped("<b>%s</b>", text);
    gtk_label_set_markup(GTK_LABEL(l), m);
    g_free(m);
    gtk_widget_set_halign(l, GTK_ALIGN_START);
    return l;
}

static GtkWidget *hint(const char *text) {
    GtkWidget *l = gtk_label_new(text);
    gtk_widget_set_halign(l, GTK_ALIGN_START);
    gtk_label_set_line_wrap(GTK_LABEL(l), TRUE);
    gtk_label_set_xalign(GTK_LABEL(l), 0);
    gtk_style_context_add_class(gtk_widget_get_style_context(l), "dim-label");
    return l;
}

static void build(settings_ui *u, GtkApplication *app) {
    u->win = gtk_application_window_new(app);
    gtk_window_set_title(GTK_WINDOW(u->win), "Laya settings");
    gtk_window_set_default_size(GTK_WINDOW(u->win), 560, 620);
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8);
    gtk_container_set_border_width(GTK_CONTAINER(box), 16);
    gtk_container_add(GTK_CONTAINER(u->win), box);

    gtk_box_pack_start(GTK_BOX(box), heading("Suggestions"), FALSE, FALSE, 0);
    u->enabled = gtk_check_button_new_with_mnemonic("_Show suggestions while I type");
    gtk_box_pack_start(GTK_BOX(box), u->enabled, FALSE, FALSE, 0);
    GtkWidget *grid = gtk_grid_new();
    gtk_grid_set_row_spacing(GTK_GRID(grid), 6);
    gtk_grid_set_column_spacing(GTK_GRID(grid), 12);
    gtk_widget_set_margin_start(grid, 24);
    GtkWidget *l = gtk_label_new_with_mnemonic("How _many:");
    gtk_widget_set_halign(l, GTK_ALIGN_START);
    u->count = gtk_spin_button_new_with_range(SETTINGS_MIN_COUNT, SETTINGS_MAX_COUNT, 1);
    gtk_label_set_mnemonic_widget(GTK_LABEL(l), u->count);
    gtk_grid_attach(GTK_GRID(grid), l, 0, 0, 1, 1);
    gtk_grid_attach(GTK_GRID(grid), u->count, 1, 0, 1, 1);
    gtk_grid_attach(GTK_GRID(grid), hint("Alt+1 to Alt+9 pick from the list"), 2, 0, 1, 1);
    l = gtk_label_new("Accept with:");
    gtk_widget_set_halign(l, GTK_ALIGN_START);
    gtk_grid_attach(GTK_GRID(grid), l, 0, 1, 1, 1);
    GtkWidget *keys = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12);
    static const char *const key_labels[3] = {"_Tab", "_Right arrow", "_End"};
    for (int i = 0; i < 3; i++) {
        u->accept[i] = gtk_radio_button_new_with_mnemonic_from_widget(i ? GTK_RADIO_BUTTON(u->accept[0]) : NULL,
                                                                      key_labels[i]);
        gtk_box_pack_start(GTK_BOX(keys), u->accept[i], FALSE, FALSE, 0);
    }
    gtk_grid_attach(GTK_GRID(grid), keys, 1, 1, 2, 1);
    gtk_box_pack_start(GTK_BOX(box), grid, FALSE, FALSE, 0);
    gtk_box_pack_start(GTK_BOX(box), hint("The accept key takes the first suggestion; Esc dismisses the list."),
                       FALSE, FALSE, 0);

    gtk_box_pack_start(GTK_BOX(box), gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), FALSE, FALSE, 4);
    gtk_box_pack_start(GTK_BOX(box), heading("Privacy"), FALSE, FALSE, 0);
    u->incognito = gtk_check_button_new_with_mnemonic("_Incognito: learn nothing from what I type");
    gtk_box_pack_start(GTK_BOX(box), u->incognito, FALSE, FALSE, 0);
    gtk_box_pack_start(GTK_BOX(box),
                       hint("Everywhere at once (IBus, fcitx5, laya type), and until you switch it off. "
                            "Password fields and private windows are never learned from."),
                       FALSE, FALSE, 0);

    gtk_box_pack_start(GTK_BOX(box), gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), FALSE, FALSE, 4);
    l = gtk_label_new(NULL);
    gtk_label_set_markup_with_mnemonic(GTK_LABEL(l), "<b>_What Laya has learned</b>");
    gtk_widget_set_halign(l, GTK_ALIGN_START);
    gtk_box_pack_start(GTK_BOX(box), l, FALSE, FALSE, 0);
    u->summary = gtk_label_new("");
    gtk_label_set_line_wrap(GTK_LABEL(u->summary), TRUE);
    gtk_label_set_xalign(GTK_LABEL(u->summary), 0);
    gtk_box_pack_start(GTK_BOX(box), u->summary, FALSE, FALSE, 0);
    GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
    GtkWidget *fl = gtk_label_new_with_mnemonic("_Find:");
    u->search = gtk_search_entry_new();
    gtk_label_set_mnemonic_widget(GTK_LABEL(fl), u->search);
    gtk_box_pack_start(GTK_BOX(row), fl, FALSE, FALSE, 0);
    gtk_box_pack_start(GTK_BOX(row), u->search, TRUE, TRUE, 0);
    gtk_box_pack_start(GTK_BOX(box), row, FALSE, FALSE, 0);

    u->store = gtk_list_store_new(N_COLS, G_TYPE_STRING, G_TYPE_INT64, G_TYPE_STRING, G_TYPE_BYTES);
    u->filter = gtk_tree_model_filter_new(GTK_TREE_MODEL(u->store), NULL);
    gtk_tree_model_filter_set_visible_func(GTK_TREE_MODEL_FILTER(u->filter), matches, u, NULL);
    u->view = gtk_tree_view_new_with_model(u->filter);
    gtk_label_set_mnemonic_widget(GTK_LABEL(l), u->view);
    GtkCellRenderer *r = gtk_cell_renderer_text_new();
    g_object_set(r, "ellipsize", PANGO_ELLIPSIZE_END, NULL);
    GtkTreeViewColumn *c = gtk_tree_view_column_new_with_attributes("Text", r, "text", COL_SHOWN, NULL);
    gtk_tree_view_column_set_expand(c, TRUE);
    gtk_tree_view_append_column(GTK_TREE_VIEW(u->view), c);
    gtk_tree_view_append_column(GTK_TREE_VIEW(u->view), gtk_tree_view_column_new_with_attributes(
                                                            "Times", gtk_cell_renderer_text_new(), "text", COL_COUNT, NULL));
    gtk_tree_view_append_column(GTK_TREE_VIEW(u->view),
                                gtk_tree_view_column_new_with_attributes("Last used", gtk_cell_renderer_text_new(),
                                                                         "text", COL_LAST, NULL));
    gtk_tree_view_set_enable_search(GTK_TREE_VIEW(u->view), FALSE);
    GtkWidget *scroll = gtk_scrolled_window_new(NULL, NULL);
    gtk_scrolled_window_set_shadow_type(GTK_SCROLLED_WINDOW(scroll), GTK_SHADOW_IN);
    gtk_container_add(GTK_CONTAINER(scroll), u->view);
    gtk_box_pack_start(GTK_BOX(box), scroll, TRUE, TRUE, 0);

    GtkWidget *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
    u->forget = gtk_button_new_with_mnemonic("F_orget");
    u->forget_all = gtk_button_new_with_mnemonic("Forget _all\u2026");
    GtkWidget *close = gtk_button_new_with_mnemonic("_Close");
    gtk_box_pack_start(GTK_BOX(buttons), u->forget, FALSE, FALSE, 0);
    gtk_box_pack_start(GTK_BOX(buttons), u->forget_all, FALSE, FALSE, 0);
    gtk_box_pack_end(GTK_BOX(buttons), close, FALSE, FALSE, 0);
    gtk_box_pack_start(GTK_BOX(box), buttons, FALSE, FALSE, 0);
    u->status = gtk_label_new("");
    gtk_label_set_xalign(GTK_LABEL(u->status), 0);
    gtk_label_set_ellipsize(GTK_LABEL(u->status), PANGO_ELLIPSIZE_MIDDLE);
    gtk_label_set_selectable(GTK_LABEL(u->status), FALSE);
    gtk_box_pack_start(GTK_BOX(box), u->status, FALSE, FALSE, 0);

    load(u);
    gtk_widget_set_sensitive(u->count, gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(u->enabled)));
    char err[512] = "";
    if (laya_memory_open(front_memory_path(NULL), &u->mem, err, sizeof err) != LAYA_OK) {
        u->mem = NULL;
        status(u, "The memory cannot be opened, so it is not shown: %s", err);
        gtk_widget_set_sensitive(u->incognito, FALSE);
        gtk_widget_set_sensitive(u->search, FALSE);
    }
    reload(u);

    g_signal_connect(u->enabled, "toggled", G_CALLBACK(on_setting), u);
    g_signal_connect(u->count, "value-changed", G_CALLBACK(on_setting), u);
    for (int i = 0; i < 3; i++) g_signal_connect(u->accept[i], "toggled", G_CALLBACK(on_setting), u);
    g_signal_connect(u->incognito, "toggled", G_CALLBACK(on_incognito), u);
    g_signal_connect(u->search, "search-changed", G_CALLBACK(on_search), u);
    g_signal_connect_swapped(gtk_tree_view_get_selection(GTK_TREE_VIEW(u->view)), "changed",
                             G_CALLBACK(update_buttons), u);
    g_signal_connect(u->forget, "clicked", G_CALLBACK(on_forget), u);
    g_signal_connect(u->forget_all, "clicked", G_CALLBACK(on_forget_all), u);
    g_signal_connect_swapped(close, "clicked", G_CALLBACK(gtk_widget_destroy), u->win);
    g_signal_connect(u->win, "focus-in-event", G_CALLBACK(on_focus), u);
    gtk_widget_show_all(u->win);
}

static void on_activate(GtkApplication *app, settings_ui *u) {
    if (u->win) {
        gtk_window_present(GTK_WINDOW(u->win));
        return;
    }
    build(u, app);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: laya-settings (or: laya settings)\n"
                   "The Laya settings window: suggestions on or off, how many, the accept key,\n"
                   "incognito, and what Laya has learned (search, forget, forget all).\n"
                   "Settings: $XDG_CONFIG_HOME/laya/settings.ini; memory: $LAYA_MEMORY, else\n"
                   "$XDG_DATA_HOME/laya/memory.db.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("laya-settings %s\n", laya_version());
            return 0;
        }
        fprintf(stderr, "laya-settings: unknown option '%s' (try --help)\n", argv[i]);
        return 2;
    }
    if (!gtk_init_check(&argc, &argv)) {
        fprintf(stderr, "laya-settings: cannot open a display (is $DISPLAY or $WAYLAND_DISPLAY set?)\n");
        return 1;
    }
    settings_ui u = {0};
    GtkApplication *app = gtk_application_new("org.laya.Settings", G_APPLICATION_DEFAULT_FLAGS);
    g_signal_connect(app, "activate", G_CALLBACK(on_activate), &u);
    int rc = g_application_run(G_APPLICATION(app), 1, argv);
    g_object_unref(app);
    laya_memory_free(u.mem);
    return rc;
}
