/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The collector never waits on the readers' ELF cache (daemon/symbolizer.h).
 *
 * A reader thread takes the cache's lock, as a pprof request does for its
 * whole build, and keeps it while it looks PCs up in each snapshot the
 * writer publishes. Meanwhile the writer replays a generator perf.data
 * the way the collector does: each mapping into the symbolizer, each
 * record into the store, and at each epoch end (many: the epochs are
 * microseconds of the file's time) store_epoch_end() and
 * symbolizer_publish(), as daemon/collector.c's epoch_end(). The reader
 * lets go only when the writer says it finished, or after a deadlock guard
 * (GUARD_SEC); the test asserts the writer finished and had closed every
 * epoch while the reader still held the lock, and that what it published
 * names the generator's hottest PC as its truth file does.
 *
 * Before the split, the collector added mappings under the lock a profile
 * held: such a writer blocks on its first mapping, the reader sees it
 * unfinished at the guard, and the test fails (checked by taking the
 * cache lock in epoch_end() below).
 *
 * /metrics never waits on a profile build either: a reader holds the cache
 * lock and keeps loading ELF files (a cache of one file, two processes
 * mapping two paths of the generator's ELF: each lookup evicts the other
 * and loads again) while this thread reads symbolizer_stats() over and
 * over. Every read must return while the lock is held, and see the loads
 * the reader counted itself. When symbolizer_stats() took the cache lock,
 * the first read blocked until the reader gave up at the guard, and the
 * test failed (checked).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector.h"
#include "replay-clock.h"
#include "macro.h"
#include "spe-replay.h"
#include "store.h"
#include "strbuf.h"
#include "test-files.h"
#include "symbolizer.h"

/* How long the reader holds the lock at most if the writer never finishes: a deadlock guard, not a measure. */
#define GUARD_SEC       30
/* Epochs of the file's time: short, so the replay closes many. */
#define EPOCH_NS        UINT64_C(2000)
#define RECORDS         "4000"

static const char *spegen_path;
static char tmpdir[] = "/tmp/test-symbolizer-wait-XXXXXX";

struct shared {
        struct symbolizer sym;
        struct store *store;
        struct replay_clock clock;

        pthread_mutex_t lock;           /* guards what follows */
        pthread_cond_t cond;
        bool held;                      /* the reader holds the cache lock */
        bool writer_done;
        uint64_t epochs;                /* epoch_end() calls, counted here */
        uint64_t mappings;              /* mapping callbacks, counted here */

        /* What the reader saw when it let go of the cache lock. */
        bool seen_done;
        uint64_t seen_epochs;
        uint64_t lookups;               /* lookups it made while holding it */
        uint32_t hot_pid;
        uint64_t hot_pc;
};

static void epoch_end(void *userdata, uint64_t end_ns) {
        struct shared *x = userdata;

        /* What daemon/collector.c's epoch_end() does. */
        store_epoch_end(x->store, end_ns);
        symbolizer_publish(&x->sym);
        pthread_mutex_lock(&x->lock);
        x->epochs++;
        pthread_mutex_unlock(&x->lock);
}

static void on_records(void *userdata, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                       size_t n) {
        struct shared *x = userdata;

        for (size_t i = 0; i < n; i++) {
                replay_clock_record(&x->clock, &recs[i]);
                store_add(x->store, &recs[i], pids[i], tids[i]);
        }
}

static void on_mapping(void *userdata, const struct source_mapping *m) {
        struct shared *x = userdata;

        symbolizer_mapping(&x->sym, m);
        pthread_mutex_lock(&x->lock);
        x->mappings++;
        pthread_mutex_unlock(&x->lock);
}

static void on_clock(void *userdata, const struct source_clock *c) {
        struct shared *x = userdata;

        replay_clock_file(&x->clock, c);
}

static void *reader(void *userdata) {
        struct shared *x = userdata;
        struct timespec guard;

        clock_gettime(CLOCK_REALTIME, &guard);
        guard.tv_sec += GUARD_SEC;

        pthread_mutex_lock(&x->sym.cache_lock);
        pthread_mutex_lock(&x->lock);
        x->held = true;
        pthread_cond_broadcast(&x->cond);
        while (!x->writer_done) {
                struct symbols_snapshot *snap;
                struct symbols_result r;

                pthread_mutex_unlock(&x->lock);
                /* A profile build's work: lookups in the newest snapshot, the cache lock held throughout. */
                snap = symbolizer_snapshot(&x->sym);
                (void) symbols_cache_lookup(x->sym.cache, snap, x->hot_pid, x->hot_pc, &r);
                symbols_snapshot_unref(snap);
                pthread_mutex_lock(&x->lock);
                x->lookups++;
                if (!x->writer_done) {
                        struct timespec step;

                        clock_gettime(CLOCK_REALTIME, &step);
                        step.tv_nsec += 1000000;
                        if (step.tv_nsec >= 1000000000) {
                                step.tv_sec++;
                                step.tv_nsec -= 1000000000;
                        }
                        if (step.tv_sec > guard.tv_sec ||
                            (step.tv_sec == guard.tv_sec && step.tv_nsec >= guard.tv_nsec)) {
                                if (pthread_cond_timedwait(&x->cond, &x->lock, &guard) == ETIMEDOUT)
                                        break;
                        } else
                                (void) pthread_cond_timedwait(&x->cond, &x->lock, &step);
                }
        }
        x->seen_done = x->writer_done;
        x->seen_epochs = x->epochs;
        pthread_mutex_unlock(&x->lock);
        pthread_mutex_unlock(&x->sym.cache_lock);
        return NULL;
}

/* The generator's PREFIX.data, .elf and .truth.txt in tmpdir; the truth summary's text. */
static char *spegen_run(const char *prefix, struct strbuf *data, struct strbuf *truth_path) {
        char *truth;
        pid_t child;
        int status;

        strbuf_printf(data, "%s/%s.data", tmpdir, prefix);
        strbuf_printf(truth_path, "%s/%s.truth.txt", tmpdir, prefix);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                execl(spegen_path, spegen_path, "--out-dir", tmpdir, "--prefix", prefix, "--records", RECORDS,
                      "--scenario", "all", "--ts", "--no-bin", "--no-truth", (char *) NULL);
                _exit(127);
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        truth = test_read_text(truth_path->buf);
        assert_non_null(truth);
        return truth;
}

static void test_writer_never_waits(void **state) {
        struct strbuf data = STRBUF_INIT, truth_path = STRBUF_INIT;
        _cleanup_free_ char *truth = NULL, *hot_pc = NULL, *hot_sym = NULL, *pid = NULL;
        struct shared x = {};
        struct spe_replay *r = NULL;
        struct store_options so;
        struct symbols_result res;
        pthread_t t;

        truth = spegen_run("w", &data, &truth_path);
        hot_pc = test_truth_get(truth, "hottest.pc");
        hot_sym = test_truth_get(truth, "hottest.symbol");
        pid = test_truth_get(truth, "pid");
        assert_non_null(hot_pc);
        assert_non_null(hot_sym);
        assert_non_null(pid);

        symbolizer_init(&x.sym, NULL);
        store_options_init(&so);
        so.epoch_ns = EPOCH_NS;
        so.epochs = 4;
        so.hotpcs = 64;
        so.hotlines = 16;
        assert_int_equal(store_new(&so, 0, &x.store), 0);
        x.clock = (struct replay_clock) { .store = x.store, .epoch_ns = EPOCH_NS, .epoch_end = epoch_end,
                                          .userdata = &x };
        pthread_mutex_init(&x.lock, NULL);
        pthread_cond_init(&x.cond, NULL);
        x.hot_pid = (uint32_t) strtoul(pid, NULL, 10);
        x.hot_pc = strtoull(hot_pc, NULL, 16);

        /* The reader holds the cache lock before the writer starts. */
        assert_int_equal(pthread_create(&t, NULL, reader, &x), 0);
        pthread_mutex_lock(&x.lock);
        while (!x.held)
                pthread_cond_wait(&x.cond, &x.lock);
        pthread_mutex_unlock(&x.lock);

        assert_int_equal(spe_replay_path(data.buf,
                                         &(struct source_sink) { .userdata = &x, .records = on_records,
                                                              .mapping = on_mapping, .clock = on_clock },
                                         &r),
                         0);
        replay_clock_finish(&x.clock);
        spe_replay_free(r);

        pthread_mutex_lock(&x.lock);
        x.writer_done = true;
        pthread_cond_broadcast(&x.cond);
        pthread_mutex_unlock(&x.lock);
        assert_int_equal(pthread_join(t, NULL), 0);

        printf("writer: %" PRIu64 " epochs, %" PRIu64 " mappings; reader: %" PRIu64 " lookups while holding the lock\n",
               x.epochs, x.mappings, x.lookups);
        /* The writer finished, every epoch closed, while the reader held the cache lock. */
        assert_true(x.seen_done);
        assert_true(x.epochs > 10);
        assert_int_equal(x.seen_epochs, x.epochs);
        /*
         * The store closed as many epochs as we counted: its publication
         * counter is store_new()'s, one per epoch end, and the clock that
         * replay_clock_finish() sets.
         */
        {
                _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(x.store);
                assert_int_equal(store_snapshot_seq(snap), x.epochs + 2);
        }

        /* What it published: every mapping, and the hottest PC named as the generator says. */
        {
                _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *maps = symbolizer_snapshot(&x.sym);
                assert_int_equal(x.mappings, 2);
                assert_int_equal(symbols_snapshot_mappings(maps), x.mappings);
                pthread_mutex_lock(&x.sym.cache_lock);
                assert_int_equal(symbols_cache_lookup(x.sym.cache, maps, x.hot_pid, x.hot_pc, &res), 0);
                assert_non_null(res.function);
                assert_string_equal(res.function, hot_sym);
                pthread_mutex_unlock(&x.sym.cache_lock);
        }

        pthread_cond_destroy(&x.cond);
        pthread_mutex_destroy(&x.lock);
        store_free(x.store);
        symbolizer_done(&x.sym);
        unlink(data.buf);
        unlink(truth_path.buf);
        strbuf_done(&data);
        strbuf_done(&truth_path);
}

/* Stats reads made while the reader holds the cache lock, at least. */
#define STATS_READS     1000
/* Lookups the reader makes before the stats are read, then while they are: loads the reads must see. */
#define LOOKUPS_FIRST   2
#define LOOKUPS_MORE    50

struct stats_shared {
        struct symbolizer sym;
        uint32_t pid[2];                /* the generator's process, and a second one mapping the ELF's other path */
        uint64_t pc;                    /* the generator's hottest PC, in both */
        const char *function;           /* its name by the truth file */

        pthread_mutex_t lock;           /* guards what follows */
        pthread_cond_t cond;
        bool held;                      /* the reader holds the cache lock, LOOKUPS_FIRST lookups made */
        bool reads_done;                /* this thread read the stats STATS_READS times */
        bool seen_reads_done;           /* the reader let go because of that, not at the guard */
        bool reader_gone;               /* it let go */
        uint64_t lookups;               /* the reader's lookups, counted by it */
        uint64_t wrong;                 /* lookups that did not name the hottest PC's function */
        struct source_mapping text;     /* the generator's text mapping, copied from the replay */
        char text_path[PATH_MAX];
};

static void on_records_ignored(void *userdata, const struct spe_record *recs, const uint32_t *pids,
                               const uint32_t *tids, size_t n) {
}

/* The replay's mappings into the symbolizer; the generator's text mapping also kept, for the second process. */
static void on_stats_mapping(void *userdata, const struct source_mapping *m) {
        struct stats_shared *x = userdata;

        symbolizer_mapping(&x->sym, m);
        if (m->pid == x->pid[0] && x->pc >= m->start && x->pc - m->start < m->len) {
                assert_true(strlen(m->filename) < sizeof(x->text_path));
                strcpy(x->text_path, m->filename);
                x->text = *m;
                x->text.filename = x->text_path;
                x->text.build_id = NULL;
                x->text.build_id_len = 0;
        }
}

static void *stats_reader(void *userdata) {
        struct stats_shared *x = userdata;
        struct timespec guard;
        bool done = false;

        clock_gettime(CLOCK_REALTIME, &guard);
        guard.tv_sec += GUARD_SEC;

        pthread_mutex_lock(&x->sym.cache_lock);
        for (uint64_t i = 0; !done; i++) {
                _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *snap = symbolizer_snapshot(&x->sym);
                struct symbols_result r;
                struct timespec now;
                bool named;

                /* A profile build's work: each lookup loads the ELF file the previous one evicted. */
                named = symbols_cache_lookup(x->sym.cache, snap, x->pid[i % 2], x->pc, &r) == 0 && r.function &&
                        streq(r.function, x->function);
                clock_gettime(CLOCK_REALTIME, &now);
                pthread_mutex_lock(&x->lock);
                x->lookups++;
                x->wrong += !named;
                if (x->lookups == LOOKUPS_FIRST) {
                        x->held = true;
                        pthread_cond_broadcast(&x->cond);
                }
                x->seen_reads_done = x->reads_done;
                done = x->reads_done || now.tv_sec > guard.tv_sec ||
                       (now.tv_sec == guard.tv_sec && now.tv_nsec >= guard.tv_nsec);
                pthread_mutex_unlock(&x->lock);
        }
        pthread_mutex_lock(&x->lock);
        x->reader_gone = true;
        pthread_mutex_unlock(&x->lock);
        pthread_mutex_unlock(&x->sym.cache_lock);
        return NULL;
}

static void test_stats_never_wait(void **state) {
        struct strbuf data = STRBUF_INIT, truth_path = STRBUF_INIT, other = STRBUF_INIT;
        _cleanup_free_ char *truth = NULL, *hot_pc = NULL, *pid = NULL, *hot_sym = NULL;
        struct stats_shared x = {};
        struct spe_replay *r = NULL;
        struct symbols_stats st, prev = {};
        uint64_t reads = 0;
        pthread_t t;

        truth = spegen_run("s", &data, &truth_path);
        hot_pc = test_truth_get(truth, "hottest.pc");
        hot_sym = test_truth_get(truth, "hottest.symbol");
        pid = test_truth_get(truth, "pid");
        assert_non_null(hot_pc);
        assert_non_null(hot_sym);
        assert_non_null(pid);
        x.pid[0] = (uint32_t) strtoul(pid, NULL, 10);
        x.pid[1] = x.pid[0] + 1;
        x.pc = strtoull(hot_pc, NULL, 16);
        x.function = hot_sym;

        /* One ELF file at a time, and no debug roots: each lookup of the other process loads a file. */
        symbolizer_init(&x.sym, &(struct symbols_limits) { .max_files = 1, .debug_dirs = "" });
        pthread_mutex_init(&x.lock, NULL);
        pthread_cond_init(&x.cond, NULL);
        assert_int_equal(spe_replay_path(data.buf,
                                         &(struct source_sink) { .userdata = &x, .records = on_records_ignored,
                                                                 .mapping = on_stats_mapping },
                                         &r),
                         0);
        spe_replay_free(r);
        /* The second process maps the same ELF by another path (a symlink): another cache entry. */
        assert_non_null(x.text.filename);
        strbuf_printf(&other, "%s/s-other.elf", tmpdir);
        assert_int_equal(symlink(x.text_path, other.buf), 0);
        x.text.pid = x.pid[1];
        x.text.filename = other.buf;
        symbolizer_mapping(&x.sym, &x.text);
        symbolizer_publish(&x.sym);
        symbolizer_stats(&x.sym, &st);
        assert_int_equal(st.files_loaded, 0);

        assert_int_equal(pthread_create(&t, NULL, stats_reader, &x), 0);
        pthread_mutex_lock(&x.lock);
        while (!x.held)
                pthread_cond_wait(&x.cond, &x.lock);
        pthread_mutex_unlock(&x.lock);

        /*
         * The reader holds the cache lock, loading files: /metrics' reads of
         * the counters go on meanwhile, until the reader has made
         * LOOKUPS_MORE more lookups (or let go at the guard), and a last
         * read must see those loads.
         */
        for (;; reads++) {
                uint64_t lookups;
                bool gone;

                pthread_mutex_lock(&x.lock);
                lookups = x.lookups;
                gone = x.reader_gone;
                pthread_mutex_unlock(&x.lock);

                symbolizer_stats(&x.sym, &st);
                assert_true(st.files_loaded >= lookups);
                assert_true(st.files_loaded >= prev.files_loaded);
                assert_true(st.file_evictions >= prev.file_evictions);
                assert_int_equal(st.file_errors, 0);
                prev = st;
                if (gone || (reads >= STATS_READS && lookups >= LOOKUPS_FIRST + LOOKUPS_MORE))
                        break;
        }
        pthread_mutex_lock(&x.lock);
        x.reads_done = true;
        pthread_mutex_unlock(&x.lock);
        assert_int_equal(pthread_join(t, NULL), 0);

        symbolizer_stats(&x.sym, &st);
        printf("reader: %" PRIu64 " lookups holding the cache lock; %" PRIu64 " stats reads meanwhile, the last "
               "saw %" PRIu64 " files loaded\n",
               x.lookups, reads, prev.files_loaded);
        /* Every read returned while the reader held the lock; it let go because they were done. */
        assert_true(x.seen_reads_done);
        assert_true(prev.files_loaded >= LOOKUPS_FIRST + LOOKUPS_MORE);
        assert_int_equal(x.wrong, 0);
        /* Each lookup loaded a file, each but the first evicted one: the reader's count, not the cache's. */
        assert_int_equal(st.files_loaded, x.lookups);
        assert_int_equal(st.file_evictions, x.lookups - 1);
        assert_int_equal(st.file_errors, 0);
        assert_true(prev.files_loaded <= st.files_loaded);

        pthread_cond_destroy(&x.cond);
        pthread_mutex_destroy(&x.lock);
        symbolizer_done(&x.sym);
        unlink(other.buf);
        unlink(data.buf);
        unlink(truth_path.buf);
        strbuf_done(&other);
        strbuf_done(&data);
        strbuf_done(&truth_path);
}

/*
 * The daemon's own collector thread with a replay source on its loop: the
 * test holds the readers' cache lock, as a pprof request symbolizing a large
 * ELF file would, from before the collector starts until the replay has
 * ended. The collector must read the whole file meanwhile (mappings added,
 * epochs closed and published, every record in the store), which it cannot
 * if anything on its thread waits for that lock: then the replay never ends
 * and the test fails at its guard. After the lock is let go, a profile of
 * the window names the generator's hottest function, so the mappings the
 * collector published while the lock was held are the readers'.
 */
static void test_collector_never_waits(void **state) {
        struct strbuf data = STRBUF_INIT, truth_path = STRBUF_INIT, gz = STRBUF_INIT;
        _cleanup_free_ char *truth = NULL, *records = NULL, *hot_sym = NULL, *hot_pc = NULL, *pid = NULL;
        struct collector_options opts = {
                .interval_usec = 20 * USEC_PER_MSEC,
                .pmu_enable = false,
        };
        struct replay_args args = {};
        struct collector *c = NULL;
        struct symbolizer *z;
        struct store_snapshot *snap;
        struct pollfd p;
        char fn[256];
        int fd, n;

        truth = spegen_run("c", &data, &truth_path);
        records = test_truth_get(truth, "records");
        hot_sym = test_truth_get(truth, "hottest.symbol");
        hot_pc = test_truth_get(truth, "hottest.pc");
        pid = test_truth_get(truth, "pid");
        assert_non_null(records);
        assert_non_null(hot_sym);
        assert_non_null(hot_pc);
        assert_non_null(pid);

        store_options_init(&opts.store);
        opts.store.epoch_ns = EPOCH_NS;
        opts.store.epochs = 4;
        args.path = data.buf;
        assert_int_equal(replay_open(&args, &fd), 0);
        opts.replay = &args;
        opts.replay_fd = fd;

        /* The symbolizer lives as long as the collector: lock it from the collector's first instant. */
        assert_int_equal(collector_start(&opts, &c), 0);
        z = collector_symbolizer(c);
        pthread_mutex_lock(&z->cache_lock);
        p = (struct pollfd) { .fd = collector_replay_fd(c), .events = POLLIN };
        n = poll(&p, 1, GUARD_SEC * 1000);
        snap = collector_snapshot(c);
        pthread_mutex_unlock(&z->cache_lock);

        assert_int_equal(n, 1);
        assert_int_equal(collector_replay_result(c, fn, sizeof(fn)), 0);
        /* Every record the generator wrote, counted by the store while the lock was held. */
        assert_int_equal(store_snapshot_cumulative(snap)->records, strtoull(records, NULL, 10));
        /* Many epochs closed (each one publishing the mappings) while the lock was held. */
        assert_true(store_snapshot_seq(snap) > 10);
        store_snapshot_unref(snap);

        assert_true(collector_symbol(c, (uint32_t) strtoul(pid, NULL, 10), strtoull(hot_pc, NULL, 16), fn,
                                     sizeof(fn)));
        assert_string_equal(fn, hot_sym);
        assert_int_equal(collector_profile(c, STORE_WINDOW_ALL, &gz), 0);
        assert_true(gz.len > 0);

        collector_stop(c);
        safe_close(fd);
        strbuf_done(&gz);
        strbuf_done(&data);
        strbuf_done(&truth_path);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_writer_never_waits),
                cmocka_unit_test(test_stats_never_wait),
                cmocka_unit_test(test_collector_never_waits),
        };
        int r;

        if (argc != 2) {
                fprintf(stderr, "usage: %s ARMPROFD-SPEGEN\n", argv[0]);
                return 2;
        }
        spegen_path = argv[1];
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        r = cmocka_run_group_tests(tests, NULL, NULL);
        test_rm_tmpdir(tmpdir);
        return r;
}
