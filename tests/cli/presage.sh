#!/bin/sh
# tests/cli/presage.sh - the Presage peer adapter speaks the protocol, its
# default configuration learns while text is typed and --static does not.
# Skipped (0 passed) where libpresage-dev is not installed (make bench-peers
# installs it). Ends with "N passed, N failed".
T=$(mktemp -d)
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
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
