/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "process-metrics.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "prom.h"

/*
 * proc(5): /proc/[pid]/stat fields after the ")" that ends comm: field 3 is
 * state; utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
 */
#define STAT_FIELD_UTIME 14
#define STAT_FIELD_STIME 15
#define STAT_FIELD_STARTTIME 22
#define STAT_FIELD_VSIZE 23
#define STAT_FIELD_RSS 24
/*
 * /proc/[pid]/stat is one line of 52 fields: comm (at most 16 bytes,
 * TASK_COMM_LEN) and numbers of at most 20 digits, about 1.1 KiB at most.
 */
#define PID_STAT_MAX 4096

static int read_file(const char *path, char *buf, size_t len) {
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return -errno;
        n = fread(buf, 1, len - 1, f);
        fclose(f);
        buf[n] = '\0';
        return 0;
}

/*
 * The "btime" line of /proc/stat (proc(5)). Read line by line: the lines
 * before it (one per CPU, "intr" with a count per interrupt) make the file
 * tens of kilobytes on a large machine.
 */
static int boot_time(const char *procfs, uint64_t *ret) {
        _cleanup_free_ char *line = NULL;
        char path[PATH_MAX];
        size_t size = 0;
        uint64_t v;
        FILE *f;
        int r = -EBADMSG;

        snprintf(path, sizeof(path), "%s/stat", procfs);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (getline(&line, &size, f) >= 0)
                if (strncmp(line, "btime ", 6) == 0) {
                        if (sscanf(line + 6, "%" SCNu64, &v) == 1) {
                                *ret = v;
                                r = 0;
                        }
                        break;
                }
        fclose(f);
        return r;
}

static uint64_t count_fds(const char *procfs) {
        char path[PATH_MAX];
        struct dirent *de;
        uint64_t n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "%s/self/fd", procfs);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        /* Do not count the descriptor opendir() itself holds. */
        return n > 0 ? n - 1 : 0;
}

int process_stats_read(const char *procfs, struct process_stats *ret) {
        struct process_stats st = {};
        uint64_t f[STAT_FIELD_RSS + 1] = {}, btime = 0;
        char path[PATH_MAX], buf[PID_STAT_MAX], *p, *save = NULL;
        long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        struct rlimit rl;
        int r;

        snprintf(path, sizeof(path), "%s/self/stat", procfs);
        r = read_file(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        /* comm may contain spaces and parentheses: parse after the last ')'. */
        p = strrchr(buf, ')');
        if (!p || ticks <= 0 || page <= 0)
                return -EBADMSG;
        p++;
        for (int field = 3; field <= STAT_FIELD_RSS; field++) {
                char *tok = strtok_r(field == 3 ? p : NULL, " ", &save);

                if (!tok)
                        return -EBADMSG;
                if (field >= STAT_FIELD_UTIME && safe_atou64(tok, &f[field]) < 0)
                        f[field] = 0; /* fields between we do not use can be negative */
        }

        st.cpu_seconds = (double) (f[STAT_FIELD_UTIME] + f[STAT_FIELD_STIME]) / (double) ticks;
        st.virtual_bytes = f[STAT_FIELD_VSIZE];
        st.resident_bytes = f[STAT_FIELD_RSS] * (uint64_t) page;
        st.open_fds = count_fds(procfs);
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                st.max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
        if (boot_time(procfs, &btime) == 0)
                st.start_time_seconds = (double) btime + (double) f[STAT_FIELD_STARTTIME] / (double) ticks;

        *ret = st;
        return 0;
}

void process_stats_write(const struct process_stats *st, struct prom_writer *w) {
        prom_family_unit(w, "process_cpu_seconds_total", PROM_COUNTER, "seconds",
                         "Total user and system CPU time spent in seconds.");
        prom_sample_double(w, NULL, st->cpu_seconds);
        prom_family_unit(w, "process_resident_memory_bytes", PROM_GAUGE, "bytes", "Resident memory size in bytes.");
        prom_sample_u64(w, NULL, st->resident_bytes);
        prom_family_unit(w, "process_virtual_memory_bytes", PROM_GAUGE, "bytes", "Virtual memory size in bytes.");
        prom_sample_u64(w, NULL, st->virtual_bytes);
        prom_family(w, "process_open_fds", PROM_GAUGE, "Number of open file descriptors.");
        prom_sample_u64(w, NULL, st->open_fds);
        prom_family(w, "process_max_fds", PROM_GAUGE, "Maximum number of open file descriptors.");
        prom_sample_u64(w, NULL, st->max_fds);
        prom_family_unit(w, "process_start_time_seconds", PROM_GAUGE, "seconds",
                         "Start time of the process since unix epoch in seconds.");
        prom_sample_double(w, NULL, st->start_time_seconds);
}
