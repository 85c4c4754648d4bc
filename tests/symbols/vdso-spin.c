/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main -> vdso_outer -> vdso_spin -> clock_gettime(CLOCK_MONOTONIC), which
 * runs in the vDSO (vdso(7)): for the unwinder's test of samples whose pc
 * is there. Built without frame pointers, as tests/sampler's spin-nofp.
 *
 *   vdso-spin SECONDS [CPU]   as spin: "ready PID", then SECONDS of CPU time.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

unsigned long vdso_spin(unsigned long n);
unsigned long vdso_outer(double seconds);

static volatile unsigned long sink;

static double cpu_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long vdso_spin(unsigned long n) {
        unsigned long x = 0;

        for (unsigned long i = 0; i < n; i++) {
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                x += (unsigned long) ts.tv_nsec;
        }
        sink = x;
        return x;
}

__attribute__((noinline)) unsigned long vdso_outer(double seconds) {
        unsigned long acc = 0;
        double end = cpu_seconds() + seconds;

        while (cpu_seconds() < end)
                acc += vdso_spin(100000);
        sink += acc;
        return acc ^ 1;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: %s SECONDS [CPU]\n", argv[0]);
                return 2;
        }
        if (argc > 2) {
                cpu_set_t set;

                CPU_ZERO(&set);
                CPU_SET(atoi(argv[2]), &set);
                if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                        perror("sched_setaffinity");
                        return 1;
                }
        }
        printf("ready %d\n", (int) getpid());
        fflush(stdout);
        return vdso_outer(atof(argv[1])) == 0 ? 1 : 0;
}
