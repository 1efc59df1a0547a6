#!/usr/bin/env bash
# POST /sms/messages (one recipient, sim carrier, SQLite synchronous=FULL) at 64
# concurrent clients, with loadgen's trivial-handler ceiling in the same run.
#   bash bench/send.sh [duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
source bench/lib.sh
bench_setup
build switchboard loadgen
provision_send "$work/switchboard" "$work/bench.db"
start_server "$work/switchboard" "$work/bench.db" "$work/serve.log" --media "file://$work/media" ${SERVE_FLAGS:-}
bytes=$(curl -s -H "Authorization: Bearer $key" -d "$send_body" "http://$addr/api/public/v1/sms/messages" | wc -c)
# The server's CPU time (user + system, clock ticks) before and after the load.
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
cpu0=$(cpu)
"$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$send_body" -expect 201 \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
  -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "POST /sms/messages (sim, SQLite FULL)" ${LOADGEN_FLAGS:-}
# The committer's counters over the whole run (warmups included): group size
# and where a commit cycle's time goes.
curl -s "$(metrics_url)" | awk '
  /^switchboard_store_commits_total/ {b=$2} /^switchboard_store_writes_total/ {w=$2}
  /^switchboard_store_exec_seconds_total/ {e=$2} /^switchboard_store_commit_seconds_total/ {c=$2}
  END { if (b > 0) printf "committer: %d commits, %.1f writes each, %.2f ms running writes + %.2f ms in COMMIT per commit\n", b, w/b, 1000*e/b, 1000*c/b }'
charges=$("$work/switchboard" --db "$work/bench.db" ledger list --account "$acct" --limit 1 --json | json_field count)
echo "ledger: $charges charges"
# Every charge is one send (warm-ups included), and the server does nothing else.
awk -v t="$(( $(cpu) - cpu0 ))" -v hz="$(getconf CLK_TCK)" -v n="$charges" \
  'BEGIN { if (n > 0) printf "server CPU: %.0f us per send\n", 1e6 * t / hz / n }'
