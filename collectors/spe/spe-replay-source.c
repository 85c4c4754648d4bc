/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-replay-source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "strbuf.h"

struct spe_replay_source {
        struct source base;             /* first: the seam's helpers cast */
        struct spe_replay_input in;
        char *name;
        struct spe_replay *replay;
        sd_event_source *io;            /* pipes and FIFOs */
        sd_event_source *more;          /* defer: more is ready without the fd saying so */
        enum source_state state;
        char reason[SOURCE_REASON_MAX];
        int result;
};

static struct spe_replay_source *of(struct source *s) {
        return (struct spe_replay_source *) s;
}

static void stop(struct spe_replay_source *r) {
        r->io = sd_event_source_disable_unref(r->io);
        r->more = sd_event_source_disable_unref(r->more);
}

static int replay_drain(struct source *s, size_t budget) {
        struct spe_replay_source *r = of(s);
        int k;

        if (!r->replay || r->state == SOURCE_DONE || r->state == SOURCE_FAILED)
                return 0;
        r->state = SOURCE_RUNNING;
        k = spe_replay_step(r->replay, budget);
        if (k == 1) {
                if (r->more)
                        (void) sd_event_source_set_enabled(r->more, SD_EVENT_ON);
                return 1;
        }
        if (k == -EAGAIN) {
                /* Nothing buffered, the pipe is empty: the I/O source wakes us. */
                if (r->more)
                        (void) sd_event_source_set_enabled(r->more, SD_EVENT_OFF);
                return 0;
        }
        r->result = k;
        if (k < 0) {
                r->state = SOURCE_FAILED;
                snprintf(r->reason, sizeof(r->reason), "%s", spe_replay_error(r->replay));
        } else
                r->state = SOURCE_DONE;
        stop(r);
        if (s->sink->state)
                s->sink->state(s->sink->userdata, s, r->state);
        return k < 0 ? k : 0;
}

static int on_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        (void) replay_drain(userdata, SPE_REPLAY_SOURCE_BUDGET);
        return 0;
}

static int on_more(sd_event_source *es, void *userdata) {
        (void) replay_drain(userdata, SPE_REPLAY_SOURCE_BUDGET);
        return 0;
}

static int replay_start(struct source *s, sd_event *event, const struct cpulist *cpus) {
        struct spe_replay_source *r = of(s);
        struct stat st;
        int k;

        if (r->replay)
                return -EALREADY;
        if (fstat(r->in.fd, &st) < 0) {
                k = -errno;
                goto fail;
        }
        k = spe_replay_new(&r->in, s->sink, s->tasks, &r->replay);
        if (k < 0)
                goto fail;
        /* Always ready when on; off while a pipe has nothing (the I/O source then wakes us). */
        k = sd_event_add_defer(event, &r->more, on_more, r);
        if (k < 0)
                goto fail;
        /*
         * Idle priority: sd-event keeps an enabled defer source pending with
         * its first pending iteration, so at equal priority it would always
         * be the oldest and starve the loop's timers and fds. At idle, each
         * step runs only when nothing else is ready: whatever became ready
         * meanwhile (the epoch timer, the watchdog, a live source) goes
         * first. A pipe's I/O source keeps normal priority.
         */
        (void) sd_event_source_set_priority(r->more, SD_EVENT_PRIORITY_IDLE);
        (void) sd_event_source_set_description(r->more, "replay-more");
        if (!S_ISREG(st.st_mode)) {
                k = sd_event_add_io(event, &r->io, r->in.fd, EPOLLIN, on_io, r);
                if (k < 0)
                        goto fail;
                (void) sd_event_source_set_description(r->io, "replay-input");
        }
        return 0;
fail:
        stop(r);
        r->state = SOURCE_FAILED;
        r->result = k;
        snprintf(r->reason, sizeof(r->reason), "%s: %s", r->name, strerror(-k));
        return k;
}

static void replay_status(struct source *s, struct source_status *ret) {
        struct spe_replay_source *r = of(s);
        size_t n;

        *ret = (struct source_status) {
                .kind = "replay",
                .state = r->state,
                .error = r->state == SOURCE_FAILED ? r->result : 0,
        };
        memcpy(ret->reason, r->reason, sizeof(ret->reason));
        if (!r->replay)
                return;
        ret->sample_period = spe_replay_sample_period(r->replay);
        /* Warnings judge a whole input: only once it was read. */
        if (r->state == SOURCE_DONE || r->state == SOURCE_FAILED)
                ret->n_warnings = spe_replay_warnings(r->replay, r->result, ret->warnings);
        n = spe_replay_n_cpus(r->replay);
        if (n == 0)
                return;
        ret->cpus = xcalloc(n, sizeof(*ret->cpus));
        for (size_t i = 0; i < n; i++)
                spe_replay_stream_stats(r->replay, i, &ret->cpus[i]);
        ret->n_cpus = n;
}

static void replay_free(struct source *s) {
        struct spe_replay_source *r = of(s);

        stop(r);
        spe_replay_free(r->replay);
        free(r->name);
        free(r);
}

static const struct source_ops replay_source_ops = {
        .kind = "replay",
        .start = replay_start,
        .drain = replay_drain,
        .status = replay_status,
        .free = replay_free,
};

int spe_replay_source_new(const struct spe_replay_input *in, const struct source_sink *sink,
                          struct task_map *tasks, struct source **ret) {
        struct spe_replay_source *r;

        if (!in || in->fd < 0 || !sink || !ret)
                return -EINVAL;
        r = xcalloc(1, sizeof(*r));
        r->base = (struct source) { .ops = &replay_source_ops, .sink = sink, .tasks = tasks };
        r->in = *in;
        r->name = xstrdup(in->name ?: "input");
        r->in.name = r->name;
        r->in.cancel_fd = -1;
        r->state = SOURCE_STARTING;
        *ret = &r->base;
        return 0;
}

struct spe_replay *spe_replay_source_replay(struct source *s) {
        return of(s)->replay;
}
