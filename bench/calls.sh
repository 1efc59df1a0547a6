#!/usr/bin/env bash
# Call search at 16 concurrent clients, each figure beside the trivial-handler
# ceiling that loadgen measures in the same run:
#   1. first page of a one-month window (limit 50, newest first, exact total),
#   2. the same with a status and a direction filter,
#   3. the page at offset 100,000,
# on a database holding CALLS calls over one year, and again on a database
# holding only that month's calls (generated alone from the same seed).
#   bash bench/calls.sh [calls] [sqlite|postgres] [duration]
# PostgreSQL uses $SWITCHBOARD_TEST_POSTGRES (two fresh schemas, dropped at
# the end).
# CALLS_DIR=DIR keeps the two SQLite databases there and reuses them in later
# runs with the same calls count (generating 10,000,000 takes half an hour).
# CALLS_SCHEMA=NAME does the same on PostgreSQL: schemas NAME_year_CALLS and
# NAME_month_CALLS, kept, and reused once their generation has finished.
# CALLS_PPROF=DIR saves a CPU profile of the server during each search run
# there (from the private --metrics-addr listener).
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-10000000}
engine=${2:-sqlite}
dur=${3:-10s}
conc=16
end=2026-11-01T00:00:00Z
month_from=2026-10-02T00:00:00Z            # the window: the last 30 days of the year
from_unix=$(date -d "$month_from" +%s)
end_unix=$(date -d "$end" +%s)
work=$(mktemp -d)
pid=
trap 'set +e; [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT INT TERM
go build -o "$work/switchboard" ./cmd/switchboard
go build -o "$work/loadgen" ./cmd/loadgen
go build -o "$work/callgen" ./bench/callgen
source bench/lib.sh

schema() { [ -n "${CALLS_SCHEMA:-}" ] && echo "${CALLS_SCHEMA}_$1_$calls" || echo "bench_calls_$1_$$"; }
dsn() { # dsn NAME
  if [ "$engine" = postgres ]; then
    local schema; schema=$(schema "$1")
    psql -q "$SWITCHBOARD_TEST_POSTGRES" -c "CREATE SCHEMA IF NOT EXISTS $schema" >/dev/null
    case $SWITCHBOARD_TEST_POSTGRES in
      *\?*) echo "$SWITCHBOARD_TEST_POSTGRES&search_path=$schema" ;;
      *) echo "$SWITCHBOARD_TEST_POSTGRES?search_path=$schema" ;;
    esac
  else
    echo "sqlite://${CALLS_DIR:-$work}/$1-$calls.db"
  fi
}
cleanup_pg() { [ "$engine" = postgres ] && [ -z "${CALLS_SCHEMA:-}" ] && psql -q "$SWITCHBOARD_TEST_POSTGRES" -c "DROP SCHEMA IF EXISTS $(schema "$1") CASCADE" >/dev/null || true; }
# generated NAME: whether NAME's database was filled by an earlier run (the
# generator's summary kept beside it: a file, or the schema's comment).
generated() {
  if [ "$engine" = postgres ]; then
    [ -n "$(psql -Atq "$SWITCHBOARD_TEST_POSTGRES" -c "SELECT obj_description('$(schema "$1")'::regnamespace, 'pg_namespace')")" ]
  else
    local db; [ "$1" = year ] && db=$year || db=$month
    [ -s "${db#sqlite://}.done" ]
  fi
}
mark_generated() { # mark_generated NAME SUMMARY_FILE
  if [ "$engine" = postgres ]; then
    psql -q "$SWITCHBOARD_TEST_POSTGRES" -c "COMMENT ON SCHEMA $(schema "$1") IS '$(cat "$2")'" >/dev/null
  else
    local db; [ "$1" = year ] && db=$year || db=$month
    cp "$2" "${db#sqlite://}.done"
  fi
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
year=$(dsn year)
month=$(dsn month)
echo "generating $calls calls over 365 days ($engine)…"
# fresh NAME: empties a database that an interrupted generation left.
fresh() {
  if [ "$engine" = postgres ]; then
    psql -q "$SWITCHBOARD_TEST_POSTGRES" -c "DROP SCHEMA $(schema "$1") CASCADE; CREATE SCHEMA $(schema "$1")" 2>/dev/null
  else
    local db; [ "$1" = year ] && db=$year || db=$month
    rm -f "${db#sqlite://}" "${db#sqlite://}-wal" "${db#sqlite://}-shm"
  fi
}
if generated year; then echo "year database: reused"; else
  fresh year
  "$work/callgen" -db "$year" -calls "$calls" -end "$end" -days 365 | tee "$work/gen-year.json"
  mark_generated year "$work/gen-year.json"
fi
if generated month; then echo "month-only database: reused"; else
  fresh month
  "$work/callgen" -db "$month" -calls "$calls" -end "$end" -days 365 -only-from "$month_from" -only-to "$end" | tee "$work/gen-month.json"
  mark_generated month "$work/gen-month.json"
fi

window="\"start\":$from_unix,\"end\":$end_unix"
bodies=(
  "first page|{$window,\"limit\":50}"
  "status+direction|{$window,\"limit\":50,\"direction\":\"inbound\",\"filters\":{\"statuses\":[\"answered\"]}}"
  "offset 100000|{$window,\"limit\":50,\"offset\":100000}"
)
for db in year month; do
  [ $db = year ] && target=$year || target=$month
  key=$("$work/switchboard" --db "$target" key create --account 1 --name bench --scopes reports:read --json | json_field key)
  start_server "$work/switchboard" "$target" "$work/serve-$db.log"
  for b in "${bodies[@]}"; do
    label=${b%%|*}; body=${b#*|}
    total=$(curl -s -H "Authorization: Bearer $key" -d "$body" "http://$addr/api/public/v1/calls/search" | sed 's/.*"total":\([0-9]*\).*/\1/')
    bytes=$(curl -s -H "Authorization: Bearer $key" -d "$body" "http://$addr/api/public/v1/calls/search" | wc -c)
    echo "== $db database: $label (total $total, $bytes bytes)"
    if [ -n "${CALLS_PPROF:-}" ] && [ -n "$maddr" ]; then
      # loadgen measures the ceiling first (warmup 1 s, then dur), then this.
      secs=${dur%s}
      (sleep $((secs + 3)); curl -s -o "$CALLS_PPROF/$engine-$db-${label// /_}.pprof" \
        "http://$maddr/debug/pprof/profile?seconds=$((secs - 2))") &
    fi
    "$work/loadgen" -url "http://$addr/api/public/v1/calls/search" -method POST -body "$body" \
      -H "Authorization: Bearer $key" -H "Content-Type: application/json" -expect 200 \
      -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -label "$engine $db: $label" -json | tee -a "$work/results.jsonl"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done
cleanup_pg year; cleanup_pg month
echo "results (JSON lines) above; summary:"
python3 - "$work/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
print(f"{'run':45} {'req/s':>8} {'ceiling':>8} {'ratio':>6} {'p50 ms':>7} {'p99 ms':>7}")
for r in rows:
    t, c = r["target"], r["ceiling"]
    by[r["label"]] = t["requests_per_sec"]
    print(f"{r['label']:45} {t['requests_per_sec']:8.0f} {c['requests_per_sec']:8.0f} {r['ratio_rps']:6.3f} {t['p50_ms']:7.2f} {t['p99_ms']:7.2f}")
for label in list(by):
    if " year: " in label:
        m = label.replace(" year: ", " month: ")
        if m in by:
            print(f"{label}: year/month-only = {by[label] / by[m]:.2f}")
eng = rows[0]["label"].split()[0]
fp, off = by.get(f"{eng} year: first page"), by.get(f"{eng} year: offset 100000")
if fp and off:
    print(f"offset 100000 cost vs first page (year): {fp / off:.2f}x")
PY
