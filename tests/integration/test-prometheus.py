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


def run(native):
    with Daemon(args=["--log-level", "debug"]) as d:
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
            print(f"{'protobuf' if native else 'OpenMetrics'} scrape: up=1, "
                  f"requests_total stored {stored:.0f} <= served {served:.0f}")
        finally:
            prom.terminate()
            try:
                prom.wait(10)
            except subprocess.TimeoutExpired:
                prom.kill()
            shutil.rmtree(tmp, ignore_errors=True)


run(native=False)
run(native=True)
