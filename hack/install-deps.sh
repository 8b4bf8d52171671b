#!/usr/bin/env bash
# Installs what building and testing need on a fresh machine, and nothing when it is there.
# Today: the Rust toolchain pinned in rust-toolchain.toml (with rustfmt and clippy), curl,
# openssl, protoc (etcd-client and k8s-cri generate their gRPC code at build time), etcd (the etcd
# backend's tests start a real one), and what the kubelet's tests run pods with: containerd, runc,
# the CNI plugins (/usr/lib/cni), iproute2, iptables (the bridge plugin's masquerading), a static
# busybox and gcc (hack/images builds the busybox and pause test images from them).
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
# The kubelet's runtime and the test images (hack/images/build.sh, e2e/src/containerd.rs).
[ -x /usr/bin/containerd ] || need_apt+=(containerd)
command -v runc >/dev/null 2>&1 || need_apt+=(runc)
[ -x /usr/lib/cni/bridge ] || need_apt+=(containernetworking-plugins)
# busybox-static: the test image needs a statically linked busybox (Debian's `busybox` is not).
{ [ -x /usr/bin/busybox ] && ! ldd /usr/bin/busybox >/dev/null 2>&1; } || need_apt+=(busybox-static)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v iptables >/dev/null 2>&1 || need_apt+=(iptables)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
# gcc -static needs libc.a.
[ -f "/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x)/libc.a" ] || need_apt+=(libc6-dev)
# The e2e tests build a venv with the official Kubernetes Python client (pip, from PyPI).
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}"
  # Debian starts etcd and containerd as services on install; the tests start their own.
  if command -v systemctl >/dev/null 2>&1; then
    for service in etcd containerd; do
      systemctl disable --now "$service" >/dev/null 2>&1 || true
    done
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
