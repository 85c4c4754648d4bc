/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The replay of a perf.data (or of a raw SPE buffer) as a source on the
 * seam (source.h): what spe_replay_run() does in one call, done a budget at
 * a time from the collector's sd-event loop, so that the daemon is READY at
 * once and a slow pipe never blocks the loop.
 *
 * Use:
 *   spe_replay_source_new(&input, &sink, tasks, &s);   reads nothing
 *   source_start(s, event, NULL);                      registers with the loop
 *   ... sd_event_loop() ...; source_status(s, &st) at any time:
 *       STARTING until the first step, RUNNING, then DONE (the input ended)
 *       or FAILED (reason: the replay's error, with the byte offset);
 *       warnings as the --once report's; per-CPU spe_stream_stats; the SPE
 *       event's sample_period.
 *   source_free(s);
 *
 * How it is driven: a pipe or FIFO gets an I/O event source (EPOLLIN; the
 * fd must be O_NONBLOCK, as replay_open() opens it); a regular file, which
 * epoll cannot watch and which never waits, gets a defer event source. Each
 * dispatch hands at most SPE_REPLAY_SOURCE_BUDGET units to the sink (see
 * spe_replay_step()); while more is ready the defer source stays on, at idle
 * priority: whatever else became ready meanwhile (the epoch timer, the
 * watchdog, another source) is dispatched before the next step. The sink's
 * callbacks run inside the dispatch, on the loop's thread.
 *
 * The input's fd is not closed by the source and must outlive it; cpus are
 * ignored (a replay's CPUs are the file's) and so is hotplug.
 */

#include "source.h"
#include "spe-replay.h"

/*
 * Units (perf.data records, AUXTRACE payload pieces of at most 1 MiB, raw
 * reads of 256 KiB) per dispatch: a few milliseconds of decoding at most, so
 * the loop answers within that.
 */
#define SPE_REPLAY_SOURCE_BUDGET 16

/* in and sink must outlive the source (in->name is copied); tasks may be NULL. */
int spe_replay_source_new(const struct spe_replay_input *in, const struct source_sink *sink,
                          struct task_map *tasks, struct source **ret);

/* The replay behind the source (its accessors, spe_replay_error()...); NULL before start. */
struct spe_replay *spe_replay_source_replay(struct source *s);
