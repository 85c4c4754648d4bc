/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The exporters' tests read back the gzip (RFC 1952) profiles the pprof
 * builder writes with zlib itself, not with the code under test, and
 * unpack them with protobuf-c. After <cmocka.h>: failures are its
 * assertions.
 */

#include <zlib.h>

#include "profile.pb-c.h"
#include "strbuf.h"

/* zlib's inflateInit2(): 15-bit window, +16 for a gzip header and trailer. */
#define GUNZIP_WINDOW_BITS (15 + 16)

/* The bytes of in after its first `skip` inflated onto out: one whole gzip member, nothing after it. */
static inline void test_gunzip(const struct strbuf *in, size_t skip, struct strbuf *out) {
        z_stream z = {};
        int r;

        assert_int_equal(inflateInit2(&z, GUNZIP_WINDOW_BITS), Z_OK);
        z.next_in = (Bytef *) in->buf + skip;
        z.avail_in = (uInt) (in->len - skip);
        do {
                strbuf_reserve(out, 4096);
                z.next_out = (Bytef *) out->buf + out->len;
                z.avail_out = (uInt) (out->cap - out->len - 1);
                r = inflate(&z, Z_NO_FLUSH);
                assert_true(r == Z_OK || r == Z_STREAM_END);
                out->len = out->cap - 1 - z.avail_out;
        } while (r != Z_STREAM_END);
        assert_int_equal(z.avail_in, 0);
        inflateEnd(&z);
}

/* The pprof profile gzipped in gz after its first `skip` bytes; raw's length in ret_len if asked. */
static inline Perftools__Profiles__Profile *test_unpack_profile(const struct strbuf *gz, size_t skip,
                                                                size_t *ret_len) {
        struct strbuf raw = STRBUF_INIT;
        Perftools__Profiles__Profile *p;

        test_gunzip(gz, skip, &raw);
        p = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *) raw.buf);
        assert_non_null(p);
        if (ret_len)
                *ret_len = raw.len;
        strbuf_done(&raw);
        return p;
}
