/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fixture of the source-line tests (tests/symbols/test-srcline.py),
 * built -O2 -g: two threads write two members of one global struct (false
 * sharing), a struct in an array and a heap struct through a pointer
 * parameter, each store in a function inlined into its caller, so that its
 * PCs have inlined frames. `ring` makes .bss longer than the file's last
 * page, so that its end is in the anonymous memory after the file's mapping.
 * Runs for argv[1] seconds (default 2).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct stats {
        volatile uint64_t hits;
        volatile uint64_t misses;
};

struct shard {
        volatile uint64_t count;
        volatile int lock;
        char pad[52];
};

struct node {
        uint64_t key;
        volatile uint64_t value;
};

struct stats stats;
struct shard shards[4];
static volatile uint8_t ring[64 << 10];
static __thread volatile uint64_t tls_ops;

static inline __attribute__((always_inline)) void count_hit(struct stats *s) {
        s->hits++;
}

static inline __attribute__((always_inline)) void count_miss(struct stats *s) {
        s->misses++;
}

static inline __attribute__((always_inline)) void shard_add(unsigned i) {
        shards[i].count++;
        tls_ops++;
}

static __attribute__((noinline)) void node_update(struct node *n, uint64_t v) {
        n->value += v;
}

static double seconds;

static int expired(const struct timespec *start) {
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double) (now.tv_sec - start->tv_sec) + (double) (now.tv_nsec - start->tv_nsec) / 1e9 > seconds;
}

static __attribute__((noinline)) void *worker_a(void *arg) {
        struct timespec start;

        clock_gettime(CLOCK_MONOTONIC, &start);
        do
                for (unsigned i = 0; i < 100000; i++) {
                        count_hit(&stats);
                        shard_add(3);
                }
        while (!expired(&start));
        return arg;
}

static __attribute__((noinline)) void *worker_b(void *arg) {
        struct node *n = malloc(sizeof(*n));
        struct timespec start;

        n->key = 1;
        n->value = 0;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do
                for (unsigned i = 0; i < 100000; i++) {
                        count_miss(&stats);
                        node_update(n, i);
                        ring[i % sizeof(ring)] = (uint8_t) i;
                }
        while (!expired(&start));
        free(n);
        return arg;
}

int main(int argc, char **argv) {
        pthread_t a, b;

        seconds = argc > 1 ? atof(argv[1]) : 2.0;
        if (pthread_create(&a, NULL, worker_a, NULL) != 0 || pthread_create(&b, NULL, worker_b, NULL) != 0)
                return 1;
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        return 0;
}
