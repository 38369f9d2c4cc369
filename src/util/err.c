/* err.c - laya_status strings and the detailed-error helper. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

const char *laya_status_str(laya_status s) {
    switch (s) {
    case LAYA_OK: return "success";
    case LAYA_ERR_ARG: return "invalid argument";
    case LAYA_ERR_IO: return "input/output error";
    case LAYA_ERR_FORMAT: return "malformed file or message";
    case LAYA_ERR_NOMEM: return "out of memory";
    case LAYA_ERR_UNSUPPORTED: return "unsupported version or feature";
    case LAYA_ERR_SIGNATURE: return "checksum or signature mismatch";
    case LAYA_ERR_LIMIT: return "input exceeds a limit";
    case LAYA_ERR_INTERNAL: return "internal error (a bug)";
    }
    return "unknown status";
}

laya_status err_set(char *err, size_t errlen, laya_status st, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}
