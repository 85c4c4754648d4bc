/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stack table over arbitrary samples: names (comm, thread, cgroup and
 * service reach the store from /proc and the kernel's records), frames and
 * a ?cgroup= prefix from the input, tables small enough to fill. Never
 * crash; every answer accounts for every sample (stored + dropped ==
 * samples); entries are distinct, non-empty, within the string bounds and
 * heaviest first; a filtered answer is a part of the whole one.
 *
 * Input: a stream of ops. 0x00-0xef: a sample whose fields take the next
 * bytes (pid, tid and weight one byte each, four length-prefixed strings,
 * a frame count and that many 2-byte frames); 0xf0-0xfe: an epoch end;
 * 0xff: the rest is the cgroup prefix of the last queries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define FUZZ_STR_MAX    300
#define FUZZ_FRAMES_MAX 40

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in {
        const uint8_t *p;
        size_t n;
};

static uint8_t byte(struct in *in) {
        uint8_t b;

        if (in->n == 0)
                return 0;
        b = *in->p++;
        in->n--;
        return b;
}

/* A length byte (0-239 as is, then steps of 4 up to 300: strings pass the 15- and 255-byte cuts) and that
 * many bytes. */
static void string(struct in *in, char *buf) {
        size_t b = byte(in), len = b < 240 ? b : 240 + (b - 240) * 4;

        len = MIN(len, in->n);
        memcpy(buf, in->p, len);
        buf[len] = '\0';
        in->p += len;
        in->n -= len;
}

static void check(const struct store_snapshot *snap, const char *prefix) {
        struct store_stacks_result all, part;
        uint64_t stored = 0, part_stored = 0;

        if (store_query_stacks(snap, STORE_WINDOW_ALL, STORE_PID_ANY, NULL, &all) < 0)
                abort();
        for (size_t i = 0; i < all.n; i++) {
                const struct store_stack *x = &all.stacks[i];

                if (x->n_frames == 0 || x->count == 0 || strlen(x->comm) > 15 || strlen(x->thread) > 15 ||
                    strlen(x->service) > 255)
                        abort();
                if (i > 0 && (all.stacks[i - 1].weight < x->weight ||
                              (all.stacks[i - 1].weight == x->weight && all.stacks[i - 1].count < x->count)))
                        abort();
                for (size_t j = 0; j < i; j++) {
                        const struct store_stack *y = &all.stacks[j];

                        if (x->pid == y->pid && x->tid == y->tid && x->n_frames == y->n_frames &&
                            memcmp(x->frames, y->frames, x->n_frames * sizeof(uint64_t)) == 0 &&
                            strcmp(x->comm, y->comm) == 0 && strcmp(x->thread, y->thread) == 0 &&
                            strcmp(x->cgroup, y->cgroup) == 0 && strcmp(x->service, y->service) == 0)
                                abort();
                }
                stored += x->count;
        }
        if (stored + all.dropped != all.samples)
                abort();

        if (store_query_stacks(snap, STORE_WINDOW_ALL, STORE_PID_ANY, prefix, &part) < 0)
                abort();
        for (size_t i = 0; i < part.n; i++) {
                if (strncmp(part.stacks[i].cgroup, prefix, strlen(prefix)) != 0)
                        abort();
                part_stored += part.stacks[i].count;
        }
        if (part_stored > stored || part.samples != all.samples || part.n > all.n)
                abort();
        store_stacks_result_done(&part);
        store_stacks_result_done(&all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct in in = { data, size };
        struct store_options o;
        struct store *s = NULL;
        struct store_snapshot *snap;
        char str[4][FUZZ_STR_MAX + 1], prefix[FUZZ_STR_MAX + 1] = "";
        uint64_t frames[FUZZ_FRAMES_MAX], now = 0;

        store_options_init(&o);
        o.epochs = 3;
        o.hotpcs = o.hotlines = 16;
        o.stacks = 12;
        o.stack_frames = 64;
        o.stack_contexts = 6;
        o.stack_strings = 200;
        if (store_new(&o, 0, &s) < 0)
                abort();
        while (in.n > 0) {
                uint8_t op = byte(&in);

                if (op == 0xff) {
                        size_t len = MIN(in.n, (size_t) FUZZ_STR_MAX);

                        memcpy(prefix, in.p, len);
                        prefix[len] = '\0';
                        break;
                }
                if (op >= 0xf0) {
                        now += 10;
                        store_epoch_end(s, now);
                        continue;
                }
                struct store_stack_sample ss = {
                        .pid = byte(&in) % 8,
                        .tid = byte(&in) % 8,
                        .cpu = op % 4,
                        .weight = byte(&in),
                        .frames = frames,
                };
                for (unsigned i = 0; i < 4; i++)
                        string(&in, str[i]);
                ss.comm = str[0];
                ss.thread = str[1];
                ss.cgroup = str[2];
                ss.service = str[3];
                ss.n_frames = byte(&in) % (FUZZ_FRAMES_MAX + 1);
                for (size_t i = 0; i < ss.n_frames; i++) {
                        uint64_t hi = byte(&in);

                        frames[i] = hi << 8 | byte(&in);
                }
                ss.kernel = op & 1;
                if (op & 2 && ss.n_frames > 0)
                        frames[0] = STORE_KERNEL_FRAME;
                store_add_stack(s, &ss);
        }
        store_epoch_end(s, now + 10);
        snap = store_snapshot_get(s);
        check(snap, prefix);
        store_snapshot_unref(snap);
        store_free(s);
        return 0;
}
