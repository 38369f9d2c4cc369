#!/bin/sh
# scripts/learn_eval.sh - the learning figures of docs/RESULTS.md ("Learning"):
# KSR@3 on held-out text of the validation splits (data/corpus, `make
# corpus`) for the model alone (`serve --no-learn`), with learning (the typed
# text and a commit after every line: first and second pass in one process),
# and with a junk flood of 1,000 random strings committed first.
# Two sets of texts:
#  - slices (the figures since 2026-12-03): 6,000 bytes from a line start at
#    fixed offsets of valid.txt (the split is ordered by source); the first
#    CHARS characters are typed (CHARS/2 in Chinese);
#  - long one-author texts, where a document's own names and terms recur:
#    UFO:AI's research reports to the Commander (valid-letters.txt), an
#    Endless Sky campaign's dialogue and narration (valid-dialogue.txt),
#    and the Chinese Cataclysm dialogue (zh/valid-dialogue.txt); and, from
#    games no model trained on (scripts/corpus/everyday.py: data/eval,
#    packages warzone2100-data and widelands-data, kept out of sources.json,
#    so the model does not know their names already), Warzone 2100's
#    campaign briefings in English and Chinese and Widelands' Empire
#    campaign (Lutius's diary, Saledus and Amalea); the first LONG
#    characters are typed (LONG_ZH in Chinese). Learning within one
#    document needs length: these are where it can show.
# The gain column is learning's first pass less the model alone, in points.
# With FEEDBACK=1 (the default) the learning run is repeated with the typist
# sending feedback (`laya eval --feedback`: the index taken, -1 for a list
# passed over), so the typist's preferences are learned too: columns fb typed
# (the text typed, no commits), fb p1, fb p2 and fb gain (fb p1 less learn p1).
#   LAYA   the laya binary (default build/laya)    CHARS  slice characters (default 3000)
#   LONG   long English characters (10000)         LONG_ZH long Chinese characters (3000)
#   OUT    where the texts and JSON go (default build/learn_eval)
#   SETS   "slices long" (default), or one of them
#   FEEDBACK  1 (default): also the runs with feedback; 0: not
set -eu
cd "$(dirname "$0")/.."
LAYA=${LAYA:-build/laya}
CHARS=${CHARS:-3000}
LONG=${LONG:-10000}
LONG_ZH=${LONG_ZH:-3000}
OUT=${OUT:-build/learn_eval}
SETS=${SETS:-slices long}
FEEDBACK=${FEEDBACK:-1}
mkdir -p "$OUT"
for f in data/corpus/en/valid.txt data/corpus/zh/valid.txt data/corpus/en/valid-letters.txt \
         data/corpus/en/valid-dialogue.txt data/corpus/zh/valid-dialogue.txt; do
    [ -s "$f" ] || { echo "learn_eval: $f missing (make corpus)" >&2; exit 1; }
done
for f in data/eval/en-warzone2100.txt data/eval/zh-warzone2100.txt data/eval/en-widelands.txt; do
    [ -s "$f" ] || { echo "learn_eval: $f missing (python3 scripts/corpus/everyday.py)" >&2; exit 1; }
done
slice() {   # slice NAME FILE OFFSET
    tail -c +"$3" "$2" | tail -n +2 | head -c 6000 >"$OUT/$1.txt"
}
slice en-manual-gimp data/corpus/en/valid.txt 1100000
slice en-speech data/corpus/en/valid.txt 300000
slice en-manual-kernel data/corpus/en/valid.txt 600000
slice en-quotes data/corpus/en/valid.txt 900000
slice zh-manual-man data/corpus/zh/valid.txt 50000
slice zh-manual-kernel data/corpus/zh/valid.txt 200000
slice zh-manual-debian data/corpus/zh/valid.txt 300000
# The long texts: line ranges of the genre splits, which interleave blocks
# of their sources (UFO:AI's reports sit between Cataclysm's posters and
# lab notes; its in-game help, hints and the multiplayer lobby are left
# out). Each is checked by its first words, so a rebuilt corpus whose lines
# moved stops here instead of measuring another text.
starts() {  # starts NAME FILE EXPECTED-START WHAT-TO-UPDATE
    case "$(head -c 200 "$OUT/$1.txt")" in
    "$3"*) ;;
    *) echo "learn_eval: $1 does not start with '$3': $2 changed ($4)" >&2; exit 1 ;;
    esac
}
long() {    # long NAME FILE EXPECTED-START AWK-CONDITION
    awk "$4" "$2" >"$OUT/$1.txt"
    starts "$1" "$2" "$3" "update the line ranges"
}
long long-en-letters-ufoai data/corpus/en/valid-letters.txt "One of the main components" \
    'NR>=29&&NR<=44 || NR>=62&&NR<=64 || NR>=66&&NR<=70 || NR>=205&&NR<=238 || NR>=244&&NR<=252 || NR>=267&&NR<=275 || NR>=281&&NR<=312'
long long-en-dialogue-endless-sky data/corpus/en/valid-dialogue.txt "Joanne's Doubt" 'NR>=141&&NR<=266'
long long-zh-dialogue-cataclysm data/corpus/zh/valid-dialogue.txt "这儿有谁来照顾你" 'NR>=1&&NR<=200'
# The texts of everyday.py are copied whole (it writes them in story order);
# checked by their first words the same way.
whole() {   # whole NAME FILE EXPECTED-START
    cp "$2" "$OUT/$1.txt"
    starts "$1" "$2" "$3" "scripts/corpus/everyday.py"
}
whole long-en-briefings-warzone2100 data/eval/en-warzone2100.txt "Dusk, November 3rd, 2085"
whole long-en-letters-widelands data/eval/en-widelands.txt "A Dark Night
Diary of Lutius"
whole long-zh-briefings-warzone2100 data/eval/zh-warzone2100.txt "2085年11月3日，黄昏"
python3 -c '
import random; random.seed(5)
print("\n".join("".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(3, 12))) for _ in range(1000)))' >"$OUT/junk.txt"
run() {     # run SET MAXCHARS TEXT...
    set_=$1 n=$2
    shift 2
    "$LAYA" eval "$@" --max-chars "$n" --k 3 --json --engine "$LAYA serve --stdio --no-learn" >"$OUT/$set_-model.json"
    "$LAYA" eval "$@" --max-chars "$n" --k 3 --json --learn --passes 2 >"$OUT/$set_-learn.json"
    "$LAYA" eval "$@" --max-chars "$n" --k 3 --json --history "$OUT/junk.txt" >"$OUT/$set_-junk.json"
    rm -f "$OUT/$set_-feedback.json"
    if [ "$FEEDBACK" = 1 ]; then
        "$LAYA" eval "$@" --max-chars "$n" --k 3 --json --learn --passes 2 --feedback >"$OUT/$set_-feedback.json"
    fi
}
sets=
for s in $SETS; do
    case $s in
    slices) run en "$CHARS" "$OUT"/en-*.txt
            run zh $((CHARS / 2)) "$OUT"/zh-*.txt
            sets="$sets en zh" ;;
    long)   run long-en "$LONG" "$OUT"/long-en-*.txt
            run long-zh "$LONG_ZH" "$OUT"/long-zh-*.txt
            sets="$sets long-en long-zh" ;;
    *) echo "learn_eval: unknown set $s (slices, long)" >&2; exit 2 ;;
    esac
done
python3 - "$OUT" $sets <<'PY'
import json, sys, os
out = sys.argv[1]
fb = all(os.path.exists(os.path.join(out, "%s-feedback.json" % s)) for s in sys.argv[2:])
head = ("text", "chars", "model", "typed", "learn p1", "learn p2", "junk", "gain")
print(("%-30s %6s %8s %8s %8s %8s %8s %6s" % head) + (" %8s %8s %8s %7s" % ("fb typed", "fb p1", "fb p2", "fb gain") if fb else ""))
for s in sys.argv[2:]:
    m, l, j = (json.load(open(os.path.join(out, "%s-%s.json" % (s, k)))) for k in ("model", "learn", "junk"))
    f = json.load(open(os.path.join(out, "%s-feedback.json" % s)))["texts"] if fb else [None] * len(m["texts"])
    for tm, tl, tj, tf in zip(m["texts"], l["texts"], j["texts"], f):
        k3 = lambda t, learn, p: next(r["ksr"] for r in t["runs"] if r["k"] == 3 and r["learn"] == learn and r["pass"] == p)
        name = os.path.basename(tm["text"]).replace(".txt", "") if tm["text"] != "(all)" else s + " (all)"
        row = "%-30s %6d %8.4f %8.4f %8.4f %8.4f %8.4f %+6.1f" % (name, tm["chars"], k3(tm, False, 1), k3(tl, False, 1),
              k3(tl, True, 1), k3(tl, True, 2), k3(tj, False, 1), 100 * (k3(tl, True, 1) - k3(tm, False, 1)))
        if fb:
            row += " %8.4f %8.4f %8.4f %+7.2f" % (k3(tf, False, 1), k3(tf, True, 1), k3(tf, True, 2),
                                                100 * (k3(tf, True, 1) - k3(tl, True, 1)))
        print(row)
PY
