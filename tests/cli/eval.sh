#!/bin/sh
# tests/cli/eval.sh - `laya eval` against tests/cli/fake_engine.py, an oracle
# whose suggestions are known, so every figure below was computed by hand:
#  "the cat sat" (11 chars). k=3: "the cat " then "sat": 2 keystrokes, KSR
#  9/11; k=1: "the ", "cat ", "sat": 3 keystrokes, KSR 8/11. Next word at
#  every word start of the text (before "cat" and "sat"): hits.
#  "café au lait\n東京 ok" (18 chars). k=3: "café au ", "lait\n東京 ", "ok":
#  KSR 15/18; k=1: 5 keystrokes, KSR 13/18; its 4 word starts hit.
#  --wrong-at-start on "the cat sat": k=3: q t(he cat ) q s(at): 4 keystrokes,
#  2 of 4 shown suggestions accepted; k=1: 6 keystrokes; next word misses
#  at both word starts.
# Ends with "N passed, N failed".
BUILD=${BUILD:-build}
LAYA=${LAYA:-$BUILD/laya}
FAKE="python3 tests/cli/fake_engine.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }

printf 'the cat sat' >"$T/a.txt"
printf 'café au lait\n東京 ok' >"$T/b.txt"
printf '订个外卖订个酒店' >"$T/c.txt"

# check NAME FILE PYTHON-EXPR: the expression over j (the parsed JSON) holds
check() {
    if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" 2>"$T/err"; then
        ok "$1"
    else
        bad "$1: $3"; head -c 2000 "$2"; echo; cat "$T/err"
    fi
}
near() { echo "abs(($1) - ($2)) < 1e-6"; }

"$LAYA" eval "$T/a.txt" "$T/b.txt" --json --engine "$FAKE $T/a.txt $T/b.txt --log $T/log" \
    >"$T/o1.json" 2>"$T/e1" || { bad "eval runs against the oracle"; cat "$T/e1"; }
A='j["texts"][0]'; B='j["texts"][1]'; ALL='j["texts"][2]'
check "KSR@3 text a" "$T/o1.json" "$(near "$A[\"passes\"][0][\"ksr\"]" 9/11) and $A[\"passes\"][0][\"k\"] == 3"
check "KSR@1 text a" "$T/o1.json" "$(near "$A[\"passes\"][1][\"ksr\"]" 8/11) and $A[\"passes\"][1][\"k\"] == 1"
check "KSR@3 text b (newline, UTF-8)" "$T/o1.json" "$(near "$B[\"passes\"][0][\"ksr\"]" 15/18) and $B[\"chars\"] == 18"
check "KSR@1 text b" "$T/o1.json" "$(near "$B[\"passes\"][1][\"ksr\"]" 13/18)"
check "KSR over all texts" "$T/o1.json" "$(near "$ALL[\"passes\"][0][\"ksr\"]" 24/29) and $(near "$ALL[\"passes\"][1][\"ksr\"]" 21/29)"
check "precision 1 when every shown suggestion is taken" "$T/o1.json" "$ALL[\"passes\"][0][\"precision\"] == 1 and $ALL[\"passes\"][0][\"shown\"] == 5"
check "next word at word starts" "$T/o1.json" "$ALL[\"next_word\"] == {\"word_starts\": 6, \"top1\": 1.0, \"topk\": 1.0}"
check "bits per byte from score" "$T/o1.json" "$(near "$A[\"bpb\"]" 2) and $(near "$ALL[\"bpb\"]" 2)"
check "engine-reported latency" "$T/o1.json" "j[\"latency\"][\"engine_us\"][\"p50\"] == 7 and j[\"latency\"][\"engine_us\"][\"max\"] == 7"
# p50 <= p99 <= max, and max is the largest sample (1000 - the shortest
# context asked), not the last one
rm -f "$T/log"
"$LAYA" eval "$T/a.txt" "$T/b.txt" --json --engine "$FAKE $T/a.txt $T/b.txt --us-down --log $T/log" \
    >"$T/o1u.json" 2>"$T/e1u" || { bad "eval runs against the oracle (--us-down)"; cat "$T/e1u"; }
shortest=$(awk '$1 == "suggest" && (m == "" || $3 < m) { m = $3 } END { print m + 0 }' "$T/log")
check "latency max is the largest sample" "$T/o1u.json" "j[\"latency\"][\"engine_us\"][\"max\"] == 1000 - $shortest and j[\"latency\"][\"engine_us\"][\"p50\"] <= j[\"latency\"][\"engine_us\"][\"p99\"] <= 1000 - $shortest"
check "round trip and cold start measured" "$T/o1.json" "j[\"latency\"][\"rtt_us\"][\"n\"] == 5 + 8 and j[\"latency\"][\"rtt_us\"][\"p50\"] > 0 and j[\"latency\"][\"cold_start_ms\"][\"n\"] == 2"
check "metric is KSR for English" "$T/o1.json" "j[\"metric\"] == \"KSR\""

# Without --learn nothing is committed; with it, a session per text, reset
# between texts, lines committed, in a run of its own after the others.
grep -q '^commit' "$T/log" && bad "no commits without --learn" || ok "no commits without --learn"
rm -f "$T/log"
"$LAYA" eval "$T/a.txt" "$T/b.txt" --json --learn --engine "$FAKE $T/a.txt $T/b.txt --log $T/log" \
    >"$T/o1l.json" 2>"$T/e1l" || { bad "eval --learn runs against the oracle"; cat "$T/e1l"; }
check "--learn: one more run at k, learning on" "$T/o1l.json" "[(r[\"k\"], r[\"learn\"]) for r in $A[\"runs\"]] == [(3, False), (1, False), (3, True)]"
if grep -q '^reset eval-0 ' "$T/log" && grep -q '^suggest eval-1 ' "$T/log" &&
   grep -q '^commit eval-1 13 "caf\\u00e9 au lait\\n"$' "$T/log" &&
   grep -q '^commit eval-1 5 "\\u6771\\u4eac ok"$' "$T/log" && grep -q '^commit eval-0 11 "the cat sat"' "$T/log"; then
    ok "sessions, resets and commits"
else
    bad "sessions, resets and commits"; cat "$T/log"
fi

"$LAYA" eval "$T/a.txt" --json --engine "$FAKE $T/a.txt --wrong-at-start --no-score" \
    >"$T/o2.json" 2>"$T/e2" || { bad "eval runs (wrong at start)"; cat "$T/e2"; }
check "KSR with wrong word-start guesses" "$T/o2.json" "$(near "$A[\"passes\"][0][\"ksr\"]" 7/11) and $(near "$A[\"passes\"][1][\"ksr\"]" 5/11)"
check "precision counts shown but ignored suggestions" "$T/o2.json" "$A[\"passes\"][0][\"shown\"] == 4 and $A[\"passes\"][0][\"accepted\"] == 2 and $(near "$A[\"passes\"][0][\"precision\"]" 0.5)"
check "next word misses counted" "$T/o2.json" "$A[\"next_word\"][\"top1\"] == 0 and $A[\"next_word\"][\"word_starts\"] == 2"
check "no score op: bpb is null" "$T/o2.json" "$A[\"bpb\"] is None"
grep -q 'bits per byte: n/a' "$T/e2" && ok "no score op is reported" || { bad "no score op is reported"; cat "$T/e2"; }

"$LAYA" eval "$T/c.txt" --json --k 1 --engine "$FAKE $T/c.txt" >"$T/o3.json" 2>"$T/e3" ||
    { bad "eval runs (Chinese)"; cat "$T/e3"; }
check "Chinese: CSR, one pass at k=1, no next-word" "$T/o3.json" "j[\"metric\"] == \"CSR\" and len($A[\"passes\"]) == 1 and $(near "$A[\"passes\"][0][\"ksr\"]" 7/8) and $A[\"next_word\"] is None"

"$LAYA" eval "$T/a.txt" --max-chars 7 --engine "$FAKE $T/a.txt" >"$T/o4.txt" 2>"$T/e4" ||
    { bad "eval runs (table)"; cat "$T/e4"; }
# "the cat" (7 chars): "the cat " is not a prefix of it, "the " is; then c, a, t: 4 keystrokes
grep -Eq '^.*a\.txt +7 +3 +off +1 +0\.4286 ' "$T/o4.txt" && grep -Eq '^.*a\.txt +7 +1 +off +1 +0\.4286 ' "$T/o4.txt" && ok "--max-chars and the table" ||
    { bad "--max-chars and the table"; cat "$T/o4.txt"; }

# Hostile engines: a clear message naming what was sent last, never a hang.
expect_fail() {
    name=$1; want=$2; shift 2
    if "$@" >"$T/out" 2>"$T/err"; then
        bad "$name: succeeded"
    elif grep -q "$want" "$T/err" && grep -q 'last request sent\|to request' "$T/err"; then
        ok "$name"
    else
        bad "$name"; cat "$T/err"
    fi
}
expect_fail "engine dies" "exited with status 3" \
    "$LAYA" eval "$T/a.txt" --engine "$FAKE $T/a.txt --die-after 3"
expect_fail "engine answers garbage" "answered garbage" \
    "$LAYA" eval "$T/a.txt" --engine "$FAKE $T/a.txt --garbage-after 3"
expect_fail "engine goes silent" "did not answer within 300 ms" \
    "$LAYA" eval "$T/a.txt" --timeout-ms 300 --engine "$FAKE $T/a.txt --hang-after 3"
expect_fail "engine cannot start" "exited with status 127" \
    "$LAYA" eval "$T/a.txt" --engine "/nonexistent/engine"
if "$LAYA" eval "$T/missing.txt" --engine "$FAKE $T/a.txt" 2>"$T/err"; then
    bad "missing text file"
else
    grep -q "cannot open text" "$T/err" && ok "missing text file" || { bad "missing text file"; cat "$T/err"; }
fi
if "$LAYA" eval "$T/a.txt" --k 0 2>"$T/err"; then bad "bad --k"; else
    grep -q -- "--k expects a whole number" "$T/err" && ok "bad --k" || { bad "bad --k"; cat "$T/err"; }
fi

# --sim: the simulated typist (typos, corrections, timing) against the oracle,
# which ignores "t_ms"/"decide" and refuses "feedback": decide off and on must
# then agree, the typist saves keystrokes against its own baseline, and a
# seed fixes everything.
"$LAYA" eval "$T/a.txt" "$T/b.txt" --sim --seed 3 --json --engine "$FAKE $T/a.txt $T/b.txt" \
    >"$T/s1.json" 2>"$T/se1" || { bad "eval --sim runs"; cat "$T/se1"; }
# every (text, run) pair, each run's figures carrying its text's name and length
R='[dict(r, text=t["text"], chars=t["chars"]) for t in j["texts"] for r in t["runs"]]'
check "--sim: k 3 and 1, decide off and on, per text and all" "$T/s1.json" \
    "j[\"typist\"] == \"sim\" and j[\"seed\"] == 3 and len($R) == 12 and [(r[\"k\"], r[\"decide\"]) for r in $R][:4] == [(3, False), (3, True), (1, False), (1, True)]"
check "--sim: baseline is the typist's own keystrokes, KSR against it" "$T/s1.json" \
    "all(r[\"base_keystrokes\"] >= r[\"chars\"] and 0 < r[\"keystrokes\"] < r[\"base_keystrokes\"] and abs(r[\"ksr\"] - (1 - r[\"keystrokes\"] / r[\"base_keystrokes\"])) < 1e-6 for r in $R)"
check "--sim: an engine without a decision gives the same figures on and off" "$T/s1.json" \
    "all($R[i][\"keystrokes\"] == $R[i + 1][\"keystrokes\"] and $R[i][\"shown\"] == $R[i + 1][\"shown\"] for i in range(0, 12, 2))"
check "--sim: precision is accepted / shown" "$T/s1.json" \
    "all(r[\"accepted\"] <= r[\"shown\"] <= r[\"keystrokes\"] and abs(r[\"precision\"] - r[\"accepted\"] / r[\"shown\"]) < 1e-6 for r in $R)"
grep -q 'error to feedback' "$T/se1" && ok "--sim: an engine refusing feedback is reported" ||
    { bad "--sim: an engine refusing feedback is reported"; cat "$T/se1"; }
"$LAYA" eval "$T/a.txt" "$T/b.txt" --sim --seed 3 --json --engine "$FAKE $T/a.txt $T/b.txt" \
    >"$T/s2.json" 2>/dev/null
"$LAYA" eval "$T/a.txt" "$T/b.txt" --sim --seed 4 --json --decide off --engine "$FAKE $T/a.txt $T/b.txt" \
    >"$T/s3.json" 2>/dev/null
python3 - "$T/s1.json" "$T/s2.json" "$T/s3.json" <<'PY' && ok "--sim: same seed same run; another seed another typist" || bad "--sim: seeds"
import json, sys
a, b, c = (json.load(open(f)) for f in sys.argv[1:])
runs = lambda j: [dict(r, text=t["text"]) for t in j["texts"] for r in t["runs"]]
strip = lambda j: [(r["text"], r["k"], r["decide"], r["base_keystrokes"], r["keystrokes"]) for r in runs(j)]
assert strip(a) == strip(b)
assert len(runs(c)) == 6 and not any(r["decide"] for r in runs(c))
assert [r["base_keystrokes"] for r in runs(a) if not r["decide"]] != [r["base_keystrokes"] for r in runs(c)]
PY
if "$LAYA" eval "$T/a.txt" --decide on --engine "$FAKE $T/a.txt" 2>"$T/err"; then bad "--decide needs --sim"; else
    grep -q -- "--decide needs --sim" "$T/err" && ok "--decide needs --sim" || { bad "--decide needs --sim"; cat "$T/err"; }
fi

# Laya's own engine learns into a fresh memory of its own, never the
# user's store: nothing appears under XDG_DATA_HOME, and the temporary
# folder is gone afterwards.
mkdir -p "$T/xdg" "$T/tmp"
if XDG_DATA_HOME="$T/xdg" TMPDIR="$T/tmp" LAYA_MEMORY= "$LAYA" eval "$T/a.txt" --learn --passes 2 --max-chars 11 \
    >"$T/own.txt" 2>"$T/err"; then
    if [ -z "$(ls -A "$T/xdg")" ] && [ -z "$(ls -A "$T/tmp")" ]; then ok "eval --learn leaves the user's store alone"
    else bad "eval --learn leaves the user's store alone"; ls -laR "$T/xdg" "$T/tmp"; fi
else
    bad "eval --learn with laya's own engine"; cat "$T/err"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
