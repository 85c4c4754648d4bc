/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpulist.h"
#include "macro.h"

struct valid_case {
        const char *text;
        unsigned count;
        int first, last; /* -1: empty */
        const char *formatted;
};

static const struct valid_case valid[] = {
        { "0", 1, 0, 0, "0" },
        { "0\n", 1, 0, 0, "0" },
        { "0-3", 4, 0, 3, "0-3" },
        { "0-3,5,7-9", 8, 0, 9, "0-3,5,7-9" },
        { "0-3,5,7-9\n", 8, 0, 9, "0-3,5,7-9" },
        { "5,0-3", 5, 0, 5, "0-3,5" },
        { "1-1", 1, 1, 1, "1" },
        { "3,2,1,0", 4, 0, 3, "0-3" },
        { "0-3,2-5", 6, 0, 5, "0-5" },
        { "63,64", 2, 63, 64, "63-64" },
        { "4095", 1, 4095, 4095, "4095" },
        { "0-4095", 4096, 0, 4095, "0-4095" },
        { "007", 1, 7, 7, "7" },
        { "", 0, -1, -1, "" },
        { "\n", 0, -1, -1, "" },
};

static void test_valid(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(valid); i++) {
                struct cpulist l;
                char buf[64];
                int last = -1;

                assert_int_equal(cpulist_parse(valid[i].text, &l), 0);
                assert_int_equal(cpulist_count(&l), valid[i].count);
                assert_int_equal(cpulist_next(&l, 0), valid[i].first);
                CPULIST_FOREACH(cpu, &l)
                        last = cpu;
                assert_int_equal(last, valid[i].last);
                assert_int_equal(cpulist_format(&l, buf, sizeof(buf)), 0);
                assert_string_equal(buf, valid[i].formatted);
        }
}

static void test_members(void **state) {
        struct cpulist l;

        assert_int_equal(cpulist_parse("0-3,5,7-9", &l), 0);
        assert_true(cpulist_has(&l, 0));
        assert_true(cpulist_has(&l, 3));
        assert_false(cpulist_has(&l, 4));
        assert_true(cpulist_has(&l, 5));
        assert_false(cpulist_has(&l, 6));
        assert_true(cpulist_has(&l, 9));
        assert_false(cpulist_has(&l, 10));
        assert_false(cpulist_has(&l, 100000));
        assert_int_equal(cpulist_next(&l, 4), 5);
        assert_int_equal(cpulist_next(&l, 6), 7);
        assert_int_equal(cpulist_next(&l, 10), -1);
        cpulist_del(&l, 5);
        assert_false(cpulist_has(&l, 5));
        assert_int_equal(cpulist_count(&l), 7);
        assert_int_equal(cpulist_add(&l, CPULIST_MAX_CPUS), -ERANGE);
        assert_int_equal(cpulist_add(&l, 200), 0);
        assert_int_equal(cpulist_next(&l, 10), 200);
}

struct bad_case {
        const char *text;
        int error;
};

static const struct bad_case bad[] = {
        { "a", -EINVAL },
        { "-1", -EINVAL },
        { "1-", -EINVAL },
        { "-", -EINVAL },
        { ",", -EINVAL },
        { "0,", -EINVAL },
        { ",0", -EINVAL },
        { "0,,1", -EINVAL },
        { "3-1", -EINVAL },
        { " 0", -EINVAL },
        { "0 ", -EINVAL },
        { "0\n\n", -EINVAL },
        { "0\n1", -EINVAL },
        { "0-3x", -EINVAL },
        { "0x3", -EINVAL },
        { "+1", -EINVAL },
        { "1--3", -EINVAL },
        { "0-3:1", -EINVAL }, /* bitmap_parselist group syntax: not in sysfs output */
        { "4096", -ERANGE },
        { "0-4096", -ERANGE },
        { "99999999999999999999999", -ERANGE },
        { "18446744073709551617", -ERANGE },
        { "4294967296", -ERANGE },
};

static void test_bad(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct cpulist l, before;

                memset(&l, 0xa5, sizeof(l));
                before = l;
                if (cpulist_parse(bad[i].text, &l) != bad[i].error)
                        fail_msg("\"%s\": expected %d", bad[i].text, bad[i].error);
                /* ret is written only on success */
                assert_memory_equal(&l, &before, sizeof(l));
        }
        assert_int_equal(cpulist_parse(NULL, &(struct cpulist) {}), -EINVAL);
}

static void test_format_small_buffer(void **state) {
        struct cpulist l;
        char buf[4];

        assert_int_equal(cpulist_parse("0-3,5,7-9", &l), 0);
        assert_int_equal(cpulist_format(&l, buf, sizeof(buf)), -ENOBUFS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid),
                cmocka_unit_test(test_members),
                cmocka_unit_test(test_bad),
                cmocka_unit_test(test_format_small_buffer),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
