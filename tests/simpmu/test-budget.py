#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The CPU budget held live: the real armprofd on the simulated arm_spe PMU.

Each simulated core executes OPS operations a second and writes one record
every sample_period operations of its event (simpmu `ops_per_sec`), so a
period the daemon raises with PERF_EVENT_IOC_PERIOD slows the core down as
the hardware would. With a budget far below what the collector needs at the
configured period ([spe] period, the default), on a 4-CPU host:

  raise    within a few windows the budget says throttled, on /metrics
           (armprofd_budget_throttled, armprofd_budget_slowdown,
           armprofd_spe_sample_period) and /status; the period is the
           configured one times the slowdown, on /status and in the period
           every simulated event was given last (the shim's log); the records
           a second fall by the slowdown (the simulator's rate, not ours)
  holds    a window measured while records still come shows the collector's
           share under the budget
  restore  once the host goes idle the slowdown steps back to 1, the
           events get the configured period again, and the metrics say so

As root, the cpu-clock sampler too (no simulation: the kernel's events): a
budget no collector meets lowers the frequency to what the slowdown gives,
and the period of every sample the kernel reports (PERF_SAMPLE_PERIOD, in
the CPU profile's cpu/samples) is 1 s / that frequency; a reload with no
budget brings the configured frequency back, and the kernel's periods with it.
"""

import json
import signal
import os
import re
import subprocess
import sys
import tempfile
import time

SRC = os.environ["ARMPROFD_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from armprofd_test import Daemon, parse_prom_text, simpmu_setup  # noqa: E402
from pushstore import Profile  # noqa: E402

simpmu = simpmu_setup()

spegen, shim = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
os.environ.setdefault("ARMPROFD_BIN", os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "daemon", "armprofd"))
N1_MIDR = "0x00000000413fd0c1"
CPUS = 4
PERIOD = 1 << 20                 # [spe] period's default
RATE = 20000                     # records/s per CPU at the configured period
OPS = RATE * PERIOD              # operations/s per simulated core
RECORDS = 20000                  # per CPU, looped
# % of the 4 CPUs: 16 ms of collector CPU a second, a few times less than the records need, and
# well above what an idle collector costs (under ASan about 4 ms a second).
BUDGET = 0.4
WINDOW = 2.0


def metrics(d):
    status, _, body = d.get("/metrics")
    assert status == 200, status
    return parse_prom_text(body.decode())


def gauge(m, name):
    return m.get((name, frozenset()))


def records(m):
    return sum(v for (n, _), v in m.items() if n == "armprofd_spe_records_total")


def status(d):
    s, _, body = d.get("/status")
    assert s == 200, s
    return json.loads(body)


def spe_of(st):
    return next(c for c in st["collectors"] if c["name"] == "spe")


def last_periods(scen):
    """The period each simulated CPU's event was given last (PERF_EVENT_IOC_PERIOD), from sim.log."""
    out = {}
    path = os.path.join(scen, "sim.log")
    for line in open(path).read().splitlines() if os.path.exists(path) else []:
        m = re.search(r"cpu=(\d+) period=(\d+)", line)
        if m:
            out[int(m.group(1))] = int(m.group(2))
    return out


def wait(what, cond, timeout, d):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s\n" + d.log()[-3000:]
        time.sleep(0.2)


def sample_periods(d, seconds):
    """The period (ns) of each sample of a CPU profile taken over the next seconds: cpu / samples."""
    status, _, body = d.request("GET", f"/debug/pprof/profile?seconds={seconds}", timeout=seconds + 10)
    assert status == 200, (status, body[:200])
    p = Profile(body)
    names = [t for t, _ in p.sample_types]
    i_cpu, i_n = names.index("cpu"), names.index("samples")
    return {v[i_cpu] // v[i_n] for v, _, _ in p.samples if v[i_n]}


def sampler_case():
    if os.geteuid() != 0:
        print("sampler part skipped: cpu-clock sampling of every process needs root")
        return
    freq = 64
    # One-second epochs: a profile of the next seconds holds no sample of an epoch before a change.
    config = ("[store]\nepoch = 1s\n[pmu]\nenable = no\ninterval = 250ms\n[spe]\nenable = no\n"
              "[sampler]\nenable = yes\n"
              f"frequency = {freq}\nunwind = fp\n[budget]\nwindow = 1s\ncpu_percent = ")
    spin = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count() or 1)]
    try:
        with Daemon(config_text=config + "0.0001\n") as d:
            d.wait_serving()
            m = wait("the sampler throttled", lambda: (lambda m: m if gauge(m, "armprofd_budget_throttled") == 1
                                                        else None)(metrics(d)), 30, d)
            slowdown = int(gauge(m, "armprofd_budget_slowdown"))
            want = max(freq // slowdown, 1)
            assert gauge(m, "armprofd_sampler_frequency_hertz") == want, (m, slowdown)
            assert status(d)["budget"]["sampler_frequency"] == want
            time.sleep(2)
            periods = sample_periods(d, 3)
            assert periods == {10**9 // want}, (periods, want)
            # No budget: the configured frequency at once, and the kernel's periods with it.
            with open(d.config, "w") as f:
                f.write(config + "0\n")
            d.signal(signal.SIGHUP)
            d.wait_log(r"budget: .* sampling at the configured rate again", 10)
            m = wait("the view after the reload", lambda: (lambda m: m if gauge(m, "armprofd_budget_throttled") == 0
                                                            else None)(metrics(d)), 5, d)
            assert gauge(m, "armprofd_sampler_frequency_hertz") == freq, m
            time.sleep(2)
            periods = sample_periods(d, 2)
            assert periods == {10**9 // freq}, (periods, freq)
            print(f"sampler: {freq} Hz -> {want} Hz (slowdown {slowdown}) and back; the kernel's sample periods "
                  f"{10**9 // want} ns then {10**9 // freq} ns")
    finally:
        for p in spin:
            p.kill()
            p.wait()


def main():
    sampler_case()
    with tempfile.TemporaryDirectory(prefix="armprofd-budget-") as tmp:
        gen, scen, sysfs = (os.path.join(tmp, x) for x in ("gen", "scen", "sys"))
        os.makedirs(gen)
        subprocess.run([spegen, "--out-dir", gen, "--prefix", "g", "--ts", "--cpus", str(CPUS), "--scenario",
                        "all", "--records", str(RECORDS * CPUS), "--padded", "--no-perf-data"],
                       check=True, stdout=subprocess.DEVNULL)
        simpmu.setup(gen, scen, sysfs, cpus=f"0-{CPUS - 1}", prefix="g",
                     keys=[f"ops_per_sec={OPS}", "batch_ms=10", "loop=1"])
        for cpu in range(CPUS):
            simpmu.write(os.path.join(sysfs, "devices", "system", "cpu", f"cpu{cpu}", "regs", "identification",
                                      "midr_el1"), N1_MIDR + "\n")
        env = dict(os.environ, LD_PRELOAD=shim, ARMPROFD_SIMPMU_DIR=scen, ARMPROFD_SYSFS_ROOT=sysfs)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
        config = (f"[pmu]\nenable = no\n[sampler]\nenable = no\n"
                  f"[budget]\ncpu_percent = {BUDGET}\nwindow = {WINDOW:g}s\n")
        with Daemon(config_text=config, env=env) as d:
            d.wait_serving()
            m = metrics(d)
            assert gauge(m, "armprofd_budget_throttled") == 0, m
            assert gauge(m, "armprofd_budget_limit_ratio") == BUDGET / 100, m

            # Raise: the collector needs far more than the budget at the configured period.
            r0, t0 = records(m), time.monotonic()
            m = wait("throttled", lambda: (lambda m: m if gauge(m, "armprofd_budget_throttled") == 1 else None)(
                metrics(d)), 30, d)
            rate_before = (records(m) - r0) / (time.monotonic() - t0)
            slowdown = int(gauge(m, "armprofd_budget_slowdown"))
            assert slowdown >= 2 and slowdown & (slowdown - 1) == 0, slowdown
            assert gauge(m, "armprofd_budget_cpu_ratio") > BUDGET / 100, m
            st = status(d)
            b = st["budget"]
            assert b["throttled"] and b["applies"] and b["cpus"] == CPUS, b
            assert b["collector_cpu_percent"] > BUDGET and b["raises"] >= 1, b
            assert b["cpu_percent"] == BUDGET and b["window_seconds"] == WINDOW, b
            d.wait_log(r"budget: the collector used .* above \[budget\] cpu_percent = 0\.4: sampling \d+ times", 5)

            # Hold: the slowdown settles (a raise needs a window over the budget), then a window
            # with records flowing measures the collector under the budget.
            def settled():
                st = status(d)
                b = st["budget"]
                return st if b["throttled"] and b["collector_cpu_percent"] is not None and \
                    b["collector_cpu_percent"] <= BUDGET and b["windows"] > 0 else None
            w_start = status(d)["budget"]["windows"]
            r1 = records(metrics(d))
            st = wait("a window under the budget", settled, 30, d)
            b = st["budget"]
            assert b["windows"] > w_start, b
            assert records(metrics(d)) > r1, "no records came while the budget held"
            slowdown = b["slowdown"]
            period = PERIOD * slowdown
            assert spe_of(st)["period"] == period, (spe_of(st), b)
            assert b["spe_period"] == period, b
            m = metrics(d)
            assert gauge(m, "armprofd_spe_sample_period") == period, m
            assert last_periods(scen) == {cpu: period for cpu in range(CPUS)}, last_periods(scen)
            # The simulator's cores slowed down by the slowdown: records a second against before.
            r2, t2 = records(m), time.monotonic()
            time.sleep(2)
            rate_after = (records(metrics(d)) - r2) / (time.monotonic() - t2)
            assert rate_after < 1.5 * rate_before / slowdown, (rate_before, rate_after, slowdown)
            print(f"budget {BUDGET}% of {CPUS} CPUs: slowdown {slowdown}, records/s {rate_before:.0f} -> "
                  f"{rate_after:.0f}, collector {b['collector_cpu_percent']:.4f}% of the host")

            # Restore: the host goes idle (the simulated cores execute nothing), the collector with it,
            # and the period comes back a step a window.
            open(os.path.join(scen, "idle"), "w").close()
            st = wait("the configured period back", lambda: (lambda st: st if not st["budget"]["throttled"] and
                                                               spe_of(st)["period"] == PERIOD else None)(status(d)),
                      60, d)
            b = st["budget"]
            assert b["slowdown"] == 1 and b["restores"] >= 1, b
            assert spe_of(st)["period"] == PERIOD and b["spe_period"] == PERIOD, (spe_of(st), b)
            assert last_periods(scen) == {cpu: PERIOD for cpu in range(CPUS)}, last_periods(scen)
            m = metrics(d)
            assert gauge(m, "armprofd_budget_throttled") == 0 and gauge(m, "armprofd_budget_slowdown") == 1, m
            assert gauge(m, "armprofd_spe_sample_period") == PERIOD, m
            changes = {dict(k[1])["direction"]: v for k, v in m.items() if k[0] == "armprofd_budget_changes_total"}
            assert changes["raise"] >= 1 and changes["restore"] >= 1, changes
            d.wait_log(r"budget: .* sampling at the configured rate again", 5)
            print(f"restored after {b['restores']} step(s); {b['windows']} windows")


if __name__ == "__main__":
    main()
