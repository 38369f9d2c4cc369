#!/usr/bin/env python3
"""bench/daemon_load.py - load on the Laya daemon over loopback (a benchmark:
it reports, it asserts nothing about time).

Starts `laya serve --socket` on a private socket, then C clients (default 64)
each type a text character by character, one suggest request per keystroke
and one request in flight at a time (the way an input method uses the
daemon), N requests each (default 1,000), every client in its own session.
Reports errors, lost replies, round-trip p50/p99/max, the engine's own
time ("us") and throughput.

  python3 bench/daemon_load.py --model M [--laya build/laya] [--clients 64]
                               [--requests 1000] [--procs 4]
"""
import argparse
import asyncio
import json
import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

TEXT = ("Best regards, and thank you for the quick reply. The meeting is on Monday at ten. "
        "Please bring the report and the slides. I would like to book a table for two people "
        "tonight. 我想订个外卖。我们明天去公园吧。")


async def client(path, cid, n, out):
    r, w = await asyncio.open_unix_connection(path, limit=1 << 22)
    rtts, us, errors = [], [], 0
    pos = (cid * 7) % len(TEXT)
    for i in range(n):
        pos = pos % len(TEXT) + 1
        req = {"op": "suggest", "session": "c%d" % cid, "context": TEXT[:pos], "k": 3}
        line = json.dumps(req, ensure_ascii=False).encode() + b"\n"
        t0 = time.perf_counter()
        w.write(line)
        await w.drain()
        rep = await asyncio.wait_for(r.readline(), 60)
        rtts.append(time.perf_counter() - t0)
        if not rep:
            break
        o = json.loads(rep)
        if "suggestions" in o:
            us.append(o["us"])
        else:
            errors += 1
    w.close()
    out.append((len(rtts), errors, rtts, us))


def proc_main(path, ids, n, q):
    out = []

    async def run():
        await asyncio.gather(*(client(path, c, n, out) for c in ids))
    asyncio.run(run())
    q.put(out)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--laya", default="build/laya")
    ap.add_argument("--model", required=True)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=4)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="laya-load-")
    path = os.path.join(d, "laya.sock")
    # The daemon learns what its clients commit: into a memory of its own
    # under the temporary folder, never the user's (XDG_DATA_HOME).
    env = dict(os.environ, XDG_DATA_HOME=d)
    env.pop("LAYA_MEMORY", None)
    dmn = subprocess.Popen([a.laya, "serve", "--socket", path, "--model", a.model,
                            "--max-sessions", str(a.clients)], env=env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(400):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                s.close()
                break
            except OSError:
                time.sleep(0.05)
        q = mp.Queue()
        groups = [list(range(i, a.clients, a.procs)) for i in range(a.procs)]
        t0 = time.perf_counter()
        ps = [mp.Process(target=proc_main, args=(path, g, a.requests, q)) for g in groups if g]
        [p.start() for p in ps]
        res = [r for _ in ps for r in q.get()]
        [p.join() for p in ps]
        wall = time.perf_counter() - t0
        rss = [l for l in open("/proc/%d/status" % dmn.pid) if l.startswith("VmHWM")][0].split()[1]
        st = open("/proc/%d/stat" % dmn.pid).read().rsplit(")", 1)[1].split()
        cpu = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime
    finally:
        dmn.terminate()
        dmn.wait()
        shutil.rmtree(d, ignore_errors=True)   # the socket and the daemon's memory
    sent = a.clients * a.requests
    got = sum(r[0] for r in res)
    errors = sum(r[1] for r in res)
    rtt = [x * 1e3 for r in res for x in r[2]]
    us = [x / 1e3 for r in res for x in r[3]]
    print("daemon load: %d clients x %d requests, one in flight per client, loopback" % (a.clients, a.requests))
    print("  %-22s %d / %d  (lost %d)" % ("replies", got, sent, sent - got))
    print("  %-22s %d" % ("error replies", errors))
    print("  %-22s p50 %.2f ms  p99 %.2f ms  max %.2f ms" % ("round trip", pct(rtt, 50), pct(rtt, 99), max(rtt)))
    print("  %-22s p50 %.2f ms  p99 %.2f ms" % ("engine time (us field)", pct(us, 50), pct(us, 99)))
    print("  %-22s %.0f requests/s over %.1f s" % ("throughput", got / wall, wall))
    print("  %-22s %.1f s = %.0f us per request" % ("daemon CPU time", cpu, 1e6 * cpu / max(got, 1)))
    print("  %-22s %s kB" % ("daemon VmHWM", rss))
    print("  (round trips include waiting behind the other clients' requests: one daemon thread)")
    sys.exit(0 if got == sent and errors == 0 else 1)


if __name__ == "__main__":
    main()
