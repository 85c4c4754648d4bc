/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/thread-names.c: a thread started by thread_names_create() has its
 * name, as the kernel shows it (/proc/self/task/TID/comm) and in the list
 * process-metrics reads, by the time the call returns, before its own
 * function did anything: its function here blocks at once until the test
 * has looked. (The daemon's threads named themselves, and a /metrics
 * scraped on a busy machine before the collector thread first ran had no
 * collector row: test-daemon's test_metrics_self, once in a clean root.)
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "thread-names.h"

struct gate {
        int fds[2];
        pid_t tid;
};

static void *blocked(void *userdata) {
        struct gate *g = userdata;
        char c;

        /* Nothing before the test lets it go: its name can only come from the creator's side. */
        while (read(g->fds[0], &c, 1) < 0 && errno == EINTR)
                ;
        g->tid = gettid();
        return NULL;
}

static void comm_of(pid_t tid, char *buf, size_t len) {
        char path[64];
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int) tid);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_non_null(fgets(buf, (int) len, f));
        fclose(f);
        buf[strcspn(buf, "\n")] = 0;
}

static void test_named_on_return(void **state) {
        struct thread_names_entry e[THREAD_NAMES_MAX];
        struct gate g = {};
        pthread_t t;
        pid_t listed = 0;
        char comm[32];
        size_t n;

        assert_int_equal(pipe(g.fds), 0);
        assert_int_equal(thread_names_create(&t, "probe-thread", blocked, &g), 0);

        n = thread_names_list(e, THREAD_NAMES_MAX);
        for (size_t i = 0; i < n; i++)
                if (streq(e[i].name, "probe-thread"))
                        listed = e[i].tid;
        assert_true(listed > 0 && listed != getpid());
        comm_of(listed, comm, sizeof(comm));
        assert_string_equal(comm, "probe-thread");

        assert_int_equal(write(g.fds[1], "x", 1), 1);
        assert_int_equal(pthread_join(t, NULL), 0);
        /* The listed tid was the thread's own. */
        assert_int_equal(g.tid, listed);
        thread_names_forget(listed);
        close(g.fds[0]);
        close(g.fds[1]);
}

/* Many at once: each listed under its own tid, none lost. */
static void test_many(void **state) {
        enum { N = 16 };
        struct gate g[N];
        pthread_t t[N];
        struct thread_names_entry e[THREAD_NAMES_MAX];
        size_t n, found = 0;

        for (size_t i = 0; i < N; i++) {
                assert_int_equal(pipe(g[i].fds), 0);
                assert_int_equal(thread_names_create(&t[i], "probe-many", blocked, &g[i]), 0);
        }
        n = thread_names_list(e, THREAD_NAMES_MAX);
        for (size_t i = 0; i < n; i++)
                found += streq(e[i].name, "probe-many");
        assert_int_equal(found, N);
        for (size_t i = 0; i < N; i++) {
                assert_int_equal(write(g[i].fds[1], "x", 1), 1);
                assert_int_equal(pthread_join(t[i], NULL), 0);
                thread_names_forget(g[i].tid);
                close(g[i].fds[0]);
                close(g[i].fds[1]);
        }
        assert_int_equal(thread_names_list(e, THREAD_NAMES_MAX), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_named_on_return),
                cmocka_unit_test(test_many),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
