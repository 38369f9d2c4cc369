/* file.h - opening a file the user named, for reading.
 *
 * A path from the command line or the environment may name anything: a
 * FIFO (a plain open() blocks until a writer appears, forever if none
 * does), a character device, a directory (fopen() succeeds, ftell() then
 * says 2^63-1). file_open_regular opens without blocking (O_NONBLOCK,
 * which regular files ignore), checks the type on the descriptor it got
 * (fstat: no window between the check and the use), and only then hands
 * the descriptor back, in blocking mode. */
#ifndef LAYA_FILE_H
#define LAYA_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include "laya.h"

/* What a file that is not a regular one is, for messages: "a directory",
 * "a FIFO (named pipe)", "a character device", ... (with the article). */
const char *file_kind(mode_t m);

/* Opens path read-only (O_CLOEXEC). what names the file in messages
 * ("model", "tokenizer", ...). On success *fd is owned by the caller and
 * *size (optional) is the file's size. LAYA_ERR_IO with a sentence in err
 * when it cannot be opened or is not a regular file; *fd is then -1. */
laya_status file_open_regular(const char *path, const char *what, int *fd, size_t *size, char *err,
                              size_t errlen);

/* As file_open_regular, as a stdio stream ("rb"); *f owned by the caller. */
laya_status file_fopen_regular(const char *path, const char *what, FILE **f, size_t *size, char *err,
                               size_t errlen);

/* As file_open_regular, then maps the whole file read-only (MAP_PRIVATE)
 * and closes the descriptor. On success *map (NULL for an empty file) is
 * the caller's to munmap(*map, *size). LAYA_ERR_IO with a sentence in err
 * when it cannot be opened, is not a regular file or cannot be mapped. */
laya_status file_map_regular(const char *path, const char *what, const uint8_t **map, size_t *size, char *err,
                             size_t errlen);

#endif
