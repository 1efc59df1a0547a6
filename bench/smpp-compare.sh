#!/usr/bin/env bash
# The SMPP benchmark of issue 34 in one run, every path bound to the same SMSC
# simulator (bench/smsc: answers submit_sm, sends a receipt for each):
#   (a) the simulator's own round trip: a bare ESME (package smpp's client) at
#       the same concurrency and window;
#   (b) Switchboard's POST /sms/messages from a line on an smpp carrier
#       connection bound directly to the simulator;
#   (c) the same POST through the server's --carrier kannel, to bearerbox +
#       smsbox whose smsc is smpp to the simulator (dlr-mask 31 and a
#       dlr-url back to Switchboard, as its Kannel driver asks);
#   (d) --throughput 100 on a direct connection: a backlog queued, then the
#       submits per second the simulator receives over 30 s.
# (b) and (c) count a message once its receipt is stored: the load runs for
# the duration, then the script waits until every message has its receipt
# before it reads the CPU the processes used (/proc/PID/stat).
#   bash bench/smpp-compare.sh [duration] [concurrency]
# WINDOW (default 10: Switchboard's default) is the unanswered submit_sm per
# bind on every path (Kannel's max-pending-submits); RECEIPT_DELAY (default
# 5ms) is the simulator's delay from submit_sm_resp to the receipt;
# RECEIPTS=0 makes it send none (and nothing waits for them): what the
# receipts cost each path.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
window=${WINDOW:-10}
receipt_delay=${RECEIPT_DELAY:-5ms}
receipts=${RECEIPTS:-1}
source bench/lib.sh
bench_setup
procs=() # the simulator and Kannel's boxes, stopped on exit with the server
# The server first, so that its binds do not see the simulator go.
trap 'set +e; [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"; for p in "${procs[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null
  grep -s -m3 "level=ERROR" "$work"/serve-*.log; rm -rf "$work"' EXIT INT TERM
[ -x /usr/sbin/bearerbox ] && [ -x /usr/sbin/smsbox ] || { echo "Kannel is not installed (apt-get install kannel, or .ci/install-deps)"; exit 1; }
build switchboard loadgen smsc
sb=$work/switchboard
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
hz=$(getconf CLK_TCK)
cpu() { local t=0 p; for p; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
# wait_for WHAT CMD…: runs CMD every 0.1 s until it succeeds, for 30 s at most.
wait_for() {
  local what=$1 i
  shift
  for i in $(seq 1 300); do "$@" && return 0; sleep 0.1; done
  echo "timed out waiting for $what"
  exit 1
}

"$work/smsc" serve -receipt-delay "$receipt_delay" -receipts="$([ "$receipts" = 1 ] && echo true || echo false)" >"$work/smsc.log" 2>&1 &
procs+=($!)
wait_for "the simulator" grep -qs '^listening' "$work/smsc.log"
smsc=$(awk '/^listening/ {print $2; exit}' "$work/smsc.log")
# The simulator's latest totals: elapsed submits receipts refused binds.
smsc_totals() { awk '$1 == "tick" {l = $2 " " $3 " " $4 " " $5 " " $6} END {print l}' "$work/smsc.log"; }
binds() { smsc_totals | awk '{print $5 + 0}'; }
# new_binds N: whether N binds came since $b0 was taken.
new_binds() { [ $(( $(binds) - b0 )) -ge "$1" ]; }

echo "== (a) the simulator's own round trip (package smpp's client, c=$conc, window $window)"
"$work/smsc" rtt -addr "$smsc" -c "$conc" -window "$window" -d "$dur" | tee "$work/rtt"

# measure NAME LABEL DB PIDS…: drives POST /sms/messages from 14155550100
# for the duration, waits until every message has its receipt, and prints
# sends/s, latency and the CPU PIDS used per message (its send and its
# receipts, the load's warm-up included as in bench/send.sh).
measure() {
  local name=$1 label=$2 db=$3 c0 n0 n
  shift 3
  count() { sqlite3 "$db" "SELECT count(*) || ' ' || coalesce(sum(delivery_status IN ('DELIVRD', 'delivered')), 0) FROM messages"; }
  settled() { count | awk '{exit !($1 == $2)}'; }
  c0=$(cpu "$@")
  n0=$(count | awk '{print $1}')
  "$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "$send_body_spread" -expect 201 \
    -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c "$conc" -d "$dur" -ceiling=false -json >"$work/$name.json"
  [ "$receipts" = 1 ] && wait_for "every receipt" settled
  n=$(( $(count | awk '{print $1}') - n0 ))
  python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["target"]; print(t["requests_per_sec"], t["p50_ms"], t["p99_ms"], t["errors"])' \
    "$work/$name.json" | awk -v label="$label" -v n="$n" -v t="$(( $(cpu "$@") - c0 ))" -v hz="$hz" -v r="$receipts" -v refused="$(smsc_totals | awk '{print $4}')" '{
    printf "%s: %.0f sends/s, p50 %.2f ms, p99 %.2f ms, %d errors; %d messages%s; CPU %.0f us per message (simulator: %d receipts refused and sent again so far)\n",
      label, $1, $2, $3, $4, n, r ? ", each with its receipt" : " (no receipts)", 1e6 * t / hz / n, refused }' | tee "$work/$name"
}

echo "== (b) Switchboard, a line on an smpp connection to the simulator"
db=$work/direct.db
provision_send "$sb" "$db"
"$sb" --db "$db" carrier add direct --kind smpp --address "$smsc" --system-id switchboard --password secret --window "$window" >/dev/null
"$sb" --db "$db" line set --account "$acct" --number 14155550100 --carrier direct >/dev/null
# (d)'s connection, bound from the start so that nothing changes mid-run.
"$sb" --db "$db" carrier add paced --kind smpp --address "$smsc" --system-id paced --password secret --window "$window" --throughput 100 >/dev/null
"$sb" --db "$db" line create --account "$acct" --number 14155550101 --carrier paced >/dev/null
b0=$(binds)
start_server "$sb" "$db" "$work/serve-direct.log" --media "file://$work/media"
wait_for "both binds" new_binds 2
measure direct "direct SMPP" "$db" "$pid"

echo "== (d) --throughput 100 on a direct connection, 30 s at the simulator"
# A backlog of 40 s at 100 a second, posted at full speed (answered 202 as
# they queue), then the simulator's ticks from the first whole second of
# submits on: 30 intervals, their mean rate and the worst second.
base=$(smsc_totals | awk '{print $2}')
"$work/loadgen" -url "http://$addr/api/public/v1/sms/messages" -method POST -body "${send_body/14155550100/14155550101}" \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" -c "$conc" -n 4000 -warmup 0s -ceiling=false -json >"$work/paced.json"
ticks_after() { awk -v b="$base" '$1 == "tick" && $3 > b {n++} END {print n + 0}' "$work/smsc.log"; }
first_tick() { [ "$(ticks_after)" -ge 1 ]; }
wait_for "a first submit" first_tick
for _ in $(seq 1 40); do [ "$(ticks_after)" -ge 32 ] && break; sleep 1; done
awk -v b="$base" '$1 == "tick" && $3 > b { t[++n] = $2; s[n] = $3 } END {
    if (n < 32) { print "throughput: too few ticks (" n ")"; exit 1 }
    # t[1] ends the first (partial) second; t[2] to t[32] are 30 whole ones.
    rate = (s[32] - s[2]) / (t[32] - t[2]); lo = 1e9; hi = 0
    for (i = 3; i <= 32; i++) { r = (s[i] - s[i-1]) / (t[i] - t[i-1]); lo = r < lo ? r : lo; hi = r > hi ? r : hi }
    printf "throughput 100: %.2f submits/s over %.1f s (%+.2f%%), seconds from %.1f to %.1f; backlog left %s\n",
      rate, t[32] - t[2], 100 * (rate - 100) / 100, lo, hi, (s[32] - b < 4000 ? "yes" : "NO: ran dry") }' "$work/smsc.log" | tee "$work/paced"
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=

echo "== (c) Switchboard --carrier kannel, bearerbox smsc = smpp to the simulator"
kdir=$work/kannel-stack
mkdir -p "$kdir"
admin=$(free_port) boxport=$(free_port) sendport=$(free_port)
kpass=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
ksecret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
host=${smsc%:*} port=${smsc##*:}
# Warnings only (Kannel's debug log costs it throughput), dlr-storage for the
# receipts, transceiver mode (one bind, as Switchboard's), the same window;
# Kannel 1.4.5 does not start without a system-type.
cat >"$kdir/kannel.conf" <<EOF
group = core
admin-port = $admin
admin-interface = 127.0.0.1
admin-password = "$kpass"
admin-allow-ip = "127.0.0.1"
smsbox-port = $boxport
smsbox-interface = 127.0.0.1
box-allow-ip = "127.0.0.1"
log-file = "$kdir/bearerbox.log"
log-level = 2
dlr-storage = internal

group = smsc
smsc = smpp
smsc-id = sim
host = $host
port = $port
transceiver-mode = true
smsc-username = kannel
smsc-password = secret
system-type = "VMA"
max-pending-submits = $window
reconnect-delay = 1

group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = $boxport
sendsms-port = $sendport
sendsms-interface = 127.0.0.1
log-file = "$kdir/smsbox.log"
log-level = 2
http-request-retry = 5
http-queue-delay = 1

group = sendsms-user
username = switchboard
password = "$kpass"
max-messages = 255
concatenation = true
EOF
b0=$(binds)
/usr/sbin/bearerbox -v 2 "$kdir/kannel.conf" >"$kdir/bearerbox.out" 2>&1 &
bbpid=$!
procs+=($bbpid)
wait_for "bearerbox's bind" new_binds 1
/usr/sbin/smsbox -v 2 "$kdir/kannel.conf" >"$kdir/smsbox.out" 2>&1 &
sbxpid=$!
procs+=($sbxpid)
wait_for "smsbox" curl -s -o /dev/null "http://127.0.0.1:$sendport/"
db=$work/kannel.db
provision_send "$sb" "$db"
start_server "$sb" "$db" "$work/serve-kannel.log" --media "file://$work/media" --carrier kannel \
  --kannel-send-url "http://127.0.0.1:$sendport/cgi-bin/sendsms" --kannel-user switchboard --kannel-password "$kpass" --kannel-secret "$ksecret"
k0=$(cpu "$bbpid" "$sbxpid")
measure kannel "Kannel path (Switchboard only)" "$db" "$pid"
# Kannel's own CPU over the same measurement (the database started empty, so
# its messages are the measurement's).
awk -v t="$(( $(cpu "$bbpid" "$sbxpid") - k0 ))" -v hz="$hz" -v n="$(sqlite3 "$db" "SELECT count(*) FROM messages")" \
  'BEGIN { printf "Kannel (bearerbox + smsbox): CPU %.0f us per message\n", 1e6 * t / hz / n }' | tee "$work/kannel-cpu"

echo "== ratios (goals: direct SMPP at least 1.5x the Kannel path; p99 at most 2x the simulator's own; 100/s within 2% over 30 s)"
field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" "$work/$2"; }
sends() { sed -n 's/.*: \([0-9.]*\) sends\/s.*/\1/p' "$work/$1"; }
awk -v d="$(sends direct)" -v k="$(sends kannel)" -v dp="$(field 'p99' direct | head -1)" -v kp="$(field 'p99' kannel | head -1)" \
  -v rp="$(field 'p99' rtt)" -v dc="$(field 'CPU' direct)" -v kc="$(field 'CPU' kannel)" -v kk="$(field 'CPU' kannel-cpu)" 'BEGIN {
  printf "direct %.0f sends/s = %.2fx the Kannel path (%.0f sends/s)\n", d, d / k, k
  printf "p99: direct %.2f ms = %.2fx the simulator'"'"'s %.2f ms; Kannel path %.2f ms = %.2fx\n", dp, dp / rp, rp, kp, kp / rp
  printf "CPU per message: direct %.0f us; Kannel path %.0f us in Switchboard + %.0f us in Kannel = %.0f us (%.2fx direct)\n", dc, kc, kk, kc + kk, (kc + kk) / dc }'
cat "$work/paced"
