/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Small helpers shared by every module: cleanup attributes in the systemd
 * style, ownership hand-over, array sizes. Header-only on purpose.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)
#define _noreturn_ __attribute__((noreturn))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Take ownership of a pointer: returns it and leaves NULL behind. */
#define TAKE_PTR(p)                      \
        ({                               \
                typeof(p) _p_ = (p);     \
                (p) = NULL;              \
                _p_;                     \
        })

#define TAKE_FD(fd)                      \
        ({                               \
                int _fd_ = (fd);         \
                (fd) = -1;               \
                _fd_;                    \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* Close an fd and return -1 so callers can write fd = safe_close(fd). */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)  \
        static inline void func##p(type *p) {    \
                if (*p)                          \
                        func(*p);                \
        }

#define streq(a, b) (strcmp((a), (b)) == 0)

/*
 * Buffer sizes say what the buffer holds (HACKING.md §4):
 * DECIMAL_STR_MAX(type) is the longest decimal of an integer type with a
 * minus sign and the NUL (systemd's macro of the same name); PATH_MAX
 * (<limits.h>) holds a path; MESSAGE_MAX a message for a person (an error,
 * a reason, a warning: longer ones are cut).
 */
#define DECIMAL_STR_MAX(type)                                                    \
        (2U + (sizeof(type) <= 1 ? 3U : sizeof(type) <= 2 ? 5U : sizeof(type) <= 4 ? 10U \
                                      : sizeof(type) <= 8 ? 20U : 39U))
#define MESSAGE_MAX 512U

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_SEC UINT64_C(1000000000)
