#!/usr/bin/env bash
# Polling against the event stream (issue 26): on a copy of the inbox
# benchmark database, 20 people (agent1…agent20, each with an OAuth token)
# keep the inbox's first page current while texts are sent at RATE per second
# (default 2), each way for DURATION (default 30s), back to back on one
# server: first every person polls GET /sms/conversations?limit=50 every 2 s,
# then every person holds GET /events open and reads the first page again
# only after events. Prints the server's CPU time for each.
#   bash bench/poll-vs-stream.sh [duration] [rate]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-30s}
rate=${2:-2}
src=${INBOX_DB:-/tmp/switchboard-inbox-bench.db}
desc=$src.json
[ -s "$desc" ] && [ -f "$src" ] || { echo "no $src and $desc: run bash bench/inbox.sh once (it generates them)"; exit 1; }
source bench/lib.sh
bench_setup
build switchboard oauthtoken pollstream
field() { python3 -c "import json,sys; print(json.load(open('$desc'))['$1'])"; }
db=$work/inbox.db
sqlite3 "$src" ".backup '$db'"
"$work/switchboard" --db "$db" rate set --account "$(field accountId)" --prefix 1 --sms 0.0079 --mms 0.02 >/dev/null
"$work/switchboard" --db "$db" oauth allow-host app.example.test >/dev/null
start_server "$work/switchboard" "$db" "$work/serve.log"
# One registered client for the twenty (registration is rate limited).
client=
for i in $(seq 1 20); do
  out=$("$work/oauthtoken" -url "http://$addr" -username "agent$i" -password bench-password -scope "messages:read sms:read" ${client:+-client-id "$client"})
  client=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["client_id"])')
  echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
done >"$work/tokens"
echo "== poll vs stream ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)), $dur each, $rate texts/s"
for mode in poll stream; do
  "$work/pollstream" -url "http://$addr" -pid "$pid" -key "$(field key)" -line "$(field line)" -tokens "$work/tokens" \
    -mode "$mode" -rate "$rate" -d "$dur"
done
