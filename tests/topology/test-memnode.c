/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PA -> NUMA node (collectors/topology/memnode.c) from a fake sysfs tree and from
 * HEADER_MEM_TOPOLOGY sections laid out as perf's write_mem_topology()
 * writes them; the expected nodes are the fixtures' own block lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "memnode.h"

#define BLOCK UINT64_C(0x8000000) /* 128 MiB, x86-64's usual memory block */

static void put(const char *root, const char *rel, const char *text) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void mkdirs(const char *root, const char *rel) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        for (char *p = path + strlen(root) + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        (void) mkdir(path, 0755);
                        *p = '/';
                }
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void link_block(const char *root, unsigned node, unsigned block) {
        char rel[128], target[128], path[PATH_MAX];

        snprintf(rel, sizeof(rel), "sys/devices/system/memory/memory%u", block);
        mkdirs(root, rel);
        snprintf(target, sizeof(target), "../../memory/memory%u", block);
        snprintf(path, sizeof(path), "%s/sys/devices/system/node/node%u/memory%u", root, node, block);
        assert_int_equal(symlink(target, path), 0);
}

static void test_sysfs(void **state) {
        /* node0: blocks 0-3 and 12; node1: 4-7 and 10 (a hole at 8, 9, 11). */
        static const struct { unsigned node, block; } blocks[] = {
                { 0, 0 }, { 0, 3 }, { 0, 1 }, { 0, 2 }, { 0, 12 },
                { 1, 5 }, { 1, 4 }, { 1, 7 }, { 1, 6 }, { 1, 10 },
        };
        char root[] = "/tmp/armprofd-memnode-XXXXXX", cmd[PATH_MAX + 16];
        struct memnode *m = NULL;

        assert_non_null(mkdtemp(root));
        mkdirs(root, "sys/devices/system/node/node0");
        mkdirs(root, "sys/devices/system/node/node1");
        mkdirs(root, "sys/devices/system/node/node0/cpu0");      /* not a memory block */
        mkdirs(root, "sys/devices/system/node/power");           /* not a node */
        mkdirs(root, "sys/devices/system/memory");
        put(root, "sys/devices/system/node/node0/memory_failure", "");
        put(root, "sys/devices/system/memory/block_size_bytes", "8000000\n");
        for (size_t i = 0; i < ELEMENTSOF(blocks); i++)
                link_block(root, blocks[i].node, blocks[i].block);

        assert_int_equal(memnode_from_sysfs(root, &m), 0);
        for (size_t i = 0; i < ELEMENTSOF(blocks); i++) {
                uint64_t pa = blocks[i].block * BLOCK;

                assert_int_equal(memnode_node(m, pa), (int) blocks[i].node);
                assert_int_equal(memnode_node(m, pa + BLOCK - 1), (int) blocks[i].node);
        }
        assert_int_equal(memnode_node(m, 8 * BLOCK), -1);
        assert_int_equal(memnode_node(m, 11 * BLOCK + 64), -1);
        assert_int_equal(memnode_node(m, 13 * BLOCK), -1);
        assert_int_equal(memnode_node(NULL, 0), -1);
        m = memnode_free(m);

        /* No memory blocks (CONFIG_MEMORY_HOTPLUG=n, or a container without sysfs). */
        put(root, "sys/devices/system/memory/block_size_bytes", "zz\n");
        assert_int_equal(memnode_from_sysfs(root, &m), -EINVAL);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        assert_true(memnode_from_sysfs(root, &m) < 0);
        assert_null(m);
}

/* HEADER_MEM_TOPOLOGY: version, block size, nr; per node: node, bits, bits, words. */
static size_t header(uint64_t *w, uint64_t block_size, unsigned nodes, uint64_t bits,
                     const uint64_t *const *maps) {
        size_t n = 0;

        w[n++] = 1;
        w[n++] = block_size;
        w[n++] = nodes;
        for (unsigned i = 0; i < nodes; i++) {
                w[n++] = i;
                w[n++] = bits;
                w[n++] = bits;
                for (uint64_t k = 0; k < (bits + 63) / 64; k++)
                        w[n++] = maps[i][k];
        }
        return n * sizeof(uint64_t);
}

static void test_perf_header(void **state) {
        /* 100 blocks of 1 GiB: node 0 has 0-49, node 1 50-98 and bit 99 is nobody's. */
        static const uint64_t n0[2] = { UINT64_C(0x3ffffffffffff), 0 };
        static const uint64_t n1[2] = { UINT64_C(0xfffc000000000000), UINT64_C(0x7ffffffff) };
        const uint64_t *maps[] = { n0, n1 };
        uint64_t w[32];
        size_t len = header(w, UINT64_C(1) << 30, 2, 100, maps);
        struct memnode *m = NULL;

        assert_int_equal(memnode_from_perf_header((const uint8_t *) w, len, &m), 0);
        assert_int_equal(memnode_node(m, 0), 0);
        assert_int_equal(memnode_node(m, (UINT64_C(50) << 30) - 1), 0);
        assert_int_equal(memnode_node(m, UINT64_C(50) << 30), 1);
        assert_int_equal(memnode_node(m, (UINT64_C(99) << 30) - 1), 1);
        assert_int_equal(memnode_node(m, UINT64_C(99) << 30), -1);
        m = memnode_free(m);

        /* Every cut of the section is refused, none reads past it. */
        for (size_t cut = 0; cut < len; cut++) {
                uint8_t *copy = malloc(cut ? cut : 1);

                memcpy(copy, w, cut);
                assert_int_equal(memnode_from_perf_header(copy, cut, &m), -EBADMSG);
                free(copy);
        }
        /* Another version, two bit counts that disagree, a block on two nodes. */
        w[0] = 2;
        assert_int_equal(memnode_from_perf_header((const uint8_t *) w, len, &m), -EBADMSG);
        w[0] = 1;
        w[4] = 99;
        assert_int_equal(memnode_from_perf_header((const uint8_t *) w, len, &m), -EBADMSG);
        w[4] = 100;
        w[3 + 3] |= UINT64_C(1) << 60;          /* node 0 claims block 60 too */
        assert_int_equal(memnode_from_perf_header((const uint8_t *) w, len, &m), -EINVAL);
        assert_null(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sysfs),
                cmocka_unit_test(test_perf_header),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
