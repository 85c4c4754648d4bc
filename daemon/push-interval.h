/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What the push thread sends each interval (exporters/push.h's source):
 * the profiles of the store's epochs that closed since the previous
 * request, as one Pyroscope PushRequest.
 *
 * Live, each build first asks the collector to close an epoch now
 * (collector_request_epoch_end()), so a request covers exactly the time
 * since the previous one; a cursor (the end of the last epoch sent) makes
 * every epoch go out once, whatever the push interval and the epoch length.
 * A replay's epochs follow the file's clock: each request has those its
 * reading closed, stamped with the time they are pushed, since the store
 * refuses profiles older than its window (an hour by default).
 *
 * One series per profile kind with samples: the CPU profile ("process_cpu"
 * for a clock event, so Pyroscope shows it as CPU time) and SPE's ("spe"),
 * each labelled service_name, host, source, __delta__="false" (the profile
 * covers one interval: the store must not diff it against the previous
 * one) and [push] labels. A profile over [push] max_samples or
 * max_profile_bytes goes as several parts, the lightest samples trimmed
 * beyond PUSH_INTERVAL_MAX_PARTS parts. Each part has a random UUID, by
 * which the store recognizes a resend, and starts PUSH_INTERVAL_PART_STEP_NS
 * after the one before it (ending with the interval), since Pyroscope keeps
 * one profile of a series per millisecond timestamp when it reads them.
 */

#include <stdbool.h>

#include "collector.h"
#include "config.h"
#include "push.h"

/* Parts of one profile at most: 64 x 16,000 samples is far beyond any epoch table's size. */
#define PUSH_INTERVAL_MAX_PARTS 64
/* Part k of a profile starts k ms after the interval (pprof_part_limits.time_step_ns): 63 ms at most. */
#define PUSH_INTERVAL_PART_STEP_NS UINT64_C(1000000)
/* Samples carry a "service" label (a series in the store) for at most this many services, */
#define PUSH_INTERVAL_MAX_SERVICES 20
/* each with at least this share of the profile's weight, in permille. */
#define PUSH_INTERVAL_SERVICE_MIN_PERMILLE 10

struct push_interval;

/* Errors (labels that do not parse) go to err: -EINVAL. */
int push_interval_new(struct collector *c, const struct config *cfg, struct push_interval **ret, char *err,
                      size_t errlen);
/* Labels and limits from a reloaded configuration; the cursor stays (no epoch twice). No push may run. */
int push_interval_configure(struct push_interval *pi, const struct config *cfg, char *err, size_t errlen);
struct push_interval *push_interval_free(struct push_interval *pi);
/*
 * A push that starts while the daemon runs (a reload turned it on) sends
 * what is collected from now on: closes an epoch now and moves the cursor
 * to its end, so the first request covers one interval, not all the store
 * kept from before. On the main thread, no push running; waits for the
 * collector to close the epoch (milliseconds; PUSH_INTERVAL_WAIT_NS at most).
 */
void push_interval_begin_now(struct push_interval *pi);

/* The series' service_name: [push] service_name, else the host name. */
const char *push_interval_service_name(const struct push_interval *pi);

/* The push_source for push_new(). */
struct push_source push_interval_source(struct push_interval *pi);
