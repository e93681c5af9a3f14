# shellcheck shell=bash
# Scenario (e): PIDPressure and DiskPressure on the real node, one after the other.
#  - pids: a pod forks sleeping children (150/s, at most 3,000: bounded below the guest's
#    kernel.pid_max of 4096, test_node.sh PID_MAX) until evicted; evictd's pid.available hard
#    threshold is 2000 (test_node.sh's overlay), the kubelet has none here.
#  - disk: a pod fills its emptyDir (the node disk, /var/lib/kubelet) with 32 MiB files
#    (fallocate: blocks allocated, none written; dd's 8 MiB writes took 6.5 min for 2.8 GiB
#    under TCG with other guests on the host) down to 17% available and holds: below evictd's imagefs.available 20% (containerd's directory is on the
#    same file system, so evictd's imagefs and nodefs read the same statvfs), above the kubelet's
#    imagefs.available 15% and nodefs.available 10%. A filler that evictd misses stops where the
#    kubelet does not act either: the pod is then not evicted and the check fails.
# Each must end Failed/Evicted with the kubelet's message for the signal's resource
# ([eviction/helpers.go] signalToResource: pid.available "pids", the filesystem signals
# "ephemeral-storage"), before the kubelet's eviction manager acts, and evictd must say so on
# the Node as it reports pressure: its own evictd.io/<resource>-pressure:NoSchedule taint (it
# never writes the kubelet's conditions, doc/DESIGN.md §8 "Pressure taints"), while the
# kubelet's PIDPressure/DiskPressure stays False (the kubelet never saw the pressure).

# e_pressure_evicted POD RESOURCE TAINT CONDITION LIMIT: until POD is Failed/Evicted (LIMIT s),
# sampling the Node's taint and the kubelet's condition; then the assertions.
e_pressure_evicted() {
	local pod=$1 resource=$2 taint=$3 cond=$4 limit=$5 t0=$SECONDS s="" taint_at="" cond_true="" node
	while :; do
		node=$(kc get node "$NODE" -o json 2>/dev/null)
		[ -n "$taint_at" ] || ! jq -e --arg k "$taint" '(.spec.taints // []) | any(.key == $k and .effect == "NoSchedule")' <<<"$node" >/dev/null ||
			taint_at=$((SECONDS - t0))
		[ "$(jq -r --arg c "$cond" '.status.conditions[] | select(.type == $c) | .status' <<<"$node")" != True ] ||
			cond_true="$cond_true $((SECONDS - t0))s"
		s=$(kc -n "$NS_S" get pod "$pod" -o json 2>/dev/null)
		[ "$(jq -r '.status.phase + "/" + (.status.reason // "")' <<<"$s")" = Failed/Evicted ] && break
		if [ $((SECONDS - t0)) -ge "$limit" ] || ! guest_alive; then
			fail "$pod ends Failed/Evicted (the node low on $resource)" \
				"$(jq -c .status <<<"$s" | cut -c1-600); $(kc -n "$NS_S" get events -o json | jq -r '.items[] | .reason + ": " + .message' | tail -n 5); $(elog | tail -n 15); $(diag)"
			return 1
		fi
		sleep 2
	done
	local took=$((SECONDS - t0)) message
	message=$(jq -r '.status.message' <<<"$s")
	case $message in
		"The node was low on resource: $resource. "*)
			pass "$pod ends Failed/Evicted, the kubelet's message for $resource (${took} s; '$(cut -c1-160 <<<"$message")')" ;;
		*) fail "$pod ends Failed/Evicted with the message 'The node was low on resource: $resource. ...'" "$message" ;;
	esac
	# The taint is set with evictd's condition, at the decision; it stays for
	# evictionPressureTransitionPeriod (30 s here) after.
	has_taint() { kc get node "$NODE" -o json | jq -e --arg k "$taint" '(.spec.taints // []) | any(.key == $k and .effect == "NoSchedule")' >/dev/null; }
	if [ -n "$taint_at" ] || wait_guest 20 has_taint; then
		pass "evictd reported the pressure on the Node: its $taint:NoSchedule taint (${taint_at:-after the eviction} s)"
	else
		fail "evictd reported the pressure on the Node: its $taint:NoSchedule taint" \
			"$(kc get node "$NODE" -o json | jq -c '.spec.taints'); $(elog | grep -a 'taint' | tail -n 5)"
	fi
	cond_now=$(kc get node "$NODE" -o jsonpath="{.status.conditions[?(@.type==\"$cond\")].status}")
	if [ -z "$cond_true" ] && [ "$cond_now" = False ]; then
		pass "the kubelet's $cond condition stayed False (it never saw the pressure)"
	else
		fail "the kubelet's $cond condition stayed False" "True at:${cond_true:- never}; now: $cond_now"
	fi
	check_kubelet_did_not_evict "$resource"
	elog | grep -a "$pod" | head -n 3 | cut -c1-300 | sed 's/^/#   evictd: /'
	return 0
}

# The Evicted events on the node's pods since T (every namespace): evictd evicted only POD.
e_only_evicted() {
	local pod=$1 since=$2 others
	others=$(kc get events -A --field-selector reason=Evicted -o json | jq -r --arg p "$pod" --arg s "$since" \
		'.items[] | select((.lastTimestamp // .eventTime // "") >= $s and .involvedObject.name != $p) | .involvedObject.namespace + "/" + .involvedObject.name + ": " + .message' | cut -c1-200)
	if [ -z "$others" ]; then
		pass "no other pod was evicted while the node recovered from the $pod eviction"
	else
		fail "no other pod was evicted while the node recovered from the $pod eviction" "$others"
	fi
}

e_pids() {
	local since
	since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	kc -n "$NS_S" apply -f - >/dev/null <<-EOF
	apiVersion: v1
	kind: Pod
	metadata: {name: forkbomb}
	spec:
	  nodeSelector: {kubernetes.io/hostname: $NODE}
	  restartPolicy: Never
	  terminationGracePeriodSeconds: 5
	  containers:
	  - name: forkbomb
	    image: localhost/evictd-test/workload:1
	    imagePullPolicy: Never
	    command: ["/usr/bin/forkbomb", "--max", "3000", "--rate", "150"]
	EOF
	[ $? = 0 ] || { fail "the forkbomb pod is created"; return 1; }
	e_pressure_evicted forkbomb pids evictd.io/pid-pressure PIDPressure 240 || return 1
	grep -a "^${NS_S}_forkbomb_" "$pod_logs" | grep -ao 'children=[0-9]*' | tail -n 1 | sed 's/^/#   forkbomb: at most /'
	# Recovered: the taint gone (the pids are free again, and 30 s of transition period).
	if node_calm; then
		pass "the node recovered from PIDPressure (no evictd taint, no condition)"
	else
		fail "the node recovered from PIDPressure" "$(kc get node "$NODE" -o json | jq -c '.spec.taints')"
	fi
	e_only_evicted forkbomb "$since"
}

e_disk() {
	local since
	since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	sed "s/@NODE@/$NODE/" <<-'EOF' | kc -n "$NS_S" apply -f - >/dev/null
	apiVersion: v1
	kind: Pod
	metadata: {name: filler}
	spec:
	  nodeSelector: {kubernetes.io/hostname: "@NODE@"}
	  restartPolicy: Never
	  terminationGracePeriodSeconds: 5
	  containers:
	  - name: filler
	    image: localhost/evictd-test/workload:1
	    imagePullPolicy: Never
	    command:
	    - /bin/sh
	    - -c
	    - |
	      set -- $(busybox stat -f -c '%b %a %S' /data)
	      total=$(($1 * $3 / 1048576)) avail=$(($2 * $3 / 1048576))
	      stop=$((total * 17 / 100))
	      echo "filler: total=${total}MiB available=${avail}MiB: writing $((avail - stop))MiB down to ${stop}MiB"
	      i=0
	      while [ $((i * 32)) -lt $((avail - stop)) ]; do
	        busybox fallocate -l 32M /data/f$i || break
	        i=$((i + 1))
	        sleep 0.2
	      done
	      set -- $(busybox stat -f -c '%b %a %S' /data)
	      echo "filler: allocated $((i * 32))MiB, available=$(($2 * $3 / 1048576))MiB"
	      exec sleep 3600
	    volumeMounts: [{name: data, mountPath: /data}]
	  volumes:
	  - name: data
	    emptyDir: {}
	EOF
	[ "${PIPESTATUS[1]}" = 0 ] || { fail "the filler pod is created"; return 1; }
	e_pressure_evicted filler ephemeral-storage evictd.io/disk-pressure DiskPressure 420 || return 1
	grep -a "^${NS_S}_filler_" "$pod_logs" | grep -ao 'filler: .*' | sed 's/^/#   /'
	# The emptyDir goes with the pod: delete it, then the node recovers.
	kc -n "$NS_S" delete pod filler --timeout=120s >/dev/null 2>&1
	if node_calm; then
		pass "the node recovered from DiskPressure once the filler was deleted (no evictd taint, no condition)"
	else
		fail "the node recovered from DiskPressure once the filler was deleted" "$(kc get node "$NODE" -o json | jq -c '.spec.taints'; elog | tail -n 5)"
	fi
	e_only_evicted filler "$since"
}

make_namespace "$NS_S" || fail "scenario (e): the namespace $NS_S is made"
# A bystander: a BestEffort pod that only sleeps (one task, no disk of its own), ranked after
# each hog. The kubelet evicts one pod per signal and then waits until that pod's resources are
# reclaimed ([eviction_manager.go] waitForPodsCleanup, podCleanupTimeout 30 s): the freed pids
# or disk are counted before a second pod is taken. e_only_evicted: it is never evicted.
kc -n "$NS_S" apply -f - >/dev/null <<-EOF
apiVersion: v1
kind: Pod
metadata: {name: bystander}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE}
  terminationGracePeriodSeconds: 5
  containers:
  - name: sleep
    image: localhost/evictd-test/workload:1
    imagePullPolicy: Never
    command: ["/bin/sleep", "3600"]
EOF
bystander_runs() { [ "$(kc -n "$NS_S" get pod bystander -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
wait_guest 180 bystander_runs || fail "scenario (e): the bystander pod runs" "$(kc -n "$NS_S" get pod bystander -o json | jq -c .status)"
e_pids
# The pid taint keeps BestEffort pods off the node for 30 s: the disk part starts on a calm node.
node_calm || fail "scenario (e): the node is calm before the disk part" "$(kc get node "$NODE" -o json | jq -c '.spec.taints')"
e_disk
kc delete namespace "$NS_S" --timeout=180s >/dev/null 2>&1 || echo "# scenario (e): the namespace $NS_S was not gone within 180 s"
