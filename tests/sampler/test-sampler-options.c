/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/sampler/sampler-source.c without the kernel: event names
 * against <linux/perf_event.h>'s numbers, the options a source refuses, the
 * default register mask against the kernel's register numbers
 * (<asm/perf_regs.h>), and a source that is never started.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#if defined(__x86_64__) || defined(__aarch64__)
#include <asm/perf_regs.h>
#endif

#include "sampler-source.h"
#include "task-map.h"

static void test_event_names(void **state) {
        uint32_t type = 99;
        uint64_t config = 99;

        assert_int_equal(sampler_event_parse("cpu-clock", &type, &config), 0);
        assert_int_equal(type, PERF_TYPE_SOFTWARE);
        assert_int_equal(config, PERF_COUNT_SW_CPU_CLOCK);
        assert_int_equal(sampler_event_parse("task-clock", &type, &config), 0);
        assert_int_equal(config, PERF_COUNT_SW_TASK_CLOCK);
        assert_int_equal(sampler_event_parse("cycles", &type, &config), 0);
        assert_int_equal(type, PERF_TYPE_HARDWARE);
        assert_int_equal(config, PERF_COUNT_HW_CPU_CYCLES);
        assert_int_equal(sampler_event_parse("instructions", &type, &config), 0);
        assert_int_equal(config, PERF_COUNT_HW_INSTRUCTIONS);
        assert_int_equal(sampler_event_parse("ref-cycles", &type, &config), 0);
        assert_int_equal(config, PERF_COUNT_HW_REF_CPU_CYCLES);
        assert_int_equal(sampler_event_parse("r11", &type, &config), 0);
        assert_int_equal(type, PERF_TYPE_RAW);
        assert_int_equal(config, 0x11);
        type = 99;
        for (const char *const *bad = (const char *const[]) { "", "cpu", "Cycles", "r", "rxyz", "r12345678901234567",
                                                              "cpu-clock ", NULL }; *bad; bad++)
                assert_int_equal(sampler_event_parse(*bad, &type, &config), -EINVAL);
        /* Outputs untouched on failure. */
        assert_int_equal(type, 99);
}

static void test_regs_mask(void **state) {
        uint64_t m = sampler_default_regs_mask();

#if defined(__x86_64__)
        /* The general registers, IP and SP; not DS ES FS GS (perf's PERF_REGS_MASK). */
        for (unsigned r = PERF_REG_X86_AX; r <= PERF_REG_X86_SS; r++)
                assert_true(m & (UINT64_C(1) << r));
        for (unsigned r = PERF_REG_X86_DS; r <= PERF_REG_X86_GS; r++)
                assert_false(m & (UINT64_C(1) << r));
        for (unsigned r = PERF_REG_X86_R8; r <= PERF_REG_X86_R15; r++)
                assert_true(m & (UINT64_C(1) << r));
        assert_int_equal(m >> PERF_REG_X86_64_MAX, 0);
        assert_int_equal(__builtin_popcountll(m), 20);
#elif defined(__aarch64__)
        assert_int_equal(m, (UINT64_C(1) << PERF_REG_ARM64_MAX) - 1);
#else
        assert_int_equal(m, 0);
#endif
}

static void test_refused_options(void **state) {
        struct source_sink sink = {};
        struct task_map *tasks = NULL;
        struct source *s = NULL;
        struct source_status st;

        assert_int_equal(task_map_new(&tasks), 0);
        for (unsigned i = 0; i < 5; i++) {
                struct sampler_options o = {};

                switch (i) {
                case 0: o.stack_bytes = 12; break;
                case 1: o.stack_bytes = 65536; break;
                case 2: o.data_bytes = 3 * 4096; break;
                case 3: o.data_bytes = 64; break;
                case 4: o.unwind = 7; break;
                }
                assert_int_equal(sampler_source_new(&o, &sink, tasks, &s), -EINVAL);
                assert_null(s);
        }
        assert_int_equal(sampler_source_new(&(struct sampler_options) {}, NULL, tasks, &s), -EINVAL);
        /* Zeros are the defaults; a source not started is starting, with no CPUs. */
        assert_int_equal(sampler_source_new(&(struct sampler_options) {}, &sink, tasks, &s), 0);
        source_status(s, &st);
        assert_string_equal(st.kind, "sampler");
        assert_int_equal(st.state, SOURCE_STARTING);
        assert_int_equal(st.sample_period, 1000000000 / SAMPLER_DEFAULT_FREQUENCY);
        assert_int_equal(st.n_sampler_cpus, 0);
        source_status_done(&st);
        source_free(s);
        task_map_free(tasks);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_event_names),
                cmocka_unit_test(test_regs_mask),
                cmocka_unit_test(test_refused_options),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
