#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sd_notify protocol: READY, RELOADING, WATCHDOG, STOPPING on a test-owned socket."""

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

sock.close()
os.unlink(path)
os.rmdir(tmp)
print("READY=1, WATCHDOG=1, RELOADING=1, STOPPING=1 seen in order")
