#!/usr/bin/env bash
# Sets up what glk needs and runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup-system.sh
cargo test --workspace --locked "$@"
