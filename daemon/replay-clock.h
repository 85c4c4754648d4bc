/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A replay's time is the file's: its records' SPE timestamps, made perf
 * time by the file's TIME_CONV, drive the store's epochs, and the file's
 * last timestamp is "now" for good (the store's clock is frozen), so what
 * was replayed never ages out of a window. Intervals are Unix time when the
 * file has clock data (perf record -k CLOCK), else perf time, labelled
 * "perf". The clock data ties the chosen clock to the time of day while
 * TIME_CONV gives the kernel's perf clock: on arm64 both count from boot
 * (CLOCK_MONOTONIC and sched_clock), close but not equal, so such dates are
 * as good as that. A file without timestamps is one epoch with no span.
 *
 * This is the daemon's wiring between a replay source's sink and the
 * store, shared by --once (replay.c) and the daemon (collector.c).
 */

#include <stdbool.h>
#include <stdint.h>

#include "source.h"
#include "spe-rec.h"
#include "store.h"

struct replay_clock {
        struct store *store;
        uint64_t epoch_ns;              /* 0: the whole file is one epoch (--once) */
        /* Closes an epoch at end_ns (the collector folds it into its histograms too). */
        void (*epoch_end)(void *userdata, uint64_t end_ns);
        void *userdata;

        struct source_clock file;
        bool started, closed;
        uint64_t epoch_start_ns, last_ns;
};

/* Before store_add() of each record: closes the epochs its time has passed. */
void replay_clock_record(struct replay_clock *t, const struct spe_record *rec);
/* After the file: closes the last epoch at the file's end and freezes the store's clock. */
void replay_clock_finish(struct replay_clock *t);
/* A source_sink.clock callback; userdata is the struct replay_clock. */
void replay_clock_file(void *userdata, const struct source_clock *c);
