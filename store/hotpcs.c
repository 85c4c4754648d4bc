/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "hotpcs.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "spe-pkt.h"
#include "strbuf.h"

static const uint8_t ev_bit[_HOTPCS_EV_MAX] = {
        [HOTPCS_EV_L1D_REFILL]  = SPE_EV_L1D_REFILL,
        [HOTPCS_EV_LLC_MISS]    = SPE_EV_LLC_MISS,
        [HOTPCS_EV_TLB_WALK]    = SPE_EV_TLB_WALK,
        [HOTPCS_EV_MISPRED]     = SPE_EV_MISPRED,
};

struct hotpcs *hotpcs_new(uint32_t capacity) {
        struct hotpcs *h;

        if (capacity == 0)
                return NULL;
        h = xcalloc(1, sizeof(*h));
        h->capacity = capacity;
        keytab_init(&h->tab, capacity);
        ssum_init(&h->ss, capacity);
        h->item = xcalloc(capacity, sizeof(struct hotpcs_item));
        return h;
}

struct hotpcs *hotpcs_free(struct hotpcs *h) {
        if (!h)
                return NULL;
        keytab_done(&h->tab);
        ssum_done(&h->ss);
        free(h->item);
        free(h);
        return NULL;
}

void hotpcs_reset(struct hotpcs *h) {
        keytab_clear(&h->tab);
        ssum_reset(&h->ss);
        h->n = 0;
        h->total = 0;
        h->evictions = 0;
}

size_t hotpcs_bytes(uint32_t capacity) {
        return sizeof(struct hotpcs) + keytab_bytes(capacity) + ssum_bytes(capacity) +
                (size_t) capacity * sizeof(struct hotpcs_item);
}

size_t hotpcs_summary_bytes(uint32_t capacity) {
        return sizeof(struct hotpcs_summary) + (size_t) capacity * sizeof(struct hotpcs_item);
}

/* Count one sample of (pc, b) and return its entry: Space-Saving's update (hotpcs.h). Inlined into
 * both callers, so the SPE path, hotpcs_add_key(), runs the code it ran before hotpcs_add_pc() shared it. */
static inline __attribute__((always_inline)) struct hotpcs_item *count_key(struct hotpcs *h, uint64_t pc, uint64_t b, uint32_t pid, uint8_t el) {
        struct keytab_slot *s = keytab_lookup(&h->tab, pc, b);
        struct hotpcs_item *it;
        uint32_t idx;

        h->total++;
        if (s->idx != KEYTAB_NONE) {
                idx = s->idx;
                ssum_add(&h->ss, idx, 1);
        } else if (h->n < h->capacity) {
                idx = h->n++;
                keytab_set(s, pc, b, idx);
                it = &h->item[idx];
                memset(it, 0, sizeof(*it));
                it->pc = pc;
                it->key = b;
                it->pid = pid;
                it->el = el;
                ssum_push(&h->ss, idx, 1);
        } else {
                /* Space-Saving: the new key takes over the minimum counter. */
                uint64_t min = ssum_min_score(&h->ss);

                idx = ssum_min_idx(&h->ss);
                it = &h->item[idx];
                keytab_remove(&h->tab, it->pc, it->key);
                keytab_set(keytab_lookup(&h->tab, pc, b), pc, b, idx);
                memset(it, 0, sizeof(*it));
                it->pc = pc;
                it->key = b;
                it->pid = pid;
                it->el = el;
                it->error = min;
                ssum_add(&h->ss, idx, 1);
                h->evictions++;
        }
        return &h->item[idx];
}

void hotpcs_add_key(struct hotpcs *h, uint64_t pc, uint64_t b, uint32_t pid, uint8_t el,
                    enum hotpcs_op op, uint64_t ev_bits, uint32_t lat) {
        struct hotpcs_item *it = count_key(h, pc, b, pid, el);

        it->ops[op]++;
        for (unsigned e = 0; e < _HOTPCS_EV_MAX; e++)
                it->events[e] += (ev_bits >> ev_bit[e]) & 1;
        it->lat_sum += lat;
}

void hotpcs_add_pc(struct hotpcs *h, uint32_t pid, uint64_t pc, uint8_t el) {
        (void) count_key(h, pc, pid | (uint64_t) el << HOTPCS_EL_SHIFT, pid, el);
}

struct hotpcs_summary *hotpcs_freeze(const struct hotpcs *h) {
        struct hotpcs_summary *s;

        s = xmalloc(sizeof(*s) + (size_t) h->n * sizeof(struct hotpcs_item));
        s->capacity = h->capacity;
        s->n = h->n;
        s->total = h->total;
        s->min = h->n == h->capacity ? ssum_min_score(&h->ss) : 0;
        s->evictions = h->evictions;
        for (uint32_t i = 0; i < h->n; i++) {
                s->item[i] = h->item[i];
                s->item[i].count = ssum_score(&h->ss, i);
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
