#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A replay from a FIFO whose writer is slow never blocks the collector's loop.

The writer sends the first part of a generator's pipe-mode perf.data (stopping in the
middle of an AUXTRACE payload) and then nothing: meanwhile the daemon is READY, /healthz
and /metrics answer, /status says the replay is "running" and the counting cycle counter
advances. The rest follows in odd-sized pieces; once /status says "done", what the
daemon serves equals the --once report of the same file (computed by another process
from the whole file at once) and the generator's own record count."""

import json
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, binary, parse_prom_text  # noqa: E402

spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")
PERF_RECORD_AUXTRACE = 71  # perf's session.h, written out here (not the reader's constant)
# Bounds only: how long the test waits for something that must happen, never a measurement.
WAIT = 20.0


def cut_inside_payload(data):
    """An offset in the middle of the second AUXTRACE payload of a pipe-mode perf.data."""
    pos, seen = 16, 0  # the pipe header: magic, size
    while pos < len(data):
        typ, _misc, size = struct.unpack_from("<IHH", data, pos)
        payload = struct.unpack_from("<Q", data, pos + 8)[0] if typ == PERF_RECORD_AUXTRACE else 0
        if payload:
            seen += 1
            if seen == 2:
                return pos + size + payload // 2
        pos += size + payload
    raise AssertionError("fewer than two AUXTRACE payloads")


def open_writer(fifo):
    # O_NONBLOCK: ENXIO until the daemon opened the FIFO for reading; never blocks the test.
    deadline = time.monotonic() + WAIT
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return fd
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError("the daemon never opened the FIFO")
            time.sleep(0.02)


def status(d):
    st, _, body = d.get("/status")
    assert st == 200, (st, body)
    return json.loads(body)


with tempfile.TemporaryDirectory(prefix="armprofd-slowfifo-") as tmp:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "s", "--seed", "43", "--records", "30000", "--cpus", "2",
                    "--scenario", "all", "--pipe", "--chunk-size", "65536"], check=True, stdout=subprocess.DEVNULL)
    path = os.path.join(tmp, "s.data")
    facts = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(tmp, "s.truth.txt"))
                 if "=" in l and l[0] != "#")
    data = open(path, "rb").read()
    cut = cut_inside_payload(data)

    once = subprocess.run([binary(), "--replay", path, "--once"], capture_output=True, text=True, check=True,
                          stdin=subprocess.DEVNULL)
    rep = json.loads(once.stdout)
    assert rep["totals"]["records"] == int(facts["records"]), (rep["totals"]["records"], facts["records"])

    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    with Daemon(args=["--replay", fifo], config_text="[pmu]\ninterval = 200ms\n[store]\nepoch = 60s\n") as d:
        w = open_writer(fifo)
        os.write(w, data[:cut])
        # The input stops inside a payload: READY all the same, and the loop runs.
        d.wait_serving(timeout=WAIT)
        st = d.spe_status()
        assert st["state"] in ("starting", "running") and st["up"] and st["source"] == "replay", st
        c0 = status(d)["collector_cycles"]
        deadline = time.monotonic() + WAIT
        while status(d)["collector_cycles"] < c0 + 2:
            assert time.monotonic() < deadline, f"the cycle counter stayed at {c0} while the FIFO was silent"
            time.sleep(0.05)
        assert d.get("/healthz")[0] == 200
        code, _, body = d.get("/metrics")
        assert code == 200, code
        m = parse_prom_text(body.decode())
        assert m[("armprofd_collector_up", frozenset({("collector", "spe")}))] == 1, m
        # Two cycles later the view holds what the loop read: the first part, and no end.
        assert d.spe_status()["state"] == "running", d.spe_status()
        c1 = status(d)["collector_cycles"]
        print(f"FIFO silent mid-payload at byte {cut} of {len(data)}: serving, cycles {c0} -> {c1}, replay running")

        # The rest in odd pieces with pauses between them: the loop keeps cycling meanwhile.
        pos, piece = cut, 4099
        while pos < len(data):
            os.write(w, data[pos:pos + piece])
            pos += piece
            assert d.get("/healthz")[0] == 200
        os.close(w)
        st = d.wait_replay_done(timeout=WAIT)
        assert st["warnings"] == [], st

        # The daemon's answer equals the --once report of the same file.
        hp = json.loads(d.get("/hotpcs?window=all&limit=50")[2])
        assert hp["samples"] == rep["totals"]["records"], (hp["samples"], rep["totals"]["records"])
        # Both withhold kernel PCs alike ([privacy] kernel_addresses = no): one [kernel] entry, no pc.
        assert [(p.get("pc", p.get("region")), p["samples"]) for p in hp["pcs"]] == \
            [(p.get("pc", p.get("region")), p["samples"]) for p in rep["hotpcs"]["pcs"]], \
            (hp["pcs"][:3], rep["hotpcs"]["pcs"][:3])
        hl = json.loads(d.get("/hotlines?window=all&limit=20&all=1")[2])
        assert hl["lines"] == rep["hotlines"]["lines"], ([x.get("address") for x in hl["lines"]],
                                                         [x.get("address") for x in rep["hotlines"]["lines"]])
        lat = json.loads(d.get("/latency?window=all")[2])
        assert lat["latency_cycles"] == rep["latency"]["latency_cycles"]
        assert status(d)["collector_cycles"] > c1
        assert d.stop()[0] == 0
    print(f"then {len(data) - cut} bytes in pieces of {piece}: {hp['samples']} samples, hot PCs, hot lines and "
          f"latency equal to --once")
