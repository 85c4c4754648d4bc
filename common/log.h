/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * One logging module for the daemon. Under journald ($JOURNAL_STREAM names
 * our stderr) lines carry kernel-style "<N>" priority prefixes, which
 * journald turns into PRIORITY=; on a terminal they are plain text.
 *
 * Library-like modules (collectors, decoders) do not log above debug; they
 * return errors and the daemon layer logs once.
 */

#include <errno.h>
#include <syslog.h>

#include "macro.h"

/* One message; longer ones are cut. */
#define LOG_MESSAGE_MAX 2048

int log_get_max_level(void);
void log_set_max_level(int level);
/* "emerg".."debug" or 0..7; returns the level or -EINVAL. */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);
/* Decide between journald prefixes and plain text; call once at start. */
void log_open(void);

/* Returns -abs(error) (or 0 when error is 0) so callers can return it. */
int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

#define log_full_errno(level, error, ...)                                                \
        ({                                                                               \
                int _l = (level), _e = (error);                                          \
                _l <= log_get_max_level() ? log_internal(_l, _e, __FILE__, __LINE__, __VA_ARGS__) \
                                          : -abs(_e);                                    \
        })

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)
