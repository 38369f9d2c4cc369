/* cmd_type.c - `laya type`: the interactive demo. A one-line-at-a-time
 * UTF-8 editor in the terminal's raw mode that shows the best suggestion as
 * grey ghost text at the cursor and the others on the line below.
 *
 * Keys: text (any UTF-8, Chinese from an input method included) inserts;
 * Backspace deletes one character; Left/Right, Home/End (or Ctrl-A/Ctrl-E)
 * move; Delete deletes forward; Ctrl-U deletes to the line start; Enter
 * commits the line and starts a new one (the lines stay in the context);
 * Tab (or Alt-1) accepts the ghost text, Alt-2/Alt-3 accept the others;
 * Esc hides the suggestions until the next key; Ctrl-C or Ctrl-D quits.
 * The terminal is restored on every way out (quit, error exit, SIGTERM,
 * SIGHUP). Lines wider than the terminal scroll horizontally. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine/utf8.h"

enum { MAX_LINE = 4096, SHOW = 3 };

static struct termios saved_tio;
static volatile sig_atomic_t raw_on;

static void restore_terminal(void) {
    if (!raw_on) return;
    raw_on = 0;
    /* Leave the cursor below the suggestion line, colours reset. */
    static const char bye[] = "\x1b[0m\r\n\x1b[K";
    if (write(STDOUT_FILENO, bye, sizeof bye - 1) < 0) { /* nothing left to do */ }
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
}

static void on_signal(int sig) {
    restore_terminal();
    signal(sig, SIG_DFL);
    raise(sig);
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
    char *doc;              /* committed lines, each ending in '\n' */
    size_t doc_len, doc_cap;
    char line[MAX_LINE];
    size_t len, cur;        /* bytes in line; cursor offset (a character start) */
    char *ctx;              /* doc + line[0..cur): the engine's context */
    laya_suggestion sug[SHOW];
    int n_sug, hidden;
    double ms;
} editor;

static int term_cols(void) {
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    return 80;
}

static void refresh_suggestions(editor *e) {
    size_t n = e->doc_len + e->cur;
    e->ctx = realloc(e->ctx, n + 1);
    if (!e->ctx) cli_die("out of memory");
    if (e->doc_len) memcpy(e->ctx, e->doc, e->doc_len);
    memcpy(e->ctx + e->doc_len, e->line, e->cur);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    laya_status st = laya_session_set_context(e->s, e->ctx, n);
    if (st == LAYA_OK) st = laya_suggest(e->s, SHOW, e->sug, &e->n_sug);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != LAYA_OK) e->n_sug = 0;
    e->ms = 1e3 * (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_nsec - t0.tv_nsec);
}

/* Redraws the edit line (prompt, text, ghost text at the cursor) and the
 * line of other suggestions below it, then puts the cursor back. */
static void render(editor *e) {
    static const char prompt[] = "> ";
    int cols = term_cols() - 1, pw = 2;
    const char *ghost = !e->hidden && e->n_sug ? e->sug[0].text : "";
    size_t glen = !e->hidden && e->n_sug ? e->sug[0].len : 0;
    /* Scroll so the cursor and a little ghost text fit. */
    int room = cols - pw - (text_width(ghost, glen) < 16 ? text_width(ghost, glen) : 16);
    size_t start = 0;
    while (start < e->cur && text_width(e->line + start, e->cur - start) > room)
        start = utf8_next((const uint8_t *)e->line, e->len, start);
    int used = pw + text_width(e->line + start, e->cur - start);
    char out[4 * MAX_LINE + 1024];
    int o = snprintf(out, sizeof out, "\r\x1b[K%s", prompt);
    memcpy(out + o, e->line + start, e->cur - start);
    o += (int)(e->cur - start);
    size_t g = fit(ghost, glen, cols - used);
    o += snprintf(out + o, sizeof out - (size_t)o, "\x1b[90m%.*s\x1b[0m", (int)g, ghost);
    int after = used + text_width(ghost, g);
    size_t r = fit(e->line + e->cur, e->len - e->cur, cols - after);
    memcpy(out + o, e->line + e->cur, r);
    o += (int)r;
    /* The line below: the other suggestions and the engine's time. */
    o += snprintf(out + o, sizeof out - (size_t)o, "\r\n\x1b[K\x1b[90m");
    int w = 0;
    if (!e->hidden) {
        for (int i = 1; i < e->n_sug; i++) {
            char lab[16];
            int lw = snprintf(lab, sizeof lab, "  Alt-%d: ", i + 1);
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
    if (used > 0) o += snprintf(out + o, sizeof out - (size_t)o, "\x1b[%dC", used);
    if (write(STDOUT_FILENO, out, (size_t)o) < 0) exit(1);
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

static void accept(editor *e, int i) {
    if (e->hidden || i >= e->n_sug) return;
    char buf[LAYA_MAX_SUGGESTION + 1];
    size_t n = e->sug[i].len;
    memcpy(buf, e->sug[i].text, n);   /* the suggestion lives in the session */
    insert(e, buf, n);
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
    /* Show the finished line without ghost text, then start a fresh one. */
    e->hidden = 1;
    e->cur = e->len;
    render(e);
    if (write(STDOUT_FILENO, "\r\n", 2) < 0) exit(1);
    e->len = e->cur = 0;
    e->hidden = 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya type [--model PATH]\n"
            "Type with suggestions. The best one shows as grey text at the cursor, the\n"
            "others on the line below.\n"
            "  Tab or Alt-1     accept the grey suggestion    Alt-2, Alt-3  accept another\n"
            "  Esc              hide suggestions until the next key\n"
            "  Left/Right, Home/End (Ctrl-A/Ctrl-E)   move     Backspace/Delete  erase\n"
            "  Ctrl-U           erase to the line start       Enter  new line\n"
            "  Ctrl-C, Ctrl-D   quit\n"
            "Needs a terminal; for scripts use 'laya complete' or 'laya serve --stdio'.\n");
}

int cmd_type(int argc, char **argv) {
    const char *model_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
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
        ssize_t n = read(STDIN_FILENO, in, sizeof in);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        int was_hidden = e.hidden, quit = 0;
        e.hidden = 0;
        for (ssize_t i = 0; i < n && !quit; i++) {
            unsigned char c = (unsigned char)in[i];
            if (c == 0x1b) {
                /* Escape sequences arrive in one read; a lone ESC is the key. */
                if (i + 1 >= n) { e.hidden = 1; continue; }
                unsigned char d = (unsigned char)in[i + 1];
                if (d >= '1' && d <= '3') { e.hidden = was_hidden; accept(&e, d - '1'); i++; continue; }
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
                accept(&e, 0);
            } else if (c == '\r' || c == '\n') {
                commit_line(&e);
            } else if (c == 0x7f || c == 8) {
                if (e.cur) erase(&e, utf8_prev((const uint8_t *)e.line, e.cur), e.cur);
            } else if (c == 0x15) {
                erase(&e, 0, e.cur);
            } else if (c == 1) {
                e.cur = 0;
            } else if (c == 5) {
                e.cur = e.len;
            } else if (c >= 0x20) {
                /* Text: insert whole characters only, holding a split one. */
                pend[npend++] = (char)c;
                int r = utf8_check((const uint8_t *)pend, npend);
                if (r == 0) { insert(&e, pend, npend); npend = 0; }
                else if (r < 0 || npend >= 4) npend = 0;
            }
        }
        if (quit) break;
        refresh_suggestions(&e);
        render(&e);
    }
    restore_terminal();
    laya_session_free(e.s);
    laya_model_free(e.m);
    free(e.doc);
    free(e.ctx);
    return 0;
}
