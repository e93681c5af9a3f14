#!/usr/bin/env bash
# The host profile (doc/DESIGN.md "Profiles"): `make run` on a machine without a kubelet is a
# dry run over the machine's own units. On a fixture root with no /var/lib/kubelet, evictd
# picks the server profile, drops the kubelet's disk defaults, takes system.slice and the
# user slices as workload roots, holds the memory thresholds back while swap has room, and
# names the unit it would kill first, and why, once swap runs short.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-hostprofile-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# A 4 GiB host (MemAvailable 2.8 GiB) with 1 GiB of swap, half free; three units.
fx="$tmp/root"
cg="$fx/sys/fs/cgroup"
mkdir -p "$fx/proc/sys/kernel" "$fx/proc/self" "$cg"
meminfo() {
	printf 'MemTotal:        4005056 kB\nMemFree:         1198240 kB\nMemAvailable:    2874512 kB\n'
	printf 'SwapTotal:       1048576 kB\nSwapFree:        %s kB\n' "$1"
}
meminfo 524288 >"$fx/proc/meminfo"
echo 4194304 >"$fx/proc/sys/kernel/pid_max"
echo 126000 >"$fx/proc/sys/kernel/threads-max"
echo '0.52 0.58 0.59 3/1187 40231' >"$fx/proc/loadavg"
echo '0::/system.slice/evictd.service' >"$fx/proc/self/cgroup"
echo 'cpuset cpu io memory pids' >"$cg/cgroup.controllers"
printf 'anon 1073741824\nfile 536870912\nkernel 0\nactive_file 268435456\ninactive_file 268435456\n' \
	>"$cg/memory.stat"
unit() {	# unit PATH MEMORY_CURRENT
	mkdir -p "$cg/$1"
	echo "$2" >"$cg/$1/memory.current"
	printf 'anon %s\nfile 0\nactive_file 0\ninactive_file 0\n' "$2" >"$cg/$1/memory.stat"
	echo 5 >"$cg/$1/pids.current"
	echo 1 >"$cg/$1/cgroup.procs"
	printf 'populated 1\nfrozen 0\n' >"$cg/$1/cgroup.events"
}
unit system.slice/ssh.service 3145728
unit system.slice/build.service 943718400
unit user.slice/user-1000.slice/session-2.scope 209715200

run() { "$EVICTD" --root "$fx" --no-bpf --metrics-address=off --event-log=off --state-dir="$tmp/state" "$@"; }

out=$(run --validate 2>&1)
check "no kubelet: the server profile" grep -q '^profile server (auto: no kubelet' <<<"$out"
check "the kubelet's disk defaults are off without their directories" \
	bash -c '! grep -qE "^hard (nodefs|imagefs)" <<<"$1"' _ "$out"
check "memory.available keeps the kubelet's default" grep -q '^hard memory.available<100Mi$' <<<"$out"
check "swap guard 10% (earlyoom's -s)" grep -q '^swap-guard 10%$' <<<"$out"
check "system.slice is a workload root" grep -q '^workload-root /sys/fs/cgroup/system.slice$' <<<"$out"
check "each user slice is a workload root" \
	grep -q '^workload-root /sys/fs/cgroup/user.slice/user-1000.slice$' <<<"$out"

# MemAvailable 2.8 GiB is below an OOM guard of 3 GiB; swap half free holds it back.
out=$(run --dry-run --once --oom-guard=3Gi --oom-guard-max=0 2>&1)
check "swap with room: no decision" grep -q '^  decision: none$' <<<"$out"
check "swap with room: said why" grep -q '^  swap: has room' <<<"$out"

meminfo 52428 >"$fx/proc/meminfo"	# 5% of swap free
out=$(run --dry-run --once --oom-guard=3Gi --oom-guard-max=0 2>&1)
check "swap short: the largest unit is the would-be victim, with the reason" \
	grep -q '^  decision: hard oom.guard -> /build.service (oom-guard: ' <<<"$out"
check "swap short: dry run, nothing killed" grep -q '\[dry-run\].*victim=build.service' <<<"$out"
json=$(run --dry-run --once --oom-guard=3Gi --oom-guard-max=0 --output json 2>/dev/null)
check "json: swap.available observed" \
	[ "$(jq '.signals["swap.available"].available' <<<"$json")" = $((52428 * 1024)) ]
check "json: swap_short" [ "$(jq .swap_short <<<"$json")" = true ]

# With the kubelet's directory the kubelet's model stays: no guards, no workload roots.
mkdir -p "$fx/var/lib/kubelet"
out=$(run --validate 2>&1)
check "with /var/lib/kubelet: kubernetes" grep -q '^profile kubernetes (auto: /var/lib/kubelet exists)' <<<"$out"
check "with /var/lib/kubelet: no swap guard" grep -q '^swap-guard off$' <<<"$out"
check "with /var/lib/kubelet: the kubelet's nodefs default" grep -q '^hard nodefs.available<10%$' <<<"$out"

done_testing
