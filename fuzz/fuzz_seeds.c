/* fuzz_seeds.c - writes the seed corpora of fuzz/corpus/ (`make
 * fuzz-seeds`; the output is committed, and the same bytes every run):
 * model/ tiny models in f32, f16, q8 and q4; intent/ two intent heads;
 * tok/ two tokenizers; proto/
 * request streams touching every op and error; session/ edit scripts
 * (fuzz_session.c's format). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "intent/intent.h"
#include "model/model.h"

static void put(const char *dir, const char *name, const void *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) fz_fail("cannot write %s: %s", path, strerror(errno));
}

static void mkdirs(const char *root, const char *sub, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", root, sub);
    if (mkdir(root, 0755) != 0 && errno != EEXIST) fz_fail("mkdir %s", root);
    if (mkdir(out, 0755) != 0 && errno != EEXIST) fz_fail("mkdir %s", out);
}

static void model_seed(const char *dir, const char *name, model_cfg c, qtype q, model_layout layout) {
    size_t n = model_n_params(&c);
    float *p = malloc(n * sizeof *p);
    uint32_t s = 5;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        p[i] = 0.5f * ((float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
    tok *t = fz_tok(c.V);
    uint8_t *blob;
    size_t bn;
    if (!p || !t || tok_save(t, &blob, &bn) != LAYA_OK) fz_fail("out of memory");
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (model_save_quant_layout(path, &c, p, q, 32, layout, blob, bn, "{\"from\":\"fuzz_seeds\"}", err, sizeof err) !=
        LAYA_OK)
        fz_fail("%s", err);
    free(blob);
    tok_free(t);
    free(p);
}

/* An edit script for fuzz_session.c: (kind, count, pos lo, pos hi, bytes...). */
typedef struct {
    uint8_t b[512];
    size_t n;
} script;

static void op(script *s, int kind, int count, int pos, const char *bytes) {
    uint8_t hdr[4] = {(uint8_t)kind, (uint8_t)(count - 1), (uint8_t)(pos & 0xFF), (uint8_t)(pos >> 8)};
    size_t nb = bytes ? (size_t)count : 0;
    if (s->n + 4 + nb > sizeof s->b) return;
    memcpy(s->b + s->n, hdr, 4);
    if (nb) memcpy(s->b + s->n + 4, bytes, nb);
    s->n += 4 + nb;
}

/* An event script for fuzz_pipeline.c: (kind, flags, count, byte), then
 * count % 64 bytes of text for CONTEXT (0), FOCUS (6) and COMMIT (5). */
static void ev(script *s, int kind, int flags, int count, int byte, const char *text) {
    uint8_t hdr[4] = {(uint8_t)kind, (uint8_t)flags, (uint8_t)count, (uint8_t)byte};
    size_t nt = (kind == 0 || kind == 5 || kind == 6) ? (size_t)count % 64 : 0;
    if (s->n + 4 + nt > sizeof s->b) return;
    memcpy(s->b + s->n, hdr, 4);
    for (size_t i = 0; i < nt; i++) s->b[s->n + 4 + i] = (uint8_t)(text && i < strlen(text) ? text[i] : ' ');
    s->n += 4 + nt;
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "fuzz/corpus";
    char dir[400];

    mkdirs(root, "model", dir, sizeof dir);
    model_seed(dir, "f32.safetensors", (model_cfg){.V = 300, .H = 16, .D = 8, .L = 1, .W = 3}, QT_F32,
               MODEL_LAYOUT_ROWS);
    model_seed(dir, "f16.safetensors", (model_cfg){.V = 300, .H = 16, .D = 8, .L = 2, .W = 2}, QT_F16,
               MODEL_LAYOUT_ROWS);
    model_seed(dir, "q8.safetensors", (model_cfg){.V = 260, .H = 32, .D = 32, .L = 1, .W = 3}, QT_Q8,
               MODEL_LAYOUT_ROWS);
    model_seed(dir, "q4.safetensors", (model_cfg){.V = 260, .H = 32, .D = 32, .L = 1, .W = 2}, QT_Q4,
               MODEL_LAYOUT_ROWS);
    model_seed(dir, "q8panel.safetensors", (model_cfg){.V = 260, .H = 32, .D = 32, .L = 1, .W = 3}, QT_Q8,
               MODEL_LAYOUT_PANEL);
    model_seed(dir, "q4panel.safetensors", (model_cfg){.V = 260, .H = 32, .D = 32, .L = 1, .W = 2}, QT_Q4,
               MODEL_LAYOUT_PANEL);

    mkdirs(root, "intent", dir, sizeof dir);
    int hs[2] = {16, 3};
    for (int i = 0; i < 2; i++) {
        intent_head *h;
        char path[512], err[256];
        if (intent_new(hs[i], &h) != LAYA_OK) fz_fail("intent head");
        for (size_t k = 0; k < intent_n_params(hs[i]); k++) h->mem[k] = (float)((k * 7) % 13) / 13.f - 0.5f;
        snprintf(path, sizeof path, "%s/h%d.intent.safetensors", dir, hs[i]);
        if (intent_save(h, path, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", err,
                        sizeof err) != LAYA_OK)
            fz_fail("%s", err);
        intent_free(h);
    }

    mkdirs(root, "tok", dir, sizeof dir);
    int32_t vs[2] = {300, 260};
    for (int i = 0; i < 2; i++) {
        tok *t = fz_tok(vs[i]);
        uint8_t *blob;
        size_t bn;
        if (!t || tok_save(t, &blob, &bn) != LAYA_OK) fz_fail("tokenizer");
        put(dir, i ? "v260.tok" : "v300.tok", blob, bn);
        free(blob);
        tok_free(t);
    }

    mkdirs(root, "proto", dir, sizeof dir);
    static const char *const streams[][2] = {
        {"ops.jsonl", "\x11\x20"
                      "{\"op\":\"suggest\",\"session\":\"s1\",\"context\":\"Best re\",\"k\":3}\n"
                      "{\"op\":\"commit\",\"session\":\"s1\",\"text\":\"Best regards\"}\n"
                      "{\"op\":\"suggest\",\"session\":\"s1\",\"context\":\"Best regards\",\"k\":16}\n"
                      "{\"op\":\"reset\",\"session\":\"s1\"}\n"
                      "{\"op\":\"score\",\"text\":\"the cat sat\"}\n"
                      "{\"op\":\"feedback\",\"session\":\"s1\",\"accepted\":0}\n"
                      "{\"op\":\"suggest\",\"session\":\"s1\",\"context\":\"Best re\",\"k\":3}\n"
                      "{\"op\":\"prefetch\",\"session\":\"s1\"}\n"
                      "{\"op\":\"prefetch\",\"session\":\"s2\"}\n"},
        {"key.jsonl", "\x07\x30"
                      "{\"op\":\"suggest\",\"session\":\"s1\",\"context\":\"Hi Anna, thanks for the upd\",\"k\":3}\n"
                      "{\"op\":\"feedback\",\"session\":\"s1\",\"accepted\":0}\n"
                      "{\"op\":\"key\",\"session\":\"s1\",\"text\":\" \"}\n"
                      "{\"op\":\"key\",\"session\":\"s1\",\"text\":\".\"}\n"
                      "{\"op\":\"key\",\"session\":\"s1\",\"text\":\"\\u00e9\",\"t_ms\":5,\"private\":true}\n"
                      "{\"op\":\"key\",\"session\":\"s1\",\"text\":\"ab\"}\n"},
        {"decide.jsonl", "\x05\x40"
                         "{\"op\":\"suggest\",\"context\":\"I would li\",\"t_ms\":100,\"decide\":true}\n"
                         "{\"op\":\"suggest\",\"context\":\"I would lik\",\"t_ms\":130,\"decide\":true}\n"
                         "{\"op\":\"suggest\",\"context\":\"I would like\",\"t_ms\":160,\"coalesce\":false}\n"
                         "{\"op\":\"feedback\",\"accepted\":-1,\"t_ms\":400}\n"},
        {"errors.jsonl", "\x9a\x01"
                         "{not json\n"
                         "{\"op\":\"suggest\",\"context\":\"ab\xff\"}\n"
                         "{\"op\":\"fly\"}\n  \r\n[1,2]\n"
                         "{\"op\":\"suggest\",\"context\":\"x\",\"k\":\"3\"}\n"
                         "{\"op\":\"suggest\",\"session\":\"\",\"context\":\"x\"}\n"
                         "{\"op\":\"suggest\",\"context\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}\n"
                         "{\"op\":\"commit\",\"text\":\"\xe6\x88\x91\xe6\x83\xb3\"}"},
        {"cjk.jsonl", "\x42\x10"
                      "{\"op\":\"suggest\",\"session\":\"z\",\"context\":\"\xe6\x88\x91\xe6\x83\xb3\xe8\xae\xa2\"}\n"
                      "{\"op\":\"suggest\",\"session\":\"z\",\"context\":\"\xe6\x88\x91\xe6\x83\xb3\xe8\xae\xa2\xe4\xb8\xaa\"}\n"},
    };
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
        put(dir, streams[i][0], streams[i][1], strlen(streams[i][1]));

    mkdirs(root, "session", dir, sizeof dir);
    script s = {0};
    op(&s, 0, 12, 0, "Best regards");
    op(&s, 5, 1, 0, NULL);
    op(&s, 1, 3, 0, NULL);
    op(&s, 0, 5, 0, "ards,");
    op(&s, 3, 4, 5, "dear");
    op(&s, 5, 1, 0, NULL);
    op(&s, 4, 3, 2, NULL);
    op(&s, 2, 1, 7, NULL);
    op(&s, 0, 9, 0, " the cat ");
    put(dir, "edits.bin", s.b, s.n);
    s.n = 0;
    op(&s, 0, 12, 0, "\xe6\x88\x91\xe6\x83\xb3\xe8\xae\xa2\xe4\xb8\xaa");
    op(&s, 5, 1, 0, NULL);
    op(&s, 1, 2, 0, NULL);   /* half a character gone */
    op(&s, 0, 3, 0, "\xe5\xa4\x96");
    op(&s, 5, 1, 0, NULL);
    op(&s, 3, 2, 4, "\xff\xfe");
    put(dir, "cjk.bin", s.b, s.n);
    s.n = 0;
    for (int i = 0; i < 20; i++) {
        op(&s, 0, 16, 0, "the meeting is o");
        op(&s, 5, 1, 0, NULL);
    }
    op(&s, 2, 1, 40, NULL);
    op(&s, 5, 1, 0, NULL);
    put(dir, "long.bin", s.b, s.n);
    /* the keystroke pipeline: flags are the field (low 5 bits) and the
     * wants (<< 5: 1 suggestions, 2 the decision, 4 the intent) */
    mkdirs(root, "pipeline", dir, sizeof dir);
    s.n = 0;
    ev(&s, 0, 0x20, 7, 0, "Best re");
    ev(&s, 1, 0x20, 0, 'g', NULL);
    ev(&s, 3, 0x20, 0, 0, NULL);   /* accept the first */
    ev(&s, 1, 0x20, 0, ' ', NULL);
    ev(&s, 1, 0x20, 0, '.', NULL);
    ev(&s, 2, 0x20, 0, 0, NULL);
    ev(&s, 4, 0x20, 0, 0, NULL);
    ev(&s, 5, 0x00, 12, 0, "Best regards");
    ev(&s, 7, 0x60, 1, 0, NULL);
    ev(&s, 0, 0x00, 3, 200, "the");
    ev(&s, 7, 0x20, 2, 0, NULL);
    put(dir, "keys.bin", s.b, s.n);
    s.n = 0;
    ev(&s, 0, 0x20, 26, 0, "[sudo] password for anna: ");
    ev(&s, 1, 0x20, 0, 'h', NULL);
    ev(&s, 1, 0x20, 0, 'u', NULL);
    ev(&s, 5, 0x00, 3, 0, "hun");
    ev(&s, 0, 0x21, 5, 3, "hello");
    ev(&s, 6, 0x22, 4, 0, "we a");
    ev(&s, 7, 0xe0, 1, 0, NULL);
    put(dir, "secret.bin", s.b, s.n);
    s.n = 0;
    ev(&s, 0, 0x28, 12, 0, "\xe6\x88\x91\xe4\xbb\xac\xe6\x98\x8e\xe5\xa4\xa9");
    ev(&s, 3, 0x28, 1, 1, NULL);
    ev(&s, 1, 0x30, 0, 0xe5, NULL);   /* a stray lead byte */
    ev(&s, 2, 0x20, 0, 0, NULL);
    put(dir, "cjk.bin", s.b, s.n);
    printf("wrote the seed corpora under %s\n", root);
    return 0;
}
