/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Real SPE bytes from $ARMPROFD_SHARED_DIR/testdata/spe:
 *  - spe-b1-ts{0,1}.data (WindowsPerf captures) against their CSV oracle
 *    and the README's decoded content;
 *  - every packet line of the vectors/ text files (hex bytes + perf-style text from
 *    an independent decoder) against our decoder and spe_pkt_desc();
 *  - the complete records in those vectors against the fields they state.
 * Skips (77) when the shared directory is absent.
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "macro.h"
#include "spe-dump.h"
#include "spe-rec.h"

#define MIDR_N1 UINT64_C(0x414fd0c1)
#define MAX_ENTRIES 128
#define MAX_LINE_BYTES 32

static char spe_dir[4096];

/* ---------------------------------------------------------------------
 * Helpers.
 */

static size_t read_file(const char *name, uint8_t *buf, size_t cap) {
        char path[8192];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", spe_dir, name);
        f = fopen(path, "rb");
        if (!f)
                fail_msg("cannot open %s: %s", path, strerror(errno));
        n = fread(buf, 1, cap, f);
        assert_false(ferror(f));
        assert_true(feof(f)); /* whole file fitted */
        fclose(f);
        return n;
}

/* Checked unsigned parse of a whole token (decimal, or hex with 0x). */
static uint64_t parse_u64(const char *s) {
        char *end = NULL;
        unsigned long long v;

        assert_true(s && *s && *s != '-' && *s != '+' && !isspace((unsigned char) *s));
        errno = 0;
        v = strtoull(s, &end, 0);
        if (errno != 0 || !end || *end != '\0')
                fail_msg("not a number: \"%s\"", s);
        return v;
}

static size_t decode_all(uint64_t midr, const uint8_t *b, size_t n, struct spe_record *out,
                         size_t max, struct spe_decoder *ret_d) {
        struct spe_decoder d;
        size_t pos = 0, nout = 0;

        spe_decoder_init(&d, 0, midr);
        while (pos < n) {
                size_t c;

                nout += spe_decoder_decode(&d, b + pos, n - pos, out + nout, max - nout, &c);
                assert_true(c > 0 || nout == max);
                if (nout == max)
                        break;
                pos += c;
        }
        if (ret_d)
                *ret_d = d;
        return nout;
}

/* ---------------------------------------------------------------------
 * The WindowsPerf captures and their CSV oracle.
 */

struct csv {
        char names[20][32];
        char values[20][64];
        unsigned n;
};

static void split_csv(char *line, char cols[20][64], unsigned *ret_n) {
        unsigned n = 0;
        char *p = line;

        for (;;) {
                char *comma = strchr(p, ',');
                size_t l;

                if (comma)
                        *comma = '\0';
                l = strcspn(p, "\r\n");
                p[l] = '\0';
                if (p[0] == '"' && l >= 2 && p[l - 1] == '"') {
                        p[l - 1] = '\0';
                        p++;
                }
                assert_true(n < 20 && strlen(p) < 64);
                strcpy(cols[n++], p);
                if (!comma)
                        break;
                p = comma + 1;
        }
        *ret_n = n;
}

static void read_csv(const char *name, struct csv *c) {
        char text[2048], *nl;
        char hdr[20][64];
        unsigned nh, nv;
        size_t n = read_file(name, (uint8_t *) text, sizeof(text) - 1);

        text[n] = '\0';
        nl = strchr(text, '\n');
        assert_non_null(nl);
        *nl = '\0';
        split_csv(text, hdr, &nh);
        split_csv(nl + 1, c->values, &nv);
        assert_int_equal(nh, nv);
        for (unsigned i = 0; i < nh; i++) {
                assert_true(strlen(hdr[i]) < 32);
                strcpy(c->names[i], hdr[i]);
        }
        c->n = nh;
}

static const char *csv_get(const struct csv *c, const char *name) {
        for (unsigned i = 0; i < c->n; i++)
                if (streq(c->names[i], name))
                        return c->values[i];
        fail_msg("CSV has no column %s", name);
        return NULL;
}

/* Every CSV column against the record; the column set is the oracle's. */
static void check_against_csv(const struct spe_record *r, const struct csv *c) {
        char ev[256] = "";

        assert_int_equal(c->n, 15);
        assert_true(parse_u64(csv_get(c, "cpu")) == r->cpu);
        assert_string_equal(csv_get(c, "op"), spe_record_op_kind(r) == SPE_OP_KIND_BRANCH ? "B" : "?");
        assert_true(parse_u64(csv_get(c, "pc")) == r->pc.addr);
        assert_true(parse_u64(csv_get(c, "el")) == r->pc.el);
        assert_string_equal(csv_get(c, "condition"), (r->op_flags & SPE_OPF_COND) ? "true" : "false");
        assert_string_equal(csv_get(c, "indirect"), (r->op_flags & SPE_OPF_INDIRECT) ? "true" : "false");
        for (unsigned bit = 0; bit < 64; bit++)
                if (r->events & SPE_EV_BIT(bit)) {
                        if (ev[0])
                                strcat(ev, " ");
                        strcat(ev, spe_event_name(bit));
                }
        assert_string_equal(csv_get(c, "event"), ev);
        assert_true(parse_u64(csv_get(c, "issue_lat")) == r->lat_issue);
        assert_true(parse_u64(csv_get(c, "total_lat")) == r->lat_total);
        assert_true(parse_u64(csv_get(c, "br_tgt")) == r->br_tgt.addr);
        assert_true(parse_u64(csv_get(c, "br_tgt_lvl")) == r->br_tgt.el);
        /* no previous-branch-target and no context packet in these records */
        assert_string_equal(csv_get(c, "pbt"), "");
        assert_false(r->present & SPE_REC_PBT);
        assert_true(parse_u64(csv_get(c, "pbt_lvl")) == 0);
        assert_string_equal(csv_get(c, "context"), "");
        assert_false(r->present & SPE_REC_CONTEXT);
        /* the oracle writes ts 0 when there is no timestamp */
        assert_true(parse_u64(csv_get(c, "ts")) == ((r->present & SPE_REC_TIMESTAMP) ? r->timestamp : 0));
}

static void check_capture(const char *data, const char *csvname, bool ts) {
        uint8_t b[256];
        struct spe_record out[4], r;
        struct spe_decoder d;
        struct csv c;
        size_t n = read_file(data, b, sizeof(b));

        assert_int_equal(n, 64);
        assert_int_equal(decode_all(0, b, n, out, ELEMENTSOF(out), &d), 1);
        r = out[0];

        /* README "Decoded content", written out independently of the CSV */
        assert_int_equal(r.present, SPE_REC_PC | SPE_REC_OP | SPE_REC_EVENTS | SPE_REC_LAT_ISSUE |
                                    SPE_REC_LAT_TOTAL | SPE_REC_BR_TGT | (ts ? SPE_REC_TIMESTAMP : 0));
        assert_int_equal(r.flags, ts ? 0 : SPE_REC_F_END);
        assert_true(r.pc.addr == UINT64_C(0x7ffdbf2143e0));
        assert_int_equal(r.pc.el, 0);
        assert_int_equal(r.pc.ns, 1);
        assert_int_equal(r.op_class, SPE_OP_CLASS_BRANCH);
        assert_int_equal(r.op_flags, SPE_OPF_BRANCH | SPE_OPF_COND);
        assert_true(r.events == SPE_EV_BIT(SPE_EV_RETIRED));
        assert_true(r.br_tgt.addr == UINT64_C(0x7ffdbf214408));
        assert_int_equal(r.br_tgt.el, 0);
        assert_int_equal(r.br_tgt.ns, 1);
        assert_int_equal(r.lat_issue, ts ? 41 : 39);
        assert_int_equal(r.lat_total, ts ? 42 : 40);
        if (ts)
                assert_true(r.timestamp == UINT64_C(3913207673451));
        assert_int_equal(d.stats.bytes, 64);
        assert_int_equal(spe_decoder_errors(&d), 0);
        assert_false(d.in_record);

        read_csv(csvname, &c);
        check_against_csv(&r, &c);

        /* byte-by-byte delivery gives the same record */
        {
                struct spe_decoder d1;
                size_t got = 0;

                spe_decoder_init(&d1, 0, 0);
                for (size_t i = 0; i < n; i++) {
                        struct spe_record r1;
                        size_t cons;

                        if (spe_decoder_next(&d1, b + i, 1, &cons, &r1) == 1) {
                                assert_int_equal(i, n - 1);
                                assert_true(r1.pc.addr == r.pc.addr && r1.lat_total == r.lat_total &&
                                            r1.timestamp == r.timestamp && r1.present == r.present);
                                got++;
                        }
                        assert_int_equal(cons, 1);
                }
                assert_int_equal(got, 1);
        }
}

static void test_capture_ts0(void **state) {
        check_capture("spe-b1-ts0.data", "spe-b1-ts0.csv", false);
}

static void test_capture_ts1(void **state) {
        check_capture("spe-b1-ts1.data", "spe-b1-ts1.csv", true);
}

/* ---------------------------------------------------------------------
 * Text vectors: "[offset] hex bytes [00 xN] DESCRIPTION" lines.
 */

struct entry {
        long offset;            /* -1 when the line has none */
        uint8_t b[MAX_LINE_BYTES];
        unsigned n;
        char desc[128];
};

static bool is_hex_byte(const char *t) {
        return strlen(t) == 2 && isxdigit((unsigned char) t[0]) && isxdigit((unsigned char) t[1]) &&
               !isupper((unsigned char) t[0]) && !isupper((unsigned char) t[1]);
}

static bool parse_offset(const char *t, long *ret) {
        size_t l = strlen(t);
        char tmp[32];

        if (l >= sizeof(tmp))
                return false;
        strcpy(tmp, t);
        if (l > 0 && tmp[l - 1] == ':')
                tmp[--l] = '\0';
        if (l > 2 && tmp[0] == '0' && tmp[1] == 'x') {
                for (size_t i = 2; i < l; i++)
                        if (!isxdigit((unsigned char) tmp[i]))
                                return false;
        } else if (l == 8) {
                for (size_t i = 0; i < l; i++)
                        if (!isxdigit((unsigned char) tmp[i]))
                                return false;
                memmove(tmp + 2, tmp, l + 1);
                tmp[0] = '0';
                tmp[1] = 'x';
        } else
                return false;
        *ret = (long) parse_u64(tmp);
        return true;
}

/* One line -> entry; false if it is not a vector line. */
static bool parse_line(const char *line, struct entry *e) {
        const char *p = line;
        bool first = true;

        memset(e, 0, sizeof(*e));
        e->offset = -1;

        for (;;) {
                char tok[64];
                size_t l;

                while (*p == ' ' || *p == '\t')
                        p++;
                l = strcspn(p, " \t\r\n");
                if (l == 0 || l >= sizeof(tok))
                        return false;
                memcpy(tok, p, l);
                tok[l] = '\0';

                if (first && parse_offset(tok, &e->offset)) {
                        first = false;
                        p += l;
                        continue;
                }
                first = false;

                if (is_hex_byte(tok)) {
                        if (e->n >= MAX_LINE_BYTES)
                                return false;
                        e->b[e->n++] = (uint8_t) parse_u64((char[]) { '0', 'x', tok[0], tok[1], 0 });
                        p += l;
                        continue;
                }
                if (tok[0] == 'x' && e->n > 0 && isdigit((unsigned char) tok[1])) {
                        uint64_t rep = parse_u64(tok + 1);

                        if (rep < 1 || e->n - 1 + rep > MAX_LINE_BYTES)
                                return false;
                        for (uint64_t i = 1; i < rep; i++, e->n++)
                                e->b[e->n] = e->b[e->n - 1];
                        p += l;
                        continue;
                }
                break;
        }

        /* descriptions start upper-case; "|" marks the name tables, not packets */
        if (e->n == 0 || !isupper((unsigned char) *p) || strchr(p, '|'))
                return false;
        {
                size_t l = strcspn(p, "\r\n");

                while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
                        l--;
                if (l >= sizeof(e->desc))
                        return false;
                memcpy(e->desc, p, l);
                e->desc[l] = '\0';
        }
        return true;
}

static size_t parse_vectors(const char *name, struct entry *out, size_t max) {
        static char text[65536];
        size_t n = read_file(name, (uint8_t *) text, sizeof(text) - 1), count = 0;
        char *line = text;

        text[n] = '\0';
        while (line && *line) {
                char *nl = strchr(line, '\n');

                if (nl)
                        *nl = '\0';
                if (count < max && parse_line(line, &out[count]))
                        count++;
                line = nl ? nl + 1 : NULL;
        }
        return count;
}

/* The 2020 KVM-guest perf printed "LD" and "INSN-OTHER" without today's prefixes/suffixes. */
static void to_perf2020(char *s) {
        size_t l = strlen(s);

        if (l > 7 && streq(s + l - 7, " GP-REG"))
                s[l - 7] = '\0';
        if (strncmp(s, "OTHER ", 6) == 0)
                memmove(s, s + 6, strlen(s + 6) + 1);
}

static void check_entry(const char *file, const struct entry *e, bool perf2020) {
        char modern[SPE_PKT_DESC_MAX], p61[SPE_PKT_DESC_MAX];
        struct spe_pkt p;
        int k;

        if (streq(e->desc, "PAD")) {
                /* a PAD run: every byte is a 1-byte padding packet */
                for (unsigned i = 0; i < e->n; i++) {
                        assert_int_equal(spe_pkt_decode(e->b + i, e->n - i, &p), 1);
                        assert_int_equal(p.type, SPE_PKT_PAD);
                }
                return;
        }

        k = spe_pkt_decode(e->b, e->n, &p);
        if (k != (int) e->n)
                fail_msg("%s: \"%s\": decode returned %d for %u bytes", file, e->desc, k, e->n);
        assert_true(spe_pkt_desc(&p, 0, 0, modern, sizeof(modern)) >= 0);
        assert_true(spe_pkt_desc(&p, 0, SPE_DUMP_F_PERF61, p61, sizeof(p61)) >= 0);
        if (perf2020)
                to_perf2020(p61);
        if (!streq(e->desc, modern) && !streq(e->desc, p61))
                fail_msg("%s: bytes %02x %02x...: want \"%s\", got \"%s\" / \"%s\"",
                         file, e->b[0], e->n > 1 ? e->b[1] : 0, e->desc, modern, p61);
}

struct vector_file {
        const char *name;
        size_t entries;         /* packet lines in the file, counted by hand */
        bool perf2020;
};

static void test_vector_packets(void **state) {
        static const struct vector_file files[] = {
                { "vectors/telemetry-solution-spe_parser-vectors.txt", 20 + 10 + 9 + 9, false },
                { "vectors/perf_data_converter-quipper-two-records.txt", 13 + 10, false },
                { "vectors/qemu-vspe-guest-perf-report-D.txt", 20, true },
                { "vectors/linux-perf-spev1p3-commit-snippets.txt", 8, false },
        };

        for (size_t f = 0; f < ELEMENTSOF(files); f++) {
                static struct entry e[MAX_ENTRIES];
                size_t n = parse_vectors(files[f].name, e, MAX_ENTRIES);

                if (n != files[f].entries)
                        fail_msg("%s: %zu packet lines, expected %zu", files[f].name, n, files[f].entries);
                for (size_t i = 0; i < n; i++)
                        check_entry(files[f].name, &e[i], files[f].perf2020);
        }
}

/* Concatenate the lines that carry offsets, checking they are contiguous. */
static size_t stream_of(const char *name, uint8_t *buf, size_t cap) {
        static struct entry e[MAX_ENTRIES];
        size_t n = parse_vectors(name, e, MAX_ENTRIES), len = 0;

        for (size_t i = 0; i < n; i++) {
                if (e[i].offset < 0)
                        continue;
                assert_int_equal(e[i].offset, len);
                assert_true(len + e[i].n <= cap);
                memcpy(buf + len, e[i].b, e[i].n);
                len += e[i].n;
        }
        return len;
}

static void test_quipper_records(void **state) {
        uint8_t b[256];
        struct spe_record r[4];
        struct spe_decoder d;
        size_t n = stream_of("vectors/perf_data_converter-quipper-two-records.txt", b, sizeof(b));

        assert_int_equal(n, 128);
        assert_int_equal(decode_all(MIDR_N1, b, n, r, ELEMENTSOF(r), &d), 2);
        assert_int_equal(spe_decoder_errors(&d), 0);

        /* record 0 (the test's assertions, and quipper's N1 test record) */
        assert_true(r[0].events == (SPE_EV_BIT(SPE_EV_RETIRED) | SPE_EV_BIT(SPE_EV_L1D_ACCESS) |
                                    SPE_EV_BIT(SPE_EV_TLB_ACCESS)));
        assert_int_equal(r[0].op_class, SPE_OP_CLASS_LDST);
        assert_int_equal(r[0].op_flags, SPE_OPF_LOAD);
        assert_int_equal(r[0].op_subclass, SPE_OP_SUB_LDST_GP_REG);
        assert_int_equal(r[0].lat_total, 12);
        assert_int_equal(r[0].lat_issue, 4);
        assert_int_equal(r[0].lat_xlat, 1);
        assert_true(r[0].pc.addr == UINT64_C(0xffffba66eda1c2d0));
        assert_int_equal(r[0].pc.el, 2);
        assert_int_equal(r[0].pc.ns, 1);
        assert_true(r[0].va == UINT64_C(0xffff0e3703096b28));
        assert_true(r[0].timestamp == UINT64_C(44731163950));
        assert_int_equal(r[0].context, 0x5f80);
        assert_int_equal(r[0].context_el, 2);
        assert_true(r[0].present & SPE_REC_SOURCE);
        assert_int_equal(r[0].source_raw, 0);
        assert_int_equal(r[0].source, SPE_DATA_SRC_L1D);

        /* record 1 */
        assert_true(r[1].events == (SPE_EV_BIT(SPE_EV_RETIRED) | SPE_EV_BIT(SPE_EV_NOT_TAKEN)));
        assert_int_equal(r[1].op_class, SPE_OP_CLASS_BRANCH);
        assert_int_equal(r[1].op_flags, SPE_OPF_BRANCH | SPE_OPF_COND);
        assert_int_equal(r[1].lat_total, 17);
        assert_int_equal(r[1].lat_issue, 16);
        assert_true(r[1].pc.addr == UINT64_C(0xffffba66edefb0e0));
        assert_int_equal(r[1].pc.el, 2);
        assert_int_equal(r[1].pc.ns, 1);
        assert_true(r[1].br_tgt.addr == UINT64_C(0xffffba66edefb0e4));
        assert_int_equal(r[1].br_tgt.el, 2);
        assert_int_equal(r[1].br_tgt.ns, 1);
        assert_true(r[1].timestamp == UINT64_C(44731164045));
        assert_int_equal(r[1].context, 0xe);
        assert_int_equal(r[1].context_el, 2);
        assert_false(r[1].present & SPE_REC_SOURCE);
        assert_int_equal(r[1].source, SPE_DATA_SRC_NONE);
}

static void test_qemu_records(void **state) {
        uint8_t b[256];
        struct spe_record r[4];
        struct spe_decoder d;
        size_t n = stream_of("vectors/qemu-vspe-guest-perf-report-D.txt", b, sizeof(b));

        assert_int_equal(n, 0x5e);
        /* two whole records (44 and 32 bytes), the third is cut off by the excerpt */
        assert_int_equal(decode_all(0, b, n, r, ELEMENTSOF(r), &d), 2);
        assert_true(d.in_record);
        assert_int_equal(spe_decoder_errors(&d), 0);

        assert_true(r[0].pc.addr == UINT64_C(0xffff80001029d3f4));
        assert_int_equal(r[0].pc.el, 1);
        assert_int_equal(r[0].lat_issue, 11);
        assert_int_equal(r[0].lat_total, 13);
        assert_int_equal(r[0].lat_xlat, 1);
        assert_int_equal(r[0].op_flags, SPE_OPF_LOAD);
        assert_true(r[0].va == UINT64_C(0xffff000070d840d0));
        assert_true(r[0].timestamp == UINT64_C(86447955877));
        assert_false(r[0].present & (SPE_REC_PA | SPE_REC_SOURCE | SPE_REC_CONTEXT));

        assert_true(r[1].pc.addr == UINT64_C(0xffff80001029f97c));
        assert_int_equal(r[1].lat_issue, 2);
        assert_int_equal(r[1].lat_total, 3);
        assert_true(r[1].events == SPE_EV_BIT(SPE_EV_RETIRED));
        assert_int_equal(r[1].op_class, SPE_OP_CLASS_OTHER);
        assert_int_equal(r[1].op_subclass, SPE_OP_SUB_OTHER);
        assert_true(r[1].timestamp - r[0].timestamp == 74);
}

/* Section 2 of the telemetry vectors: a leading TS that ends the previous record. */
static void test_telemetry_record(void **state) {
        static struct entry e[MAX_ENTRIES];
        size_t n = parse_vectors("vectors/telemetry-solution-spe_parser-vectors.txt", e, MAX_ENTRIES);
        uint8_t b[256];
        size_t len = 0, start = n;
        struct spe_record r[4];
        struct spe_decoder d;

        for (size_t i = 0; i < n; i++)
                if (streq(e[i].desc, "TS 13196304120239"))
                        start = i;
        assert_true(start + 10 <= n);
        for (size_t i = start; i < start + 10; i++) {
                memcpy(b + len, e[i].b, e[i].n);
                len += e[i].n;
        }
        b[len++] = SPE_HDR_END;

        assert_int_equal(decode_all(MIDR_N1, b, len, r, ELEMENTSOF(r), &d), 1);
        assert_int_equal(d.stats.empty_records, 1);     /* the orphan TS */
        assert_true(r[0].pc.addr == UINT64_C(0xaaaae4a9b600));
        assert_int_equal(r[0].pc.el, 0);
        assert_int_equal(r[0].op_flags, SPE_OPF_LOAD);
        assert_int_equal(r[0].lat_issue, 4);
        assert_int_equal(r[0].lat_total, 8);
        assert_int_equal(r[0].lat_xlat, 1);
        assert_true(r[0].va == UINT64_C(0xaaaae65dda43));
        assert_true(r[0].pa == UINT64_C(0x8032c955a43));
        assert_int_equal(r[0].pa_ns, 1);
        assert_true((r[0].va & 0xfff) == (r[0].pa & 0xfff));
        assert_int_equal(r[0].source, SPE_DATA_SRC_L1D);
        assert_false(r[0].present & SPE_REC_TIMESTAMP);
}

/* Our dump of the ts1 capture names the same packets as the vectors' section 4. */
static void test_capture_dump(void **state) {
        uint8_t b[256];
        size_t n = read_file("spe-b1-ts1.data", b, sizeof(b));
        struct strbuf sb = STRBUF_INIT;

        spe_dump_strbuf(&sb, b, n, 0, 0);
        assert_non_null(strstr(sb.buf, ". ... ARM SPE data: size 0x40 bytes\n"));
        assert_non_null(strstr(sb.buf, ".  00000000:  b0 e0 43 21 bf fd 7f 00 80                      PC 0x7ffdbf2143e0 el0 ns=1\n"));
        assert_non_null(strstr(sb.buf, " B COND\n"));
        assert_non_null(strstr(sb.buf, " EV RETIRED\n"));
        assert_non_null(strstr(sb.buf, " LAT 41 ISSUE\n"));
        assert_non_null(strstr(sb.buf, " LAT 42 TOT\n"));
        assert_non_null(strstr(sb.buf, " TGT 0x7ffdbf214408 el0 ns=1\n"));
        assert_non_null(strstr(sb.buf, ".  00000037:  71 6b 72 5a 1d 8f 03 00 00                      TS 3913207673451\n"));
        assert_null(strstr(sb.buf, "Bad packet"));
        free(sb.buf);
}

int main(void) {
        const char *shared = getenv("ARMPROFD_SHARED_DIR");
        char probe[8192];
        FILE *f;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_capture_ts0),
                cmocka_unit_test(test_capture_ts1),
                cmocka_unit_test(test_vector_packets),
                cmocka_unit_test(test_quipper_records),
                cmocka_unit_test(test_qemu_records),
                cmocka_unit_test(test_telemetry_record),
                cmocka_unit_test(test_capture_dump),
        };

        if (!shared || !*shared) {
                printf("skip: ARMPROFD_SHARED_DIR is not set\n");
                return 77;
        }
        snprintf(spe_dir, sizeof(spe_dir), "%s/testdata/spe", shared);
        snprintf(probe, sizeof(probe), "%s/spe-b1-ts1.data", spe_dir);
        f = fopen(probe, "rb");
        if (!f) {
                printf("skip: %s not readable (%s): shared test data absent\n", probe, strerror(errno));
                return 77;
        }
        fclose(f);

        return cmocka_run_group_tests(tests, NULL, NULL);
}
