#!/usr/bin/env bash
# cross-ldd.sh - ldd for an ELF of this machine's or another architecture, printed as ldd
# prints it ("libx.so.1 => /path (0x0)", the loader as "\t/path (0x0)"), so the image and
# initramfs builders stage an arm64 binary's libraries from an x86 host. ldd runs the target's
# loader, which an x86 host cannot run: for a foreign ELF the closure is read with readelf
# (PT_INTERP and DT_NEEDED, breadth-first) and each soname resolved in Debian's multiarch
# directories in the order ld.so.conf.d/<triplet>.conf gives them. A native ELF goes to ldd.
# Usage: tools/cross-ldd.sh FILE
set -euo pipefail
file=${1:?usage: cross-ldd.sh FILE}
[ -f "$file" ] || { echo "cross-ldd: $file: no such file" >&2; exit 1; }

machine() { LC_ALL=C readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'; }
host=$(machine /proc/self/exe)
target=$(machine "$file")
[ -n "$target" ] || { echo "cross-ldd: $file is not an ELF" >&2; exit 1; }
[ "$target" = "$host" ] && exec ldd "$file"

case $target in
AArch64) triplet=aarch64-linux-gnu ;;
"Advanced Micro Devices X86-64") triplet=x86_64-linux-gnu ;;
*) echo "cross-ldd: $file: no multiarch directory known for '$target'" >&2; exit 1 ;;
esac
interp=$(LC_ALL=C readelf -l "$file" | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
# A static binary: what ldd says for one.
if [ -z "$interp" ] && ! LC_ALL=C readelf -d "$file" 2>/dev/null | grep -q NEEDED; then
	echo "	not a dynamic executable"
	exit 1
fi
dirs=("/lib/$triplet" "/usr/lib/$triplet" "/usr/$triplet/lib")
needed() { LC_ALL=C readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

declare -A seen=()
queue=("$file")
while [ ${#queue[@]} -gt 0 ]; do
	cur=${queue[0]}
	queue=("${queue[@]:1}")
	for so in $(needed "$cur"); do
		[ -n "${seen[$so]:-}" ] && continue
		path=""
		for d in "${dirs[@]}"; do
			[ -e "$d/$so" ] && { path=$d/$so; break; }
		done
		seen[$so]=${path:-not found}
		if [ -z "$path" ]; then
			printf '\t%s => not found\n' "$so"
			continue
		fi
		# The loader is printed once, by its PT_INTERP path, below.
		[ -n "$interp" ] && [ "$(basename "$interp")" = "$so" ] && continue
		printf '\t%s => %s (0x0000000000000000)\n' "$so" "$path"
		queue+=("$path")
	done
done
[ -z "$interp" ] || printf '\t%s (0x0000000000000000)\n' "$interp"
