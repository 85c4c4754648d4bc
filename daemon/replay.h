/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "spe-replay.h"

/* What to replay: --replay FILE, or --replay-raw FILE --midr --cpu. */
struct replay_args {
        const char *path; /* "-": stdin */
        bool raw;
        uint32_t cpu;
        uint64_t midr;
};

/*
 * Open the input without blocking: a FIFO with no writer yet is opened
 * O_NONBLOCK (the reads wait for data with poll, see spe_replay_input),
 * and what cannot hold a replay (a directory, a device, a socket) is refused
 * with a message that says what it is. Logs the failure. *ret_fd is the
 * caller's (stdin is duplicated).
 */
int replay_open(const struct replay_args *a, int *ret_fd);

/*
 * Run the replay from fd (replay_open()) into sink; cancel_fd as in struct
 * spe_replay_input; the input's task records into tasks (NULL: the replay's
 * own map).
 */
int replay_run(const struct replay_args *a, int fd, int cancel_fd, const struct source_sink *sink,
               struct task_map *tasks, struct spe_replay **ret);

/* The whole input was read and every SPE byte of it went to a decoder. */
bool replay_complete(const struct spe_replay *replay, int run_result);


/*
 * `armprofd --replay FILE --once` (or --replay-raw): feed the input through
 * the same decode and aggregation path as live data, then print one JSON
 * report (records per CPU and stream health, counts by op and data source,
 * decode errors, warnings, hot PCs, hot lines, latency quantiles) to `out`.
 * With records_path, every decoded record is also written there, one JSON
 * object a line. Returns 0, or a negative errno after the report when the
 * input was unreadable, damaged or not completely decoded ("complete":
 * false; what decoded before the damage is in the report).
 */
int replay_once(const struct replay_args *a, const char *records_path, const struct config *cfg, FILE *out);
