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

Two files of the same records (one seed), laid out two ways:
  slots  64-byte records in the Neoverse N1 fixed-slot layout, as the hardware
         writes them (quipper's N1 test record); records the slots cannot hold (extended
         headers, shuffled noise) keep the split layout. All rows.
  split  every record's packets back to back with its padding split at random
         around them (armprofd-spegen --pad-layout=split): packet offsets vary from
         record to record, the decoder's worst case. Decode rows and perf -e only.

Every figure is the best of RUNS runs (perf's too), each process pinned to one CPU.
Usage: bench-replay.py [RECORDS]   (default 5,000,000)"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

build = os.environ.get("ARMPROFD_BUILD_DIR", ".")
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
dump = os.path.join(build, "tests", "spe", "spe-replay-dump")
daemon = os.path.join(build, "daemon", "armprofd")
records = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
RUNS = 5
# The same CPU for every process: the figures then compare like with like.
pin = ["taskset", "-c", str(max(os.sched_getaffinity(0)))] if shutil.which("taskset") else []


def timed(argv, runs=RUNS):
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(pin + argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def decode_only(data):
    best = None
    for _ in range(RUNS):
        out = subprocess.run(pin + [dump, "--decode-only", data], check=True, capture_output=True, text=True).stdout
        secs = float(out.split("decode_seconds")[1])
        best = secs if best is None else min(best, secs)
    return best


def measure(tmp, layout, full):
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", layout, "--records", str(records), "--cpus", "8",
                    "--scenario", "all", "--padded", "--pad-layout=" + layout, "--no-bin", "--no-truth"],
                   check=True, stdout=subprocess.DEVNULL)
    data = os.path.join(tmp, layout + ".data")
    share = ""
    with open(os.path.join(tmp, layout + ".truth.txt")) as f:
        kv = dict(line.strip().split("=", 1) for line in f if "=" in line)
    if "layout.slots" in kv:
        share = f", {int(kv['layout.slots']) / records:.0%} of them in N1 slots"
    print(f"\n{layout}: {records:,} SPE records, {os.path.getsize(data) / 1e6:.0f} MB perf.data "
          f"(8 CPUs, all scenarios, 64-byte records{share})")
    subprocess.run(["cat", data], stdout=subprocess.DEVNULL)  # warm the page cache

    rows = [("armprofd decode only (payloads in memory)", decode_only(data)),
            ("armprofd replay (read + decode + attribute)", timed([dump, "--count", data]))]
    if full:
        r = subprocess.run([daemon, "--replay", data, "--once"], capture_output=True)
        if r.returncode == 0:
            rows.append(("armprofd --replay --once (+ aggregates)", timed([daemon, "--replay", data, "--once"])))
    perf = shutil.which("perf")
    if perf:
        rows.append(("perf script --itrace=e (decode only)", timed([perf, "script", "-i", data, "--itrace=e"])))
        if full:
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


with tempfile.TemporaryDirectory(prefix="armprofd-bench-") as tmp:
    print(f"best of {RUNS} runs" + (f", pinned to CPU {pin[-1]}" if pin else ""))
    measure(tmp, "slots", True)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    measure(tmp, "split", False)
