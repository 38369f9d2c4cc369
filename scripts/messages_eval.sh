#!/bin/sh
# scripts/messages_eval.sh - KSR (CSR in Chinese) of short messages each typed
# into an empty field, as in a chat box or a new mail's first line: the first
# N lines of TEXT, each its own text (laya eval types every TEXT in its own
# session from an empty context), summed over all of them. genre_eval.sh types
# a file as one long text, where a text's start is a small part; here the start
# is most of it.
#   sh scripts/messages_eval.sh TEXT [N]      (N = 150)
#   MODEL=... (default the shipped one) or ENGINE="CMD" (laya eval --engine),
#   LANG_=en|zh (default: zh when TEXT's name starts with zh-), LAYA (build/laya)
# Prints KSR@3, KSR@1 and bits per byte (the model's, over the same lines).
set -eu
TEXT=${1:?usage: messages_eval.sh TEXT [N]}
N=${2:-150}
LAYA=${LAYA:-build/laya}
case "$(basename "$TEXT")" in zh-*) lang=${LANG_:-zh} ;; *) lang=${LANG_:-en} ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v '^[[:space:]]*$' "$TEXT" | head -n "$N" | split -l 1 -a 4 - "$tmp/m"
if [ -n "${ENGINE:-}" ]; then
    "$LAYA" eval "$tmp"/m* --engine "$ENGINE" --k 3 --lang "$lang" --json >"$tmp/out.json"
else
    "$LAYA" eval "$tmp"/m* --model "${MODEL:-models/default.safetensors}" --k 3 --lang "$lang" --json >"$tmp/out.json"
fi
python3 - "$tmp/out.json" "$TEXT" "$lang" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
saved, chars, bits, nbytes = {}, {}, 0.0, 0
texts = [t for t in d["texts"] if t["text"] != "(all)"]  # (all): laya eval's own sum
for t in texts:
    for p in t["passes"]:
        saved[p["k"]] = saved.get(p["k"], 0) + t["chars"] - p["keystrokes"]
        chars[p["k"]] = chars.get(p["k"], 0) + t["chars"]
    if t.get("bpb") is not None:
        bits += t["bpb"] * t["bytes"]
        nbytes += t["bytes"]
m = "CSR" if sys.argv[3] == "zh" else "KSR"
print("%s: %d messages, %d characters: %s@3 %.4f  %s@1 %.4f  bits/byte %s" % (
    sys.argv[2], len(texts), chars[3], m, saved[3] / chars[3], m, saved[1] / chars[1],
    "%.4f" % (bits / nbytes) if nbytes else "n/a"))
PY
