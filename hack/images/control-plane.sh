#!/usr/bin/env bash
# Builds the control-plane images the static-pod manifests (docs/static-pods) name, as OCI image
# tarballs, from binaries built in this checkout (no registry is reachable here):
#   kube-apiserver.tar           k8s-rs.local/kube-apiserver:v1.33.0
#   kube-controller-manager.tar  k8s-rs.local/kube-controller-manager:v1.33.0
#   kube-scheduler.tar           k8s-rs.local/kube-scheduler:v1.33.0
# Each holds its binary at /usr/local/bin (a copy stripped of debug info; the original is never
# touched), the shared libraries `ldd` lists and the dynamic loader at their paths, /etc/passwd,
# /etc/group, /etc/hosts and /tmp. Import with `ctr -a <socket> -n k8s.io images import <tar>`.
#
# Usage: hack/images/control-plane.sh [--bin-dir DIR]   (default target/release; build it with
#        cargo build --release -p kube-apiserver -p kube-controller-manager -p kube-scheduler)
#
# Cached under $CONTROL_PLANE_IMAGES_DIR (default target/control-plane-images) in a directory
# named by a hash of this script, oci.sh, the binaries and their libraries: a second run with the
# same binaries builds nothing; directories unused for 30 minutes are removed. Several runs at once are safe (each builds in a temp dir and
# renames it into place). Prints the directory holding the three tarballs on stdout, and nothing
# else.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin_dir=$root/target/release
version=v1.33.0
registry=k8s-rs.local
components=(kube-apiserver kube-controller-manager kube-scheduler)

while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --bin-dir=*) bin_dir=${1#--bin-dir=}; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 1 ;;
  esac
done
cache=${CONTROL_PLANE_IMAGES_DIR:-$root/target/control-plane-images}

for tool in tar sha256sum strip ldd; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "$tool is missing: run hack/install-deps.sh" >&2
    exit 1
  }
done
for c in "${components[@]}"; do
  [ -x "$bin_dir/$c" ] || {
    echo "$bin_dir/$c is missing: build it (cargo build --release -p $c) or pass --bin-dir" >&2
    exit 1
  }
done

# The absolute paths of the shared objects binary $1 loads, the loader included (ldd's
# `name => /path (addr)` and `/path (addr)` lines; the vdso has no path).
libs_of() {
  ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u
}

libs=()
for c in "${components[@]}"; do
  while read -r lib; do libs+=("$lib"); done < <(libs_of "$bin_dir/$c")
done
mapfile -t libs < <(printf '%s\n' "${libs[@]}" | sort -u)

# Hashing 300 MB of debug binaries costs a second or two; their mtime alone could miss a rebuild
# that kept it (cargo restores artifacts from its cache).
key=$(
  {
    cat "$here/control-plane.sh" "$here/oci.sh"
    for c in "${components[@]}"; do sha256sum <"$bin_dir/$c"; done
    for lib in "${libs[@]}"; do printf '%s ' "$lib"; sha256sum <"$lib"; done
  } | sha256sum | cut -c1-16
)
out="$cache/$key"
done_marker() { for c in "${components[@]}"; do [ -s "$out/$c.tar" ] || return 1; done; }
if done_marker; then
  touch "$out"
  echo "$out"
  exit 0
fi
# Every rebuild of the binaries makes a new ~250 MB directory: drop those unused for 30 minutes
# (a run touches the one it returns; importing it takes seconds).
find "$cache" -mindepth 1 -maxdepth 1 -type d -mmin +30 -exec rm -rf {} + 2>/dev/null || true

mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
oci_created_by=hack/images/control-plane.sh
# det_tar, make_image (one-layer OCI image layouts as reproducible tarballs).
source "$here/oci.sh"

for c in "${components[@]}"; do
  fs="$work/$c-rootfs"
  mkdir -p "$fs/usr/local/bin" "$fs/etc" "$fs/tmp" "$fs/root"
  chmod 1777 "$fs/tmp"
  chmod 700 "$fs/root"
  strip --strip-debug -o "$fs/usr/local/bin/$c" "$bin_dir/$c"
  chmod 755 "$fs/usr/local/bin/$c"
  while read -r lib; do
    mkdir -p "$fs$(dirname "$lib")"
    # The loader and libraries are often symlinks on the host: the image gets the files.
    cp -L "$lib" "$fs$lib"
  done < <(libs_of "$bin_dir/$c")
  printf 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$fs/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$fs/etc/group"
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$fs/etc/hosts"
  make_image "$fs" "$work/$c.tar" \
    "$(printf '{"Entrypoint":["/usr/local/bin/%s"],"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}' "$c")" \
    "$registry/$c:$version"
  rm -rf "$fs"
done

mkdir -p "$work/result"
for c in "${components[@]}"; do mv "$work/$c.tar" "$work/result/"; done
# Another run may have finished first: its result is identical, keep it.
mv -T "$work/result" "$out" 2>/dev/null || done_marker
echo "$out"
