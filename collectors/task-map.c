/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "task-map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

int task_map_new(struct task_map **ret) {
        struct task_map *m;

        /* xcalloc() is calloc(): the kernel hands zero pages, the table costs only what is touched. */
        m = xcalloc(1, sizeof(*m));
        *ret = m;
        return 0;
}

struct task_map *task_map_free(struct task_map *m) {
        free(m);
        return NULL;
}

/* The thread's slot, taken over (and counted) when another thread holds it. */
static struct task_info *claim(struct task_map *m, uint32_t tid) {
        struct task_map_slot *s = &m->slots[task_map_hash(tid)];

        if (s->used && s->info.tid == tid)
                return &s->info;
        if (s->used)
                m->evictions++;
        *s = (struct task_map_slot) { .info = { .tid = tid, .pid = TASK_MAP_NO_ID }, .used = true };
        return &s->info;
}

void task_map_set_pid(struct task_map *m, uint32_t tid, uint32_t pid) {
        claim(m, tid)->pid = pid;
}

void task_map_comm(struct task_map *m, uint32_t pid, uint32_t tid, const char *comm) {
        struct task_info *t = claim(m, tid);

        t->pid = pid;
        if (comm) {
                strncpy(t->comm, comm, sizeof(t->comm) - 1);
                t->comm[sizeof(t->comm) - 1] = '\0';
        }
}

void task_map_fork(struct task_map *m, uint32_t pid, uint32_t tid, uint32_t ptid, uint64_t time_ns) {
        const struct task_info *parent = task_map_get(m, ptid);
        char comm[TASK_MAP_COMM_LEN] = "";
        struct task_info *t;

        /* A child runs its parent's program until it execs (a COMM then says so). */
        if (parent)
                memcpy(comm, parent->comm, sizeof(comm));
        t = claim(m, tid);
        /* The tid may be reused: a fork is a new thread, nothing of the old one holds. */
        *t = (struct task_info) { .tid = tid, .pid = pid, .start_ns = time_ns };
        memcpy(t->comm, comm, sizeof(comm));
}

void task_map_cgroup(struct task_map *m, uint32_t tid, uint64_t cgroup_id) {
        claim(m, tid)->cgroup_id = cgroup_id;
}

const struct task_info *task_map_get(const struct task_map *m, uint32_t tid) {
        const struct task_map_slot *s = &m->slots[task_map_hash(tid)];

        return s->used && s->info.tid == tid ? &s->info : NULL;
}

uint64_t task_map_evictions(const struct task_map *m) {
        return m->evictions;
}
