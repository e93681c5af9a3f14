#!/usr/bin/env bash
# Pod identity no tenant can forge, and a poisoned pod refused alone (doc/DESIGN.md §5, "Pod
# identity"), on this host's real cgroup v2 tree: a kubepods.slice under --cgroup-root with
# three pods. "low" (priority 0) carries kubernetes.io/config.source: file and a config.hash,
# which any pod author can write; "high" has priority 100000; "bad" has a 300-byte name (over
# its buffer). The pods file lists all three. The threshold is always met (memory.available
# above MemTotal), so only candidacy and ranking decide: low must be evicted first (it is no
# static pod), high next, and bad never (refused alone: its cgroup is without metadata, which
# fails closed), with one line about bad however many evaluations run.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTD=${EVICTD:-build/evictd}

. tests/cli/cgroups.sh
v2=$(cg_v2_root)
if [ -z "$v2" ] || [ ! -x "$EVICTD" ]; then
	echo "ok 1 # SKIP no writable cgroup v2 mount on this machine, or no $EVICTD"
	echo "1..1"
	exit 0
fi
rel="/evictd-identity-$$"
top="$v2$rel"
slice="$top/kubepods.slice"
low_uid=c0ffee00-1234-4abc-8def-0123456789ab
high_uid=7d9e2f10-3a4b-4c5d-8e6f-a1b2c3d4e5f6
bad_uid=0a0a0a0a-0b0b-4c0c-8d0d-0e0e0e0e0e0e
low="$slice/kubepods-besteffort.slice/kubepods-besteffort-pod${low_uid//-/_}.slice"
high="$slice/kubepods-besteffort.slice/kubepods-besteffort-pod${high_uid//-/_}.slice"
bad="$slice/kubepods-besteffort.slice/kubepods-besteffort-pod${bad_uid//-/_}.slice"
tmp=$(mktemp -d /tmp/evictd-identity-XXXXXX)
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
dpid=""
cleanup() {
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	cg_remove "$top"
	rm -rf "$tmp"
}
trap cleanup EXIT
populated() { cg_populated "$1"; }
spawn() {	# spawn CGROUP: a sleeping process in it
	mkdir -p "$1"
	sh -c "echo \$\$ > '$1/cgroup.procs'; exec sleep 300" &
	disown
}
pod() {	# pod UID NAME PRIORITY EXTRA-METADATA
	printf '{"metadata":{"uid":"%s","name":"%s","namespace":"t"%s},"spec":{"nodeName":"n1","priority":%d},"status":{"phase":"Running","qosClass":"BestEffort"}}' "$1" "$2" "$4" "$3"
}

long_name=$(printf 'b%.0s' $(seq 300))
forged=',"annotations":{"kubernetes.io/config.source":"file","kubernetes.io/config.hash":"'$high_uid'"}'
spawn "$low"; spawn "$high"; spawn "$bad"
sleep 0.3
printf '{"kind":"List","items":[%s,%s,%s]}\n' "$(pod $high_uid high 100000 '')" \
	"$(pod $bad_uid "$long_name" 0 '')" "$(pod $low_uid low 0 "$forged")" > "$tmp/pods.json"

"$EVICTD" --pods-file="$tmp/pods.json" --node-name=n1 --cgroup-root="$rel" --oom-guard=off \
	--eviction-hard="memory.available<$((mem_total + 1))" --housekeeping-interval=200ms \
	--state-dir="$tmp" --metrics-address=off --control-socket="$tmp/ctl.sock" --event-log=off --log-level=info >"$tmp/evictd.out" 2>"$tmp/evictd.err" &
dpid=$!
waited=0
while { populated "$low" || populated "$high"; } && [ $waited -lt 100 ]; do sleep 0.1; waited=$((waited + 1)); done
sleep 1	# several more evaluations: bad is no threshold's victim, and its line is not repeated

kills=$(grep -o 'kill: killing pod t/[a-z]* ' "$tmp/evictd.err" | awk '{print $4}' | tr '\n' ' ')
check "the priority-0 pod with config.source: file is evicted first, then the priority-100000 one" \
	[ "$kills" = "t/low t/high " ]
check "the pod over its buffer is refused alone, with one line" \
	[ "$(grep -c 'items\[1\].metadata.name: too long' "$tmp/evictd.err")" = 1 ]
check "the refused pod's cgroup is never a threshold's victim" populated "$bad"
check "nothing else was refused" [ "$(grep -c 'the rest of the list is kept' "$tmp/evictd.err")" = 1 ]
if [ "$kills" != "t/low t/high " ]; then
	echo "# kills: $kills"
	tail -n 20 "$tmp/evictd.err" | sed "s/^/# /"
fi
kill -TERM $dpid 2>/dev/null
wait $dpid 2>/dev/null
dpid=""
check "no sanitizer report (EVICTD=build/evictd-san)" \
	bash -c "! grep -qE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$tmp/evictd.err'"
done_testing
