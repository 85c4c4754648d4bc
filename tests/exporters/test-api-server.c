/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The API's handlers learn their server from each request, not from a
 * pointer stored into the api after the server's threads have started
 * (a data race ThreadSanitizer reported when the daemon set it late). The
 * very first request after http_server_start() returns must already see
 * the server: /status names the bound address, /metrics has the request
 * counters. Under ThreadSanitizer in CI (suite 'concurrency').
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "api.h"
#include "http.h"
#include "macro.h"
#include "strbuf.h"
#include "symbolz.h"
#include "web-config.h"

/* GET path over a fresh connection to addr; the whole answer (the server closes it). */
static void get_at(struct in_addr addr, uint16_t port, const char *path, struct strbuf *out) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = addr };
        _cleanup_close_ int fd = -1;
        struct strbuf req = {};
        char buf[BUFSIZ];
        ssize_t n;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (const struct sockaddr *) &sa, sizeof(sa)), 0);
        strbuf_printf(&req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
        assert_int_equal(write(fd, req.buf, req.len), (ssize_t) req.len);
        strbuf_done(&req);
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                strbuf_append(out, buf, (size_t) n);
        assert_int_equal(n, 0);
}

static void get(uint16_t port, const char *path, struct strbuf *out) {
        get_at((struct in_addr) { htonl(INADDR_LOOPBACK) }, port, path, out);
}

static struct http_server *start_web(struct api *a, const char *listen, bool detail_any, struct web_config *web,
                                     uint16_t *ret_port) {
        struct http_server_options o = {
                .web = web,
                .listen_fd = -1,
                .max_connections = 8,
                .timeout_sec = 5,
                .max_request_bytes = 64 * 1024,
                .detail_any = detail_any,
        };
        struct http_server *s = NULL;
        const struct http_route *routes;
        const char *colon;
        size_t n;

        assert_int_equal(parse_listen_addr(listen, &o.listen), 0);
        routes = api_routes(&n);
        assert_int_equal(http_server_start(&o, routes, n, a, &s), 0);
        colon = strrchr(http_server_address(s), ':');
        assert_non_null(colon);
        *ret_port = (uint16_t) atoi(colon + 1);
        assert_true(*ret_port > 0);
        return s;
}

static struct http_server *start_on(struct api *a, const char *listen, bool detail_any, uint16_t *ret_port) {
        return start_web(a, listen, detail_any, NULL, ret_port);
}

static struct http_server *start(struct api *a, uint16_t *ret_port) {
        return start_on(a, "127.0.0.1:0", false, ret_port);
}

/* Loopback by the address family's own rules (RFC 1122 3.2.1.3: 127/8;
 * RFC 4291 2.5.3: ::1; 2.5.5.2: IPv4-mapped), AF_UNIX local. */
static void test_loopback_addresses(void **state) {
        static const struct {
                const char *addr;
                bool loopback;
        } cases[] = {
                { "127.0.0.1", true },   { "127.255.3.9", true },      { "10.0.2.2", false },
                { "128.0.0.1", false },  { "0.0.0.0", false },         { "::1", true },
                { "::", false },         { "::ffff:127.0.0.1", true }, { "::ffff:10.1.2.3", false },
                { "::2", false },        { "fe80::1", false },         { "::127.0.0.1", false },
        };
        struct sockaddr_un un = { .sun_family = AF_UNIX };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct sockaddr_storage ss = {};

                if (strchr(cases[i].addr, ':')) {
                        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;

                        s6->sin6_family = AF_INET6;
                        assert_int_equal(inet_pton(AF_INET6, cases[i].addr, &s6->sin6_addr), 1);
                } else {
                        struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;

                        s4->sin_family = AF_INET;
                        assert_int_equal(inet_pton(AF_INET, cases[i].addr, &s4->sin_addr), 1);
                }
                if (http_client_is_loopback((const struct sockaddr *) &ss) != cases[i].loopback)
                        fail_msg("%s: expected %s", cases[i].addr, cases[i].loopback ? "loopback" : "not loopback");
        }
        assert_true(http_client_is_loopback((const struct sockaddr *) &un));
        assert_false(http_client_is_loopback(NULL));
}

/* One of this host's IPv4 addresses that is not loopback, or false. */
static bool other_local_address(struct in_addr *ret) {
        struct ifaddrs *list, *i;
        bool found = false;

        if (getifaddrs(&list) < 0)
                return false;
        for (i = list; i && !found; i = i->ifa_next)
                if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
                    !(i->ifa_flags & IFF_LOOPBACK)) {
                        *ret = ((const struct sockaddr_in *) i->ifa_addr)->sin_addr;
                        found = true;
                }
        freeifaddrs(list);
        return found;
}

static unsigned status_of(const struct strbuf *resp) {
        unsigned code = 0;

        assert_int_equal(sscanf(resp->buf, "HTTP/1.1 %u ", &code), 1);
        return code;
}

/*
 * A client connecting to this host's own non-loopback address comes from
 * it: the kernel picks it as the source. The detail routes refuse it with
 * a 403 naming the setting, the others answer; loopback clients, and every
 * client with detail_any, get the detail routes.
 */
static void test_detail_for_loopback_only(void **state) {
        _cleanup_(api_freep) struct api *a = api_new(&(struct api_provider) {});
        static const char *const detail[] = { "/hotlines", "/hotpcs", "/latency", "/counters", "/debug/pprof/spe",
                                              "/debug/pprof/symbol" };
        struct in_addr other;
        struct http_server *s;
        uint16_t port;

        if (!other_local_address(&other))
                skip(); /* no interface but lo */
        for (int any = 0; any <= 1; any++) {
                s = start_on(a, "0.0.0.0:0", any, &port);
                for (size_t i = 0; i < ELEMENTSOF(detail); i++) {
                        struct strbuf resp = {};

                        get_at(other, port, detail[i], &resp);
                        strbuf_putc(&resp, '\0');
                        if (any)
                                assert_int_not_equal(status_of(&resp), 403);
                        else {
                                assert_int_equal(status_of(&resp), 403);
                                assert_non_null(strstr(resp.buf, "[http] detail = any"));
                                assert_non_null(strstr(resp.buf, detail[i]));
                        }
                        strbuf_done(&resp);
                        get(port, detail[i], &resp);
                        strbuf_putc(&resp, '\0');
                        assert_int_not_equal(status_of(&resp), 403);
                        strbuf_done(&resp);
                }
                for (const char *const *p = (const char *const[]) { "/metrics", "/status", "/healthz", "/", NULL }; *p;
                     p++) {
                        struct strbuf resp = {};

                        get_at(other, port, *p, &resp);
                        strbuf_putc(&resp, '\0');
                        assert_int_not_equal(status_of(&resp), 403);
                        strbuf_done(&resp);
                }
                http_server_stop(s);
        }
}

static void test_status_names_the_server_at_once(void **state) {
        _cleanup_(api_freep) struct api *a = api_new(&(struct api_provider) {});
        struct strbuf resp = {};
        struct http_server *s;
        const char *body;
        json_error_t e;
        json_t *o;
        char want[LISTEN_ADDR_STR_MAX];
        uint16_t port;

        s = start(a, &port);
        get(port, "/status", &resp);
        strbuf_putc(&resp, '\0');
        assert_non_null(strstr(resp.buf, " 200 "));
        body = strstr(resp.buf, "\r\n\r\n");
        assert_non_null(body);
        o = json_loads(body + 4, 0, &e);
        assert_non_null(o);
        /* The address the test reads back from the port it connected to. */
        snprintf(want, sizeof(want), "127.0.0.1:%u", port);
        assert_string_equal(json_string_value(json_object_get(o, "listen")), want);
        json_decref(o);
        strbuf_done(&resp);
        http_server_stop(s);
}

static void test_metrics_count_the_server_requests_at_once(void **state) {
        _cleanup_(api_freep) struct api *a = api_new(&(struct api_provider) {});
        struct strbuf resp = {};
        struct http_server *s;
        uint16_t port;

        s = start(a, &port);
        get(port, "/status", &resp);
        strbuf_done(&resp);
        get(port, "/metrics", &resp);
        strbuf_putc(&resp, '\0');
        /* The one /status answered before: the server's own counter, through the request. */
        assert_non_null(strstr(resp.buf, "armprofd_http_requests_total{handler=\"status\",code=\"200\"} 1\n"));
        strbuf_done(&resp);
        http_server_stop(s);
}

/*
 * A GET with headers over a fresh connection: its status, or 0 when the
 * connection gave none; the whole answer in ret_answer when not NULL.
 */
static int answer_with(uint16_t port, const char *path, const char *headers, struct strbuf *ret_answer) {
        struct in_addr lo = { htonl(INADDR_LOOPBACK) };
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = lo };
        _cleanup_close_ int fd = -1;
        struct strbuf req = {}, out = {};
        char buf[BUFSIZ];
        ssize_t n;
        int status = 0;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        if (connect(fd, (const struct sockaddr *) &sa, sizeof(sa)) < 0)
                return 0;
        strbuf_printf(&req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n", path, headers);
        /* A TLS server closes on plain text: no SIGPIPE for that. */
        if (send(fd, req.buf, req.len, MSG_NOSIGNAL) == (ssize_t) req.len)
                while ((n = read(fd, buf, sizeof(buf))) > 0)
                        strbuf_append(&out, buf, (size_t) n);
        strbuf_putc(&out, '\0');
        if (strncmp(out.buf, "HTTP/1.1 ", 9) == 0)
                status = atoi(out.buf + 9);
        strbuf_done(&req);
        if (ret_answer)
                *ret_answer = out;
        else
                strbuf_done(&out);
        return status;
}

static int status_with(uint16_t port, const char *path, const char *headers) {
        return answer_with(port, path, headers, NULL);
}

/* Raw request bytes over a fresh connection, then everything the server sends until it closes. */
static void exchange(uint16_t port, const char *req, size_t len, struct strbuf *out) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                                  .sin_addr = { htonl(INADDR_LOOPBACK) } };
        _cleanup_close_ int fd = -1;
        char buf[BUFSIZ];
        ssize_t n;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (const struct sockaddr *) &sa, sizeof(sa)), 0);
        for (size_t sent = 0; sent < len; sent += (size_t) n) {
                n = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
                /* A server that answered early and closed takes no more. */
                if (n <= 0)
                        break;
        }
        shutdown(fd, SHUT_WR);
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                strbuf_append(out, buf, (size_t) n);
        strbuf_putc(out, '\0');
}

/* The test's symbolizer: 0x401000 is main, nothing else has a name. */
static void main_only(void *userdata, const uint64_t *addrs, size_t n, symbolz_found_fn found, void *ctx) {
        for (size_t i = 0; i < n; i++)
                if (addrs[i] == 0x401000)
                        found(ctx, i, "main");
}

static const char *body_of(const struct strbuf *resp) {
        const char *b = strstr(resp->buf, "\r\n\r\n");

        assert_non_null(b);
        return b + 4;
}

/*
 * POST, for /debug/pprof/symbol only (go tool pprof posts its addresses
 * there): the body reaches the handler and is answered as Go's
 * net/http/pprof does; a GET's query the same; other routes and methods
 * get a 405 whose Allow lists what they take; a body over the limit a 413,
 * at once when its Content-Length says so (the server waits for none of
 * it), after reading it when chunked, with the connection still usable.
 */
static void test_post_symbol(void **state) {
        _cleanup_(api_freep) struct api *a = api_new(&(struct api_provider) { .bare_symbols = main_only });
        static const char want[] = "num_symbols: 1\n0x401000 main\n";
        struct strbuf req = STRBUF_INIT, resp = STRBUF_INIT;
        struct http_server *s;
        uint16_t port;
        size_t head;

        s = start(a, &port);
        strbuf_printf(&req, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                            "Content-Type: application/octet-stream\r\nContent-Length: 21\r\n\r\n0x2+0x401000+0x401001");
        exchange(port, req.buf, req.len, &resp);
        assert_int_equal(status_of(&resp), 200);
        assert_non_null(strstr(resp.buf, "\r\nContent-Type: text/plain; charset=utf-8\r\n"));
        assert_string_equal(body_of(&resp), want);
        strbuf_done(&resp);

        get(port, "/debug/pprof/symbol", &resp);
        strbuf_putc(&resp, '\0');
        assert_int_equal(status_of(&resp), 200);
        assert_string_equal(body_of(&resp), "num_symbols: 1\n");
        strbuf_done(&resp);
        get(port, "/debug/pprof/symbol?0x401000+0x5", &resp);
        strbuf_putc(&resp, '\0');
        assert_string_equal(body_of(&resp), want);
        strbuf_done(&resp);

        /* POST elsewhere, and other methods here: 405 with what is allowed. */
        strbuf_done(&req);
        strbuf_printf(&req, "POST /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc");
        exchange(port, req.buf, req.len, &resp);
        assert_int_equal(status_of(&resp), 405);
        assert_non_null(strstr(resp.buf, "\r\nAllow: GET, HEAD\r\n"));
        strbuf_done(&resp);
        strbuf_done(&req);
        strbuf_printf(&req, "PUT /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc");
        exchange(port, req.buf, req.len, &resp);
        assert_int_equal(status_of(&resp), 405);
        assert_non_null(strstr(resp.buf, "\r\nAllow: GET, HEAD, POST\r\n"));
        strbuf_done(&resp);

        /* The limit exactly: read and answered. */
        strbuf_done(&req);
        strbuf_printf(&req, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: %u\r\n\r\n",
                      SYMBOLZ_BODY_MAX);
        head = req.len;
        strbuf_puts(&req, "0x401000");
        while (req.len - head < SYMBOLZ_BODY_MAX)
                strbuf_putc(&req, '+');
        exchange(port, req.buf, req.len, &resp);
        assert_int_equal(status_of(&resp), 200);
        assert_string_equal(body_of(&resp), want);
        strbuf_done(&resp);

        /* One byte over, announced: a 413 without the body ever sent (a server waiting for it would time out). */
        strbuf_done(&req);
        strbuf_printf(&req, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\nContent-Length: %u\r\n\r\n",
                      SYMBOLZ_BODY_MAX + 1);
        exchange(port, req.buf, req.len, &resp);
        assert_int_equal(status_of(&resp), 413);
        assert_non_null(strstr(body_of(&resp), "at most 1048576 bytes"));
        strbuf_done(&resp);

        /* Over, chunked: read to its end and refused; the same connection answers the next request. */
        strbuf_done(&req);
        strbuf_puts(&req, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (unsigned sent = 0; sent <= SYMBOLZ_BODY_MAX; sent += 0x10000) {
                strbuf_puts(&req, "10000\r\n");
                for (unsigned i = 0; i < 0x10000; i++)
                        strbuf_putc(&req, '+');
                strbuf_puts(&req, "\r\n");
        }
        strbuf_puts(&req, "0\r\n\r\nGET /debug/pprof/symbol?0x401000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        exchange(port, req.buf, req.len, &resp);
        assert_int_equal(status_of(&resp), 413);
        {
                const char *second = strstr(resp.buf + 1, "HTTP/1.1 ");

                assert_non_null(second);
                assert_int_equal(atoi(second + 9), 200);
                assert_non_null(strstr(second, want));
        }
        strbuf_done(&resp);
        strbuf_done(&req);
        http_server_stop(s);
}

/* Counting on CPUs 0, 2 and 3 (userdata NULL), or on none with counting disabled. */
static json_t *fake_counters(void *userdata, int64_t cpu) {
        static const int counted[] = { 0, 2, 3 };
        json_t *cpus = json_array();

        for (size_t i = 0; !userdata && i < ELEMENTSOF(counted); i++)
                if (cpu < 0 || cpu == counted[i])
                        json_array_append_new(cpus, json_pack("{s:i}", "cpu", counted[i]));
        return json_pack("{s:s, s:o}", "state", userdata ? "disabled" : "ok", "cpus", cpus);
}

/*
 * /counters?cpu=N for a CPU that is not counted: a 404 naming the counted
 * CPUs (the test's own list, as the kernel writes CPU lists), not a 200
 * with no CPU in it; a counted one answers.
 */
static void test_counters_cpu_not_counted(void **state) {
        static const struct {
                const char *path;
                bool disabled;
                unsigned status;
                const char *says;
        } cases[] = {
                { "/counters?cpu=2", false, 200, "\"cpu\": 2" },
                { "/counters?cpu=1", false, 404, "CPU 1 is not counted; the counted CPUs are 0,2-3" },
                { "/counters?cpu=4096", false, 404, "CPU 4096 is not counted; the counted CPUs are 0,2-3" },
                { "/counters?cpu=0", true, 404, "CPU 0 is not counted: no CPU is (counting disabled)" },
                { "/counters", true, 200, "\"state\": \"disabled\"" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(api_freep) struct api *a = api_new(&(struct api_provider) {
                        .userdata = cases[i].disabled ? (void *) 1 : NULL, .counters_json = fake_counters });
                struct strbuf resp = {};
                struct http_server *s;
                uint16_t port;

                s = start(a, &port);
                get(port, cases[i].path, &resp);
                strbuf_putc(&resp, '\0');
                assert_int_equal(status_of(&resp), cases[i].status);
                if (!strstr(body_of(&resp), cases[i].says))
                        fail_msg("%s: %s", cases[i].path, body_of(&resp));
                strbuf_done(&resp);
                http_server_stop(s);
        }
}

/* The body it was handed, as it was handed. */
static void echo_body(void *userdata, const struct http_request *req, struct http_response *resp) {
        resp->content_type = "application/octet-stream";
        if (req->body)
                strbuf_printf(&resp->body, "%zu:%.*s", req->body_len, (int) req->body_len, req->body);
}

/*
 * The server's own bound on a body, whatever the handler would do with
 * more: a route taking 8 bytes gets them whole, by length or chunked, and
 * a 413 for 9, which its handler never sees.
 */
static void test_post_body_bound(void **state) {
        static const struct http_route routes[] = { { "/echo", "echo", echo_body, .max_body = 8 } };
        struct http_server_options o = { .listen_fd = -1, .max_connections = 8, .timeout_sec = 5,
                                         .max_request_bytes = 64 * 1024 };
        static const struct {
                const char *req;
                unsigned status;
                const char *body;
        } cases[] = {
                { "Content-Length: 8\r\n\r\n12345678", 200, "8:12345678" },
                { "Transfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n3\r\n678\r\n0\r\n\r\n", 200, "8:12345678" },
                { "Content-Length: 0\r\n\r\n", 200, "0:" },
                { "Content-Length: 9\r\n\r\n123456789", 413, NULL },
                { "Transfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n4\r\n6789\r\n0\r\n\r\n", 413, NULL },
        };
        struct http_server *s = NULL;
        uint16_t port;

        assert_int_equal(parse_listen_addr("127.0.0.1:0", &o.listen), 0);
        assert_int_equal(http_server_start(&o, routes, ELEMENTSOF(routes), NULL, &s), 0);
        port = (uint16_t) atoi(strrchr(http_server_address(s), ':') + 1);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct strbuf req = STRBUF_INIT, resp = STRBUF_INIT;

                strbuf_printf(&req, "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s", cases[i].req);
                exchange(port, req.buf, req.len, &resp);
                assert_int_equal(status_of(&resp), cases[i].status);
                if (cases[i].body)
                        assert_string_equal(body_of(&resp), cases[i].body);
                strbuf_done(&req);
                strbuf_done(&resp);
        }
        http_server_stop(s);
}

static void write_file(const char *dir, const char *name, const char *data, size_t size) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        assert_non_null(f = fopen(path, "w"));
        assert_int_equal(fwrite(data, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
}

/* A self-signed certificate and its key, made by GnuTLS, as PEM files in dir. */
static void write_self_signed(const char *dir) {
        gnutls_x509_privkey_t key;
        gnutls_x509_crt_t crt;
        gnutls_datum_t pem;
        unsigned char serial[] = { 1 };
        time_t now = time(NULL);

        assert_int_equal(gnutls_x509_privkey_init(&key), 0);
        assert_int_equal(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                                      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0), 0);
        assert_int_equal(gnutls_x509_crt_init(&crt), 0);
        assert_int_equal(gnutls_x509_crt_set_version(crt, 3), 0);
        assert_int_equal(gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)), 0);
        assert_int_equal(gnutls_x509_crt_set_activation_time(crt, now - 60), 0);
        assert_int_equal(gnutls_x509_crt_set_expiration_time(crt, now + 3600), 0);
        assert_int_equal(gnutls_x509_crt_set_dn(crt, "CN=localhost", NULL), 0);
        assert_int_equal(gnutls_x509_crt_set_key(crt, key), 0);
        assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
        assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem), 0);
        write_file(dir, "server.crt", (const char *) pem.data, pem.size);
        gnutls_free(pem.data);
        assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &pem), 0);
        write_file(dir, "server.key", (const char *) pem.data, pem.size);
        gnutls_free(pem.data);
        gnutls_x509_crt_deinit(crt);
        gnutls_x509_privkey_deinit(key);
}

static struct web_config *load_web(const char *dir, const char *yaml) {
        struct web_config *w = NULL;
        char path[PATH_MAX], err[MESSAGE_MAX];

        write_file(dir, "web.yml", yaml, strlen(yaml));
        snprintf(path, sizeof(path), "%s/web.yml", dir);
        if (web_config_load(path, &w, err, sizeof(err)) < 0)
                fail_msg("%s", err);
        return w;
}

/* The crypt_blowfish test vector: "U*U" at cost 5. */
#define UU_HASH "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"
#define UU_AUTH "Authorization: Basic dTpVKlU=\r\n"        /* u:U*U */
#define WRONG_AUTH "Authorization: Basic dTp3cm9uZw==\r\n" /* u:wrong */
#define CLIENTS 4
#define REQUESTS 25

struct client {
        uint16_t port;
        bool plain_only; /* the server stays plain HTTP: every request gets its answer */
        unsigned ok, refused, other;
};

static void *client_main(void *userdata) {
        struct client *c = userdata;

        for (unsigned i = 0; i < REQUESTS; i++) {
                int st = status_with(c->port, i % 5 == 4 ? "/" : "/healthz", i % 3 == 2 ? WRONG_AUTH : UU_AUTH);

                if (st == 200)
                        c->ok++;
                else if (st == 401)
                        c->refused++;
                else
                        c->other++;
        }
        return NULL;
}

/*
 * Basic auth from several clients at once while reloads swap the users and
 * turn TLS on and off (a new server on the same socket each time): the auth
 * thread, the retiring servers and the timer that stops them, under
 * ThreadSanitizer in CI. Every plain request gets 200 or 401 as its
 * credentials say; after TLS and back, plain HTTP is served again.
 */
static void test_auth_and_reloads_under_load(void **state) {
        _cleanup_(api_freep) struct api *a = api_new(&(struct api_provider) {});
        char dir[] = "/tmp/armprofd-test-web-XXXXXX";
        struct web_config *users, *users2, *tls;
        struct client clients[CLIENTS];
        pthread_t threads[CLIENTS];
        struct http_server *s;
        struct strbuf resp = {};
        uint16_t port;

        assert_non_null(mkdtemp(dir));
        write_self_signed(dir);
        users = load_web(dir, "basic_auth_users:\n  u: " UU_HASH "\n");
        users2 = load_web(dir, "basic_auth_users:\n  u: " UU_HASH "\n  other: " UU_HASH "\n"
                               "http_server_config:\n  headers:\n    X-Frame-Options: deny\n");
        tls = load_web(dir, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                            "basic_auth_users:\n  u: " UU_HASH "\n");
        s = start_web(a, "127.0.0.1:0", false, users, &port);

        /* Users swapped while requests run: no new server, every answer as the credentials say. */
        for (size_t i = 0; i < CLIENTS; i++) {
                clients[i] = (struct client) { .port = port, .plain_only = true };
                assert_int_equal(pthread_create(&threads[i], NULL, client_main, &clients[i]), 0);
        }
        for (unsigned i = 0; i < 10; i++)
                assert_int_equal(http_server_set_web_config(s, i % 2 ? users : users2), 0);
        for (size_t i = 0; i < CLIENTS; i++) {
                assert_int_equal(pthread_join(threads[i], NULL), 0);
                /* 25 requests: i % 3 == 2 carry the wrong password (8 of them). */
                assert_int_equal(clients[i].ok, 17);
                assert_int_equal(clients[i].refused, 8);
                assert_int_equal(clients[i].other, 0);
        }

        /* TLS on and off while requests run: plain requests to the TLS server get no status. */
        for (size_t i = 0; i < CLIENTS; i++) {
                clients[i] = (struct client) { .port = port };
                assert_int_equal(pthread_create(&threads[i], NULL, client_main, &clients[i]), 0);
        }
        for (unsigned i = 0; i < 6; i++) {
                assert_int_equal(http_server_set_web_config(s, i % 2 ? users : tls), 0);
                usleep(20000);
        }
        for (size_t i = 0; i < CLIENTS; i++)
                assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(status_with(port, "/healthz", UU_AUTH), 200);
        assert_int_equal(status_with(port, "/healthz", ""), 401);

        assert_int_equal(answer_with(port, "/metrics", UU_AUTH, &resp), 200);
        /* Two distinct credentials, a bcrypt each: the rest were cache hits, queued ones too. */
        assert_non_null(strstr(resp.buf, "armprofd_http_auth_bcrypts_total 2\n"));
        strbuf_done(&resp);
        http_server_stop(s);
        web_config_unref(users);
        web_config_unref(users2);
        web_config_unref(tls);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_names_the_server_at_once),
                cmocka_unit_test(test_metrics_count_the_server_requests_at_once),
                cmocka_unit_test(test_loopback_addresses),
                cmocka_unit_test(test_detail_for_loopback_only),
                cmocka_unit_test(test_post_symbol),
                cmocka_unit_test(test_post_body_bound),
                cmocka_unit_test(test_counters_cpu_not_counted),
                cmocka_unit_test(test_auth_and_reloads_under_load),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
