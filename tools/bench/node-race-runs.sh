# shellcheck shell=bash
# The node race's runs (tools/bench/node-race.sh), sourced by tests/cluster/test_node.sh as a
# scenario given by path, on a booted node in one configuration (the kubelet alone, or with
# evictd). For each rate in NODE_RACE_RATES (MiB/s), NODE_RACE_RUNS runs: a Deployment hog-rR-N
# whose one BestEffort pod allocates at that rate until something stops it (its ReplicaSet's
# replacement only sleeps: a hostPath remembers the first), beside NODE_RACE_INNOCENTS small
# Burstable pods that allocate nothing. A run ends when the hog's pod is Failed and its
# replacement exists (created: not yet running, to keep the runs short), or when its container
# was restarted in place (the kernel OOM killer), or
# after 300 s; the next starts on a calm node (no pressure condition or evictd taint).
# Recorded for tools/bench/node-race-analyze.py, in NODE_RACE_OUT:
#   meta.tsv              one line a run: id, rate, the hog pod's name and UID, host times
#                         (CLOCK_REALTIME, s) of apply, Running, end; innocents before/after
#   sampler-stamped.log   the guest's samples (node-sampler.sh, ttyS3), each line prefixed with
#                         the host's CLOCK_REALTIME when it arrived (the clock offset)
#   watch.log             the namespace's pods as a kubectl watch sees them, host-stamped
#   kubelet.log, evictd.log, hog.log, console.log   the node's logs (copied at the end; hog.log:
#                         memhog's progress lines, its achieved rate)
race_out=${NODE_RACE_OUT:?NODE_RACE_OUT: where the runs are recorded}
mkdir -p "$race_out"
: >"$race_out/meta.tsv"
make_namespace "$NS_S"
race_ns=$NS_S
main_pid=$$
# Host-stamp each line as it arrives: tail exits with this test (--pid), the loop at its EOF.
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
( tail -n +1 -F --pid="$main_pid" "$sampler_log" 2>/dev/null | stamp >"$race_out/sampler-stamped.log" ) &
_cluster_bg+=($!)
( while kill -0 "$main_pid" 2>/dev/null; do
	timeout 600 "$KUBEBIN" kubectl --kubeconfig "$ADMIN_KUBECONFIG" -n "$race_ns" get pods -w \
		-o jsonpath='{.metadata.name}|{.metadata.uid}|{.status.phase}|{.status.reason}|{.status.containerStatuses[0].restartCount}|{.status.containerStatuses[0].lastState.terminated.reason}|{.status.containerStatuses[0].state.terminated.reason}|{.metadata.creationTimestamp}{"\n"}' 2>/dev/null
	sleep 1
done | stamp >"$race_out/watch.log" ) &
_cluster_bg+=($!)

# The innocents: Burstable pods that allocate nothing (usage below their requests), which the
# kubelet's ranking puts after the BestEffort hog (eviction/helpers.go rankMemoryPressure) and
# the kernel's OOM killer scores below it (oom_score_adj from pkg/kubelet/qos/policy.go).
for n in $(seq "${NODE_RACE_INNOCENTS:-3}"); do
	cat <<-YAML
	---
	apiVersion: v1
	kind: Pod
	metadata: {name: innocent-$n, labels: {app: innocent}}
	spec:
	  nodeSelector: {kubernetes.io/hostname: $NODE}
	  containers:
	  - name: sleep
	    image: localhost/evictd-test/workload:1
	    imagePullPolicy: Never
	    command: ["/bin/sh", "-c", "exec sleep 100000"]
	    resources: {requests: {memory: 8Mi, cpu: 10m}, limits: {memory: 32Mi}}
	YAML
done | kc -n "$race_ns" apply -f - >/dev/null
innocents_up() { [ "$(kc -n "$race_ns" get pods -l app=innocent -o json | jq '[.items[] | select(.status.phase == "Running")] | length')" = "${NODE_RACE_INNOCENTS:-3}" ]; }
check "the innocent pods run" wait_guest 300 innocents_up
innocents() { kc -n "$race_ns" get pods -l app=innocent -o json | jq -r '[.items[] | "\(.metadata.name):\(.status.phase):\(.status.containerStatuses[0].restartCount)"] | join(",")'; }

race_run() { # RATE N
	local rate=$1 n=$2 id="r$1-$2" hog="" uid="" t_apply t_run t_end before after end
	node_calm || echo "# node-race $id: the node is not calm after 240 s: $(kc get node "$NODE" -o json | jq -c '[.spec.taints, [.status.conditions[] | select(.status == "True") | .type]]')"
	before=$(innocents)
	t_apply=$EPOCHREALTIME
	kc -n "$race_ns" apply -f - >/dev/null <<-YAML
	apiVersion: apps/v1
	kind: Deployment
	metadata: {name: hog-$id}
	spec:
	  replicas: 1
	  selector: {matchLabels: {app: hog-$id}}
	  template:
	    metadata: {labels: {app: hog-$id}}
	    spec:
	      nodeSelector: {kubernetes.io/hostname: $NODE}
	      terminationGracePeriodSeconds: 5
	      containers:
	      - name: hog
	        image: localhost/evictd-test/workload:1
	        imagePullPolicy: Never
	        command: ["/bin/sh", "-c", "if mkdir /state/hogged 2>/dev/null; then exec /usr/bin/memhog --rate $rate; else exec sleep 100000; fi"]
	        volumeMounts: [{name: state, mountPath: /state}]
	      volumes:
	      - name: state
	        hostPath: {path: /var/lib/evictd-race-$race_ns-$id, type: DirectoryOrCreate}
	YAML
	hog_up() {
		hog=$(kc -n "$race_ns" get pods -l "app=hog-$id" -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{end}' 2>/dev/null)
		[ -n "$hog" ]
	}
	if ! wait_guest 300 hog_up; then
		fail "node-race $id: the hog runs" "$(kc -n "$race_ns" describe pods -l "app=hog-$id" | tail -n 20; diag)"
		kc -n "$race_ns" delete deployment "hog-$id" --wait=false >/dev/null 2>&1
		return
	fi
	t_run=$EPOCHREALTIME
	uid=$(kc -n "$race_ns" get pod "$hog" -o jsonpath='{.metadata.uid}')
	# Failed in the API, or restarted in place (the kernel OOM killer; restartPolicy Always).
	hog_done() {
		local s
		s=$(kc -n "$race_ns" get pod "$hog" -o jsonpath='{.status.phase}/{.status.containerStatuses[0].restartCount}' 2>/dev/null)
		case $s in Failed/*|*/[1-9]*|"") return 0 ;; esac
		return 1
	}
	replaced() {
		[ -n "$(kc -n "$race_ns" get pods -l "app=hog-$id" -o json | jq -r --arg h "$hog" '.items[] | select(.metadata.name != $h) | .metadata.name')" ]
	}
	end=timeout
	if wait_guest 300 hog_done; then
		end=$(kc -n "$race_ns" get pod "$hog" -o jsonpath='{.status.phase}/{.status.reason}/{.status.containerStatuses[0].lastState.terminated.reason}' 2>/dev/null)
		case $end in Failed/*) wait_guest 180 replaced || end="$end/no-replacement" ;; esac
	fi
	t_end=$EPOCHREALTIME
	sleep 2	# the last samples
	after=$(innocents)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$rate" "$hog" "$uid" "$t_apply" "$t_run" "$t_end" \
		"$end" "$before" "$after" >>"$race_out/meta.tsv"
	echo "# node-race $id: $hog $end ($(awk -v a="$t_run" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }') s from Running to the end)"
	kc -n "$race_ns" delete deployment "hog-$id" --wait=false >/dev/null 2>&1
}

for rate in ${NODE_RACE_RATES:-50 200}; do
	for n in $(seq "${NODE_RACE_RUNS:-5}"); do race_run "$rate" "$n"; done
done
pass "node-race: $(wc -l <"$race_out/meta.tsv") runs recorded in $race_out"
sleep 3
cp "$kubelet_log" "$race_out/kubelet.log"
cp "$console" "$race_out/console.log"
grep -a "^evictd-system_" "$pod_logs" >"$race_out/evictd.log" 2>/dev/null || :
grep -a "^${race_ns}_hog-" "$pod_logs" >"$race_out/hog.log" 2>/dev/null || :
kc get node "$NODE" -o json >"$race_out/node.json"
kc -n "$race_ns" delete pods -l app=innocent --wait=false >/dev/null 2>&1
