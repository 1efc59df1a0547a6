#!/usr/bin/env bash
# The shared inbox at scale (issue 11's targets), on SQLite unless DB is a
# postgres:// URL:
#   bash bench/inbox.sh [duration] [concurrency]
#
# bench/inboxgen fills the database (one account, 1,000,000 messages in 50,000
# conversations, 20 users who all see every line, 90% of threads read by
# everyone) and is timed. The generated database is kept in $INBOX_DB (default
# /tmp/switchboard-inbox-bench.db) with its description beside it, and reused
# by later runs while both exist (delete them, or set REGEN=1, to regenerate).
# Then, at -c concurrency against the loadgen trivial-handler ceiling measured
# in the same run with the same response size, as Max's OAuth token:
#   1. GET /sms/conversations                        (first page, limit 50)
#   2. GET /sms/conversations?unread=true&unassigned=true
#   3. GET /sms/unread
#   4. GET /sms/conversations?offset=40000           (vs 1)
#   5. GET …/{big}?markRead=true&limit=1 vs …/{small}?markRead=true&limit=1
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
db=${DB:-${INBOX_DB:-/tmp/switchboard-inbox-bench.db}}
work=$(mktemp -d)
pid=
trap 'set +e; [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; grep -m3 -i "level=error" "$work/serve.log"; rm -rf "$work"' EXIT INT TERM
go build -o "$work/switchboard" ./cmd/switchboard
go build -o "$work/loadgen" ./cmd/loadgen
go build -o "$work/oauthtoken" ./bench/oauthtoken
# The generator is a data loader: built without fsync (benchnosync), since
# the durability of a benchmark's fixture does not matter. The server is not.
go build -tags benchnosync -o "$work/inboxgen" ./bench/inboxgen
source bench/lib.sh

desc=$db.json
[[ $db == postgres* ]] && desc=${INBOX_DESC:-/tmp/switchboard-inbox-bench.pg.json}
if [ -n "${REGEN:-}" ] || [ ! -s "$desc" ] || { [[ $db != postgres* ]] && [ ! -f "$db" ]; }; then
  [[ $db != postgres* ]] && rm -f "$db" "$db-wal" "$db-shm"
  echo "generating $db ..."
  start=$(date +%s)
  "$work/inboxgen" -db "$db" ${GEN_FLAGS:-} >"$desc"
  echo "generated in $(( $(date +%s) - start )) s: $(cat "$desc")"
fi
field() { python3 -c "import json,sys; print(json.load(open('$desc'))['$1'])"; }
line=$(field line); big=$(field big); small=$(field small)

start_server "$work/switchboard" "$db" "$work/serve.log" ${SERVE_FLAGS:-}
tok=$("$work/oauthtoken" -url "http://$addr" -username agent1 -password bench-password -scope "messages:read messages:write" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
base=http://$addr/api/public/v1

run() { # LABEL PATH
  local bytes
  bytes=$(curl -sf -H "Authorization: Bearer $tok" "$base$2" | wc -c)
  echo
  echo "== $1 ($bytes bytes)"
  "$work/loadgen" -url "$base$2" -H "Authorization: Bearer $tok" -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "$1"
}
run "first page" "/sms/conversations?limit=50"
run "unread+unassigned" "/sms/conversations?unread=true&unassigned=true"
run "unread counts" "/sms/unread"
run "page at offset 1" "/sms/conversations?limit=50&offset=1"
run "page at offset 40000" "/sms/conversations?limit=50&offset=40000"
run "markRead small thread (10)" "/sms/conversations/$line/$small?markRead=true&limit=1"
run "markRead big thread ($(field bigMessages))" "/sms/conversations/$line/$big?markRead=true&limit=1"
echo
echo "CPU of the server: $(ps -o times= -p "$pid") s"

