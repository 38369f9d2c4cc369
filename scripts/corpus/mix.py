#!/usr/bin/env python3
"""Interleave the English and Chinese training text into one file, line by
line in proportion to their line counts, so every window of the packed token
stream (and so every training batch) mixes both languages. Deterministic:
same inputs, same bytes.

usage: python3 scripts/corpus/mix.py OUT.txt EN.txt ZH.txt
"""
import sys


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__.strip())
    out_path, en_path, zh_path = argv[1:]
    try:
        with open(en_path, encoding="utf-8") as f:
            en = [l for l in f.read().split("\n") if l]
        with open(zh_path, encoding="utf-8") as f:
            zh = [l for l in f.read().split("\n") if l]
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"mix.py: {e}")
    if not en or not zh:
        sys.exit("mix.py: an input is empty; run `make corpus` first")
    out, j, acc = [], 0, 0.0
    ratio = len(zh) / len(en)
    for line in en:
        out.append(line)
        acc += ratio
        while acc >= 1 and j < len(zh):
            out.append(zh[j])
            j += 1
            acc -= 1
    out.extend(zh[j:])
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print(f"mix.py: {len(en)} English + {len(zh)} Chinese lines -> {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
