/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

/*
 * Reads a whole regular file of at most max bytes into a malloc()ed buffer
 * with a NUL after its last byte. Opened non-blocking, so that a FIFO does
 * not wait for a writer, and read up to one byte past max, so that a file
 * that grew since fstat() (or /dev/zero) is refused too. Returns 0, or
 * -EBADFD (not a regular file), -EFBIG (over max) or another negative errno
 * from open/fstat/read; *ret_data and *ret_size are set on success only.
 */
int read_regular_file(const char *path, size_t max, char **ret_data, size_t *ret_size);

/* What a file mode is, for a message saying why it is not a regular file ("a directory"). */
const char *file_mode_kind(unsigned mode);
