#!/usr/bin/env bash
# A pod without metadata while the pod list naming it is being read (doc/DESIGN.md §5, "Pods
# without metadata"), on this host's real cgroup v2 tree, with --pods-file and a threshold that
# is always met: the list in force names "web" (Burstable, within its request); the pods file is
# rewritten to name a BestEffort "hog" too (with enough other nodes' pods that its parse
# outlasts the refresh's 50 ms inline wait), and both pods' cgroups appear at once. The hog has
# no metadata until that parse is swapped in, and a pod without metadata is never a threshold's
# victim: without the wait, web, the only known pod, was evicted first (the guest's 10-memory on
# a slow machine). With it, evictd waits for the list (at most POLICY_META_SETTLE_NS), and the
# hog, which the kubelet's ranking puts first, is evicted first.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTD=${EVICTD:-build/evictd}

. tests/cli/cgroups.sh
v2=$(cg_v2_root)
if [ -z "$v2" ] || [ ! -x "$EVICTD" ] || ! command -v python3 >/dev/null; then
	echo "1..0 # SKIP no writable cgroup v2 mount, no $EVICTD or no python3"
	exit 0
fi
rel="/evictd-settle-$$"
top="$v2$rel"
slice="$top/kubepods.slice"
web_uid=5e1f0000-0000-4000-8000-000000000001
hog_uid=5e1f0000-0000-4000-8000-000000000002
web="$slice/kubepods-burstable.slice/kubepods-burstable-pod${web_uid//-/_}.slice"
hog="$slice/kubepods-besteffort.slice/kubepods-besteffort-pod${hog_uid//-/_}.slice"
tmp=$(mktemp -d /tmp/evictd-settle-XXXXXX)
dpid=""
cleanup() {
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	cg_remove "$top"
	rm -rf "$tmp"
}
trap cleanup EXIT
populated() { cg_populated "$1"; }
spawn() {	# spawn CGROUP CMD...: CMD in it
	local cg=$1; shift
	mkdir -p "$cg"
	sh -c "echo \$\$ > '$cg/cgroup.procs'; exec \"\$@\"" sh "$@" >/dev/null 2>&1 &
	disown
}
# pods_file PADDING POD...: a PodList of the pods given and PADDING pods of other nodes.
pods_file() {
	python3 - "$@" <<'EOF'
import json, sys
pad = int(sys.argv[1])
def pod(uid, name, qos, node, req=None):
    c = {"name": "c", "resources": {"requests": {"memory": req}} if req else {}}
    return {"metadata": {"uid": uid, "name": name, "namespace": "t"},
            "spec": {"nodeName": node, "priority": 0, "containers": [c]},
            "status": {"phase": "Running", "qosClass": qos}}
known = {"web": pod("5e1f0000-0000-4000-8000-000000000001", "web", "Burstable", "n1", "96Mi"),
         "hog": pod("5e1f0000-0000-4000-8000-000000000002", "hog", "BestEffort", "n1")}
items = [known[n] for n in sys.argv[2:]]
items += [pod("%08x-0000-4000-8000-%012x" % (i, i), "pad-%d" % i, "BestEffort", "other-node")
          for i in range(pad)]
json.dump({"kind": "PodList", "apiVersion": "v1", "items": items}, sys.stdout)
EOF
}
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
pods_file 0 web >"$tmp/pods.json"
# The pods' cgroups exist from the start, empty (no process: no candidate, nothing unknown).
mkdir -p "$web" "$hog"
"$EVICTD" --no-bpf --node-name=n1 --cgroup-root="$rel" --pods-file="$tmp/pods.json" \
	--eviction-hard="memory.available<$((mem_total + 1))" --oom-guard=off --housekeeping-interval=200ms \
	--state-dir="$tmp/state" --control-socket="$tmp/evictd.sock" --metrics-address=off \
	--event-log=off --log-level=info >"$tmp/evictd.out" 2>"$tmp/evictd.err" &
dpid=$!
for _ in $(seq 50); do grep -q 'pods file .*: 1 pods' "$tmp/evictd.err" 2>/dev/null && break; sleep 0.1; done
check "evictd reads the first list (web; its cgroup is empty yet)" grep -q 'pods file .*: 1 pods' "$tmp/evictd.err"
pods_file 60000 web hog >"$tmp/pods.json.new"
mv "$tmp/pods.json.new" "$tmp/pods.json"
spawn "$hog" sleep 600
spawn "$web" sleep 600
for _ in $(seq 250); do [ "$(grep -cE ' evicted t/(hog|web) \(' "$tmp/evictd.err")" -ge 2 ] && break; sleep 0.1; done
first=$(grep -oE ' evicted t/(hog|web) \(' "$tmp/evictd.err" | head -1 | awk '{print $2}')
check "the hog (BestEffort, named by the list being read) is evicted first ($first)" [ "$first" = t/hog ]
check "evictd said it waited for the list being read" grep -q 'a newer pod list is being read: waiting up to' "$tmp/evictd.err"
check "web, known and within its request, only after it (the threshold is always met; after the hold for the memory the hog did not give back)" \
	grep -qE ' evicted t/web \(' "$tmp/evictd.err"
kill -TERM "$dpid" 2>/dev/null
wait "$dpid" 2>/dev/null
dpid=""
grep -E 'evicted|decision|pods file|waiting' "$tmp/evictd.err" | head -20 | sed 's/^/# /'
done_testing
