#!/bin/sh
# tests/cli/memory.sh - `laya memory` and `laya incognito` end to end: the
# default path under $XDG_DATA_HOME (or $HOME), modes 0700/0600, add, list
# (text and JSON), export, forget --word/--since/--text/--all with what they
# removed (feedback entries included), incognito persisting across processes, the typist's feedback
# (kept by `serve`, listed, exported, forgotten, not kept in incognito), and clear errors for bad
# input. Never touches the real ~/.local/share: HOME and XDG_DATA_HOME
# point into a temporary folder. Ends with "N passed, N failed".
BUILD=${BUILD:-build}
LAYA=$(cd "$(dirname "$0")/../.." && pwd)/$BUILD/laya
T=$(mktemp -d /tmp/laya-cli-memory-XXXXXX)
trap 'rm -rf "$T"' EXIT
export HOME="$T/home" XDG_DATA_HOME="$T/xdg"
unset LAYA_MEMORY
passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# fails_with NAME TEXT CMD...: nonzero status and TEXT in stderr.
fails_with() {
    name=$1; want=$2; shift 2
    if "$@" >/dev/null 2>"$T/err"; then bad "$name (succeeded)"; return; fi
    if grep -q -- "$want" "$T/err"; then ok "$name"; else bad "$name: $(cat "$T/err")"; fi
}
mode() { stat -c %a "$1"; }

DB=$T/xdg/laya/memory.db
check "path: XDG_DATA_HOME" test "$("$LAYA" memory path)" = "$DB"
check "path creates nothing" test ! -e "$T/xdg"
check "path: HOME without XDG_DATA_HOME" \
    test "$(env -u XDG_DATA_HOME "$LAYA" memory path)" = "$T/home/.local/share/laya/memory.db"
check "path: LAYA_MEMORY" test "$(LAYA_MEMORY=$T/env.db "$LAYA" memory path)" = "$T/env.db"
check "path: --memory wins" test "$(LAYA_MEMORY=$T/env.db "$LAYA" memory path --memory "$T/x.db")" = "$T/x.db"

check "add" "$LAYA" memory add "Best regards, Tom" 2>/dev/null
"$LAYA" memory add "Best regards, Tom" 2>/dev/null
"$LAYA" memory add "我想订个外卖" 2>/dev/null
printf 'dinner with Tom\tat 8' | "$LAYA" memory add - 2>/dev/null
"$LAYA" memory add "Tomato soup" 2>/dev/null
check "db file 0600" test "$(mode "$DB")" = 600
check "laya folder 0700" test "$(mode "$T/xdg/laya")" = 700
check "created XDG folder 0700" test "$(mode "$T/xdg")" = 700

"$LAYA" memory list >"$T/list" 2>"$T/list.err"
check "list: most recent first" sh -c "sed -n 2p '$T/list' | grep -q 'Tomato soup'"
check "list: counts repeats" grep -q '^ *2 .*"Best regards, Tom"' "$T/list"
check "list: escapes a tab" grep -q 'dinner with Tom\\tat 8' "$T/list"
check "list: CJK" grep -q '我想订个外卖' "$T/list"
check "list: summary" grep -q "4 texts from 5 commits" "$T/list.err"
"$LAYA" memory list --json >"$T/list.json" 2>/dev/null
check "list --json: one object per text" test "$(wc -l <"$T/list.json")" -eq 4
check "list --json: fields" python3 -c "
import json, sys
rows = [json.loads(l) for l in open('$T/list.json', encoding='utf-8')]
r = [x for x in rows if x['text'] == 'Best regards, Tom'][0]
assert r['count'] == 2 and r['first'] <= r['last'] and set(r) == {'text', 'count', 'first', 'last'}
assert any(x['text'] == 'dinner with Tom\tat 8' for x in rows)
"
umask 022
"$LAYA" memory export "$T/out.jsonl" 2>/dev/null
check "export: same lines as list --json" cmp -s "$T/out.jsonl" "$T/list.json"
check "export: file 0600" test "$(mode "$T/out.jsonl")" = 600
check "export: stdout" sh -c "'$LAYA' memory export 2>/dev/null | cmp -s - '$T/list.json'"

# incognito: set by one process, obeyed by the next, kept until switched off.
check "incognito on" sh -c "'$LAYA' incognito on | grep -q 'incognito is on'"
check "incognito status on" test "$("$LAYA" incognito status)" = on
"$LAYA" memory add "PRIVATE-while-incognito" 2>"$T/add.err"
check "incognito: add says not learned" grep -q "incognito is on" "$T/add.err"
check "incognito: nothing stored" sh -c "! '$LAYA' memory list 2>/dev/null | grep -q PRIVATE"
check "incognito: no bytes in the files" sh -c "! cat '$DB'* | grep -aq PRIVATE-while"
check "incognito off" sh -c "'$LAYA' incognito off | grep -q 'incognito is off'"
check "incognito status off" test "$("$LAYA" incognito status)" = off

# forgetting says what it removed and leaves no bytes behind.
check "forget --word" sh -c "'$LAYA' memory forget --word tom | grep -q 'forgot 3 commits'"
check "forget --word kept Tomato" sh -c "'$LAYA' memory list 2>/dev/null | grep -q Tomato"
check "forget --word: no bytes left" sh -c "! cat '$DB'* | grep -aq 'regards'"
check "forget --word CJK" sh -c "'$LAYA' memory forget --word 外卖 | grep -q 'forgot 1 commits'"
check "forget --since a future date" sh -c "'$LAYA' memory forget --since 2999-01-01 | grep -q 'forgot 0 commits'"
check "forget --since 2000-01-01" sh -c "'$LAYA' memory forget --since 2000-01-01 | grep -q 'forgot 1 commits'"
"$LAYA" memory add "one more" 2>/dev/null
"$LAYA" memory add "and another" 2>/dev/null
"$LAYA" memory add "and another one" 2>/dev/null
check "forget --text: only the exact text" sh -c "'$LAYA' memory forget --text 'and another one' | grep -q 'forgot 1 commits that are exactly'"
check "forget --text kept the shorter one" sh -c "'$LAYA' memory list 2>/dev/null | grep -q '\"and another\"'"
check "forget --text: a prefix is no match" sh -c "'$LAYA' memory forget --text 'one' | grep -q 'forgot 0 commits'"
check "forget --all" sh -c "'$LAYA' memory forget --all | grep -q 'forgot everything: 2 commits'"
check "list after forget --all" sh -c "'$LAYA' memory list 2>&1 | grep -q '0 texts from 0 commits'"
check "forget --since unix seconds" sh -c "'$LAYA' memory forget --since 0 | grep -q 'forgot 0 commits'"

# --memory PATH: another store, created on first use.
"$LAYA" memory add --memory "$T/other/m.db" "elsewhere" 2>/dev/null
check "--memory: a separate store" sh -c "'$LAYA' memory list --memory '$T/other/m.db' 2>/dev/null | grep -q elsewhere"
check "--memory: default store untouched" sh -c "! '$LAYA' memory list 2>/dev/null | grep -q elsewhere"

# feedback: what a typist passed over, kept by the server, listed, exported,
# forgotten; nothing kept in incognito. Feedback reaches the store only with
# a commit that holds its context (issue 39: text typed and erased leaves no
# byte on disk), so the typist here commits what it typed.
FB=$T/fb.db
fb_serve() {
    printf '%s\n' '{"op":"suggest","context":"Dear Zeb","k":3}' '{"op":"feedback","accepted":-1}' \
        '{"op":"commit","text":"Dear Zeb"}' \
        '{"op":"suggest","context":"I like the qu","k":3}' '{"op":"feedback","accepted":-1}' \
        '{"op":"commit","text":"I like the qu"}' |
        "$LAYA" serve --stdio --memory "$FB" >"$T/fb.out" 2>/dev/null
}
# Typed (a client's contexts), passed over, erased, never committed; another
# line committed after it: no byte of the erased name on disk (issue 39).
printf '%s\n' '{"op":"suggest","context":"Dear Zorblatt","k":3}' '{"op":"feedback","accepted":-1}' \
    '{"op":"suggest","context":"Dear Zorbla","k":3}' '{"op":"feedback","accepted":-1}' \
    '{"op":"suggest","context":"Dear ","k":3}' '{"op":"feedback","accepted":-1}' \
    '{"op":"suggest","context":"Dear Anna","k":3}' '{"op":"commit","text":"Dear Anna"}' |
    "$LAYA" serve --stdio --memory "$T/fb0.db" >/dev/null 2>&1
check "feedback without a commit: no byte on disk" sh -c "test -s '$T/fb0.db' && ! cat '$T/fb0.db'* | grep -aq Zorbl"
check "the committed line is there" sh -c "'$LAYA' memory list --memory '$T/fb0.db' | grep -q 'Dear Anna'"
# A commit that follows a password prompt is never learned, even when the
# client commits only the typed secret (issue 40, F7; the pipeline's gate).
printf '%s\n' '{"op":"suggest","context":"[sudo] password for anna: ","k":3}' \
    '{"op":"commit","text":"Tr0ub4dor"}' '{"op":"suggest","context":"ok now","k":3}' '{"op":"commit","text":"ok now"}' |
    "$LAYA" serve --stdio --memory "$T/f7.db" >"$T/f7.out" 2>/dev/null
check "a commit after a password prompt: not learned, not on disk" sh -c "sed -n 2p '$T/f7.out' | grep -q '\"learned\":false' && ! cat '$T/f7.db'* | grep -aq Tr0ub4dor"
check "the next line is learned again" sh -c "sed -n 4p '$T/f7.out' | grep -q '\"learned\":true'"
# A private commit keeps its text out and leaves the session as it was: the
# list shown before it is still judged by the next feedback.
printf '%s\n' '{"op":"suggest","context":"I went to the sto","k":3}' '{"op":"commit","text":"QPC-secret","private":true}' \
    '{"op":"feedback","accepted":-1}' '{"op":"commit","text":"I went to the sto"}' |
    "$LAYA" serve --stdio --memory "$T/pc.db" >/dev/null 2>&1
check "a private commit: not kept, and the session's list still judged" sh -c "! cat '$T/pc.db'* | grep -aq QPC-secret && \
    '$LAYA' memory list --feedback --memory '$T/pc.db' 2>&1 | grep -q '^[1-9][0-9]* feedback entries'"
fb_serve
check "feedback: the server answers ok" test "$(grep -c '"ok":true' "$T/fb.out")" -eq 4
"$LAYA" memory list --feedback --memory "$FB" >"$T/fb.list" 2>"$T/fb.err"
check "list --feedback: the contexts" sh -c "grep -q '\"Dear Zeb\" -> ' '$T/fb.list' && grep -q '\"like the qu\" -> ' '$T/fb.list'"
check "list --feedback: passed over once" sh -c "grep '\"Dear Zeb\"' '$T/fb.list' | head -1 | grep -q '^ *1.0 *0.0 '"
check "list --feedback: summary" grep -q "feedback entries in" "$T/fb.err"
"$LAYA" memory list --memory "$FB" >/dev/null 2>"$T/fb.err"
check "list: mentions the feedback" grep -q "feedback entries (laya memory list --feedback)" "$T/fb.err"
"$LAYA" memory export --memory "$FB" >"$T/fb.jsonl" 2>/dev/null
check "export: the feedback entries" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/fb.jsonl', encoding='utf-8')]
fb = [r for r in rows if 'context' in r]
assert fb and all(set(r) == {'context', 'text', 'ignored', 'accepted', 'last'} for r in fb)
assert any(r['context'] == 'Dear Zeb' and r['ignored'] == 1 for r in fb)
"
check "forget --word: feedback entries too" sh -c "'$LAYA' memory forget --memory '$FB' --word dear | grep -q 'forgot 1 commits and [1-9][0-9]* feedback entries'"
check "forget --word: the other context stays" sh -c "'$LAYA' memory list --feedback --memory '$FB' 2>/dev/null | grep -q '\"like the qu\"' && ! '$LAYA' memory list --feedback --memory '$FB' 2>/dev/null | grep -q Zeb"
check "forget --word: no bytes left" sh -c "! cat '$FB'* | grep -aq 'Dear Zeb'"
check "forget --since: feedback entries too" sh -c "'$LAYA' memory forget --memory '$FB' --since 2000-01-01 | grep -q 'and [1-9][0-9]* feedback entries'"
# --text: the entries whose context (or suggestion) occurs in the text go
# with the commit; the others stay.
fb_serve
"$LAYA" memory add --memory "$FB" "Dear Zeb, QFT-see you" 2>/dev/null
check "forget --text: feedback entries found in the text too" sh -c "'$LAYA' memory forget --memory '$FB' --text 'Dear Zeb, QFT-see you' | grep -q 'forgot 1 commits that are exactly \"Dear Zeb, QFT-see you\" and [1-9][0-9]* feedback entries found in it'"
check "forget --text: the other context stays" sh -c "'$LAYA' memory list --feedback --memory '$FB' 2>/dev/null | grep -q '\"like the qu\"' && ! '$LAYA' memory list --feedback --memory '$FB' 2>/dev/null | grep -q Zeb"
# (the commit "Dear Zeb" itself is another text: it stays)
check "forget --text: no bytes left" sh -c "! cat '$FB'* | grep -aq -e QFT-see"
fb_serve
check "forget --all: feedback entries too" sh -c "'$LAYA' memory forget --memory '$FB' --all | grep -q 'forgot everything: [0-9]* commits and [1-9][0-9]* feedback entries'"
check "forget --all: no bytes left" sh -c "! cat '$FB'* | grep -aq 'the qu'"
"$LAYA" incognito on --memory "$FB" >/dev/null
fb_serve
check "incognito: no feedback kept" sh -c "'$LAYA' memory list --feedback --memory '$FB' 2>&1 | grep -q '^0 feedback entries'"
"$LAYA" incognito off --memory "$FB" >/dev/null

# The same through the protocol (docs/PROTOCOL.md, "The personal memory"):
# list with paging, export, forget by exact text, and errors that name the
# problem.
PD=$T/proto.db
printf '%s\n' '{"op":"commit","text":"See you at noon"}' '{"op":"suggest","context":"Dear Zeb","k":3}' \
    '{"op":"feedback","accepted":-1}' '{"op":"commit","text":"Dear Zeb, best regards, Tom"}' \
    '{"op":"commit","text":"Dear Zeb, best regards, Tom"}' '{"op":"list"}' '{"op":"list","offset":1,"limit":1}' \
    '{"op":"list","feedback":true}' '{"op":"export"}' '{"op":"forget","text":"See you at noon"}' \
    '{"op":"list"}' '{"op":"list","limit":10001}' '{"op":"list","offset":-1}' \
    '{"op":"forget","text":"x","all":true}' |
    "$LAYA" serve --stdio --memory "$PD" >"$T/proto.out" 2>/dev/null
check "protocol: list, export and forget --text" python3 -c "
import json
r = [json.loads(l) for l in open('$T/proto.out', encoding='utf-8')]
lst, page, fb, exp, fgt, after = r[5], r[6], r[7], r[8], r[9], r[10]
assert lst['total'] == 2 and [e['text'] for e in lst['entries']] == ['Dear Zeb, best regards, Tom', 'See you at noon'], lst
assert lst['entries'][0]['count'] == 2 and set(lst['entries'][0]) == {'text', 'count', 'first', 'last'}
assert page['total'] == 2 and [e['text'] for e in page['entries']] == ['See you at noon'], page
assert fb['total'] >= 1 and all(e['context'] == 'Dear Zeb' and e['ignored'] == 1 for e in fb['entries']), fb
assert exp['commits'] == lst['entries'] and exp['feedback'] == fb['entries'], exp
assert fgt == {'ok': True, 'removed': 1}, fgt
assert after['total'] == 1 and after['entries'][0]['text'] == 'Dear Zeb, best regards, Tom', after
assert '0..10000' in r[11]['error'] and 'offset' in r[12]['error'], r[11:13]
assert 'one of' in r[13]['error'], r[13]
"
check "protocol: forget --text leaves no bytes" sh -c "! cat '$PD'* | grep -aq 'See you at noon'"
printf '%s\n' '{"op":"list"}' '{"op":"export"}' | "$LAYA" serve --stdio --no-learn >"$T/nolearn.out" 2>/dev/null
check "protocol: list without a memory says so" test "$(grep -c 'no memory' "$T/nolearn.out")" -eq 2

# Bad input: a message that names the problem, nonzero status.
fails_with "forget without a choice" "exactly one of" "$LAYA" memory forget
fails_with "forget with two choices" "exactly one of" "$LAYA" memory forget --all --word x
fails_with "forget --since a bad date" "YYYY-MM-DD" "$LAYA" memory forget --since 2024-02-30
fails_with "forget --since garbage" "YYYY-MM-DD" "$LAYA" memory forget --since yesterday
fails_with "forget --word without a word" "expects a value" "$LAYA" memory forget --word
fails_with "add invalid UTF-8" "not valid UTF-8" "$LAYA" memory add "$(printf 'bad\377')"
fails_with "add too long" "limit" sh -c "head -c 70000 /dev/zero | tr '\\0' x | '$LAYA' memory add -"
fails_with "unknown subcommand" "unknown subcommand" "$LAYA" memory frobnicate
fails_with "incognito bad word" "on, off or status" "$LAYA" incognito maybe
fails_with "a folder as the store" "is a folder" "$LAYA" memory list --memory "$T"
mkfifo "$T/fifo"
fails_with "a FIFO as the store" "named pipe" timeout 10 "$LAYA" memory list --memory "$T/fifo"
head -c 4096 /dev/urandom >"$T/garbage.db"
fails_with "garbage file" "not a SQLite database" "$LAYA" memory list --memory "$T/garbage.db"
# a secret typed after a password prompt is never kept (util/privacy.h)
"$LAYA" memory add --memory "$T/secret.db" "$(printf 'ssh host\nanna@host'"'"'s password: hunter2\nexit')" 2>/dev/null
"$LAYA" memory list --memory "$T/secret.db" >"$T/secret.list" 2>/dev/null
check "a password after its prompt is not stored" sh -c "! grep -q hunter2 '$T/secret.list' && ! grep -q hunter2 '$T/secret.db'*"
check "the rest of the commit is" grep -q "password:.*exit" "$T/secret.list"
# laya complete draws on the memory as every front end does (issue 39: it
# ignored it); --no-learn is the model alone; it never creates a store.
"$LAYA" memory add --memory "$T/c.db" "Zorblatt Quennington signed the lease" 2>/dev/null
"$LAYA" memory add --memory "$T/c.db" "Zorblatt Quennington signed the lease" 2>/dev/null
check "complete uses the memory" sh -c "'$LAYA' complete --memory '$T/c.db' 'Zorblatt Q' | grep -q 'uennington'"
check "complete --no-learn: the model alone" sh -c "! '$LAYA' complete --memory '$T/c.db' --no-learn 'Zorblatt Q' | grep -q 'uennington'"
check "complete creates no store" sh -c "XDG_DATA_HOME='$T/none' '$LAYA' complete 'Best re' >/dev/null && [ ! -e '$T/none/laya/memory.db' ]"
fails_with "complete --memory that does not exist" "no memory at" "$LAYA" complete --memory "$T/nothere.db" "Best re"
# Word boundaries (issue 39), as `laya complete` shows them with the shipped
# model: 我们明天 is not offered 的地 beside 的地方, and after one committed
# English line no Latin word is glued to the Chinese.
check "complete: no Chinese word cut in half" sh -c "! '$LAYA' complete --no-learn '我们明天' | grep -q '\"的地\"\$'"
"$LAYA" memory add --memory "$T/en.db" "Thus we agreed to meet on Friday." 2>/dev/null
check "complete: no Latin word after Chinese from one English line" sh -c "printf 'Thus we agreed to meet on Friday.\n我们明天' | '$LAYA' complete --memory '$T/en.db' - | grep -q '\"的地方\"' && ! printf 'Thus we agreed to meet on Friday.\n我们明天' | '$LAYA' complete --memory '$T/en.db' - | grep -q '\"[A-Za-z]'"
check "complete: nothing after a password prompt, saying why" sh -c "'$LAYA' complete --memory '$T/c.db' '[sudo] password for anna: Zorb' 2>&1 >/dev/null | grep -q 'password prompt'"
check "memory --help" sh -c "'$LAYA' memory --help | grep -q 'laya memory forget'"
check "laya lists the commands" sh -c "'$LAYA' --help | grep -q incognito"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
