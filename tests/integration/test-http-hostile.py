#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What hostile or careless HTTP clients do to the daemon (issue 11, items 11-14): repeated
or empty query parameters, requests at the size limit, a profile pending at SIGTERM, and a
slow-loris attack from many loopback addresses. Only 127.0.0.0/8 is used."""

import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, parse_prom_text  # noqa: E402


def raw_request(host, port, data, timeout=5.0, source=None):
    """Send bytes, read until the server closes or the answer is complete; returns the bytes read."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        if source:
            s.bind((source, 0))
        s.connect((host, port))
        s.sendall(data)
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
            head, sep, body = got.partition(b"\r\n\r\n")
            if sep:
                length = [int(l.split(b":", 1)[1]) for l in head.split(b"\r\n")
                          if l.lower().startswith(b"content-length:")]
                if length and len(body) >= length[0]:
                    break
        return got
    finally:
        s.close()


def status_of(reply):
    """The status code of a raw reply, or None when there was no status line."""
    if not reply.startswith(b"HTTP/1."):
        return None
    return int(reply.split(b" ", 2)[1])


def test_query_parameters():
    """Item 14: a parameter given twice is refused naming it; empty pairs are ignored."""
    with Daemon() as d:
        d.wait_ready()

        def get_json(path):
            status, _, body = d.get(path)
            return status, json.loads(body)

        for path, name in (("/hotlines?limit=1&limit=3", "limit"), ("/hotpcs?window=1m&window=10s", "window"),
                           ("/hotlines?pid=1&limit=2&pid=1", "pid"), ("/counters?cpu=0&cpu=0", "cpu"),
                           ("/latency?window=all&window=all", "window"),
                           ("/debug/pprof/profile?seconds=1&seconds=2", "seconds"),
                           ("/debug/pprof/spe?window=1m&window=1m", "window")):
            status, err = get_json(path)
            assert status == 400, (path, status, err)
            assert err["error"] == f"parameter '{name}' given more than once", (path, err)
        for path in ("/hotlines?&&&", "/hotlines?", "/hotlines?&limit=2&&window=1m&", "/latency?&"):
            status, body = get_json(path)
            assert status == 200, (path, status, body)
        # Unknown ones are still refused, with the known names; a name without "=" is a value "".
        status, err = get_json("/hotlines?&&bogus")
        assert (status, err["error"]) == (400, "unknown parameter 'bogus' (known: window, limit, pid, cgroup, all)"), err
        status, err = get_json("/hotlines?limit")
        assert status == 400 and "'limit'" in err["error"], err
        status, err = get_json("/hotlines?=5")
        assert (status, err["error"]) == (400, "unknown parameter '' (known: window, limit, pid, cgroup, all)"), err
        # A decoded %00 does not cut a name or value short into an accepted one.
        for path, name in (("/hotlines?limit%00x=3", "limit"), ("/counters?cpu=1%00junk", "cpu")):
            status, err = get_json(path)
            assert (status, err["error"]) == (400, f"parameter '{name}': a NUL byte in its name or value"), err
    print("repeated parameters refused by name, empty pairs ignored")


def metric(d, name, **labels):
    s = parse_prom_text(d.get("/metrics")[2].decode())
    return s.get((name, frozenset(labels.items())))


def wait_metric(d, want, name, **labels):
    deadline = time.monotonic() + 5
    while metric(d, name, **labels) != want:
        assert time.monotonic() < deadline, (name, labels, metric(d, name, **labels), want)
        time.sleep(0.02)


def test_request_size_limit():
    """Item 12: every request gets a status line: 200 up to max_request_size, 431 beyond, at
    every size around the limit and around the connection's memory pool, and with many fields."""
    for config, limit in ((None, 32 * 1024), ("[http]\nmax_request_size = 4096\n", 4096)):
        with Daemon(config_text=config) as d:
            d.wait_ready()
            head = b"GET /hotlines HTTP/1.1\r\nHost: x\r\nX-Pad: "
            tail = b"\r\n\r\n"
            pad = len(head) + len(tail)
            # Around the limit byte by byte, then in steps through the memory pool (limit +
            # 256 fields x 64 + 4 KiB) and past it, where MHD answers 431 itself.
            sizes = sorted(set(range(limit - 40, limit + 40)) | set(range(limit - 2000, limit + 30000, 61)))
            bad = []
            for size in sizes:
                reply = raw_request(d.host, d.port, head + b"a" * (size - pad) + tail)
                want = 200 if size <= limit else 431
                if status_of(reply) != want:
                    bad.append((size, reply[:60]))
            assert not bad, (limit, len(bad), bad[:10])
            # Many small fields: each costs MHD a record in the pool.
            for n in range(240, 270):
                req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(n)) + b"\r\n"
                want = 200 if n + 1 <= 256 and len(req) <= limit else 431
                got = status_of(raw_request(d.host, d.port, req))
                assert got == want, (limit, n, got, want)
            # The same with query arguments, and a HEAD.
            req = b"HEAD /healthz?" + b"&".join(b"a%d" % i for i in range(300)) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
            reply = raw_request(d.host, d.port, req)
            assert status_of(reply) == 431 and reply.endswith(b"\r\n\r\n"), reply
            assert d.get("/healthz")[0] == 200
            print(f"max_request_size {limit}: {len(sizes)} sizes and 30 field counts all answered, 200 or 431")


def test_profile_pending_at_stop():
    """Item 13: a pending /debug/pprof/profile gets a 503 with a body when the daemon stops."""
    with Daemon() as d:
        d.wait_ready()
        result = {}

        def client():
            result["reply"] = raw_request(d.host, d.port, b"GET /debug/pprof/profile?seconds=60 HTTP/1.1\r\n"
                                          b"Host: x\r\n\r\n", timeout=20)
        t = threading.Thread(target=client)
        t.start()
        wait_metric(d, 1, "armprofd_http_connections", state="waiting")
        rc, took = d.stop(timeout=5)
        t.join(20)
        reply = result["reply"]
        assert status_of(reply) == 503, reply[:200]
        body = json.loads(reply.partition(b"\r\n\r\n")[2])
        assert body["status"] == 503 and "stopping" in body["error"], body
        assert rc == 0, d.log()
        print(f"pending profile answered 503 at SIGTERM, stop took {took:.2f} s")


def test_idle_sockets_one_address():
    """Item 11: per_ip_connections (8) idle sockets from one address do not lock that address
    out; its oldest idle connection makes room."""
    with Daemon() as d:
        d.wait_ready()
        idle = []
        for _ in range(8):
            c = socket.socket()
            c.settimeout(5)
            c.bind(("127.0.0.2", 0))
            c.connect((d.host, d.port))
            idle.append(c)
        wait_metric(d, 8, "armprofd_http_connections", state="reading")
        c = socket.socket()
        c.settimeout(5)
        c.bind(("127.0.0.2", 0))
        c.connect((d.host, d.port))
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = c.recv(4096)
        c.close()
        assert status_of(reply) == 200, reply
        assert idle[0].recv(1) == b"", "the oldest idle connection was not the one closed"
        assert metric(d, "armprofd_http_connections_closed_total", reason="evicted") == 1
        for c in idle:
            c.close()
        print("9th client of one address answered; its oldest idle connection closed")


def test_header_deadline():
    """Item 11: a client trickling its request a byte at a time is closed before it finishes:
    each byte resets the idle timeout (15 s), the header deadline (5 s from accept) does not move."""
    with Daemon() as d:
        d.wait_ready()
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 20 + b"\r\n\r\n"  # 60 bytes, 24 s
        c = socket.socket()
        c.settimeout(5)
        c.bind(("127.0.0.3", 0))
        c.connect((d.host, d.port))
        sent, reply = 0, None
        try:
            for b in request:
                c.sendall(bytes([b]))
                sent += 1
                time.sleep(0.4)
                c.settimeout(0)
                try:
                    reply = c.recv(4096)
                    break
                except BlockingIOError:
                    pass
                finally:
                    c.settimeout(5)
        except OSError as e:
            reply = repr(e)
        c.close()
        assert sent < len(request) and not reply, (sent, reply)
        assert metric(d, "armprofd_http_connections_closed_total", reason="header_deadline") == 1
        print(f"a trickling client was closed after {sent} of {len(request)} bytes")


ATTACKERS = 40
ATTACK_SECONDS = 12


def test_slow_loris():
    """Item 11: 40 clients from 127.0.0.2-41 trickling a byte a second, reconnecting when closed,
    do not keep /healthz and /metrics from answering; none holds a connection past the header
    deadline. The issue's figure is 100 ms; the test prints the worst latency and asserts only
    that every probe was answered 200 within 1 s."""
    with Daemon() as d:
        d.wait_ready()
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"s" * 200
        stop = threading.Event()
        lock = threading.Lock()
        lifetimes = []  # (opened at, closed by the server at or None)
        probes = []     # (status or error, seconds)

        def attacker(i):
            src = f"127.0.0.{2 + i}"
            while not stop.is_set():
                s = socket.socket()
                s.settimeout(1)
                t0 = time.monotonic()
                closed = None
                try:
                    s.bind((src, 0))
                    s.connect((d.host, d.port))
                    for b in request:
                        if stop.wait(1.0):
                            break
                        s.sendall(bytes([b]))
                        try:
                            s.settimeout(0)
                            if s.recv(1) == b"":
                                raise ConnectionResetError
                        except BlockingIOError:
                            pass
                        finally:
                            s.settimeout(1)
                except OSError:
                    closed = time.monotonic()
                finally:
                    s.close()
                with lock:
                    lifetimes.append((t0, closed))
                if closed is None:
                    return
                stop.wait(0.2)

        def prober():
            while not stop.is_set():
                # Mostly /healthz, every fifth time /metrics.
                path = b"/metrics" if len(probes) % 5 == 4 else b"/healthz"
                t0 = time.monotonic()
                try:
                    reply = raw_request(d.host, d.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                                        timeout=2.0)
                    r = status_of(reply)
                except OSError as e:
                    r = repr(e)
                probes.append((r, time.monotonic() - t0))
                stop.wait(0.1)

        threads = [threading.Thread(target=attacker, args=(i,)) for i in range(ATTACKERS)]
        start = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(1.5)  # let the attackers take their slots
        probe = threading.Thread(target=prober)
        probe.start()
        time.sleep(ATTACK_SECONDS - 1.5)
        stop.set()
        for t in threads + [probe]:
            t.join(10)
        counts = {r: metric(d, "armprofd_http_connections_closed_total", reason=r)
                  for r in ("header_deadline", "evicted", "refused")}

        lat = sorted(p[1] for p in probes)
        failed = [p for p in probes if p[0] != 200]
        print(f"{len(probes)} /healthz and /metrics probes during the attack: {len(failed)} failed, "
              f"median {lat[len(lat) // 2] * 1000:.1f} ms, worst {lat[-1] * 1000:.1f} ms; "
              f"{len(lifetimes)} attacker connections; closed by the server: {counts}")
        assert not failed, failed[:5]
        assert len(probes) >= 20, len(probes)
        assert lat[-1] < 1.0, lat[-1]  # a liveness bound, not a performance claim
        # Every attacker connection opened in the attack's first 5 s was closed by the server
        # before the attack ended, though none was ever idle: the header deadline (5 s) did it,
        # where the idle timeout (15 s) never would.
        early = [(t0, c) for t0, c in lifetimes if t0 < start + 5]
        assert len(early) >= ATTACKERS, len(early)
        assert all(c is not None and c < start + ATTACK_SECONDS for _, c in early), \
            [(round(t0 - start, 1), c and round(c - start, 1)) for t0, c in early][:10]
        assert counts["header_deadline"] + counts["evicted"] >= ATTACKERS, counts


TESTS = [test_query_parameters, test_request_size_limit, test_profile_pending_at_stop,
         test_idle_sockets_one_address, test_header_deadline, test_slow_loris]

if __name__ == "__main__":
    only = sys.argv[1:]
    for t in TESTS:
        if not only or t.__name__ in only:
            t()
