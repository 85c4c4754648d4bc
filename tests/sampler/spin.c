/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A program with a call chain a profiler must find whole:
 * main -> outer_work -> inner_spin, burning CPU in inner_spin.
 *
 * Built twice (tests/sampler/meson.build): with frame pointers, and with
 * -O2 -fomit-frame-pointer, where only .eh_frame describes the frames (what
 * Debian 12's own packages look like). The functions are noinline and do
 * work after their call, so neither build turns a call into a jump.
 *
 *   spin SECONDS [CPU]   burn SECONDS of CPU time (pinned to CPU when given),
 *                        printing "ready PID" once the burn has started.
 *
 * It exits 0 once it has used SECONDS of its own CPU time (CLOCK_PROCESS_CPUTIME_ID),
 * so a test knows how much CPU it burned from /proc/PID/stat, not from this.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Global, so that .dynsym-less, stripped or not, the names are in .symtab as FUNC symbols. */
unsigned long inner_spin(unsigned long n);
unsigned long outer_work(double seconds);

static volatile unsigned long sink;

static double cpu_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long inner_spin(unsigned long n) {
        /*
         * On the stack: GCC 12 gives a leaf function that needs no stack
         * no frame even with -fno-omit-frame-pointer
         * -mno-omit-leaf-frame-pointer, and a frame-pointer walk from it
         * would skip outer_work. With a stack slot spin-fp links a frame
         * here as a frame-pointer distribution's builds do in functions
         * that use their stack.
         */
        volatile unsigned long x = n;

        for (unsigned long i = 0; i < n; i++)
                x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
        return x;
}

__attribute__((noinline)) unsigned long outer_work(double seconds) {
        unsigned long acc = 0;
        double end = cpu_seconds() + seconds;

        while (cpu_seconds() < end)
                acc += inner_spin(4000000);
        sink += acc;
        return acc ^ 1;
}

int main(int argc, char **argv) {
        double seconds;

        if (argc < 2) {
                fprintf(stderr, "usage: %s SECONDS [CPU]\n", argv[0]);
                return 2;
        }
        seconds = atof(argv[1]);
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
        return outer_work(seconds) == 0 ? 1 : 0;
}
