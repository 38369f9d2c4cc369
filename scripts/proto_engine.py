"""An engine that speaks the suggestion protocol (docs/PROTOCOL.md), run for
one measurement: a fresh, empty HOME and XDG_DATA_HOME (so an engine that
learns starts from nothing, as `laya eval` runs it), removed afterwards.
Used by scripts/learn_headroom.py and scripts/rank_headroom.py:

    with ProtoEngine("build/laya serve --stdio", "learn_headroom") as eng:
        suggestions = eng.suggest(context, k)
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile


class ProtoEngine:
    def __init__(self, command, who):
        self.command, self.who = command, who

    def __enter__(self):
        self.home = tempfile.mkdtemp(prefix='laya-%s-' % self.who)
        env = dict(os.environ, HOME=self.home, XDG_DATA_HOME=os.path.join(self.home, 'data'))
        self.p = subprocess.Popen(shlex.split(self.command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env)
        return self

    def suggest(self, context, k):
        self.p.stdin.write(json.dumps({'op': 'suggest', 'session': self.who, 'context': context, 'k': k},
                                      ensure_ascii=False) + '\n')
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            sys.exit('%s: the engine stopped (%s)' % (self.who, self.command))
        return json.loads(line).get('suggestions', [])

    def __exit__(self, *exc):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=30)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)
        return False
