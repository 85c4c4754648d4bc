/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * CPU sets as the kernel prints them in sysfs ("0-3,5,7-9"; see
 * Documentation/ABI/testing/sysfs-devices-system-cpu and bitmap_parselist()
 * in lib/bitmap.c), held in a fixed-size bitmap.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Upper bound on CPU numbers we accept from sysfs. Larger numbers are
 * rejected as -ERANGE rather than silently truncated. */
#define CPULIST_MAX_CPUS 4096U
#define CPULIST_WORD_BITS 64U
/* The longest cpulist text for CPULIST_MAX_CPUS CPUs ("0,2,4,...,4094" is
 * about 10 KiB); anything longer is not a cpulist. */
#define CPULIST_TEXT_MAX 16384U

struct cpulist {
        uint64_t bits[CPULIST_MAX_CPUS / CPULIST_WORD_BITS];
};

/* Parse "0-3,5,7-9" (one trailing newline allowed, empty string = empty
 * set). Returns 0, -EINVAL on malformed text, -ERANGE on a CPU number
 * >= CPULIST_MAX_CPUS. ret is written only on success. */
int cpulist_parse(const char *s, struct cpulist *ret);

void cpulist_clear(struct cpulist *l);
int cpulist_add(struct cpulist *l, unsigned cpu);
void cpulist_del(struct cpulist *l, unsigned cpu);
bool cpulist_has(const struct cpulist *l, unsigned cpu);
unsigned cpulist_count(const struct cpulist *l);
bool cpulist_equal(const struct cpulist *a, const struct cpulist *b);
/* Next CPU >= from in the set, or -1 if none. */
int cpulist_next(const struct cpulist *l, unsigned from);
/* Format back to "0-3,5"; returns -ENOBUFS when len is too small. */
int cpulist_format(const struct cpulist *l, char *buf, size_t len);

#define CPULIST_FOREACH(cpu, l)                                              \
        for (int cpu = cpulist_next((l), 0); cpu >= 0;                       \
             cpu = (unsigned) cpu + 1 < CPULIST_MAX_CPUS ? cpulist_next((l), (unsigned) cpu + 1) : -1)
