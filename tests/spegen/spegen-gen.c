/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spegen-gen.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "spe-enc.h"
#include "spegen-layout.h"

const struct spegen_func_info spegen_funcs[_SPEGEN_FN_MAX] = {
        [SPEGEN_FN_MAIN]          = { "main",              0x1000, 0x100 },
        [SPEGEN_FN_WRITER]        = { "writer_thread",     0x1100, 0x100 },
        [SPEGEN_FN_READER]        = { "reader_thread",     0x1200, 0x100 },
        [SPEGEN_FN_TRUE_SHARE]    = { "true_share_update", 0x1300, 0x100 },
        [SPEGEN_FN_RO_READER]     = { "ro_reader",         0x1400, 0x100 },
        [SPEGEN_FN_PAD_WRITER]    = { "padded_writer",     0x1500, 0x100 },
        [SPEGEN_FN_PAD_READER]    = { "padded_reader",     0x1600, 0x100 },
        [SPEGEN_FN_DRAM_WALK]     = { "dram_walk",         0x1700, 0x100 },
        [SPEGEN_FN_BRANCHY]       = { "branchy",           0x1800, 0x100 },
        [SPEGEN_FN_REMOTE_READER] = { "remote_reader",     0x1900, 0x100 },
        [SPEGEN_FN_REMOTE_WRITER] = { "remote_writer",     0x1a00, 0x100 },
        [SPEGEN_FN_EXT_HDR]       = { "ext_hdr_user",      0x1b00, 0x100 },
        [SPEGEN_FN_HOT_LOOP]      = { "hot_loop",          0x1c00, 0x100 },
        [SPEGEN_FN_NOISE]         = { "noise_fn",          0x1d00, 0x300 },
};

static const char *const scenario_names[_SPEGEN_SC_MAX] = {
        [SPEGEN_SC_FALSE_SHARING] = "false-sharing",
        [SPEGEN_SC_TRUE_SHARING]  = "true-sharing",
        [SPEGEN_SC_READ_ONLY]     = "read-only",
        [SPEGEN_SC_PADDED]        = "padded",
        [SPEGEN_SC_DRAM]          = "dram",
        [SPEGEN_SC_BRANCHES]      = "branches",
        [SPEGEN_SC_KERNEL]        = "kernel",
        [SPEGEN_SC_REMOTE]        = "remote",
        [SPEGEN_SC_EXT_HEADER]    = "ext-header",
        [SPEGEN_SC_NOISE]         = "noise",
};

/* Relative frequency of each scenario in a mix. Noise (with its single hot
 * PC in hot_loop) is the heaviest so that hot_loop is the hottest symbol of
 * an "all" run; false sharing is next so it is the top c2c line. */
static const unsigned scenario_weights[_SPEGEN_SC_MAX] = {
        [SPEGEN_SC_FALSE_SHARING] = 20,
        [SPEGEN_SC_TRUE_SHARING]  = 8,
        [SPEGEN_SC_READ_ONLY]     = 8,
        [SPEGEN_SC_PADDED]        = 8,
        [SPEGEN_SC_DRAM]          = 10,
        [SPEGEN_SC_BRANCHES]      = 10,
        [SPEGEN_SC_KERNEL]        = 8,
        [SPEGEN_SC_REMOTE]        = 8,
        [SPEGEN_SC_EXT_HEADER]    = 5,
        [SPEGEN_SC_NOISE]         = 20,
};

/* MIDR_EL1 values (Arm ARM D23.2 MIDR_EL1: implementer 0x41 'A', part
 * number in [15:4]): Neoverse N1 r3p1, N2 r0p0, V1 r1p0. */
#define MIDR_NEOVERSE_N1 UINT64_C(0x413fd0c1)
#define MIDR_NEOVERSE_N2 UINT64_C(0x410fd490)
#define MIDR_NEOVERSE_V1 UINT64_C(0x411fd400)

/* Kernel addresses: perf (and the Arm ARM's VA ranges) treat a PC with
 * NS=1 and EL1/EL2 as a kernel address and sign-fill bits [63:56]. */
#define KERNEL_TOP_BYTE   UINT64_C(0xff00000000000000)
#define VA_TAG_SHIFT      56

/* Byte values that no SPE decoder accepts as a packet header
 * (Arm ARM D10 "Packet headers": bits [7:5] = 000 other than 0x00/0x01, and
 * 0x80..0x97 which match no Address/Counter pattern). */
#define GARBAGE_LO_FIRST  0x02
#define GARBAGE_LO_COUNT  30
#define GARBAGE_HI_FIRST  0x80
#define GARBAGE_HI_COUNT  24

/* Roles: a thread of pid SPEGEN_PID pinned to a CPU "slot". */
enum role {
        R_FS_W0, R_FS_W1, R_FS_R0, R_FS_R1,
        R_TS_0, R_TS_1, R_TS_2,
        R_RO_0, R_RO_1, R_RO_2, R_RO_3,
        R_PAD_W, R_PAD_R0, R_PAD_R1,
        R_DRAM,
        R_BRANCH,
        R_K0, R_K1,
        R_RM_W, R_RM_R0, R_RM_R1,
        R_EXT,
        _R_MAX,
};

#define SLOT_LAST 1000U /* the last CPU (node 1 when there are two nodes) */
#define SLOT_MID  1001U /* the first CPU of node 1 */
#define NOISE_TID_BASE 4400U

static const struct {
        uint32_t tid;
        unsigned slot;
        const char *comm;
} roles[_R_MAX] = {
        [R_FS_W0]  = { 4301, 0, "fs_writer" },
        [R_FS_W1]  = { 4302, 1, "fs_writer" },
        [R_FS_R0]  = { 4303, 2, "fs_reader" },
        [R_FS_R1]  = { 4304, 3, "fs_reader" },
        [R_TS_0]   = { 4311, 0, "ts_worker" },
        [R_TS_1]   = { 4312, 1, "ts_worker" },
        [R_TS_2]   = { 4313, 2, "ts_worker" },
        [R_RO_0]   = { 4321, 0, "ro_reader" },
        [R_RO_1]   = { 4322, 1, "ro_reader" },
        [R_RO_2]   = { 4323, 2, "ro_reader" },
        [R_RO_3]   = { 4324, 3, "ro_reader" },
        [R_PAD_W]  = { 4331, 0, "pad_writer" },
        [R_PAD_R0] = { 4332, 2, "pad_reader" },
        [R_PAD_R1] = { 4333, 3, "pad_reader" },
        [R_DRAM]   = { 4341, 1, "dram_walker" },
        [R_BRANCH] = { 4351, 3, "branchy" },
        [R_K0]     = { 4361, 1, "sys_caller" },
        [R_K1]     = { 4362, 2, "sys_caller" },
        [R_RM_W]   = { 4371, 0, "rm_writer" },
        [R_RM_R0]  = { 4372, SLOT_LAST, "rm_reader" },
        [R_RM_R1]  = { 4373, SLOT_MID, "rm_reader" },
        [R_EXT]    = { 4381, 2, "ext_user" },
};

unsigned spegen_n_nodes(unsigned n_cpus) {
        return n_cpus >= 2 ? 2 : 1;
}

unsigned spegen_cpu_node(unsigned n_cpus, unsigned cpu) {
        if (spegen_n_nodes(n_cpus) == 1)
                return 0;
        return cpu < n_cpus / 2 ? 0 : 1;
}

static unsigned role_cpu(enum role r, unsigned n_cpus) {
        switch (roles[r].slot) {
        case SLOT_LAST:
                return n_cpus - 1;
        case SLOT_MID:
                return n_cpus / 2;
        default:
                return roles[r].slot % n_cpus;
        }
}

size_t spegen_threads(unsigned n_cpus, struct spegen_thread *out, size_t max) {
        size_t n = 0;

        /* The main thread first: perf needs the group leader before the
         * other threads can share its maps. */
        if (n < max)
                out[n] = (struct spegen_thread) { SPEGEN_PID, 0, SPEGEN_PROC_COMM };
        n++;
        for (size_t i = 0; i < _R_MAX; i++, n++)
                if (n < max)
                        out[n] = (struct spegen_thread) {
                                roles[i].tid, role_cpu(i, n_cpus), roles[i].comm,
                        };
        for (unsigned cpu = 0; cpu < n_cpus; cpu++, n++)
                if (n < max)
                        out[n] = (struct spegen_thread) { NOISE_TID_BASE + cpu, cpu, "noise" };
        return n;
}

uint64_t spegen_midr(enum spegen_midr_kind k) {
        switch (k) {
        case SPEGEN_MIDR_N2:
                return MIDR_NEOVERSE_N2;
        case SPEGEN_MIDR_V1:
                return MIDR_NEOVERSE_V1;
        default:
                return MIDR_NEOVERSE_N1;
        }
}

static const char *const pad_layout_names[_SPEGEN_PAD_MAX] = {
        [SPEGEN_PAD_SLOTS] = "slots",
        [SPEGEN_PAD_SPLIT] = "split",
};

static const char *const record_layout_names[_SPEGEN_LAYOUT_MAX] = {
        [SPEGEN_LAYOUT_PACKED] = "packed",
        [SPEGEN_LAYOUT_SPLIT]  = "split",
        [SPEGEN_LAYOUT_SLOTS]  = "slots",
};

const char *spegen_pad_layout_name(enum spegen_pad_layout l) {
        if ((unsigned) l >= _SPEGEN_PAD_MAX)
                return NULL;
        return pad_layout_names[l];
}

int spegen_parse_pad_layout(const char *s, enum spegen_pad_layout *ret) {
        for (unsigned i = 0; s && i < _SPEGEN_PAD_MAX; i++)
                if (strcmp(s, pad_layout_names[i]) == 0) {
                        *ret = i;
                        return 0;
                }
        return -EINVAL;
}

const char *spegen_record_layout_name(enum spegen_record_layout l) {
        if ((unsigned) l >= _SPEGEN_LAYOUT_MAX)
                return NULL;
        return record_layout_names[l];
}

const char *spegen_scenario_name(enum spegen_scenario s) {
        if ((unsigned) s >= _SPEGEN_SC_MAX)
                return NULL;
        return scenario_names[s];
}

int spegen_parse_scenarios(const char *s, uint32_t *ret_mask) {
        uint32_t mask = 0;
        const char *p = s;

        if (!s || !*s)
                return -EINVAL;
        while (*p) {
                size_t len = strcspn(p, ",");
                bool found = false;

                if (len == 3 && strncmp(p, "all", 3) == 0) {
                        mask |= SPEGEN_SC_ALL;
                        found = true;
                }
                for (unsigned i = 0; !found && i < _SPEGEN_SC_MAX; i++)
                        if (strlen(scenario_names[i]) == len && strncmp(p, scenario_names[i], len) == 0) {
                                mask |= UINT32_C(1) << i;
                                found = true;
                        }
                if (!found)
                        return -EINVAL;
                p += len;
                if (*p == ',') {
                        p++;
                        if (!*p)
                                return -EINVAL;
                }
        }
        *ret_mask = mask;
        return 0;
}

void spegen_config_init(struct spegen_config *c) {
        *c = (struct spegen_config) {
                .seed = 1,
                .n_records = 10000,
                .n_cpus = 4,
                .scenarios = SPEGEN_SC_ALL,
                .padded = false,
                .pad_layout = SPEGEN_PAD_SLOTS,
                .ts = false,
                .garbage_rate = 0.0,
                .chunk_size = SPEGEN_DEFAULT_CHUNK,
        };
}

int spegen_config_check(const struct spegen_config *c) {
        if (c->n_cpus < 1 || c->n_cpus > SPEGEN_MAX_CPUS)
                return -ERANGE;
        if ((c->scenarios & SPEGEN_SC_ALL) == 0 || (c->scenarios & ~SPEGEN_SC_ALL) != 0)
                return -EINVAL;
        if (!(c->garbage_rate >= 0.0 && c->garbage_rate <= 1.0))
                return -ERANGE;
        if (c->chunk_size < SPEGEN_MIN_CHUNK)
                return -ERANGE;
        if ((unsigned) c->pad_layout >= _SPEGEN_PAD_MAX)
                return -EINVAL;
        return 0;
}

/* xoshiro256** seeded through splitmix64 (Blackman & Vigna): small, fast
 * and the same on every platform, which is what "same seed, same bytes"
 * needs. */
struct rng {
        uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x) {
        uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed) {
        for (unsigned i = 0; i < 4; i++)
                r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
        return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r) {
        uint64_t *s = r->s;
        uint64_t result = rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

/* Uniform in [0, n) by multiply-shift (Lemire); n > 0. */
static uint64_t rng_below(struct rng *r, uint64_t n) {
        return (uint64_t) (((unsigned __int128) rng_next(r) * n) >> 64);
}

static uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi) {
        return lo + rng_below(r, hi - lo + 1);
}

static bool rng_pct(struct rng *r, unsigned pct) {
        return rng_below(r, 100) < pct;
}

#define PC_TABLE_BITS 14
#define PC_TABLE_SIZE (1U << PC_TABLE_BITS)

struct pc_count {
        uint64_t pc;
        uint64_t count;
};

struct cpu_stream {
        uint8_t *buf;
        size_t len;
        uint64_t chunk_start;
        uint64_t n_records;
        uint64_t n_garbage;
        uint64_t last_time;
};

struct gen {
        const struct spegen_config *c;
        const struct spegen_sink *sink;
        struct rng rng;
        struct cpu_stream cpus[SPEGEN_MAX_CPUS];
        uint64_t time;
        unsigned cum_weight[_SPEGEN_SC_MAX];
        unsigned total_weight;
        struct pc_count *pcs;
        struct spegen_stats stats;
};

static uint64_t va_to_pa(uint64_t va) {
        if (va >= SPEGEN_KDATA_BASE)
                return SPEGEN_KDATA_PA_BASE + (va - SPEGEN_KDATA_BASE);
        return SPEGEN_PA_BASE + (va - SPEGEN_DATA_BASE);
}

static void on_role(struct gen *g, struct spegen_record *r, enum role role) {
        r->tid = roles[role].tid;
        r->cpu = role_cpu(role, g->c->n_cpus);
}

static void set_user_pc(struct spegen_record *r, enum spegen_func fn, uint64_t off) {
        r->has |= SPEGEN_HAS_PC;
        r->pc = spegen_func_pc(fn, off);
        r->el = 0;
        r->ns = true;
}

/* Latency ranges (cycles) by where the data came from: plausible Neoverse
 * figures, only their order matters to the tests. */
static uint16_t latency_for(struct gen *g, uint16_t ds) {
        switch (ds) {
        case SPE_ENC_DS_L1D:           return (uint16_t) rng_range(&g->rng, 4, 8);
        case SPE_ENC_DS_L2:            return (uint16_t) rng_range(&g->rng, 10, 20);
        case SPE_ENC_DS_PEER_CORE:     return (uint16_t) rng_range(&g->rng, 40, 120);
        case SPE_ENC_DS_LOCAL_CLUSTER: return (uint16_t) rng_range(&g->rng, 50, 150);
        case SPE_ENC_DS_SYS_CACHE:     return (uint16_t) rng_range(&g->rng, 30, 60);
        case SPE_ENC_DS_PEER_CLUSTER:  return (uint16_t) rng_range(&g->rng, 60, 180);
        case SPE_ENC_DS_REMOTE:        return (uint16_t) rng_range(&g->rng, 200, 500);
        default:                       return (uint16_t) rng_range(&g->rng, 150, 450);
        }
}

static uint64_t events_for(uint16_t ds) {
        uint64_t ev = SPE_ENC_EV_RETIRED | SPE_ENC_EV_L1D_ACCESS | SPE_ENC_EV_TLB_ACCESS;

        switch (ds) {
        case SPE_ENC_DS_L1D:
                return ev;
        case SPE_ENC_DS_L2:
                return ev | SPE_ENC_EV_L1D_REFILL;
        case SPE_ENC_DS_DRAM:
                return ev | SPE_ENC_EV_L1D_REFILL | SPE_ENC_EV_LLC_ACCESS | SPE_ENC_EV_LLC_REFILL;
        case SPE_ENC_DS_REMOTE:
                return ev | SPE_ENC_EV_L1D_REFILL | SPE_ENC_EV_LLC_ACCESS | SPE_ENC_EV_LLC_REFILL |
                       SPE_ENC_EV_REMOTE_ACCESS;
        default:
                return ev | SPE_ENC_EV_L1D_REFILL | SPE_ENC_EV_LLC_ACCESS;
        }
}

static void set_latencies(struct gen *g, struct spegen_record *r, uint16_t tot, bool walk) {
        r->has |= SPEGEN_HAS_TOT | SPEGEN_HAS_ISSUE;
        r->tot_lat = tot;
        r->issue_lat = (uint16_t) rng_range(&g->rng, 1, 1 + tot / 4);
        if (r->has & SPEGEN_HAS_VA) {
                r->has |= SPEGEN_HAS_XLAT;
                r->xlat_lat = walk ? (uint16_t) rng_range(&g->rng, 20, 80)
                                   : (uint16_t) rng_range(&g->rng, 1, 3);
                if (r->tot_lat < r->xlat_lat)
                        r->tot_lat = r->xlat_lat;
        }
}

/* A load (op class 1, GP register unless sub says otherwise) of va served
 * from data source ds. */
static void set_load(struct gen *g, struct spegen_record *r, uint64_t va, uint16_t ds, uint8_t sub) {
        r->has |= SPEGEN_HAS_VA | SPEGEN_HAS_PA | SPEGEN_HAS_OP | SPEGEN_HAS_EVENTS | SPEGEN_HAS_DS;
        r->va = va;
        r->pa = va_to_pa(va);
        r->pa_ns = true;
        r->op_class = SPE_ENC_OP_LDST;
        r->op_subclass = sub;
        r->events = events_for(ds);
        r->data_source = ds;
        set_latencies(g, r, latency_for(g, ds), false);
}

/* Stores carry no data source on Neoverse (Neoverse TRMs, "Data source packet"). */
static void set_store(struct gen *g, struct spegen_record *r, uint64_t va, bool refill) {
        r->has |= SPEGEN_HAS_VA | SPEGEN_HAS_PA | SPEGEN_HAS_OP | SPEGEN_HAS_EVENTS;
        r->va = va;
        r->pa = va_to_pa(va);
        r->pa_ns = true;
        r->op_class = SPE_ENC_OP_LDST;
        r->op_subclass = SPE_ENC_OP_LDST_GP | SPE_ENC_OP_LDST_ST;
        r->events = SPE_ENC_EV_RETIRED | SPE_ENC_EV_L1D_ACCESS | SPE_ENC_EV_TLB_ACCESS |
                    (refill ? SPE_ENC_EV_L1D_REFILL : 0);
        set_latencies(g, r, (uint16_t) rng_range(&g->rng, refill ? 20 : 2, refill ? 90 : 6), false);
}

/* Loads of a line another core keeps writing: mostly supplied by a peer. */
static uint16_t contended_source(struct gen *g) {
        uint64_t x = rng_below(&g->rng, 100);

        if (x < 55)
                return SPE_ENC_DS_PEER_CORE;
        if (x < 65)
                return SPE_ENC_DS_LOCAL_CLUSTER;
        if (x < 70)
                return SPE_ENC_DS_PEER_CLUSTER;
        if (x < 90)
                return SPE_ENC_DS_L1D;
        return SPE_ENC_DS_L2;
}

static void sc_false_sharing(struct gen *g, struct spegen_record *r) {
        static const enum role who[] = { R_FS_W0, R_FS_W1, R_FS_R0, R_FS_R1 };
        enum role role = who[rng_below(&g->rng, ELEMENTSOF(who))];

        on_role(g, r, role);
        switch (role) {
        case R_FS_W0:
        case R_FS_W1: {
                unsigned off = role == R_FS_W0 ? SPEGEN_FS_LOCK0 : SPEGEN_FS_LOCK1;

                if (rng_pct(&g->rng, 30)) {
                        /* load side of the atomic test-and-set */
                        set_user_pc(r, SPEGEN_FN_WRITER, role == R_FS_W0 ? 0x0c : 0x20);
                        set_load(g, r, SPEGEN_LINE_FALSE_SHARE + off, SPE_ENC_DS_PEER_CORE,
                                 SPE_ENC_OP_LDST_EXT | SPE_ENC_OP_LDST_EXT_AT);
                } else {
                        set_user_pc(r, SPEGEN_FN_WRITER, role == R_FS_W0 ? 0x10 : 0x24);
                        set_store(g, r, SPEGEN_LINE_FALSE_SHARE + off, rng_pct(&g->rng, 60));
                }
                break;
        }
        default: {
                bool first = role == R_FS_R0;

                set_user_pc(r, SPEGEN_FN_READER, first ? 0x24 : 0x34);
                set_load(g, r, SPEGEN_LINE_FALSE_SHARE + (first ? SPEGEN_FS_READER1 : SPEGEN_FS_READER2),
                         contended_source(g), SPE_ENC_OP_LDST_GP);
                break;
        }
        }
}

static void sc_true_sharing(struct gen *g, struct spegen_record *r) {
        on_role(g, r, R_TS_0 + (enum role) rng_below(&g->rng, 3));
        if (rng_pct(&g->rng, 50)) {
                set_user_pc(r, SPEGEN_FN_TRUE_SHARE, 0x08);
                set_load(g, r, SPEGEN_LINE_TRUE_SHARE + SPEGEN_TS_COUNTER, contended_source(g),
                         SPE_ENC_OP_LDST_GP);
        } else {
                set_user_pc(r, SPEGEN_FN_TRUE_SHARE, 0x0c);
                set_store(g, r, SPEGEN_LINE_TRUE_SHARE + SPEGEN_TS_COUNTER, rng_pct(&g->rng, 60));
        }
}

static void sc_read_only(struct gen *g, struct spegen_record *r) {
        uint64_t slot = rng_below(&g->rng, SPEGEN_CACHE_LINE / 8);
        uint64_t x = rng_below(&g->rng, 100);
        uint16_t ds = x < 80 ? SPE_ENC_DS_L1D : x < 95 ? SPE_ENC_DS_L2 : SPE_ENC_DS_SYS_CACHE;

        on_role(g, r, R_RO_0 + (enum role) rng_below(&g->rng, 4));
        set_user_pc(r, SPEGEN_FN_RO_READER, 0x10 + 4 * slot);
        set_load(g, r, SPEGEN_LINE_READ_ONLY + 8 * slot, ds, SPE_ENC_OP_LDST_GP);
}

static void sc_padded(struct gen *g, struct spegen_record *r) {
        uint64_t x = rng_below(&g->rng, 100);

        if (x < 40) {
                on_role(g, r, R_PAD_W);
                set_user_pc(r, SPEGEN_FN_PAD_WRITER, 0x10);
                set_store(g, r, SPEGEN_LINE_PADDED + SPEGEN_PAD_WRITER, false);
        } else if (x < 50) {
                on_role(g, r, R_PAD_W);
                set_user_pc(r, SPEGEN_FN_PAD_WRITER, 0x0c);
                set_load(g, r, SPEGEN_LINE_PADDED + SPEGEN_PAD_WRITER, SPE_ENC_DS_L1D, SPE_ENC_OP_LDST_GP);
        } else {
                on_role(g, r, x < 75 ? R_PAD_R0 : R_PAD_R1);
                set_user_pc(r, SPEGEN_FN_PAD_READER, 0x14);
                set_load(g, r, SPEGEN_LINE_PADDED + SPEGEN_PAD_READER,
                         rng_pct(&g->rng, 90) ? SPE_ENC_DS_L1D : SPE_ENC_DS_L2, SPE_ENC_OP_LDST_GP);
        }
}

static void sc_dram(struct gen *g, struct spegen_record *r) {
        uint64_t va = SPEGEN_DRAM_AREA + (rng_below(&g->rng, SPEGEN_DRAM_AREA_LEN) & ~UINT64_C(7));
        bool walk = rng_pct(&g->rng, 60);
        uint16_t ds = rng_pct(&g->rng, 85) ? SPE_ENC_DS_DRAM : SPE_ENC_DS_SYS_CACHE;

        on_role(g, r, R_DRAM);
        set_user_pc(r, SPEGEN_FN_DRAM_WALK, rng_pct(&g->rng, 50) ? 0x20 : 0x28);
        set_load(g, r, va, ds, SPE_ENC_OP_LDST_GP);
        r->events |= SPE_ENC_EV_L1D_REFILL | SPE_ENC_EV_LLC_ACCESS;
        if (walk) {
                r->events |= SPE_ENC_EV_TLB_WALK;
                set_latencies(g, r, latency_for(g, ds), true);
        }
}

static void sc_branches(struct gen *g, struct spegen_record *r) {
        uint64_t x = rng_below(&g->rng, 100);
        uint64_t off = 0x10 + 4 * rng_below(&g->rng, 16);

        on_role(g, r, R_BRANCH);
        set_user_pc(r, SPEGEN_FN_BRANCHY, off);
        r->has |= SPEGEN_HAS_OP | SPEGEN_HAS_EVENTS | SPEGEN_HAS_TGT;
        r->op_class = SPE_ENC_OP_BRANCH;
        r->events = SPE_ENC_EV_RETIRED;
        if (x < 60) {
                r->op_subclass = SPE_ENC_OP_BR_COND;
                if (rng_pct(&g->rng, 30))
                        r->events |= SPE_ENC_EV_NOT_TAKEN;
                r->tgt = spegen_func_pc(SPEGEN_FN_BRANCHY, 0x80 + 4 * rng_below(&g->rng, 16)) &
                         SPE_ENC_ADDR_VA_MASK;
        } else if (x < 70) {
                r->op_subclass = SPE_ENC_OP_BR_IND;
                r->tgt = spegen_func_pc(SPEGEN_FN_HOT_LOOP, 0) & SPE_ENC_ADDR_VA_MASK;
        } else {
                r->op_subclass = 0;
                r->tgt = spegen_func_pc(SPEGEN_FN_BRANCHY, 0x10) & SPE_ENC_ADDR_VA_MASK;
        }
        if (rng_pct(&g->rng, 15))
                r->events |= SPE_ENC_EV_MISPRED;
        r->has |= SPEGEN_HAS_TOT | SPEGEN_HAS_ISSUE;
        r->tot_lat = (uint16_t) rng_range(&g->rng, 1, 10);
        r->issue_lat = (uint16_t) rng_range(&g->rng, 0, 3);
}

static void sc_kernel(struct gen *g, struct spegen_record *r) {
        on_role(g, r, rng_pct(&g->rng, 50) ? R_K0 : R_K1);
        r->has |= SPEGEN_HAS_PC;
        r->pc = (SPEGEN_KTEXT_BASE + 0x40 * rng_below(&g->rng, 32) + 4 * rng_below(&g->rng, 4)) &
                SPE_ENC_ADDR_VA_MASK;
        r->el = 1;
        r->ns = true;
        if (rng_pct(&g->rng, 70)) {
                uint64_t va = SPEGEN_KDATA_BASE + 8 * rng_below(&g->rng, 512);
                set_load(g, r, va, rng_pct(&g->rng, 80) ? SPE_ENC_DS_L1D : SPE_ENC_DS_L2,
                         SPE_ENC_OP_LDST_GP);
        } else {
                r->has |= SPEGEN_HAS_OP | SPEGEN_HAS_EVENTS;
                r->op_class = SPE_ENC_OP_OTHER;
                r->op_subclass = 0;
                r->events = SPE_ENC_EV_RETIRED;
                set_latencies(g, r, (uint16_t) rng_range(&g->rng, 1, 6), false);
        }
}

static void sc_remote(struct gen *g, struct spegen_record *r) {
        uint64_t x = rng_below(&g->rng, 100);

        if (x < 40) {
                on_role(g, r, R_RM_W);
                set_user_pc(r, SPEGEN_FN_REMOTE_WRITER, 0x10);
                set_store(g, r, SPEGEN_LINE_REMOTE + SPEGEN_RM_FIELD, true);
        } else {
                on_role(g, r, x < 70 ? R_RM_R0 : R_RM_R1);
                set_user_pc(r, SPEGEN_FN_REMOTE_READER, 0x18);
                set_load(g, r, SPEGEN_LINE_REMOTE + SPEGEN_RM_FIELD, SPE_ENC_DS_REMOTE, SPE_ENC_OP_LDST_GP);
        }
}

static void sc_ext_header(struct gen *g, struct spegen_record *r) {
        on_role(g, r, R_EXT);
        set_user_pc(r, SPEGEN_FN_EXT_HDR, 0x10);
        set_load(g, r, SPEGEN_NOISE_AREA + 8 * rng_below(&g->rng, 64),
                 rng_pct(&g->rng, 50) ? SPE_ENC_DS_L1D : SPE_ENC_DS_L2, SPE_ENC_OP_LDST_GP);
        r->ext = SPEGEN_EXT_PC | SPEGEN_EXT_VA | SPEGEN_EXT_PA | SPEGEN_EXT_TOT | SPEGEN_EXT_ISSUE |
                 SPEGEN_EXT_XLAT;
}

static void sc_noise(struct gen *g, struct spegen_record *r) {
        unsigned cpu = (unsigned) rng_below(&g->rng, g->c->n_cpus);
        uint64_t va = SPEGEN_NOISE_AREA + 8 * rng_below(&g->rng, SPEGEN_NOISE_AREA_LEN / 8);
        uint64_t x = rng_below(&g->rng, 100);

        r->cpu = cpu;
        r->tid = NOISE_TID_BASE + cpu;
        if (x < 60) {
                /* The single hottest PC, and hottest function, of a mixed
                 * run: 60% of noise (weight 20) beats reader_thread and
                 * writer_thread (half of false sharing, weight 20, each). */
                set_user_pc(r, SPEGEN_FN_HOT_LOOP, 0x40);
                set_load(g, r, va, SPE_ENC_DS_L1D, SPE_ENC_OP_LDST_GP);
                return;
        }

        set_user_pc(r, SPEGEN_FN_NOISE, 4 * rng_below(&g->rng, spegen_funcs[SPEGEN_FN_NOISE].size / 4));
        x = rng_below(&g->rng, 100);
        if (x < 25) {
                static const uint8_t subs[] = { 0x00, SPE_ENC_OP_OTHER_COND, 0x04 /* ASE */ };

                r->has |= SPEGEN_HAS_OP | SPEGEN_HAS_EVENTS;
                r->op_class = SPE_ENC_OP_OTHER;
                r->op_subclass = subs[rng_below(&g->rng, ELEMENTSOF(subs))];
                r->events = SPE_ENC_EV_RETIRED;
                if (r->op_subclass == SPE_ENC_OP_OTHER_COND && rng_pct(&g->rng, 40))
                        r->events |= SPE_ENC_EV_NOT_TAKEN;
                set_latencies(g, r, (uint16_t) rng_range(&g->rng, 1, 12), false);
        } else if (x < 40) {
                set_store(g, r, va, rng_pct(&g->rng, 10));
        } else {
                static const uint16_t srcs[] = { SPE_ENC_DS_L1D, SPE_ENC_DS_L1D, SPE_ENC_DS_L2,
                                                 SPE_ENC_DS_SYS_CACHE };

                set_load(g, r, va, srcs[rng_below(&g->rng, ELEMENTSOF(srcs))],
                         x < 55 ? SPE_ENC_OP_LDST_SIMD : SPE_ENC_OP_LDST_GP);
        }

        /* Encoding variety a decoder must take in its stride. */
        if ((r->has & SPEGEN_HAS_VA) && rng_pct(&g->rng, 20))
                r->va |= rng_range(&g->rng, 1, 0x0f) << VA_TAG_SHIFT; /* TBI/MTE tag */
        if ((r->has & SPEGEN_HAS_PA) && rng_pct(&g->rng, 10)) {
                r->pa_ch = true;
                r->pa_pat = (uint8_t) rng_range(&g->rng, 1, 15);
        }
        if (r->events <= UINT8_MAX && rng_pct(&g->rng, 15))
                r->events_size = 1;
        else if (rng_pct(&g->rng, 10))
                r->events_size = 4;
        if (rng_pct(&g->rng, 30))
                r->ds_size = 1;
        if (rng_pct(&g->rng, 10))
                r->context_idx = SPE_ENC_CONTEXT_EL2;
}

typedef void (*scenario_fn)(struct gen *g, struct spegen_record *r);

static const scenario_fn scenario_fns[_SPEGEN_SC_MAX] = {
        [SPEGEN_SC_FALSE_SHARING] = sc_false_sharing,
        [SPEGEN_SC_TRUE_SHARING]  = sc_true_sharing,
        [SPEGEN_SC_READ_ONLY]     = sc_read_only,
        [SPEGEN_SC_PADDED]        = sc_padded,
        [SPEGEN_SC_DRAM]          = sc_dram,
        [SPEGEN_SC_BRANCHES]      = sc_branches,
        [SPEGEN_SC_KERNEL]        = sc_kernel,
        [SPEGEN_SC_REMOTE]        = sc_remote,
        [SPEGEN_SC_EXT_HEADER]    = sc_ext_header,
        [SPEGEN_SC_NOISE]         = sc_noise,
};

enum pkt {
        P_PC, P_CTX, P_OP, P_EV, P_ISSUE, P_TOT, P_TGT, P_VA, P_PA, P_XLAT, P_DS,
        _P_MAX,
};

/* Neoverse N1 packet order (Arm ARM D10, the profiling record and the worked record of
 * §10): PC, context, op type, events, issue, total, addresses, xlat,
 * data source, then the terminator. */
static const uint8_t n1_order[_P_MAX] = {
        P_PC, P_CTX, P_OP, P_EV, P_ISSUE, P_TOT, P_TGT, P_VA, P_PA, P_XLAT, P_DS,
};

/*
 * The Neoverse N1 fixed-slot record: every packet kind has its own offset
 * in the 64-byte record and a packet that is not recorded leaves its slot
 * as 0x00 padding. Read off real captures: the quipper record of
 * quipper's N1 test record (testdata/spe/vectors/perf_data_converter-quipper-two-
 * records.txt: PC, CONTEXT, LD, EV, ISSUE, TOT, VA, XLAT, DS, TS) and the
 * WindowsPerf branch records testdata/spe/spe-b1-ts{0,1}.data (TGT in the
 * VA slot, END at 0x3f). The PA slot is inferred: the STREAM record of
 * vectors/telemetry-solution-spe_parser-vectors.txt orders VA, XLAT, PA,
 * DS, and the 9-byte gap between XLAT and DS fits exactly one Address
 * packet. Bytes 0x09-0x0d and 0x35-0x36 are zero in every capture.
 *
 *   0x00 PC (9)     0x0e CONTEXT (5)  0x13 OP (2)       0x15 EV, 2 B (3)
 *   0x18 ISSUE (3)  0x1b TOT (3)      0x1e VA|TGT (9)   0x27 XLAT (3)
 *   0x2a PA (9)     0x33 DS, 1 B (2)  0x37 TS (9), or END at 0x3f
 *
 * Deliberately written here from the captures, not taken from the
 * decoder: the generator is an independent check of collectors/spe.
 */
#define N1_SLOT_PC       0x00U
#define N1_SLOT_CONTEXT  0x0eU
#define N1_SLOT_OP       0x13U
#define N1_SLOT_EVENTS   0x15U
#define N1_SLOT_ISSUE    0x18U
#define N1_SLOT_TOTAL    0x1bU
#define N1_SLOT_ADDR     0x1eU /* data VA (loads/stores) or branch target */
#define N1_SLOT_XLAT     0x27U
#define N1_SLOT_PA       0x2aU
#define N1_SLOT_DS       0x33U
#define N1_SLOT_TS       0x37U
#define N1_SLOT_END      0x3fU
/* Payload bytes the slots have room for. */
#define N1_EVENTS_SIZE   2U
#define N1_DS_SIZE       1U

/* Slot of each packet (offset, size with header). */
static const struct {
        uint8_t off, len;
} n1_slots[_P_MAX] = {
        [P_PC]    = { N1_SLOT_PC, 9 },
        [P_CTX]   = { N1_SLOT_CONTEXT, 5 },
        [P_OP]    = { N1_SLOT_OP, 2 },
        [P_EV]    = { N1_SLOT_EVENTS, 1 + N1_EVENTS_SIZE },
        [P_ISSUE] = { N1_SLOT_ISSUE, 3 },
        [P_TOT]   = { N1_SLOT_TOTAL, 3 },
        [P_TGT]   = { N1_SLOT_ADDR, 9 },
        [P_VA]    = { N1_SLOT_ADDR, 9 },
        [P_PA]    = { N1_SLOT_PA, 9 },
        [P_XLAT]  = { N1_SLOT_XLAT, 3 },
        [P_DS]    = { N1_SLOT_DS, 1 + N1_DS_SIZE },
};

/* Each slot ends where the next begins (or at a zero gap), and the
 * terminator closes the 64-byte record. */
static_assert(N1_SLOT_PC + 9 <= N1_SLOT_CONTEXT, "PC slot");
static_assert(N1_SLOT_CONTEXT + 5 == N1_SLOT_OP, "CONTEXT slot");
static_assert(N1_SLOT_OP + 2 == N1_SLOT_EVENTS, "OP slot");
static_assert(N1_SLOT_EVENTS + 1 + N1_EVENTS_SIZE == N1_SLOT_ISSUE, "EV slot");
static_assert(N1_SLOT_ISSUE + 3 == N1_SLOT_TOTAL, "ISSUE slot");
static_assert(N1_SLOT_TOTAL + 3 == N1_SLOT_ADDR, "TOT slot");
static_assert(N1_SLOT_ADDR + 9 == N1_SLOT_XLAT, "VA/TGT slot");
static_assert(N1_SLOT_XLAT + 3 == N1_SLOT_PA, "XLAT slot");
static_assert(N1_SLOT_PA + 9 == N1_SLOT_DS, "PA slot");
static_assert(N1_SLOT_DS + 1 + N1_DS_SIZE <= N1_SLOT_TS, "DS slot");
static_assert(N1_SLOT_TS + 9 == SPEGEN_PADDED_RECORD, "TS slot");
static_assert(N1_SLOT_END + 1 == SPEGEN_PADDED_RECORD, "END slot");

static size_t encode_pkt(const struct spegen_record *r, enum pkt p, uint8_t *buf) {
        switch (p) {
        case P_PC:
                if (!(r->has & SPEGEN_HAS_PC))
                        return 0;
                return spe_enc_address(buf, SPE_ENC_ADDR_PC, spe_enc_ip_payload(r->pc, r->el, r->ns),
                                       r->ext & SPEGEN_EXT_PC);
        case P_TGT:
                if (!(r->has & SPEGEN_HAS_TGT))
                        return 0;
                return spe_enc_address(buf, SPE_ENC_ADDR_TGT, spe_enc_ip_payload(r->tgt, r->el, r->ns),
                                       r->ext & SPEGEN_EXT_TGT);
        case P_VA:
                if (!(r->has & SPEGEN_HAS_VA))
                        return 0;
                return spe_enc_address(buf, SPE_ENC_ADDR_VA, r->va, r->ext & SPEGEN_EXT_VA);
        case P_PA:
                if (!(r->has & SPEGEN_HAS_PA))
                        return 0;
                return spe_enc_address(buf, SPE_ENC_ADDR_PA,
                                       spe_enc_pa_payload(r->pa, r->pa_ns, r->pa_ch, r->pa_pat),
                                       r->ext & SPEGEN_EXT_PA);
        case P_CTX:
                if (!(r->has & SPEGEN_HAS_CONTEXT))
                        return 0;
                return spe_enc_context(buf, r->context_idx, r->context);
        case P_OP:
                if (!(r->has & SPEGEN_HAS_OP))
                        return 0;
                return spe_enc_op_type(buf, r->op_class, r->op_subclass);
        case P_EV:
                if (!(r->has & SPEGEN_HAS_EVENTS))
                        return 0;
                return spe_enc_events(buf, r->events, r->events_size);
        case P_ISSUE:
                if (!(r->has & SPEGEN_HAS_ISSUE))
                        return 0;
                return spe_enc_counter(buf, SPE_ENC_CNT_ISSUE, r->issue_lat, r->ext & SPEGEN_EXT_ISSUE);
        case P_TOT:
                if (!(r->has & SPEGEN_HAS_TOT))
                        return 0;
                return spe_enc_counter(buf, SPE_ENC_CNT_TOTAL, r->tot_lat, r->ext & SPEGEN_EXT_TOT);
        case P_XLAT:
                if (!(r->has & SPEGEN_HAS_XLAT))
                        return 0;
                return spe_enc_counter(buf, SPE_ENC_CNT_XLAT, r->xlat_lat, r->ext & SPEGEN_EXT_XLAT);
        case P_DS:
                if (!(r->has & SPEGEN_HAS_DS))
                        return 0;
                return spe_enc_data_source(buf, r->data_source, r->ds_size);
        default:
                return 0;
        }
}

#define RECORD_BUF_MAX (_P_MAX * SPE_ENC_MAX_PKT + SPE_ENC_MAX_PKT)
static_assert(RECORD_BUF_MAX >= SPEGEN_PADDED_RECORD, "record buffer");

/* Whether r, with its packets in `order`, can be written in the N1 fixed
 * slots: PC present, short headers only, the normal N1 order, events with
 * a 2-byte payload, a data source that fits one byte (the slot always
 * holds a 1-byte payload), not both a branch target and a data VA (they
 * share a slot). */
static bool fits_n1_slots(const struct spegen_record *r, const uint8_t *order) {
        if (!(r->has & SPEGEN_HAS_PC) || r->ext != 0)
                return false;
        if (memcmp(order, n1_order, sizeof(n1_order)) != 0)
                return false;
        if ((r->has & SPEGEN_HAS_EVENTS) && (r->events_size != N1_EVENTS_SIZE || r->events > UINT16_MAX))
                return false;
        if ((r->has & SPEGEN_HAS_DS) && r->data_source > UINT8_MAX)
                return false;
        if ((r->has & SPEGEN_HAS_TGT) && (r->has & SPEGEN_HAS_VA))
                return false;
        if ((r->has & SPEGEN_HAS_CONTEXT) && r->context_idx > SPE_ENC_CONTEXT_EL2)
                return false;
        return true;
}

/* Encode r (which fits_n1_slots(), with ds_size N1_DS_SIZE) into the N1
 * fixed slots of a 64-byte record at out; returns SPEGEN_PADDED_RECORD. */
static size_t encode_record_slots(const struct spegen_record *r, uint8_t *out) {
        memset(out, SPE_ENC_HDR_PAD, SPEGEN_PADDED_RECORD);
        for (size_t i = 0; i < _P_MAX; i++) {
                enum pkt p = n1_order[i];
                size_t len = encode_pkt(r, p, out + n1_slots[p].off);

                assert(len == 0 || len == n1_slots[p].len);
                (void) len;
        }
        if (r->has & SPEGEN_HAS_TS)
                spe_enc_timestamp(out + N1_SLOT_TS, r->timestamp);
        else
                spe_enc_end(out + N1_SLOT_END);
        return SPEGEN_PADDED_RECORD;
}

/* Encode r into out; returns its size. In padded mode (SPEGEN_PAD_SPLIT,
 * or a record that does not fit the N1 slots) the record fills 64 bytes:
 * the packets back to back, `pad_rand % (slack + 1)` zero bytes after the
 * first packet, the rest of the slack before the terminator. Returns 0 if
 * the record does not fit in 64 bytes. */
static size_t encode_record(const struct spegen_record *r, const uint8_t *order, bool padded,
                            uint64_t pad_rand, uint8_t *out) {
        uint8_t pkts[_P_MAX][SPE_ENC_MAX_PKT];
        size_t lens[_P_MAX], content = 0, n = 0, term, slack = 0, first_pad = 0;
        uint8_t term_buf[SPE_ENC_MAX_PKT];

        for (size_t i = 0; i < _P_MAX; i++) {
                lens[i] = encode_pkt(r, order[i], pkts[i]);
                content += lens[i];
        }
        term = (r->has & SPEGEN_HAS_TS) ? spe_enc_timestamp(term_buf, r->timestamp) : spe_enc_end(term_buf);
        if (padded) {
                if (content + term > SPEGEN_PADDED_RECORD)
                        return 0;
                slack = SPEGEN_PADDED_RECORD - content - term;
                first_pad = pad_rand % (slack + 1);
        }
        for (size_t i = 0; i < _P_MAX; i++) {
                if (lens[i] == 0)
                        continue;
                memcpy(out + n, pkts[i], lens[i]);
                n += lens[i];
                if (first_pad) {
                        memset(out + n, SPE_ENC_HDR_PAD, first_pad);
                        n += first_pad;
                        slack -= first_pad;
                        first_pad = 0;
                }
        }
        memset(out + n, SPE_ENC_HDR_PAD, slack);
        n += slack;
        memcpy(out + n, term_buf, term);
        return n + term;
}

static uint64_t decoded_pc(const struct spegen_record *r) {
        if (r->ns && (r->el == 1 || r->el == 2))
                return r->pc | KERNEL_TOP_BYTE;
        return r->pc;
}

static void count_pc(struct gen *g, uint64_t pc) {
        uint64_t h = (pc * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - PC_TABLE_BITS);

        for (size_t i = 0; i < PC_TABLE_SIZE; i++) {
                struct pc_count *e = &g->pcs[(h + i) & (PC_TABLE_SIZE - 1)];

                if (e->count == 0 || e->pc == pc) {
                        e->pc = pc;
                        e->count++;
                        /* ties go to the lower PC so the answer does not
                         * depend on table order */
                        if (e->count > g->stats.hottest_count ||
                            (e->count == g->stats.hottest_count && pc < g->stats.hottest_pc)) {
                                g->stats.hottest_count = e->count;
                                g->stats.hottest_pc = pc;
                        }
                        return;
                }
        }
        /* Table full: the scenarios use far fewer distinct PCs. */
        assert(false);
}

static int flush_chunk(struct gen *g, unsigned cpu) {
        struct cpu_stream *s = &g->cpus[cpu];
        int r = 0;

        if (s->len == 0)
                return 0;
        /* AUXTRACE payload sizes are multiples of 8 (perf.data-file-
         * format.txt); pad with SPE padding so the .bin stream and the
         * perf.data buffers hold the same bytes. */
        while (s->len % 8)
                s->buf[s->len++] = SPE_ENC_HDR_PAD;
        if (g->sink->chunk)
                r = g->sink->chunk(g->sink->userdata, cpu, s->buf, s->len, s->chunk_start, s->last_time);
        g->stats.bytes_per_cpu[cpu] += s->len;
        s->chunk_start += s->len;
        s->len = 0;
        return r;
}

static enum spegen_scenario pick_scenario(struct gen *g) {
        uint64_t x = rng_below(&g->rng, g->total_weight);

        for (unsigned i = 0; i < _SPEGEN_SC_MAX; i++)
                if (x < g->cum_weight[i])
                        return i;
        return _SPEGEN_SC_MAX - 1;
}

static int emit_one(struct gen *g) {
        struct spegen_record rec = {
                .events_size = 2,
                .ds_size = 2,
                .pid = SPEGEN_PID,
        };
        uint8_t order[_P_MAX], buf[RECORD_BUF_MAX];
        struct spegen_garbage gb = {};
        struct cpu_stream *s;
        size_t len, need;
        uint64_t pad_rand;
        int r;

        rec.scenario = pick_scenario(g);
        scenario_fns[rec.scenario](g, &rec);
        assert(rec.cpu < g->c->n_cpus);

        g->time += rng_range(&g->rng, 40, 240);
        rec.timestamp = g->time;
        if (g->c->ts)
                rec.has |= SPEGEN_HAS_TS;
        /* Context packets carry the TID (CONTEXTIDR_EL1 with
         * CONFIG_PID_IN_CONTEXTIDR); noise sometimes leaves them out, as a
         * capture without CAP_PERFMON would. no_context drops them all
         * after the draw, so the rest of the stream stays the same. */
        if (!(rec.scenario == SPEGEN_SC_NOISE && rng_pct(&g->rng, 10)) && !g->c->no_context) {
                rec.has |= SPEGEN_HAS_CONTEXT;
                rec.context = rec.tid;
        }

        memcpy(order, n1_order, sizeof(order));
        if (rec.scenario == SPEGEN_SC_NOISE && rng_pct(&g->rng, 30))
                for (size_t i = _P_MAX - 1; i > 0; i--) {
                        size_t j = rng_below(&g->rng, i + 1);
                        uint8_t t = order[i];

                        order[i] = order[j];
                        order[j] = t;
                }
        /* Drawn whatever the layout, so that slots and split runs of one
         * seed hold the same records. */
        pad_rand = rng_next(&g->rng);
        if (g->c->padded && g->c->pad_layout == SPEGEN_PAD_SLOTS && fits_n1_slots(&rec, order)) {
                if (rec.has & SPEGEN_HAS_DS)
                        rec.ds_size = N1_DS_SIZE;
                rec.layout = SPEGEN_LAYOUT_SLOTS;
                len = encode_record_slots(&rec, buf);
        } else {
                rec.layout = g->c->padded ? SPEGEN_LAYOUT_SPLIT : SPEGEN_LAYOUT_PACKED;
                len = encode_record(&rec, order, g->c->padded, pad_rand, buf);
                if (len == 0) {
                        /* Does not fit 64 bytes: fall back to short headers. */
                        rec.ext = 0;
                        len = encode_record(&rec, order, g->c->padded, pad_rand, buf);
                }
        }
        assert(len > 0 && len <= sizeof(buf));

        if (g->c->garbage_rate > 0 && (double) (rng_next(&g->rng) >> 11) * 0x1.0p-53 < g->c->garbage_rate) {
                gb.len = (uint32_t) rng_range(&g->rng, 1, SPEGEN_GARBAGE_MAX);
                for (unsigned i = 0; i < gb.len; i++) {
                        uint64_t v = rng_below(&g->rng, GARBAGE_LO_COUNT + GARBAGE_HI_COUNT);

                        gb.bytes[i] = (uint8_t) (v < GARBAGE_LO_COUNT ? GARBAGE_LO_FIRST + v
                                                                      : GARBAGE_HI_FIRST + v - GARBAGE_LO_COUNT);
                }
        }

        s = &g->cpus[rec.cpu];
        need = gb.len + len;
        if (s->len + need > g->c->chunk_size) {
                r = flush_chunk(g, rec.cpu);
                if (r < 0)
                        return r;
        }

        if (gb.len > 0) {
                gb.cpu = rec.cpu;
                gb.index = s->n_garbage++;
                gb.offset = s->chunk_start + s->len;
                gb.before_record = s->n_records;
                memcpy(s->buf + s->len, gb.bytes, gb.len);
                s->len += gb.len;
                g->stats.garbage_runs_per_cpu[rec.cpu]++;
                g->stats.garbage_bytes_per_cpu[rec.cpu] += gb.len;
                if (g->sink->garbage) {
                        r = g->sink->garbage(g->sink->userdata, &gb);
                        if (r < 0)
                                return r;
                }
        }

        rec.index = s->n_records++;
        rec.offset = s->chunk_start + s->len;
        rec.size = (uint32_t) len;
        memcpy(s->buf + s->len, buf, len);
        s->len += len;
        s->last_time = rec.timestamp;

        g->stats.records++;
        g->stats.records_per_scenario[rec.scenario]++;
        g->stats.records_per_layout[rec.layout]++;
        g->stats.records_per_cpu[rec.cpu]++;
        if (g->stats.first_time == 0)
                g->stats.first_time = rec.timestamp;
        g->stats.last_time = rec.timestamp;
        count_pc(g, decoded_pc(&rec));

        if (g->sink->record) {
                r = g->sink->record(g->sink->userdata, &rec);
                if (r < 0)
                        return r;
        }
        return 0;
}

int spegen_run(const struct spegen_config *c, const struct spegen_sink *sink,
               struct spegen_stats *ret_stats) {
        struct gen *g;
        int r;

        r = spegen_config_check(c);
        if (r < 0)
                return r;

        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->c = c;
        g->sink = sink;
        rng_seed(&g->rng, c->seed);
        g->time = SPEGEN_TIME_START;
        g->pcs = calloc(PC_TABLE_SIZE, sizeof(*g->pcs));
        if (!g->pcs) {
                r = -ENOMEM;
                goto finish;
        }
        for (unsigned i = 0; i < _SPEGEN_SC_MAX; i++) {
                if (c->scenarios & (UINT32_C(1) << i))
                        g->total_weight += scenario_weights[i];
                g->cum_weight[i] = g->total_weight;
        }
        for (unsigned cpu = 0; cpu < c->n_cpus; cpu++) {
                /* +8: room for the alignment padding of the last chunk */
                g->cpus[cpu].buf = malloc(c->chunk_size + 8);
                if (!g->cpus[cpu].buf) {
                        r = -ENOMEM;
                        goto finish;
                }
        }

        for (uint64_t i = 0; i < c->n_records; i++) {
                r = emit_one(g);
                if (r < 0)
                        goto finish;
        }
        for (unsigned cpu = 0; cpu < c->n_cpus; cpu++) {
                r = flush_chunk(g, cpu);
                if (r < 0)
                        goto finish;
        }

        if (ret_stats)
                *ret_stats = g->stats;
        r = 0;
finish:
        for (unsigned cpu = 0; cpu < SPEGEN_MAX_CPUS; cpu++)
                free(g->cpus[cpu].buf);
        free(g->pcs);
        free(g);
        return r;
}
