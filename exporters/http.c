/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>
#include <zlib.h>

#include "log.h"
#include "macro.h"
#include "negotiate.h"
#include "prom.h"

#define JSON_CONTENT_TYPE "application/json"
#define HTTP_LISTEN_BACKLOG 64
/* Distinct (handler, code) pairs we keep counts for; routes x a few codes. */
#define HTTP_MAX_COUNTERS 128
/* Names a route may accept in its query string. */
#define HTTP_MAX_ARGS 8

struct http_counter {
        const char *handler;
        unsigned code;
        uint64_t count;
};

/* Per-request context (MHD's *con_cls). */
struct conn_ctx {
        void *state; /* the handler's, across deferrals */
};

/* A suspended connection and when to resume it. */
struct deferral {
        struct MHD_Connection *connection;
        uint64_t due_usec;
};

struct http_server {
        struct MHD_Daemon *mhd;
        int listen_fd;
        const struct http_route *routes;
        size_t n_routes;
        void *userdata;
        char address[80];

        pthread_mutex_t lock; /* guards counters and deferrals */
        struct http_counter counters[HTTP_MAX_COUNTERS];
        size_t n_counters;

        /* Resumes suspended connections when they are due; at most one per connection. */
        pthread_t resumer;
        bool resumer_started, stopping;
        pthread_cond_t wake;
        struct deferral *deferrals;
        size_t n_deferrals, max_deferrals;
};

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static void *resumer_main(void *userdata) {
        struct http_server *s = userdata;
        struct MHD_Connection **due = xcalloc(s->max_deferrals + 1, sizeof(*due));
        bool stopping = false;

        while (!stopping) {
                uint64_t now = mono_usec(), next = UINT64_MAX;
                size_t n_due = 0;

                pthread_mutex_lock(&s->lock);
                for (size_t i = 0; i < s->n_deferrals;) {
                        if (s->stopping || s->deferrals[i].due_usec <= now) {
                                due[n_due++] = s->deferrals[i].connection;
                                s->deferrals[i] = s->deferrals[--s->n_deferrals];
                                continue;
                        }
                        next = MIN(next, s->deferrals[i].due_usec);
                        i++;
                }
                stopping = s->stopping;
                if (n_due == 0 && !stopping) {
                        if (next == UINT64_MAX)
                                pthread_cond_wait(&s->wake, &s->lock);
                        else {
                                /* The condition variable runs on CLOCK_MONOTONIC (set at init). */
                                struct timespec ts = {
                                        .tv_sec = (time_t) (next / USEC_PER_SEC),
                                        .tv_nsec = (long) (next % USEC_PER_SEC) * 1000,
                                };

                                pthread_cond_timedwait(&s->wake, &s->lock, &ts);
                        }
                }
                pthread_mutex_unlock(&s->lock);

                /* Outside our lock: MHD takes its own, and its thread may be in defer(). */
                for (size_t i = 0; i < n_due; i++)
                        MHD_resume_connection(due[i]);
        }
        free(due);
        return NULL;
}

static bool defer(struct http_server *s, struct MHD_Connection *c, uint64_t usec) {
        bool ok = false;

        pthread_mutex_lock(&s->lock);
        if (!s->stopping && s->n_deferrals < s->max_deferrals) {
                MHD_suspend_connection(c);
                s->deferrals[s->n_deferrals++] = (struct deferral) { c, mono_usec() + MIN(usec, HTTP_MAX_DEFER_USEC) };
                pthread_cond_signal(&s->wake);
                ok = true;
        }
        pthread_mutex_unlock(&s->lock);
        return ok;
}

static void request_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                              enum MHD_RequestTerminationCode toe) {
        struct conn_ctx *ctx = *con_cls;

        if (!ctx)
                return;
        free(ctx->state);
        free(ctx);
        *con_cls = NULL;
}

const char *http_request_header(const struct http_request *req, const char *name) {
        return MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, name);
}

static bool isempty(const char *s) {
        return !s || !*s;
}

struct arg_check {
        const char *const *allowed;
        const char **values;
        const char *bad;
        int error;
};

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        struct arg_check *c = cls;

        /* "?&&" gives empty names without values: nothing was asked. */
        if (isempty(key) && isempty(value))
                return MHD_YES;
        for (size_t i = 0; c->allowed[i]; i++)
                if (streq(c->allowed[i], key)) {
                        if (c->values[i]) {
                                /* Which of two values was meant is not ours to guess. */
                                c->bad = key;
                                c->error = -EEXIST;
                                return MHD_NO; /* stop iterating */
                        }
                        c->values[i] = value ?: "";
                        return MHD_YES;
                }
        c->bad = key;
        c->error = -ENOENT;
        return MHD_NO;
}

int http_request_args(const struct http_request *req, const char *const *allowed, const char **ret_values,
                      const char **ret_bad) {
        const char *values[HTTP_MAX_ARGS] = {};
        struct arg_check c = { .allowed = allowed, .values = values };
        size_t n = 0;

        while (allowed[n])
                n++;
        /* A route's own table: more names than this is a programming error. */
        if (n > HTTP_MAX_ARGS)
                abort();
        MHD_get_connection_values(req->connection, MHD_GET_ARGUMENT_KIND, check_arg, &c);
        if (c.error < 0) {
                *ret_bad = c.bad;
                return c.error;
        }
        memcpy(ret_values, values, n * sizeof(*values));
        return 0;
}

void http_response_error(struct http_response *resp, unsigned status, const char *fmt, ...) {
        char msg[512];
        json_t *o;
        char *s;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        strbuf_done(&resp->body);
        resp->status = status;
        resp->content_type = JSON_CONTENT_TYPE;
        o = json_pack("{s:s, s:i}", "error", msg, "status", (int) status);
        s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        strbuf_puts(&resp->body, s ? s : "{\"error\":\"internal error\"}");
        strbuf_putc(&resp->body, '\n');
        free(s);
        json_decref(o);
}

static void count_request(struct http_server *s, const char *handler, unsigned code) {
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_counters; i++)
                if (s->counters[i].handler == handler && s->counters[i].code == code) {
                        s->counters[i].count++;
                        goto out;
                }
        if (s->n_counters < HTTP_MAX_COUNTERS)
                s->counters[s->n_counters++] = (struct http_counter) { handler, code, 1 };
out:
        pthread_mutex_unlock(&s->lock);
}

void http_server_write_metrics(struct http_server *s, struct prom_writer *w) {
        prom_family(w, "armprofd_http_requests_total", PROM_COUNTER,
                    "HTTP requests served, by handler and status code.");
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_counters; i++) {
                char code[16];

                snprintf(code, sizeof(code), "%u", s->counters[i].code);
                prom_sample_u64(w,
                                (const char *const[]) { "handler", s->counters[i].handler,
                                                        "code", code, NULL },
                                s->counters[i].count);
        }
        pthread_mutex_unlock(&s->lock);
}

static const struct http_route *find_route(const struct http_server *s, const char *path) {
        for (size_t i = 0; i < s->n_routes; i++)
                if (streq(s->routes[i].path, path))
                        return &s->routes[i];
        return NULL;
}

/* gzip (RFC 1952) framing for deflate: windowBits 15 + 16 (zlib.h). */
#define GZIP_WINDOW_BITS (15 + 16)
#define GZIP_MEM_LEVEL 8
/* Below this, compression costs more than it saves. */
#define GZIP_MIN_BYTES 1024

static int gzip_buffer(const struct strbuf *in, struct strbuf *out) {
        z_stream z = {};
        int r;

        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW_BITS, GZIP_MEM_LEVEL,
                         Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        strbuf_reserve(out, deflateBound(&z, in->len));
        z.next_in = (Bytef *) in->buf;
        z.avail_in = (uInt) in->len;
        z.next_out = (Bytef *) out->buf + out->len;
        z.avail_out = (uInt) (out->cap - out->len - 1);
        r = deflate(&z, Z_FINISH);
        if (r == Z_STREAM_END)
                out->len += z.total_out;
        deflateEnd(&z);
        return r == Z_STREAM_END ? 0 : -EIO;
}

static enum MHD_Result queue(struct MHD_Connection *c, struct http_response *resp, bool allow_hdr) {
        struct MHD_Response *r;
        enum MHD_Result ret;
        bool gzipped = false;
        size_t len;
        char *body;

        if (resp->gzip_ok && resp->body.len >= GZIP_MIN_BYTES &&
            negotiate_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING))) {
                struct strbuf z = STRBUF_INIT;

                if (gzip_buffer(&resp->body, &z) == 0) {
                        strbuf_done(&resp->body);
                        resp->body = z;
                        gzipped = true;
                } else
                        strbuf_done(&z);
        }

        body = strbuf_steal(&resp->body, &len);
        r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!r) {
                free(body);
                return MHD_NO;
        }
        if (resp->content_type)
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        if (allow_hdr)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        if (gzipped)
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        if (resp->gzip_ok || resp->negotiated)
                MHD_add_response_header(r, MHD_HTTP_HEADER_VARY,
                                        resp->gzip_ok && resp->negotiated ? "Accept, Accept-Encoding"
                                        : resp->gzip_ok                   ? "Accept-Encoding"
                                                                          : "Accept");
        ret = MHD_queue_response(c, resp->status, r);
        MHD_destroy_response(r);
        return ret;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *connection, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls) {
        struct http_server *s = cls;
        struct conn_ctx *ctx;
        struct http_response resp = { .status = 200, .body = STRBUF_INIT };
        const struct http_route *route;
        const char *handler_name;
        bool get, head;
        enum MHD_Result ret;

        /*
         * MHD calls us once after the headers and again for each body chunk
         * and at the end (microhttpd.h, MHD_AccessHandlerCallback). Answer
         * on the second call; a body on GET/HEAD is read and ignored.
         */
        if (*con_cls == NULL) {
                *con_cls = xcalloc(1, sizeof(struct conn_ctx));
                return MHD_YES;
        }
        ctx = *con_cls;
        if (*upload_data_size != 0) {
                *upload_data_size = 0;
                return MHD_YES;
        }

        route = find_route(s, url);
        handler_name = route ? route->name : "other";
        get = streq(method, MHD_HTTP_METHOD_GET);
        head = streq(method, MHD_HTTP_METHOD_HEAD);

        if (!get && !head) {
                http_response_error(&resp, MHD_HTTP_METHOD_NOT_ALLOWED, "method %s not allowed", method);
                count_request(s, handler_name, resp.status);
                return queue(connection, &resp, true);
        }
        if (!route) {
                http_response_error(&resp, MHD_HTTP_NOT_FOUND, "no such path: %s", url);
                count_request(s, handler_name, resp.status);
                return queue(connection, &resp, false);
        }

        /* HEAD runs the handler too, so Content-Length is right; MHD drops the body. */
        route->handler(s->userdata,
                       &(struct http_request) { .path = url, .method = method, .head = head,
                                                .connection = connection, .state = &ctx->state },
                       &resp);
        if (resp.defer_usec > 0) {
                strbuf_done(&resp.body);
                if (defer(s, connection, resp.defer_usec))
                        return MHD_YES; /* called again when due */
                http_response_error(&resp, 503, "too many waiting requests");
        }
        count_request(s, handler_name, resp.status);
        log_debug("http: %s %s -> %u %s, %zu bytes", method, url, resp.status,
                  resp.content_type ?: "-", resp.body.len);
        ret = queue(connection, &resp, false);
        strbuf_done(&resp.body);
        return ret;
}

_printf_(2, 0) static void mhd_logger(void *cls, const char *fmt, va_list ap) {
        char msg[512];

        vsnprintf(msg, sizeof(msg), fmt, ap);
        msg[strcspn(msg, "\n")] = '\0';
        log_debug("http: %s", msg);
}

static int open_listen_socket(const struct listen_addr *a, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        int one = 1, zero = 0;

        fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
                return -errno;
        /* ":PORT" means every address: IPv6 wildcard accepting IPv4 too. */
        if (a->any && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)
                return -errno;
        if (bind(fd, (const struct sockaddr *) &a->sa, a->len) < 0)
                return -errno;
        if (listen(fd, HTTP_LISTEN_BACKLOG) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static void describe_socket(int fd, char *buf, size_t len) {
        struct listen_addr a = {};

        a.len = sizeof(a.sa);
        if (getsockname(fd, (struct sockaddr *) &a.sa, &a.len) < 0) {
                snprintf(buf, len, "fd %d", fd);
                return;
        }
        listen_addr_to_string(&a, buf, len);
}

int http_server_start(const struct http_server_options *opts, const struct http_route *routes,
                      size_t n_routes, void *userdata, struct http_server **ret) {
        struct http_server *s;
        int r;

        s = xcalloc(1, sizeof(*s));
        s->listen_fd = -1;
        s->routes = routes;
        s->n_routes = n_routes;
        s->userdata = userdata;
        pthread_mutex_init(&s->lock, NULL);
        {
                pthread_condattr_t ca;

                pthread_condattr_init(&ca);
                pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
                pthread_cond_init(&s->wake, &ca);
                pthread_condattr_destroy(&ca);
        }
        s->max_deferrals = opts->max_connections;
        s->deferrals = xcalloc(s->max_deferrals, sizeof(*s->deferrals));

        if (opts->listen_fd >= 0)
                s->listen_fd = opts->listen_fd;
        else {
                r = open_listen_socket(&opts->listen, &s->listen_fd);
                if (r < 0) {
                        char a[80];
                        log_error_errno(r, "Failed to listen on %s: %m",
                                        listen_addr_to_string(&opts->listen, a, sizeof(a)));
                        http_server_stop(s);
                        return r;
                }
        }
        describe_socket(s->listen_fd, s->address, sizeof(s->address));

        /*
         * MHD_USE_ITC keeps MHD from shutdown()ing a listening socket we were
         * handed, which would break socket re-activation (journal-gatewayd).
         */
        s->mhd = MHD_start_daemon(
                MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                0, NULL, NULL, access_handler, s,
                MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
                MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
                MHD_OPTION_LISTEN_SOCKET, (MHD_socket) s->listen_fd,
                MHD_OPTION_CONNECTION_LIMIT, (unsigned) opts->max_connections,
                MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned) opts->per_ip_connections,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) opts->timeout_sec,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) opts->max_request_bytes,
                MHD_OPTION_END);
        if (!s->mhd) {
                log_error("Failed to start the HTTP server on %s", s->address);
                http_server_stop(s);
                return -EIO;
        }
        if (pthread_create(&s->resumer, NULL, resumer_main, s) != 0) {
                http_server_stop(s);
                return -EAGAIN;
        }
        s->resumer_started = true;
        /* MHD now owns the socket and closes it on stop. */
        *ret = s;
        return 0;
}

struct http_server *http_server_stop(struct http_server *s) {
        if (!s)
                return NULL;
        if (s->resumer_started) {
                pthread_mutex_lock(&s->lock);
                s->stopping = true;
                pthread_cond_signal(&s->wake);
                pthread_mutex_unlock(&s->lock);
                pthread_join(s->resumer, NULL);
        }
        if (s->mhd)
                MHD_stop_daemon(s->mhd);
        else
                safe_close(s->listen_fd);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->wake);
        free(s->deferrals);
        free(s);
        return NULL;
}

const char *http_server_address(const struct http_server *s) {
        return s->address;
}
