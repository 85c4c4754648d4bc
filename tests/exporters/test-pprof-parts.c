/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/pprof.c, pprof_finish_parts(): every part gunzipped and unpacked
 * with the protobuf-c code generated from proto/profile.proto; the parts'
 * sums per sample type against the values the test added, each part's
 * decompressed size against max_bytes, the trimmed samples against the
 * lightest the test added, and each part self-contained (its ids and string
 * indexes resolve inside it).
 *
 * With a directory argument, also writes the parts of a split profile there
 * (part-N.pb.gz) for test-pprof-parts.py and `go tool pprof -raw`.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define N_SAMPLES 50

typedef Perftools__Profiles__Profile Profile;

static const struct pprof_value_type types[] = {
        { "samples", "count" },
        { "cpu", "nanoseconds" },
};

static const char *str(const Profile *p, int64_t i) {
        assert_true(i >= 0 && (size_t) i < p->n_string_table);
        return p->string_table[i];
}

/*
 * Sample i (0-based) has weight i + 1 (samples) and 1000 * (i + 1) (cpu), a
 * two-frame stack: its own leaf "leaf<i>" at 0x1000 + i * 16 in one of two
 * mappings, and the common caller "main"; label "comm" = "c<i % 3>".
 * Added in the order 0..n-1, so the heaviest is the last one. With lines,
 * the lighter half's leaves in the first mapping get two Lines (an inlined
 * frame and its caller, pprof_location_lines()), the heavier half's none:
 * a part takes a mapping from a heavy sample first, its lines later.
 */
static struct pprof_builder *make_lines(size_t n, const char *fat_name, size_t fat_index, bool with_lines) {
        struct pprof_builder *b = pprof_builder_new(types, 2, &(struct pprof_value_type) { "cpu", "nanoseconds" },
                                                    1000, 1700000000000000000ULL, 15000000000ULL);
        uint64_t m[2], main_loc;

        assert_int_equal(pprof_set_default_sample_type(b, 0), 0);
        m[0] = pprof_mapping(b, 0x1000, 0x100000, 0, "/usr/bin/app", "abcd", true);
        m[1] = pprof_mapping(b, 0x200000, 0x300000, 0, "/usr/lib/libc.so.6", NULL, true);
        assert_int_equal(pprof_location(b, 0x500, m[0], "main", &main_loc), 0);
        for (size_t i = 0; i < n; i++) {
                char name[32], comm[8];
                int64_t v[2] = { (int64_t) i + 1, 1000 * ((int64_t) i + 1) };
                struct pprof_label l = { .key = "comm", .str = comm };
                uint64_t locs[2];

                snprintf(name, sizeof(name), "leaf%zu", i);
                snprintf(comm, sizeof(comm), "c%zu", i % 3);
                if (with_lines && i % 2 == 0 && i < n / 2) {
                        const struct pprof_line lines[2] = {
                                { "inlined", "/src/app/inlined.h", 10 + (int64_t) i },
                                { name, "/src/app/app.c", 100 + (int64_t) i },
                        };

                        assert_int_equal(pprof_location_lines(b, 0x1000 + 0x1000 + i * 16, m[0], lines, 2), 0);
                }
                assert_int_equal(pprof_location(b, (i % 2 ? 0x200000 : 0x1000) + 0x1000 + i * 16, m[i % 2],
                                                fat_name && i == fat_index ? fat_name : name, &locs[0]),
                                 0);
                locs[1] = main_loc;
                assert_int_equal(pprof_sample_stack(b, locs, 2, v, &l, 1), 0);
        }
        assert_int_equal(pprof_n_samples(b), n);
        return b;
}

static struct pprof_builder *make(size_t n, const char *fat_name, size_t fat_index) {
        return make_lines(n, fat_name, fat_index, false);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* What a part holds, checked self-contained. */
struct part_seen {
        int64_t time_nanos, duration_nanos;
        int64_t sum[2];
        size_t n_samples, raw_len;
        int64_t min_weight, max_weight;
};

static void check_part(const struct strbuf *gz, struct part_seen *ret) {
        size_t len;
        Profile *p = test_unpack_profile(gz, 0, &len);

        *ret = (struct part_seen) { .raw_len = len, .min_weight = INT64_MAX, .max_weight = INT64_MIN };
        assert_true(p->n_string_table >= 1);
        assert_string_equal(p->string_table[0], "");
        assert_int_equal(p->n_sample_type, 2);
        assert_string_equal(str(p, p->sample_type[0]->type), "samples");
        assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
        assert_string_equal(str(p, p->default_sample_type), "samples");
        assert_non_null(p->period_type);
        assert_string_equal(str(p, p->period_type->type), "cpu");
        assert_int_equal(p->period, 1000);
        /* Whatever part it is, it ends where the profile does. */
        assert_int_equal(p->time_nanos + p->duration_nanos, 1700000000000000000LL + 15000000000LL);
        ret->time_nanos = p->time_nanos;
        ret->duration_nanos = p->duration_nanos;
        /* Every string is there once (sorted, no two neighbours equal). */
        {
                char **sorted = calloc(p->n_string_table, sizeof(*sorted));

                assert_non_null(sorted);
                memcpy(sorted, p->string_table, p->n_string_table * sizeof(*sorted));
                qsort(sorted, p->n_string_table, sizeof(*sorted), cmp_str);
                for (size_t i = 1; i < p->n_string_table; i++)
                        assert_string_not_equal(sorted[i - 1], sorted[i]);
                free(sorted);
        }
        /* And used: a part carries only its own samples' strings (and the sample types'). */
        {
                bool *used = calloc(p->n_string_table, sizeof(*used));

                assert_non_null(used);
                used[0] = true;
                for (size_t i = 0; i < p->n_sample_type; i++)
                        used[p->sample_type[i]->type] = used[p->sample_type[i]->unit] = true;
                used[p->period_type->type] = used[p->period_type->unit] = true;
                for (size_t i = 0; i < p->n_mapping; i++)
                        used[p->mapping[i]->filename] = used[p->mapping[i]->build_id] = true;
                for (size_t i = 0; i < p->n_function; i++)
                        used[p->function[i]->name] = used[p->function[i]->system_name] =
                                used[p->function[i]->filename] = true;
                for (size_t i = 0; i < p->n_sample; i++)
                        for (size_t j = 0; j < p->sample[i]->n_label; j++)
                                used[p->sample[i]->label[j]->key] = used[p->sample[i]->label[j]->str] = true;
                for (size_t i = 0; i < p->n_string_table; i++)
                        assert_true(used[i]);
                free(used);
        }
        for (size_t i = 0; i < p->n_mapping; i++) {
                assert_int_equal(p->mapping[i]->id, i + 1);
                (void) str(p, p->mapping[i]->filename);
                assert_true(p->mapping[i]->has_functions);
        }
        for (size_t i = 0; i < p->n_location; i++) {
                const Perftools__Profiles__Location *l = p->location[i];

                assert_int_equal(l->id, i + 1);
                assert_true(l->mapping_id >= 1 && l->mapping_id <= p->n_mapping);
                /* One Line, or with lines (make_lines()) an inlined frame and its caller. */
                assert_true(l->n_line == 1 || l->n_line == 2);
                for (size_t j = 0; j < l->n_line; j++)
                        assert_true(l->line[j]->function_id >= 1 && l->line[j]->function_id <= p->n_function);
        }
        for (size_t i = 0; i < p->n_function; i++) {
                assert_int_equal(p->function[i]->id, i + 1);
                (void) str(p, p->function[i]->name);
        }
        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *s = p->sample[i];

                assert_int_equal(s->n_value, 2);
                /* As make() added them: cpu is 1000 times samples. */
                assert_int_equal(s->value[1], 1000 * s->value[0]);
                ret->sum[0] += s->value[0];
                ret->sum[1] += s->value[1];
                if (s->value[0] < ret->min_weight)
                        ret->min_weight = s->value[0];
                if (s->value[0] > ret->max_weight)
                        ret->max_weight = s->value[0];
                assert_int_equal(s->n_location_id, 2);
                for (size_t j = 0; j < 2; j++)
                        assert_true(s->location_id[j] >= 1 && s->location_id[j] <= p->n_location);
                assert_int_equal(s->n_label, 1);
                assert_string_equal(str(p, s->label[0]->key), "comm");
                /* The label make() gave weight w: "c<(w - 1) % 3>". */
                {
                        char comm[8];

                        snprintf(comm, sizeof(comm), "c%lld", (long long) ((s->value[0] - 1) % 3));
                        assert_string_equal(str(p, s->label[0]->str), comm);
                }
        }
        /* Every mapping, location and function is one the part's samples reach. */
        {
                bool *loc_used = calloc(p->n_location + 1, sizeof(bool));
                bool *map_used = calloc(p->n_mapping + 1, sizeof(bool));
                bool *fn_used = calloc(p->n_function + 1, sizeof(bool));

                assert_true(loc_used && map_used && fn_used);
                for (size_t i = 0; i < p->n_sample; i++)
                        for (size_t j = 0; j < p->sample[i]->n_location_id; j++)
                                loc_used[p->sample[i]->location_id[j]] = true;
                for (size_t i = 0; i < p->n_location; i++) {
                        assert_true(loc_used[i + 1]);
                        map_used[p->location[i]->mapping_id] = true;
                        for (size_t j = 0; j < p->location[i]->n_line; j++)
                                fn_used[p->location[i]->line[j]->function_id] = true;
                }
                for (size_t i = 0; i < p->n_mapping; i++)
                        assert_true(map_used[i + 1]);
                for (size_t i = 0; i < p->n_function; i++)
                        assert_true(fn_used[i + 1]);
                free(loc_used);
                free(map_used);
                free(fn_used);
        }
        ret->n_samples = p->n_sample;
        perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Sum of weights lo..hi. */
static int64_t weights(int64_t lo, int64_t hi) {
        return lo > hi ? 0 : (lo + hi) * (hi - lo + 1) / 2;
}

static void test_fits_is_pprof_finish(void **state) {
        struct pprof_builder *b = make(N_SAMPLES, NULL, 0);
        struct pprof_part_limits lim = { .max_samples = 16000, .max_bytes = 4 << 20, .max_parts = 4 };
        struct pprof_parts parts;
        struct strbuf whole = STRBUF_INIT;

        assert_int_equal(pprof_finish(b, &whole), 0);
        assert_int_equal(pprof_finish_parts(b, &lim, &parts), 0);
        assert_int_equal(parts.n, 1);
        assert_int_equal(parts.trimmed_samples, 0);
        assert_int_equal(parts.trimmed_value, 0);
        assert_int_equal(parts.parts[0].len, whole.len);
        assert_memory_equal(parts.parts[0].buf, whole.buf, whole.len);
        /* Exactly at the limits is still one part. */
        pprof_parts_done(&parts);
        lim.max_samples = N_SAMPLES;
        assert_int_equal(pprof_finish_parts(b, &lim, &parts), 0);
        assert_int_equal(parts.n, 1);
        pprof_parts_done(&parts);
        strbuf_done(&whole);
        pprof_builder_free(b);
}

static void test_bad_limits(void **state) {
        struct pprof_builder *b = make(3, NULL, 0);
        struct pprof_parts parts;

        parts = (struct pprof_parts) { .n = 77 };
        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 0, 0, 1 }, &parts), -EINVAL);
        assert_int_equal(parts.n, 77);  /* untouched on failure (HACKING.md §2) */
        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 1, 0, 0 }, &parts), -EINVAL);
        assert_int_equal(pprof_finish_parts(b, NULL, &parts), -EINVAL);
        pprof_builder_free(b);
}

/* Split by samples: ceil(50 / 7) parts, heaviest first, nothing lost. */
static void test_split_by_samples(void **state) {
        struct pprof_builder *b = make(N_SAMPLES, NULL, 0);
        struct pprof_part_limits lim = { .max_samples = 7, .max_parts = 100 };
        struct pprof_parts parts;
        int64_t sum = 0, next_max = N_SAMPLES;

        assert_int_equal(pprof_finish_parts(b, &lim, &parts), 0);
        assert_int_equal(parts.n, 8);
        assert_int_equal(parts.trimmed_samples, 0);
        for (size_t i = 0; i < parts.n; i++) {
                struct part_seen s;

                check_part(&parts.parts[i], &s);
                assert_int_equal(s.time_nanos, 1700000000000000000LL);
                assert_int_equal(s.n_samples, i < 7 ? 7 : 1);
                /* Heaviest first: part i holds weights next_max down to next_max - n + 1. */
                assert_int_equal(s.max_weight, next_max);
                assert_int_equal(s.min_weight, next_max - (int64_t) s.n_samples + 1);
                assert_int_equal(s.sum[0], weights(s.min_weight, s.max_weight));
                next_max -= (int64_t) s.n_samples;
                sum += s.sum[0];
        }
        assert_int_equal(sum, weights(1, N_SAMPLES));
        pprof_parts_done(&parts);
        assert_null(parts.parts);
        pprof_builder_free(b);
}

/*
 * With time_step_ns, part k starts k steps later and ends with the profile:
 * no two parts of one interval share a timestamp at Pyroscope's millisecond
 * precision; a step that would reach the end leaves the part at the start.
 */
static void test_time_step(void **state) {
        struct pprof_builder *b = make(N_SAMPLES, NULL, 0);
        struct pprof_parts parts;

        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) {
                                 .max_samples = 7, .max_parts = 100, .time_step_ns = 1000000 }, &parts), 0);
        assert_int_equal(parts.n, 8);
        for (size_t i = 0; i < parts.n; i++) {
                struct part_seen s;

                check_part(&parts.parts[i], &s);
                assert_int_equal(s.time_nanos, 1700000000000000000LL + (int64_t) i * 1000000);
                assert_int_equal(s.duration_nanos, 15000000000LL - (int64_t) i * 1000000);
        }
        pprof_parts_done(&parts);

        /* 4 s steps in a 15 s profile: parts 0-3 at 0, 4, 8, 12 s, the rest at the start. */
        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) {
                                 .max_samples = 7, .max_parts = 100, .time_step_ns = 4000000000 }, &parts), 0);
        for (size_t i = 0; i < parts.n; i++) {
                struct part_seen s;

                check_part(&parts.parts[i], &s);
                assert_int_equal(s.time_nanos, 1700000000000000000LL + (i < 4 ? (int64_t) i * 4000000000 : 0));
        }
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

static void test_max_samples_one(void **state) {
        struct pprof_builder *b = make(5, NULL, 0);
        struct pprof_parts parts;

        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 1, 0, 10 }, &parts), 0);
        assert_int_equal(parts.n, 5);
        for (size_t i = 0; i < parts.n; i++) {
                struct part_seen s;

                check_part(&parts.parts[i], &s);
                assert_int_equal(s.n_samples, 1);
                assert_int_equal(s.sum[0], 5 - (int64_t) i);
        }
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

/* max_parts full: the lightest are trimmed and counted. */
static void test_trim_lightest(void **state) {
        struct pprof_builder *b = make(N_SAMPLES, NULL, 0);
        struct pprof_parts parts;
        int64_t sum[2] = {};

        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 10, 0, 2 }, &parts), 0);
        assert_int_equal(parts.n, 2);
        assert_int_equal(parts.trimmed_samples, N_SAMPLES - 20);
        assert_int_equal(parts.trimmed_value, weights(1, N_SAMPLES - 20));
        for (size_t i = 0; i < parts.n; i++) {
                struct part_seen s;

                check_part(&parts.parts[i], &s);
                assert_int_equal(s.n_samples, 10);
                assert_true(s.min_weight > N_SAMPLES - 20);
                sum[0] += s.sum[0];
                sum[1] += s.sum[1];
        }
        assert_int_equal(sum[0] + parts.trimmed_value, weights(1, N_SAMPLES));
        assert_int_equal(sum[1], 1000 * weights(N_SAMPLES - 19, N_SAMPLES));
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

/* Split by bytes: every part within max_bytes, measured decompressed, and all there. */
static void split_by_bytes(bool with_lines) {
        struct pprof_builder *b = make_lines(N_SAMPLES, NULL, 0, with_lines);
        struct strbuf whole = STRBUF_INIT, raw = STRBUF_INIT;

        assert_int_equal(pprof_finish(b, &whole), 0);
        test_gunzip(&whole, 0, &raw);
        /* From a third of the whole down to little more than a part with one sample (with its Lines: larger). */
        for (size_t max = raw.len / 3; max >= (with_lines ? 400 : 250); max -= 37) {
                struct pprof_parts parts;
                int64_t sum[2] = {};
                size_t n = 0;

                assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 16000, max, 1000 }, &parts), 0);
                assert_int_equal(parts.trimmed_samples, 0);
                assert_true(parts.n >= 3);
                for (size_t i = 0; i < parts.n; i++) {
                        struct part_seen s;

                        check_part(&parts.parts[i], &s);
                        assert_true(s.raw_len <= max);
                        assert_true(s.n_samples >= 1);
                        sum[0] += s.sum[0];
                        sum[1] += s.sum[1];
                        n += s.n_samples;
                }
                assert_int_equal(n, N_SAMPLES);
                assert_int_equal(sum[0], weights(1, N_SAMPLES));
                assert_int_equal(sum[1], 1000 * weights(1, N_SAMPLES));
                pprof_parts_done(&parts);
        }
        strbuf_done(&whole);
        strbuf_done(&raw);
        pprof_builder_free(b);
}

static void test_split_by_bytes(void **state) {
        split_by_bytes(false);
}

/*
 * The same with Lines on some locations of a mapping that a part first
 * takes for a location without: its has_filenames, has_line_numbers and
 * has_inline_frames are counted when the part takes it (a part once came
 * out 17 bytes over max_bytes).
 */
static void test_split_by_bytes_lines(void **state) {
        split_by_bytes(true);
}

/* max_bytes under a single sample's part: everything trimmed, no part. */
static void test_bytes_under_one_sample(void **state) {
        struct pprof_builder *b = make(4, NULL, 0);
        struct pprof_parts parts;

        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 16000, 60, 10 }, &parts), 0);
        assert_int_equal(parts.n, 0);
        assert_int_equal(parts.trimmed_samples, 4);
        assert_int_equal(parts.trimmed_value, weights(1, 4));
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

/* One sample too big for any part (a 2000-byte function name) is trimmed; the others are kept. */
static void test_fat_sample_trimmed(void **state) {
        char fat[2001];
        struct pprof_builder *b;
        struct pprof_parts parts;
        int64_t sum = 0;

        memset(fat, 'x', sizeof(fat) - 1);
        fat[sizeof(fat) - 1] = '\0';
        b = make(10, fat, 6);    /* weight 7 */
        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 16000, 1000, 10 }, &parts), 0);
        assert_int_equal(parts.trimmed_samples, 1);
        assert_int_equal(parts.trimmed_value, 7);
        for (size_t i = 0; i < parts.n; i++) {
                struct part_seen s;

                check_part(&parts.parts[i], &s);
                assert_true(s.raw_len <= 1000);
                sum += s.sum[0];
        }
        assert_int_equal(sum, weights(1, 10) - 7);
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

/* Equal weights keep the order they were added in (the first added go first). */
static void test_ties_stable(void **state) {
        struct pprof_builder *b = pprof_builder_new(types, 2, NULL, 0, 0, 0);
        struct pprof_parts parts;

        for (size_t i = 0; i < 6; i++) {
                int64_t v[2] = { i == 5 ? 9 : 3, (int64_t) i };  /* the second value tells them apart */

                assert_int_equal(pprof_sample(b, 0x1000 + i, 0, NULL, v, NULL, 0), 0);
        }
        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 2, 0, 3 }, &parts), 0);
        assert_int_equal(parts.n, 3);
        {
                /* Expected order of the second values: 5 (heaviest), then 0, 1, 2, 3, 4. */
                const int64_t want[] = { 5, 0, 1, 2, 3, 4 };
                size_t k = 0;

                for (size_t i = 0; i < parts.n; i++) {
                        size_t len;
                        Profile *p = test_unpack_profile(&parts.parts[i], 0, &len);

                        assert_int_equal(p->n_sample, 2);
                        for (size_t j = 0; j < p->n_sample; j++)
                                assert_int_equal(p->sample[j]->value[1], want[k++]);
                        assert_null(p->period_type);
                        perftools__profiles__profile__free_unpacked(p, NULL);
                }
        }
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

/* Pyroscope's default sample limit on a profile twice and a half that: two parts of 16,000, the lightest 8,000 trimmed. */
static void test_store_sized(void **state) {
        const size_t n = 40000;
        struct pprof_builder *b = make(n, NULL, 0);
        struct pprof_parts parts;
        int64_t sum = 0;

        assert_int_equal(pprof_finish_parts(b, &(struct pprof_part_limits) { 16000, 4 << 20, 2 }, &parts), 0);
        assert_int_equal(parts.n, 2);
        assert_int_equal(parts.trimmed_samples, 8000);
        assert_int_equal(parts.trimmed_value, weights(1, 8000));
        for (size_t i = 0; i < parts.n; i++) {
                struct part_seen s;

                check_part(&parts.parts[i], &s);
                assert_int_equal(s.n_samples, 16000);
                assert_true(s.raw_len <= 4 << 20);
                sum += s.sum[0];
        }
        assert_int_equal(sum, weights(8001, (int64_t) n));
        pprof_parts_done(&parts);
        pprof_builder_free(b);
}

static int write_parts(const char *dir) {
        struct pprof_builder *b = make(N_SAMPLES, NULL, 0);
        struct pprof_parts parts;

        if (pprof_finish_parts(b, &(struct pprof_part_limits) { 16, 0, 10 }, &parts) < 0)
                return 1;
        for (size_t i = 0; i < parts.n; i++) {
                char path[4096];
                FILE *f;

                snprintf(path, sizeof(path), "%s/part-%zu.pb.gz", dir, i);
                f = fopen(path, "we");
                if (!f || fwrite(parts.parts[i].buf, 1, parts.parts[i].len, f) != parts.parts[i].len ||
                    fclose(f) != 0)
                        return 1;
        }
        printf("%zu\n", parts.n);
        pprof_parts_done(&parts);
        pprof_builder_free(b);
        return 0;
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fits_is_pprof_finish),
                cmocka_unit_test(test_bad_limits),
                cmocka_unit_test(test_split_by_samples),
                cmocka_unit_test(test_time_step),
                cmocka_unit_test(test_max_samples_one),
                cmocka_unit_test(test_trim_lightest),
                cmocka_unit_test(test_split_by_bytes),
                cmocka_unit_test(test_bytes_under_one_sample),
                cmocka_unit_test(test_split_by_bytes_lines),
                cmocka_unit_test(test_fat_sample_trimmed),
                cmocka_unit_test(test_ties_stable),
                cmocka_unit_test(test_store_sized),
        };

        if (argc == 2)
                return write_parts(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
