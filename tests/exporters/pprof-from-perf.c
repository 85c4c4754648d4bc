/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test tool: perf.data (SPE) -> symbols -> pprof. Writes the gzipped
 * profile to OUT and prints key=value facts for the test to compare with
 * what `go tool pprof` and `protoc --decode` show:
 *   records=, records_with_pc=, samples= (after merging), function.NAME=
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "pprof.h"
#include "replay-sym.h"
#include "strbuf.h"
#include "symbols.h"

/* SPE samples one operation per interval; the profile counts samples. */
static const struct pprof_value_type sample_type = { "samples", "count" };

static int write_all(const char *path, const struct strbuf *sb) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        size_t off = 0;

        if (fd < 0)
                return -errno;
        while (off < sb->len) {
                ssize_t n = write(fd, sb->buf + off, sb->len - off);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                off += (size_t) n;
        }
        return 0;
}

int main(int argc, char **argv) {
        struct symbols *s;
        struct pprof_builder *b;
        struct replay_sym_stats st;
        struct strbuf gz = STRBUF_INIT;
        int r;

        if (argc != 3) {
                fprintf(stderr, "usage: %s PERF.DATA OUT.pb.gz\n", argv[0]);
                return 2;
        }
        s = symbols_new(NULL);
        b = pprof_builder_new(&sample_type, 1, &sample_type, 1, 0, 0);
        r = replay_sym_run(argv[1], s, b, &st);
        if (r < 0) {
                fprintf(stderr, "replay of %s failed: %s\n", argv[1], strerror(-r));
                goto out;
        }
        r = pprof_finish(b, &gz);
        if (r >= 0)
                r = write_all(argv[2], &gz);
        if (r < 0) {
                fprintf(stderr, "cannot write %s: %s\n", argv[2], strerror(-r));
                goto out;
        }
        printf("records=%" PRIu64 "\nrecords_with_pc=%" PRIu64 "\nsamples=%zu\n", st.records, st.with_pc,
               pprof_n_samples(b));
        for (size_t i = 0; i < st.n_funcs; i++)
                printf("function.%s=%" PRIu64 "\n", st.funcs[i].name, st.funcs[i].count);
out:
        replay_sym_done(&st);
        strbuf_done(&gz);
        pprof_builder_free(b);
        symbols_free(s);
        return r < 0 ? 1 : 0;
}
