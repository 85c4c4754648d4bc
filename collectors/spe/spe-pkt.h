/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Arm SPE packet decoder: bytes -> one packet.
 *
 * The layout follows the Arm ARM (DDI 0487) chapter D10 "The Statistical
 * Profiling Extension", section "Statistical Profiling Extension sample
 * record specification" (packet headers, payload formats), as Linux perf
 * decodes them (tools/perf/util/arm-spe-decoder/arm-spe-pkt-decoder.{c,h}).
 * Everything here is pure: no
 * allocation, no I/O, no global state; the length is checked before every
 * read, and payloads are assembled little-endian so any alignment works.
 *
 * Returns of spe_pkt_decode(): > 0 = bytes consumed (1..SPE_PKT_MAX_LEN),
 * or one of the SPE_PKT_ERR_* codes below.
 */

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Longest packet: 2-byte extended header + 8-byte payload (Arm ARM D10 "Packet headers"). */
#define SPE_PKT_MAX_LEN 10

/* Named negative codes (negative errno values so strerror() says something). */
#define SPE_PKT_ERR_NEED_MORE (-ENODATA) /* header says more bytes than len holds */
#define SPE_PKT_ERR_BAD       (-EBADMSG) /* unknown header byte */
#define SPE_PKT_ERR_BAD_EXT   (-EPROTO)  /* extended header whose 2nd byte is not address/counter */

enum spe_pkt_type {
        SPE_PKT_BAD = 0,        /* only in the header lookup table; never returned */
        SPE_PKT_PAD,
        SPE_PKT_END,
        SPE_PKT_TIMESTAMP,
        SPE_PKT_EVENTS,
        SPE_PKT_DATA_SOURCE,
        SPE_PKT_CONTEXT,
        SPE_PKT_OP_TYPE,
        SPE_PKT_ADDRESS,
        SPE_PKT_COUNTER,
        SPE_PKT_EXTENDED,       /* only in the header lookup table; resolved to ADDRESS/COUNTER */
        _SPE_PKT_TYPE_MAX,
};

struct spe_pkt {
        uint64_t payload;       /* raw little-endian payload, zero-extended; 0 if none */
        uint8_t type;           /* enum spe_pkt_type */
        /*
         * ADDRESS / COUNTER: full index 0..31 (SPE_ADDR_IDX_*, SPE_CNT_IDX_*);
         * CONTEXT: header bits [1:0] (SPE_CTX_IDX_*);
         * OP_TYPE: class, header bits [1:0] (SPE_OP_CLASS_*);
         * others: 0.
         */
        uint8_t index;
        uint8_t len;            /* whole packet in bytes, headers included */
        uint8_t hdr_len;        /* 1, or 2 for an extended header */
        uint8_t payload_len;    /* 0, 1, 2, 4 or 8 */
        uint8_t flags;          /* SPE_PKT_F_* */
};

/* A "20 00" extended-alignment pseudo header, decoded as 2 bytes of padding (see spe_pkt_decode). */
#define SPE_PKT_F_ALIGN 0x01U

/*
 * Decode the packet at buf[0..len). On success fills *ret_pkt and returns the
 * number of bytes it spans. SPE_PKT_ERR_NEED_MORE when the header (or the
 * extended header) announces more bytes than len; SPE_PKT_ERR_BAD for an
 * unknown header byte; SPE_PKT_ERR_BAD_EXT for an extended header not
 * followed by an address or counter header. A caller resynchronising after
 * an error skips one byte, as Linux perf does.
 */
int spe_pkt_decode(const uint8_t *buf, size_t len, struct spe_pkt *ret_pkt);

/*
 * What byte 0 alone says, for every value: packet type (SPE_PKT_BAD for
 * unknown headers, SPE_PKT_EXTENDED for the 2-byte prefix), payload length
 * and index/class. Built at compile time from SPE_HDR_TYPE/PLEN/INDEX below;
 * spe_pkt_decode() classifies a header with one load from it, and callers
 * may use it to classify a header byte alone.
 */
struct spe_hdr_info {
        uint8_t type;           /* enum spe_pkt_type */
        uint8_t payload_len;
        uint8_t index;
};
extern const struct spe_hdr_info spe_hdr_table[256];

/*
 * Little-endian payload of n (0..8) bytes at p, reading exactly n bytes;
 * any alignment (memcpy into a local, then to host order).
 */
static inline uint64_t spe_pkt_load_le(const uint8_t *p, unsigned n) {
        uint16_t v16;
        uint32_t v32;
        uint64_t v64 = 0;

        switch (n) {
        case 1:
                return p[0];
        case 2:
                memcpy(&v16, p, sizeof(v16));
                return le16toh(v16);
        case 4:
                memcpy(&v32, p, sizeof(v32));
                return le32toh(v32);
        case 8:
                memcpy(&v64, p, sizeof(v64));
                return le64toh(v64);
        default:
                for (unsigned i = 0; i < n && i < sizeof(v64); i++)
                        v64 |= (uint64_t) p[i] << (8 * i);
                return v64;
        }
}

/* Short names for logs: "PAD", "END", "TS", "EV", "DATA-SOURCE", ... */
const char *spe_pkt_type_name(enum spe_pkt_type t);

/* ---------------------------------------------------------------------
 * Header byte 0 (Arm ARM D10 "Packet headers").
 * Match order: PAD, END, TIMESTAMP, MASK1, MASK2, MASK3 (no overlaps).
 */
#define SPE_HDR_PAD             0x00U
#define SPE_HDR_END             0x01U
#define SPE_HDR_TIMESTAMP       0x71U   /* 0111_0001, 8-byte payload */

#define SPE_HDR_MASK1           0xCFU   /* 01ss_001x: size in [5:4] */
#define SPE_HDR_EVENTS          0x42U
#define SPE_HDR_DATA_SOURCE     0x43U

#define SPE_HDR_MASK2           0xFCU   /* low two bits = index/class */
#define SPE_HDR_CONTEXT         0x64U   /* 0110_01ii, 4-byte payload */
#define SPE_HDR_OP_TYPE         0x48U   /* 0100_10cc, 1-byte payload */
#define SPE_HDR_EXTENDED        0x20U   /* 0010_00ii, index bits [4:3] */

#define SPE_HDR_MASK3           0xF8U   /* low three bits = index [2:0] */
#define SPE_HDR_ADDRESS         0xB0U   /* 1011_0iii, 8-byte payload */
#define SPE_HDR_COUNTER         0x98U   /* 1001_1iii, 2-byte payload */

/* Payload size field, header bits [5:4]: size = 1 << field. */
#define SPE_HDR_SZ_SHIFT        4
#define SPE_HDR_SZ_MASK         0x3U
#define SPE_HDR_PAYLOAD_LEN(h)  (1U << (((h) >> SPE_HDR_SZ_SHIFT) & SPE_HDR_SZ_MASK))

#define SPE_HDR_IDX2_MASK       0x03U   /* context / op class / extended index bits */
#define SPE_HDR_IDX3_MASK       0x07U   /* address / counter short index */
#define SPE_HDR_EXT_IDX_SHIFT   3       /* extended: byte0[1:0] are index bits [4:3] */

/*
 * Extended header byte 1 of 0x00: Linux perf's "alignment" pseudo packet
 * (skips to a 2^(b0[3:0]+1) boundary of its in-memory pointer). Never seen
 * in captures; armprofd decodes it as a 2-byte PAD with SPE_PKT_F_ALIGN so
 * any following 0x00 bytes are consumed as ordinary padding and a stray
 * "20 00" cannot discard a record in progress.
 */
#define SPE_HDR1_ALIGNMENT      0x00U

/*
 * Header byte 0 classified as constant expressions (they build
 * spe_hdr_table and the record decoder's dispatch table at compile time).
 * SPE_HDR_TYPE: enum spe_pkt_type, SPE_PKT_BAD for unknown bytes and
 * SPE_PKT_EXTENDED for the 2-byte prefix. SPE_HDR_PLEN: payload bytes (0 for
 * PAD, END, the prefix and bad bytes). SPE_HDR_INDEX: address/counter index
 * [2:0], context/op-class/prefix bits [1:0], else 0.
 */
#define SPE_HDR_TYPE(h)                                                                   \
        ((h) == SPE_HDR_PAD ? SPE_PKT_PAD :                                               \
         (h) == SPE_HDR_END ? SPE_PKT_END :                                               \
         (h) == SPE_HDR_TIMESTAMP ? SPE_PKT_TIMESTAMP :                                   \
         ((h) & SPE_HDR_MASK1) == SPE_HDR_EVENTS ? SPE_PKT_EVENTS :                       \
         ((h) & SPE_HDR_MASK1) == SPE_HDR_DATA_SOURCE ? SPE_PKT_DATA_SOURCE :             \
         ((h) & SPE_HDR_MASK2) == SPE_HDR_CONTEXT ? SPE_PKT_CONTEXT :                     \
         ((h) & SPE_HDR_MASK2) == SPE_HDR_OP_TYPE ? SPE_PKT_OP_TYPE :                     \
         ((h) & SPE_HDR_MASK2) == SPE_HDR_EXTENDED ? SPE_PKT_EXTENDED :                   \
         ((h) & SPE_HDR_MASK3) == SPE_HDR_ADDRESS ? SPE_PKT_ADDRESS :                     \
         ((h) & SPE_HDR_MASK3) == SPE_HDR_COUNTER ? SPE_PKT_COUNTER :                     \
         SPE_PKT_BAD)

#define SPE_HDR_PLEN(h)                                                                   \
        ((SPE_HDR_TYPE(h) == SPE_PKT_BAD || SPE_HDR_TYPE(h) == SPE_PKT_PAD ||             \
          SPE_HDR_TYPE(h) == SPE_PKT_END || SPE_HDR_TYPE(h) == SPE_PKT_EXTENDED) ? 0U :   \
         SPE_HDR_PAYLOAD_LEN(h))

#define SPE_HDR_INDEX(h)                                                                  \
        ((SPE_HDR_TYPE(h) == SPE_PKT_ADDRESS || SPE_HDR_TYPE(h) == SPE_PKT_COUNTER) ?     \
                 ((h) & SPE_HDR_IDX3_MASK) :                                              \
         (SPE_HDR_TYPE(h) == SPE_PKT_CONTEXT || SPE_HDR_TYPE(h) == SPE_PKT_OP_TYPE ||     \
          SPE_HDR_TYPE(h) == SPE_PKT_EXTENDED) ?                                          \
                 ((h) & SPE_HDR_IDX2_MASK) : 0U)

/* ---------------------------------------------------------------------
 * Address packet payload (Arm ARM D10 "Address packet").
 */
enum {
        SPE_ADDR_IDX_PC         = 0,    /* instruction VA of the sampled op */
        SPE_ADDR_IDX_BR_TGT     = 1,    /* branch target VA */
        SPE_ADDR_IDX_DATA_VA    = 2,    /* data access VA (with tag byte) */
        SPE_ADDR_IDX_DATA_PA    = 3,    /* data access PA */
        SPE_ADDR_IDX_PBT        = 4,    /* previous branch target (FEAT_SPE_PBT) */
};

#define SPE_ADDR_VA_MASK        UINT64_C(0x00FFFFFFFFFFFFFF)    /* bits [55:0] */
#define SPE_ADDR_TOP_SHIFT      56                              /* data VA: [63:56] tag/TBI byte */
#define SPE_ADDR_TOP_MASK       0xFFU
/* Instruction addresses (PC, TGT, PBT): */
#define SPE_ADDR_NSE_SHIFT      60      /* FEAT_RME; also in the PA packet */
#define SPE_ADDR_EL_SHIFT       61      /* [62:61] exception level */
#define SPE_ADDR_EL_MASK        0x3U
#define SPE_ADDR_NS_SHIFT       63      /* non-secure; also in the PA packet */
/* Data PA: */
#define SPE_ADDR_PAT_SHIFT      56      /* [59:56] physical address tag (MTE) */
#define SPE_ADDR_PAT_MASK       0xFU
#define SPE_ADDR_CH_SHIFT       62      /* tag-checked access */
/* Data VA: bits [55:52] all ones = kernel (TTBR1) address, top byte becomes 0xff (perf arm_spe_calc_ip). */
#define SPE_ADDR_VA_KERNEL_SHIFT 52
#define SPE_ADDR_VA_KERNEL_MASK 0xFU
#define SPE_ADDR_KERNEL_TOP     UINT64_C(0xFF00000000000000)

#define SPE_ADDR_NS(p)   ((unsigned) (((p) >> SPE_ADDR_NS_SHIFT) & 1U))
#define SPE_ADDR_NSE(p)  ((unsigned) (((p) >> SPE_ADDR_NSE_SHIFT) & 1U))
#define SPE_ADDR_EL(p)   ((unsigned) (((p) >> SPE_ADDR_EL_SHIFT) & SPE_ADDR_EL_MASK))
#define SPE_ADDR_CH(p)   ((unsigned) (((p) >> SPE_ADDR_CH_SHIFT) & 1U))
#define SPE_ADDR_PAT(p)  ((unsigned) (((p) >> SPE_ADDR_PAT_SHIFT) & SPE_ADDR_PAT_MASK))
#define SPE_ADDR_TAG(p)  ((unsigned) (((p) >> SPE_ADDR_TOP_SHIFT) & SPE_ADDR_TOP_MASK))

/* ---------------------------------------------------------------------
 * Counter packet (Arm ARM D10 "Counter packet").
 * Counters saturate at PMSIDR_EL1.CountSize (12 or 16 bits).
 */
enum {
        SPE_CNT_IDX_TOTAL       = 0,
        SPE_CNT_IDX_ISSUE       = 1,
        SPE_CNT_IDX_XLAT        = 2,
};
#define SPE_CNT_VALUE_MASK      0xFFFFU

/* ---------------------------------------------------------------------
 * Context packet (Arm ARM D10 "Context packet"): which CONTEXTIDR register.
 */
enum {
        SPE_CTX_IDX_EL1         = 0,
        SPE_CTX_IDX_EL2         = 1,
};

/* ---------------------------------------------------------------------
 * Operation type packet (Arm ARM D10 "Operation Type packet").
 * Class in header bits [1:0]; subclass tests on the 1-byte payload.
 */
enum {
        SPE_OP_CLASS_OTHER      = 0,
        SPE_OP_CLASS_LDST       = 1,    /* load / store / atomic */
        SPE_OP_CLASS_BRANCH     = 2,    /* branch / exception return */
        SPE_OP_CLASS_RESERVED   = 3,
};

/* Class 0, Other */
#define SPE_OP_OTHER_SUB_MASK           0xF8U   /* == 0: generic other */
#define SPE_OP_OTHER_SUB_OTHER          0x00U
#define SPE_OP_OTHER_SVE_MASK           0x89U
#define SPE_OP_OTHER_SVE                0x08U   /* SVE data processing */
#define SPE_OP_OTHER_SME                0x88U   /* SME data processing */
#define SPE_OP_OTHER_COND               0x01U   /* conditional select */
#define SPE_OP_OTHER_FP                 0x02U   /* floating point (also SVE/SME) */
#define SPE_OP_OTHER_ASE                0x04U   /* Advanced SIMD */
#define SPE_OP_OTHER_PRED               0x04U   /* SVE: predicated */
#define SPE_OP_OTHER_SME_ETS_LOW        0x04U   /* SME: low bit of the ETS code */

/* Common to SVE other / SVE-SME load-store: bits [6:4] effective vector length code, EVL = 32 << n. */
#define SPE_OP_EVL_SHIFT                4
#define SPE_OP_EVL_MASK                 0x7U
#define SPE_OP_SVE_EVL_BITS(v)          (32U << (((v) >> SPE_OP_EVL_SHIFT) & SPE_OP_EVL_MASK))
/* SME other: ETS = 128 << ((bits[6:4] << 1) | bit2). */
#define SPE_OP_SME_ETS_BITS(v)          (128U << (((((v) >> SPE_OP_EVL_SHIFT) & SPE_OP_EVL_MASK) << 1) | \
                                                  (((v) & SPE_OP_OTHER_SME_ETS_LOW) ? 1U : 0U)))

/* Class 1, Load/store/atomic; tested in this order (perf's order). */
#define SPE_OP_LDST_ST                  0x01U   /* 1 = store, 0 = load */
#define SPE_OP_LDST_EXT_MASK            0xE2U
#define SPE_OP_LDST_EXT                 0x02U   /* atomic / exclusive / acquire-release, GP reg */
#define SPE_OP_LDST_AT                  0x04U
#define SPE_OP_LDST_EXCL                0x08U
#define SPE_OP_LDST_AR                  0x10U
#define SPE_OP_LDST_SUB_MASK            0xFEU
#define SPE_OP_LDST_SIMD_FP             0x04U
#define SPE_OP_LDST_GP_REG              0x00U
#define SPE_OP_LDST_UNSPEC_REG          0x10U
#define SPE_OP_LDST_NV_SYSREG           0x30U
#define SPE_OP_LDST_MTE_TAG             0x14U
#define SPE_OP_LDST_MEMCPY              0x20U
#define SPE_OP_LDST_MEMSET_MASK         0xFFU
#define SPE_OP_LDST_MEMSET              0x25U
#define SPE_OP_LDST_SVE_MASK            0x0AU
#define SPE_OP_LDST_SVE                 0x08U   /* SVE/SME register load/store */
#define SPE_OP_LDST_SVE_PRED            0x04U
#define SPE_OP_LDST_SVE_SG              0x80U   /* gather/scatter */
#define SPE_OP_LDST_GCS_MASK            0xFAU
#define SPE_OP_LDST_GCS                 0x40U   /* Guarded Control Stack data access */
#define SPE_OP_LDST_GCS_COMM            0x04U

/* Class 2, Branch */
#define SPE_OP_BR_COND                  0x01U
#define SPE_OP_BR_IND                   0x02U
#define SPE_OP_BR_GCS                   0x04U
#define SPE_OP_BR_CR_SHIFT              3       /* [4:3] call/return hint (FEAT_SPE_CRR) */
#define SPE_OP_BR_CR_MASK               0x3U
#define SPE_OP_BR_CR_BL                 1U
#define SPE_OP_BR_CR_RET                2U
#define SPE_OP_BR_CR_OTHER              3U

/* ---------------------------------------------------------------------
 * Events packet bits (Arm ARM D10 "Events packet"; same numbering as PMSEVFR_EL1).
 */
enum {
        SPE_EV_EXCEPTION_GEN    = 0,
        SPE_EV_RETIRED          = 1,
        SPE_EV_L1D_ACCESS       = 2,
        SPE_EV_L1D_REFILL       = 3,
        SPE_EV_TLB_ACCESS       = 4,
        SPE_EV_TLB_WALK         = 5,
        SPE_EV_NOT_TAKEN        = 6,
        SPE_EV_MISPRED          = 7,
        SPE_EV_LLC_ACCESS       = 8,
        SPE_EV_LLC_MISS         = 9,
        SPE_EV_REMOTE_ACCESS    = 10,
        SPE_EV_ALIGNMENT        = 11,
        SPE_EV_IMPDEF_12        = 12,   /* Neoverse N1: late prefetch */
        SPE_EV_TXN              = 16,
        SPE_EV_SVE_PARTIAL_PRED = 17,
        SPE_EV_SVE_EMPTY_PRED   = 18,
        SPE_EV_L2D_ACCESS       = 19,
        SPE_EV_L2D_MISS         = 20,
        SPE_EV_CACHE_DATA_MODIFIED = 21,        /* perf "HITM" */
        SPE_EV_RECENTLY_FETCHED = 22,           /* perf "LFB" */
        SPE_EV_DATA_SNOOPED     = 23,           /* perf "SNOOPED" */
        SPE_EV_STREAMING_SVE    = 24,
        SPE_EV_SMCU             = 25,
};
#define SPE_EV_BIT(n)           (UINT64_C(1) << (n))
#define SPE_EV_IMPDEF_LO_MASK   UINT64_C(0x000000000000F000)    /* bits [15:12] */
#define SPE_EV_IMPDEF_HI_MASK   UINT64_C(0xFFFF000000000000)    /* bits [63:48] */

/* ---------------------------------------------------------------------
 * Data source values, "common" encoding of Arm-designed cores (IMPLEMENTATION
 * DEFINED: each Neoverse TRM, "Data source packet"; tools/perf/util/arm-spe.c;
 * selected by MIDR in spe-rec).
 */
enum {
        SPE_DS_COMMON_L1D               = 0x0,
        SPE_DS_COMMON_L2                = 0x8,
        SPE_DS_COMMON_PEER_CORE         = 0x9,
        SPE_DS_COMMON_LOCAL_CLUSTER     = 0xA,
        SPE_DS_COMMON_SYS_CACHE         = 0xB,
        SPE_DS_COMMON_PEER_CLUSTER      = 0xC,
        SPE_DS_COMMON_REMOTE            = 0xD,
        SPE_DS_COMMON_DRAM              = 0xE,
};

/* AmpereOne (AMPERE1A) data source values, remapped as perf does. */
enum {
        SPE_DS_AMPERE_LOCAL_CHIP_CACHE  = 0x0,      /* -> peer core */
        SPE_DS_AMPERE_SLC               = 0x3,      /* -> system cache */
        SPE_DS_AMPERE_REMOTE_CHIP_CACHE = 0x5,      /* -> remote */
        SPE_DS_AMPERE_DDR               = 0x7,      /* -> DRAM */
        SPE_DS_AMPERE_L1D               = 0x8,
        SPE_DS_AMPERE_L2D               = 0x9,
};
