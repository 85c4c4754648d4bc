/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The push request's pieces: "[push] labels", the sample IDs, the PushRequest bytes (against bytes
 * worked out by hand from the protobuf encoding rules and against protobuf-c's own decoder) and
 * Retry-After. With "--write FILE" it writes the request test-push-request.py decodes with protoc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "push-request.h"
#include "push.pb-c.h"
#include "strbuf.h"

static void test_label_name_check(void **state) {
        static const char *const good[] = { "a", "_", "_a", "env", "Zone_1", "a_b_c", "A9" };
        static const char *const bad[] = { "", "1a", "a-b", "a.b", "a b", "__", "__name__", "__x", "é", "a:b" };
        char longest[PUSH_LABEL_NAME_MAX + 2];

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (push_label_name_check(good[i]) != 0)
                        fail_msg("'%s' refused", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (push_label_name_check(bad[i]) != -EINVAL)
                        fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(push_label_name_check(NULL), -EINVAL);

        memset(longest, 'a', PUSH_LABEL_NAME_MAX);
        longest[PUSH_LABEL_NAME_MAX] = '\0';
        assert_int_equal(push_label_name_check(longest), 0);
        longest[PUSH_LABEL_NAME_MAX] = 'a';
        longest[PUSH_LABEL_NAME_MAX + 1] = '\0';
        assert_int_equal(push_label_name_check(longest), -EINVAL);
}

static void test_labels_good(void **state) {
        static const struct {
                const char *text;
                size_t n;
                const char *names[3], *values[3];
        } cases[] = {
                { "", 0, {}, {} },
                { "  \t ", 0, {}, {} },
                { "env=prod", 1, { "env" }, { "prod" } },
                { "env=prod, zone=eu-west-1", 2, { "env", "zone" }, { "prod", "eu-west-1" } },
                { " env = prod ,zone=a b ", 2, { "env", "zone" }, { "prod", "a b" } },
                { "q=a=b", 1, { "q" }, { "a=b" } },
                { "_x=1,y_2=\xc3\xa9t\xc3\xa9,Z=\xe2\x82\xac", 3, { "_x", "y_2", "Z" }, { "1", "\xc3\xa9t\xc3\xa9", "\xe2\x82\xac" } },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct push_label *l = (void *) 1;
                size_t n = 99;
                char err[MESSAGE_MAX] = "";

                if (push_labels_parse(cases[i].text, &l, &n, err, sizeof(err)) != 0)
                        fail_msg("case %zu '%s' refused: %s", i, cases[i].text, err);
                assert_int_equal(n, cases[i].n);
                if (n == 0)
                        assert_null(l);
                for (size_t k = 0; k < n; k++) {
                        assert_string_equal(l[k].name, cases[i].names[k]);
                        assert_string_equal(l[k].value, cases[i].values[k]);
                }
                push_labels_free(l, n);
        }
}

static void test_labels_bad(void **state) {
        static const struct {
                const char *text, *in_err; /* in_err: what the message must name */
        } cases[] = {
                { "env", "env" },                         /* '=' missing */
                { "=prod", "empty name" },
                { " = prod", "empty name" },
                { "env=", "empty value" },
                { "env=  ", "empty value" },
                { "1env=a", "1env" },
                { "e-nv=a", "e-nv" },
                { "__x=a", "__x" },
                { "__name__=a", "__name__" },
                { "__delta__=true", "__delta__" },
                { "env=a,env=b", "twice" },
                { "env=a, zone=b , env=c", "env=c" },
                { "env=a,,zone=b", "item 2" },
                { "env=a,", "item 2" },
                { ",env=a", "item 1" },
                { "host=h", "host" },
                { "source=spe", "source" },
                { "service_name=x", "service_name key" },
                { "env=a\tb", "printable" },              /* control characters inside a value */
                { "env=a\x01", "printable" },
                { "env=a\x7f", "printable" },
                { "env=a\xc2\x85", "printable" },          /* U+0085, a C1 control */
                { "env=\xc3", "printable" },               /* cut sequence */
                { "env=\xc0\xaf", "printable" },           /* overlong '/' */
                { "env=\xed\xa0\x80", "printable" },       /* a surrogate */
                { "env=\xf4\x90\x80\x80", "printable" },   /* above U+10FFFF */
                { "env=\xff", "printable" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct push_label *l = (void *) 1;
                size_t n = 99;
                char err[MESSAGE_MAX] = "";

                if (push_labels_parse(cases[i].text, &l, &n, err, sizeof(err)) != -EINVAL)
                        fail_msg("case %zu '%s' accepted", i, cases[i].text);
                /* Nothing written on failure (HACKING.md §2). */
                assert_ptr_equal(l, (void *) 1);
                assert_int_equal(n, 99);
                if (!strstr(err, cases[i].in_err))
                        fail_msg("case %zu '%s': '%s' does not name '%s'", i, cases[i].text, err, cases[i].in_err);
        }
        assert_int_equal(push_labels_parse(NULL, &(struct push_label *) { NULL }, &(size_t) { 0 }, NULL, 0), -EINVAL);
}

static void test_labels_count_and_lengths(void **state) {
        struct strbuf sb = STRBUF_INIT;
        struct push_label *l = NULL;
        size_t n = 0;
        char err[MESSAGE_MAX] = "";

        /* 24 labels: 30 the store takes, less the 6 we keep. */
        assert_int_equal(PUSH_EXTRA_LABELS_MAX, 24);
        for (int i = 0; i < 24; i++)
                strbuf_printf(&sb, "%sl%d=v%d", i ? ", " : "", i, i);
        assert_int_equal(push_labels_parse(sb.buf, &l, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 24);
        assert_string_equal(l[23].name, "l23");
        assert_string_equal(l[23].value, "v23");
        push_labels_free(l, n);
        strbuf_puts(&sb, ", l24=v24");
        assert_int_equal(push_labels_parse(sb.buf, &l, &n, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "at most 24"));
        strbuf_done(&sb);

        /* A value of exactly PUSH_LABEL_VALUE_MAX bytes, then one more. */
        strbuf_puts(&sb, "v=");
        for (int i = 0; i < PUSH_LABEL_VALUE_MAX; i++)
                strbuf_putc(&sb, 'x');
        assert_int_equal(push_labels_parse(sb.buf, &l, &n, err, sizeof(err)), 0);
        assert_int_equal(strlen(l[0].value), PUSH_LABEL_VALUE_MAX);
        push_labels_free(l, n);
        strbuf_putc(&sb, 'x');
        assert_int_equal(push_labels_parse(sb.buf, &l, &n, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "longer than 2048"));
        strbuf_done(&sb);

        /* A name of PUSH_LABEL_NAME_MAX + 1 bytes. */
        for (int i = 0; i <= PUSH_LABEL_NAME_MAX; i++)
                strbuf_putc(&sb, 'n');
        strbuf_puts(&sb, "=v");
        assert_int_equal(push_labels_parse(sb.buf, &l, &n, err, sizeof(err)), -EINVAL);
        strbuf_done(&sb);
}

static void test_uuid4(void **state) {
        char a[PUSH_UUID_STR_MAX], b[PUSH_UUID_STR_MAX];
        unsigned seen_variant = 0;

        for (int round = 0; round < 64; round++) {
                push_uuid4(a);
                push_uuid4(b);
                assert_int_equal(strlen(a), 36);
                assert_string_not_equal(a, b);
                for (size_t i = 0; i < 36; i++) {
                        if (i == 8 || i == 13 || i == 18 || i == 23)
                                assert_int_equal(a[i], '-');
                        else if (!((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f')))
                                fail_msg("'%s': character %zu is not lower-case hex", a, i);
                }
                /* RFC 9562 §5.4: version nibble 4; §4.1: variant bits 10, so 8, 9, a or b. */
                assert_int_equal(a[14], '4');
                assert_non_null(strchr("89ab", a[19]));
                seen_variant |= 1u << (a[19] == '8' ? 0 : a[19] == '9' ? 1 : a[19] == 'a' ? 2 : 3);
        }
        /* The low two bits of that nibble stay random: 64 rounds show more than one value. */
        assert_true(seen_variant != 1 && seen_variant != 2 && seen_variant != 4 && seen_variant != 8);
}

static void test_encode_bytes(void **state) {
        /* One series {a="b"} with one profile "x" of ID "i". By the protobuf encoding rules
         * (length-delimited fields are tag, length, bytes; tag = field << 3 | 2):
         *   LabelPair  0a 01 'a' 12 01 'b'                  (6 bytes)
         *   RawSample  0a 01 'x' 12 01 'i'                  (6 bytes)
         *   Series     0a 06 <LabelPair> 12 06 <RawSample>  (16 bytes)
         *   Request    0a 10 <Series>                       (18 bytes) */
        static const uint8_t want[] = { 0x0a, 0x10, 0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b',
                                        0x12, 0x06, 0x0a, 0x01, 'x',  0x12, 0x01, 'i' };
        const struct push_label labels[] = { { (char *) "a", (char *) "b" } };
        struct strbuf profile = { (char *) "x", 1, 0 };
        const char *ids[] = { "i" };
        struct push_series s = { labels, 1, &profile, ids, 1 };
        struct strbuf out = STRBUF_INIT;
        char err[MESSAGE_MAX] = "";

        strbuf_puts(&out, "head");
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), 0);
        assert_int_equal(out.len, 4 + sizeof(want));
        assert_memory_equal(out.buf, "head", 4);
        assert_memory_equal(out.buf + 4, want, sizeof(want));
        strbuf_done(&out);
}

static void test_encode_decode(void **state) {
        const struct push_label cpu_labels[] = {
                { (char *) "__name__", (char *) "process_cpu" }, { (char *) "__delta__", (char *) "false" },
                { (char *) "service_name", (char *) "web" },     { (char *) "host", (char *) "h1" },
                { (char *) "source", (char *) "cpu-clock" },
        };
        const struct push_label spe_labels[] = {
                { (char *) "__name__", (char *) "spe" }, { (char *) "service_name", (char *) "web" },
                { (char *) "env", (char *) "" },
        };
        /* Profile bytes with a NUL and 0xff in them: raw_profile is bytes, not a string. */
        struct strbuf cpu_profiles[] = { { (char *) "\x1f\x8b\x00\xff-one", 8, 0 }, { (char *) "two", 3, 0 } };
        struct strbuf spe_profiles[] = { { (char *) "three", 5, 0 } };
        char id[3][PUSH_UUID_STR_MAX];
        const char *cpu_ids[] = { id[0], id[1] }, *spe_ids[] = { id[2] };
        struct push_series series[] = {
                { cpu_labels, ELEMENTSOF(cpu_labels), cpu_profiles, cpu_ids, 2 },
                { spe_labels, ELEMENTSOF(spe_labels), spe_profiles, spe_ids, 1 },
        };
        struct strbuf out = STRBUF_INIT;
        char err[MESSAGE_MAX] = "";
        Push__V1__PushRequest *req;

        for (size_t i = 0; i < 3; i++)
                push_uuid4(id[i]);
        assert_int_equal(push_request_encode(series, 2, &out, err, sizeof(err)), 0);

        req = push__v1__push_request__unpack(NULL, out.len, (const uint8_t *) out.buf);
        assert_non_null(req);
        assert_int_equal(req->n_series, 2);
        for (size_t si = 0; si < 2; si++) {
                const Push__V1__RawProfileSeries *ps = req->series[si];
                const struct push_series *s = &series[si];

                assert_int_equal(ps->n_labels, s->n_labels);
                for (size_t k = 0; k < s->n_labels; k++) {
                        assert_string_equal(ps->labels[k]->name, s->labels[k].name);
                        assert_string_equal(ps->labels[k]->value, s->labels[k].value);
                }
                assert_int_equal(ps->n_samples, s->n_profiles);
                for (size_t k = 0; k < s->n_profiles; k++) {
                        assert_int_equal(ps->samples[k]->raw_profile.len, s->profiles[k].len);
                        assert_memory_equal(ps->samples[k]->raw_profile.data, s->profiles[k].buf, s->profiles[k].len);
                        assert_string_equal(ps->samples[k]->id, s->ids[k]);
                }
        }
        push__v1__push_request__free_unpacked(req, NULL);
        strbuf_done(&out);
}

static void test_encode_refused(void **state) {
        struct push_label labels[PUSH_LABELS_MAX + 1];
        char names[PUSH_LABELS_MAX + 1][8];
        struct strbuf profile = { (char *) "p", 1, 0 }, empty = { NULL, 0, 0 };
        const char *ids[] = { "id" }, *no_id[] = { "" }, *bad_id[] = { "\xff" };
        struct strbuf out = STRBUF_INIT;
        char err[MESSAGE_MAX] = "", longname[PUSH_LABEL_NAME_MAX + 2], longvalue[PUSH_LABEL_VALUE_MAX + 2];
        static const struct {
                const char *name, *value, *in_err;
        } bad_labels[] = {
                { "a-b", "v", "a-b" },       { "1a", "v", "1a" },          { "", "v", "\"\"" },
                { "v", "\xc3", "not UTF-8" }, { "__name__", "a:b", "__name__" }, { "__name__", "a-b", "__name__" },
                { "__name__", "", "__name__" },
        };

        for (size_t i = 0; i <= PUSH_LABELS_MAX; i++) {
                snprintf(names[i], sizeof(names[i]), "l%zu", i);
                labels[i] = (struct push_label) { names[i], (char *) "v" };
        }

        /* The limit itself passes, one more is refused. */
        struct push_series s = { labels, PUSH_LABELS_MAX, &profile, ids, 1 };
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), 0);
        strbuf_done(&out);
        s.n_labels = PUSH_LABELS_MAX + 1;
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "31 labels"));
        assert_int_equal(out.len, 0);

        /* "__name__" and "__delta__" are fine here. */
        labels[0] = (struct push_label) { (char *) "__name__", (char *) "process_cpu" };
        labels[1] = (struct push_label) { (char *) "__delta__", (char *) "false" };
        s.n_labels = 2;
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), 0);
        strbuf_done(&out);

        /* A duplicate, then a name and a value one byte over. */
        labels[1] = (struct push_label) { (char *) "__name__", (char *) "x" };
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "twice"));
        memset(longname, 'n', PUSH_LABEL_NAME_MAX + 1);
        longname[PUSH_LABEL_NAME_MAX + 1] = '\0';
        labels[1] = (struct push_label) { longname, (char *) "v" };
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        longname[PUSH_LABEL_NAME_MAX] = '\0';
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), 0);
        strbuf_done(&out);
        memset(longvalue, 'v', PUSH_LABEL_VALUE_MAX + 1);
        longvalue[PUSH_LABEL_VALUE_MAX + 1] = '\0';
        labels[1] = (struct push_label) { (char *) "v", longvalue };
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        longvalue[PUSH_LABEL_VALUE_MAX] = '\0';
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), 0);
        strbuf_done(&out);

        for (size_t i = 0; i < ELEMENTSOF(bad_labels); i++) {
                labels[1] = (struct push_label) { (char *) bad_labels[i].name, (char *) bad_labels[i].value };
                if (bad_labels[i].name[0] == '_')
                        labels[0] = (struct push_label) { (char *) "x", (char *) "y" };
                if (push_request_encode(&s, 1, &out, err, sizeof(err)) != -EINVAL)
                        fail_msg("label %zu '%s'='%s' accepted", i, bad_labels[i].name, bad_labels[i].value);
                if (!strstr(err, bad_labels[i].in_err))
                        fail_msg("label %zu: '%s' does not name '%s'", i, err, bad_labels[i].in_err);
        }
        labels[0] = (struct push_label) { (char *) "a", (char *) "b" };
        s.n_labels = 1;

        /* Empty series, empty request, empty profile, missing IDs. */
        assert_int_equal(push_request_encode(&s, 0, &out, err, sizeof(err)), -EINVAL);
        assert_int_equal(push_request_encode(NULL, 0, &out, err, sizeof(err)), -EINVAL);
        s.n_profiles = 0;
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "no profiles"));
        s.n_profiles = 1;
        s.n_labels = 0;
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "no labels"));
        s.n_labels = 1;
        s.profiles = &empty;
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "empty"));
        s.profiles = &profile;
        s.ids = no_id;
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "no ID"));
        s.ids = bad_id;
        assert_int_equal(push_request_encode(&s, 1, &out, err, sizeof(err)), -EINVAL);
        s.ids = ids;
        assert_int_equal(push_request_encode(&s, 1, &out, NULL, 0), 0);
        assert_true(out.len > 0);
        strbuf_done(&out);
}

static void test_retry_after(void **state) {
        /* RFC 9110's example date, "Sun, 06 Nov 1994 08:49:37 GMT", is Unix 784111777
         * (`date -u -d '1994-11-06 08:49:37' +%s`); 29 Feb 2024 00:00:00 is 1709164800. */
        const int64_t now = 784111777 - 100;
        const uint64_t cap = 3600 * USEC_PER_SEC;
        static const struct {
                const char *value;
                int64_t now;
                uint64_t want_sec; /* of the wait */
        } good[] = {
                { "120", 0, 120 },
                { "0", 0, 0 },
                { " 5", 0, 5 },
                { "5 \t", 0, 5 },
                { "007", 0, 7 },
                { "3600", 0, 3600 },
                { "3601", 0, 3600 },                                  /* capped */
                { "99999999999999999999999999999", 0, 3600 },          /* past 64 bits: capped */
                { "18446744073709551615", 0, 3600 },
                { "Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 100, 100 },
                { "Sun, 06 Nov 1994 08:49:37 GMT", 784111777, 0 },      /* now */
                { "Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 50, 0 }, /* past */
                { "Sun, 06 Nov 1994 08:49:37 GMT", 0, 3600 },           /* far future: capped */
                { "Thu, 29 Feb 2024 00:00:00 GMT", 1709164800 - 61, 61 },
                { "Sat, 31 Dec 2016 23:59:60 GMT", 1483228800 - 10, 10 }, /* leap second: 2017-01-01 00:00:00 */
                { "  Mon, 23 Nov 2026 21:00:00 GMT ", 1795467600 - 1, 1 },
        };
        static const char *const bad[] = {
                "", " ", "-1", "+5", "1e3", "1.5", "5s", "0x10", "12 34", "garbage",
                "Sunday, 06-Nov-94 08:49:37 GMT",  /* RFC 850 form (obsolete) */
                "Sun Nov  6 08:49:37 1994",        /* asctime form (obsolete) */
                "Sun, 06 Nov 1994 08:49:37 UTC",
                "sun, 06 Nov 1994 08:49:37 GMT",
                "Sun, 06 nov 1994 08:49:37 GMT",
                "Sun, 6 Nov 1994 08:49:37 GMT",
                "Sun, 06 Nov 1994 8:49:37 GMT",
                "Xyz, 06 Nov 1994 08:49:37 GMT",
                "Sun, 06 Nov 1994 24:00:00 GMT",
                "Sun, 06 Nov 1994 08:60:00 GMT",
                "Sun, 06 Nov 1994 08:49:61 GMT",
                "Sun, 00 Nov 1994 08:49:37 GMT",
                "Sun, 31 Nov 1994 08:49:37 GMT",
                "Wed, 29 Feb 2023 00:00:00 GMT",   /* not a leap year */
                "Tue, 29 Feb 2100 00:00:00 GMT",   /* nor a century not divisible by 400 */
                "Sun, 06 Nov 1994 08:49:37 GMT x",
                "Sun, 06 Nov 1994 08:49:37 GM",
        };

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                uint64_t wait = 12345;

                if (push_retry_after_parse(good[i].value, good[i].now, cap, &wait) != 0)
                        fail_msg("'%s' refused", good[i].value);
                if (wait != good[i].want_sec * USEC_PER_SEC)
                        fail_msg("'%s': %" PRIu64 " us, want %" PRIu64 " s", good[i].value, wait, good[i].want_sec);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                uint64_t wait = 12345;

                if (push_retry_after_parse(bad[i], now, cap, &wait) != -EINVAL)
                        fail_msg("'%s' accepted", bad[i]);
                assert_int_equal(wait, 12345);
        }
        /* 2000 leap year (divisible by 400) is a date; a cap below one second is kept exactly. */
        uint64_t wait = 0;
        assert_int_equal(push_retry_after_parse("Tue, 29 Feb 2000 00:00:00 GMT", 951782400 - 2, cap, &wait), 0);
        assert_int_equal(wait, 2 * USEC_PER_SEC);
        assert_int_equal(push_retry_after_parse("1", 0, 500 * USEC_PER_MSEC, &wait), 0);
        assert_int_equal(wait, 500 * USEC_PER_MSEC);
        assert_int_equal(push_retry_after_parse(NULL, 0, cap, &wait), -EINVAL);
}

/* The request test-push-request.py decodes with protoc: fixed labels, IDs and bytes it knows. */
static int write_request(const char *path) {
        const struct push_label labels[] = {
                { (char *) "__name__", (char *) "process_cpu" }, { (char *) "__delta__", (char *) "false" },
                { (char *) "service_name", (char *) "web" },     { (char *) "host", (char *) "h1" },
                { (char *) "env", (char *) "\xc3\xa9t\xc3\xa9" },
        };
        const struct push_label spe_labels[] = { { (char *) "__name__", (char *) "spe" } };
        struct strbuf profiles[] = { { (char *) "first", 5, 0 }, { (char *) "second", 6, 0 } };
        const char *ids[] = { "7d3c1f8e-3b1a-4c6e-9a52-0f4e8b2d6a10", "0b6f0a4e-2d5c-4e1f-8b7a-93c2d1e0f5a4" };
        const char *spe_ids[] = { "c0ffee00-0000-4000-8000-000000000001" };
        struct push_series series[] = {
                { labels, ELEMENTSOF(labels), profiles, ids, 2 },
                { spe_labels, 1, &profiles[1], spe_ids, 1 },
        };
        struct strbuf out = STRBUF_INIT;
        char err[MESSAGE_MAX] = "";
        FILE *f;

        if (push_request_encode(series, ELEMENTSOF(series), &out, err, sizeof(err)) < 0) {
                fprintf(stderr, "encode: %s\n", err);
                return 1;
        }
        f = fopen(path, "we");
        if (!f || fwrite(out.buf, 1, out.len, f) != out.len || fclose(f) != 0) {
                perror(path);
                return 1;
        }
        strbuf_done(&out);
        return 0;
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_label_name_check),
                cmocka_unit_test(test_labels_good),
                cmocka_unit_test(test_labels_bad),
                cmocka_unit_test(test_labels_count_and_lengths),
                cmocka_unit_test(test_uuid4),
                cmocka_unit_test(test_encode_bytes),
                cmocka_unit_test(test_encode_decode),
                cmocka_unit_test(test_encode_refused),
                cmocka_unit_test(test_retry_after),
        };

        if (argc == 3 && streq(argv[1], "--write"))
                return write_request(argv[2]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
