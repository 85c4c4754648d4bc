/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "api.h"

#include <time.h>

#include "build-config.h"
#include "log.h"
#include "process-metrics.h"

struct api {
        struct exporter_source src;
        struct http_server *server;
        struct timespec started_mono;
        time_t started_wall;
};

struct api *api_new(const struct exporter_source *src) {
        struct api *a = xcalloc(1, sizeof(*a));

        a->src = *src;
        clock_gettime(CLOCK_MONOTONIC, &a->started_mono);
        a->started_wall = time(NULL);
        return a;
}

struct api *api_free(struct api *a) {
        free(a);
        return NULL;
}

void api_set_server(struct api *a, struct http_server *s) {
        a->server = s;
}

static double uptime_seconds(const struct api *a) {
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double) (now.tv_sec - a->started_mono.tv_sec) +
               (double) (now.tv_nsec - a->started_mono.tv_nsec) / 1e9;
}

static void json_body(struct http_response *resp, json_t *o) {
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17));

        if (!s) {
                http_response_error(resp, 500, "cannot encode JSON");
                return;
        }
        resp->content_type = "application/json";
        strbuf_puts(&resp->body, s);
        strbuf_putc(&resp->body, '\n');
        free(s);
}

static void handle_index(void *userdata, const struct http_request *req, struct http_response *resp) {
        static const struct {
                const char *path, *what;
        } links[] = {
                { "/metrics", "Prometheus metrics (text 0.0.4, OpenMetrics, protobuf by Accept)" },
                { "/counters", "per-CPU PMU counters, rates and ratios, and a host aggregate (JSON)" },
                { "/status", "collectors, availability, versions, configuration (JSON)" },
                { "/healthz", "liveness of the collector loop" },
        };

        resp->content_type = "text/html; charset=utf-8";
        strbuf_printf(&resp->body,
                      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                      "<title>armprofd</title></head>\n<body>\n<h1>armprofd %s</h1>\n"
                      "<p>Always-on hardware profiler.</p>\n<ul>\n",
                      ARMPROFD_VERSION);
        for (size_t i = 0; i < ELEMENTSOF(links); i++)
                strbuf_printf(&resp->body, "<li><a href=\"%s\">%s</a>: %s</li>\n", links[i].path,
                              links[i].path, links[i].what);
        strbuf_puts(&resp->body, "</ul>\n</body></html>\n");
}

static void handle_healthz(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        bool ok = a->src.alive ? a->src.alive(a->src.userdata) : true;

        resp->content_type = "text/plain; charset=utf-8";
        resp->status = ok ? 200 : 503;
        strbuf_puts(&resp->body, ok ? "ok\n" : "collector loop stalled\n");
}

static void handle_metrics(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        enum prom_format format = negotiate_prom_format(http_request_header(req, "Accept"));
        struct process_stats st;

        prom_family(w, "armprofd_build_info", PROM_GAUGE,
                    "A metric with a constant '1' value labeled by the version and git revision of armprofd.");
        prom_sample_u64(w,
                        (const char *const[]) { "version", ARMPROFD_VERSION, "revision",
                                                ARMPROFD_REVISION, NULL },
                        1);
        if (process_stats_read("/proc", &st) == 0)
                process_stats_write(&st, w);
        if (a->server)
                http_server_write_metrics(a->server, w);
        if (a->src.write_metrics)
                a->src.write_metrics(a->src.userdata, w);

        prom_render(w, format, &resp->body);
        resp->content_type = prom_format_content_type(format);
        resp->negotiated = true;
        resp->gzip_ok = true;
}

static void handle_status(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        json_t *o;

        o = json_pack("{s:s, s:s, s:I, s:f}",
                      "version", ARMPROFD_VERSION,
                      "revision", ARMPROFD_REVISION,
                      "started_at", (json_int_t) a->started_wall,
                      "uptime_seconds", uptime_seconds(a));
        if (!o) {
                http_response_error(resp, 500, "cannot build status");
                return;
        }
        if (a->server)
                json_object_set_new(o, "listen", json_string(http_server_address(a->server)));
        if (a->src.fill_status)
                a->src.fill_status(a->src.userdata, o);
        if (!json_object_get(o, "collectors"))
                json_object_set_new(o, "collectors", json_array());
        json_body(resp, o);
        json_decref(o);
}

static void handle_counters(void *userdata, const struct http_request *req, struct http_response *resp) {
        struct api *a = userdata;
        json_t *o = a->src.counters_json ? a->src.counters_json(a->src.userdata) : NULL;

        if (!o) {
                http_response_error(resp, 503, "no counting data");
                return;
        }
        json_body(resp, o);
        resp->gzip_ok = true;
        json_decref(o);
}

static const struct http_route routes[] = {
        { "/", "index", handle_index },
        { "/healthz", "healthz", handle_healthz },
        { "/metrics", "metrics", handle_metrics },
        { "/status", "status", handle_status },
        { "/counters", "counters", handle_counters },
};

const struct http_route *api_routes(size_t *ret_n) {
        *ret_n = ELEMENTSOF(routes);
        return routes;
}
