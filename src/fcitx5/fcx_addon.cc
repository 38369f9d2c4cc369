/* fcx_addon.cc - the Laya fcitx5 addon (contract in fcx_addon.h).
 *
 * Event order within one key (fcitx5's pipeline): PreInputMethod (on_key:
 * our keys, and our list comes down before the engine sees anything), the
 * engine, PostInputMethod (on_key_passed: reached only by keys no one
 * consumed, i.e. keys the client will type itself). Commits arrive as
 * CommitString events, during the key or, for clients that ask for key
 * order (KeyEventOrderFix), right after it. */
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

constexpr int MAX_SHOWN = SETTINGS_MAX_COUNT;
constexpr const char *AUX = "Laya";
/* Quiet time before a computation: far below what a person notices, above
 * the gaps in a burst of queued keys (a paste typed out, key repeat is 25+ ms). */
constexpr uint64_t COALESCE_US = 8000;
constexpr const char *NO_MODEL_HINT = "set the Laya addon's Model option, or LAYA_MODEL and restart fcitx5";

double now_ms() { return static_cast<double>(fcitx::now(CLOCK_MONOTONIC)) / 1000.0; }

/* A key that types on past our list: a character, Enter or Backspace,
 * without Ctrl, Alt or Super, whether it goes straight to the client or
 * into the engine's composition (pinyin's letters). See Addon::pass_over. */
bool types_on(const fcitx::Key &key) {
    if (key.states().testAny(fcitx::KeyStates{fcitx::KeyState::Ctrl, fcitx::KeyState::Alt, fcitx::KeyState::Super}))
        return false;
    const fcitx::KeySym sym = key.sym();
    if (sym == FcitxKey_BackSpace || sym == FcitxKey_Return || sym == FcitxKey_KP_Enter || sym == FcitxKey_ISO_Enter)
        return true;
    uint32_t c = fcitx::Key::keySymToUnicode(sym);
    return c >= 0x20 && c != 0x7f;
}

/* Password and PIN fields, the sensitive-data hint, disabled contexts. */
bool silent(const fcitx::InputContext *ic) {
    return ic->capabilityFlags().testAny(fcitx::CapabilityFlags{
        fcitx::CapabilityFlag::Password, fcitx::CapabilityFlag::Sensitive, fcitx::CapabilityFlag::Disable});
}

}  // namespace

/* Per input context: the session over the model, the typist's decider, the
 * text before the cursor and what is shown. */
class State final : public fcitx::InputContextProperty {
public:
    State() {
        if (laya_decider_new(&decider) != LAYA_OK) decider = nullptr;
    }
    ~State() override {
        laya_session_free(session);
        laya_decider_free(decider);
    }
    void drop_session() {
        laya_session_free(session);
        session = nullptr;
    }
    /* A NULL decider (out of memory at creation) just records nothing. */
    void event(laya_event kind) {
        if (decider) laya_decide_event(decider, kind, now_ms());
    }

    laya_session *session = nullptr;   /* made on first use, over the addon's model */
    laya_decider *decider = nullptr;
    TextBefore text;
    std::vector<std::string> shown;    /* our suggestions on screen, best first */
    const fcitx::CandidateList *ours = nullptr;   /* our list in the panel, while shown */
    bool message = false;              /* the model error is on screen */
    bool expect_ours = false;          /* the next commit is a suggestion we accepted */
    bool spaced = false;               /* the last key accepted a suggestion that ends in a blank */
    std::string line;                  /* committed since the last learning point (C8) */
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

/* The text committed in a context since the last time is learned (C8):
 * what the user really wrote, pinyin's commits and our suggestions alike.
 * Never from a silent context (the callers check). */
void Addon::learn(State *st) {
    if (memory_ && !st->line.empty()) laya_memory_commit(memory_.get(), st->line.data(), st->line.size(), nullptr, nullptr, 0);
    st->line.clear();
}

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
    intent_.reset();
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
    /* MODEL.intent.safetensors beside it, where there is one: a refused
     * head costs the intent, not typing. */
    std::string ipath = path;
    const std::string ext = ".safetensors";
    if (ipath.size() > ext.size() && ipath.compare(ipath.size() - ext.size(), ext.size(), ext) == 0)
        ipath.resize(ipath.size() - ext.size());
    ipath += ".intent.safetensors";
    laya_intent *h = nullptr;
    if (access(ipath.c_str(), F_OK) == 0) {
        if (laya_intent_load(ipath.c_str(), model_.get(), nullptr, &h, err, sizeof err) == LAYA_OK)
            intent_.reset(h);
        else
            LAYA_LOG(Warn) << "intent is off: " << err;
    }
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
            auto *ic = ce.inputContext();
            if (silent(ic)) return;
            State *st = state(ic);
            st->text.commit(ce.text());
            st->line += ce.text();
            if (st->line.size() > LAYA_MEMORY_MAX_TEXT / 2) learn(st);
            if (st->expect_ours) {
                /* Our own commit: the user has what they asked for; the next
                 * key starts over. */
                st->expect_ours = false;
                return;
            }
            st->event(LAYA_EVENT_JUMP);   /* an engine's commit: no typing speed across it */
            schedule(ic);
        }));
    handlers_.emplace_back(instance_->watchEvent(
        EventType::InputContextSurroundingTextUpdated, EventWatcherPhase::PostInputMethod, [this](fcitx::Event &e) {
            auto *ic = static_cast<fcitx::InputContextEvent &>(e).inputContext();
            const auto &sur = ic->surroundingText();
            if (silent(ic) || !sur.isValid()) return;
            state(ic)->text.surrounding(text_before(sur.text(), sur.cursor(), sur.anchor()));
        }));
    /* The cursor may be anywhere after these: start over. */
    auto forget = [this](fcitx::Event &e) {
        auto *ic = static_cast<fcitx::InputContextEvent &>(e).inputContext();
        State *st = state(ic);
        refresh_settings();
        if (e.type() == fcitx::EventType::InputContextFocusIn)
            ic->statusArea().addAction(fcitx::StatusGroup::AfterInputMethod, &settings_action_);
        if (!silent(ic)) learn(st);
        st->line.clear();
        st->deferred.reset();
        hide(ic, st);
        st->text.forget();
        st->expect_ours = false;
        st->event(LAYA_EVENT_JUMP);
    };
    for (EventType t : {EventType::InputContextFocusIn, EventType::InputContextFocusOut,
                        EventType::InputContextReset, EventType::InputContextSwitchInputMethod})
        handlers_.emplace_back(instance_->watchEvent(t, EventWatcherPhase::PostInputMethod, forget));
    handlers_.emplace_back(instance_->watchEvent(EventType::InputContextCapabilityChanged,
                                                 EventWatcherPhase::PostInputMethod, [forget](fcitx::Event &e) {
                                                     auto *ic = static_cast<fcitx::InputContextEvent &>(e).inputContext();
                                                     if (silent(ic)) forget(e);
                                                 }));
}

void Addon::on_key(fcitx::KeyEvent &ev) {
    auto *ic = ev.inputContext();
    State *st = state(ic);
    if (silent(ic)) {
        st->deferred.reset();
        hide(ic, st);
        st->text.forget();
        return;
    }
    const fcitx::Key key = ev.key();
    if (ev.isRelease() || key.isModifier()) return;
    st->deferred.reset();   /* stale: this key changes the context */
    st->text.key_arrived();
    const bool spaced = st->spaced;
    st->spaced = false;
    if (st->message) {
        hide(ic, st);
        return;
    }
    /* A suggestion brought the blank after its word: punctuation typed next
     * goes before it ("help " + "." is "help. "), where the client lets us
     * delete that blank (as the IBus engine and `laya type` do). */
    const uint32_t uc = fcitx::Key::keySymToUnicode(key.sym());
    if (spaced && laya_goes_before_blank(uc) &&
        !key.states().testAny(fcitx::KeyStates{fcitx::KeyState::Ctrl, fcitx::KeyState::Alt, fcitx::KeyState::Super}) &&
        ic->capabilityFlags().test(fcitx::CapabilityFlag::SurroundingText)) {
        hide(ic, st);
        ic->deleteSurroundingText(-1, 1);
        st->text.backspace();
        st->expect_ours = true;
        ic->commitString(std::string{static_cast<char>(uc), ' '});
        ev.filterAndAccept();
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
    const bool esc = key.check(FcitxKey_Escape);
    if (esc || types_on(key)) pass_over(st);
    hide(ic, st);
    if (esc) ev.filterAndAccept();
    /* Any other key goes on to the engine as if we had never been there. */
}

/* Our list, on screen, was passed over: the decider and the memory are
 * told, and the list goes down after. Passed over: Esc, and a key that
 * types on past it (types_on: a character, pinyin's letters included, Enter
 * or Backspace). The rule is the one `laya eval --feedback` measured and the
 * feedback constants were chosen with (src/eval/eval_type.c: every list
 * shown and not taken gets -1, whatever the typist's next key), the IBus
 * engine's and `laya type`'s; a front end that reported less would learn
 * less than the evaluation assumes. A list the decision held back is never
 * on screen, so never judged; there is no reading-time rule (the
 * evaluation has none: the decision's burst floor is what keeps lists from
 * a typist typing too fast to read). Not a verdict: cursor movement,
 * Delete, Tab when it is not the accept key, shortcuts, focus changes,
 * resets (the list comes down unjudged). */
void Addon::pass_over(State *st) {
    st->event(LAYA_EVENT_IGNORED);
    if (st->session) laya_session_feedback(st->session, -1);
}

void Addon::on_key_passed(fcitx::KeyEvent &ev) {
    auto *ic = ev.inputContext();
    const fcitx::Key key = ev.key();
    /* forward(): the core commits the key's character in another layout
     * itself, and that commit is seen as one. */
    if (ev.isRelease() || key.isModifier() || silent(ic) || ev.forward()) return;
    State *st = state(ic);
    const bool plain = !key.states().testAny(
        fcitx::KeyStates{fcitx::KeyState::Ctrl, fcitx::KeyState::Alt, fcitx::KeyState::Super});
    uint32_t c = fcitx::Key::keySymToUnicode(key.sym());
    if (plain && key.check(FcitxKey_BackSpace)) {
        st->text.backspace();
        st->event(LAYA_EVENT_BACKSPACE);
        schedule(ic);
    } else if (plain && c >= 0x20 && c != 0x7f) {
        st->text.typed(c);
        st->event(LAYA_EVENT_CHAR);
        schedule(ic);
    } else {
        /* Return, arrows, Delete, Tab, shortcuts: they may move the cursor
         * or edit in ways we cannot follow. */
        st->text.forget();
        st->event(LAYA_EVENT_JUMP);
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
    if (silent(ic) || !ic->hasFocus()) return;
    hide(ic, st);
    if (!model_) {
        tell_model_error(ic, st);
        return;
    }
    if (!ic->inputPanel().empty()) return;   /* the engine shows something of its own */
    const auto &sur = ic->surroundingText();
    bool have = ic->capabilityFlags().test(fcitx::CapabilityFlag::SurroundingText) && sur.isValid();
    std::string ctx = st->text.context(have, have ? text_before(sur.text(), sur.cursor(), sur.anchor()) : "");
    if (ctx.empty() || !st->decider || !settings_.v.enabled) return;
    if (!st->session && laya_session_new(model_.get(), &st->session) != LAYA_OK) {
        st->session = nullptr;
        return;
    }
    laya_session_set_memory(st->session, memory_.get());
    laya_session_set_intent(st->session, intent_.get());
    laya_session_set_notes(st->session, notes_.get());
    laya_suggestion out[MAX_SHOWN], keep[MAX_SHOWN];
    int n = 0, n_keep = 0;
    double t0 = now_ms();
    if (laya_session_set_context(st->session, ctx.data(), ctx.size()) != LAYA_OK ||
        laya_suggest(st->session, settings_.v.count, out, &n) != LAYA_OK ||
        laya_decide(st->decider, now_ms(), out, n, keep, &n_keep) != LAYA_OK)
        return;
    int n_shown = 0;
    for (int i = 0; i < n_keep; i++)
        if (keep[i].len) {
            st->shown.emplace_back(keep[i].text, keep[i].len);
            keep[n_shown++] = keep[i];
        }
    /* what is judged by feedback is what the list shows */
    laya_session_shown(st->session, keep, n_shown);
    /* Counts and time only: never the text. */
    LAYA_LOG(Debug) << "suggest: " << n << " found, " << st->shown.size() << " shown, "
                    << static_cast<long>((now_ms() - t0) * 1000) << " us";
    if (!st->shown.empty()) show(ic, st);
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

void Addon::show(fcitx::InputContext *ic, State *st) {
    auto list = std::make_unique<fcitx::CommonCandidateList>();
    int n = static_cast<int>(st->shown.size());
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
     * (C11) and the confident intent (C10): "Laya · → Dentist · send_email 0.93". */
    std::string aux = AUX;
    const laya_note *note = nullptr;
    int nn = 0;
    if (st->session && notes_ && laya_session_notes(st->session, 1, &note, &nn) == LAYA_OK && nn > 0) {
        aux += " \u00b7 \u2192 ";
        aux += note[0].title;
    }
    const char *iname = nullptr;
    float ip = 0;
    if (st->session && laya_session_intent(st->session, &iname, &ip) == LAYA_OK && iname) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " \u00b7 %s %.2f", iname, static_cast<double>(ip));
        aux += buf;
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
    st->ours = nullptr;
    st->message = false;
    if (!ours) return;
    panel.reset();
    ic->updateUserInterface(fcitx::UserInterfaceComponent::InputPanel);
}

void Addon::accept(fcitx::InputContext *ic, int i) {
    State *st = state(ic);
    if (i < 0 || i >= static_cast<int>(st->shown.size())) return;
    std::string s = st->shown[static_cast<size_t>(i)];
    hide(ic, st);
    st->event(LAYA_EVENT_ACCEPTED);
    /* taken: it ranks a little higher after this context next time */
    if (st->session) laya_session_feedback(st->session, i);
    st->expect_ours = true;
    st->spaced = !s.empty() && s.back() == ' ';
    ic->commitString(s);
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
