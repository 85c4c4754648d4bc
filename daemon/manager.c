/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-daemon.h>

#include "api.h"
#include "collector.h"
#include "counters.h"
#include "spe-metrics.h"
#include "store.h"
#include "http.h"
#include "log.h"
#include "strbuf.h"

struct manager {
        struct manager_options opts;

        pthread_mutex_t config_lock; /* config is read by HTTP threads (/status) */
        struct config config;        /* in effect */
        struct config loaded;        /* as last loaded: differs where a restart is pending */

        struct collector *collector;
        struct api *api;
        struct http_server *http;

        int epoll_fd;
        int signal_fd;
        int watchdog_fd;
        uint64_t watchdog_usec;
        uint64_t reloads, failed_reloads;
};

static void apply_overrides(struct manager *m, struct config *c) {
        /* --listen was validated by the CLI parser. */
        if (m->opts.listen_override)
                (void) parse_listen_addr(m->opts.listen_override, &c->http.listen);
}

/* exporter_source callbacks: read-only views for the HTTP threads. */

static bool source_alive(void *userdata) {
        struct manager *m = userdata;

        return m->collector && collector_alive(m->collector);
}

static void source_write_metrics(void *userdata, struct prom_writer *w) {
        struct manager *m = userdata;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = collector_snapshot(m->collector);
        const struct collector_view *v = collector_view(snap);
        struct symbols_stats sym;

        prom_family(w, "armprofd_collector_up", PROM_GAUGE,
                    "1 when the collector runs and produces data, 0 when it cannot (see /status).");
        prom_sample_u64(w, (const char *const[]) { "collector", "pmu", NULL }, counters_up(v->pmu));
        prom_sample_u64(w, (const char *const[]) { "collector", "spe", NULL }, v->spe_source != NULL);

        counters_write_metrics(v->pmu, w);
        spe_metrics_write(&(struct spe_metrics_input) {
                                  .totals = store_snapshot_cumulative(snap),
                                  .cpus = v->spe_cpus,
                                  .n_cpus = v->n_spe_cpus,
                                  .latency = v->latency,
                                  .store_bytes = v->store_bytes,
                                  .up = v->spe_source != NULL,
                          },
                          w);
        collector_symbols_stats(m->collector, &sym);
        symbols_metrics_write(&sym, w);
}

static json_t *source_counters(void *userdata, int64_t cpu) {
        struct manager *m = userdata;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = collector_snapshot(m->collector);
        const struct collector_view *v = collector_view(snap);

        return counters_to_json(v->pmu, v->interval_seconds, cpu);
}

static bool source_symbol(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        struct manager *m = userdata;

        return collector_symbol(m->collector, pid, pc, buf, len);
}

static bool source_object(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        struct manager *m = userdata;

        return collector_object(m->collector, pid, pc, buf, len);
}

static int source_node(void *userdata, uint64_t pa) {
        struct manager *m = userdata;

        return collector_node(m->collector, pa);
}

static int source_pprof(void *userdata, uint64_t window_ns, struct strbuf *out) {
        struct manager *m = userdata;

        return collector_profile(m->collector, window_ns, out);
}

static int source_pprof_span(void *userdata, uint64_t start_ns, uint64_t end_ns, struct strbuf *out) {
        struct manager *m = userdata;

        return collector_profile_span(m->collector, start_ns, end_ns, out);
}

static uint64_t source_now_ns(void *userdata) {
        struct manager *m = userdata;

        return collector_now_ns(m->collector);
}

static struct store_snapshot *source_snapshot(void *userdata) {
        struct manager *m = userdata;

        return collector_snapshot(m->collector);
}

/*
 * The settings that only a restart applies: the HTTP server and the store
 * are set up once (reload() keeps them). Same names in "config" and in
 * "config.pending_restart".
 */
static void restart_settings_json(const struct config *c, json_t *obj) {
        char listen[80];

        json_object_set_new(
                obj, "http",
                json_pack("{s:s, s:i, s:i, s:f, s:I}",
                          "listen", listen_addr_to_string(&c->http.listen, listen, sizeof(listen)),
                          "max_connections", (int) c->http.max_connections,
                          "per_ip_connections", (int) c->http.per_ip_connections,
                          "timeout_seconds", (double) c->http.timeout_usec / USEC_PER_SEC,
                          "max_request_bytes", (json_int_t) c->http.max_request_bytes));
        json_object_set_new(
                obj, "store",
                json_pack("{s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                          "epoch_seconds", (double) c->store.epoch_usec / USEC_PER_SEC,
                          "epochs", (json_int_t) c->store.epochs,
                          "hotpcs", (json_int_t) c->store.hotpcs,
                          "hotlines", (json_int_t) c->store.hotlines,
                          "line_offsets", (json_int_t) c->store.line_offsets,
                          "line_size", (json_int_t) c->store.line_size,
                          "max_memory_bytes", (json_int_t) c->store.max_memory_bytes,
                          "memory_bytes", (json_int_t) config_store_bytes(c)));
        json_object_set_new(obj, "privacy",
                            json_pack("{s:b}", "physical_addresses", c->privacy.physical_addresses));
}

/* {section: {key: new value}} for each restart-only setting whose loaded value is not in effect. */
static json_t *pending_restart_json(const json_t *in_effect, const struct config *loaded) {
        json_t *next = json_object(), *pending = json_object();
        const char *section;
        json_t *keys;

        restart_settings_json(loaded, next);
        json_object_foreach(next, section, keys) {
                json_t *diff = json_object();
                const char *key;
                json_t *v;

                json_object_foreach(keys, key, v)
                        if (!json_equal(v, json_object_get(json_object_get(in_effect, section), key)))
                                json_object_set(diff, key, v);
                if (json_object_size(diff) > 0)
                        json_object_set_new(pending, section, diff);
                else
                        json_decref(diff);
        }
        json_decref(next);
        return pending;
}

static void source_fill_status(void *userdata, json_t *status) {
        struct manager *m = userdata;
        uint64_t reloads, failed_reloads;
        struct config c, loaded;
        json_t *cfg;

        pthread_mutex_lock(&m->config_lock);
        c = m->config;
        loaded = m->loaded;
        reloads = m->reloads;
        failed_reloads = m->failed_reloads;
        pthread_mutex_unlock(&m->config_lock);

        /* What is in effect; what a reload loaded but only a restart applies, apart. */
        cfg = json_pack("{s:s, s:{s:b, s:f}, s:I, s:I}",
                        "file", m->opts.config_path,
                        "pmu",
                        "enable", c.pmu.enable,
                        "interval_seconds", (double) c.pmu.interval_usec / USEC_PER_SEC,
                        "reloads", (json_int_t) reloads,
                        "failed_reloads", (json_int_t) failed_reloads);
        restart_settings_json(&c, cfg);
        json_object_set_new(cfg, "pending_restart", pending_restart_json(cfg, &loaded));
        json_object_set_new(status, "config", cfg);
        json_object_set_new(status, "collector_cycles",
                            json_integer((json_int_t) collector_cycles(m->collector)));

        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = collector_snapshot(m->collector);
        const struct collector_view *v = collector_view(snap);
        json_t *spe = json_pack("{s:s, s:b}", "name", "spe", "up", v->spe_source != NULL);

        if (v->spe_source)
                json_object_set_new(spe, "source", json_string(v->spe_source));
        else
                json_object_set_new(spe, "reason", json_string(v->spe_reason));
        if (v->spe_source) {
                json_t *w = json_array();

                for (size_t i = 0; i < v->n_spe_warnings; i++)
                        json_array_append_new(w, json_string(v->spe_warnings[i]));
                json_object_set_new(spe, "warnings", w);
        }
        json_object_set_new(status, "collectors",
                            json_pack("[o, o]", counters_status_json(v->pmu, v->pmu_reason), spe));
}

static int add_fd(int epoll_fd, int fd) {
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

        return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static int setup_watchdog(struct manager *m) {
        uint64_t usec = 0, half;
        struct itimerspec its = {};
        int r;

        /* sd_watchdog_enabled(3): ping at half the interval systemd gives us. */
        r = sd_watchdog_enabled(0, &usec);
        if (r <= 0 || usec == 0)
                return 0;

        half = usec / 2;
        m->watchdog_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (m->watchdog_fd < 0)
                return -errno;
        its.it_value.tv_sec = its.it_interval.tv_sec = (time_t) (half / USEC_PER_SEC);
        its.it_value.tv_nsec = its.it_interval.tv_nsec = (long) (half % USEC_PER_SEC) * 1000;
        if (timerfd_settime(m->watchdog_fd, 0, &its, NULL) < 0)
                return -errno;
        m->watchdog_usec = usec;
        log_debug("Watchdog enabled: %" PRIu64 " ms, pinging every %" PRIu64 " ms",
                  usec / USEC_PER_MSEC, half / USEC_PER_MSEC);
        return add_fd(m->epoll_fd, m->watchdog_fd);
}

int manager_new(const struct manager_options *opts, const struct config *cfg, struct manager **ret) {
        struct manager *m = xcalloc(1, sizeof(*m));
        sigset_t mask;
        int r;

        m->opts = *opts;
        m->config = *cfg;
        apply_overrides(m, &m->config);
        m->loaded = m->config;
        pthread_mutex_init(&m->config_lock, NULL);
        m->epoll_fd = m->signal_fd = m->watchdog_fd = -1;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        m->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        m->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (m->epoll_fd < 0 || m->signal_fd < 0) {
                r = log_error_errno(-errno, "Failed to set up signal handling: %m");
                goto fail;
        }
        r = add_fd(m->epoll_fd, m->signal_fd);
        if (r < 0)
                goto fail;
        r = setup_watchdog(m);
        if (r < 0) {
                log_error_errno(r, "Failed to set up the watchdog timer: %m");
                goto fail;
        }

        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r;
}

/*
 * sd_notify(3) around a reload: RELOADING=1, then READY=1 again. While a
 * replay loads the daemon has not been READY yet: a reload says nothing then.
 * failure: NULL when the reload starts, "" when it is done, else why it failed.
 */
static void notify_reload(struct manager *m, const char *failure) {
        if (!m->http)
                return;
        if (!failure)
                sd_notify(0, "RELOADING=1\nSTATUS=Reloading configuration");
        else if (failure[0])
                sd_notifyf(0, "READY=1\nSTATUS=Serving on %s (reload failed: %s)", http_server_address(m->http),
                           failure);
        else
                sd_notifyf(0, "READY=1\nSTATUS=Serving on %s", http_server_address(m->http));
}

static int serve(struct manager *m) {
        const struct http_route *routes;
        size_t n_routes;
        int r;

        m->api = api_new(&(struct exporter_source) {
                .userdata = m,
                .alive = source_alive,
                .write_metrics = source_write_metrics,
                .fill_status = source_fill_status,
                .counters_json = source_counters,
                .snapshot = source_snapshot,
                .pprof = source_pprof,
                .pprof_span = source_pprof_span,
                .now_ns = source_now_ns,
                .symbol = source_symbol,
                .object = source_object,
                .node = source_node,
        });
        routes = api_routes(&n_routes);
        r = http_server_start(
                &(struct http_server_options) {
                        .listen = m->config.http.listen,
                        .listen_fd = m->opts.listen_fd,
                        .max_connections = m->config.http.max_connections,
                        .per_ip_connections = m->config.http.per_ip_connections,
                        .timeout_sec = (unsigned) (m->config.http.timeout_usec / USEC_PER_SEC),
                        .max_request_bytes = m->config.http.max_request_bytes,
                },
                routes, n_routes, m->api, &m->http);
        if (r < 0)
                return r; /* logged by the server, with the address */
        api_set_server(m->api, m->http);

        log_info("Serving on %s%s", http_server_address(m->http),
                 m->opts.listen_fd >= 0 ? " (socket activation)" : "");
        return 0;
}

int manager_start(struct manager *m) {
        struct collector_options co;
        int r;

        collector_options_from_config(&m->config, &co);
        co.replay = m->opts.replay;
        co.replay_fd = m->opts.replay_fd;
        r = collector_start(&co, &m->collector);
        if (r < 0)
                return log_error_errno(r, "Failed to start the collector thread: %m");
        /* A replay loads on the collector thread while this one handles signals; serve after it. */
        if (m->opts.replay)
                return add_fd(m->epoll_fd, collector_replay_fd(m->collector));
        return serve(m);
}

/* The collector thread has loaded the replay (or failed to): serve it, or stop with its error. */
static int replay_loaded(struct manager *m) {
        char error[512];
        uint64_t v;
        int r;

        if (read(collector_replay_fd(m->collector), &v, sizeof(v)) != sizeof(v))
                return 0; /* not yet */
        (void) epoll_ctl(m->epoll_fd, EPOLL_CTL_DEL, collector_replay_fd(m->collector), NULL);
        r = collector_replay_result(m->collector, error, sizeof(error));
        if (r < 0) {
                log_error("replay: %s", error);
                sd_notifyf(0, "STATUS=Replay failed: %s\nERRNO=%d", error, -r);
                return r;
        }
        r = serve(m);
        if (r < 0) {
                sd_notifyf(0, "STATUS=Failed to start: %s\nERRNO=%d", strerror(-r), -r);
                return r;
        }
        sd_notifyf(0, "READY=1\nSTATUS=Serving on %s", http_server_address(m->http));
        return 0;
}

static void reload(struct manager *m) {
        struct config_error err = {};
        struct config c, effective;
        char old_listen[80], new_listen[80];
        int r;

        notify_reload(m, NULL);
        r = config_load(m->opts.config_path, m->opts.config_explicit, &c, &err);
        if (r < 0) {
                pthread_mutex_lock(&m->config_lock);
                m->failed_reloads++;
                pthread_mutex_unlock(&m->config_lock);
                config_error_log(&err);
                log_error("config: reload failed (%u error%s); keeping the previous configuration",
                          err.n, err.n == 1 ? "" : "s");
                notify_reload(m, err.msg[0]);
                return;
        }
        apply_overrides(m, &c);

        listen_addr_to_string(&m->config.http.listen, old_listen, sizeof(old_listen));
        listen_addr_to_string(&c.http.listen, new_listen, sizeof(new_listen));
        if (!streq(old_listen, new_listen) || c.http.max_connections != m->config.http.max_connections ||
            c.http.per_ip_connections != m->config.http.per_ip_connections ||
            c.http.timeout_usec != m->config.http.timeout_usec ||
            c.http.max_request_bytes != m->config.http.max_request_bytes)
                log_warning("config: [http] changes take effect at the next restart");
        /* The store is sized once at start (its memory bound is fixed). */
        if (c.store.epoch_usec != m->config.store.epoch_usec || c.store.epochs != m->config.store.epochs ||
            c.store.hotpcs != m->config.store.hotpcs || c.store.hotlines != m->config.store.hotlines ||
            c.store.line_offsets != m->config.store.line_offsets || c.store.line_size != m->config.store.line_size ||
            c.privacy.physical_addresses != m->config.privacy.physical_addresses)
                log_warning("config: [store] and [privacy] changes take effect at the next restart");

        struct collector_options co;

        collector_options_from_config(&c, &co);
        collector_reconfigure(m->collector, &co);

        /* Restart-only settings stay as they are (/status shows the new ones as pending). */
        effective = c;
        effective.http = m->config.http;
        effective.store = m->config.store;
        effective.privacy = m->config.privacy;

        pthread_mutex_lock(&m->config_lock);
        m->config = effective;
        m->loaded = c;
        m->reloads++;
        pthread_mutex_unlock(&m->config_lock);

        log_info("Configuration reloaded from %s", m->opts.config_path);
        notify_reload(m, "");
}

static void watchdog_ping(struct manager *m) {
        uint64_t expirations;

        if (read(m->watchdog_fd, &expirations, sizeof(expirations)) < 0)
                return;
        /* Only a collector that makes progress keeps systemd from restarting us. */
        if (collector_alive(m->collector))
                sd_notify(0, "WATCHDOG=1");
        else
                log_warning("Collector loop made no progress; not pinging the watchdog");
}

int manager_run(struct manager *m) {
        if (m->http)
                sd_notifyf(0, "READY=1\nSTATUS=Serving on %s", http_server_address(m->http));
        else
                sd_notify(0, "STATUS=Loading the replay");

        for (;;) {
                struct epoll_event ev[4];
                int n = epoll_wait(m->epoll_fd, ev, ELEMENTSOF(ev), -1);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(-errno, "epoll_wait failed: %m");
                }
                for (int i = 0; i < n; i++) {
                        struct signalfd_siginfo si;

                        if (ev[i].data.fd == m->watchdog_fd) {
                                watchdog_ping(m);
                                continue;
                        }
                        if (m->opts.replay && ev[i].data.fd == collector_replay_fd(m->collector)) {
                                int r = replay_loaded(m);

                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (read(m->signal_fd, &si, sizeof(si)) != sizeof(si))
                                continue;
                        if (si.ssi_signo == SIGHUP) {
                                reload(m);
                                continue;
                        }
                        log_info("Received %s, stopping", strsignal((int) si.ssi_signo));
                        sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
                        return 0;
                }
        }
}

struct manager *manager_free(struct manager *m) {
        if (!m)
                return NULL;
        /* Stop serving before the state handlers read goes away. */
        m->http = http_server_stop(m->http);
        m->collector = collector_stop(m->collector);
        m->api = api_free(m->api);
        safe_close(m->watchdog_fd);
        safe_close(m->signal_fd);
        safe_close(m->epoll_fd);
        pthread_mutex_destroy(&m->config_lock);
        free(m);
        return NULL;
}
