#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A newer perf than Debian 12's 6.1, as an oracle for what 6.1 cannot read
# (version 2 Arm SPE metadata, with a MIDR per CPU): Debian 13 (minbase,
# debootstrap) with linux-perf from trixie-backports, in a chroot cached at
# $ARMPROFD_PERF_ROOT (default /var/cache/armprofd-test/perf-trixie) and
# rebuilt when missing or older than a week. Tests run it as
# `chroot ROOT perf ...` on files they put under ROOT/tmp. Needs root.
set -euo pipefail

root=${ARMPROFD_PERF_ROOT:-/var/cache/armprofd-test/perf-trixie}

if [ -x "$root/usr/bin/perf" ] && [ -f "$root/.armprofd-stamp" ] &&
        [ -z "$(find "$root/.armprofd-stamp" -mtime +7)" ]; then
        exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "newer-perf.sh: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "newer-perf.sh: debootstrap is not installed" >&2; exit 1; }

# The Debian mirror this machine's apt uses (its bookworm source serves trixie too).
mirror=$("$(dirname "${BASH_SOURCE[0]}")/debian-mirror") || exit 1

mkdir -p "$(dirname "$root")"
tmp=$(mktemp -d "$root.new.XXXXXX")
# A root apt runs in: its _apt user must be able to read it.
chmod 755 "$tmp"
cleanup() {
        mountpoint -q "$tmp/proc" && umount "$tmp/proc"
        rm -rf "$tmp"
}
trap cleanup EXIT

start=$SECONDS
echo "newer-perf.sh: building $root from $mirror (trixie, trixie-backports)" >&2
log=$tmp.log
quiet() { "$@" >>"$log" 2>&1 || { tail -20 "$log" >&2; rm -f "$log"; exit 1; }; }
quiet debootstrap --variant=minbase trixie "$tmp" "$mirror"
echo "deb $mirror trixie-backports main" >"$tmp/etc/apt/sources.list.d/backports.list"
mount --bind /proc "$tmp/proc"
quiet chroot "$tmp" apt-get update -q
quiet chroot "$tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -t trixie-backports linux-perf
umount "$tmp/proc"
quiet chroot "$tmp" apt-get clean
rm -f "$log"
chroot "$tmp" perf --version >&2
touch "$tmp/.armprofd-stamp"

rm -rf "$root"
mv "$tmp" "$root"
trap - EXIT
echo "newer-perf.sh: ready in $((SECONDS - start)) s" >&2
