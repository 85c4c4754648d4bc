/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sample-sink.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "log.h"
#include "macro.h"
#include "perf-record.h"
#include "store.h"
#include "strbuf.h"
#include "task-map.h"
#include "unwind.h"

/* A unit name is at most 255 bytes (systemd's UNIT_NAME_MAX); a container id 64 hex digits. */
#define SERVICE_MAX 256

/* What the table knows of one process's cgroup. */
struct pid_slot {
        uint32_t pid;
        bool used;
        uint64_t cgroup_id;             /* the sample's id it was named from; 0: from /proc */
        char *path;                     /* NULL: not known (the process was gone) */
        char service[SERVICE_MAX];
};

struct sample_sink {
        struct sample_sink_options opts;
        struct store *store;
        struct task_map *tasks;
        struct unwind *unwind;
        struct cgroup_map *cgroups;

        /* Scratch, one sample at a time (collector thread). */
        uint64_t *kernel, *user, *cfi, *merged, *frames;
        size_t max;

        struct sample_sink_stats counting; /* collector thread; copied to stats after each batch */

        pthread_mutex_t lock;           /* guards pids' contents and stats, for readers */
        struct pid_slot pids[SAMPLE_SINK_MAX_PIDS];
        struct sample_sink_stats stats;
};

static uint32_t pid_hash(uint32_t pid) {
        /* Fibonacci hashing, as the task map does: sequential pids spread. */
        return (uint32_t) ((pid * UINT32_C(2654435769)) >> 20) % SAMPLE_SINK_MAX_PIDS;
}

int sample_sink_new(const struct sample_sink_options *o, struct store *store, struct task_map *tasks,
                    struct sample_sink **ret) {
        struct sample_sink *s = xcalloc(1, sizeof(*s));
        int k;

        s->opts = *o;
        s->store = store;
        s->tasks = tasks;
        s->max = MAX(o->max_stack, 1U);
        s->kernel = xcalloc(s->max, sizeof(uint64_t));
        s->user = xcalloc(s->max, sizeof(uint64_t));
        s->cfi = xcalloc(s->max, sizeof(uint64_t));
        s->merged = xcalloc(s->max, sizeof(uint64_t));
        s->frames = xcalloc(2 * s->max, sizeof(uint64_t));
        pthread_mutex_init(&s->lock, NULL);
        if (o->unwind != CONFIG_UNWIND_FP)
                s->unwind = unwind_new(&(struct unwind_limits) { .max_frames = s->max });
        if (s->unwind && unwind_pac_mask(s->unwind) != 0)
                log_info("sampler: return addresses signed by pointer authentication have bits 0x%016" PRIx64
                         " cleared", unwind_pac_mask(s->unwind));
        k = cgroup_map_new(SAMPLE_SINK_MAX_CGROUPS, &s->cgroups);
        if (k < 0) {
                sample_sink_free(s);
                return k;
        }
        /* The cgroups that exist already: PERF_RECORD_CGROUP only tells of new ones. */
        k = cgroup_map_scan(s->cgroups, o->cgroupfs_root);
        if (k < 0)
                log_info_errno(k, "sampler: cannot list the cgroups, services are named from /proc: %m");
        *ret = s;
        return 0;
}

struct sample_sink *sample_sink_free(struct sample_sink *s) {
        if (!s)
                return NULL;
        s->unwind = unwind_free(s->unwind);
        s->cgroups = cgroup_map_free(s->cgroups);
        for (size_t i = 0; i < SAMPLE_SINK_MAX_PIDS; i++)
                free(s->pids[i].path);
        free(s->kernel);
        free(s->user);
        free(s->cfi);
        free(s->merged);
        free(s->frames);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

/*
 * The process's cgroup, named once per process (and again when a sample
 * says it moved): the sample's cgroup id through the map, else /proc.
 */
static const struct pid_slot *who(struct sample_sink *s, uint32_t pid, uint64_t cgroup_id) {
        struct pid_slot *slot = &s->pids[pid_hash(pid)];
        char buf[4096], service[SERVICE_MAX] = "";
        const char *path = NULL;
        bool evicted;

        if (slot->used && slot->pid == pid && (cgroup_id == 0 || slot->cgroup_id == cgroup_id)) {
                /* Unnamed for an id nobody had announced yet: the map again (a gone process's /proc is not read again). */
                if (slot->path || cgroup_id == 0)
                        return slot;
                path = cgroup_map_path(s->cgroups, cgroup_id);
                if (!path)
                        return slot;
        }
        if (cgroup_id && !path)
                path = cgroup_map_path(s->cgroups, cgroup_id);
        if (!path && cgroup_of_pid(s->opts.procfs_root, pid, buf, sizeof(buf)) >= 0)
                path = buf;
        if (path)
                (void) cgroup_service(path, service, sizeof(service));

        evicted = slot->used && slot->pid != pid;
        pthread_mutex_lock(&s->lock);
        free(slot->path);
        *slot = (struct pid_slot) { .pid = pid, .used = true, .cgroup_id = cgroup_id,
                                    .path = path ? xstrdup(path) : NULL };
        memcpy(slot->service, service, sizeof(service));
        pthread_mutex_unlock(&s->lock);
        s->counting.cgroup_evictions += evicted;
        return slot;
}

/* The callchain's kernel and user parts, leaf first, each at most s->max. */
static void split_callchain(struct sample_sink *s, const struct source_sample *x, size_t *ret_nk, size_t *ret_nu,
                            bool *ret_kernel) {
        uint64_t ctx = 0;
        size_t nk = 0, nu = 0;
        bool first = true;

        *ret_kernel = false;
        for (size_t i = 0; i < x->nr_callchain; i++) {
                uint64_t v = x->callchain[i];

                if (perf_callchain_is_context(v)) {
                        ctx = v;
                        if (first)
                                *ret_kernel = v == (uint64_t) PERF_CONTEXT_KERNEL;
                        first = false;
                        continue;
                }
                if (ctx == (uint64_t) PERF_CONTEXT_KERNEL && nk < s->max)
                        s->kernel[nk++] = v;
                else if (ctx == (uint64_t) PERF_CONTEXT_USER && nu < s->max)
                        s->user[nu++] = v;
        }
        if (x->nr_callchain == 0) {
                /* No callchain: the sampled ip alone; kernel addresses have the top bit set (x86-64, arm64). */
                *ret_kernel = x->ip >> 63;
                if (*ret_kernel)
                        s->kernel[nk++] = x->ip;
                else
                        s->user[nu++] = x->ip;
        }
        *ret_nk = nk;
        *ret_nu = nu;
}

/* The user part by the configured unwinding: into s->frames at `at`, returns the count. */
static size_t user_frames(struct sample_sink *s, const struct source_sample *x, size_t nu, size_t at) {
        const uint64_t *src = s->user;
        size_t n = nu;

        if (s->unwind && x->regs && x->nr_regs && x->stack_len) {
                int k = unwind_user(s->unwind,
                                    &(struct unwind_input) {
                                            .pid = x->pid, .tid = x->tid, .regs_abi = x->regs_abi,
                                            .regs_mask = x->regs_mask, .regs = x->regs, .nr_regs = x->nr_regs,
                                            .stack = x->stack, .stack_len = x->stack_len,
                                    },
                                    s->cfi, s->max);

                if (k > 0) {
                        s->counting.unwound++;
                        if (s->opts.unwind == CONFIG_UNWIND_AUTO) {
                                n = unwind_merge_fp(s->cfi, (size_t) k, unwind_last_whole(s->unwind), s->user, nu,
                                                    s->merged, s->max);
                                src = s->merged;
                        } else {
                                n = (size_t) k;
                                src = s->cfi;
                        }
                }
        }
        memcpy(s->frames + at, src, n * sizeof(uint64_t));
        return n;
}

/*
 * The user part of s->frames, [at, n): no frame of it may lie in the
 * kernel's half of the address space (top bit set on x86-64 and arm64:
 * Documentation/arch/x86/x86_64/mm.rst, Documentation/arch/arm64/memory.rst),
 * which is never the process's own code, whatever the walk returned.
 * The first user frame there is the pc the process was at: x86-64's
 * vsyscall page, a call the kernel emulates (arch/x86/entry/vsyscall/
 * vsyscall_64.c), so a kernel frame by what it is. A caller there is a
 * frame-pointer or CFI walk gone into garbage (a saved return address that
 * was not one), and every frame it led to is garbage too: the stack ends
 * before it. Returns the frames kept.
 */
static size_t cut_kernel_half(struct sample_sink *s, size_t at, size_t n) {
        size_t from = at;

        if (at < n && s->frames[at] >> 63) {
                s->counting.user_kernel_half++;
                if (s->opts.kernel_addresses)
                        from = at + 1;
                else if (at > 0 && s->frames[at - 1] == STORE_KERNEL_FRAME) {
                        /* One "[kernel]" for the whole run, as for the kernel part. */
                        memmove(&s->frames[at], &s->frames[at + 1], (n - at - 1) * sizeof(uint64_t));
                        n--;
                } else {
                        s->frames[at] = STORE_KERNEL_FRAME;
                        from = at + 1;
                }
        }
        for (size_t i = from; i < n; i++)
                if (s->frames[i] >> 63) {
                        s->counting.user_kernel_half++;
                        return i;
                }
        return n;
}

static void add_one(struct sample_sink *s, const struct source_sample *x) {
        const struct task_info *p, *t;
        const struct pid_slot *slot = NULL;
        size_t nk, nu, n = 0;
        bool kernel;

        /*
         * pid 0 is each CPU's idle task: cpu-clock fires on idle CPUs too.
         * A CPU profile is of what ran (Go's, and the fleet profilers', leave
         * idle out); the samples are counted.
         */
        if (x->pid == 0) {
                s->counting.idle++;
                return;
        }
        split_callchain(s, x, &nk, &nu, &kernel);
        if (nk > 0) {
                if (s->opts.kernel_addresses) {
                        memcpy(s->frames, s->kernel, nk * sizeof(uint64_t));
                        n = nk;
                } else
                        s->frames[n++] = STORE_KERNEL_FRAME;
        }
        n = cut_kernel_half(s, n, n + user_frames(s, x, nu, n));
        if (n == 0) {
                /*
                 * The markers and no frame: a KVM vCPU thread sampled in its
                 * guest (x86's perf_callchain_kernel()/_user() store nothing
                 * under perf_guest_state(), arch/x86/events/core.c). Its CPU
                 * time is the process's, but its ip is the guest's
                 * (perf_guest_get_ip()): named from neither this process's
                 * mappings nor the host's kallsyms. One "[kernel]" frame, for
                 * time outside the process's own code.
                 */
                kernel = true;
                s->frames[n++] = STORE_KERNEL_FRAME;
                s->counting.ip_only++;
        }

        kernel = kernel || s->frames[0] == STORE_KERNEL_FRAME;

        p = task_map_get(s->tasks, x->pid);
        t = task_map_get(s->tasks, x->tid);
        if (x->pid != SOURCE_NO_ID)
                slot = who(s, x->pid, x->cgroup_id);
        if (!slot || !slot->path)
                s->counting.no_cgroup++;

        store_add_stack(s->store,
                        &(struct store_stack_sample) {
                                .pid = x->pid, .tid = x->tid, .cpu = x->cpu,
                                .comm = p && p->comm[0] ? p->comm : t ? t->comm : "",
                                .thread = t ? t->comm : "",
                                .cgroup = slot && slot->path ? slot->path : "",
                                .service = slot ? slot->service : "",
                                .frames = s->frames, .n_frames = n,
                                .kernel = kernel,
                                .weight = x->period,
                        });
        s->counting.samples++;
}

/* The unwinder's figures and the sink's own, for readers. */
static void publish_stats(struct sample_sink *s) {
        struct unwind_stats us = {};

        if (s->unwind)
                unwind_get_stats(s->unwind, &us);
        s->counting.cfi_failed = us.failed;
        s->counting.cfi_truncated = us.truncated + us.stack_end;
        s->counting.unwind_evictions = us.pid_evictions;
        s->counting.unwind_processes = us.pids;
        pthread_mutex_lock(&s->lock);
        s->stats = s->counting;
        s->stats.cgroup_evictions += cgroup_map_evictions(s->cgroups);
        pthread_mutex_unlock(&s->lock);
}

void sample_sink_samples(struct sample_sink *s, const struct source_sample *samples, size_t n) {
        for (size_t i = 0; i < n; i++)
                add_one(s, &samples[i]);
        publish_stats(s);
}

void sample_sink_mapping(struct sample_sink *s, const struct source_mapping *m) {
        int k;

        if (!s->unwind)
                return;
        k = unwind_add_mapping(s->unwind, m->pid, m->start, m->len, m->pgoff, m->filename, m->build_id,
                               m->build_id_len);
        if (k < 0)
                log_debug_errno(k, "sampler: mapping of %s in %" PRIu32 " refused by the unwinder: %m", m->filename,
                                m->pid);
}

void sample_sink_task(struct sample_sink *s, const struct source_task *t) {
        switch (t->kind) {
        case SOURCE_TASK_CGROUP:
                if (t->cgroup_path)
                        cgroup_map_add(s->cgroups, t->cgroup_id, t->cgroup_path);
                break;
        case SOURCE_TASK_GONE:
                /* No sample of it is left: its unwinding state goes; its cgroup stays for the answers. */
                if (s->unwind) {
                        unwind_remove_pid(s->unwind, t->pid);
                        publish_stats(s);
                }
                break;
        case SOURCE_TASK_FORK:
                /* A new process under a pid: whatever was known of a process that had it is not its. */
                if (t->pid == t->tid) {
                        struct pid_slot *slot = &s->pids[pid_hash(t->pid)];

                        if (slot->used && slot->pid == t->pid) {
                                pthread_mutex_lock(&s->lock);
                                free(slot->path);
                                slot->path = NULL;
                                slot->used = false;
                                pthread_mutex_unlock(&s->lock);
                        }
                }
                break;
        default:
                break;
        }
}

bool sample_sink_cgroup(struct sample_sink *s, uint32_t pid, char *path, size_t path_len, char *service,
                        size_t service_len) {
        const struct pid_slot *slot = &s->pids[pid_hash(pid)];
        bool found;

        pthread_mutex_lock(&s->lock);
        found = slot->used && slot->pid == pid && slot->path;
        if (found) {
                snprintf(path, path_len, "%s", slot->path);
                snprintf(service, service_len, "%s", slot->service);
        }
        pthread_mutex_unlock(&s->lock);
        /* Not sampled (an SPE record's process, say): /proc, if it still runs; nothing is cached by a reader. */
        return found || cgroup_describe_pid(s->opts.procfs_root, pid, path, path_len, service, service_len);
}

void sample_sink_get_stats(struct sample_sink *s, struct sample_sink_stats *ret) {
        pthread_mutex_lock(&s->lock);
        *ret = s->stats;
        pthread_mutex_unlock(&s->lock);
}

size_t sample_sink_metric_rows(const struct sample_sink_stats *st, const struct proc_table_stats *procs,
                               struct prom_counter_row rows[SAMPLE_SINK_METRIC_ROWS]) {
        static const char evictions[] = "armprofd_cpu_sampler_evictions_total",
                          evictions_help[] = "Entries the sampler's bounded tables evicted to stay within their capacity.";
        size_t n = 0;

        rows[n++] = (struct prom_counter_row) {
                "armprofd_cpu_unwound_total", "User stacks of CPU samples walked by CFI.", .value = st->unwound,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_cpu_unwind_failed_total",
                "Of those, walks that found no frame beyond the sampled pc (no CFI for it, an unreadable file).",
                .value = st->cfi_failed,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_cpu_unwind_truncated_total",
                "Of those, walks stopped by [sampler] max_stack or the end of the copied stack ([sampler] stack_size).",
                .value = st->cfi_truncated,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_cpu_samples_guest_total",
                "CPU samples whose callchain had no frame (a KVM vCPU in its guest): stored as one [kernel] frame.",
                .value = st->ip_only,
        };
        rows[n++] = (struct prom_counter_row) { evictions, evictions_help, "table", "unwind_processes",
                                                st->unwind_evictions };
        rows[n++] = (struct prom_counter_row) { evictions, evictions_help, "table", "cgroups", st->cgroup_evictions };
        /* Live processes pushed out of the sampler's full table: read from /proc again if sampled again. */
        rows[n++] = (struct prom_counter_row) { evictions, evictions_help, "table", "processes",
                                                procs ? procs->evictions : 0 };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_cpu_user_frames_kernel_half_total",
                "User stack frames in the kernel's half of the address space: a leaf (x86-64's vsyscall page) is "
                "stored as [kernel], a caller (a walk into garbage) ends the stack there.",
                .value = st->user_kernel_half,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_cpu_samples_idle_total", "CPU samples of idle CPUs (pid 0): counted, not in profiles.",
                .value = st->idle,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_cpu_samples_without_cgroup_total",
                "CPU samples of a process whose cgroup could not be named (it was gone from /proc).",
                .value = st->no_cgroup,
        };
        return n;
}
