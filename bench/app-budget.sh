#!/usr/bin/env bash
# The app's budgets (issue 25), in headless Chromium at 1280 px, on a copy of
# the inbox benchmark database (1,000,000 messages, 50,000 conversations):
#   bash bench/app-budget.sh [runs]
# 1. the conversation list on screen after the app opens, signed in (target 1 s)
# 2. the 10,000-message thread's newest message on screen after opening it (1 s)
# 3. a text sent through the API, in the open list (1 s)
# The database is the one bench/inbox.sh generates ($INBOX_DB, default
# /tmp/switchboard-inbox-bench.db, with its description beside it); run that
# script once first. The copy takes the live texts, the original stays as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
src=${INBOX_DB:-/tmp/switchboard-inbox-bench.db}
desc=$src.json
[ -s "$desc" ] && [ -f "$src" ] || { echo "no $src and $desc: run bash bench/inbox.sh once (it generates them)"; exit 1; }
source bench/lib.sh
bench_setup
build switchboard appbudget
field() { python3 -c "import json,sys; print(json.load(open('$desc'))['$1'])"; }
db=$work/inbox.db
sqlite3 "$src" ".backup '$db'" 2>/dev/null || cp "$src" "$db"
acct=$(field accountId)
# The generator sets no prices; the live texts need one.
"$work/switchboard" --db "$db" rate set --account "$acct" --prefix 1 --sms 0.0079 --mms 0.02 >/dev/null
start_server "$work/switchboard" "$db" "$work/serve.log"
echo "== app budgets ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)), $runs runs each"
"$work/appbudget" -url "http://$addr" -key "$(field key)" -line "$(field line)" -big "$(field big)" \
  -username "$(field username)" -runs "$runs"
