/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Store throughput on synthetic records built in memory. Prints records/s
 * for store_add alone and with an epoch end every N records, on a small
 * hot set, on a skewed (Zipf) stream whose lines mostly miss the table, and
 * on an all-distinct one (every record evicts in both tables), and the ratio to a baseline measured in the same run: a loop
 * that reads the same records and sums fields (memory bandwidth only). Each row also says how often each table
 * evicted (the costly path), counted by the store over the run.
 * Then store_add_stack() on CPU samples with call stacks (32 frames on
 * average, Zipf over 2 k stacks and 300 tasks, as a busy host's epoch
 * holds): the store's part of a sampler's cost per sample.
 * Figures only, no assertions on time.
 *
 * Usage: bench-store [records]   (default 20 M)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "store.h"
#include "parse-util.h"
#include "store-test-util.h"

#define POOL            (1U << 16)      /* records in the pool, cycled */

static double now_s(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static struct spe_record *make_pool(bool distinct, size_t npcs, size_t nlines, uint64_t seed) {
        struct spe_record *p = xmalloc(POOL * sizeof(*p));
        struct tu_zipf zpc, zline;
        uint64_t st = seed;

        tu_zipf_init(&zpc, MAX(npcs, (size_t) 1), 1.1);
        tu_zipf_init(&zline, MAX(nlines, (size_t) 1), 1.0);
        for (size_t i = 0; i < POOL; i++) {
                uint64_t pc = 0x400000 + 4 * (distinct ? i : tu_zipf_next(&zpc, &st));
                uint64_t va = 0x10000000 + 64 * (distinct ? i : tu_zipf_next(&zline, &st)) + 8 * (tu_rand(&st) % 8);
                uint32_t cpu = (uint32_t) (tu_rand(&st) % 64);
                unsigned k = (unsigned) (tu_rand(&st) % 10);

                if (k < 5)
                        p[i] = tu_rec_load(pc, va, cpu, (enum spe_data_src) (tu_rand(&st) % _SPE_DATA_SRC_MAX),
                                           (uint16_t) (1 + tu_rand(&st) % 600));
                else if (k < 7)
                        p[i] = tu_rec_store(pc, va, cpu, (uint16_t) (1 + tu_rand(&st) % 100));
                else if (k < 9)
                        p[i] = tu_rec_branch(pc, cpu, tu_rand(&st) % 16 == 0, (uint16_t) (1 + tu_rand(&st) % 30));
                else {
                        p[i] = tu_rec_base(pc, cpu);
                        p[i].op_class = SPE_OP_CLASS_OTHER;
                }
        }
        tu_zipf_done(&zpc);
        tu_zipf_done(&zline);
        return p;
}

static uint64_t sink;

static double run_baseline(const struct spe_record *p, size_t n) {
        double t0 = now_s();
        uint64_t acc = 0;

        for (size_t i = 0; i < n; i++) {
                const struct spe_record *r = &p[i & (POOL - 1)];
                acc += r->pc.addr ^ r->va ^ r->lat_total ^ r->source;
        }
        sink += acc;
        return (double) n / (now_s() - t0);
}

static double run(const struct spe_record *p, size_t n, size_t epoch_every, bool distinct, uint32_t pids,
                  struct store_totals *ret_totals) {
        struct store_options o;
        struct store *s = NULL;
        struct store_snapshot *snap;
        uint64_t ts = 0;
        double t0, rate;

        store_options_init(&o);
        if (store_new(&o, 0, &s) < 0)
                abort();
        t0 = now_s();
        for (size_t i = 0; i < n; i++) {
                const struct spe_record *r = &p[i & (POOL - 1)];

                if (distinct) {
                        /* Fresh keys beyond the pool too: offset by the pool round. */
                        struct spe_record x = *r;
                        x.pc.addr += (uint64_t) (i / POOL) * POOL * 4;
                        x.va += (uint64_t) (i / POOL) * POOL * 64;
                        store_add(s, &x, 100, 1);
                } else
                        store_add(s, r, 100 + (uint32_t) i % pids, (uint32_t) (i & 15));
                if (epoch_every && (i + 1) % epoch_every == 0) {
                        ts += STORE_EPOCH_NS_DEFAULT;
                        store_epoch_end(s, ts);
                }
        }
        rate = (double) n / (now_s() - t0);
        /* Untimed: close the last epoch for its eviction counts. */
        store_epoch_end(s, ts + STORE_EPOCH_NS_DEFAULT);
        snap = store_snapshot_get(s);
        *ret_totals = *store_snapshot_cumulative(snap);
        store_snapshot_unref(snap);
        store_free(s);
        return rate;
}

#define STACK_POOL      4096U           /* samples in the pool, cycled */
#define STACK_DEPTH_MAX 64U

struct stack_pool {
        struct store_stack_sample ss[STACK_POOL];
        uint64_t frames[STACK_POOL][STACK_DEPTH_MAX];
        char comm[300][16];
};

static struct stack_pool *make_stacks(uint64_t seed) {
        struct stack_pool *p = xcalloc(1, sizeof(*p));
        struct tu_zipf zs, zt;
        uint64_t st = seed;

        tu_zipf_init(&zs, 2000, 1.1);
        tu_zipf_init(&zt, 300, 1.0);
        for (size_t i = 0; i < ELEMENTSOF(p->comm); i++)
                snprintf(p->comm[i], sizeof(p->comm[i]), "task-%zu", i);
        for (size_t i = 0; i < STACK_POOL; i++) {
                size_t k = tu_zipf_next(&zs, &st), t = tu_zipf_next(&zt, &st);
                uint64_t ks = k + 1;
                /* Stack k: its depth and frames follow from k, so a stack drawn twice is equal. */
                size_t depth = 1 + tu_rand(&ks) % (2 * 32 - 1);

                for (size_t j = 0; j < depth; j++)
                        p->frames[i][j] = 0x400000 + 0x40 * (tu_rand(&ks) % 5000);
                p->ss[i] = (struct store_stack_sample) {
                        .pid = 1000 + (uint32_t) t / 4,
                        .tid = 1000 + (uint32_t) t,
                        .cpu = (uint32_t) (i % 64),
                        .comm = p->comm[t / 4],
                        .thread = p->comm[t],
                        .cgroup = "/system.slice/bench.service",
                        .service = "bench.service",
                        .frames = p->frames[i],
                        .n_frames = depth,
                        .weight = 52631578,
                };
        }
        tu_zipf_done(&zs);
        tu_zipf_done(&zt);
        return p;
}

static double run_stacks(const struct stack_pool *p, size_t n, size_t epoch_every, uint64_t *ret_dropped) {
        struct store_options o;
        struct store *s = NULL;
        struct store_snapshot *snap;
        uint64_t ts = 0;
        double t0, rate;

        store_options_init(&o);
        if (store_new(&o, 0, &s) < 0)
                abort();
        t0 = now_s();
        for (size_t i = 0; i < n; i++) {
                store_add_stack(s, &p->ss[i & (STACK_POOL - 1)]);
                if (epoch_every && (i + 1) % epoch_every == 0) {
                        ts += STORE_EPOCH_NS_DEFAULT;
                        store_epoch_end(s, ts);
                }
        }
        rate = (double) n / (now_s() - t0);
        store_epoch_end(s, ts + STORE_EPOCH_NS_DEFAULT);
        snap = store_snapshot_get(s);
        *ret_dropped = store_snapshot_cumulative(snap)->evict_stacks;
        store_snapshot_unref(snap);
        store_free(s);
        return rate;
}

int main(int argc, char **argv) {
        size_t n = 20000000;
        uint64_t v;
        struct spe_record *zipf, *dist, *hot;
        double base;

        if (argc > 1 && safe_atou64(argv[1], &v) == 0 && v > 0)
                n = (size_t) v;
        /* Zipf over 20 k PCs and 200 k lines: most lines miss the 256-line table. */
        zipf = make_pool(false, 20000, 200000, 1);
        /* A small hot set (1 k PCs, 200 lines, one process): the hot-PC and line tables hold it; the profile
         * table's keys (pc, tid, cpu, op, source) are still too many for it, and the 8 offsets a line keeps
         * churn under 1 k PCs. */
        hot = make_pool(false, 1000, 200, 3);
        dist = make_pool(true, 0, 0, 2);

        base = run_baseline(zipf, n);
        printf("baseline (read records only)          %8.1f M records/s\n", base / 1e6);
        struct { const char *name; struct spe_record *p; size_t every; bool distinct; uint32_t pids; } cases[] = {
                { "hot set, store_add only",            hot, 0, false, 1 },
                { "zipf, store_add only",               zipf, 0, false, 4 },
                { "zipf, epoch end every 1 M",          zipf, 1000000, false, 4 },
                { "zipf, epoch end every 100 k",        zipf, 100000, false, 4 },
                { "all distinct, store_add only",       dist, 0, true, 1 },
                { "all distinct, epoch end every 1 M",  dist, 1000000, true, 1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct store_totals t;
                double r = run(cases[i].p, n, cases[i].every, cases[i].distinct, cases[i].pids, &t);
                double per = 1000.0 / (double) MAX(t.records, (uint64_t) 1);

                printf("%-38s %8.1f M records/s (%.2f x baseline); evictions per 1,000 records: "
                       "hot PCs %.0f, profile table %.0f, lines %.0f, offsets %.0f\n",
                       cases[i].name, r / 1e6, r / base, (double) t.evictions[STORE_TABLE_HOTPCS] * per,
                       (double) t.evictions[STORE_TABLE_SAMPLES] * per, (double) t.evictions[STORE_TABLE_HOTLINES] * per,
                       (double) t.evictions[STORE_TABLE_OFFSETS] * per);
        }
        free(zipf);
        free(hot);
        free(dist);

        /* At 19 Hz on 64 CPUs an epoch of 10 s holds 12160 samples: epochs of 10 k and 100 k. */
        struct stack_pool *sp = make_stacks(5);
        const size_t stack_every[] = { 10000, 100000 };
        for (size_t i = 0; i < ELEMENTSOF(stack_every); i++) {
                uint64_t dropped;
                double r = run_stacks(sp, n / 10, stack_every[i], &dropped);

                printf("stacks, epoch end every %-6zu          %8.2f M samples/s (%.1f%% dropped: full tables)\n",
                       stack_every[i], r / 1e6, 100.0 * (double) dropped / (double) (n / 10));
        }
        free(sp);
        return sink == 42;      /* keep the baseline loop alive */
}
