#!/usr/bin/env python3
"""How much a first pass could still gain from learning the text being typed.

The perfect typist of docs/EVALUATION.md types TEXT through an engine that
speaks the protocol (default: `laya serve --stdio`, learning from the typed
text as it ships), one engine process, a fresh empty data directory. Every
character it has to type (no suggestion covered it) is classified by the word
it lies in:

  repeated   the word (case-folded) occurred earlier in the text, so a memory
             of the text could have proposed it;
  first      the word's first occurrence: no memory of this text can help;
  other      blanks, punctuation, digits.

A repeated word's first character must be typed whatever the memory holds
(the word could be any of those that start so); the characters typed after
it are what a perfect memory of the text could still save. That count, as
points of KSR, is the headroom; the same restricted to words outside the
COMMON most frequent words of the training text (--common-from) is the part
that names and terms leave, where a better model, not learning, is what the
common words need.

  python3 scripts/learn_headroom.py TEXT [--chars 6000]
        [--engine "build/laya serve --stdio"]
        [--common-from data/corpus/en/train.txt] [--common 300] [--show N]

English-like text only (words are runs of ASCII letters with ' and -).
"""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_engine import ProtoEngine  # noqa: E402

WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def common_words(path, n, sample=20_000_000):
    """The n most frequent lower-cased words of the first sample bytes of path."""
    with open(path, encoding='utf-8', errors='replace') as f:
        counts = collections.Counter(w.lower() for w in WORD.findall(f.read(sample)))
    return {w for w, _ in counts.most_common(n)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('text')
    ap.add_argument('--chars', type=int, default=6000)
    ap.add_argument('--engine', default='build/laya serve --stdio')
    ap.add_argument('--common-from', default='data/corpus/en/train.txt')
    ap.add_argument('--common', type=int, default=300)
    ap.add_argument('--show', type=int, default=0, help='print the first N misses in repeated rare words')
    a = ap.parse_args()
    with open(a.text, encoding='utf-8') as f:
        text = f.read()[:a.chars]
    common = common_words(a.common_from, a.common) if os.path.exists(a.common_from) else set()
    if not common:
        print('learn_headroom: %s not found: every word counts as rare' % a.common_from, file=sys.stderr)

    words = [(m.start(), m.end(), m.group().lower()) for m in WORD.finditer(text)]
    word_of = [-1] * len(text)
    repeated = [False] * len(words)
    seen = set()
    for i, (b, e, w) in enumerate(words):
        for j in range(b, e):
            word_of[j] = i
        repeated[i] = w in seen
        seen.add(w)

    with ProtoEngine(a.engine, 'learn_headroom') as eng:
        keys = 0
        typed = collections.Counter()
        past_first = collections.Counter()   # 'all' / 'rare': chars typed after a repeated word's first
        shown = 0
        i = 0
        while i < len(text):
            sugg = eng.suggest(text[:i], 3)
            keys += 1
            best = max((s for s in sugg if text.startswith(s, i)), key=len, default='')
            if best:
                i += len(best)
                continue
            w = word_of[i]
            if w < 0:
                typed['other'] += 1
            elif not repeated[w]:
                typed['first'] += 1
            else:
                typed['repeated'] += 1
                if i != words[w][0]:
                    past_first['all'] += 1
                    if words[w][2] not in common:
                        past_first['rare'] += 1
                        if shown < a.show:
                            shown += 1
                            print('  %-32r %-14s shown %s' % (text[max(0, i - 30):i], words[w][2], sugg))
            i += 1

    n = len(text)
    pts = lambda c: 100.0 * c / n
    print('%s: %d characters, %d keystrokes, KSR@3 %.4f' % (a.text, n, keys, 1 - keys / n))
    print('typed: %d in repeated words, %d in first occurrences, %d elsewhere'
          % (typed['repeated'], typed['first'], typed['other']))
    print('headroom (typed after a repeated word\'s first character): %d chars = %.1f points; '
          'in words outside the %d most common: %d = %.1f points'
          % (past_first['all'], pts(past_first['all']), a.common, past_first['rare'], pts(past_first['rare'])))


if __name__ == '__main__':
    main()
