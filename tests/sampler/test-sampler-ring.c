/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/sampler/sampler-ring.c against a kernel played on ordinary
 * memory (tests/perf/ring-kernel.h): samples with callchains, registers and
 * stacks of varying sizes, so that records wrap the ring's end, read back
 * field by field against what the test wrote; records the kernel dropped
 * for want of room and the PERF_RECORD_LOST that says so; THROTTLE; a
 * sample too short for its fields and a record of an impossible size;
 * callchains cut at sample_max_stack and stack copies that filled their
 * size; the order of samples around a COMM; a budget of records per drain.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring-kernel.h"
#include "proc-table.h"
#include "sampler-ring.h"
#include "task-map.h"

#define DATA_SIZE 4096
#define REGS_MASK 0x7 /* three registers */
#define STACK_SIZE 64
#define MAX_STACK 6
#define MAX_GOT 512
#define MAX_CHAIN 16

static const struct perf_event_attr attr = {
        .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
                       PERF_SAMPLE_STACK_USER,
        .sample_regs_user = REGS_MASK,
        .sample_stack_user = STACK_SIZE,
        .sample_max_stack = MAX_STACK,
        .sample_id_all = 1,
};

struct want {
        uint32_t pid, tid;
        uint64_t time, ip;
        size_t n_chain;
        uint64_t chain[MAX_CHAIN];
        size_t stack_len;
};

struct got {
        char log[MAX_GOT][32];          /* "S<time>" per sample, "C<comm>" per COMM, in the order handed on */
        size_t n_log;
        struct want samples[MAX_GOT];
        uint64_t regs0[MAX_GOT];
        uint8_t stack_first[MAX_GOT];
        size_t n;
        size_t max_batch;
};

static void on_samples(void *userdata, const struct source_sample *s, size_t n) {
        struct got *g = userdata;

        g->max_batch = MAX(g->max_batch, n);
        for (size_t i = 0; i < n; i++) {
                struct want *w = &g->samples[g->n];

                assert_true(g->n < MAX_GOT);
                *w = (struct want) { .pid = s[i].pid, .tid = s[i].tid, .time = s[i].time_ns, .ip = s[i].ip,
                                     .n_chain = s[i].nr_callchain, .stack_len = s[i].stack_len };
                assert_true(w->n_chain <= MAX_CHAIN);
                memcpy(w->chain, s[i].callchain, w->n_chain * 8);
                assert_int_equal(s[i].regs_abi, PERF_SAMPLE_REGS_ABI_64);
                assert_int_equal(s[i].regs_mask, REGS_MASK);
                assert_int_equal(s[i].nr_regs, 3);
                /* The registers: time + 1, + 2, + 3 as written. */
                for (size_t r = 0; r < 3; r++)
                        assert_int_equal(s[i].regs[r], w->time + r + 1);
                /* Every stack byte is the sample's time, low byte. */
                for (size_t b = 0; b < s[i].stack_len; b++)
                        assert_int_equal(s[i].stack[b], (uint8_t) w->time);
                assert_int_equal(s[i].cpu, 3);
                assert_int_equal(s[i].period, 1000);
                snprintf(g->log[g->n_log++], sizeof(g->log[0]), "S%" PRIu64, w->time);
                g->n++;
        }
}

static void on_task(void *userdata, const struct source_task *t) {
        struct got *g = userdata;

        if (t->kind == SOURCE_TASK_COMM && t->time_ns != 0)
                snprintf(g->log[g->n_log++], sizeof(g->log[0]), "C%s", t->comm);
}

struct fixture {
        struct kernel k;
        struct got got;
        struct source_sink sink;
        struct task_map *tasks;
        struct proc_table *procs;
        struct sampler_cpu_stats st;
        struct sampler_ring r;
        char root[64];
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        kernel_init(&f->k, DATA_SIZE, 4096);
        f->k.sample_id_all = true;
        f->k.pid = f->k.tid = 500;
        f->k.cpu = 3;
        f->k.id = 1;
        f->k.time = 42;
        f->sink = (struct source_sink) { .userdata = &f->got, .samples = on_samples, .task = on_task };
        /* An empty proc root: every process has gone before it is looked up. */
        snprintf(f->root, sizeof(f->root), "/tmp/armprofd-ring-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        assert_int_equal(task_map_new(&f->tasks), 0);
        assert_int_equal(proc_table_new(f->root, "/nonexistent", &f->sink, f->tasks, &f->procs), 0);
        f->st.cpu = 3;
        assert_int_equal(sampler_ring_init(&f->r, &f->k.page, f->k.data, DATA_SIZE, &attr, &f->sink, f->procs,
                                           &f->st), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;

        sampler_ring_done(&f->r);
        proc_table_free(f->procs);
        task_map_free(f->tasks);
        kernel_free(&f->k);
        rmdir(f->root);
        free(f);
        return 0;
}

/* A SAMPLE laid out as attr says (perf_event_open(2) order); false when the ring had no room. */
static bool put_sample(struct kernel *k, const struct want *w, uint64_t stack_size) {
        uint64_t rec[64];
        size_t n = 1;
        struct perf_event_header h;

        rec[n++] = 1;                                           /* IDENTIFIER */
        rec[n++] = w->ip;
        rec[n++] = ((uint64_t) w->tid << 32) | w->pid;
        rec[n++] = w->time;
        rec[n++] = 3;                                           /* {cpu, res} */
        rec[n++] = 1000;                                        /* PERIOD */
        rec[n++] = w->n_chain;
        for (size_t i = 0; i < w->n_chain; i++)
                rec[n++] = w->chain[i];
        rec[n++] = PERF_SAMPLE_REGS_ABI_64;
        for (size_t i = 0; i < 3; i++)
                rec[n++] = w->time + i + 1;
        rec[n++] = stack_size;
        memset(&rec[n], (uint8_t) w->time, stack_size);
        n += stack_size / 8;
        rec[n++] = w->stack_len;                                /* dyn_size */
        h = (struct perf_event_header) { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
                                         .size = (uint16_t) (n * 8) };
        memcpy(rec, &h, sizeof(h));
        return kernel_record_raw(k, rec, n * 8);
}

static struct want make(uint64_t i) {
        struct want w = {
                .pid = 600 + (uint32_t) (i % 3), .tid = 700 + (uint32_t) i, .time = 1000 + i, .ip = 0x400000 + i,
                /* 1 to 6 entries: records of different sizes, so that they wrap anywhere. */
                .n_chain = 1 + i % MAX_STACK,
                .stack_len = (i % 5) * 8,
        };

        w.chain[0] = (uint64_t) PERF_CONTEXT_USER;
        for (size_t j = 1; j < w.n_chain; j++)
                w.chain[j] = w.ip + j;
        return w;
}

static void assert_same(const struct want *a, const struct want *b) {
        assert_int_equal(a->pid, b->pid);
        assert_int_equal(a->tid, b->tid);
        assert_int_equal(a->time, b->time);
        assert_int_equal(a->ip, b->ip);
        assert_int_equal(a->n_chain, b->n_chain);
        assert_memory_equal(a->chain, b->chain, a->n_chain * 8);
        assert_int_equal(a->stack_len, b->stack_len);
}

static void test_wraps(void **state) {
        struct fixture *f = *state;
        struct want sent[300];
        size_t n_sent = 0;

        /* Many times round the ring, read every few records: records wrap at every offset. */
        for (uint64_t i = 0; i < ELEMENTSOF(sent); i++) {
                sent[n_sent] = make(i);
                assert_true(put_sample(&f->k, &sent[n_sent], STACK_SIZE));
                n_sent++;
                kernel_publish(&f->k);
                if (i % 7 == 6)
                        assert_true(sampler_ring_drain(&f->r, 0) > 0);
        }
        (void) sampler_ring_drain(&f->r, 0);
        assert_int_equal(f->got.n, n_sent);
        for (size_t i = 0; i < n_sent; i++)
                assert_same(&f->got.samples[i], &sent[i]);
        assert_int_equal(f->st.samples, n_sent);
        assert_int_equal(f->st.bad_records, 0);
        assert_int_equal(f->st.lost, 0);
        assert_true(f->got.max_batch <= SAMPLER_RING_BATCH);
        /* Released: the kernel may write the whole ring again. */
        assert_int_equal(f->k.page.data_tail, f->k.data_head);
        assert_false(sampler_ring_pending(&f->r));
}

static void test_lost_and_bad(void **state) {
        struct fixture *f = *state;
        struct {
                uint64_t id, lost;
        } lost = { 1, 0 };
        struct {
                uint64_t time, id, stream_id;
        } throttle = { 5, 1, 1 };
        uint64_t shortrec[3] = {};
        struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(shortrec) };
        size_t written = 0;
        struct want w;

        /* Fill the ring without reading it: the kernel drops what does not fit and says how many. */
        for (uint64_t i = 0; i < 100; i++) {
                w = make(i);
                if (put_sample(&f->k, &w, STACK_SIZE))
                        written++;
                else
                        lost.lost++;
        }
        kernel_publish(&f->k);
        assert_true(lost.lost > 0);
        assert_int_equal(sampler_ring_drain(&f->r, 0), (int) written);
        assert_true(kernel_put_record(&f->k, PERF_RECORD_LOST, 0, &lost, sizeof(lost)));
        assert_true(kernel_put_record(&f->k, PERF_RECORD_THROTTLE, 0, &throttle, sizeof(throttle)));
        /* A sample too short for its fields: skipped and counted, the next one read. */
        memcpy(shortrec, &h, sizeof(h));
        assert_true(kernel_record_raw(&f->k, shortrec, sizeof(shortrec)));
        w = make(1000);
        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        kernel_publish(&f->k);
        (void) sampler_ring_drain(&f->r, 0);
        assert_int_equal(f->st.lost, lost.lost);
        assert_int_equal(f->st.throttles, 1);
        assert_int_equal(f->st.bad_records, 1);
        assert_int_equal(f->st.samples, written + 1);
        assert_same(&f->got.samples[f->got.n - 1], &w);

        /* A record of an impossible size (0): nothing after it can be found; what was published is skipped. */
        h = (struct perf_event_header) { .type = PERF_RECORD_SAMPLE, .size = 0 };
        memcpy(shortrec, &h, sizeof(h));
        assert_true(kernel_record_raw(&f->k, shortrec, sizeof(shortrec)));
        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        kernel_publish(&f->k);
        (void) sampler_ring_drain(&f->r, 0);
        assert_int_equal(f->st.bad_records, 2);
        assert_int_equal(f->st.samples, written + 1);
        assert_int_equal(f->k.page.data_tail, f->k.data_head);
}

static void test_truncations(void **state) {
        struct fixture *f = *state;
        struct want w = make(MAX_STACK - 1); /* MAX_STACK entries: the marker and MAX_STACK - 1 frames */

        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        w = make(0);
        w.n_chain = MAX_STACK + 1;      /* the marker and MAX_STACK frames: cut by the kernel */
        for (size_t j = 1; j < w.n_chain; j++)
                w.chain[j] = w.ip + j;
        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        w = make(2);
        w.stack_len = STACK_SIZE;       /* the copy filled its whole size */
        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        kernel_publish(&f->k);
        (void) sampler_ring_drain(&f->r, 0);
        assert_int_equal(f->st.samples, 3);
        assert_int_equal(f->st.callchain_truncated, 1);
        assert_int_equal(f->st.stack_truncated, 1);
}

static void test_order_and_budget(void **state) {
        struct fixture *f = *state;
        struct {
                uint32_t pid, tid;
                char comm[16];
        } comm = { 600, 600, "renamed" };
        struct want w;

        for (uint64_t i = 0; i < 10; i++) {
                w = make(i);
                assert_true(put_sample(&f->k, &w, STACK_SIZE));
                if (i == 4)
                        assert_true(kernel_record_misc(&f->k, PERF_RECORD_COMM, 0, &comm, sizeof(comm)));
        }
        kernel_publish(&f->k);
        /* A budget of 4 records: 4 read, the rest pending, then 4 more, then the last 3. */
        assert_int_equal(sampler_ring_drain(&f->r, 4), 4);
        assert_true(sampler_ring_pending(&f->r));
        assert_int_equal(f->got.n, 4);
        assert_int_equal(sampler_ring_drain(&f->r, 4), 4);
        assert_int_equal(sampler_ring_drain(&f->r, 4), 3);
        assert_false(sampler_ring_pending(&f->r));
        assert_int_equal(f->got.n, 10);
        /* The samples before the COMM went out before it, those after it after. */
        assert_int_equal(f->got.n_log, 11);
        assert_string_equal(f->got.log[4], "S1004");
        assert_string_equal(f->got.log[5], "Crenamed");
        assert_string_equal(f->got.log[6], "S1005");
        assert_string_equal(task_map_get(f->tasks, 600)->comm, "renamed");
}

/*
 * The pre-scan hands a COMM on before the samples published before it (which
 * another CPU's ring may hold in the source), and the drain then skips it:
 * each record once, samples still all delivered in order.
 */
static void test_prescan(void **state) {
        struct fixture *f = *state;
        struct {
                uint32_t pid, tid;
                char comm[16];
        } comm = { 700, 700, "early" };
        struct want w;

        w = make(0);
        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        assert_true(kernel_record_misc(&f->k, PERF_RECORD_COMM, 0, &comm, sizeof(comm)));
        w = make(1);
        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        kernel_publish(&f->k);

        sampler_ring_prescan(&f->r);
        assert_int_equal(f->got.n_log, 1);
        assert_string_equal(f->got.log[0], "Cearly");
        assert_string_equal(task_map_get(f->tasks, 700)->comm, "early");
        assert_int_equal(f->got.n, 0);
        /* Again: nothing new, nothing handed on twice. */
        sampler_ring_prescan(&f->r);
        assert_int_equal(f->got.n_log, 1);

        assert_int_equal(sampler_ring_drain(&f->r, 0), 3);
        assert_int_equal(f->got.n, 2);
        assert_int_equal(f->got.n_log, 3);
        assert_string_equal(f->got.log[1], "S1000");
        assert_string_equal(f->got.log[2], "S1001");
        assert_int_equal(f->st.bad_records, 0);

        /* A COMM published after the pre-scan goes in order with the drain. */
        comm = (typeof(comm)) { 700, 700, "late" };
        assert_true(kernel_record_misc(&f->k, PERF_RECORD_COMM, 0, &comm, sizeof(comm)));
        w = make(2);
        assert_true(put_sample(&f->k, &w, STACK_SIZE));
        kernel_publish(&f->k);
        assert_int_equal(sampler_ring_drain(&f->r, 0), 2);
        assert_int_equal(f->got.n_log, 5);
        assert_string_equal(f->got.log[3], "Clate");
        assert_string_equal(f->got.log[4], "S1002");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_wraps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lost_and_bad, setup, teardown),
                cmocka_unit_test_setup_teardown(test_truncations, setup, teardown),
                cmocka_unit_test_setup_teardown(test_order_and_budget, setup, teardown),
                cmocka_unit_test_setup_teardown(test_prescan, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
