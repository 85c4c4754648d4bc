/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The generator's packet encoder against bytes recorded on real hardware
 * (../shared/testdata/spe/vectors/, transcribed in Arm ARM D10 "Address packet", §5,
 * §6, §10): encoding the decoded values must give back the same bytes.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "spe-enc.h"

#define BYTES(...) ((const uint8_t[]) { __VA_ARGS__ }), sizeof((const uint8_t[]) { __VA_ARGS__ })

static void expect_bytes(const uint8_t *have, size_t have_len, const uint8_t *want, size_t want_len) {
        assert_int_equal(have_len, want_len);
        assert_memory_equal(have, want, want_len);
}

/* Arm spe_parser unit vectors (telemetry-solution-spe_parser-vectors.txt §1). */
static void test_single_packets(void **state) {
        uint8_t b[SPE_ENC_MAX_PKT];

        expect_bytes(b, spe_enc_address(b, SPE_ENC_ADDR_PC, spe_enc_ip_payload(UINT64_C(0xffc0c2868c8b5c), 2, true),
                                        false),
                     BYTES(0xb0, 0x5c, 0x8b, 0x8c, 0x86, 0xc2, 0xc0, 0xff, 0xc0));
        expect_bytes(b, spe_enc_address(b, SPE_ENC_ADDR_PA, spe_enc_pa_payload(UINT64_C(0x80bd88a09e8), true, false, 0),
                                        false),
                     BYTES(0xb3, 0xe8, 0x09, 0x8a, 0xd8, 0x0b, 0x08, 0x00, 0x80));
        expect_bytes(b, spe_enc_address(b, SPE_ENC_ADDR_VA, UINT64_C(0xfffc2007c226c0), false),
                     BYTES(0xb2, 0xc0, 0x26, 0xc2, 0x07, 0x20, 0xfc, 0xff, 0x00));
        expect_bytes(b, spe_enc_address(b, SPE_ENC_ADDR_TGT, spe_enc_ip_payload(UINT64_C(0xffc0c2868c89e0), 2, true),
                                        false),
                     BYTES(0xb1, 0xe0, 0x89, 0x8c, 0x86, 0xc2, 0xc0, 0xff, 0xc0));
        expect_bytes(b, spe_enc_counter(b, SPE_ENC_CNT_ISSUE, 7, false), BYTES(0x99, 0x07, 0x00));
        expect_bytes(b, spe_enc_counter(b, SPE_ENC_CNT_TOTAL, 11, false), BYTES(0x98, 0x0b, 0x00));
        expect_bytes(b, spe_enc_counter(b, SPE_ENC_CNT_XLAT, 1, false), BYTES(0x9a, 0x01, 0x00));
        expect_bytes(b, spe_enc_end(b), BYTES(0x01));
        expect_bytes(b, spe_enc_timestamp(b, UINT64_C(13196348225644)),
                     BYTES(0x71, 0x6c, 0xf8, 0xa5, 0x83, 0x00, 0x0c, 0x00, 0x00));
        expect_bytes(b, spe_enc_op_type(b, SPE_ENC_OP_LDST, SPE_ENC_OP_LDST_GP), BYTES(0x49, 0x00));
        expect_bytes(b, spe_enc_op_type(b, SPE_ENC_OP_BRANCH, SPE_ENC_OP_BR_COND), BYTES(0x4a, 0x01));
        expect_bytes(b, spe_enc_op_type(b, SPE_ENC_OP_LDST, SPE_ENC_OP_LDST_ST), BYTES(0x49, 0x01));
        expect_bytes(b, spe_enc_op_type(b, SPE_ENC_OP_BRANCH, SPE_ENC_OP_BR_IND), BYTES(0x4a, 0x02));
        expect_bytes(b, spe_enc_op_type(b, SPE_ENC_OP_LDST,
                                        SPE_ENC_OP_LDST_EXT | SPE_ENC_OP_LDST_EXT_AT | SPE_ENC_OP_LDST_EXT_AR),
                     BYTES(0x49, 0x16));
        expect_bytes(b, spe_enc_op_type(b, SPE_ENC_OP_LDST, SPE_ENC_OP_LDST_SIMD | SPE_ENC_OP_LDST_ST),
                     BYTES(0x49, 0x05));
        expect_bytes(b, spe_enc_data_source(b, SPE_ENC_DS_L1D, 1), BYTES(0x43, 0x00));
        expect_bytes(b, spe_enc_events(b, SPE_ENC_EV_RETIRED | SPE_ENC_EV_L1D_ACCESS | SPE_ENC_EV_TLB_ACCESS, 2),
                     BYTES(0x52, 0x16, 0x00));
        expect_bytes(b, spe_enc_events(b, SPE_ENC_EV_RETIRED | SPE_ENC_EV_NOT_TAKEN, 2), BYTES(0x52, 0x42, 0x00));
        expect_bytes(b, spe_enc_events(b, SPE_ENC_EV_RETIRED | SPE_ENC_EV_L1D_ACCESS | SPE_ENC_EV_L1D_REFILL |
                                                  SPE_ENC_EV_TLB_ACCESS | SPE_ENC_EV_LLC_ACCESS | SPE_ENC_EV_LLC_REFILL,
                                          2),
                     BYTES(0x52, 0x1e, 0x03));
}

/* Record 0 of Google quipper's arm_spe_decoder test, a 64-byte Neoverse
 * record with inner padding (quipper's N1 test record), rebuilt packet by packet. */
static void test_quipper_record(void **state) {
        static const uint8_t want[64] = {
                0xb0, 0xd0, 0xc2, 0xa1, 0xed, 0x66, 0xba, 0xff, 0xc0,
                0x00, 0x00, 0x00, 0x00, 0x00,
                0x65, 0x80, 0x5f, 0x00, 0x00,
                0x49, 0x00,
                0x52, 0x16, 0x00,
                0x99, 0x04, 0x00,
                0x98, 0x0c, 0x00,
                0xb2, 0x28, 0x6b, 0x09, 0x03, 0x37, 0x0e, 0xff, 0x00,
                0x9a, 0x01, 0x00,
                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x43, 0x00,
                0x00, 0x00,
                0x71, 0x2e, 0x65, 0x2f, 0x6a, 0x0a, 0x00, 0x00, 0x00,
        };
        uint8_t b[64 + SPE_ENC_MAX_PKT];
        size_t n = 0;

        n += spe_enc_address(b + n, SPE_ENC_ADDR_PC, spe_enc_ip_payload(UINT64_C(0xffba66eda1c2d0), 2, true), false);
        for (int i = 0; i < 5; i++)
                n += spe_enc_pad(b + n);
        n += spe_enc_context(b + n, SPE_ENC_CONTEXT_EL2, 0x5f80);
        n += spe_enc_op_type(b + n, SPE_ENC_OP_LDST, SPE_ENC_OP_LDST_GP);
        n += spe_enc_events(b + n, SPE_ENC_EV_RETIRED | SPE_ENC_EV_L1D_ACCESS | SPE_ENC_EV_TLB_ACCESS, 2);
        n += spe_enc_counter(b + n, SPE_ENC_CNT_ISSUE, 4, false);
        n += spe_enc_counter(b + n, SPE_ENC_CNT_TOTAL, 12, false);
        n += spe_enc_address(b + n, SPE_ENC_ADDR_VA, UINT64_C(0x00ff0e3703096b28), false);
        n += spe_enc_counter(b + n, SPE_ENC_CNT_XLAT, 1, false);
        for (int i = 0; i < 9; i++)
                n += spe_enc_pad(b + n);
        n += spe_enc_data_source(b + n, SPE_ENC_DS_L1D, 1);
        for (int i = 0; i < 2; i++)
                n += spe_enc_pad(b + n);
        n += spe_enc_timestamp(b + n, UINT64_C(44731163950));
        expect_bytes(b, n, want, sizeof(want));
}

/* Extended headers (Arm ARM D10 "Packet headers"): prefix 0x20 | index[4:3], then the
 * short header with index[2:0]; payload unchanged. */
static void test_extended_header(void **state) {
        uint8_t b[SPE_ENC_MAX_PKT];

        expect_bytes(b, spe_enc_address(b, SPE_ENC_ADDR_VA, UINT64_C(0x0000ffff8a001020), true),
                     BYTES(0x20, 0xb2, 0x20, 0x10, 0x00, 0x8a, 0xff, 0xff, 0x00, 0x00));
        expect_bytes(b, spe_enc_counter(b, SPE_ENC_CNT_TOTAL, 0x1234, true), BYTES(0x20, 0x98, 0x34, 0x12));
        /* index 9 = 0b01001 needs the prefix even when not asked for */
        expect_bytes(b, spe_enc_counter(b, 9, 5, false), BYTES(0x21, 0x99, 0x05, 0x00));
        expect_bytes(b, spe_enc_address(b, 31, 0, false),
                     BYTES(0x23, 0xb7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00));
}

/* Payload size code in header bits [5:4] (Arm ARM D10 "Packet headers"). */
static void test_payload_sizes(void **state) {
        uint8_t b[SPE_ENC_MAX_PKT];

        expect_bytes(b, spe_enc_events(b, 0x06, 1), BYTES(0x42, 0x06));
        expect_bytes(b, spe_enc_events(b, UINT64_C(0x20406), 4), BYTES(0x62, 0x06, 0x04, 0x02, 0x00));
        expect_bytes(b, spe_enc_events(b, UINT64_C(1) << 63, 8),
                     BYTES(0x72, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80));
        expect_bytes(b, spe_enc_data_source(b, SPE_ENC_DS_DRAM, 2), BYTES(0x53, 0x0e, 0x00));
        expect_bytes(b, spe_enc_context(b, SPE_ENC_CONTEXT_EL1, 4303), BYTES(0x64, 0xcf, 0x10, 0x00, 0x00));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_single_packets),
                cmocka_unit_test(test_quipper_record),
                cmocka_unit_test(test_extended_header),
                cmocka_unit_test(test_payload_sizes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
