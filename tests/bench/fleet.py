#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's own cost on simulated hosts of 64, 192 and 384 CPUs (issue 19's harness).

Prints a table; asserts nothing about time. One command:

    meson test -C build --benchmark fleet      (or: tests/bench/fleet.py BUILD [CPUS...])

Each host is the real armprofd with live SPE from the simulated arm_spe PMU
(tests/simpmu: an LD_PRELOAD shim playing the kernel and one SPE core per
CPU, each a producer thread in the daemon's process), a fake sysfs with N
CPUs, the store, the exporters and push to a loopback profile store on.

The rate: `[spe] period` counts operations; a busy 3 GHz core retiring about
one operation a cycle does 3e9 / 1,048,576 (the default period) = 2,861
records a second, 183 KB/s of 64-byte records. The simulated cores write
that many on average (`rate=`), each at its own pace within 25% of it
(`rate_spread=`: cores running different code do not retire at one speed,
and rings enabled together at one rate would cross their wakeup points
together for ever), so a 384-CPU host sends 1.1 M records/s.

Per N it reports:
  startup     spawn to READY=1 on $NOTIFY_SOCKET
  cpu         the daemon's threads (armprofd_collector_busy_seconds_total, all but
              "other", where the simulated cores run) over a steady window: seconds a
              second, as a share of one core and of the N-core host
  rss         VmRSS at the end and VmHWM (peak), without and with the rings: the
              shared AUX and data rings (memfd mappings in smaps) are apart
  records     decoded (armprofd_spe_records_total) and dropped by the simulated
              kernel for want of room in an AUX area (cpuN.dropped): "stopped",
              no room for the record, and "disabled", run while a truncation
              (a full area) had turned the event off until the daemon turned
              it on again; and when: starting, in the window, under the
              scrapes. The column counts those after the start: the records a
              core ran before the daemon had opened and enabled its event
              ("noevent", "disabled" while starting) are not the daemon
              falling behind. Beside them, the daemon's own count of
              truncations (armprofd_spe_aux_truncated_total) in each phase
  data ring   the records the kernel lost for want of room in a data ring
              (armprofd_spe_lost_records_total: switches, mappings, and the
              PERF_RECORD_AUX of chunks whose SPE records are read all the same,
              reason "datalost")
  /metrics    its size, p50/p99 over 1,000 sequential scrapes, and under wrk -c64
  /hotlines   p99 over 200 sequential queries
  wakeups     the collector thread's voluntary context switches a second in the
              window (/proc/PID/task/TID/status)
  waited      the time the collector was runnable but waited for a CPU, a second, in
              the window and under the scrapes (/proc/PID/task/TID/schedstat)
  budget      the slowdown [budget] cpu_percent (its default) imposed by the end (1x: none)
  evictions   each bounded table's evictions per 1,000 records the store counted, both over the closed
              epochs (armprofd_store_evictions_total, armprofd_store_records_total)
  per record  the collector thread's CPU time a record in the window (its busy seconds over the records
              decoded then) beside the replay's: `armprofd --replay --once` of a perf.data of the same
              streams (the generator's, 64 CPUs), its CPU time (getrusage of the child, user + system)
              less that of a replay of 1% of the records, over the records between: what a record costs
              past the daemon's start. Both are CPU time, not wall time: the machine is shared, and a
              thread waiting for a CPU costs nothing. And their ratio. Not the same mix of records:
              the file holds each CPU's stream once (the scenarios' busy CPUs have long streams, the
              noise CPUs short ones), the simulated cores play each at one rate, looped, so the hosts
              see more of the noise CPUs' one-off lines: their store evicts more (printed beside the
              replay's evictions). The collector's involuntary
              context switches a second in the window (/proc/PID/task/TID/status): how often something
              else took its CPU (the simulated cores, in the daemon's process, run beside it)

Usage: fleet.py [BUILD [CPUS...]] [--period N]: --period is the `[spe] period` the daemon is given
(default 1,048,576) and sets the simulated cores' rate to match (3e9 operations/s / N).
"""

import collections
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("ARMPROFD_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get("ARMPROFD_BUILD_DIR") or (sys.argv[1] if len(sys.argv) > 1 else "build")
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from armprofd_test import Daemon, parse_prom_text, schedstat, simpmu_setup  # noqa: E402
from pushstore import PushStore  # noqa: E402

simpmu = simpmu_setup()

SPEGEN = os.path.join(BUILD, "tests", "spegen", "armprofd-spegen")
SHIM = os.path.join(BUILD, "tests", "simpmu", "libarmprofd-simpmu.so")
os.environ.setdefault("ARMPROFD_BIN", os.path.join(BUILD, "daemon", "armprofd"))

OPS_PER_SEC = 3e9      # a busy 3 GHz core retiring an operation a cycle
DEFAULT_PERIOD = 1048576
PERIOD = DEFAULT_PERIOD   # --period
RATE = 2861            # records/s per CPU: 3e9 operations/s / the default period 1,048,576
RATE_SPREAD = 0.25     # each CPU's rate within 25% of RATE, their mean RATE
GEN_CPUS = 64          # the generator's most; CPU n replays stream n % 64
WARMUP, WINDOW = 5.0, 20.0
STREAM_SECONDS = 4     # each core's stream, looped
N1_MIDR = "0x00000000413fd0c1"
AUX, DATA = 256 << 10, 64 << 10  # the defaults of [spe] aux_buffer and data_buffer


def metrics(d):
    return parse_prom_text(d.get("/metrics")[2].decode())


def busy(m):
    return {dict(k[1])["thread"]: v for k, v in m.items() if k[0] == "armprofd_collector_busy_seconds_total"}


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l.split()[1] for l in f if l.startswith(key + ":")))


def smaps_kib(pid, scen):
    """Rss of the shared rings (the shim's "armprofd-simpmu" memfds, as the kernel's rings would be)
    and of the simulation's own data (its streams: the files under scen and their index memfd)."""
    rings = sim = 0
    kind = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
            if m:
                path = m.group(1)
                kind = ("rings" if path.startswith("/memfd:armprofd-simpmu ") else
                        "sim" if path.startswith("/memfd:armprofd-simpmu-stream") or path.startswith(scen) else None)
            elif kind and line.startswith("Rss:"):
                if kind == "rings":
                    rings += int(line.split()[1])
                else:
                    sim += int(line.split()[1])
    return rings, sim


def simpmu_log(scen):
    path = os.path.join(scen, "sim.log")
    return open(path).read().splitlines() if os.path.exists(path) else []


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed_gets(d, path, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        status, _, body = d.get(path)
        out.append((time.perf_counter() - t) * 1e3)
        assert status == 200, (path, status)
    return out, len(body)


def wrk(d, path):
    if not shutil.which("wrk"):
        return None
    r = subprocess.run(["wrk", "-t2", "-c64", "-d5s", "--latency", f"http://{d.address}{path}"],
                       capture_output=True, text=True)
    lat = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", r.stdout, re.M))
    rps = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
    if "Non-2xx" in r.stdout or "Socket errors" in r.stdout:
        print(r.stdout)
    return lat.get("50"), lat.get("99"), float(rps.group(1)) if rps else 0


LOST_REASONS = ("stopped", "disabled")  # no room in the AUX area; the event off after a truncation


def drops(scen, n):
    """The records n simulated cores never committed, by reason (cpuN.dropped, a line each):
    "stopped" found no room in the daemon's AUX area; "disabled" ran while the event was off: before
    the daemon enabled it, or after a full area's truncation turned it off and until the daemon
    turned it on again; "datalost" had its PERF_RECORD_AUX find the data ring full (the records are
    read all the same)."""
    count = collections.Counter()
    for cpu in range(n):
        count.update(simpmu.drop_counts(scen, cpu, LOST_REASONS + ("datalost",)))
    return count


def lost(why):
    return sum(why[r] for r in LOST_REASONS)


def truncated(m):
    return sum(v for k, v in m.items() if k[0] == "armprofd_spe_aux_truncated_total")


def collector_preempted(d):
    """The collector thread's involuntary context switches so far (something else took its CPU)."""
    with open(d.thread_path("collector", "status")) as f:
        return int(next(l.split()[1] for l in f if l.startswith("nonvoluntary_ctxt_switches:")))


def collector_waited(d):
    """Seconds the collector thread was runnable but waited for a CPU, so far."""
    return schedstat(d.thread_path("collector", "schedstat"))[1]


def host(tmp, gen, n, store):
    scen, sysfs = os.path.join(tmp, f"scen{n}"), os.path.join(tmp, f"sys{n}")
    # Short streams, looped; each core wakes every 10 ms and writes what is due (the simulation's
    # own cost, in the daemon's process as thread "other", stays small beside the daemon's).
    simpmu.setup(gen, scen, sysfs, cpus=f"0-{GEN_CPUS - 1}", prefix="g",
                 keys=[f"rate={RATE}", f"rate_spread={RATE_SPREAD}", "loop=1", "batch_ms=10"])
    # CPUs past the generator's replay its streams; the PMU covers all N.
    for cpu in range(GEN_CPUS, n):
        for ext in ("bin", "idx"):
            os.symlink(os.path.join(scen, f"cpu{cpu % GEN_CPUS}.{ext}"), os.path.join(scen, f"cpu{cpu}.{ext}"))
    with open(os.path.join(scen, "scenario")) as f:
        text = f.read().replace(f"cpus=0-{GEN_CPUS - 1}", f"cpus=0-{n - 1}")
    with open(os.path.join(scen, "scenario"), "w") as f:
        f.write(text)
    simpmu.build_sysfs(sysfs, f"0-{n - 1}", 42, f"0-{n - 1}", f"0-{n - 1}")
    for cpu in range(n):
        simpmu.write(os.path.join(sysfs, "devices", "system", "cpu", f"cpu{cpu}", "regs", "identification",
                                  "midr_el1"), N1_MIDR + "\n")

    sock_path = os.path.join(tmp, f"notify{n}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(60)
    env = dict(os.environ, LD_PRELOAD=SHIM, ARMPROFD_SIMPMU_DIR=scen, ARMPROFD_SYSFS_ROOT=sysfs,
               NOTIFY_SOCKET=sock_path)
    env.pop("WATCHDOG_USEC", None)
    # wrk's 64 connections come from one address: the per-client cap (8 by default) is raised for it.
    config = (f"[pmu]\nenable = no\n[spe]\nperiod = {PERIOD}\n"
              f"[http]\nmax_connections = 128\nper_ip_connections = 64\n"
              f"[push]\nurl = {store.url}\ninterval = 10s\n"
              f"spool_dir = {os.path.join(tmp, f'spool{n}')}\n")
    t0 = time.monotonic()
    d = Daemon(config_text=config, env=env)
    try:
        while "READY=1" not in sock.recv(4096).decode().split("\n"):
            pass
    except OSError:
        d.close()
        raise AssertionError(f"{n} CPUs: no READY=1; log:\n{d.log()[-3000:]}\nsim.log:\n"
                             + "\n".join(simpmu_log(scen)[-20:]))
    startup = time.monotonic() - t0
    sock.close()
    d.wait_serving()
    row = {"n": n, "startup": startup}
    try:
        time.sleep(WARMUP)
        m0, w0 = metrics(d), time.monotonic()
        drop0, sw0, q0 = lost(drops(scen, n)), d.thread_wakeups("collector"), collector_waited(d)
        iv0 = collector_preempted(d)
        time.sleep(WINDOW)
        m1, w1 = metrics(d), time.monotonic()
        drop1, sw1, q1 = lost(drops(scen, n)), d.thread_wakeups("collector"), collector_waited(d)
        iv1 = collector_preempted(d)
        row.update(wakeups=(sw1 - sw0) / (w1 - w0), preempted=(iv1 - iv0) / (w1 - w0))
        b0, b1 = busy(m0), busy(m1)
        own = sum(b1[t] - b0.get(t, 0) for t in b1 if t != "other") / (w1 - w0)
        row.update(cpu=own, threads={t: (b1[t] - b0.get(t, 0)) / (w1 - w0) for t in b1},
                   slowdown=m1.get(("armprofd_budget_slowdown", frozenset()), 1),
                   records=sum(v for k, v in m1.items() if k[0] == "armprofd_spe_records_total"),
                   rate=(sum(v for k, v in m1.items() if k[0] == "armprofd_spe_records_total") -
                         sum(v for k, v in m0.items() if k[0] == "armprofd_spe_records_total")) / (w1 - w0))
        # The collector thread's CPU time a record decoded in the window.
        row.update(live_ns=1e9 * (b1["collector"] - b0.get("collector", 0)) / max(row["rate"] * (w1 - w0), 1))
        scrapes, size = timed_gets(d, "/metrics", 1000)
        hot, _ = timed_gets(d, "/hotlines?window=1m", 200)
        row.update(metrics_bytes=size, metrics_p50=statistics.median(scrapes), metrics_p99=percentile(scrapes, 99),
                   hotlines_p99=percentile(hot, 99), wrk=wrk(d, "/metrics"))
        q2, w2 = collector_waited(d), time.monotonic()
        row.update(waited=[(q1 - q0) / (w1 - w0), (q2 - q1) / (w2 - w1)])
        pid = d.proc.pid
        rings, sim = smaps_kib(pid, os.path.realpath(scen))
        why, m2 = drops(scen, n), metrics(d)
        row.update(rss=status_kib(pid, "VmRSS"), hwm=status_kib(pid, "VmHWM"), rings=rings, sim=sim,
                   # Lost once the daemon runs: what the cores ran before it had enabled their
                   # events ("disabled" while starting) is not the daemon falling behind.
                   dropped=lost(why) - drop0, unannounced=why["datalost"],
                   data_lost=sum(v for k, v in m2.items() if k[0] == "armprofd_spe_lost_records_total"),
                   # When: starting and warming up, in the steady window, or under the scrapes and wrk.
                   dropped_phases=[drop0, drop1 - drop0, lost(why) - drop1],
                   truncations=[truncated(m0), truncated(m1) - truncated(m0), truncated(m2) - truncated(m1)],
                   # The store's evictions by table and the records they are out of, over the closed epochs.
                   evictions={dict(k[1])["table"]: v for k, v in m2.items() if k[0] == "armprofd_store_evictions_total"},
                   store_records=m2.get(("armprofd_store_records_total", frozenset()), 0),
                   pushes=len(store.records))
    finally:
        d.close()
    return row


def replay_cpu(data):
    """CPU seconds (user + system, getrusage of the child) of `armprofd --replay data --once`, and the
    records it stored (its JSON report)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([os.environ["ARMPROFD_BIN"], "--replay", data, "--once"], capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    totals = json.loads(r.stdout)["totals"]
    return cpu, totals["records"], totals["evictions"]


def replay_ns(tmp, per_cpu):
    """What a record costs the replay past its start, in ns of CPU: the full file's CPU time less that
    of 1% of its records (the same streams' start), over the records between; the best of three each
    (the machine is shared: the least disturbed run)."""
    small = os.path.join(tmp, "small")
    subprocess.run([SPEGEN, "--out-dir", small, "--prefix", "g", "--ts", "--cpus", str(GEN_CPUS), "--scenario",
                    "all", "--records", str(per_cpu * GEN_CPUS // 100), "--padded", "--no-bin", "--no-truth"],
                   check=True, stdout=subprocess.DEVNULL)
    full = [replay_cpu(os.path.join(tmp, "gen", "g.data")) for _ in range(3)]
    part = [replay_cpu(os.path.join(small, "g.data")) for _ in range(3)]
    (c1, r1, ev), (c0, r0, _) = min(full, key=lambda x: x[0]), min(part, key=lambda x: x[0])
    return 1e9 * (c1 - c0) / (r1 - r0), r1, {t: 1000 * v / r1 for t, v in ev.items()}


def main():
    global PERIOD, RATE
    args = sys.argv[2:]
    if "--period" in args:
        i = args.index("--period")
        PERIOD = int(args[i + 1])
        RATE = round(OPS_PER_SEC / PERIOD)
        del args[i:i + 2]
    cpus = [int(a) for a in args] or [64, 192, 384]
    for path in (SPEGEN, SHIM):
        if not os.path.exists(path):
            print(f"SKIP: {path} not built")
            sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="armprofd-fleet-") as tmp:
        gen = os.path.join(tmp, "gen")
        per_cpu = RATE * STREAM_SECONDS
        subprocess.run([SPEGEN, "--out-dir", gen, "--prefix", "g", "--ts", "--cpus", str(GEN_CPUS), "--scenario",
                        "all", "--records", str(per_cpu * GEN_CPUS), "--padded"],
                       check=True, stdout=subprocess.DEVNULL)
        store = PushStore(go=False)
        store.start()
        rows = [host(tmp, gen, n, store) for n in cpus]
        store.close()
        # The replay of the same streams, after the hosts: nothing of theirs runs beside it.
        rep_ns, rep_records, rep_evictions = replay_ns(tmp, per_cpu)
    period = "the default period" if PERIOD == DEFAULT_PERIOD else f"period {PERIOD:,}"
    print(f"\nfleet: {RATE} records/s per CPU ({period} on a busy 3 GHz core), "
          f"{WINDOW:.0f} s window after {WARMUP:.0f} s, this machine: {os.cpu_count()} CPUs")
    print(f"{'CPUs':>5} {'startup':>8} {'CPU/s':>7} {'of host':>8} {'rec/s':>9} {'dropped':>8} "
          f"{'RSS':>8} {'peak all':>8} {'rings':>8} {'/metrics':>9} {'p50':>7} {'p99':>7} {'wrk p99':>8} "
          f"{'hotl p99':>9}")
    for r in rows:
        w = r["wrk"]
        print(f"{r['n']:5d} {r['startup']:7.2f}s {r['cpu']:7.4f} {100 * r['cpu'] / r['n']:7.4f}% "
              f"{r['rate']:9.0f} {r['dropped']:8d} {(r['rss'] - r['rings'] - r['sim']) / 1024:6.1f}Mi "
              f"{r['hwm'] / 1024:6.1f}Mi {r['rings'] / 1024:6.1f}Mi {r['metrics_bytes'] / 1024:7.1f}Ki "
              f"{r['metrics_p50']:5.2f}ms {r['metrics_p99']:5.2f}ms {w[1] if w else 'no wrk':>8} "
              f"{r['hotlines_p99']:7.2f}ms")
        starting, window, scrapes = r["dropped_phases"]
        print("      threads (CPU s/s): " + ", ".join(f"{t} {v:.4f}" for t, v in sorted(r["threads"].items())) +
              f"; collector wakeups {r['wakeups']:.0f}/s; budget slowdown {r['slowdown']:.0f}x")
        print(f"      the collector waited for a CPU {1000 * r['waited'][0]:.1f} ms/s in the window, "
              f"{1000 * r['waited'][1]:.1f} ms/s under the scrapes (its schedstat)")
        t_start, t_window, t_scrapes = r["truncations"]
        print(f"      dropped {starting} starting (with the records run before the events were enabled), {window} in "
              f"the window, {scrapes} under the scrapes; AUX truncations (the daemon's count) {t_start:.0f} "
              f"starting, {t_window:.0f} in the window, {t_scrapes:.0f} under the scrapes; data ring: "
              f"{r['data_lost']:.0f} records lost ({r['unannounced']} SPE records read without their PERF_RECORD_AUX)")
        records = max(r["store_records"], 1)
        print("      store evictions per 1,000 records: " +
              ", ".join(f"{t} {1000 * v / records:.1f}" for t, v in sorted(r["evictions"].items())))
        r.update(replay_ns=rep_ns, ratio=r["live_ns"] / rep_ns)
        print(f"      per record (CPU time): live {r['live_ns']:.0f} ns (the collector thread), replay "
              f"{rep_ns:.0f} ns (--replay --once of the same streams, {rep_records:,} records on {GEN_CPUS} CPUs): "
              f"{r['ratio']:.2f}x; the collector preempted {r['preempted']:.0f} times a second")
    # Not the same mix: the file holds each CPU's stream once (the scenarios' busy CPUs have long
    # streams, the noise CPUs short ones); the simulated cores play each at one rate, looped.
    print("replay's store evictions per 1,000 records (its mix, not the hosts'): " +
          ", ".join(f"{t} {v:.1f}" for t, v in sorted(rep_evictions.items())))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
