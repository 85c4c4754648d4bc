# SPDX-License-Identifier: GPL-2.0-or-later
"""The generator's ground truth, read once for the replay and live tests: its facts, and
per cache line what armprofd's /hotlines must say of its records (ARCHITECTURE.md §5)."""


def read_facts(path):
    """KEY=VALUE lines of a PREFIX.truth.txt, comments skipped."""
    facts = {}
    with open(path) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.rstrip("\n").split("=", 1)
                facts[k] = v
    return facts


VA_MASK = (1 << 56) - 1
LINE = 64
LOCAL_PEER, REMOTE_PEER = {0x9, 0xA, 0xC}, {0xD}  # Neoverse data sources (TRMs, "Data source packet")
# Tables large enough that nothing is evicted: the counts are then exact. Their worst-case
# bound (every epoch full) is far above the default max_memory; one file fills a few epochs.
# kernel_addresses = yes: these tests compare every line, the kernel scenario's too, by its
# address (test-privacy.py checks what the default withholds).
# [store] last: tests append their own [store] keys.
CONFIG = "[privacy]\nkernel_addresses = yes\n[store]\nhotlines = 65536\nline_offsets = 64\nmax_memory = 64GiB\n"


def num(s):
    return int(s, 0)


def decoded(addr):
    """The address as perf and armprofd report it: tag byte dropped, kernel half sign-filled."""
    v = num(addr) & VA_MASK
    return v | (0xFF << 56) if (v >> 52) & 0xF == 0xF else v


def truth_lines(rows, key):
    """Per line: counts, per-(offset, pc) latency, and the class by the rule."""
    lines = {}
    for r in rows:
        if r["kind"] != "record" or r["op_class"] != "1" or not r[key]:
            continue
        addr = decoded(r[key]) if key == "va" else num(r[key])
        store = num(r["op_subclass"]) & 1 == 1
        l = lines.setdefault(addr & ~(LINE - 1), {"loads": 0, "stores": 0, "local": 0, "remote": 0,
                                                    "acc": [], "lat": {}, "records": {}})
        ds = num(r["data_source"]) if r["data_source"] else None
        if store:
            l["stores"] += 1
        else:
            l["loads"] += 1
            l["local"] += ds in LOCAL_PEER
            l["remote"] += ds in REMOTE_PEER
        off = addr & (LINE - 1)
        l["acc"].append((off, int(r["cpu"]), store))
        # Loads and stores per (offset, pc): the Pareto's rows.
        l["records"][(off, decoded_pc(r))] = l["records"].get((off, decoded_pc(r)), 0) + 1
        if r["tot_lat"]:
            s = l["lat"].setdefault((off, decoded_pc(r)), [0, 0])
            s[0] += num(r["tot_lat"])
            s[1] += 1
    for l in lines.values():
        l["class"] = rule(l)
    return lines


def decoded_pc(r):
    pc = num(r["pc"])
    return pc | (0xFF << 56) if r["ns"] == "1" and r["el"] in ("1", "2") else pc


def rule(l):
    """ARCHITECTURE.md §5 on the records themselves."""
    if l["stores"] == 0:
        return "read_only"
    if l["local"] + l["remote"] == 0:
        return "written"
    stores = {(off, cpu) for off, cpu, st in l["acc"] if st}
    touched = {(off, cpu) for off, cpu, _ in l["acc"]}
    false = any(o1 != o2 and c1 != c2 for o1, c1 in stores for o2, c2 in touched)
    true = any(o1 == o2 and c1 != c2 for o1, c1 in stores for o2, c2 in touched)
    return "false_sharing" if false else "true_sharing" if true else "written"


def check_lines(listed, truth, elf):
    """/hotlines entries equal the truth; elf None: objects not checked."""
    for l in listed:
        t = truth[int(l["address"], 16)]
        got = (l["loads"], l["stores"], l["peer_snoops"]["local"], l["peer_snoops"]["remote"])
        assert got == (t["loads"], t["stores"], t["local"], t["remote"]), (l["address"], got, t)
        assert l["class"] == t["class"], (l["address"], l["class"], t["class"], got)
        for o in l["offsets"]:
            s, n = t["lat"][(int(o["offset"], 16), int(o["pc"], 16))]
            assert o["latency_samples"] == n, (l["address"], o)
            assert abs(o["latency_mean_cycles"] - s / n) < 1e-6 * s / n, (l["address"], o, s / n)
            if elf is not None:
                want = "[kernel]" if int(o["pc"], 16) >> 56 == 0xFF else elf
                assert o.get("object") == want, (l["address"], o.get("object"), want)


def perf_names(rows, facts):
    """Per record, in CSV order, the (command, function) perf names it by.

    The command is that of the thread the last CONTEXT packet on the record's CPU named
    (perf's Arm SPE decoder keeps it for the records without one: tools/perf/util/arm-spe.c,
    arm_spe_set_tid()), as the file's COMM records name the thread (truth.txt thread.TID),
    None before any; the function is the generator's symbol holding the PC, "[kernel]" for
    a kernel PC, None outside every symbol."""
    comms = {int(k.split(".", 1)[1]): v.split(",")[0] for k, v in facts.items() if k.startswith("thread.")}
    symbols = []
    for k, v in facts.items():
        if k.startswith("symbol."):
            start, size = (num(x) for x in v.split(","))
            symbols.append((start, start + size, k.split(".", 1)[1]))
    order = sorted(range(len(rows)), key=lambda i: (int(rows[i]["cpu"] or 0), int(rows[i]["index"] or 0)))
    tid, names = {}, [None] * len(rows)
    for i in order:
        r = rows[i]
        if r["kind"] != "record":
            continue
        cpu = int(r["cpu"])
        if r["context"]:
            tid[cpu] = int(r["context"])
        pc = decoded_pc(r)
        if pc >> 56 == 0xFF:
            fn = "[kernel]"
        else:
            fn = next((name for lo, hi, name in symbols if lo <= pc < hi), None)
        names[i] = (comms.get(tid.get(cpu)), fn)
    return names
