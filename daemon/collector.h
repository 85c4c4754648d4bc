/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The collector thread (DESIGN.md §3): one epoll loop that owns every
 * collector fd and the aggregate store, and is their only writer. Each
 * counting interval it reads the PMU and publishes a `struct collector_view`
 * as the store's attachment, so a reader's one store snapshot holds the
 * counters, the SPE aggregates and the stream statistics of the same
 * moment. Each cycle ends with a heartbeat that /healthz and the systemd
 * watchdog look at, so both report real progress.
 */

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "pmu-collector.h"
#include "replay.h"
#include "spe-metrics.h"
#include "spe-replay.h"
#include "store.h"
#include "strbuf.h"
#include "symbols.h"

struct collector_options {
        uint64_t interval_usec;
        bool pmu_enable;
        uint32_t pmu_events_mask; /* bit i: pmu_event_id i */
        uint32_t pmu_general_counters;
        struct store_options store;
        /*
         * --replay: read from replay_fd (replay_open()'s, left open) into the
         * store by the collector thread before its loop starts; stopping the
         * collector interrupts it. NULL: no replay.
         */
        const struct replay_args *replay;
        int replay_fd;
};

/* What one cycle produced. Immutable once published. */
struct collector_view {
        uint64_t cycle;
        double interval_seconds;
        struct pmu_snapshot *pmu; /* NULL when counting is off or could not start */
        char pmu_reason[256];     /* why pmu is NULL */

        /* SPE: where records came from and how the streams fared. */
        const char *spe_source;   /* "replay", or NULL when there is no SPE source */
        char spe_reason[256];     /* why there is none */
        size_t n_spe_cpus;
        struct spe_stream_stats *spe_cpus;
        /* What is wrong with the replayed input (replay_warnings()). */
        char spe_warnings[REPLAY_WARNINGS_MAX][REPLAY_WARNING_LEN];
        size_t n_spe_warnings;
        /* [kind * SPE_LAT_OPS + op], shared by views; NULL before the first epoch. */
        const struct spe_latency_cum *latency;
        uint64_t store_bytes; /* the store's memory bound */
};

struct collector;

/* [store] settings as store options; the line size from sysfs when not set. */
void collector_store_options(const struct config *cfg, struct store_options *ret);
/* Everything the collector takes from the configuration. */
void collector_options_from_config(const struct config *cfg, struct collector_options *ret);

int collector_start(const struct collector_options *opts, struct collector **ret);
/* The symbol cache's counters (any thread). */
void collector_symbols_stats(struct collector *c, struct symbols_stats *ret);
struct collector *collector_stop(struct collector *c);

/* New options take effect at the next cycle (PMU events are reopened if they changed;
 * store sizes need a restart). */
void collector_reconfigure(struct collector *c, const struct collector_options *opts);

/*
 * With a replay: an fd that becomes readable when the replay has been loaded
 * (or failed), then collector_replay_result() says how it went: 0, or a
 * negative errno with the reason in ret_error. -1 without a replay.
 */
int collector_replay_fd(struct collector *c);
int collector_replay_result(struct collector *c, char *ret_error, size_t len);

/* A reference to the newest store snapshot (never NULL): release with store_snapshot_unref(). */
struct store_snapshot *collector_snapshot(struct collector *c);
/* The collector's view inside a snapshot (never NULL). */
const struct collector_view *collector_view(const struct store_snapshot *snap);

/*
 * A gzip-compressed pprof profile of the hot PCs over a window, symbolized
 * from the mappings the sources reported. Any thread.
 */
int collector_profile(struct collector *c, uint64_t window_ns, struct strbuf *ret_gz);
/* The same of the epochs overlapping [start_ns, end_ns) of the store's clock. Any thread. */
int collector_profile_span(struct collector *c, uint64_t start_ns, uint64_t end_ns, struct strbuf *ret_gz);
/* Now, in the store's clock (CLOCK_MONOTONIC ns). Any thread. */
uint64_t collector_now_ns(struct collector *c);

/* The function a PC of a process lies in, copied into buf; false when unknown. Any thread. */
bool collector_symbol(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len);
/* The NUMA node of a physical address (sysfs, or a replayed file's topology); -1 when unknown. */
int collector_node(struct collector *c, uint64_t pa);
/* The file mapped at pc in pid (SYMBOLS_KERNEL_NAME for kernel addresses); false when unknown. */
bool collector_object(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len);

/* Completed cycles, and whether the last one is recent (3 intervals, at least 5 s). */
uint64_t collector_cycles(struct collector *c);
bool collector_alive(struct collector *c);

uint64_t now_monotonic_usec(void);

/*
 * A replay's time is the file's: its records' SPE timestamps, made perf
 * time by the file's TIME_CONV, drive the store's epochs, and the file's
 * last timestamp is "now" for good (the store's clock is frozen), so what
 * was replayed never ages out of a window. Intervals are Unix time when the
 * file has clock data (perf record -k CLOCK), else perf time, labelled
 * "perf". The clock data ties the chosen clock to the time of day while
 * TIME_CONV gives the kernel's perf clock: on arm64 both count from boot
 * (CLOCK_MONOTONIC and sched_clock), close but not equal, so such dates are
 * as good as that. A file without timestamps is one epoch with no span.
 */
struct replay_clock {
        struct store *store;
        uint64_t epoch_ns;              /* 0: the whole file is one epoch (--once) */
        /* Closes an epoch at end_ns (the collector folds it into its histograms too). */
        void (*epoch_end)(void *userdata, uint64_t end_ns);
        void *userdata;

        struct source_clock file;
        bool started, closed;
        uint64_t epoch_start_ns, last_ns;
};

/* Before store_add() of each record: closes the epochs its time has passed. */
void replay_clock_record(struct replay_clock *t, const struct spe_record *r);
/* After the file: closes the last epoch at the file's end and freezes the store's clock. */
void replay_clock_finish(struct replay_clock *t);
/* A source_sink.clock callback; userdata is the struct replay_clock. */
void replay_clock_file(void *userdata, const struct source_clock *c);
