/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

/* ---- reading the answer ---- */

static uint64_t ju(const json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);

        return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t) json_integer_value(v) : 0;
}

static double jd(const json_t *o, const char *key) {
        return json_number_value(json_object_get(o, key));
}

static const char *js(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* o[a][b] as a count. */
static uint64_t ju2(const json_t *o, const char *a, const char *b) {
        return ju(json_object_get(o, a), b);
}

static double pct(uint64_t part, uint64_t whole) {
        return whole ? 100.0 * (double) part / (double) whole : 0;
}

static void cell_pct(struct table *t, uint64_t part, uint64_t whole) {
        double p = pct(part, whole);

        table_num(t, p, "%.2f%%", p);
}

/* ---- the view ---- */

static void fact(struct view *v, const char *name, const char *fmt, ...) _printf_(3, 4);
static void fact(struct view *v, const char *name, const char *fmt, ...) {
        struct strbuf b = STRBUF_INIT;
        va_list ap;

        if (v->nfacts == VIEW_MAX_FACTS)
                return;
        va_start(ap, fmt);
        strbuf_vprintf(&b, fmt, ap);
        va_end(ap);
        v->facts[v->nfacts++] = (struct view_fact) { name, strbuf_steal(&b, NULL) ?: xstrdup("") };
}

static struct table *section(struct view *v, const char *heading, const char *note, const struct table_column *cols,
                             size_t ncols) {
        /* The builders below add at most VIEW_MAX_SECTIONS each (a fixed set per endpoint). */
        struct view_section *s = &v->sections[MIN(v->nsections, VIEW_MAX_SECTIONS - 1)];

        if (v->nsections < VIEW_MAX_SECTIONS)
                v->nsections++;
        else
                table_done(&s->table), free(s->heading), free(s->note);
        s->heading = xstrdup(heading);
        s->note = note ? xstrdup(note) : NULL;
        table_init(&s->table, cols, ncols);
        return &s->table;
}

void view_done(struct view *v) {
        for (size_t i = 0; i < v->nfacts; i++)
                free(v->facts[i].value);
        for (size_t i = 0; i < v->nsections; i++) {
                free(v->sections[i].heading);
                free(v->sections[i].note);
                table_done(&v->sections[i].table);
        }
        for (size_t i = 0; i < v->nhist; i++) {
                free(v->hist[i].title);
                free(v->hist[i].le);
                free(v->hist[i].count);
        }
        for (size_t i = 0; i < v->nstrips; i++) {
                free(v->strips[i].title);
                free(v->strips[i].cpu);
                free(v->strips[i].value);
        }
        *v = (struct view) {};
}

/*
 * Hot lines and latency come from SPE records only (data addresses, data
 * sources, latency): an answer without records where no SPE source runs
 * says why, once, above its empty tables.
 */
static void why_none(struct view *v, const json_t *answer, const struct view_context *ctx, const char *what) {
        if (ctx->no_spe && ju(answer, "records") == 0)
                fact(v, "why none", "%s; %s come from SPE records only (the CPU sampler takes none)", ctx->no_spe,
                     what);
}

/* Window, interval, host and source: the first lines of every view. */
static void context_facts(struct view *v, const json_t *answer, const struct view_context *ctx) {
        const json_t *iv = json_object_get(answer, "interval");

        if (ctx->host)
                fact(v, "host", "%s", ctx->host);
        if (ctx->source)
                fact(v, "source", "%s", ctx->source);
        if (iv) {
                const char *start = js(iv, "start"), *end = js(iv, "end");

                fact(v, "window", "%s: %.3f s in %" PRIu64 " epochs", ctx->window ?: "1m", jd(iv, "seconds"),
                     ju(iv, "epochs"));
                if (start && end)
                        fact(v, "interval", "%s .. %s", start, end);
                else if (json_object_get(iv, "start_perf_ns"))
                        fact(v, "interval", "%" PRIu64 " .. %" PRIu64 " ns (the recording's clock)",
                             ju(iv, "start_perf_ns"), ju(iv, "end_perf_ns"));
        }
}

/*
 * A pid= or cgroup= filter (the answer's "filter"): what it keeps, and which
 * of the facts below are of every process all the same (its host_wide).
 */
static void filter_fact(struct view *v, const json_t *answer) {
        const json_t *f = json_object_get(answer, "filter"), *x;
        struct strbuf b = STRBUF_INIT;
        size_t i;

        if (!f)
                return;
        if (json_object_get(f, "pid"))
                strbuf_printf(&b, "pid %" PRIu64, ju(f, "pid"));
        if (js(f, "cgroup"))
                strbuf_printf(&b, "%scgroup %s", b.len ? ", " : "", js(f, "cgroup"));
        strbuf_puts(&b, ": the rows are of the processes it keeps; of every process:");
        json_array_foreach(json_object_get(f, "host_wide"), i, x) {
                strbuf_puts(&b, i ? ", " : " ");
                for (const char *c = json_string_value(x); c && *c; c++)
                        strbuf_putc(&b, *c == '_' ? ' ' : *c);
        }
        fact(v, "filter", "%s", b.buf);
        strbuf_done(&b);
}

/* perf's symbol column: "[.] name" in user space, "[k] name" in the kernel (EL1/EL2). */
static void cell_symbol(struct table *t, const json_t *o) {
        const char *name = js(o, "symbol");
        bool kernel = ju(o, "el") > 0;

        if (name)
                table_textf(t, "[%c] %s", kernel ? 'k' : '.', name);
        else
                table_textf(t, "[%c] %s", kernel ? 'k' : '.', js(o, "pc") ?: js(o, "region") ?: "?");
}

/* perf's Object: the file's name without its directory (the JSON keeps the path). */
static void cell_object(struct table *t, const json_t *o) {
        const char *path = js(o, "object"), *slash = path ? strrchr(path, '/') : NULL;

        table_text(t, slash && slash[1] ? slash + 1 : path ?: (ju(o, "el") > 0 ? "[kernel]" : "[unknown]"));
}

/* ---- /hotlines: perf c2c report --stdio, peer display ---- */

enum { LVL_FB, LVL_L1, LVL_L2, LVL_LCL_HIT, LVL_LCL_HITM, LVL_RMT_HIT, LVL_RMT_HITM, LVL_DRAM_LCL, LVL_DRAM_RMT, _LVL_MAX };

/*
 * A line's loads by SPE data source, in perf c2c's load-hit columns: the
 * data_src perf gives each common-encoding source (spe-format.md §7.2)
 * counted as c2c_decode_stats() counts it (§7.3). No source of the common
 * encoding is a fill-buffer hit or a HITM, and REMOTE is a remote hit.
 */
static void c2c_levels(const json_t *by_source, uint64_t lvl[static _LVL_MAX]) {
        static const struct {
                const char *source;
                int lvl;
        } map[] = {
                { "l1d", LVL_L1 },
                { "l2", LVL_L2 },
                { "peer_core", LVL_L2 },
                { "local_cluster", LVL_LCL_HIT },
                { "peer_cluster", LVL_LCL_HIT },
                { "sys_cache", LVL_LCL_HIT },
                { "remote", LVL_RMT_HIT },
                { "dram", LVL_DRAM_LCL },
        };

        memset(lvl, 0, _LVL_MAX * sizeof(*lvl));
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                lvl[map[i].lvl] += ju(by_source, map[i].source);
}

static const struct table_column line_cols[] = {
        { NULL, "Index", TABLE_RIGHT, "rank by peer snoops" },
        { "Cacheline", "Address", TABLE_RIGHT, "line address, or its mapping and offset as [privacy] allows" },
        { "Cacheline", "Node", TABLE_RIGHT, "NUMA node of a line keyed by physical address" },
        { "Peer", "Snoop", TABLE_RIGHT, "the line's share of all peer-snoop loads (the sort key)" },
        { "Load Peer", "Total", TABLE_RIGHT, "loads served by another core's or cluster's cache" },
        { "Load Peer", "Local", TABLE_RIGHT, "peer snoops in this chip" },
        { "Load Peer", "Remote", TABLE_RIGHT, "peer snoops from another chip" },
        { "Total", "records", TABLE_RIGHT, "sampled loads and stores", true },
        { "Total", "Loads", TABLE_RIGHT, NULL, true },
        { "Total", "Stores", TABLE_RIGHT, NULL, true },
        { "Stores", "L1Hit", TABLE_RIGHT, NULL },
        { "Stores", "L1Miss", TABLE_RIGHT, NULL },
        { "Stores", "N/A", TABLE_RIGHT, "stores without a level (every SPE store)" },
        { "Core Load Hit", "FB", TABLE_RIGHT, NULL },
        { "Core Load Hit", "L1", TABLE_RIGHT, NULL },
        { "Core Load Hit", "L2", TABLE_RIGHT, "L2 and peer-core hits" },
        { "LLC Load Hit", "LclHit", TABLE_RIGHT, "cluster and system cache hits" },
        { "LLC Load Hit", "LclHitm", TABLE_RIGHT, NULL },
        { "RMT Load Hit", "RmtHit", TABLE_RIGHT, NULL },
        { "RMT Load Hit", "RmtHitm", TABLE_RIGHT, NULL },
        { "Load Dram", "Lcl", TABLE_RIGHT, NULL },
        { "Load Dram", "Rmt", TABLE_RIGHT, NULL },
        { NULL, "Class", TABLE_LEFT, "false_sharing, true_sharing, written or read_only (ARCHITECTURE.md §5)" },
        /* After perf c2c's columns, which keep its order. */
        { "At most", "records", TABLE_RIGHT,
          "the most loads and stores the line can have had: more than Total records when it took an evicted "
          "line's counter, since when records counts" },
};

static const struct table_column pareto_cols[] = {
        { NULL, "Num", TABLE_RIGHT, "the line's index" },
        { "Peer Snoop", "Rmt", TABLE_RIGHT, "share of the line's remote peer snoops" },
        { "Peer Snoop", "Lcl", TABLE_RIGHT, "share of the line's local peer snoops" },
        { "Store Refs", "L1 Hit", TABLE_RIGHT, NULL },
        { "Store Refs", "L1 Miss", TABLE_RIGHT, NULL },
        { "Store Refs", "N/A", TABLE_RIGHT, "share of the line's stores" },
        { "Data address", "Offset", TABLE_RIGHT, "offset in the line (the line's address on its summary row)" },
        { "Data address", "Node", TABLE_RIGHT, NULL },
        { NULL, "Code address", TABLE_RIGHT, NULL },
        { "cycles", "mean", TABLE_RIGHT, "mean total latency of the PC's accesses at this offset" },
        { "Total", "records", TABLE_RIGHT, NULL },
        { "cpu", "cnt", TABLE_RIGHT, "CPUs that made the accesses" },
        { NULL, "Symbol", TABLE_LEFT, NULL },
        { NULL, "Object", TABLE_LEFT, NULL },
        { NULL, "Source:Line", TABLE_LEFT, "the PC's source file and line from DWARF (the innermost inlined function's)" },
        { NULL, "Data Symbol", TABLE_LEFT, "the variable at the line's address + offset, SYMBOL+0xOFFSET (perf c2c's)" },
        { NULL, "Loads", TABLE_RIGHT, NULL },
        { NULL, "Stores", TABLE_RIGHT, NULL },
        { "At most", "records", TABLE_RIGHT,
          "the most loads and stores the PC can have made at this offset: more than Total records when its entry "
          "took an evicted one's place, or its line an evicted line's" },
        { NULL, "TIDs", TABLE_LEFT, "threads that made the accesses" },
        { NULL, "Command", TABLE_LEFT, "the command of the first thread seen at this offset and PC (perf's comm)" },
};

/* A line's address as served: the address, or the region [privacy] says in its place. */
static const char *line_address(const json_t *line) {
        return js(line, "address") ?: js(line, "region") ?: "?";
}

static void cell_node(struct table *t, const json_t *o) {
        json_t *n = json_object_get(o, "node");

        if (json_is_integer(n))
                table_u64(t, (uint64_t) json_integer_value(n));
        else
                table_text(t, "N/A");
}

static void cell_list(struct table *t, const json_t *a, bool truncated) {
        struct strbuf b = STRBUF_INIT;
        size_t i;
        json_t *x;

        json_array_foreach(a, i, x)
                strbuf_printf(&b, "%s%" JSON_INTEGER_FORMAT, i ? "," : "", json_integer_value(x));
        if (truncated)
                strbuf_puts(&b, ",...");
        table_text(t, b.buf);
        strbuf_done(&b);
}

int view_hotlines(const json_t *answer, const struct view_context *ctx, struct view *v) {
        const json_t *lines = json_object_get(answer, "lines"), *line;
        uint64_t peers = ju2(answer, "peer_snoops", "local") + ju2(answer, "peer_snoops", "remote");
        struct table *t;
        size_t i;

        if (!json_is_array(lines))
                return -EINVAL;
        v->title = "Hot cache lines";
        context_facts(v, answer, ctx);
        why_none(v, answer, ctx, "hot lines (the data addresses of loads and stores)");
        filter_fact(v, answer);
        fact(v, "records", "%" PRIu64 " loads and stores", ju(answer, "records"));
        fact(v, "peer snoops", "%" PRIu64 " (local %" PRIu64 ", remote %" PRIu64 ")", peers,
             ju2(answer, "peer_snoops", "local"), ju2(answer, "peer_snoops", "remote"));
        fact(v, "lines", "%" PRIu64 " seen, %" PRIu64 " with peer snoops, %zu listed", ju(answer, "lines_seen"),
             ju(answer, "lines_with_peer_snoops"), json_array_size(lines));
        fact(v, "evictions", "%" PRIu64 " lines, %" PRIu64 " offsets", ju(answer, "evictions"),
             ju(answer, "offset_evictions"));
        fact(v, "line size", "%" PRIu64 " bytes", ju(answer, "line_size"));

        t = section(v, "Shared Data Cache Line Table", "Cachelines sort on: Peer Snoop", line_cols,
                    ELEMENTSOF(line_cols));
        json_array_foreach(lines, i, line) {
                uint64_t local = ju2(line, "peer_snoops", "local"), remote = ju2(line, "peer_snoops", "remote");
                uint64_t lvl[_LVL_MAX];

                c2c_levels(json_object_get(line, "loads_by_source"), lvl);
                table_row(t, TABLE_ROW);
                table_u64(t, i);
                table_text(t, line_address(line));
                cell_node(t, line);
                cell_pct(t, local + remote, peers);
                table_u64(t, local + remote);
                table_u64(t, local);
                table_u64(t, remote);
                table_u64(t, ju(line, "records"));
                table_u64(t, ju(line, "loads"));
                table_u64(t, ju(line, "stores"));
                table_u64(t, 0);
                table_u64(t, 0);
                table_u64(t, ju(line, "stores"));
                for (int k = 0; k < _LVL_MAX; k++)
                        table_u64(t, lvl[k]);
                table_text(t, js(line, "class"));
                table_u64(t, ju(line, "records_max"));
        }

        t = section(v, "Shared Cache Line Distribution Pareto", "Cacheline data grouping: offset,iaddr", pareto_cols,
                    ELEMENTSOF(pareto_cols));
        json_array_foreach(lines, i, line) {
                uint64_t local = ju2(line, "peer_snoops", "local"), remote = ju2(line, "peer_snoops", "remote"),
                         stores = ju(line, "stores");
                const json_t *offs = json_object_get(line, "offsets"), *o;
                size_t k;

                table_row(t, TABLE_ROW_SUMMARY);
                table_u64(t, i);
                table_u64(t, remote);
                table_u64(t, local);
                table_u64(t, 0);
                table_u64(t, 0);
                table_u64(t, stores);
                table_text(t, line_address(line));
                json_array_foreach(offs, k, o) {
                        table_row(t, TABLE_ROW);
                        table_text(t, NULL);
                        cell_pct(t, ju2(o, "peer_snoops", "remote"), remote);
                        cell_pct(t, ju2(o, "peer_snoops", "local"), local);
                        cell_pct(t, 0, 0);
                        cell_pct(t, 0, 0);
                        cell_pct(t, ju(o, "stores"), stores);
                        table_text(t, js(o, "offset"));
                        cell_node(t, line);
                        table_text(t, js(o, "pc") ?: js(o, "region"));
                        if (json_object_get(o, "latency_mean_cycles"))
                                table_num(t, jd(o, "latency_mean_cycles"), "%.0f", jd(o, "latency_mean_cycles"));
                        else
                                table_text(t, NULL);
                        table_u64(t, ju(o, "loads") + ju(o, "stores"));
                        table_u64(t, json_array_size(json_object_get(o, "cpus")));
                        cell_symbol(t, o);
                        cell_object(t, o);
                        table_text(t, js(o, "source"));
                        table_text(t, js(o, "data_symbol"));
                        table_u64(t, ju(o, "loads"));
                        table_u64(t, ju(o, "stores"));
                        table_u64(t, ju(o, "records_max"));
                        cell_list(t, json_object_get(o, "tids"), json_is_true(json_object_get(o, "tids_truncated")));
                        table_text(t, js(o, "comm"));
                }
        }
        return 0;
}

/* ---- /hotpcs: perf report --stdio ---- */

/* A row's processes as a cell: the hottest PC's pid, then the others; a long list cut. */
#define VIEW_PIDS_SHOWN 8

static void cell_pids(struct table *t, const json_t *o) {
        const json_t *pids = json_object_get(o, "pids"), *x;
        uint64_t pid = ju(o, "pid");
        struct strbuf b = STRBUF_INIT;
        size_t i, n = 1;

        strbuf_printf(&b, "%" PRIu64, pid);
        json_array_foreach(pids, i, x) {
                if ((uint64_t) json_integer_value(x) == pid)
                        continue;
                if (n++ == VIEW_PIDS_SHOWN) {
                        strbuf_puts(&b, ",...");
                        break;
                }
                strbuf_printf(&b, ",%" JSON_INTEGER_FORMAT, json_integer_value(x));
        }
        table_text(t, b.buf);
        strbuf_done(&b);
}

/* The first PC_COLS_NAMED columns every PC has; the rest only SPE's operations. */
#define PC_COLS_NAMED 10
static const struct table_column pc_cols[] = {
        { NULL, "Overhead", TABLE_RIGHT, "share of the window's samples" },
        { NULL, "Samples", TABLE_RIGHT, "an upper bound: at most Error more than the true count" },
        { NULL, "Error", TABLE_RIGHT, "Space-Saving's bound on the overcount" },
        { NULL, "PC", TABLE_RIGHT, "the hottest of the PCs the row sums" },
        { NULL, "Pids", TABLE_LEFT, "the processes the row sums, its hottest PC's first" },
        { NULL, "Command", TABLE_LEFT, "the command that ran it (perf's comm), as it was then" },
        { NULL, "Service", TABLE_LEFT, "the systemd unit or container the process runs in" },
        { NULL, "Shared Object", TABLE_LEFT, NULL },
        { NULL, "Symbol", TABLE_LEFT, NULL },
        { NULL, "Source:Line", TABLE_LEFT, "the hottest PC's source file and line from DWARF" },
        { "Ops", "Load", TABLE_RIGHT, NULL },
        { "Ops", "Store", TABLE_RIGHT, NULL },
        { "Ops", "Branch", TABLE_RIGHT, NULL },
        { "Ops", "Other", TABLE_RIGHT, NULL },
        { "Events", "L1D refill", TABLE_RIGHT, NULL },
        { "Events", "LLC miss", TABLE_RIGHT, NULL },
        { "Events", "TLB walk", TABLE_RIGHT, NULL },
        { "Events", "Mispred", TABLE_RIGHT, NULL },
        { "cycles", "mean", TABLE_RIGHT, "mean total latency" },
};

int view_hotpcs(const json_t *answer, const struct view_context *ctx, struct view *v) {
        static const char *const ops[] = { "load", "store", "branch", "other" };
        static const char *const evs[] = { "l1d_refill", "llc_miss", "tlb_walk", "mispredict" };
        const json_t *pcs = json_object_get(answer, "pcs"), *o;
        uint64_t samples = ju(answer, "samples");
        bool with_ops = false;
        struct table *t;
        size_t i;

        if (!json_is_array(pcs))
                return -EINVAL;
        v->title = "Hot PCs";
        context_facts(v, answer, ctx);
        filter_fact(v, answer);
        fact(v, "samples", "%" PRIu64, samples);
        if (ju(answer, "unmapped_samples") > 0)
                fact(v, "unmapped", "%" PRIu64 " samples at user PCs in no mapping known for their process",
                     ju(answer, "unmapped_samples"));
        fact(v, "table", "%" PRIu64 " entries, %" PRIu64 " evictions, counts at most %" PRIu64 " over",
             ju(answer, "capacity"), ju(answer, "evictions"), ju(answer, "error_bound"));

        /* The CPU sampler's leaf PCs have no ops, events or latency: their columns would be zeros. */
        json_array_foreach(pcs, i, o)
                with_ops |= json_object_size(json_object_get(o, "ops")) > 0;
        t = section(v, "Hot PCs", with_ops ? "sorted by samples" : "sorted by samples (CPU time: no ops to count)",
                    pc_cols, with_ops ? ELEMENTSOF(pc_cols) : PC_COLS_NAMED);
        json_array_foreach(pcs, i, o) {
                const json_t *by_op = json_object_get(o, "ops"), *by_ev = json_object_get(o, "events");
                uint64_t n = ju(o, "samples");

                table_row(t, TABLE_ROW);
                cell_pct(t, n, samples);
                table_u64(t, n);
                table_u64(t, ju(o, "error"));
                table_text(t, js(o, "pc") ?: js(o, "region"));
                cell_pids(t, o);
                table_text(t, js(o, "comm"));
                table_text(t, js(o, "service"));
                cell_object(t, o);
                cell_symbol(t, o);
                table_text(t, js(o, "source"));
                if (!with_ops)
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(ops); k++)
                        table_u64(t, ju(by_op, ops[k]));
                for (size_t k = 0; k < ELEMENTSOF(evs); k++)
                        table_u64(t, ju(by_ev, evs[k]));
                table_num(t, n ? (double) ju(o, "latency_sum_cycles") / (double) n : 0, "%.1f",
                          n ? (double) ju(o, "latency_sum_cycles") / (double) n : 0);
        }
        return 0;
}

/* ---- /latency ---- */

static const struct table_column lat_cols[] = {
        { NULL, "Latency", TABLE_LEFT, "total: issue to completion; issue: dispatch to issue; translation: the address's" },
        { NULL, "Of", TABLE_LEFT, "an op, or the loads served by a data source" },
        { NULL, "Count", TABLE_RIGHT, NULL },
        { "cycles", "mean", TABLE_RIGHT, NULL },
        { "cycles", "p50", TABLE_RIGHT, NULL },
        { "cycles", "p90", TABLE_RIGHT, NULL },
        { "cycles", "p99", TABLE_RIGHT, NULL },
        { "cycles", "p99.9", TABLE_RIGHT, NULL },
        { "cycles", "max", TABLE_RIGHT, "the highest bucket's bound: exact below 185 cycles, within 0.54% above" },
};

static const struct table_column hist_cols[] = {
        { "cycles", "<=", TABLE_RIGHT, "the bucket holds values above half this, up to it" },
        { NULL, "Count", TABLE_RIGHT, NULL },
        { NULL, "%", TABLE_RIGHT, NULL },
        { NULL, "", TABLE_LEFT, NULL },
};

static void lat_rows(struct table *t, const char *kind, const char *prefix, const json_t *groups) {
        const char *name;
        json_t *s;

        json_object_foreach((json_t *) groups, name, s) {
                table_row(t, TABLE_ROW);
                table_text(t, kind);
                table_textf(t, "%s%s", prefix, name);
                table_u64(t, ju(s, "count"));
                table_num(t, jd(s, "mean"), "%.1f", jd(s, "mean"));
                table_num(t, jd(s, "p50"), "%.1f", jd(s, "p50"));
                table_num(t, jd(s, "p90"), "%.1f", jd(s, "p90"));
                table_num(t, jd(s, "p99"), "%.1f", jd(s, "p99"));
                table_num(t, jd(s, "p999"), "%.1f", jd(s, "p999"));
                table_u64(t, ju(s, "max"));
        }
}

static void add_histogram(struct view *v, const char *title, const json_t *buckets) {
        struct view_histogram *h;
        size_t i;
        json_t *b;

        if (v->nhist == VIEW_MAX_CHARTS || json_array_size(buckets) == 0)
                return;
        h = &v->hist[v->nhist++];
        h->title = xstrdup(title);
        h->n = json_array_size(buckets);
        h->le = xcalloc(h->n, sizeof(*h->le));
        h->count = xcalloc(h->n, sizeof(*h->count));
        json_array_foreach(buckets, i, b) {
                h->le[i] = ju(b, "le");
                h->count[i] = ju(b, "count");
        }
}

int view_latency(const json_t *answer, const struct view_context *ctx, struct view *v) {
        const json_t *kinds = json_object_get(answer, "latency_cycles"), *k;
        const char *kind;
        struct table *t;

        if (!json_is_object(kinds))
                return -EINVAL;
        v->title = "Latency";
        context_facts(v, answer, ctx);
        why_none(v, answer, ctx, "latencies");
        t = section(v, "Latency by op and data source", "quantiles by nearest rank, within 0.27% above 185 cycles; max within 0.54%",
                    lat_cols, ELEMENTSOF(lat_cols));
        json_object_foreach((json_t *) kinds, kind, k) {
                lat_rows(t, kind, "", json_object_get(k, "by_op"));
                lat_rows(t, kind, "loads from ", json_object_get(k, "loads_by_source"));
        }
        /* The charts: the total latency of each op, the one a slow service is about. */
        {
                const json_t *ops = json_object_get(json_object_get(kinds, "total"), "by_op"), *s;
                const char *op;

                json_object_foreach((json_t *) ops, op, s) {
                        char title[64];

                        snprintf(title, sizeof(title), "total latency: %s, %" PRIu64 " samples", op, ju(s, "count"));
                        add_histogram(v, title, json_object_get(s, "buckets"));
                }
        }
        fact(v, "histograms", "%zu", v->nhist);
        return 0;
}

/* ---- /counters: perf stat -A ---- */

static const struct table_column counter_cols[] = {
        { NULL, "CPU", TABLE_LEFT, NULL },
        { NULL, "counts", TABLE_RIGHT, "since the collector started (scaled when multiplexed)" },
        { NULL, "event", TABLE_LEFT, NULL },
        { "last interval", "delta", TABLE_RIGHT, NULL },
        { "last interval", "per second", TABLE_RIGHT, NULL },
};

static const struct table_column ratio_cols[] = {
        { NULL, "CPU", TABLE_LEFT, NULL },
        { NULL, "ratio", TABLE_LEFT, NULL },
        { NULL, "value", TABLE_RIGHT, "over the last interval" },
};

static const struct table_column topdown_cols[] = {
        { NULL, "CPU", TABLE_LEFT, NULL },
        { NULL, "bar", TABLE_LEFT,
          "one letter per 2.5%: F frontend bound, S bad speculation, R retiring, B backend bound, "
          "T SMT contention (AMD)" },
        { "level 1, last interval", "frontend", TABLE_RIGHT, NULL },
        { "level 1, last interval", "bad spec", TABLE_RIGHT, NULL },
        { "level 1, last interval", "retiring", TABLE_RIGHT, NULL },
        { "level 1, last interval", "backend", TABLE_RIGHT, NULL },
        { "level 1, last interval", "SMT", TABLE_RIGHT, "slots the other SMT thread took (AMD Zen 4, Zen 5)" },
};

/* Letters of the bar: 40, one per 2.5% of the interval. */
#define TOPDOWN_BAR_CELLS 40U

static const char *const topdown_level1[] = { "frontend_bound", "bad_speculation", "retiring", "backend_bound",
                                               "smt_contention" };

/* A CPU's level-1 top-down as a bar of letters (text and page alike), or no
 * row when the CPU has no complete level 1 in this interval. */
static void topdown_row(struct table *t, const json_t *c) {
        static const char letters[] = "FSRBT";
        const json_t *td = json_object_get(c, "topdown");
        char bar[TOPDOWN_BAR_CELLS + 1];
        double v[ELEMENTSOF(topdown_level1)] = {}, cum = 0;
        size_t filled = 0;

        for (size_t k = 0; k < ELEMENTSOF(topdown_level1); k++) {
                const json_t *x = json_object_get(td, topdown_level1[k]);

                if (json_is_number(x))
                        v[k] = json_number_value(x);
                else if (k < 4)
                        return; /* smt_contention alone is optional */
        }
        /* Cumulative rounding, so the cells add up to the whole bar. */
        for (size_t k = 0; k < ELEMENTSOF(v); k++) {
                size_t upto;

                cum += v[k];
                upto = (size_t) (cum * TOPDOWN_BAR_CELLS + 0.5);
                upto = MIN(upto, (size_t) TOPDOWN_BAR_CELLS);
                while (filled < upto)
                        bar[filled++] = letters[k];
        }
        while (filled < TOPDOWN_BAR_CELLS)
                bar[filled++] = '.';
        bar[filled] = '\0';
        table_row(t, TABLE_ROW);
        table_textf(t, "CPU%" PRIu64, ju(c, "cpu"));
        table_text(t, bar);
        for (size_t k = 0; k < ELEMENTSOF(v); k++)
                if (k < 4 || json_is_number(json_object_get(td, topdown_level1[k])))
                        table_num(t, 100 * v[k], "%.1f%%", 100 * v[k]);
}

static const struct table_column mux_cols[] = {
        { NULL, "CPU", TABLE_LEFT, NULL },
        { NULL, "group", TABLE_LEFT, NULL },
        { NULL, "events", TABLE_RIGHT, NULL },
        { NULL, "enabled s", TABLE_RIGHT, NULL },
        { NULL, "running s", TABLE_RIGHT, NULL },
        { NULL, "running", TABLE_RIGHT, "perf stat's (NN.NN%): the share of time the group was on the PMU" },
};

/*
 * One CPU's (or the host's) events as perf stat -A prints them: a count, or
 * <not counted> (open, but its group did not run in the interval) and
 * <not supported> (it could not be opened here) where perf prints them.
 */
static void counter_rows(struct table *t, const char *cpu, const json_t *events, const json_t *host_events,
                         const json_t *unavailable) {
        const char *name;
        json_t *e;

        json_object_foreach((json_t *) host_events, name, e) {
                const json_t *mine = json_object_get(events, name);

                table_row(t, TABLE_ROW);
                table_text(t, cpu);
                if (!mine)
                        table_text(t, "<not supported>");
                else if (!json_is_true(json_object_get(mine, "counted")))
                        table_text(t, "<not counted>");
                else
                        table_u64(t, ju(mine, "total"));
                table_text(t, name);
                if (mine && json_is_true(json_object_get(mine, "counted"))) {
                        table_u64(t, ju(mine, "delta"));
                        table_num(t, jd(mine, "per_second"), "%.1f /s", jd(mine, "per_second"));
                }
        }
        json_object_foreach((json_t *) unavailable, name, e) {
                table_row(t, TABLE_ROW);
                table_text(t, cpu);
                table_text(t, "<not supported>");
                table_text(t, name);
        }
}

static void ratio_rows(struct table *t, const char *cpu, const json_t *ratios) {
        const char *name;
        json_t *x;

        json_object_foreach((json_t *) ratios, name, x) {
                table_row(t, TABLE_ROW);
                table_text(t, cpu);
                table_text(t, name);
                table_num(t, json_number_value(x), "%.4f", json_number_value(x));
        }
}

static void add_strip(struct view *v, const char *title, const json_t *cpus, const char *member, const char *name) {
        struct view_strip *s;
        size_t i, n = 0;
        json_t *c;

        if (v->nstrips == VIEW_MAX_CHARTS)
                return;
        json_array_foreach(cpus, i, c)
                n += json_object_get(json_object_get(c, member), name) != NULL;
        if (n == 0)
                return;
        s = &v->strips[v->nstrips++];
        s->title = xstrdup(title);
        s->cpu = xcalloc(json_array_size(cpus), sizeof(*s->cpu));
        s->value = xcalloc(json_array_size(cpus), sizeof(*s->value));
        json_array_foreach(cpus, i, c) {
                const json_t *x = json_object_get(json_object_get(c, member), name);

                if (json_is_object(x))
                        x = json_object_get(x, "per_second");
                if (!json_is_number(x))
                        continue;
                s->cpu[s->n] = (unsigned) ju(c, "cpu");
                s->value[s->n++] = json_number_value(x);
        }
}

int view_counters(const json_t *answer, const struct view_context *ctx, struct view *v) {
        const json_t *cpus = json_object_get(answer, "cpus"), *host = json_object_get(answer, "host"),
                     *unavailable = json_object_get(answer, "unavailable"), *c, *host_events;
        const char *name;
        struct table *t;
        json_t *x;
        size_t i;

        if (!json_is_array(cpus))
                return -EINVAL;
        host_events = json_object_get(host, "events");
        v->title = "Counters";
        context_facts(v, answer, ctx);
        fact(v, "state", "%s", js(answer, "state") ?: "?");
        if (js(answer, "message") && js(answer, "message")[0])
                fact(v, "message", "%s", js(answer, "message"));
        fact(v, "interval", "%.3f s, %" PRIu64 " reads", jd(answer, "interval_seconds"), ju(answer, "reads"));

        t = section(v, "Performance counter stats", "per CPU, then the host (perf stat -A)", counter_cols,
                    ELEMENTSOF(counter_cols));
        json_array_foreach(cpus, i, c) {
                char cpu[DECIMAL_STR_MAX(unsigned) + 4];

                snprintf(cpu, sizeof(cpu), "CPU%" PRIu64, ju(c, "cpu"));
                counter_rows(t, cpu, json_object_get(c, "events"), host_events, unavailable);
        }
        counter_rows(t, "all", host_events, host_events, unavailable);

        t = section(v, "Ratios", "instructions per cycle, miss and walk ratios of the last interval", ratio_cols,
                    ELEMENTSOF(ratio_cols));
        json_array_foreach(cpus, i, c) {
                char cpu[DECIMAL_STR_MAX(unsigned) + 4];

                snprintf(cpu, sizeof(cpu), "CPU%" PRIu64, ju(c, "cpu"));
                ratio_rows(t, cpu, json_object_get(c, "ratios"));
        }
        ratio_rows(t, "all", json_object_get(host, "ratios"));

        t = section(v, "Top-down", "where the slots of the last interval went, per CPU (level 1; /status says why a CPU has none)",
                    topdown_cols, ELEMENTSOF(topdown_cols));
        json_array_foreach(cpus, i, c)
                topdown_row(t, c);

        t = section(v, "Multiplexing", "groups that ran less than enabled were scaled", mux_cols, ELEMENTSOF(mux_cols));
        json_array_foreach(cpus, i, c) {
                const json_t *g;
                size_t k;

                json_array_foreach(json_object_get(c, "groups"), k, g) {
                        double en = jd(g, "enabled_seconds"), run = jd(g, "running_seconds");

                        table_row(t, TABLE_ROW);
                        table_textf(t, "CPU%" PRIu64, ju(c, "cpu"));
                        table_text(t, js(g, "name"));
                        table_u64(t, ju(g, "events"));
                        table_num(t, en, "%.3f", en);
                        table_num(t, run, "%.3f", run);
                        table_num(t, en > 0 ? 100 * run / en : 0, "%.2f%%", en > 0 ? 100 * run / en : 0);
                }
        }

        /* The heat strips: each ratio per CPU; without ratios (no hardware PMU), each counted event's rate. */
        json_object_foreach(json_object_get(host, "ratios"), name, x)
                add_strip(v, name, cpus, "ratios", name);
        if (v->nstrips == 0)
                json_object_foreach((json_t *) host_events, name, x) {
                        char title[128];

                        snprintf(title, sizeof(title), "%s per second", name);
                        add_strip(v, title, cpus, "events", name);
                }
        return 0;
}

/* ---- text ---- */

static void render_histogram_text(const struct view_histogram *h, struct strbuf *out) {
        struct table t;
        uint64_t max = 0, total = 0;

        for (size_t i = 0; i < h->n; i++) {
                max = MAX(max, h->count[i]);
                total += h->count[i];
        }
        table_init(&t, hist_cols, ELEMENTSOF(hist_cols));
        for (size_t i = 0; i < h->n; i++) {
                size_t bar = max ? (size_t) ((h->count[i] * VIEW_BAR_WIDTH + max - 1) / max) : 0;
                char hashes[VIEW_BAR_WIDTH + 1];

                memset(hashes, '#', bar);
                hashes[bar] = '\0';
                table_row(&t, TABLE_ROW);
                table_u64(&t, h->le[i]);
                table_u64(&t, h->count[i]);
                cell_pct(&t, h->count[i], total);
                table_text(&t, hashes);
        }
        table_render_text(&t, out);
        table_done(&t);
}

void view_render_text(const struct view *v, struct strbuf *out) {
        size_t w = 0;

        strbuf_printf(out, "# armprofd: %s\n#\n", v->title);
        for (size_t i = 0; i < v->nfacts; i++)
                w = MAX(w, strlen(v->facts[i].name));
        for (size_t i = 0; i < v->nfacts; i++)
        {
                strbuf_printf(out, "# %-*s : ", (int) w, v->facts[i].name);
                text_escape(out, v->facts[i].value);
                strbuf_putc(out, '\n');
        }
        for (size_t i = 0; i < v->nsections; i++) {
                const struct view_section *s = &v->sections[i];

                strbuf_printf(out, "\n# ==== %s ====\n", s->heading);
                if (s->note)
                        strbuf_printf(out, "# %s\n", s->note);
                strbuf_puts(out, "#\n");
                if (s->table.nrows == 0)
                        strbuf_puts(out, "#   (none)\n");
                else
                        table_render_text(&s->table, out);
        }
        for (size_t i = 0; i < v->nhist; i++) {
                strbuf_puts(out, "\n# ==== Histogram: ");
                text_escape(out, v->hist[i].title);
                strbuf_puts(out, " ====\n#\n");
                render_histogram_text(&v->hist[i], out);
        }
}
