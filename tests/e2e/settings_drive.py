#!/usr/bin/env python3
"""tests/e2e/settings_drive.py - the settings window's checks; run by
tests/e2e/settings.sh inside xvfb-run and dbus-run-session with a
throw-away HOME, XDG_CONFIG_HOME and XDG_DATA_HOME.

argv: LAYA SHOT WORKDIR
The memory gets a few entries (`laya memory add`), `laya settings` opens
the window, and every change is made as a person would, with key presses
on the window's mnemonics (Alt+letter) and typing; each is checked where
it lands: the settings file, `laya incognito status`, `laya memory list`.
Prints ok/FAIL lines and "N passed, N failed"."""
import os
import re
import subprocess
import sys
import time

laya, shot, work = sys.argv[1:4]
settings = os.path.join(os.environ["XDG_CONFIG_HOME"], "laya", "settings.ini")
ENTRIES = ["Best regards, Tom", "I would like to book a table for two", "我想订个外卖",
           "See you tomorrow at ten", "The meeting is on Monday"]
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


def sh(*args, timeout=10):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def wait_for(fn, secs):
    end = time.time() + secs
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    return fn()


def settings_file():
    try:
        return open(settings).read()
    except OSError:
        return ""


def has(key, value):
    return wait_for(lambda: re.search(rf"^{key}={value}$", settings_file(), re.M), 5)


def memory():
    return sh(laya, "memory", "list").stdout


def key(*keys):
    sh("xdotool", "key", "--delay", "80", *keys)
    time.sleep(0.4)


for e in ENTRIES:
    sh(laya, "memory", "add", e)
sh(laya, "memory", "add", ENTRIES[0])
if not result("the memory holds the entries", all(e in memory() for e in ENTRIES), memory()):
    finish(1)
# A list passed over after "Best re": a feedback entry that forgetting
# "Best regards, Tom" takes with it (its context occurs in that text). It
# reaches the store with the commit that holds its context.
subprocess.run([laya, "serve", "--stdio"], input='{"op":"suggest","context":"Best re","k":3}\n'
               '{"op":"feedback","accepted":-1}\n{"op":"commit","text":"Best regards, Tom"}\n',
               capture_output=True, text=True, timeout=60)


def feedback_rows():
    return [ln for ln in sh(laya, "memory", "list", "--feedback", "--json").stdout.splitlines()
            if ln.startswith("{")]


result("a feedback entry is kept for the list passed over", len(feedback_rows()) >= 1, feedback_rows())

log = open(os.path.join(work, "window.log"), "w")
win = subprocess.Popen([laya, "settings"], stdout=log, stderr=subprocess.STDOUT)
procs.append(win)
wid = wait_for(lambda: sh("xdotool", "search", "--name", "^Laya settings$").stdout.split(), 15)
if not result("laya settings opens the window", bool(wid)):
    finish(1)
wid = wid[0]
time.sleep(1)
sh("xdotool", "windowfocus", "--sync", wid)
time.sleep(0.5)
result("nothing is written before a change", not os.path.exists(settings))

# --- suggestions ---------------------------------------------------------------------
key("alt+s")
result("Alt+S turns suggestions off: enabled=false in the file", has("enabled", "false"), settings_file())
key("alt+s")
result("Alt+S again turns them on", has("enabled", "true"), settings_file())
key("alt+m")
key("ctrl+a")
sh("xdotool", "type", "--delay", "80", "7")
key("Tab")
result("How many: typed 7 is count=7", has("count", "7"), settings_file())
key("alt+m")
key("Up", "Up", "Up")
result("How many stops at 9 (Up past the top)", has("count", "9"), settings_file())
key("alt+m")
key("Down", "Down", "Down", "Down", "Down")
result("How many: Down five times from 9 is 4", has("count", "4"), settings_file())
key("alt+e")
result("Alt+E picks End as the accept key", has("accept_key", "End"), settings_file())
key("alt+r")
result("Alt+R picks Right", has("accept_key", "Right"), settings_file())
key("alt+e")
result("and End again", has("accept_key", "End"), settings_file())

# --- incognito --------------------------------------------------------------------
key("alt+i")
result("Alt+I turns incognito on, in the memory itself",
       wait_for(lambda: sh(laya, "incognito", "status").stdout.strip() == "on", 5))
sh(laya, "memory", "add", "SECRET typed while incognito")
result("and nothing is learned then", "SECRET" not in memory())
key("alt+i")
result("Alt+I again turns it off",
       wait_for(lambda: sh(laya, "incognito", "status").stdout.strip() == "off", 5))

# A second start presents the same window (one per session).
sh(laya, "settings", timeout=15)
result("a second laya settings opens no second window",
       len(sh("xdotool", "search", "--name", "^Laya settings$").stdout.split()) == 1)

# --- what was learned: find, forget ------------------------------------------------
sh(laya, "memory", "add", "learned while the window was open")
key("alt+f")
sh("xdotool", "type", "--delay", "80", "REGARDS")
time.sleep(1)
geo = re.search(r"Geometry: (\d+)x(\d+)", sh("xdotool", "getwindowgeometry", wid).stdout)
sh("import", "-window", "root", "-crop", f"{geo.group(1)}x{geo.group(2)}+0+0" if geo else "560x620+0+0",
   "+repage", os.path.join(work, "found.png"), timeout=20)
key("alt+o")
m = memory()
result("Find REGARDS, then Alt+O forgets exactly that entry",
       wait_for(lambda: "Best regards, Tom" not in memory(), 5) and
       all(e in m for e in ENTRIES[1:]), m)
result("... and the feedback entry found in it", wait_for(lambda: not feedback_rows(), 5), feedback_rows())
# the status line says both (docs/settings-forgot.png is not kept: look at it by hand)
time.sleep(0.5)
sh("import", "-window", "root", "-crop", f"{geo.group(1)}x{geo.group(2)}+0+0" if geo else "560x620+0+0",
   "+repage", os.path.join(work, "forgot.png"), timeout=20)
key("alt+f")
key("ctrl+a", "BackSpace")
sh("xdotool", "type", "--delay", "80", "外卖")
time.sleep(0.8)
key("alt+o")
result("Find 外卖 (CJK), Alt+O forgets it", wait_for(lambda: "我想订个外卖" not in memory(), 5), memory())
key("alt+f")
key("ctrl+a", "BackSpace")
time.sleep(0.5)

# The screenshot the README shows: the settings changed above, the list.
key("alt+w")
time.sleep(0.8)
sh("import", "-window", "root", "-crop", f"{geo.group(1)}x{geo.group(2)}+0+0" if geo else "560x620+0+0",
   "+repage", shot, timeout=20)
result("screenshot saved", os.path.getsize(shot) > 10000 if os.path.exists(shot) else False, shot)

# --- forget all asks first ---------------------------------------------------------
before = memory()
key("alt+a")
time.sleep(0.8)
sh("import", "-window", "root", os.path.join(work, "confirm.png"), timeout=20)
key("Escape")
result("Forget all asks first: Esc keeps everything", memory() == before and "See you tomorrow" in before, before)
key("alt+a")
time.sleep(0.8)
key("alt+f")
result("Forget all, confirmed with its button (Alt+F), empties the memory",
       wait_for(lambda: not any(e in memory() for e in ENTRIES + ["learned while"]), 5), memory())

# --- the file: what GKeyFile wrote, and what it kept --------------------------------
text = settings_file()
result("the file holds the three settings in [suggestions]",
       text.startswith("[suggestions]") and has("enabled", "true") and has("count", "4") and
       has("accept_key", "End"), text)
st = os.stat(settings)
result("the file and its folder are the user's alone", (st.st_mode & 0o077) in (0, 0o044, 0o004, 0o040) and
       (os.stat(os.path.dirname(settings)).st_mode & 0o077) == 0, oct(st.st_mode))
with open(settings, "a") as f:
    f.write("\n# kept\n[future]\nsomething=1\n")
key("alt+s")
key("alt+s")
text = settings_file()
result("a save keeps what it does not know (comments, other groups)",
       "# kept" in text and "something=1" in text and has("enabled", "true"), text)

key("alt+c")
result("Alt+C closes the window", wait_for(lambda: win.poll() is not None, 5))
result("it exits 0", win.poll() == 0, win.poll())

# --- a store that holds only feedback: Forget all is there for it (issue 39) ------
subprocess.run([laya, "serve", "--stdio"], input='{"op":"suggest","context":"I like the qu","k":3}\n'
               '{"op":"feedback","accepted":-1}\n{"op":"commit","text":"I like the quiet fox"}\n',
               capture_output=True, text=True, timeout=60)
sh(laya, "memory", "forget", "--word", "fox")
only_fb = feedback_rows()
result("the store holds feedback and no commit", len(only_fb) >= 1 and "fox" not in memory(), (only_fb, memory()))
win = subprocess.Popen([laya, "settings"], stdout=log, stderr=subprocess.STDOUT)
procs.append(win)
wid = wait_for(lambda: sh("xdotool", "search", "--name", "^Laya settings$").stdout.split(), 15)
if wid:
    time.sleep(1)
    sh("xdotool", "windowfocus", "--sync", wid[0])
    time.sleep(0.5)
    key("alt+a")
    time.sleep(0.8)
    key("alt+f")
result("feedback alone: Forget all asks and forgets it", wait_for(lambda: not feedback_rows(), 5), feedback_rows())
key("alt+c")
wait_for(lambda: win.poll() is not None, 5)

# --- without a display, or without the program: clear errors -----------------------
env = dict(os.environ, DISPLAY="", WAYLAND_DISPLAY="")
r = subprocess.run([laya, "settings"], capture_output=True, text=True, env=env, timeout=10)
result("no display: laya settings says so", r.returncode != 0 and "display" in r.stderr, r.stderr)
env = dict(os.environ, LAYA_SETTINGS_PROGRAM=os.path.join(work, "none"))
r = subprocess.run([laya, "settings"], capture_output=True, text=True, env=env, timeout=10)
result("no program: laya settings says where it looked", r.returncode == 1 and "none" in r.stderr, r.stderr)
finish()
