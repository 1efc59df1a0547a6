#!/usr/bin/env bash
# The issue's send benchmark in one run: the disk's raw single-row commit rate,
# Kannel's own sendsms to its fake SMSC (with and without delivery reports), and
# Switchboard's POST /sms/messages beside loadgen's trivial-handler ceiling.
#   bash bench/send-compare.sh [duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
echo "== raw single-row commit rate"
go run ./bench/commitrate -d 5s
echo "== Kannel sendsms -> fakesmsc (no DLR)"
go run ./bench/kannel -c "$conc" -d "$dur"
echo "== Kannel sendsms -> fakesmsc (dlr-mask 31, as Switchboard's driver asks)"
go run ./bench/kannel -c "$conc" -d "$dur" -dlr
echo "== Switchboard POST /sms/messages (sim carrier, SQLite synchronous=FULL)"
bash bench/send.sh "$dur" "$conc"
