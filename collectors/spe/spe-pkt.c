/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Arm SPE packet decoder. See spe-pkt.h for the header patterns (Arm ARM
 * D10 "Packet headers"); the match order below is the one Linux perf uses
 * (tools/perf/util/arm-spe-decoder/arm-spe-pkt-decoder.c,
 * arm_spe_do_get_packet()), and the patterns do not overlap.
 */
#include "spe-pkt.h"

#include "macro.h"

#define E1(h)  { SPE_HDR_TYPE(h), SPE_HDR_PLEN(h), SPE_HDR_INDEX(h) }
#define E4(h)  E1(h), E1((h) + 1), E1((h) + 2), E1((h) + 3)
#define E16(h) E4(h), E4((h) + 4), E4((h) + 8), E4((h) + 12)
#define E64(h) E16(h), E16((h) + 16), E16((h) + 32), E16((h) + 48)

const struct spe_hdr_info spe_hdr_table[256] = {
        E64(0x00U), E64(0x40U), E64(0x80U), E64(0xC0U),
};

static const char *const pkt_type_names[_SPE_PKT_TYPE_MAX] = {
        [SPE_PKT_BAD]           = "BAD",
        [SPE_PKT_PAD]           = "PAD",
        [SPE_PKT_END]           = "END",
        [SPE_PKT_TIMESTAMP]     = "TS",
        [SPE_PKT_EVENTS]        = "EV",
        [SPE_PKT_DATA_SOURCE]   = "DATA-SOURCE",
        [SPE_PKT_CONTEXT]       = "CONTEXT",
        [SPE_PKT_OP_TYPE]       = "OP-TYPE",
        [SPE_PKT_ADDRESS]       = "ADDR",
        [SPE_PKT_COUNTER]       = "LAT",
        [SPE_PKT_EXTENDED]      = "EXT",
};

const char *spe_pkt_type_name(enum spe_pkt_type t) {
        if ((unsigned) t >= ELEMENTSOF(pkt_type_names))
                return "?";
        return pkt_type_names[t];
}

/*
 * Two-byte (extended) header (Arm ARM D10 "Packet headers"): byte 0 = 0010_00ii (index bits [4:3]),
 * byte 1 = an address or counter short header (index bits [2:0], size).
 */
static int decode_extended(const uint8_t *buf, size_t len, struct spe_pkt *ret_pkt) {
        const struct spe_hdr_info *i1;
        unsigned n;

        if (len < 2)
                return SPE_PKT_ERR_NEED_MORE;

        if (buf[1] == SPE_HDR1_ALIGNMENT) {
                /* See SPE_HDR1_ALIGNMENT: two bytes of padding, never a resync. */
                *ret_pkt = (struct spe_pkt) {
                        .type = SPE_PKT_PAD,
                        .len = 2,
                        .hdr_len = 2,
                        .flags = SPE_PKT_F_ALIGN,
                };
                return 2;
        }

        i1 = &spe_hdr_table[buf[1]];
        if (i1->type != SPE_PKT_ADDRESS && i1->type != SPE_PKT_COUNTER)
                return SPE_PKT_ERR_BAD_EXT;

        n = 2U + i1->payload_len;
        if (len < n)
                return SPE_PKT_ERR_NEED_MORE;

        *ret_pkt = (struct spe_pkt) {
                .payload = spe_pkt_load_le(buf + 2, i1->payload_len),
                .type = i1->type,
                .index = (uint8_t) (((buf[0] & SPE_HDR_IDX2_MASK) << SPE_HDR_EXT_IDX_SHIFT) |
                                    (buf[1] & SPE_HDR_IDX3_MASK)),
                .len = (uint8_t) n,
                .hdr_len = 2,
                .payload_len = i1->payload_len,
        };
        return (int) n;
}

int spe_pkt_decode(const uint8_t *buf, size_t len, struct spe_pkt *ret_pkt) {
        const struct spe_hdr_info *info;
        unsigned n;

        if (!ret_pkt || (!buf && len > 0))
                return -EINVAL;
        if (len == 0)
                return SPE_PKT_ERR_NEED_MORE;

        info = &spe_hdr_table[buf[0]];
        switch (info->type) {
        case SPE_PKT_BAD:
                return SPE_PKT_ERR_BAD;
        case SPE_PKT_EXTENDED:
                return decode_extended(buf, len, ret_pkt);
        default:
                break;
        }

        n = 1U + info->payload_len;
        if (len < n)
                return SPE_PKT_ERR_NEED_MORE;

        *ret_pkt = (struct spe_pkt) {
                .payload = spe_pkt_load_le(buf + 1, info->payload_len),
                .type = info->type,
                .index = info->index,
                .len = (uint8_t) n,
                .hdr_len = 1,
                .payload_len = info->payload_len,
        };
        return (int) n;
}
