#!/usr/bin/env bash
# CI: the parity suite inside the pinned cpu-csim image, built offline on this machine.
# Installs Debian's docker.io and debootstrap when missing, starts dockerd without touching the
# host network (--iptables=false --bridge=none; builds and runs use --network host), and stops
# the daemon it started, by PID, on exit.
set -uo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  echo "ci_container_parity: installing ${need_pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null || {
    echo "ci_container_parity: could not install ${need_pkgs[*]}" >&2; exit 1; }
fi

started_pid=""
if ! docker info >/dev/null 2>&1; then
  rundir=$(mktemp -d /tmp/eagle4-dockerd.XXXXXX)
  dockerd --iptables=false --bridge=none --exec-root "$rundir/exec" -p "$rundir/dockerd.pid" \
    >"$rundir/dockerd.log" 2>&1 &
  started_pid=$!
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "ci_container_parity: dockerd did not start:" >&2; tail -20 "$rundir/dockerd.log" >&2; kill "$started_pid"; exit 1; }
fi
stop_dockerd() {
  if [ -n "$started_pid" ]; then
    kill "$started_pid" 2>/dev/null
    wait "$started_pid" 2>/dev/null
  fi
}
trap stop_dockerd EXIT

start=$(date +%s)
python3 -m eagle4.cli container build cpu-csim || exit 1
echo "ci_container_parity: image ready after $(( $(date +%s) - start )) s"
# The image's lock (docker/requirements/cpu-csim.lock) holds every runtime dependency, the serving stack
# (FastAPI, uvicorn) included: the whole suite is collected there, the parity tests run.
python3 -m eagle4.cli container run cpu-csim -- python -m pytest -m parity -n 2 -p no:cacheprovider \
  --reports-dir=/tmp/eagle4-container-reports
