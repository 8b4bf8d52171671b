#!/usr/bin/env bash
# Builds the test images as OCI image tarballs, since no registry is reachable here:
#   pause.tar    registry.k8s.io/pause:3.10 (pause.c, built with gcc -static)
#   busybox.tar  docker.io/library/busybox:latest and docker.io/library/busybox:1.36 (Debian's
#                busybox-static, every applet a symlink in /bin, /etc/passwd and /etc/group with
#                root and nobody, /tmp)
# Import them with `ctr -a <socket> -n k8s.io images import <tar>`.
#
# The tarballs are cached under $TEST_IMAGES_DIR (default target/test-images) in a directory named
# by a hash of this script, pause.c and the busybox binary: a second run builds nothing. Several
# runs at once are safe (each builds in a temp dir and renames it into place). The tarballs are
# byte-for-byte reproducible (sorted entries, zero mtimes, root owner).
#
# Prints the directory holding the two tarballs on stdout, and nothing else.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
busybox=${BUSYBOX:-/usr/bin/busybox}
cache=${TEST_IMAGES_DIR:-$root/target/test-images}

for tool in gcc tar sha256sum "$busybox"; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "$tool is missing: run hack/install-deps.sh" >&2
    exit 1
  }
done

key=$(cat "$here/build.sh" "$here/pause.c" "$busybox" | sha256sum | cut -c1-16)
out="$cache/$key"
if [ -s "$out/pause.tar" ] && [ -s "$out/busybox.tar" ]; then
  echo "$out"
  exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac

# A reproducible tar of directory $1's contents into $2.
det_tar() {
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu \
    -C "$1" -cf "$2" .
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# make_image ROOTFS OUT.tar CONFIG_JSON NAME...: a one-layer OCI image layout, one index entry
# per name (containerd takes the name from io.containerd.image.name).
make_image() {
  local rootfs=$1 out=$2 config=$3
  shift 3
  local layout
  layout=$(mktemp -d "$work/layout-XXXXXX")
  mkdir -p "$layout/blobs/sha256"
  det_tar "$rootfs" "$layout/layer.tar"
  local layer_digest layer_size
  layer_digest=$(sha "$layout/layer.tar")
  layer_size=$(size "$layout/layer.tar")
  mv "$layout/layer.tar" "$layout/blobs/sha256/$layer_digest"

  printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"hack/images/build.sh"}]}' \
    "$arch" "$config" "$layer_digest" >"$layout/config.json"
  local config_digest config_size
  config_digest=$(sha "$layout/config.json")
  config_size=$(size "$layout/config.json")
  mv "$layout/config.json" "$layout/blobs/sha256/$config_digest"

  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$config_digest" "$config_size" "$layer_digest" "$layer_size" >"$layout/manifest.json"
  local manifest_digest manifest_size
  manifest_digest=$(sha "$layout/manifest.json")
  manifest_size=$(size "$layout/manifest.json")
  mv "$layout/manifest.json" "$layout/blobs/sha256/$manifest_digest"

  local entries="" name
  for name in "$@"; do
    [ -n "$entries" ] && entries+=","
    entries+=$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
      "$manifest_digest" "$manifest_size" "$arch" "$name" "${name##*:}")
  done
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' \
    "$entries" >"$layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  det_tar "$layout" "$out"
}

# pause
mkdir -p "$work/pause-rootfs"
gcc -static -Os -s -o "$work/pause-rootfs/pause" "$here/pause.c"
make_image "$work/pause-rootfs" "$work/pause.tar" \
  '{"Entrypoint":["/pause"],"User":"65535:65535","Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}' \
  registry.k8s.io/pause:3.10

# busybox
bb="$work/busybox-rootfs"
mkdir -p "$bb/bin" "$bb/etc" "$bb/root" "$bb/home" "$bb/var" "$bb/usr/bin" "$bb/tmp"
chmod 1777 "$bb/tmp"
chmod 700 "$bb/root"
cp "$busybox" "$bb/bin/busybox"
chmod 755 "$bb/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$bb/bin/$applet"
done
# Scripts starting with #!/usr/bin/env work as in the upstream image.
ln -s ../../bin/busybox "$bb/usr/bin/env"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$bb/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' >"$bb/etc/group"
make_image "$bb" "$work/busybox.tar" \
  '{"Cmd":["sh"],"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}' \
  docker.io/library/busybox:latest docker.io/library/busybox:1.36

mkdir -p "$work/result"
mv "$work/pause.tar" "$work/busybox.tar" "$work/result/"
# Another run may have finished first: its result is identical, keep it.
mv -T "$work/result" "$out" 2>/dev/null || [ -s "$out/busybox.tar" ]
echo "$out"
