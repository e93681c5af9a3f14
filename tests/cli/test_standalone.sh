#!/usr/bin/env bash
# Standalone mode on this host's cgroup v2 tree: --workload-root children are ranked by the
# user.evictd.priority xattr and the victim is killed through cgroup.kill; --dry-run kills
# nothing. (This host's v2 tree has no memory controller: usage ties, priority decides.)
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh

v2=""
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && { v2=$dir; break; }
done
if [ -z "$v2" ]; then
	echo "ok 1 # SKIP no writable cgroup v2 mount on this machine"
	echo "1..1"
	exit 0
fi
root="$v2/evictd-cli-$$"
state=$(mktemp -d /tmp/evictd-cli-state-XXXXXX)	# the instance lock lives here
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
always_met="memory.available<$((mem_total + 1))"

spawn() {	# spawn WORKLOAD: a sleeping process inside $root/WORKLOAD
	mkdir -p "$root/$1"
	sh -c "echo \$\$ > '$root/$1/cgroup.procs'; exec sleep 300" &
	disown
}
cleanup() {
	for cg in "$root"/*/; do
		[ -d "$cg" ] || continue
		echo 1 > "$cg/cgroup.kill" 2>/dev/null
	done
	sleep 0.2
	for cg in "$root"/*/; do rmdir "$cg" 2>/dev/null; done
	rmdir "$root" 2>/dev/null
	rm -rf "$state"
}
trap cleanup EXIT
populated() { grep -q '^populated 1' "$root/$1/cgroup.events"; }

mkdir -p "$root"
spawn low; spawn high; spawn critical
sleep 0.3
setfattr -n user.evictd.priority -v 10 "$root/low"
setfattr -n user.evictd.priority -v 1000 "$root/high"
setfattr -n user.evictd.priority -v 2000000000 "$root/critical"

out=$("$EVICTD" --once --dry-run --oom-guard=off --eviction-hard="$always_met" --workload-root="$root" 2>&1)
if grep -q "victim=low" <<<"$out" && populated low && populated high; then
	pass "dry-run picks the lowest-priority workload and kills nothing"
else
	fail "dry-run picks the lowest-priority workload and kills nothing" "$out"
fi

out=$("$EVICTD" --once --oom-guard=off --state-dir="$state" --eviction-hard="$always_met" --workload-root="$root" 2>&1)
# One victim per need (doc/DESIGN.md, "Acting: one victim per need"): the lowest-priority
# workload is killed; the threshold stays met but that kill gave nothing back (a sleeping
# process), so the next workload is held instead of killed, and the critical one never goes.
if ! populated low && populated high && populated critical; then
	pass "hard threshold: the lowest-priority workload killed, the next held, the critical one spared"
else
	fail "hard threshold: the lowest-priority workload killed, the next held, the critical one spared" "$out"
fi
order=$(grep -o 'kill: killing pod /[^ ]*' <<<"$out" | awk '{print $4}' | tr '\n' ' ')
check "one eviction started, the lowest priority (got: $order)" [ "$order" = "/low " ]
check "the held eviction is said" grep -q 'did not give back its memory' <<<"$out"
# With only the critical workload left, nothing is evictable, and evictd says why.
echo 1 > "$root/high/cgroup.kill"; sleep 0.2
out=$("$EVICTD" --once --oom-guard=off --state-dir="$state" --eviction-hard="$always_met" --workload-root="$root" 2>&1)
check "the never-evict workload is reported as such" grep -q 'every candidate is in the never-evict set' <<<"$out"

# A kernel that says no: cgroup.kill on a threaded cgroup is EOPNOTSUPP (cgroup_kill_write()
# in kernel/cgroup/cgroup.c: killing takes down whole processes). The eviction fails, --once
# says so with exit 1, and nothing else is killed in its place.
thr_root="$root-thr"
mkdir -p "$thr_root/thr" && echo threaded > "$thr_root/thr/cgroup.type"
sleep 300 &
thr_pid=$!
echo $thr_pid > "$thr_root/cgroup.procs" && echo $thr_pid > "$thr_root/thr/cgroup.threads"
out=$("$EVICTD" --once --oom-guard=off --state-dir="$state" --eviction-hard="$always_met" --workload-root="$thr_root" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'evicting .*/thr failed: Operation not supported' <<<"$out" && kill -0 $thr_pid 2>/dev/null; then
	pass "--once exits 1 when the kernel refuses the eviction (threaded cgroup), the workload lives"
else
	fail "--once exits 1 when the kernel refuses the eviction (threaded cgroup), the workload lives" "rc=$rc $out"
fi
kill $thr_pid 2>/dev/null; wait $thr_pid 2>/dev/null
rmdir "$thr_root/thr" "$thr_root" 2>/dev/null

# A symlink as workload root is refused, not followed.
ln -s "$root" "/tmp/evictd-cli-link-$$"
spawn victim2; sleep 0.2
out=$("$EVICTD" --once --oom-guard=off --state-dir="$state" --eviction-hard="$always_met" --workload-root="/tmp/evictd-cli-link-$$" 2>&1)
rc=$?
rm -f "/tmp/evictd-cli-link-$$"
check "a symlinked workload root is refused and nothing is killed" populated victim2
check "a symlinked workload root is a configuration error (exit $rc, one line naming it)" \
	[ "$rc" = 2 -a "$(grep -c 'is a symlink' <<<"$out")" = 1 ]

done_testing
