/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "push.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "build-config.h"
#include "log.h"
#include "macro.h"
#include "push-request.h"
#include "push-spool.h"
#include "thread-names.h"
#include "thread-prio.h"

#define PUSH_PATH "/push.v1.PusherService/Push"
#define PUSH_SECRET_MAX 4096            /* bytes of a password or token file */
#define PUSH_ANSWER_MAX 1024            /* bytes of an error answer kept for the log */
#define PUSH_BACKOFF_MIN_USEC USEC_PER_SEC
#define PUSH_LOG_EVERY_USEC (60 * USEC_PER_SEC) /* rate-limited lines: refusals, a stuck spool */

enum push_result {
        PUSH_OK,
        PUSH_RETRY,
        PUSH_REJECTED,
        PUSH_DROPPED,
        _PUSH_RESULT_MAX,
};

static const char *const result_names[_PUSH_RESULT_MAX] = {
        [PUSH_OK] = "ok", [PUSH_RETRY] = "retry", [PUSH_REJECTED] = "rejected", [PUSH_DROPPED] = "dropped",
};

enum push_error {
        PUSH_ERROR_CONNECT,
        PUSH_ERROR_TIMEOUT,
        PUSH_ERROR_TLS,
        PUSH_ERROR_RESET,
        PUSH_ERROR_HTTP,
        PUSH_ERROR_OTHER,
        _PUSH_ERROR_MAX,
};

static const char *const error_names[_PUSH_ERROR_MAX] = {
        [PUSH_ERROR_CONNECT] = "connect", [PUSH_ERROR_TIMEOUT] = "timeout", [PUSH_ERROR_TLS] = "tls",
        [PUSH_ERROR_RESET] = "reset", [PUSH_ERROR_HTTP] = "http", [PUSH_ERROR_OTHER] = "other",
};

/* Request durations, seconds: from a loopback store's milliseconds to a timeout's minutes. */
static const double duration_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };

/* What readers copy: the history's figures, with the spool's now. */
struct push_stats {
        uint64_t results[_PUSH_RESULT_MAX];
        uint64_t errors[_PUSH_ERROR_MAX];
        uint64_t bytes;                         /* request bodies delivered */
        uint64_t split_profiles, trimmed_samples;
        uint64_t last_success_unix_ns, last_error_unix_ns, next_attempt_unix_ns;
        char last_error[MESSAGE_MAX];
        bool attempted, failing;
        struct push_spool_stats spool;
        uint64_t duration_counts[ELEMENTSOF(duration_bounds) + 1]; /* per bucket, the last +Inf */
        uint64_t duration_count;
        double duration_sum;
};

struct push_history {
        pthread_mutex_t lock;
        struct push_stats stats;
};

struct push {
        /* Set by push_new(), then read-only. */
        char *url, *endpoint, *tenant, *basic_user, *tls_ca_file, *spool_dir, *service_name, *labels;
        char *secret;                   /* the password or the token: never logged */
        bool bearer, insecure;
        uint64_t interval_usec, timeout_usec, timeout_max_usec, max_age_usec, spool_max_bytes;
        struct push_source src;

        /* The push thread's. */
        struct push_spool *spool;
        CURL *curl;
        struct curl_slist *headers;
        struct strbuf answer;           /* the body of the current answer, up to PUSH_ANSWER_MAX */
        char retry_after[64];           /* the current answer's Retry-After, "" when none */
        uint64_t next_tick_usec, next_retry_usec;
        unsigned failures;              /* consecutive attempts that failed */
        uint64_t attempt_timeout_usec;  /* the next attempt's: timeout, longer after timeouts */
        uint64_t last_reject_log_usec, rejects_unlogged, last_stuck_log_usec;

        pthread_t thread;
        bool started;
        atomic_bool stopping;
        atomic_uint_fast64_t stop_deadline_usec; /* CLOCK_MONOTONIC; valid once stopping */

        pthread_mutex_t lock;           /* guards the wait below */
        pthread_cond_t wake;

        /* The process's figures, added to under history->lock; the spool's as last added. */
        struct push_history *history;
        struct push_spool_stats spool_seen;
};

static uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static uint64_t random_u64(void) {
        uint64_t v;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t) sizeof(v))
                v = now_usec(CLOCK_MONOTONIC) * UINT64_C(0x9e3779b97f4a7c15); /* jitter only: good enough */
        return v;
}

/* ---- options ---- */

int push_url_check(const char *url, char *err, size_t errlen) {
        const char *host, *end;

        if (strncasecmp(url, "http://", 7) == 0)
                host = url + 7;
        else if (strncasecmp(url, "https://", 8) == 0)
                host = url + 8;
        else {
                snprintf(err, errlen, "'%s' is not an http:// or https:// URL", url);
                return -EINVAL;
        }
        /* RFC 3986 §2: a URL is ASCII; anything else is percent-encoded. */
        for (const char *c = url; *c; c++)
                if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f) {
                        snprintf(err, errlen, "the URL holds a space, a control character or a byte outside ASCII "
                                              "(percent-encode it)");
                        return -EINVAL;
                }
        end = host + strcspn(host, "/?#");
        if (end == host) {
                snprintf(err, errlen, "'%s' names no host", url);
                return -EINVAL;
        }
        /* RFC 3986 §3.2.1: userinfo in a URL is deprecated, and a secret there would be logged. */
        if (memchr(host, '@', (size_t) (end - host))) {
                snprintf(err, errlen, "credentials in the URL are refused: use basic_auth_user and basic_auth_password_file");
                return -EINVAL;
        }
        if (*end == '?' || *end == '#' || strpbrk(end, "?#")) {
                snprintf(err, errlen, "'%s' has a query or a fragment: give the store's base URL", url);
                return -EINVAL;
        }
        return 0;
}

/* A secret from its file: the first line, without trailing white space. */
static int read_secret(const char *key, const char *path, char **ret, char *err, size_t errlen) {
        _cleanup_close_ int fd = -1;
        char buf[PUSH_SECRET_MAX + 2]; /* one byte more than a secret may be, and a NUL */
        struct stat st;
        ssize_t n;
        size_t len;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0) {
                int e = errno;

                snprintf(err, errlen, "%s '%s': %s", key, path, strerror(e));
                return -e;
        }
        if (!S_ISREG(st.st_mode)) {
                snprintf(err, errlen, "%s '%s': not a regular file", key, path);
                return -EINVAL;
        }
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0) {
                int e = errno;

                snprintf(err, errlen, "%s '%s': %s", key, path, strerror(e));
                return -e;
        }
        buf[n] = '\0';
        if ((size_t) n > PUSH_SECRET_MAX || memchr(buf, '\0', (size_t) n)) {
                explicit_bzero(buf, sizeof(buf));
                snprintf(err, errlen, "%s '%s': longer than %d bytes, or not text", key, path, PUSH_SECRET_MAX);
                return -EFBIG;
        }
        len = strcspn(buf, "\r\n");
        while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
                len--;
        if (len == 0) {
                explicit_bzero(buf, sizeof(buf));
                snprintf(err, errlen, "%s '%s': empty", key, path);
                return -EINVAL;
        }
        *ret = xmalloc(len + 1);
        memcpy(*ret, buf, len);
        (*ret)[len] = '\0';
        explicit_bzero(buf, sizeof(buf));
        return 0;
}

static char *xstrdup_or_empty(const char *s) {
        return xstrdup(s ?: "");
}

static bool set(const char *s) {
        return s && s[0];
}

/* ---- one request ---- */

static size_t on_answer(char *data, size_t size, size_t nmemb, void *userdata) {
        struct push *p = userdata;
        size_t n = size * nmemb;

        if (p->answer.len < PUSH_ANSWER_MAX)
                strbuf_append(&p->answer, data, MIN(n, PUSH_ANSWER_MAX - p->answer.len));
        return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata) {
        static const char name[] = "retry-after:";
        struct push *p = userdata;
        size_t n = size * nmemb, len;

        if (n > sizeof(name) - 1 && strncasecmp(data, name, sizeof(name) - 1) == 0) {
                const char *v = data + sizeof(name) - 1;

                len = n - (sizeof(name) - 1);
                while (len > 0 && (*v == ' ' || *v == '\t'))
                        v++, len--;
                while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
                        len--;
                len = MIN(len, sizeof(p->retry_after) - 1);
                memcpy(p->retry_after, v, len);
                p->retry_after[len] = '\0';
        }
        return n;
}

/* Stopping: the request in flight may run to the stop's deadline, not longer. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        struct push *p = userdata;

        return atomic_load(&p->stopping) && now_usec(CLOCK_MONOTONIC) >= atomic_load(&p->stop_deadline_usec);
}

static enum push_error curl_error_kind(CURLcode c) {
        switch (c) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return PUSH_ERROR_CONNECT;
        case CURLE_OPERATION_TIMEDOUT:
                return PUSH_ERROR_TIMEOUT;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_USE_SSL_FAILED:
                return PUSH_ERROR_TLS;
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
                return PUSH_ERROR_RESET;
        default:
                return PUSH_ERROR_OTHER;
        }
}

static void observe_duration(struct push_stats *s, double seconds) {
        size_t i = 0;

        while (i < ELEMENTSOF(duration_bounds) && seconds > duration_bounds[i])
                i++;
        s->duration_counts[i]++;
        s->duration_count++;
        s->duration_sum += seconds;
}

/* An error for /status and /metrics: counted by kind, the newest kept with its time. Under history->lock. */
static void record_error_locked(struct push *p, enum push_error kind, const char *msg) {
        struct push_stats *s = &p->history->stats;

        s->errors[kind]++;
        snprintf(s->last_error, sizeof(s->last_error), "%s", msg);
        s->last_error_unix_ns = now_usec(CLOCK_REALTIME) * NSEC_PER_USEC;
}

/* Rate-limited log lines: true (and *last moved on) once a minute at most. */
static bool log_due(uint64_t *last, uint64_t now) {
        if (*last != 0 && now - *last < PUSH_LOG_EVERY_USEC)
                return false;
        *last = now;
        return true;
}

static void note_failure(struct push *p, enum push_error kind, const char *fmt, ...) _printf_(3, 4);
static void note_failure(struct push *p, enum push_error kind, const char *fmt, ...) {
        char msg[MESSAGE_MAX];
        bool first;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        pthread_mutex_lock(&p->history->lock);
        record_error_locked(p, kind, msg);
        first = !p->history->stats.failing;
        p->history->stats.failing = true;
        pthread_mutex_unlock(&p->history->lock);
        /* Once per outage: the spool and /status say the rest. */
        if (first)
                log_warning("push: %s: %s; keeping the requests in %s and retrying", p->url, msg, p->spool_dir);
        else
                log_debug("push: %s: %s", p->url, msg);
}

/*
 * A store slower than the timeout still takes what it was sent: the proxy
 * in front of it times out, or we do, and it stores the request all the
 * same. Sent again with the same deadline, it would be stored once per
 * attempt (six times in 70 s for a store answering after 15 s, with a 10 s
 * timeout). So each timeout doubles the next attempt's deadline, up to
 * timeout_max, and an answer within the configured timeout brings it back.
 */
static void adapt_timeout(struct push *p, CURLcode c, uint64_t took_usec) {
        if (c == CURLE_OPERATION_TIMEDOUT) {
                p->attempt_timeout_usec = MIN(p->attempt_timeout_usec * 2, p->timeout_max_usec);
                log_debug("push: %s did not answer in time; the next attempt may take %.3g s", p->url,
                          (double) p->attempt_timeout_usec / USEC_PER_SEC);
        } else if (c == CURLE_OK && took_usec <= p->timeout_usec)
                p->attempt_timeout_usec = p->timeout_usec;
}

/*
 * POSTs body once. The request may take the attempt's deadline (the
 * options' timeout, or longer after timeouts: adapt_timeout()), or while
 * stopping what is left before the stop's deadline.
 */
static enum push_result send_request(struct push *p, const struct strbuf *body) {
        uint64_t timeout = p->attempt_timeout_usec, t0, now;
        long status = 0;
        CURLcode c;

        if (atomic_load(&p->stopping)) {
                now = now_usec(CLOCK_MONOTONIC);
                if (now >= atomic_load(&p->stop_deadline_usec))
                        return PUSH_RETRY;
                timeout = MIN(timeout, atomic_load(&p->stop_deadline_usec) - now);
        }
        p->answer.len = 0;
        p->retry_after[0] = '\0';
        (void) curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, body->buf);
        (void) curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) body->len);
        (void) curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, (long) MAX(timeout / USEC_PER_MSEC, 1));
        t0 = now_usec(CLOCK_MONOTONIC);
        c = curl_easy_perform(p->curl);
        now = now_usec(CLOCK_MONOTONIC);
        if (c == CURLE_OK)
                (void) curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
        adapt_timeout(p, c, now - t0);

        pthread_mutex_lock(&p->history->lock);
        p->history->stats.attempted = true;
        observe_duration(&p->history->stats, (double) (now - t0) / USEC_PER_SEC);
        pthread_mutex_unlock(&p->history->lock);

        if (c != CURLE_OK) {
                if (c == CURLE_ABORTED_BY_CALLBACK)
                        note_failure(p, PUSH_ERROR_TIMEOUT, "stopping: the request did not end within the timeout");
                else
                        note_failure(p, curl_error_kind(c), "%s", curl_easy_strerror(c));
                return PUSH_RETRY;
        }
        if (status >= 200 && status < 300) {
                pthread_mutex_lock(&p->history->lock);
                p->history->stats.bytes += body->len;
                p->history->stats.last_success_unix_ns = now_usec(CLOCK_REALTIME) * NSEC_PER_USEC;
                if (p->history->stats.failing)
                        log_info("push: %s takes requests again", p->url);
                p->history->stats.failing = false;
                pthread_mutex_unlock(&p->history->lock);
                return PUSH_OK;
        }
        /* The store is overloaded, down behind a proxy, or asks to be called later. */
        if (status >= 500 || status == 429 || status == 408) {
                note_failure(p, PUSH_ERROR_HTTP, "HTTP %ld%s%s", status, p->retry_after[0] ? ", Retry-After " : "",
                             p->retry_after);
                return PUSH_RETRY;
        }

        /* The store will not take these bytes as they are: say why, once a minute. */
        char text[PUSH_ANSWER_MAX * 4 + 1], msg[MESSAGE_MAX];

        escape_bytes(text, sizeof(text), p->answer.buf, p->answer.len);
        snprintf(msg, sizeof(msg), "HTTP %ld: %s", status, text);
        pthread_mutex_lock(&p->history->lock);
        record_error_locked(p, PUSH_ERROR_HTTP, msg);
        pthread_mutex_unlock(&p->history->lock);
        if (log_due(&p->last_reject_log_usec, now)) {
                log_error("push: %s refused a request (HTTP %ld), not sending it again: %s%s", p->url, status,
                          text, p->rejects_unlogged ? " (and more refused since the last such line)" : "");
                p->rejects_unlogged = 0;
        } else
                p->rejects_unlogged++;
        return PUSH_REJECTED;
}

/* ---- the thread ---- */

/*
 * The spool's figures into the history: its size as it is now, and what it
 * dropped since they were last taken (each push opens the spool anew, whose
 * counts start at 0: the history's go on). Under history->lock.
 */
static void take_spool_stats_locked(struct push *p) {
        struct push_spool_stats now, *total = &p->history->stats.spool;

        push_spool_get_stats(p->spool, &now);
        total->files = now.files;
        total->bytes = now.bytes;
        total->dropped_full += now.dropped_full - p->spool_seen.dropped_full;
        total->dropped_age += now.dropped_age - p->spool_seen.dropped_age;
        total->dropped_corrupt += now.dropped_corrupt - p->spool_seen.dropped_corrupt;
        total->temp_removed += now.temp_removed - p->spool_seen.temp_removed;
        p->spool_seen = now;
}

/* Counts n results (none: the spool changed only), and takes the spool's figures for the readers. */
static void count(struct push *p, enum push_result r, uint64_t n) {
        pthread_mutex_lock(&p->history->lock);
        p->history->stats.results[r] += n;
        take_spool_stats_locked(p);
        pthread_mutex_unlock(&p->history->lock);
}

/* After a failed attempt: 1 s doubling up to one interval, with jitter, or the store's Retry-After. */
static void backoff(struct push *p) {
        uint64_t delay, after = 0, now = now_usec(CLOCK_MONOTONIC);
        unsigned shift = MIN(p->failures, 30U);

        p->failures++;
        /* From 1 s (or one interval when shorter: a test's) up to one interval. */
        delay = MIN(MIN(PUSH_BACKOFF_MIN_USEC, p->interval_usec) << shift, MAX(p->interval_usec, PUSH_BACKOFF_MIN_USEC));
        /*
         * "Equal jitter": half the delay fixed, half random, so a fleet's retries spread.
         * A Retry-After counts up to half of max_age, so that what waits is not then too old to send.
         */
        delay = delay / 2 + random_u64() % (delay / 2 + 1);
        if (p->retry_after[0] &&
            push_retry_after_parse(p->retry_after, (int64_t) (now_usec(CLOCK_REALTIME) / USEC_PER_SEC),
                                   p->max_age_usec / 2, &after) == 0)
                delay = MAX(delay, after);
        p->next_retry_usec = now + delay;
        pthread_mutex_lock(&p->history->lock);
        p->history->stats.next_attempt_unix_ns = (now_usec(CLOCK_REALTIME) + delay) * NSEC_PER_USEC;
        pthread_mutex_unlock(&p->history->lock);
}

static void spool(struct push *p, const struct push_request *req) {
        int r = push_spool_put(p->spool, req->time_ns, req->body.buf, req->body.len);

        if (r < 0)
                log_warning_errno(r, "push: cannot keep a request of %zu bytes in %s, dropped: %m", req->body.len,
                                  p->spool_dir);
        /* The spool counts what it dropped to make room, and a request over its whole size (-EFBIG). */
        count(p, PUSH_DROPPED, r < 0 && r != -EFBIG);
}

static void delivered(struct push *p) {
        p->failures = 0;
        p->next_retry_usec = 0;
        pthread_mutex_lock(&p->history->lock);
        p->history->stats.next_attempt_unix_ns = 0;
        pthread_mutex_unlock(&p->history->lock);
}

/* One interval: its request goes out now, or joins the spool behind the older ones. */
static void tick(struct push *p, bool final) {
        struct push_request req = { .body = STRBUF_INIT };
        enum push_result r;
        int k;

        k = p->src.build(p->src.userdata, final, &req);
        if (k <= 0) {
                strbuf_done(&req.body);
                return;
        }
        pthread_mutex_lock(&p->history->lock);
        p->history->stats.split_profiles += req.split_profiles;
        p->history->stats.trimmed_samples += req.trimmed_samples;
        pthread_mutex_unlock(&p->history->lock);

        if (!push_spool_empty(p->spool) || now_usec(CLOCK_MONOTONIC) < p->next_retry_usec) {
                spool(p, &req);
                strbuf_done(&req.body);
                return;
        }
        r = send_request(p, &req.body);
        count(p, r, 1);
        if (r == PUSH_OK)
                delivered(p);
        else if (r == PUSH_RETRY) {
                spool(p, &req);
                backoff(p);
        }
        strbuf_done(&req.body);
}

/* The spool cannot read or remove its oldest file (a read-only or failing disk): wait, say so once a minute. */
static void spool_stuck(struct push *p, int error, const char *what) {
        if (log_due(&p->last_stuck_log_usec, now_usec(CLOCK_MONOTONIC)))
                log_error_errno(error, "push: cannot %s the oldest request in %s, trying again later: %m", what,
                                p->spool_dir);
        backoff(p);
}

/* The oldest spooled request, unless it has aged past what the store takes. */
static void resend_oldest(struct push *p) {
        struct push_spool_entry e = {};
        uint64_t cutoff, now = now_usec(CLOCK_REALTIME) * NSEC_PER_USEC;
        enum push_result r;
        size_t dropped;
        int k;

        cutoff = now > p->max_age_usec * NSEC_PER_USEC ? now - p->max_age_usec * NSEC_PER_USEC : 0;
        dropped = push_spool_drop_older(p->spool, cutoff);
        if (dropped > 0)
                log_warning("push: dropped %zu spooled request%s older than max_age", dropped, dropped == 1 ? "" : "s");
        k = push_spool_oldest(p->spool, &e);
        if (k < 0) {
                count(p, PUSH_DROPPED, 0);
                if (k != -ENOENT)
                        spool_stuck(p, k, "read");
                return;
        }
        r = send_request(p, &e.body);
        k = r == PUSH_RETRY ? 0 : push_spool_remove(p->spool, e.seq);
        count(p, r, 1); /* with the spool's figures after the removal */
        if (r == PUSH_RETRY)
                backoff(p);
        else {
                delivered(p);
                /* Sent again later, the same bytes: the store knows the IDs. Never at once, in a loop. */
                if (k < 0)
                        spool_stuck(p, k, "remove");
        }
        push_spool_entry_done(&e);
}

/* Until `at` (CLOCK_MONOTONIC) or a stop: true when stopping. */
static bool wait_until(struct push *p, uint64_t at) {
        struct timespec ts = { .tv_sec = (time_t) (at / USEC_PER_SEC), .tv_nsec = (long) (at % USEC_PER_SEC) * 1000 };
        bool stop;

        pthread_mutex_lock(&p->lock);
        while (!(stop = atomic_load(&p->stopping)) && now_usec(CLOCK_MONOTONIC) < at)
                if (pthread_cond_timedwait(&p->wake, &p->lock, &ts) == ETIMEDOUT)
                        break;
        pthread_mutex_unlock(&p->lock);
        return stop;
}

static void *push_thread(void *userdata) {
        struct push *p = userdata;

        thread_prio_answer_self();
        /* A random part of the first interval: a fleet restarted at once does not push in lockstep. */
        p->next_tick_usec = now_usec(CLOCK_MONOTONIC) + random_u64() % p->interval_usec;
        for (;;) {
                uint64_t wake = p->next_tick_usec, now;

                if (!push_spool_empty(p->spool))
                        wake = MIN(wake, p->next_retry_usec);
                if (wait_until(p, wake))
                        break;
                now = now_usec(CLOCK_MONOTONIC);
                if (now >= p->next_tick_usec) {
                        /* On the grid; an interval the thread overran (a hanging store) is not made up. */
                        p->next_tick_usec += p->interval_usec;
                        if (p->next_tick_usec <= now)
                                p->next_tick_usec = now + p->interval_usec;
                        tick(p, false);
                } else if (!push_spool_empty(p->spool) && now >= p->next_retry_usec)
                        resend_oldest(p);
        }
        /* What was collected since the last interval, within the stop's deadline. */
        tick(p, true);
        return NULL;
}

/* ---- set-up ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init_once(void) {
        /* Not thread-safe before curl 7.84 (curl_global_init(3)): once for the process. */
        curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int setup_curl(struct push *p, char *err, size_t errlen) {
        char header[MESSAGE_MAX];
        CURLcode c = CURLE_OK;

        pthread_once(&curl_once, curl_init_once);
        if (curl_init_result != CURLE_OK) {
                snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(curl_init_result));
                return -EIO;
        }
        /* A resolver that blocks (no AsynchDNS) would not honour the timeout, the stop's bound included. */
        if (!(curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_ASYNCHDNS))
                log_warning("push: this libcurl resolves names synchronously: a stuck DNS server can hold a "
                            "request past [push] timeout");
        p->curl = curl_easy_init();
        if (!p->curl) {
                snprintf(err, errlen, "libcurl: cannot make a handle");
                return -ENOMEM;
        }
        p->headers = curl_slist_append(p->headers, "Content-Type: application/proto");
        p->headers = curl_slist_append(p->headers, "Connect-Protocol-Version: 1");
        /* No "Expect: 100-continue" wait before a large body (RFC 9110 §10.1.1: a client MAY send without it). */
        p->headers = curl_slist_append(p->headers, "Expect:");
        if (set(p->tenant)) {
                snprintf(header, sizeof(header), "X-Scope-OrgID: %s", p->tenant);
                p->headers = curl_slist_append(p->headers, header);
        }
#define SETOPT(opt, v) if (c == CURLE_OK) c = curl_easy_setopt(p->curl, opt, v)
        SETOPT(CURLOPT_URL, p->endpoint);
        SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
        SETOPT(CURLOPT_HTTPHEADER, p->headers);
        SETOPT(CURLOPT_POST, 1L);
        SETOPT(CURLOPT_USERAGENT, "armprofd/" ARMPROFD_VERSION);
        SETOPT(CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts (CURLOPT_NOSIGNAL(3)) */
        SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long) MAX(p->timeout_usec / USEC_PER_MSEC, 1));
        SETOPT(CURLOPT_WRITEFUNCTION, on_answer);
        SETOPT(CURLOPT_WRITEDATA, p);
        SETOPT(CURLOPT_HEADERFUNCTION, on_header);
        SETOPT(CURLOPT_HEADERDATA, p);
        SETOPT(CURLOPT_NOPROGRESS, 0L);
        SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
        SETOPT(CURLOPT_XFERINFODATA, p);
        if (set(p->tls_ca_file))
                SETOPT(CURLOPT_CAINFO, p->tls_ca_file);
        if (p->insecure) {
                SETOPT(CURLOPT_SSL_VERIFYPEER, 0L);
                SETOPT(CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (p->secret && p->bearer) {
                SETOPT(CURLOPT_HTTPAUTH, (long) CURLAUTH_BEARER);
                SETOPT(CURLOPT_XOAUTH2_BEARER, p->secret);
        } else if (p->secret) {
                SETOPT(CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
                SETOPT(CURLOPT_USERNAME, p->basic_user);
                SETOPT(CURLOPT_PASSWORD, p->secret);
        }
#undef SETOPT
        if (c != CURLE_OK) {
                snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(c));
                return -EINVAL;
        }
        return 0;
}

/* Whether the spool directory (or, when it does not exist yet, its parent) takes a file. */
static int check_writable(const char *dir, char *err, size_t errlen) {
        _cleanup_free_ char *parent = NULL;
        const char *where = dir;
        int fd;

        fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0 && errno == ENOENT) {
                /* push_spool_open() makes the directory, not its parents. */
                char *slash;

                parent = xstrdup(dir);
                slash = strrchr(parent, '/');
                if (slash && slash != parent)
                        *slash = '\0';
                else if (slash)
                        slash[1] = '\0';
                where = parent;
                fd = open(parent, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        }
        /* An unnamed file (open(2), O_TMPFILE) proves the right to write, and leaves nothing behind. */
        if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR) {
                snprintf(err, errlen, "[push] spool_dir '%s': cannot write in '%s': %s", dir, where, strerror(errno));
                return -errno;
        }
        safe_close(fd);
        return 0;
}

static int check_options(const struct push_options *o, char **ret_secret, bool *ret_bearer, char *err, size_t errlen) {
        char why[MESSAGE_MAX];
        int r;

        if (!o || !set(o->url) || o->interval_usec == 0 || o->timeout_usec == 0 || o->max_age_usec == 0 ||
            !set(o->spool_dir)) {
                snprintf(err, errlen, "[push] url, interval, timeout, max_age and spool_dir must be set");
                return -EINVAL;
        }
        r = push_url_check(o->url, why, sizeof(why));
        if (r < 0) {
                snprintf(err, errlen, "[push] url: %s", why);
                return r;
        }
        if (set(o->basic_auth_user) != set(o->basic_auth_password_file)) {
                snprintf(err, errlen, "[push] basic_auth_user and basic_auth_password_file go together");
                return -EINVAL;
        }
        if (set(o->basic_auth_user) && set(o->bearer_token_file)) {
                snprintf(err, errlen, "[push] basic auth and bearer_token_file exclude each other");
                return -EINVAL;
        }
        if (set(o->tls_ca_file) && access(o->tls_ca_file, R_OK) < 0) {
                r = -errno;
                snprintf(err, errlen, "[push] tls_ca_file '%s': %s", o->tls_ca_file, strerror(-r));
                return r;
        }
        *ret_bearer = false;
        *ret_secret = NULL;
        if (set(o->basic_auth_password_file))
                r = read_secret("[push] basic_auth_password_file", o->basic_auth_password_file, ret_secret, err,
                                errlen);
        else if (set(o->bearer_token_file)) {
                *ret_bearer = true;
                r = read_secret("[push] bearer_token_file", o->bearer_token_file, ret_secret, err, errlen);
        }
        if (r < 0)
                return r;
        return check_writable(o->spool_dir, err, errlen);
}

static void free_secret(char *secret) {
        if (secret) {
                explicit_bzero(secret, strlen(secret));
                free(secret);
        }
}

int push_check(const struct push_options *o, char *err, size_t errlen) {
        char *secret = NULL;
        bool bearer;
        int r;

        r = check_options(o, &secret, &bearer, err, errlen);
        free_secret(secret);
        return r;
}

int push_new(const struct push_options *o, const struct push_source *src, struct push_history *history,
             struct push **ret, char *err, size_t errlen) {
        struct push *p;
        char why[MESSAGE_MAX], *secret = NULL;
        pthread_condattr_t ca;
        bool bearer = false;
        size_t len;
        int r;

        if (!src || !src->build || !history || !ret)
                return -EINVAL;
        r = check_options(o, &secret, &bearer, err, errlen);
        if (r < 0)
                return r;

        p = xcalloc(1, sizeof(*p));
        p->url = xstrdup(o->url);
        len = strlen(p->url);
        while (len > 0 && p->url[len - 1] == '/')
                p->url[--len] = '\0';
        p->endpoint = xmalloc(len + sizeof(PUSH_PATH));
        memcpy(p->endpoint, p->url, len);
        memcpy(p->endpoint + len, PUSH_PATH, sizeof(PUSH_PATH));
        p->tenant = xstrdup_or_empty(o->tenant);
        p->basic_user = xstrdup_or_empty(o->basic_auth_user);
        p->tls_ca_file = xstrdup_or_empty(o->tls_ca_file);
        p->spool_dir = xstrdup_or_empty(o->spool_dir);
        p->service_name = xstrdup_or_empty(o->service_name);
        p->labels = xstrdup_or_empty(o->labels);
        p->insecure = o->tls_insecure_skip_verify;
        p->interval_usec = o->interval_usec;
        p->timeout_usec = o->timeout_usec;
        p->timeout_max_usec = MAX(o->timeout_max_usec, o->timeout_usec);
        p->attempt_timeout_usec = p->timeout_usec;
        p->max_age_usec = o->max_age_usec;
        p->spool_max_bytes = o->spool_max_bytes;
        p->src = *src;
        p->history = history;
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->wake, &ca);
        pthread_condattr_destroy(&ca);

        p->secret = secret;
        p->bearer = bearer;
        r = push_spool_open(p->spool_dir, p->spool_max_bytes, &p->spool, why, sizeof(why));
        if (r < 0) {
                snprintf(err, errlen, "[push] spool_dir: %s", why);
                goto fail;
        }
        /* What opening it found (leftovers, damaged files) is counted now; what waits goes at once. */
        pthread_mutex_lock(&history->lock);
        take_spool_stats_locked(p);
        history->stats.next_attempt_unix_ns = 0;
        pthread_mutex_unlock(&history->lock);
        r = setup_curl(p, err, errlen);
        if (r < 0)
                goto fail;
        *ret = p;
        return 0;
fail:
        push_free(p);
        return r;
}

int push_start(struct push *p) {
        int r;

        /* Before the thread: from then on the spool is its alone. */
        if (!push_spool_empty(p->spool))
                log_info("push: sending first the %" PRIu64 " request%s an earlier run left in %s",
                         p->spool_seen.files, p->spool_seen.files == 1 ? "" : "s", p->spool_dir);
        r = thread_names_create(&p->thread, THREAD_NAME_PUSH, push_thread, p);
        if (r < 0)
                return r;
        p->started = true;
        return 0;
}

static struct push *push_free_within(struct push *p, uint64_t within_usec) {
        if (!p)
                return NULL;
        if (p->started) {
                atomic_store(&p->stop_deadline_usec, now_usec(CLOCK_MONOTONIC) + within_usec);
                pthread_mutex_lock(&p->lock);
                atomic_store(&p->stopping, true);
                pthread_cond_broadcast(&p->wake);
                pthread_mutex_unlock(&p->lock);
                pthread_join(p->thread, NULL);
        }
        if (p->curl)
                curl_easy_cleanup(p->curl);
        curl_slist_free_all(p->headers);
        p->spool = push_spool_free(p->spool);
        strbuf_done(&p->answer);
        free_secret(p->secret);
        free(p->url);
        free(p->endpoint);
        free(p->tenant);
        free(p->basic_user);
        free(p->tls_ca_file);
        free(p->spool_dir);
        free(p->service_name);
        free(p->labels);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}

struct push *push_free(struct push *p) {
        return push_free_within(p, p ? p->timeout_usec : 0);
}

struct push *push_free_now(struct push *p) {
        return push_free_within(p, 0);
}

struct push_history *push_history_new(void) {
        struct push_history *h = xcalloc(1, sizeof(*h));

        pthread_mutex_init(&h->lock, NULL);
        return h;
}

struct push_history *push_history_free(struct push_history *h) {
        if (!h)
                return NULL;
        pthread_mutex_destroy(&h->lock);
        free(h);
        return NULL;
}

/* ---- what it reports ---- */

static void history_get(struct push_history *h, struct push_stats *ret) {
        pthread_mutex_lock(&h->lock);
        *ret = h->stats;
        pthread_mutex_unlock(&h->lock);
}

void push_write_metrics(struct push *p, struct prom_writer *w) {
        struct push_stats s;
        uint64_t cumulative[ELEMENTSOF(duration_bounds)], sum = 0;

        history_get(p->history, &s);

        prom_family(w, "armprofd_push_requests_total", PROM_COUNTER,
                    "Push attempts by result: ok (delivered), retry (kept and sent again), rejected (the store "
                    "refused it: not sent again), dropped (never delivered: spool full, too old, unwritable).");
        s.results[PUSH_DROPPED] += s.spool.dropped_full + s.spool.dropped_age + s.spool.dropped_corrupt;
        for (size_t i = 0; i < _PUSH_RESULT_MAX; i++)
                prom_sample_u64(w, (const char *const[]) { "result", result_names[i], NULL }, s.results[i]);
        prom_family(w, "armprofd_push_errors_total", PROM_COUNTER, "Push attempts that failed, by what failed.");
        for (size_t i = 0; i < _PUSH_ERROR_MAX; i++)
                prom_sample_u64(w, (const char *const[]) { "error", error_names[i], NULL }, s.errors[i]);
        prom_family_unit(w, "armprofd_push_bytes_total", PROM_COUNTER, "bytes", "Request bytes delivered to the store.");
        prom_sample_u64(w, NULL, s.bytes);
        prom_family_unit(w, "armprofd_push_spool_bytes", PROM_GAUGE, "bytes",
                         "Bytes of requests waiting in the spool directory.");
        prom_sample_u64(w, NULL, s.spool.bytes);
        prom_family(w, "armprofd_push_spool_files", PROM_GAUGE, "Requests waiting in the spool directory.");
        prom_sample_u64(w, NULL, s.spool.files);
        prom_family(w, "armprofd_push_spool_dropped_total", PROM_COUNTER,
                    "Spooled requests dropped: full (to stay under spool_max_bytes), age (older than max_age), "
                    "corrupt (unreadable files).");
        prom_sample_u64(w, (const char *const[]) { "reason", "full", NULL }, s.spool.dropped_full);
        prom_sample_u64(w, (const char *const[]) { "reason", "age", NULL }, s.spool.dropped_age);
        prom_sample_u64(w, (const char *const[]) { "reason", "corrupt", NULL }, s.spool.dropped_corrupt);
        prom_family_unit(w, "armprofd_push_last_success_timestamp_seconds", PROM_GAUGE, "seconds",
                         "When the store last took a request (Unix time; 0: never).");
        prom_sample_double(w, NULL, (double) s.last_success_unix_ns / NSEC_PER_SEC);
        prom_family(w, "armprofd_push_split_profiles_total", PROM_COUNTER,
                    "Profiles sent as several parts to stay under the store's samples and size limits.");
        prom_sample_u64(w, NULL, s.split_profiles);
        prom_family(w, "armprofd_push_trimmed_samples_total", PROM_COUNTER,
                    "Profile samples (the lightest) left out of pushed profiles to stay under the store's limits.");
        prom_sample_u64(w, NULL, s.trimmed_samples);

        for (size_t i = 0; i < ELEMENTSOF(duration_bounds); i++)
                cumulative[i] = sum += s.duration_counts[i];
        prom_family_unit(w, "armprofd_push_duration_seconds", PROM_HISTOGRAM, "seconds",
                         "How long each push request took, failed ones included.");
        prom_sample_histogram(w, NULL,
                              &(struct prom_histogram) {
                                      .count = s.duration_count,
                                      .sum = s.duration_sum,
                                      .n_buckets = ELEMENTSOF(duration_bounds),
                                      .upper_bounds = duration_bounds,
                                      .cumulative_counts = cumulative,
                              });
}

static json_t *unix_ms(uint64_t ns) {
        return ns ? json_integer((json_int_t) (ns / (NSEC_PER_USEC * USEC_PER_MSEC))) : json_null();
}

json_t *push_status_json(struct push *p) {
        struct push_label *labels = NULL;
        struct push_stats s;
        size_t n_labels = 0;
        char why[MESSAGE_MAX];
        json_t *o, *requests = json_object(), *errors = json_object(), *l = json_object();

        history_get(p->history, &s);

        s.results[PUSH_DROPPED] += s.spool.dropped_full + s.spool.dropped_age + s.spool.dropped_corrupt;
        for (size_t i = 0; i < _PUSH_RESULT_MAX; i++)
                json_object_set_new(requests, result_names[i], json_integer((json_int_t) s.results[i]));
        for (size_t i = 0; i < _PUSH_ERROR_MAX; i++)
                json_object_set_new(errors, error_names[i], json_integer((json_int_t) s.errors[i]));
        if (push_labels_parse(p->labels, &labels, &n_labels, why, sizeof(why)) == 0)
                for (size_t i = 0; i < n_labels; i++)
                        json_object_set_new(l, labels[i].name, json_string(labels[i].value));
        push_labels_free(labels, n_labels);
        o = json_pack("{s:s, s:f, s:s, s:o, s:s, s:b, s:s, s:o, s:o, s:o, s:o}", "url", p->url, "interval_seconds",
                      (double) p->interval_usec / USEC_PER_SEC, "service_name", p->service_name, "labels", l, "auth",
                      p->secret ? (p->bearer ? "bearer" : "basic") : "none", "tenant", set(p->tenant), "state",
                      !s.attempted ? "starting" : s.failing ? "retrying" : "ok", "last_success_unix_ms",
                      unix_ms(s.last_success_unix_ns), "next_attempt_unix_ms",
                      s.failing ? unix_ms(s.next_attempt_unix_ns) : json_null(), "requests", requests, "errors",
                      errors);
        if (s.last_error[0]) {
                json_object_set_new(o, "last_error", json_string(s.last_error));
                json_object_set_new(o, "last_error_unix_ms", unix_ms(s.last_error_unix_ns));
        }
        json_object_set_new(o, "spool",
                            json_pack("{s:s, s:I, s:I, s:I, s:{s:I, s:I, s:I}}", "dir", p->spool_dir, "files",
                                      (json_int_t) s.spool.files, "bytes", (json_int_t) s.spool.bytes, "max_bytes",
                                      (json_int_t) p->spool_max_bytes, "dropped", "full",
                                      (json_int_t) s.spool.dropped_full, "age", (json_int_t) s.spool.dropped_age,
                                      "corrupt", (json_int_t) s.spool.dropped_corrupt));
        return o;
}
