/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The kernel's side of a live perf event's rings, played on ordinary memory
 * for the tests of their readers (tests/perf/test-aux-ring.c,
 * tests/spe/test-spe-live-ring.c): the producer side of struct
 * perf_event_mmap_page's protocol as the kernel and the SPE driver follow it
 * (perf_event_open(2) "MMAP layout", kernel/events/ring_buffer.c
 * perf_output_begin/perf_aux_output_begin, drivers/perf/arm_spe_pmu.c):
 *
 *  - AUX bytes go to aux_head modulo the ring, never past aux_tail + size:
 *    what does not fit is cut and the chunk flagged TRUNCATED, after which
 *    the event stays disabled until the reader re-enables it;
 *  - each chunk is announced by a PERF_RECORD_AUX in the data ring; when the
 *    data ring is full the record is dropped and counted, and a
 *    PERF_RECORD_LOST with that count goes out as soon as there is room;
 *  - with sample_id_all, every record but a sample ends in a sample_id
 *    trailer (kernel/events/core.c perf_event__output_id_sample()), here
 *    for sample_type TID|TIME|CPU|IDENTIFIER as collectors/pmu/spe-pmu.c
 *    opens its events: {pid, tid} time {cpu, res} identifier;
 *  - records are written, then data_head is published with release order;
 *    the reader's tails are read with acquire order.
 *
 * No asserts (this may run on a producer thread, where cmocka's longjmp
 * cannot): the test's own misuse is left in `bug` for the test to assert on.
 */

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h" /* xmalloc() */

struct kernel {
        struct perf_event_mmap_page page;
        uint8_t *data, *aux;
        size_t data_size, aux_size;
        uint64_t data_head, aux_head;   /* the kernel's own positions */
        uint64_t pending_lost;          /* records dropped for want of room */
        bool disabled;                  /* after a truncation, until re-enabled */
        uint64_t dropped_aux_records;
        const char *bug;                /* the test's own misuse */
        /* sample_id_all: the trailer of the next records, the task current when the kernel writes them. */
        bool sample_id_all;
        uint32_t pid, tid, cpu;
        uint64_t time, id;
};

static inline void kernel_init(struct kernel *k, size_t data_size, size_t aux_size) {
        *k = (struct kernel) { .data_size = data_size, .aux_size = aux_size };
        k->data = xmalloc(data_size);
        k->aux = xmalloc(aux_size);
        /* Garbage where nothing was written yet: the reader must never look there. */
        memset(k->data, 0xa5, data_size);
        memset(k->aux, 0x5a, aux_size);
}

static inline void kernel_free(struct kernel *k) {
        free(k->data);
        free(k->aux);
        k->data = k->aux = NULL;
}

static inline void ring_put(uint8_t *ring, size_t size, uint64_t pos, const void *src, size_t n) {
        size_t off = (size_t) (pos & (size - 1)), first = MIN(n, size - off);

        memcpy(ring + off, src, first);
        memcpy(ring, (const uint8_t *) src + first, n - first);
}

/* One record into the data ring, as perf_output_begin(): no room, no record (counted). */
static inline bool kernel_record_raw(struct kernel *k, const void *rec, size_t len) {
        uint64_t tail = __atomic_load_n(&k->page.data_tail, __ATOMIC_ACQUIRE);

        if (k->data_size - (k->data_head - tail) < len)
                return false;
        ring_put(k->data, k->data_size, k->data_head, rec, len);
        k->data_head += len;
        return true;
}

static inline void kernel_publish(struct kernel *k) {
        __atomic_store_n(&k->page.aux_head, k->aux_head, __ATOMIC_RELEASE);
        __atomic_store_n(&k->page.data_head, k->data_head, __ATOMIC_RELEASE);
}

/* header, body, and the sample_id trailer when sample_id_all; false when it did not fit. */
static inline bool kernel_put_record(struct kernel *k, uint32_t type, uint16_t misc, const void *body, size_t len) {
        struct {
                uint32_t pid, tid;
                uint64_t time;
                uint32_t cpu, res;
                uint64_t id;
        } sid = { k->pid, k->tid, k->time, k->cpu, 0, k->id };
        size_t tlen = k->sample_id_all ? sizeof(sid) : 0;
        struct perf_event_header h = { type, misc, (uint16_t) (sizeof(h) + len + tlen) };
        uint8_t rec[512];

        if (sizeof(h) + len + tlen > sizeof(rec)) {
                k->bug = "kernel_record: record larger than its buffer";
                return false;
        }
        memcpy(rec, &h, sizeof(h));
        memcpy(rec + sizeof(h), body, len);
        memcpy(rec + sizeof(h) + len, &sid, tlen);
        return kernel_record_raw(k, rec, h.size);
}

/* A record, after the LOST record owed for those dropped before it. */
static inline bool kernel_record_misc(struct kernel *k, uint32_t type, uint16_t misc, const void *body, size_t len) {
        if (k->pending_lost) {
                struct {
                        uint64_t id, lost;
                } lost = { 1, k->pending_lost };

                if (!kernel_put_record(k, PERF_RECORD_LOST, 0, &lost, sizeof(lost))) {
                        k->pending_lost++; /* this record is lost too */
                        return false;
                }
                k->pending_lost = 0;
        }
        if (kernel_put_record(k, type, misc, body, len))
                return true;
        k->pending_lost++;
        return false;
}

static inline bool kernel_record(struct kernel *k, uint32_t type, const void *body, size_t len) {
        return kernel_record_misc(k, type, 0, body, len);
}

/* Bytes at aux_head, their PERF_RECORD_AUX with `flags` unless `announce` is false (a lost record). */
static inline bool kernel_aux_chunk(struct kernel *k, const void *bytes, size_t len, uint64_t flags, bool announce) {
        uint64_t tail = __atomic_load_n(&k->page.aux_tail, __ATOMIC_ACQUIRE);
        struct {
                uint64_t aux_offset, aux_size, flags;
        } body = { k->aux_head, len, flags };

        if (k->aux_size - MIN(k->aux_size, k->aux_head - tail) < len) {
                k->bug = "kernel_aux_chunk: no room in the AUX ring";
                return false;
        }
        ring_put(k->aux, k->aux_size, k->aux_head, bytes, len);
        k->aux_head += len;
        if (!announce)
                return true;
        if (!kernel_record(k, PERF_RECORD_AUX, &body, sizeof(body))) {
                k->dropped_aux_records++;
                return false;
        }
        return true;
}

/*
 * A chunk of trace: what fits before aux_tail goes in, the rest is cut
 * (TRUNCATED, and the event is off); then its PERF_RECORD_AUX. Returns the
 * bytes written. skip: bytes the driver skipped before this chunk, zeros
 * (arm_spe_pmu_pad_buf(): aux_head moves over them with no PERF_RECORD_AUX);
 * the chunk is flagged PARTIAL, as a fault would.
 */
static inline size_t kernel_aux(struct kernel *k, const uint8_t *bytes, size_t len, size_t skip,
                                uint64_t *ret_offset) {
        uint64_t tail = __atomic_load_n(&k->page.aux_tail, __ATOMIC_ACQUIRE), flags = 0;
        uint64_t room, n;
        struct {
                uint64_t aux_offset, aux_size, flags;
        } body;

        if (k->disabled)
                return 0;
        if (skip) {
                static const uint8_t zeros[64];

                ring_put(k->aux, k->aux_size, k->aux_head, zeros, MIN(skip, sizeof(zeros)));
                k->aux_head += skip;
                flags |= PERF_AUX_FLAG_PARTIAL;
        }
        room = k->aux_size - MIN(k->aux_size, k->aux_head - tail);
        n = MIN((uint64_t) len, room);
        if (n < len) {
                flags |= PERF_AUX_FLAG_TRUNCATED;
                k->disabled = true;
        }
        ring_put(k->aux, k->aux_size, k->aux_head, bytes, (size_t) n);
        body = (typeof(body)) { k->aux_head, n, flags };
        if (ret_offset)
                *ret_offset = k->aux_head;
        k->aux_head += n;
        if (!kernel_record(k, PERF_RECORD_AUX, &body, sizeof(body)))
                k->dropped_aux_records++;
        return (size_t) n;
}
