#!/usr/bin/env bash
# What a real HA pair and a real proxy do to evictd's pod watch (doc/DESIGN.md §8):
#  1. A lagging apiserver: two kube-apiservers on one etcd, behind a load balancer
#     (tests/cluster/tcp-proxy.py). The second one's link to etcd stalls, so its watch cache
#     falls behind; evictd, moved to it with a resourceVersion from the first, lists and gets
#     the real 504 with cause ResourceVersionTooLarge (apiserver pkg/storage/cacher watch_cache.go
#     waitUntilFreshAndBlock) and does what client-go's reflector does
#     (tools/cache/reflector.go isTooLargeResourceVersionError): lists again from "" (a
#     consistent read), not the same too-new resourceVersion with backoff.
#  2. A proxy's stream limit: every connection cut after 20 s. Each cut costs no spread of
#     fail-closed pods: evictd watches again at once from its last resourceVersion, and a pod
#     created right after a cut is known within seconds.
# The proxy is the one stand-in here: a real load balancer cannot be told to stall or cut at
# a chosen moment; the apiservers and etcd are the real ones.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh
. tests/cluster/lib.sh
tpids=()
proxies=()
jqtest() { jq -e "$@" >/dev/null; }
PROXY=tests/cluster/tcp-proxy.py

cluster_begin
cleanup() {
	local t
	for t in "${tpids[@]}"; do kill -KILL "$t" 2>/dev/null; done
	for t in "${proxies[@]}"; do kill -TERM "$t" 2>/dev/null; done
	if [ -f "$CLUSTER_DIR/kube-apiserver-2.pid" ]; then
		kill -TERM "$(cat "$CLUSTER_DIR/kube-apiserver-2.pid")" 2>/dev/null
		rm -f "$CLUSTER_DIR/kube-apiserver-2.pid"
	fi
	cluster_end
}
trap cleanup EXIT

# proxy NAME BACKEND [ARGS]: a proxy to BACKEND (HOST:PORT); sets proxy_port, proxy_pid.
proxy() {
	local name=$1 backend=$2; shift 2
	echo "$backend" >"$tmp/$name.backend"
	/usr/bin/python3 "$PROXY" --port-file "$tmp/$name.port" --backend-file "$tmp/$name.backend" "$@" &
	proxy_pid=$!
	proxies+=("$proxy_pid")
	wait_for 10 test -s "$tmp/$name.port"
	proxy_port=$(cat "$tmp/$name.port")
}

check "kubectl apply -k tools/deploy" deploy_evictd
node=ha-n1
check "the Node" make_node "$node"
check "a namespace" make_namespace ha
pod() {
	kc -n ha create -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$1"},
 "spec": {"nodeName": "$node", "containers": [{"name": "c", "image": "busybox"}]}}
EOF
}
pod a
evictd_token "$node" >"$tmp/token"
cat "$CLUSTER_DIR/pki/node-$node.crt" "$CLUSTER_DIR/pki/node-$node.key" >"$tmp/node.pem"
pods_cert=()
"$EVICTD" --help 2>&1 | grep -q -- --kube-pods-client-cert && pods_cert=(--kube-pods-client-cert "$tmp/node.pem")

mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
metric_ge() { local v; v=$(metric "$1"); test -n "$v" && [ "${v%.*}" -ge "$2" ]; }
is_ready() { test "$(curl -s -o "$tmp/readyz.out" -w '%{http_code}' "http://127.0.0.1:$mport/readyz")" = 200; }
run_evictd() { # NAME API-URL
	mport=$(free_port)
	start "$1" "$EVICTD" EVICTD_TEST_KUBE_RELIST_SPREAD_MS=1500 -- --dry-run --no-bpf --state-dir="$tmp/state-$1" --node-name "$node" \
		--kube-api-server "$2" --kube-token-file "$tmp/token" --kube-ca-file "$CA" "${pods_cert[@]}" \
		--eviction-hard "memory.available<$((mem_total + 1))" --metrics-address "127.0.0.1:$mport" \
		--control-socket "$tmp/$1.sock" --event-log off --log-level=debug
}
# pod_lists AUDIT-LOG: evictd's pod lists there, "code resourceVersion-part" a line.
pod_lists() {
	jq -r 'select(.stage == "ResponseComplete" and .verb == "list" and (.requestURI | startswith("/api/v1/pods?"))
		and (.user.username | IN("'"$EVICTD_SA"'", "system:node:'"$node"'"))) |
		"\(.responseStatus.code) \(.requestURI | capture("resourceVersion=(?<rv>[0-9]*)") // {rv: ""} | .rv)"' "$1" 2>/dev/null
}

# ---- 1: the lagging apiserver ------------------------------------------------------------------
proxy etcd-link "${ETCD_URL#http://}"
etcd_link_pid=$proxy_pid
check "a second kube-apiserver on the same etcd, through a link that can stall" \
	apiserver_start_second "http://127.0.0.1:$proxy_port"
api2_port=$API2_PORT
proxy lb "127.0.0.1:$API_PORT"
lb_pid=$proxy_pid
run_evictd lag "https://127.0.0.1:$proxy_port"
check "evictd ready through the load balancer (on the first apiserver)" wait_for 30 is_ready
kill -USR1 "$etcd_link_pid"	# the second apiserver's etcd link stalls: its watch cache lags
sleep 1
ev=$(metric evictd_kube_pods_watch_events_total)
pod b; pod c
check "evictd saw the new pods on the first apiserver (its resourceVersion moved on)" \
	wait_for 20 metric_ge evictd_kube_pods_watch_events_total $((ev + 2))
# The load balancer moves evictd to the lagging apiserver, and cuts it again at once: the real
# apiserver accepts a watch from a resourceVersion its cache has not reached and holds it
# (nothing to send until it catches up), so a list, the reflector's answer to a watch that
# ends at once, is what meets the lag.
echo "127.0.0.1:$api2_port" >"$tmp/lb.backend"
kill -HUP "$lb_pid"
sleep 0.5
kill -HUP "$lb_pid"
lagging_504() { pod_lists "$CLUSTER_DIR/audit-2.log" | grep -q '^504 [0-9]'; }
# After the 504, the next list: resourceVersion "" (client-go) or the same one again.
after_504() { pod_lists "$CLUSTER_DIR/audit-2.log" | awk '$1 == 504 {seen = 1; next} seen {print "rv=" $2; exit}'; }
check "the lagging apiserver answers a list at evictd's resourceVersion with 504" wait_for 30 lagging_504
sleep 4
kill -USR2 "$etcd_link_pid"	# the lag ends
check "evictd ready again on the second apiserver" wait_for 40 is_ready
pod_lists "$CLUSTER_DIR/audit-2.log" | sed 's/^/# lagging apiserver: list /'
curl -s --cacert "$CA" --cert "$CLUSTER_DIR/pki/admin.crt" --key "$CLUSTER_DIR/pki/admin.key" \
	"https://127.0.0.1:$api2_port/api/v1/pods?fieldSelector=spec.nodeName%3D$node&resourceVersion=999999999&resourceVersionMatch=NotOlderThan" \
	>"$tmp/too-large.json" &
curl_pid=$!
wait "$curl_pid"
check "the real 504's Status carries the cause ResourceVersionTooLarge" \
	jqtest '.code == 504 and any(.details.causes[]?; .reason == "ResourceVersionTooLarge")' "$tmp/too-large.json"
jq -c '{code, reason, message, details}' "$tmp/too-large.json" | sed 's/^/# /'
# client-go: after a ResourceVersionTooLarge, the next list is from "" (a consistent read).
check "after the 504 evictd listed from \"\" (a consistent read), as client-go does" \
	test "$(after_504)" = "rv="
stop "${tpids[-1]}"
kill -TERM "$(cat "$CLUSTER_DIR/kube-apiserver-2.pid")" 2>/dev/null
rm -f "$CLUSTER_DIR/kube-apiserver-2.pid"

# ---- 2: a proxy that cuts every stream after 20 s -------------------------------------------------
proxy limit "127.0.0.1:$API_PORT" --max-conn-seconds 20
run_evictd cut "https://127.0.0.1:$proxy_port"
check "evictd ready behind the stream-limiting proxy" wait_for 30 is_ready
w0=$(metric evictd_kube_pods_watches_total)
check "the proxy cut the watch (a new watch opened)" wait_for 30 metric_ge evictd_kube_pods_watches_total $((w0 + 1))
ev=$(metric evictd_kube_pods_watch_events_total)
pod d
check "a pod created right after the cut is known within 5 s (no spread of fail-closed pods)" \
	wait_for 5 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
sleep 22	# a second cut
ev=$(metric evictd_kube_pods_watch_events_total)
pod e
check "and after the next cut" wait_for 5 metric_ge evictd_kube_pods_watch_events_total $((ev + 1))
check "no stale pod metadata meanwhile ($(metric evictd_kube_pods_stale_seconds) s)" \
	awk -v s="$(metric evictd_kube_pods_stale_seconds)" 'BEGIN { exit !(s != "" && s + 0 == 0) }'
grep -E 'kube: pods of' "$tmp/cut.err" | tail -n 5 | sed 's/^/# /'
stop "${tpids[-1]}"
done_testing
