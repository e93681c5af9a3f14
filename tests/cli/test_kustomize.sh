#!/usr/bin/env bash
# tools/deploy as a kustomize base and the overlays in tools/overlays: `kubectl kustomize`
# renders each; the base holds every manifest's objects; dry-run adds --dry-run;
# no-node-claim runs with --kube-api=read-only: list/watch of pods only, no API write access,
# and not the policy that needs the node-name claim; the base grants no pod reads (evictd
# reads its node's pods as the kubelet) and cluster-wide-pod-read adds them back, with
# --kube-pods-client-cert=none. The monitoring base renders its PodMonitor.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-kustomize-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! command -v kubectl >/dev/null; then
	echo "ok 1 - kustomize renders # SKIP kubectl is not installed"; echo "1..1"; exit 0
fi
render() { kubectl kustomize "$1" >"$tmp/$2.yaml" 2>"$tmp/$2.err"; }
kinds() { grep -E '^kind: ' "$tmp/$1.yaml" | sort | tr '\n' ' '; }
args() { awk '/^kind: DaemonSet/,0' "$tmp/$1.yaml" | grep -E '^ +- --' | sed 's/^ *- //'; }

check "kubectl kustomize tools/deploy renders" render tools/deploy base
for f in namespace rbac admission-policy flowschema configmap daemonset; do
	n=$(grep -c '^kind:' "tools/deploy/$f.yaml")
	for k in $(grep -E '^kind: ' "tools/deploy/$f.yaml" | awk '{print $2}'); do
		check "the base holds $f.yaml's $k" grep -qx "kind: $k" "$tmp/base.yaml"
	done
	[ "$n" -gt 0 ] || fail "$f.yaml has objects"
done
check "the base's DaemonSet does not run dry" bash -c "! grep -qx -- '--dry-run' <<<'$(args base)'"

# The ClusterRole's rules of a rendering, as (group, resource, verb) triples, one a line.
grants() { python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d.get("kind") == "ClusterRole":
        for r in d["rules"]:
            for g in r["apiGroups"]:
                for res in r["resources"]:
                    for v in r["verbs"]:
                        print("%s/%s:%s" % (g, res, v))' <"$tmp/$1.yaml" | sort; }
check "the base grants no list or watch of pods (the kubelet's identity reads them)" \
	bash -c "! grep -qE '^/pods:(list|watch)$' <<<'$(grants base)'"
check "the base's DaemonSet reads pods as the kubelet (no --kube-pods-client-cert=none)" \
	bash -c "! grep -q -- '--kube-pods-client-cert=none' <<<'$(args base)'"

check "kubectl kustomize tools/overlays/cluster-wide-pod-read renders" render tools/overlays/cluster-wide-pod-read cwpr
check "cluster-wide-pod-read: the base's grants plus list and watch of pods, nothing else" \
	[ "$(grants cwpr)" = "$(printf '%s\n' $(grants base) /pods:list /pods:watch | sort)" ]
check "cluster-wide-pod-read: the DaemonSet reads pods with the token (--kube-pods-client-cert=none)" \
	grep -qx -- '--kube-pods-client-cert=none' <<<"$(args cwpr)"
check "cluster-wide-pod-read: every base object is kept" [ "$(kinds cwpr)" = "$(kinds base)" ]

check "kubectl kustomize tools/overlays/dry-run renders" render tools/overlays/dry-run dry
check "dry-run: the DaemonSet runs with --dry-run" grep -qx -- '--dry-run' <<<"$(args dry)"
check "dry-run: every base object is kept" [ "$(kinds dry)" = "$(kinds base)" ]

check "kubectl kustomize tools/overlays/no-node-claim renders" render tools/overlays/no-node-claim nnc
check "no-node-claim: --kube-api=read-only" grep -qx -- '--kube-api=read-only' <<<"$(args nnc)"
for k in ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding; do
	check "no-node-claim: no $k (no API writes to scope)" bash -c "! grep -qx 'kind: $k' '$tmp/nnc.yaml'"
done
# The ClusterRole's verbs, whatever the rendering's layout: list and watch, on pods only.
check "no-node-claim: the ClusterRole grants list and watch of pods, nothing else" bash -c \
	"kubectl kustomize tools/overlays/no-node-claim 2>/dev/null | python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d and d.get(\"kind\") == \"ClusterRole\"]
rules = docs[0][\"rules\"] if len(docs) == 1 else None
ok = rules == [{\"apiGroups\": [\"\"], \"resources\": [\"pods\"], \"verbs\": [\"list\", \"watch\"]}]
sys.exit(0 if ok else 1)'"
check "no-node-claim: the ClusterRoleBinding is kept" grep -qx 'kind: ClusterRoleBinding' "$tmp/nnc.yaml"
check "no-node-claim: the DaemonSet and its ConfigMap are kept" bash -c \
	"grep -qx 'kind: DaemonSet' '$tmp/nnc.yaml' && grep -qx 'kind: ConfigMap' '$tmp/nnc.yaml'"

check "kubectl kustomize tools/deploy/monitoring renders a PodMonitor" bash -c \
	"kubectl kustomize tools/deploy/monitoring 2>/dev/null | grep -qx 'kind: PodMonitor'"
check "the ServiceMonitor manifest is monitoring.coreos.com/v1" bash -c \
	"grep -qx 'apiVersion: monitoring.coreos.com/v1' tools/deploy/monitoring/servicemonitor.yaml && grep -qx 'kind: ServiceMonitor' tools/deploy/monitoring/servicemonitor.yaml"
done_testing
