/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "push-interval.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "pprof.h"
#include "push-request.h"
#include "store.h"

/* How long a build waits for the epoch it asked for (the collector closes it within milliseconds); the last, at a stop, less. */
#define PUSH_INTERVAL_WAIT_NS (2 * NSEC_PER_SEC)
#define PUSH_INTERVAL_FINAL_WAIT_NS (500 * NSEC_PER_USEC * USEC_PER_MSEC)
#define PUSH_INTERVAL_POLL_USEC (10 * USEC_PER_MSEC)

struct push_interval {
        struct collector *collector;
        char host[256];
        char *service_name;
        struct push_label *labels;
        size_t n_labels;
        uint32_t max_samples;
        uint64_t max_profile_bytes;

        /* The push thread's (one push runs at a time). */
        uint64_t cursor_ns;             /* store clock: the end of the last epoch sent, 0 none */
        uint64_t last_wall_ns;          /* Unix ns of the previous build, or of the start */
        bool told_spanless;
};

static uint64_t wall_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

int push_interval_configure(struct push_interval *pi, const struct config *cfg, char *err, size_t errlen) {
        struct push_label *labels = NULL;
        size_t n = 0;
        int r;

        r = push_labels_parse(cfg->push.labels, &labels, &n, err, errlen);
        if (r < 0)
                return r;
        push_labels_free(pi->labels, pi->n_labels);
        pi->labels = labels;
        pi->n_labels = n;
        free(pi->service_name);
        pi->service_name = xstrdup(cfg->push.service_name[0] ? cfg->push.service_name : pi->host);
        pi->max_samples = cfg->push.max_samples;
        pi->max_profile_bytes = cfg->push.max_profile_bytes;
        return 0;
}

int push_interval_new(struct collector *c, const struct config *cfg, struct push_interval **ret, char *err,
                      size_t errlen) {
        struct push_interval *pi = xcalloc(1, sizeof(*pi));
        int r;

        pi->collector = c;
        if (gethostname(pi->host, sizeof(pi->host) - 1) < 0 || !pi->host[0])
                snprintf(pi->host, sizeof(pi->host), "localhost");
        pi->last_wall_ns = wall_ns();
        r = push_interval_configure(pi, cfg, err, errlen);
        if (r < 0) {
                push_interval_free(pi);
                return r;
        }
        *ret = pi;
        return 0;
}

struct push_interval *push_interval_free(struct push_interval *pi) {
        if (!pi)
                return NULL;
        push_labels_free(pi->labels, pi->n_labels);
        free(pi->service_name);
        free(pi);
        return NULL;
}

/* Live: closes an epoch now and waits until it is published, so the request ends now. */
static void close_epoch_now(struct push_interval *pi, uint64_t wait_ns) {
        uint64_t at = collector_now_ns(pi->collector), give_up = at + wait_ns;

        if (!collector_request_epoch_end(pi->collector, at))
                return; /* a replay (its epochs follow the file), or too many pending: the regular ends */
        for (;;) {
                _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = collector_snapshot(pi->collector);

                if ((snap && store_snapshot_end_ns(snap) >= at) || collector_now_ns(pi->collector) >= give_up)
                        return;
                usleep(PUSH_INTERVAL_POLL_USEC);
        }
}

void push_interval_begin_now(struct push_interval *pi) {
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;

        close_epoch_now(pi, PUSH_INTERVAL_WAIT_NS);
        snap = collector_snapshot(pi->collector);
        /* A replay's too: what it read before the push began is not the push's. */
        pi->cursor_ns = snap ? store_snapshot_end_ns(snap) : 0;
        pi->last_wall_ns = wall_ns();
}

/* A metric name from an event's ("cache-misses" → "cache_misses"): Pyroscope refuses "-" in names. */
static void metric_name(const char *prefix, const char *event, char *buf, size_t len) {
        snprintf(buf, len, "%s%s", prefix, event);
        for (char *c = buf; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
                        *c = '_';
}

struct series {
        struct push_label labels[PUSH_LABELS_MAX];
        size_t n_labels;
        struct pprof_parts parts;
        char (*ids)[37];
        const char **id_ptrs;
};

static int add_series(struct push_interval *pi, struct series *s, struct pprof_builder *b, const char *name,
                      const char *source, struct push_request *req) {
        const struct pprof_part_limits lim = {
                .max_samples = pi->max_samples,
                .max_bytes = pi->max_profile_bytes,
                .max_parts = PUSH_INTERVAL_MAX_PARTS,
                .time_step_ns = PUSH_INTERVAL_PART_STEP_NS,
        };
        int r;

        r = pprof_finish_parts(b, &lim, &s->parts);
        if (r < 0)
                return r;
        if (s->parts.n > 1)
                req->split_profiles++;
        req->trimmed_samples += s->parts.trimmed_samples;
        s->ids = xcalloc(s->parts.n, sizeof(*s->ids));
        s->id_ptrs = xcalloc(s->parts.n, sizeof(*s->id_ptrs));
        for (size_t i = 0; i < s->parts.n; i++) {
                push_uuid4(s->ids[i]);
                s->id_ptrs[i] = s->ids[i];
        }
#define LABEL(n, v) s->labels[s->n_labels++] = (struct push_label) { (char *) (n), (char *) (v) }
        LABEL("__name__", name);
        LABEL("service_name", pi->service_name);
        LABEL("host", pi->host);
        LABEL("source", source);
        LABEL("__delta__", "false");
#undef LABEL
        for (size_t i = 0; i < pi->n_labels && s->n_labels < PUSH_LABELS_MAX; i++)
                s->labels[s->n_labels++] = pi->labels[i];
        return 0;
}

static void series_done(struct series *s) {
        pprof_parts_done(&s->parts);
        free(s->ids);
        free(s->id_ptrs);
}

static int build(void *userdata, bool final, struct push_request *ret) {
        struct push_interval *pi = userdata;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        struct collector_push_profiles prof;
        struct series series[2] = {};
        struct push_series ps[2];
        const struct store_clock *clock;
        struct profile_options o = {
                .labels = PROFILE_LABELS_SERVICE,
                .service_min_permille = PUSH_INTERVAL_SERVICE_MIN_PERMILLE,
                .max_services = PUSH_INTERVAL_MAX_SERVICES,
        };
        char cpu_name[64], err[MESSAGE_MAX];
        uint64_t end, start, now = wall_ns();
        size_t n = 0;
        bool live;
        int r;

        close_epoch_now(pi, final ? PUSH_INTERVAL_FINAL_WAIT_NS : PUSH_INTERVAL_WAIT_NS);
        snap = collector_snapshot(pi->collector);
        if (!snap)
                return 0;
        end = store_snapshot_end_ns(snap);
        if (end == 0 && store_snapshot_epochs(snap) > 0 && !pi->told_spanless) {
                /* replay-clock.h: a file without timestamps is one epoch with no span, which no span query finds. */
                log_warning("push: the replayed file has no timestamps: its samples are not pushed");
                pi->told_spanless = true;
        }
        if (end <= pi->cursor_ns)
                return 0;
        start = pi->cursor_ns;
        clock = store_snapshot_clock(snap);
        /* A replay's times are the recording's (its clock data), however recent its epochs. */
        live = !collector_replaying(pi->collector) && clock->kind == STORE_CLOCK_UNIX && !clock->frozen;
        if (!live) {
                /* A replay: pushed now, the store takes no profile from an old recording's time. */
                o.time_nanos = pi->last_wall_ns;
                /* 1 ns when the wall clock stepped back: never an underflow's centuries. */
                o.duration_nanos = now > pi->last_wall_ns ? now - pi->last_wall_ns : 1;
        }
        ret->time_ns = live && start ? (uint64_t) ((int64_t) start + clock->unix_offset_ns) : pi->last_wall_ns;
        /* Whatever happens below, these epochs are done with: an interval that fails is not retried forever. */
        pi->cursor_ns = end;
        pi->last_wall_ns = now;

        r = collector_push_profiles(pi->collector, snap, start, end, &o, &prof);
        if (r < 0)
                return log_warning_errno(r, "push: cannot build the interval's profiles: %m");
        if (prof.cpu) {
                if (prof.cpu_is_time)
                        snprintf(cpu_name, sizeof(cpu_name), "process_cpu");
                else
                        metric_name("perf_", prof.cpu_event, cpu_name, sizeof(cpu_name));
                r = add_series(pi, &series[n++], prof.cpu, cpu_name, prof.cpu_event, ret);
        }
        if (r >= 0 && prof.spe)
                r = add_series(pi, &series[n++], prof.spe, "spe", "spe", ret);
        collector_push_profiles_done(&prof);
        for (size_t i = 0; r >= 0 && i < n; i++)
                ps[i] = (struct push_series) {
                        .labels = series[i].labels,
                        .n_labels = series[i].n_labels,
                        .profiles = series[i].parts.parts,
                        .ids = series[i].id_ptrs,
                        .n_profiles = series[i].parts.n,
                };
        if (r >= 0 && n > 0) {
                r = push_request_encode(ps, n, &ret->body, err, sizeof(err));
                if (r < 0)
                        log_warning("push: cannot encode the interval's request: %s", err);
        }
        for (size_t i = 0; i < n; i++)
                series_done(&series[i]);
        if (r < 0)
                return r;
        return n > 0; /* the last (final) request is built as any other */
}

const char *push_interval_service_name(const struct push_interval *pi) {
        return pi->service_name;
}

struct push_source push_interval_source(struct push_interval *pi) {
        return (struct push_source) { .build = build, .userdata = pi };
}
