/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "thread-names.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "macro.h"

static struct {
        pthread_mutex_t lock;
        struct thread_names_entry e[THREAD_NAMES_MAX];
        size_t n;
} known = { .lock = PTHREAD_MUTEX_INITIALIZER };

void thread_names_add(pid_t tid, const char *name) {
        size_t i;

        pthread_mutex_lock(&known.lock);
        for (i = 0; i < known.n && known.e[i].tid != tid; i++)
                ;
        if (i == known.n && known.n < THREAD_NAMES_MAX)
                known.n++;
        if (i < known.n) {
                known.e[i].tid = tid;
                snprintf(known.e[i].name, sizeof(known.e[i].name), "%s", name);
        }
        pthread_mutex_unlock(&known.lock);
}

void thread_names_set_self(const char *name) {
        (void) pthread_setname_np(pthread_self(), name);
        thread_names_add(gettid(), name);
}

/* What a thread thread_names_create() starts needs until it is named: on the creator's stack. */
struct named_start {
        const char *name;
        void *(*fn)(void *);
        void *arg;
        sem_t named;
};

static void *named_start_main(void *userdata) {
        struct named_start *s = userdata;
        void *(*fn)(void *) = s->fn;
        void *arg = s->arg;

        thread_names_set_self(s->name);
        /* s is gone once the creator returns: nothing of it is read after this. */
        sem_post(&s->named);
        return fn(arg);
}

int thread_names_create(pthread_t *ret, const char *name, void *(*fn)(void *), void *arg) {
        struct named_start s = { .name = name, .fn = fn, .arg = arg };
        pthread_t t;
        int r;

        if (sem_init(&s.named, 0, 0) < 0)
                return -errno;
        r = -pthread_create(&t, NULL, named_start_main, &s);
        if (r == 0)
                while (sem_wait(&s.named) < 0 && errno == EINTR)
                        ;
        sem_destroy(&s.named);
        if (r < 0)
                return r;
        *ret = t;
        return 0;
}

void thread_names_note_self(const char *name) {
        static _Thread_local bool noted;

        if (noted)
                return;
        noted = true;
        thread_names_add(gettid(), name);
}

void thread_names_forget(pid_t tid) {
        pthread_mutex_lock(&known.lock);
        for (size_t i = 0; i < known.n; i++)
                if (known.e[i].tid == tid) {
                        known.e[i] = known.e[--known.n];
                        break;
                }
        pthread_mutex_unlock(&known.lock);
}

size_t thread_names_list(struct thread_names_entry *ret, size_t max) {
        size_t n;

        pthread_mutex_lock(&known.lock);
        n = MIN(known.n, max);
        memcpy(ret, known.e, n * sizeof(*ret));
        pthread_mutex_unlock(&known.lock);
        return n;
}
