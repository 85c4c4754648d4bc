/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/procfs.c: the process of a thread, against the kernel's own
 * /proc for this process and its threads (getpid(), gettid()), and against
 * status files written here for what /proc may hold.
 */
#include <errno.h>
#include <pthread.h>
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
#include "procfs.h"
#include "source.h"

struct thread_arg {
        pthread_barrier_t ready, checked;
        pid_t tid;
};

static void *thread_tid(void *arg) {
        struct thread_arg *a = arg;

        a->tid = gettid();
        pthread_barrier_wait(&a->ready);
        /* Alive until the main thread has looked it up. */
        pthread_barrier_wait(&a->checked);
        return NULL;
}

static void test_kernel(void **state) {
        struct thread_arg a = {};
        pthread_t t;
        uint32_t pid = 0;
        int k;

        assert_int_equal(procfs_tgid(NULL, (uint32_t) getpid(), &pid), 0);
        assert_int_equal(pid, getpid());
        /* A thread that is not the leader names its process. */
        assert_int_equal(pthread_barrier_init(&a.ready, NULL, 2), 0);
        assert_int_equal(pthread_barrier_init(&a.checked, NULL, 2), 0);
        assert_int_equal(pthread_create(&t, NULL, thread_tid, &a), 0);
        pthread_barrier_wait(&a.ready);
        pid = 0;
        k = procfs_tgid(NULL, (uint32_t) a.tid, &pid);
        /* cmocka's asserts leave the frame: only once the thread is done. */
        pthread_barrier_wait(&a.checked);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_not_equal(a.tid, getpid());
        assert_int_equal(k, 0);
        assert_int_equal(pid, getpid());
        pthread_barrier_destroy(&a.ready);
        pthread_barrier_destroy(&a.checked);
}

static void test_running_thread(void **state) {
        pid_t tid = gettid();
        uint32_t pid = 0;

        assert_int_equal(procfs_tgid("/proc", (uint32_t) tid, &pid), 0);
        assert_int_equal(pid, getpid());
}

static void put(const char *root, const char *tid, const char *text) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", root, tid);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/%s/status", root, tid);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_files(void **state) {
        char root[] = "/tmp/armprofd-procfs-XXXXXX";
        uint32_t pid = 0;

        assert_non_null(mkdtemp(root));
        put(root, "4301", "Name:\tfs_writer\nUmask:\t0022\nState:\tR (running)\nTgid:\t4242\nNgid:\t0\nPid:\t4301\n");
        put(root, "5", "Name:\tx\nPid:\t5\n");
        put(root, "6", "Name:\tx\nTgid:\tnope\n");
        put(root, "7", "Tgid:\t0\n");
        assert_int_equal(procfs_tgid(root, 4301, &pid), 0);
        assert_int_equal(pid, 4242);
        assert_int_equal(procfs_tgid(root, 4302, &pid), -ENOENT);
        assert_int_equal(procfs_tgid(root, 5, &pid), -EBADMSG);
        assert_int_equal(procfs_tgid(root, 6, &pid), -EBADMSG);
        assert_int_equal(procfs_tgid(root, 7, &pid), -EBADMSG);
        for (const char *const *t = (const char *const[]) { "4301", "5", "6", "7", NULL }; *t; t++) {
                char path[512];

                snprintf(path, sizeof(path), "%s/%s/status", root, *t);
                assert_int_equal(unlink(path), 0);
                snprintf(path, sizeof(path), "%s/%s", root, *t);
                assert_int_equal(rmdir(path), 0);
        }
        assert_int_equal(rmdir(root), 0);
}

/* proc(5) "/proc/pid/maps" lines, with the fields written out by hand. */
static void test_maps_lines(void **state) {
        struct procfs_mapping m;
        char line[PROCFS_MAPS_LINE_MAX];

        snprintf(line, sizeof(line), "55d3c1a00000-55d3c1a05000 r-xp 00002000 fe:01 1310786                    "
                                     "/usr/lib/my prog (deleted)");
        assert_int_equal(procfs_parse_maps_line(line, &m), 0);
        assert_int_equal(m.start, 0x55d3c1a00000);
        assert_int_equal(m.end, 0x55d3c1a05000);
        assert_string_equal(m.perms, "r-xp");
        assert_int_equal(m.offset, 0x2000);
        assert_int_equal(m.dev_major, 0xfe);
        assert_int_equal(m.dev_minor, 1);
        assert_int_equal(m.inode, 1310786);
        assert_string_equal(m.path, "/usr/lib/my prog (deleted)");
        snprintf(line, sizeof(line), "7f0000000000-7f0000010000 rw-p 00000000 00:00 0 ");
        assert_int_equal(procfs_parse_maps_line(line, &m), 0);
        assert_string_equal(m.path, "");
        snprintf(line, sizeof(line), "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]");
        assert_int_equal(procfs_parse_maps_line(line, &m), 0);
        assert_string_equal(m.path, "[vsyscall]");
        for (const char *const *bad = (const char *const[]) {
                     "", "55d3c1a00000 r-xp 0 fe:01 1 /x", "5-4 r-xp 0 fe:01 1 /x", "4-5 r-x 0 fe:01 1 /x",
                     "4-5 r-xp 0 fe01 1 /x", "4-5 r-xp 0 fe:01 x /x", "4-5 rzxp 0 fe:01 1 /x",
                     "4-5 r-xp 0 fe:01 1/x", "g-5 r-xp 0 fe:01 1 /x", NULL }; *bad; bad++) {
                snprintf(line, sizeof(line), "%s", *bad);
                assert_int_equal(procfs_parse_maps_line(line, &m), -EBADMSG);
        }
}

struct found {
        uintptr_t want;
        char file[PATH_MAX];
        size_t n, vdso;
};

static int on_mapping(void *userdata, const struct source_mapping *m) {
        struct found *f = userdata;

        assert_int_equal(m->pid, getpid());
        f->n++;
        f->vdso += streq(m->filename, "[vdso]");
        if (f->want >= m->start && f->want - m->start < m->len)
                snprintf(f->file, sizeof(f->file), "%s", m->filename);
        return 0;
}

/* Our own executable mappings: the code of this function is in the file /proc/self/exe names. */
static void test_maps_self(void **state) {
        struct found f = { .want = (uintptr_t) test_maps_self };
        char exe[PATH_MAX];
        ssize_t n;
        int k;

        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        assert_true(n > 0);
        exe[n] = '\0';
        k = procfs_exec_mappings(NULL, (uint32_t) getpid(), on_mapping, &f);
        assert_true(k > 0);
        assert_int_equal((size_t) k, f.n);
        assert_string_equal(f.file, exe);
        assert_int_equal(f.vdso, 1);
        assert_int_equal(procfs_exec_mappings("/nonexistent", 1, on_mapping, &f), -ENOENT);
}

static void put_file(const char *root, const char *rel, const char *text) {
        char path[512];
        FILE *f;

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

static void test_stat_comm_cgroup(void **state) {
        char root[] = "/tmp/armprofd-procfs-XXXXXX", buf[PROCFS_CGROUP_MAX], cmd[64];
        uint64_t start = 0;

        /* starttime is field 22; the comm holds ") (" and spaces. */
        assert_int_equal(procfs_parse_stat_start("42 (a) (b c) S 1 42 42 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 "
                                                 "987654 100 5\n", &start), 0);
        assert_int_equal(start, 987654);
        assert_int_equal(procfs_parse_stat_start("42 (a) S 1 42", &start), -EBADMSG);
        assert_int_equal(procfs_parse_stat_start("42 a S 1", &start), -EBADMSG);
        assert_int_equal(procfs_parse_stat_start("42 (a) S 1 42 42 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 x1 2",
                                                 &start), -EBADMSG);

        assert_non_null(mkdtemp(root));
        put_file(root, "7/stat", "7 (w x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 31337 0 0\n");
        put_file(root, "7/comm", "worker\n");
        put_file(root, "7/task/8/comm", "worker-io\n");
        put_file(root, "7/task/7/cgroup", "12:pids:/x\n1:name=systemd:/y\n0::/system.slice/w.service\n");
        put_file(root, "7/task/8/cgroup", "12:pids:/x\n");
        put_file(root, "9/comm", "nonewline");
        assert_int_equal(procfs_start_time(root, 7, &start), 0);
        assert_int_equal(start, 31337);
        assert_int_equal(procfs_start_time(root, 10, &start), -ENOENT);
        assert_int_equal(procfs_comm(root, 7, 7, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "worker");
        assert_int_equal(procfs_comm(root, 7, 8, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "worker-io");
        assert_int_equal(procfs_comm(root, 7, 8, buf, 4), 0);
        assert_string_equal(buf, "wor");
        assert_int_equal(procfs_comm(root, 9, 9, buf, sizeof(buf)), -EBADMSG);
        assert_int_equal(procfs_comm(root, 7, 99, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(procfs_cgroup(root, 7, 7, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/system.slice/w.service");
        assert_int_equal(procfs_cgroup(root, 7, 7, buf, 8), -ENAMETOOLONG);
        assert_int_equal(procfs_cgroup(root, 7, 8, buf, sizeof(buf)), -ENODATA);
        assert_int_equal(procfs_cgroup(root, 7, 99, buf, sizeof(buf)), -ENOENT);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

/* The kernel's own files for this process: names we set, a start time after boot. */
static void test_kernel_names(void **state) {
        char buf[PROCFS_COMM_MAX];
        uint64_t start = 0;

        assert_int_equal(pthread_setname_np(pthread_self(), "procfs-names"), 0);
        assert_int_equal(procfs_comm(NULL, (uint32_t) getpid(), (uint32_t) getpid(), buf, sizeof(buf)), 0);
        assert_string_equal(buf, "procfs-names");
        assert_int_equal(procfs_start_time(NULL, (uint32_t) getpid(), &start), 0);
        assert_true(start > 0);
        assert_int_equal(procfs_cgroup(NULL, (uint32_t) getpid(), (uint32_t) gettid(), buf, sizeof(buf)) == 0 ||
                         procfs_cgroup(NULL, (uint32_t) getpid(), (uint32_t) gettid(), buf, sizeof(buf)) == -ENODATA,
                         true);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel),
                cmocka_unit_test(test_running_thread),
                cmocka_unit_test(test_files),
                cmocka_unit_test(test_maps_lines),
                cmocka_unit_test(test_maps_self),
                cmocka_unit_test(test_stat_comm_cgroup),
                cmocka_unit_test(test_kernel_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
