#!/usr/bin/env bash
# --act-ahead kills (doc/DESIGN.md "Seeing ahead"), on this host's real cgroup v2 tree and its
# real pid.available (min(pid_max, threads-max) - tasks, the kubelet's signal): a workload forks
# sleeping processes at a steady 150/s towards a pid.available threshold 2400 tasks away (16 s);
# with --act-ahead=1m the estimate is sure within seconds and the forker is killed before the
# threshold is met (the decision says [ahead]); the idle workload lives. A decision ahead that
# never killed (the need counted from the signal, still above its target) fails here.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
EVICTD=${EVICTD:-build/evictd}

v2=""
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && { v2=$dir; break; }
done
if [ -z "$v2" ] || [ "$(id -u)" != 0 ] || [ ! -x "$EVICTD" ]; then
	echo "ok 1 # SKIP needs root, a writable cgroup v2 tree and $EVICTD"
	echo "1..1"
	exit 0
fi
tmp=$(mktemp -d /tmp/evictd-act-ahead-XXXXXX)
root="$v2/evictd-act-ahead-$$"
cleanup() {
	cleanup_daemons
	for cg in "$root"/*/; do [ -d "$cg" ] && echo 1 >"$cg/cgroup.kill" 2>/dev/null; done
	sleep 0.5
	for cg in "$root"/*/; do [ -d "$cg" ] && rmdir "$cg" 2>/dev/null; done
	rmdir "$root" 2>/dev/null
}
trap cleanup EXIT
mkdir -p "$root/idle" "$root/forker"
sh -c "echo \$\$ > '$root/idle/cgroup.procs'; exec sleep 600" >/dev/null 2>&1 &
disown

pid_capacity() { local a b; a=$(cat /proc/sys/kernel/pid_max); b=$(cat /proc/sys/kernel/threads-max); echo $(( a < b ? a : b )); }
tasks_now() { awk '{split($4, t, "/"); print t[2]}' /proc/loadavg; }
avail=$(( $(pid_capacity) - $(tasks_now) ))
threshold=$(( avail - 2400 ))
port=$(free_port)
start a "$EVICTD" -- --no-bpf --oom-guard=off --housekeeping-interval=100ms --state-dir="$tmp" \
	--control-socket="$tmp/a.sock" --metrics-address="127.0.0.1:$port" --event-log=off \
	--workload-root="$root" --eviction-hard="pid.available<$threshold" --act-ahead=1m
wait_up "$tmp/a.sock" "$port" || { fail "the daemon starts" "$(tail -5 "$tmp/a.err")"; done_testing; exit 1; }
sleep 1
# 150 sleeping processes a second, at most 3000, each in the forker's cgroup.
python3 - "$root/forker/cgroup.procs" >"$tmp/forker.out" 2>&1 <<'PY' &
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
t0 = time.monotonic()
for n in range(3000):
    due = t0 + n / 150.0
    time.sleep(max(0.0, due - time.monotonic()))
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "600"])
time.sleep(600)
PY
forker=$!
disown
killed=""
for _ in $(seq 1 200); do
	grep -qE ' evicted forker \(' "$tmp/a.err" && { killed=1; break; }
	sleep 0.1
done
min_avail=$(( $(pid_capacity) - $(tasks_now) ))
check "the forker is evicted for pid.available" test -n "$killed"
check "decided ahead: the decision line says [ahead] with its estimate" \
	grep -qE 'decision: \[ahead\] hard pid.available=' "$tmp/a.err"
check "before the threshold was met (the forker stopped $(( min_avail - threshold )) tasks above it)" \
	test "$min_avail" -gt "$threshold"
check "the idle workload lives" grep -q '^populated 1' "$root/idle/cgroup.events"
grep -E 'decision: \[ahead\]|evicted forker' "$tmp/a.err" | head -n 2 | cut -c1-250 | sed 's/^/# /'
[ -n "$killed" ] || tail -n 15 "$tmp/a.err" | sed 's/^/#   /'
done_testing
