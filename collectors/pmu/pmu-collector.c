/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pmu-collector.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "pmu-sysfs.h"
#include "strbuf.h"

#define PROCFS_DEFAULT_ROOT "/proc"
#define SOFTWARE_GROUP_NAME "software"
#define NO_PMU_GROUP_NAME "generic"

struct member {
        enum pmu_event_id ev;
        int fd;
        uint64_t kernel_id; /* PERF_EVENT_IOC_ID, matches the id in reads */
};

struct group {
        bool software;
        size_t n;
        struct member m[PMU_GROUP_MAX_EVENTS];
        size_t slot;          /* index into cpu_state.slots */
        unsigned zero_reads;  /* reads with time_running == 0 since open */
        bool stuck;           /* single event that never runs: left alone */
};

struct slot {
        struct pmu_group_times pub; /* name, totals; n_events updated on open */
        struct pmu_group_time time;
};

enum {
        DERIVED_TOPDOWN,
        DERIVED_MPKI,
        _DERIVED_MAX,
};

struct derived {
        struct pmu_topdown_plan plan;
        int fd[_PMU_TD_INPUT_MAX];
        uint64_t id[_PMU_TD_INPUT_MAX];
        size_t n;                            /* members open, plan.n or 0 */
        char error[PMU_TOPDOWN_NOTE_MAX];    /* why the planned group is not open or not running */
        unsigned zero_reads;
        struct pmu_topdown_window window;
        struct pmu_topdown last;
};

struct cpu_state {
        unsigned cpu;
        bool open;
        bool reopen; /* close and open again before the next read */
        const struct pmu_desc *pmu;
        size_t n_groups;
        struct group groups[PMU_MAX_GROUPS];
        struct pmu_group_counter counters[_PMU_EVENT_MAX];
        int error[_PMU_EVENT_MAX]; /* last open failure, negative errno */
        size_t n_slots;
        struct slot slots[PMU_MAX_GROUPS];
        struct pmu_ratio ratios[_PMU_RATIO_MAX];

        /* Top-down level 1 (and Intel's level 2), and the misses per
         * kilo-instruction: each a group of its own (pmu-topdown.h), never
         * a catalogue group, so that what is computed from one shares one
         * window. */
        struct derived dg[_DERIVED_MAX];
};

/* One memory-side PMU group (pmu-bandwidth.h) on one CPU of its cpumask. */
struct bandwidth {
        const struct pmu_bandwidth_source *src;
        int fd[2];
        uint64_t id[2];
        bool primed;
        uint64_t prev[2], prev_enabled, prev_running;
        uint64_t bytes_total;
        bool counted; /* bytes were added in the last interval */
        int error;    /* negative errno of the open, 0 if open */
};

struct pmu_collector {
        char *procfs_root;
        enum pmu_event_id events[_PMU_EVENT_MAX];
        size_t n_events;
        unsigned general_override;
        bool open_unlisted;
        unsigned stuck_reads;

        struct pmu_sysfs *sysfs;
        unsigned *general; /* per sysfs->pmus[i], may shrink at run time */
        bool *cycle_counter;
        unsigned general_no_pmu;

        struct cpulist online; /* CPUs we hold groups for */
        struct cpu_state *cpus[CPULIST_MAX_CPUS];

        struct pmu_bandwidth_plan bw_plan;
        struct bandwidth *bw; /* bw_plan.n */

        uint64_t reads;
        unsigned resplits;
        enum pmu_state state;
        char message[PMU_MESSAGE_MAX];
};

static void bandwidth_open(struct pmu_collector *c);

static const char *const state_names[_PMU_STATE_MAX] = {
        [PMU_STATE_OK] = "ok",
        [PMU_STATE_DEGRADED] = "degraded",
        [PMU_STATE_PERMISSION_DENIED] = "permission-denied",
        [PMU_STATE_NO_EVENTS] = "no-events",
};

const char *pmu_state_to_string(enum pmu_state s) {
        if (s < 0 || s >= _PMU_STATE_MAX)
                return NULL;
        return state_names[s];
}

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                           unsigned long flags) {
        long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);

        return fd < 0 ? -errno : (int) fd;
}

static size_t pmu_index(const struct pmu_collector *c, const struct pmu_desc *p) {
        return (size_t) (p - c->sysfs->pmus);
}

static void attr_init(struct perf_event_attr *attr, uint32_t type, uint64_t config) {
        memset(attr, 0, sizeof(*attr));
        attr->size = sizeof(*attr);
        attr->type = type;
        attr->config = config;
        attr->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
                            PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
}

static void group_close(struct group *g) {
        /* Members first, then the leader (m[0]). */
        for (size_t i = g->n; i > 0; i--)
                g->m[i - 1].fd = safe_close(g->m[i - 1].fd);
        g->n = 0;
}

static void derived_close(struct derived *g) {
        for (size_t i = g->n; i > 0; i--)
                g->fd[i - 1] = safe_close(g->fd[i - 1]);
        g->n = 0;
        g->last = (struct pmu_topdown) {};
        pmu_topdown_window_reset(&g->window);
}

static void topdown_close(struct cpu_state *s) {
        for (size_t k = 0; k < _DERIVED_MAX; k++)
                derived_close(&s->dg[k]);
}

static void cpu_close(struct cpu_state *s) {
        topdown_close(s);
        for (size_t i = 0; i < s->n_groups; i++)
                group_close(&s->groups[i]);
        for (size_t i = 0; i < s->n_slots; i++)
                s->slots[i].pub.n_events = 0;
        s->n_groups = 0;
        s->open = false;
}

static size_t slot_get(struct cpu_state *s, const char *name) {
        for (size_t i = 0; i < s->n_slots; i++)
                if (streq(s->slots[i].pub.name, name))
                        return i;
        if (s->n_slots == ELEMENTSOF(s->slots)) {
                /* Full (the PMU changed shape many times): recycle an
                 * unused slot; its totals restart, which only a PMU swap
                 * under our feet can cause. */
                for (size_t i = 0; i < s->n_slots; i++)
                        if (s->slots[i].pub.n_events == 0) {
                                memset(&s->slots[i], 0, sizeof(s->slots[i]));
                                snprintf(s->slots[i].pub.name, sizeof(s->slots[i].pub.name), "%s", name);
                                return i;
                        }
                return 0;
        }
        snprintf(s->slots[s->n_slots].pub.name, sizeof(s->slots[s->n_slots].pub.name), "%s", name);
        return s->n_slots++;
}

/* Open one planned group on s->cpu. Events that failed as members for a
 * reason that may be capacity (EINVAL, ENOSPC) go to *deferred, to be tried
 * in a group of their own; other failures are recorded per event. */
static void group_open(struct pmu_collector *c, struct cpu_state *s, const struct pmu_group_spec *spec,
                       const char *slot_name, enum pmu_event_id *deferred, size_t *n_deferred) {
        struct group *g = &s->groups[s->n_groups];
        int r;

        *g = (struct group) { .software = spec->software };
        for (size_t i = 0; i < ELEMENTSOF(g->m); i++)
                g->m[i].fd = -1;

        for (size_t i = 0; i < spec->n; i++) {
                enum pmu_event_id ev = spec->ev[i];
                struct perf_event_attr attr;
                int leader = g->n > 0 ? g->m[0].fd : -1;
                uint32_t type;
                uint64_t config;

                r = pmu_event_encode(ev, s->pmu, c->open_unlisted, &type, &config);
                if (r < 0) {
                        s->error[ev] = r;
                        continue;
                }
                attr_init(&attr, type, config);
                /* The leader is opened disabled and enabled once the group is
                 * complete, so the members start counting together; members
                 * follow their leader (perf_event_open(2), "disabled"). */
                attr.disabled = leader < 0;
                r = perf_event_open(&attr, -1, (int) s->cpu, leader, PERF_FLAG_FD_CLOEXEC);
                if (r < 0 && leader >= 0 && (r == -EINVAL || r == -ENOSPC)) {
                        deferred[(*n_deferred)++] = ev;
                        continue;
                }
                if (r < 0) {
                        s->error[ev] = r;
                        continue;
                }
                g->m[g->n] = (struct member) { .ev = ev, .fd = r };
                if (ioctl(r, PERF_EVENT_IOC_ID, &g->m[g->n].kernel_id) < 0) {
                        /* Without its id the value cannot be matched in a
                         * group read (the next event may then lead). */
                        s->error[ev] = -errno;
                        g->m[g->n].fd = safe_close(r);
                        continue;
                }
                s->error[ev] = 0;
                g->n++;
        }
        if (g->n == 0)
                return;
        if (ioctl(g->m[0].fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
                r = -errno;
                for (size_t i = 0; i < g->n; i++)
                        s->error[g->m[i].ev] = r;
                group_close(g);
                return;
        }
        g->slot = slot_get(s, slot_name);
        s->slots[g->slot].pub.n_events = g->n;
        pmu_group_time_reopen(&s->slots[g->slot].time);
        for (size_t i = 0; i < g->n; i++)
                pmu_group_counter_reopen(&s->counters[g->m[i].ev]);
        s->n_groups++;
}

/* Open the top-down group planned for s->cpu: all of it or nothing (a
 * member alone would be a fraction of another window). */
static void derived_open(struct derived *g, unsigned cpu) {
        struct pmu_topdown_plan *p = &g->plan;
        int r;

        g->error[0] = '\0';
        g->zero_reads = 0;
        if (p->method == PMU_TOPDOWN_NONE)
                return;
        for (size_t i = 0; i < p->n; i++) {
                struct perf_event_attr attr;
                int leader = i > 0 ? g->fd[0] : -1;

                attr_init(&attr, p->type, p->config[i]);
                attr.disabled = leader < 0;
                r = perf_event_open(&attr, -1, (int) cpu, leader, PERF_FLAG_FD_CLOEXEC);
                if (r >= 0) {
                        g->fd[i] = r;
                        g->n = i + 1;
                        if (ioctl(r, PERF_EVENT_IOC_ID, &g->id[i]) >= 0)
                                continue;
                        r = -errno;
                }
                snprintf(g->error, sizeof(g->error), "cannot open the group's event 0x%" PRIx64 ": %s", p->config[i],
                         pmu_event_error_string(r));
                derived_close(g);
                return;
        }
        if (ioctl(g->fd[0], PERF_EVENT_IOC_ENABLE, 0) < 0) {
                snprintf(g->error, sizeof(g->error), "cannot enable the group: %s", strerror(errno));
                derived_close(g);
        }
}

/* Plan and open the top-down and MPKI groups for s->cpu: each all of it or
 * nothing (a member alone would be a share of another window). */
static void topdown_open(struct pmu_collector *c, struct cpu_state *s, unsigned general, bool cycle_counter) {
        (void) pmu_topdown_plan_cpu(c->sysfs->root, c->procfs_root, s->cpu, s->pmu, general, cycle_counter,
                                    &s->dg[DERIVED_TOPDOWN].plan);
        (void) pmu_topdown_plan_mpki(s->pmu, general, &s->dg[DERIVED_MPKI].plan);
        for (size_t k = 0; k < _DERIVED_MAX; k++)
                derived_open(&s->dg[k], s->cpu);
}

static void cpu_open(struct pmu_collector *c, struct cpu_state *s) {
        enum pmu_event_id pending[_PMU_EVENT_MAX];
        size_t n_pending = c->n_events;
        unsigned general = c->general_no_pmu;
        bool cycle_counter = false;
        const char *pmu_name = NO_PMU_GROUP_NAME;
        unsigned hw_index = 0;

        cpu_close(s);
        s->reopen = false;
        s->pmu = pmu_sysfs_pmu_for_cpu(c->sysfs, s->cpu);
        if (s->pmu) {
                general = c->general[pmu_index(c, s->pmu)];
                cycle_counter = c->cycle_counter[pmu_index(c, s->pmu)];
                pmu_name = s->pmu->name;
        }
        memcpy(pending, c->events, n_pending * sizeof(pending[0]));
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                s->error[i] = 0;

        /* Plan, open, and plan again whatever did not fit, until every
         * event is either open or failed: each round opens or fails at least
         * the first event of its first group, so this ends. */
        while (n_pending > 0) {
                struct pmu_group_plan plan;
                enum pmu_event_id deferred[_PMU_EVENT_MAX];
                size_t n_deferred = 0;

                if (pmu_group_plan(pending, n_pending, general, cycle_counter, &plan) < 0)
                        break;
                for (size_t k = 0; k < plan.n_groups && s->n_groups < ELEMENTSOF(s->groups); k++) {
                        char name[PMU_NAME_MAX];

                        if (plan.groups[k].software)
                                snprintf(name, sizeof(name), "%s", SOFTWARE_GROUP_NAME);
                        else
                                snprintf(name, sizeof(name), "%s/%u", pmu_name, hw_index++);
                        group_open(c, s, &plan.groups[k], name, deferred, &n_deferred);
                }
                /* A deferred event's group may have been the last one: one
                 * per group from now on, so the next round cannot defer. */
                general = 1;
                cycle_counter = false;
                memcpy(pending, deferred, n_deferred * sizeof(pending[0]));
                n_pending = n_deferred;
        }
        if (s->pmu) {
                size_t idx = pmu_index(c, s->pmu);

                topdown_open(c, s, c->general[idx], c->cycle_counter[idx]);
        } else
                topdown_open(c, s, c->general_no_pmu, false);
        s->open = true;
}

static struct cpu_state *cpu_get(struct pmu_collector *c, unsigned cpu) {
        if (!c->cpus[cpu]) {
                c->cpus[cpu] = xcalloc(1, sizeof(struct cpu_state));
                c->cpus[cpu]->cpu = cpu;
                for (size_t i = 0; i < PMU_MAX_GROUPS; i++)
                        for (size_t j = 0; j < PMU_GROUP_MAX_EVENTS; j++)
                                c->cpus[cpu]->groups[i].m[j].fd = -1;
                for (size_t k = 0; k < _DERIVED_MAX; k++)
                        for (size_t i = 0; i < _PMU_TD_INPUT_MAX; i++)
                                c->cpus[cpu]->dg[k].fd[i] = -1;
        }
        return c->cpus[cpu];
}

static bool cpu_has_event(const struct cpu_state *s, enum pmu_event_id ev) {
        for (size_t k = 0; k < s->n_groups; k++)
                for (size_t j = 0; j < s->groups[k].n; j++)
                        if (s->groups[k].m[j].ev == ev)
                                return true;
        return false;
}

static bool is_listed(const enum pmu_event_id *list, size_t n, enum pmu_event_id ev) {
        for (size_t i = 0; i < n && list[i] != _PMU_EVENT_INVALID; i++)
                if (list[i] == ev)
                        return true;
        return false;
}

/* Derive the state and its message from what is open now and from the
 * errors of the last open on each online CPU. */
static void update_state(struct pmu_collector *c) {
        size_t configured = c->n_events, available = 0;
        int eacces = 0;
        bool emfile = false;
        int error[_PMU_EVENT_MAX] = {};
        bool ok[_PMU_EVENT_MAX] = {};
        /* The hardware events that fail for want of a core PMU, said once. */
        enum pmu_event_id no_pmu[_PMU_EVENT_MAX];

        for (size_t i = 0; i < ELEMENTSOF(no_pmu); i++)
                no_pmu[i] = _PMU_EVENT_INVALID;

        CPULIST_FOREACH(cpu, &c->online) {
                const struct cpu_state *s = c->cpus[cpu];

                if (!s || !s->open)
                        continue;
                for (size_t i = 0; i < c->n_events; i++) {
                        enum pmu_event_id ev = c->events[i];
                        int e = s->error[ev];

                        if (cpu_has_event(s, ev))
                                ok[ev] = true;
                        if (e == 0)
                                continue;
                        if (error[ev] == 0)
                                error[ev] = e;
                        if ((e == -EACCES || e == -EPERM) && eacces == 0)
                                eacces = e;
                        if (e == -EMFILE || e == -ENFILE)
                                emfile = true;
                }
        }
        for (size_t i = 0; i < c->n_events; i++)
                if (ok[c->events[i]])
                        available++;

        if (available > 0)
                c->state = available == configured ? PMU_STATE_OK : PMU_STATE_DEGRADED;
        else if (eacces != 0)
                c->state = PMU_STATE_PERMISSION_DENIED;
        else
                c->state = PMU_STATE_NO_EVENTS;

        c->message[0] = '\0';
        if (eacces != 0) {
                char hint[256];

                STR_APPENDF(c->message, "perf_event_open: %s for per-CPU counting: %s. ", strerror(-eacces),
                            pmu_perf_permission_hint(c->procfs_root, hint, sizeof(hint)));
        }
        if (emfile)
                STR_APPENDF(c->message, "perf_event_open: too many open files (one fd per event per CPU); "
                                        "raise RLIMIT_NOFILE (LimitNOFILE=). ");
        /*
         * No core PMU in sysfs (a VM whose hypervisor offers none): every
         * hardware event fails, each with ENOENT or EOPNOTSUPP from the
         * generic encoding. Say that once, and what would count them; each
         * event's own error stays in the snapshot (/counters' "unavailable").
         */
        if (c->state != PMU_STATE_PERMISSION_DENIED && c->sysfs->n_pmus == 0) {
                size_t hardware = 0;

                for (size_t i = 0; i < c->n_events; i++)
                        if (!ok[c->events[i]] && pmu_event_get(c->events[i])->class == PMU_EVENT_CLASS_HARDWARE)
                                no_pmu[hardware++] = c->events[i];
                if (hardware > 0) {
                        STR_APPENDF(c->message, "no hardware PMU on this host: nothing in %s/bus/event_source/devices "
                                                "counts for a CPU (a virtual machine whose hypervisor exposes none, or "
                                                "a kernel without the PMU's driver), so its %zu hardware event%s "
                                                "cannot be counted: ",
                                    c->sysfs->root, hardware, hardware == 1 ? "" : "s");
                        for (size_t i = 0; i < hardware; i++)
                                STR_APPENDF(c->message, "%s%s", i ? ", " : "", pmu_event_get(no_pmu[i])->name);
                        STR_APPENDF(c->message, ". Bare metal, or a VM given a virtual PMU (KVM: -cpu host with "
                                                "pmu=on; VMware: virtualized CPU performance counters), counts them; "
                                                "the software events count here. ");
                }
        }
        /* With permission denied, the list would only repeat EACCES. */
        if (c->state != PMU_STATE_PERMISSION_DENIED && available < configured) {
                size_t unexplained = configured - available;
                bool first = true;

                for (size_t i = 0; i < c->n_events; i++)
                        if (is_listed(no_pmu, ELEMENTSOF(no_pmu), c->events[i]))
                                unexplained--;
                if (c->state == PMU_STATE_NO_EVENTS && unexplained == configured)
                        STR_APPENDF(c->message, "no configured event could be opened: ");
                else if (unexplained > 0)
                        STR_APPENDF(c->message, "%zu of %zu configured events unavailable: ", unexplained, configured);
                for (size_t i = 0; i < c->n_events; i++) {
                        enum pmu_event_id ev = c->events[i];

                        if (ok[ev] || is_listed(no_pmu, ELEMENTSOF(no_pmu), ev))
                                continue;
                        STR_APPENDF(c->message, "%s%s (%s)", first ? "" : ", ", pmu_event_get(ev)->name,
                                    error[ev] ? pmu_event_error_string(error[ev]) : "not opened");
                        first = false;
                }
        }
        for (size_t len = strlen(c->message); len > 0 && c->message[len - 1] == ' '; len--)
                c->message[len - 1] = '\0';
}

struct pmu_collector *pmu_collector_free(struct pmu_collector *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(c->cpus); i++) {
                if (!c->cpus[i])
                        continue;
                cpu_close(c->cpus[i]);
                free(c->cpus[i]);
        }
        for (size_t i = 0; i < c->bw_plan.n; i++)
                for (size_t k = 2; k > 0; k--)
                        c->bw[i].fd[k - 1] = safe_close(c->bw[i].fd[k - 1]);
        free(c->bw);
        pmu_bandwidth_plan_done(&c->bw_plan);
        pmu_sysfs_free(c->sysfs);
        free(c->general);
        free(c->cycle_counter);
        free(c->procfs_root);
        free(c);
        return NULL;
}

static void pmu_collector_freep(struct pmu_collector **c) {
        pmu_collector_free(*c);
}

int pmu_collector_new(const struct pmu_collector_config *cfg, struct pmu_collector **ret) {
        _cleanup_(pmu_collector_freep) struct pmu_collector *c = NULL;
        int r;

        if (!cfg || (cfg->n_events > 0 && !cfg->events) || cfg->n_events > _PMU_EVENT_MAX)
                return -EINVAL;

        c = xcalloc(1, sizeof(*c));
        c->procfs_root = xstrdup(cfg->procfs_root ? cfg->procfs_root : PROCFS_DEFAULT_ROOT);

        if (cfg->n_events == 0) {
                for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                        c->events[i] = (enum pmu_event_id) i;
                c->n_events = _PMU_EVENT_MAX;
        } else {
                bool seen[_PMU_EVENT_MAX] = {};

                for (size_t i = 0; i < cfg->n_events; i++) {
                        if (!pmu_event_get(cfg->events[i]))
                                return -EINVAL;
                        if (seen[cfg->events[i]])
                                continue;
                        seen[cfg->events[i]] = true;
                        c->events[c->n_events++] = cfg->events[i];
                }
        }
        c->general_override = cfg->general_counters;
        c->open_unlisted = cfg->open_unlisted;
        c->stuck_reads = cfg->stuck_reads ? cfg->stuck_reads : PMU_DEFAULT_STUCK_READS;

        r = pmu_sysfs_discover(cfg->sysfs_root, &c->sysfs);
        if (r < 0)
                return r;
        c->general = xcalloc(c->sysfs->n_pmus + 1, sizeof(*c->general));
        c->cycle_counter = xcalloc(c->sysfs->n_pmus + 1, sizeof(*c->cycle_counter));
        for (size_t i = 0; i < c->sysfs->n_pmus; i++) {
                c->general[i] = c->general_override ? c->general_override
                                                    : c->sysfs->pmus[i].general_counters;
                c->cycle_counter[i] = c->sysfs->pmus[i].cycle_counter;
        }
        c->general_no_pmu = c->general_override ? c->general_override : PMU_OTHER_DEFAULT_GENERAL_COUNTERS;

        c->online = c->sysfs->online;
        CPULIST_FOREACH(cpu, &c->online)
                cpu_open(c, cpu_get(c, (unsigned) cpu));
        bandwidth_open(c);
        update_state(c);

        *ret = TAKE_PTR(c);
        return 0;
}

int pmu_collector_update_cpus(struct pmu_collector *c) {
        struct cpulist now;
        bool changed = false;
        int r;

        r = pmu_sysfs_read_online(c->sysfs->root, &now);
        if (r < 0)
                return r;

        /* Offline: close now; a read on them would return frozen values
         * (the kernel moves their events to PERF_EVENT_STATE_OFF,
         * perf_event_exit_cpu() in kernel/events/core.c). */
        CPULIST_FOREACH(cpu, &c->online) {
                if (cpulist_has(&now, (unsigned) cpu))
                        continue;
                if (c->cpus[cpu])
                        cpu_close(c->cpus[cpu]);
                changed = true;
        }
        /* Online (again): events left OFF are not re-enabled by the kernel,
         * so open afresh; the totals carry on from where they were. */
        CPULIST_FOREACH(cpu, &now) {
                if (cpulist_has(&c->online, (unsigned) cpu))
                        continue;
                cpu_open(c, cpu_get(c, (unsigned) cpu));
                changed = true;
        }
        c->online = now;
        if (changed)
                update_state(c);
        return changed;
}

/* A hardware group that never ran: the kernel accepted a group larger than
 * the PMU can hold (validate_group() in drivers/perf/arm_pmu.c skips a
 * leader opened disabled) and will never schedule it. Lower the PMU's
 * budget to half of this group and reopen every CPU of that PMU. */
static void handle_oversized(struct pmu_collector *c, struct cpu_state *s, struct group *g) {
        size_t idx;
        bool with_cycles = false;
        size_t n_general;
        unsigned *general;
        bool *cycles;

        /* Another CPU's group of the same PMU already lowered the budget
         * in this read and marked us for reopening. */
        if (s->reopen)
                return;
        if (s->pmu) {
                idx = pmu_index(c, s->pmu);
                general = &c->general[idx];
                cycles = &c->cycle_counter[idx];
        } else {
                general = &c->general_no_pmu;
                cycles = NULL;
        }
        for (size_t i = 0; i < g->n; i++)
                if (g->m[i].ev == PMU_EVENT_CYCLES && cycles && *cycles)
                        with_cycles = true;
        n_general = g->n - (with_cycles ? 1 : 0);

        if (n_general >= 2)
                *general = MIN(*general, (unsigned) (n_general / 2));
        else if (with_cycles)
                *cycles = false; /* e.g. the cycle counter is taken by someone else */
        else {
                g->stuck = true; /* one event that never runs: nothing to split */
                return;
        }
        c->resplits++;
        for (size_t i = 0; i < ELEMENTSOF(c->cpus); i++) {
                struct cpu_state *o = c->cpus[i];

                if (o && o->open && o->pmu == s->pmu)
                        o->reopen = true;
        }
}

static void read_group(struct pmu_collector *c, struct cpu_state *s, struct group *g) {
        uint64_t buf[PMU_GROUP_READ_SIZE(PMU_GROUP_MAX_EVENTS) / sizeof(uint64_t)];
        struct pmu_group_reading rd;
        struct slot *sl = &s->slots[g->slot];
        uint64_t de, dr;
        ssize_t n;

        n = read(g->m[0].fd, buf, PMU_GROUP_READ_SIZE(g->n));
        if (n < 0 || pmu_group_parse_read(buf, (size_t) n, &rd) < 0 || rd.n != g->n) {
                /* ENODEV & co: the CPU or PMU went away under us. */
                s->reopen = true;
                return;
        }

        pmu_group_time_advance(&sl->time, rd.enabled, rd.running, &de, &dr);
        sl->pub.enabled_ns_total = sl->time.enabled_ns_total;
        sl->pub.running_ns_total = sl->time.running_ns_total;

        for (size_t i = 0; i < rd.n; i++)
                for (size_t j = 0; j < g->n; j++)
                        if (g->m[j].kernel_id == rd.id[i]) {
                                pmu_group_counter_advance(&s->counters[g->m[j].ev], rd.value[i], de, dr);
                                break;
                        }

        if (rd.running == 0 && rd.enabled > 0 && !g->software && !g->stuck && ++g->zero_reads >= c->stuck_reads)
                handle_oversized(c, s, g);

        /* Enabled time stopped while the CPU is online: the events were
         * turned OFF (a CPU offline and back between two polls). */
        if (c->reads > 0 && de == 0 && rd.enabled > 0)
                s->reopen = true;
}

/* The top-down group's read: fractions of this interval, or none when the
 * group did not run in it (pmu_topdown_window_advance()). */
static void read_derived(struct pmu_collector *c, struct cpu_state *s, struct derived *g) {
        uint64_t buf[PMU_GROUP_READ_SIZE(_PMU_TD_INPUT_MAX) / sizeof(uint64_t)];
        struct pmu_group_reading rd;
        struct pmu_topdown t;
        ssize_t n;

        g->last = (struct pmu_topdown) {};
        if (g->n == 0)
                return;
        n = read(g->fd[0], buf, PMU_GROUP_READ_SIZE(g->n));
        if (n < 0 || pmu_group_parse_read(buf, (size_t) n, &rd) < 0) {
                s->reopen = true;
                return;
        }
        if (pmu_topdown_window_advance(&g->window, &g->plan, g->id, &rd, &t) > 0) {
                g->last = t;
                g->zero_reads = 0;
                g->error[0] = '\0';
        } else if (rd.running == 0 && rd.enabled > 0 && ++g->zero_reads >= c->stuck_reads)
                /* Left open: it may get counters when others let go; said in /status. */
                snprintf(g->error, sizeof(g->error),
                         "its group (%zu events) has never been scheduled: the PMU's counters are taken", g->n);
}

static void read_topdown(struct pmu_collector *c, struct cpu_state *s) {
        for (size_t k = 0; k < _DERIVED_MAX; k++)
                read_derived(c, s, &s->dg[k]);
}

/* Open each memory-side PMU's group on its cpumask CPU (uncore PMUs count
 * for the whole mesh or socket; the kernel refuses them elsewhere,
 * arm_cmn_event_init() and uncore_pmu_event_init()). */
static void bandwidth_open(struct pmu_collector *c) {
        (void) pmu_bandwidth_plan(c->sysfs->root, &c->bw_plan);
        c->bw = xcalloc(MAX(c->bw_plan.n, 1U), sizeof(*c->bw));
        for (size_t i = 0; i < c->bw_plan.n; i++) {
                struct bandwidth *b = &c->bw[i];
                const struct pmu_bandwidth_source *src = &c->bw_plan.sources[i];
                int r = 0;

                *b = (struct bandwidth) { .src = src, .fd = { -1, -1 } };
                for (size_t k = 0; k < src->n && r >= 0; k++) {
                        struct perf_event_attr attr;

                        attr_init(&attr, src->type, src->config[k]);
                        attr.disabled = k == 0;
                        r = perf_event_open(&attr, -1, (int) src->cpu, k == 0 ? -1 : b->fd[0], PERF_FLAG_FD_CLOEXEC);
                        if (r < 0)
                                break;
                        b->fd[k] = r;
                        if (ioctl(r, PERF_EVENT_IOC_ID, &b->id[k]) < 0)
                                r = -errno;
                }
                if (r >= 0 && ioctl(b->fd[0], PERF_EVENT_IOC_ENABLE, 0) < 0)
                        r = -errno;
                if (r < 0) {
                        b->error = r;
                        for (size_t k = 2; k > 0; k--)
                                b->fd[k - 1] = safe_close(b->fd[k - 1]);
                }
        }
}

static void bandwidth_read(struct bandwidth *b) {
        uint64_t buf[PMU_GROUP_READ_SIZE(2) / sizeof(uint64_t)], value[2] = {}, delta[2], bytes;
        struct pmu_group_reading rd;
        ssize_t n;
        size_t matched = 0;

        b->counted = false;
        if (b->fd[0] < 0)
                return;
        n = read(b->fd[0], buf, PMU_GROUP_READ_SIZE(b->src->n));
        if (n < 0 || pmu_group_parse_read(buf, (size_t) n, &rd) < 0 || rd.n != b->src->n)
                return;
        for (size_t i = 0; i < rd.n; i++)
                for (size_t k = 0; k < b->src->n; k++)
                        if (rd.id[i] == b->id[k]) {
                                value[k] = rd.value[i];
                                matched++;
                        }
        if (matched != b->src->n)
                return;
        if (b->primed && rd.running > b->prev_running && value[0] >= b->prev[0] && value[1] >= b->prev[1]) {
                delta[0] = value[0] - b->prev[0];
                delta[1] = value[1] - b->prev[1];
                if (pmu_bandwidth_bytes(b->src, delta, rd.enabled - b->prev_enabled, rd.running - b->prev_running,
                                        &bytes) >= 0) {
                        b->bytes_total = b->bytes_total > UINT64_MAX - bytes ? UINT64_MAX : b->bytes_total + bytes;
                        b->counted = true;
                }
        }
        b->primed = true;
        memcpy(b->prev, value, sizeof(b->prev));
        b->prev_enabled = rd.enabled;
        b->prev_running = rd.running;
}

static void compute_ratios(struct cpu_state *s) {
        bool counted[_PMU_EVENT_MAX];
        uint64_t delta[_PMU_EVENT_MAX];

        for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                counted[i] = s->counters[i].counted;
                delta[i] = s->counters[i].delta;
        }
        pmu_ratio_compute(counted, delta, s->ratios);
}

int pmu_collector_read(struct pmu_collector *c) {
        bool reopened = false;

        CPULIST_FOREACH(cpu, &c->online) {
                struct cpu_state *s = c->cpus[cpu];

                if (!s || !s->open)
                        continue;
                for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                        s->counters[i].counted = false;
                        s->counters[i].delta = 0;
                }
                for (size_t k = 0; k < s->n_groups; k++)
                        read_group(c, s, &s->groups[k]);
                read_topdown(c, s);
                compute_ratios(s);
        }
        for (size_t i = 0; i < c->bw_plan.n; i++)
                bandwidth_read(&c->bw[i]);
        c->reads++;

        CPULIST_FOREACH(cpu, &c->online) {
                struct cpu_state *s = c->cpus[cpu];

                if (s && s->reopen) {
                        cpu_open(c, s);
                        reopened = true;
                }
        }
        if (reopened)
                update_state(c);
        return 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b) {
        return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static void snapshot_cpu(const struct cpu_state *s, struct pmu_cpu_snapshot *out) {
        memset(out, 0, sizeof(*out));
        out->cpu = s->cpu;
        if (s->pmu)
                snprintf(out->pmu, sizeof(out->pmu), "%s", s->pmu->name);
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                out->events[i].total = s->counters[i].total;
                out->events[i].delta = s->counters[i].delta;
                out->events[i].counted = s->counters[i].counted;
        }
        for (size_t k = 0; k < s->n_groups; k++)
                for (size_t j = 0; j < s->groups[k].n; j++)
                        out->events[s->groups[k].m[j].ev].available = true;
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                if (!out->events[i].available) {
                        out->events[i].counted = false;
                        out->events[i].delta = 0;
                }
        for (size_t i = 0; i < s->n_slots; i++)
                if (s->slots[i].pub.n_events > 0)
                        out->groups[out->n_groups++] = s->slots[i].pub;
        memcpy(out->ratios, s->ratios, sizeof(out->ratios));

        {
                const struct derived *td = &s->dg[DERIVED_TOPDOWN], *mpki = &s->dg[DERIVED_MPKI];

                out->topdown.method = td->n > 0 ? td->plan.method : PMU_TOPDOWN_NONE;
                snprintf(out->topdown.core, sizeof(out->topdown.core), "%s", td->plan.core);
                snprintf(out->topdown.note, sizeof(out->topdown.note), "%s%s%s", td->plan.note,
                         td->plan.note[0] && td->error[0] ? "; " : "", td->error);
                snprintf(out->topdown.mpki_note, sizeof(out->topdown.mpki_note), "%s%s%s", mpki->plan.note,
                         mpki->plan.note[0] && mpki->error[0] ? "; " : "", mpki->error);
                for (size_t m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++) {
                        const struct derived *g = pmu_topdown_metric_is_mpki(m) ? mpki : td;

                        out->topdown.computes[m] = g->n > 0 && pmu_topdown_plan_computes(&g->plan, m);
                        out->topdown.last.present[m] = g->last.present[m];
                        out->topdown.last.value[m] = g->last.value[m];
                }
        }
}

int pmu_collector_snapshot(const struct pmu_collector *c, struct pmu_snapshot **ret) {
        struct pmu_snapshot *snap;
        size_t n = 0;

        snap = xcalloc(1, sizeof(*snap));
        snap->cpus = xcalloc(MAX(cpulist_count(&c->online), 1U), sizeof(*snap->cpus));
        snap->reads = c->reads;
        snap->state = c->state;
        snprintf(snap->message, sizeof(snap->message), "%s", c->message);

        CPULIST_FOREACH(cpu, &c->online) {
                const struct cpu_state *s = c->cpus[cpu];

                if (!s || !s->open)
                        continue;
                snapshot_cpu(s, &snap->cpus[n]);
                n++;
        }
        snap->n_cpus = n;

        snap->n_bandwidth = c->bw_plan.n;
        snap->bandwidth = xcalloc(MAX(c->bw_plan.n, 1U), sizeof(*snap->bandwidth));
        for (size_t i = 0; i < c->bw_plan.n; i++) {
                struct pmu_bandwidth_value *o = &snap->bandwidth[i];

                snprintf(o->pmu, sizeof(o->pmu), "%s", c->bw[i].src->name);
                o->cpu = c->bw[i].src->cpu;
                o->method = c->bw[i].src->method;
                o->bytes_total = c->bw[i].bytes_total;
                o->counted = c->bw[i].counted;
                o->error = c->bw[i].error;
        }
        snprintf(snap->bandwidth_note, sizeof(snap->bandwidth_note), "%s", c->bw_plan.note);

        for (size_t i = 0; i < c->n_events; i++) {
                enum pmu_event_id ev = c->events[i];
                struct pmu_event_status *st = &snap->events[ev];

                st->configured = true;
                CPULIST_FOREACH(cpu, &c->online) {
                        const struct cpu_state *s = c->cpus[cpu];

                        if (!s || !s->open)
                                continue;
                        if (s->error[ev] < 0 && st->error == 0)
                                st->error = s->error[ev];
                }
        }

        for (size_t k = 0; k < n; k++) {
                const struct pmu_cpu_snapshot *cs = &snap->cpus[k];

                for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                        struct pmu_event_value *h = &snap->host[i];

                        if (!cs->events[i].available)
                                continue;
                        snap->events[i].available = true;
                        h->available = true;
                        if (cs->events[i].counted) {
                                h->counted = true;
                                h->delta = add_sat(h->delta, cs->events[i].delta);
                        }
                }
        }
        /* Host totals include what CPUs now offline counted before, so
         * that the host-wide counter never goes backwards on hotplug. */
        for (size_t cpu = 0; cpu < ELEMENTSOF(c->cpus); cpu++) {
                const struct cpu_state *s = c->cpus[cpu];

                if (!s)
                        continue;
                for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                        if (snap->host[i].available)
                                snap->host[i].total = add_sat(snap->host[i].total, s->counters[i].total);
        }
        /* Host ratios: sum numerator and denominator over the CPUs where
         * both were counted, so a CPU that counted one side only (its
         * other group was not scheduled) does not skew the ratio. */
        for (size_t id = 0; id < _PMU_RATIO_MAX; id++) {
                const struct pmu_ratio_def *d = pmu_ratio_get((enum pmu_ratio_id) id);
                uint64_t num = 0, den = 0;
                bool any = false;

                for (size_t k = 0; k < n; k++) {
                        const struct pmu_cpu_snapshot *cs = &snap->cpus[k];

                        if (!cs->events[d->numerator].counted || !cs->events[d->denominator].counted)
                                continue;
                        num = add_sat(num, cs->events[d->numerator].delta);
                        den = add_sat(den, cs->events[d->denominator].delta);
                        any = true;
                }
                if (any && den > 0)
                        snap->host_ratios[id] = (struct pmu_ratio) { .present = true,
                                                                     .value = (double) num / (double) den };
        }

        *ret = snap;
        return 0;
}

struct pmu_snapshot *pmu_snapshot_free(struct pmu_snapshot *s) {
        if (!s)
                return NULL;
        free(s->cpus);
        free(s->bandwidth);
        free(s);
        return NULL;
}

const struct pmu_cpu_snapshot *pmu_snapshot_cpu(const struct pmu_snapshot *s, unsigned cpu) {
        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].cpu == cpu)
                        return &s->cpus[i];
        return NULL;
}

enum pmu_state pmu_collector_state(const struct pmu_collector *c, const char **ret_message) {
        if (ret_message)
                *ret_message = c->message;
        return c->state;
}

const struct cpulist *pmu_collector_online(const struct pmu_collector *c) {
        return &c->online;
}

int pmu_collector_pmu_counters(const struct pmu_collector *c, const char *pmu, unsigned *ret) {
        const struct pmu_desc *p = pmu_sysfs_pmu_by_name(c->sysfs, pmu);

        if (!p)
                return -ENOENT;
        *ret = c->general[pmu_index(c, p)];
        return 0;
}

unsigned pmu_collector_resplits(const struct pmu_collector *c) {
        return c->resplits;
}

int pmu_raise_nofile_limit(uint64_t *ret_limit) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        return -errno;
        }
        if (ret_limit)
                *ret_limit = (uint64_t) rl.rlim_cur;
        return 0;
}
