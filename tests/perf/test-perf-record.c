/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/perf/perf-record.c on the sampler's records, laid out by hand
 * from perf_event_open(2)'s order: a SAMPLE with a callchain, user
 * registers and a user stack copy (perf record --call-graph dwarf), the
 * same from a kernel thread (no registers, no stack), every way one can be
 * cut short or lie about its sizes, and PERF_RECORD_CGROUP.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perf-record.h"

#define REGS_MASK 0x1c1 /* bits 0, 6, 7, 8: four registers */

static const struct perf_event_attr dwarf_attr = {
        .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_CGROUP,
        .sample_regs_user = REGS_MASK,
        .sample_stack_user = 32,
        .sample_id_all = 1,
};

static void parse(uint64_t *words, size_t n, struct perf_data_record *rec) {
        struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
                                       .size = (uint16_t) (n * 8) };

        memcpy(words, &h, sizeof(h));
        perf_record_header((const uint8_t *) words, 0, rec);
}

static void test_user_sample(void **state) {
        uint64_t words[] = {
                0,                                      /* header */
                0x401000,                               /* IP */
                (UINT64_C(101) << 32) | 100,            /* {pid, tid} */
                5000,                                   /* TIME */
                1,                                      /* {cpu, res} */
                52631578,                               /* PERIOD */
                3, 0xfffffffffffffe00, 0x401000, 0x401234, /* CALLCHAIN */
                PERF_SAMPLE_REGS_ABI_64, 0xa0, 0xb6, 0xb7, 0xb8, /* REGS_USER: abi, 4 values */
                32, 0x1111, 0x2222, 0x3333, 0x4444, 24, /* STACK_USER: size, data[32], dyn_size */
                0x99,                                   /* CGROUP */
        };
        struct perf_data_record rec;
        struct perf_data_sample s;

        parse(words, sizeof(words) / 8, &rec);
        assert_int_equal(perf_record_parse_sample(&dwarf_attr, &rec, &s), 0);
        assert_int_equal(s.ip, 0x401000);
        assert_int_equal(s.rec.sid.pid, 100);
        assert_int_equal(s.rec.sid.tid, 101);
        assert_int_equal(s.nr_callchain, 3);
        assert_int_equal(perf_rd64(s.callchain + 16), 0x401234);
        assert_int_equal(s.regs_user_abi, PERF_SAMPLE_REGS_ABI_64);
        assert_int_equal(s.nr_regs_user, 4);
        assert_ptr_equal(s.regs_user, (const uint8_t *) &words[11]);
        assert_int_equal(perf_rd64(s.regs_user), 0xa0);
        assert_int_equal(perf_rd64(s.regs_user + 24), 0xb8);
        assert_int_equal(s.stack_user_size, 32);
        assert_int_equal(s.stack_user_dyn_size, 24);
        assert_ptr_equal(s.stack_user, (const uint8_t *) &words[16]);
        assert_int_equal(perf_rd64(s.stack_user + 16), 0x3333);
        /* After the stack, the fields that follow it still parse. */
        assert_int_equal(s.cgroup, 0x99);
        assert_int_equal(s.rest_len, 0);

        /* Each word short of the whole fails, never reads past the end. */
        for (size_t n = 1; n < sizeof(words) / 8; n++) {
                rec.size = (uint16_t) (n * 8);
                assert_int_equal(perf_record_parse_sample(&dwarf_attr, &rec, &s), -EBADMSG);
        }

        /* dyn_size past size: no copy the kernel made. */
        rec.size = sizeof(words);
        words[20] = 40;
        assert_int_equal(perf_record_parse_sample(&dwarf_attr, &rec, &s), -EBADMSG);
        words[20] = 32;
        assert_int_equal(perf_record_parse_sample(&dwarf_attr, &rec, &s), 0);
        assert_int_equal(s.stack_user_dyn_size, 32);
        /* A stack size past the record. */
        words[15] = 0x10000;
        assert_int_equal(perf_record_parse_sample(&dwarf_attr, &rec, &s), -EBADMSG);
}

/* A kernel thread: ABI_NONE, no registers follow; stack size 0, no data and no dyn_size. */
static void test_kernel_thread(void **state) {
        uint64_t words[] = {
                0, 0xffffffff81000000, (UINT64_C(7) << 32) | 7, 6000, 0, 52631578,
                2, 0xffffffffffffff80, 0xffffffff81000000, /* CALLCHAIN: PERF_CONTEXT_KERNEL, ip */
                PERF_SAMPLE_REGS_ABI_NONE,              /* REGS_USER */
                0,                                      /* STACK_USER size */
                0x1,                                    /* CGROUP */
        };
        struct perf_data_record rec;
        struct perf_data_sample s;

        parse(words, sizeof(words) / 8, &rec);
        assert_int_equal(perf_record_parse_sample(&dwarf_attr, &rec, &s), 0);
        assert_int_equal(s.regs_user_abi, PERF_SAMPLE_REGS_ABI_NONE);
        assert_int_equal(s.nr_regs_user, 0);
        assert_null(s.regs_user);
        assert_int_equal(s.stack_user_size, 0);
        assert_int_equal(s.stack_user_dyn_size, 0);
        assert_null(s.stack_user);
        assert_int_equal(s.cgroup, 1);
}

/* REGS_INTR is skipped with its own mask, so what follows it still parses. */
static void test_regs_intr(void **state) {
        struct perf_event_attr attr = {
                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR,
                .sample_regs_intr = 0x3,
        };
        uint64_t words[] = { 0, 0x1234, PERF_SAMPLE_REGS_ABI_64, 10, 11, 0xabc000 };
        struct perf_data_record rec;
        struct perf_data_sample s;

        parse(words, sizeof(words) / 8, &rec);
        assert_int_equal(perf_record_parse_sample(&attr, &rec, &s), 0);
        assert_int_equal(s.phys_addr, 0xabc000);
        assert_int_equal(s.nr_regs_user, 0);
}

static void test_cgroup_record(void **state) {
        struct perf_event_attr attr = {
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
                .sample_id_all = 1,
        };
        /* {u64 id; char path[]} padded to 8, then {pid, tid} time. */
        uint8_t raw[8 + 8 + 24 + 16] = {};
        struct perf_event_header h = { .type = PERF_RECORD_CGROUP, .size = sizeof(raw) };
        uint64_t id = 4242, pidtid = (UINT64_C(9) << 32) | 8, time = 777;
        struct perf_data_record rec;
        struct perf_data_cgroup c;
        uint32_t tlen;

        memcpy(raw, &h, sizeof(h));
        memcpy(raw + 8, &id, 8);
        memcpy(raw + 16, "/system.slice/x.service", 24);
        memcpy(raw + 40, &pidtid, 8);
        memcpy(raw + 48, &time, 8);
        assert_int_equal(perf_record_fixed_size(PERF_RECORD_CGROUP), 16);
        assert_int_equal(perf_record_parse_ring(&attr, raw, 0, &rec, &tlen), 0);
        assert_int_equal(tlen, 16);
        assert_int_equal(rec.sid.pid, 8);
        assert_int_equal(rec.sid.time, 777);
        assert_int_equal(perf_record_parse_cgroup(&rec, tlen, &c), 0);
        assert_int_equal(c.id, 4242);
        assert_string_equal(c.path, "/system.slice/x.service");
        /* The path must end inside the record, before the trailer. */
        memset(raw + 16, 'x', 24);
        assert_int_equal(perf_record_parse_cgroup(&rec, tlen, &c), -EILSEQ);
        rec.size = 8 + 4 + 16;
        assert_int_equal(perf_record_parse_cgroup(&rec, tlen, &c), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_user_sample),
                cmocka_unit_test(test_kernel_thread),
                cmocka_unit_test(test_regs_intr),
                cmocka_unit_test(test_cgroup_record),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
