/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON answers become armprofd.v1 messages field for field (exporters/json-pb.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "armprofd.pb-c.h"
#include "json-pb.h"
#include "macro.h"

static void test_hotlines(void **state) {
        json_error_t jerr;
        json_t *j = json_loads("{\"line_size\": 64, \"records\": 10,"
                               " \"peer_snoops\": {\"local\": 7, \"remote\": 2},"
                               " \"lines\": [{\"address\": \"0xffff8a001000\", \"class\": \"false_sharing\","
                               "   \"shared\": true, \"loads_by_source\": {\"l1d\": 3, \"peer_core\": 4},"
                               "   \"node\": 0,"
                               "   \"offsets\": [{\"offset\": \"0x20\", \"pc\": \"0xaaaac0001224\", \"cpus\": [2, 3],"
                               "                  \"tids\": [], \"cpus_truncated\": false, \"latency_samples\": 4,"
                               "                  \"latency_mean_cycles\": 12.5, \"object\": \"/usr/bin/x\"}]},"
                               "  {\"address\": \"0x40\", \"class\": \"read_only\", \"node\": 3}, {\"address\": \"0x80\"}],"
                               " \"lines_with_peer_snoops\": 1,"
                               " \"interval\": {\"seconds\": 10.5, \"epochs\": 1}}",
                               0, &jerr);
        struct strbuf out = STRBUF_INIT;
        Armprofd__V1__HotLines *m;
        size_t unknown = 99;

        assert_non_null(j);
        assert_int_equal(json_to_pb(j, &armprofd__v1__hot_lines__descriptor, &out, &unknown), 0);
        assert_int_equal(unknown, 0);
        m = armprofd__v1__hot_lines__unpack(NULL, out.len, (uint8_t *) out.buf);
        assert_non_null(m);
        assert_int_equal(m->line_size, 64);
        assert_int_equal(m->peer_snoops->local, 7);
        assert_int_equal(m->peer_snoops->remote, 2);
        assert_true(m->interval->seconds == 10.5);
        assert_int_equal(m->n_lines, 3);
        assert_int_equal(m->lines_with_peer_snoops, 1);
        /* An optional number as a wrapper message: node 0 is there, a missing node is not. */
        assert_non_null(m->lines[0]->node);
        assert_int_equal(m->lines[0]->node->value, 0);
        assert_int_equal(m->lines[1]->node->value, 3);
        assert_null(m->lines[2]->node);
        assert_int_equal(m->lines[0]->offsets[0]->latency_samples, 4);
        assert_true(m->lines[0]->offsets[0]->latency_mean_cycles == 12.5);
        assert_string_equal(m->lines[0]->offsets[0]->object, "/usr/bin/x");
        assert_int_equal(m->lines[0]->address, 0xffff8a001000ULL);
        assert_string_equal(m->lines[0]->class_, "false_sharing");
        assert_true(m->lines[0]->shared);
        /* name -> value object as entries, in JSON order */
        assert_int_equal(m->lines[0]->n_loads_by_source, 2);
        assert_string_equal(m->lines[0]->loads_by_source[1]->name, "peer_core");
        assert_int_equal(m->lines[0]->loads_by_source[1]->value, 4);
        assert_int_equal(m->lines[0]->offsets[0]->offset, 0x20);
        assert_int_equal(m->lines[0]->offsets[0]->pc, 0xaaaac0001224ULL);
        assert_int_equal(m->lines[0]->offsets[0]->n_cpus, 2);
        assert_int_equal(m->lines[0]->offsets[0]->cpus[1], 3);
        assert_int_equal(m->lines[0]->offsets[0]->n_tids, 0);
        assert_int_equal(m->lines[1]->address, 0x40);
        armprofd__v1__hot_lines__free_unpacked(m, NULL);
        strbuf_done(&out);
        json_decref(j);
}

static void test_entries_with_objects_and_unknown_keys(void **state) {
        /* /latency shape: {"total": {"by_op": {"load": {...}}}} and a key the message lacks. */
        json_t *j = json_loads("{\"latency_cycles\": {\"total\": {\"by_op\": {\"load\": {\"count\": 5, \"p50\": 9.5}},"
                               " \"loads_by_source\": {}}}, \"not_in_proto\": 1}",
                               0, NULL);
        struct strbuf out = STRBUF_INIT;
        Armprofd__V1__Latency *m;
        size_t unknown = 0;

        assert_int_equal(json_to_pb(j, &armprofd__v1__latency__descriptor, &out, &unknown), 0);
        assert_int_equal(unknown, 1);
        m = armprofd__v1__latency__unpack(NULL, out.len, (uint8_t *) out.buf);
        assert_non_null(m);
        assert_int_equal(m->n_latency_cycles, 1);
        assert_string_equal(m->latency_cycles[0]->kind, "total");
        assert_string_equal(m->latency_cycles[0]->by_op[0]->group, "load");
        assert_int_equal(m->latency_cycles[0]->by_op[0]->count, 5);
        assert_true(m->latency_cycles[0]->by_op[0]->p50 == 9.5);
        armprofd__v1__latency__free_unpacked(m, NULL);
        strbuf_done(&out);
        json_decref(j);
}

static void test_type_mismatch_is_an_error(void **state) {
        static const char *const bad[] = {
                "{\"line_size\": \"sixty-four\"}",   /* string for a number */
                "{\"lines\": 3}",                    /* number for a repeated message */
                "{\"peer_snoops\": [1, 2]}",         /* array for a message */
                "{\"lines\": [{\"address\": \"0xzz\"}]}", /* not hex */
                "{\"interval\": {\"seconds\": true}}", /* bool for a double */
                "{\"lines\": [{\"node\": \"one\"}]}", /* string for a wrapped number */
                "{\"lines\": [{\"node\": [1]}]}",    /* array for a wrapped number */
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *j = json_loads(bad[i], 0, NULL);
                struct strbuf out = STRBUF_INIT;

                assert_non_null(j);
                if (json_to_pb(j, &armprofd__v1__hot_lines__descriptor, &out, NULL) != -EINVAL)
                        fail_msg("case %zu accepted: %s", i, bad[i]);
                strbuf_done(&out);
                json_decref(j);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hotlines),
                cmocka_unit_test(test_entries_with_objects_and_unknown_keys),
                cmocka_unit_test(test_type_mismatch_is_an_error),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
