/* cli.h - shared pieces of the `laya` command-line program. Programs may die
 * with a message; the library never does. */
#ifndef LAYA_CLI_H
#define LAYA_CLI_H

#include <stddef.h>
#include <stdio.h>
#include "laya.h"

/* Prints "laya: <message>" to stderr and exits with status 1. */
_Noreturn void cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The model path to use (engine/front.h: front_model_path) in a static
 * buffer. */
const char *cli_model_path(const char *explicit_path);

/* Loads the model or dies with the loader's detailed message.
 * cli_load_model_opts: allow_unsigned is --allow-unsigned (laya.h). */
laya_model *cli_load_model(const char *explicit_path);
laya_model *cli_load_model_opts(const char *explicit_path, int allow_unsigned);

/* Opens the memory store at front_memory_path(explicit_path) (engine/front.h)
 * or dies with the library's detailed message. */
laya_memory *cli_open_memory(const char *explicit_path);

/* The integer in v for option opt, or die naming opt, the range and v
 * (v NULL: the option had no value). */
long cli_int(const char *opt, const char *v, long lo, long hi);

/* The search options every suggesting command takes (--beam, --max-tokens,
 * --max-words, --max-steps, --cjk-steps, --min-prob, --prior-weight,
 * --cache-weight, --cjk-cache-weight) with
 * their ranges from laya.h: if argv[i] is one, stores its value in *o and
 * returns the number of arguments used (2), else returns 0. Dies on a bad
 * value. */
int cli_search_opt(int argc, char **argv, int i, laya_search_opts *o);
#define CLI_SEARCH_USAGE "[--beam B] [--max-tokens N] [--max-words N] [--max-steps N] [--cjk-steps N]\n" \
    "                  [--min-prob P] [--prior-weight W]\n" \
    "                  [--cache-weight W] [--cjk-cache-weight W]"

/* Seconds on the monotonic clock (for durations). */
double cli_now_s(void);

/* Writes s[0..n) with C escapes, so that a newline, a tab or another control
 * byte stays visible and one line stays one line: \n, \t, \xHH, a backslash
 * doubled, and quote (the quote around the text; 0 for none) backslashed. */
void cli_put_escaped(FILE *f, const char *s, size_t n, int quote);

/* Each subcommand: argv[0] is the subcommand name. Returns the exit status. */
int cmd_complete(int argc, char **argv);
int cmd_type(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_incognito(int argc, char **argv);
int cmd_settings(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_sign(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_notes(int argc, char **argv);
int cmd_intent(int argc, char **argv);
int cmd_prior(int argc, char **argv);

/* Loads the intent head explicit_path, else the companion file of
 * model_path. required 0: NULL when there is none (and a message on stderr
 * when it exists but is refused); else die with the loader's message. */
laya_intent *cli_load_intent(const laya_model *m, const char *model_path, const char *explicit_path,
                             int allow_unsigned, int required);

#endif
