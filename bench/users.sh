#!/usr/bin/env bash
# GET /users (50 users) on SQLite at 64 concurrent clients, against the trivial
# JSON handler (same response size) measured in the same run by loadgen.
#   bash bench/users.sh [duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
source bench/lib.sh
bench_setup
build switchboard loadgen
provision_users "$work/switchboard" "$work/bench.db"
start_server "$work/switchboard" "$work/bench.db" "$work/serve.log" ${SERVE_FLAGS:-}
bytes=$(curl -s -H "Authorization: Bearer $key" http://$addr/api/public/v1/users | wc -c)
echo "GET /users response: $bytes bytes"
"$work/loadgen" -url http://$addr/api/public/v1/users -H "Authorization: Bearer $key" \
  -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "GET /users (50 users, SQLite)"
