#!/usr/bin/env bash
# evictd's pod source against the real kube-apiserver (tests/cluster): deployed as users deploy
# it (kubectl apply -k tools/deploy), its ServiceAccount's token bound to its Node (the node
# claim), its pods read with the kubelet's client certificate (system:node:NAME, the Node
# authorizer's field-selector rule: no more read access than the kubelet has), it lists this
# node's pods once and watches them; ADDED/DELETED events, bookmarks (a real server sends one a
# minute: apiserver pkg/storage/cacher cacher.go bookmarkFrequency); over HTTP/2 (what libcurl
# negotiates) and HTTP/1.1; a real apiserver restart (the process killed and started on the same
# etcd), a real etcd compaction. The read scope on the real authorizer: the token alone is
# refused a pod list (403) until tools/overlays/cluster-wide-pod-read grants it, and taken away
# again. A dry run: nothing is written.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
. tests/cluster/lib.sh
tpids=()
jqtest() { jq -e "$@" >/dev/null; }

cluster_begin
trap 'for t in "${tpids[@]}"; do kill -KILL "$t" 2>/dev/null; done; cluster_end' EXIT

check "kubectl apply -k tools/deploy on the real apiserver" deploy_evictd
node=watch-n1
check "a Node registered by its own identity (system:node:$node)" make_node "$node"
check "a namespace with its default ServiceAccount" make_namespace w
pod() { # NAME NODE
	kc -n w create -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$1"},
 "spec": {"nodeName": "$2", "containers": [{"name": "c", "image": "busybox"}]}}
EOF
}
pod a "$node"; pod b "$node"; pod elsewhere other-node
evictd_token "$node" >"$tmp/token"
check "a token of evictd's ServiceAccount bound to the Node" test -s "$tmp/token"
# The kubelet's rotating client certificate file holds the certificate and its key.
cat "$CLUSTER_DIR/pki/node-$node.crt" "$CLUSTER_DIR/pki/node-$node.key" >"$tmp/kubelet-client-current.pem"

mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
readyz() { curl -s -o "$tmp/readyz.out" -w '%{http_code}' "http://127.0.0.1:$mport/readyz"; }
is_ready() { test "$(readyz)" = "$1"; }
metric_is() { test "$(metric "$1")" = "$2"; }
metric_ge() { local v; v=$(metric "$1"); test -n "$v" && [ "${v%.*}" -ge "$2" ]; }
# run_evictd NAME PODS-CLIENT-CERT [ENV=VALUE...]: evictd --dry-run against the apiserver.
run_evictd() {
	local name=$1 cert=$2; shift 2
	mport=$(free_port)
	start "$name" "$EVICTD" EVICTD_TEST_KUBE_RELIST_SPREAD_MS=1500 "$@" -- --dry-run --no-bpf \
		--kube-pods-client-cert "$cert" \
		--state-dir="$tmp/state-$name" --node-name "$node" --kube-api-server "$API" \
		--kube-token-file "$tmp/token" --kube-ca-file "$CA" \
		--eviction-hard "memory.available<$((mem_total + 1))" --metrics-address "127.0.0.1:$mport" \
		--control-socket "$tmp/$name.sock" --event-log off --log-level=debug
}
# evictd's pod lists the apiserver answered 200 (its audit log: the apiserver's own counters
# start again at a restart).
lists() { audit "system:node:$node" 'select(.verb == "list" and (.uri | startswith("/api/v1/pods")) and .code == 200)' | wc -l; }

lists0=$(lists)
run_evictd h2 "$tmp/kubelet-client-current.pem"
check "/readyz 200 once this node's pods are listed and watched" wait_for 30 is_ready 200
check "listed" metric_is evictd_kube_pods_listed 1
check "the watch is open" metric_is evictd_kube_pods_watch_open 1
check "libcurl negotiated HTTP/2 with the real apiserver" metric_is evictd_kube_http_version 2
events() { metric evictd_kube_pods_watch_events_total; }
ev=$(events)
pod c "$node"
check "a pod created on the node arrives as a watch event" wait_for 20 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
ev=$(events)
pod elsewhere-2 other-node
sleep 2
check "a pod created on another node does not" metric_is evictd_kube_pods_watch_events_total "$ev"
kc -n w delete pod a --grace-period=0 --force >/dev/null 2>&1
check "a pod deleted is an event" wait_for 20 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
check "the apiserver answered one pod LIST of evictd's" test "$(( $(lists) - lists0 ))" = 1
# A real apiserver sends a bookmark a minute (cacher.go bookmarkFrequency).
check "a bookmark from the real watch cache (within 75 s)" wait_for 75 metric_ge evictd_kube_pods_watch_bookmarks_total 1

# ---- an apiserver restart: the process killed, started again on the same etcd --------------
lists0=$(lists)
watches0=$(metric evictd_kube_pods_watches_total)
check "kube-apiserver killed and started again" apiserver_restart
check "evictd watches again after the restart" wait_for 40 metric_ge evictd_kube_pods_watches_total $((watches0 + 1))
check "and is ready" wait_for 20 is_ready 200
ev=$(events)
pod d "$node"
check "the new watch brings a pod created after the restart" wait_for 20 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
restart_lists=$(( $(lists) - lists0 ))
check "at most one LIST for the restart ($restart_lists)" test "$restart_lists" -le 1
grep -E 'kube: pods of' "$tmp/h2.err" | tail -n 4 | sed 's/^/# /'

# ---- an etcd compaction past evictd's resourceVersion, then a restart: a real 410 ------------
for i in 1 2 3; do kc -n w create configmap "churn-$i" --from-literal=k=v >/dev/null; done
check "etcd compacted at its current revision" etcd_compact
relists0=$(metric evictd_kube_pods_relists_total)
check "kube-apiserver restarted after the compaction" apiserver_restart
lists0=$(lists)
pod e "$node"
check "ready again" wait_for 40 is_ready 200
ev=$(events)
pod e2 "$node"
check "and watching: a new pod arrives" wait_for 20 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
echo "# relists $relists0 -> $(metric evictd_kube_pods_relists_total); lists $(metric evictd_kube_pods_lists_total)"

stop "${tpids[-1]}"
check "a dry run wrote nothing: evictd's account sent only get, list and watch (the audit log)" \
	test -z "$(audit "$EVICTD_SA" 'select(.verb | IN("get", "list", "watch") | not)')"
check "its token read no pod: the pods were read as system:node:$node" \
	test -z "$(audit "$EVICTD_SA" 'select(.uri | startswith("/api/v1/pods"))')"
check "every pod list carried the node's field selector" \
	test -z "$(audit "system:node:$node" 'select(.verb == "list" and (.uri | startswith("/api/v1/pods")) and (.uri | contains("fieldSelector=spec.nodeName%3D'"$node"'") | not))')"
check "the apiserver saw the node claim on evictd's token" \
	test -n "$(audit "$EVICTD_SA" 'select(.extra["authentication.kubernetes.io/node-name"] == ["'"$node"'"])' | head -1)"
check "evictd exited 0" test "$rc" = 0
check "no sanitizer or crash report" bash -c "! grep -qE '$SAN_PATTERN' '$tmp/h2.err'"

# ---- HTTP/1.1 ---------------------------------------------------------------------------------
run_evictd h1 "$tmp/kubelet-client-current.pem" EVICTD_KUBE_HTTP_VERSION=1.1 EVICTD_TEST_KUBE_PROGRESS_TIMEOUT_MS=6000
check "HTTP/1.1: ready" wait_for 30 is_ready 200
check "HTTP/1.1: the response was HTTP/1.1" metric_is evictd_kube_http_version 1.1
ev=$(events)
pod f "$node"
check "HTTP/1.1: watch events arrive" wait_for 20 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
# A quiet cluster: the real watch cache sends a watcher only bookmarks newer than what it
# watches from, and no pod changes, so a healthy watch is silent past the progress bound (6 s
# here, 90 s shipped). evictd checks it with a list from the watch cache and stays ready.
l0=$(metric evictd_kube_pods_lists_total); b0=$(metric evictd_kube_pods_watch_bookmarks_total)
ready_all=1
for _ in $(seq 10); do sleep 2; is_ready 200 || ready_all=0; done
l1=$(metric evictd_kube_pods_lists_total); b1=$(metric evictd_kube_pods_watch_bookmarks_total)
echo "# quiet 20 s: lists $l0 -> $l1, bookmarks $b0 -> $b1"
if [ "$b1" = "$b0" ]; then
	check "a quiet cluster (no bookmark in 20 s): the silent watch was checked by lists" test "$l1" -gt "$l0"
	check "and /readyz stayed 200 throughout (not stale)" test "$ready_all" = 1
else
	pass "# SKIP the cluster was not quiet (a pod changed somewhere: bookmarks came)"
fi
stop "${tpids[-1]}"

# ---- the read scope on the real authorizer -------------------------------------------------------
# The Node authorizer (KEP-4601): the node identity lists its own pods only.
code=$(curl -s -o "$tmp/all.json" -w '%{http_code}' --cacert "$CA" --cert "$tmp/kubelet-client-current.pem" "$API/api/v1/pods")
check "the node identity's cluster-wide pod list is refused 403 by the Node authorizer" test "$code" = 403
jq -r .message "$tmp/all.json" | sed 's/^/# /'
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" --cert "$tmp/kubelet-client-current.pem" \
	"$API/api/v1/pods?fieldSelector=spec.nodeName%3Dother-node")
check "and another node's pods: 403" test "$code" = 403
code=$(curl -s -o "$tmp/all.json" -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $(cat "$tmp/token")" \
	"$API/api/v1/pods?fieldSelector=spec.nodeName%3D$node")
check "evictd's token, as deployed, may not list pods at all: 403 from RBAC" test "$code" = 403
# Without the kubelet's certificate (a token-authenticated kubelet) the token is refused, and
# evictd says what to do; the overlay grants the token its reads.
run_evictd tok none
check "token only: /readyz 503" wait_for 30 is_ready 503
readyz_says() { readyz >/dev/null; grep -q "$1" "$tmp/readyz.out"; }
check "/readyz names the 403 and the overlay" wait_for 20 readyz_says 'refuses to list pods (403).*cluster-wide-pod-read'
sed 's/^/# \/readyz: /' "$tmp/readyz.out"
check "evictd_kube_api_forbidden is 1" metric_is evictd_kube_api_forbidden 1
kc apply -k tools/overlays/cluster-wide-pod-read >/dev/null
check "access given by tools/overlays/cluster-wide-pod-read: /readyz 200" wait_for 60 is_ready 200
kc apply -k tools/deploy >/dev/null
kc get clusterrole evictd -o json | jq '.rules |= map(select(.resources != ["pods"]))' | kc replace -f - >/dev/null
# Taken away again: the open watch goes on (RBAC is checked per request), the next list after
# a restart is refused.
apiserver_restart >/dev/null
check "access taken away again: /readyz 503 after the restart's relist" wait_for 60 is_ready 503
check "/healthz stayed 200" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/healthz")" = 200
stop "${tpids[-1]}"
check "evictd exited 0" test "$rc" = 0
done_testing
