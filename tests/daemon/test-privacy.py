#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""[privacy] kernel_addresses and data_addresses (issue 17) on a daemon replaying a generator
file whose `kernel` scenario has EL1 PCs (0xffff800008010000...) and kernel data addresses
(0xffff000012340000...), against the generator's truth (its CSV and truth.txt, not armprofd's
tables):

- default: no kernel address, in hex or decimal, in any answer: /hotpcs, /hotlines, /latency
  (JSON, and protobuf decoded by protoc), /debug/pprof/spe and /debug/pprof/profile (decoded by
  our wire reader and by protoc). Kernel PCs are one row per process and EL with region
  "[kernel]" whose samples sum to the truth's kernel records; kernel lines are rows with region "[kernel]" whose counts are
  the truth's kernel lines'; the profile has one [kernel] location at address 0;
- kernel_addresses = yes: the truth's kernel PCs and lines are there by address, and the
  profile's locations carry them;
- data_addresses = no: no line has an address; each user line's region is the truth's
  "[anon]+0xOFFSET" (its VA minus the data mapping's start, data.base in truth.txt, the
  mapping's offset column being 0), with the truth's counts; the kernel lines are [kernel].
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import csv

SRC = os.environ["ARMPROFD_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon  # noqa: E402
from pushstore import Profile  # noqa: E402
from spegen_truth import decoded, decoded_pc, num, read_facts, truth_lines  # noqa: E402

build = os.environ["ARMPROFD_BUILD_DIR"]
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
os.environ.setdefault("ARMPROFD_BIN", os.path.join(build, "daemon", "armprofd"))
protoc = shutil.which("protoc")
PROTO = os.path.join(SRC, "proto")

# Large tables (nothing evicted: counts exact), and no kernel_addresses: spegen_truth.CONFIG sets it.
STORE = "[store]\nhotlines = 65536\nline_offsets = 64\nmax_memory = 64GiB\n"
KERNEL_TOP = 0xFF
# A kernel address in hex (16 digits, top byte 0xff), or in decimal: unsigned (>= 0xff00...) or as a
# signed 64-bit number (-2^56..-1; below -2^32 so that small negatives are not taken for one).
HEX_RE = re.compile(r"0x0*(ff[0-9a-f]{14})\b", re.I)
DEC_RE = re.compile(r"(?<![0-9A-Za-z_.])-?\d{10,20}(?![0-9])")


def kernel_leaks(text):
    found = [m.group(0) for m in HEX_RE.finditer(text)]
    for m in DEC_RE.finditer(text):
        v = int(m.group(0))
        if v >= KERNEL_TOP << 56 or -(1 << 56) <= v < -(1 << 32):
            found.append(m.group(0))
    return found


def get(d, path, want=200, headers=None):
    status, hdrs, body = d.get(path, headers=headers)
    assert status == want, (path, status, body[:300])
    return hdrs, body


def get_json(d, path):
    return json.loads(get(d, path)[1])


def serve(data, config, want_records):
    d = Daemon(args=["--replay", data], config_text=config)
    try:
        # Generous: the whole suite runs beside it on two CPUs.
        d.wait_ready(timeout=30)
        deadline = time.monotonic() + 60
        while True:
            h = get_json(d, "/hotlines?window=all&all=1&limit=1")
            if h["records"] == want_records:
                return d
            assert time.monotonic() < deadline, (h["records"], want_records, d.log())
            time.sleep(0.1)
    except BaseException:
        d.close()  # no daemon left behind by a failure
        raise


JSON_PATHS = {"/hotpcs?window=all&limit=1000": "HotPcs", "/hotlines?window=all&all=1&limit=500": "HotLines",
              "/latency?window=all": "Latency"}


def every_answer(d):
    """{name: text} of every endpoint that carries SPE data: JSON, protobuf as protoc prints it, pprof."""
    out = {}
    for path, msg in JSON_PATHS.items():
        out[path] = get(d, path)[1].decode()
        if protoc:
            hdrs, body = get(d, path, headers={"Accept": "application/x-protobuf"})
            assert msg in hdrs["content-type"], (path, hdrs)
            out[path + " (protobuf)"] = subprocess.run(
                [protoc, f"--decode=armprofd.v1.{msg}", f"--proto_path={PROTO}", "armprofd.proto"],
                input=body, capture_output=True, check=True).stdout.decode()
    for path in ("/debug/pprof/spe?window=all", "/debug/pprof/profile?seconds=1"):
        raw = get(d, path)[1]
        p = Profile(raw)
        out[path] = p
        # Every number of the profile as our wire reader sees it: locations, mappings, strings.
        out[path + " (locations)"] = "\n".join(f"{a} {m} {n}" for a, m, n in p.locations.values()) + \
            "\n" + "\n".join(p.strings)
        if protoc:
            out[path + " (protobuf)"] = subprocess.run(
                [protoc, "--decode=perftools.profiles.Profile", f"--proto_path={PROTO}", "profile.proto"],
                input=p.data, capture_output=True, check=True).stdout.decode()
    return out


with tempfile.TemporaryDirectory(prefix="armprofd-privacy-") as tmp:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "p", "--seed", "17", "--records", "30000",
                    "--scenario", "false-sharing,true-sharing,read-only,padded,branches,kernel", "--ts"],
                   check=True, stdout=subprocess.DEVNULL)
    data = os.path.join(tmp, "p.data")
    facts = read_facts(os.path.join(tmp, "p.truth.txt"))
    with open(os.path.join(tmp, "p.truth.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "record"]
    truth = truth_lines(rows, "va")
    records = sum(t["loads"] + t["stores"] for t in truth.values())
    kernel_lines = {a: t for a, t in truth.items() if a >> 56 == KERNEL_TOP}
    user_lines = {a: t for a, t in truth.items() if a >> 56 != KERNEL_TOP}
    pc_rows = [r for r in rows if r["pc"]]
    kernel_pcs = {decoded_pc(r) for r in pc_rows if decoded_pc(r) >> 56 == KERNEL_TOP or r["el"] in ("1", "2")}
    kernel_samples = sum(1 for r in pc_rows if decoded_pc(r) in kernel_pcs)
    assert kernel_lines and user_lines and kernel_pcs and kernel_samples, "the generator made no kernel data"
    assert all(pc >> 56 == KERNEL_TOP for pc in kernel_pcs), [hex(p) for p in kernel_pcs]
    counts = lambda l: (l["loads"], l["stores"], l["peer_snoops"]["local"], l["peer_snoops"]["remote"])  # noqa
    tcounts = lambda t: (t["loads"], t["stores"], t["local"], t["remote"])  # noqa: E731

    # --- default: kernel addresses withheld everywhere ---
    with serve(data, STORE, records) as d:
        answers = every_answer(d)
        for name, text in answers.items():
            if isinstance(text, str):
                leaks = kernel_leaks(text)
                assert not leaks, (name, leaks[:5])
        pcs = json.loads(answers["/hotpcs?window=all&limit=1000"])["pcs"]
        kpcs = [p for p in pcs if p.get("region") == "[kernel]"]
        assert all("pc" not in p and p["symbol"] == "[kernel]" for p in kpcs), kpcs[:3]
        assert sum(p["samples"] for p in kpcs) == kernel_samples, (sum(p["samples"] for p in kpcs), kernel_samples)
        # One [kernel] entry per command and EL (here one command a process), as the CPU profile's one [kernel] frame.
        kernel_ctx = {(int(r["pid"]), int(r["el"])) for r in pc_rows if decoded_pc(r) in kernel_pcs}
        assert sorted((p["pid"], p["el"]) for p in kpcs) == sorted(kernel_ctx), (kpcs, kernel_ctx)
        assert all(int(p["pc"], 16) >> 56 != KERNEL_TOP for p in pcs if "pc" in p)
        lines = json.loads(answers["/hotlines?window=all&all=1&limit=500"])["lines"]
        klines = [l for l in lines if l.get("region") == "[kernel]"]
        assert all("address" not in l and "va" not in l for l in klines), klines[:2]
        assert sorted(counts(l) for l in klines) == sorted(tcounts(t) for t in kernel_lines.values())
        assert {int(l["address"], 16) for l in lines if "address" in l} == set(user_lines)
        for l in lines:
            for o in l["offsets"]:
                assert ("pc" in o) != (o.get("region") == "[kernel]"), o
        for path in ("/debug/pprof/spe?window=all", "/debug/pprof/profile?seconds=1"):
            p = answers[path]
            klocs = [(a, m) for a, m, n in p.locations.values() if "[kernel]" in n]
            assert klocs == [(0, 0)], (path, klocs)
            assert all(a >> 56 != KERNEL_TOP for a, _, _ in p.locations.values()), path
        print(f"default: {len(answers)} answers without a kernel address; {len(kpcs)} [kernel] PC rows with the "
              f"truth's {kernel_samples} samples, {len(klines)} [kernel] lines with the truth's counts; "
              f"one [kernel] pprof location at 0" + ("" if protoc else " (protoc absent: protobuf not checked)"))
        status = get_json(d, "/status")["config"]["privacy"]
        assert status == {"physical_addresses": False, "kernel_addresses": False, "data_addresses": True}, status

    # --- kernel_addresses = yes: as before ---
    with serve(data, STORE + "[privacy]\nkernel_addresses = yes\n", records) as d:
        answers = every_answer(d)
        pcs = json.loads(answers["/hotpcs?window=all&limit=1000"])["pcs"]
        got = {int(p["pc"], 16) for p in pcs if int(p["pc"], 16) >> 56 == KERNEL_TOP}
        assert got == kernel_pcs, ([hex(a) for a in got], [hex(a) for a in kernel_pcs])
        assert not any("region" in p for p in pcs)
        lines = json.loads(answers["/hotlines?window=all&all=1&limit=500"])["lines"]
        assert {int(l["address"], 16) for l in lines} == set(truth)
        assert any(kernel_leaks(t) for n, t in answers.items() if n.startswith("/hotlines") and isinstance(t, str))
        if protoc:
            assert kernel_leaks(answers["/hotpcs?window=all&limit=1000 (protobuf)"])
        for path in ("/debug/pprof/spe?window=all", "/debug/pprof/profile?seconds=1"):
            locs = {a for a, _, _ in answers[path].locations.values()}
            assert kernel_pcs <= locs, (path, [hex(a) for a in kernel_pcs - locs])
        print(f"kernel_addresses = yes: the truth's {len(kernel_pcs)} kernel PCs and {len(kernel_lines)} kernel "
              f"lines are served by address, in JSON, protobuf and pprof")
        assert get_json(d, "/status")["config"]["privacy"]["kernel_addresses"] is True

    # --- data_addresses = no: lines as offsets in their mapping ---
    base, length = num(facts["data.base"]), num(facts["data.map_len"])
    assert facts["data.map_name"] == "//anon" and num(facts["data.map_pgoff"]) == 0
    want = {}
    for a, t in user_lines.items():
        assert base <= a < base + length, hex(a)
        want[f"[anon]+{a - base:#x}"] = tcounts(t)
    with serve(data, STORE + "[privacy]\ndata_addresses = no\n", records) as d:
        body = get(d, "/hotlines?window=all&all=1&limit=500")[1].decode()
        lines = json.loads(body)["lines"]
        assert all("address" not in l and "va" not in l for l in lines), [l for l in lines if "address" in l][:2]
        got = {l["region"]: counts(l) for l in lines if l["region"] != "[kernel]"}
        assert got == want, (sorted(set(got) ^ set(want))[:10])
        assert sorted(counts(l) for l in lines if l["region"] == "[kernel]") == \
            sorted(tcounts(t) for t in kernel_lines.values())
        # No data VA in any form: the mapping's addresses are 0xffff8a000000..0xffff8dffffff.
        assert not re.search(r"0x0*ffff8[a-d][0-9a-f]{6}\b", body), "a data VA in /hotlines"
        assert not kernel_leaks(body)
        if protoc:
            _, pb = get(d, "/hotlines?window=all&all=1&limit=500", headers={"Accept": "application/x-protobuf"})
            text = subprocess.run([protoc, "--decode=armprofd.v1.HotLines", f"--proto_path={PROTO}",
                                   "armprofd.proto"], input=pb, capture_output=True, check=True).stdout.decode()
            assert not re.search(r"^\s*(address|va):", text, re.M), text[:500]
            regions = re.findall(r'^\s*region: "([^"]*)"', text, re.M)
            assert sorted(r for r in regions if r != "[kernel]") == sorted(want), regions[:5]
        print(f"data_addresses = no: {len(want)} user lines served as [anon]+OFFSET, each the truth's "
              f"(VA - data.base) with the truth's counts; no data VA in JSON or protobuf")
        assert get_json(d, "/status")["config"]["privacy"]["data_addresses"] is False
