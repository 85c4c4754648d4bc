/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the packet decoder over arbitrary bytes. Walks the whole
 * input as the dump does (skip one byte on error) and checks the contract:
 * success consumes 1..min(len, SPE_PKT_MAX_LEN) bytes and describes a
 * self-consistent packet; errors are one of the named codes.
 */
#include <stdint.h>
#include <stdlib.h>

#include "spe-dump.h"
#include "spe-pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t pos = 0;

        while (pos < size) {
                struct spe_pkt p;
                char desc[SPE_PKT_DESC_MAX];
                int r = spe_pkt_decode(data + pos, size - pos, &p);

                if (r > 0) {
                        if ((size_t) r > size - pos || r > SPE_PKT_MAX_LEN)
                                abort();
                        if (p.len != r || p.hdr_len + p.payload_len != p.len)
                                abort();
                        if (spe_pkt_desc(&p, 0, 0, desc, sizeof(desc)) < 0 ||
                            spe_pkt_desc(&p, 0, SPE_DUMP_F_PERF61, desc, sizeof(desc)) < 0)
                                abort();
                        pos += (size_t) r;
                } else if (r == SPE_PKT_ERR_BAD || r == SPE_PKT_ERR_BAD_EXT ||
                           r == SPE_PKT_ERR_NEED_MORE) {
                        pos++;
                } else
                        abort();
        }
        return 0;
}
