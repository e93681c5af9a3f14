#!/bin/sh
# node-setup.sh - make the systemd guest a Kubernetes node before containerd and the kubelet
# start (node-setup.service; tools/vm/build-node.sh puts it in as /usr/lib/evictd-node/).
#
# The node disk (/dev/vda, tools/vm/build-node.sh) holds what must not sit in the guest's RAM:
# the kubelet (the multiplexed kubebin), the image archives, and the runtime's and kubelet's
# state (overlayfs cannot take its upper directories from the initramfs's rootfs, and the
# kubelet's nodefs signals read the file system of /var/lib/kubelet). The per-run files
# (certificates, kubeconfig, kubelet configuration) are in /etc/evictd-node/.
set -eu
. /etc/evictd-node/env
say() { echo "EVICTD-VM: node-setup: $*" >/dev/console; }

# Mount propagation: the kubelet's volume mounts reach containers that asked for
# HostToContainer/Bidirectional only under a shared root (systemd shares every mount it makes,
# the initramfs root is made shared here).
mount --make-rshared /

mkdir -p /node
mount -t ext4 -o noatime /dev/vda /node
for d in kubelet containerd log-pods log; do mkdir -p /node/$d; done
mkdir -p /var/lib/kubelet /var/lib/containerd /var/log/pods
mount --bind /node/kubelet /var/lib/kubelet
mount --bind /node/containerd /var/lib/containerd
mount --bind /node/log-pods /var/log/pods
ln -sfn /node/bin/kubebin /usr/local/bin/kubebin
cp /etc/evictd-node/kubelet-config.yaml /var/lib/kubelet/config.yaml
# The kubelet's client certificate where a kubeadm node's kubelet keeps it (its kubeconfig
# names it; node agents such as evictd read it there to list the node's own pods).
mkdir -p /var/lib/kubelet/pki
cat /etc/evictd-node/node.crt /etc/evictd-node/node.key >/var/lib/kubelet/pki/kubelet-client-current.pem
chmod 600 /var/lib/kubelet/pki/kubelet-client-current.pem
mkdir -p /etc/kubernetes/manifests
# The kubelet's cgroup driver (its configuration says which) is containerd's too: runc makes
# systemd scopes under kubepods.slice, or plain directories under /kubepods.
if [ "${CGROUP_DRIVER:-cgroupfs}" = systemd ]; then
    sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' /etc/containerd/config.toml
fi
say "cgroup driver ${CGROUP_DRIVER:-cgroupfs}"
# The run's static pods (test_node.sh: a scenario's static-X.yaml), there before the kubelet.
for m in /etc/evictd-node/manifests/*; do [ ! -f "$m" ] || cp "$m" /etc/kubernetes/manifests/; done
# A smaller pid space (env PID_MAX), so that a bounded number of processes makes PIDPressure.
[ -z "${PID_MAX:-}" ] || sysctl -qw kernel.pid_max="$PID_MAX"

# qemu's user network (restrict=on: only the guestfwd to the host's API server is reachable).
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
echo "nameserver 10.0.2.3" >/etc/resolv.conf
# What kube-proxy does for hostNetwork pods: the kubernetes Service's address (in-cluster
# clients such as evictd read KUBERNETES_SERVICE_HOST) reaches the API server.
sysctl -qw net.ipv4.ip_forward=1
iptables -t nat -A OUTPUT -d "$SERVICE_IP/32" -p tcp --dport 443 -j DNAT --to-destination "$API_HOST:$API_PORT"
say "disk, binds, network and Service DNAT ready"
