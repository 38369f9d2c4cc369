#!/usr/bin/python3
"""What the model leaves on the table, in bits per byte of held-out texts:
(1) a token n-gram of the training stream mixed beside it, and (2) a softmax
temperature. Both are measured offline on the model's own per-token
probabilities (build/token_logprobs, the engine's scorer read token by
token), so nothing here changes what Laya proposes: it says where the next
model's training, or a run-time expert, could still gain
(docs/RESULTS.md, "What the model leaves").

(1) The n-gram: interpolated Witten-Bell over the token stream TRAIN
(scripts/prepare_tokens.sh writes data/tokens/train.tokens; any stream of
`laya tokenizer encode` with the model's tokenizer), orders 1..ORDER, an
n-gram of order k >= 2 kept when seen at least MIN[k-2] times,
    P_k(w | h) = (c(h w) + T(h) P_{k-1}(w | h')) / (c(h) + T(h)),
T(h) the number of distinct followers of h, P_1 add-one. Each text's bits
under (1 - lam) p_model + lam p_ngram are printed against the model's alone.
(2) The temperature: softmax(logits / t) over all of a text's tokens, and
over those whose context is Chinese (flag bit 1 of token_logprobs) or ends
in a CJK character (bit 0) only.

  /usr/bin/python3 scripts/model_headroom.py [--model models/default.safetensors]
        [--train data/tokens/train.tokens] [--order 4] [--min 1,1,1]
        [--lam 0.1,0.2,0.3] [--temps 1.1,1.2] [--no-ngram] TEXT...

Needs numpy (Debian python3-numpy; /usr/bin/python3 has it where a
virtual environment may not) and `make build/token_logprobs`. Building a
4-gram of the 21M-token stream takes about a minute and 4 GB.
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("model_headroom.py needs numpy: apt-get install python3-numpy, then run it with /usr/bin/python3")

BITS = 13          # a token id fits 13 bits (V = 8192)
HEADER = 56        # TOK_STREAM_HEADER (src/tok/tok_stream.h)


def read_stream(path):
    raw = np.fromfile(path, dtype=np.uint8)
    if len(raw) < HEADER or raw[:8].tobytes() != b"LAYATKS1":
        sys.exit("%s: not a token stream of `laya tokenizer encode`" % path)
    vocab = int.from_bytes(raw[8:12].tobytes(), "little")
    n = int.from_bytes(raw[16:24].tobytes(), "little")
    if vocab > 1 << BITS or len(raw) != HEADER + 2 * n:
        sys.exit("%s: not a token stream of at most %d ids (vocab %d, %d tokens, %d bytes)"
                 % (path, 1 << BITS, vocab, n, len(raw)))
    return raw[HEADER:].view(np.uint16).astype(np.int64), vocab


def grams(seq, k):
    key = np.zeros(len(seq) - k + 1, dtype=np.int64)
    for j in range(k):
        key = (key << BITS) | seq[j:len(seq) - k + 1 + j]
    return key


class NGram:
    def __init__(self, train, vocab, order, mins):
        self.vocab, self.order, self.n = vocab, order, len(train)
        self.tabs = {}
        self.entries = 0
        for k in range(1, order + 1):
            u, c = np.unique(grams(train, k), return_counts=True)
            if k > 1:
                keep = c >= mins[k - 2]
                u, c = u[keep], c[keep]
                hu, hstart, ht = np.unique(u >> BITS, return_index=True, return_counts=True)
                self.tabs[k] = (u, c, hu, np.add.reduceat(c, hstart), ht)
                self.entries += len(u)
            else:
                self.tabs[k] = (u, c)
            print("  order %d: %d n-grams kept" % (k, len(u)), file=sys.stderr, flush=True)

    def probs(self, seq):
        """P(seq[i] | seq[:i]) for i >= 1 (seq[0] is BOS)."""
        n = len(seq)
        u, c = self.tabs[1]
        i = np.minimum(np.searchsorted(u, seq[1:]), len(u) - 1)
        p = (np.where(u[i] == seq[1:], c[i], 0) + 1.0) / (self.n + self.vocab)
        pos = np.arange(1, n)
        for k in range(2, self.order + 1):
            u, c, hu, hc, ht = self.tabs[k]
            full = pos >= k - 1
            h = np.zeros(n - 1, dtype=np.int64)
            for j in range(k - 1, 0, -1):
                h = (h << BITS) | seq[np.clip(pos - j, 0, None)]
            g = (h << BITS) | seq[1:]
            i1 = np.minimum(np.searchsorted(hu, h), len(hu) - 1)
            hit = full & (hu[i1] == h)
            ch, t = np.where(hit, hc[i1], 0), np.where(hit, ht[i1], 0)
            i2 = np.minimum(np.searchsorted(u, g), len(u) - 1)
            cg = np.where(full & (u[i2] == g), c[i2], 0)
            p = np.where(hit, (cg + t * p) / np.maximum(ch + t, 1), p)
        return p


def floats(s):
    return [float(x) for x in s.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("texts", nargs="+")
    ap.add_argument("--model", default="models/default.safetensors")
    ap.add_argument("--train", default="data/tokens/train.tokens")
    ap.add_argument("--order", type=int, default=4)
    ap.add_argument("--min", default="", help="least count kept per order 2..ORDER (default 1 each)")
    ap.add_argument("--lam", default="0.1,0.2,0.3")
    ap.add_argument("--temps", default="1.1,1.2")
    ap.add_argument("--no-ngram", action="store_true")
    ap.add_argument("--tool", default="build/token_logprobs")
    a = ap.parse_args()
    if a.order < 1 or a.order > 4:
        sys.exit("--order must be 1..4 (13-bit ids, 64-bit keys)")
    mins = [int(x) for x in a.min.split(",")] if a.min else [1] * (a.order - 1)
    if len(mins) != a.order - 1 or min(mins, default=1) < 1:
        sys.exit("--min needs %d counts of at least 1" % (a.order - 1))
    lams, temps = floats(a.lam), floats(a.temps)
    if not os.access(a.tool, os.X_OK):
        sys.exit("%s is missing: make build/token_logprobs" % a.tool)
    rec = np.dtype([("t", "<i4"), ("flags", "<i4"), ("lp", "<f8", (1 + len(temps),))])
    dumps = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(a.texts):
            out = os.path.join(tmp, "%d.lp" % i)
            r = subprocess.run([a.tool, a.model, path, out, "1"] + [str(t) for t in temps],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(r.stderr.strip())
            dumps.append((path, os.path.getsize(path), np.fromfile(out, dtype=rec)))
    ng = None
    if not a.no_ngram:
        train, vocab = read_stream(a.train)
        print("n-gram of %s (%d tokens), order %d, least counts %s:" % (a.train, len(train), a.order, mins),
              file=sys.stderr, flush=True)
        ng = NGram(train, vocab, a.order, mins)
        print("n-gram: %d n-grams of order 2..%d (%.1f MB at 4 bytes each)"
              % (ng.entries, a.order, ng.entries * 4 / 1e6))
    head = "%-36s %7s %7s" % ("text", "tokens", "bpb")
    if ng:
        head += " %8s" % "ngram" + "".join(" %8s" % ("mix %.2g" % lam) for lam in lams)
    head += "".join(" %9s" % ("T %.3g" % t) for t in temps)
    head += "".join(" %9s" % ("zh T %.3g" % t) for t in temps)
    head += "".join(" %9s" % ("cjk T %.3g" % t) for t in temps)
    print(head)
    for path, nbytes, d in dumps:
        lp = d["lp"]
        base = -lp[:, 0].sum()
        row = "%-36s %7d %7.4f" % (path[-36:], len(d), base / nbytes)
        rel = lambda bits: "%+.2f%%" % (100 * (bits / base - 1))
        if ng:
            seq = np.concatenate([[256], d["t"].astype(np.int64)])   # TOK_BOS
            pg, pm = ng.probs(seq), 2.0 ** lp[:, 0]
            row += " %8s" % rel(-np.log2(pg).sum())
            row += "".join(" %8s" % rel(-np.log2((1 - lam) * pm + lam * pg).sum()) for lam in lams)
        for bit in (None, 2, 1):
            sel = np.ones(len(d), bool) if bit is None else (d["flags"] & bit) != 0
            row += "".join(" %9s" % rel(-np.where(sel, lp[:, 1 + k], lp[:, 0]).sum()) for k in range(len(temps)))
        print(row, flush=True)


if __name__ == "__main__":
    main()
