# Shared by the tests against the real control plane (tests/cluster/test_*.sh; sourced after
# tests/cli/tap.sh). tests/run-all.sh's "cluster" suite starts one control plane and runs every
# test on it (CLUSTER_DIR in the environment); a test run alone starts its own.
#
#   cluster_begin             join the suite's control plane or start one; sets tmp (scratch)
#   cluster_end               the test's own cleanup (its namespace, nodes, daemons, cgroups)
#   make_node NAME            a Node object as its kubelet registers it (the node identity's
#                             client certificate), Ready; $CLUSTER_DIR/node-NAME.kubeconfig
#   node_heartbeat NAME [lease-only]  renew NAME's Lease (and Ready condition) every 10 s in the
#                             background (what the kubelet does; none runs on this host: its
#                             pods would need the memory controller, and the next issue brings a
#                             real kubelet in a guest)
#   evictd_token NAME         a token of evictd's ServiceAccount bound to Node NAME (the node
#                             claim the admission policy reads), on stdout
#   deploy_evictd             kubectl apply -k tools/deploy (RBAC, admission policy, FlowSchema)
#   make_namespace NAME       a namespace whose default ServiceAccount exists
#   kn NODE ARGS...           kubectl as the node identity system:node:NODE
#   wait_for SECONDS CMD...   until CMD succeeds (by the clock)
#   api METHOD PATH [BODY]    the API as the admin, with curl
#   audit USER [JQ-FILTER]    the apiserver's audit log of USER's completed requests since
#                             cluster_begin (JSON lines: verb, uri, code, agent, extra), filtered
#   api_metric NAME [LABELS]  the sum of a kube-apiserver metric (from its /metrics) whose
#                             labels contain every LABELS substring
# The evictd binary is $EVICTD (build/evictd).

_cluster_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$_cluster_lib_dir/cluster.sh"
_cluster_owned=""
_cluster_nodes=()
_cluster_bg=()

cluster_begin() {
	tmp=$(mktemp -d /tmp/evictd-cluster-test-XXXXXX)
	if [ -n "${CLUSTER_DIR:-}" ] && [ -f "$CLUSTER_DIR/env" ]; then
		cluster_env "$CLUSTER_DIR"
	else
		_cluster_owned=1
		if ! cluster_up "$tmp/cluster"; then
			echo "not ok 1 - the control plane did not start (see above)"
			echo "1..1"
			cluster_down
			exit 1
		fi
	fi
	echo "# against Kubernetes $KUBE_VERSION at $API"
	# The audit log is the control plane's, shared by the suite's tests: each reads its own part.
	AUDIT_SINCE=$(date -u +%FT%T.%6NZ)
}

cluster_end() {
	local pid n
	for pid in "${_cluster_bg[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
	for n in "${_cluster_nodes[@]}"; do kc delete node "$n" --wait=false >/dev/null 2>&1; done
	[ -n "$_cluster_owned" ] && cluster_down
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}

kn() { local n=$1; shift; "$KUBEBIN" kubectl --kubeconfig "$CLUSTER_DIR/node-$n.kubeconfig" "$@"; }

# By the clock: a kubectl takes a good part of a second.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt "$end" ] || return 1
		sleep 0.1
	done
}

# api METHOD PATH [JSON-BODY]: the API as the cluster admin (curl, the admin certificate).
api() {
	curl -sf --cacert "$CA" --cert "$CLUSTER_DIR/pki/admin.crt" --key "$CLUSTER_DIR/pki/admin.key" \
		-X "$1" ${3:+-H 'Content-Type: application/json' --data "$3"} "$API$2"
}

# The Node as the kubelet registers it: created by its own identity (NodeRestriction lets a
# node create only itself), then its status: Ready, with capacity for the scheduler.
_node_status() { # NAME
	local now
	now=$(date -u +%FT%TZ)
	printf '{"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"},"allocatable":{"cpu":"8","memory":"31Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":"%s","lastTransitionTime":"%s"},{"type":"MemoryPressure","status":"False","reason":"KubeletHasSufficientMemory","lastHeartbeatTime":"%s","lastTransitionTime":"%s"}]}}' \
		"$now" "$now" "$now" "$now"
}

make_node() {
	local n=$1
	node_cert "$n" || return 1
	kn "$n" create -f - >/dev/null <<EOF || return 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$n", "labels": {"kubernetes.io/hostname": "$n", "kubernetes.io/os": "linux"}}}
EOF
	_cluster_nodes+=("$n")
	_node_status_patch "$n"
}

# The Node authorizer lets a node patch its nodes/status but not get it, which kubectl patch
# --subresource does first: the kubelet's PATCH, sent as the kubelet sends it.
_node_status_patch() {
	curl -sf -o /dev/null --cacert "$CA" --cert "$CLUSTER_DIR/pki/node-$1.crt" --key "$CLUSTER_DIR/pki/node-$1.key" \
		-X PATCH -H 'Content-Type: application/merge-patch+json' --data "$(_node_status "$1")" \
		"$API/api/v1/nodes/$1/status"
}

# make_namespace NAME: a namespace whose default ServiceAccount exists (the controller manager
# makes it; a pod created before is refused by the ServiceAccount admission plugin).
make_namespace() {
	kc create namespace "$1" >/dev/null && wait_for 30 kc -n "$1" get serviceaccount default >/dev/null 2>&1
}

node_heartbeat() {
	local n=$1 lease_only=${2:-}
	(
		while :; do
			[ -n "$lease_only" ] || _node_status_patch "$n"
			kn "$n" apply -f - >/dev/null 2>&1 <<EOF
{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "$n", "namespace": "kube-node-lease"},
 "spec": {"holderIdentity": "$n", "leaseDurationSeconds": 40, "renewTime": "$(date -u +%FT%T.000000Z)"}}
EOF
			sleep 10
		done
	) &
	_cluster_bg+=("$!")
}

deploy_evictd() {
	kc apply -k "$_cluster_lib_dir/../../tools/deploy" >"$tmp/deploy.out" 2>&1 || { cat "$tmp/deploy.out" >&2; return 1; }
}

evictd_token() {
	kc -n evictd-system create token evictd --bound-object-kind Node --bound-object-name "$1" \
		--bound-object-uid "$(kc get node "$1" -o jsonpath='{.metadata.uid}')" --duration 2h
}

api_metric() {
	local name=$1; shift
	curl -sf --cacert "$CA" --cert "$CLUSTER_DIR/pki/admin.crt" --key "$CLUSTER_DIR/pki/admin.key" \
		"$API/metrics" | awk -v m="$name" -v want="$*" '
		BEGIN { n = split(want, w, " ") }
		index($0, m) == 1 && (substr($0, length(m) + 1, 1) == "{" || substr($0, length(m) + 1, 1) == " ") {
			for (i = 1; i <= n; i++) if (index($0, w[i]) == 0) next
			s += $NF
		}
		END { printf "%d\n", s }'
}

EVICTD_SA=system:serviceaccount:evictd-system:evictd
audit() {
	jq -c --arg u "$1" --arg since "${AUDIT_SINCE:-}" "select(.stage == \"ResponseComplete\" and .user.username == \$u and .stageTimestamp >= \$since) |
		{verb, uri: .requestURI, code: .responseStatus.code, agent: .userAgent, extra: .user.extra} | ${2:-.}" \
		"$CLUSTER_DIR/audit.log"
}
