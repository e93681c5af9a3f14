# shellcheck shell=bash
# The demo's scenario, sourced by tests/cluster/test_node.sh on the booted node (make demo,
# tools/demo/demo.sh): a Deployment whose pod leaks memory (BestEffort: no requests, no
# limits) beside a small well-behaved pod; evictd evicts the leaking pod when the node's
# memory.available falls below its shipped hard threshold (500Mi, tools/deploy/configmap.yaml),
# reports it to the API as the kubelet does (Failed/Evicted, a Warning Evicted event), and the
# ReplicaSet replaces it. Prints the commands an operator runs and what they show, on fd 3.
out() { printf '%s\n' "$*" >&3; }
heading() { printf '\n==== %s ====\n' "$*" >&3; }
# k ARGS: kubectl as the cluster admin, the command shown first
k() { printf '$ kubectl %s\n' "$*" >&3; kc "$@" >&3 2>&1; }
fail_demo() { out "demo: $1"; fail "demo: $1" "$(diag)"; }

make_namespace "$NS_S"
demo_ns=$NS_S
heading "The node (a QEMU guest) and evictd on it"
k get nodes -o wide
k -n evictd-system get pods -o wide

heading "A pod that leaks memory, and a quiet neighbour"
# The leaking container allocates 50 MiB/s until it is stopped. Its ReplicaSet's replacement
# would leak again: a hostPath on the node remembers that the first one ran, and the
# replacement only sleeps.
cat >"$tmp/demo.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: leaky}
spec:
  replicas: 1
  selector: {matchLabels: {app: leaky}}
  template:
    metadata: {labels: {app: leaky}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: leaky
        image: localhost/evictd-test/workload:1
        imagePullPolicy: Never
        command: ["/bin/sh", "-c", "if mkdir /state/leaked 2>/dev/null; then exec /usr/bin/memhog --rate 50; else exec sleep 3600; fi"]
        volumeMounts: [{name: state, mountPath: /state}]
      volumes:
      - name: state
        hostPath: {path: /var/lib/evictd-demo-$demo_ns, type: DirectoryOrCreate}
---
apiVersion: v1
kind: Pod
metadata: {name: quiet}
spec:
  containers:
  - name: quiet
    image: localhost/evictd-test/workload:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exec sleep 3600"]
    resources:
      requests: {memory: 16Mi, cpu: 10m}
      limits: {memory: 16Mi}
YAML
out "\$ kubectl -n $demo_ns apply -f - <<EOF"
sed 's/^/  /' "$tmp/demo.yaml" >&3
out "EOF"
kc -n "$demo_ns" apply -f "$tmp/demo.yaml" >&3 2>&1
leaky=""
leaky_running() {
	leaky=$(kc -n "$demo_ns" get pods -l app=leaky -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{end}' 2>/dev/null)
	[ -n "$leaky" ] && [ "$(kc -n "$demo_ns" get pod quiet -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]
}
if ! wait_guest 300 leaky_running; then
	fail_demo "the pods did not start"; return
fi
t_running=$SECONDS
heading "Before: both pods run"
k -n "$demo_ns" get pods -o wide

out ""
out "The leaking pod ($leaky) grows by 50 MiB/s; waiting for evictd..."
leaky_failed() { [ "$(kc -n "$demo_ns" get pod "$leaky" -o jsonpath='{.status.phase}' 2>/dev/null)" = Failed ]; }
if ! wait_guest 300 leaky_failed; then
	fail_demo "the leaking pod was not evicted"; return
fi
out "... evicted $((SECONDS - t_running)) s after it started."
replaced() {
	[ -n "$(kc -n "$demo_ns" get pods -l app=leaky -o json | jq -r --arg p "$leaky" '.items[] | select(.metadata.name != $p and .status.phase == "Running") | .metadata.name')" ]
}
wait_guest 180 replaced || out "(the replacement is not Running yet)"
pass "demo: the leaking pod was evicted"

heading "After: the leaking pod is Failed/Evicted, its ReplicaSet made a new one, the neighbour still runs"
k -n "$demo_ns" get pods -o wide

heading "The eviction as the API shows it"
k -n "$demo_ns" get events --field-selector "involvedObject.name=$leaky" --sort-by=.lastTimestamp
out ""
printf '$ kubectl -n %s describe pod %s   (its status and events)\n' "$demo_ns" "$leaky" >&3
kc -n "$demo_ns" describe pod "$leaky" 2>&1 | awk '/^(Name|Node|Status|Reason|Message|QoS Class):/ { print; next }
	/^Conditions:/ { c = 1 } /^Volumes:/ { c = 0 } /^Events:/ { e = 1 } c || e' >&3

heading "evictd's log for this eviction"
out "(kubectl logs needs the API server to reach the kubelet, which this guest's network does not"
out " allow; the node copies container logs to a serial port: the lines of"
out " \`kubectl -n evictd-system logs $evictd_pod\` that name the pod)"
leaky_uid=$(kc -n "$demo_ns" get pod "$leaky" -o jsonpath='{.metadata.uid}')
# (containerd's stamp and stream dropped; the JSON event-log lines, --event-log=-, left out)
elog | grep -a -e "$leaky" -e "$leaky_uid" -e "${leaky_uid//-/_}" | sed -E 's/^[^ ]* (stdout|stderr) [FP] //' |
	grep -v '^{' | cut -c1-400 >&3

heading "evictd's metrics"
out "(on the node: curl -s http://127.0.0.1:9808/metrics | grep -E '^evictd_(evictions_total|eviction_latency|threshold_met|memory_available)', the evictions counted)"
token=m$RANDOM
kc annotate node "$NODE" "evictd.test/metrics=$token" --overwrite >/dev/null
metrics_in() { grep -aq "^evictd-metrics/$token end" "$pod_logs"; }
if wait_guest 60 metrics_in; then
	# (a serial port's tty ends each line with CR LF)
	grep -a "^evictd-metrics/$token " "$pod_logs" | tr -d '\r' | cut -d' ' -f2- >"$tmp/metrics.txt"
	# the memory signal's lines, and the eviction counters that are not 0
	grep -E '^evictd_(evictions_total|eviction_latency_seconds_(sum|count)|threshold_met\{signal="memory.available"|memory_available_bytes)' \
		"$tmp/metrics.txt" | awk '!/^evictd_evictions_total/ || $NF != 0' | grep . >&3 ||
		{ out "(the node read none of those from evictd's metrics address; its first lines:)"; head -n 5 "$tmp/metrics.txt" >&3; }
else
	out "(no metrics from the node within 60 s)"
fi
kc -n "$demo_ns" delete deployment leaky --wait=false >/dev/null 2>&1
kc -n "$demo_ns" delete pod quiet --wait=false >/dev/null 2>&1
heading "Tearing down (the guest powers off, the control plane stops)"
