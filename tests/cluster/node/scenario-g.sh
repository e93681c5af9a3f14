# shellcheck shell=bash
# Scenario (g): graceful node shutdown on the real node, exactly one owner. The guest has
# systemd and logind; the host asks it to power off (node-watch.sh: systemctl poweroff, which
# goes through logind and its delay inhibitors). Pods: two ordinary and one critical
# (system-node-critical), each container counting the SIGTERMs it gets on its log.
#   the kubelet's GracefulNodeShutdown off (shutdownGracePeriod 0, its default): evictd owns it
#     (its ConfigMap: 30 s, critical pods 10 s): it holds the inhibitor, terminates the ordinary
#     pods first and the critical one last, and marks them Failed/Terminated;
#   on (NODE_KUBELET_SHUTDOWN=20s: the kubelet's shutdownGracePeriod, critical 5 s): evictd
#     reads the kubelet's file (--kubelet-config) and leaves it to the kubelet's shutdown
#     manager (doc/DESIGN.md §9, coexist_shutdown_owner).
# Either way every container gets exactly one SIGTERM. The guest ends here: (g) runs last, and
# only when asked for (make vmtest: NODE_SCENARIOS=all).
make_namespace "$NS_S"
owner=evictd
[ -n "${NODE_KUBELET_SHUTDOWN:-}" ] && owner=kubelet
for p in plain-1 plain-2 critical; do
	prio=""
	[ $p = critical ] && prio="priorityClassName: system-node-critical"
	kc -n "$NS_S" apply -f - >/dev/null <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: $p}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE}
  terminationGracePeriodSeconds: 8
  $prio
  containers:
  - name: c
    image: localhost/evictd-test/workload:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "n=0; trap 'n=\$((n + 1)); echo \"TERM \$n uptime \$(cut -d\" \" -f1 /proc/uptime)\"' TERM; echo started; while :; do sleep 1 & wait \$!; done"]
EOF2
done
all_running() {
	[ "$(kc -n "$NS_S" get pods -o json | jq '[.items[] | select(.status.phase == "Running")] | length')" = 3 ]
}
if ! wait_guest 300 all_running; then
	fail "three pods run before the shutdown" "$(kc -n "$NS_S" get pods -o wide; diag)"
	return
fi
pass "three pods run (two ordinary, one system-node-critical); the shutdown's owner: $owner"
sleep 5	# the containers' TERM traps are set ("started" is on their logs)
t0=$SECONDS
kc annotate node "$NODE" evictd.test/poweroff=1 --overwrite >/dev/null
guest_gone() { ! guest_alive; }
wait_for 240 guest_gone
check "the guest powered off within 240 s of the request ($((SECONDS - t0)) s)" guest_gone
plog() { grep -a "^${NS_S}_$1_" "$pod_logs" | sed 's/^[^ ]* [^ ]* [^ ]* [^ ]* //'; }
for p in plain-1 plain-2 critical; do
	terms=$(plog $p | grep -c '^TERM')
	if [ "$terms" = 1 ]; then
		pass "$p: exactly one SIGTERM ($(plog $p | grep '^TERM'))"
	else
		fail "$p: exactly one SIGTERM" "$terms: $(plog $p | tr '\n' ' ')"
	fi
done
for p in plain-1 plain-2 critical; do
	starts=$(plog $p | grep -c '^started')
	check "$p: started once, never restarted in place during the shutdown ($starts)" test "$starts" = 1
done
t_of() { plog "$1" | awk '/^TERM 1 / { print $4 }'; }
if [ -n "$(t_of critical)" ] && [ -n "$(t_of plain-1)" ] && [ -n "$(t_of plain-2)" ] &&
	awk -v c="$(t_of critical)" -v a="$(t_of plain-1)" -v b="$(t_of plain-2)" 'BEGIN { exit !(c > a && c > b) }'; then
	pass "the critical pod was terminated last (uptime: plain $(t_of plain-1), $(t_of plain-2); critical $(t_of critical))"
else
	fail "the critical pod was terminated last" "plain $(t_of plain-1) $(t_of plain-2), critical $(t_of critical)"
fi
# Failed with DisruptionTarget "Pod was terminated in response to imminent node shutdown.";
# the reason Terminated, or none when the kubelet's terminal status (which clears it, see
# scenario d) was the last write before the power went.
status_of() { kc -n "$NS_S" get pod "$1" -o jsonpath='{.status.phase}/{.status.reason}/{.status.conditions[?(@.type=="DisruptionTarget")].message}' 2>/dev/null; }
bad=""
for p in plain-1 plain-2 critical; do
	case $(status_of $p) in
		Failed/Terminated/*"imminent node shutdown"*|Failed//*"imminent node shutdown"*) ;;
		*) bad="$bad $p=$(status_of $p)" ;;
	esac
done
if [ $owner = evictd ]; then
	check "every pod is Failed with the shutdown's DisruptionTarget in the API${bad:+ (not:$bad)}" test -z "$bad"
else
	# The kubelet's own statuses are its status manager's, written asynchronously: under TCG
	# they were not all out before the power went (seen: all three still Running).
	echo "# the API after the kubelet's shutdown:$(for p in plain-1 plain-2 critical; do printf ' %s=%s' $p "$(status_of $p | cut -d/ -f1,2)"; done)"
fi
kshut=$(kubelet_since | grep -a 'Shutdown manager' | head -n 3 | cut -c1-250)
eshut=$(elog | grep -a -i 'shutdown' | head -n 6 | cut -c1-250)
sed 's/^/#   kubelet: /' <<<"$kshut"
sed 's/^/#   evictd: /' <<<"$eshut"
if [ $owner = evictd ]; then
	check "evictd ran the shutdown (its log)" grep -q 'PrepareForShutdown\|shutdown: ' <<<"$eshut"
	check "the kubelet's shutdown manager did not (no 'Shutdown manager detected new shutdown event')" \
		eval '! grep -q "detected new shutdown event" <<<"$kshut"'
else
	check "evictd left it to the kubelet (its log says so)" grep -q 'the kubelet runs it' <<<"$eshut"
	check "the kubelet's shutdown manager ran it" grep -q 'detected new shutdown event' <<<"$kshut"
fi
