/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "perf-data.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "strbuf.h"

/*
 * perf.data is written in the byte order of the recording machine and we
 * only accept little-endian files, so on a little-endian host the fields can
 * be copied as they are.
 */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "perf-data.c assumes a little-endian host"
#endif

/* Default and largest bytes per read(2)/pread(2) call. */
#define PERF_DATA_READ_SIZE     (1024 * 1024)
/* header.size is a u16, so no record (header included) is larger. */
#define PERF_DATA_RECORD_MAX    UINT16_MAX
/* The read buffer always holds at least one whole record. */
#define PERF_DATA_BUF_MIN       (PERF_DATA_RECORD_MAX + 1)
/* Feature sections larger than this are skipped, not read. */
#define PERF_DATA_FEATURE_MAX   (64 * 1024)
/* An attr larger than this (ours is 128 bytes today) is corruption. */
#define PERF_DATA_ATTR_MAX      4096
#define PERF_DATA_ATTRS_MAX     65536
/* perf writes strings in feature sections as {u32 len; char str[len]}. */
#define PERF_DATA_FEAT_STR_LEN  4
#define PERF_DATA_ERR_MAX       256
/* One per auxtrace type there is (enum auxtrace_type): plenty. */
#define PERF_DATA_AUXTRACE_DECODERS_MAX 8

#define HDR_SIZE                PERF_RECORD_HEADER_SIZE

/* The wire structs must have the on-disk sizes [perf_event_open(2)]. */
_Static_assert(sizeof(struct perf_data_file_header) == PERF_DATA_FILE_HEADER_SIZE, "perf_file_header");
_Static_assert(sizeof(struct perf_data_wire_time_conv) == 48, "time_conv body");
_Static_assert(sizeof(struct perf_data_wire_auxtrace) == 40, "auxtrace body");

/* Copy a wire struct out of the buffer: the caller has checked the length. */
#define WIRE(dst, p) memcpy(&(dst), (p), sizeof(dst))
/* A consumer callback, when set. */
#define CALL(r, cb, arg) ((r)->ops->cb ? (r)->ops->cb((r)->userdata, (arg)) : 0)

struct id_map_entry {
        uint64_t id;
        size_t attr;
};

struct perf_data_reader {
        /* Source: an fd or a memory block. */
        int fd;
        int cancel_fd; /* -1, or readable when the reader must stop */
        bool own_fd;
        const uint8_t *mem;
        size_t mem_size;
        bool is_memory;
        bool seekable;
        bool size_known;
        uint64_t file_size;
        bool pipe_mode;
        bool ran;
        /*
         * Blocking (perf_data_reader_run()): wait for a pipe with poll(2).
         * Otherwise (perf_data_reader_step()) a pipe with nothing to read
         * gives -EAGAIN and the step resumes where it stopped.
         */
        bool blocking;
        enum {
                READER_START,   /* nothing read: the header comes next */
                READER_RECORDS, /* at a record boundary (or inside one not yet complete in the buffer) */
                READER_PAYLOAD, /* inside the payload that follows an AUXTRACE or TRACING_DATA record */
                READER_END,     /* done: result says how */
        } state;
        int result;             /* READER_END: 0 or the error */
        size_t units_left;      /* records and payload pieces this step may still hand out */

        /* The payload in progress (READER_PAYLOAD). */
        struct perf_data_auxtrace pl_at;
        bool pl_deliver;        /* to on_auxtrace; else skipped */
        const char *pl_what;
        uint64_t pl_rec_off, pl_len, pl_done;

        /* File mode: a damaged feature section, returned after the records. */
        int deferred;
        char deferred_msg[PERF_DATA_ERR_MAX];

        /* Read buffer: valid bytes are buf[start, end), buf[start] is at stream offset pos. */
        uint8_t *buf;
        size_t cap, start, end;
        uint64_t pos;
        size_t max_read;
        uint64_t data_end;      /* file mode: end of the data section; pipe: UINT64_MAX */

        struct perf_data_attr *attrs;
        size_t nr_attrs;
        struct id_map_entry *id_map;
        size_t nr_id_map;
        bool sample_id_all;
        int id_pos, is_pos;     /* -1: no id in that position for every attr */

        char *cpuid;
        bool has_nrcpus;
        uint32_t nr_cpus_avail, nr_cpus_online;
        /* Decoders of AUXTRACE_INFO private areas, by type: a few at most. */
        const struct perf_data_auxtrace_decoder *decoders[PERF_DATA_AUXTRACE_DECODERS_MAX];
        size_t nr_decoders;

        struct perf_data_stats stats;
        struct perf_data_cpu_stats *cpu_stats;
        uint32_t nr_cpu_stats;

        const struct perf_data_ops *ops;
        void *userdata;
        char err[PERF_DATA_ERR_MAX];
};

_printf_(3, 4)
static int fail(struct perf_data_reader *reader, int err, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(reader->err, sizeof(reader->err), fmt, ap);
        va_end(ap);
        return err;
}

static int new_common(struct perf_data_reader **ret) {
        struct perf_data_reader *reader;

        reader = xcalloc(1, sizeof(*reader));
        reader->fd = reader->cancel_fd = -1;
        reader->max_read = PERF_DATA_READ_SIZE;
        reader->data_end = UINT64_MAX;
        reader->id_pos = reader->is_pos = -1;
        *ret = reader;
        return 0;
}

int perf_data_reader_new_fd(int fd, bool take_fd, struct perf_data_reader **ret) {
        struct perf_data_reader *reader;
        struct stat st;
        int k;

        if (fd < 0 || !ret)
                return -EINVAL;
        if (fstat(fd, &st) < 0)
                return -errno;

        k = new_common(&reader);
        if (k < 0)
                return k;
        reader->fd = fd;
        reader->own_fd = take_fd;
        /* Regular files (and block devices) are read with pread(2); pipes with read(2). */
        if (S_ISREG(st.st_mode)) {
                reader->seekable = true;
                reader->size_known = true;
                reader->file_size = (uint64_t) st.st_size;
        }
        *ret = reader;
        return 0;
}

int perf_data_reader_new_path(const char *path, struct perf_data_reader **ret) {
        _cleanup_close_ int fd = -1;
        int k;

        if (!path || !ret)
                return -EINVAL;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        k = perf_data_reader_new_fd(fd, true, ret);
        if (k < 0)
                return k;
        TAKE_FD(fd);
        return 0;
}

int perf_data_reader_new_memory(const void *data, size_t size, struct perf_data_reader **ret) {
        struct perf_data_reader *reader;
        int k;

        if ((!data && size > 0) || !ret)
                return -EINVAL;
        k = new_common(&reader);
        if (k < 0)
                return k;
        reader->mem = data;
        reader->mem_size = size;
        reader->is_memory = true;
        reader->seekable = true;
        reader->size_known = true;
        reader->file_size = size;
        *ret = reader;
        return 0;
}

static void free_attrs(struct perf_data_reader *reader) {
        for (size_t i = 0; i < reader->nr_attrs; i++)
                free(reader->attrs[i].ids);
        free(reader->attrs);
        reader->attrs = NULL;
        reader->nr_attrs = 0;
}

struct perf_data_reader *perf_data_reader_free(struct perf_data_reader *reader) {
        if (!reader)
                return NULL;
        if (reader->own_fd)
                safe_close(reader->fd);
        free(reader->buf);
        free_attrs(reader);
        free(reader->id_map);
        free(reader->cpuid);
        free(reader->cpu_stats);
        free(reader);
        return NULL;
}

void perf_data_reader_set_cancel_fd(struct perf_data_reader *reader, int cancel_fd) {
        if (reader)
                reader->cancel_fd = cancel_fd;
}

void perf_data_reader_set_read_size(struct perf_data_reader *reader, size_t max_read) {
        if (!reader)
                return;
        reader->max_read = MIN(MAX(max_read, (size_t) 1), (size_t) PERF_DATA_READ_SIZE);
}

const char *perf_data_reader_error(const struct perf_data_reader *reader) {
        return reader ? reader->err : "";
}

bool perf_data_reader_is_pipe(const struct perf_data_reader *reader) {
        return reader && reader->pipe_mode;
}

const struct perf_data_stats *perf_data_reader_stats(const struct perf_data_reader *reader) {
        return &reader->stats;
}

const struct perf_data_cpu_stats *perf_data_reader_cpu_stats(const struct perf_data_reader *reader, uint32_t cpu) {
        if (cpu >= reader->nr_cpu_stats)
                return NULL;
        return &reader->cpu_stats[cpu];
}

uint32_t perf_data_reader_nr_cpu_stats(const struct perf_data_reader *reader) {
        return reader->nr_cpu_stats;
}

size_t perf_data_reader_nr_attrs(const struct perf_data_reader *reader) {
        return reader->nr_attrs;
}

const struct perf_data_attr *perf_data_reader_attr(const struct perf_data_reader *reader, size_t i) {
        if (i >= reader->nr_attrs)
                return NULL;
        return &reader->attrs[i];
}

int perf_data_reader_nr_cpus(const struct perf_data_reader *reader, uint32_t *ret_avail, uint32_t *ret_online) {
        if (!reader->has_nrcpus)
                return -ENOENT;
        if (ret_avail)
                *ret_avail = reader->nr_cpus_avail;
        if (ret_online)
                *ret_online = reader->nr_cpus_online;
        return 0;
}

const char *perf_data_reader_cpuid(const struct perf_data_reader *reader) {
        return reader->cpuid;
}

/*
 * arm64 perf writes HEADER_CPUID as "0x%016lx" of MIDR_EL1
 * (tools/perf/arch/arm64/util/header.c); strtoul() would accept blanks,
 * signs and trailing junk, so parse it by hand with a range check.
 */
int perf_data_parse_midr(const char *s, uint64_t *ret_midr) {
        uint64_t v = 0;
        size_t n = 0;

        if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
                return -EINVAL;
        for (s += 2; *s; s++, n++) {
                int d = hex_digit_value(*s);

                if (d < 0)
                        return -EINVAL;
                if (v >> 60)
                        return -ERANGE;
                v = (v << 4) | (uint64_t) d;
        }
        if (n == 0)
                return -EINVAL;
        *ret_midr = v;
        return 0;
}

int perf_data_reader_add_auxtrace_decoder(struct perf_data_reader *reader, const struct perf_data_auxtrace_decoder *d) {
        if (!reader || !d || !d->decode)
                return -EINVAL;
        for (size_t i = 0; i < reader->nr_decoders; i++)
                if (reader->decoders[i]->type == d->type) {
                        reader->decoders[i] = d;
                        return 0;
                }
        if (reader->nr_decoders >= ELEMENTSOF(reader->decoders))
                return -E2BIG;
        reader->decoders[reader->nr_decoders++] = d;
        return 0;
}

int perf_data_reader_midr(const struct perf_data_reader *reader, uint32_t cpu, uint64_t *ret_midr) {
        for (size_t i = 0; i < reader->nr_decoders; i++) {
                const struct perf_data_auxtrace_decoder *d = reader->decoders[i];

                if (d->midr && d->midr(d->state, cpu, ret_midr) == 0)
                        return 0;
        }
        if (reader->cpuid && perf_data_parse_midr(reader->cpuid, ret_midr) == 0)
                return 0;
        return -ENOENT;
}

/* ---- source access ---------------------------------------------------- */

int perf_data_wait_readable(int fd, int cancel_fd) {
        struct pollfd p[2] = {
                { .fd = fd, .events = POLLIN },
                { .fd = cancel_fd, .events = POLLIN },
        };

        for (;;) {
                if (poll(p, cancel_fd >= 0 ? 2 : 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (cancel_fd >= 0 && p[1].revents)
                        return -ECANCELED;
                /* POLLHUP: the writer left, read(2) then returns what is left, then 0. */
                if (p[0].revents)
                        return 0;
        }
}

/* Read up to len bytes at off; returns bytes read (0 = end of input) or -errno. */
static ssize_t src_read(struct perf_data_reader *reader, uint64_t off, void *dst, size_t len) {
        ssize_t n;

        if (reader->is_memory) {
                if (off >= reader->mem_size)
                        return 0;
                len = (size_t) MIN((uint64_t) len, reader->mem_size - off);
                memcpy(dst, reader->mem + off, len);
                return (ssize_t) len;
        }
        if (off > INT64_MAX)
                return 0;
        for (;;) {
                /* A pipe is read only once it is ready (see perf_data_wait_readable()). */
                if (!reader->blocking && !reader->seekable) {
                        /*
                         * Not blocking: the same question without waiting. A
                         * FIFO that never had a writer polls as not ready (its
                         * read(2) would say end of file).
                         */
                        struct pollfd p = { .fd = reader->fd, .events = POLLIN };
                        int k = poll(&p, 1, 0);

                        if (k < 0 && errno != EINTR)
                                return -errno;
                        if (k <= 0)
                                return -EAGAIN;
                } else if (!reader->seekable || reader->cancel_fd >= 0) {
                        int k = perf_data_wait_readable(reader->fd, reader->cancel_fd);

                        if (k < 0)
                                return k;
                }
                /* Pipes are read in order: off is then always the stream position. */
                if (reader->seekable)
                        n = pread(reader->fd, dst, len, (off_t) off);
                else
                        n = read(reader->fd, dst, len);
                if (n >= 0)
                        return n;
                if (errno == EAGAIN && !reader->blocking)
                        return -EAGAIN;
                if (errno != EINTR && errno != EAGAIN)
                        return -errno;
        }
}

/* Read exactly len bytes at off (file mode only); -ENODATA at end of input. */
static int src_read_full(struct perf_data_reader *reader, uint64_t off, void *dst, size_t len) {
        uint8_t *p = dst;

        while (len > 0) {
                ssize_t n = src_read(reader, off, p, len);

                if (n < 0)
                        return (int) n;
                if (n == 0)
                        return -ENODATA;
                p += n;
                off += (uint64_t) n;
                len -= (size_t) n;
        }
        return 0;
}

static size_t buffered(const struct perf_data_reader *reader) {
        return reader->end - reader->start;
}

static void consume(struct perf_data_reader *reader, size_t n) {
        reader->start += n;
        reader->pos += n;
        if (reader->start == reader->end)
                reader->start = reader->end = 0;
}

/* Read one more chunk into the buffer: >0 bytes added, 0 at end, or -errno. */
static ssize_t fill(struct perf_data_reader *reader) {
        uint64_t next = reader->pos + buffered(reader);
        size_t room;
        ssize_t n;

        if (reader->start > 0 && reader->end == reader->cap) {
                memmove(reader->buf, reader->buf + reader->start, buffered(reader));
                reader->end -= reader->start;
                reader->start = 0;
        }
        room = MIN(reader->cap - reader->end, reader->max_read);
        /* Stop at the end of the data section: feature sections follow it. */
        if (next >= reader->data_end)
                return 0;
        room = (size_t) MIN((uint64_t) room, reader->data_end - next);
        if (room == 0)
                return 0;
        n = src_read(reader, next, reader->buf + reader->end, room);
        if (n < 0)
                return n;
        reader->end += (size_t) n;
        return n;
}

/* Make n contiguous bytes available at buf[start]: 1, 0 at end of input, or -errno. */
static int ensure(struct perf_data_reader *reader, size_t n) {
        while (buffered(reader) < n) {
                ssize_t k;

                if (reader->cap - reader->start < n) {
                        memmove(reader->buf, reader->buf + reader->start, buffered(reader));
                        reader->end -= reader->start;
                        reader->start = 0;
                }
                k = fill(reader);
                if (k < 0)
                        return (int) k;
                if (k == 0)
                        return 0;
        }
        return 1;
}

static int alloc_buf(struct perf_data_reader *reader) {
        size_t cap = PERF_DATA_READ_SIZE;

        /* A small input needs no more than a buffer that holds one record. */
        if (reader->size_known && reader->file_size < cap)
                cap = MAX((size_t) reader->file_size, (size_t) PERF_DATA_BUF_MIN);
        reader->buf = xmalloc(cap);
        reader->cap = cap;
        return 0;
}

/* ---- attrs and sample ids ---------------------------------------------- */

static int cmp_id(const void *a, const void *b) {
        const struct id_map_entry *x = a, *y = b;

        return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Where the event id sits, as perf computes it (util/evsel.c
 * evsel__calc_id_pos): in SAMPLE records counted in u64s after the header,
 * in the sample_id trailer of other records counted from the end.
 */
static int calc_id_pos(uint64_t st) {
        int idx = 0;

        if (st & PERF_SAMPLE_IDENTIFIER)
                return 0;
        if (!(st & PERF_SAMPLE_ID))
                return -1;
        if (st & PERF_SAMPLE_IP)
                idx++;
        if (st & PERF_SAMPLE_TID)
                idx++;
        if (st & PERF_SAMPLE_TIME)
                idx++;
        if (st & PERF_SAMPLE_ADDR)
                idx++;
        return idx;
}

static int calc_is_pos(uint64_t st) {
        int idx = 1;

        if (st & PERF_SAMPLE_IDENTIFIER)
                return 1;
        if (!(st & PERF_SAMPLE_ID))
                return -1;
        if (st & PERF_SAMPLE_CPU)
                idx++;
        if (st & PERF_SAMPLE_STREAM_ID)
                idx++;
        return idx;
}

static int rebuild_id_map(struct perf_data_reader *reader) {
        struct id_map_entry *m;
        size_t n = 0, k = 0;

        for (size_t i = 0; i < reader->nr_attrs; i++)
                n += reader->attrs[i].nr_ids;
        m = xcalloc(MAX(n, (size_t) 1), sizeof(*m));
        for (size_t i = 0; i < reader->nr_attrs; i++)
                for (size_t j = 0; j < reader->attrs[i].nr_ids; j++)
                        m[k++] = (struct id_map_entry) { .id = reader->attrs[i].ids[j], .attr = i };
        qsort(m, n, sizeof(*m), cmp_id);
        free(reader->id_map);
        reader->id_map = m;
        reader->nr_id_map = n;

        /* perf requires the id at the same place for every attr (evlist__valid_sample_type). */
        reader->sample_id_all = reader->attrs[0].attr.sample_id_all;
        reader->id_pos = calc_id_pos(reader->attrs[0].attr.sample_type);
        reader->is_pos = calc_is_pos(reader->attrs[0].attr.sample_type);
        for (size_t i = 1; i < reader->nr_attrs; i++) {
                if (calc_id_pos(reader->attrs[i].attr.sample_type) != reader->id_pos)
                        reader->id_pos = -1;
                if (calc_is_pos(reader->attrs[i].attr.sample_type) != reader->is_pos)
                        reader->is_pos = -1;
        }
        return 0;
}

/*
 * Add one attr: `raw` holds attr_len bytes of perf_event_attr as written
 * (its own size field says how much of it is defined), ids are separate.
 */
static int add_attr(struct perf_data_reader *reader, uint64_t where, const uint8_t *raw, size_t attr_len,
                    uint64_t *ids, size_t nr_ids) {
        struct perf_data_attr *a;
        uint32_t sz;

        if (reader->nr_attrs >= PERF_DATA_ATTRS_MAX) {
                free(ids);
                return fail(reader, -EBADMSG, "attr at offset 0x%" PRIx64 ": more than %u attrs",
                            where, PERF_DATA_ATTRS_MAX);
        }
        sz = perf_rd32(raw + offsetof(struct perf_event_attr, size));
        /* size 0 means the first published layout [perf_event_open(2)]. */
        if (sz == 0)
                sz = PERF_ATTR_SIZE_VER0;
        if (sz < PERF_ATTR_SIZE_VER0 || sz > attr_len) {
                free(ids);
                return fail(reader, -EBADMSG, "attr at offset 0x%" PRIx64 " has size %" PRIu32
                            " outside [%u, %zu]", where, sz, PERF_ATTR_SIZE_VER0, attr_len);
        }

        reader->attrs = xrealloc(reader->attrs, (reader->nr_attrs + 1) * sizeof(*reader->attrs));
        a = &reader->attrs[reader->nr_attrs++];
        *a = (struct perf_data_attr) {
                .attr_size = sz,
                .nr_ids = nr_ids,
                .ids = ids,
        };
        /* A newer perf may write a longer attr than ours; the tail is ignored. */
        memcpy(&a->attr, raw, MIN((size_t) sz, sizeof(a->attr)));
        a->attr.size = sz;

        return rebuild_id_map(reader);
}

static const struct perf_data_attr *find_attr_by_id(struct perf_data_reader *reader, uint64_t id) {
        size_t lo = 0, hi = reader->nr_id_map;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (reader->id_map[mid].id == id)
                        return &reader->attrs[reader->id_map[mid].attr];
                if (reader->id_map[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* Which attr a record belongs to (util/evlist.c evlist__event2evsel). */
static const struct perf_data_attr *resolve_attr(struct perf_data_reader *reader, const uint8_t *rec,
                                                 uint32_t size, bool is_sample) {
        const struct perf_data_attr *a;
        uint32_t body = size - HDR_SIZE;
        uint64_t id;
        int p;

        if (reader->nr_attrs == 0)
                return NULL;
        if (!is_sample && !reader->sample_id_all)
                return NULL;
        if (reader->nr_attrs == 1)
                return &reader->attrs[0];
        p = is_sample ? reader->id_pos : reader->is_pos;
        if (p < 0)
                return &reader->attrs[0];
        if (is_sample) {
                if ((uint32_t) (p + 1) * 8 > body)
                        goto unresolved;
                id = perf_rd64(rec + HDR_SIZE + (uint32_t) p * 8);
        } else {
                if ((uint32_t) p * 8 > body)
                        goto unresolved;
                id = perf_rd64(rec + size - (uint32_t) p * 8);
        }
        if (id == 0)
                return &reader->attrs[0];
        a = find_attr_by_id(reader, id);
        if (a)
                return a;
unresolved:
        reader->stats.unresolved_ids++;
        return NULL;
}

/* ---- stats -------------------------------------------------------------- */

static struct perf_data_cpu_stats *cpu_stats(struct perf_data_reader *reader, uint32_t cpu) {
        struct perf_data_cpu_stats *n;
        uint32_t want;

        if (cpu >= PERF_DATA_MAX_CPUS)
                return NULL;
        if (cpu < reader->nr_cpu_stats)
                return &reader->cpu_stats[cpu];
        /* Grows only when a new CPU shows up, at most PERF_DATA_MAX_CPUS entries. */
        want = MIN(MAX(cpu + 1, reader->nr_cpu_stats * 2), (uint32_t) PERF_DATA_MAX_CPUS);
        n = xrealloc(reader->cpu_stats, want * sizeof(*n));
        memset(n + reader->nr_cpu_stats, 0, (want - reader->nr_cpu_stats) * sizeof(*n));
        reader->cpu_stats = n;
        reader->nr_cpu_stats = want;
        return &n[cpu];
}

static struct perf_data_cpu_stats *sid_cpu_stats(struct perf_data_reader *reader,
                                                 const struct perf_data_sample_id *sid) {
        if (!(sid->valid & PERF_DATA_ID_CPU))
                return NULL;
        return cpu_stats(reader, sid->cpu);
}

static void count_lost(struct perf_data_reader *reader, const struct perf_data_sample_id *sid, uint64_t lost) {
        struct perf_data_cpu_stats *cs = sid_cpu_stats(reader, sid);

        if (cs)
                cs->lost += lost;
}

/* ---- features ------------------------------------------------------------ */

/* {u32 len; char str[len]} with the string NUL-terminated inside len. */
static int feature_string(const uint8_t *data, size_t len, const char **ret) {
        uint32_t n;

        if (len < PERF_DATA_FEAT_STR_LEN)
                return -EBADMSG;
        n = perf_rd32(data);
        if (n > len - PERF_DATA_FEAT_STR_LEN || !memchr(data + PERF_DATA_FEAT_STR_LEN, 0, n))
                return -EBADMSG;
        *ret = (const char *) data + PERF_DATA_FEAT_STR_LEN;
        return 0;
}

/* A NUL-terminated string in rec[from, to); NULL when it is not terminated. */
static const char *rec_string(const uint8_t *p, uint32_t from, uint32_t to) {
        if (from >= to || !memchr(p + from, 0, to - from))
                return NULL;
        return (const char *) p + from;
}

/*
 * Build-id table entries in p[0, len) (a HEADER_BUILD_ID section, or one
 * PERF_RECORD_HEADER_BUILD_ID record with its header), at input offset where.
 */
static int build_ids(struct perf_data_reader *reader, uint64_t where, const uint8_t *p, size_t len) {
        while (len > 0) {
                struct perf_data_build_id bid = { .file_offset = where };
                struct perf_data_wire_build_id w;
                int k;

                if (len < sizeof(w))
                        return fail(reader, -EBADMSG, "build-id entry at offset 0x%" PRIx64 " has 0x%zx bytes, "
                                    "needs 0x%zx", where, len, sizeof(w));
                WIRE(w, p);
                if (w.size < sizeof(w) || w.size > len)
                        return fail(reader, -EBADMSG, "build-id entry at offset 0x%" PRIx64 " has size 0x%" PRIx16
                                    " outside [0x%zx, 0x%zx]", where, w.size, sizeof(w), len);
                bid.filename = rec_string(p, sizeof(w), w.size);
                if (!bid.filename)
                        return fail(reader, -EBADMSG, "build-id entry at offset 0x%" PRIx64
                                    " has an unterminated file name", where);
                bid.misc = w.misc;
                bid.pid = w.pid;
                bid.build_id_size = (w.misc & PERF_DATA_MISC_BUILD_ID_SIZE) ?
                                            MIN(w.build_id_size, (uint8_t) PERF_DATA_BUILD_ID_MAX) :
                                            PERF_DATA_BUILD_ID_MAX;
                memcpy(bid.build_id, w.build_id, sizeof(bid.build_id));
                k = CALL(reader, on_build_id, &bid);
                if (k < 0)
                        return k;
                p += w.size;
                len -= w.size;
                where += w.size;
        }
        return 0;
}

static int process_feature(struct perf_data_reader *reader, uint64_t where, unsigned feat,
                           const uint8_t *data, size_t len) {
        struct perf_data_wire_nrcpus nrc;
        const char *s;
        int k;

        switch (feat) {
        case PERF_DATA_FEAT_CPUID:
                if (feature_string(data, len, &s) < 0)
                        return fail(reader, -EBADMSG, "HEADER_CPUID at offset 0x%" PRIx64
                                    " is not a terminated string", where);
                free(reader->cpuid);
                reader->cpuid = xstrdup(s);
                break;
        case PERF_DATA_FEAT_BUILD_ID:
                k = build_ids(reader, where, data, len);
                if (k < 0)
                        return k;
                break;
        case PERF_DATA_FEAT_NRCPUS:
                if (len < sizeof(nrc))
                        return fail(reader, -EBADMSG, "HEADER_NRCPUS at offset 0x%" PRIx64
                                    " has size 0x%zx, need 0x%zx", where, len, sizeof(nrc));
                WIRE(nrc, data);
                reader->nr_cpus_avail = nrc.nr_cpus_avail;
                reader->nr_cpus_online = nrc.nr_cpus_online;
                reader->has_nrcpus = true;
                break;
        default:
                break;
        }
        if (reader->ops->on_feature) {
                k = reader->ops->on_feature(reader->userdata, feat, data, len);
                if (k < 0)
                        return k;
        }
        return 0;
}

/*
 * File mode: the feature index follows the data section, one {offset, size}
 * per set bit of adds_features in increasing bit order
 * [perf.data-file-format.txt "feature sections"].
 */
static int read_features(struct perf_data_reader *reader, const struct perf_data_file_header *h) {
        uint64_t idx_off = h->data.offset + h->data.size;
        unsigned nr = 0, i = 0;
        int k;

        for (unsigned b = 0; b < ELEMENTSOF(h->adds_features); b++)
                nr += (unsigned) __builtin_popcountll(h->adds_features[b]);
        if (nr == 0)
                return 0;
        if (idx_off > reader->file_size ||
            (uint64_t) nr * sizeof(struct perf_data_file_section) > reader->file_size - idx_off)
                return fail(reader, -ENODATA, "feature index of %u entries at offset 0x%" PRIx64
                            " is past the end of the input at 0x%" PRIx64, nr, idx_off, reader->file_size);

        for (unsigned feat = 0; feat < PERF_DATA_FEAT_BITS; feat++) {
                struct perf_data_file_section s;
                uint64_t where;

                if (!(h->adds_features[feat / 64] & (UINT64_C(1) << (feat % 64))))
                        continue;
                where = idx_off + (uint64_t) i++ * sizeof(s);
                k = src_read_full(reader, where, &s, sizeof(s));
                if (k < 0)
                        return fail(reader, k, "cannot read feature index entry at offset 0x%" PRIx64, where);
                if (s.offset > reader->file_size || s.size > reader->file_size - s.offset)
                        return fail(reader, -ENODATA, "feature %u section at offset 0x%" PRIx64 " size 0x%" PRIx64
                                    " (index entry at 0x%" PRIx64 ") is past the end of the input at 0x%" PRIx64,
                                    feat, s.offset, s.size, where, reader->file_size);
                /* The build-id table grows with the files sampled: it may fill the read buffer. */
                if (s.size > (feat == PERF_DATA_FEAT_BUILD_ID ? PERF_DATA_READ_SIZE : PERF_DATA_FEATURE_MAX))
                        continue;
                if (!reader->ops->on_feature && feat != PERF_DATA_FEAT_CPUID && feat != PERF_DATA_FEAT_NRCPUS &&
                    !(feat == PERF_DATA_FEAT_BUILD_ID && reader->ops->on_build_id))
                        continue;
                k = src_read_full(reader, s.offset, reader->buf, (size_t) s.size);
                if (k < 0)
                        return fail(reader, k, "cannot read feature %u section at offset 0x%" PRIx64, feat, s.offset);
                k = process_feature(reader, s.offset, feat, reader->buf, (size_t) s.size);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* ---- records ------------------------------------------------------------- */

static int too_short(struct perf_data_reader *reader, const struct perf_data_record *rec, uint32_t need) {
        return fail(reader, -EBADMSG, "%s record at offset 0x%" PRIx64 " has size 0x%" PRIx16
                    ", its fields need 0x%" PRIx32, perf_data_record_type_name(rec->type) ?: "?",
                    rec->file_offset, rec->size, need);
}

static int unterminated(struct perf_data_reader *reader, const struct perf_data_record *rec) {
        return fail(reader, -EBADMSG, "%s record at offset 0x%" PRIx64 " has an unterminated string",
                    perf_data_record_type_name(rec->type) ?: "?", rec->file_offset);
}

/* Copy a record's fixed body, checked against header.size less the sample_id trailer. */
static int get_body(struct perf_data_reader *reader, const struct perf_data_record *rec, uint32_t tlen,
                    void *dst, size_t len) {
        if (HDR_SIZE + len + tlen > rec->size)
                return too_short(reader, rec, (uint32_t) (HDR_SIZE + len + tlen));
        memcpy(dst, rec->raw + HDR_SIZE, len);
        return 0;
}


/* A kernel record's typed body failed to parse (perf-record.h): say what was wrong. */
static int body_error(struct perf_data_reader *reader, const struct perf_data_record *rec, uint32_t tlen, int err) {
        if (err == -EILSEQ)
                return unterminated(reader, rec);
        return too_short(reader, rec, perf_record_fixed_size(rec->type) + tlen);
}

static int handle_auxtrace_info(struct perf_data_reader *reader, struct perf_data_record *rec) {
        struct perf_data_auxtrace_info info = { .rec = *rec };
        int k;

        struct perf_data_wire_auxtrace_info w;

        k = get_body(reader, rec, 0, &w, sizeof(w));
        if (k < 0)
                return k;
        info.type = w.type;
        info.priv = rec->raw + HDR_SIZE + sizeof(w);
        info.priv_len = rec->size - HDR_SIZE - sizeof(w);
        for (size_t i = 0; i < reader->nr_decoders; i++)
                if (reader->decoders[i]->type == info.type) {
                        char msg[PERF_DATA_ERR_MAX] = "";

                        k = reader->decoders[i]->decode(reader->decoders[i]->state, &info, msg, sizeof(msg));
                        if (k < 0)
                                return msg[0] ? fail(reader, k, "%s", msg) : k;
                        break;
                }
        return CALL(reader, on_auxtrace_info, &info);
}

/* Payload bytes that follow a record but are not counted in header.size. */
static int check_payload(struct perf_data_reader *reader, const struct perf_data_record *rec, uint64_t len) {
        uint64_t end = rec->file_offset + rec->size;

        if (len > reader->data_end - end)
                return fail(reader, -EBADMSG, "%s record at offset 0x%" PRIx64 " claims a 0x%" PRIx64
                            "-byte payload past end of data at 0x%" PRIx64,
                            perf_data_record_type_name(rec->type) ?: "?", rec->file_offset, len, reader->data_end);
        return 0;
}

/*
 * Hand the payload in progress (r->pl_*: bytes that follow the current
 * record) to the consumer, or skip it when not delivering, in pieces as they
 * sit in the read buffer. 0 when it is all out (the reader is back between
 * records), 1 when the step's budget ran out, -EAGAIN when a non-blocking
 * input has no more bytes now: r->pl_done says where to resume.
 */
static int payload_continue(struct perf_data_reader *reader) {
        int k;

        for (;;) {
                size_t n = (size_t) MIN((uint64_t) buffered(reader), reader->pl_len - reader->pl_done);
                bool last = reader->pl_done + n == reader->pl_len;

                if (n > 0 || reader->pl_len == 0) {
                        if (reader->pl_deliver && reader->ops->on_auxtrace) {
                                k = reader->ops->on_auxtrace(reader->userdata, &reader->pl_at, reader->pl_done,
                                                             reader->buf + reader->start, n, last);
                                if (k < 0)
                                        return k;
                        }
                        consume(reader, n);
                        reader->pl_done += n;
                        if (reader->units_left > 0)
                                reader->units_left--;
                }
                if (last) {
                        reader->state = READER_RECORDS;
                        return 0;
                }
                if (n > 0 && reader->units_left == 0)
                        return 1;
                k = (int) fill(reader);
                if (k == -EAGAIN)
                        return k;
                if (k < 0)
                        return fail(reader, k, "read error in the %s payload of the record at offset 0x%" PRIx64,
                                    reader->pl_what, reader->pl_rec_off);
                if (k == 0)
                        return fail(reader, -ENODATA, "%s payload of the record at offset 0x%" PRIx64
                                    " (0x%" PRIx64 " bytes) is cut at offset 0x%" PRIx64 ", the end of the input",
                                    reader->pl_what, reader->pl_rec_off, reader->pl_len, reader->pos);
        }
}

/* Start streaming `len` payload bytes that follow the record at rec_off (delivered when at is set). */
static int payload_begin(struct perf_data_reader *reader, const struct perf_data_auxtrace *at, const char *what,
                         uint64_t rec_off, uint64_t len) {
        reader->pl_deliver = at;
        if (at)
                reader->pl_at = *at;
        reader->pl_what = what;
        reader->pl_rec_off = rec_off;
        reader->pl_len = len;
        reader->pl_done = 0;
        reader->state = READER_PAYLOAD;
        return payload_continue(reader);
}

static int handle_auxtrace(struct perf_data_reader *reader, struct perf_data_record *rec) {
        struct perf_data_wire_auxtrace w;
        struct perf_data_auxtrace at;
        struct perf_data_cpu_stats *cs;
        int k;

        k = get_body(reader, rec, 0, &w, sizeof(w));
        if (k < 0)
                return k;
        at = (struct perf_data_auxtrace) {
                .file_offset = rec->file_offset,
                .size = w.size,
                .offset = w.offset,
                .reference = w.reference,
                .idx = w.idx,
                .tid = w.tid,
                .cpu = w.cpu,
        };
        k = check_payload(reader, rec, at.size);
        if (k < 0)
                return k;

        reader->stats.aux_bytes += at.size;
        cs = cpu_stats(reader, at.cpu);
        if (cs) {
                cs->auxtrace_records++;
                cs->aux_bytes += at.size;
        }
        /* The record is consumed before its payload is streamed (rec->raw goes stale). */
        consume(reader, rec->size);
        return payload_begin(reader, &at, "AUXTRACE", rec->file_offset, at.size);
}

static int handle_sample(struct perf_data_reader *reader, struct perf_data_record *rec) {
        struct perf_data_sample s = { .rec = *rec };
        const struct perf_data_attr *a;
        struct perf_data_cpu_stats *cs;

        a = resolve_attr(reader, rec->raw, rec->size, true);
        if (a && perf_record_parse_sample(&a->attr, rec, &s) < 0)
                return fail(reader, -EBADMSG, "SAMPLE record at offset 0x%" PRIx64 " (size 0x%" PRIx16
                            ") is too short for sample_type 0x%" PRIx64, rec->file_offset, rec->size,
                            (uint64_t) a->attr.sample_type);
        s.attr = a;
        cs = sid_cpu_stats(reader, &s.rec.sid);
        if (cs)
                cs->samples++;
        if (reader->ops->on_record) {
                int k = reader->ops->on_record(reader->userdata, &s.rec);

                if (k < 0)
                        return k;
        }
        return CALL(reader, on_sample, &s);
}

static int handle_header_attr(struct perf_data_reader *reader, struct perf_data_record *rec) {
        uint32_t body = rec->size - HDR_SIZE, sz;
        _cleanup_free_ uint64_t *ids = NULL;
        size_t nr_ids;
        int k;

        /* {perf_event_attr (attr.size bytes); u64 id[]} [perf.data-file-format.txt pipe mode]. */
        if (body < PERF_ATTR_SIZE_VER0)
                return too_short(reader, rec, HDR_SIZE + PERF_ATTR_SIZE_VER0);
        sz = perf_rd32(rec->raw + HDR_SIZE + offsetof(struct perf_event_attr, size));
        if (sz == 0)
                sz = PERF_ATTR_SIZE_VER0;
        if (sz > body)
                return fail(reader, -EBADMSG, "ATTR record at offset 0x%" PRIx64 ": attr size 0x%" PRIx32
                            " exceeds the record (0x%" PRIx16 ")", rec->file_offset, sz, rec->size);
        nr_ids = (body - sz) / 8;
        ids = xcalloc(MAX(nr_ids, (size_t) 1), sizeof(uint64_t));
        memcpy(ids, rec->raw + HDR_SIZE + sz, nr_ids * 8);
        k = add_attr(reader, rec->file_offset, rec->raw + HDR_SIZE, sz, TAKE_PTR(ids), nr_ids);
        if (k < 0)
                return k;
        return CALL(reader, on_attr, &reader->attrs[reader->nr_attrs - 1]);
}

static int handle_record(struct perf_data_reader *reader, const uint8_t *p, uint64_t off) {
        struct perf_data_record rec;
        const uint8_t *b = p + HDR_SIZE;
        struct perf_data_cpu_stats *cs;
        uint32_t tlen = 0;
        int k;

        perf_record_header(p, off, &rec);
        reader->stats.records_total++;
        if (rec.type < PERF_DATA_NR_TYPES)
                reader->stats.records_by_type[rec.type]++;
        else
                reader->stats.records_other_type++;

        /* Kernel records other than SAMPLE may end in a sample_id trailer. */
        if (rec.type < PERF_RECORD_USER_TYPE_START && rec.type != PERF_RECORD_SAMPLE) {
                const struct perf_data_attr *a = resolve_attr(reader, p, rec.size, false);

                if (perf_record_parse_trailer(a ? &a->attr : NULL, &rec, 0, &tlen) < 0)
                        return fail(reader, -EBADMSG, "%s record at offset 0x%" PRIx64 " (size 0x%" PRIx16
                                    ") is too short for its body (0x0) and sample_id (0x%" PRIx32 ")",
                                    perf_data_record_type_name(rec.type) ?: "?", off, rec.size,
                                    perf_record_trailer_size(a->attr.sample_type));
        }

        /* SAMPLE goes to on_record from handle_sample, once its ids are decoded. */
        if (reader->ops->on_record && rec.type != PERF_RECORD_SAMPLE) {
                k = reader->ops->on_record(reader->userdata, &rec);
                if (k < 0)
                        return k;
        }

        switch (rec.type) {
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
                struct perf_data_mmap m;

                k = perf_record_parse_mmap(&rec, tlen, &m);
                if (k < 0)
                        return body_error(reader, &rec, tlen, k);
                return CALL(reader, on_mmap, &m);
        }
        case PERF_RECORD_LOST:
        case PERF_RECORD_LOST_SAMPLES: {
                struct perf_data_lost l;

                k = perf_record_parse_lost(&rec, tlen, &l);
                if (k < 0)
                        return body_error(reader, &rec, tlen, k);
                if (rec.type == PERF_RECORD_LOST)
                        reader->stats.lost += l.lost;
                else
                        reader->stats.lost_samples += l.lost;
                count_lost(reader, &rec.sid, l.lost);
                return CALL(reader, on_lost, &l);
        }
        case PERF_RECORD_COMM: {
                struct perf_data_comm cm;

                k = perf_record_parse_comm(&rec, tlen, &cm);
                if (k < 0)
                        return body_error(reader, &rec, tlen, k);
                return CALL(reader, on_comm, &cm);
        }
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT: {
                struct perf_data_task t;

                k = perf_record_parse_task(&rec, tlen, &t);
                if (k < 0)
                        return body_error(reader, &rec, tlen, k);
                return rec.type == PERF_RECORD_FORK ? CALL(reader, on_fork, &t) : CALL(reader, on_exit, &t);
        }
        case PERF_RECORD_SAMPLE:
                return handle_sample(reader, &rec);

        case PERF_RECORD_AUX: {
                struct perf_data_aux a;

                k = perf_record_parse_aux(&rec, tlen, &a);
                if (k < 0)
                        return body_error(reader, &rec, tlen, k);
                cs = sid_cpu_stats(reader, &rec.sid);
#define COUNT_FLAG(flag, field)                                 \
                if (a.flags & (flag)) {                         \
                        reader->stats.field++;                       \
                        if (cs)                                 \
                                cs->field++;                    \
                }
                COUNT_FLAG(PERF_AUX_FLAG_TRUNCATED, aux_truncated);
                COUNT_FLAG(PERF_AUX_FLAG_OVERWRITE, aux_overwrite);
                COUNT_FLAG(PERF_AUX_FLAG_PARTIAL, aux_partial);
                COUNT_FLAG(PERF_AUX_FLAG_COLLISION, aux_collision);
#undef COUNT_FLAG
                if (cs)
                        cs->aux_records++;
                return CALL(reader, on_aux, &a);
        }
        case PERF_RECORD_ITRACE_START: {
                struct perf_data_itrace_start is;

                k = perf_record_parse_itrace_start(&rec, tlen, &is);
                if (k < 0)
                        return body_error(reader, &rec, tlen, k);
                return CALL(reader, on_itrace_start, &is);
        }
        case PERF_RECORD_SWITCH:
        case PERF_RECORD_SWITCH_CPU_WIDE: {
                struct perf_data_switch sw;

                k = perf_record_parse_switch(&rec, tlen, &sw);
                if (k < 0)
                        return body_error(reader, &rec, tlen, k);
                return CALL(reader, on_switch, &sw);
        }
        case PERF_RECORD_HEADER_ATTR:
                return handle_header_attr(reader, &rec);

        case PERF_RECORD_HEADER_BUILD_ID:
                return build_ids(reader, off, rec.raw, rec.size);

        case PERF_RECORD_HEADER_FEATURE: {
                struct perf_data_wire_feature w = {};

                k = get_body(reader, &rec, 0, &w, sizeof(w));
                if (k < 0)
                        return k;
                if (w.feat_id >= PERF_DATA_FEAT_BITS)
                        return 0;
                return process_feature(reader, off, (unsigned) w.feat_id, b + sizeof(w),
                                       rec.size - HDR_SIZE - sizeof(w));
        }

        case PERF_RECORD_AUXTRACE_INFO:
                return handle_auxtrace_info(reader, &rec);

        case PERF_RECORD_TIME_CONV: {
                struct perf_data_time_conv tc = { .rec = rec };
                struct perf_data_wire_time_conv w = {};

                if (rec.size < HDR_SIZE + PERF_DATA_TIME_CONV_V1_SIZE)
                        return too_short(reader, &rec, HDR_SIZE + PERF_DATA_TIME_CONV_V1_SIZE);
                /* Older perf stops after time_zero; the rest stays zero then. */
                memcpy(&w, b, MIN(sizeof(w), (size_t) (rec.size - HDR_SIZE)));
                tc.time_shift = w.time_shift;
                tc.time_mult = w.time_mult;
                tc.time_zero = w.time_zero;
                if (rec.size >= HDR_SIZE + sizeof(w)) {
                        tc.has_cycles = true;
                        tc.time_cycles = w.time_cycles;
                        tc.time_mask = w.time_mask;
                        tc.cap_user_time_zero = w.cap_user_time_zero;
                        tc.cap_user_time_short = w.cap_user_time_short;
                }
                return CALL(reader, on_time_conv, &tc);
        }
        case PERF_RECORD_COMPRESSED:
        case PERF_RECORD_COMPRESSED2:
                return fail(reader, -EOPNOTSUPP, "record at offset 0x%" PRIx64 " is %s: compressed perf.data "
                            "(perf record -z) is not supported; record without -z",
                            off, perf_data_record_type_name(rec.type));
        default:
                /* Unknown or uninteresting: skipped by header.size. */
                return 0;
        }
}

/*
 * Stream records from r->pos until the end of the data section (or of a
 * pipe): 0 at the end, 1 when the step's budget ran out, -EAGAIN when a
 * non-blocking input has nothing more now (nothing of an incomplete record
 * is consumed: the next step reads it again from its start), else an error.
 */
static int read_records(struct perf_data_reader *reader) {
        for (;;) {
                uint64_t off = reader->pos;
                uint32_t type, size;
                int k;

                if (off == reader->data_end)
                        return 0;
                if (reader->units_left == 0)
                        return 1;
                k = ensure(reader, HDR_SIZE);
                if (k == -EAGAIN)
                        return k;
                if (k < 0)
                        return fail(reader, k, "read error at offset 0x%" PRIx64, off);
                if (k == 0) {
                        /* A pipe may end between records; a file's data section may not. */
                        if (reader->pipe_mode && buffered(reader) == 0)
                                return 0;
                        return fail(reader, -ENODATA, "record header at offset 0x%" PRIx64
                                    " is cut by the end of the input at 0x%" PRIx64
                                    " (data section ends at 0x%" PRIx64 ")", off, off + buffered(reader),
                                    reader->data_end);
                }
                type = perf_rd32(reader->buf + reader->start);
                size = perf_rd16(reader->buf + reader->start + 6);
                if (size < HDR_SIZE)
                        return fail(reader, -EBADMSG, "record at offset 0x%" PRIx64 " (type %" PRIu32
                                    ") has size 0x%" PRIx32 ", less than its header", off, type, size);
                if (size > reader->data_end - off)
                        return fail(reader, -EBADMSG, "record at offset 0x%" PRIx64 " claims size 0x%" PRIx32
                                    " past end of data at 0x%" PRIx64, off, size, reader->data_end);
                k = ensure(reader, size);
                if (k == -EAGAIN)
                        return k;
                if (k < 0)
                        return fail(reader, k, "read error at offset 0x%" PRIx64, off);
                if (k == 0)
                        return fail(reader, -ENODATA, "record at offset 0x%" PRIx64 " (type %" PRIu32 ", size 0x%"
                                    PRIx32 ") is cut by the end of the input at 0x%" PRIx64,
                                    off, type, size, off + buffered(reader));
                reader->units_left--;

                if (type == PERF_RECORD_AUXTRACE) {
                        struct perf_data_record rec;

                        perf_record_header(reader->buf + reader->start, off, &rec);
                        reader->stats.records_total++;
                        reader->stats.records_by_type[type]++;
                        if (reader->ops->on_record) {
                                k = reader->ops->on_record(reader->userdata, &rec);
                                if (k < 0)
                                        return k;
                        }
                        k = handle_auxtrace(reader, &rec);
                        if (k != 0)
                                return k;
                        continue;
                }

                k = handle_record(reader, reader->buf + reader->start, off);
                if (k < 0)
                        return k;

                if (type == PERF_RECORD_HEADER_TRACING_DATA) {
                        /* {header; u32 size; u32 pad} then `size` bytes of tracing data (util/trace-event.c). */
                        struct perf_data_wire_tracing_data w;
                        struct perf_data_record rec;
                        uint64_t len;

                        perf_record_header(reader->buf + reader->start, off, &rec);
                        k = get_body(reader, &rec, 0, &w, sizeof(w));
                        if (k < 0)
                                return k;
                        len = w.size;
                        k = check_payload(reader, &rec, len);
                        if (k < 0)
                                return k;
                        consume(reader, size);
                        k = payload_begin(reader, NULL, "TRACING_DATA", off, len);
                        if (k != 0)
                                return k;
                        continue;
                }
                consume(reader, size);
        }
}

static int read_file_header(struct perf_data_reader *reader, struct perf_data_file_header *h) {
        uint64_t size;
        int k;

        /* Older headers (without adds_features) are not worth supporting. */
        k = src_read_full(reader, 0, h, sizeof(*h));
        if (k == -ENODATA)
                return fail(reader, k, "perf.data header (0x%x bytes) is cut by the end of the input at 0x%" PRIx64,
                            PERF_DATA_FILE_HEADER_SIZE, reader->file_size);
        if (k < 0)
                return fail(reader, k, "cannot read the perf.data header");
        size = h->size;
        if (size < PERF_DATA_FILE_HEADER_SIZE)
                return fail(reader, -EBADMSG, "perf.data header at offset 0 claims size 0x%" PRIx64
                            ", expected 0x%x", size, PERF_DATA_FILE_HEADER_SIZE);
        if (h->data.offset > UINT64_MAX - h->data.size)
                return fail(reader, -EBADMSG, "data section at offset 0x%" PRIx64 " size 0x%" PRIx64 " overflows",
                            h->data.offset, h->data.size);
        return 0;
}

static int read_file_attrs(struct perf_data_reader *reader, const struct perf_data_file_header *h) {
        uint64_t nr, attr_len;
        int k;

        if (h->attrs.size == 0)
                return 0;
        if (h->attr_size < sizeof(struct perf_data_file_section) + PERF_ATTR_SIZE_VER0 ||
            h->attr_size > sizeof(struct perf_data_file_section) + PERF_DATA_ATTR_MAX)
                return fail(reader, -EBADMSG, "perf.data header at offset 0x10: attr_size 0x%" PRIx64
                            " is implausible", h->attr_size);
        if (h->attrs.size % h->attr_size != 0)
                return fail(reader, -EBADMSG, "attrs section at offset 0x%" PRIx64 ": size 0x%" PRIx64
                            " is not a multiple of attr_size 0x%" PRIx64, h->attrs.offset, h->attrs.size, h->attr_size);
        if (h->attrs.offset > reader->file_size || h->attrs.size > reader->file_size - h->attrs.offset)
                return fail(reader, -ENODATA, "attrs section at offset 0x%" PRIx64 " size 0x%" PRIx64
                            " is past the end of the input at 0x%" PRIx64, h->attrs.offset, h->attrs.size,
                            reader->file_size);
        nr = h->attrs.size / h->attr_size;
        attr_len = h->attr_size - sizeof(struct perf_data_file_section);

        for (uint64_t i = 0; i < nr; i++) {
                uint64_t where = h->attrs.offset + i * h->attr_size;
                struct perf_data_file_section ids;
                _cleanup_free_ uint64_t *idv = NULL;

                k = src_read_full(reader, where, reader->buf, (size_t) h->attr_size);
                if (k < 0)
                        return fail(reader, k, "cannot read attr at offset 0x%" PRIx64, where);
                memcpy(&ids, reader->buf + attr_len, sizeof(ids));
                if (ids.size % 8 != 0 || ids.offset > reader->file_size || ids.size > reader->file_size - ids.offset)
                        return fail(reader, ids.size % 8 ? -EBADMSG : -ENODATA, "ids of attr at offset 0x%" PRIx64
                                    " (offset 0x%" PRIx64 " size 0x%" PRIx64 ") are misaligned or past the end "
                                    "of the input at 0x%" PRIx64, where, ids.offset, ids.size, reader->file_size);
                idv = xcalloc(MAX((size_t) (ids.size / 8), (size_t) 1), sizeof(uint64_t));
                k = src_read_full(reader, ids.offset, idv, (size_t) ids.size);
                if (k < 0)
                        return fail(reader, k, "cannot read ids at offset 0x%" PRIx64, ids.offset);
                k = add_attr(reader, where, reader->buf, (size_t) attr_len, TAKE_PTR(idv), (size_t) (ids.size / 8));
                if (k < 0)
                        return k;
                k = CALL(reader, on_attr, &reader->attrs[reader->nr_attrs - 1]);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int check_magic(struct perf_data_reader *reader, uint64_t magic) {
        if (magic == PERF_DATA_MAGIC2)
                return 0;
        if (magic == PERF_DATA_MAGIC2_SWAPPED)
                return fail(reader, -EPROTONOSUPPORT, "perf.data at offset 0 has opposite-endian magic: "
                            "files from big-endian machines are not supported");
        if (magic == PERF_DATA_MAGIC1)
                return fail(reader, -EPROTONOSUPPORT, "perf.data at offset 0 has the old PERFFILE magic (version 1), "
                            "not supported");
        return fail(reader, -EPROTONOSUPPORT, "not a perf.data: magic 0x%016" PRIx64 " at offset 0", magic);
}

/*
 * The header, and in file mode the attrs and the feature sections: 0 when
 * the records come next, -EAGAIN when a pipe has not sent the 16 header
 * bytes yet (none is consumed then), else an error.
 */
static int read_start(struct perf_data_reader *reader) {
        struct perf_data_file_header h;
        uint64_t magic, size;
        int k;

        /* Both modes start with {magic, header size}; pipes can only be read in order. */
        k = ensure(reader, PERF_DATA_PIPE_HEADER_SIZE);
        if (k == -EAGAIN)
                return k;
        if (k < 0)
                return fail(reader, k, "cannot read the perf.data header");
        if (k == 0) {
                if (buffered(reader) >= sizeof(magic)) {
                        k = check_magic(reader, perf_rd64(reader->buf + reader->start));
                        if (k < 0)
                                return k;
                }
                return fail(reader, -ENODATA, "perf.data header is cut by the end of the input at 0x%zx",
                            buffered(reader));
        }
        magic = perf_rd64(reader->buf + reader->start);
        size = perf_rd64(reader->buf + reader->start + 8);
        k = check_magic(reader, magic);
        if (k < 0)
                return k;

        if (size == PERF_DATA_PIPE_HEADER_SIZE) {
                /* Pipe mode [perf.data-file-format.txt "Pipe-mode data"]: records follow. */
                reader->pipe_mode = true;
                consume(reader, PERF_DATA_PIPE_HEADER_SIZE);
                return 0;
        }

        /* File mode: a seekable input, which never has to wait. */
        if (!reader->seekable)
                return fail(reader, -ESPIPE, "file-mode perf.data (header size 0x%" PRIx64 ") on an unseekable "
                            "input; pipe it from `perf record -o -` or give a file", size);
        k = read_file_header(reader, &h);
        if (k < 0)
                return k;
        k = read_file_attrs(reader, &h);
        if (k < 0)
                return k;

        /*
         * Features sit after the data but describe the machine (CPUID, number
         * of CPUs) the records need, so read them first. A truncated file
         * loses them; then the records before the damage still go out and
         * the feature error is returned at the end.
         */
        k = read_features(reader, &h);
        /* No message: out of memory or a callback said stop; that ends the run now. */
        if (k < 0 && reader->err[0] == '\0')
                return k;
        if (k < 0) {
                reader->deferred = k;
                memcpy(reader->deferred_msg, reader->err, sizeof(reader->deferred_msg));
                reader->err[0] = '\0';
        }

        reader->start = reader->end = 0;
        reader->pos = h.data.offset;
        reader->data_end = h.data.offset + h.data.size;
        return 0;
}

int perf_data_reader_begin(struct perf_data_reader *reader, const struct perf_data_ops *ops, void *userdata) {
        static const struct perf_data_ops no_ops = {};
        int k;

        if (!reader)
                return -EINVAL;
        if (reader->ran)
                return -EALREADY;
        k = alloc_buf(reader);
        if (k < 0)
                return k;
        reader->ran = true;
        reader->ops = ops ?: &no_ops;
        reader->userdata = userdata;
        reader->err[0] = '\0';
        reader->state = READER_START;
        return 0;
}

int perf_data_reader_step(struct perf_data_reader *reader, size_t budget) {
        int k = 0;

        if (!reader || !reader->ran)
                return -EINVAL;
        if (reader->state == READER_END)
                return reader->result;
        reader->units_left = MAX(budget, (size_t) 1);

        switch (reader->state) {
        case READER_START:
                k = read_start(reader);
                if (k < 0)
                        break;
                reader->state = READER_RECORDS;
                k = read_records(reader);
                break;
        case READER_RECORDS:
                k = read_records(reader);
                break;
        case READER_PAYLOAD:
                k = payload_continue(reader);
                if (k == 0)
                        k = read_records(reader);
                break;
        case READER_END:
                break;
        }
        if (k == 1 || k == -EAGAIN)
                return k;
        if (k == 0 && reader->deferred < 0) {
                memcpy(reader->err, reader->deferred_msg, sizeof(reader->err));
                k = reader->deferred;
        }
        reader->state = READER_END;
        reader->result = k;
        return k;
}

bool perf_data_reader_done(const struct perf_data_reader *reader) {
        return reader && reader->ran && reader->state == READER_END;
}

int perf_data_reader_run(struct perf_data_reader *reader, const struct perf_data_ops *ops, void *userdata) {
        int k;

        k = perf_data_reader_begin(reader, ops, userdata);
        if (k < 0)
                return k;
        reader->blocking = true;
        do
                k = perf_data_reader_step(reader, SIZE_MAX);
        while (k == 1);
        return k;
}
