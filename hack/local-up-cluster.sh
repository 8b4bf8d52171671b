#!/usr/bin/env bash
# Runs a local cluster from this checkout. Today that is the apiserver, on its embedded store, the
# scheduler and the controller manager (the kubelet and containerd join as their issue lands); it generates everything
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
(cd "$root" && cargo build --release --locked -p kube-apiserver -p kube-scheduler -p kube-controller-manager -p kubectl)
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

# The admin's token (system:masters) and the service account signing key, kept across runs.
if [ ! -s "$dir/certs/tokens.csv" ]; then
  token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  (umask 077 && echo "$token,admin,admin,system:masters" >"$dir/certs/tokens.csv")
fi
token=$(cut -d, -f1 "$dir/certs/tokens.csv")
if [ ! -s "$dir/certs/service-account.key" ]; then
  (umask 077 && openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null |
    openssl pkcs8 -topk8 -nocrypt -out "$dir/certs/service-account.key")
fi

"$bin/kube-apiserver" --secure-port="$port" --bind-address=127.0.0.1 --cert-dir="$dir/certs" \
  "${storage[@]}" \
  --token-auth-file="$dir/certs/tokens.csv" \
  --authorization-mode=Node,RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-signing-key-file="$dir/certs/service-account.key" \
  --service-account-key-file="$dir/certs/service-account.key" \
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
    token: $token
contexts:
- name: local
  context:
    cluster: local
    user: admin
current-context: local
KUBECONFIG

# The scheduler talks to the apiserver with the admin's kubeconfig (its own client
# certificate arrives with the PKI of the full local cluster).
"$bin/kube-scheduler" --kubeconfig="$dir/admin.kubeconfig" --leader-elect=false \
  --secure-port=0 >"$dir/logs/kube-scheduler.log" 2>&1 &
pids+=($!)

# The controller manager publishes the apiserver's CA as kube-root-ca.crt and signs legacy
# service account tokens with the key the apiserver verifies them with.
"$bin/kube-controller-manager" --kubeconfig="$dir/admin.kubeconfig" --leader-elect=false \
  --secure-port=0 --root-ca-file="$dir/certs/apiserver.crt" \
  --service-account-private-key-file="$dir/certs/service-account.key" \
  >"$dir/logs/kube-controller-manager.log" 2>&1 &
pids+=($!)

cat <<MSG
Local cluster is running (logs in $dir/logs).
  export KUBECONFIG=$dir/admin.kubeconfig
  kubectl version
Press Ctrl-C to stop it.
MSG
wait "${pids[0]}"
