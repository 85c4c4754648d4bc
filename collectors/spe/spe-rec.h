/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Arm SPE record decoder: byte stream -> records (Arm ARM D10 "Statistical
 * Profiling Extension", the profiling record).
 *
 * A record is the packets up to and including an END or TIMESTAMP packet.
 * Padding may appear anywhere; packet order, record size and which packets
 * are present are never assumed. The stream may arrive in chunks of any
 * size: the decoder keeps the record being built and at most one partial
 * packet (< SPE_PKT_MAX_LEN bytes) inside struct spe_decoder, so a record
 * split across chunks decodes exactly as if it had arrived in one piece.
 *
 * Errors (policy, differs from perf on purpose): on an undecodable header
 * byte the decoder skips one byte and resynchronises, like perf. If a record
 * was in progress it is dropped and counted (stats.dropped_records) instead
 * of being emitted half-built: perf emits such partial records, which then
 * pair an op from one sample with addresses from another. The bytes after
 * the garbage up to the next END/TIMESTAMP form a record of their own only
 * if they are well-formed; that tail record carries SPE_REC_F_AFTER_ERROR so
 * consumers may discard it too.
 *
 * An END or TIMESTAMP that arrives with no other packet since the previous
 * record end (e.g. a stray END, or the TIMESTAMP tail of a record whose
 * start was lost) yields no record; it is counted in stats.empty_records.
 *
 * No allocation, no I/O, no locks: one decoder per CPU stream.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spe-pkt.h"

/* ---------------------------------------------------------------------
 * MIDR_EL1 fields (Arm ARM D23 "MIDR_EL1") and the parts whose data source
 * uses the "common" encoding (tools/perf/util/arm-spe.c,
 * common_ds_encoding_cpus[]).
 */
#define SPE_MIDR_IMPL_SHIFT     24
#define SPE_MIDR_IMPL_MASK      0xFFU
#define SPE_MIDR_PART_SHIFT     4
#define SPE_MIDR_PART_MASK      0xFFFU
#define SPE_MIDR_IMPL(m)        ((unsigned) (((m) >> SPE_MIDR_IMPL_SHIFT) & SPE_MIDR_IMPL_MASK))
#define SPE_MIDR_PART(m)        ((unsigned) (((m) >> SPE_MIDR_PART_SHIFT) & SPE_MIDR_PART_MASK))

#define SPE_MIDR_IMPL_ARM       0x41U
#define SPE_MIDR_IMPL_AMPERE    0xC0U

#define SPE_MIDR_PART_NEOVERSE_N1       0xD0CU
#define SPE_MIDR_PART_NEOVERSE_N2       0xD49U
#define SPE_MIDR_PART_NEOVERSE_V1       0xD40U
#define SPE_MIDR_PART_NEOVERSE_V2       0xD4FU
#define SPE_MIDR_PART_CORTEX_A720       0xD81U
#define SPE_MIDR_PART_CORTEX_A725       0xD87U
#define SPE_MIDR_PART_CORTEX_X1C        0xD4CU
#define SPE_MIDR_PART_CORTEX_X3         0xD4EU
#define SPE_MIDR_PART_CORTEX_X925       0xD85U
#define SPE_MIDR_PART_AMPERE1A          0xAC4U

/* Which table turns the raw data-source value into enum spe_data_src. */
enum spe_ds_map {
        SPE_DS_MAP_NONE = 0,    /* unknown CPU: raw value kept, source = SPE_DATA_SRC_UNKNOWN */
        SPE_DS_MAP_COMMON,      /* Neoverse N1/N2/V1/V2 and friends */
        SPE_DS_MAP_AMPERE1A,
};

enum spe_ds_map spe_ds_map_from_midr(uint64_t midr);

/* ---------------------------------------------------------------------
 * Normalised data source.
 */
enum spe_data_src {
        SPE_DATA_SRC_NONE = 0,          /* no data-source packet in the record */
        SPE_DATA_SRC_UNKNOWN,           /* packet present, value not known for this CPU */
        SPE_DATA_SRC_L1D,
        SPE_DATA_SRC_L2,
        SPE_DATA_SRC_PEER_CORE,         /* another core's private cache */
        SPE_DATA_SRC_LOCAL_CLUSTER,     /* cache shared in the local cluster */
        SPE_DATA_SRC_SYS_CACHE,         /* system-level / last-level cache */
        SPE_DATA_SRC_PEER_CLUSTER,      /* cache of another cluster, same chip */
        SPE_DATA_SRC_REMOTE,            /* another socket/chip, any level */
        SPE_DATA_SRC_DRAM,              /* local DRAM */
        _SPE_DATA_SRC_MAX,
};

/* Map a raw value through a table; SPE_DATA_SRC_UNKNOWN when not listed. */
enum spe_data_src spe_data_src_from_raw(enum spe_ds_map map, uint64_t raw);

/* Stable lower-case names for exporters: "none", "unknown", "l1d", "l2",
 * "peer_core", "local_cluster", "sys_cache", "peer_cluster", "remote", "dram". */
const char *spe_data_src_name(enum spe_data_src s);

/* perf c2c peer-snoop scope (tools/perf/util/mem-events.c, c2c_decode_stats(), on the
 * data sources tools/perf/util/arm-spe.c maps to PERF_MEM_SNOOPX_PEER). */
enum spe_peer {
        SPE_PEER_NONE = 0,
        SPE_PEER_LOCAL,         /* PEER_CORE, LOCAL_CLUSTER, PEER_CLUSTER */
        SPE_PEER_REMOTE,        /* REMOTE */
};
const char *spe_peer_name(enum spe_peer p);        /* "none", "local", "remote" */

/* ---------------------------------------------------------------------
 * Operation type, decoded (Arm ARM D10 "Operation Type packet").
 */
enum spe_op_subclass {
        SPE_OP_SUB_UNKNOWN = 0,         /* no op packet, reserved class or unmatched payload */
        /* class OTHER */
        SPE_OP_SUB_OTHER,
        SPE_OP_SUB_SVE_OTHER,
        SPE_OP_SUB_SME_OTHER,
        /* class LDST */
        SPE_OP_SUB_LDST_EXT,            /* atomic / exclusive / acquire-release */
        SPE_OP_SUB_LDST_SIMD_FP,
        SPE_OP_SUB_LDST_GP_REG,
        SPE_OP_SUB_LDST_UNSPEC_REG,
        SPE_OP_SUB_LDST_NV_SYSREG,
        SPE_OP_SUB_LDST_MTE_TAG,
        SPE_OP_SUB_LDST_MEMCPY,
        SPE_OP_SUB_LDST_MEMSET,
        SPE_OP_SUB_LDST_SVE_SME,
        SPE_OP_SUB_LDST_GCS,
        /* class BRANCH */
        SPE_OP_SUB_BRANCH,
        _SPE_OP_SUB_MAX,
};

/* Decoded op flags (struct spe_record.op_flags). */
#define SPE_OPF_LOAD            (1U << 0)
#define SPE_OPF_STORE           (1U << 1)
#define SPE_OPF_ATOMIC          (1U << 2)
#define SPE_OPF_EXCLUSIVE       (1U << 3)
#define SPE_OPF_ACQREL          (1U << 4)
#define SPE_OPF_BRANCH          (1U << 5)
#define SPE_OPF_COND            (1U << 6)       /* conditional branch or conditional select */
#define SPE_OPF_INDIRECT        (1U << 7)
#define SPE_OPF_SVE             (1U << 8)
#define SPE_OPF_SME             (1U << 9)
#define SPE_OPF_SIMD            (1U << 10)      /* Advanced SIMD, or SIMD&FP register ld/st */
#define SPE_OPF_FP              (1U << 11)
#define SPE_OPF_PRED            (1U << 12)      /* SVE predicated */
#define SPE_OPF_SG              (1U << 13)      /* SVE gather/scatter */
#define SPE_OPF_GCS             (1U << 14)
#define SPE_OPF_GCS_COMM        (1U << 15)
#define SPE_OPF_CALL            (1U << 16)      /* branch with link (CRR hint BL) */
#define SPE_OPF_RET             (1U << 17)      /* CRR hint RET */
#define SPE_OPF_CR_OTHER        (1U << 18)      /* other call/return (CRR hint 3) */
#define SPE_OPF_MEMCPY          (1U << 19)
#define SPE_OPF_MEMSET          (1U << 20)
#define SPE_OPF_MTE_TAG         (1U << 21)
#define SPE_OPF_NV_SYSREG       (1U << 22)
#define SPE_OPF_UNSPEC_REG      (1U << 23)

/* Short op names for exporters: "other", "load", "store", "atomic", "branch", "unknown". */
enum spe_op_kind {
        SPE_OP_KIND_UNKNOWN = 0,
        SPE_OP_KIND_OTHER,
        SPE_OP_KIND_LOAD,
        SPE_OP_KIND_STORE,
        SPE_OP_KIND_ATOMIC,
        SPE_OP_KIND_BRANCH,
        _SPE_OP_KIND_MAX,
};

/* ---------------------------------------------------------------------
 * One record.
 */

/* Presence bits (struct spe_record.present). */
#define SPE_REC_PC              (1U << 0)
#define SPE_REC_BR_TGT          (1U << 1)
#define SPE_REC_PBT             (1U << 2)
#define SPE_REC_VA              (1U << 3)
#define SPE_REC_PA              (1U << 4)
#define SPE_REC_LAT_TOTAL       (1U << 5)
#define SPE_REC_LAT_ISSUE       (1U << 6)
#define SPE_REC_LAT_XLAT        (1U << 7)
#define SPE_REC_EVENTS          (1U << 8)
#define SPE_REC_OP              (1U << 9)
#define SPE_REC_SOURCE          (1U << 10)
#define SPE_REC_CONTEXT         (1U << 11)
#define SPE_REC_TIMESTAMP       (1U << 12)

/* Record flags (struct spe_record.flags). */
#define SPE_REC_F_END           (1U << 0)       /* terminated by END (else by TIMESTAMP) */
#define SPE_REC_F_AFTER_ERROR   (1U << 1)       /* first record after skipped garbage */
#define SPE_REC_F_UNKNOWN_PKT   (1U << 2)       /* had address/counter/context packets of unknown index */
#define SPE_REC_F_DUPLICATE     (1U << 3)       /* a packet kind occurred twice; the last one is kept */

/* An instruction address (PC, branch target, previous branch target). */
struct spe_ip {
        uint64_t addr;          /* bits [55:0]; top byte 0xff when ns=1 and el 1/2 (perf rule) */
        uint8_t el;             /* 0..3 */
        uint8_t ns;
        uint8_t nse;
};

struct spe_record {
        struct spe_ip pc;
        struct spe_ip br_tgt;
        struct spe_ip pbt;

        uint64_t va;            /* bits [55:0]; top byte 0xff if [55:52]==0xf, else 0 (tag stripped) */
        uint64_t pa;            /* bits [55:0] */
        uint64_t timestamp;     /* generic timer ticks */
        uint64_t events;        /* SPE_EV_BIT(SPE_EV_*) */
        uint64_t source_raw;    /* data-source payload as recorded */

        uint32_t present;       /* SPE_REC_* */
        uint32_t flags;         /* SPE_REC_F_* */
        uint32_t op_flags;      /* SPE_OPF_* */
        uint32_t context;       /* CONTEXTIDR_ELx, the TID with CONFIG_PID_IN_CONTEXTIDR */
        uint32_t cpu;           /* from the decoder */

        uint16_t lat_total;     /* cycles */
        uint16_t lat_issue;
        uint16_t lat_xlat;

        uint8_t va_tag;         /* data VA top byte (TBI / MTE logical tag) */
        uint8_t pa_ns, pa_ch, pa_pat, pa_nse;

        uint8_t op_class;       /* SPE_OP_CLASS_* (valid with SPE_REC_OP) */
        uint8_t op_subclass;    /* enum spe_op_subclass */
        uint8_t op_raw;         /* op-type payload */
        uint8_t op_evl_bits_log2; /* SVE/SME: log2 of EVL/ETS in bits (e.g. 7 for 128), 0 if none */

        uint8_t source;         /* enum spe_data_src */
        uint8_t context_el;     /* 1 or 2: which CONTEXTIDR */
};

/* Op kind of a record (load/store/atomic/branch/other/unknown). */
enum spe_op_kind spe_record_op_kind(const struct spe_record *rec);
/* "other", "load", "store", "atomic", "branch", "unknown" */
const char *spe_op_kind_name(enum spe_op_kind k);
/* Subclass names in perf style without the LD/ST prefix: "GP-REG", "SIMD-FP", "SVE-OTHER"... */
const char *spe_op_subclass_name(enum spe_op_subclass s);
/* Short op description for exporters: "load", "store", "atomic", "branch", "other", "unknown". */
const char *spe_op_name(const struct spe_record *rec);

/*
 * perf c2c's peer classification of the record: only loads (not stores,
 * not atomics' store side) with a data-source packet count; PEER_CORE,
 * LOCAL_CLUSTER and PEER_CLUSTER are local peers, REMOTE a remote peer
 * (perf mem-events.c c2c_decode_stats with arm_spe__synth_data_source_common).
 */
enum spe_peer spe_record_peer(const struct spe_record *rec);

/* The scope of a load served from `s` (the rule above, for callers that already know it is a load). */
static inline enum spe_peer spe_data_src_peer(enum spe_data_src s) {
        switch (s) {
        case SPE_DATA_SRC_PEER_CORE:
        case SPE_DATA_SRC_LOCAL_CLUSTER:
        case SPE_DATA_SRC_PEER_CLUSTER:
                return SPE_PEER_LOCAL;
        case SPE_DATA_SRC_REMOTE:
                return SPE_PEER_REMOTE;
        default:
                return SPE_PEER_NONE;
        }
}

/* Event bit name in perf's -D spelling ("RETIRED", "L1D-REFILL", ...), NULL if none. */
const char *spe_event_name(unsigned bit);

/* ---------------------------------------------------------------------
 * The decoder.
 */
struct spe_decoder_stats {
        uint64_t bytes;                 /* consumed (incl. padding and skipped bytes) */
        uint64_t packets;               /* decoded packets, padding excluded */
        uint64_t records;               /* emitted */
        uint64_t bad_header;            /* bytes skipped: unknown header */
        uint64_t bad_ext_header;        /* bytes skipped: bad extended header */
        uint64_t dropped_records;       /* partial records discarded after garbage */
        uint64_t flushed_bytes;         /* partial packet bytes discarded by flush/reset */
        uint64_t flushed_records;       /* unterminated records discarded by flush/reset */
        uint64_t unknown_index;         /* address/counter/context packets with undefined index */
        uint64_t reserved_op;           /* op-type packets of the reserved class 3 */
        uint64_t duplicate_pkts;        /* same packet kind twice in one record */
        uint64_t align_pkts;            /* "20 00" alignment pseudo packets */
        uint64_t empty_records;         /* END/TIMESTAMP with no packet before it: no record */
};

struct spe_decoder {
        /* configuration (set by spe_decoder_init) */
        uint64_t midr;
        uint32_t cpu;
        uint8_t ds_map;                 /* enum spe_ds_map */
        const uint8_t *ds_table;        /* raw value (< 16) -> enum spe_data_src, NULL if none */

        /* state */
        bool in_record;                 /* cur holds at least one packet */
        bool after_error;               /* garbage was skipped since the last record */
        uint8_t carry_len;              /* bytes of a packet split across chunks */
        uint8_t carry[SPE_PKT_MAX_LEN];
        struct spe_record cur;

        struct spe_decoder_stats stats;
};

/* Set up for one CPU's stream; midr selects the data-source table. */
void spe_decoder_init(struct spe_decoder *d, uint32_t cpu, uint64_t midr);

/*
 * Decode from buf[0..len) until one record completes.
 * Returns 1 with *ret_rec filled when a record ended; *ret_consumed says how
 * many bytes of buf were used (call again with the rest).
 * Returns 0 when all of buf was consumed without completing a record
 * (*ret_consumed == len); a trailing partial packet/record is kept.
 * Returns -EINVAL for a NULL decoder or a NULL buf with len > 0.
 */
int spe_decoder_next(struct spe_decoder *d, const uint8_t *buf, size_t len,
                     size_t *ret_consumed, struct spe_record *ret_rec);

/*
 * Batch form for the hot loop: decodes all of buf[0..len), writing up to
 * max records into recs. Returns the number of records written and sets
 * *ret_consumed (< len only when recs filled up: call again with the rest).
 * recs[n..max) may be used as scratch space (records are built in place).
 */
size_t spe_decoder_decode(struct spe_decoder *d, const uint8_t *buf, size_t len,
                          struct spe_record *recs, size_t max, size_t *ret_consumed);

/*
 * A discontinuity (end of stream, PERF_RECORD_AUX TRUNCATED/PARTIAL, lost
 * data): discard the partial packet and any unterminated record, counting
 * them in stats.flushed_*. Configuration and stats are kept.
 */
void spe_decoder_reset(struct spe_decoder *d);

/* Sum of the error counters (bad headers, dropped and flushed records). */
uint64_t spe_decoder_errors(const struct spe_decoder *d);
