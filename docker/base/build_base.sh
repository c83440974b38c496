#!/usr/bin/env bash
# Build the pinned Debian base image locally (no registry needed): debootstrap a minimal
# bookworm root file system and `docker import` it. Sites with registry access may instead use
# the digest-pinned public base named in docker/base/PUBLIC_BASE (pass it as BASE_IMAGE).
#
#   docker/base/build_base.sh [TAG]      (default tag: eagle4/debian-base:bookworm)
# Prints the image ID; records it with the rootfs sha256 in docker/base/base.lock.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag="${1:-eagle4/debian-base:bookworm}"
suite=bookworm
# the mirror: DEBIAN_MIRROR, else the first Debian URI of this host's own apt sources
mirror="${DEBIAN_MIRROR:-$( (grep -h '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}';
                             grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}') | grep -v security | head -n 1)}"
[ -n "$mirror" ] || { echo "build_base.sh: no Debian mirror found in /etc/apt; set DEBIAN_MIRROR" >&2; exit 2; }

for tool in debootstrap docker; do
  command -v "$tool" >/dev/null || { echo "build_base.sh: '$tool' is not installed (apt-get install debootstrap docker.io)" >&2; exit 2; }
done
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "build_base.sh: reusing $tag" >&2
  docker image inspect --format '{{.Id}}' "$tag"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# --variant=minbase: essential packages only; the images add what they need, version-pinned.
debootstrap --variant=minbase "$suite" "$work/rootfs" "$mirror" >&2
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
tar -C "$work/rootfs" --numeric-owner --sort=name --mtime='2026-01-01 00:00Z' -cf "$work/rootfs.tar" .
sha=$(sha256sum "$work/rootfs.tar" | cut -d' ' -f1)
id=$(docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' "$work/rootfs.tar" "$tag")
{
  echo "# written by docker/base/build_base.sh; the base every eagle4 image is built FROM"
  echo "tag=$tag"
  echo "image_id=$id"
  echo "suite=$suite"
  echo "mirror=the first Debian URI of the building host's apt sources (or DEBIAN_MIRROR)"
  echo "rootfs_sha256=$sha"
  echo "debootstrap=$(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || echo unknown)"
  echo "built_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$here/base.lock"
echo "$id"
