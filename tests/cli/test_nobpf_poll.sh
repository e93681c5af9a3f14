#!/usr/bin/env bash
# Without BPF and with the OOM guard on (the default), evictd re-reads the memory signals
# adaptively, as earlyoom does: every 100 ms near a memory threshold, every second far from
# one (daemon_bpf.c arm_adaptive_poll); with the guard off it is the plain housekeeping poller
# the benchmarks compare against. Counted through evictctl's evaluation count, with the
# housekeeping poll at 60 s so it cannot account for them.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-nobpf-XXXXXX)
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# A fixture --root: memory.available is 13 GiB whatever this host's memory does (16 GiB -
# (anon 2 + file 3 - inactive_file 2 GiB)), MemAvailable 12 GiB for the OOM guard; so the
# distance to each threshold is fixed and the test never depends on the host's free memory.
# Far = both margins over 1000 ms of fill at 6000 KiB/ms (5.7 GiB): the 1 s ceiling.
fx="$tmp/root"
mkdir -p "$fx/proc/sys/kernel" "$fx/sys/fs/cgroup"
. tests/cli/fixed-node.sh
fixed_node "$fx"
avail=$("$EVICTD" --once --no-bpf --dry-run --output json --root "$fx" --state-dir="$tmp/state" 2>/dev/null |
	jq '.signals["memory.available"].available')
check "the fixture root's memory.available is 13 GiB ($avail)" [ "$avail" = 13958643712 ]

# evaluations SECONDS FLAGS...: evaluations of a --no-bpf daemon over SECONDS
evaluations() {
	local seconds=$1 before after
	shift
	"$EVICTD" --dry-run --no-bpf --root "$fx" --housekeeping-interval=60s --state-dir="$tmp/state" \
		--control-socket="$tmp/evictd.sock" --metrics-address=off --event-log=off "$@" \
		>"$tmp/out" 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do [ -S "$tmp/evictd.sock" ] && break; sleep 0.1; done
	sleep 0.5
	before=$("$BUILD_DIR/evictctl" --socket "$tmp/evictd.sock" status --json | jq -r '.evaluations')
	sleep "$seconds"
	after=$("$BUILD_DIR/evictctl" --socket "$tmp/evictd.sock" status --json | jq -r '.evaluations')
	kill -TERM "$pid"; wait "$pid"; pid=""
	rm -f "$tmp/evictd.sock"
	echo $((after - before))
}

# 200 MiB above a threshold: well inside 100 ms of fill at earlyoom's assumed 6000 KiB/ms.
near=$(evaluations 3 --eviction-hard="memory.available<$((avail - (200 << 20)))")
check "near a threshold, the memory signals are read about every 100 ms ($near evaluations in 3 s)" \
	[ "$near" -ge 10 -a "$near" -le 40 ]
grep -q "re-read every 100 ms to 1 s" "$tmp/out"; check "the daemon says so at start" [ $? -eq 0 ]

far=$(evaluations 3 --eviction-hard="memory.available<100Mi" --oom-guard=5%)
check "far from every memory threshold, about once a second ($far evaluations in 3 s)" \
	[ "$far" -ge 2 -a "$far" -le 5 ]

off=$(evaluations 3 --eviction-hard="memory.available<$((avail - (200 << 20)))" --oom-guard=off)
check "with the OOM guard off, only the housekeeping poll ($off evaluations in 3 s)" [ "$off" -le 1 ]

done_testing
