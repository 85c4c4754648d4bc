/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/cgroup.c: what a cgroup path stands for, against a table of the
 * path shapes systemd and the container runtimes document, with the expected
 * names written here by hand; the /proc/PID/cgroup parser against files
 * written here; the id -> path map's bound; and, on this machine's cgroup2
 * mount (skipped with the reason when there is none, or it is not writable):
 * a cgroup made here is found by the scan under the id name_to_handle_at(2)
 * and stat(2) give its directory, and a child moved into it is reported in
 * it by its /proc/PID/cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "macro.h"
#include "strbuf.h"

#define ID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_B "f00dfacef00dfacef00dfacef00dfacef00dfacef00dfacef00dfacef00dface"
#define POD_UID "pod3f1d2c4e-5b6a-4d7c-8e9f-0a1b2c3d4e5f"
#define POD_SLICE "kubepods-burstable-pod3f1d2c4e_5b6a_4d7c_8e9f_0a1b2c3d4e5f.slice"

static const struct {
        const char *path;
        enum cgroup_kind kind;
        const char *service;
} shapes[] = {
        { "/", CGROUP_KIND_ROOT, "" },
        { "", CGROUP_KIND_ROOT, "" },
        /* systemd.unit(5), systemd.special(7): system services, sessions, the user manager's units. */
        { "/system.slice/nginx.service", CGROUP_KIND_UNIT, "nginx.service" },
        { "/system.slice/system-getty.slice/getty@tty1.service", CGROUP_KIND_UNIT, "getty@tty1.service" },
        { "/system.slice/postgresql@15-main.service/payload", CGROUP_KIND_UNIT, "postgresql@15-main.service" },
        { "/init.scope", CGROUP_KIND_UNIT, "init.scope" },
        { "/user.slice/user-1000.slice/session-3.scope", CGROUP_KIND_UNIT, "session-3.scope" },
        { "/user.slice/user-1000.slice/user@1000.service/init.scope", CGROUP_KIND_UNIT, "init.scope" },
        { "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-2291.scope", CGROUP_KIND_UNIT,
          "app-gnome-firefox-2291.scope" },
        { "/user.slice/user-1000.slice/user@1000.service/app.slice/syncthing.service", CGROUP_KIND_UNIT,
          "syncthing.service" },
        /* Docker: systemd cgroup driver, then cgroupfs. */
        { "/system.slice/docker-" ID_A ".scope", CGROUP_KIND_CONTAINER, ID_A },
        { "/docker/" ID_A, CGROUP_KIND_CONTAINER, ID_A },
        /* A container running systemd: its units are the container's. */
        { "/docker/" ID_B "/system.slice/nginx.service", CGROUP_KIND_CONTAINER, ID_B },
        /* Kubernetes, systemd driver: containerd's CRI plugin and cri-o; cri-o's monitor is no container. */
        { "/kubepods.slice/kubepods-burstable.slice/" POD_SLICE "/cri-containerd-" ID_A ".scope",
          CGROUP_KIND_CONTAINER, ID_A },
        { "/kubepods.slice/kubepods-burstable.slice/" POD_SLICE "/crio-" ID_B ".scope", CGROUP_KIND_CONTAINER, ID_B },
        { "/kubepods.slice/kubepods-burstable.slice/" POD_SLICE "/crio-conmon-" ID_B ".scope", CGROUP_KIND_UNIT,
          "crio-conmon-" ID_B ".scope" },
        /* Kubernetes, cgroupfs driver; the pod's own cgroup is no container. */
        { "/kubepods/burstable/" POD_UID "/" ID_A, CGROUP_KIND_CONTAINER, ID_A },
        { "/kubepods/besteffort/" POD_UID, CGROUP_KIND_PATH, "/kubepods/besteffort/" POD_UID },
        /* Podman: rootful, rootless under the user's manager, and its split "container" leaf. */
        { "/machine.slice/libpod-" ID_B ".scope", CGROUP_KIND_CONTAINER, ID_B },
        { "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID_A ".scope", CGROUP_KIND_CONTAINER,
          ID_A },
        { "/machine.slice/libpod-" ID_B ".scope/container", CGROUP_KIND_CONTAINER, ID_B },
        { "/machine.slice/libpod-conmon-" ID_B ".scope", CGROUP_KIND_UNIT, "libpod-conmon-" ID_B ".scope" },
        /* Anything else is its path. */
        { "/system.slice", CGROUP_KIND_PATH, "/system.slice" },
        { "/batch/job-17/worker", CGROUP_KIND_PATH, "/batch/job-17/worker" },
        { "/docker/0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF", CGROUP_KIND_PATH,
          "/docker/0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF" },
        { "/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", CGROUP_KIND_PATH,
          "/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde" },
        { "/system.slice/docker-" ID_A ".service", CGROUP_KIND_UNIT, "docker-" ID_A ".service" },
        { "/x/.service", CGROUP_KIND_PATH, "/x/.service" },
};

static void test_service(void **state) {
        char buf[PATH_MAX], small[8];

        for (size_t i = 0; i < ELEMENTSOF(shapes); i++) {
                memset(buf, 'x', sizeof(buf));
                print_message("%s\n", shapes[i].path);
                assert_int_equal(cgroup_service(shapes[i].path, buf, sizeof(buf)), shapes[i].kind);
                assert_string_equal(buf, shapes[i].service);
        }
        /* Cut to the buffer. */
        assert_int_equal(cgroup_service("/system.slice/nginx.service", small, sizeof(small)), CGROUP_KIND_UNIT);
        assert_string_equal(small, "nginx.s");
        assert_string_equal(cgroup_kind_to_string(CGROUP_KIND_CONTAINER), "container");
        assert_string_equal(cgroup_kind_to_string(CGROUP_KIND_UNIT), "unit");
        assert_null(cgroup_kind_to_string((enum cgroup_kind) 42));
}

static void test_parse_proc(void **state) {
        static const char hybrid[] = "12:memory:/user.slice\n1:name=systemd:/user.slice/session-2.scope\n"
                                     "0::/user.slice/user-0.slice/session-2.scope\n";
        static const char deleted[] = "0::/system.slice/gone.service (deleted)\n";
        char buf[PATH_MAX], small[8];

        assert_int_equal(cgroup_parse_proc(hybrid, strlen(hybrid), buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/user.slice/user-0.slice/session-2.scope");
        assert_int_equal(cgroup_parse_proc("0::/\n", 5, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/");
        /* No newline at the end. */
        assert_int_equal(cgroup_parse_proc("0::/a.service", 13, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/a.service");
        assert_int_equal(cgroup_parse_proc(deleted, strlen(deleted), buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/system.slice/gone.service");

        strcpy(small, "keep");
        assert_int_equal(cgroup_parse_proc(hybrid, strlen(hybrid), small, sizeof(small)), -ENOBUFS);
        assert_string_equal(small, "keep");
        /* cgroup v1 only, empty, malformed. */
        assert_int_equal(cgroup_parse_proc("4:memory:/x\n", 12, buf, sizeof(buf)), -EBADMSG);
        assert_int_equal(cgroup_parse_proc("", 0, buf, sizeof(buf)), -EBADMSG);
        assert_int_equal(cgroup_parse_proc("0::\n", 4, buf, sizeof(buf)), -EBADMSG);
        assert_int_equal(cgroup_parse_proc("0::relative\n", 12, buf, sizeof(buf)), -EBADMSG);
        assert_int_equal(cgroup_parse_proc("0::/a\0b\n", 8, buf, sizeof(buf)), -EBADMSG);
        /* The size given is the end, not a NUL. */
        assert_int_equal(cgroup_parse_proc("0::/abc", 5, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/a");
}

static void test_of_pid_fake_root(void **state) {
        char root[] = "/tmp/test-cgroup-XXXXXX", path[PATH_MAX], buf[PATH_MAX];
        FILE *f;

        assert_non_null(mkdtemp(root));
        snprintf(path, sizeof(path), "%s/42", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/42/cgroup", root);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs("0::/system.slice/nginx.service\n", f);
        fclose(f);
        assert_int_equal(cgroup_of_pid(root, 42, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/system.slice/nginx.service");
        assert_int_equal(cgroup_of_pid(root, 43, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/42", root);
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(rmdir(root), 0);
        /* The kernel's own: this process is somewhere, a path from the root. */
        assert_int_equal(cgroup_of_pid(NULL, (uint32_t) getpid(), buf, sizeof(buf)), 0);
        assert_int_equal(buf[0], '/');
}

static void test_map_bound(void **state) {
        struct cgroup_map *m;

        assert_int_equal(cgroup_map_new(3, &m), 0);
        /* Misses must not walk this machine's cgroups here. */
        cgroup_map_set_rescan_interval(m, UINT64_MAX);
        cgroup_map_add(m, 1, "/");
        cgroup_map_add(m, 100, "/a.service");
        cgroup_map_add(m, 101, "/b.service");
        assert_int_equal(cgroup_map_size(m), 3);
        /* 1 is used, so 100 is the least recent when 102 comes. */
        assert_string_equal(cgroup_map_path(m, 1), "/");
        cgroup_map_add(m, 102, "/c.service");
        assert_int_equal(cgroup_map_evictions(m), 1);
        assert_null(cgroup_map_path(m, 100));
        assert_string_equal(cgroup_map_path(m, 101), "/b.service");
        assert_string_equal(cgroup_map_path(m, 102), "/c.service");
        assert_string_equal(cgroup_map_path(m, 1), "/");
        /* A known id renamed (PERF_RECORD_CGROUP again) takes the new path, no eviction. */
        cgroup_map_add(m, 101, "/b2.service");
        assert_string_equal(cgroup_map_path(m, 101), "/b2.service");
        assert_int_equal(cgroup_map_evictions(m), 1);
        assert_int_equal(cgroup_map_size(m), 3);
        /* Many more through a table of 3: each new one evicts one, never more than 3 kept. */
        for (uint64_t id = 1000; id < 1100; id++)
                cgroup_map_add(m, id, "/many");
        assert_int_equal(cgroup_map_evictions(m), 101);
        assert_int_equal(cgroup_map_size(m), 3);
        for (uint64_t id = 1097; id < 1100; id++)
                assert_string_equal(cgroup_map_path(m, id), "/many");
        assert_null(cgroup_map_path(m, 1096));
        assert_null(cgroup_map_free(m));
        assert_null(cgroup_map_free(NULL));
}

/* This machine's cgroup2 mount, writable: the unified one, or the hybrid layout's; NULL with the reason. */
static const char *writable_cgroup2(const char **ret_reason) {
        static const char *const roots[] = { CGROUP_ROOT_DEFAULT, CGROUP_ROOT_HYBRID };

        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                struct statfs sfs;

                if (statfs(roots[i], &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC)
                        continue;
                if (access(roots[i], W_OK) < 0) {
                        *ret_reason = "the cgroup2 mount is not writable";
                        return NULL;
                }
                return roots[i];
        }
        *ret_reason = "no cgroup2 mount at " CGROUP_ROOT_DEFAULT " or " CGROUP_ROOT_HYBRID;
        return NULL;
}

static uint64_t handle_id(const char *path) {
        uint64_t storage[(sizeof(struct file_handle) + 2 * sizeof(uint64_t) - 1) / sizeof(uint64_t)];
        struct file_handle *fh = (struct file_handle *) storage;
        uint64_t id;
        int mount_id;

        fh->handle_bytes = sizeof(uint64_t);
        assert_int_equal(name_to_handle_at(AT_FDCWD, path, fh, &mount_id, 0), 0);
        assert_int_equal(fh->handle_bytes, sizeof(uint64_t));
        memcpy(&id, fh->f_handle, sizeof(id));
        return id;
}

static const char *skip_reason;

static void test_live(void **state) {
        char dir[PATH_MAX], dir2[PATH_MAX], name[PATH_MAX], name2[PATH_MAX], procs[PATH_MAX], buf[PATH_MAX];
        const char *root = writable_cgroup2(&skip_reason), *p;
        struct cgroup_map *m;
        struct stat st;
        int go[2], k, status;
        uint64_t id, id2;
        pid_t child;
        FILE *f;

        if (!root) {
                print_message("skipped: %s\n", skip_reason);
                skip();
        }
        snprintf(name, sizeof(name), "/armprofd-test-cgroup-%d", (int) getpid());
        snprintf(name2, sizeof(name2), "%s/inner.service", name);
        snprintf(dir, sizeof(dir), "%s%s", root, name);
        snprintf(dir2, sizeof(dir2), "%s%s", root, name2);
        if (mkdir(dir, 0755) < 0) {
                skip_reason = "mkdir in the cgroup2 mount failed";
                print_message("skipped: %s: %s\n", skip_reason, strerror(errno));
                skip();
        }
        assert_int_equal(stat(dir, &st), 0);
        id = handle_id(dir);
        /* cgroup v2 ids are the kernfs inode numbers (64-bit kernels). */
        assert_int_equal(id, (uint64_t) st.st_ino);

        assert_int_equal(cgroup_map_new(0, &m), 0);
        k = cgroup_map_scan(m, root);
        assert_true(k >= 2);
        assert_int_equal(cgroup_map_size(m), MIN((size_t) k, (size_t) CGROUP_MAP_MAX_DEFAULT));
        p = cgroup_map_path(m, id);
        assert_non_null(p);
        assert_string_equal(p, name);
        p = cgroup_map_path(m, handle_id(root));
        assert_non_null(p);
        assert_string_equal(p, "/");
        /* The default root is the same mount on this machine. */
        assert_int_equal(cgroup_map_scan(m, NULL), k);
        /* Not a cgroup2 mount. */
        assert_int_equal(cgroup_map_scan(m, "/tmp"), -EMEDIUMTYPE);

        /* Made after the scan: unknown until a rescan is allowed, then found by it. */
        assert_int_equal(mkdir(dir2, 0755), 0);
        id2 = handle_id(dir2);
        cgroup_map_set_rescan_interval(m, UINT64_MAX);
        assert_null(cgroup_map_path(m, id2));
        cgroup_map_set_rescan_interval(m, 0);
        p = cgroup_map_path(m, id2);
        assert_non_null(p);
        assert_string_equal(p, name2);
        assert_int_equal(cgroup_service(p, buf, sizeof(buf)), CGROUP_KIND_UNIT);
        assert_string_equal(buf, "inner.service");

        /* A child moved in is there by its /proc/PID/cgroup. */
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                char c;

                close(go[1]);
                (void) !read(go[0], &c, 1);
                _exit(0);
        }
        close(go[0]);
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir2);
        f = fopen(procs, "we");
        assert_non_null(f);
        fprintf(f, "%d\n", (int) child);
        k = fclose(f) == 0 ? 0 : -errno;
        if (k == 0)
                k = cgroup_of_pid("/proc", (uint32_t) child, buf, sizeof(buf));
        close(go[1]);
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_int_equal(k, 0);
        assert_string_equal(buf, name2);
        /* Gone: its cgroup with it. */
        assert_int_equal(cgroup_of_pid("/proc", (uint32_t) child, buf, sizeof(buf)), -ENOENT);

        assert_int_equal(rmdir(dir2), 0);
        assert_int_equal(rmdir(dir), 0);
        cgroup_map_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_service),
                cmocka_unit_test(test_parse_proc),
                cmocka_unit_test(test_of_pid_fake_root),
                cmocka_unit_test(test_map_bound),
                cmocka_unit_test(test_live),
        };
        int r = cmocka_run_group_tests(tests, NULL, NULL);

        if (r == 0 && skip_reason)
                /* cmocka counts a skipped test as passed: say it here. */
                printf("SKIP: %s: the live cgroup test did not run; the other tests passed\n", skip_reason);
        return r;
}
