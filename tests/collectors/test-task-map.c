/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shared task map (collectors/task-map.c): what COMM, FORK and cgroup
 * ids leave in it, and that a thread hashed to a taken slot replaces the
 * other (counted) while the rest of the table stays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "task-map.h"

/* Two tids in one slot, found the slow way (the map's hash is its own business). */
static void colliding(struct task_map *m, uint32_t *a, uint32_t *b) {
        task_map_set_pid(m, 1, 100);
        for (uint32_t t = 2; t < 10 * TASK_MAP_SIZE; t++) {
                uint64_t before = task_map_evictions(m);

                task_map_set_pid(m, t, 100 + t);
                if (task_map_evictions(m) > before && !task_map_get(m, 1)) {
                        *a = 1;
                        *b = t;
                        return;
                }
                /* t took a slot of its own: leave it, but keep 1 for the search. */
                task_map_set_pid(m, 1, 100);
        }
        fail_msg("no collision in %u tids", 10 * TASK_MAP_SIZE);
}

static void test_comm_fork(void **state) {
        struct task_map *m;
        const struct task_info *t;

        assert_int_equal(task_map_new(&m), 0);
        assert_null(task_map_get(m, 42));
        assert_int_equal(task_map_pid(m, 42), TASK_MAP_NO_ID);

        task_map_comm(m, 40, 42, "a-name-longer-than-fifteen");
        t = task_map_get(m, 42);
        assert_non_null(t);
        assert_int_equal(t->pid, 40);
        assert_string_equal(t->comm, "a-name-longer-t");

        /* A child has its parent's comm and its own start time... */
        task_map_cgroup(m, 43, 7);
        task_map_fork(m, 40, 43, 42, 123456);
        t = task_map_get(m, 43);
        assert_int_equal(t->pid, 40);
        assert_string_equal(t->comm, "a-name-longer-t");
        assert_int_equal(t->start_ns, 123456);
        /* ...and nothing of the thread that had its tid before. */
        assert_int_equal(t->cgroup_id, 0);
        task_map_cgroup(m, 43, 9);
        assert_int_equal(task_map_get(m, 43)->cgroup_id, 9);

        /* An unknown parent: no comm. */
        task_map_fork(m, 50, 51, 49, 1);
        assert_string_equal(task_map_get(m, 51)->comm, "");
        assert_int_equal(task_map_pid(m, 51), 50);
        assert_int_equal(task_map_evictions(m), 0);
        task_map_free(m);
}

static void test_eviction(void **state) {
        struct task_map *m;
        uint32_t a = 0, b = 0;
        uint64_t ev;

        assert_int_equal(task_map_new(&m), 0);
        colliding(m, &a, &b);
        ev = task_map_evictions(m);
        assert_int_equal(task_map_pid(m, b), 100 + b);
        /* The same thread again is no eviction; the other one back is. */
        task_map_set_pid(m, b, 5);
        assert_int_equal(task_map_evictions(m), ev);
        task_map_comm(m, 100, a, "back");
        assert_int_equal(task_map_evictions(m), ev + 1);
        assert_int_equal(task_map_pid(m, b), TASK_MAP_NO_ID);
        assert_string_equal(task_map_get(m, a)->comm, "back");
        task_map_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_comm_fork),
                cmocka_unit_test(test_eviction),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
