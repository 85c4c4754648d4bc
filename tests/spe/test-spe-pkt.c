/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Packet decoder unit tests: every packet kind, every error path.
 * Expected values are written out from the Arm ARM (D10, the packet
 * sections) and the byte vectors of Arm's spe-parser and perf's tests,
 * not derived from the decoder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "macro.h"
#include "spe-pkt.h"

#define MAXB 16

struct pkt_case {
        const char *name;
        uint8_t bytes[MAXB];
        unsigned nbytes;
        enum spe_pkt_type type;
        unsigned index;
        uint64_t payload;
        unsigned hdr_len;
        unsigned payload_len;
        unsigned flags;
};

static const struct pkt_case cases[] = {
        { "pad", { 0x00 }, 1, SPE_PKT_PAD, 0, 0, 1, 0, 0 },
        { "end", { 0x01 }, 1, SPE_PKT_END, 0, 0, 1, 0, 0 },
        { "timestamp", { 0x71, 0x6c, 0xf8, 0xa5, 0x83, 0x00, 0x0c, 0x00, 0x00 }, 9,
          SPE_PKT_TIMESTAMP, 0, UINT64_C(13196348225644), 1, 8, 0 },
        { "events-1", { 0x42, 0x16 }, 2, SPE_PKT_EVENTS, 0, 0x16, 1, 1, 0 },
        { "events-2", { 0x52, 0x1e, 0x03 }, 3, SPE_PKT_EVENTS, 0, 0x031e, 1, 2, 0 },
        { "events-4", { 0x62, 0x01, 0x02, 0x03, 0x84 }, 5, SPE_PKT_EVENTS, 0, 0x84030201, 1, 4, 0 },
        { "events-8", { 0x72, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xf8 }, 9, SPE_PKT_EVENTS, 0,
          UINT64_C(0xf807060504030201), 1, 8, 0 },
        { "dsrc-1", { 0x43, 0x0d }, 2, SPE_PKT_DATA_SOURCE, 0, 0x0d, 1, 1, 0 },
        { "dsrc-2", { 0x53, 0x0e, 0x01 }, 3, SPE_PKT_DATA_SOURCE, 0, 0x010e, 1, 2, 0 },
        { "dsrc-4", { 0x63, 0xaa, 0xbb, 0xcc, 0xdd }, 5, SPE_PKT_DATA_SOURCE, 0, 0xddccbbaa, 1, 4, 0 },
        { "dsrc-8", { 0x73, 1, 0, 0, 0, 0, 0, 0, 0x80 }, 9, SPE_PKT_DATA_SOURCE, 0,
          UINT64_C(0x8000000000000001), 1, 8, 0 },
        { "context-el1", { 0x64, 0x93, 0x10, 0x00, 0x00 }, 5, SPE_PKT_CONTEXT, 0, 0x1093, 1, 4, 0 },
        { "context-el2", { 0x65, 0x80, 0x5f, 0x00, 0x00 }, 5, SPE_PKT_CONTEXT, 1, 0x5f80, 1, 4, 0 },
        { "context-idx2", { 0x66, 0x01, 0x00, 0x00, 0x00 }, 5, SPE_PKT_CONTEXT, 2, 1, 1, 4, 0 },
        { "context-idx3", { 0x67, 0xff, 0xff, 0xff, 0xff }, 5, SPE_PKT_CONTEXT, 3, 0xffffffff, 1, 4, 0 },
        { "op-other", { 0x48, 0x06 }, 2, SPE_PKT_OP_TYPE, 0, 0x06, 1, 1, 0 },
        { "op-ldst", { 0x49, 0x16 }, 2, SPE_PKT_OP_TYPE, 1, 0x16, 1, 1, 0 },
        { "op-branch", { 0x4a, 0x01 }, 2, SPE_PKT_OP_TYPE, 2, 0x01, 1, 1, 0 },
        { "op-reserved", { 0x4b, 0xff }, 2, SPE_PKT_OP_TYPE, 3, 0xff, 1, 1, 0 },
        { "addr-pc", { 0xb0, 0x5c, 0x8b, 0x8c, 0x86, 0xc2, 0xc0, 0xff, 0xc0 }, 9, SPE_PKT_ADDRESS, 0,
          UINT64_C(0xc0ffc0c2868c8b5c), 1, 8, 0 },
        { "addr-tgt", { 0xb1, 0xe0, 0x89, 0x8c, 0x86, 0xc2, 0xc0, 0xff, 0xc0 }, 9, SPE_PKT_ADDRESS, 1,
          UINT64_C(0xc0ffc0c2868c89e0), 1, 8, 0 },
        { "addr-va", { 0xb2, 0xc0, 0x26, 0xc2, 0x07, 0x20, 0xfc, 0xff, 0x00 }, 9, SPE_PKT_ADDRESS, 2,
          UINT64_C(0x00fffc2007c226c0), 1, 8, 0 },
        { "addr-pa", { 0xb3, 0xe8, 0x09, 0x8a, 0xd8, 0x0b, 0x08, 0x00, 0x80 }, 9, SPE_PKT_ADDRESS, 3,
          UINT64_C(0x8000080bd88a09e8), 1, 8, 0 },
        { "addr-pbt", { 0xb4, 0x08, 0x44, 0x21, 0xbf, 0xfd, 0x7f, 0x00, 0x80 }, 9, SPE_PKT_ADDRESS, 4,
          UINT64_C(0x80007ffdbf214408), 1, 8, 0 },
        { "addr-idx7", { 0xb7, 1, 2, 3, 4, 5, 6, 7, 8 }, 9, SPE_PKT_ADDRESS, 7,
          UINT64_C(0x0807060504030201), 1, 8, 0 },
        { "cnt-total", { 0x98, 0x0b, 0x00 }, 3, SPE_PKT_COUNTER, 0, 11, 1, 2, 0 },
        { "cnt-issue", { 0x99, 0x07, 0x00 }, 3, SPE_PKT_COUNTER, 1, 7, 1, 2, 0 },
        { "cnt-xlat", { 0x9a, 0x01, 0x00 }, 3, SPE_PKT_COUNTER, 2, 1, 1, 2, 0 },
        { "cnt-idx7", { 0x9f, 0xff, 0xff }, 3, SPE_PKT_COUNTER, 7, 0xffff, 1, 2, 0 },
        { "ext-addr-0", { 0x20, 0xb0, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, SPE_PKT_ADDRESS, 0,
          UINT64_C(0x0807060504030201), 2, 8, 0 },
        { "ext-addr-10", { 0x21, 0xb2, 0x11, 0, 0, 0, 0, 0, 0, 0 }, 10, SPE_PKT_ADDRESS, 10, 0x11, 2, 8, 0 },
        { "ext-addr-31", { 0x23, 0xb7, 0, 0, 0, 0, 0, 0, 0, 0xff }, 10, SPE_PKT_ADDRESS, 31,
          UINT64_C(0xff00000000000000), 2, 8, 0 },
        { "ext-cnt-17", { 0x22, 0x99, 0x34, 0x12 }, 4, SPE_PKT_COUNTER, 17, 0x1234, 2, 2, 0 },
        { "ext-cnt-31", { 0x23, 0x9f, 0x01, 0x00 }, 4, SPE_PKT_COUNTER, 31, 1, 2, 2, 0 },
        { "ext-align", { 0x20, 0x00 }, 2, SPE_PKT_PAD, 0, 0, 2, 0, SPE_PKT_F_ALIGN },
        { "ext-align-3", { 0x23, 0x00 }, 2, SPE_PKT_PAD, 0, 0, 2, 0, SPE_PKT_F_ALIGN },
};

static void check_pkt(const struct pkt_case *c, const uint8_t *buf, size_t len) {
        struct spe_pkt p;
        int r;

        memset(&p, 0xaa, sizeof(p));
        r = spe_pkt_decode(buf, len, &p);
        if (r != (int) c->nbytes)
                fail_msg("%s: returned %d, want %u", c->name, r, c->nbytes);
        assert_int_equal(p.type, c->type);
        assert_int_equal(p.index, c->index);
        assert_true(p.payload == c->payload);
        assert_int_equal(p.len, c->nbytes);
        assert_int_equal(p.hdr_len, c->hdr_len);
        assert_int_equal(p.payload_len, c->payload_len);
        assert_int_equal(p.flags, c->flags);
}

static void test_kinds(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint8_t buf[MAXB + 8];

                /* Exact length, and with trailing bytes that must not be consumed. */
                check_pkt(&cases[i], cases[i].bytes, cases[i].nbytes);
                memcpy(buf, cases[i].bytes, cases[i].nbytes);
                memset(buf + cases[i].nbytes, 0x71, sizeof(buf) - cases[i].nbytes);
                check_pkt(&cases[i], buf, sizeof(buf));
        }
}

static void test_unaligned(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                for (size_t off = 1; off < 8; off++) {
                        uint8_t buf[MAXB + 8];

                        memset(buf, 0xee, sizeof(buf));
                        memcpy(buf + off, cases[i].bytes, cases[i].nbytes);
                        check_pkt(&cases[i], buf + off, cases[i].nbytes);
                }
}

/* Every shorter length is "need more", and the output is untouched. */
static void test_truncated(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                for (unsigned l = 0; l < cases[i].nbytes; l++) {
                        struct spe_pkt p, sentinel;
                        int r;

                        memset(&p, 0x5a, sizeof(p));
                        sentinel = p;
                        r = spe_pkt_decode(cases[i].bytes, l, &p);
                        if (r != SPE_PKT_ERR_NEED_MORE)
                                fail_msg("%s len %u: returned %d", cases[i].name, l, r);
                        assert_memory_equal(&p, &sentinel, sizeof(p));
                }
}

/*
 * All 256 header bytes against the spec table (Arm ARM D10 "Packet headers"), written as
 * explicit ranges: total packet length for valid short headers, 0 for the
 * extended prefix, -1 for "bad".
 */
struct hdr_range {
        uint8_t lo, hi;
        int len;
};
static const struct hdr_range valid_headers[] = {
        { 0x00, 0x00, 1 }, { 0x01, 0x01, 1 }, { 0x71, 0x71, 9 },
        { 0x42, 0x42, 2 }, { 0x52, 0x52, 3 }, { 0x62, 0x62, 5 }, { 0x72, 0x72, 9 },
        { 0x43, 0x43, 2 }, { 0x53, 0x53, 3 }, { 0x63, 0x63, 5 }, { 0x73, 0x73, 9 },
        { 0x64, 0x67, 5 }, { 0x48, 0x4b, 2 }, { 0x20, 0x23, 0 },
        { 0xb0, 0xb7, 9 }, { 0x98, 0x9f, 3 },
};

static int expected_len(unsigned h) {
        for (size_t i = 0; i < ELEMENTSOF(valid_headers); i++)
                if (h >= valid_headers[i].lo && h <= valid_headers[i].hi)
                        return valid_headers[i].len;
        return -1;
}

static void test_all_headers(void **state) {
        unsigned bad = 0;

        for (unsigned h = 0; h < 256; h++) {
                uint8_t buf[MAXB] = { (uint8_t) h, 0xb0 };
                struct spe_pkt p;
                int want = expected_len(h), r;

                r = spe_pkt_decode(buf, sizeof(buf), &p);
                if (want < 0) {
                        if (r != SPE_PKT_ERR_BAD)
                                fail_msg("header 0x%02x: returned %d, want BAD", h, r);
                        bad++;
                } else if (want == 0) {
                        /* extended prefix followed by an address header: 10 bytes */
                        assert_int_equal(r, 10);
                        assert_int_equal(p.type, SPE_PKT_ADDRESS);
                        assert_int_equal(p.index, (h & 3) << 3);
                } else if (r != want)
                        fail_msg("header 0x%02x: returned %d, want %d", h, r, want);
        }
        /* 3 fixed + 8 events/dsrc + 4 ctx + 4 op + 4 ext + 8 addr + 8 cnt = 39 valid */
        assert_int_equal(bad, 256 - 39);
}

static void test_extended_second_byte(void **state) {
        for (unsigned b1 = 0; b1 < 256; b1++) {
                uint8_t buf[MAXB] = { 0x21, (uint8_t) b1 };
                struct spe_pkt p;
                int r = spe_pkt_decode(buf, sizeof(buf), &p);

                if (b1 == 0x00) {
                        assert_int_equal(r, 2);
                        assert_int_equal(p.type, SPE_PKT_PAD);
                } else if (b1 >= 0xb0 && b1 <= 0xb7) {
                        assert_int_equal(r, 10);
                        assert_int_equal(p.index, 8 + (b1 & 7));
                } else if (b1 >= 0x98 && b1 <= 0x9f) {
                        assert_int_equal(r, 4);
                        assert_int_equal(p.type, SPE_PKT_COUNTER);
                        assert_int_equal(p.index, 8 + (b1 & 7));
                } else if (r != SPE_PKT_ERR_BAD_EXT)
                        fail_msg("20 %02x: returned %d, want BAD_EXT", b1, r);
        }

        /* A lone prefix is not yet decidable. */
        {
                const uint8_t b[] = { 0x20 };
                struct spe_pkt p;

                assert_int_equal(spe_pkt_decode(b, 1, &p), SPE_PKT_ERR_NEED_MORE);
        }
}

static void test_bad_args(void **state) {
        const uint8_t b[] = { 0x01 };
        struct spe_pkt p;

        assert_int_equal(spe_pkt_decode(b, 1, NULL), -EINVAL);
        assert_int_equal(spe_pkt_decode(NULL, 1, &p), -EINVAL);
        assert_int_equal(spe_pkt_decode(NULL, 0, &p), SPE_PKT_ERR_NEED_MORE);
        /* The three error codes are distinct and negative. */
        assert_true(SPE_PKT_ERR_NEED_MORE < 0 && SPE_PKT_ERR_BAD < 0 && SPE_PKT_ERR_BAD_EXT < 0);
        assert_int_not_equal(SPE_PKT_ERR_NEED_MORE, SPE_PKT_ERR_BAD);
        assert_int_not_equal(SPE_PKT_ERR_BAD, SPE_PKT_ERR_BAD_EXT);
}

/* Field macros against the worked examples of Arm ARM D10 "Address packet" and §10. */
static void test_addr_fields(void **state) {
        /* PC 0xc0ffba66eda1c2d0: NS=1, EL=2 */
        uint64_t pc = UINT64_C(0xc0ffba66eda1c2d0);
        assert_int_equal(SPE_ADDR_NS(pc), 1);
        assert_int_equal(SPE_ADDR_EL(pc), 2);
        assert_int_equal(SPE_ADDR_NSE(pc), 0);
        assert_true((pc & SPE_ADDR_VA_MASK) == UINT64_C(0xffba66eda1c2d0));
        /* KVM guest PC top byte 0xa0: NS=1 EL=1 */
        assert_int_equal(SPE_ADDR_EL(UINT64_C(0xa0ff80001029d3f4)), 1);
        /* PA 0x8000080bd88a09e8: NS=1, CH=0, PAT=0 */
        uint64_t pa = UINT64_C(0x8000080bd88a09e8);
        assert_int_equal(SPE_ADDR_NS(pa), 1);
        assert_int_equal(SPE_ADDR_CH(pa), 0);
        assert_int_equal(SPE_ADDR_PAT(pa), 0);
        /* PA with CH, PAT 0xa, NSE */
        uint64_t pa2 = UINT64_C(0x5a00000000001000);
        assert_int_equal(SPE_ADDR_NS(pa2), 0);
        assert_int_equal(SPE_ADDR_CH(pa2), 1);
        assert_int_equal(SPE_ADDR_NSE(pa2), 1);
        assert_int_equal(SPE_ADDR_PAT(pa2), 0xa);
        /* VA tag byte */
        assert_int_equal(SPE_ADDR_TAG(UINT64_C(0x3c00aaaae65dda43)), 0x3c);
        /* payload sizes from header bits [5:4] */
        assert_int_equal(SPE_HDR_PAYLOAD_LEN(0x42), 1);
        assert_int_equal(SPE_HDR_PAYLOAD_LEN(0x52), 2);
        assert_int_equal(SPE_HDR_PAYLOAD_LEN(0x62), 4);
        assert_int_equal(SPE_HDR_PAYLOAD_LEN(0x72), 8);
        /* EVL / ETS: SVE 32 << n, SME 128 << ((n << 1) | bit2) */
        assert_int_equal(SPE_OP_SVE_EVL_BITS(0x28), 128);
        assert_int_equal(SPE_OP_SME_ETS_BITS(0x88), 128);
        assert_int_equal(SPE_OP_SME_ETS_BITS(0x8c), 256);
        assert_int_equal(SPE_OP_SME_ETS_BITS(0x98), 512);
}

static void test_load_le(void **state) {
        const uint8_t b[] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };

        assert_true(spe_pkt_load_le(b, 0) == 0);
        assert_true(spe_pkt_load_le(b, 1) == 0x01);
        assert_true(spe_pkt_load_le(b, 2) == 0x2301);
        assert_true(spe_pkt_load_le(b, 4) == 0x67452301);
        assert_true(spe_pkt_load_le(b, 8) == UINT64_C(0xefcdab8967452301));
}

static void test_type_names(void **state) {
        assert_string_equal(spe_pkt_type_name(SPE_PKT_TIMESTAMP), "TS");
        assert_string_equal(spe_pkt_type_name(SPE_PKT_COUNTER), "LAT");
        assert_string_equal(spe_pkt_type_name(SPE_PKT_ADDRESS), "ADDR");
        assert_string_equal(spe_pkt_type_name((enum spe_pkt_type) 200), "?");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kinds),
                cmocka_unit_test(test_unaligned),
                cmocka_unit_test(test_truncated),
                cmocka_unit_test(test_all_headers),
                cmocka_unit_test(test_extended_second_byte),
                cmocka_unit_test(test_bad_args),
                cmocka_unit_test(test_addr_fields),
                cmocka_unit_test(test_load_le),
                cmocka_unit_test(test_type_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
