/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "push-spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "macro.h"
#include "strbuf.h"

/* "%016" PRIx64 ".req": 16 hex digits, ".req", the NUL. */
#define SPOOL_NAME_MAX (16U + 4U + 1U)
#define SPOOL_TMP_PREFIX ".tmp-"
/* ".tmp-" and a name. */
#define SPOOL_TMP_NAME_MAX (sizeof(SPOOL_TMP_PREFIX) - 1 + SPOOL_NAME_MAX)
#define SPOOL_PROBE_NAME SPOOL_TMP_PREFIX "probe"

struct spool_index {
        uint64_t seq;
        uint64_t time_ns;
        uint64_t size;                  /* the file's size, header included */
};

struct push_spool {
        int dir_fd;
        uint64_t max_bytes;
        uint64_t next_seq;
        /* Sorted by seq: the oldest first. */
        struct spool_index *index;
        size_t n_index, cap_index;
        struct push_spool_stats stats;
};

static uint32_t get_le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p) {
        return (uint64_t) get_le32(p) | (uint64_t) get_le32(p + 4) << 32;
}

static void put_le32(uint8_t *p, uint32_t v) {
        for (size_t i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
        put_le32(p, (uint32_t) v);
        put_le32(p + 4, (uint32_t) (v >> 32));
}

/* The CRC covers time_ns and the length (bytes 16..31) and the body, so a
 * damaged time cannot make a stale request look fresh. The body is at most
 * PUSH_SPOOL_BODY_MAX, which fits zlib's uInt. */
static uint32_t spool_crc(const uint8_t *header, const void *body, size_t len) {
        uLong crc = crc32(0L, Z_NULL, 0);

        crc = crc32(crc, header + 16, 16);
        crc = crc32(crc, body, (uInt) len);
        return (uint32_t) crc;
}

int push_spool_parse(const void *data, size_t len, uint64_t *ret_time, const void **ret_body, size_t *ret_len) {
        const uint8_t *p = data;
        uint64_t body_len;

        if (len < PUSH_SPOOL_HEADER_SIZE)
                return -EBADMSG;
        if (memcmp(p, PUSH_SPOOL_MAGIC, 8) != 0)
                return -EBADMSG;
        if (get_le32(p + 8) != PUSH_SPOOL_VERSION)
                return -EBADMSG;
        body_len = get_le64(p + 24);
        if (body_len > PUSH_SPOOL_BODY_MAX)
                return -EFBIG;
        if (body_len != len - PUSH_SPOOL_HEADER_SIZE)
                return -EBADMSG;
        if (spool_crc(p, p + PUSH_SPOOL_HEADER_SIZE, (size_t) body_len) != get_le32(p + 12))
                return -EBADMSG;

        *ret_time = get_le64(p + 16);
        *ret_body = p + PUSH_SPOOL_HEADER_SIZE;
        *ret_len = (size_t) body_len;
        return 0;
}

static void spool_name(char buf[static SPOOL_NAME_MAX], uint64_t seq) {
        (void) snprintf(buf, SPOOL_NAME_MAX, "%016" PRIx64 ".req", seq);
}

/* Our entry names only: exactly 16 lower-case hex digits and ".req". */
static bool spool_name_parse(const char *name, uint64_t *ret_seq) {
        uint64_t seq = 0;

        if (strlen(name) != SPOOL_NAME_MAX - 1 || !streq(name + 16, ".req"))
                return false;
        for (size_t i = 0; i < 16; i++) {
                char c = name[i];
                unsigned d;

                if (c >= '0' && c <= '9')
                        d = (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        d = (unsigned) (c - 'a' + 10);
                else
                        return false;
                seq = seq << 4 | d;
        }
        *ret_seq = seq;
        return true;
}

static int write_all(int fd, const void *data, size_t len) {
        const uint8_t *p = data;

        while (len > 0) {
                ssize_t n = write(fd, p, len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Reads the whole entry file into a NUL-terminated buffer, without following
 * a symlink and without allocating more than a valid file can hold. -EBADMSG
 * for a file that cannot be an entry (not regular, too large, changed while
 * read). */
static int read_entry_file(int dir_fd, const char *name, uint8_t **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        size_t size, got = 0;

        fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ELOOP ? -EBADMSG : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        if ((uint64_t) st.st_size > PUSH_SPOOL_HEADER_SIZE + PUSH_SPOOL_BODY_MAX)
                return -EBADMSG;
        size = (size_t) st.st_size;

        buf = xmalloc(size + 1);
        while (got < size) {
                ssize_t n = read(fd, buf + got, size - got);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EBADMSG;        /* shrank under us */
                got += (size_t) n;
        }
        buf[size] = 0;

        *ret = TAKE_PTR(buf);
        *ret_len = size;
        return 0;
}

/* Errors that say the process is short of something, not that the file is
 * bad: the entry is kept for a later try. */
static bool error_is_transient(int r) {
        return r == -EMFILE || r == -ENFILE || r == -ENOMEM || r == -EINTR;
}

static size_t index_find(const struct push_spool *s, uint64_t seq) {
        size_t lo = 0, hi = s->n_index;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s->index[mid].seq < seq)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static void index_delete(struct push_spool *s, size_t i) {
        s->stats.bytes -= s->index[i].size;
        memmove(s->index + i, s->index + i + 1, (s->n_index - i - 1) * sizeof(s->index[0]));
        s->n_index--;
        s->stats.files = s->n_index;
}

static void index_append(struct push_spool *s, uint64_t seq, uint64_t time_ns, uint64_t size) {
        if (s->n_index == s->cap_index) {
                s->cap_index = MAX(s->cap_index * 2, (size_t) 16);
                s->index = xrealloc(s->index, s->cap_index * sizeof(s->index[0]));
        }
        s->index[s->n_index++] = (struct spool_index) { seq, time_ns, size };
        s->stats.bytes += size;
        s->stats.files = s->n_index;
}

/* Unlinks entry i and forgets it. A file already gone is fine; another
 * error keeps the entry (the index follows the directory). */
static int entry_unlink(struct push_spool *s, size_t i) {
        char name[SPOOL_NAME_MAX];

        spool_name(name, s->index[i].seq);
        if (unlinkat(s->dir_fd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        index_delete(s, i);
        return 0;
}

/* Drops the oldest until `extra` more bytes fit under max_bytes; counted.
 * A file that cannot be removed stops it (its bytes are still on disk). */
static int make_room(struct push_spool *s, uint64_t extra) {
        while (s->n_index > 0 && s->stats.bytes + extra > s->max_bytes) {
                int r = entry_unlink(s, 0);

                if (r < 0)
                        return r;
                s->stats.dropped_full++;
        }
        return 0;
}

static int probe_writable(int dir_fd) {
        _cleanup_close_ int fd = -EBADF;
        int r = 0;

        /* One left by a kill would make O_EXCL fail. */
        (void) unlinkat(dir_fd, SPOOL_PROBE_NAME, 0);
        fd = openat(dir_fd, SPOOL_PROBE_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, "", 1);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (unlinkat(dir_fd, SPOOL_PROBE_NAME, 0) < 0 && r >= 0)
                r = -errno;
        return r;
}

static int index_cmp(const void *a, const void *b) {
        const struct spool_index *x = a, *y = b;

        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

static int scan_dir(struct push_spool *s) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int fd;

        fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                int k = -errno;

                safe_close(fd);
                return k;
        }

        for (;;) {
                _cleanup_free_ uint8_t *buf = NULL;
                const void *body;
                uint64_t seq, time_ns;
                size_t len, body_len;
                int r;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
                        break;
                }

                if (strncmp(de->d_name, SPOOL_TMP_PREFIX, strlen(SPOOL_TMP_PREFIX)) == 0) {
                        /* One that will not go (a directory someone made) is
                         * not a write of ours: leave it. */
                        if (unlinkat(s->dir_fd, de->d_name, 0) >= 0)
                                s->stats.temp_removed++;
                        continue;
                }
                if (!spool_name_parse(de->d_name, &seq))
                        continue;
                /* Above every name of ours found, a bad one's too: a put()
                 * never renames onto something already there. */
                if (seq >= s->next_seq)
                        s->next_seq = seq + 1;

                r = read_entry_file(s->dir_fd, de->d_name, &buf, &len);
                if (r >= 0)
                        r = push_spool_parse(buf, len, &time_ns, &body, &body_len);
                if (r == -ENOENT)
                        continue;       /* gone while we looked */
                if (r < 0) {
                        if (error_is_transient(r) || r == -EIO)
                                return r;
                        if (unlinkat(s->dir_fd, de->d_name, 0) < 0) {
                                if (errno == ENOENT || errno == EISDIR)
                                        continue;       /* gone, or a directory: not an entry */
                                return -errno;
                        }
                        s->stats.dropped_corrupt++;
                        continue;
                }

                index_append(s, seq, time_ns, len);
        }

        if (s->n_index > 0)
                qsort(s->index, s->n_index, sizeof(s->index[0]), index_cmp);
        return 0;
}

int push_spool_open(const char *dir, uint64_t max_bytes, struct push_spool **ret, char *err, size_t errlen) {
        _cleanup_(push_spool_freep) struct push_spool *s = NULL;
        int r;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                snprintf(err, errlen, "spool directory %s: cannot create: %s", dir, strerror(-r));
                return r;
        }

        s = xcalloc(1, sizeof(*s));
        s->max_bytes = max_bytes;
        s->next_seq = 1;
        s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->dir_fd < 0) {
                r = -errno;
                snprintf(err, errlen, "spool directory %s: cannot open: %s", dir, strerror(-r));
                return r;
        }

        r = probe_writable(s->dir_fd);
        if (r < 0) {
                snprintf(err, errlen, "spool directory %s: not writable: %s", dir, strerror(-r));
                return r;
        }

        r = scan_dir(s);
        if (r < 0) {
                snprintf(err, errlen, "spool directory %s: cannot read: %s", dir, strerror(-r));
                return r;
        }

        r = make_room(s, 0);
        if (r < 0) {
                snprintf(err, errlen, "spool directory %s: cannot remove the oldest: %s", dir, strerror(-r));
                return r;
        }

        *ret = TAKE_PTR(s);
        return 0;
}

struct push_spool *push_spool_free(struct push_spool *s) {
        if (!s)
                return NULL;
        safe_close(s->dir_fd);
        free(s->index);
        free(s);
        return NULL;
}

int push_spool_put(struct push_spool *s, uint64_t time_ns, const void *body, size_t len) {
        _cleanup_close_ int fd = -EBADF;
        char name[SPOOL_NAME_MAX], tmp[SPOOL_TMP_NAME_MAX];
        uint8_t header[PUSH_SPOOL_HEADER_SIZE];
        uint64_t seq = s->next_seq, size;
        int r;

        if ((uint64_t) len > PUSH_SPOOL_BODY_MAX || (uint64_t) len + PUSH_SPOOL_HEADER_SIZE > s->max_bytes) {
                s->stats.dropped_full++;
                return -EFBIG;
        }
        size = (uint64_t) len + PUSH_SPOOL_HEADER_SIZE;

        memcpy(header, PUSH_SPOOL_MAGIC, 8);
        put_le32(header + 8, PUSH_SPOOL_VERSION);
        put_le64(header + 16, time_ns);
        put_le64(header + 24, (uint64_t) len);
        put_le32(header + 12, spool_crc(header, body, len));

        /* Room first, so that the temp file too stays under the cap. */
        r = make_room(s, size);
        if (r < 0)
                return r;

        /* A seq is used once, even by a failed put(): gaps are harmless. */
        s->next_seq = seq + 1;
        spool_name(name, seq);
        (void) snprintf(tmp, sizeof(tmp), SPOOL_TMP_PREFIX "%s", name);

        fd = openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, header, sizeof(header));
        if (r >= 0)
                r = write_all(fd, body, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        /* close(2): an error of an earlier write may show only here (NFS). */
        if (close(TAKE_FD(fd)) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && renameat(s->dir_fd, tmp, s->dir_fd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(s->dir_fd, tmp, 0);
                return r;
        }
        if (fsync(s->dir_fd) < 0) {
                /* Not known to be on disk: do not report a request as kept
                 * that a power loss could lose, nor keep one the caller will
                 * put again. */
                r = -errno;
                (void) unlinkat(s->dir_fd, name, 0);
                return r;
        }

        index_append(s, seq, time_ns, size);
        return 0;
}

int push_spool_oldest(struct push_spool *s, struct push_spool_entry *ret) {
        while (s->n_index > 0) {
                _cleanup_free_ uint8_t *buf = NULL;
                char name[SPOOL_NAME_MAX];
                const void *body;
                uint64_t time_ns;
                size_t len, body_len;
                int r;

                spool_name(name, s->index[0].seq);
                r = read_entry_file(s->dir_fd, name, &buf, &len);
                if (r < 0 && error_is_transient(r))
                        return r;
                if (r >= 0 && len != s->index[0].size)
                        r = -EBADMSG;   /* not the file we indexed */
                if (r >= 0)
                        r = push_spool_parse(buf, len, &time_ns, &body, &body_len);
                if (r < 0) {
                        /* Unreadable is as good as lost; removing it keeps
                         * the newer ones from waiting behind it forever. */
                        int k = entry_unlink(s, 0);

                        if (k < 0)
                                return k;
                        s->stats.dropped_corrupt++;
                        continue;
                }

                /* The body to the front of the buffer, which becomes the
                 * strbuf (NUL-terminated at body_len). */
                memmove(buf, body, body_len);
                buf[body_len] = 0;
                *ret = (struct push_spool_entry) {
                        .seq = s->index[0].seq,
                        .time_ns = time_ns,
                        .body = { .buf = (char *) buf, .len = body_len, .cap = len + 1 },
                };
                TAKE_PTR(buf);
                return 0;
        }
        return -ENOENT;
}

void push_spool_entry_done(struct push_spool_entry *e) {
        if (!e)
                return;
        strbuf_done(&e->body);
        *e = (struct push_spool_entry) { .body = STRBUF_INIT };
}

int push_spool_remove(struct push_spool *s, uint64_t seq) {
        size_t i = index_find(s, seq);
        int r;

        if (i >= s->n_index || s->index[i].seq != seq)
                return -ENOENT;
        r = entry_unlink(s, i);
        if (r < 0)
                return r;
        /* The unlink is visible at once (a SIGKILL cannot undo it); the
         * fsync keeps a power loss from bringing back a delivered request.
         * Its failure leaves nothing to undo. */
        (void) fsync(s->dir_fd);
        return 0;
}

size_t push_spool_drop_older(struct push_spool *s, uint64_t cutoff_ns) {
        size_t dropped = 0;

        for (size_t i = 0; i < s->n_index;) {
                if (s->index[i].time_ns < cutoff_ns && entry_unlink(s, i) >= 0) {
                        dropped++;
                        continue;
                }
                i++;
        }
        s->stats.dropped_age += dropped;
        return dropped;
}

bool push_spool_empty(const struct push_spool *s) {
        return s->n_index == 0;
}

void push_spool_get_stats(const struct push_spool *s, struct push_spool_stats *ret) {
        *ret = s->stats;
}
