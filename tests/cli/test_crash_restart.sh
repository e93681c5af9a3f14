#!/usr/bin/env bash
# evictd killed with SIGKILL and started again at once (a crash, an OOM kill of evictd, a
# node agent restarting it), on this host's cgroup v2 tree:
#  a. a soft eviction's grace is not granted afresh: a victim ignoring SIGTERM dies within
#     its 8 s grace (+ slack) of its first SIGTERM, not 3 s + 8 s (act/grace_store.c);
#  b. a running reclaim command dies with evictd: its leader at once (PR_SET_PDEATHSIG), the
#     rest of its group when evictd starts again, so there are never two (sys/subprocess*.c).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh

v2=""
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && [ -w "$dir/cgroup.procs" ] && { v2=$dir; break; }
done
if [ -z "$v2" ] || [ ! -x "$EVICTD" ]; then
	echo "ok 1 - soft grace survives a restart # SKIP no writable cgroup v2 mount or no $EVICTD"
	echo "ok 2 - reclaim command dies with evictd # SKIP no writable cgroup v2 mount or no $EVICTD"
	echo "1..2"
	exit 0
fi
tmp=$(mktemp -d /tmp/evictd-crash-XXXXXX)
root="$v2/evictd-crash-$$"
tpids=()
cleanup() {
	[ -s "$tmp/reclaim.pids" ] && for p in $(cat "$tmp/reclaim.pids"); do
		pg=$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ')
		[ -n "$pg" ] && [ "$pg" != "$(ps -o pgid= -p $$ | tr -d ' ')" ] && kill -KILL -- "-$pg" 2>/dev/null
	done
	cleanup_daemons
}
trap cleanup EXIT
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
# live PID: running, not a zombie (this machine's init may be slow to reap orphans).
live() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
daemon_pid() { pgrep -P "$1" | head -1; }
# crash TPID: SIGKILL its daemon, then wait (2 s at most) for the kernel to drop its lock.
crash() {
	kill -KILL "$(daemon_pid "$1")"
	for _ in $(seq 1 200); do flock -n "$tmp/state/evictd.lock" true 2>/dev/null && return 0; sleep 0.01; done
}

# ---- a. soft grace across a restart --------------------------------------------------------
mkdir -p "$root/victim"
sh -c "echo \$\$ > '$root/victim/cgroup.procs'; trap '' TERM; while :; do sleep 0.1; done" &
disown
sleep 0.3
args=(--no-bpf --oom-guard=off --housekeeping-interval=1s --event-log=off --state-dir="$tmp/state"
	--eviction-soft="memory.available<$((mem_total + 1))" --eviction-soft-grace-period=memory.available=1s
	--eviction-max-pod-grace-period=8 --workload-root="$root" --metrics-address=off)
start a1 "$EVICTD" -- "${args[@]}" --control-socket="$tmp/a1.sock"
if wait_log "$tmp/a1.err" 'sent SIGTERM to [0-9]+ processes in .*/victim' 10; then
	t_term=$(now_ms)
	sleep 3
	crash "$tpid"
	start a2 "$EVICTD" -- "${args[@]}" --control-socket="$tmp/a2.sock"
	died=""
	for _ in $(seq 1 150); do
		grep -q '^populated 0' "$root/victim/cgroup.events" && { died=$(( $(now_ms) - t_term )); break; }
		sleep 0.1
	done
	# 8 s grace, measured from when the test saw the log line (up to 0.1 s late) + slack.
	if [ -n "$died" ] && [ "$died" -le 9500 ] && grep -q 'in its grace before evictd restarted' "$tmp/a2.err"; then
		pass "soft grace survives a restart: the victim died ${died} ms after its first SIGTERM (grace 8 s)"
	else
		fail "soft grace survives a restart: the victim died ${died:-never} ms after its first SIGTERM (grace 8 s, not 11)" \
			"$(tail -5 "$tmp/a2.err")"
	fi
else
	fail "soft grace survives a restart: no SIGTERM in 10 s" "$(tail -5 "$tmp/a1.err")"
fi
cleanup_daemons
tpids=()
tmp=$(mktemp -d /tmp/evictd-crash-XXXXXX)

# ---- b. the reclaim command dies with evictd -----------------------------------------------
# nodefs.available<1000Gi is met at once: DiskPressure runs the reclaim command first.
printf '#!/bin/sh\necho $$ >> %s/reclaim.pids\nsleep 60\n' "$tmp" > "$tmp/reclaim.sh"
chmod +x "$tmp/reclaim.sh"
mkdir -p "$root"
bargs=(--no-bpf --oom-guard=off --housekeeping-interval=1s --event-log=off --state-dir="$tmp/state"
	--eviction-hard="nodefs.available<1000Gi" --reclaim-command="$tmp/reclaim.sh"
	--workload-root="$root" --metrics-address=off)
alive() { local n=0 p; for p in $(cat "$tmp/reclaim.pids" 2>/dev/null); do live "$p" && n=$((n + 1)); done; echo $n; }
start b1 "$EVICTD" -- "${bargs[@]}" --control-socket="$tmp/b1.sock"
for _ in $(seq 1 100); do [ -s "$tmp/reclaim.pids" ] && break; sleep 0.1; done
first=$(head -1 "$tmp/reclaim.pids" 2>/dev/null)
# The leader: the script's parent (sh -c).
leader=$(awk '{print $4}' "/proc/$first/stat" 2>/dev/null)
if [ -z "$first" ] || [ -z "$leader" ]; then
	fail "reclaim command dies with evictd: it did not start" "$(tail -5 "$tmp/b1.err")"
else
	crash "$tpid"
	start b2 "$EVICTD" -- "${bargs[@]}" --control-socket="$tmp/b2.sock"
	gone=""
	for i in $(seq 1 10); do
		live "$first" || { gone=$((i * 100)); break; }
		sleep 0.1
	done
	leader_gone=no
	live "$leader" || leader_gone=yes
	# The restarted evictd runs its own command: one, never two.
	for _ in $(seq 1 50); do [ "$(wc -l < "$tmp/reclaim.pids")" -ge 2 ] && break; sleep 0.1; done
	sleep 0.5
	n=$(alive)
	# And one sleep 60 under them: the old one's was killed with its group.
	sleeps=0
	for p in $(pgrep -x sleep); do
		live "$p" && grep -qx "$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)" "$tmp/reclaim.pids" && sleeps=$((sleeps + 1))
	done
	if [ -n "$gone" ] && [ "$leader_gone" = yes ] && [ "$n" = 1 ] && [ "$sleeps" = 1 ]; then
		pass "reclaim command dies with evictd: gone ${gone} ms after the kill -9, one running after the restart"
	else
		fail "reclaim command dies with evictd (gone after ${gone:-more than 1000} ms, leader gone: $leader_gone, running after the restart: $n, sleep 60s under them: $sleeps)" \
			"$(grep -v 'PSI\|BPF\|control socket' "$tmp/b2.err" | head -8)"
	fi
fi
done_testing
