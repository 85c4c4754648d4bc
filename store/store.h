/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The rolling aggregate store (ARCHITECTURE.md §4, §5).
 *
 * One writer, the collector thread, calls store_add() per SPE record and
 * store_epoch_end() at each epoch boundary. Nothing on the per-record path
 * allocates, locks or logs: all tables are sized from struct store_options
 * at store_new() and reset in place at each epoch end.
 *
 * At an epoch end the finished epoch is frozen into an immutable,
 * reference-counted `struct store_epoch` (compact copies of the tables,
 * allocated at that moment) and pushed into a ring of the last
 * `opt.epochs` epochs. A new immutable `struct store_snapshot` (references
 * to the ring's epochs, cumulative totals, the attachment) is then
 * published: the store's current-snapshot pointer is swapped under a mutex
 * held only for the pointer swap, and readers take their reference under
 * the same mutex (store_snapshot_get()), so the lock is never held across
 * a request. Whoever drops the last reference to a snapshot, epoch or
 * attachment frees it, on its own thread: usually the writer (the ring
 * lets go of the oldest epoch) or an HTTP thread finishing a request on a
 * snapshot older than the current one.
 *
 * Readers query a window (store_window_parse(): "10s", "1m", "10m", or a
 * number of seconds) that is answered from whole closed epochs, counted
 * back from the end of the newest one: an epoch is in the window when its
 * midpoint is (the newest one always is), so with 10 s epochs "1m" is the
 * last six closed epochs, 60 s, whatever their timer jitter, and "15s" is
 * two. The epoch being filled is never part of an answer. Every answer
 * carries the interval it covers (struct store_interval), with the store's
 * clock to turn it into Unix time.
 *
 * TIME. The store's times are whatever its writer passes in, in
 * nanoseconds: CLOCK_MONOTONIC for the live collector, the file's perf
 * timestamps for a replay. store_set_clock() says how they map to Unix
 * time (struct store_clock).
 *
 * MEMORY. With K = hotpcs, L = hotlines, O = line_offsets, E = epochs,
 * N = stacks, F = stack_frames, X = stack_contexts, Y = stack_strings,
 * H = STORE_LAT_HISTS = 3 x 14 histograms of sizeof(struct lathist) = 5088
 * bytes (u64 sum + 1269 u32 buckets), slots(n) = the next power of two
 * >= 4n (hash index, 24 bytes a slot in the PC and line tables, 8 in the
 * stack tables), sizes as on x86-64/arm64 with gcc:
 *
 *   store_bytes(opt) = W + T + (E + 1) x (P + U) + (E + 2) x S + 3 x C + 24
 *
 *   W, the writer's tables, allocated once by store_new() (two PC tables
 *   of capacity K: the hot PCs, and the pprof samples keyed by context):
 *       sizeof(struct store) + 2 hotpcs_bytes(K) + hotlines_bytes(L, O)
 *       + H x 5088 + 8 E
 *     = 608 + 2 [120 + 24 slots(K) + 24 (K + 1) + 24 K + 128 K]
 *       + [136 + 24 slots(L) + 24 (L + 1) + 12 L + 168 L + 148 L O]
 *       + 213696 + 8 E
 *   T, the writer's stack table (stacks.h), 0 when N = 0:
 *       stacks_bytes(N, F, X, Y)
 *     = 168 + 8 F + 40 N + 24 X + Y + 8 [2 slots(N) + slots(X) + slots(4 X)]
 *   P, one frozen epoch at its largest (full tables, every (offset, pc)
 *      entry used, every histogram non-empty):
 *       sizeof(struct store_epoch) + 2 hotpcs_summary_bytes(K)
 *       + hotlines_summary_bytes(L, O) + H x 5088
 *     = 592 + 2 [32 + 128 K] + [72 + 168 L + 136 L O] + 213696
 *   U, its stack table at its largest (every count, frame, context and
 *      string byte used), 0 when N = 0:
 *       stacks_summary_bytes(N, F, X, Y) = 88 + 8 F + 40 N + 24 X + Y
 *   S, one snapshot: sizeof(struct store_snapshot) + 8 E = 264 + 8 E
 *   C, one block of cumulative latency histograms (3 kinds x 4 ops of
 *      sizeof(struct lathist_merged) = 10168, and a reference count):
 *      122024; three are alive at most: the writer's (the current
 *      snapshot's too), the replaced snapshot's and one a reader holds
 *
 * E + 1 epochs: the ring plus the one being frozen; E + 2 snapshots: the
 * current one, the one being replaced and one held by a reader. A reader
 * that keeps a snapshot across epoch ends also keeps the epochs the ring
 * has dropped since (one P + U per epoch end it spans): requests are short,
 * so this is at most one or two in practice. Frozen epochs are compact
 * (used entries only, empty histograms not stored), so they are usually
 * far below P + U. Defaults (K 1024, L 256, O 8, E 60, N 4096, F 131072,
 * X 1024, Y 65536): 131437016 bytes, 125.3 MiB, of which 13.4 MiB are
 * histograms and 77.4 MiB stack tables (1.2 MiB an epoch at most, 1 MiB
 * of it frames); with N = 0 (no stack table) 50248760 bytes, 47.9 MiB.
 * The commands kept with the counts (comm.h, 16 bytes a PC and an
 * (offset, pc) entry) are 3.9 MiB of it.
 * Query results are allocated by the reader per request and freed by it:
 * at most E x (K items + L lines, each with up to E x O entries); a stack
 * query up to E x U bytes of copies and 3 x slots(E x N) index slots.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "hotlines.h"
#include "hotpcs.h"
#include "lathist.h"
#include "macro.h"
#include "spe-rec.h"

#define STORE_EPOCH_NS_DEFAULT          (10 * NSEC_PER_SEC)
#define STORE_EPOCHS_DEFAULT            60U
#define STORE_HOTPCS_DEFAULT            1024U
#define STORE_HOTLINES_DEFAULT          256U
#define STORE_LINE_OFFSETS_DEFAULT      8U
#define STORE_STACKS_DEFAULT            4096U
#define STORE_STACK_FRAMES_DEFAULT      (4096U * 32U)
#define STORE_STACK_CONTEXTS_DEFAULT    1024U
#define STORE_STACK_STRINGS_DEFAULT     (64U * 1024U)

/* Sanity limits for options (each table is allocated up front). */
#define STORE_EPOCHS_MAX                100000U
#define STORE_TABLE_MAX                 (1U << 24)
#define STORE_LINE_OFFSETS_MAX          1024U
/* Frame and string pools are indexed by 32-bit offsets; 2^28 frames are 2 GiB an epoch. */
#define STORE_STACK_POOL_MAX            (1U << 28)

struct store_options {
        uint64_t epoch_ns;              /* [store] epoch: nominal epoch length (informational:
                                         * the caller's timer calls store_epoch_end) */
        uint32_t epochs;                /* [store] epochs: ring length */
        uint32_t hotpcs;                /* [store] hotpcs: Space-Saving counters per epoch */
        uint32_t hotlines;              /* [store] hotlines: lines per epoch */
        uint32_t line_offsets;          /* (offset, pc) entries per line */
        uint32_t line_size;             /* sysfs coherency_line_size, power of two */
        bool lines_by_pa;               /* key lines by physical address when the record has one */
        /*
         * Call stacks (store_add_stack()), per epoch; stacks = 0 keeps no
         * stack table (every stack sample is counted, and dropped).
         */
        uint32_t stacks;                /* (task context, stack) counts, so also distinct stacks */
        uint32_t stack_frames;          /* frame pool: the frames of the distinct stacks */
        uint32_t stack_contexts;        /* distinct (pid, tid, comm, thread, cgroup, service) */
        uint32_t stack_strings;         /* string pool, bytes (each distinct string once, NUL-terminated) */
};

void store_options_init(struct store_options *o);

/* ---- totals (exact counts, for /metrics counters) ---- */

/* The bounded tables, each counting its evictions (armprofd_store_evictions_total{table}). */
enum store_table {
        STORE_TABLE_HOTPCS,
        STORE_TABLE_HOTLINES,
        STORE_TABLE_OFFSETS,                    /* the (offset, pc) entries of the hot lines */
        STORE_TABLE_SAMPLES,                    /* the PCs by context (store_query_samples()) */
        _STORE_TABLE_MAX,
};
const char *store_table_name(enum store_table t);      /* "hotpcs", "hotlines", "offsets", "samples" */

struct store_totals {
        uint64_t records;
        uint64_t loads, stores, branches, other;
        uint64_t loads_by_source[_SPE_DATA_SRC_MAX];
        uint64_t peer_local, peer_remote;       /* perf c2c lcl_peer / rmt_peer */
        uint64_t no_pc;                         /* records without a PC packet (not in hot PCs) */
        uint64_t evictions[_STORE_TABLE_MAX];
        uint64_t cpu_samples;                   /* store_add_stack() calls */
        uint64_t cpu_weight_ns;                 /* their total weight */
        uint64_t evict_stacks;                  /* of them, those the full stack tables could not hold */
};

/* ---- latency histograms ---- */

enum store_lat_kind {
        STORE_LAT_TOTAL,
        STORE_LAT_ISSUE,
        STORE_LAT_XLAT,                 /* translation */
        _STORE_LAT_KIND_MAX,
};

/* Groups: the op kinds (enum hotpcs_op), then loads by data source. */
#define STORE_LAT_GROUP_OP(op)          ((unsigned) (op))
#define STORE_LAT_GROUP_SOURCE(src)     ((unsigned) _HOTPCS_OP_MAX + (unsigned) (src))
#define STORE_LAT_GROUPS                ((unsigned) _HOTPCS_OP_MAX + (unsigned) _SPE_DATA_SRC_MAX)
#define STORE_LAT_HISTS                 ((unsigned) _STORE_LAT_KIND_MAX * STORE_LAT_GROUPS)

const char *store_lat_kind_name(enum store_lat_kind k);        /* "total", "issue", "translation" */

/*
 * Cumulative latency by kind and op since the store started, never reset
 * (Prometheus histograms must not go down): each epoch end folds the closed
 * epoch's op histograms in, as it does its totals into the cumulative
 * totals. One immutable block per epoch end, shared by the snapshots of
 * that epoch, so a publish does not copy it (C in the MEMORY formula).
 */
struct store_latency_cumulative {
        struct lathist_merged h[_STORE_LAT_KIND_MAX][_HOTPCS_OP_MAX];
};
/* "load", "store", "branch", "other" for op groups; the source name for source groups. */
const char *store_lat_group_name(unsigned group);
bool store_lat_group_is_source(unsigned group);

/* ---- the store (writer side) ---- */

struct store;
struct store_snapshot;

/* -EINVAL on bad options (zero sizes, line size not a power of two...). */
int store_new(const struct store_options *o, uint64_t now_ns, struct store **ret);
/* Snapshots hold no pointer to the store: ones still held stay valid. */
struct store *store_free(struct store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct store *, store_free);

/* The memory bound above for these options. */
size_t store_bytes(const struct store_options *o);

/*
 * How the store's times map to Unix time. The offset is fixed: taken once
 * (CLOCK_REALTIME - CLOCK_MONOTONIC at start, or a perf.data's clock
 * data), so intervals keep their lengths when the wall clock is stepped.
 */
enum store_clock_kind {
        STORE_CLOCK_PERF,               /* perf timestamps with no known Unix time (the default) */
        STORE_CLOCK_UNIX,               /* Unix ns = store ns + unix_offset_ns */
};

struct store_clock {
        int64_t unix_offset_ns;
        enum store_clock_kind kind;
        bool frozen;                    /* a replay: time stands at the file's end, no epoch follows */
};

/* Applies to the snapshots published from now on (publishes one at once). Writer thread. */
void store_set_clock(struct store *s, const struct store_clock *c);

/*
 * Who ran what the store counts: the process and thread as the collector
 * attributed them, and the thread's command (comm.h) as the sources' task
 * map named it at the time (PERF_RECORD_COMM, the parent's at FORK, /proc
 * for what ran before the source started). The tables keep the command with
 * the counts, so an answer names what it covers after the process exited.
 * Filled once for a run of records of one thread (store_task_init()).
 */
struct store_task {
        uint32_t pid, tid;
        struct comm comm;
        uint32_t comm_hash;             /* comm_hash(&comm) */
};

/* comm NULL or "": unknown. */
void store_task_init(struct store_task *t, uint32_t pid, uint32_t tid, const char *comm);

/* Per record (writer thread), with who ran it. */
void store_add_task(struct store *s, const struct spe_record *rec, const struct store_task *task);
/* The same for a record of an unknown command (tests, tools). */
void store_add(struct store *s, const struct spe_record *rec, uint32_t pid, uint32_t tid);

/* The kernel part of a stack when kernel addresses may not leave the host: one frame, "[kernel]". */
#define STORE_KERNEL_FRAME UINT64_MAX

/* A CPU sample with its call stack (the cpu-clock sampler's), as the daemon attributed it. */
struct store_stack_sample {
        uint32_t pid, tid, cpu;
        const char *comm;               /* process name, "" unknown; at most 15 bytes used */
        const char *thread;             /* thread name (perf's comm), "" unknown; at most 15 bytes used */
        const char *cgroup;             /* cgroup v2 path ("/system.slice/nginx.service"), "" unknown */
        const char *service;            /* what the cgroup stands for ("nginx.service", a container id), "" unknown */
        const uint64_t *frames;         /* leaf first: kernel frames (or STORE_KERNEL_FRAME), then user */
        size_t n_frames;
        bool kernel;                    /* the sampled pc (frames[0]) is in the kernel */
        uint64_t weight;                /* CPU nanoseconds the sample stands for (its period) */
};

/*
 * Per sample (writer thread): the stack into the epoch's stack table
 * (stacks.h; counted in evict_stacks when a table is full, or when the
 * sample has no frame), and its leaf pc into the hot PCs with count 1 and
 * no op, event or latency counts (hotpcs_add_pc()), el 1 when `kernel`,
 * under the thread's name (the process's when the thread has none), the
 * command perf would give it. Strings are copied (NULL is ""); nothing
 * the sample points to is kept.
 */
void store_add_stack(struct store *s, const struct store_stack_sample *ss);

/* Close the epoch [previous end, now_ns) and publish a new snapshot (writer thread). */
void store_epoch_end(struct store *s, uint64_t now_ns);
/* Move the start of the epoch being filled (a replay starts at its first record). Writer thread. */
void store_epoch_restart(struct store *s, uint64_t start_ns);

/*
 * Attach counting results (e.g. the PMU library's per-CPU values) so that
 * readers see them in the same snapshot as the SPE aggregates. The store
 * owns data from now on and calls destroy(data) when the last snapshot
 * referring to it goes away (on that thread). Publishes a new snapshot at
 * once (same epochs); later epoch ends carry the attachment forward until
 * it is replaced. Writer thread only.
 */
void store_publish_attachment(struct store *s, void *data, void (*destroy)(void *data));

/* ---- readers (any thread) ---- */

/* A reference to the newest snapshot; never NULL. */
struct store_snapshot *store_snapshot_get(struct store *s);
struct store_snapshot *store_snapshot_unref(struct store_snapshot *snap);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct store_snapshot *, store_snapshot_unref);

uint64_t store_snapshot_seq(const struct store_snapshot *snap);        /* publication counter */
size_t store_snapshot_epochs(const struct store_snapshot *snap);       /* epochs held */
uint64_t store_snapshot_epoch_ns(const struct store_snapshot *snap);   /* configured length */
const struct store_clock *store_snapshot_clock(const struct store_snapshot *snap);
/* End of the newest closed epoch (the start of the one being filled); 0 before the first. */
uint64_t store_snapshot_end_ns(const struct store_snapshot *snap);
const struct store_totals *store_snapshot_cumulative(const struct store_snapshot *snap);
/* NULL before the first epoch end. */
const struct store_latency_cumulative *store_snapshot_latency(const struct store_snapshot *snap);
const void *store_snapshot_attachment(const struct store_snapshot *snap);

#define STORE_WINDOW_ALL UINT64_MAX

/* "10s", "1m", "10m", "1h", "500ms", "30" (seconds), "all". -EINVAL, -ERANGE. */
int store_window_parse(const char *s, uint64_t *ret_ns);

struct store_interval {
        uint64_t start_ns, end_ns;      /* [start, end) covered; 0, 0 when no epoch yet */
        uint32_t epochs;                /* epochs merged */
        uint64_t window_ns;             /* as asked (STORE_WINDOW_ALL; 0 for a span) */
        struct store_clock clock;       /* the snapshot's */
};

struct store_totals_result {
        struct store_interval iv;
        struct store_totals t;
};

struct store_hotpcs_result {
        struct store_interval iv;
        struct hotpcs_merged pcs;       /* items, N, K, error bound */
};

struct store_hotlines_result {
        struct store_interval iv;
        struct hotlines_merged lines;
};

struct store_lat_hist {
        struct lathist_merged h;
        double p50, p90, p99, p999;
};

struct store_latency_result {
        struct store_interval iv;
        struct store_lat_hist *hist;    /* STORE_LAT_HISTS, use store_latency_hist() */
};

#define STORE_PID_ANY UINT32_MAX

/* All return 0 or -EINVAL (NULL argument, zero window); results are owned by the caller. */
int store_query_totals(const struct store_snapshot *snap, uint64_t window_ns,
                       struct store_totals_result *ret);
int store_query_hotpcs(const struct store_snapshot *snap, uint64_t window_ns, size_t limit,
                       uint32_t pid, struct store_hotpcs_result *ret);
/* which: HOTLINES_PEER_LINES (perf c2c's shared lines) or HOTLINES_ALL_LINES. */
int store_query_hotlines(const struct store_snapshot *snap, uint64_t window_ns, size_t limit,
                         uint32_t pid, enum hotlines_which which, struct store_hotlines_result *ret);

/*
 * PCs by context, for profiles: a second Space-Saving table per epoch,
 * keyed (pc, store_sample_key(pid, tid, cpu, el, op, source)), merged like
 * the hot PCs. Each item's `key` unpacks with the STORE_SAMPLE_* macros.
 */
int store_query_samples(const struct store_snapshot *snap, uint64_t window_ns, size_t limit,
                        struct store_hotpcs_result *ret);

/*
 * The sample context in one 64-bit word: pid and tid 22 bits each (Linux's
 * largest pid_max is 2^22), cpu 12, el 2, op 2, data source 4. A pid or tid
 * that does not fit (or is unknown) is stored as STORE_SAMPLE_NO_ID.
 */
#define STORE_SAMPLE_ID_BITS    22
#define STORE_SAMPLE_NO_ID      ((UINT32_C(1) << STORE_SAMPLE_ID_BITS) - 1)
#define STORE_SAMPLE_CPU_BITS   12
#define STORE_SAMPLE_PID(k)     ((uint32_t) ((k) & STORE_SAMPLE_NO_ID))
#define STORE_SAMPLE_TID(k)     ((uint32_t) (((k) >> 22) & STORE_SAMPLE_NO_ID))
#define STORE_SAMPLE_CPU(k)     ((unsigned) (((k) >> 44) & 0xFFF))
#define STORE_SAMPLE_EL(k)      ((unsigned) (((k) >> 56) & 0x3))
#define STORE_SAMPLE_OP(k)      ((enum hotpcs_op) (((k) >> 58) & 0x3))
#define STORE_SAMPLE_SOURCE(k)  ((unsigned) (((k) >> 60) & 0xF))

static inline uint64_t store_sample_key(uint32_t pid, uint32_t tid, uint32_t cpu, unsigned el,
                                        enum hotpcs_op op, unsigned source) {
        uint64_t p = pid < STORE_SAMPLE_NO_ID ? pid : STORE_SAMPLE_NO_ID;
        uint64_t t = tid < STORE_SAMPLE_NO_ID ? tid : STORE_SAMPLE_NO_ID;

        return p | t << 22 | (uint64_t) (cpu & 0xFFF) << 44 | (uint64_t) (el & 3) << 56 |
               (uint64_t) ((unsigned) op & 3) << 58 | (uint64_t) (source & 0xF) << 60;
}
int store_query_latency(const struct store_snapshot *snap, uint64_t window_ns,
                        struct store_latency_result *ret);

/*
 * The sample table of the epochs that overlap [start_ns, end_ns) (a
 * profile of a time span, not of a window back from now); ret->iv is the
 * span those epochs cover, epochs 0 when none does.
 */
int store_query_samples_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns,
                             size_t limit, struct store_hotpcs_result *ret);

/* ---- call stacks ---- */

struct store_stack {
        uint32_t pid, tid;
        const char *comm, *thread, *cgroup, *service;   /* point into the result; "" unknown */
        const uint64_t *frames;                         /* leaf first, as added */
        size_t n_frames;
        uint64_t count;                                 /* samples */
        uint64_t weight;                                /* their total weight (ns) */
};

struct store_stacks_result {
        struct store_interval iv;
        struct store_stack *stacks;     /* heaviest first (weight, then count) */
        size_t n;
        uint64_t samples, weight;       /* all samples of the interval, stored or not, whatever the filter */
        uint64_t dropped;               /* samples of it the full tables could not hold */
        bool filtered;                  /* stacks of one pid or cgroup: the totals above are not theirs */
        /* private: what the pointers point into */
        char *strings;
        uint64_t *frames;
};

/*
 * The stacks of a window: one entry per distinct (pid, tid, comm, thread,
 * cgroup, service, frames) over the epochs merged, with the names each
 * sample had when it was taken. pid STORE_PID_ANY for all; cgroup_prefix
 * NULL or "" for all, else a prefix of the sample's cgroup path (plain
 * string prefix: "/system.slice/nginx.service" keeps that unit and the
 * cgroups below it). 0, -EINVAL, or -E2BIG when the epochs hold more than
 * STORE_STACKS_QUERY_MAX contexts, stacks or counts (only configurations
 * far beyond the defaults can: 2^24 counts an epoch over 32 epochs).
 */
#define STORE_STACKS_QUERY_MAX          (UINT32_C(1) << 29)
int store_query_stacks(const struct store_snapshot *snap, uint64_t window_ns, uint32_t pid,
                       const char *cgroup_prefix, struct store_stacks_result *ret);
/* The same of the epochs that overlap [start_ns, end_ns) (as store_query_samples_span()). */
int store_query_stacks_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns, uint32_t pid,
                            const char *cgroup_prefix, struct store_stacks_result *ret);
void store_stacks_result_done(struct store_stacks_result *ret);

void store_hotpcs_result_done(struct store_hotpcs_result *res);
void store_hotlines_result_done(struct store_hotlines_result *res);
void store_latency_result_done(struct store_latency_result *res);

static inline const struct store_lat_hist *store_latency_hist(const struct store_latency_result *res,
                                                              enum store_lat_kind k, unsigned group) {
        return &res->hist[(unsigned) k * STORE_LAT_GROUPS + group];
}
