#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""An x86 `perf c2c record` file (armprofd-memgen: PEBS mem-loads/mem-stores samples,
data_src from the kernel's PEBS encodings) replayed with `armprofd --replay FILE --once`
and by the daemon's /hotlines: the answers equal the generator's truth CSV (counted here,
by the labels the generator wrote, not by armprofd's decoder): loads and stores per line
and offset, HITM loads as peer snoops (local from LLC HITM, remote from remote-cache
HITM), the class of each line, CPUs and threads per offset, latency sums (the samples'
weights), loads per source. Then Debian's `perf c2c report --stdio` on the same file is
the oracle: the lines of its Shared Data Cache Line Table, their order, their HITM
(total, local, remote) and store counts equal ours. A pipe-mode file read from stdin
gives the same answers (perf report's samples per event as its oracle)."""

import collections
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

build = os.environ["ARMPROFD_BUILD_DIR"]
memgen = os.path.join(build, "tests", "spegen", "armprofd-memgen")
armprofd = os.path.join(build, "daemon", "armprofd")
sys.path.insert(0, os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "tests", "integration"))

# The generator's kinds (its labels) -> the store's source, as memsample-decode.h documents the mapping.
SOURCE_OF_KIND = {"l1hit": "l1d", "llchit": "sys_cache", "lcl_hitm": "peer_core", "rmt_hitm": "remote",
                  "lcl_dram": "dram", "rmt_dram": "dram"}
# The generator's scenarios -> the /hotlines class (store/hotlines.h).
CLASS_OF_SCENARIO = {"false_sharing": "false_sharing", "true_sharing": "true_sharing",
                     "read_only": "read_only", "dram": "read_only"}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def generate(tmp, seed, scale, pipe=False):
    prefix = "p" if pipe else "m"
    subprocess.run([memgen, "--seed", str(seed), "--scale", str(scale), *(["--pipe"] if pipe else []), tmp, prefix],
                   check=True)
    with open(os.path.join(tmp, prefix + ".truth.csv"), newline="") as f:
        return os.path.join(tmp, prefix + ".data"), list(csv.DictReader(f))


def check_pipe(tmp, seed, scale):
    """The pipe-mode file (perf c2c record -o -) through stdin: the same truth; perf report's
    sample count per event as its oracle (perf 6.1's c2c report fails on pipe input: "Failed setup nodes")."""
    data, rows = generate(tmp, seed, scale, pipe=True)
    with open(data, "rb") as f:
        r = subprocess.run([armprofd, "--replay", "-", "--once"], stdin=f, capture_output=True, text=True,
                           timeout=120)
    check(r.returncode == 0, f"pipe --once exited {r.returncode}: {r.stderr[-500:]}")
    if r.returncode != 0:
        return
    rep = json.loads(r.stdout)
    check(rep["mode"] == "pipe", f"mode {rep['mode']}")
    check_once(rep, rows)
    perf = shutil.which("perf")
    if perf:
        with open(data, "rb") as f:
            p = subprocess.run([perf, "report", "--stdio", "-i", "-"], stdin=f, capture_output=True, text=True,
                               timeout=120)
        got = {m.group(2): int(m.group(1)) for m in re.finditer(r"# Samples: (\d+)\s+of event '([^']+)'", p.stdout)}
        want = {"raw 0x1cd:ppp": sum(r["op"] == "load" for r in rows), "raw 0x82d0:ppp": sum(r["op"] == "store" for r in rows)}
        check(got == want, f"perf report on the pipe: {got} != {want}")


def truth_lines(rows):
    lines = {}
    for r in rows:
        line = int(r["line"], 16)
        l = lines.setdefault(line, {"loads": 0, "stores": 0, "local": 0, "remote": 0, "lat": 0,
                                    "scenario": r["scenario"], "offsets": {}})
        o = l["offsets"].setdefault((int(r["offset"], 16), int(r["ip"], 16)),
                                    {"loads": 0, "stores": 0, "cpus": set(), "tids": set()})
        if r["op"] == "load":
            l["loads"] += 1
            o["loads"] += 1
            l["lat"] += int(r["weight"])
            l["local"] += r["kind"] == "lcl_hitm"
            l["remote"] += r["kind"] == "rmt_hitm"
        else:
            l["stores"] += 1
            o["stores"] += 1
        o["cpus"].add(int(r["cpu"]))
        o["tids"].add(int(r["tid"]))
    return lines


def check_hotlines(label, got_lines, rows):
    want = truth_lines(rows)
    got = {int(l["address"], 16): l for l in got_lines}
    check(set(got) == set(want), f"{label}: lines {sorted(map(hex, got))} != truth {sorted(map(hex, want))}")
    for line, w in want.items():
        g = got.get(line)
        if not g:
            continue
        h = hex(line)
        check(g["loads"] == w["loads"], f"{label} {h}: loads {g['loads']} != {w['loads']}")
        check(g["stores"] == w["stores"], f"{label} {h}: stores {g['stores']} != {w['stores']}")
        check(g["peer_snoops"] == {"local": w["local"], "remote": w["remote"]},
              f"{label} {h}: peer snoops {g['peer_snoops']} != HITM local {w['local']} remote {w['remote']}")
        check(g["latency_sum_cycles"] == w["lat"], f"{label} {h}: latency sum {g['latency_sum_cycles']} != {w['lat']}")
        check(g["class"] == CLASS_OF_SCENARIO[w["scenario"]],
              f"{label} {h}: class {g['class']} != {CLASS_OF_SCENARIO[w['scenario']]} ({w['scenario']})")
        offs = {(int(o["offset"], 16), int(o["pc"], 16)): o for o in g["offsets"]}
        check(set(offs) == set(w["offsets"]), f"{label} {h}: offsets/PCs {sorted(offs)} != {sorted(w['offsets'])}")
        for key, wo in w["offsets"].items():
            go = offs.get(key)
            if not go:
                continue
            check((go["loads"], go["stores"]) == (wo["loads"], wo["stores"]),
                  f"{label} {h}+{key[0]:#x}: loads/stores {(go['loads'], go['stores'])} != {(wo['loads'], wo['stores'])}")
            check(set(go["cpus"]) == wo["cpus"], f"{label} {h}+{key[0]:#x}: cpus {go['cpus']} != {wo['cpus']}")
            check(set(go["tids"]) == wo["tids"], f"{label} {h}+{key[0]:#x}: tids {go['tids']} != {wo['tids']}")
    # Ranked: lines with peer snoops first, most first (the truth has no ties among them).
    shared = [int(l["address"], 16) for l in got_lines if l["peer_snoops"]["local"] + l["peer_snoops"]["remote"]]
    want_shared = sorted((l for l in want if want[l]["local"] + want[l]["remote"]),
                         key=lambda l: -(want[l]["local"] + want[l]["remote"]))
    check(shared == want_shared, f"{label}: peer-snoop lines in order {list(map(hex, shared))} != {list(map(hex, want_shared))}")
    return want_shared


def check_once(rep, rows):
    n = len(rows)
    loads = sum(r["op"] == "load" for r in rows)
    ms = rep["memory_samples"]
    check(rep["complete"] and rep["warnings"] == [], f"report not complete or warned: {rep.get('warnings')}")
    check((ms["samples"], ms["records"], ms["loads"], ms["stores"]) == (n, n, loads, n - loads),
          f"memory_samples {ms} != {n} samples, {loads} loads")
    check(ms["dropped_no_data_src"] + ms["dropped_not_memory"] == 0, f"dropped samples: {ms}")
    hitm = sum(r["kind"] in ("lcl_hitm", "rmt_hitm") for r in rows)
    check(ms["hitm"] == hitm and ms["peer_snoops"] == hitm, f"hitm {ms['hitm']}/{ms['peer_snoops']} != {hitm}")
    check(ms["remote_dram"] == sum(r["kind"] == "rmt_dram" for r in rows), f"remote_dram {ms['remote_dram']}")
    check(rep["unattributed_records"] == 0, f"unattributed {rep['unattributed_records']}")
    t = rep["totals"]
    check(t["records"] == n and t["ops"]["load"] == loads and t["ops"]["store"] == n - loads, f"totals {t}")
    want_src = collections.Counter(SOURCE_OF_KIND[r["kind"]] for r in rows if r["op"] == "load")
    check(t["loads_by_source"] == dict(want_src), f"loads_by_source {t['loads_by_source']} != {dict(want_src)}")
    check(t["peer_snoops"] == {"local": sum(r["kind"] == "lcl_hitm" for r in rows),
                               "remote": sum(r["kind"] == "rmt_hitm" for r in rows)}, f"peer snoops {t['peer_snoops']}")
    # /hotpcs: samples per PC.
    want_pc = collections.Counter(int(r["ip"], 16) for r in rows)
    got_pc = {int(p["pc"], 16): p["samples"] for p in rep["hotpcs"]["pcs"]}
    check(got_pc == dict(want_pc), f"hotpcs {got_pc} != {dict(want_pc)}")
    # /latency: per source count and sum of the weights.
    lat = rep["latency"]["latency_cycles"]["total"]["loads_by_source"]
    for src in want_src:
        ws = sum(int(r["weight"]) for r in rows if r["op"] == "load" and SOURCE_OF_KIND[r["kind"]] == src)
        check(lat[src]["count"] == want_src[src] and lat[src]["sum_cycles"] == ws,
              f"latency {src}: {lat[src]['count']}/{lat[src]['sum_cycles']} != {want_src[src]}/{ws}")
    return check_hotlines("--once", rep["hotlines"]["lines"], rows)


def parse_c2c_hitm(text):
    """Rows of the Shared Data Cache Line Table, HITM display (perf >= 6.0 column layout)."""
    table, section = [], None
    for line in text.splitlines():
        if "Shared Data Cache Line Table" in line:
            section = "table"
            continue
        if "Shared Cache Line Distribution Pareto" in line:
            break
        if section != "table" or line.startswith("#") or not line.strip():
            continue
        f = line.split()
        if len(f) == 23 and f[0].isdigit() and f[1].startswith("0x"):
            table.append({"line": int(f[1], 16), "hitm": int(f[5]), "lcl_hitm": int(f[6]), "rmt_hitm": int(f[7]),
                          "stores": int(f[10]), "st_l1hit": int(f[11]), "st_l1miss": int(f[12])})
    return table


def check_perf(data, rep, rows):
    perf = shutil.which("perf")
    if not perf:
        print("perf not found: the perf c2c oracle part is not run", file=sys.stderr)
        return False
    # --no-source: perf would run addr2line on /usr/bin/c2cbench, a file that does not exist here.
    p = subprocess.run([perf, "c2c", "report", "--stdio", "--no-source", "-i", data], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, f"perf c2c report exited {p.returncode}: {p.stderr[-500:]}")
    table = parse_c2c_hitm(p.stdout)
    check(table, "perf c2c report printed no Shared Data Cache Line Table row")
    ours = {int(l["address"], 16): l for l in rep["hotlines"]["lines"]}
    our_order = [int(l["address"], 16) for l in rep["hotlines"]["lines"]
                 if l["peer_snoops"]["local"] + l["peer_snoops"]["remote"]]
    check([t["line"] for t in table] == our_order,
          f"perf's shared lines {[hex(t['line']) for t in table]} != ours {list(map(hex, our_order))}")
    for t in table:
        l = ours.get(t["line"])
        if not l:
            continue
        ps = l["peer_snoops"]
        check((t["hitm"], t["lcl_hitm"], t["rmt_hitm"]) == (ps["local"] + ps["remote"], ps["local"], ps["remote"]),
              f"{t['line']:#x}: perf HITM {t['hitm']}/{t['lcl_hitm']}/{t['rmt_hitm']} != ours {ps}")
        want_l1hit = sum(r["kind"] == "st_l1hit" for r in rows if int(r["line"], 16) == t["line"])
        check((t["stores"], t["st_l1hit"]) == (l["stores"], want_l1hit),
              f"{t['line']:#x}: perf stores {t['stores']} (L1 hit {t['st_l1hit']}) != ours {l['stores']} / truth {want_l1hit}")
    m = re.search(r"Load Local HITM\s+:\s+(\d+)", p.stdout)
    m2 = re.search(r"Load Remote HITM\s+:\s+(\d+)", p.stdout)
    check(m and m2 and (int(m.group(1)), int(m2.group(1))) == (rep["totals"]["peer_snoops"]["local"],
                                                              rep["totals"]["peer_snoops"]["remote"]),
          f"perf's HITM totals {m and m.group(1)}/{m2 and m2.group(1)} != ours {rep['totals']['peer_snoops']}")
    return True


def check_daemon(data, rows):
    """The daemon serving the replay: /hotlines as --once says."""
    import armprofd_test

    os.environ["ARMPROFD_BIN"] = armprofd
    with armprofd_test.Daemon(args=["--replay", data]) as d:
        d.wait_ready()
        status, _, body = d.get("/hotlines?all=1&window=all&limit=100")
        check(status == 200, f"/hotlines: HTTP {status}")
        if status == 200:
            check_hotlines("/hotlines", json.loads(body)["lines"], rows)


def main():
    tmp = tempfile.mkdtemp(prefix="x86mem-")
    try:
        for seed, scale in ((1, 1), (7, 5)):
            data, rows = generate(tmp, seed, scale)
            r = subprocess.run([armprofd, "--replay", data, "--once"], capture_output=True, text=True, timeout=120)
            check(r.returncode == 0, f"--once exited {r.returncode}: {r.stderr[-500:]}")
            if r.returncode != 0:
                continue
            rep = json.loads(r.stdout)
            shared = check_once(rep, rows)
            check(len(shared) == 2, f"the truth should have 2 HITM lines, has {len(shared)}")
            perf_ran = check_perf(data, rep, rows)
            print(f"seed {seed} scale {scale}: {len(rows)} samples, {len(shared)} HITM lines, "
                  f"perf oracle {'ran' if perf_ran else 'absent'}")
        check_daemon(data, rows)
        check_pipe(tmp, 3, 2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
