#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What hostile or careless HTTP clients do to the daemon (issue 11, items 11-14): repeated
or empty query parameters, requests at the size limit, a profile pending at SIGTERM, and a
slow-loris attack from many loopback addresses; and (issue 17) malformed requests, bad
parameters, pipelining, bodies trickled after the headers, and a barrage of 500 connections
with /healthz probed and the RSS watched. Only 127.0.0.0/8 is used."""

import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, parse_prom_text, schedstat  # noqa: E402


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
        assert (status, err["error"]) == (400, "unknown parameter 'bogus' (known: window, format, limit, pid, cgroup, all)"), err
        status, err = get_json("/hotlines?limit")
        assert status == 400 and "'limit'" in err["error"], err
        status, err = get_json("/hotlines?=5")
        assert (status, err["error"]) == (400, "unknown parameter '' (known: window, format, limit, pid, cgroup, all)"), err
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


def test_request_in_progress_kept():
    """Over per_ip_connections (8), a connection whose request is on its way is not the one
    closed while the address has an idle one (answered, kept alive), however the two are
    ordered; and a connection its client has closed goes before a live idle one."""
    with Daemon() as d:
        d.wait_ready()

        def conn():
            c = socket.socket()
            c.settimeout(5)
            c.bind(("127.0.0.3", 0))
            c.connect((d.host, d.port))
            return c

        def ask(c):
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            reply = c.recv(4096)
            assert status_of(reply) == 200, reply

        # The oldest connection has half its request in; seven more are answered and idle.
        slow = conn()
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        idle = [conn() for _ in range(7)]
        for c in idle:
            ask(c)
        wait_metric(d, 7, "armprofd_http_connections", state="idle")
        # A ninth: the oldest idle one makes room, not the request in progress.
        ninth = conn()
        ask(ninth)
        assert idle[0].recv(1) == b"", "the oldest idle connection is still open"
        slow.sendall(b"\r\n")
        assert status_of(slow.recv(4096)) == 200, "the request in progress was cut"
        assert metric(d, "armprofd_http_connections_closed_total", reason="evicted") == 1
        # A client closes an idle connection; a newcomer finds room without a live one closed
        # (the gone one makes it, or MHD has reaped it already).
        idle[3].close()
        tenth = conn()
        ask(tenth)
        for c in idle[1:3] + idle[4:]:
            ask(c)
        for c in [slow, ninth, tenth] + idle:
            c.close()
        print("over the per-address limit: the idle connection closed, the request in progress answered")


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


def exchange(d, data, timeout=3.0, source=None):
    """Send bytes and read until the server closes or `timeout`: (bytes read, whether the server
    closed, seconds). A server that keeps the connection open after a complete answer shows as
    not closed after `timeout`; callers use it for answers that must close."""
    s = socket.socket()
    s.settimeout(timeout)
    t0 = time.monotonic()
    got, closed = b"", False
    try:
        if source:
            s.bind((source, 0))
        s.connect((d.host, d.port))
        s.sendall(data)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    except socket.timeout:
        pass
    finally:
        s.close()
    return got, closed, time.monotonic() - t0


H = b"Host: x\r\n"
# (what, request, the status wanted, or None for a close without an answer). Every 4xx and the
# 505 below comes with "Connection: close" and the connection closed at once (MHD 0.9.75's
# transmit_error_response). 505 is the one 5xx: RFC 9110 15.6.6 prescribes it for a major
# version the server does not speak; it says nothing about the server's health.
MALFORMED = [
    # Request lines: no target or version (MHD closes at once, no answer), HTTP/0.9 style.
    ("garbage request line", b"GARBAGE\r\n\r\n", None),
    ("method alone", b"GET\r\n\r\n", None),
    ("no version (HTTP/0.9 style)", b"GET /healthz\r\n\r\n", 400),
    ("three words and more", b"GET /healthz HTTP/1.1 extra\r\n" + H + b"\r\n", 400),
    # Versions.
    ("HTTP/2.0", b"GET /healthz HTTP/2.0\r\n" + H + b"\r\n", 505),
    ("HTTP/0.9", b"GET /healthz HTTP/0.9\r\n" + H + b"\r\n", 505),
    ("HTTP/3", b"GET /healthz HTTP/3\r\n" + H + b"\r\n", 400),
    ("HTTP/1.10", b"GET /healthz HTTP/1.10\r\n" + H + b"\r\n", 400),
    ("lower-case http/1.1", b"GET /healthz http/1.1\r\n" + H + b"\r\n", 400),
    ("FOO/1.1", b"GET /healthz FOO/1.1\r\n" + H + b"\r\n", 400),
    # Header lines.
    ("header line without colon", b"GET /healthz HTTP/1.1\r\n" + H + b"NoColonHere\r\n\r\n", 400),
    ("NUL in a header name", b"GET /healthz HTTP/1.1\r\n" + H + b"X\x00Y: 1\r\n\r\n", 400),
    # Bodies a GET announces that cannot be read: an absurd or negative length, a chunk size
    # past 64 bits, a chunk size that is not hex.
    ("Content-Length 10^23", b"GET /healthz HTTP/1.1\r\n" + H + b"Content-Length: " + b"9" * 23 + b"\r\n\r\n", 413),
    ("Content-Length -1", b"GET /healthz HTTP/1.1\r\n" + H + b"Content-Length: -1\r\n\r\n", 400),
    ("Content-Length abc", b"GET /healthz HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n", 400),
    ("chunk size past 64 bits", b"GET /healthz HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
     + b"f" * 24 + b"\r\nabcde\r\n0\r\n\r\n", 413),
    ("chunk size not hex", b"GET /healthz HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n", 400),
    # Oversized: a request line past the connection's memory pool (MHD's own 414), one header
    # past it (MHD's 431), and a request line over max_request_size but within the pool (ours).
    ("request line of 200 KiB", b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
    ("header of 200 KiB", b"GET /healthz HTTP/1.1\r\n" + H + b"X-Big: " + b"a" * 200000 + b"\r\n\r\n", 431),
    ("request line of 40 KB", b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\n" + H + b"\r\n", 431),
]

# Not errors: what HTTP lets a server accept, answered 200 on a connection kept open.
ACCEPTED = [
    # RFC 9112 2.2: a recipient MAY take a bare LF for a line end.
    ("bare LF line ends", b"GET /healthz HTTP/1.1\nHost: x\n\n"),
    # RFC 9110 2.5: a higher minor version is answered as the highest 1.x the server speaks.
    ("HTTP/1.2", b"GET /healthz HTTP/1.2\r\n" + H + b"\r\n"),
    # RFC 9112 2.2: empty lines before the request line are ignored.
    ("empty lines first", b"\r\n\r\nGET /healthz HTTP/1.1\r\n" + H + b"\r\n"),
    # A body on GET is read and ignored, whole: by length, or chunked.
    ("GET with a body", b"GET /healthz HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nabcde"),
    ("GET with a chunked body", b"GET /healthz HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n"),
    # KNOWN DEFECTS (MHD 0.9.75 at its default strictness, which http.c keeps), asserted as they
    # are so that a change shows: RFC 9112 3.2 wants a 400 for an HTTP/1.1 request without Host,
    # RFC 9110 5.5 a 400 (or a SP) for a NUL in a field value.
    ("KNOWN DEFECT: HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\n\r\n"),
    ("KNOWN DEFECT: NUL in a header value", b"GET /healthz HTTP/1.1\r\n" + H + b"X-A: a\x00b\r\n\r\n"),
    # RFC 9112 6.3: two different Content-Lengths are an unrecoverable error (400 and close);
    # MHD takes one of them, which a proxy in front that took the other would read differently.
    ("KNOWN DEFECT: two Content-Lengths", b"GET /healthz HTTP/1.1\r\n" + H
     + b"Content-Length: 5\r\nContent-Length: 7\r\n\r\nabcdefg"),
]


def test_malformed_requests():
    """Issue 17: malformed requests each get their 4xx (or, where MHD gives no answer, a close)
    at once, never a hang or a server error; the daemon answers normally afterwards. A TLS
    ClientHello, which has no line end at all, is closed by the header deadline."""
    with Daemon() as d:
        d.wait_ready()
        tls = {}

        def hello():  # 5 s of the header deadline: in parallel with the rest
            # Its random field fixed without a line end: a real one, with an LF among its random
            # bytes, is closed at once as a garbage request line.
            tls["r"] = exchange(d, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(0x20, 0x40)), timeout=9)
        t = threading.Thread(target=hello)
        t.start()
        bad = []
        for what, req, want in MALFORMED:
            reply, closed, took = exchange(d, req)
            head = reply.partition(b"\r\n\r\n")[0]
            if status_of(reply) != want or not closed or took > 2.0 or \
                    (want is not None and b"\r\nConnection: close" not in head):
                bad.append((what, status_of(reply), closed, round(took, 2), reply[:80]))
        for what, req in ACCEPTED:
            reply = raw_request(d.host, d.port, req)
            if status_of(reply) != 200 or not reply.endswith(b"\r\n\r\nok\n"):
                bad.append((what, reply[:80]))
        # A NUL in the target ends it (MHD hands us a C string): "/heal\0thz" is "/heal", a 404.
        reply = raw_request(d.host, d.port, b"GET /heal\x00thz HTTP/1.1\r\n" + H + b"\r\n")
        if status_of(reply) != 404 or b"no such path: /heal\"" not in reply:
            bad.append(("NUL in the target", reply[:200]))
        t.join(15)
        reply, closed, took = tls["r"]
        if reply or not closed or not 4.0 < took < 7.0:
            bad.append(("TLS ClientHello", reply[:80], closed, round(took, 2)))
        assert not bad, bad
        assert d.get("/healthz")[0] == 200
        assert d.proc.poll() is None, d.log()
        print(f"{len(MALFORMED)} malformed requests: each its 4xx/505 or a close at once; "
              f"{len(ACCEPTED)} lenient forms answered 200; a TLS ClientHello closed after {took:.1f} s")


# (path, the parameter named, the message): each a 400 with {"error": message, "status": 400}.
LIMIT_MSG = "parameter 'limit': '{}' is not a number in 1..{}"
WINDOW_MSG = "parameter 'window': invalid window '{}' (e.g. 10s, 1m, 10m, 600, all)"
SECONDS_MSG = "parameter 'seconds': '{}' is not a number in 1..120"
NUL_MSG = "parameter '{}': a NUL byte in its name or value"
BAD_PARAMETERS = [
    # Invalid percent-encoding: MHD leaves a "%" not followed by two hex digits as it is.
    ("/hotlines?limit=%", LIMIT_MSG.format("%", 500)),
    ("/hotlines?limit=%G1", LIMIT_MSG.format("%G1", 500)),
    ("/hotlines?limit=%0", LIMIT_MSG.format("%0", 500)),
    ("/hotlines?limit=%00", NUL_MSG.format("limit")),
    ("/hotlines?%G1=1", "unknown parameter '%G1' (known: window, format, limit, pid, cgroup, all)"),
    ("/debug/pprof/profile?seconds=%", SECONDS_MSG.format("%")),
    ("/counters?cpu=%0", "parameter 'cpu': '%0' is not a CPU number"),
    # Bytes that are not UTF-8, quoted back as \xNN (JSON strings are UTF-8).
    ("/hotlines?window=%ff", WINDOW_MSG.format("\\xff")),
    ("/hotlines?%ff=1", "unknown parameter '\\xff' (known: window, format, limit, pid, cgroup, all)"),
    ("/hotpcs?pid=%ff%fe", "parameter 'pid': '\\xff\\xfe' is not a process id"),
    ("/hotlines?limit=%c3%28", LIMIT_MSG.format("\\xc3(", 500)),
    # Numbers: negative, past 32 and 64 bits, hex, exponents, signs, zero, over the maximum.
    ("/hotlines?limit=-1", LIMIT_MSG.format("-1", 500)),
    ("/hotlines?limit=99999999999999999999", LIMIT_MSG.format("99999999999999999999", 500)),
    ("/hotlines?limit=4294967297", LIMIT_MSG.format("4294967297", 500)),
    ("/hotlines?limit=0x10", LIMIT_MSG.format("0x10", 500)),
    ("/hotlines?limit=1e3", LIMIT_MSG.format("1e3", 500)),
    ("/hotlines?limit=+5", LIMIT_MSG.format(" 5", 500)),  # "+" is a space in a query
    ("/hotlines?limit=0", LIMIT_MSG.format("0", 500)),
    ("/hotlines?limit=501", LIMIT_MSG.format("501", 500)),
    ("/hotpcs?limit=1001", LIMIT_MSG.format("1001", 1000)),
    ("/hotpcs?limit=abc", LIMIT_MSG.format("abc", 1000)),
    ("/hotlines?pid=-1", "parameter 'pid': '-1' is not a process id"),
    ("/hotlines?pid=99999999999999999999", "parameter 'pid': '99999999999999999999' is not a process id"),
    ("/counters?cpu=-1", "parameter 'cpu': '-1' is not a CPU number"),
    ("/counters?cpu=0x1", "parameter 'cpu': '0x1' is not a CPU number"),
    ("/hotpcs?window=1e999", WINDOW_MSG.format("1e999")),
    ("/hotpcs?window=-5", WINDOW_MSG.format("-5")),
    ("/hotpcs?window=0", WINDOW_MSG.format("0")),
    ("/hotpcs?window=inf", WINDOW_MSG.format("inf")),
    ("/hotpcs?window=NaN", WINDOW_MSG.format("NaN")),
    ("/hotpcs?window=99999999999999999999", WINDOW_MSG.format("99999999999999999999")),
    ("/hotpcs?window=18446744073709551615", WINDOW_MSG.format("18446744073709551615")),
    ("/latency?window=1e999", WINDOW_MSG.format("1e999")),
    ("/debug/pprof/spe?window=1e999", WINDOW_MSG.format("1e999")),
    ("/debug/pprof/profile?seconds=-5", SECONDS_MSG.format("-5")),
    ("/debug/pprof/profile?seconds=0", SECONDS_MSG.format("0")),
    ("/debug/pprof/profile?seconds=121", SECONDS_MSG.format("121")),
    ("/debug/pprof/profile?seconds=1.5", SECONDS_MSG.format("1.5")),
    ("/debug/pprof/profile?seconds=99999999999999999999", SECONDS_MSG.format("99999999999999999999")),
]


def test_bad_parameters():
    """Issue 17: invalid percent-encoding and huge, negative or non-numbers in numeric
    parameters are each a 400 with a JSON error naming the parameter; valid escapes decode."""
    with Daemon() as d:
        d.wait_ready()
        bad = []
        for path, msg in BAD_PARAMETERS:
            status, headers, body = d.get(path)
            try:
                err = json.loads(body)
            except ValueError:
                err = body
            if status != 400 or headers.get("content-type") != "application/json" or \
                    err != {"error": msg, "status": 400}:
                bad.append((path, status, err))
        assert not bad, bad
        # Valid escapes, in names and values and the path, are decoded and accepted.
        for path in ("/hotlines?lim%69t=%32", "/heal%74hz", "/hotpcs?window=1%6d"):
            assert d.get(path)[0] == 200, path
        assert d.get("/healthz%")[0] == 404
        print(f"{len(BAD_PARAMETERS)} bad parameters each a 400 naming it")


def split_responses(data, methods):
    """The answers in a byte stream, one per method (HEAD: no body): [(status, head, body)]."""
    out, pos = [], 0
    for m in methods:
        end = data.index(b"\r\n\r\n", pos)
        head = data[pos:end]
        lengths = [int(l.split(b":", 1)[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        assert len(lengths) == 1, head
        n = 0 if m == b"HEAD" else lengths[0]
        body = data[end + 4:end + 4 + n]
        assert len(body) == n, (m, head, len(body), n)
        out.append((int(head.split(b" ", 2)[1]), head, body))
        pos = end + 4 + n
    return out, data[pos:]


STABLE_STATUS = ("version", "revision", "started", "started_at", "listen", "config")


def test_pipelined():
    """Issue 17: several requests in one send() on one connection are answered in order, each
    complete and as a separate request is; a malformed one ends the row with its 400 and a close."""
    with Daemon() as d:
        d.wait_ready()
        row = [(b"GET", b"/healthz"), (b"GET", b"/no/such/path"), (b"HEAD", b"/healthz"), (b"GET", b"/status"),
               (b"GET", b"/hotlines?limit=-1"), (b"GET", b"/healthz?x=1"), (b"GET", b"/nope%20x"),
               (b"GET", b"/status"), (b"GET", b"/debug/pprof/profile?seconds=0"), (b"GET", b"/healthz")] * 3
        want = []
        for m, p in row:
            st, _, body = d.request(m.decode(), p.decode())
            want.append((st, body))
        data = b"".join(m + b" " + p + b" HTTP/1.1\r\nHost: x\r\n\r\n" for m, p in row)
        # The last one closes, so the read ends; then a malformed one after it is never read.
        data = data[:-2] + b"Connection: close\r\n\r\n"
        reply, closed, took = exchange(d, data, timeout=5)
        assert closed, (took, reply[-200:])
        got, rest = split_responses(reply, [m for m, _ in row])
        assert rest == b"", rest[:200]
        for (m, p), (st, head, body), (wst, wbody) in zip(row, got, want):
            assert st == wst, (p, st, wst)
            if p == b"/status":
                a, b = json.loads(body), json.loads(wbody)
                assert {k: a[k] for k in STABLE_STATUS} == {k: b[k] for k in STABLE_STATUS}, (a, b)
            elif m == b"GET":
                assert body == wbody, (p, body, wbody)
        # Behind a malformed request: the answers before it, its 400, the close; nothing after.
        row2 = [(b"GET", b"/healthz"), (b"GET", b"/nope")]
        data = b"".join(m + b" " + p + b" HTTP/1.1\r\nHost: x\r\n\r\n" for m, p in row2)
        data += b"GET /healthz HTTP/1.1\r\nNoColon\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        reply, closed, took = exchange(d, data, timeout=5)
        got, rest = split_responses(reply, [b"GET"] * 3)
        assert [g[0] for g in got] == [200, 404, 400] and rest == b"" and closed, (got, rest, closed)
        print(f"{len(row)} pipelined requests answered in order as separately; a malformed one ends a row")


def test_slow_body():
    """A GET announcing a body it trickles (a huge Content-Length, a chunked body, a transfer
    coding MHD cannot frame) is under the header deadline like a trickled header: it is evictable
    and closed 5 s from accept, so per_ip_connections of them do not lock their address out."""
    with Daemon() as d:
        d.wait_ready()
        heads = [b"Content-Length: 1000000\r\n\r\n", b"Transfer-Encoding: chunked\r\n\r\nfffff\r\n",
                 b"Transfer-Encoding: gzip\r\n\r\n"]
        conns = []
        t0 = time.monotonic()
        for i in range(8):
            c = socket.socket()
            c.settimeout(5)
            c.bind(("127.0.0.9", 0))
            c.connect((d.host, d.port))
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + heads[i % len(heads)])
            conns.append(c)
        open_ = list(conns)
        closed_at, ninth = [], None
        while open_ and time.monotonic() < t0 + 9:
            for c in list(open_):
                try:
                    c.sendall(b"a")
                    c.settimeout(0)
                    if c.recv(4096) == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                finally:
                    c.settimeout(5)
                closed_at.append(time.monotonic() - t0)
                open_.remove(c)
            if ninth is None and time.monotonic() > t0 + 1:
                ninth = status_of(raw_request(d.host, d.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                                              source="127.0.0.9"))
            time.sleep(0.25)
        for c in conns:
            c.close()
        # The 9th from the address evicted the oldest; the deadline closed the rest.
        assert ninth == 200, ninth
        assert not open_ and len(closed_at) == 8 and max(closed_at) < 7.0, (len(open_), closed_at)
        n = {r: metric(d, "armprofd_http_connections_closed_total", reason=r) for r in ("header_deadline", "evicted")}
        assert n == {"header_deadline": 7, "evicted": 1}, n
        print(f"8 trickled bodies from one address: the 9th answered, the rest closed by "
              f"{max(closed_at):.1f} s ({n})")


BARRAGE_CLIENTS = 500
BARRAGE_ADDRESSES = 100  # 5 connections each; per_ip_connections is 8
BARRAGE_LORIS = 60
BARRAGE_SECONDS = 12
# Each client waits this long between its requests: 500 clients ask ~1000 requests a second,
# what the daemon on a small machine serves with CPU to spare. A barrage that saturates its
# one HTTP thread would measure the queue, not the daemon: no bound holds for a queue.
BARRAGE_PAUSE = (0.25, 0.75)
PROBE_INTERVAL = 0.05
PROBE_BOUND = 0.1  # the figure for /healthz during the barrage
# VmRSS a few seconds after the barrage, over its level after warm-up: see test_barrage.
RSS_TOLERANCE_KIB = 4 * 1024
# The collectors off: the cpu-clock sampler symbolizes whatever else runs on the machine (a
# compiler's 2 MiB of mapped ELF, for one), which the RSS figure is not about.
BARRAGE_CONFIG = "[http]\nmax_connections = 1024\n[sampler]\nenable = no\n[pmu]\nenable = no\n"


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def probe_process(host, port, mhd, stop, out):
    """In its own process, so that its latencies are the daemon's and not those of the barrage's
    interpreter: GET /healthz on a fresh connection every PROBE_INTERVAL; (status, connect
    seconds, total seconds, start, run-queue seconds) each. The last is what the probe and the
    daemon's HTTP thread (schedstat file mhd) waited for a CPU while the probe was out: time
    the machine's other work took, not the daemon."""
    res = []
    wait0 = schedstat()[1]
    while not stop.is_set():
        queued0 = schedstat()[1] + schedstat(mhd)[1]
        t0 = time.monotonic()
        s = socket.socket()
        s.settimeout(2.0)
        tc = None
        try:
            s.bind(("127.0.0.254", 0))
            s.connect((host, port))
            tc = time.monotonic() - t0
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            reply = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
            r = status_of(reply) if reply.endswith(b"\r\n\r\nok\n") else repr(reply[:60])
        except OSError as e:
            r = repr(e)
        finally:
            s.close()
        took = time.monotonic() - t0
        res.append((r, tc, took, t0, schedstat()[1] + schedstat(mhd)[1] - queued0))
        stop.wait(max(0.0, PROBE_INTERVAL - (time.monotonic() - t0)))
    out.send((res, schedstat()[1] - wait0))
    out.close()


# What the barrage's clients ask, and the status each must get; /metrics one time in 20.
BARRAGE_PATHS = [(b"/healthz", 200), (b"/status", 200), (b"/no/such", 404), (b"/healthz?x=1", 200),
                 (b"/hotlines?limit=-1", 400), (b"/hotpcs?limit=5", 200), (b"/healthz", 200),
                 (b"/metrics", 200), (b"/counters?cpu=x", 400), (b"/healthz", 200),
                 (b"/healthz", 200), (b"/status", 200), (b"/no/such", 404), (b"/healthz?x=1", 200),
                 (b"/hotlines?limit=-1", 400), (b"/hotpcs?limit=5", 200), (b"/healthz", 200),
                 (b"/latency", 200), (b"/counters?cpu=x", 400), (b"/healthz", 200)]


def barrage_process(host, port, out):
    """The barrage's clients, in their own process at a lower priority (nice 10): on the
    daemon's own machine they stand for clients on other machines, whose CPU time would not be
    taken from the daemon. (errors, requests, slow-loris connections closed, seconds) to `out`."""
    import asyncio
    import random

    os.nice(10)
    errors, done, loris_closed = [], [0], [0]

    async def client(i, deadline):
        src = f"127.1.{i % BARRAGE_ADDRESSES}.1"
        await asyncio.sleep(i * 0.002)  # 500 SYNs at once would overflow the backlog (64)
        n = i
        while time.monotonic() < deadline:
            try:
                r, w = await asyncio.open_connection(host, port, local_addr=(src, 0))
            except OSError as e:
                errors.append(("connect", src, repr(e)))
                return
            try:
                # A kept-alive connection for 1 to 20 requests, then a new one.
                for _ in range(random.randint(1, 20)):
                    if time.monotonic() >= deadline:
                        break
                    path, want = BARRAGE_PATHS[n % len(BARRAGE_PATHS)]
                    n += 1
                    w.write(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
                    head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 10)
                    length = [int(l.split(b":", 1)[1]) for l in head.split(b"\r\n")
                              if l.lower().startswith(b"content-length:")]
                    await asyncio.wait_for(r.readexactly(length[0]), 10)
                    if status_of(head) != want:
                        errors.append((path, head[:60]))
                    done[0] += 1
                    await asyncio.sleep(random.uniform(*BARRAGE_PAUSE))
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                errors.append(("request", src, repr(e)))
                return
            finally:
                w.close()

    async def loris(i, deadline):
        src = f"127.2.{i}.1"
        while time.monotonic() < deadline:
            w = None
            try:
                r, w = await asyncio.open_connection(host, port, local_addr=(src, 0))
                w.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                while time.monotonic() < deadline:
                    w.write(b"X")
                    await w.drain()
                    try:
                        if await asyncio.wait_for(r.read(1), 0.5) == b"":
                            loris_closed[0] += 1
                            break
                    except asyncio.TimeoutError:
                        pass
            except OSError:
                loris_closed[0] += 1
            finally:
                if w:
                    w.close()

    async def barrage():
        deadline = time.monotonic() + BARRAGE_SECONDS
        await asyncio.gather(*[client(i, deadline) for i in range(BARRAGE_CLIENTS)],
                             *[loris(i, deadline) for i in range(BARRAGE_LORIS)])

    t0 = time.monotonic()
    asyncio.run(barrage())
    out.send((errors, done[0], loris_closed[0], time.monotonic() - t0))
    out.close()


def run_barrage(d):
    """The barrage and the probe against a running daemon: a dict of what was seen."""
    import multiprocessing

    pid = d.proc.pid
    mp = multiprocessing.get_context("fork")
    stop = mp.Event()
    rx, tx = mp.Pipe(duplex=False)
    brx, btx = mp.Pipe(duplex=False)
    mhd = d.thread_path("MHD-single", "schedstat")
    probe = mp.Process(target=probe_process, args=(d.host, d.port, mhd, stop, tx))
    clients = mp.Process(target=barrage_process, args=(d.host, d.port, btx))
    peak = [0]

    def watch_rss():
        while not stop.is_set():
            peak[0] = max(peak[0], vm_rss_kib(pid))
            stop.wait(0.25)
    watcher = threading.Thread(target=watch_rss)
    run0, wait0 = schedstat(mhd)
    probe.start()
    watcher.start()
    clients.start()
    errors, requests, loris_closed, took = brx.recv()
    clients.join(10)
    stop.set()
    probes, probe_wait = rx.recv()
    run1, wait1 = schedstat(mhd)
    probe.join(10)
    watcher.join(5)
    return {"probes": probes, "errors": errors, "requests": requests, "seconds": took,
            "loris_closed": loris_closed, "peak_kib": peak[0], "http_run": run1 - run0,
            "http_wait": wait1 - wait0, "probe_wait": probe_wait}


def quantile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def test_barrage():
    """Issue 17: 500 connections from 100 loopback addresses doing real requests, on kept-alive
    and on new connections, and 60 slow-loris clients trickling headers, for 12 s. Meanwhile a
    probe in its own process GETs /healthz on a fresh connection every 50 ms: every probe gets
    200 in under 100 ms, less what it and the HTTP thread waited on a run queue meanwhile. The
    daemon's VmRSS 3 s after the barrage is back within RSS_TOLERANCE_KIB of its level after
    warm-up.

    max_connections is raised to 1024: at the default 32 the other 468 would wait in the
    kernel's listen backlog (64) and past it behind SYN retransmits (1 s, then 3 s), the probe
    among them: the kernel's queue, not the daemon, would be measured. 1024 keeps the reserve
    (128) free with 561 connections open, so the probe never waits for an eviction either."""
    sanitized = os.environ.get("ARMPROFD_SANITIZED") == "1"
    with Daemon(config_text=BARRAGE_CONFIG) as d:
        d.wait_ready()
        # Warm-up: a few hundred ordinary requests, so that malloc's arenas, the buffers of
        # /metrics and /status and MHD's pools have all been used before the reference figure.
        for i in range(300):
            path, want = BARRAGE_PATHS[i % len(BARRAGE_PATHS)]
            assert d.get(path.decode())[0] == want, path
        time.sleep(1)
        rss_before = vm_rss_kib(d.proc.pid)
        b = run_barrage(d)
        time.sleep(3)
        rss_after = vm_rss_kib(d.proc.pid)
        open_after = sum(metric(d, "armprofd_http_connections", state=st)
                         for st in ("reading", "active", "waiting", "idle"))

        probes = b["probes"]
        failed = [p for p in probes if p[0] != 200]
        ms = sorted(p[2] * 1000 for p in probes)
        conn_ms = sorted(p[1] * 1000 for p in probes if p[1] is not None)
        print(f"barrage: {BARRAGE_CLIENTS} clients, {b['requests']} requests in {b['seconds']:.1f} s "
              f"({b['requests'] / b['seconds']:.0f}/s), {len(b['errors'])} errors; {BARRAGE_LORIS} slow-loris "
              f"clients, {b['loris_closed']} of their connections closed by the server")
        print(f"/healthz probes: {len(probes)}, {len(failed)} failed; latency median {quantile(ms, 0.5):.1f} ms, "
              f"p99 {quantile(ms, 0.99):.1f} ms, max {ms[-1]:.1f} ms (bound {PROBE_BOUND * 1000:.0f} ms); "
              f"of which connect() max {conn_ms[-1]:.1f} ms{' [ASan+UBSan build]' if sanitized else ''}")
        # Where the time went: on a shared machine other work delays the daemon's thread and the
        # probe on the run queue; the figures say so when the bound fails for that reason.
        sched = (f"the HTTP thread ran {b['http_run']:.2f} s and waited {b['http_wait']:.2f} s for a CPU, "
                 f"the probe waited {b['probe_wait']:.2f} s for one; load average {os.getloadavg()[0]:.1f} "
                 f"on {os.cpu_count()} CPUs")
        print(sched)
        print(f"VmRSS: {rss_before} KiB after warm-up, {b['peak_kib']} KiB at the peak, {rss_after} KiB 3 s "
              f"after the barrage ({rss_after - rss_before:+d} KiB, tolerance +{RSS_TOLERANCE_KIB} KiB); "
              f"{open_after:.0f} connections open after it (the metrics request's own)")
        assert not b["errors"], b["errors"][:10]
        assert d.proc.poll() is None, d.log()
        assert not failed, failed[:10]
        assert len(probes) >= BARRAGE_SECONDS / PROBE_INTERVAL / 2, len(probes)
        # A probe's latency is the daemon's less what the probe and the HTTP thread waited on a
        # run queue meanwhile (a loaded machine's, 178 ms once under two CPU hogs and a guest):
        # time the daemon spent serving the barrage, or blocked, still counts.
        over = [p for p in probes if p[2] >= PROBE_BOUND]
        slow = [(round(p[3] - probes[0][3], 2), round(p[2] * 1000, 1), round(p[4] * 1000, 1))
                for p in over if p[2] - p[4] >= PROBE_BOUND]
        print(f"{len(over)} probes over {PROBE_BOUND * 1000:.0f} ms, {len(over) - len(slow)} of them under it "
              f"less their run-queue waits: "
              f"{[(round(p[2] * 1000, 1), round(p[4] * 1000, 1)) for p in over[:10]]} (ms, ms waited)")
        assert not slow, (f"{len(slow)} probes over {PROBE_BOUND * 1000:.0f} ms less their run-queue waits "
                          "(seconds into the barrage, ms, ms waited)", slow[:10], sched)
        assert open_after == 1, open_after
        # Each connection's MHD memory pool (max_request_size + 256 x 64 + 4 KiB = 53 KiB) is
        # mmap()ed and unmapped when it closes, and the answers' buffers are freed, so the peak's
        # growth (~26 MiB for ~560 connections) must go. What may stay is what glibc's malloc
        # keeps for reuse in the HTTP thread's arena: measured +0.5 MiB after the first barrage
        # on a warm daemon and nothing more after a second and third (no growth per barrage,
        # so no leak). 4 MiB is eight times that, and under what a leak of 512 bytes per
        # request (~11 000 requests: 5.5 MiB) or of one pool per connection closed (~1000: 53
        # MiB) would add.
        if sanitized:
            # ASan's quarantine holds up to 256 MiB of freed memory and its allocator keeps its
            # size classes' pages: measured +190 MiB here, still +8 MiB and growing per barrage
            # with quarantine_size_mb=0. The figure is the sanitizer's, not the daemon's; on
            # this build LeakSanitizer, at the stop below, checks for leaks instead.
            print("VmRSS not asserted on the ASan build (its quarantine and allocator caches); "
                  "LeakSanitizer checks at the stop")
        else:
            assert rss_after <= rss_before + RSS_TOLERANCE_KIB, (rss_before, rss_after, b["peak_kib"])
        rc, took = d.stop(timeout=10)
        assert rc == 0, (rc, d.log()[-3000:])
        print(f"stopped cleanly in {took:.2f} s after the barrage")

TESTS = [test_query_parameters, test_request_size_limit, test_profile_pending_at_stop,
         test_idle_sockets_one_address, test_request_in_progress_kept, test_header_deadline, test_slow_loris,
         test_malformed_requests, test_bad_parameters, test_pipelined, test_slow_body,
         test_barrage]

if __name__ == "__main__":
    only = sys.argv[1:]
    for t in TESTS:
        if not only or t.__name__ in only:
            t()
