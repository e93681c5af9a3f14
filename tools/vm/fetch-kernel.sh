#!/usr/bin/env bash
# fetch-kernel.sh - get a Debian kernel for the evictd VM test harness.
#
# Downloads (apt-get download, never installs) a real kernel package -- by default
# the one Debian's `linux-image-amd64` metapackage depends on, or the one named by
# --kernel / $EVICTD_VM_KERNEL (a version line such as 6.12, or a package name) --
# extracts vmlinuz and the modules tree into a cache directory (kernels side by
# side), runs depmod on it, and prints the path of the vmlinuz on stdout.  Also
# makes sure the host tools the harness needs (qemu-system-x86, busybox-static,
# kmod, cpio) are installed.
set -euo pipefail

PROG=${0##*/}
CACHE=${EVICTD_VM_CACHE:-/var/cache/evictd-vm}
REFRESH=0
KSPEC=${EVICTD_VM_KERNEL:-}
PRINT=vmlinuz
NO_DEPS=0
# Debian's architecture name: amd64 (this harness's x86 guest) or arm64 (the aarch64 TCG guest).
DEBARCH=${EVICTD_VM_ARCH:-amd64}

usage() {
    cat <<EOF
Usage: $PROG [--kernel SPEC | --package PKG] [--arch amd64|arm64] [--cache DIR] [--refresh]
       [--print vmlinuz|kdir|kver|config] [--no-host-deps]

Fetch a Debian kernel package with 'apt-get download', extract it into the cache
and print the path of its vmlinuz.

  --kernel SPEC    which kernel (default: \$EVICTD_VM_KERNEL, else 'default'):
                     default          the package linux-image-ARCH depends on (6.1
                                      on Debian 12)
                     MAJOR.MINOR      e.g. 6.12: the newest linux-image-MAJOR.MINOR*-ARCH-unsigned
                                      apt knows (bookworm-security/-backports serve 6.12;
                                      tools/install-deps.sh vm adds backports when no
                                      source has it)
                     linux-image-*    that package
  --package PKG    the same as --kernel PKG
  --cache DIR      cache directory (default: \${EVICTD_VM_CACHE:-/var/cache/evictd-vm},
                   now: $CACHE)
  --refresh        re-resolve the metapackage even if a kernel is already cached
                   (downloads a newer kernel if apt now has one)
  --print WHAT     what to print on stdout: vmlinuz (default), kdir (the extracted
                   root: kdir/lib/modules/KVER, kdir/boot/config-KVER), kver, config
  --no-host-deps   do not check/install qemu-system-x86, busybox-static, kmod, cpio
  --arch A         amd64 (default, \$EVICTD_VM_ARCH) or arm64: linux-image-arm64's
                   kernel (an arm64 foreign architecture in dpkg), CACHE/kernel/current-arm64
                   (by-spec/SPEC-arm64 for a --kernel other than the default)
  -h, --help       this help

The cache layout is CACHE/kernel/KVER/{boot,lib/modules/KVER,...}, one directory
per kernel, with CACHE/kernel/current -> the default amd64 kernel's KVER,
CACHE/kernel/current-arm64 -> the default arm64 kernel's, and
CACHE/kernel/by-spec/SPEC (amd64) or by-spec/SPEC-arm64 -> ../KVER for the others.
An amd64 kernel also gets boot/vmlinux-KVER, the same kernel uncompressed (when it
has a PVH entry, and xz and readelf are there), which tools/vm/run-guest.sh boots
in its place.  A cached kernel is reused without touching apt.
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }
log() { echo "$PROG: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
        --cache) [ $# -ge 2 ] || die "--cache needs a directory"; CACHE=$2; shift 2 ;;
        --refresh) REFRESH=1; shift ;;
        --kernel|--package) [ $# -ge 2 ] || die "$1 needs an argument"; KSPEC=$2; shift 2 ;;
        --print) [ $# -ge 2 ] || die "--print needs an argument"; PRINT=$2; shift 2 ;;
        --no-host-deps) NO_DEPS=1; shift ;;
        --arch) [ $# -ge 2 ] || die "--arch needs amd64 or arm64"; DEBARCH=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
case $PRINT in vmlinuz|kdir|kver|config) ;; *) die "--print: unknown value '$PRINT'" ;; esac
case $DEBARCH in
    amd64|x86|x86_64) DEBARCH=amd64; QEMU_PKG=qemu-system-x86; CURRENT=current ;;
    arm64|aarch64) DEBARCH=arm64; QEMU_PKG=qemu-system-arm; CURRENT=current-arm64 ;;
    *) die "--arch: amd64 or arm64, not '$DEBARCH'" ;;
esac
case $KSPEC in
    ""|default|"linux-image-$DEBARCH") KSPEC=default ;;
    [0-9]*.[0-9]*) [[ $KSPEC =~ ^[0-9]+\.[0-9]+$ ]] || die "--kernel '$KSPEC': expected MAJOR.MINOR (e.g. 6.12)" ;;
    linux-image-*) [[ $KSPEC =~ ^linux-image-[a-z0-9.+~-]+$ ]] || die "--kernel '$KSPEC': not a package name" ;;
    *) die "--kernel '$KSPEC': expected default, MAJOR.MINOR or a linux-image-* package name" ;;
esac

APT_UPDATED=0
apt_update_once() {
    if [ "$APT_UPDATED" = 0 ]; then
        log "running apt-get update"
        timeout 600 apt-get update -q >&2 || die "apt-get update failed"
        APT_UPDATED=1
    fi
}

# ensure_pkgs PKG... : install the packages that dpkg does not report installed.
ensure_pkgs() {
    local missing=() p
    for p in "$@"; do
        if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
            missing+=("$p")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" = 0 ] || die "host packages missing (${missing[*]}) and not root: install them first"
    apt_update_once
    log "installing host packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive timeout 1200 \
        apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}" >&2 \
        || die "apt-get install ${missing[*]} failed"
}

if [ "$NO_DEPS" = 0 ]; then
    ensure_pkgs "$QEMU_PKG" busybox-static kmod cpio e2fsprogs
fi

mkdir -p "$CACHE/kernel" "$CACHE/debs" || die "cannot create cache dir $CACHE"

print_result() {
    local kver=$1 kdir="$CACHE/kernel/$1"
    case $PRINT in
        vmlinuz) echo "$kdir/boot/vmlinuz-$kver" ;;
        kdir) echo "$kdir" ;;
        kver) echo "$kver" ;;
        config) echo "$kdir/boot/config-$kver" ;;
    esac
}

# The cache link of a kernel spec: current (current-arm64) for the default (what other
# tools read), by-spec/SPEC (by-spec/SPEC-arm64) for the others.
spec_link() {
    if [ "$KSPEC" = default ]; then
        echo "$CACHE/kernel/$CURRENT"
    elif [ "$DEBARCH" = amd64 ]; then
        echo "$CACHE/kernel/by-spec/$KSPEC"
    else
        echo "$CACHE/kernel/by-spec/$KSPEC-$DEBARCH"
    fi
}
LINK=$(spec_link)

# make_vmlinux KDIR KVER: beside an amd64 bzImage, its kernel as an uncompressed ELF,
# boot/vmlinux-KVER, when it has a PVH entry (CONFIG_PVH: the ELF note XEN_ELFNOTE_PHYS32_ENTRY,
# 18): tools/vm/run-guest.sh boots that one, through qemu's PVH loader, and the guest no longer
# spends seconds of TCG at every boot unpacking the compressed kernel (6.1: XZ, 6.12: zstd).
# Without xz/zstd or readelf, or without the note, boot/.no-vmlinux says so and the bzImage
# boots as before. Never fails.
unpack_vmlinux() { # unpack_vmlinux BZIMAGE OUT: the payload after the first XZ or zstd magic
    local z=$1 out=$2 off
    set +e +o pipefail
    off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$z" 2>/dev/null | LC_ALL=C awk -F: 'NR == 1 { print $1 }')
    if [ -n "$off" ] && command -v xz >/dev/null 2>&1; then
        tail -c +$((off + 1)) "$z" | xz -dc --single-stream >"$out" 2>/dev/null
    else
        off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$z" 2>/dev/null | LC_ALL=C awk -F: 'NR == 1 { print $1 }')
        [ -n "$off" ] && command -v zstd >/dev/null 2>&1 || return 1
        # zstd complains about what follows the frame (exit 1): the frame is whole all the same
        tail -c +$((off + 1)) "$z" | zstd -dc >"$out" 2>/dev/null
    fi
    [ "$(od -An -c -N4 "$out" 2>/dev/null | tr -d ' ')" = '177ELF' ] \
        && readelf -n "$out" 2>/dev/null | grep -qE 'note type: \(0x00000012\)|PHYS32_ENTRY'
}
make_vmlinux() {
    local kdir=$1 kver=$2 z out
    z=$kdir/boot/vmlinuz-$kver out=$kdir/boot/vmlinux-$kver
    [ "$DEBARCH" = amd64 ] || return 0
    [ ! -f "$out" ] && [ ! -f "$kdir/boot/.no-vmlinux" ] || return 0
    if command -v readelf >/dev/null 2>&1 && (unpack_vmlinux "$z" "$out.tmp"); then
        mv "$out.tmp" "$out"
        return 0
    fi
    rm -f "$out.tmp"
    log "no uncompressed vmlinux with a PVH entry from $z (xz or zstd, readelf, CONFIG_PVH): the bzImage boots"
    touch "$kdir/boot/.no-vmlinux"
}

# Fast path: a complete cached kernel.
if [ "$REFRESH" = 0 ] && [ -L "$LINK" ]; then
    kver=$(basename "$(readlink "$LINK")")
    if [ -f "$CACHE/kernel/$kver/.complete" ] && [ -f "$CACHE/kernel/$kver/boot/vmlinuz-$kver" ]; then
        # a kernel cached before the vmlinux was made gets it once (under the lock)
        if [ "$DEBARCH" = amd64 ] && [ ! -f "$CACHE/kernel/$kver/boot/vmlinux-$kver" ] \
            && [ ! -f "$CACHE/kernel/$kver/boot/.no-vmlinux" ]; then
            exec 9>"$CACHE/.lock"
            timeout 1800 flock 9 || die "timed out waiting for the lock $CACHE/.lock"
            make_vmlinux "$CACHE/kernel/$kver" "$kver"
            exec 9>&-
        fi
        print_result "$kver"
        exit 0
    fi
fi

# Serialize the slow path between concurrent runs.
exec 9>"$CACHE/.lock"
timeout 1800 flock 9 || die "timed out waiting for the lock $CACHE/.lock"

# Resolve the spec to a real kernel package: linux-image-ARCH -> the linux-image-<kver> it
# depends on; MAJOR.MINOR -> the newest linux-image-MAJOR.MINOR.*-ARCH-unsigned apt knows
# (by version order of the names); a package name -> itself, once apt knows it.  ARCH is
# $DEBARCH (arm64's packages need dpkg --add-architecture arm64).
resolve_pkg() {
    case $KSPEC in
        default)
            apt-cache show --no-all-versions "linux-image-$DEBARCH:$DEBARCH" 2>/dev/null \
                | sed -n 's/^Depends: *//p' | tr ',' '\n' | sed 's/^ *//; s/ .*//' \
                | grep -m1 '^linux-image-[0-9]' || true ;;
        linux-image-*)
            if apt-cache show --no-all-versions "$KSPEC:$DEBARCH" >/dev/null 2>&1; then echo "$KSPEC"; fi ;;
        *)
            apt-cache search --names-only "^linux-image-${KSPEC//./\\.}\\.[0-9]+[^-]*-$DEBARCH-unsigned\$" 2>/dev/null \
                | cut -d' ' -f1 | sort -V | tail -n1 ;;
    esac
}
pkg=$(resolve_pkg)
if [ -z "$pkg" ]; then
    apt_update_once
    pkg=$(resolve_pkg)
fi
case $KSPEC in
    default) [ -n "$pkg" ] || die "cannot resolve the kernel package linux-image-$DEBARCH depends on (apt-cache show linux-image-$DEBARCH:$DEBARCH; arm64 needs dpkg --add-architecture arm64)" ;;
    *) [ -n "$pkg" ] || die "apt knows no $DEBARCH package for kernel '$KSPEC' (for 6.12 on Debian 12: bookworm-security or bookworm-backports; tools/install-deps.sh vm adds backports)" ;;
esac
# linux-image-6.12.107+deb12-amd64-unsigned ships boot/vmlinuz-6.12.107+deb12-amd64
kver=${pkg#linux-image-}
kver=${kver%-unsigned}
kdir="$CACHE/kernel/$kver"
log "kernel package: $pkg (kernel $kver)"

if [ ! -f "$kdir/.complete" ]; then
    debdir="$CACHE/debs"
    deb=$(ls "$debdir/${pkg}_"*.deb 2>/dev/null | head -n1 || true)
    if [ -z "$deb" ]; then
        log "downloading $pkg into $debdir"
        # a scratch dir apt's sandbox user can write to, then move the .deb in
        dl=$(mktemp -d "$debdir/dl.XXXXXX")
        chmod 755 "$dl"
        if id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi
        if ! (cd "$dl" && timeout 900 apt-get download -q "$pkg:$DEBARCH" >&2); then
            apt_update_once
            (cd "$dl" && timeout 900 apt-get download -q "$pkg:$DEBARCH" >&2) \
                || { rm -rf "$dl"; die "apt-get download $pkg failed (into $dl)"; }
        fi
        mv "$dl"/*.deb "$debdir/" 2>/dev/null || true
        rm -rf "$dl"
        deb=$(ls "$debdir/${pkg}_"*.deb 2>/dev/null | head -n1 || true)
        [ -n "$deb" ] || die "apt-get download $pkg produced no .deb in $debdir"
    fi
    log "extracting $deb into $kdir"
    rm -rf "$kdir.tmp"
    mkdir -p "$kdir.tmp"
    timeout 600 dpkg-deb -x "$deb" "$kdir.tmp" || die "dpkg-deb -x $deb failed"
    [ -f "$kdir.tmp/boot/vmlinuz-$kver" ] || die "no boot/vmlinuz-$kver in $deb"
    [ -d "$kdir.tmp/lib/modules/$kver" ] || die "no lib/modules/$kver in $deb"
    # The .deb ships no modules.dep (its postinst makes it): generate it.
    command -v depmod >/dev/null 2>&1 || PATH=$PATH:/sbin:/usr/sbin
    command -v depmod >/dev/null 2>&1 || die "depmod not found (package kmod)"
    timeout 300 depmod -b "$kdir.tmp" "$kver" || die "depmod -b $kdir.tmp $kver failed"
    make_vmlinux "$kdir.tmp" "$kver"
    touch "$kdir.tmp/.complete"
    rm -rf "$kdir"
    mv "$kdir.tmp" "$kdir"
fi
if [ "$KSPEC" = default ]; then
    ln -sfn "$kver" "$LINK"
else
    mkdir -p "$CACHE/kernel/by-spec"
    ln -sfn "../$kver" "$LINK"
fi
print_result "$kver"
