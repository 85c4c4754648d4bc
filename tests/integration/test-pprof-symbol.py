#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""go tool pprof against a live daemon's CPU profile with the README's own
commands and no -symbolize flag (root: the cpu-clock sampler; skips
otherwise), while tests/sampler's spin runs and a copy of it (another build
id) whose file was deleted once it started runs beside it: that copy's
mapping cannot be read,
so pprof symbolizes it itself, fails (the file is gone), and posts its
addresses to /debug/pprof/symbol, which answered 405 and failed the command.

  - go tool pprof -top 'http://HOST:PORT/debug/pprof/profile?seconds=5'
    exits 0 and names inner_spin, and the daemon counted the POST to
    /debug/pprof/symbol it answered (200);
  - go tool pprof -http=HOST:PORT -no_browser URL serves its UI, whose top
    page lists inner_spin;
  - /debug/pprof/symbol itself, as Go's net/http/pprof: GET says
    "num_symbols: 1"; a POST of inner_spin's address in the live spin (its
    value from nm, placed by /proc/PID/maps: nothing the daemon computed)
    is answered with its name, and addresses it cannot know (nothing mapped
    there, the deleted copy's code, a kernel function) get no line;
  - with [privacy] kernel_addresses = yes a kernel function's address is
    named as /proc/kallsyms names it (skipped, saying why, when kallsyms
    shows no addresses).
"""

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, check, failures, go_env, need_cpu_sampling, need_go, parse_prom_text  # noqa: E402

need_cpu_sampling()
go = need_go()

BUILD = os.environ["ARMPROFD_BUILD_DIR"]
SPIN = os.path.join(BUILD, "tests", "sampler", "spin-nofp")
CPU = 1 if os.cpu_count() > 1 else 0
# The README's configuration for a host without SPE: the sampler at its defaults, 10 s epochs.
CONFIG = "[pmu]\nenable = no\n[spe]\nenable = no\n"

tmp = tempfile.mkdtemp(prefix="armprofd-pprof-symbol-")
env = go_env(tmp)



def spin(path, seconds):
    p = subprocess.Popen([path, str(seconds), str(CPU)], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("ready "), line
    return p


def load_offset(path, vaddr):
    """The file offset of ELF virtual address vaddr: its PT_LOAD's p_offset + (vaddr - p_vaddr), by readelf."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r"^\s+LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\S+\s+(0x[0-9a-f]+)", out, re.M):
        off, va, size = (int(x, 16) for x in m.groups())
        if va <= vaddr < va + size:
            return off + vaddr - va
    raise AssertionError(f"no PT_LOAD of {path} holds {vaddr:#x}")


def runtime_address(pid, elf, func, mapped=None):
    """Where func of elf runs in process pid (which mapped it as `mapped`, elf's own path by default): nm's
    value, placed by the mapping /proc/PID/maps shows."""
    out = subprocess.run(["nm", elf], capture_output=True, text=True, check=True).stdout
    vaddr = int(re.search(rf"^([0-9a-f]+) T {func}$", out, re.M).group(1), 16)
    off = load_offset(elf, vaddr)
    real = os.path.realpath(mapped or elf)
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) < 6 or fields[5].strip().removesuffix(" (deleted)") != real:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            moff = int(fields[2], 16)
            if moff <= off < moff + (end - start):
                return start + off - moff
    raise AssertionError(f"{func} of {elf} is in no mapping of {pid}")


def kernel_function():
    """A text symbol of /proc/kallsyms alone at its address: (address, name), or None without addresses."""
    by_addr = {}
    with open("/proc/kallsyms") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tT" and len(parts) == 3:
                by_addr.setdefault(int(parts[0], 16), []).append(parts[2])
    for want in ("schedule", "do_sys_open", "vfs_read"):
        for addr, names in by_addr.items():
            if names == [want] and addr:
                return addr, want
    return None


def symbol_posts(d):
    s = parse_prom_text(d.get("/metrics")[2].decode())
    return s.get(("armprofd_http_requests_total", frozenset({("handler", "pprof_symbol"), ("code", "200")})), 0)


def post_symbols(d, addrs):
    """What pprof's symbolz sends: "%#x" addresses joined by '+', as application/octet-stream."""
    c = http.client.HTTPConnection(d.host, d.port, timeout=10)
    try:
        c.request("POST", "/debug/pprof/symbol", body="+".join(f"{a:#x}" for a in addrs).encode(),
                  headers={"Content-Type": "application/octet-stream"})
        r = c.getresponse()
        st, ctype, body = r.status, r.getheader("Content-Type"), r.read()
    finally:
        c.close()
    assert st == 200, (st, body[:300])
    assert ctype == "text/plain; charset=utf-8", ctype
    lines = body.decode().splitlines()
    assert lines[0] == "num_symbols: 1", lines
    return {int(l.split()[0], 16): l.split(None, 1)[1] for l in lines[1:]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_sampling(d):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st, _, body = d.get("/status")
        if any(c["name"] == "sampler" and c["up"] for c in json.loads(body)["collectors"]):
            return
        time.sleep(0.2)
    raise AssertionError(f"the sampler never came up\n{d.log()}")


def another_build(src, dst):
    """A copy of src with one byte of its build id changed: pprof merges the mappings of one build id
    (profile.Merge), which would fold the copy's mapping into src's."""
    note = subprocess.run(["readelf", "-n", src], capture_output=True, text=True, check=True).stdout
    build_id = bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", note).group(1))
    image = bytearray(open(src, "rb").read())
    at = image.find(build_id)
    assert at > 0 and image.count(build_id) == 1, at
    image[at] ^= 0xff
    with open(dst, "wb") as f:
        f.write(image)
    os.chmod(dst, 0o755)


procs = []
try:
    gone = os.path.join(tmp, "spin-gone")
    another_build(SPIN, gone)
    with Daemon(config_text=CONFIG) as d:
        d.wait_serving()
        wait_sampling(d)
        procs.append(spin(SPIN, 60))
        procs.append(spin(gone, 60))
        # Started, so mapped (the kernel's MMAP2 names the path): now nobody can read its symbols.
        os.unlink(gone)
        url = f"http://{d.host}:{d.port}/debug/pprof/profile?seconds=5"

        # The README's command, exactly.
        r = subprocess.run([go, "tool", "pprof", "-top", url], capture_output=True, text=True, env=env, timeout=120)
        check(r.returncode == 0 and re.search(r"\binner_spin\b", r.stdout) is not None,
              f"go tool pprof -top '{url}': exit {r.returncode}, inner_spin "
              f"{'in' if 'inner_spin' in r.stdout else 'not in'} its output; {r.stderr.strip()[-400:]}")
        # A status, not digits of a port, a pid or a build id (":40575" once failed this).
        check(re.search(r"(?<![\w:./-])405(?![\w])", r.stderr) is None,
              f"no 405 from /debug/pprof/symbol: {r.stderr.strip()[-200:]}")
        posts = symbol_posts(d)
        if not check(posts >= 1, f"pprof posted the deleted copy's addresses to /debug/pprof/symbol "
                                 f"({posts} answered 200)"):
            saved = re.search(r"Saved profile in (\S+)", r.stderr)
            if saved:
                raw = subprocess.run([go, "tool", "pprof", "-symbolize=none", "-raw", saved.group(1)],
                                     capture_output=True, text=True, env=env).stdout
                print("the profile's mappings:\n" + raw.split("Mappings", 1)[-1][:3000])
                print(f"the deleted copy's samples (pid {procs[1].pid}):\n" +
                      "\n".join(l for l in raw.split("Locations", 1)[0].splitlines()
                                if f"pid:[{procs[1].pid}]" in l)[:2000])
                print("locations:\n" + raw.split("Locations", 1)[-1].split("Mappings", 1)[0][:1500])

        # The endpoint itself.
        st, headers, body = d.get("/debug/pprof/symbol")
        check(st == 200 and body == b"num_symbols: 1\n", f"GET /debug/pprof/symbol: {st} {body[:60]!r}")
        inner = runtime_address(procs[0].pid, SPIN, "inner_spin")
        # The deleted copy has spin-nofp's code and symbols: nm reads the original.
        inner_gone = runtime_address(procs[1].pid, SPIN, "inner_spin", mapped=gone)
        kfn = kernel_function()
        asked = [0x10, inner + 1, inner_gone + 1] + ([kfn[0]] if kfn else [])
        deadline, named = time.monotonic() + 40, {}
        while time.monotonic() < deadline:
            # The spin's mapping reaches the readers' table at an epoch end.
            named = post_symbols(d, asked)
            if named:
                break
            time.sleep(0.5)
        check(named.get(inner + 1) == "inner_spin",
              f"POST {inner + 1:#x} (inner_spin + 1 by nm and /proc/{procs[0].pid}/maps): {named}")
        check(set(named) == {inner + 1},
              "no line for nothing mapped (0x10), the deleted copy's code"
              + (f", nor kernel {kfn[1]} ({kfn[0]:#x}) with kernel_addresses = no" if kfn else "") + f": {named}")

        # pprof's web UI: its top page lists inner_spin.
        port = free_port()
        ui = subprocess.Popen([go, "tool", "pprof", f"-http=127.0.0.1:{port}", "-no_browser", url],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            page, deadline = "", time.monotonic() + 90
            while time.monotonic() < deadline and ui.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/ui/top", timeout=10) as resp:
                        page = resp.read().decode()
                    break
                except OSError:
                    time.sleep(0.5)
            check(re.search(r"\binner_spin\b", page) is not None,
                  f"go tool pprof -http=127.0.0.1:{port} -no_browser '{url}': /ui/top lists inner_spin "
                  f"(pprof {'running' if ui.poll() is None else f'exited {ui.returncode}'})")
        finally:
            ui.terminate()
            out = ui.communicate(timeout=30)[0]
            if not page:
                print(out[-600:])
        rc, _ = d.stop()
        check(rc == 0, f"the daemon stopped cleanly ({rc})")

    # Kernel addresses served: kallsyms names them, as /proc/kallsyms itself does.
    if not kfn:
        print("SKIP kernel: /proc/kallsyms shows no addresses here (kptr_restrict)")
    else:
        with Daemon(config_text=CONFIG + "[privacy]\nkernel_addresses = yes\n") as d:
            d.wait_serving()
            named = post_symbols(d, [kfn[0]])
            check(named == {kfn[0]: kfn[1]},
                  f"kernel_addresses = yes: {kfn[0]:#x} named {kfn[1]} as /proc/kallsyms says: {named}")
            rc, _ = d.stop()
finally:
    for p in procs:
        p.kill()
        p.wait()
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
