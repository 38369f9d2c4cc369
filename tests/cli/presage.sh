#!/bin/sh
# tests/cli/presage.sh - the Presage peer adapter speaks the protocol, its
# default configuration learns while text is typed and --static does not;
# words ending in a multi-byte character no longer make Presage abort
# (--raw, fed unchanged, shows that they do, and that the adapter survives
# each abort and counts it).
# Skipped (0 passed) where libpresage-dev is not installed (make bench-peers
# installs it). Ends with "N passed, N failed".
T=$(mktemp -d)
# Never the user's own memory or settings: a store of its own under $T.
export XDG_DATA_HOME="$T/xdg" XDG_CONFIG_HOME="$T/config"
unset LAYA_MEMORY
trap 'rm -rf "$T"' EXIT
if [ ! -f /usr/include/presage.h ] || [ ! -f /usr/share/presage/database_en.db ]; then
    echo "skipped: Presage is not installed (apt-get install presage libpresage-dev libpresage-data)"
    echo "0 passed, 0 failed"
    exit 0
fi
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
A=$T/laya-presage
if ! ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$A" \
        peers/presage/laya-presage.c -lpresage -ljansson 2>"$T/cc"; then
    cat "$T/cc"
    echo "0 passed, 1 failed"
    exit 1
fi

# Types a sentence with a made-up word twice, one character per request,
# then asks at a word start; prints the last reply.
drive() {
    python3 - "$@" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def ask(req):
    p.stdin.write(json.dumps(req) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
p.stdin.write("not json\n"); p.stdin.flush()
print("garbage:", p.stdout.readline().strip())
text = "We met the zqxjvw team today. The zqxjvw team was glad. Ask the "
for i in range(len(text) + 1):
    last = ask({"op": "suggest", "session": "s", "context": text[:i], "k": 3})
print("reset:", json.dumps(ask({"op": "reset", "session": "s"})))
print("partial:", json.dumps(ask({"op": "suggest", "session": "s", "context": "Best re", "k": 3})))
print("last:", json.dumps(last))
p.stdin.close()
p.wait()
EOF
}
drive "$A" >"$T/learn.txt" 2>&1
drive "$A" --static >"$T/static.txt" 2>&1

grep -q '^garbage: {"error":' "$T/learn.txt" && ok "malformed request gets an error, server goes on" ||
    { bad "malformed request"; cat "$T/learn.txt"; }
grep -q '^reset: {"ok": true}' "$T/learn.txt" && ok "reset answered" || bad "reset answered"
python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("partial: "):
        j = json.loads(line[9:])
        ok = j["suggestions"] and all(s.endswith(" ") and " " not in s[:-1] for s in j["suggestions"]) and j["us"] > 0
        sys.exit(0 if ok else 1)
sys.exit(1)' "$T/learn.txt" && ok "completion: rest of the word plus a space, with us" ||
    { bad "completion format"; cat "$T/learn.txt"; }
grep -q '^last: .*"zqxjvw ' "$T/learn.txt" && ok "default configuration learns a new word online" ||
    { bad "default configuration learns"; cat "$T/learn.txt"; }
grep -q '^last: .*"suggestions"' "$T/static.txt" && ! grep -q '^last: .*zqxjvw' "$T/static.txt" &&
    ok "--static does not learn" || { bad "--static does not learn"; cat "$T/static.txt"; }
# Presage 0.9.1 aborts (numerator <= denominator) once it has learned a
# bigram after a word ending in a UTF-8 continuation byte ("colors”", see
# laya-presage.c). Typed one character per request, every request must be
# answered; the stderr summary counts the re-encoded and the lost ones.
utf8() {
    python3 - "$@" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
text = ("We use \u201cinvert colors\u201d after that. We use \u201cinvert colors\u201d after that. "
        "We sat in the caf\u00e9 today. The caf\u00e9 was fine. We use \u201cinvert colors\u201d after "
        "the caf\u00e9 and the ")
n, seen = 0, set()
for i in range(len(text) + 1):
    p.stdin.write(json.dumps({"op": "suggest", "session": "s", "context": text[:i], "k": 3}) + "\n")
    p.stdin.flush()
    j = json.loads(p.stdout.readline())
    n += "suggestions" in j
    seen.update(j.get("suggestions", []))
print("answered: %d of %d" % (n, len(text) + 1))
print("cafe learned:", "caf\u00e9 " in seen)
p.stdin.close()
p.wait()
EOF
}
utf8 "$A" >"$T/utf8.txt" 2>"$T/utf8.err"
utf8 "$A" --raw >"$T/raw.txt" 2>"$T/raw.err"
# counts OUT ERR: "requests re-encoded lost" from the summary line, when
# every request was answered
counts() {
    grep -q '^answered: \([0-9]*\) of \1$' "$1" &&
        sed -n 's/^laya-presage: \([0-9]*\) suggest requests, \([0-9]*\) re-encoded, \([0-9]*\) lost to a Presage abort.*/\1 \2 \3/p' "$2"
}
set -- $(counts "$T/utf8.txt" "$T/utf8.err")
[ "${1:-0}" -gt 100 ] && [ "$2" -gt 0 ] && [ "$3" -eq 0 ] && ! grep -q Assertion "$T/utf8.err" &&
    ok "UTF-8 quotes and accents: every request answered, $2 re-encoded and counted, no abort" ||
    { bad "UTF-8 text without abort"; cat "$T/utf8.txt" "$T/utf8.err"; }
grep -q '^cafe learned: True' "$T/utf8.txt" && ok "a word ending in é is learned and proposed whole" ||
    { bad "word ending in é learned"; cat "$T/utf8.txt"; }
set -- $(counts "$T/raw.txt" "$T/raw.err")
[ "${1:-0}" -gt 100 ] && [ "$2" -eq 0 ] && [ "$3" -gt 0 ] && grep -q 'numerator <= denominator' "$T/raw.err" &&
    ok "--raw: Presage aborts on the same text; each abort an empty reply, counted ($3), Presage restarted" ||
    { bad "--raw aborts survived and counted"; cat "$T/raw.txt" "$T/raw.err"; }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
