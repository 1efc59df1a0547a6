#!/usr/bin/env bash
# GET /users (50 users) on SQLite at 64 concurrent clients, against the trivial
# JSON handler (same response size) measured in the same run by loadgen.
#   bash bench/users.sh [duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
work=$(mktemp -d)
pid=
trap 'set +e; [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; grep -m3 -i error "$work/serve.log"; rm -rf "$work"' EXIT INT TERM
go build -o "$work/switchboard" ./cmd/switchboard
go build -o "$work/loadgen" ./cmd/loadgen
source bench/lib.sh
provision_users "$work/switchboard" "$work/bench.db"
start_server "$work/switchboard" "$work/bench.db" "$work/serve.log" ${SERVE_FLAGS:-}
bytes=$(curl -s -H "Authorization: Bearer $key" http://$addr/api/public/v1/users | wc -c)
echo "GET /users response: $bytes bytes"
"$work/loadgen" -url http://$addr/api/public/v1/users -H "Authorization: Bearer $key" \
  -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "GET /users (50 users, SQLite)"
