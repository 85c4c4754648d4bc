/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The reading side of a live SPE event's two rings (drivers/perf/arm_spe_pmu.c,
 * perf_event_open(2) "MMAP layout", the comments of struct
 * perf_event_mmap_page in <linux/perf_event.h>):
 *
 *  - the data ring, after the user page: perf records written by the
 *    kernel; data_head is where the kernel stopped, data_tail where the
 *    reader has released up to. Records may wrap around the ring's end.
 *  - the AUX ring: the raw SPE bytes. Each time the driver commits a chunk
 *    it writes a PERF_RECORD_AUX {aux_offset, aux_size, flags} into the
 *    data ring; aux_offset is a free-running position, the bytes sit at
 *    aux_offset modulo the ring size and may wrap too. aux_tail releases
 *    them.
 *
 * aux_ring_drain() walks the data ring from the last released position to
 * data_head (read with acquire order), hands each AUX chunk to the consumer
 * in one or two pieces (two when it wraps), then releases both rings (store
 * with release order) so that the kernel may reuse the space. Only normal
 * mode is supported (the AUX area mapped writable; the kernel never
 * overwrites bytes not yet released).
 *
 * A chunk that does not start where the previous one ended follows bytes
 * the kernel moved aux_head over without a PERF_RECORD_AUX: the SPE
 * driver's 0x00 padding (arm_spe_pmu_pad_buf(), at most page boundaries) or
 * a chunk whose PERF_RECORD_AUX the full data ring dropped. Those bytes are
 * still in the ring, unreleased: they are handed on first, as a `fill`
 * chunk, so nothing the hardware wrote is lost (perf reads every byte up to
 * aux_head too). Only a gap that cannot be in the ring any more is data
 * lost (the next chunk's `gap`). After a PERF_RECORD_LOST, or with the area
 * nearly full of bytes nothing announced, the drain reads on up to
 * aux_head: the records announcing them may never come (the event stops
 * when the area is full, and writes nothing more), and the area would stay
 * full. A record that comes for them later is `late`: its flags count, its
 * bytes are not read twice.
 *
 * Nothing is lost silently: LOST and LOST_SAMPLES records, AUX flags
 * (truncated, partial, collision, overwrite), gaps and records that make no
 * sense (then the rest of the ring up to data_head is skipped and counted)
 * all end in struct aux_ring_stats.
 *
 * A data ring alone (aux_ring_init() with no AUX area: a sampling event
 * such as the cpu-clock sampler's) is read with the same loop: every record
 * but LOST and LOST_SAMPLES goes to ops->record, PERF_RECORD_AUX included,
 * and nothing of the AUX protocol runs.
 *
 * No system calls and no allocation after init: the caller maps the rings
 * (or, in tests, plays the kernel on ordinary memory) and reacts to what
 * the drain reports (a truncated chunk means the kernel disabled the event,
 * which the caller re-enables with PERF_EVENT_IOC_ENABLE).
 */

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf-record.h"

/* PERF_RECORD_AUX flags (perf_event.h); the PMU-specific format byte is masked off. */
#define AUX_RING_FLAG_TRUNCATED         PERF_AUX_FLAG_TRUNCATED
#define AUX_RING_FLAG_OVERWRITE         PERF_AUX_FLAG_OVERWRITE
#define AUX_RING_FLAG_PARTIAL           PERF_AUX_FLAG_PARTIAL
#define AUX_RING_FLAG_COLLISION         PERF_AUX_FLAG_COLLISION

/* Records longer than this cannot come from the kernel (header.size is a u16). */
#define AUX_RING_RECORD_MAX             65535U

/*
 * The ring's raw per-record counts, as the kernel's records state them. They
 * feed a live source's struct spe_stream_stats (collectors/source.h), the one
 * struct for stream health; they are not another copy of it.
 */
struct aux_ring_stats {
        uint64_t records;               /* data-ring records read */
        uint64_t aux_records;           /* PERF_RECORD_AUX */
        uint64_t aux_bytes;             /* AUX bytes handed to the consumer, fills included */
        uint64_t truncated, partial, collision, overwrite; /* PERF_RECORD_AUX flags */
        uint64_t aux_gaps;              /* chunks that did not start where the last one ended */
        uint64_t aux_gap_bytes;         /* bytes between, handed on as fills unless lost */
        uint64_t aux_gaps_lost;         /* gaps whose bytes were not in the ring any more */
        uint64_t aux_unannounced;       /* reads up to aux_head after a loss or with the area full */
        uint64_t aux_unannounced_bytes;
        uint64_t lost;                  /* PERF_RECORD_LOST: records the data ring had no room for */
        uint64_t lost_samples;          /* PERF_RECORD_LOST_SAMPLES */
        uint64_t bad_records;           /* impossible sizes or AUX chunks outside the ring: rest skipped */
        uint64_t bad_bytes;             /* data-ring bytes skipped because of them */
};

/* One AUX chunk, or the part of it before (first) or after (second) the ring's end. */
struct aux_ring_chunk {
        uint64_t aux_offset;            /* free-running position of the chunk */
        uint64_t flags;                 /* AUX_RING_FLAG_* of its PERF_RECORD_AUX */
        bool gap;                       /* data was lost before this chunk */
        bool fill;                      /* bytes no PERF_RECORD_AUX announced (padding, a lost record), flags 0 */
        bool late;                      /* its bytes went out before, as a fill: only the rest, or its flags */
        bool unannounced;               /* a fill read up to aux_head with no PERF_RECORD_AUX (stats.aux_unannounced) */
        struct perf_data_sample_id sid; /* the AUX record's sample_id trailer (aux_ring_set_attr()) */
};

struct aux_ring_ops {
        /*
         * AUX bytes of one chunk, in order; `last` on the chunk's final
         * piece. The bytes are valid during the call only (the ring is
         * released after the drain).
         */
        int (*aux)(void *userdata, const struct aux_ring_chunk *c, const uint8_t *data, size_t len, bool last);
        /*
         * Any other data-ring record (ITRACE_START, SWITCH_CPU_WIDE...), in
         * one piece even when it wrapped in the ring: `rec` points at the
         * perf_event_header, `len` is header.size.
         */
        int (*record)(void *userdata, const uint8_t *rec, size_t len);
        /*
         * May be NULL. Called once per drain after the last record, before
         * the rings are released (also after a callback's error): a consumer
         * that kept pointers into this drain's records (a batch of samples)
         * hands them on here. At most one record per drain wrapped and sits
         * in the scratch copy: between data_tail and data_head, which are at
         * most the ring's size apart, the ring's end is crossed once. Its
         * error is returned when no callback failed before.
         */
        int (*end)(void *userdata);
};

struct aux_ring {
        struct perf_event_mmap_page *page;
        const uint8_t *data;            /* data ring, data_size bytes (a power of two) */
        size_t data_size;
        const uint8_t *aux;             /* AUX ring, aux_size bytes (a power of two); NULL: a data ring alone */
        size_t aux_size;
        uint64_t aux_next;              /* where the next AUX chunk should start */
        bool aux_started;
        uint64_t unannounced_head;      /* the aux_head a drain found nearly full and unannounced, left unread */
        bool lost_unread;               /* a PERF_RECORD_LOST read, the bytes up to lost_head not yet */
        uint64_t lost_head;             /* the aux_head the drain that left them saw */
        bool stopped;                   /* during aux_ring_drain_stopped() */
        struct aux_ring_stats stats;
        const struct perf_event_attr *attr; /* the event's attr, for the sample_id trailer; may be NULL */
        size_t full_slack;              /* the area counts as full this close to it (aux_ring_set_full_slack()) */
        uint8_t *scratch;               /* a record that wrapped, made contiguous */
        size_t scratch_size;            /* the largest record the data ring can hold */
};

/*
 * page: the user page; data: page + data_offset, data_size bytes; aux: the
 * AUX mapping of aux_size bytes, or NULL and 0 for a data ring alone.
 * -EINVAL when a size is not a power of two. Allocates the scratch record
 * (at most 64 KiB): aux_ring_done().
 */
int aux_ring_init(struct aux_ring *ring, struct perf_event_mmap_page *page, const void *data, size_t data_size,
                  const void *aux, size_t aux_size);
void aux_ring_done(struct aux_ring *ring);
/*
 * The attr the event was opened with (it must outlive the ring): with
 * sample_id_all, AUX and LOST records end in a sample_id trailer, parsed
 * into each chunk's sid. Without it the trailer is ignored.
 */
void aux_ring_set_attr(struct aux_ring *ring, const struct perf_event_attr *attr);

/*
 * How close to full the area may be when the kernel can write no more
 * (default a sixteenth of it, at most half): the SPE driver stops a page
 * short of the reader's tail and pads what cannot hold a record
 * (arm_spe_pmu_next_off()), so two pages and a record for it.
 */
void aux_ring_set_full_slack(struct aux_ring *ring, size_t bytes);

/*
 * Read everything the kernel has published, then release it. Returns the
 * number of records read, or the negative value a callback returned; the
 * drain stops there, and that record is released with the ones before it
 * (a consumer's error must not wedge the ring). On success *ret_truncated,
 * when not NULL, says whether a chunk was truncated: the kernel has disabled
 * the event. After a consumer's error it is left alone; stats.truncated
 * counts the truncated chunks either way.
 */
int aux_ring_drain(struct aux_ring *ring, const struct aux_ring_ops *ops, void *userdata, bool *ret_truncated);

/*
 * Look at the records published and not released yet, without releasing
 * them: fn gets each one (contiguous, valid during the call; a wrapped one
 * in the scratch copy, so not during a drain), from *pos, or from the
 * released position when the drain has read past *pos, up to data_head.
 * *pos is left where the walk stopped, for the next peek to go on from.
 * Stops at what the drain would call bad, or at fn's negative return
 * (returned). Returns the records looked at. For readers that must see one
 * kind of record of every ring before the others of any (the sampler hands
 * on every CPU's task records before its samples).
 */
int aux_ring_peek(struct aux_ring *ring, uint64_t *pos, int (*fn)(void *userdata, const uint8_t *rec, size_t len),
                  void *userdata);
/*
 * The same, reading at most max records (0: no limit) and releasing what
 * was read: a consumer with a budget per dispatch reads the rest on a later
 * call (aux_ring_pending()). Bytes up to aux_head that nothing announced
 * are only read by a drain that reached data_head.
 */
int aux_ring_drain_max(struct aux_ring *ring, const struct aux_ring_ops *ops, void *userdata, size_t max,
                       bool *ret_truncated);
/*
 * The same once the event is stopped (PERF_EVENT_IOC_DISABLE returned: the
 * driver's pmu->stop() committed what the hardware wrote, and
 * perf_aux_output_end() in kernel/events/ring_buffer.c published its
 * PERF_RECORD_AUX before aux_head): with the data ring read to data_head,
 * bytes up to aux_head that no record announced never will be. Their
 * PERF_RECORD_AUX was lost, and the PERF_RECORD_LOST that would say so waits
 * for the next record that fits, which a stopped event does not write (a CPU
 * gone quiet after a burst). They are read as after a loss.
 */
int aux_ring_drain_stopped(struct aux_ring *ring, const struct aux_ring_ops *ops, void *userdata,
                           bool *ret_truncated);
/* Whether the kernel has published records not read yet. */
bool aux_ring_pending(const struct aux_ring *ring);
