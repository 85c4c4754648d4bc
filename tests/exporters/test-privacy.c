/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/privacy.c and the renderers that apply it: which PCs and data
 * addresses are kernel ones, what each policy serves in their place, the
 * hot PCs' withheld kernel entries summed per process and EL, and the JSON
 * of /hotpcs and /hotlines without the withheld addresses.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aggregates.h"
#include "privacy.h"

#define PID 4242U
#define KPC UINT64_C(0xffff800008010040)
#define KDATA UINT64_C(0xffff000012340040)
#define HEAP UINT64_C(0x555500000000)

static const struct privacy_policy dflt = PRIVACY_POLICY_DEFAULT;
static const struct privacy_policy kernel_yes = { .kernel_addresses = true, .data_addresses = true };
static const struct privacy_policy data_no = { .kernel_addresses = false, .data_addresses = false };
static const struct privacy_policy both_no_kernel_yes = { .kernel_addresses = true, .data_addresses = false };

/* A process whose heap is [HEAP, HEAP + 0x21000) and nothing else. */
static bool region(void *userdata, uint32_t pid, uint64_t va, char *name, size_t len, uint64_t *ret_offset) {
        if (pid != PID || va < HEAP || va >= HEAP + 0x21000)
                return false;
        snprintf(name, len, "%s", (const char *) userdata);
        *ret_offset = va - HEAP;
        return true;
}

static void test_kernel(void **state) {
        assert_true(privacy_kernel_addr(KPC));
        assert_true(privacy_kernel_addr(KDATA));
        assert_false(privacy_kernel_addr(HEAP));
        assert_false(privacy_kernel_addr(UINT64_C(0x0000ffff8a001000)));
        assert_true(privacy_kernel_pc(1, UINT64_C(0x1000)));     /* EL1 whatever the address */
        assert_true(privacy_kernel_pc(2, UINT64_C(0x1000)));
        assert_true(privacy_kernel_pc(0, KPC));
        assert_false(privacy_kernel_pc(0, UINT64_C(0xaaaac0001010)));

        assert_false(privacy_pc_shown(NULL, 1, KPC));               /* NULL: the default withholds */
        assert_false(privacy_pc_shown(&dflt, 0, KPC));
        assert_true(privacy_pc_shown(&dflt, 0, UINT64_C(0xaaaac0001010)));
        assert_true(privacy_pc_shown(&kernel_yes, 1, KPC));
}

static void test_data(void **state) {
        char buf[PRIVACY_REGION_MAX] = "untouched";

        /* Default: user data as it is, kernel data withheld. */
        assert_true(privacy_data_shown(NULL, region, "[heap]", PID, HEAP + 0x40, buf, sizeof(buf)));
        assert_string_equal(buf, "untouched");
        assert_false(privacy_data_shown(&dflt, region, "[heap]", PID, KDATA, buf, sizeof(buf)));
        assert_string_equal(buf, "[kernel]");
        assert_true(privacy_data_shown(&kernel_yes, region, "[heap]", PID, KDATA, buf, sizeof(buf)));

        /* data_addresses = no: mapping + offset, [unknown] outside any, [kernel] for the kernel's. */
        assert_false(privacy_data_shown(&data_no, region, "[heap]", PID, HEAP + 0x1c40, buf, sizeof(buf)));
        assert_string_equal(buf, "[heap]+0x1c40");
        /* The TBI tag is not part of the address looked up. */
        assert_false(privacy_data_shown(&data_no, region, "[heap]", PID, HEAP + 0x80 + (UINT64_C(0x0b) << 56), buf,
                                        sizeof(buf)));
        assert_string_equal(buf, "[heap]+0x80");
        assert_false(privacy_data_shown(&data_no, region, "//anon", PID, HEAP, buf, sizeof(buf)));
        assert_string_equal(buf, "[anon]+0x0");
        assert_false(privacy_data_shown(&data_no, region, "", PID, HEAP + 8, buf, sizeof(buf)));
        assert_string_equal(buf, "[anon]+0x8");
        assert_false(privacy_data_shown(&data_no, region, "[heap]", PID, UINT64_C(0x1000), buf, sizeof(buf)));
        assert_string_equal(buf, "[unknown]");
        assert_false(privacy_data_shown(&data_no, region, "[heap]", PID + 1, HEAP, buf, sizeof(buf)));
        assert_string_equal(buf, "[unknown]");
        assert_false(privacy_data_shown(&data_no, NULL, NULL, PID, HEAP, buf, sizeof(buf)));
        assert_string_equal(buf, "[unknown]");
        /* A kernel address is a data address too: never served as a VA with data_addresses = no. */
        assert_false(privacy_data_shown(&both_no_kernel_yes, region, "[heap]", PID, KDATA, buf, sizeof(buf)));
        assert_string_equal(buf, "[kernel]");
}

/* No PC is named here. */
static bool name_none(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        return false;
}

static struct hotpcs_item item(uint32_t pid, uint8_t el, uint64_t pc, uint64_t count) {
        return (struct hotpcs_item) { .pc = pc, .pid = pid, .el = el, .count = count, .error = 1,
                                      .ops = { count }, .lat_sum = 10 * count };
}

static void test_withhold(void **state) {
        struct hotpcs_item items[] = {
                item(PID, 1, KPC, 50), item(PID, 0, 0xaaaac0001010, 40), item(PID, 1, KPC + 4, 30),
                item(PID + 1, 1, KPC, 20), item(PID, 0, 0xaaaac0001020, 15), item(PID, 1, KPC + 8, 5),
                item(PID, 2, KPC + 12, 3),
        };
        struct hotpcs_merged m = { .n = ELEMENTSOF(items), .item = items };
        static const uint64_t by_count[] = { 50, 40, 30, 20, 15, 5, 3 };
        struct agg_symbolizer yes = { .name = name_none, .privacy = &kernel_yes };
        struct agg_pc_rows rows;

        /* Kernel PCs served, no names, no commands: a row per process and PC, by count. */
        agg_hotpcs_rows(&m, &yes, NULL, SIZE_MAX, &rows);
        assert_int_equal(rows.n, ELEMENTSOF(items));
        for (size_t i = 0; i < rows.n; i++)
                assert_int_equal(rows.row[i].sum.count, by_count[i]);
        agg_pc_rows_done(&rows);

        agg_hotpcs_rows(&m, NULL, NULL, SIZE_MAX, &rows);
        /* PID's EL1 entries summed (85), then user 40, PID+1's EL1 20, user 15, PID's EL2 3. */
        assert_int_equal(rows.n, 5);
        assert_int_equal(rows.row[0].sum.pid, PID);
        assert_int_equal(rows.row[0].sum.el, 1);
        assert_true(rows.row[0].withheld);
        assert_int_equal(rows.row[0].sum.count, 85);
        assert_int_equal(rows.row[0].sum.error, 3);
        assert_int_equal(rows.row[0].sum.ops[0], 85);
        assert_int_equal(rows.row[0].sum.lat_sum, 850);
        assert_int_equal(rows.row[1].sum.pc, 0xaaaac0001010);
        assert_int_equal(rows.row[2].sum.pid, PID + 1);
        assert_int_equal(rows.row[2].sum.count, 20);
        assert_int_equal(rows.row[3].sum.pc, 0xaaaac0001020);
        assert_int_equal(rows.row[4].sum.el, 2);
        assert_int_equal(rows.row[4].sum.count, 3);

        /* The JSON: no pc for the withheld ones, region and symbol [kernel]; the others as they are. */
        struct store_hotpcs_result res = { .pcs = m };
        json_t *o = agg_hotpcs_json(&res, &rows, NULL), *pcs = json_object_get(o, "pcs");
        char *text;

        assert_int_equal(json_array_size(pcs), 5);
        assert_null(json_object_get(json_array_get(pcs, 0), "pc"));
        assert_string_equal(json_string_value(json_object_get(json_array_get(pcs, 0), "region")), "[kernel]");
        assert_string_equal(json_string_value(json_object_get(json_array_get(pcs, 0), "symbol")), "[kernel]");
        assert_string_equal(json_string_value(json_object_get(json_array_get(pcs, 1), "pc")), "0xaaaac0001010");
        assert_null(json_object_get(json_array_get(pcs, 1), "region"));
        text = json_dumps(o, 0);
        assert_null(strstr(text, "0xffff"));
        free(text);
        json_decref(o);
        agg_pc_rows_done(&rows);

        agg_hotpcs_rows(&m, NULL, NULL, 2, &rows);
        assert_int_equal(rows.n, 2);
        agg_pc_rows_done(&rows);
}

/* /hotlines: a kernel line and a heap line, under each policy. */
static void test_lines_json(void **state) {
        struct hotlines_off offs[2] = {
                { .offset = 0, .pc = KPC, .pid = PID, .el = 1, .loads = 1 },
                { .offset = 8, .pc = 0xaaaac0001010, .pid = PID, .el = 0, .stores = 1 },
        };
        struct hotlines_result lines[2] = {
                { .l = { .addr = KDATA & ~UINT64_C(63), .va = KDATA, .pid = PID, .loads = 1 }, .noffs = 1 },
                { .l = { .addr = HEAP + 0x1c40, .va = HEAP + 0x1c48, .pid = PID, .stores = 1 }, .noffs = 1 },
        };
        struct store_hotlines_result res = { .lines = { .line_size = 64, .n = 2, .line = lines } };
        struct agg_symbolizer sym = { .userdata = (void *) "[heap]", .name = name_none, .region = region };
        const struct {
                const struct privacy_policy *p;
                const char *want[2][3];         /* per line: address, va, region (NULL: absent) */
        } cases[] = {
                { &dflt, { { NULL, NULL, "[kernel]" }, { "0x555500001c40", "0x555500001c48", NULL } } },
                { &kernel_yes, { { "0xffff000012340040", "0xffff000012340040", NULL },
                                 { "0x555500001c40", "0x555500001c48", NULL } } },
                { &data_no, { { NULL, NULL, "[kernel]" }, { NULL, NULL, "[heap]+0x1c40" } } },
        };

        static uint64_t exact[2];

        lines[0].off = &offs[0];
        lines[1].off = &offs[1];
        lines[0].off_error = &exact[0];
        lines[1].off_error = &exact[1];
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                json_t *o, *ls;

                sym.privacy = cases[c].p;
                o = agg_hotlines_json(&res, &sym);
                ls = json_object_get(o, "lines");
                for (size_t i = 0; i < 2; i++) {
                        json_t *l = json_array_get(ls, i);
                        const char *keys[3] = { "address", "va", "region" };

                        for (size_t k = 0; k < 3; k++) {
                                json_t *v = json_object_get(l, keys[k]);

                                if (!cases[c].want[i][k])
                                        assert_null(v);
                                else
                                        assert_string_equal(json_string_value(v), cases[c].want[i][k]);
                        }
                }
                /* The kernel PC of the first line's entry is withheld unless kernel_addresses. */
                json_t *e = json_array_get(json_object_get(json_array_get(ls, 0), "offsets"), 0);
                if (cases[c].p->kernel_addresses)
                        assert_string_equal(json_string_value(json_object_get(e, "pc")), "0xffff800008010040");
                else {
                        assert_null(json_object_get(e, "pc"));
                        assert_string_equal(json_string_value(json_object_get(e, "region")), "[kernel]");
                }
                json_decref(o);
        }
}

/* A line keyed by physical address keeps its PA ([privacy] physical_addresses) but not its VA. */
static void test_pa_line(void **state) {
        struct hotlines_off off = { .offset = 8, .pc = 0xaaaac0001010, .pid = PID, .loads = 1 };
        uint64_t exact = 0;
        struct hotlines_result lines[2] = {
                { .l = { .addr = 0x40001c40, .va = HEAP + 0x1c48, .pid = PID, .by_pa = 1, .loads = 1 },
                  .noffs = 1, .off = &off, .off_error = &exact },
                { .l = { .addr = 0x80000040, .va = KDATA, .pid = PID, .by_pa = 1, .loads = 1 }, .noffs = 1,
                  .off = &off, .off_error = &exact },
        };
        struct store_hotlines_result res = { .lines = { .line_size = 64, .n = 2, .line = lines } };
        struct agg_symbolizer sym = { .userdata = (void *) "[heap]", .name = name_none, .region = region,
                                      .privacy = &data_no };
        json_t *o = agg_hotlines_json(&res, &sym), *ls = json_object_get(o, "lines");
        json_t *l0 = json_array_get(ls, 0), *l1 = json_array_get(ls, 1);

        assert_string_equal(json_string_value(json_object_get(l0, "address")), "0x40001c40");
        assert_null(json_object_get(l0, "va"));
        /* The region of the line the VA seen on it lies in. */
        assert_string_equal(json_string_value(json_object_get(l0, "region")), "[heap]+0x1c40");
        /* A kernel line says nothing but [kernel], its PA included. */
        assert_null(json_object_get(l1, "address"));
        assert_null(json_object_get(l1, "va"));
        assert_string_equal(json_string_value(json_object_get(l1, "region")), "[kernel]");
        json_decref(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel),
                cmocka_unit_test(test_data),
                cmocka_unit_test(test_withhold),
                cmocka_unit_test(test_lines_json),
                cmocka_unit_test(test_pa_line),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
