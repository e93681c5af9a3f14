#!/usr/bin/env bash
# The fleet benchmark (make bench part "fleet"): FLEET_NODES nodes' pod sources against a REAL
# kube-apiserver (tests/cluster/cluster.sh: Kubernetes 1.34, etcd), each node with its own
# identity, through a real apiserver restart and an etcd compaction followed by a restart, and
# side by side in the same run the anchor: as many client-go reflectors (`kubebin reflectors`,
# tests/cluster/kubebin/reflectors.go: the kubelet's pod source, one per node identity).
#   evictd     tools/bench/fleet.c: N real pods sources of build/libevictd.a
#              (kube_pods_source_new), each in its own kube_client with its own credentials
#   client-go  N client-go Reflectors, each with its own rest.Config and node certificate
# One fleet at a time against the same apiserver, the same events: start (every node lists
# and watches), steady (FLEET_STEADY s), restart (kube-apiserver SIGKILLed and started again
# on the same etcd; FLEET_WINDOW s from the kill), compaction (etcd compacted at its current
# revision, then the same restart). Before both, the same restart with no fleet (the
# apiserver's own pod requests, subtracted from the fleets'). Measured by the apiserver's own
# /metrics (tools/bench/fleet_metrics.py), scraped every second and right before each kill.
# Prints "fleet ..." lines (bench/raw.txt); tools/bench/run.sh renders them with --table.
# Usage: tools/bench/fleet.sh [--smoke]     (--smoke: 20 nodes, short windows, under 3 min)
#        tools/bench/fleet.sh --table RAW   (the results.md section from RAW's fleet lines)
# Environment: FLEET_NODES (500), FLEET_PODS (3 a node), FLEET_STEADY (60 s), FLEET_WINDOW
# (120 s), FLEET_AUTH (auto: evictd's node certificate when user/kube has it, else token),
# FLEET_CONTROL (30 s: the no-fleet restart), FLEET_CONTENT_TYPE (json; protobuf is the
# kubelet's), FLEET_CHURN (0: none; S: a pod of a node outside the fleet changes every S s, as
# pods somewhere in a real cluster do: the pods watch cache's resourceVersion moves and the
# apiserver sends every watch a bookmark a minute; with none, a watch from the cache's newest
# resourceVersion gets no bookmark until a pod changes), FLEET_KEEP=1 (keep the work directory: logs, the metrics series), BUILD (build).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = --table ]; then
	exec python3 tools/bench/fleet_metrics.py table "$2"
fi

t_run=$(date +%s)
load_start=$(cut -d' ' -f1 /proc/loadavg)
BUILD=${BUILD:-build}
NODES=${FLEET_NODES:-500}
PODS=${FLEET_PODS:-3}
STEADY=${FLEET_STEADY:-60}
WINDOW=${FLEET_WINDOW:-120}
CONTROL=${FLEET_CONTROL:-30}
CONTENT_TYPE=${FLEET_CONTENT_TYPE:-json}
CHURN=${FLEET_CHURN:-0}
spread_env=()
if [ "${1:-}" = --smoke ]; then
	NODES=${FLEET_NODES:-20} STEADY=${FLEET_STEADY:-5} WINDOW=${FLEET_WINDOW:-20} CONTROL=${FLEET_CONTROL:-10}
	# evictd's relist spread (50 s) shortened to fit the window: tests only, logged by evictd.
	spread_env=(EVICTD_TEST_KUBE_RELIST_SPREAD_MS=8000)
fi
# A socket per watch on each side, and the apiserver's (its components inherit this limit).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# ---- build ------------------------------------------------------------------------------
make -s "$BUILD/libevictd.a" >/dev/null
bin=$BUILD/bench/fleet
mkdir -p "$BUILD/bench"
# The node identity for the pod list and watch (kube_config.pods_client_cert), when user/kube
# has it; else the evictd ServiceAccount's token bound to each Node (tools/deploy).
# FLEET_AUTH=token forces the token, =cert the certificate.
cert_define=""
case "${FLEET_AUTH:-auto}" in
auto) grep -q 'pods_client_cert\[' user/kube/kube.h && cert_define=-DFLEET_POD_CLIENT_CERT ;;
cert) cert_define=-DFLEET_POD_CLIENT_CERT ;;
token) ;;
*) echo "fleet: FLEET_AUTH=$FLEET_AUTH: auto, cert or token" >&2; exit 2 ;;
esac
if [ ! -x "$bin" ] || [ tools/bench/fleet.c -nt "$bin" ] || [ "$BUILD/libevictd.a" -nt "$bin" ] ||
	[ "$(cat "$bin.flags" 2>/dev/null)" != "$cert_define" ]; then
	# shellcheck disable=SC2046
	${CC:-gcc} -O2 -g -std=gnu11 -D_GNU_SOURCE $cert_define -Wall -Wextra -Werror -Wno-unused-parameter \
		-Iuser -Ibpf -I"$BUILD" $(pkg-config --cflags libbpf json-c) \
		tools/bench/fleet.c "$BUILD/libevictd.a" \
		$(pkg-config --libs libbpf yaml-0.1 json-c libsystemd libmicrohttpd libcurl) \
		-lelf -lz -lm -lpthread -o "$bin"
	echo "$cert_define" >"$bin.flags"
fi
KUBEBIN=$(tests/cluster/build.sh)
built_from="$(git log -1 --format=%h 2>/dev/null || echo '?')$(git diff --quiet HEAD -- user 2>/dev/null || echo '+uncommitted')"

# ---- the control plane --------------------------------------------------------------------
work=$(mktemp -d /tmp/evictd-fleet.XXXXXX)
tmp=$work	# lib.sh's scratch
# No audit log (a fleet's requests would be most of the apiserver's work), for the restarts too.
export CLUSTER_AUDIT=
# shellcheck disable=SC1091
. tests/cluster/lib.sh
sampler=""
fleet_pid=""
churn_pid=""
cleanup() {
	[ -n "$churn_pid" ] && kill -TERM "$churn_pid" 2>/dev/null
	[ -n "$fleet_pid" ] && kill -KILL "$fleet_pid" 2>/dev/null
	[ -n "$sampler" ] && kill -TERM "$sampler" 2>/dev/null
	cluster_down
	if [ -n "${FLEET_KEEP:-}" ]; then echo "fleet: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT	# so that the EXIT trap runs
# Of the controllers only the ServiceAccount one (the pods' namespace needs its default ServiceAccount): no node
# lifecycle controller to taint heartbeat-less nodes and evict their pods, no garbage collector.
cluster_up "$work/cluster" serviceaccount >&2 || { echo "fleet: the control plane did not start" >&2; exit 1; }
# The pods are bound to their nodes (spec.nodeName): no scheduler, whose own pod watch would be
# counted with the fleet's.
kill -TERM "$(cat "$CLUSTER_DIR/kube-scheduler.pid")" && rm -f "$CLUSTER_DIR/kube-scheduler.pid"
now() { date +%s.%N; }
marks=$work/marks
series=$work/series.jsonl
mark() { echo "$(now) $*" >>"$marks"; }
scrape() {
	python3 tools/bench/fleet_metrics.py scrape --api "$API" --ca "$CA" --cert "$CLUSTER_DIR/pki/admin.crt" \
		--key "$CLUSTER_DIR/pki/admin.key" --out "$series" "$@"
}

# ---- nodes, identities, pods ----------------------------------------------------------------
t0=$(date +%s)
names=()
for i in $(seq 0 $((NODES - 1))); do names+=("$(printf 'fleet-node-%04d' "$i")"); done
# Node identities: EC P-256 keys (fast), signed by the cluster CA, in parallel;
# $CLUSTER_DIR/pki/node-NAME.crt/.key as cluster.sh's node_cert makes them, and NAME.pem (both).
export PKI=$CLUSTER_DIR/pki
printf '%s\n' "${names[@]}" | nl -v 1000 -w 1 -s ' ' | xargs -P 4 -n 2 sh -c '
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/node-$1.key" \
		-subj "/O=system:nodes/CN=system:node:$1" -out "$PKI/node-$1.csr" 2>/dev/null &&
	openssl x509 -req -in "$PKI/node-$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "$0" \
		-days 2 -out "$PKI/node-$1.crt" 2>/dev/null && cat "$PKI/node-$1.crt" "$PKI/node-$1.key" >"$PKI/node-$1.pem"'
t_certs=$(( $(date +%s) - t0 ))
printf '%s\n' "${names[@]}" | jq -R '{apiVersion: "v1", kind: "Node", metadata: {name: ., labels:
	{"kubernetes.io/hostname": ., "kubernetes.io/os": "linux"}}}' | jq -s '{apiVersion: "v1", kind: "List", items: .}' \
	>"$work/nodes.json"
kc create -f "$work/nodes.json" >/dev/null
make_namespace fleet
# The pods, in 4 lists created at once (kubectl's own client rate limit per process).
printf '%s\n' "${names[@]}" | jq -R --argjson pods "$PODS" '. as $n | range($pods) | {apiVersion: "v1", kind: "Pod",
	metadata: {name: "\($n)-app-\(.)", namespace: "fleet"},
	spec: {nodeName: $n, containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}' |
	jq -s -c '. as $all | range(4) as $k | {apiVersion: "v1", kind: "List",
		items: [$all | to_entries[] | select(.key % 4 == $k) | .value]}' |
	split -l 1 - "$work/pods-"
for f in "$work"/pods-*; do kc create -f "$f" >/dev/null & done
wait
pods=$(kc get pods -n fleet --no-headers 2>/dev/null | wc -l)
[ "$pods" -eq $((NODES * PODS)) ] || { echo "fleet: $pods pods, not $((NODES * PODS))" >&2; exit 1; }

# evictd's credentials: the node identity when user/kube can use it for the pod list and watch,
# else tools/deploy's ServiceAccount (its RBAC and FlowSchemas: the pod watch in the "system"
# priority level, as the kubelet's) with a token per node bound to its Node, as the DaemonSet
# gets it.
if [ -n "$cert_define" ]; then
	evictd_auth=(--cert-dir "$PKI")
	evictd_identity="each_node's_own_client_certificate_(system:node:NAME,_--kube-pods-client-cert)"
else
	# Where tools/deploy keeps the pod read to the node identity, its overlay gives the
	# ServiceAccount the cluster-wide read.
	if [ -d tools/overlays/cluster-wide-pod-read ]; then
		kc apply -k tools/overlays/cluster-wide-pod-read >"$work/deploy.out" 2>&1 || { cat "$work/deploy.out" >&2; exit 1; }
	else
		deploy_evictd
	fi
	mkdir -p "$work/tokens"
	export API CA
	kc get nodes -o json | jq -r '.items[] | select(.metadata.name | startswith("fleet-node-")) |
		"\(.metadata.name) \(.metadata.uid)"' | xargs -P 8 -n 2 sh -c '
		curl -sf --cacert "$CA" --cert "$PKI/admin.crt" --key "$PKI/admin.key" -X POST \
			-H "Content-Type: application/json" \
			-d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"expirationSeconds\":7200,\"boundObjectRef\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"name\":\"$0\",\"uid\":\"$1\"}}}" \
			"$API/api/v1/namespaces/evictd-system/serviceaccounts/evictd/token" | jq -r .status.token >"'"$work"'/tokens/token-$0"'
	evictd_auth=(--token-dir "$work/tokens")
	evictd_identity="the_evictd_ServiceAccount_(tools/deploy),_a_token_per_node_bound_to_its_Node"
fi
echo "fleet setup: nodes=$NODES pods=$pods certs_s=$t_certs setup_s=$(( $(date +%s) - t0 ))"

# ---- the runs -----------------------------------------------------------------------------------
# run_event WHO EVENT: the restart (EVENT compaction: etcd compacted first), FLEET_WINDOW s from
# the kill (CONTROL s with no fleet).
run_event() {
	local who=$1 event=$2 begin len=$WINDOW
	[ "$who" = none ] && len=$CONTROL
	begin=$(now)
	mark "$who $event begin"
	[ "$event" = compaction ] && etcd_compact
	scrape	# the counters of the process about to be killed
	apiserver_restart || { echo "fleet: the apiserver did not come back" >&2; exit 1; }
	mark "$who $event ready"
	sleep "$(awk -v b="$begin" -v n="$(now)" -v l="$len" 'BEGIN { d = b + l - n; printf "%.3f\n", (d > 0 ? d : 0) }')"
	scrape
	mark "$who $event end"
}
client_counts() { # WHO EVENT: the fleet's own counters, at the window's end
	local out=$work/$1.out n
	n=$(grep -c 'lists=' "$out" || true)
	kill -USR1 "$fleet_pid"
	for _ in $(seq 50); do [ "$(grep -c 'lists=' "$out" || true)" -gt "$n" ] && break; sleep 0.1; done
	mark "$1 $2 client $(grep 'lists=' "$out" | tail -n1 | sed 's/^[^:]*: //')"
}
footprint() { # PID: CPU s and peak RSS MiB of the fleet's process
	echo "cpu_s=$(awk '{ printf "%.1f", ($14 + $15) / 100 }' "/proc/$1/stat") rss_max_mib=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status") threads=$(awk '/^Threads:/ { print $2 }' "/proc/$1/status")"
}

# The sampler itself (not a subshell around it): killed by its pid.
python3 tools/bench/fleet_metrics.py scrape --api "$API" --ca "$CA" --cert "$CLUSTER_DIR/pki/admin.crt" \
	--key "$CLUSTER_DIR/pki/admin.key" --out "$series" --every 1 &
sampler=$!
if [ "$CHURN" != 0 ]; then
	kc create -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "churn", "namespace": "fleet"},
 "spec": {"nodeName": "outside-the-fleet", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
EOF
	(
		i=0
		while :; do
			i=$((i + 1))
			# Not while the apiserver restarts (and not fatal: set -e holds here too).
			curl -s -o /dev/null --cacert "$CA" --cert "$PKI/admin.crt" --key "$PKI/admin.key" -X PATCH \
				-H 'Content-Type: application/merge-patch+json' --data "{\"metadata\":{\"labels\":{\"churn\":\"$i\"}}}" \
				"$API/api/v1/namespaces/fleet/pods/churn" || true
			sleep "$CHURN"
		done
	) </dev/null &
	churn_pid=$!
fi
sleep 2
base_open=$(api_metric apiserver_longrunning_requests 'verb="WATCH"' 'resource="pods"')
mark "- - params nodes=$NODES pods_per_node=$PODS churn_s=$CHURN steady_s=$STEADY window_s=$WINDOW control_s=$CONTROL kube=$KUBE_VERSION base_open=$base_open evictd_identity=$evictd_identity clientgo=client-go_v0.34.4_Reflectors_(the_kubelet's_pod_source),_each_node's_own_client_certificate,_QPS_50_burst_100,_$CONTENT_TYPE"
run_event none restart

for who in evictd client-go; do
	if [ "$who" = evictd ]; then
		env ${spread_env[@]+"${spread_env[@]}"} "$bin" --server "$API" --ca "$CA" --nodes "$NODES" "${evictd_auth[@]}" \
			>"$work/$who.out" 2>"$work/$who.err" &
	else
		"$KUBEBIN" reflectors --server "$API" --ca "$CA" --pki "$PKI" --nodes "$NODES" \
			--content-type "$CONTENT_TYPE" >"$work/$who.out" 2>"$work/$who.err" &
	fi
	fleet_pid=$!
	mark "$who start begin"
	for _ in $(seq 2400); do
		grep -qE '^(fleet start:|reflectors: synced)' "$work/$who.out" && break
		kill -0 "$fleet_pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -qE "^(fleet start: nodes=$NODES watching=$NODES |reflectors: synced)" "$work/$who.out"; then
		echo "fleet: the $who fleet did not start:" >&2; tail -n 20 "$work/$who.out" "$work/$who.err" >&2; exit 1
	fi
	echo "fleet $who started: $(grep -E '^(fleet start:|reflectors: synced)' "$work/$who.out")"
	sleep 3
	scrape
	mark "$who start end"
	client_counts "$who" start
	mark "$who steady begin"
	sleep "$STEADY"
	scrape
	mark "$who steady end"
	client_counts "$who" steady
	run_event "$who" restart
	client_counts "$who" restart
	run_event "$who" compaction
	client_counts "$who" compaction
	echo "fleet footprint $who: $(footprint "$fleet_pid")"
	kill -TERM "$fleet_pid"
	wait "$fleet_pid" || true
	fleet_pid=""
	# The fleet's watches end (counted as completed, outside every window).
	sleep 3
done
kill -TERM "$sampler"
wait "$sampler" || true
sampler=""
if [ -n "$churn_pid" ]; then kill -TERM "$churn_pid"; wait "$churn_pid" 2>/dev/null || true; churn_pid=""; fi
python3 tools/bench/fleet_metrics.py analyze --series "$series" --marks "$marks"
echo "fleet run: built_from=$built_from took=$(( $(date +%s) - t_run )) load_start=$load_start load_end=$(cut -d' ' -f1 /proc/loadavg) cpus=$(nproc)"
if [ -n "${FLEET_KEEP:-}" ]; then
	# What evictd's sources said about each relist (their reasons), for the record.
	grep -oE 'kube: pods of fleet-node-[0-9]+: [^;(0-9]*' "$work/evictd.err" | sed 's/fleet-node-[0-9]*/NODE/' |
		sort | uniq -c | sort -rn | head -n 20 | sed 's/^/# evictd log: /'
fi
