#!/usr/bin/env bash
# Builds the two packages of glk, as .deb (dpkg-deb) and .rpm (rpmbuild, when installed:
# Debian's package `rpm`):
#   glk         the node tool (top, trace, stats, capture, analyze, doctor, report,
#               exporter): /usr/bin/glk, the man page, bash/zsh/fish completions, the
#               exporter's systemd unit and its defaults file (/etc/default/glk-exporter in
#               the .deb, /etc/sysconfig/glk-exporter in the .rpm), its Prometheus alert
#               rules and Grafana dashboard in /usr/share/glk.
#   glk-engine  the polars engine (export, trace -o .parquet): /usr/bin/glk-engine;
#               depends on glk.
#
# By default the binaries are built with cargo-zigbuild (scripts/setup-zig.sh installs it
# and zig in ~/.cache/glk-zig) for old glibc versions: glk for glibc 2.17 (RHEL 7, the
# CentOS 7 userland of XenServer dom0), glk-engine for glibc 2.28 (RHEL 8); glk links the
# pinned static libtracefs and libtraceevent (scripts/tracefs-static.sh). The packages need
# only glibc: they install on RHEL 8 and 9 (glk also on RHEL 7), Debian 11 to 13, Ubuntu
# 20.04 to 24.04 and SLES 15 SP3 and later. The script refuses a binary that needs a newer
# glibc symbol than its floor.
#
# --native packages the machine's own build instead (target/PROFILE/): what the tests
# install on this machine; glk then depends on the system's libtracefs.
#
# Usage: scripts/package.sh [--native] [--profile release|dev] [--no-build] [--rpm] [OUTDIR]
# The default is a release build (long the first time: polars) and OUTDIR target/packages.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release build=yes rpm=no out='' native=no
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="$2"; shift 2 ;;
        --no-build) build=no; shift ;;
        --rpm) rpm=yes; shift ;;
        --native) native=yes; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "package: unknown option $1" >&2; exit 2 ;;
        *) out="$1"; shift ;;
    esac
done
target="${CARGO_TARGET_DIR:-target}"
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
out="${out:-$target/packages}"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
# The oldest glibc each distributable binary may need: the node tool RHEL 7's (also the
# CentOS 7 userland of XenServer and XCP-ng dom0, where GFS2 backs clustered pools), the
# engine, for the analyst's workstation, RHEL 8's.
glibc_floor_glk=2.17
glibc_floor_engine=2.28

# The package revision comes from packaging/changelog, whose newest entry must be this
# workspace's version.
deb_version=$(dpkg-parsechangelog -l packaging/changelog -S Version)
case "$deb_version" in
    "$version"-*) release="${deb_version#"$version"-}" ;;
    *) echo "package: packaging/changelog's newest entry is $deb_version, the workspace is $version: add an entry" >&2
       exit 1 ;;
esac

if [ "$native" = yes ]; then
    bin_glk="$target/$dir" bin_engine="$target/$dir"
    if [ "$build" = yes ]; then
        cargo build --locked --profile "$profile" -p glk -p glk-engine
    fi
else
    case "$arch" in
        amd64) triple=x86_64-unknown-linux-gnu ;;
        *) echo "package: the old-glibc builds are set up for amd64 only (this machine: $arch); try --native" >&2
           exit 1 ;;
    esac
    # Two glibc versions, two target directories: cargo would otherwise rebuild the C parts
    # of every dependency on each switch.
    bin_glk="$target/glibc-$glibc_floor_glk/$triple/$dir"
    bin_engine="$target/$triple/$dir"
    tracefs_static=$(bash scripts/tracefs-static.sh)
    if [ "$build" = yes ]; then
        zig_path=$(bash scripts/setup-zig.sh)
        PATH="$zig_path:$PATH" GLK_TRACEFS_STATIC="$tracefs_static" CARGO_TARGET_DIR="$target/glibc-$glibc_floor_glk" \
            cargo zigbuild --locked --profile "$profile" --target "$triple.$glibc_floor_glk" -p glk
        PATH="$zig_path:$PATH" \
            cargo zigbuild --locked --profile "$profile" --target "$triple.$glibc_floor_engine" -p glk-engine
    fi
fi
[ -x "$bin_glk/glk" ] || { echo "package: $bin_glk/glk is missing (build it, or drop --no-build)" >&2; exit 1; }
[ -x "$bin_engine/glk-engine" ] ||
    { echo "package: $bin_engine/glk-engine is missing (build it, or drop --no-build)" >&2; exit 1; }
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The newest glibc symbol version a binary needs.
glibc_of() {
    objdump -T "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1
}
# Refuses a binary that needs a glibc symbol newer than its floor.
check_glibc() {
    local file="$1" floor="$2" need
    need=$(glibc_of "$file")
    if [ "$(printf '%s\n%s\n' "$need" "$floor" | sort -V | tail -1)" != "$floor" ]; then
        echo "package: $file needs glibc $need, newer than $floor:" >&2
        objdump -T "$file" | grep "GLIBC_$need" >&2
        exit 1
    fi
}
if [ "$native" = no ]; then
    check_glibc "$bin_glk/glk" "$glibc_floor_glk"
    check_glibc "$bin_engine/glk-engine" "$glibc_floor_engine"
    if objdump -p "$bin_glk/glk" | grep -q 'NEEDED.*libtrace'; then
        echo "package: $bin_glk/glk links a shared libtracefs; it must be the static one (GLK_TRACEFS_STATIC)" >&2
        exit 1
    fi
fi

# The Debian package (and its installed version) that ships a shared library, for the
# libraries outside glibc that a native build links (libtracefs1, libgcc-s1).
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
# The Debian dependencies of a binary: libc6 of the newest glibc symbol version it uses
# (not dpkg-shlibdeps: it reads this machine's glibc, where libpthread and libdl are
# stubs of glibc 2.34, and would ask for libc6 >= 2.34), then the packages of the other
# shared libraries it needs.
deb_deps_of() {
    local deps lib d
    deps="libc6 (>= $(glibc_of "$1"))"
    for lib in $(objdump -p "$1" | awk '$1 == "NEEDED" { print $2 }'); do
        case "$lib" in libc.so.*|libm.so.*|ld-linux*|libpthread*|libdl*|librt*) continue ;; esac
        d=$(deb_dep_of "$lib")
        [ -n "$d" ] && deps="$deps, $d"
    done
    echo "$deps"
}

# The copyright file: glk's licence, and in the distributable build the notices of the
# libraries linked into /usr/bin/glk.
copyright() {
    cat <<TEXT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: glk
Comment: glk makes GFS2 cluster-filesystem locking visible.

Files: *
Copyright: 2026 glk developers
License: GPL-2.0-or-later
 On Debian systems the licence is in /usr/share/common-licenses/GPL-2; on RPM
 systems in the licenses directory of any GPL package.
TEXT
    if [ "$native" = no ] && [ "$1" = glk ]; then
        cat <<TEXT

Comment: /usr/bin/glk contains libtracefs 1.6.4 and libtraceevent 1.7.1 (LGPL-2.1),
 linked statically: Debian 12's libtracefs-dev 1.6.4-1 and libtraceevent-dev
 1:1.7.1-1 archives, built by Debian from its source packages of the same versions,
 which hold their complete source. glk's own source builds against any libtracefs
 1.2 or later (pkg-config), so glk can be relinked with a modified library. Their
 copyright files follow.
TEXT
        for lib in libtracefs libtraceevent; do
            printf '\n==> %s\n' "$lib"
            cat "$tracefs_static/doc-$lib/copyright"
        done
    fi
}

# Files of each package, below a root.
stage_common_doc() {
    local root="$1" name="$2"
    install -d "$root/usr/share/doc/$name"
    copyright "$name" > "$root/usr/share/doc/$name/copyright"
}
stage_glk() {
    local root="$1" format="$2"
    install -D -m 0755 "$bin_glk/glk" "$root/usr/bin/glk"
    strip --strip-unneeded "$root/usr/bin/glk" 2>/dev/null || true
    mkdir -p "$root/usr/share/man/man1"
    "$bin_glk/glk" generate man | gzip -9n > "$root/usr/share/man/man1/glk.1.gz"
    install -d "$root/usr/share/bash-completion/completions" \
        "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
    "$bin_glk/glk" generate bash > "$root/usr/share/bash-completion/completions/glk"
    "$bin_glk/glk" generate zsh > "$root/usr/share/zsh/vendor-completions/_glk"
    "$bin_glk/glk" generate fish > "$root/usr/share/fish/vendor_completions.d/glk.fish"
    stage_common_doc "$root" glk
    install -m 0644 README.md "$root/usr/share/doc/glk/README.md"
    # Debian before 13 looks for units in /lib (lintian says so); RHEL in /usr/lib.
    local units=/lib/systemd/system defaults=/etc/default/glk-exporter
    [ "$format" = rpm ] && units=/usr/lib/systemd/system defaults=/etc/sysconfig/glk-exporter
    install -D -m 0644 packaging/systemd/glk-exporter.service \
        "$root$units/glk-exporter.service"
    install -D -m 0644 packaging/systemd/glk-exporter.default "$root$defaults"
    install -D -m 0644 -t "$root/usr/share/glk/prometheus" \
        packaging/prometheus/glk-alerts.yml packaging/prometheus/glk-alerts.test.yml
    install -D -m 0644 -t "$root/usr/share/glk/grafana" packaging/grafana/glk-dashboard.json
    if [ "$format" = deb ]; then
        install -D -m 0644 packaging/lintian-overrides "$root/usr/share/lintian/overrides/glk"
    fi
}
stage_engine() {
    local root="$1"
    install -D -m 0755 "$bin_engine/glk-engine" "$root/usr/bin/glk-engine"
    strip --strip-unneeded "$root/usr/bin/glk-engine" 2>/dev/null || true
    stage_common_doc "$root" glk-engine
    echo "glk-engine runs glk export and glk trace -o FILE.parquet; see /usr/share/doc/glk/README.md" \
        > "$root/usr/share/doc/glk-engine/README"
}

deb() {
    local name="$1" desc="$2" relations="$4" root="$stage/deb-$1" deps
    "stage_${3}" "$root" deb
    gzip -9nc packaging/changelog > "$root/usr/share/doc/$name/changelog.Debian.gz"
    deps=$(deb_deps_of "$root/usr/bin/$name")
    mkdir -p "$root/DEBIAN"
    # Files under /etc are the administrator's: kept on upgrade and removal.
    (cd "$root" && find . -path './etc/*' -type f | sed 's|^\.||' | sort) > "$root/DEBIAN/conffiles"
    [ -s "$root/DEBIAN/conffiles" ] || rm "$root/DEBIAN/conffiles"
    {
        echo "Package: $name"
        echo "Version: $deb_version"
        echo "Architecture: $arch"
        echo "Maintainer: glk developers <glk@example.invalid>"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
        echo "Depends: $deps${relations:+, $relations}"
        # Cluster mode (--cluster, --nodes) reaches the other nodes with the system's ssh.
        [ "$name" = glk ] && echo "Recommends: openssh-client"
        [ "$name" = glk ] && echo "Suggests: glk-engine"
        echo "Section: admin"
        echo "Priority: optional"
        echo "Homepage: https://example.invalid/glk"
        echo "Description: $desc"
    } > "$root/DEBIAN/control"
    local file="$out/${name}_${deb_version}_${arch}.deb"
    dpkg-deb --root-owner-group -Zxz --build "$root" "$file" >/dev/null
    echo "$file  (Depends: $deps${relations:+, $relations})"
}

# packaging/changelog (Debian's format) as an RPM %changelog.
rpm_changelog() {
    awk '
        /^[a-z]/ { match($0, /\(([^)]*)\)/); v = substr($0, RSTART + 1, RLENGTH - 2); n = 0; next }
        /^  \* / { items[++n] = "- " substr($0, 5); next }
        /^    / { sub(/^ +/, ""); items[n] = items[n] " " $0; next }
        /^ -- / {
            who = $0; sub(/^ -- /, "", who); sub(/  .*/, "", who)
            date = $0; sub(/.*>  /, "", date)
            split(date, d, /[ ,]+/) # Wed, 25 Nov 2026 09:00:00 +0000
            printf "* %s %s %s %s %s - %s\n", d[1], d[3], d[2], d[4], who, v
            for (i = 1; i <= n; i++) print items[i]
            print ""
        }' packaging/changelog
}

rpmpkg() {
    local name="$1" summary="$2" relations="$4" licence="$5" top="$stage/rpm-$1"
    mkdir -p "$top"/{BUILD,BUILDROOT,RPMS,SPECS,SOURCES,SRPMS}
    local root="$top/root"
    "stage_${3}" "$root" rpm
    local files
    # Files under /etc are the administrator's: an edited one is kept on upgrade.
    files=$(cd "$root" && find . -type f | sed 's|^\.||' | sort |
        sed 's|^/etc/|%config(noreplace) /etc/|')
    cat > "$top/SPECS/$name.spec" <<SPEC
Name: $name
Version: $version
Release: $release
Summary: $summary
License: $licence
URL: https://example.invalid/glk
AutoReqProv: yes
${relations:+Requires: $relations}
$([ "$name" = glk ] && echo "Recommends: openssh-clients")
%description
$summary
%install
mkdir -p %{buildroot}
cp -a $root/. %{buildroot}/
%files
$files
%changelog
$(rpm_changelog)
SPEC
    # xz payload and SHA-256 file digests: what RHEL 8's rpm 4.14 reads (Debian's rpmbuild
    # would otherwise write a zstd payload).
    rpmbuild --quiet --define "_topdir $top" --define "_build_id_links none" \
        --define "_binary_payload w9.xzdio" --define "_binary_filedigest_algorithm 8" \
        --define "__strip /bin/true" --define "__os_install_post %{nil}" -bb "$top/SPECS/$name.spec" >/dev/null
    find "$top/RPMS" -name '*.rpm' -exec cp {} "$out/" \; -exec basename {} \; | sed "s|^|$out/|"
}

node_desc="GFS2 lock visibility: glk top, trace, stats, capture, analyze, doctor
 glk shows which GFS2 glocks are contended, who holds them (node, pid, call
 site), whether a waiter is stuck or slow, and DLM round-trip times, from
 debugfs and tracefs, live or from captures (glk analyze, doctor, report).
 Parquet output (glk export) needs glk-engine."
engine_desc="GFS2 lock data as Parquet: glk export, glk trace -o FILE.parquet
 The polars engine behind glk export and glk trace -o FILE.parquet, for
 the analyst's workstation. glk runs it."
node_licence="GPL-2.0-or-later"
[ "$native" = no ] && node_licence="GPL-2.0-or-later AND LGPL-2.1-only"
deb glk "$node_desc" glk ""
deb glk-engine "$engine_desc" engine "glk (= $deb_version)"
if [ "$rpm" = yes ]; then
    command -v rpmbuild >/dev/null || { echo "package: rpmbuild not found (apt-get install rpm)" >&2; exit 1; }
    rpmpkg glk "GFS2 lock visibility: glk top, trace, stats, capture, analyze, doctor, report" glk "" "$node_licence"
    rpmpkg glk-engine "GFS2 lock data as Parquet: the polars engine behind glk export" engine \
        "glk = $version-$release" "GPL-2.0-or-later"
fi
