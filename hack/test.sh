#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, integration tests and the end-to-end tests that
# start the real binaries (cargo builds every binary before it runs any test).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
"$root/hack/install-deps.sh"
cargo test --workspace --locked "$@"
