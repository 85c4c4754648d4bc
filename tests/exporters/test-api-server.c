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
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "api.h"
#include "http.h"
#include "macro.h"
#include "strbuf.h"

/* GET path over a fresh connection; the whole answer (the server closes it). */
static void get(uint16_t port, const char *path, struct strbuf *out) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
        _cleanup_close_ int fd = -1;
        struct strbuf req = {};
        char buf[BUFSIZ];
        ssize_t n;

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
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

static struct http_server *start(struct api *a, uint16_t *ret_port) {
        struct http_server_options o = {
                .listen_fd = -1,
                .max_connections = 8,
                .timeout_sec = 5,
                .max_request_bytes = 64 * 1024,
        };
        struct http_server *s = NULL;
        const struct http_route *routes;
        const char *colon;
        size_t n;

        assert_int_equal(parse_listen_addr("127.0.0.1:0", &o.listen), 0);
        routes = api_routes(&n);
        assert_int_equal(http_server_start(&o, routes, n, a, &s), 0);
        colon = strrchr(http_server_address(s), ':');
        assert_non_null(colon);
        *ret_port = (uint16_t) atoi(colon + 1);
        assert_true(*ret_port > 0);
        return s;
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_names_the_server_at_once),
                cmocka_unit_test(test_metrics_count_the_server_requests_at_once),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
