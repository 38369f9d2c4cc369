#!/usr/bin/env python3
"""Everyday evaluation texts from sources no model was trained on (issue 15).

The genre splits (valid-<genre>.txt) hold out blocks of the very games that
pipeline 2 trains on, so a model trained on the games gains there in-domain.
These texts are cut from text that no model ever trained on, for both the
shipped model and any retraining:

  en-everyday.txt  the lines of en/valid.txt that come from nlp-corpus:
                   everyday sentences of many kinds (chat and SMS-like
                   lines, reviews, news, lyrics), shuffled by that package
  en-quotes.txt    the lines of en/valid.txt from the fortune files: short
                   quotes and dialogue
  en-requests.txt  the hand-written lines of tests/fixtures/intent/en.tsv
  zh-requests.txt  the same, zh.tsv: short everyday requests and chat (the
                   only everyday Chinese the project holds outside the games:
                   fortunes-zh is classical prose, the rest manuals)

valid.txt's blocks are never trained on (build.py splits by hashed blocks
and held_out_mix keeps them byte-identical across pipelines); a line of it
belongs to a source when the source's cleaned text (the pipeline's cache,
cache/corpus/text/<source>.*.txt) holds that exact line. Lines shorter than
MIN_LINE bytes are left out, since a short line ("Yes.") can come from any
source. Deterministic; each output at most --max-bytes.

Long one-campaign texts (scripts/learn_eval.sh's long texts) from Debian
packages that no model trains on, fetched with apt-get download into the
pipeline's cache (<cache>/dl, build.py's layout), pinned by version and the
.deb's sha256 (PACKAGE_TEXTS; a mismatch stops the script). The game texts
of the genre splits come from games whose other text is trained on, so a
model knows their names already; these games' text is in no training source.
NEVER add warzone2100-data or widelands-data to sources.json (the script
refuses to run if either is there): that would end their use as held-out
text.

  en-warzone2100.txt  Warzone 2100's campaign story, warzone2100-data
                   4.3.3-3 (GPL-2+): the intro, then the briefings and video
                   subtitles of campaigns 1-3 in play order (gamedesc.lev's
                   levels, each level's message files, each message's videos
                   and texts), one caption or briefing line a line; the
                   Project's reports to the Commander and NEXUS's messages
                   (names recur: NEXUS, the Collective, NASDA, Team Alpha)
  zh-warzone2100.txt  the same lines in the package's zh_CN translation
                   (all but a few translated; untranslated lines left out)
  en-widelands.txt  Widelands' Empire campaign (emp01-emp04), widelands-data
                   2:1.1-3 (GPL-2+): Lutius's diary and what Saledus and
                   Amalea tell him, one paragraph a line, in the order the
                   scenarios' texts.lua define them (the play order in
                   emp01-emp03; emp04 groups its messages by speaker). The
                   objectives and the victory boilerplate are left out. Its
                   zh_CN translation covers under 5% of the campaign: no
                   Chinese text.

Markup, code and format placeholders are removed (a line with a %d or %s
placeholder is dropped); exact repeats of a line are dropped (a caption
repeats its briefing). Each output at most --max-bytes.

  python3 scripts/corpus/everyday.py [--corpus data/corpus] [--cache cache/corpus]
                                     [--out data/eval] [--max-bytes 64000]
                                     [--no-packages]
"""
import argparse
import gettext
import glob
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIN_LINE = 24

VIEWS = [
    # output, language, sources whose valid.txt lines it takes
    ('en-everyday.txt', 'en', ('nlp-corpus',)),
    ('en-quotes.txt', 'en', ('fortunes', 'fortunes-min')),
]
REQUESTS = [('en-requests.txt', 'tests/fixtures/intent/en.tsv'),
            ('zh-requests.txt', 'tests/fixtures/intent/zh.tsv')]


def source_lines(cache, name):
    """Every line of the source's cached cleaned text (all cached versions)."""
    paths = glob.glob(os.path.join(cache, 'text', name + '.*.txt'))
    if not paths:
        sys.exit('everyday: no cached text of %s under %s (run make corpus first)' % (name, cache))
    lines = set()
    for p in paths:
        with open(p, encoding='utf-8') as f:
            lines.update(ln.rstrip('\n') for ln in f)
    return lines


def cap(lines, max_bytes):
    out, n = [], 0
    for ln in lines:
        b = len(ln.encode('utf-8')) + 1
        if n + b > max_bytes:
            break
        out.append(ln)
        n += b
    return out


def write(path, lines):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(''.join(ln + '\n' for ln in lines))
    print('everyday: %s %d lines %d bytes' % (path, len(lines), os.path.getsize(path)), file=sys.stderr)


# --------------------------------------------------------------------------
# long one-campaign texts from Debian packages that are not training sources

# package, version, sha256 of the .deb as `apt-get download` fetches it
# (Debian 12 bookworm), the texts it gives
PACKAGE_TEXTS = [
    ('warzone2100-data', '4.3.3-3',
     '53ad292569e0bf9d16de1642d13629f29ed5dfb68896787e4c65ac60edc07d3d', 'warzone2100'),
    ('widelands-data', '2:1.1-3',
     '0e23d645b15bcfb9e3bcae0de9bc1bdfa75a6ecb36b2e449759d6eb0b4bbd8fb', 'widelands'),
]

PLACEHOLDER = re.compile(r'%(\d+\$)?\d*(\.\d+)?[sdif]|%\d')
TAG = re.compile(r'<[^<>]*>')


def clean(s):
    """One line of plain text: tags removed, whitespace collapsed; '' for a
    line with a format placeholder (removing it would leave a broken line)."""
    s = TAG.sub(' ', s)
    if PLACEHOLDER.search(s):
        return ''
    return ' '.join(s.split())


def distinct(lines):
    seen, out = set(), []
    for ln in lines:
        if ln and ln not in seen:
            seen.add(ln)
            out.append(ln)
    return out


def training_packages():
    with open(os.path.join(HERE, 'sources.json'), encoding='utf-8') as f:
        return {s['package'] for s in json.load(f)['sources']}


def fetch_deb(cache, pkg, ver, sha):
    """The pinned .deb in <cache>/dl (build.py's fetch: apt-get download)."""
    sys.path.insert(0, HERE)
    import build
    try:
        deb, version = build.fetch({'name': pkg, 'kind': 'deb', 'package': pkg, 'version': ver},
                                   os.path.join(cache, 'dl'), False)
    except build.SourceError as e:
        sys.exit('everyday: %s' % e)
    got = build.sha256_file(deb)
    if got != sha:
        sys.exit('everyday: %s has sha256 %s, expected %s (another build of %s %s?)'
                 % (deb, got, sha, pkg, ver))
    print('everyday: %s %s %s sha256 %s' % (pkg, version, os.path.basename(deb), got),
          file=sys.stderr)
    return deb


def deb_files(deb, want):
    """{path: bytes} of the .deb's files whose path (no leading ./) want() takes."""
    p = subprocess.Popen(['dpkg-deb', '--fsys-tarfile', deb], stdout=subprocess.PIPE)
    out = {}
    with tarfile.open(fileobj=p.stdout, mode='r|') as t:
        for m in t:
            name = m.name[2:] if m.name.startswith('./') else m.name
            if m.isfile() and want(name):
                out[name] = t.extractfile(m).read()
    p.stdout.close()
    if p.wait() != 0:
        sys.exit('everyday: dpkg-deb --fsys-tarfile %s failed' % deb)
    return out


WZ_BASE = 'usr/share/games/warzone2100/base.wz'
WZ_ZH = 'usr/share/locale/zh_CN/LC_MESSAGES/warzone2100.mo'
WZ_STRING = re.compile(r'^(\S+)\s+_\("((?:[^"\\]|\\.)*)"\)', re.M)
WZ_CAPTION = re.compile(r'^\s*-?\d+\s+-?\d+\s+([0-9.]+)\s+[0-9.]+\s+_\("((?:[^"\\]|\\.)*)"\)', re.M)
WZ_LEVEL = re.compile(r'^(?:camstart|expand|between|miss_keep|expand_limbo|miss_keep_limbo|miss_clear)'
                      r'\s+(\S+)|^data\s+"(wrf/cam[1-3]/[^"]+)"', re.M)


def c_unescape(s):
    return re.sub(r'\\(.)', lambda m: {'n': '\n', 't': '\t'}.get(m.group(1), m.group(1)), s)


def warzone_story(files):
    """Warzone 2100's campaign text in play order (msgids, untranslated): the
    intro video's subtitles; then for each level of gamedesc.lev (campaigns
    1-3) the campaign's opening video, and each message of the level's
    message files (not the proximity blips) in order: a video's subtitles
    (sequenceaudio/<video>.txa and .txt, merged by start time), a text id's
    string (messages/strings)."""
    wz = zipfile.ZipFile(io.BytesIO(files[WZ_BASE]))
    names = set(wz.namelist())

    def rd(n):
        return wz.read(n).decode('utf-8')
    strings = {}
    for n in sorted(names):
        if n.startswith('messages/strings/') and n.endswith('.txt'):
            for k, v in WZ_STRING.findall(rd(n)):
                strings.setdefault(k, c_unescape(v))
    out = []

    def video(seq):
        base, rows = 'sequenceaudio/' + seq.rsplit('.', 1)[0], []
        for i, ext in enumerate(('.txa', '.txt')):
            if base + ext in names:
                rows += [(float(t), i, j, c_unescape(v))
                         for j, (t, v) in enumerate(WZ_CAPTION.findall(rd(base + ext)))]
        out.extend(r[3] for r in sorted(rows))
    opening = {}
    for n in sorted(names):
        if n.startswith('campaigns/') and n.endswith('.json'):
            c = json.loads(rd(n))
            if c.get('video'):
                opening[c['level']] = c['video']
    video('devastation.ogg')
    for m in WZ_LEVEL.finditer(rd('gamedesc.lev')):
        if m.group(1):
            if m.group(1) in opening:
                video(opening[m.group(1)])
            continue
        if m.group(2) not in names:     # a level whose data is missing (cam2c2)
            continue
        for f in re.findall(r'^\s*file\s+SMSG\s+"([^"]+)"', rd(m.group(2)), re.M):
            if f.startswith('prox') or 'messages/' + f not in names:
                continue
            for ln in rd('messages/' + f).splitlines():
                for tok in ln.split(',')[1:]:
                    tok = tok.strip()
                    if tok.lower().endswith('.ogg'):
                        video(tok)
                    elif tok in strings:
                        out.append(strings[tok])
    return out


def warzone(deb):
    files = deb_files(deb, lambda n: n in (WZ_BASE, WZ_ZH))
    story = warzone_story(files)
    zh = gettext.GNUTranslations(io.BytesIO(files[WZ_ZH]))._catalog
    return [('en-warzone2100.txt', distinct(clean(s) for s in story)),
            ('zh-warzone2100.txt', distinct(clean(zh[s]) for s in story if zh.get(s)))]


WL_EMPIRE = re.compile(r'usr/share/games/widelands/data/campaigns/emp0[1-4]\.wmf/scripting/texts\.lua$')
LUA_BRACKET = re.compile(r'\[(=*)\[')
LUA_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
LUA_ESC = {'n': '\n', 't': '\t'}
LUA_DEF = re.compile(r'^(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)', re.M)


def lua_tokens(src):
    """(kind, value, offset) of Lua source: 'str' (literal's value), 'name',
    'op' (one character); comments left out."""
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        if src.startswith('--', i):
            m = LUA_BRACKET.match(src, i + 2)
            if m:
                end = src.find(']' + m.group(1) + ']', m.end())
                i = n if end < 0 else end + len(m.group(1)) + 2
            else:
                end = src.find('\n', i)
                i = n if end < 0 else end + 1
            continue
        m = LUA_BRACKET.match(src, i)
        if m:
            close = ']' + m.group(1) + ']'
            end = src.find(close, m.end())
            end = n if end < 0 else end
            body = src[m.end():end]
            yield 'str', body[1:] if body.startswith('\n') else body, i
            i = end + len(close)
            continue
        if c in '"\'':
            j, buf = i + 1, []
            while j < n and src[j] != c:
                if src[j] == '\\' and j + 1 < n:
                    buf.append(LUA_ESC.get(src[j + 1], src[j + 1]))
                    j += 2
                else:
                    buf.append(src[j])
                    j += 1
            yield 'str', ''.join(buf), i
            i = j + 1
            continue
        m = LUA_NAME.match(src, i)
        if m:
            yield 'name', m.group(), i
            i = m.end()
            continue
        yield 'op', c, i
        i += 1


def lua_messages(src):
    """The translatable strings of a Widelands texts.lua in file order, left
    out: the objectives (definitions named obj_*), objective_text(...) (the
    victory boilerplate) and ngettext (counts)."""
    defs = [(m.start(), m.group(1)) for m in LUA_DEF.finditer(src)]
    toks = list(lua_tokens(src))
    out, i, d = [], 0, 0
    while i < len(toks):
        kind, v, pos = toks[i]
        while d + 1 < len(defs) and defs[d + 1][0] <= pos:
            d += 1
        in_obj = bool(defs) and defs[d][0] <= pos and defs[d][1].startswith('obj_')
        nxt = toks[i + 1] if i + 1 < len(toks) else ('', '', 0)
        if kind == 'name' and v in ('objective_text', 'ngettext') and nxt[:2] == ('op', '('):
            depth, i = 1, i + 2          # skip to the matching ')'
            while i < len(toks) and depth:
                if toks[i][0] == 'op':
                    depth += {'(': 1, ')': -1}.get(toks[i][1], 0)
                i += 1
            continue
        if kind == 'name' and v == '_':
            if nxt[0] == 'str':
                if not in_obj:
                    out.append(nxt[1])
                i += 2
                continue
            if nxt[:2] == ('op', '(') and i + 2 < len(toks) and toks[i + 2][0] == 'str':
                if not in_obj:
                    out.append(toks[i + 2][1])
                i += 3
                continue
        i += 1
    return out


def widelands(deb):
    files = deb_files(deb, lambda n: bool(WL_EMPIRE.match(n)))
    if len(files) != 4:
        sys.exit('everyday: %s: expected the 4 Empire scenarios, found %d' % (deb, len(files)))
    lines = []
    for n in sorted(files):
        lines += lua_messages(files[n].decode('utf-8'))
    return [('en-widelands.txt', distinct(clean(s) for s in lines))]


EXTRACT = {'warzone2100': warzone, 'widelands': widelands}


def package_texts(cache, out, max_bytes):
    trained = training_packages()
    for pkg, ver, sha, name in PACKAGE_TEXTS:
        if pkg in trained:
            sys.exit('everyday: %s is a training source in sources.json: its text is no longer '
                     'held out (remove it there, or drop %s here)' % (pkg, name))
        for fname, lines in EXTRACT[name](fetch_deb(cache, pkg, ver, sha)):
            write(os.path.join(out, fname), cap(lines, max_bytes))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--corpus', default=os.path.join(ROOT, 'data', 'corpus'))
    ap.add_argument('--cache', default=os.path.join(ROOT, 'cache', 'corpus'))
    ap.add_argument('--out', default=os.path.join(ROOT, 'data', 'eval'))
    ap.add_argument('--max-bytes', type=int, default=64000)
    ap.add_argument('--no-packages', action='store_true',
                    help='leave out the texts from Debian packages (a download of 520 MB once)')
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for out, lang, names in VIEWS:
        valid = os.path.join(a.corpus, lang, 'valid.txt')
        if not os.path.exists(valid):
            sys.exit('everyday: %s missing (make corpus)' % valid)
        own = set()
        for n in names:
            own |= source_lines(a.cache, n)
        with open(valid, encoding='utf-8') as f:
            lines = [ln.rstrip('\n') for ln in f]
        keep = [ln for ln in lines if len(ln.encode('utf-8')) >= MIN_LINE and ln in own]
        write(os.path.join(a.out, out), cap(keep, a.max_bytes))
    for out, tsv in REQUESTS:
        with open(os.path.join(ROOT, tsv), encoding='utf-8') as f:
            lines = [ln.rstrip('\n').split('\t', 1)[1] for ln in f
                     if not ln.startswith('#') and '\t' in ln]
        write(os.path.join(a.out, out), cap(lines, a.max_bytes))
    if not a.no_packages:
        package_texts(a.cache, a.out, a.max_bytes)


if __name__ == '__main__':
    main()
