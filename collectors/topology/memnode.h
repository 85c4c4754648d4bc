/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The NUMA node of a physical address, for the Node column of hot lines
 * (perf c2c's, which it takes from HEADER_MEM_TOPOLOGY: tools/perf/builtin-c2c.c).
 *
 * The topology is the kernel's memory blocks: every node's directory
 * /sys/devices/system/node/nodeN holds a memoryM link per block it owns,
 * block M covering [M, M + 1) x /sys/devices/system/memory/block_size_bytes
 * (Documentation/admin-guide/mm/memory-hotplug.rst). That is exact where
 * /proc/zoneinfo is not (a zone's span may enclose another node's memory).
 * perf record stores the same map in a perf.data (HEADER_MEM_TOPOLOGY: per
 * node a bitmap of its blocks), which is what a replayed file's addresses
 * must be read with, never the replaying machine's.
 *
 * Runs of consecutive blocks on one node are kept as one range; at most
 * MEMNODE_RANGES_MAX ranges (more: the map is refused, nodes are unknown).
 */

#include <stddef.h>
#include <stdint.h>

#define MEMNODE_RANGES_MAX      65536U
#define MEMNODE_NODES_MAX       4096U

struct memnode;

/* From sysfs under root ("/" in production). -ENOENT when the kernel shows no memory blocks. */
int memnode_from_sysfs(const char *root, struct memnode **ret);
/* From a HEADER_MEM_TOPOLOGY feature section (tools/perf/util/header.c write_mem_topology). */
int memnode_from_perf_header(const uint8_t *data, size_t len, struct memnode **ret);
struct memnode *memnode_free(struct memnode *m);

/* The node holding pa, or -1 when no block of the map covers it (m may be NULL). */
int memnode_node(const struct memnode *m, uint64_t pa);
