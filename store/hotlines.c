/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "hotlines.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

#define HOTLINES_LINE_SIZE_MIN  4U

static const char *const class_names[_HOTLINES_CLASS_MAX] = {
        [HOTLINES_READ_ONLY]            = "read_only",
        [HOTLINES_WRITTEN]              = "written",
        [HOTLINES_TRUE_SHARING]         = "true_sharing",
        [HOTLINES_FALSE_SHARING]        = "false_sharing",
};

const char *hotlines_class_name(enum hotlines_class c) {
        if ((unsigned) c >= ELEMENTSOF(class_names))
                return "unknown";
        return class_names[c];
}

struct hotlines *hotlines_new(uint32_t capacity, uint32_t offsets, uint32_t line_size) {
        struct hotlines *h;

        if (capacity == 0 || offsets == 0 || offsets > UINT16_MAX ||
            line_size < HOTLINES_LINE_SIZE_MIN || line_size > HOTLINES_LINE_SIZE_MAX ||
            (line_size & (line_size - 1)) != 0)
                return NULL;

        h = xcalloc(1, sizeof(*h));
        h->capacity = capacity;
        h->offsets = offsets;
        h->line_size = line_size;
        keytab_init(&h->tab, capacity);
        ssum_init(&h->ss, capacity);
        h->line = xcalloc(capacity, sizeof(struct hotlines_line));
        h->off = xcalloc((size_t) capacity * offsets, sizeof(struct hotlines_off));
        h->offtag = xcalloc((size_t) capacity * offsets, sizeof(uint64_t));
        h->offscore = xcalloc((size_t) capacity * offsets, sizeof(uint32_t));
        return h;
}

struct hotlines *hotlines_free(struct hotlines *h) {
        if (!h)
                return NULL;
        keytab_done(&h->tab);
        ssum_done(&h->ss);
        free(h->line);
        free(h->off);
        free(h->offtag);
        free(h->offscore);
        free(h);
        return NULL;
}

void hotlines_reset(struct hotlines *h) {
        keytab_clear(&h->tab);
        ssum_reset(&h->ss);
        h->n = 0;
        h->records = 0;
        h->evictions = 0;
        h->off_evictions = 0;
}

size_t hotlines_bytes(uint32_t capacity, uint32_t offsets) {
        return sizeof(struct hotlines) + keytab_bytes(capacity) + ssum_bytes(capacity) +
                (size_t) capacity * sizeof(struct hotlines_line) +
                (size_t) capacity * offsets * (sizeof(struct hotlines_off) + sizeof(uint64_t) + sizeof(uint32_t));
}

size_t hotlines_summary_bytes(uint32_t capacity, uint32_t offsets) {
        return sizeof(struct hotlines_summary) +
                (size_t) capacity * sizeof(struct hotlines_line) +
                (size_t) capacity * offsets * sizeof(struct hotlines_off);
}

void hotlines_add(struct hotlines *h, const struct hotlines_access *a) {
        hotlines_add_hashed(h, a, hotlines_hash(h, a));
}

struct hotlines_summary *hotlines_freeze(const struct hotlines *h) {
        struct hotlines_summary *s;
        size_t noffs = 0;
        uint32_t k = 0;

        for (uint32_t i = 0; i < h->n; i++)
                noffs += h->line[i].noffs;

        s = xmalloc(sizeof(*s) + (size_t) h->n * sizeof(struct hotlines_line) +
                    noffs * sizeof(struct hotlines_off));
        *s = (struct hotlines_summary) {
                .capacity = h->capacity,
                .offsets = h->offsets,
                .line_size = h->line_size,
                .n = h->n,
                .noffs = (uint32_t) noffs,
                .records = h->records,
                .min = h->n == h->capacity ? ssum_min_score(&h->ss) : 0,
                .evictions = h->evictions,
                .off_evictions = h->off_evictions,
        };
        s->line = (struct hotlines_line *) (s + 1);
        s->off = (struct hotlines_off *) (s->line + h->n);
        for (uint32_t i = 0; i < h->n; i++) {
                s->line[i] = h->line[i];
                s->line[i].score = ssum_score(&h->ss, i);
                s->line[i].first_off = k;
                memcpy(&s->off[k], &h->off[(size_t) i * h->offsets],
                       h->line[i].noffs * sizeof(struct hotlines_off));
                for (unsigned j = 0; j < h->line[i].noffs; j++)
                        s->off[k + j].score = h->offscore[(size_t) i * h->offsets + j];
                k += h->line[i].noffs;
        }
        return s;
}

/* ---- merging and classification (reader side) ---- */

static uint64_t line_peer(const struct hotlines_line *l) {
        return l->peer_local + l->peer_remote;
}

static bool cpus_differ(const struct hotlines_off *a, const struct hotlines_off *b) {
        if (a->ncpus == 0 || b->ncpus == 0)
                return false;
        /* A list of two or more holds two distinct CPUs, one differs from b's. */
        if (a->ncpus > 1 || b->ncpus > 1)
                return true;
        return a->cpus[0] != b->cpus[0];
}

unsigned hotlines_classify(const struct hotlines_off *off, size_t n, uint64_t stores, uint64_t peer_snoops) {
        unsigned f = stores > 0 ? HOTLINES_F_WRITTEN : 0;

        for (size_t i = 0; i < n; i++) {
                const struct hotlines_off *x = &off[i];

                if (x->ncpus > 1)
                        f |= HOTLINES_F_SHARED;
                for (size_t j = 0; j < n; j++) {
                        const struct hotlines_off *y = &off[j];

                        if (!cpus_differ(x, y))
                                continue;
                        f |= HOTLINES_F_SHARED;
                        /* perf c2c's notion (perf-c2c(1); tools/perf/builtin-c2c.c): a store on one CPU
                         * and an access on another; same bytes = true sharing,
                         * other bytes of the line = false sharing. Either costs
                         * only if the line then moves between caches, and only
                         * peer snoops show that it did (ARCHITECTURE.md §5): without
                         * them two CPUs' accesses may be far apart in time.
                         * SPE gives no access size, so different offsets count
                         * as non-overlapping. */
                        if (peer_snoops == 0 || x->stores == 0 || (y->loads == 0 && y->stores == 0))
                                continue;
                        f |= x->offset == y->offset ? HOTLINES_F_TRUE : HOTLINES_F_FALSE;
                }
        }
        return f;
}

enum hotlines_class hotlines_class_of(unsigned flags) {
        /* A line can show both; false sharing is the one a layout change fixes. */
        if (flags & HOTLINES_F_FALSE)
                return HOTLINES_FALSE_SHARING;
        if (flags & HOTLINES_F_TRUE)
                return HOTLINES_TRUE_SHARING;
        if (flags & HOTLINES_F_WRITTEN)
                return HOTLINES_WRITTEN;
        return HOTLINES_READ_ONLY;
}

struct lref {
        const struct hotlines_line *l;
        const struct hotlines_off *off;
        uint64_t min;                   /* summary minimum */
        uint32_t off_min;               /* the line's least entry hotness when its entries are full, else 0 */
};

/* An entry's hotness: what its samples weighed (hotlines_add_hashed()). */
static uint64_t off_weight(const struct hotlines_off *o) {
        return o->loads + o->stores + (uint64_t) (HOTLINES_PEER_WEIGHT - 1) * (o->peer_local + o->peer_remote);
}

/* The line's least entry hotness in a summary; 0 while it had room for more entries (none was taken over). */
static uint32_t off_min(const struct hotlines_off *off, uint16_t noffs, uint32_t offsets) {
        uint32_t min = UINT32_MAX;

        if (noffs < offsets)
                return 0;
        for (unsigned i = 0; i < noffs; i++)
                min = MIN(min, off[i].score);
        return noffs ? min : 0;
}

/*
 * What an entry of an epoch adds to the sum hotlines_merge() subtracts: the
 * line's least entry hotness less the entry's inherited hotness (its score
 * beyond its weight), at most the former: the takeover took the least, which
 * never falls.
 */
static uint32_t off_slack(const struct hotlines_off *o, uint32_t line_off_min) {
        uint64_t w = off_weight(o), inherited = o->score > w ? o->score - w : 0;

        return inherited < line_off_min ? (uint32_t) (line_off_min - inherited) : 0;
}

static int cmp_line_key(const void *x, const void *y) {
        const struct hotlines_line *a = ((const struct lref *) x)->l, *b = ((const struct lref *) y)->l;

        if (a->by_pa != b->by_pa)
                return a->by_pa < b->by_pa ? -1 : 1;
        if (a->addr != b->addr)
                return a->addr < b->addr ? -1 : 1;
        if (a->by_pa)
                return 0;
        return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static int cmp_off(const void *x, const void *y) {
        const struct hotlines_off *a = x, *b = y;

        if (a->offset != b->offset)
                return a->offset < b->offset ? -1 : 1;
        if (a->pc != b->pc)
                return a->pc < b->pc ? -1 : 1;
        if (a->pid != b->pid)
                return a->pid < b->pid ? -1 : 1;
        return (int) a->el - (int) b->el;
}

static int cmp_rank(const void *x, const void *y) {
        const struct hotlines_result *a = x, *b = y;
        uint64_t pa = line_peer(&a->l), pb = line_peer(&b->l);

        if (pa != pb)
                return pa > pb ? -1 : 1;
        if (a->l.lat_sum != b->l.lat_sum)
                return a->l.lat_sum > b->l.lat_sum ? -1 : 1;
        if (a->l.addr != b->l.addr)
                return a->l.addr < b->l.addr ? -1 : 1;
        return a->l.pid < b->l.pid ? -1 : a->l.pid > b->l.pid;
}

static void off_merge(struct hotlines_off *d, const struct hotlines_off *o) {
        d->loads += o->loads;
        d->stores += o->stores;
        d->peer_local += o->peer_local;
        d->peer_remote += o->peer_remote;
        d->lat_sum += o->lat_sum;
        d->lat_n += o->lat_n;
        d->score = hotlines_sat_add32(d->score, o->score);
        for (unsigned i = 0; i < o->ncpus; i++)
                hotlines_off_note_cpu(d, o->cpus[i]);
        for (unsigned i = 0; i < o->ntids; i++)
                hotlines_off_note_tid(d, o->tids[i]);
        d->cpus_more |= o->cpus_more;
        d->tids_more |= o->tids_more;
        if (!comm_known(&d->comm))
                d->comm = o->comm;
}

static bool line_has_pid(const struct lref *ref, uint32_t pid) {
        if (ref->l->pid == pid)
                return true;
        if (!ref->l->by_pa)
                return false;
        for (unsigned i = 0; i < ref->l->noffs; i++)
                if (ref->off[i].pid == pid)
                        return true;
        return false;
}

void hotlines_merge(const struct hotlines_summary *const *s, size_t n, uint32_t pid,
                    enum hotlines_which which, size_t limit, struct hotlines_merged *ret) {
        struct hotlines_merged m = {};
        struct lref *refs;
        struct hotlines_result *res;
        size_t nref = 0, nres = 0, total = 0;
        uint64_t sum_min = 0;

        for (size_t i = 0; i < n; i++) {
                total += s[i]->n;
                sum_min += s[i]->min;
                m.records += s[i]->records;
                m.evictions += s[i]->evictions;
                m.off_evictions += s[i]->off_evictions;
                m.line_size = s[i]->line_size;
        }

        refs = xmalloc(MAX(total, (size_t) 1) * sizeof(*refs));
        for (size_t i = 0; i < n; i++)
                for (uint32_t j = 0; j < s[i]->n; j++) {
                        struct lref ref = {
                                .l = &s[i]->line[j],
                                .off = &s[i]->off[s[i]->line[j].first_off],
                                .min = s[i]->min,
                        };

                        ref.off_min = off_min(ref.off, ref.l->noffs, s[i]->offsets);

                        m.peer_local += ref.l->peer_local;
                        m.peer_remote += ref.l->peer_remote;
                        if (pid != HOTLINES_PID_ANY && !line_has_pid(&ref, pid))
                                continue;
                        refs[nref++] = ref;
                }
        qsort(refs, nref, sizeof(*refs), cmp_line_key);

        res = xmalloc(MAX(nref, (size_t) 1) * sizeof(*res));
        for (size_t i = 0; i < nref; ) {
                struct hotlines_result *ref = &res[nres++];
                uint64_t min_present = 0, off_min_present = 0;
                size_t j, noff = 0, k = 0;

                for (j = i; j < nref && cmp_line_key(&refs[j], &refs[i]) == 0; j++)
                        noff += refs[j].l->noffs;

                ref->l = *refs[i].l;
                ref->l.score = ref->l.error = 0;
                ref->l.loads = ref->l.stores = ref->l.peer_local = ref->l.peer_remote = ref->l.lat_sum = 0;
                ref->l.lat_max = 0;
                memset(ref->l.src, 0, sizeof(ref->l.src));
                /* off_error after off: one allocation, freed as off is (hotlines.h). */
                ref->off = xmalloc(MAX(noff, (size_t) 1) * (sizeof(struct hotlines_off) + sizeof(uint64_t)));
                ref->off_error = (uint64_t *) (ref->off + MAX(noff, (size_t) 1));
                for (size_t t = i; t < j; t++) {
                        const struct hotlines_line *l = refs[t].l;

                        ref->l.score += l->score;
                        ref->l.error += l->error;
                        min_present += refs[t].min;
                        ref->l.loads += l->loads;
                        ref->l.stores += l->stores;
                        for (unsigned q = 0; q < _SPE_DATA_SRC_MAX; q++)
                                ref->l.src[q] += l->src[q];
                        ref->l.peer_local += l->peer_local;
                        ref->l.peer_remote += l->peer_remote;
                        ref->l.lat_sum += l->lat_sum;
                        ref->l.lat_max = MAX(ref->l.lat_max, l->lat_max);
                        memcpy(&ref->off[k], refs[t].off, l->noffs * sizeof(struct hotlines_off));
                        /* Scores now carry slack, which off_merge() sums (saturating: only ever a larger bound). */
                        for (unsigned q = 0; q < l->noffs; q++)
                                ref->off[k + q].score = off_slack(&refs[t].off[q], refs[t].off_min);
                        off_min_present += refs[t].off_min;
                        k += l->noffs;
                }
                /* Same Space-Saving merge as hot PCs (see hotpcs.h). */
                ref->l.score += sum_min - min_present;
                ref->l.error += sum_min - min_present;

                qsort(ref->off, noff, sizeof(struct hotlines_off), cmp_off);
                k = 0;
                for (size_t t = 0; t < noff; t++) {
                        if (k > 0 && cmp_off(&ref->off[k - 1], &ref->off[t]) == 0)
                                off_merge(&ref->off[k - 1], &ref->off[t]);
                        else
                                ref->off[k++] = ref->off[t];
                }
                ref->noffs = k;
                ref->l.noffs = (uint16_t) MIN(k, (size_t) UINT16_MAX);
                /*
                 * Each epoch of the line: its least entry hotness, less, where the entry
                 * was in it, what the entry did not inherit (hotlines.h); then the line's.
                 */
                for (size_t t = 0; t < k; t++) {
                        ref->off_error[t] = off_min_present - MIN(off_min_present, (uint64_t) ref->off[t].score) +
                                            ref->l.error;
                        ref->off[t].score = 0;
                }
                i = j;
        }
        free(refs);

        /* Ranked by peer snoops first: the lines with none are a tail, cut here. */
        qsort(res, nres, sizeof(*res), cmp_rank);
        m.nlines = nres;
        while (m.npeer < nres && line_peer(&res[m.npeer].l) > 0)
                m.npeer++;
        m.n = MIN(which == HOTLINES_ALL_LINES ? nres : m.npeer, limit);
        for (size_t i = m.n; i < nres; i++)
                free(res[i].off);
        for (size_t i = 0; i < m.n; i++) {
                unsigned f = hotlines_classify(res[i].off, res[i].noffs, res[i].l.stores, line_peer(&res[i].l));
                res[i].l.flags = (uint8_t) f;
                res[i].cls = hotlines_class_of(f);
        }
        m.line = res;
        *ret = m;
}

void hotlines_merged_done(struct hotlines_merged *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++)
                free(m->line[i].off);
        free(m->line);
        m->line = NULL;
        m->n = 0;
}
