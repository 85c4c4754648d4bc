#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`armprofd --replay-raw FILE --midr M --cpu N --once --records OUT` decodes raw SPE
buffers (no perf.data framing) through the daemon's decoder and store:
 - the two real WindowsPerf captures of $ARMPROFD_SHARED_DIR/testdata/spe give every
   field of the CSV that Arm's spe-parser wrote for them;
 - a generator stream of 100,000 records (its <prefix>.cpu0.bin) gives every field of
   the generator's truth, record by record, and the report's counts equal the truth.
The first part exits 77 when the shared directory is absent; the second always runs."""

import csv
import json
import os
import subprocess
import sys
import tempfile
from spegen_truth import read_facts

build = os.environ["ARMPROFD_BUILD_DIR"]
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
armprofd = os.path.join(build, "daemon", "armprofd")
shared = os.environ.get("ARMPROFD_SHARED_DIR", "")
MIDR_N1 = "0x410fd0c0"
ADDR_MASK = (1 << 56) - 1
skipped = None


def num(s):
    return int(s, 16) if s.startswith("0x") else int(s)


def raw_once(path, midr, cpu, tmp):
    records = os.path.join(tmp, "records.jsonl")
    r = subprocess.run([armprofd, "--replay-raw", path, "--midr", midr, "--cpu", str(cpu),
                        "--once", "--records", records], capture_output=True, text=True)
    rep = json.loads(r.stdout) if r.stdout.strip() else None
    with open(records) as f:
        recs = [json.loads(line) for line in f]
    return r.returncode, rep, recs, r.stderr


def check_capture(tmp, name):
    """Every column of spe-parser's CSV against the record armprofd wrote."""
    base = os.path.join(shared, "testdata", "spe", name)
    with open(base + ".csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rc, rep, recs, err = raw_once(base + ".data", MIDR_N1, 0, tmp)
    assert rc == 0, err
    assert rep["mode"] == "raw" and rep["complete"] and rep["warnings"] == [], rep
    assert rep["totals"]["records"] == len(rows) == len(recs), (rep["totals"], len(rows), len(recs))
    assert [c["records"] for c in rep["cpus"]] == [len(rows)]
    columns = None
    for row, rec in zip(rows, recs):
        got = {
            "cpu": str(rec["cpu"]),
            # spe-parser's op letters: B for branches (the only op in these captures)
            "op": {"branch": "B", "load": "LD", "store": "ST"}.get(rec["op"], rec["op"]),
            "pc": hex(int(rec["pc"], 16)),
            "el": str(rec["pc_el"]),
            "condition": "true" if rec["conditional"] else "false",
            "indirect": "true" if rec["indirect"] else "false",
            "event": " ".join(rec["event_names"]),
            "issue_lat": str(rec["issue_lat"]),
            "total_lat": str(rec["total_lat"]),
            "br_tgt": hex(int(rec["br_tgt"], 16)) if "br_tgt" in rec else "",
            "br_tgt_lvl": str(rec.get("br_tgt_el", 0)),
            "pbt": hex(int(rec["pbt"], 16)) if "pbt" in rec else "",
            "pbt_lvl": str(rec.get("pbt_el", 0)),
            "context": str(rec["context"]) if "context" in rec else "",
            # the oracle writes 0 when the record has no timestamp
            "ts": str(rec.get("ts", 0)),
        }
        assert set(got) == set(row), (sorted(got), sorted(row))
        for k, v in row.items():
            want = hex(num(v)) if k in ("pc", "br_tgt", "pbt") and v else v
            assert got[k] == want, (name, k, got[k], want)
        columns = len(row)
    # The same record reaches the store: the hot PC and the branch latency are its own.
    assert rep["hotpcs"]["pcs"][0]["pc"] == hex(num(rows[0]["pc"])), rep["hotpcs"]["pcs"][0]
    assert rep["totals"]["ops"]["branch"] == len(rows), rep["totals"]["ops"]
    print(f"{name}: {len(rows)} record, all {columns} CSV columns equal spe-parser's")


def expected(row):
    """A truth row as the decoder must give it (perf's address rules, arm-spe-decoder.c)."""
    def ip(addr, el, ns):
        a = num(addr)
        if ns == 1 and el in (1, 2):
            a |= 0xFF << 56
        return a

    el, ns = int(row["el"]), int(row["ns"])
    e = {"cpu": int(row["cpu"]), "pc": ip(row["pc"], el, ns), "pc_el": el, "pc_ns": ns}
    if row["tgt"]:
        e["br_tgt"] = ip(row["tgt"], el, ns)
    if row["va"]:
        v = num(row["va"]) & ADDR_MASK
        if (v >> 52) & 0xF == 0xF:
            v |= 0xFF << 56
        e["va"] = v
    if row["pa"]:
        e["pa"] = num(row["pa"])
    for k, j in (("tot_lat", "total_lat"), ("issue_lat", "issue_lat"), ("xlat_lat", "xlat_lat")):
        if row[k]:
            e[j] = num(row[k])
    if row["events"]:
        e["events"] = num(row["events"])
    e["op_class"] = int(row["op_class"])
    e["op_raw"] = num(row["op_subclass"])
    if row["data_source"]:
        e["data_source"] = num(row["data_source"])
    if row["context"]:
        e["context"] = int(row["context"])
    if row["timestamp"]:
        e["ts"] = num(row["timestamp"])
    return e


def got_fields(rec):
    g = {"cpu": rec["cpu"], "pc": int(rec["pc"], 16), "pc_el": rec["pc_el"], "pc_ns": rec["pc_ns"],
         "op_class": rec["op_class"], "op_raw": rec["op_raw"]}
    if "br_tgt" in rec:
        g["br_tgt"] = int(rec["br_tgt"], 16)
    for k in ("va", "pa", "events", "data_source"):
        if k in rec:
            g[k] = int(rec[k], 16)
    for k in ("total_lat", "issue_lat", "xlat_lat", "context", "ts"):
        if k in rec:
            g[k] = rec[k]
    return g


def check_generator(tmp):
    n = 100000
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "g", "--seed", "31", "--records", str(n), "--cpus", "1",
                    "--scenario", "all", "--ts", "--garbage", "0.002", "--no-perf-data"],
                   check=True, stdout=subprocess.DEVNULL)
    facts = read_facts(os.path.join(tmp, "g.truth.txt"))
    truth, garbage, ops = [], 0, {"load": 0, "store": 0, "branch": 0, "other": 0}
    with open(os.path.join(tmp, "g.truth.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["kind"] != "record":
                garbage += int(row["size"])
                continue
            truth.append(expected(row))
            cls = row["op_class"]
            ops["branch" if cls == "2" else "other" if cls != "1" else
                "store" if num(row["op_subclass"]) & 1 else "load"] += 1
    assert len(truth) == n and garbage > 0, (len(truth), garbage)

    rc, rep, recs, err = raw_once(os.path.join(tmp, "g.cpu0.bin"), facts["midr"], 0, tmp)
    assert rc == 0, err
    assert rep["mode"] == "raw" and rep["complete"] and rep["warnings"] == [], (rep["warnings"], err)
    assert len(recs) == n, len(recs)
    for i, (rec, want) in enumerate(zip(recs, truth)):
        got = got_fields(rec)
        if got != want:
            raise AssertionError(f"record {i}:\n got  {got}\n want {want}")
    t = rep["totals"]
    assert t["records"] == n and rep["cpus"][0]["records"] == n, (t["records"], rep["cpus"])
    assert t["ops"] == ops, (t["ops"], ops)
    assert rep["decode_errors"]["bad_header"] == garbage, (rep["decode_errors"], garbage)
    assert rep["cpus"][0]["midr"] == facts["midr"] and rep["cpus"][0]["bytes"] == int(facts["cpu0.bytes"])
    assert rep["hotpcs"]["pcs"][0]["pc"] == facts["hottest.pc"], (rep["hotpcs"]["pcs"][0], facts["hottest.pc"])
    print(f"generator raw stream: {n} records equal the truth field by field; "
          f"{garbage} garbage bytes = bad headers; op counts equal")


with tempfile.TemporaryDirectory(prefix="armprofd-raw-") as tmp:
    check_generator(tmp)

if not os.path.isdir(os.path.join(shared, "testdata", "spe")):
    print(f"SKIP: the real captures: {shared!r}/testdata/spe is absent (../shared beside the checkout)")
    sys.exit(77)
with tempfile.TemporaryDirectory(prefix="armprofd-raw-") as tmp:
    for name in ("spe-b1-ts0", "spe-b1-ts1"):
        check_capture(tmp, name)
