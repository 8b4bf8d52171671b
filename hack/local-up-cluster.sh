#!/usr/bin/env bash
# Runs a local cluster from this checkout: the apiserver on its embedded store, the scheduler, the
# controller manager, containerd with the test images and one kubelet (node `local-node`); needs
# root (containerd, CNI, cgroups). It generates everything
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
(cd "$root" && cargo build --release --locked -p kube-apiserver -p kube-scheduler -p kube-controller-manager -p kubectl -p kubelet)
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

# Client certificates: the kubelet's node identity, and the apiserver's own identity towards
# kubelets (logs, exec, port-forward), both signed by a local client CA kept across runs.
node=local-node
certs="$dir/certs"
if [ ! -s "$certs/client-ca.key" ]; then
  (umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$certs/client-ca.key" -out "$certs/client-ca.crt" -days 3650 \
    -subj "/CN=local-up-client-ca" 2>/dev/null)
fi
issue_client() { # name subject
  [ -s "$certs/$1.crt" ] && return
  (umask 077 && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$certs/$1.key" -out "$certs/$1.csr" -subj "$2" 2>/dev/null)
  openssl x509 -req -in "$certs/$1.csr" -CA "$certs/client-ca.crt" -CAkey "$certs/client-ca.key" \
    -CAcreateserial -out "$certs/$1.crt" -days 3650 \
    -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
}
issue_client kubelet-client "/O=system:nodes/CN=system:node:$node"
issue_client apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"

"$bin/kube-apiserver" --secure-port="$port" --bind-address=127.0.0.1 --cert-dir="$dir/certs" \
  "${storage[@]}" \
  --client-ca-file="$certs/client-ca.crt" \
  --kubelet-client-certificate="$certs/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$certs/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
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

# ----- containerd (the kubelet's runtime) -----
# Same configuration as the tests' (hack/containerd, explained in e2e/src/containerd.rs), under
# $dir/containerd, with the test images (hack/images) imported: no registry is reachable here.
ctrd="$dir/containerd"
containerd_sock="$ctrd/containerd.sock"
containerd_endpoint="unix://$containerd_sock"
pod_bridge=k8srs0
pod_subnet=10.230.0.0/24
mkdir -p "$ctrd/root" "$ctrd/state" "$ctrd/cni" "$ctrd/ipam" "$dir/logs"
snapshotter=native
probe=$(mktemp -d)
mkdir -p "$probe/l" "$probe/u" "$probe/w" "$probe/m"
if mount -t overlay overlay -o "lowerdir=$probe/l,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2>/dev/null; then
  umount "$probe/m"
  snapshotter=overlayfs
fi
rm -rf "$probe"
sed -e "s#@ROOT@#$ctrd/root#g; s#@STATE@#$ctrd/state#g; s#@SOCKET@#$containerd_sock#g" \
  -e "s#@CNI_CONF_DIR@#$ctrd/cni#g; s#@SNAPSHOTTER@#$snapshotter#g" \
  "$root/hack/containerd/config.toml.in" >"$ctrd/config.toml"
sed -e "s#@NETWORK@#k8s-rs-local#g; s#@BRIDGE@#$pod_bridge#g; s#@IPAM_DIR@#$ctrd/ipam#g" \
  -e "s#@SUBNET@#$pod_subnet#g; s#@GATEWAY@#10.230.0.1#g" \
  "$root/hack/containerd/10-bridge.conflist.in" >"$ctrd/cni/10-bridge.conflist"
containerd --config "$ctrd/config.toml" >"$dir/logs/containerd.log" 2>&1 &
containerd_pid=$!
pids+=($containerd_pid)
# What stopping containerd and the kubelet leaves: shims outlive containerd, containers outlive their
# shim, and their mounts (the kubelet's volume tmpfs too), network namespaces and bridge stay.
cleanup_containerd() {
  kill -TERM "$containerd_pid" 2>/dev/null || true
  wait "$containerd_pid" 2>/dev/null || true
  for ns_root in "$ctrd/state/runc"/*; do
    [ -d "$ns_root" ] || continue
    for id in $(runc --root "$ns_root" list -q 2>/dev/null); do
      runc --root "$ns_root" delete --force "$id" >/dev/null 2>&1 || true
    done
  done
  for shim in $(pgrep -f -- "-address $containerd_sock( |\$)" || true); do
    args=$(tr '\0' '\n' <"/proc/$shim/cmdline" 2>/dev/null || true)
    ns=$(echo "$args" | grep -A1 -x -- -namespace | tail -1)
    id=$(echo "$args" | grep -A1 -x -- -id | tail -1)
    kill -KILL "$shim" 2>/dev/null || true
    # A killed shim leaves its socket, named as containerd names it.
    rm -f "/run/containerd/s/$(printf '%s' "$containerd_sock/$ns/$id" | sha256sum | cut -d' ' -f1)"
  done
  { grep -o " $dir/[^ ]*" /proc/self/mountinfo || true; } | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  ip link del "$pod_bridge" 2>/dev/null || true
}
trap 'cleanup; cleanup_containerd' INT TERM EXIT
for _ in $(seq 1 200); do
  ctr -a "$containerd_sock" version >/dev/null 2>&1 && break
  if ! kill -0 "$containerd_pid" 2>/dev/null; then
    echo "containerd exited; its log:" >&2
    cat "$dir/logs/containerd.log" >&2
    exit 1
  fi
  sleep 0.05
done
images=$("$root/hack/images/build.sh")
for image in pause busybox; do
  ctr -a "$containerd_sock" -n k8s.io images import "$images/$image.tar" >/dev/null
done

# ----- kubelet -----
# Pods get addresses in $pod_subnet on the bridge $pod_bridge; static pods go in $dir/manifests.
# The kubelet authenticates the apiserver's client certificate and asks it (SubjectAccessReview)
# before serving logs, exec and port-forward.
kdir="$dir/kubelet"
mkdir -p "$kdir/root" "$kdir/pki" "$dir/manifests" "$dir/pod-logs"
cat >"$kdir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $certs/apiserver.crt
users:
- name: kubelet
  user:
    client-certificate: $certs/kubelet-client.crt
    client-key: $certs/kubelet-client.key
contexts:
- name: local
  context:
    cluster: local
    user: kubelet
current-context: local
KUBECONFIG
cat >"$kdir/config.yaml" <<CONFIG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
containerRuntimeEndpoint: $containerd_endpoint
podLogsDir: $dir/pod-logs
staticPodPath: $dir/manifests
cgroupRoot: /local-up
# Upstream's defaults (nodefs.available<10%, imagefs.available<15%) taint a developer machine
# with a big, busy disk as under disk pressure and nothing schedules; absolute floors instead.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1Gi
  imagefs.available: 1Gi
  nodefs.inodesFree: 5%
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $certs/client-ca.crt
authorization:
  mode: Webhook
CONFIG
"$bin/kubelet" --config="$kdir/config.yaml" --kubeconfig="$kdir/kubeconfig" \
  --hostname-override="$node" --node-ip=127.0.0.1 --root-dir="$kdir/root" \
  --cert-dir="$kdir/pki" >"$dir/logs/kubelet.log" 2>&1 &
pids+=($!)
# ----- end kubelet -----

cat <<MSG
Local cluster is running (logs in $dir/logs).
  export KUBECONFIG=$dir/admin.kubeconfig
  kubectl version
Press Ctrl-C to stop it.
MSG
wait "${pids[0]}"
