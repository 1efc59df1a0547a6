#!/usr/bin/env bash
# Search at scale (issue 33), on SQLite unless DB is a postgres:// URL:
#   bash bench/search.sh [duration] [concurrency]
#
# bench/searchgen fills the database the fast way (one account, 1,000,000
# messages in 50,000 conversations on 10 lines, texts of Zipf-distributed
# words with "invoice" in 8%, "reschedule"/"rescheduled" in 1% each and
# "café" in 0.1%; 20,000 contacts holding the first conversations' numbers,
# imported through the address book), then builds the search index as migration 0034 does on an
# upgrade, timed, with its progress on stderr. The database is kept in
# $SEARCH_DB (default /tmp/switchboard-search-bench.db; for PostgreSQL give
# DB, an empty database) with its description beside it, and reused while
# both exist (REGEN=1 regenerates). Set GEN_FLAGS to change its size.
# Then GET /search at -c clients (default 16) as agent1's OAuth token, each
# query's first page (20 hits a group):
#   1. a word in 8% of texts            q=invoice
#   2. a beginning (2%)                 q=resch
#   3. a rare word, other diacritics    q=CAFE
#   4. two words                        q=invoice resch
#   5. 4 digits of a number             q=4821
#   6. a contact's last name (2%)       q=Okafor
# and the index's size against the messages table's.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-16}
db=${DB:-${SEARCH_DB:-/tmp/switchboard-search-bench.db}}
work=$(mktemp -d)
pid=
trap 'set +e; [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; grep -m3 -i "level=error" "$work/serve.log"; rm -rf "$work"' EXIT INT TERM
go build -o "$work/switchboard" ./cmd/switchboard
go build -o "$work/loadgen" ./cmd/loadgen
go build -o "$work/oauthtoken" ./bench/oauthtoken
go build -o "$work/searchgen" ./bench/searchgen
source bench/lib.sh

desc=$db.json
[[ $db == postgres* ]] && desc=${SEARCH_DESC:-/tmp/switchboard-search-bench.pg.json}
if [ -n "${REGEN:-}" ] || [ ! -s "$desc" ] || { [[ $db != postgres* ]] && [ ! -f "$db" ]; }; then
  [[ $db != postgres* ]] && rm -f "$db" "$db-wal" "$db-shm"
  echo "generating $db ..."
  "$work/searchgen" -db "$db" ${GEN_FLAGS:-} >"$desc"
  echo "generated: $(cat "$desc")"
fi

start_server "$work/switchboard" "$db" "$work/serve.log" ${SERVE_FLAGS:-}
tok=$("$work/oauthtoken" -url "http://$addr" -username agent1 -password bench-password -scope "messages:read" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
base=http://$addr/api/public/v1

run() { # LABEL QUERY
  local bytes
  bytes=$(curl -sf -H "Authorization: Bearer $tok" "$base/search?$2" | wc -c)
  echo
  echo "== $1 ($bytes bytes)"
  "$work/loadgen" -url "$base/search?$2" -H "Authorization: Bearer $tok" -c "$conc" -d "$dur" -ceiling=false -label "$1"
}
run "word (8%)" "q=invoice"
run "beginning (2%)" "q=resch"
run "rare word, diacritics (0.1%)" "q=CAFE"
run "two words" "q=invoice%20resch"
run "4 digits of a number" "q=4821"
run "contact name (2% of 20,000)" "q=Okafor"
echo
echo "CPU of the server: $(ps -o times= -p "$pid") s"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

echo
echo "== sizes"
if [[ $db == postgres* ]]; then
  psql "$db" -Atc "SELECT 'messages (table, toast and indexes): ' || pg_size_pretty(pg_total_relation_size('messages'))
    UNION ALL SELECT 'message_words (table and GIN): ' || pg_size_pretty(pg_total_relation_size('message_words'))
    UNION ALL SELECT 'conversation_numbers: ' || pg_size_pretty(pg_total_relation_size('conversation_numbers'))"
else
  python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
try:
    rows = c.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
except sqlite3.OperationalError as e:
    sys.exit(f"dbstat unavailable: {e}")
size = dict(rows)
def total(prefix):
    return sum(v for k, v in size.items() if k == prefix or k.startswith(prefix + "_") or k.startswith("sqlite_autoindex_" + prefix))
msgs = size.get("messages", 0) + sum(v for k, v in size.items() if k.startswith("messages_"))
words = sum(v for k, v in size.items() if k.startswith("message_words"))
nums = sum(v for k, v in size.items() if k.startswith("conversation_numbers"))
print(f"messages (table and indexes): {msgs/2**20:.0f} MiB")
print(f"message_words (FTS5 shadow tables): {words/2**20:.0f} MiB ({words/msgs:.2f}x)")
print(f"conversation_numbers: {nums/2**20:.1f} MiB")
print(f"whole file: {sum(size.values())/2**20:.0f} MiB")
PY
fi
