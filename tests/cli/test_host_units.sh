#!/usr/bin/env bash
# Standalone workloads on a host (doc/DESIGN.md §5 "Workloads on a host"), on this host's real
# cgroup v2 tree: with a user.slice-like workload root, the victim is the unit (a user
# manager's app service), never the user's whole slice or the user manager: its init.scope
# (systemd --user) and the session scope live on. (No memory controller here: usage ties, the
# app's priority -10 picks it among the units; the old discovery ranked only user-1000.slice.)
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/cgroups.sh

v2=$(cg_v2_root)
if [ -z "$v2" ]; then
	echo "ok 1 # SKIP no writable cgroup v2 mount on this machine"
	echo "1..1"
	exit 0
fi
top="$v2/evictd-hostunits-$$"
state=$(mktemp -d /tmp/evictd-cli-state-XXXXXX)
trap 'cg_remove "$top"; rm -rf "$state"' EXIT
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
always_met="memory.available<$((mem_total + 1))"

user="$top/user-1000.slice"
manager="$user/user@1000.service"
spawn() {	# spawn CGROUP: a sleeping process inside it
	mkdir -p "$1"
	sh -c "echo \$\$ > '$1/cgroup.procs'; exec sleep 300" &
	disown
}
spawn "$manager/init.scope"
spawn "$manager/app.slice/hog.service"
spawn "$manager/app.slice/editor.service"
spawn "$user/session-3.scope"
mkdir -p "$manager/background.slice"	# empty slice: no candidate
sleep 0.3
setfattr -n user.evictd.priority -v -10 "$manager/app.slice/hog.service"

run() { "$EVICTD" --no-bpf --metrics-address=off --event-log=off --state-dir="$state" \
	--oom-guard=off --eviction-hard="$always_met" --workload-root="$top" "$@" 2>&1; }

out=$(run --once --dry-run)
all=$out
check "dry run: the would-be victim is the app unit (got: $(grep -o 'victim=[^ ]*' <<<"$out" | head -1))" \
	grep -q 'victim=hog.service' <<<"$out"
check "dry run: neither the user's slice nor the user manager is a candidate" \
	bash -c '! grep -qE "victim=(user-1000\.slice|user@1000\.service|init\.scope)" <<<"$1"' _ "$out"

out=$(run --once)
all+=$out
emptied() { ! cg_populated "$1"; }
check "the app unit is killed" emptied "$manager/app.slice/hog.service"
check "the user manager (init.scope) lives" cg_populated "$manager/init.scope"
check "the session scope lives" cg_populated "$user/session-3.scope"
check "the other app lives" cg_populated "$manager/app.slice/editor.service"
check "one eviction, the unit's cgroup (got: $(grep -o 'kill: killing pod [^ ]*' <<<"$out" | tr '\n' ' '))" \
	[ "$(grep -c 'kill: killing pod' <<<"$out")" = 1 ]
check "no sanitizer report (EVICTD=build/evictd-san)" \
	bash -c '! grep -qE "runtime error|AddressSanitizer|LeakSanitizer" <<<"$1"' _ "$all"

done_testing
