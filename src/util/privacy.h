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

#endif
