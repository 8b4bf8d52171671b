#!/usr/bin/env bash
# Builds the test images as OCI image tarballs, since no registry is reachable here:
#   pause.tar    registry.k8s.io/pause:3.10 (pause.c, built with gcc -static)
#   busybox.tar  docker.io/library/busybox:latest and docker.io/library/busybox:1.36 (Debian's
#                busybox-static, every applet a symlink in /bin, /etc/passwd and /etc/group with
#                root and nobody, /tmp)
# Import them with `ctr -a <socket> -n k8s.io images import <tar>`.
#
# The tarballs are cached under $TEST_IMAGES_DIR (default target/test-images) in a directory named
# by a hash of this script, oci.sh, pause.c and the busybox binary: a second run builds nothing. Several
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

key=$(cat "$here/build.sh" "$here/oci.sh" "$here/pause.c" "$busybox" | sha256sum | cut -c1-16)
out="$cache/$key"
if [ -s "$out/pause.tar" ] && [ -s "$out/busybox.tar" ]; then
  echo "$out"
  exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT

# det_tar, make_image (one-layer OCI image layouts as reproducible tarballs).
source "$here/oci.sh"

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
