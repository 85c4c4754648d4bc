/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "memnode.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"
#include "pmu-sysfs.h"
#include "strbuf.h"

#define MEMNODE_VALUE_MAX       64
#define MEMTOPO_VERSION         1

struct range {
        uint64_t start, end;            /* block numbers, [start, end) */
        uint32_t node;
};

struct memnode {
        uint64_t block_size;
        size_t n, cap;
        struct range *ranges;           /* sorted by start after build() */
};

static int add_block(struct memnode *m, uint64_t block, uint32_t node) {
        if (m->n > 0 && m->ranges[m->n - 1].node == node && m->ranges[m->n - 1].end == block) {
                m->ranges[m->n - 1].end++;
                return 0;
        }
        if (m->n == MEMNODE_RANGES_MAX)
                return -E2BIG;
        if (m->n == m->cap) {
                m->cap = m->cap ? 2 * m->cap : 64;
                m->ranges = xrealloc(m->ranges, m->cap * sizeof(*m->ranges));
        }
        m->ranges[m->n++] = (struct range) { block, block + 1, node };
        return 0;
}

static int cmp_range(const void *x, const void *y) {
        const struct range *a = x, *b = y;

        return a->start < b->start ? -1 : a->start > b->start;
}

/* Sort, merge touching runs of one node, refuse overlaps (a block on two nodes). */
static int build(struct memnode *m, struct memnode **ret) {
        size_t k = 0;

        if (m->n == 0 || m->block_size == 0) {
                memnode_free(m);
                return -ENOENT;
        }
        qsort(m->ranges, m->n, sizeof(*m->ranges), cmp_range);
        for (size_t i = 0; i < m->n; i++) {
                if (k > 0 && m->ranges[i].start < m->ranges[k - 1].end) {
                        memnode_free(m);
                        return -EINVAL;
                }
                if (k > 0 && m->ranges[i].start == m->ranges[k - 1].end && m->ranges[i].node == m->ranges[k - 1].node)
                        m->ranges[k - 1].end = m->ranges[i].end;
                else
                        m->ranges[k++] = m->ranges[i];
        }
        m->n = k;
        *ret = m;
        return 0;
}

/* "name" + decimal number, nothing else; false otherwise. */
static bool numbered(const char *s, const char *prefix, uint64_t *ret) {
        size_t n = strlen(prefix);

        return strncmp(s, prefix, n) == 0 && s[n] >= '0' && s[n] <= '9' && safe_atou64(s + n, ret) == 0;
}

static int read_node(struct memnode *m, const char *dir, uint32_t node) {
        DIR *d = opendir(dir);
        struct dirent *e;
        uint64_t block;
        int r = 0;

        if (!d)
                return -errno;
        while (r == 0 && (e = readdir(d)))
                if (numbered(e->d_name, "memory", &block))
                        r = add_block(m, block, node);
        closedir(d);
        return r;
}

int memnode_from_sysfs(const char *root, struct memnode **ret) {
        char path[PATH_MAX], value[MEMNODE_VALUE_MAX], *end;
        struct memnode *m;
        struct dirent *e;
        uint64_t node;
        DIR *d;
        int r;

        if (pmu_sysfs_join(path, sizeof(path), root, "sys/devices/system/memory/block_size_bytes", NULL) < 0)
                return -ENAMETOOLONG;
        r = pmu_sysfs_read_string(path, value, sizeof(value));
        if (r < 0)
                return r;
        m = xcalloc(1, sizeof(*m));
        /* Hexadecimal without "0x" (drivers/base/memory.c, block_size_bytes_show). */
        errno = 0;
        m->block_size = strtoull(value, &end, 16);
        if (errno || end == value || *end || m->block_size == 0) {
                memnode_free(m);
                return -EINVAL;
        }
        if (pmu_sysfs_join(path, sizeof(path), root, "sys/devices/system/node", NULL) < 0) {
                memnode_free(m);
                return -ENAMETOOLONG;
        }
        d = opendir(path);
        if (!d) {
                r = -errno;
                memnode_free(m);
                return r;
        }
        r = 0;
        while (r == 0 && (e = readdir(d))) {
                char dir[PATH_MAX];

                if (!numbered(e->d_name, "node", &node) || node >= MEMNODE_NODES_MAX)
                        continue;
                r = pmu_sysfs_join(dir, sizeof(dir), path, e->d_name, NULL) < 0 ? -ENAMETOOLONG :
                        read_node(m, dir, (uint32_t) node);
        }
        closedir(d);
        if (r < 0) {
                memnode_free(m);
                return r;
        }
        return build(m, ret);
}

static bool get_u64(const uint8_t *data, size_t len, size_t *pos, uint64_t *ret) {
        if (len - *pos < sizeof(uint64_t))
                return false;
        memcpy(ret, data + *pos, sizeof(*ret));
        *pos += sizeof(*ret);
        return true;
}

int memnode_from_perf_header(const uint8_t *data, size_t len, struct memnode **ret) {
        uint64_t version, nr, node, bits, bits2, word;
        struct memnode *m = xcalloc(1, sizeof(*m));
        size_t pos = 0;
        int r = -EBADMSG;

        /* u64 version, block_size, nr_nodes; per node: u64 node, u64 size
         * (bits), then do_write_bitmap(): u64 size again and the u64 words. */
        if (!get_u64(data, len, &pos, &version) || version != MEMTOPO_VERSION ||
            !get_u64(data, len, &pos, &m->block_size) || !get_u64(data, len, &pos, &nr) ||
            nr > MEMNODE_NODES_MAX)
                goto fail;
        for (uint64_t i = 0; i < nr; i++) {
                if (!get_u64(data, len, &pos, &node) || !get_u64(data, len, &pos, &bits) ||
                    !get_u64(data, len, &pos, &bits2) || bits != bits2 || node >= MEMNODE_NODES_MAX ||
                    bits / 64 > (len - pos) / sizeof(uint64_t))
                        goto fail;
                for (uint64_t w = 0; w < (bits + 63) / 64; w++) {
                        if (!get_u64(data, len, &pos, &word))
                                goto fail;
                        for (; word; word &= word - 1) {
                                uint64_t b = w * 64 + (uint64_t) __builtin_ctzll(word);

                                if (b >= bits)
                                        break;
                                r = add_block(m, b, (uint32_t) node);
                                if (r < 0)
                                        goto fail;
                        }
                }
        }
        return build(m, ret);
fail:
        memnode_free(m);
        return r < 0 ? r : -EBADMSG;
}

struct memnode *memnode_free(struct memnode *m) {
        if (!m)
                return NULL;
        free(m->ranges);
        free(m);
        return NULL;
}

int memnode_node(const struct memnode *m, uint64_t pa) {
        uint64_t block;
        size_t lo = 0, hi;

        if (!m)
                return -1;
        block = pa / m->block_size;
        hi = m->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (m->ranges[mid].start <= block)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && block < m->ranges[lo - 1].end ? (int) m->ranges[lo - 1].node : -1;
}
