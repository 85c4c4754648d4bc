/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The tasks the sources have seen: tid -> pid, comm, start time, cgroup, as
 * PERF_RECORD_COMM/FORK/EXIT/CGROUP and context switches state them
 * [perf_event_open(2)]. One map for every source, so that a sample of the
 * sampler and an SPE record of the same thread name the same process.
 *
 * Bounded and allocation-free after creation: a direct-mapped table of
 * TASK_MAP_SIZE slots by a hash of the tid. A thread whose slot holds
 * another one replaces it (an eviction, counted): the memory is fixed
 * whatever the input holds, and a lookup is one probe. Threads: the
 * collector thread's, like the sources that fill it.
 */

#include <stdbool.h>
#include <stdint.h>

#define TASK_MAP_BITS 16
#define TASK_MAP_SIZE (1U << TASK_MAP_BITS)
/* TASK_COMM_LEN (include/linux/sched.h): what PERF_RECORD_COMM carries at most, NUL included. */
#define TASK_MAP_COMM_LEN 16
/* A pid the map cannot name (source.h's SOURCE_NO_ID). */
#define TASK_MAP_NO_ID UINT32_MAX

struct task_info {
        uint32_t tid;
        uint32_t pid;
        char comm[TASK_MAP_COMM_LEN];   /* "" until a COMM (or the parent's, from FORK) */
        uint64_t start_ns;              /* perf time of the FORK, 0 unknown */
        uint64_t cgroup_id;             /* 0 unknown */
};

/*
 * The table is defined here only so that the lookup below inlines into the
 * decoders' per-record attribution; its fields are task-map.c's business.
 */
struct task_map_slot {
        struct task_info info;
        bool used;
};

struct task_map {
        uint64_t evictions;
        struct task_map_slot slots[TASK_MAP_SIZE];
};

static inline uint32_t task_map_hash(uint32_t tid) {
        /* Fibonacci hashing: spreads sequential tids over the table. */
        return (uint32_t) ((tid * UINT32_C(2654435769)) >> (32 - TASK_MAP_BITS));
}

/* 0 with *ret set (allocation failure aborts, HACKING.md §3). */
int task_map_new(struct task_map **ret);
struct task_map *task_map_free(struct task_map *m);

/* The thread runs in process pid (a COMM, a FORK, a switch to it). */
void task_map_set_pid(struct task_map *m, uint32_t tid, uint32_t pid);
/* PERF_RECORD_COMM: the thread's name (truncated to TASK_MAP_COMM_LEN - 1). */
void task_map_comm(struct task_map *m, uint32_t pid, uint32_t tid, const char *comm);
/* PERF_RECORD_FORK: a new thread, with its parent's comm when the parent is known. */
void task_map_fork(struct task_map *m, uint32_t pid, uint32_t tid, uint32_t ptid, uint64_t time_ns);
/* The thread's cgroup (PERF_SAMPLE_CGROUP, PERF_RECORD_CGROUP ids). */
void task_map_cgroup(struct task_map *m, uint32_t tid, uint64_t cgroup_id);

/* NULL when the thread is not (or no longer) in the map. Valid until the next change. */
const struct task_info *task_map_get(const struct task_map *m, uint32_t tid);
/* Its pid, or TASK_MAP_NO_ID. */
static inline uint32_t task_map_pid(const struct task_map *m, uint32_t tid) {
        const struct task_map_slot *s = &m->slots[task_map_hash(tid)];

        return s->used && s->info.tid == tid ? s->info.pid : TASK_MAP_NO_ID;
}
/* Threads replaced by another in their slot. */
uint64_t task_map_evictions(const struct task_map *m);
