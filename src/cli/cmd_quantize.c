/* cmd_quantize.c - `laya quantize IN OUT [--bits 4|8 [--group 32|64|128]]
 * [--layout rows|panel] [--allow-unsigned]`.
 *
 * With --bits: reads any Laya model (f32, f16, q8 or q4), rebuilds its f32
 * parameters (dequantizing if needed: quantizing a quantized model again
 * adds the new rounding to the old), and writes OUT with every matrix
 * quantized (kern/quant.h) and the vectors in f32, keeping the tokenizer
 * and the provenance metadata. Without --bits: IN must be q8/q4, and OUT is
 * the same model laid out again, codes, scales and biases copied exactly
 * (model_save_relayout), e.g. into the panel layout that loads without a
 * copy (models/MODEL.md). Prints both sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli.h"
#include "kern/quant.h"
#include "model/model.h"
#include "model/model_sign.h"

static void usage(FILE *f) {
    fprintf(f, "usage: laya quantize IN OUT [--bits 4|8 [--group 32|64|128]] [--layout rows|panel]\n"
               "                    [--allow-unsigned]\n"
               "  --bits: writes OUT with every matrix (the embedding too) in group-wise affine q4\n"
               "  or q8, one f32 scale and bias per group of consecutive weights of a row (group\n"
               "  default 64). Without --bits, IN must be q4/q8 and OUT is the same model, bit for\n"
               "  bit, in --layout. --layout panel stores the matrices in the form the kernels\n"
               "  read, which loads with no copy (default rows, the form every Laya reads).\n"
               "  IN must be signed by a trusted key unless --allow-unsigned (or\n"
               "  LAYA_ALLOW_UNSIGNED=1); OUT is unsigned: laya sign OUT --key KEY.\n");
}

/* The model's weights back in the flat f32 layout (model_tensors order). */
static float *params_of(const model *m) {
    float *p = malloc(model_n_params(&m->cfg) * sizeof *p);
    if (!p) cli_die("out of memory");
    model_params_read(m, p);
    return p;
}

/* The input's provenance (metadata the writer does not own), as JSON,
 * with key = in added. */
static char *provenance(const model *m, const char *key, const char *in) {
    json_t *meta = m->meta_json ? json_loads(m->meta_json, 0, NULL) : NULL, *out = json_object();
    const char *k;
    json_t *v;
    if (meta)
        json_object_foreach(meta, k, v) if (!model_meta_reserved(k)) json_object_set(out, k, v);
    json_object_set_new(out, key, json_string(in));
    char *s = json_dumps(out, JSON_COMPACT);
    json_decref(meta);
    json_decref(out);
    if (!s) cli_die("out of memory");
    return s;
}

static long long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int bits = 0, allow_unsigned = 0, group_given = 0;
    long group = 64;
    model_layout layout = MODEL_LAYOUT_ROWS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--allow-unsigned")) {
            allow_unsigned = 1;
        } else if (!strcmp(a, "--bits") || !strcmp(a, "--group")) {
            if (i + 1 >= argc) cli_die("%s needs a value (laya quantize --help)", a);
            /* the exact values (4|8, 32|64|128) are checked below */
            if (a[2] == 'b') bits = (int)cli_int(a, argv[++i], 4, 8);
            else group = cli_int(a, argv[++i], 32, 128), group_given = 1;
        } else if (!strcmp(a, "--layout")) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (!strcmp(v, "rows")) layout = MODEL_LAYOUT_ROWS;
            else if (!strcmp(v, "panel")) layout = MODEL_LAYOUT_PANEL;
            else cli_die("--layout expects rows or panel, got '%s'", v);
        } else if (a[0] == '-' && a[1]) {
            cli_die("unknown option '%s' (laya quantize --help)", a);
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            cli_die("unexpected argument '%s' (laya quantize --help)", a);
        }
    }
    if (!in || !out) {
        usage(stderr);
        return 2;
    }
    if (bits && bits != 4 && bits != 8) cli_die("--bits must be 4 or 8");
    if (bits && !quant_params_ok(bits, (int32_t)group)) cli_die("--group must be 32, 64 or 128");
    if (!bits && group_given) cli_die("--group needs --bits (without it the model keeps its quantization)");

    model *m;
    char err[512] = "";
    uint8_t keys[MODEL_MAX_TRUSTED][MODEL_KEY_BYTES];
    model_trust t = {0};
    laya_status st = model_trust_env(&t, keys, err, sizeof err);
    if (st != LAYA_OK) cli_die("%s", err);
    t.allow_unsigned |= allow_unsigned;
    st = model_load_opts(in, &t, &m, err, sizeof err);
    if (st != LAYA_OK) cli_die("%s (%s)", err, laya_status_str(st));
    const char *lname = layout == MODEL_LAYOUT_PANEL ? "panel" : "rows";
    if (!bits) {
        if (m->emb.type != QT_Q8 && m->emb.type != QT_Q4)
            cli_die("%s is not quantized: give --bits 4 or 8 (laya quantize --help)", in);
        char *extra = provenance(m, "laid_out_from", in);
        st = model_save_relayout(out, m, layout, extra, err, sizeof err);
        if (st != LAYA_OK) cli_die("cannot write %s: %s (%s)", out, err, laya_status_str(st));
        printf("%s: %lld bytes -> %s: %lld bytes (the same q%dg%d weights, %s layout)\n", in, file_size(in), out,
               file_size(out), m->emb.type == QT_Q8 ? 8 : 4, (int)m->emb.group, lname);
        free(extra);
        model_free(m);
        return 0;
    }
    float *p = params_of(m);
    uint8_t *blob;
    size_t blob_n;
    if (tok_save(m->tok, &blob, &blob_n) != LAYA_OK) cli_die("out of memory saving the tokenizer");
    char *extra = provenance(m, "quantized_from", in);
    st = model_save_quant_layout(out, &m->cfg, p, bits == 8 ? QT_Q8 : QT_Q4, (int32_t)group, layout, blob, blob_n,
                                 extra, err, sizeof err);
    if (st != LAYA_OK) cli_die("cannot write %s: %s (%s)", out, err, laya_status_str(st));
    long long a = file_size(in), b = file_size(out);
    printf("%s: %lld bytes -> %s: %lld bytes (q%dg%ld, %s layout, %.1f%% of the input; %.2f bits per parameter in "
           "the file)\n",
           in, a, out, b, bits, group, lname, a > 0 ? 100.0 * (double)b / (double)a : 0.0,
           8.0 * (double)b / (double)model_n_params(&m->cfg));
    free(extra);
    free(blob);
    free(p);
    model_free(m);
    return 0;
}
