/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /hotlines' data symbols, members and line summary (exporters/aggregates.c)
 * over lines made here, named by a symbolizer that answers from this file's
 * table (the members' names themselves are tests/symbols/test-srcline.py's,
 * against offsetof()): which entries count as a member's writers (stores
 * only), their CPUs merged and sorted, the first function, the lowest
 * offset, and no summary when the same CPUs write every member or only one
 * member is written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "aggregates.h"
#include "macro.h"

#define PID     4242
#define LINE    UINT64_C(0x555555558140)
#define PC_A    UINT64_C(0x5555555552f0)
#define PC_B    UINT64_C(0x555555555250)
#define PC_R    UINT64_C(0x555555555260)

static const struct {
        uint64_t va;
        const char *symbol, *member;
} vars[] = {
        { LINE + 0x20, "stats+0x0", "struct stats.hits" },
        { LINE + 0x28, "stats+0x8", "struct stats.misses" },
        { LINE + 0x2c, "stats+0xc", "struct stats.misses+0x4" },       /* a byte inside it: the same member */
        { LINE + 0x30, "seconds+0x0", "" },     /* a variable without DWARF type */
};

static bool name(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        snprintf(buf, len, "%s", pc == PC_A ? "worker_a" : pc == PC_B ? "worker_b" : "reader");
        return true;
}

static bool data_symbol(void *userdata, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                        size_t member_len) {
        for (size_t i = 0; i < ELEMENTSOF(vars); i++)
                if (vars[i].va == va && pid == PID) {
                        snprintf(buf, len, "%s", vars[i].symbol);
                        snprintf(member, member_len, "%s", vars[i].member);
                        return true;
                }
        return false;
}

static json_t *answer(struct hotlines_off *offs, size_t n) {
        static uint64_t exact[16];
        struct hotlines_result line = {
                .l = { .addr = LINE, .va = LINE + 0x20, .pid = PID, .stores = 1 },
                .noffs = n,
                .off = offs,
                .off_error = exact,
        };
        struct store_hotlines_result res = { .lines = { .line_size = 64, .n = 1, .line = &line } };
        const struct agg_symbolizer sym = { .name = name, .data_symbol = data_symbol };

        return agg_hotlines_json(&res, &sym);
}

static json_t *first_line(json_t *o) {
        return json_array_get(json_object_get(o, "lines"), 0);
}

static void test_false_shared_members(void **state) {
        struct hotlines_off offs[] = {
                { .offset = 0x20, .pc = PC_A, .pid = PID, .stores = 10, .ncpus = 2, .cpus = { 1, 0 } },
                /* A load of .hits by CPU 2: a reader, not a writer. */
                { .offset = 0x20, .pc = PC_R, .pid = PID, .loads = 5, .ncpus = 1, .cpus = { 2 } },
                { .offset = 0x28, .pc = PC_B, .pid = PID, .stores = 7, .ncpus = 2, .cpus = { 3, 2 } },
                /* A second store PC of .misses at a byte inside it: its CPU joins, its offset is not the lowest. */
                { .offset = 0x2c, .pc = PC_B, .pid = PID, .stores = 1, .ncpus = 1, .cpus = { 5 } },
                /* A variable with no member known: no writer group. */
                { .offset = 0x30, .pc = PC_B, .pid = PID, .stores = 1, .ncpus = 1, .cpus = { 6 } },
        };
        json_t *o = answer(offs, ELEMENTSOF(offs)), *l = first_line(o), *e;

        assert_string_equal(json_string_value(json_object_get(l, "summary")),
                            "2 members written by different CPUs: .hits @+0x20 by CPUs 0,1 (worker_a), "
                            ".misses @+0x28 by CPUs 2,3,5 (worker_b)");
        e = json_array_get(json_object_get(l, "offsets"), 0);
        assert_string_equal(json_string_value(json_object_get(e, "data_symbol")), "stats+0x0");
        assert_string_equal(json_string_value(json_object_get(e, "data_member")), "struct stats.hits");
        e = json_array_get(json_object_get(l, "offsets"), 3);
        assert_string_equal(json_string_value(json_object_get(e, "data_member")), "struct stats.misses+0x4");
        e = json_array_get(json_object_get(l, "offsets"), 4);
        assert_string_equal(json_string_value(json_object_get(e, "data_symbol")), "seconds+0x0");
        assert_null(json_object_get(e, "data_member"));
        json_decref(o);
}

static void test_same_writers(void **state) {
        /* Both members written by CPUs 0 and 1: true sharing of the line by those CPUs, no summary. */
        struct hotlines_off offs[] = {
                { .offset = 0x20, .pc = PC_A, .pid = PID, .stores = 3, .ncpus = 2, .cpus = { 0, 1 } },
                { .offset = 0x28, .pc = PC_B, .pid = PID, .stores = 3, .ncpus = 1, .cpus = { 1 } },
        };
        json_t *o = answer(offs, ELEMENTSOF(offs));

        assert_null(json_object_get(first_line(o), "summary"));
        json_decref(o);
}

static void test_one_member(void **state) {
        struct hotlines_off offs[] = {
                { .offset = 0x20, .pc = PC_A, .pid = PID, .stores = 3, .ncpus = 1, .cpus = { 0 } },
                { .offset = 0x20, .pc = PC_B, .pid = PID, .stores = 3, .ncpus = 1, .cpus = { 4 } },
                { .offset = 0x28, .pc = PC_R, .pid = PID, .loads = 3, .ncpus = 1, .cpus = { 7 } },
        };
        json_t *o = answer(offs, ELEMENTSOF(offs));

        assert_null(json_object_get(first_line(o), "summary"));
        json_decref(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_false_shared_members),
                cmocka_unit_test(test_same_writers),
                cmocka_unit_test(test_one_member),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
