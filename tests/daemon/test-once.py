#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`armprofd --replay FILE --once` on generator files reports what the ground truth
says, computed here independently from the truth CSV: records per CPU, ops, loads
by data source, peer snoops, decode errors, the hottest PC, the false-sharing line
(first, with its offsets, PCs and CPUs), the other scenarios' classes, latency
quantiles; and it fails clearly, keeping what decoded, on damaged input."""

import collections
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from spegen_truth import decoded_pc, perf_names, read_facts

build = os.environ["ARMPROFD_BUILD_DIR"]
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
armprofd = os.path.join(build, "daemon", "armprofd")

# Neoverse "common" data-source encodings (Neoverse TRMs, "Data source packet") -> armprofd's names.
SOURCES = {0x0: "l1d", 0x8: "l2", 0x9: "peer_core", 0xA: "local_cluster", 0xB: "sys_cache",
           0xC: "peer_cluster", 0xD: "remote", 0xE: "dram"}
LOCAL_PEER = {"peer_core", "local_cluster", "peer_cluster"}


def num(s):
    return int(s, 16) if s.startswith("0x") else int(s)


def generate(tmp, *args):
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "o", *args], check=True, stdout=subprocess.DEVNULL)
    facts = read_facts(os.path.join(tmp, "o.truth.txt"))
    with open(os.path.join(tmp, "o.truth.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return facts, rows


def once(path, stdin=None, config=None):
    args = ["-c", config] if config else []
    r = subprocess.run([armprofd, *args, "--replay", path, "--once"], capture_output=True, text=True, stdin=stdin)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None), r.stderr


def expected(rows):
    e = {"cpus": {}, "ops": {"load": 0, "store": 0, "branch": 0, "other": 0}, "sources": {},
         "peer": {"local": 0, "remote": 0}, "garbage": 0, "lat": {}}
    for r in rows:
        if r["kind"] == "garbage":
            e["garbage"] += int(r["size"])
            continue
        e["cpus"][int(r["cpu"])] = e["cpus"].get(int(r["cpu"]), 0) + 1
        cls = r["op_class"]
        if cls == "1":
            op = "store" if num(r["op_subclass"]) & 1 else "load"  # LDST payload bit 0: ST
        elif cls == "2":
            op = "branch"
        else:
            op = "other"
        e["ops"][op] += 1
        if r["tot_lat"]:
            e["lat"].setdefault(op, []).append(num(r["tot_lat"]))
        if op == "load" and r["data_source"]:
            src = SOURCES.get(num(r["data_source"]), "unknown")
            e["sources"][src] = e["sources"].get(src, 0) + 1
            if src in LOCAL_PEER:
                e["peer"]["local"] += 1
            elif src == "remote":
                e["peer"]["remote"] += 1
    return e


def check_report(rep, facts, rows):
    e = expected(rows)
    assert rep["complete"], rep.get("error")
    assert {c["cpu"]: c["records"] for c in rep["cpus"]} == e["cpus"], (rep["cpus"], e["cpus"])
    t = rep["totals"]
    assert t["records"] == int(facts["records"]), t["records"]
    assert t["ops"] == e["ops"], (t["ops"], e["ops"])
    assert t["loads_by_source"] == e["sources"], (t["loads_by_source"], e["sources"])
    assert t["peer_snoops"] == e["peer"], (t["peer_snoops"], e["peer"])
    assert rep["decode_errors"]["bad_header"] == e["garbage"], (rep["decode_errors"], e["garbage"])
    assert rep["decode_errors"]["dropped_records"] == 0
    assert rep["sample_period"] == 4096, rep["sample_period"]  # the generator's SPE interval

    # Hot PCs: a row per command and function, as perf names the records (the file's COMM
    # records, the CPU's last CONTEXT): each row's count inside the Space-Saving bound of the
    # truth's; a kernel PC served by address is no function: a row per PC. The hottest first,
    # at the generator's hottest PC.
    names = perf_names(rows, facts)
    want = collections.Counter(n for n in names if n and n[1])
    want_pc = collections.Counter((n[0], decoded_pc(r)) for r, n in zip(rows, names) if n)
    pcs = rep["hotpcs"]["pcs"]
    for p in pcs:
        if "pc" in p and int(p["pc"], 16) >> 56 == 0xFF:
            n = want_pc[(p.get("comm"), int(p["pc"], 16))]
        else:
            n = want[(p.get("comm"), p.get("symbol"))]
        assert p["samples"] - p["error"] <= n <= p["samples"], (p, n)
        assert p["pids"] == [int(facts["pid"])], p
    top = pcs[0]
    assert (top["comm"], top["symbol"]) == want.most_common(1)[0][0], (top, want.most_common(1))
    assert top["symbol"] == facts["hottest.symbol"] and top["pc"] == facts["hottest.pc"], (top, facts["hottest.pc"])

    # Hot lines: the false-sharing line ranks first, classified, with the right offsets/PCs/CPUs.
    lines = {l["address"]: l for l in rep["hotlines"]["lines"]}
    first = rep["hotlines"]["lines"][0]
    fs = facts["false_sharing.line"]
    assert first["address"] == fs and first["class"] == "false_sharing", first["address"]
    stores = {o["offset"] for o in first["offsets"] if o["stores"]}
    loads = {o["offset"] for o in first["offsets"] if o["loads"]}
    assert stores == set(facts["false_sharing.store_offsets"].split(",")), stores
    assert loads == set(facts["false_sharing.load_offsets"].split(",")), loads
    store_pcs = {o["pc"] for o in first["offsets"] if o["stores"]}
    load_pcs = {o["pc"] for o in first["offsets"] if o["loads"]}
    assert store_pcs == set(facts["false_sharing.store_pcs"].split(",")), store_pcs
    assert load_pcs == set(facts["false_sharing.load_pcs"].split(",")), load_pcs
    assert {o["symbol"] for o in first["offsets"]} == set(facts["false_sharing.symbols"].split(",")), first["offsets"]
    cpus = {c for o in first["offsets"] for c in o["cpus"]}
    want = {int(c) for c in (facts["false_sharing.writer_cpus"] + "," + facts["false_sharing.reader_cpus"]).split(",")}
    assert cpus == want, (cpus, want)
    assert lines[facts["true_sharing.line"]]["class"] == "true_sharing"
    assert lines[facts["read_only.line"]]["class"] == "read_only"
    # The padded fix: the writer's line has stores but no peer snoop (written), the readers' none.
    for k, cls in (("padded.writer_line", "written"), ("padded.reader_line", "read_only")):
        if facts[k] in lines:
            assert lines[facts[k]]["class"] == cls, (k, lines[facts[k]]["class"])
    assert lines[facts["remote.line"]]["peer_snoops"]["remote"] > 0
    assert {o["offset"] for o in lines[facts["remote.line"]]["offsets"]} == {facts["remote.offset"]}

    # Precision and recall of the sharing classification over all scenarios' lines.
    # The remote scenario's writer stores the one offset (remote.offset) its readers on the
    # other node load: that is true sharing too, across sockets.
    truth_flagged = {facts["false_sharing.line"]: "false_sharing", facts["true_sharing.line"]: "true_sharing",
                     facts["remote.line"]: "true_sharing"}
    flagged = {a: l["class"] for a, l in lines.items() if l["class"] in ("false_sharing", "true_sharing")}
    hits = sum(1 for a, c in flagged.items() if truth_flagged.get(a) == c)
    precision = hits / len(flagged) if flagged else 0.0
    recall = hits / len(truth_flagged)
    print(f"  sharing classification: precision {precision:.0%}, recall {recall:.0%} "
          f"({len(flagged)} lines flagged of {len(lines)} reported)")
    assert precision == 1.0 and recall == 1.0, (flagged, truth_flagged)

    # Latency quantiles within 1% of the exact nearest-rank quantile of the same records.
    by_op = rep["latency"]["latency_cycles"]["total"]["by_op"]
    for op, vals in e["lat"].items():
        vals.sort()
        assert by_op[op]["count"] == len(vals), (op, by_op[op]["count"], len(vals))
        for q, key in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            exact = vals[max(0, math.ceil(q * len(vals)) - 1)]
            got = by_op[op][key]
            assert abs(got - exact) <= 0.01 * exact + 0.5, (op, key, got, exact)
    return sum(e["cpus"].values())


with tempfile.TemporaryDirectory(prefix="armprofd-once-") as tmp:
    facts, rows = generate(tmp, "--seed", "21", "--records", "40000", "--cpus", "4", "--scenario", "all",
                           "--garbage", "0.01")
    data = os.path.join(tmp, "o.data")
    # Every line and PC by its address, the kernel scenario's too (test-privacy.py checks the default).
    kconf = os.path.join(tmp, "kernel.conf")
    with open(kconf, "w") as f:
        f.write("[privacy]\nkernel_addresses = yes\n")
    rc, rep, err = once(data, config=kconf)
    assert rc == 0, err
    n = check_report(rep, facts, rows)
    print(f"file mode: {n} records; counts, hot PC, hot lines and quantiles equal the truth")

    # perf c2c, on the same file, names the same cache line we rank first.
    perf = shutil.which("perf")
    if perf:
        r = subprocess.run([perf, "c2c", "report", "-i", data, "--stdio", "-N"], capture_output=True, text=True)
        m = re.search(r"Shared Data Cache Line Table.*?\n\s+0\s+(0x[0-9a-f]+)", r.stdout, re.S)
        if r.returncode == 0 and m:
            assert int(m.group(1), 16) == int(rep["hotlines"]["lines"][0]["address"], 16), (m.group(1), rep["hotlines"]["lines"][0]["address"])
            print(f"perf c2c ranks {m.group(1)} first, as armprofd does")
        else:
            print(f"perf c2c gave no cache line table (rc {r.returncode}): {r.stderr.strip()[:200]}")
            sys.exit(1)
    else:
        print("perf not installed: c2c comparison skipped")

    # [privacy] physical_addresses: lines keyed by PA (the generator maps data VA
    # 0xffff8a000000 + x to PA 0x40000000 + x), so the false-sharing line is found by its PA.
    conf = os.path.join(tmp, "pa.conf")
    with open(conf, "w") as f:
        f.write("[privacy]\nphysical_addresses = yes\n")
    rc, rep_pa, err = once(data, config=conf)
    assert rc == 0, err
    first = rep_pa["hotlines"]["lines"][0]
    want_pa = int(facts["false_sharing.line"], 16) - 0xffff8a000000 + 0x40000000
    assert first["key"] == "pa" and int(first["address"], 16) == want_pa, first["address"]
    assert first["class"] == "false_sharing"
    print(f"lines by physical address: the false-sharing line is {first['address']}")

    # Damage: a cut file reports the offset, exits non-zero, and keeps what decoded before.
    size = os.path.getsize(data)
    cut = os.path.join(tmp, "cut.data")
    with open(data, "rb") as src, open(cut, "wb") as dst:
        dst.write(src.read(size // 2))
    rc, rep, err = once(cut)
    assert rc == 1, (rc, err)
    assert "offset" in err and "offset" in rep["error"], (err, rep.get("error"))
    assert not rep["complete"] and 0 < rep["totals"]["records"] < n, rep["totals"]["records"]
    print(f"cut at {size // 2} bytes: exit 1, '{rep['error']}', {rep['totals']['records']} records kept")

    rc, rep, err = once(os.path.join(tmp, "absent.data"))
    assert rc == 1 and "absent.data" in err, err
    with open(os.path.join(tmp, "junk.data"), "wb") as f:
        f.write(b"not a perf.data file at all" * 10)
    rc, rep, err = once(os.path.join(tmp, "junk.data"))
    assert rc == 1 and "not a perf.data" in err, err
    print(f"unreadable files: exit 1 ({err.strip().splitlines()[-1]})")

with tempfile.TemporaryDirectory(prefix="armprofd-once-") as tmp:
    facts, rows = generate(tmp, "--seed", "22", "--records", "20000", "--cpus", "8", "--scenario", "all",
                           "--ts", "--padded", "--pipe")
    kconf = os.path.join(tmp, "kernel.conf")
    with open(kconf, "w") as f:
        f.write("[privacy]\nkernel_addresses = yes\n")
    with open(os.path.join(tmp, "o.data"), "rb") as f:
        rc, rep, err = once("-", stdin=f, config=kconf)
    assert rc == 0, err
    assert rep["mode"] == "pipe"
    n = check_report(rep, facts, rows)
    print(f"pipe mode on stdin: {n} records equal the truth")
