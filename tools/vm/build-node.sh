#!/usr/bin/env bash
# build-node.sh - a Kubernetes node for a QEMU guest: a systemd root with containerd, runc and
# the CNI plugins (the initramfs) and a node disk with the kubelet and the images (ext4).
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${EVICTD_VM_CACHE:-/var/cache/evictd-vm}
# Debian bookworm's runtime (containerd 1.6.20 with its CRI plugin, runc 1.1.5, ptp/host-local/
# loopback in /usr/lib/cni) and iptables for the Service address (node-setup.sh).
NODE_PACKAGES=containerd,runc,containernetworking-plugins,iptables,conntrack
# The disk, the network, overlayfs for containerd, veth for the CNI ptp plugin, and what
# iptables-nft needs for a DNAT rule.
NODE_MODULES=virtio_pci,virtio_blk,virtio_net,ext4,overlay,veth,br_netfilter,nf_tables,nft_chain_nat,nft_compat,xt_nat,xt_tcpudp,xt_addrtype,xt_conntrack,xt_MASQUERADE,xt_comment,xt_mark
DISK_SIZE=${EVICTD_NODE_DISK_SIZE:-4G}

usage() {
    cat <<EOF
Usage: $PROG OUTDIR --kubebin KUBEBIN --node-files DIR [--image ARCHIVE[=BASE-NAME]]...

Build the guest of a real Kubernetes node (tests/cluster/test_node.sh boots it with
tools/vm/run-guest.sh):
  OUTDIR/node.cpio  the systemd root of build-systemd-root.sh with --packages
                    $NODE_PACKAGES,
                    tools/vm/node/ (units, node-setup.sh, containerd.toml: the sandbox image
                    is localhost/evictd-test/pause:1, a CNI ptp network 10.244.0.0/24) and
                    DIR as /etc/evictd-node (the run's env, kubelet.kubeconfig, certificates,
                    kubelet-config.yaml); modules $NODE_MODULES
  OUTDIR/node.img   a copy of the cached node disk ($DISK_SIZE ext4, \$EVICTD_VM_CACHE/node-disk/):
                    /bin/kubebin (KUBEBIN: the kubelet and kubectl), /images/*.tar and
                    /images/list (what node-images.sh imports into containerd): the project's
                    pause image (tests/vm/progs/pause.c), its workload image
                    localhost/evictd-test/workload:1 (busybox-static, memhog, forkbomb,
                    mkfiles), the same as workload-usr2:1 with STOPSIGNAL SIGUSR2, and every --image ARCHIVE (an OCI archive; =BASE-NAME: its name
                    when its index has only a tag, as make image's has)
The guest's log lines start with EVICTD-VM:. Needs root.
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }

OUT="" KUBEBIN="" NODE_FILES="" IMAGES=()
while [ $# -gt 0 ]; do
    case $1 in
        --kubebin) [ $# -ge 2 ] || die "--kubebin needs a file"; KUBEBIN=$2; shift 2 ;;
        --node-files) [ $# -ge 2 ] || die "--node-files needs a directory"; NODE_FILES=$2; shift 2 ;;
        --image) [ $# -ge 2 ] || die "--image needs an archive"; IMAGES+=("$2"); shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) [ -z "$OUT" ] || die "more than one OUTDIR"; OUT=$1; shift ;;
    esac
done
[ -n "$OUT" ] || die "no OUTDIR (see --help)"
[ -x "$KUBEBIN" ] || die "--kubebin: not an executable: '$KUBEBIN'"
[ -d "$NODE_FILES" ] || die "--node-files: not a directory: '$NODE_FILES'"
mkdir -p "$OUT"

# ---- the node disk (cached: the kubebin and the image archives are its key) ---------------
PROGS=$ROOT/build/vm-progs
make -s -C "$ROOT/tests/vm/progs" OUT="$PROGS" >/dev/null || die "building tests/vm/progs failed"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/evictd-node.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/disk/bin" "$STAGE/disk/images"
python3 "$HERE/oci-image.py" "$STAGE/disk/images/pause.tar" localhost/evictd-test/pause:1 \
    --entrypoint /pause --file "$PROGS/pause:/pause" || die "the pause image"
wl=(--file /bin/busybox:/bin/busybox)
for p in memhog forkbomb mkfiles; do wl+=(--file "$PROGS/$p:/usr/bin/$p"); done
for l in sh sleep cat echo ls dd head tail mkdir rm seq; do wl+=(--link "busybox:/bin/$l"); done
python3 "$HERE/oci-image.py" "$STAGE/disk/images/workload.tar" localhost/evictd-test/workload:1 \
    --entrypoint /bin/sh "${wl[@]}" || die "the workload image"
# The same with STOPSIGNAL SIGUSR2: what the kubelet's stop sends, not SIGTERM (scenario d).
python3 "$HERE/oci-image.py" "$STAGE/disk/images/workload-usr2.tar" localhost/evictd-test/workload-usr2:1 \
    --entrypoint /bin/sh --stop-signal SIGUSR2 "${wl[@]}" || die "the workload image (STOPSIGNAL)"
printf 'pause.tar\nworkload.tar\nworkload-usr2.tar\n' >"$STAGE/disk/images/list"
i=0
for img in ${IMAGES[@]+"${IMAGES[@]}"}; do
    f=${img%%=*} base=""
    [ "$f" = "$img" ] || base=${img#*=}
    [ -f "$f" ] || die "--image: no such archive: $f"
    cp "$f" "$STAGE/disk/images/extra$i.tar"
    echo "extra$i.tar${base:+ $base}" >>"$STAGE/disk/images/list"
    i=$((i + 1))
done
key=$( { echo "size=$DISK_SIZE"; basename "$KUBEBIN"; stat -c %s "$KUBEBIN";
         cd "$STAGE/disk/images" && sha256sum ./*; } | sha256sum | cut -c1-16)
DDIR=$CACHE/node-disk
DISK=$DDIR/$key.img
mkdir -p "$DDIR"
exec 9>"$DDIR/.lock"
flock 9
if [ ! -f "$DISK" ]; then
    cp "$KUBEBIN" "$STAGE/disk/bin/kubebin"
    truncate -s "$DISK_SIZE" "$DISK.tmp"
    mkfs.ext4 -q -F -L evictd-node -E root_owner=0:0 -d "$STAGE/disk" "$DISK.tmp" || { rm -f "$DISK.tmp"; die "mkfs.ext4 failed"; }
    mv "$DISK.tmp" "$DISK"
    # older disks of other keys are not used again
    find "$DDIR" -name '*.img' ! -name "$key.img" -mmin +60 -delete 2>/dev/null || true
fi
exec 9>&-
cp --sparse=always "$DISK" "$OUT/node.img"

# ---- the root --------------------------------------------------------------------------------
N=$HERE/node
args=(--packages "$NODE_PACKAGES" --modules "$NODE_MODULES"
      --add "$N/init:/init"
      --add "$N/node-setup.sh:/usr/lib/evictd-node/node-setup.sh"
      --add "$N/node-images.sh:/usr/lib/evictd-node/node-images.sh"
      --add "$N/node-watch.sh:/usr/lib/evictd-node/node-watch.sh"
      --add "$N/node-logs.sh:/usr/lib/evictd-node/node-logs.sh"
      --add "$N/node-sampler.sh:/usr/lib/evictd-node/node-sampler.sh"
      --add "$N/containerd.toml:/etc/containerd/config.toml"
      --add "$N/10-tasks-max.conf:/etc/systemd/system.conf.d/10-tasks-max.conf"
      --add "$N/10-ptp.conflist:/etc/cni/net.d/10-ptp.conflist"
      --add "$NODE_FILES:/etc/evictd-node")
for u in node-setup.service node-images.service kubelet.service node-watch.service node-logs.service \
    node-sampler.service; do
    args+=(--unit "$N/$u")
done
"$HERE/build-systemd-root.sh" "$OUT/node.cpio" "${args[@]}" >/dev/null || die "build-systemd-root.sh failed"
echo "$OUT"
