#!/usr/bin/env bash
# Makes a local Debian bookworm base image, for building the Containerfile on a machine
# that reaches Debian's package archive but no public image registry (CI here):
# mmdebstrap builds the root file system from Debian packages, then buildah imports it as
# an image. tests/broker/image.rs uses it as the runtime stage's base; it works by hand too.
#
#   cluster/image/make-base.sh IMAGE_NAME [CA_IMAGE_NAME]
#
# With CA_IMAGE_NAME it also makes IMAGE_NAME plus this machine's CA bundle
# (/etc/ssl/certs/ca-certificates.crt): a stand-in for the Containerfile's toolchain stage
# when the binary is built outside the image (`--target prebuilt`), since that stage then
# only provides the CA bundle.
#
# The image is what debian:bookworm-slim is: minbase, without docs, man pages and
# locales. It is made once: the root file system's tarball is kept
# under QUEEN_IMAGE_CACHE and the image in buildah's storage, so a second run only checks
# that the image is there. Parallel runs wait for each other on a lock.
#
# Environment:
#   QUEEN_BUILDAH_ROOT     buildah storage   (default target/tmp/buildah/storage)
#   QUEEN_BUILDAH_RUNROOT  buildah run state (default target/tmp/buildah/run)
#   QUEEN_IMAGE_CACHE      tarball folder    (default target/tmp/image)
#   QUEEN_DEBIAN_SOURCES   apt sources mmdebstrap reads (default: this machine's own,
#                          /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list)
# Needs (as root): buildah, mmdebstrap, flock (Debian: apt-get install buildah mmdebstrap).
set -euo pipefail

name="${1:?usage: make-base.sh IMAGE_NAME [CA_IMAGE_NAME]}"
ca_name="${2:-}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
root="${QUEEN_BUILDAH_ROOT:-$repo/target/tmp/buildah/storage}"
runroot="${QUEEN_BUILDAH_RUNROOT:-$repo/target/tmp/buildah/run}"
cache="${QUEEN_IMAGE_CACHE:-$repo/target/tmp/image}"

for tool in buildah mmdebstrap flock; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "make-base.sh: $tool is missing (Debian: apt-get install buildah mmdebstrap)" >&2
    exit 1
  }
done

buildah() { command buildah --root "$root" --runroot "$runroot" --storage-driver vfs "$@"; }

mkdir -p "$cache"
exec 9>"$cache/base.lock"
flock 9

containers=()
trap 'for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done' EXIT

make_ca_image() {
  [ -n "$ca_name" ] || return 0
  buildah inspect --type image "$ca_name" >/dev/null 2>&1 && return 0
  [ -s /etc/ssl/certs/ca-certificates.crt ] || {
    echo "make-base.sh: /etc/ssl/certs/ca-certificates.crt is missing (Debian: apt-get install ca-certificates)" >&2
    exit 1
  }
  local c
  c="$(buildah from "$name")"
  containers+=("$c")
  buildah add "$c" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null
  buildah commit --quiet "$c" "$ca_name" >/dev/null
}

if buildah inspect --type image "$name" >/dev/null 2>&1; then
  make_ca_image
  exit 0
fi

sources="${QUEEN_DEBIAN_SOURCES:-}"
if [ -z "$sources" ]; then
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sources=/etc/apt/sources.list.d/debian.sources
  else
    sources=/etc/apt/sources.list
  fi
fi

# One tarball per image name, so a changed package set gets a new name and a new tarball.
tarball="$cache/$(printf '%s' "$name" | tr -c 'A-Za-z0-9._-' '_').tar"
if [ ! -s "$tarball" ]; then
  echo "make-base.sh: building the bookworm root file system with mmdebstrap" >&2
  # The dpkg filters are debian:bookworm-slim's: what a server process never reads.
  # merged-usr: lay out /usr as bookworm does without installing usrmerge (and the perl
  # it pulls in, 45 MB).
  mmdebstrap --variant=minbase --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    bookworm "$tarball.partial" "$sources" </dev/null >&2
  mv "$tarball.partial" "$tarball"
fi

echo "make-base.sh: importing $tarball as $name" >&2
container="$(buildah from scratch)"
containers+=("$container")
buildah add "$container" "$tarball" / >/dev/null
buildah config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$container"
buildah commit --quiet "$container" "$name" >/dev/null
make_ca_image
