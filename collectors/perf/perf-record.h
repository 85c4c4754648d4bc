/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * perf_event records as the kernel writes them into a data ring and perf
 * copies them into a perf.data: the wire structs of the record bodies, the
 * sample_id trailer, and PERF_RECORD_SAMPLE bodies, parsed over (attr,
 * bytes) with no reader around them. The perf.data container (perf-data.c),
 * the live AUX rings (aux-ring.c) and the samplers all parse records here.
 *
 * Sources: perf_event_open(2) "PERF_RECORD_*" and "sample_id_all",
 * include/uapi/linux/perf_event.h, tools/lib/perf/include/perf/event.h.
 * Little-endian only (perf-data.h says why).
 *
 * The types keep the perf_data_ prefix they had when the container was their
 * only reader, so that its consumers did not change.
 *
 * Parsers return 0, -EBADMSG when the record is too short for its fields
 * (perf_record_fixed_size() says how much they need), or -EILSEQ when a
 * string in it is not NUL-terminated. They never read outside
 * rec->raw[0, rec->size).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/perf_event.h>

struct perf_data_attr;

/* Unaligned little-endian loads out of a record. */
static inline uint16_t perf_rd16(const uint8_t *p) {
        uint16_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

static inline uint32_t perf_rd32(const uint8_t *p) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

static inline uint64_t perf_rd64(const uint8_t *p) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

#define PERF_RECORD_HEADER_SIZE ((uint32_t) sizeof(struct perf_event_header))

/*
 * Whether a PERF_SAMPLE_CALLCHAIN entry is a context marker
 * (PERF_CONTEXT_KERNEL, _USER, _GUEST...: the top 4095 values of a u64,
 * enum perf_callchain_context) rather than an address.
 */
static inline bool perf_callchain_is_context(uint64_t v) {
        return v >= (uint64_t) PERF_CONTEXT_MAX;
}

/*
 * Record types perf itself synthesizes (user records, never from the
 * kernel): tools/lib/perf/include/perf/event.h `enum perf_user_event_type`,
 * listed in perf.data-file-format.txt. The kernel ones (PERF_RECORD_MMAP ...
 * PERF_RECORD_AUX_OUTPUT_HW_ID) come from <linux/perf_event.h>.
 */
enum {
        PERF_RECORD_USER_TYPE_START     = 64,
        PERF_RECORD_HEADER_ATTR         = 64,
        PERF_RECORD_HEADER_EVENT_TYPE   = 65,
        PERF_RECORD_HEADER_TRACING_DATA = 66,
        PERF_RECORD_HEADER_BUILD_ID     = 67,
        PERF_RECORD_FINISHED_ROUND      = 68,
        PERF_RECORD_ID_INDEX            = 69,
        PERF_RECORD_AUXTRACE_INFO       = 70,
        PERF_RECORD_AUXTRACE            = 71,
        PERF_RECORD_AUXTRACE_ERROR      = 72,
        PERF_RECORD_THREAD_MAP          = 73,
        PERF_RECORD_CPU_MAP             = 74,
        PERF_RECORD_STAT_CONFIG         = 75,
        PERF_RECORD_STAT                = 76,
        PERF_RECORD_STAT_ROUND          = 77,
        PERF_RECORD_EVENT_UPDATE        = 78,
        PERF_RECORD_TIME_CONV           = 79,
        PERF_RECORD_HEADER_FEATURE      = 80,
        PERF_RECORD_COMPRESSED          = 81,
        PERF_RECORD_FINISHED_INIT       = 82,
        PERF_RECORD_COMPRESSED2         = 83,
};


/*
 * Record bodies as written after struct perf_event_header [perf_event_open(2)
 * "PERF_RECORD_*", tools/lib/perf/include/perf/event.h]. Every field sits at
 * its natural alignment, so these structs have the on-disk layout; the
 * reader memcpy()s them out of its (unaligned) buffer. Variable parts
 * (strings, the sample_id trailer, payloads) follow and are not included.
 */
struct perf_data_wire_mmap {            /* + char filename[] */
        uint32_t pid, tid;
        uint64_t addr, len, pgoff;
};

#define PERF_DATA_BUILD_ID_MAX  20
struct perf_data_wire_mmap2 {           /* + char filename[] */
        uint32_t pid, tid;
        uint64_t addr, len, pgoff;
        union {
                struct {
                        uint32_t maj, min;
                        uint64_t ino, ino_generation;
                };
                struct {                /* PERF_RECORD_MISC_MMAP_BUILD_ID */
                        uint8_t build_id_size;
                        uint8_t reserved_1;
                        uint16_t reserved_2;
                        uint8_t build_id[PERF_DATA_BUILD_ID_MAX];
                };
        };
        uint32_t prot, flags;
};

struct perf_data_wire_comm {            /* + char comm[] */
        uint32_t pid, tid;
};

struct perf_data_wire_task {            /* FORK, EXIT */
        uint32_t pid, ppid, tid, ptid;
        uint64_t time;
};

struct perf_data_wire_lost {
        uint64_t id, lost;
};

struct perf_data_wire_lost_samples {
        uint64_t lost;
};

struct perf_data_wire_aux {
        uint64_t aux_offset, aux_size, flags;
};

struct perf_data_wire_itrace_start {
        uint32_t pid, tid;
};

struct perf_data_wire_switch_cpu_wide {
        uint32_t next_prev_pid, next_prev_tid;
};

struct perf_data_wire_cgroup {          /* + char path[] */
        uint64_t id;
};


/* Which sample_id fields a record carried (bits of perf_data_sample_id.valid). */
enum {
        PERF_DATA_ID_TID        = 1 << 0,
        PERF_DATA_ID_TIME       = 1 << 1,
        PERF_DATA_ID_ID         = 1 << 2,
        PERF_DATA_ID_STREAM_ID  = 1 << 3,
        PERF_DATA_ID_CPU        = 1 << 4,
};

/*
 * Where and when a record happened: from the sample_id trailer of non-sample
 * records when attr.sample_id_all is set [perf_event_open(2)
 * "sample_id_all"], and from the sample body for SAMPLE.
 */
struct perf_data_sample_id {
        unsigned valid;         /* PERF_DATA_ID_* */
        uint32_t pid, tid;
        uint64_t time;
        uint64_t id;
        uint64_t stream_id;
        uint32_t cpu;
};

/* What every delivered record has in common. */
struct perf_data_record {
        uint64_t file_offset;   /* byte offset of the record in the input */
        uint32_t type;
        uint16_t misc;
        uint16_t size;          /* header.size */
        const uint8_t *raw;     /* the record, header included, size bytes; unaligned */
        struct perf_data_sample_id sid;
};


struct perf_data_aux {
        struct perf_data_record rec;
        uint64_t aux_offset;
        uint64_t aux_size;
        uint64_t flags;                 /* PERF_AUX_FLAG_* */
};

struct perf_data_lost {
        struct perf_data_record rec;    /* type LOST or LOST_SAMPLES */
        uint64_t id;                    /* LOST only */
        uint64_t lost;
};

struct perf_data_comm {
        struct perf_data_record rec;
        uint32_t pid, tid;
        const char *comm;               /* NUL-terminated inside the record */
        bool exec;                      /* PERF_RECORD_MISC_COMM_EXEC */
};

struct perf_data_mmap {
        struct perf_data_record rec;    /* type MMAP or MMAP2 */
        uint32_t pid, tid;
        uint64_t addr, len, pgoff;
        /* MMAP2 only: */
        bool has_build_id;              /* PERF_RECORD_MISC_MMAP_BUILD_ID */
        uint32_t maj, min;
        uint64_t ino, ino_generation;
        uint8_t build_id_size;
        uint8_t build_id[PERF_DATA_BUILD_ID_MAX];
        uint32_t prot, flags;
        const char *filename;           /* NUL-terminated inside the record */
};


struct perf_data_task {
        struct perf_data_record rec;    /* type FORK or EXIT */
        uint32_t pid, ppid, tid, ptid;
        uint64_t time;
};

struct perf_data_switch {
        struct perf_data_record rec;    /* type SWITCH or SWITCH_CPU_WIDE */
        bool out;                       /* PERF_RECORD_MISC_SWITCH_OUT */
        bool preempt;                   /* PERF_RECORD_MISC_SWITCH_OUT_PREEMPT */
        uint32_t next_prev_pid, next_prev_tid; /* CPU_WIDE only */
};

struct perf_data_itrace_start {
        struct perf_data_record rec;
        uint32_t pid, tid;
};

/* PERF_RECORD_CGROUP (attr.cgroup, Linux 5.7+): a cgroup was created; its id and path in the hierarchy. */
struct perf_data_cgroup {
        struct perf_data_record rec;
        uint64_t id;                    /* the cgroup's kernfs id, as PERF_SAMPLE_CGROUP reports it */
        const char *path;               /* NUL-terminated inside the record, "/system.slice/x.service" */
};


/* Sample fields decoded (bits of perf_data_sample.fields): PERF_SAMPLE_* bits. */
struct perf_data_sample {
        struct perf_data_record rec;    /* rec.sid carries tid/time/id/stream_id/cpu */
        const struct perf_data_attr *attr; /* NULL: no attr matched, nothing decoded */
        uint64_t fields;                /* PERF_SAMPLE_* bits actually decoded */
        uint64_t ip;
        uint64_t addr;
        uint64_t period;
        uint64_t nr_callchain;
        const uint8_t *callchain;       /* nr_callchain u64s; unaligned */
        uint64_t weight;                /* WEIGHT, or WEIGHT_STRUCT var1_dw */
        uint16_t weight_var2, weight_var3;
        uint64_t data_src;
        uint64_t transaction;
        uint64_t phys_addr;
        uint64_t cgroup;
        uint64_t data_page_size, code_page_size;
        /*
         * REGS_USER {u64 abi; u64 regs[weight(mask)]}: abi is
         * PERF_SAMPLE_REGS_ABI_* and no registers follow when it is
         * PERF_SAMPLE_REGS_ABI_NONE (a kernel thread); otherwise one value
         * per bit of attr.sample_regs_user, in ascending bit order.
         */
        uint64_t regs_user_abi;
        uint64_t nr_regs_user;
        const uint8_t *regs_user;       /* nr_regs_user u64s; unaligned */
        /*
         * STACK_USER {u64 size; char data[size]; u64 dyn_size}: size is what
         * the kernel reserved (attr.sample_stack_user, less when the record
         * would pass 64 KiB), dyn_size (<= size) what it copied from the
         * user stack pointer up; no data and no dyn_size when size is 0.
         */
        uint64_t stack_user_size;
        uint64_t stack_user_dyn_size;
        const uint8_t *stack_user;      /* stack_user_dyn_size bytes; unaligned */
        /* Bytes not decoded (sample_type bits we do not parse, e.g. AUX), if any. */
        const uint8_t *rest;
        size_t rest_len;
};


/* "AUXTRACE", "SAMPLE"... for a record type; NULL when unknown. */
const char *perf_data_record_type_name(uint32_t type);

/*
 * The header of the record at p (at least PERF_RECORD_HEADER_SIZE bytes,
 * header.size of them readable): type, misc, size and raw set, sid empty.
 * `offset` is where the record sits in its input (file offset, ring position).
 */
void perf_record_header(const uint8_t *p, uint64_t offset, struct perf_data_record *ret);

/* Bytes of the sample_id trailer that sample_type adds to non-sample records. */
uint32_t perf_record_trailer_size(uint64_t sample_type);

/*
 * The sample_id trailer of a non-sample kernel record into rec->sid, when
 * attr (NULL: unknown) has sample_id_all. *ret_len is the trailer's length
 * (0 without one). -EBADMSG when the record cannot hold `fixed` body bytes
 * and the trailer.
 */
int perf_record_parse_trailer(const struct perf_event_attr *attr, struct perf_data_record *rec, uint32_t fixed,
                              uint32_t *ret_len);

/*
 * A PERF_RECORD_SAMPLE body as attr's sample_type and read_format lay it out:
 * ret->rec is a copy of rec with the sample's ids in rec.sid; ret->attr is
 * left NULL (the container sets it). -EBADMSG when the body is too short.
 */
int perf_record_parse_sample(const struct perf_event_attr *attr, const struct perf_data_record *rec,
                             struct perf_data_sample *ret);

/*
 * The least header.size a record of that type needs for its fixed body,
 * header included (trailer not included); PERF_RECORD_HEADER_SIZE for types
 * parsed here without a body, 0 for types not parsed here.
 */
uint32_t perf_record_fixed_size(uint32_t type);

/*
 * A non-sample record a live event's data ring holds (rec[0, header.size)):
 * its header into *ret, at `offset`, and its sample_id trailer, after the
 * fixed body its type has (perf_record_fixed_size()); *ret_tlen is the
 * trailer's length for the typed parsers below. -EOPNOTSUPP for a type not
 * parsed here, -EBADMSG when the record cannot hold its body and trailer.
 */
int perf_record_parse_ring(const struct perf_event_attr *attr, const uint8_t *raw, uint64_t offset,
                           struct perf_data_record *ret, uint32_t *ret_tlen);

/* Typed bodies: rec from perf_record_header(), tlen from perf_record_parse_trailer(). */
int perf_record_parse_mmap(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_mmap *ret);
int perf_record_parse_comm(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_comm *ret);
/* FORK or EXIT. */
int perf_record_parse_task(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_task *ret);
/* LOST or LOST_SAMPLES. */
int perf_record_parse_lost(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_lost *ret);
int perf_record_parse_aux(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_aux *ret);
int perf_record_parse_itrace_start(const struct perf_data_record *rec, uint32_t tlen,
                                   struct perf_data_itrace_start *ret);
int perf_record_parse_cgroup(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_cgroup *ret);
/* SWITCH or SWITCH_CPU_WIDE. */
int perf_record_parse_switch(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_switch *ret);
