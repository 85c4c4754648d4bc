#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check armprofd-spegen's perf.data against an independent decoder: Debian's
# perf 6.1. Modes:
#
#   dump    perf report -D: every packet of every record equals the ground
#           truth CSV, and "Bad packet!" appears exactly at injected garbage.
#   script  perf script --itrace=i1i -s perf-samples.py: one sample per record
#           with the right cpu, time, pid/tid, ip, symbol, addr, phys_addr,
#           weight and data_src.
#   c2c     perf c2c report --stdio: the false-sharing line is ranked first,
#           with its offsets and functions; peer-load totals equal the truth.
#   pipe    pipe-mode perf.data streamed through a real pipe: dump + samples.
#
# script and pipe also check the fake ELF's build id: the id in perf's
# build-id table (HEADER_BUILD_ID / PERF_RECORD_HEADER_BUILD_ID) equals the
# ELF's NT_GNU_BUILD_ID (readelf -n) and the truth summary, and perf
# refuses the ELF's symbols once its note says another build.
#
# Usage: spe-oracle.py MODE PATH-TO-armprofd-spegen
# Exits 77 (skip) when perf is missing or cannot decode Arm SPE (asked once,
# on a probe), or for script and pipe when perf has no Python scripting.
# After that a variant perf does not decode, or samples nothing from, fails.

import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
PERF_TIMEOUT = 300

# Events packet bit -> name as perf 6.1 prints it in -D (Arm ARM D10 "Events packet"; arm-spe-pkt-decoder.c).
EVENT_NAMES = {
    0: "EXCEPTION-GEN", 1: "RETIRED", 2: "L1D-ACCESS", 3: "L1D-REFILL",
    4: "TLB-ACCESS", 5: "TLB-REFILL", 6: "NOT-TAKEN", 7: "MISPRED",
    8: "LLC-ACCESS", 9: "LLC-REFILL", 10: "REMOTE-ACCESS", 11: "ALIGNMENT",
    17: "SVE-PARTIAL-PRED", 18: "SVE-EMPTY-PRED",
}
EVENT_BITS = {v: k for k, v in EVENT_NAMES.items()}

# perf_mem_data_src fields (linux/perf_event.h; tools/perf/util/arm-spe.c).
MEM_OP_LOAD, MEM_OP_STORE = 0x2, 0x4
LVL_NA, LVL_HIT, LVL_L1, LVL_L2, LVL_L3, LVL_LOC_RAM = 0x1, 0x2, 0x8, 0x20, 0x40, 0x80
SNOOP_NA, SNOOP_NONE, SNOOP_HIT = 0x1, 0x2, 0x4
SNOOPX_PEER = 0x2

KERNEL_TOP = 0xff << 56
VA_MASK = (1 << 56) - 1

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 30:
        print("FAIL: " + msg)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=PERF_TIMEOUT, **kw)


def generate(spegen, outdir, prefix, args):
    cmd = [spegen, "--out-dir", outdir, "--prefix", prefix] + args
    p = run(cmd)
    if p.returncode != 0:
        print(p.stderr)
        raise SystemExit("armprofd-spegen failed: %s" % " ".join(cmd))
    base = os.path.join(outdir, prefix)
    with open(base + ".truth.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    summary = {}
    with open(base + ".truth.txt") as f:
        for line in f:
            if line.startswith("#") or "=" not in line:
                continue
            k, v = line.rstrip("\n").split("=", 1)
            summary[k] = v
    records = [r for r in rows if r["kind"] == "record"]
    garbage = [r for r in rows if r["kind"] == "garbage"]
    return base + ".data", records, garbage, summary


def num(s):
    return int(s, 0)


def decoded_pc(r):
    pc = num(r["pc"])
    if r["ns"] == "1" and r["el"] in ("1", "2"):
        pc |= KERNEL_TOP
    return pc


def decoded_va(r):
    va = num(r["va"])
    if (va >> 52) & 0xf == 0xf:
        return (va & VA_MASK) | KERNEL_TOP
    return va & VA_MASK


def is_load(r):
    return r["op_class"] == "1" and (num(r["op_subclass"]) & 1) == 0


def is_store(r):
    return r["op_class"] == "1" and (num(r["op_subclass"]) & 1) == 1


def expected_op_text(r):
    """The op-type description perf 6.1 prints for our subclass bytes."""
    cls, sub = int(r["op_class"]), num(r["op_subclass"])
    if cls == 0:
        return "OTHER " + ("COND-SELECT" if sub & 1 else "INSN-OTHER")
    if cls == 1:
        s = "ST" if sub & 1 else "LD"
        if (sub & 0xe2) == 0x02:
            if sub & 0x04:
                s += " AT"
            if sub & 0x08:
                s += " EXCL"
            if sub & 0x10:
                s += " AR"
        names = {0x00: " GP-REG", 0x04: " SIMD-FP"}
        return s + names.get(sub & 0xfe, "")
    s = "B"
    if sub & 1:
        s += " COND"
    if sub & 2:
        s += " IND"
    return s


def expected_packets(r):
    """Ground truth as a dict of perf -D descriptions (order-free)."""
    e = {}
    if r["pc"]:
        e["PC"] = "PC 0x%x el%s ns=%s" % (num(r["pc"]), r["el"], r["ns"])
    if r["tgt"]:
        e["TGT"] = "TGT 0x%x el%s ns=%s" % (num(r["tgt"]), r["el"], r["ns"])
    if r["va"]:
        e["VA"] = "VA 0x%x" % num(r["va"])
    if r["pa"]:
        e["PA"] = "PA 0x%x ns=%s ch=%s pat=%x" % (num(r["pa"]), r["pa_ns"], r["pa_ch"], int(r["pa_pat"]))
    for col, name in (("tot_lat", "TOT"), ("issue_lat", "ISSUE"), ("xlat_lat", "XLAT")):
        if r[col]:
            e["LAT " + name] = int(r[col])
    if r["events"]:
        e["EV"] = num(r["events"])
    if r["data_source"]:
        e["DATA-SOURCE"] = num(r["data_source"])
    if r["context"]:
        e["CONTEXT"] = "CONTEXT 0x%x el%s" % (int(r["context"]), r["context_el"])
    if r["op_class"]:
        e["OP"] = expected_op_text(r)
    e["END"] = ("TS", int(r["timestamp"])) if r["timestamp"] else ("END", None)
    return e


PKT_RE = re.compile(r"^\.\s+([0-9a-f]{8}):\s+((?:[0-9a-f]{2} )+)\s*(.*?)\s*$")
AUXTRACE_RE = re.compile(r"PERF_RECORD_AUXTRACE size: (\S+)\s+offset: (\S+)\s+ref: \S+\s+idx: (\d+)\s+"
                         r"tid: (-?\d+)\s+cpu: (-?\d+)")
LAT_RE = re.compile(r"^LAT (\d+) (TOT|ISSUE|XLAT)$")


def parse_desc(desc, pkt):
    """Turn one perf -D packet description into (key, value)."""
    for key in ("PC", "TGT", "VA", "PA", "CONTEXT"):
        if desc.startswith(key + " "):
            return key, desc
    m = LAT_RE.match(desc)
    if m:
        return "LAT " + m.group(2), int(m.group(1))
    if desc == "EV" or desc.startswith("EV "):
        bits = 0
        for name in desc.split()[1:]:
            if name not in EVENT_BITS:
                return "UNKNOWN", desc
            bits |= 1 << EVENT_BITS[name]
        return "EV", bits
    if desc.startswith("DATA-SOURCE "):
        return "DATA-SOURCE", int(desc.split()[1])
    if desc.startswith("TS "):
        return "END", ("TS", int(desc.split()[1]))
    if desc == "END":
        return "END", ("END", None)
    if desc.startswith(("LD", "ST", "B", "OTHER")):
        return "OP", desc
    return "UNKNOWN", desc


# Where perf must find each packet of a record the generator wrote in the
# Neoverse N1 fixed-slot layout (CSV layout=slots; quipper's N1 test record):
# offset from the record's first byte. Written from the captures, like the
# generator's table, and checked here through perf's own decode.
N1_SLOTS = {
    "PC": 0x00, "CONTEXT": 0x0e, "OP": 0x13, "EV": 0x15, "LAT ISSUE": 0x18, "LAT TOT": 0x1b,
    "VA": 0x1e, "TGT": 0x1e, "LAT XLAT": 0x27, "PA": 0x2a, "DATA-SOURCE": 0x33,
}
N1_SLOT_TS, N1_SLOT_END = 0x37, 0x3f


def parse_dump(text):
    """perf report -D -> ({(cpu, offset): (packets, {packet: offset in the record})},
    {(cpu, offset) of bad bytes}, n_buffers)."""
    records, bad = {}, set()
    cpu = base = None
    cur = None
    n_buffers = 0
    for line in text.splitlines():
        m = AUXTRACE_RE.search(line)
        if m:
            cpu, base = int(m.group(5)), int(m.group(2), 0)
            n_buffers += 1
            if cur is not None:
                fail("record at cpu %d offset %d not terminated at buffer end" % cur[0])
            cur = None
            continue
        m = PKT_RE.match(line)
        if not m or cpu is None:
            continue
        pos = base + int(m.group(1), 16)
        nbytes = len(m.group(2).split())
        desc = m.group(3)
        if desc == "Bad packet!":
            for i in range(nbytes):
                bad.add((cpu, pos + i))
            continue
        if desc == "PAD":
            continue
        if cur is None:
            cur = ((cpu, pos), {}, {})
        key, val = parse_desc(desc, m.group(2))
        if key in cur[1]:
            fail("cpu %d offset %d: packet %s twice in one record" % (cpu, cur[0][1], key))
        cur[1][key] = val
        cur[2][key] = pos - cur[0][1]
        if key == "END":
            records[cur[0]] = (cur[1], cur[2])
            cur = None
    return records, bad, n_buffers


def perf_ok():
    perf = shutil.which("perf")
    if not perf:
        skip("perf not found in PATH (install linux-perf)")
    p = run([perf, "version"])
    if p.returncode != 0:
        skip("perf does not run: %s" % p.stderr.strip())
    return perf


def check_dump(perf, data, records, garbage, label, stdin_data=None):
    if stdin_data is not None:
        p = subprocess.run([perf, "report", "-D", "-i", "-"], input=stdin_data, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=PERF_TIMEOUT)
        out = p.stdout.decode(errors="replace")
    else:
        p = run([perf, "report", "-D", "-i", data])
        out = p.stdout
    if p.returncode != 0:
        fail("%s: perf report -D exited %d" % (label, p.returncode))
    if "ARM SPE data" not in out:
        # main()'s probe showed that this perf decodes SPE: a variant it
        # does not decode is the generator's fault.
        fail("%s: no 'ARM SPE data' in perf report -D (generator regression: perf decoded the probe)" % label)
        return None
    got, bad, n_buffers = parse_dump(out)

    want_bad = set()
    for g in garbage:
        for i in range(int(g["size"])):
            want_bad.add((int(g["cpu"]), int(g["offset"]) + i))
    if bad != want_bad:
        fail("%s: Bad packet bytes at %d places, garbage injected at %d (first extra %s, first missing %s)" % (
            label, len(bad), len(want_bad), sorted(bad - want_bad)[:3], sorted(want_bad - bad)[:3]))

    mismatches = slots = 0
    for r in records:
        key = (int(r["cpu"]), int(r["offset"]))
        if key not in got:
            fail("%s: record cpu %s index %s at offset %s not decoded by perf" % (
                label, r["cpu"], r["index"], r["offset"]))
            mismatches += 1
            continue
        want = expected_packets(r)
        have, where = got.pop(key)
        if want != have:
            mismatches += 1
            diff = {k: (want.get(k), have.get(k)) for k in set(want) | set(have) if want.get(k) != have.get(k)}
            fail("%s: cpu %s record %s (offset %s, %s): want/have %s" % (
                label, r["cpu"], r["index"], r["offset"], r["scenario"], diff))
        elif r["layout"] == "slots":
            slots += 1
            want_at = {k: N1_SLOTS[k] for k in have if k != "END"}
            want_at["END"] = N1_SLOT_TS if r["timestamp"] else N1_SLOT_END
            if where != want_at:
                mismatches += 1
                fail("%s: cpu %s record %s (offset %s, %s): N1 slot offsets want %s have %s" % (
                    label, r["cpu"], r["index"], r["offset"], r["scenario"], want_at, where))
    if got:
        fail("%s: perf decoded %d records the truth does not have, e.g. %s" % (label, len(got), list(got)[:3]))
    print("%s: %d records (%d in N1 slots), %d garbage bytes, %d AUXTRACE buffers; %d mismatches" % (
        label, len(records), slots, len(want_bad), n_buffers, mismatches))
    return slots


def parse_samples(text):
    lines = [l for l in text.splitlines() if l.count(",") >= 11]
    if not lines or not lines[0].startswith("event,"):
        return []
    return list(csv.DictReader(lines))


def expected_data_src(r):
    """perf 6.1 arm_spe__synth_data_source for the Neoverse common encoding
    (tools/perf/util/arm-spe.c of perf 6.1): returns (op, lvl, snoop, snoopx, remote) or None
    for non-memory ops, whose data_src is 0."""
    if is_store(r):
        return (MEM_OP_STORE, LVL_NA, SNOOP_NA, 0, 0)
    if not is_load(r):
        return None
    ds = num(r["data_source"])
    table = {
        0x0: (LVL_L1 | LVL_HIT, SNOOP_NONE, 0, 0),
        0x8: (LVL_L2 | LVL_HIT, SNOOP_NONE, 0, 0),
        0x9: (LVL_L2 | LVL_HIT, 0, SNOOPX_PEER, 0),
        0xa: (LVL_L3 | LVL_HIT, 0, SNOOPX_PEER, 0),
        0xc: (LVL_L3 | LVL_HIT, 0, SNOOPX_PEER, 0),
        0xb: (LVL_L3 | LVL_HIT, SNOOP_HIT, 0, 0),
        0xd: (LVL_NA, 0, SNOOPX_PEER, 1),
        0xe: (LVL_LOC_RAM | LVL_HIT, SNOOP_NONE, 0, 0),
    }
    lvl, snoop, snoopx, remote = table[ds]
    return (MEM_OP_LOAD, lvl, snoop, snoopx, remote)


def split_data_src(v):
    return (v & 0x1f, (v >> 5) & 0x3fff, (v >> 19) & 0x1f, (v >> 38) & 0x3, (v >> 37) & 0x1)


def symbol_of(pc, summary):
    for k, v in summary.items():
        if k.startswith("symbol."):
            start, size = (int(x, 0) for x in v.split(","))
            if start <= pc < start + size:
                return k[len("symbol."):]
    return None


def s32(v):
    """perf's Python sample dict holds pid/tid as u32: -1 is 4294967295."""
    return v - (1 << 32) if v >= 1 << 31 else v


# What perf names a thread it has no PERF_RECORD_COMM for (perf 6.1:
# thread__comm_str of a thread created for the sample, ":<tid>").
NO_COMM = ":%d"


def want_comm(threads, tid):
    """The comm perf must give a sample of tid. -1 means no CONTEXT packet
    was decoded on that CPU yet, so the truth has no thread and perf no
    COMM for it; any other tid must be one the truth names."""
    if tid in threads:
        return threads[tid]
    if tid == -1:
        return NO_COMM % tid
    return "<tid %d not in the truth's thread list>" % tid


def check_samples(perf, data, records, garbage, summary, label, script, stdin_data=None):
    cmd = [perf, "script", "-i", "-" if stdin_data is not None else data, "--itrace=i1i", "-s", script]
    p = subprocess.run(cmd, input=stdin_data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=PERF_TIMEOUT)
    if p.returncode != 0:
        fail("%s: perf script exited %d: %s" % (label, p.returncode, p.stderr.decode(errors="replace")[-500:]))
        return
    samples = parse_samples(p.stdout.decode(errors="replace"))
    if not samples:
        # perf decodes SPE and runs Python scripts (main()'s probe): no
        # samples for a variant is the generator's fault.
        fail("%s: perf script -s produced no samples for %d records (generator regression)" % (label, len(records)))
        return

    threads = {}
    for k, v in summary.items():
        if k.startswith("thread."):
            threads[int(k[len("thread."):])] = v.split(",")[0]

    # perf 6.1 quirk (seen in its output): after each undecodable byte perf emits one
    # all-zero sample (time 0, ip 0) for the record it was building.
    # END-terminated records have no timestamp: perf gives them time 0, so
    # they are matched in stream order per CPU instead of by (cpu, time).
    timed = all(r["timestamp"] for r in records)
    zero = {}
    by_key = {}
    for s in samples:
        cpu, t = int(s["cpu"]), int(s["time"])
        if t == 0 and int(s["ip"], 0) == 0:
            zero[cpu] = zero.get(cpu, 0) + 1
            continue
        if timed:
            if (cpu, t) in by_key:
                fail("%s: two samples at cpu %d time %d" % (label, cpu, t))
            by_key[(cpu, t)] = s
        else:
            by_key.setdefault(cpu, []).append(s)
    want_zero = {}
    for g in garbage:
        want_zero[int(g["cpu"])] = want_zero.get(int(g["cpu"]), 0) + int(g["size"])
    if zero != want_zero:
        fail("%s: zero samples per cpu %s, garbage bytes per cpu %s" % (label, zero, want_zero))

    # perf latches pid/tid per CPU queue when it decodes a CONTEXT packet, so
    # a record without one inherits the previous record's thread.
    latched = {}
    mismatches = 0
    for r in sorted(records, key=lambda x: (int(x["cpu"]), int(x["index"]))):
        cpu = int(r["cpu"])
        if r["context"]:
            latched[cpu] = int(r["context"])
        if timed:
            s = by_key.pop((cpu, int(r["timestamp"])), None)
        else:
            s = by_key[cpu].pop(0) if by_key.get(cpu) else None
            if s is not None and int(s["time"]) != 0:
                fail("%s: END-terminated record cpu %d index %s has time %s" % (label, cpu, r["index"], s["time"]))
        if s is None:
            fail("%s: no sample for cpu %d time %s (record %s)" % (label, cpu, r["timestamp"], r["index"]))
            mismatches += 1
            continue
        want_tid = latched.get(cpu, -1)
        want = {
            "ip": decoded_pc(r),
            "addr": decoded_va(r) if r["va"] else 0,
            "phys_addr": num(r["pa"]) if r["pa"] else 0,
            "weight": int(r["tot_lat"]) if r["tot_lat"] else 0,
            "tid": want_tid,
            "pid": int(r["pid"]) if want_tid in threads else -1,
            "comm": want_comm(threads, want_tid),
            "symbol": symbol_of(decoded_pc(r), summary),
        }
        have = {
            "ip": int(s["ip"], 0),
            "addr": int(s["addr"], 0),
            "phys_addr": int(s["phys_addr"], 0),
            "weight": int(s["weight"]),
            "tid": s32(int(s["tid"])),
            "pid": s32(int(s["pid"])),
            "comm": s["comm"],
            # kernel PCs have no symbols here (no kallsyms for an arm64
            # kernel on this host): perf leaves the symbol empty
            "symbol": s["symbol"] or None,
        }
        ds_want = expected_data_src(r)
        ds = int(s["data_src"], 0)
        if ds_want is None:
            ds_ok = ds == 0
        else:
            ds_ok = split_data_src(ds) == ds_want
        if want != have or not ds_ok:
            mismatches += 1
            diff = {k: (want[k], have[k]) for k in want if want[k] != have[k]}
            if not ds_ok:
                diff["data_src"] = (ds_want, split_data_src(ds))
            fail("%s: cpu %d record %s (%s): want/have %s" % (label, cpu, r["index"], r["scenario"], diff))
    left = sum(len(v) for v in by_key.values()) if not timed else len(by_key)
    if left:
        fail("%s: %d samples match no record" % (label, left))
    print("%s: %d samples for %d records (+%d zero samples for garbage); %d mismatches" % (
        label, len(samples), len(records), sum(zero.values()), mismatches))


BUILD_ID_EVENT_RE = re.compile(r"build id event received for (\S+): ([0-9a-f]+) \[(\d+)\]")
DUMP_RECORD_RE = re.compile(r"(0x[0-9a-f]+) \[(0x[0-9a-f]+)\]: PERF_RECORD_(BUILD_ID|MMAP2)\b(.*)$")
# The build-id note as ld writes it: namesz 4, descsz 20, NT_GNU_BUILD_ID, "GNU".
GNU_BUILD_ID_NOTE = (4).to_bytes(4, "little") + (20).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"GNU\0"


def perf_in(perf, args, data, stdin_data):
    """perf ARGS on data, through a real pipe when stdin_data is given
    (pipe mode: perf 6.1 cannot read it with -i FILE)."""
    cmd = [perf] + args + ["-i", "-" if stdin_data is not None else data]
    p = subprocess.run(cmd, input=stdin_data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=PERF_TIMEOUT)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def generator_symbols(perf, data, summary, stdin_data):
    """perf script --itrace=i1i -F ip,sym: samples per generator function."""
    rc, out, err = perf_in(perf, ["script", "--itrace=i1i", "-F", "ip,sym"], data, stdin_data)
    funcs = {k[len("symbol."):] for k in summary if k.startswith("symbol.")}
    have = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[1] in funcs:
            have[f[1]] = have.get(f[1], 0) + 1
    return rc, have


def check_build_id(perf, data, summary, label, stdin_data=None):
    elf = os.path.realpath(data[:-len(".data")] + ".elf")
    want = summary.get("elf.build_id", "")
    if not re.fullmatch(r"[0-9a-f]{40}", want):
        fail("%s: truth summary elf.build_id is %r" % (label, want))
        return
    readelf = shutil.which("readelf")
    if readelf:
        m = re.search(r"NT_GNU_BUILD_ID.*?Build ID: ([0-9a-f]+)", run([readelf, "-n", "-W", elf]).stdout, re.S)
        note = m.group(1) if m else None
        if note != want:
            fail("%s: readelf -n says the ELF's build id is %s, the truth %s" % (label, note, want))
    else:
        print("%s: no readelf, the ELF note is checked through perf only" % label)

    # perf reads the table (file mode: the header, pipe mode: the record)
    # through __event_process_build_id(), which says so with -v.
    rc, out, err = perf_in(perf, ["report", "-D", "-v"], data, stdin_data)
    events = BUILD_ID_EVENT_RE.findall(out + err)
    if rc != 0 or events != [(elf, want, "20")]:
        fail("%s: perf report -D -v exited %d, build id events %s, want [(%s, %s, 20)]" % (
            label, rc, events, elf, want))
    bad = [l for l in (out + err).splitlines() if re.search(r"build.?id", l, re.I) and
           re.search(r"mismatch|error|fail|invalid|bad", l, re.I)]
    if bad:
        fail("%s: perf report -D complains about build ids: %s" % (label, bad[:3]))
    recs = [(int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4))
            for m in (DUMP_RECORD_RE.search(l) for l in out.splitlines()) if m]
    bids = [r for r in recs if r[2] == "BUILD_ID"]
    mmap = [r for r in recs if r[2] == "MMAP2" and r[3].endswith(" " + elf)]
    if stdin_data is None:
        if bids:
            fail("%s: file mode has PERF_RECORD_BUILD_ID records in the data section" % label)
    elif len(bids) != 1 or len(mmap) != 1 or bids[0][0] + bids[0][1] != mmap[0][0]:
        # where perf inject --buildid-all puts it (perf 6.1's record writes
        # none in pipe mode)
        fail("%s: want one PERF_RECORD_BUILD_ID right before the ELF's MMAP2, have %s and %s" % (label, bids, mmap))

    rc, out, err = perf_in(perf, ["buildid-list"], data, stdin_data)
    listed = [tuple(l.split(None, 1)) for l in out.splitlines() if l.strip()]
    if stdin_data is None:
        if rc != 0 or listed != [(want, elf)]:
            fail("%s: perf buildid-list exited %d and printed %s, want [(%s, %s)]" % (label, rc, listed, want, elf))
    elif rc != 0 or any(l != (want, elf) for l in listed):
        # In pipe mode perf 6.1 lists only the DSOs that PERF_RECORD_SAMPLE
        # events hit (it forces --with-hits); SPE samples exist only once the
        # AUX data is decoded, so an empty list is what perf prints here.
        fail("%s: perf buildid-list -i - exited %d and printed %s" % (label, rc, listed))

    # perf matches the table against the ELF's note before it reads the
    # symbols: the functions resolve, and none once the note is changed.
    want_funcs = {k[len("function_records."):]: int(v) for k, v in summary.items()
                  if k.startswith("function_records.") and int(v) and not k.endswith("[kernel]")}
    rc, have = generator_symbols(perf, data, summary, stdin_data)
    if rc != 0 or have != want_funcs:
        fail("%s: perf script -F ip,sym exited %d, samples per function %s, truth %s" % (label, rc, have, want_funcs))
    with open(elf, "rb") as f:
        good = f.read()
    at = good.find(GNU_BUILD_ID_NOTE)
    if at < 0:
        fail("%s: no NT_GNU_BUILD_ID note in the ELF" % label)
        return
    other = bytearray(good)
    other[at + len(GNU_BUILD_ID_NOTE)] ^= 0xff
    try:
        with open(elf, "wb") as f:
            f.write(other)
        _, wrong = generator_symbols(perf, data, summary, stdin_data)
    finally:
        with open(elf, "wb") as f:
            f.write(good)
    if wrong:
        fail("%s: perf resolved %s in an ELF of another build id" % (label, wrong))
    print("%s: build id %s of %s in perf's table (%s), readelf agrees; %d samples in %d functions, "
          "none with another build" % (label, want, elf, "pipe record" if stdin_data is not None else "file header",
                                       sum(have.values()), len(have)))


def mode_dump(perf, spegen, tmp):
    variants = [
        ("unpadded-ts-garbage", ["--ts", "--seed", "7", "--records", "3000", "--cpus", "4", "--garbage", "0.02"]),
        ("padded-end-garbage", ["--seed", "8", "--records", "2000", "--cpus", "3", "--padded", "--no-ts",
                                "--garbage", "0.01"]),
        ("padded-ts-ext", ["--ts", "--seed", "9", "--records", "1500", "--cpus", "2", "--padded",
                           "--scenario", "ext-header,noise,kernel,branches", "--midr", "v1"]),
        ("padded-split-ts", ["--ts", "--seed", "14", "--records", "1500", "--cpus", "2", "--padded",
                             "--pad-layout=split", "--garbage", "0.01"]),
        ("small-chunks", ["--ts", "--seed", "10", "--records", "2000", "--cpus", "1", "--chunk-size", "4K"]),
    ]
    for label, args in variants:
        data, records, garbage, _ = generate(spegen, tmp, label, args)
        slots = check_dump(perf, data, records, garbage, label)
        if slots is None:
            continue
        # --padded defaults to the N1 slots; most records fit them.
        if "--padded" in args and "--pad-layout=split" not in args and slots < len(records) // 2:
            fail("%s: only %d of %d padded records checked in the N1 slot layout" % (label, slots, len(records)))
        if "--pad-layout=split" in args and slots != 0:
            fail("%s: %d records in the N1 slot layout with --pad-layout=split" % (label, slots))


def mode_script(perf, spegen, tmp, script):
    variants = [
        ("script-all", ["--ts", "--seed", "11", "--records", "3000", "--cpus", "4", "--garbage", "0.01"]),
        ("script-padded", ["--ts", "--seed", "12", "--records", "2000", "--cpus", "8", "--padded", "--midr", "n2"]),
        ("script-end", ["--seed", "13", "--records", "2000", "--cpus", "3", "--no-ts", "--garbage", "0.01"]),
    ]
    for label, args in variants:
        data, records, garbage, summary = generate(spegen, tmp, label, args)
        check_samples(perf, data, records, garbage, summary, label, script)
        check_report(perf, data, summary, label)
        if "--no-ts" not in args:
            check_branch_misses(perf, data, records, label, script)
    data, _, _, summary = generate(spegen, tmp, "buildid", ["--ts", "--seed", "15", "--records", "1000", "--cpus", "2",
                                                            "--garbage", "0.01"])
    check_build_id(perf, data, summary, "buildid")


def check_branch_misses(perf, data, records, label, script):
    """--itrace=b: one branch-miss sample per MISPRED record, from its PC
    to its branch target (the TGT packet)."""
    p = run([perf, "script", "-i", data, "--itrace=b", "-s", script])
    if p.returncode != 0:
        fail("%s: perf script --itrace=b exited %d" % (label, p.returncode))
        return
    have = {}
    for s in parse_samples(p.stdout):
        if int(s["ip"], 0) == 0:
            continue
        have[(int(s["cpu"]), int(s["time"]))] = (s["event"], int(s["ip"], 0), int(s["addr"], 0))
    want = {}
    for r in records:
        if r["events"] and num(r["events"]) & (1 << 7):
            want[(int(r["cpu"]), int(r["timestamp"]))] = ("branch-miss", decoded_pc(r),
                                                          num(r["tgt"]) if r["tgt"] else 0)
    if have != want:
        bad = [k for k in set(have) | set(want) if have.get(k) != want.get(k)][:3]
        fail("%s: branch-miss samples differ from MISPRED records at %s: %s" % (
            label, bad, [(want.get(k), have.get(k)) for k in bad]))
    print("%s: %d branch-miss samples, %d mispredicted branches in the truth" % (label, len(have), len(want)))


def check_report(perf, data, summary, label):
    """perf report's per-symbol histogram: the hottest function and every
    function's sample count equal the truth."""
    p = run([perf, "report", "--stdio", "-i", data, "--itrace=i1i", "--sort", "sym", "-q", "-F", "sample,sym"])
    if p.returncode != 0:
        fail("%s: perf report exited %d" % (label, p.returncode))
        return
    rows = []
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0].isdigit() and f[1] in ("[.]", "[k]"):
            rows.append((int(f[0]), f[2]))
    if not rows:
        fail("%s: perf report printed no symbol rows" % label)
        return
    # unresolved addresses (kernel PCs, the garbage zero samples) print as hex
    have = {sym: n for n, sym in rows if not re.fullmatch(r"(0x)?[0-9a-f]+", sym)}
    want = {k[len("function_records."):]: int(v) for k, v in summary.items()
            if k.startswith("function_records.") and int(v) and not k.endswith("[kernel]")}
    if have != want:
        fail("%s: perf report samples per symbol %s, truth %s" % (label, have, want))
    top = max(have, key=have.get)
    if top != summary["hottest_function.name"]:
        fail("%s: perf report's hottest symbol %s, truth %s" % (label, top, summary["hottest_function.name"]))
    print("%s: perf report hottest symbol %s (%d samples), %d symbols agree" % (label, top, have[top], len(have)))


def parse_c2c(text):
    """Rows of the Shared Data Cache Line Table and the Pareto blocks."""
    lines = text.splitlines()
    table, pareto, totals = [], {}, {}
    section = None
    cur_line = None
    for line in lines:
        if "Shared Data Cache Line Table" in line:
            section = "table"
            continue
        if "Shared Cache Line Distribution Pareto" in line:
            section = "pareto"
            continue
        m = re.match(r"^\s+([A-Za-z][A-Za-z0-9 ()-]*?)\s+:\s+(\d+)\s*$", line)
        if m:
            totals[m.group(1)] = int(m.group(2))
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        if section == "table" and len(f) >= 8 and f[0].isdigit() and f[1].startswith("0x"):
            table.append({"index": int(f[0]), "line": int(f[1], 0), "peer_total": int(f[5]),
                          "local": int(f[6]), "remote": int(f[7])})
        elif section == "pareto":
            if len(f) == 7 and f[0].isdigit() and f[6].startswith("0x"):
                cur_line = int(f[6], 0)
                pareto[cur_line] = []
            elif cur_line is not None and len(f) > 12 and f[0].endswith("%") and f[5].startswith("0x"):
                pareto[cur_line].append({"offset": int(f[5], 0), "iaddr": int(f[8], 0),
                                         "symbol": f[15] if f[14] in ("[.]", "[k]") else None})
    return table, pareto, totals


def mode_c2c(perf, spegen, tmp):
    args = ["--ts", "--seed", "21", "--records", "4000", "--cpus", "4",
            "--scenario", "false-sharing,true-sharing,read-only,padded,remote,dram,noise"]
    data, records, garbage, summary = generate(spegen, tmp, "c2c", args)
    p = run([perf, "c2c", "report", "--stdio", "-i", data])
    if p.returncode != 0:
        fail("perf c2c report exited %d: %s" % (p.returncode, p.stderr[-500:]))
        return
    table, pareto, totals = parse_c2c(p.stdout)
    if not table:
        fail("perf c2c report printed no shared cache line")
        return

    fs_line = int(summary["false_sharing.line"], 0)
    if table[0]["line"] != fs_line:
        fail("c2c ranks 0x%x first, the false-sharing line is 0x%x" % (table[0]["line"], fs_line))

    def line_of(r):
        return decoded_va(r) & ~63

    local_ds, remote_ds = {0x9, 0xa, 0xc}, {0xd}
    want_local = sum(1 for r in records if is_load(r) and num(r["data_source"]) in local_ds)
    want_remote = sum(1 for r in records if is_load(r) and num(r["data_source"]) in remote_ds)
    want_loads = sum(1 for r in records if is_load(r))
    want_stores = sum(1 for r in records if is_store(r))
    for name, want in (("Load HIT Local Peer", want_local), ("Load HIT Remote Peer", want_remote),
                       ("Load Operations", want_loads), ("Store Operations", want_stores)):
        if totals.get(name) != want:
            fail("c2c '%s' = %s, truth %d" % (name, totals.get(name), want))

    # Every shared line is one with peer loads in the truth, with the same
    # local/remote peer counts; the padded and read-only lines never are.
    peer = {}
    for r in records:
        if is_load(r) and num(r["data_source"]) in local_ds | remote_ds:
            loc, rem = peer.get(line_of(r), (0, 0))
            if num(r["data_source"]) in local_ds:
                loc += 1
            else:
                rem += 1
            peer[line_of(r)] = (loc, rem)
    have = {row["line"]: (row["local"], row["remote"]) for row in table}
    if have != peer:
        fail("c2c shared lines %s, truth peer lines %s" % (
            {hex(k): v for k, v in have.items()}, {hex(k): v for k, v in peer.items()}))
    for key in ("padded.writer_line", "padded.reader_line", "read_only.line"):
        if int(summary[key], 0) in have:
            fail("c2c lists %s 0x%x as shared" % (key, int(summary[key], 0)))

    rows = pareto.get(fs_line, [])
    offsets = sorted({row["offset"] for row in rows})
    want_offsets = sorted({int(x, 0) for x in summary["false_sharing.load_offsets"].split(",")} |
                          {int(x, 0) for x in summary["false_sharing.store_offsets"].split(",")})
    if offsets != want_offsets:
        fail("c2c false-sharing offsets %s, truth %s" % ([hex(o) for o in offsets], [hex(o) for o in want_offsets]))
    syms = sorted({row["symbol"] for row in rows})
    if syms != sorted(summary["false_sharing.symbols"].split(",")):
        fail("c2c false-sharing symbols %s, truth %s" % (syms, summary["false_sharing.symbols"]))
    iaddrs = sorted({row["iaddr"] for row in rows})
    want_iaddrs = sorted({int(x, 0) for x in summary["false_sharing.load_pcs"].split(",")} |
                         {int(x, 0) for x in summary["false_sharing.store_pcs"].split(",")})
    if iaddrs != want_iaddrs:
        fail("c2c false-sharing code addresses %s, truth %s" % ([hex(a) for a in iaddrs],
                                                                [hex(a) for a in want_iaddrs]))
    print("c2c: %d shared lines, first 0x%x (peer %d local, %d remote); offsets %s; %s" % (
        len(table), table[0]["line"], table[0]["local"], table[0]["remote"],
        [hex(o) for o in offsets], ",".join(s for s in syms if s)))


def mode_pipe(perf, spegen, tmp, script):
    # perf 6.1 misreads a pipe-mode file given with -i FILE (it loses the
    # AUXTRACE payload position); through a real pipe it is fine, and that is
    # how pipe mode is used, so feed it through stdin.
    label = "pipe"
    args = ["--ts", "--seed", "31", "--records", "2000", "--cpus", "4", "--pipe", "--garbage", "0.01"]
    data, records, garbage, summary = generate(spegen, tmp, label, args)
    with open(data, "rb") as f:
        blob = f.read()
    if blob[:8] != b"PERFILE2" or int.from_bytes(blob[8:16], "little") != 16:
        fail("pipe-mode perf.data does not start with the 16-byte pipe header")
    check_dump(perf, data, records, garbage, label + "-dump", stdin_data=blob)
    check_samples(perf, data, records, garbage, summary, label + "-script", script, stdin_data=blob)
    check_build_id(perf, data, summary, label + "-buildid", stdin_data=blob)

    # The generator can also stream straight into perf.
    gen = subprocess.Popen([spegen, "--out-dir", tmp, "--prefix", "pipe2", "--ts", "--seed", "32", "--records", "500",
                            "--pipe", "--perf-data", "-", "--no-truth", "--no-bin"], stdout=subprocess.PIPE)
    p = subprocess.run([perf, "script", "-i", "-", "--itrace=i1i", "-s", script], stdin=gen.stdout,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=PERF_TIMEOUT)
    gen.stdout.close()
    if gen.wait() != 0:
        fail("armprofd-spegen --perf-data - failed")
    n = len(parse_samples(p.stdout.decode(errors="replace")))
    if n != 500:
        fail("streamed pipe: %d samples for 500 records" % n)
    else:
        print("pipe-stream: 500 samples for 500 records")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("dump", "script", "c2c", "pipe"):
        print("usage: spe-oracle.py dump|script|c2c|pipe PATH-TO-armprofd-spegen")
        return 2
    mode, spegen = sys.argv[1], sys.argv[2]
    perf = perf_ok()
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "perf-samples.py")
    tmp = tempfile.mkdtemp(prefix="spe-oracle-")
    try:
        # The probe: what this perf can do, asked once. After it, a variant
        # perf does not decode or samples nothing from is a failure.
        probe, _, _, _ = generate(spegen, tmp, "probe", ["--records", "10", "--ts"])
        if "ARM SPE data" not in run([perf, "report", "-D", "-i", probe]).stdout:
            skip("this perf does not decode Arm SPE (built without AUXTRACE support?)")
        if mode in ("script", "pipe") and not re.search(r"libpython:\s*\[\s*on\s*\]",
                                                          run([perf, "version", "--build-options"]).stdout):
            skip("this perf has no Python scripting (perf version --build-options: libpython not on)")
        if mode == "dump":
            mode_dump(perf, spegen, tmp)
        elif mode == "script":
            mode_script(perf, spegen, tmp, script)
        elif mode == "c2c":
            mode_c2c(perf, spegen, tmp)
        else:
            mode_pipe(perf, spegen, tmp, script)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
