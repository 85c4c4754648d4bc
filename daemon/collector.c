/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "collector.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "strbuf.h"

#define COLLECTOR_MIN_STALE_USEC (5 * USEC_PER_SEC)
#define COLLECTOR_STALE_INTERVALS 3

struct view_ref {
        atomic_int refs;
        struct collector_view view; /* first member's address is what readers see */
};

struct collector {
        pthread_t thread;
        bool thread_started;
        int epoll_fd;
        int timer_fd;
        int stop_fd;

        /* Collector thread only. */
        struct collector_options opts;
        struct pmu_collector *pmu;
        char pmu_reason[256];
        int pmu_logged_state;
        uint64_t armed_usec;

        pthread_mutex_t lock; /* guards current, pending */
        struct view_ref *current;
        struct collector_options pending;
        bool has_pending;

        _Atomic uint64_t interval_usec;
        _Atomic uint64_t last_cycle_usec;
        _Atomic uint64_t cycles;
};

uint64_t now_monotonic_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static struct view_ref *view_of(const struct collector_view *v) {
        return (struct view_ref *) ((uint8_t *) v - offsetof(struct view_ref, view));
}

void collector_view_put(const struct collector_view *v) {
        struct view_ref *r;

        if (!v)
                return;
        r = view_of(v);
        if (atomic_fetch_sub(&r->refs, 1) == 1) {
                pmu_snapshot_free(r->view.pmu);
                free(r);
        }
}

const struct collector_view *collector_view_get(struct collector *c) {
        struct view_ref *r;

        pthread_mutex_lock(&c->lock);
        r = c->current;
        atomic_fetch_add(&r->refs, 1);
        pthread_mutex_unlock(&c->lock);
        return &r->view;
}

static void publish(struct collector *c, struct view_ref *r) {
        struct view_ref *old;

        atomic_store(&r->refs, 1);
        pthread_mutex_lock(&c->lock);
        old = c->current;
        c->current = r;
        pthread_mutex_unlock(&c->lock);
        if (old)
                collector_view_put(&old->view);
}

static void pmu_close(struct collector *c, const char *reason) {
        c->pmu = pmu_collector_free(c->pmu);
        snprintf(c->pmu_reason, sizeof(c->pmu_reason), "%s", reason);
}

static void pmu_open(struct collector *c) {
        enum pmu_event_id ids[_PMU_EVENT_MAX];
        size_t n = 0;
        int r;

        if (!c->opts.pmu_enable) {
                pmu_close(c, "disabled by configuration ([pmu] enable = no)");
                return;
        }
        for (int e = 0; e < _PMU_EVENT_MAX; e++)
                if (c->opts.pmu_events_mask & (UINT32_C(1) << e))
                        ids[n++] = (enum pmu_event_id) e;

        r = pmu_collector_new(&(struct pmu_collector_config) {
                                      .events = ids,
                                      .n_events = n,
                                      .general_counters = c->opts.pmu_general_counters,
                              },
                              &c->pmu);
        if (r < 0) {
                char reason[200];

                snprintf(reason, sizeof(reason), "cannot start counting: %s", strerror(-r));
                log_error("pmu: %s", reason);
                pmu_close(c, reason);
        }
        c->pmu_logged_state = -1;
}

/* One line per change of the collector's state, not one per interval. */
static void pmu_log_state(struct collector *c, const struct pmu_snapshot *s) {
        if ((int) s->state == c->pmu_logged_state)
                return;
        c->pmu_logged_state = (int) s->state;
        switch (s->state) {
        case PMU_STATE_OK:
                log_info("pmu: counting %zu CPUs", s->n_cpus);
                break;
        case PMU_STATE_DEGRADED:
                log_notice("pmu: counting %zu CPUs; %s", s->n_cpus, s->message);
                break;
        default:
                log_error("pmu: %s", s->message);
                break;
        }
}

static void cycle(struct collector *c) {
        struct view_ref *r = xcalloc(1, sizeof(*r));
        bool reconfigured = false;
        uint64_t want;

        pthread_mutex_lock(&c->lock);
        if (c->has_pending) {
                reconfigured = c->opts.pmu_enable != c->pending.pmu_enable ||
                               c->opts.pmu_events_mask != c->pending.pmu_events_mask ||
                               c->opts.pmu_general_counters != c->pending.pmu_general_counters;
                c->opts = c->pending;
                c->has_pending = false;
        }
        pthread_mutex_unlock(&c->lock);
        if (reconfigured) {
                pmu_close(c, "reconfiguring");
                pmu_open(c);
        }

        want = atomic_load(&c->interval_usec);
        if (want != c->armed_usec) {
                struct itimerspec its = {
                        .it_interval = { (time_t) (want / USEC_PER_SEC), (long) (want % USEC_PER_SEC) * 1000 },
                        .it_value = { (time_t) (want / USEC_PER_SEC), (long) (want % USEC_PER_SEC) * 1000 },
                };

                if (timerfd_settime(c->timer_fd, 0, &its, NULL) == 0)
                        c->armed_usec = want;
        }

        if (c->pmu) {
                int k;

                /* Hotplug first, so a CPU that went away is not read. */
                k = pmu_collector_update_cpus(c->pmu);
                if (k < 0)
                        log_debug_errno(k, "pmu: cannot re-read the online CPUs: %m");
                k = pmu_collector_read(c->pmu);
                if (k < 0)
                        log_debug_errno(k, "pmu: read failed: %m");
                k = pmu_collector_snapshot(c->pmu, &r->view.pmu);
                if (k < 0)
                        log_warning_errno(k, "pmu: cannot take a snapshot: %m");
                else
                        pmu_log_state(c, r->view.pmu);
        }
        snprintf(r->view.pmu_reason, sizeof(r->view.pmu_reason), "%s", c->pmu_reason);
        r->view.interval_seconds = (double) c->armed_usec / USEC_PER_SEC;
        r->view.cycle = atomic_load(&c->cycles) + 1;
        publish(c, r);

        atomic_store(&c->last_cycle_usec, now_monotonic_usec());
        atomic_fetch_add(&c->cycles, 1);
}

static void *collector_main(void *userdata) {
        struct collector *c = userdata;

        for (;;) {
                struct epoll_event ev[8];
                int n = epoll_wait(c->epoll_fd, ev, ELEMENTSOF(ev), -1);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        log_error_errno(-errno, "collector: epoll_wait failed: %m");
                        return NULL;
                }
                for (int i = 0; i < n; i++) {
                        uint64_t v;

                        if (ev[i].data.fd == c->stop_fd)
                                return NULL;
                        if (ev[i].data.fd == c->timer_fd && read(c->timer_fd, &v, sizeof(v)) == sizeof(v))
                                cycle(c);
                }
        }
}

static int watch(struct collector *c, int fd) {
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

        return epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int collector_start(const struct collector_options *opts, struct collector **ret) {
        struct collector *c = xcalloc(1, sizeof(*c));
        struct view_ref *first = xcalloc(1, sizeof(*first));
        uint64_t nofile;
        int r;

        c->timer_fd = c->stop_fd = -1;
        c->opts = *opts;
        pthread_mutex_init(&c->lock, NULL);
        atomic_store(&c->interval_usec, opts->interval_usec);
        atomic_store(&c->last_cycle_usec, now_monotonic_usec());

        /* One fd per event per CPU (perf-security.rst): raise the soft limit first. */
        if (pmu_raise_nofile_limit(&nofile) < 0)
                log_debug("Cannot raise RLIMIT_NOFILE; counting may run out of descriptors");
        pmu_open(c);

        /* Readers always find a view, even before the first cycle. */
        snprintf(first->view.pmu_reason, sizeof(first->view.pmu_reason), "starting");
        publish(c, first);

        c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->epoll_fd < 0 || c->timer_fd < 0 || c->stop_fd < 0) {
                r = -errno;
                goto fail;
        }
        if ((r = watch(c, c->timer_fd)) < 0 || (r = watch(c, c->stop_fd)) < 0)
                goto fail;

        /* The first cycle runs right away so /metrics has data before the first interval. */
        cycle(c);

        r = -pthread_create(&c->thread, NULL, collector_main, c);
        if (r < 0)
                goto fail;
        c->thread_started = true;

        *ret = c;
        return 0;
fail:
        collector_stop(c);
        return r;
}

struct collector *collector_stop(struct collector *c) {
        if (!c)
                return NULL;
        if (c->thread_started) {
                uint64_t one = 1;

                if (write(c->stop_fd, &one, sizeof(one)) == sizeof(one))
                        pthread_join(c->thread, NULL);
        }
        safe_close(c->epoll_fd);
        safe_close(c->timer_fd);
        safe_close(c->stop_fd);
        c->pmu = pmu_collector_free(c->pmu);
        if (c->current)
                collector_view_put(&c->current->view);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

void collector_reconfigure(struct collector *c, const struct collector_options *opts) {
        pthread_mutex_lock(&c->lock);
        c->pending = *opts;
        c->has_pending = true;
        pthread_mutex_unlock(&c->lock);
        atomic_store(&c->interval_usec, opts->interval_usec);
}

uint64_t collector_cycles(struct collector *c) {
        return atomic_load(&c->cycles);
}

bool collector_alive(struct collector *c) {
        uint64_t stale = MAX(COLLECTOR_STALE_INTERVALS * atomic_load(&c->interval_usec),
                             COLLECTOR_MIN_STALE_USEC);

        return now_monotonic_usec() - atomic_load(&c->last_cycle_usec) < stale;
}
