#!/usr/bin/env bash
# Builds the two packages of glk from this workspace, as .deb (dpkg-deb) and .rpm
# (rpmbuild, when installed: Debian's package `rpm`):
#   glk         the node tool (top, trace, stats, capture): /usr/bin/glk, the man page,
#               bash/zsh/fish completions; depends on the system libtracefs and glibc.
#   glk-engine  the analysis engine (analyze, export, trace -o .parquet): /usr/bin/glk-engine;
#               depends on glibc and the GCC runtime (libgcc_s) only.
# Usage: scripts/package.sh [--profile release|dev] [--no-build] [--rpm] [OUTDIR]
# The default is a release build (long the first time: polars) and OUTDIR target/packages.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release build=yes rpm=no out=
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="$2"; shift 2 ;;
        --no-build) build=no; shift ;;
        --rpm) rpm=yes; shift ;;
        -*) echo "package: unknown option $1" >&2; exit 2 ;;
        *) out="$1"; shift ;;
    esac
done
target="${CARGO_TARGET_DIR:-target}"
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
out="${out:-$target/packages}"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
if [ "$build" = yes ]; then
    cargo build --locked --profile "$profile" -p glk -p glk-engine
fi
bin="$target/$dir"
for b in glk glk-engine; do
    [ -x "$bin/$b" ] || { echo "package: $bin/$b is missing (build it, or drop --no-build)" >&2; exit 1; }
done
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The oldest glibc a binary needs: the highest GLIBC_x.y among its symbol versions.
glibc_of() {
    objdump -T "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1
}
# The Debian package (and its installed version) that ships a shared library.
deb_dep_of() {
    local lib path pkg ver p
    lib="$1"
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
    [ -n "$path" ] || return 0
    # With a merged /usr the package may have registered the /lib or the /usr/lib path.
    for p in "$path" "$(readlink -f "$path")" "${path#/usr}" "/usr$path"; do
        pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1) || true
        [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || return 0
    ver=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//')
    echo "$pkg (>= $ver)"
}

# Files of each package, below a root.
stage_glk() {
    local root="$1"
    install -D -m 0755 "$bin/glk" "$root/usr/bin/glk"
    strip --strip-unneeded "$root/usr/bin/glk" 2>/dev/null || true
    mkdir -p "$root/usr/share/man/man1"
    "$bin/glk" generate man | gzip -9n > "$root/usr/share/man/man1/glk.1.gz"
    install -d "$root/usr/share/bash-completion/completions" \
        "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
    "$bin/glk" generate bash > "$root/usr/share/bash-completion/completions/glk"
    "$bin/glk" generate zsh > "$root/usr/share/zsh/vendor-completions/_glk"
    "$bin/glk" generate fish > "$root/usr/share/fish/vendor_completions.d/glk.fish"
    install -D -m 0644 README.md "$root/usr/share/doc/glk/README.md"
}
stage_engine() {
    local root="$1"
    install -D -m 0755 "$bin/glk-engine" "$root/usr/bin/glk-engine"
    strip --strip-unneeded "$root/usr/bin/glk-engine" 2>/dev/null || true
    install -d "$root/usr/share/doc/glk-engine"
    echo "glk-engine runs glk analyze and glk export; see /usr/share/doc/glk/README.md" \
        > "$root/usr/share/doc/glk-engine/README"
}

deb() {
    local name="$1" desc="$2" root="$stage/deb-$1" deps glibc lib
    "stage_${3}" "$root"
    glibc=$(glibc_of "$root/usr/bin/$name")
    deps="libc6 (>= $glibc)"
    for lib in $(objdump -p "$root/usr/bin/$name" | awk '$1 == "NEEDED" { print $2 }'); do
        case "$lib" in libc.so.*|libm.so.*|ld-linux*|libpthread*|libdl*|librt*) continue ;; esac
        d=$(deb_dep_of "$lib")
        [ -n "$d" ] && deps="$deps, $d"
    done
    mkdir -p "$root/DEBIAN"
    cat > "$root/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: glk developers <glk@example.invalid>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $deps
Section: admin
Priority: optional
Homepage: https://example.invalid/glk
Description: $desc
CONTROL
    dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${name}_${version}_${arch}.deb" >/dev/null
    echo "$out/${name}_${version}_${arch}.deb  (Depends: $deps)"
}

rpmpkg() {
    local name="$1" summary="$2" top="$stage/rpm-$1"
    mkdir -p "$top"/{BUILD,BUILDROOT,RPMS,SPECS,SOURCES,SRPMS}
    local root="$top/root"
    "stage_${3}" "$root"
    local files
    files=$(cd "$root" && find . -type f | sed 's|^\.||' | sort)
    cat > "$top/SPECS/$name.spec" <<SPEC
Name: $name
Version: $version
Release: 1
Summary: $summary
License: GPL-2.0-or-later
URL: https://example.invalid/glk
AutoReqProv: yes
%description
$summary
%install
mkdir -p %{buildroot}
cp -a $root/. %{buildroot}/
%files
$files
SPEC
    rpmbuild --quiet --define "_topdir $top" --define "_build_id_links none" \
        --define "__strip /bin/true" --define "__os_install_post %{nil}" -bb "$top/SPECS/$name.spec" >/dev/null
    find "$top/RPMS" -name '*.rpm' -exec cp {} "$out/" \; -exec basename {} \; | sed "s|^|$out/|"
}

node_desc="GFS2 lock visibility on cluster nodes: glk top, trace, stats, capture
 glk shows which GFS2 glocks are contended, who holds them (node, pid, call site),
 whether a waiter is stuck or slow, and DLM round-trip times, from debugfs and tracefs.
 Analysis of captures (glk analyze, glk export) needs the glk-engine package."
engine_desc="GFS2 lock analysis engine: glk analyze and glk export
 The polars engine behind glk analyze, glk export and glk trace -o FILE.parquet, for
 the analyst's workstation. Install glk as well for the command line."
deb glk "$node_desc" glk
deb glk-engine "$engine_desc" engine
if [ "$rpm" = yes ]; then
    command -v rpmbuild >/dev/null || { echo "package: rpmbuild not found (apt-get install rpm)" >&2; exit 1; }
    rpmpkg glk "GFS2 lock visibility on cluster nodes: glk top, trace, stats, capture" glk
    rpmpkg glk-engine "GFS2 lock analysis engine behind glk analyze and glk export" engine
fi
