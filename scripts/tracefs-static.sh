#!/usr/bin/env bash
# Unpacks the pinned static libtracefs and libtraceevent that the packaged glk links (see
# the README, "libtracefs on the nodes"): Debian 12's libtracefs-dev 1.6.4-1 and
# libtraceevent-dev 1:1.7.1-1, built by Debian from their source packages, fetched with
# apt-get (so apt checks the archive's signature) and checked against the hashes below.
# Prints the directory holding libtracefs.a and libtraceevent.a, for GLK_TRACEFS_STATIC.
# Usage: scripts/tracefs-static.sh [CACHE_DIR]   (default ~/.cache/glk-tracefs)
set -euo pipefail
cache="${1:-${HOME:-/root}/.cache/glk-tracefs}"
arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
# package, version (as apt-get takes it), sha256 of the amd64 .deb
pins=(
    "libtracefs-dev 1.6.4-1 1f4e2162cbbff4ca3e211947217369b64027047074467e7560f8ff5e962c1c0d"
    "libtraceevent-dev 1:1.7.1-1 4c09a56de008183fc391100147244aedd41df0c9196a18260712d98e742b009c"
)
if [ "$arch" != amd64 ]; then
    echo "tracefs-static: the pinned archives are amd64 only (this machine: $arch)" >&2
    exit 1
fi
dir="$cache/libtracefs-1.6.4-libtraceevent-1.7.1-$arch"
# Both archives and both copyright files (package.sh puts them in glk's copyright file).
if [ -f "$dir/libtracefs.a" ] && [ -f "$dir/libtraceevent.a" ] &&
    [ -f "$dir/doc-libtracefs/copyright" ] && [ -f "$dir/doc-libtraceevent/copyright" ]; then
    echo "$dir"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work" # apt's download user must be able to write here
for pin in "${pins[@]}"; do
    read -r pkg ver sum <<<"$pin"
    if ! (cd "$work" && apt-get download -q "$pkg=$ver" >/dev/null 2>"$work/apt.err"); then
        echo "tracefs-static: apt-get could not download $pkg $ver (a Debian 12 apt source is needed):" >&2
        sed 's/^/  /' "$work/apt.err" >&2
        exit 1
    fi
    deb=$(ls "$work"/"$pkg"_*.deb)
    got=$(sha256sum "$deb" | cut -d' ' -f1)
    if [ "$got" != "$sum" ]; then
        echo "tracefs-static: $deb has sha256 $got, expected $sum" >&2
        exit 1
    fi
    dpkg-deb -x "$deb" "$work/root"
done
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
find "$work/root" \( -name libtracefs.a -o -name libtraceevent.a \) -exec cp -t "$dir.tmp" {} +
cp -r "$work/root/usr/share/doc/libtracefs-dev" "$dir.tmp/doc-libtracefs"
cp -r "$work/root/usr/share/doc/libtraceevent-dev" "$dir.tmp/doc-libtraceevent"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "$dir"
