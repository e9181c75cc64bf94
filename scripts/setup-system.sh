#!/usr/bin/env bash
# Installs the system packages glk needs to build, package and test (with GLK_TEST_SETUP
# set, also tmux, which drives the console tests, chromium, which renders glk report's HTML
# in its tests, debootstrap, which makes the Debian userlands the packages are tested in,
# lintian, which checks the .deb files, prometheus (with promtool), which scrapes glk
# exporter and checks its rules, openssl, which makes the exporter's test certificate,
# trace-cmd, whose `report` reads trace.dat files, openssh-server, openssh-client and sudo,
# which cluster mode's tests and benchmark reach stand-in nodes with, and a Java runtime for
# Spark where none is installed), on Debian/Ubuntu (apt-get)
# or RHEL/Fedora (dnf/yum). Does nothing when they are already there.
set -euo pipefail

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    pkgs=(pkg-config gcc libc6-dev libtracefs-dev libtraceevent-dev xz-utils rpm binutils
        dpkg-dev python3-venv)
    [ -n "${GLK_TEST_SETUP:-}" ] && pkgs+=(tmux chromium debootstrap lintian openssl trace-cmd
        openssh-server openssh-client sudo)
    # A Java runtime for Spark (pyspark reads the fleet dataset in its test), unless one is there.
    [ -n "${GLK_TEST_SETUP:-}" ] && ! command -v java >/dev/null 2>&1 && pkgs+=(default-jre-headless)
    missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "setup: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        sudo_if_needed apt-get update -qq
        sudo_if_needed apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    # Without its recommends: they would bring a node exporter, started as a service.
    if [ -n "${GLK_TEST_SETUP:-}" ] && ! dpkg-query -W -f='${Status}' prometheus 2>/dev/null | grep -q "install ok installed"; then
        echo "setup: installing prometheus" >&2
        export DEBIAN_FRONTEND=noninteractive
        sudo_if_needed apt-get update -qq
        sudo_if_needed apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    fi
elif command -v dnf >/dev/null 2>&1 || command -v yum >/dev/null 2>&1; then
    pm=$(command -v dnf || command -v yum)
    pkgs=(pkgconf-pkg-config gcc glibc-devel libtracefs-devel libtraceevent-devel xz)
    [ -n "${GLK_TEST_SETUP:-}" ] && pkgs+=(tmux chromium openssh-server openssh-clients sudo)
    missing=()
    for p in "${pkgs[@]}"; do rpm -q "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "setup: installing ${missing[*]}" >&2
        sudo_if_needed "$pm" install -y -q "${missing[@]}"
    fi
else
    echo "setup: unknown package manager; install pkg-config, a C compiler, libtracefs (dev) and xz yourself" >&2
fi

# Rust comes from rustup; make sure cargo is on PATH for the scripts that follow.
if ! command -v cargo >/dev/null 2>&1 && [ -f "${HOME:-/root}/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "${HOME:-/root}/.cargo/env"
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found: install Rust with rustup first" >&2; exit 1; }
