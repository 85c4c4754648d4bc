/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A replay's time is the file's: the records' SPE timestamps, through the
 * file's TIME_CONV, close the store's epochs; gaps become one empty epoch;
 * the file's end closes the last one and freezes the store's clock, so a
 * window counted back from "now" still holds the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "replay-clock.h"
#include "macro.h"
#include "spe-replay.h"
#include "store.h"

#define MS (NSEC_PER_SEC / 1000)

/* tools/perf/util/tsc.c, worked by hand: 100 + (5 >> 1) * 3 + ((5 & 1) * 3 >> 1) = 107. */
static void test_perf_ns(void **state) {
        struct source_clock c = { .has_time_conv = true, .time_shift = 1, .time_mult = 3, .time_zero = 100,
                                      .time_mask = UINT64_MAX };

        assert_int_equal(source_clock_perf_ns(&c, 5), 107);
        /* cap_user_time_short: the counter's low bits above time_cycles (0x1000 + (0x1234 & 0xff) = 0x1034). */
        c = (struct source_clock) { .has_time_conv = true, .time_mult = 1, .time_cycles = 0x1000,
                                        .time_mask = 0xff, .cap_user_time_short = true };
        assert_int_equal(source_clock_perf_ns(&c, 0x1234), 0x1034);
}

static void add(struct replay_clock *t, struct store *s, uint64_t ts, uint32_t flags) {
        struct spe_record r = { .present = SPE_REC_TIMESTAMP, .timestamp = ts, .flags = flags };

        replay_clock_record(t, &r);
        store_add(s, &r, 1, 1);
}

static void check(struct store_snapshot *snap, uint64_t window, uint64_t records, uint64_t start, uint64_t end,
                  uint32_t epochs) {
        struct store_totals_result tr;

        assert_int_equal(store_query_totals(snap, window, &tr), 0);
        assert_int_equal(tr.t.records, records);
        assert_int_equal(tr.iv.start_ns, start);
        assert_int_equal(tr.iv.end_ns, end);
        assert_int_equal(tr.iv.epochs, epochs);
}

static void test_epochs_follow_records(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;

        store_options_init(&o);
        o.epochs = 10;
        assert_int_equal(store_new(&o, 777 * NSEC_PER_SEC, &s), 0);

        struct replay_clock t = { .store = s, .epoch_ns = NSEC_PER_SEC };
        /* Identity conversion, as the generator writes it; clock data: perf time 0 is Unix 1.8e18. */
        replay_clock_file(&t, &(struct source_clock) { .has_time_conv = true, .time_mult = 1,
                                                          .time_mask = UINT64_MAX, .has_clock_data = true,
                                                          .unix_minus_perf_ns = INT64_C(1800000000000000000) });
        add(&t, s, 100 * MS, 0);
        add(&t, s, 50 * MS, 0);                          /* earlier: the first epoch starts here */
        add(&t, s, 900 * MS, 0);
        add(&t, s, 100 * NSEC_PER_SEC, SPE_REC_F_AFTER_ERROR); /* a timestamp made of garbage: not a time */
        add(&t, s, 1200 * MS, 0);                        /* closes [0.05, 1.05) */
        add(&t, s, 1100 * MS, 0);
        add(&t, s, 5500 * MS, 0);                        /* closes [1.05, 2.05) and the gap [2.05, 5.05) */
        add(&t, s, 5600 * MS, 0);
        replay_clock_finish(&t);                         /* closes [5.05, 5.6 s + 1 ns) */

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_snapshot_epochs(snap), 4);
        check(snap, STORE_WINDOW_ALL, 8, 50 * MS, 5600 * MS + 1, 4);
        check(snap, 1, 2, 5050 * MS, 5600 * MS + 1, 1);
        check(snap, 2 * NSEC_PER_SEC, 2, 5050 * MS, 5600 * MS + 1, 1); /* the gap's midpoint is 2.3 s back */
        check(snap, 4 * NSEC_PER_SEC, 2, 2050 * MS, 5600 * MS + 1, 2);
        check(snap, 5 * NSEC_PER_SEC, 4, 1050 * MS, 5600 * MS + 1, 3);
        check(snap, 6 * NSEC_PER_SEC, 8, 50 * MS, 5600 * MS + 1, 4);   /* the garbage-stamped record is in the first */
        assert_true(store_snapshot_clock(snap)->frozen);
        assert_int_equal(store_snapshot_clock(snap)->kind, STORE_CLOCK_UNIX);
        assert_int_equal(store_snapshot_clock(snap)->unix_offset_ns, INT64_C(1800000000000000000));
}

/* --once: one epoch, the file's first to last timestamp; no clock data: perf time. */
static void test_one_epoch(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;

        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);

        struct replay_clock t = { .store = s };
        replay_clock_file(&t, &(struct source_clock) { .has_time_conv = true, .time_mult = 1,
                                                          .time_mask = UINT64_MAX });
        add(&t, s, 30 * NSEC_PER_SEC, 0);
        add(&t, s, 20 * NSEC_PER_SEC, 0);
        add(&t, s, 90 * NSEC_PER_SEC, 0);
        replay_clock_finish(&t);

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        check(snap, STORE_WINDOW_ALL, 3, 20 * NSEC_PER_SEC, 90 * NSEC_PER_SEC + 1, 1);
        assert_int_equal(store_snapshot_clock(snap)->kind, STORE_CLOCK_PERF);
}

/* No TIME_CONV: no time at all; one epoch of no span, not the time the file was read. */
static void test_untimed(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;

        store_options_init(&o);
        assert_int_equal(store_new(&o, 123 * NSEC_PER_SEC, &s), 0);

        struct replay_clock t = { .store = s, .epoch_ns = NSEC_PER_SEC };
        add(&t, s, 30 * NSEC_PER_SEC, 0);
        add(&t, s, 90 * NSEC_PER_SEC, 0);
        replay_clock_finish(&t);

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        check(snap, STORE_WINDOW_ALL, 2, 0, 0, 1);
        assert_true(store_snapshot_clock(snap)->frozen);
}

/*
 * A pipe-mode perf.data with the clock records perf writes, built here from
 * the kernel and perf ABI (not from the reader's header): TIME_CONV (79) and
 * HEADER_CLOCK_DATA (feature 29, in a HEADER_FEATURE record, 80) as
 * tools/perf/util/header.c write_clock_data() lays it out: u32 version,
 * u32 clockid, u64 time of day, u64 the clockid's time.
 */
static size_t put(uint8_t *buf, size_t at, const void *p, size_t n) {
        memcpy(buf + at, p, n);
        return at + n;
}

static size_t put_header(uint8_t *buf, size_t at, uint32_t type, uint16_t size) {
        uint16_t misc = 0;

        at = put(buf, at, &type, 4);
        at = put(buf, at, &misc, 2);
        return put(buf, at, &size, 2);
}

static void test_file_clocks(void **state) {
        const uint64_t magic = UINT64_C(0x32454c4946524550), hsize = 16, feat = 29;
        const uint64_t tc[3] = { 10, 3, 500 }; /* shift, mult, zero */
        const uint32_t version = 1, clockid = 1; /* CLOCK_MONOTONIC */
        const uint64_t tod = UINT64_C(1795000000123456789), ref = UINT64_C(4000000000);
        uint8_t buf[256];
        size_t n = 0;
        struct spe_replay *r = NULL;
        struct store_options o;
        _cleanup_(store_freep) struct store *s = NULL;

        n = put(buf, n, &magic, 8);
        n = put(buf, n, &hsize, 8);
        n = put_header(buf, n, 79, 8 + 3 * 8);
        n = put(buf, n, tc, sizeof(tc));
        n = put_header(buf, n, 80, 8 + 8 + 24);
        n = put(buf, n, &feat, 8);
        n = put(buf, n, &version, 4);
        n = put(buf, n, &clockid, 4);
        n = put(buf, n, &tod, 8);
        n = put(buf, n, &ref, 8);

        int fd = memfd_create("clocks.data", MFD_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, buf, n), (ssize_t) n);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);

        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);
        struct replay_clock t = { .store = s };
        struct source_sink sink = { .userdata = &t, .clock = replay_clock_file };
        assert_int_equal(spe_replay_run(&(struct spe_replay_input) { .fd = fd, .cancel_fd = -1, .name = "clocks.data" },
                                        &sink, NULL, &r), 0);
        spe_replay_free(r);
        close(fd);

        assert_true(t.file.has_time_conv && t.file.has_clock_data);
        assert_int_equal(t.file.clockid, 1);
        assert_int_equal(t.file.unix_minus_perf_ns, (int64_t) (tod - ref));
        /* 500 + (4096 >> 10) * 3 + 0 */
        assert_int_equal(source_clock_perf_ns(&t.file, 4096), 512);

        add(&t, s, 4096, 0);
        add(&t, s, 8192, 0);
        replay_clock_finish(&t);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        check(snap, STORE_WINDOW_ALL, 2, 512, 524 + 1, 1);
        assert_int_equal(store_snapshot_clock(snap)->kind, STORE_CLOCK_UNIX);
        assert_int_equal(store_snapshot_clock(snap)->unix_offset_ns, (int64_t) (tod - ref));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_perf_ns),
                cmocka_unit_test(test_epochs_follow_records),
                cmocka_unit_test(test_one_epoch),
                cmocka_unit_test(test_untimed),
                cmocka_unit_test(test_file_clocks),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
