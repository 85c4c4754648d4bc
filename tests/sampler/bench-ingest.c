/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Benchmark of the daemon's ingestion of cpu-clock samples, end to end (not
 * a test: figures only, nothing asserted on time): samples/s on one core
 * through parse + unwind + stack intern + store, frame-pointer and DWARF
 * paths apart.
 *
 * 1. Capture: the real sampler source (collectors/sampler/sampler-source.h,
 *    unwind = dwarf, the unwinder's register mask) on an sd_event loop, with
 *    a sink that deep-copies every sample of the spin programs (callchain,
 *    registers, stack copy) and every mapping and task event, while
 *    spin-nofp (only .eh_frame) and then spin-fp (frame pointers) burn a CPU
 *    for CAPTURE_SECONDS each. The capture samples at CAPTURE_HZ, not 19 Hz,
 *    only to have a few hundred samples in seconds: a sample's shape does
 *    not depend on the frequency.
 * 2. Replay on one core (the benchmark pins itself to CPU 0): for each
 *    program and each [sampler] unwind (fp, dwarf, auto), a sample sink
 *    (daemon/sample-sink.h) on a store of the daemon's default size and the
 *    captured task map, fed the captured mappings and task events first;
 *    then, timed with CLOCK_MONOTONIC around each sample_sink_samples()
 *    call (batches of SAMPLER_RING_BATCH, as the ring hands them on):
 *      - the first pass (cold: the unwinder opens and reports the files;
 *        printed as what it took more than the fastest pass),
 *      - PASSES more, each in an epoch of its own (the epoch end, untimed:
 *        every pass interns its stacks afresh, as each epoch of the daemon
 *        does); the fastest is printed, the least disturbed by the other
 *        tasks of the machine.
 *    The frames per stack are read back from the store (store_query_stacks()).
 * 3. The parse step: the samples re-encoded as the PERF_RECORD_SAMPLE
 *    records the kernel writes for the source's attr (perf_event_open(2),
 *    perf_output_sample(): same fields, order and sizes; the bytes of the
 *    8 KiB stack copy past its dyn_size, which the kernel leaves unwritten,
 *    are zeros here), played into a 256 KiB data ring on ordinary memory
 *    (tests/perf/ring-kernel.h) and drained by the source's ring reader
 *    (collectors/sampler/sampler-ring.h: the shared perf-record parser and
 *    the process table): PASSES times into a sink that does nothing (the
 *    parse alone) and PASSES times into each sample sink above (parse +
 *    unwind + intern + store: the fastest pass and the mean). Those are not
 *    the ring's own bytes (the source keeps its rings to itself), but the
 *    bytes a kernel writes for these samples.
 *
 * Prints samples/s and us/sample for each path and program, the frames per
 * stack, the ratio DWARF / fp (the baseline "fp": spin-fp's samples through
 * unwind = fp, in the same run), and what the DWARF path costs at 19 Hz on
 * every CPU of this machine.
 *
 *   bench-ingest SPIN-FP SPIN-NOFP
 *
 * Needs root (CPU-wide perf events): exits 77 without, or when the kernel
 * gives no cpu-clock samples with registers and stacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "collector.h"
#include "config.h"
#include "macro.h"
#include "ring-kernel.h"
#include "sample-sink.h"
#include "proc-table.h"
#include "sampler-ring.h"
#include "sampler-source.h"
#include "source.h"
#include "store.h"
#include "strbuf.h"
#include "task-map.h"
#include "unwind.h"

/* A prime, like the daemon's 19 Hz: ~2000 samples of a program in CAPTURE_SECONDS. */
#define CAPTURE_HZ      997
#define CAPTURE_SECONDS "2"
/* Samples kept of each program. */
#define KEEP            1024
/* Mapping and task events kept: everything the machine did during the capture. */
#define EVENTS_MAX      65536
/* Timed passes after the cold one. */
#define PASSES          20
/* The daemon's default sampling frequency per CPU ([sampler] frequency). */
#define DAEMON_HZ       19.0
#define RING_BYTES      SAMPLER_DEFAULT_DATA_BYTES

enum program { SPIN_FP, SPIN_NOFP, _PROGRAM_MAX };

static const char *const program_name[_PROGRAM_MAX] = { "spin-fp", "spin-nofp" };

struct program_samples {
        uint32_t pid;
        struct source_sample *s;        /* deep copies: their arrays are ours */
        size_t n, seen;
        /* Re-encoded PERF_RECORD_SAMPLE records, back to back. */
        uint8_t *records;
        size_t records_len;
};

struct event {
        bool is_mapping;
        struct source_mapping m;
        struct source_task t;
};

struct capture {
        struct program_samples p[_PROGRAM_MAX];
        struct event *events;
        size_t n_events, events_dropped;
        uint64_t other_samples, cgroup_samples;
        struct task_map *tasks;
        struct source_status status;
};

static double now_s(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void *memdup_or_null(const void *p, size_t n) {
        void *q;

        if (!p || n == 0)
                return NULL;
        q = xmalloc(n);
        memcpy(q, p, n);
        return q;
}

static void on_samples(void *userdata, const struct source_sample *s, size_t n) {
        struct capture *c = userdata;

        for (size_t i = 0; i < n; i++) {
                struct program_samples *p = NULL;
                struct source_sample *g;

                for (size_t j = 0; j < _PROGRAM_MAX; j++)
                        if (c->p[j].pid != 0 && s[i].pid == c->p[j].pid)
                                p = &c->p[j];
                if (!p) {
                        c->other_samples++;
                        continue;
                }
                p->seen++;
                if (p->n == KEEP)
                        continue;
                c->cgroup_samples += s[i].cgroup_id != 0;
                g = &p->s[p->n++];
                *g = s[i];
                g->callchain = memdup_or_null(s[i].callchain, s[i].nr_callchain * sizeof(uint64_t));
                g->regs = memdup_or_null(s[i].regs, s[i].nr_regs * sizeof(uint64_t));
                g->stack = memdup_or_null(s[i].stack, s[i].stack_len);
        }
}

static struct event *new_event(struct capture *c) {
        if (c->n_events == EVENTS_MAX) {
                c->events_dropped++;
                return NULL;
        }
        return &c->events[c->n_events++];
}

static void on_mapping(void *userdata, const struct source_mapping *m) {
        struct event *e = new_event(userdata);

        if (!e)
                return;
        *e = (struct event) { .is_mapping = true, .m = *m };
        e->m.filename = m->filename ? xstrdup(m->filename) : NULL;
        e->m.build_id = memdup_or_null(m->build_id, m->build_id_len);
        if (!e->m.build_id)
                e->m.build_id_len = 0;
}

static void on_task(void *userdata, const struct source_task *t) {
        struct event *e = new_event(userdata);

        if (!e)
                return;
        *e = (struct event) { .t = *t };
        e->t.comm = t->comm ? xstrdup(t->comm) : NULL;
        e->t.cgroup_path = t->cgroup_path ? xstrdup(t->cgroup_path) : NULL;
}

static void pin(unsigned cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0)
                printf("note: cannot pin to CPU %u: %s\n", cpu, strerror(errno));
}

/* Run exe pinned to cpu until it exits, the loop dispatching the source meanwhile; its pid in *ret_pid first. */
static int run_spin(sd_event *e, const char *exe, unsigned cpu, uint32_t *ret_pid) {
        char cpu_arg[DECIMAL_STR_MAX(unsigned)], line[64];
        int fds[2], k, status = 0;
        FILE *out;
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        snprintf(cpu_arg, sizeof(cpu_arg), "%u", cpu);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                dup2(fds[1], STDOUT_FILENO);
                execl(exe, exe, CAPTURE_SECONDS, cpu_arg, (char *) NULL);
                _exit(127);
        }
        /* Before the child's first sample can be read: the loop runs only below. */
        *ret_pid = (uint32_t) pid;
        close(fds[1]);
        out = fdopen(fds[0], "r");
        if (!out || !fgets(line, sizeof(line), out) || strncmp(line, "ready ", 6) != 0)
                printf("note: %s did not say it was ready\n", exe);
        for (;;) {
                siginfo_t si = {};

                k = sd_event_run(e, 100 * USEC_PER_MSEC);
                if (k < 0)
                        break;
                if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == pid)
                        break;
        }
        if (out)
                fclose(out);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                printf("note: %s did not exit cleanly (status %d)\n", exe, status);
        return k < 0 ? k : 0;
}

static int capture(const char *const exe[_PROGRAM_MAX], unsigned spin_cpu, struct capture *c) {
        const struct source_sink sink = {
                .userdata = c,
                .samples = on_samples,
                .mapping = on_mapping,
                .task = on_task,
        };
        const struct sampler_options o = {
                .frequency = CAPTURE_HZ,
                .unwind = SAMPLER_UNWIND_DWARF,
                .regs_mask = unwind_regs_mask(),
                /* Room for a second of samples at CAPTURE_HZ of ~8.6 KiB each, read every 100 ms. */
                .data_bytes = 4 * 1024 * 1024,
                .drain_interval_usec = 100 * USEC_PER_MSEC,
        };
        struct source *src = NULL;
        sd_event *e = NULL;
        int k;

        for (size_t i = 0; i < _PROGRAM_MAX; i++)
                c->p[i].s = xcalloc(KEEP, sizeof(struct source_sample));
        c->events = xcalloc(EVENTS_MAX, sizeof(struct event));
        k = task_map_new(&c->tasks);
        if (k < 0)
                return k;
        k = sd_event_new(&e);
        if (k < 0)
                return k;
        k = sampler_source_new(&o, &sink, c->tasks, &src);
        if (k >= 0)
                k = source_start(src, e, NULL);
        if (k < 0) {
                if (src)
                        source_status(src, &c->status);
                source_free(src);
                sd_event_unref(e);
                return k;
        }
        /* spin-nofp first: its samples are the DWARF path's. */
        k = run_spin(e, exe[SPIN_NOFP], spin_cpu, &c->p[SPIN_NOFP].pid);
        if (k >= 0)
                k = run_spin(e, exe[SPIN_FP], spin_cpu, &c->p[SPIN_FP].pid);
        /* What the rings still hold. */
        while (source_drain(src, SIZE_MAX) > 0)
                ;
        source_status(src, &c->status);
        source_free(src);
        sd_event_unref(e);
        return k;
}

static void capture_done(struct capture *c) {
        for (size_t i = 0; i < _PROGRAM_MAX; i++) {
                for (size_t j = 0; j < c->p[i].n; j++) {
                        free((void *) c->p[i].s[j].callchain);
                        free((void *) c->p[i].s[j].regs);
                        free((void *) c->p[i].s[j].stack);
                }
                free(c->p[i].s);
                free(c->p[i].records);
        }
        for (size_t i = 0; i < c->n_events; i++) {
                free((void *) c->events[i].m.filename);
                free((void *) c->events[i].m.build_id);
                free((void *) c->events[i].t.comm);
                free((void *) c->events[i].t.cgroup_path);
        }
        free(c->events);
        task_map_free(c->tasks);
        source_status_done(&c->status);
}

/* ---- The records a kernel writes for these samples ---------------------- */

/* The sampler source's attr for unwind = dwarf (sampler-source.c fill_attr()), as far as a sample's layout goes. */
static void sample_attr(bool cgroup, struct perf_event_attr *ret) {
        *ret = (struct perf_event_attr) {
                .size = sizeof(*ret),
                .type = PERF_TYPE_SOFTWARE,
                .config = PERF_COUNT_SW_CPU_CLOCK,
                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                               PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
                               PERF_SAMPLE_STACK_USER | (cgroup ? PERF_SAMPLE_CGROUP : 0),
                .sample_regs_user = unwind_regs_mask(),
                .sample_stack_user = SAMPLER_DEFAULT_STACK_BYTES,
                .sample_id_all = 1,
                .sample_max_stack = SAMPLER_DEFAULT_MAX_STACK,
        };
}

/* PERF_RECORD_SAMPLE in perf_event_open(2)'s order (kernel/events/core.c perf_output_sample()). */
static size_t encode_sample(const struct perf_event_attr *a, const struct source_sample *s, uint8_t *buf) {
        size_t n = sizeof(struct perf_event_header);
        struct perf_event_header h;
        uint64_t v;

#define PUT(x) do { v = (x); memcpy(buf + n, &v, 8); n += 8; } while (0)
        PUT(s->ip);
        PUT((uint64_t) s->tid << 32 | s->pid);
        PUT(s->time_ns);
        PUT(s->cpu);                    /* {u32 cpu; u32 res} */
        PUT(s->period);
        PUT(s->nr_callchain);
        if (s->nr_callchain > 0)
                memcpy(buf + n, s->callchain, s->nr_callchain * 8);
        n += s->nr_callchain * 8;
        PUT(s->regs_abi);
        if (s->nr_regs > 0)
                memcpy(buf + n, s->regs, s->nr_regs * 8);
        n += s->nr_regs * 8;
        /* The kernel copies the stack only with user registers (perf_sample_ustack_size()). */
        if (s->regs_abi == PERF_SAMPLE_REGS_ABI_NONE)
                PUT(0);
        else {
                PUT(a->sample_stack_user);
                memset(buf + n, 0, a->sample_stack_user);
                /* dyn_size 0 (nothing of the stack was readable) comes with no bytes: stack is NULL. */
                if (s->stack_len > 0)
                        memcpy(buf + n, s->stack, MIN(s->stack_len, (size_t) a->sample_stack_user));
                n += a->sample_stack_user;
                PUT(s->stack_len);
        }
        if (a->sample_type & PERF_SAMPLE_CGROUP)
                PUT(s->cgroup_id);
#undef PUT
        h = (struct perf_event_header) { .type = PERF_RECORD_SAMPLE, .size = (uint16_t) n };
        memcpy(buf, &h, sizeof(h));
        return n;
}

static void encode(const struct perf_event_attr *a, struct program_samples *p) {
        /* header, 5 fields, nr, abi, stack size and dyn_size, cgroup: 11 words; the arrays; the stack copy. */
        size_t max = 0;

        for (size_t i = 0; i < p->n; i++)
                max += 8 * (11 + p->s[i].nr_callchain + p->s[i].nr_regs) + a->sample_stack_user;
        p->records = xmalloc(max);
        p->records_len = 0;
        for (size_t i = 0; i < p->n; i++)
                p->records_len += encode_sample(a, &p->s[i], p->records + p->records_len);
}

/*
 * One pass of the records through a data ring and its reader into `sink`:
 * the kernel's writes untimed, each drain timed. The ring and its process
 * table live across passes, as a CPU's do.
 */
struct ring_play {
        struct kernel k;
        struct sampler_ring r;
        struct proc_table *procs;
        struct task_map *scratch;       /* the table's: the sink's task map is the captured one */
        struct sampler_cpu_stats st;
};

static void ring_play_init(struct ring_play *rp, const struct perf_event_attr *a, const struct source_sink *sink) {
        *rp = (struct ring_play) {};
        kernel_init(&rp->k, RING_BYTES, 4096);
        /* No /proc to read: the processes are gone, and the process table's reads are not the ring's cost. */
        if (task_map_new(&rp->scratch) < 0 ||
            proc_table_new("/nonexistent", "/nonexistent", sink, rp->scratch, &rp->procs) < 0 ||
            sampler_ring_init(&rp->r, &rp->k.page, rp->k.data, RING_BYTES, a, sink, rp->procs, &rp->st) < 0)
                abort();
}

static void ring_play_done(struct ring_play *rp) {
        sampler_ring_done(&rp->r);
        proc_table_free(rp->procs);
        task_map_free(rp->scratch);
        kernel_free(&rp->k);
}

static double ring_pass(struct ring_play *rp, const struct program_samples *p) {
        size_t at = 0;
        double t = 0, t0;

        while (at < p->records_len) {
                while (at < p->records_len) {
                        struct perf_event_header h;

                        memcpy(&h, p->records + at, sizeof(h));
                        if (!kernel_record_raw(&rp->k, p->records + at, h.size))
                                break;
                        at += h.size;
                }
                kernel_publish(&rp->k);
                t0 = now_s();
                (void) sampler_ring_drain(&rp->r, 0);
                t += now_s() - t0;
        }
        return t;
}

static void count_samples(void *userdata, const struct source_sample *s, size_t n) {
        *(uint64_t *) userdata += n;
}

static void to_sample_sink(void *userdata, const struct source_sample *s, size_t n) {
        sample_sink_samples(userdata, s, n);
}

/* ---- Replay ---------------------------------------------------------------- */

struct result {
        double cold_s;                  /* the first pass: the unwinder opens and reports the files */
        double sink_best_s;             /* the fastest of PASSES passes through sample_sink_samples() */
        double ring_best_s, ring_s;     /* from the ring's bytes: the fastest pass, all PASSES */
        double frames;                  /* frames per stored sample */
        size_t stacks;                  /* distinct stacks of one pass */
        uint64_t stored, dropped;       /* of one pass */
        struct sample_sink_stats ss;    /* after everything */
};

/* The samples in the ring's batches; the time spent in the sink. */
static double batches(struct sample_sink *sink, const struct program_samples *p) {
        double t = 0, t0;

        for (size_t i = 0; i < p->n; i += SAMPLER_RING_BATCH) {
                t0 = now_s();
                sample_sink_samples(sink, p->s + i, MIN((size_t) SAMPLER_RING_BATCH, p->n - i));
                t += now_s() - t0;
        }
        return t;
}

static void replay(const struct capture *c, const struct program_samples *p, enum config_unwind unwind,
                   const struct perf_event_attr *a, struct result *ret) {
        struct store_options so;
        struct store_snapshot *snap;
        struct store_stacks_result sr = {};
        struct sample_sink *sink = NULL;
        struct store *store = NULL;
        struct source_sink rs;
        struct ring_play rp;
        struct config cfg;
        uint64_t epoch = 10 * NSEC_PER_SEC, now = epoch, frames = 0, count = 0;

        *ret = (struct result) {};
        config_init(&cfg);
        cfg.sampler.unwind = unwind;
        collector_store_options(&cfg, &so);
        if (store_new(&so, 0, &store) < 0 ||
            sample_sink_new(&(struct sample_sink_options) {
                                    .unwind = unwind,
                                    .kernel_addresses = false,
                                    .max_stack = SAMPLER_DEFAULT_MAX_STACK,
                            },
                            store, c->tasks, &sink) < 0)
                abort();
        for (size_t i = 0; i < c->n_events; i++) {
                if (c->events[i].is_mapping)
                        sample_sink_mapping(sink, &c->events[i].m);
                else
                        sample_sink_task(sink, &c->events[i].t);
        }

        ret->cold_s = batches(sink, p);
        store_epoch_end(store, now);
        now += epoch;
        snap = store_snapshot_get(store);
        if (store_query_stacks(snap, STORE_WINDOW_ALL, STORE_PID_ANY, NULL, &sr) == 0) {
                for (size_t i = 0; i < sr.n; i++) {
                        frames += sr.stacks[i].count * sr.stacks[i].n_frames;
                        count += sr.stacks[i].count;
                }
                ret->stacks = sr.n;
                ret->stored = count;
                ret->dropped = sr.dropped;
                ret->frames = count ? (double) frames / (double) count : 0;
                store_stacks_result_done(&sr);
        }
        store_snapshot_unref(snap);

        ret->sink_best_s = 1e30;
        for (int pass = 0; pass < PASSES; pass++) {
                double t = batches(sink, p); /* MIN() evaluates its arguments twice */

                ret->sink_best_s = MIN(ret->sink_best_s, t);
                store_epoch_end(store, now);
                now += epoch;
        }

        rs = (struct source_sink) { .userdata = sink, .samples = to_sample_sink };
        ring_play_init(&rp, a, &rs);
        ret->ring_best_s = 1e30;
        for (int pass = 0; pass < PASSES; pass++) {
                double t = ring_pass(&rp, p);

                ret->ring_s += t;
                ret->ring_best_s = MIN(ret->ring_best_s, t);
                store_epoch_end(store, now);
                now += epoch;
        }
        ring_play_done(&rp);

        sample_sink_get_stats(sink, &ret->ss);
        sample_sink_free(sink);
        store_free(store);
}

static double per_s(size_t n, int passes, double t) {
        return t > 0 ? (double) n * passes / t : 0;
}

static double us_each(size_t n, int passes, double t) {
        return n ? t / ((double) n * passes) * 1e6 : 0;
}

int main(int argc, char **argv) {
        static const struct {
                const char *name;
                enum config_unwind unwind;
        } modes[] = {
                { "fp", CONFIG_UNWIND_FP },
                { "dwarf", CONFIG_UNWIND_DWARF },
                { "auto", CONFIG_UNWIND_AUTO },
        };
        struct result res[_PROGRAM_MAX][ELEMENTSOF(modes)];
        const char *exe[_PROGRAM_MAX];
        struct perf_event_attr attr;
        struct capture c = {};
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned spin_cpu = ncpu > 1 ? 1 : 0;
        double parse_best_s[_PROGRAM_MAX] = {}, fp_us, dwarf_us;
        int k;

        if (argc != 3) {
                fprintf(stderr, "usage: %s SPIN-FP SPIN-NOFP\n", argv[0]);
                return 2;
        }
        exe[SPIN_FP] = argv[1];
        exe[SPIN_NOFP] = argv[2];
        if (geteuid() != 0) {
                printf("SKIP: not root: CPU-wide perf events need it\n");
                return 77;
        }
        if (unwind_regs_mask() == 0) {
                printf("SKIP: no DWARF unwinding on this architecture\n");
                return 77;
        }
        /* One core for everything timed; spin on another where there is one. */
        pin(0);

        k = capture(exe, spin_cpu, &c);
        if (k < 0 || c.p[SPIN_FP].n == 0 || c.p[SPIN_NOFP].n == 0) {
                printf("SKIP: no samples of spin captured (%s%s%s)\n", k < 0 ? strerror(-k) : "none came",
                       c.status.reason[0] ? ": " : "", c.status.reason);
                capture_done(&c);
                return 77;
        }
        printf("bench-ingest: captured with the sampler source at %d Hz (cpu-clock, unwind = dwarf, %d regs, "
               "%u B stack copies), spin pinned to CPU %u for %s s each:\n",
               CAPTURE_HZ, __builtin_popcountll(unwind_regs_mask()), SAMPLER_DEFAULT_STACK_BYTES, spin_cpu,
               CAPTURE_SECONDS);
        for (size_t i = 0; i < _PROGRAM_MAX; i++)
                printf("  %-9s pid %-7" PRIu32 " %5zu samples seen, %4zu kept\n", program_name[i], c.p[i].pid,
                       c.p[i].seen, c.p[i].n);
        printf("  %" PRIu64 " samples of other tasks (idle...), not kept; %zu mapping and task events kept "
               "(%zu dropped); %" PRIu64 " kept samples carry a cgroup id\n",
               c.other_samples, c.n_events, c.events_dropped, c.cgroup_samples);

        sample_attr(c.cgroup_samples > 0, &attr);
        for (size_t i = 0; i < _PROGRAM_MAX; i++) {
                uint64_t out = 0;
                struct source_sink ns = { .userdata = &out, .samples = count_samples };
                struct ring_play rp;

                encode(&attr, &c.p[i]);
                ring_play_init(&rp, &attr, &ns);
                parse_best_s[i] = 1e30;
                for (int pass = 0; pass < PASSES; pass++) {
                        double t = ring_pass(&rp, &c.p[i]); /* MIN() evaluates its arguments twice */

                        parse_best_s[i] = MIN(parse_best_s[i], t);
                }
                if (rp.st.bad_records > 0 || out != c.p[i].n * PASSES)
                        printf("note: %s: %" PRIu64 " records did not parse, %" PRIu64 " of %zu samples came "
                               "out of the ring\n", program_name[i], rp.st.bad_records, out, c.p[i].n * PASSES);
                ring_play_done(&rp);
                for (size_t m = 0; m < ELEMENTSOF(modes); m++)
                        replay(&c, &c.p[i], modes[m].unwind, &attr, &res[i][m]);
        }

        printf("\nreplay on CPU 0, one thread: per set, a cold pass, then %d passes through the sink and %d from "
               "the records' bytes, an epoch each; a store of the daemon's default size\n", PASSES, PASSES);
        printf("%-9s %-6s %8s | %12s %7s | %12s %7s %7s | %6s %6s %6s\n", "samples", "unwind", "cold", "sink best",
               "", "sink+parse", "", "mean", "frames", "stacks", "cfi ok");
        printf("%-9s %-6s %8s | %12s %7s | %12s %7s %7s |\n", "", "", "ms", "samples/s", "us", "samples/s", "us",
               "us");
        for (size_t i = 0; i < _PROGRAM_MAX; i++)
                for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                        const struct result *r = &res[i][m];
                        char ok[16] = "-";

                        if (modes[m].unwind != CONFIG_UNWIND_FP && r->ss.samples > 0)
                                snprintf(ok, sizeof(ok), "%.0f%%",
                                         100.0 * (double) (r->ss.unwound - r->ss.cfi_failed) / (double) r->ss.samples);
                        printf("%-9s %-6s %8.3f | %12.0f %7.2f | %12.0f %7.2f %7.2f | %6.2f %6zu %6s%s\n",
                               program_name[i], modes[m].name, (r->cold_s - r->sink_best_s) * 1e3,
                               per_s(c.p[i].n, 1, r->sink_best_s), us_each(c.p[i].n, 1, r->sink_best_s),
                               per_s(c.p[i].n, 1, r->ring_best_s), us_each(c.p[i].n, 1, r->ring_best_s),
                               us_each(c.p[i].n, PASSES, r->ring_s), r->frames, r->stacks, ok,
                               i == SPIN_FP && m == 0 ? "  <- baseline \"fp\"" : "");
                }
        printf("cold: what the first pass took more than the fastest (dwarf, auto: the unwinder opens and "
               "reports the files); sink: sample_sink_samples() (unwind + stack intern + store), the fastest "
               "pass; sink+parse: the same from the records' bytes through the ring reader, the fastest pass "
               "and the mean; frames: per stored sample, read back from the store; stacks: distinct in an "
               "epoch; cfi ok: samples whose CFI walk went past the pc\n");
        for (size_t i = 0; i < _PROGRAM_MAX; i++)
                printf("parse alone (ring reader, perf-record parser, process table), %-9s %10.0f samples/s "
                       "%6.3f us/sample, %zu B/record (fastest pass)\n", program_name[i],
                       per_s(c.p[i].n, 1, parse_best_s[i]), us_each(c.p[i].n, 1, parse_best_s[i]),
                       c.p[i].records_len / c.p[i].n);

        /*
         * Each path on the binaries it is for: frame pointers on spin-fp, CFI on
         * spin-nofp. The fastest passes first: on a shared machine the mean
         * moves with what else runs.
         */
        fp_us = us_each(c.p[SPIN_FP].n, 1, res[SPIN_FP][0].ring_best_s);
        dwarf_us = us_each(c.p[SPIN_NOFP].n, 1, res[SPIN_NOFP][1].ring_best_s);
        printf("\nDWARF / fp (baseline \"fp\"), parse included, fastest passes: %.1fx the time per sample (dwarf "
               "on spin-nofp %.2f us, fp on spin-fp %.2f us); on the same samples (spin-nofp): %.1fx; means: %.1fx\n",
               fp_us > 0 ? dwarf_us / fp_us : 0, dwarf_us, fp_us,
               res[SPIN_NOFP][0].ring_best_s > 0 ? res[SPIN_NOFP][1].ring_best_s / res[SPIN_NOFP][0].ring_best_s : 0,
               res[SPIN_FP][0].ring_s > 0 ? (res[SPIN_NOFP][1].ring_s / (double) c.p[SPIN_NOFP].n) /
                                                    (res[SPIN_FP][0].ring_s / (double) c.p[SPIN_FP].n)
                                          : 0);
        fp_us = us_each(c.p[SPIN_FP].n, PASSES, res[SPIN_FP][0].ring_s);
        dwarf_us = us_each(c.p[SPIN_NOFP].n, PASSES, res[SPIN_NOFP][1].ring_s);
        printf("at %.0f Hz on each of %ld busy CPUs, ingestion takes %.4f%% of one CPU by dwarf, %.4f%% by fp "
               "(the mean times; the whole daemon's CPU: tests/sampler/bench-sampler.py)\n", DAEMON_HZ, ncpu,
               DAEMON_HZ * (double) ncpu * dwarf_us / 1e6 * 100.0, DAEMON_HZ * (double) ncpu * fp_us / 1e6 * 100.0);
        capture_done(&c);
        return 0;
}
