/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /test of the arm64 guest (tests/arm64vm/test-arm64-guest.py): a static
 * program that the VM's init (../shared/tools/arm64-vm/src/init.c) runs
 * once it has loaded the virtio network modules. It
 *
 *   - brings up lo and eth0 as QEMU's user network wants them
 *     (10.0.2.15/24, QEMU docs "Network emulation", slirp's defaults);
 *   - starts the real daemon (dynamically linked, with the Debian arm64
 *     libraries the initramfs carries) with its output in a log file;
 *   - serves the host a small control protocol on CONTROL_PORT, forwarded
 *     by QEMU (hostfwd), one command a connection:
 *       run CPU SECONDS PROGRAM   start /usr/bin/PROGRAM SECONDS CPU; answer
 *                                 its "ready PID" line, then, once it has
 *                                 exited, "exit STATUS UTIME_US STIME_US"
 *                                 (the kernel's accounting of it, wait4(2))
 *       cat PATH                  a file (an absolute path), as it is; a
 *                                 directory's entries, one a line
 *       spe SHIM SCEN SYSFS CONF  start a second daemon with the simulated
 *                                 SPE PMU preloaded (tests/simpmu/README.md:
 *                                 LD_PRELOAD=SHIM, ARMPROFD_SIMPMU_DIR=SCEN,
 *                                 ARMPROFD_SYSFS_ROOT=SYSFS), -c CONF, its
 *                                 output in /tmp/armprofd-spe.log; "started PID"
 *       log                       the daemon's output so far
 *       pacmask                   the kernel's PAC masks of a user task,
 *                                 "DATA_MASK INSN_MASK" in hex, by ptrace's
 *                                 NT_ARM_PAC_MASK regset (arch/arm64/kernel/
 *                                 ptrace.c, pac_mask_get()) of a child
 *       stop                      SIGTERM the daemon, answer "stopped STATUS"
 *                                 and end (init then powers the VM off)
 *   - gives up after the limit given as its argument (seconds of guest
 *     time with no stop) and says so.
 *
 * Usage: /test LIMIT_SECONDS DAEMON ARGS...
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CONTROL_PORT 9770
#define DAEMON_LOG "/tmp/armprofd.log"
#define SPE_LOG "/tmp/armprofd-spe.log"
#define GUEST_ADDR "10.0.2.15"
#define GUEST_MASK "255.255.255.0"
#define GUEST_GATEWAY "10.0.2.2"

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int set_addr(int fd, const char *ifname, unsigned long req, const char *addr) {
        struct ifreq ifr = {};
        struct sockaddr_in *sin = (struct sockaddr_in *) &ifr.ifr_addr;

        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
        sin->sin_family = AF_INET;
        if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
                return -EINVAL;
        return ioctl(fd, req, &ifr) < 0 ? -errno : 0;
}

static int link_up(int fd, const char *ifname) {
        struct ifreq ifr = {};

        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        return ioctl(fd, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

/* lo up; eth0 (virtio-net, probed by the modules init loaded: waited for) at 10.0.2.15/24. */
static int network_up(void) {
        struct rtentry rt = {};
        struct sockaddr_in *sin;
        double deadline = now() + 60;
        int fd, r;

        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        r = link_up(fd, "lo");
        if (r < 0) {
                fprintf(stderr, "guest: lo up: %s\n", strerror(-r));
                goto out;
        }
        while (access("/sys/class/net/eth0", F_OK) != 0 && now() < deadline)
                usleep(100000);
        r = set_addr(fd, "eth0", SIOCSIFADDR, GUEST_ADDR);
        if (r == 0)
                r = set_addr(fd, "eth0", SIOCSIFNETMASK, GUEST_MASK);
        if (r == 0)
                r = link_up(fd, "eth0");
        if (r < 0) {
                fprintf(stderr, "guest: eth0 %s/24: %s\n", GUEST_ADDR, strerror(-r));
                goto out;
        }
        /* A default route, so that nothing the daemon does depends on slirp's answering on-link only. */
        sin = (struct sockaddr_in *) &rt.rt_dst;
        sin->sin_family = AF_INET;
        sin = (struct sockaddr_in *) &rt.rt_genmask;
        sin->sin_family = AF_INET;
        sin = (struct sockaddr_in *) &rt.rt_gateway;
        sin->sin_family = AF_INET;
        inet_pton(AF_INET, GUEST_GATEWAY, &sin->sin_addr);
        rt.rt_flags = RTF_UP | RTF_GATEWAY;
        if (ioctl(fd, SIOCADDRT, &rt) < 0 && errno != EEXIST)
                fprintf(stderr, "guest: default route: %s\n", strerror(errno));
        r = 0;
out:
        close(fd);
        return r;
}

static pid_t start_daemon(char **argv, char **envp, const char *log) {
        pid_t pid = fork();

        if (pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                }
                execve(argv[0], argv, envp);
                fprintf(stderr, "guest: execve %s: %s\n", argv[0], strerror(errno));
                _exit(127);
        }
        return pid;
}

static void write_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, buf, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return;
                buf += n;
                len -= (size_t) n;
        }
}

static void send_file(int conn, const char *path) {
        char buf[65536];
        DIR *d = opendir(path);
        int fd;
        ssize_t n;

        if (d) {
                struct dirent *e;

                while ((e = readdir(d)))
                        if (e->d_name[0] != '.')
                                dprintf(conn, "%s\n", e->d_name);
                closedir(d);
                return;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                dprintf(conn, "error %s: %s\n", path, strerror(errno));
                return;
        }
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                write_all(conn, buf, (size_t) n);
        close(fd);
}

/* run CPU SECONDS PROGRAM: the program's "ready PID" line, then its exit and CPU time from wait4(2). */
static void run_workload(int conn, const char *cpu, const char *seconds, const char *program) {
        char path[256], line[128];
        struct rusage ru = {};
        int pipefd[2], st = 0;
        ssize_t n;
        size_t len = 0;
        pid_t pid;

        if (strchr(program, '/') || snprintf(path, sizeof(path), "/usr/bin/%s", program) >= (int) sizeof(path)) {
                dprintf(conn, "error bad program name\n");
                return;
        }
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                dprintf(conn, "error pipe: %s\n", strerror(errno));
                return;
        }
        pid = fork();
        if (pid == 0) {
                char *argv[] = { path, (char *) seconds, (char *) cpu, NULL };
                char *envp[] = { "PATH=/usr/bin", NULL };

                dup2(pipefd[1], 1);
                execve(path, argv, envp);
                _exit(127);
        }
        close(pipefd[1]);
        /* Its first line, "ready PID". */
        while (len < sizeof(line) - 1 && (n = read(pipefd[0], line + len, 1)) == 1 && line[len] != '\n')
                len++;
        line[len] = 0;
        close(pipefd[0]);
        dprintf(conn, "%s\n", line);
        while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
                ;
        dprintf(conn, "exit %d %lld %lld\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
                (long long) ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
                (long long) ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
}

/* struct user_pac_mask, arch/arm64/include/uapi/asm/ptrace.h. */
struct pac_mask {
        unsigned long long data_mask, insn_mask;
};

static void pac_mask(int conn) {
        struct pac_mask m = {};
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        int st, r, err;
        pid_t pid = fork();

        if (pid == 0) {
                ptrace(PTRACE_TRACEME, 0, NULL, NULL);
                raise(SIGSTOP);
                _exit(0);
        }
        waitpid(pid, &st, 0);
        r = (int) ptrace(PTRACE_GETREGSET, pid, (void *) (unsigned long) NT_ARM_PAC_MASK, &iov);
        err = errno;
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        if (r < 0)
                dprintf(conn, "error NT_ARM_PAC_MASK: %s\n", strerror(err));
        else
                dprintf(conn, "%llx %llx\n", m.data_mask, m.insn_mask);
}

static int stop_daemon(pid_t daemon) {
        int st = 0;

        kill(daemon, SIGTERM);
        for (int i = 0; i < 300; i++) {
                if (waitpid(daemon, &st, WNOHANG) == daemon)
                        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                usleep(100000);
        }
        kill(daemon, SIGKILL);
        waitpid(daemon, &st, 0);
        return 128 + SIGKILL;
}

static void print_log(const char *log) {
        char buf[4096];
        int fd = open(log, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return;
        printf("--- %s ---\n", log);
        fflush(stdout);
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                write_all(1, buf, (size_t) n);
        close(fd);
        printf("--- end ---\n");
}

int main(int argc, char **argv) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(CONTROL_PORT) };
        double deadline;
        int lfd, one = 1, code = 1, r;
        char *envp[] = { "PATH=/usr/bin:/", "HOME=/", NULL };
        pid_t daemon, spe_daemon = -1;

        if (argc < 3) {
                fprintf(stderr, "usage: %s LIMIT_SECONDS DAEMON ARGS...\n", argv[0]);
                return 2;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        signal(SIGPIPE, SIG_IGN);
        deadline = now() + atof(argv[1]);
        r = network_up();
        if (r < 0)
                return 1;
        lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0) {
                fprintf(stderr, "guest: control socket: %s\n", strerror(errno));
                return 1;
        }
        daemon = start_daemon(argv + 2, envp, DAEMON_LOG);
        printf("guest: network up, daemon pid %d, control port %d\n", (int) daemon, CONTROL_PORT);
        for (;;) {
                struct pollfd p = { .fd = lfd, .events = POLLIN };
                char cmd[2048], a[64], b[64], c[256], shim[256], scen[256], sysfs[256], conf[256];
                ssize_t n;
                int conn, st;

                if (now() > deadline) {
                        printf("guest: no stop from the host in %s s: giving up\n", argv[1]);
                        stop_daemon(daemon);
                        if (spe_daemon > 0)
                                stop_daemon(spe_daemon);
                        break;
                }
                if (waitpid(daemon, &st, WNOHANG) == daemon) {
                        printf("guest: the daemon exited early (status 0x%x)\n", st);
                        daemon = -1;
                }
                if (poll(&p, 1, 1000) <= 0)
                        continue;
                conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (conn < 0)
                        continue;
                n = read(conn, cmd, sizeof(cmd) - 1);
                cmd[n > 0 ? n : 0] = 0;
                cmd[strcspn(cmd, "\r\n")] = 0;
                if (sscanf(cmd, "run %63s %63s %255s", a, b, c) == 3) {
                        run_workload(conn, a, b, c);
                } else if (sscanf(cmd, "spe %255s %255s %255s %255s", shim, scen, sysfs, conf) == 4) {
                        char e_preload[300], e_scen[300], e_sysfs[300];
                        char *spe_argv[] = { argv[2], "-c", conf, NULL };
                        char *spe_envp[] = { "PATH=/usr/bin:/", "HOME=/", e_preload, e_scen, e_sysfs, NULL };

                        snprintf(e_preload, sizeof(e_preload), "LD_PRELOAD=%s", shim);
                        snprintf(e_scen, sizeof(e_scen), "ARMPROFD_SIMPMU_DIR=%s", scen);
                        snprintf(e_sysfs, sizeof(e_sysfs), "ARMPROFD_SYSFS_ROOT=%s", sysfs);
                        if (spe_daemon > 0) {
                                dprintf(conn, "error already started\n");
                        } else {
                                spe_daemon = start_daemon(spe_argv, spe_envp, SPE_LOG);
                                dprintf(conn, "started %d\n", (int) spe_daemon);
                        }
                } else if (sscanf(cmd, "cat %255s", c) == 1) {
                        if (c[0] != '/' || strstr(c, ".."))
                                dprintf(conn, "error an absolute path without ..\n");
                        else
                                send_file(conn, c);
                } else if (strcmp(cmd, "pacmask") == 0) {
                        pac_mask(conn);
                } else if (strcmp(cmd, "log") == 0) {
                        send_file(conn, DAEMON_LOG);
                } else if (strcmp(cmd, "stop") == 0) {
                        int status = daemon > 0 ? stop_daemon(daemon) : -1;

                        if (spe_daemon > 0) {
                                int spe_status = stop_daemon(spe_daemon);

                                printf("guest: the SPE daemon stopped with %d\n", spe_status);
                                spe_daemon = -1;
                                if (spe_status != 0 && status == 0)
                                        status = spe_status;
                        }

                        dprintf(conn, "stopped %d\n", status);
                        close(conn);
                        code = status == 0 ? 0 : 1;
                        break;
                } else {
                        dprintf(conn, "error unknown command\n");
                }
                close(conn);
        }
        print_log(DAEMON_LOG);
        print_log(SPE_LOG);
        return code;
}
