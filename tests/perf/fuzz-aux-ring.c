/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as the kernel's side of a live SPE
 * event's rings (collectors/perf/aux-ring.c). The input's first bytes pick
 * the ring sizes and how far data_head runs ahead; the rest fills the data
 * ring (records, PERF_RECORD_AUX offsets and sizes of any value) and the
 * AUX ring. The consumer reads every byte it is handed, so ASan sees any
 * read outside the rings; the tails must never pass what was published.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aux-ring.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER_BYTES 4

static volatile uint64_t sink;

static void touch(const uint8_t *p, size_t n) {
        uint64_t h = 0;

        for (size_t i = 0; i < n; i++)
                h = h * 31 + p[i];
        sink += h;
}

static int on_aux(void *u, const struct aux_ring_chunk *c, const uint8_t *p, size_t len, bool last) {
        touch(p, len);
        return 0;
}

static int on_record(void *u, const uint8_t *rec, size_t len) {
        touch(rec, len);
        return 0;
}

static const struct perf_event_attr sid_attr = {
        .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER,
        .sample_id_all = 1,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const struct aux_ring_ops ops = { .aux = on_aux, .record = on_record };
        struct perf_event_mmap_page page = {};
        size_t data_size, aux_size, fill;
        uint8_t *dring, *aring;
        struct aux_ring r;
        uint64_t start;

        if (size < HEADER_BYTES)
                return 0;
        data_size = (size_t) 64 << (data[0] % 7);       /* 64 .. 4096 */
        aux_size = (size_t) 64 << (data[1] % 9);        /* 64 .. 16384 */
        start = (uint64_t) data[2] * 8;                 /* where the tail starts: wraps early */
        dring = calloc(1, data_size);
        aring = calloc(1, aux_size);
        fill = MIN(size - HEADER_BYTES, data_size);
        memcpy(dring, data + HEADER_BYTES, fill);
        if (size - HEADER_BYTES > fill)
                memcpy(aring, data + HEADER_BYTES + fill, MIN(size - HEADER_BYTES - fill, aux_size));
        page.data_tail = start;
        page.data_head = start + (data[3] & 1 ? fill : (uint64_t) data[3] * 97); /* sometimes beyond the ring */

        if (aux_ring_init(&r, &page, dring, data_size, aring, aux_size) == 0) {
                /* Sometimes the event has sample_id_all: AUX and LOST records then end in a trailer. */
                if (data[3] & 2)
                        aux_ring_set_attr(&r, &sid_attr);
                (void) aux_ring_drain(&r, &ops, NULL, NULL);
                if (page.data_tail != page.data_head)
                        abort();
                aux_ring_done(&r);
        }
        free(dring);
        free(aring);
        return 0;
}
