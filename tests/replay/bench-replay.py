#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Benchmark (prints figures, asserts nothing about time): records/s of armprofd's
replay path against perf's own SPE decoding, on the same generated perf.data.

  armprofd decode      the record decoder alone over the file's AUX payloads (read into memory first)
  armprofd replay      perf.data reader + per-CPU decoders + thread attribution
  armprofd --once      the daemon's --replay --once (adds the aggregates), when built
  perf --itrace=e      perf's decode-only path (errors only, no samples synthesised)
  perf --itrace=i1i    perf synthesising one sample per record
  perf c2c report      perf's cache-line analysis (the baseline for the aggregates)

Usage: bench-replay.py [RECORDS]   (default 5,000,000)"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

build = os.environ.get("ARMPROFD_BUILD_DIR", ".")
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
dump = os.path.join(build, "tests", "replay", "spe-replay-dump")
daemon = os.path.join(build, "daemon", "armprofd")
records = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000


def timed(argv, runs):
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


with tempfile.TemporaryDirectory(prefix="armprofd-bench-") as tmp:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "b", "--records", str(records), "--cpus", "8",
                    "--scenario", "all", "--padded", "--no-bin", "--no-truth"],
                   check=True, stdout=subprocess.DEVNULL)
    data = os.path.join(tmp, "b.data")
    size = os.path.getsize(data)
    print(f"input: {records:,} SPE records, {size / 1e6:.0f} MB perf.data (8 CPUs, all scenarios, 64-byte records)")
    subprocess.run(["cat", data], stdout=subprocess.DEVNULL)  # warm the page cache

    best = None
    for _ in range(3):
        out = subprocess.run([dump, "--decode-only", data], check=True, capture_output=True, text=True).stdout
        secs = float(out.split("decode_seconds")[1])
        best = secs if best is None else min(best, secs)
    rows = [("armprofd decode only (payloads in memory)", best),
            ("armprofd replay (read + decode + attribute)", timed([dump, "--count", data], 3))]
    out = subprocess.run([daemon, "--help"], capture_output=True, text=True).stdout
    if "--once" in out:
        r = subprocess.run([daemon, "--replay", data, "--once"], capture_output=True)
        if r.returncode == 0:
            rows.append(("armprofd --replay --once (+ aggregates)", timed([daemon, "--replay", data, "--once"], 3)))
    perf = shutil.which("perf")
    if perf:
        rows.append(("perf script --itrace=e (decode only)", timed([perf, "script", "-i", data, "--itrace=e"], 1)))
        rows.append(("perf script --itrace=i1i (one sample per record)",
                     timed([perf, "script", "-i", data, "--itrace=i1i"], 1)))
        rows.append(("perf c2c report --stdio (cache lines)",
                     timed([perf, "c2c", "report", "-i", data, "--stdio", "-N"], 1)))
    else:
        print("perf not installed: no baseline")

    t = dict(rows)
    base = t.get("perf script --itrace=e (decode only)")
    c2c = t.get("perf c2c report --stdio (cache lines)")
    print(f"{'path':52} {'seconds':>8} {'records/s':>12} {'vs perf -e':>11} {'vs c2c':>8}")
    for name, secs in rows:
        ratio = f"{base / secs:10.1f}x" if base else "-"
        rc2c = f"{c2c / secs:7.1f}x" if c2c else "-"
        print(f"{name:52} {secs:8.3f} {records / secs / 1e6:10.1f} M {ratio:>11} {rc2c:>8}")
