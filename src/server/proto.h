/* proto.h - the JSON-lines suggestion protocol of docs/PROTOCOL.md, apart
 * from any transport. `laya serve --stdio` and the Unix-socket daemon
 * (srv.h) both cut their input into lines with proto_lines and answer each
 * line with proto_handle, so the two speak exactly the same protocol.
 *
 *   {"op":"suggest","session":"s1","context":"...","k":3}
 *        -> {"suggestions":["...", ...],"us":<engine microseconds>}
 *   {"op":"commit","session":"s1","text":"..."}   -> {"ok":true}
 *   {"op":"reset","session":"s1"}                 -> {"ok":true}
 *   {"op":"score","session":"s1","text":"..."}    -> {"bits":B,"bytes":N}
 *   {"op":"feedback","session":"s1","accepted":i} -> {"ok":true}
 *   {"op":"key","session":"s1","text":"."}       -> {"erase":N,"insert":"..."}
 *   anything malformed                            -> {"error":"..."}
 *
 * Behaviour (C7), all optional; a request without these fields is answered
 * exactly as above:
 *  - suggest "t_ms":<number>: when the keystroke that made this context
 *    happened, in milliseconds on the client's clock (any origin, never going
 *    back). The session's decider (src/engine/decide.h) classifies the new
 *    context against the last one (one more character, one fewer, anything
 *    else is a jump) and learns the typist's speed from it. Without t_ms the
 *    server's clock is used.
 *  - suggest "decide":true: the suggestions pass through the decision, which
 *    may hold them back (fast burst, right after a backspace, low confidence,
 *    repeated rejection) or cut a phrase to its first word. The reply then
 *    also has "shown":true|false, and "held":"low"|"burst"|"backspace"|"none"
 *    when nothing is shown.
 *  - feedback "accepted": the index of the shown suggestion the typist took,
 *    or -1 when it was passed over (optional "t_ms"). Acceptances lower the
 *    decision's threshold, rejections raise it. A keystroke after a shown
 *    list without feedback counts as a rejection (for the decider only).
 *    With a memory (proto_set_memory) the session's last list is judged too
 *    (laya_session_feedback; with "decide":true the list the decision
 *    showed): a suggestion passed over ranks lower after the same context
 *    next time, one taken a little higher; not in a private session or
 *    incognito. A store error is answered {"error":"feedback not learned: .."}.
 *  - Coalescing: a suggest with "coalesce":true (the default when it carries
 *    "t_ms") that has a newer suggest for the same session queued right
 *    behind it in the same read (proto_feed) is not computed: its reply is
 *    {"suggestions":[],"us":0,"stale":true} and only the newest context is
 *    answered. A commit, reset or feedback for the session in between keeps
 *    the earlier one live. Every request still gets exactly one reply, in
 *    order.
 *
 * Sessions: "session" is optional ("default"). Every session belongs to an
 * owner (a client connection; stdio has one), so two clients that both say
 * "s1" never see each other's text. At most max_sessions live at once over
 * all owners; the least recently used one is closed to make room (a closed
 * session reopens empty and the next context is read afresh: slower, never
 * wrong). A commit is learned (the personal memory, C8) unless learning is
 * off (proto_set_memory) or the request or its session is private
 * ("private":true on suggest or commit: a password field); nothing typed is
 * ever logged. Nothing here prints or exits.
 *   {"op":"commit",...,"private":true}          -> {"ok":true,"learned":false}
 *   {"op":"incognito"[,"on":true|false]}        -> {"ok":true,"incognito":B}
 *   {"op":"forget","all":true | "since":T | "word":W} -> {"ok":true,"removed":N}
 *
 * Notes (C11), with a notes index attached (proto_set_notes):
 *   suggest replies gain "notes":[{"title":..,"path":..,"snippet":..}, ...]
 *   (at most 3) when notes match the sentence being typed; none when private.
 *   {"op":"notes","query":Q[,"k":N]}  -> {"notes":[{"title":..,"path":..,"snippet":..,"score":S}, ...]}
 *
 * Intent (C10), with an intent head attached (proto_set_intent):
 *   suggest replies gain "intent":{"name":"send_email","p":0.93} when the
 *   head is confident of a class other than "other"; none when private. */
#ifndef LAYA_PROTO_H
#define LAYA_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "laya.h"

enum { PROTO_MAX_SID = 128, PROTO_NOTES_K = 3 };

typedef struct proto proto;

/* A protocol handler over model m (borrowed: m must outlive it) with the
 * given search parameters and session cap (>= 1). *out owned by the caller. */
laya_status proto_new(const laya_model *m, const laya_search_opts *cfg, int max_sessions, proto **out);
void proto_free(proto *p);

/* Answers one request line (no newline; leading blanks allowed) from the
 * client `owner`. Returns the reply line without its newline, malloc'd and
 * owned by the caller; NULL only when memory ran out. */
char *proto_handle(proto *p, uint64_t owner, const char *line, size_t n);

/* An {"error":"..."} reply line for transport-level refusals (an overlong
 * line); malloc'd, owned by the caller, NULL when memory ran out. */
char *proto_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Frames and answers the bytes a transport just read (data may be NULL),
 * coalescing stale suggests among the complete lines they hold (see above);
 * with finish set an unterminated last line counts too (end of input).
 * fn gets each reply line in request order (without newline; owned by the
 * caller of fn only for the call), or NULL where memory ran out (the
 * transport answers {"error":"out of memory"}); an overlong line is refused
 * with {"error":"request line longer than MAX bytes: refused"}.
 * LAYA_ERR_NOMEM if some line could not be kept (it was still answered). */
typedef void (*proto_reply_fn)(void *ctx, const char *reply);
struct proto_lines;
laya_status proto_feed(proto *p, uint64_t owner, struct proto_lines *r, const char *data, size_t n,
                       int finish, proto_reply_fn fn, void *ctx);

/* Closes every session of owner (its connection is gone). */
void proto_drop_owner(proto *p, uint64_t owner);

/* The personal memory sessions opened from now on learn from and commits
 * go to (borrowed: it must outlive p). NULL (the default): learning off,
 * commits are acknowledged and dropped, suggestions come from the model. */
void proto_set_memory(proto *p, laya_memory *m);

/* The notes index (borrowed: it must outlive p) that sessions opened from
 * now on link to: suggest replies gain "notes" (the top 3 related to the
 * sentence typed, when any match and the request is not private) and the
 * notes op searches it. NULL (the default): no notes, and the notes op
 * answers an error. */
void proto_set_notes(proto *p, laya_notes *n);

/* The intent head (borrowed: it must outlive p; trained for p's model)
 * that sessions opened from now on report with: suggest replies gain
 * "intent":{"name":N,"p":P} (P to two decimals) when the most likely class
 * of the text before the cursor is not other and is above the head's
 * threshold, and the request is not private. NULL (the default): none. */
void proto_set_intent(proto *p, const laya_intent *h);

/* Live sessions over all owners (tests, the daemon's accounting). */
int proto_sessions(const proto *p);

/* Line framing. Bytes are fed as they arrive; each complete line is passed
 * to fn without its newline (and without a trailing '\r'). Whitespace-only
 * lines are skipped. A line longer than max bytes is never stored: its
 * bytes are dropped up to its newline and fn gets (NULL, 0) once for it,
 * so memory per client stays under max however the client misbehaves. The
 * buffer grows on demand, so an idle client costs almost nothing. */
typedef void (*proto_line_fn)(void *ctx, const char *line, size_t n);

typedef struct proto_lines {
    char *buf;
    size_t len, cap, max;
    int skipping;   /* inside an overlong line, waiting for its newline */
} proto_lines;

void proto_lines_init(proto_lines *r, size_t max);
/* LAYA_ERR_NOMEM if the buffer could not grow (the bytes are lost). */
laya_status proto_lines_feed(proto_lines *r, const char *data, size_t n, proto_line_fn fn, void *ctx);
/* At end of input: an unterminated last line counts as a line. */
void proto_lines_finish(proto_lines *r, proto_line_fn fn, void *ctx);
void proto_lines_free(proto_lines *r);

#endif
