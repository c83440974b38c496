#!/usr/bin/env bash
# The README's test command: install the project (CPU torch pinned), run the suite on 2 workers,
# then the perf tests alone (they never share the machine with other tests).
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c requirements-cpu.txt -e '.[dev]' || exit 1
python3 -m pytest -n 2 -m "not perf" "$@"
rc=$?
python3 -m pytest -m perf -p no:xdist "$@"
prc=$?
# exit 5 = nothing collected (e.g. no perf test for the hardware present) is not a failure here
[ "$prc" -eq 5 ] && prc=0
[ "$rc" -ne 0 ] && exit "$rc"
exit "$prc"
