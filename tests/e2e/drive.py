#!/usr/bin/env python3
"""tests/e2e/drive.py - the IBus end-to-end checks; run by tests/e2e/ibus.sh
inside xvfb-run and dbus-run-session with a throw-away HOME.

argv: LAYA PREFIX WORKDIR MODEL SHOT
PREFIX holds a fresh `make install-ibus` (its component in
PREFIX/share/ibus/component, which ibus-daemon is pointed at with
IBUS_COMPONENT_PATH as the README says for a private prefix); MODEL is the
model the engine is given (LAYA_MODEL). What the engine must show is asked
of `laya serve --stdio` on the same model, with the decision on. The
intent, notes and password-prompt checks use the shipped model
(models/default.safetensors, its intent head beside it), whatever MODEL is.
Prints ok/FAIL lines and "N passed, N failed"."""
import json
import multiprocessing
import os
import queue
import re
import subprocess
import sys
import time

laya, prefix, work, model, shot = sys.argv[1:6]
engine = os.path.join(prefix, "libexec", "ibus-engine-laya")
component_dir = os.path.join(prefix, "share", "ibus", "component")
HERE = os.path.dirname(os.path.abspath(__file__))
EN, ZH, ZH_NEXT = os.environ.get("TEXT") or "Best re", "他听完点了点", "这家店的外卖很好"
passed = failed = 0
procs = []


def result(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok  ", name, flush=True)
    else:
        failed += 1
        print("FAIL", name, detail, flush=True)
    return cond


def finish(code=None):
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(code if code is not None else (1 if failed else 0))


def sh(*args, timeout=10, env=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def wait_for(fn, secs):
    end = time.time() + secs
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    return fn()


def expected(context):
    """The decided suggestions for context, from a fresh session."""
    req = json.dumps({"op": "suggest", "session": "e", "context": context, "k": 3, "decide": True},
                     ensure_ascii=False)
    r = subprocess.run([laya, "serve", "--stdio", "--model", model], input=req + "\n",
                       capture_output=True, text=True, timeout=30)
    return json.loads(r.stdout)["suggestions"] if r.returncode == 0 and r.stdout else []


# --- the installed files ----------------------------------------------------------
want_en, want_zh = expected(EN), expected(ZH)
if not result("the fixture model suggests for both test texts", want_en and want_zh, (want_en, want_zh)):
    finish(1)
best, best_zh = want_en[0], want_zh[0]
xml_path = os.path.join(component_dir, "laya.xml")
xml = open(xml_path, encoding="utf-8").read() if os.path.exists(xml_path) else ""
result("install-ibus: the component names the installed engine",
       f"<exec>{engine} --ibus</exec>" in xml and os.access(engine, os.X_OK), xml_path)
result("install-ibus: the model is installed with the engine",
       os.path.getsize(os.path.join(prefix, "share", "laya", "default.safetensors")) > 0)
result("install: the manual and the bash completion",
       os.path.exists(os.path.join(prefix, "share/man/man1/laya.1")) and
       os.path.exists(os.path.join(prefix, "share/bash-completion/completions/laya")))
env = {k: v for k, v in os.environ.items() if k != "LAYA_MODEL"}
r = sh(engine, "--check", env=env)
m = re.search(r"model (.*) loads", r.stdout)
result("the installed engine finds the installed model", r.returncode == 0 and m and
       os.path.realpath(m.group(1)) == os.path.realpath(os.path.join(prefix, "share/laya/default.safetensors")),
       (r.returncode, r.stdout, r.stderr))
r = sh(engine, "--check", env=dict(env, LAYA_MODEL=os.path.join(work, "none.safetensors")))
result("--check fails, saying why, when the model is missing",
       r.returncode == 1 and "none.safetensors" in r.stderr, (r.returncode, r.stderr))

# --- enabling, as the README says: gsettings, then ibus-daemon ------------------------
sh("gsettings", "set", "org.freedesktop.ibus.general", "preload-engines", "['xkb:us::eng', 'laya']")
sh("gsettings", "set", "org.freedesktop.ibus.general", "use-system-keyboard-layout", "true")
os.environ["IBUS_COMPONENT_PATH"] = "/usr/share/ibus/component:" + component_dir
os.environ["LAYA_MODEL"] = model
os.environ["G_MESSAGES_DEBUG"] = "laya"   # the engine's counts (prefetch), never text
daemon_log = open(os.path.join(work, "ibus-daemon.log"), "w")
procs.append(subprocess.Popen(["ibus-daemon", "--xim", "--replace", "--verbose"],
                              stdout=daemon_log, stderr=subprocess.STDOUT))
up = wait_for(lambda: sh("ibus", "engine").returncode == 0, 15)
if not result("ibus-daemon starts", up):
    print(open(os.path.join(work, "ibus-daemon.log")).read()[-2000:])
    finish(1)
listed = sh("ibus", "list-engine").stdout
result("ibus list-engine shows laya", re.search(r"^\s+laya - Laya$", listed, re.M), listed[-500:])

# --- the window ------------------------------------------------------------------
os.environ["GTK_IM_MODULE"] = "ibus"
win = subprocess.Popen([sys.executable, os.path.join(HERE, "window.py")], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, bufsize=1)
procs.append(win)


def cmd(c):
    win.stdin.write(c + "\n")
    win.stdin.flush()
    reply = win.stdout.readline()
    return json.loads(reply) if reply.startswith(("{", '"')) else reply.strip()


def text_of(name):
    return cmd("dump")[name]["text"]


def last_preedit(name):
    return (cmd("dump")[name]["preedits"] or [None])[-1]


def ghost_is(name, want, secs=8):
    return wait_for(lambda: last_preedit(name) == want, secs)


def ghost_any(name, secs=8):
    """The ghost text shown in field name (the last preedit, once it is not
    empty), or None. After the first field the engine has learned from the
    fields before (the suggestion Tab took, the lists passed over), so a
    later field's ghost may be the same word with or without its blank
    ("lp" / "lp " after "Thank you for your he"): same_word."""
    return wait_for(lambda: last_preedit(name) or None, secs)


def same_word(ghost):
    return ghost is not None and ghost.rstrip(" ") == best.rstrip(" ")


def feedback_rows():
    """The memory's feedback entries for a context that ends with EN, as
    `laya memory list --feedback` reads the store (the engine writes its
    feedback there with each commit: when a field loses the focus). An
    entry's context is the key the engine keeps, the last word typed and the
    two units before it (learn_fb.h: "for your he" for "Thank you for your
    he"), so it is a suffix of EN. Each field's text starts with EN, and the
    engine does not read the last field's surrounding text, which IBus keeps
    after a focus change until the client sends the new one (it once keyed
    the first list in a field "reBest re": not a suffix of EN)."""
    r = sh(laya, "memory", "list", "--feedback", "--json")
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return [x for x in rows if x["context"] and EN.endswith(x["context"])]


def feedback(text):
    """(ignored, accepted) summed over the feedback entries for text after EN
    ((0, 0) for None: no ghost was shown)."""
    rows = [x for x in feedback_rows() if x["text"] == text]
    return (sum(x["ignored"] for x in rows), sum(x["accepted"] for x in rows))


def ignored_total():
    """Every list passed over after EN: the ignored counts of all its texts."""
    return sum(x["ignored"] for x in feedback_rows())


def candidate_window():
    """(x, y) of the mapped IBus candidate window, None if there is none."""
    tree = sh("xwininfo", "-root", "-tree").stdout
    for wid in re.findall(r"^\s+(0x[0-9a-f]+) \"ibus-ui-gtk3\"", tree, re.M):
        info = sh("xwininfo", "-id", wid).stdout
        if "IsViewable" in info and int(re.search(r"Width: (\d+)", info).group(1)) > 20:
            return (int(re.search(r"Absolute upper-left X:\s+(-?\d+)", info).group(1)),
                    int(re.search(r"Absolute upper-left Y:\s+(-?\d+)", info).group(1)))
    return None


if not result("window opens", win.stdout.readline().strip() == "ready"):
    finish(1)
wid = wait_for(lambda: sh("xdotool", "search", "--name", "^laya-e2e$").stdout.split(), 10)
if not result("window found", bool(wid)):
    finish(1)
bound = sh(sys.executable, os.path.join(HERE, "keymap.py"), EN, ZH, ZH_NEXT, "".join(want_zh) + "1")
result("the test's characters are bound in the keymap", bound.returncode == 0, bound.stderr)
sh("xdotool", "windowfocus", "--sync", wid[0])
cmd("focus plain")
time.sleep(0.5)
r = sh("ibus", "engine", "laya")
result("ibus engine laya exits 0 (IBus keeps the system keyboard layout)", r.returncode == 0,
       (r.returncode, r.stderr))
result("laya is the current engine", wait_for(lambda: sh("ibus", "engine").stdout.strip() == "laya", 5))
time.sleep(0.5)

# --- ghost text at the caret, Tab accepts ------------------------------------------
sh("xdotool", "type", "--delay", "120", EN)
shown = ghost_is("plain", best)
d = cmd("dump")
result("typing: keys reach the entry unchanged", d["plain"]["text"] == EN, d["plain"])
result("typing: the best suggestion is the ghost text", shown, (best, d["plain"]["preedits"][-5:]))
time.sleep(0.5)   # let the candidate window draw and follow the caret
at, pos = cmd("caret plain"), candidate_window()
result("the candidate list is at the caret, below it", pos and abs(pos[0] - at["x"]) <= 4 and
       at["y"] + at["h"] - 2 <= pos[1] <= at["y"] + at["h"] + 12, (pos, at))
# The window and the candidate list over it: the root window cut to the window.
geo = re.search(r"Geometry: (\d+)x(\d+)", sh("xdotool", "getwindowgeometry", wid[0]).stdout)
sh("import", "-window", "root", "-crop", f"{geo.group(1)}x{geo.group(2)}+0+0" if geo else "800x400+0+0",
   "+repage", shot, timeout=20)
sh("xdotool", "key", "Tab")
ok = wait_for(lambda: text_of("plain") == EN + best, 5)
d = cmd("dump")
result("Tab inserts the suggestion", ok, (d["plain"]["text"], best))
result("the accepted ghost is gone after Tab", "" in d["plain"]["preedits"][-3:] and
       d["plain"]["preedits"][-1] != best, d["plain"]["preedits"][-3:])

# --- a suggestion that ends in a blank: a blank typed next is absorbed, ---------------
# --- punctuation typed next goes before it ---------------------------------------
def typed_after(text, typed):
    """The text once `typed` is typed right after `text`, which ends with an
    accepted suggestion: a blank typed first after an accepted blank is
    absorbed (the library's spacing rule; "...updated  C" was the bug)."""
    return text + (typed[1:] if text.endswith(" ") and typed.startswith(" ") else typed)


# The fixture text has "I would like to book a table": a word the model
# completes with the blank after it.
typed_sp = next((t for t in (" I would like to bo", " Please bring the rep", " The meeting is on Mon")
                 if (expected(typed_after(EN + best, t)) or [""])[0].endswith(" ")), None)
if result("the model ends a suggestion with the blank after its word", typed_sp,
          [(t, expected(typed_after(EN + best, t))) for t in (" I would like to bo", " Please bring the rep")]):
    at_sp = typed_after(EN + best, typed_sp)
    sp = expected(at_sp)[0]
    sh("xdotool", "type", "--delay", "120", typed_sp)
    ok = wait_for(lambda: text_of("plain") == at_sp, 5)
    result("typing on after the first suggestion taken (%r): its blank is not doubled" % best, ok,
           (at_sp, text_of("plain")))
    shown = ghost_is("plain", sp)
    sh("xdotool", "key", "Tab")
    ok = wait_for(lambda: text_of("plain") == at_sp + sp, 5)
    result("Tab inserts the suggestion with its blank", shown and ok, (sp, text_of("plain")))
    sh("xdotool", "type", " ")
    time.sleep(0.8)
    result("a blank typed next is absorbed: no double blank", text_of("plain") == at_sp + sp, text_of("plain"))
    sh("xdotool", "type", ".")
    ok = wait_for(lambda: text_of("plain") == at_sp + sp[:-1] + ". ", 5)
    result("a period typed next goes before the blank", ok, text_of("plain"))

# --- Esc dismisses, then Tab is an ordinary Tab -------------------------------------
cmd("focus plain2")
taken = wait_for(lambda: feedback(best)[1] > 0.9 and feedback(best), 5)
result("feedback: the suggestion Tab took is taken, not passed over",
       taken and taken[0] < 0.1, feedback(best))
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", EN)
g_esc = ghost_any("plain2")
sh("xdotool", "key", "Escape")
gone = ghost_is("plain2", "", 5)
sh("xdotool", "key", "Tab")
time.sleep(0.8)
d = cmd("dump")
result("Esc dismisses the ghost and inserts nothing", same_word(g_esc) and gone,
       (g_esc, d["plain2"]["preedits"][-3:]))
result("after Esc, Tab passes through: the text is what was typed", d["plain2"]["text"] == EN, d["plain2"])

# --- a plain digit types the digit, even with suggestions shown ---------------------
cmd("focus num")
# Esc's verdict, written when plain2 lost the focus
passed_over = wait_for(lambda: feedback(g_esc)[0] > 0.9 and feedback(g_esc), 5)
result("feedback: Esc passes the list over", bool(passed_over), (g_esc, feedback(g_esc)))
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", EN)
g_num = ghost_any("num")
before = feedback(g_num)   # (its verdict is written when the field loses the focus)
sh("xdotool", "type", "1")
ok = wait_for(lambda: text_of("num") == EN + "1", 5)
result("a digit types the digit and picks nothing", same_word(g_num) and ok, (g_num, text_of("num")))

# --- Chinese: accept 头。, then a busy application must not lose characters ----------
cmd("focus zh")
# Typing on past a shown list (the digit) passes it over, as Esc does and
# as `laya eval --feedback`'s typist does.
after = wait_for(lambda: feedback(g_num)[0] > before[0] + 0.9, 5)
result("feedback: typing on past the shown list passes it over", after, (g_num, before, feedback(g_num)))
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", ZH)
shown = ghost_is("zh", best_zh)
sh("xdotool", "key", "Tab")
ok = wait_for(lambda: text_of("zh") == ZH + best_zh, 5)
result(f"Chinese: the ghost {best_zh!r} is shown and Tab inserts it", shown and ok, cmd("dump")["zh"])
cmd("stall 1.5")   # the window is busy while the next characters are typed
sh("xdotool", "type", "--delay", "120", ZH_NEXT)
ok = wait_for(lambda: text_of("zh") == ZH + best_zh + ZH_NEXT, 8)
result("typing on into a busy window loses no character", ok, (text_of("zh"), ZH + best_zh + ZH_NEXT))

# --- a password field: nothing shown, nothing accepted -----------------------------
cmd("focus password")
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", EN)
time.sleep(1.5)
sh("xdotool", "key", "Tab")
time.sleep(0.8)
d = cmd("dump")
result("password field: no ghost text ever", not any(d["password"]["preedits"]), d["password"]["preedits"])
result("password field: Tab accepts nothing", d["password"]["text"] == EN, d["password"]["text"])

# --- the settings file (what `laya settings` writes), read again at the next focus ---
settings = os.path.join(os.environ["XDG_CONFIG_HOME"], "laya", "settings.ini")
os.makedirs(os.path.dirname(settings), exist_ok=True)
with open(settings, "w") as f:
    f.write("[suggestions]\nenabled=true\ncount=1\naccept_key=End\n")
cmd("focus set1")
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", EN)
g_set = ghost_any("set1")
sh("xdotool", "key", "End")
ok = wait_for(lambda: g_set and text_of("set1") == EN + g_set, 5)
result("settings: accept_key=End, read at the focus change, makes End accept", same_word(g_set) and ok,
       (g_set, cmd("dump")["set1"]))
with open(settings, "w") as f:
    f.write("[suggestions]\nenabled=false\n")
cmd("focus set2")
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", EN)
time.sleep(1.5)
sh("xdotool", "key", "End")
time.sleep(0.5)
d = cmd("dump")
result("settings: enabled=false shows nothing and End accepts nothing",
       not any(d["set2"]["preedits"]) and d["set2"]["text"] == EN, d["set2"])
os.unlink(settings)

# --- moving the cursor away from a shown list is no verdict on it ---------------------
cmd("focus move")
time.sleep(0.3)
before = ignored_total()
sh("xdotool", "type", "--delay", "120", EN)
g_move = ghost_any("move")
sh("xdotool", "key", "Left")   # the engine commits the line here, its feedback with it
time.sleep(0.5)
cmd("focus plain")
time.sleep(1)
after = ignored_total()
result("feedback: a cursor movement is no verdict on the shown list",
       same_word(g_move) and before > 0.9 and abs(after - before) < 0.1, (g_move, before, after))

# --- Enter ends the line without the shown suggestion: passed over ---------------------
cmd("focus enter")
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", EN)
g_enter = ghost_any("enter")
before = feedback(g_enter)
sh("xdotool", "key", "Return")   # the engine commits the line here
ok = wait_for(lambda: feedback(g_enter)[0] > before[0] + 0.9, 5)
result("feedback: Enter passes the shown list over", same_word(g_enter) and ok,
       (g_enter, before, feedback(g_enter)))

# --- a name typed and erased leaves no byte on disk ------------------------------------
# The lists shown while it is typed are passed over (feedback, keyed by the
# text before the cursor), but the name is in no committed line: none of it
# may reach memory.db, its -wal or -shm. Checked again once the engine has
# ended (it closes the memory then).
NAME = "Zorblatt"
store = os.path.join(os.environ["XDG_DATA_HOME"], "laya", "memory.db")


def on_disk(needle):
    """The store's files (memory.db, -wal, -shm) that hold needle's bytes."""
    b = needle.encode()
    return [p for p in (store, store + "-wal", store + "-shm")
            if os.path.exists(p) and b in open(p, "rb").read()]


cmd("focus name")
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", "Hi " + NAME)
typed_name = wait_for(lambda: text_of("name") == "Hi " + NAME, 5)
# lists were shown (and passed over) while it was typed
g_name = [g for g in cmd("dump")["name"]["preedits"] if g]
sh("xdotool", "key", "--delay", "120", *["BackSpace"] * len(NAME))
erased = wait_for(lambda: text_of("name") == "Hi ", 5)
cmd("focus plain")   # the field's line, "Hi ", is committed here
time.sleep(1)
result("a name typed and erased: no byte of it in memory.db, -wal or -shm",
       typed_name and erased and g_name and os.path.exists(store) and not on_disk(NAME[:4]),
       (text_of("name"), g_name, on_disk(NAME[:4])))

# --- each field's line is committed as it was typed there --------------------------
# Every field above started empty and got EN first: a commit that holds EN
# twice began with the last field's surrounding text, which IBus keeps
# after a focus change until the client sends the new field's.
r = sh(laya, "memory", "list", "--json")
commits = [json.loads(line)["text"] for line in r.stdout.splitlines() if line.startswith("{")]
result("commits: no field's line starts with the last field's text",
       commits and not any(EN + EN in t for t in commits), commits)

result("the engine process ran and is alive", sh("pgrep", "-f", "^" + engine).returncode == 0)
daemon_log.flush()
ahead = re.findall(r"prefetch: (\d+) us", open(os.path.join(work, "ibus-daemon.log")).read())
result(f"between keys the engine computes ahead ({len(ahead)} prefetches)", len(ahead) > 0)
cmd("quit")



def start_daemon(model_path):
    """ibus-daemon --replace without a panel (its clients draw the auxiliary
    text and the list themselves), its engine given model_path. The engines
    of the daemon it replaces have ended (their memory closed) on return."""
    old = set(sh("pgrep", "-f", "^" + engine).stdout.split())
    os.environ["LAYA_MODEL"] = model_path
    procs.append(subprocess.Popen(["ibus-daemon", "--replace", "--panel", "disable"],
                                  stdout=daemon_log, stderr=subprocess.STDOUT))
    time.sleep(1)
    wait_for(lambda: sh("ibus", "list-engine").returncode == 0, 15)
    wait_for(lambda: not old & set(sh("pgrep", "-f", "^" + engine).stdout.split()), 10)


# --- the shipped model, its intent head and the user's notes: what the caret shows ------
# The auxiliary text (the list's title) is the related note's title only:
# the intent's label never stands there (issue 39), and it goes with the
# list, on Esc too. After a password prompt typed into the field nothing is
# shown at all: no list, no note, no ghost. An IBus client of our own draws
# what the engine sends it, as the panel would.
SHIPPED = os.path.realpath(os.path.join(HERE, "..", "..", "models", "default.safetensors"))
INTENTS = ("schedule_meeting", "send_email", "search_web", "file_operation", "app_switch", "system_control",
           "text_edit")
SECRET = "quarterly report 7"
notes_dir = os.path.join(work, "notes")
os.makedirs(notes_dir, exist_ok=True)
with open(os.path.join(notes_dir, "report.md"), "w") as f:
    f.write("# Quarterly report\n\nPlease send the quarterly report to Anna before Friday.\n")
r = sh(laya, "notes", "index", notes_dir)
result("the user's notes are indexed (laya notes index)", r.returncode == 0, r.stderr)
result("the shipped model has its intent head beside it",
       os.path.exists(SHIPPED.replace(".safetensors", ".intent.safetensors")), SHIPPED)
start_daemon(SHIPPED)


def shipped_checks(q):
    """In a child process: a process's IBusBus stays with the daemon it
    first reached, and the daemon is replaced after this. Puts (name, ok,
    detail) triples on q."""
    import gi
    gi.require_version("IBus", "1.0")
    from gi.repository import GLib, IBus
    IBus.init()
    ctx = IBus.Bus().create_input_context("laya-e2e-shipped")
    # what the engine sent, in order: (text, visible), (candidates, visible), pre-edit texts
    aux, table, pre = [], [], []
    ctx.connect("update-auxiliary-text", lambda _c, t, v: aux.append((t.get_text(), v)))
    ctx.connect("show-auxiliary-text", lambda _c: aux.append((aux[-1][0] if aux else "", True)))
    ctx.connect("hide-auxiliary-text", lambda _c: aux.append(("", False)))
    ctx.connect("update-lookup-table", lambda _c, t, v: table.append((t.get_number_of_candidates(), v)))
    ctx.connect("show-lookup-table", lambda _c: table.append((table[-1][0] if table else 0, True)))
    ctx.connect("hide-lookup-table", lambda _c: table.append((0, False)))
    ctx.connect("update-preedit-text", lambda _c, t, _p, v: pre.append(t.get_text() if v else ""))
    ctx.set_capabilities(IBus.Capabilite.PREEDIT_TEXT | IBus.Capabilite.AUXILIARY_TEXT |
                         IBus.Capabilite.LOOKUP_TABLE | IBus.Capabilite.FOCUS)
    ctx.focus_in()
    ctx.set_engine("laya")

    def pump():
        while GLib.MainContext.default().iteration(False):
            pass

    def type_text(text):
        for ch in text:
            ctx.process_key_event(IBus.unicode_to_keyval(ch), 0, 0)
            pump()
            time.sleep(0.05)

    def settle(secs):
        end = time.time() + secs
        while time.time() < end:
            pump()
            time.sleep(0.05)

    def titled():
        return bool(aux) and aux[-1][1]

    def listed():
        return bool(table) and table[-1][1] and table[-1][0] > 0

    out = []
    type_text("Could you please send me the")
    wait_for(lambda: (pump(), listed() and titled())[1], 10)
    seen = [t for t, v in aux if v]
    out.append(("notes: the list's title is the related note's", listed() and
                any(t == "\u2192 Quarterly report" for t in seen), (table[-3:], aux[-3:])))
    out.append(("intent: its label never stands in the auxiliary text",
                seen and not any(i in t for t in seen for i in INTENTS), seen))
    ctx.process_key_event(IBus.KEY_Escape, 9, 0)
    settle(0.8)
    out.append(("Esc: no auxiliary text, no list", not titled() and not listed(), (aux[-2:], table[-2:])))

    ctx.process_key_event(IBus.KEY_Return, 36, 0)   # a new line
    type_text("[sudo] password for anna: ")
    settle(1)
    na, nt, npre = len(aux), len(table), len(pre)
    type_text(SECRET)
    settle(1.5)
    out.append(("a password prompt typed in the field: no list, no note, no ghost for the secret",
                not titled() and not listed() and not any(v for _, v in aux[na:]) and
                not any(n and v for n, v in table[nt:]) and not any(pre[npre:]),
                (aux[na:], table[nt:], pre[npre:])))
    ctx.process_key_event(IBus.KEY_Return, 36, 0)
    type_text("Could you please send me the")
    out.append(("after the line ends, suggestions come back", wait_for(lambda: (pump(), listed())[1], 10),
                table[-3:]))
    ctx.focus_out()
    settle(0.5)
    q.put(out)


q = multiprocessing.get_context("fork").Queue()
child = multiprocessing.get_context("fork").Process(target=shipped_checks, args=(q,))
child.start()
try:
    for name, ok, detail in q.get(timeout=90):
        result(name, ok, detail)
except queue.Empty:
    result("the shipped model's checks ran", False, "no answer in 90 s")
child.join(10)
if child.is_alive():
    child.kill()

# --- without a model: the user is told, at the caret --------------------------------
# A daemon whose engine has no model, and an IBus client that draws the
# auxiliary text itself (as the panel does for GTK), so the test reads
# exactly what a user would see.
# The property menu's "Laya settings" starts $LAYA_SETTINGS_PROGRAM (the
# installed window otherwise): here a script that leaves a mark.
opened = os.path.join(work, "settings-opened")
fake_window = os.path.join(work, "laya-settings")
with open(fake_window, "w") as f:
    f.write(f"#!/bin/sh\ntouch '{opened}'\n")
os.chmod(fake_window, 0o755)
os.environ["LAYA_SETTINGS_PROGRAM"] = fake_window
start_daemon(os.path.join(work, "none.safetensors"))
# every engine that had the memory open has ended: what they left on disk
result("after the engines ended: no byte of the erased name, nor of the secret, on disk",
       not on_disk(NAME[:4]) and not on_disk(SECRET), (on_disk(NAME[:4]), on_disk(SECRET)))
import gi  # noqa: E402
gi.require_version("IBus", "1.0")
from gi.repository import GLib, IBus  # noqa: E402
IBus.init()
bus = IBus.Bus()
ctx = bus.create_input_context("laya-e2e")
aux, props = [], []
ctx.connect("update-auxiliary-text", lambda _c, t, visible: aux.append((t.get_text(), visible)))
ctx.connect("register-properties", lambda _c, pl: props.extend(
    (pl.get(i).get_key(), pl.get(i).get_label().get_text()) for i in range(64) if pl.get(i)))
ctx.set_capabilities(IBus.Capabilite.PREEDIT_TEXT | IBus.Capabilite.AUXILIARY_TEXT |
                     IBus.Capabilite.LOOKUP_TABLE | IBus.Capabilite.FOCUS | IBus.Capabilite.PROPERTY)
ctx.focus_in()
ctx.set_engine("laya")
ctx.process_key_event(IBus.KEY_a, 38, 0)


def pump():
    while GLib.MainContext.default().iteration(False):
        pass
    return any(visible and "no model" in t for t, visible in aux)


result("without a model the engine says so at the caret, with the fix", wait_for(pump, 8) and
       any("none.safetensors" in t and "LAYA_MODEL" in t for t, _ in aux), aux)
result("the engine's property menu offers Laya settings", any(k == "laya-settings" for k, _ in props), props)
ctx.property_activate("laya-settings", 0)
pump()
result("activating it starts the settings window", wait_for(lambda: (pump(), os.path.exists(opened))[1], 5))
finish()
