/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What /proc says of a task, for sources that see a thread id and need its
 * process (a CONTEXT packet holds the TID only).
 */

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The thread group (the process) of thread tid: "Tgid:" of
 * <root>/<tid>/status (proc(5); root NULL: "/proc"). -ENOENT when the
 * thread is gone (or never was), -EBADMSG when the file has no Tgid line.
 */
int procfs_tgid(const char *root, uint32_t tid, uint32_t *ret);

/*
 * What the sampler reads once of a process it meets without having seen it
 * start (proc(5)): its mappings, start time, names and cgroup. Paths are
 * <root>/<pid>/... with root NULL for "/proc". Each returns -ENOENT when the
 * task is gone (or never was), -EBADMSG when the file does not read as
 * proc(5) describes it.
 */

/* The longest /proc/PID/maps line: the fixed fields, then a path. */
#define PROCFS_MAPS_LINE_MAX (PATH_MAX + 128)
/* /proc/PID/stat: 52 numeric fields of at most 20 digits, a comm of at most 64 bytes (TASK_COMM_EXT_LEN). */
#define PROCFS_STAT_MAX 2048
/* /proc/PID/comm: TASK_COMM_LEN (16) on older kernels, 64 since Linux 6.x; and a newline. */
#define PROCFS_COMM_MAX 66
/* /proc/PID/cgroup's "0::" line: a cgroup path. */
#define PROCFS_CGROUP_MAX (PATH_MAX + 8)

/* One line of /proc/PID/maps: "start-end perms offset major:minor inode [path]". */
struct procfs_mapping {
        uint64_t start, end, offset;
        char perms[5];                  /* "r-xp" */
        uint32_t dev_major, dev_minor;
        uint64_t inode;
        const char *path;               /* into the parsed line; "" for anonymous memory */
};

/* One line (without its newline; modified in place). -EBADMSG when malformed. */
int procfs_parse_maps_line(char *line, struct procfs_mapping *ret);

/*
 * The executable mappings of process pid that a profile can name: those of
 * a file (a path from "/", " (deleted)" kept as the kernel writes it in
 * PERF_RECORD_MMAP2 too) and [vdso], as source_mappings of pid (no build
 * id: the symbolizer reads it from the file). Returns the number handed to
 * cb, or the first negative value cb returned. A malformed line is skipped.
 */
struct source_mapping;
int procfs_exec_mappings(const char *root, uint32_t pid, int (*cb)(void *userdata, const struct source_mapping *m),
                         void *userdata);

/* Field 22 of a stat line ("starttime": clock ticks after boot); the comm may hold spaces and ')'. */
int procfs_parse_stat_start(const char *buf, uint64_t *ret);
/* <root>/<pid>/stat's start time: with the pid, what names one process across PID reuse. */
int procfs_start_time(const char *root, uint32_t pid, uint64_t *ret);

/*
 * The name of thread tid of process pid: <root>/<pid>/comm for the leader,
 * <root>/<pid>/task/<tid>/comm otherwise; without its newline, cut to len - 1.
 */
int procfs_comm(const char *root, uint32_t pid, uint32_t tid, char *buf, size_t len);

/*
 * The cgroup v2 path of thread tid of process pid ("/system.slice/x.service"):
 * the "0::" line of <root>/<pid>/task/<tid>/cgroup (Documentation/admin-guide/cgroup-v2.rst
 * "Processes"). -ENODATA when the task is in no v2 hierarchy (cgroup v1 only),
 * -ENAMETOOLONG when it does not fit in len.
 */
int procfs_cgroup(const char *root, uint32_t pid, uint32_t tid, char *buf, size_t len);
