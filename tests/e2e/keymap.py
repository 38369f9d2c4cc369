#!/usr/bin/env python3
"""tests/e2e/keymap.py - binds characters that the X keymap lacks to spare
keycodes, once, so that `xdotool type` finds them in the keymap.

Why: for a character missing from the keymap, xdotool rebinds one scratch
keycode before each such character and unbinds it after the last. The
client translates a key event with the keymap as it is when it reads the
event, so a client busy for longer than xdotool's delay reads a later
binding (a wrong character) or none (the last character is lost). That was
the "lost last character" seen in the desktop end-to-end tests; tests/e2e/drive.py reproduces it by
stalling the window while typing. With every character bound beforehand,
xdotool changes nothing and the keymap stays valid however late the client
reads.

usage: keymap.py TEXT...   (DISPLAY must be set) binds every character of
the TEXTs that no keycode produces; prints how many it bound. Exit 1 when
there are not enough spare keycodes."""
import ctypes
import ctypes.util
import sys

X = ctypes.cdll.LoadLibrary(ctypes.util.find_library("X11"))
X.XOpenDisplay.restype = ctypes.c_void_p
X.XOpenDisplay.argtypes = [ctypes.c_char_p]
X.XDisplayKeycodes.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
X.XGetKeyboardMapping.restype = ctypes.POINTER(ctypes.c_ulong)
X.XGetKeyboardMapping.argtypes = [ctypes.c_void_p, ctypes.c_ubyte, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
X.XChangeKeyboardMapping.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_ulong), ctypes.c_int]
X.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
X.XFree.argtypes = [ctypes.c_void_p]


def keysym(ch):
    """The keysym X (and xdotool) use for a character: Latin-1 as is, the
    rest as 0x01000000 + code point."""
    cp = ord(ch)
    return cp if 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF else 0x01000000 | cp


def main():
    d = X.XOpenDisplay(None)
    if not d:
        sys.exit("keymap.py: cannot open the display (is DISPLAY set?)")
    lo, hi, per = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    X.XDisplayKeycodes(d, ctypes.byref(lo), ctypes.byref(hi))
    n = hi.value - lo.value + 1
    m = X.XGetKeyboardMapping(d, lo.value, n, ctypes.byref(per))
    rows = [[m[i * per.value + j] for j in range(per.value)] for i in range(n)]
    X.XFree(m)
    have = {s for row in rows for s in row if s}
    # Keycode 8 is reserved by XKB; the rest of the empty rows are spare.
    spare = [lo.value + i for i, row in enumerate(rows) if not any(row) and lo.value + i > 8]
    want = sorted({keysym(c) for c in "".join(sys.argv[1:]) if c.isprintable()} - have)
    if len(want) > len(spare):
        sys.exit(f"keymap.py: {len(want)} characters to bind, only {len(spare)} spare keycodes")
    for kc, sym in zip(spare, want):
        row = (ctypes.c_ulong * per.value)(*([sym] * 2 + [0] * (per.value - 2)))
        X.XChangeKeyboardMapping(d, kc, per.value, row, 1)
    X.XSync(d, 0)
    print(f"bound {len(want)} characters", flush=True)


main()
