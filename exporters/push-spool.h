/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The push spool: encoded push requests kept on disk while the profile store
 * cannot take them, resent oldest first later. It survives a restart and a
 * SIGKILL, never holds more than max_bytes on disk (file sizes, headers
 * included), and drops what the store would refuse as too old.
 *
 * Only the push thread uses a spool (no locking inside). The module does not
 * log; errors are negative errno, with a sentence in err where the errno
 * alone would not say what was wrong (HACKING.md §1). One spool per
 * directory: two spools open on the same directory would remove each other's
 * temp files at open.
 *
 * On disk, one file per request in the spool directory:
 *
 *   name   "%016" PRIx64 ".req" of its seq (lower-case hex), seq = 1 + the
 *          largest found at open, so the order of put() survives restarts.
 *          Other names are not ours and are left alone, except
 *   ".tmp-*" a file being written (put() and the writability probe); one
 *          found at open was left by a kill mid-write and is removed.
 *
 *   Content, all integers little-endian:
 *     offset  size  field
 *          0     8  magic "ARMPSPL1"
 *          8     4  version (PUSH_SPOOL_VERSION)
 *         12     4  CRC-32 (zlib crc32(), ISO-HDLC) over bytes 16..31 then the body
 *         16     8  time_ns: the profile time given to put(), Unix ns
 *         24     8  body length
 *         32     n  the body
 *   A file is corrupt when it is shorter than the header, has another magic
 *   or version, a body length that is not the file size minus the header or
 *   over PUSH_SPOOL_BODY_MAX, or a CRC that does not match; a corrupt file is
 *   removed and counted (at open, or when it is read).
 *
 * A file appears under its name only complete and on disk: put() writes and
 * fsyncs a temp file, renames it (rename(2): "If newpath already exists, it
 * will be atomically replaced, so that there is no point at which another
 * process attempting to access newpath will find it missing"; the new name
 * is fresh, so a reader sees the whole file or none) and fsyncs the
 * directory (fsync(2): "Calling fsync() does not necessarily ensure that the
 * entry in the directory containing the file has also reached disk. For
 * that an explicit fsync() on a file descriptor for the directory is also
 * needed").
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

#define PUSH_SPOOL_MAGIC "ARMPSPL1"
#define PUSH_SPOOL_VERSION UINT32_C(1)
#define PUSH_SPOOL_HEADER_SIZE 32U
/* The largest body a spool file may state. A push request holds one
 * interval's profiles, each gzip-compressed and at most 4 MiB uncompressed in
 * Pyroscope's default limits; 64 MiB is far above any such request and keeps
 * a damaged length from becoming a huge allocation (HACKING.md §3). */
#define PUSH_SPOOL_BODY_MAX (UINT64_C(64) << 20)

struct push_spool;

struct push_spool_stats {
        uint64_t files, bytes;          /* now, on disk (bytes = file sizes, headers included) */
        uint64_t dropped_full;          /* requests dropped to stay under max_bytes (oldest first) */
        uint64_t dropped_age;           /* requests dropped as too old (push_spool_drop_older()) */
        uint64_t dropped_corrupt;       /* unreadable / bad-checksum files removed */
        uint64_t temp_removed;          /* half-written temp files (a kill mid-write) removed at open */
};

struct push_spool_entry {
        uint64_t seq;                   /* order of put(): the file name */
        uint64_t time_ns;               /* the profile time given to put() (Unix ns) */
        struct strbuf body;             /* the request body */
};

/* Creates dir (0700, parents not) when missing; checks it can write there (a
 * probe temp file written, fsynced, removed); removes leftover temp files;
 * indexes the entries (each read and checked; a bad one is removed and
 * counted); enforces max_bytes (oldest dropped first, counted). Errors:
 * negative errno and a sentence in err that names the directory
 * ("spool directory /x: not writable: Permission denied"). */
int push_spool_open(const char *dir, uint64_t max_bytes, struct push_spool **ret, char *err, size_t errlen);
struct push_spool *push_spool_free(struct push_spool *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct push_spool *, push_spool_free);

/* Atomically (see above): temp file, write, fsync, rename to its name, fsync
 * the directory. Drops the oldest first to make room (counted as
 * dropped_full; done before writing so that the files never exceed max_bytes,
 * even for a moment; a failed write does not bring them back). A body that alone does not fit in max_bytes (header
 * included) or is over PUSH_SPOOL_BODY_MAX is refused: -EFBIG, counted as
 * dropped_full. -errno on I/O errors; the spool stays consistent (the temp
 * file is removed, the index matches the directory). */
int push_spool_put(struct push_spool *s, uint64_t time_ns, const void *body, size_t len);

/* The oldest entry (read from disk, checksum verified; a bad or vanished one
 * is removed, counted as dropped_corrupt and the next tried): 0, or -ENOENT
 * when empty. The entry stays in the spool until push_spool_remove(). Other
 * errors (-EMFILE, -ENFILE, -ENOMEM, -EINTR: the process's state, not the
 * file's; or unlinkat()'s on a bad file) are returned and the entry kept.
 * ret->body is NUL-terminated. */
int push_spool_oldest(struct push_spool *s, struct push_spool_entry *ret);
void push_spool_entry_done(struct push_spool_entry *e);

/* Removes the entry of that seq (after it was delivered) and fsyncs the
 * directory so that a power loss does not bring it back to be sent twice.
 * -ENOENT when the spool has no such seq; -errno when unlinkat() fails (the
 * entry is kept). */
int push_spool_remove(struct push_spool *s, uint64_t seq);

/* Drops entries whose time_ns < cutoff_ns (counted as dropped_age); returns
 * how many. An entry whose file cannot be removed is kept (and not counted). */
size_t push_spool_drop_older(struct push_spool *s, uint64_t cutoff_ns);

bool push_spool_empty(const struct push_spool *s);
void push_spool_get_stats(const struct push_spool *s, struct push_spool_stats *ret);

/* The file format's parser, pure (no I/O): data is a whole spool file. 0 and
 * the profile time and the body (pointing into data), or -EBADMSG when the
 * file is corrupt (see above), -EFBIG when the stated body length is over
 * PUSH_SPOOL_BODY_MAX. */
int push_spool_parse(const void *data, size_t len, uint64_t *ret_time, const void **ret_body, size_t *ret_len);
