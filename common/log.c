/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "parse-util.h"

static int max_level = LOG_INFO;
static bool use_prefix = false;

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg",   [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err",       [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info",     [LOG_DEBUG] = "debug",
};

int log_get_max_level(void) {
        return max_level;
}

void log_set_max_level(int level) {
        if (level >= LOG_EMERG && level <= LOG_DEBUG)
                max_level = level;
}

int log_level_from_string(const char *s) {
        uint32_t v;

        if (!s)
                return -EINVAL;
        for (int i = 0; i < (int) ELEMENTSOF(level_names); i++)
                if (strcasecmp(s, level_names[i]) == 0)
                        return i;
        if (strcasecmp(s, "error") == 0)
                return LOG_ERR;
        if (strcasecmp(s, "warn") == 0)
                return LOG_WARNING;
        if (safe_atou32(s, &v) == 0 && v <= LOG_DEBUG)
                return (int) v;
        return -EINVAL;
}

const char *log_level_to_string(int level) {
        if (level < 0 || level >= (int) ELEMENTSOF(level_names))
                return NULL;
        return level_names[level];
}

/*
 * systemd.exec(5): $JOURNAL_STREAM is "DEV:INODE" of the stream connected
 * to stderr/stdout. Only trust it if our stderr really is that stream, so
 * a child started from a service with stderr redirected prints plain text.
 */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_open(void) {
        use_prefix = stderr_is_journal();
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        char msg[LOG_MESSAGE_MAX];
        va_list ap;

        /* Let "%m" in fmt print the error we were given. */
        if (error != 0)
                errno = abs(error);

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        if (use_prefix)
                fprintf(stderr, "<%d>%s\n", level, msg);
        else if (max_level >= LOG_DEBUG)
                fprintf(stderr, "armprofd[%s:%d]: %s\n", file, line, msg);
        else
                fprintf(stderr, "armprofd: %s\n", msg);

        return -abs(error);
}
