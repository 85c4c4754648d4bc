/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sampler-source.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "cpulist.h"
#include "macro.h"
#include "parse-util.h"
#include "pmu-sysfs.h"
#include "proc-table.h"
#include "sampler-ring.h"
#include "strbuf.h"

enum cpu_state {
        CPU_NEW,                /* not opened yet */
        CPU_OFFLINE,
        CPU_ACTIVE,
        CPU_RETRYING,           /* closed for a backoff (EBUSY, EMFILE...), or its event stopped */
        CPU_FAILED,
};

static const char *const cpu_state_names[] = {
        [CPU_NEW] = "new",
        [CPU_OFFLINE] = "offline",
        [CPU_ACTIVE] = "active",
        [CPU_RETRYING] = "retrying",
        [CPU_FAILED] = "failed",
};

struct sampler_cpu {
        struct sampler_source *src;
        uint32_t cpu;
        enum cpu_state state;
        int error;                      /* the errno of the last failure */
        struct sampler_cpu_stats st;    /* since start, across its events; st.note is the CPU's note */

        int fd;
        struct perf_event_attr attr;
        uint8_t *base;                  /* user page + data ring */
        size_t base_len;
        uint64_t data_hint;             /* the ring size the memlock limit allowed, 0: the configured */
        struct sampler_ring ring;
        bool ring_ready;
        sd_event_source *io;

        uint64_t retry_at_usec, retry_usec;
        uint64_t enabled_ns;            /* the event's time enabled at the last tick (read(2)) */
        unsigned stopped_ticks;
        uint64_t samples_at_tick;
};

struct sampler_source {
        struct source base;             /* first: the seam's helpers cast */
        struct sampler_options opts;
        char *sysfs_root, *procfs_root, *event_name;
        sd_event *event;
        sd_event_source *timer, *more;
        struct proc_table *procs;
        struct sampler_cpu **cpus;      /* by CPU number, n_cpus slots */
        size_t n_cpus;
        size_t next_cpu;                /* where the next budgeted drain starts */
        struct cpulist only;            /* the CPUs start() was given */
        bool restricted;
        enum source_state state;
        char reason[SOURCE_REASON_MAX];
        char warnings[SOURCE_WARNINGS_MAX][SOURCE_WARNING_LEN];
        size_t n_warnings;
        /* What this kernel refused (EINVAL), learnt on the first CPU and not asked again. */
        bool no_build_id, no_cgroup;
        uint32_t max_stack;             /* the configured depth, clamped to the sysctl */
        uint64_t regs_mask;
        bool user_regs;                 /* REGS_USER and STACK_USER asked for */
        unsigned shift;                 /* source_throttle(): the configured frequency >> shift, 1 Hz at least */
        size_t page_size;
        uint64_t last_sample_usec, started_usec;
};

static struct sampler_source *of(struct source *s) {
        return (struct sampler_source *) s;
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static void cpu_note(struct sampler_cpu *c, const char *fmt, ...) _printf_(2, 3);
static void cpu_note(struct sampler_cpu *c, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(c->st.note, sizeof(c->st.note), fmt, ap);
        va_end(ap);
}

static void warn(struct sampler_source *src, const char *fmt, ...) _printf_(2, 3);
static void warn(struct sampler_source *src, const char *fmt, ...) {
        va_list ap;

        if (src->n_warnings >= SOURCE_WARNINGS_MAX)
                return;
        va_start(ap, fmt);
        vsnprintf(src->warnings[src->n_warnings++], SOURCE_WARNING_LEN, fmt, ap);
        va_end(ap);
}

/* ---- events and names ------------------------------------------------------- */

uint64_t sampler_default_regs_mask(void) {
#if defined(__x86_64__)
        /* tools/perf/arch/x86/include/perf_regs.h: PERF_REGS_MASK without DS ES FS GS. */
        return ((UINT64_C(1) << 24) - 1) & ~(UINT64_C(0xf) << 12);
#elif defined(__aarch64__)
        /* tools/perf/arch/arm64/include/perf_regs.h: x0..x30, sp, pc. */
        return (UINT64_C(1) << 33) - 1;
#else
        return 0;
#endif
}

/* perf's names (tools/perf/util/parse-events.c event_symbols_hw/sw) for the events that sample CPU time. */
static const struct {
        const char *name;
        uint32_t type;
        uint64_t config;
} event_names[] = {
        { "cpu-clock",               PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
        { "task-clock",              PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
        { "cpu-cycles",              PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
        { "cycles",                  PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
        { "instructions",            PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
        { "cache-references",        PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
        { "cache-misses",            PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
        { "branch-instructions",     PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
        { "branches",                PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
        { "branch-misses",           PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
        { "bus-cycles",              PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
        { "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
        { "stalled-cycles-backend",  PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
        { "ref-cycles",              PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};

int sampler_event_parse(const char *name, uint32_t *ret_type, uint64_t *ret_config) {
        if (!name || !ret_type || !ret_config)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(event_names); i++)
                if (streq(name, event_names[i].name)) {
                        *ret_type = event_names[i].type;
                        *ret_config = event_names[i].config;
                        return 0;
                }
        /* perf list: "rNNN" is a raw PMU event, NNN its hex code. */
        if (name[0] == 'r' && name[1] != '\0' && strspn(name + 1, "0123456789abcdefABCDEF") == strlen(name + 1) &&
            strlen(name + 1) <= 16) {
                *ret_config = strtoull(name + 1, NULL, 16);
                *ret_type = PERF_TYPE_RAW;
                return 0;
        }
        return -EINVAL;
}

static bool is_clock(const struct sampler_options *o) {
        return o->type == PERF_TYPE_SOFTWARE &&
               (o->config == PERF_COUNT_SW_CPU_CLOCK || o->config == PERF_COUNT_SW_TASK_CLOCK);
}

static int read_sysctl_u32(const char *procfs_root, const char *name, uint32_t *ret) {
        char path[PATH_MAX], buf[DECIMAL_STR_MAX(int64_t) + 2];
        int32_t v;
        int k;

        snprintf(path, sizeof(path), "%s/sys/kernel/%s", procfs_root, name);
        k = pmu_sysfs_read_string(path, buf, sizeof(buf));
        if (k < 0)
                return k;
        k = safe_atoi32(buf, &v);
        if (k < 0)
                return k;
        *ret = (uint32_t) v;
        return 0;
}

/* ---- one CPU's event ---------------------------------------------------------- */

static void close_cpu(struct sampler_cpu *c, enum cpu_state state) {
        c->io = sd_event_source_disable_unref(c->io);
        if (c->ring_ready)
                sampler_ring_done(&c->ring);
        c->ring_ready = false;
        if (c->base)
                munmap(c->base, c->base_len);
        c->base = NULL;
        c->fd = safe_close(c->fd);
        c->state = state;
}

static void retry_later(struct sampler_cpu *c, int error, const char *what) {
        c->retry_usec = c->retry_usec ? MIN(2 * c->retry_usec, SAMPLER_RETRY_MAX_USEC) : SAMPLER_RETRY_MIN_USEC;
        c->retry_at_usec = now_usec() + c->retry_usec;
        c->error = error;
        cpu_note(c, "%s: %s; retrying in %" PRIu64 " s", what, strerror(-error), c->retry_usec / USEC_PER_SEC);
        close_cpu(c, CPU_RETRYING);
}

static void set_more(struct sampler_source *src, bool on) {
        if (src->more)
                (void) sd_event_source_set_enabled(src->more, on ? SD_EVENT_ON : SD_EVENT_OFF);
}

/*
 * Every CPU's task and mapping records so far, before any CPU's samples
 * (sampler_ring_prescan()): a process that exec'd on one CPU and ran on
 * another is named and unwound by what its exec said, whichever ring is
 * drained first. Each record is looked at once: a pre-scan goes on from
 * where the last one stopped. Once per round of drains, before it: a round
 * over every CPU costs one pre-scan, not one per CPU.
 */
static void prescan_all(struct sampler_source *src) {
        for (size_t i = 0; i < src->n_cpus; i++) {
                struct sampler_cpu *c = src->cpus[i];

                if (c && c->state == CPU_ACTIVE && c->ring_ready)
                        sampler_ring_prescan(&c->ring);
        }
}

/* At most max records of one CPU (0: all), after prescan_all(); whether more are left. */
static bool drain_cpu(struct sampler_cpu *c, size_t max, size_t *ret_read) {
        uint64_t samples;
        int n;

        if (c->state != CPU_ACTIVE || !c->ring_ready) {
                if (ret_read)
                        *ret_read = 0;
                return false;
        }
        samples = c->st.samples;
        n = sampler_ring_drain(&c->ring, max);
        if (c->st.samples != samples)
                c->src->last_sample_usec = now_usec();
        if (ret_read)
                *ret_read = n > 0 ? (size_t) n : 0;
        return sampler_ring_pending(&c->ring);
}

static int on_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        struct sampler_cpu *c = userdata;

        /* Edge-triggered: what the budget leaves is read by the defer source, at idle priority. */
        prescan_all(c->src);
        if (drain_cpu(c, SAMPLER_SOURCE_BUDGET, NULL))
                set_more(c->src, true);
        /* perf_poll(): EPOLLHUP when the event can never run again. Reopened by the drain timer. */
        if (c->state == CPU_ACTIVE && (revents & (EPOLLHUP | EPOLLERR)))
                retry_later(c, -ENODEV, "the kernel ended the event");
        return 0;
}

static int sys_perf_event_open(struct perf_event_attr *a, int cpu) {
        long fd = syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

        return fd < 0 ? -errno : (int) fd;
}

/* The frequency in effect: the configured one, slowed down by the budget. */
static uint64_t frequency(const struct sampler_source *src) {
        return src->shift >= 64 ? 1 : MAX(src->opts.frequency >> src->shift, (uint64_t) 1);
}

static void fill_attr(struct sampler_source *src, struct perf_event_attr *a) {
        *a = (struct perf_event_attr) {
                .size = sizeof(*a),
                .type = src->opts.type,
                .config = src->opts.config,
                .sample_freq = frequency(src),
                .freq = 1,
                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                               PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
                /* Time enabled and running: an event the kernel took off its CPU stands still (on_timer()). */
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                .disabled = 1,
                .mmap = 1,
                .mmap2 = 1,
                .comm = 1,
                .comm_exec = 1,
                .task = 1,
                .sample_id_all = 1,
                .exclude_callchain_user = 0,
                .sample_max_stack = (uint16_t) src->max_stack,
        };
        if (!src->no_cgroup) {
                a->sample_type |= PERF_SAMPLE_CGROUP;
                a->cgroup = 1;
        }
        if (!src->no_build_id)
                a->build_id = 1;
        if (src->user_regs) {
                a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                a->sample_regs_user = src->regs_mask;
                a->sample_stack_user = src->opts.stack_bytes;
        }
}

/*
 * perf_event_open(), giving up what an older kernel refuses with EINVAL:
 * the build id in MMAP2 (5.12), then cgroups (5.7). Learnt once for every
 * CPU; when even the oldest form is refused, the cause is elsewhere (the
 * event, the register mask) and nothing is given up.
 */
static int open_event(struct sampler_source *src, struct sampler_cpu *c) {
        bool had_build_id = !src->no_build_id, had_cgroup = !src->no_cgroup;
        int fd;

        for (;;) {
                fill_attr(src, &c->attr);
                fd = sys_perf_event_open(&c->attr, (int) c->cpu);
                if (fd != -EINVAL)
                        break;
                if (!src->no_build_id)
                        src->no_build_id = true;
                else if (!src->no_cgroup)
                        src->no_cgroup = true;
                else {
                        src->no_build_id = !had_build_id;
                        src->no_cgroup = !had_cgroup;
                        return fd;
                }
        }
        if (fd >= 0 && had_cgroup && src->no_cgroup)
                warn(src, "the kernel does not report cgroups on samples (PERF_SAMPLE_CGROUP, Linux 5.7+): "
                          "cgroups come from /proc, once per process");
        return fd;
}

static int map_ring(struct sampler_cpu *c) {
        struct sampler_source *src = c->src;
        uint64_t data = c->data_hint ?: src->opts.data_bytes;
        int k;

        /* The memlock limit (perf_event_mlock_kb, RLIMIT_MEMLOCK) refuses large rings with EPERM or
         * ENOMEM (kernel/events/core.c perf_mmap()): halve down to the floor. */
        for (;;) {
                c->base_len = src->page_size + data;
                c->base = mmap(NULL, c->base_len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
                if (c->base != MAP_FAILED)
                        break;
                c->base = NULL;
                k = -errno;
                if ((k != -ENOMEM && k != -EPERM) || data / 2 < MAX((uint64_t) SAMPLER_DATA_FLOOR, src->page_size)) {
                        cpu_note(c, "cannot map the data ring (%" PRIu64 " bytes): %s%s", data, strerror(-k),
                                 k == -ENOMEM || k == -EPERM ?
                                 " (memlock: raise LimitMEMLOCK= or kernel.perf_event_mlock_kb)" : "");
                        return k;
                }
                data /= 2;
        }
        if (data != src->opts.data_bytes) {
                c->data_hint = data;
                cpu_note(c, "data ring reduced to %" PRIu64 " bytes from %" PRIu64 " by the memlock limit", data,
                         src->opts.data_bytes);
        }
        k = sampler_ring_init(&c->ring, (struct perf_event_mmap_page *) c->base, c->base + src->page_size,
                              (size_t) data, &c->attr, src->base.sink, src->procs, &c->st);
        if (k < 0)
                return k;
        c->ring_ready = true;
        return 0;
}

static int open_cpu(struct sampler_cpu *c) {
        struct sampler_source *src = c->src;
        char hint[SOURCE_WARNING_LEN];
        int k;

        close_cpu(c, CPU_NEW);
        c->st.note[0] = '\0';
        k = open_event(src, c);
        if (k < 0) {
                c->error = k;
                switch (k) {
                case -EACCES:
                case -EPERM:
                        cpu_note(c, "cannot open %s: %s (%s)", src->event_name, strerror(-k),
                                 pmu_perf_permission_hint(src->procfs_root, hint, sizeof(hint)));
                        break;
                case -ENOENT:
                case -EOPNOTSUPP:
                        cpu_note(c, "no %s event here: %s (a hardware event on a VM without a virtual PMU?)",
                                 src->event_name, strerror(-k));
                        break;
                case -ENODEV:
                        cpu_note(c, "offline");
                        c->state = CPU_OFFLINE;
                        return k;
                case -EBUSY:
                case -EMFILE:
                case -ENFILE:
                case -ENOMEM:
                case -EAGAIN:
                case -EINTR:
                        retry_later(c, k, "cannot open the event");
                        return k;
                case -EINVAL:
                        cpu_note(c, "the kernel refuses the %s event as configured: %s (the event, the register "
                                    "mask or the stack size)", src->event_name, strerror(-k));
                        break;
                default:
                        cpu_note(c, "cannot open %s: %s", src->event_name, strerror(-k));
                        break;
                }
                c->state = CPU_FAILED;
                return k;
        }
        c->fd = k;
        k = map_ring(c);
        if (k < 0)
                goto fail;
        /* Edge-triggered: perf_poll() reports a wakeup once. */
        k = sd_event_add_io(src->event, &c->io, c->fd, EPOLLIN | EPOLLET, on_io, c);
        if (k < 0) {
                cpu_note(c, "cannot watch the event: %s", strerror(-k));
                goto fail;
        }
        (void) sd_event_source_set_description(c->io, "sampler-cpu");
        if (ioctl(c->fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
                k = -errno;
                cpu_note(c, "cannot enable the event: %s", strerror(-k));
                goto fail;
        }
        c->state = CPU_ACTIVE;
        c->retry_usec = 0;
        c->error = 0;
        c->enabled_ns = 0;
        c->stopped_ticks = 0;
        return 0;
fail:
        c->error = k;
        close_cpu(c, CPU_FAILED);
        return k;
}

/* ---- the source ---------------------------------------------------------------- */

static struct sampler_cpu *cpu_slot(struct sampler_source *src, uint32_t cpu) {
        struct sampler_cpu *c;

        if (cpu >= src->n_cpus) {
                size_t n = (size_t) cpu + 1;

                src->cpus = xrealloc(src->cpus, n * sizeof(*src->cpus));
                memset(src->cpus + src->n_cpus, 0, (n - src->n_cpus) * sizeof(*src->cpus));
                src->n_cpus = n;
        }
        c = src->cpus[cpu];
        if (!c) {
                c = xcalloc(1, sizeof(*c));
                c->src = src;
                c->cpu = cpu;
                c->fd = -1;
                c->st.cpu = cpu;
                src->cpus[cpu] = c;
        }
        return c;
}

static int sampler_cpus_changed(struct source *s, const struct cpulist *online) {
        struct sampler_source *src = of(s);

        /* CPUs that went: their samples read, their events closed. */
        prescan_all(src);
        for (size_t i = 0; i < src->n_cpus; i++) {
                struct sampler_cpu *c = src->cpus[i];

                if (c && c->state != CPU_OFFLINE && !cpulist_has(online, c->cpu)) {
                        (void) drain_cpu(c, 0, NULL);
                        close_cpu(c, CPU_OFFLINE);
                        cpu_note(c, "offline");
                }
        }
        /* CPUs that came (of those start() was given, if any). */
        CPULIST_FOREACH(cpu, online) {
                struct sampler_cpu *c;

                if (src->restricted && !cpulist_has(&src->only, (unsigned) cpu))
                        continue;
                c = cpu_slot(src, (uint32_t) cpu);
                if (c->state == CPU_OFFLINE || c->state == CPU_NEW)
                        (void) open_cpu(c);
        }
        return 0;
}

static size_t count_cpus(struct sampler_source *src, enum cpu_state state) {
        size_t n = 0;

        for (size_t i = 0; i < src->n_cpus; i++)
                n += src->cpus[i] && src->cpus[i]->state == state;
        return n;
}

static int sampler_drain(struct source *s, size_t budget) {
        struct sampler_source *src = of(s);
        bool more = false;

        if (src->n_cpus == 0)
                return 0;
        prescan_all(src);
        /* Round robin from where the last budget ran out, so no CPU waits behind a busy one. */
        for (size_t i = 0; i < src->n_cpus; i++) {
                size_t at = (src->next_cpu + i) % src->n_cpus, read = 0;
                struct sampler_cpu *c = src->cpus[at];

                if (!c)
                        continue;
                if (budget == 0) {
                        more = more || (c->state == CPU_ACTIVE && c->ring_ready && sampler_ring_pending(&c->ring));
                        continue;
                }
                if (drain_cpu(c, budget, &read)) {
                        more = true;
                        src->next_cpu = at;
                }
                budget -= MIN(budget, read);
        }
        if (more)
                set_more(src, true);
        return more ? 1 : 0;
}

static int on_more(sd_event_source *es, void *userdata) {
        struct sampler_source *src = userdata;

        if (sampler_drain(&src->base, SAMPLER_SOURCE_BUDGET) == 0)
                set_more(src, false);
        return 0;
}

/* An event whose time enabled stopped although enabled on an online CPU: the kernel took it off. */
static bool event_stopped(struct sampler_cpu *c, bool quiet, uint64_t interval_usec) {
        uint64_t v[3];

        if (read(c->fd, v, sizeof(v)) != (ssize_t) sizeof(v))
                return false;
        c->stopped_ticks = quiet && v[1] - c->enabled_ns < interval_usec * 1000 / 4 ? c->stopped_ticks + 1 : 0;
        c->enabled_ns = v[1];
        return c->stopped_ticks > 2;
}

/*
 * The drain timer: every CPU read (the ring wakes the poll only when half
 * full), CPUs retried or back online opened, CPUs gone closed, stopped
 * events reopened, exited processes aged out.
 */
static int on_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        struct sampler_source *src = userdata;
        uint64_t now = now_usec();
        struct cpulist online;

        if (pmu_sysfs_read_online(src->sysfs_root, &online) == 0)
                (void) sampler_cpus_changed(&src->base, &online);
        prescan_all(src);
        for (size_t i = 0; i < src->n_cpus; i++) {
                struct sampler_cpu *c = src->cpus[i];
                bool quiet;

                if (!c)
                        continue;
                if (c->state == CPU_RETRYING && now >= c->retry_at_usec)
                        (void) open_cpu(c);
                if (c->state != CPU_ACTIVE)
                        continue;
                (void) drain_cpu(c, 0, NULL);
                quiet = c->st.samples == c->samples_at_tick;
                c->samples_at_tick = c->st.samples;
                if (event_stopped(c, quiet, src->opts.drain_interval_usec))
                        retry_later(c, -ENODEV, "the event stopped running (its CPU went offline and back?)");
        }
        proc_table_age(src->procs);
        /* From now: after a stall, one tick, not a burst of them. */
        (void) sd_event_source_set_time(es, now_usec() + src->opts.drain_interval_usec);
        return 0;
}

static void sum_up(struct sampler_source *src) {
        size_t active = count_cpus(src, CPU_ACTIVE), failed = count_cpus(src, CPU_FAILED),
               busy = count_cpus(src, CPU_RETRYING), no_event = 0, denied = 0;
        uint64_t since = src->last_sample_usec ?: src->started_usec, quiet = now_usec() - since;
        char first[SOURCE_REASON_MAX / 2] = "";
        size_t n;

        if (src->state == SOURCE_STARTING && src->started_usec == 0)
                return;
        for (size_t i = 0; i < src->n_cpus; i++) {
                const struct sampler_cpu *c = src->cpus[i];

                if (!c || (c->state != CPU_FAILED && c->state != CPU_RETRYING))
                        continue;
                no_event += c->state == CPU_FAILED && (c->error == -ENOENT || c->error == -EOPNOTSUPP);
                denied += c->state == CPU_FAILED && (c->error == -EACCES || c->error == -EPERM);
                if (!first[0])
                        snprintf(first, sizeof(first), "CPU %" PRIu32 ": %s", c->cpu, c->st.note);
        }
        src->reason[0] = '\0';
        if (active == 0) {
                if (failed > 0 && no_event == failed && busy == 0) {
                        /* No such event on this machine: not a failure, the sampler cannot run here. */
                        src->state = SOURCE_OFF;
                        snprintf(src->reason, sizeof(src->reason), "no %s event on this machine; %s",
                                 src->event_name, first);
                        return;
                }
                src->state = failed > 0 ? SOURCE_FAILED : busy > 0 ? SOURCE_IDLE : SOURCE_OFF;
                snprintf(src->reason, sizeof(src->reason), "no CPU samples: %zu failed%s, %zu retrying; %s", failed,
                         denied ? " (permission denied)" : "", busy, first[0] ? first : "every CPU is offline");
                return;
        }
        /* Up only while samples flow. */
        if (quiet < SAMPLER_IDLE_INTERVALS * src->opts.drain_interval_usec)
                src->state = src->last_sample_usec ? SOURCE_RUNNING : SOURCE_STARTING;
        else {
                src->state = SOURCE_IDLE;
                snprintf(src->reason, sizeof(src->reason), "no samples for %" PRIu64 " s%s", quiet / USEC_PER_SEC,
                         failed + busy ? "; " : "");
        }
        if (failed + busy > 0) {
                n = strlen(src->reason);
                snprintf(src->reason + n, sizeof(src->reason) - n, "%zu CPUs sample, %zu failed, %zu retrying; %s",
                         active, failed, busy, first);
        }
}

static int sampler_start(struct source *s, sd_event *event, const struct cpulist *cpus) {
        struct sampler_source *src = of(s);
        struct cpulist online;
        uint32_t sysctl_max;
        int k;

        src->event = event;
        src->started_usec = now_usec();
        /* kernel/events/core.c perf_event_open(): sample_max_stack above the sysctl is EOVERFLOW. */
        src->max_stack = src->opts.max_stack;
        if (read_sysctl_u32(src->procfs_root, "perf_event_max_stack", &sysctl_max) == 0 &&
            sysctl_max < src->max_stack) {
                warn(src, "max_stack %" PRIu32 " lowered to kernel.perf_event_max_stack (%" PRIu32 ")",
                     src->max_stack, sysctl_max);
                src->max_stack = sysctl_max;
        }
        /* kernel/events/core.c perf_event_open(): a frequency above the sysctl is EINVAL (perf lowers it too). */
        if (read_sysctl_u32(src->procfs_root, "perf_event_max_sample_rate", &sysctl_max) == 0 && sysctl_max > 0 &&
            src->opts.frequency > sysctl_max) {
                warn(src, "frequency %" PRIu64 " Hz lowered to kernel.perf_event_max_sample_rate (%" PRIu32 ")",
                     src->opts.frequency, sysctl_max);
                src->opts.frequency = sysctl_max;
        }
        k = pmu_sysfs_read_online(src->sysfs_root, &online);
        if (k < 0) {
                src->state = SOURCE_FAILED;
                snprintf(src->reason, sizeof(src->reason), "the online CPUs cannot be read from %s: %s",
                         src->sysfs_root, strerror(-k));
                return k;
        }
        if (cpus) {
                src->only = *cpus;
                src->restricted = true;
        }
        k = sd_event_add_time_relative(event, &src->timer, CLOCK_MONOTONIC, src->opts.drain_interval_usec, 1000,
                                       on_timer, src);
        if (k < 0)
                return k;
        (void) sd_event_source_set_enabled(src->timer, SD_EVENT_ON);
        (void) sd_event_source_set_description(src->timer, "sampler-drain");
        k = sd_event_add_defer(event, &src->more, on_more, src);
        if (k < 0)
                return k;
        (void) sd_event_source_set_priority(src->more, SD_EVENT_PRIORITY_IDLE);
        (void) sd_event_source_set_enabled(src->more, SD_EVENT_OFF);
        (void) sd_event_source_set_description(src->more, "sampler-more");
        (void) sampler_cpus_changed(s, &online);
        sum_up(src);
        if (count_cpus(src, CPU_ACTIVE) + count_cpus(src, CPU_RETRYING) > 0)
                return 0;
        for (size_t i = 0; i < src->n_cpus; i++)
                if (src->cpus[i] && src->cpus[i]->error < 0)
                        return src->cpus[i]->error;
        return -ENODEV;
}

static void sampler_status(struct source *s, struct source_status *ret) {
        struct sampler_source *src = of(s);
        size_t n = 0;

        sum_up(src);
        *ret = (struct source_status) {
                .kind = "sampler",
                .state = src->state,
                /* A clock's period in freq mode is fixed at NSEC_PER_SEC / freq (perf_swevent_init_hrtimer()). */
                .sample_period = is_clock(&src->opts) ? NSEC_PER_SEC / frequency(src) : 0,
                .sample_frequency = frequency(src),
                .throttle_shift = src->shift,
        };
        memcpy(ret->reason, src->reason, sizeof(ret->reason));
        proc_table_stats(src->procs, &ret->procs);
        if (src->state == SOURCE_FAILED)
                for (size_t i = 0; i < src->n_cpus; i++)
                        if (src->cpus[i] && src->cpus[i]->error < 0) {
                                ret->error = src->cpus[i]->error;
                                break;
                        }
        for (size_t i = 0; i < src->n_warnings; i++)
                memcpy(ret->warnings[ret->n_warnings++], src->warnings[i], SOURCE_WARNING_LEN);
        for (size_t i = 0; i < src->n_cpus; i++)
                n += src->cpus[i] != NULL;
        if (n == 0)
                return;
        ret->sampler_cpus = xcalloc(n, sizeof(*ret->sampler_cpus));
        for (size_t i = 0; i < src->n_cpus; i++) {
                const struct sampler_cpu *c = src->cpus[i];
                struct sampler_cpu_stats *st;

                if (!c)
                        continue;
                st = &ret->sampler_cpus[ret->n_sampler_cpus++];
                *st = c->st;
                st->state = cpu_state_names[c->state];
        }
}

static void sampler_free(struct source *s) {
        struct sampler_source *src = of(s);

        src->timer = sd_event_source_disable_unref(src->timer);
        src->more = sd_event_source_disable_unref(src->more);
        for (size_t i = 0; i < src->n_cpus; i++)
                if (src->cpus[i]) {
                        close_cpu(src->cpus[i], CPU_OFFLINE);
                        free(src->cpus[i]);
                }
        free(src->cpus);
        proc_table_free(src->procs);
        free(src->sysfs_root);
        free(src->procfs_root);
        free(src->event_name);
        free(src);
}

/*
 * Each event is opened again at the new frequency, its ring read to the end
 * first. Not PERF_EVENT_IOC_PERIOD: a clock's frequency became a period at
 * open (perf_swevent_init_hrtimer()), and the hrtimer keeps reporting the
 * old one as each sample's PERF_SAMPLE_PERIOD (hw.last_period is never
 * updated) while it fires at the new rate: every sample would weigh the
 * CPU time of the old period.
 */
static int sampler_throttle(struct source *s, unsigned shift) {
        struct sampler_source *src = of(s);
        int r = 0;

        if (shift == src->shift)
                return 0;
        src->shift = shift;
        for (size_t i = 0; i < src->n_cpus; i++)
                if (src->cpus[i] && src->cpus[i]->state == CPU_ACTIVE)
                        (void) ioctl(src->cpus[i]->fd, PERF_EVENT_IOC_DISABLE, 0);
        prescan_all(src);
        for (size_t i = 0; i < src->n_cpus; i++) {
                struct sampler_cpu *c = src->cpus[i];
                int k;

                if (!c || c->state != CPU_ACTIVE)
                        continue;
                (void) drain_cpu(c, 0, NULL);
                k = open_cpu(c);
                if (k < 0)
                        r = k;
        }
        return r;
}

static const struct source_ops sampler_source_ops = {
        .kind = "sampler",
        .start = sampler_start,
        .drain = sampler_drain,
        .cpus_changed = sampler_cpus_changed,
        .status = sampler_status,
        .throttle = sampler_throttle,
        .free = sampler_free,
};

static bool is_power_of_two(uint64_t v) {
        return v && !(v & (v - 1));
}

int sampler_source_new(const struct sampler_options *o, const struct source_sink *sink, struct task_map *tasks,
                       struct source **ret) {
        struct sampler_source *src;
        struct sampler_options opts;
        long page = sysconf(_SC_PAGESIZE);
        int k;

        if (!o || !sink || !tasks || !ret || page <= 0)
                return -EINVAL;
        opts = *o;
        if (!opts.event_name) {
                opts.type = PERF_TYPE_SOFTWARE;
                opts.config = PERF_COUNT_SW_CPU_CLOCK;
        }
        opts.frequency = opts.frequency ?: SAMPLER_DEFAULT_FREQUENCY;
        opts.max_stack = opts.max_stack ?: SAMPLER_DEFAULT_MAX_STACK;
        opts.stack_bytes = opts.stack_bytes ?: SAMPLER_DEFAULT_STACK_BYTES;
        opts.data_bytes = opts.data_bytes ?: SAMPLER_DEFAULT_DATA_BYTES;
        opts.drain_interval_usec = opts.drain_interval_usec ?: SAMPLER_DEFAULT_DRAIN_USEC;
        if (opts.unwind != SAMPLER_UNWIND_AUTO && opts.unwind != SAMPLER_UNWIND_FP &&
            opts.unwind != SAMPLER_UNWIND_DWARF)
                return -EINVAL;
        if (opts.stack_bytes % 8 != 0 || opts.stack_bytes > SAMPLER_STACK_BYTES_MAX || opts.max_stack > UINT16_MAX)
                return -EINVAL;
        if (!is_power_of_two(opts.data_bytes) || opts.data_bytes < (uint64_t) page)
                return -EINVAL;
        src = xcalloc(1, sizeof(*src));
        src->base = (struct source) { .ops = &sampler_source_ops, .sink = sink, .tasks = tasks };
        src->sysfs_root = xstrdup(o->sysfs_root ?: "/sys");
        src->procfs_root = xstrdup(o->procfs_root ?: "/proc");
        src->event_name = xstrdup(o->event_name ?: "cpu-clock");
        opts.sysfs_root = src->sysfs_root;
        opts.procfs_root = src->procfs_root;
        opts.event_name = src->event_name;
        src->opts = opts;
        src->page_size = (size_t) page;
        src->state = SOURCE_STARTING;
        src->regs_mask = opts.regs_mask ?: sampler_default_regs_mask();
        src->user_regs = opts.unwind != SAMPLER_UNWIND_FP && src->regs_mask != 0;
        if (opts.unwind != SAMPLER_UNWIND_FP && src->regs_mask == 0)
                warn(src, "no user registers known for this architecture: call stacks by frame pointers only");
        k = proc_table_new(src->procfs_root, NULL, sink, tasks, &src->procs);
        if (k < 0) {
                sampler_free(&src->base);
                return k;
        }
        *ret = &src->base;
        return 0;
}
