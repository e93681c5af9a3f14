#!/usr/bin/env bash
# The Kubernetes API stand-in (tests/cli/kube-standin.py) and evictd against it. A real API
# server was not available to the tests: the stand-in is a local HTTPS protocol stand-in with a
# throwaway CA that records every request. Part 1 checks the stand-in itself with curl (TLS
# verified against its CA, pagination, the resourceVersion precondition, the log); part 2 runs
# build/evictd --dry-run against it once evictd has the --kube-* options, and checks the reads
# it makes (the pods of this node, paginated, with the service-account token) and that a dry
# run writes nothing. The exact requests of an eviction, of the taints and of a shutdown are
# asserted in tests/unit/test_kube.c against the same stand-in.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
PYTHON=/usr/bin/python3
STANDIN=tests/cli/kube-standin.py
jqtest() { jq -e "$@" >/dev/null; }

if [ ! -x "$PYTHON" ] || ! command -v openssl >/dev/null || ! command -v curl >/dev/null ||
	! command -v jq >/dev/null; then
	echo "ok 1 - # SKIP needs /usr/bin/python3, openssl, curl and jq"
	echo "1..1"
	exit 0
fi

tmp=$(mktemp -d /tmp/evictd-kube-XXXXXX)
standin_pid=""
daemon_pid=""
cleanup() {
	[ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null
	[ -n "$standin_pid" ] && kill -TERM "$standin_pid" 2>/dev/null && wait "$standin_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

node=node-1
mkdir -p "$tmp/fixtures"
cat >"$tmp/fixtures/pods.json" <<EOF
{"kind": "PodList", "apiVersion": "v1", "items": [
 {"metadata": {"name": "web-1", "namespace": "default", "uid": "0a1b2c3d-0000-4000-8000-000000000001", "resourceVersion": "5"},
  "spec": {"nodeName": "$node", "priority": 0}, "status": {"phase": "Running", "qosClass": "BestEffort"}},
 {"metadata": {"name": "db-0", "namespace": "prod", "uid": "0a1b2c3d-0000-4000-8000-000000000002", "resourceVersion": "5"},
  "spec": {"nodeName": "$node", "priority": 1000}, "status": {"phase": "Running", "qosClass": "Burstable"}},
 {"metadata": {"name": "other", "namespace": "default", "uid": "0a1b2c3d-0000-4000-8000-000000000003", "resourceVersion": "5"},
  "spec": {"nodeName": "node-2"}}]}
EOF
echo "token-for-evictd" >"$tmp/token"

check "the stand-in makes a throwaway CA and server certificate" \
	"$PYTHON" "$STANDIN" --make-certs "$tmp/certs"

"$PYTHON" "$STANDIN" --cert "$tmp/certs/server.crt" --key "$tmp/certs/server.key" \
	--port-file "$tmp/port" --log "$tmp/requests.jsonl" --fixtures "$tmp/fixtures" \
	--token-file "$tmp/token" --state-dump "$tmp/state.json" --max-seconds 120 &
standin_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port" 2>/dev/null)
check "the stand-in listens on 127.0.0.1" test -n "$port"
api="https://127.0.0.1:$port"
auth=(-H "Authorization: Bearer token-for-evictd")

# TLS is verified: with the CA the request goes through, without it curl refuses.
page1=$(curl -sS --cacert "$tmp/certs/ca.crt" "${auth[@]}" \
	"$api/api/v1/pods?fieldSelector=spec.nodeName%3D$node&limit=1")
check "a page of this node's pods, with a continue token" \
	jqtest '.kind == "PodList" and (.items | length) == 1 and .items[0].metadata.name == "web-1"
		and .metadata.continue == "page-1"' <<<"$page1"
page2=$(curl -sS --cacert "$tmp/certs/ca.crt" "${auth[@]}" \
	"$api/api/v1/pods?fieldSelector=spec.nodeName%3D$node&limit=1&continue=page-1")
check "the last page: db-0, no continue token; node-2's pod never listed" \
	jqtest '(.items | length) == 1 and .items[0].metadata.name == "db-0" and (.metadata | has("continue") | not)' \
	<<<"$page2"
curl -s "${auth[@]}" "$api/api/v1/nodes/$node" >/dev/null 2>&1
check "without the CA the TLS handshake fails (curl exit 60)" test $? -eq 60
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/certs/ca.crt" -H "Authorization: Bearer wrong" \
	"$api/api/v1/nodes/$node")
check "a wrong token gets 401" test "$code" = 401

# The resourceVersion precondition of a merge patch.
rv=$(curl -sS --cacert "$tmp/certs/ca.crt" "${auth[@]}" "$api/api/v1/nodes/$node" | jq -r .metadata.resourceVersion)
patch_node() {
	curl -s -o "$tmp/patch.out" -w '%{http_code}' --cacert "$tmp/certs/ca.crt" "${auth[@]}" -X PATCH \
		-H "Content-Type: application/merge-patch+json" --data "$1" "$api/api/v1/nodes/$node"
}
code=$(patch_node "{\"metadata\":{\"resourceVersion\":\"$rv\"},\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"}]}}")
check "a merge patch with the current resourceVersion applies" test "$code" = 200
code=$(patch_node "{\"metadata\":{\"resourceVersion\":\"$rv\"},\"spec\":{\"taints\":null}}")
check "the same resourceVersion again: 409 Conflict" test "$code" = 409
check "409 carries a Status with reason Conflict" jqtest '.kind == "Status" and .reason == "Conflict" and .code == 409' "$tmp/patch.out"

check "every request is recorded with method, path, query and headers" \
	jqtest -s 'length == 6 and .[0].method == "GET" and .[0].path == "/api/v1/pods"
		and .[0].query == "fieldSelector=spec.nodeName%3Dnode-1&limit=1"
		and .[0].headers.authorization == "Bearer token-for-evictd"
		and .[4].headers["content-type"] == "application/merge-patch+json"
		and .[4].body.spec.taints[0].key == "a"' "$tmp/requests.jsonl"
kill -USR1 "$standin_pid"
for _ in $(seq 50); do [ -s "$tmp/state.json" ] && break; sleep 0.1; done
check "the state dump shows the applied taint" \
	jqtest --arg n "$node" '.nodes[$n].spec.taints == [{"key": "a", "effect": "NoSchedule"}]' "$tmp/state.json"

# ---- evictd against the stand-in -----------------------------------------------------------
if [ ! -x "$EVICTD" ] || ! "$EVICTD" --help 2>&1 | grep -q -- '--kube-api-server'; then
	pass "# SKIP $EVICTD has no --kube-api-server yet (the daemon integration of issue 6)"
	done_testing
	exit
fi
: >"$tmp/requests.jsonl"
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
# A threshold that is always met, in a dry run: decisions, no writes.
"$EVICTD" --dry-run --no-bpf --state-dir="$tmp/state" --node-name "$node" --kube-api-server "$api" \
	--kube-token-file "$tmp/token" --kube-ca-file "$tmp/certs/ca.crt" \
	--eviction-hard "memory.available<$((mem_total + 1))" --metrics-address off \
	--control-socket "$tmp/evictd.sock" --event-log off >"$tmp/evictd.out" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
	grep -q '"path": "/api/v1/pods"' "$tmp/requests.jsonl" 2>/dev/null && break
	sleep 0.1
done
sleep 1
kill -TERM "$daemon_pid" 2>/dev/null
wait "$daemon_pid" 2>/dev/null
daemon_pid=""
check "evictd lists this node's pods with fieldSelector and limit, with the token" \
	jqtest -s --arg n "$node" 'map(select(.path == "/api/v1/pods")) | length >= 1 and
		(.[0].query | startswith("fieldSelector=spec.nodeName%3D" + $n + "&limit="))
		and .[0].headers.authorization == "Bearer token-for-evictd"' "$tmp/requests.jsonl"
check "a dry run sends no write (no POST, PATCH, PUT or DELETE)" \
	jqtest -s 'map(select(.method != "GET")) | length == 0' "$tmp/requests.jsonl"
if ! grep -qv '^$' "$tmp/requests.jsonl"; then
	sed 's/^/#   /' "$tmp/evictd.out" | tail -20
fi
done_testing
