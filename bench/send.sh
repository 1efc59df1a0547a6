#!/usr/bin/env bash
# POST /sms/messages (one recipient, sim carrier, SQLite synchronous=FULL) at 64
# concurrent clients, with loadgen's trivial-handler ceiling in the same run.
#   bash bench/send.sh [duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; grep -m3 "level=ERROR" "$work/serve.log"; rm -rf "$work"' EXIT INT TERM
go build -o "$work/switchboard" ./cmd/switchboard
go build -o "$work/loadgen" ./cmd/loadgen
sb() { "$work/switchboard" --db "$work/bench.db" "$@"; }
acct=$(sb account create --name "Bench Co" --json | sed 's/.*"id":\([0-9]*\).*/\1/')
sb line create --account "$acct" --number 14155550100 >/dev/null
sb rate set --account "$acct" --prefix 1 --sms 0.0079 --mms 0.02 >/dev/null
key=$(sb key create --account "$acct" --name bench --scopes sms:send --json | sed 's/.*"key":"\([^"]*\)".*/\1/')
addr=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The binary itself, not the sb function, so that $! is the server and the trap stops it.
env ${SERVE_ENV:-} "$work/switchboard" --db "$work/bench.db" serve --listen "$addr" --media "file://$work/media" ${SERVE_FLAGS:-} >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.1; done
kill -0 "$pid" || { echo "server did not start:"; cat "$work/serve.log"; exit 1; }
body='{"from":"14155550100","to":["+1 (212) 555-0100"],"message":"Your appointment is tomorrow at 9:00. Reply STOP to opt out."}'
bytes=$(curl -s -H "Authorization: Bearer $key" -d "$body" "http://$addr/api/public/v1/sms/messages" | wc -c)
"$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$body" -expect 201 \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
  -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "POST /sms/messages (sim, SQLite FULL)" ${LOADGEN_FLAGS:-}
# The committer's counters over the whole run (warmups included): group size
# and where a commit cycle's time goes.
curl -s "http://$addr/metrics" | awk '
  /^switchboard_store_commits_total/ {b=$2} /^switchboard_store_writes_total/ {w=$2}
  /^switchboard_store_exec_seconds_total/ {e=$2} /^switchboard_store_commit_seconds_total/ {c=$2}
  END { if (b > 0) printf "committer: %d commits, %.1f writes each, %.2f ms running writes + %.2f ms in COMMIT per commit\n", b, w/b, 1000*e/b, 1000*c/b }'
echo "ledger: $(sb ledger list --account "$acct" --limit 1 --json | sed 's/.*"count":\([0-9]*\).*/\1/') charges"
