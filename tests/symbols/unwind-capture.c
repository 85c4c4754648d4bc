/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "unwind-capture.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "macro.h"
#include "strbuf.h"

/* 1 + 2^n pages (perf_event_open(2), "MMAP layout"): room for a few dozen 8 KiB samples between reads. */
#define CAPTURE_RING_PAGES      256U
/* The spin's run: long enough for the samples wanted at 1 kHz, killed once they are in. */
#define CAPTURE_SECONDS         "10"
#define CAPTURE_PERIOD_NS       1000000U

static void capture_read_maps(struct capture *c) {
        char path[PATH_MAX], line[CAPTURE_MAPS_LINE_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int) c->pid);
        f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                uint64_t start, end, pgoff;
                char perms[sizeof("rwxp")], name[PATH_MAX] = "";
                int n;

                /* proc(5): address perms offset dev inode pathname */
                n = sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*s %*s %4095s",
                           &start, &end, perms, &pgoff, name);
                if (n < 4)
                        continue;
                c->maps = xrealloc(c->maps, (c->n_maps + 1) * sizeof(c->maps[0]));
                c->maps[c->n_maps++] = (struct capture_mapping) {
                        .start = start,
                        .len = end - start,
                        .pgoff = pgoff,
                        .filename = xstrdup(name),
                        .exec = perms[2] == 'x',
                };
        }
        fclose(f);
}

/* One PERF_RECORD_SAMPLE, in the order perf_event_open(2) lays out the sample_type bits we asked for. */
static void capture_parse_sample(struct capture *c, const uint8_t *rec, size_t size, uint64_t regs_mask) {
        struct capture_sample s = {};
        size_t off = sizeof(struct perf_event_header);
        uint64_t v, nr;

#define TAKE(dst)                                                       \
        do {                                                            \
                if (off + sizeof(dst) > size)                           \
                        goto bad;                                       \
                memcpy(&(dst), rec + off, sizeof(dst));                 \
                off += sizeof(dst);                                     \
        } while (0)
        TAKE(s.ip);
        TAKE(s.pid);
        TAKE(s.tid);
        TAKE(v);                        /* time */
        TAKE(nr);
        if (nr > (size - off) / 8)
                goto bad;
        s.fp = xcalloc(nr ? nr : 1, sizeof(uint64_t));
        for (uint64_t i = 0; i < nr; i++) {
                TAKE(v);
                if (v >= (uint64_t) PERF_CONTEXT_MAX)
                        continue;       /* PERF_CONTEXT_USER and the other markers */
                s.fp[s.n_fp++] = v;
        }
        TAKE(s.regs_abi);
        if (s.regs_abi != PERF_SAMPLE_REGS_ABI_NONE) {
                s.regs_mask = regs_mask;
                s.nr_regs = (size_t) __builtin_popcountll(regs_mask);
                s.regs = xcalloc(s.nr_regs, sizeof(uint64_t));
                for (size_t i = 0; i < s.nr_regs; i++)
                        TAKE(s.regs[i]);
        }
        TAKE(v);                        /* stack size */
        if (v > 0) {
                uint64_t dyn;

                if (v > size - off || size - off - v < 8)
                        goto bad;
                memcpy(&dyn, rec + off + v, 8);
                if (dyn > v)
                        goto bad;
                s.stack = xmalloc(dyn ? dyn : 1);
                memcpy(s.stack, rec + off, dyn);
                s.stack_len = dyn;
        }
#undef TAKE
        c->samples = xrealloc(c->samples, (c->n_samples + 1) * sizeof(c->samples[0]));
        c->samples[c->n_samples++] = s;
        return;
bad:
        free(s.fp);
        free(s.regs);
        free(s.stack);
}

static void capture_drain(struct capture *c, struct perf_event_mmap_page *meta, size_t data_size,
                          uint64_t regs_mask, size_t want) {
        const uint8_t *data = (const uint8_t *) meta + meta->data_offset;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        uint8_t *rec = NULL;
        size_t rec_cap = 0;

        while (tail < head) {
                struct perf_event_header h;
                size_t pos = tail % data_size;

                for (size_t i = 0; i < sizeof(h); i++)
                        ((uint8_t *) &h)[i] = data[(pos + i) % data_size];
                if (h.size < sizeof(h) || h.size > head - tail)
                        break;
                if (h.size > rec_cap) {
                        rec_cap = h.size;
                        rec = xrealloc(rec, rec_cap);
                }
                for (size_t i = 0; i < h.size; i++)
                        rec[i] = data[(pos + i) % data_size];
                if (h.type == PERF_RECORD_SAMPLE && c->n_samples < want)
                        capture_parse_sample(c, rec, h.size, regs_mask);
                tail += h.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
        free(rec);
}

int capture_run(const char *program, unsigned cpu, uint64_t regs_mask, size_t want, bool keep_running,
                struct capture *ret, char *err, size_t err_len) {
        struct capture c = { .pid = -1, .running = -1 };
        struct perf_event_attr attr = {};
        char cpu_arg[DECIMAL_STR_MAX(unsigned)], line[sizeof("ready ") + DECIMAL_STR_MAX(pid_t)];
        size_t page = (size_t) sysconf(_SC_PAGESIZE), mlen = (CAPTURE_RING_PAGES + 1) * page;
        void *ring = MAP_FAILED;
        int pipefd[2], fd = -1, r = 0, status;
        pid_t child;
        FILE *out;

        if (access(program, X_OK) < 0) {
                snprintf(err, err_len, "%s: %m", program);
                return -errno;
        }
        snprintf(cpu_arg, sizeof(cpu_arg), "%u", cpu);
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        child = fork();
        if (child < 0)
                return -errno;
        if (child == 0) {
                dup2(pipefd[1], STDOUT_FILENO);
                execl(program, program, CAPTURE_SECONDS, cpu_arg, (char *) NULL);
                _exit(127);
        }
        close(pipefd[1]);
        c.pid = child;
        out = fdopen(pipefd[0], "r");
        if (!out || !fgets(line, sizeof(line), out) || strncmp(line, "ready ", 6) != 0) {
                snprintf(err, err_len, "%s did not say ready", program);
                r = -EIO;
                goto finish;
        }

        capture_read_maps(&c);

        attr.size = sizeof(attr);
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = PERF_COUNT_SW_CPU_CLOCK;
        attr.sample_period = CAPTURE_PERIOD_NS;
        attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
                           PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        attr.sample_regs_user = regs_mask;
        attr.sample_stack_user = CAPTURE_STACK_USER;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        attr.exclude_callchain_kernel = 1;
        attr.wakeup_events = 1;
        fd = (int) syscall(SYS_perf_event_open, &attr, c.pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                snprintf(err, err_len, "perf_event_open(cpu-clock, pid %d, REGS_USER|STACK_USER): %m", (int) c.pid);
                goto finish;
        }
        ring = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring == MAP_FAILED) {
                r = -errno;
                snprintf(err, err_len, "mmap of the perf ring: %m");
                goto finish;
        }
        while (c.n_samples < want) {
                struct pollfd p = { .fd = fd, .events = POLLIN };

                if (waitpid(child, &status, WNOHANG) == child) {
                        child = -1;
                        capture_drain(&c, ring, mlen - page, regs_mask, want);
                        break;
                }
                (void) poll(&p, 1, 100);
                capture_drain(&c, ring, mlen - page, regs_mask, want);
        }

finish:
        if (ring != MAP_FAILED)
                munmap(ring, mlen);
        safe_close(fd);
        if (child > 0 && keep_running && r == 0)
                c.running = child;
        else if (child > 0) {
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
        }
        if (out)
                fclose(out);
        else
                close(pipefd[0]);
        if (r < 0) {
                capture_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

void capture_done(struct capture *c) {
        int status;

        if (c->running > 0) {
                kill(c->running, SIGKILL);
                waitpid(c->running, &status, 0);
        }
        for (size_t i = 0; i < c->n_maps; i++)
                free(c->maps[i].filename);
        for (size_t i = 0; i < c->n_samples; i++) {
                free(c->samples[i].fp);
                free(c->samples[i].regs);
                free(c->samples[i].stack);
        }
        free(c->maps);
        free(c->samples);
        *c = (struct capture) { .pid = -1, .running = -1 };
}
