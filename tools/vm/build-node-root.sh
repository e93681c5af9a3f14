#!/usr/bin/env bash
# build-node-root.sh - the systemd guest root of a real Kubernetes node (tests/cluster/node):
# build-systemd-root.sh's root with Debian's containerd, runc and CNI plugins, the modules a
# node needs, and the units that make the node from its disk (tests/cluster/node/guest).
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)
GUEST=$HERE/../../tests/cluster/node/guest

# containerd 1.6.20 (its CRI plugin) + runc 1.1.5, the CNI plugins (ptp, host-local, loopback in
# /usr/lib/cni), iptables for the in-cluster API address, conntrack (the kubelet's checks);
# ip, sysctl and ps are busybox applets.
PACKAGES=containerd,runc,containernetworking-plugins,iptables,conntrack,kmod,ca-certificates
# virtio disk + network; overlay (containerd's snapshotter), veth (ptp), bridge/br_netfilter and
# the netfilter modules iptables-nft needs for DNAT/MASQUERADE.
MODULES=virtio_pci,virtio_blk,virtio_net,ext4,overlay,veth,bridge,br_netfilter,nf_conntrack,nf_tables,nft_compat,nft_chain_nat,nft_nat,xt_nat,xt_MASQUERADE,xt_conntrack,xt_addrtype,xt_comment,xt_mark

usage() {
    cat <<EOF2
Usage: $PROG OUT.cpio [--base-only]

Build (cached by build-systemd-root.sh) a systemd root with $PACKAGES,
the modules $MODULES, and the units of tests/cluster/node/guest:
evictd-node-setup.service (mounts the node disk /dev/vda, rshared /, cgroup
controllers, the network on qemu's user net), evictd-node-images.service (ctr import of
the disk's images) and kubelet.service (the disk's kubebin). Boot it with run-guest.sh
--guestfwd API_PORT --disk NODE_DISK --append apparmor=0; tests/cluster/node/run-node.sh
makes the disk.
EOF2
}
case ${1:-} in -h|--help) usage; exit 0 ;; "") usage >&2; exit 2 ;; esac
if [ "$1" = --base-only ]; then
    exec "$HERE/build-systemd-root.sh" --base-only --packages "$PACKAGES"
fi
exec "$HERE/build-systemd-root.sh" "$1" --packages "$PACKAGES" --modules "$MODULES" \
    --add "$GUEST/init:/init" --add "$GUEST/node-setup.sh:/usr/lib/evictd-node/node-setup.sh" \
    --add "$GUEST/node-images.sh:/usr/lib/evictd-node/node-images.sh" \
    --add "$GUEST/pod-logs.sh:/usr/lib/evictd-node/pod-logs.sh" --unit "$GUEST/evictd-node-podlogs.service" \
    --unit "$GUEST/evictd-node-setup.service" --unit "$GUEST/evictd-node-images.service" \
    --unit "$GUEST/kubelet.service"
