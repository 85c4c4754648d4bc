/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "procfs.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"
#include "source.h"

int procfs_tgid(const char *root, uint32_t tid, uint32_t *ret) {
        char path[PATH_MAX], line[256];
        int k = -EBADMSG;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/status", root ?: "/proc", tid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Tgid:", 5) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        k = safe_atou32(line + 5 + strspn(line + 5, " \t"), ret);
                        if (k < 0 || *ret == 0)
                                k = -EBADMSG;
                        break;
                }
        fclose(f);
        return k;
}

/* A whole (small) file into buf, NUL-terminated; -EFBIG when it does not fit. */
static int read_small(const char *path, char *buf, size_t len, size_t *ret_len) {
        size_t n;
        FILE *f;
        int k = 0;

        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        n = fread(buf, 1, len - 1, f);
        if (ferror(f))
                /* A task that exits while its file is read: ESRCH. */
                k = errno == ESRCH ? -ENOENT : -EIO;
        else if (n == len - 1 && fgetc(f) != EOF)
                k = -EFBIG;
        fclose(f);
        if (k < 0)
                return k;
        buf[n] = '\0';
        if (ret_len)
                *ret_len = n;
        return 0;
}

static int parse_hex(const char *s, const char **ret_end, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!isxdigit((unsigned char) *s))
                return -EBADMSG;
        errno = 0;
        v = strtoull(s, &end, 16);
        if (errno != 0)
                return -EBADMSG;
        *ret = v;
        *ret_end = end;
        return 0;
}

int procfs_parse_maps_line(char *line, struct procfs_mapping *ret) {
        struct procfs_mapping m = {};
        const char *p = line;
        uint64_t v;

        /* proc(5) "/proc/pid/maps": address perms offset dev inode pathname, hex but the inode. */
        if (parse_hex(p, &p, &m.start) < 0 || *p++ != '-' || parse_hex(p, &p, &m.end) < 0 || *p++ != ' ' ||
            m.end < m.start)
                return -EBADMSG;
        for (size_t i = 0; i < 4; i++) {
                if (!strchr("rwxps-", *p) || *p == '\0')
                        return -EBADMSG;
                m.perms[i] = *p++;
        }
        if (*p++ != ' ' || parse_hex(p, &p, &m.offset) < 0 || *p++ != ' ' || parse_hex(p, &p, &v) < 0 ||
            v > UINT32_MAX || *p++ != ':')
                return -EBADMSG;
        m.dev_major = (uint32_t) v;
        if (parse_hex(p, &p, &v) < 0 || v > UINT32_MAX || *p++ != ' ' || !isdigit((unsigned char) *p))
                return -EBADMSG;
        m.dev_minor = (uint32_t) v;
        errno = 0;
        m.inode = strtoull(p, (char **) &p, 10);
        if (errno != 0 || (*p != ' ' && *p != '\0'))
                return -EBADMSG;
        /* The path after the padding; it may hold spaces of its own. */
        p += strspn(p, " ");
        m.path = p;
        *ret = m;
        return 0;
}

int procfs_exec_mappings(const char *root, uint32_t pid, int (*cb)(void *userdata, const struct source_mapping *m),
                         void *userdata) {
        char path[PATH_MAX], line[PROCFS_MAPS_LINE_MAX];
        bool cut = false;
        int n = 0, k = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", root ?: "/proc", pid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        while (fgets(line, sizeof(line), f)) {
                struct procfs_mapping m;
                size_t len = strlen(line);
                bool whole = len > 0 && line[len - 1] == '\n';

                /* The tail of a line longer than the buffer: skipped with it. */
                if (cut) {
                        cut = !whole;
                        continue;
                }
                cut = !whole && !feof(f);
                if (cut)
                        continue;
                if (whole)
                        line[len - 1] = '\0';
                if (procfs_parse_maps_line(line, &m) < 0 || m.perms[2] != 'x')
                        continue;
                if (m.path[0] != '/' && !streq(m.path, "[vdso]"))
                        continue;
                k = cb(userdata, &(struct source_mapping) {
                        .pid = pid,
                        .start = m.start,
                        .len = m.end - m.start,
                        .pgoff = m.offset,
                        .filename = m.path,
                });
                if (k < 0)
                        break;
                n++;
        }
        if (k >= 0 && ferror(f))
                k = errno == ESRCH ? -ENOENT : -EIO;
        fclose(f);
        return k < 0 ? k : n;
}

int procfs_parse_stat_start(const char *buf, uint64_t *ret) {
        const char *p = strrchr(buf, ')');
        uint64_t v;

        /* proc(5): "pid (comm) state ..."; the comm may hold ')' itself, the last one ends it.
         * Fields 3 (state) to 21 precede starttime (22). */
        if (!p)
                return -EBADMSG;
        p++;
        for (unsigned field = 3; field <= 22; field++) {
                const char *end;
                size_t len;

                if (*p != ' ')
                        return -EBADMSG;
                p++;
                len = strcspn(p, " \n");
                if (len == 0)
                        return -EBADMSG;
                end = p + len;
                if (field == 22) {
                        char num[DECIMAL_STR_MAX(uint64_t)];

                        if (len >= sizeof(num))
                                return -EBADMSG;
                        memcpy(num, p, len);
                        num[len] = '\0';
                        if (safe_atou64(num, &v) < 0)
                                return -EBADMSG;
                        *ret = v;
                        return 0;
                }
                p = end;
        }
        return -EBADMSG;
}

int procfs_start_time(const char *root, uint32_t pid, uint64_t *ret) {
        char path[PATH_MAX], buf[PROCFS_STAT_MAX];
        int k;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", root ?: "/proc", pid);
        k = read_small(path, buf, sizeof(buf), NULL);
        if (k < 0)
                return k == -EFBIG ? -EBADMSG : k;
        return procfs_parse_stat_start(buf, ret);
}

int procfs_comm(const char *root, uint32_t pid, uint32_t tid, char *buf, size_t len) {
        char path[PATH_MAX], comm[PROCFS_COMM_MAX];
        size_t n;
        int k;

        if (len == 0)
                return -EINVAL;
        if (tid == pid)
                snprintf(path, sizeof(path), "%s/%" PRIu32 "/comm", root ?: "/proc", pid);
        else
                snprintf(path, sizeof(path), "%s/%" PRIu32 "/task/%" PRIu32 "/comm", root ?: "/proc", pid, tid);
        k = read_small(path, comm, sizeof(comm), &n);
        if (k < 0)
                return k == -EFBIG ? -EBADMSG : k;
        if (n == 0 || comm[n - 1] != '\n')
                return -EBADMSG;
        comm[n - 1] = '\0';
        snprintf(buf, len, "%s", comm);
        return 0;
}

int procfs_cgroup(const char *root, uint32_t pid, uint32_t tid, char *buf, size_t len) {
        char path[PATH_MAX], line[PROCFS_CGROUP_MAX];
        int k = -ENODATA;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/task/%" PRIu32 "/cgroup", root ?: "/proc", pid, tid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        while (fgets(line, sizeof(line), f)) {
                size_t n = strlen(line);

                if (strncmp(line, "0::", 3) != 0)
                        continue;
                if (n == 0 || line[n - 1] != '\n') {
                        k = feof(f) ? 0 : -ENAMETOOLONG;
                        if (k < 0)
                                break;
                } else
                        line[--n] = '\0';
                if (line[3] != '/') {
                        k = -EBADMSG;
                        break;
                }
                if (n - 3 >= len) {
                        k = -ENAMETOOLONG;
                        break;
                }
                memcpy(buf, line + 3, n - 3 + 1);
                k = 0;
                break;
        }
        if (k == -ENODATA && ferror(f))
                k = errno == ESRCH ? -ENOENT : -EIO;
        fclose(f);
        return k;
}
