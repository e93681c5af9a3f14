#!/usr/bin/env bash
# A local Kubernetes control plane from the real components (tests/cluster/build.sh): etcd,
# kube-apiserver, kube-controller-manager and kube-scheduler on loopback ports picked at run
# time, TLS with certificates made at run time, --authorization-mode=Node,RBAC, NodeRestriction,
# ValidatingAdmissionPolicy and API Priority and Fairness (both on by default in 1.34).
#
# As a library (tests source it):
#   cluster_up DIR [CONTROLLERS]  start it all in DIR (certificates, kubeconfigs, logs, data);
#                                 CONTROLLERS is kube-controller-manager's --controllers
#                                 (default "*"); returns non-zero naming the component that
#                                 failed, with its log's last lines on stderr
#   cluster_down                  stop everything cluster_up started (also from a trap)
#   cluster_env DIR               load a running control plane's variables (started elsewhere)
#   kc ARGS...                    kubectl as the cluster admin (the built kubectl)
#   apiserver_restart             kill kube-apiserver and start it again on the same etcd
#   apiserver_start_second URL    a second kube-apiserver on etcd at URL (an HA pair): API2_PORT
#   node_cert NAME                a client certificate of the node identity system:node:NAME
#   etcd_compact                  compact etcd at its current revision (real 410s)
# As a command (make demo, the benches):
#   cluster.sh up DIR   |  cluster.sh down DIR
#
# Variables after cluster_up/cluster_env: KUBEBIN, CLUSTER_DIR, API (https://127.0.0.1:PORT),
# API_PORT, ETCD_URL, CA (the cluster CA), ADMIN_KUBECONFIG, KUBE_VERSION.
# Every process started runs under setpriv --pdeathsig TERM: if the shell that started it is
# killed outright, the component goes too. The timeouts are generous: TCG guests, a busy CI host.

CLUSTER_START_TIMEOUT=${CLUSTER_START_TIMEOUT:-120}
# CLUSTER_AUDIT=1 (the default): an audit log of every other client's requests, DIR/audit.log;
# CLUSTER_AUDIT= (empty) turns it off (the fleet benchmark: thousands of clients).
CLUSTER_AUDIT=${CLUSTER_AUDIT-1}
_cluster_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Components die with the shell that started them; `cluster.sh up` detaches them instead.
_cluster_leash="setpriv --pdeathsig TERM"

_free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# _log_tail NAME: the last lines of a component's log, for a failure message.
_log_tail() {
	echo "cluster: $1 failed; the last lines of $CLUSTER_DIR/$1.log:" >&2
	tail -n 25 "$CLUSTER_DIR/$1.log" 2>/dev/null | sed 's/^/#   /' >&2
}

# _start NAME ARGS...: a component in the background, its pid remembered and in DIR/NAME.pid.
_start() {
	local name=$1; shift
	$_cluster_leash "$KUBEBIN" "$name" "$@" >>"$CLUSTER_DIR/$name.log" 2>&1 &
	echo $! >"$CLUSTER_DIR/$name.pid"
	disown
}

_alive() { kill -0 "$(cat "$CLUSTER_DIR/$1.pid" 2>/dev/null)" 2>/dev/null; }

# _wait NAME CMD...: until CMD succeeds, while NAME runs, for CLUSTER_START_TIMEOUT seconds.
_wait() {
	local name=$1 deadline=$((SECONDS + CLUSTER_START_TIMEOUT)); shift
	while [ $SECONDS -lt $deadline ]; do
		"$@" >/dev/null 2>&1 && return 0
		if ! _alive "$name"; then _log_tail "$name"; return 1; fi
		sleep 0.2
	done
	echo "cluster: $name not ready after ${CLUSTER_START_TIMEOUT}s" >&2
	_log_tail "$name"
	return 1
}

_cert() { # NAME SUBJECT [EXTFILE]: a key and a certificate signed by the cluster CA
	local d=$CLUSTER_DIR/pki
	openssl req -new -newkey rsa:2048 -nodes -keyout "$d/$1.key" -subj "$2" -out "$d/$1.csr" 2>/dev/null &&
		openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
			-days 2 -out "$d/$1.crt" ${3:+-extfile "$3"} 2>/dev/null
}

# _kubeconfig NAME CERT: a kubeconfig for a client certificate.
_kubeconfig() {
	local f=$CLUSTER_DIR/$1.kubeconfig
	cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$API", certificate-authority: "$CA"}
users:
- name: $1
  user: {client-certificate: "$CLUSTER_DIR/pki/$2.crt", client-key: "$CLUSTER_DIR/pki/$2.key"}
contexts:
- name: local
  context: {cluster: local, user: $1}
current-context: local
EOF
}

node_cert() {
	[ -f "$CLUSTER_DIR/pki/node-$1.crt" ] || _cert "node-$1" "/O=system:nodes/CN=system:node:$1"
	_kubeconfig "node-$1" "node-$1"
}

kc() { "$KUBEBIN" kubectl --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

_pki() {
	local d=$CLUSTER_DIR/pki
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.crt" -days 2 \
		-subj "/CN=evictd-test-cluster-ca" 2>/dev/null || return 1
	# The serving certificate: loopback; 10.0.2.100, where a guest node on qemu's user network
	# reaches it (tests/cluster/test_node.sh: a guestfwd, which slirp refuses on the gateway's
	# own 10.0.2.2); the in-cluster names of the kubernetes Service.
	printf 'subjectAltName=IP:127.0.0.1,IP:10.0.2.100,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' \
		>"$d/apiserver.ext"
	_cert apiserver "/CN=kube-apiserver" "$d/apiserver.ext" &&
		_cert admin "/O=system:masters/CN=kubernetes-admin" &&
		_cert controller-manager "/CN=system:kube-controller-manager" &&
		_cert scheduler "/CN=system:kube-scheduler" &&
		_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" &&
		openssl genrsa -out "$d/sa.key" 2048 2>/dev/null &&
		openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
}

_apiserver_args() { # PORT [AUDIT-LOG]
	local d=$CLUSTER_DIR/pki
	echo --etcd-servers="$ETCD_URL" --bind-address=127.0.0.1 --secure-port="$1" \
		--advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
		--tls-cert-file="$d/apiserver.crt" --tls-private-key-file="$d/apiserver.key" \
		--client-ca-file="$d/ca.crt" \
		--kubelet-client-certificate="$d/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$d/apiserver-kubelet-client.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$d/sa.pub" --service-account-signing-key-file="$d/sa.key" \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--allow-privileged=true --service-cluster-ip-range=10.96.0.0/16 \
		--enable-priority-and-fairness=true --profiling=false \
		${CLUSTER_AUDIT:+--audit-policy-file="$CLUSTER_DIR/audit-policy.yaml" \
			--audit-log-path="${2:-$CLUSTER_DIR/audit.log}" --audit-log-format=json \
			--audit-log-maxsize=0} ${APISERVER_EXTRA_ARGS:-}
}

_apiserver_ready() { # PORT
	curl -sf --cacert "$CA" --cert "$CLUSTER_DIR/pki/admin.crt" --key "$CLUSTER_DIR/pki/admin.key" \
		"https://127.0.0.1:$1/readyz" >/dev/null
}

cluster_env() {
	CLUSTER_DIR=$(cd "$1" && pwd)
	# A component this shell restarts belongs to the control plane, not to this shell.
	_cluster_leash=setsid
	# shellcheck disable=SC1091
	. "$CLUSTER_DIR/env"
}

cluster_up() {
	local controllers=${2:-*}
	CLUSTER_DIR=$1
	mkdir -p "$CLUSTER_DIR" && CLUSTER_DIR=$(cd "$CLUSTER_DIR" && pwd)
	KUBEBIN=${KUBEBIN:-$("$_cluster_here/build.sh")} || { echo "cluster: the components did not build" >&2; return 1; }
	CA=$CLUSTER_DIR/pki/ca.crt
	_pki || { echo "cluster: openssl failed to make the certificates" >&2; return 1; }
	local etcd_port etcd_peer kcm_port sched_port
	etcd_port=$(_free_port); etcd_peer=$(_free_port); API_PORT=$(_free_port)
	kcm_port=$(_free_port); sched_port=$(_free_port)
	ETCD_URL=http://127.0.0.1:$etcd_port
	API=https://127.0.0.1:$API_PORT
	ADMIN_KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig
	# The apiserver's own record of who asked what (the tests read it: user, verb, URI, code).
	# The control plane's components are left out; every other client is logged at Metadata.
	cat >"$CLUSTER_DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:kube-controller-manager", "system:kube-scheduler", "system:apiserver", "kubernetes-admin"]
- level: None
  userGroups: ["system:serviceaccounts:kube-system"]
- level: Metadata
EOF
	_kubeconfig admin admin; _kubeconfig controller-manager controller-manager
	_kubeconfig scheduler scheduler

	_start etcd --name evictd-test --data-dir "$CLUSTER_DIR/etcd" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-cluster "evictd-test=http://127.0.0.1:$etcd_peer" \
		--listen-metrics-urls "" --log-level warn
	_wait etcd curl -sf "$ETCD_URL/health" || return 1

	# shellcheck disable=SC2046
	_start kube-apiserver $(_apiserver_args "$API_PORT")
	_wait kube-apiserver _apiserver_ready "$API_PORT" || return 1

	local d=$CLUSTER_DIR/pki
	_start kube-controller-manager --kubeconfig "$CLUSTER_DIR/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$CLUSTER_DIR/controller-manager.kubeconfig" \
		--authorization-kubeconfig "$CLUSTER_DIR/controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port="$kcm_port" --leader-elect=false \
		--controllers="$controllers" --use-service-account-credentials=true \
		--service-account-private-key-file="$d/sa.key" --root-ca-file="$d/ca.crt" \
		--cluster-signing-cert-file="$d/ca.crt" --cluster-signing-key-file="$d/ca.key" \
		${KCM_EXTRA_ARGS:-}
	_start kube-scheduler --kubeconfig "$CLUSTER_DIR/scheduler.kubeconfig" \
		--authentication-kubeconfig "$CLUSTER_DIR/scheduler.kubeconfig" \
		--authorization-kubeconfig "$CLUSTER_DIR/scheduler.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port="$sched_port" --leader-elect=false
	_wait kube-controller-manager curl -skf "https://127.0.0.1:$kcm_port/healthz" || return 1
	_wait kube-scheduler curl -skf "https://127.0.0.1:$sched_port/healthz" || return 1

	KUBE_VERSION=$(kc version -o json 2>/dev/null | jq -r .serverVersion.gitVersion)
	cat >"$CLUSTER_DIR/env" <<EOF
KUBEBIN=$KUBEBIN
API=$API
API_PORT=$API_PORT
ETCD_URL=$ETCD_URL
CA=$CA
ADMIN_KUBECONFIG=$ADMIN_KUBECONFIG
KUBE_VERSION=$KUBE_VERSION
EOF
}

apiserver_restart() {
	local pid
	pid=$(cat "$CLUSTER_DIR/kube-apiserver.pid")
	kill -KILL "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	# shellcheck disable=SC2046
	_start kube-apiserver $(_apiserver_args "$API_PORT")
	_wait kube-apiserver _apiserver_ready "$API_PORT"
}

# apiserver_start_second ETCD_URL: a second kube-apiserver (log kube-apiserver-2.log, audit log
# audit-2.log) on ETCD_URL (a proxy in front of the same etcd, say); sets API2_PORT. Not in a
# subshell ($(...)): the component would die with it.
apiserver_start_second() {
	local saved=$ETCD_URL port
	port=$(_free_port)
	API2_PORT=$port
	ETCD_URL=$1
	# shellcheck disable=SC2046
	$_cluster_leash "$KUBEBIN" kube-apiserver $(_apiserver_args "$port" "$CLUSTER_DIR/audit-2.log") \
		>>"$CLUSTER_DIR/kube-apiserver-2.log" 2>&1 &
	echo $! >"$CLUSTER_DIR/kube-apiserver-2.pid"
	disown
	ETCD_URL=$saved
	_wait kube-apiserver-2 _apiserver_ready "$port"
}

etcd_compact() {
	local rev
	rev=$(curl -sf -X POST "$ETCD_URL/v3/kv/range" -d '{"key":"AA=="}' | jq -r .header.revision) || return 1
	curl -sf -X POST "$ETCD_URL/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
}

# Every component whose pid file is in CLUSTER_DIR (restarted ones too): TERM, then KILL after
# 10 s.
cluster_down() {
	local f pids=() pid alive
	[ -n "${CLUSTER_DIR:-}" ] || return 0
	for f in "$CLUSTER_DIR"/*.pid; do
		[ -f "$f" ] && pids+=("$(cat "$f")") && rm -f "$f"
	done
	[ ${#pids[@]} -gt 0 ] || return 0
	kill -TERM "${pids[@]}" 2>/dev/null
	for _ in $(seq 50); do
		alive=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && return 0
		sleep 0.2
	done
	kill -KILL "${pids[@]}" 2>/dev/null
	return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	case "${1:-}" in
	up)
		[ -n "${2:-}" ] || { echo "usage: cluster.sh up DIR" >&2; exit 2; }
		# The components stay when this shell exits: no pdeathsig for them here.
		_cluster_leash=setsid
		cluster_up "$2" || { cluster_down; exit 1; }
		echo "control plane up: $API (kubeconfig $ADMIN_KUBECONFIG), Kubernetes $KUBE_VERSION" ;;
	down)
		[ -n "${2:-}" ] || { echo "usage: cluster.sh down DIR" >&2; exit 2; }
		cluster_env "$2" && cluster_down ;;
	*) echo "usage: cluster.sh up DIR | down DIR" >&2; exit 2 ;;
	esac
fi
