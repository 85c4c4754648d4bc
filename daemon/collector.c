/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "collector.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "cgroup.h"
#include "cpulist.h"
#include "log.h"
#include "macro.h"
#include "memnode.h"
#include "parse-util.h"
#include "perf-data.h"
#include "pmu-sysfs.h"
#include "replay-clock.h"
#include "replay-source.h"
#include "spe-live-source.h"
#include "spe-pmu.h"
#include "strbuf.h"
#include "symbolizer.h"
#include "task-map.h"
#include "thread-names.h"
#include "unwind.h"

#define SYSFS_LINE_SIZE "/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size"
#define SYMBOLS_MAX_FILES_DAEMON 16
#define SYMBOLS_MAX_PER_FILE_DAEMON (128 * 1024)
#define COLLECTOR_MIN_STALE_USEC (5 * USEC_PER_SEC)
#define COLLECTOR_STALE_INTERVALS 3
/*
 * sd-event's timer accuracy (sd_event_add_time(3)): 0 would let it move the
 * counting and epoch timers by up to 250 ms to coalesce wakeups; a
 * timerfd's periodic timer fired on time, and so do these.
 */
#define COLLECTOR_TIMER_ACCURACY_USEC 1
/*
 * Records a source may hand on when the collector drains it before closing
 * an epoch: a quiet CPU's partial buffer goes into the epoch it belongs to,
 * a backlog beyond this into the next one, as the loop would have it.
 */
#define COLLECTOR_EPOCH_DRAIN_BUDGET 65536
/*
 * Epoch ends requested by /debug/pprof/profile?seconds=N spans, at once:
 * more wait for the regular epoch timer. A requested end this close before
 * the regular one is left to it, so scrapes timed on the epochs cost no
 * extra epoch.
 */
#define COLLECTOR_BOUNDARIES 16
#define COLLECTOR_BOUNDARY_MERGE_NS (NSEC_PER_SEC / 2)

struct view_box {
        struct collector_view view;
};

struct collector {
        pthread_t thread;
        bool thread_started;
        sd_event *event;
        sd_event_source *cycle_timer;
        sd_event_source *epoch_timer;
        sd_event_source *stop_source;
        int stop_fd;                    /* eventfd: another thread asks the loop to exit */
        /* Epoch ends a profile request asked for (collector_request_epoch_end()). */
        sd_event_source *boundary_timer;
        sd_event_source *boundary_source;
        int boundary_fd;                /* eventfd: another thread asked for one */

        /* Collector thread only. */
        struct collector_options opts;
        struct pmu_collector *pmu;
        char pmu_reason[SOURCE_REASON_MAX];
        int pmu_logged_state;
        uint64_t armed_usec;
        uint64_t next_cycle_usec, next_epoch_usec;
        struct store *store;
        char spe_reason[SOURCE_REASON_MAX]; /* what /status says of SPE while no source runs */
        char sampler_reason[SOURCE_REASON_MAX]; /* and of the sampler while it does not run */
        char sampler_event[CONFIG_SAMPLER_EVENT_MAX]; /* its event's name, ours (the configuration is reloaded) */
        bool kernel_named;              /* kernel frames are named from kallsyms (set before the thread starts) */
        bool sampler_waiting;           /* [sampler] enable = auto while SPE runs: started if SPE fails */
        bool sampler_running;           /* a sampler source was added (collector thread) */
        /* Sampling interval in operations, 0 unknown; set when a replay ends, read by pprof requests. */
        _Atomic uint64_t spe_period;

        /* The sources on the seam, and the sink that wires them to the store. */
        struct source **sources;
        size_t n_sources;
        struct cpulist online;          /* what the sources were last told of (hotplug) */
        bool have_online;
        struct source_sink sink;
        struct replay_clock clock;      /* a replay's epochs, by the file's time */
        /* tid -> pid, comm, start, cgroup: one map every source attributes by and adds to. */
        struct task_map *tasks;
        /* The sampler's samples to named stacks in the store; NULL when no sampler runs. */
        struct sample_sink *samples;

        /* --replay: a source like the others; replay_done_fd is signalled when it ended. */
        struct replay_args replay;
        bool has_replay;
        int replay_fd;
        int replay_done_fd;
        int replay_result;                      /* guarded by lock */
        char replay_error[SOURCE_REASON_MAX];   /* guarded by lock */

        /* Symbols of sampled processes: fed by the sources, read by pprof requests. */
        struct symbolizer symbols;
        pthread_mutex_t memnode_lock;
        struct memnode *memnode;        /* PA -> NUMA node; under memnode_lock */

        pthread_mutex_t boundary_lock;  /* guards boundaries */
        uint64_t boundaries[COLLECTOR_BOUNDARIES]; /* store-clock ns, 0 free */

        pthread_mutex_t lock; /* guards pending */
        struct collector_options pending;
        bool has_pending;

        /* The CPU budget: collector thread only; each view carries a copy. */
        struct budget budget;
        bool on_thread;                 /* the loop runs on its thread (the first cycle does not) */

        _Atomic uint64_t interval_usec;
        _Atomic uint64_t last_cycle_usec;
        _Atomic uint64_t cycles;
};

/* [store] line_size, else sysfs's, else LINE_SIZE_DEFAULT: one check for both (HACKING.md §5). */
static unsigned line_size(const struct config *cfg) {
        char buf[DECIMAL_STR_MAX(uint32_t) + 1] = ""; /* and its '\n' */
        uint32_t v;
        FILE *f;

        if (cfg->store.line_size)
                return cfg->store.line_size;
        f = fopen(SYSFS_LINE_SIZE, "re");
        if (f) {
                if (fgets(buf, sizeof(buf), f))
                        buf[strcspn(buf, "\n")] = '\0';
                fclose(f);
        }
        /* Only a sane power of two from sysfs is trusted. */
        if (parse_line_size(buf, &v) == 0)
                return v;
        return LINE_SIZE_DEFAULT;
}

void collector_store_options(const struct config *cfg, struct store_options *ret) {
        store_options_init(ret);
        ret->epoch_ns = cfg->store.epoch_usec * NSEC_PER_USEC;
        ret->epochs = cfg->store.epochs;
        ret->hotpcs = cfg->store.hotpcs;
        ret->hotlines = cfg->store.hotlines;
        ret->line_offsets = cfg->store.line_offsets;
        ret->line_size = line_size(cfg);
        config_stack_options(cfg, ret);
        /* Physical addresses find sharing across processes, but they are only used
         * (and then served as line addresses) when the administrator allows it. */
        ret->lines_by_pa = cfg->privacy.physical_addresses;
}

void collector_options_from_config(const struct config *cfg, struct collector_options *ret) {
        *ret = (struct collector_options) {
                .interval_usec = cfg->pmu.interval_usec,
                .pmu_enable = cfg->pmu.enable,
                .pmu_events_mask = cfg->pmu.events_mask,
                .pmu_general_counters = cfg->pmu.general_counters,
        };
        collector_store_options(cfg, &ret->store);
        ret->budget_cpu_percent = cfg->budget.cpu_percent;
        ret->budget_window_usec = cfg->budget.window_usec;
        ret->spe_enable = cfg->spe.enable != CONFIG_SPE_NO;
        ret->sampler_enable = cfg->sampler.enable;
        ret->sampler = (struct sampler_options) {
                .sysfs_root = getenv("ARMPROFD_SYSFS_ROOT"),
                .event_name = cfg->sampler.event,
                .frequency = cfg->sampler.frequency,
                .max_stack = cfg->sampler.max_stack,
                .unwind = cfg->sampler.unwind == CONFIG_UNWIND_FP      ? SAMPLER_UNWIND_FP
                          : cfg->sampler.unwind == CONFIG_UNWIND_DWARF ? SAMPLER_UNWIND_DWARF
                                                                       : SAMPLER_UNWIND_AUTO,
                .stack_bytes = (uint32_t) cfg->sampler.stack_size,
                /* The registers the unwinder reads, and no more (136 bytes a sample on x86-64). */
                .regs_mask = unwind_regs_mask(),
                .data_bytes = cfg->sampler.data_buffer,
                /* drain_interval 0: the sampler's own second (its ring wakes it at half full anyway). */
        };
        /* The name was checked when the configuration was read. */
        (void) sampler_event_parse(cfg->sampler.event, &ret->sampler.type, &ret->sampler.config);
        config_privacy_policy(cfg, &ret->privacy);
        ret->sample_sink = (struct sample_sink_options) {
                .unwind = cfg->sampler.unwind,
                .kernel_addresses = cfg->privacy.kernel_addresses,
                .max_stack = cfg->sampler.max_stack,
        };
        ret->spe = (struct spe_live_options) {
                /* A test's simulated sysfs and /proc; production reads /sys and /proc. */
                .sysfs_root = getenv("ARMPROFD_SYSFS_ROOT"),
                .procfs_root = getenv("ARMPROFD_PROCFS_ROOT"),
                .pmu = {
                        .interval = cfg->spe.period,
                        .physical_addresses = cfg->privacy.physical_addresses,
                        .jitter = cfg->spe.jitter,
                        .loads = cfg->spe.load_filter,
                        .stores = cfg->spe.store_filter,
                        .branches = cfg->spe.branch_filter,
                        .min_latency = cfg->spe.min_latency,
                        .event_filter = cfg->spe.event_filter,
                        .inv_event_filter = cfg->spe.inv_event_filter,
                        .exclude_kernel = cfg->spe.exclude_kernel,
                },
                .required = cfg->spe.enable == CONFIG_SPE_YES,
                .aux_bytes = cfg->spe.aux_buffer,
                .data_bytes = cfg->spe.data_buffer,
                .watermark = cfg->spe.watermark,
                .drain_interval_usec = cfg->spe.drain_interval_usec,
                /* [privacy] data_addresses = no serves data addresses by mapping: learn the data ones. */
                .data_mappings = !cfg->privacy.data_addresses,
        };
}

uint64_t now_monotonic_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

/* The store's clock for live data: CLOCK_MONOTONIC, which neither jumps nor stops under NTP steps. */
static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC, taken once at start: the store's times
 * plus this are Unix times. Fixed, so an interval keeps its length when the
 * wall clock is stepped (a date then drifts from `date` by the step until
 * restart). Read between two monotonic reads to bound the error.
 */
static int64_t unix_minus_monotonic_ns(void) {
        struct timespec w;
        uint64_t m0, m1;

        m0 = now_ns();
        clock_gettime(CLOCK_REALTIME, &w);
        m1 = now_ns();
        return (int64_t) w.tv_sec * (int64_t) NSEC_PER_SEC + w.tv_nsec - (int64_t) (m0 + (m1 - m0) / 2);
}

static void view_destroy(void *data) {
        struct view_box *b = data;

        pmu_snapshot_free(b->view.pmu);
        for (size_t i = 0; i < b->view.n_sources; i++)
                source_status_done(&b->view.sources[i]);
        free(b->view.sources);
        free(b);
}

struct store_snapshot *collector_snapshot(struct collector *c) {
        return store_snapshot_get(c->store);
}

const struct collector_view *collector_view(const struct store_snapshot *snap) {
        /*
         * Before the first cycle nothing is known to run. Never written: the
         * view's pointer is not const only because published views own theirs.
         */
        static struct source_status starting_sources[] = {
                { .kind = "pmu", .state = SOURCE_OFF, .reason = "starting" },
                { .kind = "spe", .state = SOURCE_OFF, .reason = "starting" },
        };
        static const struct collector_view starting = {
                .sources = starting_sources,
                .n_sources = ELEMENTSOF(starting_sources),
        };
        const struct view_box *b = store_snapshot_attachment(snap);

        return b ? &b->view : &starting;
}

const struct source_status *collector_view_spe(const struct collector_view *v) {
        static const struct source_status none = { .kind = "spe", .state = SOURCE_OFF };

        for (size_t i = 0; i < v->n_sources; i++)
                if (!streq(v->sources[i].kind, "pmu") && !streq(v->sources[i].kind, "sampler"))
                        return &v->sources[i];
        return &none;
}

const struct source_status *collector_view_sampler(const struct collector_view *v) {
        static const struct source_status none = { .kind = "sampler", .state = SOURCE_OFF, .reason = "starting" };

        for (size_t i = 0; i < v->n_sources; i++)
                if (streq(v->sources[i].kind, "sampler"))
                        return &v->sources[i];
        return &none;
}

bool source_status_up(const struct source_status *s) {
        /* A replay that waits for its first bytes is up: nothing failed. */
        return s->state == SOURCE_STARTING || s->state == SOURCE_RUNNING || s->state == SOURCE_DONE;
}

static void pmu_close(struct collector *c, const char *reason) {
        c->pmu = pmu_collector_free(c->pmu);
        snprintf(c->pmu_reason, sizeof(c->pmu_reason), "%s", reason);
}

static void pmu_open(struct collector *c) {
        enum pmu_event_id ids[_PMU_EVENT_MAX];
        size_t n = 0;
        int r;

        if (!c->opts.pmu_enable) {
                pmu_close(c, "disabled by configuration ([pmu] enable = no)");
                return;
        }
        for (int e = 0; e < _PMU_EVENT_MAX; e++)
                if (c->opts.pmu_events_mask & (UINT32_C(1) << e))
                        ids[n++] = (enum pmu_event_id) e;

        r = pmu_collector_new(&(struct pmu_collector_config) {
                                      .events = ids,
                                      .n_events = n,
                                      .general_counters = c->opts.pmu_general_counters,
                              },
                              &c->pmu);
        if (r < 0) {
                char reason[SOURCE_REASON_MAX];

                snprintf(reason, sizeof(reason), "cannot start counting: %s", strerror(-r));
                log_error("pmu: %s", reason);
                pmu_close(c, reason);
        }
        c->pmu_logged_state = -1;
}

/* One line per change of the collector's state, not one per interval. */
static void pmu_log_state(struct collector *c, const struct pmu_snapshot *s) {
        if ((int) s->state == c->pmu_logged_state)
                return;
        c->pmu_logged_state = (int) s->state;
        switch (s->state) {
        case PMU_STATE_OK:
                log_info("pmu: counting %zu CPUs", s->n_cpus);
                break;
        case PMU_STATE_DEGRADED:
                log_notice("pmu: counting %zu CPUs; %s", s->n_cpus, s->message);
                break;
        default:
                log_error("pmu: %s", s->message);
                break;
        }
}

/* A source that has a rate to change runs: live SPE or the sampler (a replay has none). */
static bool budget_applies(const struct collector *c) {
        for (size_t i = 0; i < c->n_sources; i++)
                if (c->sources[i]->ops->throttle)
                        return true;
        return false;
}

/* Each source with a rate samples at the budget's slowdown. */
static void budget_apply(struct collector *c) {
        for (size_t i = 0; i < c->n_sources; i++) {
                struct source_status st;
                int k;

                if (!c->sources[i]->ops->throttle)
                        continue;
                k = source_throttle(c->sources[i], c->budget.shift);
                if (k < 0)
                        log_warning_errno(k, "budget: %s: not every CPU changed its rate: %m",
                                          c->sources[i]->ops->kind);
                source_status(c->sources[i], &st);
                if (streq(st.kind, "spe"))
                        atomic_store(&c->spe_period, st.sample_period);
                source_status_done(&st);
        }
}

/*
 * The collector thread's CPU time against the host's CPUs (the online
 * ones the sources follow), once a cycle; over the budget, sampling slows
 * down (budget.h).
 */
static void budget_cycle(struct collector *c) {
        struct timespec cpu;
        unsigned before = c->budget.shift, n_cpus;

        if (c->have_online)
                n_cpus = cpulist_count(&c->online);
        else {
                long online = sysconf(_SC_NPROCESSORS_ONLN);

                n_cpus = online > 0 ? (unsigned) online : 1;
        }
        budget_set_options(&c->budget, &(struct budget_options) {
                .cpu_percent = c->opts.budget_cpu_percent,
                .window_ns = c->opts.budget_window_usec * NSEC_PER_USEC,
                .n_cpus = n_cpus,
        });
        /* The first cycle runs before the thread does (collector_start()). */
        if (!budget_applies(c) || !c->on_thread || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) < 0)
                return;
        if (!budget_update(&c->budget, now_ns(), (uint64_t) cpu.tv_sec * NSEC_PER_SEC + (uint64_t) cpu.tv_nsec) &&
            c->budget.shift == before)
                return;
        if (c->budget.shift > before)
                log_notice("budget: the collector used %.3g%% of the host's %u CPUs over %g s, above [budget] "
                           "cpu_percent = %g: sampling %u times less often",
                           c->budget.last_percent, c->budget.opts.n_cpus,
                           (double) c->opts.budget_window_usec / USEC_PER_SEC, c->opts.budget_cpu_percent,
                           1u << c->budget.shift);
        else if (c->budget.shift > 0)
                log_notice("budget: %.3g%% of the host's CPUs: sampling %u times less often",
                           c->budget.last_percent, 1u << c->budget.shift);
        else
                log_notice("budget: %.3g%% of the host's CPUs: sampling at the configured rate again",
                           c->budget.last_percent);
        budget_apply(c);
}

/* Publish what this cycle knows as the store's attachment (one consistent snapshot). */
static void publish_view(struct collector *c, struct pmu_snapshot *pmu) {
        struct view_box *b = xcalloc(1, sizeof(*b));
        struct source_status *st;
        bool has_spe = false, has_sampler = false;
        size_t n;

        b->view.pmu = pmu;
        /* PMU counting, every source, and an SPE and a sampler entry that say why when they do not run. */
        b->view.sources = st = xcalloc(3 + c->n_sources, sizeof(*st));
        /* Counting runs on its own timer, but says how it is as any source does. */
        st[0] = (struct source_status) { .kind = "pmu", .state = pmu ? SOURCE_RUNNING : SOURCE_OFF };
        snprintf(st[0].reason, sizeof(st[0].reason), "%s", pmu ? "" : c->pmu_reason);
        n = 1;
        for (size_t i = 0; i < c->n_sources; i++) {
                source_status(c->sources[i], &st[n]);
                if (streq(st[n].kind, "sampler"))
                        has_sampler = true;
                else
                        has_spe = true;
                n++;
        }
        if (!has_spe) {
                st[n] = (struct source_status) { .kind = "spe", .state = SOURCE_OFF };
                snprintf(st[n].reason, sizeof(st[n].reason), "%s", c->spe_reason);
                n++;
        }
        if (!has_sampler) {
                st[n] = (struct source_status) { .kind = "sampler", .state = SOURCE_OFF };
                snprintf(st[n].reason, sizeof(st[n].reason), "%s", c->sampler_reason);
                n++;
        }
        b->view.n_sources = n;
        b->view.store_bytes = store_bytes(&c->opts.store);
        b->view.budget = c->budget;
        b->view.budget_applies = budget_applies(c);
        b->view.interval_seconds = (double) c->armed_usec / USEC_PER_SEC;
        b->view.cycle = atomic_load(&c->cycles) + 1;
        store_publish_attachment(c->store, b, view_destroy);
}

/*
 * Close the epoch (the store folds its latency histograms into the
 * cumulative ones /metrics exports) and publish the mappings the sources
 * reported during it, for readers to symbolize with.
 */
static void epoch_end(struct collector *c, uint64_t end_ns) {
        store_epoch_end(c->store, end_ns);
        symbolizer_publish(&c->symbols);
}

/*
 * Re-arm a one-shot timer for the next period: on the grid of the previous
 * expiry as a periodic timerfd would be, or a full period from now when the
 * period changed or the loop fell behind by more than one.
 */
static int arm(sd_event_source *timer, uint64_t period_usec, bool restart, uint64_t *next_usec) {
        uint64_t now = now_monotonic_usec();
        int k;

        if (restart || *next_usec == 0)
                *next_usec = now + period_usec;
        else {
                *next_usec += period_usec;
                if (*next_usec <= now)
                        *next_usec = now + period_usec;
        }
        k = sd_event_source_set_time(timer, *next_usec);
        if (k < 0)
                return k;
        return sd_event_source_set_enabled(timer, SD_EVENT_ONESHOT);
}

/* CPU hotplug, as the PMU follows it each cycle: each source hears of a change of the online CPUs. */
static void sources_follow_hotplug(struct collector *c) {
        struct cpulist now;
        int k;

        if (c->n_sources == 0)
                return;
        k = pmu_sysfs_read_online(c->opts.spe.sysfs_root, &now);
        if (k < 0) {
                log_debug_errno(k, "collector: cannot read the online CPUs: %m");
                return;
        }
        /* The sources started on every CPU there was: the first read is what they know. */
        if (c->have_online && !cpulist_equal(&now, &c->online))
                for (size_t i = 0; i < c->n_sources; i++) {
                        k = source_cpus_changed(c->sources[i], &now);
                        if (k < 0)
                                log_warning_errno(k, "collector: %s source cannot follow the online CPUs: %m",
                                                  c->sources[i]->ops->kind);
                }
        c->online = now;
        c->have_online = true;
}

static bool spe_up(struct collector *c);
static void collector_add_sampler(struct collector *c);

static void cycle(struct collector *c) {
        struct pmu_snapshot *snap = NULL;
        bool reconfigured = false;
        uint64_t want;

        pthread_mutex_lock(&c->lock);
        if (c->has_pending) {
                reconfigured = c->opts.pmu_enable != c->pending.pmu_enable ||
                               c->opts.pmu_events_mask != c->pending.pmu_events_mask ||
                               c->opts.pmu_general_counters != c->pending.pmu_general_counters;
                c->opts.interval_usec = c->pending.interval_usec;
                c->opts.pmu_enable = c->pending.pmu_enable;
                c->opts.pmu_events_mask = c->pending.pmu_events_mask;
                c->opts.pmu_general_counters = c->pending.pmu_general_counters;
                c->opts.budget_cpu_percent = c->pending.budget_cpu_percent;
                c->opts.budget_window_usec = c->pending.budget_window_usec;
                c->has_pending = false;
        }
        pthread_mutex_unlock(&c->lock);
        if (reconfigured) {
                pmu_close(c, "reconfiguring");
                pmu_open(c);
        }

        /* A new interval starts a full one from now, as timerfd_settime() did. */
        want = atomic_load(&c->interval_usec);
        if (want != c->armed_usec && arm(c->cycle_timer, want, true, &c->next_cycle_usec) == 0)
                c->armed_usec = want;

        sources_follow_hotplug(c);
        if (c->sampler_waiting && !spe_up(c)) {
                log_notice("sampler: SPE no longer samples this machine: starting the cpu-clock sampler");
                collector_add_sampler(c);
        }
        budget_cycle(c);
        if (c->pmu) {
                int k;

                /* Hotplug first, so a CPU that went away is not read. */
                k = pmu_collector_update_cpus(c->pmu);
                if (k < 0)
                        log_debug_errno(k, "pmu: cannot re-read the online CPUs: %m");
                k = pmu_collector_read(c->pmu);
                if (k < 0)
                        log_debug_errno(k, "pmu: read failed: %m");
                k = pmu_collector_snapshot(c->pmu, &snap);
                if (k < 0)
                        log_warning_errno(k, "pmu: cannot take a snapshot: %m");
                else
                        pmu_log_state(c, snap);
        }
        publish_view(c, snap);

        atomic_store(&c->last_cycle_usec, now_monotonic_usec());
        atomic_fetch_add(&c->cycles, 1);
}

static int on_cycle_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct collector *c = userdata;
        int k;

        k = arm(s, c->armed_usec, false, &c->next_cycle_usec);
        if (k < 0)
                log_error_errno(k, "collector: cannot re-arm the counting timer: %m");
        cycle(c);
        return 0;
}

static int on_epoch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct collector *c = userdata;
        int k;

        /* What the sources hold of this epoch goes into it (source_ops.drain). */
        for (size_t i = 0; i < c->n_sources; i++) {
                k = source_drain(c->sources[i], COLLECTOR_EPOCH_DRAIN_BUDGET);
                if (k < 0)
                        log_debug_errno(k, "collector: %s source failed to drain: %m", c->sources[i]->ops->kind);
        }
        epoch_end(c, now_ns());
        k = arm(s, c->opts.store.epoch_ns / NSEC_PER_USEC, false, &c->next_epoch_usec);
        if (k < 0)
                log_error_errno(k, "collector: cannot re-arm the epoch timer: %m");
        return 0;
}

/* The earliest requested epoch end, 0 when none (under boundary_lock). */
static uint64_t next_boundary_locked(struct collector *c) {
        uint64_t min = 0;

        for (size_t i = 0; i < COLLECTOR_BOUNDARIES; i++)
                if (c->boundaries[i] && (min == 0 || c->boundaries[i] < min))
                        min = c->boundaries[i];
        return min;
}

static void arm_boundary(struct collector *c) {
        uint64_t at;

        pthread_mutex_lock(&c->boundary_lock);
        at = next_boundary_locked(c);
        pthread_mutex_unlock(&c->boundary_lock);
        if (at == 0) {
                (void) sd_event_source_set_enabled(c->boundary_timer, SD_EVENT_OFF);
                return;
        }
        /* Store-clock ns are CLOCK_MONOTONIC: the timer's clock. */
        if (sd_event_source_set_time(c->boundary_timer, at / NSEC_PER_USEC + 1) < 0 ||
            sd_event_source_set_enabled(c->boundary_timer, SD_EVENT_ONESHOT) < 0)
                log_warning("collector: cannot arm a requested epoch end; the regular one will do");
}

/*
 * A requested epoch end is due: what the sources hold goes into the epoch,
 * which closes now, unless the regular one is within the merge distance.
 */
static int on_boundary_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct collector *c = userdata;
        uint64_t now = now_ns(), next = c->next_epoch_usec * NSEC_PER_USEC;
        int k;

        pthread_mutex_lock(&c->boundary_lock);
        for (size_t i = 0; i < COLLECTOR_BOUNDARIES; i++)
                if (c->boundaries[i] && c->boundaries[i] <= now)
                        c->boundaries[i] = 0;
        pthread_mutex_unlock(&c->boundary_lock);
        /*
         * Merged forward only: the regular end this near closes the span for
         * it. One that just closed does not: the span ends after it.
         */
        if (next <= now || next - now >= COLLECTOR_BOUNDARY_MERGE_NS) {
                for (size_t i = 0; i < c->n_sources; i++) {
                        k = source_drain(c->sources[i], COLLECTOR_EPOCH_DRAIN_BUDGET);
                        if (k < 0)
                                log_debug_errno(k, "collector: %s source failed to drain: %m",
                                                c->sources[i]->ops->kind);
                }
                epoch_end(c, now);
        }
        arm_boundary(c);
        return 0;
}

static int on_boundary_request(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct collector *c = userdata;
        uint64_t v;

        if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                log_debug_errno(-errno, "collector: cannot read the epoch-end requests: %m");
        arm_boundary(c);
        return 0;
}

bool collector_request_epoch_end(struct collector *c, uint64_t at_ns) {
        uint64_t one = 1;
        bool taken = false;

        if (c->has_replay || !c->boundary_timer)
                return false;
        pthread_mutex_lock(&c->boundary_lock);
        for (size_t i = 0; i < COLLECTOR_BOUNDARIES && !taken; i++)
                if (c->boundaries[i] == 0 || c->boundaries[i] == at_ns) {
                        c->boundaries[i] = at_ns;
                        taken = true;
                }
        pthread_mutex_unlock(&c->boundary_lock);
        if (taken && write(c->boundary_fd, &one, sizeof(one)) != sizeof(one))
                log_debug_errno(-errno, "collector: cannot wake the loop for an epoch end: %m");
        return taken;
}

static int on_stop(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void *collector_main(void *userdata) {
        struct collector *c = userdata;
        int k;

        c->on_thread = true;
        k = sd_event_loop(c->event);
        if (k < 0)
                log_error_errno(k, "collector: the event loop failed: %m");
        return NULL;
}

void collector_store_task(const struct task_map *tasks, uint32_t pid, uint32_t tid, struct store_task *ret) {
        const struct task_info *t = tid != SOURCE_NO_ID ? task_map_get(tasks, tid) : NULL;

        if (!t && pid != SOURCE_NO_ID)
                t = task_map_get(tasks, pid);
        store_task_init(ret, pid, tid, t ? t->comm : NULL);
}

/* The sink of the collector's sources (userdata: the collector): the store, by the replay's clock. */
static void replay_sink(void *userdata, const struct spe_record *recs, const uint32_t *pids,
                        const uint32_t *tids, size_t n) {
        struct collector *c = userdata;
        struct store_task task;

        for (size_t i = 0; i < n; i++) {
                if (i == 0 || tids[i] != task.tid || pids[i] != task.pid)
                        collector_store_task(c->tasks, pids[i], tids[i], &task);
                replay_clock_record(&c->clock, &recs[i]);
                store_add_task(c->store, &recs[i], &task);
        }
}

/* Live records: the epoch timer closes epochs by the store's own clock. */
static void live_sink(void *userdata, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                      size_t n) {
        struct collector *c = userdata;
        struct store_task task;

        for (size_t i = 0; i < n; i++) {
                if (i == 0 || tids[i] != task.tid || pids[i] != task.pid)
                        collector_store_task(c->tasks, pids[i], tids[i], &task);
                store_add_task(c->store, &recs[i], &task);
        }
}

static void replay_clock_cb(void *userdata, const struct source_clock *clock) {
        struct collector *c = userdata;

        replay_clock_file(&c->clock, clock);
}

static void replay_epoch_end(void *userdata, uint64_t end_ns) {
        epoch_end(userdata, end_ns);
}

static void replay_mapping(void *userdata, const struct source_mapping *m) {
        struct collector *c = userdata;

        symbolizer_mapping(&c->symbols, m);
        /* The unwinder wants the sampler's processes only (not live SPE's while the sampler waits). */
        if (c->samples && c->sampler_running)
                sample_sink_mapping(c->samples, m);
}

static void on_samples(void *userdata, const struct source_sample *samples, size_t n) {
        struct collector *c = userdata;

        if (c->samples)
                sample_sink_samples(c->samples, samples, n);
}

static void on_task(void *userdata, const struct source_task *t) {
        struct collector *c = userdata;

        if (c->samples)
                sample_sink_task(c->samples, t);
}

/* A replayed file's addresses are nodes of the machine that recorded it. */
static void replay_feature(void *userdata, unsigned feat, const uint8_t *data, size_t len) {
        struct collector *c = userdata;
        struct memnode *m = NULL;
        int k;

        if (feat != PERF_DATA_FEAT_MEM_TOPOLOGY)
                return;
        k = memnode_from_perf_header(data, len, &m);
        if (k < 0)
                log_debug_errno(k, "replay: the file's memory topology cannot be read, no NUMA nodes: %m");
        pthread_mutex_lock(&c->memnode_lock);
        memnode_free(c->memnode);
        c->memnode = m;
        pthread_mutex_unlock(&c->memnode_lock);
}

int collector_node(struct collector *c, uint64_t pa) {
        int node;

        pthread_mutex_lock(&c->memnode_lock);
        node = memnode_node(c->memnode, pa);
        pthread_mutex_unlock(&c->memnode_lock);
        return node;
}

struct symbolizer *collector_symbolizer(struct collector *c) {
        return &c->symbols;
}

void collector_symbols_stats(struct collector *c, struct symbols_stats *ret) {
        symbolizer_stats(&c->symbols, ret);
}

bool collector_symbol(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        return symbolizer_function(&c->symbols, pid, pc, buf, len);
}

int collector_profile_span(struct collector *c, uint64_t start_ns, uint64_t end_ns, struct strbuf *ret_gz) {
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(c->store);

        const struct source_status *sampler = collector_view_sampler(collector_view(snap));

        /*
         * The sampler's profile while it runs (an event this machine lacks
         * leaves it off: SPE's then): CPU time for a clock event, whose
         * period the status gives in ns; the event's counts otherwise.
         */
        if (source_status_up(sampler))
                return symbolizer_cpu_profile(&c->symbols, snap, start_ns, end_ns,
                                              sampler->sample_period ? NULL : c->sampler_event,
                                              sampler->sample_period, ret_gz);
        return symbolizer_profile(&c->symbols, snap, 0, start_ns, end_ns, atomic_load(&c->spe_period), ret_gz);
}

bool collector_cgroup(struct collector *c, uint32_t pid, char *path, size_t path_len, char *service,
                      size_t service_len) {
        /* Set before the collector thread starts, freed after it stopped: readers never race it. */
        if (c->samples)
                return sample_sink_cgroup(c->samples, pid, path, path_len, service, service_len);
        /* No sampler (SPE samples this host): what /proc says of a process that still runs; a replay's are not ours. */
        return !c->has_replay && cgroup_describe_pid(NULL, pid, path, path_len, service, service_len);
}

bool collector_replaying(struct collector *c) {
        return c->has_replay;
}

bool collector_kernel_frames_named(struct collector *c) {
        return c->kernel_named;
}

bool collector_sample_stats(struct collector *c, struct sample_sink_stats *ret) {
        if (!c->samples)
                return false;
        sample_sink_get_stats(c->samples, ret);
        return true;
}

uint64_t collector_now_ns(struct collector *c) {
        return now_ns();
}

bool collector_object(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        return symbolizer_object(&c->symbols, pid, pc, buf, len);
}

bool collector_source(struct collector *c, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        return symbolizer_source(&c->symbols, pid, pc, buf, len);
}

bool collector_data_symbol(struct collector *c, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                           size_t member_len) {
        return symbolizer_data_symbol(&c->symbols, pid, va, buf, len, member, member_len);
}

bool collector_region(struct collector *c, uint32_t pid, uint64_t va, char *name, size_t name_len,
                      uint64_t *ret_offset) {
        return symbolizer_region(&c->symbols, pid, va, name, name_len, ret_offset);
}

const struct privacy_policy *collector_privacy(struct collector *c) {
        return &c->symbols.privacy;
}

static bool push_service(void *userdata, uint32_t pid, char *buf, size_t len) {
        char path[PATH_MAX];

        return collector_cgroup(userdata, pid, path, sizeof(path), buf, len) && buf[0];
}

int collector_push_profiles(struct collector *c, const struct store_snapshot *snap, uint64_t start_ns,
                            uint64_t end_ns, const struct profile_options *o, struct collector_push_profiles *ret) {
        const struct collector_view *v = collector_view(snap);
        const struct source_status *sampler = collector_view_sampler(v), *spe = collector_view_spe(v);
        int k = 0;

        *ret = (struct collector_push_profiles) {
                .cpu_event = c->sampler_event,
                .cpu_is_time = sampler->sample_period != 0,
        };
        char type[CONFIG_SAMPLER_EVENT_MAX];

        /* The event names the second sample type: Pyroscope refuses a '-' in one ("cache-misses"). */
        snprintf(type, sizeof(type), "%s", c->sampler_event);
        for (char *t = type; *t; t++)
                if (*t == '-')
                        *t = '_';
        /* Stacks in the span: the sampler ran then, whatever it does now. */
        k = symbolizer_cpu_builder(&c->symbols, snap, start_ns, end_ns, ret->cpu_is_time ? NULL : type,
                                   sampler->sample_period, o, &ret->cpu);
        /* The hot-PC table has the sampler's leaf PCs too: an SPE profile only where SPE is a source. */
        if (k >= 0 && spe->state != SOURCE_OFF)
                k = symbolizer_spe_builder(&c->symbols, snap, start_ns, end_ns, atomic_load(&c->spe_period), o,
                                           push_service, c, &ret->spe);
        if (k < 0) {
                collector_push_profiles_done(ret);
                return k;
        }
        /* A profile without samples is not sent. */
        if (ret->cpu && pprof_n_samples(ret->cpu) == 0)
                ret->cpu = pprof_builder_free(ret->cpu);
        if (ret->spe && pprof_n_samples(ret->spe) == 0)
                ret->spe = pprof_builder_free(ret->spe);
        return 0;
}

void collector_push_profiles_done(struct collector_push_profiles *p) {
        p->cpu = pprof_builder_free(p->cpu);
        p->spe = pprof_builder_free(p->spe);
}

int collector_profile(struct collector *c, uint64_t window_ns, struct strbuf *ret_gz) {
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(c->store);

        return symbolizer_profile(&c->symbols, snap, window_ns, 0, 0, atomic_load(&c->spe_period), ret_gz);
}

/* What /status says of SPE when no source runs: live SPE is off, or there is a replay to come. */
static void spe_describe(struct collector *c) {
        snprintf(c->spe_reason, sizeof(c->spe_reason), "%s",
                 c->opts.spe_enable ? "no SPE source" : "disabled by configuration ([spe] enable = no)");
        snprintf(c->sampler_reason, sizeof(c->sampler_reason), "%s",
                 c->has_replay ? "a replay runs alone (--replay)" : "not started");
}

/*
 * A source ended (a replay read to its end, or failed): its last epoch is
 * closed at the file's end and the store's clock frozen there, the first
 * cycle after it publishes what it brought, and the manager learns how it
 * went (replay_done_fd). A replay that is not complete is an error, as for
 * --once.
 */
static void source_state_changed(void *userdata, struct source *s, enum source_state state) {
        struct collector *c = userdata;
        struct source_status st;
        uint64_t records = 0, one = 1;

        if (state != SOURCE_DONE && state != SOURCE_FAILED)
                return;
        source_status(s, &st);
        for (size_t i = 0; i < st.n_cpus; i++)
                records += st.cpus[i].records;
        for (size_t i = 0; i < st.n_warnings; i++)
                log_warning("replay: %s: %s", c->replay.path, st.warnings[i]);
        if (state == SOURCE_DONE)
                log_info("replay: %" PRIu64 " SPE records from %s on %zu CPUs", records, c->replay.path,
                         st.n_cpus);
        atomic_store(&c->spe_period, st.sample_period);
        replay_clock_finish(&c->clock);

        pthread_mutex_lock(&c->lock);
        snprintf(c->replay_error, sizeof(c->replay_error), "%s", st.reason);
        c->replay_result = state == SOURCE_DONE ? 0 : st.error < 0 ? st.error : -EIO;
        pthread_mutex_unlock(&c->lock);
        source_status_done(&st);

        cycle(c);
        if (write(c->replay_done_fd, &one, sizeof(one)) != sizeof(one))
                log_error_errno(-errno, "collector: cannot signal the end of the replay: %m");
}

int collector_replay_fd(struct collector *c) {
        return c->replay_done_fd;
}

int collector_replay_result(struct collector *c, char *ret_error, size_t len) {
        int k;

        pthread_mutex_lock(&c->lock);
        k = c->replay_result;
        snprintf(ret_error, len, "%s", c->replay_error);
        pthread_mutex_unlock(&c->lock);
        return k;
}

/* Add a source on the seam: it registers with the loop now and runs when the loop does. */
static int collector_add_source(struct collector *c, struct source *s) {
        int k;

        k = source_start(s, c->event, NULL);
        if (k < 0)
                return k;
        c->sources = xrealloc(c->sources, (c->n_sources + 1) * sizeof(*c->sources));
        c->sources[c->n_sources++] = s;
        return 0;
}

static int collector_add_replay(struct collector *c) {
        struct source *s = NULL;
        int k;

        c->replay_done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->replay_done_fd < 0)
                return -errno;
        c->clock = (struct replay_clock) { .store = c->store, .epoch_ns = c->opts.store.epoch_ns,
                                           .epoch_end = replay_epoch_end, .userdata = c };
        k = replay_source_new(&c->replay, c->replay_fd, &c->sink, c->tasks, &s);
        if (k < 0)
                return k;
        k = collector_add_source(c, s);
        if (k < 0)
                source_free(s);
        return k;
}

/*
 * Live SPE where the machine has it. It stays on the list whatever its start
 * says: /status gives its reason, and CPUs that are busy or come online
 * later are opened then.
 */
static void collector_add_live(struct collector *c) {
        struct source_status st;
        struct source *s = NULL;
        int k;

        k = spe_live_source_new(&c->opts.spe, &c->sink, c->tasks, &s);
        if (k < 0) {
                snprintf(c->spe_reason, sizeof(c->spe_reason), "invalid [spe] buffer options: %s", strerror(-k));
                log_error("spe: %s", c->spe_reason);
                return;
        }
        k = source_start(s, c->event, NULL);
        source_status(s, &st);
        if (k < 0 || st.reason[0])
                log_full_errno(st.state == SOURCE_OFF ? LOG_INFO : LOG_WARNING, 0, "spe: %s", st.reason);
        else {
                size_t active = 0;

                for (size_t i = 0; i < st.n_cpus; i++)
                        active += st.cpus[i].state && streq(st.cpus[i].state, "active");
                log_info("spe: sampling on %zu CPUs every %" PRIu64 " operations", active, st.sample_period);
        }
        if (st.sample_period && st.sample_period != c->opts.spe.pmu.interval)
                log_notice("spe: [spe] period %" PRIu64 " became %" PRIu64 ": the PMU's caps/min_interval is the "
                           "least, and the hardware drops the low 8 bits", c->opts.spe.pmu.interval,
                           st.sample_period);
        for (size_t i = 0; i < st.n_warnings; i++)
                log_warning("spe: %s", st.warnings[i]);
        atomic_store(&c->spe_period, st.sample_period);
        source_status_done(&st);
        c->sources = xrealloc(c->sources, (c->n_sources + 1) * sizeof(*c->sources));
        c->sources[c->n_sources++] = s;
        /* A source that starts while sampling is slowed down samples as slowly. */
        if (c->budget.shift > 0)
                budget_apply(c);
}

/*
 * The sample sink, before any source runs (when a sampler may run at all):
 * it answers the HTTP threads' cgroup lookups from then on, whether the
 * sampler starts now, later or never, so the pointer never changes under
 * them. Kernel frames are named only when the operator allows it and
 * kallsyms shows real addresses.
 */
static int collector_setup_samples(struct collector *c) {
        struct sample_sink_options so = c->opts.sample_sink;
        int k;

        if (c->opts.sampler_enable == CONFIG_SPE_NO) {
                snprintf(c->sampler_reason, sizeof(c->sampler_reason), "disabled by configuration ([sampler] enable = no)");
                return 0;
        }
        if (so.kernel_addresses) {
                k = symbolizer_load_kallsyms(&c->symbols, NULL);
                if (k < 0) {
                        log_notice_errno(k, "sampler: [privacy] kernel_addresses = yes, but /proc/kallsyms gives no "
                                            "addresses (kptr_restrict?): kernel frames stay [kernel]: %m");
                        so.kernel_addresses = false;
                }
        }
        c->kernel_named = so.kernel_addresses;
        k = sample_sink_new(&so, c->store, c->tasks, &c->samples);
        if (k < 0) {
                snprintf(c->sampler_reason, sizeof(c->sampler_reason), "cannot set up the sampler: %s", strerror(-k));
                log_error("sampler: %s", c->sampler_reason);
        }
        return k;
}

/* Whether a source other than the sampler is up (live SPE that runs, or is still starting). */
static bool spe_up(struct collector *c) {
        struct source_status st;
        bool up = false;

        for (size_t i = 0; i < c->n_sources && !up; i++) {
                source_status(c->sources[i], &st);
                up = !streq(st.kind, "sampler") && st.state != SOURCE_OFF && st.state != SOURCE_FAILED;
                source_status_done(&st);
        }
        return up;
}

/*
 * The cpu-clock sampler where live SPE does not run (or beside it with
 * [sampler] enable = yes). With auto and SPE up, it waits: if SPE fails
 * later, the next cycle starts it. Like live SPE it stays on the list
 * whatever its start says: /status gives its reason.
 */
static void collector_add_sampler(struct collector *c) {
        struct source_status st;
        struct source *s = NULL;
        int k;

        c->sampler_waiting = false;
        if (!c->samples)
                return; /* disabled, or its sink could not be set up: sampler_reason says which */
        if (c->opts.sampler_enable == CONFIG_SPE_AUTO && spe_up(c)) {
                snprintf(c->sampler_reason, sizeof(c->sampler_reason),
                         "SPE samples this machine ([sampler] enable = yes runs both)");
                log_info("sampler: %s", c->sampler_reason);
                c->sampler_waiting = true;
                return;
        }
        k = sampler_source_new(&c->opts.sampler, &c->sink, c->tasks, &s);
        if (k < 0) {
                snprintf(c->sampler_reason, sizeof(c->sampler_reason), "invalid [sampler] options: %s", strerror(-k));
                log_error("sampler: %s", c->sampler_reason);
                return;
        }
        k = source_start(s, c->event, NULL);
        source_status(s, &st);
        if (k < 0 || st.reason[0])
                log_full_errno(st.state == SOURCE_OFF ? LOG_INFO : LOG_WARNING, 0, "sampler: %s", st.reason);
        else
                log_info("sampler: %s at %" PRIu32 " Hz on %zu CPUs, stacks by %s", c->opts.sampler.event_name,
                         (uint32_t) c->opts.sampler.frequency, st.n_sampler_cpus,
                         c->opts.sample_sink.unwind == CONFIG_UNWIND_FP ? "frame pointers" :
                         c->opts.sample_sink.unwind == CONFIG_UNWIND_DWARF ? "CFI" : "CFI, else frame pointers");
        for (size_t i = 0; i < st.n_warnings; i++)
                log_warning("sampler: %s", st.warnings[i]);
        source_status_done(&st);
        c->sources = xrealloc(c->sources, (c->n_sources + 1) * sizeof(*c->sources));
        c->sources[c->n_sources++] = s;
        /* A source that starts while sampling is slowed down samples as slowly. */
        if (c->budget.shift > 0)
                budget_apply(c);
        c->sampler_running = true;
}

int collector_start(const struct collector_options *opts, struct collector **ret) {
        struct collector *c = xcalloc(1, sizeof(*c));
        uint64_t nofile;
        int r;

        c->stop_fd = c->replay_done_fd = c->boundary_fd = -1;
        c->opts = *opts;
        snprintf(c->sampler_event, sizeof(c->sampler_event), "%s", opts->sampler.event_name ?: "cpu-clock");
        c->opts.sampler.event_name = c->sampler_event;
        c->opts.replay = NULL;
        c->replay_fd = -1;
        if (opts->replay) {
                c->replay = *opts->replay;
                c->has_replay = true;
                c->replay_fd = opts->replay_fd;
        }
        (void) task_map_new(&c->tasks);
        c->sink = (struct source_sink) {
                .userdata = c,
                .records = opts->replay ? replay_sink : live_sink,
                .samples = on_samples,
                .mapping = replay_mapping,
                .task = on_task,
                .clock = replay_clock_cb,
                .feature = replay_feature,
                .state = source_state_changed,
        };
        pthread_mutex_init(&c->lock, NULL);
        pthread_mutex_init(&c->memnode_lock, NULL);
        pthread_mutex_init(&c->boundary_lock, NULL);
        /*
         * Symbol tables are the daemon's largest variable cost: bound them so
         * the worst case (16 files x 128k symbols) stays within the unit's
         * MemoryMax next to the store; evictions are counted by the module.
         */
        symbolizer_init(&c->symbols, &(struct symbols_limits) {
                .max_files = SYMBOLS_MAX_FILES_DAEMON,
                .max_symbols_per_file = SYMBOLS_MAX_PER_FILE_DAEMON,
        });
        c->symbols.privacy = opts->privacy;
        atomic_store(&c->interval_usec, opts->interval_usec);
        atomic_store(&c->last_cycle_usec, now_monotonic_usec());
        spe_describe(c);
        budget_init(&c->budget, &(struct budget_options) { .cpu_percent = opts->budget_cpu_percent,
                                                           .window_ns = opts->budget_window_usec * NSEC_PER_USEC });

        r = store_new(&opts->store, now_ns(), &c->store);
        if (r < 0) {
                log_error_errno(r, "Failed to create the aggregate store: %m");
                goto fail;
        }
        log_debug("store: at most %zu bytes", store_bytes(&opts->store));
        store_set_clock(c->store, &(struct store_clock) { .kind = STORE_CLOCK_UNIX,
                                                          .unix_offset_ns = unix_minus_monotonic_ns() });

        /* One fd per event per CPU (perf-security.rst): raise the soft limit first. */
        if (pmu_raise_nofile_limit(&nofile) < 0)
                log_debug("Cannot raise RLIMIT_NOFILE; counting may run out of descriptors");
        pmu_open(c);

        /* A replayed file's addresses are nodes of the machine that recorded it, or of none: never this one's. */
        if (!c->has_replay) {
                r = memnode_from_sysfs("/", &c->memnode);
                if (r < 0)
                        log_debug_errno(r, "No memory blocks in sysfs, hot lines carry no NUMA node: %m");
        }

        r = sd_event_new(&c->event);
        if (r < 0)
                goto fail;
        c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->stop_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = sd_event_add_io(c->event, &c->stop_source, c->stop_fd, EPOLLIN, on_stop, c);
        if (r < 0)
                goto fail;
        r = sd_event_add_time(c->event, &c->cycle_timer, CLOCK_MONOTONIC, UINT64_MAX, COLLECTOR_TIMER_ACCURACY_USEC,
                              on_cycle_timer, c);
        if (r < 0)
                goto fail;
        /* A replay's epochs are the file's (replay_clock_record()): no timer closes more. */
        if (!c->has_replay) {
                r = sd_event_add_time(c->event, &c->epoch_timer, CLOCK_MONOTONIC, UINT64_MAX,
                                      COLLECTOR_TIMER_ACCURACY_USEC, on_epoch_timer, c);
                if (r < 0)
                        goto fail;
                r = arm(c->epoch_timer, opts->store.epoch_ns / NSEC_PER_USEC, true, &c->next_epoch_usec);
                if (r < 0)
                        goto fail;
                (void) sd_event_source_set_description(c->epoch_timer, "collector-epoch");

                c->boundary_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (c->boundary_fd < 0) {
                        r = -errno;
                        goto fail;
                }
                r = sd_event_add_io(c->event, &c->boundary_source, c->boundary_fd, EPOLLIN, on_boundary_request, c);
                if (r < 0)
                        goto fail;
                r = sd_event_add_time(c->event, &c->boundary_timer, CLOCK_MONOTONIC, UINT64_MAX,
                                      COLLECTOR_TIMER_ACCURACY_USEC, on_boundary_timer, c);
                if (r < 0)
                        goto fail;
                (void) sd_event_source_set_enabled(c->boundary_timer, SD_EVENT_OFF);
                (void) sd_event_source_set_description(c->boundary_timer, "collector-requested-epoch-end");
        }
        (void) sd_event_source_set_description(c->stop_source, "collector-stop");
        (void) sd_event_source_set_description(c->cycle_timer, "collector-cycle");
        /*
         * Due timers and a stop request go before the sources' data
         * (SD_EVENT_PRIORITY_NORMAL): a source that always has more, a
         * replay of a large file say, cannot hold back the counting
         * interval, its heartbeat or a stop by more than one budget.
         */
        r = sd_event_source_set_priority(c->stop_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r >= 0)
                r = sd_event_source_set_priority(c->cycle_timer, SD_EVENT_PRIORITY_IMPORTANT);
        if (r >= 0 && c->epoch_timer)
                r = sd_event_source_set_priority(c->epoch_timer, SD_EVENT_PRIORITY_IMPORTANT);
        if (r >= 0 && c->boundary_timer)
                r = sd_event_source_set_priority(c->boundary_timer, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0)
                goto fail;

        if (c->has_replay) {
                r = collector_add_replay(c);
                if (r < 0) {
                        log_error_errno(r, "Failed to start the replay: %m");
                        goto fail;
                }
        } else {
                (void) collector_setup_samples(c);
                if (c->opts.spe_enable)
                        collector_add_live(c);
                collector_add_sampler(c);
        }

        /* The first cycle runs right away, so /metrics has data before the first interval. */
        cycle(c);

        r = thread_names_create(&c->thread, THREAD_NAME_COLLECTOR, collector_main, c);
        if (r < 0)
                goto fail;
        c->thread_started = true;

        *ret = c;
        return 0;
fail:
        collector_stop(c);
        return r;
}

struct collector *collector_stop(struct collector *c) {
        if (!c)
                return NULL;
        if (c->thread_started) {
                uint64_t one = 1;

                if (write(c->stop_fd, &one, sizeof(one)) == sizeof(one))
                        pthread_join(c->thread, NULL);
        }
        /* The loop has ended: nothing dispatches any more, the sources can go (readers' threads joined). */
        for (size_t i = 0; i < c->n_sources; i++)
                source_free(c->sources[i]);
        free(c->sources);
        c->tasks = task_map_free(c->tasks);
        c->samples = sample_sink_free(c->samples);
        c->stop_source = sd_event_source_disable_unref(c->stop_source);
        c->cycle_timer = sd_event_source_disable_unref(c->cycle_timer);
        c->epoch_timer = sd_event_source_disable_unref(c->epoch_timer);
        c->boundary_timer = sd_event_source_disable_unref(c->boundary_timer);
        c->boundary_source = sd_event_source_disable_unref(c->boundary_source);
        c->event = sd_event_unref(c->event);
        safe_close(c->stop_fd);
        safe_close(c->replay_done_fd);
        safe_close(c->boundary_fd);
        c->pmu = pmu_collector_free(c->pmu);
        /* Snapshots still held by readers keep their views alive. */
        c->store = store_free(c->store);
        symbolizer_done(&c->symbols);
        c->memnode = memnode_free(c->memnode);
        pthread_mutex_destroy(&c->memnode_lock);
        pthread_mutex_destroy(&c->boundary_lock);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

void collector_reconfigure(struct collector *c, const struct collector_options *opts) {
        pthread_mutex_lock(&c->lock);
        c->pending = *opts;
        c->has_pending = true;
        pthread_mutex_unlock(&c->lock);
        atomic_store(&c->interval_usec, opts->interval_usec);
}

uint64_t collector_cycles(struct collector *c) {
        return atomic_load(&c->cycles);
}

bool collector_alive(struct collector *c) {
        uint64_t stale = MAX(COLLECTOR_STALE_INTERVALS * atomic_load(&c->interval_usec),
                             COLLECTOR_MIN_STALE_USEC);

        return now_monotonic_usec() - atomic_load(&c->last_cycle_usec) < stale;
}
