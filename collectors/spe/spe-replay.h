/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * SPE replay: a perf.data recorded with `perf record -e arm_spe_0//` (file
 * or pipe mode) becomes the same stream of decoded records the live AUX
 * source produces. AUXTRACE payloads are routed to one decoder per CPU
 * queue (MIDR from the file's SPE metadata or CPUID), and each record is
 * attributed to a thread and process:
 *  - the TID from the record's context packet (CONTEXTIDR with
 *    CONFIG_PID_IN_CONTEXTIDR), which holds for the following records of
 *    that CPU until the next one (perf does the same), or the task the
 *    file's SWITCH / ITRACE_START records last put on that CPU;
 *  - the PID from COMM/FORK records for that TID (the task map, task-map.h),
 *    which also tells the sink's task callback of each COMM/FORK/EXIT.
 *
 * Library code: no logging, errors as negative errno plus a message.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source.h"
#include "spe-rec.h"
#include "memsample-decode.h"

#define SPE_REPLAY_MAX_CPUS 4096
/*
 * A replay warns when more than this share of its SPE bytes did not decode
 * (per mille): a few bad bytes happen on real streams (a record cut by a
 * wrapped buffer), a tenth of them means the bytes are not SPE of this CPU.
 */
#define SPE_REPLAY_UNDECODED_WARN_PERMILLE 10

struct spe_replay;

/* Where spe_replay_run() reads from. */
struct spe_replay_input {
        int fd;           /* read from here (not closed); O_NONBLOCK is fine, it is polled */
        int cancel_fd;    /* -1, or an fd (an eventfd, say) whose readability stops the run: -ECANCELED */
        const char *name; /* names the input in messages */
        /*
         * raw: the bytes are one CPU's SPE profiling buffer as the hardware
         * wrote it (perf's AUX area, the input of Arm's spe-parser), with no
         * perf.data framing: decoded as CPU raw_cpu of a raw_midr core.
         */
        bool raw;
        uint32_t raw_cpu;
        uint64_t raw_midr;
};

/* Runs the whole input. Returns 0, or a negative errno with spe_replay_error()
 * naming the offset of the damage; everything before it has reached the sink
 * and is in the stats either way. *replay_out is set in both cases (free it):
 * it is the replay itself, from which callers read the error and the stats
 * of a failed run, so it is not a ret_* output (HACKING.md §2; spe_replay_new()
 * sets its *ret only on success). Blocking: a pipe is waited for, cancel_fd
 * stops the wait. spe_replay_run()'s tasks, as spe_replay_new()'s: the task
 * map the input's COMM, FORK and switch records go into, for the sink to
 * read (NULL: the replay's own). */
int spe_replay_path(const char *path, const struct source_sink *sink, struct spe_replay **replay_out);
int spe_replay_run(const struct spe_replay_input *in, const struct source_sink *sink, struct task_map *tasks,
                   struct spe_replay **replay_out);
struct spe_replay *spe_replay_free(struct spe_replay *replay);

const char *spe_replay_error(const struct spe_replay *replay);
bool spe_replay_is_pipe(const struct spe_replay *replay);
bool spe_replay_is_raw(const struct spe_replay *replay);
/*
 * AUXTRACE payloads no decoder took (their cpu field is not below
 * SPE_REPLAY_MAX_CPUS), and their bytes: input that was read but not decoded.
 */
uint64_t spe_replay_dropped_payloads(const struct spe_replay *replay);
uint64_t spe_replay_dropped_bytes(const struct spe_replay *replay);
/* CPUs that had SPE data, ascending. */
size_t spe_replay_n_cpus(const struct spe_replay *replay);
/* The SPE event's sampling interval (one sample every N operations), 0 when unknown. */
uint64_t spe_replay_sample_period(const struct spe_replay *replay);
/* Build-id table entries beyond the bound (16384), left out: their files' mappings carry no build id. */
uint64_t spe_replay_build_ids_dropped(const struct spe_replay *replay);
/* Records whose thread or process could not be named. */
uint64_t spe_replay_unattributed(const struct spe_replay *replay);
/*
 * The x86 memory samples of the input (PERF_RECORD_SAMPLEs with DATA_SRC,
 * memsample-decode.h): how many became records, how many were dropped and
 * why. Records without an SPE stream, so not in spe_replay_stream_stats().
 */
const struct memsample_stats *spe_replay_memsample_stats(const struct spe_replay *replay);
/* Threads the task map had to forget (it is bounded; a shared map counts every source's). */
uint64_t spe_replay_tid_evictions(const struct spe_replay *replay);

/*
 * Stepping, for an event loop (spe-replay-source.c). new() reads nothing
 * and sets *ret only on success (else -EINVAL, or fstat(2)'s error
 * on in->fd); in->cancel_fd is not used; tasks is the shared task map the
 * replay names threads by and feeds (NULL: one of its own, as
 * spe_replay_run() has). A raw input's CPU beyond SPE_REPLAY_MAX_CPUS is
 * the first step's error. step() decodes at most `budget` units (a
 * perf.data record or AUXTRACE payload piece, or one read of a raw buffer)
 * and never waits: 1 more is ready, 0 the input ended, -EAGAIN a pipe or
 * FIFO (O_NONBLOCK) has nothing now (step again when it polls readable),
 * else the error with spe_replay_error() saying what and where. Once 0 or an
 * error was returned, step() returns it again and the stats are final; the
 * accessors above work at any time.
 */
int spe_replay_new(const struct spe_replay_input *in, const struct source_sink *sink, struct task_map *tasks,
                   struct spe_replay **ret);
int spe_replay_step(struct spe_replay *replay, size_t budget);
bool spe_replay_finished(const struct spe_replay *replay);
/* CPU i's stream (i < spe_replay_n_cpus(), ascending by CPU), the decoder's counters up to now included. */
void spe_replay_stream_stats(const struct spe_replay *replay, size_t i, struct spe_stream_stats *ret);
/*
 * What is wrong with an input that read fine: no SPE data in it, payloads
 * no decoder took, or more than SPE_REPLAY_UNDECODED_WARN_PERMILLE of its SPE
 * bytes not decoded (run_result: what the replay returned). Returns how
 * many of ret[] it filled.
 */
size_t spe_replay_warnings(const struct spe_replay *replay, int run_result,
                           char ret[SOURCE_WARNINGS_MAX][SOURCE_WARNING_LEN]);
