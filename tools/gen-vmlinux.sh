#!/usr/bin/env bash
# Regenerate a vendored vmlinux/<arch>/vmlinux.h from kernel BTF.
# Usage: tools/gen-vmlinux.sh [BTF_FILE]   this machine's architecture, from BTF_FILE
#                                          (default /sys/kernel/btf/vmlinux)
#        tools/gen-vmlinux.sh --arch arm64 Debian's arm64 kernel (linux-image-arm64, 6.1):
#                                          booted in an aarch64 TCG guest, its BTF copied out
# BPF code reads kernel data only through CO-RE, so a header from any recent kernel works
# on every kernel with BTF; regenerate only to reach new types. Debian's arm64 package ships
# a bare Image (no ELF, no .BTF section to read on the host): the running kernel exports the
# same BTF at /sys/kernel/btf/vmlinux, which the guest writes raw to a virtio disk.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "gen-vmlinux: $*" >&2; exit 1; }

host_arch() {
	case "$(uname -m)" in
	x86_64) echo x86 ;;
	aarch64) echo arm64 ;;
	*) die "unsupported architecture $(uname -m)" ;;
	esac
}

# guest_btf ARCH OUT: boot Debian's kernel for ARCH under TCG and copy its BTF to OUT.
guest_btf() {
	local debarch=$1 out=$2 work size
	work=$(mktemp -d /tmp/evictd-gen-vmlinux.XXXXXX)
	# shellcheck disable=SC2064
	trap "rm -rf '$work'" EXIT
	cat >"$work/scenario.sh" <<'EOF'
#!/bin/sh
btf=/sys/kernel/btf/vmlinux
size=$(wc -c <$btf)
cat $btf >/dev/vda && sync
echo "EVICTD-BTF kernel=$(uname -r) size=$size"
EOF
	truncate -s 64M "$work/disk.img"
	EVICTD_VM_ARCH=$debarch "$here/vm/build-initramfs.sh" "$work/initrd.cpio.gz" \
		--init "$work/scenario.sh" --modules virtio_pci,virtio_blk >"$work/build.log" 2>&1 \
		|| die "building the initramfs failed: $(tail -n 3 "$work/build.log")"
	EVICTD_VM_ARCH=$debarch "$here/vm/run-guest.sh" --initramfs "$work/initrd.cpio.gz" \
		--log "$work/serial.log" --mem 1024M --smp 2 --disk "$work/disk.img" --timeout 900 \
		|| die "the $debarch guest failed (qemu exit $?): $(tail -n 5 "$work/serial.log")"
	size=$(tr -d '\r' <"$work/serial.log" | sed -n 's/.*EVICTD-BTF kernel=\([^ ]*\) size=\([0-9]*\).*/\2/p')
	[ -n "$size" ] || die "the guest printed no BTF size: $(tail -n 10 "$work/serial.log")"
	echo "gen-vmlinux: $(tr -d '\r' <"$work/serial.log" | grep -o 'EVICTD-BTF kernel=[^ ]*') BTF $size bytes" >&2
	head -c "$size" "$work/disk.img" >"$out"
	# BTF starts with the magic 0xeB9F (little endian: 9f eb).
	[ "$(head -c 2 "$out" | od -An -tx1 | tr -d ' ')" = 9feb ] || die "what the guest wrote is not BTF"
	rm -rf "$work"
	trap - EXIT
}

arch=""
btf=""
case "${1:-}" in
--arch)
	[ $# -ge 2 ] || die "--arch needs x86 or arm64"
	arch=$2
	case $arch in aarch64) arch=arm64 ;; x86_64) arch=x86 ;; esac
	;;
-h|--help) sed -n '2,6p' "$0"; exit 0 ;;
*) btf=${1:-/sys/kernel/btf/vmlinux}; arch=$(host_arch) ;;
esac
case $arch in x86|arm64) ;; *) die "unsupported architecture '$arch' (x86 or arm64)" ;; esac

out="$(dirname "$here")/vmlinux/$arch/vmlinux.h"
mkdir -p "$(dirname "$out")"
if [ -z "$btf" ]; then
	if [ "$arch" = "$(host_arch)" ]; then
		btf=/sys/kernel/btf/vmlinux
	else
		btf=$(mktemp /tmp/evictd-btf.XXXXXX)
		guest_btf "$([ "$arch" = arm64 ] && echo arm64 || echo amd64)" "$btf"
		# shellcheck disable=SC2064
		trap "rm -f '$btf'" EXIT
	fi
fi
[ -r "$btf" ] || die "cannot read $btf (kernel built without CONFIG_DEBUG_INFO_BTF?)"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out ($(wc -l < "$out") lines) from $btf"
