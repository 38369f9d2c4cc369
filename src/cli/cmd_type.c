/* cmd_type.c - `laya type`: the interactive demo. A one-line-at-a-time
 * UTF-8 editor in the terminal's raw mode that shows the best suggestion as
 * grey ghost text at the cursor and the others on the line below.
 *
 * Keys: text (any UTF-8, Chinese from an input method included) inserts;
 * Backspace deletes one character; Left/Right, Home/End (or Ctrl-A/Ctrl-E)
 * move; Delete deletes forward; Ctrl-U deletes to the line start; Enter
 * commits the line and starts a new one (the lines stay in the context);
 * Tab (or Alt-1) accepts the ghost text, Alt-2/Alt-3 accept the others
 * (a suggestion may end with the blank after its word: . , ; : ! ? typed
 * right after it goes before that blank);
 * Esc hides the suggestions until the next key; Ctrl-L redraws; Ctrl-C or
 * Ctrl-D quits. The ghost is drawn only with the cursor at the end of the
 * line: inside text it would read as text, so there the suggestions are
 * only on the line below ("Tab: ..."). A resize (SIGWINCH) redraws.
 * The terminal is restored on every way out (quit, error exit, SIGTERM,
 * SIGHUP, SIGQUIT), the ghost and the suggestion line erased and the line
 * left as typed. Lines wider than the terminal scroll horizontally.
 *
 * An adapter over the library's keystroke pipeline (laya_session_event,
 * include/laya.h): each key becomes an event (a character: KEY, whose view
 * says what to erase and insert instead; Backspace: ERASE; Tab, Alt-N:
 * ACCEPT; Esc: DISMISS; Enter: COMMIT of the line; anything else the
 * context as it now is), and the view is drawn. The library decides what
 * the IBus engine and the fcitx5 addon decide the same way: the privacy
 * gate (nothing after a password prompt), the spacing after an accepted
 * suggestion that ends in a blank (a blank typed next is not doubled,
 * . , ; : ! ? go before it), the verdict on the list shown (feedback: taken,
 * or passed over by Esc or by typing on past it; a cursor move, Delete,
 * Ctrl-U or Ctrl-L is no verdict) and what is learned (a committed line;
 * feedback only with the committed line that holds its context). There is
 * no decision here (every list computed is drawn, as for the perfect
 * typist of `laya eval`). A read holding several keys (a paste, a fast
 * burst) judges the list on screen once, at its first key that counts; a
 * Tab or Alt-N after a key that typed or erased in the same read takes
 * nothing (the list on screen was for the text before that key).
 *
 * Between keys (no input waiting when the loop would block on read) the
 * session computes ahead the search the next key needs if it types what
 * the ghost guessed (laya_session_prefetch): the "(x ms)" shown beside the
 * suggestions is then what a typist who pauses between keys waits. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "util/utf8.h"

enum { MAX_LINE = 4096, SHOW = 3 };

static struct termios saved_tio;
static volatile sig_atomic_t raw_on, winch;

/* What the screen must show when we leave: the edit line as typed (no
 * ghost) and the suggestion line erased, the cursor at its start. A signal
 * handler may have to write it, and only write() is safe there, so every
 * render prepares it beforehand: two buffers, bye_cur names the complete
 * one (-1: none, the cursor is on an empty line). */
enum { OUT_MAX = 4 * MAX_LINE + 1024 };
static char bye_buf[2][OUT_MAX];
static size_t bye_len[2];
static volatile sig_atomic_t bye_cur = -1;

static void restore_terminal(void) {
    if (!raw_on) return;
    raw_on = 0;
    static const char plain[] = "\x1b[0m\r\n\x1b[K";
    int b = bye_cur;
    const char *bye = b >= 0 ? bye_buf[b] : plain;
    size_t n = b >= 0 ? bye_len[b] : sizeof plain - 1;
    if (write(STDOUT_FILENO, bye, n) < 0) { /* nothing left to do */ }
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
}

static void on_signal(int sig) {
    restore_terminal();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_winch(int sig) {
    winch = 1;
}

static void raw_mode(void) {
    if (tcgetattr(STDIN_FILENO, &saved_tio) != 0) cli_die("type: cannot read the terminal settings: %s", strerror(errno));
    struct termios t = saved_tio;
    t.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    t.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    t.c_cflag |= CS8;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    atexit(restore_terminal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    signal(SIGQUIT, on_signal);
    /* No SA_RESTART: a resize interrupts the read, and the loop redraws. */
    struct sigaction sa = {.sa_handler = on_winch};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, NULL);
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) != 0) cli_die("type: cannot switch the terminal to raw mode: %s", strerror(errno));
    raw_on = 1;
}

/* Terminal columns of code point c: 2 for East Asian wide and full-width
 * characters and most emoji, 0 for combining marks, else 1. */
static int cp_width(uint32_t c) {
    if ((c >= 0x300 && c <= 0x36F) || (c >= 0x200B && c <= 0x200F) || (c >= 0xFE00 && c <= 0xFE0F)) return 0;
    if ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) || (c >= 0xAC00 && c <= 0xD7A3) ||
        (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
        (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) || (c >= 0x1F900 && c <= 0x1F9FF) ||
        (c >= 0x20000 && c <= 0x3FFFD))
        return 2;
    return 1;
}

static int text_width(const char *s, size_t n) {
    const uint8_t *u = (const uint8_t *)s;
    int w = 0;
    for (size_t i = 0; i < n;) {
        size_t j = utf8_next(u, n, i);
        uint32_t c = u[i];
        if (j - i == 2) c = (u[i] & 0x1Fu) << 6 | (u[i + 1] & 0x3Fu);
        else if (j - i == 3) c = (u[i] & 0x0Fu) << 12 | (u[i + 1] & 0x3Fu) << 6 | (u[i + 2] & 0x3Fu);
        else if (j - i == 4)
            c = (u[i] & 0x07u) << 18 | (u[i + 1] & 0x3Fu) << 12 | (u[i + 2] & 0x3Fu) << 6 | (u[i + 3] & 0x3Fu);
        w += cp_width(c);
        i = j;
    }
    return w;
}

/* The longest prefix of s[0..n) (whole characters) at most cols wide. */
static size_t fit(const char *s, size_t n, int cols) {
    size_t i = 0;
    int w = 0;
    while (i < n) {
        size_t j = utf8_next((const uint8_t *)s, n, i);
        int cw = text_width(s + i, j - i);
        if (w + cw > cols) break;
        w += cw;
        i = j;
    }
    return i;
}

typedef struct {
    laya_model *m;
    laya_session *s;
    laya_memory *mem;       /* the user's memory (NULL with --no-learn) */
    char *doc;              /* committed lines, each ending in '\n' */
    size_t doc_len, doc_cap;
    char line[MAX_LINE];
    size_t len, cur;        /* bytes in line; cursor offset (a character start) */
    char *ctx;              /* doc + line[0..cur): the engine's context */
    laya_suggestion sug[SHOW];   /* the view's list (texts in the session) */
    int n_sug, hidden;
    int ahead_due;          /* suggestions refreshed since the last prefetch */
    double ms;
    int caret;              /* the cursor's column in the last render */
} editor;

/* The terminal's width; 0 when unknown. */
static int term_width(void) {
    struct winsize ws;
    return ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

/* The width we draw for (narrower terminals get 80 and wrap). */
static int term_cols(void) {
    int w = term_width();
    return w >= 20 ? w : 80;
}

/* One event of the pipeline on the one-line field; a failure costs the
 * suggestions (*v is then empty), never the text typed. */
static laya_status event(editor *e, laya_input_kind kind, const char *text, size_t len, int index, unsigned want,
                         laya_view *v) {
    laya_input in = {.kind = kind, .text = text, .len = len, .index = index, .field = LAYA_FIELD_ONE_LINE,
                     .want = want, .k = SHOW, .t_ms = -1};
    laya_status st = laya_session_event(e->s, &in, v);
    if (st != LAYA_OK && st != LAYA_ERR_IO) memset(v, 0, sizeof *v);
    return st;
}

/* The context as the editor has it (the committed lines and the line up to
 * the cursor), and the suggestions for it unless hidden. */
static void refresh_suggestions(editor *e) {
    size_t n = e->doc_len + e->cur;
    e->ctx = realloc(e->ctx, n + 1);
    if (!e->ctx) cli_die("out of memory");
    if (e->doc_len) memcpy(e->ctx, e->doc, e->doc_len);
    memcpy(e->ctx + e->doc_len, e->line, e->cur);
    struct timespec t0, t1;
    laya_view v;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    event(e, LAYA_INPUT_CONTEXT, e->ctx, n, 0, e->hidden ? 0 : LAYA_WANT_SUGGEST, &v);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    e->n_sug = v.n < SHOW ? v.n : SHOW;
    memcpy(e->sug, v.list, (size_t)e->n_sug * sizeof *e->sug);
    e->ahead_due = e->n_sug > 0;
    e->ms = 1e3 * (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_nsec - t0.tv_nsec);
}

/* Writes the edit line to out[0..cap) from its start: "\r", erase, the
 * prompt, the part of the line that fits (scrolled so the cursor and a
 * little ghost fit) and, when `ghost`, the ghost text at the cursor. The
 * ghost is drawn only with the cursor at the end of the line. Returns the
 * bytes written; *caret gets the cursor's column. */
static int draw_line(const editor *e, int ghost, char *out, size_t cap, int *caret) {
    static const char prompt[] = "> ";
    int cols = term_cols() - 1, pw = 2;
    int show = ghost && !e->hidden && e->n_sug && e->cur == e->len;
    const char *g_text = show ? e->sug[0].text : "";
    size_t glen = show ? e->sug[0].len : 0;
    int room = cols - pw - (text_width(g_text, glen) < 16 ? text_width(g_text, glen) : 16);
    size_t start = 0;
    while (start < e->cur && text_width(e->line + start, e->cur - start) > room)
        start = utf8_next((const uint8_t *)e->line, e->len, start);
    int used = pw + text_width(e->line + start, e->cur - start);
    int o = snprintf(out, cap, "\r\x1b[K%s", prompt);
    memcpy(out + o, e->line + start, e->cur - start);
    o += (int)(e->cur - start);
    size_t g = fit(g_text, glen, cols - used);
    if (g) o += snprintf(out + o, cap - (size_t)o, "\x1b[90m%.*s\x1b[0m", (int)g, g_text);
    int after = used + text_width(g_text, g);
    size_t r = fit(e->line + e->cur, e->len - e->cur, cols - after);
    memcpy(out + o, e->line + e->cur, r);
    o += (int)r;
    *caret = used;
    return o;
}

/* Redraws the edit line and, below it, the suggestions not shown as the
 * ghost (all of them when the cursor is inside the text) and the engine's
 * time, then puts the cursor back; prepares what to leave on exit. */
static void render(editor *e) {
    int cols = term_cols() - 1, caret;
    char out[OUT_MAX];
    int o = draw_line(e, 1, out, sizeof out, &caret);
    o += snprintf(out + o, sizeof out - (size_t)o, "\r\n\x1b[K\x1b[90m");
    int w = 0;
    if (!e->hidden) {
        int first = e->cur == e->len ? 1 : 0;   /* 0: no ghost, Tab takes the first */
        for (int i = first; i < e->n_sug; i++) {
            char lab[16];
            int lw = i ? snprintf(lab, sizeof lab, "  Alt-%d: ", i + 1) : snprintf(lab, sizeof lab, "  Tab: ");
            size_t f = fit(e->sug[i].text, e->sug[i].len, cols - w - lw - 2);
            if (w + lw + 2 > cols || f < e->sug[i].len) break;
            o += snprintf(out + o, sizeof out - (size_t)o, "%s\"%.*s\"", lab, (int)f, e->sug[i].text);
            w += lw + 2 + text_width(e->sug[i].text, f);
        }
        char t[48];
        int tw = snprintf(t, sizeof t, "  (%.2f ms)", e->ms);
        if (w + tw <= cols) o += snprintf(out + o, sizeof out - (size_t)o, "%s", t);
    }
    o += snprintf(out + o, sizeof out - (size_t)o, "\x1b[0m\x1b[A\r");
    if (caret > 0) o += snprintf(out + o, sizeof out - (size_t)o, "\x1b[%dC", caret);
    if (write(STDOUT_FILENO, out, (size_t)o) < 0) exit(1);
    e->caret = caret;

    int next = bye_cur == 0 ? 1 : 0, unused;
    int b = draw_line(e, 0, bye_buf[next], OUT_MAX, &unused);
    b += snprintf(bye_buf[next] + b, OUT_MAX - (size_t)b, "\x1b[0m\r\n\x1b[K");
    bye_len[next] = (size_t)b;
    bye_cur = next;
}

static void insert(editor *e, const char *b, size_t n) {
    if (e->len + n > MAX_LINE) {
        if (write(STDOUT_FILENO, "\a", 1) < 0) exit(1);
        return;
    }
    memmove(e->line + e->cur + n, e->line + e->cur, e->len - e->cur);
    memcpy(e->line + e->cur, b, n);
    e->len += n;
    e->cur += n;
}

static void erase(editor *e, size_t from, size_t to) {
    memmove(e->line + from, e->line + to, e->len - to);
    e->len -= to - from;
    e->cur = from;
}

/* Suggestion i of the list on screen taken (the library refuses one that
 * is no longer there: a key in the same read came first). */
static void accept(editor *e, int i) {
    laya_view v;
    if (e->hidden || i >= e->n_sug || event(e, LAYA_INPUT_ACCEPT, NULL, 0, i, 0, &v) != LAYA_OK) return;
    char buf[LAYA_MAX_SUGGESTION + 4];
    memcpy(buf, v.insert, v.insert_len);   /* the text lives in the session */
    insert(e, buf, v.insert_len);
}

/* A character typed: what the library says to do instead of it (the blank
 * after an accepted suggestion is not doubled, punctuation goes before it). */
static void type_char(editor *e, const char *c, size_t n) {
    laya_view v;
    if (event(e, LAYA_INPUT_KEY, c, n, 0, 0, &v) != LAYA_OK) {
        insert(e, c, n);
        return;
    }
    char buf[8];
    memcpy(buf, v.insert, v.insert_len);
    size_t del = v.erase <= e->cur ? v.erase : 0;
    if (del) erase(e, e->cur - del, e->cur);
    if (v.insert_len) insert(e, buf, v.insert_len);
}

static void commit_line(editor *e) {
    size_t need = e->doc_len + e->len + 1;
    if (need > e->doc_cap) {
        e->doc_cap = need * 2;
        e->doc = realloc(e->doc, e->doc_cap);
        if (!e->doc) cli_die("out of memory");
    }
    memcpy(e->doc + e->doc_len, e->line, e->len);
    e->doc_len += e->len;
    e->doc[e->doc_len++] = '\n';
    /* A finished line is what the user really typed: the library learns it
     * (unless after a password prompt). A store that cannot take it costs
     * the line's learning, not the demo. */
    laya_view v;
    event(e, LAYA_INPUT_COMMIT, e->line, e->len, 0, 0, &v);
    /* Show the finished line without ghost text, then start a fresh one. */
    e->hidden = 1;
    e->cur = e->len;
    render(e);
    bye_cur = -1;
    if (write(STDOUT_FILENO, "\r\n", 2) < 0) exit(1);
    e->len = e->cur = 0;
    e->hidden = 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya type [--model PATH] [--memory PATH | --no-learn]\n"
            "Type with suggestions. The best one shows as grey text at the cursor, the\n"
            "others on the line below.\n"
            "  Tab or Alt-1     accept the grey suggestion    Alt-2, Alt-3  accept another\n"
            "  Esc              hide suggestions until the next key\n"
            "  Left/Right, Home/End (Ctrl-A/Ctrl-E)   move     Backspace/Delete  erase\n"
            "  Ctrl-U           erase to the line start       Enter  new line\n"
            "  Ctrl-L           redraw                        Ctrl-C, Ctrl-D  quit\n"
            "Inside the text the suggestions show only on the line below (Tab still takes\n"
            "the first).\n"
            "Every finished line is learned into the memory (--memory PATH, else\n"
            "$LAYA_MEMORY, else $XDG_DATA_HOME/laya/memory.db) unless --no-learn.\n"
            "Needs a terminal; for scripts use 'laya complete' or 'laya serve --stdio'.\n");
}

int cmd_type(int argc, char **argv) {
    const char *model_path = NULL, *memory_path = NULL;
    int no_learn = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--no-learn")) {
            no_learn = 1;
        } else if (!strcmp(argv[i], "--memory")) {
            if (i + 1 >= argc) cli_die("--memory expects a path");
            memory_path = argv[++i];
        } else if (!strcmp(argv[i], "--model")) {
            if (i + 1 >= argc) cli_die("--model expects a path");
            model_path = argv[++i];
        } else {
            usage(stderr);
            cli_die("type: unknown option '%s'", argv[i]);
        }
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        cli_die("type: needs a terminal on stdin and stdout (for scripts use 'laya complete TEXT' "
                "or 'laya serve --stdio')");
    editor e = {0};
    e.m = cli_load_model(model_path);
    if (laya_session_new(e.m, &e.s) != LAYA_OK) cli_die("type: cannot open a session (out of memory?)");
    if (!no_learn) {
        char err[512] = "";
        e.mem = cli_open_memory(memory_path);
        if (laya_memory_prepare(e.mem, err, sizeof err) != LAYA_OK)
            fprintf(stderr, "laya type: the memory could not be read (%s); going on\n", err);
        laya_session_set_memory(e.s, e.mem);
    }
    printf("laya type: Tab accepts the grey suggestion, Alt-2/Alt-3 the others, Esc hides,"
           " Ctrl-C quits.\r\n");
    fflush(stdout);
    raw_mode();
    refresh_suggestions(&e);
    render(&e);

    char pend[8];           /* an incomplete UTF-8 character split across reads */
    size_t npend = 0;
    for (;;) {
        char in[256];
        struct pollfd pf = {.fd = STDIN_FILENO, .events = POLLIN};
        int more = e.ahead_due;
        while (more && poll(&pf, 1, 0) == 0)
            if (laya_session_prefetch(e.s, &more) != LAYA_OK) more = 0;
        e.ahead_due = 0;
        ssize_t n = read(STDIN_FILENO, in, sizeof in);
        if (n < 0 && errno == EINTR) {
            if (winch) {
                /* A narrower terminal that reflows (VTE, tmux, kitty...)
                 * wraps the edit line and leaves the cursor caret/width rows
                 * below its start: go back up there, erase down and draw
                 * again at the new width. (One that cuts lines instead,
                 * like xterm, loses that many rows above it.) */
                winch = 0;
                int w = term_width(), up = w > 0 ? e.caret / w : 0;
                char buf[32];
                int k = up ? snprintf(buf, sizeof buf, "\x1b[%dA\r\x1b[J", up) : snprintf(buf, sizeof buf, "\r\x1b[J");
                if (write(STDOUT_FILENO, buf, (size_t)k) < 0) exit(1);
                render(&e);
            }
            continue;
        }
        if (n <= 0) break;
        int was_hidden = e.hidden, quit = 0;
        laya_view v;
        /* the list drawn before this read, while it is still for the text as
         * it is: a key taken, passed over or that moved or edited ends it
         * (the library judges it: laya_session_event) */
        int live = !was_hidden && e.n_sug > 0;
        e.hidden = 0;
        for (ssize_t i = 0; i < n && !quit; i++) {
            unsigned char c = (unsigned char)in[i];
            size_t len0 = e.len, cur0 = e.cur;
            if (c == 0x1b) {
                /* Escape sequences arrive in one read; a lone ESC is the key. */
                if (i + 1 >= n) {
                    /* dismissed: the list ranks lower after this context next time */
                    if (live) event(&e, LAYA_INPUT_DISMISS, NULL, 0, 0, 0, &v);
                    live = 0;
                    e.hidden = 1;
                    continue;
                }
                unsigned char d = (unsigned char)in[i + 1];
                if (d >= '1' && d <= '3') {
                    e.hidden = was_hidden;
                    if (live && d - '1' < e.n_sug) {
                        live = 0;
                        accept(&e, d - '1');
                    }
                    i++;
                    continue;
                }
                if (d != '[' && d != 'O') { i++; continue; }
                ssize_t j = i + 2;
                while (j < n && !((in[j] >= 'A' && in[j] <= 'Z') || in[j] == '~')) j++;
                if (j >= n) { i = n; continue; }
                char f = in[j];
                char arg = j > i + 2 ? in[i + 2] : 0;
                if (f == 'C' && e.cur < e.len) e.cur = utf8_next((const uint8_t *)e.line, e.len, e.cur);
                else if (f == 'D') e.cur = utf8_prev((const uint8_t *)e.line, e.cur);
                else if (f == 'H' || (f == '~' && (arg == '1' || arg == '7'))) e.cur = 0;
                else if (f == 'F' || (f == '~' && (arg == '4' || arg == '8'))) e.cur = e.len;
                else if (f == '~' && arg == '3' && e.cur < e.len)
                    erase(&e, e.cur, utf8_next((const uint8_t *)e.line, e.len, e.cur));
                i = j;
            } else if (c == 3 || c == 4) {
                quit = 1;
            } else if (c == '\t') {
                e.hidden = was_hidden;
                if (live) {
                    live = 0;
                    accept(&e, 0);
                }
            } else if (c == '\r' || c == '\n') {
                commit_line(&e);
            } else if (c == 0x7f || c == 8) {
                if (e.cur) {
                    event(&e, LAYA_INPUT_ERASE, NULL, 0, 0, 0, &v);
                    erase(&e, utf8_prev((const uint8_t *)e.line, e.cur), e.cur);
                }
            } else if (c == 0x15) {
                erase(&e, 0, e.cur);
            } else if (c == 0x0c) {
                /* Ctrl-L: a clean screen, our lines at the top (render below). */
                e.hidden = was_hidden;
                if (write(STDOUT_FILENO, "\x1b[H\x1b[2J", 7) < 0) exit(1);
            } else if (c == 1) {
                e.cur = 0;
            } else if (c == 5) {
                e.cur = e.len;
            } else if (c >= 0x20) {
                /* Text: whole characters only, holding a split one. */
                pend[npend++] = (char)c;
                int r = utf8_check((const uint8_t *)pend, npend);
                if (r == 0) { type_char(&e, pend, npend); npend = 0; }
                else if (r < 0 || npend >= 4) npend = 0;
            }
            if (e.len != len0 || e.cur != cur0) live = 0;
        }
        if (quit) break;
        refresh_suggestions(&e);
        render(&e);
    }
    restore_terminal();
    laya_session_free(e.s);
    laya_memory_free(e.mem);
    laya_model_free(e.m);
    free(e.doc);
    free(e.ctx);
    return 0;
}
