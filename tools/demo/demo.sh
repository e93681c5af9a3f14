#!/usr/bin/env bash
# make demo: evictd on a real Kubernetes node, in one command. A control plane on this machine
# (tests/cluster/cluster.sh) and a node in a QEMU guest (the kubelet, containerd, runc) come up
# through tests/cluster/test_node.sh, evictd is deployed as users deploy it (kubectl apply -k
# over tools/deploy, with its shipped thresholds), then tools/demo/node-demo.sh starts a pod that
# leaks memory and shows what an operator looks at. Everything is torn down at the end.
# The harness's own TAP lines go to a log (kept on failure); the demo prints to fd 3.
set -uo pipefail
cd "$(dirname "$0")/../.."
log=$(mktemp /tmp/evictd-demo-XXXXXX.log)
t0=$(date +%s)
cat <<MSG
evictd demo: a Kubernetes control plane on this machine and one node in a QEMU guest
(the kubelet $(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' tests/cluster/kubebin/go.mod), containerd, runc; cgroup v2). Booting takes a few minutes under emulation.
Harness log: $log
MSG
NODE_SCENARIOS=$PWD/tools/demo/node-demo.sh NODE_EVICTD_SHIPPED=1 \
	nice bash tests/cluster/test_node.sh 3>&1 >"$log" 2>&1
rc=$?
secs=$(( $(date +%s) - t0 ))
if [ $rc = 0 ] && ! grep -q '^not ok' "$log"; then
	echo
	echo "Demo done in $((secs / 60)) min $((secs % 60)) s; the control plane and the node are gone."
	rm -f "$log"
else
	echo
	echo "The demo did not complete (exit $rc, $secs s). The harness's last lines ($log):"
	grep -a '^not ok\|^#' "$log" | tail -n 40
	exit 1
fi
