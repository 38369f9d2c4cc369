#!/usr/bin/env python3
"""tests/e2e/window.py - the GTK3 window the IBus end-to-end test types into.

Entries: "plain", "plain2" (normal text) and "password" (input purpose
PASSWORD, visible text: GTK3 never hands hidden-text password entries to
IBus, so only a visible one tests the engine's own privacy rule). Every
pre-edit string an entry shows is recorded. Commands on stdin, one a line:
  focus NAME   give NAME the keyboard focus
  dump         print {"NAME": {"text": ..., "preedits": [...]}, ...} as one line
  quit         dump and exit
"ready" is printed once the window is mapped."""
import json
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

win = Gtk.Window(title="laya-e2e")
win.set_default_size(640, 200)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
box.set_border_width(12)
win.add(box)
entries, preedits = {}, {}
for name in ("plain", "password", "plain2"):
    row = Gtk.Box(spacing=8)
    row.pack_start(Gtk.Label(label=name, width_chars=9, xalign=0), False, False, 0)
    e = Gtk.Entry()
    if name == "password":
        e.set_input_purpose(Gtk.InputPurpose.PASSWORD)
        e.set_visibility(True)
    e.connect("preedit-changed", lambda _e, s, n=name: preedits[n].append(s))
    row.pack_start(e, True, True, 0)
    box.pack_start(row, False, False, 0)
    entries[name], preedits[name] = e, []


def dump():
    out = {n: {"text": e.get_text(), "preedits": preedits[n]} for n, e in entries.items()}
    print(json.dumps(out, ensure_ascii=False), flush=True)


def on_stdin(source, _cond):
    line = source.readline()
    if not line:
        Gtk.main_quit()
        return False
    cmd = line.split()
    if cmd[:1] == ["focus"] and len(cmd) == 2 and cmd[1] in entries:
        entries[cmd[1]].grab_focus()
        print("focused", cmd[1], flush=True)
    elif cmd == ["dump"]:
        dump()
    elif cmd == ["quit"]:
        dump()
        Gtk.main_quit()
        return False
    else:
        print("unknown command", line.strip(), flush=True)
    return True


def on_map(*_):
    print("ready", flush=True)


win.connect("map-event", on_map)
win.connect("destroy", Gtk.main_quit)
GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, on_stdin)
win.show_all()
Gtk.main()
