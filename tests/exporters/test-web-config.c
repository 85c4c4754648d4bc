/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The web configuration parser against the exporter toolkit's rules (its
 * docs/web-configuration.md and web/testdata), and basic authentication
 * against bcrypt hashes made elsewhere: the toolkit's test users (alice's
 * password is alice123, carol's carol123: web/handler_test.go) and the
 * crypt_blowfish test vector "U*U".
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "basic-auth.h"
#include "macro.h"
#include "web-config.h"

#define ALICE "$2y$12$1DpfPeqF9HzHJt.EWswy1exHluGfbhnn3yXhR7Xes6m3WJqFg0Wby"
#define CAROL "$2y$10$qRTBuFoULoYNA7AQ/F3ck.trZBPyjV64.oA4ZsSBCIWvXuvQlQTuu"
#define UU "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"

static struct web_config *parse_ok(const char *yaml) {
        struct web_config *c = NULL;
        char err[MESSAGE_MAX] = "";

        if (web_config_parse(yaml, strlen(yaml), "/etc/armprofd", &c, err, sizeof(err)) < 0)
                fail_msg("refused: %s\n%s", err, yaml);
        return c;
}

static void parse_fails(const char *yaml, const char *want) {
        struct web_config *c = NULL;
        char err[MESSAGE_MAX] = "";

        if (web_config_parse(yaml, strlen(yaml), "/etc/armprofd", &c, err, sizeof(err)) >= 0)
                fail_msg("accepted:\n%s", yaml);
        assert_null(c);
        if (!strstr(err, want))
                fail_msg("'%s' does not say '%s'", err, want);
}

static void test_node_exporter_example(void **state) {
        /* The toolkit's documented example, as a node_exporter user has it. */
        struct web_config *c = parse_ok(
                "tls_server_config:\n"
                "  cert_file: server.crt\n"
                "  key_file: /etc/ssl/private/server.key\n"
                "  client_auth_type: RequireAndVerifyClientCert\n"
                "  client_ca_file: ca.crt\n"
                "  min_version: TLS13\n"
                "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_CBC_SHA]\n"
                "  curve_preferences:\n    - X25519\n    - CurveP384\n"
                "  prefer_server_cipher_suites: false\n"
                "http_server_config:\n"
                "  http2: false\n"
                "  headers:\n"
                "    X-Frame-Options: sameorigin\n"
                "    Strict-Transport-Security: max-age=31536000; includeSubDomains\n"
                "basic_auth_users:\n"
                "  alice: " ALICE "\n"
                "  'carol': \"" CAROL "\"\n"
                "rate_limit:\n  burst: 5\n  interval: 250ms\n");

        assert_true(c->tls.enabled);
        assert_string_equal(c->tls.cert_file, "/etc/armprofd/server.crt");
        assert_string_equal(c->tls.key_file, "/etc/ssl/private/server.key");
        assert_string_equal(c->tls.client_ca_file, "/etc/armprofd/ca.crt");
        assert_int_equal(c->tls.client_auth, WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY);
        assert_int_equal(c->tls.min_version, WEB_TLS13);
        assert_int_equal(c->tls.max_version, WEB_TLS13);
        assert_int_equal(c->tls.n_cipher_suites, 2);
        assert_int_equal(c->tls.cipher_suites[0], 0xc02f);
        assert_int_equal(c->tls.cipher_suites[1], 0x002f);
        assert_int_equal(c->tls.n_curves, 2);
        assert_string_equal(c->tls.curves[1], "GROUP-SECP384R1");
        assert_false(c->tls.prefer_server_cipher_suites);
        assert_false(c->http2);
        assert_int_equal(c->n_headers, 2);
        assert_string_equal(c->headers[1].value, "max-age=31536000; includeSubDomains");
        assert_int_equal(c->n_users, 2);
        assert_string_equal(c->users[1].name, "carol");
        assert_string_equal(c->users[1].hash, CAROL);
        assert_int_equal(c->rate_burst, 5);
        assert_int_equal(c->rate_interval_usec, 250000);
        assert_true(web_config_authenticates(c));
        web_config_unref(c);
}

static void test_defaults(void **state) {
        static const char *const empty[] = { "", "# nothing\n", "---\n", "tls_server_config:\n", "{}\n" };

        for (size_t i = 0; i < ELEMENTSOF(empty); i++) {
                struct web_config *c = parse_ok(empty[i]);

                /* The toolkit's defaults: no TLS, TLS 1.2 to 1.3, the server's order, HTTP/2 on. */
                assert_false(c->tls.enabled);
                assert_int_equal(c->tls.min_version, WEB_TLS12);
                assert_int_equal(c->tls.max_version, WEB_TLS13);
                assert_true(c->tls.prefer_server_cipher_suites);
                assert_true(c->http2);
                assert_int_equal(c->n_users, 0);
                assert_false(web_config_authenticates(c));
                web_config_unref(c);
        }
}

static void test_errors_name_the_line(void **state) {
        /* The toolkit's bad testdata, and ours; each message names the line and what is wrong. */
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  foo: 1\n", "line 4: tls_server_config: unknown key 'foo'");
        parse_fails("junk: 1\n", "line 1: the web configuration: unknown key 'junk'");
        parse_fails("tls_server_config:\n  cert_file: a\n", "missing one of key or key_file");
        parse_fails("tls_server_config:\n  key_file: a\n", "missing one of cert or cert_file");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n",
                    "client CA's have been configured without a Client Auth Policy");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
                    "needs client_ca_file");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Sometimes\n",
                    "line 4: client_auth_type: unknown 'Sometimes'");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS111\n",
                    "line 4: min_version: unknown TLS version 'TLS111'");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n",
                    "min_version TLS13 is above max_version TLS12");
        /* Found by fuzz-web-config: a version range without certificates is checked too. */
        parse_fails("tls_server_config:\n\n  max_version: TLS10\n", "min_version TLS12 is above max_version TLS10");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites:\n    - TLS_INVENTED_CIPHER\n",
                    "line 5: cipher_suites: unknown cipher suite 'TLS_INVENTED_CIPHER'");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences: [CurveP257]\n",
                    "line 4: curve_preferences: unknown curve 'CurveP257'");
        parse_fails("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: TLS_RSA_WITH_AES_128_CBC_SHA\n",
                    "line 4: cipher_suites: a list was expected");
        parse_fails("http_server_config:\n  headers:\n    Content-Type: text/plain\n",
                    "line 3: headers: HTTP header 'Content-Type' can not be configured");
        parse_fails("http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
                    "line 3: headers: invalid value 'allow' for X-Frame-Options");
        parse_fails("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n",
                    "invalid value 'sniff' for X-Content-Type-Options");
        parse_fails("http_server_config:\n  headers:\n    Content-Security-Policy: \"a\\r\\nSet-Cookie: x\"\n",
                    "a value on one line was expected");
        parse_fails("http_server_config:\n  http2: maybe\n", "line 2: http2: 'maybe' is not a boolean");
        parse_fails("basic_auth_users:\n  alice: secret\n", "line 2: basic_auth_users: 'alice': not a bcrypt hash");
        parse_fails("basic_auth_users:\n  alice: $2y$03$1DpfPeqF9HzHJt.EWswy1exHluGfbhnn3yXhR7Xes6m3WJqFg0Wby\n",
                    "not a bcrypt hash");
        parse_fails("basic_auth_users:\n  alice: " ALICE "\n  alice: " CAROL "\n", "line 3: basic_auth_users: 'alice' given twice");
        parse_fails("basic_auth_users:\n  'a:b': " ALICE "\n", "cannot hold a colon");
        parse_fails("basic_auth_users:\n  - alice\n", "line 2: basic_auth_users: a mapping");
        parse_fails("tls_server_config:\n  cert_file: a\n  cert_file: b\n", "line 3: tls_server_config: 'cert_file' given twice");
        parse_fails("tls_server_config:\n  cert_file: \"a\\0b\"\n", "holds a NUL byte");
        parse_fails("rate_limit:\n  burst: -1\n", "line 2: burst");
        parse_fails("rate_limit:\n  interval: 2h\n", "line 2: interval");
        parse_fails("tls_server_config: [\n", "line 2:");
        parse_fails("a: 1\n---\nb: 2\n", "unknown key 'a'");
        parse_fails("{}\n---\nb: 2\n", "line 3: a second YAML document");
        parse_fails("- 1\n", "line 1: the web configuration: a mapping");
}

static void test_basic_auth(void **state) {
        struct web_config *c = parse_ok("basic_auth_users:\n  alice: " ALICE "\n  carol: " CAROL "\n  u: " UU "\n");
        struct basic_auth *a = basic_auth_new();
        struct basic_auth_stats st;

        assert_int_equal(basic_auth_cached(a, c, "carol", "carol123"), -ENOENT);
        assert_true(basic_auth_verify(a, c, "carol", "carol123"));
        assert_false(basic_auth_verify(a, c, "carol", "carol1234"));
        assert_false(basic_auth_verify(a, c, "carol", "alice123"));
        assert_true(basic_auth_verify(a, c, "alice", "alice123"));
        assert_true(basic_auth_verify(a, c, "u", "U*U"));
        assert_false(basic_auth_verify(a, c, "u", "U*U*"));
        /* The hash unknown users are checked against is bcrypt("fakepassword"): still refused. */
        assert_false(basic_auth_verify(a, c, "mallory", "fakepassword"));
        assert_false(basic_auth_verify(a, c, "", ""));

        /* Both verdicts are cached, and a hit costs no bcrypt. */
        assert_int_equal(basic_auth_cached(a, c, "carol", "carol123"), 1);
        assert_int_equal(basic_auth_cached(a, c, "carol", "carol1234"), 0);
        assert_int_equal(basic_auth_cached(a, c, "mallory", "fakepassword"), 0);
        basic_auth_get_stats(a, &st);
        assert_int_equal(st.bcrypts, 8);
        assert_int_equal(st.hits, 3);
        assert_int_equal(st.evictions, 0);

        /* A reloaded file with another hash for carol never meets the old verdict. */
        {
                struct web_config *c2 = parse_ok("basic_auth_users:\n  carol: " ALICE "\n");

                assert_int_equal(basic_auth_cached(a, c2, "carol", "carol123"), -ENOENT);
                assert_false(basic_auth_verify(a, c2, "carol", "carol123"));
                assert_true(basic_auth_verify(a, c2, "carol", "alice123"));
                web_config_unref(c2);
        }

        /* Bounded: BASIC_AUTH_CACHE_SIZE verdicts more push the oldest out, counted. */
        for (unsigned i = 0; i < BASIC_AUTH_CACHE_SIZE; i++) {
                char pw[DECIMAL_STR_MAX(unsigned)];

                snprintf(pw, sizeof(pw), "%u", i);
                assert_false(basic_auth_verify(a, c, "u", pw));
        }
        basic_auth_get_stats(a, &st);
        /* 10 verdicts were cached before: the 256 new ones push all 10 out. */
        assert_int_equal(st.evictions, 10);
        assert_int_equal(basic_auth_cached(a, c, "carol", "carol123"), -ENOENT);
        basic_auth_free(a);
        web_config_unref(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_node_exporter_example),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_errors_name_the_line),
                cmocka_unit_test(test_basic_auth),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
