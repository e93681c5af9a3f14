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
# The HTTP-port part runs the ASan/UBSan build (EVICTD_SAN, build/evictd-san) so that "no
# sanitizer report" means something, as tests/cli/test_robust.sh does.
# Limits: user/ops/metrics.h; see doc/evictd.8 (METRICS, DECISION LOG) and doc/evictctl.8 (PROTOCOL).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
EVICTCTL=${EVICTCTL:-build/evictctl}
EVICTD_SAN=${EVICTD_SAN:-$BUILD_DIR/evictd-san}

for bin in "$EVICTD" "$EVICTD_SAN" "$EVICTCTL"; do
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
	for p in "${helpers[@]}"; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
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

def ctl_server(path, reply_file):
    """A fake control socket: each connection gets the bytes of reply_file, then EOF."""
    import os
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    while True:
        conn, _ = srv.accept()
        conn.settimeout(2)
        try:
            conn.recv(4096)
            with open(reply_file, "rb") as f:
                conn.sendall(f.read())
        except OSError:
            pass
        conn.close()

if sys.argv[1] == "ctl":
    ctl_server(sys.argv[2], sys.argv[3])
    sys.exit(0)
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
start hostile "$EVICTD_SAN" "${SAN_ENV[@]}" -- --dry-run --no-bpf --oom-guard=off --housekeeping-interval=1s --state-dir="$tmp/state" \
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
check "no sanitizer report from $EVICTD_SAN" no_sanitizer_report "$tmp/hostile.err"

# ---- evictctl against a fake control socket -----------------------------------------------------
fake="$tmp/fake.sock"
python3 "$tmp/peer.py" ctl "$fake" "$tmp/reply" >"$tmp/fake.out" 2>&1 &
helpers+=($!)
for _ in $(seq 1 50); do [ -S "$fake" ] && break; sleep 0.1; done
# ctl_case NAME REPLY: every command exits 0 or 1 (no crash, no timeout), says at most one
# line on stderr, and writes no raw escape character or other control byte.
ctl_case() {
	local name=$1 cmd rc problems=""
	printf '%s\n' "$2" >"$tmp/reply"
	for cmd in status pods events; do
		timeout 10 "$EVICTCTL" --socket "$fake" --bpf-pin-dir "$tmp/nopins" --timeout 5 "$cmd" \
			>"$tmp/ctl.$cmd.out" 2>"$tmp/ctl.$cmd.err"
		rc=$?
		[ "$rc" -le 1 ] || problems+=" $cmd: exit $rc;"
		[ "$(wc -l <"$tmp/ctl.$cmd.err")" -le 1 ] || problems+=" $cmd: $(wc -l <"$tmp/ctl.$cmd.err") error lines;"
		if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$tmp/ctl.$cmd.out" "$tmp/ctl.$cmd.err"; then
			problems+=" $cmd: raw control bytes;"
		fi
	done
	if [ -z "$problems" ]; then pass "evictctl on $name: no crash, one error line at most"; else fail "evictctl on $name:$problems" "$(cat "$tmp"/ctl.*.err)"; fi
}
ctl_case '{"ok":true}' '{"ok":true}'
ctl_case 'wrong types' '{"ok":true,"signals":1,"pods":{},"events":"x","thresholds":{},"conditions":[],"bpf":[],"evictions":7,"decision":"x","oom_guard":{"enabled":true,"mem_total":"x"},"uptime_seconds":"y"}'
ctl_case 'wrong element types' '{"ok":true,"signals":{"memory.available":3,"x":null},"thresholds":[1,null,{"signal":5}],"conditions":{"a":1},"decision":{"victim":2},"pods":[1,null,{"name":7}],"cgroup_tree":true,"events":[1,null,{"victim":"x","latency_ns":"1"}]}'
ctl_case 'no ok' '{"signals":{},"pods":[],"events":[]}'
ctl_case 'not JSON' $'\x1b[2Jnot json\xff'
ctl_case 'an error with escapes' '{"ok":false,"error":"bad\n\u001b[2Jthing"}'
hostile='{"ok":true,"cgroup_tree":true,"signal":"memory.available","signals":{},"pods":[{"rank":1,"namespace":"ns\n\u001b[31m","name":"evil\u009b2J","cgroup":"/x","priority":0,"usage":1,"request":0,"reason":"r\r"}],"events":[{"signal":"memory.available","victim":{"name":"a/b\u001b]0;title\u0007"}}],"decision":{"victim":{"namespace":"x\u001b[1m","name":"y"}}}'
ctl_case 'escape sequences in names' "$hostile"
printf '%s\n' "$hostile" >"$tmp/reply"
"$EVICTCTL" --socket "$fake" pods >"$tmp/ctl.pods.out" 2>&1
check "evictctl pods shows a newline and ESC in a name visibly" grep -qF 'ns\n\x1b[31m/evil\xc2\x9b2J' "$tmp/ctl.pods.out"
check "evictctl pods keeps one line per pod" [ "$(wc -l <"$tmp/ctl.pods.out")" -eq 3 ]
"$EVICTCTL" --socket "$fake" events >"$tmp/ctl.events.out" 2>&1
check "evictctl events shows an OSC sequence in a victim visibly" grep -qF 'a/b\x1b]0;title\x07' "$tmp/ctl.events.out"

# ---- a FIFO as the event log: refused at once, exit 1 --------------------------------------------
# (Before, open() waited for a reader with SIGTERM blocked: only SIGKILL ended the daemon.)
mkfifo "$tmp/events.fifo"
t0=$(date +%s%N)
timeout -s KILL 10 "$EVICTD" --dry-run --no-bpf --oom-guard=off --control-socket="$tmp/fifo.sock" \
	--metrics-address=off --event-log="$tmp/events.fifo" >"$tmp/fifo.out" 2>"$tmp/fifo.err"
rc=$?
ms=$(ms_since "$t0")
check "a FIFO as --event-log: exit 1 in ${ms} ms (rc=$rc), not a hang" between "$rc" 1 1
check "a FIFO as --event-log: one error line naming it" \
	bash -c "[ \"\$(grep -c 'error:' '$tmp/fifo.err')\" = 1 ] && grep -q 'error: event log $tmp/events.fifo: a FIFO' '$tmp/fifo.err'"
port=$(free_port)
start devnull "$EVICTD" -- --dry-run --no-bpf --oom-guard=off --housekeeping-interval=1s \
	--control-socket="$tmp/devnull.sock" --metrics-address="127.0.0.1:$port" --event-log=/dev/null
check "a character device (/dev/null) as --event-log is accepted" wait_up "$tmp/devnull.sock" "$port"
stop "$tpid"

done_testing
