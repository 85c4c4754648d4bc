/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "hotpcs.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

struct hotpcs *hotpcs_new(uint32_t capacity) {
        struct hotpcs *h;

        if (capacity == 0)
                return NULL;
        h = xcalloc(1, sizeof(*h));
        h->capacity = capacity;
        keytab_init(&h->tab, capacity);
        ssum_init(&h->ss, capacity);
        h->last = xcalloc(capacity, sizeof(uint64_t));
        h->order = xcalloc(capacity, sizeof(uint32_t));
        h->item = xcalloc(capacity, sizeof(struct hotpcs_item));
        return h;
}

struct hotpcs *hotpcs_free(struct hotpcs *h) {
        if (!h)
                return NULL;
        keytab_done(&h->tab);
        ssum_done(&h->ss);
        free(h->last);
        free(h->order);
        free(h->item);
        free(h);
        return NULL;
}

void hotpcs_reset(struct hotpcs *h) {
        keytab_clear(&h->tab);
        ssum_reset(&h->ss);
        h->built = false;
        h->n = 0;
        h->total = 0;
        h->evictions = 0;
}

size_t hotpcs_bytes(uint32_t capacity) {
        return sizeof(struct hotpcs) + keytab_bytes(capacity) + ssum_bytes(capacity) +
                (size_t) capacity * (sizeof(uint64_t) + sizeof(uint32_t) + sizeof(struct hotpcs_item));
}

size_t hotpcs_summary_bytes(uint32_t capacity) {
        return sizeof(struct hotpcs_summary) + (size_t) capacity * sizeof(struct hotpcs_item);
}

static int cmp_built(const void *x, const void *y, void *userdata) {
        const struct hotpcs *h = userdata;
        uint32_t a = *(const uint32_t *) x, b = *(const uint32_t *) y;

        if (h->item[a].count != h->item[b].count)
                return h->item[a].count < h->item[b].count ? -1 : 1;
        return h->last[a] < h->last[b] ? -1 : h->last[a] > h->last[b];
}

/*
 * Unit steps put an entry first in the bucket of the count it reaches
 * (ssum_push(), ssum_inc()), and moves out of a bucket keep the others'
 * order: inside a bucket the entries are in the order of their last
 * updates, the latest first. Attaching each bucket's entries latest last
 * does the same (ssum_attach() puts an entry first). Steps are distinct
 * (one sample, one entry), so the order is total.
 */
void hotpcs_build(struct hotpcs *h) {
        uint32_t *order = h->order, k = SSUM_NIL;

        for (uint32_t i = 0; i < h->n; i++)
                order[i] = i;
        qsort_r(order, h->n, sizeof(uint32_t), cmp_built, h);
        ssum_reset(&h->ss);
        for (uint32_t i = 0; i < h->n; i++) {
                uint32_t e = order[i];

                if (k == SSUM_NIL || h->ss.b[k].count != h->item[e].count)
                        k = ssum_bucket_new(&h->ss, k, h->item[e].count);
                ssum_attach(&h->ss, e, k);
        }
        h->ss.n = h->n;
        h->built = true;
}

static uint64_t count_of(const struct hotpcs *h, uint32_t i) {
        return h->built ? ssum_score(&h->ss, i) : h->item[i].count;
}

static uint64_t min_count(const struct hotpcs *h) {
        uint64_t min = UINT64_MAX;

        if (h->built)
                return ssum_min_score(&h->ss);
        for (uint32_t i = 0; i < h->n; i++)
                min = MIN(min, h->item[i].count);
        return h->n ? min : 0;
}

void hotpcs_add_key(struct hotpcs *h, uint64_t pc, uint64_t b, uint32_t pid, uint8_t el,
                    const struct comm *comm, enum hotpcs_op op, uint64_t ev_bits, uint32_t lat) {
        hotpcs_add_hashed(h, hotpcs_hash(pc, b), pc, b, pid, el, comm, op, hotpcs_events(ev_bits), lat);
}

void hotpcs_add_pc(struct hotpcs *h, uint32_t pid, uint64_t pc, uint8_t el, const struct comm *comm) {
        uint64_t b = hotpcs_pc_key(pid, el, comm ? comm_hash(comm) : 0);

        (void) hotpcs_count(h, hotpcs_hash(pc, b), pc, b, pid, el, comm);
}

struct hotpcs_summary *hotpcs_freeze(const struct hotpcs *h) {
        struct hotpcs_summary *s;

        s = xmalloc(sizeof(*s) + (size_t) h->n * sizeof(struct hotpcs_item));
        s->capacity = h->capacity;
        s->n = h->n;
        s->total = h->total;
        s->min = h->n == h->capacity ? min_count(h) : 0;
        s->evictions = h->evictions;
        for (uint32_t i = 0; i < h->n; i++) {
                s->item[i] = h->item[i];
                s->item[i].count = count_of(h, i);
        }
        return s;
}

/* One candidate while merging. */
struct cand {
        struct hotpcs_item it;          /* count = sum of present counts, error = sum of present errors */
        uint64_t min_present;           /* sum of m_i over the summaries holding the key */
        uint64_t g;                     /* MG counter */
};

static int cmp_key(const void *x, const void *y) {
        const struct cand *a = x, *b = y;

        if (a->it.pc != b->it.pc)
                return a->it.pc < b->it.pc ? -1 : 1;
        return a->it.key < b->it.key ? -1 : a->it.key > b->it.key;
}

static int cmp_g(const void *x, const void *y) {
        const struct cand *a = x, *b = y;

        if (a->g != b->g)
                return a->g > b->g ? -1 : 1;
        if (a->it.count != b->it.count)
                return a->it.count > b->it.count ? -1 : 1;
        return cmp_key(x, y);
}

static int cmp_count(const void *x, const void *y) {
        const struct hotpcs_item *a = x, *b = y;

        if (a->count != b->count)
                return a->count > b->count ? -1 : 1;
        if (a->pc != b->pc)
                return a->pc < b->pc ? -1 : 1;
        return a->key < b->key ? -1 : a->key > b->key;
}

void hotpcs_merge(const struct hotpcs_summary *const *s, size_t n, uint32_t pid,
                  size_t limit, struct hotpcs_merged *ret) {
        struct hotpcs_merged m = {};
        struct cand *c;
        size_t nc = 0, ng = 0, total_items = 0;
        uint64_t sum_min = 0;

        for (size_t i = 0; i < n; i++) {
                total_items += s[i]->n;
                sum_min += s[i]->min;
                m.total += s[i]->total;
                m.evictions += s[i]->evictions;
                m.capacity = MAX(m.capacity, s[i]->capacity);
        }
        m.error_bound = sum_min;

        c = xmalloc(MAX(total_items, (size_t) 1) * sizeof(*c));
        for (size_t i = 0; i < n; i++)
                for (uint32_t j = 0; j < s[i]->n; j++) {
                        const struct hotpcs_item *it = &s[i]->item[j];

                        if (pid != HOTPCS_PID_ANY && it->pid != pid)
                                continue;
                        c[nc++] = (struct cand) {
                                .it = *it,
                                .min_present = s[i]->min,
                                .g = it->count - s[i]->min,
                        };
                }

        qsort(c, nc, sizeof(*c), cmp_key);
        for (size_t i = 0; i < nc; ) {
                struct cand g = c[i];
                size_t j = i + 1;

                for (; j < nc && cmp_key(&c[j], &g) == 0; j++) {
                        g.it.count += c[j].it.count;
                        g.it.error += c[j].it.error;
                        g.min_present += c[j].min_present;
                        g.g += c[j].g;
                        for (unsigned k = 0; k < _HOTPCS_OP_MAX; k++)
                                g.it.ops[k] += c[j].it.ops[k];
                        for (unsigned k = 0; k < _HOTPCS_EV_MAX; k++)
                                g.it.events[k] += c[j].it.events[k];
                        g.it.lat_sum += c[j].it.lat_sum;
                }
                /* Absent from a summary: the true count there is at most its minimum. */
                g.it.count += sum_min - g.min_present;
                g.it.error += sum_min - g.min_present;
                c[ng++] = g;
                i = j;
        }

        qsort(c, ng, sizeof(*c), cmp_g);
        if (m.capacity > 0)
                ng = MIN(ng, (size_t) m.capacity);
        m.item = xmalloc(MAX(ng, (size_t) 1) * sizeof(struct hotpcs_item));
        for (size_t i = 0; i < ng; i++)
                m.item[i] = c[i].it;
        free(c);
        qsort(m.item, ng, sizeof(struct hotpcs_item), cmp_count);
        m.n = MIN(ng, limit);
        *ret = m;
}

void hotpcs_merged_done(struct hotpcs_merged *m) {
        if (!m)
                return;
        free(m->item);
        m->item = NULL;
        m->n = 0;
}
