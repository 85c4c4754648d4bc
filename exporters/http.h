/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The HTTP server: libmicrohttpd with its own polling thread (epoll where
 * available), explicit limits, GET and HEAD, and POST for the routes that
 * take a body (http_route.max_body). Routing is an exact-path table;
 * handlers fill a response and never block on collectors: they read
 * published snapshots only.
 */

#include <stdbool.h>
#include <stddef.h>

#include "parse-util.h"
#include "strbuf.h"

struct MHD_Connection;
struct http_server;
struct sockaddr;
struct web_config;

struct http_request {
        const char *path;
        const char *method;
        bool head;
        /* A POST's body (a route with max_body), NUL-terminated after body_len bytes; NULL otherwise. */
        const char *body;
        size_t body_len;
        struct MHD_Connection *connection;
        /*
         * The server answering (its address, its request counters). Handed in
         * with each request rather than stored in the handlers' userdata after
         * the start: the server's threads answer from the moment it starts.
         */
        struct http_server *server;
        /*
         * A slot that survives a deferral (see http_response.defer_usec):
         * the handler may keep malloc()ed state here; the server free()s it
         * when the request completes.
         */
        void **state;
};

/*
 * A client on this host: 127.0.0.0/8, ::1, their IPv4-mapped forms
 * (::ffff:127.x.x.x, as a dual-stack socket shows IPv4 clients) and AF_UNIX.
 * NULL (the address is unknown) is not.
 */
bool http_client_is_loopback(const struct sockaddr *sa);

/* Header value of the request, or NULL. */
const char *http_request_header(const struct http_request *req, const char *name);
/*
 * The query's parameters against `allowed` (NULL-terminated names): each
 * parameter must be one of them and appear at most once; empty pairs
 * ("?&&", "?a=1&") are skipped. Returns 0 with ret_values[i] the value of
 * allowed[i] (NULL when absent, "" when given without "="), or -ENOENT for an
 * unknown parameter, -EEXIST for a repeated one and -EBADMSG for one whose
 * name or value holds a NUL byte (%00), with *ret_bad its name.
 * ret_values has one slot per allowed name.
 */
int http_request_args(const struct http_request *req, const char *const *allowed, const char **ret_values,
                      const char **ret_bad);

/*
 * The query as libmicrohttpd decoded it (%XX a byte, '+' a blank): its
 * arguments, NAME or NAME=VALUE, joined by '&', appended to out; for a
 * query that is no list of parameters (/debug/pprof/symbol's "?0x1+0x2").
 * HTTP_MAX_FIELDS and max_request_bytes bound it.
 */
void http_request_query_text(const struct http_request *req, struct strbuf *out);

struct http_response {
        unsigned status;
        const char *content_type; /* static string */
        struct strbuf body;
        /* Compress with gzip when the client's Accept-Encoding allows it. */
        bool gzip_ok;
        /* The body depends on Accept (adds "Vary: Accept"). */
        bool negotiated;
        /*
         * Set (and leave the rest alone) to be called again after this long,
         * e.g. /debug/pprof/profile?seconds=N. The connection is suspended
         * meanwhile: no thread waits on it. At most HTTP_MAX_DEFER_USEC.
         */
        uint64_t defer_usec;
        /*
         * An HTML page's Content-Security-Policy (a static string); with it
         * the page is also kept out of frames and sends no Referer.
         */
        const char *security_policy;
};

#define HTTP_MAX_DEFER_USEC (120 * USEC_PER_SEC)

typedef void (*http_handler_fn)(void *userdata, const struct http_request *req,
                                struct http_response *resp);

struct http_route {
        const char *path;
        const char *name; /* the handler label of armprofd_http_requests_total */
        http_handler_fn handler;
        /*
         * Serves per-process detail (addresses, per-CPU figures): answered to
         * loopback clients only, unless the server's detail_any is set.
         */
        bool detail;
        /*
         * > 0: POST is answered too, its body of at most this many bytes
         * handed to the handler (a 413 beyond: at once, before any check of
         * the client and without reading the body, when its Content-Length
         * says so; else once the body is read, as any answer is given);
         * 0: GET and HEAD only, a 405 to the rest.
         * A body on GET or HEAD is read and ignored.
         */
        size_t max_body;
};

struct http_server_options {
        struct listen_addr listen;
        int listen_fd; /* >= 0: an already listening socket (socket activation) */
        /*
         * At most this many connections; an eighth of them is kept free for
         * newcomers by closing the oldest connections that have no request
         * in progress (waiting for headers, or idle between requests).
         */
        unsigned max_connections;
        /* Per client address (0: no limit); over it, the address's oldest such connection goes. */
        unsigned per_ip_connections;
        /*
         * Idle timeout. Independently, a request's headers must be complete
         * 5 s after accept (after the idle timeout plus 5 s on a kept-alive
         * connection).
         */
        unsigned timeout_sec;
        /* Request line and headers; beyond it, or beyond 256 fields, a 431. */
        size_t max_request_bytes;
        /* The detail routes to every client; false: to loopback clients only (a 403 to others). */
        bool detail_any;
        /*
         * TLS, basic authentication, extra headers, a rate limit (the exporter
         * toolkit's web configuration), or NULL. The server takes a reference.
         * When it authenticates clients, the detail routes are theirs too.
         */
        struct web_config *web;
};

/*
 * Bind (unless listen_fd is given) and start serving. The routes array must
 * outlive the server. Returns 0 or a negative errno.
 */
int http_server_start(const struct http_server_options *opts, const struct http_route *routes,
                      size_t n_routes, void *userdata, struct http_server **ret);
struct http_server *http_server_stop(struct http_server *s);

/*
 * A reloaded web configuration (NULL: none), for the requests from now on.
 * When its TLS differs (certificates, keys, settings) a new server starts on
 * the same listening socket and the old one stops accepting: the port never
 * closes; connections being answered finish on the old one, idle ones are
 * closed so that their clients reconnect. Returns 0, or a negative errno with
 * the old configuration still served (logged).
 */
int http_server_set_web_config(struct http_server *s, struct web_config *web);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct http_server *, http_server_stop);

/* "ADDR:PORT" actually bound (port resolved when 0 was asked). */
const char *http_server_address(const struct http_server *s);

/* Appends armprofd_http_requests_total{handler,code} in text format. */
struct prom_writer;
void http_server_write_metrics(struct http_server *s, struct prom_writer *w);

/* Convenience for handlers. */
void http_response_error(struct http_response *resp, unsigned status, const char *fmt, ...)
        _printf_(3, 4);
