/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-enc.h"

#include <assert.h>

static size_t put_le(uint8_t *buf, uint64_t v, unsigned size) {
        for (unsigned i = 0; i < size; i++)
                buf[i] = (uint8_t) (v >> (8 * i));
        return size;
}

/* Payload sizes 1/2/4/8 map to the header size code 0/1/2/3. */
static uint8_t size_code(unsigned size) {
        switch (size) {
        case 1: return 0;
        case 2: return 1;
        case 4: return 2;
        default:
                assert(size == 8);
                return 3;
        }
}

uint64_t spe_enc_ip_payload(uint64_t va, unsigned el, bool ns) {
        return (va & SPE_ENC_ADDR_VA_MASK) |
               ((uint64_t) (el & SPE_ENC_ADDR_EL_MASK) << SPE_ENC_ADDR_EL_SHIFT) |
               (ns ? SPE_ENC_ADDR_NS_BIT : 0);
}

uint64_t spe_enc_pa_payload(uint64_t pa, bool ns, bool ch, unsigned pat) {
        return (pa & SPE_ENC_ADDR_VA_MASK) |
               ((uint64_t) (pat & SPE_ENC_ADDR_PAT_MASK) << SPE_ENC_ADDR_PAT_SHIFT) |
               (ch ? SPE_ENC_ADDR_CH_BIT : 0) |
               (ns ? SPE_ENC_ADDR_NS_BIT : 0);
}

size_t spe_enc_pad(uint8_t *buf) {
        buf[0] = SPE_ENC_HDR_PAD;
        return 1;
}

size_t spe_enc_end(uint8_t *buf) {
        buf[0] = SPE_ENC_HDR_END;
        return 1;
}

size_t spe_enc_timestamp(uint8_t *buf, uint64_t ts) {
        buf[0] = SPE_ENC_HDR_TIMESTAMP;
        return 1 + put_le(buf + 1, ts, 8);
}

/* Address and Counter packets share the index split of §1.1: the short
 * header holds index bits [2:0]; indexes >= 8 (or ext) need the 0x20 prefix
 * carrying bits [4:3]. */
static size_t put_indexed_header(uint8_t *buf, uint8_t base, unsigned idx, bool ext) {
        assert(idx <= SPE_ENC_IDX_MAX);
        if (ext || idx > SPE_ENC_IDX_LO_MASK) {
                buf[0] = SPE_ENC_HDR_EXTENDED | ((idx >> SPE_ENC_IDX_HI_SHIFT) & SPE_ENC_IDX_HI_MASK);
                buf[1] = base | (idx & SPE_ENC_IDX_LO_MASK);
                return 2;
        }
        buf[0] = base | (idx & SPE_ENC_IDX_LO_MASK);
        return 1;
}

size_t spe_enc_address(uint8_t *buf, unsigned idx, uint64_t payload, bool ext) {
        size_t n = put_indexed_header(buf, SPE_ENC_HDR_ADDRESS, idx, ext);
        return n + put_le(buf + n, payload, 8);
}

size_t spe_enc_counter(uint8_t *buf, unsigned idx, uint16_t count, bool ext) {
        size_t n = put_indexed_header(buf, SPE_ENC_HDR_COUNTER, idx, ext);
        return n + put_le(buf + n, count, 2);
}

size_t spe_enc_events(uint8_t *buf, uint64_t events, unsigned size) {
        buf[0] = SPE_ENC_HDR_EVENTS | (uint8_t) (size_code(size) << SPE_ENC_HDR_SZ_SHIFT);
        return 1 + put_le(buf + 1, events, size);
}

size_t spe_enc_data_source(uint8_t *buf, uint64_t source, unsigned size) {
        buf[0] = SPE_ENC_HDR_DATA_SOURCE | (uint8_t) (size_code(size) << SPE_ENC_HDR_SZ_SHIFT);
        return 1 + put_le(buf + 1, source, size);
}

size_t spe_enc_context(uint8_t *buf, unsigned idx, uint32_t context) {
        buf[0] = SPE_ENC_HDR_CONTEXT | (idx & SPE_ENC_CONTEXT_IDX_MASK);
        return 1 + put_le(buf + 1, context, 4);
}

size_t spe_enc_op_type(uint8_t *buf, unsigned op_class, uint8_t subclass) {
        buf[0] = SPE_ENC_HDR_OP_TYPE | (op_class & SPE_ENC_OP_CLASS_MASK);
        buf[1] = subclass;
        return 2;
}
