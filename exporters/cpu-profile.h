/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * CPU profiles with call stacks: the store's stack table over an interval
 * (store_query_stacks*()), symbolized, as a gzip-compressed profile.proto
 * shaped as Go's /debug/pprof/profile (runtime/pprof): sample types
 * samples/count and cpu/nanoseconds (cpu the default), period type
 * cpu/nanoseconds, period the sampling interval, time and duration the
 * interval's, one sample per stored stack with its locations leaf first.
 *
 * Labels are strings, as Parca and Pyroscope show them: pid, tid, comm,
 * thread, cgroup, service; empty ones are left out (a pid or tid is never
 * empty: pid 0 is the idle task). For a store that makes a series of each
 * distinct label set, cpu_profile_builder() with PROFILE_LABELS_SERVICE
 * (spe-profile.h) keeps the service only.
 *
 * Locations are one per (mapping, address), so the same address in two
 * processes' different files stays two locations; addresses are line-less.
 * Kernel frames (STORE_KERNEL_FRAME, or an address in the upper half, the
 * kernel's on x86-64 and arm64: Documentation/arch/x86/x86_64/mm.rst,
 * Documentation/arch/arm64/memory.rst) that the symbolizer does not name
 * become one "[kernel]" frame per run of them. A caller's frame (not the
 * sampled pc, nor the first user frame under kernel frames: both are where
 * the CPU was) is a return address, so it is named by the byte before it,
 * which lies in the call (profile.proto, Location.address: "A non-leaf
 * address may be in the middle of a call instruction").
 *
 * Symbols come through the same callback as the SPE profile's
 * (spe-profile.h), once per distinct (pid, address) of a build.
 */

#include <stdint.h>

#include "spe-profile.h"
#include "store.h"
#include "strbuf.h"

/* The function of kernel frames nobody named. */
#define CPU_PROFILE_KERNEL_FUNCTION "[kernel]"
/*
 * The one frame of the samples whose stacks the store's full tables could
 * not hold (store_stacks_result.dropped, [store] stacks), in a mapping of
 * its own: a profile of all stacks sums to the CPU time sampled, as Go's
 * runtime/pprof shows the samples it lost under runtime._LostExternalCode.
 * pprof takes a mapping named "[...]" for one it cannot symbolize.
 */
#define CPU_PROFILE_DROPPED_FUNCTION "[stacks beyond the table: [store] stacks]"
#define CPU_PROFILE_DROPPED_MAPPING "[armprofd]"

/*
 * sym may be NULL (no symbols). period_ns: the CPU time one sample stands
 * for (1e9 / frequency), > 0. Returns 0, -EINVAL (NULL r or ret_gz, zero
 * period), or pprof_finish()'s error; ret_gz is appended to on success only.
 */
int cpu_profile_build(const struct store_stacks_result *r, const struct profile_symbolizer *sym,
                      uint64_t period_ns, struct strbuf *ret_gz);
/*
 * The same for a sampling event that is not a clock (cycles,
 * instructions...): its second sample type and the period type are
 * `event`/count, each stack's value the events its samples stood for, and
 * the period the given one, or when 0 the mean period of the samples (the
 * kernel moves it to keep the frequency). event NULL: cpu_profile_build().
 */
int cpu_profile_build_event(const struct store_stacks_result *r, const struct profile_symbolizer *sym,
                            const char *event, uint64_t period, struct strbuf *ret_gz);

struct pprof_builder;

/*
 * The builder of cpu_profile_build_event()'s profile (event and period as
 * there), for pprof_finish_parts() (free it with pprof_builder_free()).
 * o NULL: PROFILE_LABELS_ALL and the interval's times, as
 * cpu_profile_build_event(). With PROFILE_LABELS_SERVICE a stack's
 * service (store_stack.service) weighs by its cpu (or event) value. The
 * builder owns copies of every string. Returns 0, -EINVAL, or a negative
 * errno (ret is then untouched).
 */
int cpu_profile_builder(const struct store_stacks_result *r, const struct profile_symbolizer *sym,
                        const char *event, uint64_t period, const struct profile_options *o,
                        struct pprof_builder **ret);
