#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A real Prometheus scrapes armprofd: once as it negotiates by default (OpenMetrics
in 2.42), once with native histograms enabled (protobuf). The test then asks
Prometheus's HTTP API what it stored."""

import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, parse_prom_text, prom_wait_query as wait_query, prometheus, skip  # noqa: E402

if not shutil.which("prometheus"):
    skip("prometheus not installed (Debian package 'prometheus')")


spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")
gen_dir = tempfile.mkdtemp(prefix="armprofd-prom-gen-")
subprocess.run([spegen, "--out-dir", gen_dir, "--prefix", "p", "--records", "20000", "--scenario", "all",
                "--no-bin"], check=True, stdout=subprocess.DEVNULL)
REPLAY = os.path.join(gen_dir, "p.data")
LOAD = 'kind="total",op="load"'


def num(s):
    return int(s, 16) if s.startswith("0x") else int(s)


# The generator's truth: total latencies of the loads (op_class 1, op_subclass
# bit 0 clear: not a store) that have one; their median is what Prometheus must find.
with open(os.path.join(gen_dir, "p.truth.csv"), newline="") as f:
    LOAD_LATENCIES = [num(r["tot_lat"]) for r in csv.DictReader(f)
                      if r["kind"] == "record" and r["op_class"] == "1" and not num(r["op_subclass"]) & 1
                      and r["tot_lat"]]
TRUE_MEDIAN = statistics.median(LOAD_LATENCIES)
# Native histograms (schema 7) have buckets 2^(1/128) (0.5%) wide and
# Prometheus interpolates inside one: 1%.
NATIVE_TOLERANCE = 0.01


def classic_bucket(served, value):
    """The (lower, upper] bounds of the served classic bucket holding value."""
    bounds = sorted(float(dict(k[1])["le"]) for k in served
                    if k[0] == "armprofd_spe_latency_cycles_bucket" and ("kind", "total") in k[1]
                    and ("op", "load") in k[1])
    lower = 0.0
    for upper in bounds:
        if value <= upper:
            return lower, upper
        lower = upper
    raise AssertionError(f"no classic bucket holds {value}: {bounds}")


def run(native):
    with Daemon(args=["--log-level", "debug", "--replay", REPLAY]) as d:
        d.wait_ready()
        with tempfile.TemporaryDirectory(prefix="armprofd-prom-", ignore_cleanup_errors=True) as tmp, \
                prometheus(tmp, [f"{d.host}:{d.port}"], native=native) as port:
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
            assert got == count == len(LOAD_LATENCIES), (got, count, len(LOAD_LATENCIES))
            if native:
                assert abs(p50 - TRUE_MEDIAN) <= NATIVE_TOLERANCE * TRUE_MEDIAN, (p50, TRUE_MEDIAN)
                where = f"within {NATIVE_TOLERANCE:.0%} of"
            else:
                lower, upper = classic_bucket(ours, TRUE_MEDIAN)
                assert lower <= p50 <= upper, (p50, TRUE_MEDIAN, lower, upper)
                where = f"in the bucket ({lower:g}, {upper:g}] of"
            print(f"  latency histogram ({'native' if native else 'classic'}): count {got:.0f}, p50 {p50:.2f} cycles, "
                  f"{where} the true median {TRUE_MEDIAN:g}")
            print(f"{'protobuf' if native else 'OpenMetrics'} scrape: up=1, "
                  f"requests_total stored {stored:.0f} <= served {served:.0f}")


try:
    run(native=False)
    run(native=True)
finally:
    shutil.rmtree(gen_dir, ignore_errors=True)
