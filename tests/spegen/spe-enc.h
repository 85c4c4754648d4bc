/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Arm SPE packet *encoder* for the synthetic generator. This is the
 * independent writer side: it shares no code with collectors/spe/ so that a
 * round trip through the decoder checks two separate readings of the
 * format. Every function writes one packet into buf (which must hold at
 * least SPE_ENC_MAX_PKT bytes) and returns the number of bytes written.
 *
 * Header layouts follow the Arm ARM (DDI 0487) "Statistical Profiling
 * Extension" packet chapter (D10: "Packet headers" and the packet
 * sections after it). All payloads are little-endian.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest packet: 2-byte extended header + 8-byte payload. */
#define SPE_ENC_MAX_PKT 10

/* Short header byte 0 patterns (Arm ARM D10 "Packet headers"). */
#define SPE_ENC_HDR_PAD             0x00
#define SPE_ENC_HDR_END             0x01
#define SPE_ENC_HDR_TIMESTAMP       0x71 /* 0111 0001: 8-byte payload */
#define SPE_ENC_HDR_EVENTS          0x42 /* 01ss 0010 */
#define SPE_ENC_HDR_DATA_SOURCE     0x43 /* 01ss 0011 */
#define SPE_ENC_HDR_CONTEXT         0x64 /* 0110 01ii, 4-byte payload */
#define SPE_ENC_HDR_OP_TYPE         0x48 /* 0100 10cc, 1-byte payload */
#define SPE_ENC_HDR_EXTENDED        0x20 /* 0010 00ii: index bits [4:3] */
#define SPE_ENC_HDR_ADDRESS         0xb0 /* 1011 0iii, 8-byte payload */
#define SPE_ENC_HDR_COUNTER         0x98 /* 1001 1iii, 2-byte payload */

/* Payload size code in header bits [5:4]: size = 1 << code. */
#define SPE_ENC_HDR_SZ_SHIFT        4
#define SPE_ENC_HDR_SZ_MASK         0x30
/* Index split for Address/Counter: [2:0] in the last header byte, [4:3] in
 * the extended prefix (Arm ARM D10 "Packet headers"). */
#define SPE_ENC_IDX_LO_MASK         0x07
#define SPE_ENC_IDX_HI_SHIFT        3
#define SPE_ENC_IDX_HI_MASK         0x03
#define SPE_ENC_IDX_MAX             31
#define SPE_ENC_CONTEXT_IDX_MASK    0x03
#define SPE_ENC_OP_CLASS_MASK       0x03

/* Address packet indexes (Arm ARM D10 "Address packet"). */
#define SPE_ENC_ADDR_PC             0
#define SPE_ENC_ADDR_TGT            1
#define SPE_ENC_ADDR_VA             2
#define SPE_ENC_ADDR_PA             3

/* Address payload fields (PC/TGT: [55:0] VA, [62:61] EL, [63] NS;
 * PA: [55:0] PA, [59:56] PAT, [62] CH, [63] NS). */
#define SPE_ENC_ADDR_VA_MASK        UINT64_C(0x00ffffffffffffff)
#define SPE_ENC_ADDR_EL_SHIFT       61
#define SPE_ENC_ADDR_EL_MASK        UINT64_C(0x3)
#define SPE_ENC_ADDR_NS_BIT         (UINT64_C(1) << 63)
#define SPE_ENC_ADDR_CH_BIT         (UINT64_C(1) << 62)
#define SPE_ENC_ADDR_PAT_SHIFT      56
#define SPE_ENC_ADDR_PAT_MASK       UINT64_C(0xf)

/* Counter packet indexes (Arm ARM D10 "Counter packet"). */
#define SPE_ENC_CNT_TOTAL           0
#define SPE_ENC_CNT_ISSUE           1
#define SPE_ENC_CNT_XLAT            2

/* Context packet index: 0 = CONTEXTIDR_EL1, 1 = CONTEXTIDR_EL2. */
#define SPE_ENC_CONTEXT_EL1         0
#define SPE_ENC_CONTEXT_EL2         1

/* Operation type classes (Arm ARM D10 "Operation Type packet"). */
#define SPE_ENC_OP_OTHER            0
#define SPE_ENC_OP_LDST             1
#define SPE_ENC_OP_BRANCH           2

/* Op subclass bytes used by the scenarios (Arm ARM D10 "Operation Type packet"). */
#define SPE_ENC_OP_LDST_ST          0x01 /* bit0: store */
#define SPE_ENC_OP_LDST_GP          0x00
#define SPE_ENC_OP_LDST_SIMD        0x04
#define SPE_ENC_OP_LDST_EXT         0x02 /* atomic/excl/acq-rel */
#define SPE_ENC_OP_LDST_EXT_AT      0x04
#define SPE_ENC_OP_LDST_EXT_AR      0x10
#define SPE_ENC_OP_OTHER_COND       0x01
#define SPE_ENC_OP_BR_COND          0x01
#define SPE_ENC_OP_BR_IND           0x02

/* Events packet bits (Arm ARM D10 "Events packet"; PMSEVFR_EL1 numbering). */
#define SPE_ENC_EV_EXCEPTION        (UINT64_C(1) << 0)
#define SPE_ENC_EV_RETIRED          (UINT64_C(1) << 1)
#define SPE_ENC_EV_L1D_ACCESS       (UINT64_C(1) << 2)
#define SPE_ENC_EV_L1D_REFILL       (UINT64_C(1) << 3)
#define SPE_ENC_EV_TLB_ACCESS       (UINT64_C(1) << 4)
#define SPE_ENC_EV_TLB_WALK         (UINT64_C(1) << 5)
#define SPE_ENC_EV_NOT_TAKEN        (UINT64_C(1) << 6)
#define SPE_ENC_EV_MISPRED          (UINT64_C(1) << 7)
#define SPE_ENC_EV_LLC_ACCESS       (UINT64_C(1) << 8)
#define SPE_ENC_EV_LLC_REFILL       (UINT64_C(1) << 9)
#define SPE_ENC_EV_REMOTE_ACCESS    (UINT64_C(1) << 10)

/* Neoverse "common" data-source encoding (Neoverse TRMs, "Data source packet"). */
#define SPE_ENC_DS_L1D              0x0
#define SPE_ENC_DS_L2               0x8
#define SPE_ENC_DS_PEER_CORE        0x9
#define SPE_ENC_DS_LOCAL_CLUSTER    0xa
#define SPE_ENC_DS_SYS_CACHE        0xb
#define SPE_ENC_DS_PEER_CLUSTER     0xc
#define SPE_ENC_DS_REMOTE           0xd
#define SPE_ENC_DS_DRAM             0xe

uint64_t spe_enc_ip_payload(uint64_t va, unsigned el, bool ns);
uint64_t spe_enc_pa_payload(uint64_t pa, bool ns, bool ch, unsigned pat);

size_t spe_enc_pad(uint8_t *buf);
size_t spe_enc_end(uint8_t *buf);
size_t spe_enc_timestamp(uint8_t *buf, uint64_t ts);
/* ext: write the 2-byte extended header even when idx < 8. */
size_t spe_enc_address(uint8_t *buf, unsigned idx, uint64_t payload, bool ext);
size_t spe_enc_counter(uint8_t *buf, unsigned idx, uint16_t count, bool ext);
/* size: payload bytes, 1, 2, 4 or 8; value is truncated to it. */
size_t spe_enc_events(uint8_t *buf, uint64_t events, unsigned size);
size_t spe_enc_data_source(uint8_t *buf, uint64_t source, unsigned size);
size_t spe_enc_context(uint8_t *buf, unsigned idx, uint32_t context);
size_t spe_enc_op_type(uint8_t *buf, unsigned op_class, uint8_t subclass);
