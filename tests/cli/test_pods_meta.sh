#!/usr/bin/env bash
# A pod cgroup found before the pods-file entry naming it (doc/DESIGN.md §5, "Pods without
# metadata"), on this host's real cgroup v2 tree: a kubepods.slice under --cgroup-root with a
# BestEffort "hog" pod and a static "web" pod (never evicted). The pods file first lists only
# web: the hog is meta_unknown, no threshold takes it. Then the file names the hog too, with
# no change in the cgroup tree (no inotify event there): the daemon's next evaluation must take
# the new metadata and evict the hog, and only the hog. The threshold is always met
# (memory.available above MemTotal), so only candidacy decides; this host's v2 tree has no
# memory controller.
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
rel="/evictd-podsmeta-$$"
top="$v2$rel"
slice="$top/kubepods.slice"
hog_uid=c0ffee00-1234-4abc-8def-0123456789ab
web_uid=7d9e2f10-3a4b-4c5d-8e6f-a1b2c3d4e5f6
hog="$slice/kubepods-besteffort.slice/kubepods-besteffort-pod${hog_uid//-/_}.slice"
web="$slice/kubepods-burstable.slice/kubepods-burstable-pod${web_uid//-/_}.slice"
tmp=$(mktemp -d /tmp/evictd-podsmeta-XXXXXX)
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
pod() {	# pod UID NAME EXTRA-METADATA
	printf '{"metadata":{"uid":"%s","name":"%s","namespace":"t"%s},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}' "$1" "$2" "$3"
}
podlist() {	# podlist ITEMS...: written beside and renamed over the pods file
	local IFS=,
	printf '{"kind":"List","items":[%s]}\n' "$*" > "$tmp/pods.json.tmp" && mv "$tmp/pods.json.tmp" "$tmp/pods.json"
}

# A static pod as its mirror pod shows it: config.mirror (its cgroup's UID) and the kubelet's
# controller ownerReference to the Node (doc/DESIGN.md §5, "Pod identity").
static_web=$(pod $web_uid web ',"annotations":{"kubernetes.io/config.mirror":"'$web_uid'"},"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1","controller":true}]')
spawn "$hog"; spawn "$web"
sleep 0.3
podlist "$static_web"

"$EVICTD" --pods-file="$tmp/pods.json" --node-name=n1 --cgroup-root="$rel" --oom-guard=off \
	--eviction-hard="memory.available<$((mem_total + 1))" --housekeeping-interval=200ms \
	--state-dir="$tmp" --metrics-address=off --control-socket="$tmp/ctl.sock" --event-log=off --log-level=info >"$tmp/evictd.out" 2>"$tmp/evictd.err" &
dpid=$!
waited=0
until grep -q 'has no pod metadata' "$tmp/evictd.err" 2>/dev/null || [ $waited -ge 100 ]; do
	sleep 0.1; waited=$((waited + 1))
done
check "the hog's cgroup, not in the pods file, is without metadata" grep -q "cgroup $hog has no pod metadata" "$tmp/evictd.err"
sleep 1	# several evaluations: the unknown hog is no threshold's victim
if populated "$hog" && populated "$web" && kill -0 $dpid 2>/dev/null; then
	pass "nothing evicted while the hog is unknown and web is static"
else
	fail "nothing evicted while the hog is unknown and web is static" "$(tail -n 20 "$tmp/evictd.err")"
fi

# The entry naming the hog arrives; the cgroup tree does not change.
podlist "$static_web" "$(pod $hog_uid hog '')"
waited=0
while populated "$hog" && [ $waited -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
if ! populated "$hog"; then
	pass "once the pods file names it, the hog is evicted (after $((waited * 100)) ms)"
else
	fail "once the pods file names it, the hog is evicted" "$(tail -n 20 "$tmp/evictd.err")"
fi
check "the static web pod is untouched" populated "$web"
check "the hog was the only pod evicted" [ "$(grep -c 'kill: killing pod' "$tmp/evictd.err")" = 1 ]
check "the eviction named t/hog" grep -q "kill: killing pod t/hog " "$tmp/evictd.err"
kill -TERM $dpid 2>/dev/null
wait $dpid 2>/dev/null
dpid=""
check "no sanitizer report (EVICTD=build/evictd-san)" \
	bash -c "! grep -qE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$tmp/evictd.err'"
done_testing
