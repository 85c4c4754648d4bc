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

static void stop(struct spe_replay_source *src) {
        src->io = sd_event_source_disable_unref(src->io);
        src->more = sd_event_source_disable_unref(src->more);
}

static int replay_drain(struct source *s, size_t budget) {
        struct spe_replay_source *src = of(s);
        int k;

        if (!src->replay || src->state == SOURCE_DONE || src->state == SOURCE_FAILED)
                return 0;
        src->state = SOURCE_RUNNING;
        k = spe_replay_step(src->replay, budget);
        if (k == 1) {
                if (src->more)
                        (void) sd_event_source_set_enabled(src->more, SD_EVENT_ON);
                return 1;
        }
        if (k == -EAGAIN) {
                /* Nothing buffered, the pipe is empty: the I/O source wakes us. */
                if (src->more)
                        (void) sd_event_source_set_enabled(src->more, SD_EVENT_OFF);
                return 0;
        }
        src->result = k;
        if (k < 0) {
                src->state = SOURCE_FAILED;
                snprintf(src->reason, sizeof(src->reason), "%s", spe_replay_error(src->replay));
        } else
                src->state = SOURCE_DONE;
        stop(src);
        if (s->sink->state)
                s->sink->state(s->sink->userdata, s, src->state);
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
        struct spe_replay_source *src = of(s);
        struct stat st;
        int k;

        if (src->replay)
                return -EALREADY;
        if (fstat(src->in.fd, &st) < 0) {
                k = -errno;
                goto fail;
        }
        k = spe_replay_new(&src->in, s->sink, s->tasks, &src->replay);
        if (k < 0)
                goto fail;
        /* Always ready when on; off while a pipe has nothing (the I/O source then wakes us). */
        k = sd_event_add_defer(event, &src->more, on_more, src);
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
        (void) sd_event_source_set_priority(src->more, SD_EVENT_PRIORITY_IDLE);
        (void) sd_event_source_set_description(src->more, "replay-more");
        if (!S_ISREG(st.st_mode)) {
                k = sd_event_add_io(event, &src->io, src->in.fd, EPOLLIN, on_io, src);
                if (k < 0)
                        goto fail;
                (void) sd_event_source_set_description(src->io, "replay-input");
        }
        return 0;
fail:
        stop(src);
        src->state = SOURCE_FAILED;
        src->result = k;
        snprintf(src->reason, sizeof(src->reason), "%s: %s", src->name, strerror(-k));
        return k;
}

static void replay_status(struct source *s, struct source_status *ret) {
        struct spe_replay_source *src = of(s);
        size_t n;

        *ret = (struct source_status) {
                .kind = "replay",
                .state = src->state,
                .error = src->state == SOURCE_FAILED ? src->result : 0,
        };
        memcpy(ret->reason, src->reason, sizeof(ret->reason));
        if (!src->replay)
                return;
        ret->sample_period = spe_replay_sample_period(src->replay);
        /* Warnings judge a whole input: only once it was read. */
        if (src->state == SOURCE_DONE || src->state == SOURCE_FAILED)
                ret->n_warnings = spe_replay_warnings(src->replay, src->result, ret->warnings);
        n = spe_replay_n_cpus(src->replay);
        if (n == 0)
                return;
        ret->cpus = xcalloc(n, sizeof(*ret->cpus));
        for (size_t i = 0; i < n; i++)
                spe_replay_stream_stats(src->replay, i, &ret->cpus[i]);
        ret->n_cpus = n;
}

static void replay_free(struct source *s) {
        struct spe_replay_source *src = of(s);

        stop(src);
        spe_replay_free(src->replay);
        free(src->name);
        free(src);
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
        struct spe_replay_source *src;

        if (!in || in->fd < 0 || !sink || !ret)
                return -EINVAL;
        src = xcalloc(1, sizeof(*src));
        src->base = (struct source) { .ops = &replay_source_ops, .sink = sink, .tasks = tasks };
        src->in = *in;
        src->name = xstrdup(in->name ?: "input");
        src->in.name = src->name;
        src->in.cancel_fd = -1;
        src->state = SOURCE_STARTING;
        *ret = &src->base;
        return 0;
}

struct spe_replay *spe_replay_source_replay(struct source *s) {
        return of(s)->replay;
}
