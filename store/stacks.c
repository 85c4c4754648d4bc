/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keytab.h"
#include "macro.h"
#include "strbuf.h"

static const size_t str_max[_STACKS_STR_MAX] = {
        [STACKS_STR_COMM] = STACKS_COMM_MAX,
        [STACKS_STR_THREAD] = STACKS_COMM_MAX,
        [STACKS_STR_CGROUP] = STACKS_CGROUP_MAX,
        [STACKS_STR_SERVICE] = STACKS_SERVICE_MAX,
};

/* ---- hashing ---- */

/* MurmurHash3's fmix64 finaliser (as keytab_hash()). */
static inline uint64_t fmix64(uint64_t h) {
        h ^= h >> 33;
        h *= UINT64_C(0xFF51AFD7ED558CCD);
        h ^= h >> 33;
        h *= UINT64_C(0xC4CEB9FE1A85EC53);
        h ^= h >> 33;
        return h;
}

uint64_t stacks_frames_hash(const uint64_t *frames, size_t n) {
        uint64_t h = UINT64_C(0x9E3779B97F4A7C15) * (n + 1);

        for (size_t i = 0; i < n; i++)
                h = fmix64(h ^ frames[i]) + UINT64_C(0x632BE59BD9B4E019);
        return h;
}

/* FNV-1a, 64-bit. */
static uint64_t str_hash(const char *s, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (size_t i = 0; i < len; i++) {
                h ^= (uint8_t) s[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static uint64_t ctx_hash(uint32_t pid, uint32_t tid, const uint64_t *sh) {
        uint64_t h = fmix64((uint64_t) pid << 32 | tid);

        for (unsigned i = 0; i < _STACKS_STR_MAX; i++)
                h = fmix64(h ^ sh[i]) + i;
        return h;
}

static uint64_t count_hash(uint32_t ctx, uint32_t stack) {
        return fmix64((uint64_t) ctx << 32 | stack);
}

/* ---- a fixed-size open-addressing index (no deletion; cleared per epoch) ---- */

static void index_init(struct stacks_index *ix, uint32_t capacity) {
        uint32_t n = keytab_slots_for(capacity);

        ix->slot = xcalloc(n, sizeof(struct stacks_slot));
        ix->mask = n - 1;
}

static void index_clear(struct stacks_index *ix) {
        memset(ix->slot, 0, ((size_t) ix->mask + 1) * sizeof(struct stacks_slot));
}

static size_t index_bytes(uint32_t capacity) {
        return (size_t) keytab_slots_for(capacity) * sizeof(struct stacks_slot);
}

/* The first slot from the hash's home, for a probe loop. */
#define INDEX_FOR_EACH(ix, h, s)                                                        \
        for (uint32_t _i = (uint32_t) (h) & (ix)->mask;                                 \
             (s) = &(ix)->slot[_i], true;                                               \
             _i = (_i + 1) & (ix)->mask)

/* ---- writer ---- */

static bool sizes_valid(uint32_t counts, uint32_t frames, uint32_t contexts, uint32_t strings) {
        return counts > 0 && counts <= STORE_TABLE_MAX && contexts > 0 && contexts <= STORE_TABLE_MAX &&
                frames > 0 && frames <= STORE_STACK_POOL_MAX && strings > 0 && strings <= STORE_STACK_POOL_MAX;
}

struct stacks *stacks_new(uint32_t counts, uint32_t frames, uint32_t contexts, uint32_t strings) {
        struct stacks *t;

        if (!sizes_valid(counts, frames, contexts, strings))
                return NULL;
        t = xcalloc(1, sizeof(*t));
        t->cap_counts = counts;
        t->cap_frames = frames;
        t->cap_contexts = contexts;
        t->cap_strings = strings;
        t->frame = xmalloc((size_t) frames * sizeof(uint64_t));
        t->stack = xmalloc((size_t) counts * sizeof(struct stacks_stack));
        t->count = xmalloc((size_t) counts * sizeof(struct stacks_count));
        t->ctx = xmalloc((size_t) contexts * sizeof(struct stacks_ctx));
        t->str = xmalloc(strings);
        index_init(&t->stack_ix, counts);
        index_init(&t->count_ix, counts);
        index_init(&t->ctx_ix, contexts);
        /* Each new context brings at most _STACKS_STR_MAX new strings. */
        index_init(&t->str_ix, contexts * _STACKS_STR_MAX);
        stacks_reset(t);
        return t;
}

struct stacks *stacks_free(struct stacks *t) {
        if (!t)
                return NULL;
        free(t->frame);
        free(t->stack);
        free(t->count);
        free(t->ctx);
        free(t->str);
        free(t->stack_ix.slot);
        free(t->count_ix.slot);
        free(t->ctx_ix.slot);
        free(t->str_ix.slot);
        free(t);
        return NULL;
}

void stacks_reset(struct stacks *t) {
        /* Slots are only taken with an entry: an epoch without stacks (SPE alone) leaves nothing to clear. */
        if (t->n_stacks || t->n_contexts || t->n_counts) {
                index_clear(&t->stack_ix);
                index_clear(&t->count_ix);
                index_clear(&t->ctx_ix);
                index_clear(&t->str_ix);
        }
        t->n_stacks = t->n_frames = t->n_contexts = t->n_counts = 0;
        /* Offset 0 is the empty string, so "" needs neither pool bytes nor a lookup. */
        t->str[0] = '\0';
        t->n_strings = 1;
        t->samples = t->weight = t->dropped = 0;
}

size_t stacks_bytes(uint32_t counts, uint32_t frames, uint32_t contexts, uint32_t strings) {
        return sizeof(struct stacks) + (size_t) frames * sizeof(uint64_t) +
                (size_t) counts * (sizeof(struct stacks_stack) + sizeof(struct stacks_count)) +
                (size_t) contexts * sizeof(struct stacks_ctx) + strings +
                2 * index_bytes(counts) + index_bytes(contexts) + index_bytes(contexts * _STACKS_STR_MAX);
}

/* The summary's arrays, in this order, all 8-byte aligned but the strings at the end. */
static size_t summary_size(uint32_t n_frames, uint32_t n_counts, uint32_t n_stacks, uint32_t n_contexts,
                           uint32_t n_strings) {
        return sizeof(struct stacks_summary) + (size_t) n_frames * sizeof(uint64_t) +
                (size_t) n_counts * sizeof(struct stacks_count) + (size_t) n_stacks * sizeof(struct stacks_stack) +
                (size_t) n_contexts * sizeof(struct stacks_ctx) + n_strings;
}

size_t stacks_summary_bytes(uint32_t counts, uint32_t frames, uint32_t contexts, uint32_t strings) {
        return summary_size(frames, counts, counts, contexts, strings);
}

size_t stacks_summary_size(const struct stacks_summary *s) {
        return summary_size(s->n_frames, s->n_counts, s->n_stacks, s->n_contexts, s->n_strings);
}

/* A string's slot in the pool's index: the one holding it, or the empty one where it goes. */
static struct stacks_slot *str_find(const struct stacks *t, const char *s, size_t len, uint64_t h) {
        struct stacks_slot *slot;

        INDEX_FOR_EACH(&t->str_ix, h, slot) {
                const char *p;

                if (slot->idx1 == 0)
                        return slot;
                p = t->str + slot->idx1;
                if (slot->hash == (uint32_t) h && strncmp(p, s, len) == 0 && p[len] == '\0')
                        return slot;
        }
        return NULL;    /* not reached: the index is never full */
}

static bool ctx_eq(const char *pool, const struct stacks_ctx *c, uint32_t pid, uint32_t tid,
                   const char *const *str, const size_t *len) {
        if (c->pid != pid || c->tid != tid)
                return false;
        for (unsigned i = 0; i < _STACKS_STR_MAX; i++) {
                const char *p = pool + c->str[i];

                if (strncmp(p, str[i], len[i]) != 0 || p[len[i]] != '\0')
                        return false;
        }
        return true;
}

static struct stacks_slot *stack_find(const struct stacks_index *ix, const struct stacks_stack *stacks,
                                      const uint64_t *pool, const uint64_t *frames, size_t n, uint64_t h) {
        struct stacks_slot *slot;

        INDEX_FOR_EACH(ix, h, slot) {
                const struct stacks_stack *st;

                if (slot->idx1 == 0)
                        return slot;
                st = &stacks[slot->idx1 - 1];
                if (st->hash == h && st->n == n && memcmp(pool + st->first, frames, n * sizeof(uint64_t)) == 0)
                        return slot;
        }
        return NULL;
}

static struct stacks_slot *count_find(const struct stacks_index *ix, const struct stacks_count *counts,
                                      uint32_t ctx, uint32_t stack) {
        uint64_t h = count_hash(ctx, stack);
        struct stacks_slot *slot;

        INDEX_FOR_EACH(ix, h, slot) {
                if (slot->idx1 == 0)
                        return slot;
                if (counts[slot->idx1 - 1].ctx == ctx && counts[slot->idx1 - 1].stack == stack)
                        return slot;
        }
        return NULL;
}

bool stacks_add(struct stacks *t, const struct stacks_task *task, const uint64_t *frames, size_t n,
                uint64_t weight) {
        const char *str[_STACKS_STR_MAX];
        size_t len[_STACKS_STR_MAX];
        uint64_t sh[_STACKS_STR_MAX], ch, fh;
        struct stacks_slot *ctx_slot, *stack_slot, *count_slot, *str_slot[_STACKS_STR_MAX] = {};
        uint32_t ctx_id, stack_id;
        bool new_ctx, new_stack;

        t->samples++;
        t->weight += weight;
        if (n == 0 || n > t->cap_frames)
                goto drop;

        for (unsigned i = 0; i < _STACKS_STR_MAX; i++) {
                str[i] = task->str[i] ?: "";
                len[i] = strnlen(str[i], str_max[i]);
                sh[i] = str_hash(str[i], len[i]);
        }
        ch = ctx_hash(task->pid, task->tid, sh);
        INDEX_FOR_EACH(&t->ctx_ix, ch, ctx_slot)
                if (ctx_slot->idx1 == 0 ||
                    (ctx_slot->hash == (uint32_t) ch &&
                     ctx_eq(t->str, &t->ctx[ctx_slot->idx1 - 1], task->pid, task->tid, str, len)))
                        break;
        new_ctx = ctx_slot->idx1 == 0;
        if (new_ctx) {
                size_t need = 0;

                if (t->n_contexts == t->cap_contexts)
                        goto drop;
                /* The pool bytes of the strings it does not hold yet, each counted once. */
                for (unsigned i = 0; i < _STACKS_STR_MAX; i++) {
                        bool again = false;

                        if (len[i] == 0)
                                continue;
                        for (unsigned j = 0; j < i && !again; j++)
                                again = len[j] == len[i] && memcmp(str[j], str[i], len[i]) == 0;
                        if (again)
                                continue;
                        str_slot[i] = str_find(t, str[i], len[i], sh[i]);
                        if (str_slot[i]->idx1 == 0)
                                need += len[i] + 1;
                }
                if (need > t->cap_strings - t->n_strings)
                        goto drop;
        }

        fh = stacks_frames_hash(frames, n);
        stack_slot = stack_find(&t->stack_ix, t->stack, t->frame, frames, n, fh);
        new_stack = stack_slot->idx1 == 0;
        if (new_stack && (t->n_stacks == t->cap_counts || n > t->cap_frames - t->n_frames))
                goto drop;

        if (!new_ctx && !new_stack) {
                count_slot = count_find(&t->count_ix, t->count, ctx_slot->idx1 - 1, stack_slot->idx1 - 1);
                if (count_slot->idx1 != 0) {
                        struct stacks_count *c = &t->count[count_slot->idx1 - 1];

                        c->count++;
                        c->weight += weight;
                        return true;
                }
        }
        if (t->n_counts == t->cap_counts)
                goto drop;

        /* Everything fits: insert. */
        if (new_ctx) {
                struct stacks_ctx *c = &t->ctx[t->n_contexts];

                c->pid = task->pid;
                c->tid = task->tid;
                for (unsigned i = 0; i < _STACKS_STR_MAX; i++) {
                        /* An equal earlier string was just inserted: its slot now holds it. */
                        struct stacks_slot *slot = len[i] == 0 ? NULL : str_find(t, str[i], len[i], sh[i]);

                        if (!slot)
                                c->str[i] = 0;
                        else if (slot->idx1 != 0)
                                c->str[i] = slot->idx1;
                        else {
                                memcpy(t->str + t->n_strings, str[i], len[i]);
                                t->str[t->n_strings + len[i]] = '\0';
                                *slot = (struct stacks_slot) { t->n_strings, (uint32_t) sh[i] };
                                c->str[i] = t->n_strings;
                                t->n_strings += (uint32_t) (len[i] + 1);
                        }
                }
                *ctx_slot = (struct stacks_slot) { ++t->n_contexts, (uint32_t) ch };
        }
        ctx_id = ctx_slot->idx1 - 1;
        if (new_stack) {
                t->stack[t->n_stacks] = (struct stacks_stack) { .hash = fh, .first = t->n_frames, .n = (uint32_t) n };
                memcpy(t->frame + t->n_frames, frames, n * sizeof(uint64_t));
                t->n_frames += (uint32_t) n;
                *stack_slot = (struct stacks_slot) { ++t->n_stacks, (uint32_t) fh };
        }
        stack_id = stack_slot->idx1 - 1;
        count_slot = count_find(&t->count_ix, t->count, ctx_id, stack_id);
        t->count[t->n_counts] = (struct stacks_count) { .ctx = ctx_id, .stack = stack_id, .count = 1, .weight = weight };
        *count_slot = (struct stacks_slot) { ++t->n_counts, (uint32_t) count_hash(ctx_id, stack_id) };
        return true;

drop:
        t->dropped++;
        return false;
}

struct stacks_summary *stacks_freeze(const struct stacks *t) {
        struct stacks_summary *s;
        uint8_t *p;

        s = xmalloc(summary_size(t->n_frames, t->n_counts, t->n_stacks, t->n_contexts, t->n_strings));
        *s = (struct stacks_summary) {
                .n_stacks = t->n_stacks,
                .n_frames = t->n_frames,
                .n_contexts = t->n_contexts,
                .n_counts = t->n_counts,
                .n_strings = t->n_strings,
                .samples = t->samples,
                .weight = t->weight,
                .dropped = t->dropped,
        };
        p = (uint8_t *) s->data;
        s->frame = memcpy(p, t->frame, (size_t) t->n_frames * sizeof(uint64_t));
        p += (size_t) t->n_frames * sizeof(uint64_t);
        s->count = memcpy(p, t->count, (size_t) t->n_counts * sizeof(struct stacks_count));
        p += (size_t) t->n_counts * sizeof(struct stacks_count);
        s->stack = memcpy(p, t->stack, (size_t) t->n_stacks * sizeof(struct stacks_stack));
        p += (size_t) t->n_stacks * sizeof(struct stacks_stack);
        s->ctx = memcpy(p, t->ctx, (size_t) t->n_contexts * sizeof(struct stacks_ctx));
        p += (size_t) t->n_contexts * sizeof(struct stacks_ctx);
        s->str = memcpy(p, t->str, t->n_strings);
        return s;
}

/* ---- merging epochs ---- */

#define MAP_NONE        UINT32_MAX              /* not looked at yet */
#define MAP_FILTERED    (UINT32_MAX - 1)        /* a context the filter drops */

struct merge {
        /* result contexts: strings as offsets into strs until the end */
        struct stacks_ctx *ctx;
        size_t n_ctx;
        struct stacks_index ctx_ix;
        struct strbuf strs;
        /* result stacks: frames in one array sized for the sum of the epochs' pools */
        struct stacks_stack *stack;
        size_t n_stack;
        struct stacks_index stack_ix;
        uint64_t *frame;
        size_t n_frame;
        /* result counts */
        struct stacks_count *count;
        size_t n_count;
        struct stacks_index count_ix;
};

static bool prefix_ok(const char *cgroup, const char *prefix) {
        return !prefix || !*prefix || strncmp(cgroup, prefix, strlen(prefix)) == 0;
}

/* The result context of an epoch's context c (strings in pool), adding it on first sight. */
static uint32_t merge_ctx(struct merge *m, const struct stacks_ctx *c, const char *pool) {
        const char *str[_STACKS_STR_MAX];
        size_t len[_STACKS_STR_MAX];
        uint64_t sh[_STACKS_STR_MAX], h;
        struct stacks_slot *slot;
        struct stacks_ctx *r;

        for (unsigned i = 0; i < _STACKS_STR_MAX; i++) {
                str[i] = pool + c->str[i];
                len[i] = strlen(str[i]);
                sh[i] = str_hash(str[i], len[i]);
        }
        h = ctx_hash(c->pid, c->tid, sh);
        INDEX_FOR_EACH(&m->ctx_ix, h, slot) {
                if (slot->idx1 == 0)
                        break;
                if (slot->hash == (uint32_t) h && ctx_eq(m->strs.buf, &m->ctx[slot->idx1 - 1], c->pid, c->tid, str, len))
                        return slot->idx1 - 1;
        }
        r = &m->ctx[m->n_ctx];
        r->pid = c->pid;
        r->tid = c->tid;
        for (unsigned i = 0; i < _STACKS_STR_MAX; i++) {
                r->str[i] = (uint32_t) m->strs.len;
                strbuf_append(&m->strs, str[i], len[i] + 1);
        }
        *slot = (struct stacks_slot) { (uint32_t) ++m->n_ctx, (uint32_t) h };
        return (uint32_t) m->n_ctx - 1;
}

static uint32_t merge_stack(struct merge *m, const struct stacks_stack *st, const uint64_t *pool) {
        const uint64_t *frames = pool + st->first;
        struct stacks_slot *slot = stack_find(&m->stack_ix, m->stack, m->frame, frames, st->n, st->hash);

        if (slot->idx1 != 0)
                return slot->idx1 - 1;
        m->stack[m->n_stack] = (struct stacks_stack) { .hash = st->hash, .first = (uint32_t) m->n_frame, .n = st->n };
        memcpy(m->frame + m->n_frame, frames, (size_t) st->n * sizeof(uint64_t));
        m->n_frame += st->n;
        *slot = (struct stacks_slot) { (uint32_t) ++m->n_stack, (uint32_t) st->hash };
        return (uint32_t) m->n_stack - 1;
}

static int cmp_frames(const struct store_stack *a, const struct store_stack *b) {
        for (size_t i = 0; i < MIN(a->n_frames, b->n_frames); i++)
                if (a->frames[i] != b->frames[i])
                        return a->frames[i] < b->frames[i] ? -1 : 1;
        return a->n_frames < b->n_frames ? -1 : a->n_frames > b->n_frames;
}

/* Heaviest first; ties in an order that does not depend on hashing or epoch order. */
static int cmp_stack(const void *x, const void *y) {
        const struct store_stack *a = x, *b = y;
        int c;

        if (a->weight != b->weight)
                return a->weight > b->weight ? -1 : 1;
        if (a->count != b->count)
                return a->count > b->count ? -1 : 1;
        if (a->pid != b->pid)
                return a->pid < b->pid ? -1 : 1;
        if (a->tid != b->tid)
                return a->tid < b->tid ? -1 : 1;
        c = cmp_frames(a, b);
        if (c == 0)
                c = strcmp(a->comm, b->comm);
        if (c == 0)
                c = strcmp(a->thread, b->thread);
        if (c == 0)
                c = strcmp(a->cgroup, b->cgroup);
        if (c == 0)
                c = strcmp(a->service, b->service);
        return c;
}

int stacks_merge(const struct stacks_summary *const *s, size_t n, uint32_t pid, const char *cgroup_prefix,
                 struct store_stacks_result *ret) {
        size_t sum_ctx = 0, sum_stacks = 0, sum_frames = 0, sum_counts = 0;
        struct merge m = { .strs = STRBUF_INIT };
        struct store_stack *out;

        for (size_t i = 0; i < n; i++) {
                sum_ctx += s[i]->n_contexts;
                sum_stacks += s[i]->n_stacks;
                sum_frames += s[i]->n_frames;
                sum_counts += s[i]->n_counts;
        }
        /* The merge's indexes and pools use 32-bit numbers; tables this large only come from a
         * configuration far beyond any default (STORE_TABLE_MAX x many epochs). */
        if (sum_ctx > STORE_STACKS_QUERY_MAX || sum_stacks > STORE_STACKS_QUERY_MAX ||
            sum_counts > STORE_STACKS_QUERY_MAX || sum_frames > UINT32_MAX)
                return -E2BIG;
        m.ctx = xmalloc(MAX(sum_ctx, (size_t) 1) * sizeof(*m.ctx));
        m.stack = xmalloc(MAX(sum_stacks, (size_t) 1) * sizeof(*m.stack));
        m.frame = xmalloc(MAX(sum_frames, (size_t) 1) * sizeof(*m.frame));
        m.count = xmalloc(MAX(sum_counts, (size_t) 1) * sizeof(*m.count));
        index_init(&m.ctx_ix, (uint32_t) MAX(sum_ctx, (size_t) 1));
        index_init(&m.stack_ix, (uint32_t) MAX(sum_stacks, (size_t) 1));
        index_init(&m.count_ix, (uint32_t) MAX(sum_counts, (size_t) 1));

        for (size_t i = 0; i < n; i++) {
                const struct stacks_summary *e = s[i];
                uint32_t *ctx_map = xmalloc(MAX(e->n_contexts, 1U) * sizeof(uint32_t));
                uint32_t *stack_map = xmalloc(MAX(e->n_stacks, 1U) * sizeof(uint32_t));

                for (uint32_t j = 0; j < e->n_contexts; j++) {
                        const struct stacks_ctx *c = &e->ctx[j];

                        ctx_map[j] = (pid == STORE_PID_ANY || c->pid == pid) &&
                                             prefix_ok(e->str + c->str[STACKS_STR_CGROUP], cgroup_prefix) ?
                                MAP_NONE : MAP_FILTERED;
                }
                for (uint32_t j = 0; j < e->n_stacks; j++)
                        stack_map[j] = MAP_NONE;
                for (uint32_t j = 0; j < e->n_counts; j++) {
                        const struct stacks_count *c = &e->count[j];
                        struct stacks_slot *slot;

                        if (ctx_map[c->ctx] == MAP_FILTERED)
                                continue;
                        if (ctx_map[c->ctx] == MAP_NONE)
                                ctx_map[c->ctx] = merge_ctx(&m, &e->ctx[c->ctx], e->str);
                        if (stack_map[c->stack] == MAP_NONE)
                                stack_map[c->stack] = merge_stack(&m, &e->stack[c->stack], e->frame);
                        slot = count_find(&m.count_ix, m.count, ctx_map[c->ctx], stack_map[c->stack]);
                        if (slot->idx1 != 0) {
                                m.count[slot->idx1 - 1].count += c->count;
                                m.count[slot->idx1 - 1].weight += c->weight;
                                continue;
                        }
                        m.count[m.n_count] = (struct stacks_count) {
                                .ctx = ctx_map[c->ctx],
                                .stack = stack_map[c->stack],
                                .count = c->count,
                                .weight = c->weight,
                        };
                        *slot = (struct stacks_slot) {
                                (uint32_t) ++m.n_count,
                                (uint32_t) count_hash(ctx_map[c->ctx], stack_map[c->stack]),
                        };
                }
                free(ctx_map);
                free(stack_map);
        }

        /* The pools are final now: pointers into them stay valid. */
        ret->strings = strbuf_steal(&m.strs, NULL);
        ret->frames = m.frame;
        out = xmalloc(MAX(m.n_count, (size_t) 1) * sizeof(*out));
        for (size_t i = 0; i < m.n_count; i++) {
                const struct stacks_ctx *c = &m.ctx[m.count[i].ctx];
                const struct stacks_stack *st = &m.stack[m.count[i].stack];

                out[i] = (struct store_stack) {
                        .pid = c->pid,
                        .tid = c->tid,
                        .comm = ret->strings + c->str[STACKS_STR_COMM],
                        .thread = ret->strings + c->str[STACKS_STR_THREAD],
                        .cgroup = ret->strings + c->str[STACKS_STR_CGROUP],
                        .service = ret->strings + c->str[STACKS_STR_SERVICE],
                        .frames = ret->frames + st->first,
                        .n_frames = st->n,
                        .count = m.count[i].count,
                        .weight = m.count[i].weight,
                };
        }
        qsort(out, m.n_count, sizeof(*out), cmp_stack);
        ret->stacks = out;
        ret->n = m.n_count;

        free(m.ctx);
        free(m.stack);
        free(m.count);
        free(m.ctx_ix.slot);
        free(m.stack_ix.slot);
        free(m.count_ix.slot);
        return 0;
}
