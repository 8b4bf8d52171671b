#!/usr/bin/env bash
# Runs a local cluster from this checkout. Today that is the apiserver alone, on its embedded
# store (the other components and containerd join as their issues land); it generates everything
# under one folder (certificates, data, logs),
# writes an admin kubeconfig the real kubectl can use, and stops everything on Ctrl-C or SIGTERM.
#
# Usage: hack/local-up-cluster.sh [--dir DIR] [--port PORT] [--etcd http://HOST:PORT]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$root/_output/local-up"
port=6443
etcd=""

while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --dir=*) dir=${1#--dir=}; shift ;;
    --port) port=$2; shift 2 ;;
    --port=*) port=${1#--port=}; shift ;;
    --etcd) etcd=$2; shift 2 ;;
    --etcd=*) etcd=${1#--etcd=}; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 1 ;;
  esac
done

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
"$root/hack/install-deps.sh"

echo "building release binaries..."
(cd "$root" && cargo build --release --locked -p kube-apiserver -p kubectl)
bin="$root/target/release"

mkdir -p "$dir/logs" "$dir/certs" "$dir/data"
storage=(--data-dir="$dir/data")
[ -n "$etcd" ] && storage=(--etcd-servers="$etcd")
pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "local cluster stopped"
}
trap cleanup INT TERM EXIT

"$bin/kube-apiserver" --secure-port="$port" --bind-address=127.0.0.1 --cert-dir="$dir/certs" \
  "${storage[@]}" \
  >"$dir/logs/kube-apiserver.log" 2>&1 &
pids+=($!)

for _ in $(seq 1 200); do
  if curl -fsS --cacert "$dir/certs/apiserver.crt" "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
    break
  fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "kube-apiserver exited; its log:" >&2
    cat "$dir/logs/kube-apiserver.log" >&2
    exit 1
  fi
  sleep 0.05
done

# Without --token-auth-file every caller is anonymous and AlwaysAllow lets it do anything (RBAC
# arrives with the security issue); the token only keeps kubectl from prompting.
cat >"$dir/admin.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $dir/certs/apiserver.crt
users:
- name: admin
  user:
    token: local-up-admin
contexts:
- name: local
  context:
    cluster: local
    user: admin
current-context: local
KUBECONFIG

cat <<MSG
Local cluster is running (logs in $dir/logs).
  export KUBECONFIG=$dir/admin.kubeconfig
  kubectl version
Press Ctrl-C to stop it.
MSG
wait "${pids[0]}"
