#!/usr/bin/env bash
# Installs what builds the packaged binaries against glibc 2.28 (RHEL 8), without touching
# the system: zig (PyPI's ziglang, in a private venv) as the C compiler and linker with
# glibc 2.28's symbol lists, and cargo-zigbuild, which drives cargo with it. Both pinned.
# Prints the directory to put first on PATH (it holds cargo-zigbuild and a `zig` command).
set -euo pipefail
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
root="${GLK_ZIG_ROOT:-$home/.cache/glk-zig}"
zig_version=0.14.1
zigbuild_version=0.24.1
py="$root/venv/bin/python3"
if ! [ -x "$root/bin/zig" ] || [ "$("$root/bin/zig" version 2>/dev/null)" != "$zig_version" ]; then
    [ -x "$py" ] || python3 -m venv "$root/venv" >&2
    mkdir -p "$root/bin"
    "$py" -m pip install --quiet --disable-pip-version-check "ziglang==$zig_version" >&2
    # cargo-zigbuild looks for `zig` on PATH; a wrapper in the directory printed below (the
    # venv's own bin, with its python3, stays off PATH) makes it find this zig.
    printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$py" > "$root/bin/zig"
    chmod +x "$root/bin/zig"
fi
if ! [ -x "$root/bin/cargo-zigbuild" ] ||
    [ "$("$root/bin/cargo-zigbuild" --version 2>/dev/null | awk '{print $2}')" != "$zigbuild_version" ]; then
    cargo install --quiet --locked --root "$root" --version "$zigbuild_version" cargo-zigbuild >&2
fi
echo "$root/bin"
