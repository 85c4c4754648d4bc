/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "strbuf.h"

/*
 * /proc/PID/cgroup: one line per hierarchy, "ID:CONTROLLERS:PATH" (proc(5));
 * at most 16 cgroup v1 hierarchies (CGROUP_SUBSYS_COUNT and named ones,
 * kernel/cgroup/cgroup.c) and the v2 line, each path within PATH_MAX. More
 * than this is no file the kernel writes.
 */
#define PROC_CGROUP_FILE_MAX    (17U * (PATH_MAX + 256U))
/* Nesting the scan follows: kubepods under a slice under a user's manager is 6 deep. */
#define SCAN_MAX_DEPTH          32U
#define DELETED_SUFFIX          " (deleted)"
#define NONE                    UINT32_MAX

/* What a v2 "0::" line is (kernel/cgroup/cgroup.c, proc_cgroup_show()). */
static const char v2_prefix[] = "0::";

int cgroup_parse_proc(const char *text, size_t size, char *buf, size_t len) {
        for (size_t off = 0; off < size;) {
                const char *line = text + off, *nl = memchr(line, '\n', size - off);
                size_t n = nl ? (size_t) (nl - line) : size - off;

                off += n + 1;
                if (n < sizeof(v2_prefix) - 1 || memcmp(line, v2_prefix, sizeof(v2_prefix) - 1) != 0)
                        continue;
                line += sizeof(v2_prefix) - 1;
                n -= sizeof(v2_prefix) - 1;
                if (n >= sizeof(DELETED_SUFFIX) - 1 &&
                    memcmp(line + n - (sizeof(DELETED_SUFFIX) - 1), DELETED_SUFFIX, sizeof(DELETED_SUFFIX) - 1) == 0)
                        n -= sizeof(DELETED_SUFFIX) - 1;
                if (n == 0 || line[0] != '/' || memchr(line, '\0', n))
                        return -EBADMSG;
                if (n >= len)
                        return -ENOBUFS;
                memcpy(buf, line, n);
                buf[n] = '\0';
                return 0;
        }
        return -EBADMSG;
}

int cgroup_of_pid(const char *procfs_root, uint32_t pid, char *buf, size_t len) {
        struct strbuf text = STRBUF_INIT;
        char path[PATH_MAX];
        _cleanup_close_ int fd = -1;
        int r;

        if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/cgroup", procfs_root ?: "/proc", pid) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        for (;;) {
                ssize_t n;

                if (text.len >= PROC_CGROUP_FILE_MAX) {
                        strbuf_done(&text);
                        return -EBADMSG;
                }
                strbuf_reserve(&text, PATH_MAX);
                n = read(fd, text.buf + text.len, MIN(text.cap - text.len, PROC_CGROUP_FILE_MAX - text.len));
                if (n < 0) {
                        r = errno == ESRCH ? -ENOENT : -errno;
                        strbuf_done(&text);
                        return r;
                }
                if (n == 0)
                        break;
                text.len += (size_t) n;
        }
        r = cgroup_parse_proc(text.buf ?: "", text.len, buf, len);
        strbuf_done(&text);
        return r;
}

bool cgroup_describe_pid(const char *procfs_root, uint32_t pid, char *path, size_t path_len, char *service,
                         size_t service_len) {
        if (pid == 0 || cgroup_of_pid(procfs_root, pid, path, path_len) < 0)
                return false;
        (void) cgroup_service(path, service, service_len);
        return true;
}

/* ---- what a path stands for ---- */

static bool is_hex_id(const char *s, size_t n) {
        if (n != CGROUP_CONTAINER_ID_LEN)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static bool has_suffix(const char *s, size_t n, const char *suffix) {
        size_t k = strlen(suffix);

        return n > k && memcmp(s + n - k, suffix, k) == 0;
}

/*
 * The container id a path component names, or NULL. The shapes, by runtime:
 *  - systemd cgroup driver: "<prefix>-<id>.scope", with the prefixes of
 *    docker (moby daemon/cgroups, "docker"), containerd's CRI plugin
 *    ("cri-containerd"), cri-o ("crio") and podman ("libpod"); their
 *    monitor processes ("crio-conmon-<id>.scope", "libpod-conmon-...") are
 *    not the container and do not match;
 *  - cgroupfs driver: the bare id as a directory, under "/docker",
 *    "/kubepods/<qos>/pod<uid>", containerd's namespace ("/k8s.io").
 */
static const char *container_id(const char *c, size_t n) {
        static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-" };
        static const char scope[] = ".scope";

        if (is_hex_id(c, n))
                return c;
        if (!has_suffix(c, n, scope))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
                size_t p = strlen(prefixes[i]);

                if (n == p + CGROUP_CONTAINER_ID_LEN + sizeof(scope) - 1 && memcmp(c, prefixes[i], p) == 0 &&
                    is_hex_id(c + p, CGROUP_CONTAINER_ID_LEN))
                        return c + p;
        }
        return NULL;
}

/* A unit a process can run in (systemd.unit(5)): slices hold none. */
static bool is_unit(const char *c, size_t n) {
        return has_suffix(c, n, ".service") || has_suffix(c, n, ".scope");
}

static void copy_cut(char *buf, size_t len, const char *s, size_t n) {
        if (len == 0)
                return;
        n = MIN(n, len - 1);
        memcpy(buf, s, n);
        buf[n] = '\0';
}

enum cgroup_kind cgroup_service(const char *path, char *buf, size_t len) {
        const char *unit = NULL;
        size_t unit_len = 0, end = strlen(path);

        /* Innermost component first: a container is named wherever it is, a unit only when no container is. */
        while (end > 0) {
                size_t start = end;
                const char *id;

                while (start > 0 && path[start - 1] != '/')
                        start--;
                if (end > start) {
                        id = container_id(path + start, end - start);
                        if (id) {
                                copy_cut(buf, len, id, CGROUP_CONTAINER_ID_LEN);
                                return CGROUP_KIND_CONTAINER;
                        }
                        if (!unit && is_unit(path + start, end - start)) {
                                unit = path + start;
                                unit_len = end - start;
                        }
                }
                end = start > 0 ? start - 1 : 0;
        }
        if (unit) {
                copy_cut(buf, len, unit, unit_len);
                return CGROUP_KIND_UNIT;
        }
        if (path[strspn(path, "/")] == '\0') {
                copy_cut(buf, len, "", 0);
                return CGROUP_KIND_ROOT;
        }
        copy_cut(buf, len, path, strlen(path));
        return CGROUP_KIND_PATH;
}

const char *cgroup_kind_to_string(enum cgroup_kind k) {
        static const char *const names[] = {
                [CGROUP_KIND_ROOT] = "root",
                [CGROUP_KIND_UNIT] = "unit",
                [CGROUP_KIND_CONTAINER] = "container",
                [CGROUP_KIND_PATH] = "path",
        };

        return (unsigned) k < ELEMENTSOF(names) ? names[k] : NULL;
}

/* ---- id -> path ---- */

struct entry {
        uint64_t id;
        char *path;             /* NULL: free */
        uint32_t hnext;         /* hash chain */
        uint32_t prev, next;    /* LRU list, most recent at head */
};

struct cgroup_map {
        size_t max;
        struct entry *entries;  /* max of them */
        uint32_t *buckets;      /* n_buckets, a power of two */
        size_t n_buckets, n;
        uint32_t head, tail, free_list;
        uint64_t evictions;
        char *root;             /* of the last scan; NULL: the default */
        uint64_t rescan_usec, last_scan_usec;
        bool scanned;
};

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static size_t bucket_of(const struct cgroup_map *m, uint64_t id) {
        /* Fibonacci hashing: ids are consecutive inode numbers. */
        return (size_t) ((id * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (m->n_buckets - 1);
}

int cgroup_map_new(size_t max, struct cgroup_map **ret) {
        struct cgroup_map *m = xcalloc(1, sizeof(*m));

        m->max = max ? MIN(max, (size_t) NONE - 1) : CGROUP_MAP_MAX_DEFAULT;
        m->entries = xcalloc(m->max, sizeof(*m->entries));
        for (m->n_buckets = 1; m->n_buckets < m->max; m->n_buckets *= 2)
                ;
        m->buckets = xmalloc(m->n_buckets * sizeof(*m->buckets));
        for (size_t i = 0; i < m->n_buckets; i++)
                m->buckets[i] = NONE;
        for (size_t i = 0; i < m->max; i++)
                m->entries[i].hnext = i + 1 < m->max ? (uint32_t) (i + 1) : NONE;
        m->free_list = 0;
        m->head = m->tail = NONE;
        m->rescan_usec = CGROUP_MAP_RESCAN_USEC;
        *ret = m;
        return 0;
}

struct cgroup_map *cgroup_map_free(struct cgroup_map *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->max; i++)
                free(m->entries[i].path);
        free(m->entries);
        free(m->buckets);
        free(m->root);
        free(m);
        return NULL;
}

static void lru_unlink(struct cgroup_map *m, uint32_t i) {
        struct entry *e = &m->entries[i];

        if (e->prev != NONE)
                m->entries[e->prev].next = e->next;
        else
                m->head = e->next;
        if (e->next != NONE)
                m->entries[e->next].prev = e->prev;
        else
                m->tail = e->prev;
}

static void lru_push_head(struct cgroup_map *m, uint32_t i) {
        struct entry *e = &m->entries[i];

        e->prev = NONE;
        e->next = m->head;
        if (m->head != NONE)
                m->entries[m->head].prev = i;
        m->head = i;
        if (m->tail == NONE)
                m->tail = i;
}

static uint32_t find(const struct cgroup_map *m, uint64_t id) {
        for (uint32_t i = m->buckets[bucket_of(m, id)]; i != NONE; i = m->entries[i].hnext)
                if (m->entries[i].id == id)
                        return i;
        return NONE;
}

static void remove_entry(struct cgroup_map *m, uint32_t i) {
        struct entry *e = &m->entries[i];
        uint32_t *p = &m->buckets[bucket_of(m, e->id)];

        while (*p != i)
                p = &m->entries[*p].hnext;
        *p = e->hnext;
        lru_unlink(m, i);
        free(e->path);
        e->path = NULL;
        e->hnext = m->free_list;
        m->free_list = i;
        m->n--;
}

void cgroup_map_add(struct cgroup_map *m, uint64_t id, const char *path) {
        uint32_t i = find(m, id);
        size_t b;

        if (i != NONE) {
                struct entry *e = &m->entries[i];

                if (!streq(e->path, path)) {
                        free(e->path);
                        e->path = xstrdup(path);
                }
                lru_unlink(m, i);
                lru_push_head(m, i);
                return;
        }
        if (m->free_list == NONE) {
                remove_entry(m, m->tail);
                m->evictions++;
        }
        i = m->free_list;
        m->free_list = m->entries[i].hnext;
        b = bucket_of(m, id);
        m->entries[i] = (struct entry) {
                .id = id,
                .path = xstrdup(path),
                .hnext = m->buckets[b],
        };
        m->buckets[b] = i;
        lru_push_head(m, i);
        m->n++;
}

/*
 * A cgroup's id: its kernfs node id, which name_to_handle_at(2) hands out as
 * an 8-byte handle (kernfs_encode_fh(), fs/kernfs/mount.c) and perf stores
 * as the id (tools/perf/util/synthetic-events.c). On 64-bit kernels it is the
 * directory's inode number too (kernfs_id_ino(), include/linux/kernfs.h),
 * the fallback for kernels without kernfs file handles.
 */
static int cgroup_id_at(int dirfd, const char *name, uint64_t *ret) {
        /* struct file_handle and room for the 8 bytes of its f_handle[], aligned for it. */
        uint64_t storage[(sizeof(struct file_handle) + sizeof(uint64_t) + sizeof(uint64_t) - 1) / sizeof(uint64_t)];
        struct file_handle *fh = (struct file_handle *) storage;
        struct stat st;
        int mount_id;

        fh->handle_bytes = sizeof(uint64_t);
        if (name_to_handle_at(dirfd, name, fh, &mount_id, 0) == 0 && fh->handle_bytes == sizeof(uint64_t)) {
                memcpy(ret, fh->f_handle, sizeof(uint64_t));
                return 0;
        }
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        *ret = (uint64_t) st.st_ino;
        return 0;
}

/*
 * Add the subdirectories of directory fd (taken) below path (its cgroup
 * path, "" for the root), depth levels down at most.
 */
static int scan_dir(struct cgroup_map *m, int fd, struct strbuf *path, unsigned depth) {
        DIR *d;
        struct dirent *de;
        int count = 0;

        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return 0;
        }
        while ((de = readdir(d))) {
                size_t len = path->len;
                uint64_t id;
                int sub;

                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (cgroup_id_at(dirfd(d), de->d_name, &id) < 0)
                        continue; /* removed since readdir() */
                strbuf_putc(path, '/');
                strbuf_puts(path, de->d_name);
                if (path->len < PATH_MAX) {
                        cgroup_map_add(m, id, path->buf);
                        count++;
                        if (depth > 0) {
                                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                                if (sub >= 0)
                                        count += scan_dir(m, sub, path, depth - 1);
                        }
                }
                path->len = len;
                path->buf[len] = '\0';
        }
        closedir(d);
        return count;
}

static bool is_cgroup2(const char *path) {
        struct statfs sfs;

        return statfs(path, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

int cgroup_map_scan(struct cgroup_map *m, const char *cgroupfs_root) {
        struct strbuf path = STRBUF_INIT;
        const char *root = cgroupfs_root;
        struct statfs sfs;
        uint64_t id;
        int fd, r;

        if (!root)
                root = is_cgroup2(CGROUP_ROOT_DEFAULT) || !is_cgroup2(CGROUP_ROOT_HYBRID) ? CGROUP_ROOT_DEFAULT
                                                                                        : CGROUP_ROOT_HYBRID;
        /*
         * Until a scan succeeds, the root asked for is the one a rescan
         * walks even when this scan fails (not the machine's own); after
         * one, a failed scan keeps the root that worked.
         */
        if (cgroupfs_root && !m->scanned && (!m->root || !streq(m->root, cgroupfs_root))) {
                free(m->root);
                m->root = xstrdup(cgroupfs_root);
        }
        if (statfs(root, &sfs) < 0)
                return -errno;
        if (sfs.f_type != CGROUP2_SUPER_MAGIC)
                return -EMEDIUMTYPE;
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = cgroup_id_at(AT_FDCWD, root, &id);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        free(m->root);
        m->root = cgroupfs_root ? xstrdup(cgroupfs_root) : NULL;
        m->scanned = true;
        m->last_scan_usec = now_usec();
        cgroup_map_add(m, id, "/");
        r = 1 + scan_dir(m, fd, &path, SCAN_MAX_DEPTH);
        strbuf_done(&path);
        return r;
}

const char *cgroup_map_path(struct cgroup_map *m, uint64_t id) {
        uint32_t i = find(m, id);

        if (i == NONE && m->rescan_usec != UINT64_MAX &&
            (!m->scanned || now_usec() - m->last_scan_usec >= m->rescan_usec)) {
                _cleanup_free_ char *root = m->root ? xstrdup(m->root) : NULL;

                /* Scanned or not, the interval starts now: a failing root costs one try per interval too. */
                m->scanned = true;
                m->last_scan_usec = now_usec();
                (void) cgroup_map_scan(m, root);
                i = find(m, id);
        }
        if (i == NONE)
                return NULL;
        lru_unlink(m, i);
        lru_push_head(m, i);
        return m->entries[i].path;
}

void cgroup_map_set_rescan_interval(struct cgroup_map *m, uint64_t usec) {
        m->rescan_usec = usec;
}

uint64_t cgroup_map_evictions(const struct cgroup_map *m) {
        return m->evictions;
}

size_t cgroup_map_size(const struct cgroup_map *m) {
        return m->n;
}
