/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * HTTP basic authentication (RFC 7617) against the web configuration's
 * basic_auth_users: bcrypt hashes checked with libxcrypt's crypt_r(), the
 * result compared in constant time. bcrypt is slow on purpose (about 50 ms
 * at cost 10), so verdicts are cached, as the exporter toolkit does: keyed
 * by a SHA-256 of the user, the password and the hash, so that a new
 * password or a reloaded file never meets an old verdict, and no password
 * is kept. A user that does not exist costs a bcrypt too (against a fixed
 * hash), so timing tells no user names apart.
 *
 * The cache is bounded (BASIC_AUTH_CACHE_SIZE, the least recently used
 * verdict goes) and thread-safe; basic_auth_verify() may run on any thread
 * (the HTTP server runs it off its event thread).
 */

#include <stdbool.h>
#include <stdint.h>

struct web_config;

/* Credentials in use at once: a fleet's scrapers share a few. Each entry is 48 bytes. */
#define BASIC_AUTH_CACHE_SIZE 256

struct basic_auth;

struct basic_auth_stats {
        uint64_t bcrypts;   /* verdicts computed */
        uint64_t hits;      /* verdicts found in the cache */
        uint64_t evictions; /* verdicts dropped for room */
};

struct basic_auth *basic_auth_new(void);
struct basic_auth *basic_auth_free(struct basic_auth *a);

/* The cached verdict: 1 accepted, 0 refused, -ENOENT none yet (basic_auth_verify() computes it). */
int basic_auth_cached(struct basic_auth *a, const struct web_config *c, const char *user, const char *password);

/* Computes the verdict (a bcrypt), caches it and returns it: true when the password is the user's. */
bool basic_auth_verify(struct basic_auth *a, const struct web_config *c, const char *user, const char *password);

void basic_auth_get_stats(struct basic_auth *a, struct basic_auth_stats *ret);
