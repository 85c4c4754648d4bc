/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The push spool (exporters/push-spool.h) against a temp directory per test.
 * What is on disk is checked with stat() and readdir() here, and the corrupt
 * files are written by this test's own encoder of the format the header
 * documents, not by the code under test.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "macro.h"
#include "push-spool.h"

#define HDR 32U
#define ERR_MAX MESSAGE_MAX

static char *make_tmpdir(void) {
        char *d = strdup("/tmp/test-push-spool-XXXXXX");

        assert_non_null(d);
        assert_non_null(mkdtemp(d));
        return d;
}

static void rm_rf(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        char p[PATH_MAX];

        if (!d)
                return;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
                (void) unlink(p);
        }
        closedir(d);
        (void) rmdir(dir);
}

/* Files in dir and the sum of their st_size (lstat: symlinks are not followed). */
static size_t dir_usage(const char *dir, uint64_t *ret_bytes) {
        DIR *d = opendir(dir);
        struct dirent *de;
        uint64_t bytes = 0;
        size_t n = 0;
        char p[PATH_MAX];
        struct stat st;

        assert_non_null(d);
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
                assert_int_equal(lstat(p, &st), 0);
                bytes += (uint64_t) st.st_size;
                n++;
        }
        closedir(d);
        if (ret_bytes)
                *ret_bytes = bytes;
        return n;
}

static bool file_exists(const char *dir, const char *name) {
        char p[PATH_MAX];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return lstat(p, &st) == 0;
}

static void write_path(const char *p, const void *data, size_t len) {
        FILE *f;

        f = fopen(p, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
}

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
        char p[PATH_MAX];

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        write_path(p, data, len);
}

/* This test's encoder of the documented format: magic, version, CRC-32 over
 * bytes 16..31 and the body, time_ns, length, all little-endian. */
static size_t encode(uint8_t *out, uint64_t time_ns, const void *body, size_t len) {
        uLong crc;

        memcpy(out, "ARMPSPL1", 8);
        for (int i = 0; i < 4; i++)
                out[8 + i] = (uint8_t) (1U >> (8 * i));
        for (int i = 0; i < 8; i++) {
                out[16 + i] = (uint8_t) (time_ns >> (8 * i));
                out[24 + i] = (uint8_t) ((uint64_t) len >> (8 * i));
        }
        crc = crc32(0L, Z_NULL, 0);
        crc = crc32(crc, out + 16, 16);
        crc = crc32(crc, body, (uInt) len);
        for (int i = 0; i < 4; i++)
                out[12 + i] = (uint8_t) (crc >> (8 * i));
        memcpy(out + HDR, body, len);
        return HDR + len;
}

static struct push_spool *open_ok(const char *dir, uint64_t max_bytes) {
        struct push_spool *s = NULL;
        char err[ERR_MAX] = "";
        int r;

        r = push_spool_open(dir, max_bytes, &s, err, sizeof(err));
        if (r < 0)
                fail_msg("push_spool_open(%s): %d %s", dir, r, err);
        assert_non_null(s);
        return s;
}

static void expect_oldest(struct push_spool *s, uint64_t seq, uint64_t time_ns, const char *body) {
        struct push_spool_entry e = { .body = STRBUF_INIT };

        assert_int_equal(push_spool_oldest(s, &e), 0);
        assert_int_equal(e.seq, seq);
        assert_int_equal(e.time_ns, time_ns);
        assert_int_equal(e.body.len, strlen(body));
        assert_memory_equal(e.body.buf, body, strlen(body));
        assert_int_equal(e.body.buf[e.body.len], 0);
        push_spool_entry_done(&e);
}

static void test_order_across_reopen(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        struct push_spool *s;
        struct push_spool_entry e;
        struct push_spool_stats st;
        struct stat sb;
        char p[PATH_MAX];

        (void) state;
        s = open_ok(dir, 1 << 20);
        assert_true(push_spool_empty(s));
        assert_int_equal(push_spool_oldest(s, &e), -ENOENT);
        assert_int_equal(push_spool_put(s, 1000, "one", 3), 0);
        assert_int_equal(push_spool_put(s, 2000, "two", 3), 0);
        assert_int_equal(push_spool_put(s, 3000, "three", 5), 0);
        assert_false(push_spool_empty(s));
        push_spool_get_stats(s, &st);
        assert_int_equal(st.files, 3);
        assert_int_equal(st.bytes, 3 * HDR + 11);
        s = push_spool_free(s);

        /* The names are the seqs; the files 0600. */
        snprintf(p, sizeof(p), "%s/0000000000000001.req", dir);
        assert_int_equal(stat(p, &sb), 0);
        assert_int_equal(sb.st_mode & 07777, 0600);
        assert_int_equal(sb.st_size, HDR + 3);
        assert_true(file_exists(dir, "0000000000000003.req"));

        s = open_ok(dir, 1 << 20);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.files, 3);
        assert_int_equal(st.bytes, 3 * HDR + 11);
        expect_oldest(s, 1, 1000, "one");
        /* oldest() does not consume. */
        expect_oldest(s, 1, 1000, "one");
        assert_int_equal(push_spool_remove(s, 1), 0);
        assert_int_equal(push_spool_remove(s, 1), -ENOENT);
        assert_false(file_exists(dir, "0000000000000001.req"));
        expect_oldest(s, 2, 2000, "two");
        /* After a reopen the next seq is above the largest found. */
        assert_int_equal(push_spool_put(s, 4000, "four", 4), 0);
        assert_true(file_exists(dir, "0000000000000004.req"));
        s = push_spool_free(s);

        s = open_ok(dir, 1 << 20);
        expect_oldest(s, 2, 2000, "two");
        assert_int_equal(push_spool_remove(s, 2), 0);
        expect_oldest(s, 3, 3000, "three");
        assert_int_equal(push_spool_remove(s, 3), 0);
        expect_oldest(s, 4, 4000, "four");
        assert_int_equal(push_spool_remove(s, 4), 0);
        assert_true(push_spool_empty(s));
        assert_int_equal(push_spool_oldest(s, &e), -ENOENT);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.files, 0);
        assert_int_equal(st.bytes, 0);
        assert_int_equal(st.dropped_full + st.dropped_age + st.dropped_corrupt + st.temp_removed, 0);
        s = push_spool_free(s);
        assert_int_equal(dir_usage(dir, NULL), 0);
        rm_rf(dir);
}

static void test_cap(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        const uint64_t max = 3 * (HDR + 100) + 10;
        struct push_spool *s;
        struct push_spool_stats st;
        char body[100];

        (void) state;
        s = open_ok(dir, max);
        for (int i = 0; i < 10; i++) {
                uint64_t bytes;
                size_t n;

                memset(body, 'a' + i, sizeof(body));
                assert_int_equal(push_spool_put(s, (uint64_t) i, body, sizeof(body)), 0);
                n = dir_usage(dir, &bytes);
                assert_true(bytes <= max);
                assert_int_equal(n, MIN(i + 1, 3));
                push_spool_get_stats(s, &st);
                assert_int_equal(st.files, n);
                assert_int_equal(st.bytes, bytes);
                assert_int_equal(st.dropped_full, (uint64_t) MAX(i + 1 - 3, 0));
        }
        /* The oldest went: 7, 8, 9 (seqs 8..10) remain. */
        {
                struct push_spool_entry e;

                assert_int_equal(push_spool_oldest(s, &e), 0);
                assert_int_equal(e.seq, 8);
                assert_int_equal(e.time_ns, 7);
                assert_int_equal(e.body.len, 100);
                assert_int_equal(e.body.buf[0], 'a' + 7);
                push_spool_entry_done(&e);
        }
        s = push_spool_free(s);

        /* A smaller cap at open drops the oldest to fit. */
        s = open_ok(dir, 2 * (HDR + 100));
        push_spool_get_stats(s, &st);
        assert_int_equal(st.files, 2);
        assert_int_equal(st.dropped_full, 1);
        {
                struct push_spool_entry e;

                assert_int_equal(push_spool_oldest(s, &e), 0);
                assert_int_equal(e.seq, 9);
                assert_int_equal(e.time_ns, 8);
                assert_int_equal(e.body.buf[99], 'a' + 8);
                push_spool_entry_done(&e);
        }
        s = push_spool_free(s);
        rm_rf(dir);
}

static void test_too_big(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        const uint64_t max = HDR + 64;
        struct push_spool *s;
        struct push_spool_stats st;
        char body[65];

        (void) state;
        memset(body, 'x', sizeof(body));
        s = open_ok(dir, max);
        assert_int_equal(push_spool_put(s, 1, body, 10), 0);
        /* One byte over the cap alone: refused, counted, the older kept. */
        assert_int_equal(push_spool_put(s, 2, body, 65), -EFBIG);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.dropped_full, 1);
        assert_int_equal(st.files, 1);
        assert_int_equal(dir_usage(dir, NULL), 1);
        /* Exactly the cap fits (the older one goes). */
        assert_int_equal(push_spool_put(s, 3, body, 64), 0);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.dropped_full, 2);
        assert_int_equal(st.files, 1);
        assert_int_equal(st.bytes, max);
        s = push_spool_free(s);
        rm_rf(dir);
}

static void test_drop_older(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        struct push_spool *s;
        struct push_spool_stats st;

        (void) state;
        s = open_ok(dir, 1 << 20);
        assert_int_equal(push_spool_put(s, 100, "a", 1), 0);
        assert_int_equal(push_spool_put(s, 300, "b", 1), 0);
        assert_int_equal(push_spool_put(s, 200, "c", 1), 0);   /* out of time order */
        assert_int_equal(push_spool_put(s, 250, "d", 1), 0);
        assert_int_equal(push_spool_drop_older(s, 250), 2);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.dropped_age, 2);
        assert_int_equal(st.files, 2);
        assert_int_equal(dir_usage(dir, NULL), 2);
        assert_false(file_exists(dir, "0000000000000001.req"));
        assert_false(file_exists(dir, "0000000000000003.req"));
        expect_oldest(s, 2, 300, "b");
        assert_int_equal(push_spool_drop_older(s, 250), 0);
        assert_int_equal(push_spool_drop_older(s, UINT64_MAX), 2);
        assert_true(push_spool_empty(s));
        push_spool_get_stats(s, &st);
        assert_int_equal(st.dropped_age, 4);
        assert_int_equal(st.bytes, 0);
        s = push_spool_free(s);
        rm_rf(dir);
}

static void test_temp_removed(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        struct push_spool *s;
        struct push_spool_stats st;
        uint8_t buf[HDR + 16];
        char p[PATH_MAX];
        size_t n;

        (void) state;
        /* A kill mid-put leaves a temp file, complete or not. */
        n = encode(buf, 5, "complete", 8);
        write_file(dir, ".tmp-0000000000000002.req", buf, n);
        write_file(dir, ".tmp-x", buf, 7);
        n = encode(buf, 1, "kept", 4);
        write_file(dir, "0000000000000001.req", buf, n);
        /* Not ours: left alone. */
        write_file(dir, "README", "hello", 5);
        snprintf(p, sizeof(p), "%s/.tmp-dir", dir);
        assert_int_equal(mkdir(p, 0700), 0);
        snprintf(p, sizeof(p), "%s/0000000000000003.req", dir);
        assert_int_equal(mkdir(p, 0700), 0);

        s = open_ok(dir, 1 << 20);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.temp_removed, 2);
        assert_int_equal(st.files, 1);
        assert_int_equal(st.dropped_corrupt, 0);
        assert_false(file_exists(dir, ".tmp-x"));
        assert_false(file_exists(dir, ".tmp-0000000000000002.req"));
        assert_true(file_exists(dir, "README"));
        assert_int_equal(dir_usage(dir, NULL), 4);
        expect_oldest(s, 1, 1, "kept");
        /* The next seq is above the directory's name: no put() onto it. */
        assert_int_equal(push_spool_put(s, 2, "next", 4), 0);
        assert_true(file_exists(dir, "0000000000000004.req"));
        assert_true(push_spool_remove(s, 4) == 0);
        s = push_spool_free(s);
        snprintf(p, sizeof(p), "%s/.tmp-dir", dir);
        assert_int_equal(rmdir(p), 0);
        snprintf(p, sizeof(p), "%s/0000000000000003.req", dir);
        assert_int_equal(rmdir(p), 0);
        rm_rf(dir);
}

static void test_corrupt(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        static const char body[] = "a body of a request";
        const size_t blen = sizeof(body) - 1;
        uint8_t buf[HDR + 64];
        struct push_spool *s;
        struct push_spool_stats st;
        char p[PATH_MAX], target[PATH_MAX];
        size_t n;

        (void) state;
        /* Good: written by this test's encoder (seq 2) and by put() (seq 9). */
        n = encode(buf, 22, body, blen);
        write_file(dir, "0000000000000002.req", buf, n);
        /* Truncated header. */
        write_file(dir, "0000000000000003.req", buf, 20);
        /* Truncated body. */
        write_file(dir, "0000000000000004.req", buf, n - 3);
        /* A flipped body byte. */
        buf[HDR + 5] ^= 0x01;
        write_file(dir, "0000000000000005.req", buf, n);
        buf[HDR + 5] ^= 0x01;
        /* A flipped time byte (the CRC covers it too). */
        buf[17] ^= 0x80;
        write_file(dir, "0000000000000006.req", buf, n);
        buf[17] ^= 0x80;
        /* Wrong magic. */
        buf[0] = 'B';
        write_file(dir, "0000000000000007.req", buf, n);
        buf[0] = 'A';
        /* Trailing garbage. */
        memcpy(buf + n, "xyz", 3);
        write_file(dir, "0000000000000008.req", buf, n + 3);
        /* A symlink under an entry name, to a good file: not followed, removed. */
        snprintf(target, sizeof(target), "%s.target", dir);
        write_path(target, buf, n);
        snprintf(p, sizeof(p), "%s/000000000000000a.req", dir);
        assert_int_equal(symlink(target, p), 0);
        /* Wrong version. */
        buf[8] = 2;
        write_file(dir, "000000000000000b.req", buf, n);
        buf[8] = 1;

        s = open_ok(dir, 1 << 20);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.dropped_corrupt, 8);
        assert_int_equal(st.files, 1);
        assert_int_equal(st.bytes, n);
        assert_int_equal(dir_usage(dir, NULL), 1);
        assert_true(file_exists(dir, "0000000000000002.req"));
        assert_int_equal(access(target, F_OK), 0);     /* the link's target is untouched */
        (void) unlink(target);

        /* The next seq is above the largest name seen, a corrupt one's too. */
        assert_int_equal(push_spool_put(s, 99, "new", 3), 0);
        push_spool_get_stats(s, &st);
        assert_int_equal(st.files, 2);
        expect_oldest(s, 2, 22, body);

        /* Damage found when read: removed, counted, the next one served. */
        buf[HDR] ^= 0xff;
        write_file(dir, "0000000000000002.req", buf, n);
        {
                struct push_spool_entry e;

                assert_int_equal(push_spool_oldest(s, &e), 0);
                assert_int_equal(e.time_ns, 99);
                assert_int_equal(e.body.len, 3);
                assert_memory_equal(e.body.buf, "new", 3);
                assert_int_equal(e.seq, 0xc);
                push_spool_entry_done(&e);
        }
        push_spool_get_stats(s, &st);
        assert_int_equal(st.dropped_corrupt, 9);
        assert_int_equal(st.files, 1);
        assert_false(file_exists(dir, "0000000000000002.req"));
        s = push_spool_free(s);
        rm_rf(dir);
}

/* A writer killed at any point leaves entries that are whole (none corrupt)
 * and at most one temp file, removed at the next open. Where the kill lands
 * varies from run to run; the assertions hold wherever it does. */
static void test_sigkill(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        static char body[256 << 10];
        struct push_spool *s;
        struct push_spool_stats st;
        int pipefd[2], status;
        pid_t pid;
        char c;

        (void) state;
        memset(body, 'k', sizeof(body));
        assert_int_equal(pipe(pipefd), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct push_spool *w = NULL;
                char err[ERR_MAX];

                close(pipefd[0]);
                if (push_spool_open(dir, UINT64_C(8) << 20, &w, err, sizeof(err)) < 0)
                        _exit(1);
                for (uint64_t i = 1;; i++) {
                        if (push_spool_put(w, i, body, sizeof(body)) < 0)
                                _exit(1);
                        if (i == 4 && write(pipefd[1], "x", 1) != 1)
                                _exit(1);
                }
        }
        close(pipefd[1]);
        /* Kill it while it keeps writing, after 4 puts. */
        assert_int_equal(read(pipefd[0], &c, 1), 1);
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        close(pipefd[0]);

        s = open_ok(dir, UINT64_C(8) << 20);
        push_spool_get_stats(s, &st);
        print_message("killed with %" PRIu64 " entries, %" PRIu64 " dropped for the cap, %" PRIu64
                      " temp file(s) left\n", st.files, st.dropped_full, st.temp_removed);
        assert_int_equal(st.dropped_corrupt, 0);
        assert_true(st.temp_removed <= 1);
        assert_true(st.files >= 4);
        assert_int_equal(dir_usage(dir, NULL), st.files);
        assert_true(st.bytes <= UINT64_C(8) << 20);
        /* Every one reads back whole, oldest first, times in put() order. */
        for (uint64_t want = 0;;) {
                struct push_spool_entry e;

                if (push_spool_oldest(s, &e) == -ENOENT)
                        break;
                assert_true(e.time_ns > want);
                want = e.time_ns;
                assert_int_equal(e.body.len, sizeof(body));
                assert_memory_equal(e.body.buf, body, sizeof(body));
                assert_int_equal(push_spool_remove(s, e.seq), 0);
                push_spool_entry_done(&e);
        }
        push_spool_get_stats(s, &st);
        assert_int_equal(st.dropped_corrupt, 0);
        s = push_spool_free(s);
        rm_rf(dir);
}

static void test_open_errors(void **state) {
        _cleanup_free_ char *dir = make_tmpdir();
        struct push_spool *s = NULL;
        char err[ERR_MAX], p[PATH_MAX];
        struct stat sb;
        int r;

        (void) state;
        /* Created when missing, 0700. */
        snprintf(p, sizeof(p), "%s/spool", dir);
        s = open_ok(p, 1 << 20);
        s = push_spool_free(s);
        assert_int_equal(stat(p, &sb), 0);
        assert_true(S_ISDIR(sb.st_mode));
        assert_int_equal(sb.st_mode & 07777, 0700);
        /* The probe leaves nothing behind. */
        assert_int_equal(dir_usage(p, NULL), 0);
        (void) rmdir(p);

        /* A parent that is a file. */
        write_file(dir, "file", "x", 1);
        snprintf(p, sizeof(p), "%s/file/spool", dir);
        err[0] = 0;
        r = push_spool_open(p, 1 << 20, &s, err, sizeof(err));
        assert_int_equal(r, -ENOTDIR);
        assert_null(s);
        assert_non_null(strstr(err, p));

        /* The path is a file. */
        snprintf(p, sizeof(p), "%s/file", dir);
        err[0] = 0;
        r = push_spool_open(p, 1 << 20, &s, err, sizeof(err));
        assert_int_equal(r, -ENOTDIR);
        assert_non_null(strstr(err, p));

        /* A directory root cannot write in: procfs. */
        err[0] = 0;
        r = push_spool_open("/proc/self", 1 << 20, &s, err, sizeof(err));
        assert_true(r < 0);
        assert_null(s);
        assert_non_null(strstr(err, "spool directory /proc/self: not writable: "));

        /* Nor create one in. */
        err[0] = 0;
        r = push_spool_open("/proc/armprofd-spool", 1 << 20, &s, err, sizeof(err));
        assert_true(r < 0);
        assert_null(s);
        assert_non_null(strstr(err, "/proc/armprofd-spool"));

        rm_rf(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order_across_reopen),
                cmocka_unit_test(test_cap),
                cmocka_unit_test(test_too_big),
                cmocka_unit_test(test_drop_older),
                cmocka_unit_test(test_temp_removed),
                cmocka_unit_test(test_corrupt),
                cmocka_unit_test(test_sigkill),
                cmocka_unit_test(test_open_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
