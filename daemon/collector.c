/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "collector.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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

struct collector {
        pthread_t thread;
        bool thread_started;
        int epoll_fd;
        int timer_fd;
        int stop_fd;

        _Atomic uint64_t interval_usec;
        uint64_t armed_usec; /* interval the timer runs at; collector thread only */
        _Atomic uint64_t last_cycle_usec;
        _Atomic uint64_t cycles;
};

uint64_t now_monotonic_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static int arm_timer(struct collector *c, uint64_t usec) {
        struct itimerspec its = {
                .it_interval = { (time_t) (usec / USEC_PER_SEC), (long) (usec % USEC_PER_SEC) * 1000 },
                .it_value = { (time_t) (usec / USEC_PER_SEC), (long) (usec % USEC_PER_SEC) * 1000 },
        };

        if (timerfd_settime(c->timer_fd, 0, &its, NULL) < 0)
                return -errno;
        c->armed_usec = usec;
        return 0;
}

static void cycle(struct collector *c) {
        uint64_t want = atomic_load(&c->interval_usec);

        if (want != c->armed_usec)
                (void) arm_timer(c, want);

        /* Collectors read their fds here and publish a snapshot. */

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
                        if (ev[i].data.fd == c->timer_fd) {
                                if (read(c->timer_fd, &v, sizeof(v)) == sizeof(v))
                                        cycle(c);
                        }
                }
        }
}

static int watch(struct collector *c, int fd) {
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

        return epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int collector_start(uint64_t interval_usec, struct collector **ret) {
        struct collector *c = xcalloc(1, sizeof(*c));
        int r;

        c->timer_fd = c->stop_fd = -1;
        atomic_store(&c->interval_usec, interval_usec);
        atomic_store(&c->last_cycle_usec, now_monotonic_usec());

        c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->epoll_fd < 0 || c->timer_fd < 0 || c->stop_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = arm_timer(c, interval_usec);
        if (r < 0)
                goto fail;
        if ((r = watch(c, c->timer_fd)) < 0 || (r = watch(c, c->stop_fd)) < 0)
                goto fail;

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
        free(c);
        return NULL;
}

void collector_set_interval(struct collector *c, uint64_t interval_usec) {
        atomic_store(&c->interval_usec, interval_usec);
}

uint64_t collector_cycles(struct collector *c) {
        return atomic_load(&c->cycles);
}

bool collector_alive(struct collector *c) {
        uint64_t stale = MAX(COLLECTOR_STALE_INTERVALS * atomic_load(&c->interval_usec),
                             COLLECTOR_MIN_STALE_USEC);

        return now_monotonic_usec() - atomic_load(&c->last_cycle_usec) < stale;
}
