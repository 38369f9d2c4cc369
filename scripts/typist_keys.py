#!/usr/bin/env python3
"""scripts/typist_keys.py - what the perfect typist of `laya eval` still types
itself, by kind: for the first N characters of TEXT, the typist's rule
(docs/EVALUATION.md: before each keystroke ask for k suggestions, take the
longest one the text goes on with, else type one character), each typed
character counted as a blank, a line break, punctuation, a capital, a digit
or a lowercase letter, at a word's start or inside it, and whether it came
right after a suggestion was taken. Also: how many suggestions were taken,
how many ended in a blank, and how many were followed by a blank the typist
typed. Its KSR is laya eval's (one engine session from an empty context,
no commits), which checks it.

    python3 scripts/typist_keys.py TEXT [N] [--engine "CMD"] [--k K]

(N = 4000; CMD = "build/laya serve --stdio"; K = 3). The ninth session's
finding (docs/RESULTS.md, "A word and the blank after it") came from this
count: after 403 of the 711 suggestions it took on English dialogue, before
the change, the typist typed the blank itself (92 of 656 after it).
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_engine import ProtoEngine  # noqa: E402


def kind(ch):
    if ch == ' ':
        return 'blank'
    if ch == '\n':
        return 'line break'
    if ch.isdigit():
        return 'digit'
    if not ch.isalpha():
        return 'punctuation'
    return 'capital' if ch.isupper() else 'lowercase'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('text')
    ap.add_argument('n', nargs='?', type=int, default=4000)
    ap.add_argument('--engine', default='build/laya serve --stdio')
    ap.add_argument('--k', type=int, default=3)
    a = ap.parse_args()
    try:
        text = open(a.text, encoding='utf-8').read()[:a.n]
    except (OSError, UnicodeDecodeError) as e:
        sys.exit('typist_keys: cannot read %s: %s' % (a.text, e))
    if not text:
        sys.exit('typist_keys: %s is empty' % a.text)
    typed, taken = collections.Counter(), collections.Counter()
    keys, i, after = 0, 0, False
    with ProtoEngine(a.engine, 'typist_keys') as eng:
        while i < len(text):
            rest = text[i:]
            best = max((s for s in eng.suggest(text[:i], a.k) if s and rest.startswith(s)), key=len, default=None)
            keys += 1
            if best:
                taken['taken'] += 1
                taken['ending in a blank'] += best.endswith(' ')
                i += len(best)
                after = True
                continue
            ch = text[i]
            if after and ch == ' ':
                taken['followed by a typed blank'] += 1
            where = 'word start' if i == 0 or not text[i - 1].isalnum() else 'inside a word'
            typed[(kind(ch), where, 'right after a suggestion' if after else '')] += 1
            i += 1
            after = False
    print('%s: %d characters, %d keystrokes, KSR@%d %.4f' % (a.text, len(text), keys, a.k, 1 - keys / len(text)))
    print('suggestions taken %d, ending in a blank %d, followed by a typed blank %d' %
          (taken['taken'], taken['ending in a blank'], taken['followed by a typed blank']))
    for (k, where, aft), v in typed.most_common():
        print('%6d  %s, %s%s' % (v, k, where, ', ' + aft if aft else ''))


if __name__ == '__main__':
    main()
