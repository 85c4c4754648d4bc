/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The collector thread: one sd-event loop that owns every source (struct
 * source, collectors/source.h, each registering its own fds or events),
 * PMU counting on its own timer, the epoch timer, and the aggregate store,
 * whose only writer it is. Each counting interval it reads the PMU and
 * publishes a `struct collector_view` as the store's attachment, so a
 * reader's one store snapshot holds the counters, the SPE aggregates and
 * every source's status of the same moment. Each cycle ends with a
 * heartbeat that /healthz and the systemd watchdog look at, so both report
 * real progress; sources drain with a budget, so a long replay cannot
 * starve the cycle.
 */

#include <stdbool.h>
#include <stdint.h>

#include "budget.h"
#include "config.h"
#include "pmu-collector.h"
#include "pprof.h"
#include "replay.h"
#include "source.h"
#include "spe-profile.h"
#include "sample-sink.h"
#include "sampler-source.h"
#include "spe-live-source.h"
#include "store.h"
#include "strbuf.h"
#include "symbols.h"

struct symbolizer;

struct collector_options {
        uint64_t interval_usec;
        bool pmu_enable;
        uint32_t pmu_events_mask; /* bit i: pmu_event_id i */
        uint32_t pmu_general_counters;
        struct store_options store;
        /* Live SPE ([spe]); never with a replay. sysfs_root is $ARMPROFD_SYSFS_ROOT (tests). */
        bool spe_enable;
        struct spe_live_options spe;
        /*
         * The cpu-clock sampler ([sampler]): auto runs it where live SPE
         * does not run (no SPE, or [spe] enable = no); never with a replay.
         */
        enum config_spe_enable sampler_enable;
        struct sampler_options sampler;
        struct sample_sink_options sample_sink;
        struct privacy_policy privacy;  /* what answers and profiles say of addresses ([privacy]) */
        /* [budget]: the collector's share of the host's CPUs that slows sampling down (0: none). */
        double budget_cpu_percent;
        uint64_t budget_window_usec;
        /*
         * --replay: read from replay_fd (replay_open()'s, left open) into the
         * store by a replay source on the collector's loop, between its
         * timers; stopping the collector interrupts it. NULL: no replay.
         */
        const struct replay_args *replay;
        int replay_fd;
};

/*
 * What one cycle produced. Immutable once published.
 *
 * sources[0] is PMU counting (kind "pmu": RUNNING, or OFF with the reason),
 * which runs on its own timer; then each source on the seam in the order
 * they were added, or, when none runs, one of kind "spe" that is OFF and
 * says why (what sysfs shows of this machine's SPE).
 */
struct collector_view {
        uint64_t cycle;
        double interval_seconds;
        struct pmu_snapshot *pmu; /* NULL when counting is off or could not start */
        struct source_status *sources;
        size_t n_sources;
        uint64_t store_bytes; /* the store's memory bound */
        /* The CPU budget (budget.h) at this cycle; budget_applies: a live source has a rate to change. */
        struct budget budget;
        bool budget_applies;
};

/* The SPE source of a view (never NULL): live SPE or the replay. */
const struct source_status *collector_view_spe(const struct collector_view *v);
/* The sampler of a view (never NULL: one that is OFF and says why when none runs). */
const struct source_status *collector_view_sampler(const struct collector_view *v);
/* Whether a source is up: it started, runs, or ran a finite input to its end. */
bool source_status_up(const struct source_status *s);

struct collector;

/* [store] settings as store options; the line size from sysfs when not set. */
void collector_store_options(const struct config *cfg, struct store_options *ret);
/*
 * Who ran a record, for store_add_task(): its thread's command as the task
 * map the sources fed says it now (a record without a thread: its
 * process's leader's). The sinks call it once for a run of one thread.
 */
void collector_store_task(const struct task_map *tasks, uint32_t pid, uint32_t tid, struct store_task *ret);
/* Everything the collector takes from the configuration. */
void collector_options_from_config(const struct config *cfg, struct collector_options *ret);

int collector_start(const struct collector_options *opts, struct collector **ret);
/* The symbol cache's counters (any thread). */
void collector_symbols_stats(struct collector *c, struct symbols_stats *ret);
/*
 * The symbolizer pprof requests read through (any thread): its cache lock is
 * what a long profile build holds; the collector thread never takes it.
 */
struct symbolizer *collector_symbolizer(struct collector *c);
struct collector *collector_stop(struct collector *c);

/* New options take effect at the next cycle (PMU events are reopened if they changed;
 * store sizes need a restart). */
void collector_reconfigure(struct collector *c, const struct collector_options *opts);

/*
 * With a replay: an fd that becomes readable when the replay has ended (read
 * to its end, or failed), then collector_replay_result() says how it went:
 * 0, or a negative errno with the reason in ret_error. -1 without a replay.
 * The collector serves while the replay runs (/status says its state).
 */
int collector_replay_fd(struct collector *c);
int collector_replay_result(struct collector *c, char *ret_error, size_t len);

/* A reference to the newest store snapshot (never NULL): release with store_snapshot_unref(). */
struct store_snapshot *collector_snapshot(struct collector *c);
/* The collector's view inside a snapshot (never NULL). */
const struct collector_view *collector_view(const struct store_snapshot *snap);

/*
 * A gzip-compressed pprof profile of the hot PCs over a window (the SPE
 * profile of /debug/pprof/spe), symbolized from the mappings the sources
 * reported. Any thread.
 */
int collector_profile(struct collector *c, uint64_t window_ns, struct strbuf *ret_gz);
/*
 * /debug/pprof/profile: the epochs overlapping [start_ns, end_ns) of the
 * store's clock, as a CPU profile with stacks where the sampler runs, else
 * as the SPE profile. Any thread.
 */
int collector_profile_span(struct collector *c, uint64_t start_ns, uint64_t end_ns, struct strbuf *ret_gz);
/* What a push sends of a span: its profiles as builders, each NULL when the span has no sample of it. */
struct collector_push_profiles {
        struct pprof_builder *cpu;      /* the sampler's stacks */
        const char *cpu_event;          /* the sampler's event ("cpu-clock"...) */
        bool cpu_is_time;               /* a clock event: the CPU profile counts CPU time */
        struct pprof_builder *spe;      /* SPE's samples, when SPE (live or a replay) is a source */
};
/*
 * The push's profiles of the epochs overlapping [start_ns, end_ns) of snap,
 * with the labels and times `o` asks for: 0 or a negative errno (the
 * builders are then freed). Free them with collector_push_profiles_done().
 * Any thread.
 */
int collector_push_profiles(struct collector *c, const struct store_snapshot *snap, uint64_t start_ns,
                            uint64_t end_ns, const struct profile_options *o, struct collector_push_profiles *ret);
void collector_push_profiles_done(struct collector_push_profiles *p);
/*
 * Close an epoch at at_ns (store clock) too, so a /debug/pprof/profile span
 * ending then is answered then, not at the next regular epoch end (10 s on
 * by default; go tool pprof gives up after 1.5 N + 5 s). Left to the
 * regular end when that comes within half a second after it. False when not taken (a replay,
 * too many pending): the request waits for the regular end. Any thread.
 */
bool collector_request_epoch_end(struct collector *c, uint64_t at_ns);
/* Now, in the store's clock (CLOCK_MONOTONIC ns). Any thread. */
uint64_t collector_now_ns(struct collector *c);

/* Whether the collector replays a file (its epochs follow the file's clock), not live sources. Any thread. */
bool collector_replaying(struct collector *c);

/* A process's cgroup path and service (sample-sink.h); false when unknown. Any thread. */
bool collector_cgroup(struct collector *c, uint32_t pid, char *path, size_t path_len, char *service,
                      size_t service_len);
/*
 * Whether the sampler's kernel frames are named from kallsyms ([privacy]
 * kernel_addresses, and kallsyms showed addresses), or one [kernel]. Any thread.
 */
bool collector_kernel_frames_named(struct collector *c);
/* The sampler's own counters (sample-sink.h); false when no sampler runs. Any thread. */
bool collector_sample_stats(struct collector *c, struct sample_sink_stats *ret);

/* The function a PC of a process lies in, copied into buf; false when unknown. Any thread. */
bool collector_symbol(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len);
/* The NUMA node of a physical address (sysfs, or a replayed file's topology); -1 when unknown. */
int collector_node(struct collector *c, uint64_t pa);
/* The file mapped at pc in pid (SYMBOLS_KERNEL_NAME for kernel addresses); false when unknown. */
bool collector_object(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len);
/* The source file and line of a PC, "FILE:LINE" (symbolizer_source()); false when unknown. */
bool collector_source(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len);
/* The variable at a data address, "SYMBOL+0xOFFSET" (symbolizer_data_symbol()); false when unknown. */
bool collector_data_symbol(struct collector *c, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                           size_t member_len);
/* The mapping of a data address of pid as [privacy] data_addresses = no serves it (privacy_region_fn). */
bool collector_region(struct collector *c, uint32_t pid, uint64_t va, char *name, size_t name_len,
                      uint64_t *ret_offset);
/* What answers may say of addresses ([privacy], fixed at start). */
const struct privacy_policy *collector_privacy(struct collector *c);

/* Completed cycles, and whether the last one is recent (3 intervals, at least 5 s). */
uint64_t collector_cycles(struct collector *c);
bool collector_alive(struct collector *c);

uint64_t now_monotonic_usec(void);
