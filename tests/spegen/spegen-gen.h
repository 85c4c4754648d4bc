/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Scenario-driven, seeded generator of Arm SPE byte streams with a ground
 * truth for every record. Same config (seed included) => identical bytes,
 * identical truth. The generator produces per-CPU streams in chunks made of
 * whole records (perf 6.1 does not join packets across AUXTRACE buffers),
 * each chunk padded with SPE padding to a multiple of 8 bytes so that the
 * concatenated chunks are exactly the per-CPU AUX stream.
 *
 * Output goes to callbacks (struct spegen_sink) so that a 5,000,000-record
 * run never holds more than one chunk per CPU in memory.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum spegen_scenario {
        SPEGEN_SC_FALSE_SHARING,
        SPEGEN_SC_TRUE_SHARING,
        SPEGEN_SC_READ_ONLY,
        SPEGEN_SC_PADDED,
        SPEGEN_SC_DRAM,
        SPEGEN_SC_BRANCHES,
        SPEGEN_SC_KERNEL,
        SPEGEN_SC_REMOTE,
        SPEGEN_SC_EXT_HEADER,
        SPEGEN_SC_NOISE,
        _SPEGEN_SC_MAX,
};

#define SPEGEN_SC_ALL ((UINT32_C(1) << _SPEGEN_SC_MAX) - 1)

#define SPEGEN_MAX_CPUS         64U
#define SPEGEN_PADDED_RECORD    64U
#define SPEGEN_DEFAULT_CHUNK    (4U << 20)
#define SPEGEN_MIN_CHUNK        256U
#define SPEGEN_GARBAGE_MAX      8U
/* First SPE timestamp; side-band records are placed well before it. */
#define SPEGEN_TIME_START       UINT64_C(1000000000)

/* Which packets a record holds (struct spegen_record.has). */
enum {
        SPEGEN_HAS_PC      = 1U << 0,
        SPEGEN_HAS_TGT     = 1U << 1,
        SPEGEN_HAS_VA      = 1U << 2,
        SPEGEN_HAS_PA      = 1U << 3,
        SPEGEN_HAS_TOT     = 1U << 4,
        SPEGEN_HAS_ISSUE   = 1U << 5,
        SPEGEN_HAS_XLAT    = 1U << 6,
        SPEGEN_HAS_EVENTS  = 1U << 7,
        SPEGEN_HAS_OP      = 1U << 8,
        SPEGEN_HAS_DS      = 1U << 9,
        SPEGEN_HAS_CONTEXT = 1U << 10,
        SPEGEN_HAS_TS      = 1U << 11,
};

/* Which Address/Counter packets were written with the 2-byte extended
 * header (struct spegen_record.ext). */
enum {
        SPEGEN_EXT_PC    = 1U << 0,
        SPEGEN_EXT_TGT   = 1U << 1,
        SPEGEN_EXT_VA    = 1U << 2,
        SPEGEN_EXT_PA    = 1U << 3,
        SPEGEN_EXT_TOT   = 1U << 4,
        SPEGEN_EXT_ISSUE = 1U << 5,
        SPEGEN_EXT_XLAT  = 1U << 6,
};

/* How --padded lays a record out in its 64-byte slot. */
enum spegen_pad_layout {
        /* Neoverse N1 fixed slots (quipper's N1 test record): each packet kind at
         * its own offset, absent packets left as 0x00. Records that cannot
         * be written that way (extended headers, shuffled order, 1/4-byte
         * events, ...) fall back to SPEGEN_PAD_SPLIT. */
        SPEGEN_PAD_SLOTS,
        /* Packets back to back, a random share of the slack after the
         * first packet and the rest before the terminator. */
        SPEGEN_PAD_SPLIT,
        _SPEGEN_PAD_MAX,
};

/* How a record was laid out (struct spegen_record.layout). */
enum spegen_record_layout {
        SPEGEN_LAYOUT_PACKED,   /* unpadded: packets back to back */
        SPEGEN_LAYOUT_SPLIT,    /* 64 bytes, SPEGEN_PAD_SPLIT */
        SPEGEN_LAYOUT_SLOTS,    /* 64 bytes, N1 fixed slots */
        _SPEGEN_LAYOUT_MAX,
};

enum spegen_midr_kind {
        SPEGEN_MIDR_N1,
        SPEGEN_MIDR_N2,
        SPEGEN_MIDR_V1,
};

struct spegen_config {
        uint64_t seed;
        uint64_t n_records;
        unsigned n_cpus;          /* 1..SPEGEN_MAX_CPUS */
        uint32_t scenarios;       /* bit mask of enum spegen_scenario */
        bool padded;              /* fixed 64-byte records, N1 style */
        enum spegen_pad_layout pad_layout; /* with padded only */
        bool ts;                  /* TIMESTAMP-terminated, else END */
        bool no_context;          /* no CONTEXT packets (the truth keeps pid/tid) */
        double garbage_rate;      /* probability of a garbage run before a record */
        size_t chunk_size;        /* max AUXTRACE buffer size, >= SPEGEN_MIN_CHUNK */
};

/* The ground truth of one record: exactly what was encoded. */
struct spegen_record {
        unsigned cpu;
        uint64_t index;          /* record number within this CPU's stream */
        uint64_t offset;         /* byte offset of its first byte in the CPU stream */
        uint32_t size;           /* bytes, inner padding and terminator included */
        uint32_t has;            /* SPEGEN_HAS_* */
        uint32_t ext;            /* SPEGEN_EXT_* */
        uint64_t pc;             /* Address idx 0 bits [55:0] */
        uint8_t el;              /* PC (and TGT) exception level */
        bool ns;                 /* PC (and TGT) non-secure bit */
        uint64_t tgt;            /* Address idx 1 bits [55:0] */
        uint64_t va;             /* Address idx 2 full payload, tag byte included */
        uint64_t pa;             /* Address idx 3 bits [55:0] */
        bool pa_ns, pa_ch;
        uint8_t pa_pat;
        uint16_t tot_lat, issue_lat, xlat_lat;
        uint64_t events;
        uint8_t events_size;     /* payload bytes of the Events packet */
        uint8_t op_class;
        uint8_t op_subclass;
        uint16_t data_source;
        uint8_t ds_size;         /* payload bytes of the Data Source packet */
        uint32_t context;
        uint8_t context_idx;     /* 0 = CONTEXTIDR_EL1 (0x64), 1 = EL2 (0x65) */
        uint64_t timestamp;      /* generator time; in the TS packet iff HAS_TS */
        enum spegen_scenario scenario;
        uint32_t pid, tid;       /* the thread that really ran it */
        enum spegen_record_layout layout;
};

/* Bytes that decode as bad packet headers, placed between records. */
struct spegen_garbage {
        unsigned cpu;
        uint64_t index;          /* garbage run number within this CPU */
        uint64_t offset;         /* byte offset in the CPU stream */
        uint32_t len;
        uint64_t before_record;  /* index of the record that follows it */
        uint8_t bytes[SPEGEN_GARBAGE_MAX];
};

struct spegen_thread {
        uint32_t tid;
        unsigned cpu;
        const char *comm;
};

struct spegen_sink {
        void *userdata;
        /* Each may be NULL. A negative return aborts the run with it. */
        int (*record)(void *userdata, const struct spegen_record *r);
        int (*garbage)(void *userdata, const struct spegen_garbage *g);
        /* A finished chunk of CPU `cpu`'s stream, starting at stream
         * offset `offset`; `time` is the last record's generator time. */
        int (*chunk)(void *userdata, unsigned cpu, const uint8_t *data, size_t len,
                     uint64_t offset, uint64_t time);
};

struct spegen_stats {
        uint64_t records;
        uint64_t records_per_scenario[_SPEGEN_SC_MAX];
        uint64_t records_per_layout[_SPEGEN_LAYOUT_MAX];
        uint64_t records_per_cpu[SPEGEN_MAX_CPUS];
        uint64_t bytes_per_cpu[SPEGEN_MAX_CPUS];
        uint64_t garbage_runs_per_cpu[SPEGEN_MAX_CPUS];
        uint64_t garbage_bytes_per_cpu[SPEGEN_MAX_CPUS];
        uint64_t first_time, last_time;
        uint64_t hottest_pc;     /* decoded address (kernel PCs sign-filled) */
        uint64_t hottest_count;
};

void spegen_config_init(struct spegen_config *c);
int spegen_config_check(const struct spegen_config *c);

const char *spegen_scenario_name(enum spegen_scenario s);
/* "slots" / "split"; NULL when out of range. Parsing: -EINVAL otherwise. */
const char *spegen_pad_layout_name(enum spegen_pad_layout l);
int spegen_parse_pad_layout(const char *s, enum spegen_pad_layout *ret);
/* "packed" / "split" / "slots"; NULL when out of range. */
const char *spegen_record_layout_name(enum spegen_record_layout l);
/* "false-sharing,dram" or "all" -> mask. -EINVAL names no scenario. */
int spegen_parse_scenarios(const char *s, uint32_t *ret_mask);

#define SPEGEN_MAX_THREADS 96U
/* The threads (all of pid SPEGEN_PID) the scenarios run on with n_cpus
 * CPUs: tid, pinned CPU, comm. Fills up to max entries of out and returns
 * how many there are. */
size_t spegen_threads(unsigned n_cpus, struct spegen_thread *out, size_t max);
/* NUMA node of a CPU in the fake topology (2 nodes when n_cpus >= 2). */
unsigned spegen_cpu_node(unsigned n_cpus, unsigned cpu);
unsigned spegen_n_nodes(unsigned n_cpus);

uint64_t spegen_midr(enum spegen_midr_kind k);

int spegen_run(const struct spegen_config *c, const struct spegen_sink *sink,
               struct spegen_stats *ret_stats);
