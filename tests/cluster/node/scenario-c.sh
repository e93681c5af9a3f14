# shellcheck shell=bash
# Scenario (c): an Indexed Job whose podFailurePolicy ignores disruptions, through the real Job
# controller. Index 0's first pod allocates 20 MiB/s until evicted; every other pod (index 1,
# index 0's replacement) sleeps 15 s and exits 0 (a hostPath marker, as hog.sh's). The Job:
#  - podFailurePolicy {action: Ignore, onPodConditions: [DisruptionTarget]}: a pod that failed
#    with the DisruptionTarget condition is neither counted in status.failed nor held against
#    backoffLimit ([job_controller.go] the pod failure policy; evictd's Failed patch carries the
#    kubelet's condition, reason TerminationByKubelet, doc/DESIGN.md §8);
#  - backoffLimit 0: a counted failure would fail the Job at once, so an ignored disruption is
#    what lets it complete;
#  - podReplacementPolicy Failed: a replacement only once the old pod is terminal (phase
#    Failed), never two non-terminal pods of one index, polled here every second or so.
c_job() {
	make_namespace "$NS_S" || { fail "scenario (c): the namespace $NS_S is made"; return; }
	kc -n "$NS_S" apply -f - >/dev/null <<-EOF
	apiVersion: batch/v1
	kind: Job
	metadata: {name: idx}
	spec:
	  completions: 2
	  parallelism: 2
	  completionMode: Indexed
	  backoffLimit: 0
	  podReplacementPolicy: Failed
	  podFailurePolicy:
	    rules:
	    - action: Ignore
	      onPodConditions: [{type: DisruptionTarget}]
	  template:
	    spec:
	      restartPolicy: Never
	      nodeSelector: {kubernetes.io/hostname: $NODE}
	      terminationGracePeriodSeconds: 5
	      containers:
	      - name: work
	        image: localhost/evictd-test/workload:1
	        imagePullPolicy: Never
	        command: ["/bin/sh", "-c", "if [ \"\$JOB_COMPLETION_INDEX\" = 0 ] && mkdir /state/hogged 2>/dev/null; then sleep 5; exec /usr/bin/memhog --rate 20 --quiet; fi; sleep 15"]
	        volumeMounts: [{name: state, mountPath: /state}]
	      volumes:
	      - name: state
	        hostPath: {path: /var/lib/evictd-test-$NS_S, type: DirectoryOrCreate}
	EOF
	[ $? = 0 ] || { fail "scenario (c): the Job is created"; return; }

	# Poll the Job and its pods until the Job is Complete or Failed: per poll, the indexes with
	# more than one non-terminal pod (a pod being deleted but not yet Failed counts), the Job's
	# status.failed and its true conditions.
	local t0=$SECONDS polls=0 overlap="" failed_seen="" conds="" line dup failed
	while [ $((SECONDS - t0)) -lt 480 ] && guest_alive; do
		if ! kc -n "$NS_S" get jobs,pods -o json >"$tmp/c-poll.json" 2>/dev/null; then sleep 1; continue; fi
		polls=$((polls + 1))
		line=$(jq -r '
			([.items[] | select(.kind == "Pod" and .status.phase != "Succeeded" and .status.phase != "Failed")
			  | .metadata.annotations["batch.kubernetes.io/job-completion-index"]]
			 | group_by(.) | map(select(length > 1) | .[0]) | join(",")) as $dup
			| [.items[] | select(.kind == "Job")][0] as $j
			| "\(if $dup == "" then "-" else $dup end) \($j.status.failed // 0) \([$j.status.conditions[]? | select(.status == "True") | .type] | join(","))"' \
			"$tmp/c-poll.json")
		read -r dup failed conds <<<"$line"
		[ "$dup" = - ] || overlap="$overlap $((SECONDS - t0))s:index-$dup"
		[ "$failed" = 0 ] || failed_seen="$failed_seen $((SECONDS - t0))s:failed=$failed"
		case ",$conds," in *,Complete,*|*,Failed,*) break ;; esac
		sleep 1
	done
	local took=$((SECONDS - t0))
	kc -n "$NS_S" get jobs,pods -o json >"$tmp/c-final.json" 2>/dev/null
	echo "# the Job ended after ${took} s, $polls polls; its true conditions: ${conds:-none}"
	jq -r '.items[] | select(.kind == "Pod") | "#   pod \(.metadata.name) index=\(.metadata.annotations["batch.kubernetes.io/job-completion-index"]) \(.status.phase)/\(.status.reason // "-") created=\(.metadata.creationTimestamp) finished=\(.status.containerStatuses[0].state.terminated.finishedAt // "-")"' \
		"$tmp/c-final.json"

	# The evicted pod: index 0's, Failed/Evicted with DisruptionTarget (reason TerminationByKubelet).
	local evicted
	evicted=$(jq -r '[.items[] | select(.kind == "Pod" and .status.phase == "Failed" and .status.reason == "Evicted")] | map(.metadata.name) | join(" ")' "$tmp/c-final.json")
	if [ -n "$evicted" ] && [ "$(jq -r --arg p "$evicted" '.items[] | select(.metadata.name == $p)
			| [.metadata.annotations["batch.kubernetes.io/job-completion-index"],
			   ([.status.conditions[]? | select(.type == "DisruptionTarget" and .status == "True")][0].reason // "none")] | join(" ")' \
			"$tmp/c-final.json")" = "0 TerminationByKubelet" ]; then
		pass "index 0's hog was evicted: Failed/Evicted with DisruptionTarget (TerminationByKubelet) ($evicted)"
	else
		fail "index 0's hog was evicted: Failed/Evicted with DisruptionTarget (TerminationByKubelet)" \
			"evicted: '${evicted}'; $(jq -c '[.items[] | select(.kind == "Pod") | [.metadata.name, .status.phase, .status.reason, .status.message, [.status.conditions[]? | .type + "=" + .status + ":" + (.reason // "")]]]' "$tmp/c-final.json"); $(elog | tail -n 10)"
	fi
	case ",$conds," in
		*,Complete,*) pass "the Job completed (the real Job controller, ${took} s)" ;;
		*) fail "the Job completed" "conditions: ${conds:-none} after ${took} s; $(jq -c '.items[] | select(.kind == "Job") | .status' "$tmp/c-final.json"; diag)" ;;
	esac
	if [ -z "$failed_seen" ] && [ "$(jq -r '.items[] | select(.kind == "Job") | "\(.status.failed // 0) \(.status.succeeded // 0)"' "$tmp/c-final.json")" = "0 2" ]; then
		pass "the disruption was ignored: the Job's status.failed stayed 0 in all $polls polls, succeeded 2"
	else
		fail "the disruption was ignored: the Job's status.failed stayed 0, succeeded 2" \
			"${failed_seen:-never non-zero while polled}; final: $(jq -c '.items[] | select(.kind == "Job") | .status' "$tmp/c-final.json")"
	fi
	local replaced
	replaced=$(jq -r '[.items[] | select(.kind == "Pod" and .metadata.annotations["batch.kubernetes.io/job-completion-index"] == "0" and .status.phase == "Succeeded")] | length' "$tmp/c-final.json")
	if [ "$replaced" -ge 1 ] && [ -z "$overlap" ] && [ "$polls" -ge 5 ]; then
		pass "index 0 was replaced and its replacement succeeded; never two non-terminal pods of one index ($polls polls)"
	else
		fail "index 0 was replaced and its replacement succeeded; never two non-terminal pods of one index" \
			"succeeded pods of index 0: $replaced; overlaps:${overlap:- none}; polls: $polls"
	fi
	# podReplacementPolicy Failed waits for the phase; evictd writes Failed before its kill
	# (doc/DESIGN.md §8), where the kubelet writes it once the containers stopped: the gap, for
	# the record.
	if [ -n "$evicted" ]; then
		jq -r --arg p "$evicted" '
			[.items[] | select(.metadata.name == $p)][0].status.containerStatuses[0].state.terminated.finishedAt as $fin
			| [.items[] | select(.kind == "Pod" and .metadata.name != $p and .metadata.annotations["batch.kubernetes.io/job-completion-index"] == "0")][0].metadata.creationTimestamp as $new
			| "# the replacement of index 0 was created at \($new // "-"), the evicted container finished at \($fin // "-")"' "$tmp/c-final.json"
	fi
	check_kubelet_did_not_evict
	[ -z "$evicted" ] || elog | grep -a "$evicted" | head -n 3 | cut -c1-300 | sed 's/^/#   evictd: /'
}

c_job
# Cleanup: the namespace and its pods (the Job's are terminal), so that the next scenario starts
# on a calm node (test_node.sh's node_calm waits out evictd's pressure taint).
kc delete namespace "$NS_S" --timeout=180s >/dev/null 2>&1 || echo "# scenario (c): the namespace $NS_S was not gone within 180 s"
