/* privacy.h - recognising text where nothing may be shown or learned (C8).
 *
 * Input fields that declare their purpose (IBus/GTK PASSWORD, PIN) are the
 * front end's to honour. A terminal declares none: the sudo, ssh, git or
 * gpg prompt asking for a secret is just text before the cursor, and the
 * next keys typed are the secret (not echoed, but an input method sees
 * them). privacy_secret_prompt recognises such a prompt so the caller can
 * apply the rule for secret fields: show nothing, learn nothing, keep
 * nothing.
 *
 * The rule: the current line (the text after the last newline or carriage
 * return) ends, after any blanks and echo stars, in a colon (':' or the
 * full-width '：'), and contains a word for a secret: password, passphrase,
 * passcode, PIN, one-time or verification code, or their usual forms in
 * German, French, Spanish, Portuguese, Dutch, Swedish, Polish, Russian,
 * Chinese, Japanese and Korean (privacy.c has the list). "PIN" and "OTP"
 * count only as whole words ("Pinned:" is not a prompt). Only the last
 * PRIVACY_MAX_LINE bytes are read, so the cost does not grow with the text.
 * False positives cost a moment without suggestions; false negatives leak
 * a secret, so the list errs towards matching. */
#ifndef LAYA_PRIVACY_H
#define LAYA_PRIVACY_H

#include <stddef.h>

enum { PRIVACY_MAX_LINE = 512 };

/* 1 if text[0..len) (the text before the cursor, any bytes) ends in a
 * prompt for a secret, else 0. Never fails; text may be NULL when len is 0. */
int privacy_secret_prompt(const char *text, size_t len);

/* 1 if the cursor at the end of text[0..len) is in a secret: the current
 * line holds a secret prompt (above) before it, with or without what has
 * been typed after it ("Password:", "Password: hun"). The rule for the
 * rest of the line: nothing shown, nothing kept. */
int privacy_secret_typed(const char *text, size_t len);

/* Removes, in place, every byte at or after `from` that belongs to a
 * secret (what follows a secret prompt on its line, up to the line's end;
 * the prompt and the line break stay), reading each line from its start
 * even when that lies before `from`. Returns the new length. Text kept for
 * learning goes through it, so "Password: hunter2" is remembered as
 * "Password:". */
size_t privacy_redact(char *text, size_t len, size_t from);

#endif
