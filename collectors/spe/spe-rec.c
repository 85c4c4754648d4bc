/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Arm SPE record decoder: packets -> records. See spe-rec.h for the
 * contract and the error policy, spe-pkt.h for the formats and the
 * sections of the Arm ARM and Linux perf they come from. Hot path: one header-table load per packet, payload assembled
 * with one unaligned little-endian load, fields written straight into the
 * caller's record array; no allocation, no I/O.
 */
#include "spe-rec.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "macro.h"

/* The field setters must fold into the hot loop (constant indexes, the presence mask in a register). */
#define _always_inline_ inline __attribute__((always_inline))

/* Only values below this have a table entry in any data-source encoding we know. */
#define DS_TABLE_SIZE 16U

/* The "common" encoding of Arm-designed cores (Neoverse TRMs, "Data source packet";
 * tools/perf/util/arm-spe.c, arm_spe__synth_data_source_common()). */
static const uint8_t ds_common[DS_TABLE_SIZE] = {
        [0x0] = SPE_DATA_SRC_L1D,        [0x1] = SPE_DATA_SRC_UNKNOWN,
        [0x2] = SPE_DATA_SRC_UNKNOWN,    [0x3] = SPE_DATA_SRC_UNKNOWN,
        [0x4] = SPE_DATA_SRC_UNKNOWN,    [0x5] = SPE_DATA_SRC_UNKNOWN,
        [0x6] = SPE_DATA_SRC_UNKNOWN,    [0x7] = SPE_DATA_SRC_UNKNOWN,
        [SPE_DS_COMMON_L2]              = SPE_DATA_SRC_L2,
        [SPE_DS_COMMON_PEER_CORE]       = SPE_DATA_SRC_PEER_CORE,
        [SPE_DS_COMMON_LOCAL_CLUSTER]   = SPE_DATA_SRC_LOCAL_CLUSTER,
        [SPE_DS_COMMON_SYS_CACHE]       = SPE_DATA_SRC_SYS_CACHE,
        [SPE_DS_COMMON_PEER_CLUSTER]    = SPE_DATA_SRC_PEER_CLUSTER,
        [SPE_DS_COMMON_REMOTE]          = SPE_DATA_SRC_REMOTE,
        [SPE_DS_COMMON_DRAM]            = SPE_DATA_SRC_DRAM,
        [0xF] = SPE_DATA_SRC_UNKNOWN,
};

/* AmpereOne: perf remaps these onto the common meaning
 * (tools/perf/util/arm-spe.c, arm_spe__synth_data_source_ampereone()). */
static const uint8_t ds_ampere1a[DS_TABLE_SIZE] = {
        [SPE_DS_AMPERE_LOCAL_CHIP_CACHE]  = SPE_DATA_SRC_PEER_CORE,
        [0x1] = SPE_DATA_SRC_UNKNOWN,    [0x2] = SPE_DATA_SRC_UNKNOWN,
        [SPE_DS_AMPERE_SLC]               = SPE_DATA_SRC_SYS_CACHE,
        [0x4] = SPE_DATA_SRC_UNKNOWN,
        [SPE_DS_AMPERE_REMOTE_CHIP_CACHE] = SPE_DATA_SRC_REMOTE,
        [0x6] = SPE_DATA_SRC_UNKNOWN,
        [SPE_DS_AMPERE_DDR]               = SPE_DATA_SRC_DRAM,
        [SPE_DS_AMPERE_L1D]               = SPE_DATA_SRC_L1D,
        [SPE_DS_AMPERE_L2D]               = SPE_DATA_SRC_L2,
        [0xA] = SPE_DATA_SRC_UNKNOWN,    [0xB] = SPE_DATA_SRC_UNKNOWN,
        [0xC] = SPE_DATA_SRC_UNKNOWN,    [0xD] = SPE_DATA_SRC_UNKNOWN,
        [0xE] = SPE_DATA_SRC_UNKNOWN,    [0xF] = SPE_DATA_SRC_UNKNOWN,
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
                return SPE_DATA_SRC_UNKNOWN;
        return table[raw];
}

enum spe_data_src spe_data_src_from_raw(enum spe_ds_map map, uint64_t raw) {
        return (enum spe_data_src) ds_lookup(ds_table_of(map), raw);
}

/* Entry i of a name table, or fallback when i is out of range or unnamed. */
static const char *table_name(const char *const *table, size_t n, unsigned i, const char *fallback) {
        return i < n && table[i] ? table[i] : fallback;
}

static const char *const source_names[_SPE_DATA_SRC_MAX] = {
        [SPE_DATA_SRC_NONE]             = "none",
        [SPE_DATA_SRC_UNKNOWN]          = "unknown",
        [SPE_DATA_SRC_L1D]              = "l1d",
        [SPE_DATA_SRC_L2]               = "l2",
        [SPE_DATA_SRC_PEER_CORE]        = "peer_core",
        [SPE_DATA_SRC_LOCAL_CLUSTER]    = "local_cluster",
        [SPE_DATA_SRC_SYS_CACHE]        = "sys_cache",
        [SPE_DATA_SRC_PEER_CLUSTER]     = "peer_cluster",
        [SPE_DATA_SRC_REMOTE]           = "remote",
        [SPE_DATA_SRC_DRAM]             = "dram",
};

const char *spe_data_src_name(enum spe_data_src s) {
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

enum spe_peer spe_record_peer(const struct spe_record *rec) {
        if (!rec || !(rec->present & SPE_REC_SOURCE) || !(rec->op_flags & SPE_OPF_LOAD))
                return SPE_PEER_NONE;
        return spe_data_src_peer(rec->source);
}

enum spe_op_kind spe_record_op_kind(const struct spe_record *rec) {
        if (!rec || !(rec->present & SPE_REC_OP))
                return SPE_OP_KIND_UNKNOWN;

        switch (rec->op_class) {
        case SPE_OP_CLASS_OTHER:
                return SPE_OP_KIND_OTHER;
        case SPE_OP_CLASS_BRANCH:
                return SPE_OP_KIND_BRANCH;
        case SPE_OP_CLASS_LDST:
                if (rec->op_flags & SPE_OPF_ATOMIC)
                        return SPE_OP_KIND_ATOMIC;
                return (rec->op_flags & SPE_OPF_STORE) ? SPE_OP_KIND_STORE : SPE_OP_KIND_LOAD;
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

const char *spe_op_name(const struct spe_record *rec) {
        return spe_op_kind_name(spe_record_op_kind(rec));
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

/* log2 of 32 << n: SVE effective vector length code (Arm ARM D10 "Operation Type packet"). */
#define SVE_EVL_LOG2_BASE 5U
/* log2 of 128 << m: SME effective tile size code. */
#define SME_ETS_LOG2_BASE 7U

/*
 * Operation type (Arm ARM D10 "Operation Type packet") as a table indexed by class and payload,
 * built at compile time: loads, stores and branches interleave at random in
 * a stream, and run as code this chain of tests cost mispredicted branches
 * in every record. The tests are Linux perf's, in its order (2025-11
 * series); they do not overlap.
 */
#define OP_IF(v, bit, f) (((v) & (bit)) ? (f) : 0U)
#define OP_IS(v, mask, val) (((v) & (mask)) == (val))
#define OP_EVL_CODE(v) (((v) >> SPE_OP_EVL_SHIFT) & SPE_OP_EVL_MASK)
/* An entry: op_flags in bits [31:0], op_subclass in [39:32], op_evl_bits_log2 in [47:40]. */
#define OPE_SUB_SHIFT 32
#define OPE_EVL_SHIFT 40
#define OPE_FIELD_MASK 0xFFU
#define OPE(sub, flags, evl) \
        ((uint64_t) (flags) | (uint64_t) (sub) << OPE_SUB_SHIFT | (uint64_t) (evl) << OPE_EVL_SHIFT)

#define OP_OTHER(v)                                                                                     \
        (OP_IS(v, SPE_OP_OTHER_SUB_MASK, SPE_OP_OTHER_SUB_OTHER) ?                                      \
                 OPE(SPE_OP_SUB_OTHER, OP_IF(v, SPE_OP_OTHER_COND, SPE_OPF_COND) |                      \
                     OP_IF(v, SPE_OP_OTHER_FP, SPE_OPF_FP) | OP_IF(v, SPE_OP_OTHER_ASE, SPE_OPF_SIMD), 0U) : \
         OP_IS(v, SPE_OP_OTHER_SVE_MASK, SPE_OP_OTHER_SVE) ?                                            \
                 OPE(SPE_OP_SUB_SVE_OTHER, SPE_OPF_SVE | OP_IF(v, SPE_OP_OTHER_FP, SPE_OPF_FP) |        \
                     OP_IF(v, SPE_OP_OTHER_PRED, SPE_OPF_PRED), SVE_EVL_LOG2_BASE + OP_EVL_CODE(v)) :   \
         OP_IS(v, SPE_OP_OTHER_SVE_MASK, SPE_OP_OTHER_SME) ?                                            \
                 OPE(SPE_OP_SUB_SME_OTHER, SPE_OPF_SME | OP_IF(v, SPE_OP_OTHER_FP, SPE_OPF_FP),         \
                     SME_ETS_LOG2_BASE + ((OP_EVL_CODE(v) << 1) | OP_IF(v, SPE_OP_OTHER_SME_ETS_LOW, 1U))) : \
         OPE(SPE_OP_SUB_UNKNOWN, 0U, 0U))

#define OP_LDST(v)                                                                                      \
        (OP_IF(v, SPE_OP_LDST_ST, SPE_OPF_STORE) | (((v) & SPE_OP_LDST_ST) ? 0U : SPE_OPF_LOAD) |       \
         (OP_IS(v, SPE_OP_LDST_EXT_MASK, SPE_OP_LDST_EXT) ?                                             \
                  OPE(SPE_OP_SUB_LDST_EXT, OP_IF(v, SPE_OP_LDST_AT, SPE_OPF_ATOMIC) |                   \
                      OP_IF(v, SPE_OP_LDST_EXCL, SPE_OPF_EXCLUSIVE) |                                   \
                      OP_IF(v, SPE_OP_LDST_AR, SPE_OPF_ACQREL), 0U) :                                   \
          OP_IS(v, SPE_OP_LDST_SUB_MASK, SPE_OP_LDST_SIMD_FP) ?                                         \
                  OPE(SPE_OP_SUB_LDST_SIMD_FP, SPE_OPF_SIMD, 0U) :                                      \
          OP_IS(v, SPE_OP_LDST_SUB_MASK, SPE_OP_LDST_GP_REG) ?                                          \
                  OPE(SPE_OP_SUB_LDST_GP_REG, 0U, 0U) :                                                 \
          OP_IS(v, SPE_OP_LDST_SUB_MASK, SPE_OP_LDST_UNSPEC_REG) ?                                      \
                  OPE(SPE_OP_SUB_LDST_UNSPEC_REG, SPE_OPF_UNSPEC_REG, 0U) :                             \
          OP_IS(v, SPE_OP_LDST_SUB_MASK, SPE_OP_LDST_NV_SYSREG) ?                                       \
                  OPE(SPE_OP_SUB_LDST_NV_SYSREG, SPE_OPF_NV_SYSREG, 0U) :                               \
          OP_IS(v, SPE_OP_LDST_SUB_MASK, SPE_OP_LDST_MTE_TAG) ?                                         \
                  OPE(SPE_OP_SUB_LDST_MTE_TAG, SPE_OPF_MTE_TAG, 0U) :                                   \
          OP_IS(v, SPE_OP_LDST_SUB_MASK, SPE_OP_LDST_MEMCPY) ?                                          \
                  OPE(SPE_OP_SUB_LDST_MEMCPY, SPE_OPF_MEMCPY, 0U) :                                     \
          OP_IS(v, SPE_OP_LDST_MEMSET_MASK, SPE_OP_LDST_MEMSET) ?                                       \
                  OPE(SPE_OP_SUB_LDST_MEMSET, SPE_OPF_MEMSET, 0U) :                                     \
          OP_IS(v, SPE_OP_LDST_SVE_MASK, SPE_OP_LDST_SVE) ?                                             \
                  OPE(SPE_OP_SUB_LDST_SVE_SME, SPE_OPF_SVE | OP_IF(v, SPE_OP_LDST_SVE_PRED, SPE_OPF_PRED) | \
                      OP_IF(v, SPE_OP_LDST_SVE_SG, SPE_OPF_SG), SVE_EVL_LOG2_BASE + OP_EVL_CODE(v)) :   \
          OP_IS(v, SPE_OP_LDST_GCS_MASK, SPE_OP_LDST_GCS) ?                                             \
                  OPE(SPE_OP_SUB_LDST_GCS, SPE_OPF_GCS | OP_IF(v, SPE_OP_LDST_GCS_COMM, SPE_OPF_GCS_COMM), 0U) : \
          OPE(SPE_OP_SUB_UNKNOWN, 0U, 0U)))

#define OP_BRANCH(v)                                                                                    \
        OPE(SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH | OP_IF(v, SPE_OP_BR_COND, SPE_OPF_COND) |                \
            OP_IF(v, SPE_OP_BR_IND, SPE_OPF_INDIRECT) | OP_IF(v, SPE_OP_BR_GCS, SPE_OPF_GCS) |          \
            (OP_BR_CR(v) == SPE_OP_BR_CR_BL ? SPE_OPF_CALL : OP_BR_CR(v) == SPE_OP_BR_CR_RET ? SPE_OPF_RET : \
             OP_BR_CR(v) == SPE_OP_BR_CR_OTHER ? SPE_OPF_CR_OTHER : 0U), 0U)
#define OP_BR_CR(v) (((v) >> SPE_OP_BR_CR_SHIFT) & SPE_OP_BR_CR_MASK)

/* The reserved class 3 decodes to nothing (op_class and op_raw are still kept). */
#define OP_ENTRY(cls, v)                                                                                \
        ((cls) == SPE_OP_CLASS_OTHER ? OP_OTHER(v) : (cls) == SPE_OP_CLASS_LDST ? OP_LDST(v) :          \
         (cls) == SPE_OP_CLASS_BRANCH ? OP_BRANCH(v) : OPE(SPE_OP_SUB_UNKNOWN, 0U, 0U))

#define OP1(c, v)  OP_ENTRY(c, v)
#define OP4(c, v)  OP1(c, v), OP1(c, (v) + 1U), OP1(c, (v) + 2U), OP1(c, (v) + 3U)
#define OP16(c, v) OP4(c, v), OP4(c, (v) + 4U), OP4(c, (v) + 8U), OP4(c, (v) + 12U)
#define OP64(c, v) OP16(c, v), OP16(c, (v) + 16U), OP16(c, (v) + 32U), OP16(c, (v) + 48U)
#define OP256(c)   { OP64(c, 0x00U), OP64(c, 0x40U), OP64(c, 0x80U), OP64(c, 0xC0U) }

static const uint64_t op_table[SPE_HDR_IDX2_MASK + 1][256] = {
        OP256(SPE_OP_CLASS_OTHER), OP256(SPE_OP_CLASS_LDST),
        OP256(SPE_OP_CLASS_BRANCH), OP256(SPE_OP_CLASS_RESERVED),
};

static inline void decode_op(struct spe_record *rec, unsigned cls, uint8_t v) {
        uint64_t e = op_table[cls & SPE_HDR_IDX2_MASK][v];

        rec->op_class = (uint8_t) cls;
        rec->op_raw = v;
        rec->op_subclass = (uint8_t) ((e >> OPE_SUB_SHIFT) & OPE_FIELD_MASK);
        rec->op_flags = (uint32_t) e;
        rec->op_evl_bits_log2 = (uint8_t) ((e >> OPE_EVL_SHIFT) & OPE_FIELD_MASK);
}

/* PC / TGT / PBT (perf arm_spe_calc_ip): kernel addresses get their top byte back. */
static inline void decode_ip(struct spe_ip *ip, uint64_t p) {
        unsigned el = SPE_ADDR_EL(p), ns = SPE_ADDR_NS(p);
        /* ns && el is 1 or 2, as a mask: user and kernel PCs interleave unpredictably. */
        uint64_t kernel = (uint64_t) (ns & (el - 1U <= 1U));

        ip->addr = (p & SPE_ADDR_VA_MASK) | (-kernel & SPE_ADDR_KERNEL_TOP);
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
        /* Without a branch, for the same reason as decode_ip(). */
        uint64_t kernel = (uint64_t) (((a >> SPE_ADDR_VA_KERNEL_SHIFT) & SPE_ADDR_VA_KERNEL_MASK) ==
                                      SPE_ADDR_VA_KERNEL_MASK);

        return a | (-kernel & SPE_ADDR_KERNEL_TOP);
}

/*
 * Zero a record with plain 16-byte vector stores (GCC's portable vector
 * extension: SSE on x86, NEON on arm64). memset() of this size became
 * `rep stos`, whose start-up cost was about a tenth of decoding time.
 */
typedef uint8_t rec_chunk __attribute__((vector_size(16), aligned(1)));

_Static_assert(sizeof(struct spe_record) == 8 * sizeof(rec_chunk), "rec_init() zeroes 8 chunks");

static inline void rec_init(const struct spe_decoder *d, struct spe_record *rec) {
        rec_chunk *p = (rec_chunk *) rec;

        /* Written out: as a loop, gcc turns it back into memset(). */
        p[0] = p[1] = p[2] = p[3] = p[4] = p[5] = p[6] = p[7] = (rec_chunk) {};
        rec->cpu = d->cpu;
}

/*
 * Mark a field present; a second packet of the same kind is counted and wins.
 * The presence mask is passed apart from the record so that the hot loop can
 * keep it in a register: as rec->present every packet's update waited for the
 * previous packet's store (store-to-load forwarding, ~5 cycles a packet),
 * the longest dependency chain of the loop.
 */
static inline void set_present(struct spe_decoder *d, struct spe_record *rec, uint32_t *present, uint32_t bit) {
        if (_unlikely_(*present & bit)) {
                d->stats.duplicate_pkts++;
                rec->flags |= SPE_REC_F_DUPLICATE;
        }
        *present |= bit;
}

static inline void unknown_index(struct spe_decoder *d, struct spe_record *rec) {
        d->stats.unknown_index++;
        rec->flags |= SPE_REC_F_UNKNOWN_PKT;
}

/*
 * One setter per packet kind, shared by the generic path (apply_pkt) and
 * the hot loop, where the index is a constant and the switches fold away.
 */
static _always_inline_ void f_address(struct spe_decoder *d, struct spe_record *rec, uint32_t *present,
                                      unsigned index, uint64_t v) {
        switch (index) {
        case SPE_ADDR_IDX_PC:
                set_present(d, rec, present, SPE_REC_PC);
                decode_ip(&rec->pc, v);
                break;
        case SPE_ADDR_IDX_BR_TGT:
                set_present(d, rec, present, SPE_REC_BR_TGT);
                decode_ip(&rec->br_tgt, v);
                break;
        case SPE_ADDR_IDX_DATA_VA:
                set_present(d, rec, present, SPE_REC_VA);
                rec->va = decode_va(v);
                rec->va_tag = (uint8_t) SPE_ADDR_TAG(v);
                break;
        case SPE_ADDR_IDX_DATA_PA:
                set_present(d, rec, present, SPE_REC_PA);
                rec->pa = v & SPE_ADDR_VA_MASK;
                rec->pa_ns = (uint8_t) SPE_ADDR_NS(v);
                rec->pa_ch = (uint8_t) SPE_ADDR_CH(v);
                rec->pa_pat = (uint8_t) SPE_ADDR_PAT(v);
                rec->pa_nse = (uint8_t) SPE_ADDR_NSE(v);
                break;
        case SPE_ADDR_IDX_PBT:
                set_present(d, rec, present, SPE_REC_PBT);
                decode_ip(&rec->pbt, v);
                break;
        default:
                unknown_index(d, rec);
                break;
        }
}

static _always_inline_ void f_counter(struct spe_decoder *d, struct spe_record *rec, uint32_t *present,
                                      unsigned index, uint64_t v) {
        uint16_t count = (uint16_t) (v & SPE_CNT_VALUE_MASK);

        switch (index) {
        case SPE_CNT_IDX_TOTAL:
                set_present(d, rec, present, SPE_REC_LAT_TOTAL);
                rec->lat_total = count;
                break;
        case SPE_CNT_IDX_ISSUE:
                set_present(d, rec, present, SPE_REC_LAT_ISSUE);
                rec->lat_issue = count;
                break;
        case SPE_CNT_IDX_XLAT:
                set_present(d, rec, present, SPE_REC_LAT_XLAT);
                rec->lat_xlat = count;
                break;
        default:
                unknown_index(d, rec);
                break;
        }
}

static _always_inline_ void f_events(struct spe_decoder *d, struct spe_record *rec, uint32_t *present,
                                     uint64_t v) {
        set_present(d, rec, present, SPE_REC_EVENTS);
        rec->events = v;
}

static _always_inline_ void f_source(struct spe_decoder *d, struct spe_record *rec, uint32_t *present,
                                     const uint8_t *table, uint64_t v) {
        set_present(d, rec, present, SPE_REC_SOURCE);
        rec->source_raw = v;
        rec->source = ds_lookup(table, v);
}

static _always_inline_ void f_op(struct spe_decoder *d, struct spe_record *rec, uint32_t *present,
                                 unsigned cls, uint64_t v) {
        set_present(d, rec, present, SPE_REC_OP);
        if (_unlikely_(cls == SPE_OP_CLASS_RESERVED))
                d->stats.reserved_op++;
        decode_op(rec, cls, (uint8_t) v);
}

static _always_inline_ void f_context(struct spe_decoder *d, struct spe_record *rec, uint32_t *present,
                                      unsigned index, uint64_t v) {
        if (_unlikely_(index != SPE_CTX_IDX_EL1 && index != SPE_CTX_IDX_EL2)) {
                unknown_index(d, rec);
                return;
        }
        set_present(d, rec, present, SPE_REC_CONTEXT);
        rec->context = (uint32_t) v;
        rec->context_el = (uint8_t) (index + 1);
}

static _always_inline_ void f_timestamp(struct spe_decoder *d, struct spe_record *rec, uint32_t *present,
                                        uint64_t v) {
        set_present(d, rec, present, SPE_REC_TIMESTAMP);
        rec->timestamp = v;
}

/* Apply one decoded packet (generic path); true when it ends the record. */
static bool apply_pkt(struct spe_decoder *d, struct spe_record *rec,
                      unsigned type, unsigned index, uint64_t payload) {
        switch (type) {
        case SPE_PKT_ADDRESS:
                f_address(d, rec, &rec->present, index, payload);
                return false;
        case SPE_PKT_COUNTER:
                f_counter(d, rec, &rec->present, index, payload);
                return false;
        case SPE_PKT_EVENTS:
                f_events(d, rec, &rec->present, payload);
                return false;
        case SPE_PKT_DATA_SOURCE:
                f_source(d, rec, &rec->present, d->ds_table, payload);
                return false;
        case SPE_PKT_OP_TYPE:
                f_op(d, rec, &rec->present, index, payload);
                return false;
        case SPE_PKT_CONTEXT:
                f_context(d, rec, &rec->present, index, payload);
                return false;
        case SPE_PKT_TIMESTAMP:
                f_timestamp(d, rec, &rec->present, payload);
                return true;
        case SPE_PKT_END:
                rec->flags |= SPE_REC_F_END;
                return true;
        default:
                return false;
        }
}

/*
 * Skipped garbage: drop the record in progress (see spe-rec.h for why).
 * The caller then marks *rec as not started and reloads its presence mask.
 */
static inline void on_bad(struct spe_decoder *d, struct spe_record *rec, bool started, int err) {
        if (err == SPE_PKT_ERR_BAD_EXT)
                d->stats.bad_ext_header++;
        else
                d->stats.bad_header++;
        if (started) {
                d->stats.dropped_records++;
                rec_init(d, rec);
        }
        d->after_error = true;
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

/*
 * a when c is not zero, else b, as a conditional move. GCC compiles the
 * plain `c ? a : b` of zero_run() as a branch, which mispredicts on
 * padding runs of random length (bench-replay's split layout: 7% slower).
 */
static inline uint64_t select_nz(uint64_t c, uint64_t a, uint64_t b) {
#if defined(__x86_64__)
        __asm__("test %1, %1\n\tcmovz %2, %0" : "+r"(a) : "r"(c), "r"(b) : "cc");
        return a;
#elif defined(__aarch64__)
        uint64_t out;

        __asm__("cmp %1, #0\n\tcsel %0, %2, %3, ne" : "=r"(out) : "r"(c), "r"(a), "r"(b) : "cc");
        return out;
#else
        return c ? a : b;
#endif
}

/*
 * Zero bytes at p, counting at most 15 (p[0] is known to be 0):
 * two words loaded at once, each count made total by a sentinel bit, the
 * second used when the first word is all zero. The run's length decides
 * where the next packet is, so this is the latency of every padding run;
 * without a branch and without combining the two counts arithmetically it
 * is about 10 cycles (5-9% faster on bench-replay than the combination).
 */
#define ZB_SENTINEL (UINT64_C(1) << 63)
static inline unsigned zero_run(const uint8_t *p) {
        uint64_t w0 = ld64(p), w1 = ld64(p + sizeof(uint64_t));
        uint64_t t0 = (uint64_t) __builtin_ctzll(w0 | ZB_SENTINEL);
        uint64_t t1 = 64U + (uint64_t) __builtin_ctzll(w1 | ZB_SENTINEL);

        return (unsigned) (select_nz(w0, t0, t1) >> 3);
}

/*
 * Hot-loop dispatch: the handler of every header byte, as a label address
 * classified at compile time by the same macros as spe_hdr_table. Each
 * handler has a fixed packet length, so the position advances by a
 * constant after a predicted branch instead of waiting for a table load.
 * Bad bytes and undefined indexes go to the checked generic path.
 */
#define L_BY_PLEN(h, l1, l2, l4, l8)                                                      \
        (SPE_HDR_PLEN(h) == 1 ? &&l1 : SPE_HDR_PLEN(h) == 2 ? &&l2 :                      \
         SPE_HDR_PLEN(h) == 4 ? &&l4 : &&l8)
#define L_ADDR(i)                                                                         \
        ((i) == SPE_ADDR_IDX_PC ? &&k_pc : (i) == SPE_ADDR_IDX_BR_TGT ? &&k_tgt :         \
         (i) == SPE_ADDR_IDX_DATA_VA ? &&k_va : (i) == SPE_ADDR_IDX_DATA_PA ? &&k_pa :    \
         (i) == SPE_ADDR_IDX_PBT ? &&k_pbt : &&generic)
#define L_CNT(i)                                                                          \
        ((i) == SPE_CNT_IDX_TOTAL ? &&k_lat_tot : (i) == SPE_CNT_IDX_ISSUE ? &&k_lat_issue : \
         (i) == SPE_CNT_IDX_XLAT ? &&k_lat_xlat : &&generic)
#define L_OP(c)                                                                           \
        ((c) == SPE_OP_CLASS_OTHER ? &&k_op_other : (c) == SPE_OP_CLASS_LDST ? &&k_op_ldst : \
         (c) == SPE_OP_CLASS_BRANCH ? &&k_op_branch : &&k_op)
#define L_CTX(i) ((i) == SPE_CTX_IDX_EL1 || (i) == SPE_CTX_IDX_EL2 ? &&k_ctx : &&generic)
#define LABEL(h)                                                                          \
        (SPE_HDR_TYPE(h) == SPE_PKT_PAD ? &&k_pad :                                       \
         SPE_HDR_TYPE(h) == SPE_PKT_END ? &&k_end :                                       \
         SPE_HDR_TYPE(h) == SPE_PKT_TIMESTAMP ? &&k_ts :                                  \
         SPE_HDR_TYPE(h) == SPE_PKT_EXTENDED ? &&k_ext :                                  \
         SPE_HDR_TYPE(h) == SPE_PKT_EVENTS ? L_BY_PLEN(h, k_ev1, k_ev2, k_ev4, k_ev8) :   \
         SPE_HDR_TYPE(h) == SPE_PKT_DATA_SOURCE ? L_BY_PLEN(h, k_ds1, k_ds2, k_ds4, k_ds8) : \
         SPE_HDR_TYPE(h) == SPE_PKT_CONTEXT ? L_CTX(SPE_HDR_INDEX(h)) :                   \
         SPE_HDR_TYPE(h) == SPE_PKT_OP_TYPE ? L_OP(SPE_HDR_INDEX(h)) :                    \
         SPE_HDR_TYPE(h) == SPE_PKT_ADDRESS ? L_ADDR(SPE_HDR_INDEX(h)) :                  \
         SPE_HDR_TYPE(h) == SPE_PKT_COUNTER ? L_CNT(SPE_HDR_INDEX(h)) :                   \
         &&generic)

#define L1(h)  LABEL(h)
#define L4(h)  L1(h), L1((h) + 1U), L1((h) + 2U), L1((h) + 3U)
#define L16(h) L4(h), L4((h) + 4U), L4((h) + 8U), L4((h) + 12U)
#define L64(h) L16(h), L16((h) + 16U), L16((h) + 32U), L16((h) + 48U)

/* Packet lengths the hot loop relies on (Arm ARM D10 "Packet headers"): checked at build time. */
_Static_assert(SPE_HDR_PLEN(SPE_HDR_CONTEXT) == 4, "context payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_OP_TYPE) == 1, "op-type payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_ADDRESS) == 8, "address payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_COUNTER) == 2, "counter payload");
_Static_assert(SPE_HDR_PLEN(SPE_HDR_TIMESTAMP) == 8, "timestamp payload");

/*
 * The fast handlers read up to this many bytes from a packet's first byte
 * without checking the length (the longest packet is SPE_PKT_MAX_LEN; the
 * padding handler looks at two words). Closer to the end of
 * buf, packets go through spe_pkt_decode(), which checks every length.
 */
#define FAST_MARGIN (2 * sizeof(uint64_t))
_Static_assert(FAST_MARGIN >= SPE_PKT_MAX_LEN && FAST_MARGIN >= 2 * sizeof(uint64_t),
               "fast-path reads stay inside the margin");

size_t spe_decoder_decode(struct spe_decoder *d, const uint8_t *buf, size_t len,
                          struct spe_record *recs, size_t max, size_t *ret_consumed) {
        const uint8_t *ds_table, *p, *end, *fast_end;
        struct spe_record *rec = recs;  /* the record being built, recs[n] */
        struct spe_pkt pkt;
        uint64_t npkts = 0;
        size_t n = 0;
        uint32_t present;               /* rec->present while in the loop (see set_present) */
        bool started;                   /* *rec holds at least one packet */
        int k;

        if (!d || (!buf && len > 0) || !recs || max == 0) {
                if (ret_consumed)
                        *ret_consumed = 0;
                return 0;
        }

        ds_table = d->ds_table;
        started = d->in_record;
        if (started)
                *rec = d->cur;
        else
                rec_init(d, rec);
        present = rec->present;
        if (len == 0) {
                if (ret_consumed)
                        *ret_consumed = 0;
                return 0;
        }
        p = buf;
        end = buf + len;
        /* p < fast_end: at least FAST_MARGIN bytes from p on. */
        fast_end = len >= FAST_MARGIN ? end - FAST_MARGIN + 1 : buf;

        /*
         * Threaded dispatch (GNU computed goto): every handler ends with its
         * own indirect jump to the next packet's handler (a switch on the
         * header byte measured ~15% slower on bench-replay). One load from
         * the header byte finds the label: a mispredicted packet kind (the
         * common cost, as padding and packet order vary from record to
         * record) resolves after two dependent loads, not the three of a
         * kind table plus a label table (a few percent).
         */
        static const void *const dispatch[256] = {
                L64(0x00U), L64(0x40U), L64(0x80U), L64(0xC0U),
        };

/*
 * Jump to the handler of the packet at p: one compare decides that the
 * whole packet is in buf, so the handlers need no length checks of their
 * own; near the end of buf every packet takes the checked generic path.
 *
 * The empty asm, with a constant that differs at every use, keeps one
 * indirect jump per handler: GCC's cross-jumping otherwise merges the
 * identical tails of the handlers into a single shared jump, which the
 * branch predictor cannot tell apart by handler (measured 5-10% slower on
 * bench-replay and on bench-spe-decode's varied stream). It emits nothing.
 */
#define NEXT()                                                  \
        do {                                                    \
                if (_likely_(p < fast_end)) {                   \
                        __asm__ volatile("" : : "i"(__LINE__)); \
                        goto *dispatch[*p];                     \
                }                                               \
                goto careful;                                   \
        } while (0)

/* A fixed-size, non-terminating packet: apply to the record being built, advance. */
#define FIXED(label, size, apply)                               \
        label:                                                  \
                apply;                                          \
                p += (size);                                    \
                npkts++;                                        \
                started = true;                                 \
                NEXT()

        /* Finish a packet that was split across chunks. */
        if (d->carry_len > 0) {
                uint8_t tmp[2 * SPE_PKT_MAX_LEN];
                size_t take = MIN(len, (size_t) (SPE_PKT_MAX_LEN - d->carry_len));

                memcpy(tmp, d->carry, d->carry_len);
                memcpy(tmp + d->carry_len, buf, take);
                k = spe_pkt_decode(tmp, d->carry_len + take, &pkt);
                if (k == SPE_PKT_ERR_NEED_MORE) {
                        /* take < len would mean SPE_PKT_MAX_LEN bytes did not suffice: impossible. */
                        memcpy(d->carry + d->carry_len, buf, take);
                        d->carry_len = (uint8_t) (d->carry_len + take);
                        p = buf + take;
                        goto out;
                }
                if (k < 0) {
                        /*
                         * Only a lone extended prefix can be carried and then
                         * fail (its second byte was bad): skip that one byte
                         * and go on with buf[0].
                         */
                        d->carry_len = 0;
                        on_bad(d, rec, started, k);
                        started = false;
                        present = rec->present;
                        NEXT();
                }
                p = buf + ((size_t) k - d->carry_len);
                d->carry_len = 0;
                goto apply_generic;
        }

        NEXT();

        FIXED(k_pc, 9, f_address(d, rec, &present, SPE_ADDR_IDX_PC, ld64(p + 1)));
        FIXED(k_tgt, 9, f_address(d, rec, &present, SPE_ADDR_IDX_BR_TGT, ld64(p + 1)));
        FIXED(k_va, 9, f_address(d, rec, &present, SPE_ADDR_IDX_DATA_VA, ld64(p + 1)));
        FIXED(k_pa, 9, f_address(d, rec, &present, SPE_ADDR_IDX_DATA_PA, ld64(p + 1)));
        FIXED(k_pbt, 9, f_address(d, rec, &present, SPE_ADDR_IDX_PBT, ld64(p + 1)));
        FIXED(k_lat_tot, 3, f_counter(d, rec, &present, SPE_CNT_IDX_TOTAL, ld16(p + 1)));
        FIXED(k_lat_issue, 3, f_counter(d, rec, &present, SPE_CNT_IDX_ISSUE, ld16(p + 1)));
        FIXED(k_lat_xlat, 3, f_counter(d, rec, &present, SPE_CNT_IDX_XLAT, ld16(p + 1)));
        FIXED(k_ev1, 2, f_events(d, rec, &present, p[1]));
        FIXED(k_ev2, 3, f_events(d, rec, &present, ld16(p + 1)));
        FIXED(k_ev4, 5, f_events(d, rec, &present, ld32(p + 1)));
        FIXED(k_ev8, 9, f_events(d, rec, &present, ld64(p + 1)));
        FIXED(k_ds1, 2, f_source(d, rec, &present, ds_table, p[1]));
        FIXED(k_ds2, 3, f_source(d, rec, &present, ds_table, ld16(p + 1)));
        FIXED(k_ds4, 5, f_source(d, rec, &present, ds_table, ld32(p + 1)));
        FIXED(k_ds8, 9, f_source(d, rec, &present, ds_table, ld64(p + 1)));
        FIXED(k_ctx, 5, f_context(d, rec, &present, *p & SPE_HDR_IDX2_MASK, ld32(p + 1)));
        /*
         * One handler per op class: which packets follow (a VA, a branch
         * target, neither) depends on the class, and a jump from a handler of
         * its own puts the class into the branch history that predicts them
         * (2-4% on bench-replay). k_op takes the reserved class.
         */
        FIXED(k_op, 2, f_op(d, rec, &present, *p & SPE_HDR_IDX2_MASK, p[1]));
        FIXED(k_op_other, 2, f_op(d, rec, &present, SPE_OP_CLASS_OTHER, p[1]));
        FIXED(k_op_ldst, 2, f_op(d, rec, &present, SPE_OP_CLASS_LDST, p[1]));
        FIXED(k_op_branch, 2, f_op(d, rec, &present, SPE_OP_CLASS_BRANCH, p[1]));

k_pad: {
        /*
         * A run of 0x00 bytes: up to 15 of them in one step without a
         * data-dependent branch (records pad 1..~25 bytes at places that
         * vary with the op, so a loop or a branch on the length
         * mispredicts); a longer run comes back here for the rest.
         */
        p += zero_run(p);
        NEXT();
}

k_ext: {
        /* Extended header (Arm ARM D10 "Packet headers"): an address or counter with a 5-bit index. */
        unsigned index = ((unsigned) (p[0] & SPE_HDR_IDX2_MASK) << SPE_HDR_EXT_IDX_SHIFT) |
                         (p[1] & SPE_HDR_IDX3_MASK);

        switch (spe_hdr_table[p[1]].type) {
        case SPE_PKT_ADDRESS:
                f_address(d, rec, &present, index, ld64(p + 2));
                p += 2 + SPE_HDR_PLEN(SPE_HDR_ADDRESS);
                break;
        case SPE_PKT_COUNTER:
                f_counter(d, rec, &present, index, ld16(p + 2));
                p += 2 + SPE_HDR_PLEN(SPE_HDR_COUNTER);
                break;
        default:
                /* The alignment pseudo packet or a bad second byte. */
                goto generic;
        }
        npkts++;
        started = true;
        NEXT();
}

k_ts:
        f_timestamp(d, rec, &present, ld64(p + 1));
        p += 1 + SPE_HDR_PLEN(SPE_HDR_TIMESTAMP);
        npkts++;
        goto end_rec;

k_end:
        rec->flags |= SPE_REC_F_END;
        p++;
        npkts++;
        goto end_rec;

careful:
        if (p >= end)
                goto out;
        /* fall through */
generic:
        /* Any packet, every length checked: bad bytes, rare forms, the end of buf. */
        k = spe_pkt_decode(p, (size_t) (end - p), &pkt);
        if (k == SPE_PKT_ERR_NEED_MORE)
                goto short_pkt;
        if (k < 0) {
                on_bad(d, rec, started, k);
                started = false;
                present = rec->present;
                p++;
                NEXT();
        }
        p += k;
apply_generic:
        if (pkt.type == SPE_PKT_PAD) {
                if (pkt.flags & SPE_PKT_F_ALIGN)
                        d->stats.align_pkts++;
                NEXT();
        }
        npkts++;
        rec->present = present;
        k = apply_pkt(d, rec, pkt.type, pkt.index, pkt.payload);
        present = rec->present;
        if (!k) {
                started = true;
                NEXT();
        }
        /* fall through */

end_rec:
        /* A terminator was applied to *rec; one with nothing before it is not a record (spe-rec.h). */
        if (_unlikely_(!started)) {
                d->stats.empty_records++;
                rec_init(d, rec);
                present = 0;
                NEXT();
        }
        if (_unlikely_(d->after_error)) {
                rec->flags |= SPE_REC_F_AFTER_ERROR;
                d->after_error = false;
        }
        rec->present = present;
        started = false;
        if (++n == max)
                goto out;
        rec_init(d, ++rec);
        present = 0;
        NEXT();

#undef FIXED
#undef NEXT

short_pkt:
        /* A packet cut by the end of buf: keep its bytes for the next call. */
        memcpy(d->carry, p, (size_t) (end - p));
        d->carry_len = (uint8_t) (end - p);
        p = end;

out:
        /* When recs filled up no record is in progress (recs[max] is never built). */
        if (started) {
                rec->present = present;
                d->cur = *rec;
        }
        d->in_record = started;
        d->stats.bytes += (size_t) (p - buf);
        d->stats.packets += npkts;
        d->stats.records += n;
        if (ret_consumed)
                *ret_consumed = (size_t) (p - buf);
        return n;
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
