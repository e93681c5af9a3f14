#!/usr/bin/env bash
# overhead-guest.sh - tools/bench/bpf-overhead.sh's loops on Debian's kernel (6.1) in the QEMU
# guest, where fentry is allowed: the default memory hook (memcg charge batches, fentry on
# page_counter_try_charge) against the fallback's buddy hook (mm_page_alloc_zone_locked), each A/B against no programs in its own
# ABBA run. TCG emulates both sides alike; the ratios compare, the microseconds do not.
# Usage: tools/bench/overhead-guest.sh [SLICES]   (default 24 slices of 0.25 s per loop)
set -euo pipefail
cd "$(dirname "$0")/../.."
slices=${1:-24}
BUILD=${BUILD:-build}
[ -x "$BUILD/bench/bpf-overhead" ] || { echo "overhead-guest.sh: run tools/bench/bpf-overhead.sh --help first (builds $BUILD/bench/bpf-overhead)" >&2; exit 2; }
work=$(mktemp -d /tmp/evictd-overhead-guest.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/scenario.sh" <<SCENARIO
#!/bin/sh
echo "guest: kernel \$(uname -r), \$(nproc) CPUs"
mkdir -p /mnt/disk && mount -t ext4 /dev/vda /mnt/disk
mkdir -p /sys/fs/cgroup/bench && echo \$\$ > /sys/fs/cgroup/bench/cgroup.procs
echo "# config: guest default (memory hook: memcg charge batches, fentry)"
bpf-overhead --dir /mnt/disk --cpu 1 --slices $slices fork read cached write create 2>&1 | sed 's/^/guest: /'
echo "# config: guest --memory-hook buddy (mm_page_alloc_zone_locked, the fallback where fentry is refused)"
bpf-overhead --dir /mnt/disk --cpu 1 --slices $slices --memory-hook buddy fork read cached write create 2>&1 | sed 's/^/guest: /'
echo "EVICTD-OVERHEAD-GUEST done"
SCENARIO
truncate -s 256M "$work/disk.img"
mkfs.ext4 -q "$work/disk.img"
tools/vm/build-initramfs.sh "$work/initrd.cpio.gz" --init "$work/scenario.sh" \
	--add "$BUILD/bench/bpf-overhead:/usr/bin/bpf-overhead" \
	--modules virtio_pci,virtio_blk,ext4 >/dev/null
tools/vm/run-guest.sh --initramfs "$work/initrd.cpio.gz" --log "$work/serial.log" \
	--mem 1024M --smp 2 --disk "$work/disk.img" --timeout 900 || true
grep -aE '^(guest: |# config: guest)' "$work/serial.log" | tr -d '\r'
grep -aq 'EVICTD-OVERHEAD-GUEST done' "$work/serial.log"
