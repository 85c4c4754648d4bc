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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "procfs.h"

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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel),
                cmocka_unit_test(test_running_thread),
                cmocka_unit_test(test_files),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
