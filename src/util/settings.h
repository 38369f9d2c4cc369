/* settings.h - the user's settings file, read by the engines.
 *
 * One small file, $XDG_CONFIG_HOME/laya/settings.ini (else
 * $HOME/.config/laya/settings.ini), written by the settings window
 * (src/settings, GLib's GKeyFile) and read here without GLib, so the IBus
 * engine and the fcitx5 addon share one reader:
 *
 *   [suggestions]
 *   enabled=true        true|false|1|0: show suggestions at all
 *   count=3             1..9: how many the list shows
 *   accept_key=Tab      Tab|Right|End: the key that takes the first
 *
 * Other groups and keys are ignored (a newer window may write more), as are
 * '#' comments, blank lines and localized keys (key[xx]). The file is
 * hostile input: a value out of range or unreadable is reported and
 * changes nothing (the setting keeps its default or an earlier line's value); a file that is not a regular file or over
 * SETTINGS_MAX_FILE bytes leaves every setting at its default. Incognito is
 * not here: it lives in the personal memory (laya_memory_set_incognito),
 * where every process already obeys it. */
#ifndef LAYA_SETTINGS_H
#define LAYA_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

#ifdef __cplusplus
extern "C" {   /* the fcitx5 addon is C++ */
#endif

typedef enum { SETTINGS_ACCEPT_TAB = 0, SETTINGS_ACCEPT_RIGHT, SETTINGS_ACCEPT_END } settings_accept;

enum {
    SETTINGS_MIN_COUNT = 1,
    SETTINGS_MAX_COUNT = 9,   /* Alt+1..Alt+9 pick; no digit key is left for a 10th */
    SETTINGS_DEFAULT_COUNT = 3,
    SETTINGS_MAX_FILE = 64 * 1024,
    SETTINGS_PATH_MAX = 4096
};

typedef struct {
    int enabled;              /* 0 or 1 */
    int count;                /* SETTINGS_MIN_COUNT..SETTINGS_MAX_COUNT */
    settings_accept accept;
} settings_values;

/* Suggestions on, SETTINGS_DEFAULT_COUNT of them, Tab accepts. Can't fail. */
void settings_defaults(settings_values *v);

/* "Tab", "Right", "End" (the file's spelling and the keys' names). */
const char *settings_accept_name(settings_accept a);
/* 1 and *out set iff name is one of those (exactly); else 0, *out untouched. */
int settings_accept_parse(const char *name, settings_accept *out);

/* The settings file's path into buf (n bytes); creates nothing.
 * LAYA_ERR_ARG when neither $XDG_CONFIG_HOME nor $HOME is absolute,
 * LAYA_ERR_LIMIT when buf is too small. */
laya_status settings_default_path(char *buf, size_t n, char *err, size_t errlen);

/* Parses text[0..len) (not NUL-terminated) into *v, which always ends up
 * complete: the defaults, overridden by each valid key. LAYA_ERR_FORMAT
 * when some line was refused (err names the first: "line 3: count=12 is
 * not in 1..9"); the other lines still count. */
laya_status settings_parse(const char *text, size_t len, settings_values *v, char *err, size_t errlen);

/* Reads the file at path into *v (always complete, as settings_parse). A
 * missing file is LAYA_OK with the defaults; one that cannot be read, is
 * not a regular file or is too large is LAYA_ERR_IO / LAYA_ERR_LIMIT with
 * the defaults. */
laya_status settings_load(const char *path, settings_values *v, char *err, size_t errlen);

/* The engines' view: the values, re-read only when the file changed
 * (device, inode, size or modification time: the window replaces the file
 * by a rename, so each save is a new inode). Zero it, then
 * settings_watch_init. */
typedef struct {
    settings_values v;
    char path[SETTINGS_PATH_MAX];   /* "" when there is no place for the file (v stays the defaults) */
    int exists;
    uint64_t dev, ino, size;
    int64_t mtime_ns;
    char err[256];                  /* why the last read was refused, "" if it was not */
} settings_watch;

/* Sets the defaults and reads the file at path (NULL: the default path).
 * Returns what settings_load returned (w->err says why). */
laya_status settings_watch_init(settings_watch *w, const char *path);

/* Re-reads the file if it changed since the last read (one stat() when it
 * did not). 1 when it was re-read (w->v may have changed; w->err says
 * whether it was refused), 0 when not. Can't fail. */
int settings_watch_refresh(settings_watch *w);

/* Where the settings window is: $LAYA_SETTINGS_PROGRAM if set, else
 * laya-settings beside the running executable (the build folder), else in
 * ../libexec from it (PREFIX/bin/laya), else prefix/libexec/laya-settings;
 * the first that is an executable file, into buf. LAYA_ERR_IO with the
 * places tried in err when there is none. */
laya_status settings_program(const char *prefix, char *buf, size_t n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
