#!/usr/bin/env bash
# POST /sms/messages (one recipient, sim carrier) on PostgreSQL at 64 clients,
# beside PostgreSQL's own ceiling (pgbench -N and -S, same client count) and
# loadgen's trivial-handler ceiling, all in one run, ROUNDS times interleaved
# (the machine is noisy: compare medians). First, a counting pass through
# bench/pgcount gives the round trips, statements and commits per send.
#   bash bench/pg-send.sh [duration] [rounds] [concurrency]
# Uses the PostgreSQL server of $SWITCHBOARD_TEST_POSTGRES (host, port, user)
# with two databases of its own: pgbench_sb (pgbench -i, scale 10, kept) and
# a fresh sb_pgsend_PID (dropped on exit). SERVE_FLAGS go to the server;
# SWITCHBOARD_BIN, when set, is the server binary to measure (e.g. one built
# from an earlier commit) instead of one built from this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
rounds=${2:-3}
conc=${3:-64}
: "${SWITCHBOARD_TEST_POSTGRES:?set it to the PostgreSQL server to use}"
base=${SWITCHBOARD_TEST_POSTGRES%%\?*}
base=${base%/*}                                  # postgres://user@host:port
hostport=${base##*@}
export PGHOST=${hostport%:*} PGPORT=${hostport##*:} PGUSER=${base#*://}
PGUSER=${PGUSER%@*}
db=sb_pgsend_$$
dsn() { echo "postgres://$PGUSER@$1/$db?sslmode=disable"; } # dsn HOST:PORT

source bench/lib.sh
bench_setup
trap 'set +e; [ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "${ppid_:-}" ] && kill "$ppid_" 2>/dev/null; wait 2>/dev/null;
  grep -s -m3 "level=ERROR" "$work/serve.log"; dropdb --if-exists "$db"; rm -rf "$work"' EXIT INT TERM
build switchboard loadgen pgcount
[ -n "${SWITCHBOARD_BIN:-}" ] && cp "$SWITCHBOARD_BIN" "$work/switchboard"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "postgres: $(psql -Atc 'SHOW server_version') synchronous_commit=$(psql -Atc 'SHOW synchronous_commit')"

createdb pgbench_sb 2>/dev/null || true
pgbench -i -s 10 -q pgbench_sb 2>&1 | tail -1
createdb "$db"
provision_send "$work/switchboard" "$(dsn "$hostport")"

# The counting pass: N sends through the proxy, after one to warm up.
xacts() { psql -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'"; }
"$work/pgcount" -upstream "$hostport" -addr-file "$work/proxy.addr" -ctl-file "$work/proxy.ctl" &
ppid_=$!
for _ in $(seq 1 50); do [ -s "$work/proxy.ctl" ] && break; sleep 0.1; done
start_server "$work/switchboard" "$(dsn "$(cat "$work/proxy.addr")")" "$work/serve.log" ${SERVE_FLAGS:-}
curl -sf -o /dev/null -H "Authorization: Bearer $key" -d "$send_body" "http://$addr/api/public/v1/sms/messages"
counts0=$(curl -s "http://$(cat "$work/proxy.ctl")/")
curl -s "http://$(cat "$work/proxy.ctl")/queries" >"$work/queries0"
x0=$(xacts)
n=2000
"$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$send_body" -expect 201 \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c "$conc" -n "$n" -warmup 0 -ceiling=false >/dev/null
counts1=$(curl -s "http://$(cat "$work/proxy.ctl")/")
curl -s "http://$(cat "$work/proxy.ctl")/queries" >"$work/queries1"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
kill "$ppid_"; wait "$ppid_" 2>/dev/null || true; ppid_=
sleep 1 # backends report their counters as they exit
x1=$(xacts)
python3 - "$counts0" "$counts1" "$n" "$x0" "$x1" <<'EOF'
import json, sys
a, b, n = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
d = {k: (b[k] - a[k]) / n for k in a}
print(f"per send ({n} sends): {d['round_trips']:.2f} round trips, "
      f"{d['statements']:.2f} statements, {d['commits']:.2f} COMMITs, "
      f"{(int(sys.argv[5]) - int(sys.argv[4])) / n:.2f} transactions (pg_stat_database, reads included)")
EOF
# Which statements, per send (PGCOUNT_QUERIES=1).
[ -n "${PGCOUNT_QUERIES:-}" ] && python3 - "$work/queries0" "$work/queries1" "$n" <<'EOF'
import json, sys
a, b, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
for q, c in sorted(b.items(), key=lambda kv: -(kv[1] - a.get(kv[0], 0))):
    if c - a.get(q, 0) > n / 100:
        print(f"  {(c - a.get(q, 0)) / n:5.2f}  {' '.join(q.split())[:150]}")
EOF

# The throughput pass, straight to PostgreSQL.
start_server "$work/switchboard" "$(dsn "$hostport")" "$work/serve.log" ${SERVE_FLAGS:-}
bytes=$(curl -s -H "Authorization: Bearer $key" -d "$send_body" "http://$addr/api/public/v1/sms/messages" | wc -c)
secs=${dur%s}
[ "$rounds" = 0 ] && exit 0
for r in $(seq 1 "$rounds"); do
  n_tps=$(pgbench -N -c "$conc" -j 2 -T "$secs" pgbench_sb 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  "$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$send_body" -expect 201 \
    -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c "$conc" -d "$dur" -ceiling-bytes "$bytes" -json >"$work/send.json"
  s_tps=$(pgbench -S -c "$conc" -j 2 -T "$secs" pgbench_sb 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  python3 - "$work/send.json" "$n_tps" "$s_tps" "$r" <<'EOF' | tee -a "$work/rounds"
import json, sys
j = json.load(open(sys.argv[1]))
t, c, n, s = j["target"], j["ceiling"], float(sys.argv[2]), float(sys.argv[3])
print(f"round {sys.argv[4]}: sends {t['requests_per_sec']:.0f}/s p99 {t['p99_ms']:.1f} ms errors {t['errors']} | "
      f"ceiling {c['requests_per_sec']:.0f}/s | pgbench -N {n:.0f} tps, -S {s:.0f} tps | sends/-N {t['requests_per_sec']/n:.2f}")
EOF
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rounds" <<'EOF'
import re, statistics, sys
rows = [l for l in open(sys.argv[1])]
col = lambda pat: statistics.median(float(re.search(pat, l).group(1)) for l in rows)
sends, ceil, n, s, ratio = (col(p) for p in (r'sends (\d+)/s', r'ceiling (\d+)/s', r'-N (\d+) tps', r'-S (\d+) tps', r'sends/-N ([0-9.]+)'))
print(f"median of {len(rows)}: sends {sends:.0f}/s, ceiling {ceil:.0f}/s, pgbench -N {n:.0f} tps, -S {s:.0f} tps, sends/-N {ratio:.2f}")
EOF
