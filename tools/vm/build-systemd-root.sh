#!/usr/bin/env bash
# build-systemd-root.sh - a minimal Debian root with systemd + logind as an initramfs.
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${EVICTD_VM_CACHE:-/var/cache/evictd-vm}
SUITE=bookworm
# The base package set; the cache key is a hash of this list (plus --packages and
# the customization below), so editing it rebuilds the root.
BASE_PACKAGES=(systemd systemd-sysv dbus libpam-systemd busybox)
# mmdebstrap options, also part of the cache key.  The merged-usr hook makes the
# /usr symlinks itself, so apt need not install usrmerge (which pulls in perl).
MM_OPTS=(
    --variant=essential
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --aptopt='APT::Install-Recommends "false"'
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*'
)

usage() {
    cat <<EOF
Usage: $PROG OUT.cpio[.gz] [--add HOST_PATH:GUEST_PATH]... [--unit UNIT_FILE]...
                         [--packages p1,p2] [--modules m1,m2] [--rebuild]
       $PROG --base-only [--packages p1,p2] [--rebuild]

Build (once, with mmdebstrap from the Debian mirror apt is configured with) a
minimal $SUITE root containing: ${BASE_PACKAGES[*]} (plus --packages), with
/init -> /lib/systemd/systemd, gettys and timers masked, busybox applet
symlinks for commands the root lacks, and /usr/lib/evictd-vm/vm-lib.sh.
It is cached as a gzip'd cpio under \$EVICTD_VM_CACHE/systemd-root/ (now:
$CACHE/systemd-root/), keyed by a hash of the package list and the recipe.

OUT is that cached base followed by a second, small cpio archive (the kernel
unpacks concatenated archives in order), both gzip'd when OUT ends in .gz, else
not (the uncompressed base is cached too: the guest boots seconds faster under
TCG when its kernel has nothing to inflate), holding:
  --add HOST:GUEST  a host file or directory (dynamic ELF files bring the
                    libraries the base root does not have, found with ldd)
  --unit FILE       a systemd unit, installed as /etc/systemd/system/NAME and
                    enabled for the targets in its [Install] WantedBy=/RequiredBy=
                    (through a drop-in on the target)
  --modules LIST    kernel modules (with dependencies) from fetch-kernel.sh's kernel,
                    loaded at boot by systemd-modules-load
Other options:
  --packages LIST   extra Debian packages for the base root (part of the cache key:
                    a root of its own; tools/bench/memory-race.sh's systemd guest adds
                    the peers this way: systemd-oomd,nohang,earlyoom)
  --base-only       only build/refresh the cached base and print its path
  --rebuild         rebuild the base even if it is cached
  -h, --help        this help

Boot OUT with tools/vm/run-guest.sh (1024M is plenty).  The root has no
/etc/initrd-release, so systemd runs it as the real root file system.  Needs
root; installs mmdebstrap with apt-get if it is missing.
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }
log() { echo "$PROG: $*" >&2; }

OUT=""
ADDS=()
UNITS=()
EXTRA_PKGS=""
MODULES=""
BASE_ONLY=0
REBUILD=0
while [ $# -gt 0 ]; do
    case $1 in
        --add) [ $# -ge 2 ] || die "--add needs HOST_PATH:GUEST_PATH"; ADDS+=("$2"); shift 2 ;;
        --unit) [ $# -ge 2 ] || die "--unit needs a unit file"; UNITS+=("$2"); shift 2 ;;
        --packages) [ $# -ge 2 ] || die "--packages needs a list"; EXTRA_PKGS=${EXTRA_PKGS:+$EXTRA_PKGS,}$2; shift 2 ;;
        --modules) [ $# -ge 2 ] || die "--modules needs a list"; MODULES=${MODULES:+$MODULES,}$2; shift 2 ;;
        --base-only) BASE_ONLY=1; shift ;;
        --rebuild) REBUILD=1; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) [ -z "$OUT" ] || die "more than one output given ('$OUT' and '$1')"; OUT=$1; shift ;;
    esac
done
[ "$BASE_ONLY" = 1 ] || [ -n "$OUT" ] || die "no output file given (see --help)"
[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap root mode, device nodes)"
for u in ${UNITS[@]+"${UNITS[@]}"}; do
    [ -f "$u" ] || die "unit file not found: $u"
    case ${u##*/} in
        *.service|*.target|*.socket|*.timer|*.path|*.mount|*.slice|*.scope) ;;
        *) die "not a systemd unit file name: $u" ;;
    esac
done

# Host tools: qemu, busybox-static, kmod, cpio (via fetch-kernel.sh) and mmdebstrap.
"$HERE/fetch-kernel.sh" >/dev/null || die "fetch-kernel.sh failed"
if ! dpkg -s mmdebstrap 2>/dev/null | grep -q '^Status: install ok installed'; then
    log "installing mmdebstrap"
    timeout 600 apt-get update -q >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 mmdebstrap >&2 \
        || die "apt-get install mmdebstrap failed"
fi

# The customization run inside the new root (by mmdebstrap's --customize-hook, with
# the root directory as $1).  Part of the cache key.
read -r -d '' CUSTOMIZE <<'HOOK' || true
set -eu
r=$1
ln -sfn /lib/systemd/systemd "$r/init"
rm -f "$r/etc/initrd-release"
echo evictd-vm >"$r/etc/hostname"
od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$r/etc/machine-id"; echo >>"$r/etc/machine-id"
sed -i 's/^root:[^:]*:/root::/' "$r/etc/shadow"
mkdir -p "$r/etc/systemd/system" "$r/etc/systemd/system.conf.d" "$r/etc/systemd/journald.conf.d"
for u in getty@.service serial-getty@.service console-getty.service getty.target \
         systemd-firstboot.service systemd-timesyncd.service systemd-networkd.service \
         systemd-resolved.service systemd-networkd-wait-online.service \
         apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
         fstrim.timer man-db.timer logrotate.timer systemd-tmpfiles-clean.timer \
         systemd-remount-fs.service systemd-udev-trigger.service systemd-udevd.service \
         systemd-hwdb-update.service systemd-journal-catalog-update.service \
         systemd-update-utmp.service systemd-update-utmp-runlevel.service \
         ldconfig.service systemd-pstore.service; do
    ln -sfn /dev/null "$r/etc/systemd/system/$u"
done
ln -sfn /lib/systemd/system/multi-user.target "$r/etc/systemd/system/default.target"
printf '[Manager]\nDefaultTimeoutStopSec=20s\nShowStatus=no\n' >"$r/etc/systemd/system.conf.d/evictd-vm.conf"
printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=16M\n' >"$r/etc/systemd/journald.conf.d/evictd-vm.conf"
# busybox applets for commands the root does not have (never init/poweroff & co.)
for a in $(chroot "$r" /bin/busybox --list-full); do
    case ${a##*/} in init|linuxrc|halt|poweroff|reboot|shutdown|busybox) continue ;; esac
    b=${a##*/}
    [ -e "$r/usr/bin/$b" ] || [ -e "$r/usr/sbin/$b" ] || [ -e "$r/bin/$b" ] || [ -e "$r/sbin/$b" ] \
        || ln -s /bin/busybox "$r/usr/bin/$b"
done
rm -rf "$r"/var/cache/apt/* "$r"/var/lib/apt/lists/* "$r"/usr/share/doc/* "$r"/usr/share/man/* \
       "$r"/usr/share/locale/* "$r"/usr/share/info/*
HOOK

pkgs=$({ printf '%s\n' "${BASE_PACKAGES[@]}"; tr ',' '\n' <<<"$EXTRA_PKGS"; } | grep -v '^$' | LC_ALL=C sort -u | paste -sd, -)
key=$(printf 'suite=%s\npackages=%s\n%s\n%s\n' "$SUITE" "$pkgs" "${MM_OPTS[*]}" "$CUSTOMIZE" | sha256sum | cut -c1-16)
RDIR="$CACHE/systemd-root"
BASE="$RDIR/$key.cpio.gz"
mkdir -p "$RDIR" || die "cannot create $RDIR"

# mirror lines from apt's own configuration (whatever mirror this host's apt uses)
mirror_lines() {
    apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' 2>/dev/null \
        | awk -v s="$SUITE" '$2 == s || index($2, s "-") == 1 || index($2, s "/") == 1 { c[$1 " " $2] = c[$1 " " $2] " " $3 }
                            END { for (k in c) print "deb " k c[k] }' | LC_ALL=C sort
}

build_base() {
    local lines tmp t0
    lines=$(mirror_lines)
    if [ -z "$lines" ]; then
        timeout 600 apt-get update -q >&2 || die "apt-get update failed"
        lines=$(mirror_lines)
    fi
    [ -n "$lines" ] || die "apt has no source for suite $SUITE (apt-get indextargets): cannot pick a mirror"
    local mirrors=()
    while IFS= read -r l; do mirrors+=("$l"); done <<<"$lines"
    log "building the $SUITE systemd root (key $key): packages $pkgs"
    log "mirrors: $(tr '\n' ';' <<<"$lines")"
    tmp="$RDIR/$key.tmp"
    rm -rf "$tmp"
    t0=$(date +%s)
    timeout 1800 mmdebstrap --quiet --mode=root --format=directory "${MM_OPTS[@]}" \
        --include="$pkgs" --customize-hook="$CUSTOMIZE" \
        "$SUITE" "$tmp" "${mirrors[@]}" >&2 \
        || { rm -rf "$tmp"; die "mmdebstrap failed (target $tmp)"; }
    # guest file list, so overlays do not copy libraries the root already has
    (cd "$tmp" && find . -mindepth 1 ! -type d | sed 's/^\.//' | LC_ALL=C sort) >"$RDIR/$key.files.tmp"
    chroot "$tmp" dpkg-query -W -f '${Package} ${Version}\n' >"$RDIR/$key.packages" 2>/dev/null || true
    (cd "$tmp" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -6 >"$BASE.tmp" \
        || { rm -rf "$tmp"; die "packing $BASE failed"; }
    rm -rf "$tmp"
    mv "$RDIR/$key.files.tmp" "$RDIR/$key.files"
    mv "$BASE.tmp" "$BASE"
    log "built $BASE ($(du -h "$BASE" | cut -f1)) in $(( $(date +%s) - t0 )) s"
}

exec 9>"$RDIR/.lock"
timeout 1800 flock 9 || die "timed out waiting for the lock $RDIR/.lock"
if [ "$REBUILD" = 1 ] || [ ! -f "$BASE" ] || [ ! -f "$RDIR/$key.files" ]; then
    build_base
    rm -f "$RDIR/$key.cpio"
fi
# an uncompressed OUT starts with the uncompressed base, made once from the cached one
ZIP=1
case $OUT in ""|*.gz) ;; *) ZIP=0 ;; esac
if [ "$ZIP" = 0 ] && [ ! -f "$RDIR/$key.cpio" ]; then
    gzip -dc "$BASE" >"$RDIR/$key.cpio.tmp" || { rm -f "$RDIR/$key.cpio.tmp"; die "cannot unpack $BASE"; }
    mv "$RDIR/$key.cpio.tmp" "$RDIR/$key.cpio"
fi
exec 9>&-

if [ "$BASE_ONLY" = 1 ]; then
    echo "$BASE"
    exit 0
fi

# ---- overlay ---------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/evictd-sdroot.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/units"
ov_args=(--bare --usrmerge --lib-skip-list "$RDIR/$key.files")
for a in ${ADDS[@]+"${ADDS[@]}"}; do ov_args+=(--add "$a"); done
[ -z "$MODULES" ] || ov_args+=(--modules "$MODULES")
for u in ${UNITS[@]+"${UNITS[@]}"}; do
    name=${u##*/}
    cp "$u" "$WORK/units/$name"
    ov_args+=(--add "$WORK/units/$name:/etc/systemd/system/$name")
    # enable: [Install] WantedBy=/RequiredBy= become a drop-in on each target
    for kind in WantedBy RequiredBy; do
        dep=Wants; [ "$kind" = RequiredBy ] && dep=Requires
        for tgt in $(awk -v k="$kind" '/^\[/ { s = $0 } s == "[Install]" && index($0, k "=") == 1 { sub(/^[^=]*=/, ""); print }' "$u"); do
            d="$WORK/dropins/$tgt.d"
            mkdir -p "$d"
            printf '[Unit]\n%s=%s\n' "$dep" "$name" >>"$d/evictd-vm-$name.conf"
        done
    done
done
if [ -d "$WORK/dropins" ]; then
    ov_args+=(--add "$WORK/dropins:/etc/systemd/system")
fi
overlay=$WORK/overlay.cpio.gz base=$BASE
[ "$ZIP" = 1 ] || { overlay=$WORK/overlay.cpio; base=$RDIR/$key.cpio; }
"$HERE/build-initramfs.sh" "$overlay" "${ov_args[@]}" >/dev/null \
    || die "building the overlay for $OUT failed"
mkdir -p "$(dirname "$OUT")" || die "cannot create the directory of $OUT"
cat "$base" "$overlay" >"$OUT.tmp.$$" || die "cannot write $OUT"
mv "$OUT.tmp.$$" "$OUT"
echo "$OUT"
