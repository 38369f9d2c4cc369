#!/usr/bin/env python3
"""The next-word prior of the shipped model (src/prior/prior.h), one table
from its halves: the Chinese prior exported from libime
(scripts/corpus/ngram/libime_prior.cc, a "laya-prior" safetensors file) and
the English followers exported from pocketsphinx-en-us
(scripts/corpus/ngram/sphinx_prior.c, key TAB follower TAB p lines).

The Chinese table's keys that are plain ASCII (Latin words libime also
knows) are left out as keys: prior_query looks up Chinese keys only after
a Han character, so there they were never used, and the English half owns
the Latin keys. Words are shared (a follower is an id into the one sorted
word list). Each key keeps its followers most probable first, at most
MAX_FOLLOWERS. Writes the tensors and metadata libime_prior.cc documents,
with source and license naming both halves. Deterministic.

usage: python3 scripts/corpus/ngram/prior_table.py ZH.safetensors EN.tsv OUT.safetensors
"""
import array
import json
import os
import struct
import sys

MAX_FOLLOWERS = 8
MAX_WORD = 64  # PRIOR_MAX_WORD


def read_st(path):
    with open(path, "rb") as f:
        b = f.read()
    (n,) = struct.unpack_from("<Q", b, 0)
    h = json.loads(b[8:8 + n])
    base = 8 + n
    meta = h.pop("__metadata__", {})
    if meta.get("format") != "laya-prior":
        sys.exit(f"prior_table.py: {path}: not a laya-prior file")
    t = {}
    for name, d in h.items():
        a, e = d["data_offsets"]
        raw = b[base + a:base + e]
        arr = array.array({"U32": "I", "F32": "f", "U8": "B"}[d["dtype"]])
        arr.frombytes(raw)
        t[name] = arr
    return meta, t


def zh_table(path):
    meta, t = read_st(path)
    words = bytes(t["words"])
    wo = t["word_off"]
    ws = [words[wo[i]:wo[i + 1]].decode("utf-8") for i in range(len(wo) - 1)]
    fo, fol, fp = t["fol_off"], t["fol"], t["fol_p"]
    table = {}
    for i, w in enumerate(ws):
        if fo[i] == fo[i + 1] or w.isascii():
            continue
        table[w] = [(ws[fol[j]], fp[j]) for j in range(fo[i], fo[i + 1])]
    return meta, table


def en_table(path):
    table = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                sys.exit(f"prior_table.py: {path}:{n}: expected key TAB follower TAB p")
            k, w, p = parts[0], parts[1], float(parts[2])
            if not (0 < p <= 1) or not k.isascii() or len(k.encode()) > MAX_WORD or len(w.encode()) > MAX_WORD:
                sys.exit(f"prior_table.py: {path}:{n}: a key or follower too long, or p outside (0, 1]")
            table.setdefault(k, []).append((w, p))
    return table


def write_table(path, table, meta):
    """Writes the laya-prior file path (atomically) of table, {word: [(follower, p)]}:
    every word and follower in one byte-sorted word list, each word's
    followers most probable first, at most MAX_FOLLOWERS. Returns (words,
    followers); raises OSError."""
    words = set(table)
    for fs in table.values():
        words.update(w for w, _ in fs)
    order = sorted(words, key=lambda w: w.encode("utf-8"))
    rank = {w: i for i, w in enumerate(order)}
    blob = bytearray()
    word_off, fol_off, fol, fol_p = array.array("I", [0]), array.array("I", [0]), array.array("I"), array.array("f")
    for w in order:
        blob += w.encode("utf-8")
        word_off.append(len(blob))
        fs = sorted(table.get(w, []), key=lambda x: (-x[1], rank[x[0]]))[:MAX_FOLLOWERS]
        for f, p in fs:
            fol.append(rank[f])
            fol_p.append(p)
        fol_off.append(len(fol))
    # float32 rounding may break the order of two nearly equal p: keep it non-increasing
    for i in range(len(order)):
        for j in range(fol_off[i] + 1, fol_off[i + 1]):
            if fol_p[j] > fol_p[j - 1]:
                fol_p[j] = fol_p[j - 1]
    ts = [("word_off", "U32", word_off), ("fol_off", "U32", fol_off), ("fol", "U32", fol),
          ("fol_p", "F32", fol_p), ("words", "U8", blob)]
    h, at = {"__metadata__": meta}, 0
    for name, dt, a in ts:
        size = len(a) * (1 if dt == "U8" else 4)
        h[name] = {"dtype": dt, "shape": [len(a)], "data_offsets": [at, at + size]}
        at += size
    hj = json.dumps(h, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    hj += b" " * ((-(8 + len(hj))) % 64)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj)
        for _, dt, a in ts:
            f.write(bytes(a) if dt == "U8" else a.tobytes())
    os.replace(tmp, path)
    return len(order), len(fol)


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__.strip())
    zmeta, table = zh_table(argv[1])
    en = en_table(argv[2])
    for k, fs in en.items():
        table[k] = fs
    meta = {"format": "laya-prior", "format_version": "1", "lang": "zh,en",
            "source": zmeta.get("source", "libime") + "; pocketsphinx-en-us en-us.lm.bin",
            "license": zmeta.get("license", "LGPL-2.1-or-later") + "; BSD-2-Clause",
            "max_followers": str(MAX_FOLLOWERS)}
    try:
        nw, nf = write_table(argv[3], table, meta)
    except OSError as e:
        sys.exit(f"prior_table.py: {e}")
    print(f"prior_table.py: {nw} words, {nf} followers ({len(en)} English keys) -> {argv[3]}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
