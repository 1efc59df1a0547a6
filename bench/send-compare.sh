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
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== raw single-row commit rate"
go run ./bench/commitrate -d 5s | tee "$out/commit"
echo "== Kannel sendsms -> fakesmsc (no DLR)"
go run ./bench/kannel -c "$conc" -d "$dur" | tee "$out/kannel"
echo "== Kannel sendsms -> fakesmsc (dlr-mask 31, as Switchboard's driver asks)"
go run ./bench/kannel -c "$conc" -d "$dur" -dlr | tee "$out/kannel-dlr"
echo "== Switchboard POST /sms/messages (sim carrier, SQLite synchronous=FULL)"
bash bench/send.sh "$dur" "$conc" | tee "$out/send"

# The figures, by the words each tool prints next to them.
commits=$(sed -n 's/.* = \([0-9.]*\) commits\/s.*/\1/p' "$out/commit")
kannel=$(sed -n 's/.*: \([0-9.]*\) sends\/s.*/\1/p' "$out/kannel")
kannel_dlr=$(sed -n 's/.*: \([0-9.]*\) sends\/s.*/\1/p' "$out/kannel-dlr")
sends=$(awk '$1 == "target" {print $5}' "$out/send")
echo "== ratios (targets: 1.5x Kannel, 3x the raw commit rate)"
awk -v s="$sends" -v k="$kannel" -v kd="$kannel_dlr" -v c="$commits" 'BEGIN {
  printf "Switchboard %.0f sends/s: %.2fx Kannel with delivery reports, %.2fx Kannel without, %.2fx the raw commit rate\n", s, s/kd, s/k, s/c }'
