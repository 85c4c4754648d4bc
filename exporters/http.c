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

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <microhttpd.h>
#include <zlib.h>

#include "basic-auth.h"
#include "log.h"
#include "macro.h"
#include "negotiate.h"
#include "prom.h"
#include "thread-names.h"
#include "thread-prio.h"
#include "web-config.h"

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

/*
 * A request's headers must be complete this long after the connection was
 * accepted (on a kept-alive connection: after the previous answer plus the
 * idle timeout). Each byte received resets MHD's idle timeout, so without
 * this a client sending a byte a second would hold its slot for ever.
 */
#define HTTP_HEADER_DEADLINE_USEC (5 * USEC_PER_SEC)
/*
 * MHD keeps a request's header bytes, and a record for each header field,
 * query argument and cookie (struct MHD_HTTP_Header, 64 bytes with the
 * pool's alignment), in the connection's memory pool, and builds our
 * answer's header in what is left. A request that leaves too little gets no
 * answer at all, just a closed connection (MHD 0.9.75 connection.c,
 * MHD_CONNECTION_START_REPLY). So the pool holds max_request_bytes of
 * headers, HTTP_MAX_FIELDS records and HTTP_RESPONSE_HEADROOM; a request
 * beyond either limit is refused with a 431 written past the pool.
 */
#define HTTP_MAX_FIELDS 256
#define HTTP_FIELD_POOL_BYTES 64
#define HTTP_RESPONSE_HEADROOM 4096
/* How long a stop waits for the 503s of the deferred requests it cuts short. */
#define HTTP_STOP_GRACE_USEC (1 * USEC_PER_SEC)
/*
 * Credentials waiting for their bcrypt (tens of milliseconds each, one at a
 * time on the auth thread, never on the server's): beyond, a 503.
 */
#define HTTP_AUTH_QUEUE_MAX 32
/*
 * Servers replaced by a reload that changed TLS, still answering what they
 * had accepted: a reload beyond this many waits for them (it fails).
 */
#define HTTP_RETIRING_MAX 4
#define HTTP_AUTH_REALM "Basic realm=\"armprofd\", charset=\"UTF-8\""

enum auth_state {
        AUTH_UNKNOWN,
        AUTH_PENDING, /* its bcrypt is queued or running */
        AUTH_OK,
        AUTH_REFUSED,
};

/* Per-request context (MHD's *con_cls). */
struct conn_ctx {
        void *state;   /* the handler's, across deferrals */
        struct strbuf body; /* a POST's, for a route that takes one (http_route.max_body) */
        bool body_over;     /* it went over the route's max_body: dropped, a 413 */
        bool deferred; /* suspended once: counted in n_deferred_open until completed */
        enum auth_state auth; /* under the server's lock */
};

/* Credentials for the auth thread: the connection waits, suspended. */
struct auth_job {
        struct MHD_Connection *connection;
        struct conn_ctx *ctx;
        struct web_config *web; /* a reference */
        char *user, *password;
};

/* A suspended connection and when to resume it. */
struct deferral {
        struct MHD_Connection *connection;
        uint64_t due_usec;
};

enum conn_state {
        CONN_READING, /* accepted, or between requests: no complete request yet */
        CONN_ACTIVE,  /* being answered */
        CONN_WAITING, /* suspended until its deferral is due */
        CONN_IDLE,    /* answered, kept alive for a next request */
        _CONN_STATE_MAX,
};

static const char *const conn_state_names[_CONN_STATE_MAX] = {
        [CONN_READING] = "reading",
        [CONN_ACTIVE] = "active",
        [CONN_WAITING] = "waiting",
        [CONN_IDLE] = "idle",
};

enum close_reason {
        CLOSE_HEADER_DEADLINE, /* no complete request in time */
        CLOSE_EVICTED,         /* one without a request in progress (conn_victim()), to make room for a new one */
        CLOSE_REFUSED,         /* a new one from an address at its limit, with nothing to evict */
        CLOSE_RELOAD,          /* idle on a server a reload replaced: the client reconnects to the new one */
        _CLOSE_REASON_MAX,
};

static const char *const close_reason_names[_CLOSE_REASON_MAX] = {
        [CLOSE_HEADER_DEADLINE] = "header_deadline",
        [CLOSE_EVICTED] = "evicted",
        [CLOSE_REFUSED] = "refused",
        [CLOSE_RELOAD] = "reload",
};

/* One client connection, from MHD's notice of its start to that of its end (its socket context). */
struct conn {
        struct conn *prev, *next; /* http_server.conns: in the order they entered their state */
        int fd;                   /* MHD's; valid until the close notice, which comes before close() */
        struct MHD_Daemon *mhd;   /* the server that accepted it (a reload may have replaced it) */
        uint8_t addr[sizeof(struct in6_addr)]; /* the client's address, IPv4 as ::ffff:a.b.c.d */
        enum conn_state state;
        uint64_t deadline_usec; /* CONN_READING, CONN_IDLE: shut down then */
        bool closing;           /* shut down by us; MHD closes it on its next turn */
};

struct http_server {
        struct MHD_Daemon *mhd; /* accepting; under lock (a reload replaces it) */
        int listen_fd;
        const struct http_route *routes;
        size_t n_routes;
        void *userdata;
        char address[LISTEN_ADDR_STR_MAX];
        unsigned max_connections, per_ip_connections, reserve;
        uint64_t idle_usec;
        size_t max_request_bytes;
        bool detail_any;
        struct basic_auth *auth;

        pthread_mutex_t lock; /* guards everything below */
        struct web_config *web; /* TLS, users, headers, rate limit (NULL: none); a reload swaps it */
        /* Servers a reload replaced, stopped by the timer thread once their last connection is gone. */
        struct {
                struct MHD_Daemon *mhd;
                struct web_config *web; /* what it was started with */
        } retiring[HTTP_RETIRING_MAX];
        size_t n_retiring;
        /* rate_limit: a token bucket (the toolkit's rate.Limiter), refilled one token per interval. */
        uint64_t rate_tokens_usec; /* tokens x interval, capped at burst x interval */
        uint64_t rate_at_usec;

        struct http_counter counters[HTTP_MAX_COUNTERS];
        size_t n_counters;

        /* Every connection MHD holds; those not closing number n_live. */
        struct conn *conns, *conns_tail;
        size_t n_live;
        uint64_t closed[_CLOSE_REASON_MAX];

        /*
         * The timer thread resumes suspended connections when they are due (at
         * most one deferral per connection) and shuts down connections past
         * their header deadline. It sleeps until timer_due.
         */
        pthread_t timer;
        bool timer_started, stopping;
        pthread_cond_t wake;
        uint64_t timer_due;
        struct deferral *deferrals;
        size_t n_deferrals, max_deferrals;
        /* Requests ever deferred and not completed yet; a stop waits for them on `drained`. */
        size_t n_deferred_open;
        pthread_cond_t drained;

        /* The auth thread: bcrypt for credentials the cache does not know. */
        pthread_t auth_thread;
        bool auth_started;
        pthread_cond_t auth_wake;
        struct auth_job auth_jobs[HTTP_AUTH_QUEUE_MAX];
        size_t n_auth_jobs;
};

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static void conn_link_tail(struct http_server *s, struct conn *c) {
        c->next = NULL;
        c->prev = s->conns_tail;
        if (s->conns_tail)
                s->conns_tail->next = c;
        else
                s->conns = c;
        s->conns_tail = c;
}

static void conn_unlink(struct http_server *s, struct conn *c) {
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                s->conns_tail = c->prev;
        c->prev = c->next = NULL;
}

/* A connection we may close without cutting an answer short. Under s->lock. */
static bool conn_evictable(const struct conn *c) {
        return !c->closing && c->fd >= 0 && (c->state == CONN_READING || c->state == CONN_IDLE);
}

/*
 * shutdown() wakes MHD's epoll on the socket; MHD then reads end-of-file and
 * closes the connection itself. The fd is still MHD's open socket: MHD tells
 * us of a close (taking s->lock) before it close()s the fd. Under s->lock.
 */
static void conn_shutdown(struct http_server *s, struct conn *c, enum close_reason reason) {
        (void) shutdown(c->fd, SHUT_RDWR);
        c->closing = true;
        s->n_live--;
        s->closed[reason]++;
}

/* Under s->lock. */
static void timer_wake_by(struct http_server *s, uint64_t due_usec) {
        if (due_usec < s->timer_due) {
                s->timer_due = due_usec;
                pthread_cond_signal(&s->wake);
        }
}

/* Whether a reload replaced the server that accepted c. Under s->lock. */
static bool conn_retiring(const struct http_server *s, const struct conn *c) {
        for (size_t i = 0; i < s->n_retiring; i++)
                if (c->mhd == s->retiring[i].mhd)
                        return true;
        return false;
}

/* Under s->lock. */
static void conn_set_state(struct http_server *s, struct conn *c, enum conn_state state) {
        if (!c || c->state == state)
                return;
        c->state = state;
        if (state == CONN_IDLE && !c->closing && conn_retiring(s, c)) {
                /* Answered on a server a reload replaced: the next request goes to the new one. */
                conn_shutdown(s, c, CLOSE_RELOAD);
                return;
        }
        if (state == CONN_IDLE) {
                /* MHD's idle timeout closes a silent one; the deadline a trickling one. */
                c->deadline_usec = mono_usec() + s->idle_usec + HTTP_HEADER_DEADLINE_USEC;
                conn_unlink(s, c);
                conn_link_tail(s, c);
                timer_wake_by(s, c->deadline_usec);
        }
}

static struct conn *conn_of(struct MHD_Connection *connection) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return i ? i->socket_context : NULL;
}

/*
 * Takes the servers a reload replaced that have no connection left out of
 * s->retiring, into ret (HTTP_RETIRING_MAX of them). Under s->lock.
 */
static size_t take_drained(struct http_server *s, struct MHD_Daemon **ret_mhd, struct web_config **ret_web) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_retiring;) {
                bool busy = false;

                for (const struct conn *c = s->conns; c && !busy; c = c->next)
                        busy = c->mhd == s->retiring[i].mhd;
                if (busy) {
                        i++;
                        continue;
                }
                ret_mhd[n] = s->retiring[i].mhd;
                ret_web[n++] = s->retiring[i].web;
                s->retiring[i] = s->retiring[--s->n_retiring];
        }
        return n;
}

static void *timer_main(void *userdata) {
        struct http_server *s = userdata;
        struct MHD_Connection **due = xcalloc(s->max_deferrals + 1, sizeof(*due));
        bool stopping = false;

        thread_prio_answer_self();
        while (!stopping) {
                uint64_t now = mono_usec(), next = UINT64_MAX;
                struct MHD_Daemon *drained_mhd[HTTP_RETIRING_MAX];
                struct web_config *drained_web[HTTP_RETIRING_MAX];
                size_t n_due = 0, n_drained;

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
                for (struct conn *c = s->conns; c; c = c->next) {
                        if (!conn_evictable(c))
                                continue;
                        if (c->deadline_usec <= now)
                                conn_shutdown(s, c, CLOSE_HEADER_DEADLINE);
                        else
                                next = MIN(next, c->deadline_usec);
                }
                stopping = s->stopping;
                /* At a stop, http_server_stop() stops them, after the deferred requests are out. */
                n_drained = stopping ? 0 : take_drained(s, drained_mhd, drained_web);
                s->timer_due = next;
                if (n_due == 0 && n_drained == 0 && !stopping) {
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
                /* No connection left, none suspended: MHD_stop_daemon() would panic on one. */
                for (size_t i = 0; i < n_drained; i++) {
                        MHD_stop_daemon(drained_mhd[i]);
                        web_config_unref(drained_web[i]);
                        log_debug("http: the server a reload replaced has answered its last request");
                }
        }
        free(due);
        return NULL;
}

/*
 * Suspends the request: MHD calls the handler again once someone resumes
 * it (the timer thread, the auth thread, a stop). Counted in
 * n_deferred_open until it completes. Under s->lock.
 */
static void suspend(struct http_server *s, struct MHD_Connection *c, struct conn_ctx *ctx) {
        MHD_suspend_connection(c);
        conn_set_state(s, conn_of(c), CONN_WAITING);
        if (!ctx->deferred) {
                ctx->deferred = true;
                s->n_deferred_open++;
        }
}

static bool defer(struct http_server *s, struct MHD_Connection *c, struct conn_ctx *ctx, uint64_t usec) {
        bool ok = false;

        pthread_mutex_lock(&s->lock);
        if (!s->stopping && s->n_deferrals < s->max_deferrals) {
                uint64_t due = mono_usec() + MIN(usec, HTTP_MAX_DEFER_USEC);

                suspend(s, c, ctx);
                s->deferrals[s->n_deferrals++] = (struct deferral) { c, due };
                timer_wake_by(s, due);
                ok = true;
        }
        pthread_mutex_unlock(&s->lock);
        return ok;
}

/*
 * Its address as an IPv6 address, IPv4 mapped into IPv6 (::ffff:a.b.c.d,
 * RFC 4291 section 2.5.5.2) so both spellings of one client compare equal.
 */
static void addr_key(const struct sockaddr *sa, uint8_t ret[static sizeof(struct in6_addr)]) {
        memset(ret, 0, sizeof(struct in6_addr));
        if (sa && sa->sa_family == AF_INET6)
                memcpy(ret, &((const struct sockaddr_in6 *) sa)->sin6_addr, sizeof(struct in6_addr));
        else if (sa && sa->sa_family == AF_INET) {
                ret[10] = ret[11] = 0xff;
                memcpy(ret + 12, &((const struct sockaddr_in *) sa)->sin_addr, sizeof(struct in_addr));
        }
}

/* Whether the client closed its end (MHD has not read the end-of-file yet). Under s->lock. */
static bool conn_peer_gone(const struct conn *c) {
        char b;
        ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/*
 * The connection to close for room (other than c; of c's address when
 * same_addr): one whose client has gone already, else the oldest idle one
 * (answered, waiting for a next request), else the oldest still waiting for
 * its request, which may be arriving. NULL: none may go. Under s->lock.
 */
static struct conn *conn_victim(struct http_server *s, const struct conn *c, bool same_addr) {
        struct conn *idle = NULL, *reading = NULL;

        for (struct conn *o = s->conns; o; o = o->next) {
                if (o == c || !conn_evictable(o) || (same_addr && memcmp(o->addr, c->addr, sizeof(c->addr)) != 0))
                        continue;
                if (conn_peer_gone(o))
                        return o;
                if (o->state == CONN_IDLE && !idle)
                        idle = o;
                else if (o->state == CONN_READING && !reading)
                        reading = o;
        }
        return idle ?: reading;
}

/*
 * A new connection is in; make the room the limits ask for. Under s->lock.
 *
 * Per address: over per_ip_connections, that address's connection whose
 * client has gone, else its oldest idle one, else its oldest one still
 * waiting for a request, is closed (conn_victim()), else the new one. An
 * address can only crowd out itself, and its latest client, likely the one
 * that matters, gets in.
 *
 * Overall: MHD refuses connections beyond max_connections; we keep `reserve`
 * of those slots free by closing one without a request in progress, chosen
 * the same way (conn_victim()), whenever fewer are free. Requests being
 * answered are never cut; deferred ones are at most max - reserve. So a new
 * client finds a slot unless every slot holds a request in progress.
 */
static void conn_admit(struct http_server *s, struct conn *c) {
        if (s->per_ip_connections > 0) {
                struct conn *victim;
                size_t same = 0;

                for (struct conn *o = s->conns; o; o = o->next)
                        same += !o->closing && memcmp(o->addr, c->addr, sizeof(c->addr)) == 0;
                if (same > s->per_ip_connections) {
                        victim = conn_victim(s, c, true);
                        if (!victim) {
                                conn_shutdown(s, c, CLOSE_REFUSED);
                                return;
                        }
                        conn_shutdown(s, victim, CLOSE_EVICTED);
                }
        }
        if (s->n_live + s->reserve > s->max_connections) {
                struct conn *victim = conn_victim(s, c, false);

                if (victim)
                        conn_shutdown(s, victim, CLOSE_EVICTED);
        }
}

static void notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe) {
        struct http_server *s = cls;
        struct conn *c = *socket_context;
        const union MHD_ConnectionInfo *fd, *addr, *daemon;

        if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
                if (!c)
                        return;
                pthread_mutex_lock(&s->lock);
                if (!c->closing)
                        s->n_live--;
                conn_unlink(s, c);
                /* Its server's last, perhaps: the timer thread stops a replaced one. */
                if (conn_retiring(s, c))
                        timer_wake_by(s, 0);
                pthread_mutex_unlock(&s->lock);
                free(c);
                *socket_context = NULL;
                return;
        }
        if (toe != MHD_CONNECTION_NOTIFY_STARTED)
                return;

        fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        addr = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        daemon = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_DAEMON);
        c = xcalloc(1, sizeof(*c));
        c->fd = fd ? fd->connect_fd : -1;
        c->mhd = daemon ? daemon->daemon : NULL;
        addr_key(addr ? addr->client_addr : NULL, c->addr);
        c->state = CONN_READING;
        c->deadline_usec = mono_usec() + HTTP_HEADER_DEADLINE_USEC;

        pthread_mutex_lock(&s->lock);
        conn_link_tail(s, c);
        s->n_live++;
        conn_admit(s, c);
        timer_wake_by(s, c->deadline_usec);
        pthread_mutex_unlock(&s->lock);
        *socket_context = c;
}

static void request_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                              enum MHD_RequestTerminationCode toe) {
        struct http_server *s = cls;
        struct conn_ctx *ctx = *con_cls;

        pthread_mutex_lock(&s->lock);
        conn_set_state(s, conn_of(c), CONN_IDLE);
        if (ctx && ctx->deferred && --s->n_deferred_open == 0)
                pthread_cond_broadcast(&s->drained);
        pthread_mutex_unlock(&s->lock);
        if (!ctx)
                return;
        free(ctx->state);
        strbuf_done(&ctx->body);
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

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                 const char *value, size_t value_size) {
        struct arg_check *c = cls;

        /* "?&&" gives empty names without values: nothing was asked. */
        if (isempty(key) && isempty(value))
                return MHD_YES;
        /* A decoded %00 would cut the name or value short: "limit%00x=3" is not "limit=3". */
        if (strlen(key) != key_size || (value && strlen(value) != value_size)) {
                c->bad = key;
                c->error = -EBADMSG;
                return MHD_NO;
        }
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
        MHD_get_connection_values_n(req->connection, MHD_GET_ARGUMENT_KIND, check_arg, &c);
        if (c.error < 0) {
                *ret_bad = c.bad;
                return c.error;
        }
        memcpy(ret_values, values, n * sizeof(*values));
        return 0;
}

static enum MHD_Result append_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                  const char *value, size_t value_size) {
        struct strbuf *out = cls;

        if (out->len > 0)
                strbuf_putc(out, '&');
        strbuf_append(out, key, key_size);
        if (value) {
                strbuf_putc(out, '=');
                strbuf_append(out, value, value_size);
        }
        return MHD_YES;
}

void http_request_query_text(const struct http_request *req, struct strbuf *out) {
        MHD_get_connection_values_n(req->connection, MHD_GET_ARGUMENT_KIND, append_arg, out);
}

void http_response_error(struct http_response *resp, unsigned status, const char *fmt, ...) {
        char msg[MESSAGE_MAX];
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
        if (!o) {
                /* Not UTF-8 (a parameter's bytes quoted back): the message with them as \xNN. */
                char esc[MESSAGE_MAX];

                escape_bytes(esc, sizeof(esc), msg, strlen(msg));
                o = json_pack("{s:s, s:i}", "error", esc, "status", (int) status);
        }
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
                char code[DECIMAL_STR_MAX(unsigned)];

                snprintf(code, sizeof(code), "%u", s->counters[i].code);
                prom_sample_u64(w,
                                (const char *const[]) { "handler", s->counters[i].handler,
                                                        "code", code, NULL },
                                s->counters[i].count);
        }
        {
                size_t n[_CONN_STATE_MAX] = {};

                for (const struct conn *c = s->conns; c; c = c->next)
                        if (!c->closing)
                                n[c->state]++;
                prom_family(w, "armprofd_http_connections", PROM_GAUGE,
                            "Open HTTP connections by state: reading (no complete request yet), active, "
                            "waiting (a deferred answer), idle (kept alive).");
                for (size_t i = 0; i < _CONN_STATE_MAX; i++)
                        prom_sample_u64(w, (const char *const[]) { "state", conn_state_names[i], NULL }, n[i]);
        }
        prom_family(w, "armprofd_http_connections_closed_total", PROM_COUNTER,
                    "HTTP connections the server closed: header_deadline (no complete request in time), "
                    "evicted (no request in progress: its client gone, else the oldest idle, to make room), "
                    "refused (its address at its limit), "
                    "reload (idle on a server a reload replaced).");
        for (size_t i = 0; i < _CLOSE_REASON_MAX; i++)
                prom_sample_u64(w, (const char *const[]) { "reason", close_reason_names[i], NULL }, s->closed[i]);
        pthread_mutex_unlock(&s->lock);

        {
                struct basic_auth_stats st;

                basic_auth_get_stats(s->auth, &st);
                prom_write_counter_rows(w, (const struct prom_counter_row[]) {
                        { "armprofd_http_auth_bcrypts_total",
                          "Basic authentication verdicts computed (a bcrypt each), not found in the cache.",
                          NULL, NULL, st.bcrypts },
                        { "armprofd_http_auth_cache_hits_total", "Basic authentication verdicts found in the cache.",
                          NULL, NULL, st.hits },
                        { "armprofd_http_auth_cache_evictions_total",
                          "Basic authentication verdicts dropped from the full cache (BASIC_AUTH_CACHE_SIZE).",
                          NULL, NULL, st.evictions },
                }, 3);
        }
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

/* allow: the Allow header of a 405 (RFC 9110 §15.5.6), or NULL. */
static enum MHD_Result queue(struct MHD_Connection *c, struct http_response *resp, const char *allow,
                              const struct web_config *web) {
        struct MHD_Response *response;
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
        response = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(body);
                return MHD_NO;
        }
        if (resp->content_type)
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
        MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
        if (allow)
                MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);
        if (gzipped)
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        if (resp->gzip_ok || resp->negotiated)
                MHD_add_response_header(response, MHD_HTTP_HEADER_VARY,
                                        resp->gzip_ok && resp->negotiated ? "Accept, Accept-Encoding"
                                        : resp->gzip_ok                   ? "Accept-Encoding"
                                                                          : "Accept");
        if (resp->status == MHD_HTTP_UNAUTHORIZED)
                MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, HTTP_AUTH_REALM);
        if (resp->security_policy) {
                MHD_add_response_header(response, "Content-Security-Policy", resp->security_policy);
                MHD_add_response_header(response, "X-Frame-Options", "DENY");
                MHD_add_response_header(response, "Referrer-Policy", "no-referrer");
        }
        /* http_server_config.headers; X-Content-Type-Options is always there (its one allowed value). */
        for (size_t i = 0; web && i < web->n_headers; i++)
                if (!streq(web->headers[i].name, "X-Content-Type-Options"))
                        MHD_add_response_header(response, web->headers[i].name, web->headers[i].value);
        ret = MHD_queue_response(c, resp->status, response);
        MHD_destroy_response(response);
        return ret;
}

/*
 * Writes a whole answer on the connection's socket, bypassing MHD, for when
 * its memory pool may have no room to build one; the caller then returns
 * MHD_NO and MHD closes the connection. MHD has written nothing of this
 * request: it reads a request only once the previous answer is out.
 */
static void answer_raw(struct MHD_Connection *connection, const struct http_response *resp, bool head) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct strbuf out = STRBUF_INIT;

        const union MHD_ConnectionInfo *tls = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);

        /* Under TLS the socket carries records, not text: the connection just closes. */
        if (!fd || (tls && tls->tls_session))
                return;
        strbuf_printf(&out,
                      "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
                      resp->status, MHD_get_reason_phrase_for(resp->status), resp->content_type, resp->body.len);
        if (!head)
                strbuf_append(&out, resp->body.buf, resp->body.len);
        /* The socket's send buffer is empty at this point: a few hundred bytes fit. */
        (void) send(fd->connect_fd, out.buf, out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        strbuf_done(&out);
}

/* The request's headers are over our limits (see HTTP_MAX_FIELDS): a message saying which, or NULL. */
static const char *request_too_large(const struct http_server *s, struct MHD_Connection *c, char *buf,
                                     size_t len) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        int fields = MHD_get_connection_values(
                c, (enum MHD_ValueKind) (MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND | MHD_COOKIE_KIND), NULL, NULL);

        if (i && i->header_size > s->max_request_bytes)
                snprintf(buf, len, "request headers of %zu bytes, more than max_request_size (%zu)",
                         i->header_size, s->max_request_bytes);
        else if (fields > HTTP_MAX_FIELDS)
                snprintf(buf, len, "%d header fields, query arguments and cookies, more than %d", fields,
                         HTTP_MAX_FIELDS);
        else
                return NULL;
        return buf;
}

static bool server_stopping(struct http_server *s) {
        bool stopping;

        pthread_mutex_lock(&s->lock);
        stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        return stopping;
}

static void set_state(struct http_server *s, struct MHD_Connection *connection, enum conn_state state) {
        pthread_mutex_lock(&s->lock);
        conn_set_state(s, conn_of(connection), state);
        pthread_mutex_unlock(&s->lock);
}

bool http_client_is_loopback(const struct sockaddr *sa) {
        if (!sa)
                return false;
        switch (sa->sa_family) {
        case AF_UNIX:
                return true;
        case AF_INET:
                return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
        case AF_INET6: {
                const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;

                return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
        }
        default:
                return false;
        }
}

/* A detail route and a client that may not see it: the 403 says what opens it. */
static bool detail_refused(const struct http_server *s, const struct http_route *route,
                           struct MHD_Connection *connection, bool authenticated, struct http_response *resp) {
        const union MHD_ConnectionInfo *addr;

        if (!route->detail || s->detail_any || authenticated)
                return false;
        addr = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (addr && http_client_is_loopback(addr->client_addr))
                return false;
        http_response_error(resp, MHD_HTTP_FORBIDDEN,
                            "%s serves per-process detail (code and data addresses, per-CPU figures) to "
                            "clients on this host only; [http] detail = any in /etc/armprofd/armprofd.conf "
                            "serves it to every client, and authentication in [http] web_config (basic_auth_users "
                            "or client_auth_type RequireAndVerifyClientCert) to authenticated clients",
                            route->path);
        return true;
}

/* rate_limit: whether a request may go on now (a token is taken). Under s->lock. */
static bool rate_allow(struct http_server *s, const struct web_config *web) {
        uint64_t now = mono_usec(), cap;

        if (!web || web->rate_interval_usec == 0)
                return true;
        cap = (uint64_t) web->rate_burst * web->rate_interval_usec;
        if (s->rate_at_usec == 0)
                s->rate_tokens_usec = cap;
        else
                s->rate_tokens_usec = MIN(cap, s->rate_tokens_usec + (now - s->rate_at_usec));
        s->rate_at_usec = now;
        if (s->rate_tokens_usec < web->rate_interval_usec)
                return false;
        s->rate_tokens_usec -= web->rate_interval_usec;
        return true;
}

/* Whether the certificate's subject alternative names include one of client_allowed_sans. */
static bool san_allowed(const struct web_tls *t, const gnutls_datum_t *der) {
        gnutls_x509_crt_t crt;
        bool ok = false;

        if (gnutls_x509_crt_init(&crt) < 0)
                return false;
        if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER) < 0)
                goto out;
        for (unsigned i = 0; !ok; i++) {
                char san[WEB_CONFIG_VALUE_MAX], ip[INET6_ADDRSTRLEN];
                size_t size = sizeof(san) - 1;
                const char *v = san;
                int type = gnutls_x509_crt_get_subject_alt_name(crt, i, san, &size, NULL);

                if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
                        break;
                if (type < 0)
                        continue; /* too long for any allowed name, or unreadable */
                san[size] = '\0';
                /* Go compares IP addresses in their printed form. */
                if (type == GNUTLS_SAN_IPADDRESS) {
                        if (!inet_ntop(size == 4 ? AF_INET : AF_INET6, san, ip, sizeof(ip)))
                                continue;
                        v = ip;
                } else if (strlen(san) != size)
                        continue;
                for (size_t j = 0; j < t->n_allowed_sans && !ok; j++)
                        ok = streq(t->allowed_sans[j], v);
        }
out:
        gnutls_x509_crt_deinit(crt);
        return ok;
}

/*
 * client_auth_type, checked once the handshake is done: MHD asks for a
 * certificate and leaves the verdict to us. A reason to refuse, or NULL.
 */
static const char *client_cert_refused(const struct web_config *web, struct MHD_Connection *connection) {
        const union MHD_ConnectionInfo *i;
        const gnutls_datum_t *peers;
        unsigned n = 0, status = 0;

        if (!web || !web->tls.enabled || web->tls.client_auth == WEB_CLIENT_AUTH_NONE ||
            web->tls.client_auth == WEB_CLIENT_AUTH_REQUEST)
                return NULL;
        i = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (!i || !i->tls_session)
                return "no TLS session";
        peers = gnutls_certificate_get_peers(i->tls_session, &n);
        if (!peers || n == 0)
                return web->tls.client_auth == WEB_CLIENT_AUTH_VERIFY_IF_GIVEN
                               ? NULL
                               : "a client certificate is required (tls_server_config client_auth_type)";
        if (web->tls.client_auth == WEB_CLIENT_AUTH_REQUIRE_ANY)
                return NULL;
        if (gnutls_certificate_verify_peers2(i->tls_session, &status) < 0 || status != 0)
                return "the client certificate is not valid: not signed by client_ca_file, expired or not "
                       "for client authentication";
        if (web->tls.n_allowed_sans > 0 && !san_allowed(&web->tls, &peers[0]))
                return "the client certificate names none of client_allowed_sans";
        return NULL;
}

/*
 * Hands credentials to the auth thread and suspends the connection until
 * their verdict is in (ctx->auth). False when the queue is full.
 */
static bool auth_enqueue(struct http_server *s, struct MHD_Connection *connection, struct conn_ctx *ctx,
                         struct web_config *web, const char *user, const char *password) {
        bool ok = false;

        pthread_mutex_lock(&s->lock);
        if (!s->stopping && s->n_auth_jobs < HTTP_AUTH_QUEUE_MAX) {
                suspend(s, connection, ctx);
                s->auth_jobs[s->n_auth_jobs++] = (struct auth_job) {
                        .connection = connection,
                        .ctx = ctx,
                        .web = web_config_ref(web),
                        .user = xstrdup(user),
                        .password = xstrdup(password),
                };
                ctx->auth = AUTH_PENDING;
                pthread_cond_signal(&s->auth_wake);
                ok = true;
        }
        pthread_mutex_unlock(&s->lock);
        return ok;
}

static void *auth_main(void *userdata) {
        struct http_server *s = userdata;

        thread_prio_answer_self();
        pthread_mutex_lock(&s->lock);
        for (;;) {
                struct auth_job job;
                bool ok;

                while (s->n_auth_jobs == 0 && !s->stopping)
                        pthread_cond_wait(&s->auth_wake, &s->lock);
                if (s->n_auth_jobs == 0)
                        break;
                job = s->auth_jobs[0];
                memmove(s->auth_jobs, s->auth_jobs + 1, --s->n_auth_jobs * sizeof(*s->auth_jobs));
                /* Stopping: answered (a 503) without a bcrypt. */
                ok = false;
                if (!s->stopping) {
                        int verdict;

                        pthread_mutex_unlock(&s->lock);
                        /* Clients that came at once with the same credentials: one bcrypt for all. */
                        verdict = basic_auth_cached(s->auth, job.web, job.user, job.password);
                        ok = verdict >= 0 ? verdict : basic_auth_verify(s->auth, job.web, job.user, job.password);
                        pthread_mutex_lock(&s->lock);
                }
                job.ctx->auth = ok ? AUTH_OK : AUTH_REFUSED;
                pthread_mutex_unlock(&s->lock);
                MHD_resume_connection(job.connection);
                explicit_bzero(job.password, strlen(job.password));
                free(job.password);
                free(job.user);
                web_config_unref(job.web);
                pthread_mutex_lock(&s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/*
 * basic_auth_users: AUTH_OK, AUTH_REFUSED, or AUTH_PENDING when the
 * connection was suspended for the auth thread (MHD calls us again).
 */
static enum auth_state check_basic_auth(struct http_server *s, struct MHD_Connection *connection,
                                        struct conn_ctx *ctx, struct web_config *web, bool *ret_busy) {
        enum auth_state state;
        char *user, *password = NULL;
        int verdict;

        /* Resumed with the verdict: taken, so that a later deferral of this request asks the cache. */
        pthread_mutex_lock(&s->lock);
        state = ctx->auth;
        if (state == AUTH_OK || state == AUTH_REFUSED)
                ctx->auth = AUTH_UNKNOWN;
        pthread_mutex_unlock(&s->lock);
        if (state == AUTH_OK || state == AUTH_REFUSED)
                return state;
        user = MHD_basic_auth_get_username_password(connection, &password);
        if (!user || !password) {
                MHD_free(user);
                MHD_free(password);
                return AUTH_REFUSED;
        }
        verdict = basic_auth_cached(s->auth, web, user, password);
        if (verdict < 0) {
                if (auth_enqueue(s, connection, ctx, web, user, password))
                        state = AUTH_PENDING;
                else {
                        *ret_busy = true;
                        state = AUTH_REFUSED;
                }
        } else
                state = verdict ? AUTH_OK : AUTH_REFUSED;
        explicit_bzero(password, strlen(password));
        MHD_free(password);
        MHD_free(user);
        return state;
}

static struct web_config *current_web(struct http_server *s) {
        struct web_config *web;

        pthread_mutex_lock(&s->lock);
        web = web_config_ref(s->web);
        pthread_mutex_unlock(&s->lock);
        return web;
}

/*
 * Who the client is, before any route: the rate limit, its certificate, its
 * password. MHD_YES/MHD_NO when answered (or suspended), -1 to go on;
 * *ret_authenticated when the web config authenticates and it passed.
 */
static int admit(struct http_server *s, struct MHD_Connection *connection, struct conn_ctx *ctx,
                 struct web_config *web, const char *handler_name, bool *ret_authenticated) {
        struct http_response resp = { .status = 200, .body = STRBUF_INIT };
        enum MHD_Result ret;
        const char *why;
        bool limited, busy = false;

        if (!web)
                return -1;
        pthread_mutex_lock(&s->lock);
        /* A resumed request took its token before it waited. */
        limited = !ctx->deferred && !rate_allow(s, web);
        pthread_mutex_unlock(&s->lock);
        if (limited)
                http_response_error(&resp, MHD_HTTP_TOO_MANY_REQUESTS, "too many requests (rate_limit in the "
                                                                       "web configuration)");
        else if ((why = client_cert_refused(web, connection)))
                http_response_error(&resp, MHD_HTTP_FORBIDDEN, "%s", why);
        else if (web->n_users > 0) {
                switch (check_basic_auth(s, connection, ctx, web, &busy)) {
                case AUTH_PENDING:
                        return MHD_YES;
                case AUTH_OK:
                        break;
                default:
                        if (busy)
                                http_response_error(&resp, MHD_HTTP_SERVICE_UNAVAILABLE,
                                                    "too many logins being checked; ask again shortly");
                        else
                                http_response_error(&resp, MHD_HTTP_UNAUTHORIZED,
                                                    "this server asks for a user and password (HTTP basic "
                                                    "authentication)");
                }
        }
        if (resp.body.len == 0) {
                *ret_authenticated = web_config_authenticates(web);
                return -1;
        }
        count_request(s, handler_name, resp.status);
        ret = queue(connection, &resp, NULL, web);
        strbuf_done(&resp.body);
        return ret;
}

/* A POST whose Content-Length is over the route's max_body (MHD refused an unreadable one already). */
static bool announced_too_large(struct MHD_Connection *connection, const struct http_route *route) {
        const char *v = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t len;

        return v && safe_atou64(v, &len) >= 0 && len > route->max_body;
}

static void body_too_large(struct http_response *resp, const struct http_route *route) {
        http_response_error(resp, MHD_HTTP_CONTENT_TOO_LARGE, "the body of a POST to %s is at most %zu bytes",
                            route->path, route->max_body);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *connection, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls) {
        struct http_server *s = cls;
        _cleanup_(web_config_unrefp) struct web_config *web = NULL;
        struct conn_ctx *ctx;
        struct http_response resp = { .status = 200, .body = STRBUF_INIT };
        const struct http_route *route;
        const char *handler_name;
        bool get, head, post, takes_body, authenticated = false;
        enum MHD_Result ret;
        int k;

        /* libmicrohttpd's thread, named by it: listed for armprofd_collector_busy_seconds_total,
         * and it answers (thread-prio.h). */
        thread_names_note_self(THREAD_NAME_HTTP);
        thread_prio_answer_self();
        route = find_route(s, url);
        handler_name = route ? route->name : "other";
        get = streq(method, MHD_HTTP_METHOD_GET);
        head = streq(method, MHD_HTTP_METHOD_HEAD);
        takes_body = route && route->max_body > 0;
        post = takes_body && streq(method, MHD_HTTP_METHOD_POST);

        /*
         * MHD calls us once after the headers and again for each body chunk
         * and at the end (microhttpd.h, MHD_AccessHandlerCallback). Answer
         * on the last call; a body is kept for a POST to a route that takes
         * one, and read and ignored otherwise.
         */
        if (*con_cls == NULL) {
                char why[MESSAGE_MAX];

                if (request_too_large(s, connection, why, sizeof(why))) {
                        set_state(s, connection, CONN_ACTIVE);
                        http_response_error(&resp, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, "%s", why);
                        count_request(s, handler_name, resp.status);
                        answer_raw(connection, &resp, head);
                        strbuf_done(&resp.body);
                        return MHD_NO;
                }
                if (post && announced_too_large(connection, route)) {
                        /* Answered before the body is read: MHD then reads none of it and closes. */
                        set_state(s, connection, CONN_ACTIVE);
                        web = current_web(s);
                        body_too_large(&resp, route);
                        count_request(s, handler_name, resp.status);
                        return queue(connection, &resp, NULL, web);
                }
                *con_cls = xcalloc(1, sizeof(struct conn_ctx));
                return MHD_YES;
        }
        ctx = *con_cls;
        if (*upload_data_size != 0) {
                if (post && !ctx->body_over) {
                        if (*upload_data_size <= route->max_body - ctx->body.len)
                                strbuf_append(&ctx->body, upload_data, *upload_data_size);
                        else {
                                /* Read to its end (the connection stays usable), kept no longer. */
                                ctx->body_over = true;
                                strbuf_done(&ctx->body);
                        }
                }
                *upload_data_size = 0;
                return MHD_YES;
        }
        web = current_web(s);
        /*
         * Only now is the request complete: until its body is in, it stays
         * "reading", under the header deadline and evictable, so a client
         * trickling a body it announced cannot hold its slot for ever.
         */
        set_state(s, connection, CONN_ACTIVE);
        if (ctx->deferred) {
                if (server_stopping(s)) {
                        /* Resumed by a stop: say so rather than close with no answer. */
                        http_response_error(&resp, MHD_HTTP_SERVICE_UNAVAILABLE,
                                            "armprofd is stopping; ask again once it is back");
                        count_request(s, handler_name, resp.status);
                        ret = queue(connection, &resp, NULL, web);
                        strbuf_done(&resp.body);
                        return ret;
                }
        }

        k = admit(s, connection, ctx, web, handler_name, &authenticated);
        if (k >= 0)
                return (enum MHD_Result) k;
        if (!get && !head && !post) {
                http_response_error(&resp, MHD_HTTP_METHOD_NOT_ALLOWED, "method %s not allowed", method);
                count_request(s, handler_name, resp.status);
                return queue(connection, &resp, takes_body ? "GET, HEAD, POST" : "GET, HEAD", web);
        }
        if (!route) {
                http_response_error(&resp, MHD_HTTP_NOT_FOUND, "no such path: %s", url);
                count_request(s, handler_name, resp.status);
                return queue(connection, &resp, NULL, web);
        }
        if (detail_refused(s, route, connection, authenticated, &resp)) {
                count_request(s, handler_name, resp.status);
                return queue(connection, &resp, NULL, web);
        }
        if (ctx->body_over) {
                body_too_large(&resp, route);
                count_request(s, handler_name, resp.status);
                return queue(connection, &resp, NULL, web);
        }

        /* HEAD runs the handler too, so Content-Length is right; MHD drops the body. */
        route->handler(s->userdata,
                       &(struct http_request) { .path = url, .method = method, .head = head,
                                                .body = post ? ctx->body.buf ?: "" : NULL,
                                                .body_len = post ? ctx->body.len : 0,
                                                .connection = connection, .server = s, .state = &ctx->state },
                       &resp);
        if (resp.defer_usec > 0) {
                strbuf_done(&resp.body);
                if (defer(s, connection, ctx, resp.defer_usec))
                        return MHD_YES; /* called again when due */
                http_response_error(&resp, 503, server_stopping(s) ? "armprofd is stopping"
                                                                   : "too many waiting requests");
        }
        count_request(s, handler_name, resp.status);
        log_debug("http: %s %s -> %u %s, %zu bytes", method, url, resp.status,
                  resp.content_type ?: "-", resp.body.len);
        ret = queue(connection, &resp, NULL, web);
        strbuf_done(&resp.body);
        return ret;
}

_printf_(2, 0) static void mhd_logger(void *cls, const char *fmt, va_list ap) {
        char msg[MESSAGE_MAX];

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

/*
 * An MHD server on s->listen_fd with the TLS of web (NULL or no TLS: plain
 * HTTP). Several may share the socket: a reload starts the new one before
 * the old one stops accepting, so no connection finds the port closed.
 */
static int start_mhd(struct http_server *s, const struct web_config *web, struct MHD_Daemon **ret) {
        unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
        struct MHD_OptionItem tls[5];
        size_t n = 0;
        struct MHD_Daemon *mhd;

        if (web && web->tls.enabled) {
                const struct web_tls *t = &web->tls;

                if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
                        log_error("http: this libmicrohttpd was built without TLS; tls_server_config cannot be served");
                        return -EOPNOTSUPP;
                }
                flags |= MHD_USE_TLS;
                tls[n++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_MEM_CERT, 0, t->cert_pem };
                tls[n++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_MEM_KEY, 0, t->key_pem };
                tls[n++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_PRIORITIES, 0, (void *) t->priorities };
                /*
                 * MHD asks clients for a certificate when it has a trust list
                 * (daemon.c, GNUTLS_CERT_REQUEST); the verdict is ours
                 * (client_cert_refused()). Without a client CA (RequestClientCert,
                 * RequireAnyClientCert) the server's certificate stands in: it
                 * verifies nothing, as those types ask.
                 */
                if (t->client_auth != WEB_CLIENT_AUTH_NONE)
                        tls[n++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_MEM_TRUST, 0,
                                                             t->client_ca_pem ?: t->cert_pem };
        }
        tls[n++] = (struct MHD_OptionItem) { MHD_OPTION_END, 0, NULL };

        /*
         * MHD_USE_ITC keeps MHD from shutdown()ing a listening socket we were
         * handed, which would break socket re-activation (journal-gatewayd),
         * and lets a reload quiesce the old server.
         */
        mhd = MHD_start_daemon(
                flags, 0, NULL, NULL, access_handler, s,
                MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
                MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
                /* Per-address limits are ours (conn_admit): MHD's refuses where we would evict. */
                MHD_OPTION_NOTIFY_CONNECTION, notify_connection, s,
                MHD_OPTION_LISTEN_SOCKET, (MHD_socket) s->listen_fd,
                MHD_OPTION_CONNECTION_LIMIT, s->max_connections,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) (s->idle_usec / USEC_PER_SEC),
                MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                (size_t) (s->max_request_bytes + HTTP_MAX_FIELDS * HTTP_FIELD_POOL_BYTES + HTTP_RESPONSE_HEADROOM),
                MHD_OPTION_ARRAY, tls,
                MHD_OPTION_END);
        if (!mhd) {
                log_error("Failed to start the HTTP server on %s%s", s->address,
                          web && web->tls.enabled ? " with TLS (run with --log-level=debug for libmicrohttpd's reason)" : "");
                return -EIO;
        }
        *ret = mhd;
        return 0;
}

int http_server_start(const struct http_server_options *opts, const struct http_route *routes,
                      size_t n_routes, void *userdata, struct http_server **ret) {
        struct http_server *s;
        struct MHD_Daemon *mhd;
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
                pthread_cond_init(&s->drained, &ca);
                pthread_cond_init(&s->auth_wake, &ca);
                pthread_condattr_destroy(&ca);
        }
        s->max_connections = opts->max_connections;
        s->per_ip_connections = opts->per_ip_connections;
        /* An eighth of the slots, at least one when there are two, stay free for newcomers. */
        s->reserve = s->max_connections >= 2 ? MAX(1u, s->max_connections / 8) : 0;
        s->idle_usec = (uint64_t) opts->timeout_sec * USEC_PER_SEC;
        s->max_request_bytes = opts->max_request_bytes;
        s->detail_any = opts->detail_any;
        s->timer_due = UINT64_MAX;
        s->max_deferrals = MAX(1u, s->max_connections - s->reserve);
        s->deferrals = xcalloc(s->max_deferrals, sizeof(*s->deferrals));
        s->auth = basic_auth_new();
        s->web = web_config_ref(opts->web);

        if (opts->listen_fd >= 0)
                s->listen_fd = opts->listen_fd;
        else {
                r = open_listen_socket(&opts->listen, &s->listen_fd);
                if (r < 0) {
                        char a[LISTEN_ADDR_STR_MAX];
                        log_error_errno(r, "Failed to listen on %s: %m",
                                        listen_addr_to_string(&opts->listen, a, sizeof(a)));
                        http_server_stop(s);
                        return r;
                }
        }
        describe_socket(s->listen_fd, s->address, sizeof(s->address));

        /* Before MHD: its thread may suspend a connection for them at once. */
        if (thread_names_create(&s->timer, THREAD_NAME_HTTP_TIMER, timer_main, s) < 0) {
                http_server_stop(s);
                return -EAGAIN;
        }
        s->timer_started = true;
        if (thread_names_create(&s->auth_thread, THREAD_NAME_HTTP_AUTH, auth_main, s) < 0) {
                http_server_stop(s);
                return -EAGAIN;
        }
        s->auth_started = true;
        r = start_mhd(s, s->web, &mhd);
        if (r < 0) {
                http_server_stop(s);
                return r;
        }
        pthread_mutex_lock(&s->lock);
        s->mhd = mhd;
        pthread_mutex_unlock(&s->lock);
        /* MHD now owns the socket and closes it on stop. */
        *ret = s;
        return 0;
}

int http_server_set_web_config(struct http_server *s, struct web_config *web) {
        struct MHD_Daemon *mhd, *old;
        struct web_config *old_web;
        int r;

        pthread_mutex_lock(&s->lock);
        old_web = s->web;
        if (web_config_tls_equal(old_web, web)) {
                /* Users, headers, the rate limit and per-request TLS checks: the next request sees them. */
                s->web = web_config_ref(web);
                pthread_mutex_unlock(&s->lock);
                web_config_unref(old_web);
                return 0;
        }
        if (s->n_retiring == HTTP_RETIRING_MAX) {
                pthread_mutex_unlock(&s->lock);
                log_error("http: %d servers replaced by earlier reloads still answer requests; reload again "
                          "once they are done", HTTP_RETIRING_MAX);
                return -EBUSY;
        }
        pthread_mutex_unlock(&s->lock);

        /* Certificates or TLS settings changed: a new server on the same socket, then the old one stops accepting. */
        r = start_mhd(s, web, &mhd);
        if (r < 0)
                return r;
        pthread_mutex_lock(&s->lock);
        old = s->mhd;
        s->mhd = mhd;
        s->web = web_config_ref(web);
        s->retiring[s->n_retiring].mhd = old;
        s->retiring[s->n_retiring++].web = old_web;
        (void) MHD_quiesce_daemon(old);
        /* What waits for a request on the old one is closed now; what is being answered, once answered. */
        for (struct conn *c = s->conns; c; c = c->next)
                if (c->mhd == old && conn_evictable(c))
                        conn_shutdown(s, c, CLOSE_RELOAD);
        timer_wake_by(s, 0);
        pthread_mutex_unlock(&s->lock);
        log_info("http: now serving %s on %s", web && web->tls.enabled ? "HTTPS" : "plain HTTP", s->address);
        return 0;
}

struct http_server *http_server_stop(struct http_server *s) {
        if (!s)
                return NULL;
        if (s->timer_started || s->auth_started) {
                pthread_mutex_lock(&s->lock);
                s->stopping = true;
                pthread_cond_signal(&s->wake);
                pthread_cond_signal(&s->auth_wake);
                pthread_mutex_unlock(&s->lock);
        }
        /* They resume every deferred request on their way out. */
        if (s->timer_started)
                pthread_join(s->timer, NULL);
        if (s->auth_started)
                pthread_join(s->auth_thread, NULL);
        if (s->mhd) {
                /* Let the resumed requests' 503s out before MHD closes their connections. */
                uint64_t until = mono_usec() + HTTP_STOP_GRACE_USEC;
                struct timespec ts = {
                        .tv_sec = (time_t) (until / USEC_PER_SEC),
                        .tv_nsec = (long) (until % USEC_PER_SEC) * 1000,
                };

                pthread_mutex_lock(&s->lock);
                while (s->n_deferred_open > 0 && pthread_cond_timedwait(&s->drained, &s->lock, &ts) == 0)
                        ;
                pthread_mutex_unlock(&s->lock);
                for (size_t i = 0; i < s->n_retiring; i++) {
                        MHD_stop_daemon(s->retiring[i].mhd);
                        web_config_unref(s->retiring[i].web);
                }
                MHD_stop_daemon(s->mhd);
        } else
                safe_close(s->listen_fd);
        /* MHD told us of every close on its way out. */
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->wake);
        pthread_cond_destroy(&s->drained);
        pthread_cond_destroy(&s->auth_wake);
        web_config_unref(s->web);
        basic_auth_free(s->auth);
        free(s->deferrals);
        free(s);
        return NULL;
}

const char *http_server_address(const struct http_server *s) {
        return s->address;
}
