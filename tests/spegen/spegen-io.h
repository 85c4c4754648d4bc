/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The one write loop of the generator's writers: all of buf or an error. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* Write n bytes of p to fd, at offset off with pwrite() when off >= 0, else
 * at the current position. Returns 0 or a negative errno. */
static inline int spegen_write_full(int fd, const void *p, size_t n, off_t off) {
        const uint8_t *q = p;

        while (n > 0) {
                ssize_t k = off >= 0 ? pwrite(fd, q, n, off) : write(fd, q, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                q += k;
                n -= (size_t) k;
                if (off >= 0)
                        off += k;
        }
        return 0;
}
