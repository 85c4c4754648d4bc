/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "basic-auth.h"

#include <crypt.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "macro.h"
#include "strbuf.h"
#include "web-config.h"

#define BASIC_AUTH_DIGEST_BYTES 32 /* SHA-256 */

/*
 * The hash a user that does not exist is checked against: bcrypt of a
 * random password at cost 10, the cost htpasswd -B uses by default. The
 * toolkit does the same (web/handler.go).
 */
#define BASIC_AUTH_NO_SUCH_USER_HASH "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

struct verdict {
        uint8_t digest[BASIC_AUTH_DIGEST_BYTES];
        uint64_t used; /* a tick of the cache's clock; 0: empty */
        bool ok;
};

struct basic_auth {
        pthread_mutex_t lock;
        struct verdict cache[BASIC_AUTH_CACHE_SIZE];
        uint64_t clock;
        struct basic_auth_stats stats;
};

struct basic_auth *basic_auth_new(void) {
        struct basic_auth *a = xcalloc(1, sizeof(*a));

        pthread_mutex_init(&a->lock, NULL);
        return a;
}

struct basic_auth *basic_auth_free(struct basic_auth *a) {
        if (!a)
                return NULL;
        pthread_mutex_destroy(&a->lock);
        explicit_bzero(a->cache, sizeof(a->cache));
        free(a);
        return NULL;
}

static const char *hash_of(const struct web_config *c, const char *user, bool *ret_known) {
        for (size_t i = 0; i < c->n_users; i++)
                if (streq(c->users[i].name, user)) {
                        *ret_known = true;
                        return c->users[i].hash;
                }
        *ret_known = false;
        return BASIC_AUTH_NO_SUCH_USER_HASH;
}

/* SHA-256 of user, password and hash, each with its NUL: no two triples give the same input. */
static void digest_of(const char *user, const char *password, const char *hash,
                      uint8_t ret[static BASIC_AUTH_DIGEST_BYTES]) {
        gnutls_hash_hd_t h;

        if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
                oom();
        gnutls_hash(h, user, strlen(user) + 1);
        gnutls_hash(h, password, strlen(password) + 1);
        gnutls_hash(h, hash, strlen(hash) + 1);
        gnutls_hash_deinit(h, ret);
}

/* Under a->lock. */
static struct verdict *find(struct basic_auth *a, const uint8_t digest[static BASIC_AUTH_DIGEST_BYTES]) {
        for (size_t i = 0; i < BASIC_AUTH_CACHE_SIZE; i++)
                if (a->cache[i].used && memcmp(a->cache[i].digest, digest, BASIC_AUTH_DIGEST_BYTES) == 0)
                        return &a->cache[i];
        return NULL;
}

int basic_auth_cached(struct basic_auth *a, const struct web_config *c, const char *user, const char *password) {
        uint8_t digest[BASIC_AUTH_DIGEST_BYTES];
        struct verdict *v;
        bool known;
        int r = -ENOENT;

        digest_of(user, password, hash_of(c, user, &known), digest);
        pthread_mutex_lock(&a->lock);
        v = find(a, digest);
        if (v) {
                v->used = ++a->clock;
                a->stats.hits++;
                r = v->ok && known;
        }
        pthread_mutex_unlock(&a->lock);
        return r;
}

static bool equal_constant_time(const char *x, const char *y, size_t n) {
        volatile unsigned char d = 0;

        for (size_t i = 0; i < n; i++)
                d |= (unsigned char) (x[i] ^ y[i]);
        return d == 0;
}

bool basic_auth_verify(struct basic_auth *a, const struct web_config *c, const char *user, const char *password) {
        uint8_t digest[BASIC_AUTH_DIGEST_BYTES];
        struct crypt_data *data = xcalloc(1, sizeof(*data)); /* 32 KiB: not for a stack */
        const char *hash, *out;
        struct verdict *v;
        bool known, ok;
        size_t n;

        hash = hash_of(c, user, &known);
        /*
         * crypt_rn() is libxcrypt's crypt_r() that returns NULL on failure;
         * sanitizers intercept crypt_r() and, built against glibc's, find no
         * real one to call behind them in libxcrypt (a NULL call under TSan).
         */
        out = crypt_rn(password, hash, data, (int) sizeof(*data));
        n = strlen(hash);
        /* A failure gives NULL or a string starting with '*' that no bcrypt hash equals. */
        ok = out && strlen(out) == n && equal_constant_time(out, hash, n) && known;
        explicit_bzero(data, sizeof(*data));
        free(data);

        digest_of(user, password, hash, digest);
        pthread_mutex_lock(&a->lock);
        a->stats.bcrypts++;
        v = find(a, digest);
        if (!v) {
                v = &a->cache[0];
                for (size_t i = 1; i < BASIC_AUTH_CACHE_SIZE && v->used; i++)
                        if (a->cache[i].used < v->used)
                                v = &a->cache[i];
                if (v->used)
                        a->stats.evictions++;
                memcpy(v->digest, digest, sizeof(digest));
        }
        v->ok = ok;
        v->used = ++a->clock;
        pthread_mutex_unlock(&a->lock);
        return ok;
}

void basic_auth_get_stats(struct basic_auth *a, struct basic_auth_stats *ret) {
        pthread_mutex_lock(&a->lock);
        *ret = a->stats;
        pthread_mutex_unlock(&a->lock);
}
