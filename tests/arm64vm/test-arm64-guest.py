#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The real daemon on arm64: cross-built (packaging/cross/aarch64-linux-gnu.ini,
Debian's arm64 multiarch libraries) and run on a real Debian arm64 kernel under
qemu-system-aarch64 (TCG, -cpu max,pauth-impdef=on: pointer authentication live
in user space), from an initramfs this test grows on
$ARMPROFD_SHARED_DIR/tools/arm64-vm's base (its kernel, its init): the daemon,
the closure of its DT_NEEDED libraries and ld.so, the virtio network modules
from the same kernel .deb, a configuration, the workloads and
tests/arm64vm/guest-driver.c as /test (network up, the daemon started, a
control port for the host). QEMU is run as run-arm64.sh runs it, with a user
network whose forwarded ports the host uses:

  - PMU counting on the real armv8_pmuv3, against the guest kernel's own view
    (its sysfs events/ directory, read over the control port): each of the
    daemon's hardware events that the PMU lists is counted, each other one is
    unavailable saying the CPU's PMU does not implement it (QEMU lists only
    cpu_cycles and the stall events); cycles per second of the kernel's
    time_running is QEMU's 1 GHz on every CPU; /metrics, scraped with real
    HTTP from the host, has the cycles of every online CPU and
    armprofd_pmu_event_available agreeing, and no series for what is not
    counted;
  - the PAC bits the unwinder clears are the kernel's own mask (ptrace's
    NT_ARM_PAC_MASK of a task in the guest);
  - the cpu-clock sampler profiles tests/sampler/spin.c (main -> outer_work
    -> inner_spin) cross-built three ways: -fno-omit-frame-pointer,
    -fomit-frame-pointer (CFI only) and -mbranch-protection=standard (return
    addresses signed with PAC on the stack), and tests/symbols/vdso-spin.c
    (main -> vdso_outer -> vdso_spin -> clock_gettime, in the vDSO). go tool
    pprof -traces on the host of /debug/pprof/profile must show, for each:
    every stack whose leaf is the hot one (inner_spin; the vDSO) is the whole
    known call tree down to glibc's start (__libc_start_call_main,
    [libc.so.6] in a stripped libc, <- __libc_start_main <- _start), and
    there is one; spin's heaviest stack is it; every stack through the
    program's own code continues as that tree below it (no frame lost, none
    made up); and its CPU time is within 15% of what the guest kernel
    accounted the process (wait4's rusage, read by the driver);
  - live SPE on arm64: tests/simpmu's shim (the simulated arm_spe PMU),
    cross-built and preloaded into a second daemon in the guest with a
    scenario and fake sysfs that tests/simpmu/simpmu-setup.py made on the host
    from armprofd-spegen's output (2 cores, 12,000 records of six sharing
    patterns): armprofd_spe_records_total per CPU is the generator's records
    minus exactly those the simulation dropped (its cpuN.dropped, read back
    from the guest), and /hotlines (window=all) has every line of the
    generator's truth with its loads, stores, peer snoops, class and
    per-offset latency (tests/daemon/spegen_truth.py, as test-spe-live.py);
  - the daemons stop cleanly (exit 0) on SIGTERM.

Exit 77 only when the shared VM tools are absent (tests/arm64vm.py); a cross
toolchain, arm64 library or go that is missing is a failure: packaging/dev.sh
installs them. ARM64_GUEST_WORKLOADS=spin-fp,vdso-spin,... picks workloads,
ARM64_GUEST_SPIN_SECONDS the CPU seconds each burns (2.5), ARM64_GUEST_DEBUG=1
runs the daemon at debug level and prints the raw profile of a failed stack
check; ARM64_GUEST_SPE=0 leaves SPE out, ARM64_GUEST_SPE_LIMIT bounds its wait
(300 s).
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))
import arm64vm  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'daemon'))
from armprofd_test import check, failures, go_env, parse_prom_text, simpmu_setup  # noqa: E402
from spegen_truth import check_lines, read_facts, truth_lines  # noqa: E402

CROSS = 'aarch64-linux-gnu-'
MULTIARCH = '/usr/lib/aarch64-linux-gnu'
INTERP = '/lib/ld-linux-aarch64.so.1'
DAEMON_PORT = 9769
CONTROL_PORT = 9770  # guest-driver.c
SPE_PORT = 9771  # the daemon with the simulated SPE PMU preloaded
SHIM = '/usr/lib/armprofd-simpmu.so'
N1_MIDR = '0x00000000413fd0c1'
# Live SPE through tests/simpmu in the guest: the generator's records on 2 simulated cores, tables that
# evict nothing (so every count is exact) and fit the guest's 1 GiB.
SPE_CONFIG = """[http]
listen = :%d
detail = any
[privacy]
kernel_addresses = yes
[pmu]
enable = no
[sampler]
enable = no
[spe]
drain_interval = 100ms
aux_buffer = 64KiB
[store]
epoch = 5s
epochs = 24
max_memory = 768MiB
""" % SPE_PORT
# The virtio-net-pci modules of the Debian kernel (its config: CONFIG_VIRTIO_NET=m, CONFIG_VIRTIO_PCI=m,
# CONFIG_NET_FAILOVER=m); init.c loads /lib/modules/*.ko, retrying those whose dependency came later.
MODULES = ['net/core/failover.ko', 'drivers/net/net_failover.ko', 'drivers/net/virtio_net.ko',
           'drivers/virtio/virtio_pci_legacy_dev.ko', 'drivers/virtio/virtio_pci_modern_dev.ko',
           'drivers/virtio/virtio_pci.ko']
# glibc's start below main: _start -> __libc_start_main -> __libc_start_call_main (local: a stripped
# libc.so.6 has it in no symbol table, its frame is named by the module), leaf first as pprof prints.
SPIN_SECONDS = float(os.environ.get('ARM64_GUEST_SPIN_SECONDS', '2.5'))
START = ['main', '[libc.so.6]', '__libc_start_main', '_start']
# The workloads, built for arm64 as Debian builds C: name -> (source, flags, the known call tree of
# its hot leaf, leaf first). spin.c burns in inner_spin; vdso-spin.c in clock_gettime(CLOCK_MONOTONIC),
# which runs in the vDSO (its pc there, its return address in x30).
WORKLOADS = {
    'spin-fp': ('tests/sampler/spin.c', ['-fno-omit-frame-pointer'], ['inner_spin', 'outer_work'] + START),
    'spin-nofp': ('tests/sampler/spin.c', ['-fomit-frame-pointer'], ['inner_spin', 'outer_work'] + START),
    'spin-pac': ('tests/sampler/spin.c', ['-fomit-frame-pointer', '-mbranch-protection=standard'],
                 ['inner_spin', 'outer_work'] + START),
    'vdso-spin': ('tests/symbols/vdso-spin.c', ['-fomit-frame-pointer', '-mbranch-protection=standard'],
                  ['[[vdso]]', 'clock_gettime', 'vdso_spin', 'vdso_outer'] + START),
}
# Other whole stacks a hot leaf may have: vdso-spin's cpu_seconds() (CLOCK_PROCESS_CPUTIME_ID, the vDSO's
# syscall fallback) is inlined into vdso_outer: its own frame when the program's DWARF says so (the
# profile's Lines, one per inlined frame: issue 37), else folded into vdso_outer's.
ALSO = {'vdso-spin': [['[[vdso]]', 'clock_gettime', 'cpu_seconds', 'vdso_outer'] + START,
                      ['[[vdso]]', 'clock_gettime', 'vdso_outer'] + START]}
# The dynamic linker's lazy binding (a first call through the PLT: ld.so's _dl_runtime_resolve above the
# caller) is not judged: such stacks are printed (see the report of issue 36: one was seen wrong,
# [ld.so] x3 <- main <- <unknown>, once in five runs, not yet understood).
LDSO = '[ld-linux-aarch64.so.1]'
# The daemon's hardware events ([pmu] events) and their names in a PMUv3's sysfs events/
# (collectors/pmu/pmu-event.c, drivers/perf/arm_pmuv3.c armv8_pmuv3_event_attrs).
ARM_EVENTS = {
    'cycles': ['cpu_cycles'], 'instructions': ['inst_retired'], 'l1d_cache': ['l1d_cache'],
    'l1d_cache_refill': ['l1d_cache_refill'], 'llc_read': ['ll_cache_rd'], 'llc_read_miss': ['ll_cache_miss_rd'],
    'l1d_tlb': ['l1d_tlb'], 'l1d_tlb_refill': ['l1d_tlb_refill'], 'dtlb_walk': ['dtlb_walk'],
    'branch_mispredicts': ['br_mis_pred_retired', 'br_mis_pred'], 'stall_frontend': ['stall_frontend'],
    'stall_backend': ['stall_backend'],
}
CONFIG = """[http]
listen = :%d
detail = any
[store]
epoch = 1s
[spe]
enable = no
[pmu]
interval = 1s
[sampler]
frequency = 97
""" % DAEMON_PORT


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        print(' '.join(cmd))
        print(r.stdout[-6000:])
        raise SystemExit(f'FAIL: {cmd[0]} exited {r.returncode}')
    return r.stdout


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def cross_build(source_dir, build_dir):
    """The daemon cross-built for arm64 with -Dwerror=true (incremental when the build dir exists)."""
    cross_file = os.path.join(source_dir, 'packaging', 'cross', 'aarch64-linux-gnu.ini')
    if not os.path.isfile(os.path.join(build_dir, 'build.ninja')):
        run(['meson', 'setup', build_dir, source_dir, '--cross-file', cross_file, '-Dtests=false',
             '-Dwerror=true'])
    run(['ninja', '-C', build_dir, '-j2', 'daemon/armprofd'])
    return os.path.join(build_dir, 'daemon', 'armprofd')


def needed(path):
    out = run([CROSS + 'readelf', '-d', path])
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', out)


def library_closure(binaries):
    """{soname: real file} of every DT_NEEDED, transitively, from Debian's arm64 multiarch directory."""
    libs, todo = {}, [n for b in binaries for n in needed(b)]
    while todo:
        name = todo.pop()
        if name in libs or name == os.path.basename(INTERP):
            continue
        path = os.path.join(MULTIARCH, name)
        if not os.path.exists(path):
            raise SystemExit(f'FAIL: {name} (needed) is not in {MULTIARCH}: packaging/dev.sh deps test installs '
                             'the :arm64 libraries')
        libs[name] = os.path.realpath(path)
        todo += needed(path)
    return libs


def guest_modules(cache):
    """The network modules, extracted once from the cached kernel .deb into the cache."""
    with open(os.path.join(cache, 'kernel-version')) as f:
        kver = f.read().strip()
    kdir = os.path.join(cache, 'kernel')
    want = [f'./lib/modules/{kver}/kernel/{m}' for m in MODULES]
    if not all(os.path.isfile(os.path.join(kdir, w)) for w in want):
        debs = [f for f in os.listdir(cache) if f.startswith(f'linux-image-{kver}_') and f.endswith('_arm64.deb')]
        if not debs:
            raise SystemExit(f'FAIL: no linux-image-{kver} .deb in {cache}')
        tar = subprocess.Popen(['dpkg-deb', '--fsys-tarfile', os.path.join(cache, debs[0])], stdout=subprocess.PIPE)
        run(['tar', '-x', '-C', kdir] + want, stdin=tar.stdout)
        tar.wait()
    return [os.path.join(kdir, w) for w in want]


def make_initrd(cache, work, files, test_args):
    """base.cpio (init.c, arm_spe_pmu.ko) then ours: {guest path: host file}, /test-args."""
    root = os.path.join(work, 'root')
    for dest, src in files.items():
        path = os.path.join(root, dest.lstrip('/'))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(src, bytes):
            with open(path, 'wb') as f:
                f.write(src)
        else:
            shutil.copyfile(src, path)
        os.chmod(path, 0o755)
    with open(os.path.join(root, 'test-args'), 'wb') as f:
        f.write(b''.join(a.encode() + b'\0' for a in test_args))
    names = subprocess.run(['find', '.', '-mindepth', '1'], cwd=root, stdout=subprocess.PIPE, text=True,
                           check=True).stdout
    p = subprocess.run(['cpio', '-o', '-H', 'newc', '--quiet', '-R', '0:0'], cwd=root,
                       input=('\n'.join(sorted(names.split())) + '\n').encode(), stdout=subprocess.PIPE, check=True)
    initrd = os.path.join(work, 'initrd.cpio')
    with open(os.path.join(cache, 'build', 'base.cpio'), 'rb') as f, open(initrd, 'wb') as out:
        out.write(f.read())
        out.write(p.stdout)
    return initrd


class Guest:
    """qemu-system-aarch64 as run-arm64.sh runs it, plus user networking with two forwarded ports."""

    def __init__(self, cache, initrd, work, smp='2'):
        self.daemon_port, self.control_port, self.spe_port = free_port(), free_port(), free_port()
        fwd = (f'hostfwd=tcp:127.0.0.1:{self.daemon_port}-:{DAEMON_PORT},'
               f'hostfwd=tcp:127.0.0.1:{self.control_port}-:{CONTROL_PORT},'
               f'hostfwd=tcp:127.0.0.1:{self.spe_port}-:{SPE_PORT}')
        self.console = os.path.join(work, 'console.log')
        cmd = ['qemu-system-aarch64', '-M', 'virt,gic-version=3', '-cpu', 'max,pauth-impdef=on', '-smp', smp,
               '-m', '1G', '-nographic', '-no-reboot', '-nic', f'user,model=virtio-net-pci,{fwd}',
               '-kernel', os.path.join(cache, 'vmlinuz'), '-initrd', initrd,
               '-append', 'console=ttyAMA0 rdinit=/init panic=-1 quiet loglevel=3']
        self.t0 = time.monotonic()
        self.log = open(self.console, 'wb')
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def output(self):
        with open(self.console, 'rb') as f:
            return f.read().decode(errors='replace').replace('\r', '')

    def control(self, command, timeout=600):
        with socket.create_connection(('127.0.0.1', self.control_port), timeout=timeout) as s:
            s.sendall(command.encode() + b'\n')
            s.shutdown(socket.SHUT_WR)
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        return b''.join(chunks).decode(errors='replace')

    def http(self, path, timeout=60, port=None):
        with urllib.request.urlopen(f'http://127.0.0.1:{port or self.daemon_port}{path}', timeout=timeout) as r:
            return r.status, r.read()

    def wait_serving(self, limit, port=None):
        """Until /healthz answers through the forwarded port (slirp accepts at once and closes when nothing
        listens in the guest): boot, module loading, the daemon's start under TCG."""
        deadline = time.monotonic() + limit
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if self.http('/healthz', timeout=10, port=port)[0] == 200:
                    return time.monotonic() - self.t0
            except Exception as e:  # noqa: BLE001 - anything until it answers
                last = e
            time.sleep(0.5)
        raise AssertionError(f'the guest daemon never answered /healthz ({last}); console:\n{self.output()[-5000:]}')

    def finish(self, limit=120):
        try:
            self.proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        return time.monotonic() - self.t0


def pprof(go, env, *args):
    r = subprocess.run([go, 'tool', 'pprof', '-symbolize=none', *args], capture_output=True, text=True, env=env,
                       timeout=240)
    if r.returncode != 0:
        raise SystemExit(f'FAIL: go tool pprof {args}: {r.stderr}')
    return r.stdout


def traces(go, env, path):
    """go tool pprof -traces: [(labels {key: value}, [functions leaf first])] (as tests/integration/test-sampler.py)."""
    out = pprof(go, env, '-traces', path)
    result = []
    for b in out.split('-----------+-------------------------------------------------------')[1:]:
        labels, funcs = {}, []
        for line in b.splitlines():
            if not line.strip():
                continue
            m = re.match(r'^\s*(\w+):\s+\[?(.*?)\]?\s*$', line)
            if m and not funcs and not re.match(r'^\s*[\d.]+\w*\s', line):
                labels[m.group(1)] = m.group(2)
                continue
            m = re.match(r'^\s*(?:[\d.]+\w*\s+)?(\S.*?)\s*$', line)
            if m:
                funcs.append(m.group(1).split()[0])
        if funcs:
            result.append((labels, funcs))
    return result


def cpu_ns_of(go, env, path, pid):
    """The profile's cpu/nanoseconds of one pid: -raw gives each sample's values, then its labels."""
    total, value = 0, None
    for line in pprof(go, env, '-raw', path).splitlines():
        m = re.match(r'^\s+(\d+)\s+(\d+):', line)
        if m:
            value = int(m.group(2))
            continue
        pid_m = re.search(r'\bpid:\[(\d+)\]', line)
        if value is not None and pid_m:
            if pid_m.group(1) == str(pid):
                total += value
            value = None
    return total


def case_pmu(guest):
    """The daemon's PMU counting against the guest kernel's own view (its sysfs) and QEMU's counter."""
    devices = guest.control('cat /sys/bus/event_source/devices').split()
    pmus = [d for d in devices if d.startswith('armv8_pmuv3')]
    check(len(pmus) == 1, f'one armv8_pmuv3 PMU in the guest\'s sysfs: {devices}')
    if not pmus:
        return
    listed = set(guest.control(f'cat /sys/bus/event_source/devices/{pmus[0]}/events').split())
    online = guest.control('cat /sys/devices/system/cpu/online').strip()
    cpus = [str(c) for c in range(int(online.split('-')[-1]) + 1)]
    print(f'# {pmus[0]} events/: {sorted(listed)}; CPUs {online}')
    deadline = time.monotonic() + 120
    while True:
        counters = json.loads(guest.http('/counters')[1])
        if counters.get('reads', 0) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(1)
    host, unavailable = counters['host']['events'], counters['unavailable']
    for event, names in ARM_EVENTS.items():
        if any(n in listed for n in names):
            check(host.get(event, {}).get('counted') is True and event not in unavailable,
                  f'{event}: in {pmus[0]}\'s events/ ({"/".join(names)}), counted')
        else:
            error = unavailable.get(event, {}).get('error', '')
            check(event not in host and error.startswith("not implemented by this CPU's PMU"),
                  f'{event}: not in events/, unavailable with its reason: {error!r}')
    # QEMU's CPU_CYCLES counts virtual time at 1 GHz on every vCPU, idle or not (FINDINGS.md of
    # the shared arm64-vm tools: 0.93-0.99 per ns of the kernel's time_running).
    for c in counters['cpus']:
        running = max((g['running_seconds'] for g in c['groups'] if g['name'].startswith('armv8_pmuv3')), default=0)
        cycles = c['events'].get('cycles', {}).get('total', 0)
        check(running > 0 and 0.5e9 <= cycles / running <= 1.5e9,
              f'cpu {c["cpu"]}: {cycles} cycles in {running:.2f} s running: {cycles / max(running, 1e-9):.3g}/s, '
              'QEMU\'s 1 GHz')
    check(sorted(str(c['cpu']) for c in counters['cpus']) == cpus, f'every online CPU ({online}) counted')
    st, body = guest.http('/metrics')
    check(st == 200, f'/metrics scraped from the host through the forwarded port: {st}, {len(body)} bytes')
    prom = parse_prom_text(body.decode())
    cycles = {dict(k[1]).get('cpu'): v for k, v in prom.items() if k[0] == 'armprofd_cpu_cycles_total'}
    check(sorted(cycles) == cpus and all(v > 0 for v in cycles.values()),
          f'armprofd_cpu_cycles_total per CPU on /metrics: {cycles}')
    avail = {dict(k[1]).get('event'): v for k, v in prom.items() if k[0] == 'armprofd_pmu_event_available'}
    check(all(avail.get(e) == (1.0 if e in host else 0.0) for e in ARM_EVENTS),
          f'armprofd_pmu_event_available says the same: {avail}')
    check(not any(k[0] == 'armprofd_instructions_total' for k in prom),
          'no armprofd_instructions_total series (not counted here: not a zero)')


def case_pac(guest):
    """The PAC bits the daemon clears are the kernel's own mask (NT_ARM_PAC_MASK of a task)."""
    kernel = guest.control('pacmask').split()
    m = re.search(r'pointer authentication have bits 0x([0-9a-f]+) cleared', guest.control('log'))
    check(len(kernel) == 2 and m is not None and int(m.group(1), 16) == int(kernel[1], 16) != 0,
          f'the daemon clears PAC bits {m.group(1) if m else None}, the kernel\'s insn_mask is '
          f'{kernel[1] if len(kernel) == 2 else kernel}')


def case_stacks(guest, go, work, name):
    source, _, known = WORKLOADS[name]
    env = go_env(work)
    span = 12
    for attempt in range(3):
        path = os.path.join(work, f'{name}-{attempt}.pb.gz')
        box = {}

        def fetch():
            st, body = guest.http(f'/debug/pprof/profile?seconds={span}', timeout=span + 120)
            box['st'] = st
            with open(path, 'wb') as f:
                f.write(body)
        t = threading.Thread(target=fetch)
        t.start()
        time.sleep(1.0)  # the span starts when the daemon takes the request
        answer = guest.control(f'run 1 {SPIN_SECONDS} {name}').split('\n')
        # The program exited before the span's end: its whole life is in the profile; else a longer span.
        ended = t.is_alive()
        t.join()
        if len(answer) < 2 or not answer[0].startswith('ready ') or not answer[1].startswith('exit '):
            check(False, f'{name} ran in the guest: {answer}')
            return
        pid, status = int(answer[0].split()[1]), int(answer[1].split()[1])
        truth_ns = (int(answer[1].split()[2]) + int(answer[1].split()[3])) * 1000
        if ended:
            break
        print(f'# {name} outlived a {span} s span: again with {span * 2} s')
        span *= 2
    check(status == 0 and box.get('st') == 200 and ended,
          f'{name} ran (exit {status}) within the profile\'s {span} s span, answered {box.get("st")}')
    mine = [(lab, f) for lab, f in traces(go, env, path) if lab.get('pid') == str(pid)]
    print(f'# {name} ({source}): pid {pid}, {len(mine)} distinct stacks, {truth_ns / 1e9:.2f} s of CPU, '
          f'profile span {span} s')
    for lab, f in mine[:3]:
        print(f'#   {lab.get("comm")}: {" <- ".join(f)}')
    # The hot leaf's stacks (a [kernel] frame above it: a sample in a syscall or an interrupt from there).
    trees = [known] + ALSO.get(name, [])
    hot = [f[1:] if f[0] == '[kernel]' else f for lab, f in mine if known[0] in f[:2]]
    check(hot and all(f in trees for f in hot) and
          all(lab.get('comm') == name for lab, f in mine if known[0] in f),
          f'{name}: every stack with {known[0]} as its leaf is the whole known call tree, '
          f'{" <- ".join(known)}, and named {name} ({len(hot)} stacks; others: '
          f'{[" <- ".join(f) for f in hot if f not in trees][:2]})')
    if known[0] == 'inner_spin':
        check(len(mine) > 0 and mine[0][1] == known,
              f'{name}: the heaviest stack of pid {pid} is that: {" <- ".join(mine[0][1]) if mine else None}')
    # Wherever a stack goes through the program's own code, what is below it is the known call tree:
    # no frame lost, none made up.
    own = [fn for fn in known[:known.index('main') + 1] if not fn.startswith('[') and fn != 'clock_gettime']
    wrong, lazy = [], []
    # The pid's stacks once it is the program (before its exec it is the driver's forked child: its main).
    for lab, f in mine:
        if lab.get('comm') != name:
            continue
        for i, fn in enumerate(f):
            if fn in own:
                if LDSO in f[:i]:
                    lazy.append(f)
                elif all(f[i:] != t[t.index(fn):] for t in trees if fn in t):
                    wrong.append(f)
                break
    for f in lazy:
        print(f'# {name}: not judged (lazy binding): {" <- ".join(f)}')
    if wrong and os.environ.get('ARM64_GUEST_DEBUG'):
        print(pprof(go, env, '-raw', path))
    check(not wrong, f'{name}: every stack through its own code continues as the known call tree below it '
                     f'({len(wrong)} of {len(mine)} do not: {[" <- ".join(f) for f in wrong[:3]]})')
    got_ns = cpu_ns_of(go, env, path, pid)
    check(truth_ns > 0 and abs(got_ns - truth_ns) <= 0.15 * truth_ns,
          f'{name}: cpu/nanoseconds of pid {pid} {got_ns} within 15% of the guest kernel\'s '
          f'{truth_ns} (wait4 rusage)')


def prepare_spe(spegen, work):
    """A simpmu scenario (tests/simpmu/README.md) from the generator's output, as test-spe-live.py's truth
    case makes it on 2 CPUs: {guest path: host file} (the same paths in the guest) and its truth."""
    simpmu = simpmu_setup()
    base = os.path.join(work, 'spe')
    gen, scen, sysfs = (os.path.join(base, x) for x in ('gen', 'scen', 'sys'))
    os.makedirs(gen)
    run([spegen, '--out-dir', gen, '--prefix', 'g', '--ts', '--cpus', '2', '--records', '12000', '--seed', '3',
         '--scenario', 'false-sharing,true-sharing,read-only,padded,remote,dram'])
    facts = read_facts(os.path.join(gen, 'g.truth.txt'))
    elf = os.path.join(gen, 'g.elf')
    task = [f"comm=4242:4242:{facts['thread.4242'].split(',')[0]}",
            f"mmap2=4242:4242:{facts['elf.text_base']}:{facts['elf.text_map_len']}:0:{elf}"]
    rows = simpmu.setup(gen, scen, sysfs, cpus='0-1', prefix='g', keys=task)
    for cpu in range(2):
        simpmu.write(os.path.join(sysfs, 'devices', 'system', 'cpu', f'cpu{cpu}', 'regs', 'identification',
                                  'midr_el1'), N1_MIDR + '\n')
    # Room for every line of the truth and every (offset, pc) of a line, twice over: none is evicted,
    # every count is exact.
    truth = truth_lines([r for cpu in rows for r in rows[cpu]], 'va')
    offsets = max(len(t['lat']) for t in truth.values())
    with open(os.path.join(base, 'armprofd.conf'), 'w') as f:
        f.write(SPE_CONFIG + f'hotlines = {max(256, 2 * len(truth))}\nline_offsets = {max(8, 2 * offsets)}\n')
    files = {}
    for d, _, names in os.walk(base):
        for n in names:
            files[os.path.join(d, n)] = os.path.join(d, n)
    return files, {'simpmu': simpmu, 'scen': scen, 'sysfs': sysfs, 'elf': elf, 'rows': rows,
                   'conf': os.path.join(base, 'armprofd.conf')}


def case_spe(guest, spe):
    """Live SPE from the simulated PMU preloaded into the arm64 daemon: what it serves equals the
    generator's truth minus exactly what the simulation dropped (tests/simpmu/test-spe-live.py's truth)."""
    simpmu, scen = spe['simpmu'], spe['scen']
    started = guest.control(f"spe {SHIM} {scen} {spe['sysfs']} {spe['conf']}").strip()
    check(started.startswith('started '), f'the SPE daemon started in the guest: {started}')
    try:
        guest.wait_serving(120, port=guest.spe_port)
    except AssertionError as e:
        check(False, f'the SPE daemon serves: {e}\n{guest.control("cat /tmp/armprofd-spe.log")}')
        return
    deadline = time.monotonic() + float(os.environ.get('ARM64_GUEST_SPE_LIMIT', '300'))
    while True:
        log = guest.control(f'cat {scen}/sim.log')
        if sum(' done ' in l for l in log.splitlines()) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(1)
    # The simulation's own account of what it dropped, from the guest into the host's copy of the scenario.
    for cpu in range(2):
        text = guest.control(f'cat {scen}/cpu{cpu}.dropped')
        path = os.path.join(scen, f'cpu{cpu}.dropped')
        if text.startswith('error '):
            if os.path.exists(path):
                os.unlink(path)
        else:
            with open(path, 'w') as f:
                f.write(text)
    expect = {cpu: [r for i, r in enumerate(spe['rows'][cpu])
                    if i not in {j for j, why in simpmu.dropped(scen, cpu).items() if why not in ('lost', 'datalost')}]
              for cpu in range(2)}
    want = {str(cpu): float(len(r)) for cpu, r in expect.items()}
    got = {}
    while time.monotonic() < deadline:
        prom = parse_prom_text(guest.http('/metrics', port=guest.spe_port)[1].decode())
        got = {dict(k[1]).get('cpu'): v for k, v in prom.items() if k[0] == 'armprofd_spe_records_total'}
        if got == want:
            break
        time.sleep(0.5)
    if got != want:
        print('\n'.join(log.splitlines()[-15:]))
        print('\n'.join(l for l in guest.http('/metrics', port=guest.spe_port)[1].decode().splitlines()
                        if 'spe' in l and not l.startswith('#'))[:3000])
    dropped = sum(len(spe['rows'][cpu]) - len(expect[cpu]) for cpu in range(2))
    check(got == want, f'armprofd_spe_records_total per CPU is the generator\'s records minus the {dropped} the '
                       f'simulation dropped: {got} vs {want}')
    rows = [r for cpu in expect for r in expect[cpu]]
    every = {}
    while time.monotonic() < deadline:
        every = json.loads(guest.http('/hotlines?window=all&all=1&limit=500', port=guest.spe_port)[1])
        if every.get('records') == len(rows):
            break
        time.sleep(0.5)
    truth = truth_lines(rows, 'va')
    try:
        assert every['evictions'] == 0 and every['offset_evictions'] == 0, 'evictions'
        assert every['lines_seen'] == len(truth), (every['lines_seen'], len(truth))
        check_lines(every['lines'], truth, spe['elf'])
        assert all(line['pid'] == 4242 for line in every['lines'])
        ok, why = True, ''
    except (AssertionError, KeyError) as e:
        ok, why = False, repr(e)[:500]
    check(ok, f'/hotlines from the arm64 daemon: {every.get("lines_seen")} lines of {len(rows)} records, every '
              f'line\'s loads, stores, peer snoops, class and per-offset latency equal the generator\'s truth {why}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-dir', required=True)
    ap.add_argument('--smp', default='2')
    ap.add_argument('--spegen', required=True)
    args = ap.parse_args()

    vm = arm64vm.VM()
    cache = vm.env['ARM64_VM_CACHE']
    go = shutil.which('go')
    if not go:
        raise SystemExit('FAIL: go not installed (golang-go): no go tool pprof')
    src = args.source_dir
    build_parent = vm.work_parent() or tempfile.gettempdir()
    t0 = time.monotonic()
    daemon = cross_build(src, os.path.join(build_parent, 'arm64-cross'))
    t_cross = time.monotonic() - t0
    with tempfile.TemporaryDirectory(prefix='arm64-guest-', dir=vm.work_parent()) as work:
        driver = os.path.join(work, 'guest-driver')
        ok, _ = arm64vm.compile_c(arm64vm.CROSS_CC, driver, [os.path.join(HERE, 'guest-driver.c')],
                                  arm64vm.includes(src), static=True)
        if not ok:
            return 1
        files = {'/usr/bin/armprofd': daemon, '/test': driver,
                 '/etc/armprofd/armprofd.conf': CONFIG.encode()}
        for name, (source, flags, _) in WORKLOADS.items():
            out = os.path.join(work, name)
            run([arm64vm.CROSS_CC, '-O2', '-g', '-std=gnu17', '-D_GNU_SOURCE', '-Wall', '-Werror', *flags, '-o', out,
                 os.path.join(src, source)])
            files[f'/usr/bin/{name}'] = out
        # tests/simpmu's shim, cross-built as meson builds it (tests/simpmu/meson.build), and its scenario.
        shim = os.path.join(work, 'armprofd-simpmu.so')
        run([arm64vm.CROSS_CC, '-O2', '-g', '-std=gnu17', '-D_GNU_SOURCE', '-Wall', '-Werror', '-Wno-format-truncation', '-shared', '-fPIC',
             '-fvisibility=hidden', '-pthread', '-o', shim, os.path.join(src, 'tests', 'simpmu', 'simpmu.c'), '-ldl'])
        files[SHIM] = shim
        for soname, real in library_closure([daemon, shim] + [files[f'/usr/bin/{n}'] for n in WORKLOADS]).items():
            files[f'{MULTIARCH}/{soname}'] = real
        files[INTERP] = os.path.realpath(os.path.join(MULTIARCH, os.path.basename(INTERP)))
        for m in guest_modules(cache):
            files[f'/lib/modules/{os.path.basename(m)}'] = m
        spe_files, spe = prepare_spe(args.spegen, work)
        files.update(spe_files)
        initrd = make_initrd(cache, work, files, ['900', '/usr/bin/armprofd', '-c', '/etc/armprofd/armprofd.conf']
                             + (['--log-level=debug'] if os.environ.get('ARM64_GUEST_DEBUG') else []))
        print(f'# cross build {t_cross:.1f}s, initrd {os.path.getsize(initrd) // 1024} KiB, {len(files)} files')

        guest = Guest(cache, initrd, work, smp=args.smp)
        t_up = 0.0
        try:
            t_up = guest.wait_serving(300)
            print(f'# guest daemon serving {t_up:.1f}s after qemu started')
            case_pmu(guest)
            case_pac(guest)
            for name in (os.environ.get('ARM64_GUEST_WORKLOADS') or ','.join(WORKLOADS)).split(','):
                case_stacks(guest, go, work, name)
            if os.environ.get('ARM64_GUEST_SPE', '1') == '1':
                case_spe(guest, spe)
        finally:
            try:
                stopped = guest.control('stop', timeout=60).strip()
            except OSError as e:
                stopped = f'no answer: {e}'
            t_all = guest.finish()
            print(guest.output()[-6000:])
            check(stopped == 'stopped 0' and '@@VM-EXIT 0' in guest.output(),
                  f'the guest daemon stopped on SIGTERM with exit 0 ({stopped!r}), the VM powered off')
            print(f'# qemu ran {t_all:.1f}s (boot to serving {t_up:.1f}s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
