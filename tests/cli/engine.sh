#!/bin/sh
# tests/cli/engine.sh - `laya complete`, `laya serve --stdio` and `laya type`
# end to end. The model is made here, from nothing outside the repo: a
# tokenizer and a tiny network trained for a few seconds on a fixture text
# (laya tokenizer train + laya train). Ends with "N passed, N failed".
BUILD=${BUILD:-build}
# The fixture model is trained here, so it is unsigned (tests/cli/sign.sh
# covers signatures).
export LAYA_ALLOW_UNSIGNED=1
LAYA=$(cd "$(dirname "$0")/../.." && pwd)/$BUILD/laya
T=$(mktemp -d /tmp/laya-cli-engine-XXXXXX)
# Never the user's own memory or settings: a store of its own under $T.
export XDG_DATA_HOME="$T/xdg" XDG_CONFIG_HOME="$T/config"
unset LAYA_MEMORY
trap 'rm -rf "$T"' EXIT
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
Thank you for your help with the project, it was great working with you.
我想订个外卖。我们明天去公园吧。今天天气很好，我们去散步。
订个酒店，订个机票，然后去北京旅行。
TXT
for i in 1 2 3 4 5 6 7 8; do cat "$T/text.txt"; done >"$T/big.txt"
M=$T/out/best.safetensors
if ! { "$LAYA" tokenizer train --vocab 320 -o "$T/t.tok" "$T/big.txt" &&
       "$LAYA" tokenizer encode --tok "$T/t.tok" "$T/big.txt" "$T/tr.tokens" &&
       "$LAYA" train --train "$T/tr.tokens" --valid "$T/tr.tokens" --tok "$T/t.tok" -o "$T/out" \
           --steps 300 --H 32 --D 16 --L 1 --W 3 --batch 8 --seq 32 --threads 1 \
           --eval-every 300 --lr 1e-2 --warmup 20 --dropout 0; } >"$T/train.log" 2>&1 ||
   [ ! -f "$M" ]; then
    cat "$T/train.log"
    bad "build the fixture model"
    echo "$passed passed, $failed failed"
    exit 1
fi
ok "build the fixture model"

# --- laya train --init: fine-tuning starts from a model's weights ---------
small="--train $T/tr.tokens --valid $T/tr.tokens --tok $T/t.tok --steps 20 --eval-every 20 --batch 8 --seq 32
       --threads 1 --lr 1e-9 --warmup 0 --dropout 0 --D 16 --L 1 --W 3"
# shellcheck disable=SC2086
LAYA_ALLOW_UNSIGNED=1 "$LAYA" train $small --H 32 -o "$T/init" --init "$M" >"$T/init.log" 2>&1
# shellcheck disable=SC2086
"$LAYA" train $small --H 32 -o "$T/fresh" >"$T/fresh.log" 2>&1
check "train --init: the first validation is the model's own (a fresh start is far above)" python3 - \
    "$T/out/log.csv" "$T/init/log.csv" "$T/fresh/log.csv" <<'PY'
import csv, sys
last = lambda p: float(list(csv.DictReader(open(p)))[-1]["valid_loss_1"])
trained, init, fresh = (last(p) for p in sys.argv[1:])
assert abs(init - trained) < 0.05 and fresh > trained + 1, (trained, init, fresh)
PY
# shellcheck disable=SC2086
LAYA_ALLOW_UNSIGNED=1 "$LAYA" train $small --H 16 -o "$T/init16" --init "$M" >/dev/null 2>"$T/init16.err"
check "train --init of another shape: refused, naming both shapes" grep -q "H=32.*H=16" "$T/init16.err"

# --- laya complete -------------------------------------------------------
"$LAYA" complete --model "$M" "Best re" >"$T/c.out" 2>"$T/c.err"
check "complete exits 0" [ $? -eq 0 ]
check "complete prints 1..3 lines of 'prob \"text\"'" python3 - "$T/c.out" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
assert 1 <= len(lines) <= 3, lines
for l in lines:
    assert re.fullmatch(r'[01]\.\d{4}  ".+"', l), l
PY
"$LAYA" complete --model "$M" -k 5 --json "我想订个外" >"$T/j.out"
check "complete --json: context, <= k suggestions, probs" python3 - "$T/j.out" <<'PY'
import json, sys
o = json.load(open(sys.argv[1], encoding="utf-8"))
assert o["context"] == "我想订个外"
s = o["suggestions"]
assert 1 <= len(s) <= 5 and all(x["text"] and 0 < x["prob"] <= 1 for x in s), s
assert len({x["text"] for x in s}) == len(s)
assert isinstance(o["us"], int)
PY
printf 'Best re' | "$LAYA" complete --model "$M" - >"$T/stdin.out"
check "complete - reads stdin" cmp -s "$T/stdin.out" "$T/c.out"
echo 'Best re' | "$LAYA" complete --model "$M" - >"$T/stdin-nl.out"
check "complete - drops one trailing newline (echo's)" cmp -s "$T/stdin-nl.out" "$T/c.out"
printf 'Best re\n\n' | "$LAYA" complete --model "$M" - >"$T/stdin-nl2.out"
check "complete - keeps a second newline (the start of a new line)" sh -c "! cmp -s '$T/stdin-nl2.out' '$T/c.out'"
"$LAYA" complete --model "$M" --min-prob 1 "Best re" >"$T/floor.out" 2>&1
check "complete --min-prob 1 hides everything, saying so" grep -q 'no suggestion' "$T/floor.out"
# stdin is limited to 16 MiB inclusive: exactly 16 MiB is read, one byte more is refused.
python3 -c "import sys; sys.stdout.write('a ' * (8 << 20))" >"$T/16m.txt"
"$LAYA" complete --model "$M" - <"$T/16m.txt" >/dev/null 2>"$T/16m.err"
check "complete - takes exactly 16 MiB of stdin" sh -c "[ $? -eq 0 ] && ! grep -q 'more than' '$T/16m.err'"
printf 'b' >>"$T/16m.txt"
"$LAYA" complete --model "$M" - <"$T/16m.txt" >/dev/null 2>"$T/16m.err"
check "complete - refuses 16 MiB + 1 byte, saying so" sh -c "[ $? -ne 0 ] && grep -q 'more than 16777216 bytes' '$T/16m.err'"
rm -f "$T/16m.txt"
# A FIFO as the model: refused at once (timeout catches a hang in open()).
mkfifo "$T/fifo"
timeout 10 "$LAYA" complete --model "$T/fifo" "Best re" >/dev/null 2>"$T/fifo.err"
check "complete --model FIFO: refused at once, naming the FIFO" sh -c "[ $? -eq 1 ] && grep -q 'FIFO' '$T/fifo.err'"
expect_fail() {  # name, expected stderr fragment, command...
    name=$1; frag=$2; shift 2
    "$@" >"$T/f.out" 2>"$T/f.err"
    rc=$?
    if [ $rc -ne 0 ] && grep -q "$frag" "$T/f.err"; then ok "$name"; else
        bad "$name (status $rc)"; cat "$T/f.err"; fi
}
expect_fail "complete refuses non-UTF-8" "not valid UTF-8" "$LAYA" complete --model "$M" "$(printf 'ab\377')"
expect_fail "complete: missing model" "cannot load model" "$LAYA" complete --model "$T/nope.safetensors" "hi"
expect_fail "complete: bad option" "unknown option" "$LAYA" complete --model "$M" --frobnicate "hi"
expect_fail "complete: -k out of range" "expects a whole number" "$LAYA" complete --model "$M" -k 17 "hi"
expect_fail "complete: --min-prob out of range" "expects a probability in 0..1" "$LAYA" complete --model "$M" --min-prob 1.5 "hi"
expect_fail "complete: --prior-weight out of range" "expects a weight in 0..1" "$LAYA" complete --model "$M" --prior-weight -0.5 "hi"
expect_fail "complete: --cache-weight out of range" "expects a weight in 0..0.9" "$LAYA" complete --model "$M" --cache-weight 0.95 "hi"
# laya prior show: the shipped model's prior after a Han word, with what the
# search adds (P x W / (1 - W), at most 1), and its errors.
"$LAYA" prior show --model models/default.safetensors --prior-weight 0.75 中华人民 >"$T/p.out" 2>&1
check "prior show: P and what the search adds at weight 0.75 (x3)" python3 - "$T/p.out" <<'PY'
import sys
lines = open(sys.argv[1], encoding='utf-8').read().splitlines()
assert lines[0].startswith('word\tP(word | last word)\tadded by the search (weight 0.75)'), lines[:1]
rows = [l.split('\t') for l in lines[1:]]
assert rows and all(len(r) == 3 for r in rows), rows
for w, p, add in rows:
    assert abs(min(1.0, 3 * float(p)) - float(add)) < 2e-4, (w, p, add)
PY
expect_fail "prior show: --prior-weight out of range" "expects a weight in 0..1" "$LAYA" prior show --model models/default.safetensors --prior-weight 2 中华
expect_fail "complete: --cjk-cache-weight out of range" "expects a weight in 0..0.9" "$LAYA" complete --model "$M" --cjk-cache-weight -1 "hi"
expect_fail "complete: missing text" "missing TEXT" "$LAYA" complete --model "$M"
expect_fail "complete: two texts" "one TEXT" "$LAYA" complete --model "$M" "a" "b"
printf 'not a model' >"$T/junk.safetensors"
expect_fail "complete: junk model file" "cannot load model" "$LAYA" complete --model "$T/junk.safetensors" "hi"

# --- laya serve --stdio --------------------------------------------------
python3 - "$T/req.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "wb") as f:
    def line(o): f.write(json.dumps(o, ensure_ascii=False).encode() + b"\n")
    line({"op": "suggest", "session": "s1", "context": "Best re", "k": 3})           # 1
    line({"op": "suggest", "session": "s1", "context": "Best reg", "k": 2})          # 2
    line({"op": "commit", "session": "s1", "text": "Best regards"})                  # 3
    line({"op": "reset", "session": "s1"})                                           # 4
    f.write(b"{not json\n")                                                          # 5
    f.write(b'{"op":"suggest","session":"s1","context":"ab\xff"}\n')                 # 6
    line({"op": "fly", "session": "s1"})                                             # 7
    line({"op": "suggest", "session": "s1", "context": "x", "k": "3"})               # 8
    line({"op": "suggest", "session": "s1"})                                         # 9
    f.write(b"\n")                                                                   # (blank: skipped)
    f.write(b'{"op":"suggest","context":"' + b"a" * (9 << 20) + b'"}\n')            # 10
    line([1, 2])                                                                     # 11
    line({"op": "suggest", "context": "我想订个外"})                                 # 12 (default session)
    line({"op": "score", "text": "Best regards"})                                    # 13
    line({"op": "suggest", "session": "s" * 200, "context": "x"})                    # 14
    f.write(b'{"op":"suggest","session":"s2","context":"a\\u0000b"}\n')              # 15
    line({"op": "suggest", "session": "s1", "context": "Best re", "k": 3})           # 16
PY
"$LAYA" serve --stdio --model "$M" --max-sessions 2 <"$T/req.jsonl" >"$T/rep.jsonl" 2>"$T/serve.err"
check "serve exits 0 at end of input" [ $? -eq 0 ]
check "serve: one reply per request, errors for the malformed ones" python3 - "$T/rep.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert len(r) == 16, len(r)
def sug(o, k):
    assert set(o) == {"suggestions", "us"}, o
    assert isinstance(o["us"], int) and o["us"] >= 0
    assert len(o["suggestions"]) <= k and all(isinstance(s, str) and s for s in o["suggestions"])
sug(r[0], 3); sug(r[1], 2)
assert r[0]["suggestions"], "no suggestion for 'Best re'"
assert r[2] == {"ok": True, "learned": True} and r[3] == {"ok": True}, (r[2], r[3])
for i in (4, 5, 6, 7, 8, 9, 10, 13, 14):
    assert set(r[i]) == {"error"} and r[i]["error"], (i, r[i])
assert "longer than" in r[9]["error"] and "op" in r[6]["error"]
sug(r[11], 3)
assert r[12]["bytes"] == 12 and r[12]["bits"] > 0
sug(r[15], 3)
# the commit was learned: "Best regards" comes back first
assert r[15]["suggestions"][0] == "gards", (r[15], r[0])
PY
"$LAYA" serve --stdio --no-learn --model "$M" --max-sessions 2 <"$T/req.jsonl" >"$T/rep2.jsonl" 2>"$T/serve2.err"
check "serve --no-learn: a commit changes nothing" python3 - "$T/rep2.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert len(r) == 16 and r[15]["suggestions"] == r[0]["suggestions"], (r[15], r[0])
PY
"$LAYA" serve --model "$M" </dev/null >/dev/null 2>"$T/f.err"
check "serve without --stdio is refused" grep -q -- "--stdio" "$T/f.err"

# --- laya bench --keys ---------------------------------------------------
printf 'Thank you,\tfor the\\ help.\n我们明天见' >"$T/keys.txt"
"$LAYA" bench --model "$M" --prefetch --keys "$T/keys.tsv" "$T/keys.txt" >"$T/bench.out" 2>&1
check "bench --keys: one line a character, escaped, its steps and prefetch time" python3 - "$T/keys.tsv" "$T/keys.txt" "$T/bench.out" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8")]
text = open(sys.argv[2], encoding="utf-8").read()
assert rows[0] == ["text", "key", "char", "ms", "steps", "logits", "shown", "prefetch_ms"], rows[0]
rows = rows[1:]
assert len(rows) == len(text), (len(rows), len(text))
esc = {"\t": "\\t", "\n": "\\n", "\\": "\\\\"}
assert [r[2] for r in rows] == [esc.get(c, c) for c in text], [r[2] for r in rows]
assert [int(r[1]) for r in rows] == list(range(len(text)))
assert all(len(r) == 8 and float(r[3]) > 0 and int(r[4]) >= 0 and 0 <= int(r[6]) <= 3 for r in rows)
assert any(float(r[7]) > 0 for r in rows), "no prefetch time recorded"
assert sum(int(r[4]) for r in rows) > 0
PY
expect_fail "bench --keys: an unwritable file is refused, naming it" "cannot write '/nonexistent/k.tsv'" \
    "$LAYA" bench --model "$M" --keys /nonexistent/k.tsv "$T/keys.txt"

# --- laya type -----------------------------------------------------------
expect_fail "serve: --max-steps out of range" "expects a whole number" "$LAYA" serve --stdio --model "$M" --max-steps 0
printf '{"op":"suggest","context":"the ","k":3}\n' | "$LAYA" serve --stdio --model "$M" --max-steps 1 >"$T/ms1.json" 2>&1
check "serve: --max-steps 1 still answers" grep -q '"suggestions"' "$T/ms1.json"
expect_fail "type refuses a non-terminal" "needs a terminal" sh -c "echo hi | '$LAYA' type --model '$M'"
"$LAYA" complete --model "$M" -k 1 --json "Best re" >"$T/best.json"
check "type: ghost text, Tab accepts, Chinese input, terminal restored" python3 - "$LAYA" "$M" "$T/best.json" <<'PY'
import json, os, select, subprocess, sys, termios, time
laya, model, best = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))["suggestions"][0]["text"]
master, slave = os.openpty()
before = termios.tcgetattr(slave)
p = subprocess.Popen([laya, "type", "--model", model], stdin=slave, stdout=slave, stderr=slave,
                     start_new_session=True)
out = b""
def pump(t):
    global out
    end = time.time() + t
    while time.time() < end:
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            try: out += os.read(master, 65536)
            except OSError: return
def send(b, t=0.4):
    os.write(master, b); pump(t)
pump(1.0)
send(b"Best re")
# the ghost: grey text right after the typed text (the demo's session learns
# from what is typed, so its list may differ from complete's: its own ghost
# is the one Tab must insert)
at = out.rfind(b"Best re\x1b[90m")
assert at >= 0, ("no ghost text", best, out[-300:])
ghost = out[at + len(b"Best re\x1b[90m"):].split(b"\x1b[0m")[0].decode()
assert ghost, ("an empty ghost", out[-300:])
send(b"\t")
mark = len(out)
send("\r我想订个外".encode())
assert "我想订个外".encode() in out[mark:], out[mark:][-300:]
send(b"\x7f\x1b[D\x1b[C\x15\x1b")
send(b"\x03", 0.5)
p.wait(timeout=5)
assert p.returncode == 0, p.returncode
assert ("Best re" + ghost).encode() in out, ("Tab did not insert the ghost", ghost, out[-400:])
assert termios.tcgetattr(slave) == before, "terminal settings not restored"
PY

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
