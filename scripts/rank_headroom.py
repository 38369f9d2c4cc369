#!/usr/bin/env python3
"""How much a longer suggestion list holds that the k shown miss.

The perfect typist of docs/EVALUATION.md types TEXT through an engine that
speaks the protocol (default `laya serve --stdio`, a fresh empty data
directory), asking for --wide suggestions at every keystroke and taking,
as `laya eval` does, the longest of the first --k that the text goes on
with. Where none of the first k fits, it looks further down the wide list
for the first suggestion of two or more characters that fits, and counts
its rank and the characters it would have saved: what a better choice of
the k shown could reach at most (a ceiling: the typist's path would then
change). A continuation missing from the wide list too is the model's
matter, not the list's.

  python3 scripts/rank_headroom.py TEXT [--chars 4000] [--k 3] [--wide 10]
        [--engine "build/laya serve --stdio"]
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_engine import ProtoEngine  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('text')
    ap.add_argument('--chars', type=int, default=4000)
    ap.add_argument('--k', type=int, default=3)
    ap.add_argument('--wide', type=int, default=10)
    ap.add_argument('--engine', default='build/laya serve --stdio')
    a = ap.parse_args()
    if not 1 <= a.k < a.wide <= 16:
        sys.exit('rank_headroom: need 1 <= k < wide <= 16')
    with open(a.text, encoding='utf-8') as f:
        text = f.read()[:a.chars]
    with ProtoEngine(a.engine, 'rank_headroom') as eng:
        keys = missed = 0
        ranks = collections.Counter()
        lost = 0
        i = 0
        while i < len(text):
            wide = eng.suggest(text[:i], a.wide)
            keys += 1
            best = max((s for s in wide[:a.k] if text.startswith(s, i)), key=len, default='')
            if best:
                i += len(best)
                continue
            missed += 1
            for r, s in enumerate(wide[a.k:], start=a.k + 1):
                if len(s) >= 2 and text.startswith(s, i):
                    ranks[r] += 1
                    lost += len(s) - 1
                    break
            i += 1
    n = len(text)
    print('%s: %d characters, %d keystrokes, KSR@%d %.4f' % (a.text, n, keys, a.k, 1 - keys / n))
    print('keystrokes where the %d shown miss: %d; the continuation at rank %d-%d: %d (%s); in none: %d'
          % (a.k, missed, a.k + 1, a.wide, sum(ranks.values()),
             ', '.join('%d at %d' % (ranks[r], r) for r in sorted(ranks)), missed - sum(ranks.values())))
    print('characters those would have saved: %d = %.1f points (a ceiling)' % (lost, 100.0 * lost / n))


if __name__ == '__main__':
    main()
