# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for integration tests: run the real armprofd binary and talk HTTP to it."""

import contextlib
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
import threading
import time
import urllib.parse
import urllib.request

SKIP = 77


def stat_field(fields, n):
    """Field n (its number in proc(5): 14 utime, 15 stime, 19 nice) of a stat line's fields past the
    comm (Daemon.threads()), which start at field 3."""
    return int(fields[n - 3])


def schedstat(path="/proc/thread-self/schedstat"):
    """(seconds run, seconds waited on a run queue) of a thread (the kernel's schedstats)."""
    with open(path) as f:
        run, wait, _ = f.read().split()
    return int(run) / 1e9, int(wait) / 1e9


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def need_cpu_sampling():
    """Skip unless CPU-wide cpu-clock sampling can run: root and a kernel with perf_event_open."""
    if os.geteuid() != 0:
        skip("needs root: CPU-wide perf events")
    if not os.path.exists("/proc/sys/kernel/perf_event_paranoid"):
        skip("no perf_event_open on this kernel")


def need_go():
    """The go command, or a skip: no go tool pprof without it."""
    go = shutil.which("go")
    if not go:
        skip("go not installed (Debian package golang-go): no go tool pprof")
    return go


# The checks a test made that failed, for its exit status (the tests that print a line a check).
failures = []


def check(cond, msg):
    """Prints one check's line, "ok" or "FAIL"; a failed one goes into failures. Returns cond."""
    print(("ok    " if cond else "FAIL  ") + msg, flush=True)
    if not cond:
        failures.append(msg)
    return cond


def go_env(tmp):
    """The environment to run go tool pprof in: its home, build cache and temporary files under tmp,
    this machine's toolchain (no download), no GOFLAGS of the caller's."""
    return dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"), PPROF_TMPDIR=tmp, GOTOOLCHAIN="local",
                GOFLAGS="")


def simpmu_setup():
    """tests/simpmu/simpmu-setup.py as a module: the simulated SPE PMU's scenarios and sysfs."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "simpmu", "simpmu-setup.py")
    spec = importlib.util.spec_from_file_location("simpmu_setup", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def binary():
    path = os.environ.get("ARMPROFD_BIN")
    if not path or not os.access(path, os.X_OK):
        print(f"ARMPROFD_BIN not set or not executable: {path!r}", file=sys.stderr)
        sys.exit(1)
    return path


class Daemon:
    """armprofd started on an ephemeral loopback port; stderr is collected."""

    def __init__(self, args=(), config_text=None, env=None, listen="127.0.0.1:0", cmd_prefix=()):
        self.tmp = tempfile.mkdtemp(prefix="armprofd-it-")
        self.config = os.path.join(self.tmp, "armprofd.conf")
        with open(self.config, "w") as f:
            f.write(config_text or "")
        argv = list(cmd_prefix) + [binary(), "-c", self.config]
        if listen:
            argv += ["--listen", listen]
        argv += list(args)
        # A replaying daemon is READY at once and reads its input meanwhile: wait_ready() waits for it too.
        self.replay = any(a in ("--replay", "--replay-raw") for a in args)
        self.stderr_lines = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env or os.environ.copy(), text=True)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        self.address = None

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self._lock:
                self.stderr_lines.append(line.rstrip("\n"))

    def log(self):
        with self._lock:
            return "\n".join(self.stderr_lines)

    def wait_log(self, pattern, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.log())
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(f"log never matched {pattern!r}; log:\n{self.log()}")

    def wait_serving(self, timeout=30.0):
        """Until the daemon is READY: it logged its address and /healthz answers 200. A store sized
        for 64 GiB filled by MALLOC_PERTURB_ (meson sets it) takes seconds on a loaded machine:
        the wait is long, and ends early when the daemon exits."""
        m = self.wait_log(r"Serving on (\S+)", timeout)
        self.address = m.group(1)
        host, port = self.address.rsplit(":", 1)
        self.host, self.port = host.strip("[]"), int(port)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.get("/healthz")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"/healthz never answered 200; log:\n{self.log()}")

    def spe_status(self):
        """The "spe" entry of /status's collectors."""
        st, _, body = self.get("/status")
        assert st == 200, (st, body)
        return [c for c in json.loads(body)["collectors"] if c["name"] == "spe"][0]

    def threads(self):
        """{tid: (comm, fields)} of the daemon's threads as the kernel has them: fields of
        /proc/PID/task/TID/stat past the comm, read with stat_field(). A thread that ends meanwhile
        is left out."""
        out = {}
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{tid}/stat") as f:
                    line = f.read()
            except FileNotFoundError:
                continue
            # comm is in parentheses and may hold anything: the last ")" ends it.
            out[int(tid)] = (line[line.index("(") + 1:line.rindex(")")], line[line.rindex(")") + 2:].split())
        return out

    def thread_path(self, name, what):
        """/proc/PID/task/TID/<what> of the daemon's thread called name."""
        for tid, (comm, _) in self.threads().items():
            if comm == name:
                return f"/proc/{self.proc.pid}/task/{tid}/{what}"
        raise AssertionError(f"no thread {name!r} in {self.proc.pid}")

    def thread_wakeups(self, name):
        """A thread's voluntary context switches (its sleeps, so its wakeups), as the kernel counts them."""
        with open(self.thread_path(name, "status")) as f:
            return int(next(l.split()[1] for l in f if l.startswith("voluntary_ctxt_switches:")))

    def wait_replay_done(self, timeout=5.0):
        """Until /status says the replay read its input to the end (state "done")."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.spe_status()
            if st["state"] == "done":
                return st
            if st["state"] == "failed" or self.proc.poll() is not None:
                raise AssertionError(f"the replay did not end well: {st}; log:\n{self.log()}")
            time.sleep(0.05)
        raise AssertionError(f"the replay is still {self.spe_status()['state']!r} after {timeout}s; "
                             f"log:\n{self.log()}")

    def wait_ready(self, timeout=30.0):
        """READY, and with --replay/--replay-raw the replay done: what READY meant before it came at once."""
        self.wait_serving(timeout)
        if self.replay:
            self.wait_replay_done(timeout)
        return self

    def request(self, method, path, headers=None, timeout=5.0):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
        finally:
            c.close()

    def get(self, path, headers=None):
        return self.request("GET", path, headers)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=2.0):
        """SIGTERM and wait; returns (exit code, seconds taken)."""
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"armprofd did not exit within {timeout}s of SIGTERM")
        return rc, time.monotonic() - t0

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=2)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_varint(buf, pos):
    """A protobuf base-128 varint at buf[pos]: (value, position after it); ValueError when cut short."""
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        c = buf[pos]
        pos += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return value, pos


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_prom_text(body):
    """{(name, frozenset(labels.items())): value} from a text exposition."""
    samples = {}
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        m = line_re.match(line)
        if not m:
            raise AssertionError(f"unparsable exposition line: {line!r}")
        labels = frozenset(label_re.findall(m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples


def prom_query(port, expr):
    """The result of an instant query to the Prometheus on 127.0.0.1:port."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


@contextlib.contextmanager
def prometheus(tmp, targets, native=False, rule_files=(), name="prometheus"):
    """The real Prometheus (Debian's prometheus) on a free loopback port, its data in tmp, scraping
    targets ("host:port") every second as job armprofd and evaluating rule_files every second;
    native: with native histograms (it then scrapes protobuf). Yields its port; stopped on exit."""
    port = free_port()
    cfg = os.path.join(tmp, f"{name}.yml")
    with open(cfg, "w") as f:
        f.write("global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
                f"rule_files: {json.dumps(list(rule_files))}\n"
                "scrape_configs: [{job_name: armprofd, static_configs: [{targets: %s}]}]\n" % json.dumps(list(targets)))
    argv = ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/{name}-data",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
    if native:
        argv.append("--enable-feature=native-histograms")
    prom = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        yield port
    finally:
        prom.terminate()
        try:
            prom.wait(10)
        except subprocess.TimeoutExpired:
            prom.kill()


def prom_wait_query(port, expr, timeout=30):
    """prom_query() until it returns something."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            res = prom_query(port, expr)
            if res:
                return res
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never returned data for {expr!r}")
