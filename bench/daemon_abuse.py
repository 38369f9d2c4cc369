#!/usr/bin/env python3
"""bench/daemon_abuse.py - what one abusive client does to the others (issue
17, head-of-line blocking). A benchmark: it reports, it asserts nothing
about time.

Starts `laya serve --socket` on a private socket. G well-behaved clients
(default 4) type a text at a typist's pace (one suggest per keystroke every
--gap-ms, default 100 ms, one request in flight), each in its own session,
for --seconds (default 20) per scenario, and record their round trips.
Meanwhile one abusive client, per scenario:
  none      nothing (the baseline)
  score     {"op":"score"} over --score-kb of text (default 256 KB), again
            and again, each after the reply to the last
  suggest   a suggest with a --context-kb context (default 1000 KB: a line must stay under 1 MiB), each in
            a new session (read afresh), again and again
Reports per scenario the good clients' requests, p50, p99, max round trip
and errors, and the abuser's completed requests.

  python3 bench/daemon_abuse.py --model M [--laya build/laya] [--seconds 20]
          [--scenarios none,score,suggest] [--serve-args "--workers 4"]
"""
import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time

TEXT = ("Best regards, and thank you for the quick reply. The meeting is on Monday at ten. "
        "Please bring the report and the slides. I would like to book a table for two people "
        "tonight. 我想订个外卖。我们明天去公园吧。")


class Conn:
    def __init__(self, path, timeout=600):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""

    def ask(self, req):
        self.s.sendall(json.dumps(req, ensure_ascii=False).encode() + b"\n")
        while b"\n" not in self.buf:
            d = self.s.recv(1 << 16)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def good(path, cid, stop, gap, out):
    c = Conn(path)
    rtts, errors, pos = [], 0, (cid * 11) % len(TEXT)
    while not stop.is_set():
        pos = pos % len(TEXT) + 1
        t0 = time.perf_counter()
        r = c.ask({"op": "suggest", "session": "g%d" % cid, "context": TEXT[:pos], "k": 3})
        rtts.append(time.perf_counter() - t0)
        errors += "suggestions" not in r
        time.sleep(max(0.0, gap - (time.perf_counter() - t0)))
    out.append((rtts, errors))


def abuser(path, kind, a, stop, out):
    done = 0
    if kind != "none":
        c = Conn(path)
        big = (TEXT * (1 + (max(a.score_kb, a.context_kb) << 10) // len(TEXT.encode())))
        i = 0
        while not stop.is_set():
            if kind == "score":
                req = {"op": "score", "text": big.encode()[: a.score_kb << 10].decode("utf-8", "ignore")}
            else:
                req = {"op": "suggest", "session": "a%d" % i,
                       "context": big.encode()[: a.context_kb << 10].decode("utf-8", "ignore")[:-1]}
            i += 1
            try:
                r = c.ask(req)
            except (OSError, EOFError):
                break
            done += "error" not in r
    out.append(done)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--laya", default="build/laya")
    ap.add_argument("--model", default="models/default.safetensors")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--good", type=int, default=4)
    ap.add_argument("--gap-ms", type=float, default=100)
    ap.add_argument("--score-kb", type=int, default=256)
    ap.add_argument("--context-kb", type=int, default=1000)
    ap.add_argument("--scenarios", default="none,score,suggest")
    ap.add_argument("--serve-args", default="")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="laya-abuse-")
    path = os.path.join(d, "laya.sock")
    cmd = [a.laya, "serve", "--socket", path, "--model", a.model] + shlex.split(a.serve_args)
    # The daemon learns what its clients commit: into a memory of its own
    # under the temporary folder, never the user's (XDG_DATA_HOME).
    env = dict(os.environ, XDG_DATA_HOME=d)
    env.pop("LAYA_MEMORY", None)
    dmn = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    rows = []
    try:
        for _ in range(400):
            try:
                Conn(path).s.close()
                break
            except OSError:
                time.sleep(0.05)
        for kind in a.scenarios.split(","):
            stop, gout, aout = threading.Event(), [], []
            ab = threading.Thread(target=abuser, args=(path, kind, a, stop, aout))
            ab.start()
            time.sleep(0.5)   # the abuser's first request is in
            gs = [threading.Thread(target=good, args=(path, i, stop, a.gap_ms / 1e3, gout)) for i in range(a.good)]
            [t.start() for t in gs]
            time.sleep(a.seconds)
            stop.set()
            [t.join() for t in gs]
            ab.join()
            rtt = [x * 1e3 for r in gout for x in r[0]]
            rows.append((kind, len(rtt), pct(rtt, 50), pct(rtt, 99), max(rtt) if rtt else float("nan"),
                         sum(r[1] for r in gout), aout[0] if aout else 0))
    finally:
        dmn.terminate()
        dmn.wait()
        shutil.rmtree(d, ignore_errors=True)   # the socket and the daemon's memory
    print("daemon under abuse: %d typing clients (one suggest per %.0f ms), %.0f s per scenario; serve %s"
          % (a.good, a.gap_ms, a.seconds, a.serve_args or "(defaults)"))
    print("  %-9s %9s %9s %9s %10s %7s %9s" % ("abuser", "requests", "p50 ms", "p99 ms", "max ms", "errors",
                                            "abuser ok"))
    for r in rows:
        print("  %-9s %9d %9.2f %9.2f %10.2f %7d %9d" % r)
    print("  abuser: score = %d KB per request; suggest = %d KB context, a new session each" %
          (a.score_kb, a.context_kb))


if __name__ == "__main__":
    main()
