/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The replay as a source on the seam (spe-replay-source.c) in a real
 * sd-event loop: over a FIFO fed a chunk at a time by a writer thread that
 * the loop's own timer paces (so the loop must keep serving its timer while
 * the replay waits for input), and over a regular file with a timer that
 * each batch of records makes due at once (so the loop must dispatch it
 * between the replay's steps, which it only can when a step returns).
 * The records, with their pid and tid, the mappings and the stream stats
 * must equal spe_replay_run()'s on the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "spe-replay-source.h"
#include "strbuf.h"

struct capture {
        struct strbuf out;
        size_t records;
        sd_event_source *timer; /* made due at once by each batch, when set */
};

static void cap_records(void *userdata, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                        size_t n) {
        struct capture *c = userdata;

        for (size_t i = 0; i < n; i++) {
                const struct spe_record *r = &recs[i];

                strbuf_printf(&c->out, "%" PRIu32 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %x %u %u %"
                              PRIu32 " %" PRIu32 "\n", r->cpu, r->pc.addr, r->va, r->timestamp, r->events,
                              r->present, r->op_class, r->lat_total, pids[i], tids[i]);
        }
        c->records += n;
        if (c->timer) {
                assert_int_equal(sd_event_source_set_time_relative(c->timer, 0), 0);
                assert_int_equal(sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT), 0);
        }
}

static void cap_mapping(void *userdata, const struct source_mapping *m) {
        strbuf_printf(&((struct capture *) userdata)->out, "MAP %" PRIu32 " %" PRIx64 " %s %zu\n", m->pid,
                      m->start, m->filename, m->build_id_len);
}

static void cap_stats(struct strbuf *out, const struct spe_stream_stats *c) {
        strbuf_printf(out, "CPU %" PRIu32 " %" PRIx64 " %" PRIu64 " %" PRIu64 " aux %" PRIu64 " disc %" PRIu64
                      " lost %" PRIu64 " bad %" PRIu64 " flushed %" PRIu64 "\n", c->cpu, c->midr, c->records,
                      c->bytes, c->aux_records, c->discontinuities, c->lost, c->decoder.bad_header,
                      c->decoder.flushed_bytes);
}

/* The reference: spe_replay_run() over the file. */
static char *reference(const char *path, bool raw) {
        struct capture c = {};
        struct source_sink sink = { .userdata = &c, .records = cap_records, .mapping = cap_mapping };
        struct spe_replay *r;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(spe_replay_run(&(struct spe_replay_input) { .fd = fd, .cancel_fd = -1, .name = "ref",
                                                                     .raw = raw, .raw_midr = 0x410fd0c0 },
                                        &sink, NULL, &r), 0);
        for (size_t i = 0; i < spe_replay_n_cpus(r); i++) {
                struct spe_stream_stats st;

                spe_replay_stream_stats(r, i, &st);
                cap_stats(&c.out, &st);
        }
        strbuf_printf(&c.out, "period %" PRIu64 "\n", spe_replay_sample_period(r));
        spe_replay_free(r);
        close(fd);
        return strbuf_steal(&c.out, NULL);
}

/* ---- the FIFO, fed by a thread the loop's timer paces ---------------------- */

#define CHUNKS 40

struct feeder {
        const char *fifo;
        const uint8_t *data;
        size_t size;
        sem_t go;               /* one post per chunk, from the timer */
        size_t chunks_written;
};

static void *feed(void *userdata) {
        struct feeder *f = userdata;
        size_t off = 0, chunk = f->size / CHUNKS + 1;
        int fd;

        fd = open(f->fifo, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        while (off < f->size) {
                /* An odd cut, so that records and payloads straddle chunks. */
                size_t n = MIN(chunk + (f->chunks_written % 3) * 7, f->size - off);

                while (sem_wait(&f->go) < 0 && errno == EINTR)
                        ;
                for (size_t done = 0; done < n;) {
                        ssize_t w = write(fd, f->data + off + done, n - done);

                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                goto out;
                        done += (size_t) w;
                }
                off += n;
                __atomic_add_fetch(&f->chunks_written, 1, __ATOMIC_RELAXED);
        }
out:
        close(fd);
        return NULL;
}

struct ticker {
        struct feeder *feeder;          /* FIFO: each tick lets the writer send one chunk */
        uint64_t rearm_usec;            /* FIFO: the tick's period; 0: the records re-arm it */
        struct source *source;
        struct capture *capture;
        size_t fires;
        size_t fires_while_running;     /* the source had begun and not ended */
        size_t posts;                   /* chunks the ticks released */
        size_t last_records;
        bool records_grew;              /* between every two ticks while running, records came */
};

static int on_tick(sd_event_source *es, uint64_t usec, void *userdata) {
        struct ticker *t = userdata;
        struct source_status st;
        bool st_running;

        source_status(t->source, &st);
        st_running = st.state == SOURCE_RUNNING;
        if (st_running) {
                if (t->fires_while_running > 0 && t->capture->records <= t->last_records)
                        t->records_grew = false;
                t->fires_while_running++;
        }
        t->last_records = t->capture->records;
        source_status_done(&st);
        t->fires++;
        /*
         * The first chunk is released by the first tick; every later one by
         * a tick of the running source.  A slow writer (a loaded machine, a
         * sanitizer) can leave the source starting for several ticks; those
         * release nothing, so the count below does not depend on timing.
         */
        if (t->feeder && (t->posts == 0 || st_running)) {
                t->posts++;
                sem_post(&t->feeder->go);
        }
        if (t->rearm_usec == 0)
                return 0;
        assert_int_equal(sd_event_source_set_time_relative(es, t->rearm_usec), 0);
        return sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
}

/* Run the loop until the source is done; returns its records, mappings and final stats. */
static char *run_source(int fd, bool raw, struct feeder *feeder, struct ticker *t) {
        struct capture c = {};
        struct source_sink sink = { .userdata = &c, .records = cap_records, .mapping = cap_mapping };
        struct source_status st;
        struct source *s;
        sd_event_source *timer;
        sd_event *e;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(spe_replay_source_new(&(struct spe_replay_input) { .fd = fd, .cancel_fd = -1,
                                                                            .name = "test", .raw = raw,
                                                                            .raw_midr = 0x410fd0c0 },
                                               &sink, NULL, &s), 0);
        source_status(s, &st);
        assert_int_equal(st.state, SOURCE_STARTING);
        assert_string_equal(st.kind, "replay");
        source_status_done(&st);
        assert_int_equal(source_start(s, e, NULL), 0);

        t->feeder = feeder;
        t->source = s;
        t->capture = &c;
        t->records_grew = true;
        assert_int_equal(sd_event_add_time_relative(e, &timer, CLOCK_MONOTONIC, 0, 1, on_tick, t), 0);
        assert_int_equal(sd_event_source_set_enabled(timer, SD_EVENT_ONESHOT), 0);
        if (t->rearm_usec == 0)
                c.timer = timer;
        for (;;) {
                assert_true(sd_event_run(e, UINT64_MAX) >= 0);
                source_status(s, &st);
                if (st.state == SOURCE_DONE || st.state == SOURCE_FAILED)
                        break;
                source_status_done(&st);
        }
        assert_int_equal(st.state, SOURCE_DONE);
        assert_string_equal(st.reason, "");
        for (size_t i = 0; i < st.n_cpus; i++)
                cap_stats(&c.out, &st.cpus[i]);
        strbuf_printf(&c.out, "period %" PRIu64 "\n", st.sample_period);
        source_status_done(&st);

        c.timer = NULL;
        /* Done stays done: draining again hands out nothing. */
        assert_int_equal(source_drain(s, 100), 0);
        sd_event_source_disable_unref(timer);
        source_free(s);
        sd_event_unref(e);
        return strbuf_steal(&c.out, NULL);
}

static char *generate(char *dir, const char *args) {
        const char *build = getenv("ARMPROFD_BUILD_DIR");
        _cleanup_free_ char *cmd = NULL;
        char *path = NULL;

        if (!build)
                return NULL;
        assert_non_null(mkdtemp(dir));
        assert_true(asprintf(&path, "%s/g.data", dir) > 0);
        assert_true(asprintf(&cmd, "%s/tests/spegen/armprofd-spegen --out-dir %s --prefix g %s > /dev/null",
                             build, dir, args) > 0);
        assert_int_equal(system(cmd), 0);
        return path;
}

static uint8_t *slurp(const char *path, size_t *ret_size) {
        struct strbuf sb = {};
        uint8_t buf[65536];
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                strbuf_append(&sb, buf, (size_t) n);
        close(fd);
        return (uint8_t *) strbuf_steal(&sb, ret_size);
}

static void fifo_case(const char *gen_args, const char *file, bool raw) {
        char dir[] = "/tmp/test-replay-source.XXXXXX";
        _cleanup_free_ char *path = NULL, *fifo = NULL, *want = NULL, *got = NULL, *input = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        struct feeder f = {};
        struct ticker t = { .rearm_usec = 1000 };
        pthread_t th;
        int fd;

        path = generate(dir, gen_args);
        if (!path)
                skip();
        if (file)
                assert_true(asprintf(&input, "%s/%s", dir, file) > 0);
        else
                input = strdup(path);
        want = reference(input, raw);
        data = slurp(input, &f.size);
        f.data = data;
        assert_true(asprintf(&fifo, "%s/fifo", dir) > 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        f.fifo = fifo;
        assert_int_equal(sem_init(&f.go, 0, 0), 0);
        /* As replay_open() opens it: not waiting for a writer. */
        fd = open(fifo, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        assert_true(fd >= 0);
        assert_int_equal(pthread_create(&th, NULL, feed, &f), 0);

        got = run_source(fd, raw, &f, &t);
        assert_int_equal(pthread_join(th, NULL), 0);
        if (!streq(want, got)) {
                fprintf(stderr, "spe_replay_run():\n%.1500s\nsource:\n%.1500s\n", want, got);
                fail_msg("the source's records differ from spe_replay_run()'s");
        }
        /* Every chunk waited for a tick: the loop served its timer while the replay waited. */
        assert_true(f.chunks_written >= CHUNKS - 1);
        assert_true(t.fires >= f.chunks_written);
        assert_true(t.fires_while_running >= f.chunks_written - 1);

        close(fd);
        sem_destroy(&f.go);
        unlink(fifo);
}

static void test_fifo_pipe_mode(void **state) {
        fifo_case("--records 20000 --cpus 4 --scenario all --pipe --chunk-size 3000 --no-bin --no-truth",
                  NULL, false);
}

/* A raw SPE buffer (--replay-raw) through a FIFO. */
static void test_raw_fifo(void **state) {
        fifo_case("--records 5000 --cpus 1 --scenario false-sharing --no-truth --no-perf-data", "g.cpu0.bin", true);
}

static void test_regular_file(void **state) {
        char dir[] = "/tmp/test-replay-source.XXXXXX";
        _cleanup_free_ char *path = NULL, *want = NULL, *got = NULL;
        struct ticker t = {};
        int fd;

        path = generate(dir, "--records 20000 --cpus 4 --scenario all --chunk-size 2000 --no-bin --no-truth");
        if (!path)
                skip();
        want = reference(path, false);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        got = run_source(fd, false, NULL, &t);
        assert_string_equal(want, got);
        /*
         * Every batch made the timer due; it fired between the replay's
         * dispatches (many: the budget is small), each time after more records.
         */
        assert_true(t.fires_while_running > 10);
        assert_true(t.records_grew);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fifo_pipe_mode),
                cmocka_unit_test(test_raw_fifo),
                cmocka_unit_test(test_regular_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
