/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Concurrency: the writer adds records at full speed and ends epochs often
 * while reader threads take snapshots, query every table and release them,
 * and the attachment is replaced now and then. Meant to run under
 * ThreadSanitizer and ASan; also checks what readers see is consistent
 * (a snapshot's totals equal the sum over its epochs; sequence numbers
 * never go back; an attachment always matches its snapshot's epochs).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "store.h"
#include "store-test-util.h"

#define NREADERS        4

static size_t nrecords = 5000000;
static size_t epoch_every = 50000;

struct shared {
        struct store *s;
        int done;                       /* atomic */
        unsigned failures;              /* atomic: cmocka asserts only on the main thread */
        uint64_t queries[NREADERS];
};

struct reader_arg {
        struct shared *sh;
        unsigned id;
};

/* The attachment: its own serial, checked against the snapshot's cumulative records. */
struct counters {
        uint64_t cumulative_records;
};

#define CHECK(x)                                                                \
        do {                                                                    \
                if (!(x)) {                                                     \
                        fprintf(stderr, "reader %u: check failed: %s\n", ra->id, #x); \
                        __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED); \
                }                                                               \
        } while (0)

static void *reader(void *p) {
        struct reader_arg *ra = p;
        struct shared *sh = ra->sh;
        static const uint64_t windows[] = { UINT64_C(10000000000), UINT64_C(60000000000), STORE_WINDOW_ALL };
        uint64_t last_seq = 0, n = 0;

        while (!__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) {
                struct store_snapshot *snap = store_snapshot_get(sh->s);
                uint64_t w = windows[n % ELEMENTSOF(windows)];
                struct store_totals_result tr;
                struct store_hotpcs_result pr;
                struct store_hotlines_result lr;
                struct store_latency_result lat;
                const struct counters *c;

                CHECK(store_snapshot_seq(snap) >= last_seq);
                last_seq = store_snapshot_seq(snap);

                CHECK(store_query_totals(snap, w, &tr) == 0);
                CHECK(store_query_hotpcs(snap, w, 20, STORE_PID_ANY, &pr) == 0);
                CHECK(pr.pcs.total + tr.t.no_pc == tr.t.records);
                CHECK(pr.iv.epochs == tr.iv.epochs);
                store_hotpcs_result_done(&pr);
                CHECK(store_query_hotlines(snap, w, 20, STORE_PID_ANY, HOTLINES_ALL_LINES, &lr) == 0);
                CHECK(lr.lines.records == tr.t.loads + tr.t.stores);
                store_hotlines_result_done(&lr);
                if (n % 8 == 0) {
                        CHECK(store_query_latency(snap, w, &lat) == 0);
                        CHECK(store_latency_hist(&lat, STORE_LAT_TOTAL,
                                                 STORE_LAT_GROUP_OP(HOTPCS_OP_LOAD))->h.n == tr.t.loads);
                        store_latency_result_done(&lat);
                }
                c = store_snapshot_attachment(snap);
                if (c)
                        CHECK(c->cumulative_records <= store_snapshot_cumulative(snap)->records);
                store_snapshot_unref(snap);
                n++;
        }
        sh->queries[ra->id] = n;
        return NULL;
}

static void test_stress(void **state) {
        struct shared sh = {};
        struct reader_arg ra[NREADERS];
        pthread_t th[NREADERS];
        struct store_options o;
        uint64_t st = 3, now = 0;
        struct spe_record *recs;
        const size_t nrec_pool = 4096;

        store_options_init(&o);
        o.epochs = 12;
        o.hotpcs = 512;
        o.hotlines = 256;
        assert_int_equal(store_new(&o, 0, &sh.s), 0);

        /* A pool of records built up front: the writer loop does nothing else. */
        recs = xmalloc(nrec_pool * sizeof(*recs));
        for (size_t i = 0; i < nrec_pool; i++) {
                uint64_t pc = 0x400000 + 4 * (tu_rand(&st) % 5000);
                uint64_t va = 0x10000000 + 8 * (tu_rand(&st) % 100000);
                uint32_t cpu = (uint32_t) (tu_rand(&st) % 64);
                unsigned k = (unsigned) (tu_rand(&st) % 4);

                recs[i] = k == 0 ? tu_rec_store(pc, va, cpu, 9) :
                        k == 3 ? tu_rec_branch(pc, cpu, tu_rand(&st) & 1, 3) :
                        tu_rec_load(pc, va, cpu, (enum spe_data_src) (tu_rand(&st) % _SPE_DATA_SRC_MAX),
                                    (uint16_t) (tu_rand(&st) % 2000));
        }

        for (unsigned i = 0; i < NREADERS; i++) {
                ra[i] = (struct reader_arg) { .sh = &sh, .id = i };
                assert_int_equal(pthread_create(&th[i], NULL, reader, &ra[i]), 0);
        }

        uint64_t added = 0;
        for (size_t i = 0; i < nrecords; i++) {
                store_add(sh.s, &recs[i & (nrec_pool - 1)], 100 + (uint32_t) (i & 7), (uint32_t) i & 0xff);
                added++;
                if ((i + 1) % epoch_every == 0) {
                        now += UINT64_C(10000000000);
                        store_epoch_end(sh.s, now);
                        if ((i / epoch_every) % 3 == 0) {
                                struct counters *c = xmalloc(sizeof(*c));
                                /* Records already published when this attachment is set. */
                                c->cumulative_records = added;
                                store_publish_attachment(sh.s, c, free);
                        }
                }
        }
        __atomic_store_n(&sh.done, 1, __ATOMIC_RELEASE);

        assert_int_equal(__atomic_load_n(&sh.failures, __ATOMIC_RELAXED), 0);
        uint64_t total_q = 0;
        for (unsigned i = 0; i < NREADERS; i++) {
                assert_int_equal(pthread_join(th[i], NULL), 0);
                total_q += sh.queries[i];
        }
        struct store_snapshot *snap = store_snapshot_get(sh.s);
        assert_int_equal(store_snapshot_cumulative(snap)->records, nrecords - nrecords % epoch_every);
        store_snapshot_unref(snap);
        printf("stress: %zu records, %zu epochs, %u readers made %lu queries\n",
               nrecords, nrecords / epoch_every, NREADERS, (unsigned long) total_q);
        assert_true(total_q > 0);
        store_free(sh.s);
        free(recs);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stress),
        };

        if (tu_quick(argc, argv)) {
                nrecords /= 10;
                epoch_every /= 10;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
