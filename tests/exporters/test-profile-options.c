/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/cpu-profile.c and spe-profile.c with struct profile_options:
 * the builders (cpu_profile_builder(), profile_builder_span()) finished
 * and unpacked with the protobuf-c code of proto/profile.proto, against
 * what the test fed: with o NULL the bytes of the existing functions; with
 * PROFILE_LABELS_SERVICE only "service" labels, kept for the services over
 * the share and within max_services (the heaviest), the totals unchanged
 * whatever the labels; the times of the options.
 */
#include <errno.h>
#include <inttypes.h>
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

#include "cpu-profile.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "spe-profile.h"
#include "spe-rec.h"
#include "store.h"
#include "strbuf.h"

#define SEC             UINT64_C(1000000000)
#define PERIOD          UINT64_C(10000000)
#define UNIX_OFFSET     INT64_C(1700000000000000000)

typedef Perftools__Profiles__Profile Profile;

/* Finish b (and free it), unpack. */
static Profile *finish(struct pprof_builder *b, struct strbuf *ret_gz) {
        struct strbuf gz = STRBUF_INIT;
        Profile *p;

        assert_non_null(b);
        assert_int_equal(pprof_finish(b, &gz), 0);
        pprof_builder_free(b);
        p = test_unpack_profile(&gz, 0, NULL);
        if (ret_gz)
                *ret_gz = gz;
        else
                strbuf_done(&gz);
        return p;
}

/* Sum of value[vi] over the samples whose "service" label is svc ("" : none); checks that
 * no other label is there when service_only. */
static int64_t sum_by_service(const Profile *p, size_t vi, const char *svc, bool service_only) {
        int64_t sum = 0;

        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *s = p->sample[i];
                const char *got = "";

                for (size_t j = 0; j < s->n_label; j++) {
                        const char *key = p->string_table[s->label[j]->key];

                        if (service_only)
                                assert_string_equal(key, "service");
                        if (strcmp(key, "service") == 0)
                                got = p->string_table[s->label[j]->str];
                }
                if (service_only)
                        assert_true(s->n_label <= 1);
                if (!svc || strcmp(got, svc) == 0)
                        sum += s->value[vi];
        }
        return sum;
}

/* ---- CPU: a stack table by hand ---- */

static const uint64_t frames[][2] = {
        { 0x401000, 0x402000 }, { 0x401100, 0x402000 }, { 0x401200, 0x402000 },
        { 0x401300, 0x402000 }, { 0x401400, 0x402000 }, { 0x401500, 0x402000 },
};

/* Weights of 1000 in all: big 400 + 200 (two stacks), mid 300, edge 10 (exactly 1 %), tiny 9, none 81. */
static struct store_stack stacks[] = {
        { 10, 10, "big", "big", "/big.service", "big.service", frames[0], 2, 4, 400 },
        { 20, 20, "mid", "mid", "/mid.service", "mid.service", frames[1], 2, 3, 300 },
        { 10, 11, "big", "w1", "/big.service", "big.service", frames[2], 2, 2, 200 },
        { 40, 40, "no", "no", "", "", frames[3], 2, 8, 81 },
        { 30, 30, "edge", "edge", "/edge.service", "edge.service", frames[4], 2, 1, 10 },
        { 50, 50, "tiny", "tiny", "/tiny.service", "tiny.service", frames[5], 2, 1, 9 },
};

static struct store_stacks_result stacks_result(void) {
        return (struct store_stacks_result) {
                .iv = {
                        .start_ns = 10 * SEC,
                        .end_ns = 25 * SEC,
                        .epochs = 1,
                        .clock = { .kind = STORE_CLOCK_UNIX, .unix_offset_ns = UNIX_OFFSET },
                },
                .stacks = stacks,
                .n = ELEMENTSOF(stacks),
        };
}

enum { CPU_SAMPLES, CPU_CPU };

static void test_cpu_default_unchanged(void **state) {
        struct store_stacks_result r = stacks_result();
        struct strbuf want = STRBUF_INIT, got;
        struct pprof_builder *b = NULL;
        Profile *p;

        assert_int_equal(cpu_profile_build(&r, NULL, PERIOD, &want), 0);
        assert_int_equal(cpu_profile_builder(&r, NULL, NULL, PERIOD, NULL, &b), 0);
        p = finish(b, &got);
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.buf, want.buf, want.len);
        /* And every label of today's profile, pid first. */
        assert_true(p->sample[0]->n_label >= 5);
        assert_string_equal(p->string_table[p->sample[0]->label[0]->key], "pid");
        perftools__profiles__profile__free_unpacked(p, NULL);
        strbuf_done(&got);
        strbuf_done(&want);
        assert_int_equal(cpu_profile_builder(NULL, NULL, NULL, PERIOD, NULL, &b), -EINVAL);
        assert_int_equal(cpu_profile_builder(&r, NULL, NULL, 0, NULL, &b), -EINVAL);
}

static void test_cpu_service_labels(void **state) {
        struct store_stacks_result r = stacks_result();
        struct profile_options o = { .labels = PROFILE_LABELS_SERVICE, .service_min_permille = 10, .max_services = 20 };
        struct pprof_builder *b = NULL;
        Profile *p;

        assert_int_equal(cpu_profile_builder(&r, NULL, NULL, PERIOD, &o, &b), 0);
        p = finish(b, NULL);
        /* Totals whatever the labels. */
        assert_int_equal(sum_by_service(p, CPU_CPU, NULL, true), 1000);
        assert_int_equal(sum_by_service(p, CPU_SAMPLES, NULL, true), 19);
        assert_int_equal(sum_by_service(p, CPU_CPU, "big.service", true), 600);
        assert_int_equal(sum_by_service(p, CPU_CPU, "mid.service", true), 300);
        /* 10 of 1000 is 10 permille: kept; 9 is not, and goes with the unlabeled. */
        assert_int_equal(sum_by_service(p, CPU_CPU, "edge.service", true), 10);
        assert_int_equal(sum_by_service(p, CPU_CPU, "tiny.service", true), 0);
        assert_int_equal(sum_by_service(p, CPU_CPU, "", true), 81 + 9);
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_cpu_max_services(void **state) {
        struct store_stacks_result r = stacks_result();
        struct profile_options o = { .labels = PROFILE_LABELS_SERVICE, .service_min_permille = 0, .max_services = 2 };
        struct pprof_builder *b = NULL;
        Profile *p;

        assert_int_equal(cpu_profile_builder(&r, NULL, NULL, PERIOD, &o, &b), 0);
        p = finish(b, NULL);
        /* The two heaviest (big by its two stacks together, then mid) keep theirs. */
        assert_int_equal(sum_by_service(p, CPU_CPU, "big.service", true), 600);
        assert_int_equal(sum_by_service(p, CPU_CPU, "mid.service", true), 300);
        assert_int_equal(sum_by_service(p, CPU_CPU, "edge.service", true), 0);
        assert_int_equal(sum_by_service(p, CPU_CPU, "", true), 100);
        assert_int_equal(sum_by_service(p, CPU_CPU, NULL, true), 1000);
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* max_services 0: nobody keeps a label. */
        o.max_services = 0;
        assert_int_equal(cpu_profile_builder(&r, NULL, NULL, PERIOD, &o, &b), 0);
        p = finish(b, NULL);
        assert_int_equal(sum_by_service(p, CPU_CPU, "", true), 1000);
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_cpu_times(void **state) {
        struct store_stacks_result r = stacks_result();
        struct profile_options o = { .time_nanos = 1800000000000000000ULL, .duration_nanos = 15 * SEC };
        struct pprof_builder *b = NULL;
        Profile *p;

        assert_int_equal(cpu_profile_builder(&r, NULL, NULL, PERIOD, NULL, &b), 0);
        p = finish(b, NULL);
        assert_int_equal(p->time_nanos, UNIX_OFFSET + (int64_t) (10 * SEC));
        assert_int_equal(p->duration_nanos, (int64_t) (15 * SEC));
        perftools__profiles__profile__free_unpacked(p, NULL);

        assert_int_equal(cpu_profile_builder(&r, NULL, NULL, PERIOD, &o, &b), 0);
        p = finish(b, NULL);
        assert_int_equal(p->time_nanos, 1800000000000000000LL);
        assert_int_equal(p->duration_nanos, (int64_t) (15 * SEC));
        /* PROFILE_LABELS_ALL in the options: today's labels. */
        assert_string_equal(p->string_table[p->sample[0]->label[0]->key], "pid");
        perftools__profiles__profile__free_unpacked(p, NULL);
}

/* ---- SPE: a store fed records of three pids ---- */

struct fake_services {
        unsigned calls;
};

static bool fake_service(void *userdata, uint32_t pid, char *buf, size_t len) {
        struct fake_services *fs = userdata;

        fs->calls++;
        if (pid == 10)
                snprintf(buf, len, "db.service");
        else if (pid == 20)
                snprintf(buf, len, "web.service");
        else
                return false;
        return true;
}

static bool fake_locate(void *userdata, uint32_t pid, uint64_t pc, struct profile_location *ret) {
        return false;
}

/* pid 10: 60 records, 20: 30, 30: 10; over four pcs and two cpus. */
static struct store *spe_store(void) {
        struct store *s = NULL;
        struct store_options o;
        struct store_clock clock = { .kind = STORE_CLOCK_UNIX, .unix_offset_ns = UNIX_OFFSET };
        const struct { uint32_t pid; unsigned n; } feed[] = { { 10, 60 }, { 20, 30 }, { 30, 10 } };

        store_options_init(&o);
        assert_int_equal(store_new(&o, 100 * SEC, &s), 0);
        store_set_clock(s, &clock);
        for (size_t i = 0; i < ELEMENTSOF(feed); i++)
                for (unsigned k = 0; k < feed[i].n; k++) {
                        struct spe_record r = {};

                        r.present = SPE_REC_PC | SPE_REC_OP | SPE_REC_LAT_TOTAL;
                        r.pc.addr = 0x400000 + 0x40 * (k % 4);
                        r.op_class = SPE_OP_CLASS_OTHER;
                        r.cpu = k % 2;
                        r.lat_total = 7;
                        store_add(s, &r, feed[i].pid, feed[i].pid + k % 3);
                }
        store_epoch_end(s, 110 * SEC);
        return s;
}

static void test_spe(void **state) {
        _cleanup_(store_freep) struct store *s = spe_store();
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        struct fake_services fs = {};
        const struct profile_symbolizer sym = { fake_locate, &fs, fake_service };
        struct profile_options o = {
                .labels = PROFILE_LABELS_SERVICE, .service_min_permille = 150, .max_services = 20,
        };
        struct strbuf want = STRBUF_INIT, got;
        struct pprof_builder *b = NULL;
        Profile *p;

        /* o NULL: profile_build_span()'s bytes, and no service asked. */
        assert_int_equal(profile_build_span(snap, 0, 200 * SEC, &sym, 4096, &want), 0);
        assert_int_equal(profile_builder_span(snap, 0, 200 * SEC, &sym, 4096, NULL, &b), 0);
        p = finish(b, &got);
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.buf, want.buf, want.len);
        assert_int_equal(fs.calls, 0);
        assert_int_equal(sum_by_service(p, 0, NULL, false), 100);
        perftools__profiles__profile__free_unpacked(p, NULL);
        strbuf_done(&got);
        strbuf_done(&want);

        /* 15 %: db (60 %) and web (30 %) keep theirs; pid 30 has none. Each pid asked once. */
        assert_int_equal(profile_builder_span(snap, 0, 200 * SEC, &sym, 4096, &o, &b), 0);
        assert_int_equal(fs.calls, 3);
        p = finish(b, NULL);
        assert_int_equal(sum_by_service(p, 0, NULL, true), 100);
        assert_int_equal(sum_by_service(p, 1, NULL, true), 700);       /* latency 7 each */
        assert_int_equal(sum_by_service(p, 0, "db.service", true), 60);
        assert_int_equal(sum_by_service(p, 0, "web.service", true), 30);
        assert_int_equal(sum_by_service(p, 0, "", true), 10);
        /* Without pid/tid/cpu labels the records of a pc and service merge: at most 4 pcs x 3. */
        assert_true(p->n_sample <= 12);
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* 40 %: only db. */
        o.service_min_permille = 400;
        assert_int_equal(profile_builder_span(snap, 0, 200 * SEC, &sym, 4096, &o, &b), 0);
        p = finish(b, NULL);
        assert_int_equal(sum_by_service(p, 0, "db.service", true), 60);
        assert_int_equal(sum_by_service(p, 0, "", true), 40);
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* No service callback: no labels at all; the times of the options. */
        o.time_nanos = 1800000000000000000ULL;
        o.duration_nanos = 15 * SEC;
        assert_int_equal(profile_builder_span(snap, 0, 200 * SEC, &(struct profile_symbolizer) { fake_locate, &fs },
                                              4096, &o, &b),
                         0);
        p = finish(b, NULL);
        assert_int_equal(sum_by_service(p, 0, "", true), 100);
        assert_int_equal(p->time_nanos, 1800000000000000000LL);
        assert_int_equal(p->duration_nanos, (int64_t) (15 * SEC));
        perftools__profiles__profile__free_unpacked(p, NULL);
}

/*
 * The profile says what its table left out (a comment, which go tool pprof
 * prints): a 16-entry table under 64 contexts each epoch evicts, and every
 * sample's samples/count c is then within the bound the comment states of
 * a recount of the records fed, true <= c <= true + bound; a table that
 * holds every context says every value is exact, and is.
 */
#define CTX_PCS 64

static const char *profile_comment(const Profile *p) {
        assert_int_equal(p->n_comment, 1);
        return p->string_table[p->comment[0]];
}

static void check_counts(const Profile *p, const uint64_t truth[CTX_PCS], uint64_t bound) {
        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Location *l = p->location[p->sample[i]->location_id[0] - 1];
                size_t pc = (size_t) ((l->address - 0x400000) / 4);
                uint64_t c = (uint64_t) p->sample[i]->value[0];

                assert_true(pc < CTX_PCS);
                if (c < truth[pc] || c > truth[pc] + bound)
                        fail_msg("pc %zu: count %" PRIu64 ", true %" PRIu64 ", bound %" PRIu64, pc, c, truth[pc], bound);
        }
}

static void test_spe_table_comment(void **state) {
        for (int small = 0; small <= 1; small++) {
                _cleanup_(store_freep) struct store *s = NULL;
                _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
                struct store_options o;
                uint64_t truth[CTX_PCS] = {}, st = 7, evictions = 0, bound = 0;
                struct pprof_builder *b = NULL;
                unsigned epochs = 0, cap = 0;
                const char *c;
                Profile *p;

                store_options_init(&o);
                o.hotpcs = small ? 16 : 1024;
                assert_int_equal(store_new(&o, 0, &s), 0);
                for (unsigned e = 0; e < 3; e++) {
                        for (unsigned k = 0; k < 2000; k++) {
                                struct spe_record r = {};
                                /* Skewed: context i about twice as often as i + 8. */
                                size_t i = (size_t) ((st = st * 6364136223846793005ULL + 1442695040888963407ULL) >> 33) %
                                           CTX_PCS;

                                i = i * ((st >> 20) % CTX_PCS) / CTX_PCS;
                                r.present = SPE_REC_PC | SPE_REC_OP;
                                r.pc.addr = 0x400000 + 4 * i;
                                r.op_class = SPE_OP_CLASS_OTHER;
                                store_add(s, &r, 10, 10);
                                truth[i]++;
                        }
                        store_epoch_end(s, (e + 1) * 10 * SEC);
                }
                snap = store_snapshot_get(s);
                assert_int_equal(profile_builder_span(snap, 0, 100 * SEC, NULL, 0, NULL, &b), 0);
                p = finish(b, NULL);
                c = profile_comment(p);
                if (small) {
                        assert_int_equal(sscanf(c, "armprofd: %" SCNu64 " evictions from the table of %u entries an "
                                                   "epoch over %u epochs: each sample's samples/count is at most %"
                                                   SCNu64 " over",
                                                &evictions, &cap, &epochs, &bound), 4);
                        assert_true(evictions > 0 && bound > 0);
                        /* Space-Saving: the bound is at most the samples over the entries. */
                        assert_true(bound <= 3 * 2000 / 16);
                } else
                        assert_int_equal(sscanf(c, "armprofd: no sample left the table (%u entries an epoch, %u "
                                                   "epochs): every value is exact", &cap, &epochs), 2);
                assert_int_equal(cap, o.hotpcs);
                assert_int_equal(epochs, 3);
                check_counts(p, truth, bound);
                if (!small) {
                        int64_t sum = 0;

                        for (size_t i = 0; i < p->n_sample; i++)
                                sum += p->sample[i]->value[0];
                        assert_int_equal(sum, 3 * 2000);
                }
                perftools__profiles__profile__free_unpacked(p, NULL);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu_default_unchanged),
                cmocka_unit_test(test_cpu_service_labels),
                cmocka_unit_test(test_cpu_max_services),
                cmocka_unit_test(test_cpu_times),
                cmocka_unit_test(test_spe),
                cmocka_unit_test(test_spe_table_comment),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
