/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * --replay FILE and --replay-raw FILE as a source on the seam
 * (collectors/source.h), for the collector's loop.
 *
 * This is the adapter between the daemon and the replay source: the
 * collector calls replay_source_new() and nothing else of the replay. It
 * wraps collectors/spe's spe_replay_source_new() (the perf.data reader
 * stepped with a budget on the loop's own thread, so the sink's callbacks
 * run there and the loop never waits on the input) and adds what the
 * daemon decides at the end of the input.
 *
 * Status: state RUNNING until the input ends, then DONE, or FAILED with the
 * reason the daemon logs and exits with ("… (N records decoded before it)",
 * or "FILE: not all of its SPE data was decoded" when payloads were left
 * undecoded); warnings are spe_replay_warnings(); per-CPU stream statistics and
 * the sampling period once the input ended.
 */

#include "replay.h"
#include "source.h"
#include "spe-replay.h"

/*
 * A replay of the input fd (replay_open()'s; not closed, read until the
 * source is freed) that hands what it decodes to sink. Started by
 * source_start() (the cpus argument is ignored: a replay has the file's).
 */
int replay_source_new(const struct replay_args *a, int fd, const struct source_sink *sink, struct task_map *tasks,
                      struct source **ret);
