# shellcheck shell=bash
# Scenario (d): a soft eviction honours what the kubelet honours. A pod (shareProcessNamespace,
# two containers of an image whose STOPSIGNAL is SIGUSR2, a preStop hook, a 15 s grace) holds
# the node between evictd's soft (900Mi, 40 s grace) and hard (500Mi) memory.available
# thresholds (test_node.sh's overlay). evictd patches the pod Failed/Evicted and hands the
# termination to the kubelet (--kube-handover-termination, doc/DESIGN.md §8): the kubelet runs
# the preStop hook, then sends each container the image's STOPSIGNAL, within the grace; no
# SIGTERM from evictd reaches any process (the pause process included: the shared namespace).
make_namespace "$NS_S"
kc -n "$NS_S" apply -f - >/dev/null <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: polite}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE}
  shareProcessNamespace: true
  terminationGracePeriodSeconds: 15
  containers:
  - name: main
    image: localhost/evictd-test/workload-usr2:1
    imagePullPolicy: Never
    # Down to about 700 MiB available (MemAvailable, the node's: no lxcfs), then hold.
    command: ["/bin/sh", "-c", "trap 'echo main got USR2; kill \$hog; exit 0' USR2; trap 'echo main got TERM; kill \$hog; exit 0' TERM; avail=\$(awk '/^MemAvailable/ {print int(\$2 / 1024)}' /proc/meminfo); echo \"available \$avail MiB\"; /usr/bin/memhog --rate 50 --max \$((avail - 700)) --quiet & hog=\$!; while :; do sleep 1 & wait \$!; done"]
    lifecycle:
      preStop: {sleep: {seconds: 3}}
  - name: side
    image: localhost/evictd-test/workload-usr2:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "trap 'echo side got USR2; exit 0' USR2; trap 'echo side got TERM; exit 0' TERM; while :; do sleep 1 & wait \$!; done"]
EOF2
pod_phase() { kc -n "$NS_S" get pod polite -o jsonpath='{.status.phase}/{.status.reason}' 2>/dev/null; }
polite_running() { [ "$(pod_phase)" = "Running/" ]; }
# Failed; the reason Evicted until the kubelet's terminal status, which clears it when the
# containers exit 0 (kubelet_pods.go generateAPIPodStatus keeps reason and message only when
# its phase from the containers equals the old one: Succeeded here, forced back to Failed);
# the DisruptionTarget condition keeps the eviction's message.
polite_evicted() { case $(pod_phase) in Failed/Evicted|Failed/) true ;; *) false ;; esac; }
t0=$SECONDS
if ! wait_guest 300 polite_running; then
	fail "the polite pod runs" "$(kc -n "$NS_S" describe pod polite | tail -n 30; diag)"
	return
fi
polite_uid=$(kc -n "$NS_S" get pod polite -o jsonpath='{.metadata.uid}')
if wait_guest 300 polite_evicted; then
	pass "the pod between the soft and hard thresholds ends Failed/Evicted ($((SECONDS - t0)) s after apply)"
else
	fail "the pod between the soft and hard thresholds ends Failed/Evicted" "$(kc -n "$NS_S" get pod polite -o json | jq -c .status; elog | tail -n 20; diag)"
	return
fi
message=$(kc -n "$NS_S" get pod polite -o jsonpath='{.status.conditions[?(@.type=="DisruptionTarget")].message}')
case $message in
	*"low on resource: memory"*"Threshold quantity: 900Mi"*) pass "a soft eviction: DisruptionTarget's message names the soft threshold ($message)" ;;
	*) fail "a soft eviction: DisruptionTarget's message names the soft threshold (900Mi)" "$message" ;;
esac
# Both containers end (their logs say how) before the 15 s grace is over.
plog() { grep -a "^${NS_S}_polite_" "$pod_logs" | sed 's/^[^ ]* [^ ]* [^ ]* [^ ]* //'; }
ended() { plog | grep -q 'main got' && plog | grep -q 'side got'; }
wait_guest 60 ended
logs=$(plog)
sed 's/^/#   polite: /' <<<"$logs"
has() { grep -aq -- "$1" <<<"$2"; }
# The preStop hook is the kubelet's sleep action (no exec: on 6.12 with Debian's runc 1.1.5 an
# exec into the container failed, "error executing setns process"): the main container's stop
# signal comes 3 s after the kubelet began stopping it.
t_stop=$(kubelet_since | grep -a 'polite' | grep -a '"Killing container with a grace period override"' | grep -a 'containerName="main"' |
	head -n 1 | awk '{ split($2, t, ":"); print t[1] * 3600 + t[2] * 60 + t[3] }')
t_usr2=$(grep -a "^${NS_S}_polite_.*/main/" "$pod_logs" | grep -a 'main got USR2' | head -n 1 |
	awk '{ split($2, d, "T"); split(d[2], t, ":"); sub(/Z$/, "", t[3]); print t[1] * 3600 + t[2] * 60 + t[3] }')
check "the preStop hook (sleep 3 s) ran before the main container's stop signal (stop begun $t_stop, USR2 $t_usr2)" \
	awk -v a="$t_stop" -v b="$t_usr2" 'BEGIN { exit !(a != "" && b != "" && b - a >= 2.9) }'
check "each container got the image's STOPSIGNAL (SIGUSR2), as the kubelet's stop sends it" \
	eval 'has "main got USR2" "$logs" && has "side got USR2" "$logs"'
check "no process got a SIGTERM" eval '! has "got TERM" "$logs"'
ev=$(elog | grep -a -e "$polite_uid" -e "${polite_uid//-/_}")
check "evictd handed the termination to the kubelet (no SIGTERM of its own)" has 'the kubelet terminates it' "$ev"
# Both containers ended by their stop signal within the grace; evictd's cgroup.kill at the
# grace's end (and slack) may still find the pause process, which the kubelet stops later.
# The kubelet logs each "Container exited normally" once its StopContainer returns, which may be
# after the containers' own lines reached the log port: waited for (CI saw it late once).
exited_normally() { [ "$(kubelet_since | grep -a polite | grep -ac "Container exited normally")" -ge 2 ]; }
wait_guest 30 exited_normally
check "both containers exited normally on the kubelet's stop, within the grace" \
	eval 'has "main got USR2" "$logs" && has "side got USR2" "$logs" && exited_normally'
grep -a 'kill:' <<<"$ev" | cut -c1-300 | sed 's/^/#   evictd: /'
klog=$(kubelet_since | grep -a "polite")
grep -a 'Killing container\|PreStop\|preStop' <<<"$klog" | cut -c1-300 | head -n 6 | sed 's/^/#   kubelet: /'
check "the kubelet ran the stop (Killing container with a grace period)" has 'Killing container with a grace period' "$klog"
kc -n "$NS_S" delete pod polite --wait=false >/dev/null 2>&1
