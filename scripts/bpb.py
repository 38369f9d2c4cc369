#!/usr/bin/env python3
"""scripts/bpb.py MODEL TEXT... - bits per byte of each whole text under a
model, through the engine's own scorer (`laya serve --stdio`, the
{"op":"score"} request of docs/PROTOCOL.md): the figures of the model
quality table in docs/RESULTS.md and of models/MODEL.md.
LAYA (default build/laya) names the binary."""
import json
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: scripts/bpb.py MODEL TEXT...")
    laya = os.environ.get("LAYA", "build/laya")
    model, texts = sys.argv[1], sys.argv[2:]
    reqs = []
    for path in texts:
        with open(path, encoding="utf-8") as f:
            reqs.append(json.dumps({"op": "score", "text": f.read()}))
    p = subprocess.run([laya, "serve", "--stdio", "--no-learn", "--model", model], input="\n".join(reqs) + "\n",
                       capture_output=True, text=True)
    lines = p.stdout.splitlines()
    if p.returncode != 0 or len(lines) != len(texts):
        sys.exit("laya serve failed (exit %d): %s" % (p.returncode, p.stderr.strip()))
    for path, line in zip(texts, lines):
        r = json.loads(line)
        if "bits" not in r:
            sys.exit("%s: %s" % (path, line))
        print("%-32s %.4f bits/byte  (%d bytes)" % (path, r["bits"] / r["bytes"], r["bytes"]))


if __name__ == "__main__":
    main()
