#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vm-image.sh PACKAGE...: a bootable Debian 12 disk for the systemd VM test,
# cached, and its path printed. The disk holds a minimal bookworm
# (debootstrap --variant=minbase) with systemd as init, udev, a kernel
# (linux-image-amd64), systemd-networkd on DHCP, an SSH server that lets in
# the key beside the image, and PACKAGE... (the runtime dependencies of the
# .deb under test, so that `apt install ./armprofd_*.deb` in the guest needs
# no network). Nothing of armprofd is in it.
#
# Cached in $ARMPROFD_VM_CACHE (default /var/cache/armprofd-test) as
# systemd-vm-HASH/ (HASH: of this script and the package list):
#   disk.img              ext4 root file system, raw; the test boots a qcow2
#                         overlay of it, so the image itself never changes
#   vmlinuz initrd.img    the guest's kernel and initramfs, booted directly
#   id_ed25519{,.pub}     root's SSH key in the guest
#   ready                 written last: an image without it is rebuilt
# and bookworm-vm-debs/, the packages debootstrap downloaded (a rebuild
# fetches only what changed). An image older than a week is rebuilt, an
# image for another package list is removed. Needs root.
set -euo pipefail

self=$(readlink -f "${BASH_SOURCE[0]}")
top=$(cd "$(dirname "$self")/../.." && pwd)
cache=${ARMPROFD_VM_CACHE:-/var/cache/armprofd-test}
max_age_days=7
say() { echo "vm-image: $*" >&2; }
die() { echo "vm-image: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot)"
[ $# -gt 0 ] || die "usage: $0 PACKAGE..."

# What the guest runs beside the packages asked for: init, devices, a kernel,
# the network and a way in.
base_pkgs=(systemd-sysv udev linux-image-amd64 openssh-server curl procps)
pkgs=$(printf '%s\n' "${base_pkgs[@]}" "$@" | sort -u | tr '\n' ' ')
hash=$({ cat "$self"; echo "$pkgs"; } | sha256sum | cut -c1-16)
dir=$cache/systemd-vm-$hash

mkdir -p "$cache" "$cache/bookworm-vm-debs"
exec 9>"$cache/systemd-vm.lock"
flock 9

if [ -f "$dir/ready" ]; then
        age=$(( ($(date +%s) - $(stat -c %Y "$dir/ready")) / 86400 ))
        if [ "$age" -lt "$max_age_days" ]; then
                echo "$dir"
                exit 0
        fi
        say "$dir is $age days old: rebuilding"
fi

mirror=$("$top/packaging/debian-mirror") || die "no Debian mirror to debootstrap from"
rm -rf "$dir" "$cache"/systemd-vm-*.new.*
tmp=$(mktemp -d "$cache/systemd-vm-$hash.new.XXXXXX")
root=$tmp/root
mounted=()
cleanup() {
        local i
        for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" 2>/dev/null || true; done
        rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -m 755 "$root"

t0=$SECONDS
say "debootstrap bookworm with: $pkgs (from $mirror)"
include=$(echo "$pkgs" | tr ' ' ',' | sed 's/,$//')
if ! debootstrap --variant=minbase --include="$include" --cache-dir="$cache/bookworm-vm-debs" \
        bookworm "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1; then
        tail -30 "$tmp/debootstrap.log" >&2
        die "debootstrap failed"
fi
# The package lists stay: apt resolves the .deb's dependencies from them.
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
chroot "$root" apt-get -q update >/dev/null 2>&1 || say "apt-get update in the root failed (lists from debootstrap kept)"

echo armprofd-vm >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tarmprofd-vm\n' >"$root/etc/hosts"
echo '/dev/vda / ext4 rw,relatime 0 1' >"$root/etc/fstab"
cat >"$root/etc/systemd/network/10-dhcp.network" <<'NET'
[Match]
Name=eth0

[Network]
DHCP=ipv4
NET
chroot "$root" systemctl enable -q systemd-networkd ssh
# No login prompt on the console and no wait for a fully configured network:
# the test reaches the guest through qemu's port forwarding.
chroot "$root" systemctl mask -q serial-getty@ttyS0.service systemd-networkd-wait-online.service
# The guest's clock is qemu's RTC in UTC.
printf '0.0 0 0.0\n0\nUTC\n' >"$root/etc/adjtime"

ssh-keygen -q -t ed25519 -N '' -C armprofd-systemd-vm -f "$tmp/id_ed25519"
install -d -m 700 "$root/root/.ssh"
install -m 600 "$tmp/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
# Let root in by key only, and fast: no DNS lookup of the client.
printf 'PermitRootLogin prohibit-password\nUseDNS no\n' >"$root/etc/ssh/sshd_config.d/armprofd-vm.conf"

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
cp "$kernel" "$tmp/vmlinuz"
cp "$initrd" "$tmp/initrd.img"
chroot "$root" apt-get -q clean
umount -R "$root/proc"; mounted=()

# The root file system: what is there plus 1 GiB free, owners and modes kept
# (mke2fs -d).
size_mib=$(( $(du -sm "$root" | cut -f1) + 1024 ))
mkfs.ext4 -q -L root -d "$root" "$tmp/disk.img" "${size_mib}M" >&2
rm -rf "$root" "$tmp/debootstrap.log"
date -u +%FT%TZ >"$tmp/ready"
mv -T "$tmp" "$dir"
trap - EXIT
for old in "$cache"/systemd-vm-*; do
        [ "$old" = "$dir" ] || [ "$old" = "$cache/systemd-vm.lock" ] || rm -rf "$old"
done
say "built $dir in $((SECONDS - t0)) s"
echo "$dir"
