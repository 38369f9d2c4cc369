/* fcx_addon.h - the Laya fcitx5 addon: Laya's continuation beside whatever
 * input method is active (pinyin included), a thin adapter over the
 * library's keystroke pipeline (laya_session_event, include/laya.h): the
 * library decides what is shown, what a key becomes, the verdict on a list
 * and what is learned; the addon translates fcitx5's events and draws.
 *
 * Contract:
 *  - It never changes the application's text unless the user accepts a
 *    suggestion or the library changes a typed key, and never gets between
 *    a key and the input method: a key is consumed only while our list is
 *    shown and only if it is one of ours (the accept key: Tab, Right or End
 *    from the settings, Tab by default; Alt+1..Alt+N; Esc dismisses). Any
 *    other key takes the list down and goes on to the engine untouched, so
 *    typing pinyin again leaves the pinyin engine undisturbed. Tab with
 *    nothing of ours shown passes through. A key no engine consumed (one the
 *    client would type) is the library's LAYA_INPUT_KEY: where the library
 *    makes it something else (right after a suggestion that ends with the
 *    blank after its word: a blank is absorbed, . , ; : ! ? goes before the
 *    blank, "help " + "." is "help. ", where the client supports surrounding
 *    text) the key is consumed and the library's edit is made instead.
 *  - Feedback and the decision are the library's, from the events: a list
 *    taken (ACCEPT), dismissed (Esc: DISMISS), typed on past (a key typed
 *    into the client, a Backspace, another engine's commit that adds text
 *    at the cursor: pinyin's included) or dropped unjudged (a cursor move,
 *    a reset, a focus change).
 *  - After text is committed (by any engine) or typed straight into the
 *    client (a key no engine consumed), the continuation of the text before
 *    the cursor (fcx_text.h) is computed in a timer event 8 ms after the key
 *    has been handled (one LAYA_INPUT_CONTEXT event that wants the
 *    suggestions and the decision); a key that arrives first cancels it, so
 *    a burst costs one computation for its newest context. 8 ms after that,
 *    while no key has come, the search the next key needs if it types what
 *    the suggestions guessed is computed ahead (laya_session_prefetch), one
 *    guess a timer event; a key cancels what is left the same way.
 *  - Shown as a candidate list in the input panel, under an aux line
 *    "Laya", only while the panel is otherwise empty: when the engine has a
 *    preedit, candidates or a message of its own we stay away. The list is
 *    fcitx5's own surface at the caret, which pinyin users already read; a
 *    preedit "ghost" cannot be greyed in fcitx5 (its text formats have no
 *    colour), would read as text being composed, and some clients commit a
 *    preedit on focus loss.
 *  - Privacy: the library's gate. Every event tells it the field: the
 *    Password or Sensitive capability (GTK's PASSWORD and PIN purposes, Qt's
 *    sensitive-data hint) is LAYA_FIELD_SECRET, where nothing is shown,
 *    looked up or learned; so is the text after a password prompt before
 *    the cursor (a terminal's sudo). fcitx5 5.0 has no capability for a
 *    private window, so LAYA_FIELD_PRIVATE is never set. Where the input
 *    method is disabled (the Disable capability) the addon stays out of it.
 *    Typed text is never logged. What was written in a field since the
 *    last time (engines' commits, our accepted suggestions, keys typed into
 *    the client, less the characters Backspace erased) is committed to the
 *    library (LAYA_INPUT_COMMIT), which learns it into the user's memory
 *    ($LAYA_MEMORY, else the default store) where the gate allows, when the
 *    line ends (Return) or the field changes (focus, an input method
 *    switch, a change of the field's kind); the suggestions draw on it (C8).
 *    Erased text is never committed: a reset or a cursor move does not end
 *    the line. Only Backspace is followed: what a selection, Delete or a
 *    shortcut removes stays in the line.
 *  - Settings (src/util/settings.h, shared with the IBus engine and written
 *    by the settings window): suggestions on/off, how many (1..9), the
 *    accept key; re-read on each focus change when the file changed. Off:
 *    no model call, nothing shown, every key let through; learning goes on
 *    (incognito stops it).
 *    The window opens from the addon's Configure entry (an external option)
 *    and from the "Laya settings" action in fcitx5's status-area menu.
 *  - Model: the addon's Model option, else $LAYA_MODEL, else
 *    LAYA_PREFIX/share/laya/default.safetensors (where `make install` puts
 *    it). If it cannot be loaded the user is told once, visibly (a
 *    notification and a message in the input panel), and the addon stays
 *    out of the way (the library's sessions need a model: nothing is
 *    learned then either). */
#ifndef LAYA_FCX_ADDON_H
#define LAYA_FCX_ADDON_H

#include <fcitx-config/configuration.h>
#include <fcitx-config/iniparser.h>
#include <fcitx-utils/i18n.h>
#include <fcitx-utils/key.h>
#include <fcitx/addonfactory.h>
#include <fcitx/addoninstance.h>
#include <fcitx/action.h>
#include <fcitx/addonmanager.h>
#include <fcitx/inputcontextproperty.h>
#include <fcitx/instance.h>

#include <memory>
#include <string>
#include <vector>

#include "laya.h"
#include "util/settings.h"

#ifndef LAYA_PREFIX
#define LAYA_PREFIX "/usr/local"
#endif

namespace laya_fcitx {

FCITX_CONFIGURATION(
    LayaConfig,
    fcitx::Option<std::string> model{this, "Model",
                                     "Model file (empty: $LAYA_MODEL, else the installed default)", ""};
    /* Suggestions on/off, how many and the accept key are Laya's own
     * settings, shared with the IBus engine: configuration tools run the
     * settings window for them. */
    fcitx::ExternalOption settings{this, "Settings", "Suggestions, accept key, incognito, what Laya learned",
                                   LAYA_PREFIX "/libexec/laya-settings"};);

class State;

class Addon final : public fcitx::AddonInstance {
public:
    explicit Addon(fcitx::Instance *instance);
    ~Addon() override;

    void reloadConfig() override;
    const fcitx::Configuration *getConfig() const override { return &config_; }
    void setConfig(const fcitx::RawConfig &raw) override;

    /* Takes the i-th suggestion on ic's list (the library's ACCEPT): the list
     * comes down, the library's edit is made. */
    void accept(fcitx::InputContext *ic, int i);

private:
    static constexpr const char *CONFIG_FILE = "conf/laya.conf";

    State *state(fcitx::InputContext *ic);
    void load_model();
    void drop_sessions();
    void watch();
    void on_key(fcitx::KeyEvent &ev);
    void on_key_passed(fcitx::KeyEvent &ev);
    void on_commit(fcitx::InputContext *ic, const std::string &text);
    void on_leave(fcitx::InputContext *ic);
    void on_reset(fcitx::InputContext *ic);
    bool active() const;
    bool send(fcitx::InputContext *ic, State *st, laya_input in, laya_view *v);
    std::string context(fcitx::InputContext *ic, State *st);
    void moved(fcitx::InputContext *ic, State *st);
    bool type(fcitx::InputContext *ic, State *st, const std::string &key);
    void apply(fcitx::InputContext *ic, State *st, const laya_view &v);
    void write(fcitx::InputContext *ic, State *st, const std::string &text);
    void end_line(fcitx::InputContext *ic, State *st);
    void commit_line(fcitx::InputContext *ic, State *st);
    void schedule(fcitx::InputContext *ic);
    void after_quiet(fcitx::InputContext *ic, void (Addon::*work)(fcitx::InputContext *));
    void compute(fcitx::InputContext *ic);
    void prefetch(fcitx::InputContext *ic);
    void show(fcitx::InputContext *ic, State *st, const laya_view &v);
    void hide(fcitx::InputContext *ic, State *st);
    void tell_model_error(fcitx::InputContext *ic, State *st);
    void open_memory();
    void open_notes();
    void refresh_settings();
    fcitx::Key accept_key() const;
    static void open_settings();

    struct ModelFree {
        void operator()(laya_model *m) const { laya_model_free(m); }
    };
    struct MemoryFree {
        void operator()(laya_memory *m) const { laya_memory_free(m); }
    };
    struct NotesFree {
        void operator()(laya_notes *n) const { laya_notes_free(n); }
    };

    fcitx::Instance *instance_;
    LayaConfig config_;
    std::unique_ptr<laya_model, ModelFree> model_;   /* NULL: none loaded (model_error_ says why) */
    std::unique_ptr<laya_memory, MemoryFree> memory_;   /* the user's memory; NULL: no learning */
    /* The user's notes index (C11) where `laya notes index` made one, NULL:
     * none; before factory_ (the sessions borrow it). */
    std::unique_ptr<laya_notes, NotesFree> notes_;
    std::string model_path_, model_error_;
    bool told_ = false;                /* the user has seen model_error_ */
    settings_watch settings_;          /* the user's settings (on/off, count, accept key) */
    fcitx::SimpleAction settings_action_;   /* "Laya settings" in the status-area menu */
    /* Declared after model_: destroyed first, with every session over it. */
    fcitx::FactoryFor<State> factory_;
    std::vector<std::unique_ptr<fcitx::HandlerTableEntry<fcitx::EventHandler>>> handlers_;
};

class AddonFactory final : public fcitx::AddonFactory {
    fcitx::AddonInstance *create(fcitx::AddonManager *manager) override;
};

}  // namespace laya_fcitx
#endif
