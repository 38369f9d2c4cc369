#!/usr/bin/env python3
"""Everyday evaluation texts from sources no model was trained on (issue 15).

The genre splits (valid-<genre>.txt) hold out blocks of the very games that
pipeline 2 trains on, so a model trained on the games gains there in-domain.
These texts are cut from text that no model ever trained on, for both the
shipped model and any retraining:

  en-everyday.txt  the lines of en/valid.txt that come from nlp-corpus:
                   everyday sentences of many kinds (chat and SMS-like
                   lines, reviews, news, lyrics), shuffled by that package
  en-quotes.txt    the lines of en/valid.txt from the fortune files: short
                   quotes and dialogue
  en-requests.txt  the hand-written lines of tests/fixtures/intent/en.tsv
  zh-requests.txt  the same, zh.tsv: short everyday requests and chat (the
                   only everyday Chinese the project holds outside the games:
                   fortunes-zh is classical prose, the rest manuals)

valid.txt's blocks are never trained on (build.py splits by hashed blocks
and held_out_mix keeps them byte-identical across pipelines); a line of it
belongs to a source when the source's cleaned text (the pipeline's cache,
cache/corpus/text/<source>.*.txt) holds that exact line. Lines shorter than
MIN_LINE bytes are left out, since a short line ("Yes.") can come from any
source. Deterministic; each output at most --max-bytes.

  python3 scripts/corpus/everyday.py [--corpus data/corpus] [--cache cache/corpus]
                                     [--out data/eval] [--max-bytes 64000]
"""
import argparse
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIN_LINE = 24

VIEWS = [
    # output, language, sources whose valid.txt lines it takes
    ('en-everyday.txt', 'en', ('nlp-corpus',)),
    ('en-quotes.txt', 'en', ('fortunes', 'fortunes-min')),
]
REQUESTS = [('en-requests.txt', 'tests/fixtures/intent/en.tsv'),
            ('zh-requests.txt', 'tests/fixtures/intent/zh.tsv')]


def source_lines(cache, name):
    """Every line of the source's cached cleaned text (all cached versions)."""
    paths = glob.glob(os.path.join(cache, 'text', name + '.*.txt'))
    if not paths:
        sys.exit('everyday: no cached text of %s under %s (run make corpus first)' % (name, cache))
    lines = set()
    for p in paths:
        with open(p, encoding='utf-8') as f:
            lines.update(ln.rstrip('\n') for ln in f)
    return lines


def cap(lines, max_bytes):
    out, n = [], 0
    for ln in lines:
        b = len(ln.encode('utf-8')) + 1
        if n + b > max_bytes:
            break
        out.append(ln)
        n += b
    return out


def write(path, lines):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(''.join(ln + '\n' for ln in lines))
    print('everyday: %s %d lines %d bytes' % (path, len(lines), os.path.getsize(path)), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--corpus', default=os.path.join(ROOT, 'data', 'corpus'))
    ap.add_argument('--cache', default=os.path.join(ROOT, 'cache', 'corpus'))
    ap.add_argument('--out', default=os.path.join(ROOT, 'data', 'eval'))
    ap.add_argument('--max-bytes', type=int, default=64000)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for out, lang, names in VIEWS:
        valid = os.path.join(a.corpus, lang, 'valid.txt')
        if not os.path.exists(valid):
            sys.exit('everyday: %s missing (make corpus)' % valid)
        own = set()
        for n in names:
            own |= source_lines(a.cache, n)
        with open(valid, encoding='utf-8') as f:
            lines = [ln.rstrip('\n') for ln in f]
        keep = [ln for ln in lines if len(ln.encode('utf-8')) >= MIN_LINE and ln in own]
        write(os.path.join(a.out, out), cap(keep, a.max_bytes))
    for out, tsv in REQUESTS:
        with open(os.path.join(ROOT, tsv), encoding='utf-8') as f:
            lines = [ln.rstrip('\n').split('\t', 1)[1] for ln in f
                     if not ln.startswith('#') and '\t' in ln]
        write(os.path.join(a.out, out), cap(lines, a.max_bytes))


if __name__ == '__main__':
    main()
