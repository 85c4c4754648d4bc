/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "aggregates.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "strbuf.h"

/* "0x", a u64's 16 hex digits, the NUL. */
#define AGG_HEX_STR_MAX (2U + 16U + 1U)

json_t *agg_hex(uint64_t v) {
        char buf[AGG_HEX_STR_MAX];

        snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
        return json_string(buf);
}

#define NS_PER_SEC INT64_C(1000000000)
#define NS_PER_MS INT64_C(1000000)

int agg_rfc3339(int64_t unix_ns, char *buf, size_t len) {
        int64_t sec = unix_ns / NS_PER_SEC, rem = unix_ns % NS_PER_SEC;
        time_t t;
        struct tm tm;
        int n;

        if (rem < 0) { /* floor, for times before 1970 */
                sec--;
                rem += NS_PER_SEC;
        }
        t = (time_t) sec;
        if (!gmtime_r(&t, &tm))
                return -ERANGE;
        n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (rem / NS_PER_MS));
        return n > 0 && (size_t) n < len ? 0 : -ENOBUFS;
}

/* Seconds rounded to the millisecond: what a timer-driven interval can claim. */
static json_t *seconds_ms(uint64_t ns) {
        return json_real((double) ((ns + (uint64_t) NS_PER_MS / 2) / (uint64_t) NS_PER_MS) / 1e3);
}

/*
 * {"start": RFC 3339, "end": ..., "start_unix_ms": ..., "end_unix_ms": ..., "seconds": duration,
 *  "epochs": n, "window_seconds": as asked, "clock": "unix"} for live data and replays whose
 * perf.data says how its clock maps to Unix time; otherwise "clock": "perf" and the bounds in
 * perf's own nanoseconds, "start_perf_ns"/"end_perf_ns" (no date can be given for them).
 */
json_t *agg_interval_json(const struct store_interval *iv) {
        json_t *o = json_object();

        if (iv->epochs > 0 && iv->clock.kind == STORE_CLOCK_UNIX) {
                int64_t start = (int64_t) iv->start_ns + iv->clock.unix_offset_ns;
                int64_t end = (int64_t) iv->end_ns + iv->clock.unix_offset_ns;
                char buf[AGG_RFC3339_MAX];

                if (agg_rfc3339(start, buf, sizeof(buf)) == 0)
                        json_object_set_new(o, "start", json_string(buf));
                if (agg_rfc3339(end, buf, sizeof(buf)) == 0)
                        json_object_set_new(o, "end", json_string(buf));
                json_object_set_new(o, "start_unix_ms", json_integer(start / NS_PER_MS));
                json_object_set_new(o, "end_unix_ms", json_integer(end / NS_PER_MS));
        } else if (iv->epochs > 0) {
                json_object_set_new(o, "start_perf_ns", json_integer((json_int_t) iv->start_ns));
                json_object_set_new(o, "end_perf_ns", json_integer((json_int_t) iv->end_ns));
        }
        json_object_set_new(o, "seconds", seconds_ms(iv->end_ns - iv->start_ns));
        json_object_set_new(o, "epochs", json_integer(iv->epochs));
        if (iv->window_ns && iv->window_ns != STORE_WINDOW_ALL)
                json_object_set_new(o, "window_seconds", seconds_ms(iv->window_ns));
        json_object_set_new(o, "clock", json_string(iv->clock.kind == STORE_CLOCK_UNIX ? "unix" : "perf"));
        return o;
}

static json_t *sources_json(const uint64_t *by_source) {
        json_t *o = json_object();

        /* SPE_DATA_SRC_NONE (no data-source packet) is not a source. */
        for (int s = SPE_DATA_SRC_UNKNOWN; s < _SPE_DATA_SRC_MAX; s++)
                if (by_source[s])
                        json_object_set_new(o, spe_data_src_name(s), json_integer((json_int_t) by_source[s]));
        return o;
}

static json_t *evictions_json(const uint64_t *evictions) {
        json_t *o = json_object();

        for (unsigned i = 0; i < _STORE_TABLE_MAX; i++)
                json_object_set_new(o, store_table_name(i), json_integer((json_int_t) evictions[i]));
        return o;
}

json_t *agg_totals_json(const struct store_totals *t) {
        return json_pack("{s:I, s:{s:I, s:I, s:I, s:I}, s:o, s:{s:I, s:I}, s:I, s:o}",
                         "records", (json_int_t) t->records,
                         "ops", "load", (json_int_t) t->loads, "store", (json_int_t) t->stores,
                         "branch", (json_int_t) t->branches, "other", (json_int_t) t->other,
                         "loads_by_source", sources_json(t->loads_by_source),
                         "peer_snoops", "local", (json_int_t) t->peer_local, "remote",
                         (json_int_t) t->peer_remote,
                         "records_without_pc", (json_int_t) t->no_pc,
                         "evictions", evictions_json(t->evictions));
}

#define SYMBOL_MAX 256
#define OBJECT_MAX 4096 /* PATH_MAX */

static void add_symbol(json_t *o, const struct agg_symbolizer *sym, uint32_t pid, uint64_t pc) {
        char name[SYMBOL_MAX];

        if (sym && sym->name(sym->userdata, pid, pc, name, sizeof(name)))
                json_object_set_new(o, "symbol", json_string(name));
}

static void add_object(json_t *o, const struct agg_symbolizer *sym, uint32_t pid, uint64_t pc) {
        char path[OBJECT_MAX];

        if (sym && sym->object && sym->object(sym->userdata, pid, pc, path, sizeof(path)))
                json_object_set_new(o, "object", json_string(path));
}

/* Its "source", "FILE:LINE" (a path and a decimal line number). */
static void add_source(json_t *o, const struct agg_symbolizer *sym, uint32_t pid, uint64_t pc) {
        char src[OBJECT_MAX + DECIMAL_STR_MAX(uint32_t) + 1];

        if (sym && sym->source && sym->source(sym->userdata, pid, pc, src, sizeof(src)))
                json_object_set_new(o, "source", json_string(src));
}

/*
 * The kind of memory of a mapping's name (perf's and /proc/PID/maps'):
 * "heap", "stack", "anon" (anonymous memory), "file" (a path), or the
 * bracketed name itself without brackets ("vdso").
 */
static const char *memory_kind(const char *name, char *buf, size_t len) {
        static const char *const anon[] = { "//anon", "/dev/zero", "/anon_hugepage", "[anon:", "/memfd:" };

        if (!name[0] || streq(name, PRIVACY_ANON))
                return "anon";
        for (size_t i = 0; i < ELEMENTSOF(anon); i++)
                if (strncmp(name, anon[i], strlen(anon[i])) == 0)
                        return "anon";
        if (streq(name, "[heap]"))
                return "heap";
        if (strncmp(name, "[stack", strlen("[stack")) == 0)
                return "stack";
        if (name[0] == '/')
                return "file";
        if (name[0] == '[' && name[strlen(name) - 1] == ']') {
                snprintf(buf, len, "%.*s", (int) strlen(name) - 2, name + 1);
                return buf;
        }
        return name;
}

/*
 * A line's "memory": the kind of the mapping that holds va (memory_kind()),
 * when known. Names no address: said whatever [privacy] data_addresses is.
 */
static void add_memory(json_t *o, const struct agg_symbolizer *sym, uint32_t pid, uint64_t va) {
        char name[PRIVACY_REGION_MAX], kind[PRIVACY_REGION_MAX];
        uint64_t off;

        if (!sym || !sym->region || privacy_kernel_addr(va) ||
            !sym->region(sym->userdata, pid, va, name, sizeof(name), &off))
                return;
        json_object_set_new(o, "memory", json_string(memory_kind(name, kind, sizeof(kind))));
}

/* A member's name: a type and a path ("struct shard[3].lock"), as symbols.h's SYMBOLS_MEMBER_MAX. */
#define MEMBER_MAX 512

/*
 * An offset's "data_symbol", "SYMBOL+0xOFFSET", the variable at va (never a
 * kernel address), and its "data_member" when its DWARF type says; the
 * member into member ("" when none).
 */
static void add_data_symbol(json_t *o, const struct agg_symbolizer *sym, uint32_t pid, uint64_t va,
                            char member[MEMBER_MAX]) {
        char buf[SYMBOL_MAX + 3 + 16];

        member[0] = '\0';
        if (!sym || !sym->data_symbol || privacy_kernel_addr(va) ||
            !sym->data_symbol(sym->userdata, pid, va, buf, sizeof(buf), member, MEMBER_MAX))
                return;
        json_object_set_new(o, "data_symbol", json_string(buf));
        if (member[0])
                json_object_set_new(o, "data_member", json_string(member));
}

/* The path of a member's name past its type ("struct stats.hits" -> ".hits"), or the whole. */
static const char *member_path(const char *member) {
        const char *p = member + strcspn(member, ".[");

        return *p ? p : member;
}

/* The length of a member's name without the "+0xN" of a byte inside it: the member it is in. */
static size_t member_len(const char *member) {
        const char *plus = strrchr(member, '+');

        return plus && strncmp(plus, "+0x", 3) == 0 ? (size_t) (plus - member) : strlen(member);
}

/* CPUs a summary lists per member: more are left out (each entry's "cpus" has them). */
#define WRITTEN_CPUS_MAX 64

/* A member written at a line's offsets: where first, by which CPUs, from which functions. */
struct written {
        const char *member;     /* a line's offsets' member, NUL-terminated */
        uint64_t offset;        /* the lowest */
        uint16_t cpus[WRITTEN_CPUS_MAX];
        size_t ncpus;
        const char *function;   /* the first entry's */
};

static bool written_cpu(const struct written *w, uint16_t cpu) {
        for (size_t i = 0; i < w->ncpus; i++)
                if (w->cpus[i] == cpu)
                        return true;
        return false;
}

static int u16_cmp(const void *a, const void *b) {
        return (int) *(const uint16_t *) a - (int) *(const uint16_t *) b;
}

/*
 * The fix-relevant fact of a false-shared line: "N members written by
 * different CPUs: .hits @+0x0 by CPUs 0,1 (worker_a), .misses @+0x8 by CPUs
 * 2,3 (worker_b)", when two of the members its entries store to were
 * written by CPUs none of which wrote the other (the CPUs an entry lists
 * are those of its accesses; an entry with stores is a store's PC). NULL
 * otherwise: one member, or the same CPUs write all of them.
 */
static char *written_summary(struct written *w, size_t n) {
        struct strbuf b = STRBUF_INIT;
        bool apart = false;

        for (size_t i = 0; i < n && !apart; i++)
                for (size_t j = i + 1; j < n && !apart; j++) {
                        bool shared = false;

                        for (size_t k = 0; k < w[i].ncpus && !shared; k++)
                                shared = written_cpu(&w[j], w[i].cpus[k]);
                        apart = !shared;
                }
        if (!apart)
                return NULL;
        strbuf_printf(&b, "%zu members written by different CPUs:", n);
        for (size_t i = 0; i < n; i++) {
                qsort(w[i].cpus, w[i].ncpus, sizeof(*w[i].cpus), u16_cmp);
                const char *path = member_path(w[i].member);

                strbuf_printf(&b, "%s %.*s @+0x%" PRIx64 " by CPU%s ", i ? "," : "",
                              (int) (member_len(w[i].member) - (size_t) (path - w[i].member)), path, w[i].offset,
                              w[i].ncpus == 1 ? "" : "s");
                for (size_t k = 0; k < w[i].ncpus; k++)
                        strbuf_printf(&b, "%s%u", k ? "," : "", (unsigned) w[i].cpus[k]);
                if (w[i].function)
                        strbuf_printf(&b, " (%s)", w[i].function);
        }
        return strbuf_steal(&b, NULL);
}

/* Who ran it: an operator's name for the process's cgroup (never a Prometheus label: unbounded). */
static void add_cgroup(json_t *o, const struct agg_symbolizer *sym, uint32_t pid) {
        char path[AGG_CGROUP_MAX], service[AGG_SERVICE_MAX];

        if (!sym || !sym->cgroup || !sym->cgroup(sym->userdata, pid, path, sizeof(path), service, sizeof(service)))
                return;
        json_object_set_new(o, "cgroup", json_string(path));
        if (service[0])
                json_object_set_new(o, "service", json_string(service));
}

/* A command's bytes as escape_bytes() writes them: each as \xNN at most, and the NUL. */
#define AGG_COMM_ESCAPED_MAX (4 * COMM_MAX)

/*
 * The command that ran it (perf report's "Command"), as the store kept it
 * with the counts. A thread may name itself with any bytes (prctl(2)
 * PR_SET_NAME): a name that is not UTF-8 is served escaped, \xNN.
 */
static void add_comm(json_t *o, const struct comm *comm) {
        size_t len = strnlen(comm->name, sizeof(comm->name));
        char escaped[AGG_COMM_ESCAPED_MAX];
        json_t *s;

        if (len == 0)
                return;
        s = json_stringn(comm->name, len);
        if (!s) {
                escape_bytes(escaped, sizeof(escaped), comm->name, len);
                s = json_string(escaped);
        }
        json_object_set_new(o, "comm", s);
}

bool agg_pid_in_cgroup(const struct agg_symbolizer *sym, uint32_t pid, const char *prefix) {
        char path[AGG_CGROUP_MAX], service[AGG_SERVICE_MAX];

        return sym && sym->cgroup && sym->cgroup(sym->userdata, pid, path, sizeof(path), service, sizeof(service)) &&
               strncmp(path, prefix, strlen(prefix)) == 0;
}

/* perf c2c's Node column: only a line keyed by its physical address has one. */
static void add_node(json_t *o, const struct agg_symbolizer *sym, const struct hotlines_line *l) {
        int node = sym && sym->node && l->by_pa ? sym->node(sym->userdata, l->addr) : -1;

        if (node >= 0)
                json_object_set_new(o, "node", json_integer(node));
}

static const struct privacy_policy *policy(const struct agg_symbolizer *sym) {
        return sym ? sym->privacy : NULL;
}

/* A PC's "pc", or the "region" said in its place when the privacy policy withholds it. */
static void add_pc(json_t *o, const struct agg_symbolizer *sym, unsigned el, uint64_t pc) {
        if (privacy_pc_shown(policy(sym), el, pc))
                json_object_set_new(o, "pc", agg_hex(pc));
        else
                json_object_set_new(o, "region", json_string(PRIVACY_KERNEL));
}

/* Its "symbol" (and with_object its "object"): a withheld kernel PC is not looked up, it is [kernel]. */
static void add_pc_names(json_t *o, const struct agg_symbolizer *sym, uint32_t pid, unsigned el, uint64_t pc,
                         bool with_object) {
        if (!privacy_pc_shown(policy(sym), el, pc)) {
                json_object_set_new(o, "symbol", json_string(PRIVACY_KERNEL));
                return;
        }
        add_symbol(o, sym, pid, pc);
        if (with_object)
                add_object(o, sym, pid, pc);
        add_source(o, sym, pid, pc);
}

/* first's members, then rest's (consumed): the field order of the answers stays as it was. */
static json_t *object_then(json_t *first, json_t *rest) {
        json_object_update(first, rest);
        json_decref(rest);
        return first;
}

static json_t *u16_list(const uint16_t *v, size_t n) {
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, json_integer(v[i]));
        return a;
}

static json_t *u32_list(const uint32_t *v, size_t n) {
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, json_integer(v[i]));
        return a;
}

/* What makes a hot PC part of a row (agg_hotpcs_rows()), found once per PC. */
struct pc_ident {
        const struct hotpcs_item *it;
        char *symbol, *object;          /* NULL: not known */
        bool function;                  /* symbol names a function (not "[kernel]" for a kernel PC) */
        bool withheld;                  /* a kernel PC the policy withholds: "[kernel]" */
};

/* A PC with no function to count it in is a row of its own process and address. */
static bool ident_named(const struct pc_ident *x) {
        return x->withheld || x->function;
}

static int strcmp_null(const char *a, const char *b) {
        return strcmp(a ?: "", b ?: "");
}

/*
 * The row's identity: the command (a task with none is its pid, as perf
 * names it), the EL, then the function and its file, or the process and
 * the address of a PC with no function.
 */
static int ident_cmp(const void *x, const void *y) {
        const struct pc_ident *a = x, *b = y;
        bool ka = comm_known(&a->it->comm), kb = comm_known(&b->it->comm);
        int c;

        if (ka != kb)
                return ka ? -1 : 1;
        c = ka ? strncmp(a->it->comm.name, b->it->comm.name, sizeof(a->it->comm.name)) : 0;
        if (c == 0 && !ka && a->it->pid != b->it->pid)
                c = a->it->pid < b->it->pid ? -1 : 1;
        if (c == 0 && a->it->el != b->it->el)
                c = a->it->el < b->it->el ? -1 : 1;
        if (c == 0 && ident_named(a) != ident_named(b))
                c = ident_named(a) ? -1 : 1;
        if (c == 0 && a->withheld != b->withheld)
                c = a->withheld ? -1 : 1;
        if (c == 0 && ident_named(a)) {
                c = strcmp_null(a->object, b->object);
                if (c == 0)
                        c = strcmp_null(a->symbol, b->symbol);
                return c;
        }
        if (c == 0 && a->it->pid != b->it->pid)
                c = a->it->pid < b->it->pid ? -1 : 1;
        if (c == 0 && a->it->pc != b->it->pc)
                c = a->it->pc < b->it->pc ? -1 : 1;
        return c;
}

/* By samples, descending; ties by command, function, then the hottest PC's process and address. */
static int row_cmp(const void *x, const void *y) {
        const struct agg_pc_row *a = x, *b = y;
        int c;

        if (a->sum.count != b->sum.count)
                return a->sum.count > b->sum.count ? -1 : 1;
        c = strncmp(a->sum.comm.name, b->sum.comm.name, sizeof(a->sum.comm.name));
        if (c == 0)
                c = strcmp_null(a->symbol, b->symbol);
        if (c == 0 && a->sum.pid != b->sum.pid)
                c = a->sum.pid < b->sum.pid ? -1 : 1;
        if (c == 0 && a->sum.pc != b->sum.pc)
                c = a->sum.pc < b->sum.pc ? -1 : 1;
        return c;
}

static int u32_cmp(const void *x, const void *y) {
        uint32_t a = *(const uint32_t *) x, b = *(const uint32_t *) y;

        return a < b ? -1 : a > b;
}

/* The run x[0, n) of one identity as a row: counts summed, its hottest PC's pc and pid, the pids. */
static void row_of(struct agg_pc_row *row, struct pc_ident *x, size_t n) {
        const struct hotpcs_item *hot = x[0].it;
        size_t k = 0;

        *row = (struct agg_pc_row) {
                .sum = *hot,
                .symbol = TAKE_PTR(x[0].symbol),
                .object = TAKE_PTR(x[0].object),
                .withheld = x[0].withheld,
                .pids = xmalloc(n * sizeof(uint32_t)),
        };
        row->sum.count = row->sum.error = row->sum.lat_sum = 0;
        memset(row->sum.ops, 0, sizeof(row->sum.ops));
        memset(row->sum.events, 0, sizeof(row->sum.events));
        for (size_t i = 0; i < n; i++) {
                const struct hotpcs_item *it = x[i].it;

                /* Ties to the lowest pid and pc: the same answer whatever order the merge left. */
                if (it->count > hot->count ||
                    (it->count == hot->count && (it->pid < hot->pid || (it->pid == hot->pid && it->pc < hot->pc))))
                        hot = it;
                row->sum.count += it->count;
                row->sum.error += it->error;
                for (int j = 0; j < _HOTPCS_OP_MAX; j++)
                        row->sum.ops[j] += it->ops[j];
                for (int j = 0; j < _HOTPCS_EV_MAX; j++)
                        row->sum.events[j] += it->events[j];
                row->sum.lat_sum += it->lat_sum;
                row->pids[i] = it->pid;
                free(x[i].symbol);
                free(x[i].object);
        }
        row->sum.pc = hot->pc;
        row->sum.pid = hot->pid;
        qsort(row->pids, n, sizeof(uint32_t), u32_cmp);
        for (size_t i = 0; i < n; i++)
                if (k == 0 || row->pids[k - 1] != row->pids[i])
                        row->pids[k++] = row->pids[i];
        row->n_pids = k;
}

void agg_hotpcs_rows(const struct hotpcs_merged *m, const struct agg_symbolizer *sym, const char *cgroup_prefix,
                     size_t limit, struct agg_pc_rows *ret) {
        struct pc_ident *x = xmalloc(MAX(m->n, (size_t) 1) * sizeof(*x));
        struct agg_pc_rows rows = {};
        size_t n = 0;

        for (size_t i = 0; i < m->n; i++) {
                const struct hotpcs_item *it = &m->item[i];
                char name[SYMBOL_MAX], path[OBJECT_MAX];

                if (cgroup_prefix && !agg_pid_in_cgroup(sym, it->pid, cgroup_prefix))
                        continue;
                x[n] = (struct pc_ident) { .it = it, .withheld = !privacy_pc_shown(policy(sym), it->el, it->pc) };
                if (!x[n].withheld && sym && sym->name(sym->userdata, it->pid, it->pc, name, sizeof(name))) {
                        x[n].symbol = xstrdup(name);
                        /* "[kernel]" names a kernel address served without kallsyms: a PC, not a function. */
                        x[n].function = !streq(name, PRIVACY_KERNEL);
                        if (sym->object && sym->object(sym->userdata, it->pid, it->pc, path, sizeof(path)))
                                x[n].object = xstrdup(path);
                }
                /* A user PC of a known process (a record with none has SOURCE_NO_ID, STORE_PID_ANY's
                 * value) with no object: its mapping was never told (a lost MMAP2, a process gone
                 * before /proc was read) or is anonymous (JIT code). */
                if (sym && sym->object && it->el == 0 && it->pid != STORE_PID_ANY && !x[n].object)
                        rows.unmapped += it->count;
                n++;
        }
        qsort(x, n, sizeof(*x), ident_cmp);
        rows.row = xmalloc(MAX(n, (size_t) 1) * sizeof(*rows.row));
        for (size_t i = 0, j; i < n; i = j) {
                for (j = i + 1; j < n && ident_cmp(&x[i], &x[j]) == 0; j++)
                        ;
                row_of(&rows.row[rows.n++], &x[i], j - i);
        }
        free(x);
        qsort(rows.row, rows.n, sizeof(*rows.row), row_cmp);
        while (rows.n > limit) {
                struct agg_pc_row *r = &rows.row[--rows.n];

                free(r->symbol);
                free(r->object);
                free(r->pids);
        }
        *ret = rows;
}

void agg_pc_rows_done(struct agg_pc_rows *rows) {
        if (!rows)
                return;
        for (size_t i = 0; i < rows->n; i++) {
                free(rows->row[i].symbol);
                free(rows->row[i].object);
                free(rows->row[i].pids);
        }
        free(rows->row);
        *rows = (struct agg_pc_rows) {};
}

json_t *agg_hotpcs_json(const struct store_hotpcs_result *res, const struct agg_pc_rows *rows,
                        const struct agg_symbolizer *sym) {
        static const char *const ops[_HOTPCS_OP_MAX] = { "load", "store", "branch", "other" };
        static const char *const evs[_HOTPCS_EV_MAX] = { "l1d_refill", "llc_miss", "tlb_walk", "mispredict" };
        json_t *items = json_array();

        for (size_t i = 0; i < rows->n; i++) {
                const struct agg_pc_row *row = &rows->row[i];
                const struct hotpcs_item *it = &row->sum;
                json_t *o = json_object(), *e = json_object();

                for (int k = 0; k < _HOTPCS_OP_MAX; k++)
                        if (it->ops[k])
                                json_object_set_new(o, ops[k], json_integer((json_int_t) it->ops[k]));
                for (int k = 0; k < _HOTPCS_EV_MAX; k++)
                        if (it->events[k])
                                json_object_set_new(e, evs[k], json_integer((json_int_t) it->events[k]));
                json_t *item = json_object();

                /* The hottest of its PCs, unless withheld; its process's pid, then every pid summed. */
                if (row->withheld)
                        json_object_set_new(item, "region", json_string(PRIVACY_KERNEL));
                else
                        json_object_set_new(item, "pc", agg_hex(it->pc));
                item = object_then(item, json_pack("{s:I, s:i, s:I, s:I, s:o, s:o, s:I}", "pid",
                                                   (json_int_t) it->pid, "el", (int) it->el, "samples",
                                                   (json_int_t) it->count, "error", (json_int_t) it->error,
                                                   "ops", o, "events", e, "latency_sum_cycles",
                                                   (json_int_t) it->lat_sum));
                if (row->withheld || row->symbol)
                        json_object_set_new(item, "symbol", json_string(row->withheld ? PRIVACY_KERNEL : row->symbol));
                if (row->object)
                        json_object_set_new(item, "object", json_string(row->object));
                /* The hottest PC's line (a row sums a function's PCs: its hottest line leads). */
                if (!row->withheld)
                        add_source(item, sym, it->pid, it->pc);
                add_comm(item, &it->comm);
                add_cgroup(item, sym, it->pid);
                json_object_set_new(item, "pids", u32_list(row->pids, row->n_pids));
                json_array_append_new(items, item);
        }
        return json_pack("{s:o, s:I, s:I, s:i, s:I, s:I, s:o}", "interval", agg_interval_json(&res->iv), "samples",
                         (json_int_t) res->pcs.total, "unmapped_samples", (json_int_t) rows->unmapped, "capacity",
                         (int) res->pcs.capacity, "error_bound", (json_int_t) res->pcs.error_bound, "evictions",
                         (json_int_t) res->pcs.evictions, "pcs", items);
}

/*
 * A line's "address" and "va", as the privacy policy allows: a withheld VA
 * is left out with the "region" it lies in. A line keyed by physical
 * address keeps its PA ([privacy] physical_addresses allowed it) unless its
 * VA is the kernel's: a kernel line says nothing but [kernel].
 */
static void add_line_address(json_t *o, const struct agg_symbolizer *sym, const struct hotlines_line *l,
                             uint32_t line_size) {
        char region[PRIVACY_REGION_MAX];
        /* The region of the line's start (HACKING.md §5), the PA-keyed line's by the VA seen on it. */
        uint64_t va = l->by_pa ? l->va & ~(uint64_t) (line_size - 1) : l->addr;

        if (privacy_data_shown(policy(sym), sym ? sym->region : NULL, sym ? sym->userdata : NULL, l->pid, va,
                               region, sizeof(region))) {
                json_object_set_new(o, "address", agg_hex(l->addr));
                json_object_set_new(o, "va", agg_hex(l->va));
                return;
        }
        if (l->by_pa && !privacy_kernel_addr(l->va))
                json_object_set_new(o, "address", agg_hex(l->addr));
        json_object_set_new(o, "region", json_string(region));
}

json_t *agg_hotlines_json(const struct store_hotlines_result *res, const struct agg_symbolizer *sym) {
        json_t *lines = json_array();

        for (size_t i = 0; i < res->lines.n; i++) {
                const struct hotlines_result *l = &res->lines.line[i];
                /* The VA of the line's start (a PA-keyed line's by the VA seen on it), as add_line_address(). */
                uint64_t line_va = l->l.by_pa ? l->l.va & ~(uint64_t) (res->lines.line_size - 1) : l->l.addr;
                json_t *offs = json_array(), *line;
                /* The members its entries store to, for its "summary" (written_summary()). */
                _cleanup_free_ char (*members)[MEMBER_MAX] = xcalloc(MAX(l->noffs, (size_t) 1), MEMBER_MAX);
                _cleanup_free_ struct written *w = xcalloc(MAX(l->noffs, (size_t) 1), sizeof(*w));
                _cleanup_free_ char *summary = NULL;
                size_t nw = 0;

                for (size_t k = 0; k < l->noffs; k++) {
                        const struct hotlines_off *o = &l->off[k];
                        json_t *entry = json_pack("{s:o}", "offset", agg_hex(o->offset));

                        add_pc(entry, sym, o->el, o->pc);
                        entry = object_then(
                                entry,
                                json_pack("{s:I, s:i, s:I, s:I, s:{s:I, s:I}, s:I, s:o, s:b, s:o, s:b}", "pid",
                                          (json_int_t) o->pid, "el", (int) o->el, "loads", (json_int_t) o->loads,
                                          "stores", (json_int_t) o->stores, "peer_snoops", "local",
                                          (json_int_t) o->peer_local, "remote", (json_int_t) o->peer_remote,
                                          "latency_sum_cycles", (json_int_t) o->lat_sum, "cpus",
                                          u16_list(o->cpus, o->ncpus), "cpus_truncated", (int) o->cpus_more,
                                          "tids", u32_list(o->tids, o->ntids), "tids_truncated",
                                          (int) o->tids_more));
                        add_pc_names(entry, sym, o->pid, o->el, o->pc, true);
                        /* An offset of several PCs is one address: looked up once per line. */
                        size_t same = 0;

                        while (same < k && l->off[same].offset != o->offset)
                                same++;
                        if (same < k) {
                                const json_t *prev = json_array_get(offs, same);
                                json_t *v;

                                if ((v = json_object_get(prev, "data_symbol")))
                                        json_object_set(entry, "data_symbol", v);
                                if ((v = json_object_get(prev, "data_member")))
                                        json_object_set(entry, "data_member", v);
                                memcpy(members[k], members[same], MEMBER_MAX);
                        } else
                                add_data_symbol(entry, sym, l->l.pid, line_va + o->offset, members[k]);
                        if (o->stores > 0 && members[k][0]) {
                                size_t j = 0;

                                while (j < nw && (member_len(w[j].member) != member_len(members[k]) ||
                                                  strncmp(w[j].member, members[k], member_len(members[k])) != 0))
                                        j++;
                                if (j == nw)
                                        w[nw++] = (struct written) {
                                                .member = members[k],
                                                .offset = o->offset,
                                                .function = json_string_value(json_object_get(entry, "symbol")),
                                        };
                                w[j].offset = MIN(w[j].offset, o->offset);
                                for (unsigned c = 0; c < o->ncpus; c++)
                                        if (!written_cpu(&w[j], o->cpus[c]) && w[j].ncpus < ELEMENTSOF(w[j].cpus))
                                                w[j].cpus[w[j].ncpus++] = o->cpus[c];
                        }
                        add_comm(entry, &o->comm);
                        add_cgroup(entry, sym, o->pid);
                        /* As the line's: what the entry's table missed of it is bounded (hotlines.h). */
                        json_object_set_new(entry, "records_max",
                                            json_integer((json_int_t) (o->loads + o->stores + l->off_error[k])));
                        /* perf c2c's per-offset "cycles": the mean total latency. */
                        json_object_set_new(entry, "latency_samples", json_integer((json_int_t) o->lat_n));
                        if (o->lat_n)
                                json_object_set_new(entry, "latency_mean_cycles",
                                                    json_real((double) o->lat_sum / (double) o->lat_n));
                        json_array_append_new(offs, entry);
                }
                line = json_object();
                add_line_address(line, sym, &l->l, res->lines.line_size);
                add_memory(line, sym, l->l.pid, line_va);
                /* records counts what the table saw of the line; a line that took
                 * over an evicted one's counter may have had up to its error
                 * more before (hotlines.h): records <= true <= records_max. */
                line = object_then(
                        line,
                        json_pack("{s:s, s:I, s:b, s:s, s:I, s:I, s:I, s:I, s:{s:I, s:I}, s:o, s:I, s:i, s:o}",
                                  "key", l->l.by_pa ? "pa" : "va", "pid", (json_int_t) l->l.pid, "shared",
                                  (int) !!(l->l.flags & HOTLINES_F_SHARED), "class", hotlines_class_name(l->cls),
                                  "records", (json_int_t) (l->l.loads + l->l.stores), "records_max",
                                  (json_int_t) (l->l.loads + l->l.stores + l->l.error), "loads",
                                  (json_int_t) l->l.loads, "stores", (json_int_t) l->l.stores, "peer_snoops",
                                  "local", (json_int_t) l->l.peer_local, "remote", (json_int_t) l->l.peer_remote,
                                  "loads_by_source", sources_json(l->l.src), "latency_sum_cycles",
                                  (json_int_t) l->l.lat_sum, "latency_max_cycles", (int) l->l.lat_max, "offsets",
                                  offs));
                add_node(line, sym, &l->l);
                summary = nw >= 2 ? written_summary(w, nw) : NULL;
                if (summary)
                        json_object_set_new(line, "summary", json_string(summary));
                json_array_append_new(lines, line);
        }
        return json_pack("{s:o, s:i, s:I, s:{s:I, s:I}, s:I, s:I, s:I, s:I, s:o}", "interval",
                         agg_interval_json(&res->iv), "line_size", (int) res->lines.line_size, "records",
                         (json_int_t) res->lines.records, "peer_snoops", "local",
                         (json_int_t) res->lines.peer_local, "remote", (json_int_t) res->lines.peer_remote,
                         "lines_seen", (json_int_t) res->lines.nlines, "lines_with_peer_snoops",
                         (json_int_t) res->lines.npeer, "evictions", (json_int_t) res->lines.evictions,
                         "offset_evictions", (json_int_t) res->lines.off_evictions, "lines", lines);
}

/*
 * The histogram at powers of two: {"le": 2^k, "count": values in
 * (2^(k-1), 2^k]} ("le": 0 the zero bucket, "le": 1 the ones), from the
 * first non-empty to the last, empty ones between included so that a chart
 * can draw them in order. Exact: a schema-7 bucket never straddles a power
 * of two (lathist.h).
 */
static json_t *log2_buckets(const struct lathist_merged *h) {
        const struct lathist_bucket *b = lathist_buckets();
        uint64_t count[LATHIST_LOG2_BUCKETS] = {};
        int first = -1, last = -1;
        json_t *a = json_array();

        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++)
                if (h->count[i]) {
                        unsigned k = lathist_log2_bucket(b[i].hi);

                        count[k] += h->count[i];
                        first = first < 0 ? (int) k : first;
                        last = (int) k;
                }
        for (int k = first; k >= 0 && k <= last; k++)
                json_array_append_new(a, json_pack("{s:I, s:I}", "le", (json_int_t) lathist_log2_le((unsigned) k),
                                                   "count", (json_int_t) count[k]));
        return a;
}

json_t *agg_latency_json(const struct store_latency_result *res) {
        json_t *kinds = json_object();

        for (int k = 0; k < _STORE_LAT_KIND_MAX; k++) {
                json_t *by_op = json_object(), *by_source = json_object();

                for (unsigned g = 0; g < STORE_LAT_GROUPS; g++) {
                        const struct store_lat_hist *h = store_latency_hist(res, k, g);

                        if (h->h.n == 0)
                                continue;
                        json_object_set_new(store_lat_group_is_source(g) ? by_source : by_op,
                                            store_lat_group_name(g),
                                            json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:o}", "count",
                                                      (json_int_t) h->h.n, "sum_cycles", (json_int_t) h->h.sum,
                                                      "mean", (double) h->h.sum / (double) h->h.n, "p50", h->p50,
                                                      "p90", h->p90, "p99", h->p99, "p999", h->p999, "max",
                                                      (json_int_t) lathist_max(&h->h), "buckets",
                                                      log2_buckets(&h->h)));
                }
                json_object_set_new(kinds, store_lat_kind_name(k),
                                    json_pack("{s:o, s:o}", "by_op", by_op, "loads_by_source", by_source));
        }
        return json_pack("{s:o, s:o}", "interval", agg_interval_json(&res->iv), "latency_cycles", kinds);
}
