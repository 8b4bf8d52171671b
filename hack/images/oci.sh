# Shared by hack/images/build.sh and hack/images/control-plane.sh (sourced, not run): writes
# one-layer OCI image layouts as reproducible tarballs (sorted entries, zero mtimes, root owner),
# which `ctr images import` takes, since no registry is reachable here.
#
# The caller sets `work` (a scratch directory it removes) before calling make_image, and may set
# `oci_created_by` (the image history's created_by).

case "$(uname -m)" in
  x86_64) oci_arch=amd64 ;;
  aarch64) oci_arch=arm64 ;;
  *) oci_arch=$(uname -m) ;;
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
  layout=$(mktemp -d "${work:?make_image needs \$work}/layout-XXXXXX")
  mkdir -p "$layout/blobs/sha256"
  det_tar "$rootfs" "$layout/layer.tar"
  local layer_digest layer_size
  layer_digest=$(sha "$layout/layer.tar")
  layer_size=$(size "$layout/layer.tar")
  mv "$layout/layer.tar" "$layout/blobs/sha256/$layer_digest"

  printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"%s"}]}' \
    "$oci_arch" "$config" "$layer_digest" "${oci_created_by:-hack/images/build.sh}" >"$layout/config.json"
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
      "$manifest_digest" "$manifest_size" "$oci_arch" "$name" "${name##*:}")
  done
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' \
    "$entries" >"$layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  det_tar "$layout" "$out"
  rm -rf "$layout"
}
