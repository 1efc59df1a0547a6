#!/usr/bin/env bash
# What the issue's send targets (2x Kannel with delivery reports, 1.2x without)
# ask of this machine: Kannel's own figures before and after, and between
# them the product against the same code built without the work the inbox and
# webhooks added to a send (-tags benchnolead,benchnoevents: no conversation
# lead or users' rows moved, no outbox event, so no webhook fan-out and
# nothing for the stream to read), alternately under the same load
# (bench/ab.sh send). If the build without that work cannot reach a target
# either, the target is beyond what removing it could give on this machine.
#   bash bench/send-ceiling.sh [rounds] [duration] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
dur=${2:-10s}
conc=${3:-64}
source bench/lib.sh
bench_setup
go build -o "$work/full" ./cmd/switchboard
go build -tags benchnolead,benchnoevents -o "$work/bare" ./cmd/switchboard
kannel() { # LABEL FLAGS…
  echo "== Kannel sendsms -> fakesmsc ($1)"
  shift
  go run ./bench/kannel -c "$conc" -d "$dur" "$@" | tee -a "$work/kannel"
}
kannel "no DLR, before"
kannel "dlr-mask 31, before" -dlr
echo "== alternating: old = the product, new = without the inbox's lead and the events (benchnolead,benchnoevents)"
bash bench/ab.sh send "$work/full" "$work/bare" "$rounds" "$dur" | tee "$work/ab"
kannel "no DLR, after"
kannel "dlr-mask 31, after" -dlr
# Kannel's runs in the order above: no DLR, DLR, no DLR, DLR.
awk '
  FILENAME ~ /kannel$/ && / sends\/s/ { for (i = 1; i <= NF; i++) if ($i == "sends/s") k[++nk] = $(i-1) }
  FILENAME ~ /ab$/ && $1 == "old" { full[++nf] = $6 } FILENAME ~ /ab$/ && $1 == "new" { bare[++nb] = $6 }
  function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
  END {
    plain = (k[1] + k[3]) / 2; dlr = (k[2] + k[4]) / 2; f = median(full, nf); b = median(bare, nb)
    printf "== Kannel (mean of before and after): %.0f sends/s without delivery reports, %.0f with\n", plain, dlr
    printf "== median sends/s: the product %.0f (%.2fx Kannel with reports, %.2fx without); without the lead and events %.0f (%.2fx, %.2fx); targets 2x and 1.2x\n", f, f/dlr, f/plain, b, b/dlr, b/plain
  }' "$work/kannel" "$work/ab"
