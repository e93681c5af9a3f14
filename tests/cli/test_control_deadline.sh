#!/usr/bin/env bash
# A control socket client that sends half a request line and stalls is closed by its own
# 5 s deadline (a timer on the daemon's loop, doc/DESIGN.md "Hostile input"), with no other
# client arriving; the daemon keeps answering meanwhile. A real daemon (--dry-run --no-bpf).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
EVICTCTL=${EVICTCTL:-$BUILD_DIR/evictctl}

command -v python3 >/dev/null && command -v curl >/dev/null ||
	{ echo "ok 1 - control deadline # SKIP python3 and curl are needed"; echo "1..1"; exit 0; }
tmp=$(mktemp -d /tmp/evictd-ctldeadline-XXXXXX)
tpids=()
cleanup() {
	for p in "${tpids[@]}"; do stop "$p"; done
	rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/run/evictd.sock
port=$(free_port)

start daemon "$EVICTD" "${SAN_ENV[@]}" -- --dry-run --no-bpf --state-dir="$tmp/state" \
	--oom-guard=off --eviction-hard='memory.available<1' --housekeeping-interval=1s \
	--control-socket="$sock" --metrics-address="127.0.0.1:$port" --event-log=off
if ! wait_up "$sock" "$port"; then
	fail "the daemon starts" "$(head -c 600 "$tmp/daemon.err")"
	done_testing
	exit
fi

# Half a line, then nothing: prints the seconds until the daemon closed it ("open" after 15 s).
cat >"$tmp/stall.py" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b'{"command":')
start = time.monotonic()
s.settimeout(15)
try:
    data = s.recv(4096)
    print("%.1f %d" % (time.monotonic() - start, len(data)))
except socket.timeout:
    print("open")
EOF
python3 "$tmp/stall.py" "$sock" >"$tmp/stall.out" 2>&1 &
stall=$!
# The daemon still answers others while that client waits (this one comes and goes at once).
sleep 1
if timeout 10 "$EVICTCTL" --socket "$sock" --json status >"$tmp/status.json" 2>"$tmp/status.err"; then
	pass "evictctl status answers while a client stalls"
else
	fail "evictctl status answers while a client stalls" "$(cat "$tmp/status.err")"
fi
wait "$stall"
read -r took bytes <"$tmp/stall.out"
# Closed at its 5 s deadline (a second of slack each way for a loaded machine), with nothing
# sent back; before, it stayed open until another client came after the deadline.
if [ "$took" != open ] && awk -v t="$took" 'BEGIN { exit !(t >= 4 && t <= 8) }' && [ "$bytes" = 0 ]; then
	pass "a client that sends half a line is closed at its deadline (${took}s)"
else
	fail "a client that sends half a line is closed at its deadline" "$(cat "$tmp/stall.out")"
fi

stop "${tpids[0]}"
tpids=()
if [ "$rc" = 0 ] && ! grep -qE "$SAN_PATTERN" "$tmp/daemon.err"; then
	pass "the daemon exits cleanly"
else
	fail "the daemon exits cleanly" "rc=$rc $(grep -E "$SAN_PATTERN" "$tmp/daemon.err" | head -3)"
fi
done_testing
