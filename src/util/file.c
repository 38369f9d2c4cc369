/* file.c - opening user-named files without hanging on FIFOs (file.h). */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"

const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "a special file";
}

laya_status file_open_regular(const char *path, const char *what, int *fd, size_t *size, char *err,
                              size_t errlen) {
    *fd = -1;
    if (!path) return err_set(err, errlen, LAYA_ERR_ARG, "no %s path given", what);
    int d = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (d < 0) return err_set(err, errlen, LAYA_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(errno));
    struct stat sb;
    if (fstat(d, &sb) != 0) {
        int e = errno;
        close(d);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot stat %s '%s': %s", what, path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(d);
        return err_set(err, errlen, LAYA_ERR_IO, "%s '%s' is %s: expected a regular file", what, path, file_kind(sb.st_mode));
    }
    int fl = fcntl(d, F_GETFL);
    if (fl < 0 || fcntl(d, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(d);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(e));
    }
    if (size) *size = (size_t)sb.st_size;
    *fd = d;
    return LAYA_OK;
}

laya_status file_fopen_regular(const char *path, const char *what, FILE **f, size_t *size, char *err,
                               size_t errlen) {
    *f = NULL;
    int d;
    laya_status st = file_open_regular(path, what, &d, size, err, errlen);
    if (st != LAYA_OK) return st;
    if (!(*f = fdopen(d, "rb"))) {
        int e = errno;
        close(d);
        return err_set(err, errlen, e == ENOMEM ? LAYA_ERR_NOMEM : LAYA_ERR_IO, "cannot open %s '%s': %s", what,
                       path, strerror(e));
    }
    return LAYA_OK;
}

laya_status file_map_regular(const char *path, const char *what, const uint8_t **map, size_t *size, char *err,
                             size_t errlen) {
    int fd;
    laya_status st = file_open_regular(path, what, &fd, size, err, errlen);
    if (st != LAYA_OK) return st;
    void *m = *size ? mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    int e = errno;
    close(fd);
    if (m == MAP_FAILED) return err_set(err, errlen, LAYA_ERR_IO, "cannot map '%s': %s", path, strerror(e));
    *map = m;
    return LAYA_OK;
}
