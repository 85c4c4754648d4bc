/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "parse-util.h"
#include "spe-pkt.h"
#include "stacks.h"
#include "strbuf.h"

_Static_assert(_SPE_DATA_SRC_MAX <= 16 && _HOTPCS_OP_MAX <= 4, "sample keys hold 4 bits of source, 2 of op");
_Static_assert(STORE_PID_ANY == HOTPCS_PID_ANY && STORE_PID_ANY == HOTLINES_PID_ANY,
               "one 'any pid' value across the store's modules");

struct store_attach {
        unsigned ref;
        void *data;
        void (*destroy)(void *data);
};

struct store_epoch {
        unsigned ref;
        uint64_t start_ns, end_ns;
        struct store_totals totals;
        struct hotpcs_summary *pcs;
        struct hotpcs_summary *samples;         /* PCs by context, for pprof labels */
        struct hotlines_summary *lines;
        struct stacks_summary *stacks;          /* NULL without a stack table */
        struct lathist *lat[STORE_LAT_HISTS];   /* NULL when empty */
};

/* An immutable cumulative latency block (store.h), shared by snapshots. */
struct store_lat_cum {
        unsigned ref;
        struct store_latency_cumulative v;
};

struct store_snapshot {
        unsigned ref;
        uint64_t seq;
        uint64_t epoch_ns;
        struct store_clock clock;
        struct store_totals cumulative;
        struct store_lat_cum *lat_cum;          /* NULL before the first epoch end */
        struct store_attach *attach;
        size_t n;
        struct store_epoch *epoch[];            /* newest first */
};

struct store {
        struct store_options opt;

        /* writer state, current epoch */
        struct hotpcs *pcs;
        struct hotpcs *samples;
        struct hotlines *lines;
        struct stacks *stacks;                  /* NULL when opt.stacks is 0 */
        struct lathist *lat;                    /* STORE_LAT_HISTS */
        struct store_totals cur, cumulative;
        struct store_lat_cum *lat_cum;          /* NULL before the first epoch end */
        uint64_t epoch_start_ns;
        struct store_clock clock;

        /* finished epochs: ring[(head + i) % epochs], i < nring, oldest first */
        struct store_epoch **ring;
        size_t head, nring;
        struct store_attach *attach;
        uint64_t seq;

        /* publication */
        pthread_mutex_t lock;
        struct store_snapshot *current;
};

static const char *const lat_kind_names[_STORE_LAT_KIND_MAX] = {
        [STORE_LAT_TOTAL] = "total",
        [STORE_LAT_ISSUE] = "issue",
        [STORE_LAT_XLAT]  = "translation",
};

static const char *const op_names[_HOTPCS_OP_MAX] = {
        [HOTPCS_OP_LOAD]   = "load",
        [HOTPCS_OP_STORE]  = "store",
        [HOTPCS_OP_BRANCH] = "branch",
        [HOTPCS_OP_OTHER]  = "other",
};

static const char *const table_names[_STORE_TABLE_MAX] = {
        [STORE_TABLE_HOTPCS]   = "hotpcs",
        [STORE_TABLE_HOTLINES] = "hotlines",
        [STORE_TABLE_OFFSETS]  = "offsets",
        [STORE_TABLE_SAMPLES]  = "samples",
};

const char *store_table_name(enum store_table t) {
        if ((unsigned) t >= ELEMENTSOF(table_names))
                return "unknown";
        return table_names[t];
}

const char *store_lat_kind_name(enum store_lat_kind k) {
        if ((unsigned) k >= ELEMENTSOF(lat_kind_names))
                return "unknown";
        return lat_kind_names[k];
}

bool store_lat_group_is_source(unsigned group) {
        return group >= _HOTPCS_OP_MAX && group < STORE_LAT_GROUPS;
}

const char *store_lat_group_name(unsigned group) {
        if (group < _HOTPCS_OP_MAX)
                return op_names[group];
        if (group < STORE_LAT_GROUPS)
                return spe_data_src_name((enum spe_data_src) (group - _HOTPCS_OP_MAX));
        return "unknown";
}

void store_options_init(struct store_options *o) {
        *o = (struct store_options) {
                .epoch_ns = STORE_EPOCH_NS_DEFAULT,
                .epochs = STORE_EPOCHS_DEFAULT,
                .hotpcs = STORE_HOTPCS_DEFAULT,
                .hotlines = STORE_HOTLINES_DEFAULT,
                .line_offsets = STORE_LINE_OFFSETS_DEFAULT,
                .line_size = LINE_SIZE_DEFAULT,
                .lines_by_pa = false,
                .stacks = STORE_STACKS_DEFAULT,
                .stack_frames = STORE_STACK_FRAMES_DEFAULT,
                .stack_contexts = STORE_STACK_CONTEXTS_DEFAULT,
                .stack_strings = STORE_STACK_STRINGS_DEFAULT,
        };
}

static bool options_valid(const struct store_options *o) {
        return o->epoch_ns > 0 &&
                o->epochs > 0 && o->epochs <= STORE_EPOCHS_MAX &&
                o->hotpcs > 0 && o->hotpcs <= STORE_TABLE_MAX &&
                o->hotlines > 0 && o->hotlines <= STORE_TABLE_MAX &&
                o->line_offsets > 0 && o->line_offsets <= STORE_LINE_OFFSETS_MAX &&
                o->line_size >= sizeof(uint32_t) && o->line_size <= HOTLINES_LINE_SIZE_MAX &&
                (o->line_size & (o->line_size - 1)) == 0 &&
                o->stacks <= STORE_TABLE_MAX &&
                (o->stacks == 0 ||
                 (o->stack_frames > 0 && o->stack_frames <= STORE_STACK_POOL_MAX &&
                  o->stack_contexts > 0 && o->stack_contexts <= STORE_TABLE_MAX &&
                  o->stack_strings > 0 && o->stack_strings <= STORE_STACK_POOL_MAX));
}

size_t store_bytes(const struct store_options *o) {
        size_t lat = STORE_LAT_HISTS * sizeof(struct lathist);
        size_t w, p, s;

        /* The hot-PC and pprof sample tables have the same capacity (hotpcs). */
        w = sizeof(struct store) + 2 * hotpcs_bytes(o->hotpcs) +
                hotlines_bytes(o->hotlines, o->line_offsets) + lat +
                (size_t) o->epochs * sizeof(struct store_epoch *);
        p = sizeof(struct store_epoch) + 2 * hotpcs_summary_bytes(o->hotpcs) +
                hotlines_summary_bytes(o->hotlines, o->line_offsets) + lat;
        if (o->stacks > 0) {
                w += stacks_bytes(o->stacks, o->stack_frames, o->stack_contexts, o->stack_strings);
                p += stacks_summary_bytes(o->stacks, o->stack_frames, o->stack_contexts, o->stack_strings);
        }
        s = sizeof(struct store_snapshot) + (size_t) o->epochs * sizeof(struct store_epoch *);
        /* Cumulative latency: the writer's block (the current snapshot's too), the replaced snapshot's and a reader's. */
        return w + ((size_t) o->epochs + 1) * p + ((size_t) o->epochs + 2) * s +
                3 * sizeof(struct store_lat_cum) + sizeof(struct store_attach);
}

/* ---- reference counting ---- */

static void ref_inc(unsigned *ref) {
        __atomic_add_fetch(ref, 1, __ATOMIC_RELAXED);
}

static bool ref_dec(unsigned *ref) {
        return __atomic_sub_fetch(ref, 1, __ATOMIC_ACQ_REL) == 0;
}

static struct store_attach *attach_unref(struct store_attach *a) {
        if (a && ref_dec(&a->ref)) {
                if (a->destroy)
                        a->destroy(a->data);
                free(a);
        }
        return NULL;
}

static struct store_epoch *epoch_unref(struct store_epoch *e) {
        if (e && ref_dec(&e->ref)) {
                free(e->pcs);
                free(e->samples);
                free(e->lines);
                free(e->stacks);
                for (unsigned i = 0; i < STORE_LAT_HISTS; i++)
                        free(e->lat[i]);
                free(e);
        }
        return NULL;
}

static struct store_lat_cum *lat_cum_unref(struct store_lat_cum *c) {
        if (c && ref_dec(&c->ref))
                free(c);
        return NULL;
}

struct store_snapshot *store_snapshot_unref(struct store_snapshot *snap) {
        if (snap && ref_dec(&snap->ref)) {
                for (size_t i = 0; i < snap->n; i++)
                        epoch_unref(snap->epoch[i]);
                lat_cum_unref(snap->lat_cum);
                attach_unref(snap->attach);
                free(snap);
        }
        return NULL;
}

/* Build and publish a snapshot of the ring as it is now (writer thread). */
static void publish(struct store *s) {
        struct store_snapshot *snap, *old;

        snap = xcalloc(1, sizeof(*snap) + s->nring * sizeof(struct store_epoch *));
        snap->ref = 1;
        snap->seq = ++s->seq;
        snap->epoch_ns = s->opt.epoch_ns;
        snap->clock = s->clock;
        snap->cumulative = s->cumulative;
        snap->n = s->nring;
        for (size_t i = 0; i < s->nring; i++) {
                struct store_epoch *e = s->ring[(s->head + s->nring - 1 - i) % s->opt.epochs];

                ref_inc(&e->ref);
                snap->epoch[i] = e;
        }
        if (s->lat_cum) {
                ref_inc(&s->lat_cum->ref);
                snap->lat_cum = s->lat_cum;
        }
        if (s->attach) {
                ref_inc(&s->attach->ref);
                snap->attach = s->attach;
        }

        pthread_mutex_lock(&s->lock);
        old = s->current;
        s->current = snap;
        pthread_mutex_unlock(&s->lock);

        store_snapshot_unref(old);
}

int store_new(const struct store_options *o, uint64_t now_ns, struct store **ret) {
        struct store *s;

        if (!o || !ret || !options_valid(o))
                return -EINVAL;

        (void) lathist_buckets();       /* build the bucket tables before the hot path */

        s = xcalloc(1, sizeof(*s));
        s->opt = *o;
        s->pcs = hotpcs_new(o->hotpcs);
        s->samples = hotpcs_new(o->hotpcs);
        s->lines = hotlines_new(o->hotlines, o->line_offsets, o->line_size);
        if (o->stacks > 0)
                s->stacks = stacks_new(o->stacks, o->stack_frames, o->stack_contexts, o->stack_strings);
        if (!s->pcs || !s->samples || !s->lines || (o->stacks > 0 && !s->stacks)) {
                stacks_free(s->stacks);
                hotpcs_free(s->pcs);
                hotpcs_free(s->samples);
                hotlines_free(s->lines);
                free(s);
                return -EINVAL;
        }
        s->lat = xcalloc(STORE_LAT_HISTS, sizeof(struct lathist));
        s->ring = xcalloc(o->epochs, sizeof(struct store_epoch *));
        s->epoch_start_ns = now_ns;
        pthread_mutex_init(&s->lock, NULL);
        publish(s);

        *ret = s;
        return 0;
}

struct store *store_free(struct store *s) {
        if (!s)
                return NULL;
        store_snapshot_unref(s->current);
        for (size_t i = 0; i < s->nring; i++)
                epoch_unref(s->ring[(s->head + i) % s->opt.epochs]);
        lat_cum_unref(s->lat_cum);
        attach_unref(s->attach);
        pthread_mutex_destroy(&s->lock);
        hotpcs_free(s->pcs);
        hotpcs_free(s->samples);
        hotlines_free(s->lines);
        stacks_free(s->stacks);
        free(s->lat);
        free(s->ring);
        free(s);
        return NULL;
}

/* ---- writer: per record ---- */

static enum hotpcs_op record_op(const struct spe_record *rec) {
        if (!(rec->present & SPE_REC_OP))
                return HOTPCS_OP_OTHER;
        switch (rec->op_class) {
        case SPE_OP_CLASS_LDST:
                /* The decoder sets exactly one of LOAD/STORE for ld/st class ops;
                 * atomics with a store side count as stores, as perf's data_src does. */
                return (rec->op_flags & SPE_OPF_STORE) ? HOTPCS_OP_STORE : HOTPCS_OP_LOAD;
        case SPE_OP_CLASS_BRANCH:
                return HOTPCS_OP_BRANCH;
        default:
                return HOTPCS_OP_OTHER;
        }
}

/* perf c2c peer scope (tools/perf/util/mem-events.c, c2c_decode_stats()) of a load; the store's own op kind decides "load". */
static inline enum spe_peer record_peer(enum hotpcs_op op, unsigned src) {
        return op == HOTPCS_OP_LOAD ? spe_data_src_peer((enum spe_data_src) src) : SPE_PEER_NONE;
}

/*
 * One latency into its histogram: a load's into its data source's (every
 * load has one, SPE_DATA_SRC_NONE included), anything else's into its op
 * kind's. The loads' op-kind histogram is the sum of the source ones, made
 * once an epoch (lat_sum_loads()) rather than a second increment a record.
 */
static inline void lat_add(struct store *s, enum store_lat_kind k, enum hotpcs_op op, unsigned src, uint16_t v) {
        struct lathist *h = &s->lat[(unsigned) k * STORE_LAT_GROUPS];

        lathist_add(&h[op == HOTPCS_OP_LOAD ? STORE_LAT_GROUP_SOURCE(src) : STORE_LAT_GROUP_OP(op)], v);
}

void store_task_init(struct store_task *t, uint32_t pid, uint32_t tid, const char *comm) {
        t->pid = pid;
        t->tid = tid;
        comm_set(&t->comm, comm);
        t->comm_hash = comm_hash(&t->comm);
}

void store_add(struct store *s, const struct spe_record *rec, uint32_t pid, uint32_t tid) {
        struct store_task task;

        store_task_init(&task, pid, tid, NULL);
        store_add_task(s, rec, &task);
}

void store_add_task(struct store *s, const struct spe_record *rec, const struct store_task *task) {
        struct store_totals *t = &s->cur;
        uint32_t pid = task->pid, tid = task->tid;
        /* The record's fields read once: with -fno-strict-aliasing each
         * store into a table would otherwise make the compiler read them again. */
        uint32_t present = rec->present;
        enum hotpcs_op op = record_op(rec);
        unsigned src = (present & SPE_REC_SOURCE) && rec->source < _SPE_DATA_SRC_MAX ?
                rec->source : SPE_DATA_SRC_NONE;
        enum spe_peer peer = record_peer(op, src);
        uint32_t lat = (present & SPE_REC_LAT_TOTAL) ? rec->lat_total : 0;
        bool has_pc = present & SPE_REC_PC;
        uint64_t pc = rec->pc.addr;
        uint8_t el = rec->pc.el;
        uint32_t cpu = rec->cpu;
        bool by_pa = s->opt.lines_by_pa && (present & SPE_REC_PA);
        bool line = (op == HOTPCS_OP_LOAD || op == HOTPCS_OP_STORE) && (by_pa || (present & SPE_REC_VA));
        uint64_t pc_key = 0, sample_key = 0;
        uint32_t pc_hash = 0, sample_hash = 0, line_hash = 0;
        struct hotlines_access a;

        /* The three hash probes start now and overlap with the counting below. */
        if (has_pc) {
                pc_key = hotpcs_pc_key(pid, el, task->comm_hash);
                pc_hash = hotpcs_hash(pc, pc_key);
                hotpcs_prefetch(s->pcs, pc_hash);
                sample_key = store_sample_key(pid, tid, cpu, el, op, src);
                sample_hash = hotpcs_hash(pc, sample_key);
                hotpcs_prefetch(s->samples, sample_hash);
        }
        if (line) {
                a = (struct hotlines_access) {
                        .addr = by_pa ? rec->pa : rec->va,
                        .va = (present & SPE_REC_VA) ? rec->va : 0,
                        .pc = has_pc ? pc : 0,
                        .pid = pid,
                        .tid = tid,
                        .cpu = cpu,
                        .comm = &task->comm,
                        .lat = lat,
                        .el = has_pc ? el : 0,
                        .has_lat = present & SPE_REC_LAT_TOTAL,
                        .by_pa = by_pa,
                        .store = op == HOTPCS_OP_STORE,
                        .src = (uint8_t) src,
                        .peer = (uint8_t) peer,
                };
                line_hash = hotlines_hash(s->lines, &a);
                hotlines_prefetch(s->lines, line_hash);
        }

        t->records++;
        switch (op) {
        case HOTPCS_OP_LOAD:
                t->loads++;
                t->loads_by_source[src]++;
                break;
        case HOTPCS_OP_STORE:
                t->stores++;
                break;
        case HOTPCS_OP_BRANCH:
                t->branches++;
                break;
        default:
                t->other++;
                break;
        }
        t->peer_local += peer == SPE_PEER_LOCAL;
        t->peer_remote += peer == SPE_PEER_REMOTE;

        if (present & SPE_REC_LAT_TOTAL)
                lat_add(s, STORE_LAT_TOTAL, op, src, rec->lat_total);
        if (present & SPE_REC_LAT_ISSUE)
                lat_add(s, STORE_LAT_ISSUE, op, src, rec->lat_issue);
        if (present & SPE_REC_LAT_XLAT)
                lat_add(s, STORE_LAT_XLAT, op, src, rec->lat_xlat);

        if (has_pc) {
                unsigned ev = (present & SPE_REC_EVENTS) ? hotpcs_events(rec->events) : 0;

                hotpcs_add_hashed(s->pcs, pc_hash, pc, pc_key, pid, el, &task->comm, op, ev, lat);
                hotpcs_add_hashed(s->samples, sample_hash, pc, sample_key, pid, el, &task->comm, op, ev, lat);
        } else
                t->no_pc++;

        if (line)
                hotlines_add_hashed(s->lines, &a, line_hash);
}

void store_add_stack(struct store *s, const struct store_stack_sample *ss) {
        struct store_totals *t = &s->cur;

        t->cpu_samples++;
        t->cpu_weight_ns += ss->weight;
        if (ss->n_frames > 0) {
                struct comm comm;

                comm_set(&comm, ss->thread && ss->thread[0] ? ss->thread : ss->comm);
                hotpcs_add_pc(s->pcs, ss->pid, ss->frames[0], ss->kernel ? 1 : 0, &comm);
        }
        if (s->stacks) {
                const struct stacks_task task = {
                        .pid = ss->pid,
                        .tid = ss->tid,
                        .str = {
                                [STACKS_STR_COMM] = ss->comm,
                                [STACKS_STR_THREAD] = ss->thread,
                                [STACKS_STR_CGROUP] = ss->cgroup,
                                [STACKS_STR_SERVICE] = ss->service,
                        },
                };

                if (!stacks_add(s->stacks, &task, ss->frames, ss->n_frames, ss->weight))
                        t->evict_stacks++;
        } else
                t->evict_stacks++;
}

/* ---- writer: epoch boundary ---- */

static void totals_add(struct store_totals *d, const struct store_totals *a) {
        d->records += a->records;
        d->loads += a->loads;
        d->stores += a->stores;
        d->branches += a->branches;
        d->other += a->other;
        for (unsigned i = 0; i < _SPE_DATA_SRC_MAX; i++)
                d->loads_by_source[i] += a->loads_by_source[i];
        d->peer_local += a->peer_local;
        d->peer_remote += a->peer_remote;
        d->no_pc += a->no_pc;
        for (unsigned i = 0; i < _STORE_TABLE_MAX; i++)
                d->evictions[i] += a->evictions[i];
        d->cpu_samples += a->cpu_samples;
        d->cpu_weight_ns += a->cpu_weight_ns;
        d->evict_stacks += a->evict_stacks;
}

/* The next cumulative latency block: the previous one plus the closing epoch's op histograms. */
static void lat_cum_fold(struct store *s) {
        struct store_lat_cum *c = xmalloc(sizeof(*c));

        if (s->lat_cum)
                c->v = s->lat_cum->v;
        else
                memset(&c->v, 0, sizeof(c->v));
        c->ref = 1;
        for (unsigned k = 0; k < _STORE_LAT_KIND_MAX; k++)
                for (unsigned op = 0; op < _HOTPCS_OP_MAX; op++)
                        lathist_merge(&c->v.h[k][op], &s->lat[k * STORE_LAT_GROUPS + STORE_LAT_GROUP_OP(op)]);
        lat_cum_unref(s->lat_cum);
        s->lat_cum = c;
}

/* The closing epoch's load histograms, from its data-source ones (lat_add()). */
static void lat_sum_loads(struct store *s) {
        for (unsigned k = 0; k < _STORE_LAT_KIND_MAX; k++) {
                struct lathist *h = &s->lat[k * STORE_LAT_GROUPS];

                for (unsigned src = 0; src < _SPE_DATA_SRC_MAX; src++)
                        lathist_add_hist(&h[STORE_LAT_GROUP_OP(HOTPCS_OP_LOAD)], &h[STORE_LAT_GROUP_SOURCE(src)]);
        }
}

void store_epoch_end(struct store *s, uint64_t now_ns) {
        struct store_epoch *e;
        size_t slot;

        lat_sum_loads(s);

        e = xcalloc(1, sizeof(*e));
        e->ref = 1;
        e->start_ns = s->epoch_start_ns;
        e->end_ns = MAX(now_ns, s->epoch_start_ns);
        s->cur.evictions[STORE_TABLE_HOTPCS] = s->pcs->evictions;
        s->cur.evictions[STORE_TABLE_HOTLINES] = s->lines->evictions;
        s->cur.evictions[STORE_TABLE_OFFSETS] = s->lines->off_evictions;
        s->cur.evictions[STORE_TABLE_SAMPLES] = s->samples->evictions;
        e->totals = s->cur;
        e->pcs = hotpcs_freeze(s->pcs);
        e->samples = hotpcs_freeze(s->samples);
        e->lines = hotlines_freeze(s->lines);
        if (s->stacks)
                e->stacks = stacks_freeze(s->stacks);
        for (unsigned i = 0; i < STORE_LAT_HISTS; i++)
                if (lathist_total(&s->lat[i]) > 0) {
                        e->lat[i] = xmalloc(sizeof(struct lathist));
                        *e->lat[i] = s->lat[i];
                }

        totals_add(&s->cumulative, &s->cur);
        lat_cum_fold(s);
        memset(&s->cur, 0, sizeof(s->cur));
        hotpcs_reset(s->pcs);
        hotpcs_reset(s->samples);
        hotlines_reset(s->lines);
        if (s->stacks)
                stacks_reset(s->stacks);
        memset(s->lat, 0, STORE_LAT_HISTS * sizeof(struct lathist));
        s->epoch_start_ns = e->end_ns;

        if (s->nring == s->opt.epochs) {
                epoch_unref(s->ring[s->head]);
                s->ring[s->head] = NULL;
                s->head = (s->head + 1) % s->opt.epochs;
                s->nring--;
        }
        slot = (s->head + s->nring) % s->opt.epochs;
        s->ring[slot] = e;
        s->nring++;

        publish(s);
}

void store_epoch_restart(struct store *s, uint64_t start_ns) {
        s->epoch_start_ns = start_ns;
}

void store_set_clock(struct store *s, const struct store_clock *c) {
        s->clock = *c;
        publish(s);
}

void store_publish_attachment(struct store *s, void *data, void (*destroy)(void *data)) {
        struct store_attach *a = xcalloc(1, sizeof(*a));

        a->ref = 1;
        a->data = data;
        a->destroy = destroy;
        attach_unref(s->attach);
        s->attach = a;
        publish(s);
}

/* ---- readers ---- */

struct store_snapshot *store_snapshot_get(struct store *s) {
        struct store_snapshot *snap;

        pthread_mutex_lock(&s->lock);
        snap = s->current;
        ref_inc(&snap->ref);
        pthread_mutex_unlock(&s->lock);
        return snap;
}

uint64_t store_snapshot_seq(const struct store_snapshot *snap) {
        return snap->seq;
}

size_t store_snapshot_epochs(const struct store_snapshot *snap) {
        return snap->n;
}

uint64_t store_snapshot_epoch_ns(const struct store_snapshot *snap) {
        return snap->epoch_ns;
}

const struct store_clock *store_snapshot_clock(const struct store_snapshot *snap) {
        return &snap->clock;
}

uint64_t store_snapshot_end_ns(const struct store_snapshot *snap) {
        return snap->n > 0 ? snap->epoch[0]->end_ns : 0;
}

const struct store_totals *store_snapshot_cumulative(const struct store_snapshot *snap) {
        return &snap->cumulative;
}

const struct store_latency_cumulative *store_snapshot_latency(const struct store_snapshot *snap) {
        return snap->lat_cum ? &snap->lat_cum->v : NULL;
}

const void *store_snapshot_attachment(const struct store_snapshot *snap) {
        return snap->attach ? snap->attach->data : NULL;
}

int store_window_parse(const char *s, uint64_t *ret_ns) {
        uint64_t usec;
        int r;

        if (!s || !ret_ns)
                return -EINVAL;
        if (streq(s, "all")) {
                *ret_ns = STORE_WINDOW_ALL;
                return 0;
        }
        r = parse_duration_usec(s, &usec);
        if (r < 0)
                return r;
        if (usec == 0)
                return -EINVAL;
        if (usec > UINT64_MAX / NSEC_PER_USEC)
                return -ERANGE;
        *ret_ns = usec * NSEC_PER_USEC;
        return 0;
}

/*
 * How many of the newest epochs answer a window: counted back from the end
 * of the newest closed epoch, an epoch is in when its midpoint is within
 * the window, and the newest always is. Whole epochs only: "1m" with 10 s
 * epochs is six of them, also when timer jitter makes each a little short
 * of 10 s (covering until 60 s were reached took a seventh, 70 s); "15s"
 * is two (its midpoint at 15 s back is in), "14s" one.
 */
static size_t window_epochs(const struct store_snapshot *snap, uint64_t window_ns,
                            struct store_interval *ret) {
        uint64_t covered = 0;
        size_t n = 0;

        while (n < snap->n) {
                uint64_t d = snap->epoch[n]->end_ns - snap->epoch[n]->start_ns;

                if (n > 0 && (covered >= window_ns || d / 2 > window_ns - covered))
                        break;
                covered += d;
                n++;
        }
        *ret = (struct store_interval) { .window_ns = window_ns, .clock = snap->clock };
        if (n > 0) {
                ret->end_ns = snap->epoch[0]->end_ns;
                ret->start_ns = snap->epoch[n - 1]->start_ns;
                ret->epochs = (uint32_t) n;
        }
        return n;
}

int store_query_totals(const struct store_snapshot *snap, uint64_t window_ns,
                       struct store_totals_result *ret) {
        struct store_totals_result res = {};
        size_t n;

        if (!snap || !ret || window_ns == 0)
                return -EINVAL;
        n = window_epochs(snap, window_ns, &res.iv);
        for (size_t i = 0; i < n; i++)
                totals_add(&res.t, &snap->epoch[i]->totals);
        *ret = res;
        return 0;
}

/* The hot-PC table, or (by_context) the PC-by-context sample table, of epochs [first, first + n). */
static void merge_pc_table(const struct store_snapshot *snap, size_t first, size_t n, size_t limit, uint32_t pid,
                           bool by_context, struct store_hotpcs_result *res) {
        const struct hotpcs_summary **v = xmalloc(MAX(n, (size_t) 1) * sizeof(*v));

        for (size_t i = 0; i < n; i++)
                v[i] = by_context ? snap->epoch[first + i]->samples : snap->epoch[first + i]->pcs;
        hotpcs_merge(v, n, pid, limit, &res->pcs);
        free(v);
}

static int query_pc_table(const struct store_snapshot *snap, uint64_t window_ns, size_t limit, uint32_t pid,
                          bool by_context, struct store_hotpcs_result *ret) {
        struct store_hotpcs_result res = {};
        size_t n;

        if (!snap || !ret || window_ns == 0)
                return -EINVAL;
        n = window_epochs(snap, window_ns, &res.iv);
        merge_pc_table(snap, 0, n, limit, pid, by_context, &res);
        *ret = res;
        return 0;
}

/* The epochs that overlap [start_ns, end_ns): n of them from *ret_first (newest first). */
static size_t span_epochs(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns, size_t *ret_first,
                          struct store_interval *ret) {
        size_t first = 0, n = 0;

        /* Newest first: skip those that start at or after the span's end, take those that end after its start. */
        while (first < snap->n && snap->epoch[first]->start_ns >= end_ns)
                first++;
        while (first + n < snap->n && snap->epoch[first + n]->end_ns > start_ns)
                n++;
        *ret = (struct store_interval) { .clock = snap->clock };
        if (n > 0) {
                ret->end_ns = snap->epoch[first]->end_ns;
                ret->start_ns = snap->epoch[first + n - 1]->start_ns;
                ret->epochs = (uint32_t) n;
        }
        *ret_first = first;
        return n;
}

int store_query_samples_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns,
                             size_t limit, struct store_hotpcs_result *ret) {
        struct store_hotpcs_result res = {};
        size_t first, n;

        if (!snap || !ret || end_ns <= start_ns)
                return -EINVAL;
        n = span_epochs(snap, start_ns, end_ns, &first, &res.iv);
        merge_pc_table(snap, first, n, limit, HOTPCS_PID_ANY, true, &res);
        *ret = res;
        return 0;
}

int store_query_hotpcs(const struct store_snapshot *snap, uint64_t window_ns, size_t limit,
                       uint32_t pid, struct store_hotpcs_result *ret) {
        return query_pc_table(snap, window_ns, limit, pid, false, ret);
}

int store_query_samples(const struct store_snapshot *snap, uint64_t window_ns, size_t limit,
                        struct store_hotpcs_result *ret) {
        return query_pc_table(snap, window_ns, limit, HOTPCS_PID_ANY, true, ret);
}

int store_query_hotlines(const struct store_snapshot *snap, uint64_t window_ns, size_t limit,
                         uint32_t pid, enum hotlines_which which, struct store_hotlines_result *ret) {
        const struct hotlines_summary **v;
        struct store_hotlines_result res = {};
        size_t n;

        if (!snap || !ret || window_ns == 0)
                return -EINVAL;
        n = window_epochs(snap, window_ns, &res.iv);
        v = xmalloc(MAX(n, (size_t) 1) * sizeof(*v));
        for (size_t i = 0; i < n; i++)
                v[i] = snap->epoch[i]->lines;
        hotlines_merge(v, n, pid, which, limit, &res.lines);
        free(v);
        *ret = res;
        return 0;
}

int store_query_latency(const struct store_snapshot *snap, uint64_t window_ns,
                        struct store_latency_result *ret) {
        struct store_latency_result res = {};
        size_t n;

        if (!snap || !ret || window_ns == 0)
                return -EINVAL;
        n = window_epochs(snap, window_ns, &res.iv);
        res.hist = xcalloc(STORE_LAT_HISTS, sizeof(struct store_lat_hist));
        for (unsigned h = 0; h < STORE_LAT_HISTS; h++) {
                struct store_lat_hist *x = &res.hist[h];

                for (size_t i = 0; i < n; i++)
                        if (snap->epoch[i]->lat[h])
                                lathist_merge(&x->h, snap->epoch[i]->lat[h]);
                x->p50 = lathist_quantile(&x->h, 0.50);
                x->p90 = lathist_quantile(&x->h, 0.90);
                x->p99 = lathist_quantile(&x->h, 0.99);
                x->p999 = lathist_quantile(&x->h, 0.999);
        }
        *ret = res;
        return 0;
}

/* The stacks of epochs [first, first + n), with the interval's totals whatever the filter. */
static int merge_stacks(const struct store_snapshot *snap, size_t first, size_t n, uint32_t pid,
                        const char *cgroup_prefix, struct store_stacks_result *res) {
        const struct stacks_summary **v = xmalloc(MAX(n, (size_t) 1) * sizeof(*v));
        size_t nv = 0;
        int r;

        res->filtered = pid != STORE_PID_ANY || (cgroup_prefix && cgroup_prefix[0]);
        for (size_t i = 0; i < n; i++) {
                const struct store_epoch *e = snap->epoch[first + i];

                res->samples += e->totals.cpu_samples;
                res->weight += e->totals.cpu_weight_ns;
                res->dropped += e->totals.evict_stacks;
                if (e->stacks)
                        v[nv++] = e->stacks;
        }
        r = stacks_merge(v, nv, pid, cgroup_prefix, res);
        free(v);
        return r;
}

int store_query_stacks(const struct store_snapshot *snap, uint64_t window_ns, uint32_t pid,
                       const char *cgroup_prefix, struct store_stacks_result *ret) {
        struct store_stacks_result res = {};
        size_t n;
        int r;

        if (!snap || !ret || window_ns == 0)
                return -EINVAL;
        n = window_epochs(snap, window_ns, &res.iv);
        r = merge_stacks(snap, 0, n, pid, cgroup_prefix, &res);
        if (r < 0)
                return r;
        *ret = res;
        return 0;
}

int store_query_stacks_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns, uint32_t pid,
                            const char *cgroup_prefix, struct store_stacks_result *ret) {
        struct store_stacks_result res = {};
        size_t first, n;
        int r;

        if (!snap || !ret || end_ns <= start_ns)
                return -EINVAL;
        n = span_epochs(snap, start_ns, end_ns, &first, &res.iv);
        r = merge_stacks(snap, first, n, pid, cgroup_prefix, &res);
        if (r < 0)
                return r;
        *ret = res;
        return 0;
}

void store_stacks_result_done(struct store_stacks_result *ret) {
        if (!ret)
                return;
        free(ret->stacks);
        free(ret->strings);
        free(ret->frames);
        ret->stacks = NULL;
        ret->strings = NULL;
        ret->frames = NULL;
        ret->n = 0;
}

void store_hotpcs_result_done(struct store_hotpcs_result *res) {
        if (res)
                hotpcs_merged_done(&res->pcs);
}

void store_hotlines_result_done(struct store_hotlines_result *res) {
        if (res)
                hotlines_merged_done(&res->lines);
}

void store_latency_result_done(struct store_latency_result *res) {
        if (!res)
                return;
        free(res->hist);
        res->hist = NULL;
}
