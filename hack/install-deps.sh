#!/usr/bin/env bash
# Installs what building and testing need on a fresh machine, and nothing when it is there.
# Today: the Rust toolchain pinned in rust-toolchain.toml (with rustfmt and clippy), curl,
# openssl, protoc (etcd-client generates its gRPC code at build time) and etcd (the etcd backend's tests
# start a real one).
# The upstream kubectl the tests use as an oracle is expected at /usr/bin/kubectl.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

need_apt=()
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# hack/local-up-cluster.sh makes the service account signing key with openssl.
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
command -v protoc >/dev/null 2>&1 || need_apt+=(protobuf-compiler)
[ -x /usr/bin/etcd ] || need_apt+=(etcd-server)
# The e2e tests build a venv with the official Kubernetes Python client (pip, from PyPI).
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}"
  # Debian starts etcd as a service on install; the tests start their own.
  if [ -x /usr/bin/etcd ] && command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install rustup and the toolchain named in rust-toolchain.toml" >&2
  exit 1
fi
# rustup reads rust-toolchain.toml; this fails clearly if the pinned toolchain is unavailable.
cargo --version >/dev/null
cargo fmt --version >/dev/null
cargo clippy --version >/dev/null

if [ ! -x /usr/bin/kubectl ]; then
  echo "warning: /usr/bin/kubectl (upstream kubectl) is missing; the compatibility test will fail" >&2
fi
