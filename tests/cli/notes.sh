#!/bin/sh
# tests/cli/notes.sh - `laya notes` end to end: the default index under
# $XDG_DATA_HOME with modes 0700/0600, index with its summary and the
# skipped files' reasons, an incremental second run, search (text and
# JSON), check, clear errors, an indexer killed with SIGKILL again and again
# leaving a valid index that the next run completes, and `laya serve
# --stdio --notes` replying with related notes. Never touches the real
# ~/.local/share. Ends with "N passed, N failed".
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
T=$(mktemp -d /tmp/laya-cli-notes-XXXXXX)
trap 'rm -rf "$T"' EXIT
export HOME="$T/home" XDG_DATA_HOME="$T/xdg"
passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
fails_with() {
    name=$1; want=$2; shift 2
    if "$@" >/dev/null 2>"$T/err"; then bad "$name (succeeded)"; return; fi
    if grep -q -- "$want" "$T/err"; then ok "$name"; else bad "$name: $(cat "$T/err")"; fi
}
KILL_ROUNDS=12

DB=$T/xdg/laya/notes.db
N=$T/notes
mkdir -p "$N/sub" "$N/.git"
printf '# Project Apollo\nThe launch plan with Alice, due in March.\n' >"$N/apollo.md"
printf 'Alice and Bob went over the budget.\n' >"$N/sub/meeting.md"
printf '# 北京出差\n下周去北京见客户。\n' >"$N/beijing.md"
printf 'secret Alice\n' >"$N/.git/hidden.md"
printf 'bin\000ary' >"$N/binary.md"
printf 'bad \377 bytes\n' >"$N/broken.md"

check "path: XDG_DATA_HOME" test "$("$LAYA" notes path)" = "$DB"
check "path creates nothing" test ! -e "$T/xdg"
fails_with "search before any index: says how to make one" "laya notes index" "$LAYA" notes search alice
"$LAYA" notes index "$N" >"$T/out" 2>"$T/err"
check "index: status 0" test $? -eq 0
check "index: summary" grep -q "^3 added, 0 updated, 0 removed, 0 unchanged, 2 skipped in .*; 3 notes in $DB" "$T/out"
check "index: the binary file's reason" grep -q "skipped $N/binary.md: a binary file" "$T/err"
check "index: the broken file's reason" grep -q "skipped $N/broken.md: not valid UTF-8 (at byte 4)" "$T/err"
check "index: hidden folders left out" sh -c "! grep -q hidden '$T/out' '$T/err'"
check "db file 0600" test "$(stat -c %a "$DB")" = 600
check "laya folder 0700" test "$(stat -c %a "$T/xdg/laya")" = 700

"$LAYA" notes search alice >"$T/s" 2>&1
check "search: both notes, paths shown" sh -c "grep -q '$N/apollo.md' '$T/s' && grep -q '$N/sub/meeting.md' '$T/s'"
check "search: the match in brackets" grep -q "\[Alice\]" "$T/s"
"$LAYA" notes search "project launch" --json -k 1 >"$T/j" 2>/dev/null
check "search --json -k 1: one object, the title first" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/j', encoding='utf-8')]
assert len(rows) == 1 and rows[0]['title'] == 'Project Apollo' and rows[0]['path'] == '$N/apollo.md'
assert set(rows[0]) == {'title', 'path', 'snippet', 'score'} and rows[0]['score'] < 0
"
"$LAYA" notes search 北京 >"$T/zh" 2>&1
check "search: Chinese" grep -q "北京出差" "$T/zh"
"$LAYA" notes search zzzunknown >/dev/null 2>"$T/err"
check "search: no match is status 1 with a message" sh -c "[ $? -eq 1 ] && grep -q 'no notes match' '$T/err'"
"$LAYA" notes search '"alice AND (NEAR' >"$T/syn" 2>&1
check "search: FTS5 syntax is only text" grep -q "apollo.md" "$T/syn"

printf '# Project Apollo\nThe launch moved to April.\n' >"$N/apollo.md"
touch -d '2020-01-01' "$N/apollo.md"
rm "$N/sub/meeting.md"
"$LAYA" notes index "$N" >"$T/out" 2>/dev/null
check "again: one updated, one removed, one unchanged" grep -q "^0 added, 1 updated, 1 removed, 1 unchanged, 2 skipped" "$T/out"
check "check: ok" sh -c "'$LAYA' notes check | grep -q ': ok$'"
fails_with "index: not a folder" "not a folder" "$LAYA" notes index "$N/apollo.md"
fails_with "index: a missing folder" "No such file" "$LAYA" notes index "$T/nothere"
fails_with "index: two folders" "expected one folder" "$LAYA" notes index "$N" "$N"
fails_with "search: no terms" "expected the terms" "$LAYA" notes search
fails_with "-k out of range" "\-k" "$LAYA" notes search alice -k 99
printf 'not a database, just text that is long enough to look like a header....' >"$T/junk.db"
fails_with "--db of another kind: refused" "damaged or not a database" "$LAYA" notes search alice --db "$T/junk.db"
fails_with "unknown subcommand" "unknown command 'frob'" "$LAYA" notes frob

# --- killed mid-update ------------------------------------------------------------
K=$T/many
python3 - "$K" <<'PY'
import os, sys
d = sys.argv[1]
os.makedirs(d)
for i in range(3000):
    with open(os.path.join(d, "n%04d.md" % i), "w") as f:
        f.write("# Note %d\nunique%04d some words about topic%d and more text here\n" % (i, i, i % 50))
PY
KDB=$T/kill.db
bad_check=0
i=0
while [ $i -lt $KILL_ROUNDS ]; do
    "$LAYA" notes index "$K" --db "$KDB" >/dev/null 2>&1 &
    pid=$!
    sleep "0.$(( (i * 37) % 9 + 1 ))"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    if [ -e "$KDB" ] && ! "$LAYA" notes check --db "$KDB" >/dev/null 2>"$T/kerr"; then
        bad_check=$((bad_check + 1)); cat "$T/kerr"
    fi
    i=$((i + 1))
done
check "SIGKILL x$KILL_ROUNDS: the index stays valid every time" test $bad_check -eq 0
"$LAYA" notes index "$K" --db "$KDB" >"$T/kout" 2>&1
check "the next run completes it: 3000 notes" grep -q "; 3000 notes in " "$T/kout"
check "every note findable" sh -c "'$LAYA' notes search unique0000 --db '$KDB' | grep -q n0000.md && \
    '$LAYA' notes search unique2999 --db '$KDB' | grep -q n2999.md"
"$LAYA" notes index "$K" --db "$KDB" >"$T/kout" 2>&1
check "and a run after it changes nothing" grep -q "^0 added, 0 updated, 0 removed, 3000 unchanged" "$T/kout"

# --- the protocol ------------------------------------------------------------------
M=$ROOT/models/default.safetensors
if [ -f "$M" ]; then
    printf '%s\n' '{"op":"suggest","context":"When is the launch now? "}' '{"op":"notes","query":"april"}' \
        '{"op":"suggest","context":"the launch ","private":true}' \
        '{"op":"suggest","context":"[sudo] password for anna: When is the launch now? "}' |
        "$LAYA" serve --stdio --model "$M" >"$T/proto" 2>"$T/proto.err"
    check "serve: a suggest reply carries the related note" python3 -c "
import json
r = [json.loads(l) for l in open('$T/proto', encoding='utf-8')]
assert r[0]['notes'][0]['path'] == '$N/apollo.md' and r[0]['notes'][0]['title'] == 'Project Apollo', r[0]
assert r[1]['notes'][0]['title'] == 'Project Apollo' and '[April]' in r[1]['notes'][0]['snippet'], r[1]
assert 'notes' not in r[2], r[2]
# after a password prompt: no notes, no intent, no suggestion (issue 39)
assert 'notes' not in r[3] and 'intent' not in r[3] and r[3]['suggestions'] == [], r[3]
"
    fails_with "serve --notes: a missing index is refused" "laya notes index" \
        "$LAYA" serve --stdio --model "$M" --notes "$T/none.db" </dev/null
    echo '{"op":"notes","query":"april"}' | "$LAYA" serve --stdio --model "$M" --notes "$KDB" >"$T/p2" 2>/dev/null
    check "serve --notes PATH: that index" grep -q '"notes":\[\]' "$T/p2"
else
    bad "the shipped model is missing: $M"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
