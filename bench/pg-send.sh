#!/usr/bin/env bash
# POST /sms/messages (one recipient, sim carrier) on PostgreSQL at 64 clients,
# beside PostgreSQL's own ceiling (pgbench -N and -S, same client count) and
# loadgen's trivial-handler ceiling, all in one run, ROUNDS times interleaved
# (the machine is noisy: compare medians). First, a counting pass through
# bench/pgcount gives the round trips, statements and commits per send.
#   bash bench/pg-send.sh [duration] [rounds] [concurrency]
# With SWITCHBOARD_BEFORE=<binary> (e.g. built from an earlier commit), that
# build is measured too, in the same rounds, each build on a database of its
# own. Uses the PostgreSQL server of $SWITCHBOARD_TEST_POSTGRES (host, port,
# user) with databases of its own: pgbench_sb (pgbench -i, scale 10, kept) and
# fresh sb_pgsend_PID_* (dropped on exit). SERVE_FLAGS go to the servers;
# PGCOUNT_QUERIES=1 lists the statements per send. RECIPIENTS=one (default):
# every send to one recipient, so every send updates one conversation row;
# RECIPIENTS=spread: each loadgen client to a recipient of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
rounds=${2:-3}
conc=${3:-64}
secs=${dur%s}
: "${SWITCHBOARD_TEST_POSTGRES:?set it to the PostgreSQL server to use}"
base=${SWITCHBOARD_TEST_POSTGRES%%\?*}
base=${base%/*}                                  # postgres://user@host:port
hostport=${base##*@}
export PGHOST=${hostport%:*} PGPORT=${hostport##*:} PGUSER=${base#*://}
PGUSER=${PGUSER%@*}
dsn() { echo "postgres://$PGUSER@$1/$2?sslmode=disable"; } # dsn HOST:PORT DATABASE

source bench/lib.sh
bench_setup
case ${RECIPIENTS:=one} in
  spread) body=$send_body_spread ;;
  one) body=$send_body ;;
  *) echo "RECIPIENTS=$RECIPIENTS: want spread or one" >&2; exit 2 ;;
esac
pids=() dbs=()
trap 'set +e; for p in "${pids[@]}" $pid; do kill "$p" 2>/dev/null; done; wait 2>/dev/null
  grep -s -m3 "level=ERROR" "$work"/serve-*.log; for d in "${dbs[@]}"; do dropdb --if-exists "$d"; done; rm -rf "$work"' EXIT INT TERM
build switchboard loadgen pgcount
builds=(after)
cp "$work/switchboard" "$work/switchboard-after"
if [ -n "${SWITCHBOARD_BEFORE:-}" ]; then
  builds=(before after)
  cp "$SWITCHBOARD_BEFORE" "$work/switchboard-before"
fi
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "postgres: $(psql -Atc 'SHOW server_version') synchronous_commit=$(psql -Atc 'SHOW synchronous_commit'); recipients: $RECIPIENTS"
createdb pgbench_sb 2>/dev/null || true
pgbench -i -s 10 -q pgbench_sb >/dev/null 2>&1

# tps MODE: pgbench MODE's transactions per second (retried: other clients of
# the same server can take the connections it needs for a moment).
tps() {
  local try
  for try in $(seq 1 12); do
    if pgbench "$1" -c "$conc" -j 2 -T "$secs" pgbench_sb >"$work/pgbench.out" 2>&1; then
      sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench.out"
      sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$work/pgbench.out" >"$work/pgbench$1.latency"
      return
    fi
    echo "pgbench $1 failed (try $try): $(grep -m1 -i error "$work/pgbench.out")" >&2
    sleep 5
  done
  return 1
}

# commits BUILD: the build's group commits so far (its /metrics), or -1.
commits() {
  curl -sf "${metrics[$1]}" | awk '/^switchboard_store_commits_total /{printf "%d", $2; f=1} END{if (!f) print -1}'
}

# The counting pass, per build: 2,000 sends through the proxy after one to
# warm up, and their delivery receipts.
n=2000
declare -A keys addrs metrics
for b in "${builds[@]}"; do
  db=sb_pgsend_$$_$b
  createdb "$db"
  dbs+=("$db")
  provision_send "$work/switchboard-$b" "$(dsn "$hostport" "$db")"
  keys[$b]=$key
  rm -f "$work/proxy.addr" "$work/proxy.ctl"
  "$work/pgcount" -upstream "$hostport" -addr-file "$work/proxy.addr" -ctl-file "$work/proxy.ctl" &
  proxy=$!
  for _ in $(seq 1 50); do [ -s "$work/proxy.ctl" ] && break; sleep 0.1; done
  ctl=http://$(cat "$work/proxy.ctl")
  start_server "$work/switchboard-$b" "$(dsn "$(cat "$work/proxy.addr")" "$db")" "$work/serve-$b.log" ${SERVE_FLAGS:-}
  curl -sf -o /dev/null -H "Authorization: Bearer $key" -d "$send_body" "http://$addr/api/public/v1/sms/messages"
  c0=$(curl -s "$ctl/") q0=$(curl -s "$ctl/queries")
  x0=$(psql -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'")
  "$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$body" -expect 201 \
    -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c "$conc" -n "$n" -warmup 0 -ceiling=false >/dev/null
  # The sim carrier's receipts come 2 s later: their writes are the send's too.
  for _ in $(seq 1 150); do
    [ "$(psql -Atc "SELECT count(*) FROM messages WHERE delivery_status IS NULL" "$db")" = 0 ] && break
    sleep 0.1
  done
  c1=$(curl -s "$ctl/") q1=$(curl -s "$ctl/queries")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  kill "$proxy"; wait "$proxy" 2>/dev/null || true
  sleep 1 # backends report their counters as they exit
  x1=$(psql -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'")
  python3 - "$b" "$n" "$c0" "$c1" "$x0" "$x1" "$q0" "$q1" "${PGCOUNT_QUERIES:-}" <<'EOF'
import json, sys
b, n, a, z, x0, x1, q0, q1, list_ = sys.argv[1], int(sys.argv[2]), *map(json.loads, sys.argv[3:5]), int(sys.argv[5]), int(sys.argv[6]), *map(json.loads, sys.argv[7:9]), sys.argv[9]
d = {k: (z[k] - a[k]) / n for k in a}
print(f"{b}: per send ({n} sends): {d['round_trips']:.2f} round trips, {d['statements']:.2f} statements, "
      f"{d['commits']:.2f} COMMITs, {(x1 - x0) / n:.2f} transactions (pg_stat_database, reads included)")
if list_:
    for q, c in sorted(q1.items(), key=lambda kv: -(kv[1] - q0.get(kv[0], 0))):
        if c - q0.get(q, 0) > n / 100:
            print(f"  {(c - q0.get(q, 0)) / n:5.2f}  {' '.join(q.split())[:150]}")
EOF
done
[ "$rounds" = 0 ] && exit 0

# The throughput pass, straight to PostgreSQL: both servers up, measured in
# turn between pgbench -N and -S.
for b in "${builds[@]}"; do
  start_server "$work/switchboard-$b" "$(dsn "$hostport" "sb_pgsend_$$_$b")" "$work/serve-$b.log" ${SERVE_FLAGS:-}
  pids+=("$pid") addrs[$b]=$addr metrics[$b]=$(metrics_url)
  pid=
done
bytes=$(curl -s -H "Authorization: Bearer ${keys[after]}" -d "$send_body" "http://${addrs[after]}/api/public/v1/sms/messages" | wc -c)
for r in $(seq 1 "$rounds"); do
  n_tps=$(tps -N)
  n_lat=$(cat "$work/pgbench-N.latency")
  for b in "${builds[@]}"; do
    c0=$(commits "$b")
    "$work/loadgen" -url "http://${addrs[$b]}/api/public/v1/sms/messages" -method POST -body "$body" -expect 201 \
      -H "Authorization: Bearer ${keys[$b]}" -H "Content-Type: application/json" -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -json >"$work/send-$b.json"
    echo $(($(commits "$b") - c0)) >"$work/commits-$b"
  done
  s_tps=$(tps -S)
  for b in "${builds[@]}"; do
    python3 - "$work/send-$b.json" "$n_tps" "$s_tps" "$r" "$b" "$(cat "$work/commits-$b")" "$n_lat" <<'EOF' | tee -a "$work/rounds-$b"
import json, sys
j = json.load(open(sys.argv[1]))
t, c, n, s = j["target"], j["ceiling"], float(sys.argv[2]), float(sys.argv[3])
commits = int(sys.argv[6]) / max(t["requests"], 1) if sys.argv[6] != "-1" else float("nan")
print(f"round {sys.argv[4]} {sys.argv[5]}: sends {t['requests_per_sec']:.0f}/s p99 {t['p99_ms']:.1f} ms errors {t['errors']} | "
      f"ceiling {c['requests_per_sec']:.0f}/s p99 {c['p99_ms']:.1f} ms | pgbench -N {n:.0f} tps (latency average {sys.argv[7]} ms), -S {s:.0f} tps | sends/-N {t['requests_per_sec']/n:.2f} | "
      f"group commits/send {commits:.2f}")
EOF
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "${builds[@]}"; do
  python3 - "$work/rounds-$b" "$b" <<'EOF'
import re, statistics, sys
rows = list(open(sys.argv[1]))
col = lambda pat: statistics.median(float(re.search(pat, l).group(1)) for l in rows)
sends, p99, ceil, cp99, n, s, ratio, gc = (col(p) for p in (r'sends (\d+)/s', r'p99 ([0-9.]+) ms', r'ceiling (\d+)/s', r'ceiling \d+/s p99 ([0-9.]+) ms',
    r'-N (\d+) tps', r'-S (\d+) tps', r'sends/-N ([0-9.]+)', r'commits/send ([0-9.na]+)'))
nlat = col(r'latency average ([0-9.]+) ms')
print(f"{sys.argv[2]}: median of {len(rows)}: sends {sends:.0f}/s (p99 {p99:.0f} ms), ceiling {ceil:.0f}/s (p99 {cp99:.1f} ms), "
      f"pgbench -N {n:.0f} tps (latency average {nlat:.1f} ms), -S {s:.0f} tps, sends/-N {ratio:.2f}, group commits/send under load {gc:.2f}")
EOF
done
