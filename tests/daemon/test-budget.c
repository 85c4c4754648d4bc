/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CPU budget's arithmetic (daemon/budget.c) against a model of the
 * collector: a load whose CPU cost halves with each step of slowdown, as
 * sampling half as often halves the records to decode and aggregate. The
 * shares expected are computed here from the model, not by the budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "budget.h"

#define NS 1000000000ull
#define WINDOW (60 * NS)
#define CPUS 64

struct model {
        struct budget b;
        uint64_t now, cpu;
        double load_percent;    /* of the host, unthrottled */
        unsigned changes;
};

/* One second of collector work at the model's load and the budget's current slowdown. */
static void step(struct model *m) {
        double cores = m->load_percent / 100.0 * CPUS / (double) (1u << m->b.shift);

        m->now += NS;
        m->cpu += (uint64_t) (cores * (double) NS);
        if (budget_update(&m->b, m->now, m->cpu))
                m->changes++;
}

static void run(struct model *m, unsigned seconds) {
        for (unsigned i = 0; i < seconds; i++)
                step(m);
}

static void init(struct model *m, double budget_percent, double load_percent) {
        *m = (struct model) { .load_percent = load_percent };
        budget_init(&m->b, &(struct budget_options) { .cpu_percent = budget_percent, .window_ns = WINDOW,
                                                       .n_cpus = CPUS });
        budget_update(&m->b, m->now, m->cpu);
}

static void test_under_budget(void **state) {
        struct model m;

        init(&m, 1.0, 0.6);
        run(&m, 600);
        assert_int_equal(m.b.shift, 0);
        assert_int_equal(m.changes, 0);
        assert_int_equal(m.b.windows, 10);
        assert_float_equal(m.b.last_percent, 0.6, 1e-6);
}

/* 3.3x over: two doublings at the end of the first full window (not before), then it holds. */
static void test_raise_then_hold(void **state) {
        struct model m;

        init(&m, 1.0, 3.3);
        run(&m, 59);
        assert_int_equal(m.b.shift, 0);
        run(&m, 1);
        assert_int_equal(m.b.shift, 2);
        assert_float_equal(m.b.last_percent, 3.3, 1e-6);
        run(&m, 600);
        assert_int_equal(m.b.shift, 2);
        assert_int_equal(m.changes, 1);
        /* 3.3 / 4, under the budget; twice that (1.65) is not under 0.75: no step back. */
        assert_float_equal(m.b.last_percent, 3.3 / 4, 1e-6);
        assert_int_equal(m.b.raises, 1);
        assert_int_equal(m.b.restores, 0);
}

/* The pressure goes: one step back a window, down to none, never over the budget on the way. */
static void test_restore(void **state) {
        struct model m;

        init(&m, 1.0, 3.3);
        run(&m, 120);
        assert_int_equal(m.b.shift, 2);
        m.load_percent = 0.2;
        run(&m, 60);    /* the window the load fell in: 0.2 / 4 = 0.05 */
        assert_int_equal(m.b.shift, 1);
        run(&m, 60);    /* 0.1, twice is 0.2 */
        assert_int_equal(m.b.shift, 0);
        assert_float_equal(m.b.last_percent, 0.1, 1e-6);
        run(&m, 600);
        assert_int_equal(m.b.shift, 0);
        assert_float_equal(m.b.last_percent, 0.2, 1e-6);
        assert_int_equal(m.b.restores, 2);
}

/* A load just under the restore line at twice the rate: no flapping between two steps. */
static void test_no_flapping(void **state) {
        struct model m;

        init(&m, 1.0, 1.4);
        run(&m, 60);
        assert_int_equal(m.b.shift, 1);    /* ceil(log2 1.4) */
        run(&m, 3600);
        assert_int_equal(m.b.shift, 1);    /* 0.7; twice is 1.4: stays */
        assert_int_equal(m.changes, 1);
}

static void test_max_shift(void **state) {
        struct model m;

        init(&m, 0.01, 50);
        run(&m, 60);
        assert_int_equal(m.b.shift, BUDGET_MAX_SHIFT);
        run(&m, 600);
        assert_int_equal(m.b.shift, BUDGET_MAX_SHIFT);
        assert_float_equal(m.b.last_percent, 50.0 / (1u << BUDGET_MAX_SHIFT), 1e-6);
}

/* No budget: measured, never slowed down; a budget turned off while throttled restores at once. */
static void test_off(void **state) {
        struct model m;

        init(&m, 0, 50);
        run(&m, 600);
        assert_int_equal(m.b.shift, 0);
        assert_float_equal(m.b.last_percent, 50, 1e-6);

        init(&m, 1.0, 5);
        run(&m, 60);
        assert_int_equal(m.b.shift, 3);
        budget_set_options(&m.b, &(struct budget_options) { .cpu_percent = 0, .window_ns = WINDOW, .n_cpus = CPUS });
        assert_false(budget_throttled(&m.b));
}

/* A reading that goes back (a clock or a counter reset) starts the window again. */
static void test_reading_back(void **state) {
        struct model m;

        init(&m, 1.0, 5);
        m.cpu = 100 * NS;
        budget_init(&m.b, &m.b.opts);
        budget_update(&m.b, m.now, m.cpu);
        run(&m, 59);
        m.cpu = 0;
        run(&m, 60);    /* the window begins again at the 60th second */
        assert_int_equal(m.b.shift, 0);
        assert_int_equal(m.b.windows, 0);
        run(&m, 1);
        assert_int_equal(m.b.shift, 3);
        assert_float_equal(m.b.last_percent, 5, 1e-6);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_under_budget),
                cmocka_unit_test(test_raise_then_hold),
                cmocka_unit_test(test_restore),
                cmocka_unit_test(test_no_flapping),
                cmocka_unit_test(test_max_shift),
                cmocka_unit_test(test_off),
                cmocka_unit_test(test_reading_back),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
