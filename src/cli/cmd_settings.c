/* cmd_settings.c - `laya settings`: opens the settings window.
 *
 *   laya settings
 *
 * Replaces itself with laya-settings (src/settings, GTK 3), found by
 * settings_program (src/util/settings.h): $LAYA_SETTINGS_PROGRAM, beside
 * this executable, ../libexec from it, else PREFIX/libexec. Without it,
 * says where it looked and how to get it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "util/settings.h"

#ifndef LAYA_PREFIX
#define LAYA_PREFIX "/usr/local"
#endif

static void usage(FILE *f) {
    fprintf(f, "usage: laya settings\n"
               "Opens the settings window: suggestions on or off, how many (1-9), the accept\n"
               "key (Tab, Right or End), incognito, and what Laya has learned (find, forget,\n"
               "forget all). Settings are kept in $XDG_CONFIG_HOME/laya/settings.ini (else\n"
               "~/.config/laya/settings.ini); the IBus engine and the fcitx5 addon read them\n"
               "again when the focus moves. The window is laya-settings (GTK 3): make settings\n"
               "builds it, make install-settings (or install-ibus, install-fcitx5) installs it.\n");
}

int cmd_settings(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        fprintf(stderr, "laya: settings: unexpected '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    char prog[4096], err[4096 + 512] = "";
    if (settings_program(LAYA_PREFIX, prog, sizeof prog, err, sizeof err) != LAYA_OK) cli_die("settings: %s", err);
    char *args[] = {prog, NULL};
    execv(prog, args);
    cli_die("settings: cannot start %s: %s", prog, strerror(errno));
}
