#!/usr/bin/env python3
"""bench/soak.py - the daemon under mixed clients for a long time (issue 17).

Starts `laya serve --socket` on a private loopback socket and runs, side by
side, for --seconds (default 1800):
  good      --good typing clients (default 4): one suggest per keystroke
            every --gap-ms (default 80 ms, one request in flight), now and
            then a commit, a reset or a short score; every reply is checked
  vanish    connects, sends a request or half of one, hangs up unread
  garbage   random bytes, broken JSON, invalid UTF-8, unknown ops
  huge      request lines of 2 MB, over the daemon's 1 MiB line limit
  slow      pipelines cheap requests and reads the replies at 4 KB/s
  sessions  suggests over 10,000 session ids, round and round
  score     {"op":"score"} over 900 KB of text, again and again
Every --interval seconds (default 60) it records the good clients' round
trips (p50, p99, max), the daemon's resident memory, and the counts.

Reports a table (stdout and OUT/soak.md), OUT/soak.csv and OUT/soak.png
(gnuplot). Exit status 1 if a valid request got an error reply, a reply was
lost (no reply within 60 s, or the connection dropped under a good
client), or the daemon died: those must be 0. Times are reported, never
asserted (the CPU may be shared with other work: say so with the figures).

  python3 bench/soak.py [--laya build/laya] [--model M] [--seconds 1800]
                        [--interval 60] [--out DIR] [--serve-args "..."]
"""
import argparse
import json
import os
import random
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

TEXT = ("Best regards, and thank you for the quick reply. The meeting is on Monday at ten. "
        "Please bring the report and the slides. I would like to book a table for two people "
        "tonight. 我想订个外卖。我们明天去公园吧。订个酒店，订个机票，然后去北京旅行。")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.rtts = []          # (t, seconds) of good requests in the current interval
        self.good = 0
        self.errors = 0         # error replies to valid requests
        self.lost = 0           # valid requests without a reply
        self.error_samples = []
        self.abuse = {}         # kind -> requests sent

    def add_abuse(self, kind, n=1):
        with self.lock:
            self.abuse[kind] = self.abuse.get(kind, 0) + n


def connect(path, timeout=60):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


class Lines:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def get(self):
        while b"\n" not in self.buf:
            d = self.s.recv(1 << 16)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def send(s, obj):
    s.sendall(json.dumps(obj, ensure_ascii=False).encode() + b"\n")


def good_client(path, cid, stop, st, gap):
    rnd = random.Random(cid)
    s = None
    pos = (cid * 37) % len(TEXT)
    sid = "g%d" % cid
    while not stop.is_set():
        try:
            if s is None:
                s = connect(path)
                L = Lines(s)
            pos = pos % len(TEXT) + 1
            r = rnd.random()
            if r < 0.03:
                req, want = {"op": "commit", "session": sid, "text": TEXT[:pos]}, "ok"
            elif r < 0.04:
                req, want = {"op": "reset", "session": sid}, "ok"
            elif r < 0.05:
                req, want = {"op": "score", "text": TEXT[:40]}, "bits"
            else:
                req, want = {"op": "suggest", "session": sid, "context": TEXT[:pos], "k": 3}, "suggestions"
            t0 = time.perf_counter()
            send(s, req)
            rep = L.get()
            dt = time.perf_counter() - t0
            with st.lock:
                st.good += 1
                st.rtts.append(dt)
                if want not in rep:
                    st.errors += 1
                    if len(st.error_samples) < 5:
                        st.error_samples.append((req.get("op"), rep))
            time.sleep(max(0.0, gap - dt))
        except (OSError, EOFError, ValueError) as e:
            with st.lock:
                st.lost += 1
                if len(st.error_samples) < 5:
                    st.error_samples.append(("lost", repr(e)))
            if s:
                s.close()
            s = None
            time.sleep(0.5)
    if s:
        s.close()


def vanisher(path, stop, st):
    rnd = random.Random(1)
    while not stop.is_set():
        try:
            s = connect(path, 5)
            line = json.dumps({"op": "suggest", "context": TEXT[: rnd.randrange(1, len(TEXT))]}).encode()
            s.sendall(line[: rnd.randrange(1, len(line) + 1)] + (b"\n" if rnd.random() < 0.5 else b""))
            s.close()
            st.add_abuse("vanish")
        except OSError:
            pass
        time.sleep(0.05)


def garbage(path, stop, st):
    rnd = random.Random(2)
    pieces = [b"{not json", b'{"op":"suggest","context":"\xff\xfe"}', b'{"op":"fly"}', b"[1,2,3]",
              b'{"op":"suggest","k":"x","context":"a"}', b"\x00\x01\x02", b'{"op":"suggest","session":""}']
    while not stop.is_set():
        try:
            s = connect(path, 30)
            L = Lines(s)
            for _ in range(50):
                if rnd.random() < 0.5:
                    b = rnd.choice(pieces)
                else:
                    b = bytes(rnd.randrange(1, 256) for _ in range(rnd.randrange(1, 200))).replace(b"\n", b" ")
                s.sendall(b + b"\n")
                L.get()
                st.add_abuse("garbage")
            s.close()
        except (OSError, EOFError, ValueError):
            pass
        time.sleep(0.1)


def huge(path, stop, st):
    line = b'{"op":"suggest","context":"' + b"a" * (2 << 20) + b'"}\n'
    while not stop.is_set():
        try:
            s = connect(path, 60)
            L = Lines(s)
            s.sendall(line)
            L.get()
            s.close()
            st.add_abuse("huge")
        except (OSError, EOFError, ValueError):
            pass
        time.sleep(1.0)


def slow_reader(path, stop, st):
    while not stop.is_set():
        try:
            s = connect(path, 120)
            body = b'{"op":"reset"}\n' * 20000
            t = threading.Thread(target=s.sendall, args=(body,), daemon=True)
            t.start()
            got = 0
            while got < len(body) // 2 and not stop.is_set():   # ~12 bytes of reply per request
                d = s.recv(4096)
                if not d:
                    break
                got += len(d)
                time.sleep(1.0)
            s.close()
            st.add_abuse("slow", 20000)
        except OSError:
            pass


def sessions(path, stop, st):
    i = 0
    while not stop.is_set():
        try:
            s = connect(path, 60)
            L = Lines(s)
            while not stop.is_set():
                send(s, {"op": "suggest", "session": "s%d" % (i % 10000), "context": TEXT[: 1 + i % 60]})
                L.get()
                i += 1
                st.add_abuse("sessions")
        except (OSError, EOFError, ValueError):
            pass


def scorer(path, stop, st):
    big = (TEXT * (900000 // len(TEXT.encode()) + 1)).encode()[:900000].decode("utf-8", "ignore")
    while not stop.is_set():
        try:
            s = connect(path, 3600)
            L = Lines(s)
            while not stop.is_set():
                send(s, {"op": "score", "text": big})
                L.get()
                st.add_abuse("score")
        except (OSError, EOFError, ValueError):
            pass


def rss_mb(pid):
    try:
        for l in open("/proc/%d/status" % pid):
            if l.startswith("VmRSS"):
                return int(l.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")


def plot(csv, png, title):
    gp = """set terminal pngcairo size 960,560
set output '%s'
set datafile separator ','
set grid
set title "%s"
set xlabel 'minutes'
set ylabel 'good clients: round trip (ms)'
set logscale y
set y2label 'daemon resident memory (MB)'
set y2tics
set y2range [0:*]
set ytics nomirror
set key top left
plot '%s' every ::1 using ($1/60):3 with linespoints lw 2 title 'p50', \\
     '' every ::1 using ($1/60):4 with linespoints lw 2 title 'p99', \\
     '' every ::1 using ($1/60):6 axes x1y2 with lines lw 2 dt 2 title 'RSS (right)'
""" % (png, title, csv)
    try:
        subprocess.run(["gnuplot"], input=gp.encode(), check=True)
        return True
    except (OSError, subprocess.CalledProcessError):
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--laya", default="build/laya")
    ap.add_argument("--model", default="models/default.safetensors")
    ap.add_argument("--seconds", type=float, default=1800)
    ap.add_argument("--interval", type=float, default=60)
    ap.add_argument("--good", type=int, default=4)
    ap.add_argument("--gap-ms", type=float, default=80)
    ap.add_argument("--out", default="build/soak")
    ap.add_argument("--serve-args", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    d = tempfile.mkdtemp(prefix="laya-soak-")
    path = os.path.join(d, "laya.sock")
    cmd = [a.laya, "serve", "--socket", path, "--model", a.model] + shlex.split(a.serve_args)
    # The daemon learns what its clients commit: into a memory of its own
    # under the temporary folder, never the user's (XDG_DATA_HOME).
    env = dict(os.environ, XDG_DATA_HOME=d)
    env.pop("LAYA_MEMORY", None)
    dmn = subprocess.Popen(cmd, env=env, stderr=open(os.path.join(a.out, "daemon.err"), "w"))
    for _ in range(400):
        try:
            connect(path).close()
            break
        except OSError:
            time.sleep(0.05)
    st, stop = Stats(), threading.Event()
    threads = [threading.Thread(target=good_client, args=(path, i, stop, st, a.gap_ms / 1e3)) for i in range(a.good)]
    for f in (vanisher, garbage, huge, slow_reader, sessions, scorer):
        threads.append(threading.Thread(target=f, args=(path, stop, st)))
    for t in threads:
        t.daemon = True
        t.start()
    t_start = time.time()
    rows, all_rtts, alive = [], [], True
    while time.time() - t_start < a.seconds and alive:
        time.sleep(min(a.interval, max(0.0, a.seconds - (time.time() - t_start))))
        with st.lock:
            rt, st.rtts = st.rtts, []
            row = (time.time() - t_start, len(rt), 1e3 * pct(rt, 50), 1e3 * pct(rt, 99),
                   1e3 * max(rt) if rt else float("nan"), rss_mb(dmn.pid), st.errors, st.lost, dict(st.abuse))
        all_rtts += rt
        rows.append(row)
        alive = dmn.poll() is None
        print("  %6.0f s  %6d requests  p50 %7.2f ms  p99 %8.2f ms  max %8.2f ms  RSS %6.1f MB  errors %d  lost %d"
              % row[:8], flush=True)
    stop.set()
    # The typing clients finish the request they have in flight before the
    # daemon is stopped: a reply cut off by the SIGTERM would count as lost
    # (one did, once, in a clean-clone CI run, after the last interval).
    for t in threads[:a.good]:
        t.join(65)
    alive = alive and dmn.poll() is None
    dmn.terminate()
    try:
        rc = dmn.wait(30)
    except subprocess.TimeoutExpired:
        dmn.kill()
        rc = dmn.wait()
    shutil.rmtree(d, ignore_errors=True)   # the socket and the daemon's memory
    csv = os.path.join(a.out, "soak.csv")
    with open(csv, "w") as f:
        f.write("seconds,requests,p50_ms,p99_ms,max_ms,rss_mb,errors,lost\n")
        for r in rows:
            f.write("%.0f,%d,%.3f,%.3f,%.3f,%.1f,%d,%d\n" % r[:8])
    abuse = rows[-1][8] if rows else {}
    lines = ["| minute | good requests | p50 ms | p99 ms | max ms | daemon RSS MB | error replies | lost |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append("| %.1f | %d | %.2f | %.2f | %.2f | %.1f | %d | %d |" % ((r[0] / 60,) + r[1:8]))
    lines.append("| all | %d | %.2f | %.2f | %.2f | | %d | %d |" % (
        len(all_rtts), 1e3 * pct(all_rtts, 50), 1e3 * pct(all_rtts, 99), 1e3 * max(all_rtts or [float("nan")]),
        st.errors, st.lost))
    summary = ("abuse sent: " + ", ".join("%s %d" % kv for kv in sorted(abuse.items())) +
               "; daemon %s, exit status %s after SIGTERM" % ("alive to the end" if alive else "DIED", rc))
    table = "\n".join(lines) + "\n\n" + summary + "\n"
    open(os.path.join(a.out, "soak.md"), "w").write(table)
    print(table)
    if st.error_samples:
        print("first problems:", st.error_samples)
    png = os.path.join(a.out, "soak.png")
    if plot(csv, png, "laya serve --socket, %d typing clients beside 6 abusive ones" % a.good):
        print("wrote", png)
    ok = st.errors == 0 and st.lost == 0 and alive and rc == 0
    print("soak: %s (error replies to valid requests %d, lost replies %d)" % ("ok" if ok else "FAILED", st.errors, st.lost))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
