/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Real perf_event_open(2), per CPU, with software events: they work on any
 * kernel, with or without a hardware PMU, so these run on our x86 VMs.
 * Needs root (or CAP_PERFMON, or perf_event_paranoid <= 0) and SCHED_FIFO
 * (root or CAP_SYS_NICE); exits 77 without, saying which.
 *
 * A per-CPU counter counts every task on its CPU, and this machine is
 * shared: the page faults and context switches we make are compared with the
 * kernel's own count of them (getrusage(2), wait4(2)) over the same
 * interval, while we run at SCHED_FIFO pinned to the measured CPU so that no
 * SCHED_OTHER task runs there and adds its own (sched(7)).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "pmu-collector.h"
#include "pmu-sysfs.h"

#define FAULT_PAGES 2000U
#define PING_PONG_ROUNDS 1000U
#define NOBODY_UID 65534
#define RT_PRIORITY 1

/*
 * How far the counter may be from the kernel's count of our own faults or
 * switches: 5% plus a few. At SCHED_FIFO only real-time and kernel tasks
 * (stopper, threaded IRQs) can run on the CPU between ours, and they neither
 * fault user pages nor switch more than a handful of times in a few
 * milliseconds; the tolerance still fails a counter that counts half or
 * twice what the kernel saw (another CPU's events, one thread of two, each
 * switch twice).
 */
#define COUNT_TOLERANCE(expected) ((expected) / 20 + 16)

static struct pmu_snapshot *snap(struct pmu_collector *c) {
        struct pmu_snapshot *s = NULL;

        assert_int_equal(pmu_collector_snapshot(c, &s), 0);
        assert_non_null(s);
        return s;
}

static uint64_t total_of(const struct pmu_snapshot *s, unsigned cpu, enum pmu_event_id ev) {
        const struct pmu_cpu_snapshot *cs = pmu_snapshot_cpu(s, cpu);

        assert_non_null(cs);
        assert_true(cs->events[ev].available);
        return cs->events[ev].total;
}

static struct pmu_collector *open_all_events(void) {
        struct pmu_collector_config cfg = {};
        struct pmu_collector *c = NULL;

        assert_int_equal(pmu_collector_new(&cfg, &c), 0);
        return c;
}

static void pin(unsigned cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0)
                _exit(2);
}

/* The calling thread pinned to cpu at SCHED_FIFO (children and threads it
 * creates inherit both): the policy first, so that it does not queue there
 * behind other tasks. rt_end() puts back what rt_begin() saved. */
static void rt_begin(unsigned cpu, cpu_set_t *ret_saved_cpus, int *ret_saved_policy) {
        struct sched_param rt = { .sched_priority = RT_PRIORITY };
        cpu_set_t set;

        assert_int_equal(sched_getaffinity(0, sizeof(*ret_saved_cpus), ret_saved_cpus), 0);
        *ret_saved_policy = sched_getscheduler(0);
        assert_true(*ret_saved_policy >= 0);
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        assert_int_equal(sched_setscheduler(0, SCHED_FIFO, &rt), 0);
        assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void rt_end(const cpu_set_t *saved_cpus, int saved_policy) {
        struct sched_param p = {};

        assert_int_equal(sched_setscheduler(0, saved_policy, &p), 0);
        assert_int_equal(sched_setaffinity(0, sizeof(*saved_cpus), saved_cpus), 0);
}

static uint64_t faults_of(const struct rusage *ru) {
        return (uint64_t) ru->ru_minflt + (uint64_t) ru->ru_majflt;
}

static uint64_t switches_of(const struct rusage *ru) {
        return (uint64_t) ru->ru_nvcsw + (uint64_t) ru->ru_nivcsw;
}

static void assert_near(uint64_t counted, uint64_t expected, const char *what) {
        uint64_t tol = COUNT_TOLERANCE(expected);

        printf("# %s: counted %llu, kernel says %llu (tolerance %llu)\n", what, (unsigned long long) counted,
               (unsigned long long) expected, (unsigned long long) tol);
        assert_true(counted + tol >= expected);
        assert_true(counted <= expected + tol);
}

/* A child pinned to cpu touches FAULT_PAGES fresh anonymous pages: each
 * first write is a page fault on that CPU. Returns the child's page faults
 * as the kernel counted them (wait4(2)); the caller is pinned to cpu, so the
 * child's whole life is there. Unpinned callers (test_hotplug) only need
 * the child's own pin(). */
static uint64_t fault_pages_on(unsigned cpu) {
        long page = sysconf(_SC_PAGESIZE);
        pid_t pid = fork();
        struct rusage ru;
        int status;

        assert_true(pid >= 0);
        if (pid == 0) {
                volatile char *p;

                pin(cpu);
                p = mmap(NULL, (size_t) page * FAULT_PAGES, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        _exit(3);
                for (size_t i = 0; i < FAULT_PAGES; i++)
                        p[i * (size_t) page] = 1;
                _exit(0);
        }
        assert_int_equal(wait4(pid, &status, 0, &ru), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        return faults_of(&ru);
}

static void test_page_faults_cpu0(void **state) {
        struct pmu_collector *c = open_all_events();
        struct pmu_snapshot *a, *b;
        unsigned cpu = (unsigned) cpulist_next(pmu_collector_online(c), 0);
        const struct pmu_cpu_snapshot *cs;
        uint64_t before, after, child;
        struct rusage r0, r1;
        cpu_set_t saved;
        int policy;

        /* Between r0 and r1 this thread and its child fault only on cpu,
         * and nothing else does there; the counter's interval lies inside. */
        rt_begin(cpu, &saved, &policy);
        assert_int_equal(getrusage(RUSAGE_THREAD, &r0), 0);
        assert_int_equal(pmu_collector_read(c), 0);
        a = snap(c);
        before = total_of(a, cpu, PMU_EVENT_PAGE_FAULTS);
        child = fault_pages_on(cpu);
        assert_int_equal(pmu_collector_read(c), 0);
        b = snap(c);
        assert_int_equal(getrusage(RUSAGE_THREAD, &r1), 0);
        rt_end(&saved, policy);
        after = total_of(b, cpu, PMU_EVENT_PAGE_FAULTS);
        cs = pmu_snapshot_cpu(b, cpu);
        printf("# cpu%u page faults: %llu -> %llu (+%llu; the child made %llu, %u of them on purpose)\n", cpu,
               (unsigned long long) before, (unsigned long long) after, (unsigned long long) (after - before),
               (unsigned long long) child, FAULT_PAGES);
        assert_true(child >= FAULT_PAGES);
        assert_near(after - before, child + faults_of(&r1) - faults_of(&r0), "page faults on our CPU");
        assert_true(cs->events[PMU_EVENT_PAGE_FAULTS].counted);
        assert_int_equal(cs->events[PMU_EVENT_PAGE_FAULTS].delta, after - before);
        /* host-wide includes cpu's */
        assert_true(b->host[PMU_EVENT_PAGE_FAULTS].delta >= after - before);
        assert_true(b->host[PMU_EVENT_PAGE_FAULTS].total >= after);
        assert_int_equal(b->reads, 2);

        /* software group: one group, never multiplexed */
        assert_int_equal(cs->n_groups >= 1, 1);
        for (size_t k = 0; k < cs->n_groups; k++)
                if (streq(cs->groups[k].name, "software")) {
                        assert_int_equal(cs->groups[k].n_events, 3);
                        assert_true(cs->groups[k].enabled_ns_total > 0);
                        assert_int_equal(cs->groups[k].running_ns_total, cs->groups[k].enabled_ns_total);
                }
        pmu_snapshot_free(a);
        pmu_snapshot_free(b);
        pmu_collector_free(c);
}

struct pingpong {
        int to_b[2], to_a[2];
        int err;
        uint64_t switches; /* the kernel's count of this thread's switches over its loop */
};

/* Created by a thread pinned to the CPU at SCHED_FIFO: inherits both
 * (pthread_attr_setinheritsched(3)), so its whole life is on that CPU. */
static void *pong(void *arg) {
        struct pingpong *pp = arg;
        struct rusage r0, r1;
        char ch;

        if (getrusage(RUSAGE_THREAD, &r0) < 0)
                pp->err = 1;
        for (unsigned i = 0; i < PING_PONG_ROUNDS; i++) {
                if (read(pp->to_b[0], &ch, 1) != 1 || write(pp->to_a[1], &ch, 1) != 1) {
                        pp->err = 1;
                        break;
                }
        }
        if (getrusage(RUSAGE_THREAD, &r1) < 0)
                pp->err = 1;
        pp->switches = switches_of(&r1) - switches_of(&r0);
        return NULL;
}

static void test_context_switches_cpu1(void **state) {
        struct pmu_collector *c = open_all_events();
        struct pingpong pp = {};
        struct pmu_snapshot *a, *b;
        uint64_t before, after, expected;
        struct rusage r0, r1;
        pthread_t t;
        cpu_set_t saved;
        int policy;
        char ch = 'x';

        if (!cpulist_has(pmu_collector_online(c), 1)) {
                pmu_collector_free(c);
                skip(); /* needs a second online CPU */
        }
        assert_int_equal(pipe(pp.to_b), 0);
        assert_int_equal(pipe(pp.to_a), 0);
        /* Both threads at SCHED_FIFO on cpu1: one of them is always
         * runnable, so every switch there is one of theirs, counted by the
         * kernel in the thread switched out (getrusage(2) RUSAGE_THREAD). */
        rt_begin(1, &saved, &policy);
        assert_int_equal(getrusage(RUSAGE_THREAD, &r0), 0);
        assert_int_equal(pmu_collector_read(c), 0);
        a = snap(c);
        before = total_of(a, 1, PMU_EVENT_CONTEXT_SWITCHES);
        assert_int_equal(pthread_create(&t, NULL, pong, &pp), 0);
        for (unsigned i = 0; i < PING_PONG_ROUNDS; i++) {
                assert_int_equal(write(pp.to_b[1], &ch, 1), 1);
                assert_int_equal(read(pp.to_a[0], &ch, 1), 1);
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(pmu_collector_read(c), 0);
        b = snap(c);
        assert_int_equal(getrusage(RUSAGE_THREAD, &r1), 0);
        rt_end(&saved, policy);
        assert_int_equal(pp.err, 0);

        after = total_of(b, 1, PMU_EVENT_CONTEXT_SWITCHES);
        /* + 1: pong's last switch, out of the exiting thread, after its
         * getrusage(). */
        expected = switches_of(&r1) - switches_of(&r0) + pp.switches + 1;
        printf("# cpu1 context switches: +%llu for %u round trips (this thread %llu, the other %llu)\n",
               (unsigned long long) (after - before), PING_PONG_ROUNDS,
               (unsigned long long) (switches_of(&r1) - switches_of(&r0)), (unsigned long long) pp.switches);
        /* pong blocks in all but its last round trip */
        assert_true(pp.switches >= PING_PONG_ROUNDS - 1);
        assert_near(after - before, expected, "context switches on cpu1");
        for (int i = 0; i < 2; i++) {
                close(pp.to_a[i]);
                close(pp.to_b[i]);
        }
        pmu_snapshot_free(a);
        pmu_snapshot_free(b);
        pmu_collector_free(c);
}

/* On a host without a core PMU (our x86 VMs: `perf stat -e cycles true`
 * says <not supported>), hardware events are unavailable with the kernel's
 * errno, and the software events still count. */
static void test_hardware_unavailable(void **state) {
        struct pmu_sysfs *sys = NULL;
        struct pmu_collector *c;
        struct pmu_snapshot *s;
        const char *msg = NULL;
        bool has_pmu;

        assert_int_equal(pmu_sysfs_discover(NULL, &sys), 0);
        has_pmu = sys->n_pmus > 0;
        pmu_sysfs_free(sys);
        if (has_pmu) {
                printf("# this host has a core PMU; hardware events may count here\n");
                skip();
        }

        c = open_all_events();
        assert_int_equal(pmu_collector_read(c), 0);
        s = snap(c);
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                const struct pmu_event_def *d = pmu_event_get((enum pmu_event_id) i);

                assert_true(s->events[i].configured);
                if (d->class == PMU_EVENT_CLASS_HARDWARE) {
                        assert_false(s->events[i].available);
                        assert_true(s->events[i].error < 0);
                        assert_false(s->host[i].available);
                        printf("# %-20s unavailable: %s\n", d->name, strerror(-s->events[i].error));
                } else {
                        assert_true(s->events[i].available);
                        assert_int_equal(s->events[i].error, 0);
                        assert_true(s->host[i].counted);
                }
        }
        assert_true(s->events[PMU_EVENT_CYCLES].error == -ENOENT ||
                    s->events[PMU_EVENT_CYCLES].error == -EOPNOTSUPP ||
                    s->events[PMU_EVENT_CYCLES].error == -ENODEV);
        assert_int_equal(s->state, PMU_STATE_DEGRADED);
        assert_int_equal(pmu_collector_state(c, &msg), PMU_STATE_DEGRADED);
        /* The kernel too counts no cycles here: the cause is the host's, said once. */
        {
                struct perf_event_attr attr = { .type = PERF_TYPE_HARDWARE, .size = sizeof(attr),
                                                .config = PERF_COUNT_HW_CPU_CYCLES };
                int fd = (int) syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

                if (fd >= 0)
                        close(fd);
                assert_true(fd < 0);
        }
        printf("# %s\n", msg);
        static const char cause[] = "no hardware PMU on this host: nothing in /sys/bus/event_source/devices";
        assert_int_equal(strncmp(msg, cause, strlen(cause)), 0);
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                const struct pmu_event_def *d = pmu_event_get((enum pmu_event_id) i);
                char name[64];

                /* Each hardware event named once (", name," or ": name,"...), no software one. */
                snprintf(name, sizeof(name), " %s%s", d->name, i == PMU_EVENT_STALL_BACKEND ? "." : ",");
                if (d->class == PMU_EVENT_CLASS_HARDWARE)
                        assert_true(strstr(msg, name) && !strstr(strstr(msg, name) + 1, name));
                else
                        assert_null(strstr(msg, name));
                /* Its error is in the snapshot (/counters' "unavailable"), not repeated in the message. */
                if (s->events[i].error)
                        assert_null(strstr(msg, pmu_event_error_string(s->events[i].error)));
        }
        /* no ratio can be formed */
        for (size_t r = 0; r < _PMU_RATIO_MAX; r++)
                assert_false(s->host_ratios[r].present);
        for (size_t k = 0; k < s->n_cpus; k++) {
                assert_false(s->cpus[k].events[PMU_EVENT_CYCLES].available);
                assert_false(s->cpus[k].ratios[PMU_RATIO_IPC].present);
        }
        pmu_snapshot_free(s);
        pmu_collector_free(c);
}

static int write_file(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, s, strlen(s));
        close(fd);
        return n == (ssize_t) strlen(s) ? 0 : -EIO;
}

/* Hotplug through a fake sysfs root whose online file we rewrite; the
 * perf_event_open calls are real. */
static void test_hotplug(void **state) {
        const char *build = getenv("ARMPROFD_BUILD_DIR");
        char root[2048], path[4096], online[256];
        struct cpulist real;
        struct pmu_collector_config cfg = {};
        static const enum pmu_event_id sw[] = { PMU_EVENT_PAGE_FAULTS, PMU_EVENT_CONTEXT_SWITCHES };
        struct pmu_collector *c = NULL;
        struct pmu_snapshot *s;
        uint64_t t1_before, host_before;

        assert_int_equal(pmu_sysfs_read_online(NULL, &real), 0);
        if (cpulist_count(&real) < 2 || !cpulist_has(&real, 0) || !cpulist_has(&real, 1))
                skip();
        assert_int_equal(cpulist_format(&real, online, sizeof(online)), 0);

        snprintf(root, sizeof(root), "%s/pmu-hotplug-XXXXXX", build ? build : ".");
        assert_non_null(mkdtemp(root));
        snprintf(path, sizeof(path), "%s/devices", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/devices/system", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/devices/system/cpu", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/devices/system/cpu/online", root);
        assert_int_equal(write_file(path, online), 0);

        cfg.sysfs_root = root;
        cfg.events = sw;
        cfg.n_events = ELEMENTSOF(sw);
        assert_int_equal(pmu_collector_new(&cfg, &c), 0);
        assert_int_equal(pmu_collector_state(c, NULL), PMU_STATE_OK);
        fault_pages_on(1);
        assert_int_equal(pmu_collector_read(c), 0);
        s = snap(c);
        t1_before = total_of(s, 1, PMU_EVENT_PAGE_FAULTS);
        host_before = s->host[PMU_EVENT_PAGE_FAULTS].total;
        assert_true(t1_before >= FAULT_PAGES);
        assert_true(host_before >= t1_before);
        pmu_snapshot_free(s);

        /* cpu1 goes offline */
        assert_int_equal(write_file(path, "0"), 0);
        assert_int_equal(pmu_collector_update_cpus(c), 1);
        assert_int_equal(pmu_collector_update_cpus(c), 0);
        assert_int_equal(pmu_collector_read(c), 0);
        s = snap(c);
        assert_int_equal(s->n_cpus, 1);
        assert_null(pmu_snapshot_cpu(s, 1));
        assert_non_null(pmu_snapshot_cpu(s, 0));
        /* the host-wide counter keeps what cpu1 counted */
        assert_true(s->host[PMU_EVENT_PAGE_FAULTS].total >= host_before);
        pmu_snapshot_free(s);

        /* and comes back: present again, its total carries on */
        assert_int_equal(write_file(path, online), 0);
        assert_int_equal(pmu_collector_update_cpus(c), 1);
        fault_pages_on(1);
        assert_int_equal(pmu_collector_read(c), 0);
        s = snap(c);
        assert_int_equal(s->n_cpus, cpulist_count(&real));
        assert_non_null(pmu_snapshot_cpu(s, 1));
        printf("# cpu1 page faults across offline/online: %llu -> %llu\n",
               (unsigned long long) t1_before, (unsigned long long) total_of(s, 1, PMU_EVENT_PAGE_FAULTS));
        assert_true(total_of(s, 1, PMU_EVENT_PAGE_FAULTS) >= t1_before + FAULT_PAGES);
        pmu_snapshot_free(s);
        pmu_collector_free(c);

        unlink(path);
        snprintf(path, sizeof(path), "%s/devices/system/cpu", root);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/devices/system", root);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/devices", root);
        rmdir(path);
        rmdir(root);
}

/* Unprivileged, with perf_event_paranoid > 0, per-CPU counting is refused:
 * a distinct state and a message naming the sysctl and the capability. */
static void test_permission_denied(void **state) {
        char paranoid[32];
        pid_t pid;
        int status;

        if (geteuid() != 0 ||
            pmu_sysfs_read_string("/proc/sys/kernel/perf_event_paranoid", paranoid, sizeof(paranoid)) < 0 ||
            streq(paranoid, "-1") || streq(paranoid, "0"))
                skip(); /* needs root to drop privileges, and paranoid >= 1 */

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct pmu_collector_config cfg = {};
                struct pmu_collector *c = NULL;
                const char *msg = NULL;

                if (setgroups(0, NULL) < 0 || setresgid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0 ||
                    setresuid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0)
                        _exit(10);
                if (pmu_collector_new(&cfg, &c) < 0)
                        _exit(11);
                if (pmu_collector_state(c, &msg) != PMU_STATE_PERMISSION_DENIED)
                        _exit(12);
                if (!strstr(msg, "perf_event_paranoid") || !strstr(msg, "CAP_PERFMON"))
                        _exit(13);
                printf("# unprivileged: %s\n", msg);
                fflush(stdout);
                pmu_collector_free(c);
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_nofile(void **state) {
        struct rlimit rl;
        uint64_t lim = 0;

        assert_int_equal(pmu_raise_nofile_limit(&lim), 0);
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
        assert_int_equal(rl.rlim_cur, rl.rlim_max);
        assert_int_equal(lim, rl.rlim_max);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_page_faults_cpu0),
                cmocka_unit_test(test_context_switches_cpu1),
                cmocka_unit_test(test_hardware_unavailable),
                cmocka_unit_test(test_hotplug),
                cmocka_unit_test(test_permission_denied),
                cmocka_unit_test(test_nofile),
        };
        static const enum pmu_event_id probe_ev[] = { PMU_EVENT_PAGE_FAULTS };
        struct pmu_collector_config cfg = { .events = probe_ev, .n_events = 1 };
        struct pmu_collector *c = NULL;
        struct sched_param rt = { .sched_priority = RT_PRIORITY }, other = {};
        enum pmu_state st;
        const char *msg;
        int r;

        setvbuf(stdout, NULL, _IOLBF, 0);
        /* Only a refusal is a reason to skip: any other error, or software
         * events that do not all count, is a bug here (they count on every
         * kernel with perf events). */
        r = pmu_collector_new(&cfg, &c);
        if (r == -EACCES || r == -EPERM) {
                printf("SKIP: not permitted to count per CPU (%s): needs root, CAP_PERFMON or "
                       "kernel.perf_event_paranoid <= 0\n", strerror(-r));
                return 77;
        }
        if (r < 0) {
                printf("FAIL: cannot set up the collector: %s\n", strerror(-r));
                return 1;
        }
        st = pmu_collector_state(c, &msg);
        if (st == PMU_STATE_PERMISSION_DENIED) {
                printf("SKIP: not permitted to count per CPU: %s\n", msg);
                pmu_collector_free(c);
                return 77;
        }
        if (st != PMU_STATE_OK) {
                printf("FAIL: software events do not count per CPU (%s): %s\n", pmu_state_to_string(st), msg);
                pmu_collector_free(c);
                return 1;
        }
        pmu_collector_free(c);
        /* The count comparisons need SCHED_FIFO to keep other tasks off the
         * measured CPU (see the top of this file). */
        if (sched_setscheduler(0, SCHED_FIFO, &rt) < 0) {
                if (errno != EPERM) {
                        printf("FAIL: sched_setscheduler(SCHED_FIFO): %s\n", strerror(errno));
                        return 1;
                }
                printf("SKIP: SCHED_FIFO not permitted (needs root or CAP_SYS_NICE, and RT time in "
                       "this cgroup): %s\n", strerror(errno));
                return 77;
        }
        if (sched_setscheduler(0, SCHED_OTHER, &other) < 0) {
                printf("FAIL: back to SCHED_OTHER: %s\n", strerror(errno));
                return 1;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
