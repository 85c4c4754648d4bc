/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cost of one /metrics scrape on a host of N CPUs (issue 19), without
 * the fleet harness's simulated cores: the daemon's families built in
 * memory as daemon/manager.c's provider writes them (collector_up, the SPE
 * families per CPU with their latency histograms, the sampler's, counter
 * rows; with --pmu the PMU's events, ratios and group times per CPU too),
 * the process_* and per-thread families read from this process's /proc,
 * and the exposition rendered. Prints ns per scrape by phase and the bytes,
 * and the ratio to a baseline measured in the same run: copying the same
 * bytes once. Figures only, no assertions on time.
 *
 * With --http the same answer comes from the real HTTP server (exporters/api.c
 * and http.c) on loopback: p50/p99 of sequential scrapes, each on a new
 * connection as the fleet harness makes them; --serve SECONDS keeps that
 * server up for wrk or perf. --dump writes one exposition (without the
 * process_* and per-thread families, which change from run to run) to
 * compare renderings byte for byte.
 *
 * Usage: bench-metrics [--cpus N] [--scrapes K] [--threads T] [--pmu]
 *                      [--format text|openmetrics|protobuf] [--http] [--gzip]
 *                      [--serve SECONDS] [--dump FILE]
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "counters.h"
#include "http.h"
#include "macro.h"
#include "negotiate.h"
#include "parse-util.h"
#include "process-metrics.h"
#include "prom.h"
#include "sampler-metrics.h"
#include "spe-metrics.h"
#include "strbuf.h"

struct host {
        size_t n_cpus;
        struct spe_stream_stats *spe;
        struct store_totals totals;
        struct store_latency_cumulative *latency;
        struct pmu_snapshot *pmu;
};

static uint64_t rnd(uint64_t *st) {
        /* xorshift64* (Vigna), deterministic figures for --dump. */
        *st ^= *st >> 12;
        *st ^= *st << 25;
        *st ^= *st >> 27;
        return *st * UINT64_C(2685821657736338717);
}

static void host_init(struct host *h, size_t n_cpus, bool pmu) {
        const struct lathist_bucket *b = lathist_buckets();
        uint64_t st = 42;

        *h = (struct host) { .n_cpus = n_cpus };
        h->spe = xcalloc(n_cpus, sizeof(*h->spe));
        for (size_t i = 0; i < n_cpus; i++) {
                struct spe_stream_stats *s = &h->spe[i];

                /* A day of a busy core at the default period: some 2.5e8 records. */
                s->cpu = (uint32_t) i;
                s->records = 200000000 + rnd(&st) % 100000000;
                s->bytes = 64 * s->records;
                s->aux_truncated = rnd(&st) % 5000;
                s->reenables = s->aux_truncated;
                s->aux_collision = rnd(&st) % 4 == 0 ? rnd(&st) % 100 : 0;
                s->lost = rnd(&st) % 8 == 0 ? rnd(&st) % 1000 : 0;
                s->unattributed = rnd(&st) % 100000;
                s->not_sampling_ns = rnd(&st) % 100000000000;
                s->state = "active";
        }
        for (int src = 0; src < _SPE_DATA_SRC_MAX; src++)
                h->totals.loads_by_source[src] = rnd(&st) % 10000000000;
        h->totals.peer_local = rnd(&st) % 1000000;
        h->totals.peer_remote = rnd(&st) % 100000;
        h->totals.evictions[STORE_TABLE_HOTPCS] = rnd(&st) % 1000000;

        h->latency = xcalloc(1, sizeof(*h->latency));
        for (int k = 0; k < _STORE_LAT_KIND_MAX; k++)
                for (int o = 0; o < _HOTPCS_OP_MAX; o++) {
                        struct lathist_merged *m = &h->latency->h[k][o];

                        /* Every bucket up to a few thousand cycles, a long tail beyond. */
                        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++) {
                                if (b[i].hi > 4096 && rnd(&st) % 8)
                                        continue;
                                m->count[i] = rnd(&st) % 100000;
                                m->n += m->count[i];
                                m->sum += m->count[i] * b[i].hi;
                        }
                }

        if (!pmu)
                return;
        h->pmu = xcalloc(1, sizeof(*h->pmu));
        h->pmu->state = PMU_STATE_OK;
        h->pmu->n_cpus = n_cpus;
        h->pmu->cpus = xcalloc(n_cpus, sizeof(*h->pmu->cpus));
        for (int e = 0; e < _PMU_EVENT_MAX; e++)
                h->pmu->events[e] = (struct pmu_event_status) { .configured = true, .available = true };
        for (size_t i = 0; i < n_cpus; i++) {
                struct pmu_cpu_snapshot *c = &h->pmu->cpus[i];

                c->cpu = (unsigned) i;
                snprintf(c->pmu, sizeof(c->pmu), "armv8_pmuv3_0");
                for (int e = 0; e < _PMU_EVENT_MAX; e++)
                        c->events[e] = (struct pmu_event_value) {
                                .available = true, .counted = true,
                                .total = rnd(&st) % 100000000000000, .delta = rnd(&st) % 10000000000,
                        };
                c->n_groups = 3;
                for (size_t g = 0; g < c->n_groups; g++) {
                        snprintf(c->groups[g].name, sizeof(c->groups[g].name), g < 2 ? "armv8_pmuv3_0/%zu" : "software", g);
                        c->groups[g].n_events = 4;
                        c->groups[g].enabled_ns_total = rnd(&st) % 100000000000000;
                        c->groups[g].running_ns_total = c->groups[g].enabled_ns_total / 2;
                }
                for (int r = 0; r < _PMU_RATIO_MAX; r++)
                        c->ratios[r] = (struct pmu_ratio) { .present = true,
                                                            .value = (double) (rnd(&st) % 1000000) / 7919.0 };
        }
}

static void host_done(struct host *h) {
        free(h->spe);
        free(h->latency);
        if (h->pmu) {
                free(h->pmu->cpus);
                free(h->pmu);
        }
}

/* What daemon/manager.c's provider_write_metrics() writes, from the host above. */
static void write_metrics(void *userdata, struct prom_writer *w) {
        const struct host *h = userdata;
        static const struct prom_counter_row rows[] = {
                { "armprofd_symbols_lookups_total", "Lookups.", "result", "hit", 123456789 },
                { "armprofd_symbols_lookups_total", "Lookups.", "result", "miss", 4567 },
                { "armprofd_symbols_evictions_total", "Evictions.", "table", "files", 12 },
                { "armprofd_symbols_evictions_total", "Evictions.", "table", "maps", 0 },
                { "armprofd_symbols_files_loaded_total", "Files loaded.", NULL, NULL, 321 },
        };

        prom_family(w, "armprofd_collector_up", PROM_GAUGE,
                    "1 when the collector runs and produces data, 0 when it cannot (see /status).");
        prom_sample_u64(w, (const char *const[]) { "collector", "pmu", NULL }, counters_up(h->pmu));
        prom_sample_u64(w, (const char *const[]) { "collector", "spe", NULL }, 1);
        prom_sample_u64(w, (const char *const[]) { "collector", "sampler", NULL }, 0);
        counters_write_metrics(h->pmu, w);
        spe_metrics_write(&(struct spe_metrics_input) {
                                  .totals = &h->totals,
                                  .cpus = h->spe,
                                  .n_cpus = h->n_cpus,
                                  .latency = h->latency,
                                  .store_bytes = 46156392,
                                  .up = true,
                          },
                          w);
        sampler_metrics_write(&(struct sampler_metrics_input) { .totals = &h->totals }, w);
        prom_write_counter_rows(w, rows, ELEMENTSOF(rows));
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static void *idle_thread(void *arg) {
        (void) arg;
        pause();
        return NULL;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* One scrape over a new connection; its wall time in ns and the body's bytes (headers included). */
static uint64_t http_get(uint16_t port, const char *headers, size_t *ret_bytes) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                                  .sin_addr = { htonl(INADDR_LOOPBACK) } };
        char req[512], buf[65536];
        uint64_t t0 = now_ns();
        size_t total = 0;
        ssize_t n;
        int fd;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (const struct sockaddr *) &sa, sizeof(sa)) < 0) {
                perror("connect");
                exit(EXIT_FAILURE);
        }
        snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n",
                 headers);
        if (write(fd, req, strlen(req)) != (ssize_t) strlen(req)) {
                perror("write");
                exit(EXIT_FAILURE);
        }
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                total += (size_t) n;
        close(fd);
        *ret_bytes = total;
        return now_ns() - t0;
}

static const char *accept_header(enum prom_format f) {
        switch (f) {
        case PROM_FORMAT_OPENMETRICS:
                return "application/openmetrics-text; version=1.0.0";
        case PROM_FORMAT_PROTOBUF:
                return "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                       "encoding=delimited";
        default:
                return "text/plain; version=0.0.4";
        }
}

static int run_http(struct host *h, enum prom_format format, bool gzip, unsigned scrapes, unsigned serve) {
        struct api_provider p = { .userdata = h, .write_metrics = write_metrics };
        _cleanup_(api_freep) struct api *a = api_new(&p);
        struct http_server_options o = {
                .listen_fd = -1, .max_connections = 128, .per_ip_connections = 64,
                .timeout_sec = 5, .max_request_bytes = 64 * 1024,
        };
        _cleanup_(http_server_stopp) struct http_server *s = NULL;
        const struct http_route *routes;
        uint64_t *t = xcalloc(MAX(scrapes, 1U), sizeof(uint64_t));
        char headers[512];
        size_t n, bytes = 0;
        uint16_t port;
        int r;

        r = parse_listen_addr("127.0.0.1:0", &o.listen);
        if (r >= 0) {
                routes = api_routes(&n);
                r = http_server_start(&o, routes, n, a, &s);
        }
        if (r < 0) {
                fprintf(stderr, "http_server_start: %s\n", strerror(-r));
                free(t);
                return EXIT_FAILURE;
        }
        port = (uint16_t) atoi(strrchr(http_server_address(s), ':') + 1);
        if (serve > 0) {
                printf("serving on %s for %u s\n", http_server_address(s), serve);
                fflush(stdout);
                sleep(serve);
                free(t);
                return EXIT_SUCCESS;
        }
        snprintf(headers, sizeof(headers), "Accept: %s\r\n%s", accept_header(format),
                 gzip ? "Accept-Encoding: gzip\r\n" : "");
        for (unsigned i = 0; i < scrapes; i++)
                t[i] = http_get(port, headers, &bytes);
        qsort(t, scrapes, sizeof(*t), cmp_u64);
        printf("http %u sequential scrapes%s: %zu bytes, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", scrapes,
               gzip ? " (gzip)" : "", bytes, (double) t[scrapes / 2] / 1e6,
               (double) t[MIN((size_t) scrapes - 1, (size_t) (scrapes * 99 / 100))] / 1e6,
               (double) t[scrapes - 1] / 1e6);
        free(t);
        return EXIT_SUCCESS;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "cpus", required_argument, NULL, 'c' },    { "scrapes", required_argument, NULL, 'n' },
                { "threads", required_argument, NULL, 't' }, { "pmu", no_argument, NULL, 'p' },
                { "format", required_argument, NULL, 'f' },  { "http", no_argument, NULL, 'H' },
                { "gzip", no_argument, NULL, 'z' },          { "serve", required_argument, NULL, 's' },
                { "dump", required_argument, NULL, 'd' },    {},
        };
        unsigned n_cpus = 192, scrapes = 1000, threads = 0, serve = 0;
        enum prom_format format = PROM_FORMAT_TEXT;
        bool pmu = false, http = false, gzip = false;
        const char *dump = NULL;
        uint64_t t_proc = 0, t_build = 0, t_render = 0, t0, base;
        struct strbuf out = STRBUF_INIT, copy = STRBUF_INIT;
        struct host h;
        size_t bytes = 0;
        int c, ret;

        /* As the daemon does (common/strbuf.h). */
        malloc_keep_freed_buffers();
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        n_cpus = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'n':
                        scrapes = MAX((unsigned) strtoul(optarg, NULL, 10), 1U);
                        break;
                case 't':
                        threads = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'p':
                        pmu = true;
                        break;
                case 'f':
                        format = streq(optarg, "openmetrics") ? PROM_FORMAT_OPENMETRICS
                                 : streq(optarg, "protobuf")  ? PROM_FORMAT_PROTOBUF
                                                              : PROM_FORMAT_TEXT;
                        break;
                case 'H':
                        http = true;
                        break;
                case 'z':
                        gzip = true;
                        break;
                case 's':
                        serve = (unsigned) strtoul(optarg, NULL, 10);
                        http = true;
                        break;
                case 'd':
                        dump = optarg;
                        break;
                default:
                        return EXIT_FAILURE;
                }

        host_init(&h, n_cpus, pmu);
        /* Threads of the process, as the fleet harness's simulated cores are (thread "other"). */
        for (unsigned i = 0; i < threads; i++) {
                pthread_t tid;

                if (pthread_create(&tid, NULL, idle_thread, NULL) != 0)
                        return EXIT_FAILURE;
                pthread_detach(tid);
        }

        if (dump) {
                _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
                FILE *f = fopen(dump, "we");

                write_metrics(&h, w);
                prom_render(w, format, &out);
                if (!f || fwrite(out.buf, 1, out.len, f) != out.len || fclose(f) != 0) {
                        perror(dump);
                        return EXIT_FAILURE;
                }
                printf("%s: %zu bytes\n", dump, out.len);
                strbuf_done(&out);
                host_done(&h);
                return EXIT_SUCCESS;
        }
        if (http) {
                ret = run_http(&h, format, gzip, scrapes, serve);
                host_done(&h);
                return ret;
        }

        /* As exporters/api.c's handle_metrics() does, phase by phase. */
        struct process_threads *ledger = process_threads_new();
        for (unsigned i = 0; i < scrapes; i++) {
                _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
                struct process_thread_stats th;
                struct process_stats st;

                t0 = now_ns();
                if (process_stats_read("/proc", &st) == 0)
                        process_stats_write(&st, w);
                if (process_threads_read(ledger, "/proc", &th) == 0)
                        process_threads_write(&th, w);
                t_proc += now_ns() - t0;
                t0 = now_ns();
                write_metrics(&h, w);
                t_build += now_ns() - t0;
                t0 = now_ns();
                prom_render(w, format, &out);
                t_render += now_ns() - t0;
                bytes = out.len;
                strbuf_done(&out);
        }

        process_threads_free(ledger);

        /* The baseline: the same bytes copied once into a new buffer. */
        {
                _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();

                write_metrics(&h, w);
                prom_render(w, format, &out);
        }
        t0 = now_ns();
        for (unsigned i = 0; i < scrapes; i++) {
                strbuf_append(&copy, out.buf, out.len);
                strbuf_done(&copy);
        }
        base = MAX((now_ns() - t0) / scrapes, (uint64_t) 1);

        printf("%u CPUs%s, %u threads, %u scrapes, %zu bytes\n", n_cpus, pmu ? " with PMU" : "", threads + 1,
               scrapes, bytes);
        printf("  procfs  %9.0f ns/scrape\n", (double) t_proc / scrapes);
        printf("  build   %9.0f ns/scrape\n", (double) t_build / scrapes);
        printf("  render  %9.0f ns/scrape\n", (double) t_render / scrapes);
        printf("  total   %9.0f ns/scrape (%.0f x the baseline: copying its bytes, %" PRIu64 " ns)\n",
               (double) (t_proc + t_build + t_render) / scrapes,
               (double) (t_proc + t_build + t_render) / scrapes / (double) base, base);
        strbuf_done(&out);
        host_done(&h);
        return EXIT_SUCCESS;
}
