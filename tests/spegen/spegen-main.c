/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * armprofd-spegen: write synthetic Arm SPE data with its ground truth.
 *
 *   <prefix>.cpuN.bin     raw SPE bytes of CPU N (the AUX stream)
 *   <prefix>.truth.csv    one row per record and per injected garbage run
 *   <prefix>.truth.txt    per-scenario facts (shared lines, hottest PC...)
 *   <prefix>.data         perf.data (file mode, or pipe mode with --pipe)
 *   <prefix>.elf          the fake AArch64 ELF the user PCs resolve in (with a
 *                         build-id note; its id is elf.build_id in truth.txt)
 *
 * See tests/spegen/README.md for the scenarios and the CSV columns.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "strbuf.h"

#include "fake-elf.h"
#include "perfdata-writer.h"
#include "spegen-io.h"
#include "spegen-gen.h"
#include "spegen-layout.h"

/* Side-band records come long before the first SPE timestamp so that perf
 * has the maps when it synthesizes the first sample (tools/perf/util/arm-spe.c
 * of perf 6.1: samples before their maps get no symbols). With
 * END-terminated records every sample has time 0 and perf decodes the AUX
 * queue as soon as an event with a non-zero time arrives, so the side band
 * then has to be at time 0 as well. */
#define SIDEBAND_TIME_START     UINT64_C(1000)
#define SIDEBAND_TIME_START_END UINT64_C(0)
#define CSV_BUF_SIZE        (1U << 20)

struct args {
        struct spegen_config gen;
        enum spegen_midr_kind midr;
        uint32_t pmu_type;
        const char *out_dir;
        const char *prefix;
        const char *perf_data_path;
        const char *truth_path;
        const char *elf_path;
        bool pipe;
        bool pad_layout_set;
        bool no_bin, no_truth, no_perf_data;
};

/* Records per function of the fake ELF; the last slot counts kernel PCs. */
#define FUNC_KERNEL _SPEGEN_FN_MAX

struct out_ctx {
        const struct args *a;
        uint64_t func_records[_SPEGEN_FN_MAX + 1];
        int bin_fds[SPEGEN_MAX_CPUS];
        FILE *csv;
        char *line;
        struct pdw *pdw;
        uint8_t build_id[FAKE_ELF_BUILD_ID_SIZE]; /* the fake ELF's NT_GNU_BUILD_ID */
};

static void help(void) {
        printf("Usage: armprofd-spegen [OPTIONS]\n"
               "Write synthetic Arm SPE streams, their ground truth and a perf.data.\n\n"
               "  --seed N              PRNG seed (default 1); same seed => same bytes\n"
               "  --records N           number of SPE records (default 10000)\n"
               "  --cpus N              CPUs 1..%u (default 4)\n"
               "  --scenario LIST       comma-separated scenario names or 'all'\n"
               "  --out-dir DIR         output directory (default .)\n"
               "  --prefix NAME         output file prefix (default spegen)\n"
               "  --perf-data PATH      perf.data path ('-' = stdout)\n"
               "  --truth PATH          ground-truth CSV path\n"
               "  --elf PATH            fake ELF path\n"
               "  --padded              fixed 64-byte records (Neoverse N1)\n"
               "  --pad-layout=L        with --padded, L = slots (default): each packet at\n"
               "                        its N1 fixed offset, zeros for absent ones (records\n"
               "                        that do not fit, e.g. extended headers, use split);\n"
               "                        split: packets back to back, padding split at random\n"
               "                        after the first one and before the terminator\n"
               "  --ts                  TIMESTAMP-terminated records (default: END)\n"
               "  --no-ts               END-terminated records\n"
               "  --no-context          no CONTEXT packets (truth.csv keeps pid/tid)\n"
               "  --garbage RATE        probability 0..1 of bad bytes before a record\n"
               "  --pipe                pipe-mode perf.data\n"
               "  --chunk-size SIZE     max AUXTRACE buffer (default 4M)\n"
               "  --midr n1|n2|v1       CPU for HEADER_CPUID (default n1)\n"
               "  --pmu-type N          arm_spe PMU type (default %u)\n"
               "  --no-bin --no-truth --no-perf-data   skip an output\n"
               "Scenarios:",
               SPEGEN_MAX_CPUS, PDW_SPE_PMU_TYPE_DEFAULT);
        for (unsigned i = 0; i < _SPEGEN_SC_MAX; i++)
                printf(" %s", spegen_scenario_name(i));
        printf("\n");
}

/* A probability written as a plain decimal ("0.01", "1", ".5"). */
static int parse_rate(const char *s, double *ret) {
        char *end = NULL;
        double v;

        if (!s || !*s || strspn(s, "0123456789.") != strlen(s))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || !end || *end != '\0')
                return -EINVAL;
        if (!(v >= 0.0 && v <= 1.0))
                return -ERANGE;
        *ret = v;
        return 0;
}

enum {
        ARG_SEED = 0x100, ARG_RECORDS, ARG_CPUS, ARG_SCENARIO, ARG_OUT_DIR, ARG_PREFIX, ARG_PERF_DATA,
        ARG_TRUTH, ARG_ELF, ARG_PADDED, ARG_TS, ARG_NO_TS, ARG_NO_CONTEXT, ARG_GARBAGE, ARG_PIPE, ARG_CHUNK, ARG_MIDR,
        ARG_PMU_TYPE, ARG_NO_BIN, ARG_NO_TRUTH, ARG_NO_PERF_DATA, ARG_PAD_LAYOUT,
};

static int parse_args(int argc, char **argv, struct args *a) {
        static const struct option opts[] = {
                { "help",         no_argument,       NULL, 'h' },
                { "seed",         required_argument, NULL, ARG_SEED },
                { "records",      required_argument, NULL, ARG_RECORDS },
                { "cpus",         required_argument, NULL, ARG_CPUS },
                { "scenario",     required_argument, NULL, ARG_SCENARIO },
                { "out-dir",      required_argument, NULL, ARG_OUT_DIR },
                { "prefix",       required_argument, NULL, ARG_PREFIX },
                { "perf-data",    required_argument, NULL, ARG_PERF_DATA },
                { "truth",        required_argument, NULL, ARG_TRUTH },
                { "elf",          required_argument, NULL, ARG_ELF },
                { "padded",       no_argument,       NULL, ARG_PADDED },
                { "pad-layout",   required_argument, NULL, ARG_PAD_LAYOUT },
                { "ts",           no_argument,       NULL, ARG_TS },
                { "no-ts",        no_argument,       NULL, ARG_NO_TS },
                { "no-context",   no_argument,       NULL, ARG_NO_CONTEXT },
                { "garbage",      required_argument, NULL, ARG_GARBAGE },
                { "pipe",         no_argument,       NULL, ARG_PIPE },
                { "chunk-size",   required_argument, NULL, ARG_CHUNK },
                { "midr",         required_argument, NULL, ARG_MIDR },
                { "pmu-type",     required_argument, NULL, ARG_PMU_TYPE },
                { "no-bin",       no_argument,       NULL, ARG_NO_BIN },
                { "no-truth",     no_argument,       NULL, ARG_NO_TRUTH },
                { "no-perf-data", no_argument,       NULL, ARG_NO_PERF_DATA },
                {}
        };
        uint64_t u64;
        uint32_t u32;
        int c, r;

        spegen_config_init(&a->gen);
        a->midr = SPEGEN_MIDR_N1;
        a->pmu_type = PDW_SPE_PMU_TYPE_DEFAULT;
        a->out_dir = ".";
        a->prefix = "spegen";

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_SEED:
                        r = safe_atou64(optarg, &a->gen.seed);
                        if (r < 0)
                                goto bad;
                        break;
                case ARG_RECORDS:
                        r = safe_atou64(optarg, &a->gen.n_records);
                        if (r < 0)
                                goto bad;
                        break;
                case ARG_CPUS:
                        r = safe_atou32(optarg, &u32);
                        if (r >= 0 && (u32 < 1 || u32 > SPEGEN_MAX_CPUS))
                                r = -ERANGE;
                        if (r < 0)
                                goto bad;
                        a->gen.n_cpus = u32;
                        break;
                case ARG_SCENARIO:
                        r = spegen_parse_scenarios(optarg, &a->gen.scenarios);
                        if (r < 0)
                                goto bad;
                        break;
                case ARG_OUT_DIR:
                        a->out_dir = optarg;
                        break;
                case ARG_PREFIX:
                        if (!*optarg || strchr(optarg, '/')) {
                                r = -EINVAL;
                                goto bad;
                        }
                        a->prefix = optarg;
                        break;
                case ARG_PERF_DATA:
                        a->perf_data_path = optarg;
                        break;
                case ARG_TRUTH:
                        a->truth_path = optarg;
                        break;
                case ARG_ELF:
                        a->elf_path = optarg;
                        break;
                case ARG_PADDED:
                        a->gen.padded = true;
                        break;
                case ARG_PAD_LAYOUT:
                        r = spegen_parse_pad_layout(optarg, &a->gen.pad_layout);
                        if (r < 0)
                                goto bad;
                        a->pad_layout_set = true;
                        break;
                case ARG_TS:
                        a->gen.ts = true;
                        break;
                case ARG_NO_TS:
                        a->gen.ts = false;
                        break;
                case ARG_NO_CONTEXT:
                        a->gen.no_context = true;
                        break;
                case ARG_GARBAGE:
                        r = parse_rate(optarg, &a->gen.garbage_rate);
                        if (r < 0)
                                goto bad;
                        break;
                case ARG_PIPE:
                        a->pipe = true;
                        break;
                case ARG_CHUNK:
                        r = parse_size(optarg, &u64);
                        if (r >= 0 && (u64 < SPEGEN_MIN_CHUNK || u64 > (UINT64_C(1) << 30)))
                                r = -ERANGE;
                        if (r < 0)
                                goto bad;
                        a->gen.chunk_size = (size_t) u64;
                        break;
                case ARG_MIDR:
                        if (streq(optarg, "n1"))
                                a->midr = SPEGEN_MIDR_N1;
                        else if (streq(optarg, "n2"))
                                a->midr = SPEGEN_MIDR_N2;
                        else if (streq(optarg, "v1"))
                                a->midr = SPEGEN_MIDR_V1;
                        else {
                                r = -EINVAL;
                                goto bad;
                        }
                        break;
                case ARG_PMU_TYPE:
                        r = safe_atou32(optarg, &a->pmu_type);
                        if (r >= 0 && a->pmu_type == 0)
                                r = -ERANGE;
                        if (r < 0)
                                goto bad;
                        break;
                case ARG_NO_BIN:
                        a->no_bin = true;
                        break;
                case ARG_NO_TRUTH:
                        a->no_truth = true;
                        break;
                case ARG_NO_PERF_DATA:
                        a->no_perf_data = true;
                        break;
                default:
                        return -EINVAL;
                }
                continue;
        bad:
                fprintf(stderr, "armprofd-spegen: invalid argument for option %s: '%s': %s\n",
                        argv[optind - 1], optarg, strerror(-r));
                return -EINVAL;
        }
        if (optind < argc) {
                fprintf(stderr, "armprofd-spegen: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (a->pad_layout_set && !a->gen.padded) {
                fprintf(stderr, "armprofd-spegen: --pad-layout needs --padded\n");
                return -EINVAL;
        }
        return 1;
}

/* Fast CSV field formatting: 5,000,000 rows through printf would dominate
 * the run time. */
static char *put_str(char *p, const char *s) {
        size_t l = strlen(s);

        memcpy(p, s, l);
        return p + l;
}

static char *put_dec(char *p, uint64_t v) {
        char tmp[24];
        size_t n = 0;

        do {
                tmp[n++] = (char) ('0' + v % 10);
                v /= 10;
        } while (v);
        while (n)
                *p++ = tmp[--n];
        return p;
}

static char *put_hex(char *p, uint64_t v) {
        static const char digits[] = "0123456789abcdef";
        char tmp[16];
        size_t n = 0;

        *p++ = '0';
        *p++ = 'x';
        do {
                tmp[n++] = digits[v & 0xf];
                v >>= 4;
        } while (v);
        while (n)
                *p++ = tmp[--n];
        return p;
}

static const char csv_header[] =
        "kind,cpu,index,offset,pc,el,ns,tgt,va,pa,tot_lat,issue_lat,xlat_lat,events,op_class,"
        "op_subclass,data_source,context,timestamp,scenario,pid,tid,size,pa_ns,pa_ch,pa_pat,"
        "events_size,ds_size,context_el,ext_hdr,garbage_bytes,before_record,layout\n";

#define FIELD(cond, expr)               \
        do {                            \
                if (cond)               \
                        p = (expr);     \
                *p++ = ',';             \
        } while (0)

static void count_function(struct out_ctx *o, const struct spegen_record *r) {
        if (r->el != 0) {
                o->func_records[FUNC_KERNEL]++;
                return;
        }
        for (unsigned i = 0; i < _SPEGEN_FN_MAX; i++) {
                uint64_t start = SPEGEN_TEXT_BASE + spegen_funcs[i].offset;

                if (r->pc >= start && r->pc < start + spegen_funcs[i].size) {
                        o->func_records[i]++;
                        return;
                }
        }
}

static int on_record(void *userdata, const struct spegen_record *r) {
        struct out_ctx *o = userdata;
        char *p = o->line;
        uint32_t h = r->has;

        count_function(o, r);
        if (!o->csv)
                return 0;
        p = put_str(p, "record,");
        FIELD(true, put_dec(p, r->cpu));
        FIELD(true, put_dec(p, r->index));
        FIELD(true, put_dec(p, r->offset));
        FIELD(h & SPEGEN_HAS_PC, put_hex(p, r->pc));
        FIELD(h & SPEGEN_HAS_PC, put_dec(p, r->el));
        FIELD(h & SPEGEN_HAS_PC, put_dec(p, r->ns));
        FIELD(h & SPEGEN_HAS_TGT, put_hex(p, r->tgt));
        FIELD(h & SPEGEN_HAS_VA, put_hex(p, r->va));
        FIELD(h & SPEGEN_HAS_PA, put_hex(p, r->pa));
        FIELD(h & SPEGEN_HAS_TOT, put_dec(p, r->tot_lat));
        FIELD(h & SPEGEN_HAS_ISSUE, put_dec(p, r->issue_lat));
        FIELD(h & SPEGEN_HAS_XLAT, put_dec(p, r->xlat_lat));
        FIELD(h & SPEGEN_HAS_EVENTS, put_hex(p, r->events));
        FIELD(h & SPEGEN_HAS_OP, put_dec(p, r->op_class));
        FIELD(h & SPEGEN_HAS_OP, put_hex(p, r->op_subclass));
        FIELD(h & SPEGEN_HAS_DS, put_hex(p, r->data_source));
        FIELD(h & SPEGEN_HAS_CONTEXT, put_dec(p, r->context));
        FIELD(h & SPEGEN_HAS_TS, put_dec(p, r->timestamp));
        FIELD(true, put_str(p, spegen_scenario_name(r->scenario)));
        FIELD(true, put_dec(p, r->pid));
        FIELD(true, put_dec(p, r->tid));
        FIELD(true, put_dec(p, r->size));
        FIELD(h & SPEGEN_HAS_PA, put_dec(p, r->pa_ns));
        FIELD(h & SPEGEN_HAS_PA, put_dec(p, r->pa_ch));
        FIELD(h & SPEGEN_HAS_PA, put_dec(p, r->pa_pat));
        FIELD(h & SPEGEN_HAS_EVENTS, put_dec(p, r->events_size));
        FIELD(h & SPEGEN_HAS_DS, put_dec(p, r->ds_size));
        FIELD(h & SPEGEN_HAS_CONTEXT, put_dec(p, r->context_idx + 1));
        FIELD(true, put_hex(p, r->ext));
        *p++ = ','; /* garbage_bytes */
        *p++ = ','; /* before_record */
        p = put_str(p, spegen_record_layout_name(r->layout));
        *p++ = '\n';
        if (fwrite(o->line, 1, (size_t) (p - o->line), o->csv) != (size_t) (p - o->line))
                return -EIO;
        return 0;
}

static int on_garbage(void *userdata, const struct spegen_garbage *g) {
        static const char digits[] = "0123456789abcdef";
        struct out_ctx *o = userdata;
        char *p = o->line;

        if (!o->csv)
                return 0;
        p = put_str(p, "garbage,");
        p = put_dec(p, g->cpu);
        *p++ = ',';
        p = put_dec(p, g->index);
        *p++ = ',';
        p = put_dec(p, g->offset);
        /* pc .. tid (18 columns) are empty */
        for (unsigned i = 0; i < 18; i++)
                *p++ = ',';
        *p++ = ',';
        p = put_dec(p, g->len);
        /* pa_ns .. ext_hdr (7 columns) are empty */
        for (unsigned i = 0; i < 7; i++)
                *p++ = ',';
        *p++ = ',';
        for (unsigned i = 0; i < g->len; i++) {
                *p++ = digits[g->bytes[i] >> 4];
                *p++ = digits[g->bytes[i] & 0xf];
        }
        *p++ = ',';
        p = put_dec(p, g->before_record);
        *p++ = ','; /* layout */
        *p++ = '\n';
        if (fwrite(o->line, 1, (size_t) (p - o->line), o->csv) != (size_t) (p - o->line))
                return -EIO;
        return 0;
}

static int on_chunk(void *userdata, unsigned cpu, const uint8_t *data, size_t len, uint64_t offset,
                    uint64_t time) {
        struct out_ctx *o = userdata;
        int r;

        if (o->bin_fds[cpu] >= 0) {
                r = spegen_write_full(o->bin_fds[cpu], data, len, -1);
                if (r < 0)
                        return r;
        }
        if (o->pdw) {
                /* The AUX record is stamped just after the chunk's last
                 * record, as the kernel writes it after the data. */
                r = pdw_aux(o->pdw, cpu, data, len, offset, time + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static char *path_join(const char *dir, const char *prefix, const char *suffix) {
        struct strbuf sb = STRBUF_INIT;

        strbuf_printf(&sb, "%s/%s%s", dir, prefix, suffix);
        return strbuf_steal(&sb, NULL);
}

static const char *symbol_of(uint64_t pc) {
        for (unsigned i = 0; i < _SPEGEN_FN_MAX; i++) {
                uint64_t start = SPEGEN_TEXT_BASE + spegen_funcs[i].offset;

                if (pc >= start && pc < start + spegen_funcs[i].size)
                        return spegen_funcs[i].name;
        }
        if (pc >= (SPEGEN_KTEXT_BASE | UINT64_C(0xff00000000000000)))
                return "[kernel]";
        return "[unknown]";
}

static void print_cpus_of(FILE *f, const struct spegen_thread *t, size_t n, const char *comm) {
        bool seen[SPEGEN_MAX_CPUS] = {};
        const char *sep = "";

        for (size_t i = 0; i < n; i++)
                if (streq(t[i].comm, comm))
                        seen[t[i].cpu] = true;
        for (unsigned cpu = 0; cpu < SPEGEN_MAX_CPUS; cpu++)
                if (seen[cpu]) {
                        fprintf(f, "%s%u", sep, cpu);
                        sep = ",";
                }
        fputc('\n', f);
}

static int write_summary(const struct args *a, const struct out_ctx *o, const char *path,
                         const struct spegen_stats *st) {
        struct spegen_thread threads[SPEGEN_MAX_THREADS];
        size_t n = spegen_threads(a->gen.n_cpus, threads, ELEMENTSOF(threads));
        _cleanup_free_ char *names = NULL;
        struct strbuf sb = STRBUF_INIT;
        FILE *f;

        for (unsigned i = 0; i < _SPEGEN_SC_MAX; i++)
                if (a->gen.scenarios & (UINT32_C(1) << i))
                        strbuf_printf(&sb, "%s%s", sb.len ? "," : "", spegen_scenario_name(i));
        names = strbuf_steal(&sb, NULL);

        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "# armprofd-spegen ground truth summary (key=value)\n");
        fprintf(f, "seed=%llu\nrecords=%llu\ncpus=%u\nnodes=%u\nscenarios=%s\npadded=%d\npad_layout=%s\n"
                   "ts=%d\ngarbage_rate=%g\nmidr=0x%llx\npid=%u\n",
                (unsigned long long) a->gen.seed, (unsigned long long) st->records, a->gen.n_cpus,
                spegen_n_nodes(a->gen.n_cpus), names, a->gen.padded,
                a->gen.padded ? spegen_pad_layout_name(a->gen.pad_layout) : "", a->gen.ts,
                a->gen.garbage_rate, (unsigned long long) spegen_midr(a->midr), SPEGEN_PID);
        /* How the records were laid out: "slots" counts the records in the
         * N1 fixed-slot layout, "split" the other padded ones. */
        for (unsigned i = 0; i < _SPEGEN_LAYOUT_MAX; i++)
                fprintf(f, "layout.%s=%llu\n", spegen_record_layout_name(i),
                        (unsigned long long) st->records_per_layout[i]);
        for (unsigned i = 0; i < _SPEGEN_SC_MAX; i++)
                fprintf(f, "records.%s=%llu\n", spegen_scenario_name(i),
                        (unsigned long long) st->records_per_scenario[i]);
        for (unsigned cpu = 0; cpu < a->gen.n_cpus; cpu++)
                fprintf(f, "cpu%u.records=%llu\ncpu%u.bytes=%llu\ncpu%u.garbage_runs=%llu\n"
                           "cpu%u.garbage_bytes=%llu\n",
                        cpu, (unsigned long long) st->records_per_cpu[cpu],
                        cpu, (unsigned long long) st->bytes_per_cpu[cpu],
                        cpu, (unsigned long long) st->garbage_runs_per_cpu[cpu],
                        cpu, (unsigned long long) st->garbage_bytes_per_cpu[cpu]);
        fprintf(f, "hottest.pc=0x%llx\nhottest.symbol=%s\nhottest.count=%llu\n",
                (unsigned long long) st->hottest_pc, symbol_of(st->hottest_pc),
                (unsigned long long) st->hottest_count);
        {
                unsigned best = 0;

                for (unsigned i = 1; i <= FUNC_KERNEL; i++)
                        if (o->func_records[i] > o->func_records[best])
                                best = i;
                fprintf(f, "hottest_function.name=%s\nhottest_function.count=%llu\n",
                        best == FUNC_KERNEL ? "[kernel]" : spegen_funcs[best].name,
                        (unsigned long long) o->func_records[best]);
                for (unsigned i = 0; i < _SPEGEN_FN_MAX; i++)
                        fprintf(f, "function_records.%s=%llu\n", spegen_funcs[i].name,
                                (unsigned long long) o->func_records[i]);
                fprintf(f, "function_records.[kernel]=%llu\n",
                        (unsigned long long) o->func_records[FUNC_KERNEL]);
        }
        fprintf(f, "false_sharing.line=0x%llx\n", (unsigned long long) SPEGEN_LINE_FALSE_SHARE);
        fprintf(f, "false_sharing.store_offsets=0x%x,0x%x\n", SPEGEN_FS_LOCK0, SPEGEN_FS_LOCK1);
        fprintf(f, "false_sharing.load_offsets=0x%x,0x%x,0x%x,0x%x\n", SPEGEN_FS_LOCK0, SPEGEN_FS_LOCK1,
                SPEGEN_FS_READER1, SPEGEN_FS_READER2);
        fprintf(f, "false_sharing.store_pcs=0x%llx,0x%llx\n",
                (unsigned long long) spegen_func_pc(SPEGEN_FN_WRITER, 0x10),
                (unsigned long long) spegen_func_pc(SPEGEN_FN_WRITER, 0x24));
        fprintf(f, "false_sharing.load_pcs=0x%llx,0x%llx,0x%llx,0x%llx\n",
                (unsigned long long) spegen_func_pc(SPEGEN_FN_WRITER, 0x0c),
                (unsigned long long) spegen_func_pc(SPEGEN_FN_WRITER, 0x20),
                (unsigned long long) spegen_func_pc(SPEGEN_FN_READER, 0x24),
                (unsigned long long) spegen_func_pc(SPEGEN_FN_READER, 0x34));
        fprintf(f, "false_sharing.symbols=%s,%s\n", spegen_funcs[SPEGEN_FN_WRITER].name,
                spegen_funcs[SPEGEN_FN_READER].name);
        fprintf(f, "false_sharing.writer_cpus=");
        print_cpus_of(f, threads, n, "fs_writer");
        fprintf(f, "false_sharing.reader_cpus=");
        print_cpus_of(f, threads, n, "fs_reader");
        fprintf(f, "true_sharing.line=0x%llx\ntrue_sharing.offset=0x%x\ntrue_sharing.symbol=%s\n",
                (unsigned long long) SPEGEN_LINE_TRUE_SHARE, SPEGEN_TS_COUNTER,
                spegen_funcs[SPEGEN_FN_TRUE_SHARE].name);
        fprintf(f, "true_sharing.cpus=");
        print_cpus_of(f, threads, n, "ts_worker");
        fprintf(f, "read_only.line=0x%llx\nread_only.symbol=%s\n",
                (unsigned long long) SPEGEN_LINE_READ_ONLY, spegen_funcs[SPEGEN_FN_RO_READER].name);
        fprintf(f, "padded.writer_line=0x%llx\npadded.reader_line=0x%llx\n",
                (unsigned long long) (SPEGEN_LINE_PADDED + SPEGEN_PAD_WRITER),
                (unsigned long long) (SPEGEN_LINE_PADDED + SPEGEN_PAD_READER));
        fprintf(f, "remote.line=0x%llx\nremote.offset=0x%x\nremote.symbol=%s\nremote.writer_cpus=",
                (unsigned long long) SPEGEN_LINE_REMOTE, SPEGEN_RM_FIELD,
                spegen_funcs[SPEGEN_FN_REMOTE_READER].name);
        print_cpus_of(f, threads, n, "rm_writer");
        fprintf(f, "remote.reader_cpus=");
        print_cpus_of(f, threads, n, "rm_reader");
        fprintf(f, "dram.area=0x%llx\ndram.len=0x%llx\ndram.symbol=%s\n",
                (unsigned long long) SPEGEN_DRAM_AREA, (unsigned long long) SPEGEN_DRAM_AREA_LEN,
                spegen_funcs[SPEGEN_FN_DRAM_WALK].name);
        fprintf(f, "kernel.text=0x%llx\nkernel.data=0x%llx\n",
                (unsigned long long) SPEGEN_KTEXT_BASE, (unsigned long long) SPEGEN_KDATA_BASE);
        fprintf(f, "elf.text_base=0x%llx\nelf.text_map_len=0x%llx\n", (unsigned long long) SPEGEN_TEXT_BASE,
                (unsigned long long) SPEGEN_TEXT_MAP_LEN);
        /* The data mapping (its MMAP2, PERF_RECORD_MISC_MMAP_DATA): where every user data address lies. */
        fprintf(f, "data.base=0x%llx\ndata.map_len=0x%llx\ndata.map_pgoff=0x0\ndata.map_name=//anon\n",
                (unsigned long long) SPEGEN_DATA_BASE, (unsigned long long) SPEGEN_DATA_LEN);
        fprintf(f, "elf.build_id=");
        for (unsigned i = 0; i < FAKE_ELF_BUILD_ID_SIZE; i++)
                fprintf(f, "%02x", o->build_id[i]);
        fputc('\n', f);
        for (unsigned i = 0; i < _SPEGEN_FN_MAX; i++)
                fprintf(f, "symbol.%s=0x%llx,0x%llx\n", spegen_funcs[i].name,
                        (unsigned long long) (SPEGEN_TEXT_BASE + spegen_funcs[i].offset),
                        (unsigned long long) spegen_funcs[i].size);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "thread.%u=%s,%u\n", threads[i].tid, threads[i].comm, threads[i].cpu);
        if (fclose(f) != 0)
                return -errno;
        return 0;
}

static void elf_syms(struct fake_elf_sym syms[_SPEGEN_FN_MAX]) {
        for (unsigned i = 0; i < _SPEGEN_FN_MAX; i++)
                syms[i] = (struct fake_elf_sym) {
                        spegen_funcs[i].name, spegen_funcs[i].offset, spegen_funcs[i].size,
                };
}

/* The fake ELF's build id (a SHA-1 of its bytes, fake-elf.h), also when
 * the ELF is not written. */
static int elf_build_id(uint8_t ret[FAKE_ELF_BUILD_ID_SIZE]) {
        struct fake_elf_sym syms[_SPEGEN_FN_MAX];

        elf_syms(syms);
        return fake_elf_build_id(SPEGEN_ELF_TEXT_OFF, SPEGEN_ELF_TEXT_SIZE, syms, _SPEGEN_FN_MAX, ret);
}

static int write_elf(const char *path) {
        struct fake_elf_sym syms[_SPEGEN_FN_MAX];
        _cleanup_close_ int fd = -1;

        elf_syms(syms);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        return fake_elf_write_build_id(fd, SPEGEN_ELF_TEXT_OFF, SPEGEN_ELF_TEXT_SIZE, syms, _SPEGEN_FN_MAX, NULL);
}

/* COMM/MMAP2/FORK as `perf record` synthesizes them for a running
 * process, then ITRACE_START per CPU (the order perf 6.1 needs to
 * decode SPE from a file it did not record itself). The ELF's build id goes into the build-id table (file mode) or,
 * in pipe mode, just before its MMAP2 as `perf inject --buildid-all`
 * writes it. */
static int write_sideband(struct pdw *w, const struct args *a, const char *elf_abs,
                          const uint8_t build_id[FAKE_ELF_BUILD_ID_SIZE]) {
        struct spegen_thread threads[SPEGEN_MAX_THREADS];
        size_t n = spegen_threads(a->gen.n_cpus, threads, ELEMENTSOF(threads));
        uint64_t t = a->gen.ts ? SIDEBAND_TIME_START : SIDEBAND_TIME_START_END;
        unsigned step = a->gen.ts ? 1 : 0;
        int r;

        r = pdw_comm(w, SPEGEN_PID, SPEGEN_PID, SPEGEN_PROC_COMM, t);
        t += step;
        if (r >= 0)
                r = pdw_build_id(w, elf_abs, build_id, FAKE_ELF_BUILD_ID_SIZE);
        if (r >= 0)
                r = pdw_mmap2(w, SPEGEN_PID, SPEGEN_PID, SPEGEN_TEXT_BASE, SPEGEN_TEXT_MAP_LEN, 0,
                              PROT_READ | PROT_EXEC, MAP_PRIVATE, elf_abs, t);
        t += step;
        if (r >= 0)
                r = pdw_mmap2(w, SPEGEN_PID, SPEGEN_PID, SPEGEN_DATA_BASE, SPEGEN_DATA_LEN, 0,
                              PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, "//anon", t);
        t += step;
        for (size_t i = 1; r >= 0 && i < n; i++) {
                r = pdw_fork(w, SPEGEN_PID, SPEGEN_PID, threads[i].tid, SPEGEN_PID, t);
                t += step;
                if (r >= 0)
                        r = pdw_comm(w, SPEGEN_PID, threads[i].tid, threads[i].comm, t);
                t += step;
        }
        for (unsigned cpu = 0; r >= 0 && cpu < a->gen.n_cpus; cpu++) {
                r = pdw_itrace_start(w, cpu, SPEGEN_PID, SPEGEN_PID, t);
                t += step;
        }
        return r;
}

static int run(const struct args *a) {
        struct out_ctx o = { .a = a };
        _cleanup_free_ char *truth = NULL, *summary = NULL, *data = NULL,
                            *elf = NULL, *elf_abs = NULL;
        _cleanup_close_ int data_fd = -1;
        struct spegen_stats st;
        struct spegen_sink sink = {
                .userdata = &o,
                .record = on_record,
                .garbage = on_garbage,
                .chunk = on_chunk,
        };
        bool data_stdout;
        int r;

        for (unsigned cpu = 0; cpu < SPEGEN_MAX_CPUS; cpu++)
                o.bin_fds[cpu] = -1;
        r = elf_build_id(o.build_id);
        if (r < 0)
                return r;

        if (mkdir(a->out_dir, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                fprintf(stderr, "armprofd-spegen: cannot create %s: %s\n", a->out_dir, strerror(-r));
                return r;
        }

        truth = a->truth_path ? xstrdup(a->truth_path) : path_join(a->out_dir, a->prefix, ".truth.csv");
        summary = path_join(a->out_dir, a->prefix, ".truth.txt");
        data = a->perf_data_path ? xstrdup(a->perf_data_path) : path_join(a->out_dir, a->prefix, ".data");
        elf = a->elf_path ? xstrdup(a->elf_path) : path_join(a->out_dir, a->prefix, ".elf");
        data_stdout = streq(data, "-");

        if (!a->no_perf_data) {
                struct pdw_config pc;

                r = write_elf(elf);
                if (r < 0) {
                        fprintf(stderr, "armprofd-spegen: cannot write %s: %s\n", elf, strerror(-r));
                        goto finish;
                }
                /* perf opens the MMAP2 file name as is: make it absolute. */
                elf_abs = realpath(elf, NULL);
                if (!elf_abs) {
                        r = -errno;
                        goto finish;
                }
                if (data_stdout) {
                        if (!a->pipe) {
                                fprintf(stderr, "armprofd-spegen: --perf-data - needs --pipe\n");
                                r = -EINVAL;
                                goto finish;
                        }
                        data_fd = dup(STDOUT_FILENO);
                } else
                        data_fd = open(data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (data_fd < 0) {
                        r = -errno;
                        fprintf(stderr, "armprofd-spegen: cannot open %s: %s\n", data, strerror(-r));
                        goto finish;
                }

                pdw_config_init(&pc);
                pc.pipe = a->pipe;
                pc.n_cpus = a->gen.n_cpus;
                pc.spe_pmu_type = a->pmu_type;
                /* ts_enable follows --ts; pa_enable: PA packets are written */
                pc.spe_config = (a->gen.ts ? 0x1 : 0) | 0x2;
                pc.midr = spegen_midr(a->midr);
                pc.n_nodes = spegen_n_nodes(a->gen.n_cpus);
                pc.mem_block = SPEGEN_MEM_BLOCK;
                pc.blocks_per_node = SPEGEN_MEM_BLOCKS_NODE;
                r = pdw_new(data_fd, &pc, &o.pdw);
                if (r >= 0)
                        r = write_sideband(o.pdw, a, elf_abs, o.build_id);
                if (r < 0) {
                        fprintf(stderr, "armprofd-spegen: cannot write %s: %s\n", data, strerror(-r));
                        goto finish;
                }
        }

        if (!a->no_bin)
                for (unsigned cpu = 0; cpu < a->gen.n_cpus; cpu++) {
                        char suffix[32];
                        _cleanup_free_ char *p = NULL;

                        snprintf(suffix, sizeof(suffix), ".cpu%u.bin", cpu);
                        p = path_join(a->out_dir, a->prefix, suffix);
                        o.bin_fds[cpu] = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                        if (o.bin_fds[cpu] < 0) {
                                r = -errno;
                                fprintf(stderr, "armprofd-spegen: cannot open %s: %s\n", p, strerror(-r));
                                goto finish;
                        }
                }

        if (!a->no_truth) {
                o.csv = fopen(truth, "we");
                if (!o.csv) {
                        r = -errno;
                        fprintf(stderr, "armprofd-spegen: cannot open %s: %s\n", truth, strerror(-r));
                        goto finish;
                }
                setvbuf(o.csv, NULL, _IOFBF, CSV_BUF_SIZE);
                fputs(csv_header, o.csv);
                o.line = xmalloc(1024);
        }

        r = spegen_run(&a->gen, &sink, &st);
        if (r < 0) {
                fprintf(stderr, "armprofd-spegen: generation failed: %s\n", strerror(-r));
                goto finish;
        }

        if (o.pdw) {
                pdw_set_sample_time(o.pdw, st.first_time, st.last_time);
                r = pdw_finish(o.pdw);
                if (r < 0) {
                        fprintf(stderr, "armprofd-spegen: cannot write %s: %s\n", data, strerror(-r));
                        goto finish;
                }
        }
        if (o.csv) {
                FILE *f = TAKE_PTR(o.csv);

                if (fclose(f) != 0) {
                        r = -errno;
                        fprintf(stderr, "armprofd-spegen: cannot write %s: %s\n", truth, strerror(-r));
                        goto finish;
                }
        }
        r = write_summary(a, &o, summary, &st);
        if (r < 0)
                fprintf(stderr, "armprofd-spegen: cannot write %s: %s\n", summary, strerror(-r));

finish:
        if (o.csv)
                fclose(o.csv);
        free(o.line);
        pdw_free(o.pdw);
        for (unsigned cpu = 0; cpu < SPEGEN_MAX_CPUS; cpu++)
                safe_close(o.bin_fds[cpu]);
        return r;
}

int main(int argc, char **argv) {
        struct args a = {};
        int r;

        r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        return run(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
