#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Developer entry point, idempotent, for a fresh Debian 12 as root:
#   packaging/dev.sh run            install what is missing, build, run armprofd
#                                   in the foreground on 127.0.0.1:9769
#   packaging/dev.sh test [asan]    install what is missing, build, run every test suite
#                                   (asan: in an ASan+UBSan build)
#   packaging/dev.sh deps [test]    only install what is missing (for run, or for test)
#   packaging/dev.sh deps ci        only what .ci/run needs on the host: it makes a
#                                   clean root where dev.sh test installs the rest
#   packaging/dev.sh packages [test]  list what run (or test) installs, one a line
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"

# .ci/clean-root's own tools (unshare and mount are util-linux, in every Debian); .ci/run's summary.
ci_host_pkgs=(debootstrap git python3)
build_pkgs=(
        gcc libc6-dev meson ninja-build pkg-config git
        libmicrohttpd-dev libsystemd-dev libjansson-dev libinih-dev
        libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libelf-dev libdw-dev libcurl4-openssl-dev
        libyaml-dev libgnutls28-dev libcrypt-dev
)
# What README.md's first screen runs beside the daemon: `curl ... | promtool check metrics`
# (promtool is in Debian's prometheus package, with the server).
run_pkgs=(
        curl prometheus
)
test_pkgs=(
        # clang's runtime (ASan, UBSan, libFuzzer) is only a Recommends of clang
        libclang-rt-14-dev
        libcmocka-dev python3 prometheus systemd curl clang linux-perf protobuf-compiler valgrind
        qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross cpio golang-go debootstrap
        # the push tests' HTTPS store: a throwaway CA and server certificate
        openssl
        # the package (packaging/build-deb.sh, lintian) booted under systemd in qemu (tests/systemd-vm);
        # dpkg-checkbuilddeps wants build-essential itself, whatever of it is installed
        build-essential debhelper dpkg-dev fakeroot lintian qemu-system-x86 qemu-utils openssh-client e2fsprogs
        # the unwinder's test of a program linked by lld (tests/symbols: its code segment's layout)
        lld
        # the man pages rendered without a warning (tests/daemon/test-manpages.py)
        groff-base man-db
        # the dashboard and rules test reads the rules file (YAML)
        python3-yaml
        # the web config test: bcrypt hashes as htpasswd makes them, network namespaces
        apache2-utils iproute2
        # the browser test (tests/browser): the pages in Chromium, driven by playwright-core under node
        chromium nodejs
        # the fleet benchmark (tests/bench/fleet.py): /metrics under 64 connections
        wrk
        # the daemon cross-built for arm64 (packaging/cross/aarch64-linux-gnu.ini) and run on a real
        # arm64 kernel under qemu (tests/arm64-guest): Debian's arm64 multiarch libraries, which
        # need the arm64 dpkg architecture (add_foreign_arch below)
        libmicrohttpd-dev:arm64 libsystemd-dev:arm64 libjansson-dev:arm64 libinih-dev:arm64
        libprotobuf-c-dev:arm64 zlib1g-dev:arm64 libelf-dev:arm64 libdw-dev:arm64
        libcurl4-openssl-dev:arm64 libyaml-dev:arm64 libgnutls28-dev:arm64 libcrypt-dev:arm64
)

as_root() {
        if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_missing() {
        local missing=() p
        for p in "$@"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        echo "dev.sh: installing ${missing[*]}" >&2
        as_root apt-get update -q
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The architectures of the :ARCH packages in a list, added to dpkg (a fresh root has only its
# own) with their package lists, so that apt-get can install them.
add_foreign_arch() {
        local p arch added=0
        for p in "$@"; do
                case "$p" in
                *:*) arch=${p##*:} ;;
                *) continue ;;
                esac
                [ "$arch" = "$(dpkg --print-architecture)" ] && continue
                dpkg --print-foreign-architectures | grep -qx "$arch" && continue
                echo "dev.sh: adding the $arch dpkg architecture" >&2
                as_root dpkg --add-architecture "$arch"
                added=1
        done
        if [ "$added" = 1 ]; then as_root apt-get update -q; fi
}

# npm for the browser test: Debian 12 packages it apart from nodejs; nodesource's nodejs
# bundles it and conflicts with Debian's npm, so only when none is on the PATH.
install_npm() {
        command -v npm >/dev/null || install_missing npm
}

build() {
        local dir=$1; shift
        if [ ! -f "$dir/build.ninja" ]; then
                meson setup "$dir" -Dwerror=true "$@"
        fi
        ninja -C "$dir"
}

case "${1:-}" in
deps)
        case "${2:-}" in
        test)
                add_foreign_arch "${test_pkgs[@]}"
                install_missing "${build_pkgs[@]}" "${run_pkgs[@]}" "${test_pkgs[@]}"
                install_npm
                ;;
        ci) install_missing "${ci_host_pkgs[@]}" ;;
        *) install_missing "${build_pkgs[@]}" "${run_pkgs[@]}" ;;
        esac
        ;;
packages)
        if [ "${2:-}" = test ]; then printf '%s\n' "${build_pkgs[@]}" "${run_pkgs[@]}" "${test_pkgs[@]}"
        else printf '%s\n' "${build_pkgs[@]}" "${run_pkgs[@]}"; fi
        ;;
run)
        install_missing "${build_pkgs[@]}" "${run_pkgs[@]}"
        build build
        exec build/daemon/armprofd -c packaging/armprofd.conf --listen 127.0.0.1:9769 "${@:2}"
        ;;
test)
        add_foreign_arch "${test_pkgs[@]}"
        install_missing "${build_pkgs[@]}" "${run_pkgs[@]}" "${test_pkgs[@]}"
        install_npm
        # A newer perf in a cached chroot, an oracle for what perf 6.1 cannot read.
        as_root packaging/newer-perf.sh
        if [ "${2:-}" = asan ]; then
                build build-asan -Dsanitize=true
                meson test -C build-asan --print-errorlogs --num-processes 2
        else
                build build
                meson test -C build --print-errorlogs --num-processes 2
        fi
        ;;
*)
        echo "usage: $0 run | test [asan] | deps [test] | packages [test]" >&2
        exit 2
        ;;
esac
