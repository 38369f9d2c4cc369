#!/bin/sh
# tests/cli/daemon.sh - `laya serve --socket`: the daemon on a Unix socket.
# Same replies as `laya serve --stdio`, errors that leave the daemon
# serving, socket and directory permissions, the default path, a second
# daemon refused, a stale socket reclaimed, vanishing and slow clients,
# clean shutdown. The model is trained here as in tests/cli/engine.sh.
# Ends with "N passed, N failed".
BUILD=${BUILD:-build}
LAYA=$(cd "$(dirname "$0")/../.." && pwd)/$BUILD/laya
T=$(mktemp -d /tmp/laya-cli-daemon-XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

# --- the fixture model ---------------------------------------------------
cat >"$T/text.txt" <<'TXT'
Best regards, and thank you for the quick reply.
The meeting is on Monday at ten. Please bring the report and the slides.
I would like to book a table for two people tonight.
我想订个外卖。我们明天去公园吧。订个酒店，订个机票，然后去北京旅行。
TXT
for i in 1 2 3 4 5 6 7 8; do cat "$T/text.txt"; done >"$T/big.txt"
M=$T/out/best.safetensors
if ! { "$LAYA" tokenizer train --vocab 300 -o "$T/t.tok" "$T/big.txt" &&
       "$LAYA" tokenizer encode --tok "$T/t.tok" "$T/big.txt" "$T/tr.tokens" &&
       "$LAYA" train --train "$T/tr.tokens" --valid "$T/tr.tokens" --tok "$T/t.tok" -o "$T/out" \
           --steps 200 --H 32 --D 16 --L 1 --W 3 --batch 8 --seq 32 --threads 1 \
           --eval-every 200 --lr 1e-2 --warmup 20 --dropout 0; } >"$T/train.log" 2>&1 ||
   [ ! -f "$M" ]; then
    cat "$T/train.log"
    bad "build the fixture model"
    echo "$passed passed, $failed failed"
    exit 1
fi
ok "build the fixture model"

# A small client library the checks below share.
cat >"$T/cl.py" <<'PY'
import json, os, socket, time
def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s
def wait_up(path, secs=20):
    end = time.time() + secs
    while time.time() < end:
        try:
            connect(path).close(); return True
        except OSError:
            time.sleep(0.05)
    return False
class Lines:
    def __init__(self, s): self.s, self.buf = s, b""
    def get(self):
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            if not d: raise EOFError("connection closed")
            self.buf += d
        l, self.buf = self.buf.split(b"\n", 1)
        return json.loads(l)
def ask(s, lines, reqs):
    for r in reqs:
        s.sendall(r if isinstance(r, bytes) else json.dumps(r, ensure_ascii=False).encode() + b"\n")
    return [lines.get() for _ in reqs]
PY
export PYTHONPATH="$T"
start() {  # socket path, extra args...: starts a daemon, waits until it answers
    sp=$1; shift
    "$LAYA" serve --socket "$sp" --model "$M" "$@" 2>>"$T/daemon.err" &
    dpid=$!
    pids="$pids $dpid"
    python3 -c "import cl, sys; sys.exit(0 if cl.wait_up(sys.argv[1]) else 1)" "$sp"
}
S=$T/d/laya.sock
mkdir -m 700 "$T/d"

# --- default path and permissions ------------------------------------------
env -u XDG_RUNTIME_DIR "$LAYA" serve --socket --model "$M" >/dev/null 2>"$T/f.err"
check "no XDG_RUNTIME_DIR and no PATH: refused with a hint" \
    sh -c "[ $? -ne 0 ] && grep -q 'XDG_RUNTIME_DIR is not set' '$T/f.err' && grep -q -- '--socket PATH' '$T/f.err'"
mkdir -m 755 "$T/rt"
XDG_RUNTIME_DIR=$T/rt "$LAYA" serve --socket --model "$M" 2>"$T/def.err" &
defpid=$!
pids="$pids $defpid"
python3 -c "import cl, sys; sys.exit(0 if cl.wait_up(sys.argv[1]) else 1)" "$T/rt/laya/laya.sock"
check "default socket at \$XDG_RUNTIME_DIR/laya/laya.sock" [ -S "$T/rt/laya/laya.sock" ]
check "its directory is 0700" [ "$(stat -c %a "$T/rt/laya")" = 700 ]
check "the socket is 0600" [ "$(stat -c %a "$T/rt/laya/laya.sock")" = 600 ]
kill -TERM "$defpid"; wait "$defpid"; rc=$?
check "SIGTERM: exit 0, socket removed" sh -c "[ $rc -eq 0 ] && [ ! -e '$T/rt/laya/laya.sock' ]"
mkdir -p "$T/rt2/laya" && chmod 755 "$T/rt2/laya"
XDG_RUNTIME_DIR=$T/rt2 "$LAYA" serve --socket --model "$M" 2>/dev/null &
p2=$!; pids="$pids $p2"
python3 -c "import cl, sys; sys.exit(0 if cl.wait_up(sys.argv[1]) else 1)" "$T/rt2/laya/laya.sock"
check "an existing group-readable directory is made 0700" [ "$(stat -c %a "$T/rt2/laya")" = 700 ]
kill -INT "$p2"; wait "$p2"; rc=$?
check "SIGINT: exit 0, socket removed" sh -c "[ $rc -eq 0 ] && [ ! -e '$T/rt2/laya/laya.sock' ]"

# --- the protocol: the same replies as serve --stdio ------------------------
# (each with a memory of its own: what one learns must not reach the other)
start "$S" --memory "$T/mem-daemon.db"
check "daemon starts on an explicit path" [ -S "$S" ]
python3 - "$T/req.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "wb") as f:
    def line(o): f.write(json.dumps(o, ensure_ascii=False).encode() + b"\n")
    line({"op": "suggest", "session": "s1", "context": "Best re", "k": 3})
    line({"op": "suggest", "session": "s1", "context": "Best reg", "k": 2})
    line({"op": "commit", "session": "s1", "text": "Best regards"})
    line({"op": "reset", "session": "s1"})
    f.write(b"{not json\n")
    f.write(b'{"op":"suggest","session":"s1","context":"ab\xff"}\n')
    line({"op": "fly", "session": "s1"})
    line({"op": "suggest", "session": "s1", "context": "x", "k": "3"})
    line({"op": "suggest", "session": "s1"})
    f.write(b"   \r\n")
    line([1, 2])
    line({"op": "suggest", "context": "我想订个"})
    line({"op": "score", "text": "Best regards"})
    line({"op": "suggest", "session": "s" * 200, "context": "x"})
    f.write(b'{"op":"suggest","session":"s2","context":"The meeting is on Mo"}\r\n')
    line({"op": "suggest", "session": "s1", "context": "Best re", "k": 3})
PY
"$LAYA" serve --stdio --model "$M" --memory "$T/mem-stdio.db" <"$T/req.jsonl" >"$T/stdio.jsonl"
check "every reply equals serve --stdio's (but the timing)" python3 - "$S" "$T/req.jsonl" "$T/stdio.jsonl" <<'PY'
import cl, json, sys
want = [json.loads(l) for l in open(sys.argv[3], encoding="utf-8")]
s = cl.connect(sys.argv[1])
s.sendall(open(sys.argv[2], "rb").read())
L = cl.Lines(s)
got = [L.get() for _ in want]
for g, w in zip(got, want):
    g.pop("us", None); w.pop("us", None)
assert got == want, (got, want)
assert len(want) == 15 and want[0]["suggestions"], want[0]
n_err = sum("error" in w for w in want)
assert n_err == 7, n_err
PY
check "errors: malformed JSON, invalid UTF-8, unknown op, over-long line; the connection goes on" \
    python3 - "$S" <<'PY'
import cl, sys
s = cl.connect(sys.argv[1]); L = cl.Lines(s)
r = cl.ask(s, L, [b"{\"op\":\n", b'{"op":"suggest","context":"\xc3\x28"}\n', {"op": "nope"},
                  b'{"op":"suggest","context":"' + b"a" * (2 << 20) + b'"}\n',
                  {"op": "suggest", "context": "Best re"}])
assert all(set(x) == {"error"} for x in r[:4]), r[:4]
assert "malformed" in r[0]["error"] and "unknown op" in r[2]["error"], r
assert "longer than 1048576 bytes" in r[3]["error"], r[3]
assert r[4]["suggestions"], r[4]
PY
check "64 clients at once, pipelined, each gets its own replies in order" python3 - "$S" <<'PY'
import cl, sys, threading
ctx = ["Best re", "The meeting is on Mo", "I would like to bo", "我想订个"]
want = {}
s = cl.connect(sys.argv[1]); L = cl.Lines(s)
for c in ctx: want[c] = cl.ask(s, L, [{"op": "suggest", "context": c}])[0]["suggestions"]
errs = []
def run(i):
    try:
        s = cl.connect(sys.argv[1], 60); L = cl.Lines(s)
        reqs = [{"op": "suggest", "session": "x", "context": ctx[(i + j) % 4]} for j in range(20)]
        for j, r in enumerate(cl.ask(s, L, reqs)):
            assert r["suggestions"] == want[ctx[(i + j) % 4]], (i, j, r)
    except Exception as e:
        errs.append(repr(e))
th = [threading.Thread(target=run, args=(i,)) for i in range(64)]
[t.start() for t in th]; [t.join() for t in th]
assert not errs, errs[:3]
PY
check "vanishing clients (mid-line, before the reply, mid-overlong-line) leave the daemon serving" \
    python3 - "$S" <<'PY'
import cl, socket, struct, sys
p = sys.argv[1]
s = cl.connect(p); s.sendall(b'{"op":"suggest","context":"Best'); s.close()
s = cl.connect(p); s.sendall(b'{"op":"suggest","context":"Best re"}\n' * 50); s.close()
s = cl.connect(p); s.sendall(b'{"op":"suggest","context":"' + b"a" * 300000); s.close()
s = cl.connect(p); s.sendall(b'{"op":"suggest","context":"Best re"}\n' * 20)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s.close()
s = cl.connect(p); L = cl.Lines(s)
r = cl.ask(s, L, [{"op": "suggest", "context": "Best re"}])
assert r[0]["suggestions"], r
PY
check "half-closed client: the unterminated last line is answered, then the connection closes" \
    python3 - "$S" <<'PY'
import cl, socket, sys
s = cl.connect(sys.argv[1]); L = cl.Lines(s)
s.sendall(b'{"op":"reset"}\n{"op":"suggest","context":"Best re"}')
s.shutdown(socket.SHUT_WR)
assert L.get() == {"ok": True}
assert L.get()["suggestions"]
try:
    L.get(); assert False, "more replies than requests"
except EOFError:
    pass
PY
check "a client that does not read its replies is throttled, and gets all of them later" \
    python3 - "$S" <<'PY'
import cl, sys, threading, time
s = cl.connect(sys.argv[1], 120); L = cl.Lines(s)
n = 40000
body = b'{"op":"fly"}\n' * n     # cheap requests, ~70-byte replies: ~2.8 MB of replies
t = threading.Thread(target=s.sendall, args=(body,)); t.start()
time.sleep(1.0)                   # not reading: the daemon must stop reading us, not buffer without bound
s2 = cl.connect(sys.argv[1]); L2 = cl.Lines(s2)
assert cl.ask(s2, L2, [{"op": "suggest", "context": "Best re"}])[0]["suggestions"]
got = [L.get() for _ in range(n)]
t.join()
assert all("unknown op" in g["error"] for g in got)
PY
grep -E '^VmRSS' "/proc/$dpid/status" >"$T/rss"
check "daemon memory stays bounded (< 200 MB resident)" \
    sh -c "[ \$(awk '{print \$2}' '$T/rss') -lt 200000 ]"

# --- one daemon per socket; stale sockets; things that are not sockets -------
"$LAYA" serve --socket "$S" --model "$M" >/dev/null 2>"$T/f.err"
check "a second daemon on the same socket is refused with a clear message" \
    sh -c "[ $? -ne 0 ] && grep -q 'already serving' '$T/f.err' && grep -q 'pid $dpid' '$T/f.err'"
check "... and the first one still serves" python3 - "$S" <<'PY'
import cl, sys
s = cl.connect(sys.argv[1]); L = cl.Lines(s)
assert cl.ask(s, L, [{"op": "suggest", "context": "Best re"}])[0]["suggestions"]
PY
kill -KILL "$dpid"; wait "$dpid" 2>/dev/null
check "a killed daemon leaves a stale socket" [ -S "$S" ]
start "$S"
check "a stale socket is reclaimed by the next daemon" python3 - "$S" <<'PY'
import cl, sys
s = cl.connect(sys.argv[1]); L = cl.Lines(s)
assert cl.ask(s, L, [{"op": "suggest", "context": "Best re"}])[0]["suggestions"]
PY
kill -TERM "$dpid"; wait "$dpid"
check "after SIGTERM neither the socket nor its lock file is left" \
    sh -c "[ ! -e '$S' ] && [ ! -e '$S.lock' ]"
echo precious >"$T/d/file"
"$LAYA" serve --socket "$T/d/file" --model "$M" >/dev/null 2>"$T/f.err"
check "a path that is not a socket is refused and left alone" \
    sh -c "[ $? -ne 0 ] && grep -q 'not a socket' '$T/f.err' && [ \"\$(cat '$T/d/file')\" = precious ]"
"$LAYA" serve --socket "$T/d/nope.sock" --model "$T/nope.safetensors" >/dev/null 2>"$T/f.err"
check "a model that does not load: clear error, no socket left" \
    sh -c "[ $? -ne 0 ] && grep -q 'cannot load model' '$T/f.err' && [ ! -e '$T/d/nope.sock' ]"
"$LAYA" serve --socket "$T/d/$(printf '%0120d' 0).sock" --model "$M" >/dev/null 2>"$T/f.err"
check "a socket path too long for sun_path is refused" grep -q 'at most 107' "$T/f.err"
start "$S" --max-clients 2
check "beyond --max-clients a client gets an error line and is closed" python3 - "$S" <<'PY'
import cl, sys
a = cl.connect(sys.argv[1]); b = cl.connect(sys.argv[1])
La = cl.Lines(a); assert cl.ask(a, La, [{"op": "reset"}]) == [{"ok": True}]
Lb = cl.Lines(b); assert cl.ask(b, Lb, [{"op": "reset"}]) == [{"ok": True}]
c = cl.connect(sys.argv[1]); Lc = cl.Lines(c)
r = Lc.get(); assert "clients" in r["error"], r
a.close()
PY
kill -TERM "$dpid"; wait "$dpid"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
