#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon counts real software events per CPU on this machine: page faults made
on CPU 0 and context switches made on CPU 1 show up on /metrics and /counters;
hardware events this machine lacks are reported unavailable and it keeps serving."""

import json
import mmap
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, parse_prom_text, skip  # noqa: E402

PAGES = 2000
ROUND_TRIPS = 1000

if os.geteuid() != 0:
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        if int(f.read()) > 0:
            skip("system-wide counting needs root, CAP_PERFMON or perf_event_paranoid <= 0")


def value(d, name, cpu):
    s = parse_prom_text(d.get("/metrics")[2].decode())
    return s.get((name, frozenset({("cpu", str(cpu))})))


def wait_value(d, name, cpu, pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    v = None
    while time.monotonic() < deadline:
        v = value(d, name, cpu)
        if v is not None and pred(v):
            return v
        time.sleep(0.1)
    raise AssertionError(f"{name}{{cpu={cpu}}} = {v}, condition not met; log:\n{d.log()}")


def page_faults_on_cpu0():
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {0})
        m = mmap.mmap(-1, PAGES * mmap.PAGESIZE)
        for i in range(PAGES):
            m[i * mmap.PAGESIZE] = 1  # first touch of a fresh page: one fault each
        os._exit(0)
    os.waitpid(pid, 0)


def ping_pong_on_cpu1():
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {1})
        for _ in range(ROUND_TRIPS):
            os.read(r1, 1)
            os.write(w2, b"y")
        os._exit(0)
    os.sched_setaffinity(0, {1})
    try:
        for _ in range(ROUND_TRIPS):
            os.write(w1, b"x")
            os.read(r2, 1)
    finally:
        os.sched_setaffinity(0, set(range(os.cpu_count())))
    os.waitpid(pid, 0)
    for fd in (r1, w1, r2, w2):
        os.close(fd)


with Daemon(config_text="[pmu]\ninterval = 200ms\n") as d:
    d.wait_ready()
    before = wait_value(d, "armprofd_page_faults_total", 0, lambda v: True)
    page_faults_on_cpu0()
    after = wait_value(d, "armprofd_page_faults_total", 0, lambda v: v >= before + PAGES)
    print(f"page faults on cpu 0: +{after - before:.0f} (made {PAGES})")

    if os.cpu_count() >= 2:
        before = wait_value(d, "armprofd_context_switches_total", 1, lambda v: True)
        ping_pong_on_cpu1()
        after = wait_value(d, "armprofd_context_switches_total", 1,
                           lambda v: v >= before + ROUND_TRIPS)
        print(f"context switches on cpu 1: +{after - before:.0f} ({ROUND_TRIPS} round trips)")

    # Hardware events this machine cannot count are reported, not fatal.
    s = parse_prom_text(d.get("/metrics")[2].decode())
    perf = shutil.which("perf")
    if perf:
        r = subprocess.run([perf, "stat", "-e", "cycles", "true"], capture_output=True, text=True)
        no_cycles = "not supported" in r.stderr or "<not counted>" in r.stderr or r.returncode != 0
        avail = s[("armprofd_pmu_event_available", frozenset({("event", "cycles")}))]
        assert avail == (0 if no_cycles else 1), (avail, r.stderr)
        if no_cycles:
            assert not any(k[0] == "armprofd_cpu_cycles_total" for k in s), "cycles exported without a PMU"
            assert not any(k[0] == "armprofd_instructions_per_cycle" for k in s), "IPC without cycles"
            print("cycles/instructions: unavailable here, as perf stat says")
    assert s[("armprofd_collector_up", frozenset({("collector", "pmu")}))] == 1
    assert s[("armprofd_pmu_event_available", frozenset({("event", "page_faults")}))] == 1

    # /counters: per CPU and a host aggregate that is their sum.
    c = json.loads(d.get("/counters")[2])
    assert c["state"] in ("ok", "degraded"), c["state"]
    cpus = {e["cpu"]: e for e in c["cpus"]}
    assert set(cpus) == set(range(os.cpu_count())), cpus.keys()
    host = c["host"]["events"]["page_faults"]["total"]
    assert host == sum(e["events"]["page_faults"]["total"] for e in c["cpus"]), host
    one = json.loads(d.get("/counters?cpu=1")[2])
    assert [e["cpu"] for e in one["cpus"]] == [1], one["cpus"]
    assert d.get("/counters?cpu=x")[0] == 400 and d.get("/counters?cpus=1")[0] == 400
    st = json.loads(d.get("/status")[2])
    pmu = [x for x in st["collectors"] if x["name"] == "pmu"][0]
    assert pmu["up"] and pmu["events"]["page_faults"]["available"], pmu
    assert d.get("/healthz")[0] == 200
    rc, took = d.stop()
    assert rc == 0, d.log()
