/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/cpu-profile.c: a CPU profile built from the store's stack
 * table (filled by the test over two epochs) and a fake symbolizer that
 * names address ranges per process, then gunzipped and unpacked with the
 * protobuf-c code of proto/profile.proto and compared with what the test
 * fed in: sample and period types, the period, time and duration, one
 * sample per stack with its functions leaf first, labels, mappings with
 * build ids, locations apart per (mapping, address), kernel frames, caller
 * frames named by the byte before their return address, the symbolizer
 * asked once per distinct (pid, address).
 *
 * With --write OUT, writes the same profile to OUT and prints what it fed
 * (key=value lines) for test-cpu-profile.py, which reads the profile with
 * `go tool pprof`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test-gunzip.h"
#include <zlib.h>

#include "cpu-profile.h"
#include "profile.pb-c.h"
#include "store.h"
#include "strbuf.h"

#define SEC             UINT64_C(1000000000)
#define PERIOD          UINT64_C(52631578)      /* 1e9 / 19 */
#define UNIX_OFFSET     INT64_C(1700000000000000000)
#define MAX_FRAMES      8

typedef Perftools__Profiles__Profile Profile;

/* ---- the fake symbolizer: per pid, a file mapped at [0x400000, 0x500000) with three functions ---- */

struct fake_func {
        uint64_t start, end;
        const char *name;
};

struct fake_proc {
        uint32_t pid;
        const char *file, *build_id;
        struct fake_func func[3];
};

static const struct fake_proc procs[] = {
        { 100, "/usr/sbin/nginx", "aabbccdd",
          { { 0x401000, 0x402000, "ngx_inner" }, { 0x402000, 0x403000, "ngx_outer" }, { 0x403000, 0x404000, "main" } } },
        /* The same addresses in another file: must stay other locations. */
        { 200, "/opt/spin/spin", "",
          { { 0x401000, 0x402000, "inner_spin" }, { 0x402000, 0x403000, "outer_work" }, { 0x403000, 0x404000, "main" } } },
};

#define KERNEL_NAMED    UINT64_C(0xffffffff81001000)
#define KERNEL_A        UINT64_C(0xffffffff81002000)
#define KERNEL_B        UINT64_C(0xffffffff81003000)

struct fake_sym {
        unsigned calls;
        uint64_t asked[64];
        uint32_t asked_pid[64];
};

static bool fake_locate(void *userdata, uint32_t pid, uint64_t pc, struct profile_location *ret) {
        struct fake_sym *fs = userdata;

        /* Each distinct (pid, address) once: a second call is a cache miss the test counts. */
        for (unsigned i = 0; i < fs->calls && i < ELEMENTSOF(fs->asked); i++)
                assert_false(fs->asked[i] == pc && (fs->asked_pid[i] == pid || pc >> 63));
        if (fs->calls < ELEMENTSOF(fs->asked)) {
                fs->asked[fs->calls] = pc;
                fs->asked_pid[fs->calls] = pid;
        }
        fs->calls++;

        if (pc >= KERNEL_NAMED && pc < KERNEL_NAMED + 0x100) {
                *ret = (struct profile_location) { .function = "do_syscall_64" };
                return true;
        }
        for (size_t i = 0; i < ELEMENTSOF(procs); i++) {
                if (procs[i].pid != pid || pc < 0x400000 || pc >= 0x500000)
                        continue;
                *ret = (struct profile_location) {
                        .has_mapping = true,
                        .map_start = 0x400000,
                        .map_limit = 0x500000,
                        .map_pgoff = 0x1000,
                        .filename = procs[i].file,
                        .build_id_hex = procs[i].build_id,
                        .symbols_read = true,
                };
                for (size_t j = 0; j < 3; j++)
                        if (pc >= procs[i].func[j].start && pc < procs[i].func[j].end)
                                ret->function = procs[i].func[j].name;
                return true;
        }
        return false;
}

/* ---- what the test feeds: stacks, their tasks, and the functions the profile must show ---- */

struct fed {
        uint32_t pid, tid;
        const char *comm, *thread, *cgroup, *service;
        uint64_t frames[MAX_FRAMES];
        size_t n_frames;
        bool kernel;
        unsigned count[2];              /* samples in epoch 0 and 1 */
        const char *want[MAX_FRAMES];   /* function per location, leaf first; NULL: none (an address) */
        size_t n_want;
};

static const struct fed feds[] = {
        /* A whole user chain: the leaf by its pc, callers by the byte before the return address. */
        { 100, 100, "nginx", "nginx", "/system.slice/nginx.service", "nginx.service",
          { 0x401010, 0x402020, 0x403030 }, 3, false, { 5, 2 },
          { "ngx_inner", "ngx_outer", "main" }, 3 },
        /* The same addresses in pid 200's other file, another thread name, no cgroup. */
        { 200, 201, "spin", "worker", "", "",
          { 0x401010, 0x402020, 0x403030 }, 3, false, { 3, 6 },
          { "inner_spin", "outer_work", "main" }, 3 },
        /* A return address right at the start of main: the call was outer_work's last instruction. */
        { 200, 200, "spin", "spin", "", "",
          { 0x401020, 0x403000, 0x403040 }, 3, false, { 4, 0 },
          { "inner_spin", "outer_work", "main" }, 3 },
        /* In a syscall: a named kernel frame, two unnamed ones (one "[kernel]"), then the user
         * frame where the kernel was entered (named by its own address: 0x402000 is ngx_outer's
         * first byte, the byte before it ngx_inner's), then its caller. */
        { 100, 102, "nginx", "nginx", "/system.slice/nginx.service", "nginx.service",
          { KERNEL_NAMED + 0x10, KERNEL_A, KERNEL_B, 0x402000, 0x403010 }, 5, true, { 1, 1 },
          { "do_syscall_64", CPU_PROFILE_KERNEL_FUNCTION, "ngx_outer", "main" }, 4 },
        /* Kernel addresses withheld (one STORE_KERNEL_FRAME); a user pc the symbolizer does not know. */
        { 300, 300, "ghost", "", "/user.slice/user-1000.slice/session-2.scope", "session-2.scope",
          { STORE_KERNEL_FRAME, 0x7f0000001000, 0x7f0000002000 }, 3, true, { 0, 8 },
          { CPU_PROFILE_KERNEL_FUNCTION, NULL, NULL }, 3 },
};

static uint64_t fed_weight(size_t i, unsigned epoch) {
        /* Not a multiple of the period, so a count mistaken for a weight shows. */
        return feds[i].count[epoch] ? feds[i].count[epoch] * PERIOD + 1000 * i + epoch : 0;
}

/* What the sampler's sink stores with [privacy] kernel_addresses = yes: kernel frames as they are. */
static const struct privacy_policy kernel_shown = { .kernel_addresses = true, .data_addresses = true };

static void build(struct fake_sym *fs, struct strbuf *gz, struct store_stacks_result *ret_res) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        struct store_clock clock = { .kind = STORE_CLOCK_UNIX, .unix_offset_ns = UNIX_OFFSET };
        const struct profile_symbolizer sym = { fake_locate, fs, .privacy = &kernel_shown };

        store_options_init(&o);
        assert_int_equal(store_new(&o, 100 * SEC, &s), 0);
        store_set_clock(s, &clock);
        for (unsigned e = 0; e < 2; e++) {
                for (size_t i = 0; i < ELEMENTSOF(feds); i++)
                        for (unsigned c = 0; c < feds[i].count[e]; c++) {
                                /* The weight of the epoch's samples sums to fed_weight(): the rest on the first. */
                                uint64_t w = PERIOD + (c == 0 ? fed_weight(i, e) - feds[i].count[e] * PERIOD : 0);

                                store_add_stack(s, &(struct store_stack_sample) {
                                        .pid = feds[i].pid,
                                        .tid = feds[i].tid,
                                        .comm = feds[i].comm,
                                        .thread = feds[i].thread,
                                        .cgroup = feds[i].cgroup,
                                        .service = feds[i].service,
                                        .frames = feds[i].frames,
                                        .n_frames = feds[i].n_frames,
                                        .kernel = feds[i].kernel,
                                        .weight = w,
                                });
                        }
                store_epoch_end(s, (110 + 10 * e) * SEC);
        }
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, STORE_PID_ANY, NULL, ret_res), 0);
        assert_int_equal(ret_res->n, ELEMENTSOF(feds));
        assert_int_equal(cpu_profile_build(ret_res, &sym, PERIOD, gz), 0);
}

/* ---- reading it back ---- */

static const char *str(const Profile *p, int64_t i) {
        assert_true(i >= 0 && (size_t) i < p->n_string_table);
        return p->string_table[i];
}

static const Perftools__Profiles__Location *location(const Profile *p, uint64_t id) {
        assert_true(id >= 1 && id <= p->n_location);
        return p->location[id - 1];
}

static const char *function_name(const Profile *p, const Perftools__Profiles__Location *l) {
        if (l->n_line == 0)
                return NULL;
        assert_true(l->line[0]->function_id >= 1 && l->line[0]->function_id <= p->n_function);
        return str(p, p->function[l->line[0]->function_id - 1]->name);
}

static const char *label(const Profile *p, const Perftools__Profiles__Sample *s, const char *key) {
        for (size_t i = 0; i < s->n_label; i++)
                if (streq(str(p, s->label[i]->key), key)) {
                        assert_int_not_equal(s->label[i]->str, 0);
                        return str(p, s->label[i]->str);
                }
        return NULL;
}

/* The fed stack a sample is, by its pid and tid labels and functions; -1 when none. */
static int match(const Profile *p, const Perftools__Profiles__Sample *s) {
        char pid[16], tid[16];

        for (size_t i = 0; i < ELEMENTSOF(feds); i++) {
                const struct fed *f = &feds[i];
                bool same = s->n_location_id == f->n_want;

                snprintf(pid, sizeof(pid), "%" PRIu32, f->pid);
                snprintf(tid, sizeof(tid), "%" PRIu32, f->tid);
                same = same && streq(label(p, s, "pid"), pid) && streq(label(p, s, "tid"), tid);
                for (size_t j = 0; same && j < f->n_want; j++) {
                        const char *fn = function_name(p, location(p, s->location_id[j]));

                        same = (fn == NULL) == (f->want[j] == NULL) && (!fn || streq(fn, f->want[j]));
                }
                if (same)
                        return (int) i;
        }
        return -1;
}

/* The profile of snap's stacks (pid, or STORE_PID_ANY), built and unpacked; ret_res is the query's. */
static Profile *build_unpacked(const struct store_snapshot *snap, uint32_t pid, const struct profile_symbolizer *sym,
                               struct store_stacks_result *ret_res) {
        struct strbuf gz = STRBUF_INIT;
        Profile *p;

        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, pid, NULL, ret_res), 0);
        assert_int_equal(cpu_profile_build(ret_res, sym, PERIOD, &gz), 0);
        p = test_unpack_profile(&gz, 0, NULL);
        strbuf_done(&gz);
        return p;
}

static void test_profile(void **state) {
        struct fake_sym fs = {};
        struct strbuf gz = STRBUF_INIT;
        struct store_stacks_result res;
        bool seen[ELEMENTSOF(feds)] = {};
        uint64_t total_w = 0, total_c = 0;
        Profile *p;

        build(&fs, &gz, &res);
        p = test_unpack_profile(&gz, 0, NULL);

        /* Types and period as Go's CPU profile; cpu shown by default. */
        assert_int_equal(p->n_sample_type, 2);
        assert_string_equal(str(p, p->sample_type[0]->type), "samples");
        assert_string_equal(str(p, p->sample_type[0]->unit), "count");
        assert_string_equal(str(p, p->sample_type[1]->type), "cpu");
        assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
        assert_non_null(p->period_type);
        assert_string_equal(str(p, p->period_type->type), "cpu");
        assert_string_equal(str(p, p->period_type->unit), "nanoseconds");
        assert_int_equal(p->period, PERIOD);
        assert_string_equal(str(p, p->default_sample_type), "cpu");
        /* The two epochs, [100 s, 120 s) of the store's clock, as Unix time. */
        assert_int_equal(p->time_nanos, UNIX_OFFSET + 100 * (int64_t) SEC);
        assert_int_equal(p->duration_nanos, 20 * (int64_t) SEC);

        assert_int_equal(p->n_sample, ELEMENTSOF(feds));
        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *s = p->sample[i];
                int k = match(p, s);
                const struct fed *f;

                assert_true(k >= 0);
                assert_false(seen[k]);
                seen[k] = true;
                f = &feds[k];
                assert_int_equal(s->n_value, 2);
                assert_int_equal(s->value[0], f->count[0] + f->count[1]);
                assert_int_equal(s->value[1], fed_weight((size_t) k, 0) + fed_weight((size_t) k, 1));
                total_c += (uint64_t) s->value[0];
                total_w += (uint64_t) s->value[1];
                /* Labels: as fed, empty ones absent. */
                assert_string_equal(label(p, s, "comm"), f->comm);
                if (f->thread[0])
                        assert_string_equal(label(p, s, "thread"), f->thread);
                else
                        assert_null(label(p, s, "thread"));
                if (f->cgroup[0]) {
                        assert_string_equal(label(p, s, "cgroup"), f->cgroup);
                        assert_string_equal(label(p, s, "service"), f->service);
                } else {
                        assert_null(label(p, s, "cgroup"));
                        assert_null(label(p, s, "service"));
                }
                /* Addresses as fed, but the collapsed kernel run; mappings with the fed files. */
                for (size_t j = 0; j < s->n_location_id; j++) {
                        const Perftools__Profiles__Location *l = location(p, s->location_id[j]);
                        const char *fn = function_name(p, l);

                        if (fn && streq(fn, CPU_PROFILE_KERNEL_FUNCTION)) {
                                assert_int_equal(l->mapping_id, 0);
                                assert_true(l->address == STORE_KERNEL_FRAME);
                                continue;
                        }
                        if (l->address >> 63 || l->address >= 0x7f0000000000) {
                                assert_int_equal(l->mapping_id, 0);
                                continue;
                        }
                        assert_true(l->mapping_id >= 1 && l->mapping_id <= p->n_mapping);
                        const Perftools__Profiles__Mapping *m = p->mapping[l->mapping_id - 1];
                        const struct fake_proc *fp = f->pid == 100 ? &procs[0] : &procs[1];

                        assert_string_equal(str(p, m->filename), fp->file);
                        assert_string_equal(str(p, m->build_id), fp->build_id);
                        assert_int_equal(m->memory_start, 0x400000);
                        assert_int_equal(m->memory_limit, 0x500000);
                        assert_int_equal(m->file_offset, 0x1000);
                        assert_true(m->has_functions);
                }
        }
        assert_int_equal(total_c, res.samples);
        assert_int_equal(total_w, res.weight);

        /* Two files, so 0x401010 is two locations; every location's id is its index + 1. */
        assert_int_equal(p->n_mapping, 2);
        unsigned at_401010 = 0;
        for (size_t i = 0; i < p->n_location; i++) {
                assert_int_equal(p->location[i]->id, i + 1);
                at_401010 += p->location[i]->address == 0x401010;
        }
        assert_int_equal(at_401010, 2);

        /* The symbolizer was asked once per distinct (pid, looked-up address), the kernel's for all pids:
         * pid 100 {0x401010, 0x40201f, 0x40302f, 0x402000, 0x40300f}, pid 200 {0x401010, 0x40201f,
         * 0x40302f, 0x401020, 0x402fff, 0x40303f}, the kernel {the named pc, the two callers' byte
         * before}, never for the withheld STORE_KERNEL_FRAME, pid 300 {0x7f0000001000, 0x7f0000001fff}. */
        assert_int_equal(fs.calls, 5 + 6 + 3 + 2);

        perftools__profiles__profile__free_unpacked(p, NULL);
        store_stacks_result_done(&res);
        strbuf_done(&gz);
}

/*
 * With kernel addresses withheld (the default), no upper-half address is
 * in the profile, wherever a stack holds one: the kernel part, the leaf of
 * the user part (x86-64's vsyscall page is user code at a kernel address),
 * the middle of a user chain an unwinder walked into garbage. Each is the
 * one "[kernel]" location, and the symbolizer (which would name any of
 * them, as the daemon's does with SYMBOLS_KERNEL_NAME) is never asked.
 */
static void test_kernel_withheld(void **state) {
        static const uint64_t vsyscall = UINT64_C(0xffffffffff600400);
        static const struct {
                uint64_t frames[MAX_FRAMES];
                size_t n;
                bool kernel;
                const char *want[MAX_FRAMES];
                size_t n_want;
        } stacks[] = {
                { { KERNEL_NAMED + 0x10, KERNEL_A, 0x402000 }, 3, true,
                  { CPU_PROFILE_KERNEL_FUNCTION, "ngx_outer" }, 2 },
                { { vsyscall, 0x401010, 0x403030 }, 3, false,
                  { CPU_PROFILE_KERNEL_FUNCTION, "ngx_inner", "main" }, 3 },
                { { 0x401010, KERNEL_NAMED + 0x20, 0x403030 }, 3, false,
                  { "ngx_inner", CPU_PROFILE_KERNEL_FUNCTION, "main" }, 3 },
        };
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        struct fake_sym fs = {};
        const struct profile_symbolizer sym = { fake_locate, &fs };     /* privacy NULL: the default */
        struct store_stacks_result res;
        unsigned matched = 0;
        Profile *p;

        store_options_init(&o);
        assert_int_equal(store_new(&o, 100 * SEC, &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(stacks); i++)
                store_add_stack(s, &(struct store_stack_sample) {
                        .pid = 100, .tid = (uint32_t) (100 + i), .comm = "nginx",
                        .frames = stacks[i].frames, .n_frames = stacks[i].n,
                        .kernel = stacks[i].kernel, .weight = PERIOD,
                });
        store_epoch_end(s, 110 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        p = build_unpacked(snap, STORE_PID_ANY, &sym, &res);

        for (size_t i = 0; i < p->n_location; i++) {
                const Perftools__Profiles__Location *l = p->location[i];

                if (l->address >> 63) {
                        if (l->address != STORE_KERNEL_FRAME)
                                fail_msg("location %zu: kernel address 0x%" PRIx64 " in the profile", i, l->address);
                        assert_int_equal(l->mapping_id, 0);
                        assert_string_equal(function_name(p, l), CPU_PROFILE_KERNEL_FUNCTION);
                }
        }
        for (unsigned i = 0; i < fs.calls && i < ELEMENTSOF(fs.asked); i++)
                if (fs.asked[i] >> 63)
                        fail_msg("the symbolizer was asked for kernel address 0x%" PRIx64, fs.asked[i]);
        /* Each stack: its functions leaf first, a kernel run as one frame. */
        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *sm = p->sample[i];
                const char *tid = label(p, sm, "tid");
                size_t k = (size_t) (strtoul(tid, NULL, 10) - 100);

                assert_true(k < ELEMENTSOF(stacks));
                assert_int_equal(sm->n_location_id, stacks[k].n_want);
                for (size_t j = 0; j < stacks[k].n_want; j++)
                        assert_string_equal(function_name(p, location(p, sm->location_id[j])), stacks[k].want[j]);
                matched++;
        }
        assert_int_equal(matched, ELEMENTSOF(stacks));

        perftools__profiles__profile__free_unpacked(p, NULL);
        store_stacks_result_done(&res);
}

/*
 * A stack table of 4 entries under 10 distinct stacks: the samples it could
 * not hold are one sample of their own, so the profile's totals are the
 * interval's (store_stacks_result samples and weight, every sample counted
 * as it was added); a profile of one pid has no such sample (its share of
 * the drops is not known).
 */
static void test_dropped(void **state) {
        enum { DISTINCT = 10, TABLE = 4 };
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        uint64_t fed_samples = 0, fed_weight = 0;

        store_options_init(&o);
        o.stacks = TABLE;
        assert_int_equal(store_new(&o, 100 * SEC, &s), 0);
        for (uint32_t i = 0; i < DISTINCT; i++) {
                const uint64_t frames[] = { 0x401010 + i * 0x10, 0x403030 };

                for (uint32_t c = 0; c <= i; c++) {
                        store_add_stack(s, &(struct store_stack_sample) {
                                .pid = 100, .tid = 100, .comm = "nginx", .frames = frames, .n_frames = 2,
                                .weight = PERIOD + i,
                        });
                        fed_samples++;
                        fed_weight += PERIOD + i;
                }
        }
        store_epoch_end(s, 110 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);

        for (int filtered = 0; filtered <= 1; filtered++) {
                struct fake_sym fs = {};
                const struct profile_symbolizer sym = { fake_locate, &fs };
                struct store_stacks_result res;
                uint64_t samples = 0, weight = 0, stored = 0, dropped_samples = 0, dropped_weight = 0;
                unsigned dropped_seen = 0;
                Profile *p = build_unpacked(snap, filtered ? 100 : STORE_PID_ANY, &sym, &res);

                assert_int_equal(res.n, TABLE);
                assert_true(res.dropped > 0);
                assert_int_equal(res.samples, fed_samples);
                assert_int_equal(res.weight, fed_weight);
                for (size_t i = 0; i < res.n; i++)
                        stored += res.stacks[i].count;
                for (size_t i = 0; i < p->n_sample; i++) {
                        const Perftools__Profiles__Sample *sm = p->sample[i];
                        const Perftools__Profiles__Location *l = location(p, sm->location_id[0]);
                        const char *fn = function_name(p, l);

                        samples += (uint64_t) sm->value[0];
                        weight += (uint64_t) sm->value[1];
                        if (fn && streq(fn, CPU_PROFILE_DROPPED_FUNCTION)) {
                                dropped_seen++;
                                dropped_samples += (uint64_t) sm->value[0];
                                dropped_weight += (uint64_t) sm->value[1];
                                assert_int_equal(sm->n_location_id, 1);
                                assert_int_equal(sm->n_label, 0);
                                assert_true(l->mapping_id >= 1);
                                assert_string_equal(str(p, p->mapping[l->mapping_id - 1]->filename),
                                                    CPU_PROFILE_DROPPED_MAPPING);
                        }
                }
                if (filtered) {
                        assert_int_equal(dropped_seen, 0);
                        assert_int_equal(samples, stored);
                } else {
                        /* The table kept the first 4 stacks (1 + 2 + 3 + 4 samples); the other 45 went. */
                        assert_int_equal(dropped_seen, 1);
                        assert_int_equal(dropped_samples, fed_samples - 10);
                        assert_int_equal(samples, fed_samples);
                        assert_int_equal(weight, fed_weight);
                        assert_int_equal(dropped_weight, fed_weight - (10 * PERIOD + 1 * 2 + 2 * 3 + 3 * 4));
                }
                perftools__profiles__profile__free_unpacked(p, NULL);
                store_stacks_result_done(&res);
        }
}

static void test_errors(void **state) {
        struct store_stacks_result res = {};
        struct strbuf gz = STRBUF_INIT;

        assert_int_equal(cpu_profile_build(NULL, NULL, PERIOD, &gz), -EINVAL);
        assert_int_equal(cpu_profile_build(&res, NULL, 0, &gz), -EINVAL);
        assert_int_equal(cpu_profile_build(&res, NULL, PERIOD, NULL), -EINVAL);
        assert_int_equal(gz.len, 0);
        /* Empty: a valid profile with no sample. */
        assert_int_equal(cpu_profile_build(&res, NULL, PERIOD, &gz), 0);
        assert_true(gz.len > 2);
        strbuf_done(&gz);
}

/*
 * A mapping is has_functions when the symbolizer read its file, named or
 * not: a stripped file read whole gives its locations no name and is
 * symbolized all the same (pprof asks nobody else), a file that could not
 * be read is not (pprof reads it on its own host, then asks
 * /debug/pprof/symbol). The symbolizer's word, not the names, decides.
 */
static bool read_or_not_locate(void *userdata, uint32_t pid, uint64_t pc, struct profile_location *ret) {
        bool read = pc < 0x700000;

        *ret = (struct profile_location) {
                .has_mapping = true,
                .map_start = read ? 0x600000 : 0x700000,
                .map_limit = read ? 0x700000 : 0x800000,
                .filename = read ? "/usr/bin/stripped" : "/gone/libgone.so",
                .symbols_read = read,
        };
        return true;
}

static void test_has_functions_when_read(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        const struct profile_symbolizer sym = { read_or_not_locate, NULL };
        static const uint64_t frames[] = { 0x600010, 0x700020, 0x600030 };
        struct store_stacks_result res;
        struct store_options o;
        Profile *p;

        store_options_init(&o);
        assert_int_equal(store_new(&o, 100 * SEC, &s), 0);
        store_add_stack(s, &(struct store_stack_sample) {
                .pid = 42, .tid = 42, .comm = "app", .frames = frames, .n_frames = ELEMENTSOF(frames),
                .weight = PERIOD,
        });
        store_epoch_end(s, 110 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        p = build_unpacked(snap, STORE_PID_ANY, &sym, &res);
        assert_int_equal(p->n_mapping, 2);
        assert_int_equal(p->n_function, 0);
        for (size_t i = 0; i < p->n_mapping; i++) {
                bool read = streq(str(p, p->mapping[i]->filename), "/usr/bin/stripped");

                assert_true(read || streq(str(p, p->mapping[i]->filename), "/gone/libgone.so"));
                assert_int_equal(p->mapping[i]->has_functions, read);
                assert_false(p->mapping[i]->has_filenames);
        }
        perftools__profiles__profile__free_unpacked(p, NULL);
        store_stacks_result_done(&res);
}

/* ---- --write: the profile and the facts for test-cpu-profile.py ---- */

static int write_mode(const char *path) {
        struct fake_sym fs = {};
        struct strbuf gz = STRBUF_INIT;
        struct store_stacks_result res;
        FILE *f;

        build(&fs, &gz, &res);
        f = fopen(path, "we");
        if (!f || fwrite(gz.buf, 1, gz.len, f) != gz.len || fclose(f) != 0) {
                fprintf(stderr, "cannot write %s\n", path);
                return 1;
        }
        printf("period=%" PRIu64 "\nsamples=%" PRIu64 "\ncpu=%" PRIu64 "\nstacks=%zu\n", PERIOD, res.samples,
               res.weight, ELEMENTSOF(feds));
        for (size_t i = 0; i < ELEMENTSOF(feds); i++) {
                const struct fed *fd = &feds[i];

                printf("stack.%zu.count=%u\nstack.%zu.cpu=%" PRIu64 "\n", i, fd->count[0] + fd->count[1], i,
                       fed_weight(i, 0) + fed_weight(i, 1));
                printf("stack.%zu.labels=pid:%" PRIu32 ",tid:%" PRIu32 ",comm:%s", i, fd->pid, fd->tid, fd->comm);
                if (fd->thread[0])
                        printf(",thread:%s", fd->thread);
                if (fd->cgroup[0])
                        printf(",cgroup:%s,service:%s", fd->cgroup, fd->service);
                printf("\nstack.%zu.functions=", i);
                for (size_t j = 0; j < fd->n_want; j++)
                        printf("%s%s", j ? ";" : "", fd->want[j] ?: "?");
                printf("\n");
        }
        store_stacks_result_done(&res);
        strbuf_done(&gz);
        return 0;
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_profile),
                cmocka_unit_test(test_kernel_withheld),
                cmocka_unit_test(test_dropped),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_has_functions_when_read),
        };

        if (argc == 3 && streq(argv[1], "--write"))
                return write_mode(argv[2]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
