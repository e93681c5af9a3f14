#!/usr/bin/env bash
# evictd's pod source against the real kube-apiserver (tests/cluster): deployed as users deploy
# it (kubectl apply -k tools/deploy), its ServiceAccount's token bound to its Node (the node
# claim), it lists this node's pods once and watches them; ADDED/DELETED events, bookmarks
# (a real server sends one a minute: apiserver pkg/storage/cacher cacher.go bookmarkFrequency);
# over HTTP/2 (what libcurl negotiates) and HTTP/1.1; a real apiserver restart (the process
# killed and started on the same etcd), a real etcd compaction (410), RBAC taken away (403) and
# given back. A dry run: nothing is written.
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

mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
readyz() { curl -s -o "$tmp/readyz.out" -w '%{http_code}' "http://127.0.0.1:$mport/readyz"; }
is_ready() { test "$(readyz)" = "$1"; }
metric_is() { test "$(metric "$1")" = "$2"; }
metric_ge() { local v; v=$(metric "$1"); test -n "$v" && [ "${v%.*}" -ge "$2" ]; }
# run_evictd NAME [ENV=VALUE...]: evictd --dry-run against the apiserver.
run_evictd() {
	local name=$1; shift
	mport=$(free_port)
	start "$name" "$EVICTD" EVICTD_TEST_KUBE_RELIST_SPREAD_MS=1500 "$@" -- --dry-run --no-bpf \
		--state-dir="$tmp/state-$name" --node-name "$node" --kube-api-server "$API" \
		--kube-token-file "$tmp/token" --kube-ca-file "$CA" \
		--eviction-hard "memory.available<$((mem_total + 1))" --metrics-address "127.0.0.1:$mport" \
		--control-socket "$tmp/$name.sock" --event-log off --log-level=debug
}
# evictd's pod lists the apiserver answered 200 (its audit log: the apiserver's own counters
# start again at a restart).
lists() { audit "$EVICTD_SA" 'select(.verb == "list" and (.uri | startswith("/api/v1/pods")) and .code == 200)' | wc -l; }

lists0=$(lists)
run_evictd h2
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

# ---- RBAC taken away, then given back ---------------------------------------------------------
kc get clusterrolebinding evictd -o json >"$tmp/crb.json"
kc delete clusterrolebinding evictd >/dev/null
check "kube-apiserver restarted with evictd's binding gone" apiserver_restart
check "a 403 on the relist makes /readyz fail (503)" wait_for 40 is_ready 503
check "/readyz names the 403" grep -q 403 "$tmp/readyz.out"
check "evictd_kube_api_forbidden is 1" metric_is evictd_kube_api_forbidden 1
kc create -f "$tmp/crb.json" >/dev/null 2>&1
check "access given back: /readyz 200 again" wait_for 60 is_ready 200
check "/healthz stayed 200" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/healthz")" = 200
stop "${tpids[-1]}"
check "a dry run wrote nothing: evictd's account sent only get, list and watch (the audit log)" \
	test -z "$(audit "$EVICTD_SA" 'select(.verb | IN("get", "list", "watch") | not)')"
check "its pod lists all carried the node's field selector" \
	test -z "$(audit "$EVICTD_SA" 'select(.verb == "list" and (.uri | startswith("/api/v1/pods")) and (.uri | contains("fieldSelector=spec.nodeName%3D'"$node"'") | not))')"
check "the apiserver saw the node claim on evictd's token" \
	test -n "$(audit "$EVICTD_SA" 'select(.extra["authentication.kubernetes.io/node-name"] == ["'"$node"'"])' | head -1)"
check "evictd exited 0" test "$rc" = 0
check "no sanitizer or crash report" bash -c "! grep -qE '$SAN_PATTERN' '$tmp/h2.err'"

# ---- HTTP/1.1 ---------------------------------------------------------------------------------
run_evictd h1 EVICTD_KUBE_HTTP_VERSION=1.1
check "HTTP/1.1: ready" wait_for 30 is_ready 200
check "HTTP/1.1: the response was HTTP/1.1" metric_is evictd_kube_http_version 1.1
ev=$(events)
pod f "$node"
check "HTTP/1.1: watch events arrive" wait_for 20 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
stop "${tpids[-1]}"
done_testing
