#!/bin/sh
# tests/cli/libime.sh - the libime peer adapter speaks the protocol, predicts
# next words after Chinese text, completes a half-typed word and stops at
# punctuation; by default it learns committed lines into libime's user
# history (a place name it never proposed comes after three commits), with
# --static it does not. Skipped (0 passed) where libime's headers or model
# are not installed (make bench-peers installs them). Ends with "N passed,
# N failed".
T=$(mktemp -d)
# Never the user's own memory or settings: a store of its own under $T.
export XDG_DATA_HOME="$T/xdg" XDG_CONFIG_HOME="$T/config"
unset LAYA_MEMORY
trap 'rm -rf "$T"' EXIT
LM=/usr/lib/$(${CXX:-g++} -print-multiarch 2>/dev/null)/libime/zh_CN.lm
if [ ! -f /usr/include/LibIME/libime/core/prediction.h ] ||
    [ ! -f /usr/include/Fcitx5/Utils/fcitx-utils/macros.h ] || [ ! -f "$LM.predict" ] ||
    [ ! -f /usr/include/boost/range/adaptor/transformed.hpp ]; then
    echo "skipped: libime is not installed (apt-get install libimecore-dev libfcitx5utils-dev libime-data-language-model libboost-dev)"
    echo "0 passed, 0 failed"
    exit 0
fi
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
A=$T/laya-libime
if ! ${CXX:-g++} -std=c++17 -O2 -Wall -Wextra -Werror -I/usr/include/LibIME \
        $(pkg-config --cflags Fcitx5Utils) -DLAYA_LIBIME_LM="\"$LM\"" -o "$A" \
        peers/libime/laya-libime.cc -lIMECore $(pkg-config --libs Fcitx5Utils) -ljansson 2>"$T/cc"; then
    cat "$T/cc"
    echo "0 passed, 1 failed"
    exit 1
fi

# One request per line in, "name: reply" per line out; run as
# talk OUT ADAPTER-ARGS... (stderr to OUT.err).
talk() {
    out=$1
    shift
    python3 - "$@" >"$out" 2>"$out.err" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def ask(name, req):
    line = req if isinstance(req, str) else json.dumps(req, ensure_ascii=False)
    p.stdin.write(line.encode() + b"\n"); p.stdin.flush()
    print(name + ": " + p.stdout.readline().decode("utf-8").strip())   # strict: valid UTF-8
ask("garbage", "not json")
ask("reset", {"op": "reset", "session": "s"})
ask("next", {"op": "suggest", "session": "s", "context": "我们今天", "k": 3})
ask("next1", {"op": "suggest", "session": "s", "context": "我们今天", "k": 1})
ask("half", {"op": "suggest", "session": "s", "context": "放假以后我们学", "k": 3})
ask("punct", {"op": "suggest", "session": "s", "context": "我们今天。", "k": 3})
ask("punct2", {"op": "suggest", "session": "s", "context": "我们。学", "k": 3})
ask("score", {"op": "score", "session": "s", "text": "我们"})
ask("feedback", {"op": "feedback", "session": "s", "accepted": -1})
# learning: the same line committed three times, a reset between (a session
# ends, the history stays), then the places it ends at
line = "我们今天去乌鲁木齐看长颈鹿。\n"
ask("commit-bad", {"op": "commit", "session": "s"})
for i in range(3):
    ask("commit%d" % i, {"op": "commit", "session": "s", "text": line})
ask("reset2", {"op": "reset", "session": "s"})
ask("learnt-next", {"op": "suggest", "session": "s", "context": "明天我们今天去", "k": 3})
ask("learnt-half", {"op": "suggest", "session": "s", "context": "我们今天去看长", "k": 3})
p.stdin.close()
p.wait()
EOF
}
talk "$T/out.txt" "$A"
talk "$T/static.txt" "$A" --static

# check NAME PYTHON-EXPRESSION [FILE]: the expression over the reply j holds.
check() {
    python3 -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    name, _, rest = line.partition(": ")
    if name == sys.argv[2]:
        j = json.loads(rest)
        sys.exit(0 if eval(sys.argv[3]) else 1)
sys.exit(1)' "${3:-$T/out.txt}" "$1" "$2"
}
# a well-formed suggest reply with at most K suggestions
well='(isinstance(j.get("suggestions"), list) and j["us"] > 0 and
       all(isinstance(s, str) and s and s.encode("utf-8") for s in j["suggestions"]) and
       len(set(j["suggestions"])) == len(j["suggestions"]))'

check garbage '"error" in j' && check reset 'j == {"ok": True}' &&
    ok "malformed request gets an error, server goes on" || bad "malformed request"
check next "$well and 1 <= len(j[\"suggestions\"]) <= 3" &&
    check next1 "$well and len(j[\"suggestions\"]) == 1" &&
    ok "next words after 我们今天: up to k distinct non-empty strings, with us" ||
    { bad "next words"; cat "$T/out.txt"; }
# 学校 follows 我们 in libime's prediction table
check half "$well and \"校\" in j[\"suggestions\"]" &&
    ok "half-typed word: 我们学 is completed with 校" || { bad "half-typed word"; cat "$T/out.txt"; }
check punct 'j["suggestions"] == []' && check punct2 "$well and \"校\" not in j[\"suggestions\"]" &&
    ok "nothing is predicted across punctuation" ||
    { bad "punctuation ends the context"; cat "$T/out.txt"; }
check score '"error" in j' && check feedback 'j == {"ok": True}' &&
    ok "score refused, feedback acknowledged" || { bad "score/feedback"; cat "$T/out.txt"; }
# Learning: 乌鲁木齐 (Urumqi) follows 去 and 颈鹿 completes 长 only from the
# history; the static model proposes neither (checked on its replies too).
check learnt-next "$well and j[\"suggestions\"][0] == \"乌鲁木齐\"" &&
    check learnt-half "$well and \"颈鹿\" in j[\"suggestions\"]" &&
    check commit0 'j == {"ok": True}' && check commit-bad '"error" in j' &&
    grep -q '^laya-libime: learned 3 commits, 3 sentences' "$T/out.txt.err" &&
    ok "committed lines are learned: 乌鲁木齐 after 去, 长 completed with 颈鹿, counted on stderr" ||
    { bad "learning from commits"; cat "$T/out.txt" "$T/out.txt.err"; }
check learnt-next "$well and \"乌鲁木齐\" not in j[\"suggestions\"]" "$T/static.txt" &&
    check learnt-half "$well and \"颈鹿\" not in j[\"suggestions\"]" "$T/static.txt" &&
    check half "$well and \"校\" in j[\"suggestions\"]" "$T/static.txt" &&
    check commit0 'j == {"ok": True}' "$T/static.txt" &&
    ok "--static: the same commits are acknowledged and not learned" ||
    { bad "--static does not learn"; cat "$T/static.txt"; }
"$A" --lm "$T/none.lm" </dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "cannot read $T/none.lm" "$T/err" &&
    ok "missing model: exit 2 with a message" || { bad "missing model"; cat "$T/err"; }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
