#!/usr/bin/env python3
"""A small front end that acts on the intent (C10): when what you type looks
like writing an e-mail, it offers to open your mail client.

    examples/intent_mailto.py [--laya build/laya] [--model PATH] [-- SERVE ARGS...]

It starts `laya serve --stdio` (which loads MODEL.intent.safetensors beside
the model), reads what you type on the terminal a line at a time, sends each
line as a suggest request, and prints the suggestions. When a reply carries
"intent":{"name":"send_email","p":P}, it asks

    send_email (p 0.93): open the mail client? [y/N]

and only on "y" runs `xdg-open mailto:?body=<your line>`. Nothing is opened
without that answer; anything else (or Enter) does nothing. Other intents
are shown, not acted on. Ctrl-D ends it.
"""
import argparse, json, subprocess, sys, urllib.parse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--laya", default="build/laya")
    ap.add_argument("--model", default=None)
    ap.add_argument("serve_args", nargs="*")
    a = ap.parse_args()
    cmd = [a.laya, "serve", "--stdio", "--no-learn"] + (["--model", a.model] if a.model else []) + a.serve_args
    srv = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        for line in sys.stdin:
            text = line.rstrip("\n")
            if not text:
                continue
            srv.stdin.write(json.dumps({"op": "suggest", "session": "t", "context": text}) + "\n")
            srv.stdin.flush()
            reply = json.loads(srv.stdout.readline())
            if "error" in reply:
                print("laya:", reply["error"], file=sys.stderr)
                continue
            print("suggestions:", " | ".join(reply.get("suggestions", [])))
            intent = reply.get("intent")
            if not intent:
                continue
            name, p = intent["name"], intent["p"]
            if name != "send_email":
                print(f"intent: {name} (p {p:.2f})")
                continue
            # The question goes to the terminal, not to stdin's pipe.
            with open("/dev/tty", "r+") as tty:
                tty.write(f"send_email (p {p:.2f}): open the mail client? [y/N] ")
                tty.flush()
                answer = tty.readline().strip().lower()
            if answer == "y":
                url = "mailto:?body=" + urllib.parse.quote(text)
                subprocess.run(["xdg-open", url], check=False)
            else:
                print("(nothing opened)")
    finally:
        srv.stdin.close()
        srv.wait()


if __name__ == "__main__":
    main()
