#!/usr/bin/env bash
# Issue 16's read figures in one run, on PostgreSQL: GET /users (50 users, API
# key) and token-authenticated GET /sms/lines (three lines, OAuth access token),
# each against the load generator's trivial-handler ceiling of the same size,
# and pgbench -S (select-only, same client count) as PostgreSQL's own ceiling.
# A fresh schema of the database is used and dropped; pgbench gets its own
# database, pgbench_reads.
#   bash bench/pg-reads.sh [duration] [concurrency]
#   PG=postgres://… (default $SWITCHBOARD_TEST_POSTGRES)
#   SWITCHBOARD_BIN=path  serve another build (for before/after runs)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
pg=${PG:-${SWITCHBOARD_TEST_POSTGRES:?set PG or SWITCHBOARD_TEST_POSTGRES}}
source bench/lib.sh
bench_setup
build switchboard loadgen oauthtoken
bin=${SWITCHBOARD_BIN:-$work/switchboard}
schema=bench_$RANDOM$RANDOM
psql -q "$pg" -c "CREATE SCHEMA $schema"
trap_prev=$(trap -p EXIT | sed "s/^trap -- '\(.*\)' EXIT$/\1/")
trap "psql -q '$pg' -c 'DROP SCHEMA $schema CASCADE' >/dev/null 2>&1; $trap_prev" EXIT
case $pg in *\?*) db="$pg&search_path=$schema" ;; *) db="$pg?search_path=$schema" ;; esac

provision_users "$bin" "$db"
sb() { "$bin" --db "$db" "$@"; }
sb role create --account "$acct" --name staff --permissions numbers:all,users:all >/dev/null
password="bench-password-$RANDOM$RANDOM"
sb user create --account "$acct" --first Bench --last User --username bench --password "$password" --role staff >/dev/null
for i in 0 1 2; do sb line create --account "$acct" --number "1415555010$i" --name "Line $i" >/dev/null; done
sb oauth allow-host app.example.test >/dev/null
start_server "$bin" "$db" "$work/serve.log" ${SERVE_FLAGS:-}
token=$("$work/oauthtoken" -url "http://$addr" -username bench -password "$password" \
  -redirect https://app.example.test/callback -scope sms:read | json_field access_token)
case $token in sbat_*) ;; *) echo "no access token: $token"; exit 1 ;; esac

admin=$(echo "$pg" | sed 's#/[^/?]*\([?]\|$\)#/postgres\1#')
if ! psql -qtA "$admin" -c "SELECT 1 FROM pg_database WHERE datname = 'pgbench_reads'" | grep -q 1; then
  psql -q "$admin" -c "CREATE DATABASE pgbench_reads"
  pgbench -q -i -s 10 "$(echo "$pg" | sed 's#/[^/?]*\([?]\|$\)#/pgbench_reads\1#')" >/dev/null 2>&1
fi
uptime
echo "== pgbench -S, $conc clients"
pgbench -S -n -c "$conc" -j 2 -T "${dur%s}" "$(echo "$pg" | sed 's#/[^/?]*\([?]\|$\)#/pgbench_reads\1#')" 2>/dev/null | grep -E "^(tps|latency)"
users=http://$addr/api/public/v1/users
lines=http://$addr/api/public/v1/sms/lines
"$work/loadgen" -url "$users" -H "Authorization: Bearer $key" -c "$conc" -d "$dur" \
  -ceiling-bytes "$(curl -s -H "Authorization: Bearer $key" "$users" | wc -c)" -label "GET /users (50 users, PostgreSQL)"
"$work/loadgen" -url "$lines" -H "Authorization: Bearer $token" -c "$conc" -d "$dur" \
  -ceiling-bytes "$(curl -s -H "Authorization: Bearer $token" "$lines" | wc -c)" -label "GET /sms/lines, access token (PostgreSQL)"
uptime
