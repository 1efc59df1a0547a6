#!/usr/bin/env bash
# Issue 4 in one run, against one server on SQLite: GET /sms/lines (three lines)
# authenticated with an API key, then with an OAuth access token of a user whose
# role has numbers:all (the token's ratio to the key is the figure), then
# refresh-token grants with each of [concurrency] clients rotating its own
# grant, and the disk's raw single-row commit rate as the refresh baseline.
#   bash bench/oauth.sh [duration] [concurrency]
#   ROUNDS=3 bash bench/oauth.sh …   repeat key/token (alternating order), report medians
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conc=${2:-64}
source bench/lib.sh
bench_setup
build switchboard loadgen oauthtoken commitrate
sb() { "$work/switchboard" --db "$work/bench.db" "$@"; }
acct=$(sb account create --name "Bench Co" --json | json_field id)
sb role create --account "$acct" --name staff --permissions numbers:all,users:all >/dev/null
password="bench-password-$RANDOM$RANDOM"
sb user create --account "$acct" --first Bench --last User --username bench --password "$password" --role staff >/dev/null
for i in 0 1 2; do
  sb line create --account "$acct" --number "1415555010$i" --name "Line $i" >/dev/null
done
key=$(sb key create --account "$acct" --name bench --scopes sms:read --json | json_field key)
sb oauth allow-host app.example.test >/dev/null
start_server "$work/switchboard" "$work/bench.db" "$work/serve.log" ${SERVE_FLAGS:-}

oauth() { "$work/oauthtoken" -url "http://$addr" -username bench -password "$password" -redirect https://app.example.test/callback -scope sms:read "$@"; }
token=$(oauth | json_field access_token)
case $token in sbat_*) ;; *) echo "no access token: $token"; exit 1 ;; esac

fail=0
url=http://$addr/api/public/v1/sms/lines
kbody=$(curl -s -H "Authorization: Bearer $key" "$url")
tbody=$(curl -s -H "Authorization: Bearer $token" "$url")
[ "$kbody" = "$tbody" ] || { echo "key and token see different answers:"; echo "$kbody"; echo "$tbody"; exit 1; }
echo "GET /sms/lines response: ${#kbody} bytes, identical for key and token"
uptime

# ROUNDS>1 repeats the pair, alternating which goes first, and reports medians.
rounds=${ROUNDS:-1}
lg() { "$work/loadgen" -url "$url" -H "Authorization: Bearer $2" -c "$conc" -d "$dur" -ceiling=false \
  -label "GET /sms/lines, $1 (SQLite)" -json >"$work/$1.$3.json" || fail=1; }
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="key token"; else order="token key"; fi
  for which in $order; do
    echo "== round $r: GET /sms/lines with the $which"
    if [ "$which" = key ]; then lg key "$key" "$r"; else lg token "$token" "$r"; fi
  done
done
echo "== refresh_token grants, $conc clients each rotating its own grant"
oauth -refresh-bench -c "$conc" -d "$dur" -json >"$work/refresh.json" || fail=1
echo "== raw single-row commit rate (WAL, synchronous=FULL), the refresh baseline"
"$work/commitrate" -d 5s | tee "$work/commit.txt"
uptime

python3 - "$work" "$rounds" <<'EOF'
import json, re, sys
w = sys.argv[1]
rounds = int(sys.argv[2])
keys = [json.load(open(f"{w}/key.{r}.json"))["target"] for r in range(1, rounds + 1)]
toks = [json.load(open(f"{w}/token.{r}.json"))["target"] for r in range(1, rounds + 1)]
ref = json.load(open(f"{w}/refresh.json"))
m = re.search(r"([0-9.]+) commits/s", open(f"{w}/commit.txt").read())
commits = float(m.group(1)) if m else None
def med(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
def row(name, rs):
    rps = [r["requests_per_sec"] for r in rs]
    each = "" if len(rs) == 1 else "  (" + ", ".join(f"{x:.0f}" for x in rps) + ")"
    print(f"{name:<28} {med(rps):>9.0f} req/s  p50 {med([r['p50_ms'] for r in rs]):6.2f} ms  p99 {med([r['p99_ms'] for r in rs]):6.2f} ms"
          f"  errors {sum(r['errors'] for r in rs)}{each}")
print()
row("GET /sms/lines, API key", keys)
row("GET /sms/lines, token", toks)
print(f"{'refresh_token grants':<28} {ref['grants_per_second']:>9.0f} /s     p50 {ref['p50_ms']:6.2f} ms  p99 {ref['p99_ms']:6.2f} ms  errors {ref['errors']}"
      f"  ({ref['concurrency']} grants obtained through the flow in {ref['setup_seconds']:.1f}s)")
ratios = [t["requests_per_sec"] / k["requests_per_sec"] for k, t in zip(keys, toks)]
ratio = med(ratios)
if len(ratios) > 1:
    print("\nper-round token/key: " + ", ".join(f"{x:.3f}" for x in ratios))
print(f"\ntoken/key req/s{' (median)' if len(ratios) > 1 else ''}: {ratio:.3f} ({100*ratio:.1f}%)  target >= 90%: {'met' if ratio >= 0.9 else 'NOT met'}")
print(f"refresh grants/s: {ref['grants_per_second']:.0f}  target >= 2000: {'met' if ref['grants_per_second'] >= 2000 else 'NOT met'}")
if commits:
    print(f"refresh grants / raw single-row commits: {ref['grants_per_second']/commits:.2f}x ({commits:.0f} commits/s)")
if ref.get("first_error"):
    print("first refresh error:", ref["first_error"])
EOF
exit "$fail"
