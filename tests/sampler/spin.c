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
 *
 * With SPIN_FAKE_FP (spin-fakefp, built without frame pointers), inner_spin
 * burns its time with the frame-pointer register (rbp, x29) pointing at a
 * chain of SPIN_FAKE_FRAMES frame records whose return addresses are all in
 * decoy(): what a register that holds no frame pointer can look like to the
 * kernel's frame-pointer walk (arch/x86/events/core.c perf_callchain_user(),
 * arch/arm64/kernel/stacktrace.c), which follows it. CFI still unwinds
 * inner_spin <- outer_work <- main; a profile that shows decoy took the
 * frame-pointer chain over a whole CFI walk.
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

#ifdef SPIN_FAKE_FP
#define SPIN_FAKE_FRAMES 16

/* A frame record as both ABIs lay it out: the caller's frame pointer, then the return address. */
struct fake_frame {
        const struct fake_frame *next;
        const void *ret;
};

static struct fake_frame fake_frames[SPIN_FAKE_FRAMES];

void decoy(void);

__attribute__((noinline)) void decoy(void) {
        sink++;
}

static void fake_frames_init(void) {
        for (size_t i = 0; i < SPIN_FAKE_FRAMES; i++)
                fake_frames[i] = (struct fake_frame) {
                        .next = i + 1 < SPIN_FAKE_FRAMES ? &fake_frames[i + 1] : NULL,
                        /* After a call in decoy, as a return address is. */
                        .ret = (const char *) decoy + 1,
                };
}
#endif

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

#if defined(SPIN_FAKE_FP) && (defined(__x86_64__) || defined(__aarch64__))
        unsigned long v = x;

        /*
         * The loop in one asm statement, so no code of the compiler's runs
         * while the register points at the records. rbp is a clobber, so the
         * function saves and restores it (and its CFI says where).
         */
#if defined(__x86_64__)
        __asm__ volatile("mov %[fake], %%rbp\n"
                         "1:\n\t"
                         "imul %[mul], %[v]\n\t"
                         "add %[add], %[v]\n\t"
                         "dec %[n]\n\t"
                         "jnz 1b\n\t"
                         : [v] "+r"(v), [n] "+r"(n)
                         : [fake] "r"(fake_frames), [mul] "r"(6364136223846793005UL),
                           [add] "r"(1442695040888963407UL)
                         : "rbp", "cc");
#else
        /*
         * x29 is a clobber so that no operand is put there, but GCC 12 does
         * not save it for one under -fomit-frame-pointer: the asm does, in x9.
         */
        __asm__ volatile("mov x9, x29\n\t"
                         "mov x29, %[fake]\n"
                         "1:\n\t"
                         "madd %[v], %[v], %[mul], %[add]\n\t"
                         "subs %[n], %[n], #1\n\t"
                         "b.ne 1b\n\t"
                         "mov x29, x9\n\t"
                         : [v] "+r"(v), [n] "+r"(n)
                         : [fake] "r"(fake_frames), [mul] "r"(6364136223846793005UL),
                           [add] "r"(1442695040888963407UL)
                         : "x9", "x29", "cc");
#endif
        x = v;
#else
        for (unsigned long i = 0; i < n; i++)
                x = x * 6364136223846793005UL + 1442695040888963407UL;
#endif
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
#ifdef SPIN_FAKE_FP
        fake_frames_init();
#endif
        printf("ready %d\n", (int) getpid());
        fflush(stdout);
        return outer_work(seconds) == 0 ? 1 : 0;
}
