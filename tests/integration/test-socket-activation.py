#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Under systemd-socket-activate, armprofd serves on the socket it is handed."""

import json
import os
import shutil
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, free_port, skip  # noqa: E402

activate = shutil.which("systemd-socket-activate")
if not activate:
    skip("systemd-socket-activate not installed (Debian package 'systemd')")

port = free_port()
# The config asks for another port: the passed socket must win.
with Daemon(config_text="[http]\nlisten = 127.0.0.1:1\n", listen=None,
            cmd_prefix=[activate, "-l", f"127.0.0.1:{port}"]) as d:
    d.wait_log(r"Listening on 127.0.0.1:%d" % port)
    # systemd-socket-activate starts the service on the first connection, as systemd would.
    poke = socket.create_connection(("127.0.0.1", port), timeout=5)
    m = d.wait_log(r"Serving on (\S+) \(socket activation\)")
    poke.close()
    assert m.group(1) == f"127.0.0.1:{port}", d.log()
    d.wait_ready()
    assert d.port == port
    status, _, body = d.get("/status")
    assert status == 200, status
    assert json.loads(body)["listen"] == f"127.0.0.1:{port}"
    assert d.get("/metrics")[0] == 200
    rc, took = d.stop()
    assert rc == 0, (rc, d.log())
print(f"served on the activated socket 127.0.0.1:{port}")
