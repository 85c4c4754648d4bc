/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/pprof.c: build a profile, gunzip it, unpack it with the
 * protobuf-c code generated from proto/profile.proto and check what pprof's
 * profile.proto documentation requires (string_table[0] == "", nonzero
 * unique ids, one value per sample type) and what the builder promises
 * (interning, dedup of mappings, locations, functions, merged samples).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test-gunzip.h"
#include <zlib.h>

#include "pprof.h"
#include "profile.pb-c.h"
#include "strbuf.h"

#define GZIP_MAGIC0 0x1f
#define GZIP_MAGIC1 0x8b

typedef Perftools__Profiles__Profile Profile;

static Profile *finish_and_unpack(struct pprof_builder *b) {
        struct strbuf gz = STRBUF_INIT;
        Profile *p;

        assert_int_equal(pprof_finish(b, &gz), 0);
        assert_true(gz.len > 2);
        assert_int_equal((uint8_t) gz.buf[0], GZIP_MAGIC0);
        assert_int_equal((uint8_t) gz.buf[1], GZIP_MAGIC1);
        p = test_unpack_profile(&gz, 0, NULL);
        strbuf_done(&gz);
        return p;
}

static const char *str(const Profile *p, int64_t i) {
        assert_true(i >= 0 && (size_t) i < p->n_string_table);
        return p->string_table[i];
}

static const Perftools__Profiles__Location *location(const Profile *p, uint64_t id) {
        assert_true(id >= 1 && id <= p->n_location);
        assert_int_equal(p->location[id - 1]->id, id);
        return p->location[id - 1];
}

static const char *function_name(const Profile *p, const Perftools__Profiles__Location *l) {
        if (l->n_line == 0)
                return NULL;
        assert_int_equal(l->n_line, 1);
        assert_true(l->line[0]->function_id >= 1 && l->line[0]->function_id <= p->n_function);
        assert_int_equal(p->function[l->line[0]->function_id - 1]->id, l->line[0]->function_id);
        return str(p, p->function[l->line[0]->function_id - 1]->name);
}

static void assert_strings_unique(const Profile *p) {
        assert_true(p->n_string_table >= 1);
        assert_string_equal(p->string_table[0], "");
        for (size_t i = 0; i < p->n_string_table; i++)
                for (size_t j = i + 1; j < p->n_string_table; j++)
                        assert_string_not_equal(p->string_table[i], p->string_table[j]);
}

static void test_profile(void **state) {
        static const struct pprof_value_type types[] = { { "samples", "count" }, { "latency", "cycles" } };
        static const struct pprof_value_type period_type = { "operations", "count" };
        const struct pprof_label load[] = { { .key = "op", .str = "load" } };
        const struct pprof_label store[] = { { .key = "op", .str = "store" } };
        const struct pprof_label pid[] = { { .key = "pid", .num = 42, .num_unit = "count" } };
        struct pprof_builder *b = pprof_builder_new(types, 2, &period_type, 4096, UINT64_C(1700000000000000000),
                                                    UINT64_C(5000000000));
        uint64_t m1, m2;
        Profile *p;

        m1 = pprof_mapping(b, 0x400000, 0x500000, 0x1000, "/usr/bin/app", "deadbeef", false);
        assert_int_equal(m1, 1);
        assert_int_equal(pprof_mapping(b, 0x400000, 0x500000, 0x1000, "/usr/bin/app", "deadbeef", false), m1);
        m2 = pprof_mapping(b, 0x7f0000, 0x800000, 0, "/lib/libc.so.6", NULL, false);
        assert_int_equal(m2, 2);

        assert_int_equal(pprof_sample(b, 0x401000, m1, "main", (int64_t[]) { 1, 10 }, load, 1), 0);
        assert_int_equal(pprof_sample(b, 0x401000, m1, "main", (int64_t[]) { 1, 20 }, load, 1), 0);
        assert_int_equal(pprof_sample(b, 0x401000, m1, "main", (int64_t[]) { 1, 5 }, store, 1), 0);
        assert_int_equal(pprof_sample(b, 0x401010, m1, "main", (int64_t[]) { 1, 7 }, NULL, 0), 0);
        assert_int_equal(pprof_sample(b, 0x7f1000, m2, NULL, (int64_t[]) { 1, 1 }, pid, 1), 0);
        assert_int_equal(pprof_sample(b, UINT64_C(0xffff800008010000), 0, "[kernel]", (int64_t[]) { 1, 2 }, NULL, 0),
                         0);
        assert_int_equal(pprof_sample(b, 0x1234, 3, "nope", (int64_t[]) { 1, 1 }, NULL, 0), -EINVAL);
        /* The first two merged: same location, same labels. */
        assert_int_equal(pprof_n_samples(b), 5);

        p = finish_and_unpack(b);
        assert_strings_unique(p);

        assert_int_equal(p->n_sample_type, 2);
        assert_string_equal(str(p, p->sample_type[0]->type), "samples");
        assert_string_equal(str(p, p->sample_type[0]->unit), "count");
        assert_string_equal(str(p, p->sample_type[1]->type), "latency");
        assert_string_equal(str(p, p->sample_type[1]->unit), "cycles");
        assert_string_equal(str(p, p->default_sample_type), "samples");
        assert_non_null(p->period_type);
        assert_string_equal(str(p, p->period_type->type), "operations");
        assert_int_equal(p->period, 4096);
        assert_int_equal(p->time_nanos, INT64_C(1700000000000000000));
        assert_int_equal(p->duration_nanos, INT64_C(5000000000));

        /* Samples in insertion order; one location each (SPE has no stack). */
        assert_int_equal(p->n_sample, 5);
        for (size_t i = 0; i < p->n_sample; i++) {
                assert_int_equal(p->sample[i]->n_value, 2);
                assert_int_equal(p->sample[i]->n_location_id, 1);
        }
        assert_int_equal(p->sample[0]->value[0], 2);
        assert_int_equal(p->sample[0]->value[1], 30);
        assert_int_equal(p->sample[0]->n_label, 1);
        assert_string_equal(str(p, p->sample[0]->label[0]->key), "op");
        assert_string_equal(str(p, p->sample[0]->label[0]->str), "load");
        assert_int_equal(p->sample[0]->label[0]->num, 0);
        assert_int_equal(p->sample[1]->value[0], 1);
        assert_int_equal(p->sample[1]->value[1], 5);
        assert_string_equal(str(p, p->sample[1]->label[0]->str), "store");
        assert_int_equal(p->sample[0]->location_id[0], p->sample[1]->location_id[0]);
        assert_int_equal(p->sample[2]->n_label, 0);
        assert_int_not_equal(p->sample[2]->location_id[0], p->sample[0]->location_id[0]);
        assert_int_equal(p->sample[3]->n_label, 1);
        assert_string_equal(str(p, p->sample[3]->label[0]->key), "pid");
        assert_int_equal(p->sample[3]->label[0]->str, 0);
        assert_int_equal(p->sample[3]->label[0]->num, 42);
        assert_string_equal(str(p, p->sample[3]->label[0]->num_unit), "count");

        /* Locations: one per (mapping, address); functions: one per name. */
        assert_int_equal(p->n_location, 4);
        assert_int_equal(p->n_function, 2);
        {
                const Perftools__Profiles__Location *l0 = location(p, p->sample[0]->location_id[0]);
                const Perftools__Profiles__Location *l2 = location(p, p->sample[2]->location_id[0]);
                const Perftools__Profiles__Location *l3 = location(p, p->sample[3]->location_id[0]);
                const Perftools__Profiles__Location *l4 = location(p, p->sample[4]->location_id[0]);

                assert_int_equal(l0->address, 0x401000);
                assert_int_equal(l0->mapping_id, m1);
                assert_string_equal(function_name(p, l0), "main");
                assert_int_equal(l2->address, 0x401010);
                assert_int_equal(l2->line[0]->function_id, l0->line[0]->function_id);
                assert_int_equal(l3->address, 0x7f1000);
                assert_int_equal(l3->mapping_id, m2);
                assert_null(function_name(p, l3));
                assert_int_equal(l4->mapping_id, 0);
                assert_string_equal(function_name(p, l4), "[kernel]");
        }

        assert_int_equal(p->n_mapping, 2);
        assert_int_equal(p->mapping[0]->id, 1);
        assert_int_equal(p->mapping[0]->memory_start, 0x400000);
        assert_int_equal(p->mapping[0]->memory_limit, 0x500000);
        assert_int_equal(p->mapping[0]->file_offset, 0x1000);
        assert_string_equal(str(p, p->mapping[0]->filename), "/usr/bin/app");
        assert_string_equal(str(p, p->mapping[0]->build_id), "deadbeef");
        assert_true(p->mapping[0]->has_functions);
        assert_int_equal(p->mapping[1]->id, 2);
        assert_string_equal(str(p, p->mapping[1]->filename), "/lib/libc.so.6");
        assert_int_equal(p->mapping[1]->build_id, 0);
        assert_false(p->mapping[1]->has_functions);

        perftools__profiles__profile__free_unpacked(p, NULL);

        assert_int_equal(pprof_set_default_sample_type(b, 2), -EINVAL);
        assert_int_equal(pprof_set_default_sample_type(b, 1), 0);
        p = finish_and_unpack(b);
        assert_string_equal(str(p, p->default_sample_type), "latency");
        perftools__profiles__profile__free_unpacked(p, NULL);
        assert_null(pprof_builder_free(b));
        assert_null(pprof_builder_free(NULL));
}

/*
 * has_functions says whether the file's symbols were read, which is what
 * decides whether pprof reads the file again and then posts the addresses
 * to /debug/pprof/symbol (github.com/google/pprof internal/symbolz): a
 * stripped file read whole names none of its locations and is symbolized
 * all the same; a file that could not be read is not, even when the same
 * mapping was asked for again; a named location says its file was read.
 * In parts, each part's mapping says what the whole profile's does.
 */
static void test_has_functions(void **state) {
        static const struct pprof_value_type type = { "samples", "count" };
        struct pprof_builder *b = pprof_builder_new(&type, 1, NULL, 0, 0, 0);
        struct pprof_parts parts = {};
        enum { READ, GONE, READ_LATER, NAMED, _N };
        static const char *const files[_N] = { "/usr/bin/stripped", "/gone/lib.so", "/usr/lib/later.so",
                                               "/usr/lib/named.so" };
        static const bool want[_N] = { true, false, true, true };
        uint64_t m[_N];
        Profile *p;

        m[READ] = pprof_mapping(b, 0x1000, 0x2000, 0, files[READ], NULL, true);
        m[GONE] = pprof_mapping(b, 0x3000, 0x4000, 0, files[GONE], NULL, false);
        assert_int_equal(pprof_mapping(b, 0x3000, 0x4000, 0, files[GONE], NULL, false), m[GONE]);
        m[READ_LATER] = pprof_mapping(b, 0x5000, 0x6000, 0, files[READ_LATER], "ab", false);
        /* The same mapping in another process whose lookup read the file: one mapping, read. */
        assert_int_equal(pprof_mapping(b, 0x5000, 0x6000, 0, files[READ_LATER], "ab", true), m[READ_LATER]);
        m[NAMED] = pprof_mapping(b, 0x7000, 0x8000, 0, files[NAMED], NULL, false);
        for (size_t i = 0; i < _N; i++)
                assert_int_equal(pprof_sample(b, 0x1010 + 0x2000 * i, m[i], i == NAMED ? "f" : NULL,
                                              (int64_t[]) { (int64_t) i + 1 }, NULL, 0), 0);
        p = finish_and_unpack(b);
        assert_int_equal(p->n_mapping, _N);
        for (size_t i = 0; i < _N; i++) {
                assert_string_equal(str(p, p->mapping[m[i] - 1]->filename), files[i]);
                assert_int_equal(p->mapping[m[i] - 1]->has_functions, want[i]);
                /* Never more than it gives. */
                assert_false(p->mapping[m[i] - 1]->has_filenames);
                assert_false(p->mapping[m[i] - 1]->has_line_numbers);
        }
        perftools__profiles__profile__free_unpacked(p, NULL);

        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { .max_samples = 1, .max_parts = 8 },
                                            &parts), 0);
        assert_int_equal(parts.n, _N);
        for (size_t i = 0; i < parts.n; i++) {
                bool found = false;

                p = test_unpack_profile(&parts.parts[i], 0, NULL);
                assert_int_equal(p->n_mapping, 1);
                for (size_t j = 0; j < _N; j++)
                        if (streq(str(p, p->mapping[0]->filename), files[j])) {
                                assert_int_equal(p->mapping[0]->has_functions, want[j]);
                                found = true;
                        }
                assert_true(found);
                perftools__profiles__profile__free_unpacked(p, NULL);
        }
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

/* Comments, in order, in the profile and in each part. */
static void test_comments(void **state) {
        static const struct pprof_value_type type = { "samples", "count" };
        struct pprof_builder *b = pprof_builder_new(&type, 1, NULL, 0, 0, 0);
        struct pprof_parts parts = {};
        Profile *p;

        pprof_add_comment(b, "first line");
        pprof_add_comment(b, "samples");       /* a string the profile has anyway */
        for (int i = 0; i < 3; i++)
                assert_int_equal(pprof_sample(b, 0x1000 + i, 0, NULL, (int64_t[]) { 1 }, NULL, 0), 0);
        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { .max_samples = 1, .max_parts = 8 },
                                            &parts), 0);
        p = finish_and_unpack(b);
        assert_int_equal(p->n_comment, 2);
        assert_string_equal(str(p, p->comment[0]), "first line");
        assert_string_equal(str(p, p->comment[1]), "samples");
        assert_strings_unique(p);
        perftools__profiles__profile__free_unpacked(p, NULL);
        assert_int_equal(parts.n, 3);
        for (size_t i = 0; i < parts.n; i++) {
                p = test_unpack_profile(&parts.parts[i], 0, NULL);
                assert_int_equal(p->n_comment, 2);
                assert_string_equal(str(p, p->comment[0]), "first line");
                assert_string_equal(str(p, p->comment[1]), "samples");
                perftools__profiles__profile__free_unpacked(p, NULL);
        }
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

/* Many samples over few keys: tables grow, output stays bounded by the keys. */
static void test_dedup_at_scale(void **state) {
        static const struct pprof_value_type type = { "samples", "count" };
        enum { N_ADDR = 1000, N_FUNC = 100, N_CALLS = 50000 };
        struct pprof_builder *b = pprof_builder_new(&type, 1, NULL, 0, 0, 0);
        uint64_t m = pprof_mapping(b, 0x10000, 0x20000, 0, "/bin/x", NULL, true);
        uint64_t total = 0;
        Profile *p;

        for (unsigned i = 0; i < N_CALLS; i++) {
                char fn[32];
                unsigned a = (i * 7919u) % N_ADDR;

                snprintf(fn, sizeof(fn), "fn_%u", a % N_FUNC);
                assert_int_equal(pprof_sample(b, 0x10000 + 4 * a, m, fn, (int64_t[]) { 1 }, NULL, 0), 0);
        }
        assert_int_equal(pprof_n_samples(b), N_ADDR);
        p = finish_and_unpack(b);
        assert_null(p->period_type);
        assert_int_equal(p->n_location, N_ADDR);
        assert_int_equal(p->n_function, N_FUNC);
        assert_int_equal(p->n_sample, N_ADDR);
        /* "", "samples", "count", "/bin/x" and the function names. */
        assert_int_equal(p->n_string_table, 4 + N_FUNC);
        assert_strings_unique(p);
        for (size_t i = 0; i < p->n_sample; i++)
                total += (uint64_t) p->sample[i]->value[0];
        assert_int_equal(total, N_CALLS);
        perftools__profiles__profile__free_unpacked(p, NULL);
        pprof_builder_free(b);
}

/* pprof_finish() appends and leaves the builder usable. */
static void test_finish_appends(void **state) {
        static const struct pprof_value_type type = { "samples", "count" };
        struct pprof_builder *b = pprof_builder_new(&type, 1, NULL, 0, 0, 0);
        struct strbuf gz = STRBUF_INIT;
        Profile *p;

        strbuf_puts(&gz, "prefix");
        assert_int_equal(pprof_sample(b, 0x10, 0, "f", (int64_t[]) { 3 }, NULL, 0), 0);
        assert_int_equal(pprof_finish(b, &gz), 0);
        assert_memory_equal(gz.buf, "prefix", 6);
        p = test_unpack_profile(&gz, 6, NULL);
        assert_int_equal(p->n_sample, 1);
        assert_int_equal(p->sample[0]->value[0], 3);
        perftools__profiles__profile__free_unpacked(p, NULL);

        assert_int_equal(pprof_sample(b, 0x10, 0, "f", (int64_t[]) { 4 }, NULL, 0), 0);
        p = finish_and_unpack(b);
        assert_int_equal(p->n_sample, 1);
        assert_int_equal(p->sample[0]->value[0], 7);
        perftools__profiles__profile__free_unpacked(p, NULL);
        strbuf_done(&gz);
        pprof_builder_free(b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_profile),
                cmocka_unit_test(test_has_functions),
                cmocka_unit_test(test_comments),
                cmocka_unit_test(test_dedup_at_scale),
                cmocka_unit_test(test_finish_appends),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
