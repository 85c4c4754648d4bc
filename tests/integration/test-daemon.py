#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The built daemon on an ephemeral loopback port: endpoints, methods, limits, reload, stop."""

import html
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, binary, parse_prom_text, stat_field  # noqa: E402

GOOD_CONFIG = """[http]
max_connections = 8
timeout = 1s
max_request_size = 8KiB
[pmu]
interval = 200ms
"""


# Each key within its range, their product far beyond any machine (issue 11, item 1).
STORE_TOO_BIG = """[store]
epochs = 8640
hotpcs = 1048576
hotlines = 1048576
line_offsets = 1024
"""

ALL_EVENTS = ("cycles instructions l1d_cache l1d_cache_refill llc_read llc_read_miss l1d_tlb l1d_tlb_refill "
              "dtlb_walk branch_mispredicts stall_frontend stall_backend context_switches cpu_migrations "
              "page_faults")


class DaemonTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(config_text=GOOD_CONFIG).wait_ready()

    def tearDown(self):
        self.d.close()

    def test_metrics_self(self):
        status, headers, body = self.d.get("/metrics")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        text = body.decode()
        self.assertTrue(text.endswith("\n"))
        s = parse_prom_text(text)
        names = {k[0] for k in s}
        for n in ("armprofd_build_info", "process_cpu_seconds_total", "process_resident_memory_bytes",
                  "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                  "process_start_time_seconds"):
            self.assertIn(n, names)
            self.assertIn(f"# HELP {n} ", text)
            self.assertIn(f"# TYPE {n} ", text)
        # Values mean what the Prometheus client libraries mean by them.
        start = s[("process_start_time_seconds", frozenset())]
        self.assertLess(abs(start - time.time()), 30)
        self.assertGreater(s[("process_resident_memory_bytes", frozenset())], 1 << 20)
        self.assertGreaterEqual(s[("process_virtual_memory_bytes", frozenset())],
                                s[("process_resident_memory_bytes", frozenset())])
        fds = len(os.listdir(f"/proc/{self.d.proc.pid}/fd"))
        self.assertLessEqual(abs(s[("process_open_fds", frozenset())] - fds), 2)
        with open(f"/proc/{self.d.proc.pid}/limits") as f:
            soft = next(l.split()[3] for l in f if l.startswith("Max open files"))
        self.assertEqual(s[("process_max_fds", frozenset())], float(soft))
        # Each thread's CPU time, by the name it gave itself, between two readings of
        # /proc/PID/task/*/stat made here around the scrape.
        def per_thread():
            ticks, out = os.sysconf("SC_CLK_TCK"), {}
            for tid, (comm, fields) in self.d.threads().items():
                name = "main" if tid == self.d.proc.pid else {
                    "collector": "collector", "MHD-single": "http", "http-timer": "http-timer",
                    "http-auth": "http-auth", "push": "push"}.get(comm, "other")
                out[name] = out.get(name, 0) + (stat_field(fields, 14) + stat_field(fields, 15)) / ticks
            return out
        before = per_thread()
        s = parse_prom_text(self.d.get("/metrics")[2].decode())
        after = per_thread()
        busy = {dict(k[1])["thread"]: v for k, v in s.items() if k[0] == "armprofd_collector_busy_seconds_total"}
        self.assertEqual(set(busy) - {"other"}, set(after) - {"other"}, (busy, after))
        for name, v in busy.items():
            self.assertLessEqual(before.get(name, 0) - 1e-9, v, name)
            if name != "other":
                self.assertLessEqual(v, after[name] + 1e-9, name)
        # other is the rest of the process's time (threads that ended too): the named threads and it
        # sum to process_cpu_seconds_total, read just before in the same scrape (a few ticks apart).
        total = s[("process_cpu_seconds_total", frozenset())]
        self.assertLessEqual(abs(sum(busy.values()) - total), 0.05, (busy, total))
        self.assertTrue({"main", "collector", "http", "http-timer", "http-auth"} <= set(busy), busy)
        info = [k for k in s if k[0] == "armprofd_build_info"]
        self.assertEqual(len(info), 1)
        self.assertEqual(dict(info[0][1])["version"], subprocess.run(
            [binary(), "--version"], capture_output=True, text=True).stdout.split()[1])

    def test_answering_threads_yield_to_the_collector(self):
        # The threads that answer run 10 nice steps below the rest (common/thread-prio.h), as the
        # kernel schedules them; the main and collector threads keep the nice value we started it with.
        base = os.getpriority(os.PRIO_PROCESS, 0)
        self.assertEqual(self.d.get("/metrics")[0], 200)  # libmicrohttpd's thread lowers itself on a request
        threads = self.d.threads()
        named = {comm: stat_field(fields, 19) for comm, fields in threads.values()}
        want = min(base + 10, 19)
        for comm in ("MHD-single", "http-timer", "http-auth"):
            self.assertEqual(named.get(comm), want, (comm, named))
        self.assertEqual(named.get("collector"), base, named)
        self.assertEqual(stat_field(threads[self.d.proc.pid][1], 19), base)

    def test_request_counter(self):
        for _ in range(3):
            self.assertEqual(self.d.get("/nope")[0], 404)
        self.assertEqual(self.d.request("POST", "/metrics")[0], 405)
        s = parse_prom_text(self.d.get("/metrics")[2].decode())
        self.assertEqual(s[("armprofd_http_requests_total",
                            frozenset({("handler", "other"), ("code", "404")}))], 3)
        self.assertEqual(s[("armprofd_http_requests_total",
                            frozenset({("handler", "metrics"), ("code", "405")}))], 1)
        # The scrape that rendered this had not been counted yet; the one before had.
        self.assertNotIn(("armprofd_http_requests_total",
                          frozenset({("handler", "metrics"), ("code", "200")})), s)
        s = parse_prom_text(self.d.get("/metrics")[2].decode())
        self.assertEqual(s[("armprofd_http_requests_total",
                            frozenset({("handler", "metrics"), ("code", "200")}))], 1)

    def test_not_found_and_methods(self):
        status, headers, body = self.d.get("/does/not/exist")
        self.assertEqual(status, 404)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(body)["status"], 404)
        for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
            status, headers, _ = self.d.request(method, "/metrics")
            self.assertEqual(status, 405, method)
            self.assertEqual(headers["allow"], "GET, HEAD")

    def test_head(self):
        for path in ("/", "/healthz", "/metrics", "/status"):
            get_status, get_headers, get_body = self.d.get(path)
            status, headers, body = self.d.request("HEAD", path)
            self.assertEqual(status, get_status, path)
            self.assertEqual(body, b"", path)
            self.assertEqual(headers["content-type"], get_headers["content-type"], path)
        # Static pages: HEAD announces exactly the GET body's length.
        for path in ("/", "/healthz"):
            self.assertEqual(int(self.d.request("HEAD", path)[1]["content-length"]),
                             len(self.d.get(path)[2]))

    def test_index_links(self):
        status, headers, body = self.d.get("/")
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/html"))
        links = [html.unescape(h) for h in re.findall(r'href="([^"]+)"', body.decode())]
        for link in ("/metrics", "/status", "/healthz", "/counters", "/hotlines", "/hotpcs", "/latency",
                     "/hotlines?format=text", "/hotlines?window=1m&limit=20&format=json",
                     "/hotpcs?window=1m&limit=50&format=json", "/latency?window=1m&format=json",
                     "/debug/pprof/spe?window=1m", "/static/armprofd.css"):
            self.assertIn(link, links)
        # A person can follow every link: each answers 200 (the profile once the epoch
        # holding the end of its 5 s has closed: at most 5 s + one 10 s epoch).
        for link in links:
            c = http.client.HTTPConnection(self.d.host, self.d.port, timeout=30)
            c.request("GET", link)
            self.assertEqual(c.getresponse().status, 200, link)
            c.close()

    def test_status(self):
        status, headers, body = self.d.get("/status")
        self.assertEqual(status, 200)
        st = json.loads(body)
        self.assertEqual(st["listen"], self.d.address)
        self.assertEqual(st["config"]["file"], self.d.config)
        self.assertEqual(st["config"]["http"]["max_connections"], 8)
        self.assertEqual(st["config"]["pmu"]["interval_seconds"], 0.2)
        pmu = [c for c in st["collectors"] if c["name"] == "pmu"]
        self.assertEqual(len(pmu), 1)
        self.assertIn(pmu[0]["state"], ("ok", "degraded", "permission-denied", "no-events"))
        # Without --replay, live SPE runs where sysfs has an arm_spe PMU; elsewhere /status says why not.
        spe = [c for c in st["collectors"] if c["name"] == "spe"]
        self.assertEqual(len(spe), 1)
        has_spe = any(n.startswith("arm_spe_") for n in os.listdir("/sys/bus/event_source/devices"))
        if not has_spe:
            self.assertFalse(spe[0]["up"])
            self.assertEqual(spe[0]["state"], "off")
            self.assertIn("no arm_spe PMU in /sys/bus/event_source/devices: ", spe[0]["reason"])
            if os.uname().machine != "aarch64":
                self.assertIn("not an Arm machine", spe[0]["reason"])
        self.assertGreaterEqual(st["uptime_seconds"], 0)
        # The collector loop runs: its cycle count advances at the configured interval.
        c0 = st["collector_cycles"]
        time.sleep(0.7)
        c1 = json.loads(self.d.get("/status")[2])["collector_cycles"]
        self.assertGreaterEqual(c1 - c0, 2)

    def test_oversized_request_rejected_and_still_serving(self):
        # Headers beyond max_request_size (8 KiB) are refused, not buffered.
        status, _, _ = self.d.get("/metrics", headers={"X-Big": "a" * 16384})
        self.assertIn(status, (413, 414, 431))
        self.assertEqual(self.d.get("/healthz")[0], 200)

    def test_idle_connection_timeout(self):
        # [http] timeout = 1s: an idle client is disconnected, not kept forever.
        s = socket.create_connection((self.d.host, self.d.port), timeout=5)
        t0 = time.monotonic()
        try:
            self.assertEqual(s.recv(1), b"")
        finally:
            s.close()
        self.assertLess(time.monotonic() - t0, 4.5)

    def test_connection_limit(self):
        # max_connections = 8, one slot kept free for newcomers: with 8 idle clients connected,
        # the oldest idle ones are closed to make room and a 9th request is answered at once.
        held = [socket.create_connection((self.d.host, self.d.port), timeout=5) for _ in range(8)]
        try:
            time.sleep(0.2)
            self.assertEqual(self.d.get("/healthz")[0], 200)
            self.assertEqual(held[0].recv(1), b"")  # the oldest was closed, not the newest
            m = parse_prom_text(self.d.get("/metrics")[2].decode())
            self.assertGreaterEqual(m[("armprofd_http_connections_closed_total", frozenset({("reason", "evicted")}))], 1)
        finally:
            for s in held:
                s.close()

    def test_reload(self):
        # A broken config on SIGHUP is logged and the old one kept.
        with open(self.d.config, "w") as f:
            f.write("[pmu]\ninterval = soon\n")
        self.d.signal(signal.SIGHUP)
        self.d.wait_log(r"armprofd.conf:2: \[pmu\] interval: invalid duration 'soon'")
        self.d.wait_log(r"reload failed \(1 error\); keeping the previous configuration")
        st = json.loads(self.d.get("/status")[2])
        self.assertEqual(st["config"]["failed_reloads"], 1)
        self.assertEqual(st["config"]["pmu"]["interval_seconds"], 0.2)
        self.assertEqual(self.d.get("/healthz")[0], 200)
        # A good one is applied.
        with open(self.d.config, "w") as f:
            f.write(GOOD_CONFIG.replace("interval = 200ms", "interval = 2s") + "[store]\nhotpcs = 2048\n")
        self.d.signal(signal.SIGHUP)
        self.d.wait_log(r"Configuration reloaded")
        self.assertIn("[store] changes take effect at the next restart", self.d.log())
        st = json.loads(self.d.get("/status")[2])
        self.assertEqual(st["config"]["reloads"], 1)
        self.assertEqual(st["config"]["pmu"]["interval_seconds"], 2.0)

    def reload_and_wait(self, text):
        n = self.d.log().count("Configuration reloaded") + self.d.log().count("reload failed")
        with open(self.d.config, "w") as f:
            f.write(text)
        self.d.signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while self.d.log().count("Configuration reloaded") + self.d.log().count("reload failed") == n:
            self.assertLess(time.monotonic(), deadline, self.d.log())
            time.sleep(0.02)
        return json.loads(self.d.get("/status")[2])["config"]

    def test_reload_shows_what_is_in_effect(self):
        # [http] settings apply at the next restart: /status shows the running values,
        # and the reloaded ones apart, while [pmu] interval applies at once.
        cfg = self.reload_and_wait(GOOD_CONFIG.replace("max_connections = 8", "max_connections = 64")
                                   .replace("timeout = 1s", "timeout = 30s")
                                   .replace("interval = 200ms", "interval = 300ms"))
        self.assertIn("[http] changes take effect at the next restart", self.d.log())
        self.assertEqual(cfg["http"]["max_connections"], 8)
        self.assertEqual(cfg["http"]["timeout_seconds"], 1.0)
        self.assertEqual(cfg["pmu"]["interval_seconds"], 0.3)
        self.assertEqual(cfg["pending_restart"], {"http": {"max_connections": 64, "timeout_seconds": 30.0}})
        # It is what the server does: an idle client is still closed after 1 s, not 30 s.
        s = socket.create_connection((self.d.host, self.d.port), timeout=10)
        try:
            self.assertEqual(s.recv(1), b"")
        finally:
            s.close()
        # A [store] change waits too; going back to the running [http] values leaves nothing pending there.
        cfg = self.reload_and_wait(GOOD_CONFIG + "[store]\nhotpcs = 2048\n")
        self.assertEqual(cfg["store"]["hotpcs"], 1024)
        self.assertEqual(cfg["pending_restart"], {"store": {"hotpcs": 2048, "memory_bytes":
                                                            cfg["pending_restart"]["store"]["memory_bytes"]}})
        self.assertGreater(cfg["pending_restart"]["store"]["memory_bytes"], cfg["store"]["memory_bytes"])
        # So do the sources': the sampler and SPE keep what they started with, /status says so.
        running = cfg["sampler"]["frequency"], cfg["sampler"]["unwind"], cfg["spe"]["period"]
        cfg = self.reload_and_wait(GOOD_CONFIG + "[sampler]\nfrequency = 97\nunwind = fp\n[spe]\nperiod = 8192\n")
        for section in ("sampler", "spe"):
            self.assertIn(f"[{section}] changes take effect at the next restart", self.d.log())
        self.assertEqual((cfg["sampler"]["frequency"], cfg["sampler"]["unwind"], cfg["spe"]["period"]), running)
        self.assertEqual(cfg["pending_restart"], {"sampler": {"frequency": 97, "unwind": "fp"},
                                                  "spe": {"period": 8192}})
        cfg = self.reload_and_wait(GOOD_CONFIG)
        self.assertEqual(cfg["pending_restart"], {})
        self.assertEqual(cfg["reloads"], 4)

    def test_reload_store_memory_bound(self):
        # A reload is checked as a start is: a store that would not fit is refused and logged.
        cfg = self.reload_and_wait(GOOD_CONFIG + STORE_TOO_BIG)
        self.assertIn("more than [store] max_memory = 256.0 MiB", self.d.log())
        self.assertEqual(cfg["failed_reloads"], 1)
        self.assertEqual(cfg["pending_restart"], {})
        self.assertEqual(self.d.get("/healthz")[0], 200)

    def test_reload_fifo_dropin(self):
        # A drop-in that is a FIFO is refused at once: the reload does not block on it,
        # and the daemon keeps serving and still stops on SIGTERM.
        os.mkdir(self.d.config + ".d")
        os.mkfifo(os.path.join(self.d.config + ".d", "10-fifo.conf"))
        self.d.signal(signal.SIGHUP)
        self.d.wait_log(r"armprofd.conf.d/10-fifo.conf: refused: a FIFO, config files must be regular files")
        self.assertEqual(json.loads(self.d.get("/status")[2])["config"]["failed_reloads"], 1)
        rc, _ = self.d.stop(timeout=5.0)
        self.assertEqual(rc, 0, self.d.log())

    def test_sigterm(self):
        rc, took = self.d.stop(timeout=2.0)
        self.assertEqual(rc, 0, self.d.log())
        self.assertLess(took, 2.0)
        self.assertIn("stopping", self.d.log())

    def test_sigint(self):
        self.d.signal(signal.SIGINT)
        self.assertEqual(self.d.proc.wait(2), 0)


class StartupTest(unittest.TestCase):
    def run_armprofd(self, *args):
        return subprocess.run([binary(), *args], capture_output=True, text=True, timeout=10)

    def test_bad_config_is_fatal_at_start(self):
        with Daemon(config_text="[http]\nlisten = 1.2.3.4\n") as d:
            self.assertEqual(d.proc.wait(5), 1)
            d._reader.join(2)
            self.assertIn("armprofd.conf:2: [http] listen: invalid listen address", d.log())

    def test_check_config(self):
        with Daemon(config_text=GOOD_CONFIG, args=["--check-config"]) as d:
            self.assertEqual(d.proc.wait(5), 0)
        with Daemon(config_text="[pmu]\nbogus = 1\n", args=["--check-config"]) as d:
            self.assertEqual(d.proc.wait(5), 1)
            d._reader.join(2)
            self.assertIn("armprofd.conf:2: [pmu] bogus: unknown key", d.log())

    def test_store_memory_bound(self):
        # --check-config and a start refuse it alike, naming the keys and the figure; no abort.
        want = ("[store] epochs = 8640, hotpcs = 1048576, hotlines = 1048576, line_offsets = 1024, "
                "stacks = 4096 need up to ")
        with Daemon(config_text=STORE_TOO_BIG, args=["--check-config"]) as d:
            self.assertEqual(d.proc.wait(10), 1)
            d._reader.join(2)
            self.assertIn(want, d.log())
            self.assertIn("more than [store] max_memory = 256.0 MiB", d.log())
        with Daemon(config_text=STORE_TOO_BIG) as d:
            self.assertEqual(d.proc.wait(10), 1)
            d._reader.join(2)
            self.assertIn(want, d.log())
        # Raised on purpose, it is accepted.
        with Daemon(config_text="[store]\nepochs = 8640\nmax_memory = 32GiB\n", args=["--check-config"]) as d:
            self.assertEqual(d.proc.wait(10), 0, d.log())

    def test_config_files_must_be_regular(self):
        # /dev/zero never ends, a FIFO blocks until a writer comes: both are refused at once.
        r = self.run_armprofd("-c", "/dev/zero", "--check-config")
        self.assertEqual(r.returncode, 1)
        self.assertIn("/dev/zero: refused: a character device, config files must be regular files", r.stderr)
        tmp = tempfile.mkdtemp(prefix="armprofd-it-")
        try:
            fifo = os.path.join(tmp, "fifo.conf")
            os.mkfifo(fifo)
            r = self.run_armprofd("-c", fifo, "--check-config")
            self.assertEqual(r.returncode, 1)
            self.assertIn("fifo.conf: refused: a FIFO", r.stderr)
            conf = os.path.join(tmp, "armprofd.conf")
            with open(conf, "w") as f:
                f.write("[pmu]\nenable = no\n")
            os.mkdir(conf + ".d")
            os.symlink("/dev/zero", os.path.join(conf + ".d", "10-zero.conf"))
            r = self.run_armprofd("-c", conf, "--check-config")
            self.assertEqual(r.returncode, 1)
            self.assertIn("armprofd.conf.d/10-zero.conf: refused: a character device", r.stderr)
        finally:
            shutil.rmtree(tmp)

    def test_config_lines_and_errors(self):
        # The whole event list and a long comment are fine (libinih's default line is 200 bytes).
        text = f"[pmu]\n# {'x' * 600}\nevents = {ALL_EVENTS}\n"
        self.assertGreater(len(f"events = {ALL_EVENTS}"), 200)
        with Daemon(config_text=text, args=["--check-config"]) as d:
            self.assertEqual(d.proc.wait(5), 0, d.log())
        # Every error is reported, binary junk escaped, a NUL byte refused, a repeated key named.
        tmp = tempfile.mkdtemp(prefix="armprofd-it-")
        try:
            conf = os.path.join(tmp, "armprofd.conf")
            with open(conf, "wb") as f:
                f.write(b"[pmu]\nevents = bogus\ninterval = 1s\ninterval = 2s\n\x01\x1b[31m\xff = 1\n"
                        b"[http]\nlisten = 127.0.0.1:1\x00garbage\n")
            r = subprocess.run([binary(), "-c", conf, "--check-config"], capture_output=True, timeout=10)
            self.assertEqual(r.returncode, 1)
            err = r.stderr.decode("ascii")  # nothing raw: every byte is printable ASCII
            lines = [l for l in err.splitlines() if "armprofd.conf" in l]
            self.assertEqual(lines, [
                f"armprofd: config: {conf}:2: [pmu] events: unknown event 'bogus' (known: {ALL_EVENTS})",
                f"armprofd: config: {conf}:4: [pmu] interval: set again (first on line 3); a key may "
                "appear once per file, a later drop-in overrides it",
                f"armprofd: config: {conf}:5: [pmu] \\x01\\x1b[31m\\xff: unknown key",
                f"armprofd: config: {conf}:7: NUL byte in line (is this a text file?)",
            ])
        finally:
            shutil.rmtree(tmp)

    def test_default_config_path(self):
        # /etc/armprofd whatever the install prefix, as the README says.
        r = self.run_armprofd("--help")
        self.assertIn("(default /etc/armprofd/armprofd.conf)", r.stdout)
        with open(os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "README.md")) as f:
            self.assertIn("`/etc/armprofd/armprofd.conf`", f.read())

    def test_shipped_config_is_valid(self):
        shipped = os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "packaging", "armprofd.conf")
        r = self.run_armprofd("-c", shipped, "--check-config")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_usage_errors_exit_2(self):
        for args in (["--bogus"], ["--listen"], ["-c"], ["extra"], ["--log-level", "chatty"]):
            r = self.run_armprofd(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("Usage:", r.stderr)
            self.assertEqual(r.stdout, "")

    def test_help_version(self):
        r = self.run_armprofd("--help")
        self.assertEqual(r.returncode, 0)
        for opt in ("--config", "--listen", "--replay", "--once", "--check-config", "--log-level",
                    "--version", "--help"):
            self.assertIn(opt, r.stdout)
        r = self.run_armprofd("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^armprofd \d+\.\d+\.\d+ \(\S+\)\n$")

    def test_port_in_use(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            port = s.getsockname()[1]
            with Daemon(listen=f"127.0.0.1:{port}") as d:
                self.assertEqual(d.proc.wait(5), 1)
                d._reader.join(2)
                self.assertIn(f"Failed to listen on 127.0.0.1:{port}: Address already in use", d.log())

    def test_ipv6_loopback(self):
        if not os.path.exists("/proc/net/if_inet6"):
            self.skipTest("no IPv6")
        with Daemon(listen="[::1]:0") as d:
            d.wait_ready()
            self.assertTrue(d.address.startswith("[::1]:"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
