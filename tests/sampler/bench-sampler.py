#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Benchmark (prints, asserts nothing): the daemon's own CPU per wall second
while every CPU of this machine runs spin-nofp, with the cpu-clock sampler at
its default 19 Hz (CFI unwinding, auto), with unwind = fp, and, as the named
baseline of the same run, with the sampler off. The figures come from the
kernel's accounting of the daemon's threads (/proc/PID/task/*/schedstat),
not from the daemon.

  ARMPROFD_BUILD_DIR=build python3 tests/sampler/bench-sampler.py [SECONDS]

Needs root (CPU-wide perf events)."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
os.environ.setdefault("ARMPROFD_BIN", os.path.join(os.environ.get("ARMPROFD_BUILD_DIR", "build"), "daemon",
                                                   "armprofd"))
from armprofd_test import Daemon, skip  # noqa: E402

if os.geteuid() != 0:
    skip("needs root: CPU-wide perf events")
BUILD = os.environ.get("ARMPROFD_BUILD_DIR", "build")
SPIN = os.path.join(BUILD, "tests", "sampler", "spin-nofp")
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
BASE = "[store]\nepoch = 1s\n[pmu]\nenable = no\n[spe]\nenable = no\n"


def cpu_seconds(pid):
    """The process's CPU time in ns resolution: every thread's /proc/PID/task/TID/schedstat (its first
    field, the time it ran; proc(5)), where /proc/PID/stat only counts clock ticks (10 ms)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total / 1e9


def run(name, config):
    with Daemon(config_text=BASE + config) as d:
        d.wait_serving()
        time.sleep(1.0)
        spins = [subprocess.Popen([SPIN, str(SECONDS + 2), str(c)], stdout=subprocess.DEVNULL)
                 for c in range(os.cpu_count())]
        time.sleep(1.0)
        c0, t0 = cpu_seconds(d.proc.pid), time.monotonic()
        time.sleep(SECONDS)
        c1, t1 = cpu_seconds(d.proc.pid), time.monotonic()
        st, _, body = d.get("/metrics")
        samples = sum(float(l.split()[-1]) for l in body.decode().splitlines()
                      if l.startswith("armprofd_cpu_samples_total{"))
        for s in spins:
            s.wait()
    per_s = (c1 - c0) / (t1 - t0)
    print(f"{name:<22} daemon CPU {per_s * 1000:8.2f} ms per wall second "
          f"({per_s * 100 / os.cpu_count():.3f}% of {os.cpu_count()} CPUs), {samples:.0f} samples in all")
    return per_s


print(f"{os.cpu_count()} CPUs busy with spin-nofp for {SECONDS:.0f} s each run; the daemon's CPU from "
      f"/proc/PID/task/*/schedstat")
off = run("sampler off (baseline)", "[sampler]\nenable = no\n")
fp = run("19 Hz, unwind = fp", "[sampler]\nunwind = fp\n")
auto = run("19 Hz, unwind = auto", "")
print(f"cost over the baseline: fp {(fp - off) * 1000:+.2f} ms/s, auto (CFI) {(auto - off) * 1000:+.2f} ms/s; "
      f"auto / fp = {auto / fp if fp else float('nan'):.2f}x")
