#!/usr/bin/env bash
# The distributable packages on real userlands: builds them (scripts/package.sh: glk for
# glibc 2.17, glk-engine for 2.28), then
#   - checks that glk needs no glibc symbol newer than GLIBC_2.17 and glk-engine none newer
#     than GLIBC_2.28 (objdump -T);
#   - runs lintian on the .deb files (no errors);
#   - checks every requirement of the .rpm files against what RHEL 7 (glk) and RHEL 8 (both)
#     provide (packaging/rhel7-provides.txt and rhel8-provides.txt say how they were made);
#   - debootstraps Debian 11 (bullseye, glibc 2.31) and Debian 13 (trixie), installs both
#     .deb files into each with apt, and runs there, from /usr/bin:
#     glk top and glk doctor on a real capture (their output must equal this machine's
#     native build's on the same files) and, as root, glk trace on this machine's tracefs
#     (mounted for the test where it is not; it must be as it was afterwards).
# Needs root, debootstrap, rpm and the network to the Debian archive. Where it cannot make
# its checks it says SKIPPED and exits 0, except under CI (CI set), where it fails.
# The base userlands are kept in ~/.cache/glk-chroots and copied for each run.
# Usage: scripts/test-distros.sh [--packages DIR] [--profile PROFILE] [SUITE...]
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$(pwd)
pkgs='' profile=release suites=()
while [ $# -gt 0 ]; do
    case "$1" in
        --packages) pkgs="$2"; shift 2 ;;
        --profile) profile="$2"; shift 2 ;;
        -*) echo "test-distros: unknown option $1" >&2; exit 2 ;;
        *) suites+=("$1"); shift ;;
    esac
done
[ "${#suites[@]}" -gt 0 ] || suites=(bullseye trixie)
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
cache="${GLK_CHROOTS:-$home/.cache/glk-chroots}"
passed=0 failed=0

skip() {
    if [ -n "${CI:-}" ]; then
        echo "test-distros: FAILED: cannot run under CI: $*" >&2
        exit 1
    fi
    echo "SKIPPED: test-distros: $*" >&2
    [ -n "${GLK_SKIP_LOG:-}" ] && echo "test-distros: $*" >> "$GLK_SKIP_LOG"
    exit 0
}
ok() { echo "test-distros: ok: $*"; passed=$((passed + 1)); }
bad() { echo "test-distros: FAILED: $*" >&2; failed=$((failed + 1)); }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, tracefs)"
for tool in debootstrap rpm objdump dpkg-deb chroot lintian; do
    command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/setup-system.sh installs it)"
done

work=$(mktemp -d /var/tmp/glk-distros.XXXXXX)
mounts=()
# Unmounts what this script mounted, last first; fails if any unmount failed.
unmount_all() {
    local i status=0
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        umount -l "${mounts[$i]}" || status=1
    done
    mounts=()
    return "$status"
}
cleanup() {
    unmount_all 2>/dev/null || true
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# 1. The packages, and the native build they are compared with.
if [ -z "$pkgs" ]; then
    pkgs="$work/packages"
    bash scripts/package.sh --rpm --profile "$profile" "$pkgs"
fi
target="${CARGO_TARGET_DIR:-target}"
# The test command's own build (cargo test builds both binaries); built here only when
# this script runs alone, since another set of packages would rebuild polars.
if ! [ -x "$target/debug/glk" ] || ! [ -x "$target/debug/glk-engine" ]; then
    cargo build --locked -q --workspace --bins
fi
native=$(cd "$target/debug" && pwd)
node_deb=$(ls "$pkgs"/glk_*.deb) engine_deb=$(ls "$pkgs"/glk-engine_*.deb)
node_rpm=$(ls "$pkgs"/glk-[0-9]*.rpm) engine_rpm=$(ls "$pkgs"/glk-engine-[0-9]*.rpm)

# 2. glibc symbol versions, read from the packaged binaries: glk's floor is RHEL 7's glibc,
# the engine's RHEL 8's.
unpacked="$work/unpacked"
for deb in "$node_deb" "$engine_deb"; do dpkg-deb -x "$deb" "$unpacked"; done
for pair in glk:2.17 glk-engine:2.28; do
    b=${pair%%:*} floor=GLIBC_${pair#*:}
    newest=$(objdump -T "$unpacked/usr/bin/$b" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
    if [ "$(printf '%s\n%s\n' "$newest" "$floor" | sort -V | tail -1)" = "$floor" ]; then
        ok "$b needs glibc symbols up to $newest only (floor $floor)"
    else
        bad "$b needs $newest, newer than $floor: $(objdump -T "$unpacked/usr/bin/$b" | grep "$newest" | head -3)"
    fi
done
if objdump -p "$unpacked/usr/bin/glk" | grep -q 'NEEDED.*libtrace'; then
    bad "glk links a shared libtracefs or libtraceevent"
else
    ok "glk carries its libtracefs (no shared libtracefs or libtraceevent needed)"
fi

# Debian's package checker: no errors (the warnings it prints are about uploads to
# Debian's archive and glk-engine having no man page of its own).
if lint=$(lintian --fail-on error "$node_deb" "$engine_deb" 2>&1); then
    ok "lintian finds no error in the .deb files$(grep -c '^W:' <<<"$lint" | sed 's/^/ (/; s/$/ warnings)/')"
else
    bad "lintian: $lint"
fi

# 3. The .rpm requirements against what RHEL provides: glk's against RHEL 7's and RHEL 8's,
# the engine's against RHEL 8's.
own="$work/own-provides"
rpm -qp --provides "$node_rpm" "$engine_rpm" 2>/dev/null | sed 's/ *=.*//' > "$own"
requirements_met() {
    local rpmfile="$1" release="$2" provides="$work/provides-$2" missing
    grep -v '^#' "packaging/$release-provides.txt" | cat - "$own" > "$provides"
    missing=$(rpm -qp --requires "$rpmfile" 2>/dev/null | sed 's/ *[<>=].*//' | sort -u |
        grep -vxF -f "$provides" || true)
    if [ -z "$missing" ]; then
        ok "$(basename "$rpmfile"): every requirement is provided on ${release^^} ($(rpm -qp --requires "$rpmfile" 2>/dev/null | wc -l) requirements)"
    else
        bad "$(basename "$rpmfile") requires what ${release^^} does not provide: $(echo "$missing" | tr '\n' ' ')"
    fi
}
requirements_met "$node_rpm" rhel7
requirements_met "$node_rpm" rhel8
requirements_met "$engine_rpm" rhel8

# What the packaged glk must print, from the native build. glk top's first line holds the
# time of the read; everything below it must be equal.
fixture="$root_dir/testdata/fixtures/real/dlm2-6.1"
expect() {
    (cd "$fixture" && "$native/$1" "${@:2}" 2>&1; echo "exit $?") || true
}
top_args=(top --plain --color never n1/glocks.4 n2/glocks.4)
doctor_args=(doctor --color never n1 n2)
expect_top=$(expect glk "${top_args[@]}" | tail -n +2)
expect_doctor=$(expect glk "${doctor_args[@]}")
grep -q 6/60af5 <<<"$expect_top" || bad "the native glk top shows no 6/60af5: $expect_top"

tracefs_state() {
    local t=/sys/kernel/tracing
    ls "$t/instances"
    cat "$t/tracing_on" "$t/current_tracer" "$t/set_event" "$t/buffer_size_kb"
}

# 4. Each userland.
base_of() {
    local suite="$1" base="$cache/$1"
    if ! [ -x "$base/usr/bin/apt-get" ] || ! [ -f "$base/.glk-complete" ]; then
        rm -rf --one-file-system "$base"
        mkdir -p "$cache"
        echo "test-distros: debootstrap $suite (once; kept in $cache)" >&2
        if ! debootstrap --variant=minbase "$suite" "$base" > "$work/debootstrap-$suite.log" 2>&1; then
            tail -5 "$work/debootstrap-$suite.log" >&2
            return 1
        fi
        touch "$base/.glk-complete"
    fi
    echo "$base"
}
in_chroot() {
    local r="$1"
    shift
    chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}
for suite in "${suites[@]}"; do
    if ! base=$(base_of "$suite"); then
        bad "$suite: debootstrap failed"
        continue
    fi
    r="$work/$suite"
    cp -a "$base" "$r"
    mount -t proc proc "$r/proc" && mounts+=("$r/proc")
    mount --bind /dev "$r/dev" && mounts+=("$r/dev")
    mkdir -p "$r/tmp/pkgs" "$r/tmp/capture"
    cp "$node_deb" "$engine_deb" "$r/tmp/pkgs/"
    cp -r "$fixture/." "$r/tmp/capture/"
    # shellcheck disable=SC2016 # dpkg-query's own field syntax
    glibc=$(in_chroot "$r" dpkg-query -W -f='${Version}' libc6)
    if in_chroot "$r" apt-get install -y -q --no-install-recommends \
        "/tmp/pkgs/$(basename "$node_deb")" "/tmp/pkgs/$(basename "$engine_deb")" > "$work/apt-$suite.log" 2>&1; then
        ok "$suite (libc6 $glibc): apt installed $(basename "$node_deb") and $(basename "$engine_deb")"
    else
        bad "$suite: apt could not install the packages: $(tail -5 "$work/apt-$suite.log")"
        continue
    fi
    for f in /usr/bin/glk /usr/bin/glk-engine /usr/share/man/man1/glk.1.gz \
        /usr/share/bash-completion/completions/glk /usr/share/doc/glk/copyright \
        /usr/share/doc/glk/changelog.Debian.gz; do
        [ -f "$r$f" ] || bad "$suite: $f is not installed"
    done
    libs=$(in_chroot "$r" ldd /usr/bin/glk /usr/bin/glk-engine 2>&1 || true)
    if grep -q 'not found' <<<"$libs"; then
        bad "$suite: missing libraries: $libs"
    fi

    got_top=$(in_chroot "$r" sh -c "cd /tmp/capture && glk ${top_args[*]} 2>&1; echo exit \$?" | tail -n +2)
    if [ "$got_top" = "$expect_top" ]; then
        ok "$suite: glk top on the dlm2-6.1 capture prints what the native build prints ($(wc -l <<<"$got_top") lines)"
    else
        bad "$suite: glk top differs from the native build: $(diff <(echo "$expect_top") <(echo "$got_top") | head -20)"
    fi
    got_doctor=$(in_chroot "$r" sh -c "cd /tmp/capture && glk ${doctor_args[*]} 2>&1; echo exit \$?")
    if [ "$got_doctor" = "$expect_doctor" ]; then
        ok "$suite: glk doctor on the capture prints what the native build prints ($(tail -1 <<<"$got_doctor"))"
    else
        bad "$suite: glk doctor differs from the native build: $(diff <(echo "$expect_doctor") <(echo "$got_doctor") | head -20)"
    fi

    # This machine's tracefs, or one mounted for the test (unmounted with the chroot's
    # mounts) where nothing has mounted it.
    if ! [ -d /sys/kernel/tracing/instances ] && [ -d /sys/kernel/tracing ] &&
        mount -t tracefs glk-test /sys/kernel/tracing; then
        mounts+=(/sys/kernel/tracing)
    fi
    if [ -d /sys/kernel/tracing/instances ]; then
        mkdir -p "$r/sys/kernel/tracing"
        mount --bind /sys/kernel/tracing "$r/sys/kernel/tracing" && mounts+=("$r/sys/kernel/tracing")
        before=$(tracefs_state)
        # An exec while glk traces (/bin/true) proves that events reached it.
        trace=$(in_chroot "$r" sh -c 'glk trace --events sched:sched_process_exec --duration 2 --summary 2>&1 &
            sleep 1; /bin/true; wait $!; echo exit $?')
        after=$(tracefs_state)
        if grep -q '^exit 0$' <<<"$trace" && grep -q 'sched_process_exec' <<<"$trace"; then
            ok "$suite: glk trace recorded sched_process_exec live"
        else
            bad "$suite: glk trace: $trace"
        fi
        if [ "$before" = "$after" ]; then
            ok "$suite: tracefs is as it was after glk trace"
        else
            bad "$suite: tracefs changed: $(diff <(echo "$before") <(echo "$after"))"
        fi
    elif [ -n "${CI:-}" ]; then
        bad "$suite: no tracefs at /sys/kernel/tracing for glk trace"
    else
        echo "SKIPPED: test-distros: $suite: glk trace (no tracefs at /sys/kernel/tracing)" >&2
    fi
    unmount_all
    rm -rf --one-file-system "$r"
done

echo "test-distros: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
