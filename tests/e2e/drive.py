#!/usr/bin/env python3
"""tests/e2e/drive.py - the IBus end-to-end checks; run by tests/e2e/ibus.sh
inside xvfb-run and dbus-run-session with a throw-away HOME.

argv: ENGINE (ibus-engine-laya) WORKDIR EXPECT_JSON SHOT
EXPECT_JSON is `laya complete --json -k 3 "Best re"` on the same model, so
the ghost the engine shows must be its first suggestion. Prints ok/FAIL
lines and "N passed, N failed"."""
import json
import os
import subprocess
import sys
import time

engine, work, expect_path, shot = sys.argv[1:5]
expect = json.load(open(expect_path, encoding="utf-8"))
best = expect["suggestions"][0]["text"]
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


# --- ibus-daemon with our component ------------------------------------------
comp = os.path.join(work, "component")
os.makedirs(comp, exist_ok=True)
with open("dist/laya.xml.in", encoding="utf-8") as f:
    xml = f.read().replace("@LIBEXECDIR@/ibus-engine-laya", engine)
with open(os.path.join(comp, "laya.xml"), "w", encoding="utf-8") as f:
    f.write(xml)
os.environ["IBUS_COMPONENT_PATH"] = "/usr/share/ibus/component:" + comp
daemon_log = open(os.path.join(work, "ibus-daemon.log"), "w")
procs.append(subprocess.Popen(["ibus-daemon", "--xim", "--replace", "--verbose"],
                              stdout=daemon_log, stderr=subprocess.STDOUT))
up = wait_for(lambda: sh("ibus", "engine").returncode == 0, 15)
if not result("ibus-daemon starts", up):
    print(open(os.path.join(work, "ibus-daemon.log")).read()[-2000:])
    finish(1)

# --- the window ------------------------------------------------------------------
os.environ["GTK_IM_MODULE"] = "ibus"
win = subprocess.Popen([sys.executable, "tests/e2e/window.py"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, bufsize=1)
procs.append(win)


def cmd(c):
    win.stdin.write(c + "\n")
    win.stdin.flush()
    return json.loads(win.stdout.readline()) if c in ("dump", "quit") else win.stdout.readline().strip()


if not result("window opens", win.stdout.readline().strip() == "ready"):
    finish(1)
wid = wait_for(lambda: sh("xdotool", "search", "--name", "^laya-e2e$").stdout.split(), 10)
if not result("window found", bool(wid)):
    finish(1)
wid = wid[0]
sh("xdotool", "windowfocus", "--sync", wid)
cmd("focus plain")
time.sleep(0.5)
# `ibus engine laya` sets the engine but exits 1 here: it then looks the
# engine up for its keyboard layout in a list that lacks it. What counts is
# what the daemon reports back.
sh("ibus", "engine", "laya")
result("laya is the current engine", wait_for(lambda: sh("ibus", "engine").stdout.strip() == "laya", 5))
time.sleep(0.5)


def ghost_is(name, want, secs=8):
    return wait_for(lambda: (cmd("dump")[name]["preedits"] or [None])[-1] == want, secs)


# --- ghost text, Tab accepts --------------------------------------------------------
sh("xdotool", "type", "--delay", "120", "Best re")
shown = ghost_is("plain", best)
d = cmd("dump")
result("typing: keys reach the entry unchanged", d["plain"]["text"] == "Best re", d["plain"])
result("typing: the best suggestion is the ghost text", shown, (best, d["plain"]["preedits"][-5:]))
time.sleep(0.5)   # let the candidate window draw
sh("import", "-window", "root", shot, timeout=20)
sh("xdotool", "key", "Tab")
ok = wait_for(lambda: cmd("dump")["plain"]["text"] == "Best re" + best, 5)
d = cmd("dump")
result("Tab inserts the suggestion", ok, (d["plain"]["text"], best))
result("the ghost is gone after Tab", d["plain"]["preedits"][-1:] == [""], d["plain"]["preedits"][-3:])

# --- Esc dismisses, then Tab is an ordinary Tab -------------------------------------
cmd("focus plain2")
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", "Best re")
shown = ghost_is("plain2", best)
sh("xdotool", "key", "Escape")
gone = ghost_is("plain2", "", 5)
sh("xdotool", "key", "Tab")
time.sleep(0.8)
d = cmd("dump")
result("Esc dismisses the ghost and inserts nothing", shown and gone, d["plain2"]["preedits"][-3:])
result("after Esc, Tab passes through: the text is what was typed", d["plain2"]["text"] == "Best re",
       d["plain2"])

# --- a password field: nothing shown, nothing accepted -----------------------------
cmd("focus password")
time.sleep(0.3)
sh("xdotool", "type", "--delay", "120", "Best re")
time.sleep(1.5)
sh("xdotool", "key", "Tab")
time.sleep(0.8)
d = cmd("dump")
result("password field: no ghost text ever", not any(d["password"]["preedits"]), d["password"]["preedits"])
result("password field: Tab accepts nothing", d["password"]["text"] == "Best re", d["password"]["text"])

engine_alive = sh("pgrep", "-f", "^" + engine).returncode == 0
result("the engine process ran and is alive", engine_alive)
cmd("quit")
finish()
