#!/usr/bin/env bash
# test_node: a real node. The kubelet of the control plane's release, containerd 1.6 and runc
# (Debian bookworm's) in a QEMU TCG guest (tools/vm/build-node.sh) join this control plane
# through qemu's restricted user network (only the API server is reachable, by a guestfwd);
# evictd is deployed as users deploy it (kubectl apply -k, the image tag set by a kustomize
# overlay) and the DaemonSet controller, the scheduler and the real kubelet run it with the
# manifests' privileges. Scenario (a): a memory hog in a Deployment; evictd evicts it before
# the kubelet's eviction manager and the kernel's OOM killer, the pod stays Failed/Evicted
# through the kubelet's status syncs with no restart in place, and the ReplicaSet replaces it.
# The guest runs the node and prints markers (EVICTD-VM: ...); this script drives kubectl and
# asserts through the API. The kubelet's log is the guest's second serial port.
#
# The scenarios are tests/cluster/node/scenario-X.sh, run in one boot of the node, in the order
# NODE_SCENARIOS gives (default: every one there is; tests/run-all.sh runs a and b on 6.12).
#
# Environment: KERNEL_SPEC (fetch-kernel.sh's spec: 6.12; default Debian's 6.1), NODE_SCENARIOS,
# NODE_EVICTD=0 (no evictd: the kubelet alone), NODE_EVICTD_SHIPPED=1 (evictd's shipped
# thresholds: the overlay shortens only evictionPressureTransitionPeriod), NODE_KUBELET_ARGS (more
# kubelet flags), NODE_SAMPLER_INTERVAL (seconds: the guest samples memory.available to
# $sampler_log, tools/vm/node/node-sampler.sh),
# NODE_CGROUP_DRIVER (the kubelet's and containerd's: cgroupfs, the default, or systemd),
# NODE_KUBELET_SHUTDOWN (the kubelet's shutdownGracePeriod: its graceful shutdown on, scenario g),
# NODE_EVICTD_OPTIONS (more of evictd's options, "key: value;..."),
# NODE_GUEST_TIMEOUT (qemu's limit, default 1500 s), KEEP=1 keeps the scratch directory.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cluster/lib.sh
export EVICTD_VM_KERNEL=${KERNEL_SPEC:-${EVICTD_VM_KERNEL:-}}

# One Node and namespace per kernel: run-all.sh runs this on 6.1 and 6.12 against one control
# plane, the first one's namespace may still be terminating.
kid=${EVICTD_VM_KERNEL//[^0-9a-z]/}
NODE=evictd-node${kid:+-$kid}
NS=node-hog${kid:+-$kid}
IMAGE_ARCHIVE=${IMAGE_ARCHIVE:-$BUILD_DIR/evictd-image.tar}
GUEST_TIMEOUT=${NODE_GUEST_TIMEOUT:-1500}
CGROUP_DRIVER=${NODE_CGROUP_DRIVER:-cgroupfs}
case $CGROUP_DRIVER in cgroupfs|systemd) ;; *) echo "test_node: NODE_CGROUP_DRIVER: cgroupfs or systemd" >&2; exit 2 ;; esac
GUEST_MEM=${NODE_GUEST_MEM:-2048M}
# Where the guest reaches the API server (a guestfwd; in the serving certificate, cluster.sh).
GUEST_API_ADDR=10.0.2.100
guest_pid=""
t_start=$SECONDS
# Default: every scenario but (g), which powers the node off (make vmtest: NODE_SCENARIOS=all).
all_scenarios=$(cd tests/cluster/node && ls scenario-*.sh | sed 's/^scenario-\(.*\)\.sh$/\1/' | tr '\n' ' ')
case ${NODE_SCENARIOS:-} in
	"") NODE_SCENARIOS=${all_scenarios/g /} ;;
	all) NODE_SCENARIOS=$all_scenarios ;;
esac
NODE_SCENARIOS=$(echo $NODE_SCENARIOS)	# one space between, none around
case " $NODE_SCENARIOS " in
	*" g "*) [ "${NODE_SCENARIOS##* }" = g ] || { echo "test_node: scenario (g) powers the node off: it runs last" >&2; exit 2; } ;;
esac
# A scenario is a name (tests/cluster/node/scenario-NAME.sh) or a file's path (the benches and
# the demo bring their own: tools/bench, tools/demo).
scenario_file() { case $1 in */*) echo "$1" ;; *) echo "tests/cluster/node/scenario-$1.sh" ;; esac; }
scenario_ns() { basename "$1" .sh | tr -c 'a-z0-9\n' '-'; }
for scenario in $NODE_SCENARIOS; do
	[ -f "$(scenario_file "$scenario")" ] || { echo "test_node: no scenario ($scenario): $(scenario_file "$scenario")" >&2; exit 2; }
done
. tests/cluster/node/hog.sh

if [ ! -f "$IMAGE_ARCHIVE" ]; then
	echo "ok 1 # SKIP no evictd image ($IMAGE_ARCHIVE): make image"
	echo "1..1"
	exit 0
fi
EVICTD_TAG=$(tar -xOf "$IMAGE_ARCHIVE" index.json | jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]')

cluster_begin
_cluster_nodes+=("$NODE")
console=$tmp/console.log kubelet_log=$tmp/kubelet.log pod_logs=$tmp/pod-logs.log sampler_log=$tmp/sampler.log

# The guest's end: the node powers itself off when its Node is annotated (node-watch.sh); qemu
# is stopped by its pid when it has not after 90 s. Then the shared control plane gets evictd's
# manifests back as tools/deploy has them.
node_end() {
	if [ -n "$guest_pid" ] && kill -0 "$guest_pid" 2>/dev/null; then
		kc annotate node "$NODE" evictd.test/poweroff=1 --overwrite >/dev/null 2>&1
		local end=$((SECONDS + 90)) t
		while kill -0 "$guest_pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 1; done
		if kill -0 "$guest_pid" 2>/dev/null; then
			echo "# the guest did not power off: stopping qemu"
			t=$(pgrep -P "$guest_pid" -x timeout)
			[ -n "$t" ] && kill -TERM "$t" 2>/dev/null
		fi
		wait "$guest_pid" 2>/dev/null
	fi
	for scenario in $NODE_SCENARIOS; do kc delete namespace "$NS-$(scenario_ns "$scenario")" --wait=false >/dev/null 2>&1; done
	deploy_evictd >/dev/null 2>&1
	cluster_end
}
trap node_end EXIT

# ---- the node's files: the node identity's certificate, the kubelet's configuration -----------
node_cert "$NODE"
nf=$tmp/node-files
mkdir -p "$nf"
cp "$CA" "$nf/ca.crt"
cp "$CLUSTER_DIR/pki/node-$NODE.crt" "$nf/node.crt"
cp "$CLUSTER_DIR/pki/node-$NODE.key" "$nf/node.key"
cat >"$nf/env" <<EOF
NODE_NAME=$NODE
API_HOST=$GUEST_API_ADDR
API_PORT=$API_PORT
SERVICE_IP=10.96.0.1
KUBELET_ARGS="--v=3${NODE_KUBELET_ARGS:+ $NODE_KUBELET_ARGS}"
CGROUP_DRIVER=$CGROUP_DRIVER
PID_MAX=4096
SAMPLER_INTERVAL=${NODE_SAMPLER_INTERVAL:-}
EOF
# Scenario (e)'s PIDPressure: node-setup.sh lowers kernel.pid_max to PID_MAX, so that
# pid.available (min(pid_max, threads-max) - tasks, [eviction/helpers.go] makeSignalObservations)
# crosses evictd's pid.available threshold (the overlay below) after ~1,700 sleeping processes,
# seconds under TCG and bounded well below pid_max.
# A scenario's static pods (tests/cluster/node/static-X.yaml, @NS@ its namespace): in the
# kubelet's staticPodPath at boot (node-setup.sh copies them), only when that scenario runs.
mkdir -p "$nf/manifests"
for scenario in $NODE_SCENARIOS; do
	[ ! -f "tests/cluster/node/static-$scenario.yaml" ] ||
		sed "s/@NS@/$NS-$(scenario_ns "$scenario")/g" "tests/cluster/node/static-$scenario.yaml" >"$nf/manifests/static-$scenario.yaml"
done
cat >"$nf/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://$GUEST_API_ADDR:$API_PORT", certificate-authority: /etc/evictd-node/ca.crt}
users:
- name: node
  user: {client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem, client-key: /var/lib/kubelet/pki/kubelet-client-current.pem}
contexts:
- name: local
  context: {cluster: local, user: node}
current-context: local
EOF
# The kubelet's eviction manager at its default hard thresholds, set explicitly so that it is
# live beside evictd (whose shipped thresholds, tools/deploy/configmap.yaml, sit above them).
cat >"$nf/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: $CGROUP_DRIVER
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: /etc/evictd-node/ca.crt}
authorization: {mode: Webhook}
staticPodPath: /etc/kubernetes/manifests
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "10%"
  nodefs.inodesFree: "5%"
  imagefs.available: "15%"
  imagefs.inodesFree: "5%"
evictionPressureTransitionPeriod: 30s
${NODE_KUBELET_SHUTDOWN:+shutdownGracePeriod: $NODE_KUBELET_SHUTDOWN
shutdownGracePeriodCriticalPods: 5s}
# The images are imported, never pulled: garbage collection must not remove them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
serializeImagePulls: false
EOF

# ---- build and boot --------------------------------------------------------------------------
t0=$SECONDS
if ! tools/vm/build-node.sh "$tmp/guest" --kubebin "$KUBEBIN" --node-files "$nf" \
	--image "$IMAGE_ARCHIVE=localhost/evictd" >"$tmp/build.log" 2>&1; then
	fail "the node guest builds (tools/vm/build-node.sh)" "$(tail -n 20 "$tmp/build.log")"
	done_testing; exit 1
fi
echo "# node guest built in $((SECONDS - t0)) s"
nice tools/vm/run-guest.sh --initramfs "$tmp/guest/node.cpio" --disk "$tmp/guest/node.img" \
	--mem "$GUEST_MEM" --smp 2 --timeout "$GUEST_TIMEOUT" --slots "${EVICTD_VM_SLOTS:-0}" \
	--append "apparmor=0 systemd.unified_cgroup_hierarchy=1" \
	--guestfwd "$GUEST_API_ADDR:$API_PORT:$API_PORT" --serial2 "$kubelet_log" --serial2 "$pod_logs" --serial2 "$sampler_log" \
	--log "$console" \
	>"$tmp/run-guest.log" 2>&1 &
guest_pid=$!
t_boot=$SECONDS

node_ready() { [ "$(kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; }
guest_alive() { kill -0 "$guest_pid" 2>/dev/null; }
# until CMD succeeds, SECONDS at most, while the guest runs
wait_guest() {
	local end=$((SECONDS + $1)); shift
	until "$@"; do
		guest_alive || return 2
		[ $SECONDS -lt "$end" ] || return 1
		sleep 2
	done
}
diag() { # the console's and the kubelet's last lines
	echo "# console:"; grep -a 'EVICTD-VM\|Failed\|error' "$console" | tail -n 20 | sed 's/^/#   /'
	echo "# kubelet:"; tail -n 15 "$kubelet_log" | cut -c1-300 | sed 's/^/#   /'
}

if wait_guest 900 node_ready; then
	boot_ready=$((SECONDS - t_boot))
	pass "the kubelet in the guest registered Node $NODE and it turned Ready (${boot_ready} s from qemu's start)"
else
	fail "the kubelet in the guest registered Node $NODE and it turned Ready" "$(diag)"
	done_testing; exit 1
fi
kc get node "$NODE" -o wide | sed 's/^/#   /'

# ---- evictd as users deploy it (NODE_EVICTD=0: not at all, the kubelet alone) ---------------
evictd_pod=""
if [ "${NODE_EVICTD:-1}" != 0 ]; then
mkdir -p "$tmp/deploy"
cat >"$tmp/deploy/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$tmp/deploy" tools/deploy)
images:
  - name: localhost/evictd
    newTag: "$EVICTD_TAG"
patches:
  - path: configmap.yaml
EOF
# evictd's pressure taint stays for evictionPressureTransitionPeriod (5m shipped, the kubelet's
# default), during which the BestEffort replacement cannot be scheduled: 30s here, as a user
# sets it, so that the test waits 30 s, not 5 minutes.
# A soft memory threshold above the hard one, for scenario (d): its 40 s grace outlasts the
# 20 s the hogs of (a) and (b) take from it to the hard threshold, so those stay hard evictions.
# NODE_EVICTD_SHIPPED=1 (the demo, the node race bench): the shipped thresholds, no soft one.
if [ "${NODE_EVICTD_SHIPPED:-0}" = 1 ]; then
	sed -e 's/evictionPressureTransitionPeriod: 5m/evictionPressureTransitionPeriod: 30s/' \
		tools/deploy/configmap.yaml >"$tmp/deploy/configmap.yaml"
else
	# pid.available: a hard threshold of evictd's own (the kubelet here has none: PIDPressure
	# is evictd's alone), 2000 of PID_MAX's 4096 (scenario (e)).
	sed -e 's/evictionPressureTransitionPeriod: 5m/evictionPressureTransitionPeriod: 30s\
    evictionSoft:\
      memory.available: "900Mi"\
    evictionSoftGracePeriod:\
      memory.available: "40s"\
    evictionMaxPodGracePeriod: 20/' \
		-e 's/^\( *\)imagefs.inodesFree: "10%"$/&\n\1pid.available: "2000"/' tools/deploy/configmap.yaml \
		>"$tmp/deploy/configmap.yaml"
	grep -q '^ *pid.available: "2000"$' "$tmp/deploy/configmap.yaml" ||
		fail "tools/deploy/configmap.yaml has imagefs.inodesFree: \"10%\" (the test adds pid.available after it)"
fi
# NODE_EVICTD_OPTIONS: more of evictd's own options, YAML "key: value" lines separated by ";"
# (e.g. "kubeHardEvictionStatusWait: 0s" shows scenario (b) without the hold).
if [ -n "${NODE_EVICTD_OPTIONS:-}" ]; then
	opts=$(tr ';' '\n' <<<"$NODE_EVICTD_OPTIONS" | sed 's/^ */    /')
	awk -v opts="$opts" '{ print } /^    kind: EvictdConfiguration$/ { print opts }' "$tmp/deploy/configmap.yaml" >"$tmp/deploy/configmap.yaml.new" &&
		mv "$tmp/deploy/configmap.yaml.new" "$tmp/deploy/configmap.yaml"
	echo "# evictd's options added: $NODE_EVICTD_OPTIONS"
fi
grep -q 'evictionPressureTransitionPeriod: 30s' "$tmp/deploy/configmap.yaml" ||
	fail "tools/deploy/configmap.yaml sets evictionPressureTransitionPeriod: 5m (the test shortens it)"
grep -q '^ *pid.available: "2000"$' "$tmp/deploy/configmap.yaml" ||
	fail "tools/deploy/configmap.yaml has imagefs.inodesFree: \"10%\" (the test adds pid.available after it)"
evictd_ready() {
	evictd_pod=$(kc -n evictd-system get pods --field-selector "spec.nodeName=$NODE" \
		-o jsonpath='{range .items[?(@.status.containerStatuses[0].ready==true)]}{.metadata.name}{end}' 2>/dev/null)
	[ -n "$evictd_pod" ]
}
t0=$SECONDS
if kc apply -k "$tmp/deploy" >"$tmp/apply.log" 2>&1 && wait_guest 600 evictd_ready; then
	pass "kubectl apply -k: the DaemonSet's pod runs on the real node and is Ready (pod $evictd_pod, $((SECONDS - t0)) s)"
else
	fail "kubectl apply -k: the DaemonSet's pod runs on the real node and is Ready" \
		"$(cat "$tmp/apply.log"; kc -n evictd-system get pods -o wide --field-selector "spec.nodeName=$NODE";
		   kc -n evictd-system describe pods -l app.kubernetes.io/name=evictd | tail -n 30; diag)"
	done_testing; exit 1
fi
fi
# The API server cannot reach the guest's kubelet (kubectl logs): the guest copies the pods'
# logs to its third serial port (node-logs.sh).
echo "# guest: $(grep -ao 'node Ready uptime=[0-9.]*' "$console" | head -1) s after the kernel started"
elog() { grep -a "^evictd-system_$evictd_pod" "$pod_logs" | cut -d' ' -f2-; }
# The shipped DaemonSet's realtimePriority: 1, applied in the privileged container.
if [ -n "${evictd_pod:-}" ]; then
	loop_fifo() { elog | grep -q 'the event loop runs SCHED_FIFO at priority 1'; }
	if wait_guest 60 loop_fifo; then
		pass "evictd's event loop runs SCHED_FIFO 1 in the DaemonSet's pod (realtimePriority: 1)"
	else
		fail "evictd's event loop runs SCHED_FIFO 1 in the DaemonSet's pod (realtimePriority: 1)" \
			"$(elog | grep -a -i 'realtime\|event loop runs\|SCHED' | head -n 3)"
	fi
fi
# The kubelet's log and the console since the scenario began.
kubelet_since() { tail -n "+$((kubelet_mark + 1))" "$kubelet_log"; }
console_since() { tail -n "+$((console_mark + 1))" "$console"; }
# No evictd pressure taint and no pressure condition on the node (a scenario's eviction holds
# them for evictionPressureTransitionPeriod, 30 s here).
node_quiet() {
	[ "$(kc get node "$NODE" -o json | jq -r '[(.spec.taints // [])[] | select(.key | startswith("evictd.io/"))]
		+ [.status.conditions[] | select(.type != "Ready" and .status == "True")] | length')" = 0 ]
}
node_calm() { wait_guest 240 node_quiet; }
# Who acted since the scenario began: not the kubelet's eviction manager (evictd first; WHAT
# names the signal in the check), not the kernel's OOM killer.
check_kubelet_did_not_evict() {
	local name="the kubelet's eviction manager did not act (evictd first${1:+, $1})"
	if kubelet_since | grep -aq 'Eviction manager: attempting to reclaim\|Eviction manager: pods ranked for eviction'; then
		fail "$name" "$(kubelet_since | grep -a 'Eviction manager' | head -n 5 | cut -c1-300)"
	else
		pass "$name"
	fi
}
check_no_oom_kill() {
	if console_since | grep -aEq 'Out of memory|oom-kill|Memory cgroup out of memory'; then
		fail "no kernel OOM kill on the node" "$(console_since | grep -aE 'Out of memory|oom-kill' | head -n 5)"
	else
		pass "no kernel OOM kill on the node"
	fi
}

# ---- the scenarios (tests/cluster/node/scenario-X.sh, sourced in order) -------------------
# Each keeps to its own namespace ($NS-X) and starts on a calm node (node_calm).
for scenario in $NODE_SCENARIOS; do
	t_scenario=$SECONDS
	kubelet_mark=$(wc -l <"$kubelet_log") console_mark=$(wc -l <"$console")
	echo "# ---- scenario ($scenario) on $NODE"
	node_calm || fail "scenario ($scenario): the node is calm before it (no evictd pressure taint, no pressure condition)" "$(kc get node "$NODE" -o json | jq -c '[.spec.taints, [.status.conditions[] | select(.status == "True") | .type]]')"
	NS_S=$NS-$(scenario_ns "$scenario")
	. "$(scenario_file "$scenario")"
	echo "# scenario ($scenario): $((SECONDS - t_scenario)) s"
done
echo "# node test: $((SECONDS - t_start)) s in all"
done_testing
