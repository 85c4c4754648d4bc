/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Benchmark of the CFI unwinder (not a test: figures only, no assertions on
 * time). Captures real samples of spin (tests/sampler) without and with
 * frame pointers, as the sampler gets them (cpu-clock, REGS_USER,
 * STACK_USER 8 KiB, CALLCHAIN), then times on one core, best of PASSES:
 *   - baseline: a frame-pointer walk of the same samples' stack copies
 *     (rbp/x29 chain, what an FP unwinder in the daemon would do; the kernel's
 *     own chain costs the daemon only a copy),
 *   - unwind_user() over the same samples, steady state (modules reported),
 *   - the first sample of a process (its files opened and reported).
 * Prints samples/s, frames per sample, the ratio to the baseline, and the
 * CPU share the CFI path would take at 19 Hz on every CPU of this machine.
 *
 * Needs root (perf_event_open(2) on another process): exits 77 without.
 *
 * Usage: bench-unwind SPIN-NOFP SPIN-FP [SAMPLES] (default 500)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "unwind-capture.h"
#include "unwind.h"

#define PASSES          5
#define SAMPLES_DEFAULT 500U
#define SAMPLES_MAX     5000U
/* The sampler's default frequency per CPU (issue 14, [sampler] frequency). */
#define SAMPLER_HZ      19.0

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

#ifdef CAPTURE_PERF_PC
/* From the sample's own mask: the baseline does no more work than it must. */
static uint64_t reg(const struct capture_sample *cs, unsigned r) {
        return cs->regs[__builtin_popcountll(cs->regs_mask & ((UINT64_C(1) << r) - 1))];
}

/* The frame-pointer walk the kernel does (arch/x86/events/core.c perf_callchain_user()), over the copy. */
static size_t fp_walk(const struct capture_sample *cs, uint64_t *ret, size_t max) {
        uint64_t sp = reg(cs, CAPTURE_PERF_SP), fp = reg(cs, CAPTURE_PERF_FP);
        size_t n = 0;

        ret[n++] = reg(cs, CAPTURE_PERF_PC);
        while (n < max && fp >= sp && fp - sp + 16 <= cs->stack_len) {
                uint64_t next, ra;

                memcpy(&next, cs->stack + (fp - sp), 8);
                memcpy(&ra, cs->stack + (fp - sp) + 8, 8);
                if (ra == 0)
                        break;
                ret[n++] = ra;
                if (next <= fp)
                        break;
                fp = next;
        }
        return n;
}
#endif

static void feed(const struct capture *c, struct unwind *u) {
        for (size_t i = 0; i < c->n_maps; i++)
                if (c->maps[i].exec)
                        (void) unwind_add_mapping(u, (uint32_t) c->pid, c->maps[i].start, c->maps[i].len,
                                                  c->maps[i].pgoff, c->maps[i].filename, NULL, 0);
}

static void bench(const char *program, size_t want) {
#ifdef CAPTURE_PERF_PC
        struct capture c;
        char err[MESSAGE_MAX] = "";
        uint64_t frames[UNWIND_MAX_FRAMES], sum = 0;
        double best_fp = 1e30, best_cfi = 1e30, cold, t;
        size_t fp_frames = 0, cfi_frames = 0;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        struct unwind *u;
        int r;

        r = capture_run(program, ncpu > 1 ? (unsigned) ncpu - 1 : 0, unwind_regs_mask(), want, false, &c, err,
                        sizeof(err));
        if (r < 0) {
                printf("SKIP: %s\n", err);
                exit(77);
        }

        for (int pass = 0; pass < PASSES; pass++) {
                fp_frames = 0;
                t = now();
                for (size_t i = 0; i < c.n_samples; i++) {
                        size_t n = fp_walk(&c.samples[i], frames, ELEMENTSOF(frames));

                        fp_frames += n;
                        sum += frames[n - 1];
                }
                best_fp = MIN(best_fp, now() - t);
        }

        u = unwind_new(NULL);
        feed(&c, u);
        {
                struct unwind_input in = capture_input(&c.samples[0]);

                t = now();
                (void) unwind_user(u, &in, frames, ELEMENTSOF(frames));
                cold = now() - t;
        }
        for (int pass = 0; pass < PASSES; pass++) {
                cfi_frames = 0;
                t = now();
                for (size_t i = 0; i < c.n_samples; i++) {
                        struct unwind_input in = capture_input(&c.samples[i]);

                        r = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                        if (r > 0) {
                                cfi_frames += (size_t) r;
                                sum += frames[r - 1];
                        }
                }
                best_cfi = MIN(best_cfi, now() - t);
        }
        unwind_free(u);

        printf("%s: %zu samples, best of %d passes\n", program, c.n_samples, PASSES);
        printf("  baseline FP walk of the copy %10.0f samples/s  %5.2f frames/sample\n",
               (double) c.n_samples / best_fp, (double) fp_frames / (double) c.n_samples);
        printf("  unwind_user() (CFI)          %10.0f samples/s  %5.2f frames/sample  %6.1fx baseline time"
               "  %6.2f us/sample\n",
               (double) c.n_samples / best_cfi, (double) cfi_frames / (double) c.n_samples,
               best_cfi / best_fp, best_cfi / (double) c.n_samples * 1e6);
        printf("  first sample of the process  %10.2f ms (files opened and reported)\n", cold * 1e3);
        printf("  at %.0f Hz on %ld CPUs: %.4f%% of one CPU for CFI unwinding\n",
               SAMPLER_HZ, ncpu, SAMPLER_HZ * (double) ncpu * best_cfi / (double) c.n_samples * 100.0);
        if (sum == 42)
                printf(" \n");  /* keeps the walks from being optimized away */
        capture_done(&c);
#else
        printf("SKIP: no unwinding on this architecture\n");
        exit(77);
#endif
}

int main(int argc, char **argv) {
        unsigned long want = SAMPLES_DEFAULT;

        if (argc < 3 || argc > 4) {
                fprintf(stderr, "usage: %s SPIN-NOFP SPIN-FP [SAMPLES]\n", argv[0]);
                return 2;
        }
        if (argc == 4) {
                want = strtoul(argv[3], NULL, 10);
                if (want == 0 || want > SAMPLES_MAX) {
                        fprintf(stderr, "SAMPLES must be 1..%u\n", SAMPLES_MAX);
                        return 2;
                }
        }
        if (geteuid() != 0) {
                printf("SKIP: not root: perf_event_open on another process needs it\n");
                return 77;
        }
        bench(argv[1], want);
        bench(argv[2], want);
        return 0;
}
