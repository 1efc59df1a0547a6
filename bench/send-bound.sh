#!/usr/bin/env bash
# What the issue's "3x the raw single-row commit rate" asks of this machine:
# the raw commit rate, then the real server (SQLite synchronous=FULL) and the
# same code built with the benchnosync tag (synchronous=OFF: no fsync at all,
# commits cost the disk nothing) alternately under the same load. The
# second figure is the ceiling that no way of grouping commits can pass; if it
# is under 3x the commit rate, the target is a question of CPU, not of disk.
#   bash bench/send-bound.sh [rounds] [duration]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
dur=${2:-10s}
source bench/lib.sh
bench_setup
go build -o "$work/full" ./cmd/switchboard
go build -tags benchnosync -o "$work/nosync" ./cmd/switchboard
echo "== raw single-row commit rate (before)"
commit_rate | tee "$work/commit"
echo "== alternating: old = synchronous=FULL (the product), new = synchronous=OFF (benchnosync build)"
bash bench/ab.sh send "$work/full" "$work/nosync" "$rounds" "$dur" | tee "$work/ab"
echo "== raw single-row commit rate (after)"
commit_rate | tee -a "$work/commit"
# Medians of each side and of the two commit-rate readings' mean.
awk '
  / commits\/s/ { for (i = 1; i <= NF; i++) if ($i == "commits/s") { c += $(i-1); nc++ } }
  $1 == "old" { full[++nf] = $6 } $1 == "new" { off[++no] = $6 }
  function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
  END {
    c /= nc; f = median(full, nf); o = median(off, no)
    printf "== median sends/s: FULL %.0f (%.2fx the raw commit rate %.0f/s), OFF %.0f (%.2fx); 3x would be %.0f\n", f, f/c, c, o, o/c, 3*c
  }' "$work/commit" "$work/ab"
