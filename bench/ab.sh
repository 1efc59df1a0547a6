#!/usr/bin/env bash
# Two server binaries driven alternately by the same loadgen, on fresh databases
# provisioned as bench/users.sh and bench/send.sh do, or (inbox) on the database
# bench/inbox.sh generated ($INBOX_DB) with GET $INBOX_PATH as its first user:
# or (calls) on a database bench/callgen filled ($CALLS_DB, a sqlite:// or
# postgres:// URL; the old binary on $CALLS_DB_OLD if set, to compare schemas)
# with POST /calls/search of $CALLS_BODY at 16 clients:
# what a server change is worth, without the load generator's own changes in
# the figure.
#   bash bench/ab.sh users|send|inbox|calls OLD_BINARY NEW_BINARY [rounds] [duration]
# Build an old binary with: git worktree add /tmp/old REV && (cd /tmp/old && go build -o /tmp/sb-old ./cmd/switchboard)
set -euo pipefail
cd "$(dirname "$0")/.."
what=$1 old=$2 new=$3 rounds=${4:-3} dur=${5:-8s}
case "$what" in users|send|inbox|calls) ;; *) echo "usage: bash bench/ab.sh users|send|inbox|calls OLD NEW [rounds] [duration]" >&2; exit 2;; esac
source bench/lib.sh
bench_setup
build loadgen oauthtoken

run_inbox() {
  local bin=$1 tok
  start_server "$bin" "${INBOX_DB:-/tmp/switchboard-inbox-bench.db}" "$work/serve.log"
  tok=$("$work/oauthtoken" -url "http://$addr" -username agent1 -password bench-password -scope "messages:read messages:write" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
  "$work/loadgen" -url "http://$addr/api/public/v1${INBOX_PATH:-/sms/conversations?limit=50}" -H "Authorization: Bearer $tok" \
    -c 64 -d "$dur" -ceiling=false | grep "target "
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}

# run_calls BIN DB: also prints the server's CPU time per request (from
# /proc, over the measured run), steadier than requests/s on a busy machine.
run_calls() {
  local bin=$1 db=$2 key t0 out
  key=$("$bin" --db "$db" key create --account 1 --name ab --scopes reports:read --json | json_field key)
  start_server "$bin" "$db" "$work/serve.log"
  t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  out=$("$work/loadgen" -url "http://$addr/api/public/v1/calls/search" -method POST -body "$CALLS_BODY" -expect 200 \
    -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c 16 -d "$dur" -warmup 0s -ceiling=false | grep "target ")
  echo "$out" | awk -v ticks="$(( $(awk '{print $14+$15}' "/proc/$pid/stat") - t0 ))" -v hz="$(getconf CLK_TCK)" \
    '{printf "%s  server CPU %.0f us/request\n", $0, ticks * 1e6 / hz / $2}'
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}

run() {
  local bin=$1 dir
  [ "$what" = inbox ] && { run_inbox "$bin"; return; }
  dir=$(mktemp -d -p "$work")
  "provision_$what" "$bin" "$dir/bench.db"
  start_server "$bin" "$dir/bench.db" "$dir/serve.log" --media "file://$dir/media"
  if [ "$what" = users ]; then
    "$work/loadgen" -url "http://$addr/api/public/v1/users" -H "Authorization: Bearer $key" -c 64 -d "$dur" -ceiling=false | grep "target "
  else
    # Sends also print the server's CPU time per send, steadier than
    # sends/s on a busy machine.
    local t0 out
    t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
    out=$("$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$send_body" -expect 201 \
      -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c 64 -d "$dur" -warmup 0s -ceiling=false | grep "target ")
    echo "$out" | awk -v ticks="$(( $(awk '{print $14+$15}' "/proc/$pid/stat") - t0 ))" -v hz="$(getconf CLK_TCK)" \
      '{printf "%s  server CPU %.0f us/request\n", $0, ticks * 1e6 / hz / $2}'
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}
for _ in $(seq 1 "$rounds"); do
  if [ "$what" = calls ]; then
    echo -n "old "; run_calls "$old" "${CALLS_DB_OLD:-$CALLS_DB}"
    echo -n "new "; run_calls "$new" "$CALLS_DB"
    continue
  fi
  echo -n "old "; run "$old"
  echo -n "new "; run "$new"
done
