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
 *  - the PID from COMM/FORK records for that TID (bounded table).
 *
 * Library code: no logging, errors as negative errno plus a message.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spe-rec.h"

#define SPE_REPLAY_MAX_CPUS 4096
/*
 * Records decoded per sink call. Small enough that the records (128 bytes
 * each), their ids and the input being read stay in L1 together (8 KiB of
 * records): 256 filled a 32 KiB L1 and decoded about 3% slower on
 * bench-replay; the per-call cost is amortised either way.
 */
#define SPE_REPLAY_BATCH 64
#define SPE_REPLAY_NO_ID UINT32_MAX

/* A mapping of a process, for symbolization (PERF_RECORD_MMAP/MMAP2). */
struct spe_mapping {
        uint32_t pid;
        uint64_t start, len, pgoff;
        const char *filename;      /* valid during the callback only */
        const uint8_t *build_id;   /* NULL when the record had none */
        size_t build_id_len;
};

/*
 * The file's clocks, as far as it states them: PERF_RECORD_TIME_CONV turns
 * SPE timestamps (generic timer ticks) into perf time, HEADER_CLOCK_DATA
 * (perf record -k CLOCK) ties perf time to the time of day.
 */
struct spe_replay_clock {
        bool has_time_conv;
        uint64_t time_shift, time_mult, time_zero, time_cycles, time_mask;
        bool cap_user_time_short;
        bool has_clock_data;
        uint32_t clockid;
        int64_t unix_minus_perf_ns;     /* tod_ns - clockid_ns of the clock data */
};

/* An SPE timestamp in perf nanoseconds, as perf's tsc_to_perf_time() computes it (needs has_time_conv). */
uint64_t spe_replay_perf_ns(const struct spe_replay_clock *c, uint64_t ticks);

struct spe_sink {
        void *userdata;
        /* A batch of records decoded on one CPU, with their pid and tid (or SPE_REPLAY_NO_ID). */
        void (*records)(void *userdata, const struct spe_record *recs, const uint32_t *pids,
                        const uint32_t *tids, size_t n);
        /* Optional: each mapping in file order, before the records that use it. */
        void (*mapping)(void *userdata, const struct spe_mapping *m);
        /* Optional: the file's clocks, each time a record or feature adds to them (before the
         * records that follow it). */
        void (*clock)(void *userdata, const struct spe_replay_clock *c);
        /* Optional: each feature section the reader passes on (PERF_DATA_FEAT_*, e.g.
         * the memory topology); data is valid during the callback only. */
        void (*feature)(void *userdata, unsigned feat, const uint8_t *data, size_t len);
};

struct spe_replay_cpu_stats {
        uint32_t cpu;
        uint64_t midr;
        uint64_t records;
        uint64_t bytes;
        struct spe_decoder_stats decoder;
        uint64_t aux_records, aux_truncated, aux_collision, aux_partial;
        uint64_t discontinuities; /* payloads that did not continue the previous one */
        uint64_t lost;
};

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
 * and is in the stats either way. *ret is set in both cases (free it). */
int spe_replay_path(const char *path, const struct spe_sink *sink, struct spe_replay **ret);
int spe_replay_run(const struct spe_replay_input *in, const struct spe_sink *sink, struct spe_replay **ret);
struct spe_replay *spe_replay_free(struct spe_replay *r);

const char *spe_replay_error(const struct spe_replay *r);
bool spe_replay_is_pipe(const struct spe_replay *r);
bool spe_replay_is_raw(const struct spe_replay *r);
/*
 * AUXTRACE payloads no decoder took (their cpu field is not below
 * SPE_REPLAY_MAX_CPUS), and their bytes: input that was read but not decoded.
 */
uint64_t spe_replay_dropped_payloads(const struct spe_replay *r);
uint64_t spe_replay_dropped_bytes(const struct spe_replay *r);
/* CPUs that had SPE data, ascending. */
size_t spe_replay_n_cpus(const struct spe_replay *r);
const struct spe_replay_cpu_stats *spe_replay_cpu(const struct spe_replay *r, size_t i);
/* The SPE event's sampling interval (one sample every N operations), 0 when unknown. */
uint64_t spe_replay_sample_period(const struct spe_replay *r);
/* Build-id table entries beyond the bound (16384), left out: their files' mappings carry no build id. */
uint64_t spe_replay_build_ids_dropped(const struct spe_replay *r);
/* Records whose thread or process could not be named. */
uint64_t spe_replay_unattributed(const struct spe_replay *r);
/* Threads the attribution table had to forget (it is bounded). */
uint64_t spe_replay_tid_evictions(const struct spe_replay *r);
