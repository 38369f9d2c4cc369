#!/usr/bin/env python3
"""The written form of English words, for the English next-word prior
(scripts/corpus/ngram/sphinx_prior.c), whose n-gram model knows only lower
case: for each word seen at least MIN times inside a sentence (not first on
a line or after . ! ? or a quote), the form it takes there most often,
when that is not all lower case ("i'm" -> "I'm", "london" -> "London").
Deterministic: same text, same lines.

usage: python3 scripts/corpus/ngram/truecase.py EN.txt > CASES.tsv
"""
import collections
import re
import sys

MIN = 3
WORD = re.compile(r"[A-Za-z][A-Za-z']*")


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.strip())
    forms = collections.defaultdict(collections.Counter)
    try:
        with open(argv[1], encoding="utf-8") as f:
            for line in f:
                for m in WORD.finditer(line):
                    before = line[:m.start()].rstrip(" \t")
                    if not before or before[-1] in '.!?"\u201c(:' or not before[-1].isalnum() and before[-1] != ",":
                        continue
                    w = m.group(0).rstrip("'")
                    forms[w.lower()][w] += 1
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"truecase.py: {e}")
    out = []
    for low, c in forms.items():
        total = sum(c.values())
        form, n = min(c.items(), key=lambda kv: (-kv[1], kv[0]))
        if total >= MIN and form != low and 2 * n > total:
            out.append(f"{low}\t{form}")
    out.sort()
    sys.stdout.write("".join(l + "\n" for l in out))
    print(f"truecase.py: {len(out)} words of {len(forms)} not in lower case", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
