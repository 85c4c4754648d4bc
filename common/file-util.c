/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "file-util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "strbuf.h"

const char *file_mode_kind(unsigned mode) {
        switch (mode & S_IFMT) {
        case S_IFREG:  return "a regular file";
        case S_IFDIR:  return "a directory";
        case S_IFIFO:  return "a FIFO";
        case S_IFCHR:  return "a character device";
        case S_IFBLK:  return "a block device";
        case S_IFSOCK: return "a socket";
        default:       return "not a regular file";
        }
}

int read_regular_file(const char *path, size_t max, char **ret_data, size_t *ret_size) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;

        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((uintmax_t) st.st_size > max)
                return -EFBIG;
        /* One byte more than allowed, to see a file that grew since fstat, and the NUL. */
        buf = xmalloc(max + 2);
        for (;;) {
                ssize_t k = read(fd, buf + n, max + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max)
                        return -EFBIG;
        }
        buf[n] = '\0';
        *ret_data = TAKE_PTR(buf);
        *ret_size = n;
        return 0;
}
