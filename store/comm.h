/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A command: the name perf gives the thread that ran a sample, its comm
 * (PERF_RECORD_COMM, perf_event_open(2); the "Command" of perf script and
 * perf report). The store keeps it with what it counted, so an answer
 * names a process that has exited since, or one of a replayed file, as
 * perf would, and nothing is looked up when it is rendered.
 *
 * Internal to store/ and its callers: header-only, the per-record path
 * copies and compares it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* TASK_COMM_LEN (include/linux/sched.h): what PERF_RECORD_COMM carries at most, the NUL included. */
#define COMM_MAX 16

struct comm {
        char name[COMM_MAX];    /* NUL-padded, so equal names are equal bytes; "" unknown */
};

_Static_assert(COMM_MAX == 2 * sizeof(uint64_t), "comm_hash() reads a name as two words");

/* name cut to COMM_MAX - 1 bytes; NULL is "". */
static inline void comm_set(struct comm *c, const char *name) {
        memset(c->name, 0, sizeof(c->name));
        if (name)
                strncpy(c->name, name, sizeof(c->name) - 1);
}

static inline bool comm_known(const struct comm *c) {
        return c->name[0] != '\0';
}

/*
 * 32 bits of the name's two words mixed (MurmurHash3's fmix64 finaliser),
 * for the tables that key entries by command; 0 for the unknown command.
 */
static inline uint32_t comm_hash(const struct comm *c) {
        uint64_t w[2], h;

        memcpy(w, c->name, sizeof(w));
        h = w[0] * UINT64_C(0x9E3779B97F4A7C15) ^ w[1] * UINT64_C(0xC2B2AE3D27D4EB4F);
        h ^= h >> 33;
        h *= UINT64_C(0xFF51AFD7ED558CCD);
        h ^= h >> 33;
        h *= UINT64_C(0xC4CEB9FE1A85EC53);
        h ^= h >> 33;
        return (uint32_t) h;
}
