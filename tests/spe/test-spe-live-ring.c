/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/spe/spe-live-ring.c and spe-stream.c's timed switches against
 * a kernel played on ordinary memory (tests/perf/ring-kernel.h, the
 * producer side of struct perf_event_mmap_page, perf_event_open(2) "MMAP
 * layout"), with the event opened as collectors/pmu/spe-pmu.c opens
 * it (sample_type TID|TIME|CPU|IDENTIFIER, sample_id_all: every side-band
 * record ends in a sample_id trailer, kernel/events/core.c
 * perf_event__output_id_sample()) and a user page with cap_user_time_zero
 * and a 25 MHz generic timer's time_mult/time_shift/time_zero.
 *
 * The SPE records are encoded by tests/spegen's encoder (spe-enc.h), which
 * shares no code with the decoder, or come whole from its generator; each
 * test knows every record's fields, its time and the task that ran it, and
 * checks what the sink got against that. Perf times are computed here with perf's tsc_to_perf_time()
 * (tools/perf/util/tsc.c), written again rather than taken from source.c.
 *
 * Run with --write-seeds DIR to write the fuzz target's seed rings
 * (tests/spe/fuzz-spe-live-ring.c explains their layout).
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

#include <cmocka.h>

#include "macro.h"
#include "ring-kernel.h"
#include "spe-enc.h"
#include "spe-live-ring.h"
#include "spe-stream.h"
#include "spegen-expect.h"
#include "spegen-gen.h"
#include "spegen-layout.h"
#include "strbuf.h"
#include "task-map.h"

/* ---- the clock: a 25 MHz counter (40 ns a tick), as the kernel describes it in the user page ---- */

#define TIME_SHIFT      24
/* 40 << 24, plus a little so that the remainder term of the conversion matters. */
#define TIME_MULT       ((UINT64_C(40) << TIME_SHIFT) + 12345)
#define TIME_ZERO       UINT64_C(987654321)

/* tools/perf/util/tsc.c tsc_to_perf_time(), without cap_user_time_short. */
static uint64_t perf_ns(uint64_t cyc) {
        uint64_t quot = cyc >> TIME_SHIFT, rem = cyc & ((UINT64_C(1) << TIME_SHIFT) - 1);

        return TIME_ZERO + quot * TIME_MULT + ((rem * TIME_MULT) >> TIME_SHIFT);
}

static const struct perf_event_attr spe_attr = {
        .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
        .sample_id_all = 1,
};

#define CPU 3
#define EVENT_ID 77

/* ---- the kernel's side: tests/perf/ring-kernel.h, with the event's sample_id trailers and clock ---- */

static void live_kernel_init(struct kernel *k, size_t data_size, size_t aux_size) {
        kernel_init(k, data_size, aux_size);
        k->sample_id_all = true;
        k->cpu = CPU;
        k->id = EVENT_ID;
        k->page.cap_user_time_zero = 1;
        k->page.time_shift = TIME_SHIFT;
        k->page.time_mult = (uint32_t) TIME_MULT;
        k->page.time_zero = TIME_ZERO;
}

/* Every record the test wrote went out (none dropped for want of room). */
static void kernel_done(struct kernel *k) {
        assert_null(k->bug);
        assert_int_equal(k->pending_lost, 0);
        assert_int_equal(k->dropped_aux_records, 0);
        kernel_free(k);
}

static void kernel_switch(struct kernel *k, uint64_t time, uint32_t out_pid, uint32_t out_tid, uint32_t in_pid,
                          uint32_t in_tid) {
        /* perf_event_switch_output(): the out record is the outgoing task's, naming the next
         * one; the in record is the incoming task's, naming the previous one. */
        struct { uint32_t pid, tid; } out = { in_pid, in_tid }, in = { out_pid, out_tid };

        k->time = time;
        k->pid = out_pid, k->tid = out_tid;
        kernel_record_misc(k, PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT, &out, sizeof(out));
        k->pid = in_pid, k->tid = in_tid;
        kernel_record_misc(k, PERF_RECORD_SWITCH_CPU_WIDE, 0, &in, sizeof(in));
}

static void kernel_itrace_start(struct kernel *k, uint64_t time, uint32_t pid, uint32_t tid) {
        struct { uint32_t pid, tid; } b = { pid, tid };

        k->time = time;
        k->pid = pid, k->tid = tid;
        kernel_record_misc(k, PERF_RECORD_ITRACE_START, 0, &b, sizeof(b));
}

static void kernel_comm(struct kernel *k, uint32_t pid, uint32_t tid, const char *comm) {
        struct {
                uint32_t pid, tid;
                char comm[16];
        } b = { pid, tid };

        snprintf(b.comm, sizeof(b.comm), "%s", comm);
        kernel_record_misc(k, PERF_RECORD_COMM, 0, &b, sizeof(b));
}

/* ---- the SPE records: what the tests encode and what they expect ---- */

struct truth {
        uint64_t pc, va, events, ts;
        uint16_t lat;
        uint32_t context;       /* 0: no CONTEXT packet */
        uint32_t pid, tid;      /* the task that ran it */
        size_t offset, size;    /* in the test's byte stream */
};

/* Packet sizes (Arm ARM D10): an Address packet, a header byte and 8 of payload; an Operation Type packet, 1 + 1. */
#define PKT_PC 9
#define PKT_OP 2

#define TICKS_APART 50           /* 2 us at 25 MHz between records */
#define FIRST_TS UINT64_C(40000000000)

/* A load: PC, op type, events, total latency, VA, [CONTEXT], TIMESTAMP terminator. */
static size_t encode(uint8_t *buf, const struct truth *t) {
        size_t n = 0;

        n += spe_enc_address(buf + n, SPE_ENC_ADDR_PC, spe_enc_ip_payload(t->pc, 0, true), false);
        n += spe_enc_op_type(buf + n, SPE_ENC_OP_LDST, SPE_ENC_OP_LDST_GP);
        n += spe_enc_events(buf + n, t->events, 2);
        n += spe_enc_counter(buf + n, SPE_ENC_CNT_TOTAL, t->lat, false);
        n += spe_enc_address(buf + n, SPE_ENC_ADDR_VA, t->va, false);
        if (t->context)
                n += spe_enc_context(buf + n, SPE_ENC_CONTEXT_EL1, t->context);
        n += spe_enc_timestamp(buf + n, t->ts);
        return n;
}

struct stream_bytes {
        uint8_t buf[1 << 16];
        size_t len;
        struct truth t[1024];
        size_t n;
};

/* Record i of a stream run by (pid, tid), CONTEXT packets when with_context. */
static void add_record(struct stream_bytes *sb, uint32_t pid, uint32_t tid, bool with_context) {
        struct truth *t = &sb->t[sb->n];

        assert_true(sb->n < ELEMENTSOF(sb->t));
        *t = (struct truth) {
                .pc = UINT64_C(0x400000) + 4 * sb->n,
                .va = UINT64_C(0xffff0000) + 64 * sb->n,
                .events = SPE_ENC_EV_RETIRED | (sb->n % 2 ? SPE_ENC_EV_L1D_REFILL : 0),
                .ts = FIRST_TS + TICKS_APART * sb->n,
                .lat = (uint16_t) (10 + sb->n),
                .context = with_context ? tid : 0,
                .pid = pid,
                .tid = tid,
                .offset = sb->len,
        };
        assert_true(sb->len + 64 <= sizeof(sb->buf));
        t->size = encode(sb->buf + sb->len, t);
        sb->len += t->size;
        sb->n++;
}

/* A perf time between records i and i + 1. */
static uint64_t between(const struct stream_bytes *sb, size_t i) {
        return (perf_ns(sb->t[i].ts) + perf_ns(sb->t[i + 1].ts)) / 2;
}

/* ---- the reader's side ---- */

struct got_rec {
        struct spe_record rec;
        uint32_t pid, tid;
};

struct got_task {
        struct source_task t;
        char comm[32];
};

struct sink {
        /* Records checked as they come against the generator's truth (when gen is set), else kept. */
        const struct spegen_record *gen;
        size_t gen_n, gen_i, mismatches;
        struct got_rec r[2048];
        size_t n;
        struct got_task tasks[16];
        size_t n_tasks;
        struct source_mapping maps[4];
        char map_names[4][64];
        uint8_t map_ids[4][20];
        size_t n_maps;
};

static void sink_records(void *u, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                         size_t n) {
        struct sink *s = u;

        if (s->gen) {
                for (size_t i = 0; i < n; i++, s->gen_i++) {
                        const struct spegen_record *w = &s->gen[s->gen_i];

                        if (s->gen_i >= s->gen_n || recs[i].timestamp != w->timestamp ||
                            recs[i].pc.addr != spegen_expect_ip(w->pc, w->el, w->ns) || pids[i] != w->pid ||
                            tids[i] != w->tid) {
                                if (s->mismatches++ < 5 && s->gen_i < s->gen_n)
                                        printf("record %zu: ts %" PRIu64 " pid/tid %u/%u, want ts %" PRIu64
                                               " pid/tid %u/%u\n", s->gen_i, recs[i].timestamp, pids[i], tids[i],
                                               w->timestamp, w->pid, w->tid);
                        }
                }
                return;
        }
        for (size_t i = 0; i < n && s->n < ELEMENTSOF(s->r); i++)
                s->r[s->n++] = (struct got_rec) { recs[i], pids[i], tids[i] };
}

static void sink_task(void *u, const struct source_task *t) {
        struct sink *s = u;
        struct got_task *g;

        if (s->n_tasks == ELEMENTSOF(s->tasks))
                return;
        g = &s->tasks[s->n_tasks++];
        g->t = *t;
        if (t->comm) {
                snprintf(g->comm, sizeof(g->comm), "%s", t->comm);
                g->t.comm = g->comm;
        }
}

static void sink_mapping(void *u, const struct source_mapping *m) {
        struct sink *s = u;
        size_t i = s->n_maps;

        if (i == ELEMENTSOF(s->maps))
                return;
        s->maps[i] = *m;
        snprintf(s->map_names[i], sizeof(s->map_names[i]), "%s", m->filename);
        s->maps[i].filename = s->map_names[i];
        if (m->build_id) {
                memcpy(s->map_ids[i], m->build_id, MIN(m->build_id_len, sizeof(s->map_ids[i])));
                s->maps[i].build_id = s->map_ids[i];
        }
        s->n_maps++;
}

struct fixture {
        struct kernel k;
        struct spe_stream *stream;
        struct spe_stream_out *out;
        struct source_sink ss;
        struct sink *sink;
        struct task_map *tasks;
        struct spe_live_ring ring;
        struct stream_bytes *sb;
};

static void fixture_init(struct fixture *f, size_t data_size, size_t aux_size) {
        live_kernel_init(&f->k, data_size, aux_size);
        f->stream = xmalloc(sizeof(*f->stream));
        spe_stream_init(f->stream, CPU, spegen_midr(SPEGEN_MIDR_N1));
        f->sink = calloc(1, sizeof(*f->sink));
        f->sb = calloc(1, sizeof(*f->sb));
        assert_non_null(f->sink);
        assert_non_null(f->sb);
        assert_int_equal(task_map_new(&f->tasks), 0);
        f->ss = (struct source_sink) {
                .userdata = f->sink,
                .records = sink_records,
                .task = sink_task,
                .mapping = sink_mapping,
        };
        f->out = calloc(1, sizeof(*f->out));
        assert_non_null(f->out);
        f->out->sink = &f->ss;
        f->out->tasks = f->tasks;
        assert_int_equal(spe_live_ring_init(&f->ring, &f->k.page, f->k.data, f->k.data_size, f->k.aux,
                                            f->k.aux_size, &spe_attr, f->stream, f->out), 0);
}

static void fixture_done(struct fixture *f) {
        spe_live_ring_done(&f->ring);
        task_map_free(f->tasks);
        kernel_done(&f->k);
        spe_stream_done(f->stream);
        free(f->stream);
        free(f->out);
        free(f->sink);
        free(f->sb);
}

static int drain(struct fixture *f, bool *ret_truncated) {
        bool truncated = false;
        int n;

        kernel_publish(&f->k);
        n = spe_live_ring_drain(&f->ring, &truncated);
        assert_true(n >= 0);
        /* Everything released. */
        assert_int_equal(f->k.page.data_tail, f->k.data_head);
        assert_int_equal(f->k.page.aux_tail, f->k.aux_head);
        if (ret_truncated)
                *ret_truncated = truncated;
        return n;
}

/* Got record `g` the fields of truth `t`, run by the task that ran it? */
static void check_record(const struct got_rec *g, const struct truth *t, size_t i) {
        uint32_t present = SPE_REC_PC | SPE_REC_OP | SPE_REC_EVENTS | SPE_REC_LAT_TOTAL | SPE_REC_VA |
                           SPE_REC_TIMESTAMP | (t->context ? SPE_REC_CONTEXT : 0);

        if (g->rec.pc.addr != t->pc || g->rec.va != t->va || g->rec.events != t->events ||
            g->rec.timestamp != t->ts || g->rec.lat_total != t->lat || g->rec.present != present ||
            (t->context && g->rec.context != t->context) || g->rec.cpu != CPU)
                fail_msg("record %zu: pc 0x%" PRIx64 " va 0x%" PRIx64 " ts %" PRIu64 " present 0x%x, want pc 0x%" PRIx64
                         " va 0x%" PRIx64 " ts %" PRIu64 " present 0x%x", i, g->rec.pc.addr, g->rec.va,
                         g->rec.timestamp, g->rec.present, t->pc, t->va, t->ts, present);
        if (g->pid != t->pid || g->tid != t->tid)
                fail_msg("record %zu (ts %" PRIu64 "): pid/tid %u/%u, want %u/%u", i, t->ts, g->pid, g->tid, t->pid,
                         t->tid);
}

/* The sink got exactly truth records [from, to) of each range, in order. */
static void check_records(const struct fixture *f, size_t first_got, size_t from, size_t to) {
        for (size_t i = from; i < to; i++)
                check_record(&f->sink->r[first_got + i - from], &f->sb->t[i], i);
}

/* ---- 1. attribution by timed switches, no CONTEXT packets ---- */

static void test_switch_attribution(void **state) {
        /* Runs of records per task: A, B, C, A, B; each task switch between two records. */
        static const struct { uint32_t pid, tid; size_t n; } runs[] = {
                { 100, 101, 7 }, { 200, 201, 3 }, { 100, 102, 11 }, { 100, 101, 1 }, { 200, 201, 9 },
        };
        struct fixture f = {};
        size_t n = 0;

        fixture_init(&f, 8192, 4096);
        for (size_t r = 0; r < ELEMENTSOF(runs); r++)
                for (size_t i = 0; i < runs[r].n; i++)
                        add_record(f.sb, runs[r].pid, runs[r].tid, false);

        /* The data ring says first who ran when, then the one AUX chunk that spans it all. */
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, runs[0].pid, runs[0].tid);
        for (size_t r = 1; r < ELEMENTSOF(runs); r++) {
                n += runs[r - 1].n;
                kernel_switch(&f.k, between(f.sb, n - 1), runs[r - 1].pid, runs[r - 1].tid, runs[r].pid,
                              runs[r].tid);
        }
        kernel_aux_chunk(&f.k, f.sb->buf, f.sb->len, 0, true);
        assert_int_equal(drain(&f, NULL), 1 + 2 * (ELEMENTSOF(runs) - 1) + 1);

        assert_int_equal(f.sink->n, f.sb->n);
        check_records(&f, 0, 0, f.sb->n);
        assert_int_equal(f.stream->st.records, f.sb->n);
        assert_int_equal(f.stream->st.unattributed, 0);
        assert_int_equal(f.stream->n_pending, 0);
        assert_int_equal(f.stream->st.switch_overflows, 0);
        /* The switches named the pids: the task map knows them. */
        assert_int_equal(task_map_pid(f.tasks, 102), 100);
        assert_int_equal(task_map_pid(f.tasks, 201), 200);
        fixture_done(&f);
}

/*
 * A PERF_RECORD_SWITCH_CPU_WIDE too short for its body and sample_id trailer
 * (spe-live-ring.c reads switch records in place, on_switch()) is skipped,
 * as perf_record_parse_trailer() skips any record so cut: it names no task
 * and places no switch, and the records after it stay with the task that
 * ran before until a whole switch comes.
 */
static void test_switch_too_short(void **state) {
        struct { uint32_t pid, tid; } to = { 300, 301 };
        struct fixture f = {};

        fixture_init(&f, 8192, 4096);
        for (size_t i = 0; i < 6; i++)
                add_record(f.sb, 100, 101, false);
        for (size_t i = 0; i < 4; i++)
                add_record(f.sb, 200, 201, false);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        /* 16 bytes: the header and {next_prev_pid, next_prev_tid}, no trailer. */
        f.k.sample_id_all = false;
        assert_true(kernel_record_misc(&f.k, PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT, &to,
                                       sizeof(to)));
        f.k.sample_id_all = true;
        kernel_switch(&f.k, between(f.sb, 5), 100, 101, 200, 201);
        kernel_aux_chunk(&f.k, f.sb->buf, f.sb->len, 0, true);
        assert_int_equal(drain(&f, NULL), 1 + 1 + 2 + 1);

        assert_int_equal(f.sink->n, f.sb->n);
        check_records(&f, 0, 0, f.sb->n);
        assert_int_equal(f.stream->st.unattributed, 0);
        assert_int_equal(f.stream->n_pending, 0);
        assert_int_equal(task_map_pid(f.tasks, 301), TASK_MAP_NO_ID);
        assert_int_equal(task_map_pid(f.tasks, 201), 200);
        fixture_done(&f);
}

/* ---- 2. CONTEXT packets override the switches ---- */

static void test_context_overrides(void **state) {
        struct fixture f = {};
        size_t n;

        fixture_init(&f, 8192, 4096);
        /* The event started in task 100/101, but the records name threads 301 and 302 of process 300. */
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        f.k.pid = 300, f.k.tid = 301;
        kernel_comm(&f.k, 300, 301, "worker-a");
        kernel_comm(&f.k, 300, 302, "worker-b");
        for (int i = 0; i < 5; i++)
                add_record(f.sb, 300, 301, true);
        for (int i = 0; i < 5; i++)
                add_record(f.sb, 300, 302, true);
        /* A thread nobody named: its tid, no pid (counted). */
        add_record(f.sb, SOURCE_NO_ID, 999, true);
        n = f.sb->n;
        kernel_aux_chunk(&f.k, f.sb->buf, f.sb->len, 0, true);
        drain(&f, NULL);

        assert_int_equal(f.sink->n, n);
        check_records(&f, 0, 0, n);
        assert_int_equal(f.stream->st.unattributed, 1);
        assert_int_equal(task_map_pid(f.tasks, 302), 300);
        assert_int_equal(f.sink->n_tasks, 2);
        assert_int_equal(f.sink->tasks[1].t.kind, SOURCE_TASK_COMM);
        assert_string_equal(f.sink->tasks[1].comm, "worker-b");
        fixture_done(&f);
}

/* ---- 2b. the generator's records, CONTEXT packets and all, through the live ring ---- */

struct gen_run {
        struct strbuf bytes;
        struct spegen_record *truth;
        size_t n, cap;
};

static int gen_chunk(void *u, unsigned cpu, const uint8_t *data, size_t len, uint64_t offset, uint64_t time) {
        struct gen_run *g = u;

        strbuf_append(&g->bytes, data, len);
        return 0;
}

static int gen_record(void *u, const struct spegen_record *r) {
        struct gen_run *g = u;

        if (g->n == g->cap) {
                g->cap = g->cap ? 2 * g->cap : 4096;
                g->truth = xrealloc(g->truth, g->cap * sizeof(*g->truth));
        }
        g->truth[g->n++] = *r;
        return 0;
}

static void test_generator_records(void **state) {
        struct spegen_thread threads[SPEGEN_MAX_THREADS];
        struct gen_run g = { STRBUF_INIT };
        struct fixture f = {};
        struct spegen_config c;
        uint64_t rng = 0x9e3779b97f4a7c15;
        size_t n_threads, pos = 0;

        spegen_config_init(&c);
        c.seed = 5;
        c.n_records = 30000;
        c.n_cpus = 1;
        c.ts = true;
        /* Noise sometimes leaves CONTEXT out: such a record belongs to the last CONTEXT's
         * thread for the stream, to another for the generator. */
        c.scenarios = SPEGEN_SC_ALL & ~(UINT32_C(1) << SPEGEN_SC_NOISE);
        assert_int_equal(spegen_run(&c, &(struct spegen_sink) { .userdata = &g, .record = gen_record,
                                                               .chunk = gen_chunk }, NULL), 0);
        assert_int_equal(g.n, c.n_records);

        fixture_init(&f, 4096, 16384);
        f.sink->gen = g.truth;
        f.sink->gen_n = g.n;
        /* The threads' COMMs give their pid; the event started in another task. */
        n_threads = spegen_threads(c.n_cpus, threads, ELEMENTSOF(threads));
        kernel_itrace_start(&f.k, 1, 1, 1);
        for (size_t i = 0; i < n_threads; i++)
                kernel_comm(&f.k, SPEGEN_PID, threads[i].tid, threads[i].comm);
        /* Chunks of 1..3000 bytes, as the driver commits them: records cut anywhere. */
        while (pos < g.bytes.len) {
                size_t len;

                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                len = MIN(1 + (size_t) (rng % 3000), g.bytes.len - pos);
                if (f.k.aux_size - (f.k.aux_head - f.k.page.aux_tail) < len ||
                    f.k.data_size - (f.k.data_head - f.k.page.data_tail) < 128)
                        drain(&f, NULL);
                kernel_aux_chunk(&f.k, (const uint8_t *) g.bytes.buf + pos, len, 0, true);
                pos += len;
        }
        drain(&f, NULL);

        assert_int_equal(f.sink->gen_i, g.n);
        assert_int_equal(f.sink->mismatches, 0);
        assert_int_equal(f.stream->st.records, g.n);
        assert_int_equal(f.stream->st.unattributed, 0);
        assert_int_equal(f.stream->st.bytes, g.bytes.len);
        assert_int_equal(f.stream->dec.stats.flushed_records + f.stream->dec.stats.bad_header, 0);
        printf("%zu generator records in %" PRIu64 " AUX chunks: every pid, tid, PC and time as generated\n", g.n,
               f.stream->st.aux_records);
        fixture_done(&f);
        free(g.truth);
        strbuf_done(&g.bytes);
}

/* ---- 3. a record split across two AUX chunks, the second wrapping the AUX ring ---- */

static void test_split_record(void **state) {
        struct fixture f = {};
        size_t cut;

        fixture_init(&f, 4096, 1024);
        /* Start near the AUX ring's end so that the second chunk wraps. */
        f.k.aux_head = f.k.page.aux_tail = 1024 - 200;
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 10; i++)
                add_record(f.sb, 100, 101, false);
        cut = f.sb->t[4].offset + f.sb->t[4].size / 2;
        kernel_aux_chunk(&f.k, f.sb->buf, cut, 0, true);
        drain(&f, NULL);
        assert_int_equal(f.sink->n, 4);
        kernel_aux_chunk(&f.k, f.sb->buf + cut, f.sb->len - cut, 0, true);
        drain(&f, NULL);

        assert_int_equal(f.sink->n, 10);
        check_records(&f, 0, 0, 10);
        assert_int_equal(f.stream->dec.stats.flushed_records, 0);
        assert_int_equal(f.stream->st.discontinuities, 0);
        assert_int_equal(f.stream->st.aux_records, 2);
        fixture_done(&f);
}

/* ---- 4. a truncated chunk with a cut record ---- */

static void test_truncated(void **state) {
        struct fixture f = {};
        bool truncated;
        size_t cut;

        fixture_init(&f, 4096, 4096);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 12; i++)
                add_record(f.sb, 100, 101, false);
        /* Records 0-4 and 5 up to the first byte of its Events packet (after 9 bytes of PC,
         * 2 of op type): the buffer filled, the session ended (TRUNCATED). */
        cut = f.sb->t[5].offset + PKT_PC + PKT_OP + 1;
        kernel_aux_chunk(&f.k, f.sb->buf, cut, PERF_AUX_FLAG_TRUNCATED, true);
        drain(&f, &truncated);
        assert_true(truncated);
        assert_int_equal(f.sink->n, 5);
        /* The record cut after two packets and the partial third packet's byte. */
        assert_int_equal(f.stream->dec.stats.flushed_records, 1);
        assert_int_equal(f.stream->dec.stats.flushed_bytes, 1);
        assert_int_equal(f.stream->st.aux_truncated, 1);

        /* Re-enabled: a new session from record 7 on (record 6 fell while the event was off). */
        kernel_aux_chunk(&f.k, f.sb->buf + f.sb->t[7].offset, f.sb->len - f.sb->t[7].offset, 0, true);
        drain(&f, &truncated);
        assert_false(truncated);
        assert_int_equal(f.sink->n, 5 + 5);
        check_records(&f, 0, 0, 5);
        check_records(&f, 5, 7, 12);
        assert_int_equal(f.stream->dec.stats.flushed_records, 1);
        assert_int_equal(f.stream->st.aux_truncated, 1);
        assert_int_equal(f.stream->st.discontinuities, 0);
        fixture_done(&f);
}

/*
 * The time not sampled after a truncation ends at the first record after it
 * (struct spe_stream_stats.not_sampling_ns), not at the last record of the
 * chunk that brought it: 6000 ns here, where that chunk's last gave 14000
 * (a defect this test found).
 */
static void test_not_sampling_ends_at_first_record(void **state) {
        struct fixture f = {};
        size_t cut;

        fixture_init(&f, 4096, 4096);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 12; i++)
                add_record(f.sb, 100, 101, false);
        cut = f.sb->t[5].offset + PKT_PC + PKT_OP + 1;
        kernel_aux_chunk(&f.k, f.sb->buf, cut, PERF_AUX_FLAG_TRUNCATED, true);
        drain(&f, NULL);
        /* Records 7 to 11 in the chunk after the re-enable. */
        kernel_aux_chunk(&f.k, f.sb->buf + f.sb->t[7].offset, f.sb->len - f.sb->t[7].offset, 0, true);
        drain(&f, NULL);
        assert_int_equal(f.sink->n, 10);
        /* Not sampling from the last record before (4) to the first after (7): 3 x 50 ticks of 40 ns. */
        assert_int_equal(perf_ns(f.sb->t[7].ts) - perf_ns(f.sb->t[4].ts), 3 * TICKS_APART * 40);
        assert_int_equal(f.stream->st.not_sampling_ns, perf_ns(f.sb->t[7].ts) - perf_ns(f.sb->t[4].ts));
        fixture_done(&f);
}

/*
 * A session truncated before any record had a Timestamp (its only record
 * cut) has no interval to measure: nothing is counted not sampled (a
 * placeholder tick once counted the counter's whole epoch).
 */
static void test_not_sampling_without_record_before(void **state) {
        struct fixture f = {};

        fixture_init(&f, 4096, 4096);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 4; i++)
                add_record(f.sb, 100, 101, false);
        /* The first session: record 0's PC packet and a byte, truncated. */
        kernel_aux_chunk(&f.k, f.sb->buf, PKT_PC + 1, PERF_AUX_FLAG_TRUNCATED, true);
        drain(&f, NULL);
        assert_int_equal(f.sink->n, 0);
        assert_int_equal(f.stream->dec.stats.flushed_records, 1);
        kernel_aux_chunk(&f.k, f.sb->buf + f.sb->t[1].offset, f.sb->len - f.sb->t[1].offset, 0, true);
        drain(&f, NULL);
        assert_int_equal(f.sink->n, 3);
        check_records(&f, 0, 1, 4);
        assert_int_equal(f.stream->st.aux_truncated, 1);
        assert_int_equal(f.stream->st.not_sampling_ns, 0);
        fixture_done(&f);
}

/* ---- 5. a chunk whose PERF_RECORD_AUX the data ring had no room for, and data lost for good ---- */

/* Its bytes are still in the ring (unreleased): read before the next chunk, as perf reads up to aux_head. */
static void test_aux_record_lost(void **state) {
        struct fixture f = {};
        struct { uint64_t id, lost; } lost = { EVENT_ID, 3 };
        size_t a, b;

        fixture_init(&f, 4096, 4096);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 12; i++)
                add_record(f.sb, 100, 101, false);
        /* Chunk 1: records 0-3 and a byte of 4; chunk 2 (unannounced): the rest of 4 to 7; chunk 3: 8-11. */
        a = f.sb->t[4].offset + PKT_PC + 1;
        b = f.sb->t[8].offset;
        kernel_aux_chunk(&f.k, f.sb->buf, a, 0, true);
        kernel_aux_chunk(&f.k, f.sb->buf + a, b - a, 0, false);
        kernel_record_misc(&f.k, PERF_RECORD_LOST, 0, &lost, sizeof(lost));
        kernel_aux_chunk(&f.k, f.sb->buf + b, f.sb->len - b, 0, true);
        drain(&f, NULL);

        assert_int_equal(f.stream->st.lost, 3);
        assert_int_equal(f.stream->st.discontinuities, 0);
        assert_int_equal(f.sink->n, 12);
        check_records(&f, 0, 0, 4);
        /* The records read after the LOST: the lost ones may have switched the task, and no switch
         * came since to say who ran: no thread, never the one before. */
        for (size_t i = 4; i < 12; i++)
                if (f.sink->r[i].pid != SOURCE_NO_ID || f.sink->r[i].tid != SOURCE_NO_ID)
                        fail_msg("record %zu after the LOST: pid/tid %u/%u", i, f.sink->r[i].pid, f.sink->r[i].tid);
        assert_int_equal(f.stream->st.thread_unknown_lost, 8);
        assert_int_equal(f.stream->st.unattributed, 8);
        assert_int_equal(f.stream->dec.stats.flushed_records, 0);
        fixture_done(&f);
}

/*
 * The event off (a truncation, a DISABLE flush) and enabled again: a switch
 * while it was off is never reported (perf_iterate_ctx() skips an event that
 * is off). The records after the ENABLE ran in a task no record named until
 * the next switch, whose previous task names them; with no switch after
 * them, they stay unattributed, never the task of before.
 */
static void test_switch_missed_while_off(void **state) {
        struct fixture f = {};
        size_t a, b;

        fixture_init(&f, 8192, 4096);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        /* 0-3 run in 101; off; 4-6 in 102 (the switch unreported), a switch to 103; 7-9 in 103; off;
         * 10-11 in 104 (unreported, nothing after). */
        for (int i = 0; i < 12; i++)
                add_record(f.sb, 100, i < 4 ? 101 : i < 7 ? 102 : i < 10 ? 103 : 104, false);
        a = f.sb->t[4].offset;
        b = f.sb->t[10].offset;
        kernel_aux_chunk(&f.k, f.sb->buf, a, PERF_AUX_FLAG_TRUNCATED, true);
        drain(&f, NULL);
        spe_live_ring_enabled(&f.ring);
        kernel_switch(&f.k, between(f.sb, 6), 100, 102, 100, 103);
        kernel_aux_chunk(&f.k, f.sb->buf + a, b - a, PERF_AUX_FLAG_TRUNCATED, true);
        drain(&f, NULL);
        spe_live_ring_enabled(&f.ring);
        kernel_aux_chunk(&f.k, f.sb->buf + b, f.sb->len - b, 0, true);
        drain(&f, NULL);

        assert_int_equal(f.sink->n, 12);
        check_records(&f, 0, 0, 10);
        for (size_t i = 10; i < 12; i++)
                if (f.sink->r[i].pid != SOURCE_NO_ID || f.sink->r[i].tid != SOURCE_NO_ID)
                        fail_msg("record %zu after the event was off: pid/tid %u/%u", i, f.sink->r[i].pid,
                                 f.sink->r[i].tid);
        assert_int_equal(f.stream->st.thread_unknown_off, 2);
        assert_int_equal(f.stream->st.thread_unknown_lost, 0);
        assert_int_equal(f.stream->st.unattributed, 2);
        fixture_done(&f);
}

/*
 * Bytes gone for good: the next chunk starts more than a ring past the last
 * one's end (aux-ring.c's gap; a kernel that respects aux_tail never does
 * that, so the test writes the chunk itself). `at`: the next chunk's position
 * in the AUX ring.
 */
static void kernel_aux_after_loss(struct kernel *k, size_t at, const void *bytes, size_t len) {
        uint64_t off = k->aux_head + k->aux_size, body[3];

        off += (at - (off & (k->aux_size - 1))) & (k->aux_size - 1);
        ring_put(k->aux, k->aux_size, off, bytes, len);
        k->aux_head = off + len;
        body[0] = off, body[1] = len, body[2] = 0;
        kernel_record_misc(k, PERF_RECORD_AUX, 0, body, sizeof(body));
}

static void gap_lost(size_t at, bool wraps) {
        struct fixture f = {};
        size_t a, b;

        fixture_init(&f, 4096, 1024);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 20; i++)
                add_record(f.sb, 100, 101, false);
        /* Records 0-3 and a byte of 4; records 5-7 lost; 8-19 (420 bytes) after the loss. */
        a = f.sb->t[4].offset + PKT_PC + 1;
        b = f.sb->t[8].offset;
        kernel_aux_chunk(&f.k, f.sb->buf, a, 0, true);
        drain(&f, NULL);
        kernel_aux_after_loss(&f.k, at, f.sb->buf + b, f.sb->len - b);
        assert_int_equal(at + f.sb->len - b > 1024, wraps);
        drain(&f, NULL);

        assert_int_equal(f.stream->st.discontinuities, 1);
        /* Half of record 4 was waiting for its other half: dropped, counted. */
        assert_int_equal(f.stream->dec.stats.flushed_records, 1);
        assert_int_equal(f.stream->dec.stats.flushed_bytes, 1);
        assert_int_equal(f.sink->n, 4 + 12);
        check_records(&f, 0, 0, 4);
        check_records(&f, 4, 8, 20);
        fixture_done(&f);
}

static void test_gap_lost(void **state) {
        gap_lost(100, false);
}

/*
 * aux-ring.c hands a chunk that wraps the AUX ring in two pieces with the
 * same struct aux_ring_chunk, gap set on both: the gap is one discontinuity,
 * and the record that straddles the ring's end (record 9, at 999..1034) is
 * decoded whole (a second reset once dropped it).
 */
static void test_gap_lost_wrapping_chunk(void **state) {
        gap_lost(1024 - 60, true);
}

/* ---- 6. side-band records: counts, tasks, mappings ---- */

static void test_side_band(void **state) {
        static const uint8_t build_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
        struct fixture f = {};
        struct { uint64_t lost; } lost_samples = { 5 };
        struct { uint64_t time, id, stream_id; } throttle = { 1, EVENT_ID, EVENT_ID };
        struct { uint32_t pid, ppid, tid, ptid; uint64_t time; } fork = { 400, 300, 401, 301, 5000 },
                                                                 exit_ = { 400, 400, 401, 401, 6000 };
        struct {
                uint32_t pid, tid;
                uint64_t addr, len, pgoff;
                uint8_t build_id_size, r1;
                uint16_t r2;
                uint8_t build_id[20];
                uint32_t prot, flags;
                char filename[24];
        } mmap2 = { 400, 401, 0x400000, 0x2000, 0x1000, 17, 0, 0, {}, 5, 2, "/usr/bin/target" };
        const struct task_info *ti;
        uint8_t chunk[64];
        size_t len;

        memcpy(mmap2.build_id, build_id, sizeof(build_id));
        fixture_init(&f, 8192, 4096);
        f.k.pid = 300, f.k.tid = 301, f.k.time = 4000;
        kernel_comm(&f.k, 300, 301, "parent");
        f.k.time = 5000;
        kernel_record_misc(&f.k, PERF_RECORD_FORK, 0, &fork, sizeof(fork));
        f.k.pid = 400, f.k.tid = 401;
        kernel_record_misc(&f.k, PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID, &mmap2, sizeof(mmap2));
        kernel_record_misc(&f.k, PERF_RECORD_LOST_SAMPLES, 0, &lost_samples, sizeof(lost_samples));
        kernel_record_misc(&f.k, PERF_RECORD_LOST_SAMPLES, 0, &lost_samples, sizeof(lost_samples));
        kernel_record_misc(&f.k, PERF_RECORD_THROTTLE, 0, &throttle, sizeof(throttle));
        kernel_record_misc(&f.k, PERF_RECORD_THROTTLE, 0, &throttle, sizeof(throttle));
        kernel_record_misc(&f.k, PERF_RECORD_THROTTLE, 0, &throttle, sizeof(throttle));
        /* Chunks of whole records with each flag. */
        add_record(f.sb, SOURCE_NO_ID, SOURCE_NO_ID, false);
        len = f.sb->t[0].size;
        memcpy(chunk, f.sb->buf, len);
        kernel_aux_chunk(&f.k, chunk, len, PERF_AUX_FLAG_COLLISION, true);
        kernel_aux_chunk(&f.k, chunk, len, PERF_AUX_FLAG_PARTIAL, true);
        kernel_aux_chunk(&f.k, chunk, len, PERF_AUX_FLAG_PARTIAL | PERF_AUX_FLAG_COLLISION, true);
        kernel_aux_chunk(&f.k, chunk, len, 0, true);
        f.k.time = 6000;
        kernel_record_misc(&f.k, PERF_RECORD_EXIT, 0, &exit_, sizeof(exit_));
        drain(&f, NULL);

        assert_int_equal(f.stream->st.lost_samples, 10);
        assert_int_equal(f.stream->st.lost, 0);
        assert_int_equal(f.stream->st.throttles, 3);
        assert_int_equal(f.stream->st.aux_collision, 2);
        assert_int_equal(f.stream->st.aux_partial, 2);
        assert_int_equal(f.stream->st.aux_records, 4);
        assert_int_equal(f.stream->st.aux_truncated, 0);
        assert_int_equal(f.stream->st.records, 4);
        assert_int_equal(f.stream->st.unattributed, 4);

        assert_int_equal(f.sink->n_tasks, 3);
        assert_int_equal(f.sink->tasks[0].t.kind, SOURCE_TASK_COMM);
        assert_int_equal(f.sink->tasks[0].t.pid, 300);
        assert_int_equal(f.sink->tasks[0].t.tid, 301);
        assert_int_equal(f.sink->tasks[0].t.time_ns, 4000);
        assert_string_equal(f.sink->tasks[0].comm, "parent");
        assert_int_equal(f.sink->tasks[1].t.kind, SOURCE_TASK_FORK);
        assert_int_equal(f.sink->tasks[1].t.pid, 400);
        assert_int_equal(f.sink->tasks[1].t.tid, 401);
        assert_int_equal(f.sink->tasks[1].t.ppid, 300);
        assert_int_equal(f.sink->tasks[1].t.ptid, 301);
        assert_int_equal(f.sink->tasks[1].t.time_ns, 5000);
        assert_int_equal(f.sink->tasks[2].t.kind, SOURCE_TASK_EXIT);
        assert_int_equal(f.sink->tasks[2].t.tid, 401);
        assert_int_equal(f.sink->tasks[2].t.time_ns, 6000);
        /* The task map took the COMM and the FORK. */
        ti = task_map_get(f.tasks, 301);
        assert_non_null(ti);
        assert_int_equal(ti->pid, 300);
        assert_int_equal(task_map_pid(f.tasks, 401), 400);

        assert_int_equal(f.sink->n_maps, 1);
        assert_int_equal(f.sink->maps[0].pid, 400);
        assert_int_equal(f.sink->maps[0].start, 0x400000);
        assert_int_equal(f.sink->maps[0].len, 0x2000);
        assert_int_equal(f.sink->maps[0].pgoff, 0x1000);
        assert_string_equal(f.sink->maps[0].filename, "/usr/bin/target");
        assert_non_null(f.sink->maps[0].build_id);
        assert_int_equal(f.sink->maps[0].build_id_len, 17);
        assert_memory_equal(f.sink->maps[0].build_id, build_id, 17);
        fixture_done(&f);
}

/* ---- 7. the counters survive a reopened event ---- */

static void test_reinit(void **state) {
        struct fixture f = {};
        struct kernel k2;
        size_t half;

        fixture_init(&f, 4096, 4096);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 8; i++)
                add_record(f.sb, 100, 101, false);
        half = f.sb->t[4].offset;
        /* Records 0-3 and the PC packet and a byte of record 4, truncated. */
        kernel_aux_chunk(&f.k, f.sb->buf, half + PKT_PC + 1, PERF_AUX_FLAG_TRUNCATED, true);
        drain(&f, NULL);
        assert_int_equal(f.stream->st.records, 4);
        assert_int_equal(f.stream->st.aux_truncated, 1);

        /* The event is closed and opened again on the same CPU: new rings, the same stream. */
        spe_live_ring_done(&f.ring);
        live_kernel_init(&k2, 4096, 4096);
        assert_int_equal(spe_live_ring_init(&f.ring, &k2.page, k2.data, k2.data_size, k2.aux, k2.aux_size,
                                            &spe_attr, f.stream, f.out), 0);
        kernel_itrace_start(&k2, perf_ns(FIRST_TS) - 1000, 100, 101);
        kernel_aux_chunk(&k2, f.sb->buf + half, f.sb->len - half, PERF_AUX_FLAG_TRUNCATED, true);
        kernel_publish(&k2);
        assert_true(spe_live_ring_drain(&f.ring, NULL) >= 0);
        assert_int_equal(k2.page.data_tail, k2.data_head);

        assert_int_equal(f.stream->st.records, 8);
        assert_int_equal(f.stream->st.aux_records, 2);
        assert_int_equal(f.stream->st.aux_truncated, 2);
        assert_int_equal(f.stream->st.discontinuities, 0);
        assert_int_equal(f.stream->dec.stats.flushed_records, 1);
        assert_int_equal(f.sink->n, 8);
        check_records(&f, 0, 0, 8);
        spe_live_ring_done(&f.ring);
        /* fixture_done() finishes the ring again: done twice is harmless (freed scratch is NULL). */
        kernel_done(&k2);
        fixture_done(&f);
}

/* ---- 8. more switches pending than the log holds ---- */

#define MANY_SWITCHES (SPE_STREAM_SWITCHES_MAX + 88)

static void test_switch_overflow(void **state) {
        struct fixture f = {};
        uint64_t t0;

        fixture_init(&f, 512 * 1024, 4096);
        for (int i = 0; i < 4; i++)
                add_record(f.sb, 500, 500 + MANY_SWITCHES - 1, false);
        /* Every switch happens before the first record: the last one runs them all. */
        t0 = perf_ns(FIRST_TS) - 10 * MANY_SWITCHES;
        kernel_itrace_start(&f.k, t0, 500, 500);
        for (uint32_t i = 1; i < MANY_SWITCHES; i++) {
                struct { uint32_t pid, tid; } prev = { 500, 500 + i - 1 };

                f.k.time = t0 + 10 * i;
                f.k.pid = 500, f.k.tid = 500 + i;
                kernel_record_misc(&f.k, PERF_RECORD_SWITCH_CPU_WIDE, 0, &prev, sizeof(prev));
        }
        kernel_aux_chunk(&f.k, f.sb->buf, f.sb->len, 0, true);
        drain(&f, NULL);
        /* MANY_SWITCHES timed switches (ITRACE_START included) through a log of at most SPE_STREAM_SWITCHES_MAX. */
        assert_int_equal(f.stream->st.switch_overflows, MANY_SWITCHES - SPE_STREAM_SWITCHES_MAX);
        assert_int_equal(f.sink->n, 4);
        check_records(&f, 0, 0, 4);
        assert_int_equal(f.stream->n_pending, 0);
        fixture_done(&f);
}

/*
 * Timed switches wait in the stream's log for records to reach their time;
 * when the user page stops offering the time conversion (cap_user_time_zero
 * cleared, or spe_live_ring_done() before a reopened event's first drain)
 * the stream has no clock, and the pending switches apply at once, as
 * spe_stream_switch_at() does for new ones (they once dereferenced the
 * missing clock).
 */
static void test_clock_gone_with_switches_pending(void **state) {
        struct fixture f = {};

        fixture_init(&f, 4096, 4096);
        for (int i = 0; i < 6; i++)
                add_record(f.sb, i < 3 ? 100 : 200, i < 3 ? 101 : 201, false);
        kernel_itrace_start(&f.k, perf_ns(FIRST_TS) - 1000, 100, 101);
        kernel_switch(&f.k, between(f.sb, 2), 100, 101, 200, 201);
        drain(&f, NULL);
        assert_int_equal(f.stream->n_pending, 3);
        /* The next drain finds no time conversion in the user page. */
        f.k.page.cap_user_time_zero = 0;
        kernel_aux_chunk(&f.k, f.sb->buf, f.sb->len, 0, true);
        drain(&f, NULL);
        assert_int_equal(f.sink->n, 6);
        assert_int_equal(f.stream->n_pending, 0);
        /* Every switch applied: the last task runs the last records. */
        check_records(&f, 3, 3, 6);
        fixture_done(&f);
}

/* ---- the fuzz target's seeds ---- */

/* tests/spe/fuzz-spe-live-ring.c's input: an 8-byte header, the data ring, the AUX ring. */
static int write_seed(const char *dir, const char *name, const struct kernel *k, uint8_t flags, uint64_t split) {
        char path[4096];
        uint8_t hdr[8] = {};
        FILE *fp;

        /* data_size = 128 << hdr[0], aux_size = 128 << hdr[1]. */
        hdr[0] = (uint8_t) (__builtin_ctzll(k->data_size) - 7);
        hdr[1] = (uint8_t) (__builtin_ctzll(k->aux_size) - 7);
        hdr[2] = flags;
        hdr[3] = 0;                                     /* data_tail starts at 0 */
        hdr[4] = (uint8_t) k->data_head, hdr[5] = (uint8_t) (k->data_head >> 8);
        hdr[6] = (uint8_t) (split / 8);                 /* a first drain up to there, 0: none */
        hdr[7] = TIME_SHIFT;                            /* the fuzzer's clock is then this test's */
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fp = fopen(path, "we");
        if (!fp)
                return -errno;
        fwrite(hdr, 1, sizeof(hdr), fp);
        fwrite(k->data, 1, k->data_size, fp);
        fwrite(k->aux, 1, k->aux_size, fp);
        return fclose(fp) == 0 ? 0 : -errno;
}

static int write_seeds(const char *dir) {
        struct stream_bytes *sb = calloc(1, sizeof(*sb));
        struct kernel k;
        uint64_t split;
        int r = 0;

        if (!sb)
                return -ENOMEM;
        /* Switches before a chunk of records, no CONTEXT. */
        live_kernel_init(&k, 1024, 1024);
        kernel_itrace_start(&k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 6; i++)
                add_record(sb, i < 3 ? 100 : 200, i < 3 ? 101 : 201, false);
        kernel_switch(&k, between(sb, 2), 100, 101, 200, 201);
        kernel_comm(&k, 200, 201, "seed");
        split = k.data_head;
        kernel_aux_chunk(&k, sb->buf, sb->len, 0, true);
        r = r ?: write_seed(dir, "switches", &k, 0x3, 0);
        /* The same, drained twice, the event reopened between. */
        r = r ?: write_seed(dir, "switches-reopened", &k, 0x3 | 0x8, split);
        /* The same, drained twice, the user page's time conversion gone between (a crash until
         * spe-stream.c applies pending switches without a clock). */
        r = r ?: write_seed(dir, "switches-clock-gone", &k, 0x3 | 0x4, split);
        kernel_free(&k);

        /* A record split over two chunks, a truncation, a lost AUX record, CONTEXT packets. */
        memset(sb, 0, sizeof(*sb));
        live_kernel_init(&k, 1024, 2048);
        kernel_itrace_start(&k, perf_ns(FIRST_TS) - 1000, 100, 101);
        for (int i = 0; i < 12; i++)
                add_record(sb, 300, 301, true);
        kernel_aux_chunk(&k, sb->buf, sb->t[2].offset + 5, 0, true);
        split = k.data_head;
        kernel_aux_chunk(&k, sb->buf + sb->t[2].offset + 5, sb->t[5].offset + 3 - (sb->t[2].offset + 5),
                   PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL, true);
        kernel_aux_chunk(&k, sb->buf + sb->t[6].offset, sb->t[8].offset - sb->t[6].offset, 0, false);
        kernel_record_misc(&k, PERF_RECORD_LOST, 0, &(uint64_t[2]) { EVENT_ID, 1 }, 16);
        kernel_aux_chunk(&k, sb->buf + sb->t[8].offset, sb->len - sb->t[8].offset, PERF_AUX_FLAG_COLLISION, true);
        r = r ?: write_seed(dir, "split-truncated-gap", &k, 0x3, split);
        kernel_free(&k);
        free(sb);
        return r;
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_switch_attribution),
                cmocka_unit_test(test_switch_too_short),
                cmocka_unit_test(test_context_overrides),
                cmocka_unit_test(test_generator_records),
                cmocka_unit_test(test_split_record),
                cmocka_unit_test(test_truncated),
                cmocka_unit_test(test_aux_record_lost),
                cmocka_unit_test(test_switch_missed_while_off),
                cmocka_unit_test(test_gap_lost),
                cmocka_unit_test(test_gap_lost_wrapping_chunk),
                cmocka_unit_test(test_side_band),
                cmocka_unit_test(test_reinit),
                cmocka_unit_test(test_switch_overflow),
                cmocka_unit_test(test_not_sampling_ends_at_first_record),
                cmocka_unit_test(test_not_sampling_without_record_before),
                cmocka_unit_test(test_clock_gone_with_switches_pending),
        };

        if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
                int r = write_seeds(argv[2]);

                if (r < 0)
                        fprintf(stderr, "writing seeds to %s: %s\n", argv[2], strerror(-r));
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
