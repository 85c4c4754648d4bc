#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""promtool (Prometheus's own linter) accepts what /metrics serves: on a daemon with
no SPE source, and on one that replayed a generator file so every SPE family,
including the latency histograms, is present."""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, skip  # noqa: E402

promtool = shutil.which("promtool")
if not promtool:
    skip("promtool not installed (Debian package 'prometheus')")
spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")


def lint(args, must_have):
    with Daemon(args=args) as d:
        d.wait_ready()
        d.get("/nope")  # so request counters have samples with labels
        body = d.get("/metrics")[2]
    r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    out = (r.stdout + r.stderr).decode()
    if r.returncode != 0 or out.strip():
        print(f"promtool check metrics failed ({args}):\n{out}\non:\n{body.decode()}")
        sys.exit(1)
    text = body.decode()
    for name in must_have:
        assert f"\n{name}" in text, f"{name} missing from /metrics ({args})"
    return body


plain = lint([], ["armprofd_build_info", "armprofd_collector_up", "armprofd_page_faults_total"])
assert b"armprofd_spe_records_total" not in plain, "SPE counters without an SPE source"

with tempfile.TemporaryDirectory(prefix="armprofd-promtool-") as tmp:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "p", "--records", "5000", "--scenario", "all",
                    "--garbage", "0.01", "--no-bin", "--no-truth"], check=True, stdout=subprocess.DEVNULL)
    spe = lint(["--replay", os.path.join(tmp, "p.data")],
               ["armprofd_spe_records_total", "armprofd_spe_bytes_total", "armprofd_spe_decode_errors_total",
                "armprofd_spe_loads_total", "armprofd_spe_peer_snoops_total", "armprofd_spe_latency_cycles_bucket",
                "armprofd_store_evictions_total", "armprofd_store_records_total"])

# The check can fail: a broken exposition is rejected.
bad = plain + b"armprofd_undocumented_thing 1\n"
r = subprocess.run([promtool, "check", "metrics"], input=bad, capture_output=True)
if r.returncode == 0:
    print("promtool accepted a metric without HELP; the check is not effective")
    sys.exit(1)
print("promtool check metrics: clean without SPE and with replayed SPE data")
