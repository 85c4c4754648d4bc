#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What --replay does with inputs that are not a clean perf.data, in --once and server mode:
 - a directory, a device, a missing file, random bytes: exit 1 with a message that says
   what the input is, in server mode too (inputs that cannot be opened before serving;
   an input that fails while read ends a daemon that already served, with the same error);
 - stdin and a FIFO: read in server mode; SIGTERM ends a daemon whose FIFO has no writer
   yet, or a writer that sends nothing;
 - AUXTRACE payloads whose cpu field no queue takes: counted, reported, not complete, exit 1;
 - a perf.data with no SPE data, or whose AUX payloads are garbage: a warning on stderr,
   in the report and in /status.
Each expectation is computed here from the generator's truth or from the bytes this test
wrote, not from armprofd's own output."""

import json
import os
import random
import shlex
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, binary  # noqa: E402

spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")
# perf_event.h / perf's session.h record types, written out here (not the reader's constants).
PERF_RECORD_AUXTRACE_INFO = 70
PERF_RECORD_AUXTRACE = 71
AUXTRACE_BODY = struct.Struct("<QQQIIII")  # size, offset, reference, idx, tid, cpu, reserved
# A daemon that ignores SIGTERM never exits: this only bounds how long the test waits.
EXIT_WAIT = 10.0


def generate(tmp, prefix, *args):
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", prefix, "--scenario", "all", *args], check=True,
                   stdout=subprocess.DEVNULL)
    facts = {}
    with open(os.path.join(tmp, prefix + ".truth.txt")) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.rstrip("\n").split("=", 1)
                facts[k] = v
    return os.path.join(tmp, prefix + ".data"), facts


def records(data, pipe):
    """(offset, type, size) of each record of the data section, AUXTRACE payloads skipped."""
    if pipe:
        pos, end = 16, len(data)  # pipe header: magic, size (16)
    else:
        off, size = struct.unpack_from("<QQ", data, 40)  # perf_file_header.data
        pos, end = off, off + size
    while pos < end:
        typ, _misc, size = struct.unpack_from("<IHH", data, pos)
        assert size >= 8, (pos, size)
        payload = AUXTRACE_BODY.unpack_from(data, pos + 8)[0] if typ == PERF_RECORD_AUXTRACE else 0
        yield pos, typ, size, payload
        pos += size + payload


def once(path, *extra):
    r = subprocess.run([binary(), "--replay", path, "--once", *extra], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None), r.stderr


def server_fails(args, want):
    """The daemon must exit 1 by itself with `want` on stderr as its last word."""
    with Daemon(args=args) as d:
        try:
            rc = d.proc.wait(EXIT_WAIT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{args}: still running {EXIT_WAIT}s later; log:\n{d.log()}")
        d._reader.join(timeout=2)
        assert rc == 1, (args, rc, d.log())
        assert want in d.log(), (args, want, d.log())
        assert want in d.log().splitlines()[-1], d.log()
        return d.log().splitlines()[-1]


def spe_status(d):
    return d.spe_status()


def samples(d):
    st, _, body = d.get("/hotpcs?window=all")
    assert st == 200, body
    return json.loads(body)["samples"]


with tempfile.TemporaryDirectory(prefix="armprofd-input-") as tmp:
    good, facts = generate(tmp, "g", "--seed", "41", "--records", "20000", "--cpus", "2")
    pipe, pfacts = generate(tmp, "p", "--seed", "42", "--records", "10000", "--cpus", "2", "--pipe")

    # --- A and C: inputs that cannot be a replay --------------------------------------
    rnd = os.path.join(tmp, "random.data")
    with open(rnd, "wb") as f:
        f.write(random.Random(7).randbytes(100000))
    bad = [(os.path.join(tmp, "absent.data"), "No such file or directory"),
           (tmp, "is a directory"),
           ("/dev/null", "is a character device"),
           (rnd, "not a perf.data")]
    for path, want in bad:
        rc, _, err = once(path)
        assert rc == 1 and want in err, (path, rc, err)
        last = server_fails(["--replay", path], want)
        print(f"{path}: --once and server mode exit 1: {last}")
    r = subprocess.run([binary(), "--replay-raw", tmp, "--midr", "0x410fd0c0", "--once"], capture_output=True,
                       text=True)
    assert r.returncode == 1 and "is a directory; --replay-raw reads a raw SPE buffer" in r.stderr, r.stderr

    # A clean file: no warning anywhere.
    rc, rep, err = once(good)
    assert rc == 0 and rep["complete"] and rep["warnings"] == [], (rc, rep and rep["warnings"], err)
    assert "warning" not in err.lower() and "no SPE data" not in err, err

    # --- C: stdin and a FIFO in server mode ----------------------------------------
    pipe_records = int(pfacts["records"])
    with Daemon(args=["--replay", "-"], cmd_prefix=("sh", "-c", f'exec "$@" < {shlex.quote(pipe)}', "sh")) as d:
        d.wait_ready(timeout=30)
        assert samples(d) == pipe_records, (samples(d), pipe_records)
        st = spe_status(d)
        assert st["source"] == "replay" and st["warnings"] == [], st
        assert d.stop()[0] == 0
    print(f"server mode, --replay - (stdin): {pipe_records} records served")

    # B in server mode: one CPU's raw SPE bytes through the same store.
    raw = os.path.join(tmp, "g.cpu1.bin")
    with Daemon(args=["--replay-raw", raw, "--midr", facts["midr"], "--cpu", "1"]) as d:
        d.wait_ready(timeout=30)
        assert samples(d) == int(facts["cpu1.records"]), (samples(d), facts["cpu1.records"])
        assert spe_status(d)["source"] == "replay"
        assert d.stop()[0] == 0
    print(f"server mode, --replay-raw: the {facts['cpu1.records']} records of CPU 1 served")

    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)

    def open_writer():
        # O_NONBLOCK: ENXIO until the daemon opened the FIFO for reading; never blocks the test.
        deadline = time.monotonic() + EXIT_WAIT
        while True:
            try:
                return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the daemon never opened the FIFO")
                time.sleep(0.02)

    with Daemon(args=["--replay", fifo]) as d:
        w = open_writer()
        os.set_blocking(w, True)
        with open(pipe, "rb") as f:
            os.write(w, f.read())
        os.close(w)
        d.wait_ready(timeout=30)
        assert samples(d) == pipe_records, (samples(d), pipe_records)
        assert d.stop()[0] == 0
    print(f"server mode, --replay FIFO: {pipe_records} records served")

    # --- D: SIGTERM while the replay waits on a FIFO ---------------------------------
    for writer in (False, True):
        with Daemon(args=["--replay", fifo, "--log-level", "debug"]) as d:
            d.wait_log(r"store: at most")
            w = None
            if writer:
                w = open_writer()
                os.write(w, b"PERFILE2")  # half a pipe header, then nothing
            else:
                time.sleep(0.5)  # let it reach the wait for a writer
            # READY came before the input: the daemon serves, the replay is up and not done.
            d.wait_serving(timeout=EXIT_WAIT)
            st = spe_status(d)
            assert st["state"] in ("starting", "running") and st["up"] and st["source"] == "replay", st
            rc, secs = d.stop(timeout=EXIT_WAIT)
            if w is not None:
                os.close(w)
            assert rc == 0, (rc, d.log())
            assert "SPE records from" not in d.log(), d.log()
            print(f"SIGTERM while the FIFO has {'a silent writer' if writer else 'no writer'}: "
                  f"exit {rc} after {secs:.3f} s")

    # --- E: AUXTRACE payloads whose cpu field no queue takes -------------------------
    data = bytearray(open(good, "rb").read())
    dropped = dropped_bytes = 0
    for pos, typ, size, payload in records(data, pipe=False):
        if typ == PERF_RECORD_AUXTRACE:
            body = list(AUXTRACE_BODY.unpack_from(data, pos + 8))
            if body[5] == 1:
                body[5] = 5000
                AUXTRACE_BODY.pack_into(data, pos + 8, *body)
                dropped += 1
                dropped_bytes += payload
    assert dropped > 0
    bigcpu = os.path.join(tmp, "bigcpu.data")
    with open(bigcpu, "wb") as f:
        f.write(data)
    rc, rep, err = once(bigcpu)
    assert rc == 1, (rc, err)
    assert rep["complete"] is False, rep["complete"]
    assert rep["dropped_input"] == {"aux_payloads": dropped, "bytes": dropped_bytes}, (rep["dropped_input"],
                                                                                        dropped, dropped_bytes)
    assert rep["totals"]["records"] == int(facts["cpu0.records"]), (rep["totals"]["records"], facts["cpu0.records"])
    assert f"{dropped} AUXTRACE payloads ({dropped_bytes} bytes)" in err, err
    print(f"cpu 5000: --once exit 1, complete false, {dropped} payloads ({dropped_bytes} bytes) reported dropped")
    print("  server mode: " + server_fails(["--replay", bigcpu], "not all of its SPE data was decoded"))

    # --- F: no SPE data at all --------------------------------------------------------
    data = open(pipe, "rb").read()
    out = bytearray(data[:16])
    for pos, typ, size, payload in records(data, pipe=True):
        if typ not in (PERF_RECORD_AUXTRACE, PERF_RECORD_AUXTRACE_INFO):
            out += data[pos:pos + size + payload]
    nospe = os.path.join(tmp, "nospe.data")
    with open(nospe, "wb") as f:
        f.write(out)
    rc, rep, err = once(nospe)
    assert rc == 0 and rep["complete"] and rep["totals"]["records"] == 0, (rc, err)
    assert any("no SPE data" in w for w in rep["warnings"]) and "no SPE data" in err, (rep["warnings"], err)
    with Daemon(args=["--replay", nospe]) as d:
        d.wait_ready(timeout=30)
        st = spe_status(d)
        assert any("no SPE data" in w for w in st["warnings"]), st
        assert "no SPE data" in d.log()
    print(f"no SPE data: warned on stderr, in the report and in /status: {rep['warnings'][0][:60]}...")

    # --- F: AUX payloads of garbage -------------------------------------------------
    data = bytearray(open(good, "rb").read())
    rng = random.Random(11)
    aux = 0
    for pos, typ, size, payload in records(data, pipe=False):
        if typ == PERF_RECORD_AUXTRACE:
            data[pos + size:pos + size + payload] = rng.randbytes(payload)
            aux += payload
    junk = os.path.join(tmp, "junkaux.data")
    with open(junk, "wb") as f:
        f.write(data)
    rc, rep, err = once(junk)
    assert rc == 0, (rc, err)
    skipped = rep["decode_errors"]["bad_header"] + rep["decode_errors"]["bad_extended_header"]
    assert skipped * 100 > aux, (skipped, aux)  # the premise: more than 1% did not decode
    assert any("did not decode" in w for w in rep["warnings"]) and "did not decode" in err, (rep["warnings"], err)
    with Daemon(args=["--replay", junk]) as d:
        d.wait_ready(timeout=30)
        assert any("did not decode" in w for w in spe_status(d)["warnings"]), spe_status(d)
    print(f"garbage AUX payloads: {skipped} of {aux} bytes skipped, warned: {rep['warnings'][0][:70]}...")
