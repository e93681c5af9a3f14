#!/usr/bin/env bash
# Real 429s from API Priority and Fairness, and evictd's handling of them. A priority level of a
# few seats (evictd-test-tiny: nominalConcurrencyShares 1, nothing lent or borrowed, Reject when
# full) and a FlowSchema that puts evictd's ServiceAccount (and a filler ServiceAccount) in it,
# matched before evictd's own FlowSchemas (tools/deploy/flowschema.yaml, 410 and 510). The filler
# holds every seat on demand: cluster-wide pod LISTs at a resourceVersion far ahead, which the
# watch cache holds for 3 s (then 504) while the request keeps its seat. evictd starts during
# that window, for real (--no-bpf, a memory threshold always met): it kills the pod at once and
# its taint GET/PATCH and pods/status PATCH (its token: this level) meet 429. The audit log says
# when each attempt reached the server: a retry no sooner than the Retry-After, the PATCH 200
# after the window, the pod Failed/Evicted with DisruptionTarget, the kill not held for the API.
# The pod list and watch go with the node's client certificate (another level): evictd gets
# ready during the window. A stand-in plays the kubelet's cgroup part for the one pod (see
# test_controllers.sh): its pod cgroup with a sleeping process.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
. tests/cli/cgroups.sh
. tests/cluster/lib.sh
EVICTD=${EVICTD:-build/evictd}
tpids=()
jqtest() { jq -e "$@" >/dev/null; }
jqn() { jq -n -e "$@" >/dev/null; }

v2=$(cg_v2_root)
if [ -z "$v2" ] || [ ! -x "$EVICTD" ] || ! command -v jq >/dev/null || ! command -v curl >/dev/null; then
	echo "ok 1 # SKIP needs a writable cgroup v2 mount, $EVICTD, jq and curl"
	echo "1..1"
	exit 0
fi
cluster_begin

node=apf-n1
ns=apf
level=evictd-test-tiny
rel="/evictd-apf-$$"
top="$v2$rel"
filler_pids=()
watch_pid=""
cleanup() {
	local p
	for p in "${filler_pids[@]}" $watch_pid; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	for p in "${tpids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	# The FlowSchema first: on the suite's control plane evictd's later tests keep their levels.
	kc delete flowschema "$level" --wait=false >/dev/null 2>&1
	kc delete prioritylevelconfiguration "$level" --wait=false >/dev/null 2>&1
	kc delete clusterrolebinding apf-filler clusterrole apf-filler --wait=false >/dev/null 2>&1
	cg_remove "$top"
	kc delete namespace "$ns" --wait=false >/dev/null 2>&1
	cluster_end
}
trap cleanup EXIT

now_s() { date +%s.%N; }
# audit_t USER [JQ-FILTER]: lib.sh's audit() with the times: t0 (received), t (completed), in
# seconds since the epoch. (The Retry-After the server sent is not in it: the filler records it.)
audit_t() {
	jq -c --arg u "$1" 'def secs: (sub("\\.[0-9]+Z$"; "Z") | fromdate) + ((capture("(?<f>\\.[0-9]+)Z$").f // ".0") | tonumber);
		select(.stage == "ResponseComplete" and .user.username == $u) |
		{verb, uri: .requestURI, code: .responseStatus.code, t0: (.requestReceivedTimestamp | secs),
		 t: (.stageTimestamp | secs)} | '"${2:-.}" "$CLUSTER_DIR/audit.log"
}

# ---- the cluster side ---------------------------------------------------------------------------
check "kubectl apply -k tools/deploy on the real apiserver" deploy_evictd
check "a Node registered by its own identity (system:node:$node)" make_node "$node"
node_heartbeat "$node"
check "a namespace with its default ServiceAccount" make_namespace "$ns"
evictd_token "$node" >"$tmp/token"
check "a token of evictd's ServiceAccount bound to the Node" test -s "$tmp/token"

own_prec=$(kc get flowschema -l app.kubernetes.io/name=evictd -o json | jq '[.items[].spec.matchingPrecedence] | min')
prec=100
check "evictd's own FlowSchemas match from precedence $own_prec: ours ($prec) goes before them" test "${own_prec:-0}" -gt "$prec"

kc apply -f - >"$tmp/apply.out" 2>&1 <<EOF
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "apf-filler", "namespace": "$ns"}},
 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "apf-filler"},
  "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]},
 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "apf-filler"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "apf-filler"},
  "subjects": [{"kind": "ServiceAccount", "name": "apf-filler", "namespace": "$ns"}]},
 {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": {"name": "$level"},
  "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
   "limitResponse": {"type": "Reject"}}}},
 {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "$level"},
  "spec": {"priorityLevelConfiguration": {"name": "$level"}, "matchingPrecedence": $prec,
   "distinguisherMethod": {"type": "ByUser"},
   "rules": [{"subjects": [
      {"kind": "ServiceAccount", "serviceAccount": {"name": "evictd", "namespace": "evictd-system"}},
      {"kind": "ServiceAccount", "serviceAccount": {"name": "apf-filler", "namespace": "$ns"}}],
     "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
     "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}]}
EOF
check "the priority level $level (1 share, Reject) and its FlowSchema (precedence $prec), the filler's RBAC" \
	eval '[ $? = 0 ] || { sed "s/^/# /" "$tmp/apply.out"; false; }'
filler_token=$(kc -n "$ns" create token apf-filler --duration 1h)
seats_now() { api_metric apiserver_flowcontrol_nominal_limit_seats "priority_level=\"$level\""; }
has_seats() { [ "$(seats_now)" -ge 1 ]; }
check "the apiserver's APF configuration has the level (apiserver_flowcontrol_nominal_limit_seats)" wait_for 15 has_seats
seats=$(seats_now)
fs_ok() { kc get flowschema "$level" -o json | jqtest 'any(.status.conditions[]?; .type == "Dangling" and .status == "False")'; }
check "the FlowSchema is not dangling" wait_for 10 fs_ok
echo "# $level: nominal limit $seats seats (of the server's 600)"
check "a few seats, as 600 x 1 / the sum of shares gives ($seats)" test "$seats" -ge 1 -a "$seats" -le 6

# ---- the pod and its stand-in kubelet -----------------------------------------------------------
kc -n "$ns" create -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "victim"},
 "spec": {"nodeName": "$node", "terminationGracePeriodSeconds": 5,
  "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}
EOF
uid=$(kc -n "$ns" get pod victim -o jsonpath='{.metadata.uid}')
cg="$top/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${uid//-/_}.slice"
mkdir -p "$cg"
(sh -c 'echo $$ >"$1/cgroup.procs" && exec sleep 3600' sh "$cg" &)
check "the pod bound to $node runs in its pod cgroup (the stand-in)" wait_for 5 cg_populated "$cg"
# The moment the cgroup empties (evictd's cgroup.kill).
(while cg_populated "$cg"; do sleep 0.02; done; now_s >"$tmp/cg-empty") &
watch_pid=$!

# ---- evictd's configuration ---------------------------------------------------------------------
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard:\n  memory.available: "%s"\n' \
	"$((mem_total + 1))" >"$tmp/evictd.yaml"
pods_cert=()
if "$EVICTD" --help 2>&1 | grep -q -- '--kube-pods-client-cert'; then
	cat "$CLUSTER_DIR/pki/node-$node.crt" "$CLUSTER_DIR/pki/node-$node.key" >"$tmp/node.pem"
	pods_cert=("--kube-pods-client-cert=$tmp/node.pem")
fi
mport=$(free_port)
elog=$tmp/evictd.err

# ---- the window: every seat held ----------------------------------------------------------------
window=12
fillers=$((seats + 1))	# one more than the seats: a seat freed between two LISTs is taken back at once
held_list="/api/v1/pods?resourceVersion=999999999&resourceVersionMatch=NotOlderThan"
# filler I END: "code seconds retry-after answered-at" per LIST. APF's Retry-After is not fixed
# (1.34: per priority level, it grows while the level keeps rejecting): the filler's 429s say what
# it was when evictd met one.
filler() {
	while [ "$(date +%s%N)" -lt "$2" ]; do
		curl -s -o /dev/null -w '%{http_code} %{time_total} %header{retry-after} ' --cacert "$CA" \
			-H "Authorization: Bearer $filler_token" "$API$held_list" >>"$tmp/filler-$1.log"
		now_s >>"$tmp/filler-$1.log"
	done
}
win_start=$(now_s)
win_end_ns=$(( $(date +%s%N) + window * 1000000000 ))
for i in $(seq "$fillers"); do filler "$i" "$win_end_ns" & filler_pids+=("$!"); done
sleep 0.7
# A request as evictd's token now: the level is full.
probe() {
	curl -s -D "$tmp/probe.h" -o "$tmp/probe.body" -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $(cat "$tmp/token")" \
		"$API/api/v1/nodes/$node"
}
probe_429() { [ "$(probe)" = 429 ]; }
check "during the window the real server answers evictd's token 429" wait_for 3 probe_429
retry_after=$(awk 'tolower($1) == "retry-after:" {print $2}' "$tmp/probe.h" | tr -d '\r')
echo "# Retry-After: ${retry_after:-none}; body: $(head -c 200 "$tmp/probe.body" | tr '\n' ' ')"
check "the 429 carries a Retry-After" test -n "$retry_after"

evictd_start=$(now_s)	# the probe above, as the same token, was before
start evictd "$EVICTD" -- --no-bpf --profile=kubernetes \
	--node-name "$node" --cgroup-root="$rel" --static-pod-path= --oom-guard=off \
	--housekeeping-interval=500ms --config "$tmp/evictd.yaml" \
	--kube-api-server "$API" --kube-token-file "$tmp/token" --kube-ca-file "$CA" "${pods_cert[@]}" \
	--kube-pressure-taints --state-dir="$tmp/state" --metrics-address "127.0.0.1:$mport" \
	--control-socket "$tmp/evictd.sock" --event-log "$tmp/decisions.jsonl" --log-level=debug
check "evictd killed the pod's cgroup during the window (the kill not held for the API)" \
	wait_for $((window - 1)) test -s "$tmp/cg-empty"
grep -m1 'evicted ' "$elog" | sed 's/^/# /'
for p in "${filler_pids[@]}"; do wait "$p"; done
filler_pids=()
win_end=$(now_s)
echo "# the window: $(cat "$tmp"/filler-*.log | awk '{n[$1]++} END {for (c in n) printf "%s x%d ", c, n[c]}')(the filler's answers)"
held() { awk '$1 == 504 && $2 >= 2.5' "$tmp"/filler-*.log | wc -l; }
check "the filler's LISTs held their seats ~3 s each ($(held) answered 504 after >= 2.5 s)" test "$(held)" -ge "$seats"

# ---- after the window ---------------------------------------------------------------------------
pod_json() { kc -n "$ns" get pod victim -o json 2>/dev/null; }
evicted() {
	pod_json | jqtest '.status.phase == "Failed" and .status.reason == "Evicted" and
		any(.status.conditions[]?; .type == "DisruptionTarget" and .status == "True")'
}
check "the pod ends Failed, reason Evicted, DisruptionTarget True" wait_for 30 evicted
status_uri="/api/v1/namespaces/$ns/pods/victim/status"
sleep 1	# the audit log's last lines
audit_t "$EVICTD_SA" "select(.t0 >= $evictd_start)" >"$tmp/evictd-audit.jsonl"
echo "# evictd's requests with the token (audit log, seconds after its start):"
jq -r --argjson s "$evictd_start" '"#   +\(.t0 - $s | . * 1000 | round / 1000)s \(.verb) \(.uri) \(.code)"' "$tmp/evictd-audit.jsonl" | head -40
n429=$(jq -s 'map(select(.code == 429)) | length' "$tmp/evictd-audit.jsonl")
check "evictd met real 429s ($n429 in the audit log)" test "$n429" -ge 1
# The retries: for each URI and verb, the time from a 429's answer to the next attempt.
jq -s -c 'group_by([.verb, .uri])[] | sort_by(.t0) | . as $a
	| [range(1; length) | select($a[. - 1].code == 429) | {verb: $a[.].verb, uri: $a[.].uri, gap: ($a[.].t0 - $a[. - 1].t)}] | .[]' \
	"$tmp/evictd-audit.jsonl" >"$tmp/gaps.jsonl"
echo "# gaps from a 429 to the next attempt of the same request (s): $(jq -r '"\(.verb) \(.uri | sub("^/api/v1/"; "")) \(.gap * 1000 | round / 1000)"' "$tmp/gaps.jsonl" | tr '\n' ';')"
ngaps=$(wc -l <"$tmp/gaps.jsonl")
check "evictd retried after its 429s ($ngaps retries)" test "$ngaps" -ge 1
min_gap=$(jq -s 'map(.gap) | min // 0' "$tmp/gaps.jsonl")
# The Retry-After in force at each of evictd's 429s: the filler's 429 answered closest to it.
awk '$1 == 429 && $3 != "" {print $4, $3}' "$tmp"/filler-*.log | sort -n >"$tmp/ra.txt"
echo "# the Retry-After the server sent the filler over the window: $(awk '{print $2}' "$tmp/ra.txt" | uniq -c | awk '{printf "%s x%s; ", $2, $1}')"
jq -s -c --rawfile ra "$tmp/ra.txt" '($ra | split("\n") | map(select(length > 0) | split(" ") | map(tonumber))) as $r
	| group_by([.verb, .uri])[] | sort_by(.t0) | . as $a
	| [range(1; length) | select($a[. - 1].code == 429) | $a[. - 1].t as $t
	   | {verb: $a[.].verb, uri: $a[.].uri, gap: ($a[.].t0 - $t), from_sent: ($a[.].t0 - $a[. - 1].t0),
	      ra: ($r | min_by(.[0] - $t | fabs) | select((.[0] - $t | fabs) < 0.3) | .[1])}] | .[]' \
	"$tmp/evictd-audit.jsonl" >"$tmp/gaps-ra.jsonl"
echo "# gap vs the Retry-After then: $(jq -r '"\(.verb) \(.uri | sub("^/api/v1/"; "") | sub("namespaces/[^/]+/"; "")) \(.gap * 1000 | round / 1000)/\(.ra // "?")"' "$tmp/gaps-ra.jsonl" | tr '\n' ';')"
n_known=$(jq -s 'map(select(.ra != null)) | length' "$tmp/gaps-ra.jsonl")
check "the Retry-After known for evictd's 429s ($n_known of $ngaps, from the filler's at the same moment)" test "$n_known" -ge 1
# The queued jobs (pods/status, Events) wait from the 429's answer (kube/client.c run_job). The
# taint reconciler is a task whose next run is counted from the start of the run that met the
# 429 (report_taints.c taint_task_run: now_ns + backoff): a slow 429 shortens its wait after
# the answer by as much. Its check is from the attempt sent; the shortfall is printed.
check "no pods/status or Event retry sooner than the Retry-After after the 429 (50 ms of slack for the audit clock)" \
	jqtest -s 'all(.[] | select(.uri | test("/nodes/") | not); .ra == null or .gap >= .ra - 0.05)' "$tmp/gaps-ra.jsonl"
check "no taint GET retry sooner than the Retry-After after the attempt that met the 429 was sent" \
	jqtest -s 'all(.[] | select(.uri | test("/nodes/")); .ra == null or .from_sent >= .ra - 0.05)' "$tmp/gaps-ra.jsonl"
jq -r 'select(.ra != null and .gap < .ra - 0.01) | "# NOTE: \(.verb) \(.uri) retried \(.gap * 1000 | round / 1000) s after a 429 with Retry-After \(.ra) (\(.from_sent * 1000 | round / 1000) s after that attempt was sent)"' "$tmp/gaps-ra.jsonl"
over=$(jq -s 'map(select(.ra != null) | .gap - .ra) | max // 0' "$tmp/gaps-ra.jsonl")
echo "# the longest wait beyond the Retry-After: ${over} s (evictd's job retries: max(Retry-After, its backoff), no jitter on the Retry-After)"
status_codes=$(jq -s -r --arg u "$status_uri" 'map(select(.verb == "patch" and .uri == $u) | .code) | map(tostring) | join(" ")' "$tmp/evictd-audit.jsonl")
echo "# the pods/status PATCH attempts: $status_codes"
check "the pods/status PATCH met at least one 429" eval '[[ " $status_codes " == *" 429 "* ]]'
check "the pods/status PATCH finally succeeded (200, last)" eval '[[ "$status_codes" == *200 ]]'
status_ok=$(jq -s --arg u "$status_uri" 'map(select(.verb == "patch" and .uri == $u and .code == 200) | .t) | min // 0' "$tmp/evictd-audit.jsonl")
win_stop=$(jq -n "$win_end_ns / 1000000000")
echo "# the filler stopped starting LISTs at +$(jq -n "$win_stop - $evictd_start | . * 1000 | round / 1000")s; the status PATCH's 200 at +$(jq -n "$status_ok - $evictd_start | . * 1000 | round / 1000")s"
check "the 200 came only after the window (none got through while the filler held the level)" \
	jqn --argjson a "$status_ok" --argjson w "$win_stop" '$a >= $w'
node_codes=$(jq -s -r --arg u "/api/v1/nodes/$node" 'map(select(.uri == $u) | "\(.verb):\(.code)") | join(" ")' "$tmp/evictd-audit.jsonl")
echo "# the node's taint requests: $node_codes"
taint_on() { kc get node "$node" -o json | jqtest 'any(.spec.taints[]?; .key == "evictd.io/memory-pressure")'; }
check "the taint reached the node too" wait_for 10 taint_on
taint_ok=$(jq -s --arg u "/api/v1/nodes/$node" 'map(select(.verb == "patch" and .uri == $u and .code == 200) | .t) | min // 0' "$tmp/evictd-audit.jsonl")
# Known limit (doc/DESIGN.md §8): the taint goes first when both are sent, but once both meet
# 429s each retries on its own clock and the status PATCH may land first (seen on the suite's
# loaded control plane). Said, not asserted.
if jqn --argjson a "$taint_ok" --argjson b "$status_ok" '$a > 0 and $a < $b'; then
	echo "# after the 429s the taint PATCH landed before the pods/status PATCH"
else
	echo "# after the 429s the pods/status PATCH landed before the taint PATCH (a known limit)"
fi
cg_empty=$(cat "$tmp/cg-empty" 2>/dev/null || echo 0)
echo "# the cgroup emptied at +$(jq -n "$cg_empty - $evictd_start | . * 1000 | round / 1000")s"
check "the cgroup emptied before the status PATCH's 200 (the kill did not wait for the API)" \
	jqn --argjson c "$cg_empty" --argjson a "$status_ok" '$c > 0 and $c < $a'
check "evictd stayed alive through the 429s" kill -0 "$dpid"
check "no request given up or dropped" eval '! grep -E "giving up|dropped|not retried" "$elog" | sed "s/^/# /" | grep -q .'
curl -s "http://127.0.0.1:$mport/metrics" | grep -E '^evictd_kube|^evictd_[a-z_]*(retr|429|throttl)' | sed 's/^/# metric /' | head -30
grep -iE '429|retry|too many' "$elog" | head -8 | sed 's/^/# log: /'

stop "${tpids[-1]}"
check "evictd exited 0" test "$rc" = 0
check "no sanitizer or crash report" no_sanitizer_report "$elog"
echo "# $SECONDS s"
done_testing
