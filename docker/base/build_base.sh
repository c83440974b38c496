#!/usr/bin/env bash
# Build the pinned Debian base image locally (no registry needed): debootstrap a minimal
# bookworm root file system and `docker import` it. Sites with registry access may instead use
# the digest-pinned public base named in docker/base/PUBLIC_BASE (pass it as BASE_IMAGE).
#
#   docker/base/build_base.sh [--update-lock] [TAG]   (default tag: eagle4/debian-base:bookworm)
#   docker/base/build_base.sh --print-mirror   (only say which mirror a build would use)
# Prints the image ID. docker/base/base.lock (BASE_LOCK overrides the path) is the pin: a build
# compares its package list (name=version) with the lock's `package=` lines and reports the drift
# on stderr; the lock is rewritten only with --update-lock (or when none exists yet).
# The mirror: DEBIAN_MIRROR, else the first Debian URI of this host's apt sources, read in both
# formats: deb822 (/etc/apt/sources.list.d/*.sources, current Debian's default) and one-line
# (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list). APT_ETC replaces /etc/apt (tests).
set -euo pipefail
# never exit without saying why (set -e alone stops silently)
trap 'rc=$?; echo "build_base.sh: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR
here="$(cd "$(dirname "$0")" && pwd)"
apt_etc="${APT_ETC:-/etc/apt}"
suite=bookworm

# URIs of Debian (non-security) repositories, deb822 files first; a missing file is no error.
debian_uris() {
  local f
  for f in "$apt_etc"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f"
  done
  for f in "$apt_etc"/sources.list "$apt_etc"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [ options ] URI suite ...: the URI is the first field after "deb" outside the [...] options
    awk '$1 == "deb" { o = 0; for (i = 2; i <= NF; i++) { if ($i ~ /^\[/) o = 1
                                                            if (!o) { print $i; break }
                                                            if ($i ~ /\]$/) o = 0 } }' "$f"
  done
}

if [ -n "${DEBIAN_MIRROR:-}" ]; then
  mirror="$DEBIAN_MIRROR"
else
  mirror="$(debian_uris | grep -v -e security -e '^cdrom:' | head -n 1 || true)"
fi
if [ -z "$mirror" ]; then
  echo "build_base.sh: no Debian mirror found in $apt_etc/sources.list.d/*.sources (deb822) or" \
       "$apt_etc/sources.list, $apt_etc/sources.list.d/*.list (one-line); set DEBIAN_MIRROR" >&2
  exit 2
fi
if [ "${1:-}" = "--print-mirror" ]; then
  echo "$mirror"
  exit 0
fi
update_lock=0
if [ "${1:-}" = "--update-lock" ]; then
  update_lock=1
  shift
fi
tag="${1:-eagle4/debian-base:bookworm}"
lock="${BASE_LOCK:-$here/base.lock}"

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
pkgs="$(dpkg-query --admindir="$work/rootfs/var/lib/dpkg" -W -f='${Package}=${Version}\n' | LC_ALL=C sort)"
if [ -f "$lock" ]; then
  pinned="$(sed -n 's/^package=//p' "$lock" | LC_ALL=C sort)"
  if [ -z "$pinned" ]; then
    echo "build_base.sh: $lock pins no package list; record one with --update-lock" >&2
  elif [ "$pinned" != "$pkgs" ]; then
    echo "build_base.sh: package drift against $lock (- pinned, + built):" >&2
    diff <(echo "$pinned") <(echo "$pkgs") | sed -n 's/^</  -/p; s/^>/  +/p' >&2 || true
  else
    echo "build_base.sh: packages match $lock" >&2
  fi
fi
if [ "$update_lock" = 1 ] || [ ! -f "$lock" ]; then
  {
    echo "# written by docker/base/build_base.sh --update-lock; the base every eagle4 image is built FROM"
    echo "tag=$tag"
    echo "image_id=$id"
    echo "suite=$suite"
    echo "mirror=the first Debian URI of the building host's apt sources (or DEBIAN_MIRROR)"
    echo "rootfs_sha256=$sha"
    echo "debootstrap=$(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || echo unknown)"
    echo "built_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "$pkgs" | sed 's/^/package=/'
  } > "$lock.tmp"
  mv "$lock.tmp" "$lock"
  echo "build_base.sh: wrote $lock" >&2
fi
echo "$id"
