/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Pushing profiles to a central store (Grafana Pyroscope's push API, which
 * Grafana Alloy's pyroscope.receive_http accepts too): one thread of its
 * own, so a store that hangs or is gone delays nothing but this thread.
 *
 * Each interval it asks its source (the daemon: push-interval.c) for one
 * encoded PushRequest covering what was collected since the previous one,
 * and POSTs it to {url}/push.v1.PusherService/Push as a Connect unary call
 * (connectrpc.com/docs/protocol, "Unary-Request": the body is the
 * serialized message, Content-Type application/proto, no gRPC framing).
 *
 *  - 2xx: delivered.
 *  - 5xx, 429 and 408, a timeout, a refused or reset connection, a TLS
 *    failure: the request is written to the spool (push-spool.h) and sent
 *    again later, the same bytes (so the same sample IDs, by which the
 *    store recognizes a resend), with exponential backoff and jitter from
 *    1 s up to one interval, or after the store's Retry-After
 *    (RFC 9110 §10.2.3) when longer. While the spool holds anything, new
 *    requests join it and it is sent oldest first: the store receives the
 *    intervals in order. After a timeout the next attempt may take twice
 *    as long, up to timeout_max: a store slower than the timeout, which
 *    still stores what it answers late, then gets a request twice, not
 *    once per attempt. Delivery is so at least once, never exactly once.
 *  - Any other status: the store will never take these bytes (Pyroscope
 *    answers 400 for what fails its validation, 401/403 for credentials):
 *    the answer's body is logged (rate-limited), the request dropped and
 *    counted, later intervals still pushed.
 *
 * A spooled request whose profiles are older than max_age is dropped and
 * counted, never sent: the store refuses profiles older than its
 * acceptance window (Pyroscope: reject-older-than, 1 h by default).
 *
 * The first request goes a random part of the interval after the start,
 * so that a fleet restarted at once does not push in lockstep. At stop the
 * thread finishes the request in flight and pushes what was collected
 * since the last interval, all within `timeout`; what is not delivered
 * then stays in the spool for the next start.
 *
 * Secrets (the basic-auth password, the bearer token) are read from their
 * files by push_new() and kept by this module only: they are never logged
 * and never in push_status_json().
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "prom.h"
#include "strbuf.h"

/* After timeouts an attempt may take up to this many times [push] timeout (push_options.timeout_max_usec). */
#define PUSH_TIMEOUT_GROWTH_MAX 4

/* What a push is configured with ([push], README.md "Send profiles to Pyroscope"). */
struct push_options {
        const char *url;                        /* base URL, http:// or https:// */
        uint64_t interval_usec;
        uint64_t timeout_usec;                  /* one request, connection included; also the stop's bound */
        uint64_t timeout_max_usec;              /* after timeouts, one request at most (0: timeout_usec) */
        uint64_t max_age_usec;                  /* spooled profiles older than this are dropped */
        const char *tenant;                     /* X-Scope-OrgID; "" or NULL: none */
        const char *basic_auth_user;            /* "" or NULL: no basic auth */
        const char *basic_auth_password_file;
        const char *bearer_token_file;          /* "" or NULL: no bearer token */
        const char *tls_ca_file;                /* "" or NULL: the system's CAs */
        bool tls_insecure_skip_verify;
        const char *spool_dir;
        uint64_t spool_max_bytes;
        /* For /status only: what the series are labelled with. */
        const char *service_name;
        const char *labels;
};

/* One interval's request, filled by push_source.build(). */
struct push_request {
        struct strbuf body;                     /* a serialized PushRequest */
        uint64_t time_ns;                       /* Unix ns: the start of its oldest profile (max_age) */
        uint64_t split_profiles;                /* profiles sent as several parts */
        uint64_t trimmed_samples;               /* samples left out to keep under the store's limits */
};

struct push_source {
        /*
         * On the push thread: the request for what was collected since the
         * previous call (`final`: the daemon is stopping). 1 with ret
         * filled, 0 when there is nothing to send, or a negative errno
         * (logged by the callee).
         */
        int (*build)(void *userdata, bool final, struct push_request *ret);
        void *userdata;
};

struct push;

/*
 * What the pushes of a process did: the counters /metrics exports (requests
 * by result, errors, bytes, durations, the spool's drops...) and what
 * /status says of the past (the last success and error, an outage going
 * on). The daemon makes one at start and hands it to every push it starts:
 * a reload replaces the push (and reopens the spool), and the counters go
 * on from where they were, since Prometheus reads any decrease as a restart
 * (rate(), resets()). It must outlive the pushes given it.
 */
struct push_history;

struct push_history *push_history_new(void);
struct push_history *push_history_free(struct push_history *h);

/*
 * A store's base URL as [push] url takes it: http:// or https://, a host,
 * no credentials (they would be logged: basic_auth_user and the password
 * file are for them), no query or fragment. 0, or -EINVAL and why in err.
 */
int push_url_check(const char *url, char *err, size_t errlen);

/*
 * Checks the options (the URL's scheme, readable secret files, a spool
 * directory it can write, whose leftovers it cleans up) and returns the
 * push ready to start, counting into history; nothing is sent before
 * push_start(). -EINVAL, -ENOENT, -EACCES... with one sentence in err
 * naming the key at fault.
 */
int push_new(const struct push_options *o, const struct push_source *src, struct push_history *history,
             struct push **ret, char *err, size_t errlen);
/*
 * What push_new() checks, without touching the spool's files: whether a
 * configuration (a reload's) would start. 0, or as push_new().
 */
int push_check(const struct push_options *o, char *err, size_t errlen);
/* Starts the thread: 0 or a negative errno. */
int push_start(struct push *p);
/*
 * Stops the thread and frees: the request in flight and the last one get at
 * most the options' timeout (push_free()), or none (push_free_now(): they go
 * to the spool, for the next push on it to send). NULL-safe.
 */
struct push *push_free(struct push *p);
struct push *push_free_now(struct push *p);

/* Any thread. */
void push_write_metrics(struct push *p, struct prom_writer *w);
json_t *push_status_json(struct push *p);
