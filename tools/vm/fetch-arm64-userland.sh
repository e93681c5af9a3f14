#!/usr/bin/env bash
# fetch-arm64-userland.sh - the arm64 programs the aarch64 guest needs that evictd does not
# build: a static busybox (busybox-static:arm64, the guest's /init and shell), bpftool
# (bpftool:arm64, which the BPF data-plane test runs) and setfattr (attr:arm64, 16-standalone's
# priority xattrs; it needs libc alone). Downloaded with apt-get download and
# extracted, never installed: busybox-static:arm64 and the host's amd64 one cannot both be
# installed (not Multi-Arch). Prints the extracted root: ROOT/bin/busybox, ROOT/usr/sbin/bpftool,
# ROOT/usr/bin/setfattr.
# Usage: tools/vm/fetch-arm64-userland.sh [--cache DIR]   (default $EVICTD_VM_CACHE or
#        /var/cache/evictd-vm; the root is CACHE/userland-arm64)
set -euo pipefail
PROG=${0##*/}
CACHE=${EVICTD_VM_CACHE:-/var/cache/evictd-vm}
die() { echo "$PROG: error: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
    case $1 in
        --cache) [ $# -ge 2 ] || die "--cache needs a directory"; CACHE=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
PKGS=(busybox-static bpftool attr)
root=$CACHE/userland-arm64
if [ -f "$root/.complete" ] && [ -x "$root/bin/busybox" ] && [ -x "$root/usr/sbin/bpftool" ] \
    && [ -x "$root/usr/bin/setfattr" ]; then
    echo "$root"
    exit 0
fi
dpkg --print-foreign-architectures | grep -qx arm64 \
    || die "dpkg has no arm64 architecture (tools/install-deps.sh arm64)"
mkdir -p "$CACHE/debs" || die "cannot create $CACHE/debs"
exec 9>"$CACHE/.lock-arm64-userland"
timeout 900 flock 9 || die "timed out waiting for $CACHE/.lock-arm64-userland"

# a scratch dir apt's sandbox user can write to (as fetch-kernel.sh does)
dl=$(mktemp -d "$CACHE/debs/dl.XXXXXX")
trap 'rm -rf "$dl" "$root.tmp"' EXIT
chmod 755 "$dl"
if id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi
rm -rf "$root.tmp"
mkdir -p "$root.tmp"
for p in "${PKGS[@]}"; do
    deb=$(ls "$CACHE/debs/${p}_"*_arm64.deb 2>/dev/null | tail -n1 || true)
    if [ -z "$deb" ]; then
        echo "$PROG: downloading $p:arm64" >&2
        (cd "$dl" && timeout 900 apt-get download -q "$p:arm64" >&2) || die "apt-get download $p:arm64 failed"
        mv "$dl"/*.deb "$CACHE/debs/"
        deb=$(ls "$CACHE/debs/${p}_"*_arm64.deb | tail -n1)
    fi
    dpkg-deb -x "$deb" "$root.tmp" || die "dpkg-deb -x $deb failed"
done
[ -x "$root.tmp/bin/busybox" ] || die "busybox-static:arm64 has no /bin/busybox"
[ -x "$root.tmp/usr/sbin/bpftool" ] || die "bpftool:arm64 has no /usr/sbin/bpftool"
[ -x "$root.tmp/usr/bin/setfattr" ] || die "attr:arm64 has no /usr/bin/setfattr"
touch "$root.tmp/.complete"
rm -rf "$root"
mv "$root.tmp" "$root"
echo "$root"
