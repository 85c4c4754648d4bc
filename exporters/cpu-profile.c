/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cpu-profile.h"

#include <errno.h>
#include <string.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "pprof.h"
#include "privacy.h"

enum {
        VALUE_SAMPLES,
        VALUE_CPU,
        _VALUE_MAX,
};

/* As Go's runtime/pprof writes a CPU profile (runtime/pprof/proto.go). */
static const struct pprof_value_type sample_types[_VALUE_MAX] = {
        [VALUE_SAMPLES] = { "samples", "count" },
        [VALUE_CPU] = { "cpu", "nanoseconds" },
};

#define LOC_CACHE_MIN_SLOTS 256

/* (pid, address) -> location id: each distinct one asks the symbolizer once. */
struct loc_slot {
        uint64_t pc;
        uint32_t pid;
        uint64_t loc;           /* 0: empty */
        bool kernel_unnamed;    /* a kernel frame nobody named: runs of them are one "[kernel]" */
};

struct loc_cache {
        struct loc_slot *slot;
        size_t mask, n;
};

static uint64_t loc_hash(uint32_t pid, uint64_t pc) {
        uint64_t h = pc * UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t) pid + UINT64_C(0x632BE59BD9B4E019));

        h ^= h >> 33;
        h *= UINT64_C(0xFF51AFD7ED558CCD);
        h ^= h >> 33;
        return h;
}

static struct loc_slot *loc_find(struct loc_cache *c, uint32_t pid, uint64_t pc) {
        for (size_t i = loc_hash(pid, pc) & c->mask;; i = (i + 1) & c->mask) {
                struct loc_slot *s = &c->slot[i];

                if (s->loc == 0 || (s->pid == pid && s->pc == pc))
                        return s;
        }
}

/* Room for one more, load factor <= 1/2. */
static void loc_reserve(struct loc_cache *c) {
        struct loc_cache old = *c;
        size_t slots;

        if (c->slot && (c->n + 1) * 2 <= c->mask + 1)
                return;
        slots = c->slot ? (c->mask + 1) * 2 : LOC_CACHE_MIN_SLOTS;
        c->slot = xcalloc(slots, sizeof(struct loc_slot));
        c->mask = slots - 1;
        for (size_t i = 0; old.slot && i <= old.mask; i++)
                if (old.slot[i].loc)
                        *loc_find(c, old.slot[i].pid, old.slot[i].pc) = old.slot[i];
        free(old.slot);
}

static bool is_kernel(uint64_t pc) {
        return pc == STORE_KERNEL_FRAME || (pc >> 63) != 0;
}

/*
 * Whether pc must be the one unnamed "[kernel]" frame, never looked up:
 * STORE_KERNEL_FRAME, and any address in the upper half while [privacy]
 * withholds kernel addresses. The sampler's sink stores none of those, but
 * this is where the rule holds whatever a stack holds (a user stack that an
 * unwinder walked into garbage, the vsyscall page), since the symbolizer
 * names every upper-half address, known or not, and the location would
 * carry it.
 */
static bool kernel_withheld(const struct profile_symbolizer *sym, uint64_t pc) {
        /* el 1: every upper-half address is the kernel's here (is_kernel()), whatever its top byte. */
        return pc == STORE_KERNEL_FRAME || (is_kernel(pc) && !privacy_pc_shown(sym ? sym->privacy : NULL, 1, pc));
}

/*
 * The location of pc in pid (looked up at pc - 1 for a caller's frame):
 * mapping and function from the symbolizer while its strings are valid.
 */
static int resolve(struct pprof_builder *b, struct loc_cache *c, const struct profile_symbolizer *sym,
                   uint32_t pid, uint64_t pc, bool caller, struct loc_slot *ret) {
        bool kernel = is_kernel(pc);
        /* The kernel is the same in every process: one cache entry for all of them. */
        uint32_t key_pid = kernel ? 0 : pid;
        uint64_t key_pc;
        struct profile_location s = {};
        struct loc_slot *slot;
        uint64_t mapping = 0;
        bool named;
        int r;

        if (kernel_withheld(sym, pc))
                pc = STORE_KERNEL_FRAME;
        key_pc = caller && pc != STORE_KERNEL_FRAME && pc != 0 ? pc - 1 : pc;
        loc_reserve(c);
        slot = loc_find(c, key_pid, key_pc);
        if (slot->loc) {
                *ret = *slot;
                return 0;
        }
        named = pc != STORE_KERNEL_FRAME && sym && sym->locate(sym->userdata, pid, key_pc, &s);
        if (named && s.has_mapping)
                mapping = pprof_mapping(b, s.map_start, s.map_limit, s.map_pgoff, s.filename,
                                        s.build_id_hex && s.build_id_hex[0] ? s.build_id_hex : NULL,
                                        s.symbols_read);
        if (kernel && !(named && s.function && s.function[0])) {
                r = pprof_location(b, STORE_KERNEL_FRAME, 0, CPU_PROFILE_KERNEL_FUNCTION, &slot->loc);
                slot->kernel_unnamed = true;
        } else {
                /* A caller's lines are those of its call (key_pc), its location the return address. */
                r = named && s.n_lines > 0 ? pprof_location_lines(b, pc, mapping, s.lines, s.n_lines) : 0;
                if (r >= 0)
                        r = pprof_location(b, pc, mapping, named ? s.function : NULL, &slot->loc);
        }
        if (r < 0) {
                slot->loc = 0;
                return r;
        }
        slot->pid = key_pid;
        slot->pc = key_pc;
        c->n++;
        *ret = *slot;
        return 0;
}

/*
 * The samples the store's full stack tables could not hold, as one sample
 * of its own (CPU_PROFILE_DROPPED_FUNCTION): what the stored stacks leave
 * of the interval's totals. Not for stacks of one pid or cgroup, whose own
 * share of the drops is not known.
 */
static int add_dropped(struct pprof_builder *b, const struct store_stacks_result *r) {
        uint64_t count = 0, weight = 0, mapping, loc;
        int64_t values[_VALUE_MAX];
        int k;

        if (r->filtered || r->dropped == 0)
                return 0;
        for (size_t i = 0; i < r->n; i++) {
                count += r->stacks[i].count;
                weight += r->stacks[i].weight;
        }
        if (count + r->dropped != r->samples || weight > r->weight)
                return 0;       /* not the interval's whole: nothing to say of the rest */
        values[VALUE_SAMPLES] = (int64_t) r->dropped;
        values[VALUE_CPU] = (int64_t) (r->weight - weight);
        mapping = pprof_mapping(b, 0, 0, 0, CPU_PROFILE_DROPPED_MAPPING, NULL, true);
        k = pprof_location(b, 0, mapping, CPU_PROFILE_DROPPED_FUNCTION, &loc);
        if (k < 0)
                return k;
        return pprof_sample_stack(b, &loc, 1, values, NULL, 0);
}

static int64_t unix_ns(const struct store_interval *iv, uint64_t t) {
        return (int64_t) t + (iv->clock.kind == STORE_CLOCK_UNIX ? iv->clock.unix_offset_ns : 0);
}

int cpu_profile_build(const struct store_stacks_result *r, const struct profile_symbolizer *sym,
                      uint64_t period_ns, struct strbuf *ret_gz) {
        return cpu_profile_build_event(r, sym, NULL, period_ns, ret_gz);
}

int cpu_profile_build_event(const struct store_stacks_result *r, const struct profile_symbolizer *sym,
                            const char *event, uint64_t period, struct strbuf *ret_gz) {
        struct pprof_builder *b = NULL;
        int k;

        if (!ret_gz)
                return -EINVAL;
        k = cpu_profile_builder(r, sym, event, period, NULL, &b);
        if (k >= 0)
                k = pprof_finish(b, ret_gz);
        pprof_builder_free(b);
        return k < 0 ? k : 0;
}

int cpu_profile_builder(const struct store_stacks_result *r, const struct profile_symbolizer *sym,
                        const char *event, uint64_t period, const struct profile_options *o,
                        struct pprof_builder **ret) {
        struct pprof_value_type types[_VALUE_MAX];
        struct profile_service_weight *services = NULL;
        size_t n_services = 0;
        struct loc_cache cache = {};
        struct pprof_builder *b;
        uint64_t *locs = NULL;
        size_t cap_locs = 0;
        int k = 0;

        if (!r || !ret || (!event && period == 0) || period > INT64_MAX)
                return -EINVAL;
        memcpy(types, sample_types, sizeof(types));
        if (event) {
                uint64_t n = 0, w = 0;

                /* Events a sample stands for: the mean of what the kernel said (freq=1 moves it). */
                for (size_t i = 0; i < r->n; i++) {
                        n += r->stacks[i].count;
                        w += r->stacks[i].weight;
                }
                types[VALUE_CPU] = (struct pprof_value_type) { event, "count" };
                if (period == 0)
                        period = n ? w / n : 1;
        }
        /* time_nanos/duration_nanos: the interval, as Unix time by the store's clock (as spe-profile.c). */
        b = pprof_builder_new(types, _VALUE_MAX, &types[VALUE_CPU], (int64_t) period,
                              o && o->time_nanos ? o->time_nanos : (uint64_t) unix_ns(&r->iv, r->iv.start_ns),
                              o && o->duration_nanos ? o->duration_nanos : r->iv.end_ns - r->iv.start_ns);
        if (o && o->labels == PROFILE_LABELS_SERVICE) {
                /* Services weigh by the default sample type (cpu, or the event's count). */
                services = xcalloc(r->n ? r->n : 1, sizeof(*services));
                for (size_t i = 0; i < r->n; i++)
                        services[i] = (struct profile_service_weight) { r->stacks[i].service, r->stacks[i].weight };
                n_services = profile_services_pick(o, services, r->n);
        }
        /* Go's CPU profiles show cpu/nanoseconds unless told otherwise (pprof's default is the last type). */
        (void) pprof_set_default_sample_type(b, VALUE_CPU);

        for (size_t i = 0; i < r->n && k >= 0; i++) {
                const struct store_stack *st = &r->stacks[i];
                const int64_t values[_VALUE_MAX] = {
                        [VALUE_SAMPLES] = (int64_t) st->count,
                        [VALUE_CPU] = (int64_t) st->weight,
                };
                char pid[DECIMAL_STR_MAX(uint32_t)], tid[DECIMAL_STR_MAX(uint32_t)];
                struct pprof_label labels[6];
                size_t n_labels = 0, n = 0;
                bool prev_kernel_unnamed = false, seen_user = false;

                if (st->n_frames > cap_locs) {
                        cap_locs = st->n_frames;
                        locs = xrealloc(locs, cap_locs * sizeof(*locs));
                }
                for (size_t j = 0; j < st->n_frames && k >= 0; j++) {
                        uint64_t pc = st->frames[j];
                        bool kernel = is_kernel(pc);
                        struct loc_slot loc;

                        /* The sampled pc, and the first user frame (where the kernel was entered), are
                         * where the CPU was; every other frame is a return address. */
                        k = resolve(b, &cache, sym, st->pid, pc, kernel ? j > 0 : seen_user, &loc);
                        if (k < 0)
                                break;
                        seen_user = seen_user || !kernel;
                        if (loc.kernel_unnamed && prev_kernel_unnamed)
                                continue;
                        prev_kernel_unnamed = loc.kernel_unnamed;
                        locs[n++] = loc.loc;
                }
                if (k < 0)
                        break;

                if (o && o->labels == PROFILE_LABELS_SERVICE) {
                        if (st->service[0] && profile_service_kept(services, n_services, st->service))
                                labels[n_labels++] = (struct pprof_label) { .key = "service", .str = st->service };
                        k = pprof_sample_stack(b, locs, n, values, labels, n_labels);
                        continue;
                }
                snprintf(pid, sizeof(pid), "%" PRIu32, st->pid);
                snprintf(tid, sizeof(tid), "%" PRIu32, st->tid);
                labels[n_labels++] = (struct pprof_label) { .key = "pid", .str = pid };
                labels[n_labels++] = (struct pprof_label) { .key = "tid", .str = tid };
                if (st->comm[0])
                        labels[n_labels++] = (struct pprof_label) { .key = "comm", .str = st->comm };
                if (st->thread[0])
                        labels[n_labels++] = (struct pprof_label) { .key = "thread", .str = st->thread };
                if (st->cgroup[0])
                        labels[n_labels++] = (struct pprof_label) { .key = "cgroup", .str = st->cgroup };
                if (st->service[0])
                        labels[n_labels++] = (struct pprof_label) { .key = "service", .str = st->service };
                k = pprof_sample_stack(b, locs, n, values, labels, n_labels);
        }
        if (k >= 0)
                k = add_dropped(b, r);
        free(services);
        free(locs);
        free(cache.slot);
        if (k < 0) {
                pprof_builder_free(b);
                return k;
        }
        *ret = b;
        return 0;
}
