/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "api.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aggregates.h"
#include "armprofd.pb-c.h"
#include "json-pb.h"
#include "negotiate.h"
#include "page.h"
#include "build-config.h"
#include "cpulist.h"
#include "parse-util.h"
#include "log.h"
#include "process-metrics.h"
#include "views.h"

struct api {
        struct api_provider provider;
        struct timespec started_mono, started_wall;
        struct process_threads *threads;        /* what each thread showed at the last scrape */
};

struct api *api_new(const struct api_provider *provider) {
        struct api *a = xcalloc(1, sizeof(*a));

        a->provider = *provider;
        a->threads = process_threads_new();
        clock_gettime(CLOCK_MONOTONIC, &a->started_mono);
        clock_gettime(CLOCK_REALTIME, &a->started_wall);
        return a;
}

struct api *api_free(struct api *a) {
        if (!a)
                return NULL;
        process_threads_free(a->threads);
        free(a);
        return NULL;
}

static double uptime_seconds(const struct api *a) {
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double) (now.tv_sec - a->started_mono.tv_sec) +
               (double) (now.tv_nsec - a->started_mono.tv_nsec) / 1e9;
}

static void json_body(struct http_response *resp, json_t *o) {
        char *s = json_dumps(o, JSON_INDENT(2) | AGG_JSON_REAL_PRECISION);

        if (!s) {
                http_response_error(resp, 500, "cannot encode JSON");
                return;
        }
        resp->content_type = "application/json";
        strbuf_puts(&resp->body, s);
        strbuf_putc(&resp->body, '\n');
        free(s);
}

/* How an answer is written: its JSON, its protobuf message, or the view of it as text or a page. */
enum rendering {
        RENDER_JSON,
        RENDER_PROTOBUF,
        RENDER_TEXT,
        RENDER_HTML,
        _RENDER_MAX,
        RENDER_INVALID = -EINVAL,
};

static const char *const rendering_names[_RENDER_MAX] = {
        [RENDER_JSON] = "json",
        [RENDER_PROTOBUF] = "protobuf",
        [RENDER_TEXT] = "text",
        [RENDER_HTML] = "html",
};

/*
 * format=json|protobuf|text|html when given; otherwise the client's
 * preference (Accept) among them, where the endpoint has a view; JSON when
 * it states none (curl's * / *, no Accept, an unparsable one).
 */
static enum rendering rendering_of(const struct http_request *req, const char *format, bool has_view) {
        static const struct media_offer offers[] = {
                [RENDER_JSON] = { "application", "json", NULL },
                [RENDER_PROTOBUF] = { "application", "x-protobuf", NULL },
                [RENDER_TEXT] = { "text", "plain", NULL },
                [RENDER_HTML] = { "text", "html", NULL },
        };
        int r;

        if (format) {
                for (int i = 0; i < _RENDER_MAX; i++)
                        if (streq(format, rendering_names[i]) && (has_view || i <= RENDER_PROTOBUF))
                                return i;
                return RENDER_INVALID;
        }
        r = negotiate(http_request_header(req, "Accept"), offers, has_view ? _RENDER_MAX : RENDER_TEXT);
        return r < 0 ? RENDER_JSON : (enum rendering) r;
}

/* The 400 of a format= the endpoint does not have. */
static void bad_format(struct http_response *resp, const char *format, bool has_view) {
        http_response_error(resp, 400, "parameter 'format': '%s' is not one of %s", format,
                            has_view ? "json, protobuf, text, html" : "json, protobuf");
}

/*
 * What sampled the answers: the collectors that are up, from the /status
 * document's "collectors"; and why SPE does not, when it does not (its reason).
 */
static void source_summary(struct api *a, struct strbuf *out, struct strbuf *no_spe) {
        json_t *st = json_object(), *c;
        size_t i, n = 0;

        if (a->provider.fill_status)
                a->provider.fill_status(a->provider.userdata, st);
        json_array_foreach(json_object_get(st, "collectors"), i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                const char *kind = json_string_value(json_object_get(c, "source"));
                const char *event = json_string_value(json_object_get(c, "event"));
                const char *state = json_string_value(json_object_get(c, "state"));

                /* Off or failed: no SPE source at all (a replay read to its end is "done", and counts). */
                if (name && streq(name, "spe") && state && (streq(state, "off") || streq(state, "failed")))
                        strbuf_puts(no_spe, json_string_value(json_object_get(c, "reason")) ?: state);
                if (!name || !json_is_true(json_object_get(c, "up")) || streq(name, "pmu"))
                        continue;
                strbuf_printf(out, "%s%s", n++ ? ", " : "", name);
                if (kind)
                        strbuf_printf(out, " (%s, period %" JSON_INTEGER_FORMAT ")", kind,
                                      json_integer_value(json_object_get(c, "period")));
                else if (event)
                        strbuf_printf(out, " (%s, %" JSON_INTEGER_FORMAT " Hz)", event,
                                      json_integer_value(json_object_get(c, "frequency_hz")));
        }
        if (n == 0)
                strbuf_puts(out, "none running");
        json_decref(st);
}

/* What a page or a text answer needs besides the JSON document. */
struct view_request {
        int (*build)(const json_t *answer, const struct view_context *ctx, struct view *v);
        bool windowed;                  /* the endpoint takes window= (not /counters) */
        const char *window;             /* as asked; NULL: not given */
        const char *const *keep;        /* the other parameters, for the window selector's links */
};

static void view_body(struct api *a, const struct http_request *req, struct http_response *resp, json_t *o,
                      const struct view_request *vr, enum rendering how) {
        char host[HOST_NAME_MAX + 1] = "";
        struct strbuf source = STRBUF_INIT, no_spe = STRBUF_INIT;
        /* The window shown: as asked, the default when not; none where the endpoint has none. */
        const char *window = vr->windowed ? vr->window ?: "1m" : NULL;
        struct view v = {};
        int k;

        (void) gethostname(host, sizeof(host) - 1);
        source_summary(a, &source, &no_spe);
        k = vr->build(o, &(struct view_context) { host, source.buf, window, no_spe.len ? no_spe.buf : NULL }, &v);
        strbuf_done(&source);
        strbuf_done(&no_spe);
        if (k < 0) {
                view_done(&v);
                http_response_error(resp, 500, "cannot build the view");
                return;
        }
        if (how == RENDER_TEXT) {
                view_render_text(&v, &resp->body);
                resp->content_type = "text/plain; charset=utf-8";
        } else {
                page_render_view(&v, &(struct page_request) { req->path, window,
                                                              vr->keep },
                                 &resp->body);
                resp->content_type = "text/html; charset=utf-8";
                resp->security_policy = PAGE_CSP;
        }
        view_done(&v);
}

/*
 * The answer in the rendering asked for: JSON, the armprofd.v1 message `d`
 * (proto/armprofd.proto), or with a view (vr not NULL) text or a page built
 * from that same JSON document.
 */
static void answer(struct api *a, const struct http_request *req, struct http_response *resp, json_t *o,
                   enum rendering how, const struct view_request *vr, const ProtobufCMessageDescriptor *d,
                   const char *pb_content_type) {
        size_t unknown = 0;

        resp->negotiated = true;
        resp->gzip_ok = true;
        if ((how == RENDER_TEXT || how == RENDER_HTML) && vr) {
                view_body(a, req, resp, o, vr, how);
                return;
        }
        if (how != RENDER_PROTOBUF) {
                json_body(resp, o);
                return;
        }
        if (json_to_pb(o, d, &resp->body, &unknown) < 0) {
                http_response_error(resp, 500, "cannot encode %s", d->name);
                return;
        }
        if (unknown)
                log_debug("api: %zu JSON fields have no %s field", unknown, d->name);
        resp->content_type = pb_content_type;
}

/*
 * The query's parameters, one value per name of `allowed` (NULL-terminated);
 * false after a 400 that names an unknown or repeated parameter.
 */
static bool query_args(const struct http_request *req, struct http_response *resp, const char *const *allowed,
                       const char **ret_values) {
        const char *bad = NULL;
        struct strbuf known = STRBUF_INIT;
        int r = http_request_args(req, allowed, ret_values, &bad);

        if (r >= 0)
                return true;
        for (size_t i = 0; allowed[i]; i++)
                strbuf_printf(&known, "%s%s", i ? ", " : "", allowed[i]);
        if (r == -EEXIST)
                http_response_error(resp, 400, "parameter '%s' given more than once", bad);
        else if (r == -EBADMSG)
                http_response_error(resp, 400, "parameter '%s': a NUL byte in its name or value", bad);
        else
                http_response_error(resp, 400, "unknown parameter '%s' (known: %s)", bad,
                                    known.buf ?: "none");
        strbuf_done(&known);
        return false;
}

static void handle_index(void *userdata, const struct http_request *req, struct http_response *resp) {
        char host[HOST_NAME_MAX + 1] = "";

        (void) gethostname(host, sizeof(host) - 1);
        page_render_index(host, &resp->body);
        resp->content_type = "text/html; charset=utf-8";
        resp->security_policy = PAGE_CSP;
}

/* The pages' stylesheet and script: compiled in, the same for every page. */
static void handle_static(void *userdata, const struct http_request *req, struct http_response *resp) {
        const char *type, *body = page_static(req->path, &type);

        if (!body) {
                http_response_error(resp, 404, "no such file");
                return;
        }
        strbuf_puts(&resp->body, body);
        resp->content_type = type;
        resp->gzip_ok = true;
}

static void handle_healthz(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        bool ok = a->provider.alive ? a->provider.alive(a->provider.userdata) : true;

        resp->content_type = "text/plain; charset=utf-8";
        resp->status = ok ? 200 : 503;
        strbuf_puts(&resp->body, ok ? "ok\n" : "collector loop stalled\n");
}

static void handle_metrics(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        enum prom_format format = negotiate_prom_format(http_request_header(req, "Accept"));
        struct process_thread_stats threads;
        struct process_stats st;

        prom_family(w, "armprofd_build_info", PROM_GAUGE,
                    "A metric with a constant '1' value labeled by the version and git revision of armprofd.");
        prom_sample_u64(w,
                        (const char *const[]) { "version", ARMPROFD_VERSION, "revision",
                                                ARMPROFD_REVISION, NULL },
                        1);
        if (process_stats_read("/proc", &st) == 0)
                process_stats_write(&st, w);
        if (process_threads_read(a->threads, "/proc", &threads) == 0)
                process_threads_write(&threads, w);
        if (req->server)
                http_server_write_metrics(req->server, w);
        if (a->provider.write_metrics)
                a->provider.write_metrics(a->provider.userdata, w);

        prom_render(w, format, &resp->body);
        resp->content_type = prom_format_content_type(format);
        resp->negotiated = true;
        resp->gzip_ok = true;
}

/*
 * How the answers' times are made: "unix" times are the store's clock plus
 * offset_ns (live: CLOCK_REALTIME - CLOCK_MONOTONIC, taken once at start),
 * "perf" times a replay's own; frozen: a replay, whose time ends with it.
 */
static void status_clock(struct api *a, json_t *o) {
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap =
                a->provider.snapshot ? a->provider.snapshot(a->provider.userdata) : NULL;
        const struct store_clock *c;

        if (!snap)
                return;
        c = store_snapshot_clock(snap);
        json_object_set_new(o, "clock", json_pack("{s:s, s:I, s:b}", "kind", c->kind == STORE_CLOCK_UNIX ? "unix" : "perf",
                                                  "offset_ns", (json_int_t) c->unix_offset_ns, "frozen", c->frozen));
}

static void handle_status(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        char started[AGG_RFC3339_MAX] = "";
        json_t *o;

        (void) agg_rfc3339((int64_t) a->started_wall.tv_sec * (int64_t) NSEC_PER_SEC + a->started_wall.tv_nsec,
                           started, sizeof(started));
        /* Uptime to the millisecond: more digits would be noise. */
        o = json_pack("{s:s, s:s, s:s, s:I, s:f}",
                      "version", ARMPROFD_VERSION,
                      "revision", ARMPROFD_REVISION,
                      "started", started,
                      "started_at", (json_int_t) a->started_wall.tv_sec,
                      "uptime_seconds", (double) (int64_t) (uptime_seconds(a) * 1e3) / 1e3);
        if (!o) {
                http_response_error(resp, 500, "cannot build status");
                return;
        }
        if (req->server)
                json_object_set_new(o, "listen", json_string(http_server_address(req->server)));
        status_clock(a, o);
        if (a->provider.fill_status)
                a->provider.fill_status(a->provider.userdata, o);
        if (!json_object_get(o, "collectors"))
                json_object_set_new(o, "collectors", json_array());
        answer(a, req, resp, o, rendering_of(req, NULL, false), NULL, &armprofd__v1__status__descriptor,
               "application/x-protobuf; proto=armprofd.v1.Status");
        json_decref(o);
}

/*
 * The 404 of /counters?cpu=N for a CPU the snapshot has no counts of (not
 * online, not counted, out of range): it names the CPUs that are, as the
 * kernel writes CPU lists (cpulist.h), so the caller sees what to ask.
 */
static void cpu_not_counted(struct api *a, struct http_response *resp, uint32_t cpu) {
        json_t *all = a->provider.counters_json(a->provider.userdata, -1), *c;
        char list[CPULIST_TEXT_MAX];
        struct cpulist counted;
        size_t i;

        cpulist_clear(&counted);
        json_array_foreach(json_object_get(all, "cpus"), i, c) {
                json_int_t n = json_integer_value(json_object_get(c, "cpu"));

                if (n >= 0 && n < (json_int_t) CPULIST_MAX_CPUS)
                        (void) cpulist_add(&counted, (unsigned) n);
        }
        if (cpulist_count(&counted) == 0)
                http_response_error(resp, 404, "CPU %" PRIu32 " is not counted: no CPU is (counting %s)", cpu,
                                    json_string_value(json_object_get(all, "state")) ?: "is off");
        else if (cpulist_format(&counted, list, sizeof(list)) == 0)
                http_response_error(resp, 404, "CPU %" PRIu32 " is not counted; the counted CPUs are %s", cpu, list);
        else
                http_response_error(resp, 404, "CPU %" PRIu32 " is not counted", cpu);
        json_decref(all);
}

static void handle_counters(void *userdata, const struct http_request *req, struct http_response *resp) {
        enum { ARG_CPU, ARG_FORMAT, _ARG_MAX };
        static const char *const allowed[] = { [ARG_CPU] = "cpu", [ARG_FORMAT] = "format", [_ARG_MAX] = NULL };
        struct api *a = userdata;
        const char *args[_ARG_MAX] = {};
        enum rendering how;
        uint32_t cpu;
        json_t *o;

        if (!query_args(req, resp, allowed, args))
                return;
        if (args[ARG_CPU] && safe_atou32(args[ARG_CPU], &cpu) < 0) {
                http_response_error(resp, 400, "parameter 'cpu': '%s' is not a CPU number", args[ARG_CPU]);
                return;
        }
        how = rendering_of(req, args[ARG_FORMAT], true);
        if (how == RENDER_INVALID) {
                bad_format(resp, args[ARG_FORMAT], true);
                return;
        }
        o = a->provider.counters_json ?
                a->provider.counters_json(a->provider.userdata, args[ARG_CPU] ? (int64_t) cpu : -1) : NULL;

        if (!o) {
                http_response_error(resp, 503, "no counting data");
                return;
        }
        if (args[ARG_CPU] && json_array_size(json_object_get(o, "cpus")) == 0) {
                json_decref(o);
                cpu_not_counted(a, resp, cpu);
                return;
        }
        answer(a, req, resp, o, how,
               &(struct view_request) { view_counters, false, NULL,
                                        args[ARG_CPU] ? (const char *const[]) { "cpu", args[ARG_CPU], NULL } : NULL },
               &armprofd__v1__counters__descriptor, "application/x-protobuf; proto=armprofd.v1.Counters");
        json_decref(o);
}

#define DEFAULT_WINDOW_NS (60 * NSEC_PER_SEC)
#define HOTPCS_DEFAULT_LIMIT 50
#define HOTPCS_MAX_LIMIT 1000
#define HOTLINES_DEFAULT_LIMIT 20
#define HOTLINES_MAX_LIMIT 500

struct query {
        uint64_t window_ns;
        size_t limit;
        uint32_t pid;
        bool all;                       /* /hotlines?all=1: lines without peer snoops too */
        const char *cgroup;             /* cgroup=PREFIX: processes whose cgroup path starts with it; NULL all */
        const char *window;             /* as given; NULL when not */
        enum rendering how;
        /* limit, pid, cgroup and all as given: name/value pairs, NULL-terminated (a page's links keep them). */
        const char *keep[2 * 4 + 1];
};

/*
 * window=10s|1m|10m|SECONDS|all, limit=1..max, pid=N, on /hotlines
 * all=0|1, and format=json|protobuf|text|html where the endpoint has a
 * view. Anything else, or a bad value, is a 400 that names the parameter.
 */
static bool parse_query(const struct http_request *req, struct http_response *resp, size_t default_limit,
                        size_t max_limit, bool takes_all, bool has_view, struct query *ret) {
        enum { ARG_WINDOW, ARG_FORMAT, ARG_LIMIT, ARG_PID, ARG_CGROUP, ARG_ALL, _ARG_MAX };
        static const char *const names[_ARG_MAX + 1] = {
                [ARG_WINDOW] = "window", [ARG_FORMAT] = "format", [ARG_LIMIT] = "limit",
                [ARG_PID] = "pid",       [ARG_CGROUP] = "cgroup", [ARG_ALL] = "all",
                [_ARG_MAX] = NULL,
        };
        static const char *const window_only[] = { [ARG_WINDOW] = "window", NULL };
        static const char *const window_format[] = { [ARG_WINDOW] = "window", [ARG_FORMAT] = "format", NULL };
        static const char *const with_limit[] = { [ARG_WINDOW] = "window", [ARG_FORMAT] = "format",
                                                  [ARG_LIMIT] = "limit",   [ARG_PID] = "pid",
                                                  [ARG_CGROUP] = "cgroup", NULL };
        /* An endpoint without a limit (max_limit 0) is not per process either: /latency, /debug/pprof/spe. */
        const char *const *known = takes_all ? names : max_limit ? with_limit : has_view ? window_format : window_only;
        const char *args[_ARG_MAX] = {}, *v;
        struct query q = { DEFAULT_WINDOW_NS, default_limit, STORE_PID_ANY, false, NULL };
        size_t nkeep = 0;
        uint32_t u;

        if (!query_args(req, resp, known, args))
                return false;
        v = args[ARG_WINDOW];
        if (v && store_window_parse(v, &q.window_ns) < 0) {
                http_response_error(resp, 400, "parameter 'window': invalid window '%s' (e.g. 10s, 1m, 10m, 600, all)", v);
                return false;
        }
        q.window = v;
        q.how = rendering_of(req, args[ARG_FORMAT], has_view);
        if (q.how == RENDER_INVALID) {
                bad_format(resp, args[ARG_FORMAT], has_view);
                return false;
        }
        v = args[ARG_LIMIT];
        if (v && (safe_atou32(v, &u) < 0 || u < 1 || u > max_limit)) {
                http_response_error(resp, 400, "parameter 'limit': '%s' is not a number in 1..%zu", v, max_limit);
                return false;
        }
        if (v)
                q.limit = u;
        v = args[ARG_PID];
        if (v && (safe_atou32(v, &u) < 0 || u == STORE_PID_ANY)) {
                http_response_error(resp, 400, "parameter 'pid': '%s' is not a process id", v);
                return false;
        }
        if (v)
                q.pid = u;
        v = args[ARG_ALL];
        if (v && !streq(v, "0") && !streq(v, "1")) {
                http_response_error(resp, 400, "parameter 'all': '%s' is not 0 or 1", v);
                return false;
        }
        q.all = v && streq(v, "1");
        v = args[ARG_CGROUP];
        if (v && v[0] != '/') {
                http_response_error(resp, 400, "parameter 'cgroup': '%s' is not a cgroup path (e.g. /system.slice/)", v);
                return false;
        }
        q.cgroup = v;
        for (int i = ARG_LIMIT; i < _ARG_MAX; i++)
                if (args[i]) {
                        q.keep[nkeep++] = names[i];
                        q.keep[nkeep++] = args[i];
                }
        q.keep[nkeep] = NULL;
        *ret = q;
        return true;
}

/* One aggregate endpoint: its limits, its query, its protobuf message. */
struct aggregate_endpoint {
        size_t default_limit, max_limit; /* max_limit 0: the endpoint takes neither limit nor pid */
        bool takes_all;                  /* all=0|1 (/hotlines) */
        /* Header fields a filter does not apply to: of every process (NULL-terminated; NULL: no filter taken). */
        const char *const *host_wide;
        json_t *(*query)(const struct store_snapshot *snap, const struct query *q, const struct agg_symbolizer *sym);
        const ProtobufCMessageDescriptor *pb;
        const char *pb_content_type;
        int (*view)(const json_t *answer, const struct view_context *ctx, struct view *v);
};

static json_t *query_hotpcs(const struct store_snapshot *snap, const struct query *q,
                            const struct agg_symbolizer *sym) {
        struct store_hotpcs_result res;
        struct agg_pc_rows rows;
        json_t *o;

        /*
         * Every merged entry is looked at: a row sums all the PCs of its
         * command and function (agg_hotpcs_rows()), a small service on a
         * busy host is found below the top N when filtered by cgroup, and
         * the limit applies to the rows. `samples` stays the window's.
         */
        if (store_query_hotpcs(snap, q->window_ns, SIZE_MAX, q->pid, &res) < 0)
                return NULL;
        agg_hotpcs_rows(&res.pcs, sym, q->cgroup, q->limit, &rows);
        o = agg_hotpcs_json(&res, &rows, sym);
        agg_pc_rows_done(&rows);
        store_hotpcs_result_done(&res);
        return o;
}

/*
 * Lines an access of a process in the cgroup touched: a line keyed by
 * virtual address is its process's; one keyed by physical address is kept
 * when any of its entries is in the cgroup (its other processes' entries
 * stay: they are who it bounced with). m holds every line of the window
 * (HOTLINES_ALL_LINES), ranked peer snoops first: lines_seen and
 * lines_with_peer_snoops become the cgroup's, as they are pid='s, and the
 * list is then cut to the lines with peer snoops unless all, and to limit.
 */
static void filter_lines(struct hotlines_merged *m, const struct agg_symbolizer *sym, const char *prefix, bool all,
                         size_t limit) {
        size_t n = 0, npeer = 0;

        for (size_t i = 0; i < m->n; i++) {
                struct hotlines_result *l = &m->line[i];
                bool keep = !l->l.by_pa && agg_pid_in_cgroup(sym, l->l.pid, prefix);

                for (size_t j = 0; !keep && l->l.by_pa && j < l->noffs; j++)
                        keep = agg_pid_in_cgroup(sym, l->off[j].pid, prefix);
                if (keep) {
                        struct hotlines_result t = m->line[n];

                        npeer += l->l.peer_local + l->l.peer_remote > 0;
                        /* Swapped, not copied: every line's entries are still freed by hotlines_merged_done(). */
                        m->line[n++] = *l;
                        *l = t;
                }
        }
        m->nlines = n;
        m->npeer = npeer;
        n = MIN(all ? n : npeer, limit);
        for (size_t i = n; i < m->n; i++) {
                free(m->line[i].off);
                m->line[i].off = NULL;
                m->line[i].noffs = 0;
        }
        m->n = n;
}

static json_t *query_hotlines(const struct store_snapshot *snap, const struct query *q,
                              const struct agg_symbolizer *sym) {
        struct store_hotlines_result res;
        json_t *o;

        /* Under cgroup=, every line: the counts of lines are then the cgroup's (filter_lines()). */
        if (store_query_hotlines(snap, q->window_ns, q->cgroup ? SIZE_MAX : q->limit, q->pid,
                                 q->all || q->cgroup ? HOTLINES_ALL_LINES : HOTLINES_PEER_LINES, &res) < 0)
                return NULL;
        if (q->cgroup)
                filter_lines(&res.lines, sym, q->cgroup, q->all, q->limit);
        o = agg_hotlines_json(&res, sym);
        store_hotlines_result_done(&res);
        return o;
}

static json_t *query_latency(const struct store_snapshot *snap, const struct query *q,
                             const struct agg_symbolizer *sym) {
        struct store_latency_result res;
        json_t *o;

        if (store_query_latency(snap, q->window_ns, &res) < 0)
                return NULL;
        o = agg_latency_json(&res);
        store_latency_result_done(&res);
        return o;
}

/*
 * What a pid= or cgroup= filter applied to: the rows (and, on /hotlines,
 * the counts of lines) are of the processes it keeps; the header fields in
 * host_wide are the window's over every process, the base of the
 * percentages, as perf report's default --percentage absolute keeps them.
 */
static json_t *filter_json(const struct query *q, const char *const *host_wide) {
        json_t *f = json_object(), *hw = json_array();

        if (q->pid != STORE_PID_ANY)
                json_object_set_new(f, "pid", json_integer(q->pid));
        if (q->cgroup)
                json_object_set_new(f, "cgroup", json_string(q->cgroup));
        for (size_t i = 0; host_wide[i]; i++)
                json_array_append_new(hw, json_string(host_wide[i]));
        json_object_set_new(f, "host_wide", hw);
        return f;
}

static void handle_aggregate(struct api *a, const struct http_request *req, struct http_response *resp,
                             const struct aggregate_endpoint *e) {
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        struct query q;
        json_t *o;

        if (!parse_query(req, resp, e->default_limit, e->max_limit, e->takes_all, true, &q))
                return;
        snap = a->provider.snapshot ? a->provider.snapshot(a->provider.userdata) : NULL;
        if (!snap) {
                http_response_error(resp, 503, "no aggregates yet");
                return;
        }
        o = e->query(snap, &q,
                     a->provider.symbol ? &(struct agg_symbolizer) { a->provider.userdata, a->provider.symbol,
                                                                     a->provider.object, a->provider.node,
                                                                     a->provider.cgroup, a->provider.region,
                                                                     a->provider.privacy,
                                                                     a->provider.source,
                                                                     a->provider.data_symbol } : NULL);
        if (!o) {
                http_response_error(resp, 500, "query failed");
                return;
        }
        if (e->host_wide && (q.pid != STORE_PID_ANY || q.cgroup))
                json_object_set_new(o, "filter", filter_json(&q, e->host_wide));
        /* The query ran once; every rendering is of its one document. */
        answer(a, req, resp, o, q.how, &(struct view_request) { e->view, true, q.window, q.keep }, e->pb,
               e->pb_content_type);
        json_decref(o);
}

static void handle_hotpcs(void *userdata, const struct http_request *req, struct http_response *resp) {
        static const char *const host_wide[] = { "samples", "capacity", "error_bound", "evictions", NULL };
        static const struct aggregate_endpoint e = {
                HOTPCS_DEFAULT_LIMIT, HOTPCS_MAX_LIMIT, false, host_wide, query_hotpcs,
                &armprofd__v1__hot_pcs__descriptor, "application/x-protobuf; proto=armprofd.v1.HotPcs", view_hotpcs,
        };
        handle_aggregate(userdata, req, resp, &e);
}

static void handle_hotlines(void *userdata, const struct http_request *req, struct http_response *resp) {
        static const char *const host_wide[] = { "records", "peer_snoops", "evictions", "offset_evictions", NULL };
        static const struct aggregate_endpoint e = {
                HOTLINES_DEFAULT_LIMIT, HOTLINES_MAX_LIMIT, true, host_wide, query_hotlines,
                &armprofd__v1__hot_lines__descriptor, "application/x-protobuf; proto=armprofd.v1.HotLines",
                view_hotlines,
        };
        handle_aggregate(userdata, req, resp, &e);
}

static void handle_latency(void *userdata, const struct http_request *req, struct http_response *resp) {
        static const struct aggregate_endpoint e = {
                0, 0, false, NULL, query_latency, &armprofd__v1__latency__descriptor,
                "application/x-protobuf; proto=armprofd.v1.Latency", view_latency,
        };
        handle_aggregate(userdata, req, resp, &e);
}

#define PPROF_DEFAULT_SECONDS 30 /* what go tool pprof asks for by default */
#define PPROF_MAX_SECONDS 120

static void pprof_body(struct api *a, struct http_response *resp, uint64_t window_ns) {
        int k = a->provider.pprof ? a->provider.pprof(a->provider.userdata, window_ns, &resp->body) : -EOPNOTSUPP;

        if (k < 0) {
                http_response_error(resp, 500, "cannot build the profile: %s", strerror(-k));
                return;
        }
        /* As Go's net/http/pprof serves it: gzip-compressed profile.proto. */
        resp->content_type = "application/octet-stream";
}

/* /debug/pprof/spe?window=1m: the aggregated samples of the window, at once. */
static void handle_pprof_spe(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct query q;

        if (parse_query(req, resp, 0, 0, false, false, &q))
                pprof_body(userdata, resp, q.window_ns);
}

/* Slack after an epoch boundary for the collector thread to close the epoch. */
#define PPROF_CLOSE_SLACK_NS (50 * NSEC_PER_USEC * USEC_PER_MSEC)
/* How often a span whose end was asked to close an epoch looks again for it. */
#define PPROF_RECHECK_USEC (50 * USEC_PER_MSEC)

struct profile_wait {
        uint32_t seconds;
        bool span;                      /* live: the epochs overlapping [start_ns, end_ns) */
        bool end_requested;             /* an epoch ends with the span (provider.epoch_end_at) */
        uint64_t start_ns, end_ns;      /* the store's clock */
        uint64_t give_up_ns;
};

/* How long until the epoch holding `end_ns` has closed: epochs end every epoch_ns after the newest end. */
static uint64_t until_closed_usec(const struct store_snapshot *snap, uint64_t end_ns, uint64_t now_ns) {
        uint64_t last = store_snapshot_end_ns(snap), ep = store_snapshot_epoch_ns(snap) ?: NSEC_PER_SEC, at;

        if (last == 0 || last > end_ns)
                at = end_ns + ep; /* no epoch closed yet: at most one length after */
        else
                at = last + (end_ns - last + ep - 1) / ep * ep;
        at += PPROF_CLOSE_SLACK_NS;
        return at > now_ns ? (at - now_ns + NSEC_PER_USEC - 1) / NSEC_PER_USEC : 1;
}

static void pprof_span_body(struct api *a, struct http_response *resp, const struct profile_wait *w) {
        int k = a->provider.pprof_span(a->provider.userdata, w->start_ns, w->end_ns, &resp->body);

        if (k < 0) {
                http_response_error(resp, 500, "cannot build the profile: %s", strerror(-k));
                return;
        }
        resp->content_type = "application/octet-stream";
}

/*
 * /debug/pprof/profile?seconds=N: the N seconds from the request on. The
 * connection is suspended (no thread waits) until the epoch that holds the
 * span's end has closed; the profile is then built from the epochs that
 * overlap the span, and its time_nanos/duration_nanos say what they cover
 * (whole epochs: up to one epoch before the request and after its end).
 * A replay's time stands still at the file's end: it answers after N
 * seconds with the file's last N seconds, as /debug/pprof/spe?window=N would.
 */
static void handle_pprof_profile(void *userdata, const struct http_request *req, struct http_response *resp) {
        static const char *const allowed[] = { "seconds", NULL };
        struct api *a = userdata;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = NULL;
        struct profile_wait *w = *req->state;
        const char *v;
        uint32_t n = PPROF_DEFAULT_SECONDS;
        uint64_t now;

        if (w && !w->span) {
                pprof_body(a, resp, (uint64_t) w->seconds * NSEC_PER_SEC);
                return;
        }
        if (w) {
                snap = a->provider.snapshot(a->provider.userdata);
                now = a->provider.now_ns(a->provider.userdata);
                if (snap && store_snapshot_end_ns(snap) < w->end_ns && now < w->give_up_ns)
                        /*
                         * An epoch end asked for is near (or the regular one it was
                         * left to): look again shortly, epochs may be off the grid.
                         */
                        resp->defer_usec = w->end_requested ? PPROF_RECHECK_USEC
                                                            : until_closed_usec(snap, w->end_ns, now);
                else
                        pprof_span_body(a, resp, w);
                return;
        }
        if (!query_args(req, resp, allowed, &v))
                return;
        if (v && (safe_atou32(v, &n) < 0 || n < 1 || n > PPROF_MAX_SECONDS)) {
                http_response_error(resp, 400, "parameter 'seconds': '%s' is not a number in 1..%d", v,
                                    PPROF_MAX_SECONDS);
                return;
        }
        w = xcalloc(1, sizeof(*w));
        w->seconds = n;
        *req->state = w;
        snap = a->provider.snapshot ? a->provider.snapshot(a->provider.userdata) : NULL;
        if (!snap || !a->provider.pprof_span || !a->provider.now_ns || store_snapshot_clock(snap)->frozen) {
                resp->defer_usec = n * USEC_PER_SEC;
                return;
        }
        now = a->provider.now_ns(a->provider.userdata);
        w->span = true;
        w->start_ns = now;
        w->end_ns = now + n * NSEC_PER_SEC;
        /* A stalled collector must not hold the request forever: answer with what is there. */
        w->give_up_ns = w->end_ns + 2 * store_snapshot_epoch_ns(snap) + NSEC_PER_SEC;
        /* An epoch that ends with the span: the answer comes N seconds on, as Go's does. */
        w->end_requested = a->provider.epoch_end_at && a->provider.epoch_end_at(a->provider.userdata, w->end_ns);
        if (w->end_requested)
                resp->defer_usec = (w->end_ns - now + PPROF_CLOSE_SLACK_NS) / NSEC_PER_USEC;
        else
                resp->defer_usec = until_closed_usec(snap, w->end_ns, now);
}

/*
 * /debug/pprof/symbol, as Go's net/http/pprof answers it (symbolz.h): the
 * addresses a POST's body or a GET's query holds, each named when one file
 * maps it (api_provider.bare_symbols). A GET without any says
 * "num_symbols: 1" alone, the answer pprof asks for first.
 */
static void handle_pprof_symbol(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        struct symbolz_query q = {};
        int k;

        if (req->body)
                k = symbolz_parse(req->body, req->body_len, &q);
        else {
                struct strbuf query = STRBUF_INIT;

                http_request_query_text(req, &query);
                k = symbolz_parse(query.buf ?: "", query.len, &q);
                strbuf_done(&query);
        }
        if (k < 0) {
                http_response_error(resp, 413, "at most %u bytes of addresses", SYMBOLZ_BODY_MAX);
                return;
        }
        symbolz_answer(&q, a->provider.bare_symbols, a->provider.userdata, &resp->body);
        symbolz_query_done(&q);
        resp->content_type = "text/plain; charset=utf-8";
}

static const struct http_route routes[] = {
        { "/", "index", handle_index },
        { "/healthz", "healthz", handle_healthz },
        { "/metrics", "metrics", handle_metrics },
        { "/status", "status", handle_status },
        { PAGE_STYLE_PATH, "static", handle_static },
        { PAGE_SCRIPT_PATH, "static", handle_static },
        { PAGE_ICON_PATH, "static", handle_static },
        /* Per-process detail: loopback clients only unless [http] detail = any. */
        { "/counters", "counters", handle_counters, .detail = true },
        { "/hotpcs", "hotpcs", handle_hotpcs, .detail = true },
        { "/hotlines", "hotlines", handle_hotlines, .detail = true },
        { "/latency", "latency", handle_latency, .detail = true },
        { "/debug/pprof/profile", "pprof", handle_pprof_profile, .detail = true },
        { "/debug/pprof/spe", "pprof", handle_pprof_spe, .detail = true },
        { "/debug/pprof/symbol", "pprof_symbol", handle_pprof_symbol, .detail = true, .max_body = SYMBOLZ_BODY_MAX },
};

const struct http_route *api_routes(size_t *ret_n) {
        *ret_n = ELEMENTSOF(routes);
        return routes;
}
