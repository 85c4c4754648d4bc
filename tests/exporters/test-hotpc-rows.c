/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /hotpcs's rows (agg_hotpcs_rows()): what a person counts as one, perf
 * report's comm,dso,sym. Through the real store: 500 short processes of
 * one program, each with its own load address (ASLR), are one row of
 * their command and function with every pid beside it; another command in
 * the same function is a row of its own; tasks with no command and PCs no
 * function names stay rows of their process and address; the cgroup
 * filter and the limit apply to rows. The counts are checked against what
 * the test fed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aggregates.h"
#include "store.h"

#define SEC             UINT64_C(1000000000)
#define STORM           500
#define STORM_PID0      20000U
#define OTHER_PID       100U
#define UNNAMED_PID     200U
#define TEXT_SIZE       UINT64_C(0x10000)
/* The program's functions, at these offsets from its load address. */
#define HOT_FN          UINT64_C(0x1000)        /* 0x1000..0x10ff */
#define COLD_FN         UINT64_C(0x2000)        /* 0x2000..0x20ff */

/* Process p's program is loaded at its own address, as ASLR puts a PIE. */
static uint64_t base_of(uint32_t pid) {
        return UINT64_C(0x555500000000) + (uint64_t) pid * TEXT_SIZE;
}

/* The symbolizer: the functions of the program each process maps; nothing beyond them. */
static bool fn_name(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        uint64_t off = pc - base_of(pid);

        if (pc < base_of(pid) || off >= TEXT_SIZE)
                return false;
        if (off >= HOT_FN && off < HOT_FN + 0x100)
                snprintf(buf, len, "hot_fn");
        else if (off >= COLD_FN && off < COLD_FN + 0x100)
                snprintf(buf, len, "cold_fn");
        else
                return false;
        return true;
}

static bool fn_object(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        snprintf(buf, len, "/usr/bin/worker");
        return true;
}

/* Odd pids run in /system.slice/odd.service. */
static bool fn_cgroup(void *userdata, uint32_t pid, char *path, size_t path_len, char *service, size_t service_len) {
        snprintf(path, path_len, "%s", pid % 2 ? "/system.slice/odd.service" : "/user.slice");
        snprintf(service, service_len, "%s", pid % 2 ? "odd.service" : "");
        return true;
}

static const struct agg_symbolizer sym = {
        .name = fn_name, .object = fn_object, .cgroup = fn_cgroup,
};

static void sample(struct store *s, uint32_t pid, const char *comm, uint64_t pc) {
        store_add_stack(s, &(struct store_stack_sample) { .pid = pid, .tid = pid, .comm = comm, .thread = comm,
                                                          .frames = &pc, .n_frames = 1, .weight = 1 });
}

struct fed {
        uint64_t storm_hot, storm_cold, storm_odd_hot, other_hot;
};

/* One epoch: the storm's processes, a second command in the same program, a task with no name. */
static struct store *feed(struct fed *ret) {
        struct store_options o;
        struct store *s;
        struct fed f = {};

        store_options_init(&o);
        o.epochs = 2;
        o.hotpcs = 4096;        /* the storm's 1,100 PCs, none evicted: the sums are exact */
        assert_int_equal(store_new(&o, 0, &s), 0);
        for (uint32_t i = 0; i < STORM; i++) {
                uint32_t pid = STORM_PID0 + i;
                /* 1..3 samples at 1..3 of hot_fn's PCs, one at cold_fn in every fifth process. */
                unsigned n = 1 + i % 3;

                for (unsigned k = 0; k < n; k++)
                        sample(s, pid, "worker", base_of(pid) + HOT_FN + 4 * k);
                f.storm_hot += n;
                f.storm_odd_hot += pid % 2 ? n : 0;
                if (i % 5 == 0) {
                        sample(s, pid, "worker", base_of(pid) + COLD_FN);
                        f.storm_cold++;
                }
        }
        /* The row's hottest PC: one process's hot_fn+0x10, 5 times. */
        for (unsigned k = 0; k < 5; k++)
                sample(s, STORM_PID0 + 7, "worker", base_of(STORM_PID0 + 7) + HOT_FN + 0x10);
        f.storm_hot += 5;
        f.storm_odd_hot += 5;
        for (unsigned k = 0; k < 7; k++)
                sample(s, OTHER_PID, "checker", base_of(OTHER_PID) + HOT_FN + 8);
        f.other_hot = 7;
        /* No command; and a PC of no function. */
        sample(s, UNNAMED_PID, "", base_of(UNNAMED_PID) + HOT_FN);
        sample(s, UNNAMED_PID + 1, "", base_of(UNNAMED_PID + 1) + HOT_FN);
        sample(s, OTHER_PID, "checker", base_of(OTHER_PID) + 0x9000);
        sample(s, OTHER_PID, "checker", base_of(OTHER_PID) + 0x9004);
        /* A thread may name itself with bytes that are not UTF-8. */
        sample(s, OTHER_PID + 2, "bad\xff\xfename", base_of(OTHER_PID + 2) + COLD_FN);
        store_epoch_end(s, 10 * SEC);
        *ret = f;
        return s;
}

static const struct agg_pc_row *find_row(const struct agg_pc_rows *rows, const char *comm, const char *symbol) {
        for (size_t i = 0; i < rows->n; i++)
                if (streq(rows->row[i].sum.comm.name, comm) && streq(rows->row[i].symbol ?: "", symbol))
                        return &rows->row[i];
        return NULL;
}

static void test_rows(void **state) {
        struct store_hotpcs_result res;
        struct agg_pc_rows rows;
        const struct agg_pc_row *r;
        struct fed f;
        _cleanup_(store_freep) struct store *s = feed(&f);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);

        assert_int_equal(store_query_hotpcs(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, &res), 0);
        assert_int_equal(res.pcs.evictions, 0);
        agg_hotpcs_rows(&res.pcs, &sym, NULL, SIZE_MAX, &rows);

        /* worker's hot_fn: one row, every process of the storm beside it, ascending. */
        r = find_row(&rows, "worker", "hot_fn");
        assert_non_null(r);
        assert_ptr_equal(r, &rows.row[0]);
        assert_int_equal(r->sum.count, f.storm_hot);
        assert_int_equal(r->sum.error, 0);
        assert_string_equal(r->object, "/usr/bin/worker");
        assert_int_equal(r->n_pids, STORM);
        for (size_t i = 0; i < STORM; i++)
                assert_int_equal(r->pids[i], STORM_PID0 + i);
        /* Its pc and pid are its hottest PC's. */
        assert_int_equal(r->sum.pid, STORM_PID0 + 7);
        assert_int_equal(r->sum.pc, base_of(STORM_PID0 + 7) + HOT_FN + 0x10);

        r = find_row(&rows, "worker", "cold_fn");
        assert_non_null(r);
        assert_int_equal(r->sum.count, f.storm_cold);
        assert_int_equal(r->n_pids, f.storm_cold);

        /* Another command in the same function: its own row. */
        r = find_row(&rows, "checker", "hot_fn");
        assert_non_null(r);
        assert_int_equal(r->sum.count, f.other_hot);
        assert_int_equal(r->n_pids, 1);

        /* No command: a row per process; no function: a row per PC. */
        for (uint32_t pid = UNNAMED_PID; pid <= UNNAMED_PID + 1; pid++) {
                size_t n = 0;

                for (size_t i = 0; i < rows.n; i++)
                        if (rows.row[i].sum.pid == pid) {
                                assert_false(comm_known(&rows.row[i].sum.comm));
                                assert_string_equal(rows.row[i].symbol, "hot_fn");
                                assert_int_equal(rows.row[i].sum.count, 1);
                                n++;
                        }
                assert_int_equal(n, 1);
        }
        for (size_t i = 0, n = 0; i <= rows.n; i++) {
                if (i == rows.n) {
                        assert_int_equal(n, 2);
                        break;
                }
                if (!rows.row[i].symbol && streq(rows.row[i].sum.comm.name, "checker")) {
                        assert_int_equal(rows.row[i].sum.count, 1);
                        assert_int_equal(rows.row[i].n_pids, 1);
                        n++;
                }
        }
        assert_int_equal(rows.n, 8);

        /* The JSON: comm, pid, every pid. */
        json_t *o = agg_hotpcs_json(&res, &rows, &sym), *first = json_array_get(json_object_get(o, "pcs"), 0);

        assert_string_equal(json_string_value(json_object_get(first, "comm")), "worker");
        assert_string_equal(json_string_value(json_object_get(first, "symbol")), "hot_fn");
        assert_int_equal(json_integer_value(json_object_get(first, "samples")), f.storm_hot);
        assert_int_equal(json_array_size(json_object_get(first, "pids")), STORM);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(first, "pids"), STORM - 1)),
                         STORM_PID0 + STORM - 1);
        /* A command that is not UTF-8: escaped. */
        size_t escaped = 0;
        for (size_t i = 0; i < json_array_size(json_object_get(o, "pcs")); i++) {
                json_t *p = json_array_get(json_object_get(o, "pcs"), i);

                if (json_integer_value(json_object_get(p, "pid")) == OTHER_PID + 2) {
                        assert_string_equal(json_string_value(json_object_get(p, "comm")), "bad\\xff\\xfename");
                        escaped++;
                }
        }
        assert_int_equal(escaped, 1);
        json_decref(o);
        agg_pc_rows_done(&rows);

        /* A limit counts rows; a cgroup keeps the processes in it before they are summed. */
        agg_hotpcs_rows(&res.pcs, &sym, NULL, 2, &rows);
        assert_int_equal(rows.n, 2);
        assert_string_equal(rows.row[0].symbol, "hot_fn");
        assert_int_equal(rows.row[0].sum.count, f.storm_hot);
        agg_pc_rows_done(&rows);
        agg_hotpcs_rows(&res.pcs, &sym, "/system.slice/", SIZE_MAX, &rows);
        r = find_row(&rows, "worker", "hot_fn");
        assert_non_null(r);
        assert_int_equal(r->sum.count, f.storm_odd_hot);
        assert_int_equal(r->n_pids, STORM / 2);
        for (size_t i = 0; i < r->n_pids; i++)
                assert_int_equal(r->pids[i] % 2, 1);
        assert_null(find_row(&rows, "checker", "hot_fn"));     /* pid 100: even */
        agg_pc_rows_done(&rows);
        store_hotpcs_result_done(&res);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
