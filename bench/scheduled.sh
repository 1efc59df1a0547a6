#!/usr/bin/env bash
# The scheduled-message dispatcher draining N messages due at the same moment
# (one recipient each, sim carrier, SQLite synchronous=FULL), against direct
# sends through POST /sms/messages measured first in the same run, on the
# same server and database.
#   bash bench/scheduled.sh [messages] [send duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
dur=${2:-5s}
conc=${3:-64}
source bench/lib.sh
bench_setup
build switchboard loadgen
provision_send "$work/switchboard" "$work/bench.db"
start_server "$work/switchboard" "$work/bench.db" "$work/serve.log" --media "file://$work/media" --log-format text ${SERVE_FLAGS:-}
api="http://$addr/api/public/v1"

# 1. The baseline: direct sends, one recipient each.
"$work/loadgen" -url "$api/sms/messages" -method POST -body "$send_body" -expect 201 \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
  -c "$conc" -d "$dur" -ceiling=false -json -label "POST /sms/messages" >"$work/send.json"
send_rps=$(json_field requests_per_sec <"$work/send.json")
echo "direct sends: $send_rps sends/s ($conc clients, $dur)"

# 2. N messages scheduled for one moment, far enough ahead to schedule them
# all first (twice the time the sends' rate says it takes, plus 5 s).
lead=$(awk -v n="$n" -v r="$send_rps" 'BEGIN { printf "%d", 2 * n / r + 5 }')
send_at=$(date -u -d "+$lead seconds" +%Y-%m-%dT%H:%M:%SZ)
body='{"to":["+1 (212) 555-0100"],"message":"Your appointment is tomorrow at 9:00. Reply STOP to opt out.","sendAt":"'$send_at'"}'
"$work/loadgen" -url "$api/sms/lines/14155550100/scheduled" -method POST -body "$body" -expect 201 \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
  -c "$conc" -n "$n" -warmup 0 -ceiling=false -json -label "schedule" >"$work/schedule.json"
if [ "$(date -u +%s)" -ge "$(date -u -d "$send_at" +%s)" ]; then
  echo "scheduling took longer than the lead of ${lead}s"; exit 1
fi
echo "scheduled $n messages for $send_at; waiting for the dispatcher"

# 3. The dispatcher logs each pass that sent something: count and seconds
# from its first claim to its last outcome.
for _ in $(seq 1 $((lead * 10 + 1200))); do
  grep -q 'msg="scheduled messages dispatched"' "$work/serve.log" && break
  sleep 0.1
done
line=$(grep -m1 'msg="scheduled messages dispatched"' "$work/serve.log")
count=$(sed 's/.* count=\([0-9]*\).*/\1/' <<<"$line")
secs=$(sed 's/.* seconds=\([0-9.e+-]*\).*/\1/' <<<"$line")
charges=$("$work/switchboard" --db "$work/bench.db" ledger list --account "$acct" --limit 1 --json | json_field count)
awk -v c="$count" -v s="$secs" -v r="$send_rps" -v n="$n" -v ch="$charges" 'BEGIN {
  d = c / s
  printf "dispatcher: %d messages in %.2f s = %.0f sends/s\n", c, s, d
  printf "ratio dispatcher / direct sends: %.2f (want >= 0.5)\n", d / r
  printf "ledger: %d charges in all\n", ch
  if (c != n) { printf "dispatched %d in one pass, want %d\n", c, n; exit 1 }
}'
