/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as the kernel's side of a live SPE
 * event's rings, read by collectors/spe/spe-live-ring.c into a real
 * spe_stream, spe_stream_out and task map (tests/perf/fuzz-aux-ring.c
 * fuzzes the bare ring reader). The input:
 *
 *   [0] data ring of 128 << ([0] % 6) bytes, [1] AUX ring of 128 << ([1] % 8);
 *   [2] flags: 1 cap_user_time_zero, 2 sample_id_all (as spe-pmu.c opens
 *       the event), 4 cap_user_time_zero flips before the second drain,
 *       8 the event is reopened (ring re-initialised on the same stream)
 *       before it, 16 cap_user_time_short;
 *   [3] data_tail starts at [3] * 8 (wraps early);
 *   [4..5] data_head - data_tail, little-endian (may exceed the ring);
 *   [6] a first drain up to [6] * 8 bytes, 0: one drain only;
 *   [7] time_shift ([7] % 70: 64 and more mean no conversion);
 *   then the data ring's bytes, then the AUX ring's.
 *
 * The sink reads every byte it is handed (records, pids, tids, comm
 * strings, file names, build ids), so ASan sees any read outside them; the
 * data tail must reach the head after every drain.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "spe-live-ring.h"
#include "spe-stream.h"
#include "task-map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER_BYTES 8

static volatile uint64_t sink_hash;

static void touch(const void *p, size_t n) {
        const uint8_t *b = p;
        uint64_t h = 0;

        for (size_t i = 0; i < n; i++)
                h = h * 31 + b[i];
        sink_hash += h;
}

static void on_records(void *u, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                       size_t n) {
        touch(recs, n * sizeof(*recs));
        touch(pids, n * sizeof(*pids));
        touch(tids, n * sizeof(*tids));
}

static void on_task(void *u, const struct source_task *t) {
        touch(t, sizeof(*t));
        if (t->comm)
                touch(t->comm, strlen(t->comm));
}

static void on_mapping(void *u, const struct source_mapping *m) {
        touch(m, sizeof(*m));
        if (m->filename)
                touch(m->filename, strlen(m->filename));
        if (m->build_id)
                touch(m->build_id, m->build_id_len);
}

static const struct source_sink sink = {
        .records = on_records,
        .task = on_task,
        .mapping = on_mapping,
};

static const struct perf_event_attr attr_sid = {
        .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
        .sample_id_all = 1,
};

static const struct perf_event_attr attr_plain = {
        .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
};

static void drain_to(struct spe_live_ring *r, struct perf_event_mmap_page *page, uint64_t head) {
        bool truncated;

        page->data_head = head;
        (void) spe_live_ring_drain(r, &truncated);
        if (page->data_tail != page->data_head)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct perf_event_mmap_page page = {};
        const struct perf_event_attr *attr;
        struct spe_stream_out *out = NULL;
        struct spe_stream *stream = NULL;
        struct task_map *tasks = NULL;
        struct spe_live_ring r;
        size_t data_size, aux_size, fill;
        uint8_t *dring = NULL, *aring = NULL, flags;
        uint64_t start, len, split;

        if (size < HEADER_BYTES)
                return 0;
        data_size = (size_t) 128 << (data[0] % 6);
        aux_size = (size_t) 128 << (data[1] % 8);
        flags = data[2];
        start = (uint64_t) data[3] * 8;
        len = (uint64_t) data[4] | (uint64_t) data[5] << 8;
        split = (uint64_t) data[6] * 8;
        attr = flags & 2 ? &attr_sid : &attr_plain;

        dring = calloc(1, data_size);
        aring = calloc(1, aux_size);
        stream = calloc(1, sizeof(*stream));  /* spe_stream_done() on it is safe before init */
        out = calloc(1, sizeof(*out));
        if (!dring || !aring || !stream || !out || task_map_new(&tasks) < 0)
                goto finish;
        fill = MIN(size - HEADER_BYTES, data_size);
        memcpy(dring, data + HEADER_BYTES, fill);
        if (size - HEADER_BYTES > fill)
                memcpy(aring, data + HEADER_BYTES + fill, MIN(size - HEADER_BYTES - fill, aux_size));

        /* A 25 MHz counter's conversion (40 ns a tick, as test-spe-live-ring.c's with a shift of 24), the
         * shift from the input. */
        page.cap_user_time_zero = flags & 1;
        page.cap_user_time_short = !!(flags & 16);
        page.time_shift = (uint16_t) (data[7] % 70);
        page.time_mult = page.time_shift < 26 ? (40U << page.time_shift) + 12345 : UINT32_MAX;
        page.time_zero = 987654321;
        page.time_cycles = 12345;
        page.time_mask = 0xffffff;
        page.data_tail = start;

        spe_stream_init(stream, 0, 0);
        out->sink = &sink;
        out->tasks = tasks;
        if (spe_live_ring_init(&r, &page, dring, data_size, aring, aux_size, attr, stream, out) < 0)
                goto finish;
        if (split > 0 && split < len)
                drain_to(&r, &page, start + split);
        if (flags & 4)
                page.cap_user_time_zero = !page.cap_user_time_zero;
        if (flags & 8) {
                /* A reopened event: new rings (here the same memory), the CPU's stream kept. */
                spe_live_ring_done(&r);
                if (spe_live_ring_init(&r, &page, dring, data_size, aring, aux_size, attr, stream, out) < 0)
                        goto finish;
        }
        drain_to(&r, &page, start + len);
        spe_live_ring_done(&r);
finish:
        if (stream)
                spe_stream_done(stream);
        task_map_free(tasks);
        free(out);
        free(stream);
        free(dring);
        free(aring);
        return 0;
}
