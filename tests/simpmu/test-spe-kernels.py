#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The real armprofd on the simulated arm_spe PMU as the kernels and cores of a fleet have it.

  cx0         a kernel without CONFIG_PID_IN_CONTEXTIDR (simpmu cx=0: the shim strips
              the generator's CONTEXT packets, as PMSCR_EL1.CX off does), paced cores
              whose threads switch every record or two, small AUX areas that fill
              and stop the event while threads go on switching unreported: every
              record's thread, per CPU and PC, equals the generator's truth
              (truth.csv tid) for the records the simulation says a reader could
              know (cpuN.unknown, from the records the shim emitted), and is none
              for the others; armprofd_spe_thread_unknown_records_total and
              /status count exactly those, none of them given to anyone
  cx0-noclock the same where the user page has no time conversion (sched_clock not
              the arch timer): a switch cannot be placed among the records of the
              AUX chunk it came in, so none of that chunk's records has a thread
              (reason no_clock), as the simulation says; the others have the truth's
  cx0-each    the same on kernel=6.1 (attr_size 128, ITRACE_START at every
              ENABLE, as before 87f78017e8c8): each ENABLE names the task, so
              the simulation says every record can be known, and the daemon
              attributes every one to the truth's thread
  cx0-storm   cx=0 and a fork storm that overflows CPU 2's data ring: switches and
              PERF_RECORD_AUX lost among the storm's records (their bytes read); every
              record's (cpu, pc, pid, tid) equals the truth, none for the records the shim
              says no reader could know (cpuN.unknown), and the daemon's thread-unknown
              counts per CPU and reason (event_off, lost) on /metrics and /status equal the
              shim's (cpuN.unknown's reasons); LOST per CPU equal the kernel's
  cx0-datalost  the same with a one-page data ring and threads that change every 10
              records: the kernel's own LOST all along, PERF_RECORD_AUX lost, the area
              filled with bytes nothing announced
  cx0-fault   the same with stage-1 buffer faults, restarted by the daemon's flush
  page64k     a kernel with 64 KiB pages (simpmu page_size=65536): the daemon
              sizes and maps its rings in them (a 256 KiB area is four
              pages), every record is counted against the truth, the lost
              PERF_RECORD_AUX and the kernel's own LOST records counted
  el          kernel records (EL1): with exclude_kernel (the default) the
              shim filters exactly the truth's EL1 records as PMSCR_EL1.E1SPE
              off does, the daemon counts the rest; with exclude_kernel = no
              all come, and with [privacy] kernel_addresses = no no kernel
              address is served (/hotpcs, /hotlines, the SPE profile)
"""

import collections
import os
import re
import subprocess
import tempfile
import time

from spelive import (LIVE, READABLE, get, get_raw, metrics, per_cpu, sim_log, simpmu, spegen, start_daemon,
                     wait_counted)
from pushstore import Profile  # noqa: E402
from spegen_truth import CONFIG, decoded_pc  # noqa: E402

# Every (pid, tid, cpu, op, source, pc) a row of its own, none evicted.
STORE = "[store]\nhotpcs = 65536\n"
RUN = 300










def schedule(scen, rows, run):
    """Threads that run `run` records in a row on each CPU, three of them in turn, of two processes:
    cpuN.idx's pid and tid, and the truth's rows with them. The records carry no CONTEXT packet (cx=0):
    who ran them is the simulation's schedule alone, which the shim's switch records report."""
    for cpu, rs in rows.items():
        lines = open(os.path.join(scen, f"cpu{cpu}.idx")).read().split("\n")
        for i, r in enumerate(rs):
            tid = 5000 + 10 * cpu + (i // run) % 3
            r["pid"], r["tid"] = str(4242 if tid % 2 else 4343), str(tid)
            f = lines[i].split()
            lines[i] = " ".join(f[:3] + [r["pid"], r["tid"]])
        simpmu.write(os.path.join(scen, f"cpu{cpu}.idx"), "\n".join(lines))


class Case:
    def __init__(self, tmp, name, spegen_args, keys=(), config="", run=0, base=CONFIG):
        self.name = name
        gen, self.scen, self.sysfs = (os.path.join(tmp, name, x) for x in ("gen", "scen", "sys"))
        os.makedirs(gen)
        subprocess.run([spegen, "--out-dir", gen, "--prefix", "g", "--ts", "--cpus", "4", *spegen_args],
                       check=True, stdout=subprocess.DEVNULL)
        self.rows = simpmu.setup(gen, self.scen, self.sysfs, cpus="0-3", prefix="g", keys=list(keys))
        if run:
            schedule(self.scen, self.rows, run)
        self.d = start_daemon(self.scen, self.sysfs, range(4), base + STORE + LIVE + config)

    def wait_done(self, timeout=90):
        """Until each core went through its stream and the daemon has every record it can have."""
        deadline = time.monotonic() + timeout
        while sum(" done " in l for l in sim_log(self.scen)) < 4:
            assert time.monotonic() < deadline, (self.name, sim_log(self.scen)[-10:], self.d.log()[-2000:])
            time.sleep(0.1)
        self.expect = {}
        for cpu in range(4):
            gone = {i for i, r in simpmu.dropped(self.scen, cpu).items() if r not in READABLE}
            self.expect[cpu] = [(i, r) for i, r in enumerate(self.rows[cpu]) if i not in gone]
        want = {cpu: len(rows) for cpu, rows in self.expect.items()}
        wait_counted(self.d, want, deadline, self.name, "/hotpcs?window=all&limit=1", "samples")

    def close(self):
        self.d.close()


def attribution(c):
    """{(cpu, pc, pid, tid): records} the daemon's SPE profile gives (None: no pid, no thread)."""
    p = Profile(get_raw(c.d, "/debug/pprof/spe?window=all"))
    at = [t for t, _ in p.sample_types].index("samples")
    got = collections.Counter()
    for values, labels, locs in p.samples:
        assert len(locs) == 1, locs
        pc = p.locations[locs[0]][0]
        pid = int(labels["pid"][0]) if "pid" in labels else None
        tid = int(labels["tid"][0]) if "tid" in labels else None
        got[(int(labels["cpu"][0]), pc, pid, tid)] += values[at]
    return got


def case_cx0(tmp, name="cx0", kernel_keys=(), each=False, noclock=False):
    # 20,000 records a second a core, 55 bytes each: an 8 KiB area with its wakeup at 6 KiB has
    # 2 ms of room past it, often not enough for the daemon: the event stops (TRUNCATED) and the
    # threads go on switching unreported. They run RUN records in a row, longer than a chunk
    # (about 110 records): the records after the event came back are often committed before the
    # next switch says who ran them. A 1 MiB data ring loses none of the switches.
    c = Case(tmp, name, ["--records", "24000", "--seed", "5", "--scenario", "false-sharing,true-sharing,remote"],
             keys=["rate=20000", "cx=0", *kernel_keys],
             config="aux_buffer = 8KiB\nwatermark = 6KiB\ndata_buffer = 1MiB\n", run=RUN)
    try:
        c.wait_done()
        m = metrics(c.d)
        # No CONTEXT packet reached the daemon: the shim stripped them all (cx=0).
        log = "\n".join(sim_log(c.scen))
        assert "cx=0" in log and f"itrace_start={'each' if each else 'once'}" in log, sim_log(c.scen)[:3]
        assert sum(per_cpu(m, "armprofd_spe_lost_records_total").values()) == 0
        assert sum(per_cpu(m, "armprofd_spe_switch_overflows_total").values()) == 0
        trunc = sum(per_cpu(m, "armprofd_spe_aux_truncated_total").values())
        unknown = {cpu: set(simpmu.unknown(c.scen, cpu)) for cpu in range(4)}
        n_unknown = sum(len(u) for u in unknown.values())
        # The window this is about happened: truncations, and (ITRACE_START at the first enable only)
        # records after them no reader could know; with ITRACE_START at every ENABLE, none.
        assert trunc > 0 and (n_unknown > 0 if not each else n_unknown == 0), (trunc, n_unknown)

        want = collections.Counter()
        for cpu, rows in c.expect.items():
            for i, r in rows:
                who = (None, None) if i in unknown[cpu] else (int(r["pid"]), int(r["tid"]))
                want[(cpu, decoded_pc(r), *who)] += 1
        got = attribution(c)
        if got != want:
            wrong = {k: (got[k], want[k]) for k in set(got) | set(want) if got[k] != want[k]}
            raise AssertionError(f"{name}: (cpu, pc, pid, tid): (daemon, truth) {sorted(wrong.items(), key=str)[:20]}")

        # Counted, per CPU, as the simulation says, and all of them for a window the event was off.
        off = per_cpu(m, "armprofd_spe_thread_unknown_records_total", reason="event_off")
        lost = per_cpu(m, "armprofd_spe_thread_unknown_records_total", reason="lost")
        no_clock = per_cpu(m, "armprofd_spe_thread_unknown_records_total", reason="no_clock")
        why = {cpu: simpmu.unknown_why(c.scen, cpu) for cpu in range(4)}
        for reason, counted in (("off", off), ("no_clock", no_clock)):
            truth = {cpu: sum(1 for w in why[cpu].values() if w == reason) for cpu in range(4)}
            assert counted == truth, (name, reason, counted, truth)
        both = {cpu: off[cpu] + no_clock[cpu] for cpu in range(4)}
        # Without a clock, a switch makes its whole chunk unknown (and it happened: threads switch
        # within chunks); with one, never.
        assert (sum(no_clock.values()) > 0) == noclock, no_clock
        assert sum(lost.values()) == 0, lost
        assert per_cpu(m, "armprofd_spe_unattributed_records_total") == both
        spe = [x for x in get(c.d, "/status")["collectors"] if x["name"] == "spe"][0]
        assert {x["cpu"]: x["thread_unknown"]["event_off"] for x in spe["cpus"]} == off, spe["cpus"]
        assert {x["cpu"]: x["thread_unknown"]["no_clock"] for x in spe["cpus"]} == no_clock, spe["cpus"]
        assert all(x["time_conversion"] != noclock for x in spe["cpus"]), spe["cpus"]
        switches = sum(1 for cpu in range(4) for (_, a), (_, b) in zip(c.expect[cpu], c.expect[cpu][1:])
                       if a["tid"] != b["tid"])
        itrace = sum(1 for l in sim_log(c.scen) if re.search(r" enable active=", l))
        records = sum(len(r) for r in c.expect.values())
        print(f"{name}: {records} records without CONTEXT, {switches} thread changes, {trunc} truncations, "
              f"{itrace} enables: the {records - n_unknown} a reader could attribute have the truth's pid and thread "
              f"per CPU and PC, the {n_unknown} it could not (cpuN.unknown) have none and are counted as such")
        return n_unknown, records
    finally:
        c.close()


def case_cx0_noclock(tmp):
    # The same on a kernel whose sched_clock is not the arch timer: no time conversion on the user
    # page (time_zero_cap=0), so a switch falls somewhere in the chunk it was read before.
    return case_cx0(tmp, "cx0-noclock", ["time_zero_cap=0"], noclock=True)


def case_cx0_each(tmp):
    return case_cx0(tmp, "cx0-each", ["kernel=6.1"], each=True)


def case_page64k(tmp):
    # A kernel with 64 KiB pages and the daemon's defaults (a 256 KiB AUX area, four pages, its
    # wakeup at half; a 64 KiB data ring, one page). Rate 0: the cores write as fast as the rings
    # allow, nothing is dropped but the PERF_RECORD_AUX the scenario loses (lost=) and those the
    # one-page data ring has no room for (the switches fill it): their bytes are still read, and
    # every loss is a PERF_RECORD_LOST the daemon counts.
    c = Case(tmp, "page64k", ["--records", "40000", "--seed", "7", "--scenario", "false-sharing,true-sharing,remote"],
             keys=["rate=0", "page_size=65536", "lost=1:3:5"])
    try:
        c.wait_done()
        m = metrics(c.d)
        log = sim_log(c.scen)
        # The daemon mapped in the kernel's pages: user page + one data page, an area of four.
        for cpu in range(4):
            assert f"cpu={cpu} mmap data_size=65536" in log, [l for l in log if "mmap" in l]
            assert any(l.startswith(f"cpu={cpu} mmap aux_size=262144 ") for l in log), [l for l in log if "mmap" in l]
        # The driver's limits are 64 KiB pages (__arm_spe_pmu_next_off()): a chunk the hardware ended
        # at its limit (the buffer-full interrupt; the others are DISABLE flushes) ends within a
        # record of a page boundary. Delivered or lost with the data ring full, the shim says where.
        ends = [(int(a) + int(b)) % 65536 for a, b in
                re.findall(r"cpu=\d+ (?:aux n|datalost aux)=\d+ offset=(\d+) size=(\d+)", "\n".join(log)) if int(b)]
        full = [e for e in ends if e == 0 or e > 65536 - 64]
        assert len(full) > 4 and len(full) >= len(ends) - 4 * 4, (len(full), len(ends))
        data_lost = {cpu: sum(int(x) for l in log if l.startswith(f"cpu={cpu} data_lost")
                              for x in re.findall(r"n=(\d+)", l)) for cpu in range(4)}
        lost = per_cpu(m, "armprofd_spe_lost_records_total")
        # The scenario's LOST {5}, unless the full ring had no room for it either: then its 5 joined the
        # kernel's next LOST (the shim's `lost ... written=0`).
        fault = sum(5 for l in log if re.match(r"cpu=1 lost aux=3 .* written=1$", l))
        assert lost == {cpu: data_lost[cpu] + (fault if cpu == 1 else 0) for cpu in range(4)}, (lost, data_lost)
        assert any(l.startswith("cpu=1 lost aux=3 ") for l in log)
        records = sum(len(r) for r in c.expect.values())
        print(f"page64k: 64 KiB pages, 256 KiB areas of 4 pages, 64 KiB data rings: {records} records (none "
              f"dropped) counted per CPU, {len(full)} chunks ended at a 64 KiB page limit, lost {lost} = "
              f"5 injected + the kernel's {data_lost}")
    finally:
        c.close()


KERNEL_ADDR = re.compile(r"0x[fF]{2}[0-9a-fA-F]{14}")


def case_el(tmp):
    # PMSCR_EL1.E1SPE off (exclude_kernel, the daemon's default): the hardware makes no record of
    # a kernel operation, and the shim drops each as filtered; on ([spe] exclude_kernel = no), they
    # come, and [privacy] kernel_addresses = no (the default) keeps their addresses home.
    args = ["--records", "16000", "--seed", "19", "--scenario", "kernel,false-sharing"]
    kernel = None
    for name, config in (("el-user", ""), ("el-all", "exclude_kernel = no\n")):
        c = Case(tmp, name, args, keys=["rate=0"], config=config, base="[store]\nmax_memory = 64GiB\n")
        try:
            c.wait_done()
            m = metrics(c.d)
            kernel = {cpu: {i for i, r in enumerate(c.rows[cpu]) if r["el"] != "0"} for cpu in range(4)}
            filtered = {cpu: {i for i, r in simpmu.dropped(c.scen, cpu).items() if r == "filtered"} for cpu in range(4)}
            assert sum(len(k) for k in kernel.values()) > 0
            # Exactly the truth's EL1/EL2 records filtered with exclude_kernel, none without.
            assert filtered == (kernel if name == "el-user" else {cpu: set() for cpu in range(4)}), \
                (name, {cpu: len(f) for cpu, f in filtered.items()}, {cpu: len(k) for cpu, k in kernel.items()})
            want = {cpu: len(c.rows[cpu]) - len(filtered[cpu]) for cpu in range(4)}
            assert per_cpu(m, "armprofd_spe_records_total") == want, (per_cpu(m, "armprofd_spe_records_total"), want)
            hot = get(c.d, "/hotpcs?window=all&limit=1000")
            served = get_raw(c.d, "/hotpcs?window=all&limit=1000").decode() + \
                get_raw(c.d, "/hotlines?window=all&all=1&limit=500").decode()
            prof = Profile(get_raw(c.d, "/debug/pprof/spe?window=all"))
            assert not KERNEL_ADDR.search(served), (name, KERNEL_ADDR.search(served).group(0))
            assert all(a < 0xFF << 56 for a, _, _ in prof.locations.values()), name
            # The kernel's records, without their addresses: [kernel] rows, as many as the truth's.
            n_kernel = sum(p["samples"] for p in hot["pcs"] if p.get("symbol") == "[kernel]" or "pc" not in p)
            assert n_kernel == (0 if name == "el-user" else sum(len(k) for k in kernel.values())), (name, n_kernel)
            print(f"{name}: {sum(want.values())} records counted; {sum(len(f) for f in filtered.values())} kernel "
                  f"records filtered as the hardware would, {n_kernel} served as [kernel] with no address")
        finally:
            c.close()


def data_lost(log, cpus=range(4)):
    """{cpu: records} of the kernel's PERF_RECORD_LOST records, as the shim wrote them (`data_lost n=`)."""
    return {cpu: sum(int(x) for l in log if l.startswith(f"cpu={cpu} data_lost")
                     for x in re.findall(r"n=(\d+)", l)) for cpu in cpus}


def check_unknown(c, name):
    """Every record's (cpu, pc, pid, tid) in the daemon's SPE profile against the truth: the truth's pid and
    thread unless cpuN.unknown says no reader could know it, then none; the daemon's thread-unknown counts
    per CPU and reason (/metrics, /status) equal the shim's per reason. {reason: records} of the truth."""
    m = metrics(c.d)
    why = {cpu: simpmu.unknown_why(c.scen, cpu) for cpu in range(4)}
    want = collections.Counter()
    for cpu, rows in c.expect.items():
        for i, r in rows:
            who = (None, None) if i in why[cpu] else (int(r["pid"]), int(r["tid"]))
            want[(cpu, decoded_pc(r), *who)] += 1
    # Unknown records are committed ones: the truth lists none the daemon cannot have.
    assert all(set(why[cpu]) <= {i for i, _ in c.expect[cpu]} for cpu in range(4)), name
    got = attribution(c)
    if got != want:
        wrong = {k: (got[k], want[k]) for k in set(got) | set(want) if got[k] != want[k]}
        raise AssertionError(f"{name}: (cpu, pc, pid, tid): (daemon, truth) {sorted(wrong.items(), key=str)[:20]} "
                             f"{[(k, v) for k, v in m.items() if 'switch' in k[0] or 'discont' in k[0]]}")
    spe = [x for x in get(c.d, "/status")["collectors"] if x["name"] == "spe"][0]
    for reason, shim_why in (("event_off", "off"), ("lost", "lost"), ("no_clock", "no_clock")):
        truth = {cpu: sum(1 for w in why[cpu].values() if w == shim_why) for cpu in range(4)}
        counted = per_cpu(m, "armprofd_spe_thread_unknown_records_total", reason=reason)
        assert counted == truth, (name, reason, counted, truth)
        assert {x["cpu"]: x["thread_unknown"][reason] for x in spe["cpus"]} == truth, (name, reason, spe["cpus"])
    total = {cpu: len(why[cpu]) for cpu in range(4)}
    assert per_cpu(m, "armprofd_spe_unattributed_records_total") == total, \
        (name, per_cpu(m, "armprofd_spe_unattributed_records_total"), total)
    # Every loss counted: the daemon's LOST per CPU are the kernel's.
    lost = per_cpu(m, "armprofd_spe_lost_records_total")
    assert lost == data_lost(sim_log(c.scen)), (name, lost, data_lost(sim_log(c.scen)))
    return collections.Counter(w for cpu in range(4) for w in why[cpu].values()), m


CX0_GEN = ["--records", "24000", "--seed", "5", "--scenario", "false-sharing,true-sharing,remote"]


def case_cx0_storm(tmp):
    # cx=0 and a fork storm on CPU 2 that overflows its 64 KiB data ring: the switches and
    # PERF_RECORD_AUX that come while it is full are lost among the storm's records. Rate 0: the
    # core writes on at once. Threads change every 20 records: switches are lost for certain.
    c = Case(tmp, "cx0-storm", CX0_GEN, keys=["rate=0", "cx=0", "sideband_storm=2:6000:3000"],
             config="aux_buffer = 64KiB\n", run=20)
    try:
        c.wait_done()
        log = sim_log(c.scen)
        storm = [l for l in log if l.startswith("cpu=2 storm ")]
        assert len(storm) == 1 and int(re.search(r" lost=(\d+)", storm[0]).group(1)) > 0, storm
        why, m = check_unknown(c, "cx0-storm")
        # The premise: records no reader could know because of the loss, on CPU 2.
        assert why["lost"] > 0 and data_lost(log)[2] > 0, (why, data_lost(log))
        datalost = sum(1 for cpu in range(4) for r in simpmu.dropped(c.scen, cpu).values() if r == "datalost")
        print(f"cx0-storm: {storm[0]}; LOST {data_lost(log)} per CPU counted; {datalost} records whose "
              f"PERF_RECORD_AUX was lost read; unknown {dict(why)} per reason equal the shim's, every other "
              f"record the truth's thread")
    finally:
        c.close()


def case_cx0_datalost(tmp):
    # cx=0 and a one-page data ring: threads that change every 10 records fill it with switch pairs
    # (96 bytes each) faster than the daemon drains it: the kernel's LOST, PERF_RECORD_AUX lost
    # with them (their bytes read), switches lost between records.
    c = Case(tmp, "cx0-datalost", CX0_GEN, keys=["rate=0", "cx=0"],
             config="aux_buffer = 64KiB\ndata_buffer = 4KiB\n", run=10)
    try:
        c.wait_done()
        log = sim_log(c.scen)
        why, m = check_unknown(c, "cx0-datalost")
        assert sum(data_lost(log).values()) > 0 and why["lost"] > 0, (data_lost(log), why)
        datalost = sum(1 for cpu in range(4) for r in simpmu.dropped(c.scen, cpu).values() if r == "datalost")
        print(f"cx0-datalost: a 4 KiB data ring: LOST {data_lost(log)} per CPU counted, {datalost} records whose "
              f"PERF_RECORD_AUX was lost read; unknown {dict(why)} per reason equal the shim's, every other "
              f"record the truth's thread")
    finally:
        c.close()


def case_cx0_fault(tmp):
    # cx=0 and stage-1 buffer faults: the hardware stops, the daemon's quiet flush (DISABLE +
    # ENABLE) restarts it; the records after the restart are unknown until a switch names their
    # thread (ITRACE_START at the first start only), never the thread of before.
    faults = {1: [1650], 3: [700, 5000]}
    c = Case(tmp, "cx0-fault", CX0_GEN, keys=["rate=0", "cx=0"] + [f"fault={cpu}:{i}:s1" for cpu, fs in faults.items()
                                                                  for i in fs],
             config="aux_buffer = 64KiB\ndata_buffer = 1MiB\n", run=RUN)
    try:
        c.wait_done()
        log = sim_log(c.scen)
        injected = {cpu: len(faults.get(cpu, [])) for cpu in range(4)}
        restarted = {cpu: sum(l.startswith(f"cpu={cpu} restart after fault") for l in log) for cpu in range(4)}
        assert restarted == injected, (restarted, injected)
        why, m = check_unknown(c, "cx0-fault")
        assert per_cpu(m, "armprofd_spe_aux_fault_restarts_total") == injected
        # The faults' windows left records no reader could know, on the faulted CPUs.
        off = per_cpu(m, "armprofd_spe_thread_unknown_records_total", reason="event_off")
        assert sum(off.values()) > 0, off
        print(f"cx0-fault: stage-1 faults {injected} restarted; unknown {dict(why)} per reason equal the shim's "
              f"({off} after a window off), every other record the truth's thread")
    finally:
        c.close()


CASES = {"cx0": case_cx0, "cx0-noclock": case_cx0_noclock, "cx0-each": case_cx0_each, "cx0-storm": case_cx0_storm,
         "cx0-datalost": case_cx0_datalost, "cx0-fault": case_cx0_fault, "page64k": case_page64k, "el": case_el}

if os.environ.get("SPE_KERNELS_KEEP"):  # a directory to keep, to look at the shim's logs
    for name in os.environ.get("SPE_KERNELS_CASES", ",".join(CASES)).split(","):
        CASES[name](os.environ["SPE_KERNELS_KEEP"])
else:
    with tempfile.TemporaryDirectory(prefix="armprofd-spe-kernels-") as tmp:
        for name in os.environ.get("SPE_KERNELS_CASES", ",".join(CASES)).split(","):
            CASES[name](tmp)
