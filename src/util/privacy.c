/* privacy.c - password prompts in text before the cursor (privacy.h). */
#include "util/privacy.h"

#include <string.h>

/* Words for a secret, matched as substrings of the line with ASCII
 * letters lowered. Scripts without case are listed once; Cyrillic with
 * both initials (only ASCII is lowered). */
static const char *const secret_words[] = {
    "password", "passphrase", "pass phrase", "passcode", "passwd", "one-time", "verification code",
    "authentication code", "security code",
    "passwort", "kennwort",             /* German */
    "mot de passe",                     /* French */
    "contrase\xc3\xb1\x61",             /* Spanish contraseña (\x61: a) */
    "senha",                            /* Portuguese */
    "wachtwoord",                       /* Dutch */
    "l\xc3\xb6senord",                  /* Swedish lösenord */
    "has\xc5\x82o",                     /* Polish hasło */
    "\xd0\xbf\xd0\xb0\xd1\x80\xd0\xbe\xd0\xbb\xd1\x8c",   /* Russian пароль */
    "\xd0\x9f\xd0\xb0\xd1\x80\xd0\xbe\xd0\xbb\xd1\x8c",   /* Пароль */
    "\xe5\xaf\x86\xe7\xa0\x81",         /* 密码 */
    "\xe5\xaf\x86\xe7\xa2\xbc",         /* 密碼 */
    "\xe5\x8f\xa3\xe4\xbb\xa4",         /* 口令 */
    "\xe3\x83\x91\xe3\x82\xb9\xe3\x83\xaf\xe3\x83\xbc\xe3\x83\x89",   /* パスワード */
    "\xe6\x9a\x97\xe8\xa8\xbc\xe7\x95\xaa\xe5\x8f\xb7",               /* 暗証番号 */
    "\xeb\xb9\x84\xeb\xb0\x80\xeb\xb2\x88\xed\x98\xb8",               /* 비밀번호 */
    "\xec\x95\x94\xed\x98\xb8",                                       /* 암호 */
};

/* Words that count only when no ASCII letter touches them. */
static const char *const secret_whole_words[] = {"pin", "otp", "pw"};

static int is_alpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

/* The end of the line once trailing blanks, echo stars and bullets are gone. */
static size_t trim_end(const unsigned char *s, size_t n) {
    for (;;) {
        if (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '*')) n--;
        else if (n >= 3 && !memcmp(s + n - 3, "\xe3\x80\x80", 3)) n -= 3;   /* ideographic space */
        else if (n >= 3 && !memcmp(s + n - 3, "\xe2\x80\xa2", 3)) n -= 3;   /* • */
        else if (n >= 3 && !memcmp(s + n - 3, "\xe2\x97\x8f", 3)) n -= 3;   /* ● */
        else return n;
    }
}

int privacy_secret_prompt(const char *text, size_t len) {
    if (!text || !len) return 0;
    const unsigned char *t = (const unsigned char *)text;
    size_t from = len > PRIVACY_MAX_LINE ? len - PRIVACY_MAX_LINE : 0;
    for (size_t i = len; i > from; i--)
        if (t[i - 1] == '\n' || t[i - 1] == '\r') {
            from = i;
            break;
        }
    size_t n = trim_end(t + from, len - from);
    const unsigned char *line = t + from;
    if (n >= 1 && line[n - 1] == ':') n -= 1;
    else if (n >= 3 && !memcmp(line + n - 3, "\xef\xbc\x9a", 3)) n -= 3;   /* full-width colon */
    else return 0;
    char low[PRIVACY_MAX_LINE + 1];
    for (size_t i = 0; i < n; i++) low[i] = (char)(line[i] >= 'A' && line[i] <= 'Z' ? line[i] | 0x20 : line[i]);
    low[n] = 0;
    for (size_t w = 0; w < sizeof secret_words / sizeof *secret_words; w++)
        if (memmem(low, n, secret_words[w], strlen(secret_words[w]))) return 1;
    for (size_t w = 0; w < sizeof secret_whole_words / sizeof *secret_whole_words; w++) {
        size_t k = strlen(secret_whole_words[w]);
        for (const char *p = low; (p = memmem(p, n - (size_t)(p - low), secret_whole_words[w], k)); p++) {
            size_t at = (size_t)(p - low);
            if ((at == 0 || !is_alpha((unsigned char)low[at - 1])) && (at + k == n || !is_alpha((unsigned char)low[at + k])))
                return 1;
        }
    }
    return 0;
}

/* The start of the line holding byte i (or of text, PRIVACY_MAX_LINE back
 * at most: a longer line is read by its last part only, as above). */
static size_t line_start(const char *text, size_t i) {
    size_t lo = i > PRIVACY_MAX_LINE ? i - PRIVACY_MAX_LINE : 0;
    while (i > lo && text[i - 1] != '\n' && text[i - 1] != '\r') i--;
    return i;
}

/* The end of the first secret prompt of line text[ls..le) (the byte after
 * its colon), or 0 if the line has none. */
static size_t prompt_end(const char *text, size_t ls, size_t le) {
    for (size_t i = ls; i < le; i++) {
        size_t e = 0;
        if (text[i] == ':') e = i + 1;
        else if (i + 3 <= le && !memcmp(text + i, "\xef\xbc\x9a", 3)) e = i + 3;
        if (e && privacy_secret_prompt(text + ls, e - ls)) return e;
    }
    return 0;
}

int privacy_secret_typed(const char *text, size_t len) {
    if (!text || !len) return 0;
    size_t ls = line_start(text, len);
    return prompt_end(text, ls, len) != 0;
}

size_t privacy_redact(char *text, size_t len, size_t from) {
    if (!text || from >= len) return len;
    size_t ls = line_start(text, from);
    while (ls < len) {
        size_t le = ls;
        while (le < len && text[le] != '\n' && text[le] != '\r') le++;
        size_t e = prompt_end(text, ls, le);
        if (e && e < le) {
            size_t cut = e > from ? e : from;
            if (cut < le) {
                memmove(text + cut, text + le, len - le);
                len -= le - cut;
                le = cut;
            }
        }
        ls = le < len ? le + 1 : len;
    }
    return len;
}
