#!/usr/bin/env bash
# Time to exhaustion on a real kernel input (doc/DESIGN.md "Seeing ahead"): nodefs is a small
# tmpfs (nr_inodes) under a fixture --root, so its inodesFree falls only by the files this test
# creates, at a rate it sets and measures, whatever the host does. evictctl status and /metrics
# must show (free - threshold) / rate within the stated tolerance; no estimate once creation
# stops, or while it comes in bursts; --warn-ahead says it through --on-evict (kind warn-ahead)
# and the decision log; --act-ahead decides on the threshold before it is met (dry run).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTD=${EVICTD:-build/evictd}
EVICTCTL=${EVICTCTL:-build/evictctl}

tmp=$(mktemp -d /tmp/evictd-ahead-XXXXXX)
fx="$tmp/root"
kdir="$fx/var/lib/kubelet"
mkdir -p "$fx/proc/sys/kernel" "$fx/sys/fs/cgroup" "$kdir"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=64m,nr_inodes=40000 evictd-ahead "$kdir" 2>/dev/null; then
	rm -rf "$tmp"
	echo "ok 1 # SKIP mounting a tmpfs needs root (CAP_SYS_ADMIN)"
	echo "1..1"
	exit 0
fi
. tests/cli/daemonlib.sh
trap 'umount -l "$kdir" 2>/dev/null; [ -n "${KEEP:-}" ] && tmp=/nonexistent; cleanup_daemons' EXIT

# Memory and PIDs fixed by the fixture (as test_nobpf_poll.sh): only the inodes move.
. tests/cli/fixed-node.sh
fixed_node "$fx"
mkdir -p "$kdir/a" "$kdir/b" "$kdir/c"

threshold=2000
cat >"$tmp/hook.sh" <<HOOK
echo "\$EVICTD_KIND|\$EVICTD_SIGNAL|\$EVICTD_THRESHOLD|\$EVICTD_OBSERVED" >>"$tmp/hook.log"
HOOK
port=$(free_port)
sock="$tmp/ctl.sock"
start d "$EVICTD" -- --dry-run --no-bpf --oom-guard=off --root "$fx" --state-dir="$tmp" \
	--control-socket="$sock" --metrics-address="127.0.0.1:$port" --event-log="$tmp/events.jsonl" \
	--housekeeping-interval=100ms --eviction-hard="nodefs.inodesFree<$threshold" \
	--warn-ahead=5m --warn-interval=1s --on-evict="sh $tmp/hook.sh"
dtp=$tpid
if ! wait_up "$sock" "$port"; then
	fail "the daemon starts" "$(tail -5 "$tmp/d.err")"
	exit 1
fi
status() { "$EVICTCTL" --socket "$sock" status --json; }
ahead() { status | jq -c '.thresholds[] | select(.signal == "nodefs.inodesFree") | .ahead'; }

sleep 1.5
check "no estimate while nothing is created ($(ahead))" [ "$(ahead | jq -r .sure)" = false ]

# 400 files a second for 7 s; from 3 s on, read the first sure estimate while creation goes on
# (a stall of the pacer on a busy host is a step that starts the series anew: read again).
python3 tests/cli/pace_files.py "$kdir/a" 400 7 >"$tmp/steady.out" &
pacer=$!
sleep 3
for _ in $(seq 1 12); do
	reply=$(status)
	[ "$(jq -r '.thresholds[] | select(.signal == "nodefs.inodesFree") | .ahead.sure' <<<"$reply")" = true ] && break
	sleep 0.25
done
free=$(jq -r '.signals["nodefs.inodesFree"].available' <<<"$reply")
est=$(jq -r '.thresholds[] | select(.signal == "nodefs.inodesFree") | .ahead' <<<"$reply")
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
table=$("$EVICTCTL" --socket "$sock" status)
wait "$pacer"
read -r made took <"$tmp/steady.out"
rate=$(awk -v m="$made" -v t="$took" 'BEGIN { printf "%.1f", m / t }')
expect=$(awk -v f="$free" -v th="$threshold" -v r="$rate" 'BEGIN { printf "%.2f", (f - th) / r }')
seconds=$(jq -r '.seconds // "none"' <<<"$est")
echo "# steady: $made files in ${took}s ($rate/s); inodesFree $free; expected ${expect}s, estimated ${seconds}s: $est"
check "a steady rate gives a sure estimate" [ "$(jq -r .sure <<<"$est")" = true ]
check "the estimate is (free - threshold) / rate within 15% (${seconds}s vs ${expect}s)" \
	awk -v s="$seconds" -v e="$expect" 'BEGIN { exit !(s != "none" && s > 0.85 * e && s < 1.15 * e) }'
check "its bounds hold the estimate, within 10% of it" \
	awk -v l="$(jq -r '.seconds_low // -1' <<<"$est")" -v h="$(jq -r '.seconds_high // -1' <<<"$est")" \
	-v s="$seconds" 'BEGIN { exit !(l <= s && s <= h && h - l < 0.1 * s) }'
check "the measured rate is the created one within 10%" \
	awk -v r="$(jq -r '.rate_per_second // 0' <<<"$est")" -v c="$rate" 'BEGIN { exit !(r > 0.9 * c && r < 1.1 * c) }'
check "evictctl status shows the time ahead in its AHEAD column" \
	grep -qE '^hard nodefs.inodesFree<2000 +[0-9]+ +- +ok +in [0-9.]+s \([0-9.]+-[0-9.]+s\)' <<<"$table"
wait_log "$tmp/hook.log" 'warn-ahead' 5
check "--warn-ahead runs the hook with kind warn-ahead" grep -q "^warn-ahead|nodefs.inodesFree|$threshold|" "$tmp/hook.log"
check "--warn-ahead writes a decision-log entry naming the estimate" \
	bash -c "jq -r 'select(.action == \"warn\") | .reason' '$tmp/events.jsonl' |
		grep -q '^warning ahead (--warn-ahead 5m0s): nodefs.inodesFree reaches $threshold in '"

# Stopped: within half the window the newer half is flat, and the estimate goes.
sleep 3
check "no estimate 3 s after creation stopped ($(ahead))" [ "$(ahead | jq -r .sure)" = false ]
check "/metrics had evictd_time_to_threshold_seconds while sure" \
	grep -q '^evictd_time_to_threshold_seconds{signal="nodefs.inodesFree",kind="hard"} ' <<<"$metrics"
check "/metrics has none once not sure" \
	bash -c "! curl -s http://127.0.0.1:$port/metrics | grep -q '^evictd_time_to_threshold_seconds{'"

# Bursty: 600 files at once every 2 s (300/s on average) for 8 s: never a sure estimate.
python3 tests/cli/pace_files.py "$kdir/b" 300 8 600 >/dev/null &
pacer=$!
sure=0 polls=0
while kill -0 "$pacer" 2>/dev/null; do
	[ "$(ahead | jq -r .sure)" = true ] && sure=$((sure + 1))
	polls=$((polls + 1))
	sleep 0.25
done
wait "$pacer"
check "bursts of creation give no estimate ($sure sure of $polls polls)" [ "$sure" -eq 0 -a "$polls" -ge 10 ]
stop "$dtp"

# --act-ahead: a threshold 10000 inodes below what is free now, not met, is decided on when
# sure to be met within the minute (25 s at 400/s), within 6 s of creation.
threshold=$(( $(stat -f -c %d "$kdir") - 10000 ))
rm -f "$sock"
port=$(free_port)
start e "$EVICTD" -- --dry-run --no-bpf --oom-guard=off --root "$fx" --state-dir="$tmp" \
	--control-socket="$sock" --metrics-address="127.0.0.1:$port" --event-log=off \
	--housekeeping-interval=100ms --eviction-hard="nodefs.inodesFree<$threshold" --act-ahead=1m
etp=$tpid
wait_up "$sock" "$port" || fail "the daemon starts again" "$(tail -5 "$tmp/e.err")"
sleep 1
check "--act-ahead: no decision while nothing is created" [ "$(status | jq -r '.decision')" = null ]
python3 tests/cli/pace_files.py "$kdir/c" 400 6 >/dev/null &
pacer=$!
sleep 2.5
for _ in $(seq 1 12); do
	reply=$(status)
	[ "$(jq -r '.decision.ahead' <<<"$reply")" = true ] && break
	sleep 0.25
done
wait "$pacer"
echo "# act-ahead decision: $(jq -c .decision <<<"$reply")"
check "--act-ahead decides on nodefs.inodesFree before it is met" \
	[ "$(jq -r '.decision.signal + " " + (.decision.ahead|tostring)' <<<"$reply")" = "nodefs.inodesFree true" ]
check "the threshold is not met when acting ahead" \
	[ "$(jq -r '.thresholds[] | select(.signal == "nodefs.inodesFree") | .met' <<<"$reply")" = false ]
check "the decision log says it acted ahead with the estimate" \
	grep -qE 'decision: \[dry-run\] \[ahead\] hard nodefs.inodesFree=' "$tmp/e.err"
stop "$etp"
done_testing
