/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test driver for the PMU library on a real arm64 kernel under qemu
 * (tests/pmu/arm64-vm-test.py cross-compiles it statically with the library
 * sources and runs it as the VM's only program, with -icount so that
 * INST_RETIRED counts: qemu's docs/devel/tcg-icount.rst, and its Arm PMU
 * model in target/arm/helper.c).
 * Prints one PASS/FAIL line per check; exits 0 when all pass, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "pmu-collector.h"
#include "pmu-sysfs.h"
#include "vm-check.h"

/* The measured loop: LOOP_INSNS_PER_ITER instructions per iteration. */
#define LOOP_INSNS_PER_ITER 5U
#define LOOP_ITERS UINT64_C(50000000)
#define LOOP_INSNS (LOOP_ITERS * LOOP_INSNS_PER_ITER) /* 250 M */
#define INSN_TOLERANCE 0.01    /* exact count: 1% */
#define MUX_INSN_TOLERANCE 0.10 /* multiplexed estimate: 10% */
/* Under -icount shift=0 qemu's CPU_CYCLES counts one per instruction
 * (with shift=0 one instruction takes 1 ns, and qemu's cycle counter
 * follows the virtual clock at 1 GHz: target/arm/helper.c, so IPC is
 * exactly 1): 1%. */
#define ICOUNT_IPC 1.0
#define IPC_TOLERANCE 0.01
#define CPU1_ONLINE "/sys/devices/system/cpu/cpu1/online"


static char buffer[256 * 1024] __attribute__((aligned(4096)));

/* 5 instructions per iteration (ldr, add, and, subs, b.ne). */
static void busy_loop(uint64_t iters) {
        uint64_t off = 0, sink, stride = 4096 + 64;

        if (!iters)
                return;
        __asm__ volatile("1:\n\t"
                         "ldr  %[sink], [%[buf], %[off]]\n\t"
                         "add  %[off], %[off], %[stride]\n\t"
                         "and  %[off], %[off], #0x3ffff\n\t"
                         "subs %[n], %[n], #1\n\t"
                         "b.ne 1b\n\t"
                         : [n] "+r"(iters), [off] "+r"(off), [sink] "=&r"(sink)
                         : [buf] "r"(buffer), [stride] "r"(stride)
                         : "cc", "memory");
}

static void pin(unsigned cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0)
                printf("# sched_setaffinity(%u): %s\n", cpu, strerror(errno));
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}

static struct pmu_snapshot *snap(struct pmu_collector *c) {
        struct pmu_snapshot *s = NULL;

        if (pmu_collector_snapshot(c, &s) < 0) {
                printf("FAIL snapshot\n");
                exit(1);
        }
        return s;
}

static void print_cpu(const struct pmu_cpu_snapshot *cs) {
        printf("# cpu%u (%s):\n", cs->cpu, cs->pmu);
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                const struct pmu_event_value *v = &cs->events[i];

                if (!v->available)
                        continue;
                printf("#   %-20s total %14llu  delta %14llu%s\n", pmu_event_get((enum pmu_event_id) i)->name,
                       (unsigned long long) v->total, (unsigned long long) v->delta,
                       v->counted ? "" : "  (not counted)");
        }
        for (size_t k = 0; k < cs->n_groups; k++)
                printf("#   group %-16s %zu events  enabled %llu ns  running %llu ns (%.1f%%)\n", cs->groups[k].name,
                       cs->groups[k].n_events, (unsigned long long) cs->groups[k].enabled_ns_total,
                       (unsigned long long) cs->groups[k].running_ns_total,
                       cs->groups[k].enabled_ns_total ? 100.0 * (double) cs->groups[k].running_ns_total /
                                                                (double) cs->groups[k].enabled_ns_total
                                                      : 0.0);
}

static const struct pmu_desc *test_discovery(struct pmu_sysfs **ret) {
        struct pmu_sysfs *s = NULL;
        const struct pmu_desc *p = NULL;
        char cpus[64] = "";
        int r;

        r = pmu_sysfs_discover(NULL, &s);
        check(r == 0, "discover /sys: %s", r < 0 ? strerror(-r) : "ok");
        if (r < 0)
                return NULL;
        for (size_t i = 0; i < s->n_pmus; i++)
                if (s->pmus[i].kind == PMU_KIND_ARM_PMUV3 && !s->pmus[i].all_cpus)
                        p = &s->pmus[i];
        if (p)
                (void) cpulist_format(&p->cpus, cpus, sizeof(cpus));
        check(p && strncmp(p->name, "armv8_pmuv3", strlen("armv8_pmuv3")) == 0 &&
                      cpulist_equal(&p->cpus, &s->online),
              "core PMU found by its cpus file: %s type=%u cpus=%s (online %u CPUs), %zu events listed",
              p ? p->name : "(none)", p ? p->type : 0, cpus, cpulist_count(&s->online), p ? p->n_events : 0);
        check(pmu_sysfs_pmu_for_cpu(s, 0) == p && pmu_sysfs_pmu_for_cpu(s, 1) == p, "CPU->PMU map covers cpu0, cpu1");
        *ret = s;
        return p;
}

/* Exact instruction count, no multiplexing: cycles + instructions only. */
static void test_instructions(void) {
        static const enum pmu_event_id ev[] = { PMU_EVENT_CYCLES, PMU_EVENT_INSTRUCTIONS };
        struct pmu_collector_config cfg = { .events = ev, .n_events = ELEMENTSOF(ev) };
        struct pmu_collector *c = NULL;
        struct pmu_snapshot *s;
        const struct pmu_cpu_snapshot *cs;
        const char *msg = "";
        int r;

        r = pmu_collector_new(&cfg, &c);
        check(r == 0, "collector with cycles+instructions: %s", r < 0 ? strerror(-r) : "ok");
        if (r < 0)
                return;
        check(pmu_collector_state(c, &msg) == PMU_STATE_OK, "state %s %s (instructions need qemu -icount)",
              pmu_state_to_string(pmu_collector_state(c, NULL)), msg);
        pin(0);
        busy_loop(1000); /* page the code in */
        pmu_collector_read(c);
        busy_loop(LOOP_ITERS);
        pmu_collector_read(c);
        s = snap(c);
        cs = pmu_snapshot_cpu(s, 0);
        if (cs) {
                const struct pmu_event_value *in = &cs->events[PMU_EVENT_INSTRUCTIONS];
                double err = ((double) in->delta - (double) LOOP_INSNS) / (double) LOOP_INSNS;

                print_cpu(cs);
                check(in->available && in->counted && err >= -INSN_TOLERANCE && err <= INSN_TOLERANCE,
                      "cpu0 instructions over a %llu-instruction loop: %llu (error %+.4f%%, limit 1%%)",
                      (unsigned long long) LOOP_INSNS, (unsigned long long) in->delta, err * 100.0);
                check(cs->n_groups == 1 && cs->groups[0].running_ns_total == cs->groups[0].enabled_ns_total,
                      "one group, not multiplexed (running == enabled)");
                check(cs->ratios[PMU_RATIO_IPC].present &&
                              cs->ratios[PMU_RATIO_IPC].value >= ICOUNT_IPC * (1.0 - IPC_TOLERANCE) &&
                              cs->ratios[PMU_RATIO_IPC].value <= ICOUNT_IPC * (1.0 + IPC_TOLERANCE),
                      "cpu0 IPC %.4f, %s (%.1f expected under -icount, limit 1%%)", cs->ratios[PMU_RATIO_IPC].value,
                      cs->ratios[PMU_RATIO_IPC].present ? "present" : "absent", ICOUNT_IPC);
        } else
                check(false, "cpu0 in snapshot");
        pmu_snapshot_free(s);
        pmu_collector_free(c);
}

/* Everything, with the raw events the PMU does not list: 12 hardware
 * events for 6 + 1 counters, so the kernel must multiplex two groups. */
static void test_multiplexing(void) {
        struct pmu_collector_config cfg = { .open_unlisted = true };
        struct pmu_collector *c = NULL;
        struct pmu_snapshot *s;
        const struct pmu_cpu_snapshot *cs;
        size_t hw_groups = 0, muxed = 0;
        int r;

        r = pmu_collector_new(&cfg, &c);
        check(r == 0, "collector with all events (unlisted raw events too): %s", r < 0 ? strerror(-r) : "ok");
        if (r < 0)
                return;
        pin(0);
        pmu_collector_read(c);
        busy_loop(LOOP_ITERS);
        pmu_collector_read(c);
        s = snap(c);
        cs = pmu_snapshot_cpu(s, 0);
        if (!cs) {
                check(false, "cpu0 in snapshot");
                goto out;
        }
        print_cpu(cs);
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                if (!cs->events[i].available)
                        printf("#   %-20s unavailable: %s\n", pmu_event_get((enum pmu_event_id) i)->name,
                               strerror(-s->events[i].error));
        for (size_t k = 0; k < cs->n_groups; k++) {
                const struct pmu_group_times *g = &cs->groups[k];

                if (streq(g->name, "software"))
                        continue;
                hw_groups++;
                if (g->running_ns_total > 0 && g->running_ns_total < g->enabled_ns_total)
                        muxed++;
        }
        check(hw_groups >= 2 && muxed == hw_groups,
              "%zu hardware groups, %zu multiplexed (0 < running < enabled)", hw_groups, muxed);
        /* The idle CPU rotates its groups too (perf's mux hrtimer). */
        if (pmu_snapshot_cpu(s, 1))
                print_cpu(pmu_snapshot_cpu(s, 1));
        {
                const struct pmu_event_value *in = &cs->events[PMU_EVENT_INSTRUCTIONS];
                const struct pmu_event_value *cy = &cs->events[PMU_EVENT_CYCLES];
                double err = ((double) in->delta - (double) LOOP_INSNS) / (double) LOOP_INSNS;

                check(in->counted && err > -MUX_INSN_TOLERANCE && err < MUX_INSN_TOLERANCE,
                      "scaled instructions while multiplexed: %llu (error %+.2f%%, limit 10%%)",
                      (unsigned long long) in->delta, err * 100.0);
                /* Under -icount one instruction is one virtual ns and
                 * CPU_CYCLES ticks at 1 GHz of virtual time. */
                check(cy->counted && in->counted && cy->delta > 0 &&
                              (double) in->delta / (double) cy->delta > 0.9 &&
                              (double) in->delta / (double) cy->delta < 1.1,
                      "scaled cycles %llu consistent with scaled instructions (IPC %.3f)",
                      (unsigned long long) cy->delta, cy->delta ? (double) in->delta / (double) cy->delta : 0.0);
        }
out:
        pmu_snapshot_free(s);
        pmu_collector_free(c);
}

/* Claim 11 general counters and leave cycles out (it would lead the first
 * group on the dedicated cycle counter): the first group, led by
 * instructions, gets as many members as the kernel's validate_group()
 * accepts with the leader disabled (it skips OFF events:
 * drivers/perf/arm_pmu.c), one more than the 6 general counters; it opens fine and
 * never runs. The library must notice (time_running == 0) and split it. */
static void test_oversized(void) {
        enum pmu_event_id ev[_PMU_EVENT_MAX];
        struct pmu_collector_config cfg = { .events = ev, .open_unlisted = true, .general_counters = 11 };
        struct pmu_collector *c = NULL;
        struct pmu_snapshot *s;
        const struct pmu_cpu_snapshot *cs;
        unsigned budget = 0;
        size_t ran = 0, hw = 0;
        int r;

        for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                if (i != PMU_EVENT_CYCLES)
                        ev[cfg.n_events++] = (enum pmu_event_id) i;
        r = pmu_collector_new(&cfg, &c);
        check(r == 0, "collector claiming 11 counters: %s", r < 0 ? strerror(-r) : "ok");
        if (r < 0)
                return;
        pin(0);
        for (unsigned i = 0; i < 4 && pmu_collector_resplits(c) == 0; i++) {
                busy_loop(LOOP_ITERS / 50);
                pmu_collector_read(c);
        }
        s = snap(c);
        cs = pmu_snapshot_cpu(s, 0);
        if (cs)
                print_cpu(cs);
        pmu_snapshot_free(s);
        check(pmu_collector_resplits(c) > 0, "oversized group detected (time_running == 0) and split: %u re-split(s)",
              pmu_collector_resplits(c));
        r = pmu_collector_pmu_counters(c, "armv8_pmuv3", &budget);
        check(r == 0 && budget < 7, "general counter budget lowered from 11 to %u", budget);

        busy_loop(LOOP_ITERS / 5);
        pmu_collector_read(c);
        busy_loop(LOOP_ITERS / 5);
        pmu_collector_read(c);
        s = snap(c);
        cs = pmu_snapshot_cpu(s, 0);
        if (cs) {
                print_cpu(cs);
                for (size_t k = 0; k < cs->n_groups; k++) {
                        if (streq(cs->groups[k].name, "software"))
                                continue;
                        hw++;
                        if (cs->groups[k].running_ns_total > 0)
                                ran++;
                }
        }
        check(cs && hw > 0 && ran == hw && cs->events[PMU_EVENT_INSTRUCTIONS].total > 0,
              "after the split every hardware group runs (%zu of %zu)", ran, hw);
        pmu_snapshot_free(s);
        pmu_collector_free(c);
}

static int write_sysfs(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, value, strlen(value));
        if (n < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        close(fd);
        return 0;
}

static bool monotonic(const struct pmu_snapshot *a, const struct pmu_snapshot *b) {
        for (size_t k = 0; k < a->n_cpus; k++) {
                const struct pmu_cpu_snapshot *ca = &a->cpus[k];
                const struct pmu_cpu_snapshot *cb = pmu_snapshot_cpu(b, ca->cpu);

                if (!cb)
                        continue;
                for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                        if (cb->events[i].total < ca->events[i].total) {
                                printf("# cpu%u %s went backwards: %llu -> %llu\n", ca->cpu,
                                       pmu_event_get((enum pmu_event_id) i)->name,
                                       (unsigned long long) ca->events[i].total,
                                       (unsigned long long) cb->events[i].total);
                                return false;
                        }
        }
        return true;
}

static void test_hotplug(void) {
        static const enum pmu_event_id ev[] = { PMU_EVENT_CYCLES, PMU_EVENT_INSTRUCTIONS,
                                                PMU_EVENT_CONTEXT_SWITCHES, PMU_EVENT_PAGE_FAULTS };
        struct pmu_collector_config cfg = { .events = ev, .n_events = ELEMENTSOF(ev) };
        struct pmu_collector *c = NULL;
        struct pmu_snapshot *s0, *s1, *s2;
        const struct pmu_cpu_snapshot *c1;
        uint64_t cyc_before = 0;
        int r;

        r = pmu_collector_new(&cfg, &c);
        check(r == 0, "collector for hotplug: %s", r < 0 ? strerror(-r) : "ok");
        if (r < 0)
                return;
        pin(0);
        sleep_ms(20);
        pmu_collector_read(c);
        s0 = snap(c);
        c1 = pmu_snapshot_cpu(s0, 1);
        if (c1)
                cyc_before = c1->events[PMU_EVENT_CYCLES].total;
        check(c1 && cyc_before > 0, "cpu1 counted before offline: cycles %llu", (unsigned long long) cyc_before);

        r = write_sysfs(CPU1_ONLINE, "0");
        check(r == 0, "echo 0 > %s: %s", CPU1_ONLINE, r < 0 ? strerror(-r) : "ok");
        r = pmu_collector_update_cpus(c);
        check(r == 1, "update_cpus saw the change (%d)", r);
        sleep_ms(20);
        pmu_collector_read(c);
        s1 = snap(c);
        check(!pmu_snapshot_cpu(s1, 1) && pmu_snapshot_cpu(s1, 0) && s1->n_cpus == 1,
              "cpu1 absent while offline (%zu CPU(s) in snapshot)", s1->n_cpus);
        check(monotonic(s0, s1), "totals monotonic across offline");

        r = write_sysfs(CPU1_ONLINE, "1");
        check(r == 0, "echo 1 > %s: %s", CPU1_ONLINE, r < 0 ? strerror(-r) : "ok");
        r = pmu_collector_update_cpus(c);
        check(r == 1, "update_cpus saw cpu1 back (%d)", r);
        sleep_ms(20);
        pmu_collector_read(c);
        s2 = snap(c);
        c1 = pmu_snapshot_cpu(s2, 1);
        if (c1)
                print_cpu(c1);
        check(c1 && c1->events[PMU_EVENT_CYCLES].counted && c1->events[PMU_EVENT_CYCLES].delta > 0,
              "cpu1 present and counting again after online");
        check(c1 && c1->events[PMU_EVENT_CYCLES].total > cyc_before,
              "cpu1 cycles total carried over the reopen: %llu -> %llu", (unsigned long long) cyc_before,
              c1 ? (unsigned long long) c1->events[PMU_EVENT_CYCLES].total : 0ULL);
        check(monotonic(s0, s2) && monotonic(s1, s2), "totals monotonic across online");
        pmu_snapshot_free(s0);
        pmu_snapshot_free(s1);
        pmu_snapshot_free(s2);
        pmu_collector_free(c);
}

/*
 * A collector of the whole catalogue read twice on CPU 0 around a busy loop
 * (its groups, top-down's among them, then have a delta): the snapshot, or
 * NULL when it could not be made (said as a failure of `what`).
 */
static struct pmu_snapshot *read_around_loop(const char *what, struct pmu_collector **ret) {
        struct pmu_collector_config cfg = {};
        int r;

        r = pmu_collector_new(&cfg, ret);
        check(r == 0, "%s: %s", what, r < 0 ? strerror(-r) : "ok");
        if (r < 0)
                return NULL;
        pin(0);
        (void) pmu_collector_read(*ret);
        busy_loop(LOOP_ITERS / 10);
        (void) pmu_collector_read(*ret);
        return snap(*ret);
}

/* Top-down on the emulated PMU: what it offers is counted (cycles), top-down
 * is said to be unavailable with the reason naming the MIDR that the kernel
 * shows (read here from sysfs, not from the library), and nothing reports a
 * fraction outside [0, 1]. */
static void test_topdown(void) {
        struct pmu_collector *c = NULL;
        struct pmu_snapshot *s = read_around_loop("collector with the whole catalogue for top-down", &c);

        if (!s)
                return;
        for (size_t i = 0; i < s->n_cpus; i++) {
                const struct pmu_cpu_snapshot *cs = &s->cpus[i];
                const struct pmu_cpu_topdown *t = &cs->topdown;
                char path[128], midr[32] = "", want[32] = "";
                uint64_t m = 0;
                bool in_range = true;
                size_t present = 0;

                snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/regs/identification/midr_el1", cs->cpu);
                if (pmu_sysfs_read_string(path, midr, sizeof(midr)) >= 0 && pmu_sysfs_parse_hex(midr, &m) >= 0)
                        snprintf(want, sizeof(want), "0x%08x", (unsigned) m);
                for (size_t k = 0; k < _PMU_TOPDOWN_METRIC_MAX; k++)
                        if (t->last.present[k]) {
                                present++;
                                in_range = in_range && t->last.value[k] >= 0 && t->last.value[k] <= 1;
                        }
                printf("# cpu%u midr %s: top-down %s (%s) note: %s\n", cs->cpu, midr,
                       pmu_topdown_method_to_string(t->method), t->core, t->note);
                check(cs->events[PMU_EVENT_CYCLES].counted && cs->events[PMU_EVENT_CYCLES].delta > 0,
                      "cpu%u: cpu_cycles, which the emulated PMU offers, counted (%llu)", cs->cpu,
                      (unsigned long long) cs->events[PMU_EVENT_CYCLES].delta);
                check(in_range, "cpu%u: %zu top-down fraction(s), all in [0, 1]", cs->cpu, present);
                if (t->method == PMU_TOPDOWN_NONE)
                        check(present == 0 && t->note[0] && want[0] && strstr(t->note, want),
                              "cpu%u: top-down unavailable, the reason names MIDR %s: %s", cs->cpu, want, t->note);
        }
        pmu_snapshot_free(s);
        pmu_collector_free(c);
}

/*
 * Under qemu -cpu neoverse-n1 (MIDR 0x414fd0c1; its PMU lists cpu_cycles,
 * stall_frontend and stall_backend, which qemu keeps at zero): the N1 plan's
 * group (CPU_CYCLES, STALL_FRONTEND, STALL_BACKEND) opens on a real kernel and
 * is read; level 1 is said to be partial and not invented. What it expects
 * comes from sysfs, read here: the MIDR and the PMU's events/.
 */
static void test_topdown_n1(void) {
        struct pmu_collector *c = NULL;
        struct pmu_snapshot *s = read_around_loop("collector under -cpu neoverse-n1", &c);

        if (!s)
                return;
        check(s->n_cpus > 0, "%zu CPU(s) in the snapshot", s->n_cpus);
        for (size_t i = 0; i < s->n_cpus; i++) {
                const struct pmu_cpu_snapshot *cs = &s->cpus[i];
                const struct pmu_cpu_topdown *t = &cs->topdown;
                char path[256], midr[32] = "";
                uint64_t m = 0;
                bool listed;

                snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/regs/identification/midr_el1", cs->cpu);
                (void) pmu_sysfs_read_string(path, midr, sizeof(midr));
                (void) pmu_sysfs_parse_hex(midr, &m);
                snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/events/stall_backend", cs->pmu);
                listed = access(path, F_OK) == 0;
                snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/events/stall_frontend", cs->pmu);
                listed = listed && access(path, F_OK) == 0;
                printf("# cpu%u midr %s, stall events listed: %s; top-down %s (%s) note: %s\n", cs->cpu, midr,
                       listed ? "yes" : "no", pmu_topdown_method_to_string(t->method), t->core, t->note);
                check(((m >> 4) & 0xfffU) == 0xd0cU, "cpu%u: sysfs MIDR %s is a Neoverse N1 (part 0xd0c)", cs->cpu,
                      midr);
                if (!listed) {
                        check(t->method == PMU_TOPDOWN_NONE && strstr(t->note, "events/ lacks"),
                              "cpu%u: stall events not listed, top-down said unavailable: %s", cs->cpu, t->note);
                        continue;
                }
                check(t->method == PMU_TOPDOWN_ARM_CYCLES && strstr(t->note, "level 1 is partial"),
                      "cpu%u: N1's stall-cycle group open, level 1 said partial (%s)", cs->cpu, t->note);
                check(t->last.present[PMU_TOPDOWN_FRONTEND_STALLED_CYCLES] &&
                              t->last.present[PMU_TOPDOWN_BACKEND_STALLED_CYCLES] &&
                              t->last.value[PMU_TOPDOWN_FRONTEND_STALLED_CYCLES] >= 0 &&
                              t->last.value[PMU_TOPDOWN_FRONTEND_STALLED_CYCLES] <= 1 &&
                              t->last.value[PMU_TOPDOWN_BACKEND_STALLED_CYCLES] >= 0 &&
                              t->last.value[PMU_TOPDOWN_BACKEND_STALLED_CYCLES] <= 1,
                      "cpu%u: its group was read: frontend %.4f, backend %.4f of the cycles, in [0, 1]", cs->cpu,
                      t->last.value[PMU_TOPDOWN_FRONTEND_STALLED_CYCLES],
                      t->last.value[PMU_TOPDOWN_BACKEND_STALLED_CYCLES]);
                check(!t->last.present[PMU_TOPDOWN_RETIRING] && !t->last.present[PMU_TOPDOWN_FRONTEND_BOUND],
                      "cpu%u: no slot-based fraction invented", cs->cpu);
        }
        pmu_snapshot_free(s);
        pmu_collector_free(c);
}

int main(int argc, char **argv) {
        struct pmu_sysfs *sys = NULL;

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc > 1 && streq(argv[1], "topdown-n1")) {
                test_topdown_n1();
                printf("%s: %u failure(s)\n", vm_failures ? "FAIL" : "PASS", vm_failures);
                return vm_failures ? 1 : 0;
        }
        if (!test_discovery(&sys)) {
                printf("FAIL no armv8_pmuv3 core PMU; nothing else to test\n");
                return 1;
        }
        pmu_sysfs_free(sys);
        test_instructions();
        test_multiplexing();
        test_oversized();
        test_hotplug();
        test_topdown();
        printf("%s: %u failure(s)\n", vm_failures ? "FAIL" : "PASS", vm_failures);
        return vm_failures ? 1 : 0;
}
