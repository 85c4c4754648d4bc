#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A real Prometheus scrapes armprofd: once as it negotiates by default (OpenMetrics
in 2.42), once with native histograms enabled (protobuf). The test then asks
Prometheus's HTTP API what it stored."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, free_port, parse_prom_text, skip  # noqa: E402

prometheus = shutil.which("prometheus")
if not prometheus:
    skip("prometheus not installed (Debian package 'prometheus')")


def query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def wait_query(port, expr, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            res = query(port, expr)
            if res:
                return res
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never returned data for {expr!r}")


spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")
gen_dir = tempfile.mkdtemp(prefix="armprofd-prom-gen-")
subprocess.run([spegen, "--out-dir", gen_dir, "--prefix", "p", "--records", "20000", "--scenario", "all",
                "--no-bin", "--no-truth"], check=True, stdout=subprocess.DEVNULL)
REPLAY = os.path.join(gen_dir, "p.data")
LOAD = 'kind="total",op="load"'


def run(native):
    with Daemon(args=["--log-level", "debug", "--replay", REPLAY]) as d:
        d.wait_ready()
        tmp = tempfile.mkdtemp(prefix="armprofd-prom-")
        port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: armprofd
    static_configs:
      - targets: ['{d.host}:{d.port}']
""")
        argv = [prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
        if native:
            argv.append("--enable-feature=native-histograms")
        prom = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            up = wait_query(port, 'up{job="armprofd"} == 1')
            assert up[0]["value"][1] == "1", up
            want_type = "application/vnd.google.protobuf" if native else "application/openmetrics-text"
            d.wait_log(r"GET /metrics -> 200 " + want_type.replace(".", r"\."))

            # A counter Prometheus stored has the value we served at that scrape or later.
            res = wait_query(port, 'armprofd_http_requests_total{handler="metrics",code="200"}')
            stored = float(res[0]["value"][1])
            ours = parse_prom_text(d.get("/metrics")[2].decode())
            served = ours[("armprofd_http_requests_total",
                           frozenset({("handler", "metrics"), ("code", "200")}))]
            assert 1 <= stored <= served, (stored, served)

            # A constant is stored exactly, whatever the format.
            start = float(wait_query(port, "process_start_time_seconds")[0]["value"][1])
            assert abs(start - ours[("process_start_time_seconds", frozenset())]) < 1e-6, start
            # OpenMetrics counter family "process_cpu_seconds" comes back as the _total series.
            wait_query(port, "process_cpu_seconds_total")
            info = wait_query(port, "armprofd_build_info")
            assert info[0]["metric"]["version"], info

            # The latency histogram: count as served; quantiles computable by Prometheus.
            count = ours[("armprofd_spe_latency_cycles_count",
                          frozenset({("kind", "total"), ("op", "load")}))]
            if native:
                # Native (schema 7, sparse buckets) histogram, the one series Prometheus keeps.
                got = float(wait_query(port, f"histogram_count(armprofd_spe_latency_cycles{{{LOAD}}})")[0]["value"][1])
                p50 = float(wait_query(port, f"histogram_quantile(0.5, armprofd_spe_latency_cycles{{{LOAD}}})")[0]["value"][1])
            else:
                got = float(wait_query(port, f"armprofd_spe_latency_cycles_count{{{LOAD}}}")[0]["value"][1])
                p50 = float(wait_query(port, f"histogram_quantile(0.5, armprofd_spe_latency_cycles_bucket{{{LOAD}}})")[0]["value"][1])
            assert got == count, (got, count)
            assert 1 <= p50 <= 65536, p50
            print(f"  latency histogram ({'native' if native else 'classic'}): count {got:.0f}, p50 {p50:.1f} cycles")
            print(f"{'protobuf' if native else 'OpenMetrics'} scrape: up=1, "
                  f"requests_total stored {stored:.0f} <= served {served:.0f}")
        finally:
            prom.terminate()
            try:
                prom.wait(10)
            except subprocess.TimeoutExpired:
                prom.kill()
            shutil.rmtree(tmp, ignore_errors=True)


try:
    run(native=False)
    run(native=True)
finally:
    shutil.rmtree(gen_dir, ignore_errors=True)
