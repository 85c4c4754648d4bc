/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /debug/pprof/symbol's request (exporters/symbolz.c): any bytes as the
 * address list, answered by a symbolizer that names every address whose
 * low bit is set with bytes of the input itself (control bytes included).
 * The answer must be "num_symbols: 1" and then one "0x<hex> NAME" line per
 * parsed address so named, in request order, each address back as parsed,
 * no byte below 0x20 but the line ends: a name never makes a line of its
 * own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "symbolz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
        const uint8_t *data;
        size_t size;
};

static void names(void *userdata, const uint64_t *addrs, size_t n, symbolz_found_fn found, void *ctx) {
        const struct input *in = userdata;
        char name[64];

        for (size_t i = 0; i < n; i++) {
                size_t len = (size_t) (addrs[i] % sizeof(name));

                if (i > 0 && addrs[i] <= addrs[i - 1])
                        abort();
                if (!(addrs[i] & 1))
                        continue;
                len = len < in->size ? len : in->size;
                memcpy(name, in->data, len);
                name[len] = '\0';
                /* A name is a C string: up to its first NUL, at least one byte. */
                if (!name[0])
                        strcpy(name, "x");
                found(ctx, i, name);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct input in = { data, size };
        struct symbolz_query q;
        struct strbuf out = STRBUF_INIT;
        const char *p;

        if (symbolz_parse((const char *) data, size, &q) < 0) {
                if (size <= SYMBOLZ_BODY_MAX)
                        abort();
                return 0;
        }
        symbolz_answer(&q, names, &in, &out);
        if (strncmp(out.buf, "num_symbols: 1\n", 15) != 0)
                abort();
        p = out.buf + 15;
        for (size_t i = 0; i < q.n; i++) {
                uint64_t addr;
                int used = 0;

                if (q.addrs[i] == 0)
                        abort();
                if (!(q.addrs[i] & 1))
                        continue;
                if (sscanf(p, "0x%" SCNx64 " %n", &addr, &used) != 1 || used == 0 || addr != q.addrs[i])
                        abort();
                p = strchr(p, '\n');
                if (!p)
                        abort();
                p++;
        }
        if (*p)
                abort();
        for (size_t i = 0; i < out.len; i++)
                if (((uint8_t) out.buf[i] < 0x20 && out.buf[i] != '\n') || out.buf[i] == 0x7f)
                        abort();
        symbolz_query_done(&q);
        strbuf_done(&out);
        return 0;
}
