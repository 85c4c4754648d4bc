/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/proc-table.c over a proc root written here: what
 * is read of a process met by a sample (its mappings, names, cgroup), and
 * only once; a PID reused (after its EXIT, or found by its start time
 * after lost records) read anew, so the old process's names are never
 * given to the new one, while a late sample of the old one keeps them; a
 * child forked without exec that is gone already named by its parent's
 * image; a process that exec'd after the sampler started not read at all;
 * exited processes aged out, and told gone once every ring was read past
 * their exit.
 */
#include <errno.h>
#include <inttypes.h>
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
#include "proc-table.h"
#include "task-map.h"

#define MAX_EVENTS 64

struct events {
        char maps[MAX_EVENTS][PATH_MAX + 32];   /* "pid start len pgoff file" */
        size_t n_maps;
        char tasks[MAX_EVENTS][PATH_MAX + 32];  /* "COMM pid tid name", "CGROUP pid id path"... */
        size_t n_tasks;
        uint32_t gone[PROC_TABLE_GONE_PENDING * 2]; /* the pids told gone, in order */
        size_t n_gone;
};

static void on_mapping(void *userdata, const struct source_mapping *m) {
        struct events *e = userdata;

        assert_true(e->n_maps < MAX_EVENTS);
        snprintf(e->maps[e->n_maps++], sizeof(e->maps[0]), "%" PRIu32 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %s",
                 m->pid, m->start, m->len, m->pgoff, m->filename);
}

static void on_task(void *userdata, const struct source_task *t) {
        struct events *e = userdata;

        assert_true(e->n_tasks < MAX_EVENTS);
        switch (t->kind) {
        case SOURCE_TASK_COMM:
                snprintf(e->tasks[e->n_tasks++], sizeof(e->tasks[0]), "COMM %" PRIu32 " %" PRIu32 " %s", t->pid,
                         t->tid, t->comm);
                break;
        case SOURCE_TASK_CGROUP:
                snprintf(e->tasks[e->n_tasks++], sizeof(e->tasks[0]), "CGROUP %" PRIu32 " %" PRIu64 " %s", t->pid,
                         t->cgroup_id, t->cgroup_path);
                break;
        case SOURCE_TASK_FORK:
                snprintf(e->tasks[e->n_tasks++], sizeof(e->tasks[0]), "FORK %" PRIu32, t->pid);
                break;
        case SOURCE_TASK_EXIT:
                snprintf(e->tasks[e->n_tasks++], sizeof(e->tasks[0]), "EXIT %" PRIu32, t->pid);
                break;
        case SOURCE_TASK_GONE:
                assert_true(e->n_gone < ELEMENTSOF(e->gone));
                e->gone[e->n_gone++] = t->pid;
                break;
        }
}

static char root[] = "/tmp/armprofd-procs-XXXXXX";

static void put(const char *rel, const char *text) {
        char path[PATH_MAX];
        FILE *f;

        /* Make the directories on the way. */
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                (void) mkdir(path, 0755);
                *p = '/';
        }
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* A process as /proc shows it: stat with starttime (field 22), comm, maps, the leader's cgroup. */
static void put_process(unsigned pid, unsigned long long start, const char *comm, const char *exe,
                        const char *cgroup) {
        char rel[64], text[PATH_MAX * 2];

        snprintf(rel, sizeof(rel), "%u/stat", pid);
        /* The comm in stat holds a space and a ')': the last ')' ends it. */
        snprintf(text, sizeof(text), "%u (%s x) y) S 1 %u %u 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 %llu "
                                     "1000 100 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", pid, comm, pid, pid, start);
        put(rel, text);
        snprintf(rel, sizeof(rel), "%u/comm", pid);
        snprintf(text, sizeof(text), "%s\n", comm);
        put(rel, text);
        snprintf(rel, sizeof(rel), "%u/maps", pid);
        snprintf(text, sizeof(text),
                 "55d000000000-55d000001000 r--p 00000000 fe:01 1234                       %s\n"
                 "55d000001000-55d000005000 r-xp 00001000 fe:01 1234                       %s\n"
                 "55d000005000-55d000006000 rw-p 00005000 fe:01 1234                       %s\n"
                 "7f0000000000-7f0000010000 r-xp 00000000 00:00 0 \n"
                 "7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n"
                 "7ffe00000000-7ffe00021000 rw-p 00000000 00:00 0                          [stack]\n",
                 exe, exe, exe);
        put(rel, text);
        snprintf(rel, sizeof(rel), "%u/task/%u/cgroup", pid, pid);
        snprintf(text, sizeof(text), "12:pids:/\n0::%s\n", cgroup);
        put(rel, text);
}

static void put_thread(unsigned pid, unsigned tid, const char *comm) {
        char rel[64], text[64];

        snprintf(rel, sizeof(rel), "%u/task/%u/comm", pid, tid);
        snprintf(text, sizeof(text), "%s\n", comm);
        put(rel, text);
}

static struct perf_data_task task_rec(uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint64_t time) {
        return (struct perf_data_task) { .rec = { .type = type }, .pid = pid, .ppid = ppid, .tid = tid,
                                         .ptid = type == PERF_RECORD_FORK ? ppid : tid, .time = time };
}

static void test_lifecycle(void **state) {
        struct events ev = {};
        struct source_sink sink = { .userdata = &ev, .mapping = on_mapping, .task = on_task };
        struct proc_table_stats st;
        struct proc_table *p = NULL;
        struct task_map *tasks = NULL;
        struct perf_data_task t;

        assert_non_null(mkdtemp(root));
        assert_int_equal(task_map_new(&tasks), 0);
        assert_int_equal(proc_table_new(root, "/nonexistent", &sink, tasks, &p), 0);
        put_process(100, 1000, "oldname", "/usr/bin/old", "/system.slice/old.service");
        put_thread(100, 101, "oldthread");

        /* Met by a sample: its executable mappings (the file's and [vdso]), names, cgroup. */
        proc_table_sample(p, 100, 101, 10, 55);
        assert_int_equal(ev.n_maps, 2);
        assert_string_equal(ev.maps[0], "100 55d000001000 4000 1000 /usr/bin/old");
        assert_string_equal(ev.maps[1], "100 7ffd00000000 2000 0 [vdso]");
        assert_int_equal(ev.n_tasks, 3);
        assert_string_equal(ev.tasks[0], "COMM 100 100 oldname");
        /* No cgroup2 mount here: the id is the sample's. */
        assert_string_equal(ev.tasks[1], "CGROUP 100 55 /system.slice/old.service");
        assert_string_equal(ev.tasks[2], "COMM 100 101 oldthread");
        assert_string_equal(task_map_get(tasks, 100)->comm, "oldname");
        assert_string_equal(task_map_get(tasks, 101)->comm, "oldthread");
        assert_int_equal(task_map_pid(tasks, 101), 100);
        assert_int_equal(task_map_get(tasks, 101)->cgroup_id, 55);

        /* Once only. */
        proc_table_sample(p, 100, 101, 11, 55);
        proc_table_sample(p, 100, 100, 12, 55);
        assert_int_equal(ev.n_maps, 2);
        assert_int_equal(ev.n_tasks, 3);

        /* It exits; the PID goes to another program (its FORK lost). */
        t = task_rec(PERF_RECORD_EXIT, 100, 1, 100, 20);
        proc_table_task(p, &t);
        put_process(100, 2000, "newname", "/usr/bin/new", "/system.slice/new.service");
        put_thread(100, 101, "newthread");
        ev.n_maps = ev.n_tasks = 0;
        /* A sample of the old process read late (another CPU's ring): still the old one, nothing read. */
        proc_table_sample(p, 100, 101, 15, 55);
        assert_int_equal(ev.n_maps, 0);
        assert_string_equal(task_map_get(tasks, 100)->comm, "oldname");
        /* A sample after the exit is the new process: read anew, nothing of the old one kept. */
        proc_table_sample(p, 100, 101, 25, 66);
        assert_int_equal(ev.n_maps, 2);
        assert_string_equal(ev.maps[0], "100 55d000001000 4000 1000 /usr/bin/new");
        assert_string_equal(task_map_get(tasks, 100)->comm, "newname");
        assert_string_equal(task_map_get(tasks, 101)->comm, "newthread");
        proc_table_stats(p, &st);
        assert_int_equal(st.reused, 1);

        /* Reused again, with the EXIT and FORK lost: the start time after the loss says so. */
        put_process(100, 3000, "third", "/usr/bin/third", "/");
        ev.n_maps = ev.n_tasks = 0;
        proc_table_sample(p, 100, 100, 26, 0);
        assert_int_equal(ev.n_maps, 0);         /* no loss yet: not looked at */
        proc_table_lost(p);
        proc_table_sample(p, 100, 100, 30, 0);
        assert_int_equal(ev.n_maps, 2);
        assert_string_equal(ev.maps[0], "100 55d000001000 4000 1000 /usr/bin/third");
        assert_string_equal(task_map_get(tasks, 100)->comm, "third");
        /* Another loss, the same process: compared, not read again. */
        proc_table_lost(p);
        proc_table_sample(p, 100, 100, 31, 0);
        assert_int_equal(ev.n_maps, 2);
        proc_table_stats(p, &st);
        assert_int_equal(st.reused, 2);

        /* A child forked without exec, gone before its first sample: its parent's image, under its pid. */
        t = task_rec(PERF_RECORD_FORK, 200, 100, 200, 32);
        proc_table_task(p, &t);
        ev.n_maps = 0;
        proc_table_sample(p, 200, 200, 33, 0);
        assert_int_equal(ev.n_maps, 2);
        assert_string_equal(ev.maps[0], "200 55d000001000 4000 1000 /usr/bin/third");
        /* Named as its parent (task_map_fork()), as the kernel names a child until it execs. */
        assert_string_equal(task_map_get(tasks, 200)->comm, "third");

        /* Its sample read before its FORK (the rings of two CPUs): the same process, not read twice. */
        proc_table_stats(p, &st);
        {
                uint64_t reads = st.procs_read;

                proc_table_sample(p, 250, 250, 35, 0);
                t = task_rec(PERF_RECORD_FORK, 250, 100, 250, 34);
                proc_table_task(p, &t);
                proc_table_sample(p, 250, 250, 36, 0);
                proc_table_stats(p, &st);
                assert_int_equal(st.procs_read, reads + 1);
                /* A FORK after the sample that made the entry is another process with that pid. */
                t = task_rec(PERF_RECORD_FORK, 250, 100, 250, 37);
                proc_table_task(p, &t);
                proc_table_sample(p, 250, 250, 38, 0);
                proc_table_stats(p, &st);
                assert_int_equal(st.procs_read, reads + 2);
        }

        /* A process that exec'd while we watched: the kernel's COMM and MMAP2 say it all. */
        {
                char raw[16];
                struct perf_data_comm c = { .rec = { .type = PERF_RECORD_COMM, .raw = (uint8_t *) raw,
                                                     .sid = { .valid = PERF_DATA_ID_TIME, .time = 40 } },
                                            .pid = 300, .tid = 300, .comm = "fresh", .exec = true };

                ev.n_maps = ev.n_tasks = 0;
                proc_table_comm(p, &c);
                proc_table_sample(p, 300, 300, 41, 0);
                assert_int_equal(ev.n_maps, 0);
                assert_int_equal(ev.n_tasks, 1);
                assert_string_equal(ev.tasks[0], "COMM 300 300 fresh");
        }

        /* Exited processes go PROC_TABLE_EXITED_NS after their exit. */
        proc_table_stats(p, &st);
        assert_int_equal(st.procs, 4);
        t = task_rec(PERF_RECORD_EXIT, 300, 1, 300, 50);
        proc_table_task(p, &t);
        proc_table_age(p);
        proc_table_stats(p, &st);
        assert_int_equal(st.procs, 4);
        proc_table_sample(p, 200, 200, 50 + PROC_TABLE_EXITED_NS + 1, 0);
        proc_table_age(p);
        proc_table_stats(p, &st);
        assert_int_equal(st.procs, 3);
        assert_int_equal(st.aged_out, 1);

        /* The child's COMM at exec read before the FORK that made it (another CPU's ring): it keeps its name
         * and its entry, nothing is read from /proc. */
        {
                char raw[16];
                struct perf_data_comm c = { .rec = { .type = PERF_RECORD_COMM, .raw = (uint8_t *) raw,
                                                     .sid = { .valid = PERF_DATA_ID_TIME, .time = 70 } },
                                            .pid = 500, .tid = 500, .comm = "child", .exec = true };
                uint64_t reads;

                proc_table_comm(p, &c);
                t = task_rec(PERF_RECORD_FORK, 500, 100, 500, 69);
                proc_table_task(p, &t);
                assert_string_equal(task_map_get(tasks, 500)->comm, "child");
                proc_table_stats(p, &st);
                reads = st.procs_read;
                ev.n_maps = 0;
                proc_table_sample(p, 500, 500, 71, 0);
                proc_table_stats(p, &st);
                assert_int_equal(ev.n_maps, 0);
                assert_string_equal(task_map_get(tasks, 500)->comm, "child");
                /* Its cgroup only (the kernel says nothing of cgroups a process was born in). */
                assert_int_equal(st.procs_read, reads + 1);
        }

        proc_table_free(p);
        task_map_free(tasks);
        {
                char cmd[PATH_MAX];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
                assert_int_equal(system(cmd), 0);
        }
}

/*
 * Gone: a process's EXIT is told gone at the second proc_table_age()
 * after it, once the source drained every ring past it (the first may come
 * right after the EXIT, in the same tick), met by a sample or not; a
 * thread's exit is no process's; a FORK of the pid before that cancels it
 * (the pid is the new process's); more exits waiting than the ring holds
 * tell the oldest at once, counted.
 */
static void feed(struct proc_table *p, uint32_t type, uint32_t pid, uint32_t tid, uint64_t time) {
        struct perf_data_task t = task_rec(type, pid, 1, tid, time);

        proc_table_task(p, &t);
}

static void test_gone(void **state) {
        static struct events ev;
        struct source_sink sink = { .userdata = &ev, .task = on_task };
        struct proc_table_stats st;
        struct proc_table *p = NULL;
        struct task_map *tasks = NULL;

        assert_int_equal(task_map_new(&tasks), 0);
        assert_int_equal(proc_table_new("/nonexistent", "/nonexistent", &sink, tasks, &p), 0);
        proc_table_sample(p, 300, 300, 10, 0);
        feed(p, PERF_RECORD_EXIT, 300, 300, 20);
        feed(p, PERF_RECORD_EXIT, 900, 900, 21);        /* never sampled */
        feed(p, PERF_RECORD_EXIT, 400, 401, 22);        /* a thread of 400 */
        feed(p, PERF_RECORD_EXIT, 500, 500, 23);        /* its pid forked again below */
        assert_int_equal(ev.n_gone, 0);
        proc_table_age(p);
        assert_int_equal(ev.n_gone, 0);
        feed(p, PERF_RECORD_FORK, 500, 500, 24);
        proc_table_age(p);
        assert_int_equal(ev.n_gone, 2);
        assert_int_equal(ev.gone[0], 300);
        assert_int_equal(ev.gone[1], 900);
        proc_table_age(p);
        assert_int_equal(ev.n_gone, 2);

        /* More waiting than the ring holds: the oldest told at once. */
        for (uint32_t pid = 1000; pid < 1000 + PROC_TABLE_GONE_PENDING + 5; pid++) {
                ev.n_tasks = 0;         /* the EXITs as they came: not what is looked at */
                feed(p, PERF_RECORD_EXIT, pid, pid, 30);
        }
        assert_int_equal(ev.n_gone, 2 + 5);
        assert_int_equal(ev.gone[2], 1000);
        assert_int_equal(ev.gone[6], 1004);
        proc_table_age(p);
        proc_table_age(p);
        assert_int_equal(ev.n_gone, 2 + PROC_TABLE_GONE_PENDING + 5);
        assert_int_equal(ev.gone[ev.n_gone - 1], 1000 + PROC_TABLE_GONE_PENDING + 4);
        proc_table_stats(p, &st);
        assert_int_equal(st.gone, ev.n_gone);
        assert_int_equal(st.gone_early, 5);
        proc_table_free(p);
        task_map_free(tasks);
}

/* More processes than a set holds: the oldest live one is evicted and counted, an exited one goes first. */
static void test_bounded(void **state) {
        struct source_sink sink = {};
        struct proc_table_stats st;
        struct proc_table *p = NULL;
        struct task_map *tasks = NULL;
        uint32_t n = PROC_TABLE_SETS * PROC_TABLE_WAYS * 2;

        assert_int_equal(task_map_new(&tasks), 0);
        assert_int_equal(proc_table_new("/nonexistent", "/nonexistent", &sink, tasks, &p), 0);
        for (uint32_t pid = 1; pid <= n; pid++)
                proc_table_sample(p, pid, pid, pid, 0);
        proc_table_stats(p, &st);
        assert_int_equal(st.procs, PROC_TABLE_SETS * PROC_TABLE_WAYS);
        assert_int_equal(st.evictions, n - PROC_TABLE_SETS * PROC_TABLE_WAYS);
        assert_int_equal(st.procs_read, n);
        assert_int_equal(st.procs_gone, n);
        proc_table_free(p);
        task_map_free(tasks);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lifecycle),
                cmocka_unit_test(test_bounded),
                cmocka_unit_test(test_gone),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
