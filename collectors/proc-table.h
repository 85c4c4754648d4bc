/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The processes a live source has met (the cpu-clock sampler's, live
 * SPE's: each source its own table), and what it tells the sink and the
 * task map about them.
 *
 * The kernel states a process's life on the sampling events themselves
 * (attr.comm, comm_exec, task, mmap2, cgroup; perf_event_open(2)): FORK,
 * COMM (with PERF_RECORD_MISC_COMM_EXEC on exec, followed by the MMAP2 of
 * the new image and its interpreter), EXIT, and MMAP2 for each executable
 * mapping after that. So a process that starts after the source, even one
 * that lives 200 ms, is named and mapped from records, never from /proc.
 * What started before the source (every service running when the daemon
 * restarts; or what forked without exec: fork(2) copies the parent's
 * mappings and the kernel reports none) is read from /proc once, at its
 * first sample (an SPE source: its first run of records): its start time,
 * name, executable mappings and cgroup (procfs.h), the thread's name too
 * when it is not the leader.
 *
 * A PID may be reused. A process is the pair (pid, start time): a FORK
 * starts a new one; a sample after the process's EXIT is another process
 * whose FORK was not seen (lost); and after the data ring lost records, a
 * process's start time is read again at its next sample and compared. Then
 * /proc is read anew, so the old process's names are never given to the
 * new one.
 *
 * Bounded: a set-associative table of PROC_TABLE_SETS x
 * PROC_TABLE_WAYS processes. An exited process stays for samples of
 * other CPUs read after its EXIT, at most PROC_TABLE_EXITED_NS of perf
 * time (aged out), and is the first to give its place; a live one pushed
 * out of a full set (an eviction, counted) is read from /proc again if it
 * comes back. Thread names: a direct-mapped table of PROC_TABLE_THREADS.
 *
 * Gone: a process's EXIT (its leader's) is handed on as it comes; once
 * every ring was read past it, SOURCE_TASK_GONE says no sample of the
 * process is left, the one announcement the consumers drop their state
 * for its samples on (the unwinder's), each keeping what its answers need.
 * The source drains every ring at each tick and then calls
 * proc_table_age(): a process whose EXIT was read before one tick is
 * told gone at the next, after a whole drain. At most
 * PROC_TABLE_GONE_PENDING wait; past that the oldest is told at once
 * (counted: gone_early). A FORK that takes a waiting pid cancels it: what
 * is kept under the pid is the new process's.
 *
 * Threads: the collector thread's, like the sources.
 */

#include <stdbool.h>
#include <stdint.h>

#include "perf-record.h"
#include "source.h"

#define PROC_TABLE_SETS      1024
#define PROC_TABLE_WAYS      4
#define PROC_TABLE_THREADS    8192
/* How long an exited process is still answered (perf time): samples read from other CPUs' rings after its EXIT. */
#define PROC_TABLE_EXITED_NS (30 * UINT64_C(1000000000))
/* Exited processes waiting to be told gone: the exits of one tick (a drain interval) on a busy build host. */
#define PROC_TABLE_GONE_PENDING 1024

struct proc_table;

/*
 * procfs_root NULL: "/proc"; cgroup_root: where cgroup v2 is mounted, for
 * the ids of the cgroups read from /proc (NULL: found in
 * <procfs_root>/self/mountinfo; without a mount, a cgroup read from /proc
 * takes the id of the sample that asked). The sink and the task map must
 * outlive the table.
 */
int proc_table_new(const char *procfs_root, const char *cgroup_root, const struct source_sink *sink,
                   struct task_map *tasks, struct proc_table **ret);
struct proc_table *proc_table_free(struct proc_table *p);

/*
 * A sample of thread tid of process pid at perf time time_ns (cgroup_id 0:
 * not reported): the process and thread are read from /proc when unknown,
 * their mappings and names handed to the sink before the caller hands the
 * sample on. pid 0 (the idle task) and SOURCE_NO_ID are left alone.
 */
void proc_table_sample(struct proc_table *p, uint32_t pid, uint32_t tid, uint64_t time_ns,
                       uint64_t cgroup_id);

/*
 * The kernel's records: into the task map, then to the sink. A mapping
 * with PERF_RECORD_MISC_MMAP_DATA (attr.mmap_data) is handed on as data.
 */
void proc_table_comm(struct proc_table *p, const struct perf_data_comm *c);
void proc_table_task(struct proc_table *p, const struct perf_data_task *t); /* FORK or EXIT */
void proc_table_mapping(struct proc_table *p, const struct perf_data_mmap *m);
void proc_table_cgroup(struct proc_table *p, const struct perf_data_cgroup *c);
/* The data ring lost records: FORK or EXIT may be among them, start times are compared again. */
void proc_table_lost(struct proc_table *p);
/*
 * After a drain of every ring: tell gone the processes whose EXIT came
 * before the previous call (SOURCE_TASK_GONE), and drop the processes that
 * exited PROC_TABLE_EXITED_NS before the newest time seen.
 */
void proc_table_age(struct proc_table *p);

void proc_table_stats(const struct proc_table *p, struct proc_table_stats *ret);
