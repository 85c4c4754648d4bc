/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The push thread (exporters/push.c) against a store played by this test:
 * a loopback HTTP/1.1 server in a thread that answers each request as its
 * script says (a status, a hang, a close without answer) and records what
 * it received. The source is a counter, so the test knows which request is
 * which. Readers call push_write_metrics() and push_status_json() while the
 * thread runs (ThreadSanitizer in CI, suite 'concurrency').
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "push.h"
#include "push-spool.h"

#define ANSWER_HANG 0           /* read the request, never answer (until the client goes) */
#define ANSWER_CLOSE (-1)       /* read the request, close without a word */
#define ANSWER_LATE 1000        /* read the request, keep it, answer 200 after LATE_USEC, if the client waits */
#define LATE_USEC (1200 * 1000)
#define MAX_REQUESTS 256

struct request {
        char *body;
        int answer;
        char *headers;
};

struct store {
        int fd;
        uint16_t port;
        pthread_t thread;
        atomic_bool stop;
        pthread_mutex_t lock;
        const int *script;      /* answers in order; after it, 200 */
        size_t n_script;
        struct request requests[MAX_REQUESTS];
        size_t n_requests;
};

static uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* Reads until the headers' end and Content-Length bytes of body: the body, NUL-terminated; NULL when the peer went. */
static char *read_request(int fd, char **ret_headers) {
        size_t len = 0, cap = 4096, need = SIZE_MAX;
        char *buf = malloc(cap), *end;

        for (;;) {
                ssize_t n;

                if (len + 1 >= cap)
                        buf = realloc(buf, cap *= 2);
                n = recv(fd, buf + len, cap - len - 1, 0);
                if (n <= 0) {
                        free(buf);
                        return NULL;
                }
                len += (size_t) n;
                buf[len] = '\0';
                end = strstr(buf, "\r\n\r\n");
                if (end && need == SIZE_MAX) {
                        const char *cl = strcasestr(buf, "\r\nContent-Length:");

                        need = (size_t) (end + 4 - buf) + (cl ? strtoul(cl + 17, NULL, 10) : 0);
                }
                if (len >= need)
                        break;
        }
        *end = '\0';
        *ret_headers = strdup(buf);
        {
                char *body = strndup(end + 4, len - (size_t) (end + 4 - buf));

                free(buf);
                return body;
        }
}

static void *store_thread(void *userdata) {
        struct store *s = userdata;

        while (!atomic_load(&s->stop)) {
                struct pollfd p = { .fd = s->fd, .events = POLLIN };
                char *headers = NULL, *body;
                int c, answer;
                size_t i;

                if (poll(&p, 1, 20) <= 0)
                        continue;
                c = accept(s->fd, NULL, NULL);
                if (c < 0)
                        continue;
                body = read_request(c, &headers);
                if (!body) {
                        close(c);
                        continue;
                }
                pthread_mutex_lock(&s->lock);
                i = s->n_requests;
                answer = i < s->n_script ? s->script[i] : 200;
                if (i < MAX_REQUESTS) {
                        s->requests[i] = (struct request) { body, answer, headers };
                        s->n_requests++;
                } else {
                        free(body);
                        free(headers);
                }
                pthread_mutex_unlock(&s->lock);
                if (answer == ANSWER_HANG) {
                        char b;

                        /* Until the client gives up (or the test ends). */
                        while (!atomic_load(&s->stop)) {
                                struct pollfd q = { .fd = c, .events = POLLIN };

                                if (poll(&q, 1, 20) > 0 && recv(c, &b, 1, 0) <= 0)
                                        break;
                        }
                } else if (answer == ANSWER_LATE) {
                        static const char ok[] = "HTTP/1.1 200 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

                        /* A store behind a proxy that gave up: it stores the request all the same. */
                        usleep(LATE_USEC);
                        (void) send(c, ok, sizeof(ok) - 1, MSG_NOSIGNAL);
                } else if (answer > 0) {
                        const char *text = answer == 400 ? "{\"code\":\"invalid_argument\",\"message\":\"bad profile\"}"
                                                         : "";
                        char out[512];
                        int n = snprintf(out, sizeof(out),
                                         "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
                                         answer, strlen(text), answer == 429 ? "Retry-After: 0\r\n" : "", text);

                        assert_int_equal(send(c, out, (size_t) n, MSG_NOSIGNAL), n);
                }
                close(c);
        }
        return NULL;
}

static void store_start(struct store *s, const int *script, size_t n) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);

        *s = (struct store) { .script = script, .n_script = n };
        pthread_mutex_init(&s->lock, NULL);
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->fd >= 0);
        assert_int_equal(bind(s->fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(listen(s->fd, 16), 0);
        assert_int_equal(getsockname(s->fd, (struct sockaddr *) &a, &len), 0);
        s->port = ntohs(a.sin_port);
        assert_int_equal(pthread_create(&s->thread, NULL, store_thread, s), 0);
}

static void store_stop(struct store *s) {
        atomic_store(&s->stop, true);
        pthread_join(s->thread, NULL);
        close(s->fd);
        for (size_t i = 0; i < s->n_requests; i++) {
                free(s->requests[i].body);
                free(s->requests[i].headers);
        }
        pthread_mutex_destroy(&s->lock);
}

/* Bodies the store answered 200, in order, joined by spaces. */
static void delivered(struct store *s, char *buf, size_t len) {
        size_t o = 0;

        buf[0] = '\0';
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_requests; i++)
                if (s->requests[i].answer == 200)
                        o += (size_t) snprintf(buf + o, len - o, "%s%s", o ? " " : "", s->requests[i].body);
        pthread_mutex_unlock(&s->lock);
}

/* Every body the store read, in order, joined by spaces: what a store that keeps all it reads holds. */
static void received(struct store *s, char *buf, size_t len) {
        size_t o = 0;

        buf[0] = '\0';
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_requests; i++)
                o += (size_t) snprintf(buf + o, len - o, "%s%s", o ? " " : "", s->requests[i].body);
        pthread_mutex_unlock(&s->lock);
}

/* The source: request-1, request-2... up to `limit`, each stamped now. */
struct counter {
        atomic_uint n;
        unsigned limit;
        atomic_uint finals;
};

static int count_build(void *userdata, bool final, struct push_request *ret) {
        struct counter *c = userdata;
        unsigned n;

        if (final)
                atomic_fetch_add(&c->finals, 1);
        if (atomic_load(&c->n) >= c->limit)
                return 0;
        n = atomic_fetch_add(&c->n, 1) + 1;
        strbuf_printf(&ret->body, "request-%u", n);
        ret->time_ns = now_usec(CLOCK_REALTIME) * 1000;
        return 1;
}

struct fixture {
        char dir[64];
        char spool[96];
        char url[64];
        struct store store;
        struct push_history *history;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof(*f));

        snprintf(f->dir, sizeof(f->dir), "/tmp/test-push-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->spool, sizeof(f->spool), "%s/spool", f->dir);
        f->history = push_history_new();
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
        assert_int_equal(system(cmd), 0);
        push_history_free(f->history);
        free(f);
        return 0;
}

static struct push_options options(struct fixture *f, uint64_t interval_usec) {
        snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u/", f->store.port);
        return (struct push_options) {
                .url = f->url,
                .interval_usec = interval_usec,
                .timeout_usec = 2 * 1000000,
                .max_age_usec = 3600 * UINT64_C(1000000),
                .spool_dir = f->spool,
                .spool_max_bytes = 1 << 20,
                .service_name = "svc",
                .labels = "env=test",
        };
}

/* Until `want` is what the store took, or a generous guard passes (then the comparison fails). */
static void wait_delivered(struct store *s, const char *want) {
        uint64_t give_up = now_usec(CLOCK_MONOTONIC) + 30 * 1000000;
        char got[4096];

        do {
                delivered(s, got, sizeof(got));
                if (streq(got, want))
                        return;
                usleep(10000);
        } while (now_usec(CLOCK_MONOTONIC) < give_up);
        assert_string_equal(got, want);
}

static json_int_t status_int(struct push *p, const char *object, const char *key) {
        json_t *st = push_status_json(p);
        json_int_t v = json_integer_value(json_object_get(json_object_get(st, object), key));

        json_decref(st);
        return v;
}

/* Until the push counted n deliveries (the store answers before the thread reads it), or a generous guard passes. */
static void wait_ok(struct push *p, json_int_t n) {
        for (uint64_t give_up = now_usec(CLOCK_MONOTONIC) + 30 * 1000000;
             status_int(p, "requests", "ok") < n && now_usec(CLOCK_MONOTONIC) < give_up;)
                usleep(10000);
}

struct readers {
        struct push *push;
        atomic_bool done;
        atomic_uint rounds;
};

static void *read_figures(void *userdata) {
        struct readers *r = userdata;

        while (!atomic_load(&r->done)) {
                struct prom_writer *w = prom_writer_new();
                struct strbuf out = STRBUF_INIT;
                json_t *st = push_status_json(r->push);

                push_write_metrics(r->push, w);
                prom_render(w, PROM_FORMAT_TEXT, &out);
                assert_non_null(strstr(out.buf, "armprofd_push_requests_total{result=\"ok\"}"));
                strbuf_done(&out);
                prom_writer_free(w);
                json_decref(st);
                atomic_fetch_add(&r->rounds, 1);
        }
        return NULL;
}

/*
 * Failures of every kind the thread retries: the request that failed goes
 * again, the later ones wait behind it in the spool, and the store ends up
 * with each exactly once, in order. Readers take the figures meanwhile.
 */
static void test_retries_keep_order(void **state) {
        static const int script[] = { 500, 503, 429, ANSWER_CLOSE, 408 };
        struct fixture *f = *state;
        struct counter c = { .limit = 6 };
        struct readers r = {};
        pthread_t readers[2];
        struct push_options o;
        char err[512];

        store_start(&f->store, script, ELEMENTSOF(script));
        o = options(f, 100 * 1000);
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &r.push, err, sizeof(err)),
                         0);
        for (size_t i = 0; i < ELEMENTSOF(readers); i++)
                assert_int_equal(pthread_create(&readers[i], NULL, read_figures, &r), 0);
        assert_int_equal(push_start(r.push), 0);

        wait_delivered(&f->store, "request-1 request-2 request-3 request-4 request-5 request-6");
        wait_ok(r.push, 6);
        /* Every failure was request-1's: nothing overtakes a request that waits. */
        for (size_t i = 0; i < ELEMENTSOF(script); i++)
                assert_string_equal(f->store.requests[i].body, "request-1");
        assert_int_equal(status_int(r.push, "requests", "ok"), 6);
        assert_int_equal(status_int(r.push, "requests", "retry"), 5);
        assert_int_equal(status_int(r.push, "requests", "rejected"), 0);
        assert_int_equal(status_int(r.push, "errors", "http"), 4);
        assert_int_equal(status_int(r.push, "errors", "reset"), 1);
        assert_int_equal(status_int(r.push, "spool", "files"), 0);
        {
                const char *h = f->store.requests[0].headers;

                assert_non_null(strcasestr(h, "POST /push.v1.PusherService/Push HTTP/1.1\r\n"));
                assert_non_null(strcasestr(h, "\r\nContent-Type: application/proto"));
                assert_non_null(strcasestr(h, "\r\nConnect-Protocol-Version: 1"));
                assert_null(strcasestr(h, "\r\nAuthorization:"));
                assert_null(strcasestr(h, "\r\nX-Scope-OrgID:"));
        }

        atomic_store(&r.done, true);
        for (size_t i = 0; i < ELEMENTSOF(readers); i++)
                pthread_join(readers[i], NULL);
        assert_true(atomic_load(&r.rounds) > 0);
        push_free(r.push);
        assert_int_equal(atomic_load(&c.finals), 1);
        store_stop(&f->store);
}

/* A 4xx other than 408 and 429 is final: logged, counted, never sent again; the next ones still go. */
static void test_rejected_not_resent(void **state) {
        static const int script[] = { 400 };
        struct fixture *f = *state;
        struct counter c = { .limit = 3 };
        struct push *p;
        struct push_options o;
        char err[512];
        json_t *st;

        store_start(&f->store, script, ELEMENTSOF(script));
        o = options(f, 100 * 1000);
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         0);
        assert_int_equal(push_start(p), 0);
        wait_delivered(&f->store, "request-2 request-3");
        wait_ok(p, 2);
        st = push_status_json(p);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "requests"), "rejected")), 1);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "spool"), "files")), 0);
        assert_non_null(strstr(json_string_value(json_object_get(st, "last_error")), "HTTP 400"));
        assert_non_null(strstr(json_string_value(json_object_get(st, "last_error")), "bad profile"));
        json_decref(st);
        push_free(p);
        /* Three requests, request-1 once: a refusal is never sent again. */
        assert_int_equal(f->store.n_requests, 3);
        assert_string_equal(f->store.requests[0].body, "request-1");
        store_stop(&f->store);
}

/*
 * A store that hangs: the stop waits at most the timeout, and the request
 * that did not get through is in the spool for the next start, which sends
 * it first, the same bytes.
 */
static void test_stop_spools_what_hangs(void **state) {
        static const int script[] = { ANSWER_HANG };
        struct fixture *f = *state;
        struct counter c = { .limit = 1 };
        struct push_options o;
        struct push *p;
        char err[512];

        store_start(&f->store, script, ELEMENTSOF(script));
        o = options(f, 100 * 1000);
        o.timeout_usec = 300 * 1000;
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         0);
        assert_int_equal(push_start(p), 0);
        while (({
                pthread_mutex_lock(&f->store.lock);
                size_t n = f->store.n_requests;
                pthread_mutex_unlock(&f->store.lock);
                n;
        }) == 0)
                usleep(10000);
        push_free(p);
        store_stop(&f->store);

        {
                struct push_spool *s;
                struct push_spool_entry e = {};

                assert_int_equal(push_spool_open(f->spool, 1 << 20, &s, err, sizeof(err)), 0);
                assert_int_equal(push_spool_oldest(s, &e), 0);
                assert_int_equal(e.body.len, strlen("request-1"));
                assert_memory_equal(e.body.buf, "request-1", e.body.len);
                push_spool_entry_done(&e);
                push_spool_free(s);
        }

        store_start(&f->store, NULL, 0);
        o = options(f, 100 * 1000);
        c = (struct counter) { .limit = 0 };
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         0);
        assert_int_equal(push_start(p), 0);
        wait_delivered(&f->store, "request-1");
        push_free(p);
        store_stop(&f->store);
}

/* Credentials and the tenant reach the store; the secret is nowhere in /status. */
static void test_auth_and_secrets(void **state) {
        struct fixture *f = *state;
        struct counter c = { .limit = 1 };
        char path[128], err[512], *text;
        struct push_options o;
        struct push *p;
        json_t *st;
        FILE *fp;

        snprintf(path, sizeof(path), "%s/password", f->dir);
        fp = fopen(path, "w");
        assert_non_null(fp);
        fputs("s3cret-Pa55\n", fp);
        fclose(fp);

        store_start(&f->store, NULL, 0);
        o = options(f, 100 * 1000);
        o.basic_auth_user = "123456";
        o.basic_auth_password_file = path;
        o.tenant = "team-a";
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         0);
        assert_int_equal(push_start(p), 0);
        wait_delivered(&f->store, "request-1");
        /* base64("123456:s3cret-Pa55"), RFC 7617 */
        assert_non_null(strcasestr(f->store.requests[0].headers, "\r\nAuthorization: Basic MTIzNDU2OnMzY3JldC1QYTU1"));
        assert_non_null(strcasestr(f->store.requests[0].headers, "\r\nX-Scope-OrgID: team-a"));
        st = push_status_json(p);
        text = json_dumps(st, JSON_COMPACT);
        json_decref(st);
        assert_null(strstr(text, "s3cret"));
        assert_non_null(strstr(text, "\"auth\":\"basic\""));
        free(text);
        push_free(p);
        store_stop(&f->store);

        /* A missing password file, a relative URL, a spool under a file: each refused, naming the key. */
        o.basic_auth_password_file = "/nonexistent/password";
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         -ENOENT);
        assert_non_null(strstr(err, "[push] basic_auth_password_file '/nonexistent/password'"));
        o.basic_auth_password_file = path;
        o.url = "ftp://127.0.0.1/";
        assert_int_equal(push_check(&o, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "[push] url"));
        o = options(f, 100 * 1000);
        o.spool_dir = path; /* a regular file */
        assert_true(push_check(&o, err, sizeof(err)) < 0);
        assert_non_null(strstr(err, "[push] spool_dir"));
}

/* A file the spool cannot read, which push_new() counts as dropped_corrupt when it opens the spool. */
static void write_corrupt(struct fixture *f, unsigned seq) {
        char path[160];
        FILE *fp;

        assert_int_equal(mkdir(f->spool, 0700) == 0 || errno == EEXIST, 1);
        snprintf(path, sizeof(path), "%s/%016x.req", f->spool, seq);
        fp = fopen(path, "w");
        assert_non_null(fp);
        fputs("not a spooled request", fp);
        fclose(fp);
}

static uint64_t metric_value(struct push *p, const char *series) {
        struct prom_writer *w = prom_writer_new();
        struct strbuf out = STRBUF_INIT;
        char needle[128];
        const char *line;
        uint64_t v;

        push_write_metrics(p, w);
        prom_render(w, PROM_FORMAT_TEXT, &out);
        /* A sample's line (the metric name first), not the # HELP line naming its family. */
        snprintf(needle, sizeof(needle), "\n%s", series);
        line = strstr(out.buf, needle);
        assert_non_null(line);
        v = strtoull(line + strlen(needle), NULL, 10);
        strbuf_done(&out);
        prom_writer_free(w);
        return v;
}

/*
 * A reload replaces the push and opens the spool anew: the counters go on
 * from where the previous push left them (the spool's drops included, which
 * each opening counts from 0), and /status keeps the last success.
 */
static void test_history_outlives_the_push(void **state) {
        static const int script[] = { 500 };
        struct fixture *f = *state;
        struct counter c = { .limit = 2 };
        struct push_options o;
        struct push *p;
        char err[512];
        json_t *st;

        write_corrupt(f, 1);
        store_start(&f->store, script, ELEMENTSOF(script));
        o = options(f, 100 * 1000);
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         0);
        assert_int_equal(push_start(p), 0);
        wait_delivered(&f->store, "request-1 request-2");
        wait_ok(p, 2);
        push_free_now(p);
        store_stop(&f->store);

        write_corrupt(f, 2);
        store_start(&f->store, NULL, 0);
        c = (struct counter) { .limit = 1 };
        o = options(f, 100 * 1000);
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         0);
        assert_int_equal(push_start(p), 0);
        wait_delivered(&f->store, "request-1");
        wait_ok(p, 3);
        /* Two stores answered 200 three times, one 500 once; each opening found one bad file. */
        assert_int_equal(status_int(p, "requests", "ok"), 3);
        assert_int_equal(status_int(p, "requests", "retry"), 1);
        assert_int_equal(status_int(p, "errors", "http"), 1);
        assert_int_equal(metric_value(p, "armprofd_push_requests_total{result=\"ok\"} "), 3);
        assert_int_equal(metric_value(p, "armprofd_push_spool_dropped_total{reason=\"corrupt\"} "), 2);
        assert_int_equal(metric_value(p, "armprofd_push_duration_seconds_count "), 4);
        assert_int_equal(metric_value(p, "armprofd_push_bytes_total "),
                         2 * strlen("request-1") + strlen("request-2"));
        st = push_status_json(p);
        assert_true(json_integer_value(json_object_get(st, "last_success_unix_ms")) > 0);
        assert_non_null(strstr(json_string_value(json_object_get(st, "last_error")), "HTTP 500"));
        json_decref(st);
        push_free(p);
        store_stop(&f->store);
}

/*
 * A store slower than the timeout (1 s) that keeps what it reads, answering
 * after 1.2 s: the attempt after a timeout may take twice as long, so the
 * store gets request-1 twice, not once per attempt; the deadline stays long
 * while answers come late (request-2 once) and returns to the timeout after
 * one in time (request-3), so request-4 times out once more.
 */
static void test_timeout_lengthens_the_next_attempt(void **state) {
        static const int script[] = { ANSWER_LATE, ANSWER_LATE, ANSWER_LATE, 200, ANSWER_LATE, ANSWER_LATE };
        struct fixture *f = *state;
        struct counter c = { .limit = 4 };
        struct push_options o;
        struct push *p;
        char err[512], got[512];

        store_start(&f->store, script, ELEMENTSOF(script));
        o = options(f, 100 * 1000);
        o.timeout_usec = 1000 * 1000;
        o.timeout_max_usec = 4 * o.timeout_usec;
        assert_int_equal(push_new(&o, &(struct push_source) { count_build, &c }, f->history, &p, err, sizeof(err)),
                         0);
        assert_int_equal(push_start(p), 0);
        wait_ok(p, 4);
        /* What the push saw: two timeouts, four deliveries. */
        assert_int_equal(status_int(p, "errors", "timeout"), 2);
        assert_int_equal(status_int(p, "requests", "ok"), 4);
        push_free(p);
        received(&f->store, got, sizeof(got));
        store_stop(&f->store);
        assert_string_equal(got, "request-1 request-1 request-2 request-3 request-4 request-4");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_retries_keep_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rejected_not_resent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_spools_what_hangs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_auth_and_secrets, setup, teardown),
                cmocka_unit_test_setup_teardown(test_history_outlives_the_push, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timeout_lengthens_the_next_attempt, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
