#!/usr/bin/env bash
# A private virtualenv (no system changes) with what examples/read_export.py,
# read_dataset.py and spark_dataset.py need (pyspark also needs a Java runtime:
# scripts/setup-system.sh); prints its python path. Used by scripts/test.sh for the export
# and dataset tests.
set -euo pipefail
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
venv="${GLK_VENV:-$home/.cache/glk-venv}"
py="$venv/bin/python3"
if ! "$py" -c "import pyarrow, duckdb, pandas, polars, pyspark" >/dev/null 2>&1; then
    python3 -m venv "$venv" >&2 || { python3 -m ensurepip --user >&2 && python3 -m venv "$venv" >&2; }
    "$py" -m pip install --quiet --disable-pip-version-check pyarrow duckdb pandas polars pyspark >&2
fi
echo "$py"
