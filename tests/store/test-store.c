/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store: window parsing, window merges equal to a recount of the
 * records of the epochs they cover (totals, hot PCs and hot lines with few
 * keys, latency counts and quantiles), the interval an answer covers, the
 * epoch ring, snapshot immutability and the attachment's lifetime, and the
 * commands kept with the counts.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "store.h"
#include "store-test-util.h"

#define SEC             UINT64_C(1000000000)
#define NPC             40
#define NLINE           16
#define NPID            2
#define MAXREC          20000

struct epoch_truth {
        uint64_t start, end;
        struct store_totals t;
        uint64_t pc_count[NPID][NPC];
        uint64_t line_loads[NPID][NLINE], line_stores[NPID][NLINE], line_peer[NPID][NLINE];
        size_t nlat;
        uint16_t lat_load[MAXREC];      /* total latency of loads */
};

static uint64_t pc_addr(unsigned k) { return UINT64_C(0x400000) + 4 * k; }
static uint64_t line_addr(unsigned k) { return UINT64_C(0x10000000) + 64 * k; }

/* Feed one epoch of random records, keeping the exact truth on the side. */
static void feed_epoch(struct store *s, struct epoch_truth *et, size_t n, uint64_t *st) {
        for (size_t i = 0; i < n; i++) {
                unsigned kind = (unsigned) (tu_rand(st) % 10);
                unsigned pid = (unsigned) (tu_rand(st) % NPID), pc = (unsigned) (tu_rand(st) % NPC);
                unsigned line = (unsigned) (tu_rand(st) % NLINE), off = (unsigned) (tu_rand(st) % 8) * 8;
                uint16_t lat = (uint16_t) (1 + tu_rand(st) % 3000);
                struct spe_record r;

                if (kind < 5) {
                        enum spe_data_src src = (enum spe_data_src) (tu_rand(st) % _SPE_DATA_SRC_MAX);

                        r = tu_rec_load(pc_addr(pc), line_addr(line) + off, (uint32_t) (tu_rand(st) % 4), src, lat);
                        if (src == SPE_DATA_SRC_NONE)
                                r.present &= ~(uint32_t) SPE_REC_SOURCE;
                        et->t.loads++;
                        et->t.loads_by_source[src]++;
                        et->line_loads[pid][line]++;
                        bool lp = src == SPE_DATA_SRC_PEER_CORE || src == SPE_DATA_SRC_LOCAL_CLUSTER ||
                                  src == SPE_DATA_SRC_PEER_CLUSTER;
                        et->t.peer_local += lp;
                        et->t.peer_remote += src == SPE_DATA_SRC_REMOTE;
                        et->line_peer[pid][line] += lp || src == SPE_DATA_SRC_REMOTE;
                        et->lat_load[et->nlat++] = lat;
                } else if (kind < 7) {
                        r = tu_rec_store(pc_addr(pc), line_addr(line) + off, (uint32_t) (tu_rand(st) % 4), lat);
                        et->t.stores++;
                        et->line_stores[pid][line]++;
                } else if (kind < 9) {
                        r = tu_rec_branch(pc_addr(pc), 0, tu_rand(st) & 1, lat);
                        et->t.branches++;
                } else {
                        r = tu_rec_base(pc_addr(pc), 0);
                        r.op_class = SPE_OP_CLASS_OTHER;
                        et->t.other++;
                }
                /* Some records have no PC packet. */
                if (tu_rand(st) % 50 == 0) {
                        r.present &= ~(uint32_t) SPE_REC_PC;
                        et->t.no_pc++;
                } else
                        et->pc_count[pid][pc]++;
                et->t.records++;
                store_add(s, &r, 1000 + pid, 1);
        }
}

static void check_totals(const struct store_totals *got, const struct store_totals *want) {
        assert_int_equal(got->records, want->records);
        assert_int_equal(got->loads, want->loads);
        assert_int_equal(got->stores, want->stores);
        assert_int_equal(got->branches, want->branches);
        assert_int_equal(got->other, want->other);
        assert_int_equal(got->no_pc, want->no_pc);
        assert_int_equal(got->peer_local, want->peer_local);
        assert_int_equal(got->peer_remote, want->peer_remote);
        assert_memory_equal(got->loads_by_source, want->loads_by_source, sizeof(want->loads_by_source));
}

static int cmp_u16(const void *a, const void *b) {
        return (int) *(const uint16_t *) a - (int) *(const uint16_t *) b;
}

/* Check one window answer against the truth of epochs [first, last] (newest last). */
static void check_window(const struct store_snapshot *snap, uint64_t window, struct epoch_truth *et,
                         size_t first, size_t last) {
        struct store_totals_result tr;
        struct store_hotpcs_result pr;
        struct store_hotlines_result lr;
        struct store_latency_result lat;
        struct store_totals want = {};
        uint16_t *v;
        size_t nv = 0;

        for (size_t e = first; e <= last; e++) {
                want.records += et[e].t.records;
                want.loads += et[e].t.loads;
                want.stores += et[e].t.stores;
                want.branches += et[e].t.branches;
                want.other += et[e].t.other;
                want.no_pc += et[e].t.no_pc;
                want.peer_local += et[e].t.peer_local;
                want.peer_remote += et[e].t.peer_remote;
                for (unsigned k = 0; k < _SPE_DATA_SRC_MAX; k++)
                        want.loads_by_source[k] += et[e].t.loads_by_source[k];
        }

        assert_int_equal(store_query_totals(snap, window, &tr), 0);
        assert_int_equal(tr.iv.epochs, last - first + 1);
        assert_int_equal(tr.iv.start_ns, et[first].start);
        assert_int_equal(tr.iv.end_ns, et[last].end);
        check_totals(&tr.t, &want);

        /* Hot PCs: fewer keys than counters, so exact with zero error. */
        assert_int_equal(store_query_hotpcs(snap, window, SIZE_MAX, STORE_PID_ANY, &pr), 0);
        assert_int_equal(pr.iv.epochs, last - first + 1);
        assert_int_equal(pr.pcs.total, want.records - want.no_pc);
        assert_int_equal(pr.pcs.error_bound, 0);
        for (unsigned p = 0; p < NPID; p++)
                for (unsigned k = 0; k < NPC; k++) {
                        uint64_t c = 0;
                        bool found = false;

                        for (size_t e = first; e <= last; e++)
                                c += et[e].pc_count[p][k];
                        for (size_t i = 0; i < pr.pcs.n; i++)
                                if (pr.pcs.item[i].pid == 1000 + p && pr.pcs.item[i].pc == pc_addr(k)) {
                                        assert_int_equal(pr.pcs.item[i].count, c);
                                        assert_int_equal(pr.pcs.item[i].error, 0);
                                        found = true;
                                }
                        assert_true(found == (c > 0));
                }
        store_hotpcs_result_done(&pr);

        /* Hot lines: few lines, exact. */
        assert_int_equal(store_query_hotlines(snap, window, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES, &lr), 0);
        assert_int_equal(lr.lines.evictions, 0);
        for (unsigned p = 0; p < NPID; p++)
                for (unsigned k = 0; k < NLINE; k++) {
                        uint64_t lo = 0, stv = 0, pe = 0;
                        bool found = false;

                        for (size_t e = first; e <= last; e++) {
                                lo += et[e].line_loads[p][k];
                                stv += et[e].line_stores[p][k];
                                pe += et[e].line_peer[p][k];
                        }
                        for (size_t i = 0; i < lr.lines.n; i++) {
                                const struct hotlines_line *l = &lr.lines.line[i].l;
                                uint64_t offs_total = 0;

                                if (l->pid != 1000 + p || l->addr != line_addr(k))
                                        continue;
                                found = true;
                                assert_int_equal(l->loads, lo);
                                assert_int_equal(l->stores, stv);
                                assert_int_equal(l->peer_local + l->peer_remote, pe);
                                for (size_t q = 0; q < lr.lines.line[i].noffs; q++)
                                        offs_total += lr.lines.line[i].off[q].loads + lr.lines.line[i].off[q].stores;
                                /* Few (offset, pc) keys per line? No: 8 x 40 > entries; evictions make
                                 * entry totals a lower bound. */
                                assert_true(offs_total <= lo + stv);
                        }
                        assert_true(found == (lo + stv > 0));
                }
        store_hotlines_result_done(&lr);

        /* Latency: counts exact, quantiles within 1% of the sorted samples. */
        v = xmalloc(MAXREC * (last - first + 1) * sizeof(uint16_t));
        for (size_t e = first; e <= last; e++) {
                memcpy(&v[nv], et[e].lat_load, et[e].nlat * sizeof(uint16_t));
                nv += et[e].nlat;
        }
        qsort(v, nv, sizeof(uint16_t), cmp_u16);
        assert_int_equal(store_query_latency(snap, window, &lat), 0);
        const struct store_lat_hist *h = store_latency_hist(&lat, STORE_LAT_TOTAL, STORE_LAT_GROUP_OP(HOTPCS_OP_LOAD));
        assert_int_equal(h->h.n, nv);
        const double qs[4] = { 0.5, 0.9, 0.99, 0.999 };
        const double got[4] = { h->p50, h->p90, h->p99, h->p999 };
        for (unsigned i = 0; i < 4; i++) {
                size_t rank = (size_t) ceil(qs[i] * (double) nv);
                double exact = v[rank - 1];
                assert_true(fabs(got[i] - exact) <= 0.01 * exact);
        }
        /* Per-source histograms add up to the load histogram. */
        uint64_t by_src = 0;
        for (unsigned k = 0; k < _SPE_DATA_SRC_MAX; k++)
                by_src += store_latency_hist(&lat, STORE_LAT_TOTAL, STORE_LAT_GROUP_SOURCE(k))->h.n;
        assert_int_equal(by_src, nv);
        assert_int_equal(store_latency_hist(&lat, STORE_LAT_TOTAL, STORE_LAT_GROUP_OP(HOTPCS_OP_STORE))->h.n,
                         want.stores);
        store_latency_result_done(&lat);
        free(v);
}

static void test_windows(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        struct epoch_truth *et = xcalloc(10, sizeof(*et));
        uint64_t st = 99, now = 1000 * SEC;

        store_options_init(&o);
        o.epochs = 6;
        assert_int_equal(store_new(&o, now, &s), 0);

        /* Before any epoch ends: an empty answer covering nothing. */
        {
                _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
                struct store_totals_result tr;

                assert_int_equal(store_query_totals(snap, 10 * SEC, &tr), 0);
                assert_int_equal(tr.iv.epochs, 0);
                assert_int_equal(tr.t.records, 0);
        }

        for (size_t e = 0; e < 10; e++) {
                et[e].start = now;
                feed_epoch(s, &et[e], 2000 + 1500 * e, &st);
                now += 10 * SEC;
                et[e].end = now;
                store_epoch_end(s, now);
        }

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_snapshot_epochs(snap), 6);
        check_window(snap, 10 * SEC, et, 9, 9);
        check_window(snap, 15 * SEC, et, 8, 9);         /* rounds up to whole epochs */
        check_window(snap, 30 * SEC, et, 7, 9);
        check_window(snap, 60 * SEC, et, 4, 9);
        check_window(snap, 600 * SEC, et, 4, 9);        /* clipped to the ring */
        check_window(snap, STORE_WINDOW_ALL, et, 4, 9);

        /* Cumulative totals cover all 10 epochs, also those the ring dropped. */
        uint64_t all = 0;
        for (size_t e = 0; e < 10; e++)
                all += et[e].t.records;
        assert_int_equal(store_snapshot_cumulative(snap)->records, all);

        /* Zero window is refused. */
        struct store_totals_result tr;
        assert_int_equal(store_query_totals(snap, 0, &tr), -EINVAL);
        free(et);
}

/*
 * Windows are whole epochs whose midpoint is inside the window: epochs cut
 * a little short by timer jitter (9.999 s) still answer "1m" with six of
 * them, not seven (70 s); the interval says the span, the window asked and
 * the clock.
 */
static void test_window_jitter(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        struct store_totals_result tr;
        const uint64_t d = 9999 * SEC / 1000;
        uint64_t now = 500 * SEC;

        store_options_init(&o);
        assert_int_equal(store_new(&o, now, &s), 0);
        store_set_clock(s, &(struct store_clock) { .kind = STORE_CLOCK_UNIX, .unix_offset_ns = 7 });
        for (size_t e = 0; e < 10; e++) {
                struct spe_record r = tu_rec_branch(0x400000, 0, false, 5);

                store_add(s, &r, 1, 1);
                now += d;
                store_epoch_end(s, now);
        }
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        static const struct {
                uint64_t window;
                uint32_t epochs;
        } cases[] = {
                { 60 * SEC, 6 }, { 10 * SEC, 1 }, { 4 * SEC, 1 }, { 14 * SEC, 1 }, { 15 * SEC, 2 },
                { 30 * SEC, 3 }, { STORE_WINDOW_ALL, 10 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_int_equal(store_query_totals(snap, cases[i].window, &tr), 0);
                assert_int_equal(tr.iv.epochs, cases[i].epochs);
                assert_int_equal(tr.t.records, cases[i].epochs);
                assert_int_equal(tr.iv.end_ns, now);
                assert_int_equal(tr.iv.end_ns - tr.iv.start_ns, cases[i].epochs * d);
                assert_int_equal(tr.iv.window_ns, cases[i].window);
                assert_int_equal(tr.iv.clock.kind, STORE_CLOCK_UNIX);
                assert_int_equal(tr.iv.clock.unix_offset_ns, 7);
        }
        assert_int_equal(store_snapshot_end_ns(snap), now);
}

/* A span selects the epochs that overlap it, whatever the newest one is. */
static void test_span(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        struct store_hotpcs_result r;
        static const struct {
                uint64_t start, end, first, last; /* epochs first..last (oldest first), or none when first > last */
        } cases[] = {
                { 12, 17, 1, 1 }, { 15, 25, 1, 2 }, { 10, 20, 1, 1 }, { 9, 31, 0, 3 },
                { 40, 45, 1, 0 }, { 0, 1, 0, 0 }, { 39, 100, 3, 3 },
        };

        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);
        /* Epoch e, [10e, 10e + 10) s, holds 1 << e samples. */
        for (unsigned e = 0; e < 4; e++) {
                for (unsigned i = 0; i < 1U << e; i++) {
                        struct spe_record rec = tu_rec_branch(0x400000 + 4 * e, 0, false, 5);

                        store_add(s, &rec, 1, 1);
                }
                store_epoch_end(s, (e + 1) * 10 * SEC);
        }
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t want = 0;

                for (uint64_t e = cases[i].first; e <= cases[i].last; e++)
                        want += UINT64_C(1) << e;
                assert_int_equal(store_query_samples_span(snap, cases[i].start * SEC, cases[i].end * SEC, SIZE_MAX, &r),
                                 0);
                assert_int_equal(r.pcs.total, want);
                if (want) {
                        assert_int_equal(r.iv.epochs, cases[i].last - cases[i].first + 1);
                        assert_int_equal(r.iv.start_ns, cases[i].first * 10 * SEC);
                        assert_int_equal(r.iv.end_ns, (cases[i].last + 1) * 10 * SEC);
                } else
                        assert_int_equal(r.iv.epochs, 0);
                store_hotpcs_result_done(&r);
        }
        assert_int_equal(store_query_samples_span(snap, 5 * SEC, 5 * SEC, SIZE_MAX, &r), -EINVAL);
}

static void test_snapshot_immutable(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        struct epoch_truth *et = xcalloc(3, sizeof(*et));
        uint64_t st = 7;

        store_options_init(&o);
        o.epochs = 2;
        assert_int_equal(store_new(&o, 0, &s), 0);
        et[0].start = 0;
        feed_epoch(s, &et[0], 5000, &st);
        et[0].end = 10 * SEC;
        store_epoch_end(s, 10 * SEC);

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *old = store_snapshot_get(s);
        uint64_t seq = store_snapshot_seq(old);

        /* The writer goes on; the old snapshot keeps answering for epoch 0 only. */
        for (size_t e = 1; e < 3; e++) {
                et[e].start = e * 10 * SEC;
                feed_epoch(s, &et[e], 5000, &st);
                et[e].end = (e + 1) * 10 * SEC;
                store_epoch_end(s, et[e].end);
        }
        check_window(old, STORE_WINDOW_ALL, et, 0, 0);

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *cur = store_snapshot_get(s);
        assert_true(store_snapshot_seq(cur) > seq);
        check_window(cur, STORE_WINDOW_ALL, et, 1, 2);
        free(et);
}

static unsigned destroyed;

static void destroy_counter(void *p) {
        destroyed += *(unsigned *) p;
        free(p);
}

static void test_attachment(void **state) {
        struct store *s = NULL;
        struct store_options o;
        unsigned *a = xmalloc(sizeof(unsigned)), *b = xmalloc(sizeof(unsigned));

        *a = 1;
        *b = 10;
        destroyed = 0;
        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);
        {
                _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
                assert_null(store_snapshot_attachment(snap));
        }
        store_publish_attachment(s, a, destroy_counter);
        struct store_snapshot *sa = store_snapshot_get(s);
        assert_ptr_equal(store_snapshot_attachment(sa), a);

        /* Epoch ends carry the attachment forward. */
        store_epoch_end(s, 10 * SEC);
        {
                _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
                assert_ptr_equal(store_snapshot_attachment(snap), a);
                assert_int_equal(store_snapshot_epochs(snap), 1);
        }

        /* Replaced: the old one lives while a snapshot still refers to it. */
        store_publish_attachment(s, b, destroy_counter);
        assert_int_equal(destroyed, 0);
        assert_ptr_equal(store_snapshot_attachment(sa), a);
        sa = store_snapshot_unref(sa);
        assert_null(sa);
        assert_int_equal(destroyed, 1);
        s = store_free(s);
        assert_int_equal(destroyed, 11);
}

static void test_window_parse(void **state) {
        uint64_t w = 0;

        assert_int_equal(store_window_parse("10s", &w), 0);
        assert_int_equal(w, 10 * SEC);
        assert_int_equal(store_window_parse("1m", &w), 0);
        assert_int_equal(w, 60 * SEC);
        assert_int_equal(store_window_parse("10m", &w), 0);
        assert_int_equal(w, 600 * SEC);
        assert_int_equal(store_window_parse("30", &w), 0);
        assert_int_equal(w, 30 * SEC);
        assert_int_equal(store_window_parse("1h", &w), 0);
        assert_int_equal(w, 3600 * SEC);
        assert_int_equal(store_window_parse("all", &w), 0);
        assert_true(w == STORE_WINDOW_ALL);
        w = 5;
        assert_true(store_window_parse("", &w) < 0);
        assert_true(store_window_parse("0", &w) < 0);
        assert_true(store_window_parse("0s", &w) < 0);
        assert_true(store_window_parse("abc", &w) < 0);
        assert_true(store_window_parse("-5", &w) < 0);
        assert_true(store_window_parse("10x", &w) < 0);
        assert_true(store_window_parse(" 10s", &w) < 0);
        assert_true(store_window_parse("99999999999999999999", &w) < 0);
        assert_true(store_window_parse(NULL, &w) < 0);
        assert_int_equal(w, 5);         /* untouched on error */
}

/* slots(n) of store.h's MEMORY: the next power of two >= 4n (at least 4). */
static size_t slots(size_t n) {
        size_t s = 4;

        while (s < 4 * n)
                s <<= 1;
        return s;
}

static void test_options(void **state) {
        struct store_options o, bad;
        struct store *s = NULL;

        store_options_init(&o);
        assert_int_equal(o.epochs, 60);
        assert_true(o.epoch_ns == 10 * SEC);
        assert_int_equal(o.line_size, 64);

        bad = o; bad.epochs = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.hotpcs = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.hotlines = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.line_offsets = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.line_size = 96;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.epoch_ns = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.stack_frames = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.stack_contexts = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.stack_strings = 0;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.stack_frames = STORE_STACK_POOL_MAX + 1;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        bad = o; bad.stacks = STORE_TABLE_MAX + 1;
        assert_int_equal(store_new(&bad, 0, &s), -EINVAL);
        assert_null(s);
        assert_int_equal(store_new(NULL, 0, &s), -EINVAL);

        /* The memory formula grows with each table. */
        size_t base = store_bytes(&o);
        bad = o; bad.hotpcs *= 2;
        assert_true(store_bytes(&bad) > base);
        bad = o; bad.hotlines *= 2;
        assert_true(store_bytes(&bad) > base);
        bad = o; bad.epochs *= 2;
        assert_true(store_bytes(&bad) > base);
        bad = o; bad.stacks *= 2;
        assert_true(store_bytes(&bad) > base);
        bad = o; bad.stack_frames *= 2;
        assert_true(store_bytes(&bad) > base);
        bad = o; bad.stack_contexts *= 2;
        assert_true(store_bytes(&bad) > base);
        bad = o; bad.stack_strings *= 2;
        assert_true(store_bytes(&bad) > base);
        printf("store_bytes(defaults) = %zu (%.1f MiB)\n", base, base / 1048576.0);

        /* The formula as written in store.h, recomputed here: keeps the doc honest. */
        {
                const size_t K = o.hotpcs, L = o.hotlines, O = o.line_offsets, E = o.epochs;
                const size_t N = o.stacks, F = o.stack_frames, X = o.stack_contexts, Y = o.stack_strings;
                size_t W, P, S, C, T, U;

                /* Two K-sized PC tables: hot PCs and the pprof sample table. */
                W = 608 + 2 * (120 + 24 * slots(K) + 24 * (K + 1) + 24 * K + 128 * K) +
                        (136 + 24 * slots(L) + 24 * (L + 1) + 12 * L + 168 * L + 148 * L * O) +
                        213696 + 8 * E;
                P = 592 + 2 * (32 + 128 * K) + (72 + 168 * L + 136 * L * O) + 213696;
                S = 264 + 8 * E;
                /* 3 kinds x 4 ops of (u64 n, u64 sum, 1269 u64 buckets), and a reference count. */
                C = 8 + 3 * 4 * (8 + 8 + 1269 * 8);
                /* The stack table and its frozen copy at its largest. */
                T = 168 + 8 * F + 40 * N + 24 * X + Y + 8 * (2 * slots(N) + slots(X) + slots(4 * X));
                U = 88 + 8 * F + 40 * N + 24 * X + Y;
                assert_int_equal(base, W + T + (E + 1) * (P + U) + (E + 2) * S + 3 * C + 24);

                /* Without a stack table, the store costs what it did before stacks. */
                bad = o;
                bad.stacks = 0;
                assert_int_equal(store_bytes(&bad), W + (E + 1) * P + (E + 2) * S + 3 * C + 24);
                printf("store_bytes(defaults, stacks = 0) = %zu (%.1f MiB)\n", store_bytes(&bad),
                       store_bytes(&bad) / 1048576.0);
        }

        /* Line size 128 (some Neoverse L2/SLC lines): offsets up to 127. */
        o.line_size = 128;
        assert_int_equal(store_new(&o, 0, &s), 0);
        struct spe_record r = tu_rec_store(0x400000, 0x10000 + 100, 0, 5);
        store_add(s, &r, 1, 1);
        store_epoch_end(s, SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        struct store_hotlines_result lr;
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, 10, STORE_PID_ANY, HOTLINES_ALL_LINES, &lr), 0);
        assert_int_equal(lr.lines.n, 1);
        assert_int_equal(lr.lines.line[0].l.addr, 0x10000);
        assert_int_equal(lr.lines.line[0].off[0].offset, 100);
        store_hotlines_result_done(&lr);
        snap = store_snapshot_unref(snap);
        s = store_free(s);
}

static void test_names(void **state) {
        assert_string_equal(store_lat_kind_name(STORE_LAT_XLAT), "translation");
        assert_string_equal(store_lat_group_name(STORE_LAT_GROUP_OP(HOTPCS_OP_BRANCH)), "branch");
        assert_true(store_lat_group_is_source(STORE_LAT_GROUP_SOURCE(SPE_DATA_SRC_DRAM)));
        assert_false(store_lat_group_is_source(STORE_LAT_GROUP_OP(HOTPCS_OP_LOAD)));
        assert_string_equal(hotlines_class_name(HOTLINES_FALSE_SHARING), "false_sharing");
}

/* Count of a latency histogram's buckets holding value v (each value is in exactly one). */
static uint64_t lat_count_at(const struct lathist_merged *h, uint32_t v) {
        const struct lathist_bucket *b = lathist_buckets();

        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++)
                if (v >= b[i].lo && v <= b[i].hi)
                        return h->count[i];
        return UINT64_MAX;
}

/*
 * Cumulative latency: every epoch since the start, epochs the ring dropped
 * included; each snapshot keeps the block of its epoch end.
 */
static void test_latency_cumulative(void **state) {
        static const uint16_t loads[] = { 0, 10, 100 };
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_latency_result win;
        struct store_options o;
        struct spe_record r;

        store_options_init(&o);
        o.epochs = 2;
        assert_int_equal(store_new(&o, 0, &s), 0);
        {
                _cleanup_(store_snapshot_unrefp) struct store_snapshot *none = store_snapshot_get(s);
                assert_null(store_snapshot_latency(none));
        }

        /* Epoch 1: three loads, a store, a branch (branches have no translation latency). */
        for (size_t i = 0; i < ELEMENTSOF(loads); i++) {
                r = tu_rec_load(0x400000, 0x10000, 0, SPE_DATA_SRC_L1D, loads[i]);
                store_add(s, &r, 1, 1);
        }
        r = tu_rec_store(0x400004, 0x10040, 0, 50);
        store_add(s, &r, 1, 1);
        r = tu_rec_branch(0x400008, 0, false, 7);
        store_add(s, &r, 1, 1);
        store_epoch_end(s, 10 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *first = store_snapshot_get(s);

        /* Epoch 2 empty; epoch 3 one slow load: the ring (2 epochs) drops epoch 1. */
        store_epoch_end(s, 20 * SEC);
        r = tu_rec_load(0x400000, 0x10000, 0, SPE_DATA_SRC_DRAM, 65535);
        store_add(s, &r, 1, 1);
        store_epoch_end(s, 30 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *last = store_snapshot_get(s);

        const struct store_latency_cumulative *c = store_snapshot_latency(last);
        assert_non_null(c);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_LOAD].n, 4);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_LOAD].sum, 0 + 10 + 100 + 65535);
        assert_int_equal(c->h[STORE_LAT_ISSUE][HOTPCS_OP_LOAD].sum, 0 + 5 + 50 + 32767);
        assert_int_equal(c->h[STORE_LAT_XLAT][HOTPCS_OP_LOAD].sum, 0 + 2 + 25 + 16383);
        assert_int_equal(lat_count_at(&c->h[STORE_LAT_TOTAL][HOTPCS_OP_LOAD], 0), 1);
        assert_int_equal(lat_count_at(&c->h[STORE_LAT_TOTAL][HOTPCS_OP_LOAD], 100), 1);
        assert_int_equal(lat_count_at(&c->h[STORE_LAT_TOTAL][HOTPCS_OP_LOAD], 65535), 1);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_STORE].n, 1);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_STORE].sum, 50);
        assert_int_equal(c->h[STORE_LAT_XLAT][HOTPCS_OP_STORE].sum, 12);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_BRANCH].n, 1);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_BRANCH].sum, 7);
        assert_int_equal(c->h[STORE_LAT_XLAT][HOTPCS_OP_BRANCH].n, 0);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_OTHER].n, 0);

        /* The window holds epochs 2 and 3 only: one load. */
        assert_int_equal(store_query_latency(last, STORE_WINDOW_ALL, &win), 0);
        assert_int_equal(store_latency_hist(&win, STORE_LAT_TOTAL, STORE_LAT_GROUP_OP(HOTPCS_OP_LOAD))->h.n, 1);
        store_latency_result_done(&win);

        /* The first snapshot still answers for epoch 1. */
        c = store_snapshot_latency(first);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_LOAD].n, 3);
        assert_int_equal(c->h[STORE_LAT_TOTAL][HOTPCS_OP_LOAD].sum, 110);
}

/* The hot-PC item of (pid, pc, comm) in a merged answer, or NULL. */
static const struct hotpcs_item *find_pc(const struct store_hotpcs_result *res, uint32_t pid, uint64_t pc,
                                         const char *comm) {
        for (size_t i = 0; i < res->pcs.n; i++) {
                const struct hotpcs_item *it = &res->pcs.item[i];

                if (it->pid == pid && it->pc == pc && streq(it->comm.name, comm))
                        return it;
        }
        return NULL;
}

/*
 * Commands: the hot PCs count the threads of a process apart by their
 * names (perf report's Command), keep each name with its counts across the
 * epochs of a window, and name a process that exec'd under its old name
 * for what it ran before; a CPU sample counts under its thread's name; a
 * hot line's entry keeps the name of its first access's thread.
 */
static void test_commands(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_hotpcs_result res;
        struct store_hotlines_result lr;
        struct store_task io0, io1, execd, unnamed;
        struct store_options o;
        struct spe_record r;
        const struct hotpcs_item *it;
        uint64_t frame = 0x500000;

        store_options_init(&o);
        o.epochs = 4;
        assert_int_equal(store_new(&o, 0, &s), 0);
        store_task_init(&io0, 7, 8, "kv_io0");
        store_task_init(&io1, 7, 9, "kv_io1");
        /* Longer than a comm: cut at 15 bytes, as the kernel does. */
        store_task_init(&execd, 7, 7, "a-name-longer-than-sixteen");
        store_task_init(&unnamed, 7, 10, "");
        assert_string_equal(execd.comm.name, "a-name-longer-t");
        assert_int_equal(comm_hash(&unnamed.comm), 0);

        /* Epoch 1: 3 loads of kv_io0 and 2 of kv_io1 at one PC; a line shared by both. */
        for (int i = 0; i < 3; i++) {
                r = tu_rec_load(0x400000, 0x10000, 0, SPE_DATA_SRC_L1D, 10);
                store_add_task(s, &r, &io0);
        }
        for (int i = 0; i < 2; i++) {
                r = tu_rec_load(0x400000, 0x10000, 1, SPE_DATA_SRC_L1D, 10);
                store_add_task(s, &r, &io1);
        }
        store_epoch_end(s, 10 * SEC);
        /* Epoch 2: kv_io0 once more, the exec'd image at the same PC twice, an unnamed thread once. */
        r = tu_rec_load(0x400000, 0x10000, 0, SPE_DATA_SRC_L1D, 10);
        store_add_task(s, &r, &io0);
        for (int i = 0; i < 2; i++) {
                r = tu_rec_load(0x400000, 0x20000, 0, SPE_DATA_SRC_L1D, 10);
                store_add_task(s, &r, &execd);
        }
        r = tu_rec_load(0x400000, 0x30000, 0, SPE_DATA_SRC_L1D, 10);
        store_add_task(s, &r, &unnamed);
        /* A CPU sample: counted under its thread's name, else its process's. */
        store_add_stack(s, &(struct store_stack_sample) { .pid = 11, .tid = 12, .comm = "server",
                                                          .thread = "worker-3", .frames = &frame, .n_frames = 1,
                                                          .weight = 1 });
        store_add_stack(s, &(struct store_stack_sample) { .pid = 11, .tid = 11, .comm = "server", .thread = "",
                                                          .frames = &frame, .n_frames = 1, .weight = 1 });
        store_epoch_end(s, 20 * SEC);

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_query_hotpcs(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, &res), 0);
        assert_int_equal(res.pcs.n, 6);
        it = find_pc(&res, 7, 0x400000, "kv_io0");
        assert_non_null(it);
        assert_int_equal(it->count, 4);         /* 3 + 1, merged over both epochs by name */
        assert_int_equal(it->ops[HOTPCS_OP_LOAD], 4);
        it = find_pc(&res, 7, 0x400000, "kv_io1");
        assert_non_null(it);
        assert_int_equal(it->count, 2);
        it = find_pc(&res, 7, 0x400000, "a-name-longer-t");
        assert_non_null(it);
        assert_int_equal(it->count, 2);
        it = find_pc(&res, 7, 0x400000, "");
        assert_non_null(it);
        assert_int_equal(it->count, 1);
        it = find_pc(&res, 11, frame, "worker-3");
        assert_non_null(it);
        assert_int_equal(it->count, 1);
        it = find_pc(&res, 11, frame, "server");
        assert_non_null(it);
        assert_int_equal(it->count, 1);
        store_hotpcs_result_done(&res);

        /* The line at 0x10000: one (offset, pc) entry of pid 7 for both threads, named by the first. */
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES,
                                              &lr), 0);
        assert_int_equal(lr.lines.n, 3);
        for (size_t i = 0; i < lr.lines.n; i++) {
                const struct hotlines_result *l = &lr.lines.line[i];

                assert_int_equal(l->noffs, 1);
                if (l->l.addr == 0x10000) {
                        assert_int_equal(l->off[0].loads, 6);
                        assert_int_equal(l->off[0].ntids, 2);
                        assert_string_equal(l->off[0].comm.name, "kv_io0");
                } else if (l->l.addr == 0x20000)
                        assert_string_equal(l->off[0].comm.name, "a-name-longer-t");
                else
                        assert_string_equal(l->off[0].comm.name, "");
        }
        store_hotlines_result_done(&lr);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_window_parse),
                cmocka_unit_test(test_options),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_windows),
                cmocka_unit_test(test_window_jitter),
                cmocka_unit_test(test_span),
                cmocka_unit_test(test_snapshot_immutable),
                cmocka_unit_test(test_attachment),
                cmocka_unit_test(test_latency_cumulative),
                cmocka_unit_test(test_commands),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
