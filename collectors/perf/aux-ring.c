/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "aux-ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "perf-record.h"
#include "strbuf.h"

/* The flag bits the kernel defines; PERF_AUX_FLAG_PMU_FORMAT_TYPE_MASK is the PMU's own. */
#define AUX_FLAGS_KNOWN (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_PARTIAL | \
                         PERF_AUX_FLAG_COLLISION)

static bool is_pow2(size_t n) {
        return n > 0 && (n & (n - 1)) == 0;
}

int aux_ring_init(struct aux_ring *ring, struct perf_event_mmap_page *page, const void *data, size_t data_size,
                  const void *aux, size_t aux_size) {
        if (!ring || !page || !data || !is_pow2(data_size) || (aux ? !is_pow2(aux_size) : aux_size != 0))
                return -EINVAL;
        *ring = (struct aux_ring) {
                .page = page,
                .data = data,
                .data_size = data_size,
                .aux = aux,
                .aux_size = aux_size,
                .scratch_size = MIN(data_size, (size_t) AUX_RING_RECORD_MAX),
                /* Where the reader stands: the first chunk may follow bytes nothing announced. */
                .aux_next = aux ? page->aux_tail : 0,
                .aux_started = aux != NULL,
                .full_slack = aux_size / 16,
        };
        ring->scratch = xmalloc(ring->scratch_size);
        return 0;
}

void aux_ring_set_attr(struct aux_ring *ring, const struct perf_event_attr *attr) {
        ring->attr = attr;
}

void aux_ring_set_full_slack(struct aux_ring *ring, size_t bytes) {
        ring->full_slack = MIN(bytes, ring->aux_size / 2);
}

void aux_ring_done(struct aux_ring *ring) {
        if (!ring)
                return;
        free(ring->scratch);
        ring->scratch = NULL;
}

/* n bytes of the data ring from free-running position pos, across its end if need be. */
static void ring_copy(const struct aux_ring *ring, uint64_t pos, void *dst, size_t n) {
        size_t off = (size_t) (pos & (ring->data_size - 1)), first = MIN(n, ring->data_size - off);

        memcpy(dst, ring->data + off, first);
        memcpy((uint8_t *) dst + first, ring->data, n - first);
}

/* The record at pos, contiguous: in the ring itself, or copied to scratch when it wraps. */
static const uint8_t *record_at(struct aux_ring *ring, uint64_t pos, size_t size) {
        size_t off = (size_t) (pos & (ring->data_size - 1));

        if (off + size <= ring->data_size)
                return ring->data + off;
        ring_copy(ring, pos, ring->scratch, size);
        return ring->scratch;
}

/* len bytes of the AUX ring from free-running position pos, in one piece or two when they wrap. */
static int deliver_bytes(struct aux_ring *ring, const struct aux_ring_chunk *c, uint64_t pos, size_t len,
                         const struct aux_ring_ops *ops, void *userdata) {
        size_t off = (size_t) (pos & (ring->aux_size - 1)), first = MIN(len, ring->aux_size - off);
        int k;

        /* A chunk without bytes still carries its flags (a truncation with nothing written). */
        k = ops->aux(userdata, c, ring->aux + off, first, first == len);
        if (k < 0 || first == len)
                return k;
        return ops->aux(userdata, c, ring->aux, len - first, true);
}

/* Whether len bytes of the AUX ring from pos are all 0x00: the driver's padding (arm_spe_pmu_pad_buf()). */
static bool all_padding(const struct aux_ring *ring, uint64_t pos, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (ring->aux[(size_t) ((pos + i) & (ring->aux_size - 1))] != 0)
                        return false;
        return true;
}

static int deliver_aux(struct aux_ring *ring, const struct perf_data_aux *b, const struct aux_ring_ops *ops,
                       void *userdata) {
        struct aux_ring_chunk c = {
                .aux_offset = b->aux_offset,
                .flags = b->flags & AUX_FLAGS_KNOWN,
                .sid = b->rec.sid,
        };
        uint64_t fill = 0, fill_from = ring->aux_next, from = b->aux_offset, end = b->aux_offset + b->aux_size;
        int k;

        if (ring->aux_started && b->aux_offset < ring->aux_next) {
                /* Its bytes went out already, read up to aux_head after a loss (aux_ring_drain()):
                 * only the part past them, or just its flags. */
                c.late = true;
                from = MIN(MAX(from, ring->aux_next), end);
        } else if (ring->aux_started && b->aux_offset != ring->aux_next) {
                ring->stats.aux_gaps++;
                ring->stats.aux_gap_bytes += b->aux_offset - ring->aux_next;
                /*
                 * Bytes the kernel moved aux_head over without a PERF_RECORD_AUX:
                 * the driver's padding (arm_spe_pmu_pad_buf() ->
                 * perf_aux_output_skip()) or a chunk whose record the data ring
                 * had no room for (then a PERF_RECORD_LOST). Not released yet
                 * (aux_tail is aux_next) and in the ring with this chunk: read
                 * them, as perf reads everything up to aux_head. Otherwise the
                 * bytes are gone, and the chunk says so.
                 */
                if (b->aux_offset - ring->aux_next <= ring->aux_size - b->aux_size)
                        fill = b->aux_offset - ring->aux_next;
                else {
                        c.gap = true;
                        ring->stats.aux_gaps_lost++;
                }
        }
        ring->aux_started = true;
        ring->aux_next = MAX(ring->aux_next, end);
        ring->stats.aux_records++;
        ring->stats.aux_bytes += end - from + fill;
        ring->stats.truncated += !!(c.flags & PERF_AUX_FLAG_TRUNCATED);
        ring->stats.partial += !!(c.flags & PERF_AUX_FLAG_PARTIAL);
        ring->stats.collision += !!(c.flags & PERF_AUX_FLAG_COLLISION);
        ring->stats.overwrite += !!(c.flags & PERF_AUX_FLAG_OVERWRITE);

        if (!ops || !ops->aux)
                return 0;
        if (fill > 0) {
                k = deliver_bytes(ring, &(struct aux_ring_chunk) { .aux_offset = fill_from, .fill = true,
                                                                    .sid = b->rec.sid },
                                  fill_from, (size_t) fill, ops, userdata);
                if (k < 0)
                        return k;
        }
        return deliver_bytes(ring, &c, from, (size_t) (end - from), ops, userdata);
}

/*
 * After a loss, everything up to aux_head: the PERF_RECORD_AUX of those
 * bytes may never come (the data ring had no room for it, and a stopped
 * event writes nothing that would carry the PERF_RECORD_LOST), and the
 * area would stay full for good. Also when two drains in a row found no
 * PERF_RECORD_AUX and the area nearly full of bytes nothing announced, up
 * to the same aux_head: the kernel stopped there. One drain is not enough:
 * perf_aux_output_end() publishes the chunk's PERF_RECORD_AUX, then
 * aux_head, and a drain that read data_head before the one and aux_head
 * after the other sees the chunk unannounced; read then, a PARTIAL flag
 * on its way would come too late to drop the cut record. (Not on every
 * drain, as perf does: a chunk's records come after the switches that
 * happened during it, and attribution wants that order.) A record that
 * announces them later is late: its flags count, its bytes are not read
 * twice.
 */
static int deliver_unannounced(struct aux_ring *ring, uint64_t data_head, bool lost, bool announced,
                               const struct aux_ring_ops *ops, void *userdata) {
        uint64_t now = __atomic_load_n(&ring->page->aux_head, __ATOMIC_ACQUIRE), from, n;
        bool deferred = ring->lost_unread;
        /*
         * Bytes the drain before left for this one: up to the aux_head it saw, whose
         * records were published before it and are read now. Not beyond: that would defer
         * again whenever data_head moved meanwhile, and on a busy CPU it always does.
         */
        uint64_t head = deferred && !ring->stopped ? ring->lost_head : now;

        ring->lost_unread = false;
        /* A loss since: its bytes after those wait for the next drain. */
        if (deferred && lost && now != head) {
                ring->lost_unread = true;
                ring->lost_head = now;
        }
        from = ring->aux_started ? ring->aux_next : __atomic_load_n(&ring->page->aux_tail, __ATOMIC_RELAXED);
        n = head - from;
        if (head <= from || n > ring->aux_size)
                return 0;
        /*
         * Stopped, no loss known: what nothing announced is the driver's padding
         * (perf_aux_output_skip() moves aux_head with no record; the next chunk's gap
         * covers it), or records whose PERF_RECORD_AUX was lost: only those are read now.
         */
        if (ring->stopped && !lost && !deferred && all_padding(ring, from, (size_t) n))
                return 0;
        lost = lost || deferred || ring->stopped;
        /*
         * Records the drain has not read came since: the kernel publishes a chunk's
         * PERF_RECORD_AUX (and the switches during it before that) with data_head before it
         * moves aux_head (kernel/events/ring_buffer.c perf_aux_output_end():
         * perf_event_aux_event(), then WRITE_ONCE(rb->user_page->aux_head)), so a data_head
         * read after this aux_head shows them. Read
         * them first, on the next drain: the bytes after a loss are read then.
         */
        if (lost && !deferred && !ring->stopped &&
            __atomic_load_n(&ring->page->data_head, __ATOMIC_ACQUIRE) != data_head) {
                ring->lost_unread = true;
                ring->lost_head = head;
                return 0;
        }
        if (!lost && (announced || n < ring->aux_size - ring->full_slack))
                return 0;
        if (!lost && head != ring->unannounced_head) {
                ring->unannounced_head = head;
                return 0;
        }
        ring->aux_started = true;
        ring->aux_next = head;
        ring->stats.aux_unannounced++;
        ring->stats.aux_unannounced_bytes += n;
        ring->stats.aux_bytes += n;
        if (!ops || !ops->aux)
                return 0;
        return deliver_bytes(ring,
                             &(struct aux_ring_chunk) {
                                     .aux_offset = from,
                                     .fill = true,
                                     .unannounced = true,
                             },
                             from, (size_t) n, ops, userdata);
}

int aux_ring_drain_stopped(struct aux_ring *ring, const struct aux_ring_ops *ops, void *userdata,
                           bool *ret_truncated) {
        int k;

        ring->stopped = true;
        k = aux_ring_drain(ring, ops, userdata, ret_truncated);
        ring->stopped = false;
        return k;
}

bool aux_ring_pending(const struct aux_ring *ring) {
        return __atomic_load_n(&ring->page->data_head, __ATOMIC_ACQUIRE) !=
               __atomic_load_n(&ring->page->data_tail, __ATOMIC_RELAXED);
}

int aux_ring_peek(struct aux_ring *ring, uint64_t *pos, int (*fn)(void *userdata, const uint8_t *rec, size_t len),
                  void *userdata) {
        uint64_t head, tail, at;
        int n = 0, k;

        head = __atomic_load_n(&ring->page->data_head, __ATOMIC_ACQUIRE);
        tail = __atomic_load_n(&ring->page->data_tail, __ATOMIC_RELAXED);
        if (head - tail > ring->data_size)
                return 0; /* not the normal-mode protocol: the drain says so */
        /* Where the last peek stopped, unless the drain has read past it (or it is from before a reset). */
        at = *pos - tail <= head - tail ? *pos : tail;
        while (at != head) {
                struct perf_event_header h;

                if (head - at < sizeof(h))
                        break;
                ring_copy(ring, at, &h, sizeof(h));
                /* What the drain would skip as bad, the peek leaves to it. */
                if (h.size < sizeof(h) || h.size > head - at || h.size > ring->scratch_size)
                        break;
                k = fn(userdata, record_at(ring, at, h.size), h.size);
                if (k < 0) {
                        *pos = at;
                        return k;
                }
                at += h.size;
                n++;
        }
        *pos = at;
        return n;
}

int aux_ring_drain(struct aux_ring *ring, const struct aux_ring_ops *ops, void *userdata, bool *ret_truncated) {
        return aux_ring_drain_max(ring, ops, userdata, 0, ret_truncated);
}

int aux_ring_drain_max(struct aux_ring *ring, const struct aux_ring_ops *ops, void *userdata, size_t max,
                       bool *ret_truncated) {
        bool truncated = false;
        uint64_t head, tail, lost_before, aux_before;
        int n = 0, k = 0;

        if (!ring)
                return -EINVAL;
        lost_before = ring->stats.lost;
        aux_before = ring->stats.aux_records;
        /* The kernel writes the records, then data_head: acquire pairs with its release. */
        head = __atomic_load_n(&ring->page->data_head, __ATOMIC_ACQUIRE);
        tail = __atomic_load_n(&ring->page->data_tail, __ATOMIC_RELAXED);
        if (head - tail > ring->data_size) {
                /* More than the ring holds: not the normal-mode protocol. Start over at head. */
                ring->stats.bad_records++;
                ring->stats.bad_bytes += head - tail;
                tail = head;
        }

        while (tail != head && k >= 0 && (max == 0 || (size_t) n < max)) {
                struct perf_event_header h;
                const uint8_t *rec;

                if (head - tail < sizeof(h)) {
                        ring->stats.bad_records++;
                        ring->stats.bad_bytes += head - tail;
                        tail = head;
                        break;
                }
                ring_copy(ring, tail, &h, sizeof(h));
                if (h.size < sizeof(h) || h.size > head - tail || h.size > ring->scratch_size) {
                        /* No way to find the next record: skip what the kernel published. */
                        ring->stats.bad_records++;
                        ring->stats.bad_bytes += head - tail;
                        tail = head;
                        break;
                }
                rec = record_at(ring, tail, h.size);
                tail += h.size;
                n++;
                ring->stats.records++;

                /* A data ring alone hands a PERF_RECORD_AUX on like any other record. */
                switch (h.type == PERF_RECORD_AUX && !ring->aux ? PERF_RECORD_MAX : h.type) {
                case PERF_RECORD_AUX: {
                        struct perf_data_record pr;
                        struct perf_data_aux b;
                        uint32_t tlen;

                        if (perf_record_parse_ring(ring->attr, rec, tail - h.size, &pr, &tlen) < 0 ||
                            perf_record_parse_aux(&pr, tlen, &b) < 0 || b.aux_size > ring->aux_size ||
                            b.aux_offset + b.aux_size < b.aux_offset) {
                                ring->stats.bad_records++;
                                ring->stats.bad_bytes += h.size;
                                break;
                        }
                        truncated = truncated || (b.flags & PERF_AUX_FLAG_TRUNCATED);
                        k = deliver_aux(ring, &b, ops, userdata);
                        break;
                }
                case PERF_RECORD_LOST:
                case PERF_RECORD_LOST_SAMPLES: {
                        /* The kernel writes the records perf copies into perf.data: one parser for both. */
                        struct perf_data_record pr;
                        struct perf_data_lost b;
                        uint32_t tlen;

                        if (perf_record_parse_ring(ring->attr, rec, tail - h.size, &pr, &tlen) < 0 ||
                            perf_record_parse_lost(&pr, tlen, &b) < 0) {
                                ring->stats.bad_records++;
                                ring->stats.bad_bytes += h.size;
                                break;
                        }
                        if (h.type == PERF_RECORD_LOST)
                                ring->stats.lost += b.lost;
                        else
                                ring->stats.lost_samples += b.lost;
                        break;
                }
                default:
                        if (ops && ops->record)
                                k = ops->record(userdata, rec, h.size);
                        break;
                }
        }

        if (k >= 0 && ring->aux && tail == head)
                k = deliver_unannounced(ring, head, ring->stats.lost != lost_before,
                                        ring->stats.aux_records != aux_before, ops, userdata);
        if (ops && ops->end) {
                int e = ops->end(userdata);

                if (k >= 0 && e < 0)
                        k = e;
        }
        /* Release: the consumer is done with the bytes before the kernel may reuse them. */
        if (ring->aux_started)
                __atomic_store_n(&ring->page->aux_tail, ring->aux_next, __ATOMIC_RELEASE);
        __atomic_store_n(&ring->page->data_tail, tail, __ATOMIC_RELEASE);
        if (k < 0)
                return k;
        if (ret_truncated)
                *ret_truncated = truncated;
        return n;
}
