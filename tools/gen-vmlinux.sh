#!/usr/bin/env bash
# Regenerate the vendored vmlinux.h for this machine's architecture from kernel BTF.
# Usage: tools/gen-vmlinux.sh [BTF_FILE] (default /sys/kernel/btf/vmlinux)
# BPF code reads kernel data only through CO-RE, so a header from any recent kernel works
# on every kernel with BTF; regenerate only to reach new types.
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
case "$(uname -m)" in
x86_64) arch=x86 ;;
aarch64) arch=arm64 ;;
*) echo "gen-vmlinux: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
[ -r "$btf" ] || { echo "gen-vmlinux: cannot read $btf (kernel built without CONFIG_DEBUG_INFO_BTF?)" >&2; exit 1; }
out="$(dirname "$0")/../vmlinux/$arch/vmlinux.h"
mkdir -p "$(dirname "$out")"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out ($(wc -l < "$out") lines) from $btf"
