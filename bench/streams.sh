#!/usr/bin/env bash
# The live event stream, GET /api/public/v1/events (issue 24), on one SQLite
# server (the real binary), against the webhook dispatcher in the same run:
#   bash bench/streams.sh [streams] [rate] [duration]
#
# 1. Live: events written at rate per second (default 200; each a POST
#    /sms/messages, whose commit writes one message.sent event; the sim
#    carrier's receipts are delayed past the run so none doubles the rate)
#    for duration (default 20s) with no stream open (the baseline: webhook
#    latency, server CPU per send), then again with streams (default 2,000)
#    open: event-to-client latency p50/p99/max beside the webhook's for the
#    same events, events delivered per second, server RSS before and after
#    opening the streams, server CPU per delivered event.
# 2. Idle: IDLE_STREAMS (default 10,000) streams held open for IDLE (default
#    20s, past the 15 s keepalive) on a freshly started server: RSS per
#    stream, CPU, keepalives.
# 3. Replay: REPLAY_N (default 100,000) events written into the stopped
#    server's database (bench/streams fill: the store's AddEvents, marked
#    fanned out so the dispatcher leaves them alone), then one client
#    resumes after the event before them and reads them all: events/s.
# SCENARIOS (default "live idle replay") picks which run. SERVER_BIN runs that
# server binary instead of one built from this tree (the load client is still
# this tree's): two runs back to back compare two servers under one client.
# CEILING=1 runs live and idle against `streams ceiling` instead of any
# server: the same requests, frames and webhook POSTs with no database behind
# them (bench/streams/ceiling.go), the most this machine allows the client's
# figures to be; e.g. CEILING=1 SCENARIOS=live bash bench/streams.sh 2000 200 20s
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${1:-2000}
rate=${2:-200}
dur=${3:-20s}
idle_streams=${IDLE_STREAMS:-10000}
replay_n=${REPLAY_N:-100000}
scenarios=${SCENARIOS:-live idle replay}
[ -z "${CEILING:-}" ] || scenarios=${SCENARIOS:-live idle}
# Every stream is a descriptor in the client and another in the server
# (both inherit this shell's limit).
most=$(( idle_streams > streams ? idle_streams : streams ))
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt $(( most + 500 )) ]; then
  echo "$most streams need $(( most + 500 )) file descriptors; the hard limit is $(ulimit -Hn)"
  exit 1
fi
source bench/lib.sh
bench_setup
# The code measured: the commit, and whether the tree had uncommitted changes.
rev=$(git rev-parse --short HEAD)$( [ -z "$(git status --porcelain 2>/dev/null)" ] || echo "+uncommitted")
build streams
line=14155550100
if [ -n "${CEILING:-}" ]; then
  rev="the ceiling, bench/streams ceiling ($rev)"
  key=sk_ceiling
  maddr= # no /metrics
  # serve: the ceiling on a free port; sets addr (from the line it prints) and pid.
  serve() {
    "$work/streams" ceiling -listen 127.0.0.1:0 -key "$key" >"$work/serve.log" 2>&1 &
    pid=$!
    addr=
    for _ in $(seq 1 100); do
      addr=$(sed -n 's/^listening on //p' "$work/serve.log")
      [ -n "$addr" ] && break
      sleep 0.1
    done
    [ -n "$addr" ] || { echo "the ceiling did not start:"; cat "$work/serve.log"; exit 1; }
  }
else
  if [ -n "${SERVER_BIN:-}" ]; then
    bin=$SERVER_BIN
    rev="server $SERVER_BIN (client $rev)"
  else
    build switchboard
    bin=$work/switchboard
  fi
  db=$work/bench.db
  provision_send "$bin" "$db"
  # One key for all three: the streams read, the sends write, the receiver subscribes.
  key=$("$bin" --db "$db" key create --account "$acct" --name streams --scopes messages:read,sms:send,webhooks:write --json | json_field key)

  serve_flags=(--media "file://$work/media" --sim receipt-delay=1h --webhook-allow-hosts 127.0.0.1)
  # The help is read whole first: with pipefail, grep -q's early exit would
  # fail the pipeline (the binary's SIGPIPE) and leave the limit at its default.
  if grep -q -- -stream-limit <<<"$("$bin" serve -h 2>&1 || true)"; then
    serve_flags+=(--stream-limit $(( most + 100 )))
  fi
  serve() { start_server "$bin" "$db" "$work/serve.log" "${serve_flags[@]}"; }
fi
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
machine() { echo "== $1: $(date -u +%FT%TZ), $rev, nproc $(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
hz=$(getconf CLK_TCK)
metrics() { [ -n "$maddr" ] && echo "-metrics $(metrics_url)"; true; }

for s in $scenarios; do
  case $s in
    live)
      machine "live: $streams streams, $rate events/s, $dur per phase"
      serve
      "$work/streams" -url "http://$addr" -key "$key" -from "$line" -pid "$pid" -hz "$hz" $(metrics) \
        -streams "$streams" -rate "$rate" -d "$dur" ${STREAMS_FLAGS:-}
      stop
      ;;
    idle)
      machine "idle: $idle_streams streams held ${IDLE:-20s}"
      serve
      "$work/streams" -url "http://$addr" -key "$key" -pid "$pid" -hz "$hz" $(metrics) \
        -streams "$idle_streams" -rate 0 -idle "${IDLE:-20s}" ${STREAMS_FLAGS:-}
      stop
      ;;
    replay)
      [ -z "${CEILING:-}" ] || { echo "replay reads the real server's database: not with CEILING"; exit 2; }
      machine "replay: $replay_n events to one client"
      first=$("$work/streams" fill -db "$db" -account "$acct" -line "$line" -n $(( replay_n + 1 )))
      serve
      "$work/streams" -url "http://$addr" -key "$key" -pid "$pid" -hz "$hz" -replay "$first" -replay-n "$replay_n"
      stop
      ;;
    *) echo "unknown scenario $s"; exit 2 ;;
  esac
done
