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
        assert (status, err["error"]) == (400, "unknown parameter 'bogus' (known: window, limit, pid)"), err
        status, err = get_json("/hotlines?limit")
        assert status == 400 and "'limit'" in err["error"], err
        status, err = get_json("/hotlines?=5")
        assert (status, err["error"]) == (400, "unknown parameter '' (known: window, limit, pid)"), err
    print("repeated parameters refused by name, empty pairs ignored")


TESTS = [test_query_parameters]

if __name__ == "__main__":
    only = sys.argv[1:]
    for t in TESTS:
        if not only or t.__name__ in only:
            t()
