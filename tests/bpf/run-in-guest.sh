#!/usr/bin/env bash
# run-in-guest.sh - run the BPF data-plane tests on Debian's kernel (6.1; $EVICTD_VM_KERNEL=6.12
# or a linux-image-* package picks another, tools/vm/fetch-kernel.sh) under QEMU, with
# an ext4 disk for the page-cache and inode tests and the xfs module loaded (module BTF).
# Usage: tests/bpf/run-in-guest.sh [TEST_BINARY]   (default build/tests-bpf/test_bpf_dataplane)
# ARCH=arm64: Debian's arm64 kernel in an aarch64 TCG guest (tools/vm/run-guest.sh --arch), the
# binary from build-arm64 (make ARCH=arm64 build-arm64/tests-bpf/test_bpf_dataplane), bpftool
# from bpftool:arm64 (tools/vm/fetch-arm64-userland.sh).
# Needs root and the harness in tools/vm (fetch-kernel.sh caches the kernel). Prints the
# guest's TAP stream; exits 0 only when the test binary exited 0 in the guest.
set -euo pipefail
cd "$(dirname "$0")/../.."
case ${ARCH:-x86} in
arm64|aarch64) export EVICTD_VM_ARCH=arm64; build="build-arm64"; timeout=1200
	bpftool="$(tools/vm/fetch-arm64-userland.sh)/usr/sbin/bpftool" ;;
*) export EVICTD_VM_ARCH=amd64; build=build; timeout=600; bpftool=$(command -v bpftool) ;;
esac
bin=${1:-$build/tests-bpf/test_bpf_dataplane}
[ -x "$bin" ] || { echo "run-in-guest.sh: $bin not built (make bpftest; make ARCH=arm64 $bin)" >&2; exit 2; }
work=$(mktemp -d /tmp/evictd-bpf-guest.XXXXXX)
trap 'rm -rf "$work"' EXIT

cat >"$work/scenario.sh" <<'SCENARIO'
#!/bin/sh
echo "kernel: $(uname -r)"
mkdir -p /mnt/disk && mount -t ext4 /dev/vda /mnt/disk
EVICTD_TEST_DIR=/mnt/disk CMOCKA_MESSAGE_OUTPUT=TAP /usr/bin/test_bpf_dataplane 2>&1
echo "EVICTD-BPF-TEST rc=$?"
SCENARIO
truncate -s 512M "$work/disk.img"
mkfs.ext4 -q "$work/disk.img"
tools/vm/build-initramfs.sh "$work/initrd.cpio.gz" --init "$work/scenario.sh" \
	--add "$bin:/usr/bin/test_bpf_dataplane" --add "$bpftool:/usr/sbin/bpftool" \
	--modules virtio_pci,virtio_blk,ext4,xfs >/dev/null
tools/vm/run-guest.sh --initramfs "$work/initrd.cpio.gz" --log "$work/serial.log" \
	--mem 1024M --smp 2 --disk "$work/disk.img" --timeout $timeout || true
grep -aE '^(kernel:|ok |not ok |# |1\.\.)|EVICTD-BPF-TEST' "$work/serial.log" || true
grep -aq 'EVICTD-BPF-TEST rc=0' "$work/serial.log"
