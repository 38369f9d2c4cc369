"""Laya corpus extractors: one function per source format.

Every extractor takes a path (and keyword options from sources.json) and
returns a list of raw paragraphs (str). Cleaning (NFC, whitespace, markup and
code filters, dedupe) happens afterwards in clean_lines(); extractors only
remove the format itself. Standard library only.
"""
import gettext
import gzip
import hashlib
import html
import html.parser
import json
import os
import re
import struct
import subprocess
import unicodedata
import zlib

# --------------------------------------------------------------------------
# shared helpers

_CJK = re.compile(r'[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]')


def read_bytes(path):
    with open(path, 'rb') as f:
        data = f.read()
    if path.endswith('.gz') or path.endswith('.dz') or data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
    return data


def read_text(path, encoding='utf-8'):
    data = read_bytes(path)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return data.decode('latin-1') if encoding == 'utf-8' else data.decode(encoding, 'replace')


def join_wrapped(lines):
    """Join hard-wrapped lines into one paragraph: no space between CJK."""
    out = ''
    for ln in lines:
        ln = ln.strip()
        if not ln:
            continue
        if not out:
            out = ln
        elif out.endswith('-') and len(out) > 1 and out[-2].isalpha() and ln[:1].islower():
            out = out[:-1] + ln          # re-join words hyphenated at the wrap
        elif _CJK.match(out[-1]) and _CJK.match(ln[0]):
            out += ln
        else:
            out += ' ' + ln
    return out


def paragraphs(text):
    """Blank-line separated blocks of hard-wrapped lines -> one line each."""
    paras, cur = [], []
    for ln in text.split('\n'):
        if ln.strip():
            cur.append(ln)
        elif cur:
            paras.append(join_wrapped(cur))
            cur = []
    if cur:
        paras.append(join_wrapped(cur))
    return paras


# --------------------------------------------------------------------------
# plain text

def plain(path, encoding='utf-8', **_):
    return paragraphs(read_text(path, encoding))


def lines(path, encoding='utf-8', **_):
    """One paragraph per non-empty line (already unwrapped text)."""
    return [ln for ln in read_text(path, encoding).split('\n') if ln.strip()]


# --------------------------------------------------------------------------
# fortune files: entries separated by a line holding only '%'

_ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')


def fortune(path, **_):
    text = read_text(path)
    out = []
    for entry in re.split(r'\n%\n', '\n' + text + '\n'):
        body, attrib = [], []
        for ln in entry.split('\n'):
            if _ANSI.search(ln):
                # a coloured line is a title or author line: its own paragraph
                body += ['', _ANSI.sub('', ln), '']
                continue
            s = ln.strip()
            if re.match(r'^(--|\u2014|\u2015)\s*\S', s):
                attrib.append(s)          # "-- Author": its own line
            elif attrib and s:
                attrib.append(s)
            else:
                body.append(ln)
        out += paragraphs('\n'.join(body))
        if attrib:
            out.append(join_wrapped(attrib))
    return out


# --------------------------------------------------------------------------
# HTML / XML (docbook, sphinx, libreoffice help, Mallard .page)

_BLOCK = set('p div li ul ol dl dt dd h1 h2 h3 h4 h5 h6 title br hr tr td th table '
             'blockquote section article header figcaption caption item page note '
             'listitem para entry row simpara term desc tbody thead'.split())
_VOID = set('br hr img meta link input area base col wbr source embed param'.split())
_SKIP = set('script style head pre nav footer screen code-block synopsis info '
            'programlisting literallayout svg math object iframe'.split())
_SKIP_CLASS = re.compile(r'(navheader|navfooter|toc|sphinxsidebar|related|footer|'
                         r'headerlink|breadcrumb|navigation|highlight|doctest|'
                         r'literal-block|screen|programlisting|synopsis|'
                         r'cmdsynopsis|funcsynopsis|debug|copyright|legalnotice|sidebar|sphinxsidebarwrapper|'
                         r'toctree-wrapper|contents|topic|bottom-nav|top-nav|searchbox)')


class _TextHTML(html.parser.HTMLParser):
    def __init__(self, skip):
        super().__init__(convert_charrefs=True)
        self.skip_tags = skip
        self.depth = 0          # >0 while inside a skipped element
        self.stack = []         # tags opened while skipping (to match ends)
        self.paras = []
        self.cur = []

    def _flush(self):
        if self.cur:
            t = ''.join(self.cur)
            t = re.sub(r'\s+', ' ', t).strip()
            if t:
                self.paras.append(t)
            self.cur = []

    def handle_starttag(self, tag, attrs):
        if self.depth:
            if tag not in _VOID:
                self.depth += 1
            return
        a = dict(attrs)
        cls = (a.get('class') or '') + ' ' + (a.get('id') or '')
        if tag in self.skip_tags or any(_SKIP_CLASS.fullmatch(c) for c in cls.split()) \
                or a.get('role') == 'navigation':
            if tag not in _VOID:
                self.depth = 1
            self._flush()
            return
        if tag in _BLOCK:
            self._flush()

    def handle_startendtag(self, tag, attrs):
        if not self.depth and tag in _BLOCK:
            self._flush()

    def handle_endtag(self, tag):
        if self.depth:
            if tag not in _VOID:
                self.depth -= 1
            return
        if tag in _BLOCK:
            self._flush()

    def handle_data(self, data):
        if not self.depth:
            self.cur.append(data)


def html_text(path, skip=None, **_):
    data = read_bytes(path)
    m = re.search(rb'charset=["\']?([A-Za-z0-9_-]+)', data[:2048])
    enc = m.group(1).decode() if m else 'utf-8'
    try:
        text = data.decode(enc)
    except (UnicodeDecodeError, LookupError):
        text = data.decode('utf-8', 'replace')
    p = _TextHTML(set(skip) | _SKIP if skip else _SKIP)
    p.feed(text)
    p.close()
    p._flush()
    return p.paras


# --------------------------------------------------------------------------
# reStructuredText (linux Documentation/*.rst, python _sources/*.rst.txt)

_RST_SKIP_DIRECTIVES = set(
    'code-block code sourcecode literalinclude toctree image figure productionlist '
    'doctest testcode testoutput testsetup testcleanup highlight kernel-doc kernel-abi '
    'kernel-feat kernel-include raw math csv-table list-table table graphviz index only '
    'include flat-table tabularcolumns cssclass c:macro c:type c:struct c:union '
    'c:enum c:var c:member opcode2 ifconfig audit-event-table'.split())
_RST_UNDER = re.compile(r'^([=\-~^"\'*+#`:.<>_])\1{2,}\s*$')


def _rst_inline(s):
    s = re.sub(r':[\w:+-]+:`([^`<]*?)\s*<[^`>]*>`', r'\1', s)     # :ref:`text <t>`
    s = re.sub(r':[\w:+-]+:`~?!?([^`]*)`', r'\1', s)              # :func:`x`
    s = re.sub(r'`([^`<]+?)\s*<[^`>]+>`__?', r'\1', s)           # `text <url>`_
    s = re.sub(r'``([^`]+)``', r'\1', s)
    s = re.sub(r'`([^`]+)`_{0,2}', r'\1', s)
    s = re.sub(r'\*\*([^*]+)\*\*', r'\1', s)
    s = re.sub(r'(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])', r'\1', s)
    s = re.sub(r'\|([\w -]+)\|', r'\1', s)                       # substitutions
    s = re.sub(r'\[#?\w*\]_', '', s)                               # footnote refs
    s = re.sub(r'(\w)_\b', r'\1', s)                               # name_ refs
    s = s.replace('\\ ', '').replace('\\', '')
    return s


def rst(path, **_):
    src = read_text(path).replace('\t', '        ').split('\n')
    out, cur = [], []
    skip_indent = None          # skipping a block indented deeper than this
    literal_next = False        # previous paragraph ended with '::'
    cur_indent = 0

    def flush():
        nonlocal cur
        if cur:
            p = join_wrapped(cur)
            if p:
                out.append(_rst_inline(p))
        cur = []

    i = 0
    while i < len(src):
        ln = src[i].rstrip()
        s = ln.strip()
        ind = len(ln) - len(ln.lstrip())
        i += 1
        if skip_indent is not None:
            if not s or ind > skip_indent:
                continue
            skip_indent = None
        if not s:
            flush()
            continue
        if literal_next and ind > cur_indent:
            flush()
            skip_indent = cur_indent
            literal_next = False
            continue
        literal_next = False
        m = re.match(r'^\.\.\s+([\w:+-]+)::(.*)$', s)
        if m or s.startswith('.. '):
            flush()
            name = m.group(1) if m else ''
            if (not m and s.startswith('.. ')) or name in _RST_SKIP_DIRECTIVES:
                skip_indent = ind            # comments, targets, skipped directives
            continue
        if s == '..':
            flush()
            skip_indent = ind
            continue
        if _RST_UNDER.match(s):
            # heading underline/overline or table border: ends the paragraph
            flush()
            continue
        if s.startswith('|') or s.startswith('+-') or s.startswith('+='):
            flush()
            continue
        if re.match(r'^:[\w -]+:(\s|$)', s):   # field list
            flush()
            continue
        if s.startswith('>>>'):
            flush()
            skip_indent = ind - 1
            continue
        if re.match(r'^([-*+\u2022]|#\.|\d+[.)]|\(\d+\)|[a-z][.)])\s+', s):
            flush()
            s = re.sub(r'^([-*+\u2022]|#\.|\d+[.)]|\(\d+\)|[a-z][.)])\s+', '', s)
        if not cur:
            cur_indent = ind
        if s.endswith('::'):
            s = s[:-2].rstrip()
            s = s + ':' if s and not s.endswith(':') else s
            if s:
                cur.append(s)
            flush()
            literal_next = True
            continue
        cur.append(s)
    flush()
    return out


# --------------------------------------------------------------------------
# roff man pages

_ROFF_CHARS = {'em': '\u2014', 'en': '\u2013', 'hy': '-', 'aq': "'", 'dq': '"',
               'lq': '\u201c', 'rq': '\u201d', 'oq': '\u2018', 'cq': '\u2019',
               'bu': '\u2022', 'co': '\u00a9', 'rg': '\u00ae', 'tm': '\u2122',
               'mu': '\u00d7', 'de': '\u00b0', 'ga': '`', 'ti': '~', 'ha': '^',
               'lh': '', 'rh': '', 'Fo': '\u00ab', 'Fc': '\u00bb', 'r!': '\u00a1'}


def _roff_inline(s):
    s = s.replace('\\\\', '\x00')
    s = re.sub(r'\\f(\[[^\]]*\]|\(..|.)', '', s)
    s = re.sub(r'\\\((..)', lambda m: _ROFF_CHARS.get(m.group(1), ''), s)
    s = re.sub(r'\\\[(\w+)\]', lambda m: _ROFF_CHARS.get(m.group(1), ''), s)
    s = re.sub(r'\\\*(\[[^\]]*\]|\(..|.)', '', s)
    s = re.sub(r'\\s[+-]?\d', '', s)
    s = re.sub(r'\\[nk](\[[^\]]*\]|\(..|.)', '', s)
    s = re.sub(r'\\[hvwlLoxHSbD]\'[^\']*\'', '', s)
    s = s.replace('\\-', '-').replace('\\e', '\\').replace('\\ ', ' ').replace('\\~', ' ')
    s = re.sub(r'\\[&|^c%:/,0)!{}]', '', s)
    s = re.sub(r'\\"', '', s)
    s = s.replace('\\', '').replace('\x00', '\\')
    return s


def _roff_args(rest):
    return [a[1:-1] if len(a) > 1 and a[0] == '"' and a[-1] == '"' else a
            for a in re.findall(r'"[^"]*"|\S+', rest)]


def roff(path, **_):
    text = read_text(path)
    out, cur = [], []
    nofill = False
    skipping = None     # end marker while inside .de/.TS/.EQ
    tp_tag = False

    def flush():
        nonlocal cur
        if cur:
            out.append(join_wrapped(cur))
        cur = []

    for raw in text.split('\n'):
        if skipping:
            if raw.startswith(skipping):
                skipping = None
            continue
        if raw.startswith('.\\"') or raw.startswith("'\\\"") or raw.startswith('\\"'):
            continue
        if raw[:1] in ('.', "'"):
            m = re.match(r"^[.']\s*(\S+)\s*(.*)$", raw)
            if not m:
                continue
            req, rest = m.group(1), m.group(2)
            if req in ('de', 'de1', 'am', 'ig'):
                skipping = '..'
            elif req == 'TS':
                skipping = '.TE'
            elif req == 'EQ':
                skipping = '.EN'
            elif req in ('nf', 'EX'):
                flush()
                nofill = True
            elif req in ('fi', 'EE'):
                nofill = False
            elif req in ('SH', 'SS'):
                flush()
                t = _roff_inline(' '.join(_roff_args(rest)))
                if t:
                    out.append(t)
            elif req in ('PP', 'P', 'LP', 'sp', 'br', 'Sp', 'bp', 'RS', 'RE', 'ne', 'in'):
                flush()
            elif req in ('TP', 'TQ'):
                flush()
                tp_tag = True
            elif req in ('IP', 'HP'):
                flush()
            elif req in ('B', 'I', 'SM', 'SB'):
                if not nofill:
                    cur.append(_roff_inline(' '.join(_roff_args(rest))))
            elif req in ('BR', 'RB', 'IR', 'RI', 'BI', 'IB'):
                if not nofill:
                    cur.append(_roff_inline(''.join(_roff_args(rest))))
            elif req in ('UR', 'MT'):
                pass
            # every other request (TH, ft, ps, if, ie, so, ...) is dropped
            if tp_tag and req in ('B', 'I', 'BR', 'RB', 'IR', 'RI', 'BI', 'IB'):
                flush()
                tp_tag = False
            continue
        if nofill:
            continue
        s = _roff_inline(raw)
        if not s.strip():
            flush()
            continue
        cur.append(s)
        if tp_tag:
            flush()
            tp_tag = False
    flush()
    return out


# --------------------------------------------------------------------------
# mail: headers, quoted lines, attributions and signatures removed

def mail_text(text):
    out = []
    for msg in re.split(r'\n(?=From \S+ )', '\n' + text.replace('\r\n', '\n')):
        msg = msg.lstrip('\n')
        if not msg:
            continue
        lines_ = msg.split('\n')
        i = 0
        if re.match(r'^(From |[\w-]+:)', lines_[0]):
            while i < len(lines_) and lines_[i].strip():
                i += 1
        body = []
        for ln in lines_[i:]:
            if ln.rstrip() == '--' or ln == '-- ':
                break                               # signature
            if ln.lstrip().startswith('>') or ln.lstrip().startswith('|>'):
                continue
            if re.match(r'^\s*(On .*wrote:|.*writes:|-+ ?Original Message ?-+)\s*$', ln):
                continue
            body.append(ln)
        out += paragraphs('\n'.join(body))
    return out


def mail(path, **_):
    return mail_text(read_text(path))


# --------------------------------------------------------------------------
# Brown corpus (word/tag tokens)

def brown_detok(tokens):
    s = ' '.join(tokens)
    s = s.replace('``', '"').replace("''", '"')
    s = re.sub(r'\s+([.,;:!?%)\]}])', r'\1', s)
    s = re.sub(r'([(\[{$])\s+', r'\1', s)
    s = re.sub(r'\s+(n\'t|\'s|\'re|\'ve|\'ll|\'d|\'m)\b', r'\1', s)
    # pair up straight double quotes: attach opening to next, closing to previous
    parts = s.split('"')
    if len(parts) > 1:
        r = parts[0]
        for k, p in enumerate(parts[1:]):
            if k % 2 == 0:
                r = r + ' "' + p.lstrip() if r and not r.endswith(' ') else r + '"' + p.lstrip()
            else:
                r = r.rstrip() + '"' + p
        s = r
    return re.sub(r'\s+', ' ', s).strip()


def brown(path, **_):
    text = read_text(path)
    out = []
    for block in re.split(r'\n\s*\n', text):
        toks = []
        for tok in block.split():
            if '/' in tok:
                w, _tag = tok.rsplit('/', 1)
                if w:
                    toks.append(w)
            else:
                toks.append(tok)
        if toks:
            out.append(brown_detok(toks))
    return out


# --------------------------------------------------------------------------
# JSON (npm datasets)

def json_strings(obj, keys, join, out):
    if isinstance(obj, dict):
        for k in sorted(obj) if isinstance(obj, dict) else []:
            v = obj[k]
            if keys is None or k in keys:
                _json_take(v, join, out)
            elif isinstance(v, (dict, list)):
                json_strings(v, keys, join, out)
    elif isinstance(obj, list):
        if keys is None:
            _json_take(obj, join, out)
        else:
            for v in obj:
                json_strings(v, keys, join, out)


def _json_take(v, join, out):
    if isinstance(v, str):
        out += paragraphs(v) if '\n' in v else [v]
    elif isinstance(v, list):
        if join is not None and v and all(isinstance(x, str) for x in v):
            out.append(join.join(x.strip() for x in v))
        else:
            for x in v:
                _json_take(x, join, out)
    elif isinstance(v, dict):
        for k in sorted(v):
            _json_take(v[k], join, out)


def json_text(path, keys=None, join=None, **_):
    obj = json.loads(read_text(path))
    out = []
    if keys is None and isinstance(obj, dict):
        for k in sorted(obj):
            _json_take(obj[k], join, out)
    else:
        json_strings(obj, set(keys) if keys else None, join, out)
    return out


# --------------------------------------------------------------------------
# gettext .mo catalogs (UI strings)

def ui_string(s):
    """A translated UI string without accelerator marks: '打开文件(~O)' -> '打开文件'."""
    s = re.sub(r'\((~|_|&)?[A-Za-z0-9]\)', '', s)
    s = s.replace('~', '')
    s = re.sub(r'(?<![&\w])[&_](?=\w)', '', s)
    return [p.strip() for p in s.split('\n') if p.strip()]


def mo(path, min_msg_chars=0, **_):
    """msgstr texts of a .mo catalog; with min_msg_chars, only messages at
    least that long (a game's encyclopedia texts, not its UI labels), kept
    as paragraphs."""
    with open(path, 'rb') as f:
        cat = gettext.GNUTranslations(f)._catalog
    out = []
    for k in sorted(cat, key=lambda x: str(x)):
        if k == '' or not isinstance(cat[k], str):
            continue
        if min_msg_chars:
            if len(cat[k]) >= min_msg_chars and not _has_fmt(cat[k]):
                out += paragraphs(cat[k])
        else:
            out += ui_string(cat[k])
    return out


def po(path, **_):
    """msgstr texts of a .po file (untranslated entries and the header skipped)."""
    text = read_text(path)
    out = []
    q = r'((?:"(?:[^"\\]|\\.)*"\s*)+)'

    def unq(block):
        s = ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', block))
        return re.sub(r'\\(.)', lambda m: {'n': '\n', 't': ' '}.get(m.group(1), m.group(1)), s)
    for m in re.finditer(r'^msgid\s+' + q + r'(?:msgid_plural\s+' + q + r')?((?:msgstr(?:\[\d+\])?\s+'
                         + r'(?:"(?:[^"\\]|\\.)*"\s*)+)+)', text, re.M):
        if not unq(m.group(1)):
            continue                    # the header entry
        for sm in re.finditer(r'msgstr(?:\[\d+\])?\s+' + q, m.group(3)):
            out += ui_string(unq(sm.group(1)))
    return out


# --------------------------------------------------------------------------
# dictd databases (.index + .dict.dz): dict-devil, dict-gcide

def dict_entries(path):
    """(headword, text) for each entry of a dictd database, in file order."""
    b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
    dec = {c: i for i, c in enumerate(b64)}

    def num(s):
        n = 0
        for c in s:
            n = n * 64 + dec[c]
        return n
    data = read_bytes(path)
    idx = path.replace('.dict.dz', '.index').replace('.dict', '.index')
    ents = []
    with open(idx, encoding='utf-8', errors='replace') as f:
        for ln in f:
            parts = ln.rstrip('\n').split('\t')
            if len(parts) < 3 or parts[0].startswith('00-database') or parts[0].startswith('00database'):
                continue
            ents.append((num(parts[1]), num(parts[2]), parts[0]))
    ents = sorted(set(ents))
    seen = set()
    out = []
    for off, ln, head in ents:
        if off in seen:
            continue
        seen.add(off)
        out.append((head, data[off:off + ln].decode('utf-8', 'replace')))
    return out


def dict_plain(path, **_):
    out = []
    for _head, text in dict_entries(path):
        out += paragraphs(text)
    return out


_GCIDE_QUOTE = re.compile(r'"([^"]{12,}?)"\s*--\s*([A-Z][^.\n]{0,60}\.)', re.S)


def _gcide_markup(s):
    s = re.sub(r'\{([^{}]*)\}', r'\1', s)
    s = re.sub(r'\[(1913 Webster|Webster 1913 Suppl\.|PJC|Century Dict\.|Chambers 1728|'
               r'WordNet 1\.5|RN|f|Obs\.|R\.|Colloq\.)\]', '', s)
    s = re.sub(r'\[(\.|=|"|\^|-|`|~|a\^|e\^)?[a-z]{0,2}\]', '', s)
    return s


def gcide_quotes(path, **_):
    out = []
    for _head, text in dict_entries(path):
        t = _gcide_markup(text)
        for m in _GCIDE_QUOTE.finditer(t):
            q = join_wrapped(m.group(1).split('\n'))
            if len(q.split()) >= 4:
                out.append(q)
    return out


def gcide_defs(path, **_):
    out = []
    for _head, text in dict_entries(path):
        t = _gcide_markup(text)
        t = _GCIDE_QUOTE.sub('', t)
        for p in paragraphs(t):
            if re.match(r'^[\w\'" -]+\s\\', p) or p.startswith('Syn:') or p.startswith('Note:'):
                # headword line "Ab \Ab\ (pron), n. [etym]": keep only its definition tail
                p = re.sub(r'^.*?\\[^\\]*\\\s*(\([^)]*\))?[^.]*\.(\s*\[[^\]]*\])?', '', p, count=1)
            p = re.sub(r'^\s*(\d+\.|\([a-z]\))\s*', '', p)
            p = re.sub(r'\s*\((\w+\.\s*)+\)\s*', ' ', p)
            p = re.sub(r'\s--\s[\w`*"\'-]+, [a-z]+\.$', '', p)   # derived-form tails
            p = re.sub(r'\s+', ' ', p).strip(' -')
            if len(p.split()) >= 4 and not p.startswith('Syn:'):
                out.append(p)
    return out


# --------------------------------------------------------------------------
# WordNet database files (data.noun ...): usage examples and glosses

def _wn_gloss(line):
    if not line or line[0] == ' ' or '|' not in line:
        return None
    return line.split('|', 1)[1].strip()


def wordnet_examples(path, **_):
    out = []
    for ln in read_text(path).split('\n'):
        g = _wn_gloss(ln)
        if g:
            out += [m for m in re.findall(r'"([^"]+)"', g) if len(m.split()) >= 2]
    return out


def wordnet_glosses(path, **_):
    out = []
    for ln in read_text(path).split('\n'):
        g = _wn_gloss(ln)
        if g:
            d = re.sub(r'"[^"]*"', '', g)
            d = re.sub(r'[;\s]+$', '', re.sub(r'(;\s*)+', '; ', d)).strip('; ')
            if d:
                out.append(d[0].upper() + d[1:] + ('' if d.endswith('.') else '.'))
    return out


# --------------------------------------------------------------------------
# R serialization (.rdb/.rdx lazy-load databases, .rds)

class RNull:
    pass


class RSym(str):
    pass


class RVec(list):
    """An R vector; .attrs holds its attributes (names, class, ...)."""
    def __init__(self, it=(), rtype=None):
        super().__init__(it)
        self.rtype = rtype
        self.attrs = {}


class RUnserialize:
    def __init__(self, data):
        self.d = data
        self.p = 0
        self.refs = []

    def _int(self):
        v = struct.unpack_from('>i', self.d, self.p)[0]
        self.p += 4
        return v

    def _len(self):
        n = self._int()
        if n == -1:
            hi, lo = self._int(), self._int()
            n = (hi << 32) + lo
        return n

    def _str(self, n):
        s = self.d[self.p:self.p + n]
        self.p += n
        return s

    def run(self):
        fmt = self._str(2)
        if fmt != b'X\n':
            raise ValueError('only XDR R serialization is supported, got %r' % fmt)
        ver = self._int()
        self._int()
        self._int()
        if ver == 3:
            self._str(self._int())      # native encoding
        elif ver != 2:
            raise ValueError('R serialization version %d' % ver)
        return self.item()

    def _attrs_into(self, obj):
        al = self.item()
        if isinstance(obj, RVec) and isinstance(al, RVec) and al.rtype == 'pairlist':
            for k, v in zip(al.attrs.get('tags', []), al):
                obj.attrs[k] = v

    def item(self):
        flags = self._int()
        t = flags & 0xFF
        has_attr = flags & (1 << 9)
        has_tag = flags & (1 << 10)
        if t in (254, 253, 252, 251, 250, 242, 241):
            return RNull()
        if t == 255:
            i = flags >> 8
            if i == 0:
                i = self._int()
            return self.refs[i - 1]
        if t in (247, 248, 249):           # persistent/package/namespace
            self._int()
            v = RVec([self.item() for _ in range(self._int())], 'ref')
            self.refs.append(v)
            return v
        if t == 1:                          # symbol
            s = RSym(self.item() or '')
            self.refs.append(s)
            return s
        if t in (2, 6, 3, 5, 17, 239, 240):  # pairlists (iterative on CDR)
            res = RVec([], 'pairlist')
            tags = []
            while True:
                attr = self.item() if has_attr else None
                tag = self.item() if has_tag else None
                res.append(self.item())
                tags.append(str(tag) if tag is not None and not isinstance(tag, RNull) else '')
                if attr is not None:
                    pass
                flags = self._int()
                t = flags & 0xFF
                has_attr = flags & (1 << 9)
                has_tag = flags & (1 << 10)
                if t not in (2, 6, 3, 5, 17, 239, 240):
                    self.p -= 4
                    self.item()             # the final CDR (normally NULL)
                    break
            res.attrs['tags'] = tags
            return res
        if t == 4:                          # environment
            env = RVec([], 'env')
            self.refs.append(env)
            self._int()
            for _ in range(4):
                env.append(self.item())
            return env
        if t == 9:                          # CHARSXP
            n = self._int()
            if n == -1:
                return None
            b = self._str(n)
            if flags & (1 << 14):           # LATIN1_MASK (levels 4) shifted by 12
                return b.decode('latin-1')
            return b.decode('utf-8', 'replace')
        if t in (10, 13):
            n = self._len()
            v = RVec(struct.unpack_from('>%di' % n, self.d, self.p), 'int')
            self.p += 4 * n
        elif t == 14:
            n = self._len()
            v = RVec(struct.unpack_from('>%dd' % n, self.d, self.p), 'double')
            self.p += 8 * n
        elif t == 15:
            n = self._len()
            v = RVec(struct.unpack_from('>%dd' % (2 * n), self.d, self.p), 'complex')
            self.p += 16 * n
        elif t == 16:
            n = self._len()
            v = RVec([self.item() for _ in range(n)], 'character')
        elif t in (19, 20):
            n = self._len()
            v = RVec([self.item() for _ in range(n)], 'list')
        elif t == 24:
            n = self._len()
            v = RVec([self._str(n)], 'raw')
        elif t == 25:
            v = RVec([], 's4')
        elif t in (7, 8):
            v = RVec([self._str(self._int()).decode()], 'builtin')
        elif t == 22:
            v = RVec([], 'extptr')
            self.refs.append(v)
            self.item()
            self.item()
        elif t == 23:
            v = RVec([], 'weakref')
            self.refs.append(v)
        elif t == 238:                      # ALTREP
            info = self.item()
            state = self.item()
            attr = self.item()
            v = self._altrep(info, state)
            if isinstance(attr, RVec) and attr.rtype == 'pairlist':
                for k, a in zip(attr.attrs.get('tags', []), attr):
                    v.attrs[k] = a
            return v
        else:
            raise ValueError('unsupported R SEXP type %d at %d' % (t, self.p))
        if has_attr:
            self._attrs_into(v)
        return v

    def _altrep(self, info, state):
        cls = str(info[0]) if isinstance(info, RVec) and info else ''
        if cls == 'compact_intseq':
            n, start, step = int(state[0]), int(state[1]), int(state[2])
            return RVec([start + i * step for i in range(n)], 'int')
        if cls == 'compact_realseq':
            n, start, step = int(state[0]), state[1], state[2]
            return RVec([start + i * step for i in range(n)], 'double')
        if cls.startswith('wrap_'):
            return state[0] if isinstance(state, RVec) and state else RVec()
        if cls == 'deferred_string':
            src = state[0] if isinstance(state, RVec) and state else RVec()
            return RVec([None if x is None else (str(int(x)) if float(x).is_integer() else repr(x))
                         for x in src], 'character')
        raise ValueError('unsupported ALTREP class %r' % cls)


def r_unserialize(data):
    return RUnserialize(data).run()


def r_unpack_entry(blob):
    """An entry of an .rdb file or a whole .rdx: 4-byte length + zlib data
    (type 'Z' xz and '2' bzip2 when a 5th type byte follows)."""
    n = struct.unpack_from('>I', blob, 0)[0]
    if blob[4:5] in (b'Z', b'2', b'0') and len(blob) > 5:
        kind = blob[4:5]
        if kind == b'Z':
            import lzma
            return lzma.decompress(blob[5:])[:n]
        if kind == b'2':
            import bz2
            return bz2.decompress(blob[5:])[:n]
        if kind == b'0':
            return blob[5:5 + n]
    return zlib.decompress(blob[4:])[:n]


def rdb_objects(rdx_path):
    """{name: R object} of a lazy-load database (foo.rdx + foo.rdb)."""
    raw = read_bytes(rdx_path)          # gzip file, or length + zlib
    idx = r_unserialize(raw if raw[:2] == b'X\n' else r_unpack_entry(raw))
    names = idx.attrs.get('names', [])
    top = dict(zip(names, idx))
    variables = top['variables']
    with open(rdx_path[:-4] + '.rdb', 'rb') as f:
        rdb = f.read()
    out = {}
    for name, pos in zip(variables.attrs.get('names', []), variables):
        off, ln = int(pos[0]), int(pos[1])
        out[name] = r_unserialize(r_unpack_entry(rdb[off:off + ln]))
    return out


def _r_text_columns(obj):
    """Character vectors of an R object: itself, or the columns of a data frame
    named text/line/... (a data frame's 'text' column, or one character column)."""
    if isinstance(obj, RVec) and obj.rtype == 'character':
        return [obj]
    if isinstance(obj, RVec) and obj.rtype == 'list':
        names = list(obj.attrs.get('names', []))
        for want in ('text', 'line', 'sentence', 'lines'):
            if want in names:
                return [obj[names.index(want)]]
    return []


def rdata(path, objects=None, **_):
    """Text of an R package's data/Rdata.rdx: each selected object (character
    vector of hard-wrapped lines, or a data frame with a text column) is
    joined into paragraphs at empty elements."""
    objs = rdb_objects(path)
    out = []
    for name in sorted(objs):
        if objects is not None and name not in objects:
            continue
        for col in _r_text_columns(objs[name]):
            out += paragraphs('\n'.join('' if x is None else x for x in col))
    return out


# --------------------------------------------------------------------------
# SWORD zText modules (ot/nt .bzs block index, .bzv verse index, .bzz zlib blocks)

_OSIS_DROP = re.compile(r'<(note|title|rdg|reference)\b[^>]*?(?<!/)>.*?</\1>', re.S)


def osis_strip(s):
    s = _OSIS_DROP.sub('', s)
    s = re.sub(r'<[^>]*>', '', s)
    return html.unescape(s)


def sword_verses(bzs_path):
    """Verse texts (markup stripped) of one testament of a zText module."""
    base = bzs_path[:-4]
    with open(base + '.bzs', 'rb') as f:
        bzs = f.read()
    with open(base + '.bzv', 'rb') as f:
        bzv = f.read()
    with open(base + '.bzz', 'rb') as f:
        bzz = f.read()
    blocks = {}
    out = []
    for k in range(len(bzv) // 10):
        blk, off, size = struct.unpack_from('<IIH', bzv, 10 * k)
        if size == 0:
            out.append('')          # empty slot (book/chapter heading or missing verse)
            continue
        if blk not in blocks:
            boff, bsize, _usize = struct.unpack_from('<III', bzs, 12 * blk)
            blocks[blk] = zlib.decompress(bzz[boff:boff + bsize])
        out.append(osis_strip(blocks[blk][off:off + size].decode('utf-8', 'replace')))
    return out


def sword_ztext(path, **_):
    """One paragraph per chapter: verses between empty index slots joined."""
    out, cur = [], []
    for v in sword_verses(path):
        v = v.strip()
        if v:
            cur.append(v)
        elif cur:
            out.append(' '.join(cur))
            cur = []
    if cur:
        out.append(' '.join(cur))
    return out


# --------------------------------------------------------------------------
# game text: Cataclysm: Dark Days Ahead (JSON + gettext catalogs), Endless Sky
# (its data/*.txt), Naev (Lua _("...") strings, XML descriptions), FreeOrion
# (stringtables/en.txt). Placeholders the games fill at run time are expanded
# from the game's own tables where it has them (Cataclysm's talk tags) or from
# one fixed table per game (a name, a ship, a planet), so that a line reads as
# the player sees it; a line whose placeholder has no expansion is dropped
# rather than kept with markup in it.

_FMT = re.compile(r'%(\d+\$)?[-+ #0-9.]*[sdifgxXcu]')


def _has_fmt(s):
    return bool(_FMT.search(s.replace('%%', '')))


def _mo_catalog(path):
    """{msgid: msgstr} of a .mo file: context stripped (first in sorted order
    wins), plural entries by their singular form, header and untranslated
    entries left out."""
    with open(path, 'rb') as f:
        cat = gettext.GNUTranslations(f)._catalog
    out = {}
    for k in sorted(cat, key=lambda x: (x, 0) if isinstance(x, str) else (x[0], x[1])):
        v = cat[k]
        if isinstance(k, tuple):
            if k[1] != 0:
                continue
            k = k[0]
        k = k.split('\x04', 1)[-1]
        if k and isinstance(v, str) and v.strip() and k not in out:
            out[k] = v
    return out


# Cataclysm. Kinds: 'dialogue' (talk topics, mission dialogue, NPC chat tags),
# 'notes' (written by people in the game world: notes, memos, lab notes,
# letters, fliers, graffiti, radio logs), 'descriptions' (everything else with
# prose: items, monsters, terrain, mutations, professions, other snippets).
_CDDA_NOTES = re.compile(r'note|mess|memo|letter|diary|journal|^log_|flier|graffiti|'
                         r'radio_archive|seal_order', re.I)
_CDDA_PROSE_KEYS = set('description desc detailed_definition info message messages msg text '
                       'job_description signage success failure apply_message sound '
                       'death_msg hostile_msg friendly_msg'.split())
_CDDA_COLOR = re.compile(r'</?color(_\w+)?>|</?(good|bad|info|neutral|helpful|warning|'
                         r'highlight|em|stat|header|mixed|yellow|red|green|blue|white)>', re.I)
_CDDA_TAG = re.compile(r'<([a-z_!?]+|[a-z_]+:[^<>]*)>', re.I)
_CDDA_SKIP_KEYS = set('id type category copy-from topic name condition rows picture'.split())


def _cdda_str(v):
    """A Cataclysm translatable string: "..." or {"str": "..."} (str_sp too)."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        for k in ('str', 'str_sp'):
            if isinstance(v.get(k), str):
                return v[k]
    return None


def _cdda_leaves(v, out, keys=None):
    """Prose strings under v: every string of two words or more (ids and
    condition names have none), comments ('//' keys) skipped; with keys, only
    values of those keys are taken, searched for at any depth."""
    if isinstance(v, dict):
        s = _cdda_str(v)
        if s is not None and keys is None:
            if len(s.split()) >= 2:
                out.append(s)
            return
        for k in sorted(v):
            if k.startswith('//') or k in _CDDA_SKIP_KEYS:
                continue
            if keys is not None and k in keys:
                _cdda_leaves(v[k], out)
            else:
                _cdda_leaves(v[k], out, keys)
    elif isinstance(v, list):
        for x in v:
            _cdda_leaves(x, out, keys)
    elif isinstance(v, str) and keys is None and len(v.split()) >= 2:
        out.append(v)


def cdda_entries(path):
    """(kind, text) of one Cataclysm JSON file, in file order."""
    data = json.loads(read_text(path))
    objs = data if isinstance(data, list) else [data]
    out = []
    for o in objs:
        if not isinstance(o, dict):
            continue
        t = o.get('type')
        got = []
        if t == 'talk_topic':
            _cdda_leaves(o, got)
            kind = 'dialogue'
        elif t == 'mission_definition':
            _cdda_leaves(o.get('dialogue', {}), got)
            out += [('dialogue', g) for g in got]
            got = []
            _cdda_leaves(o, got, {'description'})
            kind = 'descriptions'
        elif t == 'snippet':
            cat = str(o.get('category', ''))
            _cdda_leaves(o.get('text', []), got)
            kind = ('dialogue' if cat.startswith('<') else
                    'notes' if _CDDA_NOTES.search(cat) else 'descriptions')
        else:
            _cdda_leaves(o, got, _CDDA_PROSE_KEYS)
            kind = 'descriptions'
        out += [(kind, g) for g in got if g.strip()]
    return out


def _cdda_base(path):
    """The game's data directory (.../cataclysm-dda/) above a JSON file, or
    the package root above .../usr/share/locale/ for a catalog."""
    i = path.rfind('/cataclysm-dda/')
    if i >= 0:
        return path[:i + len('/cataclysm-dda/')]
    i = path.rfind('/usr/share/locale/')
    if i >= 0:
        return path[:i] + '/usr/share/games/cataclysm-dda/'
    raise ValueError('not inside a cataclysm-dda package: %s' % path)


_CDDA_TAGS = {}


def cdda_tags(base):
    """{'<tag>': [expansions]} from the game's talk tags (snippets whose
    category is a <tag>), as the game fills them into dialogue."""
    if base not in _CDDA_TAGS:
        tags = {}
        for rel in ('json/npcs/talk_tags.json', 'json/npcs/talk_tags_chat.json'):
            try:
                data = json.loads(read_text(base + rel))
            except FileNotFoundError:
                continue
            for o in data if isinstance(data, list) else []:
                cat = o.get('category', '') if isinstance(o, dict) else ''
                if o.get('type') == 'snippet' and cat.startswith('<'):
                    alts = [_cdda_str(x.get('text') if isinstance(x, dict) and 'text' in x
                                      else x) for x in o.get('text', [])]
                    tags.setdefault(cat, []).extend(a for a in alts if a)
        _CDDA_TAGS[base] = tags
    return _CDDA_TAGS[base]


def _pick(seq, *key):
    d = hashlib.sha256('\x1f'.join(key).encode()).digest()
    return seq[int.from_bytes(d[:4], 'big') % len(seq)]


def cdda_render(s, tags, translate=None, depth=0):
    """A game string as shown: colour tags removed, <tag> replaced by one of
    its expansions (chosen by a hash of the string: deterministic), translated
    through `translate` for a translation; None when a tag has no expansion,
    or a printf placeholder is left."""
    s = _CDDA_COLOR.sub('', s)
    if _has_fmt(s):
        return None
    bad = []

    def sub(m):
        alts = tags.get('<%s>' % m.group(1))
        if not alts or depth > 3:
            bad.append(m.group(0))
            return ''
        e = _pick(alts, s, m.group(0), str(m.start()))
        if translate is not None:
            e = translate(e)
            if e is None:
                bad.append(m.group(0))
                return ''
        r = cdda_render(e, tags, translate, depth + 1)
        if r is None:
            bad.append(m.group(0))
            return ''
        return r
    r = _CDDA_TAG.sub(sub, s)
    return None if bad else r


# Game text as people would type it (issue 15): the games mark actions as
# *emotes* ("*bzzt*", "*为您效劳*") and the Chinese catalogs often put ASCII
# punctuation after Han characters, where a Chinese input method types the
# full-width mark. A model trained on them proposed "*" after "谢谢你的" and
# "," after "订个" (docs/RESULTS.md, pipeline-2 retraining). Emote spans are
# dropped (emphasis inside an English sentence keeps its word); in Chinese,
# , . ! ? ; : after a Han character (and not before a digit or letter: "1.5",
# "v2.0", "http:" stay) become ， 。 ！ ？ ； ：, and "..." after Han "……".
_EMOTE = re.compile(r'(?<![0-9A-Za-z])\*([^*\n]{1,60})\*(?![0-9A-Za-z])')
_EDGE = set('.!?"\u201c\u201d\u300c\u300d()\uff08\uff09\u3002\uff01\uff1f')
_HAN_ASCII = re.compile(r'(?<=[\u3400-\u9fff])(\.\.\.|[,.!?;:])(?![0-9A-Za-z])')
_FULLWIDTH = {',': '，', '.': '。', '!': '！', '?': '？', ';': '；', ':': '：',
              '...': '……'}


def game_clean(s, lang='en'):
    """One paragraph of game text without emotes, in Chinese with the
    full-width punctuation an input method types; '' if nothing is left."""
    def emote(m):
        before, after = s[:m.start()].rstrip(), s[m.end():].lstrip()
        if lang == 'zh' or not before or not after or before[-1] in _EDGE or after[0] in _EDGE:
            return ''                 # an action between sentences: "*bzzt* Hello."
        return m.group(1)             # emphasis inside one: "it *is* late"
    t = _EMOTE.sub(emote, s)
    if t != s:                        # close the gap an emote leaves
        s = re.sub(r'\s+', ' ', t).strip()
    if lang == 'zh':
        s = _HAN_ASCII.sub(lambda m: _FULLWIDTH[m.group(1)], s)
        s = re.sub(r'(?<=[\uff0c\u3002\uff01\uff1f\uff1b\uff1a\u2026]) (?=[\u3400-\u9fff])', '', s)
    return s


def _game_paragraphs(text, lang='en'):
    return [p for p in (game_clean(x, lang) for x in paragraphs(text)) if p]


def cdda_json(path, select='dialogue', **_):
    """English text of one Cataclysm JSON file of the kind `select`."""
    tags = cdda_tags(_cdda_base(path))
    out = []
    for kind, s in cdda_entries(path):
        if kind == select:
            r = cdda_render(s, tags)
            if r:
                out += _game_paragraphs(r)
    return out


_CDDA_INDEX = {}


def cdda_index(base, dirs):
    """[(kind, English string)] of every JSON file under base/<dirs>, in
    sorted path order, each string once (its first kind)."""
    key = (base, tuple(dirs))
    if key not in _CDDA_INDEX:
        seen, out = set(), []
        for d in dirs:
            files = []
            for r, ds, fs in os.walk(base + d):
                ds.sort()
                files += [os.path.join(r, f) for f in sorted(fs) if f.endswith('.json')]
            for f in sorted(files):
                for kind, s in cdda_entries(f):
                    if s not in seen:
                        seen.add(s)
                        out.append((kind, s))
        _CDDA_INDEX[key] = out
    return _CDDA_INDEX[key]


def cdda_mo(path, select='dialogue', second=None, dirs=('json', 'mods'), **_):
    """A translation of the Cataclysm strings of kind `select`: msgstr of the
    .mo at path, in the English text's order (so a block of it is a stretch of
    one conversation), and where `second` (another .mo, relative to the
    package's locale directory, e.g. zh_TW) translates the same string
    differently, that translation on the next line: both translations of a
    string fall into the same block and so the same split."""
    base = _cdda_base(path)
    cats = [_mo_catalog(path)]
    if second:
        loc = path[:path.rindex('/locale/') + len('/locale/')]
        cats.append(_mo_catalog(loc + second))
    tags = cdda_tags(base)
    out = []
    for kind, en in cdda_index(base, dirs):
        if kind != select:
            continue
        seen = set()
        for cat in cats:
            zh = cat.get(en)
            if zh is None:
                continue
            r = cdda_render(zh, tags, translate=cat.get)
            if r and r not in seen:
                seen.add(r)
                out += _game_paragraphs(r, 'zh')
    return out


# Endless Sky data/*.txt: a tree of tab-indented lines; text is in `...` or
# "..." tokens. 'dialogue': conversation and dialog text and hail phrases;
# 'descriptions': planet, outfit and ship description and spaceport text.
_ES_TOKEN = re.compile(r'`([^`]*)`|"([^"]*)"|(\S+)')
_ES_FILL = {'first': 'Alex', 'last': 'Reyes', 'ship': 'Tern', 'planet': 'New Boston',
            'system': 'Sol', 'origin': 'New Boston', 'destination': 'Earth',
            'stopovers': 'Earth', 'waypoints': 'Sol', 'npc': 'Mockingbird', 'date': 'Monday',
            'day': 'Monday', 'commodity': 'food', 'cargo': 'food', 'tons': 'ten tons',
            'passengers': 'two passengers', 'fare': 'two passengers', 'bunks': 'two bunks',
            'payment': '50,000 credits', 'fine': '10,000 credits'}


def _fill(s, table):
    bad = []

    def sub(m):
        v = table.get(m.group(1))
        if v is None:
            bad.append(m.group(1))
            return ''
        return v
    r = re.sub(r'<([a-z ]+)>', sub, s)
    return None if bad or _has_fmt(r) else r


def endless_sky(path, select='dialogue', **_):
    out = []
    stack = []                        # (indent, keyword) of the open nodes
    for raw in read_text(path).split('\n'):
        if not raw.strip() or raw.lstrip().startswith('#'):
            continue
        ind = len(raw) - len(raw.lstrip('\t'))
        toks = [(m.group(1) if m.group(1) is not None else m.group(2), m.group(3))
                for m in _ES_TOKEN.finditer(raw.strip())]
        while stack and stack[-1][0] >= ind:
            stack.pop()
        first_word = toks[0][1] if toks and toks[0][1] is not None else None
        ancestors = [k for _i, k in stack]
        if first_word is not None:
            stack.append((ind, first_word))
        text, kind = None, None
        if first_word in ('description', 'spaceport') and len(toks) == 2 and toks[1][0]:
            text, kind = toks[1][0], 'descriptions'
        elif first_word == 'dialog' and len(toks) == 2 and toks[1][0]:
            text, kind = toks[1][0], 'dialogue'
        elif first_word is None and len(toks) == 1 and toks[0][0]:
            text = toks[0][0]
            if 'conversation' in ancestors or 'dialog' in ancestors:
                kind = 'dialogue'
            elif ancestors[-1:] == ['word'] and 'phrase' in ancestors and \
                    len(text.split()) >= 3:
                kind = 'dialogue'
            elif ancestors[-1:] in (['description'], ['spaceport']):
                kind = 'descriptions'
        if kind == select and text:
            r = _fill(text.strip(), _ES_FILL)
            r = game_clean(r) if r else r
            if r:
                out.append(r)
    return out


# Naev: missions and events are Lua whose player-visible strings are gettext
# calls _("..."), _('...'), _([[...]]); the universe's XML holds <description>.
_NAEV_STR = re.compile(r'\b_\(\s*(?:"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'|'
                       r'\[(=*)\[(.*?)\]\3\])\s*\)', re.S)
_LUA_ESC = {'n': '\n', 't': ' ', '"': '"', "'": "'", '\\': '\\'}


def naev_lua(path, **_):
    out = []
    for m in _NAEV_STR.finditer(read_text(path)):
        if m.group(4) is not None:
            s = m.group(4)
        else:
            s = m.group(1) if m.group(1) is not None else m.group(2)
            s = re.sub(r'\\(.)', lambda e: _LUA_ESC.get(e.group(1), e.group(1)), s)
        if _has_fmt(s) or re.search(r'[{}]|#[a-z0-9]', s):
            continue                  # format placeholders, colour codes: not as seen
        out += _game_paragraphs(s)
    return out


def xml_tags(path, tags=('description',), **_):
    """Text of the given elements of an XML file (entities decoded)."""
    out = []
    t = read_text(path)
    for tag in tags:
        for m in re.finditer(r'<%s(?:\s[^>]*)?>(.*?)</%s>' % (tag, tag), t, re.S):
            s = html.unescape(re.sub(r'<[^>]*>', '', m.group(1)))
            if not _has_fmt(s):
                out += paragraphs(s)
    return out


def stringtable(path, keys=r'_DESC$', **_):
    """FreeOrion stringtable values whose key matches `keys`: a KEY line, then
    one value line or a '''...''' block; [[KEY]] references replaced by that
    key's one-line value (a value with an unknown one is dropped), markup
    tags removed."""
    lines_ = read_text(path).lstrip('\ufeff').split('\n')
    table, order, i = {}, [], 1             # line 0 names the language
    while i < len(lines_):
        k = lines_[i].strip()
        i += 1
        if not k or k.startswith('#'):
            continue
        if i >= len(lines_):
            break
        v = lines_[i]
        i += 1
        if v.startswith("'''"):
            buf = [v[3:]]
            while not buf[-1].rstrip().endswith("'''") and i < len(lines_):
                buf.append(lines_[i])
                i += 1
            v = '\n'.join(buf).rstrip()[:-3] if buf[-1].rstrip().endswith("'''") else ''
        if k not in table:
            order.append(k)
        table[k] = v
    rx = re.compile(keys)
    out = []
    for k in order:
        if not rx.search(k):
            continue
        bad = []

        def sub(m):
            v = table.get(m.group(1).split()[-1])
            if v is None or '\n' in v or '[[' in v:
                bad.append(m.group(0))
                return ''
            return v
        v = re.sub(r'\[\[([^\[\]]+)\]\]', sub, table[k])
        v = re.sub(r'<[^<>]*>', '', v)
        if bad or '%' in v:
            continue
        out += paragraphs(v)
    return out


# Knowledge from the large n-gram models (issue 15): phrases sampled from
# libime's language model of modern web Chinese (scripts/corpus/ngram/
# libime_sample.cc says how). The sampler is C++ against Debian's libimecore
# (libimecore-dev, libfcitx5utils-dev); it is compiled once into the cache
# beside the unpacked package. `path` is the package's zh_CN.lm, whose
# .predict table sits beside it.
_NGRAM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ngram')


def libime_lm(path, bytes=2000000, seed=1, **_):
    src = os.path.join(_NGRAM_DIR, 'libime_sample.cc')
    with open(src, 'rb') as f:
        tag = hashlib.sha256(f.read()).hexdigest()[:12]
    exe = os.path.join(os.path.dirname(path), 'libime_sample.' + tag)
    if not os.path.exists(exe):
        try:
            cflags = subprocess.run(['pkg-config', '--cflags', '--libs', 'Fcitx5Utils'], check=True,
                                    stdout=subprocess.PIPE, text=True).stdout.split()
            subprocess.run(['g++', '-std=c++17', '-O2', '-I/usr/include/LibIME', src, '-o', exe,
                            '-lIMECore'] + cflags, check=True, stderr=subprocess.PIPE, text=True)
        except (OSError, subprocess.CalledProcessError) as e:
            err = getattr(e, 'stderr', '') or str(e)
            raise RuntimeError('cannot build the libime sampler (apt-get install libimecore-dev '
                               'libfcitx5utils-dev pkg-config g++): %s' % err[-300:])
    p = subprocess.run([exe, path, str(int(bytes)), str(int(seed))], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode('utf-8', 'replace')[-300:])
    return p.stdout.decode('utf-8').split('\n')[:-1]


EXTRACTORS = {
    'plain': plain, 'lines': lines, 'fortune': fortune, 'html': html_text, 'xml': html_text,
    'rst': rst, 'roff': roff, 'mail': mail, 'brown': brown, 'json': json_text, 'mo': mo,
    'po': po, 'dict': dict_plain, 'gcide_quotes': gcide_quotes, 'gcide_defs': gcide_defs,
    'wordnet_examples': wordnet_examples, 'wordnet_glosses': wordnet_glosses,
    'rdata': rdata, 'sword': sword_ztext, 'cdda_json': cdda_json, 'cdda_mo': cdda_mo,
    'endless_sky': endless_sky, 'naev_lua': naev_lua, 'xml_tags': xml_tags,
    'stringtable': stringtable, 'libime_lm': libime_lm,
}


# --------------------------------------------------------------------------
# cleaning: applied to every extracted paragraph

_CTRL = re.compile(r'[\x00-\x08\x0b-\x1f\x7f\u200b\u200e\u200f\u202a-\u202e\u2060\ufeff\ufffd]')
_CODE_START = re.compile(
    r'^(\$ |# |#include|#define|#!|>>>|\.\.\.\s|def |class \w+[(:]|import |from \w+ import|'
    r'return\b|if \(|for \(|while \(|static |struct \w+ \{|typedef |void |int \w+\(|'
    r'sudo |apt(-get)? |echo |export |\w+=\S|<\?|</?\w+[ >/]|\{|\}|//|/\*|\*/|@@|[-+]{3} )')
_EMAIL = re.compile(r'[\w.+-]+@[\w-]+\.[\w.-]+')
_SYMBOLS = set('{}[]<>=;|\\/_*#$@^~`')


def clean_line(s, lang='en'):
    """Normalize one paragraph; return '' when it is markup, code or a table row."""
    s = _ANSI.sub('', s)
    s = unicodedata.normalize('NFC', s)
    s = _CTRL.sub(' ', s)
    s = s.replace('\u00a0', ' ').replace('\u3000', ' ' if lang == 'en' else '\u3000')
    s = re.sub(r'\s+', ' ', s).strip()
    if not s:
        return ''
    if _CODE_START.match(s):
        return ''
    n = len(s)
    letters = sum(1 for c in s if c.isalpha())
    if letters < 2 or letters < 0.5 * n:
        return ''
    sym = sum(1 for c in s if c in _SYMBOLS)
    if sym > 0.06 * n + 1:
        return ''
    if s.count('  ') or s.count('\t'):
        return ''
    if _EMAIL.search(s) or re.match(r'^:[^:\s][^:]*:', s):
        return ''              # credits/addresses, field lists, jargon headword lines
    if lang == 'en' and n < 12 and ' ' not in s:
        return ''              # lone words: menu labels, headings
    if re.search(r'\(\);?$|;$|\)\s*\{$|^\w+\(.*\)$', s):
        return ''
    if lang == 'zh' and not _CJK.search(s):
        return ''              # keep Chinese corpora Chinese (English mixed in is fine)
    return s
