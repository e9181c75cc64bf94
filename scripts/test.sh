#!/usr/bin/env bash
# Sets up what glk needs and runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests also need tmux (the console tests drive glk top in it).
GLK_TEST_SETUP=1 . scripts/setup-system.sh
# Python with pyarrow, DuckDB, pandas and polars, in a private venv, for the export example.
if py=$(bash scripts/setup-python.sh); then
    export GLK_PYTHON="$py"
elif [ -n "${CI:-}" ]; then
    echo "test: could not set up Python for the export example" >&2
    exit 1
else
    echo "test: no Python venv (pip offline?): the export example test will say it did not run" >&2
fi
# Tests that cannot make their real check here (not root, no Python) say so in this file;
# under CI (CI set) they fail instead.
export GLK_SKIP_LOG="${GLK_SKIP_LOG:-$(mktemp)}"
: > "$GLK_SKIP_LOG"
status=0
cargo test --workspace --locked "$@" || status=$?
# The distributable packages (release builds with zig for glibc 2.17 and 2.28) installed
# and run in Debian 11 and 13 userlands, their .rpm requirements checked against RHEL 7's
# and 8's. Only in a whole run: arguments choose some of cargo's tests.
if [ $# -eq 0 ]; then
    bash scripts/test-distros.sh || status=1
else
    echo "test: scripts/test-distros.sh not run (arguments given: $*)" >&2
fi
if [ -s "$GLK_SKIP_LOG" ]; then
    echo "test: $(wc -l < "$GLK_SKIP_LOG") test(s) could not make their real check here:" >&2
    sed 's/^/  /' "$GLK_SKIP_LOG" >&2
fi
rm -f "$GLK_SKIP_LOG"
exit "$status"
