/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "perfdata-writer.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "strbuf.h"

#include "spegen-io.h"

/* perf.data-file-format.txt: "PERFILE2" read as a little-endian u64. */
#define PDW_MAGIC                   UINT64_C(0x32454c4946524550)
#define PDW_FILE_HEADER_SIZE        104U
#define PDW_PIPE_HEADER_SIZE        16U
/* perf 6.1's struct perf_event_attr is PERF_ATTR_SIZE_VER7 bytes; a file
 * attr adds the {offset, size} of its id array. */
#define PDW_ATTR_SIZE               PERF_ATTR_SIZE_VER7
#define PDW_FILE_ATTR_SIZE          (PDW_ATTR_SIZE + 16U)
#define PDW_N_ATTRS                 2U
#define PDW_FEAT_BITS               256U
/* Strings in feature sections are padded to NAME_ALIGN (tools/perf/util/
 * header.c do_write_string). */
#define PDW_NAME_ALIGN              64U
#define PDW_EVENT_MAX               UINT16_MAX

/* perf's own record types (tools/lib/perf/include/perf/event.h,
 * enum perf_user_event_type). */
#define PDW_RECORD_HEADER_ATTR      64U
#define PDW_RECORD_HEADER_BUILD_ID  67U
#define PDW_RECORD_FINISHED_ROUND   68U
#define PDW_RECORD_AUXTRACE_INFO    70U
#define PDW_RECORD_AUXTRACE         71U
#define PDW_RECORD_TIME_CONV        79U
#define PDW_RECORD_HEADER_FEATURE   80U
#define PDW_RECORD_FINISHED_INIT    82U

/* enum auxtrace_type: PERF_AUXTRACE_ARM_SPE (tools/perf/util/auxtrace.h). */
#define PDW_AUXTRACE_ARM_SPE        4U
#define PDW_AUXTRACE_RECORD_SIZE    48U

/* Header feature bits (tools/perf/util/header.h, HEADER_*). */
enum {
        FEAT_BUILD_ID      = 2,
        FEAT_HOSTNAME      = 3,
        FEAT_OSRELEASE     = 4,
        FEAT_VERSION       = 5,
        FEAT_ARCH          = 6,
        FEAT_NRCPUS        = 7,
        FEAT_CPUDESC       = 8,
        FEAT_CPUID         = 9,
        FEAT_TOTAL_MEM     = 10,
        FEAT_CMDLINE       = 11,
        FEAT_EVENT_DESC    = 12,
        FEAT_NUMA_TOPOLOGY = 14,
        FEAT_PMU_MAPPINGS  = 16,
        FEAT_AUXTRACE      = 18,
        FEAT_SAMPLE_TIME   = 21,
        FEAT_MEM_TOPOLOGY  = 22,
};

/* Sample ids: one per CPU per attr; perf looks the evsel up by them
 * (PERF_SAMPLE_IDENTIFIER). */
#define PDW_SPE_ID_BASE             1000U
#define PDW_DUMMY_ID_BASE           2000U

/* sample_id_all trailer for IP|TID|TIME|CPU|IDENTIFIER (perf_event_open(2)
 * "sample_id"): pid, tid, time, cpu, res, identifier. */
#define PDW_SAMPLE_ID_SIZE          32U
#define PDW_SPE_SAMPLE_TYPE  (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
                              PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR)
/* x86 mode: what perf c2c record -W -d --phys-data --sample-cpu samples (perf 6.1). */
#define PDW_MEM_SAMPLE_TYPE  (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                              PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_WEIGHT | \
                              PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR)
/* Skylake server encodings (tools/perf/pmu-events/arch/x86/skylakex/memory.json:
 * MEM_TRANS_RETIRED.LOAD_LATENCY_GT_* event 0xcd umask 0x01; cache.json:
 * MEM_INST_RETIRED.ALL_STORES event 0xd0 umask 0x82), as sysfs
 * events/mem-loads and events/mem-stores name them. */
#define PDW_MEM_LOADS_CONFIG        0x1cdU
#define PDW_MEM_STORES_CONFIG       0x82d0U
#define PDW_DUMMY_SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
                               PERF_SAMPLE_IDENTIFIER)

/* struct perf_record_header_build_id (tools/lib/perf/include/perf/
 * event.h): header, pid, build_id[24] (data[20], size, 3 reserved), then
 * the file name. PERF_RECORD_MISC_BUILD_ID_SIZE (1 << 15) says that byte
 * 20 holds the id's size; pid HOST_KERNEL_ID (-1) is the host machine. */
#define PDW_BUILD_ID_HEAD_SIZE      36U
#define PDW_BUILD_ID_MAX            20U
#define PDW_BUILD_ID_FIELD          24U
#define PDW_MISC_BUILD_ID_SIZE      (1U << 15)
#define PDW_HOST_KERNEL_ID          (-1)

#define PDW_VERSION_STRING          "6.1.0-armprofd-spegen"
#define PDW_BUF_SIZE                (1U << 20)
#define PDW_REC_MAX                 4096U

struct index_entry {
        uint64_t offset;
        uint64_t size;
};

struct build_id_entry {
        char *filename;
        uint8_t id[PDW_BUILD_ID_MAX];
        uint8_t size;
};

struct pdw {
        int fd;
        struct pdw_config c;
        char *hostname, *osrelease, *arch, *cpudesc, *cmdline;
        uint8_t *buf;
        size_t len;
        uint64_t pos;            /* file offset of the next byte */
        uint64_t data_offset;
        struct index_entry *index;
        size_t n_index, cap_index;
        struct build_id_entry *build_ids;
        size_t n_build_ids;
        uint64_t first_time, last_time;
        bool finished;
};

/* A small record builder: bytes appended little-endian, as perf writes
 * them on the (little-endian) host. */
struct rec {
        uint8_t b[PDW_REC_MAX];
        size_t n;
};

static void rec_u8(struct rec *r, uint8_t v) {
        r->b[r->n++] = v;
}

static void rec_u16(struct rec *r, uint16_t v) {
        memcpy(r->b + r->n, &v, sizeof(v));
        r->n += sizeof(v);
}

static void rec_u32(struct rec *r, uint32_t v) {
        memcpy(r->b + r->n, &v, sizeof(v));
        r->n += sizeof(v);
}

static void rec_u64(struct rec *r, uint64_t v) {
        memcpy(r->b + r->n, &v, sizeof(v));
        r->n += sizeof(v);
}

static void rec_header(struct rec *r, uint32_t type, uint16_t misc) {
        r->n = 0;
        rec_u32(r, type);
        rec_u16(r, misc);
        rec_u16(r, 0); /* size, set by rec_done() */
}

/* NUL-terminated string padded with NULs to 8 bytes (COMM, MMAP2). */
static int rec_str8(struct rec *r, const char *s) {
        size_t l = strlen(s) + 1, padded = (l + 7) & ~(size_t) 7;

        if (r->n + padded + PDW_SAMPLE_ID_SIZE > sizeof(r->b))
                return -ENAMETOOLONG;
        memset(r->b + r->n, 0, padded);
        memcpy(r->b + r->n, s, l);
        r->n += padded;
        return 0;
}

static void rec_sample_id(struct rec *r, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu, uint64_t id) {
        rec_u32(r, pid);
        rec_u32(r, tid);
        rec_u64(r, time);
        rec_u32(r, cpu);
        rec_u32(r, 0);
        rec_u64(r, id);
}

static void rec_done(struct rec *r) {
        uint16_t size = (uint16_t) r->n;

        memcpy(r->b + 6, &size, sizeof(size));
}

static int flush(struct pdw *w) {
        int r;

        if (w->len == 0)
                return 0;
        r = spegen_write_full(w->fd, w->buf, w->len, -1);
        w->len = 0;
        return r;
}

static int out(struct pdw *w, const void *p, size_t n) {
        int r;

        if (w->len + n > PDW_BUF_SIZE) {
                r = flush(w);
                if (r < 0)
                        return r;
        }
        if (n >= PDW_BUF_SIZE) {
                r = spegen_write_full(w->fd, p, n, -1);
                if (r < 0)
                        return r;
        } else {
                memcpy(w->buf + w->len, p, n);
                w->len += n;
        }
        w->pos += n;
        return 0;
}

static int out_rec(struct pdw *w, struct rec *r) {
        rec_done(r);
        return out(w, r->b, r->n);
}

void pdw_config_init(struct pdw_config *c) {
        *c = (struct pdw_config) {
                .n_cpus = 1,
                .spe_pmu_type = PDW_SPE_PMU_TYPE_DEFAULT,
                /* ts_enable (config:0) | pa_enable (config:1), the format
                 * bits of arm_spe_0 (drivers/perf/arm_spe_pmu.c, its format/ and caps/ attributes) */
                .spe_config = 0x3,
                .spe_period = 4096,
                .midr = 0,
                .n_nodes = 1,
                .mem_block = UINT64_C(0x40000000),
                .blocks_per_node = 32,
                .mem_total_kb = UINT64_C(64) << 20,
                .hostname = "spegen",
                .osrelease = "6.1.0-synthetic-arm64",
                .arch = "aarch64",
                .cpudesc = "Neoverse (synthetic)",
                .cmdline = "perf record -e arm_spe_0/ts_enable=1,pa_enable=1/ -a",
        };
}

static void fill_spe_attr(const struct pdw *w, struct perf_event_attr *a) {
        memset(a, 0, sizeof(*a));
        a->type = w->c.spe_pmu_type;
        a->size = PDW_ATTR_SIZE;
        a->config = w->c.spe_config;
        /* SPE sampling is by operation count; freq must be 0
         * (drivers/perf/arm_spe_pmu.c, arm_spe_pmu_event_init()). */
        a->sample_period = w->c.spe_period;
        a->sample_type = PDW_SPE_SAMPLE_TYPE;
        a->disabled = 1;
        a->sample_id_all = 1;
}

static void fill_dummy_attr(struct perf_event_attr *a) {
        memset(a, 0, sizeof(*a));
        a->type = PERF_TYPE_SOFTWARE;
        a->size = PDW_ATTR_SIZE;
        a->config = PERF_COUNT_SW_DUMMY;
        a->sample_period = 1;
        a->sample_type = PDW_DUMMY_SAMPLE_TYPE;
        a->exclude_kernel = 1;
        a->exclude_hv = 1;
        a->mmap = 1;
        a->comm = 1;
        a->task = 1;
        a->mmap2 = 1;
        a->comm_exec = 1;
        a->sample_id_all = 1;
        /* No context_switch: perf 6.1 then takes the TID from SPE CONTEXT
         * packets (tools/perf/util/arm-spe.c, how perf attributes PIDs). */
}

static void fill_mem_attr(const struct pdw *w, bool store, struct perf_event_attr *a) {
        memset(a, 0, sizeof(*a));
        a->type = PERF_TYPE_RAW;
        a->size = PDW_ATTR_SIZE;
        a->config = store ? PDW_MEM_STORES_CONFIG : PDW_MEM_LOADS_CONFIG;
        a->config1 = store ? 0 : w->c.mem_ldlat;
        a->sample_period = w->c.mem_period;
        a->sample_type = PDW_MEM_SAMPLE_TYPE;
        a->precise_ip = 3;
        a->disabled = 1;
        a->sample_id_all = 1;
        if (!store) {
                a->mmap = 1;
                a->comm = 1;
                a->task = 1;
                a->mmap2 = 1;
                a->comm_exec = 1;
                a->mmap_data = 1;
        }
}

/* Attr i: 0 = arm_spe, 1 = dummy:u (x86 mode: mem-loads, mem-stores); and its sample id on a CPU. */
static void fill_attr(const struct pdw *w, unsigned i, struct perf_event_attr *a) {
        if (w->c.x86_mem)
                fill_mem_attr(w, i == 1, a);
        else if (i == 0)
                fill_spe_attr(w, a);
        else
                fill_dummy_attr(a);
}

static uint64_t attr_id(unsigned i, unsigned cpu) {
        return (i == 0 ? PDW_SPE_ID_BASE : PDW_DUMMY_ID_BASE) + cpu;
}

/* One build-id table entry, as tools/perf/util/header.c write_buildid()
 * writes it (header type 0 in the feature section, 67 as a pipe record). */
static void build_id_entry(struct strbuf *sb, uint32_t type, const struct build_id_entry *e) {
        static const uint8_t zeros[PDW_NAME_ALIGN];
        size_t olen = strlen(e->filename) + 1;
        size_t len = (olen + PDW_NAME_ALIGN - 1) / PDW_NAME_ALIGN * PDW_NAME_ALIGN;
        uint8_t id[PDW_BUILD_ID_FIELD] = {};
        uint16_t misc = PERF_RECORD_MISC_USER | PDW_MISC_BUILD_ID_SIZE;
        uint16_t size = (uint16_t) (PDW_BUILD_ID_HEAD_SIZE + len);
        int32_t pid = PDW_HOST_KERNEL_ID;

        memcpy(id, e->id, e->size);
        id[PDW_BUILD_ID_MAX] = e->size;
        strbuf_append(sb, &type, sizeof(type));
        strbuf_append(sb, &misc, sizeof(misc));
        strbuf_append(sb, &size, sizeof(size));
        strbuf_append(sb, &pid, sizeof(pid));
        strbuf_append(sb, id, sizeof(id));
        strbuf_append(sb, e->filename, olen);
        strbuf_append(sb, zeros, len - olen);
}

/* Feature payload helpers (tools/perf/util/header.c do_write*). */
static void feat_u32(struct strbuf *sb, uint32_t v) {
        strbuf_append(sb, &v, sizeof(v));
}

static void feat_u64(struct strbuf *sb, uint64_t v) {
        strbuf_append(sb, &v, sizeof(v));
}

static void feat_string(struct strbuf *sb, const char *s) {
        static const uint8_t zeros[PDW_NAME_ALIGN];
        size_t olen = strlen(s) + 1;
        size_t len = (olen + PDW_NAME_ALIGN - 1) / PDW_NAME_ALIGN * PDW_NAME_ALIGN;

        feat_u32(sb, (uint32_t) len);
        strbuf_append(sb, s, olen);
        strbuf_append(sb, zeros, len - olen);
}

static void node_cpus(const struct pdw *w, unsigned node, unsigned *ret_first, unsigned *ret_end) {
        *ret_first = node * w->c.n_cpus / w->c.n_nodes;
        *ret_end = (node + 1) * w->c.n_cpus / w->c.n_nodes;
}

/* Build feature `bit` into sb; false if this writer does not emit it. */
static bool build_feature(struct pdw *w, unsigned bit, struct strbuf *sb) {
        char s[128];

        switch (bit) {
        case FEAT_BUILD_ID:
                /* perf_session__write_buildid_table(); in pipe mode perf
                 * never sends it as a HEADER_FEATURE event (pdw_build_id()
                 * writes the records). */
                if (w->c.pipe || w->n_build_ids == 0)
                        return false;
                for (size_t i = 0; i < w->n_build_ids; i++)
                        build_id_entry(sb, 0, &w->build_ids[i]);
                return true;
        case FEAT_HOSTNAME:
                feat_string(sb, w->hostname);
                return true;
        case FEAT_OSRELEASE:
                feat_string(sb, w->osrelease);
                return true;
        case FEAT_VERSION:
                feat_string(sb, PDW_VERSION_STRING);
                return true;
        case FEAT_ARCH:
                feat_string(sb, w->arch);
                return true;
        case FEAT_NRCPUS:
                feat_u32(sb, w->c.n_cpus); /* available */
                feat_u32(sb, w->c.n_cpus); /* online */
                return true;
        case FEAT_CPUDESC:
                feat_string(sb, w->cpudesc);
                return true;
        case FEAT_CPUID:
                if (w->c.x86_mem) {
                        /* x86 perf writes "vendor,family,model,stepping" (tools/perf/arch/x86/util/header.c). */
                        feat_string(sb, w->c.x86_cpuid ?: "GenuineIntel,6,85,4");
                        return true;
                }
                if (w->c.midr == 0)
                        return false;
                /* arm64 perf writes MIDR_EL1 as "0x%016lx" and reads it
                 * back with strtol(, 16) to pick the data-source decoder. */
                snprintf(s, sizeof(s), "0x%016llx", (unsigned long long) w->c.midr);
                feat_string(sb, s);
                return true;
        case FEAT_TOTAL_MEM:
                feat_u64(sb, w->c.mem_total_kb);
                return true;
        case FEAT_CMDLINE:
                feat_u32(sb, 1);
                feat_string(sb, w->cmdline);
                return true;
        case FEAT_EVENT_DESC: {
                struct perf_event_attr a;

                if (w->c.pipe)
                        return false; /* pipe mode carries HEADER_ATTR events */
                feat_u32(sb, PDW_N_ATTRS);
                feat_u32(sb, PDW_ATTR_SIZE);
                for (unsigned i = 0; i < PDW_N_ATTRS; i++) {
                        fill_attr(w, i, &a);
                        strbuf_append(sb, &a, PDW_ATTR_SIZE);
                        feat_u32(sb, w->c.n_cpus);
                        if (w->c.x86_mem) {
                                snprintf(s, sizeof(s), "cpu/mem-loads,ldlat=%llu/P",
                                         (unsigned long long) w->c.mem_ldlat);
                                feat_string(sb, i == 0 ? s : "cpu/mem-stores/P");
                        } else
                                feat_string(sb, i == 0 ? "arm_spe_0//" : "dummy:u");
                        for (unsigned cpu = 0; cpu < w->c.n_cpus; cpu++)
                                feat_u64(sb, attr_id(i, cpu));
                }
                return true;
        }
        case FEAT_NUMA_TOPOLOGY:
                feat_u32(sb, w->c.n_nodes);
                for (unsigned node = 0; node < w->c.n_nodes; node++) {
                        unsigned first, end;

                        node_cpus(w, node, &first, &end);
                        feat_u32(sb, node);
                        feat_u64(sb, w->c.mem_total_kb / w->c.n_nodes);
                        feat_u64(sb, w->c.mem_total_kb / w->c.n_nodes / 2);
                        if (end - first > 1)
                                snprintf(s, sizeof(s), "%u-%u", first, end - 1);
                        else
                                snprintf(s, sizeof(s), "%u", first);
                        feat_string(sb, s);
                }
                return true;
        case FEAT_PMU_MAPPINGS:
                if (w->c.x86_mem) {
                        feat_u32(sb, 2);
                        feat_u32(sb, PERF_TYPE_SOFTWARE);
                        feat_string(sb, "software");
                        feat_u32(sb, PERF_TYPE_RAW);
                        feat_string(sb, "cpu");
                        return true;
                }
                feat_u32(sb, 2);
                feat_u32(sb, PERF_TYPE_SOFTWARE);
                feat_string(sb, "software");
                feat_u32(sb, w->c.spe_pmu_type);
                feat_string(sb, "arm_spe_0");
                return true;
        case FEAT_AUXTRACE:
                if (w->c.x86_mem)
                        return false;
                /* auxtrace_index__write(): count, then {file offset of the
                 * AUXTRACE event, its header.size}. Needs file offsets, so
                 * file mode only. */
                if (w->c.pipe)
                        return false;
                feat_u64(sb, w->n_index);
                for (size_t i = 0; i < w->n_index; i++) {
                        feat_u64(sb, w->index[i].offset);
                        feat_u64(sb, w->index[i].size);
                }
                return true;
        case FEAT_SAMPLE_TIME:
                if (w->c.pipe)
                        return false;
                feat_u64(sb, w->first_time);
                feat_u64(sb, w->last_time);
                return true;
        case FEAT_MEM_TOPOLOGY: {
                /* version, block size, node count, then per node: node,
                 * bitmap size in bits, and the bitmap (do_write_bitmap:
                 * size again, then u64 words) of its memory blocks. */
                uint64_t bits_total = (uint64_t) w->c.blocks_per_node * w->c.n_nodes;

                feat_u64(sb, 1);
                feat_u64(sb, w->c.mem_block);
                feat_u64(sb, w->c.n_nodes);
                for (unsigned node = 0; node < w->c.n_nodes; node++) {
                        uint64_t lo = (uint64_t) node * w->c.blocks_per_node;
                        uint64_t hi = lo + w->c.blocks_per_node;

                        feat_u64(sb, node);
                        feat_u64(sb, bits_total);
                        feat_u64(sb, bits_total);
                        for (uint64_t word = 0; word < (bits_total + 63) / 64; word++) {
                                uint64_t v = 0;

                                for (uint64_t b = word * 64; b < (word + 1) * 64 && b < bits_total; b++)
                                        if (b >= lo && b < hi)
                                                v |= UINT64_C(1) << (b % 64);
                                feat_u64(sb, v);
                        }
                }
                return true;
        }
        default:
                return false;
        }
}

static int write_time_conv(struct pdw *w) {
        struct rec r;

        /* Identity conversion (shift 0, mult 1, zero 0): SPE timestamps are
         * perf nanoseconds. perf 6.1 divides by time_mult, and arm-spe
         * copies this record when it sees AUXTRACE_INFO, so it must come
         * first (tools/perf/util/arm-spe.c, arm_spe_process_auxtrace_info()). */
        rec_header(&r, PDW_RECORD_TIME_CONV, 0);
        rec_u64(&r, 0); /* time_shift */
        rec_u64(&r, 1); /* time_mult */
        rec_u64(&r, 0); /* time_zero */
        rec_u64(&r, 0); /* time_cycles */
        rec_u64(&r, UINT64_MAX); /* time_mask */
        rec_u8(&r, 1);  /* cap_user_time_zero */
        rec_u8(&r, 0);  /* cap_user_time_short */
        for (unsigned i = 0; i < 6; i++)
                rec_u8(&r, 0);
        return out_rec(w, &r);
}

static int write_auxtrace_info(struct pdw *w) {
        struct rec r;

        /* perf 6.1 knows only the version-1 private area: PMU type and the
         * per-CPU-mmaps flag (ARM_SPE_AUXTRACE_PRIV_MAX = 2). priv[0] must
         * equal the arm_spe attr.type or no sample is synthesized. */
        rec_header(&r, PDW_RECORD_AUXTRACE_INFO, 0);
        rec_u32(&r, PDW_AUXTRACE_ARM_SPE);
        rec_u32(&r, 0);
        rec_u64(&r, w->c.spe_pmu_type);
        rec_u64(&r, 1);
        return out_rec(w, &r);
}

static int write_pipe_prologue(struct pdw *w) {
        struct perf_event_attr a;
        uint64_t hdr[2] = { PDW_MAGIC, PDW_PIPE_HEADER_SIZE };
        struct strbuf sb = STRBUF_INIT;
        struct rec r;
        int ret;

        ret = out(w, hdr, sizeof(hdr));
        if (ret < 0)
                return ret;

        for (unsigned i = 0; i < PDW_N_ATTRS; i++) {
                fill_attr(w, i, &a);
                rec_header(&r, PDW_RECORD_HEADER_ATTR, 0);
                memcpy(r.b + r.n, &a, PDW_ATTR_SIZE);
                r.n += PDW_ATTR_SIZE;
                for (unsigned cpu = 0; cpu < w->c.n_cpus; cpu++)
                        rec_u64(&r, attr_id(i, cpu));
                ret = out_rec(w, &r);
                if (ret < 0)
                        return ret;
        }

        for (unsigned bit = 0; bit < PDW_FEAT_BITS; bit++) {
                uint64_t head[2];

                sb.len = 0;
                if (!build_feature(w, bit, &sb))
                        continue;
                /* HEADER_FEATURE: header, u64 feature id, payload; keep the
                 * next event 8-byte aligned. */
                while (sb.len % 8)
                        strbuf_putc(&sb, 0);
                if (sizeof(head) + sb.len > PDW_EVENT_MAX) {
                        strbuf_done(&sb);
                        return -E2BIG;
                }
                head[0] = (uint64_t) PDW_RECORD_HEADER_FEATURE | ((uint64_t) (sizeof(head) + sb.len) << 48);
                head[1] = bit;
                ret = out(w, head, sizeof(head));
                if (ret >= 0)
                        ret = out(w, sb.buf, sb.len);
                if (ret < 0) {
                        strbuf_done(&sb);
                        return ret;
                }
        }
        strbuf_done(&sb);
        return 0;
}

int pdw_new(int fd, const struct pdw_config *c, struct pdw **ret) {
        _cleanup_free_ struct pdw *w = NULL;
        int r;

        if (fd < 0 || c->n_cpus < 1 || c->n_cpus > PDW_MAX_CPUS || c->n_nodes < 1 ||
            c->n_nodes > c->n_cpus || c->spe_pmu_type == 0)
                return -EINVAL;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->fd = fd;
        w->c = *c;
        w->hostname = xstrdup(c->hostname ?: "");
        w->osrelease = xstrdup(c->osrelease ?: "");
        w->arch = xstrdup(c->arch ?: "");
        w->cpudesc = xstrdup(c->cpudesc ?: "");
        w->cmdline = xstrdup(c->cmdline ?: "");
        w->buf = xmalloc(PDW_BUF_SIZE);

        if (c->pipe) {
                r = write_pipe_prologue(w);
        } else {
                /* Header, attrs and id arrays are written last; reserve
                 * their space so the data section starts right after. */
                uint64_t head = PDW_FILE_HEADER_SIZE + PDW_N_ATTRS * PDW_FILE_ATTR_SIZE +
                                PDW_N_ATTRS * (uint64_t) c->n_cpus * sizeof(uint64_t);
                static const uint8_t zeros[64];

                r = 0;
                for (uint64_t done = 0; r >= 0 && done < head; done += MIN(head - done, sizeof(zeros)))
                        r = out(w, zeros, MIN(head - done, sizeof(zeros)));
                w->data_offset = head;
        }
        if (r >= 0 && !c->x86_mem)
                r = write_time_conv(w);
        if (r >= 0 && !c->x86_mem)
                r = write_auxtrace_info(w);
        if (r < 0) {
                pdw_free(TAKE_PTR(w));
                return r;
        }

        *ret = TAKE_PTR(w);
        return 0;
}

int pdw_build_id(struct pdw *w, const char *filename, const uint8_t *build_id, size_t build_id_size) {
        struct build_id_entry e = {};
        size_t l;
        int r;

        if (!filename || !filename[0] || build_id_size == 0 || build_id_size > PDW_BUILD_ID_MAX)
                return -EINVAL;
        l = strlen(filename) + 1;
        if (PDW_BUILD_ID_HEAD_SIZE + (l + PDW_NAME_ALIGN - 1) / PDW_NAME_ALIGN * PDW_NAME_ALIGN > PDW_EVENT_MAX)
                return -ENAMETOOLONG;
        memcpy(e.id, build_id, build_id_size);
        e.size = (uint8_t) build_id_size;

        if (w->c.pipe) {
                struct strbuf sb = STRBUF_INIT;

                /* header.size is 36 + a multiple of 64, so the records
                 * after it are 4-byte aligned only; perf writes it so too
                 * and reads pipe events by header.size. */
                e.filename = (char *) filename;
                build_id_entry(&sb, PDW_RECORD_HEADER_BUILD_ID, &e);
                r = out(w, sb.buf, sb.len);
                strbuf_done(&sb);
                return r;
        }

        e.filename = xstrdup(filename);
        w->build_ids = xrealloc(w->build_ids, (w->n_build_ids + 1) * sizeof(*w->build_ids));
        w->build_ids[w->n_build_ids++] = e;
        return 0;
}

int pdw_comm(struct pdw *w, uint32_t pid, uint32_t tid, const char *comm, uint64_t time) {
        struct rec r;
        int ret;

        rec_header(&r, PERF_RECORD_COMM, 0);
        rec_u32(&r, pid);
        rec_u32(&r, tid);
        ret = rec_str8(&r, comm);
        if (ret < 0)
                return ret;
        rec_sample_id(&r, pid, tid, time, 0, PDW_DUMMY_ID_BASE);
        return out_rec(w, &r);
}

int pdw_fork(struct pdw *w, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time) {
        struct rec r;

        rec_header(&r, PERF_RECORD_FORK, 0);
        rec_u32(&r, pid);
        rec_u32(&r, ppid);
        rec_u32(&r, tid);
        rec_u32(&r, ptid);
        rec_u64(&r, time);
        rec_sample_id(&r, pid, tid, time, 0, PDW_DUMMY_ID_BASE);
        return out_rec(w, &r);
}

int pdw_mmap2(struct pdw *w, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
              uint32_t prot, uint32_t flags, const char *filename, uint64_t time) {
        struct rec r;
        int ret;

        rec_header(&r, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | ((prot & PROT_EXEC) ? 0 : PERF_RECORD_MISC_MMAP_DATA));
        rec_u32(&r, pid);
        rec_u32(&r, tid);
        rec_u64(&r, addr);
        rec_u64(&r, len);
        rec_u64(&r, pgoff);
        rec_u32(&r, 0); /* maj */
        rec_u32(&r, 0); /* min */
        rec_u64(&r, 0); /* ino */
        rec_u64(&r, 0); /* ino_generation */
        rec_u32(&r, prot);
        rec_u32(&r, flags);
        ret = rec_str8(&r, filename);
        if (ret < 0)
                return ret;
        rec_sample_id(&r, pid, tid, time, 0, PDW_DUMMY_ID_BASE);
        return out_rec(w, &r);
}

int pdw_itrace_start(struct pdw *w, unsigned cpu, uint32_t pid, uint32_t tid, uint64_t time) {
        struct rec r;

        if (cpu >= w->c.n_cpus)
                return -EINVAL;
        rec_header(&r, PERF_RECORD_ITRACE_START, 0);
        rec_u32(&r, pid);
        rec_u32(&r, tid);
        rec_sample_id(&r, pid, tid, time, cpu, PDW_SPE_ID_BASE + cpu);
        return out_rec(w, &r);
}

int pdw_aux(struct pdw *w, unsigned cpu, const void *data, size_t len, uint64_t aux_offset,
            uint64_t time) {
        struct rec r;
        int ret;

        if (cpu >= w->c.n_cpus || len % 8 != 0)
                return -EINVAL;

        /* PERF_RECORD_AUX as the kernel writes it into the data ring when
         * the SPE driver commits a buffer (perf_event_open(2)). */
        rec_header(&r, PERF_RECORD_AUX, 0);
        rec_u64(&r, aux_offset);
        rec_u64(&r, len);
        rec_u64(&r, 0); /* flags: not truncated, no collision */
        rec_sample_id(&r, UINT32_MAX, UINT32_MAX, time, cpu, PDW_SPE_ID_BASE + cpu);
        ret = out_rec(w, &r);
        if (ret < 0)
                return ret;

        /* PERF_RECORD_AUXTRACE: header.size covers only the 48-byte record;
         * the payload follows inline (perf.data-file-format.txt). */
        if (!w->c.pipe) {
                if (w->n_index == w->cap_index) {
                        size_t cap = w->cap_index ? w->cap_index * 2 : 64;

                        w->index = xrealloc(w->index, cap * sizeof(*w->index));
                        w->cap_index = cap;
                }
                w->index[w->n_index++] = (struct index_entry) { w->pos, PDW_AUXTRACE_RECORD_SIZE };
        }
        rec_header(&r, PDW_RECORD_AUXTRACE, 0);
        rec_u64(&r, len);
        rec_u64(&r, aux_offset);
        rec_u64(&r, UINT64_C(0x53706567656e0000) | cpu); /* reference: any per-session value */
        rec_u32(&r, cpu); /* idx: one mmap per CPU */
        rec_u32(&r, UINT32_MAX); /* tid: -1 in per-CPU mode */
        rec_u32(&r, cpu);
        rec_u32(&r, 0);
        ret = out_rec(w, &r);
        if (ret < 0)
                return ret;
        return out(w, data, len);
}

int pdw_mem_sample(struct pdw *w, bool store, unsigned cpu, uint32_t pid, uint32_t tid, uint64_t time,
                   uint64_t ip, uint64_t addr, uint64_t data_src, uint64_t weight, uint64_t phys_addr,
                   uint16_t misc) {
        struct rec r;

        if (!w->c.x86_mem || cpu >= w->c.n_cpus)
                return -EINVAL;
        /* perf_event_open(2) PERF_RECORD_SAMPLE, in this order: identifier,
         * ip, pid/tid, time, addr, cpu/res, period, weight, data_src, phys_addr. */
        rec_header(&r, PERF_RECORD_SAMPLE, misc);
        rec_u64(&r, attr_id(store ? 1 : 0, cpu));
        rec_u64(&r, ip);
        rec_u32(&r, pid);
        rec_u32(&r, tid);
        rec_u64(&r, time);
        rec_u64(&r, addr);
        rec_u32(&r, cpu);
        rec_u32(&r, 0);
        rec_u64(&r, w->c.mem_period);
        rec_u64(&r, weight);
        rec_u64(&r, data_src);
        rec_u64(&r, phys_addr);
        return out_rec(w, &r);
}

void pdw_set_sample_time(struct pdw *w, uint64_t first, uint64_t last) {
        w->first_time = first;
        w->last_time = last;
}

static int finish_file(struct pdw *w) {
        struct strbuf feats[PDW_FEAT_BITS] = {};
        uint64_t bitmap[PDW_FEAT_BITS / 64] = {};
        struct strbuf head = STRBUF_INIT;
        uint64_t data_size = w->pos - w->data_offset, feat_pos;
        unsigned n_feats = 0;
        int r;

        for (unsigned bit = 0; bit < PDW_FEAT_BITS; bit++)
                if (build_feature(w, bit, &feats[bit])) {
                        bitmap[bit / 64] |= UINT64_C(1) << (bit % 64);
                        n_feats++;
                }

        /* Feature index {offset, size} for each set bit, in bit order, at
         * data.offset + data.size; the payloads follow it. */
        feat_pos = w->pos + (uint64_t) n_feats * 16;
        for (unsigned bit = 0; bit < PDW_FEAT_BITS; bit++) {
                uint64_t sec[2];

                if (!(bitmap[bit / 64] & (UINT64_C(1) << (bit % 64))))
                        continue;
                sec[0] = feat_pos;
                sec[1] = feats[bit].len;
                feat_pos += feats[bit].len;
                strbuf_append(&head, sec, sizeof(sec));
        }
        r = out(w, head.buf, head.len);
        for (unsigned bit = 0; r >= 0 && bit < PDW_FEAT_BITS; bit++)
                if (feats[bit].len > 0)
                        r = out(w, feats[bit].buf, feats[bit].len);
        for (unsigned bit = 0; bit < PDW_FEAT_BITS; bit++)
                strbuf_done(&feats[bit]);
        if (r >= 0)
                r = flush(w);
        if (r < 0) {
                strbuf_done(&head);
                return r;
        }

        /* perf_file_header, then the attrs with their id arrays. */
        head.len = 0;
        {
                uint64_t attrs_off = PDW_FILE_HEADER_SIZE;
                uint64_t ids_off = attrs_off + PDW_N_ATTRS * PDW_FILE_ATTR_SIZE;
                uint64_t v[] = {
                        PDW_MAGIC, PDW_FILE_HEADER_SIZE, PDW_FILE_ATTR_SIZE,
                        attrs_off, PDW_N_ATTRS * PDW_FILE_ATTR_SIZE,
                        w->data_offset, data_size,
                        0, 0, /* event_types: unused */
                };
                struct perf_event_attr a;

                strbuf_append(&head, v, sizeof(v));
                strbuf_append(&head, bitmap, sizeof(bitmap));
                for (unsigned i = 0; i < PDW_N_ATTRS; i++) {
                        uint64_t sec[2] = {
                                ids_off + (uint64_t) i * w->c.n_cpus * sizeof(uint64_t),
                                (uint64_t) w->c.n_cpus * sizeof(uint64_t),
                        };

                        fill_attr(w, i, &a);
                        strbuf_append(&head, &a, PDW_ATTR_SIZE);
                        strbuf_append(&head, sec, sizeof(sec));
                }
                for (unsigned i = 0; i < PDW_N_ATTRS; i++)
                        for (unsigned cpu = 0; cpu < w->c.n_cpus; cpu++) {
                                uint64_t id = attr_id(i, cpu);

                                strbuf_append(&head, &id, sizeof(id));
                        }
        }
        if (head.len != w->data_offset)
                r = -EINVAL;
        else
                r = spegen_write_full(w->fd, head.buf, head.len, 0);
        strbuf_done(&head);
        return r;
}

int pdw_finish(struct pdw *w) {
        if (w->finished)
                return -EALREADY;
        w->finished = true;
        if (w->c.pipe)
                return flush(w);
        return finish_file(w);
}

struct pdw *pdw_free(struct pdw *w) {
        if (!w)
                return NULL;
        free(w->hostname);
        free(w->osrelease);
        free(w->arch);
        free(w->cpudesc);
        free(w->cmdline);
        free(w->buf);
        free(w->index);
        for (size_t i = 0; i < w->n_build_ids; i++)
                free(w->build_ids[i].filename);
        free(w->build_ids);
        free(w);
        return NULL;
}
