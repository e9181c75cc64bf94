#!/usr/bin/env bash
# Rewrites the golden analyze reports (testdata/golden/README.md) with the current glk.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p glk
f=testdata/fixtures
rd=$f/public/cluster-devel-2019-rename-deadlock
while read -r name args; do
    # shellcheck disable=SC2086
    "${CARGO_TARGET_DIR:-target}/debug/glk" analyze $args --json --limit 0 |
        python3 -m json.tool --indent 1 | xz -9 > "testdata/golden/analyze-$name.json.xz"
done <<LIST
dlm2-6.1 $f/real/dlm2-6.1
nolock-6.1 $f/real/nolock-6.1
flock-deadlock-6.12 $f/real/flock-deadlock-6.12/deadlock
rename-deadlock $rd/deadlock-host018.glocks $rd/deadlock-host019.glocks
LIST
