#!/usr/bin/env bash
# Two server binaries driven alternately by the same loadgen, on fresh databases
# provisioned as bench/users.sh and bench/send.sh do: what a server change is
# worth, without the load generator's own changes in the figure.
#   bash bench/ab.sh users|send OLD_BINARY NEW_BINARY [rounds] [duration]
# Build an old binary with: git worktree add /tmp/old REV && (cd /tmp/old && go build -o /tmp/sb-old ./cmd/switchboard)
set -euo pipefail
cd "$(dirname "$0")/.."
what=$1 old=$2 new=$3 rounds=${4:-3} dur=${5:-8s}
case "$what" in users|send) ;; *) echo "usage: bash bench/ab.sh users|send OLD NEW [rounds] [duration]" >&2; exit 2;; esac
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
go build -o "$tmp/loadgen" ./cmd/loadgen

run() {
  local bin=$1 work
  work=$(mktemp -d -p "$tmp")
  sb() { "$bin" --db "$work/bench.db" "$@"; }
  local acct key addr
  acct=$(sb account create --name "Bench Co" --json | sed 's/.*"id":\([0-9]*\).*/\1/')
  if [ "$what" = users ]; then
    for i in $(seq 1 50); do
      sb user create --account "$acct" --first "First$i" --last "Last$((i % 17))" --username "user$i" \
        --email "user$i@bench.example" --timezone America/Chicago --extension "$((100 + i))" --extensions "$((100 + i))" >/dev/null
    done
    key=$(sb key create --account "$acct" --name bench --scopes users:read --json | sed 's/.*"key":"\([^"]*\)".*/\1/')
  else
    sb line create --account "$acct" --number 14155550100 >/dev/null
    sb rate set --account "$acct" --prefix 1 --sms 0.0079 --mms 0.02 >/dev/null
    key=$(sb key create --account "$acct" --name bench --scopes sms:send --json | sed 's/.*"key":"\([^"]*\)".*/\1/')
  fi
  addr=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin" --db "$work/bench.db" serve --listen "$addr" --media "file://$work/media" >"$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.1; done
  if [ "$what" = users ]; then
    "$tmp/loadgen" -url "http://$addr/api/public/v1/users" -H "Authorization: Bearer $key" -c 64 -d "$dur" -ceiling=false | grep "target "
  else
    body='{"from":"14155550100","to":["+1 (212) 555-0100"],"message":"Your appointment is tomorrow at 9:00. Reply STOP to opt out."}'
    "$tmp/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$body" -expect 201 \
      -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c 64 -d "$dur" -ceiling=false | grep "target "
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}
for _ in $(seq 1 "$rounds"); do
  echo -n "old "; run "$old"
  echo -n "new "; run "$new"
done
