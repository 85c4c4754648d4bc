/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Call stacks of one epoch, for CPU profiles (store.h, ARCHITECTURE.md §5).
 *
 * Four interned tables, all sized at creation and reset in place at each
 * epoch end, so the per-sample path neither allocates nor locks:
 *
 *  - stacks: a frame array (leaf first) -> stack id; the frames of every
 *    stack in one flat pool, each distinct array stored once whichever
 *    task ran it;
 *  - task contexts: (pid, tid, comm, thread, cgroup, service) -> context
 *    id, the strings copied into a bounded pool (each distinct string once)
 *    at the moment of the sample, so a task that exited, or a pid reused
 *    later, is named as it was then: nothing is looked up at query time;
 *  - counts: (context id, stack id) -> samples and their total weight,
 *    at most `stacks` of them (so at most as many distinct stacks).
 *
 * A sample whose context, stack or count does not fit any more is counted
 * in `dropped` (the store's evict_stacks) and nowhere else: the tables
 * keep what they hold exactly, a count is never an estimate. Nothing is
 * inserted before all of its parts are known to fit, so a full table
 * leaves no half-inserted context or stack behind.
 *
 * At the epoch end the tables are frozen into one compact allocation
 * (used entries only) that queries merge by content: contexts by their
 * ids and strings, stacks by their frames, so epochs with different ids
 * for the same task and stack add up.
 *
 * Internal to store/.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The strings of a context, in this order. */
enum stacks_str {
        STACKS_STR_COMM,
        STACKS_STR_THREAD,
        STACKS_STR_CGROUP,
        STACKS_STR_SERVICE,
        _STACKS_STR_MAX,
};

/* Bytes kept of each string (without its NUL); longer ones are cut there. */
#define STACKS_COMM_MAX         15U     /* TASK_COMM_LEN - 1 (include/linux/sched.h) */
#define STACKS_CGROUP_MAX       (PATH_MAX - 1U) /* a cgroup v2 path is a path under the mount */
#define STACKS_SERVICE_MAX      255U    /* a unit name's longest (systemd.unit(5)); container ids are 64 */

struct stacks_task {
        uint32_t pid, tid;
        const char *str[_STACKS_STR_MAX];       /* NULL is "" */
};

struct stacks_ctx {
        uint32_t pid, tid;
        uint32_t str[_STACKS_STR_MAX];          /* offsets into the string pool; 0 is "" */
};

struct stacks_stack {
        uint64_t hash;                          /* stacks_frames_hash() of its frames */
        uint32_t first, n;                      /* frames [first, first + n) of the pool */
};

struct stacks_count {
        uint32_t ctx, stack;
        uint64_t count, weight;
};

struct stacks_slot {
        uint32_t idx1;                          /* entry + 1 (strings: pool offset); 0 empty */
        uint32_t hash;
};

struct stacks_index {
        struct stacks_slot *slot;
        uint32_t mask;
};

/* Writer-side tables of the current epoch. */
struct stacks {
        uint32_t cap_counts, cap_frames, cap_contexts, cap_strings;
        uint32_t n_stacks, n_frames, n_contexts, n_counts, n_strings;   /* n_strings: pool bytes used */
        uint64_t samples, weight, dropped;
        uint64_t *frame;
        struct stacks_stack *stack;             /* cap_counts */
        struct stacks_count *count;             /* cap_counts */
        struct stacks_ctx *ctx;
        char *str;                              /* cap_strings bytes, str[0] == '\0' */
        struct stacks_index stack_ix, count_ix, ctx_ix, str_ix;
};

/* Immutable per-epoch copy: used entries only, in one allocation. */
struct stacks_summary {
        uint32_t n_stacks, n_frames, n_contexts, n_counts, n_strings;
        uint64_t samples, weight, dropped;      /* every sample of the epoch, stored or not */
        const uint64_t *frame;
        const struct stacks_count *count;
        const struct stacks_stack *stack;
        const struct stacks_ctx *ctx;
        const char *str;
        uint64_t data[];
};

/*
 * counts: (context, stack) counts per epoch, also the bound on distinct
 * stacks; frames: the frame pool; contexts; strings: the string pool's
 * bytes. NULL when one is 0 or over what 32-bit indexes hold.
 */
struct stacks *stacks_new(uint32_t counts, uint32_t frames, uint32_t contexts, uint32_t strings);
struct stacks *stacks_free(struct stacks *t);
void stacks_reset(struct stacks *t);
size_t stacks_bytes(uint32_t counts, uint32_t frames, uint32_t contexts, uint32_t strings);        /* writer */
size_t stacks_summary_bytes(uint32_t counts, uint32_t frames, uint32_t contexts, uint32_t strings); /* largest */
size_t stacks_summary_size(const struct stacks_summary *s);                                         /* this one */

uint64_t stacks_frames_hash(const uint64_t *frames, size_t n);

/* One sample; false when it did not fit (then counted in dropped). n == 0 is dropped too. */
bool stacks_add(struct stacks *t, const struct stacks_task *task, const uint64_t *frames, size_t n,
                uint64_t weight);

/* Copy of the epoch's tables (allocates; epoch boundary only). */
struct stacks_summary *stacks_freeze(const struct stacks *t);

/*
 * Merge summaries (any order) by content into ret->stacks (heaviest
 * first), keeping the samples of pid (STORE_PID_ANY: all) whose cgroup
 * path starts with cgroup_prefix (NULL or "": all). Fills ret's stacks,
 * n and private pools only; store_stacks_result_done() frees them.
 * -E2BIG (ret untouched) when the summaries hold more contexts, stacks or
 * counts than STORE_STACKS_QUERY_MAX, or more than 2^32 - 1 frames.
 */
int stacks_merge(const struct stacks_summary *const *s, size_t n, uint32_t pid, const char *cgroup_prefix,
                 struct store_stacks_result *ret);
