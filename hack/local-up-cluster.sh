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

mkdir -p "$dir/logs" "$dir/pki" "$dir/data"
storage=(--data-dir="$dir/data")
[ -n "$etcd" ] && storage=(--etcd-servers="$etcd")
pids=()
cleanup() {
  # A second Ctrl-C or SIGTERM must not cut the teardown short.
  trap '' INT TERM
  trap - EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "local cluster stopped"
}
trap cleanup INT TERM EXIT

# ----- PKI, kept across runs: one cluster CA signs the apiserver's serving certificate and every
# component's client certificate (as kubeadm lays them out); the controller manager signs CSRs
# with it. The service account key pair signs and verifies service account tokens.
node=local-node
pki="$dir/pki"
ec_key() { openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$1"; }
if [ ! -s "$pki/ca.key" ]; then
  (umask 077 && ec_key "$pki/ca.key")
  openssl req -x509 -new -key "$pki/ca.key" -out "$pki/ca.crt" -days 3650 \
    -subj "/CN=kubernetes" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
fi
issue() { # name subject extensions
  [ -s "$pki/$1.crt" ] && return
  (umask 077 && ec_key "$pki/$1.key")
  openssl req -new -key "$pki/$1.key" -out "$pki/$1.csr" -subj "$2" 2>/dev/null
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -out "$pki/$1.crt" -days 3650 -extfile <(printf '%s\n' "$3") 2>/dev/null
  rm -f "$pki/$1.csr"
}
client='extendedKeyUsage=clientAuth'
issue apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1"
issue admin "/O=system:masters/CN=kubernetes-admin" "$client"
issue kube-scheduler "/CN=system:kube-scheduler" "$client"
issue kube-controller-manager "/CN=system:kube-controller-manager" "$client"
issue kubelet "/O=system:nodes/CN=system:node:$node" "$client"
issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
[ -s "$pki/sa.key" ] || (umask 077 && ec_key "$pki/sa.key")
[ -s "$pki/sa.pub" ] || openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
kubeconfig() { # file user
  cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: local
  context:
    cluster: local
    user: $2
current-context: local
KUBECONFIG
}
kubeconfig "$dir/admin.kubeconfig" admin
kubeconfig "$dir/scheduler.kubeconfig" kube-scheduler
kubeconfig "$dir/controller-manager.kubeconfig" kube-controller-manager
kubeconfig "$dir/kubelet.kubeconfig" kubelet

"$bin/kube-apiserver" --secure-port="$port" --bind-address=127.0.0.1 \
  "${storage[@]}" \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --authorization-mode=Node,RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-signing-key-file="$pki/sa.key" \
  --service-account-key-file="$pki/sa.pub" \
  >"$dir/logs/kube-apiserver.log" 2>&1 &
pids+=($!)

api() { curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$port$1"; }
for _ in $(seq 1 200); do
  api /readyz >/dev/null 2>&1 && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "kube-apiserver exited; its log:" >&2
    cat "$dir/logs/kube-apiserver.log" >&2
    exit 1
  fi
  sleep 0.05
done

"$bin/kube-scheduler" --kubeconfig="$dir/scheduler.kubeconfig" --leader-elect=false \
  --secure-port=0 >"$dir/logs/kube-scheduler.log" 2>&1 &
pids+=($!)

# Each controller runs as its own service account (upstream's RBAC roles assume it); the
# controller manager publishes the CA as kube-root-ca.crt and signs CSRs with it.
"$bin/kube-controller-manager" --kubeconfig="$dir/controller-manager.kubeconfig" \
  --leader-elect=false --secure-port=0 --use-service-account-credentials \
  --root-ca-file="$pki/ca.crt" --service-account-private-key-file="$pki/sa.key" \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
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
  # The kubelet's cgroupRoot, empty once every container is gone.
  for c in /sys/fs/cgroup/*/local-up /sys/fs/cgroup/local-up; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  true
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
# Image GC off: no registry is reachable, so a removed image (busybox:1.36 while no pod uses it)
# would never come back, and a developer's disk is often fuller than upstream's 85% trigger.
imageGCHighThresholdPercent: 100
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: Webhook
CONFIG
"$bin/kubelet" --config="$kdir/config.yaml" --kubeconfig="$dir/kubelet.kubeconfig" \
  --hostname-override="$node" --node-ip=127.0.0.1 --root-dir="$kdir/root" \
  --cert-dir="$kdir/pki" >"$dir/logs/kubelet.log" 2>&1 &
pids+=($!)
# ----- end kubelet -----

ready=""
for _ in $(seq 1 600); do
  # Ready also means pods can be created: the default namespace's service account exists.
  if api "/api/v1/nodes/$node" 2>/dev/null | tr -d ' \n' | grep -q '"status":"True","type":"Ready"' &&
    api /api/v1/namespaces/default/serviceaccounts/default >/dev/null 2>&1; then
    ready=1
    break
  fi
  for pid in "${pids[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "a component exited (pid $pid); logs in $dir/logs" >&2
      exit 1
    fi
  done
  sleep 0.05
done
[ -n "$ready" ] || echo "warning: node $node is not Ready after 30 s; see $dir/logs/kubelet.log" >&2

cat <<MSG
Local cluster is running: node $node is Ready$([ -n "$ready" ] || echo " (not yet)"), $SECONDS s after the start.
  export KUBECONFIG=$dir/admin.kubeconfig
  kubectl get nodes
Logs: $dir/logs/<component>.log. Press Ctrl-C (or send SIGTERM) to stop it.
MSG
wait "${pids[0]}"
