/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/perf/aux-ring.c against a kernel played on ordinary memory
 * (ring-kernel.h: the producer side of struct perf_event_mmap_page's
 * protocol as the kernel and the SPE driver follow it).
 *
 * Checked: the bytes the reader gets are exactly the bytes written, across
 * every wrap of both rings, in chunks and pieces of every size; flags,
 * losses, gaps and garbage are counted; a producer thread racing the reader
 * loses nothing; and SPE records decoded through the ring equal, field by
 * field, what the generator (tests/spegen) says it encoded.
 *
 * cmocka's asserts longjmp to the test's frame, so they are called on the
 * main thread only: the producer thread reports what went wrong, and the
 * main thread asserts on it after pthread_join().
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aux-ring.h"
#include "macro.h"
#include "ring-kernel.h"
#include "spe-enc.h"
#include "spe-rec.h"
#include "spe-record-fields.h"
#include "spegen-expect.h"
#include "spegen-gen.h"
#include "strbuf.h"

/* ---- the kernel's side: ring-kernel.h ---- */

static void kernel_done(struct kernel *k) {
        assert_null(k->bug);
        kernel_free(k);
}

/* ---- the reader's side ---- */

struct got {
        struct strbuf aux;              /* every AUX byte, in order */
        struct strbuf recs;             /* the other records, concatenated */
        uint64_t chunks, pieces, gaps, fills, truncated, partial, empty;
        bool in_chunk;
};

static int on_aux(void *u, const struct aux_ring_chunk *c, const uint8_t *data, size_t len, bool last) {
        struct got *g = u;

        if (!g->in_chunk) {
                g->chunks++;
                g->gaps += c->gap;
                g->fills += c->fill;
                g->truncated += !!(c->flags & AUX_RING_FLAG_TRUNCATED);
                g->partial += !!(c->flags & AUX_RING_FLAG_PARTIAL);
                g->empty += len == 0 && last;
        }
        g->in_chunk = !last;
        g->pieces++;
        strbuf_append(&g->aux, data, len);
        return 0;
}

static int on_record(void *u, const uint8_t *rec, size_t len) {
        struct got *g = u;

        strbuf_append(&g->recs, rec, len);
        return 0;
}

static const struct aux_ring_ops got_ops = { .aux = on_aux, .record = on_record };

static uint64_t rng = UINT64_C(0x2545f4914f6cdd1d);

static uint64_t rnd(void) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}

static void setup_ring(struct aux_ring *r, struct kernel *k) {
        assert_int_equal(aux_ring_init(r, &k->page, k->data, k->data_size, k->aux, k->aux_size), 0);
}

/*
 * Every PERF_RECORD_AUX lost (a data ring full of other records) and the
 * area full: the stopped event writes nothing more, not even the
 * PERF_RECORD_LOST. The drain reads up to aux_head and releases it, or the
 * area would stay full for good; the record that comes late for those
 * bytes gives its flags and no byte twice.
 */
static void test_unannounced(void **state) {
        struct got g = { STRBUF_INIT, STRBUF_INIT };
        uint8_t buf[4096];
        struct kernel k;
        struct aux_ring r;
        bool truncated;
        struct {
                uint64_t aux_offset, aux_size, flags;
        } body = { 0, 1000, PERF_AUX_FLAG_TRUNCATED };

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t) (i * 7 + 1);
        kernel_init(&k, 256, 4096);
        setup_ring(&r, &k);

        /* Half the area, nothing announced: not stuck, nothing read. */
        ring_put(k.aux, k.aux_size, 0, buf, 2048);
        k.aux_head = 2048;
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 0);
        assert_int_equal(g.aux.len, 0);
        assert_int_equal(k.page.aux_tail, 0);

        /* Full: not at the first look (its record may be on its way), read whole and released at
         * the next that finds aux_head where it was. */
        ring_put(k.aux, k.aux_size, 2048, buf + 2048, 2047);
        k.aux_head = 4095;
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 0);
        assert_int_equal(g.aux.len, 0);
        assert_int_equal(r.stats.aux_unannounced, 0);
        assert_int_equal(k.page.aux_tail, 0);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 0);
        assert_false(truncated);
        assert_int_equal(g.aux.len, 4095);
        assert_memory_equal(g.aux.buf, buf, 4095);
        assert_int_equal(g.fills, 1);
        assert_int_equal(r.stats.aux_unannounced, 1);
        assert_int_equal(r.stats.aux_unannounced_bytes, 4095);
        assert_int_equal(k.page.aux_tail, 4095);

        /* A record for bytes already read: its flags, no bytes. */
        assert_true(kernel_record(&k, PERF_RECORD_AUX, &body, sizeof(body)));
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 1);
        assert_true(truncated);
        assert_int_equal(g.aux.len, 4095);
        assert_int_equal(g.truncated, 1);
        assert_int_equal(g.empty, 1);

        /* After a PERF_RECORD_LOST, whatever is unannounced is read at once. */
        ring_put(k.aux, k.aux_size, 4095, buf, 100);
        k.aux_head = 4195;
        k.pending_lost = 3;
        body = (typeof(body)) { 5000, 0, 0 };
        assert_true(kernel_record(&k, PERF_RECORD_SWITCH, &body, 0)); /* carries the LOST before it */
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 2);
        assert_int_equal(r.stats.lost, 3);
        assert_int_equal(g.aux.len, 4195);
        assert_memory_equal(g.aux.buf + 4095, buf, 100);
        assert_int_equal(k.page.aux_tail, 4195);

        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&g.aux);
        strbuf_done(&g.recs);
}

/*
 * perf_aux_output_end() while the reader drains: the chunk's PERF_RECORD_AUX
 * (PARTIAL: its last record is cut) and aux_head are published after the
 * drain read data_head, before it looks at aux_head. The area is then
 * nearly full of bytes nothing announced yet; read as a stopped kernel's,
 * they would reach the decoder without the flag that drops the cut record.
 */
struct commit_during_drain {
        struct got g;
        struct kernel *k;
        const uint8_t *bytes;
        size_t len;
        bool done;
};

static int commit_on_record(void *u, const uint8_t *rec, size_t len) {
        struct commit_during_drain *c = u;
        struct {
                uint64_t aux_offset, aux_size, flags;
        } body = { c->k->aux_head, c->len, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL };

        if (!c->done) {
                c->done = true;
                ring_put(c->k->aux, c->k->aux_size, c->k->aux_head, c->bytes, c->len);
                c->k->aux_head += c->len;
                if (!kernel_record(c->k, PERF_RECORD_AUX, &body, sizeof(body)))
                        c->k->bug = "no room for the PERF_RECORD_AUX";
                /* The kernel's order: the record (data_head), then aux_head. */
                __atomic_store_n(&c->k->page.data_head, c->k->data_head, __ATOMIC_RELEASE);
                __atomic_store_n(&c->k->page.aux_head, c->k->aux_head, __ATOMIC_RELEASE);
        }
        return on_record(&c->g, rec, len);
}

static int commit_on_aux(void *u, const struct aux_ring_chunk *ch, const uint8_t *data, size_t len, bool last) {
        return on_aux(&((struct commit_during_drain *) u)->g, ch, data, len, last);
}

static void test_commit_during_drain(void **state) {
        static const struct aux_ring_ops ops = { .aux = commit_on_aux, .record = commit_on_record };
        uint8_t buf[4000];
        struct kernel k;
        struct aux_ring r;
        struct commit_during_drain c = { .g = { STRBUF_INIT, STRBUF_INIT }, .k = &k, .bytes = buf,
                                         .len = sizeof(buf) };
        bool truncated;

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t) (i * 13 + 5);
        kernel_init(&k, 256, 4096);
        setup_ring(&r, &k);
        assert_true(kernel_record(&k, PERF_RECORD_SWITCH, buf, 0));
        kernel_publish(&k);

        /* The switch only: the chunk committed meanwhile is not read as unannounced. */
        assert_int_equal(aux_ring_drain(&r, &ops, &c, &truncated), 1);
        assert_true(c.done);
        assert_false(truncated);
        assert_int_equal(c.g.aux.len, 0);
        assert_int_equal(r.stats.aux_unannounced, 0);
        assert_int_equal(k.page.aux_tail, 0);

        /* The next drain: the chunk through its record, with its flags. */
        assert_int_equal(aux_ring_drain(&r, &ops, &c, &truncated), 1);
        assert_true(truncated);
        assert_int_equal(c.g.chunks, 1);
        assert_int_equal(c.g.partial, 1);
        assert_int_equal(c.g.fills, 0);
        assert_int_equal(c.g.aux.len, sizeof(buf));
        assert_memory_equal(c.g.aux.buf, buf, sizeof(buf));
        assert_int_equal(r.stats.aux_unannounced, 0);
        assert_int_equal(k.page.aux_tail, sizeof(buf));

        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&c.g.aux);
        strbuf_done(&c.g.recs);
}

/*
 * A busy CPU after a loss: the bytes up to aux_head wait one drain for the
 * records published since (deliver_unannounced()), but every drain sees
 * data_head move again (switches keep coming while it reads). The bytes the
 * first drain left are read by the second, up to the aux_head the first saw,
 * whatever data_head did meanwhile; waiting for a quiet data ring would never
 * read them on a CPU that never goes quiet.
 */
struct busy {
        struct got g;
        struct kernel *k;
        unsigned adds;                  /* switches to publish during this drain */
};

static int busy_on_record(void *u, const uint8_t *rec, size_t len) {
        struct busy *b = u;
        uint32_t body[2] = { 6000, 6000 };

        if (b->adds > 0) {
                b->adds--;
                if (!kernel_record(b->k, PERF_RECORD_SWITCH, body, 0))
                        b->k->bug = "no room for the switch";
                __atomic_store_n(&b->k->page.data_head, b->k->data_head, __ATOMIC_RELEASE);
        }
        return on_record(&b->g, rec, len);
}

static int busy_on_aux(void *u, const struct aux_ring_chunk *ch, const uint8_t *data, size_t len, bool last) {
        return on_aux(&((struct busy *) u)->g, ch, data, len, last);
}

static void test_lost_busy(void **state) {
        static const struct aux_ring_ops ops = { .aux = busy_on_aux, .record = busy_on_record };
        uint8_t buf[300];
        struct kernel k;
        struct aux_ring r;
        struct busy b = { .g = { STRBUF_INIT, STRBUF_INIT }, .k = &k };
        bool truncated;
        uint32_t body[2] = { 5000, 5000 };

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t) (i * 11 + 3);
        kernel_init(&k, 1024, 4096);
        setup_ring(&r, &k);

        /* 200 bytes whose PERF_RECORD_AUX was lost, the LOST before the next switch. */
        ring_put(k.aux, k.aux_size, 0, buf, 200);
        k.aux_head = 200;
        k.pending_lost = 1;
        assert_true(kernel_record(&k, PERF_RECORD_SWITCH, body, 0));
        kernel_publish(&k);

        /* A switch comes while the drain reads: the bytes wait for it. */
        b.adds = 1;
        assert_int_equal(aux_ring_drain(&r, &ops, &b, &truncated), 2);
        assert_null(k.bug);
        assert_int_equal(r.stats.lost, 1);
        assert_int_equal(b.g.aux.len, 0);

        /* 100 more bytes, and another switch while this drain reads: the first 200 are read,
         * the rest are a chunk's whose record is still to come. */
        ring_put(k.aux, k.aux_size, 200, buf + 200, 100);
        k.aux_head = 300;
        __atomic_store_n(&k.page.aux_head, k.aux_head, __ATOMIC_RELEASE);
        b.adds = 1;
        assert_int_equal(aux_ring_drain(&r, &ops, &b, &truncated), 1);
        assert_null(k.bug);
        assert_int_equal(b.g.fills, 1);
        assert_int_equal(b.g.aux.len, 200);
        assert_memory_equal(b.g.aux.buf, buf, 200);
        assert_int_equal(r.stats.aux_unannounced, 1);
        assert_int_equal(k.page.aux_tail, 200);

        /* Nothing lost since: the 100 bytes wait for their PERF_RECORD_AUX. */
        b.adds = 0;
        assert_int_equal(aux_ring_drain(&r, &ops, &b, &truncated), 1);
        assert_int_equal(b.g.aux.len, 200);
        assert_int_equal(k.page.aux_tail, 200);

        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&b.g.aux);
        strbuf_done(&b.g.recs);
}

/*
 * A CPU gone quiet after a burst whose last PERF_RECORD_AUX was lost: the
 * PERF_RECORD_LOST waits for a record that fits, and a quiet event writes
 * none. Drains read nothing (the bytes are not nearly the whole area, and no
 * loss is known); once the event is stopped (the flush's DISABLE) nothing can
 * announce them any more and aux_ring_drain_stopped() reads them. The
 * driver's padding (zeros) is left for the next chunk's gap.
 */
static void test_stopped(void **state) {
        struct got g = { STRBUF_INIT, STRBUF_INIT };
        uint8_t buf[600], zeros[200] = { 0 };
        struct kernel k;
        struct aux_ring r;
        bool truncated;

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t) (i * 5 + 1);
        kernel_init(&k, 256, 4096);
        setup_ring(&r, &k);

        /* Padding alone, then stopped: nothing is read. */
        ring_put(k.aux, k.aux_size, 0, zeros, sizeof(zeros));
        k.aux_head = sizeof(zeros);
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain_stopped(&r, &got_ops, &g, &truncated), 0);
        assert_int_equal(g.aux.len, 0);
        assert_int_equal(r.stats.aux_unannounced, 0);

        /* Records after it whose PERF_RECORD_AUX was lost (k.pending_lost: the LOST not written). */
        ring_put(k.aux, k.aux_size, sizeof(zeros), buf, sizeof(buf));
        k.aux_head = sizeof(zeros) + sizeof(buf);
        k.pending_lost = 1;
        kernel_publish(&k);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 0);
                assert_int_equal(g.aux.len, 0);
        }
        assert_int_equal(aux_ring_drain_stopped(&r, &got_ops, &g, &truncated), 0);
        assert_int_equal(g.fills, 1);
        assert_int_equal(g.aux.len, sizeof(zeros) + sizeof(buf));
        assert_memory_equal(g.aux.buf + sizeof(zeros), buf, sizeof(buf));
        assert_int_equal(r.stats.aux_unannounced, 1);
        assert_int_equal(k.page.aux_tail, sizeof(zeros) + sizeof(buf));

        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&g.aux);
        strbuf_done(&g.recs);
}

/* Thousands of chunks of 1..1500 bytes through a 4 KiB AUX ring and a 1 KiB data ring,
 * with odd-sized records between them so that records wrap too. */
static void test_wraps(void **state) {
        struct strbuf sent = STRBUF_INIT, sent_recs = STRBUF_INIT;
        struct got g = { STRBUF_INIT, STRBUF_INIT };
        struct kernel k;
        struct aux_ring r;
        uint64_t chunks = 0;
        uint8_t buf[1500];

        kernel_init(&k, 1024, 4096);
        setup_ring(&r, &k);
        for (int i = 0; i < 20000; i++) {
                size_t len = 1 + rnd() % sizeof(buf);
                uint64_t tail = __atomic_load_n(&k.page.aux_tail, __ATOMIC_ACQUIRE);

                /* Drain when the next chunk or record would not fit, as a reader keeping up does. */
                if (k.aux_size - (k.aux_head - tail) < len || k.data_size - (k.data_head - k.page.data_tail) < 200) {
                        kernel_publish(&k);
                        assert_true(aux_ring_drain(&r, &got_ops, &g, NULL) > 0);
                }
                for (size_t j = 0; j < len; j++)
                        buf[j] = (uint8_t) rnd();
                assert_int_equal(kernel_aux(&k, buf, len, 0, NULL), len);
                strbuf_append(&sent, buf, len);
                chunks++;
                if (rnd() % 3 == 0) {
                        /* An ITRACE_START-sized or odd-sized record: 8 + 8 + 8n bytes. */
                        uint8_t body[8 * 9];
                        size_t blen = 8 * (1 + rnd() % 8);
                        struct perf_event_header h = { PERF_RECORD_ITRACE_START, 0, (uint16_t) (sizeof(h) + blen) };

                        for (size_t j = 0; j < blen; j++)
                                body[j] = (uint8_t) rnd();
                        assert_true(kernel_record(&k, PERF_RECORD_ITRACE_START, body, blen));
                        strbuf_append(&sent_recs, &h, sizeof(h));
                        strbuf_append(&sent_recs, body, blen);
                }
        }
        kernel_publish(&k);
        assert_true(aux_ring_drain(&r, &got_ops, &g, NULL) > 0);

        assert_int_equal(g.aux.len, sent.len);
        assert_memory_equal(g.aux.buf, sent.buf, sent.len);
        assert_int_equal(g.recs.len, sent_recs.len);
        assert_memory_equal(g.recs.buf, sent_recs.buf, sent_recs.len);
        assert_int_equal(g.chunks, chunks);
        assert_true(g.pieces > chunks);         /* some chunks wrapped */
        assert_int_equal(r.stats.aux_records, chunks);
        assert_int_equal(r.stats.aux_bytes, sent.len);
        assert_int_equal(r.stats.aux_gaps + r.stats.truncated + r.stats.lost + r.stats.bad_records, 0);
        /* Everything released. */
        assert_int_equal(k.page.aux_tail, k.aux_head);
        assert_int_equal(k.page.data_tail, k.data_head);
        printf("%" PRIu64 " chunks, %zu bytes, %" PRIu64 " pieces, %zu record bytes, AUX ring wrapped %" PRIu64
               " times\n", chunks, sent.len, g.pieces, sent_recs.len, k.aux_head / k.aux_size);
        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&sent);
        strbuf_done(&sent_recs);
        strbuf_done(&g.aux);
        strbuf_done(&g.recs);
}

static int on_aux_refuse(void *u, const struct aux_ring_chunk *c, const uint8_t *data, size_t len, bool last) {
        return -EIO;
}

/* A consumer that fails on a truncated chunk: the error comes back, the caller's flag is
 * untouched (outputs are written on success only), the truncation is still counted. */
static void test_truncated_consumer_error(void **state) {
        static const struct aux_ring_ops refuse_ops = { .aux = on_aux_refuse };
        struct got g = { STRBUF_INIT, STRBUF_INIT };
        uint8_t buf[5000];
        struct kernel k;
        struct aux_ring r;
        bool truncated = false;

        memset(buf, 0x42, sizeof(buf));
        kernel_init(&k, 256, 4096);
        setup_ring(&r, &k);
        /* 5000 bytes into a 4096-byte AUX ring: one chunk, truncated, the event off. */
        assert_int_equal(kernel_aux(&k, buf, sizeof(buf), 0, NULL), 4096);
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &refuse_ops, NULL, &truncated), -EIO);
        assert_false(truncated);
        assert_int_equal(r.stats.truncated, 1);
        /* Released all the same: a consumer's error does not wedge the ring. */
        assert_int_equal(k.page.data_tail, k.page.data_head);
        assert_int_equal(k.page.aux_tail, 4096);

        /* A drain that succeeds writes the flag, false when nothing was truncated. */
        truncated = true;
        k.disabled = false;
        assert_int_equal(kernel_aux(&k, buf, 100, 0, NULL), 100);
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 1);
        assert_false(truncated);
        assert_int_equal(g.aux.len, 100);
        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&g.aux);
        strbuf_done(&g.recs);
}

/* A reader that falls behind: the AUX ring fills (truncation, the event off), then the data ring
 * (records dropped, counted, reported as LOST; the unannounced chunks' bytes still read, as a fill). */
static void test_losses(void **state) {
        struct got g = { STRBUF_INIT, STRBUF_INIT };
        uint8_t buf[1000];
        struct kernel k;
        struct aux_ring r;
        bool truncated;
        size_t n;

        memset(buf, 0x42, sizeof(buf));
        kernel_init(&k, 256, 4096);
        setup_ring(&r, &k);

        /* 4 x 1000 bytes fit, the fifth gets 96 of its 1000 bytes: truncated, event off. */
        for (int i = 0; i < 4; i++)
                assert_int_equal(kernel_aux(&k, buf, sizeof(buf), 0, NULL), 1000);
        assert_int_equal(kernel_aux(&k, buf, sizeof(buf), 0, NULL), 96);
        assert_int_equal(kernel_aux(&k, buf, sizeof(buf), 0, NULL), 0); /* disabled: nothing */
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 5);
        assert_true(truncated);
        assert_int_equal(g.aux.len, 4096);
        assert_int_equal(r.stats.truncated, 1);
        assert_int_equal(g.truncated, 1);
        assert_int_equal(k.page.aux_tail, 4096);
        k.disabled = false; /* the reader re-enables the event */

        /* The data ring holds 256 / 32 = 8 AUX records: of 12 chunks, 4 records are dropped. */
        for (int i = 0; i < 12; i++)
                assert_int_equal(kernel_aux(&k, buf, 100, 0, NULL), 100);
        assert_int_equal(k.dropped_aux_records, 4);
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, &truncated), 8);
        assert_false(truncated);
        /* Room again: the LOST record goes out before the next AUX record, whose chunk follows a
         * gap: the 4 unannounced chunks, still in the ring, are read first as one fill. */
        assert_int_equal(kernel_aux(&k, buf, 100, 0, NULL), 100);
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, NULL), 2);
        assert_int_equal(r.stats.lost, 4);
        assert_int_equal(r.stats.aux_gaps, 1);
        assert_int_equal(r.stats.aux_gap_bytes, 400);
        assert_int_equal(r.stats.aux_gaps_lost, 0);
        assert_int_equal(g.gaps, 0);
        assert_int_equal(g.fills, 1);
        assert_int_equal(k.page.aux_tail, k.aux_head);
        for (size_t i = 4096 + 8 * 100; i < g.aux.len; i++)
                assert_int_equal((uint8_t) g.aux.buf[i], 0x42);

        /* Driver padding before a chunk: read as a fill of zeros, nothing lost. */
        n = kernel_aux(&k, buf, 50, 24, NULL);
        assert_int_equal(n, 50);
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, NULL), 1);
        assert_int_equal(r.stats.partial, 1);
        assert_int_equal(r.stats.aux_gaps, 2);
        assert_int_equal(r.stats.aux_gap_bytes, 424);
        assert_int_equal(g.fills, 2);
        assert_int_equal(g.aux.len, 4096 + 8 * 100 + 400 + 100 + 24 + 50);
        for (size_t i = 4096 + 8 * 100 + 400 + 100; i < 4096 + 8 * 100 + 400 + 100 + 24; i++)
                assert_int_equal((uint8_t) g.aux.buf[i], 0);

        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&g.aux);
        strbuf_done(&g.recs);
}

/* With the event's attr (sample_id_all), AUX and LOST records end in a sample_id trailer [perf_event_open(2)]. */
static uint32_t sid_tid, sid_cpu;
static uint64_t sid_time;

static int on_aux_sid(void *u, const struct aux_ring_chunk *c, const uint8_t *data, size_t len, bool last) {
        assert_true(c->sid.valid & PERF_DATA_ID_TID);
        sid_tid = c->sid.tid;
        sid_time = c->sid.time;
        sid_cpu = c->sid.cpu;
        return 0;
}

static void test_sample_id(void **state) {
        static const struct aux_ring_ops ops = { .aux = on_aux_sid };
        const struct perf_event_attr attr = {
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER,
                .sample_id_all = 1,
        };
        struct {
                struct perf_event_header h;
                uint64_t aux_offset, aux_size, flags;
                uint32_t pid, tid;
                uint64_t time;
                uint32_t cpu, res;
                uint64_t id;
        } aux = { { PERF_RECORD_AUX, 0, sizeof(aux) }, 0, 64, 0, 100, 101, 5555, 3, 0, 9 };
        struct {
                struct perf_event_header h;
                uint64_t id, lost;
                uint32_t pid, tid;
                uint64_t time;
                uint32_t cpu, res;
                uint64_t id2;
        } lost = { { PERF_RECORD_LOST, 0, sizeof(lost) }, 9, 7, 100, 101, 5556, 3, 0, 9 };
        struct {
                struct perf_event_header h;
                uint64_t lost;
                uint32_t pid, tid;
        } short_trailer = { { PERF_RECORD_LOST_SAMPLES, 0, sizeof(short_trailer) }, 5, 1, 2 };
        uint8_t bytes[64] = {};
        struct kernel k;
        struct aux_ring r;

        kernel_init(&k, 1024, 4096);
        setup_ring(&r, &k);
        aux_ring_set_attr(&r, &attr);
        ring_put(k.aux, k.aux_size, 0, bytes, sizeof(bytes));
        k.aux_head = 64;
        assert_true(kernel_record_raw(&k, &aux, sizeof(aux)));
        assert_true(kernel_record_raw(&k, &lost, sizeof(lost)));
        /* 16 bytes of body and a 32-byte trailer cannot fit in 24: a bad record, the rest goes on. */
        assert_true(kernel_record_raw(&k, &short_trailer, sizeof(short_trailer)));
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &ops, NULL, NULL), 3);
        assert_int_equal(sid_tid, 101);
        assert_int_equal(sid_time, 5555);
        assert_int_equal(sid_cpu, 3);
        assert_int_equal(r.stats.aux_records, 1);
        assert_int_equal(r.stats.aux_bytes, 64);
        assert_int_equal(r.stats.lost, 7);
        assert_int_equal(r.stats.lost_samples, 0);
        assert_int_equal(r.stats.bad_records, 1);
        assert_int_equal(r.stats.bad_bytes, sizeof(short_trailer));
        assert_int_equal(k.page.data_tail, k.page.data_head);
        aux_ring_done(&r);
        kernel_done(&k);
}

/* Records that cannot be: counted, the rest of what was published skipped, and the ring usable after. */
static void test_garbage(void **state) {
        struct got g = { STRBUF_INIT, STRBUF_INIT };
        struct kernel k;
        struct aux_ring r;
        uint8_t buf[64] = { 1, 2, 3 };
        struct perf_event_header bad = { PERF_RECORD_AUX, 0, 4 }; /* shorter than a header */
        struct {
                struct perf_event_header h;
                uint64_t aux_offset, aux_size, flags;
        } huge = { { PERF_RECORD_AUX, 0, sizeof(huge) }, 0, UINT64_C(1) << 40, 0 };

        kernel_init(&k, 512, 4096);
        setup_ring(&r, &k);
        assert_true(kernel_record_raw(&k, &bad, sizeof(bad)));
        assert_true(kernel_record_raw(&k, buf, 16));
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, NULL), 0);
        assert_int_equal(r.stats.bad_records, 1);
        assert_int_equal(r.stats.bad_bytes, 24);
        assert_int_equal(k.page.data_tail, 24);

        /* An AUX chunk larger than the ring: that record only is refused. */
        assert_true(kernel_record_raw(&k, &huge, sizeof(huge)));
        assert_int_equal(kernel_aux(&k, buf, sizeof(buf), 0, NULL), sizeof(buf));
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, NULL), 2);
        assert_int_equal(r.stats.bad_records, 2);
        assert_int_equal(g.aux.len, sizeof(buf));
        assert_memory_equal(g.aux.buf, buf, sizeof(buf));

        /* A head beyond what the ring can hold: skipped whole. */
        k.data_head += 10 * k.data_size;
        kernel_publish(&k);
        assert_int_equal(aux_ring_drain(&r, &got_ops, &g, NULL), 0);
        assert_int_equal(r.stats.bad_records, 3);
        assert_int_equal(k.page.data_tail, k.data_head);

        assert_int_equal(aux_ring_init(&r, &k.page, k.data, 1000, k.aux, k.aux_size), -EINVAL);
        assert_int_equal(aux_ring_init(&r, &k.page, k.data, k.data_size, k.aux, 3000), -EINVAL);
        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&g.aux);
        strbuf_done(&g.recs);
}

/* ---- a producer thread racing the reader ---- */

#define RACE_BYTES (8U << 20)

struct race {
        struct kernel k;
        uint64_t seed;
        _Atomic bool done;
        /* Written by the producer before done; read after pthread_join(). */
        char failure[128];
};

static uint8_t race_byte(uint64_t i) {
        return (uint8_t) ((i * UINT64_C(0x9e3779b97f4a7c15)) >> 56);
}

static void *producer(void *arg) {
        struct race *x = arg;
        uint8_t buf[3000];
        uint64_t sent = 0, s = x->seed;
        size_t n;

        while (sent < RACE_BYTES) {
                size_t len = 1 + (size_t) ((s = s * 6364136223846793005ULL + 1) >> 33) % sizeof(buf);
                uint64_t tail = __atomic_load_n(&x->k.page.aux_tail, __ATOMIC_ACQUIRE);
                uint64_t dtail = __atomic_load_n(&x->k.page.data_tail, __ATOMIC_ACQUIRE);

                len = MIN(len, (size_t) (RACE_BYTES - sent));
                /* A well-behaved kernel here: wait for room rather than truncate or drop. */
                if (x->k.aux_size - (x->k.aux_head - tail) < len || x->k.data_size - (x->k.data_head - dtail) < 64) {
                        kernel_publish(&x->k);
                        continue;
                }
                for (size_t j = 0; j < len; j++)
                        buf[j] = race_byte(sent + j);
                n = kernel_aux(&x->k, buf, len, 0, NULL);
                if (n != len) {
                        snprintf(x->failure, sizeof(x->failure),
                                 "producer: kernel_aux took %zu of %zu bytes at stream byte %" PRIu64, n, len, sent);
                        break;
                }
                sent += len;
                if (s % 4 == 0)
                        kernel_publish(&x->k);
        }
        kernel_publish(&x->k);
        atomic_store(&x->done, true);
        return NULL;
}

struct race_check {
        uint64_t pos;
        bool ok;
};

static int race_aux(void *u, const struct aux_ring_chunk *c, const uint8_t *data, size_t len, bool last) {
        struct race_check *rc = u;

        for (size_t i = 0; i < len; i++)
                rc->ok &= data[i] == race_byte(rc->pos + i);
        rc->pos += len;
        return 0;
}

static void test_race(void **state) {
        static const struct aux_ring_ops ops = { .aux = race_aux };
        struct race x = { .seed = 7 };
        struct race_check rc = { 0, true };
        struct aux_ring r;
        pthread_t t;
        bool finished = false;

        kernel_init(&x.k, 4096, 64 * 1024);
        setup_ring(&r, &x.k);
        assert_int_equal(pthread_create(&t, NULL, producer, &x), 0);
        while (!finished) {
                finished = atomic_load(&x.done);
                assert_true(aux_ring_drain(&r, &ops, &rc, NULL) >= 0);
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        if (x.failure[0])
                fail_msg("%s", x.failure);
        assert_true(aux_ring_drain(&r, &ops, &rc, NULL) >= 0);
        assert_true(rc.ok);
        assert_int_equal(rc.pos, RACE_BYTES);
        assert_int_equal(r.stats.aux_bytes, RACE_BYTES);
        assert_int_equal(r.stats.aux_gaps + r.stats.truncated + r.stats.lost + r.stats.bad_records, 0);
        printf("race: %u bytes in %" PRIu64 " chunks through a 64 KiB ring, all in order\n", RACE_BYTES,
               r.stats.aux_records);
        aux_ring_done(&r);
        kernel_done(&x.k);
}

/* ---- SPE records through the ring equal the generator's truth ---- */

struct spe_stream {
        struct strbuf bytes;
        struct spegen_record *truth;    /* every record the generator encoded, in stream order */
        bool *after_error;              /* garbage was injected right before it */
        size_t n, cap;
        bool next_after_error;
        uint64_t garbage_bytes;
};

static int collect_chunk(void *u, unsigned cpu, const uint8_t *data, size_t len, uint64_t offset, uint64_t time) {
        struct spe_stream *s = u;

        strbuf_append(&s->bytes, data, len);
        return 0;
}

static int collect_record(void *u, const struct spegen_record *r) {
        struct spe_stream *s = u;

        if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 4096;
                s->truth = xrealloc(s->truth, s->cap * sizeof(*s->truth));
                s->after_error = xrealloc(s->after_error, s->cap * sizeof(*s->after_error));
        }
        s->truth[s->n] = *r;
        s->after_error[s->n++] = s->next_after_error;
        s->next_after_error = false;
        return 0;
}

static int collect_garbage(void *u, const struct spegen_garbage *g) {
        struct spe_stream *s = u;

        s->garbage_bytes += g->len;
        s->next_after_error = true;
        return 0;
}

struct spe_got {
        struct spe_decoder d;
        struct spe_record *recs;
        size_t n, cap;
};

static int decode_aux(void *u, const struct aux_ring_chunk *c, const uint8_t *data, size_t len, bool last) {
        struct spe_got *g = u;

        /* A gap or a truncation breaks the stream: a record across it would mix two samples. */
        if (c->gap)
                spe_decoder_reset(&g->d);
        while (len > 0) {
                size_t used = 0, n;

                if (g->cap - g->n < 64) {
                        g->cap = g->cap ? 2 * g->cap : 4096;
                        g->recs = xrealloc(g->recs, g->cap * sizeof(*g->recs));
                }
                n = spe_decoder_decode(&g->d, data, len, g->recs + g->n, g->cap - g->n, &used);
                g->n += n;
                data += used;
                len -= used;
        }
        if (last && (c->flags & AUX_RING_FLAG_TRUNCATED))
                spe_decoder_reset(&g->d);
        return 0;
}

static uint32_t bit_flag(uint8_t v, unsigned bit, uint32_t f) {
        return (v >> bit) & 1U ? f : 0U;
}

/*
 * The decoded op of the payloads the generator writes (Arm ARM D10 "Operation Type packet"):
 * generic other ops, GP/SIMD&FP/extended loads and stores, branches
 * without GCS or call/return hints. false for anything else, which this
 * test would then have to learn.
 */
static bool want_op(uint8_t cls, uint8_t v, struct spe_record *e) {
        e->op_class = cls;
        e->op_raw = v;
        e->op_evl_bits_log2 = 0;
        switch (cls) {
        case SPE_ENC_OP_OTHER:
                if ((v & 0xf8) != 0)
                        return false;
                e->op_subclass = SPE_OP_SUB_OTHER;
                e->op_flags = bit_flag(v, 0, SPE_OPF_COND) | bit_flag(v, 1, SPE_OPF_FP) | bit_flag(v, 2, SPE_OPF_SIMD);
                return true;
        case SPE_ENC_OP_LDST:
                e->op_flags = (v & SPE_ENC_OP_LDST_ST) ? SPE_OPF_STORE : SPE_OPF_LOAD;
                if ((v & 0xe2) == 0x02) {
                        e->op_subclass = SPE_OP_SUB_LDST_EXT;
                        e->op_flags |= bit_flag(v, 2, SPE_OPF_ATOMIC) | bit_flag(v, 3, SPE_OPF_EXCLUSIVE) |
                                       bit_flag(v, 4, SPE_OPF_ACQREL);
                } else if ((v & 0xfe) == 0x04) {
                        e->op_subclass = SPE_OP_SUB_LDST_SIMD_FP;
                        e->op_flags |= SPE_OPF_SIMD;
                } else if ((v & 0xfe) == 0x00) {
                        e->op_subclass = SPE_OP_SUB_LDST_GP_REG;
                } else {
                        return false;
                }
                return true;
        case SPE_ENC_OP_BRANCH:
                if ((v & 0xfc) != 0)
                        return false;
                e->op_subclass = SPE_OP_SUB_BRANCH;
                e->op_flags = SPE_OPF_BRANCH | bit_flag(v, 0, SPE_OPF_COND) | bit_flag(v, 1, SPE_OPF_INDIRECT);
                return true;
        default:
                return false;
        }
}

/* The record the decoder must produce for what the generator encoded. */
static bool want_record(const struct spegen_record *w, bool after_error, struct spe_record *e) {
        *e = (struct spe_record) { .cpu = w->cpu };
        if (w->has & SPEGEN_HAS_PC) {
                e->present |= SPE_REC_PC;
                e->pc = (struct spe_ip) { spegen_expect_ip(w->pc, w->el, w->ns), w->el, w->ns, 0 };
        }
        if (w->has & SPEGEN_HAS_TGT) {
                e->present |= SPE_REC_BR_TGT;
                e->br_tgt = (struct spe_ip) { spegen_expect_ip(w->tgt, w->el, w->ns), w->el, w->ns, 0 };
        }
        if (w->has & SPEGEN_HAS_VA) {
                e->present |= SPE_REC_VA;
                e->va = spegen_expect_va(w->va);
                e->va_tag = (uint8_t) (w->va >> 56);
        }
        if (w->has & SPEGEN_HAS_PA) {
                e->present |= SPE_REC_PA;
                e->pa = w->pa;
                e->pa_ns = w->pa_ns;
                e->pa_ch = w->pa_ch;
                e->pa_pat = w->pa_pat;
        }
        if (w->has & SPEGEN_HAS_TOT) {
                e->present |= SPE_REC_LAT_TOTAL;
                e->lat_total = w->tot_lat;
        }
        if (w->has & SPEGEN_HAS_ISSUE) {
                e->present |= SPE_REC_LAT_ISSUE;
                e->lat_issue = w->issue_lat;
        }
        if (w->has & SPEGEN_HAS_XLAT) {
                e->present |= SPE_REC_LAT_XLAT;
                e->lat_xlat = w->xlat_lat;
        }
        if (w->has & SPEGEN_HAS_EVENTS) {
                e->present |= SPE_REC_EVENTS;
                e->events = w->events;
        }
        if (w->has & SPEGEN_HAS_OP) {
                e->present |= SPE_REC_OP;
                if (!want_op(w->op_class, w->op_subclass, e))
                        return false;
        }
        if (w->has & SPEGEN_HAS_DS) {
                e->present |= SPE_REC_SOURCE;
                e->source_raw = w->data_source;
                e->source = spegen_expect_source(w->data_source);
        }
        if (w->has & SPEGEN_HAS_CONTEXT) {
                e->present |= SPE_REC_CONTEXT;
                e->context = w->context;
                e->context_el = (uint8_t) (w->context_idx + 1U);
        }
        if (w->has & SPEGEN_HAS_TS) {
                e->present |= SPE_REC_TIMESTAMP;
                e->timestamp = w->timestamp;
        } else {
                e->flags |= SPE_REC_F_END;
        }
        if (after_error)
                e->flags |= SPE_REC_F_AFTER_ERROR;
        return true;
}

/* Name of the first field that differs (want, have into *ret_*), NULL when equal. */
static const char *record_diff(const struct spe_record *want, const struct spe_record *have, uint64_t *ret_want,
                               uint64_t *ret_have) {
#define X(f)                                                                    \
        if ((uint64_t) want->f != (uint64_t) have->f) {                         \
                *ret_want = (uint64_t) want->f;                                 \
                *ret_have = (uint64_t) have->f;                                 \
                return #f;                                                      \
        }
        SPE_RECORD_FIELDS(X)
#undef X
        return NULL;
}

static void test_spe_through_ring(void **state) {
        static const struct aux_ring_ops ops = { .aux = decode_aux };
        struct spe_stream s = { STRBUF_INIT };
        struct spe_got g = {};
        struct spegen_config c;
        struct spegen_stats st;
        struct kernel k;
        struct aux_ring r;
        size_t pos = 0, mismatches = 0;
        uint64_t want_packets = 0, want_bytes;

        spegen_config_init(&c);
        c.seed = 11;
        c.n_records = 50000;
        c.n_cpus = 1;
        c.padded = true;
        c.ts = true;
        c.garbage_rate = 0.01;
        assert_int_equal(spegen_run(&c, &(struct spegen_sink) { .userdata = &s, .record = collect_record,
                                                               .garbage = collect_garbage, .chunk = collect_chunk },
                                    &st), 0);
        assert_int_equal(s.n, c.n_records);
        assert_true(s.garbage_bytes > 0);

        /* Through the ring, as the driver commits it: pieces of 1..2000 bytes (SPE records end anywhere). */
        spe_decoder_init(&g.d, 0, spegen_midr(SPEGEN_MIDR_N1));
        kernel_init(&k, 4096, 16384);
        setup_ring(&r, &k);
        while (pos < s.bytes.len) {
                size_t len = MIN(1 + (size_t) (rnd() % 2000), s.bytes.len - pos);

                if (k.aux_size - (k.aux_head - k.page.aux_tail) < len || k.data_size - (k.data_head - k.page.data_tail) < 64) {
                        kernel_publish(&k);
                        assert_true(aux_ring_drain(&r, &ops, &g, NULL) > 0);
                }
                assert_int_equal(kernel_aux(&k, (const uint8_t *) s.bytes.buf + pos, len, 0, NULL), len);
                pos += len;
        }
        kernel_publish(&k);
        assert_true(aux_ring_drain(&r, &ops, &g, NULL) > 0);
        want_bytes = s.bytes.len;

        /* Every field of every record against what the generator encoded. */
        assert_int_equal(g.n, s.n);
        for (size_t i = 0; i < g.n; i++) {
                struct spe_record want;
                uint64_t w = 0, h = 0;
                const char *f;

                if (!want_record(&s.truth[i], s.after_error[i], &want))
                        fail_msg("record %zu: the generator wrote op class %u payload 0x%02x, which this test "
                                 "does not model", i, s.truth[i].op_class, s.truth[i].op_subclass);
                /* One packet per kind present and the terminator (TIMESTAMP or END); padding is not a packet. */
                want_packets += (uint64_t) __builtin_popcount(s.truth[i].has & ~(uint32_t) SPEGEN_HAS_TS) + 1;
                f = record_diff(&want, &g.recs[i], &w, &h);
                if (f && mismatches++ < 10)
                        printf("record %zu (offset %" PRIu64 ", %s): %s want 0x%" PRIx64 " have 0x%" PRIx64 "\n", i,
                               s.truth[i].offset, spegen_scenario_name(s.truth[i].scenario), f, w, h);
        }
        assert_int_equal(mismatches, 0);
        /* The decoder's counters against the truth: every garbage byte one bad header, nothing else lost. */
        assert_int_equal(g.d.stats.records, s.n);
        assert_int_equal(g.d.stats.bad_header, s.garbage_bytes);
        assert_int_equal(g.d.stats.packets, want_packets);
        assert_int_equal(g.d.stats.bytes, want_bytes);
        assert_int_equal(g.d.stats.bad_ext_header + g.d.stats.dropped_records + g.d.stats.unknown_index +
                         g.d.stats.duplicate_pkts + g.d.stats.flushed_records, 0);
        assert_false(g.d.in_record);
        printf("%zu SPE records through the ring, %" PRIu64 " AUX chunks: every field equals the generator's truth "
               "(%" PRIu64 " garbage bytes, %" PRIu64 " packets)\n", g.n, r.stats.aux_records, s.garbage_bytes,
               want_packets);
        free(g.recs);
        free(s.truth);
        free(s.after_error);
        aux_ring_done(&r);
        kernel_done(&k);
        strbuf_done(&s.bytes);
}

struct data_only {
        uint32_t types[64];
        size_t n, ends;
        size_t records_at_end[8];
};

static int data_only_record(void *userdata, const uint8_t *rec, size_t len) {
        struct data_only *d = userdata;

        assert_true(d->n < ELEMENTSOF(d->types));
        d->types[d->n++] = perf_rd32(rec);
        return 0;
}

static int data_only_end(void *userdata) {
        struct data_only *d = userdata;

        assert_true(d->ends < ELEMENTSOF(d->records_at_end));
        d->records_at_end[d->ends++] = d->n;
        return 0;
}

/*
 * A data ring alone (a sampling event): PERF_RECORD_AUX is a record like
 * any other, LOST still counted; a budget of records per drain leaves the
 * rest published and unreleased; the end hook runs once per drain, after
 * the last record and before the release.
 */
static void test_data_only(void **state) {
        static const struct aux_ring_ops ops = { .record = data_only_record, .end = data_only_end };
        struct {
                uint64_t aux_offset, aux_size, flags;
        } aux = { 0, 64, 0 };
        struct {
                uint64_t id, lost;
        } lost = { 1, 5 };
        struct {
                uint32_t pid, tid;
                char comm[8];
        } comm = { 1, 1, "x" };
        struct data_only d = {};
        struct kernel k;
        struct aux_ring r;

        kernel_init(&k, 4096, 4096);
        assert_int_equal(aux_ring_init(&r, &k.page, k.data, 4096, NULL, 4096), -EINVAL);
        assert_int_equal(aux_ring_init(&r, &k.page, k.data, 4096, NULL, 0), 0);
        assert_true(kernel_record(&k, PERF_RECORD_AUX, &aux, sizeof(aux)));
        assert_true(kernel_record(&k, PERF_RECORD_LOST, &lost, sizeof(lost)));
        for (unsigned i = 0; i < 5; i++)
                assert_true(kernel_record(&k, PERF_RECORD_COMM, &comm, sizeof(comm)));
        kernel_publish(&k);
        assert_true(aux_ring_pending(&r));
        /* Three records: AUX, LOST (counted, not handed on), one COMM. */
        assert_int_equal(aux_ring_drain_max(&r, &ops, &d, 3, NULL), 3);
        assert_int_equal(d.n, 2);
        assert_int_equal(d.types[0], PERF_RECORD_AUX);
        assert_int_equal(d.types[1], PERF_RECORD_COMM);
        assert_int_equal(r.stats.lost, 5);
        assert_int_equal(r.stats.aux_records, 0);
        assert_int_equal(d.ends, 1);
        assert_int_equal(d.records_at_end[0], 2);
        assert_true(aux_ring_pending(&r));
        assert_true(k.page.data_tail < k.data_head);
        assert_int_equal(aux_ring_drain_max(&r, &ops, &d, 0, NULL), 4);
        assert_int_equal(d.n, 6);
        assert_int_equal(d.ends, 2);
        assert_false(aux_ring_pending(&r));
        assert_int_equal(k.page.data_tail, k.data_head);
        /* No AUX area: its tail is never written. */
        assert_int_equal(k.page.aux_tail, 0);
        aux_ring_done(&r);
        kernel_free(&k);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wraps),
                cmocka_unit_test(test_losses),
                cmocka_unit_test(test_unannounced),
                cmocka_unit_test(test_lost_busy),
                cmocka_unit_test(test_stopped),
                cmocka_unit_test(test_commit_during_drain),
                cmocka_unit_test(test_truncated_consumer_error),
                cmocka_unit_test(test_garbage),
                cmocka_unit_test(test_sample_id),
                cmocka_unit_test(test_race),
                cmocka_unit_test(test_spe_through_ring),
                cmocka_unit_test(test_data_only),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
