#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The package under a real systemd: builds the .deb from this checkout
(packaging/build-deb.sh), runs lintian on it, boots a minimal Debian 12
(tests/systemd/vm-image.sh: systemd as init, a stock Debian kernel) in
qemu and, as a user would, installs the package, enables the service and
scrapes it from the host through qemu's port forwarding; then reload, a bad
drop-in, stop, the journal, socket activation, a reboot (the boot-to-ready
time) and purge. Each check prints one line, "ok" or "FAIL"; the test fails
when any check does. Figures printed: the .deb's size, the unit's exposure
score (systemd-analyze security in the guest), the boot-to-ready time.

KVM is used when it boots a stock kernel (the guest prints "Linux version"
within 10 s); some hosts' KVM cannot (a PVM hypervisor runs only kernels
built as its guests), and then the same test runs under TCG, slower.
ARMPROFD_VM_ACCEL=tcg (or kvm) takes that one without trying the other: a
host with KVM runs the test as one without would."""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(name, ok, detail=''):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)
    return ok


def say(msg):
    print(f'-- {msg}', flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Guest:
    """One qemu guest booted from an overlay of the cached image; commands go
    through ssh as root."""

    def __init__(self, image, workdir):
        self.image = image
        self.workdir = workdir
        self.key = os.path.join(image, 'id_ed25519')
        self.overlay = os.path.join(workdir, 'overlay.qcow2')
        self.console = os.path.join(workdir, 'console.log')
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'raw', '-b',
                        os.path.join(image, 'disk.img'), self.overlay], check=True)
        self.ssh_port = free_port()
        self.http_port = free_port()
        self.proc = None
        self.accel = None

    def _qemu(self, accel):
        cmd = ['qemu-system-x86_64', '-machine', 'pc', '-smp', '2', '-m', '1024', '-no-reboot',
               '-display', 'none', '-monitor', 'none', '-serial', f'file:{self.console}',
               '-kernel', os.path.join(self.image, 'vmlinuz'),
               '-initrd', os.path.join(self.image, 'initrd.img'),
               '-append', 'root=/dev/vda rw console=ttyS0 net.ifnames=0 panic=-1',
               '-drive', f'file={self.overlay},if=virtio,format=qcow2',
               '-netdev', f'user,id=n0,hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22,'
                          f'hostfwd=tcp:127.0.0.1:{self.http_port}-:9769',
               '-device', 'virtio-net-pci,netdev=n0']
        # qemu64 under KVM: "-cpu host" fails on these hosts (MSR 0x10a).
        cmd += ['-accel', 'kvm', '-cpu', 'qemu64'] if accel == 'kvm' else ['-accel', 'tcg', '-cpu', 'qemu64']
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(self.workdir, 'qemu.err'), 'a'))

    def _console_has(self, text):
        try:
            with open(self.console, 'rb') as f:
                return text.encode() in f.read()
        except OSError:
            return False

    def boot(self):
        """Starts qemu (KVM when it boots this kernel, else TCG) and waits for
        ssh. Returns the seconds from qemu's start to ssh answering."""
        forced = os.environ.get('ARMPROFD_VM_ACCEL')
        if forced and forced not in ('kvm', 'tcg'):
            raise RuntimeError(f'ARMPROFD_VM_ACCEL={forced}: kvm or tcg')
        accels = ([self.accel] if self.accel else [forced] if forced else
                  ['kvm', 'tcg'] if os.access('/dev/kvm', os.R_OK | os.W_OK) else ['tcg'])
        for accel in accels:
            if os.path.exists(self.console):
                os.unlink(self.console)
            t0 = time.monotonic()
            self.proc = self._qemu(accel)
            if accel == 'kvm' and len(accels) > 1:
                while time.monotonic() - t0 < 10 and self.proc.poll() is None and not self._console_has('Linux version'):
                    time.sleep(0.2)
                if not self._console_has('Linux version'):
                    say('KVM does not boot this kernel (no "Linux version" on the console in 10 s): TCG')
                    self.kill()
                    continue
            self.accel = accel
            deadline = t0 + (120 if accel == 'kvm' else 300)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f'qemu exited ({self.proc.returncode}); console: {self.tail()}')
                try:
                    if self.ssh('true', check=False, timeout=5, quiet=True).returncode == 0:
                        return time.monotonic() - t0
                except subprocess.TimeoutExpired:
                    # qemu's port forward accepts at once; a guest still booting may not answer in time.
                    pass
                time.sleep(0.5)
            raise RuntimeError(f'no ssh after {deadline - t0:.0f} s; console: {self.tail()}')
        raise RuntimeError('qemu did not start')

    def tail(self):
        try:
            with open(self.console, 'rb') as f:
                return f.read()[-1500:].decode(errors='replace')
        except OSError:
            return '(no console log)'

    def ssh_args(self):
        return ['-i', self.key, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=3', '-o', 'BatchMode=yes']

    def ssh(self, cmd, check=True, timeout=120, quiet=False):
        r = subprocess.run(['ssh'] + self.ssh_args() + ['-p', str(self.ssh_port), 'root@127.0.0.1', cmd],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f'guest: {cmd!r} exited {r.returncode}: {r.stdout}{r.stderr}')
        if not quiet and r.returncode != 0:
            print(f'   (guest: {cmd!r} exited {r.returncode}: {(r.stdout + r.stderr).strip()[-400:]})')
        return r

    def out(self, cmd, timeout=120):
        return self.ssh(cmd, timeout=timeout).stdout.strip()

    def copy_in(self, src, dst):
        subprocess.run(['scp', '-q'] + self.ssh_args() + ['-P', str(self.ssh_port), src, f'root@127.0.0.1:{dst}'],
                       check=True, timeout=60)

    def shutdown(self):
        """Powers the guest off and waits for qemu to exit (-no-reboot)."""
        self.ssh('systemctl poweroff', check=False, timeout=10, quiet=True)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def http(self, path, timeout=10):
        """(status, body) of a GET on the guest's 9769 from the host."""
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{self.http_port}{path}', timeout=timeout) as r:
                return r.status, r.read().decode(errors='replace')
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors='replace')
        except (OSError, urllib.error.URLError) as e:
            return None, str(e)


def samples(text, name):
    """{labels string: value} of one metric family in Prometheus text."""
    got = {}
    for line in text.splitlines():
        m = re.match(rf'^{re.escape(name)}(\{{[^}}]*\}})?\s+(\S+)', line)
        if m:
            got[m.group(1) or ''] = float(m.group(2))
    return got


def build_deb(source_dir, outdir):
    env = dict(os.environ, DEB_BUILD_OPTIONS='nocheck')
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(source_dir, 'packaging', 'build-deb.sh'), outdir], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
        raise RuntimeError(f'packaging/build-deb.sh exited {r.returncode}')
    deb = r.stdout.strip().splitlines()[-1]
    say(f'built {os.path.basename(deb)} in {time.monotonic() - t0:.0f} s')
    return deb


def runtime_packages(deb):
    """The package names of the .deb's Depends (the first of alternatives)."""
    depends = subprocess.run(['dpkg-deb', '-f', deb, 'Depends'], capture_output=True, text=True,
                             check=True).stdout
    names = []
    for dep in depends.split(','):
        name = dep.split('|')[0].strip().split(' ')[0].split(':')[0]
        if name:
            names.append(name)
    return names


def test_lintian(deb):
    r = subprocess.run(['lintian', '--fail-on', 'error,warning', '--display-info', '--tag-display-limit', '0', deb],
                       capture_output=True, text=True)
    # lintian's own remark on running as root is not about the package.
    out = '\n'.join(line for line in (r.stdout.strip() + '\n' + r.stderr.strip()).strip().splitlines()
                    if 'running with root privileges is not recommended' not in line)
    if out:
        print('\n'.join('   ' + line for line in out.splitlines()))
    lines = [line for line in out.splitlines() if re.match(r'^[EW]: ', line)]
    check('lintian: no error, no warning', r.returncode == 0 and not lines,
          f'exit {r.returncode}, {len(lines)} error/warning line(s)')


def test_install(g, deb):
    g.copy_in(deb, '/root/')
    r = g.ssh(f'DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/{os.path.basename(deb)}',
              check=False, timeout=300)
    check('apt-get install ./armprofd_*.deb (its dependencies are in the image: no download)', r.returncode == 0,
          '' if r.returncode == 0 else r.stderr.strip()[-300:])
    # Debian's kernel ships perf_event_paranoid=3, where CAP_PERFMON is not
    # enough; the package's sysctl.d file sets mainline's 2, applied by the
    # postinst before the service starts.
    paranoid = g.out('cat /proc/sys/kernel/perf_event_paranoid')
    check('the package set kernel.perf_event_paranoid to 2 (Debian boots with 3)', paranoid == '2', paranoid)
    r = g.ssh('systemctl enable --now armprofd', check=False)
    check('systemctl enable --now armprofd', r.returncode == 0, r.stderr.strip())
    show = dict(line.split('=', 1) for line in
                g.out('systemctl show -p ActiveState,SubState,Type,StatusText,MainPID,WatchdogUSec,'
                      'UnitFileState armprofd').splitlines())
    if not check('active (running) through READY=1 (Type=notify)',
                 show['ActiveState'] == 'active' and show['SubState'] == 'running' and show['Type'] == 'notify'
                 and show['StatusText'].startswith('Serving on'), str(show)):
        print(g.out('journalctl -u armprofd -n 40 --no-pager'))
        raise RuntimeError('armprofd did not start')
    check('enabled, watchdog armed', show['UnitFileState'] == 'enabled' and show['WatchdogUSec'] == '1min',
          f"{show['UnitFileState']}, WatchdogUSec={show['WatchdogUSec']}")
    pid = show['MainPID']
    status = g.out(f'cat /proc/{pid}/status')
    uid = re.search(r'^Uid:\s+(\d+)', status, re.M).group(1)
    capeff = int(re.search(r'^CapEff:\s+([0-9a-f]+)', status, re.M).group(1), 16)
    user = g.out(f'getent passwd {uid} | cut -d: -f1')
    # CAP_PERFMON is capability 38 (include/uapi/linux/capability.h).
    check('runs as the armprofd user with CAP_PERFMON only', user == 'armprofd' and capeff == 1 << 38,
          f'user {user}, CapEff {capeff:#x}')
    return int(pid)


def test_serving(g):
    # Software counters count: context switches of every CPU, against the
    # guest kernel's own count (/proc/stat ctxt) over a span that holds the
    # daemon's: its values are read every second, so those a scrape shows
    # are at most 1 s old; /proc/stat is read 1.5 s before the first scrape
    # and after the second.
    ctxt0 = int(g.out("awk '/^ctxt/ {print $2}' /proc/stat"))
    time.sleep(1.5)
    status, body = g.http('/metrics')
    check('/metrics from the host through the forwarded port', status == 200, f'status {status}')
    promtool = subprocess.run(['promtool', 'check', 'metrics'], input=body, capture_output=True, text=True)
    check('promtool check metrics', promtool.returncode == 0, (promtool.stdout + promtool.stderr).strip()[-500:])
    first = samples(body, 'armprofd_context_switches_total')
    # Under the unit's system call filter (@system-service holds setpriority), the thread that
    # answered runs 10 nice steps below the collector (common/thread-prio.h), as the kernel has them.
    pid = g.out('systemctl show -p MainPID --value armprofd')
    nice = dict(line.rsplit(None, 1) for line in g.out(f'ps -L -o comm=,ni= -p {pid}').splitlines())
    check('the HTTP thread runs 10 nice steps below the collector under the unit',
          nice.get('collector') == '0' and nice.get('MHD-single') == '10', str(nice))
    g.ssh('sleep 3')
    _, body2 = g.http('/metrics')
    ctxt1 = int(g.out("awk '/^ctxt/ {print $2}' /proc/stat"))
    second = samples(body2, 'armprofd_context_switches_total')
    cpus = sorted(second)
    delta = sum(second[k] - first.get(k, 0) for k in second)
    check('software counters count on every CPU', len(cpus) == 2 and all(second[k] > first.get(k, 0) for k in cpus),
          f'{cpus}: {delta:.0f} context switches')
    check('context switches at most the kernel\'s count over a span that holds ours (/proc/stat ctxt)',
          0 < delta <= (ctxt1 - ctxt0) * 1.02 + 5, f'armprofd {delta:.0f}, kernel {ctxt1 - ctxt0}')
    # The sampler under the hardened unit: a busy loop in the guest must show
    # up in /hotpcs (perf_event_open of cpu-clock on every CPU with CAP_PERFMON,
    # the package's perf_event_paranoid 2).
    # Per-process detail is for clients on the guest only ([http] detail =
    # loopback): the host, coming through qemu's NAT from 10.0.2.2, gets a 403
    # naming the setting; curl in the guest gets the answer.
    status, body = g.http('/hotpcs')
    check('/hotpcs from the host (not loopback for the guest): 403 naming [http] detail',
          status == 403 and '[http] detail = any' in body, f'{status}: {body.strip()[:200]}')
    # The busiest process over the same span, from the daemon's samples: what
    # each pid gained between two answers, the first taken once the loop runs,
    # so that nothing from before it (the daemon's own start, apt, systemd's
    # reload) is in the comparison. The loop takes 19 samples a second of its
    # CPU whatever the emulation's speed; the span ends once it has 60.
    daemon = int(g.out('systemctl show -p MainPID --value armprofd'))
    busy = int(g.out('nohup timeout 600 sh -c \'while :; do :; done\' >/dev/null 2>&1 & sleep 0.5; '
                     'pgrep -f -n "while :; do :; done" -P $!'))

    def by_pid():
        r = g.ssh("curl -s -w '\\n%{http_code}' 'http://127.0.0.1:9769/hotpcs?window=all&limit=1000'", check=False)
        body, _, status = r.stdout.rpartition('\n')
        got = {}
        if status == '200':
            for pc in json.loads(body).get('pcs', []):
                got[pc['pid']] = got.get(pc['pid'], 0) + pc['samples']
        return got

    def cpu_ticks(pid):
        """utime + stime of pid in the guest (proc(5) fields 14 and 15), clock ticks."""
        return sum(int(v) for v in g.out(f'cut -d" " -f14,15 /proc/{pid}/stat').split())

    before, ticks0, t0 = by_pid(), cpu_ticks(daemon), time.monotonic()
    gained = {}
    while time.monotonic() - t0 < 300:
        time.sleep(3)
        after = by_pid()
        gained = {p: n - before.get(p, 0) for p, n in after.items() if n > before.get(p, 0)}
        if gained.get(busy, 0) >= 60:
            break
    span, ticks = time.monotonic() - t0, cpu_ticks(daemon) - ticks0
    g.ssh(f'kill {busy}', check=False)
    top = max(gained, key=gained.get) if gained else None
    say(f'over {span:.0f} s: busy loop {gained.get(busy, 0)} samples, armprofd {gained.get(daemon, 0)} '
        f'(its CPU {ticks} ticks by /proc), {len(gained)} pids sampled')
    check('the sampler\'s hot PCs (/hotpcs from the guest\'s loopback): a busy loop is the busiest process',
          top == busy, f'busy loop pid {busy}: {gained.get(busy, 0)} samples; '
          f'busiest pid {top} ({gained.get(top)}), {len(gained)} pids')


def journal_errors(g, since):
    return g.out(f'journalctl -u armprofd -p err -o cat --no-pager --since=@{since}')


def test_reload(g, pid):
    since = g.out('date +%s')
    r = g.ssh('systemctl reload armprofd', check=False)
    same = g.out('systemctl show -p MainPID --value armprofd')
    active = g.out('systemctl is-active armprofd || true')
    check('systemctl reload keeps it running', r.returncode == 0 and active == 'active' and same == str(pid),
          f'exit {r.returncode}, {active}, MainPID {same} (was {pid})')
    # A bad drop-in: the reload logs the error (file:line) and the running
    # configuration stays; it keeps serving.
    g.ssh("printf '[http]\\nno_such_key = 1\\n' >/etc/armprofd/armprofd.conf.d/50-bad.conf")
    g.ssh('systemctl reload armprofd', check=False)
    deadline = time.monotonic() + 15
    errors = ''
    while time.monotonic() < deadline and '50-bad.conf:2' not in errors:
        time.sleep(0.5)
        errors = journal_errors(g, since)
    status, _ = g.http('/healthz')
    active = g.out('systemctl is-active armprofd || true')
    check('a bad drop-in: reload logs it (file:line) and the daemon keeps serving',
          '50-bad.conf:2' in errors and status == 200 and active == 'active',
          f'journal: {errors.strip()[-200:]!r}, /healthz {status}, {active}')
    g.ssh('rm /etc/armprofd/armprofd.conf.d/50-bad.conf && systemctl reload armprofd')


def test_stop(g):
    t0 = time.monotonic()
    r = g.ssh('systemctl stop armprofd', check=False)
    took = time.monotonic() - t0
    show = dict(line.split('=', 1) for line in
                g.out('systemctl show -p Result,ExecMainStatus,ActiveState,ActiveExitTimestampMonotonic,'
                      'InactiveEnterTimestampMonotonic armprofd').splitlines())
    # The stop as systemd timed it, from leaving "active" (SIGTERM sent) to "inactive" (the process
    # gone): the ssh round trip and systemctl's own start are not in it, which under TCG (a host
    # whose KVM does not boot the guest) take a second and more.
    stop = (int(show['InactiveEnterTimestampMonotonic']) - int(show['ActiveExitTimestampMonotonic'])) / 1e6
    check('systemctl stop: clean, within 2 s by systemd\'s timestamps', r.returncode == 0 and 0 <= stop < 2.0
          and show['Result'] == 'success' and show['ExecMainStatus'] == '0' and show['ActiveState'] == 'inactive',
          f'{stop:.2f} s ({took:.2f} s with ssh, {g.accel}), Result={show["Result"]} '
          f'ExecMainStatus={show["ExecMainStatus"]} ActiveState={show["ActiveState"]}')


def test_socket(g):
    g.ssh('systemctl start armprofd.socket')
    before = g.out('systemctl is-active armprofd.service || true')
    status, body = g.http('/metrics', timeout=60)
    after = g.out('systemctl is-active armprofd.service || true')
    check('socket activation: the first request starts the service and is served',
          before == 'inactive' and status == 200 and 'armprofd_build_info' in body and after == 'active',
          f'service {before} -> {after}, /metrics {status}')
    g.ssh('systemctl stop armprofd.socket armprofd.service')


def test_reboot(g):
    """Boot to READY=1: the enabled service after a reboot, on the guest's
    monotonic clock (from the kernel's start) and from qemu's start."""
    g.shutdown()
    wall = g.boot()
    deadline = time.monotonic() + 120
    ready = '0'
    while time.monotonic() < deadline:
        ready = g.out('systemctl show -p ActiveEnterTimestampMonotonic --value armprofd')
        if ready not in ('', '0'):
            break
        time.sleep(1)
    status, _ = g.http('/healthz')
    check('starts at boot (enabled) and serves', ready not in ('', '0') and status == 200,
          f'ActiveEnterTimestampMonotonic {ready}, /healthz {status}')
    if ready not in ('', '0'):
        started = int(g.out('systemctl show -p ExecMainStartTimestampMonotonic --value armprofd') or 0)
        say(f'boot to ready: {int(ready) / 1e6:.2f} s from the kernel\'s start ({g.accel}), of which '
            f'{(int(ready) - started) / 1e6:.2f} s from the daemon\'s exec to READY=1; '
            f'ssh answered {wall:.1f} s after qemu started')


def test_purge(g):
    r = g.ssh('DEBIAN_FRONTEND=noninteractive apt-get purge -y -q armprofd', check=False, timeout=300)
    check('apt-get purge armprofd', r.returncode == 0, r.stderr.strip()[-300:])
    left = g.out('for p in /lib/systemd/system/armprofd.service /lib/systemd/system/armprofd.socket '
                 '/etc/armprofd/armprofd.conf /var/lib/armprofd /usr/sbin/armprofd '
                 '/etc/systemd/system/multi-user.target.wants/armprofd.service; do '
                 '[ -e $p ] && echo $p; done; true')
    check('purge removes the units, the binary, the conffile and /var/lib/armprofd', left == '', left)
    user = g.ssh('getent passwd armprofd', check=False).stdout.strip()
    check('the armprofd user stays (Debian policy: system users are not removed)', user.startswith('armprofd:'), user)
    procs = g.ssh('pgrep -x armprofd', check=False, quiet=True).stdout.strip()
    check('no armprofd process left', procs == '', procs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-dir', required=True)
    ap.add_argument('--build-dir', required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print('SKIP: needs root (debootstrap, chroot)')
        return SKIP
    missing = [t for t in ('qemu-system-x86_64', 'qemu-img', 'ssh', 'scp', 'debootstrap', 'lintian',
                           'promtool', 'dpkg-buildpackage', 'mkfs.ext4') if not shutil.which(t)]
    if missing:
        print(f'SKIP: missing {" ".join(missing)} (packaging/dev.sh deps test installs them)')
        return SKIP

    outdir = os.path.join(args.build_dir, 'deb')
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    deb = build_deb(args.source_dir, outdir)
    say(f'{os.path.basename(deb)}: {os.path.getsize(deb) / 1024:.0f} KiB')
    test_lintian(deb)

    t0 = time.monotonic()
    image = subprocess.run([os.path.join(HERE, 'vm-image.sh')] + runtime_packages(deb), capture_output=True,
                           text=True)
    if image.returncode != 0:
        print(image.stderr[-3000:])
        check('the guest image (tests/systemd/vm-image.sh)', False)
        return 1
    image = image.stdout.strip().splitlines()[-1]
    say(f'guest image {image} ready after {time.monotonic() - t0:.0f} s')

    with tempfile.TemporaryDirectory(prefix='armprofd-vm.') as work:
        g = Guest(image, work)
        try:
            wall = g.boot()
            say(f'guest up ({g.accel}): ssh answered {wall:.1f} s after qemu started')
            pid = test_install(g, deb)
            score = g.out('systemd-analyze security armprofd.service | tail -1')
            say(f'exposure: {score}')
            m = re.search(r'exposure level for armprofd.service:\s*([0-9.]+)', score)
            check('systemd-analyze security: exposure at most 2.9', m is not None and float(m.group(1)) <= 2.9,
                  score)
            since = g.out('date -d "-1 hour" +%s')
            test_serving(g)
            test_reload(g, pid)
            test_stop(g)
            # The bad drop-in's lines are the journal's only errors.
            errors = [line for line in journal_errors(g, since).splitlines()
                      if '50-bad.conf' not in line and 'reload failed' not in line.lower()]
            check('the journal has no error lines from armprofd (besides the bad drop-in\'s)', not errors,
                  '; '.join(errors)[-500:])
            test_socket(g)
            test_reboot(g)
            test_purge(g)
        except (RuntimeError, subprocess.TimeoutExpired, KeyError, AttributeError) as e:
            check('the VM test ran to its end', False, str(e))
            print('console:', g.tail())
        finally:
            g.shutdown() if g.proc and g.proc.poll() is None else None
            g.kill()
    print(f'{len(failures)} check(s) failed: {", ".join(failures)}' if failures else 'all checks passed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
