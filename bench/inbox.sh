#!/usr/bin/env bash
# The shared inbox at scale (issue 11's targets), on SQLite unless DB is a
# postgres:// URL:
#   bash bench/inbox.sh [duration] [concurrency]
#   TENANT2=1 bash bench/inbox.sh [duration] [concurrency]
#
# bench/inboxgen fills the database (one account, 1,000,000 messages in 50,000
# conversations, 20 users who all see every line, 90% of threads read by
# everyone) and is timed: on SQLite through the store's methods, on PostgreSQL
# with COPY (inboxgen -copy, its default there; the same database as the
# store's, bench/inboxgen/equal_test.go). The generated database is kept in
# $INBOX_DB (default /tmp/switchboard-inbox-bench.db) with its description
# beside it, and reused by later runs while both exist (delete them, or set
# REGEN=1, to regenerate). On PostgreSQL, DB must name an existing database,
# empty when it is generated (createdb it; dropdb and createdb it again before
# REGEN=1), and the description is $INBOX_DESC (default
# /tmp/switchboard-inbox-bench.pg.json).
# Then, at -c concurrency against the loadgen trivial-handler ceiling measured
# in the same run with the same response size, as Max's OAuth token:
#   1. GET /sms/conversations                        (first page, limit 50)
#   2. GET /sms/conversations?unread=true&unassigned=true
#   3. GET /sms/unread
#   4. GET /sms/conversations?offset=40000           (vs 1)
#   5. GET …/{big}?markRead=true&limit=1 vs …/{small}?markRead=true&limit=1
#
# TENANT2=1, instead of 1 to 5: a second account on the same server and
# database, "Inbox Bench Tenant 2" (inboxgen again, into the same database:
# T2_MESSAGES, default 100,000, in T2_CONVERSATIONS, default 5,000, threads,
# 5 users t2agent1 to t2agent5, 2 lines; its description beside the first's,
# *.tenant2.json, generated once and again with the first). As its user
# t2agent1, reads 1 to 3 are measured twice in the same run: with no sender
# running, then while the FIRST account sends SEND_RATE (default 500) texts a
# second through POST /sms/messages (bench/inboxgen/sender, paced, to the
# first account's generated threads from their lines; the first account
# gets a US rate card, and its generated key has sms:send). Each loadgen run
# measures its own ceiling in the same condition; printed per read: the read
# rate over that ceiling, alone and under the sends, and the loaded rate over
# the ceiling measured alone (what the sends cost the reads, CPU included),
# and then what the sender achieved. The sends stay in the database (some
# thousands a run, moving their threads to the top of the first account's
# lists): REGEN=1 for a fresh one.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
db=${DB:-${INBOX_DB:-/tmp/switchboard-inbox-bench.db}}
work=$(mktemp -d)
pid= spid=
trap 'set +e; [ -n "$spid" ] && kill "$spid" 2>/dev/null; [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null
  grep -m3 -i "level=error" "$work/serve.log"; rm -rf "$work"' EXIT INT TERM
go build -o "$work/switchboard" ./cmd/switchboard
go build -o "$work/loadgen" ./cmd/loadgen
go build -o "$work/oauthtoken" ./bench/oauthtoken
go build -o "$work/sender" ./bench/inboxgen/sender
# The generator is a data loader: built without fsync (benchnosync), since
# the durability of a benchmark's fixture does not matter. The server is not.
go build -tags benchnosync -o "$work/inboxgen" ./bench/inboxgen
source bench/lib.sh

desc=$db.json
[[ $db == postgres* ]] && desc=${INBOX_DESC:-/tmp/switchboard-inbox-bench.pg.json}
desc2=${desc%.json}.tenant2.json
if [ -n "${REGEN:-}" ] || [ ! -s "$desc" ] || { [[ $db != postgres* ]] && [ ! -f "$db" ]; }; then
  [[ $db != postgres* ]] && rm -f "$db" "$db-wal" "$db-shm"
  rm -f "$desc2" # the second tenant lived in the database replaced
  echo "generating $db ..."
  start=$(date +%s)
  "$work/inboxgen" -db "$db" ${GEN_FLAGS:-} >"$desc"
  echo "generated in $(( $(date +%s) - start )) s: $(cat "$desc")"
fi
if [ -n "${TENANT2:-}" ] && [ ! -s "$desc2" ]; then
  echo "generating the second tenant in $db ..."
  start=$(date +%s)
  "$work/inboxgen" -db "$db" -account "Inbox Bench Tenant 2" -usernames t2agent -numbers 1415560 -users 5 -lines 2 \
    -conversations "${T2_CONVERSATIONS:-5000}" -messages "${T2_MESSAGES:-100000}" -big 1000 >"$desc2"
  echo "generated in $(( $(date +%s) - start )) s: $(cat "$desc2")"
fi
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "${2:-$desc}" "$1"; } # NAME [FILE]
line=$(field line); big=$(field big); small=$(field small)
# The first account's sends are charged: a rate card (rates are upserted, so
# a reused database keeps one).
if [ -n "${TENANT2:-}" ]; then
  "$work/switchboard" --db "$db" rate set --account "$(field accountId)" --prefix 1 --sms 0.0079 --mms 0.02 >/dev/null
fi

start_server "$work/switchboard" "$db" "$work/serve.log" ${SERVE_FLAGS:-}
token() { # USERNAME
  "$work/oauthtoken" -url "http://$addr" -username "$1" -password bench-password -scope "messages:read messages:write" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}
base=http://$addr/api/public/v1

run() { # LABEL PATH
  local bytes
  bytes=$(curl -sf -H "Authorization: Bearer $tok" "$base$2" | wc -c)
  echo
  echo "== $1 ($bytes bytes)"
  "$work/loadgen" -url "$base$2" -H "Authorization: Bearer $tok" -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "$1"
}

# tenant2_read N LABEL PATH CASE: loadgen on the second tenant's read into
# $work/CASE-N.json, with its ceiling.
tenant2_read() {
  local bytes
  bytes=$(curl -sf -H "Authorization: Bearer $tok" "$base$3" | wc -c)
  echo "== $2 ($bytes bytes), $4"
  "$work/loadgen" -url "$base$3" -H "Authorization: Bearer $tok" -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "$2" -json >"$work/$4-$1.json"
}

# send_check FILE: fails the run unless the sender's summary in FILE has no
# refusal.
send_check() {
  python3 - "$1" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"first account's sends: {s['sent']} accepted, {s['refused']} refused in {s['seconds']:.1f} s: "
      f"{s['rate']:.1f}/s (target {s['target']:.0f}/s), slowest answer {s['slowestMs']:.0f} ms")
if s["refused"] or not s["sent"]:
    sys.exit(f"the first account's sends failed: {s['statuses']} {s.get('firstRefusal', '')}")
EOF
}

tenant2() {
  local rate=${SEND_RATE:-500} i
  local labels=("first page" "unread+unassigned" "unread counts")
  local paths=("/sms/conversations?limit=50" "/sms/conversations?unread=true&unassigned=true" "/sms/unread")
  tok=$(token "$(field username "$desc2")")
  local sender=("$work/sender" -url "$base/sms/messages" -key "$(field key)" -desc "$desc")
  # A second of sends first, so that a refusal stops the run here.
  "${sender[@]}" -rate 20 -d 1s >"$work/check.json"
  send_check "$work/check.json"
  for i in 0 1 2; do tenant2_read "$i" "${labels[$i]}" "${paths[$i]}" alone; done
  "${sender[@]}" -rate "$rate" >"$work/sends.json" &
  spid=$!
  sleep 2 # past the first sends' start-up (connections, prepared statements)
  for i in 0 1 2; do tenant2_read "$i" "${labels[$i]}" "${paths[$i]}" loaded; done
  kill -TERM "$spid"
  wait "$spid"
  spid=
  echo
  echo "second tenant's reads at $conc clients, $dur each: req/s and the ratio to loadgen's ceiling (alone; while the first account sends $rate/s)"
  python3 - "$work" "${labels[@]}" <<'EOF'
import json, sys
work, labels = sys.argv[1], sys.argv[2:]
for i, label in enumerate(labels):
    a, l = (json.load(open(f"{work}/{case}-{i}.json")) for case in ("alone", "loaded"))
    ra, rl, ca, cl = a["target"]["requests_per_sec"], l["target"]["requests_per_sec"], a["ceiling"]["requests_per_sec"], l["ceiling"]["requests_per_sec"]
    errors = a["target"]["errors"] + l["target"]["errors"]
    print(f"{label:18} alone {ra:7.0f}/s = {ra / ca:.3f} of {ca:.0f}/s | sending {rl:7.0f}/s = {rl / cl:.3f} of {cl:.0f}/s, "
          f"{rl / ca:.3f} of the ceiling alone | p99 {a['target']['p99_ms']:.1f} -> {l['target']['p99_ms']:.1f} ms | errors {errors}")
EOF
  send_check "$work/sends.json"
}

if [ -n "${TENANT2:-}" ]; then
  tenant2
else
  tok=$(token "$(field username)")
  run "first page" "/sms/conversations?limit=50"
  run "unread+unassigned" "/sms/conversations?unread=true&unassigned=true"
  run "unread counts" "/sms/unread"
  run "page at offset 1" "/sms/conversations?limit=50&offset=1"
  run "page at offset 40000" "/sms/conversations?limit=50&offset=40000"
  run "markRead small thread (10)" "/sms/conversations/$line/$small?markRead=true&limit=1"
  run "markRead big thread ($(field bigMessages))" "/sms/conversations/$line/$big?markRead=true&limit=1"
fi
echo
echo "CPU of the server: $(ps -o times= -p "$pid") s"
