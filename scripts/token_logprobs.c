/* scripts/token_logprobs.c - the model's probability of every token of a
 * text, read as the engine's scorer reads it (laya_score: BOS, then each
 * token after all before it), at one or more softmax temperatures: the
 * input of scripts/model_headroom.py, which asks what a corpus n-gram beside
 * the model or a calibrated temperature would take off its bits per byte.
 *
 *   build/token_logprobs MODEL TEXT OUT [T...]      (make build/token_logprobs)
 *
 * OUT holds one record per token of TEXT, little-endian:
 *   int32  token id
 *   int32  flags: bit 0 the token before it ends in a character of the
 *          tokenizer's CJK path (a 3-byte character led by E3..E9: what
 *          "after a CJK character" means to the search); bit 1 the text
 *          before it is Chinese at this point (its last letter, digit or
 *          ideograph is an ideograph: CJK punctuation and blanks do not
 *          decide)
 *   f64    log2 p(token | everything before) at each temperature T, in the
 *          order given (default 1 alone): softmax(logits / T)
 * With T = 1 alone the records' sum is -laya_score's bits exactly (the same
 * steps and float operations). An unsigned model is read as
 * LAYA_ALLOW_UNSIGNED=1 would read it: this is an analysis tool. Exit 1 with
 * a message when a file cannot be read or written, 2 on bad usage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_sign.h"
#include "tok/tok.h"
#include "util/utf8.h"

enum { MAX_TEMPS = 16 };

static int ends_cjk_path(const uint8_t *b, size_t n) {
    return n >= 3 && utf8_cjk_path_lead(b[n - 3]) && (b[n - 2] & 0xC0) == 0x80 && (b[n - 1] & 0xC0) == 0x80;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: token_logprobs MODEL TEXT OUT [T...]\n");
        return 2;
    }
    double temps[MAX_TEMPS] = {1.0};
    int nt = argc > 4 ? argc - 4 : 1;
    if (nt > MAX_TEMPS) {
        fprintf(stderr, "token_logprobs: at most %d temperatures\n", MAX_TEMPS);
        return 2;
    }
    for (int k = 0; k < argc - 4; k++) {
        char *end;
        temps[k] = strtod(argv[4 + k], &end);
        if (*end || !(temps[k] > 0.05 && temps[k] < 20)) {
            fprintf(stderr, "token_logprobs: temperature '%s' is not a number in (0.05, 20)\n", argv[4 + k]);
            return 2;
        }
    }
    char err[512];
    model *m = NULL;
    if (model_load_opts(argv[1], &(model_trust){.allow_unsigned = 1}, &m, err, sizeof err) != LAYA_OK) {
        fprintf(stderr, "token_logprobs: %s\n", err);
        return 1;
    }
    FILE *f = fopen(argv[2], "rb");
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (!f || len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "token_logprobs: cannot read %s\n", argv[2]);
        return 1;
    }
    uint8_t *text = malloc((size_t)len + 1);
    int32_t *ids = malloc(((size_t)len + 1) * sizeof *ids);
    const model_cfg *c = &m->cfg;
    size_t sf = model_state_floats(c);
    float *mem = malloc((sf + model_scratch_floats(c) + (size_t)c->V + (size_t)c->H) * sizeof(float));
    if (!text || !ids || !mem || fread(text, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "token_logprobs: cannot read %s\n", argv[2]);
        return 1;
    }
    fclose(f);
    FILE *o = fopen(argv[3], "wb");
    if (!o) {
        fprintf(stderr, "token_logprobs: cannot write %s\n", argv[3]);
        return 1;
    }
    model_state st;
    model_state_init(c, &st, mem);
    float *scratch = mem + sf, *logits = scratch + model_scratch_floats(c), *y = logits + c->V;
    ids[0] = TOK_BOS;
    size_t n = 1 + tok_encode(m->tok, text, (size_t)len, ids + 1, (size_t)len);
    int chinese = 0;   /* the last letter, digit or ideograph read was an ideograph */
    double total = 0;
    int ok = 1;
    for (size_t i = 0; i + 1 < n; i++) {
        size_t bl = 0;
        const uint8_t *bb = ids[i] == TOK_BOS ? NULL : tok_bytes(m->tok, ids[i], &bl);
        for (size_t j = 0; j < bl; j = utf8_next(bb, bl, j)) {
            int32_t cp = utf8_cp_at(bb, bl, j);   /* a token may cut a character: -1 then */
            if (cp >= 0 && utf8_han_cp((uint32_t)cp)) chinese = 1;
            else if ((cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z')) chinese = 0;
        }
        model_step(m, &st, ids[i], scratch, y);
        model_logits(m, y, logits);
        float mx = logits[0];
        for (int32_t v = 1; v < c->V; v++) mx = logits[v] > mx ? logits[v] : mx;
        int32_t t = ids[i + 1], flags = (bb && ends_cjk_path(bb, bl)) | (chinese << 1);
        ok &= fwrite(&t, 4, 1, o) == 1 && fwrite(&flags, 4, 1, o) == 1;
        for (int k = 0; k < nt; k++) {
            /* at T = 1 exactly laya_score's operations (x / 1.0 is x) */
            const double T = temps[k];
            double z = 0;
            for (int32_t v = 0; v < c->V; v++) z += exp((double)(logits[v] - mx) / T);
            double lp = -((double)mx / T + log(z) - (double)logits[t] / T) / log(2.0);
            if (k == 0) total -= lp;
            ok &= fwrite(&lp, 8, 1, o) == 1;
        }
    }
    if (fclose(o) != 0 || !ok) {
        fprintf(stderr, "token_logprobs: cannot write %s\n", argv[3]);
        return 1;
    }
    fprintf(stderr, "%s: %zu tokens, %ld bytes, %.4f bits/byte at T=%g\n", argv[2], n - 1, len,
            len ? total / (double)len : 0.0, temps[0]);
    free(text);
    free(ids);
    free(mem);
    model_free(m);
    return 0;
}
