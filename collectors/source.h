/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The source seam: what every source of samples implements (the replay of a
 * perf.data, live SPE from the AUX rings, the cpu-clock sampler) and what it
 * hands on. A source is opened on a set of CPUs with a sink, registers its
 * fds (or an always-ready event, for input that cannot be polled) with the
 * collector's sd-event loop, drains at most a budget of records per
 * dispatch so one busy source cannot starve the others or the loop's
 * timers, follows CPU hotplug, reports its status, and is closed.
 *
 * Sources decode; they never aggregate. What they decode goes to the sink's
 * callbacks and the daemon wires the sink to the store: no source includes
 * a store, exporter or daemon header (tests/basic/check-includes.py).
 *
 * The value types at the end (stream statistics, status) are what the
 * exporters may read of a source: they include this header and nothing else
 * of collectors/ but the decoder's record type (spe-rec.h).
 *
 * Threads: a source lives on the collector thread; every callback runs
 * there.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spe-rec.h"

typedef struct sd_event sd_event;
struct cpulist;
struct source;
struct task_map;

/* A pid or tid a source could not name. */
#define SOURCE_NO_ID UINT32_MAX

/* ---- What sources hand on ------------------------------------------------ */

/* A mapping of a process (PERF_RECORD_MMAP/MMAP2, perf_event_open(2)). */
struct source_mapping {
        uint32_t pid;
        uint64_t start, len, pgoff;
        const char *filename;      /* valid during the callback only */
        const uint8_t *build_id;   /* NULL when the record had none */
        size_t build_id_len;
        bool data;                 /* not executable (PERF_RECORD_MISC_MMAP_DATA): names data addresses only */
};

/* What a task did (PERF_RECORD_COMM/FORK/EXIT/CGROUP, perf_event_open(2)), and when a process is gone. */
enum source_task_kind {
        SOURCE_TASK_COMM,
        SOURCE_TASK_FORK,
        SOURCE_TASK_EXIT,
        SOURCE_TASK_CGROUP,
        /*
         * The process pid exited and no sample of it is left to hand on: the
         * source says so once, when it has read every ring past the exit
         * (its samples on other CPUs included). Each consumer drops what it
         * kept for the process's samples and keeps what its answers need.
         * Only the cpu-clock sampler says it; pid is the process's.
         */
        SOURCE_TASK_GONE,
};

struct source_task {
        enum source_task_kind kind;
        uint32_t pid, tid;
        uint32_t ppid, ptid;      /* FORK, EXIT */
        uint64_t time_ns;         /* perf time, 0 when the record had none */
        const char *comm;         /* COMM; valid during the callback only */
        uint64_t cgroup_id;       /* CGROUP */
        const char *cgroup_path;  /* CGROUP; valid during the callback only */
};

/*
 * A sample of the cpu-clock sampler (PERF_RECORD_SAMPLE of a sampling event,
 * perf_event_open(2) "PERF_SAMPLE_*"). The user registers and stack are what
 * a DWARF unwinder needs (perf record --call-graph dwarf): present when the
 * event asked for them and the task has a user context (a sample taken in
 * the kernel on behalf of a process carries its registers at kernel entry;
 * a kernel thread's has none: regs_abi 0).
 */
struct source_sample {
        uint32_t cpu, pid, tid;
        uint64_t time_ns;         /* perf time */
        uint64_t ip;
        uint64_t period;          /* nanoseconds of CPU time for cpu-clock; events for a hardware event */
        uint64_t cgroup_id;       /* 0 when the kernel does not report it */
        const uint64_t *callchain; /* nr_callchain entries, the kernel's context markers included */
        size_t nr_callchain;
        /* PERF_SAMPLE_REGS_USER: PERF_SAMPLE_REGS_ABI_* (0: none), then one value per bit of regs_mask, in bit order. */
        uint64_t regs_abi;
        uint64_t regs_mask;
        const uint64_t *regs;
        size_t nr_regs;
        /* PERF_SAMPLE_STACK_USER: stack_len bytes copied from the user stack pointer up (dyn_size). */
        const uint8_t *stack;
        size_t stack_len;
};

/*
 * How a source's timestamps become perf time, and perf time the time of
 * day, as far as the source states it: PERF_RECORD_TIME_CONV or the mmap
 * page's time_* fields turn SPE timestamps (generic timer ticks) into perf
 * time, HEADER_CLOCK_DATA (perf record -k CLOCK) ties perf time to the time
 * of day.
 */
struct source_clock {
        bool has_time_conv;
        uint64_t time_shift, time_mult, time_zero, time_cycles, time_mask;
        bool cap_user_time_short;
        bool has_clock_data;
        uint32_t clockid;
        int64_t unix_minus_perf_ns;     /* tod_ns - clockid_ns of the clock data */
};

/* An SPE timestamp in perf nanoseconds, as perf's tsc_to_perf_time() computes it (needs has_time_conv). */
uint64_t source_clock_perf_ns(const struct source_clock *c, uint64_t ticks);

enum source_state {
        SOURCE_STARTING,  /* opened, nothing read yet */
        SOURCE_RUNNING,   /* reading */
        SOURCE_DONE,      /* a finite input was read to its end (replay) */
        SOURCE_FAILED,    /* stopped on an error: reason says which */
        SOURCE_OFF,       /* not running here: reason says why (no hardware, disabled) */
        SOURCE_IDLE,      /* running, but nothing came for a while (live SPE on idle CPUs) */
};

/* Every callback but records may be NULL. Pointers are valid during the call only. */
struct source_sink {
        void *userdata;
        /* A batch of SPE records decoded on one CPU, with their pid and tid (or SOURCE_NO_ID). */
        void (*records)(void *userdata, const struct spe_record *recs, const uint32_t *pids,
                        const uint32_t *tids, size_t n);
        /* A batch of samples. */
        void (*samples)(void *userdata, const struct source_sample *samples, size_t n);
        /* Each mapping before the records that use it. */
        void (*mapping)(void *userdata, const struct source_mapping *m);
        /* Each task event, after the task map has taken it. */
        void (*task)(void *userdata, const struct source_task *t);
        /* The source's clocks, each time they change (before the records that follow). */
        void (*clock)(void *userdata, const struct source_clock *c);
        /* A section describing the recording machine (PERF_DATA_FEAT_*, e.g. its memory topology). */
        void (*feature)(void *userdata, unsigned feat, const uint8_t *data, size_t len);
        /*
         * The source's state changed: after the last record of a finite
         * input (DONE) or on the error that stopped it (FAILED), so the
         * daemon closes a replay's last epoch and says how it went without
         * polling the status. The callback must not free the source.
         */
        void (*state)(void *userdata, struct source *s, enum source_state state);
};

/* ---- What a source reports ----------------------------------------------- */

#define SPE_STREAM_NOTE_MAX 160

/*
 * One CPU's SPE stream: volume and every kind of damage, whichever source
 * read it (the replay counts what the file says of the live rings, the live
 * source counts it itself). The one struct for stream health.
 */
struct spe_stream_stats {
        uint32_t cpu;
        uint64_t midr;
        uint64_t records;               /* decoded records */
        uint64_t bytes;                 /* SPE bytes handed to the decoder */
        struct spe_decoder_stats decoder;
        uint64_t aux_records;           /* PERF_RECORD_AUX */
        uint64_t aux_truncated, aux_collision, aux_partial;
        uint64_t discontinuities;       /* buffers that did not continue the previous one */
        uint64_t lost;                  /* PERF_RECORD_LOST: records the data ring had no room for */
        uint64_t lost_samples;          /* PERF_RECORD_LOST_SAMPLES */
        uint64_t throttles;             /* PERF_RECORD_THROTTLE: the kernel stopped sampling for a while */
        uint64_t unattributed;          /* records handed on with no pid */
        /* Of them, records whose thread no record could name (no CONTEXT packet, and a switch may have
         * been missed since the last one the data ring reported), by the window that hid it: */
        uint64_t thread_unknown_off;    /* the event was off (a truncation, a DISABLE flush, an ENABLE) */
        uint64_t thread_unknown_lost;   /* the data ring lost records (PERF_RECORD_LOST) */
        uint64_t thread_unknown_no_clock; /* no time conversion, a switch in the record's chunk */
        uint64_t switch_overflows;      /* task switches applied early: more in one AUX chunk than the log holds */
        /* A live event (the replay leaves these zero and `state` "replay"): */
        uint64_t reenables;             /* PERF_EVENT_IOC_ENABLE after a session ended */
        uint64_t aux_stalls;            /* of which: ended with no TRUNCATED seen (its record lost) */
        uint64_t aux_fault_restarts;    /* sessions found stopped, event on, no TRUNCATED: restarted (a buffer fault) */
        uint64_t not_sampling_ns;       /* from the last record before each truncation to the first after */
        bool time_conv;                 /* SPE timestamps convert to perf time (the user page's cap_user_time_zero) */
        uint64_t last_record_ns;        /* the last record's Timestamp in perf time, 0: none or no conversion */
        const char *state;              /* "active", "retrying", "failed", "offline"...: a static string */
        char note[SPE_STREAM_NOTE_MAX]; /* what is wrong or was given up on this CPU, "" when nothing */
};

/* One CPU of the cpu-clock sampler: what its data ring brought and lost. */
struct sampler_cpu_stats {
        uint32_t cpu;
        uint64_t samples;               /* PERF_RECORD_SAMPLE handed on */
        uint64_t lost;                  /* PERF_RECORD_LOST: records the data ring had no room for */
        uint64_t lost_samples;          /* PERF_RECORD_LOST_SAMPLES */
        uint64_t throttles;             /* PERF_RECORD_THROTTLE */
        uint64_t callchain_truncated;   /* callchains the kernel cut at max_stack */
        uint64_t stack_truncated;       /* user stack copies that filled the whole stack_user size */
        uint64_t bad_records;           /* records that did not parse: skipped */
        const char *state;              /* "active", "retrying", "failed", "offline": a static string */
        char note[SPE_STREAM_NOTE_MAX]; /* what is wrong on this CPU, "" when nothing */
};

/* The sampler's process table (collectors/proc-table.h): counts since start, procs now. */
struct proc_table_stats {
        uint64_t procs;                 /* processes in the table now */
        uint64_t procs_read;            /* processes whose /proc was read */
        uint64_t procs_gone;            /* ... that had exited before (names and mappings unknown) */
        uint64_t mappings_read;         /* executable mappings read from /proc/PID/maps */
        uint64_t threads_read;          /* thread names read from /proc */
        uint64_t reused;                /* PIDs found reused without their FORK seen */
        uint64_t evictions;             /* live processes pushed out of a full set */
        uint64_t aged_out;              /* exited processes dropped */
        uint64_t gone;                  /* processes told gone (SOURCE_TASK_GONE) */
        uint64_t gone_early;            /* of them, told before a whole drain: too many were waiting */
};

#define SOURCE_REASON_MAX 512
#define SOURCE_WARNINGS_MAX 3
#define SOURCE_WARNING_LEN 256

struct source_status {
        const char *kind;               /* "replay", "spe", "sampler", "pmu": a static string */
        enum source_state state;
        char reason[SOURCE_REASON_MAX]; /* why not running, or what failed; "" when fine */
        int error;                      /* FAILED: the negative errno that stopped it */
        /* What is wrong with input that read fine (a replay's undecoded bytes, say). */
        char warnings[SOURCE_WARNINGS_MAX][SOURCE_WARNING_LEN];
        size_t n_warnings;
        uint64_t sample_period;         /* operations or events per sample, 0 unknown */
        uint64_t sample_frequency;      /* Hz per CPU of a frequency-driven source (the sampler), 0 none */
        unsigned throttle_shift;        /* source_throttle()'s: sampling 2^shift times less often than configured */
        /* Per-CPU SPE streams, ascending by CPU; owned by the status (source_status_done()). */
        struct spe_stream_stats *cpus;
        size_t n_cpus;
        /* The sampler's CPUs, ascending; owned by the status (source_status_done()). */
        struct sampler_cpu_stats *sampler_cpus;
        size_t n_sampler_cpus;
        struct proc_table_stats procs;  /* the source's process table (collectors/proc-table.h); zero without one */
};

void source_status_done(struct source_status *s);
/* "starting", "running", "done", "failed", "off". */
const char *source_state_to_string(enum source_state s);

/* ---- The interface --------------------------------------------------------- */

struct source;

struct source_ops {
        const char *kind;
        /*
         * Start on `cpus` (NULL: every CPU the source can cover) and register
         * with `event`; the source's handlers then call the sink. Returns 0,
         * or a negative errno with the status saying why (state OFF or FAILED).
         */
        int (*start)(struct source *s, sd_event *event, const struct cpulist *cpus);
        /*
         * Hand at most `budget` records or samples to the sink: 1 when more is
         * ready, 0 when drained for now (or the input ended), negative errno on
         * failure. The source's own handlers call it; the collector also does
         * before it closes an epoch, so a quiet CPU's partial buffer is counted.
         * A drain that stops at its budget leaves the source's own event
         * pending, whoever called it, so the rest is read on a later turn of
         * the loop. A drain that reaches the end of a finite input sets the
         * state, then calls sink->state.
         */
        int (*drain)(struct source *s, size_t budget);
        /* The online CPUs changed (hotplug): open what came, close what went. May be NULL. */
        int (*cpus_changed)(struct source *s, const struct cpulist *online);
        /* A copy of the source's status (the caller owns it: source_status_done()). */
        void (*status)(struct source *s, struct source_status *ret);
        /*
         * Sample 2^shift times less often than configured (the daemon's CPU
         * budget): SPE's period shifted left, the sampler's frequency right
         * (1 Hz at least); 0 restores the configuration. Running events
         * change at once (SPE: PERF_EVENT_IOC_PERIOD; the sampler reopens
         * its events), events opened later are opened so; the status's
         * sample_period says what is in effect.
         * Returns 0 or a negative errno (some CPUs kept their rate: their
         * notes say why). NULL: the source has no rate to change (a replay).
         */
        int (*throttle)(struct source *s, unsigned shift);
        /* Unregister from the loop and free everything. */
        void (*free)(struct source *s);
};

/* Implementations embed this first and set ops; the helpers below dispatch. */
struct source {
        const struct source_ops *ops;
        const struct source_sink *sink;
        struct task_map *tasks;         /* the shared tid -> pid, comm, start, cgroup map; may be NULL */
};

static inline int source_start(struct source *s, sd_event *event, const struct cpulist *cpus) {
        return s->ops->start(s, event, cpus);
}

static inline int source_drain(struct source *s, size_t budget) {
        return s->ops->drain(s, budget);
}

static inline int source_cpus_changed(struct source *s, const struct cpulist *online) {
        return s->ops->cpus_changed ? s->ops->cpus_changed(s, online) : 0;
}

static inline int source_throttle(struct source *s, unsigned shift) {
        return s->ops->throttle ? s->ops->throttle(s, shift) : -EOPNOTSUPP;
}

static inline void source_status(struct source *s, struct source_status *ret) {
        s->ops->status(s, ret);
}

static inline struct source *source_free(struct source *s) {
        if (s)
                s->ops->free(s);
        return NULL;
}
