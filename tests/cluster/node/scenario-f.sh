# shellcheck shell=bash
# Scenario (f): a static pod of the real kubelet and its mirror pod, under memory pressure.
# The static pod static-hold (tests/cluster/node/static-f.yaml, in the kubelet's staticPodPath
# from boot) is critical for the kubelet ([pod_update.go] IsCriticalPod: IsStaticPod) and never
# evicted by it; evictd the same (doc/DESIGN.md §5: static, mirror, never evicted,
# user/core/rank.c pod_never_evict; static from the mirror pod's evidence, user/pods/meta.c).
#  1. The namespace is made: the kubelet creates the mirror pod (kubernetes.io/config.mirror).
#  2. The static pod holds memory: MemAvailable less evictd's 500Mi threshold less 250 MiB (a
#     pod writes the size to its hostPath), more than the BestEffort hog will use when the node
#     crosses the threshold, so that a ranking by usage alone would take the static pod.
#  3. evictctl (the evictd image, evictd's control socket from the host) ranks the pods for
#     memory.available: the static pod is there, never_evict, its reason static/mirror.
#  4. A BestEffort hog allocates 20 MiB/s until evicted: evictd evicts it, and never the static
#     pod: it keeps running, restartCount 0, no DisruptionTarget on its mirror.
# Cleanup: the static pod is released (it exits 0, Succeeded: restartPolicy OnFailure) and the
# namespace deleted.
static_pod=static-hold-$(tr '[:upper:]' '[:lower:]' <<<"$NODE")

# f_pod NAME IMAGE HOSTPATH MOUNT SCRIPT: a one-shot root pod with a hostPath, tolerating
# evictd's pressure taints (the release pod comes right after an eviction).
f_pod() {
	kc -n "$NS_S" apply -f - >/dev/null <<-EOF
	apiVersion: v1
	kind: Pod
	metadata: {name: $1}
	spec:
	  nodeSelector: {kubernetes.io/hostname: $NODE}
	  restartPolicy: Never
	  terminationGracePeriodSeconds: 5
	  tolerations: [{key: evictd.io/memory-pressure, operator: Exists, effect: NoSchedule}]
	  securityContext: {runAsUser: 0}
	  containers:
	  - name: c
	    image: $2
	    imagePullPolicy: Never
	    command: $5
	    volumeMounts: [{name: host, mountPath: $4}]
	  volumes:
	  - name: host
	    hostPath: {path: $3, type: DirectoryOrCreate}
	EOF
}
f_phase() { kc -n "$NS_S" get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
f_done() { case $(f_phase "$1") in Succeeded|Failed) return 0 ;; esac; return 1; }
# The text of a pod's log lines (node-logs.sh: "NS_POD_UID/CONTAINER/N.log TIME STREAM TAG TEXT").
f_log() { grep -a "^${NS_S}_$1_" "$pod_logs" | cut -d' ' -f5-; }
# A quantity (Ki, Mi, Gi or plain) in bytes.
f_bytes() {
	local q=$1
	case $q in
		*Ki) echo $(( ${q%Ki} * 1024 )) ;; *Mi) echo $(( ${q%Mi} * 1048576 )) ;;
		*Gi) echo $(( ${q%Gi} * 1073741824 )) ;; *) echo "$q" ;;
	esac
}

f_static() {
	make_namespace "$NS_S" || { fail "scenario (f): the namespace $NS_S is made"; return; }
	mirrored() {
		[ -n "$(kc -n "$NS_S" get pod "$static_pod" -o jsonpath='{.metadata.annotations.kubernetes\.io/config\.mirror}' 2>/dev/null)" ] &&
			[ "$(f_phase "$static_pod")" = Running ]
	}
	local t0=$SECONDS
	if wait_guest 240 mirrored; then
		pass "the kubelet's mirror pod of the static pod is in the API and Running ($NS_S/$static_pod, kubernetes.io/config.mirror, $((SECONDS - t0)) s after the namespace)"
	else
		fail "the kubelet's mirror pod of the static pod is in the API and Running ($NS_S/$static_pod)" \
			"$(kc -n "$NS_S" get pods -o wide; kubelet_since | grep -a "$static_pod\|static-hold\|mirror" | tail -n 10 | cut -c1-300; diag)"
		return
	fi
	kc -n "$NS_S" get pod "$static_pod" -o json | jq -r '"#   mirror: annotations " + (.metadata.annotations | tostring) + ", owner " + ([.metadata.ownerReferences[]? | .kind + "/" + .name] | join(","))'
	static_uid=$(kc -n "$NS_S" get pod "$static_pod" -o jsonpath='{.metadata.uid}')
	# Before its namespace existed the static pod had no mirror pod: evictd knew it from the
	# node (the manifest in staticPodPath, its /var/log/pods directory; user/pods/static_pods.c,
	# the DaemonSet's static-pods mount), never as a pod without metadata (the cgroup is named
	# by the kubelet's UID, the config hash: [config/common.go] applyDefaults).
	local hash known unknown
	hash=$(kc -n "$NS_S" get pod "$static_pod" -o jsonpath='{.metadata.annotations.kubernetes\.io/config\.mirror}')
	known=$(elog | grep -a 'static pods known from /etc/kubernetes/manifests' | head -n 1)
	unknown=$(elog | grep -a "pod$hash has no pod metadata" | head -n 1)
	if [ -n "$known" ] && [ -z "$unknown" ]; then
		pass "evictd knew the static pod from the node before its mirror pod existed ('$(grep -o 'pods: .*' <<<"$known")')"
	else
		fail "evictd knew the static pod from the node before its mirror pod existed (static pods known from /etc/kubernetes/manifests, not a pod without metadata)" \
			"known: '${known}'; unknown: '$(cut -c1-300 <<<"$unknown")'"
	fi

	# 2. The size: what the node has, less evictd's threshold, less 250 MiB for the hog (it used
	#    468 MiB with 350 left: evictd's memory.available read ~120 MiB above MemAvailable).
	f_pod arm localhost/evictd-test/workload:1 /var/lib/evictd-test-static /state \
		'["/bin/sh", "-c", "while read -r k v u; do [ \"$k\" != MemAvailable: ] || a=$((v / 1024)); done </proc/meminfo; m=$((a - 500 - 250)); echo \"arm: MemAvailable=${a}MiB static-hold=${m}MiB\"; [ $m -ge 200 ] && echo $m >/state/hold"]' ||
		{ fail "the arm pod is created"; return; }
	if ! wait_guest 120 f_done arm || [ "$(f_phase arm)" != Succeeded ]; then
		fail "the static pod is given its size (pod arm)" "$(f_phase arm); $(f_log arm)"
		return
	fi
	sleep 3
	echo "# $(f_log arm | grep -a 'arm:' | tail -n 1)"
	held() { f_log "$static_pod" | grep -aq 'reached max='; }
	if wait_guest 180 held; then
		pass "the static pod holds its memory ($(f_log "$static_pod" | grep -ao 'reached max=[0-9]* MiB' | tail -n 1))"
	else
		fail "the static pod holds its memory" "$(f_log "$static_pod" | tail -n 5; diag)"
		return
	fi
	sleep 5

	# 3. What evictd knows: its ranking for memory.available, from its control socket.
	f_pod probe "localhost/evictd:$EVICTD_TAG" /run/evictd /run/evictd \
		'["evictctl", "--json", "pods", "--signal", "memory.available"]' || { fail "the probe pod is created"; return; }
	wait_guest 120 f_done probe
	# Its output reaches the host through node-logs.sh's serial port, a few seconds later.
	probe_read() { f_log probe >"$tmp/f-probe.json" && jq -e .pods "$tmp/f-probe.json" >/dev/null 2>&1; }
	wait_guest 30 probe_read
	local entry static_usage=0
	entry=$(jq -c --arg n "$static_pod" '.pods[] | select(.name == $n)' "$tmp/f-probe.json" 2>/dev/null)
	# The static pod's UID is the kubelet's (the config hash), not its mirror pod's.
	if [ "$(jq -r '"\(.never_evict) \(.victim) \(.uid)"' <<<"$entry" 2>/dev/null)" = "true false $hash" ] &&
		jq -e '.reason | test("static|mirror")' <<<"$entry" >/dev/null 2>&1; then
		static_usage=$(jq -r .usage <<<"$entry")
		pass "evictd knows the static pod: evictctl pods ranks it never_evict ($(jq -r '"rank \(.rank), usage \(.usage / 1048576 | floor) MiB, \(.qos), reason: \(.reason)"' <<<"$entry" | cut -c1-200))"
	else
		fail "evictd knows the static pod: evictctl pods ranks it never_evict, its reason static/mirror" \
			"probe $(f_phase probe): entry '${entry}'; $(head -c 1500 "$tmp/f-probe.json"); $(elog | grep -ai static | tail -n 5)"
	fi
	jq -r '.pods[]? | "#   evictctl: \(.rank) \(.namespace)/\(.name) \(.qos) usage=\(.usage / 1048576 | floor)MiB never_evict=\(.never_evict) victim=\(.victim) \(.reason)"' "$tmp/f-probe.json" 2>/dev/null | cut -c1-250

	# 4. The BestEffort hog.
	kc -n "$NS_S" apply -f - >/dev/null <<-EOF
	apiVersion: v1
	kind: Pod
	metadata: {name: hog}
	spec:
	  nodeSelector: {kubernetes.io/hostname: $NODE}
	  # The static pod leaves the node below the overlay's soft threshold (900Mi, scenario d):
	  # evictd's pressure taint is on, as it should be, and the hog must land all the same.
	  tolerations: [{key: evictd.io/memory-pressure, operator: Exists, effect: NoSchedule}]
	  restartPolicy: Never
	  terminationGracePeriodSeconds: 5
	  containers:
	  - name: hog
	    image: localhost/evictd-test/workload:1
	    imagePullPolicy: Never
	    command: ["/bin/sh", "-c", "sleep 3; exec /usr/bin/memhog --rate 20 --quiet"]
	EOF
	evicted() { [ "$(kc -n "$NS_S" get pod hog -o jsonpath='{.status.phase}/{.status.reason}' 2>/dev/null)" = Failed/Evicted ]; }
	t0=$SECONDS
	if wait_guest 300 evicted; then
		pass "the BestEffort hog ends Failed/Evicted ($((SECONDS - t0)) s)"
	else
		fail "the BestEffort hog ends Failed/Evicted" "$(kc -n "$NS_S" get pods -o wide; kc -n "$NS_S" get pod hog -o json | jq -c .status; elog | tail -n 15; diag)"
		return
	fi
	local message hog_usage
	message=$(kc -n "$NS_S" get pod hog -o jsonpath='{.status.message}')
	echo "#   hog: $message"
	hog_usage=$(grep -o 'Container hog was using [0-9]*[KMG]*i*' <<<"$message" | awk '{print $5}')
	if [ -n "$hog_usage" ] && [ "$static_usage" -gt "$(f_bytes "$hog_usage")" ]; then
		pass "the static pod used more memory than the hog at its eviction ($((static_usage / 1048576)) MiB > $hog_usage): a ranking by usage alone would have taken it"
	else
		fail "the static pod used more memory than the hog at its eviction" "static: $static_usage bytes; hog: '${hog_usage}'; $message"
	fi

	# The static pod: still Running, never restarted, no eviction on its mirror, for 30 s.
	local states=() bad="" s i
	for i in $(seq 6); do
		s=$(kc -n "$NS_S" get pod "$static_pod" -o json | jq -r '"\(.status.phase)/\(.status.reason // "-") restarts=\(.status.containerStatuses[0].restartCount) disruption=\([.status.conditions[]? | select(.type == "DisruptionTarget")] | length) uid=\(.metadata.uid == $u)"' --arg u "$static_uid")
		states+=("$s")
		[ "$s" = "Running/- restarts=0 disruption=0 uid=true" ] || bad=1
		sleep 5
	done
	if [ -z "$bad" ]; then
		pass "the static pod was never evicted: Running, restartCount 0, no DisruptionTarget, the same mirror, for 30 s after the hog's eviction"
	else
		fail "the static pod was never evicted: Running, restartCount 0, no DisruptionTarget, the same mirror" "${states[*]}"
	fi
	# evictd's own lines: no kill or eviction of the static pod, and it was no candidate in the
	# hog's decision (its event log lists it among the ranked pods, never_evict).
	local decision
	decision=$(elog | grep -a "decision: .*victim=$NS_S/hog " | head -n 1)
	if elog | grep -aq "killing pod $NS_S/$static_pod \|evicted $NS_S/$static_pod \|\"victim\":{\"name\":\"$NS_S/$static_pod\""; then
		fail "evictd never killed the static pod" "$(elog | grep -a "killing pod $NS_S/$static_pod\|evicted $NS_S/$static_pod" | head -n 5 | cut -c1-300)"
	elif [ -z "$decision" ] || grep -q "$static_pod" <<<"$decision"; then
		fail "evictd never killed the static pod, and it was no candidate in the hog's decision" "decision: '${decision}'"
	else
		pass "evictd never killed the static pod, and it was no candidate in the hog's decision ($(grep -o 'candidates=.*' <<<"$decision" | cut -c1-120))"
	fi
	check_kubelet_did_not_evict
	check_no_oom_kill
	elog | grep -a "$NS_S/hog " | grep -av '^[^ ]* stdout' | head -n 3 | cut -c1-300 | sed 's/^/#   evictd: /'
}

f_static
# Cleanup: release the static pod's memory (it exits 0), then the namespace (its mirror pod with
# it; the static pod stays Succeeded on the node until the manifest goes with the guest).
f_pod release localhost/evictd-test/workload:1 /var/lib/evictd-test-static /state \
	'["/bin/sh", "-c", "echo 1 >/state/release"]' 2>/dev/null
static_ended() { [ "$(f_phase "$static_pod")" = Succeeded ]; }
wait_guest 120 static_ended || echo "# scenario (f): the static pod did not end within 120 s of its release ($(f_phase "$static_pod"))"
kc delete namespace "$NS_S" --timeout=180s >/dev/null 2>&1 || echo "# scenario (f): the namespace $NS_S was not gone within 180 s"
