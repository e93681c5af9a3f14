#!/usr/bin/env bash
# Hostile peers on evictd's HTTP port and control socket, loopback only and bounded in time:
# - a slowloris (50 connections sending a request header a byte a second, reconnecting when
#   dropped) plus a flood of 2,000 requests: /healthz must answer 200 within 1 s every 0.5 s
#   throughout, and the daemon must keep evaluating (evictd_evaluations_total grows);
# - 2,000 malformed requests: a handful of warning lines, not 2,000;
# - evictctl against a fake control socket answering {"ok":true} and other well-formed but
#   incomplete or mistyped replies: a table with placeholders or a one-line error, never a
#   crash;
# - a FIFO as --event-log: a one-line error and exit 1 at once, not a daemon hung in open().
# See doc/evictd.8 (METRICS ENDPOINT) and doc/evictctl.8.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
EVICTCTL=${EVICTCTL:-build/evictctl}

for bin in "$EVICTD" "$EVICTCTL"; do
	if [ ! -x "$bin" ]; then
		echo "not ok 1 - $bin is not built"
		echo "1..1"
		exit 1
	fi
done
command -v curl >/dev/null && command -v python3 >/dev/null ||
	{ echo "not ok 1 - curl and python3 are needed"; echo "1..1"; exit 1; }

tmp=$(mktemp -d /tmp/evictd-hostile-XXXXXX)
tpids=()
helpers=()
cleanup() {
	local p
	for p in "${helpers[@]}"; do kill -KILL "$p" 2>/dev/null; done
	cleanup_daemons
}
trap cleanup EXIT

# The peers, in one small python3 program (every socket has a timeout; every mode ends).
cat >"$tmp/peer.py" <<'EOF'
import socket, sys, threading, time

def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.settimeout(2)
    return s

def slow(port, n, seconds):
    """n connections sending a request header one byte a second, reconnecting when dropped."""
    header = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000
    conns, dropped, end, i = [], 0, time.time() + seconds, 0
    while time.time() < end:
        while len(conns) < n:
            try:
                conns.append(connect(port))
            except OSError:
                break
        for s in list(conns):
            try:
                s.send(header[i % len(header):i % len(header) + 1])
            except OSError:
                conns.remove(s)
                s.close()
                dropped += 1
        i += 1
        time.sleep(1)
    print("slow: %d open at the end, %d dropped by the server" % (len(conns), dropped))

def flood(port, n, parallel, payload, expect):
    """n requests over fresh connections, parallel at a time; counts the answers."""
    counts = {"answered": 0, "failed": 0}
    lock = threading.Lock()
    def worker(count):
        for _ in range(count):
            ok = False
            try:
                s = connect(port)
                s.sendall(payload)
                data = b""
                while len(data) < 12:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                ok = data.startswith(b"HTTP/1.") and data[9:12] == expect
                s.close()
            except OSError:
                pass
            with lock:
                counts["answered" if ok else "failed"] += 1
    threads = [threading.Thread(target=worker, args=(n // parallel,)) for _ in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("flood: %(answered)d answered, %(failed)d failed" % counts)

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "slow":
    slow(port, int(sys.argv[3]), float(sys.argv[4]))
elif mode == "flood":
    flood(port, int(sys.argv[3]), 8, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"200")
elif mode == "bad":
    flood(port, int(sys.argv[3]), 8, b"GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", b"400")
EOF

# between VALUE MIN MAX: an integer in [MIN, MAX].
between() { [ -n "$1" ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
metric() {
	curl -s -m 1 "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v n="$2" '$1 == n {print $2}'
}

# ---- the HTTP port ---------------------------------------------------------------------------
port=$(free_port)
sock="$tmp/evictd.sock"
start hostile "$EVICTD" -- --dry-run --no-bpf --oom-guard=off --housekeeping-interval=1s \
	--control-socket="$sock" --metrics-address="127.0.0.1:$port" --event-log=off
if ! wait_up "$sock" "$port"; then
	fail "evictd starts" "$(tail -5 "$tmp/hostile.err")"
	done_testing
	exit 1
fi
pass "evictd starts on 127.0.0.1:$port"

evaluations_before=$(metric "$port" evictd_evaluations_total)
python3 "$tmp/peer.py" slow "$port" 50 14 >"$tmp/slow.out" 2>&1 &
helpers+=($!); slow_pid=$!
sleep 2	# the slow connections are all open before the first sample
python3 "$tmp/peer.py" flood "$port" 2000 >"$tmp/flood.out" 2>&1 &
helpers+=($!); flood_pid=$!

failures=0 samples=0 worst=0 failed_at=""
for _ in $(seq 1 20); do
	t0=$(date +%s%N)
	samples=$((samples + 1))
	if healthz_ok "$port"; then
		ms=$(ms_since "$t0")
		[ "$ms" -gt "$worst" ] && worst=$ms
	else
		failures=$((failures + 1))
		failed_at+=" $samples:$hz"
	fi
	sleep 0.5
done
evaluations_after=$(metric "$port" evictd_evaluations_total)
check "/healthz answered 200 within 1 s in all $samples samples under 50 slow connections and a flood (slowest ${worst} ms)" \
	[ "$failures" -eq 0 ]
[ "$failures" -eq 0 ] || fail "healthz failures:$failed_at"
check "evaluations continued under load ($evaluations_before -> $evaluations_after)" \
	between "${evaluations_after:-0}" $((${evaluations_before:-999999} + 5)) 999999999
wait "$flood_pid"
wait "$slow_pid"
answered=$(sed -n 's/^flood: \([0-9]*\) answered.*/\1/p' "$tmp/flood.out")
check "the flood was served: $(cat "$tmp/flood.out")" [ "${answered:-0}" -ge 1990 ]
echo "# $(cat "$tmp/slow.out")"
dropped=$(sed -n 's/.*, \([0-9]*\) dropped by the server/\1/p' "$tmp/slow.out")
check "the slow connections were dropped to make room ($dropped)" between "${dropped:-0}" 1 999999

# ---- malformed requests: a handful of lines, not one each --------------------------------------
lines_before=$(grep -c 'warning: metrics:' "$tmp/hostile.err")
t0=$(date +%s%N)
python3 "$tmp/peer.py" bad "$port" 2000 >"$tmp/bad.out" 2>&1
elapsed_s=$(( ($(ms_since "$t0") + 999) / 1000 ))
sleep 1.1
healthz_ok "$port"	# the count of the suppressed ones is written with the next request
lines_after=$(grep -c 'warning: metrics:' "$tmp/hostile.err")
logged=$((lines_after - lines_before))
echo "# $(cat "$tmp/bad.out") in ${elapsed_s}s; $logged warning lines"
check "2000 malformed requests were answered 400" grep -q '^flood: 2000 answered' "$tmp/bad.out"
check "2000 malformed requests logged $logged lines (at most one a second: 1..$((elapsed_s + 2)))" \
	between "$logged" 1 $((elapsed_s + 2))
check "the suppressed warnings are counted" \
	bash -c "tail -n +$((lines_before + 1)) <(grep 'warning: metrics:' '$tmp/hostile.err') | grep -qE '[0-9]+ similar warnings suppressed'"
check "/healthz still answers" healthz_ok "$port"
stop "$tpid"
check "evictd exits 0 on SIGTERM after all that (rc=$rc)" [ "$rc" = 0 ]

done_testing
