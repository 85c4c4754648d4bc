/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Query strings through the real server: libmicrohttpd splits and decodes
 * them, http_request_args() checks the names, the API's handlers parse the
 * values. The first byte picks the endpoint, the rest is the query; bytes
 * that cannot appear in a request target are percent-encoded, all others
 * (including '%', '&', '=' and '+') go as they are. Whatever the bytes, the
 * answer must be a status line: 400 for a bad query, else what a source
 * with no data gives (503, or 500 for a profile), never a crash or silence.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "api.h"
#include "http.h"
#include "strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The most parameters an endpoint takes (/hotlines: window, format, limit, pid, cgroup, all). */
#define ENDPOINT_NAMES_MAX 6

static const struct {
        const char *path;
        const char *const names[ENDPOINT_NAMES_MAX]; /* the parameters it takes */
} endpoints[] = {
        { "/hotlines", { "window", "format", "limit", "pid", "cgroup", "all" } },
        { "/hotpcs", { "window", "format", "limit", "pid", "cgroup" } },
        { "/latency", { "window", "format" } },
        { "/counters", { "cpu", "format" } },
        { "/debug/pprof/spe", { "window" } },
};

static uint16_t server_port(void) {
        static struct http_server *server;
        static uint16_t port;
        struct http_server_options o = {
                .listen_fd = -1,
                .max_connections = 8,
                .timeout_sec = 5,
                .max_request_bytes = 64 * 1024,
        };
        const struct http_route *routes;
        const char *colon;
        size_t n;

        if (server)
                return port;
        if (parse_listen_addr("127.0.0.1:0", &o.listen) < 0)
                abort();
        routes = api_routes(&n);
        /* Lives as long as the process: libFuzzer never returns. */
        if (http_server_start(&o, routes, n, api_new(&(struct api_provider) {}), &server) < 0)
                abort();
        colon = strrchr(http_server_address(server), ':');
        port = (uint16_t) atoi(colon + 1);
        return port;
}

/* Bytes sent percent-encoded (build_request). */
static bool needs_encoding(uint8_t c) {
        return c <= ' ' || c >= 0x7f || c == '#';
}

static void build_request(const uint8_t *data, size_t size, struct strbuf *out) {
        strbuf_printf(out, "GET %s?", endpoints[data[0] % ELEMENTSOF(endpoints)].path);
        for (size_t i = 1; i < size; i++) {
                uint8_t c = data[i];

                if (needs_encoding(c))
                        strbuf_printf(out, "%%%02X", c);
                else
                        strbuf_putc(out, (char) c);
        }
        strbuf_puts(out, " HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n");
}

/* A connect() cut short by a signal goes on in the background: wait for its end. */
static bool connect_finished(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        socklen_t len = sizeof(int);
        int err = 0;

        if (errno != EINTR)
                return false;
        while (poll(&p, 1, 10000) < 0)
                if (errno != EINTR)
                        return false;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
                errno = err;
                return false;
        }
        return true;
}

static unsigned exchange(uint16_t port, const struct strbuf *req) {
        static uint32_t n_exchanges;
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
        struct sockaddr_in src = { .sin_family = AF_INET };
        struct timeval tv = { .tv_sec = 10 };
        char reply[4096];
        size_t got = 0;
        unsigned status = 0;
        ssize_t k;
        int fd;

        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                abort();
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        /*
         * The server closes first, so each exchange leaves a TIME_WAIT entry
         * for 60 s; thousands of exchanges a second from one address use up
         * its ephemeral ports (connect: EADDRNOTAVAIL). Each comes from the
         * next of 65536 loopback addresses (127.1.0.0/16) instead.
         */
        src.sin_addr.s_addr = htonl(UINT32_C(0x7f010000) | (n_exchanges++ & 0xffff));
        if (bind(fd, (struct sockaddr *) &src, sizeof(src)) < 0) {
                fprintf(stderr, "cannot bind the client socket: %m\n");
                abort();
        }
        /* libFuzzer's timer signal (SIGALRM, for -timeout) interrupts these: EINTR is no answer. */
        if (connect(fd, (struct sockaddr *) &sin, sizeof(sin)) < 0 && !connect_finished(fd)) {
                fprintf(stderr, "cannot connect: %m\n");
                abort();
        }
        for (size_t sent = 0; sent < req->len;) {
                k = send(fd, req->buf + sent, req->len - sent, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        fprintf(stderr, "cannot send the request: %m\n");
                        abort();
                }
                sent += (size_t) k;
        }
        while (got < sizeof(reply) - 1) {
                k = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t) k;
        }
        close(fd);
        reply[got] = '\0';
        if (sscanf(reply, "HTTP/1.1 %3u ", &status) != 1) {
                fprintf(stderr, "no status line for: %s\n", req->buf);
                abort();
        }
        return status;
}

/*
 * Our own reading of a query with nothing to decode (no '%', '+' or byte
 * that build_request() encodes): split at
 * '&', skip empty pairs ("", "="), the name ends at the first '='. True when some name
 * is not the endpoint's or comes twice: the server must answer 400.
 */
static bool query_must_fail(const uint8_t *data, size_t size) {
        const char *const *names = endpoints[data[0] % ELEMENTSOF(endpoints)].names;
        bool seen[ENDPOINT_NAMES_MAX] = {};

        for (size_t i = 1; i < size; i++)
                if (data[i] == '%' || data[i] == '+' || needs_encoding(data[i]))
                        return false;
        for (size_t i = 1; i < size;) {
                size_t end = i, name_end;
                bool known = false;

                while (end < size && data[end] != '&')
                        end++;
                name_end = i;
                while (name_end < end && data[name_end] != '=')
                        name_end++;
                /* "" and "=" are empty pairs. */
                if (end > i && !(name_end == i && end - name_end <= 1)) {
                        for (size_t k = 0; k < ENDPOINT_NAMES_MAX && names[k]; k++)
                                if (strlen(names[k]) == name_end - i && memcmp(names[k], data + i, name_end - i) == 0) {
                                        if (seen[k])
                                                return true;
                                        seen[k] = known = true;
                                }
                        if (!known)
                                return true;
                }
                i = end + 1;
        }
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct strbuf req = STRBUF_INIT;
        unsigned status;

        /* Beyond a few KiB the query only tests the size limit, which test-http-hostile does. */
        if (size == 0 || size > 4096)
                return 0;
        build_request(data, size, &req);
        status = exchange(server_port(), &req);
        /* 431: more query fields than the server takes (HTTP_MAX_FIELDS in http.c), a refusal too. */
        if ((status != 400 && status != 431 && status != 500 && status != 503) ||
            (query_must_fail(data, size) && status != 400 && status != 431)) {
                fprintf(stderr, "status %u for: %s\n", status, req.buf);
                abort();
        }
        strbuf_done(&req);
        return 0;
}
