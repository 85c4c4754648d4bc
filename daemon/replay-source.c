/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "replay-source.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "log.h"
#include "macro.h"
#include "spe-replay-source.h"
#include "strbuf.h"

/*
 * The daemon's view of spe_replay_source (collectors/spe): the same source,
 * with what the daemon adds to a replay's end: an input whose SPE data did
 * not all reach a decoder is a failure (as for --once), a failure says how
 * many records decoded before it, and dropped build ids are logged.
 */
struct replay_source {
        struct source source;           /* what the collector holds; sink: the collector's */
        struct source *inner;           /* spe_replay_source_new()'s */
        struct source_sink inner_sink;  /* forwards to source.sink; catches the end */
        char *path;
        sd_event_source *failed_start;  /* defer: reports a start that failed, from the loop */
        enum source_state state;        /* STARTING/RUNNING: the inner's; then the verdict */
        char reason[SOURCE_REASON_MAX];
        int error;
};

static struct replay_source *of(struct source *s) {
        return (struct replay_source *) s;
}

static void fwd_records(void *userdata, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                        size_t n) {
        const struct source_sink *k = of(userdata)->source.sink;

        k->records(k->userdata, recs, pids, tids, n);
}

static void fwd_mapping(void *userdata, const struct source_mapping *m) {
        const struct source_sink *k = of(userdata)->source.sink;

        if (k->mapping)
                k->mapping(k->userdata, m);
}

static void fwd_task(void *userdata, const struct source_task *t) {
        const struct source_sink *k = of(userdata)->source.sink;

        if (k->task)
                k->task(k->userdata, t);
}

static void fwd_clock(void *userdata, const struct source_clock *c) {
        const struct source_sink *k = of(userdata)->source.sink;

        if (k->clock)
                k->clock(k->userdata, c);
}

static void fwd_feature(void *userdata, unsigned feat, const uint8_t *data, size_t len) {
        const struct source_sink *k = of(userdata)->source.sink;

        if (k->feature)
                k->feature(k->userdata, feat, data, len);
}

/* The inner source ended: the daemon's verdict, then the collector hears of it. */
static void end(struct replay_source *s, enum source_state state, const char *reason, int error) {
        const struct spe_replay *replay = spe_replay_source_replay(s->inner);
        const struct source_sink *k = s->source.sink;
        struct source_status st;
        uint64_t records = 0;

        source_status(s->inner, &st);
        for (size_t i = 0; i < st.n_cpus; i++)
                records += st.cpus[i].records;
        source_status_done(&st);
        if (state == SOURCE_FAILED) {
                snprintf(s->reason, sizeof(s->reason), "%s (%" PRIu64 " records decoded before it)", reason, records);
                s->error = error < 0 ? error : -EIO;
        } else if (replay && !replay_complete(replay, 0)) {
                state = SOURCE_FAILED;
                snprintf(s->reason, sizeof(s->reason), "%s: not all of its SPE data was decoded", s->path);
                s->error = -EBADMSG;
        }
        s->state = state;
        if (replay && spe_replay_build_ids_dropped(replay) > 0)
                log_warning("replay: %" PRIu64 " build-id table entries beyond the bound were left out; "
                            "their files are named without a build-id check", spe_replay_build_ids_dropped(replay));
        if (k->state)
                k->state(k->userdata, &s->source, s->state);
}

static void fwd_state(void *userdata, struct source *inner, enum source_state state) {
        struct replay_source *s = of(userdata);
        struct source_status st;

        if (state != SOURCE_DONE && state != SOURCE_FAILED)
                return;
        source_status(inner, &st);
        end(s, state, st.reason, st.error);
        source_status_done(&st);
}

static int on_failed_start(sd_event_source *es, void *userdata) {
        struct replay_source *s = userdata;
        struct source_status st;

        s->failed_start = sd_event_source_disable_unref(s->failed_start);
        source_status(s->inner, &st);
        end(s, SOURCE_FAILED, st.reason, st.error);
        source_status_done(&st);
        return 0;
}

static int replay_start(struct source *src, sd_event *event, const struct cpulist *cpus) {
        struct replay_source *s = of(src);
        int k;

        k = source_start(s->inner, event, cpus);
        if (k >= 0)
                return 0;
        /* An input that cannot be read fails as one that breaks later: from the loop, after READY. */
        k = sd_event_add_defer(event, &s->failed_start, on_failed_start, s);
        if (k < 0)
                return k;
        return sd_event_source_set_enabled(s->failed_start, SD_EVENT_ONESHOT);
}

static int replay_drain(struct source *src, size_t budget) {
        return source_drain(of(src)->inner, budget);
}

static void replay_status(struct source *src, struct source_status *ret) {
        struct replay_source *s = of(src);

        source_status(s->inner, ret);
        if (s->state != SOURCE_DONE && s->state != SOURCE_FAILED)
                return;
        ret->state = s->state;
        ret->error = s->error;
        if (s->state == SOURCE_FAILED)
                snprintf(ret->reason, sizeof(ret->reason), "%s", s->reason);
}

static void replay_free(struct source *src) {
        struct replay_source *s = of(src);

        s->failed_start = sd_event_source_disable_unref(s->failed_start);
        source_free(s->inner);
        free(s->path);
        free(s);
}

static const struct source_ops replay_ops = {
        .kind = "replay",
        .start = replay_start,
        .drain = replay_drain,
        .status = replay_status,
        .free = replay_free,
};

int replay_source_new(const struct replay_args *a, int fd, const struct source_sink *sink, struct task_map *tasks,
                      struct source **ret) {
        struct replay_source *s = xcalloc(1, sizeof(*s));
        int k;

        s->source = (struct source) { .ops = &replay_ops, .sink = sink, .tasks = tasks };
        s->path = xstrdup(a->path);
        s->state = SOURCE_STARTING;
        s->inner_sink = (struct source_sink) {
                .userdata = s,
                .records = fwd_records,
                .mapping = fwd_mapping,
                .task = fwd_task,
                .clock = fwd_clock,
                .feature = fwd_feature,
                .state = fwd_state,
        };
        k = spe_replay_source_new(&(struct spe_replay_input) {
                                          .fd = fd,
                                          .cancel_fd = -1,
                                          .name = streq(a->path, "-") ? "stdin" : a->path,
                                          .raw = a->raw,
                                          .raw_cpu = a->cpu,
                                          .raw_midr = a->midr,
                                  },
                                  &s->inner_sink, tasks, &s->inner);
        if (k < 0) {
                free(s->path);
                free(s);
                return k;
        }
        *ret = &s->source;
        return 0;
}
