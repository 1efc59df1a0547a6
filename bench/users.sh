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
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; grep -m3 -i error "$work/serve.log"; rm -rf "$work"' EXIT INT TERM
go build -o "$work/switchboard" ./cmd/switchboard
go build -o "$work/loadgen" ./cmd/loadgen
sb() { "$work/switchboard" --db "$work/bench.db" "$@"; }
acct=$(sb account create --name "Bench Co" --json | sed 's/.*"id":\([0-9]*\).*/\1/')
for i in $(seq 1 50); do
  sb user create --account "$acct" --first "First$i" --last "Last$((i % 17))" --username "user$i" \
    --email "user$i@bench.example" --timezone America/Chicago --extension "$((100 + i))" --extensions "$((100 + i))" >/dev/null
done
key=$(sb key create --account "$acct" --name bench --scopes users:read --json | sed 's/.*"key":"\([^"]*\)".*/\1/')
addr=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The binary itself, not the sb function, so that $! is the server and the trap stops it.
env ${SERVE_ENV:-} "$work/switchboard" --db "$work/bench.db" serve --listen "$addr" ${SERVE_FLAGS:-} >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.1; done
kill -0 "$pid" || { echo "server did not start:"; cat "$work/serve.log"; exit 1; }
bytes=$(curl -s -H "Authorization: Bearer $key" http://$addr/api/public/v1/users | wc -c)
echo "GET /users response: $bytes bytes"
"$work/loadgen" -url http://$addr/api/public/v1/users -H "Authorization: Bearer $key" \
  -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "GET /users (50 users, SQLite)"
