/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hot lines: false/true/read-only sharing on constructed record streams
 * (the cases perf c2c is used for, perf-c2c(1)), through the store API.
 * Expected lines, offsets, PCs, CPUs and counts come from the scenario
 * tables and a recount of the emitted records, never from the store.
 *
 * Each scenario is a set of "actors": one (pid, cpu, tid, pc) touching one
 * offset of one line, loading (with a data source) or storing. The stream
 * picks actors at random, interleaved with private per-CPU noise lines.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "store.h"
#include "store-test-util.h"

#define LINE            64
#define NS_PER_EPOCH    UINT64_C(10000000000)

enum expect { EXP_READ_ONLY, EXP_WRITTEN, EXP_TRUE, EXP_FALSE };

struct actor {
        const char *scenario;
        enum expect expect;             /* the line's expected class */
        uint32_t pid, tid, cpu;
        uint64_t va_line, pa_line;
        uint16_t offset;
        uint64_t pc;
        bool store;
        enum spe_data_src src;          /* loads; a PEER source is a peer snoop */
        unsigned weight;
        /* recount */
        uint64_t emitted;
        uint64_t lat_sum, lat_n;        /* of the records that carried a total latency */
};

#define L(x) UINT64_C(x)

static struct actor actors[] = {
        /* A: classic false sharing: CPU 0 stores the lock at 0x0, CPUs 1,2 read 0x20
         * and get the line from CPU 0's cache (local peer). */
        { "A fs lock/reader", EXP_FALSE, 100, 1001, 0, L(0x7f0000010000), 0, 0x00, L(0x401000), true,  SPE_DATA_SRC_NONE, 4 },
        { "A fs lock/reader", EXP_FALSE, 100, 1002, 1, L(0x7f0000010000), 0, 0x20, L(0x402000), false, SPE_DATA_SRC_PEER_CORE, 3 },
        { "A fs lock/reader", EXP_FALSE, 100, 1003, 2, L(0x7f0000010000), 0, 0x20, L(0x402000), false, SPE_DATA_SRC_L1D, 3 },
        /* B: two per-thread counters 8 bytes apart in one line, each CPU stores its own. */
        { "B fs counters",    EXP_FALSE, 100, 1004, 3, L(0x7f0000020000), 0, 0x00, L(0x403000), true,  SPE_DATA_SRC_NONE, 3 },
        { "B fs counters",    EXP_FALSE, 100, 1004, 3, L(0x7f0000020000), 0, 0x00, L(0x403004), false, SPE_DATA_SRC_PEER_CLUSTER, 2 },
        { "B fs counters",    EXP_FALSE, 100, 1005, 4, L(0x7f0000020000), 0, 0x08, L(0x403000), true,  SPE_DATA_SRC_NONE, 3 },
        { "B fs counters",    EXP_FALSE, 100, 1005, 4, L(0x7f0000020000), 0, 0x08, L(0x403004), false, SPE_DATA_SRC_LOCAL_CLUSTER, 2 },
        /* C: true sharing: CPUs 5 and 6 both load and store one counter at 0x10. */
        { "C true sharing",   EXP_TRUE,  100, 1006, 5, L(0x7f0000030000), 0, 0x10, L(0x404000), true,  SPE_DATA_SRC_NONE, 2 },
        { "C true sharing",   EXP_TRUE,  100, 1006, 5, L(0x7f0000030000), 0, 0x10, L(0x404008), false, SPE_DATA_SRC_PEER_CORE, 2 },
        { "C true sharing",   EXP_TRUE,  100, 1007, 6, L(0x7f0000030000), 0, 0x10, L(0x404000), true,  SPE_DATA_SRC_NONE, 2 },
        { "C true sharing",   EXP_TRUE,  100, 1007, 6, L(0x7f0000030000), 0, 0x10, L(0x404008), false, SPE_DATA_SRC_PEER_CORE, 2 },
        /* D: read-only sharing: CPUs 7, 8, 9 only load (some clean lines come from peers). */
        { "D read-only",      EXP_READ_ONLY, 100, 1008, 7, L(0x7f0000040000), 0, 0x00, L(0x405000), false, SPE_DATA_SRC_L1D, 3 },
        { "D read-only",      EXP_READ_ONLY, 100, 1009, 8, L(0x7f0000040000), 0, 0x08, L(0x405010), false, SPE_DATA_SRC_PEER_CORE, 2 },
        { "D read-only",      EXP_READ_ONLY, 100, 1010, 9, L(0x7f0000040000), 0, 0x30, L(0x405020), false, SPE_DATA_SRC_L2, 2 },
        /* E: the padded fix of A: the reader field moved 64 bytes away, its own line. */
        { "E padded writer",  EXP_WRITTEN,   100, 1011, 10, L(0x7f0000050000), 0, 0x00, L(0x406000), true,  SPE_DATA_SRC_NONE, 4 },
        { "E padded readers", EXP_READ_ONLY, 100, 1012, 11, L(0x7f0000050040), 0, 0x00, L(0x407000), false, SPE_DATA_SRC_L1D, 3 },
        { "E padded readers", EXP_READ_ONLY, 100, 1013, 12, L(0x7f0000050040), 0, 0x00, L(0x407000), false, SPE_DATA_SRC_L1D, 3 },
        /* F: false sharing across sockets: readers on CPUs 64, 65 get the line remotely. */
        { "F fs remote",      EXP_FALSE, 100, 1014, 13, L(0x7f0000060000), 0, 0x00, L(0x408000), true,  SPE_DATA_SRC_NONE, 3 },
        { "F fs remote",      EXP_FALSE, 100, 1015, 64, L(0x7f0000060000), 0, 0x28, L(0x409000), false, SPE_DATA_SRC_REMOTE, 2 },
        { "F fs remote",      EXP_FALSE, 100, 1016, 65, L(0x7f0000060000), 0, 0x38, L(0x409008), false, SPE_DATA_SRC_REMOTE, 2 },
        /* G: same VA line in two processes (separate memory): two private lines under VA keying. */
        { "G pid 200",        EXP_WRITTEN,   200, 2001, 20, L(0x7f0000070000), 0, 0x00, L(0x40a000), true,  SPE_DATA_SRC_NONE, 2 },
        { "G pid 201",        EXP_READ_ONLY, 201, 2011, 21, L(0x7f0000070000), 0, 0x20, L(0x40b000), false, SPE_DATA_SRC_L1D, 2 },
};

/* Shared memory across processes (H): different VAs, same PA; by-PA keying finds it. */
static struct actor pa_actors[] = {
        { "H shm writer",     EXP_FALSE, 300, 3001, 30, L(0x7f1000000000), L(0x80000000), 0x00, L(0x40c000), true,  SPE_DATA_SRC_NONE, 3 },
        { "H shm reader",     EXP_FALSE, 301, 3011, 31, L(0x7f2000000000), L(0x80000000), 0x20, L(0x40d000), false, SPE_DATA_SRC_PEER_CORE, 3 },
        { "H shm private",    EXP_READ_ONLY, 301, 3011, 31, L(0x7f2000001000), L(0x80001000), 0x00, L(0x40d100), false, SPE_DATA_SRC_L1D, 2 },
};

static size_t nrecords = 400000;

static struct spe_record actor_record(const struct actor *a, uint16_t lat) {
        struct spe_record r;

        if (a->store)
                r = tu_rec_store(a->pc, a->va_line + a->offset, a->cpu, lat);
        else
                r = tu_rec_load(a->pc, a->va_line + a->offset, a->cpu, a->src, lat);
        if (a->pa_line) {
                r.present |= SPE_REC_PA;
                r.pa = a->pa_line + a->offset;
        }
        return r;
}

/* Private noise: each noise line belongs to one CPU (ids 100..131), loads and stores. */
static void emit_noise(struct store *s, uint64_t *st) {
        uint32_t cpu = 100 + (uint32_t) (tu_rand(st) % 32);
        uint64_t line = L(0x7e0000000000) + (uint64_t) cpu * L(0x100000) + (tu_rand(st) % 512) * LINE;
        uint16_t off = (uint16_t) ((tu_rand(st) % 8) * 8);
        uint64_t pc = L(0x500000) + (tu_rand(st) % 64) * 4;
        struct spe_record r = (tu_rand(st) & 1) ?
                tu_rec_store(pc, line + off, cpu, 5) :
                tu_rec_load(pc, line + off, cpu, SPE_DATA_SRC_L1D, 4);

        store_add(s, &r, 500 + cpu, 5000 + cpu);
}

/* One record of an actor, recounted; every 8th has no total latency packet. */
static void emit_actor(struct store *s, struct actor *a, uint16_t lat) {
        struct spe_record r = actor_record(a, lat);

        if (a->emitted % 8 == 7)
                r.present &= ~SPE_REC_LAT_TOTAL;
        else {
                a->lat_sum += lat;
                a->lat_n++;
        }
        store_add(s, &r, a->pid, a->tid);
        a->emitted++;
}

static void run_stream(struct store *s, struct actor *act, size_t nact, size_t n, size_t epochs, uint64_t seed) {
        unsigned total_w = 0;
        uint64_t st = seed, now = 0;

        for (size_t i = 0; i < nact; i++) {
                total_w += act[i].weight;
                act[i].emitted = act[i].lat_sum = act[i].lat_n = 0;
        }
        /* Touch every scenario line first so it is tracked from the start (exact counts). */
        for (size_t i = 0; i < nact; i++)
                emit_actor(s, &act[i], 40);
        for (size_t i = 0; i < n; i++) {
                if (i % 3 == 0) {
                        unsigned w = (unsigned) (tu_rand(&st) % total_w);
                        size_t k = 0;

                        while (w >= act[k].weight)
                                w -= act[k++].weight;
                        emit_actor(s, &act[k], (uint16_t) (20 + tu_rand(&st) % 200));
                } else
                        emit_noise(s, &st);
                if ((i + 1) % (n / epochs) == 0) {
                        now += NS_PER_EPOCH;
                        store_epoch_end(s, now);
                }
        }
}

static const struct hotlines_result *find_line(const struct hotlines_merged *m, uint64_t addr,
                                               uint32_t pid, bool by_pa) {
        for (size_t i = 0; i < m->n; i++)
                if (m->line[i].l.addr == addr && m->line[i].l.by_pa == by_pa &&
                    (by_pa || m->line[i].l.pid == pid))
                        return &m->line[i];
        return NULL;
}

static bool cpus_equal(const struct hotlines_off *o, const uint32_t *cpus, size_t n) {
        if (o->ncpus != n || o->cpus_more)
                return false;
        for (size_t i = 0; i < n; i++) {
                bool f = false;
                for (unsigned j = 0; j < o->ncpus; j++)
                        f |= o->cpus[j] == cpus[i];
                if (!f)
                        return false;
        }
        return true;
}

static bool is_sharing(enum hotlines_class c) {
        return c == HOTLINES_TRUE_SHARING || c == HOTLINES_FALSE_SHARING;
}

/* Check every scenario line against the actor table; returns TP/FP/FN tallies. */
static void check_lines(const struct hotlines_merged *m, const struct actor *act, size_t nact,
                        bool by_pa, unsigned *tp, unsigned *fp, unsigned *fn, unsigned *ok_class) {
        for (size_t i = 0; i < nact; i++) {
                const struct actor *a = &act[i];
                uint64_t addr = by_pa && a->pa_line ? a->pa_line : a->va_line;
                bool line_pa = by_pa && a->pa_line;
                const struct hotlines_result *r = find_line(m, addr, a->pid, line_pa);
                uint64_t loads = 0, stores = 0, peer_l = 0, peer_r = 0;
                bool first = true;

                /* Line-level expectation, checked once at its first actor. */
                for (size_t j = 0; j < i; j++) {
                        uint64_t a2 = by_pa && act[j].pa_line ? act[j].pa_line : act[j].va_line;
                        if (a2 == addr && (line_pa || act[j].pid == a->pid))
                                first = false;
                }
                if (!r)
                        fail_msg("%s: line %#lx pid %u not found", a->scenario, (unsigned long) addr, a->pid);
                assert_int_equal(r->l.error, 0);

                /* The (offset, pc) entry of this actor, with all CPUs of actors sharing it. */
                uint32_t cpus[16];
                size_t ncpus = 0;
                uint64_t e_loads = 0, e_stores = 0, e_lat_sum = 0, e_lat_n = 0;
                for (size_t j = 0; j < nact; j++) {
                        const struct actor *b = &act[j];
                        uint64_t a2 = by_pa && b->pa_line ? b->pa_line : b->va_line;

                        if (a2 != addr || (!line_pa && b->pid != a->pid))
                                continue;
                        if (b->store)
                                stores += b->emitted;
                        else {
                                loads += b->emitted;
                                if (b->src == SPE_DATA_SRC_REMOTE)
                                        peer_r += b->emitted;
                                else if (b->src == SPE_DATA_SRC_PEER_CORE || b->src == SPE_DATA_SRC_PEER_CLUSTER ||
                                         b->src == SPE_DATA_SRC_LOCAL_CLUSTER)
                                        peer_l += b->emitted;
                        }
                        if (b->offset == a->offset && b->pc == a->pc && b->pid == a->pid) {
                                bool seen = false;
                                for (size_t q = 0; q < ncpus; q++)
                                        seen |= cpus[q] == b->cpu;
                                if (!seen)
                                        cpus[ncpus++] = b->cpu;
                                if (b->store)
                                        e_stores += b->emitted;
                                else
                                        e_loads += b->emitted;
                                e_lat_sum += b->lat_sum;
                                e_lat_n += b->lat_n;
                        }
                }
                assert_int_equal(r->l.loads, loads);
                assert_int_equal(r->l.stores, stores);
                assert_int_equal(r->l.peer_local, peer_l);
                assert_int_equal(r->l.peer_remote, peer_r);

                const struct hotlines_off *o = NULL;
                for (size_t k = 0; k < r->noffs; k++)
                        if (r->off[k].offset == a->offset && r->off[k].pc == a->pc && r->off[k].pid == a->pid)
                                o = &r->off[k];
                if (!o)
                        fail_msg("%s: offset %#x pc %#lx missing", a->scenario, a->offset, (unsigned long) a->pc);
                assert_int_equal(o->loads, e_loads);
                assert_int_equal(o->stores, e_stores);
                /* Mean latency per entry: over the records that carried one only. */
                assert_int_equal(o->lat_sum, e_lat_sum);
                assert_int_equal(o->lat_n, e_lat_n);
                if (!cpus_equal(o, cpus, ncpus))
                        fail_msg("%s: offset %#x pc %#lx: CPUs differ (%u listed, %zu expected)",
                                 a->scenario, a->offset, (unsigned long) a->pc, o->ncpus, ncpus);

                if (!first)
                        continue;
                bool flagged = is_sharing(r->cls), want = a->expect == EXP_TRUE || a->expect == EXP_FALSE;
                enum hotlines_class want_cls = a->expect == EXP_FALSE ? HOTLINES_FALSE_SHARING :
                        a->expect == EXP_TRUE ? HOTLINES_TRUE_SHARING :
                        a->expect == EXP_WRITTEN ? HOTLINES_WRITTEN : HOTLINES_READ_ONLY;

                *tp += flagged && want;
                *fp += flagged && !want;
                *fn += !flagged && want;
                *ok_class += r->cls == want_cls;
                printf("  %-18s line %#014lx pid %u: %-13s (expected %-13s) loads %lu stores %lu peer %lu/%lu offsets %zu\n",
                       a->scenario, (unsigned long) addr, r->l.pid, hotlines_class_name(r->cls),
                       hotlines_class_name(want_cls), (unsigned long) r->l.loads, (unsigned long) r->l.stores,
                       (unsigned long) r->l.peer_local, (unsigned long) r->l.peer_remote, r->noffs);
                if (r->cls != want_cls)
                        fail_msg("%s: classified %s, expected %s", a->scenario,
                                 hotlines_class_name(r->cls), hotlines_class_name(want_cls));
        }
}

static void count_noise_flags(const struct hotlines_merged *m, unsigned *fp) {
        for (size_t i = 0; i < m->n; i++)
                if (m->line[i].l.addr >= L(0x7e0000000000) && m->line[i].l.addr < L(0x7f0000000000) &&
                    is_sharing(m->line[i].cls))
                        (*fp)++;
}

static void test_scenarios(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        struct store_options o;
        struct store_hotlines_result res;
        unsigned tp = 0, fp = 0, fn = 0, ok = 0, nlines = 0;

        store_options_init(&o);
        o.hotlines = 512;
        o.epochs = 8;
        assert_int_equal(store_new(&o, 0, &s), 0);
        run_stream(s, actors, ELEMENTSOF(actors), nrecords, 4, 11);
        snap = store_snapshot_get(s);
        assert_int_equal(store_snapshot_epochs(snap), 4);
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES, &res), 0);
        assert_int_equal(res.iv.epochs, 4);
        assert_true(res.lines.evictions > 0);   /* the noise overflowed the table */

        /* Ranked by peer snoops, then latency. */
        for (size_t i = 1; i < res.lines.n; i++) {
                uint64_t p0 = res.lines.line[i - 1].l.peer_local + res.lines.line[i - 1].l.peer_remote;
                uint64_t p1 = res.lines.line[i].l.peer_local + res.lines.line[i].l.peer_remote;
                assert_true(p0 > p1 || (p0 == p1 && res.lines.line[i - 1].l.lat_sum >= res.lines.line[i].l.lat_sum));
        }

        check_lines(&res.lines, actors, ELEMENTSOF(actors), false, &tp, &fp, &fn, &ok);
        count_noise_flags(&res.lines, &fp);
        for (size_t i = 0; i < ELEMENTSOF(actors); i++)
                nlines += i == 0 || actors[i].va_line != actors[i - 1].va_line || actors[i].pid != actors[i - 1].pid;
        printf("hotlines scenarios: lines %u, classes right %u, TP %u FP %u FN %u, precision %.1f%% recall %.1f%%\n",
               nlines, ok, tp, fp, fn, tp + fp ? 100.0 * tp / (tp + fp) : 100.0,
               tp + fn ? 100.0 * tp / (tp + fn) : 100.0);
        assert_int_equal(fp, 0);
        assert_int_equal(fn, 0);
        assert_int_equal(ok, nlines);

        /* The top lines are the peer-snoop scenarios: A..C and F, not the padded or noise lines. */
        for (size_t i = 0; i < 4; i++)
                assert_true(is_sharing(res.lines.line[i].cls));
        store_hotlines_result_done(&res);

        /* By default only lines with peer snoops, as perf c2c's Shared Data Cache Line
         * Table: the scenario lines whose actors load from a peer (A, B, C, D, F), none
         * of the padded, per-process or noise lines. */
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_PEER_LINES,
                                              &res), 0);
        {
                uint64_t peer_lines[ELEMENTSOF(actors)];
                size_t npeer = 0;

                for (size_t i = 0; i < ELEMENTSOF(actors); i++) {
                        bool peer = actors[i].src == SPE_DATA_SRC_PEER_CORE || actors[i].src == SPE_DATA_SRC_PEER_CLUSTER ||
                                    actors[i].src == SPE_DATA_SRC_LOCAL_CLUSTER || actors[i].src == SPE_DATA_SRC_REMOTE;
                        bool seen = false;

                        for (size_t j = 0; j < npeer; j++)
                                seen |= peer_lines[j] == actors[i].va_line;
                        if (peer && !seen)
                                peer_lines[npeer++] = actors[i].va_line;
                }
                assert_int_equal(npeer, 5);
                assert_int_equal(res.lines.n, npeer);
                assert_int_equal(res.lines.npeer, npeer);
                assert_true(res.lines.nlines > npeer);
                for (size_t i = 0; i < npeer; i++)
                        assert_non_null(find_line(&res.lines, peer_lines[i], 100, false));
        }

        /* pid filter keeps only that process's lines. */
        store_hotlines_result_done(&res);
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, 201, HOTLINES_ALL_LINES, &res), 0);
        assert_int_equal(res.lines.n, 1);
        assert_int_equal(res.lines.line[0].l.pid, 201);
        store_hotlines_result_done(&res);

        /* limit */
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, 3, STORE_PID_ANY, HOTLINES_ALL_LINES, &res), 0);
        assert_int_equal(res.lines.n, 3);
        store_hotlines_result_done(&res);
}

static void test_by_pa(void **state) {
        _cleanup_(store_freep) struct store *s = NULL, *s2 = NULL;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL, *snap2 = NULL;
        struct store_options o;
        struct store_hotlines_result res;
        unsigned tp = 0, fp = 0, fn = 0, ok = 0;

        store_options_init(&o);
        o.lines_by_pa = true;
        assert_int_equal(store_new(&o, 0, &s), 0);
        run_stream(s, pa_actors, ELEMENTSOF(pa_actors), nrecords / 4, 2, 12);
        snap = store_snapshot_get(s);
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES, &res), 0);
        check_lines(&res.lines, pa_actors, ELEMENTSOF(pa_actors), true, &tp, &fp, &fn, &ok);
        assert_int_equal(tp, 1);
        assert_int_equal(fp + fn, 0);
        store_hotlines_result_done(&res);
        /* A by-PA line matches a pid filter through any of its entries. */
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, 301, HOTLINES_ALL_LINES, &res), 0);
        assert_non_null(find_line(&res.lines, L(0x80000000), 0, true));
        store_hotlines_result_done(&res);

        /* With VA keying the two processes' views are separate lines, neither flagged. */
        o.lines_by_pa = false;
        assert_int_equal(store_new(&o, 0, &s2), 0);
        run_stream(s2, pa_actors, ELEMENTSOF(pa_actors), nrecords / 4, 2, 12);
        snap2 = store_snapshot_get(s2);
        assert_int_equal(store_query_hotlines(snap2, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES, &res), 0);
        assert_non_null(find_line(&res.lines, L(0x7f1000000000), 300, false));
        assert_non_null(find_line(&res.lines, L(0x7f2000000000), 301, false));
        for (size_t i = 0; i < res.lines.n; i++)
                assert_false(is_sharing(res.lines.line[i].cls));
        store_hotlines_result_done(&res);
}

static void test_classify_direct(void **state) {
        /* The rule itself on hand-built entries. */
        struct hotlines_off o[3] = {};

        o[0] = (struct hotlines_off) { .offset = 0, .stores = 5, .ncpus = 1, .cpus = { 1 } };
        o[1] = (struct hotlines_off) { .offset = 32, .loads = 5, .ncpus = 1, .cpus = { 1 } };
        /* one CPU only: written, not shared */
        assert_int_equal(hotlines_classify(o, 2, 5, 10), HOTLINES_F_WRITTEN);
        o[1].cpus[0] = 2;
        assert_int_equal(hotlines_classify(o, 2, 5, 10), HOTLINES_F_WRITTEN | HOTLINES_F_SHARED | HOTLINES_F_FALSE);
        /* no peer snoops: no sharing class (no line transfer seen) */
        assert_int_equal(hotlines_classify(o, 2, 5, 0), HOTLINES_F_WRITTEN | HOTLINES_F_SHARED);
        /* same offset: true sharing */
        o[1].offset = 0;
        assert_int_equal(hotlines_classify(o, 2, 5, 10), HOTLINES_F_WRITTEN | HOTLINES_F_SHARED | HOTLINES_F_TRUE);
        /* ... and, without peer snoops, not that either */
        assert_int_equal(hotlines_class_of(hotlines_classify(o, 2, 5, 0)), HOTLINES_WRITTEN);
        /* loads only by many CPUs: read-only */
        o[0] = (struct hotlines_off) { .offset = 0, .loads = 5, .ncpus = 2, .cpus = { 1, 2 } };
        o[1] = (struct hotlines_off) { .offset = 8, .loads = 5, .ncpus = 1, .cpus = { 3 } };
        assert_int_equal(hotlines_classify(o, 2, 0, 10), HOTLINES_F_SHARED);
        assert_int_equal(hotlines_class_of(HOTLINES_F_SHARED), HOTLINES_READ_ONLY);
        assert_int_equal(hotlines_class_of(HOTLINES_F_TRUE | HOTLINES_F_FALSE), HOTLINES_FALSE_SHARING);
        /* a store on the line that no tracked entry holds any more (evicted): not read-only */
        assert_int_equal(hotlines_class_of(hotlines_classify(o, 2, 1, 10)), HOTLINES_WRITTEN);
}

/*
 * Issue 11 item 7, the two lines of `armprofd-spegen --scenario all --records
 * 50000 --ts` whose class contradicted the rule, rebuilt through the store:
 *  - 0xffff8a004000, the padded writer: 337 loads and 1,470 stores by one
 *    CPU, no peer snoop. It was read_only; it has stores: written.
 *  - 0xffff8a020180: loads by 4 CPUs at 8 offsets, 1 store, no peer snoop.
 *    It was true_sharing; nothing shows the line moving: written.
 * And a read-only line with peer snoops stays read_only.
 */
static void test_issue_lines(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        struct store_options o;
        struct store_hotlines_result res;
        struct spe_record r;
        const struct hotlines_result *l;

        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);
        for (unsigned i = 0; i < 1470; i++) {
                r = tu_rec_store(0xaaaac0001010, L(0xffff8a004000), 0, 12);
                store_add(s, &r, 4242, 4300);
        }
        for (unsigned i = 0; i < 337; i++) {
                r = tu_rec_load(0xaaaac0001020, L(0xffff8a004000), 0, SPE_DATA_SRC_L1D, 4);
                store_add(s, &r, 4242, 4300);
        }
        for (unsigned i = 0; i < 294; i++) {
                r = tu_rec_load(0xaaaac0002000 + 4 * (i % 8), L(0xffff8a020180) + 8 * (i % 8), i % 4,
                                SPE_DATA_SRC_L2, 11);
                store_add(s, &r, 4242, 4400 + i % 4);
        }
        r = tu_rec_store(0xaaaac0002000, L(0xffff8a020180), 1, 9);       /* CPU 1 stores offset 0 CPU 0 loads */
        store_add(s, &r, 4242, 4401);
        for (unsigned i = 0; i < 50; i++) {
                r = tu_rec_load(0xaaaac0003000, L(0xffff8a003000) + 8 * (i % 2), i % 2, SPE_DATA_SRC_PEER_CORE, 30);
                store_add(s, &r, 4242, 4500 + i % 2);
        }
        store_epoch_end(s, NS_PER_EPOCH);
        snap = store_snapshot_get(s);

        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES,
                                              &res), 0);
        assert_int_equal(res.lines.n, 3);
        assert_int_equal(res.lines.npeer, 1);
        l = find_line(&res.lines, L(0xffff8a004000), 4242, false);
        assert_non_null(l);
        assert_int_equal(l->l.stores, 1470);
        assert_string_equal(hotlines_class_name(l->cls), "written");
        l = find_line(&res.lines, L(0xffff8a020180), 4242, false);
        assert_non_null(l);
        assert_true(l->l.flags & HOTLINES_F_SHARED);
        assert_string_equal(hotlines_class_name(l->cls), "written");
        l = find_line(&res.lines, L(0xffff8a003000), 4242, false);
        assert_non_null(l);
        assert_string_equal(hotlines_class_name(l->cls), "read_only");
        /* the peer-snoop line ranks first */
        assert_int_equal(res.lines.line[0].l.addr, L(0xffff8a003000));
        store_hotlines_result_done(&res);

        /* Default: only the line with peer snoops. */
        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_PEER_LINES,
                                              &res), 0);
        assert_int_equal(res.lines.n, 1);
        assert_int_equal(res.lines.nlines, 3);
        assert_int_equal(res.lines.line[0].l.addr, L(0xffff8a003000));
        store_hotlines_result_done(&res);
}

/*
 * A table far smaller than the lines: a line that takes over an evicted
 * one's counter counts only from then, and its error bounds what it
 * missed. Over one epoch and merged over several, each listed line's
 * loads + stores <= its true count <= loads + stores + error, against an
 * exact recount of the stream (Zipf lines, peer snoops weighing 16).
 */
#define BOUND_LINES     2048
#define BOUND_EPOCHS    6
#define BOUND_OFFSETS   8                       /* each line's accesses land on 8 offsets, 8 bytes apart */
#define BOUND_BASE      L(0x7d0000000000)       /* line i is at BOUND_BASE + i * LINE */

/*
 * The churning stream of the bound tests into a store with table options o
 * (epochs: BOUND_EPOCHS and more): Zipf lines, offsets skewed within each
 * line (the first often, the last seldom), 1 in 8 a peer-snoop load;
 * truth[epoch][line][offset] counts it. Returns the store's snapshot.
 */
static struct store_snapshot *bound_stream(struct store_options *o, uint64_t st,
                                           uint64_t (*truth)[BOUND_LINES][BOUND_OFFSETS], struct store **ret_store) {
        struct store *s = NULL;
        struct tu_zipf z;
        uint64_t now = 0;

        assert_int_equal(store_new(o, 0, &s), 0);
        tu_zipf_init(&z, BOUND_LINES, 1.05);
        for (size_t e = 0; e < BOUND_EPOCHS; e++) {
                for (size_t i = 0; i < nrecords / 16; i++) {
                        size_t id = tu_zipf_next(&z, &st);
                        size_t off = (size_t) (tu_rand(&st) % BOUND_OFFSETS & tu_rand(&st) % BOUND_OFFSETS);
                        uint64_t va = BOUND_BASE + id * LINE + off * 8, r = tu_rand(&st) % 8;
                        uint32_t cpu = (uint32_t) (tu_rand(&st) % 16);
                        struct spe_record rec = r == 0 ? tu_rec_load(0x600000 + id * 4, va, cpu, SPE_DATA_SRC_PEER_CORE, 90) :
                                                r < 5  ? tu_rec_load(0x600000 + id * 4, va, cpu, SPE_DATA_SRC_L1D, 4) :
                                                         tu_rec_store(0x600000 + id * 4, va, cpu, 6);

                        store_add(s, &rec, 100, 1000 + cpu);
                        truth[e][id][off]++;
                }
                now += NS_PER_EPOCH;
                store_epoch_end(s, now);
        }
        tu_zipf_done(&z);
        *ret_store = s;
        return store_snapshot_get(s);
}

static void check_records_bound(const struct hotlines_merged *m, uint64_t (*truth)[BOUND_LINES][BOUND_OFFSETS],
                                size_t first_epoch, unsigned *exact, unsigned *short_of) {
        for (size_t i = 0; i < m->n; i++) {
                const struct hotlines_line *l = &m->line[i].l;
                size_t id = (size_t) ((l->addr - BOUND_BASE) / LINE);
                uint64_t true_n = 0, seen = l->loads + l->stores;

                assert_true(id < BOUND_LINES);
                for (size_t e = first_epoch; e < BOUND_EPOCHS; e++)
                        for (size_t k = 0; k < BOUND_OFFSETS; k++)
                                true_n += truth[e][id][k];
                if (seen > true_n || true_n > seen + l->error)
                        fail_msg("line %zu: seen %" PRIu64 ", true %" PRIu64 ", error %" PRIu64, id, seen, true_n,
                                 l->error);
                *exact += l->error == 0 && seen == true_n;
                *short_of += seen < true_n;
        }
}

static void test_records_bound(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        static uint64_t truth[BOUND_EPOCHS][BOUND_LINES][BOUND_OFFSETS];
        struct store_options o;
        struct store_hotlines_result res;
        unsigned exact = 0, short_of = 0;

        store_options_init(&o);
        o.hotlines = 64;
        o.epochs = 8;
        snap = bound_stream(&o, 29, truth, &s);

        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES, &res), 0);
        assert_int_equal(res.iv.epochs, BOUND_EPOCHS);
        assert_true(res.lines.evictions > 0);
        check_records_bound(&res.lines, truth, 0, &exact, &short_of);
        store_hotlines_result_done(&res);

        assert_int_equal(store_query_hotlines(snap, 2 * NS_PER_EPOCH, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES,
                                              &res), 0);
        assert_int_equal(res.iv.epochs, 2);
        check_records_bound(&res.lines, truth, BOUND_EPOCHS - 2, &exact, &short_of);
        store_hotlines_result_done(&res);

        printf("records bound: %u exact lines, %u short of the truth, each within its error\n", exact, short_of);
        /* Both kinds: the bound is needed, and it is not loose everywhere. */
        assert_true(exact > 0);
        assert_true(short_of > 0);
}

/*
 * The same of each line's (offset, pc) entries (the Pareto's rows), with
 * three entries a line where the stream has eight offsets a line: an entry
 * that took over another one's place, or whose line did, counts from then;
 * loads + stores <= its true count <= loads + stores + off_error, over one
 * epoch and merged over epochs (where an entry was out of its line's table
 * in some of them), against the same recount per offset.
 */
static void check_entry_bound(const struct hotlines_merged *m, uint64_t (*truth)[BOUND_LINES][BOUND_OFFSETS],
                              size_t first_epoch, unsigned *exact, unsigned *short_of) {
        for (size_t i = 0; i < m->n; i++) {
                const struct hotlines_result *r = &m->line[i];
                size_t id = (size_t) ((r->l.addr - BOUND_BASE) / LINE);

                assert_true(id < BOUND_LINES);
                for (size_t k = 0; k < r->noffs; k++) {
                        const struct hotlines_off *o = &r->off[k];
                        uint64_t true_n = 0, seen = o->loads + o->stores;

                        assert_true(o->offset % 8 == 0 && o->offset / 8 < BOUND_OFFSETS);
                        for (size_t e = first_epoch; e < BOUND_EPOCHS; e++)
                                true_n += truth[e][id][o->offset / 8];
                        if (seen > true_n || true_n > seen + r->off_error[k])
                                fail_msg("line %zu offset %u: seen %" PRIu64 ", true %" PRIu64 ", error %" PRIu64, id,
                                         o->offset, seen, true_n, r->off_error[k]);
                        *exact += r->off_error[k] == 0 && seen == true_n;
                        *short_of += seen < true_n;
                }
        }
}

static void test_entry_records_bound(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        static uint64_t truth[BOUND_EPOCHS][BOUND_LINES][BOUND_OFFSETS];
        struct store_options o;
        struct store_hotlines_result res;
        unsigned exact = 0, short_of = 0;

        store_options_init(&o);
        o.hotlines = 64;
        o.line_offsets = 3;
        o.epochs = 8;
        snap = bound_stream(&o, 31, truth, &s);

        assert_int_equal(store_query_hotlines(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES, &res), 0);
        assert_true(res.lines.evictions > 0 && res.lines.off_evictions > 0);
        check_entry_bound(&res.lines, truth, 0, &exact, &short_of);
        store_hotlines_result_done(&res);
        assert_int_equal(store_query_hotlines(snap, NS_PER_EPOCH, SIZE_MAX, STORE_PID_ANY, HOTLINES_ALL_LINES, &res), 0);
        assert_int_equal(res.iv.epochs, 1);
        check_entry_bound(&res.lines, truth, BOUND_EPOCHS - 1, &exact, &short_of);
        store_hotlines_result_done(&res);

        printf("entry records bound: %u exact entries, %u short of the truth, each within its error\n", exact,
               short_of);
        assert_true(exact > 0);
        assert_true(short_of > 0);
}

static void test_offset_evictions(void **state) {
        /* One line, more distinct (offset, pc) than entries: evictions = extra entries. */
        struct hotlines *h = hotlines_new(4, 8, 64);
        struct hotlines_access a = { .pid = 1, .cpu = 0 };

        for (unsigned i = 0; i < 64; i++) {
                a.addr = 0x1000 + (i % 64);
                a.pc = 0x400000 + 4 * i;
                hotlines_add(h, &a);
        }
        assert_int_equal(h->n, 1);
        assert_int_equal(h->off_evictions, 64 - 8);
        assert_int_equal(h->line[0].noffs, 8);
        assert_null(hotlines_new(4, 8, 48));    /* line size must be a power of two */
        hotlines_free(h);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify_direct),
                cmocka_unit_test(test_issue_lines),
                cmocka_unit_test(test_scenarios),
                cmocka_unit_test(test_by_pa),
                cmocka_unit_test(test_offset_evictions),
                cmocka_unit_test(test_records_bound),
                cmocka_unit_test(test_entry_records_bound),
        };

        if (tu_quick(argc, argv))
                nrecords /= 4;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
