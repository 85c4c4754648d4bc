/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What C tests do with the files the generator writes: read a text file
 * whole, look up a key of its truth summary (PREFIX.truth.txt, "key=value"
 * lines), and remove a scratch directory. Header-only, for tests.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "strbuf.h"

/* The whole file as a string (free it), or NULL when it cannot be opened. */
static inline char *test_read_text(const char *path) {
        struct strbuf sb = STRBUF_INIT;
        char buf[BUFSIZ];
        size_t n;
        FILE *f = fopen(path, "re");

        if (!f)
                return NULL;
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
                strbuf_append(&sb, buf, n);
        fclose(f);
        return strbuf_steal(&sb, NULL);
}

/* The value of "key=value" in a truth summary (free it), or NULL. */
static inline char *test_truth_get(const char *truth, const char *key) {
        size_t klen = strlen(key);

        for (const char *l = truth; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, key, klen) == 0 && l[klen] == '=') {
                        const char *v = l + klen + 1;

                        return strndup(v, strcspn(v, "\n"));
                }
        return NULL;
}

/* Remove dir and the files in it (one level: the tests make no subdirectories there). */
static inline void test_rm_tmpdir(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *e;

        while (d && (e = readdir(d)))
                if (!streq(e->d_name, ".") && !streq(e->d_name, ".."))
                        unlinkat(dirfd(d), e->d_name, 0);
        if (d)
                closedir(d);
        rmdir(dir);
}
