/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stack table (store_add_stack(), store_query_stacks*()) against a
 * model kept by the test: random samples with a fixed seed, drawn from a
 * small set of task contexts and stacks, and the model's own account of
 * what fits (first come, first stored; a sample whose context, stack or
 * count does not fit is dropped, nothing else). Exact counts and weights
 * per (context, stack) over windows and spans across epoch ends, with the
 * pid and cgroup filters; the dropped samples exactly; names as they were
 * when sampled; the leaf into the hot PCs; the frozen copy's size at its
 * largest equal to the formula's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stacks.h"
#include "store.h"
#include "store-test-util.h"

#define SEC             UINT64_C(1000000000)
#define NCTX            12
#define NSTACK          20
#define MAXF            12
#define NEPOCH          6
#define STR_MAX         32

struct m_ctx {
        uint32_t pid, tid;
        char str[_STACKS_STR_MAX][STR_MAX];     /* comm, thread, cgroup, service */
};

struct m_stack {
        size_t n;
        uint64_t f[MAXF];
};

/* The model: what one epoch stored, per (context, stack), and its totals. */
struct m_epoch {
        uint64_t count[NCTX][NSTACK], weight[NCTX][NSTACK];
        uint64_t samples, weight_sum, dropped;
};

/* The model's view of the tables' fill inside the epoch being written. */
struct m_fill {
        bool ctx[NCTX], stack[NSTACK], pair[NCTX][NSTACK];
        uint32_t n_ctx, n_stacks, n_pairs, n_frames, n_bytes;
        char strs[NCTX * _STACKS_STR_MAX][STR_MAX];
        size_t n_strs;
};

static struct m_ctx ctxs[NCTX];
static struct m_stack stks[NSTACK];

static const char *const cgroups[] = {
        "/system.slice/nginx.service",
        "/system.slice/nginx.service/worker",
        "/system.slice/cron.service",
        "/user.slice/user-1000.slice/session-2.scope",
        "",
};
static const char *const services[] = { "nginx.service", "nginx.service", "cron.service", "session-2.scope", "" };

static void make_sets(uint64_t *st) {
        for (unsigned i = 0; i < NCTX; i++) {
                struct m_ctx *c = &ctxs[i];
                unsigned g = i % ELEMENTSOF(cgroups);

                /* Contexts 0..2 share pid 100: one process renamed between threads (comm differs). */
                c->pid = 100 + i / 3;
                c->tid = c->pid + i % 2;
                snprintf(c->str[STACKS_STR_COMM], STR_MAX, "proc%u", i < 3 ? i : c->pid);
                /* Often the thread is named as the process (the pool must store it once). */
                snprintf(c->str[STACKS_STR_THREAD], STR_MAX, "%s", i % 2 ? "worker" : c->str[STACKS_STR_COMM]);
                snprintf(c->str[STACKS_STR_CGROUP], STR_MAX, "%.*s", STR_MAX - 1, cgroups[g]);
                snprintf(c->str[STACKS_STR_SERVICE], STR_MAX, "%s", services[g]);
        }
        for (unsigned k = 0; k < NSTACK; k++) {
                bool dup;

                do {
                        struct m_stack *s = &stks[k];

                        s->n = 1 + tu_rand(st) % MAXF;
                        /* Few addresses: stacks share frames and prefixes. */
                        for (size_t j = 0; j < s->n; j++)
                                s->f[j] = UINT64_C(0x401000) + 0x10 * (tu_rand(st) % 6);
                        if (k % 5 == 0)
                                s->f[0] = STORE_KERNEL_FRAME;
                        dup = false;
                        for (unsigned j = 0; j < k && !dup; j++)
                                dup = stks[j].n == s->n && memcmp(stks[j].f, s->f, s->n * sizeof(uint64_t)) == 0;
                } while (dup);
        }
}

static bool model_has_str(const struct m_fill *f, const char *s) {
        for (size_t i = 0; i < f->n_strs; i++)
                if (strcmp(f->strs[i], s) == 0)
                        return true;
        return false;
}

/* One sample through the model: true when the tables hold it. */
static bool model_add(struct m_fill *f, struct m_epoch *e, const struct store_options *o, unsigned c, unsigned k,
                      uint64_t w) {
        const struct m_ctx *x = &ctxs[c];
        const struct m_stack *s = &stks[k];

        e->samples++;
        e->weight_sum += w;
        if (!f->ctx[c]) {
                char news[_STACKS_STR_MAX][STR_MAX];
                size_t n_new = 0, bytes = 0;

                if (f->n_ctx == o->stack_contexts)
                        goto drop;
                for (unsigned i = 0; i < _STACKS_STR_MAX; i++) {
                        bool seen = x->str[i][0] == '\0' || model_has_str(f, x->str[i]);

                        for (size_t j = 0; j < n_new && !seen; j++)
                                seen = strcmp(news[j], x->str[i]) == 0;
                        if (!seen) {
                                strcpy(news[n_new++], x->str[i]);
                                bytes += strlen(x->str[i]) + 1;
                        }
                }
                if (f->n_bytes + bytes > o->stack_strings)
                        goto drop;
                if (!f->stack[k] && (f->n_stacks == o->stacks || f->n_frames + s->n > o->stack_frames))
                        goto drop;
                if (f->n_pairs == o->stacks)
                        goto drop;
                for (size_t j = 0; j < n_new; j++)
                        strcpy(f->strs[f->n_strs++], news[j]);
                f->n_bytes += (uint32_t) bytes;
                f->ctx[c] = true;
                f->n_ctx++;
        }
        if (!f->stack[k]) {
                if (f->n_stacks == o->stacks || f->n_frames + s->n > o->stack_frames)
                        goto drop;
                if (f->n_pairs == o->stacks)
                        goto drop;
                f->stack[k] = true;
                f->n_stacks++;
                f->n_frames += (uint32_t) s->n;
        }
        if (!f->pair[c][k]) {
                if (f->n_pairs == o->stacks)
                        goto drop;
                f->pair[c][k] = true;
                f->n_pairs++;
        }
        e->count[c][k]++;
        e->weight[c][k] += w;
        return true;
drop:
        e->dropped++;
        return false;
}

static void feed(struct store *s, struct m_epoch *e, const struct store_options *o, size_t n, uint64_t *st) {
        struct m_fill *f = xcalloc(1, sizeof(*f));

        f->n_bytes = 1;         /* the empty string */
        for (size_t i = 0; i < n; i++) {
                /* Skewed: low contexts and stacks are drawn more often. */
                unsigned c = (unsigned) (tu_rand(st) % NCTX), k = (unsigned) (tu_rand(st) % NSTACK);
                uint64_t w = 1 + tu_rand(st) % 52631579;        /* up to 1e9 / 19 ns */
                const struct m_ctx *x = &ctxs[c];

                if (tu_rand(st) % 3 == 0)
                        c /= 2, k /= 2, x = &ctxs[c];
                store_add_stack(s, &(struct store_stack_sample) {
                        .pid = x->pid,
                        .tid = x->tid,
                        .cpu = (uint32_t) (i % 2),
                        .comm = x->str[STACKS_STR_COMM],
                        .thread = x->str[STACKS_STR_THREAD],
                        .cgroup = x->str[STACKS_STR_CGROUP],
                        .service = x->str[STACKS_STR_SERVICE],
                        .frames = stks[k].f,
                        .n_frames = stks[k].n,
                        .kernel = stks[k].f[0] == STORE_KERNEL_FRAME,
                        .weight = w,
                });
                model_add(f, e, o, c, k, w);
        }
        free(f);
}

static int find_ctx(const struct store_stack *r) {
        for (unsigned c = 0; c < NCTX; c++)
                if (ctxs[c].pid == r->pid && ctxs[c].tid == r->tid &&
                    strcmp(ctxs[c].str[STACKS_STR_COMM], r->comm) == 0 &&
                    strcmp(ctxs[c].str[STACKS_STR_THREAD], r->thread) == 0 &&
                    strcmp(ctxs[c].str[STACKS_STR_CGROUP], r->cgroup) == 0 &&
                    strcmp(ctxs[c].str[STACKS_STR_SERVICE], r->service) == 0)
                        return (int) c;
        return -1;
}

static int find_stack(const struct store_stack *r) {
        for (unsigned k = 0; k < NSTACK; k++)
                if (stks[k].n == r->n_frames && memcmp(stks[k].f, r->frames, r->n_frames * sizeof(uint64_t)) == 0)
                        return (int) k;
        return -1;
}

static bool ctx_selected(unsigned c, uint32_t pid, const char *prefix) {
        return (pid == STORE_PID_ANY || ctxs[c].pid == pid) &&
                (!prefix || strncmp(ctxs[c].str[STACKS_STR_CGROUP], prefix, strlen(prefix)) == 0);
}

/* The result against the model's epochs [first, last] (oldest first indexes). */
static void check_result(const struct store_stacks_result *r, const struct m_epoch *e, size_t first, size_t last,
                         uint32_t pid, const char *prefix) {
        uint64_t (*want)[NSTACK] = xcalloc(NCTX, sizeof(*want)), (*wantw)[NSTACK] = xcalloc(NCTX, sizeof(*wantw));
        uint64_t samples = 0, weight = 0, dropped = 0;
        size_t n = 0;

        for (size_t i = first; i <= last; i++) {
                samples += e[i].samples;
                weight += e[i].weight_sum;
                dropped += e[i].dropped;
                for (unsigned c = 0; c < NCTX; c++)
                        for (unsigned k = 0; k < NSTACK; k++)
                                if (ctx_selected(c, pid, prefix)) {
                                        want[c][k] += e[i].count[c][k];
                                        wantw[c][k] += e[i].weight[c][k];
                                }
        }
        for (unsigned c = 0; c < NCTX; c++)
                for (unsigned k = 0; k < NSTACK; k++)
                        n += want[c][k] > 0;
        assert_int_equal(r->samples, samples);
        assert_int_equal(r->weight, weight);
        assert_int_equal(r->dropped, dropped);
        assert_int_equal(r->n, n);
        for (size_t i = 0; i < r->n; i++) {
                const struct store_stack *x = &r->stacks[i];
                int c = find_ctx(x), k = find_stack(x);

                assert_true(c >= 0 && k >= 0);
                assert_int_equal(x->count, want[c][k]);
                assert_int_equal(x->weight, wantw[c][k]);
                want[c][k] = 0;         /* each (context, stack) once */
                if (i > 0)
                        assert_true(r->stacks[i - 1].weight > x->weight ||
                                    (r->stacks[i - 1].weight == x->weight && r->stacks[i - 1].count >= x->count));
        }
        free(want);
        free(wantw);
}

/* Epoch e is [10e, 10e + 10) s. */
static void run_model(const struct store_options *o, size_t per_epoch, uint64_t seed, bool expect_drops) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct m_epoch *e = xcalloc(NEPOCH, sizeof(*e));
        uint64_t st = seed, dropped = 0;
        static const struct {
                uint64_t start, end;
        } spans[] = { { 0, 10 }, { 5, 25 }, { 10, 20 }, { 19, 41 }, { 0, 60 }, { 59, 70 } };
        static const struct {
                uint32_t pid;
                const char *prefix;
        } filters[] = {
                { STORE_PID_ANY, NULL }, { 100, NULL }, { 103, NULL }, { STORE_PID_ANY, "/system.slice/nginx.service" },
                { STORE_PID_ANY, "/system.slice/" }, { 100, "/system.slice/cron" }, { 999, NULL },
                { STORE_PID_ANY, "/nothing" },
        };

        make_sets(&st);
        assert_int_equal(store_new(o, 0, &s), 0);
        for (size_t i = 0; i < NEPOCH; i++) {
                feed(s, &e[i], o, per_epoch + i * 37, &st);
                store_epoch_end(s, (i + 1) * 10 * SEC);
                dropped += e[i].dropped;
        }
        if (expect_drops)
                assert_true(dropped > 0);
        else
                assert_int_equal(dropped, 0);

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        const struct store_totals *t = store_snapshot_cumulative(snap);
        uint64_t samples = 0;

        for (size_t i = 0; i < NEPOCH; i++)
                samples += e[i].samples;
        assert_int_equal(t->cpu_samples, samples);
        assert_int_equal(t->evict_stacks, dropped);

        for (size_t f = 0; f < ELEMENTSOF(filters); f++) {
                for (size_t w = 1; w <= NEPOCH; w++) {
                        struct store_stacks_result r;

                        assert_int_equal(store_query_stacks(snap, w * 10 * SEC, filters[f].pid, filters[f].prefix, &r), 0);
                        assert_int_equal(r.iv.epochs, w);
                        assert_int_equal(r.iv.start_ns, (NEPOCH - w) * 10 * SEC);
                        assert_int_equal(r.iv.end_ns, NEPOCH * 10 * SEC);
                        check_result(&r, e, NEPOCH - w, NEPOCH - 1, filters[f].pid, filters[f].prefix);
                        store_stacks_result_done(&r);
                }
                for (size_t i = 0; i < ELEMENTSOF(spans); i++) {
                        struct store_stacks_result r;
                        size_t first = spans[i].start / 10, last = MIN((spans[i].end - 1) / 10, (uint64_t) NEPOCH - 1);

                        assert_int_equal(store_query_stacks_span(snap, spans[i].start * SEC, spans[i].end * SEC,
                                                                 filters[f].pid, filters[f].prefix, &r), 0);
                        assert_int_equal(r.iv.epochs, last - first + 1);
                        check_result(&r, e, first, last, filters[f].pid, filters[f].prefix);
                        store_stacks_result_done(&r);
                }
        }
        free(e);
}

/* Room for everything: every sample is stored, counts and weights exact. */
static void test_model_roomy(void **state) {
        struct store_options o;

        store_options_init(&o);
        run_model(&o, 3000, 1, false);
}

/* Small tables: which samples fit is the model's first-come account, the rest is dropped and counted. */
static void test_model_full(void **state) {
        static const struct {
                uint32_t stacks, frames, contexts, strings;
        } sizes[] = {
                { 8, 1000, 100, 4096 },         /* counts run out */
                { 100, 30, 100, 4096 },         /* frames */
                { 100, 1000, 3, 4096 },         /* contexts */
                { 100, 1000, 100, 40 },         /* string bytes */
                { 6, 25, 4, 48 },               /* all of them */
        };

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                struct store_options o;

                store_options_init(&o);
                o.stacks = sizes[i].stacks;
                o.stack_frames = sizes[i].frames;
                o.stack_contexts = sizes[i].contexts;
                o.stack_strings = sizes[i].strings;
                run_model(&o, 500, 7 + i, true);
        }
}

/* No stack table: every sample is counted and dropped, the hot PCs still get the leaf. */
static void test_no_table(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        const uint64_t frames[] = { 0x401000, 0x402000 };
        struct store_stacks_result r;
        struct store_hotpcs_result h;

        store_options_init(&o);
        o.stacks = 0;
        o.stack_frames = o.stack_contexts = o.stack_strings = 0;
        assert_int_equal(store_new(&o, 0, &s), 0);
        for (unsigned i = 0; i < 5; i++)
                store_add_stack(s, &(struct store_stack_sample) { .pid = 7, .tid = 7, .frames = frames,
                                                                  .n_frames = 2, .weight = 10 });
        store_epoch_end(s, 10 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, STORE_PID_ANY, NULL, &r), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(r.samples, 5);
        assert_int_equal(r.weight, 50);
        assert_int_equal(r.dropped, 5);
        store_stacks_result_done(&r);
        assert_int_equal(store_query_hotpcs(snap, STORE_WINDOW_ALL, 10, STORE_PID_ANY, &h), 0);
        assert_int_equal(h.pcs.n, 1);
        assert_int_equal(h.pcs.item[0].count, 5);
        store_hotpcs_result_done(&h);
}

/* A pid whose comm changes between epochs keeps each epoch's name; a reused pid is not renamed. */
static void test_names_as_sampled(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        const uint64_t frames[] = { 0x401000, 0x402000 };
        char comm[16];
        struct store_stacks_result r;

        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);
        /* The caller's buffer is reused: the store must have copied the name. */
        strcpy(comm, "old-name");
        for (unsigned i = 0; i < 3; i++)
                store_add_stack(s, &(struct store_stack_sample) { .pid = 42, .tid = 42, .comm = comm,
                                                                  .thread = comm, .frames = frames, .n_frames = 2,
                                                                  .weight = 1 });
        strcpy(comm, "XXXXXXXX");
        store_epoch_end(s, 10 * SEC);
        strcpy(comm, "new-name");
        for (unsigned i = 0; i < 2; i++)
                store_add_stack(s, &(struct store_stack_sample) { .pid = 42, .tid = 42, .comm = comm,
                                                                  .thread = "t", .frames = frames, .n_frames = 2,
                                                                  .weight = 1 });
        store_epoch_end(s, 20 * SEC);

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, 42, NULL, &r), 0);
        assert_int_equal(r.n, 2);
        assert_string_equal(r.stacks[0].comm, "old-name");
        assert_string_equal(r.stacks[0].thread, "old-name");
        assert_int_equal(r.stacks[0].count, 3);
        assert_string_equal(r.stacks[1].comm, "new-name");
        assert_string_equal(r.stacks[1].thread, "t");
        assert_int_equal(r.stacks[1].count, 2);
        assert_string_equal(r.stacks[1].cgroup, "");
        assert_int_equal(r.stacks[1].n_frames, 2);
        assert_int_equal(r.stacks[1].frames[1], 0x402000);
        store_stacks_result_done(&r);

        assert_int_equal(store_query_stacks_span(snap, 0, 10 * SEC, 42, NULL, &r), 0);
        assert_int_equal(r.n, 1);
        assert_string_equal(r.stacks[0].comm, "old-name");
        store_stacks_result_done(&r);
        assert_int_equal(store_query_stacks(snap, 10 * SEC, STORE_PID_ANY, "", &r), 0);
        assert_int_equal(r.n, 1);
        assert_string_equal(r.stacks[0].comm, "new-name");
        store_stacks_result_done(&r);

        assert_int_equal(store_query_stacks(snap, 0, STORE_PID_ANY, NULL, &r), -EINVAL);
        assert_int_equal(store_query_stacks_span(snap, 5, 5, STORE_PID_ANY, NULL, &r), -EINVAL);
}

/* Strings longer than their bound are cut there; the same cut name is one context. */
static void test_string_bounds(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        const uint64_t frames[] = { 0x401000 };
        char cg[PATH_MAX + 10], svc[300];
        struct store_stacks_result r;

        memset(cg, 'c', sizeof(cg) - 1);
        cg[0] = '/';
        cg[sizeof(cg) - 1] = '\0';
        memset(svc, 's', sizeof(svc) - 1);
        svc[sizeof(svc) - 1] = '\0';
        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);
        store_add_stack(s, &(struct store_stack_sample) { .pid = 1, .tid = 1, .comm = "0123456789abcdefXYZ",
                                                          .thread = "0123456789abcdef", .cgroup = cg,
                                                          .service = svc, .frames = frames, .n_frames = 1,
                                                          .weight = 1 });
        store_add_stack(s, &(struct store_stack_sample) { .pid = 1, .tid = 1, .comm = "0123456789abcde",
                                                          .thread = "0123456789abcdeQ", .cgroup = cg,
                                                          .service = svc, .frames = frames, .n_frames = 1,
                                                          .weight = 1 });
        /* No frame: counted, dropped. */
        store_add_stack(s, &(struct store_stack_sample) { .pid = 1, .tid = 1, .frames = frames, .n_frames = 0,
                                                          .weight = 1 });
        store_epoch_end(s, 10 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, STORE_PID_ANY, "/ccc", &r), 0);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.stacks[0].count, 2);
        assert_string_equal(r.stacks[0].comm, "0123456789abcde");
        assert_string_equal(r.stacks[0].thread, "0123456789abcde");
        assert_int_equal(strlen(r.stacks[0].cgroup), PATH_MAX - 1);
        assert_int_equal(strlen(r.stacks[0].service), 255);
        assert_int_equal(r.samples, 3);
        assert_int_equal(r.dropped, 1);
        store_stacks_result_done(&r);
}

/* The leaf goes to the hot PCs with count 1 a sample and no op counts; el 1 for the kernel's. */
static void test_hotpcs_leaf(void **state) {
        _cleanup_(store_freep) struct store *s = NULL;
        struct store_options o;
        const uint64_t user[] = { 0x401000, 0x402000, 0x403000 }, kern[] = { STORE_KERNEL_FRAME, 0x401000 };
        struct store_hotpcs_result h;
        struct store_totals_result t;

        store_options_init(&o);
        assert_int_equal(store_new(&o, 0, &s), 0);
        for (unsigned i = 0; i < 7; i++)
                store_add_stack(s, &(struct store_stack_sample) { .pid = 9, .tid = 9, .frames = user, .n_frames = 3,
                                                                  .weight = 100 });
        for (unsigned i = 0; i < 4; i++)
                store_add_stack(s, &(struct store_stack_sample) { .pid = 9, .tid = 10, .frames = kern, .n_frames = 2,
                                                                  .kernel = true, .weight = 1000 });
        store_epoch_end(s, 10 * SEC);
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = store_snapshot_get(s);
        assert_int_equal(store_query_hotpcs(snap, STORE_WINDOW_ALL, 10, 9, &h), 0);
        assert_int_equal(h.pcs.n, 2);
        assert_int_equal(h.pcs.total, 11);
        assert_int_equal(h.pcs.item[0].pc, 0x401000);
        assert_int_equal(h.pcs.item[0].count, 7);
        assert_int_equal(h.pcs.item[0].el, 0);
        assert_true(h.pcs.item[1].pc == STORE_KERNEL_FRAME);
        assert_int_equal(h.pcs.item[1].count, 4);
        assert_int_equal(h.pcs.item[1].el, 1);
        for (size_t i = 0; i < h.pcs.n; i++) {
                for (unsigned k = 0; k < _HOTPCS_OP_MAX; k++)
                        assert_int_equal(h.pcs.item[i].ops[k], 0);
                for (unsigned k = 0; k < _HOTPCS_EV_MAX; k++)
                        assert_int_equal(h.pcs.item[i].events[k], 0);
                assert_int_equal(h.pcs.item[i].lat_sum, 0);
        }
        store_hotpcs_result_done(&h);

        /* No SPE record was added: the SPE totals stay zero, the CPU ones count. */
        assert_int_equal(store_query_totals(snap, STORE_WINDOW_ALL, &t), 0);
        assert_int_equal(t.t.records, 0);
        assert_int_equal(t.t.cpu_samples, 11);
        assert_int_equal(t.t.cpu_weight_ns, 7 * 100 + 4 * 1000);
        assert_int_equal(t.t.evict_stacks, 0);

        /* The stack result: heaviest first, the kernel frame kept as it came. */
        struct store_stacks_result r;
        assert_int_equal(store_query_stacks(snap, STORE_WINDOW_ALL, 9, NULL, &r), 0);
        assert_int_equal(r.n, 2);
        assert_int_equal(r.stacks[0].tid, 10);
        assert_int_equal(r.stacks[0].weight, 4000);
        assert_true(r.stacks[0].frames[0] == STORE_KERNEL_FRAME);
        assert_int_equal(r.stacks[1].weight, 700);
        store_stacks_result_done(&r);
}

/* Filled to the last count, frame, context and string byte: the frozen copy is the formula's largest. */
static void test_summary_largest(void **state) {
        const uint64_t f[4][2] = { { 1, 2 }, { 1, 3 }, { 2, 3 }, { 3, 3 } };
        /* Strings: "ab" (3 bytes, comm and thread of A: stored once), "/x" (3), "cd" (3), "s" (2), and "" (1). */
        const struct stacks_task a = { 1, 1, { "ab", "ab", "/x", "" } }, b = { 2, 2, { "cd", "ab", "/x", "s" } };
        struct stacks *t = stacks_new(4, 8, 2, 12);
        struct stacks_summary *sum;

        assert_non_null(t);
        assert_true(stacks_add(t, &a, f[0], 2, 5));
        assert_true(stacks_add(t, &a, f[1], 2, 5));
        assert_true(stacks_add(t, &b, f[2], 2, 5));
        assert_true(stacks_add(t, &b, f[3], 2, 5));
        assert_true(stacks_add(t, &b, f[3], 2, 5));     /* a count, no new entry */
        assert_int_equal(t->n_strings, 12);
        assert_int_equal(t->n_frames, 8);
        /* Full: a new count of known parts, a new stack, a new context are all dropped. */
        assert_false(stacks_add(t, &a, f[2], 2, 5));
        assert_false(stacks_add(t, &(struct stacks_task) { 3, 3, {} }, f[0], 2, 5));
        assert_int_equal(t->dropped, 2);
        assert_int_equal(t->samples, 7);
        sum = stacks_freeze(t);
        assert_int_equal(stacks_summary_size(sum), stacks_summary_bytes(4, 8, 2, 12));
        assert_int_equal(sum->n_counts, 4);
        assert_int_equal(sum->count[3].count, 2);
        free(sum);

        /* After a reset the same samples fit again. */
        stacks_reset(t);
        assert_true(stacks_add(t, &a, f[2], 2, 5));
        assert_int_equal(t->dropped, 0);
        stacks_free(t);

        assert_null(stacks_new(0, 8, 2, 12));
        assert_null(stacks_new(4, 0, 2, 12));
        assert_null(stacks_new(4, 8, 0, 12));
        assert_null(stacks_new(4, 8, 2, 0));
}

/* A merge beyond what 32-bit indexes hold is refused before it reads or allocates anything. */
static void test_merge_too_big(void **state) {
        struct stacks_summary big = { .n_counts = STORE_STACKS_QUERY_MAX / 2 + 1 };
        const struct stacks_summary *v[2] = { &big, &big };
        struct store_stacks_result r = { .n = 7 };

        assert_int_equal(stacks_merge(v, 2, STORE_PID_ANY, NULL, &r), -E2BIG);
        assert_int_equal(r.n, 7);
        assert_null(r.stacks);
        big = (struct stacks_summary) { .n_frames = UINT32_MAX };
        assert_int_equal(stacks_merge(v, 2, STORE_PID_ANY, NULL, &r), -E2BIG);
        /* Nothing to merge: an empty result. */
        assert_int_equal(stacks_merge(v, 0, STORE_PID_ANY, NULL, &r), 0);
        assert_int_equal(r.n, 0);
        store_stacks_result_done(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_summary_largest),
                cmocka_unit_test(test_hotpcs_leaf),
                cmocka_unit_test(test_names_as_sampled),
                cmocka_unit_test(test_string_bounds),
                cmocka_unit_test(test_no_table),
                cmocka_unit_test(test_model_roomy),
                cmocka_unit_test(test_model_full),
                cmocka_unit_test(test_merge_too_big),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
