#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, integration tests and the end-to-end tests that
# start the real binaries.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
"$root/hack/install-deps.sh"
# `cargo test` builds a package's binaries only for that package's own tests: the e2e tests need
# every component's binary, so build them first.
cargo build --workspace --bins --locked
cargo test --workspace --locked --no-fail-fast "$@"
