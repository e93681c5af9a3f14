#!/usr/bin/env bash
# The node's static pod directory (doc/DESIGN.md §5, "Pod identity"): --validate names the
# directory static pods are known from and where that came from: the kubelet's staticPodPath
# read through --kubelet-config, evictd's own --static-pod-path over it, else kubeadm's default.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-staticpath-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/kubelet.yaml" <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /x
YAML

"$EVICTD" --validate --kubelet-config="$tmp/kubelet.yaml" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ] &&
	grep -qxF "static-pod-path /x (--kubelet-config $tmp/kubelet.yaml: staticPodPath)" "$tmp/out"; then
	pass "--validate --kubelet-config prints the kubelet's staticPodPath and its source"
else
	fail "--validate --kubelet-config prints the kubelet's staticPodPath and its source" \
		"rc=$rc: $(grep -i static "$tmp/out") $(cat "$tmp/err")"
fi

"$EVICTD" --validate --kubelet-config="$tmp/kubelet.yaml" --static-pod-path=/srv/static \
	>"$tmp/out" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx 'static-pod-path /srv/static (--static-pod-path)' "$tmp/out"; then
	pass "--static-pod-path wins over the kubelet's file"
else
	fail "--static-pod-path wins over the kubelet's file" "rc=$rc: $(grep -i static "$tmp/out")"
fi

"$EVICTD" --validate >"$tmp/out" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx 'static-pod-path /etc/kubernetes/manifests (default)' "$tmp/out"; then
	pass "without either, kubeadm's /etc/kubernetes/manifests"
else
	fail "without either, kubeadm's /etc/kubernetes/manifests" "rc=$rc: $(grep -i static "$tmp/out")"
fi

done_testing
