/* ibus_main.c - `ibus-engine-laya`: connects to ibus-daemon and offers the
 * "laya" engine (ibus_engine.c).
 *
 *   ibus-engine-laya --ibus [--model PATH]   started by ibus-daemon from
 *                                            the component XML (laya.xml)
 *   ibus-engine-laya [--model PATH]          by hand: registers the
 *                                            component itself (debugging)
 *   ibus-engine-laya --check [--model PATH]  loads the model the engine
 *                                            would use, says which and
 *                                            whether it loads (exit 0 iff)
 *
 * The model is --model, else $LAYA_MODEL, else the installed default (as
 * for `laya`). A model that does not load is reported on stderr and, in
 * the candidate window, to the user; the engine then passes every key
 * through: the keyboard keeps working. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "engine/front.h"
#include "ibus/ibus_laya.h"

#define COMPONENT "org.freedesktop.IBus.Laya"

static void on_disconnected(IBusBus *bus, gpointer data) {
    ibus_quit();
}

static IBusComponent *component(void) {
    IBusComponent *c = ibus_component_new(COMPONENT, "Laya typing predictions", laya_version(), "", "Laya",
                                          "", "", "laya");
    ibus_component_add_engine(c, ibus_engine_desc_new("laya", "Laya", "Typing predictions as ghost text",
                                                      "other", "", "Laya", "", "default"));
    return c;
}

int main(int argc, char **argv) {
    const char *model_path = NULL;
    int from_ibus = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ibus")) {
            from_ibus = 1;
        } else if (!strcmp(argv[i], "--check")) {
            check = 1;
        } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            model_path = argv[++i];
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: ibus-engine-laya [--ibus | --check] [--model PATH]\n"
                   "The Laya IBus engine: ghost-text suggestions; Tab accepts, Alt+1..9 picks, Esc dismisses.\n"
                   "The accept key, how many and on/off: laya settings ($XDG_CONFIG_HOME/laya/settings.ini).\n"
                   "  --ibus    started so by ibus-daemon (the component file laya.xml)\n"
                   "  --check   say which model the engine uses and whether it loads (exit 0 iff it does)\n"
                   "  --model   the model (default: $LAYA_MODEL, else the installed one)\n");
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("ibus-engine-laya %s\n", laya_version());
            return 0;
        } else {
            fprintf(stderr, "ibus-engine-laya: unknown option '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }

    char mbuf[PATH_MAX + 64];
    const char *path = front_model_path(model_path, mbuf, sizeof mbuf);
    char err[512] = "", notice[1024] = "";
    laya_model *m = NULL;
    laya_status st = laya_model_load(path, &m, err, sizeof err);
    if (check) {
        if (st == LAYA_OK) printf("ibus-engine-laya: model %s loads\n", path);
        else
            fprintf(stderr, "ibus-engine-laya: cannot load model '%s': %s%s%s\n"
                            "  hint: make install puts the shipped model beside the engine; or set LAYA_MODEL\n",
                    path, laya_status_str(st), *err ? ": " : "", err);
        laya_model_free(m);
        return st == LAYA_OK ? 0 : 1;
    }
    if (st != LAYA_OK) {
        fprintf(stderr, "ibus-engine-laya: cannot load model '%s': %s%s%s; passing keys through\n", path,
                laya_status_str(st), *err ? ": " : "", err);
        snprintf(notice, sizeof notice,
                 "Laya has no model, so it suggests nothing: cannot load %s (%s).\n"
                 "Fix: install one (make install) or set LAYA_MODEL, then run: ibus restart",
                 path, laya_status_str(st));
        m = NULL;
    }

    ibus_init();
    IBusBus *bus = ibus_bus_new();
    if (!ibus_bus_is_connected(bus)) {
        fprintf(stderr, "ibus-engine-laya: cannot connect to ibus-daemon (is it running?)\n");
        laya_model_free(m);
        return 1;
    }
    g_signal_connect(bus, "disconnected", G_CALLBACK(on_disconnected), NULL);
    ibus_laya_set_model(m, notice);
    /* The user's memory: a store that cannot be opened costs learning, not
     * typing (the reason goes to the log). */
    laya_memory *mem = NULL;
    if (m) {
        char merr[512] = "";
        if (laya_memory_open(front_memory_path(NULL), &mem, merr, sizeof merr) != LAYA_OK ||
            laya_memory_prepare(mem, merr, sizeof merr) != LAYA_OK)
            fprintf(stderr, "ibus-engine-laya: learning is off: %s\n", merr);
    }
    ibus_laya_set_memory(mem);
    /* The notes index, where `laya notes index` made one: a damaged one
     * costs the notes, not typing. */
    laya_notes *notes = NULL;
    char npath[4096];
    if (m && laya_notes_default_path(npath, sizeof npath, NULL, 0) == LAYA_OK && access(npath, F_OK) == 0) {
        char nerr[512] = "";
        if (laya_notes_open(npath, 0, &notes, nerr, sizeof nerr) != LAYA_OK)
            fprintf(stderr, "ibus-engine-laya: notes are off: %s\n", nerr);
    }
    ibus_laya_set_notes(notes);
    /* The intent head beside the model, where one is: a refused one costs
     * the intent, not typing. */
    laya_intent *intent = NULL;
    char ipath[4096];
    if (m) {
        front_intent_path(path, ipath, sizeof ipath);
        char ierr[512] = "";
        if (access(ipath, F_OK) == 0 && laya_intent_load(ipath, m, NULL, &intent, ierr, sizeof ierr) != LAYA_OK)
            fprintf(stderr, "ibus-engine-laya: intent is off: %s\n", ierr);
    }
    ibus_laya_set_intent(intent);
    IBusFactory *factory = ibus_factory_new(ibus_bus_get_connection(bus));
    ibus_factory_add_engine(factory, "laya", IBUS_TYPE_LAYA_ENGINE);
    gboolean ok;
    if (from_ibus) {
        ok = ibus_bus_request_name(bus, COMPONENT, 0) != 0;
    } else {
        IBusComponent *c = component();
        ok = ibus_bus_register_component(bus, c);
        g_object_unref(c);
    }
    if (!ok) {
        fprintf(stderr, "ibus-engine-laya: cannot register with ibus-daemon\n");
        laya_memory_free(mem);
        laya_notes_free(notes);
        laya_intent_free(intent);
        laya_model_free(m);
        return 1;
    }
    ibus_main();
    g_object_unref(factory);
    g_object_unref(bus);
    laya_memory_free(mem);
    laya_notes_free(notes);
    laya_intent_free(intent);
    laya_model_free(m);
    return 0;
}
