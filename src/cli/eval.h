/* eval.h - pieces of `laya eval` (cmd_eval.c): a child engine process spoken
 * to in JSON lines (shared/EVAL.md), one request, one reply line. */
#ifndef LAYA_CLI_EVAL_H
#define LAYA_CLI_EVAL_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    int to_fd, from_fd;     /* engine's stdin, engine's stdout */
    char *buf;              /* bytes read but not yet returned as lines */
    size_t len, cap;
    char *last_sent;        /* the last request, for error messages (owned) */
    int timeout_ms;         /* per reply */
    char desc[256];         /* how the engine was started, for messages */
} eval_engine;

/* Starts argv[0] with argv (NULL-terminated) with pipes on stdin/stdout; its
 * stderr is ours. Returns 0, or -1 with err filled. */
int eval_engine_start(eval_engine *e, char *const argv[], const char *desc, int timeout_ms,
                      char *err, size_t errlen);

/* Sends req (not consumed) as one line and waits for one reply line, parsed
 * as a JSON object into *reply (owned by the caller, json_decref). *rtt_us is
 * the wall time from before the write to the end of the reply line. Returns
 * 0, or -1 with err saying what happened (exit, timeout, garbage) and what
 * was sent last. An {"error":...} reply is returned as a reply, not -1. */
int eval_engine_request(eval_engine *e, json_t *req, json_t **reply, double *rtt_us,
                        char *err, size_t errlen);

/* Closes the engine's stdin, waits briefly for it to exit, then kills it. */
void eval_engine_stop(eval_engine *e);

#endif
