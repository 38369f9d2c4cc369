/* err.h - detailed error messages beside a laya_status.
 *
 * Internal functions that can fail in several ways take (char *err, size_t
 * errlen), both optional, and fill err with one sentence naming the problem
 * and, where useful, a hint. err_set() formats into it and returns the status
 * so a failure is one line: `return err_set(err, errlen, LAYA_ERR_FORMAT,
 * "tensor %s: shape [%d] expected [%d]", ...);`. */
#ifndef LAYA_ERR_H
#define LAYA_ERR_H

#include <stddef.h>
#include "laya.h"

laya_status err_set(char *err, size_t errlen, laya_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
