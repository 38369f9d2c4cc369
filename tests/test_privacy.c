/* test_privacy.c - privacy_secret_prompt on the prompts of real programs
 * and on ordinary text that must not match. */
#include "test.h"

#include <string.h>

#include "util/privacy.h"

static const char *const prompts[] = {
    "Password:",
    "Password: ",
    "[sudo] password for alice: ",
    "alice@build.example.org's password: ",
    "Password for 'https://alice@github.com': ",
    "Enter passphrase for key '/home/alice/.ssh/id_ed25519': ",
    "Enter passphrase (empty for no passphrase): ",
    "Enter PEM pass phrase:",
    "Enter PIN for 'PIV Card Holder pin (PIV_II)': ",
    "PIN:",
    "(current) UNIX password: ",
    "New password: ",
    "Retype new password: ",
    "Enter password: ",                     /* mysql */
    "Passphrase: ",                         /* gpg --pinentry-mode loopback */
    "Verification code: ",                  /* google-authenticator PAM */
    "OTP: ",
    "Password: ****",                       /* a prompt that echoes stars */
    "$ sudo apt update\n[sudo] password for bob: ",
    "Last login: Mon\r\nPassword:",
    "Passwort: ",
    "Mot de passe : ",
    "Contrase\xc3\xb1" "a: ",
    "\xd0\x9f\xd0\xb0\xd1\x80\xd0\xbe\xd0\xbb\xd1\x8c: ",   /* Пароль: */
    "\xe5\xaf\x86\xe7\xa0\x81\xef\xbc\x9a",                 /* 密码： */
    "\xe8\xaf\xb7\xe8\xbe\x93\xe5\x85\xa5\xe5\xaf\x86\xe7\xa0\x81:",   /* 请输入密码: */
    "\xe5\x8f\xa3\xe4\xbb\xa4\xef\xbc\x9a ",                /* 口令： */
    "\xe3\x83\x91\xe3\x82\xb9\xe3\x83\xaf\xe3\x83\xbc\xe3\x83\x89:",   /* パスワード: */
    "\xeb\xb9\x84\xeb\xb0\x80\xeb\xb2\x88\xed\x98\xb8: ",   /* 비밀번호: */
};

static const char *const not_prompts[] = {
    "",
    "Best re",
    "Password",                          /* no colon: a word in a sentence */
    "The password: is case-sensitive",   /* the colon is not at the cursor */
    "I forgot my password.",
    "Pinned: ",
    "Spinning:",
    "Shipping address: ",
    "Passport number: ",
    "Compass:",
    "Password: hunter2\nThe meeting is on Mo",   /* the prompt is an earlier line */
    "\xe5\xaf\x86\xe7\xa0\x81\xe5\xad\xa6\xe6\x98\xaf\xe4\xb8\x80\xe9\x97\xa8\xe5\xad\xa6\xe7\xa7\x91",   /* 密码学是一门学科 */
    "\xe6\x88\x91\xe6\x83\xb3\xe8\xae\xa2\xe4\xb8\xaa:",   /* 我想订个: */
    "Dear Sir:",
    "user@host:~$ ",
};

TEST(privacy_secret_prompt_recognises_password_prompts) {
    for (size_t i = 0; i < sizeof prompts / sizeof *prompts; i++)
        CHECKF(privacy_secret_prompt(prompts[i], strlen(prompts[i])), "not recognised: \"%s\"", prompts[i]);
    for (size_t i = 0; i < sizeof not_prompts / sizeof *not_prompts; i++)
        CHECKF(!privacy_secret_prompt(not_prompts[i], strlen(not_prompts[i])), "wrongly matched: \"%s\"",
               not_prompts[i]);
    CHECK(!privacy_secret_prompt(NULL, 0));
}

TEST(privacy_secret_prompt_reads_only_the_last_line_whatever_the_length) {
    /* A long document before the prompt; and a prompt line longer than the window is read from its tail. */
    static char buf[100000];
    memset(buf, 'a', sizeof buf);
    const char *p = "\nPassword: ";
    memcpy(buf + sizeof buf - strlen(p), p, strlen(p));
    CHECK(privacy_secret_prompt(buf, sizeof buf));
    memset(buf, 'x', sizeof buf);
    memcpy(buf + sizeof buf - 11, " password: ", 11);
    CHECK(privacy_secret_prompt(buf, sizeof buf));
    buf[sizeof buf - 2] = 'x';   /* "passwordx " no longer ends in a colon */
    CHECK(!privacy_secret_prompt(buf, sizeof buf));
    /* Bytes that are not UTF-8, NULs included, are just bytes. */
    const char bin[] = "\xff\x00\xfe password:";
    CHECK(privacy_secret_prompt(bin, sizeof bin - 1));
}

/* The cursor is in a secret from the prompt's colon to the end of its line,
 * whatever has been typed after it; not on the next line. */
TEST(privacy_secret_typed_covers_the_rest_of_the_prompt_line) {
    static const char *const in[] = {"[sudo] password for anna:", "[sudo] password for anna: hun",
                                     "git log\nPassword: hunter2 more", "Enter PIN: 12", "密码：abc"};
    static const char *const out[] = {"Password: hunter2\nls -l", "Dear Sir: hello", "no prompt here", "",
                                      "Pinned: notes"};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        CHECKF(privacy_secret_typed(in[i], strlen(in[i])), "not in a secret: \"%s\"", in[i]);
    for (size_t i = 0; i < sizeof out / sizeof *out; i++)
        CHECKF(!privacy_secret_typed(out[i], strlen(out[i])), "wrongly in a secret: \"%s\"", out[i]);
}

/* What follows a prompt is cut to the line's end, the prompt and the other
 * lines stay; with `from`, only bytes from there on go, the line still read
 * from its start (text arriving in pieces). */
TEST(privacy_redact_removes_what_follows_a_prompt) {
    static const struct {
        const char *in, *want;
        size_t from;
    } cases[] = {
        {"Password: hunter2\nls -l\n", "Password:\nls -l\n", 0},
        {"hi\n[sudo] password for anna: s3cret\nthanks", "hi\n[sudo] password for anna:\nthanks", 0},
        {"Dear Sir: hello\n", "Dear Sir: hello\n", 0},
        {"Password: hunter2", "Password: hun", 13},   /* the first 13 bytes were kept before */
        {"Password: hunter2\nok", "Password:\nok", 3},
        {"密码：abc\n好", "密码：\n好", 0},
        {"PIN: 1234\rPIN: 99", "PIN:\rPIN:", 0},
        {"", "", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[128];
        size_t n = strlen(cases[i].in);
        memcpy(buf, cases[i].in, n);
        n = privacy_redact(buf, n, cases[i].from);
        CHECKF(n == strlen(cases[i].want) && !memcmp(buf, cases[i].want, n), "case %zu: \"%.*s\", want \"%s\"", i,
               (int)n, buf, cases[i].want);
    }
}
