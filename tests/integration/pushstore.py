#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A loopback stand-in for Grafana Pyroscope's push endpoint, for the push tests.

It serves POST {base}/push.v1.PusherService/Push (Connect unary, the body a
serialized push.v1.PushRequest: Pyroscope's api/push/v1/push.proto and the
Connect protocol specification, "Unary-Request") on 127.0.0.1, over HTTP or
HTTPS, records every request (arrival time, the mode that answered it, headers,
body) and decodes what it was sent three ways that share no code:

  - protoc --decode=push.v1.PushRequest against the tree's proto/push.proto;
  - a protobuf wire reader written here (labels, sample IDs, raw profiles),
    which must agree with protoc's text;
  - each raw_profile with a pprof wire reader written here, checked against
    `go tool pprof -raw` (sample types, period type, every sample's values and
    labels) and protoc --decode=perftools.profiles.Profile (time_nanos,
    duration_nanos).

The test switches its answer at any time (set_mode):
  ok      200, empty body (an empty PushResponse)
  500     500 with a Connect JSON error body
  429     429 with Retry-After: N
  400     400 with {"code":"invalid_argument","message":"<a unique text>"}
  slow    read the body, keep it (stored: what a store behind a proxy that
          gave up does), answer 200 `delay` seconds later if the client
          still waits
  hang    read the body and answer nothing until the mode changes (then
          answer as the new mode says) or the client goes
  reset   read half the body, then close with RST (SO_LINGER {1, 0})
and down() closes the listening socket (connection refused) and the open
connections; up() listens again on the same port.

Optional checks: basic auth (user, password), a bearer token, X-Scope-OrgID;
a wrong or missing one is answered 401 (Connect "unauthenticated").

Run by hand: python3 pushstore.py --port 4040 [--mode ok] [--base /prefix]
prints a line per request. python3 pushstore.py --self-test checks the store
itself with a python client and curl (needs protoc, go, openssl, curl).
"""

import atexit
import base64
import gzip
import http.server
import io
import json
import os
import re
import select
import shutil
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

PUSH_PATH = "/push.v1.PusherService/Push"
MODES = ("ok", "500", "429", "400", "hang", "reset", "slow")

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("ARMPROFD_SOURCE_DIR", os.path.join(HERE, "..", ".."))

sys.path.insert(0, HERE)
from armprofd_test import read_varint  # noqa: E402  (the tests' one protobuf varint reader)

# The request messages as Pyroscope's api/push/v1/push.proto and api/types/v1/types.proto
# number them: used only when the tree has no proto/push.proto yet (the store's self-test).
FALLBACK_PUSH_PROTO = """syntax = "proto3";
package push.v1;
import "types/v1/types.proto";
message PushRequest { repeated RawProfileSeries series = 1; }
message RawProfileSeries { repeated types.v1.LabelPair labels = 1; repeated RawSample samples = 2; }
message RawSample { bytes raw_profile = 1; string ID = 2; }
"""
FALLBACK_TYPES_PROTO = """syntax = "proto3";
package types.v1;
message LabelPair { string name = 1; string value = 2; }
"""


# ---------------------------------------------------------------- protobuf wire format

def fields(buf):
    """(field number, wire type, value) of each field of a message: an int for
    varint/fixed, bytes for length-delimited (protobuf encoding guide, "Message Structure")."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = read_varint(buf, pos)
        elif wt == 1:
            v = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wt == 2:
            n, pos = read_varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("truncated length-delimited field")
            v = bytes(buf[pos:pos + n])
            pos += n
        elif wt == 5:
            v = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def ints(wt, v):
    """A repeated integer field's values, packed (wire type 2) or not."""
    if wt != 2:
        return [v]
    out, pos = [], 0
    while pos < len(v):
        x, pos = read_varint(v, pos)
        out.append(x)
    return out


def enc_varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def enc_field(num, value):
    """A field: ints as varints, bytes/str length-delimited."""
    if isinstance(value, int):
        return enc_varint(num << 3) + enc_varint(value)
    if isinstance(value, str):
        value = value.encode()
    return enc_varint(num << 3 | 2) + enc_varint(len(value)) + value


# ---------------------------------------------------------------- decoding

class DecodeError(AssertionError):
    pass


class Profile:
    """A pprof profile.proto as the wire reader saw it, checked against go tool pprof and protoc."""

    def __init__(self, raw):
        self.raw = raw
        self.gzipped = raw[:2] == b"\x1f\x8b"
        self.data = gzip.decompress(raw) if self.gzipped else raw
        strings, st, samples, locations, functions = [], [], [], [], []
        self.time_nanos = self.duration_nanos = self.period = 0
        pt = None
        for num, wt, v in fields(self.data):
            if num == 6:
                strings.append(v.decode())
            elif num == 1:
                st.append(self._vt(v))
            elif num == 11:
                pt = self._vt(v)
            elif num == 2:
                samples.append(v)
            elif num == 4:
                locations.append(v)
            elif num == 5:
                functions.append(v)
            elif num == 9:
                self.time_nanos = signed64(v)
            elif num == 10:
                self.duration_nanos = signed64(v)
            elif num == 12:
                self.period = signed64(v)
        s = lambda i: strings[i]  # noqa: E731
        self.strings = strings
        self.sample_types = [(s(t), s(u)) for t, u in st]
        self.period_type = (s(pt[0]), s(pt[1])) if pt else None
        # Function id -> name; location id -> (address, mapping id, [function names]) (profile.proto).
        self.functions = {}
        for b in functions:
            f = {n: v for n, _, v in fields(b)}
            self.functions[f.get(1, 0)] = s(f.get(2, 0))
        self.locations = {}
        for b in locations:
            loc, names = {}, []
            for n, wt, v in fields(b):
                if n == 4:
                    names.append(self.functions.get({m: x for m, _, x in fields(v)}.get(1, 0), ""))
                else:
                    loc[n] = v
            self.locations[loc.get(1, 0)] = (loc.get(3, 0), loc.get(2, 0), names)
        self.samples = []  # (values, {label: [values]}, location ids)
        for b in samples:
            values, labels, locs = [], {}, []
            for num, wt, v in fields(b):
                if num == 1:
                    locs += ints(wt, v)
                elif num == 2:
                    values += [signed64(x) for x in ints(wt, v)]
                elif num == 3:
                    lab = {n: x for n, _, x in fields(v)}
                    key = s(lab.get(1, 0))
                    val = s(lab[2]) if lab.get(2) else str(signed64(lab.get(3, 0)))
                    labels.setdefault(key, []).append(val)
            self.samples.append((values, labels, locs))

    @staticmethod
    def _vt(b):
        d = {n: v for n, _, v in fields(b)}
        return d.get(1, 0), d.get(2, 0)

    def total(self, type_name):
        """The sum of one sample type's values over all samples."""
        i = [t for t, _ in self.sample_types].index(type_name)
        return sum(v[i] for v, _, _ in self.samples)

    def label_values(self, key):
        return {x for _, labels, _ in self.samples for x in labels.get(key, [])}

    def label_keys(self):
        return {k for _, labels, _ in self.samples for k in labels}

    def check_protoc(self, proto_dir):
        """protoc decodes it with the tree's profile.proto and sees the same times and sample count."""
        r = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", f"--proto_path={proto_dir}",
                            os.path.join(proto_dir, "profile.proto")], input=self.data, capture_output=True)
        if r.returncode != 0:
            raise DecodeError(f"protoc cannot decode a raw_profile: {r.stderr.decode(errors='replace')}")
        text = r.stdout.decode()
        tn = re.search(r"^time_nanos: (-?\d+)$", text, re.M)
        dn = re.search(r"^duration_nanos: (-?\d+)$", text, re.M)
        got = (int(tn.group(1)) if tn else 0, int(dn.group(1)) if dn else 0)
        if got != (self.time_nanos, self.duration_nanos):
            raise DecodeError(f"protoc says time/duration {got}, the wire reader "
                              f"{(self.time_nanos, self.duration_nanos)}")
        n = len(re.findall(r"^sample \{$", text, re.M))
        if n != len(self.samples):
            raise DecodeError(f"protoc sees {n} samples, the wire reader {len(self.samples)}")

    def check_go(self, env, tmp):
        """go tool pprof -raw reads it and shows the same sample types, period type, and for every
        sample the same values and labels (pprof's profile.String(): values, then the labels sorted)."""
        path = os.path.join(tmp, f"p-{uuid.uuid4().hex}.pb.gz")
        with open(path, "wb") as f:
            f.write(self.raw)
        try:
            r = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-raw", path], capture_output=True,
                               text=True, env=env, timeout=120)
        finally:
            os.unlink(path)
        if r.returncode != 0:
            raise DecodeError(f"go tool pprof -raw failed: {r.stderr}")
        out = r.stdout
        m = re.search(r"^PeriodType: (\S+) (\S+)$", out, re.M)
        if (m.groups() if m else None) != self.period_type:
            raise DecodeError(f"pprof says period type {m and m.groups()}, the wire reader {self.period_type}")
        lines = out.split("Samples:\n", 1)[1].split("\nLocations", 1)[0].splitlines()
        types = [t.replace("[dflt]", "") for t in lines[0].split()]
        if types != [f"{t}/{u}" for t, u in self.sample_types]:
            raise DecodeError(f"pprof says sample types {types}, the wire reader {self.sample_types}")
        seen = []
        for line in lines[1:]:
            m = re.match(r"^\s+(-?\d+(?:\s+-?\d+)*): ", line)
            if m:
                seen.append(([int(x) for x in m.group(1).split()], {}))
            elif seen and line.strip():
                for k, v in re.findall(r"(\S+?):\[([^\]]*)\]", line):
                    seen[-1][1][k] = v.split(" ") if v else [""]
        # go tool pprof merges samples with the same stack and labels as it reads a profile (its driver
        # passes every source through profile.Merge): compare the values summed per label set.
        def sums(samples):
            out = {}
            for v, lab in samples:
                key = tuple(sorted((k, tuple(sorted(x))) for k, x in lab.items()))
                acc = out.setdefault(key, [0] * len(v))
                for i, x in enumerate(v):
                    acc[i] += x
            return out
        mine, theirs = sums((v, lab) for v, lab, _ in self.samples), sums(seen)
        if mine != theirs or len(seen) > len(self.samples) or (self.samples and not seen):
            raise DecodeError(f"pprof -raw and the wire reader disagree on the samples: {len(seen)} samples, "
                              f"{list(theirs.items())[:3]} vs {len(self.samples)}, {list(mine.items())[:3]}")


class Series:
    def __init__(self, buf):
        self.label_list, self.samples = [], []  # [(name, value)], [(ID, raw_profile bytes)]
        for num, _, v in fields(buf):
            if num == 1:
                d = {n: x for n, _, x in fields(v)}
                self.label_list.append((d.get(1, b"").decode(), d.get(2, b"").decode()))
            elif num == 2:
                d = {n: x for n, _, x in fields(v)}
                self.samples.append((d.get(2, b"").decode(), d.get(1, b"")))
        self.labels = dict(self.label_list)
        self.profiles = []  # Profile per sample, filled by Record.decode()

    @property
    def ids(self):
        return [i for i, _ in self.samples]


def protoc_push_text(proto_dir, body):
    r = subprocess.run(["protoc", "--decode=push.v1.PushRequest", f"--proto_path={proto_dir}",
                        os.path.join(proto_dir, "push.proto")], input=body, capture_output=True)
    if r.returncode != 0:
        raise DecodeError(f"protoc --decode=push.v1.PushRequest failed: {r.stderr.decode(errors='replace')}")
    return r.stdout.decode()


def unescape_c(s):
    """protoc's text format escapes (C-style) back to bytes."""
    return s.encode("latin-1").decode("unicode_escape").encode("latin-1")


class Record:
    """One request as it arrived and as it was answered."""

    def __init__(self, t, method, path, headers, peer):
        self.t = t                  # arrival (time.time()) of the request line and headers
        self.method, self.path = method, path
        self.headers = headers      # {lower-case name: value}
        self.peer = peer
        self.body = None            # bytes, when read whole
        self.mode = None            # the mode that answered
        self.status = None          # the HTTP status sent, None if none was
        self.stored = False         # the store kept it (answered 200, or read whole in mode slow)
        self.answered_at = None
        self.series = None          # [Series] once decoded
        self.checked = self.go_checked = False

    def __repr__(self):
        return f"<Record {self.method} {self.path} t={self.t:.3f} mode={self.mode} status={self.status}>"

    @property
    def ids(self):
        return [i for s in self.decode_wire() for i in s.ids]

    def payload(self):
        if self.headers.get("content-encoding", "identity") == "gzip":
            return gzip.decompress(self.body)
        return self.body

    def decode_wire(self):
        if self.series is None:
            self.series = [Series(v) for n, _, v in fields(self.payload()) if n == 1]
        return self.series

    def _check_protoc(self, store, series):
        text = protoc_push_text(store.proto_dir, self.payload())
        names = [unescape_c(x).decode() for x in re.findall(r'^\s+name: "((?:[^"\\]|\\.)*)"$', text, re.M)]
        values = [unescape_c(x).decode() for x in re.findall(r'^\s+value: "((?:[^"\\]|\\.)*)"$', text, re.M)]
        ids = re.findall(r'^\s+ID: "((?:[^"\\]|\\.)*)"$', text, re.M)
        mine = [lv for s in series for lv in s.label_list]
        # protoc leaves out a proto3 string field equal to "": compare what it printed.
        if names != [n for n, _ in mine if n] or values != [v for _, v in mine if v]:
            raise DecodeError(f"protoc's labels {list(zip(names, values))} differ from the wire reader's {mine}")
        if ids != self.ids:
            raise DecodeError(f"protoc's IDs {ids} differ from the wire reader's {self.ids}")
        if text.count("series {") != len(series):
            raise DecodeError(f"protoc sees {text.count('series {')} series, the wire reader {len(series)}")

    def decode(self, store, go=True):
        """Decode everything: protoc and the wire reader agree; each raw_profile is a pprof that
        go tool pprof (go=True) and protoc read as the wire reader does. Returns [Series]."""
        series = self.decode_wire()
        if not self.checked:
            self._check_protoc(store, series)
            for s in series:
                for _, raw in s.samples:
                    p = Profile(raw)
                    p.check_protoc(store.profile_proto_dir)
                    s.profiles.append(p)
            self.checked = True
        if go and store.go_env and not self.go_checked:
            for s in series:
                for p in s.profiles:
                    p.check_go(store.go_env, store.tmp)
            self.go_checked = True
        return series


# ---------------------------------------------------------------- the server

class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def handle_error(self, request, client_address):
        # A client that goes mid-request or refuses our certificate is what the tests make happen.
        if self.RequestHandlerClass.store.verbose:
            super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store = None  # set per server class
    status_sent = None  # the status of the answer whose status line went out, per request

    def log_message(self, fmt, *args):
        if self.store.verbose:
            sys.stderr.write("pushstore: " + fmt % args + "\n")

    def setup(self):
        st = self.store
        if st.tls_context is not None:
            try:
                self.request.do_handshake()
            except (ssl.SSLError, OSError) as e:
                with st.lock:
                    st.tls_failures.append(str(e))
                raise
        super().setup()
        with st.lock:
            st.connections.add(self.connection)

    def finish(self):
        with self.store.lock:
            self.store.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def do_GET(self):
        self._answer_plain(404, b"only POST " + PUSH_PATH.encode() + b"\n")

    def _answer_plain(self, code, body, ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        # The status line is with the client now: a write failing after it (down() shutting the
        # connection while this thread waited for a CPU) does not unsay it.
        self.status_sent = code
        self.wfile.write(body)
        self.wfile.flush()

    def _connect_error(self, code, connect_code, message, extra=()):
        body = json.dumps({"code": connect_code, "message": message}).encode()
        self._answer_plain(code, body, "application/json", extra)

    def _read(self, n):
        out = bytearray()
        while len(out) < n:
            b = self.rfile.read(n - len(out))
            if not b:
                break
            out += b
        return bytes(out)

    def _read_body(self, rec):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self._read(n)
                self.rfile.readline()
        return self._read(int(self.headers.get("Content-Length", "0")))

    def _client_gone(self):
        """The client closed its end (EOF) or reset it: nothing more to wait for."""
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            if not r:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _reset(self, rec):
        """Close with RST: SO_LINGER {on, 0 s} makes close() abort the connection (socket(7))."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        for f in (self.rfile, self.wfile):
            try:
                f.close()
            except OSError:
                pass
        try:
            # Python's SSLSocket.close() sends no close_notify: the RST is the first thing the client sees.
            self.connection.close()
        except OSError:
            pass
        # BaseHTTPRequestHandler flushes wfile after do_POST: give it something harmless to flush.
        self.rfile, self.wfile = io.BytesIO(), io.BytesIO()

    def do_POST(self):
        st = self.store
        rec = Record(time.time(), "POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                     self.client_address)
        self.status_sent = None
        with st.lock:
            st.records.append(rec)
            mode = st.mode
        if self.path != st.base + PUSH_PATH:
            rec.body = self._read_body(rec)
            rec.mode, rec.status = "404", 404
            self._connect_error(404, "unimplemented", f"no such procedure {self.path}")
            return
        if mode == "reset":
            half = int(self.headers.get("Content-Length", "0")) // 2
            self._read(half)
            rec.mode, rec.answered_at = "reset", time.time()
            self._reset(rec)
            st._notify()
            return
        rec.body = self._read_body(rec)
        while mode == "hang":
            with st.cond:
                st.cond.wait(0.05)
                mode = st.mode
            if mode == "hang" and self._client_gone():
                rec.mode, rec.answered_at = "hang", time.time()
                self.close_connection = True
                st._notify()
                return
        if mode == "slow":
            # Stored whether or not the client waits for the answer; answered after the delay.
            rec.stored = True
            time.sleep(st.delay)
        if mode == "reset":  # changed while hanging
            rec.mode, rec.answered_at = "reset", time.time()
            self._reset(rec)
            st._notify()
            return
        rec.mode = mode
        denied = st._auth_error(rec.headers)
        try:
            if denied:
                rec.status = 401
                self._connect_error(401, "unauthenticated", denied)
            elif mode in ("ok", "slow"):
                rec.status, rec.stored = 200, True
                self._answer_plain(200, b"", "application/proto")
            elif mode == "500":
                rec.status = 500
                self._connect_error(500, "internal", "pushstore: told to fail")
            elif mode == "429":
                rec.status = 429
                self._connect_error(429, "resource_exhausted", "pushstore: rate limited",
                                    [("Retry-After", str(st.retry_after))])
            elif mode == "400":
                rec.status = 400
                self._connect_error(400, "invalid_argument", st.message)
        except OSError:
            if self.status_sent is None:
                rec.status = None  # the client went before the answer
        rec.answered_at = time.time()
        st._notify()


class PushStore:
    """The loopback store: start() it, point the daemon at .url, switch modes, read .records."""

    def __init__(self, base="", tls=None, basic=None, bearer=None, tenant=None, proto_dir=None, go=True,
                 verbose=False):
        self.base = base.rstrip("/")
        self.tls = tls                  # (certfile, keyfile) or None
        self.basic, self.bearer, self.tenant = basic, bearer, tenant
        self.verbose = verbose
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.records = []
        self.connections = set()
        self.tls_failures = []
        self.mode = "ok"
        self.retry_after = 1
        self.delay = 0.0
        self.message = ""
        self.server = self.thread = None
        self.port = 0
        self.tmp = tempfile.mkdtemp(prefix="pushstore-")
        atexit.register(shutil.rmtree, self.tmp, True)
        self.proto_dir = proto_dir or self._proto_dir()
        self.profile_proto_dir = os.path.join(SOURCE, "proto")
        self.go_env = None
        if go and shutil.which("go"):
            home = os.path.join(self.tmp, "home")
            os.makedirs(home, exist_ok=True)
            # Offline and self-contained, as tests/exporters/test-pprof-tools.py runs go.
            self.go_env = dict(os.environ, HOME=home, GOCACHE=os.path.join(self.tmp, "gocache"),
                               PPROF_TMPDIR=home, GOTOOLCHAIN="local", GOFLAGS="")
        self.tls_context = None
        if tls:
            self.tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls_context.load_cert_chain(*tls)

    def _proto_dir(self):
        src = os.path.join(SOURCE, "proto")
        if os.path.exists(os.path.join(src, "push.proto")):
            return src
        d = os.path.join(self.tmp, "proto")
        os.makedirs(os.path.join(d, "types", "v1"), exist_ok=True)
        with open(os.path.join(d, "push.proto"), "w") as f:
            f.write(FALLBACK_PUSH_PROTO)
        with open(os.path.join(d, "types", "v1", "types.proto"), "w") as f:
            f.write(FALLBACK_TYPES_PROTO)
        return d

    # -- life

    def start(self, port=0):
        self._listen(port)
        return self

    def _listen(self, port):
        handler = type("Handler", (_Handler,), {"store": self})
        self.server = _Server(("127.0.0.1", port), handler, bind_and_activate=True)
        if self.tls_context is not None:
            self.server.socket = self.tls_context.wrap_socket(self.server.socket, server_side=True,
                                                              do_handshake_on_connect=False)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{self.base}"

    def down(self):
        """Connection refused from now on: the listening socket and every open connection closed."""
        if self.server is None:
            return
        self.server.shutdown()
        self.server.server_close()
        self.server = None
        with self.lock:
            conns = list(self.connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join()

    def up(self):
        if self.server is None:
            self._listen(self.port)

    def close(self):
        """Stop serving; what was recorded can still be decoded (the temp dir goes at exit)."""
        self.set_mode("ok")
        self.down()

    def __enter__(self):
        return self if self.server is not None else self.start()

    def __exit__(self, *exc):
        self.close()

    # -- answers

    def set_mode(self, mode, retry_after=None, message=None, delay=None):
        if mode == "down":
            self.down()
            return
        assert mode in MODES, mode
        self.up()
        with self.cond:
            self.mode = mode
            if retry_after is not None:
                self.retry_after = retry_after
            if delay is not None:
                self.delay = delay
            if mode == "400":
                self.message = message or f"pushstore refuses this: {uuid.uuid4().hex}"
            self.cond.notify_all()

    def _auth_error(self, h):
        if self.basic:
            want = "Basic " + base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
            if h.get("authorization") != want:
                return "pushstore: wrong or missing basic credentials"
        if self.bearer and h.get("authorization") != f"Bearer {self.bearer}":
            return "pushstore: wrong or missing bearer token"
        if self.tenant and h.get("x-scope-orgid") != self.tenant:
            return "pushstore: wrong or missing X-Scope-OrgID"
        return None

    def _notify(self):
        with self.cond:
            self.cond.notify_all()

    # -- what arrived

    def snapshot(self):
        with self.lock:
            return list(self.records)

    def pushes(self):
        """Requests to the push path, in arrival order."""
        return [r for r in self.snapshot() if r.path == self.base + PUSH_PATH]

    def stored(self):
        """{ID: times stored}: what a store that keeps each request it reads holds."""
        out = {}
        for r in self.pushes():
            if r.stored:
                for i in r.ids:
                    out[i] = out.get(i, 0) + 1
        return out

    def delivered(self):
        """Requests answered 200, in arrival order."""
        return [r for r in self.pushes() if r.status == 200]

    def ids_in_order(self):
        """Sample IDs of the delivered requests, in arrival order (a duplicate appears twice)."""
        return [i for r in self.delivered() for i in r.ids]

    def duplicates(self):
        """IDs answered 200 more than once."""
        seen, dup = set(), []
        for i in self.ids_in_order():
            if i in seen:
                dup.append(i)
            seen.add(i)
        return dup

    def wait_for(self, pred, timeout, what=None, step=0.05):
        """Until pred() is true (its value is returned); AssertionError after timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            v = pred()
            if v:
                return v
            if time.monotonic() > deadline:
                raise AssertionError(f"pushstore: {what or pred} not true within {timeout}s; "
                                     f"requests: {self.snapshot()}")
            with self.cond:
                self.cond.wait(step)


# ---------------------------------------------------------------- TLS material

def make_certs(tmp):
    """A throwaway CA, a server certificate it signs for IP:127.0.0.1, and a second CA that signed
    nothing: {"ca", "cert", "key", "other_ca"} (PEM paths)."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp)
    for name in ("ca", "other_ca"):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN=armprofd test {name}",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key",
        "-out", "server.csr")
    with open(os.path.join(tmp, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem")
    return {k: os.path.join(tmp, v) for k, v in
            (("ca", "ca.pem"), ("cert", "server.pem"), ("key", "server.key"), ("other_ca", "other_ca.pem"))}


# ---------------------------------------------------------------- a client, for the self-test

def make_pprof(values, labels=(), time_nanos=0, duration_nanos=0):
    """A gzipped pprof with sample types samples/count, cpu/nanoseconds: one location per sample."""
    strings = ["", "samples", "count", "cpu", "nanoseconds", "f", "service"]

    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)
    out = bytearray()
    for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
        out += enc_field(1, enc_field(1, s(t)) + enc_field(2, s(u)))
    for i, (v, lab) in enumerate(zip(values, list(labels) + [None] * len(values))):
        b = enc_field(1, 1 + i)
        b += enc_field(2, v) + enc_field(2, v * 10_000_000)
        if lab:
            b += enc_field(3, enc_field(1, s("service")) + enc_field(2, s(lab)))
        out += enc_field(2, b)
    out += enc_field(5, enc_field(1, 1) + enc_field(2, s("f")))
    for i in range(len(values)):
        out += enc_field(4, enc_field(1, 1 + i) + enc_field(3, 0x1000 + 4 * i) +
                         enc_field(4, enc_field(1, 1)))
    for x in strings:
        out += enc_field(6, x)
    out += enc_field(9, time_nanos) + enc_field(10, duration_nanos)
    out += enc_field(11, enc_field(1, s("cpu")) + enc_field(2, s("nanoseconds")))
    out += enc_field(12, 10_000_000)
    return gzip.compress(bytes(out))


def make_push(series):
    """A PushRequest: series = [([(name, value)], [(ID, raw_profile)])]."""
    out = bytearray()
    for labels, samples in series:
        b = b"".join(enc_field(1, enc_field(1, n) + enc_field(2, v)) for n, v in labels)
        b += b"".join(enc_field(2, enc_field(1, raw) + enc_field(2, i)) for i, raw in samples)
        out += enc_field(1, b)
    return bytes(out)


def self_test():
    for tool in ("protoc", "go", "openssl", "curl"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} not installed")
            return 77
    import http.client
    failures = []

    def check(cond, msg):
        print(("ok    " if cond else "FAIL  ") + msg)
        if not cond:
            failures.append(msg)

    def post(store, body, timeout=5.0, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", store.port, timeout=timeout)
        try:
            c.request("POST", store.base + PUSH_PATH, body=body,
                      headers=dict({"Content-Type": "application/proto", "Connect-Protocol-Version": "1"},
                                   **(headers or {})))
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    tnow = time.time_ns()
    body = make_push([([("__name__", "process_cpu"), ("service_name", "svc"), ("__delta__", "false")],
                       [("id-1", make_pprof([3, 4], ["a.service", None], tnow, 10**9)),
                        ("id-2", make_pprof([5], [], tnow, 10**9))])])
    with PushStore(base="/prefix") as st:
        st_, _, b = post(st, body)
        check(st_ == 200 and b == b"", f"ok: 200 with an empty body ({st_}, {b!r})")
        rec = st.delivered()[0]
        series = rec.decode(st)
        check(series[0].labels == {"__name__": "process_cpu", "service_name": "svc", "__delta__": "false"},
              f"labels decoded: {series[0].labels}")
        p = series[0].profiles[0]
        check(p.total("samples") == 7 and p.total("cpu") == 70_000_000,
              f"profile totals 7 samples, 70 ms: {p.total('samples')}, {p.total('cpu')}")
        check(p.label_values("service") == {"a.service"}, f"sample labels: {p.label_values('service')}")
        check(p.time_nanos == tnow and p.duration_nanos == 10**9, "time_nanos, duration_nanos")
        check(p.sample_types == [("samples", "count"), ("cpu", "nanoseconds")] and
              p.period_type == ("cpu", "nanoseconds"), f"types {p.sample_types} {p.period_type}")
        check(rec.headers.get("content-type") == "application/proto", "headers recorded")
        # The decoders disagree on a profile go cannot read: a corrupted one fails decode().
        bad = make_push([([("__name__", "x")], [("id-3", gzip.compress(b"\x0a\x05garbage"))])])
        post(st, bad)
        try:
            st.delivered()[-1].decode(st)
            check(False, "a corrupted raw_profile fails to decode")
        except (DecodeError, ValueError, IndexError) as e:
            check(True, f"a corrupted raw_profile fails to decode ({str(e)[:60]})")

        st.set_mode("500")
        check(post(st, body)[0] == 500, "500")
        st.set_mode("429", retry_after=7)
        s, h, _ = post(st, body)
        check(s == 429 and h.get("Retry-After") == "7", f"429 with Retry-After: 7 ({s}, {h.get('Retry-After')})")
        st.set_mode("400")
        s, _, b = post(st, body)
        check(s == 400 and json.loads(b) == {"code": "invalid_argument", "message": st.message},
              f"400 with the unique message ({b!r})")
        st.set_mode("reset")
        try:
            post(st, body)
            check(False, "reset: the client sees the connection reset")
        except (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError) as e:
            check(True, f"reset: the client sees {type(e).__name__}")
        # curl sees the reset as its error 55/56 (send/recv failure), not as an answer.
        with open(os.path.join(st.tmp, "body"), "wb") as f:
            f.write(body * 200)
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary",
                            "@" + os.path.join(st.tmp, "body"), "-H", "Content-Type: application/proto",
                            st.url + PUSH_PATH], capture_output=True, text=True)
        check(r.returncode in (52, 55, 56), f"reset: curl exits {r.returncode} ({r.stderr.strip()})")
        st.set_mode("hang")
        t0 = time.monotonic()
        try:
            post(st, body, timeout=0.5)
            check(False, "hang: no answer")
        except socket.timeout:
            check(True, f"hang: no answer within the client's timeout ({time.monotonic() - t0:.1f}s)")
        st.wait_for(lambda: st.pushes()[-1].mode == "hang", 5, "the hung request seen as abandoned")
        # A hung request is answered by the mode it changes to.
        box = {}
        th = threading.Thread(target=lambda: box.setdefault("r", post(st, body, timeout=10)))
        th.start()
        st.wait_for(lambda: len(st.pushes()) >= 9 and st.pushes()[-1].body is not None, 5, "the hang read")
        st.set_mode("ok")
        th.join()
        check(box["r"][0] == 200, "hang then ok: answered 200")
        st.set_mode("down")
        try:
            post(st, body, timeout=1)
            check(False, "down: refused")
        except ConnectionRefusedError:
            check(True, "down: connection refused")
        st.set_mode("ok")
        check(post(st, body)[0] == 200, f"up again on port {st.port}")
        check(st.duplicates() == ["id-1", "id-2", "id-1", "id-2"],
              f"IDs delivered twice are reported: {st.duplicates()}")
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "x",
                            f"http://127.0.0.1:{st.port}/push.v1.PusherService/Push"], capture_output=True, text=True)
        check(r.stdout == "404", f"outside the base prefix: 404 ({r.stdout})")

    with tempfile.TemporaryDirectory(prefix="pushstore-tls-") as tmp:
        certs = make_certs(tmp)
        with open(os.path.join(tmp, "body"), "wb") as f:
            f.write(body)
        with PushStore(tls=(certs["cert"], certs["key"]), basic=("u", "p4ss"), tenant="team-a") as st:
            def curl(*args):
                return subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary",
                                       "@" + os.path.join(tmp, "body"), *args, st.url + PUSH_PATH],
                                      capture_output=True, text=True)
            r = curl("--cacert", certs["ca"], "-u", "u:p4ss", "-H", "X-Scope-OrgID: team-a")
            check(r.stdout == "200", f"TLS with the test CA, basic auth, tenant: {r.stdout} {r.stderr}")
            r = curl("--cacert", certs["ca"], "-u", "u:wrong", "-H", "X-Scope-OrgID: team-a")
            check(r.stdout == "401", f"wrong password: 401 ({r.stdout})")
            r = curl("--cacert", certs["ca"], "-u", "u:p4ss")
            check(r.stdout == "401", f"no tenant: 401 ({r.stdout})")
            r = curl("--cacert", certs["other_ca"], "-u", "u:p4ss", "-H", "X-Scope-OrgID: team-a")
            check(r.returncode == 60, f"the wrong CA: curl refuses the certificate ({r.returncode})")
            st.wait_for(lambda: st.tls_failures, 5, "the failed handshake recorded")
            check(len(st.delivered()) == 1, f"one delivered over TLS ({len(st.delivered())})")
        with PushStore(bearer="t0ken") as st:
            r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "x",
                                "-H", "Authorization: Bearer t0ken", st.url + PUSH_PATH],
                               capture_output=True, text=True)
            check(r.stdout == "200", f"bearer token: {r.stdout}")
    print("FAILED: " + "; ".join(failures) if failures else "OK")
    return 1 if failures else 0


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="ok", choices=MODES)
    ap.add_argument("--base", default="")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    st = PushStore(base=a.base, tls=(a.tls_cert, a.tls_key) if a.tls_cert else None, go=False)
    st.start(a.port)
    st.set_mode(a.mode)
    print(f"pushstore listening: {st.url}{PUSH_PATH}", flush=True)
    done = 0
    try:
        while True:
            time.sleep(0.2)
            recs = st.snapshot()
            for r in recs[done:]:
                if r.answered_at is None and r.mode is None:
                    break
                line = f"{time.strftime('%H:%M:%S', time.localtime(r.t))} {r.path} {r.mode} {r.status}"
                if r.status == 200:
                    try:
                        for s in r.decode(st, go=False):
                            line += f"\n  {s.labels} {len(s.samples)} sample(s): " + ", ".join(
                                f"{i} ({len(p.samples)} samples)" for i, p in zip(s.ids, s.profiles))
                    except (AssertionError, ValueError) as e:
                        line += f"\n  cannot decode: {e}"
                print(line, flush=True)
                done += 1
    except KeyboardInterrupt:
        st.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
