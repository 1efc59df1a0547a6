# Shared by the bench scripts (source it from the repository root): a work
# directory cleaned up on exit, building the tools, provisioning through the
# CLI, starting a server on a free loopback port, the disk's commit rate.

# bench_setup: a fresh work directory in $work, removed on exit along with the
# server started by start_server (if still running), after showing the first
# errors its log ($work/serve.log) holds.
bench_setup() {
  work=$(mktemp -d)
  pid=
  trap 'set +e; [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; grep -s -m3 "level=ERROR" "$work/serve.log"; rm -rf "$work"' EXIT INT TERM
}

# build NAME…: builds each tool into $work/NAME: switchboard and loadgen from
# cmd/ (with BUILD_TAGS, e.g. benchnolead for a ceiling build), anything else
# from bench/.
build() {
  local n
  for n; do
    case $n in
      switchboard | loadgen) go build ${BUILD_TAGS:+-tags $BUILD_TAGS} -o "$work/$n" "./cmd/$n" ;;
      *) go build -o "$work/$n" "./bench/$n" ;;
    esac
  done
}

# commit_rate: the disk's raw single-row commit rate (WAL, synchronous=FULL),
# the baseline the send and refresh figures are stated against.
commit_rate() { go run ./bench/commitrate -d 5s; }

# json_field NAME: the value of "NAME" in the one-line JSON object on stdin.
json_field() { sed "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/"; }

# provision_users BIN DB: an account with 50 users and a users:read key.
# Sets acct and key.
provision_users() {
  local bin=$1 db=$2 i
  acct=$("$bin" --db "$db" account create --name "Bench Co" --json | json_field id)
  for i in $(seq 1 50); do
    "$bin" --db "$db" user create --account "$acct" --first "First$i" --last "Last$((i % 17))" --username "user$i" \
      --email "user$i@bench.example" --timezone America/Chicago --extension "$((100 + i))" --extensions "$((100 + i))" >/dev/null
  done
  key=$("$bin" --db "$db" key create --account "$acct" --name bench --scopes users:read --json | json_field key)
}

# provision_send BIN DB: an account with one line, a US rate card and an
# sms:send key. Sets acct and key.
provision_send() {
  local bin=$1 db=$2
  acct=$("$bin" --db "$db" account create --name "Bench Co" --json | json_field id)
  "$bin" --db "$db" line create --account "$acct" --number 14155550100 >/dev/null
  "$bin" --db "$db" rate set --account "$acct" --prefix 1 --sms 0.0079 --mms 0.02 >/dev/null
  key=$("$bin" --db "$db" key create --account "$acct" --name bench --scopes sms:send --json | json_field key)
}

# The one-recipient send every send benchmark posts.
send_body='{"from":"14155550100","to":["+1 (212) 555-0100"],"message":"Your appointment is tomorrow at 9:00. Reply STOP to opt out."}'
# The same with a recipient per loadgen client ({{client}}: 00 to 63 at -c 64),
# so that concurrent sends go to as many conversations instead of one.
send_body_spread='{"from":"14155550100","to":["+1 (212) 555-01{{client}}"],"message":"Your appointment is tomorrow at 9:00. Reply STOP to opt out."}'

# start_server BIN DB LOG [serve flags…]: serves on a free port with $SERVE_ENV
# in its environment and waits until it is ready. Sets addr and pid (the
# server's own pid, so that a trap can stop it), and maddr: the private
# listener's address for /metrics and /debug/pprof/ (empty for a binary from
# before --metrics-addr, which served /metrics on addr).
start_server() {
  local bin=$1 db=$2 log=$3
  shift 3
  free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
  addr=127.0.0.1:$(free_port)
  maddr=
  if "$bin" serve -h 2>&1 | grep -q -- -metrics-addr; then
    maddr=127.0.0.1:$(free_port)
    set -- --metrics-addr "$maddr" "$@"
  fi
  env ${SERVE_ENV:-} "$bin" --db "$db" serve --listen "$addr" "$@" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.1; done
  kill -0 "$pid" || { echo "server did not start:"; cat "$log"; exit 1; }
}

# metrics_url: where the running server's /metrics is.
metrics_url() { echo "http://${maddr:-$addr}/metrics"; }
