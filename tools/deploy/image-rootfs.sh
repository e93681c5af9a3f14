#!/usr/bin/env bash
# Stage the image's root filesystem for the Containerfile: evictd and evictctl, exactly the
# shared libraries they load (the ldd closure, each under the path the loader resolves it to),
# the dynamic loader, the CA bundle libcurl reads, and a static busybox as /bin/sh and xargs
# (the disk reclaim steps run with `sh -c`, e.g. "crictl ps ... | xargs -r crictl rm").
# Usage: tools/deploy/image-rootfs.sh OUTDIR EVICTD EVICTCTL [BUSYBOX]
# The binaries may be another architecture's (the arm64 image from an x86 host, make image):
# their closure comes from tools/cross-ldd.sh (readelf and Debian's multiarch directories), and
# BUSYBOX is then that architecture's static busybox (tools/vm/fetch-arm64-userland.sh).
# OUTDIR/rootfs is made anew; OUTDIR/rootfs.list names every file staged.
set -euo pipefail

out=${1:?usage: image-rootfs.sh OUTDIR EVICTD EVICTCTL}
evictd=${2:?}
evictctl=${3:?}
rootfs="$out/rootfs"
ca_bundle=/etc/ssl/certs/ca-certificates.crt	# libcurl's default CAfile on Debian
busybox=${4:-/bin/busybox}			# busybox-static: no libraries of its own
ldd() { "$(dirname "$0")/../cross-ldd.sh" "$@"; }

for file in "$evictd" "$evictctl" "$ca_bundle" "$busybox"; do
	[ -f "$file" ] || { echo "image-rootfs: $file is missing" >&2; exit 1; }
done
# ldd exits 1 on a static binary; what it prints says which.
ldd_says=$(LC_ALL=C ldd "$busybox" 2>&1 || true)
if ! grep -q "not a dynamic executable" <<<"$ldd_says"; then
	echo "image-rootfs: $busybox is not static (install busybox-static)" >&2
	exit 1
fi

rm -rf "$rootfs"
mkdir -p "$rootfs"/{usr/sbin,bin,etc/ssl/certs,run/evictd,var/lib/evictd,tmp}
chmod 1777 "$rootfs/tmp"

# Copy a file to the same path inside the root filesystem, following symlinks (the soname
# link becomes a regular file holding the library).
stage() {
	mkdir -p "$rootfs$(dirname "$1")"
	cp -L "$1" "$rootfs$1"
}

install -m 0755 "$evictd" "$rootfs/usr/sbin/evictd"
install -m 0755 "$evictctl" "$rootfs/usr/sbin/evictctl"

# The closure as the loader resolves it on this machine: "libx.so.1 => /path (0x...)" and the
# loader's own line "/lib64/ld-linux-x86-64.so.2 (0x...)". linux-vdso has no file.
libs=$(for binary in "$evictd" "$evictctl"; do
	LC_ALL=C ldd "$binary" | awk '
		/not found/ { print "MISSING " $1; next }
		$2 == "=>" && $3 ~ /^\// { print $3; next }
		$1 ~ /^\// { print $1 }'
done | sort -u)
if grep -q '^MISSING' <<<"$libs"; then
	echo "image-rootfs: unresolved libraries: $(grep '^MISSING' <<<"$libs" | tr '\n' ' ')" >&2
	exit 1
fi
for lib in $libs; do
	stage "$lib"
done

stage "$ca_bundle"
install -m 0755 "$busybox" "$rootfs/bin/busybox"
ln -s busybox "$rootfs/bin/sh"
ln -s busybox "$rootfs/bin/xargs"

# Name lookups: glibc >= 2.34 has files and dns built in; without these files it would try
# dns first. passwd/group: root only, for anything that asks who uid 0 is.
printf 'hosts: files dns\npasswd: files\ngroup: files\n' > "$rootfs/etc/nsswitch.conf"
printf 'root:x:0:0:root:/:/bin/sh\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\n' > "$rootfs/etc/group"

(cd "$rootfs" && find . ! -type d | sed 's#^\.##' | sort) > "$out/rootfs.list"
echo "image-rootfs: staged $(wc -l < "$out/rootfs.list") files, $(du -sh "$rootfs" | cut -f1) in $rootfs"
