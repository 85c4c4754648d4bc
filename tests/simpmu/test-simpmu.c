/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The simulated SPE PMU (simpmu.c, preloaded) against the kernel-ABI reading
 * code the daemon uses: spe-pmu.c's attr on the fake sysfs, perf_event_open
 * as perf does it (disabled, then the rings mapped, then enabled),
 * aux_ring_drain() on epoll wakeups, PERF_EVENT_IOC_ENABLE after each
 * truncation. Run by simpmu-test.py with ARMPROFD_SIMPMU_DIR,
 * ARMPROFD_SYSFS_ROOT and LD_PRELOAD set.
 *
 *   test-simpmu drain DATA_PAGES AUX_PAGES WATERMARK
 *       every covered CPU until the shim says done, then DISABLE (the
 *       driver commits the partial buffer) and a last drain. Checks: the
 *       AUX bytes are exactly cpuN.bin's records minus cpuN.dropped (half
 *       a record for `partial`; the records of a chunk whose
 *       PERF_RECORD_AUX was lost are read all the same) with 0x00 padding
 *       between them, the flag and LOST counts are the scenario's, and
 *       the SWITCH_CPU_WIDE records give every record the truth's tid.
 *       With `fault` (fault=CPU:IDX:s1|s2 in the scenario): a quiet CPU
 *       whose buffer a fault stopped is not restarted by ENABLE, is by
 *       DISABLE + ENABLE or PERIOD; each fault's record is dropped, nothing
 *       else.
 *       With `clock`: the user page's time fields are those the time_*
 *       keys give as arm64's arch_perf_update_userpage() writes them, and
 *       with a conversion the switches (kernel time) attribute every
 *       record through perf's tsc_to_perf_time() of the page.
 *       With `storm`: attr.task, comm and mmap2 set; every storm record the
 *       ring took (sim.log) is read, the rest are in the LOST counts.
 *   test-simpmu errors
 *       each refusal's errno (scenario of simpmu-test.py's errors case).
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "aux-ring.h"
#include "perf-record.h"
#include "spe-pkt.h"
#include "spe-pmu.h"

#define MAX_CPUS 16

static const char *scen_dir, *sysfs_root;
static bool arg_all_ids;   /* sample_type with ID and STREAM_ID too: every sample_id field */
static bool arg_no_cx;     /* the scenario's PMSCR_EL1.CX is off (cx=0): records come without CONTEXT */
static bool arg_itrace_each; /* its kernel writes ITRACE_START at every start (kernel= before 87f78017e8c8) */
static bool arg_offline;
static bool arg_exclude_kernel; /* the events leave the kernel out (PMSCR_EL1.E1SPE off) */
static size_t page_size;

/* ---- the scenario's faults, read back from its file ---- */

struct fault {
        unsigned cpu;
        uint64_t a, b;
};

static struct fault faults[6][64];
static size_t n_faults[6];
enum { F_COLLISION, F_PARTIAL, F_SPLIT, F_LOST, F_LOST_SAMPLES, F_THROTTLE };
static const char *const fault_keys[] = { "collision", "partial", "split", "lost", "lost_samples", "throttle" };

static void read_scenario(void) {
        char path[4096], line[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/scenario", scen_dir);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                for (size_t k = 0; k < 6; k++) {
                        size_t n = strlen(fault_keys[k]);
                        struct fault x = {};

                        if (strncmp(line, fault_keys[k], n) || line[n] != '=')
                                continue;
                        if (sscanf(line + n + 1, "%u:%" SCNu64 ":%" SCNu64, &x.cpu, &x.a, &x.b) >= 2)
                                faults[k][n_faults[k]++] = x;
                }
        }
        fclose(f);
}

/* ---- per-CPU truth ---- */

struct rec {
        uint64_t off, size, ts;
        uint32_t pid, tid;
        char dropped[16];
};

struct cpu_state {
        unsigned cpu;
        int fd;
        struct spe_pmu_event_attr attr;
        struct perf_event_mmap_page *up;
        size_t data_len, aux_len;
        void *aux_map;
        struct aux_ring ring;
        /* what the drain received */
        uint8_t *got;
        size_t n_got, cap_got;
        uint64_t pad_gaps, pad_bytes, lost_gaps, lost_seen_before_gap;
        bool fill_is_lost;              /* the fill being read follows a PERF_RECORD_LOST */
        uint64_t next, chunk_bytes;     /* where the last chunk ended; bytes of this one so far */
        uint64_t enables, truncations;
        uint64_t fault_restarts;        /* DISABLE + ENABLE after a fatal buffer fault (recover_fault()) */
        uint64_t storm_seen;            /* FORK, COMM, MMAP2, EXIT of storm processes read (sideband_storm=) */
        struct aux_ring_stats prev;     /* the closed events' counts (close_cpu()) */
        uint64_t id;                    /* PERF_EVENT_IOC_ID */
        struct perf_event_mmap_page time; /* the user page's time fields, kept after unmapping */
        /* attribution: SWITCH in records, (time, pid, tid) */
        struct { uint64_t time; uint32_t pid, tid; } *sw;
        size_t n_sw, cap_sw;
        bool itrace;
        uint32_t itrace_pid, itrace_tid;
        uint64_t itraces;               /* ITRACE_START records */
        uint64_t switch_out, throttle, unthrottle;
        /* the truth */
        uint8_t *bin;
        size_t bin_size;
        struct rec *rec;
        size_t n_rec;
};

static void *read_all(const char *path, size_t *ret_size) {
        FILE *f = fopen(path, "re");
        uint8_t *b = NULL;
        size_t n = 0, cap = 0;

        if (!f)
                return NULL;
        for (;;) {
                if (n == cap) {
                        cap = cap ? cap * 2 : 65536;
                        b = realloc(b, cap + 1);
                        assert_non_null(b);
                }
                size_t k = fread(b + n, 1, cap - n, f);
                if (k == 0)
                        break;
                n += k;
        }
        fclose(f);
        if (b)
                b[n] = 0;
        *ret_size = n;
        return b;
}

/*
 * PMSCR_EL1.CX off: the hardware writes no CONTEXT packet (Arm ARM, PMSCR_EL1.CX;
 * drivers/perf/arm_spe_pmu.c sets it only with CONFIG_PID_IN_CONTEXTIDR and
 * CAP_PERFMON). The records as it writes them: the generator's, each CONTEXT
 * packet cut out by our own packet decoder (spe-pkt.h), not the shim's.
 */
static void strip_context(struct cpu_state *s) {
        uint8_t *out = malloc(s->bin_size ? s->bin_size : 1);
        size_t at = 0, cut = 0;

        assert_non_null(out);
        for (size_t i = 0; i < s->n_rec; i++) {
                struct rec *r = &s->rec[i];
                size_t off = (size_t) r->off, end = off + (size_t) r->size, start = at;

                while (off < end) {
                        struct spe_pkt pkt;
                        int n = spe_pkt_decode(s->bin + off, end - off, &pkt);

                        assert_true(n > 0);
                        if (pkt.type == SPE_PKT_CONTEXT)
                                cut++;
                        else {
                                memcpy(out + at, s->bin + off, (size_t) n);
                                at += (size_t) n;
                        }
                        off += (size_t) n;
                }
                r->off = start;
                r->size = at - start;
        }
        /* The generator wrote CONTEXT packets: the case strips some. */
        assert_true(cut > 0);
        free(s->bin);
        s->bin = out;
        s->bin_size = at;
}

/* The shim's sim.log, NUL-terminated (free() it); NULL before it exists. */
static char *read_sim_log(void) {
        char path[4096];
        size_t size;

        snprintf(path, sizeof(path), "%s/sim.log", scen_dir);
        return read_all(path, &size);
}

/* The lines of sim.log that begin "cpu=CPU WHAT". */
static uint64_t log_count(unsigned cpu, const char *what) {
        char pat[128], *log = read_sim_log();
        uint64_t n = 0;

        if (!log)
                return 0;
        snprintf(pat, sizeof(pat), "\ncpu=%u %s", cpu, what);
        /* The first line is the scenario's, never a CPU's: every CPU line follows a newline. */
        for (char *p = log; (p = strstr(p, pat + 1)); p++)
                n += p > log && p[-1] == '\n';
        free(log);
        return n;
}

static void load_truth(struct cpu_state *s) {
        char path[4096], line[256];
        size_t cap = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/cpu%u.bin", scen_dir, s->cpu);
        s->bin = read_all(path, &s->bin_size);
        assert_non_null(s->bin);
        snprintf(path, sizeof(path), "%s/cpu%u.idx", scen_dir, s->cpu);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                struct rec r = {};

                if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu32 " %" SCNu32, &r.off, &r.size, &r.ts,
                           &r.pid, &r.tid) != 5)
                        continue;
                if (s->n_rec == cap) {
                        cap = cap ? cap * 2 : 1024;
                        s->rec = realloc(s->rec, cap * sizeof(*s->rec));
                        assert_non_null(s->rec);
                }
                s->rec[s->n_rec++] = r;
        }
        fclose(f);
        if (arg_no_cx)
                strip_context(s);
        snprintf(path, sizeof(path), "%s/cpu%u.dropped", scen_dir, s->cpu);
        f = fopen(path, "re");
        if (f) {
                while (fgets(line, sizeof(line), f)) {
                        size_t i;
                        char why[16];

                        if (sscanf(line, "%zu %15s", &i, why) == 2 && i < s->n_rec)
                                snprintf(s->rec[i].dropped, sizeof(s->rec[i].dropped), "%s", why);
                }
                fclose(f);
        }
}

/* ---- the reading side ---- */

static void got_append(struct cpu_state *s, const uint8_t *p, size_t n) {
        if (s->n_got + n > s->cap_got) {
                s->cap_got = (s->n_got + n) * 2;
                s->got = realloc(s->got, s->cap_got);
                assert_non_null(s->got);
        }
        memcpy(s->got + s->n_got, p, n);
        s->n_got += n;
}

static int on_aux(void *userdata, const struct aux_ring_chunk *c, const uint8_t *data, size_t len, bool last) {
        struct cpu_state *s = userdata;

        /* Nothing the kernel wrote is out of the ring before it is read: no chunk follows lost data. */
        assert_false(c->gap);
        /*
         * Fills are bytes aux_head moved over without a PERF_RECORD_AUX, read
         * anyway: the 0x00 padding of arm_spe_pmu_pad_buf() (which
         * perf_aux_output_skip() moves aux_head over), a chunk whose record was
         * lost (`lost`, `datalost` in cpuN.dropped), or, after a loss or with
         * the area full, chunks whose records come late. All go into the
         * stream; verify() takes zeros between records as padding.
         */
        if (c->fill && s->chunk_bytes == 0) {
                if (s->ring.stats.lost > s->lost_seen_before_gap) {
                        s->lost_gaps++;
                        s->lost_seen_before_gap = s->ring.stats.lost;
                } else
                        s->pad_gaps++;
        }
        if (c->fill)
                s->pad_bytes += len;
        got_append(s, data, len);
        s->chunk_bytes = last ? 0 : s->chunk_bytes + len;
        return 0;
}

static void sw_grow(struct cpu_state *s) {
        if (s->n_sw < s->cap_sw)
                return;
        s->cap_sw = s->cap_sw ? s->cap_sw * 2 : 4096;
        s->sw = realloc(s->sw, s->cap_sw * sizeof(*s->sw));
        assert_non_null(s->sw);
}

static int on_record(void *userdata, const uint8_t *rec, size_t len) {
        struct cpu_state *s = userdata;
        struct perf_event_header h;
        struct perf_data_record pr;
        uint32_t tlen;

        memcpy(&h, rec, sizeof(h));
        perf_record_header(rec, 0, &pr);
        switch (h.type) {
        case PERF_RECORD_SWITCH_CPU_WIDE: {
                struct perf_data_switch sw;

                assert_int_equal(perf_record_parse_trailer(&s->attr.attr, &pr,
                                                           perf_record_fixed_size(h.type) - sizeof(h), &tlen), 0);
                assert_int_equal(perf_record_parse_switch(&pr, tlen, &sw), 0);
                assert_int_equal(pr.sid.cpu, s->cpu);
                assert_int_equal(pr.sid.id, s->id);
                if (arg_all_ids)
                        assert_int_equal(pr.sid.stream_id, s->id);
                if (sw.out) {
                        s->switch_out++;
                        break;
                }
                sw_grow(s);
                /* Switch-in: the sample_id is the task now running. */
                s->sw[s->n_sw].time = pr.sid.time;
                s->sw[s->n_sw].pid = pr.sid.pid;
                s->sw[s->n_sw].tid = pr.sid.tid;
                s->n_sw++;
                break;
        }
        case PERF_RECORD_ITRACE_START: {
                struct perf_data_itrace_start it;

                assert_int_equal(perf_record_parse_trailer(&s->attr.attr, &pr,
                                                           perf_record_fixed_size(h.type) - sizeof(h), &tlen), 0);
                assert_int_equal(perf_record_parse_itrace_start(&pr, tlen, &it), 0);
                s->itraces++;
                if (!s->itrace) {
                        s->itrace = true;
                        s->itrace_pid = it.pid;
                        s->itrace_tid = it.tid;
                } else {
                        /* A re-opened event: the task running when it started. */
                        sw_grow(s);
                        s->sw[s->n_sw].time = pr.sid.time;
                        s->sw[s->n_sw].pid = it.pid;
                        s->sw[s->n_sw].tid = it.tid;
                        s->n_sw++;
                        s->switch_out++;
                }
                break;
        }
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
        case PERF_RECORD_COMM:
        case PERF_RECORD_MMAP2: {
                uint32_t pid;

                /* Only a storm's (the attr asks for them in `storm` mode): pid, first word after the header. */
                memcpy(&pid, rec + sizeof(h), sizeof(pid));
                assert_true(pid >= 200000 + 20000 * s->cpu && pid < 200000 + 20000 * (s->cpu + 1));
                s->storm_seen++;
                break;
        }
        case PERF_RECORD_THROTTLE:
                s->throttle++;
                break;
        case PERF_RECORD_UNTHROTTLE:
                s->unthrottle++;
                break;
        default:
                fail_msg("cpu %u: unexpected record type %u", s->cpu, h.type);
        }
        (void) len;
        return 0;
}

static const struct aux_ring_ops ops = { .aux = on_aux, .record = on_record };

static long perf_open(struct perf_event_attr *attr, int cpu, int pid) {
        return syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static struct spe_pmu *pmus;
static size_t n_pmus;
static uint64_t scenario_u64(const char *key, uint64_t def);

static void discover(void) {
        char err[256] = "";

        if (pmus)
                return;
        assert_int_equal(spe_pmu_discover(sysfs_root, &pmus, &n_pmus, err, sizeof(err)), 0);
        /* arm_spe_0, and arm_spe_1 when the scenario has a second PMU (type2=, cpus2=). */
        assert_int_equal(n_pmus, scenario_u64("type2", UINT64_MAX) != UINT64_MAX ? 2 : 1);
}

/* The attr of the PMU covering cpu (each PMU its own type), for arm_spe_0's CPUs base_attr(). */
static void cpu_attr(struct spe_pmu_event_attr *a, const struct spe_pmu_options *o, unsigned cpu) {
        const struct spe_pmu *p;
        char err[256] = "";

        discover();
        p = spe_pmu_for_cpu(pmus, n_pmus, cpu);
        assert_non_null(p);
        assert_int_equal(spe_pmu_attr(p, o, a, NULL, err, sizeof(err)), 0);
}

static void base_attr(struct spe_pmu_event_attr *a, const struct spe_pmu_options *o) {
        char err[256] = "";

        discover();
        assert_int_equal(spe_pmu_attr(&pmus[0], o, a, NULL, err, sizeof(err)), 0);
}

static bool all_done(unsigned n) {
        char *log = read_sim_log();
        unsigned done = 0;

        if (!log)
                return false;
        for (char *p = log; (p = strstr(p, " done written=")); p++)
                done++;
        free(log);
        return done >= n;
}

static void drain_one(struct cpu_state *s) {
        bool truncated = false;
        int r = aux_ring_drain(&s->ring, &ops, s, &truncated);

        assert_true(r >= 0);
        if (truncated) {
                s->truncations++;
                /* perf's auxtrace_record__read_finish(): the driver disabled the event. */
                assert_int_equal(ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0), 0);
                s->enables++;
        }
}

static uint64_t perf_time(const struct perf_event_mmap_page *up, uint64_t cyc) {
        /* tools/perf/util/tsc.c tsc_to_perf_time() */
        uint64_t quot, rem;

        if (up->cap_user_time_short)
                cyc = up->time_cycles + ((cyc - up->time_cycles) & up->time_mask);
        quot = cyc >> up->time_shift;
        rem = cyc & (((uint64_t) 1 << up->time_shift) - 1);
        return up->time_zero + quot * up->time_mult + ((rem * up->time_mult) >> up->time_shift);
}

/*
 * From sim.log: the counts of the kernel's own PERF_RECORD_LOST for cpu (a
 * full data ring), and of the `lost` faults' records that made it into the
 * ring (one the ring had no room for joins the kernel's count).
 */
static uint64_t data_lost(unsigned cpu, uint64_t *ret_faults_written) {
        char pat[64], pat2[64], *log = read_sim_log();
        uint64_t sum = 0, n_faults_written = 0;

        assert_non_null(log);
        snprintf(pat, sizeof(pat), "cpu=%u data_lost n=", cpu);
        for (char *p = log; (p = strstr(p, pat)); p++)
                sum += strtoull(p + strlen(pat), NULL, 10);
        snprintf(pat2, sizeof(pat2), "cpu=%u lost aux=", cpu);
        for (char *p = log; (p = strstr(p, pat2)); p++) {
                char *eol = strchr(p, '\n'), *n = strstr(p, " n=");

                if (n && (!eol || n < eol) && strstr(n, " written=1") && (!eol || strstr(n, " written=1") < eol))
                        n_faults_written += strtoull(n + 3, NULL, 10);
        }
        free(log);
        *ret_faults_written = n_faults_written;
        return sum;
}

/* The exception level of record i, from its PC packet (our packet decoder, not the shim's); -1 none. */
static int record_el(const struct cpu_state *s, size_t i) {
        const uint8_t *p = s->bin + s->rec[i].off;
        size_t n = (size_t) s->rec[i].size;

        while (n > 0) {
                struct spe_pkt pkt;
                int k = spe_pkt_decode(p, n, &pkt);

                assert_true(k > 0);
                if (pkt.type == SPE_PKT_ADDRESS && pkt.index == SPE_ADDR_IDX_PC)
                        return (int) SPE_ADDR_EL(pkt.payload);
                p += k;
                n -= (size_t) k;
        }
        return -1;
}

/*
 * PMSCR_EL1.E1SPE off (exclude_kernel, arm_spe_event_to_pmscr()): the
 * hardware makes no record of an operation at EL1 or EL2; with it on, every
 * level is sampled. The records the shim dropped as `filtered` are exactly
 * the kernel's.
 */
static size_t kernel_records;   /* over every CPU verified */

static void verify_filtered(const struct cpu_state *s) {
        size_t kernel = 0, filtered = 0;

        for (size_t i = 0; i < s->n_rec; i++) {
                bool k = record_el(s, i) > 0, f = !strcmp(s->rec[i].dropped, "filtered");

                if (f != (k && arg_exclude_kernel))
                        fail_msg("cpu %u: record %zu at EL%d %s", s->cpu, i, record_el(s, i),
                                 f ? "filtered" : "not filtered");
                kernel += k;
                filtered += f;
        }
        kernel_records += kernel;
        print_message("cpu %u: %zu kernel records, %zu filtered\n", s->cpu, kernel, filtered);
}

static void verify(struct cpu_state *s) {
        uint64_t exp_partial = 0, exp_collision = 0, exp_lost = 0, exp_lost_samples = 0, exp_throttle = 0;
        uint64_t n_written = 0, n_lost_chunks = 0, misattributed = 0, faults_written = 0;
        uint64_t kernel_lost = data_lost(s->cpu, &faults_written);
        size_t pos = 0, sw = 0;
        uint32_t tid = s->itrace_tid;
        /* No time conversion (cap_user_time_zero clear): records cannot be placed among the switches. */
        bool switches_complete = kernel_lost == 0 && s->time.cap_user_time_zero;

        load_truth(s);
        verify_filtered(s);
        /* Switches while the event is off are not reported (perf_iterate_ctx() skips it). */
        for (size_t i = 0; i < s->n_rec; i++)
                if (!strcmp(s->rec[i].dropped, "disabled") || !strcmp(s->rec[i].dropped, "stopped") ||
                    !strcmp(s->rec[i].dropped, "noevent"))
                        switches_complete = false;
        /* The bytes: every record not dropped (those of a chunk whose PERF_RECORD_AUX was lost are
         * read all the same), in order, half of a `partial` one, and 0x00 padding between them. */
        for (size_t i = 0; i < s->n_rec; i++) {
                const struct rec *r = &s->rec[i];
                size_t n = (size_t) r->size;

                if (!strcmp(r->dropped, "partial"))
                        n /= 2;
                else if (r->dropped[0] && strcmp(r->dropped, "lost") && strcmp(r->dropped, "datalost"))
                        continue;
                /* A record starts with a packet header, never 0x00 (PAD). */
                while (pos < s->n_got && s->got[pos] == 0 && s->bin[r->off] != 0)
                        pos++;
                if (pos + n > s->n_got)
                        fail_msg("cpu %u: record %zu past the %zu bytes received", s->cpu, i, s->n_got);
                if (memcmp(s->got + pos, s->bin + r->off, n))
                        fail_msg("cpu %u: record %zu differs at byte %zu of the stream", s->cpu, i, pos);
                pos += n;
                if (!strcmp(r->dropped, "partial"))
                        continue;
                n_written++;
                /* Attribution: the last switch-in at or before the record's time. */
                uint64_t t = perf_time(&s->time, r->ts);
                while (sw < s->n_sw && s->sw[sw].time <= t)
                        tid = s->sw[sw++].tid;
                if (tid != r->tid) {
                        if (switches_complete)
                                fail_msg("cpu %u: record %zu attributed to tid %u, truth %u", s->cpu, i, tid, r->tid);
                        misattributed++;
                }
        }
        while (pos < s->n_got && s->got[pos] == 0)
                pos++;
        assert_int_equal(pos, s->n_got);

        for (size_t k = 0; k < n_faults[F_PARTIAL]; k++)
                if (faults[F_PARTIAL][k].cpu == s->cpu && !strcmp(s->rec[faults[F_PARTIAL][k].a].dropped, "partial"))
                        exp_partial++;
        for (size_t k = 0; k < n_faults[F_COLLISION]; k++)
                exp_collision += faults[F_COLLISION][k].cpu == s->cpu;
        for (size_t k = 0; k < n_faults[F_LOST]; k++)
                if (faults[F_LOST][k].cpu == s->cpu) {
                        exp_lost += faults[F_LOST][k].b;
                        n_lost_chunks++;
                }
        for (size_t k = 0; k < n_faults[F_LOST_SAMPLES]; k++)
                if (faults[F_LOST_SAMPLES][k].cpu == s->cpu)
                        exp_lost_samples += faults[F_LOST_SAMPLES][k].b;
        for (size_t k = 0; k < n_faults[F_THROTTLE]; k++)
                exp_throttle += faults[F_THROTTLE][k].cpu == s->cpu;

        print_message("cpu %u: %zu records, %" PRIu64 " received, %zu bytes, %" PRIu64 " AUX records, %" PRIu64
                      " truncated, %" PRIu64 " padding gaps (%" PRIu64 " bytes), %" PRIu64 " lost gaps, %zu switches,"
                      " %" PRIu64 " kernel-lost, %" PRIu64 " misattributed\n",
                      s->cpu, s->n_rec, n_written, s->n_got, s->prev.aux_records, s->prev.truncated,
                      s->pad_gaps, s->pad_bytes, s->lost_gaps, s->n_sw, kernel_lost, misattributed);
        assert_int_equal(s->prev.partial, exp_partial);
        assert_int_equal(s->prev.collision, exp_collision);
        if (!kernel_lost)
                assert_int_equal(faults_written, exp_lost);
        assert_int_equal(s->prev.lost, faults_written + kernel_lost);
        if (!kernel_lost)
                assert_int_equal(s->lost_gaps, n_lost_chunks);
        assert_int_equal(s->prev.lost_samples, exp_lost_samples);
        assert_int_equal(s->throttle, exp_throttle);
        assert_int_equal(s->unthrottle, exp_throttle);
        assert_int_equal(s->prev.bad_records, 0);
        assert_int_equal(s->prev.overwrite, 0);
        /* Each truncation was answered with one ENABLE. */
        assert_int_equal(s->enables, s->prev.truncated);
        assert_true(s->itrace);
        /*
         * ITRACE_START at every start of the event (perf_log_itrace_start() at each
         * event_sched_in(), before 87f78017e8c8): the first, one for each ENABLE after a
         * truncation, and one for each quiet ENABLE that found the event off (the shim's
         * "enable active=" lines count every start); else one per event.
         */
        if (arg_itrace_each) {
                assert_true(s->itraces >= 1 + s->enables);
                assert_int_equal(s->itraces, log_count(s->cpu, "enable active="));
        } else if (!arg_offline)
                assert_int_equal(s->itraces, 1);
        if (switches_complete)
                assert_int_equal(s->itrace_tid, s->rec[0].tid);
        if (!kernel_lost)
                assert_int_equal(s->switch_out, s->n_sw);
}

/* ---- fatal buffer faults (fault=CPU:IDX:s1|s2) ---- */

static bool arg_fault;

/*
 * A quiet CPU whose buffer a fault stopped (the shim logged more faults than
 * restarts): PERF_EVENT_IOC_ENABLE alone must not restart it (the event is on:
 * _perf_event_enable() does nothing), DISABLE + ENABLE must (arm_spe_pmu_stop()
 * then arm_spe_pmu_start()), and so must PERF_EVENT_IOC_PERIOD (every other
 * fault). The DISABLE commits nothing: the fault ended the session and its
 * bytes went out with the fault's PERF_RECORD_AUX.
 */
static void recover_fault(struct cpu_state *s) {
        uint64_t n_faults_seen = log_count(s->cpu, "fault s"), restarts = log_count(s->cpu, "restart after fault");
        uint64_t aux_records = s->ring.stats.aux_records;

        if (n_faults_seen == restarts)
                return;
        assert_int_equal(n_faults_seen, restarts + 1);
        drain_one(s);
        aux_records = s->ring.stats.aux_records;
        assert_int_equal(ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0), 0);
        assert_int_equal(log_count(s->cpu, "restart after fault"), restarts);
        if (restarts % 2 == 0) {
                assert_int_equal(ioctl(s->fd, PERF_EVENT_IOC_DISABLE, 0), 0);
                drain_one(s);
                assert_int_equal(s->ring.stats.aux_records, aux_records);
                assert_int_equal(ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0), 0);
        } else {
                /* Every other one: a new period stops and starts the event too (__perf_event_period()). */
                uint64_t period = s->attr.attr.sample_period;

                assert_int_equal(ioctl(s->fd, PERF_EVENT_IOC_PERIOD, &period), 0);
        }
        assert_int_equal(log_count(s->cpu, "restart after fault"), restarts + 1);
        s->fault_restarts++;
}

/* Each fault of the scenario on this CPU: its record dropped as `fault`, one restart for it. */
static void verify_faults(struct cpu_state *s) {
        uint64_t want = 0;
        char path[4096], line[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/scenario", scen_dir);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                unsigned cpu;
                size_t idx;
                char stage[4];

                if (sscanf(line, "fault=%u:%zu:%3s", &cpu, &idx, stage) != 3 || cpu != s->cpu)
                        continue;
                assert_true(idx < s->n_rec);
                assert_string_equal(s->rec[idx].dropped, "fault");
                want++;
        }
        fclose(f);
        print_message("cpu %u: %" PRIu64 " buffer faults, %" PRIu64 " restarted (DISABLE + ENABLE, PERIOD)\n", s->cpu, want,
                      s->fault_restarts);
        assert_int_equal(log_count(s->cpu, "fault s"), want);
        assert_int_equal(s->fault_restarts, want);
        /* rate 0: the core waited while its buffer was stopped, nothing else was dropped. */
        for (size_t i = 0; i < s->n_rec; i++)
                if (s->rec[i].dropped[0])
                        assert_string_equal(s->rec[i].dropped, "fault");
}

/* ---- the user page's clock (time_* keys) ---- */

static bool arg_clock;

/* A numeric key of the scenario file, or def. */
static uint64_t scenario_u64(const char *key, uint64_t def) {
        char path[4096], line[256];
        size_t n = strlen(key);
        uint64_t v = def;
        FILE *f;

        snprintf(path, sizeof(path), "%s/scenario", scen_dir);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (!strncmp(line, key, n) && line[n] == '=')
                        v = strtoull(line + n + 1, NULL, 0);
        fclose(f);
        return v;
}

/*
 * The page as arm64's arch_perf_update_userpage() writes it, worked out here
 * from the scenario's keys: nothing but clear caps when sched_clock is not
 * the arch timer; a shift of 32 becomes 31 with mult halved; time_cycles and
 * time_mask only with cap_user_time_short (5.12+).
 */
static void check_clock_page(const struct perf_event_mmap_page *up) {
        uint64_t mult = scenario_u64("time_mult", 40U << 24), shift = scenario_u64("time_shift", 24);
        bool cap = scenario_u64("time_zero_cap", 1), short_ = scenario_u64("time_short", 1);

        assert_int_equal(up->cap_user_time_zero, cap);
        assert_int_equal(up->cap_user_time, cap);
        assert_int_equal(up->cap_user_time_short, cap && short_);
        if (!cap) {
                assert_int_equal(up->time_zero, 0);
                assert_int_equal(up->time_mult, 0);
                assert_int_equal(up->time_shift, 0);
                return;
        }
        if (shift == 32) {
                shift = 31;
                mult >>= 1;
        }
        assert_int_equal(up->time_shift, shift);
        assert_int_equal(up->time_mult, mult);
        assert_int_equal(up->time_zero, scenario_u64("time_zero", 1000000000));
        assert_int_equal(up->time_cycles, short_ ? scenario_u64("time_cycles", 0) : 0);
        assert_int_equal(up->time_mask, short_ ? scenario_u64("time_mask", (UINT64_C(1) << 56) - 1) : 0);
}

/* ---- side-band storms (sideband_storm=CPU:IDX:N) ---- */

static bool arg_storm;

/* The `written=` of this CPU's storm lines in sim.log: the storm records the ring took. */
static uint64_t storm_written(unsigned cpu, uint64_t *ret_lost) {
        char pat[64], *log = read_sim_log();
        uint64_t w = 0, l = 0;

        assert_non_null(log);
        snprintf(pat, sizeof(pat), "cpu=%u storm ", cpu);
        for (char *p = log; (p = strstr(p, pat)); p++) {
                char *x = strstr(p, " written="), *y = strstr(p, " lost=");

                assert_true(x && y);
                w += strtoull(x + 9, NULL, 10);
                l += strtoull(y + 6, NULL, 10);
        }
        free(log);
        *ret_lost = l;
        return w;
}

/*
 * Every storm record the ring took was read, and the kernel's
 * PERF_RECORD_LOST counts (verify() checks them against sim.log) hold
 * those it had no room for.
 */
static void verify_storm(struct cpu_state *s) {
        uint64_t lost, written = storm_written(s->cpu, &lost);

        print_message("cpu %u: storm records %" PRIu64 " written, %" PRIu64 " read, %" PRIu64 " lost; ring LOST %" PRIu64
                      "\n", s->cpu, written, s->storm_seen, lost, s->prev.lost);
        assert_int_equal(s->storm_seen, written);
        assert_true(s->prev.lost >= lost);
}

static unsigned arg_data_pages = 8, arg_aux_pages = 16, arg_watermark, arg_sleep_ms;

static void open_cpu(struct cpu_state *s, int ep, unsigned slot) {
        struct spe_pmu_options o = { .exclude_kernel = arg_exclude_kernel };
        uint8_t *m;

        cpu_attr(&s->attr, &o, s->cpu);
        assert_int_equal(s->attr.attr.exclude_kernel, arg_exclude_kernel);
        s->attr.attr.context_switch = 1;
        s->attr.attr.aux_watermark = arg_watermark;
        /* The side-band records a storm writes (perf_event_task(), _comm(), _mmap()). */
        s->attr.attr.task = s->attr.attr.comm = s->attr.attr.mmap2 = arg_storm;
        if (arg_all_ids)
                s->attr.attr.sample_type |= PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID;
        s->fd = (int) perf_open(&s->attr.attr, (int) s->cpu, -1);
        assert_true(s->fd >= 0);
        assert_int_equal(ioctl(s->fd, PERF_EVENT_IOC_ID, &s->id), 0);
        s->data_len = (1 + arg_data_pages) * page_size;
        m = mmap(NULL, s->data_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
        assert_true(m != MAP_FAILED);
        s->up = (struct perf_event_mmap_page *) m;
        assert_int_equal(s->up->data_offset, page_size);
        assert_int_equal(s->up->data_size, arg_data_pages * page_size);
        if (arg_clock)
                check_clock_page(s->up);
        else
                assert_true(s->up->cap_user_time_zero);
        s->time = *s->up;
        s->aux_len = arg_aux_pages * page_size;
        s->up->aux_offset = s->data_len;
        s->up->aux_size = s->aux_len;
        s->aux_map = mmap(NULL, s->aux_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, (off_t) s->data_len);
        assert_true(s->aux_map != MAP_FAILED);
        assert_int_equal(aux_ring_init(&s->ring, s->up, m + page_size, arg_data_pages * page_size, s->aux_map,
                                       s->aux_len), 0);
        aux_ring_set_attr(&s->ring, &s->attr.attr);
        s->next = s->chunk_bytes = 0;
        s->lost_seen_before_gap = 0;
        assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &(struct epoll_event) { .events = EPOLLIN, .data.u32 = slot }),
                         0);
        assert_int_equal(ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0), 0);
}

static void close_cpu(struct cpu_state *s) {
        const struct aux_ring_stats *r = &s->ring.stats;

        /* What this event's ring counted, kept across a re-open. */
        s->prev.aux_records += r->aux_records;
        s->prev.truncated += r->truncated;
        s->prev.partial += r->partial;
        s->prev.collision += r->collision;
        s->prev.overwrite += r->overwrite;
        s->prev.lost += r->lost;
        s->prev.lost_samples += r->lost_samples;
        s->prev.bad_records += r->bad_records;
        aux_ring_done(&s->ring);
        assert_int_equal(munmap(s->aux_map, s->aux_len), 0);
        assert_int_equal(munmap(s->up, s->data_len), 0);
        assert_int_equal(close(s->fd), 0);
        s->fd = -1;
}

static bool log_has(const char *what) {
        char path[4096];
        size_t size;
        char *log;
        bool r;

        snprintf(path, sizeof(path), "%s/sim.log", scen_dir);
        log = read_all(path, &size);
        r = log && strstr(log, what);
        free(log);
        return r;
}

static void set_online(const char *list) {
        char path[4096], tmp[4100];
        FILE *f;

        snprintf(path, sizeof(path), "%s/devices/system/cpu/online", sysfs_root);
        snprintf(tmp, sizeof(tmp), "%s.t", path);
        f = fopen(tmp, "we");
        assert_non_null(f);
        fprintf(f, "%s\n", list);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}


/*
 * Two PMUs: each CPU opened with its own PMU's type (open_cpu()); with the
 * other's, arm_spe_pmu_event_init() refuses it: ENOENT, the CPU is not in
 * that PMU's supported_cpus (before the exclusive check: not EBUSY).
 */
static void two_pmus(const struct cpu_state *cs, unsigned n) {
        if (n_pmus < 2)
                return;
        for (unsigned i = 0; i < n; i++) {
                const struct spe_pmu *mine = spe_pmu_for_cpu(pmus, n_pmus, cs[i].cpu);
                const struct spe_pmu *other = mine == &pmus[0] ? &pmus[1] : &pmus[0];
                struct spe_pmu_event_attr a;
                struct spe_pmu_options o = {};
                char err[256] = "";

                assert_int_equal(cs[i].attr.attr.type, mine->type);
                assert_int_equal(spe_pmu_attr(other, &o, &a, NULL, err, sizeof(err)), 0);
                assert_true(perf_open(&a.attr, (int) cs[i].cpu, -1) < 0);
                assert_int_equal(errno, ENOENT);
        }
        print_message("%u CPUs on %s (type %" PRIu32 ") and %s (type %" PRIu32 "), each opened with its own\n", n,
                      pmus[0].name, pmus[0].type, pmus[1].name, pmus[1].type);
}

static void test_drain(void **state) {
        static struct cpu_state cs[MAX_CPUS];
        struct epoll_event evs[MAX_CPUS];
        unsigned n = 0;
        int ep;
        enum { OFF_NONE, OFF_WAIT, OFF_DONE } off = arg_offline ? OFF_NONE : OFF_DONE;

        read_scenario();
        discover();
        ep = epoll_create1(EPOLL_CLOEXEC);
        assert_true(ep >= 0);
        for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
                if (!spe_pmu_for_cpu(pmus, n_pmus, cpu))
                        continue;
                cs[n].cpu = cpu;
                open_cpu(&cs[n], ep, n);
                n++;
        }
        assert_true(n > 0);
        two_pmus(cs, n);

        /* Drain on wakeups, and on a timer for a quiet CPU, until every core is done. */
        for (;;) {
                bool done = all_done(n);
                int k;

                if (arg_sleep_ms) {
                        /* A slow reader: wakeups ignored, the rings fill. */
                        sleep_ms(arg_sleep_ms);
                        k = epoll_wait(ep, evs, MAX_CPUS, 0);
                } else
                        k = epoll_wait(ep, evs, MAX_CPUS, 20);
                assert_true(k >= 0);
                for (unsigned i = 0; i < n; i++) {
                        drain_one(&cs[i]);
                        /*
                         * A TRUNCATED record the full data ring could not take leaves the
                         * event off with nothing to say so (its PERF_RECORD_LOST only comes
                         * with the next record): when quiet, ENABLE anyway; harmless when on.
                         */
                        if (k == 0 && !arg_sleep_ms)
                                assert_int_equal(ioctl(cs[i].fd, PERF_EVENT_IOC_ENABLE, 0), 0);
                        if (k == 0 && arg_fault)
                                recover_fault(&cs[i]);
                }
                if (off == OFF_NONE && n > 1 && cs[1].ring.stats.aux_records >= 2) {
                        /* CPU 1 goes offline under its event (the last CPU of the list stays). */
                        struct spe_pmu_event_attr a;
                        struct spe_pmu_options o = {};
                        long fd;

                        set_online("0");
                        while (!log_has("cpu=1 offline"))
                                sleep_ms(5);
                        drain_one(&cs[1]);
                        base_attr(&a, &o);
                        /* The dead event left the CPU's context: ENODEV, not EBUSY. */
                        fd = perf_open(&a.attr, 1, -1);
                        assert_true(fd < 0);
                        assert_int_equal(errno, ENODEV);
                        /* ENABLE on it does nothing. */
                        assert_int_equal(ioctl(cs[1].fd, PERF_EVENT_IOC_ENABLE, 0), 0);
                        close_cpu(&cs[1]);
                        set_online("0-1");
                        open_cpu(&cs[1], ep, 1);
                        off = OFF_DONE;
                }
                if (done)
                        break;
        }
        assert_true(off == OFF_DONE);
        /* The partial buffers: DISABLE makes the driver commit them (arm_spe_pmu_stop()). */
        for (unsigned i = 0; i < n; i++) {
                assert_int_equal(ioctl(cs[i].fd, PERF_EVENT_IOC_DISABLE, 0), 0);
                drain_one(&cs[i]);
        }
        for (unsigned i = 0; i < n; i++) {
                close_cpu(&cs[i]);
                verify(&cs[i]);
                if (arg_fault)
                        verify_faults(&cs[i]);
                if (arg_storm)
                        verify_storm(&cs[i]);
        }
        /* The generator's kernel scenario is in the streams (--scenario all): filtering was tested. */
        if (arg_exclude_kernel)
                assert_true(kernel_records > 0);
        close(ep);
        (void) state;
}

/* ---- refusals ---- */

static int open_errno(struct spe_pmu_event_attr *a, int cpu, int pid) {
        long fd = perf_open(&a->attr, cpu, pid);

        if (fd >= 0) {
                close((int) fd);
                return 0;
        }
        return errno;
}

static void test_errors(void **state) {
        struct spe_pmu_options o = {};
        struct spe_pmu_event_attr a;
        uint8_t *m;
        uint64_t id = 0;
        long fd, fd2;

        /* The scenario: cpus=0-3 covered, possible 0-5, online 0-2,4 (3 offline), eacces_cpus=1,
         * ebusy=2:2, noperfmon=1, mmap_limit=65536 mmap_errno=ENOMEM. */
        base_attr(&a, &o);
        assert_int_equal(open_errno(&a, 0, -1), 0);
        assert_int_equal(open_errno(&a, 1, -1), EACCES);
        assert_int_equal(open_errno(&a, 2, -1), EBUSY);
        assert_int_equal(open_errno(&a, 2, -1), EBUSY);
        assert_int_equal(open_errno(&a, 2, -1), 0);
        assert_int_equal(open_errno(&a, 3, -1), ENODEV);
        assert_int_equal(open_errno(&a, 4, -1), ENOENT);
        assert_int_equal(open_errno(&a, 6, -1), EINVAL);
        assert_int_equal(open_errno(&a, -1, -1), EINVAL);
        assert_int_equal(open_errno(&a, 0, 1), EINVAL);

        base_attr(&a, &o);
        a.attr.freq = 1;
        a.attr.sample_freq = 1000;
        assert_int_equal(open_errno(&a, 0, -1), EINVAL);
        base_attr(&a, &o);
        a.attr.exclude_idle = 1;
        assert_int_equal(open_errno(&a, 0, -1), EOPNOTSUPP);
        o.physical_addresses = true;
        base_attr(&a, &o);
        assert_int_equal(open_errno(&a, 0, -1), EACCES);
        o.physical_addresses = false;
        o.physical_timestamps = true;
        base_attr(&a, &o);
        assert_int_equal(open_errno(&a, 0, -1), EACCES);
        o.physical_timestamps = false;
        /* event_filter bit 0 is RES0 in PMSEVFR_EL1 */
        base_attr(&a, &o);
        a.attr.config1 = 1;
        assert_int_equal(open_errno(&a, 0, -1), EOPNOTSUPP);
        base_attr(&a, &o);
        a.attr.config1 = 1U << 1;
        assert_int_equal(open_errno(&a, 0, -1), 0);

        /* attr.size: bytes past the kernel's attr must be zero (E2BIG, size written back). */
        {
                uint8_t raw[160] = {};

                base_attr(&a, &o);
                memcpy(raw, &a, sizeof(a));
                ((struct perf_event_attr *) raw)->size = 144;
                raw[140] = 1;
                errno = 0;
                assert_true(perf_open((struct perf_event_attr *) raw, 0, -1) < 0);
                assert_int_equal(errno, E2BIG);
                assert_int_equal(((struct perf_event_attr *) raw)->size, SPE_PMU_ATTR_SIZE_VER8);
                raw[140] = 0;
                ((struct perf_event_attr *) raw)->size = 144;
                fd = perf_open((struct perf_event_attr *) raw, 0, -1);
                assert_true(fd >= 0);
                close((int) fd);
                ((struct perf_event_attr *) raw)->size = 32;
                assert_true(perf_open((struct perf_event_attr *) raw, 0, -1) < 0);
                assert_int_equal(errno, E2BIG);
        }

        /* One SPE event per CPU (PERF_PMU_CAP_EXCLUSIVE). */
        base_attr(&a, &o);
        fd = perf_open(&a.attr, 0, -1);
        assert_true(fd >= 0);
        fd2 = perf_open(&a.attr, 0, -1);
        assert_true(fd2 < 0);
        assert_int_equal(errno, EBUSY);

        assert_int_equal(ioctl((int) fd, PERF_EVENT_IOC_ID, &id), 0);
        assert_true(id > 0);
        assert_true(ioctl((int) fd, _IO('$', 99), 0) < 0);
        assert_int_equal(errno, ENOTTY);
        assert_true(ioctl((int) fd, PERF_EVENT_IOC_SET_FILTER, "filter") < 0);
        assert_int_equal(errno, EINVAL);
        /* ENABLE twice is harmless; DISABLE before any buffer commits nothing. */
        assert_int_equal(ioctl((int) fd, PERF_EVENT_IOC_ENABLE, 0), 0);
        assert_int_equal(ioctl((int) fd, PERF_EVENT_IOC_ENABLE, 0), 0);
        assert_int_equal(ioctl((int) fd, PERF_EVENT_IOC_DISABLE, 0), 0);

        /* perf_mmap(): 1 + 2^n pages, MAP_SHARED. */
        assert_true(mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd, 0) == MAP_FAILED);
        assert_int_equal(errno, EINVAL);
        assert_true(mmap(NULL, 3 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, (int) fd, 0) == MAP_FAILED);
        assert_int_equal(errno, EINVAL);
        /* The AUX area before the data ring. */
        assert_true(mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd,
                         (off_t) (5 * page_size)) == MAP_FAILED);
        assert_int_equal(errno, EINVAL);
        m = mmap(NULL, 5 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd, 0);
        assert_true(m != MAP_FAILED);
        {
                struct perf_event_mmap_page *up = (void *) m;

                /* aux_offset inside the data ring */
                up->aux_offset = 2 * page_size;
                up->aux_size = 4 * page_size;
                assert_true(mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd,
                                 (off_t) (2 * page_size)) == MAP_FAILED);
                assert_int_equal(errno, EINVAL);
                up->aux_offset = 5 * page_size;
                /* the mapping's size must be aux_size */
                assert_true(mmap(NULL, 8 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd,
                                 (off_t) (5 * page_size)) == MAP_FAILED);
                assert_int_equal(errno, EINVAL);
                /* not a power of two */
                up->aux_size = 3 * page_size;
                assert_true(mmap(NULL, 3 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd,
                                 (off_t) (5 * page_size)) == MAP_FAILED);
                assert_int_equal(errno, EINVAL);
                /* SPE needs two pages (arm_spe_pmu_setup_aux()) */
                up->aux_size = page_size;
                assert_true(mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd,
                                 (off_t) (5 * page_size)) == MAP_FAILED);
                assert_int_equal(errno, ENOMEM);
                /* read-only AUX (snapshot mode) is not modelled */
                up->aux_size = 4 * page_size;
                assert_true(mmap(NULL, 4 * page_size, PROT_READ, MAP_SHARED, (int) fd, (off_t) (5 * page_size)) ==
                            MAP_FAILED);
                assert_int_equal(errno, EINVAL);
                /* over the memlock limit of the scenario, then a smaller one */
                up->aux_size = 131072;
                assert_true(mmap(NULL, 131072, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd,
                                 (off_t) (5 * page_size)) == MAP_FAILED);
                assert_int_equal(errno, ENOMEM);
                up->aux_size = 65536;
                /* Enabled before the AUX area exists: it starts once the area is mapped. */
                assert_int_equal(ioctl((int) fd, PERF_EVENT_IOC_ENABLE, 0), 0);
                void *aux = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd, (off_t) (5 * page_size));
                assert_true(aux != MAP_FAILED);
                assert_true(log_has("cpu=0 mmap aux_size=65536"));
                /* Unmapping the last AUX mapping frees it: a smaller one can follow. */
                assert_int_equal(munmap(aux, 65536), 0);
                assert_true(log_has("cpu=0 munmap aux"));
                up->aux_size = 4 * page_size;
                aux = mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int) fd, (off_t) (5 * page_size));
                assert_true(aux != MAP_FAILED);
                assert_int_equal(munmap(aux, 4 * page_size), 0);
        }
        assert_int_equal(munmap(m, 5 * page_size), 0);
        assert_int_equal(close((int) fd), 0);
        /* Free again after close. */
        assert_int_equal(open_errno(&a, 0, -1), 0);
        (void) state;
}

int main(int argc, char **argv) {
        const struct CMUnitTest drain[] = { cmocka_unit_test(test_drain) };
        const struct CMUnitTest errors[] = { cmocka_unit_test(test_errors) };

        scen_dir = getenv("ARMPROFD_SIMPMU_DIR");
        sysfs_root = getenv("ARMPROFD_SYSFS_ROOT");
        page_size = (size_t) sysconf(_SC_PAGESIZE);
        if (!scen_dir || !sysfs_root || argc < 2) {
                fprintf(stderr, "usage: ARMPROFD_SIMPMU_DIR=... ARMPROFD_SYSFS_ROOT=... LD_PRELOAD=libarmprofd-simpmu.so "
                                "%s drain DATA_PAGES AUX_PAGES WATERMARK | errors\n", argv[0]);
                return 2;
        }
        if (!strcmp(argv[1], "drain")) {
                if (argc >= 5) {
                        arg_data_pages = (unsigned) atoi(argv[2]);
                        arg_aux_pages = (unsigned) atoi(argv[3]);
                        arg_watermark = (unsigned) atoi(argv[4]);
                }
                for (int i = 5; i < argc; i++)
                        if (!strcmp(argv[i], "offline"))
                                arg_offline = true;
                        else if (!strcmp(argv[i], "all-ids"))
                                arg_all_ids = true;
                        else if (!strcmp(argv[i], "no-cx"))
                                arg_no_cx = true;
                        else if (!strcmp(argv[i], "itrace-each"))
                                arg_itrace_each = true;
                        else if (!strcmp(argv[i], "exclude-kernel"))
                                arg_exclude_kernel = true;
                        else if (!strncmp(argv[i], "page=", 5)) {
                                /* The scenario's page_size=: the shim answers sysconf() with it. */
                                if (page_size != (size_t) atol(argv[i] + 5)) {
                                        fprintf(stderr, "page size %zu, the scenario's %s\n", page_size, argv[i] + 5);
                                        return 1;
                                }
                        }
                        else if (!strcmp(argv[i], "fault"))
                                arg_fault = true;
                        else if (!strcmp(argv[i], "clock"))
                                arg_clock = true;
                        else if (!strcmp(argv[i], "storm"))
                                arg_storm = true;
                        else
                                arg_sleep_ms = (unsigned) atoi(argv[i]);
                return cmocka_run_group_tests(drain, NULL, NULL);
        }
        return cmocka_run_group_tests(errors, NULL, NULL);
}
