/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * One CPU's live arm_spe event, the part that reads what the kernel wrote:
 * its data ring and AUX area (aux-ring.h) into its stream (spe-stream.h).
 * No system calls: the live source maps the rings and reacts to a
 * truncation (PERF_EVENT_IOC_ENABLE); tests and the fuzzer play the kernel
 * on ordinary memory.
 *
 *  - AUX chunks are decoded with the decoder state carried across them (a
 *    record split over two chunks is decoded whole), the bytes no
 *    PERF_RECORD_AUX announced (padding, a lost record) included; data lost
 *    for good (a gap) or a truncated chunk resets it;
 *  - PERF_RECORD_AUX flags, LOST, LOST_SAMPLES and THROTTLE are counted in
 *    the stream's statistics, and the time not sampled after a truncation
 *    (last record before, first record after, by their Timestamp packets);
 *  - SWITCH_CPU_WIDE and ITRACE_START switch tasks at their time (records
 *    without CONTEXT packets are attributed by them), a PERF_RECORD_LOST
 *    makes the task unknown where it came (spe_stream_doubt()), COMM/FORK/EXIT feed
 *    the task map and the sink, MMAP/MMAP2 the sink's mappings, through the
 *    process table when the source gave one;
 *  - the user page's time_zero/time_mult/time_shift turn SPE timestamps
 *    into perf time.
 */

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>

#include "aux-ring.h"
#include "spe-stream.h"

struct proc_table;

struct spe_live_ring {
        struct aux_ring ring;
        struct spe_stream *stream;      /* the CPU's, outliving its events (counters survive a reopen) */
        struct source_clock clock;
        const struct perf_event_attr *attr;
        struct spe_stream_out *out;     /* shared by the source's CPUs */
        /* The source's process table (proc-table.h), also shared: COMM, FORK, EXIT, MMAP2 and
         * losses go through it; NULL (set after init, or not): to the task map and sink alone. */
        struct proc_table *procs;
        uint64_t cut_timestamp;         /* last record's SPE time before a truncation, 0 none pending */
        bool in_chunk;                  /* the first piece of a wrapping chunk was decoded, not its last */
        uint64_t lost_seen;             /* ring.stats.lost when the stream was last told of a loss */
        uint64_t unannounced_seen;      /* ring.stats.aux_unannounced, likewise */
        bool unannounced_doubt;         /* a doubt queued for the bytes being read (note_unannounced()) */
        uint64_t last_aux_flags;        /* of the last PERF_RECORD_AUX read (not a fill, not late) */
        /* PERF_RECORD_SWITCH_CPU_WIDE read in place (on_switch()): the attr's sample_id trailer. */
        bool switch_fast;               /* sample_id_all with PERF_SAMPLE_TIME */
        bool switch_has_tid;            /* PERF_SAMPLE_TID: {pid, tid} first in the trailer */
        uint32_t switch_tlen;           /* the trailer's bytes */
};

/*
 * page: the user page, followed by the data ring (data, data_size); aux:
 * the AUX area. attr: the event's (sample_id trailers) and stream: the
 * CPU's, both outliving r; the stream's decoder starts afresh (a new
 * session). -EINVAL on sizes that are not powers of two.
 */
int spe_live_ring_init(struct spe_live_ring *r, struct perf_event_mmap_page *page, const void *data,
                       size_t data_size, const void *aux, size_t aux_size, const struct perf_event_attr *attr,
                       struct spe_stream *stream, struct spe_stream_out *out);
void spe_live_ring_done(struct spe_live_ring *r);

/*
 * The event is enabled again (PERF_EVENT_IOC_ENABLE), after a time it may
 * have been off: switches meanwhile went unreported (spe_stream_doubt()).
 */
void spe_live_ring_enabled(struct spe_live_ring *r);

/*
 * Read and release everything the kernel published. *ret_ended: a session
 * ended, truncated (perf_aux_output_end() then disables the event) or
 * stalled (read on up to aux_head because the records announcing the bytes
 * were lost, its TRUNCATED one perhaps among them, counted in aux_stalls):
 * the event must be re-enabled, which is harmless when it was not
 * disabled. Returns the data-ring records read.
 */
int spe_live_ring_drain(struct spe_live_ring *r, bool *ret_ended);
/* The same after PERF_EVENT_IOC_DISABLE: the bytes no record announced are read too (aux_ring_drain_stopped()). */
int spe_live_ring_drain_stopped(struct spe_live_ring *r, bool *ret_ended);
