/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * armprofd-simpmu: a simulated Arm SPE PMU, preloaded (LD_PRELOAD) into the
 * real armprofd or into a test. It plays the kernel's side of one arm_spe
 * PMU type: perf_event_open(2) (through syscall(2)), mmap(2) of the user
 * page, data ring and AUX area, the PERF_EVENT_IOC_* ioctls, read(2),
 * poll/epoll wakeups, munmap(2) and close(2). Everything else goes to the
 * real libc (dlsym(RTLD_NEXT)).
 *
 * What it reproduces, and where the kernel does it:
 *  - kernel/events/core.c: perf_copy_attr() (attr.size, E2BIG),
 *    sys_perf_event_open() (flags, freq/period, cpu checks, exclusive PMUs,
 *    ENODEV for an offline CPU), perf_mmap() (the user page and data ring,
 *    then the AUX area at user_page->aux_offset), _perf_ioctl(),
 *    perf_poll() (EPOLLIN once per wakeup), perf_event_aux_event(),
 *    perf_event_switch_output(), perf_log_itrace_start(), perf_log_throttle().
 *  - kernel/events/ring_buffer.c: perf_output_begin() (CIRC_SPACE against
 *    data_tail, PERF_RECORD_LOST for what had no room), perf_aux_output_begin()
 *    / _end() / _skip() (aux_tail, the watermark, TRUNCATED disables).
 *  - drivers/perf/arm_spe_pmu.c: arm_spe_pmu_event_init() (errno rules),
 *    arm_spe_pmu_next_off() (padding, limits at the wakeup page), the
 *    buffer-full interrupt (arm_spe_pmu_irq_handler()), arm_spe_pmu_stop()
 *    committing what was written, arm_spe_pmu_buf_get_fault_act() (PARTIAL;
 *    a stage 1 or 2 buffer fault: SPE_PMU_BUF_FAULT_ACT_FATAL), each probed
 *    device a PMU of its own (arm_spe_pmu_perf_init()).
 *  - arm64's arch_perf_update_userpage() (the user page's clock) and
 *    sched_clock() (the kernel's times); perf_event_task(), perf_event_comm(),
 *    perf_event_mmap() (side-band storms); __perf_event_period().
 *
 * The "hardware" is one producer thread per CPU writing the records of
 * <dir>/cpuN.bin (as <dir>/cpuN.idx lists them) into the AUX area. The
 * rings are a memfd: the reader's mappings and the producer's own are the
 * same pages, so a reader that unmaps never pulls memory from under the
 * producer (the kernel writes through its own vmap() too).
 *
 * Scenario keys, file formats and logs: tests/simpmu/README.md.
 */

/* Both mmap and mmap64 are interposed; with 64-bit offsets glibc would rename mmap to mmap64. */
#undef _FILE_OFFSET_BITS
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * The interposed entry points: libc calls made while a sanitizer runtime
 * initialises come here first (ThreadSanitizer's symbolizer mmaps before its
 * shadow exists), so they and their fast path are not instrumented for it.
 */
#define SIM_EXPORT __attribute__((visibility("default"), no_sanitize("thread")))
#define SIM_FAST __attribute__((no_sanitize("thread")))
#define SIM_MAX_CPUS 512
#define SIM_MAX_FD 65536
#define SIM_MAX_FAULTS 64
#define SIM_MIN(a, b) ((a) < (b) ? (a) : (b))

/* The driver's fixed format fields (drivers/perf/arm_spe_pmu.c, ATTR_CFG_FLD_*). */
#define SPE_CFG_PA_ENABLE       (UINT64_C(1) << 1)
#define SPE_CFG_PCT_ENABLE      (UINT64_C(1) << 2)
/*
 * PMSEVFR_EL1 bits that must be zero (arch/arm64/include/asm/sysreg.h
 * PMSEVFR_EL1_RES0_IMP and _V1P1): arm_spe_pmu_event_init() refuses an
 * event_filter (config1) with any of them, EOPNOTSUPP.
 */
#define PMSEVFR_RES0_IMP        (UINT64_C(0x0000ffff00000000) | UINT64_C(0x0000000000ff0000) | \
                                 UINT64_C(0x0000000000000f00) | (UINT64_C(1) << 6) | (UINT64_C(1) << 4) | \
                                 (UINT64_C(1) << 2) | (UINT64_C(1) << 0))
#define PMSEVFR_RES0_V1P1       (PMSEVFR_RES0_IMP & ~((UINT64_C(1) << 18) | UINT64_C(0x30000) | UINT64_C(0xf00)))
/* config3 of PERF_ATTR_SIZE_VER8 (include/uapi/linux/perf_event.h, Linux 6.3). */
#define ATTR_SIZE_VER8          136U
#define ATTR_CONFIG3_OFFSET     128U

/* ---- the real libc ------------------------------------------------------ */

static long (*real_syscall)(long, ...);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_close)(int);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);

#define REAL(name)                                                                      \
        do {                                                                            \
                if (!real_##name)                                                       \
                        *(void **) &real_##name = dlsym(RTLD_NEXT, #name);              \
        } while (0)

__attribute__((constructor)) SIM_FAST static void sim_resolve(void) {
        REAL(syscall);
        REAL(mmap);
        REAL(munmap);
        REAL(ioctl);
        REAL(close);
        REAL(read);
        REAL(epoll_ctl);
        REAL(epoll_wait);
        REAL(epoll_pwait);
        REAL(poll);
        REAL(ppoll);
}

/* ---- scenario ------------------------------------------------------------ */

struct fault {
        unsigned cpu;
        uint64_t a, b;
};

#define SIM_MAX_TASKS 16
/* The largest record written: an MMAP2 with a path of PATH_MAX, and the largest sample_id (six u64). */
#define SIM_RECORD_MAX (72 + PATH_MAX + 8 + 6 * 8)

struct fault_list {
        struct fault f[SIM_MAX_FAULTS];
        size_t n;
};

static struct {
        bool loaded;
        char dir[PATH_MAX];
        char online_path[PATH_MAX];
        uint32_t type;
        bool cpus[SIM_MAX_CPUS];
        uint32_t type2;                 /* a second PMU, arm_spe_1 (type2=, cpus2=): UINT32_MAX none */
        bool cpus2[SIM_MAX_CPUS];
        unsigned nr_cpu_ids;            /* possible CPUs: perf_event_alloc() wants cpu below it */
        double rate;                    /* records per second per CPU, 0: as fast as the ring allows */
        double rate_spread;             /* each CPU's rate (or ops_per_sec) differs by up to this share */
        uint64_t open_delay_ns;         /* a perf_event_open() that succeeds takes this long */
        double ops_per_sec;             /* > 0: a core executes this many operations a second and samples one
                                           in its event's sample_period (PERF_EVENT_IOC_PERIOD changes it) */
        bool loop;                      /* a core starts its stream again at its end (and never says done) */
        uint64_t batch_ns;              /* paced cores wake on this grid, writing every record due by then */
        bool noperfmon;
        bool eacces[SIM_MAX_CPUS];
        uint64_t ebusy_left[SIM_MAX_CPUS];
        uint64_t mmap_limit;            /* 0: none */
        int mmap_errno;
        unsigned attr_size;             /* the kernel's sizeof(struct perf_event_attr) */
        unsigned pmsver;                /* 1: SPEv1 (IMP), 2: SPEv1p1 */
        uint64_t align, max_record;     /* PMBIDR_EL1.Align, PMSIDR_EL1.MaxSize as bytes */
        uint64_t time_zero;
        uint32_t time_mult;
        uint16_t time_shift;
        uint64_t time_cycles, time_mask; /* sched_clock's epoch_cyc and sched_clock_mask (clock_page()) */
        bool time_short, time_zero_cap; /* cap_user_time_short (5.12+), cap_user_time_zero (arch timer) */
        struct fault_list collision, partial, split, lost, lost_samples, throttle;
        struct fault_list buf_fault;    /* fault=CPU:IDX:s1|s2: b = the translation stage */
        struct fault_list storm;        /* sideband_storm=CPU:IDX:N (sideband_storm()) */
        /* Tasks and mappings the kernel reports at an event's first start (attr.comm, attr.mmap2). */
        struct sim_task {
                uint32_t pid, tid;
                uint64_t start, len, pgoff;     /* mmap2 */
                char name[PATH_MAX];            /* comm, or the mapped file */
        } comms[SIM_MAX_TASKS], mmaps[SIM_MAX_TASKS];
        size_t n_comms, n_mmaps;
} S;

/* ---- per CPU, per event ---------------------------------------------------- */

struct rec {
        uint64_t off, size, ts;
        uint32_t pid, tid;
};

struct sim_event;

struct sim_cpu {
        unsigned cpu;
        bool loaded, started;
        uint8_t *bin;
        size_t bin_size;
        struct rec *rec;
        size_t n_rec;
        pthread_t thread;
        pthread_cond_t cond;
        struct sim_event *ev;           /* the open SPE event (exclusive PMU: at most one) */
        uint32_t cur_pid, cur_tid;      /* the task running (for sample_id, switches) */
        uint64_t now;                   /* perf time of the last record */
        uint64_t written, dropped;
        uint64_t throttle_left;
        bool unthrottle_pending;
        uint64_t period;                /* the open event's sample_period (atomic: the producer paces by it) */
        FILE *dropped_f;
        bool offline;
};

struct user_map {
        void *addr;
        size_t len;
        bool aux;
};

struct sim_event {
        int fd;
        unsigned cpu;
        uint64_t id;
        uint8_t attr_raw[ATTR_SIZE_VER8];
        struct perf_event_attr attr;
        int memfd;
        size_t page;
        /*
         * The rings as the producer writes them: through the reader's first
         * mapping while it exists (so that ThreadSanitizer sees both sides of
         * each release/acquire pair at one address), else through its own.
         */
        struct perf_event_mmap_page *up, *up_own;
        uint8_t *aux_own;
        uint8_t *data;
        size_t data_size;               /* 0 until mapped */
        size_t data_len;                /* bytes of the first mapping (user page + ring) */
        uint8_t *aux;
        size_t aux_size;                /* 0 until mapped */
        uint64_t aux_pgoff;
        struct user_map maps[8];
        size_t n_maps;
        /* ring_buffer.c state */
        uint64_t data_head, data_wakeup, data_watermark, data_lost;
        uint64_t rb_aux_head, aux_wakeup, aux_watermark;
        /* perf_output_handle of the AUX session */
        bool hw_active;
        uint64_t h_head, h_size, h_wakeup, h_flags;
        uint64_t hw_pos, limit_pos;
        /* event state */
        bool on;                        /* enabled (not OFF) */
        bool dead;                      /* its CPU went offline: never scheduled again */
        uint64_t enabled_ns, on_since_ns; /* total_time_enabled: on and not dead (perf_event_update_time()) */
        bool itrace_done;
        bool faulted;                   /* stopped by a fatal buffer fault, still on (buffer_fault()) */
        uint64_t n_aux_records;
        size_t *pending;                /* records written since the last commit */
        size_t n_pending, cap_pending;
};

/*
 * All simulated state. Recursive: a libc call made while it is held (stdio
 * in the producer) may come back through an interposed entry point.
 */
static pthread_mutex_t G = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct sim_cpu CPU[SIM_MAX_CPUS];
static struct sim_event *FD[SIM_MAX_FD];
static struct sim_event *EVS[SIM_MAX_CPUS];     /* the open ones: at most one per CPU */
static size_t n_evs;
static uint64_t next_id = 1;
static int log_fd = -1;

/*
 * Epoll registrations of our fds: perf_poll() reports EPOLLIN once per
 * wakeup. Under their own lock, not G: the kernel's poll takes no lock the
 * hardware's writes take, and a daemon's epoll_wait() must not queue behind
 * hundreds of cores writing records. Lock order: G, then EPL.
 */
static pthread_mutex_t EPL = PTHREAD_MUTEX_INITIALIZER;
/*
 * Paced cores queue here for G, one at a time: the daemon's calls (read,
 * ioctl) contend with one core, not hundreds. Hardware writing SPE records
 * does not delay a system call; with 384 cores on G the collector's reads
 * waited seconds behind records. Lock order: PL, then G.
 */
static pthread_mutex_t PL = PTHREAD_MUTEX_INITIALIZER;
static struct {
        int epfd;
        uint64_t data;
        int fd;
} EP[2 * SIM_MAX_CPUS];
static size_t n_ep;

SIM_FAST static struct sim_event *ev_of(int fd) {
        if (fd < 0 || fd >= SIM_MAX_FD)
                return NULL;
        return __atomic_load_n(&FD[fd], __ATOMIC_ACQUIRE);
}

__attribute__((format(printf, 1, 2))) static void sim_log(const char *fmt, ...) {
        char buf[512];
        va_list ap;
        int n;

        if (log_fd < 0)
                return;
        va_start(ap, fmt);
        n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        n = SIM_MIN(n, (int) sizeof(buf) - 2);
        buf[n++] = '\n';
        /* One write per line, O_APPEND: lines of several threads do not mix. */
        if (write(log_fd, buf, (size_t) n) < 0)
                return;
}

static const char *errno_name(int e) {
        switch (e) {
        case EACCES: return "EACCES";
        case EPERM: return "EPERM";
        case EBUSY: return "EBUSY";
        case ENODEV: return "ENODEV";
        case ENOENT: return "ENOENT";
        case EINVAL: return "EINVAL";
        case E2BIG: return "E2BIG";
        case ENOMEM: return "ENOMEM";
        case EOPNOTSUPP: return "EOPNOTSUPP";
        default: return "E?";
        }
}

static int parse_cpulist(const char *s, bool *set, unsigned *ret_max) {
        unsigned max = 0;

        memset(set, 0, sizeof(bool) * SIM_MAX_CPUS);
        while (*s && *s != '\n') {
                char *end;
                unsigned long a = strtoul(s, &end, 10), b = a;

                if (end == s)
                        return -EINVAL;
                if (*end == '-') {
                        s = end + 1;
                        b = strtoul(s, &end, 10);
                        if (end == s)
                                return -EINVAL;
                }
                if (a > b || b >= SIM_MAX_CPUS)
                        return -EINVAL;
                for (unsigned long c = a; c <= b; c++)
                        set[c] = true;
                max = (unsigned) (b + 1 > max ? b + 1 : max);
                s = end;
                if (*s == ',')
                        s++;
        }
        if (ret_max)
                *ret_max = max;
        return 0;
}

/* "CPU:A" or "CPU:A:B" */
static void add_fault(struct fault_list *l, const char *v) {
        struct fault f = {};
        char *end;

        if (l->n >= SIM_MAX_FAULTS)
                return;
        f.cpu = (unsigned) strtoul(v, &end, 10);
        if (*end == ':')
                f.a = strtoull(end + 1, &end, 10);
        if (*end == ':')
                f.b = strtoull(end + 1, &end, 10);
        if (f.cpu < SIM_MAX_CPUS)
                l->f[l->n++] = f;
}

static const struct fault *find_fault(const struct fault_list *l, unsigned cpu, uint64_t a) {
        for (size_t i = 0; i < l->n; i++)
                if (l->f[i].cpu == cpu && l->f[i].a == a)
                        return &l->f[i];
        return NULL;
}

static bool ctx_key(const char *k, const char *v);
static void ctx_apply(void);
static void ctx_load_cpu(struct sim_cpu *c);
/*
 * "CPU:IDX:s1" or "CPU:IDX:s2": a stage 1 or stage 2 data abort on the
 * profiling buffer's write of record IDX (PMBSR_EL1.EC = FAULT_S1, FAULT_S2).
 * Anything else is not a fault the driver knows this way: logged, ignored.
 */
static void add_buf_fault(const char *v) {
        struct fault_list l = {};
        const char *st = strrchr(v, ':');

        if (!st || (strcmp(st, ":s1") && strcmp(st, ":s2"))) {
                sim_log("scenario: fault=%s: want CPU:IDX:s1|s2", v);
                return;
        }
        add_fault(&l, v);
        if (l.n == 0 || S.buf_fault.n >= SIM_MAX_FAULTS)
                return;
        l.f[0].b = st[2] == '1' ? 1 : 2;
        S.buf_fault.f[S.buf_fault.n++] = l.f[0];
}

static void load_scenario(void) {
        const char *dir = getenv("ARMPROFD_SIMPMU_DIR"), *root = getenv("ARMPROFD_SYSFS_ROOT");
        char path[PATH_MAX + 32], line[512];
        FILE *f;

        if (S.loaded)
                return;
        S.loaded = true;
        /* Each core knows its number before any thread runs on it (its producer reads it unlocked). */
        for (unsigned cpu = 0; cpu < SIM_MAX_CPUS; cpu++)
                CPU[cpu].cpu = cpu;
        /* Defaults: an N1 (PMSIDR_EL1.MaxSize 64 bytes), a 25 MHz generic timer. */
        S.type = S.type2 = UINT32_MAX;
        S.mmap_errno = EPERM;
        S.attr_size = ATTR_SIZE_VER8;
        S.pmsver = 2;
        S.align = 1;
        S.max_record = 64;
        S.time_zero = UINT64_C(1000000000);
        S.time_shift = 24;
        S.time_mult = 40U << 24;        /* 40 ns per tick */
        S.time_mask = (UINT64_C(1) << 56) - 1;
        S.time_short = S.time_zero_cap = true;
        S.nr_cpu_ids = SIM_MAX_CPUS;
        if (!dir)
                return;
        snprintf(S.dir, sizeof(S.dir), "%s", dir);
        snprintf(S.online_path, sizeof(S.online_path), "%s/devices/system/cpu/online", root ? root : "/sys");
        snprintf(path, sizeof(path), "%s/sim.log", dir);
        log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        snprintf(path, sizeof(path), "%s/scenario", dir);
        f = fopen(path, "re");
        if (!f) {
                sim_log("scenario: cannot open %s: %s", path, strerror(errno));
                return;
        }
        while (fgets(line, sizeof(line), f)) {
                char *k = line, *v, *nl;

                while (*k == ' ' || *k == '\t')
                        k++;
                if (*k == '#' || *k == '\n' || !*k)
                        continue;
                nl = strchr(k, '\n');
                if (nl)
                        *nl = 0;
                v = strchr(k, '=');
                if (!v)
                        continue;
                *v++ = 0;
                if (ctx_key(k, v))
                        continue;
                if (!strcmp(k, "type"))
                        S.type = (uint32_t) strtoul(v, NULL, 10);
                else if (!strcmp(k, "cpus"))
                        (void) parse_cpulist(v, S.cpus, NULL);
                else if (!strcmp(k, "type2"))
                        S.type2 = (uint32_t) strtoul(v, NULL, 10);
                else if (!strcmp(k, "cpus2"))
                        (void) parse_cpulist(v, S.cpus2, NULL);
                else if (!strcmp(k, "rate"))
                        S.rate = strtod(v, NULL);
                else if (!strcmp(k, "rate_spread"))
                        S.rate_spread = strtod(v, NULL);
                else if (!strcmp(k, "open_delay_ms"))
                        S.open_delay_ns = strtoull(v, NULL, 10) * 1000000ULL;
                else if (!strcmp(k, "ops_per_sec"))
                        S.ops_per_sec = strtod(v, NULL);
                else if (!strcmp(k, "loop"))
                        S.loop = atoi(v) != 0;
                else if (!strcmp(k, "batch_ms"))
                        S.batch_ns = strtoull(v, NULL, 10) * 1000000ULL;
                else if (!strcmp(k, "noperfmon"))
                        S.noperfmon = atoi(v) != 0;
                else if (!strcmp(k, "eacces_cpus"))
                        (void) parse_cpulist(v, S.eacces, NULL);
                else if (!strcmp(k, "ebusy")) {
                        struct fault_list l = {};

                        add_fault(&l, v);
                        if (l.n)
                                S.ebusy_left[l.f[0].cpu] = l.f[0].a;
                } else if (!strcmp(k, "mmap_limit"))
                        S.mmap_limit = strtoull(v, NULL, 0);
                else if (!strcmp(k, "mmap_errno"))
                        S.mmap_errno = !strcmp(v, "ENOMEM") ? ENOMEM : EPERM;
                else if (!strcmp(k, "attr_size"))
                        S.attr_size = (unsigned) strtoul(v, NULL, 0);
                else if (!strcmp(k, "pmsver"))
                        S.pmsver = (unsigned) strtoul(v, NULL, 0);
                else if (!strcmp(k, "align"))
                        S.align = strtoull(v, NULL, 0);
                else if (!strcmp(k, "max_record"))
                        S.max_record = strtoull(v, NULL, 0);
                else if (!strcmp(k, "time_zero"))
                        S.time_zero = strtoull(v, NULL, 0);
                else if (!strcmp(k, "time_mult"))
                        S.time_mult = (uint32_t) strtoul(v, NULL, 0);
                else if (!strcmp(k, "time_shift"))
                        S.time_shift = (uint16_t) strtoul(v, NULL, 0);
                else if (!strcmp(k, "time_cycles"))
                        S.time_cycles = strtoull(v, NULL, 0);
                else if (!strcmp(k, "time_mask"))
                        S.time_mask = strtoull(v, NULL, 0);
                else if (!strcmp(k, "time_short"))
                        S.time_short = atoi(v) != 0;
                else if (!strcmp(k, "time_zero_cap"))
                        S.time_zero_cap = atoi(v) != 0;
                else if (!strcmp(k, "collision"))
                        add_fault(&S.collision, v);
                else if (!strcmp(k, "partial"))
                        add_fault(&S.partial, v);
                else if (!strcmp(k, "split"))
                        add_fault(&S.split, v);
                else if (!strcmp(k, "lost"))
                        add_fault(&S.lost, v);
                else if (!strcmp(k, "lost_samples"))
                        add_fault(&S.lost_samples, v);
                else if (!strcmp(k, "throttle"))
                        add_fault(&S.throttle, v);
                else if (!strcmp(k, "fault"))
                        add_buf_fault(v);
                else if (!strcmp(k, "sideband_storm"))
                        add_fault(&S.storm, v);
                else if (!strcmp(k, "comm") && S.n_comms < SIM_MAX_TASKS) {
                        struct sim_task *t = &S.comms[S.n_comms];
                        int at = 0;

                        /* PID:TID:NAME */
                        if (sscanf(v, "%" SCNu32 ":%" SCNu32 ":%n", &t->pid, &t->tid, &at) == 2 && at > 0) {
                                snprintf(t->name, sizeof(t->name), "%s", v + at);
                                S.n_comms++;
                        }
                } else if (!strcmp(k, "mmap2") && S.n_mmaps < SIM_MAX_TASKS) {
                        struct sim_task *t = &S.mmaps[S.n_mmaps];
                        unsigned long long start, len, pgoff;
                        int at = 0;

                        /* PID:TID:START:LEN:PGOFF:PATH, numbers in C notation (0x...) */
                        if (sscanf(v, "%" SCNu32 ":%" SCNu32 ":%lli:%lli:%lli:%n", &t->pid, &t->tid,
                                   (long long *) &start, (long long *) &len, (long long *) &pgoff, &at) == 5 && at > 0) {
                                t->start = start;
                                t->len = len;
                                t->pgoff = pgoff;
                                snprintf(t->name, sizeof(t->name), "%s", v + at);
                                S.n_mmaps++;
                        }
                }
                else
                        sim_log("scenario: unknown key %s", k);
        }
        fclose(f);
        ctx_apply();
        if (S.align == 0 || (S.align & (S.align - 1)))
                S.align = 1;
        if (root) {
                bool possible[SIM_MAX_CPUS];
                unsigned n;

                snprintf(path, sizeof(path), "%s/devices/system/cpu/possible", root);
                f = fopen(path, "re");
                if (f) {
                        if (fgets(line, sizeof(line), f) && parse_cpulist(line, possible, &n) == 0 && n > 0)
                                S.nr_cpu_ids = n;
                        fclose(f);
                }
        }
        sim_log("scenario type=%" PRIu32 " type2=%" PRId64 " rate=%g rate_spread=%g", S.type,
                S.type2 == UINT32_MAX ? INT64_C(-1) : (int64_t) S.type2, S.rate, S.rate_spread);
}

/*
 * A stream file mapped read-only: the simulation's data shows in the
 * process's smaps under the file's name, apart from the daemon's own memory
 * (tests/bench/fleet.py counts it out).
 */
static int map_file(const char *path, uint8_t **ret, size_t *ret_size) {
        struct stat st;
        void *b;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || st.st_size == 0) {
                real_close(fd);
                return -EINVAL;
        }
        b = real_mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        real_close(fd);
        if (b == MAP_FAILED)
                return -ENOMEM;
        *ret = b;
        *ret_size = (size_t) st.st_size;
        return 0;
}

/* n records' index in a memfd named apart from the rings' ("armprofd-simpmu-stream" in smaps). */
static struct rec *rec_alloc(size_t n) {
        int fd = (int) real_syscall(SYS_memfd_create, "armprofd-simpmu-stream", MFD_CLOEXEC);
        void *p;

        if (fd < 0)
                return NULL;
        if (ftruncate(fd, (off_t) (n * sizeof(struct rec))) < 0) {
                real_close(fd);
                return NULL;
        }
        p = real_mmap(NULL, n * sizeof(struct rec), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        real_close(fd);
        return p == MAP_FAILED ? NULL : p;
}

/* cpuN.bin and cpuN.idx ("offset size timestamp pid tid" per line). */
static void load_cpu(struct sim_cpu *c) {
        char path[PATH_MAX + 32], line[256];
        FILE *f;
        size_t cap = 0;

        if (c->loaded)
                return;
        c->loaded = true;
        pthread_cond_init(&c->cond, NULL);
        snprintf(path, sizeof(path), "%s/cpu%u.bin", S.dir, c->cpu);
        if (map_file(path, &c->bin, &c->bin_size) < 0)
                return;
        snprintf(path, sizeof(path), "%s/cpu%u.idx", S.dir, c->cpu);
        f = fopen(path, "re");
        if (!f)
                return;
        /* Lines first: the index is sized once. */
        while (fgets(line, sizeof(line), f))
                cap++;
        c->rec = cap ? rec_alloc(cap) : NULL;
        rewind(f);
        while (c->rec && c->n_rec < cap && fgets(line, sizeof(line), f)) {
                struct rec r;
                unsigned long long off, size, ts;
                unsigned pid, tid;

                if (sscanf(line, "%llu %llu %llu %u %u", &off, &size, &ts, &pid, &tid) != 5)
                        continue;
                r = (struct rec) { .off = off, .size = size, .ts = ts, .pid = pid, .tid = tid };
                if (r.off + r.size > c->bin_size || r.size == 0)
                        continue;
                c->rec[c->n_rec++] = r;
        }
        fclose(f);
        if (c->n_rec) {
                c->cur_pid = c->rec[0].pid;
                c->cur_tid = c->rec[0].tid;
        }
        snprintf(path, sizeof(path), "%s/cpu%u.dropped", S.dir, c->cpu);
        c->dropped_f = fopen(path, "we");
        ctx_load_cpu(c);
}

/* ---- time: the kernel's clock and the user page's conversion ------------------ */

/* mul_u64_u32_shr() of include/linux/math64.h: (a * mul) >> shift without losing the high bits. */
static uint64_t mul_shr(uint64_t a, uint32_t mul, unsigned shift) {
        return (uint64_t) (((unsigned __int128) a * mul) >> shift);
}

/*
 * The kernel's perf time of a generic-timer value (a Timestamp packet): arm64's
 * sched_clock() is the arch timer's (kernel/time/sched_clock.c sched_clock():
 * epoch_ns + cyc_to_ns((cyc - epoch_cyc) & sched_clock_mask, mult, shift)),
 * with the unclamped mult and shift. The user page's time_zero is epoch_ns less
 * mul_u64_u32_shr(epoch_cyc, mult, shift) (arch_perf_update_userpage()), so the
 * scenario's time_zero and time_cycles give epoch_ns. With the defaults
 * (time_cycles 0, a 56-bit mask) this is time_zero + cyc * mult >> shift, what
 * perf's tsc_to_perf_time() (tools/perf/util/tsc.c) computes from the page.
 */
static uint64_t perf_time(uint64_t cyc) {
        uint64_t epoch_ns = S.time_zero + mul_shr(S.time_cycles, S.time_mult, S.time_shift);

        return epoch_ns + mul_shr((cyc - S.time_cycles) & S.time_mask, S.time_mult, S.time_shift);
}

/*
 * The user page's clock as arm64 writes it: arch_perf_update_userpage()
 * (drivers/perf/arm_pmuv3.c today, arch/arm64/kernel/perf_event.c before the
 * driver moved; read at torvalds/linux 009d6dc8). Every cap_user_time* bit is
 * cleared first; when sched_clock is not the arch timer (rd->read_sched_clock
 * != arch_timer_read_counter: time_zero_cap=0) it returns there, the caps
 * clear and no time field written. Else time_mult, time_shift, time_zero =
 * epoch_ns - mul_u64_u32_shr(epoch_cyc, mult, shift), time_cycles =
 * epoch_cyc, time_mask = sched_clock_mask; a shift of 32 is clamped to 31 with
 * mult halved ("the original published conversion algorithm shifting a
 * 32-bit value"); then cap_user_time, _zero and _short are set. Kernels
 * before "arm64: perf: Implement correct cap_user_time" (Linux 5.12;
 * time_short=0) wrote time_zero the same way but neither time_cycles nor
 * time_mask, and set no cap_user_time_short: a reader converts as if the
 * counter never wrapped.
 */
static void clock_page(struct perf_event_mmap_page *up) {
        up->cap_user_time = up->cap_user_time_zero = up->cap_user_time_short = 0;
        if (!S.time_zero_cap)
                return;
        up->time_mult = S.time_mult;
        up->time_shift = S.time_shift;
        up->time_zero = S.time_zero;
        if (S.time_short) {
                up->time_cycles = S.time_cycles;
                up->time_mask = S.time_mask;
        }
        if (up->time_shift == 32) {
                up->time_shift = 31;
                up->time_mult >>= 1;
        }
        up->cap_user_time = up->cap_user_time_zero = 1;
        up->cap_user_time_short = S.time_short;
}

/*
 * page_size=N: the kernel's PAGE_SIZE (64 KiB on RHEL's, Ampere's and
 * Grace's arm64 kernels). The user page, the data ring and the AUX area are
 * in those pages (perf_mmap(): 1 + 2^n pages, aux_offset and aux_size in
 * pages), and the driver rounds its limits to them (__arm_spe_pmu_next_off():
 * the page below the tail, the page after the wakeup point): a 256 KiB
 * area is four pages. The process sees it where a program asks the page
 * size (sysconf(_SC_PAGESIZE), getpagesize()); the host's 4 KiB mappings
 * of the memfd at 64 KiB offsets are fine. Read from the scenario file at
 * the first question, without stdio or malloc: a program asks before
 * anything else (the daemon's configuration sizes its rings in pages).
 */
/*
 * glibc's own entry points: a sanitizer runtime asks the page size while it
 * starts, before dlsym() may be called (ThreadSanitizer crashes in it), and
 * before the environment is to be trusted; until this library's
 * constructor ran, every question goes to them untouched.
 */
extern long __sysconf(int name);
extern int __getpagesize(void);
static bool page_ready;
static long model_page;                 /* 0: not read (yet), -1: the host's */

__attribute__((constructor)) static void page_init(void) {
        __atomic_store_n(&page_ready, true, __ATOMIC_RELEASE);
}

static long ctx_read_page_size(void) {
        static char buf[16384];
        const char *dir = getenv("ARMPROFD_SIMPMU_DIR");
        char path[PATH_MAX];
        long page = -1;
        ssize_t n = -1;
        int fd;

        REAL(read);
        REAL(close);
        /* No environment yet either (asked from a runtime's start): ask again next time. */
        if (!dir)
                return 0;
        if (snprintf(path, sizeof(path), "%s/scenario", dir) >= (int) sizeof(path))
                return -1;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                n = real_read(fd, buf, sizeof(buf) - 1);
                real_close(fd);
        }
        /* Not readable yet (a sanitizer runtime asking before it is set up): ask again next time. */
        if (n < 0)
                return 0;
        for (char *l = buf; n > 0 && l && l < buf + n; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                buf[n] = 0;
                if (!strncmp(l, "page_size=", 10)) {
                        long v = strtol(l + 10, NULL, 0);

                        /* PAGE_SIZE of arm64: 4, 16 or 64 KiB. */
                        page = v == 4096 || v == 16384 || v == 65536 ? v : -1;
                }
        }
        return page;
}

static long ctx_page_size(void) {
        long p = __atomic_load_n(&model_page, __ATOMIC_ACQUIRE);

        if (p == 0) {
                p = ctx_read_page_size();
                if (p != 0)
                        __atomic_store_n(&model_page, p, __ATOMIC_RELEASE);
        }
        return p;
}

/* The simulated kernel's page: the scenario's, else the host's. */
static size_t sim_page(void) {
        long p = ctx_page_size();

        return p > 0 ? (size_t) p : (size_t) __sysconf(_SC_PAGESIZE);
}

SIM_EXPORT long sysconf(int name) {
        long p = name == _SC_PAGESIZE && __atomic_load_n(&page_ready, __ATOMIC_ACQUIRE) ? ctx_page_size() : -1;

        return p > 0 ? p : __sysconf(name);
}

SIM_EXPORT int getpagesize(void) {
        long p = __atomic_load_n(&page_ready, __ATOMIC_ACQUIRE) ? ctx_page_size() : -1;

        return p > 0 ? (int) p : __getpagesize();
}

/* ---- kernels and cores: cx, itrace_start, kernel=, and who a reader can know ran a record ---- */

/*
 * The kernel versions a fleet runs, as defaults of the keys where they
 * differ (a key given in the scenario wins, whatever its line):
 *  - attr_size: sizeof(struct perf_event_attr), include/uapi/linux/perf_event.h
 *    PERF_ATTR_SIZE_VER6 120 (aux_sample_size, 5.5), VER7 128 (sig_data,
 *    5.13), VER8 136 (config3, 6.3): perf_copy_attr() refuses non-zero bytes
 *    past it with E2BIG;
 *  - itrace_start: all of them write PERF_RECORD_ITRACE_START at each
 *    event_sched_in() (kernel/events/core.c perf_log_itrace_start(): it
 *    returns early only once PERF_ATTACH_ITRACE is set, which
 *    perf_event_itrace_started() does, and the arm_spe driver calls it only
 *    since 87f78017e8c8 "perf: arm_spe: Suppress redundant ITRACE start
 *    records", seen in a 2026 linux-next push, in none of these; its
 *    arm_spe_pmu_start() of mainline as read here does not call it): so at
 *    every ENABLE of an event that was off;
 *  - PA/PCT without CAP_PERFMON (noperfmon): EACCES in all of them
 *    (arm_spe_pmu_event_init(): perfmon_capable() since cea7d0d4a59b, 5.8),
 *    so kernel= leaves noperfmon alone;
 *  - cap_user_time_short: absent before 5.12 (arm64's user page has no
 *    time_cycles, time_mask then: clock_page()), so kernel=5.10 means
 *    time_short=0.
 */
static const struct kernel_profile {
        const char *name;
        unsigned attr_size;
        bool itrace_each;
        bool time_short;
} KERNELS[] = {
        { "5.10", 120, true, false },
        { "5.15", 128, true, true },
        { "6.1", 128, true, true },
        { "6.6", 136, true, true },
        { "6.12", 136, true, true },
};

static struct {
        const struct kernel_profile *kernel;
        bool cx;                        /* CONFIG_PID_IN_CONTEXTIDR: CONTEXT packets (with CAP_PERFMON) */
        int itrace_each;                /* -1: the kernel's (default once, the current driver) */
        bool attr_size_given, time_short_given;
} X = { .cx = true, .itrace_each = -1 };

/*
 * Per CPU, what a reader that follows the data ring (as the kernel wrote it)
 * can know of the task running: known since a switch or ITRACE_START named
 * it and nothing since may have hidden one; `savable`: no data-ring loss
 * since the last switch, so the next switch-out's previous task names the
 * records before it (none is unreported while the event is on).
 */
enum { KN_UNKNOWN, KN_KNOWN, KN_SAVABLE };
/*
 * Why a record is unknown, as a reader that queues the doubts among the
 * switches sees it (collectors/spe/spe-stream.c): every doubt since the last
 * switch written sits at that switch's time, so the last one before the
 * record's PERF_RECORD_AUX (or before the next switch, whichever comes
 * first) is the one it meets last.
 */
enum { KN_WHY_OFF, KN_WHY_LOST, KN_WHY_NO_CLOCK };
static struct {
        bool known, savable;
        uint8_t why;                    /* KN_WHY_* of the last doubt */
        uint64_t last_sw;               /* perf time of the last switch or ITRACE_START written */
        bool chunk_switched;            /* no clock: a switch written since the last PERF_RECORD_AUX */
        uint8_t *kn;                    /* per record index: KN_* when written */
        uint8_t *kn_why;                /* per record index: KN_WHY_* while unknown */
        FILE *unknown_f;
} KN[SIM_MAX_CPUS];

/* Called for every scenario key first: true when it is one of these (consumed). */
static bool ctx_key(const char *k, const char *v) {
        if (!strcmp(k, "attr_size"))
                X.attr_size_given = true;
        if (!strcmp(k, "time_short"))
                X.time_short_given = true;
        if (!strcmp(k, "cx")) {
                X.cx = atoi(v) != 0;
                return true;
        }
        if (!strcmp(k, "page_size"))
                return true;    /* read at the first question (ctx_page_size()) */
        if (!strcmp(k, "itrace_start")) {
                X.itrace_each = !strcmp(v, "each");
                if (strcmp(v, "each") && strcmp(v, "once"))
                        sim_log("scenario: itrace_start=%s is not each or once: once", v);
                return true;
        }
        if (!strcmp(k, "kernel")) {
                X.kernel = NULL;
                for (size_t i = 0; i < sizeof(KERNELS) / sizeof(KERNELS[0]); i++)
                        if (!strcmp(v, KERNELS[i].name))
                                X.kernel = &KERNELS[i];
                if (!X.kernel)
                        sim_log("scenario: kernel=%s unknown (5.10, 5.15, 6.1, 6.6, 6.12): ignored", v);
                return true;
        }
        return false;
}

/* After the scenario: the kernel profile's defaults where no key was given. */
static void ctx_apply(void) {
        if (X.kernel && !X.attr_size_given)
                S.attr_size = X.kernel->attr_size;
        if (X.kernel && !X.time_short_given)
                S.time_short = X.kernel->time_short;
        if (X.itrace_each < 0)
                X.itrace_each = X.kernel ? X.kernel->itrace_each : 0;
        sim_log("scenario kernel=%s attr_size=%u itrace_start=%s cx=%d page_size=%zu time_short=%d",
                X.kernel ? X.kernel->name : "none", S.attr_size, X.itrace_each ? "each" : "once",
                (int) (X.cx && !S.noperfmon), sim_page(), (int) S.time_short);
}

/*
 * PMSCR_EL1.CX: the driver sets it only with CONFIG_PID_IN_CONTEXTIDR and an
 * opener that is perfmon_capable() (drivers/perf/arm_spe_pmu.c,
 * set_spe_event_has_cx() at arm_spe_pmu_event_init(), read by
 * arm_spe_event_to_pmscr()); without it the hardware writes no CONTEXT
 * packet at all.
 */
static bool ctx_cx(void) {
        return X.cx && !S.noperfmon;
}

/*
 * One SPE packet's length at p (n bytes left), 0 if cut: the header's
 * bits [5:4] give the payload as 1 << sz bytes, an extended header (0b001000xx)
 * is two bytes with the size in the second, PAD (0x00) and END (0x01) have
 * none (Arm ARM, "Statistical Profiling Extension" packet headers; tools/perf
 * arm-spe-pkt-decoder.c arm_spe_payload_len() reads them so).
 */
static size_t spe_packet_len(const uint8_t *p, size_t n) {
        size_t len;

        if (n == 0)
                return 0;
        if (p[0] == 0x00 || p[0] == 0x01)
                return 1;
        if ((p[0] & 0xfc) == 0x20)
                len = n < 2 ? SIZE_MAX : 2 + ((size_t) 1 << ((p[1] >> 4) & 3));
        else
                len = 1 + ((size_t) 1 << ((p[0] >> 4) & 3));
        return len <= n ? len : 0;
}

/* The CONTEXT packet header: 0b011001xx, xx the EL (CONTEXTIDR_EL1 or _EL2). */
static bool spe_is_context(uint8_t h) {
        return (h & 0xfc) == 0x64;
}

/*
 * With CX off, the CPU's records as the hardware writes them: without their
 * CONTEXT packets (each record shorter by 5 bytes). A copy; the index's
 * offsets and sizes follow it.
 */
static void ctx_strip(struct sim_cpu *c) {
        uint8_t *out;
        size_t at = 0;

        if (ctx_cx() || !c->n_rec)
                return;
        out = malloc(c->bin_size);
        if (!out)
                abort();
        for (size_t i = 0; i < c->n_rec; i++) {
                struct rec *r = &c->rec[i];
                const uint8_t *p = c->bin + r->off;
                size_t left = (size_t) r->size, start = at;

                while (left > 0) {
                        size_t n = spe_packet_len(p, left);

                        if (n == 0)
                                n = left;       /* not a packet: kept as it is */
                        else if (spe_is_context(p[0])) {
                                p += n;
                                left -= n;
                                continue;
                        }
                        memcpy(out + at, p, n);
                        at += n;
                        p += n;
                        left -= n;
                }
                r->off = start;
                r->size = at - start;
        }
        real_munmap(c->bin, c->bin_size);
        c->bin = out;
        c->bin_size = at;
}

static void ctx_load_cpu(struct sim_cpu *c) {
        char path[PATH_MAX + 32];

        ctx_strip(c);
        if (ctx_cx() || !c->n_rec)
                return;
        KN[c->cpu].kn = calloc(c->n_rec, 1);
        KN[c->cpu].kn_why = calloc(c->n_rec, 1);
        if (!KN[c->cpu].kn || !KN[c->cpu].kn_why)
                abort();
        snprintf(path, sizeof(path), "%s/cpu%u.unknown", S.dir, c->cpu);
        KN[c->cpu].unknown_f = fopen(path, "we");
}

static bool ctx_tracked(const struct sim_event *e) {
        return KN[e->cpu].kn != NULL;
}

/* A doubt: from here a switch may go unreported (the event is off), or may have been lost. */
static void ctx_doubt(const struct sim_event *e, bool lost) {
        if (!ctx_tracked(e))
                return;
        KN[e->cpu].known = false;
        KN[e->cpu].why = lost ? KN_WHY_LOST : KN_WHY_OFF;
        for (size_t i = 0; i < e->n_pending; i++) {
                size_t idx = e->pending[i];
                bool since_sw = perf_time(CPU[e->cpu].rec[idx].ts) >= KN[e->cpu].last_sw;

                /*
                 * A loss: the reader's doubt starts after the last switch it read (it cannot
                 * place the lost records among the SPE ones), the records since are not its
                 * to know, even when a later switch-out names its previous task.
                 */
                if (KN[e->cpu].kn[idx] == KN_SAVABLE || (lost && since_sw))
                        KN[e->cpu].kn[idx] = KN_UNKNOWN;
                /* The reader meets this doubt before the record: it is the last one it met. */
                if (KN[e->cpu].kn[idx] == KN_UNKNOWN && since_sw)
                        KN[e->cpu].kn_why[idx] = KN[e->cpu].why;
        }
        if (lost)
                KN[e->cpu].savable = false;
}

/*
 * PMSCR_EL1.E0SPE and E1SPE: the driver samples EL0 unless exclude_user and
 * the kernel unless exclude_kernel (arm_spe_event_to_pmscr()); the hardware
 * makes no record of an operation at an exception level it does not sample
 * (Arm ARM, PMSCR_EL1; with VHE the kernel runs at EL2 and the same write is
 * PMSCR_EL2.E2SPE's). A record's level is in its PC packet: Address packet
 * index 0, payload bits [62:61] the EL, bit 63 NS (Arm ARM, "Address
 * packet"); a record without one is kept.
 */
static int record_el(const uint8_t *p, size_t n) {
        while (n > 0) {
                size_t len = spe_packet_len(p, n);
                bool ext;
                uint8_t h;
                uint64_t v;

                if (len == 0)
                        return -1;
                ext = (p[0] & 0xfc) == 0x20;
                h = ext ? p[1] : p[0];
                /* Address: 0b10110xxx, index xxx (and the extended header's [1:0] above it). */
                if ((h & 0xf8) == 0xb0 && (h & 7) == 0 && (!ext || (p[0] & 3) == 0) && len == (ext ? 10u : 9u)) {
                        memcpy(&v, p + (ext ? 2 : 1), sizeof(v));
                        return (int) ((v >> 61) & 3);
                }
                p += len;
                n -= len;
        }
        return -1;
}

static bool ctx_el_filtered(const struct sim_event *e, const struct sim_cpu *c, size_t i) {
        int el;

        if (!e->attr.exclude_kernel && !e->attr.exclude_user)
                return false;
        el = record_el(c->bin + c->rec[i].off, (size_t) c->rec[i].size);
        return el == 0 ? e->attr.exclude_user : el > 0 ? e->attr.exclude_kernel : false;
}

/* Record idx goes into the AUX area. */
static void ctx_written(const struct sim_event *e, size_t idx) {
        if (!ctx_tracked(e))
                return;
        KN[e->cpu].kn[idx] = KN[e->cpu].chunk_switched ? KN_UNKNOWN :
                             KN[e->cpu].known          ? KN_KNOWN :
                             KN[e->cpu].savable        ? KN_SAVABLE :
                                                         KN_UNKNOWN;
        KN[e->cpu].kn_why[idx] = KN[e->cpu].chunk_switched ? KN_WHY_NO_CLOCK : KN[e->cpu].why;
}

/* A data-ring record written (time: its sample_id's); lost_first: a PERF_RECORD_LOST went first. */
static void ctx_data_ok(const struct sim_event *e, uint32_t type, uint16_t misc, uint64_t time, bool lost_first) {
        if (!ctx_tracked(e))
                return;
        if (lost_first || type == PERF_RECORD_LOST)
                ctx_doubt(e, true);
        if (type == PERF_RECORD_SWITCH_CPU_WIDE || type == PERF_RECORD_ITRACE_START) {
                /* A switch-out names the task that ran before it: the records since the doubt. */
                if (type == PERF_RECORD_SWITCH_CPU_WIDE && (misc & PERF_RECORD_MISC_SWITCH_OUT))
                        for (size_t i = 0; i < e->n_pending; i++)
                                if (KN[e->cpu].kn[e->pending[i]] == KN_SAVABLE)
                                        KN[e->cpu].kn[e->pending[i]] = KN_KNOWN;
                KN[e->cpu].known = KN[e->cpu].savable = true;
                KN[e->cpu].last_sw = time;
                /*
                 * No time conversion on the user page (time_zero_cap=0, clock_page()): a
                 * reader cannot place this switch among the SPE records, only between two
                 * PERF_RECORD_AUX; every record of the chunk it falls in (written before it
                 * or after, until the chunk's commit) may be either task's.
                 */
                if (!S.time_zero_cap) {
                        KN[e->cpu].chunk_switched = true;
                        for (size_t i = 0; i < e->n_pending; i++) {
                                KN[e->cpu].kn[e->pending[i]] = KN_UNKNOWN;
                                KN[e->cpu].kn_why[e->pending[i]] = KN_WHY_NO_CLOCK;
                        }
                }
        }
}

/*
 * The records of a committed chunk: those no reader could attribute, to
 * cpuN.unknown with the doubt it met last ("IDX off" or "IDX lost"). Called
 * for a delivered PERF_RECORD_AUX and for a chunk whose PERF_RECORD_AUX the
 * data ring lost (its bytes stay in the area before the next aux_head, and a
 * reader reads them: collectors/perf/aux-ring.c); such a chunk's records met
 * the loss's doubt (its PERF_RECORD_LOST comes before the next record that
 * fits, perf_output_begin()) if they came after the last switch written.
 */
static void ctx_committed(const struct sim_event *e) {
        if (!ctx_tracked(e) || !KN[e->cpu].unknown_f)
                return;
        KN[e->cpu].chunk_switched = false;
        for (size_t i = 0; i < e->n_pending; i++)
                if (KN[e->cpu].kn[e->pending[i]] != KN_KNOWN)
                        fprintf(KN[e->cpu].unknown_f, "%zu %s\n", e->pending[i],
                                KN[e->cpu].kn_why[e->pending[i]] == KN_WHY_LOST     ? "lost" :
                                KN[e->cpu].kn_why[e->pending[i]] == KN_WHY_NO_CLOCK ? "no_clock" :
                                                                                      "off");
        fflush(KN[e->cpu].unknown_f);
}

/* ---- the data ring: kernel/events/ring_buffer.c ---------------------------------- */

static void signal_event(struct sim_event *e) {
        uint64_t one = 1;

        /* perf_output_wakeup() -> perf_poll() reports EPOLLIN. */
        if (write(e->fd, &one, sizeof(one)) < 0)
                return;
}

/* The sample_id trailer (perf_event__output_id_sample(), __perf_event_header__init_id()). */
static size_t id_size(const struct sim_event *e) {
        uint64_t t = e->attr.sample_type;
        size_t n = 0;

        if (!e->attr.sample_id_all)
                return 0;
        n += (t & PERF_SAMPLE_TID) ? 8 : 0;
        n += (t & PERF_SAMPLE_TIME) ? 8 : 0;
        n += (t & PERF_SAMPLE_ID) ? 8 : 0;
        n += (t & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
        n += (t & PERF_SAMPLE_CPU) ? 8 : 0;
        n += (t & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
        return n;
}

static size_t put_id(const struct sim_event *e, uint8_t *p, uint32_t pid, uint32_t tid, uint64_t time) {
        uint64_t t = e->attr.sample_type;
        size_t n = 0;

        if (!e->attr.sample_id_all)
                return 0;
        if (t & PERF_SAMPLE_TID) {
                memcpy(p + n, &pid, 4);
                memcpy(p + n + 4, &tid, 4);
                n += 8;
        }
        if (t & PERF_SAMPLE_TIME) {
                memcpy(p + n, &time, 8);
                n += 8;
        }
        if (t & PERF_SAMPLE_ID) {
                memcpy(p + n, &e->id, 8);
                n += 8;
        }
        if (t & PERF_SAMPLE_STREAM_ID) {
                memcpy(p + n, &e->id, 8);
                n += 8;
        }
        if (t & PERF_SAMPLE_CPU) {
                uint32_t cpu = e->cpu, res = 0;

                memcpy(p + n, &cpu, 4);
                memcpy(p + n + 4, &res, 4);
                n += 8;
        }
        if (t & PERF_SAMPLE_IDENTIFIER) {
                memcpy(p + n, &e->id, 8);
                n += 8;
        }
        return n;
}

static void ring_put(struct sim_event *e, uint64_t pos, const void *src, size_t n) {
        size_t off = (size_t) (pos & (e->data_size - 1)), first = SIM_MIN(n, e->data_size - off);

        memcpy(e->data + off, src, first);
        memcpy(e->data, (const uint8_t *) src + first, n - first);
}

/* CIRC_SPACE(head, tail, size) of include/linux/circ_buf.h: one byte always stays free. */
static uint64_t circ_space(uint64_t head, uint64_t tail, uint64_t size) {
        return (tail - (head + 1)) & (size - 1);
}

/*
 * perf_output_begin() + copy + perf_output_end(): rec is a whole record
 * without its sample_id, which is appended here. No room: counted, and a
 * PERF_RECORD_LOST goes before the next record that fits.
 */
static bool data_output(struct sim_event *e, uint8_t *rec, size_t len, uint64_t time) {
        uint8_t lost[8 + 16 + 6 * 8], buf[SIM_RECORD_MAX];
        size_t n_id = id_size(e), lost_len = 0, total;
        uint64_t tail;
        struct perf_event_header h;

        if (!e->data_size || len + n_id > sizeof(buf)) {
                e->data_lost++;
                ctx_doubt(e, true);
                return false;
        }
        memcpy(buf, rec, len);
        len += put_id(e, buf + len, CPU[e->cpu].cur_pid, CPU[e->cpu].cur_tid, time);
        memcpy(&h, buf, sizeof(h));
        h.size = (uint16_t) len;
        memcpy(buf, &h, sizeof(h));

        if (e->data_lost) {
                struct perf_event_header lh = { .type = PERF_RECORD_LOST, .misc = 0 };

                lost_len = sizeof(lh) + 16;
                lost_len += put_id(e, lost + lost_len, CPU[e->cpu].cur_pid, CPU[e->cpu].cur_tid, time);
                lh.size = (uint16_t) lost_len;
                memcpy(lost, &lh, sizeof(lh));
                memcpy(lost + sizeof(lh), &e->id, 8);
                memcpy(lost + sizeof(lh) + 8, &e->data_lost, 8);
        }
        total = lost_len + len;
        /* The reader's data_tail: acquire pairs with its release once it is done with the bytes. */
        tail = __atomic_load_n(&e->up->data_tail, __ATOMIC_ACQUIRE);
        if (circ_space(e->data_head, tail, e->data_size) < total) {
                e->data_lost++;
                ctx_doubt(e, true);
                return false;
        }
        if (lost_len) {
                sim_log("cpu=%u data_lost n=%" PRIu64, e->cpu, e->data_lost);
                ring_put(e, e->data_head, lost, lost_len);
                e->data_head += lost_len;
                e->data_lost = 0;
        }
        ring_put(e, e->data_head, buf, len);
        e->data_head += len;
        /* The bytes, then data_head (perf_output_put_handle(): smp_wmb(), WRITE_ONCE()). */
        __atomic_store_n(&e->up->data_head, e->data_head, __ATOMIC_RELEASE);
        if (e->data_head - e->data_wakeup > e->data_watermark) {
                e->data_wakeup += e->data_watermark;
                signal_event(e);
        }
        ctx_data_ok(e, h.type, h.misc, time, lost_len != 0);
        return true;
}

/* ---- records the kernel writes for the event ----------------------------------- */

static bool emit_aux(struct sim_event *e, uint64_t off, uint64_t size, uint64_t flags) {
        uint8_t r[8 + 24];
        struct perf_event_header h = { .type = PERF_RECORD_AUX };

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &off, 8);
        memcpy(r + 16, &size, 8);
        memcpy(r + 24, &flags, 8);
        return data_output(e, r, sizeof(r), CPU[e->cpu].now);
}

static bool emit_lost(struct sim_event *e, uint64_t n) {
        uint8_t r[8 + 16];
        struct perf_event_header h = { .type = PERF_RECORD_LOST };

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &e->id, 8);
        memcpy(r + 16, &n, 8);
        return data_output(e, r, sizeof(r), CPU[e->cpu].now);
}

static void emit_lost_samples(struct sim_event *e, uint64_t n) {
        uint8_t r[8 + 8];
        struct perf_event_header h = { .type = PERF_RECORD_LOST_SAMPLES };

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &n, 8);
        data_output(e, r, sizeof(r), CPU[e->cpu].now);
}

/* perf_log_throttle(): {time, id, stream_id} */
static void emit_throttle(struct sim_event *e, bool enable) {
        uint8_t r[8 + 24];
        struct perf_event_header h = { .type = enable ? PERF_RECORD_UNTHROTTLE : PERF_RECORD_THROTTLE };
        uint64_t t = CPU[e->cpu].now;

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &t, 8);
        memcpy(r + 16, &e->id, 8);
        memcpy(r + 24, &e->id, 8);
        data_output(e, r, sizeof(r), t);
}

static void emit_itrace_start(struct sim_event *e) {
        uint8_t r[8 + 8];
        struct perf_event_header h = { .type = PERF_RECORD_ITRACE_START };
        struct sim_cpu *c = &CPU[e->cpu];

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &c->cur_pid, 4);
        memcpy(r + 12, &c->cur_tid, 4);
        data_output(e, r, sizeof(r), c->now);
}

/*
 * perf_event_switch_output(): the switch-out record carries the next task
 * and the previous one's sample_id, the switch-in record the previous task
 * and the next one's sample_id.
 */
static void emit_switch(struct sim_event *e, uint32_t ppid, uint32_t ptid, uint32_t npid, uint32_t ntid,
                        uint64_t t_out, uint64_t t_in) {
        struct sim_cpu *c = &CPU[e->cpu];
        uint8_t r[8 + 8];
        struct perf_event_header h = {
                .type = PERF_RECORD_SWITCH_CPU_WIDE,
                /* The threads are preempted, not blocked: SWITCH_OUT_PREEMPT too. */
                .misc = PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
        };

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &npid, 4);
        memcpy(r + 12, &ntid, 4);
        c->cur_pid = ppid;
        c->cur_tid = ptid;
        data_output(e, r, sizeof(r), t_out);

        h.misc = 0;
        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &ppid, 4);
        memcpy(r + 12, &ptid, 4);
        c->cur_pid = npid;
        c->cur_tid = ntid;
        data_output(e, r, sizeof(r), t_in);
}

/* ---- the AUX area: ring_buffer.c perf_aux_output_*() and the driver ------------- */

static void drop(struct sim_cpu *c, size_t idx, const char *why) {
        c->dropped++;
        if (c->dropped_f) {
                fprintf(c->dropped_f, "%zu %s\n", idx, why);
                /* Batched cores flush before each sleep, outside the lock (flush_dropped()). */
                if (!S.batch_ns)
                        fflush(c->dropped_f);
        }
}

/*
 * What a batched core dropped since its last wakeup, to the file. G not
 * held: stdio locks the FILE itself, and an empty buffer costs no write.
 */
static void flush_dropped(struct sim_cpu *c) {
        if (c->dropped_f)
                fflush(c->dropped_f);
}

static void pending_add(struct sim_event *e, size_t idx) {
        if (e->n_pending == e->cap_pending) {
                size_t cap = e->cap_pending ? e->cap_pending * 2 : 256;
                size_t *n = realloc(e->pending, cap * sizeof(*n));

                if (!n)
                        abort();
                e->pending = n;
                e->cap_pending = cap;
        }
        e->pending[e->n_pending++] = idx;
        ctx_written(e, idx);
}

/* rb_need_aux_wakeup() */
static bool need_aux_wakeup(struct sim_event *e) {
        if (e->rb_aux_head - e->aux_wakeup >= e->aux_watermark) {
                e->aux_wakeup = e->rb_aux_head - e->rb_aux_head % e->aux_watermark;
                return true;
        }
        return false;
}

static uint64_t mono_ns(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000000000 + (uint64_t) t.tv_nsec;
}

/* The event's state changes; its enabled time runs while it is on and not dead. */
static void set_on(struct sim_event *e, bool on) {
        uint64_t now = mono_ns();

        if (e->on && !e->dead)
                e->enabled_ns += now - e->on_since_ns;
        e->on = on;
        e->on_since_ns = now;
        /* perf_iterate_ctx() skips an event that is off: the switches from now on go unreported. */
        if (!on)
                ctx_doubt(e, false);
}

/* perf_aux_output_end(): commit size bytes from handle->head. */
static void aux_output_end(struct sim_event *e, uint64_t size) {
        struct sim_cpu *c = &CPU[e->cpu];
        uint64_t aux_head = e->rb_aux_head, flags = e->h_flags;
        bool wakeup = flags & PERF_AUX_FLAG_TRUNCATED;

        e->rb_aux_head += size;
        /* "Only send RECORD_AUX if we have something useful to communicate" */
        if (size || flags) {
                const struct fault *f;

                e->n_aux_records++;
                if (find_fault(&S.collision, e->cpu, e->n_aux_records))
                        flags |= PERF_AUX_FLAG_COLLISION;
                f = find_fault(&S.lost, e->cpu, e->n_aux_records);
                if (f) {
                        /* The record has no room in the data ring: the reader sees a gap. */
                        bool written = emit_lost(e, f->b);

                        /* No room for it either: its count joins the next kernel LOST. */
                        if (!written)
                                e->data_lost += f->b - 1;
                        for (size_t i = 0; i < e->n_pending; i++)
                                drop(c, e->pending[i], "lost");
                        c->written -= e->n_pending;
                        sim_log("cpu=%u lost aux=%" PRIu64 " offset=%" PRIu64 " size=%" PRIu64 " records=%zu n=%" PRIu64
                                " written=%d", e->cpu, e->n_aux_records, aux_head, size, e->n_pending, f->b, (int) written);
                        ctx_committed(e);
                } else if (!emit_aux(e, aux_head, size, flags)) {
                        /* No room in the data ring: a PERF_RECORD_LOST later, the chunk is a gap. */
                        for (size_t i = 0; i < e->n_pending; i++)
                                drop(c, e->pending[i], "datalost");
                        c->written -= e->n_pending;
                        sim_log("cpu=%u datalost aux=%" PRIu64 " offset=%" PRIu64 " size=%" PRIu64 " records=%zu",
                                e->cpu, e->n_aux_records, aux_head, size, e->n_pending);
                        ctx_committed(e);
                } else {
                        sim_log("cpu=%u aux n=%" PRIu64 " offset=%" PRIu64 " size=%" PRIu64 " flags=0x%" PRIx64
                                " records=%zu", e->cpu, e->n_aux_records, aux_head, size, flags, e->n_pending);
                        ctx_committed(e);
                }
        }
        e->n_pending = 0;
        /* Readers may take the bytes once aux_head says so (WRITE_ONCE after the data). */
        __atomic_store_n(&e->up->aux_head, e->rb_aux_head, __ATOMIC_RELEASE);
        if (need_aux_wakeup(e))
                wakeup = true;
        if (wakeup) {
                if (flags & PERF_AUX_FLAG_TRUNCATED) {
                        /* pending_disable: the event goes OFF until PERF_EVENT_IOC_ENABLE. */
                        set_on(e, false);
                        sim_log("cpu=%u truncate flags=0x%" PRIx64 " offset=%" PRIu64 " size=%" PRIu64, e->cpu, flags,
                                aux_head, size);
                }
                signal_event(e);
        }
        e->hw_active = false;
        e->h_flags = 0;
}

/* perf_aux_output_skip() via arm_spe_pmu_pad_buf(): 0x00 bytes outside any AUX record. */
static void pad_buf(struct sim_event *e, uint64_t len) {
        uint64_t off = e->h_head & (e->aux_size - 1);

        if (len > e->h_size)
                return;
        memset(e->aux + off, 0, (size_t) len);
        e->rb_aux_head += len;
        __atomic_store_n(&e->up->aux_head, e->rb_aux_head, __ATOMIC_RELEASE);
        if (need_aux_wakeup(e)) {
                signal_event(e);
                e->h_wakeup = e->aux_wakeup + e->aux_watermark;
        }
        e->h_head = e->rb_aux_head;
        e->h_size -= len;
}

static uint64_t round_down(uint64_t x, uint64_t a) {
        return x - x % a;
}

static uint64_t round_up(uint64_t x, uint64_t a) {
        return round_down(x + a - 1, a);
}

/* __arm_spe_pmu_next_off(): the limit as an offset in the buffer, 0 after a truncation. */
static uint64_t next_off_inner(struct sim_event *e) {
        uint64_t bufsize = e->aux_size, limit = bufsize, head, tail, wakeup;

        head = e->h_head & (bufsize - 1);
        if (head % S.align) {
                uint64_t delta = SIM_MIN(round_up(head, S.align) - head, e->h_size);

                pad_buf(e, delta);
                head = e->h_head & (bufsize - 1);
        }
        if (!e->h_size)
                goto no_space;
        tail = (e->h_head + e->h_size) & (bufsize - 1);
        wakeup = e->h_wakeup & (bufsize - 1);
        if (head < tail)
                limit = round_down(tail, e->page);
        if (e->h_wakeup < e->h_head + e->h_size && head <= wakeup)
                limit = SIM_MIN(limit, round_up(wakeup, e->page));
        if (limit > head)
                return limit;
        pad_buf(e, e->h_size);
no_space:
        e->h_flags |= PERF_AUX_FLAG_TRUNCATED;
        aux_output_end(e, 0);
        return 0;
}

/* arm_spe_pmu_next_off(): never leave less than a record before the limit. */
static uint64_t next_off(struct sim_event *e) {
        uint64_t limit = next_off_inner(e), head = e->h_head & (e->aux_size - 1);

        if (limit && limit - head < S.max_record) {
                pad_buf(e, limit - head);
                limit = next_off_inner(e);
        }
        return limit;
}

/* arm_spe_perf_aux_output_begin() around perf_aux_output_begin(). */
static void aux_output_begin(struct sim_event *e) {
        uint64_t tail, limit;

        e->hw_active = false;
        if (!e->aux_size || !e->data_size)
                return;         /* no AUX buffer: PERF_HES_STOPPED, no record */
        e->h_head = e->rb_aux_head;
        e->h_size = 0;
        e->h_flags = 0;
        tail = __atomic_load_n(&e->up->aux_tail, __ATOMIC_ACQUIRE);
        e->h_wakeup = e->aux_wakeup + e->aux_watermark;
        if (e->rb_aux_head - tail < e->aux_size)
                e->h_size = circ_space(e->rb_aux_head, tail, e->aux_size);
        if (!e->h_size) {
                /* No room at all: pending_disable and a wakeup, no AUX record. */
                set_on(e, false);
                sim_log("cpu=%u full head=%" PRIu64 " tail=%" PRIu64, e->cpu, e->rb_aux_head, tail);
                signal_event(e);
                return;
        }
        e->hw_active = true;
        limit = next_off(e);
        if (!limit) {
                e->hw_active = false;
                return;
        }
        e->hw_pos = e->h_head;
        e->limit_pos = e->h_head - (e->h_head & (e->aux_size - 1)) + limit;
}

/* The hardware stopped at the limit: the buffer-full interrupt, arm_spe_pmu_irq_handler(). */
static void buffer_full(struct sim_event *e) {
        aux_output_end(e, e->hw_pos - e->h_head);
        if (e->on)
                aux_output_begin(e);
}

static void aux_put(struct sim_event *e, const uint8_t *src, size_t n) {
        size_t off = (size_t) (e->hw_pos & (e->aux_size - 1));

        /* next_off() never lets a record cross the ring's end. */
        memcpy(e->aux + off, src, n);
        e->hw_pos += n;
}

/* Could the hardware write n bytes now? Takes the buffer-full interrupts it needs to. */
static bool hw_room(struct sim_event *e, uint64_t n) {
        for (int i = 0; i < 4; i++) {
                if (!e->on || e->dead || !e->hw_active)
                        return false;
                if (e->hw_pos + n <= e->limit_pos)
                        return true;
                buffer_full(e);
        }
        return false;
}

static void hw_stop(struct sim_event *e) {
        /* arm_spe_pmu_stop(PERF_EF_UPDATE) -> arm_spe_perf_aux_output_end() */
        if (e->hw_active)
                aux_output_end(e, e->hw_pos - e->h_head);
}

/*
 * perf_event_comm_output(): {pid, tid, comm[] padded with NULs to 8 bytes}.
 * The COMM of an exec, as a process that starts after the event has it:
 * fs/exec.c begin_new_exec() -> __set_task_comm(me, ..., true) ->
 * perf_event_comm(tsk, exec), which sets PERF_RECORD_MISC_COMM_EXEC
 * (kernel/events/core.c).
 */
static void emit_comm(struct sim_event *e, const struct sim_task *t) {
        uint8_t r[8 + 8 + 24] = { 0 };
        struct perf_event_header h = { .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC };
        size_t n = strnlen(t->name, 15);

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &t->pid, 4);
        memcpy(r + 12, &t->tid, 4);
        memcpy(r + 16, t->name, n);
        data_output(e, r, 16 + ((n + 1 + 7) & ~(size_t) 7), CPU[e->cpu].now);
}

/* perf_event_mmap_output() of an MMAP2 without a build id: {pid, tid, addr, len, pgoff, maj, min, ino,
 * ino_generation, prot, flags, filename[] padded with NULs to 8 bytes}. */
static void emit_mmap2(struct sim_event *e, const struct sim_task *t) {
        uint8_t r[72 + PATH_MAX + 8];
        struct perf_event_header h = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER };
        uint32_t prot = PROT_READ | PROT_EXEC, flags = MAP_PRIVATE;
        size_t n = strlen(t->name);

        memset(r, 0, sizeof(r));
        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &t->pid, 4);
        memcpy(r + 12, &t->tid, 4);
        memcpy(r + 16, &t->start, 8);
        memcpy(r + 24, &t->len, 8);
        memcpy(r + 32, &t->pgoff, 8);
        memcpy(r + 64, &prot, 4);
        memcpy(r + 68, &flags, 4);
        memcpy(r + 72, t->name, n);
        data_output(e, r, 72 + ((n + 1 + 7) & ~(size_t) 7), CPU[e->cpu].now);
}

static void hw_start(struct sim_event *e) {
        /* perf_log_itrace_start() at each event_sched_in() before 87f78017e8c8, at the first after (see KERNELS). */
        if (e->itrace_done && X.itrace_each && e->data_size)
                emit_itrace_start(e);
        if (!e->itrace_done && e->data_size) {
                e->itrace_done = true;
                emit_itrace_start(e);
                /* As if the process was started (COMM) and mapped its text (MMAP2) after the event. */
                for (size_t i = 0; e->attr.comm && i < S.n_comms; i++)
                        emit_comm(e, &S.comms[i]);
                for (size_t i = 0; e->attr.mmap2 && i < S.n_mmaps; i++)
                        emit_mmap2(e, &S.mmaps[i]);
        }
        aux_output_begin(e);
}

/* ---- the producer: one "core" per CPU ---------------------------------------- */

/*
 * The online list as the cores see it: read from sysfs at most every 10 ms
 * for all of them, not by each core on its own (at 384 CPUs that was 38,400
 * opens a second of one file), and at every perf_event_open(). G held.
 */
static struct {
        uint64_t read_ns;               /* 0: never */
        bool any;                       /* the file was read and parsed */
        bool set[SIM_MAX_CPUS];
} ONLINE;

static void online_read(void) {
        char line[512];
        FILE *f = fopen(S.online_path, "re");

        ONLINE.read_ns = mono_ns();
        ONLINE.any = f && fgets(line, sizeof(line), f) && parse_cpulist(line, ONLINE.set, NULL) == 0;
        if (f)
                fclose(f);
}

static bool online_has(unsigned cpu) {
        return !ONLINE.any || (cpu < SIM_MAX_CPUS && ONLINE.set[cpu]);
}

/* Whether cpu is online now (perf_event_open's check). */
static bool cpu_online(unsigned cpu) {
        online_read();
        return online_has(cpu);
}

/* Whether cpu is online, as of at most 10 ms ago (a core's check before each record). */
static bool cpu_online_seen(unsigned cpu) {
        if (!ONLINE.read_ns || mono_ns() - ONLINE.read_ns >= 10000000ULL)
                online_read();
        return online_has(cpu);
}

static void check_online(struct sim_cpu *c) {
        bool offline = !cpu_online_seen(c->cpu);

        if (offline == c->offline)
                return;
        c->offline = offline;
        sim_log("cpu=%u %s", c->cpu, offline ? "offline" : "online");
        if (offline && c->ev && !c->ev->dead) {
                /* perf_event_exit_cpu(): the CPU's events are stopped and never scheduled again. */
                hw_stop(c->ev);
                set_on(c->ev, false);
                c->ev->dead = true;
                signal_event(c->ev);
        }
}

/* Can record i be written now (or, rate 0, should the core wait)? */
static bool writable(struct sim_cpu *c, size_t i) {
        struct sim_event *e = c->ev;

        check_online(c);
        return !c->offline && e && hw_room(e, c->rec[i].size);
}

/*
 * A fatal buffer fault on the write of record i (fault=CPU:IDX:s1|s2), as
 * drivers/perf/arm_spe_pmu.c handles it: arm_spe_pmu_buf_get_fault_act()
 * finds PMBSR_EL1.EC = FAULT_S1 or FAULT_S2, not a buffer management event
 * ("Unexpected buffer fault"): SPE_PMU_BUF_FAULT_ACT_FATAL, after
 * arm_spe_perf_aux_output_end() committed [handle->head, PMBPTR_EL1) with
 * the flags seen; PMBSR_EL1.DL is clear, so no TRUNCATED, no PARTIAL: a
 * PERF_RECORD_AUX with no flag, and a wakeup only when the watermark was
 * crossed (perf_aux_output_end()). arm_spe_pmu_irq_handler() then calls
 * arm_spe_pmu_disable_and_drain_local() and, unlike ACT_OK, begins no new
 * session. Nothing set pending_disable: the event stays ACTIVE (its times
 * run, PERF_EVENT_IOC_ENABLE finds it on and does nothing, _perf_event_enable()),
 * its hardware stopped with no handle, until pmu->stop() + pmu->start():
 * PERF_EVENT_IOC_DISABLE (arm_spe_pmu_stop(): perf_get_aux() finds no
 * handle, nothing to commit) then ENABLE (arm_spe_pmu_start() ->
 * arm_spe_perf_aux_output_begin()). PMBPTR_EL1 stops at the faulting write:
 * the record is not in the buffer (dropped, `fault`). G held.
 */
static bool buffer_fault(struct sim_cpu *c, struct sim_event *e, size_t i) {
        const struct fault *f = find_fault(&S.buf_fault, c->cpu, i);
        uint64_t off = e->h_head, size = e->hw_pos - e->h_head;
        size_t records = e->n_pending;

        if (!f)
                return false;
        aux_output_end(e, size);
        e->faulted = true;
        drop(c, i, "fault");
        sim_log("cpu=%u fault s%" PRIu64 " idx=%zu offset=%" PRIu64 " size=%" PRIu64 " records=%zu", c->cpu, f->b, i,
                off, size, records);
        return true;
}

/* perf_event_task_output(): PERF_RECORD_FORK or _EXIT {pid, ppid, tid, ptid, time}. */
static bool storm_task(struct sim_event *e, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t ptid, uint64_t t) {
        uint8_t r[8 + 24];
        struct perf_event_header h = { .type = type };

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &pid, 4);
        memcpy(r + 12, &ppid, 4);
        memcpy(r + 16, &pid, 4);
        memcpy(r + 20, &ptid, 4);
        memcpy(r + 24, &t, 8);
        return data_output(e, r, sizeof(r), t);
}

/* perf_event_comm_output() of an exec (misc PERF_RECORD_MISC_COMM_EXEC): {pid, tid, comm[16]}. */
static bool storm_comm(struct sim_event *e, uint32_t pid, const char *name, uint64_t t) {
        uint8_t r[8 + 8 + 16] = { 0 };
        struct perf_event_header h = { .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC };

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &pid, 4);
        memcpy(r + 12, &pid, 4);
        memcpy(r + 16, name, strnlen(name, 15));
        return data_output(e, r, sizeof(r), t);
}

/* perf_event_mmap_output(): an MMAP2 without a build id, the process's text. */
static bool storm_mmap2(struct sim_event *e, uint32_t pid, const char *path, uint64_t t) {
        uint8_t r[72 + 64] = { 0 };
        struct perf_event_header h = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER };
        uint64_t start = 0x400000, len = 0x10000;
        uint32_t prot = PROT_READ | PROT_EXEC, flags = MAP_PRIVATE;
        size_t n = strnlen(path, 63);

        memcpy(r, &h, sizeof(h));
        memcpy(r + 8, &pid, 4);
        memcpy(r + 12, &pid, 4);
        memcpy(r + 16, &start, 8);
        memcpy(r + 24, &len, 8);
        memcpy(r + 64, &prot, 4);
        memcpy(r + 68, &flags, 4);
        memcpy(r + 72, path, n);
        return data_output(e, r, 72 + ((n + 1 + 7) & ~(size_t) 7), t);
}

/*
 * A fork and exec storm on the CPU before record i (sideband_storm=CPU:IDX:N):
 * N short-lived processes, each forked by the task running, exec'd, mapping
 * its text and exiting there, all at once (a shell loop, a build). The kernel
 * writes their side-band records into every ring of a CPU-wide event that is
 * on on that CPU and asked for them (kernel/events/core.c perf_event_task(),
 * perf_event_comm(), perf_event_mmap() through perf_iterate_sb(): attr.task,
 * attr.comm, attr.mmap2; an event that is off is skipped): FORK (sample_id
 * the parent), COMM with COMM_EXEC, MMAP2 and EXIT (the child). What the
 * data ring has no room for is counted (perf_output_begin(): rb->lost) and
 * reported by the PERF_RECORD_LOST that precedes the next record that fits:
 * data_output(). The pids are 200000 + 20000 * CPU + n, names storm-n.
 * Logged `storm idx= n= records= written= lost=`. G held.
 */
static void sideband_storm(struct sim_cpu *c, struct sim_event *e, size_t i) {
        const struct fault *f = find_fault(&S.storm, c->cpu, i);
        uint32_t ppid = c->cur_pid, ptid = c->cur_tid;
        uint64_t t = c->now, records = 0, written = 0;
        static uint32_t seq[SIM_MAX_CPUS];

        if (!f || !e || !e->on || e->dead || !e->data_size)
                return;
        for (uint64_t k = 0; k < f->b; k++) {
                uint32_t pid = 200000 + 20000 * c->cpu + seq[c->cpu]++ % 20000;
                char name[16], path[64];

                snprintf(name, sizeof(name), "storm-%" PRIu32, pid);
                snprintf(path, sizeof(path), "/usr/libexec/storm/%" PRIu32, pid);
                if (e->attr.task) {
                        written += storm_task(e, PERF_RECORD_FORK, pid, ppid, ptid, t);
                        records++;
                }
                c->cur_pid = c->cur_tid = pid;
                if (e->attr.comm) {
                        written += storm_comm(e, pid, name, t);
                        records++;
                }
                if (e->attr.mmap2) {
                        written += storm_mmap2(e, pid, path, t);
                        records++;
                }
                if (e->attr.task) {
                        written += storm_task(e, PERF_RECORD_EXIT, pid, ppid, ptid, t);
                        records++;
                }
                c->cur_pid = ppid;
                c->cur_tid = ptid;
        }
        sim_log("cpu=%u storm idx=%zu n=%" PRIu64 " records=%" PRIu64 " written=%" PRIu64 " lost=%" PRIu64, c->cpu, i,
                f->b, records, written, records - written);
}

/* PERF_EVENT_IOC_ENABLE of an event that is off: a faulted one starts a new session (buffer_fault()). */
static void fault_restarted(struct sim_event *e) {
        if (!e->faulted)
                return;
        e->faulted = false;
        sim_log("cpu=%u restart after fault active=%d", e->cpu, (int) e->hw_active);
}

static void process_record(struct sim_cpu *c, size_t i) {
        const struct rec *r = &c->rec[i];
        struct sim_event *e = c->ev;
        const struct fault *f;
        bool live = e && e->on && !e->dead && e->data_size;
        uint64_t prev = c->now, t = perf_time(r->ts);
        size_t half = (size_t) (r->size / 2);

        c->now = t;
        if (c->unthrottle_pending) {
                c->unthrottle_pending = false;
                if (e && e->data_size)
                        emit_throttle(e, true);
        }
        /* The scheduler runs whatever SPE does; only an event that is on hears of it. */
        if (r->tid != c->cur_tid || r->pid != c->cur_pid) {
                uint64_t t_out = prev + (t - prev) / 2, t_in = t_out + 1 <= t ? t_out + 1 : t;

                if (live && e->attr.context_switch)
                        emit_switch(e, c->cur_pid, c->cur_tid, r->pid, r->tid, t_out, t_in);
                c->cur_pid = r->pid;
                c->cur_tid = r->tid;
        }
        sideband_storm(c, e, i);
        f = find_fault(&S.lost_samples, c->cpu, i);
        if (f && e && e->data_size)
                emit_lost_samples(e, f->b);
        f = find_fault(&S.throttle, c->cpu, i);
        if (f && f->b > 0) {
                if (e && e->data_size)
                        emit_throttle(e, false);
                c->throttle_left = f->b;
        }
        if (c->throttle_left > 0) {
                if (--c->throttle_left == 0)
                        c->unthrottle_pending = true;
                drop(c, i, "throttled");
                return;
        }
        if (c->offline) {
                drop(c, i, "offline");
                return;
        }
        /* An operation at an exception level the event does not sample makes no record. */
        if (e && ctx_el_filtered(e, c, i)) {
                drop(c, i, "filtered");
                return;
        }
        if (!writable(c, i)) {
                drop(c, i, !e ? "noevent" : e->dead ? "offline" : !e->on ? "disabled" : "stopped");
                return;
        }
        if (buffer_fault(c, e, i))
                return;
        if (find_fault(&S.partial, c->cpu, i)) {
                /* PMBSR_EL1.DL: the record is cut, TRUNCATED|PARTIAL, the event stops. */
                aux_put(e, c->bin + r->off, half);
                e->h_flags |= PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL;
                aux_output_end(e, e->hw_pos - e->h_head);
                drop(c, i, "partial");
                return;
        }
        if (find_fault(&S.split, c->cpu, i) && half > 0) {
                /* A commit in the middle of the record: its halves in two chunks. */
                uint64_t limit = e->limit_pos, tail;

                aux_put(e, c->bin + r->off, half);
                aux_output_end(e, e->hw_pos - e->h_head);
                e->hw_active = e->on;
                e->h_head = e->rb_aux_head;
                tail = __atomic_load_n(&e->up->aux_tail, __ATOMIC_ACQUIRE);
                e->h_size = circ_space(e->rb_aux_head, tail, e->aux_size);
                e->h_wakeup = e->aux_wakeup + e->aux_watermark;
                e->limit_pos = limit;
                aux_put(e, c->bin + r->off + half, (size_t) r->size - half);
        } else
                aux_put(e, c->bin + r->off, (size_t) r->size);
        pending_add(e, i);
        c->written++;
        /* The profiling buffer management event: within a record of the limit. */
        if (e->limit_pos - e->hw_pos < S.max_record)
                buffer_full(e);
}

static uint64_t ts_ns(const struct timespec *t) {
        return (uint64_t) t->tv_sec * 1000000000ULL + (uint64_t) t->tv_nsec;
}

/* Until a CLOCK_MONOTONIC time in ns. */
static void sleep_until(uint64_t ns) {
        struct timespec due = { .tv_sec = (time_t) (ns / 1000000000ULL), .tv_nsec = (long) (ns % 1000000000ULL) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) == EINTR)
                ;
}

/*
 * Whether the scenario's host is idle (a file named `idle` in its
 * directory), looked at every 10 ms at most for all cores together.
 */
static bool host_idle(void) {
        static uint64_t checked_ns;
        static bool idle;
        uint64_t now = mono_ns(), last = __atomic_load_n(&checked_ns, __ATOMIC_ACQUIRE);

        if ((!last || now - last >= 10000000ULL) &&
            __atomic_compare_exchange_n(&checked_ns, &last, now, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                char path[PATH_MAX];

                snprintf(path, sizeof(path), "%s/idle", S.dir);
                __atomic_store_n(&idle, access(path, F_OK) == 0, __ATOMIC_RELEASE);
        }
        return __atomic_load_n(&idle, __ATOMIC_ACQUIRE);
}

/*
 * CPU n's share of `rate_spread`, in [-1, 1): the fractional parts of n times
 * the golden ratio are spread evenly whatever the CPU count, their mean close
 * to a half, so the host's rate stays `rate` times its CPUs. Cores that run
 * different code retire at different speeds; at one rate the rings of cores
 * enabled together would cross their wakeup points together forever.
 */
static double spread_share(unsigned cpu) {
        double x = cpu * 0.6180339887498949;

        return 2 * (x - (double) (uint64_t) x) - 1;
}

/* Records per second of a paced core now: `rate`, or its operations over its event's period. */
static double core_rate(struct sim_cpu *c) {
        double scale = 1 + S.rate_spread * spread_share(c->cpu);
        uint64_t period;

        if (S.ops_per_sec <= 0)
                return S.rate * scale;
        period = __atomic_load_n(&c->period, __ATOMIC_RELAXED);
        return S.ops_per_sec * scale / (double) (period ? period : 1);
}

static void *producer(void *arg) {
        struct sim_cpu *c = arg;
        struct timespec start;
        uint64_t slept_until = 0;
        bool paced = S.rate > 0 || S.ops_per_sec > 0;
        uint64_t phase = S.batch_ns * c->cpu / (S.nr_cpu_ids ? S.nr_cpu_ids : 1);
        double due_ns;

        clock_gettime(CLOCK_MONOTONIC, &start);
        due_ns = (double) ts_ns(&start);
        /* k counts records written or due; a looping core replays record k % n_rec. */
        for (uint64_t k = 0; k < c->n_rec || (S.loop && c->n_rec); k++) {
                size_t i = (size_t) (k % c->n_rec);

                if (paced) {
                        uint64_t due = (uint64_t) due_ns;

                        /* The next record is one period of operations later, at the rate of now. */
                        due_ns += 1e9 / core_rate(c);

                        /*
                         * On a grid: one wakeup writes every record due by then. Each
                         * core's grid is shifted by its share of the step, as cores
                         * that keep no common beat: all of them at one instant was a
                         * thundering herd on the lock at 384 CPUs.
                         */
                        if (S.batch_ns)
                                due = (due - phase + S.batch_ns - 1) / S.batch_ns * S.batch_ns + phase;
                        if (due > slept_until) {
                                flush_dropped(c);
                                sleep_until(due);
                                slept_until = due;
                                /*
                                 * An idle host: while SCEN/idle exists the core executes
                                 * nothing, owes nothing (host_idle() looks every 10 ms).
                                 */
                                while (host_idle()) {
                                        sleep_until(mono_ns() + 10000000ULL);
                                        due_ns = (double) mono_ns();
                                }
                        }
                }
                /*
                 * One record per hold of the lock: the daemon's own calls into the
                 * shim (ioctl, read, poll) wait behind one record, not a batch.
                 * A core that waits for its ring (rate 0) waits on G: not in PL.
                 */
                if (paced)
                        pthread_mutex_lock(&PL);
                pthread_mutex_lock(&G);
                /* Rate 0: the core waits for the ring instead of losing records. */
                while (!paced && !writable(c, i) && c->throttle_left == 0) {
                        struct timespec to;

                        clock_gettime(CLOCK_REALTIME, &to);
                        to.tv_nsec += 20000000L;
                        if (to.tv_nsec >= 1000000000L) {
                                to.tv_sec++;
                                to.tv_nsec -= 1000000000L;
                        }
                        pthread_cond_timedwait(&c->cond, &G, &to);
                }
                process_record(c, i);
                pthread_mutex_unlock(&G);
                if (paced)
                        pthread_mutex_unlock(&PL);
        }
        flush_dropped(c);
        pthread_mutex_lock(&G);
        sim_log("cpu=%u done written=%" PRIu64 " dropped=%" PRIu64, c->cpu, c->written, c->dropped);
        pthread_mutex_unlock(&G);
        return NULL;
}

static void wake_core(struct sim_event *e) {
        pthread_cond_broadcast(&CPU[e->cpu].cond);
}

/*
 * PERF_EVENT_IOC_PERIOD: __perf_event_period() (kernel/events/core.c) stops
 * an ACTIVE event (pmu->stop(PERF_EF_UPDATE)) and starts it again
 * (pmu->start(PERF_EF_RELOAD)). Modelled for an event a fault stopped
 * (buffer_fault()): arm_spe_pmu_stop() finds no handle, arm_spe_pmu_start()
 * begins a new session. A live session is left running (the kernel's stop
 * would commit its bytes and the start begin another: not modelled).
 */
static void period_restart(struct sim_event *e) {
        if (!e->faulted || !e->on || e->dead)
                return;
        hw_start(e);
        fault_restarted(e);
        wake_core(e);
}

/* ---- perf_event_open ----------------------------------------------------------- */

/*
 * One of the simulated PMUs: arm_spe_0 (type=, cpus=) or, on a host with two
 * kinds of cores that have SPE (big.LITTLE, or two SPE implementations),
 * arm_spe_1 (type2=, cpus2=). Each probed device is its own PMU: its own
 * name (arm_spe_pmu_perf_init(): "arm_spe_%d" of a counter), its own type
 * (perf_pmu_register() with -1: a dynamic one) and its own supported_cpus
 * (the PPI partition of its interrupt, arm_spe_pmu_irq_probe()).
 */
static bool sim_type(uint32_t type) {
        return type == S.type || (S.type2 != UINT32_MAX && type == S.type2);
}

/* arm_spe_pmu_event_init(): the event's CPU must be in this PMU's supported_cpus, else ENOENT. */
static bool pmu_covers(uint32_t type, unsigned cpu) {
        return type == S.type ? S.cpus[cpu] : S.cpus2[cpu];
}

static long fail(int e) {
        errno = e;
        return -1;
}

static long sim_open(struct perf_event_attr *uattr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
        uint8_t raw[ATTR_SIZE_VER8] = {};
        uint32_t size;
        struct perf_event_attr attr;
        struct sim_event *e;
        struct sim_cpu *c;
        uint64_t config3 = 0;
        int fd, memfd;

        /* sys_perf_event_open(): flags first, then perf_copy_attr(). */
        if (flags & ~(unsigned long) (PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT | PERF_FLAG_PID_CGROUP |
                                      PERF_FLAG_FD_CLOEXEC))
                return fail(EINVAL);
        memcpy(&size, (uint8_t *) uattr + offsetof(struct perf_event_attr, size), sizeof(size));
        if (size == 0)
                size = PERF_ATTR_SIZE_VER0;
        if (size < PERF_ATTR_SIZE_VER0 || size > (uint32_t) sysconf(_SC_PAGESIZE))
                goto e2big;
        /* copy_struct_from_user(): bytes past what this kernel knows must be zero. */
        for (uint32_t i = S.attr_size; i < size; i++)
                if (((const uint8_t *) uattr)[i])
                        goto e2big;
        memcpy(raw, uattr, SIM_MIN(size, (uint32_t) sizeof(raw)));
        memset(&attr, 0, sizeof(attr));
        memcpy(&attr, raw, SIM_MIN(sizeof(attr), sizeof(raw)));
        if (S.attr_size >= ATTR_SIZE_VER8 && size >= ATTR_SIZE_VER8)
                memcpy(&config3, raw + ATTR_CONFIG3_OFFSET, 8);
        (void) config3;         /* inv_event_filter: accepted, nothing to filter in a replay */
        if (attr.sample_type & ~(uint64_t) (PERF_SAMPLE_MAX - 1))
                return fail(EINVAL);
        if (attr.read_format & ~(uint64_t) (PERF_FORMAT_MAX - 1))
                return fail(EINVAL);
        if (!attr.freq && (attr.sample_period & (UINT64_C(1) << 63)))
                return fail(EINVAL);
        if (group_fd != -1 || (flags & PERF_FLAG_PID_CGROUP)) {
                sim_log("cpu=%d open errno=EINVAL (group_fd/cgroup not modelled)", cpu);
                return fail(EINVAL);
        }
        if (pid != -1) {
                sim_log("cpu=%d open errno=EINVAL (per-task SPE not modelled)", cpu);
                return fail(EINVAL);
        }
        /* perf_event_alloc(): a CPU-wide event needs a possible CPU. */
        if (cpu < 0 || (unsigned) cpu >= S.nr_cpu_ids || cpu >= SIM_MAX_CPUS)
                return fail(EINVAL);
        c = &CPU[cpu];
        /*
         * perf_event_alloc() -> arm_spe_pmu_event_init(), in its order. Config bits
         * outside the format fields are not checked by the driver (only
         * event_filter's RES0 bits are): ignored here too.
         */
        if (!pmu_covers(attr.type, (unsigned) cpu)) {
                sim_log("cpu=%d open errno=ENOENT (not in cpumask)", cpu);
                return fail(ENOENT);
        }
        if (attr.config1 & (S.pmsver >= 2 ? PMSEVFR_RES0_V1P1 : PMSEVFR_RES0_IMP))
                return fail(EOPNOTSUPP);
        if (attr.exclude_idle)
                return fail(EOPNOTSUPP);
        if (attr.freq)
                return fail(EINVAL);
        if (S.noperfmon && (attr.config & (SPE_CFG_PA_ENABLE | SPE_CFG_PCT_ENABLE))) {
                sim_log("cpu=%d open errno=EACCES (pa_enable/pct_enable without CAP_PERFMON)", cpu);
                return fail(EACCES);
        }
        /* exclusive_event_installable(): PERF_PMU_CAP_EXCLUSIVE. */
        /* find_get_context() -> perf_allow_cpu(): perf_event_paranoid without CAP_PERFMON. */
        if (S.eacces[cpu]) {
                sim_log("cpu=%d open errno=EACCES (eacces_cpus)", cpu);
                return fail(EACCES);
        }
        /* An event whose CPU went offline left the CPU's context (perf_event_exit_cpu_context()). */
        if (c->ev && !c->ev->dead) {
                sim_log("cpu=%d open errno=EBUSY (open already)", cpu);
                return fail(EBUSY);
        }
        if (S.ebusy_left[cpu] > 0) {
                S.ebusy_left[cpu]--;
                sim_log("cpu=%d open errno=EBUSY (ebusy, %" PRIu64 " left)", cpu, S.ebusy_left[cpu]);
                return fail(EBUSY);
        }
        if (!cpu_online((unsigned) cpu)) {
                sim_log("cpu=%d open errno=ENODEV (offline)", cpu);
                return fail(ENODEV);
        }
        memfd = (int) real_syscall(SYS_memfd_create, "armprofd-simpmu", MFD_CLOEXEC);
        if (memfd < 0)
                return -1;
        fd = eventfd(0, EFD_NONBLOCK | ((flags & PERF_FLAG_FD_CLOEXEC) ? EFD_CLOEXEC : 0));
        if (fd < 0 || fd >= SIM_MAX_FD) {
                int k = fd < 0 ? errno : EMFILE;

                real_close(memfd);
                if (fd >= 0)
                        real_close(fd);
                return fail(k);
        }
        e = calloc(1, sizeof(*e));
        if (!e)
                abort();
        *e = (struct sim_event) {
                .fd = fd,
                .cpu = (unsigned) cpu,
                .id = next_id++,
                .attr = attr,
                .memfd = memfd,
                .page = sim_page(),
                .on = !attr.disabled,
                .on_since_ns = mono_ns(),
        };
        memcpy(e->attr_raw, raw, sizeof(raw));
        load_cpu(c);
        c->offline = false;
        c->ev = e;
        __atomic_store_n(&c->period, attr.sample_period, __ATOMIC_RELAXED);
        EVS[n_evs++] = e;
        __atomic_store_n(&FD[fd], e, __ATOMIC_RELEASE);
        sim_log("cpu=%d open fd=%d id=%" PRIu64 " context_switch=%d aux_watermark=%u type=%" PRIu32, cpu, fd, e->id,
                (int) attr.context_switch, attr.aux_watermark, attr.type);
        if (!c->started && c->n_rec) {
                c->started = true;
                if (pthread_create(&c->thread, NULL, producer, c) != 0)
                        abort();
                /* The "hardware" lives as long as the process; nobody joins it. */
                pthread_detach(c->thread);
        }
        return fd;
e2big:
        /* perf_copy_attr(): the kernel tells the size it knows. */
        memcpy((uint8_t *) uattr + offsetof(struct perf_event_attr, size), &S.attr_size, sizeof(uint32_t));
        sim_log("cpu=%d open errno=E2BIG (attr.size %u, kernel %u)", cpu, size, S.attr_size);
        return fail(E2BIG);
}

SIM_EXPORT long syscall(long nr, ...) {
        va_list ap;
        long a[6];

        va_start(ap, nr);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);
        REAL(syscall);
        if (nr == SYS_perf_event_open && a[0]) {
                struct perf_event_attr *attr = (struct perf_event_attr *) a[0];
                long r;

                pthread_mutex_lock(&G);
                load_scenario();
                if (S.dir[0] && sim_type(attr->type)) {
                        uint64_t delay = S.open_delay_ns;

                        r = sim_open(attr, (pid_t) a[1], (int) a[2], (int) a[3], (unsigned long) a[4]);
                        pthread_mutex_unlock(&G);
                        /* The event exists (its core runs) while the caller still waits. */
                        if (r >= 0 && delay)
                                sleep_until(mono_ns() + delay);
                        return r;
                }
                pthread_mutex_unlock(&G);
        }
        return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* ---- mmap / munmap ------------------------------------------------------------- */

static bool is_pow2(uint64_t n) {
        return n && !(n & (n - 1));
}

static void *map_fail(int e) {
        errno = e;
        return MAP_FAILED;
}

/* perf_mmap(): the caller holds G. */
static void *sim_mmap(struct sim_event *e, void *addr, size_t len, int prot, int flags, off_t off) {
        void *p;

        if (!(flags & MAP_SHARED) || len == 0 || len % e->page)
                return map_fail(EINVAL);
        if (off == 0) {
                size_t nr = len / e->page - 1;

                if (nr != 0 && !is_pow2(nr))
                        return map_fail(EINVAL);
                if (!(prot & PROT_WRITE)) {
                        /* Backward (overwrite) data rings are not modelled. */
                        sim_log("cpu=%u mmap errno=EINVAL (read-only data ring not modelled)", e->cpu);
                        return map_fail(EINVAL);
                }
                if (e->data_len && e->data_len != len)
                        return map_fail(EINVAL);
                if (!e->data_len) {
                        if (ftruncate(e->memfd, (off_t) len) < 0)
                                return MAP_FAILED;
                        e->up = e->up_own = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, e->memfd, 0);
                        if (e->up == MAP_FAILED) {
                                e->up = e->up_own = NULL;
                                return MAP_FAILED;
                        }
                        e->data_len = len;
                        e->data = (uint8_t *) e->up + e->page;
                        e->data_size = nr * e->page;
                        /* perf_event_init_userpage(), arch_perf_update_userpage() of arm64. */
                        e->up->version = 0;
                        e->up->compat_version = 0;
                        clock_page(e->up);
                        e->up->data_offset = e->page;
                        e->up->data_size = e->data_size;
                        /* ring_buffer_init(): wakeup_watermark or half the ring. */
                        e->data_watermark = e->attr.watermark && e->attr.wakeup_watermark ?
                                                    SIM_MIN(e->attr.wakeup_watermark, e->data_size) :
                                                    e->data_size / 2;
                        if (!e->data_watermark)
                                e->data_watermark = 1;
                        sim_log("cpu=%u mmap data_size=%zu", e->cpu, e->data_size);
                }
        } else {
                uint64_t aux_off, aux_size;
                uint64_t nr = len / e->page;

                if (!e->data_len)
                        return map_fail(EINVAL);
                aux_off = __atomic_load_n(&e->up->aux_offset, __ATOMIC_RELAXED);
                aux_size = __atomic_load_n(&e->up->aux_size, __ATOMIC_RELAXED);
                if (aux_off < e->data_size + e->page || aux_off != (uint64_t) off || aux_off % e->page)
                        return map_fail(EINVAL);
                if (e->aux_size && e->aux_pgoff != (uint64_t) off / e->page)
                        return map_fail(EINVAL);
                if (aux_size != len || !is_pow2(nr))
                        return map_fail(EINVAL);
                if (!(prot & PROT_WRITE)) {
                        /* Overwrite ("snapshot") mode is not modelled: the daemon maps it writable. */
                        sim_log("cpu=%u mmap errno=EINVAL (read-only AUX, snapshot mode, not modelled)", e->cpu);
                        return map_fail(EINVAL);
                }
                if (S.mmap_limit && len > S.mmap_limit) {
                        /* perf_mmap(): locked pages over perf_event_mlock_kb/RLIMIT_MEMLOCK. */
                        sim_log("cpu=%u mmap errno=%s aux_size=%zu limit=%" PRIu64, e->cpu,
                                errno_name(S.mmap_errno), len, S.mmap_limit);
                        return map_fail(S.mmap_errno);
                }
                if (!e->aux_size) {
                        /* arm_spe_pmu_setup_aux(): at least two pages, else rb_alloc_aux() fails. */
                        if (nr < 2)
                                return map_fail(ENOMEM);
                        if (ftruncate(e->memfd, (off_t) (aux_off + aux_size)) < 0)
                                return MAP_FAILED;
                        p = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, e->memfd, off);
                        if (p == MAP_FAILED)
                                return MAP_FAILED;
                        e->aux = e->aux_own = p;
                        e->aux_size = len;
                        e->aux_pgoff = (uint64_t) off / e->page;
                        /* rb_alloc_aux(): aux_watermark, 0 = half the buffer. */
                        e->aux_watermark = e->attr.aux_watermark ? e->attr.aux_watermark : len / 2;
                        e->aux_watermark = SIM_MIN(e->aux_watermark, (uint64_t) len);
                        sim_log("cpu=%u mmap aux_size=%zu watermark=%" PRIu64, e->cpu, len, e->aux_watermark);
                        /*
                         * An event enabled before its AUX area existed failed pmu->add()
                         * (arm_spe_pmu_add(): -EINVAL when start left it stopped) and stayed
                         * INACTIVE; the multiplexing timer schedules it in once it can start.
                         */
                        if (e->on && !e->dead && !e->hw_active) {
                                hw_start(e);
                                wake_core(e);
                        }
                }
        }
        p = real_mmap(addr, len, prot, flags, e->memfd, off);
        if (p == MAP_FAILED)
                return p;
        if (e->n_maps < sizeof(e->maps) / sizeof(e->maps[0]))
                e->maps[e->n_maps++] = (struct user_map) { p, len, off != 0 };
        if (off == 0 && e->up == e->up_own) {
                e->up = p;
                e->data = (uint8_t *) p + e->page;
        } else if (off != 0 && e->aux == e->aux_own)
                e->aux = p;
        return p;
}

SIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
        struct sim_event *e = ev_of(fd);
        void *p;

        REAL(mmap);
        if (!e)
                return real_mmap(addr, len, prot, flags, fd, off);
        pthread_mutex_lock(&G);
        e = ev_of(fd);
        p = e ? sim_mmap(e, addr, len, prot, flags, off) : map_fail(EBADF);
        pthread_mutex_unlock(&G);
        return p;
}

SIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
        static_assert(sizeof(off64_t) == sizeof(off_t), "64-bit off_t");
        return mmap(addr, len, prot, flags, fd, (off_t) off);
}

SIM_EXPORT int munmap(void *addr, size_t len) {
        REAL(munmap);
        pthread_mutex_lock(&G);
        for (size_t k = 0; k < n_evs; k++) {
                struct sim_event *e = EVS[k];

                for (size_t i = 0; i < e->n_maps; i++) {
                        if (e->maps[i].addr != addr)
                                continue;
                        /* The producer goes back to its own view before the pages go. */
                        if ((void *) e->up == addr) {
                                e->up = e->up_own;
                                e->data = (uint8_t *) e->up_own + e->page;
                        }
                        if ((void *) e->aux == addr)
                                e->aux = e->aux_own;
                        bool was_aux = e->maps[i].aux, more = false;

                        e->maps[i] = e->maps[--e->n_maps];
                        for (size_t j = 0; j < e->n_maps; j++)
                                more = more || e->maps[j].aux;
                        if (was_aux && !more) {
                                /*
                                 * perf_mmap_close() of the last AUX mapping: perf_pmu_output_stop()
                                 * commits and stops the hardware, rb_free_aux() frees the area; a
                                 * new one may be mapped (aux_head goes on), the hardware starts
                                 * again at the next PERF_EVENT_IOC_ENABLE of an event that is off.
                                 */
                                hw_stop(e);
                                real_munmap(e->aux_own, e->aux_size);
                                e->aux = e->aux_own = NULL;
                                e->aux_size = 0;
                                sim_log("cpu=%u munmap aux", e->cpu);
                        }
                        break;
                }
        }
        pthread_mutex_unlock(&G);
        return real_munmap(addr, len);
}

/* ---- ioctl, read, close ---------------------------------------------------------- */

/* _perf_ioctl(); the caller holds G. */
static int sim_ioctl(struct sim_event *e, unsigned long req, void *arg) {
        switch (req) {
        case PERF_EVENT_IOC_ENABLE:
                /* _perf_event_enable(): nothing to do for an event that is on. */
                if (e->on || e->dead) {
                        sim_log("cpu=%u enable (%s)", e->cpu, e->dead ? "cpu offline, ignored" : "already on");
                        return 0;
                }
                set_on(e, true);
                hw_start(e);
                sim_log("cpu=%u enable active=%d", e->cpu, (int) e->hw_active);
                fault_restarted(e);
                wake_core(e);
                return 0;
        case PERF_EVENT_IOC_DISABLE: {
                uint64_t before = e->rb_aux_head;

                if (!e->on) {
                        sim_log("cpu=%u disable (already off)", e->cpu);
                        return 0;
                }
                hw_stop(e);
                set_on(e, false);
                sim_log("cpu=%u disable committed=%" PRIu64, e->cpu, e->rb_aux_head - before);
                return 0;
        }
        case PERF_EVENT_IOC_ID:
                if (!arg)
                        return -EFAULT;
                memcpy(arg, &e->id, sizeof(e->id));
                return 0;
        case PERF_EVENT_IOC_RESET:
                return 0;
        case PERF_EVENT_IOC_SET_OUTPUT:
                /* Redirecting another event into this ring is not modelled. */
                return (intptr_t) arg == -1 ? 0 : -EINVAL;
        case PERF_EVENT_IOC_SET_FILTER:
                /* perf_event_set_filter(): arm_spe has no address filters. */
                return -EINVAL;
        case PERF_EVENT_IOC_PERIOD:
                /* perf_event_period() */
                if (!arg)
                        return -EFAULT;
                if (*(const uint64_t *) arg == 0 || (*(const uint64_t *) arg & (UINT64_C(1) << 63)))
                        return -EINVAL;
                e->attr.sample_period = *(const uint64_t *) arg;
                __atomic_store_n(&CPU[e->cpu].period, e->attr.sample_period, __ATOMIC_RELAXED);
                sim_log("cpu=%u period=%" PRIu64, e->cpu, (uint64_t) e->attr.sample_period);
                period_restart(e);
                return 0;
        case PERF_EVENT_IOC_SET_BPF:
        case PERF_EVENT_IOC_REFRESH:
                return -EINVAL;
        case PERF_EVENT_IOC_MODIFY_ATTRIBUTES:
                /* perf_event_modify_attr(): breakpoints only. */
                return -EOPNOTSUPP;
        default:
                return -ENOTTY;
        }
}

SIM_EXPORT int ioctl(int fd, unsigned long req, ...) {
        struct sim_event *e = ev_of(fd);
        va_list ap;
        void *arg;
        int r;

        va_start(ap, req);
        arg = va_arg(ap, void *);
        va_end(ap);
        REAL(ioctl);
        if (!e)
                return real_ioctl(fd, req, arg);
        pthread_mutex_lock(&G);
        e = ev_of(fd);
        r = e ? sim_ioctl(e, req, arg) : -EBADF;
        pthread_mutex_unlock(&G);
        if (r < 0) {
                errno = -r;
                return -1;
        }
        return r;
}

/* perf_read(): one counter, read_format's extras; SPE counts nothing (arm_spe_pmu_read()). */
SIM_EXPORT ssize_t read(int fd, void *buf, size_t n) {
        struct sim_event *e = ev_of(fd);
        uint64_t v[5];
        size_t k = 0;

        REAL(read);
        if (!e)
                return real_read(fd, buf, n);
        pthread_mutex_lock(&G);
        e = ev_of(fd);
        if (e) {
                uint64_t rf = e->attr.read_format;

                if (rf & PERF_FORMAT_GROUP) {
                        v[k++] = 1;
                        v[k++] = 0;
                } else
                        v[k++] = 0;
                /* SPE runs whenever it is enabled on its CPU: running = enabled. */
                uint64_t t = e->enabled_ns + (e->on && !e->dead ? mono_ns() - e->on_since_ns : 0);

                if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
                        v[k++] = t;
                if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
                        v[k++] = t;
                if (rf & PERF_FORMAT_ID)
                        v[k++] = e->id;
                if (k < 5 && (rf & PERF_FORMAT_LOST))
                        v[k++] = 0;
        }
        pthread_mutex_unlock(&G);
        if (!e) {
                errno = EBADF;
                return -1;
        }
        if (n < k * 8) {
                errno = ENOSPC;
                return -1;
        }
        memcpy(buf, v, k * 8);
        return (ssize_t) (k * 8);
}

SIM_EXPORT int close(int fd) {
        struct sim_event *e = ev_of(fd);

        REAL(close);
        if (!e)
                return real_close(fd);
        pthread_mutex_lock(&G);
        e = ev_of(fd);
        if (e) {
                struct sim_cpu *c = &CPU[e->cpu];

                /* perf_release() -> pmu->del() -> arm_spe_pmu_stop(PERF_EF_UPDATE). */
                if (e->on)
                        hw_stop(e);
                __atomic_store_n(&FD[fd], NULL, __ATOMIC_RELEASE);
                for (size_t k = 0; k < n_evs; k++)
                        if (EVS[k] == e) {
                                EVS[k] = EVS[--n_evs];
                                break;
                        }
                pthread_mutex_lock(&EPL);
                for (size_t k = 0; k < n_ep;)
                        if (EP[k].fd == fd)
                                EP[k] = EP[--n_ep];
                        else
                                k++;
                pthread_mutex_unlock(&EPL);
                if (c->ev == e)
                        c->ev = NULL;
                sim_log("cpu=%u close fd=%d", e->cpu, fd);
                if (e->up_own)
                        real_munmap(e->up_own, e->data_len);
                if (e->aux_own)
                        real_munmap(e->aux_own, e->aux_size);
                real_close(e->memfd);
                free(e->pending);
                free(e);
        }
        pthread_mutex_unlock(&G);
        return real_close(fd);
}

/* ---- poll: perf_poll() reports EPOLLIN once per wakeup (atomic_xchg(&rb->poll, 0)) -------- */

static void consume_wakeup(int fd) {
        uint64_t v;

        (void) !real_read(fd, &v, sizeof(v));
}

SIM_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
        REAL(epoll_ctl);
        if (ev_of(fd)) {
                pthread_mutex_lock(&EPL);
                for (size_t k = 0; k < n_ep;)
                        if (EP[k].epfd == epfd && EP[k].fd == fd)
                                EP[k] = EP[--n_ep];
                        else
                                k++;
                if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && ev && n_ep < sizeof(EP) / sizeof(EP[0]))
                        EP[n_ep++] = (typeof(EP[0])) { epfd, ev->data.u64, fd };
                pthread_mutex_unlock(&EPL);
        }
        return real_epoll_ctl(epfd, op, fd, ev);
}

static void epoll_consume(int epfd, struct epoll_event *evs, int n) {
        if (n <= 0 || !__atomic_load_n(&n_ep, __ATOMIC_RELAXED))
                return;
        pthread_mutex_lock(&EPL);
        for (int i = 0; i < n; i++)
                for (size_t k = 0; k < n_ep; k++)
                        if (EP[k].epfd == epfd && EP[k].data == evs[i].data.u64 && (evs[i].events & EPOLLIN))
                                consume_wakeup(EP[k].fd);
        pthread_mutex_unlock(&EPL);
}

SIM_EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout) {
        int n;

        REAL(epoll_wait);
        n = real_epoll_wait(epfd, evs, max, timeout);
        epoll_consume(epfd, evs, n);
        return n;
}

SIM_EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *ss) {
        int n;

        REAL(epoll_pwait);
        n = real_epoll_pwait(epfd, evs, max, timeout, ss);
        epoll_consume(epfd, evs, n);
        return n;
}

static void poll_consume(struct pollfd *p, nfds_t n, int r) {
        if (r <= 0)
                return;
        for (nfds_t i = 0; i < n; i++)
                if ((p[i].revents & POLLIN) && ev_of(p[i].fd))
                        consume_wakeup(p[i].fd);
}

SIM_EXPORT int poll(struct pollfd *p, nfds_t n, int timeout) {
        int r;

        REAL(poll);
        r = real_poll(p, n, timeout);
        poll_consume(p, n, r);
        return r;
}

SIM_EXPORT int ppoll(struct pollfd *p, nfds_t n, const struct timespec *to, const sigset_t *ss) {
        int r;

        REAL(ppoll);
        r = real_ppoll(p, n, to, ss);
        poll_consume(p, n, r);
        return r;
}
