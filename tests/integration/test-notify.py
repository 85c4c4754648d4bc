#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sd_notify protocol: READY, RELOADING, WATCHDOG, STOPPING on a test-owned socket."""

import json
import os
import signal
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon  # noqa: E402

tmp = tempfile.mkdtemp(prefix="armprofd-notify-")
path = os.path.join(tmp, "notify")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
sock.settimeout(5)

messages = []


def expect(field, timeout=5.0):
    """Wait for a datagram containing `field`; return it."""
    for m in messages:
        if field in m.split("\n"):
            return m
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = sock.recv(4096).decode()
        except socket.timeout:
            break
        messages.append(data)
        if field in data.split("\n"):
            return data
    raise AssertionError(f"no {field!r} within {timeout}s; got {messages!r}")


env = os.environ.copy()
env["NOTIFY_SOCKET"] = path
env["WATCHDOG_USEC"] = "400000"  # ping every 200 ms
env.pop("WATCHDOG_PID", None)

with Daemon(env=env) as d:
    ready = expect("READY=1")
    assert "STATUS=Serving on 127.0.0.1:" in ready, ready
    d.wait_ready()

    # Watchdog pings arrive at about half the interval, tied to the collector's progress.
    t0 = time.monotonic()
    pings = 0
    while time.monotonic() - t0 < 1.5:
        data = sock.recv(4096).decode()
        messages.append(data)
        pings += data.split("\n").count("WATCHDOG=1")
    assert 4 <= pings <= 10, pings

    messages.clear()
    d.signal(signal.SIGHUP)
    expect("RELOADING=1")
    expect("READY=1")

    messages.clear()
    rc, took = d.stop()
    assert rc == 0, d.log()
    expect("STOPPING=1", timeout=1)
    order = [m for m in messages if "READY=1" in m or "STOPPING=1" in m]
    assert order and "STOPPING=1" in order[-1], messages

print("READY=1, WATCHDOG=1, RELOADING=1, STOPPING=1 seen in order")

# A replay whose FIFO stays silent: READY at once, and the watchdog keeps being pinged past
# the point where a collector stuck in the replay would have gone stale (collector_alive():
# 3 intervals, at least 5 s), because the loop runs between the replay's budgets.
STALE_S = 5.0
fifo = os.path.join(tmp, "fifo")
os.mkfifo(fifo)
messages.clear()
with Daemon(args=["--replay", fifo], config_text="[pmu]\ninterval = 200ms\n", env=env) as d:
    ready = expect("READY=1")
    assert "STATUS=Serving on 127.0.0.1:" in ready and "replaying" in ready, ready
    deadline = time.monotonic() + 30
    while True:
        try:
            w = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            assert time.monotonic() < deadline, "the daemon never opened the FIFO"
            time.sleep(0.02)
    os.write(w, b"PERFILE2")  # half a pipe header, then nothing
    d.wait_serving()
    c0 = json.loads(d.get("/status")[2])["collector_cycles"]
    # Cycles of the daemon's own clock, not the test's: more than the stale bound's worth of them.
    # Meanwhile the notifications are read, as systemd reads them: a full socket queue
    # (net.unix.max_dgram_qlen) would block the daemon's sd_notify().
    want = c0 + int(STALE_S / 0.2) + 5
    sock.settimeout(0.1)
    while json.loads(d.get("/status")[2])["collector_cycles"] < want:
        assert time.monotonic() < deadline, "the collector stopped cycling while the FIFO was silent"
        try:
            sock.recv(4096)
        except socket.timeout:
            pass
    sock.settimeout(5)
    messages.clear()
    expect("WATCHDOG=1")
    assert d.get("/healthz")[0] == 200
    st = [c for c in json.loads(d.get("/status")[2])["collectors"] if c["name"] == "spe"][0]
    assert st["state"] in ("starting", "running"), st
    assert d.stop()[0] == 0  # before the writer goes: its end would fail the replay
    os.close(w)
print(f"replay from a silent FIFO: {want - c0}+ cycles later still pinging the watchdog, /healthz 200")

sock.close()
os.unlink(path)
os.unlink(fifo)
os.rmdir(tmp)
