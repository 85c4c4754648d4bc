/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Arm SPE record decoder: packets -> records. See spe-rec.h for the
 * contract and the error policy, shared/reference/spe-format.md for the
 * formats. Hot path: one header-table load per packet, payload assembled
 * with one unaligned little-endian load, fields written straight into the
 * caller's record array; no allocation, no I/O.
 */
#include "spe-rec.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "macro.h"

/* Only values below this have a table entry in any data-source encoding we know. */
#define DS_TABLE_SIZE 16U

/* spe-format §7.1, "common" encoding (perf arm_spe__synth_data_source_common). */
static const uint8_t ds_common[DS_TABLE_SIZE] = {
        [0x0] = SPE_SOURCE_L1D,          [0x1] = SPE_SOURCE_UNKNOWN,
        [0x2] = SPE_SOURCE_UNKNOWN,      [0x3] = SPE_SOURCE_UNKNOWN,
        [0x4] = SPE_SOURCE_UNKNOWN,      [0x5] = SPE_SOURCE_UNKNOWN,
        [0x6] = SPE_SOURCE_UNKNOWN,      [0x7] = SPE_SOURCE_UNKNOWN,
        [SPE_DS_COMMON_L2]              = SPE_SOURCE_L2,
        [SPE_DS_COMMON_PEER_CORE]       = SPE_SOURCE_PEER_CORE,
        [SPE_DS_COMMON_LOCAL_CLUSTER]   = SPE_SOURCE_LOCAL_CLUSTER,
        [SPE_DS_COMMON_SYS_CACHE]       = SPE_SOURCE_SYS_CACHE,
        [SPE_DS_COMMON_PEER_CLUSTER]    = SPE_SOURCE_PEER_CLUSTER,
        [SPE_DS_COMMON_REMOTE]          = SPE_SOURCE_REMOTE,
        [SPE_DS_COMMON_DRAM]            = SPE_SOURCE_DRAM,
        [0xF] = SPE_SOURCE_UNKNOWN,
};

/* spe-format §7.1, AmpereOne: perf remaps these onto the common meaning. */
static const uint8_t ds_ampere1a[DS_TABLE_SIZE] = {
        [SPE_DS_AMPERE_LOCAL_CHIP_CACHE]  = SPE_SOURCE_PEER_CORE,
        [0x1] = SPE_SOURCE_UNKNOWN,      [0x2] = SPE_SOURCE_UNKNOWN,
        [SPE_DS_AMPERE_SLC]               = SPE_SOURCE_SYS_CACHE,
        [0x4] = SPE_SOURCE_UNKNOWN,
        [SPE_DS_AMPERE_REMOTE_CHIP_CACHE] = SPE_SOURCE_REMOTE,
        [0x6] = SPE_SOURCE_UNKNOWN,
        [SPE_DS_AMPERE_DDR]               = SPE_SOURCE_DRAM,
        [SPE_DS_AMPERE_L1D]               = SPE_SOURCE_L1D,
        [SPE_DS_AMPERE_L2D]               = SPE_SOURCE_L2,
        [0xA] = SPE_SOURCE_UNKNOWN,      [0xB] = SPE_SOURCE_UNKNOWN,
        [0xC] = SPE_SOURCE_UNKNOWN,      [0xD] = SPE_SOURCE_UNKNOWN,
        [0xE] = SPE_SOURCE_UNKNOWN,      [0xF] = SPE_SOURCE_UNKNOWN,
};

enum spe_ds_map spe_ds_map_from_midr(uint64_t midr) {
        unsigned part = SPE_MIDR_PART(midr);

        switch (SPE_MIDR_IMPL(midr)) {
        case SPE_MIDR_IMPL_ARM:
                switch (part) {
                case SPE_MIDR_PART_NEOVERSE_N1:
                case SPE_MIDR_PART_NEOVERSE_N2:
                case SPE_MIDR_PART_NEOVERSE_V1:
                case SPE_MIDR_PART_NEOVERSE_V2:
                case SPE_MIDR_PART_CORTEX_A720:
                case SPE_MIDR_PART_CORTEX_A725:
                case SPE_MIDR_PART_CORTEX_X1C:
                case SPE_MIDR_PART_CORTEX_X3:
                case SPE_MIDR_PART_CORTEX_X925:
                        return SPE_DS_MAP_COMMON;
                default:
                        return SPE_DS_MAP_NONE;
                }
        case SPE_MIDR_IMPL_AMPERE:
                return part == SPE_MIDR_PART_AMPERE1A ? SPE_DS_MAP_AMPERE1A : SPE_DS_MAP_NONE;
        default:
                return SPE_DS_MAP_NONE;
        }
}

static const uint8_t *ds_table_of(enum spe_ds_map map) {
        switch (map) {
        case SPE_DS_MAP_COMMON:
                return ds_common;
        case SPE_DS_MAP_AMPERE1A:
                return ds_ampere1a;
        default:
                return NULL;
        }
}

static inline uint8_t ds_lookup(const uint8_t *table, uint64_t raw) {
        if (!table || raw >= DS_TABLE_SIZE)
                return SPE_SOURCE_UNKNOWN;
        return table[raw];
}

enum spe_source spe_source_from_raw(enum spe_ds_map map, uint64_t raw) {
        return (enum spe_source) ds_lookup(ds_table_of(map), raw);
}

/* Entry i of a name table, or fallback when i is out of range or unnamed. */
static const char *table_name(const char *const *table, size_t n, unsigned i, const char *fallback) {
        return i < n && table[i] ? table[i] : fallback;
}

static const char *const source_names[_SPE_SOURCE_MAX] = {
        [SPE_SOURCE_NONE]               = "none",
        [SPE_SOURCE_UNKNOWN]            = "unknown",
        [SPE_SOURCE_L1D]                = "l1d",
        [SPE_SOURCE_L2]                 = "l2",
        [SPE_SOURCE_PEER_CORE]          = "peer_core",
        [SPE_SOURCE_LOCAL_CLUSTER]      = "local_cluster",
        [SPE_SOURCE_SYS_CACHE]          = "sys_cache",
        [SPE_SOURCE_PEER_CLUSTER]       = "peer_cluster",
        [SPE_SOURCE_REMOTE]             = "remote",
        [SPE_SOURCE_DRAM]               = "dram",
};

const char *spe_source_name(enum spe_source s) {
        return table_name(source_names, ELEMENTSOF(source_names), (unsigned) s, "unknown");
}

const char *spe_peer_name(enum spe_peer p) {
        switch (p) {
        case SPE_PEER_LOCAL:
                return "local";
        case SPE_PEER_REMOTE:
                return "remote";
        default:
                return "none";
        }
}

enum spe_peer spe_record_peer(const struct spe_record *r) {
        if (!r || !(r->present & SPE_REC_SOURCE) || !(r->op_flags & SPE_OPF_LOAD))
                return SPE_PEER_NONE;

        switch (r->source) {
        case SPE_SOURCE_PEER_CORE:
        case SPE_SOURCE_LOCAL_CLUSTER:
        case SPE_SOURCE_PEER_CLUSTER:
                return SPE_PEER_LOCAL;
        case SPE_SOURCE_REMOTE:
                return SPE_PEER_REMOTE;
        default:
                return SPE_PEER_NONE;
        }
}

enum spe_op_kind spe_record_op_kind(const struct spe_record *r) {
        if (!r || !(r->present & SPE_REC_OP))
                return SPE_OP_KIND_UNKNOWN;

        switch (r->op_class) {
        case SPE_OP_CLASS_OTHER:
                return SPE_OP_KIND_OTHER;
        case SPE_OP_CLASS_BRANCH:
                return SPE_OP_KIND_BRANCH;
        case SPE_OP_CLASS_LDST:
                if (r->op_flags & SPE_OPF_ATOMIC)
                        return SPE_OP_KIND_ATOMIC;
                return (r->op_flags & SPE_OPF_STORE) ? SPE_OP_KIND_STORE : SPE_OP_KIND_LOAD;
        default:
                return SPE_OP_KIND_UNKNOWN;
        }
}

static const char *const op_kind_names[_SPE_OP_KIND_MAX] = {
        [SPE_OP_KIND_UNKNOWN]   = "unknown",
        [SPE_OP_KIND_OTHER]     = "other",
        [SPE_OP_KIND_LOAD]      = "load",
        [SPE_OP_KIND_STORE]     = "store",
        [SPE_OP_KIND_ATOMIC]    = "atomic",
        [SPE_OP_KIND_BRANCH]    = "branch",
};

const char *spe_op_kind_name(enum spe_op_kind k) {
        return table_name(op_kind_names, ELEMENTSOF(op_kind_names), (unsigned) k, "unknown");
}

const char *spe_op_name(const struct spe_record *r) {
        return spe_op_kind_name(spe_record_op_kind(r));
}

static const char *const op_subclass_names[_SPE_OP_SUB_MAX] = {
        [SPE_OP_SUB_UNKNOWN]            = "UNKNOWN",
        [SPE_OP_SUB_OTHER]              = "OTHER",
        [SPE_OP_SUB_SVE_OTHER]          = "SVE-OTHER",
        [SPE_OP_SUB_SME_OTHER]          = "SME-OTHER",
        [SPE_OP_SUB_LDST_EXT]           = "AT-EXCL-AR",
        [SPE_OP_SUB_LDST_SIMD_FP]       = "SIMD-FP",
        [SPE_OP_SUB_LDST_GP_REG]        = "GP-REG",
        [SPE_OP_SUB_LDST_UNSPEC_REG]    = "UNSPEC-REG",
        [SPE_OP_SUB_LDST_NV_SYSREG]     = "NV-SYSREG",
        [SPE_OP_SUB_LDST_MTE_TAG]       = "MTE-TAG",
        [SPE_OP_SUB_LDST_MEMCPY]        = "MEMCPY",
        [SPE_OP_SUB_LDST_MEMSET]        = "MEMSET",
        [SPE_OP_SUB_LDST_SVE_SME]       = "SVE-SME-REG",
        [SPE_OP_SUB_LDST_GCS]           = "GCS",
        [SPE_OP_SUB_BRANCH]             = "B",
};

const char *spe_op_subclass_name(enum spe_op_subclass s) {
        return table_name(op_subclass_names, ELEMENTSOF(op_subclass_names), (unsigned) s, "UNKNOWN");
}

/* perf's -D spelling (arm-spe-pkt-decoder.c common_ev_strings). */
static const char *const event_names[] = {
        [SPE_EV_EXCEPTION_GEN]          = "EXCEPTION-GEN",
        [SPE_EV_RETIRED]                = "RETIRED",
        [SPE_EV_L1D_ACCESS]             = "L1D-ACCESS",
        [SPE_EV_L1D_REFILL]             = "L1D-REFILL",
        [SPE_EV_TLB_ACCESS]             = "TLB-ACCESS",
        [SPE_EV_TLB_WALK]               = "TLB-REFILL",
        [SPE_EV_NOT_TAKEN]              = "NOT-TAKEN",
        [SPE_EV_MISPRED]                = "MISPRED",
        [SPE_EV_LLC_ACCESS]             = "LLC-ACCESS",
        [SPE_EV_LLC_MISS]               = "LLC-REFILL",
        [SPE_EV_REMOTE_ACCESS]          = "REMOTE-ACCESS",
        [SPE_EV_ALIGNMENT]              = "ALIGNMENT",
        [SPE_EV_TXN]                    = "TXN",
        [SPE_EV_SVE_PARTIAL_PRED]       = "SVE-PARTIAL-PRED",
        [SPE_EV_SVE_EMPTY_PRED]         = "SVE-EMPTY-PRED",
        [SPE_EV_L2D_ACCESS]             = "L2D-ACCESS",
        [SPE_EV_L2D_MISS]               = "L2D-MISS",
        [SPE_EV_CACHE_DATA_MODIFIED]    = "HITM",
        [SPE_EV_RECENTLY_FETCHED]       = "LFB",
        [SPE_EV_DATA_SNOOPED]           = "SNOOPED",
        [SPE_EV_STREAMING_SVE]          = "STREAMING-SVE",
        [SPE_EV_SMCU]                   = "SMCU",
};

const char *spe_event_name(unsigned bit) {
        return table_name(event_names, ELEMENTSOF(event_names), bit, NULL);
}

/* ---------------------------------------------------------------------
 * Field decoding.
 */

/* log2 of 32 << n: SVE effective vector length code (spe-format §6.1/6.2). */
#define SVE_EVL_LOG2_BASE 5U
/* log2 of 128 << m: SME effective tile size code. */
#define SME_ETS_LOG2_BASE 7U

static void decode_op(struct spe_record *r, unsigned cls, uint8_t v) {
        uint8_t sub = SPE_OP_SUB_UNKNOWN, evl = 0;
        uint32_t f = 0;

        switch (cls) {
        case SPE_OP_CLASS_OTHER:
                if ((v & SPE_OP_OTHER_SUB_MASK) == SPE_OP_OTHER_SUB_OTHER) {
                        sub = SPE_OP_SUB_OTHER;
                        if (v & SPE_OP_OTHER_COND)
                                f |= SPE_OPF_COND;
                        if (v & SPE_OP_OTHER_FP)
                                f |= SPE_OPF_FP;
                        if (v & SPE_OP_OTHER_ASE)
                                f |= SPE_OPF_SIMD;
                } else if ((v & SPE_OP_OTHER_SVE_MASK) == SPE_OP_OTHER_SVE) {
                        sub = SPE_OP_SUB_SVE_OTHER;
                        f |= SPE_OPF_SVE;
                        if (v & SPE_OP_OTHER_FP)
                                f |= SPE_OPF_FP;
                        if (v & SPE_OP_OTHER_PRED)
                                f |= SPE_OPF_PRED;
                        evl = (uint8_t) (SVE_EVL_LOG2_BASE + ((v >> SPE_OP_EVL_SHIFT) & SPE_OP_EVL_MASK));
                } else if ((v & SPE_OP_OTHER_SVE_MASK) == SPE_OP_OTHER_SME) {
                        sub = SPE_OP_SUB_SME_OTHER;
                        f |= SPE_OPF_SME;
                        if (v & SPE_OP_OTHER_FP)
                                f |= SPE_OPF_FP;
                        evl = (uint8_t) (SME_ETS_LOG2_BASE +
                                         ((((v >> SPE_OP_EVL_SHIFT) & SPE_OP_EVL_MASK) << 1) |
                                          ((v & SPE_OP_OTHER_SME_ETS_LOW) ? 1U : 0U)));
                }
                break;

        case SPE_OP_CLASS_LDST:
                f |= (v & SPE_OP_LDST_ST) ? SPE_OPF_STORE : SPE_OPF_LOAD;
                /* Linux perf's evaluation order (2025-11 series); the tests do not overlap. */
                if ((v & SPE_OP_LDST_EXT_MASK) == SPE_OP_LDST_EXT) {
                        sub = SPE_OP_SUB_LDST_EXT;
                        if (v & SPE_OP_LDST_AT)
                                f |= SPE_OPF_ATOMIC;
                        if (v & SPE_OP_LDST_EXCL)
                                f |= SPE_OPF_EXCLUSIVE;
                        if (v & SPE_OP_LDST_AR)
                                f |= SPE_OPF_ACQREL;
                } else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_SIMD_FP) {
                        sub = SPE_OP_SUB_LDST_SIMD_FP;
                        f |= SPE_OPF_SIMD;
                } else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_GP_REG) {
                        sub = SPE_OP_SUB_LDST_GP_REG;
                } else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_UNSPEC_REG) {
                        sub = SPE_OP_SUB_LDST_UNSPEC_REG;
                        f |= SPE_OPF_UNSPEC_REG;
                } else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_NV_SYSREG) {
                        sub = SPE_OP_SUB_LDST_NV_SYSREG;
                        f |= SPE_OPF_NV_SYSREG;
                } else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_MTE_TAG) {
                        sub = SPE_OP_SUB_LDST_MTE_TAG;
                        f |= SPE_OPF_MTE_TAG;
                } else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_MEMCPY) {
                        sub = SPE_OP_SUB_LDST_MEMCPY;
                        f |= SPE_OPF_MEMCPY;
                } else if ((v & SPE_OP_LDST_MEMSET_MASK) == SPE_OP_LDST_MEMSET) {
                        sub = SPE_OP_SUB_LDST_MEMSET;
                        f |= SPE_OPF_MEMSET;
                } else if ((v & SPE_OP_LDST_SVE_MASK) == SPE_OP_LDST_SVE) {
                        sub = SPE_OP_SUB_LDST_SVE_SME;
                        f |= SPE_OPF_SVE;
                        if (v & SPE_OP_LDST_SVE_PRED)
                                f |= SPE_OPF_PRED;
                        if (v & SPE_OP_LDST_SVE_SG)
                                f |= SPE_OPF_SG;
                        evl = (uint8_t) (SVE_EVL_LOG2_BASE + ((v >> SPE_OP_EVL_SHIFT) & SPE_OP_EVL_MASK));
                } else if ((v & SPE_OP_LDST_GCS_MASK) == SPE_OP_LDST_GCS) {
                        sub = SPE_OP_SUB_LDST_GCS;
                        f |= SPE_OPF_GCS;
                        if (v & SPE_OP_LDST_GCS_COMM)
                                f |= SPE_OPF_GCS_COMM;
                }
                break;

        case SPE_OP_CLASS_BRANCH:
                sub = SPE_OP_SUB_BRANCH;
                f |= SPE_OPF_BRANCH;
                if (v & SPE_OP_BR_COND)
                        f |= SPE_OPF_COND;
                if (v & SPE_OP_BR_IND)
                        f |= SPE_OPF_INDIRECT;
                if (v & SPE_OP_BR_GCS)
                        f |= SPE_OPF_GCS;
                switch ((v >> SPE_OP_BR_CR_SHIFT) & SPE_OP_BR_CR_MASK) {
                case SPE_OP_BR_CR_BL:
                        f |= SPE_OPF_CALL;
                        break;
                case SPE_OP_BR_CR_RET:
                        f |= SPE_OPF_RET;
                        break;
                case SPE_OP_BR_CR_OTHER:
                        f |= SPE_OPF_CR_OTHER;
                        break;
                default:
                        break;
                }
                break;

        default:
                break;
        }

        r->op_class = (uint8_t) cls;
        r->op_raw = v;
        r->op_subclass = sub;
        r->op_flags = f;
        r->op_evl_bits_log2 = evl;
}

/* PC / TGT / PBT (perf arm_spe_calc_ip): kernel addresses get their top byte back. */
static inline void decode_ip(struct spe_ip *ip, uint64_t p) {
        unsigned el = SPE_ADDR_EL(p), ns = SPE_ADDR_NS(p);
        uint64_t a = p & SPE_ADDR_VA_MASK;

        if (ns && (el == 1 || el == 2))
                a |= SPE_ADDR_KERNEL_TOP;
        ip->addr = a;
        ip->el = (uint8_t) el;
        ip->ns = (uint8_t) ns;
        ip->nse = (uint8_t) SPE_ADDR_NSE(p);
}

/*
 * Data VA: the top byte is the TBI/MTE tag; bits [55:52] all ones mean a
 * TTBR1 (kernel) address, so perf sign-fills the top byte (arm_spe_calc_ip,
 * Documentation/arm64/memory.rst).
 */
static inline uint64_t decode_va(uint64_t p) {
        uint64_t a = p & SPE_ADDR_VA_MASK;

        if (((a >> SPE_ADDR_VA_KERNEL_SHIFT) & SPE_ADDR_VA_KERNEL_MASK) == SPE_ADDR_VA_KERNEL_MASK)
                a |= SPE_ADDR_KERNEL_TOP;
        return a;
}

static inline void rec_init(const struct spe_decoder *d, struct spe_record *r) {
        memset(r, 0, sizeof(*r));
        r->cpu = d->cpu;
}

/* Mark a field present; a second packet of the same kind is counted and wins. */
static inline void set_present(struct spe_decoder *d, struct spe_record *r, uint32_t bit) {
        if (_unlikely_(r->present & bit)) {
                d->stats.duplicate_pkts++;
                r->flags |= SPE_REC_F_DUPLICATE;
        }
        r->present |= bit;
}

static inline void unknown_index(struct spe_decoder *d, struct spe_record *r) {
        d->stats.unknown_index++;
        r->flags |= SPE_REC_F_UNKNOWN_PKT;
}

/*
 * One setter per packet kind, shared by the generic path (apply_pkt) and
 * the hot loop, where the index is a constant and the switches fold away.
 */
static inline void f_address(struct spe_decoder *d, struct spe_record *r, unsigned index, uint64_t v) {
        switch (index) {
        case SPE_ADDR_IDX_PC:
                set_present(d, r, SPE_REC_PC);
                decode_ip(&r->pc, v);
                break;
        case SPE_ADDR_IDX_BR_TGT:
                set_present(d, r, SPE_REC_BR_TGT);
                decode_ip(&r->br_tgt, v);
                break;
        case SPE_ADDR_IDX_DATA_VA:
                set_present(d, r, SPE_REC_VA);
                r->va = decode_va(v);
                r->va_tag = (uint8_t) SPE_ADDR_TAG(v);
                break;
        case SPE_ADDR_IDX_DATA_PA:
                set_present(d, r, SPE_REC_PA);
                r->pa = v & SPE_ADDR_VA_MASK;
                r->pa_ns = (uint8_t) SPE_ADDR_NS(v);
                r->pa_ch = (uint8_t) SPE_ADDR_CH(v);
                r->pa_pat = (uint8_t) SPE_ADDR_PAT(v);
                r->pa_nse = (uint8_t) SPE_ADDR_NSE(v);
                break;
        case SPE_ADDR_IDX_PBT:
                set_present(d, r, SPE_REC_PBT);
                decode_ip(&r->pbt, v);
                break;
        default:
                unknown_index(d, r);
                break;
        }
}

static inline void f_counter(struct spe_decoder *d, struct spe_record *r, unsigned index, uint64_t v) {
        uint16_t count = (uint16_t) (v & SPE_CNT_VALUE_MASK);

        switch (index) {
        case SPE_CNT_IDX_TOTAL:
                set_present(d, r, SPE_REC_LAT_TOTAL);
                r->lat_total = count;
                break;
        case SPE_CNT_IDX_ISSUE:
                set_present(d, r, SPE_REC_LAT_ISSUE);
                r->lat_issue = count;
                break;
        case SPE_CNT_IDX_XLAT:
                set_present(d, r, SPE_REC_LAT_XLAT);
                r->lat_xlat = count;
                break;
        default:
                unknown_index(d, r);
                break;
        }
}

static inline void f_events(struct spe_decoder *d, struct spe_record *r, uint64_t v) {
        set_present(d, r, SPE_REC_EVENTS);
        r->events = v;
}

static inline void f_source(struct spe_decoder *d, struct spe_record *r, const uint8_t *table, uint64_t v) {
        set_present(d, r, SPE_REC_SOURCE);
        r->source_raw = v;
        r->source = ds_lookup(table, v);
}

static inline void f_op(struct spe_decoder *d, struct spe_record *r, unsigned cls, uint64_t v) {
        set_present(d, r, SPE_REC_OP);
        if (_unlikely_(cls == SPE_OP_CLASS_RESERVED))
                d->stats.reserved_op++;
        decode_op(r, cls, (uint8_t) v);
}

static inline void f_context(struct spe_decoder *d, struct spe_record *r, unsigned index, uint64_t v) {
        if (_unlikely_(index != SPE_CTX_IDX_EL1 && index != SPE_CTX_IDX_EL2)) {
                unknown_index(d, r);
                return;
        }
        set_present(d, r, SPE_REC_CONTEXT);
        r->context = (uint32_t) v;
        r->context_el = (uint8_t) (index + 1);
}

static inline void f_timestamp(struct spe_decoder *d, struct spe_record *r, uint64_t v) {
        set_present(d, r, SPE_REC_TIMESTAMP);
        r->timestamp = v;
}

/* Apply one decoded packet (generic path); true when it ends the record. */
static bool apply_pkt(struct spe_decoder *d, struct spe_record *r,
                      unsigned type, unsigned index, uint64_t payload) {
        switch (type) {
        case SPE_PKT_ADDRESS:
                f_address(d, r, index, payload);
                return false;
        case SPE_PKT_COUNTER:
                f_counter(d, r, index, payload);
                return false;
        case SPE_PKT_EVENTS:
                f_events(d, r, payload);
                return false;
        case SPE_PKT_DATA_SOURCE:
                f_source(d, r, d->ds_table, payload);
                return false;
        case SPE_PKT_OP_TYPE:
                f_op(d, r, index, payload);
                return false;
        case SPE_PKT_CONTEXT:
                f_context(d, r, index, payload);
                return false;
        case SPE_PKT_TIMESTAMP:
                f_timestamp(d, r, payload);
                return true;
        case SPE_PKT_END:
                r->flags |= SPE_REC_F_END;
                return true;
        default:
                return false;
        }
}

/* Skipped garbage: drop the record in progress (see spe-rec.h for why). */
static inline void on_bad(struct spe_decoder *d, struct spe_record *r, bool *started, int err) {
        if (err == SPE_PKT_ERR_BAD_EXT)
                d->stats.bad_ext_header++;
        else
                d->stats.bad_header++;
        if (*started) {
                d->stats.dropped_records++;
                rec_init(d, r);
                *started = false;
        }
        d->after_error = true;
}

/* Where the batch decoder stands: the record being built is recs[n]. */
struct cursor {
        struct spe_record *recs;
        size_t n, max;
        bool started;           /* recs[n] holds at least one packet */
};

/*
 * A terminator was applied to recs[n]. Returns true when recs is full.
 * A terminator with nothing before it is not a record (spe-rec.h).
 */
static inline bool end_record(struct spe_decoder *d, struct cursor *c, bool was_started) {
        struct spe_record *r = &c->recs[c->n];

        c->started = false;
        if (_unlikely_(!was_started)) {
                d->stats.empty_records++;
                rec_init(d, r);
                return false;
        }
        if (_unlikely_(d->after_error)) {
                r->flags |= SPE_REC_F_AFTER_ERROR;
                d->after_error = false;
        }
        d->stats.records++;
        if (++c->n == c->max)
                return true;
        rec_init(d, &c->recs[c->n]);
        return false;
}

/* Generic path for one non-padding packet; returns true when recs is full. */
static inline bool on_pkt(struct spe_decoder *d, struct cursor *c, const struct spe_pkt *pkt) {
        bool was_started = c->started;

        d->stats.packets++;
        c->started = true;
        if (!apply_pkt(d, &c->recs[c->n], pkt->type, pkt->index, pkt->payload))
                return false;
        return end_record(d, c, was_started);
}

static inline uint16_t ld16(const uint8_t *p) {
        uint16_t v;

        memcpy(&v, p, sizeof(v));
        return le16toh(v);
}

static inline uint32_t ld32(const uint8_t *p) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return le32toh(v);
}

static inline uint64_t ld64(const uint8_t *p) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return le64toh(v);
}

/* First non-padding byte at or after pos (eight bytes at a time while possible). */
static inline size_t skip_pad(const uint8_t *buf, size_t pos, size_t len) {
        while (len - pos >= sizeof(uint64_t)) {
                uint64_t w = ld64(buf + pos);

                if (w)
                        return pos + ((unsigned) __builtin_ctzll(w) >> 3);
                pos += sizeof(uint64_t);
        }
        while (pos < len && buf[pos] == SPE_HDR_PAD)
                pos++;
        return pos;
}

/*
 * Hot-loop dispatch: one kind per header byte, built at compile time from
 * the same classification macros as spe_hdr_table. Each kind has a fixed
 * packet length, so the position advances by a constant after a predicted
 * branch instead of waiting for a table load. K_SLOW covers bad bytes and
 * extended headers, which go through spe_pkt_decode().
 */
enum {
        K_SLOW = 0,
        K_PAD, K_END, K_TS,
        K_EV1, K_EV2, K_EV4, K_EV8,
        K_DS1, K_DS2, K_DS4, K_DS8,
        K_CTX, K_OP,
        K_PC, K_TGT, K_VA, K_PA, K_PBT, K_ADDR_OTHER,
        K_LAT_TOT, K_LAT_ISSUE, K_LAT_XLAT, K_CNT_OTHER,
};

#define K_BY_PLEN(base, plen) ((base) + ((plen) == 1 ? 0 : (plen) == 2 ? 1 : (plen) == 4 ? 2 : 3))
#define K_ADDR(i)                                                                         \
        ((i) == SPE_ADDR_IDX_PC ? K_PC : (i) == SPE_ADDR_IDX_BR_TGT ? K_TGT :             \
         (i) == SPE_ADDR_IDX_DATA_VA ? K_VA : (i) == SPE_ADDR_IDX_DATA_PA ? K_PA :        \
         (i) == SPE_ADDR_IDX_PBT ? K_PBT : K_ADDR_OTHER)
#define K_CNT(i)                                                                          \
        ((i) == SPE_CNT_IDX_TOTAL ? K_LAT_TOT : (i) == SPE_CNT_IDX_ISSUE ? K_LAT_ISSUE :  \
         (i) == SPE_CNT_IDX_XLAT ? K_LAT_XLAT : K_CNT_OTHER)
#define KIND(h)                                                                           \
        (SPE_HDR_TYPE(h) == SPE_PKT_PAD ? K_PAD :                                         \
         SPE_HDR_TYPE(h) == SPE_PKT_END ? K_END :                                         \
         SPE_HDR_TYPE(h) == SPE_PKT_TIMESTAMP ? K_TS :                                    \
         SPE_HDR_TYPE(h) == SPE_PKT_EVENTS ? K_BY_PLEN(K_EV1, SPE_HDR_PLEN(h)) :          \
         SPE_HDR_TYPE(h) == SPE_PKT_DATA_SOURCE ? K_BY_PLEN(K_DS1, SPE_HDR_PLEN(h)) :     \
         SPE_HDR_TYPE(h) == SPE_PKT_CONTEXT ? K_CTX :                                     \
         SPE_HDR_TYPE(h) == SPE_PKT_OP_TYPE ? K_OP :                                      \
         SPE_HDR_TYPE(h) == SPE_PKT_ADDRESS ? K_ADDR(SPE_HDR_INDEX(h)) :                  \
         SPE_HDR_TYPE(h) == SPE_PKT_COUNTER ? K_CNT(SPE_HDR_INDEX(h)) :                   \
         K_SLOW)

#define K1(h)  KIND(h)
#define K4(h)  K1(h), K1((h) + 1), K1((h) + 2), K1((h) + 3)
#define K16(h) K4(h), K4((h) + 4), K4((h) + 8), K4((h) + 12)
#define K64(h) K16(h), K16((h) + 16), K16((h) + 32), K16((h) + 48)

static const uint8_t kind_table[256] = {
        K64(0x00U), K64(0x40U), K64(0x80U), K64(0xC0U),
};

/* Packet lengths the hot loop relies on (spe-format §1): checked at build time. */
_Static_assert(SPE_HDR_PLEN(SPE_HDR_CONTEXT) == 4, "context payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_OP_TYPE) == 1, "op-type payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_ADDRESS) == 8, "address payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_COUNTER) == 2, "counter payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_TIMESTAMP) == 8, "timestamp payload");

size_t spe_decoder_decode(struct spe_decoder *d, const uint8_t *buf, size_t len,
                          struct spe_record *recs, size_t max, size_t *ret_consumed) {
        struct cursor c = { .recs = recs, .max = max };
        const uint8_t *ds_table;
        size_t pos = 0;
        uint64_t npkts = 0;

        if (!d || (!buf && len > 0) || !recs || max == 0) {
                if (ret_consumed)
                        *ret_consumed = 0;
                return 0;
        }

        ds_table = d->ds_table;
        c.started = d->in_record;
        if (c.started)
                recs[0] = d->cur;
        else
                rec_init(d, &recs[0]);

        /* Finish a packet that was split across chunks. */
        if (d->carry_len > 0 && len > 0) {
                uint8_t tmp[2 * SPE_PKT_MAX_LEN];
                size_t take = MIN(len, (size_t) (SPE_PKT_MAX_LEN - d->carry_len));
                struct spe_pkt pkt;
                int k;

                memcpy(tmp, d->carry, d->carry_len);
                memcpy(tmp + d->carry_len, buf, take);
                k = spe_pkt_decode(tmp, d->carry_len + take, &pkt);
                if (k == SPE_PKT_ERR_NEED_MORE) {
                        /* take < len would mean SPE_PKT_MAX_LEN bytes did not suffice: impossible. */
                        memcpy(d->carry + d->carry_len, buf, take);
                        d->carry_len = (uint8_t) (d->carry_len + take);
                        pos = take;
                        goto out;
                }
                if (k < 0) {
                        /*
                         * Only a lone extended prefix can be carried and then
                         * fail (its second byte was bad): skip that one byte
                         * and go on with buf[0].
                         */
                        on_bad(d, &recs[0], &c.started, k);
                        d->carry_len = 0;
                } else {
                        pos = (size_t) k - d->carry_len;
                        d->carry_len = 0;
                        if (pkt.type == SPE_PKT_PAD) {
                                if (pkt.flags & SPE_PKT_F_ALIGN)
                                        d->stats.align_pkts++;
                        } else if (on_pkt(d, &c, &pkt))
                                goto out;
                }
        }

        /*
         * Threaded dispatch (GNU computed goto): every handler ends with its
         * own indirect jump to the next packet's handler, which the branch
         * predictor learns per site; with a fixed length per kind the
         * position never waits for a table load. Measured ~1.1x a plain
         * switch on the benchmark's N1 layout (bench-spe-decode), and ~3.5x
         * the first version that decoded each packet into a struct spe_pkt.
         */
        {
                static const void *const dispatch[] = {
                        [K_SLOW] = &&k_slow, [K_PAD] = &&k_pad, [K_END] = &&k_end, [K_TS] = &&k_ts,
                        [K_EV1] = &&k_ev1, [K_EV2] = &&k_ev2, [K_EV4] = &&k_ev4, [K_EV8] = &&k_ev8,
                        [K_DS1] = &&k_ds1, [K_DS2] = &&k_ds2, [K_DS4] = &&k_ds4, [K_DS8] = &&k_ds8,
                        [K_CTX] = &&k_ctx, [K_OP] = &&k_op,
                        [K_PC] = &&k_pc, [K_TGT] = &&k_tgt, [K_VA] = &&k_va, [K_PA] = &&k_pa,
                        [K_PBT] = &&k_pbt, [K_ADDR_OTHER] = &&k_addr_other,
                        [K_LAT_TOT] = &&k_lat_tot, [K_LAT_ISSUE] = &&k_lat_issue,
                        [K_LAT_XLAT] = &&k_lat_xlat, [K_CNT_OTHER] = &&k_cnt_other,
                };
                const uint8_t *p;

/* Jump to the handler of the packet at pos, or leave when buf is used up. */
#define NEXT()                                                  \
                do {                                            \
                        if (_unlikely_(pos >= len))             \
                                goto out;                       \
                        p = buf + pos;                          \
                        goto *dispatch[kind_table[*p]];         \
                } while (0)

/* A fixed-size packet: bounds check, apply to the record being built, advance. */
#define FIXED(label, size, apply)                               \
        label:                                                  \
                do {                                            \
                        struct spe_record *r = &recs[c.n];      \
                                                                \
                        if (_unlikely_(len - pos < (size)))     \
                                goto short_pkt;                 \
                        apply;                                  \
                        pos += (size);                          \
                        npkts++;                                \
                        c.started = true;                       \
                        NEXT();                                 \
                } while (0)

                NEXT();

                FIXED(k_pc, 9, f_address(d, r, SPE_ADDR_IDX_PC, ld64(p + 1)));
                FIXED(k_tgt, 9, f_address(d, r, SPE_ADDR_IDX_BR_TGT, ld64(p + 1)));
                FIXED(k_va, 9, f_address(d, r, SPE_ADDR_IDX_DATA_VA, ld64(p + 1)));
                FIXED(k_pa, 9, f_address(d, r, SPE_ADDR_IDX_DATA_PA, ld64(p + 1)));
                FIXED(k_pbt, 9, f_address(d, r, SPE_ADDR_IDX_PBT, ld64(p + 1)));
                FIXED(k_addr_other, 9, f_address(d, r, *p & SPE_HDR_IDX3_MASK, ld64(p + 1)));
                FIXED(k_lat_tot, 3, f_counter(d, r, SPE_CNT_IDX_TOTAL, ld16(p + 1)));
                FIXED(k_lat_issue, 3, f_counter(d, r, SPE_CNT_IDX_ISSUE, ld16(p + 1)));
                FIXED(k_lat_xlat, 3, f_counter(d, r, SPE_CNT_IDX_XLAT, ld16(p + 1)));
                FIXED(k_cnt_other, 3, f_counter(d, r, *p & SPE_HDR_IDX3_MASK, ld16(p + 1)));
                FIXED(k_ev1, 2, f_events(d, r, p[1]));
                FIXED(k_ev2, 3, f_events(d, r, ld16(p + 1)));
                FIXED(k_ev4, 5, f_events(d, r, ld32(p + 1)));
                FIXED(k_ev8, 9, f_events(d, r, ld64(p + 1)));
                FIXED(k_ds1, 2, f_source(d, r, ds_table, p[1]));
                FIXED(k_ds2, 3, f_source(d, r, ds_table, ld16(p + 1)));
                FIXED(k_ds4, 5, f_source(d, r, ds_table, ld32(p + 1)));
                FIXED(k_ds8, 9, f_source(d, r, ds_table, ld64(p + 1)));
                FIXED(k_ctx, 5, f_context(d, r, *p & SPE_HDR_IDX2_MASK, ld32(p + 1)));
                FIXED(k_op, 2, f_op(d, r, *p & SPE_HDR_IDX2_MASK, p[1]));

        k_pad:
                pos = skip_pad(buf, pos + 1, len);
                NEXT();

        k_ts:
                if (_unlikely_(len - pos < 9))
                        goto short_pkt;
                f_timestamp(d, &recs[c.n], ld64(p + 1));
                pos += 9;
                npkts++;
                if (end_record(d, &c, c.started))
                        goto out;
                NEXT();

        k_end:
                recs[c.n].flags |= SPE_REC_F_END;
                pos++;
                npkts++;
                if (end_record(d, &c, c.started))
                        goto out;
                NEXT();

        k_slow: {
                /* bad byte or extended header */
                struct spe_pkt pkt;
                int k = spe_pkt_decode(p, len - pos, &pkt);

                if (k == SPE_PKT_ERR_NEED_MORE)
                        goto short_pkt;
                if (k < 0) {
                        on_bad(d, &recs[c.n], &c.started, k);
                        pos++;
                        NEXT();
                }
                pos += (size_t) k;
                if (pkt.type == SPE_PKT_PAD) {
                        d->stats.align_pkts++;
                        NEXT();
                }
                if (on_pkt(d, &c, &pkt))
                        goto out;
                NEXT();
        }
#undef FIXED
#undef NEXT
        }

short_pkt:
        /* A packet cut by the end of buf: keep its bytes for the next call. */
        memcpy(d->carry, buf + pos, len - pos);
        d->carry_len = (uint8_t) (len - pos);
        pos = len;

out:
        /* When recs filled up no record is in progress (c.n == max is never built). */
        if (c.started)
                d->cur = recs[c.n];
        d->in_record = c.started;
        d->stats.bytes += pos;
        d->stats.packets += npkts;
        if (ret_consumed)
                *ret_consumed = pos;
        return c.n;
}

int spe_decoder_next(struct spe_decoder *d, const uint8_t *buf, size_t len,
                     size_t *ret_consumed, struct spe_record *ret_rec) {
        struct spe_record rec;
        size_t consumed;
        size_t n;

        if (!d || (!buf && len > 0) || !ret_consumed || !ret_rec)
                return -EINVAL;

        n = spe_decoder_decode(d, buf, len, &rec, 1, &consumed);
        *ret_consumed = consumed;
        if (n == 0)
                return 0;
        *ret_rec = rec;
        return 1;
}

void spe_decoder_init(struct spe_decoder *d, uint32_t cpu, uint64_t midr) {
        if (!d)
                return;
        memset(d, 0, sizeof(*d));
        d->cpu = cpu;
        d->midr = midr;
        d->ds_map = (uint8_t) spe_ds_map_from_midr(midr);
        d->ds_table = ds_table_of(d->ds_map);
}

void spe_decoder_reset(struct spe_decoder *d) {
        if (!d)
                return;
        if (d->in_record)
                d->stats.flushed_records++;
        d->stats.flushed_bytes += d->carry_len;
        d->in_record = false;
        d->after_error = false;
        d->carry_len = 0;
        memset(&d->cur, 0, sizeof(d->cur));
}

uint64_t spe_decoder_errors(const struct spe_decoder *d) {
        if (!d)
                return 0;
        return d->stats.bad_header + d->stats.bad_ext_header +
               d->stats.dropped_records + d->stats.flushed_records;
}
