/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * armprofd-memgen: a synthetic x86 `perf c2c record` file (PEBS mem-loads
 * and mem-stores samples, perfdata-writer.h x86 mode) with a ground truth.
 *
 * The data_src of each sample is composed here from the uapi bit layout
 * (PERF_MEM_S() of include/uapi/linux/perf_event.h) with the values the
 * kernel writes for a Skylake-class PEBS record (arch/x86/events/intel/ds.c:
 * pebs_data_source[] and precise_store_data()), never from armprofd's
 * decoder. Scenario, 2 NUMA nodes, 4 CPUs (0-1 node 0, 2-3 node 1), one
 * process (pid 4000, comm "c2cbench") with one thread per CPU (tid 4000+cpu):
 *
 *   line data+0x1000  false sharing: CPU 0 stores at +0x00, CPUs 1 and 2
 *                     load +0x20 with HITM (local from CPU 1, remote from 2)
 *   line data+0x2000  true sharing: CPUs 0 and 1 store and load +0x08 (HITM, some locked)
 *   line data+0x3000  read only: L1 and LLC hits at +0x00 and +0x10
 *   line data+0x4000  local DRAM loads at +0x18
 *   line data+0x5000  remote DRAM loads at +0x28 (CPU 2, its memory on node 0)
 *
 * Samples are interleaved in time in a seeded order. Outputs: PREFIX.data
 * (perf.data, file mode) and PREFIX.truth.csv, one row per sample:
 * time,cpu,pid,tid,op,kind,line,offset,ip,addr,phys,data_src,weight,locked,scenario
 * (kind: l1hit llchit lcl_hitm rmt_hitm lcl_dram rmt_dram st_l1hit st_l1miss;
 * scenario: false_sharing true_sharing read_only dram).
 *
 * --pipe writes the pipe-mode layout (perf c2c record -o -) instead.
 *
 * usage: armprofd-memgen [--seed N] [--scale N] [--pipe] OUT_DIR PREFIX
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "macro.h"
#include "perfdata-writer.h"
#include "strbuf.h"

#define N_CPUS          4U
#define PID             4000U
#define TEXT_BASE       UINT64_C(0x401000)
#define TEXT_LEN        UINT64_C(0x10000)
#define DATA_BASE       UINT64_C(0x7f3a5c200000)
#define DATA_LEN        UINT64_C(0x100000)
/* Node 0's memory: blocks 0..31 of 1 GiB (pdw_config_init); the data pages sit at 2 GiB. */
#define PHYS_BASE       UINT64_C(0x80000000)
#define T0              UINT64_C(1000000000)

#define P(a, b) PERF_MEM_S(a, b)
#define OP_LH   (P(OP, LOAD) | P(LVL, HIT))
#define REM     P(REMOTE, REMOTE)
#define LEVEL(x) P(LVLNUM, x)
#define TLB_HIT (P(TLB, HIT) | P(TLB, L1) | P(TLB, L2))

/* ds.c pebs_data_source[] (Sandy Bridge and later) entries, plus load_latency_data()'s TLB bits. */
static const struct kind {
        const char *name;
        bool store;
        uint64_t data_src;
        unsigned lat_lo, lat_hi;        /* weight range (cycles) */
} KINDS[] = {
        { "l1hit",   false, OP_LH | P(LVL, L1) | LEVEL(L1) | P(SNOOP, NONE) | TLB_HIT, 30, 40 },        /* 0x01 */
        { "llchit",  false, OP_LH | P(LVL, L3) | LEVEL(L3) | P(SNOOP, NONE) | TLB_HIT, 40, 80 },        /* 0x04 */
        { "lcl_hitm", false, OP_LH | P(LVL, L3) | LEVEL(L3) | P(SNOOP, HITM) | TLB_HIT, 80, 200 },      /* 0x07 */
        { "rmt_hitm", false, OP_LH | P(LVL, REM_CCE1) | REM | LEVEL(L3) | P(SNOOP, HITM) | TLB_HIT, 250, 500 }, /* 0x09 */
        { "lcl_dram", false, OP_LH | P(LVL, LOC_RAM) | LEVEL(RAM) | P(SNOOP, NONE) | P(SNOOP, MISS) | TLB_HIT,
          150, 300 },                                                                                   /* 0x0c */
        { "rmt_dram", false, OP_LH | P(LVL, REM_RAM1) | LEVEL(RAM) | REM | P(SNOOP, NONE) | P(SNOOP, MISS) |
          TLB_HIT, 300, 600 },                                                                          /* 0x0d */
        /* precise_store_data(): STORE | SNOOP NA | LVL L1 | TLB L2, plus HIT/MISS. */
        { "st_l1hit", true, P(OP, STORE) | P(SNOOP, NA) | P(LVL, L1) | P(TLB, L2) | P(TLB, HIT) | P(LVL, HIT), 0, 0 },
        { "st_l1miss", true, P(OP, STORE) | P(SNOOP, NA) | P(LVL, L1) | P(TLB, L2) | P(TLB, HIT) | P(LVL, MISS),
          0, 0 },
};

enum { K_L1HIT, K_LLCHIT, K_LCL_HITM, K_RMT_HITM, K_LCL_DRAM, K_RMT_DRAM, K_ST_L1HIT, K_ST_L1MISS };

/* How many samples of each (cpu, kind, line, offset, ip), times --scale. */
static const struct plan {
        unsigned cpu, kind;
        uint64_t line, offset, ip;
        unsigned count;
        bool locked;
        const char *scenario;
} PLAN[] = {
        /* false sharing */
        { 0, K_ST_L1HIT,  0x1000, 0x00, TEXT_BASE + 0x120, 40, false, "false_sharing" },
        { 0, K_ST_L1MISS, 0x1000, 0x00, TEXT_BASE + 0x120, 20, false, "false_sharing" },
        { 1, K_LCL_HITM,  0x1000, 0x20, TEXT_BASE + 0x240, 30, false, "false_sharing" },
        { 1, K_L1HIT,     0x1000, 0x20, TEXT_BASE + 0x240, 25, false, "false_sharing" },
        { 2, K_RMT_HITM,  0x1000, 0x20, TEXT_BASE + 0x240, 12, false, "false_sharing" },
        /* true sharing */
        { 0, K_ST_L1MISS, 0x2000, 0x08, TEXT_BASE + 0x360, 15, true, "true_sharing" },
        { 1, K_ST_L1MISS, 0x2000, 0x08, TEXT_BASE + 0x360, 15, true, "true_sharing" },
        { 0, K_LCL_HITM,  0x2000, 0x08, TEXT_BASE + 0x358, 10, true, "true_sharing" },
        { 1, K_LCL_HITM,  0x2000, 0x08, TEXT_BASE + 0x358, 8, false, "true_sharing" },
        /* read only */
        { 0, K_L1HIT,     0x3000, 0x00, TEXT_BASE + 0x480, 50, false, "read_only" },
        { 3, K_LLCHIT,    0x3000, 0x10, TEXT_BASE + 0x488, 20, false, "read_only" },
        /* DRAM */
        { 1, K_LCL_DRAM,  0x4000, 0x18, TEXT_BASE + 0x5a0, 18, false, "dram" },
        { 2, K_RMT_DRAM,  0x5000, 0x28, TEXT_BASE + 0x6c0, 14, false, "dram" },
};

struct sample {
        uint64_t key;
        unsigned plan;
};

static uint64_t rng_state;

static uint64_t rng(void) {
        /* splitmix64 */
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static int sample_cmp(const void *a, const void *b) {
        const struct sample *x = a, *y = b;

        return x->key < y->key ? -1 : x->key > y->key;
}

static int usage(void) {
        fprintf(stderr, "usage: armprofd-memgen [--seed N] [--scale N] [--pipe] OUT_DIR PREFIX\n");
        return 2;
}

int main(int argc, char **argv) {
        unsigned long long seed = 1, scale = 1;
        const char *dir, *prefix;
        char path[4096], tpath[4096];
        struct pdw_config c;
        struct pdw *w = NULL;
        struct sample *order;
        size_t n = 0, k = 0;
        FILE *truth;
        int fd, r = 0, argi = 1;
        bool pipe_mode = false;

        while (argi < argc && strncmp(argv[argi], "--", 2) == 0) {
                char *end;

                if (strcmp(argv[argi], "--pipe") == 0) {
                        pipe_mode = true;
                        argi++;
                        continue;
                }
                if (argi + 1 >= argc)
                        return usage();
                errno = 0;
                if (strcmp(argv[argi], "--seed") == 0)
                        seed = strtoull(argv[argi + 1], &end, 10);
                else if (strcmp(argv[argi], "--scale") == 0)
                        scale = strtoull(argv[argi + 1], &end, 10);
                else
                        return usage();
                if (errno || *end || end == argv[argi + 1] || scale == 0 || scale > 100000)
                        return usage();
                argi += 2;
        }
        if (argc - argi != 2)
                return usage();
        dir = argv[argi];
        prefix = argv[argi + 1];
        rng_state = seed;

        for (size_t i = 0; i < ELEMENTSOF(PLAN); i++)
                n += PLAN[i].count * scale;
        order = xcalloc(n, sizeof(*order));
        for (size_t i = 0; i < ELEMENTSOF(PLAN); i++)
                for (unsigned j = 0; j < PLAN[i].count * scale; j++)
                        order[k++] = (struct sample) { .key = rng(), .plan = (unsigned) i };
        qsort(order, n, sizeof(*order), sample_cmp);

        snprintf(path, sizeof(path), "%s/%s.data", dir, prefix);
        snprintf(tpath, sizeof(tpath), "%s/%s.truth.csv", dir, prefix);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        truth = fopen(tpath, "we");
        if (fd < 0 || !truth) {
                fprintf(stderr, "armprofd-memgen: %s: %m\n", fd < 0 ? path : tpath);
                return 1;
        }

        pdw_config_init(&c);
        c.x86_mem = true;
        c.pipe = pipe_mode;
        c.mem_ldlat = 30;
        c.mem_period = 4000;
        c.n_cpus = N_CPUS;
        c.n_nodes = 2;
        c.arch = "x86_64";
        c.osrelease = "6.1.0-synthetic-amd64";
        c.cpudesc = "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz (synthetic)";
        c.hostname = "memgen";
        c.cmdline = "perf c2c record -a";
        r = pdw_new(fd, &c, &w);
        if (r >= 0)
                r = pdw_comm(w, PID, PID, "c2cbench", T0 - 1000);
        for (unsigned cpu = 1; r >= 0 && cpu < N_CPUS; cpu++)
                r = pdw_fork(w, PID, PID, PID + cpu, PID, T0 - 900 + cpu);
        if (r >= 0)
                r = pdw_mmap2(w, PID, PID, TEXT_BASE, TEXT_LEN, 0x1000, PROT_READ | PROT_EXEC, MAP_PRIVATE,
                              "/usr/bin/c2cbench", T0 - 800);
        if (r >= 0)
                r = pdw_mmap2(w, PID, PID, DATA_BASE, DATA_LEN, 0, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, "//anon", T0 - 700);

        fprintf(truth, "time,cpu,pid,tid,op,kind,line,offset,ip,addr,phys,data_src,weight,locked,scenario\n");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const struct plan *p = &PLAN[order[i].plan];
                const struct kind *kd = &KINDS[p->kind];
                uint64_t t = T0 + i * 1000;
                uint64_t addr = DATA_BASE + p->line + p->offset;
                uint64_t phys = PHYS_BASE + p->line + p->offset;
                uint64_t ds = kd->data_src | (p->locked ? P(LOCK, LOCKED) : 0);
                uint64_t weight = kd->lat_hi > kd->lat_lo ? kd->lat_lo + rng() % (kd->lat_hi - kd->lat_lo) : 0;

                r = pdw_mem_sample(w, kd->store, p->cpu, PID, PID + p->cpu, t, p->ip, addr, ds, weight, phys,
                                   PERF_RECORD_MISC_USER | PERF_RECORD_MISC_EXACT_IP);
                fprintf(truth, "%" PRIu64 ",%u,%u,%u,%s,%s,0x%" PRIx64 ",0x%" PRIx64 ",0x%" PRIx64 ",0x%" PRIx64
                               ",0x%" PRIx64 ",0x%" PRIx64 ",%" PRIu64 ",%d,%s\n",
                        t, p->cpu, PID, PID + p->cpu, kd->store ? "store" : "load", kd->name, DATA_BASE + p->line,
                        p->offset, p->ip, addr, phys, ds, weight, p->locked, p->scenario);
        }
        if (r >= 0) {
                pdw_set_sample_time(w, T0, T0 + (n - 1) * 1000);
                r = pdw_finish(w);
        }
        pdw_free(w);
        free(order);
        if (fclose(truth) != 0 && r >= 0)
                r = -errno;
        if (close(fd) < 0 && r >= 0)
                r = -errno;
        if (r < 0) {
                fprintf(stderr, "armprofd-memgen: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
