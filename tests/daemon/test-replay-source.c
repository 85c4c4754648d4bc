/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The replay as a source on the seam (daemon/replay-source.c), driven by a
 * real sd-event loop as the collector drives it:
 *  - what reaches the sink (records, pids, tids, mappings, clocks,
 *    features, in order) is what spe_replay_path() hands its sink for the
 *    same generator file, and the status counts what the generator wrote;
 *  - over a pipe whose writer stops in the middle of the file, the loop's
 *    other timers keep firing: the writer only sends the rest after the
 *    loop's timer fired twice more, which a blocked loop would never do;
 *  - a damaged input ends FAILED with the reader's message and errno;
 *  - freeing the source while its reader waits for a silent writer returns.
 * argv[1]: the armprofd-spegen binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "replay-source.h"
#include "spe-replay.h"
#include "strbuf.h"

/* Bounds on waits that must end, never a measurement. */
#define WAIT_NSEC (20 * NSEC_PER_SEC)
#define TICK_USEC 1000

static const char *spegen_path;
static char tmpdir[] = "/tmp/armprofd-replay-source-XXXXXX";

/* What a sink saw: a running FNV-1a hash of every call, in order, and counts. */
struct seen {
        uint64_t hash;
        uint64_t records, mappings, clocks, features;
        int state;                      /* -1 until the source said DONE or FAILED */
        sd_event *event;
};

static void mix(struct seen *s, const void *p, size_t n) {
        const uint8_t *b = p;

        for (size_t i = 0; i < n; i++) {
                s->hash ^= b[i];
                s->hash *= UINT64_C(0x100000001b3);
        }
}

static void mix_u64(struct seen *s, uint64_t v) {
        mix(s, &v, sizeof(v));
}

static void mix_record(struct seen *s, const struct spe_record *r, uint32_t pid, uint32_t tid) {
        /* Fields, not the struct: its padding is nobody's output. */
        mix_u64(s, r->cpu);
        mix_u64(s, r->present);
        mix_u64(s, r->pc.addr);
        mix_u64(s, r->timestamp);
        mix_u64(s, r->va);
        mix_u64(s, r->pa);
        mix_u64(s, r->events);
        mix_u64(s, r->lat_total);
        mix_u64(s, r->op_class);
        mix_u64(s, r->source);
        mix_u64(s, r->flags);
        mix_u64(s, pid);
        mix_u64(s, tid);
}

static void mix_clock(struct seen *s, const struct source_clock *c) {
        mix_u64(s, c->has_time_conv);
        mix_u64(s, c->time_shift);
        mix_u64(s, c->time_mult);
        mix_u64(s, c->time_zero);
        mix_u64(s, c->time_cycles);
        mix_u64(s, c->time_mask);
        mix_u64(s, c->cap_user_time_short);
        mix_u64(s, c->has_clock_data);
        mix_u64(s, c->clockid);
        mix_u64(s, (uint64_t) c->unix_minus_perf_ns);
}

static void mix_mapping(struct seen *s, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                        const char *filename, const uint8_t *build_id, size_t build_id_len) {
        mix_u64(s, pid);
        mix_u64(s, start);
        mix_u64(s, len);
        mix_u64(s, pgoff);
        mix(s, filename, strlen(filename) + 1);
        mix_u64(s, build_id_len);
        if (build_id)
                mix(s, build_id, build_id_len);
}

/* ---- what a sink saw: the same callbacks for the reference (spe_replay_path()) and the source ---- */

static void seen_records(void *userdata, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                        size_t n) {
        struct seen *s = userdata;

        for (size_t i = 0; i < n; i++)
                mix_record(s, &recs[i], pids[i], tids[i]);
        s->records += n;
}

static void seen_mapping(void *userdata, const struct source_mapping *m) {
        struct seen *s = userdata;

        mix_mapping(s, m->pid, m->start, m->len, m->pgoff, m->filename, m->build_id, m->build_id_len);
        s->mappings++;
}

static void seen_clock(void *userdata, const struct source_clock *c) {
        struct seen *s = userdata;

        mix_clock(s, c);
        s->clocks++;
}

static void seen_feature(void *userdata, unsigned feat, const uint8_t *data, size_t len) {
        struct seen *s = userdata;

        mix_u64(s, feat);
        mix(s, data, len);
        s->features++;
}

/* ---- the source's sink: the same, and its end ---- */

static void src_state(void *userdata, struct source *src, enum source_state state) {
        struct seen *s = userdata;

        assert_true(state == SOURCE_DONE || state == SOURCE_FAILED);
        s->state = (int) state;
        sd_event_exit(s->event, 0);
}

static struct source_sink sink_of(struct seen *s) {
        return (struct source_sink) {
                .userdata = s,
                .records = seen_records,
                .mapping = seen_mapping,
                .clock = seen_clock,
                .feature = seen_feature,
                .state = src_state,
        };
}

static char *path_in_tmp(const char *name) {
        char *p = NULL;

        assert_true(asprintf(&p, "%s/%s", tmpdir, name) > 0);
        return p;
}

static void generate(const char *prefix, bool pipe_mode) {
        pid_t child = fork();
        int status;

        assert_true(child >= 0);
        if (child == 0) {
                int devnull = open("/dev/null", O_WRONLY);

                if (devnull >= 0)
                        dup2(devnull, STDOUT_FILENO);
                execl(spegen_path, spegen_path, "--out-dir", tmpdir, "--prefix", prefix, "--seed", "17",
                      "--records", "20000", "--cpus", "3", "--scenario", "all", "--chunk-size", "32768", "--no-bin",
                      pipe_mode ? "--pipe" : (char *) NULL, (char *) NULL);
                _exit(127);
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static uint64_t truth_get(const char *prefix, const char *key) {
        _cleanup_free_ char *path = NULL, *name = NULL;
        char line[256];
        uint64_t v = UINT64_MAX;
        FILE *f;

        assert_true(asprintf(&name, "%s.truth.txt", prefix) > 0);
        path = path_in_tmp(name);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == '=')
                        v = strtoull(line + strlen(key) + 1, NULL, 10);
        fclose(f);
        assert_true(v != UINT64_MAX);
        return v;
}

static char *read_all(const char *path, size_t *ret_len) {
        char *buf;
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        buf = xmalloc((size_t) st.st_size);
        assert_int_equal(read(fd, buf, (size_t) st.st_size), st.st_size);
        close(fd);
        *ret_len = (size_t) st.st_size;
        return buf;
}

static struct seen reference(const char *path) {
        struct seen s = { .hash = UINT64_C(0xcbf29ce484222325), .state = -1 };
        struct spe_replay *r = NULL;

        assert_int_equal(spe_replay_path(path,
                                         &(struct source_sink) { .userdata = &s, .records = seen_records,
                                                              .mapping = seen_mapping, .clock = seen_clock,
                                                              .feature = seen_feature },
                                         &r),
                         0);
        spe_replay_free(r);
        return s;
}

/* A timer of the same loop that fires every TICK_USEC while the source runs. */
struct ticker {
        _Atomic uint64_t ticks;
};

static int on_tick(sd_event_source *es, uint64_t usec, void *userdata) {
        struct ticker *t = userdata;

        atomic_fetch_add(&t->ticks, 1);
        return sd_event_source_set_time(es, usec + TICK_USEC);
}

/* A bound on the whole run, so a source that never ends fails the test instead of hanging it. */
static int on_deadline(sd_event_source *es, uint64_t usec, void *userdata) {
        fail_msg("the source did not end within the bound");
        return 0;
}

static void run_loop(sd_event *e, struct ticker *t) {
        _cleanup_(sd_event_source_unrefp) sd_event_source *tick = NULL, *deadline = NULL;

        assert_int_equal(sd_event_add_time_relative(e, &tick, CLOCK_MONOTONIC, TICK_USEC, 1, on_tick, t), 0);
        assert_int_equal(sd_event_source_set_enabled(tick, SD_EVENT_ON), 0);
        assert_int_equal(sd_event_add_time_relative(e, &deadline, CLOCK_MONOTONIC, WAIT_NSEC / NSEC_PER_USEC, 1,
                                                    on_deadline, NULL),
                         0);
        assert_int_equal(sd_event_loop(e), 0);
}

static void check_status(struct source *src, enum source_state want, uint64_t records) {
        struct source_status st;
        uint64_t sum = 0;

        source_status(src, &st);
        assert_string_equal(st.kind, "replay");
        assert_int_equal(st.state, want);
        for (size_t i = 0; i < st.n_cpus; i++)
                sum += st.cpus[i].records;
        if (want == SOURCE_DONE) {
                assert_int_equal(st.n_cpus, 3);
                assert_int_equal(sum, records);
                assert_int_equal(st.n_warnings, 0);
                assert_string_equal(st.reason, "");
                assert_int_equal(st.error, 0);
        }
        source_status_done(&st);
}

static void test_file_equals_reference(void **state) {
        _cleanup_free_ char *path = path_in_tmp("f.data");
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        struct seen want, got = { .hash = UINT64_C(0xcbf29ce484222325), .state = -1 };
        struct source_sink sink = sink_of(&got);
        struct ticker t = {};
        struct source *src = NULL;
        _cleanup_close_ int fd = -1;

        generate("f", false);
        want = reference(path);
        assert_int_equal(want.records, truth_get("f", "records"));

        assert_int_equal(sd_event_new(&e), 0);
        got.event = e;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(replay_source_new(&(struct replay_args) { .path = path }, fd, &sink, NULL, &src), 0);
        check_status(src, SOURCE_STARTING, 0);
        assert_int_equal(source_start(src, e, NULL), 0);
        run_loop(e, &t);

        assert_int_equal(got.state, SOURCE_DONE);
        assert_int_equal(got.records, want.records);
        assert_int_equal(got.mappings, want.mappings);
        assert_int_equal(got.clocks, want.clocks);
        assert_int_equal(got.features, want.features);
        assert_true(got.hash == want.hash);
        check_status(src, SOURCE_DONE, want.records);
        source_free(src);
}

struct writer {
        int fd;
        const uint8_t *data;
        size_t len, cut;
        struct ticker *ticker;
        bool blocked_loop;      /* the loop's timer did not move while the input stopped */
        bool write_failed;
};

/* The whole of data[from, to) in pieces of at most `piece` bytes. */
static bool write_pieces(int fd, const uint8_t *data, size_t from, size_t to, size_t piece) {
        while (from < to) {
                size_t n = MIN(piece, to - from);

                if (write(fd, data + from, n) != (ssize_t) n)
                        return false;
                from += n;
        }
        return true;
}

static uint64_t now_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void *writer_main(void *userdata) {
        struct writer *w = userdata;
        uint64_t t0, deadline;

        /* Up to the middle of the file in odd pieces, then nothing until the loop's timer fired twice. */
        if (!write_pieces(w->fd, w->data, 0, w->cut, 997))
                w->write_failed = true;
        t0 = atomic_load(&w->ticker->ticks);
        deadline = now_nsec() + WAIT_NSEC;
        while (atomic_load(&w->ticker->ticks) < t0 + 2) {
                if (now_nsec() > deadline) {
                        w->blocked_loop = true;
                        break;
                }
                usleep(1000);
        }
        if (!write_pieces(w->fd, w->data, w->cut, w->len, 4099))
                w->write_failed = true;
        close(w->fd);
        return NULL;
}

static void test_slow_pipe_does_not_block_the_loop(void **state) {
        _cleanup_free_ char *path = path_in_tmp("p.data"), *data = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        struct seen want, got = { .hash = UINT64_C(0xcbf29ce484222325), .state = -1 };
        struct source_sink sink = sink_of(&got);
        struct ticker t = {};
        struct source *src = NULL;
        struct writer w = { .ticker = &t };
        pthread_t writer;
        size_t len = 0;
        int p[2];

        generate("p", true);
        want = reference(path);
        assert_int_equal(want.records, truth_get("p", "records"));
        data = read_all(path, &len);

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        w.fd = p[1];
        w.data = (const uint8_t *) data;
        w.len = len;
        w.cut = len / 2;
        /* The writer blocks on a full pipe; the reader side stays non-blocking, as replay_open() leaves a FIFO. */
        assert_int_equal(fcntl(p[1], F_SETFL, 0), 0);

        assert_int_equal(sd_event_new(&e), 0);
        got.event = e;
        assert_int_equal(replay_source_new(&(struct replay_args) { .path = "pipe" }, p[0], &sink, NULL, &src), 0);
        assert_int_equal(source_start(src, e, NULL), 0);
        assert_int_equal(pthread_create(&writer, NULL, writer_main, &w), 0);
        run_loop(e, &t);
        assert_int_equal(pthread_join(writer, NULL), 0);

        assert_false(w.blocked_loop);
        assert_false(w.write_failed);
        assert_int_equal(got.state, SOURCE_DONE);
        assert_int_equal(got.records, want.records);
        assert_true(got.hash == want.hash);
        check_status(src, SOURCE_DONE, want.records);
        source_free(src);
        close(p[0]);
}

static void test_damaged_input_fails(void **state) {
        _cleanup_free_ char *path = path_in_tmp("junk.data");
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        struct seen got = { .hash = UINT64_C(0xcbf29ce484222325), .state = -1 };
        struct source_sink sink = sink_of(&got);
        struct ticker t = {};
        struct source *src = NULL;
        struct source_status st;
        _cleanup_close_ int fd = -1;
        FILE *f;

        /* Not a perf.data: the magic is wrong (perf's header.h PERF_MAGIC is "PERFILE2"). */
        f = fopen(path, "we");
        assert_non_null(f);
        for (int i = 0; i < 4096; i++)
                fputc("NOTPERF!"[i % 8], f);
        assert_int_equal(fclose(f), 0);

        assert_int_equal(sd_event_new(&e), 0);
        got.event = e;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(replay_source_new(&(struct replay_args) { .path = path }, fd, &sink, NULL, &src), 0);
        assert_int_equal(source_start(src, e, NULL), 0);
        run_loop(e, &t);

        assert_int_equal(got.state, SOURCE_FAILED);
        assert_int_equal(got.records, 0);
        source_status(src, &st);
        assert_int_equal(st.state, SOURCE_FAILED);
        assert_true(st.error < 0);
        assert_non_null(strstr(st.reason, "not a perf.data"));
        assert_non_null(strstr(st.reason, "(0 records decoded before it)"));
        source_status_done(&st);
        source_free(src);
}

static void test_free_while_waiting(void **state) {
        _cleanup_free_ char *fifo = path_in_tmp("fifo");
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        struct seen got = { .hash = UINT64_C(0xcbf29ce484222325), .state = -1 };
        struct source_sink sink = sink_of(&got);
        struct source *src = NULL;
        _cleanup_close_ int fd = -1, w = -1;

        assert_int_equal(mkfifo(fifo, 0600), 0);
        fd = open(fifo, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        assert_true(fd >= 0);
        w = open(fifo, O_WRONLY | O_CLOEXEC);
        assert_true(w >= 0);
        assert_int_equal(write(w, "PERFILE2", 8), 8); /* half a pipe header, then nothing */

        assert_int_equal(sd_event_new(&e), 0);
        got.event = e;
        assert_int_equal(replay_source_new(&(struct replay_args) { .path = fifo }, fd, &sink, NULL, &src), 0);
        assert_int_equal(source_start(src, e, NULL), 0);
        /* A few iterations of the loop, none of which may wait for the writer. */
        for (int i = 0; i < 3; i++)
                assert_true(sd_event_run(e, 1000) >= 0);
        check_status(src, SOURCE_RUNNING, 0);
        source_free(src);        /* returns: the reader's wait is cancelled */
        assert_int_equal(got.state, -1);
        unlink(fifo);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_file_equals_reference),
                cmocka_unit_test(test_slow_pipe_does_not_block_the_loop),
                cmocka_unit_test(test_damaged_input_fails),
                cmocka_unit_test(test_free_while_waiting),
        };
        int r;

        if (argc < 2) {
                fprintf(stderr, "usage: %s ARMPROFD-SPEGEN\n", argv[0]);
                return 2;
        }
        spegen_path = argv[1];
        assert_non_null(mkdtemp(tmpdir));
        r = cmocka_run_group_tests(tests, NULL, NULL);
        {
                char cmd[sizeof(tmpdir) + 16];

                snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
                (void) !system(cmd);
        }
        return r;
}
