#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""/hotlines of a daemon replaying a generator file, against the rule of ARCHITECTURE.md §5
applied here to the generator's ground truth (the truth CSV, not armprofd's tables),
and against `perf c2c report` on the same file:

- every listed line (all=1) has the class the rule gives: false_sharing / true_sharing
  need a store by one CPU, an access by another (other / same offset) and peer snoops;
  written = stores without that; read_only = no store. Issue 11 item 7's two lines
  (0xffff8a004000: 1,470 stores, was read_only; 0xffff8a020180: 1 store and no peer
  snoop, was true_sharing) are checked by name;
- loads, stores and peer snoops per line, and the mean latency of each (offset, pc),
  equal the truth; each PC's object is the generator's ELF (user) or [kernel];
- under pid= and cgroup= the lines and their counts (lines_seen, lines_with_peer_snoops)
  are the filter's (the generator's one pid 4242 keeps all, pid 1 none; a replay's
  processes are in no cgroup of this host), the header's records and peer snoops stay
  the file's, and the answer and its text say so (filter, host_wide);
- by default only the lines with peer snoops are listed (item 8): the same set as
  perf c2c's Shared Data Cache Line Table, in its order; all=1 lists the others;
- with a table far smaller than the lines (evictions), every line's records <= its
  truth <= records_max, some exact and some not; without evictions all are exact;
- the same of each (offset, pc) entry of a line (the Pareto's rows) with two entries a
  line: loads + stores <= its truth <= its records_max, some exact and some not, where
  the line or the entry took an evicted one's place;
- with [privacy] physical_addresses the lines are keyed by PA and carry the NUMA
  node that the file's memory topology gives, as perf c2c's Node column does;
- each line in the generator's anonymous data mapping (truth.txt's data.base, map_len,
  map_name) says "memory": "anon", no other does, and no offset names a data symbol.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "tests", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon  # noqa: E402
from spegen_truth import CONFIG, check_lines, read_facts, truth_lines  # noqa: E402

build = os.environ["ARMPROFD_BUILD_DIR"]
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
os.environ.setdefault("ARMPROFD_BIN", os.path.join(build, "daemon", "armprofd"))
def c2c_table(data):
    """(line, node) rows of perf c2c's Shared Data Cache Line Table, in its order; None without perf."""
    perf = shutil.which("perf")
    if not perf:
        return None
    r = subprocess.run([perf, "c2c", "report", "--stdio", "-i", data], capture_output=True, text=True)
    if r.returncode != 0 or "Shared Data Cache Line Table" not in r.stdout:
        raise AssertionError(f"perf c2c report failed (rc {r.returncode}): {r.stderr[-300:]}")
    table = r.stdout.split("Shared Data Cache Line Table", 1)[1].split("Shared Cache Line Distribution Pareto")[0]
    return [(int(m.group(1), 16), m.group(2)) for m in
            re.finditer(r"^\s+\d+\s+(0x[0-9a-f]+)\s+(\S+)\s+\d+\s+[\d.]+%", table, re.M)]


def serve(data, config, want_records):
    d = Daemon(args=["--replay", data], config_text=config)
    d.wait_ready()
    deadline = time.monotonic() + 60
    while True:
        h = get(d, "/hotlines?window=all&all=1&limit=1")
        if h["records"] == want_records:
            return d
        assert time.monotonic() < deadline, (h["records"], want_records, d.log())
        time.sleep(0.1)


def get(d, path, want=200):
    status, _, body = d.get(path)
    assert status == want, (path, status, body[:300])
    return json.loads(body)


with tempfile.TemporaryDirectory(prefix="armprofd-hl-truth-") as tmp:
    # The command of issue 11.
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "t", "--scenario", "all", "--records", "50000", "--ts"],
                   check=True, stdout=subprocess.DEVNULL)
    data, elf = os.path.join(tmp, "t.data"), os.path.join(tmp, "t.elf")
    facts = read_facts(os.path.join(tmp, "t.truth.txt"))
    with open(os.path.join(tmp, "t.truth.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    truth = truth_lines(rows, "va")
    records = sum(t["loads"] + t["stores"] for t in truth.values())
    peer_lines = {a for a, t in truth.items() if t["local"] + t["remote"]}
    assert truth[0xffff8a004000]["class"] == "written" and truth[0xffff8a004000]["stores"] == 1470
    assert truth[0xffff8a020180]["class"] == "written" and truth[0xffff8a020180]["stores"] == 1

    with serve(data, CONFIG, records) as d:
        every = get(d, "/hotlines?window=all&all=1&limit=500")
        assert every["evictions"] == 0 and every["offset_evictions"] == 0, every
        assert every["lines_seen"] == len(truth), (every["lines_seen"], len(truth))
        assert every["lines_with_peer_snoops"] == len(peer_lines)
        listed = every["lines"]
        assert len(listed) == min(500, len(truth))
        check_lines(listed, truth, elf)
        assert all(l["records_max"] == l["records"] for l in listed), "no eviction, yet a line is not exact"
        # "memory": the kind of the data mapping truth.txt names (an anonymous one, data.map_name) for the lines
        # in it, none for the others (kernel lines, past its end); no variable is named in anonymous memory.
        base, end = int(facts["data.base"], 16), int(facts["data.base"], 16) + int(facts["data.map_len"], 16)
        assert facts["data.map_name"] == "//anon", facts["data.map_name"]
        for l in listed:
            a = int(l["address"], 16)
            assert l.get("memory") == ("anon" if base <= a < end else None), (l["address"], l.get("memory"))
            assert not any("data_symbol" in o for o in l["offsets"]), l
        print(f"memory: {sum(1 for l in listed if 'memory' in l)} lines in the anonymous data mapping say anon")
        assert all(o["records_max"] == o["loads"] + o["stores"] for l in listed for o in l["offsets"]), \
            "no eviction, yet an entry is not exact"
        by_addr = {int(l["address"], 16): l for l in listed}
        for addr in (0xffff8a004000, 0xffff8a020180):
            assert by_addr[addr]["class"] == "written", (hex(addr), by_addr[addr]["class"])
        classes = {}
        for l in listed:
            classes[l["class"]] = classes.get(l["class"], 0) + 1
        print(f"all=1: {len(listed)} of {len(truth)} lines, classes {classes} equal the rule on the truth; "
              f"0xffff8a004000 and 0xffff8a020180 are written")

        default = get(d, "/hotlines?window=all")
        got = [int(l["address"], 16) for l in default["lines"]]
        assert set(got) == peer_lines, ([hex(a) for a in got], [hex(a) for a in peer_lines])
        check_lines(default["lines"], truth, elf)
        table = c2c_table(data)
        if table is None:
            print(f"default: {len(got)} lines = the truth's peer-snoop lines (perf absent: c2c not compared)")
        else:
            assert [a for a, _ in table] == got, ([hex(a) for a, _ in table], [hex(a) for a in got])
            print(f"default: {[hex(a) for a in got]} = perf c2c's shared lines, in its order")
        assert all("node" not in l for l in default["lines"])  # VA keying: no PA, no node

        peers = sum(t["local"] + t["remote"] for t in truth.values())
        for q, kept in (("pid=4242", len(truth)), ("pid=1", 0), ("cgroup=/system.slice/", 0),
                        ("pid=4242&cgroup=/", 0)):
            f = get(d, f"/hotlines?window=all&all=1&limit=500&{q}")
            assert (f["lines_seen"], len(f["lines"])) == (kept, min(kept, 500)), (q, f["lines_seen"], kept)
            assert f["lines_with_peer_snoops"] == (len(peer_lines) if kept else 0), (q, f)
            assert f["records"] == records and f["peer_snoops"]["local"] + f["peer_snoops"]["remote"] == peers, q
            want = {k: v for k, v in (x.split("=") for x in q.split("&"))}
            assert {k: str(v) for k, v in f["filter"].items() if k != "host_wide"} == want, (q, f["filter"])
            assert f["filter"]["host_wide"] == ["records", "peer_snoops", "evictions", "offset_evictions"], f
            text = d.get(f"/hotlines?window=all&{q}&format=text")[2].decode()
            assert re.search(r"^# filter\s+: .*of every process: records, peer snoops", text, re.M), text[:600]
            p = get(d, f"/hotpcs?window=all&{q}")
            assert p["samples"] == int(facts["records"]) and p["filter"]["host_wide"][0] == "samples", (q, p)
        assert "filter" not in get(d, "/hotlines?window=all") and "filter" not in get(d, "/hotpcs?window=all")
        print("pid= and cgroup=: the lines and their counts are the filter's, records and peer snoops the file's, "
              "and the answer and its text say so")

        for path, word in (("/hotlines?all=2", "all"), ("/hotlines?all=", "all"), ("/hotpcs?all=1", "all"),
                           ("/latency?all=1", "all")):
            err = get(d, path, want=400)
            assert word in err["error"], (path, err)
        assert len(get(d, "/hotlines?window=all&all=0")["lines"]) == len(peer_lines)

    # A table far smaller than the file's lines: evicted lines come back with only what the table
    # saw since, and records_max bounds what it did not (hotlines.h): records <= truth <= records_max,
    # equal where the line was tracked from its first access.
    with serve(data, CONFIG.replace("hotlines = 65536", "hotlines = 16"), records) as d:
        small = get(d, "/hotlines?window=all&all=1&limit=500")
        assert small["evictions"] > 0, small["evictions"]
        exact = short = 0
        for l in small["lines"]:
            t = truth[int(l["address"], 16)]
            true = t["loads"] + t["stores"]
            assert l["records"] <= true <= l["records_max"], (l["address"], l["records"], true, l["records_max"])
            exact += l["records_max"] == l["records"]
            short += true > l["records"]
        # Both kinds, so the bound is tested where it is needed and where it must be tight.
        assert exact > 0 and short > 0, (exact, short, len(small["lines"]))
        print(f"16-line table, {small['evictions']} evictions: {len(small['lines'])} lines listed, "
              f"records <= truth <= records_max on each; {exact} exact, {short} short of the truth")

    # The entries of a line: two per line, in a 16-line table. An entry's records_max bounds what its line's
    # table and its own missed (hotlines.h); entries of one (offset, pc) under two pids or ELs are summed.
    with serve(data, CONFIG.replace("hotlines = 65536", "hotlines = 16").replace("line_offsets = 64",
                                                                                 "line_offsets = 2"), records) as d:
        small = get(d, "/hotlines?window=all&all=1&limit=500")
        assert small["evictions"] > 0 and small["offset_evictions"] > 0, small
        exact = short = 0
        for l in small["lines"]:
            t = truth[int(l["address"], 16)]
            got = {}
            for o in l["offsets"]:
                key = (int(o["offset"], 16), int(o["pc"], 16))
                lo, hi = got.get(key, (0, 0))
                got[key] = (lo + o["loads"] + o["stores"], hi + o["records_max"])
            for key, (lo, hi) in got.items():
                true = t["records"][key]
                assert lo <= true <= hi, (l["address"], key, lo, true, hi)
                exact += lo == hi
                short += true > lo
        assert exact > 0 and short > 0, (exact, short)
        print(f"16 lines of 2 entries, {small['offset_evictions']} entry evictions: loads + stores <= truth <= "
              f"records_max on each entry; {exact} exact, {short} short of the truth")

    # Lines by physical address: the node of each comes from the file's memory topology
    # (HEADER_MEM_TOPOLOGY), as perf c2c's Node column.
    truth_pa = truth_lines(rows, "pa")
    with serve(data, CONFIG + "[privacy]\nphysical_addresses = yes\n",
               sum(t["loads"] + t["stores"] for t in truth_pa.values())) as d:
        default = get(d, "/hotlines?window=all")
        assert {int(l["address"], 16) for l in default["lines"]} == \
            {a for a, t in truth_pa.items() if t["local"] + t["remote"]}
        check_lines(default["lines"], truth_pa, elf)
        nodes = {l["address"]: l.get("node") for l in default["lines"]}
        table = c2c_table(data)
        if table is not None:
            # c2c lists lines by VA; the generator maps VA 0xffff8a000000 + x to PA 0x40000000 + x.
            want = {hex(a - 0xffff8a000000 + 0x40000000): int(n) for a, n in table}
            assert nodes == want, (nodes, want)
            print(f"by PA: nodes {nodes} = perf c2c's Node column")
        else:
            assert all(n is not None for n in nodes.values()), nodes
            print(f"by PA: nodes {nodes} (perf absent: c2c not compared)")

        # The protobuf answer carries the same: a node on every line (0 included), an
        # object and a mean latency on every entry.
        protoc = shutil.which("protoc")
        if protoc:
            status, headers, body = d.get("/hotlines?window=all", headers={"Accept": "application/x-protobuf"})
            assert status == 200 and "HotLines" in headers["content-type"], (status, headers)
            text = subprocess.run([protoc, "--decode=armprofd.v1.HotLines",
                                   "--proto_path=" + os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "proto"),
                                   "armprofd.proto"], input=body, capture_output=True, check=True).stdout.decode()
            entries = sum(len(l["offsets"]) for l in default["lines"])
            assert text.count("\n  node {") == len(default["lines"]), text[:2000]
            assert text.count("object: ") == entries and text.count("latency_mean_cycles: ") == entries
            assert text.count("\n  records_max: ") == len(default["lines"]), text[:2000]
            print(f"protobuf: {len(default['lines'])} nodes and records_max, {entries} objects and mean latencies")
