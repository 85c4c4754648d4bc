/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "replay-clock.h"

#include "macro.h"

void replay_clock_file(void *userdata, const struct source_clock *c) {
        struct replay_clock *t = userdata;

        t->file = *c;
}

static void replay_clock_close(struct replay_clock *t, uint64_t end_ns) {
        t->closed = true;
        if (t->epoch_end)
                t->epoch_end(t->userdata, end_ns);
        else
                store_epoch_end(t->store, end_ns);
}

void replay_clock_record(struct replay_clock *t, const struct spe_record *rec) {
        uint64_t ns, b;

        /* A record right after undecodable bytes may carry a timestamp made of them. */
        if (!t->file.has_time_conv || !(rec->present & SPE_REC_TIMESTAMP) || (rec->flags & SPE_REC_F_AFTER_ERROR))
                return;
        ns = source_clock_perf_ns(&t->file, rec->timestamp);
        if (!t->started) {
                t->started = true;
                t->epoch_start_ns = t->last_ns = ns;
                store_epoch_restart(t->store, ns);
                return;
        }
        t->last_ns = MAX(t->last_ns, ns);
        /* The first epoch starts at the earliest record (CPUs' AUX buffers come one after another). */
        if (!t->closed && ns < t->epoch_start_ns) {
                t->epoch_start_ns = ns;
                store_epoch_restart(t->store, ns);
        }
        /* Records a little out of order (AUX buffers of CPUs interleave) stay in the current epoch. */
        if (t->epoch_ns == 0 || ns < t->epoch_start_ns + t->epoch_ns)
                return;
        b = t->epoch_start_ns + t->epoch_ns;
        replay_clock_close(t, b);
        /* A gap of several epochs is one empty epoch: the ring holds epochs, not empty time. */
        if (ns >= b + t->epoch_ns) {
                b += (ns - b) / t->epoch_ns * t->epoch_ns;
                replay_clock_close(t, b);
        }
        t->epoch_start_ns = b;
}

void replay_clock_finish(struct replay_clock *t) {
        struct store_clock clock = { .kind = STORE_CLOCK_PERF, .frozen = true };

        if (!t->started)
                store_epoch_restart(t->store, 0);
        replay_clock_close(t, t->started ? t->last_ns + 1 : 0);
        if (t->file.has_clock_data) {
                clock.kind = STORE_CLOCK_UNIX;
                clock.unix_offset_ns = t->file.unix_minus_perf_ns;
        }
        store_set_clock(t->store, &clock);
}
