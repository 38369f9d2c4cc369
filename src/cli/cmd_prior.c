/* cmd_prior.c - the model file's next-word prior (src/prior/prior.h):
 *
 *   laya prior add MODEL PRIOR OUT        OUT = MODEL with PRIOR's tables inside (sign OUT after)
 *   laya prior show [--model PATH] TEXT   the followers the prior proposes after TEXT
 *
 * The prior is built from libime's language model by
 * scripts/corpus/ngram/libime_prior.cc (`make prior` writes build/zh-prior.safetensors). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/engine.h"
#include "model/model.h"
#include "prior/prior.h"

static void usage(void) {
    printf("usage: laya prior add MODEL PRIOR OUT\n"
           "       laya prior show [--model PATH] [--prior-weight W] TEXT\n"
           "add:  writes OUT, the model file MODEL with the next-word prior of the file PRIOR\n"
           "      (`make prior` builds one from libime's Chinese language model and\n"
           "      pocketsphinx's English one) inside it, replacing any prior MODEL had. OUT is\n"
           "      unsigned: sign it (laya sign) or load it with LAYA_ALLOW_UNSIGNED=1.\n"
           "show: the words the model's prior proposes after TEXT (a text ending in a Han\n"
           "      character, or in an English word and one blank, or at a sentence's start),\n"
           "      with P(word | the last words) and what the search adds to that word's\n"
           "      probability: P x W / (1 - W) at most 1, the prior's weight W\n"
           "      (--prior-weight, default %.2f) as odds.\n",
           (double)laya_search_defaults().prior_weight);
}

static int prior_add(int argc, char **argv) {
    if (argc != 5) cli_die("prior add: expected MODEL PRIOR OUT (laya prior --help)");
    if (!strcmp(argv[2], argv[4]) || !strcmp(argv[3], argv[4]))
        cli_die("prior add: OUT must be a new file, not one of the inputs");
    char err[512] = "";
    if (prior_embed(argv[2], argv[3], argv[4], err, sizeof err) != LAYA_OK) cli_die("prior add: %s", err);
    printf("wrote %s (unsigned: laya sign %s --key PREFIX.key)\n", argv[4], argv[4]);
    return 0;
}

static int prior_show(int argc, char **argv) {
    const char *model_path = NULL, *text = NULL;
    double w = laya_search_defaults().prior_weight;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model_path = argv[++i];
        else if (!strcmp(argv[i], "--prior-weight") && i + 1 < argc) {
            char *end = NULL;
            w = strtod(argv[++i], &end);
            if (!end || *end || !(w >= 0 && w <= 1))
                cli_die("prior show: --prior-weight expects a weight in 0..1, got '%s'", argv[i]);
        }
        else if (argv[i][0] == '-' && argv[i][1]) cli_die("prior show: unknown option '%s'", argv[i]);
        else if (!text) text = argv[i];
        else cli_die("prior show: expected one TEXT, got a second: '%s'", argv[i]);
    }
    if (!text) cli_die("prior show: expected TEXT (laya prior --help)");
    laya_model *lm = cli_load_model(model_path);
    const prior *p = &engine_model(lm)->prior;
    if (p->nw == 0) {
        printf("this model has no next-word prior\n");
    } else {
        prior_cand c[PRIOR_MAX_CAND];
        int n = prior_query(p, (const uint8_t *)text, strlen(text), c, PRIOR_MAX_CAND);
        if (n == 0) printf("(no proposal: the text does not end in a word the prior knows, or an English\n"
                           "word without one blank after it)\n");
        else printf("word\tP(word | last word)\tadded by the search (weight %.2f)\n", w);
        /* as engine_blend_prior adds it: the odds w / (1 - w), 1 at w = 1 */
        const double odds = w < 1 ? w / (1 - w) : 1;
        for (int i = 0; i < n; i++) {
            const double add = odds * c[i].p;
            printf("%.*s\t%.4f\t%.4f\n", c[i].len, (const char *)c[i].text, c[i].p, add < 1 ? add : 1);
        }
    }
    laya_model_free(lm);
    return 0;
}

int cmd_prior(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage();
        return argc < 2;
    }
    if (!strcmp(argv[1], "add")) return prior_add(argc, argv);
    if (!strcmp(argv[1], "show")) return prior_show(argc, argv);
    cli_die("prior: unknown subcommand '%s' (add, show)", argv[1]);
}
