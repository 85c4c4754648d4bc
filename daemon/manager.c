/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "api.h"
#include "collector.h"
#include "push.h"
#include "push-interval.h"
#include "counters.h"
#include "sampler-metrics.h"
#include "spe-metrics.h"
#include "symbolizer.h"
#include "store.h"
#include "http.h"
#include "log.h"
#include "web-config.h"
#include "strbuf.h"

struct manager {
        struct manager_options opts;

        pthread_mutex_t config_lock; /* config is read by HTTP threads (/status) */
        struct config config;        /* in effect */
        struct config loaded;        /* as last loaded: differs where a restart is pending */

        struct collector *collector;
        struct push_interval *push_interval;    /* what each push request holds; kept across reloads */
        struct push_history *push_history;      /* what every push counted: kept across reloads */
        pthread_mutex_t push_lock;              /* guards push: HTTP threads read its figures */
        struct push *push;                      /* NULL: [push] url unset */
        struct api *api;
        struct http_server *http;

        sd_event *event;
        sd_event_source *signals[3];    /* SIGTERM, SIGINT, SIGHUP */
        sd_event_source *watchdog;
        sd_event_source *replay_done;
        uint64_t watchdog_usec;
        uint64_t reloads, failed_reloads;
        int replay_result;      /* the replay's error, when it ended the loop */
};

static void apply_overrides(struct manager *m, struct config *c) {
        /* --listen was validated by the CLI parser. */
        if (m->opts.listen_override)
                (void) parse_listen_addr(m->opts.listen_override, &c->http.listen);
        if (m->opts.web_config_override)
                snprintf(c->http.web_config, sizeof(c->http.web_config), "%s", m->opts.web_config_override);
}

/* [http] web_config read and checked (NULL when none is set); errors logged. */
static int load_web_config(const struct config *c, struct web_config **ret) {
        char err[MESSAGE_MAX];
        int r;

        if (!c->http.web_config[0]) {
                *ret = NULL;
                return 0;
        }
        r = web_config_load(c->http.web_config, ret, err, sizeof(err));
        if (r < 0)
                log_error("config: [http] web_config: %s", err);
        return r;
}

/* api_provider callbacks: read-only views for the HTTP threads. */

static bool provider_alive(void *userdata) {
        struct manager *m = userdata;

        return m->collector && collector_alive(m->collector);
}

/* The CPU budget (budget.h), and the sampling rates in effect because of it. */
static void budget_write_metrics(const struct collector_view *v, const struct source_status *spe,
                                 const struct source_status *sampler, struct prom_writer *w) {
        const struct budget *b = &v->budget;

        prom_family(w, "armprofd_budget_throttled", PROM_GAUGE,
                    "1 while the collector's CPU share over the last window was above [budget] cpu_percent and "
                    "sampling is slowed down (armprofd_budget_slowdown), else 0.");
        prom_sample_u64(w, NULL, budget_throttled(b));
        prom_family(w, "armprofd_budget_slowdown", PROM_GAUGE,
                    "How many times less often than configured the sources sample (a power of two; 1: as configured).");
        prom_sample_u64(w, NULL, UINT64_C(1) << b->shift);
        prom_family_unit(w, "armprofd_budget_limit_ratio", PROM_GAUGE, "ratio",
                         "[budget] cpu_percent as a ratio of the host's CPU capacity (0: no budget).");
        prom_sample_double(w, NULL, b->opts.cpu_percent / 100.0);
        if (b->last_percent >= 0) {
                prom_family_unit(w, "armprofd_budget_cpu_ratio", PROM_GAUGE, "ratio",
                                 "The collector thread's CPU time over the last budget window, as a ratio of the "
                                 "host's CPU capacity.");
                prom_sample_double(w, NULL, b->last_percent / 100.0);
        }
                prom_family(w, "armprofd_budget_changes_total", PROM_COUNTER,
                    "Changes of the slowdown: raise (over the budget), restore (a step back).");
        prom_sample_u64(w, (const char *const[]) { "direction", "raise", NULL }, b->raises);
        prom_sample_u64(w, (const char *const[]) { "direction", "restore", NULL }, b->restores);
        if (spe->state != SOURCE_OFF && spe->sample_period && v->budget_applies) {
                prom_family(w, "armprofd_spe_sample_period", PROM_GAUGE,
                            "The SPE sampling interval in effect, in operations ([spe] period x the budget's slowdown).");
                prom_sample_u64(w, NULL, spe->sample_period);
        }
        if (sampler->state != SOURCE_OFF && sampler->sample_frequency) {
                prom_family_unit(w, "armprofd_sampler_frequency_hertz", PROM_GAUGE, "hertz",
                                 "The sampler's frequency in effect per CPU ([sampler] frequency / the budget's "
                                 "slowdown).");
                prom_sample_u64(w, NULL, sampler->sample_frequency);
        }
}

static void provider_write_metrics(void *userdata, struct prom_writer *w) {
        struct manager *m = userdata;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = collector_snapshot(m->collector);
        const struct collector_view *v = collector_view(snap);
        const struct source_status *spe = collector_view_spe(v), *sampler = collector_view_sampler(v);
        struct prom_counter_row rows[MAX(SYMBOLIZER_METRIC_ROWS, SAMPLE_SINK_METRIC_ROWS)];
        struct sample_sink_stats ss;
        struct symbols_stats sym;

        prom_family(w, "armprofd_collector_up", PROM_GAUGE,
                    "1 when the collector runs and produces data, 0 when it cannot (see /status).");
        prom_sample_u64(w, (const char *const[]) { "collector", "pmu", NULL }, counters_up(v->pmu));
        prom_sample_u64(w, (const char *const[]) { "collector", "spe", NULL }, source_status_up(spe));
        prom_sample_u64(w, (const char *const[]) { "collector", "sampler", NULL }, source_status_up(sampler));

        budget_write_metrics(v, spe, sampler, w);
        counters_write_metrics(v->pmu, w);
        spe_metrics_write(&(struct spe_metrics_input) {
                                  .totals = store_snapshot_cumulative(snap),
                                  .cpus = spe->cpus,
                                  .n_cpus = spe->n_cpus,
                                  .latency = store_snapshot_latency(snap),
                                  .store_bytes = v->store_bytes,
                                  /* Live SPE only: a replay reads no /proc. */
                                  .procs = spe->n_cpus > 0 && streq(spe->kind, "spe") ? &spe->procs : NULL,
                                  .up = source_status_up(spe),
                          },
                          w);
        sampler_metrics_write(&(struct sampler_metrics_input) {
                                      .totals = store_snapshot_cumulative(snap),
                                      .cpus = sampler->sampler_cpus,
                                      .n_cpus = sampler->n_sampler_cpus,
                                      .procs = &sampler->procs,
                              },
                              w);
        if (collector_sample_stats(m->collector, &ss))
                prom_write_counter_rows(w, rows, sample_sink_metric_rows(&ss, &sampler->procs, rows));
        collector_symbols_stats(m->collector, &sym);
        prom_write_counter_rows(w, rows, symbolizer_metric_rows(&sym, rows));
        pthread_mutex_lock(&m->push_lock);
        if (m->push)
                push_write_metrics(m->push, w);
        pthread_mutex_unlock(&m->push_lock);
}

static json_t *provider_counters(void *userdata, int64_t cpu) {
        struct manager *m = userdata;
        _cleanup_(store_snapshot_unrefp) struct store_snapshot *snap = collector_snapshot(m->collector);
        const struct collector_view *v = collector_view(snap);

        return counters_to_json(v->pmu, v->interval_seconds, cpu);
}

static bool provider_symbol(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        struct manager *m = userdata;

        return collector_symbol(m->collector, pid, pc, buf, len);
}

static bool provider_source(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        struct manager *m = userdata;

        return collector_source(m->collector, pid, pc, buf, len);
}

static bool provider_data_symbol(void *userdata, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                                 size_t member_len) {
        struct manager *m = userdata;

        return collector_data_symbol(m->collector, pid, va, buf, len, member, member_len);
}

static bool provider_object(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        struct manager *m = userdata;

        return collector_object(m->collector, pid, pc, buf, len);
}

static bool provider_region(void *userdata, uint32_t pid, uint64_t va, char *name, size_t name_len,
                            uint64_t *ret_offset) {
        struct manager *m = userdata;

        return collector_region(m->collector, pid, va, name, name_len, ret_offset);
}

static int provider_node(void *userdata, uint64_t pa) {
        struct manager *m = userdata;

        return collector_node(m->collector, pa);
}

static bool provider_cgroup(void *userdata, uint32_t pid, char *path, size_t path_len, char *service,
                            size_t service_len) {
        struct manager *m = userdata;

        return collector_cgroup(m->collector, pid, path, path_len, service, service_len);
}

static void provider_bare_symbols(void *userdata, const uint64_t *addrs, size_t n, symbolz_found_fn found,
                                  void *ctx) {
        struct manager *m = userdata;

        symbolizer_bare_names(collector_symbolizer(m->collector), addrs, n, found, ctx);
}

static int provider_pprof(void *userdata, uint64_t window_ns, struct strbuf *out) {
        struct manager *m = userdata;

        return collector_profile(m->collector, window_ns, out);
}

static int provider_pprof_span(void *userdata, uint64_t start_ns, uint64_t end_ns, struct strbuf *out) {
        struct manager *m = userdata;

        return collector_profile_span(m->collector, start_ns, end_ns, out);
}

static bool provider_epoch_end_at(void *userdata, uint64_t at_ns) {
        struct manager *m = userdata;

        return collector_request_epoch_end(m->collector, at_ns);
}

static uint64_t provider_now_ns(void *userdata) {
        struct manager *m = userdata;

        return collector_now_ns(m->collector);
}

static struct store_snapshot *provider_snapshot(void *userdata) {
        struct manager *m = userdata;

        return collector_snapshot(m->collector);
}

/*
 * The settings that only a restart applies: the HTTP server, the store and
 * the SPE and sampler sources are set up once (reload() keeps them; the
 * budget moves the SPE period and the sampler's rate from what they were
 * started with). Same names in "config" and in "config.pending_restart".
 */
static void restart_settings_json(const struct config *c, json_t *obj) {
        char listen[LISTEN_ADDR_STR_MAX];

        json_object_set_new(
                obj, "http",
                json_pack("{s:s, s:i, s:i, s:f, s:I, s:s}",
                          "listen", listen_addr_to_string(&c->http.listen, listen, sizeof(listen)),
                          "max_connections", (int) c->http.max_connections,
                          "per_ip_connections", (int) c->http.per_ip_connections,
                          "timeout_seconds", (double) c->http.timeout_usec / USEC_PER_SEC,
                          "max_request_bytes", (json_int_t) c->http.max_request_bytes,
                          "detail", c->http.detail_any ? "any" : "loopback"));
        json_object_set_new(
                obj, "store",
                json_pack("{s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                          "epoch_seconds", (double) c->store.epoch_usec / USEC_PER_SEC,
                          "epochs", (json_int_t) c->store.epochs,
                          "hotpcs", (json_int_t) c->store.hotpcs,
                          "hotlines", (json_int_t) c->store.hotlines,
                          "line_offsets", (json_int_t) c->store.line_offsets,
                          "line_size", (json_int_t) c->store.line_size,
                          "stacks", (json_int_t) c->store.stacks,
                          "max_memory_bytes", (json_int_t) c->store.max_memory_bytes,
                          "memory_bytes", (json_int_t) config_store_bytes(c)));
        json_object_set_new(obj, "privacy",
                            json_pack("{s:b, s:b, s:b}", "physical_addresses", c->privacy.physical_addresses,
                                      "kernel_addresses", c->privacy.kernel_addresses, "data_addresses",
                                      c->privacy.data_addresses));
        json_object_set_new(
                obj, "sampler",
                json_pack("{s:s, s:s, s:I, s:I, s:s, s:I, s:I}",
                          "enable", c->sampler.enable == CONFIG_SPE_YES ? "yes"
                                    : c->sampler.enable == CONFIG_SPE_NO ? "no" : "auto",
                          "event", c->sampler.event,
                          "frequency", (json_int_t) c->sampler.frequency,
                          "max_stack", (json_int_t) c->sampler.max_stack,
                          "unwind", c->sampler.unwind == CONFIG_UNWIND_FP ? "fp"
                                    : c->sampler.unwind == CONFIG_UNWIND_DWARF ? "dwarf" : "auto",
                          "stack_size", (json_int_t) c->sampler.stack_size,
                          "data_buffer", (json_int_t) c->sampler.data_buffer));
        json_object_set_new(
                obj, "spe",
                json_pack("{s:s, s:I, s:b, s:b, s:b, s:b, s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:f}",
                          "enable", c->spe.enable == CONFIG_SPE_YES ? "yes" : c->spe.enable == CONFIG_SPE_NO ? "no" : "auto",
                          "period", (json_int_t) c->spe.period,
                          "jitter", c->spe.jitter,
                          "load_filter", c->spe.load_filter,
                          "store_filter", c->spe.store_filter,
                          "branch_filter", c->spe.branch_filter,
                          "min_latency", (json_int_t) c->spe.min_latency,
                          "event_filter", (json_int_t) c->spe.event_filter,
                          "inv_event_filter", (json_int_t) c->spe.inv_event_filter,
                          "exclude_kernel", c->spe.exclude_kernel,
                          "aux_buffer", (json_int_t) c->spe.aux_buffer,
                          "data_buffer", (json_int_t) c->spe.data_buffer,
                          "watermark", (json_int_t) c->spe.watermark,
                          "drain_interval_seconds", (double) c->spe.drain_interval_usec / USEC_PER_SEC));
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

/* A warning for each section of restart-only settings that a reload changed. */
static void warn_restart_only(const struct config *running, const struct config *loaded) {
        json_t *now = json_object(), *pending, *keys;
        const char *section;

        restart_settings_json(running, now);
        pending = pending_restart_json(now, loaded);
        json_object_foreach(pending, section, keys)
                log_warning("config: [%s] changes take effect at the next restart", section);
        json_decref(pending);
        json_decref(now);
}

/* The sampler's entry in /status "collectors": what it samples, how, and per CPU what it got. */
static json_t *sampler_status_json(const struct config *c, const struct source_status *st, bool kernel_named) {
        static const char *const unwind[] = {
                [CONFIG_UNWIND_AUTO] = "auto", [CONFIG_UNWIND_FP] = "fp", [CONFIG_UNWIND_DWARF] = "dwarf",
        };
        json_t *o = json_pack("{s:s, s:b, s:s}", "name", "sampler", "up", source_status_up(st), "state",
                              source_state_to_string(st->state));

        if (!source_status_up(st) || st->reason[0])
                json_object_set_new(o, "reason", json_string(st->reason));
        if (st->state == SOURCE_OFF)
                return o;
        json_object_set_new(o, "event", json_string(c->sampler.event));
        json_object_set_new(o, "frequency_hz", json_integer(c->sampler.frequency));
        json_object_set_new(o, "unwind", json_string(unwind[c->sampler.unwind]));
        /* What kernel_addresses asked for may not be in effect: kallsyms without addresses. */
        json_object_set_new(o, "kernel_frames", json_string(kernel_named ? "kallsyms" : "[kernel]"));
        if (st->sample_period)
                json_object_set_new(o, "period_ns", json_integer((json_int_t) st->sample_period));
        json_t *w = json_array(), *cpus = json_array();

        for (size_t i = 0; i < st->n_warnings; i++)
                json_array_append_new(w, json_string(st->warnings[i]));
        json_object_set_new(o, "warnings", w);
        for (size_t i = 0; i < st->n_sampler_cpus; i++) {
                const struct sampler_cpu_stats *cs = &st->sampler_cpus[i];
                json_t *e = json_pack("{s:I, s:s, s:I, s:I, s:I, s:I}", "cpu", (json_int_t) cs->cpu, "state",
                                      cs->state ?: "unknown", "samples", (json_int_t) cs->samples,
                                      "lost_samples", (json_int_t) cs->lost_samples, "lost_records",
                                      (json_int_t) cs->lost, "throttled", (json_int_t) cs->throttles);

                if (cs->note[0])
                        json_object_set_new(e, "note", json_string(cs->note));
                json_array_append_new(cpus, e);
        }
        json_object_set_new(o, "cpus", cpus);
        return o;
}

/*
 * The CPU budget: the limit, the collector's share over the last window
 * (null before the first), whether sampling is slowed down and the rates
 * in effect.
 */
static json_t *budget_status_json(const struct collector_view *v, const struct source_status *spe,
                                  const struct source_status *sampler) {
        const struct budget *b = &v->budget;
        json_t *o = json_pack("{s:f, s:f, s:b, s:b, s:I, s:I, s:I, s:I}",
                              "cpu_percent", b->opts.cpu_percent,
                              "window_seconds", (double) b->opts.window_ns / NSEC_PER_SEC,
                              "applies", v->budget_applies,
                              "throttled", budget_throttled(b),
                              "slowdown", (json_int_t) (UINT64_C(1) << b->shift),
                              "windows", (json_int_t) b->windows,
                              "raises", (json_int_t) b->raises,
                              "restores", (json_int_t) b->restores);

        json_object_set_new(o, "collector_cpu_percent", b->last_percent >= 0 ? json_real(b->last_percent) : json_null());
        json_object_set_new(o, "cpus", json_integer((json_int_t) b->opts.n_cpus));
        if (spe->state != SOURCE_OFF && spe->sample_period && v->budget_applies)
                json_object_set_new(o, "spe_period", json_integer((json_int_t) spe->sample_period));
        if (sampler->state != SOURCE_OFF && sampler->sample_frequency)
                json_object_set_new(o, "sampler_frequency", json_integer((json_int_t) sampler->sample_frequency));
        return o;
}

static void provider_fill_status(void *userdata, json_t *status) {
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
        const struct source_status *st = collector_view_spe(v);
        json_t *spe = json_pack("{s:s, s:b, s:s}", "name", "spe", "up", source_status_up(st), "state",
                                source_state_to_string(st->state));

        /* A source says what it is and what is wrong with its input; none, why. */
        if (st->state != SOURCE_OFF) {
                json_t *w = json_array();

                json_object_set_new(spe, "source", json_string(st->kind));
                for (size_t i = 0; i < st->n_warnings; i++)
                        json_array_append_new(w, json_string(st->warnings[i]));
                json_object_set_new(spe, "warnings", w);
        }
        if (!source_status_up(st) || st->reason[0])
                json_object_set_new(spe, "reason", json_string(st->reason));
        if (st->sample_period)
                json_object_set_new(spe, "period", json_integer((json_int_t) st->sample_period));
        /* A live source says per CPU what samples and why not. */
        if (st->n_cpus > 0 && st->cpus[0].state) {
                json_t *cpus = json_array();

                for (size_t i = 0; i < st->n_cpus; i++) {
                        const struct spe_stream_stats *cs = &st->cpus[i];
                        json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:I}", "cpu", (json_int_t) cs->cpu,
                                              "state", cs->state, "records", (json_int_t) cs->records,
                                              "aux_truncated", (json_int_t) cs->aux_truncated, "lost",
                                              (json_int_t) cs->lost, "unattributed", (json_int_t) cs->unattributed);

                        /* Of the unattributed: no thread either, and why (spe-stream.h). */
                        json_object_set_new(o, "thread_unknown",
                                            json_pack("{s:I, s:I, s:I}", "event_off", (json_int_t) cs->thread_unknown_off,
                                                      "lost", (json_int_t) cs->thread_unknown_lost, "no_clock",
                                                      (json_int_t) cs->thread_unknown_no_clock));
                        /* A fatal buffer fault left its buffer stopped, the event on: restarted. */
                        json_object_set_new(o, "aux_fault_restarts", json_integer((json_int_t) cs->aux_fault_restarts));
                        /* Where its records sit in perf time (the user page's conversion), if anywhere. */
                        json_object_set_new(o, "time_conversion", json_boolean(cs->time_conv));
                        if (cs->last_record_ns)
                                json_object_set_new(o, "last_record_ns", json_integer((json_int_t) cs->last_record_ns));
                        if (cs->note[0])
                                json_object_set_new(o, "note", json_string(cs->note));
                        json_array_append_new(cpus, o);
                }
                json_object_set_new(spe, "cpus", cpus);
        }
        json_object_set_new(status, "collectors",
                            json_pack("[o, o, o]", counters_status_json(v->pmu, v->sources[0].reason), spe,
                                      sampler_status_json(&c, collector_view_sampler(v),
                                                          collector_kernel_frames_named(m->collector))));
        json_object_set_new(status, "budget", budget_status_json(v, collector_view_spe(v), collector_view_sampler(v)));
        pthread_mutex_lock(&m->push_lock);
        json_object_set_new(status, "push", m->push ? push_status_json(m->push) : json_pack("{s:s}", "state", "off"));
        pthread_mutex_unlock(&m->push_lock);
        /* Which source /debug/pprof/profile answers from. */
        json_object_set_new(status, "profile",
                            json_string(source_status_up(collector_view_sampler(v)) ? "sampler" : "spe"));
}

static void watchdog_ping(struct manager *m) {
        /* Only a collector that makes progress keeps systemd from restarting us. */
        if (collector_alive(m->collector))
                sd_notify(0, "WATCHDOG=1");
        else
                log_warning("Collector loop made no progress; not pinging the watchdog");
}

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;
        int k;

        watchdog_ping(m);
        k = sd_event_source_set_time(s, usec + m->watchdog_usec / 2);
        if (k < 0)
                log_error_errno(k, "Cannot re-arm the watchdog timer: %m");
        return 0;
}

/*
 * sd_event_set_watchdog(3) would ping at every loop iteration whatever the
 * collector does; a ping must mean the collector makes progress, so this
 * is a timer at half the interval systemd gives us (sd_watchdog_enabled(3))
 * that asks collector_alive() first.
 */
static int setup_watchdog(struct manager *m) {
        uint64_t usec = 0, half;
        int r;

        r = sd_watchdog_enabled(0, &usec);
        if (r <= 0 || usec == 0)
                return 0;

        half = usec / 2;
        r = sd_event_add_time_relative(m->event, &m->watchdog, CLOCK_MONOTONIC, half, 1, on_watchdog, m);
        if (r < 0)
                return r;
        /* Time sources start SD_EVENT_ONESHOT; on_watchdog() moves this one on by half an interval. */
        r = sd_event_source_set_enabled(m->watchdog, SD_EVENT_ON);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->watchdog, "watchdog");
        m->watchdog_usec = usec;
        log_debug("Watchdog enabled: %" PRIu64 " ms, pinging every %" PRIu64 " ms",
                  usec / USEC_PER_MSEC, half / USEC_PER_MSEC);
        return 0;
}

static void reload(struct manager *m);

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct manager *m = userdata;

        if (si->ssi_signo == SIGHUP) {
                reload(m);
                return 0;
        }
        log_info("Received %s, stopping", strsignal((int) si->ssi_signo));
        sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
        return sd_event_exit(m->event, 0);
}

int manager_new(const struct manager_options *opts, const struct config *cfg, struct manager **ret) {
        static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
        struct manager *m = xcalloc(1, sizeof(*m));
        int r;

        m->opts = *opts;
        m->config = *cfg;
        apply_overrides(m, &m->config);
        m->loaded = m->config;
        pthread_mutex_init(&m->config_lock, NULL);
        pthread_mutex_init(&m->push_lock, NULL);
        m->push_history = push_history_new();

        r = sd_event_new(&m->event);
        if (r < 0) {
                log_error_errno(r, "Failed to create the event loop: %m");
                goto fail;
        }
        /* The signals are blocked in every thread (main()): sd-event reads them with a signalfd. */
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
                r = sd_event_add_signal(m->event, &m->signals[i], sigs[i], on_signal, m);
                if (r < 0) {
                        log_error_errno(r, "Failed to set up signal handling: %m");
                        goto fail;
                }
        }
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
 * sd_notify(3) around a reload: RELOADING=1, then READY=1 again. Before the
 * server runs the daemon has not been READY yet: a reload says nothing then.
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
        _cleanup_(web_config_unrefp) struct web_config *web = NULL;
        const struct http_route *routes;
        size_t n_routes;
        int r;

        m->api = api_new(&(struct api_provider) {
                .userdata = m,
                .alive = provider_alive,
                .write_metrics = provider_write_metrics,
                .fill_status = provider_fill_status,
                .counters_json = provider_counters,
                .snapshot = provider_snapshot,
                .pprof = provider_pprof,
                .pprof_span = provider_pprof_span,
                .now_ns = provider_now_ns,
                .symbol = provider_symbol,
                .object = provider_object,
                .source = provider_source,
                .data_symbol = provider_data_symbol,
                .node = provider_node,
                .cgroup = provider_cgroup,
                .epoch_end_at = provider_epoch_end_at,
                .region = provider_region,
                .bare_symbols = provider_bare_symbols,
                .privacy = collector_privacy(m->collector),
        });
        routes = api_routes(&n_routes);
        r = load_web_config(&m->config, &web);
        if (r < 0)
                return r;
        r = http_server_start(
                &(struct http_server_options) {
                        .listen = m->config.http.listen,
                        .listen_fd = m->opts.listen_fd,
                        .max_connections = m->config.http.max_connections,
                        .per_ip_connections = m->config.http.per_ip_connections,
                        .timeout_sec = (unsigned) (m->config.http.timeout_usec / USEC_PER_SEC),
                        .max_request_bytes = m->config.http.max_request_bytes,
                        .detail_any = m->config.http.detail_any,
                        .web = web,
                },
                routes, n_routes, m->api, &m->http);
        if (r < 0)
                return r; /* logged by the server, with the address */

        log_info("Serving on %s%s%s%s", http_server_address(m->http),
                 m->opts.listen_fd >= 0 ? " (socket activation)" : "",
                 web && web->tls.enabled ? " over TLS" : "",
                 web_config_authenticates(web) ? ", to authenticated clients" : "");
        return 0;
}

/* The replay has ended on the collector thread: say so, or stop with its error. */
static int on_replay_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct manager *m = userdata;
        char error[SOURCE_REASON_MAX];
        uint64_t v;
        int r;

        if (read(fd, &v, sizeof(v)) != sizeof(v))
                return 0; /* not yet */
        m->replay_done = sd_event_source_disable_unref(m->replay_done);
        r = collector_replay_result(m->collector, error, sizeof(error));
        if (r < 0) {
                log_error("replay: %s", error);
                sd_notifyf(0, "STATUS=Replay failed: %s\nERRNO=%d", error, -r);
                m->replay_result = r;
                return sd_event_exit(m->event, 0);
        }
        sd_notifyf(0, "STATUS=Serving on %s (replay of %s done)", http_server_address(m->http), m->opts.replay->path);
        return 0;
}

/* What a new push sends first: README.md "Send profiles to Pyroscope", "What goes". */
enum push_takeover {
        PUSH_AT_START,          /* what the store collected since the daemon started */
        PUSH_GOES_ON,           /* a reload: from where the push it replaces stopped */
        PUSH_BEGINS_NOW,        /* a reload turned it on: from now, not what the store kept from before */
};

/*
 * The push of configuration c, started, in place of the one running (which
 * pushes, or spools, what it collected before it goes). Errors are logged,
 * naming the key: the caller decides whether they end the daemon.
 */
static int push_replace(struct manager *m, const struct config *c, enum push_takeover how) {
        bool reloading = how != PUSH_AT_START;
        struct push_options o;
        struct push *old, *p = NULL;
        char err[MESSAGE_MAX];
        int r;

        pthread_mutex_lock(&m->push_lock);
        old = TAKE_PTR(m->push);
        pthread_mutex_unlock(&m->push_lock);
        /*
         * One push owns the spool at a time, so the old one goes first. At a
         * reload without waiting for the store (the main loop would stall):
         * what it had in flight is spooled, and the new push sends it, the
         * same bytes.
         */
        if (reloading)
                push_free_now(old);
        else
                push_free(old);
        if (!c->push.url[0])
                return 0;
        if (!m->push_interval)
                r = push_interval_new(m->collector, c, &m->push_interval, err, sizeof(err));
        else
                r = push_interval_configure(m->push_interval, c, err, sizeof(err));
        if (r < 0)
                return log_error_errno(r, "config: [push] labels: %s", err);
        if (how == PUSH_BEGINS_NOW)
                push_interval_begin_now(m->push_interval);
        struct push_source src = push_interval_source(m->push_interval);

        config_push_options(c, &o);
        o.service_name = push_interval_service_name(m->push_interval);
        r = push_new(&o, &src, m->push_history, &p, err, sizeof(err));
        if (r < 0)
                return log_error_errno(r, "config: %s", err);
        r = push_start(p);
        if (r < 0) {
                push_free(p);
                return log_error_errno(r, "Failed to start the push thread: %m");
        }
        pthread_mutex_lock(&m->push_lock);
        m->push = p;
        pthread_mutex_unlock(&m->push_lock);
        log_info("push: to %s every %.3g s", o.url, (double) o.interval_usec / USEC_PER_SEC);
        return 0;
}

/*
 * The collector starts (a replay runs on its loop, between its timers) and
 * the server serves at once: /status says how far the replay is.
 */
int manager_start(struct manager *m) {
        struct collector_options co;
        int r;

        collector_options_from_config(&m->config, &co);
        co.replay = m->opts.replay;
        co.replay_fd = m->opts.replay_fd;
        r = collector_start(&co, &m->collector);
        if (r < 0)
                return log_error_errno(r, "Failed to start the collector thread: %m");
        if (m->opts.replay) {
                r = sd_event_add_io(m->event, &m->replay_done, collector_replay_fd(m->collector), EPOLLIN,
                                    on_replay_done, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to watch the replay: %m");
                (void) sd_event_source_set_description(m->replay_done, "replay-done");
        }
        r = push_replace(m, &m->config, PUSH_AT_START);
        if (r < 0)
                return r;
        return serve(m);
}

static void reload_failed(struct manager *m, const char *why) {
        pthread_mutex_lock(&m->config_lock);
        m->failed_reloads++;
        pthread_mutex_unlock(&m->config_lock);
        log_error("config: reload failed; keeping the previous configuration");
        notify_reload(m, why);
}

static void reload(struct manager *m) {
        _cleanup_(web_config_unrefp) struct web_config *web = NULL;
        struct config_error err = {};
        struct config c, effective;
        enum push_takeover how;
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
        /* Read anew even when unchanged: SIGHUP is how renewed certificates are read. */
        if (load_web_config(&c, &web) < 0) {
                reload_failed(m, "[http] web_config is not valid (see the log)");
                return;
        }
        if (http_server_set_web_config(m->http, web) < 0) {
                reload_failed(m, "[http] web_config could not be served (see the log)");
                return;
        }
        if (c.push.url[0]) {
                struct push_options po;
                char why[MESSAGE_MAX];

                /* What would stop the new push, found while the old one still runs. */
                config_push_options(&c, &po);
                r = push_check(&po, why, sizeof(why));
                if (r < 0) {
                        log_error("config: %s", why);
                        reload_failed(m, why);
                        return;
                }
        }
        /* Anew even when [push] is unchanged: SIGHUP is how rotated credentials are read again. */
        how = m->push ? PUSH_GOES_ON : PUSH_BEGINS_NOW;
        r = push_replace(m, &c, how);
        if (r < 0) {
                /* Failed after the check (a file gone meanwhile, the spool unreadable): the old push again. */
                if (push_replace(m, &m->config, how) < 0)
                        log_error("push: off until the configuration is fixed and reloaded");
                reload_failed(m, "[push] could not start (see the log)");
                return;
        }

        warn_restart_only(&m->config, &c);

        struct collector_options co;

        collector_options_from_config(&c, &co);
        collector_reconfigure(m->collector, &co);

        /* Restart-only settings stay as they are (/status shows the new ones as pending). */
        effective = c;
        effective.http = m->config.http;
        memcpy(effective.http.web_config, c.http.web_config, sizeof(c.http.web_config));
        effective.store = m->config.store;
        effective.privacy = m->config.privacy;
        effective.spe = m->config.spe;
        effective.sampler = m->config.sampler;

        pthread_mutex_lock(&m->config_lock);
        m->config = effective;
        m->loaded = c;
        m->reloads++;
        pthread_mutex_unlock(&m->config_lock);

        log_info("Configuration reloaded from %s", m->opts.config_path);
        notify_reload(m, "");
}

int manager_run(struct manager *m) {
        int r;

        if (m->opts.replay)
                sd_notifyf(0, "READY=1\nSTATUS=Serving on %s, replaying %s", http_server_address(m->http),
                           m->opts.replay->path);
        else
                sd_notifyf(0, "READY=1\nSTATUS=Serving on %s", http_server_address(m->http));
        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "The main loop failed: %m");
        return m->replay_result;
}

struct manager *manager_free(struct manager *m) {
        if (!m)
                return NULL;
        /* Stop serving before the state handlers read goes away. */
        m->http = http_server_stop(m->http);
        /* Before the collector: its last request is built from the collector's epochs. */
        m->push = push_free(m->push);
        m->push_interval = push_interval_free(m->push_interval);
        m->push_history = push_history_free(m->push_history);
        m->collector = collector_stop(m->collector);
        m->api = api_free(m->api);
        m->replay_done = sd_event_source_disable_unref(m->replay_done);
        m->watchdog = sd_event_source_disable_unref(m->watchdog);
        for (size_t i = 0; i < ELEMENTSOF(m->signals); i++)
                m->signals[i] = sd_event_source_disable_unref(m->signals[i]);
        m->event = sd_event_unref(m->event);
        pthread_mutex_destroy(&m->config_lock);
        pthread_mutex_destroy(&m->push_lock);
        free(m);
        return NULL;
}
