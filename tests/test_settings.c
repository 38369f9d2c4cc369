/* test_settings.c - the settings file's reader (src/util/settings.h): the
 * format GKeyFile writes, hostile files, and the engines' change watch. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "util/settings.h"

static int parse(const char *text, settings_values *v, char *err, size_t errlen) {
    return settings_parse(text, strlen(text), v, err, errlen);
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

TEST(settings_parse_what_gkeyfile_writes) {
    settings_values v;
    char err[256] = "";
    /* As g_key_file_to_data writes it, with a comment and another group. */
    CHECK(parse("# Laya settings\n[other]\ncount=1\n\n[suggestions]\nenabled=false\ncount=7\naccept_key=End\n", &v,
                err, sizeof err) == LAYA_OK);
    CHECK(v.enabled == 0 && v.count == 7 && v.accept == SETTINGS_ACCEPT_END);
    /* Spaces around '=', CRLF, no final newline, unknown and localized keys. */
    CHECK(parse("[suggestions]\r\n  count = 9 \r\nlabel[de]=x\nnewer_key=whatever\naccept_key=Right", &v, err,
                sizeof err) == LAYA_OK);
    CHECK(v.enabled == 1 && v.count == 9 && v.accept == SETTINGS_ACCEPT_RIGHT);
    /* Empty: the defaults. */
    CHECK(parse("", &v, err, sizeof err) == LAYA_OK);
    CHECK(v.enabled == 1 && v.count == SETTINGS_DEFAULT_COUNT && v.accept == SETTINGS_ACCEPT_TAB);
    /* Keys outside [suggestions] do not count. */
    CHECK(parse("[x]\nenabled=false\n", &v, err, sizeof err) == LAYA_OK && v.enabled == 1);
    CHECK(parse("enabled=false\n", &v, err, sizeof err) == LAYA_OK && v.enabled == 1);
}

TEST(settings_parse_refuses_bad_values_one_by_one) {
    static const char *const bad[] = {"count=0", "count=10", "count=3x", "count=", "count=99999999999999999999",
                                      "enabled=yes", "enabled=TRUE", "accept_key=tab", "accept_key=Space",
                                      "accept_key=TabTabTabTabTabTabTab"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        settings_values v;
        char err[256] = "", text[128];
        snprintf(text, sizeof text, "[suggestions]\ncount=5\n%s\naccept_key=End\nenabled=false\n", bad[i]);
        /* The refused line falls back to its default, later lines of the
         * same key still apply, and the message names the line. */
        CHECKF(parse(text, &v, err, sizeof err) == LAYA_ERR_FORMAT, "%s accepted", bad[i]);
        CHECKF(strstr(err, "line 3") != NULL, "%s: %s", bad[i], err);
        CHECK(v.accept == SETTINGS_ACCEPT_END && v.enabled == 0);
        CHECK(v.count == 5);
    }
    settings_values v;
    char err[256] = "";
    CHECK(parse("[suggestions]\ncount=12\n", &v, err, sizeof err) == LAYA_ERR_FORMAT);
    CHECK(v.count == SETTINGS_DEFAULT_COUNT && strstr(err, "1..9"));
}

TEST(settings_accept_names_round_trip) {
    for (int a = SETTINGS_ACCEPT_TAB; a <= SETTINGS_ACCEPT_END; a++) {
        settings_accept b = SETTINGS_ACCEPT_TAB;
        CHECK(settings_accept_parse(settings_accept_name((settings_accept)a), &b) && (int)b == a);
    }
    settings_accept b = SETTINGS_ACCEPT_END;
    CHECK(!settings_accept_parse("", &b) && b == SETTINGS_ACCEPT_END);
}

TEST(settings_load_hostile_files) {
    const char *dir = test_tmpdir();
    char path[512], err[512] = "";
    settings_values v;
    /* Missing: defaults, no error. */
    snprintf(path, sizeof path, "%s/missing.ini", dir);
    CHECK(settings_load(path, &v, err, sizeof err) == LAYA_OK && v.count == SETTINGS_DEFAULT_COUNT);
    /* A directory and a FIFO (which must not block): refused, defaults. */
    CHECK(settings_load(dir, &v, err, sizeof err) == LAYA_ERR_IO && v.enabled == 1);
    snprintf(path, sizeof path, "%s/fifo.ini", dir);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK(settings_load(path, &v, err, sizeof err) == LAYA_ERR_IO);
    /* Too large: refused whole, even with valid lines in it. */
    snprintf(path, sizeof path, "%s/big.ini", dir);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs("[suggestions]\ncount=1\n", f);
    for (int i = 0; i < SETTINGS_MAX_FILE / 8 + 1; i++) fputs("#padding", f);
    fclose(f);
    CHECK(settings_load(path, &v, err, sizeof err) == LAYA_ERR_LIMIT && v.count == SETTINGS_DEFAULT_COUNT);
    CHECK(strstr(err, "big.ini"));
    /* NUL bytes and junk: no crash, the valid key still counts. */
    snprintf(path, sizeof path, "%s/junk.ini", dir);
    f = fopen(path, "w");
    CHECK(f);
    static const char junk[] = "[suggestions]\n\0\xff\xfe=\n[\ncount=2\n";
    fwrite(junk, 1, sizeof junk - 1, f);
    fclose(f);
    CHECK(settings_load(path, &v, err, sizeof err) == LAYA_OK);
    CHECKF(v.count == SETTINGS_DEFAULT_COUNT, "a key after a stray '[' line is outside the group: %d", v.count);
}

TEST(settings_watch_sees_each_save) {
    const char *dir = test_tmpdir();
    char path[512], tmp[512];
    snprintf(path, sizeof path, "%s/laya/settings.ini", dir);
    snprintf(tmp, sizeof tmp, "%s/laya", dir);
    CHECK(mkdir(tmp, 0700) == 0);
    settings_watch w;
    CHECK(settings_watch_init(&w, path) == LAYA_OK && !w.exists && w.v.count == SETTINGS_DEFAULT_COUNT);
    CHECK(settings_watch_refresh(&w) == 0);
    CHECK(write_file(path, "[suggestions]\ncount=4\n"));
    CHECK(settings_watch_refresh(&w) == 1 && w.v.count == 4 && !w.err[0]);
    CHECK(settings_watch_refresh(&w) == 0);
    /* A save as the window makes it: a new file renamed over the old one,
     * same size and, on a coarse clock, the same mtime: the inode differs. */
    snprintf(tmp, sizeof tmp, "%s/laya/settings.ini.new", dir);
    CHECK(write_file(tmp, "[suggestions]\ncount=6\n") && rename(tmp, path) == 0);
    CHECK(settings_watch_refresh(&w) == 1 && w.v.count == 6);
    /* A bad value: re-read, refused, reported, the default used. */
    CHECK(write_file(tmp, "[suggestions]\ncount=66\n") && rename(tmp, path) == 0);
    CHECK(settings_watch_refresh(&w) == 1 && w.v.count == SETTINGS_DEFAULT_COUNT && strstr(w.err, "count"));
    /* Deleted: the defaults again. */
    CHECK(write_file(tmp, "[suggestions]\nenabled=false\n") && rename(tmp, path) == 0);
    CHECK(settings_watch_refresh(&w) == 1 && w.v.enabled == 0);
    CHECK(unlink(path) == 0);
    CHECK(settings_watch_refresh(&w) == 1 && w.v.enabled == 1 && !w.exists);
}

TEST(settings_default_path_follows_xdg) {
    char buf[256], err[256] = "";
    char *old_xdg = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
    CHECK(settings_default_path(buf, sizeof buf, err, sizeof err) == LAYA_OK && !strcmp(buf, "/x/cfg/laya/settings.ini"));
    setenv("XDG_CONFIG_HOME", "relative", 1);
    setenv("HOME", "/home/u", 1);
    CHECK(settings_default_path(buf, sizeof buf, err, sizeof err) == LAYA_OK &&
          !strcmp(buf, "/home/u/.config/laya/settings.ini"));
    setenv("HOME", "", 1);
    CHECK(settings_default_path(buf, sizeof buf, err, sizeof err) == LAYA_ERR_ARG && strstr(err, "HOME"));
    setenv("HOME", "/home/u", 1);
    CHECK(settings_default_path(buf, 8, err, sizeof err) == LAYA_ERR_LIMIT);
    if (old_xdg) setenv("XDG_CONFIG_HOME", old_xdg, 1);
    else unsetenv("XDG_CONFIG_HOME");
    if (old_home) setenv("HOME", old_home, 1);
    free(old_xdg);
    free(old_home);
}

TEST(settings_program_is_found_or_explained) {
    char buf[4096], err[1024] = "";
    const char *dir = test_tmpdir();
    char prog[512];
    snprintf(prog, sizeof prog, "%s/laya-settings", dir);
    setenv("LAYA_SETTINGS_PROGRAM", prog, 1);
    CHECK(settings_program("/nonexistent", buf, sizeof buf, err, sizeof err) == LAYA_ERR_IO);
    CHECK(strstr(err, "LAYA_SETTINGS_PROGRAM"));
    int fd = open(prog, O_WRONLY | O_CREAT, 0755);
    CHECK(fd >= 0);
    close(fd);
    CHECK(settings_program("/nonexistent", buf, sizeof buf, err, sizeof err) == LAYA_OK && !strcmp(buf, prog));
    unsetenv("LAYA_SETTINGS_PROGRAM");
    /* Beside this test program (build/) there may be a real one; under a
     * prefix that has none, the message names the places looked at. */
    if (settings_program("/nonexistent", buf, sizeof buf, err, sizeof err) != LAYA_OK)
        CHECK(strstr(err, "/nonexistent/libexec/laya-settings") && strstr(err, "hint"));
}
