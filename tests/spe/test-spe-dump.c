/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * perf-style packet descriptions and the `perf report -D` dump layout.
 * Expected strings are perf's (as Debian's perf 6.1 prints them, and the
 * vectors in shared/testdata/spe/vectors) or written from perf's format
 * strings (tools/perf/util/arm-spe-decoder/arm-spe-pkt-decoder.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "macro.h"
#include "spe-dump.h"
#include "spe-pkt.h"
#include "strbuf.h"

#define MIDR_N1 UINT64_C(0x414fd0c1)
#define P61 SPE_DUMP_F_PERF61
#define BOTH 2U /* test-only: same text in both modes */

struct desc_case {
        unsigned mode;          /* 0 modern, P61, or BOTH */
        uint64_t midr;
        uint8_t b[10];
        unsigned n;
        const char *want;
};

static const struct desc_case cases[] = {
        { BOTH, 0, { 0xb0, 0x5c, 0x8b, 0x8c, 0x86, 0xc2, 0xc0, 0xff, 0xc0 }, 9, "PC 0xffc0c2868c8b5c el2 ns=1" },
        { BOTH, 0, { 0xb1, 0xe0, 0x89, 0x8c, 0x86, 0xc2, 0xc0, 0xff, 0xc0 }, 9, "TGT 0xffc0c2868c89e0 el2 ns=1" },
        { BOTH, 0, { 0xb4, 0x08, 0x44, 0x21, 0xbf, 0xfd, 0x7f, 0x00, 0x80 }, 9, "PBT 0x7ffdbf214408 el0 ns=1" },
        { BOTH, 0, { 0xb3, 0xe8, 0x09, 0x8a, 0xd8, 0x0b, 0x08, 0x00, 0x80 }, 9, "PA 0x80bd88a09e8 ns=1 ch=0 pat=0" },
        { BOTH, 0, { 0xb3, 0x00, 0x10, 0, 0, 0, 0, 0, 0x5a }, 9, "PA 0x1000 ns=0 ch=1 pat=a" },
        { BOTH, 0, { 0xb2, 0xc0, 0x26, 0xc2, 0x07, 0x20, 0xfc, 0xff, 0x00 }, 9, "VA 0xfffc2007c226c0" },
        { BOTH, 0, { 0xb2, 0x43, 0xda, 0x5d, 0xe6, 0xaa, 0xaa, 0x00, 0x3c }, 9, "VA 0x3c00aaaae65dda43" },
        { BOTH, 0, { 0xb5, 0x01, 0, 0, 0, 0, 0, 0, 0 }, 9, "ADDR 0x1 (5)" },
        { BOTH, 0, { 0x21, 0xb2, 0x11, 0, 0, 0, 0, 0, 0, 0 }, 10, "ADDR 0x11 (10)" },
        { BOTH, 0, { 0x98, 0x0b, 0x00 }, 3, "LAT 11 TOT" },
        { BOTH, 0, { 0x99, 0x07, 0x00 }, 3, "LAT 7 ISSUE" },
        { BOTH, 0, { 0x9a, 0x01, 0x00 }, 3, "LAT 1 XLAT" },
        { BOTH, 0, { 0x9b, 0x05, 0x00 }, 3, "LAT 5 " },
        { BOTH, 0, { 0x22, 0x99, 0x34, 0x12 }, 4, "LAT 4660 " },
        { BOTH, 0, { 0x00 }, 1, "PAD" },
        { BOTH, 0, { 0x20, 0x00 }, 2, "PAD" },
        { BOTH, 0, { 0x01 }, 1, "END" },
        { BOTH, 0, { 0x71, 0x6c, 0xf8, 0xa5, 0x83, 0x00, 0x0c, 0x00, 0x00 }, 9, "TS 13196348225644" },
        { BOTH, 0, { 0x43, 0x00 }, 2, "DATA-SOURCE 0" },
        { BOTH, 0, { 0x53, 0x0d, 0x00 }, 3, "DATA-SOURCE 13" },
        { BOTH, 0, { 0x64, 0x93, 0x10, 0x00, 0x00 }, 5, "CONTEXT 0x1093 el1" },
        { BOTH, 0, { 0x65, 0x80, 0x5f, 0x00, 0x00 }, 5, "CONTEXT 0x5f80 el2" },
        { BOTH, 0, { 0x52, 0x1e, 0x03 }, 3, "EV RETIRED L1D-ACCESS L1D-REFILL TLB-ACCESS LLC-ACCESS LLC-REFILL" },
        { BOTH, 0, { 0x52, 0x42, 0x00 }, 3, "EV RETIRED NOT-TAKEN" },
        { BOTH, 0, { 0x42, 0xa1 }, 2, "EV EXCEPTION-GEN TLB-REFILL MISPRED" },
        { BOTH, 0, { 0x52, 0x00, 0x0c }, 3, "EV REMOTE-ACCESS ALIGNMENT" },
        { 0, 0, { 0x62, 0x00, 0x00, 0xff, 0x03 }, 5,
          "EV TXN SVE-PARTIAL-PRED SVE-EMPTY-PRED L2D-ACCESS L2D-MISS HITM LFB SNOOPED STREAMING-SVE SMCU" },
        { P61, 0, { 0x62, 0x00, 0x00, 0xff, 0x03 }, 5, "EV SVE-PARTIAL-PRED SVE-EMPTY-PRED" },
        { 0, MIDR_N1, { 0x52, 0x02, 0x10 }, 3, "EV RETIRED LATE-PREFETCH" },
        { 0, 0, { 0x52, 0x02, 0x10 }, 3, "EV RETIRED IMPDEF:12" },
        { P61, MIDR_N1, { 0x52, 0x02, 0x10 }, 3, "EV RETIRED" },
        { 0, 0, { 0x72, 0x00, 0x30, 0, 0, 0, 0, 0, 0x80 }, 9, "EV IMPDEF:12,13,63" },
        { 0, 0, { 0x48, 0x06 }, 2, "OTHER ASE FP INSN-OTHER" },
        { P61, 0, { 0x48, 0x06 }, 2, "OTHER INSN-OTHER" },
        { BOTH, 0, { 0x48, 0x01 }, 2, "OTHER COND-SELECT" },
        { BOTH, 0, { 0x48, 0x00 }, 2, "OTHER INSN-OTHER" },
        { BOTH, 0, { 0x48, 0x2e }, 2, "SVE-OTHER EVLEN 128 FP PRED" },
        { 0, 0, { 0x48, 0x9e }, 2, "SME-OTHER ETS 1024 FP" },
        { P61, 0, { 0x48, 0x9e }, 2, "OTHER INSN-OTHER" },
        { 0, 0, { 0x48, 0x80 }, 2, "OP-TYPE 0x80 (0)" },
        { BOTH, 0, { 0x49, 0x00 }, 2, "LD GP-REG" },
        { BOTH, 0, { 0x49, 0x01 }, 2, "ST GP-REG" },
        { BOTH, 0, { 0x49, 0x16 }, 2, "LD AT AR" },
        { BOTH, 0, { 0x49, 0x0b }, 2, "ST EXCL" },
        { BOTH, 0, { 0x49, 0x05 }, 2, "ST SIMD-FP" },
        { BOTH, 0, { 0x49, 0x10 }, 2, "LD UNSPEC-REG" },
        { BOTH, 0, { 0x49, 0x31 }, 2, "ST NV-SYSREG" },
        { 0, 0, { 0x49, 0x44 }, 2, "LD GCS COMM" },
        { P61, 0, { 0x49, 0x44 }, 2, "LD" },
        { 0, 0, { 0x49, 0x25 }, 2, "ST MEMSET" },
        { P61, 0, { 0x49, 0x25 }, 2, "ST" },
        { 0, 0, { 0x49, 0x14 }, 2, "LD MTE-TAG" },
        { 0, 0, { 0x49, 0x21 }, 2, "ST MEMCPY" },
        { 0, 0, { 0x49, 0xac }, 2, "LD SVE-SME-REG EVLEN 128 PRED SG" },
        { P61, 0, { 0x49, 0xac }, 2, "LD EVLEN 128 PRED SG" },
        { BOTH, 0, { 0x4a, 0x01 }, 2, "B COND" },
        { BOTH, 0, { 0x4a, 0x02 }, 2, "B IND" },
        { BOTH, 0, { 0x4a, 0x03 }, 2, "B COND IND" },
        { 0, 0, { 0x4a, 0x0b }, 2, "B COND IND CR-BL" },
        { P61, 0, { 0x4a, 0x0b }, 2, "B COND" },
        { 0, 0, { 0x4a, 0x14 }, 2, "B GCS CR-RET" },
        { 0, 0, { 0x4a, 0x18 }, 2, "B CR-NON-BL-RET" },
        { BOTH, 0, { 0x4b, 0x05 }, 2, "OP-TYPE 0x5 (3)" },
};

static void check_desc(const struct desc_case *c, unsigned flags) {
        char buf[SPE_PKT_DESC_MAX];
        struct spe_pkt p;
        int r;

        assert_int_equal(spe_pkt_decode(c->b, c->n, &p), (int) c->n);
        r = spe_pkt_desc(&p, c->midr, flags, buf, sizeof(buf));
        if (r < 0 || strcmp(buf, c->want) != 0)
                fail_msg("bytes %02x %02x flags %u: got \"%s\" (%d), want \"%s\"",
                         c->b[0], c->b[1], flags, buf, r, c->want);
        assert_int_equal(r, (int) strlen(c->want));
}

static void test_descriptions(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (cases[i].mode == BOTH) {
                        check_desc(&cases[i], 0);
                        check_desc(&cases[i], SPE_DUMP_F_PERF61);
                } else
                        check_desc(&cases[i], cases[i].mode);
        }
}

/* Every event bit set: the longest description there is must fit. */
static void test_desc_longest(void **state) {
        const uint8_t b[] = { 0x72, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
        char buf[SPE_PKT_DESC_MAX];
        struct spe_pkt p;
        int r;

        assert_int_equal(spe_pkt_decode(b, sizeof(b), &p), 9);
        r = spe_pkt_desc(&p, MIDR_N1, 0, buf, sizeof(buf));
        assert_true(r > 300);
        assert_non_null(strstr(buf, " SMCU LATE-PREFETCH IMPDEF:13,14,15,26,"));
        assert_non_null(strstr(buf, ",62,63"));
}

static void test_desc_truncation(void **state) {
        const uint8_t b[] = { 0x52, 0x1e, 0x03 };
        char buf[12];
        struct spe_pkt p;

        assert_int_equal(spe_pkt_decode(b, sizeof(b), &p), 3);
        memset(buf, 'x', sizeof(buf));
        assert_int_equal(spe_pkt_desc(&p, 0, 0, buf, sizeof(buf)), -ENOBUFS);
        assert_int_equal(strlen(buf), sizeof(buf) - 1);
        assert_string_equal(buf, "EV RETIRED ");
        assert_int_equal(spe_pkt_desc(&p, 0, 0, buf, 0), -EINVAL);
        assert_int_equal(spe_pkt_desc(NULL, 0, 0, buf, sizeof(buf)), -EINVAL);
}

/* One dump line as perf's arm_spe_dump() prints it. */
static void line(struct strbuf *sb, size_t off, const uint8_t *b, size_t n, const char *desc) {
        strbuf_printf(sb, ".  %08zx: ", off);
        for (size_t i = 0; i < n; i++)
                strbuf_printf(sb, " %02x", b[i]);
        for (size_t i = n; i < 16; i++)
                strbuf_puts(sb, "   ");
        strbuf_printf(sb, " %s\n", desc);
}

static void test_dump_layout(void **state) {
        uint8_t buf[64];
        size_t n = 0;
        struct strbuf got = STRBUF_INIT, want = STRBUF_INIT;
        const uint8_t pc[] = { 0xb0, 0x04, 0x15, 0x00, 0xc0, 0xaa, 0xaa, 0x00, 0x80 };
        static const uint8_t zeros[16];

        memcpy(buf + n, pc, sizeof(pc));
        n += sizeof(pc);
        memset(buf + n, 0, 20);
        n += 20;
        buf[n++] = 0xff;
        buf[n++] = 0x49;
        buf[n++] = 0x00;
        buf[n++] = 0x99;        /* truncated counter */
        assert_int_equal(n, 33);

        spe_dump_strbuf(&got, buf, n, 0, 0);

        strbuf_puts(&want, ". ... ARM SPE data: size 0x21 bytes\n");
        /* this line is verbatim from Debian perf 6.1's `perf report -D` */
        strbuf_puts(&want, ".  00000000:  b0 04 15 00 c0 aa aa 00 80                      PC 0xaaaac0001504 el0 ns=1\n");
        line(&want, 0x09, zeros, 16, "PAD");
        line(&want, 0x19, zeros, 4, "PAD");
        line(&want, 0x1d, (const uint8_t[]) { 0xff }, 1, "Bad packet!");
        line(&want, 0x1e, (const uint8_t[]) { 0x49, 0x00 }, 2, "LD GP-REG");
        line(&want, 0x20, (const uint8_t[]) { 0x99 }, 1, "Bad packet!");
        assert_string_equal(got.buf, want.buf);

        /* the FILE variant writes the same text; NO_HEADER drops the first line */
        {
                char *mem = NULL;
                size_t memlen = 0;
                FILE *f = open_memstream(&mem, &memlen);

                assert_non_null(f);
                assert_int_equal(spe_dump_file(f, buf, n, 0, SPE_DUMP_F_NO_HEADER), 0);
                fclose(f);
                assert_string_equal(mem, strchr(want.buf, '\n') + 1);
                free(mem);
        }
        assert_int_equal(spe_dump_file(NULL, buf, n, 0, 0), -EINVAL);

        free(got.buf);
        free(want.buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_descriptions),
                cmocka_unit_test(test_desc_longest),
                cmocka_unit_test(test_desc_truncation),
                cmocka_unit_test(test_dump_layout),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
