#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Times and reals in every JSON answer, for a person and for a machine.

- A live daemon: every endpoint's interval is Unix time (RFC 3339 and milliseconds) within a
  minute of this machine's clock, says the window asked and its own length; /status says when
  the daemon started; no real anywhere has more than 10 significant digits.
- /debug/pprof/profile?seconds=N covers the N seconds after the request: its time_nanos is at
  most one epoch before the request, its span reaches N seconds after it.
- A replay server keeps the file: after its clock has run past the whole ring ([store] epoch=1s,
  epochs=3, 5 s later) every endpoint still answers every record of the generator's truth, over
  the file's own time span (perf time: the generator writes no clock data).
- The --once report: the same rules, the file's time span.
"""

import calendar
import csv
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import shutil
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, binary, read_varint  # noqa: E402

spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")
MAX_DIGITS = 10
EPOCH_S = 1


def significant_digits(literal):
    mantissa = re.split(r"[eE]", literal.lstrip("-"))[0].replace(".", "")
    return len(mantissa.strip("0")) or 1


def parse(text, where):
    """JSON with every real literal checked for its number of significant digits."""
    def real(s):
        assert significant_digits(s) <= MAX_DIGITS, (where, s)
        return float(s)
    return json.loads(text, parse_float=real)


def rfc3339_ms(s):
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z", s)
    assert m, s
    y, mo, d, h, mi, sec, ms = map(int, m.groups())
    return calendar.timegm((y, mo, d, h, mi, sec)) * 1000 + ms


def check_unix_interval(iv, where, window_s):
    now_ms = time.time() * 1000
    assert iv["clock"] == "unix" and iv["epochs"] >= 1, (where, iv)
    assert rfc3339_ms(iv["start"]) == iv["start_unix_ms"] and rfc3339_ms(iv["end"]) == iv["end_unix_ms"], (where, iv)
    for k in ("start_unix_ms", "end_unix_ms"):
        assert abs(iv[k] - now_ms) < 60_000, (where, k, iv[k], now_ms)
    # Each of the three is the exact figure rounded to the millisecond: the two spans differ by
    # less than 1.5 ms, at most 1 once "seconds" is back in whole milliseconds (2.007 * 1000 is
    # 2007.0000000000002 in binary: compared raw, a 1 ms difference failed).
    assert abs((iv["end_unix_ms"] - iv["start_unix_ms"]) - round(iv["seconds"] * 1000)) <= 1, (where, iv)
    if window_s is None:
        assert "window_seconds" not in iv, (where, iv)
    else:
        assert iv["window_seconds"] == window_s, (where, iv)


def pprof_times(gz):
    """time_nanos (9) and duration_nanos (10) of a gzip'd profile.proto: top-level varints."""
    b, i, out = gzip.decompress(gz), 0, {}

    while i < len(b):
        key, i = read_varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            out[field], i = read_varint(b, i)
        elif wire == 2:
            n, i = read_varint(b, i)
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise AssertionError(f"wire type {wire}")
    return out.get(9, 0), out.get(10, 0)


tmp = tempfile.mkdtemp(prefix="armprofd-times-")
try:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "t", "--seed", "5", "--records", "20000", "--cpus", "4",
                    "--scenario", "all", "--ts"], check=True, stdout=subprocess.DEVNULL)
    facts = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(tmp, "t.truth.txt"))
                 if "=" in l and l[0] != "#")
    rows = [r for r in csv.DictReader(open(os.path.join(tmp, "t.truth.csv"), newline="")) if r["kind"] == "record"]
    stamps = [int(r["timestamp"]) for r in rows]
    n_records = len(rows)
    loads_with_lat = sum(1 for r in rows if r["op_class"] == "1" and not int(r["op_subclass"], 16) & 1
                         and r["tot_lat"])
    assert n_records == int(facts["records"]) and len(stamps) == n_records

    config = f"[store]\nepoch = {EPOCH_S}s\nepochs = 3\n[pmu]\ninterval = 200ms\n"

    # ---- a live daemon ----
    with Daemon(config_text=config) as d:
        d.wait_ready()
        # Wait (not a timed assertion) until three epochs have closed.
        deadline = time.monotonic() + 30
        while parse(d.get("/hotpcs?window=all")[2], "/hotpcs")["interval"]["epochs"] < 3:
            assert time.monotonic() < deadline, d.log()
            time.sleep(0.2)

        st = parse(d.get("/status")[2], "/status")
        assert abs(rfc3339_ms(st["started"]) / 1000 - time.time()) < 60, st["started"]
        assert st["started_at"] == rfc3339_ms(st["started"]) // 1000, st
        # The fixed offset, against this machine's clocks (time.monotonic_ns is CLOCK_MONOTONIC).
        assert st["clock"]["kind"] == "unix" and not st["clock"]["frozen"], st["clock"]
        assert abs(st["clock"]["offset_ns"] - (time.time_ns() - time.monotonic_ns())) < 50_000_000, st["clock"]
        status, _, body = d.get("/counters")
        assert status in (200, 503), status
        parse(body, "/counters")
        for path, window in (("/hotpcs", 60), ("/hotlines?window=2s", 2), ("/latency?window=all", None),
                             ("/hotpcs?window=1m", 60)):
            o = parse(d.get(path)[2], path)
            check_unix_interval(o["interval"], path, window)
        print(f"live: /status started {st['started']}; intervals e.g. {o['interval']}")

        # /debug/pprof/profile?seconds=2: the two seconds after the request, in whole epochs.
        t_req = time.time()
        status, _, gz = d.request("GET", "/debug/pprof/profile?seconds=2", timeout=30)
        assert status == 200, status
        t_ns, dur_ns = pprof_times(gz)
        slack_ns = 50_000_000  # the daemon's fixed Unix offset against this clock
        req_ns = int(t_req * 1e9)
        print(f"profile: asked at {req_ns}, covers {t_ns} + {dur_ns / 1e9:.3f} s")
        assert req_ns - EPOCH_S * 10**9 - slack_ns <= t_ns <= req_ns + slack_ns, (req_ns, t_ns)
        assert t_ns + dur_ns >= req_ns + 2 * 10**9 - slack_ns, (req_ns, t_ns, dur_ns)
        assert dur_ns <= (2 + 2 * EPOCH_S) * 10**9 + slack_ns, dur_ns

    # ---- a replay server, queried after its clock has run past the ring ----
    with Daemon(args=["--replay", os.path.join(tmp, "t.data")], config_text=config) as d:
        d.wait_ready()
        time.sleep(5 * EPOCH_S)
        for path in ("/hotpcs", "/hotpcs?window=all", "/hotpcs?window=10s"):
            hp = parse(d.get(path)[2], path)
            assert hp["samples"] == n_records, (path, hp["samples"], n_records)
            iv = hp["interval"]
            assert iv["clock"] == "perf" and iv["start_perf_ns"] == min(stamps), (path, iv, min(stamps))
            assert iv["end_perf_ns"] == max(stamps) + 1, (path, iv, max(stamps))
        clock = parse(d.get("/status")[2], "/status")["clock"]
        assert clock["kind"] == "perf" and clock["frozen"], clock
        hl = parse(d.get("/hotlines")[2], "/hotlines")
        assert hl["records"] > 0 and hl["lines"][0]["address"] == facts["false_sharing.line"], hl["records"]
        lat = parse(d.get("/latency")[2], "/latency")
        assert lat["latency_cycles"]["total"]["by_op"]["load"]["count"] == loads_with_lat
        print(f"replay server after {5 * EPOCH_S} s: {hp['samples']} samples of {n_records}, "
              f"interval {iv}")

    # ---- --once ----
    r = subprocess.run([binary(), "--replay", os.path.join(tmp, "t.data"), "--once"], capture_output=True,
                       text=True, check=True)
    rep = parse(r.stdout, "--once")
    assert rep["totals"]["records"] == n_records
    for part in ("hotpcs", "hotlines", "latency"):
        iv = rep[part]["interval"]
        assert iv["clock"] == "perf" and iv["epochs"] == 1, (part, iv)
        assert (iv["start_perf_ns"], iv["end_perf_ns"]) == (min(stamps), max(stamps) + 1), (part, iv)
    print(f"--once: interval {iv}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
