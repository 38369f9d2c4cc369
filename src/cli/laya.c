/* laya.c - `laya` entry point: dispatches to one subcommand per file
 * (cmd_<name>.c). To add a command, add its row here and its cmd_ file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"complete", cmd_complete, "print k suggestions for a text: laya complete [-k 3] \"text\""},
    {"type", cmd_type, "interactive demo: type with ghost-text suggestions"},
    {"serve", cmd_serve, "JSON-lines suggestion server: laya serve --stdio"},
    {"train", cmd_train, "train a model on a token corpus (CPU reference trainer)"},
    {"bench", cmd_bench, "per-keystroke latency, cold start, memory: laya bench [--model PATH] [TEXT...]"},
    {"eval", cmd_eval, "measure keystroke savings and latency of an engine: laya eval TEXT..."},
    {"tokenizer", cmd_tokenizer, "tokenizer tools: laya tokenizer train|encode|decode|info"},
    {"quantize", cmd_quantize, "write a q4/q8 model: laya quantize IN OUT --bits 4|8 [--group 64]"},
    {"memory", cmd_memory, "what Laya learned: laya memory list|add|forget|export|path"},
    {"notes", cmd_notes, "your Markdown notes, linked while typing: laya notes index DIR | search TERMS"},
    {"intent", cmd_intent, "what the user is doing (C10): laya intent train|eval|classify|bench"},
    {"prior", cmd_prior, "the model's next-word prior (Chinese, from libime): laya prior add|show"},
    {"incognito", cmd_incognito, "stop or resume learning everywhere: laya incognito on|off|status"},
    {"settings", cmd_settings, "the settings window: suggestions, accept key, incognito, what was learned"},
    {"keygen", cmd_keygen, "make a key pair for signing models: laya keygen [--out PREFIX]"},
    {"sign", cmd_sign, "sign a model: laya sign MODEL --key PREFIX.key (writes MODEL.sig)"},
    {"verify", cmd_verify, "check a model's signature: laya verify MODEL [--pubkey PREFIX.pub]"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: laya <command> [options]   (laya <command> --help for more)\n"
               "       laya --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nThe model is --model PATH, else $LAYA_MODEL, else the shipped default. Models must be\n"
               "signed by a trusted key (laya verify); LAYA_ALLOW_UNSIGNED=1 loads ones you trained.\n"
               "The manual: man laya (docs/laya.1).\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("laya %s\n", laya_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "laya: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
