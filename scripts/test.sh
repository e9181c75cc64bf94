#!/usr/bin/env bash
# Sets up what glk needs and runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup-system.sh
# Python with pyarrow, DuckDB, pandas and polars, in a private venv, for the export example.
if py=$(bash scripts/setup-python.sh); then
    export GLK_PYTHON="$py"
elif [ -n "${CI:-}" ]; then
    echo "test: could not set up Python for the export example" >&2
    exit 1
else
    echo "test: no Python venv (pip offline?): the export example test will say it did not run" >&2
fi
cargo test --workspace --locked "$@"
