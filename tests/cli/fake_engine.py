#!/usr/bin/env python3
"""fake_engine.py - a test double for `laya eval` ONLY: the protocol
counterpart whose suggestions are known, so the harness's arithmetic (KSR,
precision, next-word accuracy, bits per byte, latency fields) can be checked
against numbers computed by hand in tests/cli/eval.sh. Not a predictor.

Oracle: it knows the texts (session "eval-<i>" is text i). Words end at a
space or newline, which belongs to the word. Suggestion 1 is the rest of the
current word; with k >= 2, suggestion 2 also takes the next word.

  fake_engine.py TEXT... [--lag N] [--wrong-at-start] [--no-score]
                 [--die-after N] [--garbage-after N] [--hang-after N] [--log FILE]
                 [--us-down]
--lag N           no suggestion until N characters of the word are typed
--wrong-at-start  at a word start, suggest only "qqq "
--no-score        answer {"error":...} to {"op":"score"}
--*-after N       misbehave on request number N+1 (exit 3 / non-JSON / silence)
--log FILE        append every request's op, session and text/context length
--us-down         report "us" as 1000 - the context's length (default 7): the
                  latency samples differ and the last (longest context) is
                  not the largest
"""
import json
import sys
import time

SEPS = " \n"


def word_end(text, p):
    j = p
    while j < len(text) and text[j] not in SEPS:
        j += 1
    return j + 1 if j < len(text) else j


def main():
    texts, opt, args = [], {}, sys.argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--lag", "--die-after", "--garbage-after", "--hang-after", "--log"):
            opt[a] = args[i + 1]
            i += 2
            continue
        if a.startswith("--"):
            opt[a] = True
        else:
            with open(a, encoding="utf-8") as f:
                texts.append(f.read())
        i += 1
    lag = int(opt.get("--lag", 0))
    log = open(opt["--log"], "a") if "--log" in opt else None
    n = 0
    for line in sys.stdin:
        n += 1
        for key, act in (("--die-after", "die"), ("--garbage-after", "garbage"),
                         ("--hang-after", "hang")):
            if key in opt and n > int(opt[key]):
                if act == "die":
                    sys.exit(3)
                if act == "garbage":
                    print("this is not json", flush=True)
                    continue
                time.sleep(60)
        try:
            req = json.loads(line)
        except ValueError:
            print(json.dumps({"error": "bad json"}), flush=True)
            continue
        op, sess = req.get("op"), req.get("session", "")
        if log:
            body = req.get("context", req.get("text", ""))
            log.write("%s %s %d %s\n" % (op, sess, len(body),
                                         json.dumps(body) if op == "commit" else ""))
            log.flush()
        if op == "suggest":
            ctx, k = req["context"], req["k"]
            # sessions eval-N (the typist) and eval-words-N (next words) read text N
            last = sess.rsplit("-", 1)[-1]
            idx = int(last) if sess.startswith("eval-") and last.isdigit() else 0
            text = texts[idx]
            out = []
            if text.startswith(ctx) and len(ctx) < len(text):
                p = len(ctx)
                ws = max(ctx.rfind(" "), ctx.rfind("\n")) + 1
                if "--wrong-at-start" in opt and p == ws:
                    out = ["qqq "]
                elif p - ws >= lag:
                    e1 = word_end(text, p)
                    out = [text[p:e1]]
                    e2 = word_end(text, e1)
                    if k >= 2 and e2 > e1:
                        out.append(text[p:e2])
            us = 1000 - len(ctx) if "--us-down" in opt else 7
            print(json.dumps({"suggestions": out[:k], "us": us}), flush=True)
        elif op == "score":
            if "--no-score" in opt:
                print(json.dumps({"error": "unknown op 'score'"}), flush=True)
            else:
                b = len(req["text"].encode("utf-8"))
                print(json.dumps({"bits": 2.0 * b, "bytes": b}), flush=True)
        elif op in ("reset", "commit"):
            print(json.dumps({"ok": True}), flush=True)
        else:
            print(json.dumps({"error": "unknown op"}), flush=True)


if __name__ == "__main__":
    main()
