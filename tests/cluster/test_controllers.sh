#!/usr/bin/env bash
# evictd's evictions and taints against the real controllers (tests/cluster: kube-controller-
# manager with every controller, kube-scheduler): evictd runs for real (no --dry-run, --no-bpf),
# its ServiceAccount token bound to the Node, --kube-pressure-taints on. Its thresholds come from
# a --config file the test rewrites (then SIGHUP): a hard memory.available threshold that is
# always met while "on" and never while "off", and in a, a pid.available threshold that a pod
# crosses by itself (the pressure arises and ends with no reload, as on a real node).
#
# No kubelet runs on this host: the host's cgroup v2 tree has no memory controller, which a
# real kubelet (and its container runtime) needs for every pod; the next issue brings one in a
# guest. So a stand-in plays the kubelet's cgroup part only: for every pod the API binds to the
# node it makes the pod cgroup (kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice
# below --cgroup-root) with a sleeping process in it, kills and removes it when the pod is
# terminal, gone or being deleted, and finishes a deletion (DELETE with grace 0 and the uid
# precondition, as the kubelet's status manager does). It writes no pod status: the pods stay
# Pending as far as the API knows, which no controller here looks at. The Nodes are Node objects
# kept Ready by node_heartbeat (Lease and Ready condition every 10 s, as their own identity); a
# second node, with no pod of the test, keeps the cluster out of the node lifecycle
# controller's "all nodes not ready" disruption mode in d.
#
#  a. ReplicaSet: a Deployment's pod, placed by the scheduler, starts 2,000 threads: evictd
#     evicts it on pid.available (Failed/Evicted with DisruptionTarget, the Event) and taints
#     the node evictd.io/pid-pressure; the ReplicaSet controller's replacement stays Pending
#     (FailedScheduling: 1.34's message says "untolerated taint(s)" without naming it) while the
#     taint holds and is placed after it goes; the ORDER on the server (the audit log): the taint
#     PATCH before the pods/status PATCH, else the replacement lands on the pressured node.
#  b. Job (Indexed, podFailurePolicy Ignore on DisruptionTarget, podReplacementPolicy Failed):
#     one pod evicted (memory), not counted as a failure, its index replaced only once it is
#     Failed, never two pods of one index non-terminal at once.
#  c. DaemonSet created while the taint holds: the controller makes no pod; evictd lifts its
#     taint for the hole (kube/report_holes.c), the pod is created and bound, the taint returns.
#  d. Node lifecycle controller: the heartbeat stopped, the node goes Unknown and gets the
#     node.kubernetes.io/unreachable taints; evictd's taint is left alone by the controller and
#     evictd leaves the controller's taints alone, both ways.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
. tests/cli/cgroups.sh
. tests/cluster/lib.sh
EVICTD=${EVICTD:-build/evictd}
tpids=()
jqtest() { jq -e "$@" >/dev/null; }

v2=$(cg_v2_root)
if [ -z "$v2" ] || [ ! -x "$EVICTD" ] || ! command -v jq >/dev/null || ! command -v curl >/dev/null; then
	echo "ok 1 # SKIP needs a writable cgroup v2 mount, $EVICTD, jq and curl"
	echo "1..1"
	exit 0
fi

# The node lifecycle controller marks a node Unknown after --node-monitor-grace-period (50 s by
# default in 1.34). A control plane of our own gets a shorter one: node_heartbeat renews every
# ~10 s and the controller looks every second, so 20 s does not flap. KCM_EXTRA_ARGS is read
# only when the control plane starts: on the suite's control plane d is skipped.
own_cluster=""
if [ -z "${CLUSTER_DIR:-}" ]; then
	own_cluster=1
	KCM_EXTRA_ARGS="${KCM_EXTRA_ARGS:-} --node-monitor-grace-period=20s --node-monitor-period=1s"
fi
cluster_begin

node=ctl-n1
node2=ctl-n2
ns=ctl
rel="/evictd-controllers-$$"
top="$v2$rel"
kubelet_pid=""
poller_pid=""
cleanup() {
	local p
	for p in "${tpids[@]}"; do
		for c in $(pgrep -P "$p"); do kill -KILL "$c" 2>/dev/null; done
		kill -KILL "$p" 2>/dev/null
	done
	for p in $kubelet_pid $poller_pid; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	cg_remove "$top"
	kc delete namespace "$ns" --wait=false >/dev/null 2>&1
	cluster_end
}
trap cleanup EXIT

# api METHOD PATH [BODY]: the API as the cluster admin (curl: cheaper than kubectl in a poll).
# as_node METHOD PATH [BODY]: as the node identity system:node:$node (the kubelet's).
as_node() {
	curl -sf --cacert "$CA" --cert "$CLUSTER_DIR/pki/node-$node.crt" --key "$CLUSTER_DIR/pki/node-$node.key" \
		-X "$1" ${3:+-H 'Content-Type: application/json' --data "$3"} "$API$2"
}

check "kubectl apply -k tools/deploy on the real apiserver" deploy_evictd
check "a Node registered by its own identity (system:node:$node)" make_node "$node"
node_heartbeat "$node"
heartbeat_pid=${_cluster_bg[-1]}
check "a second Node, Ready, for no pod of the test ($node2)" make_node "$node2"
node_heartbeat "$node2"
check "a namespace with its default ServiceAccount" make_namespace "$ns"
evictd_token "$node" >"$tmp/token"
check "a token of evictd's ServiceAccount bound to the Node" test -s "$tmp/token"

# ---- the stand-in for the kubelet's cgroup part (see the header for why) ----------------------
pod_cg() { # QOS UID: the pod cgroup the kubelet's systemd driver makes
	local u=${2//-/_}
	case $1 in
	Guaranteed) echo "$top/kubepods.slice/kubepods-pod$u.slice" ;;
	Burstable) echo "$top/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$u.slice" ;;
	*) echo "$top/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod$u.slice" ;;
	esac
}
cg_gone() { # CG: kill and remove it (again on the next pass while it is not empty yet)
	[ -d "$1" ] || return 0
	echo 1 >"$1/cgroup.kill" 2>/dev/null
	rmdir "$1" 2>/dev/null
	return 0
}
stand_in_kubelet() {
	local uid qos phase deleting pod_ns name cg
	declare -A made=()
	declare -A live
	while :; do
		if ! as_node GET "/api/v1/pods?fieldSelector=spec.nodeName%3D$node" >"$tmp/kubelet-pods.json"; then
			sleep 0.3
			continue
		fi
		live=()
		while IFS=$'\t' read -r uid qos phase deleting pod_ns name; do
			live[$uid]=1
			cg=$(pod_cg "$qos" "$uid")
			if [ "$deleting" = true ]; then
				cg_gone "$cg"
				[ -d "$cg" ] || as_node DELETE "/api/v1/namespaces/$pod_ns/pods/$name" \
					"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"$uid\"}}" >/dev/null
			elif [ "$phase" = Failed ] || [ "$phase" = Succeeded ]; then
				cg_gone "$cg"
			elif [ -z "${made[$uid]:-}" ]; then
				made[$uid]=$cg
				mkdir -p "$cg"
				(sh -c 'echo $$ >"$1/cgroup.procs" && exec sleep 3600' sh "$cg" &)	# not our job: no "Killed" notices
				echo "$(date +%T.%N) started $pod_ns/$name ($uid) in $cg" >>"$tmp/kubelet.log"
			fi
		done < <(jq -r '.items[] | [.metadata.uid, (.status.qosClass // "BestEffort"), (.status.phase // "Pending"),
			(.metadata.deletionTimestamp != null), .metadata.namespace, .metadata.name] | @tsv' "$tmp/kubelet-pods.json")
		for uid in "${!made[@]}"; do
			[ -n "${live[$uid]:-}" ] || cg_gone "${made[$uid]}"
		done
		sleep 0.25
	done
}
mkdir -p "$top"
stand_in_kubelet &
kubelet_pid=$!

# ---- evictd ----------------------------------------------------------------------------------

mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
# thresholds MEMORY [PID-THRESHOLD [TRANSITION]]: MEMORY on (memory.available below all of
# memory: always met) or off (below 1Ki: never); pid.available below PID-THRESHOLD when given;
# the pressure transition period (default 3 s). A running evictd re-reads it on SIGHUP.
thresholds() {
	local mem=1Ki
	[ "$1" = on ] && mem=$((mem_total + 1))
	{
		printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
		printf 'evictionPressureTransitionPeriod: %s\nevictionHard:\n  memory.available: "%s"\n' "${3:-3s}" "$mem"
		[ -n "${2:-}" ] && printf '  pid.available: "%s"\n' "$2"
	} >"$tmp/evictd.yaml"
	[ -n "${dpid:-}" ] && kill -HUP "$dpid"
	return 0
}
pressure() { thresholds "$1"; }
pods_cert=()
if "$EVICTD" --help 2>&1 | grep -q -- '--kube-pods-client-cert'; then
	# The kubelet's client certificate for the pod list and watch: cert and key in one PEM.
	cat "$CLUSTER_DIR/pki/node-$node.crt" "$CLUSTER_DIR/pki/node-$node.key" >"$tmp/node.pem"
	pods_cert=("--kube-pods-client-cert=$tmp/node.pem")
fi
mport=$(free_port)
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
is_ready() { test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/readyz")" = 200; }
listed() { local v; v=$(metric evictd_kube_pods_listed); [ "${v:-0}" -ge 1 ] 2>/dev/null; }
elog=$tmp/evictd.err
pressure off
start evictd "$EVICTD" EVICTD_TEST_KUBE_RELIST_SPREAD_MS=1500 -- --no-bpf --profile=kubernetes \
	--node-name "$node" --cgroup-root="$rel" --static-pod-path= --oom-guard=off \
	--housekeeping-interval=500ms --config "$tmp/evictd.yaml" \
	--kube-api-server "$API" --kube-token-file "$tmp/token" --kube-ca-file "$CA" "${pods_cert[@]}" \
	--kube-pressure-taints --state-dir="$tmp/state" --metrics-address "127.0.0.1:$mport" \
	--control-socket "$tmp/evictd.sock" --event-log "$tmp/decisions.jsonl" --log-level=info
check "evictd (for real, --no-bpf) is ready: this node's pods listed and watched${pods_cert[*]:+, with the node certificate}" \
	wait_for 30 eval 'is_ready && listed'

# ---- helpers on the real objects ---------------------------------------------------------------
taints() { kc get node "$node" -o json | jq -c '[.spec.taints[]? | "\(.key):\(.effect)"]'; }
has_taint() { taints | jq -e --arg t "$1" 'index($t) != null' >/dev/null; }
no_taint() { ! has_taint "$1"; }
show_taints() { echo "# taints on $node ($1): $(taints)"; }
EVT=evictd.io/memory-pressure:NoSchedule
PVT=evictd.io/pid-pressure:NoSchedule
UNR_NS=node.kubernetes.io/unreachable:NoSchedule
UNR_NE=node.kubernetes.io/unreachable:NoExecute
pod_json() { kc -n "$ns" get pod "$1" -o json 2>/dev/null; }
evicted() { # POD: Failed/Evicted with DisruptionTarget True, as the kubelet writes it
	pod_json "$1" | jqtest '.status.phase == "Failed" and .status.reason == "Evicted" and
		any(.status.conditions[]?; .type == "DisruptionTarget" and .status == "True" and .reason == "TerminationByKubelet")'
}
# pods_of SELECTOR: "name phase nodeName" lines, oldest first
pods_of() {
	kc -n "$ns" get pods -l "$1" -o json |
		jq -r '.items | sort_by(.metadata.creationTimestamp, .metadata.name)[] | "\(.metadata.name) \(.status.phase) \(.spec.nodeName // "-")"'
}
bound_here() { pod_json "$1" | jqtest --arg n "$node" '.spec.nodeName == $n'; }
cg_of_pod() { local j; j=$(pod_json "$1"); pod_cg "$(jq -r '.status.qosClass // "BestEffort"' <<<"$j")" "$(jq -r .metadata.uid <<<"$j")"; }
running_here() { bound_here "$1" && cg_populated "$(cg_of_pod "$1")"; }	# bound, and the stand-in runs it
not_running() { ! cg_populated "$(cg_of_pod "$1")"; }
# evictd's writes in the audit log, in the order the server completed them: "verb uri code"
evictd_writes() { audit "$EVICTD_SA" 'select(.verb != "get" and .verb != "list" and .verb != "watch") | "\(.verb) \(.uri) \(.code)"' | tr -d '"'; }
line_of() { grep -n -m1 -E "$1" | cut -d: -f1; }
# stamps_of VERB URI: the stageTimestamp of each of evictd's requests VERB URI
stamps_of() {
	jq -r --arg u "$EVICTD_SA" --arg v "$1" --arg uri "$2" \
		'select(.stage == "ResponseComplete" and .user.username == $u and .verb == $v and .requestURI == $uri) | .stageTimestamp' \
		"$CLUSTER_DIR/audit.log"
}
events_of() { # POD REASON: the messages of the Events about POD with REASON
	kc -n "$ns" get events -o json | jq -r --arg p "$1" --arg r "$2" '.items[] | select(.involvedObject.name == $p and .reason == $r) | .message'
}
scheduled_at() { # POD: the scheduler's Scheduled event time (microseconds)
	kc -n "$ns" get events -o json |
		jq -r --arg p "$1" '[.items[] | select(.involvedObject.name == $p and .reason == "Scheduled")][0].eventTime // empty'
}
before() { [ -n "$1" ] && [ -n "$2" ] && [[ "$1" < "$2" ]]; }	# two RFC 3339 UTC times
no_besteffort_running() { # none of the test's pods runs (evictd's own DaemonSet pod is Burstable)
	local cg
	for cg in "$top"/kubepods.slice/kubepods-besteffort.slice/*/; do
		[ -d "$cg" ] && cg_populated "$cg" && return 1
	done
	return 0
}

# ============ a. ReplicaSet ===========================================================================
kc -n "$ns" create -f - >/dev/null <<EOF2
{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
  "template": {"metadata": {"labels": {"app": "web"}},
   "spec": {"nodeSelector": {"kubernetes.io/hostname": "$node"}, "terminationGracePeriodSeconds": 5,
    "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}}}
EOF2
web_here() { pods_of app=web | awk -v n="$node" '$3 == n {print $1; exit}'; }
has_web() { test -n "$(web_here)"; }
wait_for 30 has_web
web1=$(web_here)
check "a: the scheduler placed the Deployment's pod on $node (${web1:-none})" test -n "$web1"
check "a: the stand-in runs it in its pod cgroup" wait_for 10 running_here "$web1"
# pid.available: min(pid_max, threads-max) - the node's tasks (/proc/loadavg), as evictd reads
# it. The threshold sits 1,000 tasks below it, and the pod adds 2,000 threads. The condition is
# held 10 s after the pressure ends (the transition period) to watch the replacement meanwhile.
limit=$(( $(cat /proc/sys/kernel/pid_max) < $(cat /proc/sys/kernel/threads-max) ? $(cat /proc/sys/kernel/pid_max) : $(cat /proc/sys/kernel/threads-max) ))
pid_avail=$(( limit - $(awk '{split($4, a, "/"); print a[2]}' /proc/loadavg) ))
thresholds off $((pid_avail - 1000)) 10s
wait_for 10 grep -q 'SIGHUP: configuration reloaded, 2 thresholds' "$elog"
wait_for 10 listed
sleep 2	# the reload's pod list is in: what follows is a running evictd meeting a new pressure
show_taints "before"
writes0=$(evictd_writes | wc -l)
web1_cg=$(cg_of_pod "$web1")
(/usr/bin/python3 - "$web1_cg" <<'EOF2' &
import os, sys, threading, time
with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
threading.stack_size(65536)
stop = threading.Event()
for _ in range(2000):
    threading.Thread(target=stop.wait, daemon=True).start()
time.sleep(3600)
EOF2
)
check "a: evictd evicted it on pid.available: Failed, reason Evicted, DisruptionTarget (TerminationByKubelet)" \
	wait_for 20 evicted "$web1"
check "a: its cgroup was killed (cgroup.kill), the 2,000 threads with it" wait_for 5 not_running "$web1"
grep -E 'evicted ctl/web' "$elog" | head -1 | sed 's/^/# /'
only_pvt() { test "$(taints)" = "[\"$PVT\"]"; }
check "a: evictd tainted the node $PVT (its only taint)" wait_for 5 only_pvt
show_taints "under pressure"
first_repl() { pods_of app=web | awk -v o="$web1" '$1 != o {print $1; exit}'; }
has_repl() { test -n "$(first_repl)"; }
check "a: the ReplicaSet controller created a replacement" wait_for 10 has_repl
web2=$(first_repl)
ev_evicted() { events_of "$web1" Evicted | grep -q '^The node was low on resource: pids'; }
check "a: the Event on the evicted pod: reason Evicted, the kubelet's message" wait_for 10 ev_evicted
evictd_writes | tail -n +"$((writes0 + 1))" >"$tmp/writes-a.txt"
l_taint=$(line_of "^patch /api/v1/nodes/$node 200" <"$tmp/writes-a.txt")
l_status=$(line_of "^patch /api/v1/namespaces/$ns/pods/$web1/status 200" <"$tmp/writes-a.txt")
l_event=$(line_of "^create /api/v1/namespaces/$ns/events 201" <"$tmp/writes-a.txt")
taint_at=$(stamps_of patch "/api/v1/nodes/$node" | head -1)
status_at=$(stamps_of patch "/api/v1/namespaces/$ns/pods/$web1/status" | head -1)
web2_bound=$(scheduled_at "$web2")
echo "# evictd's writes as the server completed them (audit log): $(head -3 "$tmp/writes-a.txt" | tr '\n' ';')"
echo "# pods/status PATCH $status_at, taint PATCH $taint_at; the replacement $web2 bound ${web2_bound:-not yet}"
check "a: the audit log has the taint PATCH (#${l_taint:-none}), the pods/status PATCH (#${l_status:-none}), the Event (#${l_event:-none})" \
	test -n "$l_taint" -a -n "$l_status" -a -n "$l_event"
# The pod is Failed, so the ReplicaSet controller replaces it at once: a taint that comes after
# the status lets the scheduler put the replacement back on the node it was evicted from.
check "a: ORDER on the server: the taint PATCH before the pods/status PATCH" test "${l_taint:-99}" -lt "${l_status:-0}"
check "a: the pods/status PATCH before the Event (the status first: a soft kill is held for it)" \
	test "${l_status:-99}" -lt "${l_event:-0}"
check "a: the replacement $web2 was kept off the pressured node (Scheduled: ${web2_bound:-no})" eval '! bound_here "$web2"'
# The scheduler's reason (1.34 does not name the taint: "1 node(s) had untolerated taint(s)").
failed_sched() { events_of "$web2" FailedScheduling | grep -q 'untolerated taint'; }
check "a: FailedScheduling on the replacement: untolerated taint(s)" wait_for 5 failed_sched
events_of "$web2" FailedScheduling | head -1 | sed 's/^/# FailedScheduling: /'
check "a: evictd removed its taint after the 10 s transition period" wait_for 20 no_taint "$PVT"
check "a: the scheduler then placed the replacement on $node" wait_for 20 bound_here "$web2"
untaint_at=$(stamps_of patch "/api/v1/nodes/$node" | tail -1)
web2_bound=$(scheduled_at "$web2")
check "a: bound ($web2_bound) after evictd removed its taint ($untaint_at)" before "$untaint_at" "$web2_bound"
check "a: the stand-in runs it" wait_for 10 running_here "$web2"
echo "# the Deployment's pods: $(pods_of app=web | tr '\n' ';')"
thresholds off	# no pid threshold from here on: the host's own task count moves

# ============ b. Job ==================================================================================
# Only the Job's pods are evictable: the Deployment goes (the stand-in finishes its pods' deletion).
kc -n "$ns" scale deployment web --replicas=0 >/dev/null
check "b: the Deployment scaled to 0, its pod gone from the node" wait_for 30 no_besteffort_running
kc -n "$ns" create -f - >/dev/null <<EOF2
{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch"},
 "spec": {"completions": 2, "parallelism": 2, "completionMode": "Indexed", "backoffLimit": 0,
  "podReplacementPolicy": "Failed",
  "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
  "template": {"spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": "$node"},
   "terminationGracePeriodSeconds": 5,
   "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}}}
EOF2
job_pods_running() {
	local p n=0
	for p in $(pods_of batch.kubernetes.io/job-name=batch | awk '{print $1}'); do running_here "$p" && n=$((n + 1)); done
	[ "$n" = 2 ]
}
check "b: the Job's two pods (indexes 0 and 1) placed on $node and running" wait_for 30 job_pods_running
# The poll: per index, the pods not terminal (phase neither Succeeded nor Failed), and the Job's
# status.failed and conditions, every 0.2 s while the scenario runs.
job_poll() {
	while :; do
		api GET "/api/v1/namespaces/$ns/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3Dbatch" >"$tmp/jp.json" &&
			api GET "/apis/batch/v1/namespaces/$ns/jobs/batch" >"$tmp/jj.json" &&
			jq -c -n --slurpfile p "$tmp/jp.json" --slurpfile j "$tmp/jj.json" '
				{t: (now | todate),
				 live: ($p[0].items | map(select(.status.phase != "Succeeded" and .status.phase != "Failed"))
					| group_by(.metadata.labels["batch.kubernetes.io/job-completion-index"])
					| map({key: .[0].metadata.labels["batch.kubernetes.io/job-completion-index"], value: length}) | from_entries),
				 pods: ($p[0].items | map("\(.metadata.labels["batch.kubernetes.io/job-completion-index"]):\(.metadata.name):\(.status.phase)")),
				 failed: ($j[0].status.failed // 0),
				 conditions: [$j[0].status.conditions[]? | select(.status == "True") | .type]}' >>"$tmp/job-poll.jsonl"
		sleep 0.2
	done
}
job_poll &
poller_pid=$!
sleep 1
pressure on
job_evicted() {
	local p
	for p in $(pods_of batch.kubernetes.io/job-name=batch | awk '{print $1}'); do evicted "$p" && { echo "$p"; return 0; }; done
	return 1
}
has_job_evicted() { job_evicted >/dev/null; }
check "b: evictd evicted a Job pod (Failed/Evicted, DisruptionTarget)" wait_for 20 has_job_evicted
# One eviction is the scenario: the threshold off again at once (the hold after a kill that gave
# no memory back keeps a second one away meanwhile). The taint stays 3 s more.
pressure off
victim=$(job_evicted)
vindex=$(pod_json "$victim" | jq -r '.metadata.labels["batch.kubernetes.io/job-completion-index"]')
echo "# evicted $victim, index $vindex; taints $(taints)"
index_pods() { kc -n "$ns" get pods -l "batch.kubernetes.io/job-name=batch,batch.kubernetes.io/job-completion-index=$vindex" -o name | wc -l; }
has_index_repl() { [ "$(index_pods)" -ge 2 ]; }
check "b: the Job controller created a replacement for index $vindex" wait_for 20 has_index_repl
vrepl=$(kc -n "$ns" get pods -l "batch.kubernetes.io/job-name=batch,batch.kubernetes.io/job-completion-index=$vindex" -o json |
	jq -r --arg v "$victim" '[.items[] | select(.metadata.name != $v)][0].metadata.name')
check "b: the replacement ($vrepl) runs on $node" wait_for 30 running_here "$vrepl"
sleep 1
kill -TERM "$poller_pid" 2>/dev/null; wait "$poller_pid" 2>/dev/null; poller_pid=""
n_evicted=$(for p in $(pods_of batch.kubernetes.io/job-name=batch | awk '{print $1}'); do evicted "$p" && echo "$p"; done | wc -l)
check "b: one Job pod evicted, not both ($n_evicted)" test "$n_evicted" = 1
check "b: the poll ran through the scenario ($(wc -l <"$tmp/job-poll.jsonl") samples)" test "$(wc -l <"$tmp/job-poll.jsonl")" -ge 10
check "b: never two pods of one index non-terminal at once: the replacement came after the evicted pod was Failed" \
	jqtest -s 'all(.[]; all(.live[]; . <= 1))' "$tmp/job-poll.jsonl"
jq -s -r 'map(select(any(.live[]; . > 1)))[:3][] | "# two at once: \(.)"' "$tmp/job-poll.jsonl"
check "b: the eviction is not a failure: status.failed stayed 0 in every sample" jqtest -s 'all(.[]; .failed == 0)' "$tmp/job-poll.jsonl"
check "b: the Job never became Failed (no Failed or FailureTarget condition)" \
	jqtest -s 'all(.[]; (.conditions | index("Failed") == null and index("FailureTarget") == null))' "$tmp/job-poll.jsonl"
job_active_2() { api GET "/apis/batch/v1/namespaces/$ns/jobs/batch" | jqtest '.status.active == 2 and (.status.failed // 0) == 0'; }
check "b: the Job counts 2 active pods again, 0 failed" wait_for 10 job_active_2
jq -r '"# pods at the end: \(.pods)"' "$tmp/job-poll.jsonl" | tail -1

# ============ c. DaemonSet hole ======================================================================
# Nothing evictable on the node (the DaemonSet below is system-node-critical: evictd, as the kubelet,
# never evicts it), then the pressure and its taint, then the DaemonSet.
kc -n "$ns" delete job batch --wait=false >/dev/null
kc -n "$ns" delete deployment web --wait=false >/dev/null
check "c: the node emptied of the test's pods" wait_for 30 no_besteffort_running
node_patches0=$(stamps_of patch "/api/v1/nodes/$node" | wc -l)
pressure on
check "c: under pressure, evictd's taint is on" wait_for 10 has_taint "$EVT"
kc -n "$ns" create -f - >/dev/null <<EOF2
{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
 "spec": {"selector": {"matchLabels": {"app": "agent"}},
  "template": {"metadata": {"labels": {"app": "agent"}},
   "spec": {"nodeSelector": {"kubernetes.io/hostname": "$node"}, "priorityClassName": "system-node-critical",
    "terminationGracePeriodSeconds": 5,
    "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}
EOF2
sleep 3
ds_status() { kc -n "$ns" get daemonset agent -o json | jq -c '{desired: .status.desiredNumberScheduled, current: .status.currentNumberScheduled}'; }
agent_pods() { kc -n "$ns" get pods -l app=agent -o name | wc -l; }
check "c: the DaemonSet controller makes no pod while evictd's taint holds ($(ds_status), $(agent_pods) pods)" \
	test "$(agent_pods)" = 0
# evictd lists the DaemonSets when it sets the taint and every 30 s (+ up to 20 %).
check "c: evictd lifts its taints for DaemonSet $ns/agent (within its 30-36 s check)" \
	wait_for 45 grep -q "lifting evictd's pressure taints.*DaemonSet $ns/agent" "$elog"
agent_pod() { kc -n "$ns" get pods -l app=agent -o json | jq -r '.items[0].metadata.name // empty'; }
agent_here() { local p; p=$(agent_pod); [ -n "$p" ] && running_here "$p"; }
check "c: the DaemonSet controller created its pod; bound to $node; running" wait_for 20 agent_here
check "c: evictd saw it land and put the taint back" \
	wait_for 10 grep -q "DaemonSet $ns/agent has its pod here; the pressure taints go back" "$elog"
check "c: the node carries $EVT again" wait_for 10 has_taint "$EVT"
check "c: one lift counted (evictd_kube_pressure_taint_lifted_total)" test "$(metric evictd_kube_pressure_taint_lifted_total)" = 1
stamps_of patch "/api/v1/nodes/$node" | tail -n +"$((node_patches0 + 1))" >"$tmp/patches-c.txt"
agent_bound=$(scheduled_at "$(agent_pod)")
echo "# evictd's node PATCHes in c: $(tr '\n' ' ' <"$tmp/patches-c.txt"); the daemon pod bound $agent_bound"
check "c: the audit log: taint on, off for the hole, on again (3 node PATCHes)" test "$(wc -l <"$tmp/patches-c.txt")" = 3
check "c: the pod was bound while the hole was open" \
	eval 'before "$(sed -n 2p "$tmp/patches-c.txt")" "$agent_bound" && before "$agent_bound" "$(sed -n 3p "$tmp/patches-c.txt")"'
echo "# the daemon pod's tolerations (the DaemonSet controller's): $(pod_json "$(agent_pod)" | jq -c '[.spec.tolerations[]? | "\(.key):\(.effect)"]')"
check "c: it stays under the pressure (system-node-critical: never evicted)" running_here "$(agent_pod)"
show_taints "after the hole"

# ============ d. node lifecycle controller ============================================================
grace=""
if [ -n "$own_cluster" ]; then
	grace=20
else
	grace=$(tr '\0' '\n' <"/proc/$(cat "$CLUSTER_DIR/kube-controller-manager.pid" 2>/dev/null)/cmdline" 2>/dev/null |
		sed -n 's/^--node-monitor-grace-period=\([0-9]*\)s$/\1/p')
fi
if [ -z "$grace" ] || [ "$grace" -gt 25 ]; then
	tap_count=$((tap_count + 1))
	echo "ok $tap_count # SKIP d: this control plane's kube-controller-manager marks a node unreachable only after its default --node-monitor-grace-period (50 s); run this test alone for d"
else
	kill -TERM "$heartbeat_pid" 2>/dev/null
	echo "# d: the heartbeat of $node stopped at $(date -u +%T) (grace ${grace}s)"
	unknown() { kc get node "$node" -o json | jqtest 'any(.status.conditions[]; .type == "Ready" and .status == "Unknown")'; }
	check "d: the node lifecycle controller marks the node Ready=Unknown" wait_for $((grace + 20)) unknown
	unreachable() { has_taint "$UNR_NS" && has_taint "$UNR_NE"; }
	check "d: and taints it $UNR_NS and $UNR_NE" wait_for 10 unreachable
	show_taints "unreachable"
	check "d: the controller left evictd's taint alone" has_taint "$EVT"
	pressure off
	check "d: the pressure gone, evictd removes its own taint" wait_for 15 no_taint "$EVT"
	show_taints "evictd's removed"
	check "d: evictd left the controller's unreachable taints alone" unreachable
	pressure on
	check "d: the pressure back, evictd adds its taint beside them" wait_for 10 has_taint "$EVT"
	check "d: the unreachable taints still there" unreachable
	show_taints "evictd's back"
	node_heartbeat "$node"
	ready() { kc get node "$node" -o json | jqtest 'any(.status.conditions[]; .type == "Ready" and .status == "True")'; }
	check "d: the heartbeat back: the node is Ready again" wait_for 30 ready
	reachable() { no_taint "$UNR_NS" && no_taint "$UNR_NE"; }
	check "d: the controller removed its unreachable taints" wait_for 20 reachable
	show_taints "Ready again"
	check "d: and left evictd's taint alone" has_taint "$EVT"
	check "d: evictd's node PATCHes all succeeded (a 409 is retried, nothing else refused)" \
		test -z "$(audit "$EVICTD_SA" 'select(.verb == "patch" and (.uri | startswith("/api/v1/nodes/")) and .code != 200 and .code != 409)')"
fi

stop "${tpids[-1]}"
check "evictd exited 0" test "$rc" = 0
check "no sanitizer or crash report" no_sanitizer_report "$elog"
check "evictd's account wrote only pods/status in $ns, Events and its own Node" \
	test -z "$(audit "$EVICTD_SA" 'select(.verb != "get" and .verb != "list" and .verb != "watch") | select((.uri | test("^/api/v1/(namespaces/'"$ns"'/pods/[^/]+/status|namespaces/[^/]+/events(/[^/]+)?|nodes/'"$node"')$")) | not)')"
echo "# $SECONDS s"
done_testing
