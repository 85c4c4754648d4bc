#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Self-test of the simulated SPE PMU: each case builds a scenario from spegen
output (simpmu-setup.py) and runs test-simpmu with the shim preloaded.

  simpmu-test.py SPEGEN TEST_SIMPMU LIBSIMPMU FIXTURE
"""

import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('simpmu_setup', os.path.join(HERE, 'simpmu-setup.py'))
simpmu_setup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(simpmu_setup)

spegen, test_exe, shim, fixture = sys.argv[1:5]

# Faults on every CPU of the 4: each one's count is checked by test-simpmu.
FAULTS = [
    'collision=0:2', 'collision=3:1',
    'partial=1:500',
    'split=2:300', 'split=0:777',
    'lost=3:2:7',
    'lost_samples=0:100:5',
    'throttle=2:1000:10',
]

# name, spegen args, setup keywords, scenario keys, test args
CASES = [
    # Everything, rate 0: the cores wait for the reader, nothing is dropped
    # but what a fault drops; AUX 64 KiB, watermark at half.
    ('faults', ['--seed', '7', '--records', '24000', '--no-context'], {}, ['rate=0'] + FAULTS,
     ['drain', '256', '16', '0']),
    # The smallest AUX area SPE takes (2 pages), a 1 KiB watermark, CONTEXT
    # packets present: many truncations, padding at every page; every
    # sample_id field (ID and STREAM_ID too).
    ('tight', ['--seed', '8', '--records', '8000'], {}, ['rate=0'],
     ['drain', '256', '2', '1024', 'all-ids']),
    # N1 fixed 64-byte records, 8-byte alignment of the buffer pointer.
    ('padded', ['--seed', '9', '--records', '8000', '--padded', '--no-context'], {}, ['rate=0', 'align=8'],
     ['drain', '256', '4', '0']),
    # Paced at 20000 records/s with a reader that only drains every 30 ms: the
    # records that come while the event is off are dropped and listed.
    ('paced', ['--seed', '10', '--records', '6000', '--no-context'], {'cpus': '0-1'}, ['rate=20000'],
     ['drain', '256', '2', '0', '30']),
    # A data ring too small for the switch records: PERF_RECORD_LOST from the
    # kernel's side, lost AUX records are gaps.
    ('datalost', ['--seed', '11', '--records', '4000', '--no-context'], {'cpus': '0'}, ['rate=0'],
     ['drain', '1', '16', '0']),
    # CPU 1 goes offline under its event and comes back: ENODEV meanwhile, a
    # new event afterwards; rate 0, so no record is lost.
    ('offline', ['--seed', '13', '--records', '12000', '--no-context'], {'cpus': '0-1'}, ['rate=0'],
     ['drain', '64', '8', '0', 'offline']),
    # A kernel without CONFIG_PID_IN_CONTEXTIDR (cx=0): the generator's records
    # have CONTEXT packets, the AUX area none (test-simpmu cuts them out of the
    # truth with the daemon's packet decoder); a 2-page area, many truncations.
    ('nocx', ['--seed', '14', '--records', '8000'], {}, ['rate=0', 'cx=0'],
     ['drain', '256', '2', '1024', 'no-cx']),
    # Linux 6.1: attr_size 128 and an ITRACE_START at every ENABLE that starts
    # the event (perf_log_itrace_start() before 87f78017e8c8), one per
    # truncation here.
    ('kernel61', ['--seed', '15', '--records', '8000', '--no-context'], {'cpus': '0-1'}, ['rate=0', 'kernel=6.1'],
     ['drain', '256', '2', '1024', 'itrace-each']),
    # A kernel with 64 KiB pages: test-simpmu's sysconf(_SC_PAGESIZE) says so,
    # its AUX area is 2 such pages, the driver pads to 64 KiB page limits.
    ('page64k', ['--seed', '16', '--records', '40000', '--no-context'], {'cpus': '0-1'},
     ['rate=0', 'page_size=65536'], ['drain', '4', '2', '0', 'page=65536']),
    # Events that leave the kernel out (exclude_kernel): the shim never makes
    # the EL1/EL2 records, exactly those (test-simpmu reads each record's EL
    # with the daemon's packet decoder); the other cases keep them all.
    ('user', ['--seed', '17', '--records', '8000', '--no-context'], {'cpus': '0-1'}, ['rate=0'],
     ['drain', '256', '4', '0', 'exclude-kernel']),
    # Fatal buffer faults (stage 1 and 2 aborts on the buffer): the session
    # ends with no TRUNCATED, the event stays on with its hardware stopped;
    # only DISABLE + ENABLE restarts it. Rate 0: nothing else is dropped.
    ('fault', ['--seed', '14', '--records', '8000', '--no-context'], {'cpus': '0-1'},
     ['rate=0', 'fault=0:1000:s1', 'fault=1:700:s2', 'fault=1:1800:s1'],
     ['drain', '16', '8', '0', 'fault']),
    # The user page's clock as arm64 writes it, the switches at the kernel's
    # sched_clock time: a counter that wrapped since the epoch (a 32-bit
    # mask, time_cycles past the records' ticks) and a shift of 32 clamped
    # to 31 (mult halved), so that only a reader that applies time_cycles
    # and time_mask (cap_user_time_short) attributes the records right.
    ('clock', ['--seed', '15', '--records', '4000', '--no-context'], {'cpus': '0-1'},
     ['rate=0', 'time_cycles=0xF0000000', 'time_mask=0xFFFFFFFF', 'time_shift=32', 'time_mult=0xC0000000'],
     ['drain', '16', '8', '0', 'clock']),
    # Before Linux 5.12: no cap_user_time_short, time_cycles and time_mask 0.
    ('clock-old', ['--seed', '16', '--records', '4000', '--no-context'], {'cpus': '0-1'},
     ['rate=0', 'time_short=0'], ['drain', '16', '8', '0', 'clock']),
    # sched_clock not the arch timer: no cap_user_time_zero, no time fields.
    ('clock-none', ['--seed', '17', '--records', '4000', '--no-context'], {'cpus': '0-1'},
     ['rate=0', 'time_zero_cap=0'], ['drain', '16', '8', '0', 'clock']),
    # Two SPE PMUs (arm_spe_0 on CPUs 0-1, arm_spe_1 on 2-3, types 42 and
    # 43): each CPU opened with its own PMU's type, the other's is ENOENT.
    ('two-pmus', ['--seed', '18', '--records', '8000', '--no-context'], {'cpus': '0-1'},
     ['rate=0', 'type2=43', 'cpus2=2-3'], ['drain', '16', '8', '0']),
    # Fork and exec storms: 3000 processes' FORK, COMM, MMAP2, EXIT at once
    # on CPU 0, 500 on CPU 1, into a 16-page data ring: the kernel's LOST
    # counts what it had no room for, every record it took is read.
    ('storm', ['--seed', '19', '--records', '4000', '--no-context'], {'cpus': '0-1'},
     ['rate=0', 'sideband_storm=0:300:3000', 'sideband_storm=1:900:500'], ['drain', '16', '8', '0', 'storm']),
    ('errors', ['--seed', '12', '--records', '200'],
     {'cpus': '0-3', 'possible': '0-5', 'online': '0-2,4'},
     ['noperfmon=1', 'eacces_cpus=1', 'ebusy=2:2', 'mmap_limit=65536', 'mmap_errno=ENOMEM'],
     ['errors']),
]


def main():
    only = os.environ.get('SIMPMU_CASES')
    failed = []
    with tempfile.TemporaryDirectory(prefix='simpmu-') as tmp:
        for name, gen_args, kw, keys, args in CASES:
            if only and name not in only.split(','):
                continue
            gen_dir = os.path.join(tmp, name, 'gen')
            scen = os.path.join(tmp, name, 'scen')
            root = os.path.join(tmp, name, 'sysfs')
            os.makedirs(gen_dir)
            subprocess.run([spegen, '--ts', '--cpus', '4', '--scenario', 'all', '--out-dir', gen_dir,
                            '--no-perf-data'] + gen_args, check=True)
            simpmu_setup.setup(gen_dir, scen, root, kw.get('cpus', '0-3'), 42, kw.get('possible'),
                               kw.get('online'), fixture=fixture, keys=keys)
            env = dict(os.environ)
            env['ARMPROFD_SIMPMU_DIR'] = scen
            env['ARMPROFD_SYSFS_ROOT'] = root
            env['LD_PRELOAD'] = os.path.abspath(shim)
            # An instrumented shim preloaded before the sanitizer runtime the test links.
            env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':verify_asan_link_order=0'
            print('== %s: %s' % (name, ' '.join(keys)), flush=True)
            r = subprocess.run([test_exe] + args, env=env, timeout=240)
            with open(os.path.join(scen, 'sim.log')) as f:
                log = f.read().splitlines()
            print('   sim.log: %d lines; %s' % (len(log), '; '.join(l for l in log if ' done ' in l)), flush=True)
            if r.returncode:
                print('\n'.join(log[-40:]))
                failed.append(name)
    if failed:
        print('FAILED: ' + ', '.join(failed))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
