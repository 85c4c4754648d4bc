/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The resumable reader (perf_data_reader_step()) on a non-blocking pipe fed
 * byte by byte and in odd chunks, with -EAGAIN between them, against the
 * one-shot perf_data_reader_run() of the same bytes from memory: every
 * callback, every AUXTRACE payload (its bytes hashed, whatever the pieces),
 * the result and the message must be the same. Inputs: perf's and the
 * generator's pipe-mode files of the fuzz corpus, and a larger generator
 * file with many AUXTRACE payloads cut at odd places.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "macro.h"
#include "perf-data.h"
#include "strbuf.h"

struct trace {
        struct strbuf out;
        uint64_t hash;          /* FNV-1a of the payload in progress */
        uint64_t expect;        /* the chunk_offset the next piece must have */
};

static void fnv(uint64_t *h, const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                *h = (*h ^ p[i]) * UINT64_C(0x100000001b3);
}

static int t_record(void *u, const struct perf_data_record *rec) {
        struct trace *t = u;

        strbuf_printf(&t->out, "R %" PRIu32 " %" PRIx64 " %u pid=%" PRIu32 " cpu=%" PRIu32 "\n", rec->type,
                      rec->file_offset, (unsigned) rec->size, rec->sid.pid, rec->sid.cpu);
        return 0;
}

static int t_attr(void *u, const struct perf_data_attr *a) {
        strbuf_printf(&((struct trace *) u)->out, "ATTR %" PRIu32 " %zu\n", a->attr.type, a->nr_ids);
        return 0;
}

static int t_feature(void *u, unsigned feat, const uint8_t *data, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        fnv(&h, data, len);
        strbuf_printf(&((struct trace *) u)->out, "F %u %zu %" PRIx64 "\n", feat, len, h);
        return 0;
}

static int t_auxtrace(void *u, const struct perf_data_auxtrace *at, uint64_t chunk_offset, const uint8_t *data,
                      size_t len, bool last) {
        struct trace *t = u;

        if (chunk_offset == 0)
                t->hash = UINT64_C(0xcbf29ce484222325), t->expect = 0;
        /* The pieces of one payload follow each other, however the reads were cut. */
        assert_int_equal(chunk_offset, t->expect);
        t->expect += len;
        fnv(&t->hash, data, len);
        if (last)
                strbuf_printf(&t->out, "AUX %" PRIx64 " cpu=%" PRIu32 " %" PRIu64 " %" PRIx64 "\n",
                              at->file_offset, at->cpu, at->size, t->hash);
        return 0;
}

static int t_mmap(void *u, const struct perf_data_mmap *m) {
        strbuf_printf(&((struct trace *) u)->out, "MMAP %" PRIu32 " %" PRIx64 " %s\n", m->pid, m->addr, m->filename);
        return 0;
}

static int t_comm(void *u, const struct perf_data_comm *c) {
        strbuf_printf(&((struct trace *) u)->out, "COMM %" PRIu32 " %s\n", c->tid, c->comm);
        return 0;
}

static int t_sample(void *u, const struct perf_data_sample *s) {
        strbuf_printf(&((struct trace *) u)->out, "S %" PRIx64 " %" PRIx64 "\n", s->ip, s->period);
        return 0;
}

static const struct perf_data_ops trace_ops = {
        .on_record = t_record,
        .on_attr = t_attr,
        .on_feature = t_feature,
        .on_auxtrace = t_auxtrace,
        .on_mmap = t_mmap,
        .on_comm = t_comm,
        .on_sample = t_sample,
};

/* The reference: run() over the bytes in memory. */
static char *trace_oneshot(const uint8_t *data, size_t size) {
        struct trace t = {};
        struct perf_data_reader *r;
        int k;

        assert_int_equal(perf_data_reader_new_memory(data, size, &r), 0);
        k = perf_data_reader_run(r, &trace_ops, &t);
        strbuf_printf(&t.out, "= %d %s\n", k, perf_data_reader_error(r));
        perf_data_reader_free(r);
        return strbuf_steal(&t.out, NULL);
}

/*
 * step() over a non-blocking pipe that gets the next chunk (sizes cycling
 * through `chunks`) only when the reader said -EAGAIN; the test is the
 * writer, so it never blocks. *ret_eagain counts the -EAGAINs.
 */
static char *trace_stepped(const uint8_t *data, size_t size, const size_t *chunks, size_t n_chunks, size_t budget,
                           size_t *ret_eagain) {
        struct trace t = {};
        struct perf_data_reader *r;
        size_t off = 0, ci = 0, eagain = 0;
        int p[2], k;

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(perf_data_reader_new_fd(p[0], true, &r), 0);
        assert_int_equal(perf_data_reader_begin(r, &trace_ops, &t), 0);
        for (;;) {
                k = perf_data_reader_step(r, budget);
                if (k == 1)
                        continue;
                if (k != -EAGAIN)
                        break;
                eagain++;
                if (off < size) {
                        size_t n = MIN(chunks[ci++ % n_chunks], size - off);

                        assert_int_equal(write(p[1], data + off, n), (ssize_t) n);
                        off += n;
                } else if (p[1] >= 0) {
                        p[1] = safe_close(p[1]);
                } else
                        fail_msg("-EAGAIN after the writer left");
        }
        /* Done: it says so again, and stays done. */
        assert_int_equal(perf_data_reader_step(r, budget), k);
        assert_true(perf_data_reader_done(r));
        strbuf_printf(&t.out, "= %d %s\n", k, perf_data_reader_error(r));
        perf_data_reader_free(r);
        safe_close(p[1]);
        *ret_eagain = eagain;
        return strbuf_steal(&t.out, NULL);
}

static uint8_t *slurp(const char *path, size_t *ret_size) {
        struct strbuf sb = {};
        uint8_t buf[65536];
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                strbuf_append(&sb, buf, (size_t) n);
        close(fd);
        return (uint8_t *) strbuf_steal(&sb, ret_size);
}

static void compare(const uint8_t *data, size_t size, const size_t *chunks, size_t n_chunks, size_t budget) {
        _cleanup_free_ char *want = trace_oneshot(data, size);
        _cleanup_free_ char *got = NULL;
        size_t eagain;

        got = trace_stepped(data, size, chunks, n_chunks, budget, &eagain);
        if (!streq(want, got)) {
                fprintf(stderr, "one-shot:\n%.2000s\nstepped:\n%.2000s\n", want, got);
                fail_msg("stepped reading differs (chunks[0]=%zu, budget %zu)", chunks[0], budget);
        }
        /* The reader did wait for the writer, more than once. */
        assert_true(eagain > 1);
}

static const char *const corpus_files[] = {
        "real-tiny.pipe",               /* perf record -o - */
        "reference-pipe.data",
        "spegen-build-id-pipe.data",
        "sample-too-short-pipe.data",   /* ends in an error: the same one */
        "compressed-pipe.data",
};

static void test_corpus_byte_by_byte(void **state) {
        const char *src = getenv("ARMPROFD_SOURCE_DIR");
        static const size_t one[] = { 1 };
        static const size_t odd[] = { 3, 17, 1, 250, 7 };

        if (!src)
                skip();
        for (size_t i = 0; i < ELEMENTSOF(corpus_files); i++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_free_ uint8_t *data = NULL;
                size_t size;

                assert_true(asprintf(&path, "%s/tests/perf/corpus/fuzz-perf-data/%s", src, corpus_files[i]) > 0);
                data = slurp(path, &size);
                assert_non_null(data);
                compare(data, size, one, ELEMENTSOF(one), SIZE_MAX);
                compare(data, size, one, ELEMENTSOF(one), 1);
                compare(data, size, odd, ELEMENTSOF(odd), 2);
        }
}

/* The generator's pipe mode with small AUXTRACE buffers: many payloads, cut anywhere. */
static void test_generator_odd_chunks(void **state) {
        const char *build = getenv("ARMPROFD_BUILD_DIR");
        static const size_t odd[] = { 4093, 1, 65521, 37, 8191, 12 };
        _cleanup_free_ char *cmd = NULL, *path = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        char tmpl[] = "/tmp/test-perf-data-step.XXXXXX";
        size_t size;

        if (!build)
                skip();
        assert_non_null(mkdtemp(tmpl));
        assert_true(asprintf(&path, "%s/g.data", tmpl) > 0);
        assert_true(asprintf(&cmd, "%s/tests/spegen/armprofd-spegen --pipe --records 20000 --cpus 4 --scenario all "
                                   "--chunk-size 3000 --no-bin --no-truth --perf-data %s > /dev/null",
                             build, path) > 0);
        assert_int_equal(system(cmd), 0);
        data = slurp(path, &size);
        assert_non_null(data);
        assert_true(size > 500000);
        compare(data, size, odd, ELEMENTSOF(odd), SIZE_MAX);
        compare(data, size, odd, ELEMENTSOF(odd), 1);
        compare(data, size, odd, ELEMENTSOF(odd), 5);
        unlink(path);
        rmdir(tmpl);
}

/* A regular file never waits: step() reads it to the end, budget by budget. */
static void test_file_steps(void **state) {
        const char *src = getenv("ARMPROFD_SOURCE_DIR");
        _cleanup_free_ char *path = NULL, *want = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        struct trace t = {};
        struct perf_data_reader *r;
        size_t size, steps = 0;
        int k;

        if (!src)
                skip();
        assert_true(asprintf(&path, "%s/tests/perf/corpus/fuzz-perf-data/real-tiny.data", src) > 0);
        data = slurp(path, &size);
        want = trace_oneshot(data, size);
        assert_int_equal(perf_data_reader_new_path(path, &r), 0);
        assert_int_equal(perf_data_reader_begin(r, &trace_ops, &t), 0);
        assert_int_equal(perf_data_reader_begin(r, &trace_ops, &t), -EALREADY);
        while ((k = perf_data_reader_step(r, 1)) == 1)
                steps++;
        strbuf_printf(&t.out, "= %d %s\n", k, perf_data_reader_error(r));
        assert_string_equal(t.out.buf, want);
        /* One record per step: as many steps as records, less the last. */
        assert_true(steps + 1 >= perf_data_reader_stats(r)->records_total);
        perf_data_reader_free(r);
        strbuf_done(&t.out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_corpus_byte_by_byte),
                cmocka_unit_test(test_generator_odd_chunks),
                cmocka_unit_test(test_file_steps),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
