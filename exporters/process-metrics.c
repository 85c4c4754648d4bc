/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "process-metrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "prom.h"
#include "strbuf.h"
#include "thread-names.h"

/*
 * proc(5): /proc/[pid]/stat fields after the ")" that ends comm: field 3 is
 * state; utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
 */
#define STAT_FIELD_UTIME 14
#define STAT_FIELD_STIME 15
#define STAT_FIELD_NUM_THREADS 20
#define STAT_FIELD_STARTTIME 22
#define STAT_FIELD_VSIZE 23
#define STAT_FIELD_RSS 24
/*
 * /proc/[pid]/stat is one line of 52 fields: comm (at most 16 bytes,
 * TASK_COMM_LEN) and numbers of at most 20 digits, about 1.1 KiB at most.
 */
#define PID_STAT_MAX 4096

/*
 * A file of at most len - 1 bytes under dir_fd (AT_FDCWD: path as it is),
 * NUL-terminated. open(), read() and close() only: a scrape reads one of
 * these per thread, and stdio's fopen() added an fstat(), a second read()
 * for the end of file and a buffer's malloc() to each. A /proc stat line
 * comes whole in one read (its seq_file fills the buffer from one show()):
 * reading stops at its newline.
 */
static int read_file_at(int dir_fd, const char *path, char *buf, size_t len) {
        size_t n = 0;
        int fd, r = 0;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        while (n < len - 1) {
                ssize_t k = read(fd, buf + n, len - 1 - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (buf[n - 1] == '\n')
                        break;
        }
        close(fd);
        if (r < 0)
                return r;
        buf[n] = '\0';
        return 0;
}

static int read_file(const char *path, char *buf, size_t len) {
        return read_file_at(AT_FDCWD, path, buf, len);
}

/*
 * The boot time in whole seconds since the epoch, as /proc/stat's "btime"
 * gives it (proc(5)): the kernel prints getboottime64(), the realtime clock
 * less the boot-time clock, and so do we from the two clocks (time
 * namespaces offset both alike). Not from /proc/stat: the kernel writes
 * all of it anew on each read for this one figure, a line per CPU and each
 * interrupt's count summed over every CPU, tens of kilobytes on a large
 * host. Computed at every scrape, not once: a clock stepped after the
 * daemon started (time synchronized late in boot) moves the boot time, and
 * the start time with it, as it does in /proc/stat.
 */
static int boot_time(uint64_t *ret) {
        struct timespec boot, real;
        int64_t ns;

        /* The boot-time clock first: the nanoseconds between the reads then
         * make the difference at least the kernel's, never less, and the
         * same whole second but when that lies within them of the next. */
        if (clock_gettime(CLOCK_BOOTTIME, &boot) < 0 || clock_gettime(CLOCK_REALTIME, &real) < 0)
                return -errno;
        ns = ((int64_t) real.tv_sec - (int64_t) boot.tv_sec) * 1000000000 + (real.tv_nsec - boot.tv_nsec);
        if (ns < 0)
                return -ERANGE;
        *ret = (uint64_t) ns / 1000000000;
        return 0;
}

static uint64_t count_fds(const char *procfs) {
        char path[PATH_MAX];
        struct dirent *de;
        uint64_t n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "%s/self/fd", procfs);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        /* Do not count the descriptor opendir() itself holds. */
        return n > 0 ? n - 1 : 0;
}

/*
 * A stat line: its comm (between the first '(' and the last ')': a comm may
 * hold both) cut in place, and fields 3..last into f[] (those we do not use
 * may be negative: 0).
 */
static int stat_parse(char *buf, char **ret_comm, uint64_t *f, int last) {
        char *open = strchr(buf, '('), *p = strrchr(buf, ')'), *save = NULL;

        if (!open || !p || p < open)
                return -EBADMSG;
        *p++ = '\0';
        *ret_comm = open + 1;
        for (int field = 3; field <= last; field++) {
                char *tok = strtok_r(field == 3 ? p : NULL, " ", &save);

                if (!tok)
                        return -EBADMSG;
                if (field >= STAT_FIELD_UTIME && safe_atou64(tok, &f[field]) < 0)
                        f[field] = 0;
        }
        return 0;
}

int process_stats_read(const char *procfs, struct process_stats *ret) {
        struct process_stats st = {};
        uint64_t f[STAT_FIELD_RSS + 1] = {}, btime = 0;
        char path[PATH_MAX], buf[PID_STAT_MAX], *comm;
        long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        struct rlimit rl;
        int r;

        snprintf(path, sizeof(path), "%s/self/stat", procfs);
        r = read_file(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        if (ticks <= 0 || page <= 0 || stat_parse(buf, &comm, f, STAT_FIELD_RSS) < 0)
                return -EBADMSG;

        st.cpu_seconds = (double) (f[STAT_FIELD_UTIME] + f[STAT_FIELD_STIME]) / (double) ticks;
        st.virtual_bytes = f[STAT_FIELD_VSIZE];
        st.resident_bytes = f[STAT_FIELD_RSS] * (uint64_t) page;
        st.open_fds = count_fds(procfs);
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                st.max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
        if (boot_time(&btime) == 0)
                st.start_time_seconds = (double) btime + (double) f[STAT_FIELD_STARTTIME] / (double) ticks;

        *ret = st;
        return 0;
}

void process_stats_write(const struct process_stats *st, struct prom_writer *w) {
        prom_family_unit(w, "process_cpu_seconds_total", PROM_COUNTER, "seconds",
                         "Total user and system CPU time spent in seconds.");
        prom_sample_double(w, NULL, st->cpu_seconds);
        prom_family_unit(w, "process_resident_memory_bytes", PROM_GAUGE, "bytes", "Resident memory size in bytes.");
        prom_sample_u64(w, NULL, st->resident_bytes);
        prom_family_unit(w, "process_virtual_memory_bytes", PROM_GAUGE, "bytes", "Virtual memory size in bytes.");
        prom_sample_u64(w, NULL, st->virtual_bytes);
        prom_family(w, "process_open_fds", PROM_GAUGE, "Number of open file descriptors.");
        prom_sample_u64(w, NULL, st->open_fds);
        prom_family(w, "process_max_fds", PROM_GAUGE, "Maximum number of open file descriptors.");
        prom_sample_u64(w, NULL, st->max_fds);
        prom_family_unit(w, "process_start_time_seconds", PROM_GAUGE, "seconds",
                         "Start time of the process since unix epoch in seconds.");
        prom_sample_double(w, NULL, st->start_time_seconds);
}

static const char *const thread_labels[_PROCESS_THREAD_MAX] = {
        [PROCESS_THREAD_MAIN] = "main",
        [PROCESS_THREAD_COLLECTOR] = "collector",
        [PROCESS_THREAD_HTTP] = "http",
        [PROCESS_THREAD_HTTP_TIMER] = "http-timer",
        [PROCESS_THREAD_HTTP_AUTH] = "http-auth",
        [PROCESS_THREAD_PUSH] = "push",
        [PROCESS_THREAD_OTHER] = "other",
};

const char *process_thread_label(enum process_thread t) {
        return t >= 0 && t < _PROCESS_THREAD_MAX ? thread_labels[t] : NULL;
}

static enum process_thread thread_of(const char *comm, bool first) {
        static const struct {
                const char *name;
                enum process_thread t;
        } names[] = {
                { THREAD_NAME_COLLECTOR, PROCESS_THREAD_COLLECTOR },
                { THREAD_NAME_HTTP, PROCESS_THREAD_HTTP },
                { THREAD_NAME_HTTP_TIMER, PROCESS_THREAD_HTTP_TIMER },
                { THREAD_NAME_HTTP_AUTH, PROCESS_THREAD_HTTP_AUTH },
                { THREAD_NAME_PUSH, PROCESS_THREAD_PUSH },
        };

        if (first)
                return PROCESS_THREAD_MAIN;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(comm, names[i].name))
                        return names[i].t;
        return PROCESS_THREAD_OTHER;
}

struct thread_seen {
        uint64_t tid, start;       /* a tid is reused: its start time tells threads apart */
        enum process_thread t;
        double offset;             /* its CPU time when it took this name: counted under earlier names */
        double last;               /* its CPU time at the last read */
};

struct process_threads {
        pthread_mutex_t lock;
        double ended[_PROCESS_THREAD_MAX];      /* what threads no longer seen under a name used under it */
        bool shown[_PROCESS_THREAD_MAX];
        double other;                           /* the last figure of the other threads */
        struct thread_seen *seen;               /* by tid */
        size_t n_seen;
};

struct process_threads *process_threads_new(void) {
        struct process_threads *pt = xcalloc(1, sizeof(*pt));

        pthread_mutex_init(&pt->lock, NULL);
        return pt;
}

struct process_threads *process_threads_free(struct process_threads *pt) {
        if (!pt)
                return NULL;
        pthread_mutex_destroy(&pt->lock);
        free(pt->seen);
        free(pt);
        return NULL;
}

static int seen_cmp(const void *a, const void *b) {
        const struct thread_seen *x = a, *y = b;

        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * The listed threads (thread-names.h) and the first, by tid, with their
 * names' kinds; the process's CPU time and thread count from self/stat,
 * read after them (so never less than their sum). A listed thread whose
 * stat is gone ended: no longer listed.
 */
static int threads_scan(const char *procfs, struct thread_seen **ret, size_t *ret_n, double *ret_total,
                        uint64_t *ret_threads) {
        struct thread_names_entry listed[THREAD_NAMES_MAX + 1];
        char path[PATH_MAX], buf[PID_STAT_MAX], *comm;
        long ticks = sysconf(_SC_CLK_TCK);
        uint64_t pid = 0, f[STAT_FIELD_STARTTIME + 1];
        struct thread_seen *cur;
        size_t n = 0, n_listed;
        int r;

        /* The first thread's id is the process's: the first field of self/stat. */
        snprintf(path, sizeof(path), "%s/self/stat", procfs);
        if (ticks <= 0 || read_file(path, buf, sizeof(buf)) < 0 || sscanf(buf, "%" SCNu64, &pid) != 1 ||
            pid > INT32_MAX)
                return -EBADMSG;
        n_listed = thread_names_list(listed, THREAD_NAMES_MAX);
        listed[n_listed++] = (struct thread_names_entry) { .tid = (pid_t) pid };
        cur = xcalloc(n_listed, sizeof(*cur));
        for (size_t i = 0; i < n_listed; i++) {
                enum process_thread t = thread_of(listed[i].name, (uint64_t) listed[i].tid == pid);

                if (t == PROCESS_THREAD_OTHER || (i + 1 < n_listed && (uint64_t) listed[i].tid == pid))
                        continue;
                snprintf(path, sizeof(path), "%s/self/task/%d/stat", procfs, (int) listed[i].tid);
                memset(f, 0, sizeof(f));
                r = read_file(path, buf, sizeof(buf));
                if (r < 0 || stat_parse(buf, &comm, f, STAT_FIELD_STARTTIME) < 0) {
                        /* Gone: ended. Any other failure (EMFILE) leaves it listed for the next scrape. */
                        if ((r == -ENOENT || r == -ESRCH) && i + 1 < n_listed)
                                thread_names_forget(listed[i].tid);
                        continue;
                }
                cur[n++] = (struct thread_seen) {
                        .tid = (uint64_t) listed[i].tid,
                        .start = f[STAT_FIELD_STARTTIME],
                        .t = t,
                        .last = (double) (f[STAT_FIELD_UTIME] + f[STAT_FIELD_STIME]) / (double) ticks,
                };
        }
        snprintf(path, sizeof(path), "%s/self/stat", procfs);
        memset(f, 0, sizeof(f));
        if (read_file(path, buf, sizeof(buf)) < 0 || stat_parse(buf, &comm, f, STAT_FIELD_NUM_THREADS) < 0) {
                free(cur);
                return -EBADMSG;
        }
        qsort(cur, n, sizeof(*cur), seen_cmp);
        *ret = cur;
        *ret_n = n;
        *ret_total = (double) (f[STAT_FIELD_UTIME] + f[STAT_FIELD_STIME]) / (double) ticks;
        *ret_threads = f[STAT_FIELD_NUM_THREADS];
        return 0;
}

int process_threads_read(struct process_threads *pt, const char *procfs, struct process_thread_stats *ret) {
        struct thread_seen *cur = NULL;
        uint64_t threads = 0;
        size_t n = 0, j = 0;
        double total = 0, named = 0;
        int r;

        r = threads_scan(procfs, &cur, &n, &total, &threads);
        if (r < 0)
                return r;
        pthread_mutex_lock(&pt->lock);
        /* Both by tid: what was seen and is gone (or is another thread now) leaves its figure to its name. */
        for (size_t i = 0; i < pt->n_seen; i++) {
                const struct thread_seen *p = &pt->seen[i];

                while (j < n && cur[j].tid < p->tid)
                        j++;
                if (j < n && cur[j].tid == p->tid && cur[j].start == p->start && cur[j].last >= p->last) {
                        if (cur[j].t == p->t)
                                cur[j].offset = p->offset;
                        else {
                                /* Renamed: what it used until the last read stays under the old name. */
                                pt->ended[p->t] += p->last - p->offset;
                                cur[j].offset = p->last;
                        }
                } else
                        pt->ended[p->t] += p->last - p->offset;
        }
        *ret = (struct process_thread_stats) {};
        for (int t = 0; t < _PROCESS_THREAD_MAX; t++)
                ret->cpu_seconds[t] = pt->ended[t];
        for (size_t i = 0; i < n; i++) {
                ret->cpu_seconds[cur[i].t] += cur[i].last - cur[i].offset;
                ret->threads[cur[i].t]++;
                pt->shown[cur[i].t] = true;
        }
        /* The rest of the process's time is the other threads', those that ended included; never less
         * than at the read before (a named thread's time after that read and before it ended lands here). */
        for (int t = 0; t < PROCESS_THREAD_OTHER; t++)
                named += ret->cpu_seconds[t];
        pt->other = MAX(pt->other, total - named);
        ret->cpu_seconds[PROCESS_THREAD_OTHER] = pt->other;
        ret->threads[PROCESS_THREAD_OTHER] = threads > n ? (unsigned) (threads - n) : 0;
        if (pt->other > 0 || ret->threads[PROCESS_THREAD_OTHER] > 0)
                pt->shown[PROCESS_THREAD_OTHER] = true;
        memcpy(ret->shown, pt->shown, sizeof(ret->shown));
        free(pt->seen);
        pt->seen = cur;
        pt->n_seen = n;
        pthread_mutex_unlock(&pt->lock);
        return 0;
}

void process_threads_write(const struct process_thread_stats *st, struct prom_writer *w) {
        prom_family_unit(w, "armprofd_collector_busy_seconds_total", PROM_COUNTER, "seconds",
                         "CPU time (user and system) the daemon's threads have used, by thread: main, "
                         "collector, http (every answer), http-timer, http-auth, push, and other (the rest of "
                         "process_cpu_seconds_total); a named thread that ended keeps what it had used at the "
                         "scrape before.");
        for (int t = 0; t < _PROCESS_THREAD_MAX; t++)
                if (st->shown[t])
                        prom_sample_double(w, (const char *const[]) { "thread", thread_labels[t], NULL },
                                           st->cpu_seconds[t]);
}
