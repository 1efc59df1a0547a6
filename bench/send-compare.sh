#!/usr/bin/env bash
# The issue's send benchmark in one run: the disk's raw single-row commit rate,
# Kannel's own sendsms to its fake SMSC (with and without delivery reports), and
# Switchboard's POST /sms/messages beside loadgen's trivial-handler ceiling,
# then the ratios the issue's targets are stated in.
#   bash bench/send-compare.sh [duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
source bench/lib.sh
bench_setup
echo "== raw single-row commit rate"
commit_rate | tee "$work/commit"
echo "== Kannel sendsms -> fakesmsc (no DLR)"
go run ./bench/kannel -c "$conc" -d "$dur" | tee "$work/kannel"
echo "== Kannel sendsms -> fakesmsc (dlr-mask 31, as Switchboard's driver asks)"
go run ./bench/kannel -c "$conc" -d "$dur" -dlr | tee "$work/kannel-dlr"
echo "== Switchboard POST /sms/messages (sim carrier, SQLite synchronous=FULL)"
bash bench/send.sh "$dur" "$conc" | tee "$work/send"

# The figures, by the words each tool prints next to them.
commits=$(sed -n 's/.* = \([0-9.]*\) commits\/s.*/\1/p' "$work/commit")
kannel=$(sed -n 's/.*: \([0-9.]*\) sends\/s.*/\1/p' "$work/kannel")
kannel_dlr=$(sed -n 's/.*: \([0-9.]*\) sends\/s.*/\1/p' "$work/kannel-dlr")
sends=$(awk '$1 == "target" {print $5}' "$work/send")
echo "== ratios (targets: 1.5x Kannel, 3x the raw commit rate)"
awk -v s="$sends" -v k="$kannel" -v kd="$kannel_dlr" -v c="$commits" 'BEGIN {
  printf "Switchboard %.0f sends/s: %.2fx Kannel with delivery reports, %.2fx Kannel without, %.2fx the raw commit rate\n", s, s/kd, s/k, s/c }'
