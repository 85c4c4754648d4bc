#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The real armprofd sampling SPE live from the simulated arm_spe PMU (README.md
beside this file) under the faults and kernels fleets meet, compared with the
generator's truth and the simulation's own logs:

  fault    fatal buffer faults (stage 1 and stage 2 aborts on the buffer,
           fault=CPU:IDX:s1|s2): the driver ends the session with no
           TRUNCATED and leaves the event on with its buffer stopped. The
           daemon restarts each such CPU (DISABLE + ENABLE; the cores, at
           rate 0, wait until then and go through their streams only if it
           does), counts each restart where the shim logged the fault
           (/metrics and /status), and every record but the faulting ones
           arrives: per CPU, and each cache line with every count, equal to
           the truth minus exactly the records cpuN.dropped lists.
  clock    the user page's clock as arm64 writes it (arch_perf_update_userpage()):
           a counter that wrapped since sched_clock's epoch (time_cycles,
           a 32-bit time_mask) with a shift of 32 clamped to 31; a kernel
           before 5.12 (no cap_user_time_short, a counter that did not
           wrap); no conversion at all
           (cap_user_time_zero clear). Per CPU, the perf time the daemon
           gives its last record (/status last_record_ns) equals perf's
           tsc_to_perf_time() worked out here from the scenario's keys; with
           no conversion it gives none, says so, and every record still
           arrives with its line and thread (CONTEXT packets).
  two-pmus two arm_spe PMUs (arm_spe_0 on CPUs 0-1, arm_spe_1 on 2-3, types
           42 and 43, as a host with two kinds of cores has): the daemon
           finds both and opens each CPU with its own PMU's type (the shim
           refuses the other's, ENOENT); every CPU's records arrive, per
           CPU and per cache line, equal to the truth.
  storm    a fork and exec storm (sideband_storm=CPU:IDX:N: N processes'
           FORK, COMM, MMAP2 and EXIT at once) overflows CPU 1's data ring:
           the daemon's LOST counts per CPU (/metrics, /status) equal the
           kernel's PERF_RECORD_LOST records the shim wrote; every SPE record
           still arrives; none is given a storm process's pid or name, and
           each line's threads are the truth's.
"""

import os
import re
import subprocess
import tempfile
import time

from spelive import (LIVE, READABLE, get, metrics, per_cpu, sim_log, simpmu, spegen, start_daemon, wait_counted)
from spegen_truth import CONFIG, LINE, check_lines, decoded, decoded_pc, read_facts, truth_lines  # noqa: E402











def status_cpus(d):
    spe = [x for x in get(d, "/status")["collectors"] if x["name"] == "spe"][0]
    return {x["cpu"]: x for x in spe.get("cpus", [])}


def no_fault_restarts(c):
    """No fault was injected: the flushes of CPUs gone quiet at the end of their streams are no restarts."""
    got = per_cpu(metrics(c.d), "armprofd_spe_aux_fault_restarts_total")
    assert set(got) == set(range(c.n)) and not any(got.values()), got


def check_threads(c, lines):
    """The threads /hotlines names per (line, offset, pc) are the truth's: who ran each access."""
    tids = {}
    for r in c.truth():
        if r["op_class"] == "1" and r["va"]:
            a = decoded(r["va"])
            tids.setdefault((a & ~(LINE - 1), a & (LINE - 1), decoded_pc(r)), set()).add(int(r["tid"]))
    checked = 0
    for l in lines:
        for o in l["offsets"]:
            if not o["tids_truncated"]:
                key = (int(l["address"], 16), int(o["offset"], 16), int(o["pc"], 16))
                assert set(o["tids"]) == tids[key], (key, o["tids"], tids[key])
                checked += 1
    assert checked > 0


class Case:
    def __init__(self, tmp, name, spegen_args, keys=(), config="", cpus=4, pmu_cpus=None):
        self.name, self.n = name, cpus
        gen, self.scen, self.sysfs = (os.path.join(tmp, name, x) for x in ("gen", "scen", "sys"))
        os.makedirs(gen)
        subprocess.run([spegen, "--out-dir", gen, "--prefix", "g", "--ts", "--cpus", str(cpus), *spegen_args],
                       check=True, stdout=subprocess.DEVNULL)
        self.elf = os.path.join(gen, "g.elf")
        self.facts = read_facts(os.path.join(gen, "g.truth.txt"))
        task = [f"comm=4242:4242:{self.facts['thread.4242'].split(',')[0]}",
                f"mmap2=4242:4242:{self.facts['elf.text_base']}:{self.facts['elf.text_map_len']}:0:{self.elf}"]
        # pmu_cpus: arm_spe_0's CPUs when the keys put the others on a second PMU (cpus2=).
        self.rows = simpmu.setup(gen, self.scen, self.sysfs, cpus=pmu_cpus or f"0-{cpus - 1}", prefix="g",
                                 keys=task + list(keys))
        self.d = start_daemon(self.scen, self.sysfs, range(cpus), CONFIG + LIVE + config)

    def wait_done(self, timeout=90):
        """Until each core went through its stream and the daemon has every record it can have."""
        deadline = time.monotonic() + timeout
        while sum(" done " in l for l in sim_log(self.scen)) < self.n:
            assert time.monotonic() < deadline, (self.name, sim_log(self.scen)[-10:], self.d.log()[-2000:])
            time.sleep(0.1)
        self.expect = {}
        for cpu in range(self.n):
            gone = {i for i, r in simpmu.dropped(self.scen, cpu).items() if r not in READABLE}
            self.expect[cpu] = [r for i, r in enumerate(self.rows[cpu]) if i not in gone]
        want = {cpu: len(rows) for cpu, rows in self.expect.items()}
        wait_counted(self.d, want, deadline, self.name)
        return want

    def truth(self):
        return [r for rows in self.expect.values() for r in rows]

    def close(self):
        self.d.close()


def case_fault(tmp):
    # Rate 0: a core waits (drops nothing) while its buffer is stopped; only a restart lets it
    # go on through its stream, so `done` on every CPU is itself the proof of recovery.
    faults = {1: [(1500, "s1")], 2: [(800, "s2"), (4000, "s1")]}
    keys = ["rate=0"] + [f"fault={cpu}:{i}:{s}" for cpu, fs in faults.items() for i, s in fs]
    c = Case(tmp, "fault", ["--records", "24000", "--seed", "21", "--scenario",
                            "false-sharing,true-sharing,read-only,padded,remote,dram"],
             keys=keys, config="aux_buffer = 64KiB\ndata_buffer = 1MiB\n")
    try:
        want = c.wait_done()
        log = sim_log(c.scen)
        logged = {cpu: sum(l.startswith(f"cpu={cpu} fault s") for l in log) for cpu in range(4)}
        restarted = {cpu: sum(l.startswith(f"cpu={cpu} restart after fault") for l in log) for cpu in range(4)}
        injected = {cpu: len(faults.get(cpu, [])) for cpu in range(4)}
        assert logged == restarted == injected, (logged, restarted, injected)
        # The records missing are exactly the faulting ones: nothing else was lost.
        dropped = {cpu: {i: r for i, r in simpmu.dropped(c.scen, cpu).items() if r not in READABLE}
                   for cpu in range(4)}
        assert dropped == {cpu: {i: "fault" for i, _ in faults.get(cpu, [])} for cpu in range(4)}, dropped
        # A fault is no truncation: the chunk it ended carried no flag.
        for l in log:
            m = re.match(r"cpu=(\d+) fault s\d idx=(\d+) offset=(\d+) size=(\d+)", l)
            if m and int(m.group(4)):
                aux = [x for x in log if x.startswith(f"cpu={m.group(1)} aux n=") and f" offset={m.group(3)} " in x
                       and f" size={m.group(4)} " in x]
                assert len(aux) <= 1 and all(" flags=0x0 " in x for x in aux), (l, aux)
        m = metrics(c.d)
        got = per_cpu(m, "armprofd_spe_aux_fault_restarts_total")
        assert got == injected, (got, injected)
        st = status_cpus(c.d)
        assert {cpu: st[cpu]["aux_fault_restarts"] for cpu in range(4)} == injected, st
        # Truncations: those of full areas only, as many as the delivered records flagged.
        trunc = {cpu: sum(1 for l in log if l.startswith(f"cpu={cpu} aux n=")
                          and int(re.search(r"flags=(0x[0-9a-f]+)", l).group(1), 16) & 1) for cpu in range(4)}
        assert per_cpu(m, "armprofd_spe_aux_truncated_total") == trunc, trunc
        every = get(c.d, "/hotlines?window=all&all=1&limit=500")
        truth = truth_lines(c.truth(), "va")
        assert every["evictions"] == 0 and every["lines_seen"] == len(truth), (every["lines_seen"], len(truth))
        check_lines(every["lines"], truth, c.elf)
        print(f"fault: {sum(injected.values())} buffer faults {injected} (stage 1 and 2), each CPU restarted by "
              f"the daemon and counted on /metrics and /status; records {want} = truth minus the faulting ones; "
              f"{len(truth)} lines equal the truth")
    finally:
        c.close()


# The user page as arch_perf_update_userpage() writes it from the scenario's keys
# (tests/simpmu/README.md), and perf's tsc_to_perf_time() (tools/perf/util/tsc.c) of it.
CLOCK = {"time_zero": 10**9, "time_mult": 40 << 24, "time_shift": 24, "time_cycles": 0,
         "time_mask": 2**56 - 1, "time_short": 1, "time_zero_cap": 1}


def user_page(keys):
    k = dict(CLOCK, **{a: int(b, 0) for a, b in (x.split("=", 1) for x in keys) if a in CLOCK})
    if not k["time_zero_cap"]:
        return None
    mult, shift = k["time_mult"], k["time_shift"]
    if shift == 32:
        shift, mult = 31, mult >> 1
    short = bool(k["time_short"])
    return {"zero": k["time_zero"], "mult": mult, "shift": shift, "short": short,
            "cycles": k["time_cycles"] if short else 0, "mask": k["time_mask"] if short else 0}, k


def tsc_to_perf_time(p, cyc):
    if p["short"]:
        cyc = p["cycles"] + ((cyc - p["cycles"]) & p["mask"])
    quot, rem = cyc >> p["shift"], cyc & ((1 << p["shift"]) - 1)
    return (p["zero"] + quot * p["mult"] + ((rem * p["mult"]) >> p["shift"])) % 2**64


def kernel_time(k, cyc):
    """sched_clock(): epoch_ns + ((cyc - epoch_cyc) & mask) * mult >> shift, the unclamped mult and shift."""
    epoch_ns = k["time_zero"] + ((k["time_cycles"] * k["time_mult"]) >> k["time_shift"])
    return epoch_ns + ((((cyc - k["time_cycles"]) & k["time_mask"]) * k["time_mult"]) >> k["time_shift"])


def case_clock(tmp):
    # Timestamps of spegen start near 10^9 ticks: time_cycles past them with a 32-bit mask is a
    # counter that wrapped since the epoch. An odd mult: the clamp to shift 31 drops its low bit.
    wrapped = ["time_cycles=0xF0000000", "time_mask=0xFFFFFFFF"]
    variants = {"clock-wrap": wrapped + ["time_shift=32", "time_mult=0xC0000001"],
                # Before 5.12 the page could not say the counter wrapped (it does not here: a reader
                # converting as if it never did is right, to the rounding of the epoch's ticks).
                "clock-old": ["time_cycles=0x10000000", "time_short=0"],
                "clock-none": ["time_zero_cap=0"]}
    for name, keys in variants.items():
        c = Case(tmp, name, ["--records", "8000", "--seed", "23", "--scenario",
                             "false-sharing,true-sharing,read-only,remote"],
                 keys=["rate=0"] + keys, config="aux_buffer = 64KiB\ndata_buffer = 1MiB\n", cpus=2)
        try:
            c.wait_done()
            st = status_cpus(c.d)
            spe = [x for x in get(c.d, "/status")["collectors"] if x["name"] == "spe"][0]
            page = user_page(keys)
            last = {cpu: int(c.expect[cpu][-1]["timestamp"]) for cpu in range(2)}
            if page is None:
                assert all(not st[cpu]["time_conversion"] and "last_record_ns" not in st[cpu] for cpu in range(2)), st
                assert any("no SPE time conversion on 2 CPUs" in w for w in spe["warnings"]), spe
                said = "no time conversion, said on /status"
            else:
                p, k = page
                want = {cpu: tsc_to_perf_time(p, last[cpu]) for cpu in range(2)}
                got = {cpu: st[cpu].get("last_record_ns") for cpu in range(2)}
                assert all(st[cpu]["time_conversion"] for cpu in range(2)), st
                assert got == want, (name, got, want)
                assert not any("time conversion" in w for w in spe["warnings"]), spe
                off = {cpu: want[cpu] - kernel_time(k, last[cpu]) for cpu in range(2)}
                said = f"last records at {want} ns as tsc_to_perf_time() of the page ({off} ns from the kernel's time)"
            # Nothing lost, every line and thread right (CONTEXT packets name the threads).
            assert all(not simpmu.dropped(c.scen, cpu) for cpu in range(2))
            no_fault_restarts(c)
            every = get(c.d, "/hotlines?window=all&all=1&limit=500")
            check_lines(every["lines"], truth_lines(c.truth(), "va"), c.elf)
            check_threads(c, every["lines"])
            print(f"{name}: {' '.join(keys)}: {said}; {len(c.truth())} records, their lines and threads equal "
                  f"the truth")
        finally:
            c.close()


def case_two_pmus(tmp):
    c = Case(tmp, "two-pmus", ["--records", "16000", "--seed", "25", "--scenario",
                               "false-sharing,true-sharing,read-only,remote,dram"],
             keys=["rate=0", "type2=43", "cpus2=2-3"], config="aux_buffer = 64KiB\ndata_buffer = 1MiB\n",
             pmu_cpus="0-1")
    try:
        want = c.wait_done()
        opens = {}
        for l in sim_log(c.scen):
            m = re.match(r"cpu=(\d+) open fd=\d+ .* type=(\d+)$", l)
            if m:
                opens.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
        assert opens == {0: {42}, 1: {42}, 2: {43}, 3: {43}}, opens
        assert not any("errno=ENOENT" in l for l in sim_log(c.scen)), "an open with the other PMU's type"
        assert all(len(c.rows[cpu]) > 0 and want[cpu] == len(c.rows[cpu]) for cpu in range(4)), want
        st = status_cpus(c.d)
        assert all(st[cpu]["state"] == "active" for cpu in range(4)), st
        no_fault_restarts(c)
        every = get(c.d, "/hotlines?window=all&all=1&limit=500")
        truth = truth_lines(c.truth(), "va")
        assert every["evictions"] == 0 and every["lines_seen"] == len(truth), (every["lines_seen"], len(truth))
        check_lines(every["lines"], truth, c.elf)
        print(f"two-pmus: arm_spe_0 (type 42) on CPUs 0-1, arm_spe_1 (type 43) on 2-3, each CPU opened with its "
              f"own; records {want} equal the truth, {len(truth)} lines too")
    finally:
        c.close()


def case_storm(tmp):
    n, idx = 4000, 4000
    c = Case(tmp, "storm", ["--records", "24000", "--seed", "27", "--scenario",
                            "false-sharing,true-sharing,read-only,remote"],
             keys=["rate=0", f"sideband_storm=1:{idx}:{n}"], config="aux_buffer = 64KiB\n")
    try:
        # The storm comes once every thread of CPU 1 ran there (their pids are known).
        assert {r["tid"] for r in c.rows[1][idx:]} <= {r["tid"] for r in c.rows[1][:idx]}
        want = c.wait_done()
        log = sim_log(c.scen)
        storm = [l for l in log if l.startswith("cpu=1 storm ")]
        assert len(storm) == 1 and int(re.search(r"records=(\d+)", storm[0]).group(1)) == 4 * n, storm
        storm_lost = int(re.search(r" lost=(\d+)", storm[0]).group(1))
        # The scenario's premise: the ring overflowed (16,000 records written faster than any
        # reader drains a 64 KiB ring: 96% were lost in the runs seen; the counts below are exact
        # whatever the share).
        assert storm_lost > 0, storm
        # The kernel's PERF_RECORD_LOST records, as the shim wrote them: each one's count.
        kernel_lost = {cpu: sum(int(x) for l in log if l.startswith(f"cpu={cpu} data_lost")
                                for x in re.findall(r"n=(\d+)", l)) for cpu in range(4)}
        assert kernel_lost[1] >= storm_lost, (kernel_lost, storm_lost)
        m = metrics(c.d)
        lost = per_cpu(m, "armprofd_spe_lost_records_total")
        assert lost == kernel_lost, (lost, kernel_lost)
        st = status_cpus(c.d)
        assert {cpu: st[cpu]["lost"] for cpu in range(4)} == kernel_lost, st
        no_fault_restarts(c)
        hot = get(c.d, "/hotpcs?window=all&limit=1000")
        assert hot["samples"] == sum(want.values()), (hot["samples"], want)
        assert all(p["pids"] == [4242] and not p.get("comm", "").startswith("storm-") for p in hot["pcs"]), \
            [p for p in hot["pcs"] if p["pids"] != [4242] or p.get("comm", "").startswith("storm-")][:3]
        every = get(c.d, "/hotlines?window=all&all=1&limit=500")
        truth = truth_lines(c.truth(), "va")
        assert every["lines_seen"] == len(truth), (every["lines_seen"], len(truth))
        check_lines(every["lines"], truth, c.elf)
        assert all(l["pid"] == 4242 for l in every["lines"])
        check_threads(c, every["lines"])
        print(f"storm: {n} processes forked, exec'd, mapped and gone at once on CPU 1: {storm_lost} of their "
              f"{4 * n} records lost; LOST {lost} per CPU = the kernel's; records {want} = truth, none named "
              f"after a storm process, every line's threads the truth's")
    finally:
        c.close()


CASES = {"fault": case_fault, "clock": case_clock, "two-pmus": case_two_pmus, "storm": case_storm}

with tempfile.TemporaryDirectory(prefix="armprofd-spe-faults-") as tmp:
    for name in os.environ.get("SPE_FAULTS_CASES", ",".join(CASES)).split(","):
        CASES[name](tmp)
