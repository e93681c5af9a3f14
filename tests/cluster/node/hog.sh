# shellcheck shell=bash
# The memory hog of scenarios (a) and (b), sourced by tests/cluster/test_node.sh:
#   hog_evicted   a Deployment's pod allocates 20 MiB/s until evicted; evictd evicts it before
#                 the kubelet's eviction manager and the kernel's OOM killer, it stays
#                 Failed/Evicted through the kubelet's status syncs with no restart in place,
#                 and the ReplicaSet replaces it. Sets hog, hog_uid.
hog_evicted() {
	make_namespace "$NS_S"
	# The first pod to start allocates (20 MiB/s, no limit: BestEffort); its replacement only
	# sleeps, so that the ReplicaSet's new pod is not evicted again: the node's hostPath
	# remembers that the hog ran.
	kc -n "$NS_S" apply -f - >/dev/null <<-EOF
	apiVersion: apps/v1
	kind: Deployment
	metadata: {name: hog}
	spec:
	  replicas: 1
	  selector: {matchLabels: {app: hog}}
	  template:
	    metadata: {labels: {app: hog}}
	    spec:
	      nodeSelector: {kubernetes.io/hostname: $NODE}
	      terminationGracePeriodSeconds: 5
	      containers:
	      - name: hog
	        image: localhost/evictd-test/workload:1
	        imagePullPolicy: Never
	        command: ["/bin/sh", "-c", "if mkdir /state/hogged 2>/dev/null; then sleep 5; exec /usr/bin/memhog --rate 20 --quiet; else exec sleep 3600; fi"]
	        volumeMounts: [{name: state, mountPath: /state}]
	      volumes:
	      - name: state
	        hostPath: {path: /var/lib/evictd-test-$NS_S, type: DirectoryOrCreate}
	EOF
	hog=""
	hog_running() {
		hog=$(kc -n "$NS_S" get pods -l app=hog -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{end}' 2>/dev/null)
		[ -n "$hog" ]
	}
	t0=$SECONDS
	if wait_guest 300 hog_running; then
		pass "the hog's pod runs on the real node ($hog, $((SECONDS - t0)) s from apply to Running)"
	else
		fail "the hog's pod runs on the real node" "$(kc -n "$NS_S" describe pods | tail -n 30; diag)"
		return
	fi
	hog_uid=$(kc -n "$NS_S" get pod "$hog" -o jsonpath='{.metadata.uid}')
	pod_field() { kc -n "$NS_S" get pod "$hog" -o jsonpath="$1" 2>/dev/null; }
	evicted() { [ "$(pod_field '{.status.phase}/{.status.reason}')" = Failed/Evicted ]; }
	t0=$SECONDS
	if wait_guest 300 evicted; then
		pass "the hog's pod ends Failed/Evicted ($((SECONDS - t0)) s after Running)"
	else
		fail "the hog's pod ends Failed/Evicted" "$(kc -n "$NS_S" get pod "$hog" -o json | jq -c .status; elog | tail -n 20; diag)"
		return
	fi
	kc -n "$NS_S" get pod "$hog" -o json >"$tmp/hog-evicted.json"

	# Three of the kubelet's status syncs (10 s each) and more: phase Failed at every look, never a
	# restart in place; from the kubelet's own terminal status on (its pod worker rewrites reason
	# and message once, within a few seconds), Failed/Evicted with no container running.
	states=() bad=""
	for i in $(seq 20); do
		sleep 5
		s=$(pod_field '{.status.phase}/{.status.reason} restarts={.status.containerStatuses[0].restartCount} running={.status.containerStatuses[0].state.running.startedAt}')
		states+=("$((SECONDS - t0))s:$s")
		case $s in Failed/*\ restarts=0\ *) ;; *) bad=1 ;; esac
		# At least 40 s; then until the kubelet's final status, 100 s at most.
		[ "$i" -lt 8 ] || [ "$s" != "Failed/Evicted restarts=0 running=" ] || break
	done
	# The last look: the kubelet's own terminal status is out (its first clears the reason,
	# the next restores it; on a loaded guest 30 s apart) and no container runs.
	case $s in "Failed/Evicted restarts=0 running=") ;; *) bad=1 ;; esac
	if [ -z "$bad" ]; then
		pass "the evicted pod stays Failed with no container restart for 40 s and more, Failed/Evicted at the end (${states[*]})"
	else
		fail "the evicted pod stays Failed with no container restart for 40 s and more, Failed/Evicted at the end" "${states[*]}"
	fi
	sandbox_events=$(kc -n "$NS_S" get events --field-selector "involvedObject.uid=$hog_uid" -o json |
		jq -r '[.items[] | select(.reason == "SandboxChanged" or .reason == "Started" or .reason == "Killing" or .reason == "Evicted") | .reason + "(" + (.count|tostring) + ")"] | join(" ")')
	case " $sandbox_events " in
		*SandboxChanged*|*"Started(2)"*) fail "no SandboxChanged event, the container started once" "$sandbox_events" ;;
		*) pass "no SandboxChanged event, the container started once (events: $sandbox_events)" ;;
	esac

	replacement() {
		[ -n "$(kc -n "$NS_S" get pods -l app=hog -o json | jq -r --arg h "$hog" '.items[] | select(.metadata.name != $h and .status.phase == "Running") | .metadata.name')" ]
	}
	check "the ReplicaSet made a replacement pod and it runs" wait_guest 300 replacement

	kc -n "$NS_S" describe pod "$hog" >"$tmp/describe.txt" 2>&1
	if grep -Eq '^Status:[[:space:]]+Failed' "$tmp/describe.txt" && grep -Eq '^Reason:[[:space:]]+Evicted' "$tmp/describe.txt" &&
		grep -Eq 'Warning[[:space:]]+Evicted' "$tmp/describe.txt" && grep -q 'DisruptionTarget' "$tmp/describe.txt"; then
		pass "kubectl describe shows the eviction as the kubelet's own (Status Failed, Reason Evicted, a Warning Evicted event, DisruptionTarget)"
	else
		fail "kubectl describe shows the eviction as the kubelet's own" "$(grep -E '^(Status|Reason|Message)|Evicted|Disruption' "$tmp/describe.txt")"
	fi
	grep -E '^(Status|Reason|Message):|Evicted|DisruptionTarget' "$tmp/describe.txt" | sed 's/^/#   describe: /'

	# Who acted: evictd, before the kubelet's eviction manager and the kernel's OOM killer.
	check_kubelet_did_not_evict
	check_no_oom_kill
	elog >"$tmp/evictd.log"
	grep -a "$hog" "$tmp/evictd.log" | head -n 5 | cut -c1-300 | sed 's/^/#   evictd: /'
	# What the kubelet's status manager and pod workers did with the pod (its UID) after evictd's
	# Failed/Evicted: the lines for the record.
	kubelet_since | grep -a "$hog_uid\|$hog" | grep -aiE 'status|SyncLoop|terminat|kill' | cut -c1-400 | head -n 40 |
		sed 's/^/#   kubelet: /'
	# Its replacement pod would be a candidate in the next scenarios: gone with the namespace.
	kc delete namespace "$NS_S" --wait=false >/dev/null 2>&1
}
