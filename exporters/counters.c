/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "counters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

#define NS_PER_SEC 1e9

/* A "pmu" label only where there is more than one kind of core (big.LITTLE). */
static bool heterogeneous(const struct pmu_snapshot *s) {
        for (size_t i = 1; i < s->n_cpus; i++)
                if (!streq(s->cpus[i].pmu, s->cpus[0].pmu))
                        return true;
        return false;
}

static void cpu_labels(const struct pmu_cpu_snapshot *c, bool with_pmu,
                       char *cpu, size_t len, const char *labels[static 7]) {
        size_t n = 0;

        snprintf(cpu, len, "%u", c->cpu);
        labels[n++] = "cpu";
        labels[n++] = cpu;
        if (with_pmu && c->pmu[0]) {
                labels[n++] = "pmu";
                labels[n++] = c->pmu;
        }
        labels[n] = NULL;
}

bool counters_up(const struct pmu_snapshot *s) {
        return s && (s->state == PMU_STATE_OK || s->state == PMU_STATE_DEGRADED);
}

void counters_write_metrics(const struct pmu_snapshot *s, struct prom_writer *w) {
        bool with_pmu;

        if (!s)
                return;

        prom_family(w, "armprofd_pmu_event_available", PROM_GAUGE,
                    "1 when the event is counted on at least one online CPU, 0 when the hardware, "
                    "kernel or permissions do not allow it.");
        for (int e = 0; e < _PMU_EVENT_MAX; e++)
                if (s->events[e].configured)
                        prom_sample_u64(w, (const char *const[]) { "event", pmu_event_get(e)->name, NULL },
                                        s->events[e].available);

        with_pmu = heterogeneous(s);

        /* Counters: only CPUs where the event counted in the last interval (running == 0
         * means "not counted", which is exported as no sample, never as 0). */
        for (int e = 0; e < _PMU_EVENT_MAX; e++) {
                const struct pmu_event_def *d = pmu_event_get(e);
                bool family = false;

                if (!s->events[e].configured || !s->events[e].available)
                        continue;
                for (size_t i = 0; i < s->n_cpus; i++) {
                        const struct pmu_cpu_snapshot *c = &s->cpus[i];
                        const char *labels[7];
                        char cpu[DECIMAL_STR_MAX(unsigned)];

                        if (!c->events[e].available || !c->events[e].counted)
                                continue;
                        if (!family) {
                                prom_family(w, d->metric, PROM_COUNTER, d->help);
                                family = true;
                        }
                        cpu_labels(c, with_pmu, cpu, sizeof(cpu), labels);
                        prom_sample_u64(w, labels, c->events[e].total);
                }
        }

        /* Ratios over the last interval; absent when a denominator is 0 or missing. */
        for (int r = 0; r < _PMU_RATIO_MAX; r++) {
                const struct pmu_ratio_def *d = pmu_ratio_get(r);
                bool family = false;

                for (size_t i = 0; i < s->n_cpus; i++) {
                        const struct pmu_cpu_snapshot *c = &s->cpus[i];
                        const char *labels[7];
                        char cpu[DECIMAL_STR_MAX(unsigned)];

                        if (!c->ratios[r].present)
                                continue;
                        if (!family) {
                                prom_family(w, d->metric, PROM_GAUGE, d->help);
                                family = true;
                        }
                        cpu_labels(c, with_pmu, cpu, sizeof(cpu), labels);
                        prom_sample_double(w, labels, c->ratios[r].value);
                }
        }

        /* Top-down over the last interval, from one group per CPU (pmu-topdown.h);
         * absent where the CPU cannot compute it (/status says why) or its
         * group did not run in the interval. */
        {
                bool family = false;

                for (size_t i = 0; i < s->n_cpus; i++) {
                        const struct pmu_cpu_snapshot *c = &s->cpus[i];
                        char cpu[DECIMAL_STR_MAX(unsigned)], level[DECIMAL_STR_MAX(unsigned)];

                        snprintf(cpu, sizeof(cpu), "%u", c->cpu);
                        for (int m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++) {
                                if (!c->topdown.last.present[m] || pmu_topdown_metric_is_mpki(m))
                                        continue;
                                if (!family) {
                                        prom_family(w, "armprofd_topdown_fraction", PROM_GAUGE,
                                                    "Top-down share of the last counting interval by category: "
                                                    "level 1 frontend_bound, bad_speculation, retiring, "
                                                    "backend_bound (and smt_contention on AMD) sum to 1; "
                                                    "formulas per core in README.md.");
                                        family = true;
                                }
                                snprintf(level, sizeof(level), "%u", pmu_topdown_metric_level(m));
                                prom_sample_double(w,
                                                   (const char *const[]) { "cpu", cpu, "level", level, "category",
                                                                           pmu_topdown_metric_name(m), NULL },
                                                   c->topdown.last.value[m]);
                        }
                }
        }

        /* Misses per 1000 instructions, from a group of their own per CPU. */
        {
                bool family = false;

                for (size_t i = 0; i < s->n_cpus; i++) {
                        const struct pmu_cpu_snapshot *c = &s->cpus[i];
                        char cpu[DECIMAL_STR_MAX(unsigned)], event[PMU_NAME_MAX];

                        snprintf(cpu, sizeof(cpu), "%u", c->cpu);
                        for (int m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++) {
                                const char *name = pmu_topdown_metric_name(m);

                                if (!c->topdown.last.present[m] || !pmu_topdown_metric_is_mpki(m))
                                        continue;
                                if (!family) {
                                        prom_family(w, "armprofd_mpki", PROM_GAUGE,
                                                    "Misses per 1000 instructions retired over the last counting "
                                                    "interval, by event (l1i_cache, l1d_cache, l2d_cache, "
                                                    "ll_cache_read, branch), from one group per CPU.");
                                        family = true;
                                }
                                /* "l1i_cache_mpki" -> "l1i_cache" */
                                snprintf(event, sizeof(event), "%.*s", (int) (strlen(name) - strlen("_mpki")), name);
                                prom_sample_double(w, (const char *const[]) { "cpu", cpu, "event", event, NULL },
                                                   c->topdown.last.value[m]);
                        }
                }
        }

        /* Memory bandwidth: bytes through each memory-side PMU (pmu-bandwidth.h). */
        {
                bool family = false;

                for (size_t i = 0; i < s->n_bandwidth; i++) {
                        const struct pmu_bandwidth_value *b = &s->bandwidth[i];
                        char cpu[DECIMAL_STR_MAX(unsigned)];

                        if (b->error != 0)
                                continue;
                        if (!family) {
                                prom_family_unit(w, "armprofd_memory_bytes_total", PROM_COUNTER, "bytes",
                                                 "Bytes moved to and from memory, counted by a memory-side PMU "
                                                 "(method cmn-hnf-mc: Arm CMN HN-F requests to the memory "
                                                 "controllers less their retries, x 64; imc-cas: Intel IMC "
                                                 "CAS reads and writes, x 64); rate() gives bytes/s.");
                                family = true;
                        }
                        snprintf(cpu, sizeof(cpu), "%u", b->cpu);
                        prom_sample_u64(w,
                                        (const char *const[]) { "pmu", b->pmu, "cpu", cpu, "method",
                                                                pmu_bandwidth_method_to_string(b->method), NULL },
                                        b->bytes_total);
                }
        }

        /* Multiplexing made visible: running < enabled means scaled values. */
        for (int which = 0; which < 2; which++) {
                const char *name = which == 0 ? "armprofd_pmu_enabled_seconds_total"
                                              : "armprofd_pmu_running_seconds_total";

                prom_family_unit(w, name, PROM_COUNTER, "seconds",
                                 which == 0 ? "Time each counter group was enabled."
                                            : "Time each counter group was running on the PMU; "
                                              "less than enabled when groups are multiplexed.");
                for (size_t i = 0; i < s->n_cpus; i++) {
                        const struct pmu_cpu_snapshot *c = &s->cpus[i];
                        char cpu[DECIMAL_STR_MAX(unsigned)];

                        snprintf(cpu, sizeof(cpu), "%u", c->cpu);
                        for (size_t g = 0; g < c->n_groups; g++) {
                                const struct pmu_group_times *t = &c->groups[g];

                                if (t->n_events == 0)
                                        continue;
                                prom_sample_double(w,
                                                   (const char *const[]) { "cpu", cpu, "group", t->name, NULL },
                                                   (double) (which == 0 ? t->enabled_ns_total
                                                                        : t->running_ns_total) /
                                                           NS_PER_SEC);
                        }
                }
        }
}

static json_t *events_json(const struct pmu_snapshot *s, const struct pmu_event_value *v,
                           double interval_seconds) {
        json_t *o = json_object();

        for (int e = 0; e < _PMU_EVENT_MAX; e++) {
                json_t *ev;

                if (!s->events[e].configured || !v[e].available)
                        continue;
                ev = json_pack("{s:I, s:b}", "total", (json_int_t) v[e].total, "counted", v[e].counted);
                if (v[e].counted) {
                        json_object_set_new(ev, "delta", json_integer((json_int_t) v[e].delta));
                        if (interval_seconds > 0)
                                json_object_set_new(ev, "per_second",
                                                    json_real((double) v[e].delta / interval_seconds));
                }
                json_object_set_new(o, pmu_event_get(e)->name, ev);
        }
        return o;
}

static json_t *topdown_json(const struct pmu_cpu_topdown *t) {
        json_t *o = json_object();

        for (int m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++)
                if (t->last.present[m])
                        json_object_set_new(o, pmu_topdown_metric_name(m), json_real(t->last.value[m]));
        return o;
}

static json_t *ratios_json(const struct pmu_ratio *ratios) {
        json_t *o = json_object();

        for (int i = 0; i < _PMU_RATIO_MAX; i++)
                if (ratios[i].present)
                        /* "armprofd_instructions_per_cycle" -> "instructions_per_cycle" */
                        json_object_set_new(o, pmu_ratio_get(i)->metric + strlen("armprofd_"),
                                            json_real(ratios[i].value));
        return o;
}

/* The configured events no CPU counts, with the error of their first failure (perf stat's <not supported>). */
static json_t *unavailable_json(const struct pmu_snapshot *s) {
        json_t *o = json_object();

        for (int e = 0; e < _PMU_EVENT_MAX; e++)
                if (s->events[e].configured && !s->events[e].available)
                        json_object_set_new(o, pmu_event_get(e)->name,
                                            json_pack("{s:s}", "error",
                                                      s->events[e].error ? pmu_event_error_string(s->events[e].error)
                                                                         : "not counted on any CPU"));
        return o;
}

json_t *counters_to_json(const struct pmu_snapshot *s, double interval_seconds, int64_t cpu) {
        json_t *root, *cpus;

        if (!s)
                return json_pack("{s:s, s:[]}", "state", "disabled", "cpus");

        root = json_pack("{s:s, s:s, s:I, s:f}", "state", pmu_state_to_string(s->state), "message",
                         s->message, "reads", (json_int_t) s->reads, "interval_seconds", interval_seconds);
        cpus = json_array();
        for (size_t i = 0; i < s->n_cpus; i++) {
                const struct pmu_cpu_snapshot *c = &s->cpus[i];
                json_t *groups;

                if (cpu >= 0 && c->cpu != (unsigned) cpu)
                        continue;
                groups = json_array();

                for (size_t g = 0; g < c->n_groups; g++)
                        if (c->groups[g].n_events > 0)
                                json_array_append_new(
                                        groups, json_pack("{s:s, s:i, s:f, s:f}", "name", c->groups[g].name,
                                                          "events", (int) c->groups[g].n_events,
                                                          "enabled_seconds",
                                                          (double) c->groups[g].enabled_ns_total / NS_PER_SEC,
                                                          "running_seconds",
                                                          (double) c->groups[g].running_ns_total / NS_PER_SEC));
                json_array_append_new(cpus, json_pack("{s:i, s:s, s:o, s:o, s:o, s:o}", "cpu", (int) c->cpu, "pmu",
                                                      c->pmu, "events",
                                                      events_json(s, c->events, interval_seconds), "ratios",
                                                      ratios_json(c->ratios), "topdown", topdown_json(&c->topdown),
                                                      "groups", groups));
        }
        json_object_set_new(root, "cpus", cpus);
        json_object_set_new(root, "host",
                            json_pack("{s:o, s:o}", "events", events_json(s, s->host, interval_seconds),
                                      "ratios", ratios_json(s->host_ratios)));
        json_object_set_new(root, "unavailable", unavailable_json(s));
        return root;
}

static bool same_topdown(const struct pmu_cpu_topdown *a, const struct pmu_cpu_topdown *b) {
        return a->method == b->method && streq(a->core, b->core) && streq(a->note, b->note) &&
               streq(a->mpki_note, b->mpki_note) &&
               memcmp(a->computes, b->computes, sizeof(a->computes)) == 0;
}

/*
 * What each CPU computes of top-down and what it cannot, and why: CPUs
 * alike (same core, method, note) share one entry, so a 128-core host says
 * it once. [{"cpus": [0, 1], "core": "neoverse-n2 r0p3", "method":
 * "arm-slots", "level1": "complete"|"partial"|"unavailable", "computes":
 * [...], "cannot": {"metric": "why"}, "note": "..."}].
 */
static json_t *topdown_status_json(const struct pmu_snapshot *s) {
        _cleanup_free_ size_t *first = xcalloc(MAX(s->n_cpus, 1U), sizeof(*first)); /* CPU index of entry k */
        json_t *arr = json_array();
        size_t n = 0;

        for (size_t i = 0; i < s->n_cpus; i++) {
                const struct pmu_cpu_topdown *t = &s->cpus[i].topdown;
                json_t *computes, *cannot;
                size_t k;

                for (k = 0; k < n; k++)
                        if (same_topdown(&s->cpus[first[k]].topdown, t))
                                break;
                if (k < n) {
                        json_array_append_new(json_object_get(json_array_get(arr, k), "cpus"),
                                              json_integer(s->cpus[i].cpu));
                        continue;
                }
                first[n++] = i;
                computes = json_array();
                cannot = json_object();
                for (int m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++) {
                        /* N1's stall-cycle fractions and AMD's SMT contention are
                         * categories of one method: listed only where computed. */
                        bool cycles_only = m == PMU_TOPDOWN_FRONTEND_STALLED_CYCLES ||
                                           m == PMU_TOPDOWN_BACKEND_STALLED_CYCLES ||
                                           m == PMU_TOPDOWN_SMT_CONTENTION;

                        if (t->computes[m])
                                json_array_append_new(computes, json_string(pmu_topdown_metric_name(m)));
                        else if (!cycles_only)
                                json_object_set_new(cannot, pmu_topdown_metric_name(m),
                                                    json_string(pmu_topdown_metric_is_mpki(m) && t->mpki_note[0]
                                                                        ? t->mpki_note
                                                                : t->note[0] ? t->note
                                                                             : "not computed for this core"));
                }
                json_array_append_new(
                        arr, json_pack("{s:[I], s:s, s:s, s:s, s:o, s:o, s:s}", "cpus", (json_int_t) s->cpus[i].cpu,
                                       "core", t->core, "method", pmu_topdown_method_to_string(t->method), "level1",
                                       t->method == PMU_TOPDOWN_NONE             ? "unavailable"
                                       : pmu_topdown_method_complete(t->method) ? "complete"
                                                                                 : "partial",
                                       "computes", computes, "cannot", cannot, "note", t->note));
                if (t->mpki_note[0])
                        json_object_set_new(json_array_get(arr, n - 1), "mpki_note", json_string(t->mpki_note));
        }
        return arr;
}

/* {"sources": [{"pmu", "cpu", "method", "counting", "error"?}], "note": why none or what is missing} */
static json_t *bandwidth_status_json(const struct pmu_snapshot *s) {
        json_t *sources = json_array();

        for (size_t i = 0; i < s->n_bandwidth; i++) {
                const struct pmu_bandwidth_value *b = &s->bandwidth[i];
                json_t *e = json_pack("{s:s, s:i, s:s, s:b}", "pmu", b->pmu, "cpu", (int) b->cpu, "method",
                                      pmu_bandwidth_method_to_string(b->method), "counting", b->error == 0);

                if (b->error != 0)
                        json_object_set_new(e, "error", json_string(pmu_event_error_string(b->error)));
                json_array_append_new(sources, e);
        }
        return json_pack("{s:o, s:s}", "sources", sources, "note", s->bandwidth_note);
}

json_t *counters_status_json(const struct pmu_snapshot *s, const char *disabled_reason) {
        json_t *o, *events;

        if (!s)
                return json_pack("{s:s, s:b, s:s}", "name", "pmu", "up", false, "reason",
                                 disabled_reason ?: "not started");

        o = json_pack("{s:s, s:b, s:s, s:i}", "name", "pmu", "up", counters_up(s), "state",
                      pmu_state_to_string(s->state), "cpus", (int) s->n_cpus);
        if (s->message[0])
                json_object_set_new(o, "reason", json_string(s->message));
        events = json_object();
        for (int e = 0; e < _PMU_EVENT_MAX; e++) {
                json_t *ev;

                if (!s->events[e].configured)
                        continue;
                ev = json_pack("{s:b}", "available", s->events[e].available);
                if (s->events[e].error)
                        json_object_set_new(ev, "error", json_string(pmu_event_error_string(s->events[e].error)));
                json_object_set_new(events, pmu_event_get(e)->name, ev);
        }
        json_object_set_new(o, "events", events);
        json_object_set_new(o, "topdown", topdown_status_json(s));
        json_object_set_new(o, "bandwidth", bandwidth_status_json(s));
        return o;
}
