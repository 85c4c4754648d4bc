#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The real armprofd binary sampling SPE live from a simulated arm_spe PMU.

The shim (libarmprofd-simpmu.so, README.md beside this file) plays the kernel
and the SPE hardware: perf_event_open, the mmapped data ring and AUX area,
the ioctls, and per CPU a core writing a generator stream into the real AUX
memory. The daemon cannot tell it from drivers/perf/arm_spe_pmu.c. What the
daemon serves over HTTP is compared with the generator's ground truth minus
exactly the records the simulation says it dropped (cpuN.dropped), and its
counters with the faults the scenario injected (sim.log):

  truth       4 CPUs, false/true sharing, read-only, padded, remote, DRAM:
              /hotlines (all lines, every count, class, mean latency, thread
              and object), /hotpcs (with the symbols of the ELF a live MMAP2
              maps) and /latency equal the truth; the AUX area wraps often
  running-first  a process that ran before the daemon (no COMM, no MMAP2 of
              it): its name, threads' names and mappings read from a /proc
              written here, once: /hotlines and /hotpcs as in truth
  gone-first  the same process gone before the daemon looked: its user PCs
              unnamed, and exactly the truth's user records counted in
              /hotpcs unmapped_samples
  no-context  records without CONTEXT packets: every record still gets its
              pid, from the SWITCH_CPU_WIDE records of the data ring
  faults      a full AUX buffer (cores faster than the daemon, small areas): truncations
              counted, the event re-enabled each time, the records missing
              are exactly the dropped ones; PARTIAL, a record split across
              two chunks, COLLISION, a PERF_RECORD_AUX lost (its bytes still
              read), LOST_SAMPLES and THROTTLE, each with its exact count
  startup     opens that take 250 ms each (a big host): the cores run from
              their open, the events are enabled together when the loop
              that reads the rings starts, so no ring overflows meanwhile
  coalesce    rings crossing their wakeup points 125 times a second: the
              collector thread wakes less than half as often (one wakeup,
              then a hold, serves many rings) and no ring overflows
  errors      EACCES on one CPU, EBUSY twice then free, an AUX area over the
              memlock limit (ENOMEM, then a smaller one), physical addresses without
              CAP_PERFMON (dropped and said), a CPU offlined and back, another
              offlined and back at once (its dead event reopened):
              /status and /metrics say so and the daemon keeps serving; no
              CONTEXT packets either (no PMSCR_EL1.CX without CAP_PERFMON):
              the records no reader could attribute are no process's
              (per CPU and thread, against the shim's cpuN.unknown)
"""

import collections
import os
import re
import subprocess
import tempfile
import time

from spelive import (LIVE, READABLE, get, metrics, per_cpu, sim_log, simpmu, spegen, start_daemon, wait_counted)
from pushstore import Profile  # noqa: E402
from spegen_truth import CONFIG, LINE, check_lines, decoded, decoded_pc, num, read_facts, truth_lines  # noqa: E402











class Case:
    def __init__(self, tmp, name, spegen_args, keys=(), config="", online=None, announce=True, prepare=None):
        self.name = name
        gen, self.scen, self.sysfs = (os.path.join(tmp, name, x) for x in ("gen", "scen", "sys"))
        os.makedirs(gen)
        subprocess.run([spegen, "--out-dir", gen, "--prefix", "g", "--ts", "--cpus", "4", *spegen_args],
                       check=True, stdout=subprocess.DEVNULL)
        # The process and its text, as the kernel reports them once the process maps it (attr.comm, mmap2).
        self.elf = os.path.join(gen, "g.elf")
        self.facts = read_facts(os.path.join(gen, "g.truth.txt"))
        # announce=False: the process ran before the daemon, and no record of the kernel tells of it.
        task = [f"comm=4242:4242:{self.facts['thread.4242'].split(',')[0]}",
                f"mmap2=4242:4242:{self.facts['elf.text_base']}:{self.facts['elf.text_map_len']}:0:{self.elf}"]
        if not announce:
            task = []
        self.rows = simpmu.setup(gen, self.scen, self.sysfs, cpus="0-3", prefix="g", keys=task + list(keys),
                                 online=online)
        # prepare(self): what the daemon's world needs beside the scenario, its environment's additions.
        self.d = start_daemon(self.scen, self.sysfs, range(4), CONFIG + LIVE + config,
                              **(prepare(self) if prepare else {}))

    def wait_done(self, timeout=60, never=()):
        """Until each core went through its stream and the daemon has every record it can have.
        never: CPUs that no event ever opened on (their cores never start)."""
        deadline = time.monotonic() + timeout
        while sum(" done " in l for l in sim_log(self.scen)) < 4 - len(never):
            assert time.monotonic() < deadline, (self.name, sim_log(self.scen)[-10:], self.d.log())
            time.sleep(0.1)
        self.expect = {}
        for cpu in range(4):
            gone = {i for i, r in simpmu.dropped(self.scen, cpu).items() if r not in READABLE}
            self.expect[cpu] = [] if cpu in never else [r for i, r in enumerate(self.rows[cpu]) if i not in gone]
        want = {cpu: len(rows) for cpu, rows in self.expect.items()}
        wait_counted(self.d, want, deadline, self.name)

    def truth(self):
        return [r for rows in self.expect.values() for r in rows]

    def close(self):
        self.d.close()


def check_aggregates(c):
    rows = c.truth()
    truth = truth_lines(rows, "va")
    every = get(c.d, "/hotlines?window=all&all=1&limit=500")
    assert every["evictions"] == 0 and every["offset_evictions"] == 0, every
    assert every["lines_seen"] == len(truth), \
        (every["lines_seen"], sorted(hex(a) for a in truth), [(l["address"], l["loads"], l["stores"]) for l in every["lines"]])
    check_lines(every["lines"], truth, c.elf)
    assert all(l["pid"] == 4242 for l in every["lines"]), {l["pid"] for l in every["lines"]}
    # Who ran each access: the threads /hotlines names per (line, offset, pc) are the truth's.
    tids = {}
    for r in rows:
        if r["op_class"] == "1" and r["va"]:
            a = decoded(r["va"])
            tids.setdefault((a & ~(LINE - 1), a & (LINE - 1), decoded_pc(r)), set()).add(int(r["tid"]))
    checked = 0
    for l in every["lines"]:
        for o in l["offsets"]:
            if not o["tids_truncated"]:
                key = (int(l["address"], 16), int(o["offset"], 16), int(o["pc"], 16))
                assert set(o["tids"]) == tids[key], (key, o["tids"], tids[key])
                checked += 1
    assert checked > 0

    # User PCs named from the ELF the MMAP2 record mapped, as the truth's symbols place them; a
    # /hotpcs row sums a command's PCs in one function (a kernel PC, named by no kallsyms, is one
    # of its own): over the commands, each function's count and each kernel PC's is the truth's.
    symbols = []
    for k, v in c.facts.items():
        if k.startswith("symbol."):
            start, size = (int(x, 16) for x in v.split(","))
            symbols.append((start, start + size, k[len("symbol."):]))

    def function(pc):
        return pc if pc >> 56 == 0xFF else next((n for a, b, n in symbols if a <= pc < b), None)
    pcs = {}
    for r in rows:
        pcs[function(decoded_pc(r))] = pcs.get(function(decoded_pc(r)), 0) + 1
    hot = get(c.d, "/hotpcs?window=all&limit=1000")
    assert hot["samples"] == len(rows) and hot["error_bound"] == 0, (hot["samples"], len(rows))
    assert hot["unmapped_samples"] == 0, hot["unmapped_samples"]
    got, named = {}, 0
    for p in hot["pcs"]:
        pc = int(p["pc"], 16)
        assert p["pids"] == [4242], p
        if pc >> 56 == 0xFF:
            assert "symbol" not in p or p["symbol"] == "[kernel]", p
        else:
            assert p.get("symbol") == function(pc), (hex(pc), p.get("symbol"), function(pc))
            named += 1
        got[function(pc)] = got.get(function(pc), 0) + p["samples"]
    assert got == pcs, (sorted(got.items(), key=str), sorted(pcs.items(), key=str))
    assert named > 0

    lat = get(c.d, "/latency?window=all")["latency_cycles"]["total"]["by_op"]
    for op, store in (("load", False), ("store", True)):
        mine = [num(r["tot_lat"]) for r in rows if r["op_class"] == "1" and r["tot_lat"]
                and (num(r["op_subclass"]) & 1 == 1) == store]
        assert lat[op]["count"] == len(mine) and lat[op]["sum_cycles"] == sum(mine), (op, lat[op], len(mine))
    return len(truth), len(pcs)


def case_truth(tmp):
    c = Case(tmp, "truth", ["--records", "40000", "--seed", "3", "--scenario",
                            "false-sharing,true-sharing,read-only,padded,remote,dram"],
             config="aux_buffer = 64KiB\n")
    try:
        # Up while records flow (idle, down, ten quiet drain intervals after the last).
        deadline = time.monotonic() + 30
        while not sum(per_cpu(metrics(c.d), "armprofd_spe_records_total").values()):
            assert time.monotonic() < deadline, c.d.log()
            time.sleep(0.05)
        assert metrics(c.d)[("armprofd_collector_up", frozenset({("collector", "spe")}))] == 1
        c.wait_done()
        lines, pcs = check_aggregates(c)
        m = metrics(c.d)
        assert sum(per_cpu(m, "armprofd_spe_unattributed_records_total").values()) == 0
        assert sum(per_cpu(m, "armprofd_spe_discontinuities_total").values()) == 0
        print(f"truth: {len(c.truth())} records on 4 CPUs through 64 KiB AUX areas: {lines} lines (objects from "
              f"the live MMAP2), {pcs} functions and kernel PCs (symbols) and the load/store latency sums equal the "
              f"generator's truth")
    finally:
        c.close()


def case_no_context(tmp):
    # Paced, and a data ring that holds the switches between two drains: none is lost, so the
    # attribution rests on every one of them.
    c = Case(tmp, "no-context", ["--records", "20000", "--seed", "5", "--no-context", "--scenario",
                                 "false-sharing,true-sharing,remote"], keys=["rate=20000"],
             config="data_buffer = 1MiB\n")
    try:
        c.wait_done()
        lines, _ = check_aggregates(c)
        m = metrics(c.d)
        assert sum(per_cpu(m, "armprofd_spe_unattributed_records_total").values()) == 0
        assert sum(per_cpu(m, "armprofd_spe_lost_records_total").values()) == 0
        assert sum(per_cpu(m, "armprofd_spe_switch_overflows_total").values()) == 0
        switches = sum(1 for cpu in range(4) for a, b in zip(c.rows[cpu], c.rows[cpu][1:]) if a["tid"] != b["tid"])
        assert switches > 0
        print(f"no-context: {len(c.truth())} records without CONTEXT packets, every one attributed to pid 4242 "
              f"and to the truth's threads through {switches} task switches; {lines} lines equal the truth")
    finally:
        c.close()


def case_faults(tmp):
    # rate=0: each core writes as fast as the ring allows and waits, never drops, while its event
    # is off: with a 2 KiB margin over the watermark the area fills before the daemon drains it.
    keys = ["rate=0", "partial=0:500", "split=1:700", "collision=2:3", "lost=3:4:5",
            "lost_samples=1:900:7", "throttle=2:1000:50"]
    c = Case(tmp, "faults", ["--records", "24000", "--seed", "9", "--scenario", "false-sharing,read-only"],
             keys=keys, config="aux_buffer = 8KiB\nwatermark = 6KiB\ndata_buffer = 64KiB\n")
    try:
        c.wait_done()
        m = metrics(c.d)
        log = sim_log(c.scen)
        # The flags the daemon can know: those of the PERF_RECORD_AUX the data ring delivered.
        def flagged(bit):
            return {cpu: sum(1 for l in log if l.startswith(f"cpu={cpu} aux n=")
                             and int(re.search(r"flags=(0x[0-9a-f]+)", l).group(1), 16) & bit) for cpu in range(4)}
        trunc = flagged(0x1)
        assert sum(trunc.values()) <= sum(l.startswith("cpu=") and " truncate " in l for l in log)
        data_lost = {cpu: sum(int(x) for l in log if l.startswith(f"cpu={cpu} data_lost")
                              for x in re.findall(r"n=(\d+)", l)) for cpu in range(4)}
        assert per_cpu(m, "armprofd_spe_aux_truncated_total") == trunc, (per_cpu(m, "armprofd_spe_aux_truncated_total"), trunc)
        assert sum(trunc.values()) > 0, trunc
        # An ENABLE for every session that ended truncated (each TRUNCATED record is its own
        # session's), and none without a truncation or a stall (the area read up to aux_head with
        # nothing announcing it) in the drain that made it. Not equality: a TRUNCATED record the
        # kernel wrote after the drain had read data_head arrives late, its session already counted
        # as a stall and re-enabled, and may share its drain with the next session's TRUNCATED one,
        # so two truncations and a stall make two ENABLEs (seen once in CI under TSan).
        stalls = per_cpu(m, "armprofd_spe_aux_stalls_total")
        reenabled = per_cpu(m, "armprofd_spe_aux_reenabled_total")
        assert all(trunc[cpu] <= reenabled[cpu] <= trunc[cpu] + stalls[cpu] for cpu in range(4)), \
            (reenabled, trunc, stalls)
        assert per_cpu(m, "armprofd_spe_aux_partial_total") == flagged(0x4) == {0: 1, 1: 0, 2: 0, 3: 0}
        assert per_cpu(m, "armprofd_spe_aux_collisions_total") == flagged(0x8) == {0: 0, 1: 0, 2: 1, 3: 0}
        assert per_cpu(m, "armprofd_spe_lost_samples_total") == {0: 0, 1: 7, 2: 0, 3: 0}
        assert per_cpu(m, "armprofd_spe_throttled_total") == {0: 0, 1: 0, 2: 1, 3: 0}
        lost = per_cpu(m, "armprofd_spe_lost_records_total")
        assert lost == {cpu: data_lost[cpu] + (5 if cpu == 3 else 0) for cpu in range(4)}, (lost, data_lost)
        # The generator's times rise on each CPU: a truncation leaves a time without samples.
        assert all(num(a["timestamp"]) < num(b["timestamp"]) for cpu in range(4)
                   for a, b in zip(c.rows[cpu], c.rows[cpu][1:]))
        assert sum(per_cpu(m, "armprofd_spe_not_sampling_seconds_total").values()) > 0
        gone = {cpu: len([r for r in simpmu.dropped(c.scen, cpu).values() if r not in READABLE]) for cpu in range(4)}
        check_aggregates(c)
        print(f"faults: truncations {trunc} counted and re-enabled; {sum(gone.values())} records the simulation "
              f"dropped are exactly the ones missing; partial, split, collision, lost (5 + kernel {data_lost}), "
              f"lost_samples 7, throttle 1 counted where injected")
    finally:
        c.close()


def case_startup(tmp):
    # 320 KB/s a core: a 64 KiB area is full 205 ms after its event is enabled. Enabled at its
    # open, CPU 0's would wait 750 ms for the loop behind the three other opens.
    c = Case(tmp, "startup", ["--records", "48000", "--seed", "13", "--scenario", "false-sharing,read-only"],
             keys=["rate=5000", "open_delay_ms=250"], config="aux_buffer = 64KiB\nwatermark = 16KiB\n")
    try:
        c.wait_done()
        m = metrics(c.d)
        why = {cpu: list(simpmu.dropped(c.scen, cpu).values()) for cpu in range(4)}
        # CPU 0's core ran while its event was still off, through the three other opens (5,000 a
        # second for 0.75 s, less a margin): long enough to have filled its area 3.6 times.
        assert why[0].count("disabled") >= 5000 * 0.75 * 0.8, {cpu: len(w) for cpu, w in why.items()}
        assert all(r == "disabled" for w in why.values() for r in w), \
            {cpu: sorted(set(w)) for cpu, w in why.items()}
        assert sum(per_cpu(m, "armprofd_spe_aux_truncated_total").values()) == 0, \
            [l for l in sim_log(c.scen) if re.search(r" (open fd|enable|full|truncate)", l)]
        check_aggregates(c)
        print(f"startup: opens of 250 ms, {[why[cpu].count('disabled') for cpu in range(4)]} records run before "
              f"the events were enabled together, none lost to a full ring after; {len(c.truth())} records equal "
              f"the truth")
    finally:
        c.close()


def case_coalesce(tmp):
    # 128 KB/s a core, a wakeup every 4 KiB: 31 a second a CPU. The 50 KiB past the wakeup point
    # last 400 ms at that pace: the source may hold the rings for the 50 ms most.
    c = Case(tmp, "coalesce", ["--records", "24000", "--seed", "17", "--scenario", "false-sharing"],
             keys=["rate=2000"], config="aux_buffer = 64KiB\nwatermark = 4KiB\n")
    try:
        woke0 = c.d.thread_wakeups("collector")
        c.wait_done()
        woke = c.d.thread_wakeups("collector") - woke0
        crossings = sum(1 for l in sim_log(c.scen) if re.match(r"cpu=\d+ aux n=", l))
        why = {r for cpu in range(4) for r in simpmu.dropped(c.scen, cpu).values()}
        assert why <= {"noevent", "disabled"}, why
        # Without the hold every crossing is a wakeup of its own (edge-triggered, one per ring).
        assert crossings > 250 and woke < crossings / 2, (woke, crossings)
        check_aggregates(c)
        print(f"coalesce: {crossings} PERF_RECORD_AUX wakeups of 4 rings, {woke} wakeups of the collector "
              f"(its timers' included), no ring overflowed, {len(c.truth())} records equal the truth")
    finally:
        c.close()


def threads_of(facts):
    """{tid: name} of the generator's threads."""
    return {int(k.split(".", 1)[1]): v.split(",")[0] for k, v in facts.items() if k.startswith("thread.")}


def fake_proc(root, facts, elf, threads):
    """A /proc where pid 4242 runs the generator's ELF with the truth's threads, as proc(5) shows it."""
    def put(rel, text):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    base, length = int(facts["elf.text_base"], 16), int(facts["elf.text_map_len"], 16)
    put("4242/stat", "4242 (spe_demo) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 %d 0 777 "
        "1000 100 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n" % len(threads))
    put("4242/maps", f"{base - 0x1000:x}-{base:x} r--p 00000000 fe:01 1234 {elf}\n"
        f"{base:x}-{base + length:x} r-xp 00000000 fe:01 1234 {elf}\n"
        "ffff8a000000-ffff8a100000 rw-p 00000000 00:00 0 [heap]\n")
    put("4242/comm", threads[4242] + "\n")
    put("4242/task/4242/cgroup", "0::/system.slice/demo.service\n")
    for tid, name in threads.items():
        put(f"{tid}/status", f"Name:\t{name}\nTgid:\t4242\nPid:\t{tid}\n")
        put(f"4242/task/{tid}/comm", name + "\n")


def case_running_first(tmp):
    # A service that ran before the daemon: no COMM and no MMAP2 of it ever comes, so its name, its
    # threads' names and its mappings are what /proc says (a /proc written here), read once.
    proc = os.path.join(tmp, "running-first-proc")

    def prepare(case):
        fake_proc(proc, case.facts, case.elf, threads_of(case.facts))
        return {"ARMPROFD_PROCFS_ROOT": proc}
    c = Case(tmp, "running-first", ["--records", "20000", "--seed", "7", "--scenario",
                                    "false-sharing,true-sharing,read-only,remote"], announce=False, prepare=prepare)
    threads = threads_of(c.facts)
    try:
        c.wait_done()
        lines, pcs = check_aggregates(c)
        # Each access's command is its thread's name as /proc/4242/task/TID/comm gives it.
        rows = {}
        for r in c.truth():
            if r["op_class"] == "1" and r["va"]:
                a = decoded(r["va"])
                rows.setdefault((a & ~(LINE - 1), a & (LINE - 1), decoded_pc(r)), set()).add(threads[int(r["tid"])])
        named = 0
        for l in get(c.d, "/hotlines?window=all&all=1&limit=500")["lines"]:
            for o in l["offsets"]:
                key = (int(l["address"], 16), int(o["offset"], 16), int(o["pc"], 16))
                assert o.get("comm") in rows[key], (key, o.get("comm"), rows[key])
                named += 1
        m = metrics(c.d)
        reads = {r: m.get(("armprofd_spe_proc_reads_total", frozenset({("result", r)}))) for r in ("read", "gone")}
        assert reads == {"read": 1, "gone": 0}, reads
        assert m[("armprofd_spe_proc_mappings_read_total", frozenset())] == 1
        assert m[("armprofd_spe_processes", frozenset())] == 1
        print(f"running-first: a process no record announced, read from /proc once: {lines} lines, {pcs} "
              f"functions named from its /proc/4242/maps and {named} offset rows by its threads' names, as the "
              f"truth has them")
    finally:
        c.close()


def case_gone_first(tmp):
    # The same, but the process exited before the daemon looked (a /proc without it): nothing names
    # its PCs, and /hotpcs says how many samples that leaves unmapped: the truth's user records.
    proc = os.path.join(tmp, "gone-first-proc")
    os.makedirs(proc)
    c = Case(tmp, "gone-first", ["--records", "8000", "--seed", "11", "--scenario", "false-sharing,true-sharing,remote"],
             announce=False, prepare=lambda case: {"ARMPROFD_PROCFS_ROOT": proc})
    try:
        c.wait_done()
        # The default excludes the kernel (the shim drops its records, as PMSCR_EL1.E1SPE would).
        user = sum(1 for r in c.truth() if decoded_pc(r) >> 56 != 0xFF)
        assert user == len(c.truth()) > 0, (user, len(c.truth()))
        hot = get(c.d, "/hotpcs?window=all&limit=1000")
        assert hot["samples"] == len(c.truth()) and hot["unmapped_samples"] == user, (hot["samples"],
                                                                                     hot["unmapped_samples"], user)
        assert not [p for p in hot["pcs"] if "object" in p and p["object"] != "[kernel]"], hot["pcs"][:3]
        m = metrics(c.d)
        reads = {r: m.get(("armprofd_spe_proc_reads_total", frozenset({("result", r)}))) for r in ("read", "gone")}
        assert reads == {"read": 0, "gone": 1}, reads
        text = c.d.get("/hotpcs?window=all", headers={"Accept": "text/plain"})[2]
        text = text.decode() if isinstance(text, bytes) else text
        assert f"{user} samples at user PCs in no mapping" in text, text[:600]
        print(f"gone-first: a process gone before /proc was read: {user} of {len(c.truth())} samples at user PCs "
              f"counted unmapped on /hotpcs, as the truth has them; the read counted gone")
    finally:
        c.close()


def status_cpus(d):
    spe = [x for x in get(d, "/status")["collectors"] if x["name"] == "spe"][0]
    return spe, {x["cpu"]: x for x in spe.get("cpus", [])}


def wait_status(d, pred, what, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        spe, cpus = status_cpus(d)
        if pred(spe, cpus):
            return spe, cpus
        assert time.monotonic() < deadline, (what, spe)
        time.sleep(0.1)


def case_errors(tmp):
    keys = ["rate=1000", "eacces_cpus=1", "ebusy=2:2", "mmap_limit=32768", "mmap_errno=ENOMEM", "noperfmon=1"]
    c = Case(tmp, "errors", ["--records", "24000", "--seed", "11", "--scenario", "false-sharing"], keys=keys,
             config="aux_buffer = 128KiB\nwatermark = 48KiB\n[privacy]\nphysical_addresses = yes\n")
    try:
        spe, cpus = wait_status(c.d, lambda s, cp: cp.get(0, {}).get("records", 0) > 0, "CPU 0 samples")
        assert cpus[1]["state"] == "failed" and "Permission denied" in cpus[1]["note"], cpus[1]
        assert "CAP_PERFMON" in cpus[1]["note"] or "paranoid" in cpus[1]["note"], cpus[1]
        assert "AUX area reduced to 32768 bytes from 131072" in cpus[0]["note"], cpus[0]
        # The wakeup point fits the smaller area: a paced core never fills it.
        assert all(x["aux_truncated"] == 0 for x in cpus.values()), cpus
        assert any("physical addresses" in w and "CAP_PERFMON" in w for w in spe["warnings"]), spe
        assert spe["up"] and "1 failed" in spe["reason"], spe
        assert metrics(c.d)[("armprofd_collector_up", frozenset({("collector", "spe")}))] == 1
        # EBUSY twice: retried after 1 s, then 2 s, then it samples.
        wait_status(c.d, lambda s, cp: cp[2]["state"] == "active", "CPU 2 after EBUSY", timeout=15)
        opens = [l for l in sim_log(c.scen) if l.startswith("cpu=2 open")]
        assert sum("EBUSY" in l for l in opens) == 2 and "errno" not in opens[2], opens

        # While its core still runs, CPU 2 goes and comes back at once, likely between two looks at the online CPUs: the
        # kernel stopped its event for good, and the daemon, seeing its time enabled stand
        # still, opens a new one.
        opens = sum(l.startswith("cpu=2 open fd=") for l in sim_log(c.scen))
        offline = sum(l == "cpu=2 offline" for l in sim_log(c.scen))
        simpmu.set_online(c.sysfs, "0-1,3")
        # Back as soon as the simulated kernel took the CPU down (its core looks every 10 ms).
        deadline = time.monotonic() + 20
        while sum(l == "cpu=2 offline" for l in sim_log(c.scen)) == offline:
            assert time.monotonic() < deadline, sim_log(c.scen)[-20:]
            time.sleep(0.005)
        simpmu.set_online(c.sysfs, "0-3")
        deadline = time.monotonic() + 20
        while sum(l.startswith("cpu=2 open fd=") for l in sim_log(c.scen)) == opens:
            assert time.monotonic() < deadline, (sim_log(c.scen)[-20:], status_cpus(c.d))
            time.sleep(0.1)
        wait_status(c.d, lambda s, cp: cp[2]["state"] == "active", "CPU 2 back")

        # CPU 3 goes offline and comes back: closed, then opened again.
        simpmu.set_online(c.sysfs, "0-2")
        wait_status(c.d, lambda s, cp: cp[3]["state"] == "offline", "CPU 3 offline")
        assert c.d.get("/healthz")[0] == 200 and c.d.get("/metrics")[0] == 200  # still serving
        simpmu.set_online(c.sysfs, "0-3")
        spe, cpus = wait_status(c.d, lambda s, cp: cp[3]["state"] == "active", "CPU 3 back")
        c.wait_done(never=(1,))
        # The cores are through their streams: within SPE_LIVE_IDLE_INTERVALS drain intervals
        # the source is idle, and SPE is down on /metrics until records flow again.
        spe, _ = wait_status(c.d, lambda s, cp: s["state"] == "idle", "idle once nothing comes")
        assert not spe["up"] and "no SPE records for" in spe["reason"], spe
        assert metrics(c.d)[("armprofd_collector_up", frozenset({("collector", "spe")}))] == 0
        # Without CAP_PERFMON the driver sets no PMSCR_EL1.CX: no CONTEXT packets (simpmu: noperfmon is
        # cx=0). The records whose thread no reader could know (cpuN.unknown: the events went off and
        # were reopened here) have no thread and no pid, the others the truth's, per CPU.
        want = collections.Counter()
        for cpu in range(4):
            gone = {i for i, r in simpmu.dropped(c.scen, cpu).items() if r not in READABLE}
            nobody = set(simpmu.unknown(c.scen, cpu))
            for i, r in enumerate(c.rows[cpu]):
                if cpu != 1 and i not in gone:
                    want[(cpu, None, None) if i in nobody else (cpu, 4242, int(r["tid"]))] += 1
        p = Profile(c.d.get("/debug/pprof/spe?window=all")[2])
        at = [t for t, _ in p.sample_types].index("samples")
        got = collections.Counter()
        for values, labels, _ in p.samples:
            who = tuple(int(labels[k][0]) if k in labels else None for k in ("pid", "tid"))
            got[(int(labels["cpu"][0]), *who)] += values[at]
        assert got == want and want[(0, None, None)] > 0, (sorted(got.items(), key=str), sorted(want.items(), key=str))
        # A line's (offset, PC) rows are per process: summed over them, each line is the truth's.
        lines = get(c.d, "/hotlines?window=all&all=1&limit=500")["lines"]
        for l in lines:
            merged = {}
            for o in l["offsets"]:
                m = merged.setdefault((o["offset"], o["pc"]), dict(o, latency_samples=0, latency_mean_cycles=0.0))
                m["latency_mean_cycles"] += o["latency_mean_cycles"] * o["latency_samples"]
                m["latency_samples"] += o["latency_samples"]
            for m in merged.values():
                m["latency_mean_cycles"] /= m["latency_samples"] or 1
            l["offsets"] = list(merged.values())
        check_lines(lines, truth_lines(c.truth(), "pa"), None)
        reasons = {}
        for cpu in range(4):
            for r in simpmu.dropped(c.scen, cpu).values():
                reasons[r] = reasons.get(r, 0) + 1
        print(f"errors: CPU 1 EACCES ({cpus[1]['note']!r}); CPU 2 EBUSY x2 then active; CPU 0 {cpus[0]['note']!r}; "
              f"pa dropped; CPU 3 offline and back; CPU 2 off and on at once, its stopped event reopened; "
              f"records = truth minus dropped {reasons}")
    finally:
        c.close()


CASES = {"truth": case_truth, "running-first": case_running_first, "gone-first": case_gone_first, "no-context": case_no_context, "faults": case_faults, "startup": case_startup,
         "coalesce": case_coalesce, "errors": case_errors}

with tempfile.TemporaryDirectory(prefix="armprofd-spe-live-") as tmp:
    for name in os.environ.get("SPE_LIVE_CASES", ",".join(CASES)).split(","):
        CASES[name](tmp)
