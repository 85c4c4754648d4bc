/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "perf-record.h"

#include <errno.h>

#include "macro.h"

/* sizeof(struct perf_branch_entry) [perf_event_open(2)]. */
#define PERF_RECORD_BRANCH_ENTRY_SIZE 24

/* The wire structs must have the kernel's sizes [perf_event_open(2)]. */
_Static_assert(sizeof(struct perf_data_wire_mmap) == 32, "mmap body");
_Static_assert(sizeof(struct perf_data_wire_mmap2) == 64, "mmap2 body");
_Static_assert(sizeof(struct perf_data_wire_task) == 24, "fork/exit body");

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "perf-record.c assumes a little-endian host"
#endif

/* Spelled as perf's perf_event__name() does, so our dumps compare with `perf report -D`. */
static const char *const record_names[] = {
        [PERF_RECORD_MMAP] = "MMAP",
        [PERF_RECORD_LOST] = "LOST",
        [PERF_RECORD_COMM] = "COMM",
        [PERF_RECORD_EXIT] = "EXIT",
        [PERF_RECORD_THROTTLE] = "THROTTLE",
        [PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
        [PERF_RECORD_FORK] = "FORK",
        [PERF_RECORD_READ] = "READ",
        [PERF_RECORD_SAMPLE] = "SAMPLE",
        [PERF_RECORD_MMAP2] = "MMAP2",
        [PERF_RECORD_AUX] = "AUX",
        [PERF_RECORD_ITRACE_START] = "ITRACE_START",
        [PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
        [PERF_RECORD_SWITCH] = "SWITCH",
        [PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
        [PERF_RECORD_NAMESPACES] = "NAMESPACES",
        [PERF_RECORD_KSYMBOL] = "KSYMBOL",
        [PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
        [PERF_RECORD_CGROUP] = "CGROUP",
        [PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
        [PERF_RECORD_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
        [PERF_RECORD_HEADER_ATTR] = "ATTR",
        [PERF_RECORD_HEADER_EVENT_TYPE] = "EVENT_TYPE",
        [PERF_RECORD_HEADER_TRACING_DATA] = "TRACING_DATA",
        [PERF_RECORD_HEADER_BUILD_ID] = "BUILD_ID",
        [PERF_RECORD_FINISHED_ROUND] = "FINISHED_ROUND",
        [PERF_RECORD_ID_INDEX] = "ID_INDEX",
        [PERF_RECORD_AUXTRACE_INFO] = "AUXTRACE_INFO",
        [PERF_RECORD_AUXTRACE] = "AUXTRACE",
        [PERF_RECORD_AUXTRACE_ERROR] = "AUXTRACE_ERROR",
        [PERF_RECORD_THREAD_MAP] = "THREAD_MAP",
        [PERF_RECORD_CPU_MAP] = "CPU_MAP",
        [PERF_RECORD_STAT_CONFIG] = "STAT_CONFIG",
        [PERF_RECORD_STAT] = "STAT",
        [PERF_RECORD_STAT_ROUND] = "STAT_ROUND",
        [PERF_RECORD_EVENT_UPDATE] = "EVENT_UPDATE",
        [PERF_RECORD_TIME_CONV] = "TIME_CONV",
        [PERF_RECORD_HEADER_FEATURE] = "FEATURE",
        [PERF_RECORD_COMPRESSED] = "COMPRESSED",
        [PERF_RECORD_FINISHED_INIT] = "FINISHED_INIT",
        [PERF_RECORD_COMPRESSED2] = "COMPRESSED2",
};

const char *perf_data_record_type_name(uint32_t type) {
        if (type >= ELEMENTSOF(record_names))
                return NULL;
        return record_names[type];
}

void perf_record_header(const uint8_t *p, uint64_t offset, struct perf_data_record *ret) {
        *ret = (struct perf_data_record) {
                .file_offset = offset,
                .type = perf_rd32(p),
                .misc = perf_rd16(p + 4),
                .size = perf_rd16(p + 6),
                .raw = p,
        };
}

/* The sample_id trailer fields in file order [perf_event_open(2) "struct sample_id"]. */
static const uint64_t trailer_order[] = {
        PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ID, PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
        PERF_SAMPLE_IDENTIFIER,
};

/* One u64 word of sample identity, shared by SAMPLE bodies and sample_id trailers. */
static void sid_field(struct perf_data_sample_id *sid, uint64_t bit, const uint8_t *p) {
        switch (bit) {
        case PERF_SAMPLE_TID:           /* {u32 pid; u32 tid} */
                sid->pid = perf_rd32(p);
                sid->tid = perf_rd32(p + sizeof(uint32_t));
                sid->valid |= PERF_DATA_ID_TID;
                break;
        case PERF_SAMPLE_TIME:
                sid->time = perf_rd64(p);
                sid->valid |= PERF_DATA_ID_TIME;
                break;
        case PERF_SAMPLE_ID:
        case PERF_SAMPLE_IDENTIFIER:
                sid->id = perf_rd64(p);
                sid->valid |= PERF_DATA_ID_ID;
                break;
        case PERF_SAMPLE_STREAM_ID:
                sid->stream_id = perf_rd64(p);
                sid->valid |= PERF_DATA_ID_STREAM_ID;
                break;
        case PERF_SAMPLE_CPU:           /* {u32 cpu; u32 res} */
                sid->cpu = perf_rd32(p);
                sid->valid |= PERF_DATA_ID_CPU;
                break;
        default:
                break;
        }
}

uint32_t perf_record_trailer_size(uint64_t st) {
        return 8 * ( !!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ID) +
                !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) +
                !!(st & PERF_SAMPLE_IDENTIFIER));
}

/*
 * The sample_id trailer [perf_event_open(2) "struct sample_id"]: {pid,tid}
 * time id stream_id {cpu,res} identifier, each present when its sample_type
 * bit is, at the end of the record.
 */
int perf_record_parse_trailer(const struct perf_event_attr *attr, struct perf_data_record *rec, uint32_t fixed,
                              uint32_t *ret_len) {
        const uint8_t *p;
        uint64_t st;
        uint32_t len;

        if (!attr || !attr->sample_id_all) {
                *ret_len = 0;
                return 0;
        }
        st = attr->sample_type;
        len = perf_record_trailer_size(st);
        if ((uint64_t) PERF_RECORD_HEADER_SIZE + fixed + len > rec->size)
                return -EBADMSG;
        p = rec->raw + rec->size - len;
        for (size_t i = 0; i < ELEMENTSOF(trailer_order); i++)
                if (st & trailer_order[i]) {
                        sid_field(&rec->sid, trailer_order[i], p);
                        p += 8;
                }
        *ret_len = len;
        return 0;
}

static int read_bytes(const uint8_t **p, size_t *left, size_t n, const uint8_t **ret) {
        if (*left < n)
                return -EBADMSG;
        *ret = *p;
        *p += n;
        *left -= n;
        return 0;
}

static int read_u64(const uint8_t **p, size_t *left, uint64_t *ret) {
        if (*left < 8)
                return -EBADMSG;
        *ret = perf_rd64(*p);
        *p += 8;
        *left -= 8;
        return 0;
}

/* struct read_format size for attr.read_format [perf_event_open(2)]. */
static int skip_read_format(uint64_t fmt, const uint8_t **p, size_t *left) {
        uint64_t per = 1 + !!(fmt & PERF_FORMAT_ID) + !!(fmt & PERF_FORMAT_LOST);
        uint64_t times = !!(fmt & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(fmt & PERF_FORMAT_TOTAL_TIME_RUNNING);
        uint64_t words, nr;

        if (fmt & PERF_FORMAT_GROUP) {
                if (read_u64(p, left, &nr) < 0)
                        return -EBADMSG;
                if (nr > *left / 8 / per)
                        return -EBADMSG;
                words = times + nr * per;
        } else
                words = times + per;
        if (words > *left / 8)
                return -EBADMSG;
        *p += words * 8;
        *left -= words * 8;
        return 0;
}

/* {u64 abi; u64 regs[weight(mask)]} [perf_event_open(2) PERF_SAMPLE_REGS_USER/INTR]. */
static int read_regs(uint64_t mask, const uint8_t **p, size_t *left, uint64_t *ret_abi, uint64_t *ret_nr,
                     const uint8_t **ret_regs) {
        uint64_t abi, n = (uint64_t) __builtin_popcountll(mask);
        const uint8_t *regs = NULL;

        if (read_u64(p, left, &abi) < 0)
                return -EBADMSG;
        /* abi == PERF_SAMPLE_REGS_ABI_NONE: no registers follow (perf_output_sample_regs() is skipped). */
        if (abi == PERF_SAMPLE_REGS_ABI_NONE)
                n = 0;
        else if (read_bytes(p, left, (size_t) n * 8, &regs) < 0)
                return -EBADMSG;
        *ret_abi = abi;
        *ret_nr = n;
        *ret_regs = regs;
        return 0;
}

/*
 * SAMPLE body in perf_event_open(2) order. Decodes the fields the daemon
 * uses; AUX and any bit newer than WEIGHT_STRUCT are left raw in `rest`.
 */
int perf_record_parse_sample(const struct perf_event_attr *attr, const struct perf_data_record *rec,
                             struct perf_data_sample *s) {
        const uint64_t st = attr->sample_type;
        const uint8_t *p = rec->raw + PERF_RECORD_HEADER_SIZE, *dummy;
        size_t left = rec->size - PERF_RECORD_HEADER_SIZE;
        uint64_t v;

        *s = (struct perf_data_sample) { .rec = *rec };

#define U64(dst) do { if (read_u64(&p, &left, &(dst)) < 0) return -EBADMSG; } while (0)
#define SID(bit)                                                        \
        do {                                                            \
                if (st & (bit)) {                                       \
                        if (left < 8)                                   \
                                return -EBADMSG;                        \
                        sid_field(&s->rec.sid, (bit), p);               \
                        p += 8;                                         \
                        left -= 8;                                      \
                }                                                       \
        } while (0)
        SID(PERF_SAMPLE_IDENTIFIER);
        if (st & PERF_SAMPLE_IP)
                U64(s->ip);
        SID(PERF_SAMPLE_TID);
        SID(PERF_SAMPLE_TIME);
        if (st & PERF_SAMPLE_ADDR)
                U64(s->addr);
        SID(PERF_SAMPLE_ID);
        SID(PERF_SAMPLE_STREAM_ID);
        SID(PERF_SAMPLE_CPU);
        if (st & PERF_SAMPLE_PERIOD)
                U64(s->period);
        if ((st & PERF_SAMPLE_READ) && skip_read_format(attr->read_format, &p, &left) < 0)
                return -EBADMSG;
        if (st & PERF_SAMPLE_CALLCHAIN) {
                U64(s->nr_callchain);
                if (s->nr_callchain > left / 8)
                        return -EBADMSG;
                s->callchain = p;
                p += s->nr_callchain * 8;
                left -= s->nr_callchain * 8;
        }
        if (st & PERF_SAMPLE_RAW) {
                /* {u32 size; char data[size]}, size counting padding to a u64 boundary. */
                uint32_t n;

                if (left < 4)
                        return -EBADMSG;
                n = perf_rd32(p);
                if (read_bytes(&p, &left, (size_t) n + 4, &dummy) < 0)
                        return -EBADMSG;
        }
        if (st & PERF_SAMPLE_BRANCH_STACK) {
                uint64_t hw_idx;

                U64(v);
                if (attr->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
                        U64(hw_idx);
                if (v > left / PERF_RECORD_BRANCH_ENTRY_SIZE)
                        return -EBADMSG;
                p += v * PERF_RECORD_BRANCH_ENTRY_SIZE;
                left -= v * PERF_RECORD_BRANCH_ENTRY_SIZE;
        }
        if ((st & PERF_SAMPLE_REGS_USER) &&
            read_regs(attr->sample_regs_user, &p, &left, &s->regs_user_abi, &s->nr_regs_user, &s->regs_user) < 0)
                return -EBADMSG;
        if (st & PERF_SAMPLE_STACK_USER) {
                /*
                 * {u64 size; char data[size]; u64 dyn_size} with dyn_size only
                 * when size != 0 (kernel/events/core.c perf_output_sample_ustack()).
                 * A dyn_size past size is no copy the kernel made: perf's
                 * evsel__parse_sample() refuses it too.
                 */
                U64(s->stack_user_size);
                if (s->stack_user_size > 0) {
                        if (s->stack_user_size > left ||
                            read_bytes(&p, &left, (size_t) s->stack_user_size, &s->stack_user) < 0)
                                return -EBADMSG;
                        U64(s->stack_user_dyn_size);
                        if (s->stack_user_dyn_size > s->stack_user_size)
                                return -EBADMSG;
                }
        }
        if (st & PERF_SAMPLE_WEIGHT_TYPE) {
                U64(v);
                if (st & PERF_SAMPLE_WEIGHT_STRUCT) {
                        /* union perf_sample_weight: {u32 var1_dw; u16 var2_w; u16 var3_w} */
                        s->weight = (uint32_t) v;
                        s->weight_var2 = (uint16_t) (v >> 32);
                        s->weight_var3 = (uint16_t) (v >> 48);
                } else
                        s->weight = v;
        }
        if (st & PERF_SAMPLE_DATA_SRC)
                U64(s->data_src);
        if (st & PERF_SAMPLE_TRANSACTION)
                U64(s->transaction);
        if (st & PERF_SAMPLE_REGS_INTR) {
                const uint8_t *regs;
                uint64_t abi, nr;

                if (read_regs(attr->sample_regs_intr, &p, &left, &abi, &nr, &regs) < 0)
                        return -EBADMSG;
        }
        if (st & PERF_SAMPLE_PHYS_ADDR)
                U64(s->phys_addr);
        if (st & PERF_SAMPLE_CGROUP)
                U64(s->cgroup);
        if (st & PERF_SAMPLE_DATA_PAGE_SIZE)
                U64(s->data_page_size);
        if (st & PERF_SAMPLE_CODE_PAGE_SIZE)
                U64(s->code_page_size);
#undef SID
#undef U64
        s->rest_len = 0;
        s->fields = st & ~(uint64_t) (PERF_SAMPLE_AUX | ~(uint64_t) (PERF_SAMPLE_MAX - 1));
        if (left > 0) {
                s->rest = p;
                s->rest_len = left;
        }
        return 0;
}


uint32_t perf_record_fixed_size(uint32_t type) {
        size_t body;

        switch (type) {
        case PERF_RECORD_MMAP:
                body = sizeof(struct perf_data_wire_mmap);
                break;
        case PERF_RECORD_MMAP2:
                body = sizeof(struct perf_data_wire_mmap2);
                break;
        case PERF_RECORD_COMM:
                body = sizeof(struct perf_data_wire_comm);
                break;
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                body = sizeof(struct perf_data_wire_task);
                break;
        case PERF_RECORD_LOST:
                body = sizeof(struct perf_data_wire_lost);
                break;
        case PERF_RECORD_LOST_SAMPLES:
                body = sizeof(struct perf_data_wire_lost_samples);
                break;
        case PERF_RECORD_AUX:
                body = sizeof(struct perf_data_wire_aux);
                break;
        case PERF_RECORD_ITRACE_START:
                body = sizeof(struct perf_data_wire_itrace_start);
                break;
        case PERF_RECORD_SWITCH:
                body = 0;
                break;
        case PERF_RECORD_SWITCH_CPU_WIDE:
                body = sizeof(struct perf_data_wire_switch_cpu_wide);
                break;
        case PERF_RECORD_CGROUP:
                body = sizeof(struct perf_data_wire_cgroup);
                break;
        default:
                return 0;
        }
        return PERF_RECORD_HEADER_SIZE + (uint32_t) body;
}

int perf_record_parse_ring(const struct perf_event_attr *attr, const uint8_t *raw, uint64_t offset,
                           struct perf_data_record *ret, uint32_t *ret_tlen) {
        uint32_t fixed;

        perf_record_header(raw, offset, ret);
        fixed = perf_record_fixed_size(ret->type);
        if (fixed == 0)
                return -EOPNOTSUPP;
        return perf_record_parse_trailer(attr, ret, fixed - PERF_RECORD_HEADER_SIZE, ret_tlen);
}

/* Copy a record's fixed body, checked against header.size less the sample_id trailer. */
static int get_body(const struct perf_data_record *rec, uint32_t tlen, void *dst, size_t len) {
        if (PERF_RECORD_HEADER_SIZE + len + tlen > rec->size)
                return -EBADMSG;
        memcpy(dst, rec->raw + PERF_RECORD_HEADER_SIZE, len);
        return 0;
}

/* A NUL-terminated string in rec->raw[from, to); NULL when it is not terminated. */
static const char *rec_string(const struct perf_data_record *rec, uint32_t from, uint32_t to) {
        if (from >= to || !memchr(rec->raw + from, 0, to - from))
                return NULL;
        return (const char *) rec->raw + from;
}

int perf_record_parse_mmap(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_mmap *ret) {
        bool v2 = rec->type == PERF_RECORD_MMAP2;
        uint32_t fixed = v2 ? sizeof(struct perf_data_wire_mmap2) : sizeof(struct perf_data_wire_mmap);
        struct perf_data_mmap m = { .rec = *rec };

        if (PERF_RECORD_HEADER_SIZE + fixed + tlen > rec->size)
                return -EBADMSG;
        if (v2) {
                struct perf_data_wire_mmap2 w;

                (void) get_body(rec, tlen, &w, sizeof(w));
                m.pid = w.pid;
                m.tid = w.tid;
                m.addr = w.addr;
                m.len = w.len;
                m.pgoff = w.pgoff;
                /* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID carries a build id
                 * instead of maj/min/ino/ino_generation [perf_event_open(2)]. */
                if (rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
                        m.has_build_id = true;
                        m.build_id_size = MIN(w.build_id_size, (uint8_t) PERF_DATA_BUILD_ID_MAX);
                        memcpy(m.build_id, w.build_id, sizeof(m.build_id));
                } else {
                        m.maj = w.maj;
                        m.min = w.min;
                        m.ino = w.ino;
                        m.ino_generation = w.ino_generation;
                }
                m.prot = w.prot;
                m.flags = w.flags;
        } else {
                struct perf_data_wire_mmap w;

                (void) get_body(rec, tlen, &w, sizeof(w));
                m.pid = w.pid;
                m.tid = w.tid;
                m.addr = w.addr;
                m.len = w.len;
                m.pgoff = w.pgoff;
        }
        m.filename = rec_string(rec, PERF_RECORD_HEADER_SIZE + fixed, rec->size - tlen);
        if (!m.filename)
                return -EILSEQ;
        *ret = m;
        return 0;
}

int perf_record_parse_comm(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_comm *ret) {
        struct perf_data_comm c = { .rec = *rec };
        struct perf_data_wire_comm w;

        if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                return -EBADMSG;
        c.pid = w.pid;
        c.tid = w.tid;
        c.exec = rec->misc & PERF_RECORD_MISC_COMM_EXEC;
        c.comm = rec_string(rec, PERF_RECORD_HEADER_SIZE + sizeof(w), rec->size - tlen);
        if (!c.comm)
                return -EILSEQ;
        *ret = c;
        return 0;
}

int perf_record_parse_task(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_task *ret) {
        struct perf_data_wire_task w;

        if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                return -EBADMSG;
        *ret = (struct perf_data_task) {
                .rec = *rec,
                .pid = w.pid,
                .ppid = w.ppid,
                .tid = w.tid,
                .ptid = w.ptid,
                .time = w.time,
        };
        return 0;
}

int perf_record_parse_lost(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_lost *ret) {
        struct perf_data_lost l = { .rec = *rec };

        if (rec->type == PERF_RECORD_LOST) {
                struct perf_data_wire_lost w;

                if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                        return -EBADMSG;
                l.id = w.id;
                l.lost = w.lost;
        } else {
                struct perf_data_wire_lost_samples w;

                if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                        return -EBADMSG;
                l.lost = w.lost;
        }
        *ret = l;
        return 0;
}

int perf_record_parse_aux(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_aux *ret) {
        struct perf_data_wire_aux w;

        if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                return -EBADMSG;
        *ret = (struct perf_data_aux) {
                .rec = *rec,
                .aux_offset = w.aux_offset,
                .aux_size = w.aux_size,
                .flags = w.flags,
        };
        return 0;
}

int perf_record_parse_itrace_start(const struct perf_data_record *rec, uint32_t tlen,
                                   struct perf_data_itrace_start *ret) {
        struct perf_data_wire_itrace_start w;

        if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                return -EBADMSG;
        *ret = (struct perf_data_itrace_start) { .rec = *rec, .pid = w.pid, .tid = w.tid };
        return 0;
}

int perf_record_parse_cgroup(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_cgroup *ret) {
        struct perf_data_cgroup c = { .rec = *rec };
        struct perf_data_wire_cgroup w;

        if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                return -EBADMSG;
        c.id = w.id;
        c.path = rec_string(rec, PERF_RECORD_HEADER_SIZE + sizeof(w), rec->size - tlen);
        if (!c.path)
                return -EILSEQ;
        *ret = c;
        return 0;
}

int perf_record_parse_switch(const struct perf_data_record *rec, uint32_t tlen, struct perf_data_switch *ret) {
        struct perf_data_switch sw = {
                .rec = *rec,
                .out = rec->misc & PERF_RECORD_MISC_SWITCH_OUT,
                .preempt = rec->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
        };

        if (rec->type == PERF_RECORD_SWITCH_CPU_WIDE) {
                struct perf_data_wire_switch_cpu_wide w;

                if (get_body(rec, tlen, &w, sizeof(w)) < 0)
                        return -EBADMSG;
                sw.next_prev_pid = w.next_prev_pid;
                sw.next_prev_tid = w.next_prev_tid;
        }
        *ret = sw;
        return 0;
}
