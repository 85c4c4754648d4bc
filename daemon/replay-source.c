/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "replay-source.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "log.h"
#include "macro.h"
#include "strbuf.h"

/*
 * Batches in flight between the reading thread and the loop: 64 batches of
 * at most SPE_REPLAY_BATCH records (about half a MiB). Full, the reader
 * waits, so a fast file is never read much ahead of the store.
 */
#define REPLAY_QUEUE_MAX 64
/* Records (or other items) handed to the sink per dispatch, so timers run between budgets. */
#define REPLAY_DRAIN_BUDGET 4096

enum item_kind {
        ITEM_RECORDS,
        ITEM_MAPPING,
        ITEM_CLOCK,
        ITEM_FEATURE,
};

struct item {
        struct item *next;
        enum item_kind kind;
        size_t n;                       /* RECORDS: records; FEATURE: bytes */
        struct spe_record *recs;        /* RECORDS: n, then pids and tids in the same block */
        uint32_t *pids, *tids;
        struct source_mapping mapping;  /* MAPPING: filename and build_id owned */
        char *filename;
        uint8_t *build_id;
        struct source_clock clock;      /* CLOCK */
        unsigned feat;                  /* FEATURE */
        uint8_t *data;
};

struct replay_source {
        struct source source;
        struct replay_args args;
        char *path;
        int fd;                         /* the input: the caller's */
        int notify_fd;                  /* eventfd: items queued, or the reader finished */
        int cancel_fd;                  /* eventfd: stops the reader's waits (spe_replay_input.cancel_fd) */
        sd_event_source *io;
        pthread_t reader;
        bool reader_started;

        pthread_mutex_t lock;           /* guards the queue and everything the reader leaves */
        pthread_cond_t not_full;
        struct item *head, *tail;
        size_t n_items;
        bool stopping;
        bool finished;                  /* the reader returned: final holds the outcome */
        struct source_status final;
        uint64_t build_ids_dropped;

        /* The loop's thread only. */
        enum source_state state;
};

static void item_free(struct item *i) {
        if (!i)
                return;
        free(i->recs);
        free(i->filename);
        free(i->build_id);
        free(i->data);
        free(i);
}

static void notify(int fd) {
        uint64_t one = 1;

        /* EAGAIN means the counter is already far from zero: the loop will wake anyway. */
        (void) !write(fd, &one, sizeof(one));
}

/* The reading thread: queue an item, waiting while the queue is full. */
static void push(struct replay_source *s, struct item *i) {
        bool was_empty;

        pthread_mutex_lock(&s->lock);
        while (s->n_items >= REPLAY_QUEUE_MAX && !s->stopping)
                pthread_cond_wait(&s->not_full, &s->lock);
        if (s->stopping) {
                pthread_mutex_unlock(&s->lock);
                item_free(i);
                return;
        }
        was_empty = !s->head;
        if (s->tail)
                s->tail->next = i;
        else
                s->head = i;
        s->tail = i;
        s->n_items++;
        pthread_mutex_unlock(&s->lock);
        /* The loop drains until the queue is empty (or re-arms itself): wake it when it may be idle. */
        if (was_empty)
                notify(s->notify_fd);
}

static void on_records(void *userdata, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                       size_t n) {
        struct item *i = xcalloc(1, sizeof(*i));
        uint8_t *block;

        i->kind = ITEM_RECORDS;
        i->n = n;
        block = xmalloc(n * (sizeof(*recs) + 2 * sizeof(uint32_t)) ?: 1);
        i->recs = (struct spe_record *) block;
        i->pids = (uint32_t *) (block + n * sizeof(*recs));
        i->tids = i->pids + n;
        memcpy(i->recs, recs, n * sizeof(*recs));
        memcpy(i->pids, pids, n * sizeof(*pids));
        memcpy(i->tids, tids, n * sizeof(*tids));
        push(userdata, i);
}

static void on_mapping(void *userdata, const struct spe_mapping *m) {
        struct item *i = xcalloc(1, sizeof(*i));

        i->kind = ITEM_MAPPING;
        i->filename = xstrdup(m->filename);
        if (m->build_id && m->build_id_len > 0) {
                i->build_id = xmalloc(m->build_id_len);
                memcpy(i->build_id, m->build_id, m->build_id_len);
        }
        i->mapping = (struct source_mapping) {
                .pid = m->pid,
                .start = m->start,
                .len = m->len,
                .pgoff = m->pgoff,
                .filename = i->filename,
                .build_id = i->build_id,
                .build_id_len = i->build_id ? m->build_id_len : 0,
        };
        push(userdata, i);
}

static void on_clock(void *userdata, const struct spe_replay_clock *c) {
        struct item *i = xcalloc(1, sizeof(*i));

        i->kind = ITEM_CLOCK;
        i->clock = source_clock_from_spe_replay(c);
        push(userdata, i);
}

static void on_feature(void *userdata, unsigned feat, const uint8_t *data, size_t len) {
        struct item *i = xcalloc(1, sizeof(*i));

        i->kind = ITEM_FEATURE;
        i->feat = feat;
        i->n = len;
        i->data = xmalloc(len ?: 1);
        memcpy(i->data, data, len);
        push(userdata, i);
}

/* What the loop reports once the input ended: the replay's outcome as a status. */
static void finish(struct replay_source *s, const struct spe_replay *r, int k) {
        struct source_status *st = &s->final;
        char warnings[REPLAY_WARNINGS_MAX][REPLAY_WARNING_LEN];
        uint64_t records = 0;
        bool complete;

        complete = replay_complete(r, k);
        st->n_warnings = replay_warnings(r, k, warnings);
        for (size_t i = 0; i < st->n_warnings; i++)
                snprintf(st->warnings[i], sizeof(st->warnings[i]), "%s", warnings[i]);
        st->n_cpus = spe_replay_n_cpus(r);
        st->cpus = xcalloc(st->n_cpus ?: 1, sizeof(*st->cpus));
        for (size_t i = 0; i < st->n_cpus; i++) {
                const struct spe_replay_cpu_stats *c = spe_replay_cpu(r, i);

                st->cpus[i] = (struct spe_stream_stats) {
                        .cpu = c->cpu,
                        .midr = c->midr,
                        .records = c->records,
                        .bytes = c->bytes,
                        .decoder = c->decoder,
                        .aux_records = c->aux_records,
                        .aux_truncated = c->aux_truncated,
                        .aux_collision = c->aux_collision,
                        .aux_partial = c->aux_partial,
                        .discontinuities = c->discontinuities,
                        .lost = c->lost,
                };
                records += c->records;
        }
        st->sample_period = spe_replay_sample_period(r);
        s->build_ids_dropped = spe_replay_build_ids_dropped(r);
        if (k < 0)
                snprintf(st->reason, sizeof(st->reason), "%s (%" PRIu64 " records decoded before it)",
                         spe_replay_error(r), records);
        else if (!complete)
                snprintf(st->reason, sizeof(st->reason), "%s: not all of its SPE data was decoded", s->args.path);
        st->state = k < 0 || !complete ? SOURCE_FAILED : SOURCE_DONE;
        st->error = k < 0 ? k : complete ? 0 : -EBADMSG;
}

static void *reader_main(void *userdata) {
        struct replay_source *s = userdata;
        struct spe_replay *r = NULL;
        int k;

        k = replay_run(&s->args, s->fd, s->cancel_fd,
                       &(struct spe_sink) { .userdata = s, .records = on_records, .mapping = on_mapping,
                                            .clock = on_clock, .feature = on_feature },
                       &r);
        pthread_mutex_lock(&s->lock);
        finish(s, r, k);
        s->finished = true;
        pthread_mutex_unlock(&s->lock);
        spe_replay_free(r);
        notify(s->notify_fd);
        return NULL;
}

static void deliver(struct replay_source *s, const struct item *i) {
        const struct source_sink *sink = s->source.sink;

        switch (i->kind) {
        case ITEM_RECORDS:
                sink->records(sink->userdata, i->recs, i->pids, i->tids, i->n);
                break;
        case ITEM_MAPPING:
                if (sink->mapping)
                        sink->mapping(sink->userdata, &i->mapping);
                break;
        case ITEM_CLOCK:
                if (sink->clock)
                        sink->clock(sink->userdata, &i->clock);
                break;
        case ITEM_FEATURE:
                if (sink->feature)
                        sink->feature(sink->userdata, i->feat, i->data, i->n);
                break;
        }
}

static int replay_drain(struct source *src, size_t budget) {
        struct replay_source *s = (struct replay_source *) src;
        const struct source_sink *sink = s->source.sink;
        size_t done = 0;
        bool finished;

        if (s->state != SOURCE_RUNNING)
                return 0;
        for (;;) {
                struct item *i;

                pthread_mutex_lock(&s->lock);
                i = s->head;
                if (i) {
                        s->head = i->next;
                        if (!s->head)
                                s->tail = NULL;
                        s->n_items--;
                        pthread_cond_signal(&s->not_full);
                }
                /* Read with the pop: finished and an empty queue means every item was delivered. */
                finished = s->finished;
                pthread_mutex_unlock(&s->lock);
                if (!i)
                        break;
                deliver(s, i);
                done += i->kind == ITEM_RECORDS ? i->n : 1;
                item_free(i);
                if (done >= budget) {
                        /* More may be queued: come back after whatever else is due, whoever called. */
                        notify(s->notify_fd);
                        return 1;
                }
        }
        if (!finished)
                return 0;

        pthread_mutex_lock(&s->lock);
        s->state = s->final.state;
        pthread_mutex_unlock(&s->lock);
        if (s->build_ids_dropped > 0)
                log_warning("replay: %" PRIu64 " build-id table entries beyond the bound were left out; "
                            "their files are named without a build-id check", s->build_ids_dropped);
        if (sink->state)
                sink->state(sink->userdata, src, s->state);
        return 0;
}

static int on_notify(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        struct replay_source *s = userdata;
        uint64_t v;

        (void) !read(fd, &v, sizeof(v));
        (void) replay_drain(&s->source, REPLAY_DRAIN_BUDGET);
        return 0;
}

static int replay_start(struct source *src, sd_event *event, const struct cpulist *cpus) {
        struct replay_source *s = (struct replay_source *) src;
        int k;

        k = sd_event_add_io(event, &s->io, s->notify_fd, EPOLLIN, on_notify, s);
        if (k < 0)
                return k;
        (void) sd_event_source_set_description(s->io, "replay");
        k = -pthread_create(&s->reader, NULL, reader_main, s);
        if (k < 0) {
                s->io = sd_event_source_disable_unref(s->io);
                return k;
        }
        s->reader_started = true;
        s->state = SOURCE_RUNNING;
        return 0;
}

static void replay_status(struct source *src, struct source_status *ret) {
        struct replay_source *s = (struct replay_source *) src;

        *ret = (struct source_status) { .kind = "replay", .state = s->state };
        if (s->state != SOURCE_DONE && s->state != SOURCE_FAILED)
                return;
        /* Past the end the reader is gone: final no longer changes. */
        *ret = s->final;
        ret->kind = "replay";
        ret->cpus = xmalloc((s->final.n_cpus ?: 1) * sizeof(*ret->cpus));
        memcpy(ret->cpus, s->final.cpus, s->final.n_cpus * sizeof(*ret->cpus));
}

static void replay_free(struct source *src) {
        struct replay_source *s = (struct replay_source *) src;

        if (s->reader_started) {
                pthread_mutex_lock(&s->lock);
                s->stopping = true;
                pthread_cond_broadcast(&s->not_full);
                pthread_mutex_unlock(&s->lock);
                /* A read waiting for a FIFO's writer ends with -ECANCELED. */
                notify(s->cancel_fd);
                pthread_join(s->reader, NULL);
        }
        s->io = sd_event_source_disable_unref(s->io);
        while (s->head) {
                struct item *i = s->head;

                s->head = i->next;
                item_free(i);
        }
        source_status_done(&s->final);
        safe_close(s->notify_fd);
        safe_close(s->cancel_fd);
        pthread_cond_destroy(&s->not_full);
        pthread_mutex_destroy(&s->lock);
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
        s->args = *a;
        s->args.path = s->path;
        s->fd = fd;
        s->state = SOURCE_STARTING;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->not_full, NULL);
        s->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        s->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->notify_fd < 0 || s->cancel_fd < 0) {
                k = -errno;
                replay_free(&s->source);
                return k;
        }
        *ret = &s->source;
        return 0;
}
