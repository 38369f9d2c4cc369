#!/usr/bin/env python3
"""tests/e2e/window.py - the GTK3 window the IBus end-to-end test types into.

Entries: "plain", "plain2", "num", "zh", "set1", "set2", "move", "enter",
"name" (normal text) and "password"
(input purpose PASSWORD, visible text: GTK3 never hands hidden-text
password entries to IBus, so only a visible one tests the engine's own
privacy rule). Every pre-edit string an entry shows is recorded. Commands
on stdin, one a line, each answered with one line:
  focus NAME   give NAME the keyboard focus
  caret NAME   {"x": .., "y": .., "h": ..}: the caret of NAME in root-window
               pixels (where a candidate window belongs)
  stall SECS   block the main loop for SECS seconds, as a busy application
               does (keys typed meanwhile queue up in the X server)
  dump         {"NAME": {"text": ..., "preedits": [...]}, ...}
  quit         dump and exit
"ready" is printed once the window is mapped."""
import json
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk, Pango  # noqa: E402

NAMES = ("plain", "password", "plain2", "num", "zh", "set1", "set2", "move", "enter", "name")
win = Gtk.Window(title="laya-e2e")
win.set_default_size(640, 200)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
box.set_border_width(12)
win.add(box)
entries, preedits = {}, {}
for name in NAMES:
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


def say(obj):
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def dump():
    say({n: {"text": e.get_text(), "preedits": preedits[n]} for n, e in entries.items()})


def caret(e):
    """The caret's rectangle as GtkEntry places it: the layout's cursor
    position at the insertion point (a pre-edit with its cursor at 0, like
    Laya's ghost, leaves it there), in root-window coordinates."""
    text = e.get_text()
    index = e.text_index_to_layout_index(len(text[:e.get_position()].encode()))
    strong, _weak = e.get_layout().get_cursor_pos(index)
    lx, ly = e.get_layout_offsets()
    wx, wy = e.translate_coordinates(win, lx + strong.x // Pango.SCALE, ly + strong.y // Pango.SCALE)
    _ok, ox, oy = win.get_window().get_origin()
    return {"x": ox + wx, "y": oy + wy, "h": strong.height // Pango.SCALE}


def on_stdin(source, _cond):
    line = source.readline()
    if not line:
        Gtk.main_quit()
        return False
    cmd = line.split()
    if cmd[:1] == ["focus"] and len(cmd) == 2 and cmd[1] in entries:
        entries[cmd[1]].grab_focus()
        say("focused " + cmd[1])
    elif cmd[:1] == ["caret"] and len(cmd) == 2 and cmd[1] in entries:
        say(caret(entries[cmd[1]]))
    elif cmd[:1] == ["stall"] and len(cmd) == 2:
        say("stalling")
        time.sleep(float(cmd[1]))
    elif cmd == ["dump"]:
        dump()
    elif cmd == ["quit"]:
        dump()
        Gtk.main_quit()
        return False
    else:
        say("unknown command " + line.strip())
    return True


def on_map(*_):
    print("ready", flush=True)


win.connect("map-event", on_map)
win.connect("destroy", Gtk.main_quit)
GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, on_stdin)
win.show_all()
Gtk.main()
