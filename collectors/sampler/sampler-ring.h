/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * One CPU's sampling event: its data ring read (aux-ring.h, a data ring
 * alone), each PERF_RECORD_SAMPLE parsed by the shared parser
 * (perf-record.h) into a struct source_sample and handed to the sink in
 * batches, the side-band records (COMM, FORK, EXIT, MMAP/MMAP2, CGROUP) to
 * the process table (proc-table.h) in the order the kernel wrote them,
 * and everything counted into the CPU's struct sampler_cpu_stats: LOST and
 * LOST_SAMPLES, THROTTLE, callchains the kernel cut at sample_max_stack,
 * user stack copies that filled their whole size, records that did not
 * parse.
 *
 * A sample's callchain, registers and stack point into the ring (or the
 * ring's copy of the one record that wrapped): valid during the sink's
 * call only, which comes before the ring is released.
 *
 * No system calls but what the process table reads of /proc; tests play
 * the kernel on ordinary memory (tests/perf/ring-kernel.h).
 */

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aux-ring.h"
#include "proc-table.h"
#include "source.h"

/* Samples handed to the sink per call. */
#define SAMPLER_RING_BATCH 64
/* Task and mapping records the pre-scan may hand on ahead of the drain, per ring. */
#define SAMPLER_RING_EARLY 256

struct sampler_ring {
        struct aux_ring ring;
        const struct perf_event_attr *attr;
        const struct source_sink *sink;
        struct proc_table *procs;
        struct sampler_cpu_stats *st;   /* the CPU's, since start: across its events */
        uint32_t cpu;
        struct source_sample batch[SAMPLER_RING_BATCH];
        size_t n_batch;
        /* sampler_ring_prescan(): where it stopped, and what it handed on (FIFO of record hashes). */
        uint64_t prescan_pos;
        uint64_t early[SAMPLER_RING_EARLY];
        size_t early_head, n_early;
};

/*
 * page: the user page; data: page + data_offset, data_size bytes (a power
 * of two). attr (with sample_id_all), the sink, the process table and st
 * must outlive the ring.
 */
int sampler_ring_init(struct sampler_ring *r, struct perf_event_mmap_page *page, const void *data, size_t data_size,
                      const struct perf_event_attr *attr, const struct source_sink *sink,
                      struct proc_table *procs, struct sampler_cpu_stats *st);
void sampler_ring_done(struct sampler_ring *r);

/* At most max records (0: all there are) read, handed on and released. Returns the number read. */
int sampler_ring_drain(struct sampler_ring *r, size_t max);
/* Records published and not read yet. */
bool sampler_ring_pending(const struct sampler_ring *r);

/*
 * Hand on the task and mapping records (COMM, FORK, EXIT, MMAP/MMAP2,
 * CGROUP) published so far, ahead of the samples before them, and leave
 * them to be skipped when the drain comes to them. Rings are read one CPU
 * after another: a process that exec'd on one CPU and ran on another has
 * its COMM and MMAP2 in the first ring and its samples in the second; the
 * source pre-scans every ring before it drains any, so the samples are
 * named and unwound from what the kernel had said before them (perf merges
 * its rings by time for the same reason). What the pre-scan can hand on
 * is bounded (SAMPLER_RING_EARLY); the rest goes in order with the drain.
 */
void sampler_ring_prescan(struct sampler_ring *r);
