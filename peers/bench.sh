#!/bin/sh
# peers/bench.sh - `make bench-peers`: Laya and Presage (English), then Laya
# and libime (Chinese), measured by the same harness (`laya eval`), the same
# simulated typist and the same text, in one run, then printed side by side.
# Then learning, measured the same way for every engine (shared/EVAL.md,
# "Learning"): `laya eval --learn --passes 2`, each engine in a fresh process
# with an empty store, KSR@3 on the first pass as typed (no commits: what the
# engine learns from the typed text alone), on the first pass with a commit
# after every line, on the second pass over the same text in the same process
# with commits, and on the second pass without them. Each learning engine
# has a control row that must not learn (Laya --no-learn, Presage --static,
# libime --static), and the adapters' own counts follow (Presage: requests
# re-encoded or lost to an abort; libime: commits learned).
#   TEXT     the English text (default data/corpus/en/valid.txt; if absent, the
#            Debian Manifesto from Debian's doc-debian package, reflowed to
#            one line per paragraph: not a training source, not reserved)
#   CHARS    characters typed (--max-chars; default 4000)
#   ZH_TEXT  the Chinese text (default data/corpus/zh/valid.txt; the Chinese
#            part is skipped, with a note, when it is absent)
#   ZH_CHARS Chinese characters typed (default 2000)
#   LEARN    1 (default): also the learning table; 0: without it
#   LAYA     the laya binary (default build/laya)
#   OUT      where the JSON and the engines' stderr go (default build/peers)
# Laya is skipped, with a note, when it has no model or no `serve`.
set -u
cd "$(dirname "$0")/.."
LAYA=${LAYA:-build/laya}
CHARS=${CHARS:-4000}
TEXT=${TEXT:-data/corpus/en/valid.txt}
OUT=${OUT:-build/peers}
LEARN=${LEARN:-1}
mkdir -p "$OUT"
if [ ! -s "$TEXT" ]; then
    echo "bench-peers: $TEXT not found (make corpus builds it); using the Debian Manifesto" >&2
    if [ ! -s "$OUT/manifesto.txt" ]; then
        (cd "$OUT" && rm -rf doc-debian && mkdir doc-debian && cd doc-debian &&
            apt-get download doc-debian >/dev/null && dpkg-deb -x doc-debian_*.deb x) ||
            { echo "bench-peers: cannot fetch doc-debian" >&2; exit 1; }
        # paragraphs are separated by blank lines: join their wrapped lines,
        # drop the ***/=== rules, one space between words, skip the preface
        zcat "$OUT"/doc-debian/x/usr/share/doc/debian/debian-manifesto.gz |
            awk '{ gsub(/[*=][*=][*=]+/, ""); gsub(/[ \t]+/, " "); sub(/^ /, ""); sub(/ $/, "") }
                 $0 != "" { p = p (p ? " " : "") $0; next }
                 p { print p; p = "" } END { if (p) print p }' |
            sed -n '/^The Debian Linux Manifesto/,$p' >"$OUT/manifesto.txt"
    fi
    TEXT=$OUT/manifesto.txt
fi

run() {   # run NAME TEXT CHARS EVAL-ARGS...: writes $OUT/NAME.json, or notes why not
    name=$1 text=$2 chars=$3; shift 3
    echo "bench-peers: $name: $LAYA eval $text --max-chars $chars --json $*" >&2
    if ! "$LAYA" eval "$text" --max-chars "$chars" --json "$@" >"$OUT/$name.json" 2>"$OUT/$name.err"; then
        tail -n 3 "$OUT/$name.err" >&2
        rm -f "$OUT/$name.json"
    fi
}
run laya "$TEXT" "$CHARS"
run presage-learning "$TEXT" "$CHARS" --engine "peers/presage/laya-presage"
run presage-static "$TEXT" "$CHARS" --engine "peers/presage/laya-presage --static"

python3 - "$OUT" "$TEXT" "$CHARS" <<'EOF'
import json, os, sys
out, text, chars = sys.argv[1:4]
print("text: %s (first %s characters)" % (text, chars))
head = "%-18s %7s %7s %7s %7s %7s %9s %9s %9s %9s %8s" % (
    "engine", "KSR@3", "KSR@1", "prec@3", "next@1", "next@3",
    "us p50", "us p99", "rtt p50", "rtt p99", "cold ms")
print(head)
f = lambda x, s="%.3f": "n/a" if x is None else s % x
for name in ("laya", "presage-learning", "presage-static"):
    p = os.path.join(out, name + ".json")
    if not os.path.exists(p):
        print("%-18s (not measured: see %s)" % (name, os.path.join(out, name + ".err")))
        continue
    j = json.load(open(p))
    t = j["texts"][0]
    ps = {q["k"]: q for q in t["passes"]}
    nw = t["next_word"] or {}
    lat = j["latency"]
    eu, rt, cs = lat["engine_us"] or {}, lat["rtt_us"] or {}, lat["cold_start_ms"] or {}
    print("%-18s %7s %7s %7s %7s %7s %9s %9s %9s %9s %8s" % (
        name, f(ps.get(3, {}).get("ksr")), f(ps.get(1, {}).get("ksr")),
        f(ps.get(3, {}).get("precision")), f(nw.get("top1")), f(nw.get("topk")),
        f(eu.get("p50"), "%.0f"), f(eu.get("p99"), "%.0f"), f(rt.get("p50"), "%.0f"),
        f(rt.get("p99"), "%.0f"), f(cs.get("p50"), "%.0f")))
EOF

# Chinese: characters saved (CSR, in the "ksr" fields) instead of keystrokes;
# no next-word columns (a text without spaces has no word starts).
ZH_TEXT=${ZH_TEXT:-data/corpus/zh/valid.txt}
ZH_CHARS=${ZH_CHARS:-2000}
ZH=1
if [ ! -s "$ZH_TEXT" ]; then
    echo "bench-peers: $ZH_TEXT not found (make corpus builds it); no Chinese table" >&2
    ZH=0
fi
if [ "$ZH" = 1 ]; then
    run zh-laya "$ZH_TEXT" "$ZH_CHARS" --lang zh
    run zh-libime "$ZH_TEXT" "$ZH_CHARS" --lang zh --engine "peers/libime/laya-libime"

python3 - "$OUT" "$ZH_TEXT" "$ZH_CHARS" <<'EOF'
import json, os, sys
out, text, chars = sys.argv[1:4]
print()
print("text: %s (first %s characters)" % (text, chars))
print("%-18s %7s %7s %7s %9s %9s %8s" % (
    "engine", "CSR@3", "CSR@1", "prec@3", "us p50", "us p99", "cold ms"))
f = lambda x, s="%.3f": "n/a" if x is None else s % x
for name in ("laya", "libime"):
    p = os.path.join(out, "zh-" + name + ".json")
    if not os.path.exists(p):
        print("%-18s (not measured: see %s)" % (name, os.path.join(out, "zh-" + name + ".err")))
        continue
    j = json.load(open(p))
    t = j["texts"][0]
    ps = {q["k"]: q for q in t["passes"]}
    lat = j["latency"]
    eu, cs = lat["engine_us"] or {}, lat["cold_start_ms"] or {}
    print("%-18s %7s %7s %7s %9s %9s %8s" % (
        name, f(ps.get(3, {}).get("ksr")), f(ps.get(1, {}).get("ksr")),
        f(ps.get(3, {}).get("precision")), f(eu.get("p50"), "%.0f"), f(eu.get("p99"), "%.0f"),
        f(cs.get("p50"), "%.0f")))
EOF
fi

[ "$LEARN" = 0 ] && exit 0
# Learning: the same engines, --learn --passes 2 (see the top of the file).
run learn-laya "$TEXT" "$CHARS" --learn --passes 2
run learn-laya-static "$TEXT" "$CHARS" --learn --passes 2 --engine "$LAYA serve --stdio --no-learn"
run learn-presage "$TEXT" "$CHARS" --learn --passes 2 --engine "peers/presage/laya-presage"
run learn-presage-static "$TEXT" "$CHARS" --learn --passes 2 --engine "peers/presage/laya-presage --static"
if [ "$ZH" = 1 ]; then
    run learn-zh-laya "$ZH_TEXT" "$ZH_CHARS" --lang zh --learn --passes 2
    run learn-zh-laya-static "$ZH_TEXT" "$ZH_CHARS" --lang zh --learn --passes 2 --engine "$LAYA serve --stdio --no-learn"
    run learn-zh-libime "$ZH_TEXT" "$ZH_CHARS" --lang zh --learn --passes 2 --engine "peers/libime/laya-libime"
    run learn-zh-libime-static "$ZH_TEXT" "$ZH_CHARS" --lang zh --learn --passes 2 --engine "peers/libime/laya-libime --static"
fi

python3 - "$OUT" "$TEXT" "$CHARS" "$ZH_TEXT" "$ZH_CHARS" "$ZH" <<'EOF'
import json, os, re, sys
out, text, chars, zh_text, zh_chars, zh = sys.argv[1:7]
f = lambda x: "n/a" if x is None else "%.3f" % x
def k3(runs, learn, p):
    return next((r["ksr"] for r in runs if r["k"] == 3 and r["learn"] == learn and r["pass"] == p), None)
def table(title, rows):
    print()
    print(title)
    print("%-26s %10s %10s %10s %10s" % ("engine", "p1 typed", "p1 commit", "p2 commit", "p2 typed"))
    for label, name in rows:
        p = os.path.join(out, name + ".json")
        if not os.path.exists(p):
            print("%-26s (not measured: see %s)" % (label, os.path.join(out, name + ".err")))
            continue
        runs = json.load(open(p))["texts"][0]["runs"]
        print("%-26s %10s %10s %10s %10s" % (label, f(k3(runs, False, 1)), f(k3(runs, True, 1)),
                                              f(k3(runs, True, 2)), f(k3(runs, False, 2))))
table("learning, %s (first %s characters), KSR@3, --learn --passes 2:" % (text, chars),
      [("laya", "learn-laya"), ("laya --no-learn (control)", "learn-laya-static"),
       ("presage", "learn-presage"), ("presage --static (control)", "learn-presage-static")])
if zh == "1":
    table("learning, %s (first %s characters), CSR@3, --learn --passes 2:" % (zh_text, zh_chars),
          [("laya", "learn-zh-laya"), ("laya --no-learn (control)", "learn-zh-laya-static"),
           ("libime", "learn-zh-libime"), ("libime --static (control)", "learn-zh-libime-static")])
# The adapters' summary lines, one per engine process, summed per eval.
pat = re.compile(r"^laya-presage: (\d+) suggest requests, (\d+) re-encoded, (\d+) lost to a Presage abort")
lib = re.compile(r"^laya-libime: learned (\d+) commits, (\d+) sentences")
print()
for name in ("presage-learning", "presage-static", "learn-presage", "learn-presage-static"):
    p = os.path.join(out, name + ".err")
    if os.path.exists(p):
        n = [0, 0, 0]
        for line in open(p, errors="replace"):
            m = pat.match(line)
            if m: n = [a + int(b) for a, b in zip(n, m.groups())]
        print("%s: %d suggest requests, %d re-encoded for Presage, %d lost to a Presage abort" % (name, *n))
p = os.path.join(out, "learn-zh-libime.err")
if zh == "1" and os.path.exists(p):
    n = [0, 0]
    for line in open(p, errors="replace"):
        m = lib.match(line)
        if m: n = [a + int(b) for a, b in zip(n, m.groups())]
    print("learn-zh-libime: %d commits learned, %d sentences added to the history" % tuple(n))
EOF
