/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sample sink (daemon/sample-sink.c) between the cpu-clock sampler and
 * the store: hand-made samples through a real store, read back with
 * store_query_stacks() and store_query_hotpcs(), against what the test
 * writes out itself. The callchain's kernel and user parts at the
 * PERF_CONTEXT_* markers; the kernel part as one "[kernel]" frame unless
 * kernel addresses may leave the host, and then no kernel address stored
 * at all; the user part as the callchain has it when the sample carries no
 * registers (unwinding by CFI is tests/symbols/test-unwind.c's); idle
 * samples counted and dropped; names from the task map; cgroups from a fake
 * proc root and from PERF_RECORD_CGROUP ids, forgotten at a FORK of the
 * pid; weights from the period.
 */
#include <inttypes.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "macro.h"
#include "sample-sink.h"
#include "store.h"
#include "task-map.h"

#define SEC UINT64_C(1000000000)

/* The callchain's context markers, include/uapi/linux/perf_event.h (enum perf_callchain_context). */
#define CTX_HV           ((uint64_t) -32)
#define CTX_KERNEL       ((uint64_t) -128)
#define CTX_USER         ((uint64_t) -512)
#define CTX_GUEST_KERNEL ((uint64_t) -2176)
#define CTX_GUEST_USER   ((uint64_t) -2560)

/* Kernel text on x86-64 and arm64 is in the upper half; user text in the lower. */
#define K(n) (UINT64_C(0xffffffff81000000) + (n) * 0x100)
#define U(n) (UINT64_C(0x401000) + (n) * 0x10)

/* Cgroup ids no real cgroup has (kernfs ids are small inode numbers): a miss may rescan the real hierarchy. */
#define CGID(n) ((UINT64_C(0x5a5a) << 48) + (n))

/* perf's default cpu-clock period at 19 Hz: 1e9 / 19 ns. */
#define PERIOD_19HZ UINT64_C(52631578)

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct fx {
        char dir[64];
        char proc[96], cgroupfs[96];
        struct store *store;
        struct task_map *tasks;
        struct sample_sink *sink;
        uint64_t now;
        struct store_stacks_result r;
        bool have_r;
};

static void fx_open(struct fx *f, enum config_unwind unwind, bool kernel_addresses, uint32_t max_stack) {
        struct store_options o;

        *f = (struct fx) {};
        strcpy(f->dir, "/tmp/test-sample-sink-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->proc, sizeof(f->proc), "%s/proc", f->dir);
        snprintf(f->cgroupfs, sizeof(f->cgroupfs), "%s/cgroup", f->dir);
        assert_int_equal(mkdir(f->proc, 0755), 0);
        assert_int_equal(mkdir(f->cgroupfs, 0755), 0);

        store_options_init(&o);
        o.epochs = 8;
        o.hotpcs = 64;
        o.hotlines = 16;
        o.stacks = 256;
        o.stack_frames = 4096;
        o.stack_contexts = 64;
        o.stack_strings = 4096;
        assert_int_equal(store_new(&o, 0, &f->store), 0);
        assert_int_equal(task_map_new(&f->tasks), 0);
        assert_int_equal(sample_sink_new(&(struct sample_sink_options) {
                                                 .unwind = unwind,
                                                 .kernel_addresses = kernel_addresses,
                                                 .max_stack = max_stack,
                                                 .procfs_root = f->proc,
                                                 .cgroupfs_root = f->cgroupfs,
                                         },
                                         f->store, f->tasks, &f->sink),
                         0);
}

static void rm_tree(const char *dir) {
        char cmd[128];

        /* Only what fx_open made under /tmp. */
        assert_true(strncmp(dir, "/tmp/test-sample-sink-", 22) == 0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void fx_close(struct fx *f) {
        if (f->have_r)
                store_stacks_result_done(&f->r);
        f->sink = sample_sink_free(f->sink);
        f->tasks = task_map_free(f->tasks);
        f->store = store_free(f->store);
        rm_tree(f->dir);
}

/* Close an epoch and read every stack stored so far (pid STORE_PID_ANY: all), into f->r. */
static const struct store_stacks_result *fx_query(struct fx *f, uint32_t pid, const char *cgroup_prefix) {
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;

        if (f->have_r)
                store_stacks_result_done(&f->r);
        f->now += SEC;
        store_epoch_end(f->store, f->now);
        snap = store_snapshot_get(f->store);
        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, pid, cgroup_prefix, &f->r), 0);
        f->have_r = true;
        return &f->r;
}

/* The leaf of pid's samples in the hot PCs: its pc and el (1: the sample's `kernel`). Exactly one expected. */
static void fx_leaf(struct fx *f, uint32_t pid, uint64_t *ret_pc, unsigned *ret_el) {
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        struct store_hotpcs_result h;

        f->now += SEC;
        store_epoch_end(f->store, f->now);
        snap = store_snapshot_get(f->store);
        assert_int_equal(store_query_hotpcs(snap, STORE_WINDOW_ALL, 16, pid, &h), 0);
        assert_int_equal(h.pcs.n, 1);
        *ret_pc = h.pcs.item[0].pc;
        *ret_el = h.pcs.item[0].el;
        store_hotpcs_result_done(&h);
}

static void fx_sample(struct fx *f, uint32_t pid, uint32_t tid, uint64_t ip, const uint64_t *chain, size_t n,
                      uint64_t cgroup_id, uint64_t period) {
        const struct source_sample x = {
                .cpu = 1, .pid = pid, .tid = tid, .time_ns = f->now + 1, .ip = ip, .period = period,
                .cgroup_id = cgroup_id, .callchain = chain, .nr_callchain = n,
        };

        sample_sink_samples(f->sink, &x, 1);
}

static void fx_proc_cgroup(struct fx *f, uint32_t pid, const char *text) {
        char d[160], p[192];
        FILE *w;

        snprintf(d, sizeof(d), "%s/%" PRIu32, f->proc, pid);
        snprintf(p, sizeof(p), "%s/cgroup", d);
        (void) mkdir(d, 0755);
        w = fopen(p, "we");
        assert_non_null(w);
        assert_int_equal(fputs(text, w) >= 0, 1);
        assert_int_equal(fclose(w), 0);
}

static void assert_frames(const struct store_stack *st, const uint64_t *want, size_t n) {
        assert_int_equal(st->n_frames, n);
        for (size_t i = 0; i < n; i++) {
                if (st->frames[i] != want[i])
                        fail_msg("frame %zu: 0x%" PRIx64 ", want 0x%" PRIx64, i, st->frames[i], want[i]);
        }
}

static struct sample_sink_stats fx_stats(struct fx *f) {
        struct sample_sink_stats st;

        sample_sink_get_stats(f->sink, &st);
        return st;
}

/* ---- callchains ---- */

static const uint64_t kernel_user_chain[] = {
        CTX_KERNEL, K(1), K(2), K(3), CTX_USER, U(1), U(2), U(3),
};

/* Kernel then user: "[kernel]" and the user frames, whatever the unwinding (no registers to unwind from). */
static void test_kernel_user_default(void **state) {
        static const enum config_unwind modes[] = { CONFIG_UNWIND_AUTO, CONFIG_UNWIND_FP, CONFIG_UNWIND_DWARF };

        for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                const uint64_t want[] = { STORE_KERNEL_FRAME, U(1), U(2), U(3) };
                const struct store_stacks_result *r;
                struct fx f;
                uint64_t pc;
                unsigned el;

                fx_open(&f, modes[m], false, 127);
                fx_sample(&f, 100, 101, K(1), kernel_user_chain, ELEMENTSOF(kernel_user_chain), 0, 1000);
                r = fx_query(&f, STORE_PID_ANY, NULL);
                assert_int_equal(r->n, 1);
                assert_int_equal(r->stacks[0].pid, 100);
                assert_int_equal(r->stacks[0].tid, 101);
                assert_frames(&r->stacks[0], want, ELEMENTSOF(want));
                /* The leaf is in the kernel: el 1 in the hot PCs, and no kernel address there either. */
                fx_leaf(&f, 100, &pc, &el);
                assert_int_equal(pc, STORE_KERNEL_FRAME);
                assert_int_equal(el, 1);
                assert_int_equal(fx_stats(&f).samples, 1);
                assert_int_equal(fx_stats(&f).unwound, 0);
                fx_close(&f);
        }
}

/* [privacy] kernel_addresses: the kernel frames themselves, in the callchain's order, then the user ones. */
static void test_kernel_addresses(void **state) {
        const uint64_t want[] = { K(1), K(2), K(3), U(1), U(2), U(3) };
        const struct store_stacks_result *r;
        struct fx f;
        uint64_t pc;
        unsigned el;

        fx_open(&f, CONFIG_UNWIND_AUTO, true, 127);
        fx_sample(&f, 100, 100, K(1), kernel_user_chain, ELEMENTSOF(kernel_user_chain), 0, 1000);
        r = fx_query(&f, STORE_PID_ANY, NULL);
        assert_int_equal(r->n, 1);
        assert_frames(&r->stacks[0], want, ELEMENTSOF(want));
        fx_leaf(&f, 100, &pc, &el);
        assert_int_equal(pc, K(1));
        assert_int_equal(el, 1);
        fx_close(&f);
}

/* A callchain with only a user part (the sample was taken in user mode). */
static void test_user_only(void **state) {
        const uint64_t chain[] = { CTX_USER, U(7), U(8) }, want[] = { U(7), U(8) };
        const struct store_stacks_result *r;
        struct fx f;
        uint64_t pc;
        unsigned el;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        fx_sample(&f, 100, 100, U(7), chain, ELEMENTSOF(chain), 0, 1000);
        r = fx_query(&f, STORE_PID_ANY, NULL);
        assert_int_equal(r->n, 1);
        assert_frames(&r->stacks[0], want, ELEMENTSOF(want));
        fx_leaf(&f, 100, &pc, &el);
        assert_int_equal(pc, U(7));
        assert_int_equal(el, 0);
        fx_close(&f);
}

/* No callchain: the ip alone, in the kernel or not by its top bit. */
static void test_ip_alone(void **state) {
        for (int ka = 0; ka <= 1; ka++) {
                const struct store_stacks_result *r;
                struct fx f;
                uint64_t pc;
                unsigned el;

                fx_open(&f, CONFIG_UNWIND_AUTO, ka, 127);
                fx_sample(&f, 100, 100, U(5), NULL, 0, 0, 1000);
                fx_sample(&f, 200, 200, K(9), NULL, 0, 0, 1000);

                r = fx_query(&f, 100, NULL);
                assert_int_equal(r->n, 1);
                assert_frames(&r->stacks[0], (const uint64_t[]) { U(5) }, 1);
                fx_leaf(&f, 100, &pc, &el);
                assert_int_equal(pc, U(5));
                assert_int_equal(el, 0);

                r = fx_query(&f, 200, NULL);
                assert_int_equal(r->n, 1);
                assert_frames(&r->stacks[0], (const uint64_t[]) { ka ? K(9) : STORE_KERNEL_FRAME }, 1);
                fx_leaf(&f, 200, &pc, &el);
                assert_int_equal(pc, ka ? K(9) : STORE_KERNEL_FRAME);
                assert_int_equal(el, 1);
                assert_int_equal(fx_stats(&f).samples, 2);
                fx_close(&f);
        }
}

/*
 * unwind = fp: the callchain's user part exactly, even when the sample
 * carries registers and a stack copy (they are not looked at: nothing is
 * unwound).
 */
static void test_fp(void **state) {
        static const uint64_t regs[3] = { U(1), 0x7ffc0000, 0x7ffc0010 };
        static const uint8_t stack[64] = { 1, 2, 3 };
        const uint64_t user_first[] = { CTX_USER, U(4), U(5), U(6) };
        const uint64_t want_k[] = { STORE_KERNEL_FRAME, U(1), U(2), U(3) }, want_u[] = { U(4), U(5), U(6) };
        const struct store_stacks_result *r;
        struct fx f;
        uint64_t pc;
        unsigned el;

        fx_open(&f, CONFIG_UNWIND_FP, false, 127);
        sample_sink_samples(f.sink,
                            (const struct source_sample[]) {
                                    { .pid = 100, .tid = 100, .ip = K(1), .period = 1000,
                                      .callchain = kernel_user_chain, .nr_callchain = ELEMENTSOF(kernel_user_chain),
                                      .regs_abi = PERF_SAMPLE_REGS_ABI_64, .regs_mask = 7, .regs = regs, .nr_regs = 3,
                                      .stack = stack, .stack_len = sizeof(stack) },
                                    { .pid = 200, .tid = 200, .ip = U(4), .period = 1000,
                                      .callchain = user_first, .nr_callchain = ELEMENTSOF(user_first),
                                      .regs_abi = PERF_SAMPLE_REGS_ABI_64, .regs_mask = 7, .regs = regs, .nr_regs = 3,
                                      .stack = stack, .stack_len = sizeof(stack) },
                            },
                            2);
        r = fx_query(&f, 100, NULL);
        assert_int_equal(r->n, 1);
        assert_frames(&r->stacks[0], want_k, ELEMENTSOF(want_k));
        fx_leaf(&f, 100, &pc, &el);
        assert_int_equal(el, 1);
        r = fx_query(&f, 200, NULL);
        assert_int_equal(r->n, 1);
        assert_frames(&r->stacks[0], want_u, ELEMENTSOF(want_u));
        fx_leaf(&f, 200, &pc, &el);
        assert_int_equal(pc, U(4));
        assert_int_equal(el, 0);
        assert_int_equal(fx_stats(&f).unwound, 0);
        assert_int_equal(fx_stats(&f).samples, 2);
        fx_close(&f);
}

/* unwind = auto (and dwarf) with no registers (regs_abi 0: a kernel thread, or none asked): the callchain's user part. */
static void test_no_regs_falls_back(void **state) {
        static const enum config_unwind modes[] = { CONFIG_UNWIND_AUTO, CONFIG_UNWIND_DWARF };
        static const uint8_t stack[64] = { 1 };

        for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                const uint64_t chain[] = { CTX_USER, U(1), U(2), U(3), U(4) };
                const struct store_stacks_result *r;
                struct fx f;

                fx_open(&f, modes[m], false, 127);
                /* A stack copy but no registers: nothing to start a CFI walk from. */
                sample_sink_samples(f.sink,
                                    &(const struct source_sample) {
                                            .pid = 100, .tid = 100, .ip = U(1), .period = 1000,
                                            .callchain = chain, .nr_callchain = ELEMENTSOF(chain),
                                            .regs_abi = 0, .stack = stack, .stack_len = sizeof(stack),
                                    },
                                    1);
                r = fx_query(&f, STORE_PID_ANY, NULL);
                assert_int_equal(r->n, 1);
                assert_frames(&r->stacks[0], chain + 1, ELEMENTSOF(chain) - 1);
                assert_int_equal(fx_stats(&f).unwound, 0);
                fx_close(&f);
        }
}

/*
 * Callchains of every shape the kernel writes (kernel, user, hypervisor
 * and guest parts, in any order, empty parts, parts longer than
 * max_stack, user parts holding kernel-half addresses as a walk into
 * garbage or the vsyscall page gives them), random with a fixed seed: no
 * kernel address is ever stored by default, and each stack is what the
 * test cuts out of its chain itself (at most max_stack kernel frames, then
 * at most max_stack user ones, in order; "[kernel]" for a non-empty kernel
 * part; a kernel-half user leaf as a kernel frame, the user part ending
 * before a kernel-half caller).
 */
static uint64_t rnd(uint64_t *s) {
        uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        return z ^ (z >> 31);
}

static void test_random_chains(void **state) {
        static const uint64_t markers[] = { CTX_KERNEL, CTX_USER, CTX_HV, CTX_GUEST_KERNEL, CTX_GUEST_USER };
        enum { MAX_STACK = 6, SAMPLES = 200, MAXC = 24 };

        for (int ka = 0; ka <= 1; ka++) {
                uint64_t seed = 14 + (uint64_t) ka;
                struct fx f;
                size_t found = 0, cut = 0;

                fx_open(&f, CONFIG_UNWIND_AUTO, ka, MAX_STACK);
                for (uint32_t i = 0; i < SAMPLES; i++) {
                        uint64_t chain[MAXC], want[2 * MAX_STACK];
                        size_t n = 0, nk = 0, nu = 0, nw = 0;
                        uint64_t ctx = 0, kpart[MAXC], upart[MAXC];
                        const struct store_stacks_result *r;

                        while (n < MAXC) {
                                uint64_t v = rnd(&seed) % 8;

                                if (v == 0 && n > 0 && rnd(&seed) % 2)
                                        break;
                                if (v < 2 || n == 0) {
                                        ctx = markers[rnd(&seed) % ELEMENTSOF(markers)];
                                        chain[n++] = ctx;
                                        continue;
                                }
                                /* Addresses by the part they are in, but one user frame in eight in the
                                 * kernel's half. */
                                if (ctx == CTX_KERNEL)
                                        chain[n] = K(rnd(&seed) % 4096), kpart[nk++] = chain[n];
                                else if (ctx == CTX_USER)
                                        chain[n] = rnd(&seed) % 8 ? U(rnd(&seed) % 4096) : K(rnd(&seed) % 4096),
                                        upart[nu++] = chain[n];
                                else
                                        chain[n] = (ctx == CTX_GUEST_USER ? U(0) : K(0)) + 0x80000 +
                                                   rnd(&seed) % 4096 * 0x10;
                                n++;
                        }
                        if (nk > 0) {
                                if (ka)
                                        for (size_t j = 0; j < MIN(nk, (size_t) MAX_STACK); j++)
                                                want[nw++] = kpart[j];
                                else
                                        want[nw++] = STORE_KERNEL_FRAME;
                        }
                        for (size_t j = 0; j < MIN(nu, (size_t) MAX_STACK); j++) {
                                if (!(upart[j] >> 63)) {
                                        want[nw++] = upart[j];
                                        continue;
                                }
                                cut++;
                                if (j > 0)
                                        break;
                                if (ka)
                                        want[nw++] = upart[j];
                                else if (nw == 0 || want[nw - 1] != STORE_KERNEL_FRAME)
                                        want[nw++] = STORE_KERNEL_FRAME;
                        }

                        /* One pid per sample, so each sample is its own stack. */
                        fx_sample(&f, 1000 + i, 1000 + i, U(0), chain, n, 0, 1);
                        r = fx_query(&f, 1000 + i, NULL);
                        /* No kernel or user frame (a guest's or the hypervisor's only): one [kernel] (test_markers_only). */
                        if (nw == 0)
                                want[nw++] = STORE_KERNEL_FRAME;
                        else
                                found++;
                        assert_int_equal(r->n, 1);
                        assert_frames(&r->stacks[0], want, nw);
                        /* And, independently of the model: no kernel address but as the "[kernel]" leaf. */
                        for (size_t j = 0; !ka && j < r->stacks[0].n_frames; j++) {
                                uint64_t v = r->stacks[0].frames[j];

                                if (v == STORE_KERNEL_FRAME)
                                        assert_int_equal(j, 0);
                                else if (v >> 63)
                                        fail_msg("sample %" PRIu32 " frame %zu: kernel address 0x%" PRIx64 " stored",
                                                 i, j, v);
                        }
                }
                assert_true(found > SAMPLES / 2);
                assert_true(cut > 10);
                assert_int_equal(fx_stats(&f).samples, SAMPLES);
                assert_int_equal(fx_stats(&f).user_kernel_half, cut);
                fx_close(&f);
        }
}

/* ---- idle, names, weights ---- */

/* pid 0 (each CPU's idle task): counted, not stored. */
static void test_idle(void **state) {
        const struct store_stacks_result *r;
        struct sample_sink_stats st;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        for (unsigned i = 0; i < 5; i++)
                fx_sample(&f, 0, 0, K(1), kernel_user_chain, 4, 0, 1000);
        fx_sample(&f, 100, 100, K(1), kernel_user_chain, ELEMENTSOF(kernel_user_chain), 0, 1000);
        for (unsigned i = 0; i < 2; i++)
                fx_sample(&f, 0, 0, K(2), NULL, 0, 0, 1000);
        r = fx_query(&f, STORE_PID_ANY, NULL);
        assert_int_equal(r->n, 1);
        assert_int_equal(r->stacks[0].pid, 100);
        /* The store never saw them: its sample total is the one stored. */
        assert_int_equal(r->samples, 1);
        assert_int_equal(r->weight, 1000);
        st = fx_stats(&f);
        assert_int_equal(st.idle, 7);
        assert_int_equal(st.samples, 1);
        fx_close(&f);
}

/* Process and thread names from the task map; "" when it has none; the thread's when only it is known. */
static void test_names(void **state) {
        const uint64_t chain[] = { CTX_USER, U(1) };
        const struct store_stacks_result *r;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        task_map_comm(f.tasks, 200, 200, "nginx");
        task_map_comm(f.tasks, 200, 201, "nginx-worker-1");     /* cut to 15 bytes by the map */
        task_map_comm(f.tasks, 400, 401, "jit-thread");

        fx_sample(&f, 200, 201, U(1), chain, 2, 0, 1);
        r = fx_query(&f, 200, NULL);
        assert_int_equal(r->n, 1);
        assert_string_equal(r->stacks[0].comm, "nginx");
        assert_string_equal(r->stacks[0].thread, "nginx-worker-1");

        fx_sample(&f, 200, 200, U(1), chain, 2, 0, 1);
        r = fx_query(&f, 200, NULL);
        assert_int_equal(r->n, 2);
        for (size_t i = 0; i < r->n; i++) {
                assert_string_equal(r->stacks[i].comm, "nginx");
                assert_string_equal(r->stacks[i].thread, r->stacks[i].tid == 200 ? "nginx" : "nginx-worker-1");
        }

        /* Nothing in the map of pid 300: stored with no names, not dropped. */
        fx_sample(&f, 300, 302, U(1), chain, 2, 0, 1);
        r = fx_query(&f, 300, NULL);
        assert_int_equal(r->n, 1);
        assert_string_equal(r->stacks[0].comm, "");
        assert_string_equal(r->stacks[0].thread, "");

        /* Only the thread known (its process's main thread evicted or never seen): the thread's name for both. */
        fx_sample(&f, 400, 401, U(1), chain, 2, 0, 1);
        r = fx_query(&f, 400, NULL);
        assert_int_equal(r->n, 1);
        assert_string_equal(r->stacks[0].comm, "jit-thread");
        assert_string_equal(r->stacks[0].thread, "jit-thread");

        /* A rename after the sample does not rename what was stored. */
        task_map_comm(f.tasks, 200, 200, "renamed");
        r = fx_query(&f, 200, NULL);
        for (size_t i = 0; i < r->n; i++)
                assert_string_equal(r->stacks[i].comm, "nginx");
        fx_close(&f);
}

/* Weights are the periods summed; counts the samples; stats.samples the samples stored. */
static void test_weights(void **state) {
        const uint64_t a[] = { CTX_USER, U(1), U(2) }, b[] = { CTX_USER, U(3) };
        const uint64_t periods[] = { 1000, 2500, PERIOD_19HZ, 7 };
        const struct store_stacks_result *r;
        uint64_t sum = 0;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        for (size_t i = 0; i < ELEMENTSOF(periods); i++) {
                fx_sample(&f, 100, 100, U(1), a, ELEMENTSOF(a), 0, periods[i]);
                sum += periods[i];
        }
        fx_sample(&f, 100, 100, U(3), b, ELEMENTSOF(b), 0, 11);
        r = fx_query(&f, STORE_PID_ANY, NULL);
        assert_int_equal(r->n, 2);
        /* Heaviest first. */
        assert_int_equal(r->stacks[0].count, 4);
        assert_int_equal(r->stacks[0].weight, 1000 + 2500 + 52631578 + 7);
        assert_int_equal(r->stacks[0].weight, sum);
        assert_frames(&r->stacks[0], a + 1, 2);
        assert_int_equal(r->stacks[1].count, 1);
        assert_int_equal(r->stacks[1].weight, 11);
        assert_int_equal(r->samples, 5);
        assert_int_equal(r->weight, sum + 11);
        assert_int_equal(fx_stats(&f).samples, 5);
        fx_close(&f);
}

/* ---- cgroups ---- */

static const uint64_t user_chain[] = { CTX_USER, U(1), U(2) };

static void assert_cgroup(struct fx *f, uint32_t pid, const char *path, const char *service) {
        char p[256], s[256];

        if (!path) {
                assert_false(sample_sink_cgroup(f->sink, pid, p, sizeof(p), s, sizeof(s)));
                return;
        }
        assert_true(sample_sink_cgroup(f->sink, pid, p, sizeof(p), s, sizeof(s)));
        assert_string_equal(p, path);
        assert_string_equal(s, service);
}

/* From <procfs_root>/PID/cgroup: the path and its unit, in the stack and for the exporters; the filter by prefix. */
static void test_cgroup_proc(void **state) {
        const struct store_stacks_result *r;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        fx_proc_cgroup(&f, 500, "0::/system.slice/nginx.service\n");
        fx_proc_cgroup(&f, 510, "0::/user.slice/user-1000.slice/session-3.scope\n");
        fx_sample(&f, 500, 500, U(1), user_chain, 3, 0, 1);
        fx_sample(&f, 510, 510, U(1), user_chain, 3, 0, 1);

        r = fx_query(&f, 500, NULL);
        assert_int_equal(r->n, 1);
        assert_string_equal(r->stacks[0].cgroup, "/system.slice/nginx.service");
        assert_string_equal(r->stacks[0].service, "nginx.service");
        assert_cgroup(&f, 500, "/system.slice/nginx.service", "nginx.service");
        assert_cgroup(&f, 510, "/user.slice/user-1000.slice/session-3.scope", "session-3.scope");

        /* ?cgroup= keeps the unit's process and drops the other. */
        r = fx_query(&f, STORE_PID_ANY, "/system.slice/nginx");
        assert_int_equal(r->n, 1);
        assert_int_equal(r->stacks[0].pid, 500);
        r = fx_query(&f, STORE_PID_ANY, "/user.slice");
        assert_int_equal(r->n, 1);
        assert_int_equal(r->stacks[0].pid, 510);
        r = fx_query(&f, STORE_PID_ANY, "/system.slice/cron.service");
        assert_int_equal(r->n, 0);
        assert_int_equal(fx_stats(&f).no_cgroup, 0);

        /*
         * Named once per process: a thread's FORK changes nothing, the file
         * is not read again. A FORK of the pid (pid == tid) is a new process
         * under it, whose cgroup is read anew (PID reuse).
         */
        fx_proc_cgroup(&f, 500, "0::/system.slice/postgresql.service\n");
        sample_sink_task(f.sink, &(struct source_task) { .kind = SOURCE_TASK_FORK, .pid = 500, .tid = 503,
                                                         .ppid = 500, .ptid = 500 });
        fx_sample(&f, 500, 503, U(1), user_chain, 3, 0, 1);
        r = fx_query(&f, STORE_PID_ANY, "/system.slice/postgresql.service");
        assert_int_equal(r->n, 0);
        assert_cgroup(&f, 500, "/system.slice/nginx.service", "nginx.service");

        sample_sink_task(f.sink, &(struct source_task) { .kind = SOURCE_TASK_FORK, .pid = 500, .tid = 500,
                                                         .ppid = 1, .ptid = 1 });
        /* Before it is sampled, the exporters read /proc. */
        assert_cgroup(&f, 500, "/system.slice/postgresql.service", "postgresql.service");
        fx_sample(&f, 500, 500, U(1), user_chain, 3, 0, 1);
        r = fx_query(&f, STORE_PID_ANY, "/system.slice/postgresql.service");
        assert_int_equal(r->n, 1);
        assert_int_equal(r->stacks[0].pid, 500);
        assert_string_equal(r->stacks[0].service, "postgresql.service");
        /* The old process's stacks keep the cgroup they were taken in. */
        r = fx_query(&f, 500, "/system.slice/nginx.service");
        assert_int_equal(r->n, 2);
        assert_cgroup(&f, 500, "/system.slice/postgresql.service", "postgresql.service");
        /* The file gone now: the process's table entry still answers. */
        fx_proc_cgroup(&f, 500, "");
        assert_cgroup(&f, 500, "/system.slice/postgresql.service", "postgresql.service");
        fx_close(&f);
}

/* PERF_RECORD_CGROUP's id -> path, without /proc (and over what /proc says). */
static void test_cgroup_event(void **state) {
        const char *docker = "/system.slice/docker-" HEX64 ".scope";
        const struct store_stacks_result *r;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        sample_sink_task(f.sink, &(struct source_task) { .kind = SOURCE_TASK_CGROUP, .cgroup_id = CGID(1),
                                                         .cgroup_path = docker });
        sample_sink_task(f.sink, &(struct source_task) { .kind = SOURCE_TASK_CGROUP, .cgroup_id = CGID(2),
                                                         .cgroup_path = "/system.slice/cron.service" });
        /* pid 600 has no /proc entry; 601's says otherwise than its sample's id. */
        fx_proc_cgroup(&f, 601, "0::/wrong.slice\n");
        fx_sample(&f, 600, 600, U(1), user_chain, 3, CGID(1), 1);
        fx_sample(&f, 601, 601, U(1), user_chain, 3, CGID(2), 1);

        r = fx_query(&f, 600, NULL);
        assert_int_equal(r->n, 1);
        assert_string_equal(r->stacks[0].cgroup, docker);
        assert_string_equal(r->stacks[0].service, HEX64);
        assert_cgroup(&f, 600, docker, HEX64);
        r = fx_query(&f, 601, NULL);
        assert_int_equal(r->n, 1);
        assert_string_equal(r->stacks[0].cgroup, "/system.slice/cron.service");
        assert_string_equal(r->stacks[0].service, "cron.service");
        assert_int_equal(fx_stats(&f).no_cgroup, 0);

        /* The process moved: a sample with another id names it anew. */
        fx_sample(&f, 600, 600, U(1), user_chain, 3, CGID(2), 1);
        r = fx_query(&f, 600, "/system.slice/cron.service");
        assert_int_equal(r->n, 1);
        assert_cgroup(&f, 600, "/system.slice/cron.service", "cron.service");
        fx_close(&f);
}

/* Not sampled: sample_sink_cgroup() reads /proc; false when nothing says (gone, pid 0); unnamed samples counted. */
static void test_cgroup_unsampled(void **state) {
        const struct store_stacks_result *r;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        fx_proc_cgroup(&f, 700, "12:pids:/old-v1\n0::/system.slice/ssh.service (deleted)\n");
        fx_proc_cgroup(&f, 0, "0::/\n");
        assert_cgroup(&f, 700, "/system.slice/ssh.service", "ssh.service");
        assert_cgroup(&f, 701, NULL, NULL);
        assert_cgroup(&f, 0, NULL, NULL);

        /* A sample of a process gone from /proc, with no cgroup id: stored without a cgroup, counted. */
        fx_sample(&f, 701, 701, U(1), user_chain, 3, 0, 1);
        r = fx_query(&f, 701, NULL);
        assert_int_equal(r->n, 1);
        assert_string_equal(r->stacks[0].cgroup, "");
        assert_string_equal(r->stacks[0].service, "");
        assert_int_equal(fx_stats(&f).no_cgroup, 1);
        assert_int_equal(fx_stats(&f).samples, 1);
        fx_close(&f);
}

/*
 * A callchain with its markers but no frame: what the kernel writes for a
 * sample taken while a KVM vCPU thread ran its guest (x86's
 * perf_callchain_kernel() and perf_callchain_user() return at once under
 * perf_guest_state(), arch/x86/events/core.c, after get_perf_callchain()
 * stored the PERF_CONTEXT_KERNEL and PERF_CONTEXT_USER markers,
 * kernel/events/callchain.c). The CPU time was the process's: it must reach
 * the profile's totals (store_add_stack() counts a sample without frames),
 * the ip as its leaf as when there is no callchain.
 */
static void test_markers_only(void **state) {
        const uint64_t chain[] = { CTX_KERNEL, CTX_USER };
        const struct store_stacks_result *r;
        struct sample_sink_stats st;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        fx_sample(&f, 900, 901, U(9), chain, ELEMENTSOF(chain), 0, PERIOD_19HZ);
        r = fx_query(&f, STORE_PID_ANY, NULL);
        st = fx_stats(&f);
        /* Every sample handed on is stored or counted as idle. */
        assert_int_equal(st.samples + st.idle, 1);
        assert_int_equal(r->samples, 1);
        assert_int_equal(r->weight, PERIOD_19HZ);
        /* The ip is the guest's: never stored as this process's (or the host kernel's) code. */
        assert_int_equal(r->n, 1);
        assert_int_equal(r->stacks[0].n_frames, 1);
        assert_true(r->stacks[0].frames[0] == STORE_KERNEL_FRAME);
        assert_int_equal(st.ip_only, 1);
        fx_close(&f);
}

/*
 * A sample whose cgroup id nobody announced yet, of a process gone from
 * /proc: no cgroup then. Once PERF_RECORD_CGROUP names the id, the next
 * sample with it is named: the table must not keep "unknown" for good.
 */
static void test_cgroup_id_late(void **state) {
        const struct store_stacks_result *r;
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 127);
        fx_sample(&f, 800, 800, U(1), user_chain, 3, CGID(8), 1);
        assert_cgroup(&f, 800, NULL, NULL);
        sample_sink_task(f.sink, &(struct source_task) { .kind = SOURCE_TASK_CGROUP, .cgroup_id = CGID(8),
                                                         .cgroup_path = "/system.slice/late.service" });
        fx_sample(&f, 800, 800, U(1), user_chain, 3, CGID(8), 1);
        r = fx_query(&f, 800, "/system.slice/late.service");
        assert_int_equal(r->n, 1);
        assert_cgroup(&f, 800, "/system.slice/late.service", "late.service");
        fx_close(&f);
}

/*
 * A process's unwinding state goes when the source says it is gone
 * (SOURCE_TASK_GONE: no sample of it is left), not at its EXIT (other
 * CPUs' rings may still hold its samples then), and a FORK of its pid
 * keeps what is under it. unwind_processes is the unwinder's own count of
 * the processes it holds.
 */
static void fx_exec_mapping(struct fx *f, uint32_t pid) {
        sample_sink_mapping(f->sink, &(struct source_mapping) {
                .pid = pid, .start = 0x400000, .len = 0x10000, .pgoff = 0, .filename = "/usr/bin/true",
        });
}

static void fx_task(struct fx *f, enum source_task_kind kind, uint32_t pid, uint64_t time_ns) {
        sample_sink_task(f->sink, &(struct source_task) { .kind = kind, .pid = pid, .tid = pid, .ppid = 1,
                                                          .ptid = 1, .time_ns = time_ns });
}

static void test_gone_forgotten(void **state) {
        struct fx f;

        fx_open(&f, CONFIG_UNWIND_AUTO, false, 64);
        fx_exec_mapping(&f, 700);
        fx_exec_mapping(&f, 701);
        fx_exec_mapping(&f, 702);
        f.now = 5 * SEC;
        fx_sample(&f, 900, 900, U(1), NULL, 0, 0, PERIOD_19HZ);
        assert_int_equal(fx_stats(&f).unwind_processes, 3);

        /* Their EXITs, and a FORK of 702's pid: everything kept, whatever time passes. */
        fx_task(&f, SOURCE_TASK_EXIT, 700, f.now);
        fx_task(&f, SOURCE_TASK_EXIT, 701, f.now);
        fx_task(&f, SOURCE_TASK_EXIT, 702, f.now);
        fx_task(&f, SOURCE_TASK_FORK, 702, f.now + 1000);
        f.now += 60 * SEC;
        fx_sample(&f, 900, 900, U(1), NULL, 0, 0, PERIOD_19HZ);
        assert_int_equal(fx_stats(&f).unwind_processes, 3);

        /* 700 and 701 gone: their state goes at once, 702's stays. */
        fx_task(&f, SOURCE_TASK_GONE, 700, 0);
        assert_int_equal(fx_stats(&f).unwind_processes, 2);
        fx_task(&f, SOURCE_TASK_GONE, 701, 0);
        assert_int_equal(fx_stats(&f).unwind_processes, 1);
        fx_close(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel_user_default),
                cmocka_unit_test(test_kernel_addresses),
                cmocka_unit_test(test_user_only),
                cmocka_unit_test(test_ip_alone),
                cmocka_unit_test(test_fp),
                cmocka_unit_test(test_no_regs_falls_back),
                cmocka_unit_test(test_random_chains),
                cmocka_unit_test(test_idle),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_weights),
                cmocka_unit_test(test_cgroup_proc),
                cmocka_unit_test(test_cgroup_event),
                cmocka_unit_test(test_cgroup_unsampled),
                cmocka_unit_test(test_markers_only),
                cmocka_unit_test(test_cgroup_id_late),
                cmocka_unit_test(test_gone_forgotten),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
