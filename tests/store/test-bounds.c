/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Bounds: 100 M synthetic records with 10 M distinct PCs and 10 M distinct
 * lines (scaled down 20x under sanitizers). Resident memory grows by no
 * more than the documented formula (store_bytes) plus a small constant, and
 * the evictions equal the number the stream forces: each key occurs once
 * per epoch, so every record after a table fills evicts exactly one entry.
 * Each epoch also fills the stack tables to their last count, frame and
 * context (and three quarters of the string pool) with distinct stacks of
 * distinct tasks, so their frozen copies are near the formula's largest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "store.h"
#include "store-test-util.h"

/* malloc bookkeeping, page rounding and the test's own allocations. */
#define RSS_SLACK       (8U << 20)

/* Stack samples an epoch: more distinct (task, stack) pairs than any default table holds. */
#define STACK_SAMPLES   6000
#define STACK_DEPTH     32

static size_t nrecords = 100000000;
static size_t ndistinct = 10000000;
static bool quick;

/* Distinct stacks, four a task; tasks with distinct comm, thread and cgroup of 15 bytes each. */
static void feed_stacks(struct store *s, size_t epoch) {
        uint64_t frames[STACK_DEPTH];

        for (size_t i = 0; i < STACK_SAMPLES; i++) {
                char comm[16], thread[16], cgroup[16], service[16];

                snprintf(comm, sizeof(comm), "c%04zu-%09zu", epoch, i / 4);
                snprintf(thread, sizeof(thread), "t%04zu-%09zu", epoch, i / 4);
                snprintf(cgroup, sizeof(cgroup), "/%04zu-%09zu", epoch, i / 4);
                snprintf(service, sizeof(service), "svc");
                for (size_t j = 0; j < STACK_DEPTH; j++)
                        frames[j] = UINT64_C(0x400000) + 0x1000 * i + 4 * j;
                store_add_stack(s, &(struct store_stack_sample) {
                        .pid = (uint32_t) (i / 4),
                        .tid = (uint32_t) (i / 4),
                        .comm = comm,
                        .thread = thread,
                        .cgroup = cgroup,
                        .service = service,
                        .frames = frames,
                        .n_frames = STACK_DEPTH,
                        .weight = 52631578,
                });
        }
}

static void test_bounds(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        size_t rss0, rss1, bound, epochs;
        uint64_t now = 0;
        struct rusage ru;

        store_options_init(&o);
        o.epochs = 10;
        o.hotpcs = 4096;
        o.hotlines = 1024;
        o.line_offsets = 8;
        epochs = nrecords / ndistinct;
        assert_int_equal(epochs, o.epochs);

        rss0 = tu_rss_bytes();
        assert_int_equal(store_new(&o, 0, &s), 0);
        bound = store_bytes(&o);

        for (size_t i = 0; i < nrecords; i++) {
                uint64_t k = i % ndistinct;
                /* One load per distinct key: its own PC and its own line. */
                struct spe_record r = tu_rec_load(UINT64_C(0x400000) + 4 * k,
                                                  UINT64_C(0x100000000) + 64 * k + 8 * (i & 7),
                                                  (uint32_t) (i & 63), SPE_DATA_SRC_L1D,
                                                  (uint16_t) (1 + (i & 1023)));

                store_add(s, &r, 100, (uint32_t) (i & 255));
                if ((i + 1) % ndistinct == 0) {
                        feed_stacks(s, (i + 1) / ndistinct);
                        now += STORE_EPOCH_NS_DEFAULT;
                        store_epoch_end(s, now);
                }
        }

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        const struct store_totals *t = store_snapshot_cumulative(snap);
        struct store_totals_result tr;

        assert_int_equal(t->records, nrecords);
        /* The stack samples' leaves are distinct PCs too: each one evicts. */
        assert_int_equal(t->evictions[STORE_TABLE_HOTPCS], epochs * (ndistinct - o.hotpcs + STACK_SAMPLES));
        assert_int_equal(t->evictions[STORE_TABLE_HOTLINES], epochs * (ndistinct - o.hotlines));
        assert_int_equal(t->evictions[STORE_TABLE_OFFSETS], 0);
        /* The PC-by-context table: every record of an epoch is a key of its own there too (the stack samples are not in it). */
        assert_int_equal(t->evictions[STORE_TABLE_SAMPLES], epochs * (ndistinct - o.hotpcs));
        assert_int_equal(store_query_totals(snap, STORE_WINDOW_ALL, &tr), 0);
        assert_int_equal(tr.t.evictions[STORE_TABLE_HOTPCS], t->evictions[STORE_TABLE_HOTPCS]);
        assert_int_equal(tr.iv.epochs, epochs);

        /* Queries work on the full ring and respect the capacities. */
        struct store_hotpcs_result pr;
        assert_int_equal(store_query_hotpcs(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, &pr), 0);
        assert_true(pr.pcs.n <= o.hotpcs);
        assert_int_equal(pr.pcs.total, nrecords + epochs * STACK_SAMPLES);
        /* All keys equally frequent (10 each): the bound is N/K-sized, every count >= true. */
        for (size_t i = 0; i < pr.pcs.n; i++)
                assert_true(pr.pcs.item[i].count >= epochs && pr.pcs.item[i].count - pr.pcs.item[i].error <= epochs);
        assert_true(pr.pcs.error_bound <= pr.pcs.total / o.hotpcs);
        store_hotpcs_result_done(&pr);

        rss1 = tu_rss_bytes();
        getrusage(RUSAGE_SELF, &ru);
        printf("bounds: %zu records, %zu distinct PCs/lines, evictions", nrecords, ndistinct);
        for (unsigned i = 0; i < _STORE_TABLE_MAX; i++)
                printf(" %s %lu", store_table_name(i), (unsigned long) t->evictions[i]);
        printf("\n");
        printf("bounds: RSS grew %.1f MiB (maxrss %.1f MiB), formula store_bytes() = %.1f MiB + slack %.1f MiB\n",
               (double) (rss1 - rss0) / 1048576, (double) ru.ru_maxrss / 1024,
               (double) bound / 1048576, (double) RSS_SLACK / 1048576);
        if (quick)
                printf("bounds: sanitizer build, RSS not asserted (shadow memory, quarantine)\n");
        else
                assert_true(rss1 - rss0 <= bound + RSS_SLACK);

        /* The stack tables held what they could and counted the rest, epoch by epoch. After the RSS
         * figure: the merge's copies, freed, stay resident in a sanitizer's quarantine. */
        struct store_stacks_result sr;
        uint64_t stored = 0;
        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, STORE_PID_ANY, NULL, &sr), 0);
        for (size_t i = 0; i < sr.n; i++)
                stored += sr.stacks[i].count;
        assert_int_equal(sr.samples, epochs * STACK_SAMPLES);
        assert_int_equal(t->cpu_samples, epochs * STACK_SAMPLES);
        assert_int_equal(stored + sr.dropped, sr.samples);
        /* Counts, frames and contexts run out together at the 4096th stack. */
        assert_int_equal(o.stack_frames, o.stacks * STACK_DEPTH);
        assert_int_equal(o.stacks, 4 * o.stack_contexts);
        assert_int_equal(stored, epochs * o.stacks);
        printf("bounds: stacks stored %lu, dropped %lu\n", (unsigned long) stored, (unsigned long) sr.dropped);
        store_stacks_result_done(&sr);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bounds),
        };

        quick = tu_quick(argc, argv);
        if (quick) {
                nrecords /= 20;
                ndistinct /= 20;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
