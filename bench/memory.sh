#!/usr/bin/env bash
# The server's memory around a burst of maximal sends: resident set size
# (VmRSS) before, at its peak during, and 60 s after 200 concurrent sends of
# ten 5 MB attachments each (go run ./bench/burst).
#
#   bash bench/memory.sh [BINARY]   (default: builds ./cmd/switchboard)
#
# To compare with another version, build its binary and pass it.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
bin=${1:-}
if [ -z "$bin" ]; then
  go build -o "$tmp/switchboard" ./cmd/switchboard
  bin=$tmp/switchboard
fi
go build -o "$tmp/burst" ./bench/burst
db=$tmp/bench.db
provision_send "$bin" "$db"
start_server "$bin" "$db" "$tmp/server.log" --media "file://$tmp/media" --sim receipt-delay=1h
rss() { awk '/^VmRSS:/ {print int($2/1024)}' /proc/$pid/status; }
before=$(rss)
peak=$before
"$tmp/burst" -url "http://$addr" -key "$key" -n "${N:-200}" &
burst=$!
while kill -0 $burst 2>/dev/null; do
  r=$(rss); [ "$r" -gt "$peak" ] && peak=$r
  sleep 0.5
done
wait $burst || true
end=$(rss)
sleep 60
after=$(rss)
echo "RSS MiB: before $before, peak $peak, at the burst's end $end, 60 s later $after"
