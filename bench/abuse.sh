#!/usr/bin/env bash
# Issue 15's "abuse without credentials", before and after, in one run: the
# same floods against a baseline binary (built from git revision BASE) and
# the working tree's, each on a fresh SQLite database with default settings.
#   1. POST /api/v1/oauth/register from one address for [duration]: answers
#      by status, client rows written, database growth;
#   2. GET /oauth/authorize for [duration]: answers, oauth_requests rows
#      written, database growth;
#   3. GET /metrics on the API listener, and on the private listener when the
#      binary has one (--metrics-addr): their statuses.
#   bash bench/abuse.sh [duration] [concurrency]     (BASE=74b8824 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-8}
base=${BASE:-74b8824}
source bench/lib.sh
bench_setup
mkdir "$work/src-base"
git archive "$base" | tar -x -C "$work/src-base"
(cd "$work/src-base" && go build -o "$work/sb-base" ./cmd/switchboard)
go build -o "$work/sb-new" ./cmd/switchboard
build flood

size() { du -cb "$1"* | tail -1 | cut -f1; }
for which in base new; do
  bin=$work/sb-$which db=$work/$which.db
  echo "== $which ($( [ $which = base ] && echo "$base" || git describe --always --dirty))"
  "$bin" --db "$db" oauth allow-host app.example.test >/dev/null
  start_server "$bin" "$db" "$work/$which.log"
  s0=$(size "$db")
  "$work/flood" -url "http://$addr" -mode register -d "$dur" -c "$conc"
  s1=$(size "$db")
  echo "   oauth_clients rows: $(sqlite3 "$db" 'SELECT COUNT(*) FROM oauth_clients'), database grew $(( (s1 - s0) / 1024 )) KiB"
  client=$(sqlite3 "$db" 'SELECT client_id FROM oauth_clients LIMIT 1')
  "$work/flood" -url "http://$addr" -mode authorize -client "$client" -d "$dur" -c "$conc"
  s2=$(size "$db")
  echo "   oauth_requests rows: $(sqlite3 "$db" 'SELECT COUNT(*) FROM oauth_requests'), database grew $(( (s2 - s1) / 1024 )) KiB"
  echo "   GET /metrics on the API listener: $(curl -s -o /dev/null -w '%{http_code}' "http://$addr/metrics")"
  [ -z "$maddr" ] || echo "   GET /metrics on --metrics-addr: $(curl -s -o /dev/null -w '%{http_code}' "http://$maddr/metrics")"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done
uptime
