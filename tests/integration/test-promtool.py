#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""promtool (Prometheus's own linter) accepts what /metrics serves."""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, skip  # noqa: E402

promtool = shutil.which("promtool")
if not promtool:
    skip("promtool not installed (Debian package 'prometheus')")

with Daemon() as d:
    d.wait_ready()
    d.get("/nope")  # so request counters have samples with labels
    body = d.get("/metrics")[2]
    r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    out = (r.stdout + r.stderr).decode()
    print(out)
    if r.returncode != 0 or out.strip():
        print("promtool check metrics failed on:\n" + body.decode())
        sys.exit(1)
    # The check can fail: a broken exposition is rejected.
    bad = body + b"armprofd_undocumented_thing 1\n"
    r = subprocess.run([promtool, "check", "metrics"], input=bad, capture_output=True)
    if r.returncode == 0:
        print("promtool accepted a metric without HELP; the check is not effective")
        sys.exit(1)
print("promtool check metrics: clean")
