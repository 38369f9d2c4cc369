#!/usr/bin/env python3
"""scripts/same_eval.py OLD NEW - compares two runs of scripts/same_eval.sh.

For every split and mode: KSR@3 and KSR@1 (CSR for Chinese), keystrokes,
suggestions shown and accepted, precision and next-word accuracy, to the
last digit the JSON holds; and from `laya bench`: keys, model steps and
logits vectors per key, suggestions shown. Latency is left out (it is
noise here). Prints one line per split and mode, "same" or what differs,
and exits 1 when anything differs."""
import glob
import json
import os
import re
import sys


def eval_figures(path):
    d = json.load(open(path, encoding="utf-8"))
    out = {}
    for t in d["texts"]:
        for r in t["runs"]:
            key = "k%d%s p%d" % (r["k"], " learn" if r.get("learn") else "", r.get("pass", 1))
            for f in ("ksr", "keystrokes", "shown", "accepted", "accepted_chars", "precision"):
                out["%s %s" % (key, f)] = r.get(f)
        for f, v in (t.get("next_word") or {}).items():
            out["next_word " + f] = v
    return out


def bench_figures(path):
    out = {}
    for ln in open(path, encoding="utf-8"):
        m = re.match(r"^(\S+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+\d+\s+([\d.]+)\s+(\d+)%", ln)
        if m:
            out = {"keys": m.group(2), "steps/key": m.group(3), "logits/key": m.group(4), "shown": m.group(5)}
    return out


def main():
    old, new = sys.argv[1], sys.argv[2]
    differ = 0
    for p in sorted(glob.glob(os.path.join(old, "*.json")) + glob.glob(os.path.join(old, "*.bench.out"))):
        name = os.path.basename(p)
        q = os.path.join(new, name)
        if not os.path.exists(q):
            print("%-40s missing in %s" % (name, new))
            differ += 1
            continue
        get = bench_figures if name.endswith(".bench.out") else eval_figures
        a, b = get(p), get(q)
        diff = ["%s %s -> %s" % (k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        differ += bool(diff)
        head = ", ".join("%s %s" % (k, a[k]) for k in sorted(a) if k.endswith(" ksr") or k.endswith("/key"))
        print("%-40s %s  (%s)" % (name, "same" if not diff else "DIFFERS: " + "; ".join(diff), head))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
