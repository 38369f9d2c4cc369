/* cmd_tokenizer.c - `laya tokenizer train|encode|decode|info`.
 *
 *   train  [--vocab 8192] [-o models/tokenizer.tok] FILES...
 *   encode --tok FILE IN.txt OUT.tokens   (token-stream format: tok_stream.h)
 *   decode --tok FILE IN.tokens           (text on stdout)
 *   info   --tok FILE [TEXT.txt]          (vocabulary; bytes per token of TEXT)
 * Encoding streams the input in blocks, cutting each at tok_tail_start so
 * the tokens equal those of encoding the whole file at once. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tok/tok.h"
#include "tok/tok_stream.h"
#include "util/file.h"

enum { BLOCK = 4 << 20 };

/* Each subcommand's grammar and what it does: `laya tokenizer SUB --help`. */
static const struct {
    const char *name, *usage, *about;
} subs[] = {
    {"train", "laya tokenizer train [--vocab 8192] [-o models/tokenizer.tok] FILES...",
     "Learns byte-level BPE merges from the text FILES (UTF-8 or not) and writes the\n"
     "tokenizer. --vocab is the number of ids (256 bytes, the specials, the merges).\n"
     "Progress goes to stderr on a terminal."},
    {"encode", "laya tokenizer encode --tok FILE [--bos-every N] IN.txt OUT.tokens",
     "Encodes IN.txt into a token stream (the trainer's input), streaming in blocks;\n"
     "the tokens equal those of encoding the whole file at once. The stream starts\n"
     "with BOS (start of a text). --bos-every N also puts a BOS after every Nth\n"
     "line break (after the whole run, when blank lines follow it), so that a model\n"
     "learns how texts start, as every session begins with BOS; the other breaks\n"
     "stay plain, so it also learns text going on after one. Leaving the BOS out\n"
     "gives the stream without the option."},
    {"decode", "laya tokenizer decode --tok FILE IN.tokens",
     "Writes the text of a token stream to stdout (it must have been encoded with FILE)."},
    {"info", "laya tokenizer info --tok FILE [TEXT.txt]",
     "Prints the vocabulary size, longest token and sha256; with TEXT.txt, its bytes\n"
     "per token and the encoding speed."},
};
enum { N_SUBS = sizeof subs / sizeof subs[0] };

static void usage(FILE *f) {
    for (int i = 0; i < N_SUBS; i++) fprintf(f, "%s %s\n", i ? "      " : "usage:", subs[i].usage);
    fprintf(f, "laya tokenizer SUBCOMMAND --help says more about each.\n");
}

/* `laya tokenizer SUB --help`: prints SUB's help and exits 0 (SUB known). */
static void sub_help(const char *sub) {
    for (int i = 0; i < N_SUBS; i++)
        if (!strcmp(subs[i].name, sub)) {
            printf("usage: %s\n%s\n", subs[i].usage, subs[i].about);
            exit(0);
        }
}

static int is_help(const char *a) {
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

static tok *load_tok(const char *path) {
    if (!path) cli_die("missing --tok FILE (a tokenizer written by 'laya tokenizer train')");
    tok *t = NULL;
    char err[512] = "";
    laya_status st = tok_load_file(path, &t, err, sizeof err);
    if (st != LAYA_OK) cli_die("cannot load tokenizer: %s (%s)", err, laya_status_str(st));
    return t;
}

typedef struct {
    double t0, t_merge, last;
    int32_t merges;
    int tty;            /* stderr is a terminal: progress is drawn, else not */
} progress_ctx;

/* One rewritten line on stderr: percent, merges/s and ETA once merging.
 * Only on a terminal: in a log it would be noise. */
static void on_progress(void *vctx, double frac, const char *what) {
    progress_ctx *p = vctx;
    if (!p->tty) return;
    double t = cli_now_s();
    if (t - p->last < 0.25 && frac < 1.0) return;
    p->last = t;
    char rate[96] = "";
    if (frac > 0.2) {
        if (p->t_merge == 0) p->t_merge = t;
        double done = (frac - 0.2) / 0.8 * p->merges, el = t - p->t_merge;
        if (el > 0.5 && done > 0) {
            double eta = el / done * (p->merges - done);
            snprintf(rate, sizeof rate, "  %.0f merges/s  ETA %.0fs", done / el, eta);
        }
    }
    fprintf(stderr, "\r%5.1f%%  %-60.60s%s  [%.0fs]\033[K", 100 * frac, what, rate, t - p->t0);
    fflush(stderr);
}

static int cmd_train_tok(int argc, char **argv) {
    int32_t vocab = TOK_DEFAULT_VOCAB;
    const char *out = "models/tokenizer.tok";
    const char **files = calloc((size_t)argc, sizeof *files);
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            free(files);
            sub_help("train");
        } else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) {
            vocab = (int32_t)cli_int("--vocab", argv[++i], TOK_FIRST_MERGE, TOK_MAX_VOCAB);
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) cli_die("tokenizer train: unknown option '%s'", argv[i]);
        else files[nf++] = argv[i];
    }
    if (!nf) cli_die("tokenizer train: no training files (laya tokenizer train [--vocab N] [-o OUT] FILES...)");
    for (int i = 0; i < nf; i++)
        if (access(files[i], R_OK) != 0) cli_die("cannot read training file '%s': %s", files[i], strerror(errno));
    progress_ctx p = {cli_now_s(), 0, 0, vocab - TOK_FIRST_MERGE, isatty(STDERR_FILENO)};
    tok *t = NULL;
    char err[512] = "";
    laya_status st = tok_train(files, nf, vocab, on_progress, &p, &t, err, sizeof err);
    if (p.tty) fputc('\n', stderr);
    free(files);
    if (st != LAYA_OK) cli_die("training failed: %s (%s)", err, laya_status_str(st));
    if (tok_vocab_size(t) < vocab)
        fprintf(stderr, "note: only %d tokens: no pair left that occurs at least twice\n", (int)tok_vocab_size(t));
    st = tok_save_file(t, out, err, sizeof err);
    if (st != LAYA_OK) cli_die("%s", err);
    fprintf(stderr, "wrote %s: %d tokens in %.1fs\n", out, (int)tok_vocab_size(t), cli_now_s() - p.t0);
    tok_free(t);
    return 0;
}

/* Dies like cli_die, first removing the half-written OUT.tmp: a failed
 * encode (a full disk, an unreadable input) leaves nothing behind. */
_Noreturn static void encode_die(FILE *fo, const char *tmp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
_Noreturn static void encode_die(FILE *fo, const char *tmp, const char *fmt, ...) {
    if (fo) fclose(fo);
    unlink(tmp);
    va_list ap;
    fputs("laya: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* Writes k ids to fo as packed u16, dying with OUT.tmp removed on error. */
static void encode_emit(FILE *fo, const char *tmp, const int32_t *ids, size_t k, uint16_t *packed,
                        uint64_t *n_tok) {
    for (size_t i = 0; i < k; i++) packed[i] = (uint16_t)ids[i];
    if (fwrite(packed, 2, k, fo) != k) encode_die(fo, tmp, "error writing '%s': %s", tmp, strerror(errno));
    *n_tok += k;
}

static int cmd_encode(const char *tokpath, int argc, char **argv) {
    long bos_every = 0;
    int np = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--bos-every")) {
            if (i + 1 >= argc) cli_die("--bos-every needs a number of lines");
            bos_every = cli_int("--bos-every", argv[++i], 1, 1000000000);
        } else argv[np++] = argv[i];
    }
    argc = np;
    if (argc != 2) cli_die("tokenizer encode: want IN.txt OUT.tokens");
    tok *t = load_tok(tokpath);
    const char *in = argv[0], *outp = argv[1];
    /* Everything that can be refused is refused before OUT.tmp exists. */
    FILE *fi;
    size_t total;
    char err[512] = "";
    if (file_fopen_regular(in, "input", &fi, &total, err, sizeof err) != LAYA_OK) cli_die("%s", err);
    uint8_t *buf = malloc(2 * (size_t)BLOCK);
    int32_t *ids = malloc(sizeof *ids * 2 * (size_t)BLOCK);
    uint16_t *packed = malloc(sizeof *packed * 2 * (size_t)BLOCK);
    uint8_t sha[32], hdr[TOK_STREAM_HEADER];
    if (!buf || !ids || !packed || tok_sha256(t, sha) != LAYA_OK) cli_die("out of memory");
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", outp) >= (int)sizeof tmp) cli_die("output path too long: '%s'", outp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *fo = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!fo) {
        if (fd >= 0) close(fd), unlink(tmp);
        cli_die("cannot create '%s': %s", tmp, strerror(errno));
    }
    tok_stream_header(hdr, tok_vocab_size(t), 0, sha);
    uint64_t n_tok = 1;
    uint16_t bos = TOK_BOS;
    if (fwrite(hdr, 1, sizeof hdr, fo) != sizeof hdr || fwrite(&bos, 2, 1, fo) != 1)
        encode_die(fo, tmp, "error writing '%s': %s", tmp, strerror(errno));
    size_t have = 0, consumed = 0;
    long long line_no = 0; /* line breaks seen (--bos-every) */
    int bos_pending = 0;
    double t0 = cli_now_s();
    int tty = isatty(STDERR_FILENO);   /* progress only on a terminal */
    for (;;) {
        size_t got = fread(buf + have, 1, BLOCK, fi);
        if (ferror(fi)) encode_die(fo, tmp, "error reading '%s': %s", in, strerror(errno));
        have += got;
        int eof = got == 0;
        /* Encode what can no longer change; keep the tail for the next block. */
        size_t upto = eof ? have : tok_tail_start(t, buf, have);
        /* Segments end after a line break that a BOS follows (--bos-every);
         * the BOS is written before the next byte, in this block or a later one. */
        size_t a = 0;
        while (a < upto) {
            size_t e = upto;
            int cut = 0;
            for (size_t q = a; bos_every && q < upto; q++) {
                if (buf[q] != '\n') continue;
                if (++line_no % bos_every == 0) {
                    /* after the whole run of breaks: blank lines stay with
                     * the break before them (BPE may have merged "\n\n") */
                    for (e = q + 1; e < upto && buf[e] == '\n'; e++) line_no++;
                    cut = 1;
                    break;
                }
            }
            if (bos_pending) {
                encode_emit(fo, tmp, &(int32_t){TOK_BOS}, 1, packed, &n_tok);
                bos_pending = 0;
            }
            size_t k = tok_encode(t, buf + a, e - a, ids, 2 * (size_t)BLOCK);
            encode_emit(fo, tmp, ids, k, packed, &n_tok);
            bos_pending = cut;
            a = e;
        }
        consumed += upto;
        memmove(buf, buf + upto, have - upto);
        have -= upto;
        if (tty && total > 0)
            fprintf(stderr, "\rencoding %s: %5.1f%%  %.1f MB/s\033[K", in, 100.0 * (double)consumed / (double)total,
                    (double)consumed / 1e6 / (cli_now_s() - t0 + 1e-9));
        if (eof) break;
    }
    fclose(fi);
    tok_stream_header(hdr, tok_vocab_size(t), n_tok, sha);
    if (fflush(fo) != 0 || fseek(fo, 0, SEEK_SET) != 0 || fwrite(hdr, 1, sizeof hdr, fo) != sizeof hdr ||
        fflush(fo) != 0 || ferror(fo))
        encode_die(fo, tmp, "error writing '%s': %s", tmp, strerror(errno));
    if (fclose(fo) != 0) encode_die(NULL, tmp, "error writing '%s': %s", tmp, strerror(errno));
    if (rename(tmp, outp) != 0) encode_die(NULL, tmp, "cannot rename '%s' to '%s': %s", tmp, outp, strerror(errno));
    fprintf(stderr, "%s%s: %zu bytes -> %llu tokens (%.3f bytes/token)%s\n", tty ? "\r" : "", outp, consumed,
            (unsigned long long)n_tok, n_tok > 1 ? (double)consumed / (double)(n_tok - 1) : 0.0, tty ? "\033[K" : "");
    free(buf);
    free(ids);
    free(packed);
    tok_free(t);
    return 0;
}

static int cmd_decode(const char *tokpath, int argc, char **argv) {
    if (argc != 1) cli_die("tokenizer decode: want IN.tokens");
    tok *t = load_tok(tokpath);
    tok_stream s;
    char err[512] = "";
    if (tok_stream_open(argv[0], &s, err, sizeof err) != LAYA_OK) cli_die("%s", err);
    uint8_t sha[32];
    if (tok_sha256(t, sha) != LAYA_OK) cli_die("out of memory");
    if (s.vocab_size != tok_vocab_size(t) || memcmp(sha, s.tok_sha256, 32))
        cli_die("'%s' was encoded with a different tokenizer than '%s'\n  hint: pass the --tok used to encode it",
                argv[0], tokpath);
    enum { STEP = 1 << 16 };
    int32_t *ids = malloc(sizeof *ids * STEP);
    uint8_t *out = malloc((size_t)STEP * 256);
    if (!ids || !out) cli_die("out of memory");
    for (uint64_t a = 0; a < s.n; a += STEP) {
        size_t k = s.n - a < STEP ? (size_t)(s.n - a) : STEP;
        for (size_t i = 0; i < k; i++) ids[i] = s.ids[a + i];
        size_t m = tok_decode(t, ids, k, out, (size_t)STEP * 256);
        if (fwrite(out, 1, m, stdout) != m) cli_die("error writing output: %s", strerror(errno));
    }
    free(ids);
    free(out);
    tok_stream_close(&s);
    tok_free(t);
    return fflush(stdout) ? 1 : 0;
}

static int cmd_info(const char *tokpath, int argc, char **argv) {
    if (argc > 1) cli_die("tokenizer info: want at most one TEXT file");
    tok *t = load_tok(tokpath);
    int32_t V = tok_vocab_size(t);
    size_t longest = 0;
    for (int32_t id = 0; id < V; id++) {
        size_t len;
        tok_bytes(t, id, &len);
        if (len > longest) longest = len;
    }
    uint8_t sha[32];
    if (tok_sha256(t, sha) != LAYA_OK) cli_die("out of memory");
    printf("tokenizer    %s\nvocab        %d (256 bytes, %d special, %d merges)\nlongest      %zu bytes\nsha256       ",
           tokpath, (int)V, TOK_N_SPECIAL, (int)(V - TOK_FIRST_MERGE), longest);
    for (int i = 0; i < 32; i++) printf("%02x", sha[i]);
    printf("\n");
    if (argc == 1) {
        FILE *f;
        size_t n;
        char err[512] = "";
        if (file_fopen_regular(argv[0], "text", &f, &n, err, sizeof err) != LAYA_OK) cli_die("%s", err);
        uint8_t *b = malloc(n + 1);
        int32_t *ids = n < SIZE_MAX / sizeof *ids - 1 ? malloc(sizeof *ids * (n + 1)) : NULL;
        if (!b || !ids) cli_die("out of memory for '%s' (%zu bytes)", argv[0], n);
        if (fread(b, 1, n, f) != n) cli_die("error reading '%s'", argv[0]);
        fclose(f);
        double t0 = cli_now_s();
        size_t k = tok_encode(t, b, (size_t)n, ids, (size_t)n + 1);
        double el = cli_now_s() - t0;
        printf("text         %s: %zu bytes, %zu tokens, %.3f bytes/token (encoded at %.1f MB/s)\n", argv[0], n,
               k, k ? (double)n / (double)k : 0.0, (double)n / 1e6 / (el + 1e-9));
        free(b);
        free(ids);
    }
    tok_free(t);
    return 0;
}

int cmd_tokenizer(int argc, char **argv) {
    if (argc < 2 || is_help(argv[1])) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "train")) return cmd_train_tok(argc - 1, argv + 1);
    if (strcmp(sub, "encode") && strcmp(sub, "decode") && strcmp(sub, "info")) {
        fprintf(stderr, "laya tokenizer: unknown subcommand '%s'\n", sub);
        usage(stderr);
        return 2;
    }
    /* The rest take --tok FILE anywhere, then positional arguments. */
    const char *tokpath = NULL;
    char **pos = calloc((size_t)argc, sizeof *pos);
    int np = 0;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            free(pos);
            sub_help(sub);
        } else if (!strcmp(argv[i], "--tok")) {
            if (i + 1 >= argc) cli_die("--tok needs a FILE");
            tokpath = argv[++i];
        } else if (!strcmp(sub, "encode") && !strcmp(argv[i], "--bos-every")) {
            pos[np++] = argv[i]; /* cmd_encode reads it and its value */
            if (i + 1 < argc) pos[np++] = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) cli_die("tokenizer %s: unknown option '%s'", sub, argv[i]);
        else pos[np++] = argv[i];
    }
    int rc;
    if (!strcmp(sub, "encode")) rc = cmd_encode(tokpath, np, pos);
    else if (!strcmp(sub, "decode")) rc = cmd_decode(tokpath, np, pos);
    else rc = cmd_info(tokpath, np, pos);
    free(pos);
    return rc;
}
