/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Who ran the code: a process's cgroup v2 path, and what that path stands
 * for to an operator (a systemd unit, a container), from /proc and from the
 * cgroup ids the kernel puts in samples (PERF_SAMPLE_CGROUP) and in
 * PERF_RECORD_CGROUP (perf_event_open(2)).
 *
 * Library code: no logging, errors are negative errno values, allocation
 * failure aborts (strbuf.h). A cgroup_map is one thread's (the collector's).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The cgroup v2 path of a process: the "0::" line of <procfs_root>/<pid>/cgroup
 * (proc(5); procfs_root NULL: "/proc"), without the " (deleted)" the kernel
 * appends for a removed cgroup (kernel/cgroup/cgroup.c, proc_cgroup_show()).
 * 0; -ENOENT when the process is gone; -EBADMSG when the file has no "0::"
 * line (a host with cgroup v1 only) or it is malformed; -ENOBUFS when the path
 * does not fit in len bytes. buf is written only on success.
 */
int cgroup_of_pid(const char *procfs_root, uint32_t pid, char *buf, size_t len);
/* The same, from the text of such a file (size bytes, not NUL-terminated). */
int cgroup_parse_proc(const char *text, size_t size, char *buf, size_t len);

/*
 * What a cgroup path stands for, into buf: the systemd unit ("nginx.service",
 * "session-3.scope", the innermost .service/.scope under user@UID.service
 * too), a container id (64 hex: docker "docker-<id>.scope" and cgroupfs
 * "/docker/<id>", containerd "cri-containerd-<id>.scope", cri-o
 * "crio-<id>.scope", podman "libpod-<id>.scope", kubepods .../pod<uid>/<id>),
 * else the raw path; "" for the root "/". Returns the kind. A container inside
 * a unit (docker-<id>.scope under system.slice) and a unit inside a container
 * (a container running systemd) are both the container. Cut to len - 1 bytes.
 */
enum cgroup_kind {
        CGROUP_KIND_ROOT,
        CGROUP_KIND_UNIT,
        CGROUP_KIND_CONTAINER,
        CGROUP_KIND_PATH,
};
enum cgroup_kind cgroup_service(const char *path, char *buf, size_t len);

/*
 * What /proc says of a process that still runs: its cgroup v2 path
 * (cgroup_of_pid()) and what that stands for (cgroup_service()). false
 * for pid 0 (the idle task has none) or when the process is gone.
 */
bool cgroup_describe_pid(const char *procfs_root, uint32_t pid, char *path, size_t path_len, char *service,
                         size_t service_len);
/* "root", "unit", "container", "path". */
const char *cgroup_kind_to_string(enum cgroup_kind k);

/* A container id: 64 lowercase hex digits (docker, containerd, cri-o, podman). */
#define CGROUP_CONTAINER_ID_LEN 64
/* Where cgroup v2 is mounted: the unified hierarchy, or under it on a hybrid host (systemd's). */
#define CGROUP_ROOT_DEFAULT     "/sys/fs/cgroup"
#define CGROUP_ROOT_HYBRID      "/sys/fs/cgroup/unified"
/* The default bound of a cgroup_map: cgroups remembered. */
#define CGROUP_MAP_MAX_DEFAULT  4096
/* How often an id nobody announced may cost a rescan of the hierarchy. */
#define CGROUP_MAP_RESCAN_USEC  (10 * UINT64_C(1000000))

/*
 * cgroup id (PERF_SAMPLE_CGROUP, PERF_RECORD_CGROUP: the kernfs node id, what
 * name_to_handle_at(2) returns as the handle of the cgroup's directory, as
 * perf's synthetic CGROUP records do in tools/perf/util/synthetic-events.c)
 * -> path, as /proc/PID/cgroup spells it ("/system.slice/nginx.service", "/"
 * for the root). Bounded: at most max cgroups, the least recently used
 * forgotten first (a scan refreshes every cgroup that still exists, so the
 * removed ones go first), each eviction counted.
 */
struct cgroup_map;
/* max 0: CGROUP_MAP_MAX_DEFAULT. Returns 0. */
int cgroup_map_new(size_t max, struct cgroup_map **ret);
struct cgroup_map *cgroup_map_free(struct cgroup_map *m);
/*
 * Walk a cgroup2 mount adding every directory: the number of cgroups found,
 * or -errno (-ENOTDIR/-EMEDIUMTYPE when it is not a cgroup2 mount).
 * cgroupfs_root NULL: CGROUP_ROOT_DEFAULT when it is a cgroup2 mount, else
 * CGROUP_ROOT_HYBRID (systemd's hybrid layout, cgroup v1 beside it). The
 * root is remembered for the rescans of cgroup_map_path().
 */
int cgroup_map_scan(struct cgroup_map *m, const char *cgroupfs_root);
/* PERF_RECORD_CGROUP: id is path. */
void cgroup_map_add(struct cgroup_map *m, uint64_t id, const char *path);
/*
 * The path of id, or NULL; valid until the next call on m. When id is
 * unknown, one rescan of the last scanned root (the default one if none) is
 * allowed per rescan interval, so an id from a cgroup made since costs at
 * most one walk of the hierarchy per interval, whatever the sample rate.
 */
const char *cgroup_map_path(struct cgroup_map *m, uint64_t id);
/* The rescan interval (default CGROUP_MAP_RESCAN_USEC; 0: at every miss; UINT64_MAX: never). */
void cgroup_map_set_rescan_interval(struct cgroup_map *m, uint64_t usec);
uint64_t cgroup_map_evictions(const struct cgroup_map *m);
size_t cgroup_map_size(const struct cgroup_map *m);
