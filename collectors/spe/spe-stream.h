/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * One CPU's SPE stream, whichever source reads it (a perf.data's AUXTRACE
 * payloads, a live event's AUX ring): its decoder, whose state carries a
 * record split across two chunks over to the next one; its statistics; and
 * the task that runs on it, so that every decoded record leaves with a pid
 * and tid (collectors/source.h) by the same rules everywhere:
 *
 *  - a CONTEXT packet names the thread (CONTEXTIDR_ELx holds the TID with
 *    CONFIG_PID_IN_CONTEXTIDR) and holds until the next one or a switch;
 *  - otherwise the task last switched in on that CPU (ITRACE_START,
 *    SWITCH_CPU_WIDE), applied at once (spe_stream_switch_in(): a replay,
 *    whose records come in time order) or when the records' Timestamp
 *    packets reach the switch's time (spe_stream_switch_at(): a live ring,
 *    where one AUX chunk spans many switches that the data ring delivered
 *    before it);
 *  - but not across a window where a switch may have gone unreported
 *    (spe_stream_doubt(): the event was off, or the data ring lost
 *    records): from there the thread is unknown, and its records are
 *    counted unattributed (thread_unknown_*), never given to the thread
 *    that ran before, until a switch names one again;
 *  - the pid of a tid from the shared task map, else from the switch.
 *
 * Records with no pid are counted (unattributed), never dropped.
 * Threads: the owning source's.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf-record.h"
#include "source.h"
#include "spe-rec.h"

struct task_map;

/*
 * Records decoded per sink call. Small enough that the records (128 bytes
 * each), their ids and the input being read stay in L1 together (8 KiB of
 * records): 256 filled a 32 KiB L1 and decoded about 3% slower on
 * bench-replay; the per-call cost is amortised either way.
 */
#define SPE_STREAM_BATCH 64
/*
 * Timed switches waiting for the records to reach them: all the switches
 * during one AUX chunk (their records come before the chunk's
 * PERF_RECORD_AUX). The log grows on demand up to this bound (24 bytes an
 * entry: 192 KiB for a CPU that switches thousands of times per chunk); a
 * CPU past it applies the oldest early, counted in switch_overflows.
 */
#define SPE_STREAM_SWITCHES_MIN 64
#define SPE_STREAM_SWITCHES_MAX 8192

/* What the streams of one source share: where records go, and the batch they go in. */
struct spe_stream_out {
        const struct source_sink *sink;
        struct task_map *tasks;
        /*
         * The pid of a thread the task map does not know, or SOURCE_NO_ID
         * (a live source asks /proc; a recording from elsewhere cannot).
         * NULL: none. Its answers belong in the task map.
         */
        uint32_t (*pid_of)(void *userdata, uint32_t tid);
        /*
         * A run of records of thread tid of process pid starts (pid known),
         * at perf time time_ns (0 unknown), before the sink has them: a live
         * source reads /proc for a process no record told it of
         * (proc-table.h). NULL: none.
         */
        void (*seen)(void *userdata, uint32_t pid, uint32_t tid, uint64_t time_ns);
        void *userdata;
        struct spe_record batch[SPE_STREAM_BATCH];
        uint32_t pids[SPE_STREAM_BATCH], tids[SPE_STREAM_BATCH];
};

/* Why the task running may be unknown from some point on (spe_stream_doubt()). */
enum spe_stream_doubt {
        SPE_STREAM_SWITCH,              /* not a doubt: a switch record */
        SPE_STREAM_DOUBT_OFF,           /* the event was off: no switch is reported meanwhile */
        SPE_STREAM_DOUBT_LOST,          /* the data ring lost records, switches perhaps among them */
        SPE_STREAM_DOUBT_NO_CLOCK,      /* no time conversion, and a switch came during the chunk */
};

struct spe_stream_switch {
        uint64_t time_ns;               /* perf time */
        uint32_t pid, tid;              /* the task switched in */
        uint32_t prev_pid, prev_tid;    /* the task switched out, SOURCE_NO_ID unknown */
        enum spe_stream_doubt doubt;    /* SPE_STREAM_SWITCH, or a doubt (pid, tid unknown) */
};

struct spe_stream {
        struct spe_stream_stats st;     /* decoder counters live in dec; spe_stream_stats() joins them */
        struct spe_decoder dec;
        bool started;
        uint64_t next_offset;           /* stream position where the next chunk should begin */
        uint32_t cur_pid, cur_tid;      /* the task running, as far as the records have reached */
        enum spe_stream_doubt unknown;  /* SPE_STREAM_SWITCH: cur_* known (or never named); else why not */
        bool no_prev;                   /* since a loss, no switch applied: its prev_* are no proof */
        bool chunk_switched;            /* no clock: a switch came since the last chunk (spe_stream_chunk_end()) */
        uint64_t last_queued_ns;        /* the time of the last switch queued, 0 none yet */
        uint64_t last_timestamp;        /* of the last record that had one (SPE ticks), 0 none yet */
        uint64_t first_timestamp;       /* of the first record that had one since it was zeroed, 0 none yet */
        /* Timed switches (spe_stream_set_clock()): a ring in time order. */
        const struct source_clock *clock;
        struct spe_stream_switch *pending;
        size_t pending_first, n_pending, cap_pending;
};

/* A stream of `cpu`, a core of that MIDR (0: unknown, raw data sources kept). */
void spe_stream_init(struct spe_stream *s, uint32_t cpu, uint64_t midr);
/* Frees its switch log. */
void spe_stream_done(struct spe_stream *s);

/*
 * SPE Timestamp packets become perf time through clock (it must outlive the
 * stream): the switches of spe_stream_switch_at() apply when the records
 * reach them.
 */
void spe_stream_set_clock(struct spe_stream *s, const struct source_clock *clock);

/*
 * A chunk of `size` bytes begins at free-running position `offset`. One that
 * does not continue the last (data lost between them) resets the decoder, so
 * two unrelated halves never make a record, and counts a discontinuity.
 */
void spe_stream_begin_chunk(struct spe_stream *s, uint64_t offset, uint64_t size);

/* Decode bytes of the current chunk and hand the records on, attributed. */
void spe_stream_decode(struct spe_stream *s, struct spe_stream_out *out, const uint8_t *data, size_t len);

/*
 * The stream was cut (a truncated session, a partial record, the end of the
 * input): a record in progress is dropped and counted (the decoder's
 * flushed_* counters), the next bytes start afresh.
 */
void spe_stream_reset(struct spe_stream *s);

/* Data was lost before the next bytes (a gap in the ring): reset, counted as a discontinuity. */
void spe_stream_gap(struct spe_stream *s);

/* The task now running on the CPU (a switch record, ITRACE_START). */
void spe_stream_switch_in(struct spe_stream *s, struct task_map *tasks, uint32_t pid, uint32_t tid);

/*
 * The task that runs from perf time time_ns on, and the one that ran until
 * then (prev_*, SOURCE_NO_ID unknown), from SWITCH_CPU_WIDE, which names
 * both. Needs a clock; without one, at once. A record before the next
 * pending switch ran in that switch's previous task: so a switch the
 * kernel did not report (none is while the event is stopped: a truncation,
 * a flush) misattributes nothing once a later one names who ran.
 */
void spe_stream_switch_at(struct spe_stream *s, struct task_map *tasks, uint64_t time_ns, uint32_t pid,
                          uint32_t tid, uint32_t prev_pid, uint32_t prev_tid);

/*
 * From here on (after every switch queued so far, before the records decoded
 * next) a switch may have gone unreported: the event was off (a truncation,
 * a DISABLE, an ENABLE of an event that may have been off: the kernel
 * reports no switch to an event that is off, perf_iterate_ctx() skips it)
 * or the data ring lost records (PERF_RECORD_LOST: a switch may have been
 * one). Records without a CONTEXT packet are unattributed from there until
 * a switch names the task; after an OFF window, the next switch's previous
 * task names the records before it (it ran since the event came back on);
 * after a loss, it does not (the lost switch may lie between).
 */
void spe_stream_doubt(struct spe_stream *s, struct task_map *tasks, enum spe_stream_doubt why);

/*
 * The end of one AUX chunk's records (its PERF_RECORD_AUX read and decoded).
 * Without a clock, a switch read since the chunk before falls somewhere among
 * this chunk's records: those without a CONTEXT packet get no thread
 * (SPE_STREAM_DOUBT_NO_CLOCK); from the next chunk on the switched-in one runs.
 */
void spe_stream_chunk_end(struct spe_stream *s);

/*
 * Takes back the doubt spe_stream_doubt() queued last, if no record has
 * reached it and nothing was queued after it: a doubt for the records of
 * one piece of data only (spe-live-ring.c, bytes read with no
 * PERF_RECORD_AUX). True if it was taken back.
 */
bool spe_stream_doubt_undo(struct spe_stream *s);

/*
 * The task and mapping records of a recording or a live ring, as every
 * source hands them on: COMM and FORK into the task map, then each to the
 * sink's task callback (EXIT too: the map keeps an exited thread, whose
 * last records may still be on their way); MMAP/MMAP2 to its mapping
 * callback, with build_id (NULL: the record's own, if any).
 */
void spe_stream_out_comm(struct spe_stream_out *out, const struct perf_data_comm *c);
/* FORK or EXIT, by t->rec.type. */
void spe_stream_out_task(struct spe_stream_out *out, const struct perf_data_task *t);
void spe_stream_out_mapping(struct spe_stream_out *out, const struct perf_data_mmap *m, const uint8_t *build_id,
                            size_t build_id_len);

/* Its statistics, the decoder's counters included. */
void spe_stream_stats(const struct spe_stream *s, struct spe_stream_stats *ret);
