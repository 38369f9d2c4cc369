/* laya.h - the public API of the Laya typing-prediction engine.
 *
 * Contract for every function here:
 *  - The library never prints and never exits; it returns a laya_status and
 *    laya_status_str() explains it. Functions that can fail in more than one
 *    way also fill an optional caller-owned error buffer with a sentence that
 *    says what was wrong and what to do about it.
 *  - Handles are opaque. "Owns" below says who must free what.
 *  - A laya_model is read-only after load and may be shared by any number of
 *    sessions on any number of threads. A laya_session is used by one thread
 *    at a time.
 *  - All text is UTF-8 bytes; invalid UTF-8 is accepted (byte-level model)
 *    but suggestions never contain broken UTF-8.
 */
#ifndef LAYA_H
#define LAYA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    LAYA_OK = 0,
    LAYA_ERR_ARG,         /* a bad argument (NULL, out of range) */
    LAYA_ERR_IO,          /* a file could not be opened, read or written */
    LAYA_ERR_FORMAT,      /* a file or message is malformed */
    LAYA_ERR_NOMEM,       /* an allocation failed */
    LAYA_ERR_UNSUPPORTED, /* valid, but a version or feature this build lacks */
    LAYA_ERR_SIGNATURE,   /* checksum or signature mismatch */
    LAYA_ERR_LIMIT,       /* input larger than a documented limit */
    LAYA_ERR_INTERNAL     /* a bug: please report it */
} laya_status;

/* A static English sentence describing s. Never NULL. */
const char *laya_status_str(laya_status s);

/* The library's version, "MAJOR.MINOR.PATCH". Never NULL. */
#define LAYA_VERSION "0.5.0"
const char *laya_version(void);

/* Limits every caller may rely on. */
enum {
    LAYA_MAX_K = 16,                      /* suggestions per laya_suggest */
    LAYA_MAX_SUGGESTION = 96,             /* bytes one suggestion may add */
    LAYA_MAX_CONTEXT = 16 * 1024 * 1024,  /* bytes of context a session accepts */
    LAYA_MAX_BEAM = 8,                    /* laya_search_opts.beam */
    LAYA_MAX_TOKENS = 64,                 /* laya_search_opts.max_tokens */
    LAYA_MAX_WORDS = 64,                  /* laya_search_opts.max_words */
    LAYA_MAX_STEPS = 256                  /* laya_search_opts.max_steps */
};

typedef struct laya_model laya_model;
typedef struct laya_session laya_session;

/* Loads a model file (safetensors with Laya metadata), memory-mapped and
 * validated as hostile input. On success *out is owned by the caller (free
 * with laya_model_free) and every weight has been touched once.
 * err (optional, errlen bytes, caller-owned) receives a detailed reason. */
laya_status laya_model_load(const char *path, laya_model **out, char *err, size_t errlen);
void laya_model_free(laya_model *m);

/* ---- Signed models (C5) ----
 * laya_model_load trusts a model file MODEL only when MODEL.sig holds a
 * valid Ed25519 signature of its bytes (`laya sign`) by a trusted key: the
 * Laya project's (compiled in), or a public key file (`laya keygen`) named
 * in $LAYA_TRUSTED_KEYS (':'-separated). Any other model is refused, before
 * it is parsed, with LAYA_ERR_SIGNATURE and a message saying which case it
 * is: unsigned, a bad signature (the file changed after signing, or the
 * .sig is another file's), or signed by a key not trusted. With
 * $LAYA_ALLOW_UNSIGNED=1 (for models you train yourself) a model without a
 * trusted signature loads; a .sig that does not match its file is still
 * refused. */
enum { LAYA_LOAD_ALLOW_UNSIGNED = 1u << 0 };

typedef struct {
    unsigned flags;              /* LAYA_LOAD_* */
    const char *const *pubkeys;  /* (n_pubkeys, at most 8) public key files trusted besides the project's */
    int n_pubkeys;
} laya_load_opts;

/* As laya_model_load, with opts on top of what the environment asks
 * (opts NULL: exactly laya_model_load). opts is only read during the call. */
laya_status laya_model_load_opts(const char *path, const laya_load_opts *opts, laya_model **out, char *err,
                                 size_t errlen);
/* ---- end of signed models ---- */

/* Opens a session over m; m must outlive it. *out is owned by the caller. */
laya_status laya_session_new(const laya_model *m, laya_session **out);
void laya_session_free(laya_session *s);

/* Tells the session the whole text before the cursor. The session diffs it
 * against the previous context: one more character is an O(1) update, any
 * other change rewinds to the nearest checkpoint. text is copied. */
laya_status laya_session_set_context(laya_session *s, const char *text, size_t len);

/* Convenience edits on the current context: append typed bytes; delete the
 * last n UTF-8 characters; forget everything. */
laya_status laya_session_type(laya_session *s, const char *bytes, size_t len);
laya_status laya_session_backspace(laya_session *s, size_t n_chars);
laya_status laya_session_reset(laya_session *s);

/* One suggestion: the exact bytes to insert at the cursor. text points into
 * the session and stays valid until the next call on that session. */
typedef struct {
    const char *text;
    size_t len;
    float prob;   /* model probability of this continuation, 0..1 */
} laya_suggestion;

/* Fills out[0..*n_out) with up to k suggestions, best first (k <= LAYA_MAX_K):
 * the most keystrokes saved first, then each the one that adds most to
 * those before it (one that extends an earlier one by whole words counts
 * only its extra characters). */
laya_status laya_suggest(laya_session *s, int k, laya_suggestion *out, int *n_out);

/* Idle work, for a front end to call while it waits for the next key (an
 * idle callback of its event loop), after laya_suggest: computes ahead the
 * model states the next laya_suggest needs if the next key types the first
 * character of the best suggestion just returned, or of the next one that
 * begins otherwise, where that character goes on with the word being typed
 * (a letter of an alphabetic word) or ends it (a blank or punctuation after
 * it): the search stays rooted where the text the model has read for good
 * ends. One guess a call, about one laya_suggest's search;
 * *more (may be NULL) is 1 when another guess is left for a next call, so
 * that a key arriving meanwhile waits for one search at most. Nothing to
 * do (no suggestion, an edit since, a newline, CJK text, the guesses
 * done) returns LAYA_OK at once. The context and every later suggestion
 * are exactly as without it; only the next keystroke's model steps are
 * fewer when a guess was right. The texts the last laya_suggest returned
 * stay valid. */
laya_status laya_session_prefetch(laya_session *s, int *more);

/* A suggestion may end with the blank after its word (one space after an
 * ASCII character). Right after such a suggestion was inserted, a front end
 * types the key c before that blank when this returns 1 (. , ; : ! ?:
 * "help " then "." gives "help. "), as its next key otherwise. This
 * function can't fail. */
int laya_goes_before_blank(uint32_t c);

/* How the suggestion search works for a session: its breadth and how far a
 * suggestion may reach, and its latency budget. laya_search_defaults() is
 * what a new session uses. */
typedef struct {
    int beam;         /* hypotheses kept per step, 1..LAYA_MAX_BEAM */
    int max_tokens;   /* tokens generated after the typed tail, 1..LAYA_MAX_TOKENS */
    int max_words;    /* words one suggestion may span (the finished word counts), 1..LAYA_MAX_WORDS */
    int max_bytes;    /* bytes one suggestion may add, 1..LAYA_MAX_SUGGESTION */
    float len_exp;    /* rank by prob * chars^len_exp, 0..4 (1: expected keystrokes saved) */
    int max_steps;    /* model steps per keystroke, 1..LAYA_MAX_STEPS: the latency budget */
    int cjk_steps;    /* the same after a CJK character (each one moves the model's state, so a
                         Chinese keystroke searches afresh more often), 1..LAYA_MAX_STEPS */
    int prune;        /* 1: skip work that cannot change the result (exact); 0: the reference */
    float min_prob;   /* suggestions less likely than this are not shown, 0..1 */
    float prior_weight; /* trust in the model file's next-word prior, where it has one, 0..1; 0: off */
    float cache_weight; /* trust in the continuous cache of the text typed (with learning on), 0..0.9;
                           0: off; scaled by n / (n + 32) for the n (at most 512) positions it holds,
                           and given back to the model where no position resembles the context */
    float cjk_cache_weight; /* the same after a CJK character, 0..0.9 */
} laya_search_opts;

laya_search_opts laya_search_defaults(void);
/* Applies o to s from the next laya_suggest on. LAYA_ERR_ARG (and s
 * unchanged) when a field is out of its range. */
laya_status laya_session_set_search(laya_session *s, const laya_search_opts *o);

/* The model's cost of a whole text read as a fresh document: *bits is the
 * sum over its tokens of -log2 p(token | everything before); divide by len
 * for bits per byte. Work is linear in len; it allocates its own scratch
 * and may run beside sessions on other threads. */
laya_status laya_score(const laya_model *m, const char *text, size_t len, double *bits);

/* What a loaded model is (for reports). kernels is a static name. */
typedef struct {
    int vocab, hidden, embed, layers, window;
    const char *kernels;   /* the kernel table in use: "avx512", "avx2" or "ref" */
} laya_model_info;

laya_status laya_model_describe(const laya_model *m, laya_model_info *out);

/* Work a session has done so far (benchmarks): model steps to read the
 * context, steps and full vocabulary products of its searches, and those
 * of laya_session_prefetch (not in the search counts). */
typedef struct {
    uint64_t steps, search_steps, search_logits;
    uint64_t ahead_steps, ahead_logits;
} laya_session_stats;

laya_status laya_session_get_stats(const laya_session *s, laya_session_stats *out);

/* The decision (C7): whether to show suggestions now, and how much of each.
 * A decider belongs to one session's typist and is used by one thread at a
 * time; it holds no text (src/engine/decide.h has the rules and defaults).
 * Timestamps are milliseconds on any clock that never goes back. */
typedef struct laya_decider laya_decider;

typedef enum {
    LAYA_EVENT_CHAR = 0,    /* a character typed */
    LAYA_EVENT_BACKSPACE,   /* one character deleted */
    LAYA_EVENT_JUMP,        /* cursor moved, text edited or pasted */
    LAYA_EVENT_ACCEPTED,    /* the typist took one of the shown suggestions */
    LAYA_EVENT_IGNORED      /* the shown suggestions were passed over */
} laya_event;

/* A decider with the default parameters; *out owned by the caller. */
laya_status laya_decider_new(laya_decider **out);
void laya_decider_free(laya_decider *d);

/* Records what the typist did at t_ms. A keystroke after a shown list that
 * got no ACCEPTED/IGNORED event counts as IGNORED. */
laya_status laya_decide_event(laya_decider *d, laya_event kind, double t_ms);

/* Filters in[0..n) (from laya_suggest, best first) into out[0..*n_out),
 * keeping the order; out may be in. A kept suggestion may be cut to its
 * first word: out[i].text points into the same bytes as the in[] entry it
 * came from (valid as long as those are), out[i].len may be shorter and
 * out[i].prob is the probability the decision credited it with. *n_out == 0
 * means show nothing now. A non-empty result is recorded as shown. */
laya_status laya_decide(laya_decider *d, double t_ms, const laya_suggestion *in, int n,
                        laya_suggestion *out, int *n_out);

/* ---- Personal memory (C8) -------------------------------------------------
 * What the user committed, kept on the device for suggestions to learn
 * from: one SQLite file per user, shared by every process that opens it
 * (the daemon, `laya type`, the IBus and fcitx5 engines), so what one
 * commits, the next suggestion of any other sees. File, schema, bounds and
 * privacy guarantees: src/learn/learn_store.h.
 *  - A laya_memory may be shared by threads (it holds a mutex). After
 *    fork() only the parent may use it, and a child must not open the same
 *    file while the parent's handle is in its memory (SQLite shares lock
 *    state per file within a process): open it after exec, or fork first.
 *  - Every function below that touches the file fills err (optional,
 *    errlen bytes, caller-owned) with a sentence naming the file and a hint
 *    (locked by another process, damaged, from a newer Laya, ...).
 *  - Callers decide what is committed: never text from password or PIN
 *    fields or inputs marked private. */
typedef struct laya_memory laya_memory;

enum { LAYA_MEMORY_MAX_TEXT = 64 * 1024 };   /* bytes in one commit */

/* The path laya_memory_open(NULL, ...) uses, into buf (n bytes):
 * $XDG_DATA_HOME/laya/memory.db, else $HOME/.local/share/laya/memory.db.
 * Creates nothing. LAYA_ERR_ARG when neither is an absolute path,
 * LAYA_ERR_LIMIT when buf is too small. */
laya_status laya_memory_default_path(char *buf, size_t n, char *err, size_t errlen);

/* Opens the store at path (NULL: the default path; ":memory:": a private,
 * empty store that lives until freed), creating it (folders 0700, file
 * 0600) or migrating an older schema, and loads what it holds. *out is
 * owned by the caller (laya_memory_free). A file that is not a regular
 * file, not a Laya store, damaged or from a newer Laya is refused and left
 * unmodified; on error *out is NULL. */
laya_status laya_memory_open(const char *path, laya_memory **out, char *err, size_t errlen);
void laya_memory_free(laya_memory *m);   /* NULL is ignored */

/* The path m was opened with; owned by m. */
const char *laya_memory_path(const laya_memory *m);

/* Learns text (valid UTF-8, NUL allowed, at most LAYA_MEMORY_MAX_TEXT
 * bytes; copied) as one commit, unless incognito is on. *learned
 * (optional) is 1 when it was stored, 0 when not (incognito, or len 0).
 * LAYA_ERR_FORMAT for invalid UTF-8, LAYA_ERR_LIMIT when too long; on any
 * error nothing is stored. */
laya_status laya_memory_commit(laya_memory *m, const char *text, size_t len, int *learned, char *err,
                               size_t errlen);

/* The incognito switch, kept in the store: while on, no process using the
 * store learns anything, until it is switched off (it never turns itself
 * off). get reads the store, not a cached value. */
laya_status laya_memory_set_incognito(laya_memory *m, int on, char *err, size_t errlen);
laya_status laya_memory_get_incognito(laya_memory *m, int *on, char *err, size_t errlen);

/* Forgetting removes every trace of the commits from the file (overwritten,
 * not only unlinked) and from every process's suggestions (they reload
 * before their next one). *removed (optional) receives the number of
 * commits removed. forget_since removes the commits made at or after
 * unix_time; forget_word those that contain word (valid UTF-8) as a whole
 * word, ASCII letters in any case; a CJK word as a substring. */
laya_status laya_memory_forget_all(laya_memory *m, int64_t *removed, char *err, size_t errlen);
laya_status laya_memory_forget_since(laya_memory *m, int64_t unix_time, int64_t *removed, char *err,
                                     size_t errlen);
laya_status laya_memory_forget_word(laya_memory *m, const char *word, size_t len, int64_t *removed, char *err,
                                    size_t errlen);
/* forget_text removes the commits whose text is exactly text[0..len) (one
 * entry of laya_memory_list, as the settings window's Forget does) and
 * every feedback entry that may hold a trace of it (below). */
laya_status laya_memory_forget_text(laya_memory *m, const char *text, size_t len, int64_t *removed, char *err,
                                    size_t errlen);

/* Called by laya_memory_list for each distinct committed text: how many
 * times, first and last commit time (unix seconds). text is valid only
 * during the call. Nonzero stops the listing. It must not call laya_memory
 * functions (m is locked during the listing). */
typedef int (*laya_memory_visit)(void *ctx, const char *text, size_t len, int64_t count, int64_t first,
                                 int64_t last);

/* Visits every distinct text, most recently committed first. */
laya_status laya_memory_list(laya_memory *m, laya_memory_visit fn, void *ctx, char *err, size_t errlen);

/* Called by laya_memory_list_feedback for each feedback entry: after the
 * text context[0..clen) (the end of the line before the cursor: the
 * partial word and the two words before it) the suggestion text[0..tlen) was
 * passed over `ignored` times and taken `accepted` times (counts that
 * decay with use, so they need not be whole), last at unix time `last`.
 * Strings valid only during the call; nonzero stops. It must not call
 * laya_memory functions. */
typedef int (*laya_memory_feedback_visit)(void *ctx, const char *context, size_t clen, const char *text,
                                          size_t tlen, double ignored, double accepted, int64_t last);

/* Visits every feedback entry (laya_session_feedback), most recently
 * changed first. The forget functions above remove entries too: all of
 * them; those changed at or after unix_time; those whose context, text or
 * the two together hold the word; those whose context or text occurs
 * anywhere in the forgotten text, byte for byte (a short suggestion such
 * as "the " occurs in most texts: forget_text may take more entries than
 * came from that text, never fewer). */
laya_status laya_memory_list_feedback(laya_memory *m, laya_memory_feedback_visit fn, void *ctx, char *err,
                                      size_t errlen);

/* Reads what m's store holds into memory now (the first suggestion would
 * otherwise pay for it: about 0.3 s at the store's cap), as a program
 * that suggests does right after laya_memory_open. */
laya_status laya_memory_prepare(laya_memory *m, char *err, size_t errlen);

/* Learning for a session: with m, the session's suggestions draw on what
 * m holds and on the text typed in the session itself (names and phrases
 * that recur in a document before anything is committed); with NULL
 * (the default) they come from the model alone. m is borrowed: it must
 * outlive the session or be detached first. Committing stays the caller's
 * job (laya_memory_commit). While m is incognito nothing typed is kept,
 * not even for the session; what m already holds is still used. */
laya_status laya_session_set_memory(laya_session *s, laya_memory *m);

/* Feedback (C8): what the typist did with the suggestions shown. With a
 * memory attached, a suggestion the typist passes over in a context ranks
 * lower the next times that context comes (the next-best one shows), and
 * one taken ranks a little higher; the counts decay with use and are kept
 * in the memory's store (src/learn/learn_fb.h has the rule and numbers).
 * Without feedback calls, or without a memory, suggestions are exactly as
 * they would be without these functions.
 *
 * Each laya_suggest records its result as the list shown (copied: the
 * caller's array may change after) with the context it was made for.
 * laya_session_shown replaces it with what was really shown, when that is
 * less (laya_decide's result, a front end showing fewer): shown[0..n) are
 * copied (n <= LAYA_MAX_K, each len <= LAYA_MAX_SUGGESTION, else
 * LAYA_ERR_ARG and the list is unchanged); the context stays the one of
 * the last laya_suggest. */
laya_status laya_session_shown(laya_session *s, const laya_suggestion *shown, int n);

/* The verdict on the list shown: accepted is the index taken, or -1 when
 * the typist passed over the whole list. The list is judged once (it is
 * cleared). Nothing is recorded without a memory, in a private field, in
 * incognito, or when no list is pending (LAYA_OK in each case);
 * LAYA_ERR_ARG for an index outside the list. A store error is returned
 * (the events gathered are dropped; suggestions go on). Does not touch
 * a decider: call laya_decide_event as well. */
laya_status laya_session_feedback(laya_session *s, int accepted);

/* A private field (a password or PIN, a field marked private, a password
 * prompt): with on, the session consults no memory and keeps nothing of
 * what is typed until switched off. Callers must also not commit its text. */
laya_status laya_session_set_private(laya_session *s, int on);

/* ---- Intent (C10) ------------------------------------------------------------
 * What the user is doing, from the model's state: a small head (two linear
 * layers over the base model's hidden state after the text's stable
 * tokens, src/intent/intent.h) classifies the text before the cursor into
 * one of LAYA_INTENT_CLASSES classes, laya_intent_name(0..7):
 * schedule_meeting, send_email, search_web, file_operation, app_switch,
 * system_control, text_edit, other. The head lives in a companion file
 * (`laya intent train` writes MODEL.intent.safetensors beside the model),
 * loaded under the model's signature policy (laya_model_load). */
enum { LAYA_INTENT_CLASSES = 8 };
typedef struct laya_intent laya_intent;

/* Loads the head at path for model m (it must have been trained on m's
 * states: its size and m's checksum are checked), validated as hostile
 * input like a model: signature (opts and the environment as for
 * laya_model_load_opts), container, shapes, metadata, checksum. *out owned
 * by the caller (laya_intent_free); it may be shared by sessions on any
 * number of threads. */
laya_status laya_intent_load(const char *path, const laya_model *m, const laya_load_opts *opts, laya_intent **out,
                             char *err, size_t errlen);
void laya_intent_free(laya_intent *h);   /* NULL is ignored */
/* The name of class c (static), NULL when c is out of range. */
const char *laya_intent_name(int c);
/* The probability above which laya_session_intent reports a class (stored
 * in the file: measured when it was trained). */
float laya_intent_threshold(const laya_intent *h);

/* Attaches h (borrowed: it must outlive the session or be detached; NULL
 * detaches). LAYA_ERR_ARG when h reads states of another size. */
laya_status laya_session_set_intent(laya_session *s, const laya_intent *h);
/* The intent of the text before the cursor: *name (static) and *p, its
 * probability, when the most likely class is not "other" and p is above
 * the head's threshold; else *name NULL and *p 0. Nothing without a head
 * or in a private field. Costs one small product when the stable tokens
 * changed since the last call, nothing otherwise. */
laya_status laya_session_intent(laya_session *s, const char **name, float *p);
/* All class probabilities (by class id) for evaluation; LAYA_ERR_ARG
 * without a head. */
laya_status laya_session_intent_probs(laya_session *s, float p[LAYA_INTENT_CLASSES]);

/* ---- Notes (C11) ------------------------------------------------------------
 * The user's own notes (a folder of Markdown files) indexed in SQLite FTS5,
 * so that what is being typed can be linked to related notes. One index
 * file per user (default $XDG_DATA_HOME/laya/notes.db, folders 0700, file
 * 0600); it holds the notes' text, so it is as private as they are. Files,
 * schema, ranking and the tokenizer: src/notes/notes.h.
 *  - A laya_notes may be shared by threads (it holds a mutex).
 *  - Every function that touches the file fills err (optional, errlen
 *    bytes, caller-owned) with a sentence naming the file and a hint.
 *  - Ranking is FTS5's bm25 with the title weighted 3 and the body 1; a
 *    note's title is its first "# " heading, else its file name. Chinese
 *    (and other text written without spaces) is indexed as overlapping
 *    character bigrams, so it matches without a word list. */
typedef struct laya_notes laya_notes;

enum {
    LAYA_NOTES_MAX_FILE = 4 * 1024 * 1024,   /* bytes: larger notes are skipped */
    LAYA_NOTES_MAX_K = 8,                    /* notes per search */
    LAYA_NOTE_TITLE = 256,                   /* bytes of a laya_note's title, NUL included */
    LAYA_NOTE_PATH = 4096,                   /* ... of its path */
    LAYA_NOTE_SNIPPET = 384                  /* ... of its snippet */
};

/* One related note. Strings are NUL-terminated, valid UTF-8, cut at a
 * character boundary to fit. score: bm25, lower is better (negative). */
typedef struct {
    char title[LAYA_NOTE_TITLE];
    char path[LAYA_NOTE_PATH];
    char snippet[LAYA_NOTE_SNIPPET];   /* a few words around the match, the matches in [brackets] */
    double score;
} laya_note;

/* The path laya_notes_open(NULL, ...) uses, into buf (n bytes):
 * $XDG_DATA_HOME/laya/notes.db, else $HOME/.local/share/laya/notes.db.
 * Creates nothing. LAYA_ERR_ARG when neither is absolute, LAYA_ERR_LIMIT
 * when buf is too small. */
laya_status laya_notes_default_path(char *buf, size_t n, char *err, size_t errlen);

/* Opens (creating it when missing, unless create is 0) the index at path
 * (NULL: the default path; ":memory:": a private index that lives until
 * freed). *out is owned by the caller (laya_notes_free); NULL on error. A
 * file that is not a Laya notes index, is damaged or from a newer Laya is
 * refused and left unmodified. LAYA_ERR_UNSUPPORTED when the SQLite in use
 * was built without FTS5. create 0 and no file: LAYA_ERR_IO. */
laya_status laya_notes_open(const char *path, int create, laya_notes **out, char *err, size_t errlen);
void laya_notes_free(laya_notes *n);   /* NULL is ignored */
const char *laya_notes_path(const laya_notes *n);   /* owned by n */

/* What laya_notes_index did with one file or folder. */
typedef enum {
    LAYA_NOTE_ADDED = 0,   /* new, indexed */
    LAYA_NOTE_UPDATED,     /* its content changed: indexed again */
    LAYA_NOTE_UNCHANGED,   /* same size, time and content: not read again (or read, hash equal) */
    LAYA_NOTE_REMOVED,     /* gone from the folder (or now skipped): out of the index */
    LAYA_NOTE_SKIPPED      /* not indexed: reason says why (binary, too large, not UTF-8, unreadable) */
} laya_note_event;

/* Called once per file (and per unreadable folder) as the index goes;
 * path and reason (NULL unless SKIPPED) valid only during the call. It
 * must not call laya_notes functions on the same handle. */
typedef void (*laya_notes_report)(void *ctx, laya_note_event ev, const char *path, const char *reason);

typedef struct {
    int64_t added, updated, unchanged, removed, skipped;
    int64_t notes;   /* notes in the index afterwards (every folder indexed so far) */
} laya_notes_summary;

/* Brings the index up to the folder dir (recursively; files named *.md or
 * *.markdown; symbolic links are not followed): new and changed files are
 * (re)indexed, files whose size and modification time are unchanged are
 * not read, notes that were under dir and are gone are removed. Notes of
 * other folders stay. Work is committed in batches of transactions: a
 * process killed midway leaves a valid index holding every batch before
 * the kill, and the next run finishes the job. Binary files (a NUL byte),
 * files over LAYA_NOTES_MAX_FILE bytes, invalid UTF-8 and files or folders
 * that cannot be read are skipped, each reported through fn (optional) with
 * a reason; they are not errors. The notes below a folder that cannot be
 * read are kept as they were. *sum (optional) gets the counts. An error
 * (the index cannot be written, dir is not a folder) stops the run; what
 * was committed before stays. */
laya_status laya_notes_index(laya_notes *n, const char *dir, laya_notes_report fn, void *ctx,
                             laya_notes_summary *sum, char *err, size_t errlen);

/* The notes best matching the words of query (len bytes of UTF-8; the
 * query is never parsed as FTS5 syntax: any text is safe), best first, at
 * most k (<= LAYA_NOTES_MAX_K). A note matches when it holds any of the
 * words; more of them and rarer ones rank higher. *n_out 0: nothing. */
laya_status laya_notes_search(laya_notes *n, const char *query, size_t len, int k, laya_note *out, int *n_out,
                              char *err, size_t errlen);

/* Runs SQLite's and FTS5's integrity checks over the index. LAYA_ERR_FORMAT
 * with the finding when damaged. */
laya_status laya_notes_check(laya_notes *n, char *err, size_t errlen);

/* Related notes for a session: with n, laya_session_notes returns the
 * notes related to the sentence being typed; NULL (the default) detaches.
 * n is borrowed: it must outlive the session or be detached first. */
laya_status laya_session_set_notes(laya_session *s, laya_notes *n);

/* The notes (at most k <= LAYA_NOTES_MAX_K) related to the names and terms
 * of the current sentence (the context back to the last sentence end):
 * words not in a small stop list, capitalised names, runs of CJK
 * characters. The index is queried only when that set of terms changes,
 * which happens only at a word end (a space or punctuation typed, or CJK
 * text committed): other keystrokes cost the term extraction only and get
 * the last answer. *out points into the session, valid until the next call
 * on it. *n_out 0 in a private field (nothing is looked up) and without
 * notes attached. An index error gives no notes (the typing goes on) and
 * is returned. */
laya_status laya_session_notes(laya_session *s, int k, const laya_note **out, int *n_out);

/* ---- One keystroke pipeline (C1, C7, C8, C9) --------------------------------
 * What a front end (the daemon, the IBus engine, the fcitx5 addon, `laya
 * type`, `laya complete`) calls for every thing the typist does, and what it
 * shows: laya_session_event. The library owns every rule between the two,
 * so every front end behaves the same (docs/DESIGN.md, "The keystroke
 * pipeline"):
 *  - the privacy gate: a secret field (password or PIN purpose, a field
 *    marked secret, a password prompt before the cursor) gets nothing:
 *    no suggestion, no notes, no intent, nothing learned or kept; a private
 *    field (a private window) and incognito keep and learn nothing and show
 *    nothing drawn from the user's memory or notes;
 *  - spacing after an accepted suggestion that ends in a blank (a blank typed
 *    next is not doubled; . , ; : ! ? go before the blank);
 *  - the decision (C7) where the front end asks for it, fed from the events;
 *  - feedback (what was taken, passed over or dismissed) and learning (what
 *    is committed), kept on disk only for committed text.
 * The front end translates its toolkit's events into laya_input and shows
 * the laya_view; it never calls laya_suggest, laya_decide or
 * laya_session_feedback itself. */

/* What the field is (laya_input.field, on every event: it may change). */
enum {
    LAYA_FIELD_SECRET = 1u << 0,    /* a password, PIN or the like: the gate is shut */
    LAYA_FIELD_PRIVATE = 1u << 1,   /* a private window: nothing kept, nothing personal shown */
    LAYA_FIELD_NO_DELETE = 1u << 2, /* the front end cannot delete text before the cursor */
    LAYA_FIELD_ONE_LINE = 1u << 3,  /* a one-line field: suggestions stop before a line break */
    LAYA_FIELD_CLIENT_JUDGES = 1u << 4  /* the client reports every verdict itself (ACCEPT, DISMISS: the
                                           protocol's feedback); typing on past a list judges nothing,
                                           and the list stays to be judged until the next one */
};

/* What the front end wants in the view (laya_input.want). */
enum {
    LAYA_WANT_SUGGEST = 1u << 0,   /* the suggestions for the text after the event */
    LAYA_WANT_DECIDE = 1u << 1,    /* ... filtered by the session's decision (C7) */
    LAYA_WANT_INTENT = 1u << 2,    /* the intent (C10), where a head is attached */
    LAYA_WANT_NOTES = 1u << 3      /* the related notes (C11), where notes are attached */
};

typedef enum {
    LAYA_INPUT_CONTEXT = 0, /* text[0..len) is now the whole text before the cursor (a key the
                               front end applied itself, an edit, a cursor move, a paste); text
                               added at the end passes over the list shown, any other change
                               drops it unjudged */
    LAYA_INPUT_KEY,         /* text[0..len) (one character) typed at the cursor: apply view.erase
                               and view.insert, not the key itself */
    LAYA_INPUT_ERASE,       /* Backspace: the character before the cursor erased */
    LAYA_INPUT_ACCEPT,      /* the suggestion `index` of the last view taken (`word`: its first word
                               only): apply view.erase and view.insert */
    LAYA_INPUT_DISMISS,     /* the list passed over and hidden (Esc) */
    LAYA_INPUT_COMMIT,      /* text[0..len) was committed (a line ended, a message sent): learned
                               unless the gate forbids it; the context is kept; the list shown
                               is not judged (an Enter that ends the line: DISMISS first) */
    LAYA_INPUT_FOCUS,       /* focus moved to another field, whose text before the cursor is
                               text[0..len) (empty: unknown); the list is dropped unjudged */
    LAYA_INPUT_SHOW         /* nothing happened: the view for the context as it is (a front end
                               that computes suggestions after the key's reply, or after a burst) */
} laya_input_kind;

typedef struct {
    laya_input_kind kind;
    const char *text;   /* CONTEXT, KEY, COMMIT, FOCUS: bytes (UTF-8), read during the call */
    size_t len;
    int index;          /* ACCEPT: which suggestion of the last view */
    int word;           /* ACCEPT: 1 takes only its first word */
    unsigned field;     /* LAYA_FIELD_* */
    unsigned want;      /* LAYA_WANT_* */
    int k;              /* suggestions wanted, 1..LAYA_MAX_K (0: 3) */
    double t_ms;        /* when, in ms on a clock that never goes back (< 0: now) */
} laya_input;

enum { LAYA_VIEW_NOTES = 3 };

typedef struct {
    /* KEY and ACCEPT: what to do to the text: erase `erase` bytes before the
     * cursor, then insert insert[0..insert_len). A KEY whose view has erase 0
     * and insert equal to the key may be let through to the application. */
    size_t erase;
    const char *insert;
    size_t insert_len;
    /* What to show (0: nothing): list[0] is the ghost text at the cursor,
     * all of them the list. Texts point into the session, valid until the
     * next call on it. */
    int n;
    laya_suggestion list[LAYA_MAX_K];
    int gate;              /* 2: secret (nothing shown, learned or looked up), 1: private or
                              incognito (nothing kept), 0: open */
    const char *held;      /* why the decision showed nothing ("burst", ...; static), or NULL */
    const char *intent;    /* LAYA_WANT_INTENT: the class (static) when reported, else NULL */
    float intent_p;
    int n_notes;           /* LAYA_WANT_NOTES: related notes, best first (into the session) */
    const laya_note *notes;
    int learned;           /* COMMIT: 1 when the text was stored */
    const char *error;     /* why a COMMIT was not stored (a sentence naming the file and a
                              hint; into the session), or NULL */
    int changed;           /* 1 when the event changed the context */
} laya_view;

/* Applies the event in to s and fills *view (caller-owned; every field set).
 * LAYA_ERR_ARG for a bad kind or index, or text missing; a store error of a
 * COMMIT or of the feedback is returned after the rest was done (the view
 * is still right). See the top of this section for the rules. */
laya_status laya_session_event(laya_session *s, const laya_input *in, laya_view *view);

/* Where the front end asks for the decision: the decider is the session's
 * own, made on the first LAYA_WANT_DECIDE (NULL before). Borrowed. */
laya_decider *laya_session_decider(laya_session *s);

#ifdef __cplusplus
}
#endif
#endif
