/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-live-source.h"

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
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "macro.h"
#include "pmu-sysfs.h"
#include "proc-table.h"
#include "procfs.h"
#include "spe-live-ring.h"
#include "strbuf.h"
#include "task-map.h"

/* tids /proc did not know, remembered so a thread that is gone is not looked up per batch. */
#define LIVE_NO_PID_CACHE 1024

enum cpu_state {
        CPU_NEW,                /* a covered CPU not opened yet */
        CPU_OFFLINE,
        CPU_ACTIVE,
        CPU_RETRYING,           /* closed for a backoff: EBUSY (another session), or its event ended */
        CPU_FAILED,
};

static const char *const cpu_state_names[] = {
        [CPU_NEW] = "new",
        [CPU_OFFLINE] = "offline",
        [CPU_ACTIVE] = "active",
        [CPU_RETRYING] = "retrying",
        [CPU_FAILED] = "failed",
};

struct live_cpu {
        struct spe_live_source *src;
        uint32_t cpu;
        const struct spe_pmu *pmu;
        enum cpu_state state;
        char note[SPE_STREAM_NOTE_MAX];

        int fd;
        struct spe_pmu_event_attr attr;
        uint8_t *base;                  /* user page + data ring */
        size_t base_len;
        uint8_t *aux;
        size_t aux_len;
        struct spe_live_ring ring;
        bool ring_ready;
        bool watched;                   /* in the source's epoll set */
        uint64_t woke_usec;             /* its last wakeup, 0: none since it opened */
        uint64_t aux_at_wake, data_at_wake; /* bytes read from each ring by then */

        bool has_stream;
        struct spe_stream stream;       /* the CPU's since start, across its events */
        uint64_t aux_at_tick;           /* PERF_RECORD_AUX read when the drain timer last looked */
        unsigned quiet_ticks;           /* drain timer ticks without a PERF_RECORD_AUX */
        uint64_t aux_hint;              /* the AUX size the memlock limit allowed last time, 0: the configured */
        uint64_t enabled_ns;            /* the event's time enabled at the last tick (read(2)) */
        uint64_t enabled_read_usec;     /* when enabled_ns was read, 0: not since the event opened */
        unsigned stopped_ticks;         /* ticks in a row its time enabled did not advance */
        uint64_t retry_at_usec, retry_usec;
        uint64_t records_at_tick;       /* stream records when the drain timer last looked */
        bool ended_unasked;             /* the last PERF_RECORD_AUX read ended a session the daemon did not end */
        bool fault_suspect;             /* the last flush found it stopped that way (note_fault_restart()) */
        uint64_t records_at_flush;      /* stream records after that flush */
};

struct spe_live_source {
        struct source base;             /* first: the seam's helpers cast */
        struct spe_live_options opts;
        char *sysfs_root, *procfs_root;
        sd_event *event;
        sd_event_source *timer;
        sd_event_source *arm;           /* the loop's first turn: enable what start opened */
        bool armed;                     /* events are enabled as they open */
        int epfd;                       /* every CPU's event, edge-triggered: one wakeup serves many */
        sd_event_source *io;            /* epfd in the loop; off while holding */
        sd_event_source *hold;          /* turns io back on */
        uint64_t hold_usec;             /* after a wakeup, how long the rings can wait for the next */
        uint64_t wakes, wakes_since_usec; /* ring wakeups counted since then */
        double wake_rate;               /* ring wakeups a second, over the last SPE_LIVE_WAKE_RATE_USEC or more */
        struct spe_pmu *pmus;
        size_t n_pmus;
        struct live_cpu **cpus;         /* by CPU number, n_cpus slots */
        size_t n_cpus;
        enum source_state state;
        char reason[SOURCE_REASON_MAX];
        char warning[SOURCE_WARNING_LEN]; /* options given up (physical addresses without CAP_PERFMON) */
        uint64_t interval;              /* the period the hardware uses */
        unsigned shift;                 /* source_throttle(): the configured period << shift */
        size_t page_size;
        uint64_t last_record_usec;      /* when records last came (CLOCK_MONOTONIC), 0 never */
        uint64_t started_usec;
        struct spe_stream_out out;
        uint32_t no_pid[LIVE_NO_PID_CACHE];
        /* The processes met (proc-table.h), told to procs_sink: the sink but for SOURCE_TASK_GONE. */
        struct proc_table *procs;
        struct source_sink procs_sink;
};

static struct spe_live_source *of(struct source *s) {
        return (struct spe_live_source *) s;
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static int sys_perf_event_open(struct spe_pmu_event_attr *a, int cpu) {
        long fd = syscall(SYS_perf_event_open, &a->attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

        return fd < 0 ? -errno : (int) fd;
}

static void cpu_note(struct live_cpu *c, const char *fmt, ...) _printf_(2, 3);
static void cpu_note(struct live_cpu *c, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(c->note, sizeof(c->note), fmt, ap);
        va_end(ap);
}

/* ---- /proc: the pid of a thread no record named ---------------------------- */

static uint32_t pid_of(void *userdata, uint32_t tid) {
        struct spe_live_source *src = userdata;
        uint32_t *slot = &src->no_pid[task_map_hash(tid) % LIVE_NO_PID_CACHE];
        uint32_t pid;
        int k;

        if (*slot == tid + 1)
                return SOURCE_NO_ID;
        k = procfs_tgid(src->procfs_root, tid, &pid);
        if (k < 0) {
                /* Only a thread that is gone is remembered; a transient error (EMFILE) is not. */
                if (k == -ENOENT)
                        *slot = tid + 1;
                return SOURCE_NO_ID;
        }
        task_map_set_pid(src->out.tasks, tid, pid);
        return pid;
}

/*
 * A run of records of a process: one that started before the source (no
 * COMM or MMAP2 of it came) is read from /proc once, so its PCs have
 * mappings and its threads names.
 */
static void seen(void *userdata, uint32_t pid, uint32_t tid, uint64_t time_ns) {
        struct spe_live_source *src = userdata;

        proc_table_sample(src->procs, pid, tid, time_ns, 0);
}

/*
 * The table's tasks, to the sink, but SOURCE_TASK_GONE: it says that no
 * record of a process is left in this source's rings, and its one consumer
 * (the unwinder's state, sample-sink.h) belongs to the sampler's table.
 */
static void procs_task(void *userdata, const struct source_task *t) {
        const struct source_sink *sink = userdata;

        if (t->kind != SOURCE_TASK_GONE && sink->task)
                sink->task(sink->userdata, t);
}

static void procs_mapping(void *userdata, const struct source_mapping *m) {
        const struct source_sink *sink = userdata;

        if (sink->mapping)
                sink->mapping(sink->userdata, m);
}

/* ---- the rings ------------------------------------------------------------- */

static void close_cpu(struct live_cpu *c, enum cpu_state state);
static void retry_later(struct live_cpu *c, int error, const char *what);

/*
 * PERF_EVENT_IOC_ENABLE: 0 or -errno. Every ENABLE the source makes is of an
 * event that may have been off (a truncation, a flush, a ring found stalled
 * or quiet): a switch meanwhile went unreported, the stream must not carry
 * the task that ran before over it (spe_live_ring_enabled()).
 */
static int enable_event(struct live_cpu *c) {
        if (ioctl(c->fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
                return -errno;
        if (c->ring_ready)
                spe_live_ring_enabled(&c->ring);
        return 0;
}

/* Everything the kernel published on this CPU; a session that ended is restarted (spe-live-ring.h). */
/* stopped: after a PERF_EVENT_IOC_DISABLE of ours (spe_live_ring_drain_stopped()). */
static void drain_cpu_as(struct live_cpu *c, bool stopped) {
        bool ended = false;
        uint64_t aux_records, stalls;
        int k;

        if (c->state != CPU_ACTIVE || !c->ring_ready)
                return;
        aux_records = c->stream.st.aux_records;
        stalls = c->stream.st.aux_stalls;
        k = stopped ? spe_live_ring_drain_stopped(&c->ring, &ended) : spe_live_ring_drain(&c->ring, &ended);
        /* A buffer-full interrupt's commit, or a fault's: none but a truncation stops on its own. */
        if (c->stream.st.aux_records != aux_records)
                c->ended_unasked = !(c->ring.last_aux_flags & PERF_AUX_FLAG_TRUNCATED);
        if (k < 0 || !ended)
                return;
        /*
         * Stalled (its PERF_RECORD_AUX lost, a TRUNCATED one perhaps among them): the event
         * may be off, or on and writing. An ENABLE cannot tell (_perf_event_enable() in
         * kernel/events/core.c returns at once for an event already on, and the ioctl says 0
         * either way), and records of the thread known until now would be doubted with those
         * after it. DISABLE first (arm_spe_pmu_stop() commits what the hardware wrote, with
         * its switches before it) and read that: what comes after the ENABLE is all the
         * window may hide.
         */
        if (c->stream.st.aux_stalls != stalls && !stopped && ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0) == 0) {
                k = spe_live_ring_drain_stopped(&c->ring, NULL);
                if (k < 0)
                        return;
        }
        k = enable_event(c);
        if (k < 0) {
                retry_later(c, k, "re-enabling the event after its session ended");
                return;
        }
        c->stream.st.reenables++;
}

static void drain_cpu(struct live_cpu *c) {
        drain_cpu_as(c, false);
}

/* ---- opening and closing one CPU ------------------------------------------ */

static void close_cpu(struct live_cpu *c, enum cpu_state state) {
        if (c->watched)
                (void) epoll_ctl(c->src->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        c->watched = false;
        if (c->ring_ready)
                spe_live_ring_done(&c->ring);
        c->ring_ready = false;
        if (c->aux)
                munmap(c->aux, c->aux_len);
        if (c->base)
                munmap(c->base, c->base_len);
        c->aux = c->base = NULL;
        c->fd = safe_close(c->fd);
        c->state = state;
}

/* Closed now, reopened by the drain timer after a backoff doubling up to a minute. */
static void retry_later(struct live_cpu *c, int error, const char *what) {
        c->retry_usec = c->retry_usec ? MIN(2 * c->retry_usec, SPE_LIVE_RETRY_MAX_USEC) : SPE_LIVE_RETRY_MIN_USEC;
        c->retry_at_usec = now_usec() + c->retry_usec;
        cpu_note(c, "%s: %s; retrying in %" PRIu64 " s", what, strerror(-error), c->retry_usec / USEC_PER_SEC);
        close_cpu(c, CPU_RETRYING);
}

/*
 * How long this CPU's rings can wait after a wakeup: a quarter of the time
 * the room past their wakeup points (less the driver's slack) takes to fill
 * at the pace they filled since its last wakeup. UINT64_MAX: not known yet.
 */
static uint64_t cpu_hold_usec(struct live_cpu *c, uint64_t now) {
        const struct spe_live_source *src = c->src;
        const struct perf_event_mmap_page *pg = c->ring.ring.page;
        uint64_t aux = c->ring.ring.aux_next, data = pg->data_tail;
        uint64_t aux_wm = c->attr.attr.aux_watermark ?: c->aux_len / 2;
        uint64_t slack = 2 * src->page_size + SPE_LIVE_MAX_RECORD;
        uint64_t aux_room = c->aux_len > aux_wm + slack ? c->aux_len - aux_wm - slack : 0;
        uint64_t data_room = src->opts.data_bytes - c->attr.attr.wakeup_watermark;
        uint64_t gap = now - c->woke_usec, hold = UINT64_MAX;

        if (c->woke_usec && gap > 0) {
                if (aux > c->aux_at_wake)
                        hold = MIN(hold, (uint64_t) ((double) aux_room * gap / (aux - c->aux_at_wake) / 4));
                if (data > c->data_at_wake)
                        hold = MIN(hold, (uint64_t) ((double) data_room * gap / (data - c->data_at_wake) / 4));
        }
        c->woke_usec = now;
        c->aux_at_wake = aux;
        c->data_at_wake = data;
        return hold;
}

/*
 * Every CPU whose event woke the poll. Then, on a busy host, a hold: the
 * rings that cross their wakeup points meanwhile are read together when it
 * ends, one wakeup for many where each ring would have woken the thread on
 * its own (348 times a second at 192 simulated CPUs, each core at its own
 * pace, each wakeup a context switch). The hold's end is a wakeup too: it
 * is taken only when two ring wakeups or more are due within it.
 */
static int on_rings(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        struct spe_live_source *src = userdata;
        struct epoll_event ev[64];
        uint64_t now = now_usec(), hold = UINT64_MAX;
        int n;

        do {
                n = epoll_wait(src->epfd, ev, (int) ELEMENTSOF(ev), 0);
                for (int i = 0; i < n; i++) {
                        struct live_cpu *c = ev[i].data.ptr;
                        uint64_t h;

                        drain_cpu(c);
                        if (c->state != CPU_ACTIVE)
                                continue;
                        /* perf_poll(): EPOLLHUP when the event can never run again (its PMU went away,
                         * perf_remove_from_owner()). Reopened by the drain timer while the CPU is online. */
                        if (ev[i].events & (EPOLLHUP | EPOLLERR)) {
                                retry_later(c, -ENODEV, "the kernel ended the event");
                                continue;
                        }
                        h = cpu_hold_usec(c, now);
                        hold = MIN(hold, h);
                }
                src->wakes += (uint64_t) MAX(n, 0);
        } while (n == (int) ELEMENTSOF(ev));
        if (now - src->wakes_since_usec >= SPE_LIVE_WAKE_RATE_USEC) {
                src->wake_rate = src->wakes_since_usec ?
                        (double) src->wakes * USEC_PER_SEC / (double) (now - src->wakes_since_usec) : 0;
                src->wakes = 0;
                src->wakes_since_usec = now;
        }
        if (hold != UINT64_MAX)
                src->hold_usec = MIN(hold, SPE_LIVE_HOLD_MAX_USEC);
        if (src->hold_usec >= SPE_LIVE_HOLD_MIN_USEC && src->wake_rate * (double) src->hold_usec >= 2.0 * USEC_PER_SEC &&
            sd_event_source_set_time(src->hold, now + src->hold_usec) >= 0 &&
            sd_event_source_set_enabled(src->hold, SD_EVENT_ONESHOT) >= 0)
                (void) sd_event_source_set_enabled(es, SD_EVENT_OFF);
        return 0;
}

static int on_hold_end(sd_event_source *es, uint64_t usec, void *userdata) {
        struct spe_live_source *src = userdata;

        return sd_event_source_set_enabled(src->io, SD_EVENT_ON);
}

static bool is_power_of_two(uint64_t v) {
        return v && !(v & (v - 1));
}

static uint64_t read_midr(struct spe_live_source *src, uint32_t cpu) {
        char path[PATH_MAX], buf[64], rel[64];
        uint64_t v = 0;

        /* Documentation/arch/arm64/cpu-feature-registers.rst: regs/identification/midr_el1. */
        snprintf(rel, sizeof(rel), "cpu%" PRIu32 "/regs/identification/midr_el1", cpu);
        if (pmu_sysfs_join(path, sizeof(path), src->sysfs_root, "devices/system/cpu", rel) < 0 ||
            pmu_sysfs_read_string(path, buf, sizeof(buf)) < 0)
                return 0;
        v = strtoull(buf, NULL, 16);
        return v;
}

static int map_rings(struct live_cpu *c) {
        struct spe_live_source *src = c->src;
        struct perf_event_mmap_page *pg;
        uint64_t aux = c->aux_hint ?: src->opts.aux_bytes;
        int k;

        c->base_len = src->page_size + src->opts.data_bytes;
        c->base = mmap(NULL, c->base_len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
        if (c->base == MAP_FAILED) {
                c->base = NULL;
                k = -errno;
                cpu_note(c, "cannot map the data ring (%" PRIu64 " bytes): %s", (uint64_t) c->base_len,
                         strerror(-k));
                return k;
        }
        pg = (struct perf_event_mmap_page *) c->base;
        /* The memlock limit (perf_event_mlock_kb, RLIMIT_MEMLOCK) refuses large areas with
         * EPERM or ENOMEM (kernel/events/core.c perf_mmap()): halve down to the floor. */
        for (;;) {
                pg->aux_offset = c->base_len;
                pg->aux_size = aux;
                c->aux = mmap(NULL, aux, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, (off_t) c->base_len);
                if (c->aux != MAP_FAILED)
                        break;
                c->aux = NULL;
                k = -errno;
                if ((k != -ENOMEM && k != -EPERM) || aux / 2 < MAX((uint64_t) SPE_LIVE_AUX_FLOOR, 2 * src->page_size)) {
                        cpu_note(c, "cannot map the AUX area (%" PRIu64 " bytes): %s%s", aux, strerror(-k),
                                 k == -ENOMEM || k == -EPERM ?
                                 " (memlock: raise LimitMEMLOCK= or kernel.perf_event_mlock_kb)" : "");
                        return k;
                }
                aux /= 2;
        }
        c->aux_len = aux;
        /* The wakeup point was fixed at open for the configured size: past a smaller area's
         * half, every fill would end the session truncated. Reopen with one that fits. */
        if (c->attr.attr.aux_watermark && c->attr.attr.aux_watermark > aux / 2 && aux < src->opts.aux_bytes &&
            c->aux_hint != aux) {
                c->aux_hint = aux;
                return -EAGAIN;
        }
        if (aux != src->opts.aux_bytes)
                cpu_note(c, "AUX area reduced to %" PRIu64 " bytes from %" PRIu64 " by the memlock limit", aux,
                         src->opts.aux_bytes);
        if (!c->has_stream) {
                spe_stream_init(&c->stream, c->cpu, read_midr(src, c->cpu));
                c->has_stream = true;
        }
        k = spe_live_ring_init(&c->ring, pg, c->base + src->page_size, src->opts.data_bytes, c->aux, aux,
                               &c->attr.attr, &c->stream, &src->out);
        if (k < 0)
                return k;
        c->ring.procs = src->procs;
        /* arm_spe_pmu_next_off(): the hardware stops a page short of the reader's tail. */
        aux_ring_set_full_slack(&c->ring.ring, 2 * src->page_size + SPE_LIVE_MAX_RECORD);
        c->ring_ready = true;
        return 0;
}

/* The period asked for: the configured one (0: the PMU's minimum) slowed down by the budget. */
static uint64_t throttled(const struct spe_live_source *src, const struct spe_pmu *pmu) {
        uint64_t want = src->opts.pmu.interval ?: pmu->min_interval;

        return src->shift >= 64 || want > (UINT64_MAX >> src->shift) ? UINT64_MAX : want << src->shift;
}

static int open_cpu(struct live_cpu *c) {
        struct spe_live_source *src = c->src;
        struct spe_pmu_options o = src->opts.pmu;
        char err[MESSAGE_MAX] = "";
        bool dropped_pa = false, dropped_pct = false;
        uint64_t interval;
        int k;

        o.interval = throttled(src, c->pmu);
        for (;;) {
                k = spe_pmu_attr(c->pmu, &o, &c->attr, &interval, err, sizeof(err));
                if (k < 0) {
                        cpu_note(c, "%s", err);
                        close_cpu(c, CPU_FAILED);
                        return k;
                }
                src->interval = interval;
                /* Records of the data ring beside the AUX ones: switches attribute records
                 * without CONTEXT packets, mappings and names symbolize them. */
                c->attr.attr.context_switch = 1;
                c->attr.attr.mmap = 1;
                c->attr.attr.mmap2 = 1;
                /* Non-executable mappings too (perf_event_open(2), mmap_data), as perf record -d. */
                c->attr.attr.mmap_data = src->opts.data_mappings;
                c->attr.attr.comm = 1;
                c->attr.attr.task = 1;
                /* 0: the kernel's default, half of the area actually mapped (rb_alloc_aux()). */
                c->attr.attr.aux_watermark = (uint32_t) (c->aux_hint ? MIN(src->opts.watermark, c->aux_hint / 2) :
                                                                      src->opts.watermark);
                c->attr.attr.watermark = 1;
                /* Its time enabled, read each tick, tells an event the kernel stopped for good. */
                c->attr.attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
                c->attr.attr.wakeup_watermark = (uint32_t) (src->opts.data_bytes / 2);

                k = sys_perf_event_open(&c->attr, (int) c->cpu);
                if (k >= 0)
                        break;
                if ((k == -EACCES || k == -EPERM) && (o.physical_addresses || o.physical_timestamps)) {
                        /* The driver wants CAP_PERFMON for pa_enable and pct_enable
                         * (arm_spe_pmu_event_init(), perfmon_capable()): try without. */
                        dropped_pa = o.physical_addresses;
                        dropped_pct = o.physical_timestamps;
                        o.physical_addresses = o.physical_timestamps = false;
                        continue;
                }
                if (k == -EBUSY) {
                        retry_later(c, k, "SPE is busy on this CPU (another session, perf record -e arm_spe//?)");
                        return k;
                }
                if (k == -ENODEV) {
                        cpu_note(c, "offline");
                        close_cpu(c, CPU_OFFLINE);
                        return k;
                }
                if (k == -EACCES || k == -EPERM) {
                        char hint[256];

                        cpu_note(c, "perf_event_open: %s (%s)", strerror(-k),
                                 pmu_perf_permission_hint(c->src->procfs_root, hint, sizeof(hint)));
                } else
                        cpu_note(c, "perf_event_open: %s%s", strerror(-k),
                                 k == -ENOENT || k == -EOPNOTSUPP ? " (SPE not usable here)" :
                                 k == -EINVAL ? " (the kernel refused the attr)" : "");
                close_cpu(c, CPU_FAILED);
                return k;
        }
        c->fd = k;
        c->retry_usec = 0;
        c->note[0] = '\0';
        /* It opened without them: they need a permission this daemon lacks, on every CPU. */
        if (dropped_pa || dropped_pct) {
                src->opts.pmu.physical_addresses &= !dropped_pa;
                src->opts.pmu.physical_timestamps &= !dropped_pct;
                snprintf(src->warning, sizeof(src->warning), "%s%s%s dropped: the driver wants CAP_PERFMON for %s",
                         dropped_pa ? "physical addresses" : "", dropped_pa && dropped_pct ? " and " : "",
                         dropped_pct ? "physical timestamps" : "", dropped_pa && dropped_pct ? "them" : "it");
        }
        k = map_rings(c);
        if (k == -EAGAIN) {
                /* A smaller area than the wakeup point was set for: once more, with one that fits. */
                close_cpu(c, CPU_FAILED);
                return open_cpu(c);
        }
        if (k < 0)
                goto fail;
        /* Edge-triggered: perf_poll() reports a wakeup once, an eventfd would stay readable. */
        if (epoll_ctl(src->epfd, EPOLL_CTL_ADD, c->fd,
                      &(struct epoll_event) { .events = EPOLLIN | EPOLLET, .data.ptr = c }) < 0) {
                k = -errno;
                cpu_note(c, "cannot watch the event: %s", strerror(-k));
                goto fail;
        }
        c->watched = true;
        c->woke_usec = 0;
        if (src->armed && (k = enable_event(c)) < 0) {
                cpu_note(c, "cannot enable the event: %s", strerror(-k));
                goto fail;
        }
        c->state = CPU_ACTIVE;
        c->enabled_ns = 0;
        c->enabled_read_usec = 0;
        c->stopped_ticks = 0;
        return 0;
fail:
        close_cpu(c, CPU_FAILED);
        return k;
}

/* ---- the source ------------------------------------------------------------ */

static struct live_cpu *cpu_slot(struct spe_live_source *src, uint32_t cpu, const struct spe_pmu *pmu) {
        struct live_cpu *c;

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
                c->pmu = pmu;
                src->cpus[cpu] = c;
        }
        return c;
}

/* The hint for a machine with no arm_spe PMU (the driver refuses to probe under KPTI). */
static void no_pmu_reason(struct spe_live_source *src) {
        char path[PATH_MAX], buf[128] = "";
        struct utsname u;
        bool arm64 = uname(&u) == 0 && streq(u.machine, "aarch64");

        if (arm64 && pmu_sysfs_join(path, sizeof(path), src->sysfs_root, "devices/system/cpu/vulnerabilities",
                                    "meltdown") == 0)
                (void) pmu_sysfs_read_string(path, buf, sizeof(buf));
        snprintf(src->reason, sizeof(src->reason),
                 "no arm_spe PMU in %s/bus/event_source/devices: %s", src->sysfs_root,
                 strstr(buf, "PTI") ? "the kernel unmaps itself at EL0 (KPTI), and the arm_spe_pmu driver does "
                                      "not probe then: boot with kpti=off" :
                 arm64 ? "no SPE on these cores, the arm_spe_pmu module is not loaded, or the hypervisor does "
                         "not pass SPE through" :
                         "not an Arm machine (SPE is an Arm feature)");
}

static int live_cpus_changed(struct source *s, const struct cpulist *online) {
        struct spe_live_source *src = of(s);

        for (size_t p = 0; p < src->n_pmus; p++)
                CPULIST_FOREACH(cpu, &src->pmus[p].cpus) {
                        struct live_cpu *c = cpu_slot(src, (uint32_t) cpu, &src->pmus[p]);
                        bool up = cpulist_has(online, (unsigned) cpu);

                        if (!up && c->state != CPU_OFFLINE) {
                                drain_cpu(c);
                                close_cpu(c, CPU_OFFLINE);
                                cpu_note(c, "offline");
                        } else if (up && (c->state == CPU_OFFLINE || c->state == CPU_NEW))
                                (void) open_cpu(c);
                }
        return 0;
}

static size_t count_cpus(struct spe_live_source *src, enum cpu_state state) {
        size_t n = 0;

        for (size_t i = 0; i < src->n_cpus; i++)
                n += src->cpus[i] && src->cpus[i]->state == state;
        return n;
}

static int live_drain(struct source *s, size_t budget) {
        struct spe_live_source *src = of(s);

        /* A ring holds at most its size: each CPU's is read whole, the budget is not needed. */
        for (size_t i = 0; i < src->n_cpus; i++)
                if (src->cpus[i])
                        drain_cpu(src->cpus[i]);
        return 0;
}

/*
 * An event whose time enabled stopped although it is enabled on an online
 * CPU: the kernel took it off the CPU (perf_event_exit_cpu() when the CPU
 * went offline) and never puts it back, even when the CPU returns between
 * two looks at the online CPUs. Only a tick that brought nothing counts,
 * no PERF_RECORD_AUX and no SPE record (an event kept off by truncations
 * or stalls while the reader is slow still brings those), and only past
 * the flush that would have moved a live one (SPE_LIVE_FLUSH_TICKS).
 * A busy CPU is not asked (a read(2) a CPU a tick, 384 a second on a big
 * host, for nothing): its next quiet tick reads a time that moved on and
 * counts from the one after.
 */
static bool event_stopped(struct live_cpu *c, bool quiet, uint64_t interval_usec) {
        uint64_t v[3];

        if (!quiet) {
                c->stopped_ticks = 0;
                return false;
        }
        if (read(c->fd, v, sizeof(v)) != (ssize_t) sizeof(v))
                return false;
        c->stopped_ticks = v[1] - c->enabled_ns < interval_usec * 1000 / 4 ? c->stopped_ticks + 1 : 0;
        c->enabled_ns = v[1];
        c->enabled_read_usec = now_usec();
        return c->stopped_ticks > SPE_LIVE_FLUSH_TICKS + 1;
}

/*
 * A fatal buffer fault: drivers/perf/arm_spe_pmu.c arm_spe_pmu_buf_get_fault_act()
 * answers a stage 1 or stage 2 abort on the buffer (PMBSR_EL1.EC FAULT_S1,
 * FAULT_S2) with SPE_PMU_BUF_FAULT_ACT_FATAL: it commits what was written
 * with no TRUNCATED flag (PMBSR_EL1.DL is clear), arm_spe_pmu_irq_handler()
 * disables the buffer and begins no new session, and nothing disables the
 * event: it stays on, PERF_EVENT_IOC_ENABLE does nothing, and the CPU is
 * quiet until pmu->stop() + pmu->start(), which is what the flush of a quiet
 * CPU does (DISABLE + ENABLE). The kernel says so only in its log ("Unexpected
 * buffer fault on CPU N"). A flush that found it so: the last chunk read ended
 * a session the daemon did not end, with no TRUNCATED; the event was on all
 * along (its time enabled ran since the last tick's read: an event the kernel
 * turned off, after a TRUNCATED record the full data ring lost, stops it,
 * perf_event_update_time() counts only INACTIVE and ACTIVE); and the DISABLE
 * had nothing to commit (a live session commits what it wrote: on a quiet CPU
 * the flush usually finds some). The restart is counted once records come
 * after it, before the next flush. A CPU that went idle right after a
 * buffer-full interrupt and runs again just after a flush counts too; a
 * fault before a session's first byte (no PERF_RECORD_AUX) is restarted by
 * the flush all the same, uncounted.
 */
static void note_fault_restart(struct live_cpu *c) {
        if (c->fault_suspect && c->stream.st.records != c->records_at_flush) {
                c->stream.st.aux_fault_restarts++;
                c->fault_suspect = false;
        }
}

/* Whether the event's time enabled ran for at least half the time since the last tick read it. */
static bool event_was_on(struct live_cpu *c) {
        uint64_t v[3], since;

        if (!c->enabled_read_usec || read(c->fd, v, sizeof(v)) != (ssize_t) sizeof(v))
                return false;
        since = now_usec() - c->enabled_read_usec;
        return v[1] > c->enabled_ns && (v[1] - c->enabled_ns) * 2 >= since * 1000;
}

/* The flush of a quiet CPU: DISABLE commits its partial buffer, ENABLE starts a new session. */
static void flush_cpu(struct live_cpu *c) {
        uint64_t aux_records = c->stream.st.aux_records;
        bool unasked = c->ended_unasked && event_was_on(c);
        int k;

        c->quiet_ticks = 0;
        if (ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0) < 0)
                return;
        drain_cpu_as(c, true);
        note_fault_restart(c);
        /* What that DISABLE committed ended a session the daemon ended. */
        c->ended_unasked = false;
        c->fault_suspect = c->state == CPU_ACTIVE && unasked && c->stream.st.aux_records == aux_records;
        c->records_at_flush = c->stream.st.records;
        k = c->state == CPU_ACTIVE ? enable_event(c) : 0;
        if (k < 0)
                retry_later(c, k, "re-enabling the event after a flush");
}

/*
 * The drain timer: every CPU is read; one that brought no PERF_RECORD_AUX
 * for SPE_LIVE_FLUSH_TICKS ticks has its partial buffer committed (DISABLE
 * stops the session, the driver writes the PERF_RECORD_AUX of what it has)
 * and read, so a quiet CPU's records reach the store within a few ticks;
 * CPUs that are busy, were ended by the kernel, or are back online are
 * reopened.
 */
static int on_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        struct spe_live_source *src = userdata;
        uint64_t now = now_usec();
        struct cpulist online;
        bool have_online = pmu_sysfs_read_online(src->sysfs_root, &online) == 0;

        for (size_t i = 0; i < src->n_cpus; i++) {
                struct live_cpu *c = src->cpus[i];
                uint64_t records;
                bool quiet;

                if (!c)
                        continue;
                if ((c->state == CPU_RETRYING && now >= c->retry_at_usec) ||
                    (c->state == CPU_OFFLINE && have_online && cpulist_has(&online, c->cpu)))
                        (void) open_cpu(c);
                if (c->state != CPU_ACTIVE)
                        continue;
                /* Since the last tick: what its wakeups brought, and this drain. */
                records = c->records_at_tick;
                drain_cpu(c);
                note_fault_restart(c);
                quiet = c->stream.st.aux_records == c->aux_at_tick;
                c->quiet_ticks = quiet ? c->quiet_ticks + 1 : 0;
                if (c->state == CPU_ACTIVE && c->quiet_ticks >= SPE_LIVE_FLUSH_TICKS)
                        flush_cpu(c);
                c->aux_at_tick = c->stream.st.aux_records;
                if (c->state == CPU_ACTIVE &&
                    event_stopped(c, quiet && c->stream.st.records == records, src->opts.drain_interval_usec))
                        retry_later(c, -ENODEV, "the event stopped running (its CPU went offline and back?)");
                if (c->stream.st.records != records)
                        src->last_record_usec = now;
                c->records_at_tick = c->stream.st.records;
        }
        /* Every ring was read: exits read before the last tick are past, old ones let go. */
        proc_table_age(src->procs);
        /* From now: after a stall, one tick, not a burst of them. */
        (void) sd_event_source_set_time(es, now_usec() + src->opts.drain_interval_usec);
        return 0;
}

static void sum_up(struct spe_live_source *src) {
        size_t active = count_cpus(src, CPU_ACTIVE), failed = count_cpus(src, CPU_FAILED),
               busy = count_cpus(src, CPU_RETRYING);
        uint64_t since = src->last_record_usec ?: src->started_usec, quiet = now_usec() - since;
        char first[SOURCE_REASON_MAX / 2] = "";
        size_t n;

        for (size_t i = 0; i < src->n_cpus; i++)
                if (src->cpus[i] && (src->cpus[i]->state == CPU_FAILED || src->cpus[i]->state == CPU_RETRYING)) {
                        snprintf(first, sizeof(first), "CPU %" PRIu32 ": %s", src->cpus[i]->cpu,
                                 src->cpus[i]->note);
                        break;
                }
        /* No PMU: live_start() said why, and nothing changes that. */
        if (src->n_pmus == 0) {
                src->state = src->opts.required ? SOURCE_FAILED : SOURCE_OFF;
                return;
        }
        src->reason[0] = '\0';
        if (active == 0) {
                /* Failed only when something is wrong: busy CPUs are retried, offline ones come back. */
                src->state = failed > 0 ? SOURCE_FAILED : busy > 0 ? SOURCE_IDLE : SOURCE_OFF;
                snprintf(src->reason, sizeof(src->reason), "no CPU samples: %zu failed, %zu busy; %s", failed, busy,
                         first[0] ? first : "all covered CPUs are offline");
                return;
        }
        /* Up only while records flow (armprofd_collector_up). */
        if (quiet < SPE_LIVE_IDLE_INTERVALS * src->opts.drain_interval_usec)
                src->state = src->last_record_usec ? SOURCE_RUNNING : SOURCE_STARTING;
        else {
                src->state = SOURCE_IDLE;
                snprintf(src->reason, sizeof(src->reason), "no SPE records for %" PRIu64 " s%s",
                         quiet / USEC_PER_SEC, failed + busy ? "; " : "");
        }
        if (failed + busy > 0) {
                n = strlen(src->reason);
                snprintf(src->reason + n, sizeof(src->reason) - n, "%zu CPUs sample, %zu failed, %zu busy; %s",
                         active, failed, busy, first);
        }
}

/*
 * A ring fills from the moment its event is enabled and is read only once
 * the loop runs: the CPUs opened at start wait for the loop's first turn,
 * all together. Opening takes a while on a big host (each event maps its
 * rings; 192 CPUs took 1.7 s under the simulated PMU), and the first CPU's
 * 256 KiB would have filled in 1.4 s at the default period.
 */
static int on_arm(sd_event_source *es, void *userdata) {
        struct spe_live_source *src = userdata;

        src->armed = true;
        for (size_t i = 0; i < src->n_cpus; i++) {
                struct live_cpu *c = src->cpus[i];
                int k = c && c->state == CPU_ACTIVE ? enable_event(c) : 0;

                if (k < 0) {
                        cpu_note(c, "cannot enable the event: %s", strerror(-k));
                        close_cpu(c, CPU_FAILED);
                }
        }
        return 0;
}

static int live_start(struct source *s, sd_event *event, const struct cpulist *cpus) {
        struct spe_live_source *src = of(s);
        char err[MESSAGE_MAX] = "";
        struct cpulist online;
        int k;

        src->event = event;
        src->started_usec = now_usec();
        k = spe_pmu_discover(src->sysfs_root, &src->pmus, &src->n_pmus, err, sizeof(err));
        if (k < 0) {
                src->state = SOURCE_FAILED;
                snprintf(src->reason, sizeof(src->reason), "the arm_spe PMUs cannot be read: %s", err);
                return k;
        }
        if (src->n_pmus == 0) {
                src->state = src->opts.required ? SOURCE_FAILED : SOURCE_OFF;
                no_pmu_reason(src);
                return -ENOENT;
        }
        if (cpus)
                online = *cpus;
        else {
                k = pmu_sysfs_read_online(src->sysfs_root, &online);
                if (k < 0) {
                        src->state = SOURCE_FAILED;
                        snprintf(src->reason, sizeof(src->reason), "the online CPUs cannot be read: %s",
                                 strerror(-k));
                        return k;
                }
        }
        k = sd_event_add_time_relative(event, &src->timer, CLOCK_MONOTONIC, src->opts.drain_interval_usec, 1000,
                                       on_timer, src);
        if (k < 0)
                return k;
        (void) sd_event_source_set_enabled(src->timer, SD_EVENT_ON);
        (void) sd_event_source_set_description(src->timer, "spe-drain");
        src->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (src->epfd < 0)
                return -errno;
        k = sd_event_add_io(event, &src->io, src->epfd, EPOLLIN, on_rings, src);
        if (k < 0)
                return k;
        (void) sd_event_source_set_description(src->io, "spe-rings");
        k = sd_event_add_time(event, &src->hold, CLOCK_MONOTONIC, 0, 1000, on_hold_end, src);
        if (k < 0)
                return k;
        (void) sd_event_source_set_enabled(src->hold, SD_EVENT_OFF);
        (void) sd_event_source_set_description(src->hold, "spe-hold");
        k = sd_event_add_defer(event, &src->arm, on_arm, src);
        if (k < 0)
                return k;
        /*
         * When the loop is about to read: after the loop's own due work (the
         * collector's IMPORTANT timers; an epoch end overdue behind slow opens
         * took 130 ms under TSan between the enables and the first read, and
         * 64 KiB areas filled), before the drain timer and the rings.
         */
        (void) sd_event_source_set_priority(src->arm, SD_EVENT_PRIORITY_NORMAL - 1);
        (void) sd_event_source_set_enabled(src->arm, SD_EVENT_ONESHOT);
        (void) sd_event_source_set_description(src->arm, "spe-arm");
        (void) live_cpus_changed(s, &online);
        sum_up(src);
        return count_cpus(src, CPU_ACTIVE) + count_cpus(src, CPU_RETRYING) > 0 ? 0 : -ENODEV;
}

/* perf_event_period(): the driver reprograms PMSIRR_EL1 at the event's next start. */
static int live_throttle(struct source *s, unsigned shift) {
        struct spe_live_source *src = of(s);
        int r = 0;

        src->shift = shift;
        for (size_t i = 0; i < src->n_cpus; i++) {
                struct live_cpu *c = src->cpus[i];
                uint64_t v;

                if (!c || c->fd < 0)
                        continue;
                v = spe_pmu_interval(c->pmu, throttled(src, c->pmu));
                if (ioctl(c->fd, PERF_EVENT_IOC_PERIOD, &v) < 0) {
                        r = -errno;
                        cpu_note(c, "cannot change the period to %" PRIu64 ": %s", v, strerror(errno));
                        continue;
                }
                src->interval = v;
        }
        return r;
}

/*
 * CPUs whose user page has no time conversion: arm64's
 * arch_perf_update_userpage() (drivers/perf/arm_pmuv3.c) leaves
 * cap_user_time_zero clear when sched_clock is not the arch timer, and 4.x
 * kernels had no arm64 arch_perf_update_userpage() at all. SPE timestamps
 * then cannot be placed among the kernel's switch records: records without
 * a CONTEXT packet in an AUX chunk that a switch fell in have no thread
 * (spe_stream_chunk_end()), and the time
 * not sampled after a truncation is not measured. Said once, with how many
 * CPUs.
 */
static void no_time_warning(const struct spe_live_source *src, struct source_status *ret) {
        size_t n = 0, first = SIZE_MAX;

        for (size_t i = 0; i < src->n_cpus; i++) {
                const struct live_cpu *c = src->cpus[i];

                if (c && c->state == CPU_ACTIVE && c->ring_ready && !c->ring.clock.has_time_conv) {
                        n++;
                        first = MIN(first, i);
                }
        }
        if (n == 0 || ret->n_warnings >= SOURCE_WARNINGS_MAX)
                return;
        snprintf(ret->warnings[ret->n_warnings++], SOURCE_WARNING_LEN,
                 "no SPE time conversion on %zu CPUs (CPU %zu first): the kernel's user page has no "
                 "cap_user_time_zero (sched_clock is not the arch timer); records without CONTEXT packets in "
                 "a chunk with a thread switch have no thread", n, first);
}

static void live_status(struct source *s, struct source_status *ret) {
        struct spe_live_source *src = of(s);
        size_t n = 0;

        sum_up(src);
        *ret = (struct source_status) {
                .kind = "spe",
                .state = src->state,
                .sample_period = src->interval,
                .throttle_shift = src->shift,
        };
        memcpy(ret->reason, src->reason, sizeof(ret->reason));
        proc_table_stats(src->procs, &ret->procs);
        if (src->warning[0])
                memcpy(ret->warnings[ret->n_warnings++], src->warning, sizeof(src->warning));
        no_time_warning(src, ret);
        for (size_t i = 0; i < src->n_cpus; i++)
                n += src->cpus[i] != NULL;
        if (n == 0)
                return;
        ret->cpus = xcalloc(n, sizeof(*ret->cpus));
        for (size_t i = 0; i < src->n_cpus; i++) {
                const struct live_cpu *c = src->cpus[i];
                struct spe_stream_stats *st;

                if (!c)
                        continue;
                st = &ret->cpus[ret->n_cpus++];
                if (c->has_stream)
                        spe_stream_stats(&c->stream, st);
                else
                        *st = (struct spe_stream_stats) { .cpu = c->cpu };
                st->state = cpu_state_names[c->state];
                memcpy(st->note, c->note, sizeof(st->note));
        }
}

static void live_free(struct source *s) {
        struct spe_live_source *src = of(s);

        src->timer = sd_event_source_disable_unref(src->timer);
        src->arm = sd_event_source_disable_unref(src->arm);
        src->io = sd_event_source_disable_unref(src->io);
        src->hold = sd_event_source_disable_unref(src->hold);
        for (size_t i = 0; i < src->n_cpus; i++)
                if (src->cpus[i]) {
                        close_cpu(src->cpus[i], CPU_OFFLINE);
                        if (src->cpus[i]->has_stream)
                                spe_stream_done(&src->cpus[i]->stream);
                        free(src->cpus[i]);
                }
        free(src->cpus);
        safe_close(src->epfd);
        free(src->pmus);
        proc_table_free(src->procs);
        free(src->sysfs_root);
        free(src->procfs_root);
        free(src);
}

static const struct source_ops live_source_ops = {
        .kind = "spe",
        .start = live_start,
        .drain = live_drain,
        .cpus_changed = live_cpus_changed,
        .status = live_status,
        .throttle = live_throttle,
        .free = live_free,
};

int spe_live_source_new(const struct spe_live_options *o, const struct source_sink *sink, struct task_map *tasks,
                        struct source **ret) {
        struct spe_live_source *src;
        long page = sysconf(_SC_PAGESIZE);
        int k;

        if (!o || !sink || !tasks || !ret || page <= 0)
                return -EINVAL;
        if (!is_power_of_two(o->aux_bytes) || !is_power_of_two(o->data_bytes) ||
            o->aux_bytes < 2 * (uint64_t) page || o->data_bytes < (uint64_t) page ||
            o->watermark >= o->aux_bytes || o->drain_interval_usec == 0)
                return -EINVAL;
        src = xcalloc(1, sizeof(*src));
        src->epfd = -1;
        src->base = (struct source) { .ops = &live_source_ops, .sink = sink, .tasks = tasks };
        src->opts = *o;
        src->sysfs_root = xstrdup(o->sysfs_root ?: "/sys");
        src->procfs_root = xstrdup(o->procfs_root ?: "/proc");
        src->opts.sysfs_root = src->sysfs_root;
        src->opts.procfs_root = src->procfs_root;
        src->page_size = (size_t) page;
        src->state = SOURCE_STARTING;
        src->procs_sink = (struct source_sink) { .userdata = (void *) sink, .task = procs_task,
                                                 .mapping = procs_mapping };
        k = proc_table_new(src->procfs_root, NULL, &src->procs_sink, tasks, &src->procs);
        if (k < 0) {
                live_free(&src->base);
                return k;
        }
        src->out = (struct spe_stream_out) { .sink = sink, .tasks = tasks, .pid_of = pid_of, .seen = seen,
                                             .userdata = src };
        *ret = &src->base;
        return 0;
}
