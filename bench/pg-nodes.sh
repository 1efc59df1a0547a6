#!/usr/bin/env bash
# Issue 16: do several nodes on one PostgreSQL database contend? POST
# /sms/messages (sim carrier) at 64 clients through the
# round-robin proxy of the e2e tests (bench/rrproxy), in front of one node and
# then of three nodes on the same database, alternating for several rounds in
# one run (the machine is noisy: compare medians). Both configurations pay the
# same proxy hop.
# On one machine the nodes share its cores, so the figure shows that nodes do
# not slow each other down, not that they add cores.
#   THREE_POOL=n  the three nodes' --db-pool (default: each node's default)
#   RECIPIENTS=spread (default): each client sends to a recipient of its own
#     (64 conversations); RECIPIENTS=one: every send to one recipient, so every
#     send updates one conversation row and the nodes queue for its lock.
#   APART=1 adds a third configuration, the bound of the comparison: three
#     nodes that share nothing in PostgreSQL but the server (each on its own
#     copy of the provisioned database, so the same key works on all three),
#     behind the same proxy. If three nodes on one database do as well as
#     three apart, what they lack against one node is the machine's (cores,
#     the server's WAL), not contention between them in the database.
#   bash bench/pg-nodes.sh [duration] [concurrency] [rounds]
#   PG=postgres://… (default $SWITCHBOARD_TEST_POSTGRES); a fresh schema is
#   used and dropped.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
rounds=${3:-3}
pg=${PG:-${SWITCHBOARD_TEST_POSTGRES:?set PG or SWITCHBOARD_TEST_POSTGRES}}
source bench/lib.sh
bench_setup
case ${RECIPIENTS:=spread} in
  spread) body=$send_body_spread ;;
  one) body=$send_body ;;
  *) echo "RECIPIENTS=$RECIPIENTS: want spread or one" >&2; exit 2 ;;
esac
build switchboard loadgen rrproxy
bin=$work/switchboard
schema=bench_$RANDOM$RANDOM
psql -q "$pg" -c "CREATE SCHEMA $schema"
pids=()
trap_prev=$(trap -p EXIT | sed "s/^trap -- '\(.*\)' EXIT$/\1/")
tmpl=
# drop_apart: the APART databases, once their nodes are stopped.
drop_apart() {
  [ -n "$tmpl" ] || return 0
  for d in "$tmpl" "${tmpl}_1" "${tmpl}_2" "${tmpl}_3"; do
    psql -q "$pg" -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1
  done
}
trap 'kill ${pids[@]:-} 2>/dev/null; psql -q "$pg" -c "DROP SCHEMA $schema CASCADE" >/dev/null 2>&1; drop_apart; '"$trap_prev" EXIT
case $pg in *\?*) db="$pg&search_path=$schema" ;; *) db="$pg?search_path=$schema" ;; esac
provision_send "$bin" "$db"

# The single node, and three more for the three-node runs, all serving
# throughout; THREE_POOL sets the three nodes' --db-pool (default 0: 4 per
# core each, so three times the single node's connections to PostgreSQL).
# Each node's connections are named (application_name sb_nodeN), so that
# pg_stat_activity can be sampled per node during a run.
start_server "$bin" "$db&application_name=sb_node0" "$work/serve0.log" --media "file://$work/media0" ${SERVE_FLAGS:-}
single=$addr single_pid=$pid
pids+=("$pid")
nodes=()
for i in 1 2 3; do
  start_server "$bin" "$db&application_name=sb_node$i" "$work/serve$i.log" --media "file://$work/media$i" --db-pool "${THREE_POOL:-0}" ${SERVE_FLAGS:-}
  nodes+=("$addr") node_pids+=("$pid")
  pids+=("$pid")
done
pid=
apart=()
if [ "${APART:-0}" = 1 ]; then
  # A database provisioned like the shared schema, then copied three times.
  dburl() { python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$pg" "$1"; }
  tmpl=bench_apart_$RANDOM$RANDOM
  psql -q "$pg" -c "CREATE DATABASE $tmpl"
  shared_key=$key
  provision_send "$bin" "$(dburl "$tmpl")"
  apart_key=$key key=$shared_key
  for i in 1 2 3; do
    psql -q "$pg" -c "CREATE DATABASE ${tmpl}_$i TEMPLATE $tmpl"
    start_server "$bin" "$(dburl "${tmpl}_$i")" "$work/apart$i.log" --media "file://$work/apart$i" --db-pool "${THREE_POOL:-0}" ${SERVE_FLAGS:-}
    apart+=("$addr") apart_pids+=("$pid")
    pids+=("$pid")
  done
  pid=
fi
# proxy TARGET…: starts rrproxy in front of the targets; sets paddr.
proxy() {
  "$work/rrproxy" "$@" >"$work/proxy.addr" &
  pids+=($!)
  proxy_pid=$!
  for _ in $(seq 1 50); do [ -s "$work/proxy.addr" ] && break; sleep 0.1; done
  paddr=$(cat "$work/proxy.addr")
}
# cpu PID…: CPU seconds the PIDs (the nodes) and every PostgreSQL process
# have used so far, as "nodes postgres".
cpu() {
  python3 - "$@" <<'PY'
import os, sys
tck = os.sysconf("SC_CLK_TCK")
def ticks(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    except OSError:
        return 0
pg = [p for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/stat") and open(f"/proc/{p}/stat").read().startswith(f"{p} (postgres")]
print(sum(ticks(p) for p in sys.argv[1:]) / tck, sum(ticks(p) for p in pg) / tck)
PY
}
# run LABEL KEY PID…: loadgen through the proxy at $paddr; prints and
# records requests/s, p99, and the CPU time a send cost the nodes (PIDs) and
# PostgreSQL.
run() {
  local label=$1 k=$2
  shift 2
  local c0 c1
  c0=$(cpu "$@")
  "$work/loadgen" -url "http://$paddr/api/public/v1/sms/messages" -method POST -body "$body" -expect 201 \
    -H "Authorization: Bearer $k" -H "Content-Type: application/json" \
    -c "$conc" -d "$dur" -ceiling=false -json -label "$label" >"$work/run.json"
  c1=$(cpu "$@")
  python3 - "$work/run.json" $c0 $c1 <<'PY' | tee -a "$work/results"
import json, sys
r = json.load(open(sys.argv[1])); t = r["target"]
n0, p0, n1, p1 = map(float, sys.argv[2:6])
sends = max(t["requests"], 1)
print("%s\t%.0f\t%.1f\t%d\t%.0f\t%.0f" % (r["label"], t["requests_per_sec"], t["p99_ms"], t["errors"], (n1 - n0) / sends * 1e6, (p1 - p0) / sends * 1e6))
PY
}
uptime
echo "three nodes' --db-pool: ${THREE_POOL:-0} (0: 4 per core); recipients: $RECIPIENTS"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); PostgreSQL $(psql -qtA "$pg" -c 'SHOW server_version')"
printf 'config\tsends/s\tp99 ms\terrors\tnodes µs/send\tpostgres µs/send\n'
for r in $(seq 1 "$rounds"); do
  proxy "$single"; run "one node" "$key" "$single_pid"; kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
  proxy "${nodes[@]}"; run "three nodes" "$key" "${node_pids[@]}"; kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
  if [ ${#apart[@]} -gt 0 ]; then
    proxy "${apart[@]}"; run "three apart" "$apart_key" "${apart_pids[@]}"; kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
  fi
done
uptime
python3 - "$work/results" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
med = {}
for cfg in ("one node", "three nodes", "three apart"):
    rps = [float(r[1]) for r in rows if r[0] == cfg]
    if not rps:
        continue
    p99 = [float(r[2]) for r in rows if r[0] == cfg]
    ncpu = statistics.median(float(r[4]) for r in rows if r[0] == cfg)
    pcpu = statistics.median(float(r[5]) for r in rows if r[0] == cfg)
    med[cfg] = statistics.median(rps)
    print(f"median {cfg}: {med[cfg]:.0f} sends/s, p99 {statistics.median(p99):.1f} ms ({len(rps)} runs: {', '.join(f'{x:.0f}' for x in rps)}); "
          f"CPU a send: nodes {ncpu:.0f} µs, PostgreSQL {pcpu:.0f} µs")
print(f"three nodes / one node: {med['three nodes'] / med['one node']:.2f}")
if "three apart" in med:
    print(f"three apart / one node: {med['three apart'] / med['one node']:.2f}; three nodes / three apart: {med['three nodes'] / med['three apart']:.2f}")
PY
charges=$("$bin" --db "$db" ledger list --account "$acct" --limit 1 --json | json_field count)
echo "ledger: $charges charges"
