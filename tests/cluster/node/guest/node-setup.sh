#!/bin/sh
# node-setup.sh - make the guest a Kubernetes node before containerd and the kubelet start
# (evictd-node-setup.service): the node disk, mounts, network, cgroups, the images.
# Prints EVICTD-NODE: markers on the console for the host (tests/cluster/node/run-node.sh).
set -eu
mark() { echo "EVICTD-NODE: $*" >/dev/console; }
mark "setup start uptime=$(cut -d' ' -f1 /proc/uptime)"

# The node disk (made on the host by run-node.sh): kubebin, the images, the node's config; the
# kubelet's and containerd's state live on it too (a block device, not the RAM the memory
# scenarios measure; the kubelet's nodefs/imagefs statfs see a real file system).
mkdir -p /node
mount -t ext4 /dev/vda /node
for d in kubelet containerd; do
    mkdir -p "/node/$d" "/var/lib/$d"
    mount --bind "/node/$d" "/var/lib/$d"
done
mkdir -p /etc/kubernetes/manifests /etc/containerd /etc/cni/net.d
[ -e /etc/resolv.conf ] || : >/etc/resolv.conf
cp /node/config/kubelet.yaml /var/lib/kubelet/config.yaml
cp /node/config/kubeconfig /node/config/ca.crt /etc/kubernetes/
# The node's client certificate where kubeadm's nodes keep it (the kubelet's --cert-dir, as its
# certificate rotation writes it): evictd lists this node's pods with it (Node authorizer).
mkdir -p /var/lib/kubelet/pki
cat /node/config/node.crt /node/config/node.key >/var/lib/kubelet/pki/kubelet-client-current.pem
chmod 600 /var/lib/kubelet/pki/kubelet-client-current.pem
cp /node/config/containerd.toml /etc/containerd/config.toml
cp /node/config/10-ptp.conflist /etc/cni/net.d/
ln -sf /node/bin/kubebin /usr/local/bin/kubebin

# Mount propagation for the kubelet's volumes and evictd's Bidirectional bpffs mount.
mount --make-rshared /
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
mount --make-rshared /sys/fs/bpf
# cgroup v2: every controller delegated to the children of the root (kubepods, system.slice).
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
done

# qemu's user network: the guest is 10.0.2.15, the API server 10.0.2.100 (guestfwd: only its port
# is forwarded, restrict=on). The in-cluster API address (the kubernetes Service, 10.96.0.1:443)
# goes to the forwarded port, as kube-proxy would do on a real node.
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
port=$(cat /node/config/api-port)
sysctl -qw net.ipv4.ip_forward=1
iptables -t nat -A OUTPUT -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination "10.0.2.100:$port"
iptables -t nat -A PREROUTING -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination "10.0.2.100:$port"
iptables -t nat -A POSTROUTING -s 10.244.0.0/24 ! -d 10.244.0.0/24 -j MASQUERADE
mark "setup done uptime=$(cut -d' ' -f1 /proc/uptime)"
