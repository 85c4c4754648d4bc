#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The PushRequest exporters/push-request.c writes, read by protoc against our
proto/push.proto (`protoc --decode=push.v1.PushRequest`): two series in order,
each with the labels, raw profile bytes and IDs that test-push-request.c
--write put in (the expected values are written out here, not read from the
code under test).

Usage: test-push-request.py TEST-PUSH-REQUEST
Exits 77 without protoc."""

import codecs
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

WANT = [
    {
        "labels": [("__name__", "process_cpu"), ("__delta__", "false"), ("service_name", "web"),
                   ("host", "h1"), ("env", "\u00e9t\u00e9")],
        "samples": [(b"first", "7d3c1f8e-3b1a-4c6e-9a52-0f4e8b2d6a10"),
                    (b"second", "0b6f0a4e-2d5c-4e1f-8b7a-93c2d1e0f5a4")],
    },
    {
        "labels": [("__name__", "spe")],
        "samples": [(b"second", "c0ffee00-0000-4000-8000-000000000001")],
    },
]


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def unquote(s):
    """A protobuf text-format string literal ("..." with C escapes) as bytes."""
    if len(s) < 2 or s[0] != '"' or s[-1] != '"':
        fail(f"not a string literal: {s}")
    return codecs.escape_decode(s[1:-1].encode("ascii"))[0]


def parse(text):
    """protoc's text format of a PushRequest as [{labels: [(name, value)], samples: [(raw, id)]}]."""
    series, stack, cur = [], [], {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            block = line[:-1].strip()
            stack.append(block)
            if block == "series":
                series.append({"labels": [], "samples": []})
            cur = {}
        elif line == "}":
            block = stack.pop()
            if block == "labels":
                series[-1]["labels"].append((cur["name"].decode(), cur.get("value", b"").decode()))
            elif block == "samples":
                series[-1]["samples"].append((cur.get("raw_profile", b""), cur["ID"].decode()))
            cur = {}
        else:
            m = re.fullmatch(r"(\w+): (\".*\")", line)
            if not m:
                fail(f"unexpected line in protoc's output: {line}")
            cur[m.group(1)] = unquote(m.group(2))
    if stack:
        fail(f"unbalanced braces in protoc's output: {stack}")
    return series


def main():
    if len(sys.argv) != 2:
        fail(__doc__)
    if not shutil.which("protoc"):
        print("SKIP: protoc not found (Debian: protobuf-compiler)")
        sys.exit(SKIP)
    proto_dir = os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "proto")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "request.pb")
        r = subprocess.run([sys.argv[1], "--write", path], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"test-push-request --write: {r.stderr}")
        with open(path, "rb") as f:
            raw = f.read()
    r = subprocess.run(["protoc", "--decode=push.v1.PushRequest", f"--proto_path={proto_dir}", "push.proto"],
                       input=raw, capture_output=True)
    if r.returncode != 0:
        fail(f"protoc --decode failed: {r.stderr.decode(errors='replace')}")
    text = r.stdout.decode()
    got = parse(text)
    print(f"protoc: {len(raw)} bytes, {len(got)} series, "
          f"{sum(len(s['samples']) for s in got)} samples")
    if got != WANT:
        fail(f"protoc shows\n{got}\nwant\n{WANT}\nprotoc's text:\n{text}")
    print("ok: labels, raw profiles and IDs as written")


if __name__ == "__main__":
    main()
