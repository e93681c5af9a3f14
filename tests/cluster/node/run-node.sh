#!/usr/bin/env bash
# run-node.sh - a real Kubernetes node in a QEMU TCG guest, joined to the real control plane on
# this host, evictd deployed on it as users deploy it, and scenario (a) driven from the host.
#
#   run-node.sh [--kernel SPEC] [--keep] [--no-scenario] [DIR]
#
# The host: tests/cluster/cluster.sh's control plane (etcd, apiserver, kcm, scheduler on
# loopback); the node identity's client certificate (node_cert); the node disk (ext4, made here
# with mkfs.ext4 -d: kubebin, the images as docker archives, the kubelet's and containerd's
# configuration); the guest root (tools/vm/build-node-root.sh). The guest reaches the host only
# through qemu's restricted user network: 10.0.2.100:API_PORT is the apiserver (--guestfwd).
# The guest runs the node and prints EVICTD-NODE: markers; the host drives kubectl and asserts
# through the API. Output: TAP. Everything is torn down at exit (also on failure).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
NODE=evictd-node
KSPEC=${EVICTD_VM_KERNEL:-}
KEEP=""
SCENARIO=1
DIR=""
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KSPEC=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--no-scenario) SCENARIO=0; shift ;;
	-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) DIR=$1; shift ;;
	esac
done
DIR=${DIR:-$(mktemp -d /tmp/evictd-node-XXXXXX)}
mkdir -p "$DIR" && DIR=$(cd "$DIR" && pwd)
BUILD=$(realpath -m "${BUILD:-$TOP/build}")
IMAGE_ARCHIVE=$BUILD/evictd-image.tar
CACHE=${EVICTD_NODE_CACHE:-$HOME/.cache/evictd-node}
. "$TOP/tests/cluster/cluster.sh"

n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; FAILED=1; }
FAILED=0
t0=$SECONDS
elapsed() { echo "$((SECONDS - t0))s"; }
GUEST_PID=""
cleanup() {
	# The guest's session (setsid below): run-guest.sh, and its timeout, which puts itself and
	# qemu in a process group of their own.
	if [ -n "$GUEST_PID" ]; then
		pkill -TERM -s "$GUEST_PID" 2>/dev/null
		for _ in $(seq 50); do pgrep -s "$GUEST_PID" >/dev/null || break; sleep 0.2; done
		pkill -KILL -s "$GUEST_PID" 2>/dev/null
	fi
	cluster_down
	[ -n "$KEEP" ] || [ "$FAILED" = 1 ] || rm -rf "$DIR"
	echo "1..$n"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bail() {
	notok "$*"
	echo "# serial log: $DIR/serial.log (last lines)"
	tail -n 30 "$DIR/serial.log" 2>/dev/null | tr -d "\r" | sed "s/^/#   /"
	sed "s/^/#   run-guest: /" "$DIR/run-guest.log" 2>/dev/null
	exit 1
}
# wait_until SECONDS CMD...: until CMD succeeds, while the guest runs.
wait_until() {
	local deadline=$((SECONDS + $1)); shift
	while [ $SECONDS -lt $deadline ]; do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$GUEST_PID" 2>/dev/null || return 2
		sleep 2
	done
	return 1
}

# ---- the images: the project's own, a pause and a workload, no registry --------------------
[ -f "$IMAGE_ARCHIVE" ] || bail "no $IMAGE_ARCHIVE (make image)"
make -s -C "$TOP/tests/vm/progs" OUT="$DIR/progs" >/dev/null || bail "tests/vm/progs did not build"
mkdir -p "$DIR/disk/images" "$DIR/disk/bin" "$DIR/disk/config" "$CACHE"
B=(buildah --root "$CACHE/containers/storage" --runroot "$CACHE/containers/run" --storage-driver vfs)
# image NAME ENTRYPOINT-JSON HOST:PATH...: a FROM scratch image of static programs, saved as a
# docker archive (its RepoTags name it for ctr import).
image() {
	local name=$1 ep=$2 c f; shift 2
	c=$("${B[@]}" from scratch) || return 1
	for f in "$@"; do "${B[@]}" copy --quiet "$c" "${f%%:*}" "${f#*:}" >/dev/null || return 1; done
	"${B[@]}" config --entrypoint "$ep" --cmd '' --stop-signal TERM "$c" &&
		"${B[@]}" commit --quiet --rm "$c" "$name" >/dev/null &&
		"${B[@]}" push --quiet "$name" "docker-archive:$DIR/disk/images/${name//[\/:]/_}.tar:$name" &&
		"${B[@]}" rmi "$name" >/dev/null
}
image localhost/pause:evictd '["/pause"]' "$DIR/progs/pause:/pause" || bail "the pause image"
image localhost/evictd-workload:1 '["/bin/sh"]' /bin/busybox:/bin/busybox \
	"$DIR/progs/memhog:/bin/memhog" || bail "the workload image"
# evictd's own image, as `make image` made it (an OCI index): the amd64 one, under its tag.
EVICTD_TAG=$(tar -xOf "$IMAGE_ARCHIVE" index.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])') \
	|| bail "no tag in $IMAGE_ARCHIVE"
skopeo copy --quiet --override-arch amd64 "oci-archive:$IMAGE_ARCHIVE:$EVICTD_TAG" \
	"docker-archive:$DIR/disk/images/evictd.tar:localhost/evictd:$EVICTD_TAG" || bail "skopeo copy of the evictd image"
ok "images: pause, workload, localhost/evictd:$EVICTD_TAG ($(elapsed))"

# ---- the control plane and the node's files --------------------------------------------------
cluster_up "$DIR/cluster" || bail "the control plane did not start"
node_cert "$NODE"
cp "$KUBEBIN" "$DIR/disk/bin/kubebin"
cp "$CA" "$DIR/disk/config/ca.crt"
cp "$CLUSTER_DIR/pki/node-$NODE.crt" "$DIR/disk/config/node.crt"
cp "$CLUSTER_DIR/pki/node-$NODE.key" "$DIR/disk/config/node.key"
echo "$API_PORT" >"$DIR/disk/config/api-port"
cat >"$DIR/disk/config/kubeconfig" <<EOT
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://10.0.2.100:$API_PORT", certificate-authority: /etc/kubernetes/ca.crt}
users:
- name: node
  user: {client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem, client-key: /var/lib/kubelet/pki/kubelet-client-current.pem}
contexts:
- name: local
  context: {cluster: local, user: node}
current-context: local
EOT
# The kubelet: cgroupfs driver (containerd 1.6 has no RuntimeConfig call: the kubelet's own
# setting is used), its eviction manager live (evictionHard) so that evictd races it, the
# images never collected (no registry to pull them back from).
cat >"$DIR/disk/config/kubelet.yaml" <<EOT
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
staticPodPath: /etc/kubernetes/manifests
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: /etc/kubernetes/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [10.96.0.10]
evictionHard: {memory.available: "100Mi", nodefs.available: "5%", imagefs.available: "5%", pid.available: "5%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
rotateCertificates: false
# V(3): the status manager's patches ("Patch status for pod"), what scenario (a) looks at.
logging: {verbosity: 3}
EOT
cat >"$DIR/disk/config/containerd.toml" <<'EOT'
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:evictd"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
EOT
cat >"$DIR/disk/config/10-ptp.conflist" <<'EOT'
{"cniVersion": "1.0.0", "name": "evictd-node", "plugins": [
  {"type": "ptp", "ipMasq": false, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]],
   "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
EOT
truncate -s 4G "$DIR/node.img" && mkfs.ext4 -q -F -E root_owner=0:0 -d "$DIR/disk" "$DIR/node.img" \
	|| bail "mkfs.ext4 of the node disk"
rm -rf "$DIR/disk"
"$TOP/tools/vm/build-node-root.sh" "$DIR/node.cpio" >/dev/null || bail "the node root did not build"
ok "control plane at $API, node disk and root ($(elapsed))"

# ---- boot and join ---------------------------------------------------------------------------
kargs=()
[ -z "$KSPEC" ] || kargs=(--kernel "$("$TOP/tools/vm/fetch-kernel.sh" "$KSPEC")")
boot=$SECONDS
setsid nice "$TOP/tools/vm/run-guest.sh" "${kargs[@]}" --initramfs "$DIR/node.cpio" --disk "$DIR/node.img" \
	--guestfwd "$API_PORT" --mem 2048M --smp 2 --timeout 3000 --append apparmor=0 \
	--log "$DIR/serial.log" >"$DIR/run-guest.log" 2>&1 &
GUEST_PID=$!
node_ready() {
	[ "$(kc get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
wait_until 900 node_ready || bail "node $NODE not Ready"
READY_S=$((SECONDS - boot))
ok "node $NODE Ready ${READY_S}s after boot ($(grep -a 'EVICTD-NODE' "$DIR/serial.log" | tr -d '\r' | tr '\n' ';'))"
[ "$SCENARIO" = 1 ] || exit 0

# ---- evictd, as users deploy it: kubectl apply -k, the image set to the imported one -----------
mkdir -p "$DIR/deploy"
cat >"$DIR/deploy/kustomization.yaml" <<EOT
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$DIR/deploy" "$TOP/tools/deploy")
images:
  - name: localhost/evictd
    newTag: "$EVICTD_TAG"
EOT
kc apply -k "$DIR/deploy" >"$DIR/apply.log" 2>&1 || { cat "$DIR/apply.log" | sed 's/^/#   /'; bail "kubectl apply -k tools/deploy"; }
dep=$SECONDS
evictd_ready() {
	[ "$(kc -n evictd-system get pods -l app.kubernetes.io/name=evictd \
		-o jsonpath='{.items[0].status.conditions[?(@.type=="Ready")].status}')" = True ]
}
if wait_until 600 evictd_ready; then
	ok "evictd DaemonSet pod Ready $((SECONDS - dep))s after kubectl apply -k"
else
	kc -n evictd-system get pods -o wide | sed 's/^/#   /'
	kc -n evictd-system describe pods | tail -n 30 | sed 's/^/#   /'
	bail "evictd DaemonSet pod not Ready"
fi

# ---- scenario (a): a memory hog in a Deployment -------------------------------------------------
kc create namespace hog >/dev/null
cat <<EOT | kc apply -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: hog, namespace: hog}
spec:
  replicas: 1
  selector: {matchLabels: {app: hog}}
  template:
    metadata: {labels: {app: hog}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: hog
        image: localhost/evictd-workload:1
        imagePullPolicy: Never
        command: [/bin/memhog, --rate, "16", --quiet]
EOT
hog_pod() { kc -n hog get pods -l app=hog -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.status.phase} {.status.reason}{"\n"}{end}'; }
start=$SECONDS
first_running() { hog_pod | awk '$3 == "Running" { found = 1 } END { exit !found }'; }
wait_until 600 first_running || bail "hog pod not Running"
read -r HOG HOG_UID _ < <(hog_pod | awk '$3 == "Running"' | head -n1)
ok "hog pod $HOG Running $((SECONDS - start))s after the Deployment"
restarts() { kc -n hog get pod "$HOG" -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
hog_failed() { [ "$(kc -n hog get pod "$HOG" -o jsonpath='{.status.phase}/{.status.reason}')" = Failed/Evicted ]; }
ev=$SECONDS
wait_until 900 hog_failed || { kc -n hog get pods -o wide | sed 's/^/#   /'; bail "hog pod not Failed/Evicted"; }
ok "hog pod Failed/Evicted $((SECONDS - ev))s after Running (restartCount $(restarts))"
r0=$(restarts)
# At least three of the kubelet's status syncs (every 10 s): the phase and reason must stay.
stay=1
for i in $(seq 16); do
	s=$(kc -n hog get pod "$HOG" -o jsonpath='{.status.phase}/{.status.reason} {.status.containerStatuses[0].restartCount}')
	echo "# t+$((i * 2))s $HOG: $s"
	[ "$s" = "Failed/Evicted $r0" ] || stay=0
	sleep 2
done
[ $stay = 1 ] && ok "hog pod stayed Failed/Evicted, restartCount $r0, through 32 s" \
	|| notok "hog pod did not stay Failed/Evicted (in-place restart?)"
events=$(kc -n hog get events --field-selector "involvedObject.name=$HOG" \
	-o custom-columns=REASON:.reason,SOURCE:.source.component,CONTROLLER:.reportingComponent,MSG:.message --no-headers)
echo "$events" | sed 's/^/#   event: /'
grep -q SandboxChanged <<<"$events" && notok "a SandboxChanged event: the sandbox was restarted" \
	|| ok "no SandboxChanged event"
grep -q '^Evicted' <<<"$events" && ok "an Evicted event" || notok "no Evicted event"
other_running() { hog_pod | awk -v u="$HOG_UID" '$2 != u && $3 == "Running" { f = 1 } END { exit !f }'; }
wait_until $([ $stay = 1 ] && echo 600 || echo 30) other_running && ok "the ReplicaSet's replacement is Running" || notok "no replacement Running"
kc -n hog describe pod "$HOG" | sed 's/^/#   describe: /'
# Who acted: evictd's eviction, not the kubelet's eviction manager nor the kernel OOM killer.
tr -d '\r' <"$DIR/serial.log" >"$DIR/serial.txt"
grep -a -i 'eviction manager' "$DIR/serial.txt" | grep -a -v -i -E 'starting control loop|failed to get summary stats' | tail -n 20 | sed 's/^/#   kubelet: /'
grep -a -q 'Out of memory: Killed process' "$DIR/serial.txt" && notok "the kernel OOM killer killed a process" \
	|| ok "no kernel OOM kill"
grep -a -q -i -E 'eviction manager: (attempting to reclaim|pods .* evicted)' "$DIR/serial.txt" \
	&& notok "the kubelet's eviction manager evicted a pod" || ok "the kubelet's eviction manager evicted nothing"
echo "# kubelet log lines about $HOG:"
grep -a "$HOG" "$DIR/serial.txt" | tail -n 60 | sed 's/^/#   /'
grep -a "EVICTD-LOG:" "$DIR/serial.txt" | tail -n 40 | sed "s/^/#   /"
[ "$FAILED" = 0 ]
