/* fcx_addon.cc - the Laya fcitx5 addon (contract in fcx_addon.h).
 *
 * What the library decides (laya_session_event): what is shown and whether
 * now (the suggestions and the decision), what a typed key becomes (the
 * spacing after an accepted blank), the verdict on a list (taken, passed
 * over, dropped), what is learned, and the privacy gate over all of it.
 * What the addon does: it keeps the text before the cursor (fcx_text.h) and
 * what was written in the field (State::line), turns fcitx5's events into
 * the library's, makes the edits the library returns, draws the list, and
 * times the work (the computation after a quiet 8 ms, the prefetch after).
 *
 * fcitx5 event                          library event
 *   the computation (timer)               CONTEXT, want SUGGEST|DECIDE
 *   another engine's commit               CONTEXT (the text with it)
 *   a key the client would type           KEY (Return: then a line end)
 *   Backspace the client would apply      ERASE
 *   the accept key, Alt+N, a click        ACCEPT
 *   Esc over our list                     DISMISS
 *   a reset, a key we cannot follow       CONTEXT "" (the cursor may be anywhere)
 *   focus, input method switch, a         FOCUS, then COMMIT of the line
 *     change of the field's kind
 *
 * Event order within one key (fcitx5's pipeline): PreInputMethod (on_key:
 * our keys, and our list comes down before the engine sees anything), the
 * engine, PostInputMethod (on_key_passed: reached only by keys no one
 * consumed, i.e. keys the client will type itself; one filtered there is
 * not typed). Commits arrive as CommitString events, during the key or, for
 * clients that ask for key order (KeyEventOrderFix), right after it. */
#include "fcitx5/fcx_addon.h"

#include <fcitx-module/notifications/notifications_public.h>
#include <fcitx-utils/event.h>
#include <fcitx-utils/log.h>
#include <fcitx-utils/misc.h>
#include <fcitx/candidatelist.h>
#include <fcitx/event.h>
#include <fcitx/inputcontext.h>
#include <fcitx/inputcontextmanager.h>
#include <fcitx/inputpanel.h>
#include <fcitx/statusarea.h>
#include <fcitx/text.h>
#include <fcitx/userinterface.h>
#include <fcitx/userinterfacemanager.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "fcitx5/fcx_text.h"

namespace laya_fcitx {

FCITX_DEFINE_LOG_CATEGORY(laya_log, "laya");
#define LAYA_LOG(level) FCITX_LOGC(::laya_fcitx::laya_log, level)

namespace {

constexpr const char *AUX = "Laya";
/* Quiet time before a computation: far below what a person notices, above
 * the gaps in a burst of queued keys (a paste typed out, key repeat is 25+ ms). */
constexpr uint64_t COALESCE_US = 8000;
constexpr const char *NO_MODEL_HINT = "set the Laya addon's Model option, or LAYA_MODEL and restart fcitx5";
/* The field flags that decide what the gate lets through. */
constexpr unsigned GATE_FIELD = LAYA_FIELD_SECRET | LAYA_FIELD_PRIVATE;

double now_ms() { return static_cast<double>(fcitx::now(CLOCK_MONOTONIC)) / 1000.0; }

/* The client asked for no input method here: the addon stays out. */
bool disabled(const fcitx::InputContext *ic) {
    return ic->capabilityFlags().test(fcitx::CapabilityFlag::Disable);
}

/* What the library is told of ic's field. fcitx5 5.0 carries no
 * private-window hint, so LAYA_FIELD_PRIVATE never comes from here. */
unsigned field_of(const fcitx::InputContext *ic) {
    const fcitx::CapabilityFlags caps = ic->capabilityFlags();
    unsigned f = 0;
    if (caps.testAny(fcitx::CapabilityFlags{fcitx::CapabilityFlag::Password, fcitx::CapabilityFlag::Sensitive}))
        f |= LAYA_FIELD_SECRET;
    if (!caps.test(fcitx::CapabilityFlag::SurroundingText)) f |= LAYA_FIELD_NO_DELETE;
    return f;
}

bool plain(const fcitx::Key &key) {
    return !key.states().testAny(
        fcitx::KeyStates{fcitx::KeyState::Ctrl, fcitx::KeyState::Alt, fcitx::KeyState::Super});
}

}  // namespace

/* Per input context: the library's session (the context, the list shown,
 * the decider), the text before the cursor, what was written, what is shown. */
class State final : public fcitx::InputContextProperty {
public:
    ~State() override { laya_session_free(session); }
    void drop_session() {
        laya_session_free(session);
        session = nullptr;
    }

    laya_session *session = nullptr;   /* made on first use, over the addon's model */
    unsigned field = 0;                /* the field flags last told to the library */
    TextBefore text;
    std::vector<std::string> shown;    /* our suggestions on screen, best first */
    std::vector<int> index;            /* ... each one's index in the library's view */
    const fcitx::CandidateList *ours = nullptr;   /* our list in the panel, while shown */
    bool message = false;              /* the model error is on screen */
    bool expect_ours = false;          /* the next commit is an edit the library made */
    /* Written since the last line end (C8): commits and keys typed into the
     * client, less what Backspace erased; line_field: the gate flags of the
     * field at any time it was written (a password field made visible later
     * keeps its line secret). */
    std::string line;
    unsigned line_field = 0;
    std::unique_ptr<fcitx::EventSourceTime> deferred;   /* the pending computation, or prefetch */
};

namespace {

class Candidate final : public fcitx::CandidateWord {
public:
    Candidate(Addon *addon, int index, const std::string &s)
        : fcitx::CandidateWord(fcitx::Text(s)), addon_(addon), index_(index) {}
    /* A click in the list. */
    void select(fcitx::InputContext *ic) const override { addon_->accept(ic, index_); }

private:
    Addon *addon_;
    int index_;
};

}  // namespace

Addon::Addon(fcitx::Instance *instance)
    : instance_(instance), factory_([](fcitx::InputContext &) { return new State; }) {
    instance_->inputContextManager().registerProperty("layaState", &factory_);
    if (settings_watch_init(&settings_, nullptr) != LAYA_OK && settings_.err[0])
        LAYA_LOG(Warn) << "settings: " << settings_.err;
    settings_action_.setShortText("Laya settings");
    settings_action_.setIcon("preferences-system");
    settings_action_.connect<fcitx::SimpleAction::Activated>([](fcitx::InputContext *) { open_settings(); });
    instance_->userInterfaceManager().registerAction("laya-settings", &settings_action_);
    open_memory();
    open_notes();
    watch();
    reloadConfig();
}

Addon::~Addon() = default;

void Addon::open_memory() {
    const char *env = std::getenv("LAYA_MEMORY");
    char err[512] = "";
    laya_memory *m = nullptr;
    if (laya_memory_open(env && *env ? env : nullptr, &m, err, sizeof err) != LAYA_OK ||
        laya_memory_prepare(m, err, sizeof err) != LAYA_OK) {
        LAYA_LOG(Warn) << "learning is off: " << err;
        laya_memory_free(m);
        return;
    }
    memory_.reset(m);
}

/* The notes index, where there is one: a damaged one costs the notes, not
 * typing. */
void Addon::open_notes() {
    char err[512] = "", npath[4096];
    laya_notes *n = nullptr;
    if (laya_notes_default_path(npath, sizeof npath, nullptr, 0) == LAYA_OK && access(npath, F_OK) == 0) {
        if (laya_notes_open(npath, 0, &n, err, sizeof err) == LAYA_OK) notes_.reset(n);
        else LAYA_LOG(Warn) << "notes are off: " << err;
    }
}

State *Addon::state(fcitx::InputContext *ic) { return ic->propertyFor(&factory_); }

void Addon::refresh_settings() {
    if (settings_watch_refresh(&settings_) && settings_.err[0]) LAYA_LOG(Warn) << "settings: " << settings_.err;
}

fcitx::Key Addon::accept_key() const {
    switch (settings_.v.accept) {
    case SETTINGS_ACCEPT_RIGHT: return fcitx::Key(FcitxKey_Right);
    case SETTINGS_ACCEPT_END: return fcitx::Key(FcitxKey_End);
    default: return fcitx::Key(FcitxKey_Tab);
    }
}

/* Starts the settings window; startProcess forks twice, so nothing waits. */
void Addon::open_settings() {
    char prog[4096], err[4096 + 512] = "";
    if (settings_program(LAYA_PREFIX, prog, sizeof prog, err, sizeof err) != LAYA_OK) {
        LAYA_LOG(Error) << err;
        return;
    }
    fcitx::startProcess({prog});
}

void Addon::reloadConfig() {
    fcitx::readAsIni(config_, CONFIG_FILE);
    load_model();
}

void Addon::setConfig(const fcitx::RawConfig &raw) {
    config_.load(raw, true);
    fcitx::safeSaveAsIni(config_, CONFIG_FILE);
    load_model();
}

void Addon::load_model() {
    std::string path = config_.model.value();
    if (path.empty()) {
        const char *env = std::getenv("LAYA_MODEL");
        path = env && *env ? env : LAYA_PREFIX "/share/laya/default.safetensors";
    }
    if (path == model_path_ && (model_ || !model_error_.empty())) return;
    drop_sessions();
    model_.reset();
    model_path_ = path;
    model_error_.clear();
    told_ = false;
    char err[512] = "";
    laya_model *m = nullptr;
    laya_status s = laya_model_load(path.c_str(), &m, err, sizeof err);
    if (s == LAYA_OK) model_.reset(m);
    if (s != LAYA_OK) {
        model_error_ = *err ? err : path + ": " + laya_status_str(s);
        LAYA_LOG(Error) << "cannot load the model " << path << ": " << laya_status_str(s) << ": " << model_error_
                        << " (" << NO_MODEL_HINT << ")";
        return;
    }
    LAYA_LOG(Info) << "model " << path;
}

void Addon::drop_sessions() {
    instance_->inputContextManager().foreach([this](fcitx::InputContext *ic) {
        State *st = state(ic);
        hide(ic, st);
        st->deferred.reset();
        st->drop_session();
        return true;
    });
}

void Addon::watch() {
    using fcitx::EventType;
    using fcitx::EventWatcherPhase;
    handlers_.emplace_back(instance_->watchEvent(EventType::InputContextKeyEvent, EventWatcherPhase::PreInputMethod,
                                                 [this](fcitx::Event &e) { on_key(static_cast<fcitx::KeyEvent &>(e)); }));
    handlers_.emplace_back(instance_->watchEvent(
        EventType::InputContextKeyEvent, EventWatcherPhase::PostInputMethod,
        [this](fcitx::Event &e) { on_key_passed(static_cast<fcitx::KeyEvent &>(e)); }));
    handlers_.emplace_back(instance_->watchEvent(
        EventType::InputContextCommitString, EventWatcherPhase::PostInputMethod, [this](fcitx::Event &e) {
            auto &ce = static_cast<fcitx::CommitStringEvent &>(e);
            on_commit(ce.inputContext(), ce.text());
        }));
    handlers_.emplace_back(instance_->watchEvent(
        EventType::InputContextSurroundingTextUpdated, EventWatcherPhase::PostInputMethod, [this](fcitx::Event &e) {
            auto *ic = static_cast<fcitx::InputContextEvent &>(e).inputContext();
            const auto &sur = ic->surroundingText();
            if (disabled(ic) || !sur.isValid()) return;
            state(ic)->text.surrounding(text_before(sur.text(), sur.cursor(), sur.anchor()));
        }));
    /* Another field, or another input method: the line ends. */
    for (EventType t :
         {EventType::InputContextFocusIn, EventType::InputContextFocusOut, EventType::InputContextSwitchInputMethod})
        handlers_.emplace_back(instance_->watchEvent(t, EventWatcherPhase::PostInputMethod, [this](fcitx::Event &e) {
            auto *ic = static_cast<fcitx::InputContextEvent &>(e).inputContext();
            if (e.type() == fcitx::EventType::InputContextFocusIn)
                ic->statusArea().addAction(fcitx::StatusGroup::AfterInputMethod, &settings_action_);
            on_leave(ic);
        }));
    /* A client resets on its own edits (GTK on every Backspace and cursor
     * move): the cursor may be anywhere, the line goes on. */
    handlers_.emplace_back(instance_->watchEvent(
        EventType::InputContextReset, EventWatcherPhase::PostInputMethod,
        [this](fcitx::Event &e) { on_reset(static_cast<fcitx::InputContextEvent &>(e).inputContext()); }));
    /* The field became another kind (a password field, a disabled one, or
     * back): the line written in the old one ends with it. */
    handlers_.emplace_back(instance_->watchEvent(
        EventType::InputContextCapabilityChanged, EventWatcherPhase::PostInputMethod, [this](fcitx::Event &e) {
            auto *ic = static_cast<fcitx::InputContextEvent &>(e).inputContext();
            State *st = state(ic);
            if (disabled(ic) || (field_of(ic) & GATE_FIELD) != (st->field & GATE_FIELD)) on_leave(ic);
        }));
}

bool Addon::active() const { return model_ && settings_.v.enabled; }

/* One event on ic's session, made here on first use; the field and the time
 * are filled in (in.field's own bits are kept). False where there is no
 * model or the library refused the event (logged: the kind and the status,
 * never text). */
bool Addon::send(fcitx::InputContext *ic, State *st, laya_input in, laya_view *v) {
    if (!model_) return false;
    if (!st->session) {
        if (laya_session_new(model_.get(), &st->session) != LAYA_OK) {
            st->session = nullptr;
            return false;
        }
        laya_session_set_memory(st->session, memory_.get());
        laya_session_set_notes(st->session, notes_.get());
    }
    st->field = field_of(ic);
    in.field |= st->field;
    in.t_ms = -1;
    laya_status s = laya_session_event(st->session, &in, v);
    if (s != LAYA_OK) LAYA_LOG(Warn) << "event " << static_cast<int>(in.kind) << ": " << laya_status_str(s);
    return s == LAYA_OK;
}

/* The text before the cursor as the addon knows it (fcx_text.h). */
std::string Addon::context(fcitx::InputContext *ic, State *st) {
    const auto &sur = ic->surroundingText();
    bool have = ic->capabilityFlags().test(fcitx::CapabilityFlag::SurroundingText) && sur.isValid();
    return st->text.context(have, have ? text_before(sur.text(), sur.cursor(), sur.anchor()) : "");
}

/* The cursor may be anywhere now: the record is forgotten and the library
 * told the text before the cursor is unknown (its list is dropped unjudged). */
void Addon::moved(fcitx::InputContext *ic, State *st) {
    st->text.forget();
    laya_input in{};
    in.kind = LAYA_INPUT_CONTEXT;
    laya_view v;
    if (active()) send(ic, st, in, &v);
}

/* Text written in the field, kept for the line's commit; a line grown past
 * half of what one commit may hold is committed in parts. */
void Addon::write(fcitx::InputContext *ic, State *st, const std::string &text) {
    st->line += text;
    st->line_field |= field_of(ic) & GATE_FIELD;
    if (st->line.size() > LAYA_MEMORY_MAX_TEXT / 2) commit_line(ic, st);
}

/* The line written goes to the library, which learns it where the gate
 * allows (under the strictest field it was written in). */
void Addon::commit_line(fcitx::InputContext *ic, State *st) {
    if (!st->line.empty()) {
        laya_input in{};
        in.kind = LAYA_INPUT_COMMIT;
        in.text = st->line.data();
        in.len = st->line.size();
        in.field = st->line_field;
        laya_view v;
        send(ic, st, in, &v);
    }
    st->line.clear();
    st->line_field = 0;
}

/* A line ends or the field changes: the list is dropped unjudged, the text
 * before the cursor is unknown, the line is committed. */
void Addon::end_line(fcitx::InputContext *ic, State *st) {
    if (st->session || !st->line.empty()) {
        laya_input in{};
        in.kind = LAYA_INPUT_FOCUS;
        laya_view v;
        send(ic, st, in, &v);
    }
    commit_line(ic, st);
}

void Addon::on_leave(fcitx::InputContext *ic) {
    State *st = state(ic);
    refresh_settings();
    st->deferred.reset();
    hide(ic, st);
    if (disabled(ic)) {
        st->line.clear();
        st->line_field = 0;
    } else {
        end_line(ic, st);
    }
    st->text.forget();
    st->expect_ours = false;
}

void Addon::on_reset(fcitx::InputContext *ic) {
    State *st = state(ic);
    refresh_settings();
    st->deferred.reset();
    hide(ic, st);
    st->expect_ours = false;
    if (disabled(ic)) st->text.forget();
    else moved(ic, st);
}

/* A commit, by any engine or of an edit the library made. */
void Addon::on_commit(fcitx::InputContext *ic, const std::string &text) {
    if (disabled(ic)) return;
    State *st = state(ic);
    st->text.commit(text);
    write(ic, st, text);
    if (st->expect_ours) {
        /* Ours: the library has it already; the next key starts over. */
        st->expect_ours = false;
        return;
    }
    /* Another engine's (pinyin's Chinese): the library hears the text with
     * it now, so that a key before the computation below finds it there. */
    laya_input in{};
    in.kind = LAYA_INPUT_CONTEXT;
    const std::string ctx = context(ic, st);
    in.text = ctx.data();
    in.len = ctx.size();
    laya_view v;
    if (active()) send(ic, st, in, &v);
    schedule(ic);
}

void Addon::on_key(fcitx::KeyEvent &ev) {
    auto *ic = ev.inputContext();
    State *st = state(ic);
    if (disabled(ic)) {
        st->deferred.reset();
        hide(ic, st);
        st->text.forget();
        return;
    }
    const fcitx::Key key = ev.key();
    if (ev.isRelease() || key.isModifier()) return;
    st->deferred.reset();   /* stale: this key changes the context */
    st->text.key_arrived();
    if (st->message) {
        hide(ic, st);
        return;
    }
    if (st->shown.empty()) return;
    int n = static_cast<int>(st->shown.size());
    int alt = key.digitSelection(fcitx::KeyState::Alt);
    if (key.check(accept_key()) || (alt >= 0 && alt < n)) {
        accept(ic, alt >= 0 ? alt : 0);
        ev.filterAndAccept();
        return;
    }
    hide(ic, st);
    if (key.check(FcitxKey_Escape)) {
        laya_input in{};
        in.kind = LAYA_INPUT_DISMISS;
        laya_view v;
        send(ic, st, in, &v);
        ev.filterAndAccept();
    }
    /* Any other key goes on to the engine as if we had never been there;
     * the library judges the list by what the key turns out to do. */
}

/* Key text typed at the cursor (the client would type it): the library's
 * KEY. True when the library made it something else, which is done here
 * (the caller consumes the key); false to let the key through. */
bool Addon::type(fcitx::InputContext *ic, State *st, const std::string &key) {
    laya_input in{};
    in.kind = LAYA_INPUT_KEY;
    in.text = key.data();
    in.len = key.size();
    laya_view v;
    if (!active() || !send(ic, st, in, &v) ||
        (v.erase == 0 && std::string_view(v.insert ? v.insert : "", v.insert_len) == key))
        return false;
    apply(ic, st, v);
    return true;
}

/* The library's edit of a KEY or an ACCEPT: erase v.erase bytes before the
 * cursor (the library's context is the addon's, so they are its last
 * bytes), then insert. */
void Addon::apply(fcitx::InputContext *ic, State *st, const laya_view &v) {
    const std::string insert(v.insert ? v.insert : "", v.insert_len);
    if (v.erase) {
        unsigned chars = chars_in_tail(context(ic, st), v.erase);
        ic->deleteSurroundingText(-static_cast<int>(chars), chars);
        for (unsigned i = 0; i < chars; i++) {
            st->text.backspace();
            erase_last_char(st->line);
        }
    }
    if (insert.empty()) return;
    st->expect_ours = true;
    ic->commitString(insert);
}

void Addon::on_key_passed(fcitx::KeyEvent &ev) {
    auto *ic = ev.inputContext();
    const fcitx::Key key = ev.key();
    /* forward(): the core commits the key's character in another layout
     * itself, and that commit is seen as one. */
    if (ev.isRelease() || key.isModifier() || disabled(ic) || ev.forward()) return;
    State *st = state(ic);
    const uint32_t c = fcitx::Key::keySymToUnicode(key.sym());
    if (plain(key) && key.check(FcitxKey_BackSpace)) {
        st->text.backspace();
        erase_last_char(st->line);
        laya_input in{};
        in.kind = LAYA_INPUT_ERASE;
        laya_view v;
        if (active()) send(ic, st, in, &v);
        schedule(ic);
    } else if (plain(key) && (key.check(FcitxKey_Return) || key.check(FcitxKey_KP_Enter) ||
                              key.check(FcitxKey_ISO_Enter))) {
        /* Typed on past the list; then the line ends (a message sent, a
         * paragraph ended): whether the client keeps a line break is its
         * own affair, so the text before the cursor is unknown after. */
        if (type(ic, st, "\n")) ev.filterAndAccept();
        end_line(ic, st);
        st->text.forget();
    } else if (plain(key) && c >= 0x20 && c != 0x7f) {
        const std::string k = utf8_of(c);
        if (type(ic, st, k)) {
            ev.filterAndAccept();
            return;   /* the library's edit is in; the next key starts over */
        }
        st->text.commit(k);
        write(ic, st, k);
        schedule(ic);
    } else {
        /* Arrows, Delete, Tab, shortcuts: they may move the cursor or edit
         * in ways we cannot follow. */
        moved(ic, st);
    }
}

void Addon::schedule(fcitx::InputContext *ic) { after_quiet(ic, &Addon::compute); }

void Addon::after_quiet(fcitx::InputContext *ic, void (Addon::*work)(fcitx::InputContext *)) {
    /* One pending piece of work per context (a computation, or a prefetch
     * after it), COALESCE_US from now; a key that comes first drops it
     * (on_key). Not a defer event: fcitx5's loop runs those before it reads
     * the next queued key, so a burst of keys 1 ms apart got one computation
     * each (34 of 34, measured in the e2e test's window). The source lives
     * in ic's state, so it dies with ic. */
    uint64_t at = fcitx::now(CLOCK_MONOTONIC) + COALESCE_US;
    /* Accuracy 1 ms: 0 would select sd-event's default, up to 250 ms late. */
    state(ic)->deferred = instance_->eventLoop().addTimeEvent(
        CLOCK_MONOTONIC, at, 1000, [this, ic, work](fcitx::EventSourceTime *, uint64_t) {
            Addon *self = this;
            fcitx::InputContext *c = ic;
            void (Addon::*w)(fcitx::InputContext *) = work;
            self->state(c)->deferred.reset();   /* destroys this lambda: only locals from here */
            (self->*w)(c);
            return true;
        });
}

void Addon::compute(fcitx::InputContext *ic) {
    State *st = state(ic);
    if (disabled(ic) || !ic->hasFocus()) return;
    hide(ic, st);
    if (!model_) {
        tell_model_error(ic, st);
        return;
    }
    if (!settings_.v.enabled) return;
    const std::string ctx = context(ic, st);
    laya_input in{};
    in.kind = LAYA_INPUT_CONTEXT;
    in.text = ctx.data();
    in.len = ctx.size();
    /* Nothing to go on, or the engine shows something of its own: the
     * library hears the context only. */
    const bool want = !ctx.empty() && ic->inputPanel().empty();
    if (want) {
        in.want = LAYA_WANT_SUGGEST | LAYA_WANT_DECIDE;
        if (notes_) in.want |= LAYA_WANT_NOTES;
        in.k = settings_.v.count;
    }
    laya_view v;
    double t0 = now_ms();
    if (!send(ic, st, in, &v) || !want) return;
    /* Counts, the decision's reason and time only: never the text. */
    LAYA_LOG(Debug) << "suggest: " << v.n << " shown" << (v.held ? std::string(" (held: ") + v.held + ")" : "")
                    << (v.gate ? " (gate " + std::to_string(v.gate) + ")" : "") << ", "
                    << static_cast<long>((now_ms() - t0) * 1000) << " us";
    if (v.n) show(ic, st, v);
    /* then, COALESCE_US of quiet after the list went out, the prefetch */
    after_quiet(ic, &Addon::prefetch);
}

void Addon::prefetch(fcitx::InputContext *ic) {
    /* The search the next key needs if it types what the suggestions
     * guessed (laya_session_prefetch), while the typist is between keys:
     * one guess a turn (a key waits for one search at most), each in the
     * slot a key drops. */
    laya_session *session = state(ic)->session;
    int more = 0;
    double t0 = now_ms();
    if (!session || laya_session_prefetch(session, &more) != LAYA_OK) return;
    /* Counts and time only: never the text. */
    LAYA_LOG(Debug) << "prefetch: " << static_cast<long>((now_ms() - t0) * 1000) << " us, more " << more;
    if (more) after_quiet(ic, &Addon::prefetch);
}

void Addon::show(fcitx::InputContext *ic, State *st, const laya_view &v) {
    for (int i = 0; i < v.n; i++)
        if (v.list[i].len) {
            st->shown.emplace_back(v.list[i].text, v.list[i].len);
            st->index.push_back(i);
        }
    int n = static_cast<int>(st->shown.size());
    if (!n) return;
    auto list = std::make_unique<fcitx::CommonCandidateList>();
    /* Labels are the keys that pick: a plain digit types a digit. */
    std::vector<std::string> labels;
    for (int i = 0; i < n; i++)
        labels.push_back(i == 0 ? std::string(settings_accept_name(settings_.v.accept)) + " "
                                : "Alt+" + std::to_string(i + 1) + " ");
    list->setPageSize(n);
    list->setLabels(labels);
    for (int i = 0; i < n; i++) list->append<Candidate>(this, i, st->shown[i]);
    list->setGlobalCursorIndex(0);
    st->ours = list.get();
    auto &panel = ic->inputPanel();
    /* Beside the name, the title of the note most related to the sentence
     * (C11): "Laya · → Dentist". The intent head's label is never shown
     * with the list (as in the IBus engine: issue 39): a front end that acts
     * on an intent asks the daemon for it. */
    std::string aux = AUX;
    if (v.n_notes > 0) {
        aux += " \u00b7 \u2192 ";
        aux += v.notes[0].title;
    }
    panel.setAuxUp(fcitx::Text(aux));
    panel.setCandidateList(std::move(list));
    ic->updateUserInterface(fcitx::UserInterfaceComponent::InputPanel);
}

void Addon::hide(fcitx::InputContext *ic, State *st) {
    if (st->shown.empty() && !st->message) return;
    auto &panel = ic->inputPanel();
    /* Only what is still ours: an engine may have put its own there. */
    bool ours = st->message ? !panel.candidateList() : panel.candidateList().get() == st->ours;
    st->shown.clear();
    st->index.clear();
    st->ours = nullptr;
    st->message = false;
    if (!ours) return;
    panel.reset();
    ic->updateUserInterface(fcitx::UserInterfaceComponent::InputPanel);
}

void Addon::accept(fcitx::InputContext *ic, int i) {
    State *st = state(ic);
    if (i < 0 || i >= static_cast<int>(st->shown.size())) return;
    laya_input in{};
    in.kind = LAYA_INPUT_ACCEPT;
    in.index = st->index[static_cast<size_t>(i)];
    hide(ic, st);
    laya_view v;
    if (send(ic, st, in, &v)) apply(ic, st, v);
}

void Addon::tell_model_error(fcitx::InputContext *ic, State *st) {
    if (told_ || !ic->inputPanel().empty()) return;
    told_ = true;
    if (auto *notifications = instance_->addonManager().addon("notifications", true))
        notifications->call<fcitx::INotifications::showTip>("laya-model", "Laya", "dialog-warning",
                                                            "Laya has no model", model_error_ + ". " + NO_MODEL_HINT,
                                                            15000);
    auto &panel = ic->inputPanel();
    panel.setAuxUp(fcitx::Text(std::string("Laya has no model: ") + NO_MODEL_HINT));
    panel.setAuxDown(fcitx::Text(model_error_));
    st->message = true;
    ic->updateUserInterface(fcitx::UserInterfaceComponent::InputPanel);
}

fcitx::AddonInstance *AddonFactory::create(fcitx::AddonManager *manager) { return new Addon(manager->instance()); }

}  // namespace laya_fcitx

FCITX_ADDON_FACTORY(laya_fcitx::AddonFactory);
