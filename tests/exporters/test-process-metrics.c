/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * process_* metrics read from a procfs tree built here: the figures are the
 * tree's, computed by this test from the fields it wrote (proc(5)).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
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
#include "process-metrics.h"
#include "thread-names.h"

#define UTIME 250
#define STIME 150
#define STARTTIME 5000
#define VSIZE UINT64_C(123456789)
#define RSS 1000

static char root[] = "/tmp/armprofd-procfs-XXXXXX";

static void write_file(const char *name, const char *text) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", root, name);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

/* The kernel's boot time: the "btime" line of the real /proc/stat (proc(5)). */
static uint64_t kernel_btime(void) {
        char line[4096];
        uint64_t v = 0;
        FILE *f = fopen("/proc/stat", "re");

        assert_non_null(f);
        /* Lines longer than the buffer (intr) come in pieces; none of them starts "btime ". */
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "btime ", 6) == 0 && sscanf(line + 6, "%" SCNu64, &v) == 1)
                        break;
        fclose(f);
        assert_true(v > 0);
        return v;
}

/* Field 22 of the real /proc/self/stat: when this process started, in ticks after boot. */
static uint64_t own_starttime(void) {
        char buf[1024], *p, *save = NULL;
        uint64_t v = 0;
        FILE *f = fopen("/proc/self/stat", "re");

        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof(buf), f));
        fclose(f);
        p = strrchr(buf, ')');
        assert_non_null(p);
        /* p + 2 is field 3; field 22 is the 20th token from there. */
        p = strtok_r(p + 2, " ", &save);
        for (int field = 3; p && field < 22; field++)
                p = strtok_r(NULL, " ", &save);
        assert_non_null(p);
        assert_int_equal(sscanf(p, "%" SCNu64, &v), 1);
        return v;
}

static int setup(void **state) {
        char line[1024];
        size_t o = 0;

        assert_non_null(mkdtemp(root));
        snprintf(line, sizeof(line), "%s/self", root);
        assert_int_equal(mkdir(line, 0700), 0);
        snprintf(line, sizeof(line), "%s/self/fd", root);
        assert_int_equal(mkdir(line, 0700), 0);

        /* Fields 1..52; a comm with a space and a ")" as the kernel allows. */
        o += (size_t) snprintf(line + o, sizeof(line) - o, "4242 (arm prof) d) S");
        for (int field = 4; field <= 52; field++) {
                uint64_t v = field == 14 ? UTIME : field == 15 ? STIME : field == 22 ? STARTTIME
                           : field == 23 ? VSIZE : field == 24 ? RSS : (uint64_t) field;

                o += (size_t) snprintf(line + o, sizeof(line) - o, " %" PRIu64, v);
        }
        snprintf(line + o, sizeof(line) - o, "\n");
        write_file("self/stat", line);
        return 0;
}

static int teardown(void **state) {
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

/*
 * The fake tree's figures; the start time from its starttime and the
 * kernel's boot time (the tree has no stat: the boot time is not read from
 * procfs, and the kernel's own figure is what it must equal).
 */
static void test_stats(void **state) {
        long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        struct process_stats st = {};

        assert_true(ticks > 0 && page > 0);
        assert_int_equal(process_stats_read(root, &st), 0);
        assert_true(st.cpu_seconds == (double) (UTIME + STIME) / (double) ticks);
        assert_int_equal(st.virtual_bytes, VSIZE);
        assert_int_equal(st.resident_bytes, (uint64_t) RSS * (uint64_t) page);
        assert_true(st.start_time_seconds == (double) kernel_btime() + (double) STARTTIME / (double) ticks);
}

/* This process's start time as the kernel's /proc gives it: btime + starttime / ticks. */
static void test_stats_self(void **state) {
        long ticks = sysconf(_SC_CLK_TCK);
        struct process_stats st = {};

        assert_int_equal(process_stats_read("/proc", &st), 0);
        assert_true(st.start_time_seconds == (double) kernel_btime() + (double) own_starttime() / (double) ticks);
}

/* A thread's stat line with its comm, utime, stime and start time; replaced when it exists. */
static void write_task_at(const char *tid, const char *comm, unsigned utime, unsigned stime, unsigned start) {
        char path[PATH_MAX], line[1024];
        size_t o = 0;

        snprintf(path, sizeof(path), "%s/self/task/%s", root, tid);
        assert_true(mkdir(path, 0700) == 0 || errno == EEXIST);
        o += (size_t) snprintf(line + o, sizeof(line) - o, "%s (%s) S", tid, comm);
        for (int field = 4; field <= 52; field++)
                o += (size_t) snprintf(line + o, sizeof(line) - o, " %u",
                                       field == 14 ? utime : field == 15 ? stime : field == 22 ? start
                                                                                               : (unsigned) field);
        snprintf(line + o, sizeof(line) - o, "\n");
        snprintf(path, sizeof(path), "self/task/%s/stat", tid);
        write_file(path, line);
}

static void write_task(const char *tid, const char *comm, unsigned utime, unsigned stime) {
        write_task_at(tid, comm, utime, stime, 22);
}

static void remove_task(const char *tid) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/self/task/%s/stat", root, tid);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/self/task/%s", root, tid);
        assert_int_equal(rmdir(path), 0);
}

static double ticks_s(unsigned n) {
        return (double) n / (double) sysconf(_SC_CLK_TCK);
}

/* Sums of tick counts as seconds: equal up to rounding. */
static bool near(double a, double b) {
        return fabs(a - b) < 1e-9;
}

static void make_task_dir(void) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/self/task", root);
        assert_true(mkdir(path, 0700) == 0 || errno == EEXIST);
}

/* self/stat with the process's CPU time (every thread's, ended ones too) and thread count. */
static void write_self(unsigned utime, unsigned stime, unsigned threads) {
        char line[1024];
        size_t o = 0;

        o += (size_t) snprintf(line + o, sizeof(line) - o, "4242 (arm prof) d) S");
        for (int field = 4; field <= 52; field++) {
                uint64_t v = field == 14 ? utime : field == 15 ? stime : field == 20 ? threads
                           : field == 22 ? STARTTIME : field == 23 ? VSIZE : field == 24 ? RSS : (uint64_t) field;

                o += (size_t) snprintf(line + o, sizeof(line) - o, " %" PRIu64, v);
        }
        snprintf(line + o, sizeof(line) - o, "\n");
        write_file("self/stat", line);
}

static bool listed(pid_t tid) {
        struct thread_names_entry e[THREAD_NAMES_MAX];
        size_t n = thread_names_list(e, THREAD_NAMES_MAX);

        for (size_t i = 0; i < n; i++)
                if (e[i].tid == tid)
                        return true;
        return false;
}

/*
 * The first thread (tid = the process's id, whatever its comm) is main; the
 * threads thread-names.h lists are read under their names (one listed under
 * a name that is not the daemon's counts as other); other is the rest of
 * the process's time and threads, from self/stat: the unlisted threads' are
 * never read. A listed thread whose stat is gone is no longer listed.
 */
static void test_threads(void **state) {
        struct process_threads *pt = process_threads_new();
        struct process_thread_stats st = {};
        char path[PATH_MAX];

        make_task_dir();
        write_task("4242", "collector", 1, 1); /* the first thread, even if it is named like another */
        write_task("4243", "collector", 100, 50);
        write_task("4244", "MHD-single", 7, 3);
        write_task("4245", "arm prof) d", 2, 2);
        write_task("4246", "curl(resolve)", 5, 0);
        write_task("4247", "push", 0, 9);
        write_task("4248", "helper", 1000, 1000); /* listed under a name not the daemon's: not read */
        thread_names_add(4243, "collector");
        thread_names_add(4244, "MHD-single");
        thread_names_add(4247, "push");
        thread_names_add(4248, "helper");
        thread_names_add(4249, "http-auth");      /* ended before the read */
        thread_names_add(4250, "push");           /* its stat cannot be read (not a file): kept listed */
        snprintf(path, sizeof(path), "%s/self/task/4250", root);
        assert_int_equal(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/self/task/4250/stat", root);
        assert_int_equal(mkdir(path, 0700), 0);
        /* 2 + 150 + 10 + 9 named, 9 by the two unlisted threads that run and 6 by ended ones. */
        write_self(180, 6, 7);
        assert_int_equal(process_threads_read(pt, root, &st), 0);
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_MAIN], ticks_s(2)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_COLLECTOR], ticks_s(150)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_HTTP], ticks_s(10)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_PUSH], ticks_s(9)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_OTHER], ticks_s(9 + 6)));
        assert_int_equal(st.threads[PROCESS_THREAD_OTHER], 3);
        assert_int_equal(st.threads[PROCESS_THREAD_HTTP_AUTH], 0);
        assert_false(st.shown[PROCESS_THREAD_HTTP_AUTH]);
        assert_false(listed(4249));
        assert_true(listed(4248));
        assert_true(listed(4250));
        assert_string_equal(process_thread_label(PROCESS_THREAD_HTTP), "http");
        process_threads_free(pt);
        for (pid_t tid = 4243; tid <= 4250; tid++)
                thread_names_forget(tid);
        snprintf(path, sizeof(path), "%s/self/task/4250/stat", root);
        assert_int_equal(rmdir(path), 0);
        snprintf(path, sizeof(path), "%s/self/task/4250", root);
        assert_int_equal(rmdir(path), 0);
        for (const char *const *t = (const char *const[]) { "4242", "4243", "4244", "4245", "4246", "4247",
                                                            "4248", NULL }; *t; t++)
                remove_task(*t);
        write_self(UTIME, STIME, 20);
}

/*
 * The counters never go down: a named thread that ends keeps, under its
 * name, what it had used at the read before (what it used after that is
 * other's); one that renames itself leaves what it used so far under the
 * old name; a reused tid (another start time) is another thread, even when
 * it has used less.
 */
static void test_threads_end(void **state) {
        struct process_threads *pt = process_threads_new();
        struct process_thread_stats st = {};

        make_task_dir();
        write_task("4242", "armprofd", 10, 0);
        write_task("101", "collector", 40, 10);
        write_task("102", "MHD-single", 20, 0);
        write_task("103", "curl(resolve)", 3, 0);
        write_task("104", "armprofd", 1, 0);         /* not yet named: other */
        thread_names_add(101, "collector");
        thread_names_add(102, "MHD-single");
        write_self(84, 0, 5);
        assert_int_equal(process_threads_read(pt, root, &st), 0);
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_HTTP], ticks_s(20)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_OTHER], ticks_s(4)));
        assert_int_equal(st.threads[PROCESS_THREAD_OTHER], 2);

        /* libmicrohttpd's thread replaced (a TLS reload), the resolver gone, 104 names itself push. */
        remove_task("102");                          /* it used 5 more after the last read, then ended */
        write_task("105", "MHD-single", 2, 0);
        thread_names_add(105, "MHD-single");
        remove_task("103");
        write_task("104", "push", 6, 0);
        thread_names_add(104, "push");
        write_self(10 + 50 + 25 + 3 + 6 + 2, 0, 4);
        assert_int_equal(process_threads_read(pt, root, &st), 0);
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_HTTP], ticks_s(20 + 2)));
        assert_int_equal(st.threads[PROCESS_THREAD_HTTP], 1);
        assert_false(listed(102));
        /* Named from its start as far as the listing knows: all of 104's time is push's. */
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_PUSH], ticks_s(6)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_OTHER], ticks_s(3 + 5)));
        assert_int_equal(st.threads[PROCESS_THREAD_OTHER], 0);
        assert_true(st.shown[PROCESS_THREAD_OTHER]); /* its series stays */

        /* tid 101 ended and came back as another thread (another start time) that used less. */
        write_task_at("101", "collector", 4, 0, 9999);
        write_self(96 + 4, 0, 4);
        assert_int_equal(process_threads_read(pt, root, &st), 0);
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_COLLECTOR], ticks_s(50 + 4)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_MAIN], ticks_s(10)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_HTTP], ticks_s(22)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_OTHER], ticks_s(8)));

        /* A thread renamed: what it used until the last read stays under its old name. */
        thread_names_add(104, "collector");
        write_task("104", "collector", 9, 0);
        write_self(100 + 3, 0, 4);
        assert_int_equal(process_threads_read(pt, root, &st), 0);
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_PUSH], ticks_s(6)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_COLLECTOR], ticks_s(54 + 3)));
        assert_true(near(st.cpu_seconds[PROCESS_THREAD_OTHER], ticks_s(8)));
        process_threads_free(pt);
        for (pid_t tid = 101; tid <= 105; tid++)
                thread_names_forget(tid);
        for (const char *const *t = (const char *const[]) { "4242", "101", "104", "105", NULL }; *t; t++)
                remove_task(*t);
        write_self(UTIME, STIME, 20);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_threads),
                cmocka_unit_test(test_threads_end),
                cmocka_unit_test(test_stats),
                cmocka_unit_test(test_stats_self),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
