#!/usr/bin/env bash
# The whole test suite, every suite switched on as .ci/run does, N runs in a
# row with two CPU-burning processes beside it (issue 32: tests wait on
# signals or conditions, never on time, so a loaded machine must not fail
# them). Prints one line per run: its number, exit status and wall time; the
# failing tests' names and output go to $out/run-N.log.
#   bash bench/tests-under-load.sh [runs] [burners]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5} burners=${2:-2}
out=${TMPDIR:-/tmp}/switchboard-tests-under-load
mkdir -p "$out"
export SWITCHBOARD_TEST_POSTGRES="${SWITCHBOARD_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
export SWITCHBOARD_TEST_KANNEL=1 SWITCHBOARD_TEST_PGBOUNCER=1 SWITCHBOARD_TEST_BROWSER=1 SWITCHBOARD_TEST_SMPP=1
pids=()
for _ in $(seq "$burners"); do sh -c 'while :; do :; done' & pids+=($!); done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
echo "machine: $(nproc) cores, $burners burners; $(go version)"
echo "started: $(date -u +%FT%TZ) at $(git rev-parse --short HEAD)"
fails=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  if go test -count=1 -timeout 30m ./... >"$out/run-$i.log" 2>&1 && (cd client && go test -count=1 ./... >>"$out/run-$i.log" 2>&1); then
    status=ok
  else
    status=FAIL; fails=$((fails + 1))
  fi
  echo "run $i: $status in $(( $(date +%s) - start ))s"
  [ "$status" = ok ] || grep -E '^(--- FAIL|FAIL|panic:)' "$out/run-$i.log" | head -20
done
echo "finished: $(date -u +%FT%TZ); $fails of $runs runs failed (logs in $out)"
[ "$fails" -eq 0 ]
