#!/usr/bin/env python3
"""scripts/guess_hits.py - how often the next key is what laya_session_prefetch
would guess: before each character of the first N characters of TEXT, ask
the engine for K suggestions (as `laya eval`'s typist does, one session
from an empty context), list the distinct first characters of the
suggestions in order, and count where the character typed next stands
among them, by kind of key: a letter that goes on with a word (an ASCII
letter after a letter, an apostrophe or a blank: the keys the prefetch
guesses), a blank, a CJK character, anything else.

    python3 scripts/guess_hits.py TEXT [N] [--engine "CMD"] [--k K]

(N = 3000; CMD = "build/laya serve --stdio"; K = 16). The tenth session's
figures (docs/RESULTS.md, "Computing ahead between keys") came from this
count: with the two best first characters, 56% of English keys are a
letter that goes on with the word and was guessed; in Chinese the best
one to four are the next character 28-56% of the time.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_engine import ProtoEngine  # noqa: E402

RANKS = (1, 2, 4, 8)


def kind(text, i):
    c = text[i]
    if c == ' ':
        return 'blank'
    if '\u3400' <= c <= '\u9fff' or '\uf900' <= c <= '\ufaff':
        return 'CJK'
    if c.isascii() and c.isalpha() and i > 0 and (text[i - 1].isalpha() or text[i - 1] in " '"):
        return 'letter in a word'
    return 'other'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('text')
    ap.add_argument('n', nargs='?', type=int, default=3000)
    ap.add_argument('--engine', default='build/laya serve --stdio')
    ap.add_argument('--k', type=int, default=16)
    a = ap.parse_args()
    if not 1 <= a.k <= 16:
        sys.exit('guess_hits: --k must be 1..16')
    try:
        text = open(a.text, encoding='utf-8').read()[:a.n]
    except (OSError, UnicodeDecodeError) as e:
        sys.exit('guess_hits: cannot read %s: %s' % (a.text, e))
    if len(text) < 2:
        sys.exit('guess_hits: %s has fewer than 2 characters' % a.text)
    keys = collections.Counter()
    hits = collections.Counter()   # (kind, r): the key was among the first r first characters
    with ProtoEngine(a.engine, 'guess_hits') as eng:
        for i in range(len(text)):
            firsts = []
            for s in eng.suggest(text[:i], a.k):
                if s and s[0] not in firsts:
                    firsts.append(s[0])
            k = kind(text, i)
            keys[k] += 1
            if text[i] in firsts:
                rank = firsts.index(text[i]) + 1
                for r in RANKS:
                    hits[(k, r)] += rank <= r
    n = len(text)
    print('%s: %d keys, suggestions asked %d at a time' % (a.text, n, a.k))
    print('%-18s %6s %7s' % ('kind', 'keys', 'share') + ''.join('%9s' % ('best %d' % r) for r in RANKS))
    for k, c in keys.most_common():
        print('%-18s %6d %6.1f%%' % (k, c, 100 * c / n) + ''.join('%8.1f%%' % (100 * hits[(k, r)] / n) for r in RANKS))
    print('%-18s %6d %6.1f%%' % ('all', n, 100.0) +
          ''.join('%8.1f%%' % (100 * sum(hits[(k, r)] for k in keys) / n) for r in RANKS))
    print('(best r: keys of that kind that were among the first r first characters, as a share of all keys)')


if __name__ == '__main__':
    main()
