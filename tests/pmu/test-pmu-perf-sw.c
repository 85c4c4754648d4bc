/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Real perf_event_open(2), per CPU, with software events: they work on any
 * kernel, with or without a hardware PMU, so these run on our x86 VMs.
 * Needs root (or CAP_PERFMON, or perf_event_paranoid <= 0); exits 77 without.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "pmu-collector.h"
#include "pmu-sysfs.h"

#define FAULT_PAGES 2000U
#define PING_PONG_ROUNDS 1000U
#define NOBODY_UID 65534

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

/* A child pinned to cpu touches FAULT_PAGES fresh anonymous pages: each
 * first write is a page fault on that CPU. */
static void fault_pages_on(unsigned cpu) {
        long page = sysconf(_SC_PAGESIZE);
        pid_t pid = fork();
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
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_page_faults_cpu0(void **state) {
        struct pmu_collector *c = open_all_events();
        struct pmu_snapshot *a, *b;
        unsigned cpu = (unsigned) cpulist_next(pmu_collector_online(c), 0);
        const struct pmu_cpu_snapshot *cs;
        uint64_t before, after;

        assert_int_equal(pmu_collector_read(c), 0);
        a = snap(c);
        before = total_of(a, cpu, PMU_EVENT_PAGE_FAULTS);
        fault_pages_on(cpu);
        assert_int_equal(pmu_collector_read(c), 0);
        b = snap(c);
        after = total_of(b, cpu, PMU_EVENT_PAGE_FAULTS);
        cs = pmu_snapshot_cpu(b, cpu);
        printf("# cpu%u page faults: %llu -> %llu (+%llu, expected >= %u)\n", cpu,
               (unsigned long long) before, (unsigned long long) after,
               (unsigned long long) (after - before), FAULT_PAGES);
        assert_true(after - before >= FAULT_PAGES);
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
        unsigned cpu;
        int err;
};

static void *pong(void *arg) {
        struct pingpong *pp = arg;
        char ch;
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(pp->cpu, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
                pp->err = 1;
        for (unsigned i = 0; i < PING_PONG_ROUNDS; i++) {
                if (read(pp->to_b[0], &ch, 1) != 1 || write(pp->to_a[1], &ch, 1) != 1) {
                        pp->err = 1;
                        break;
                }
        }
        return NULL;
}

static void test_context_switches_cpu1(void **state) {
        struct pmu_collector *c = open_all_events();
        struct pingpong pp = { .cpu = 1 };
        struct pmu_snapshot *a, *b;
        uint64_t before, after;
        pthread_t t;
        cpu_set_t set, saved;
        char ch = 'x';

        if (!cpulist_has(pmu_collector_online(c), 1)) {
                pmu_collector_free(c);
                skip(); /* needs a second online CPU */
        }
        assert_int_equal(pipe(pp.to_b), 0);
        assert_int_equal(pipe(pp.to_a), 0);
        assert_int_equal(pmu_collector_read(c), 0);
        a = snap(c);
        before = total_of(a, 1, PMU_EVENT_CONTEXT_SWITCHES);

        assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
        CPU_ZERO(&set);
        CPU_SET(1, &set);
        assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
        assert_int_equal(pthread_create(&t, NULL, pong, &pp), 0);
        for (unsigned i = 0; i < PING_PONG_ROUNDS; i++) {
                assert_int_equal(write(pp.to_b[1], &ch, 1), 1);
                assert_int_equal(read(pp.to_a[0], &ch, 1), 1);
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
        assert_int_equal(pp.err, 0);

        assert_int_equal(pmu_collector_read(c), 0);
        b = snap(c);
        after = total_of(b, 1, PMU_EVENT_CONTEXT_SWITCHES);
        printf("# cpu1 context switches: +%llu for %u round trips (expected >= %u)\n",
               (unsigned long long) (after - before), PING_PONG_ROUNDS, PING_PONG_ROUNDS);
        assert_true(after - before >= PING_PONG_ROUNDS);
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
        assert_non_null(strstr(msg, "12 of 15"));
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
        enum pmu_state st;
        const char *msg;
        int r;

        setvbuf(stdout, NULL, _IOLBF, 0);
        r = pmu_collector_new(&cfg, &c);
        if (r < 0) {
                printf("SKIP: cannot set up the collector: %s\n", strerror(-r));
                return 77;
        }
        st = pmu_collector_state(c, &msg);
        if (st != PMU_STATE_OK) {
                printf("SKIP: software events cannot be counted per CPU here (%s): %s\n",
                       pmu_state_to_string(st), msg);
                pmu_collector_free(c);
                return 77;
        }
        pmu_collector_free(c);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
