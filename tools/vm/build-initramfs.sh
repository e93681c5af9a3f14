#!/usr/bin/env bash
# build-initramfs.sh - build a busybox-static initramfs for the evictd VM tests.
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)

usage() {
    cat <<EOF
Usage: $PROG OUT.cpio[.gz] --init SCRIPT [--add HOST_PATH:GUEST_PATH]... [--modules mod1,mod2]
       $PROG OUT.cpio[.gz] --bare [--usrmerge] [--lib-skip-list FILE] [--add ...] [--modules ...]

Build a newc cpio initramfs, gzip'd when OUT ends in .gz (an uncompressed one, OUT.cpio,
boots faster under TCG: the guest kernel has nothing to inflate), containing:
  - /bin/busybox (busybox-static) and a symlink for every applet;
  - /proc /sys /dev /tmp /run ... mount points, /dev/console and /dev/null;
  - every --add HOST_PATH:GUEST_PATH (a file or a whole directory; GUEST_PATH
    ending in / means "into that directory").  For dynamically linked ELF
    files the shared libraries and the loader (found with ldd) are copied
    too, at the paths ldd reports;
  - the kernel modules named by --modules and everything they need (hard
    dependencies from modules.dep and softdeps, resolved with the host's
    'modprobe --show-depends' against the cached Debian kernel), plus a
    depmod'ed modules tree so 'modprobe' works in the guest;
  - /usr/lib/evictd-vm/vm-lib.sh, shell helpers for scenarios (vm_pass,
    vm_fail, vm_check, vm_wait_for, ...);
  - /init (generated): mounts proc, sysfs, devtmpfs, devpts, tmpfs on /tmp and
    /run, cgroup2 on /sys/fs/cgroup, bpffs on /sys/fs/bpf, tracefs on
    /sys/kernel/tracing, debugfs on /sys/kernel/debug; insmods the --modules
    in dependency order; enables every available controller (at least memory
    and pids, plus cpu, io, cpuset, ... when present) in the root
    cgroup.subtree_control; runs SCRIPT (as /scenario.sh, with /bin/sh);
    prints 'EVICTD-VM: scenario exit=<code>' and powers off (poweroff -f).

Options:
  --init SCRIPT         the scenario script (required unless --bare)
  --add HOST:GUEST      add a file or directory (repeatable)
  --modules LIST        comma-separated kernel modules to include and load at boot
  --kdir DIR            extracted kernel root (default: from fetch-kernel.sh --print kdir)
  --bare                no busybox, no /init, no mount points: only the --add files,
                        their libraries, the modules and vm-lib.sh (an overlay to append
                        to another initramfs, see build-systemd-root.sh)
  --usrmerge            put /bin /sbin /lib /lib64 paths under /usr (for overlays on a
                        merged-/usr root, which must not get a real /lib directory)
  --lib-skip-list FILE  guest paths (one a line) that already exist in the base image:
                        libraries listed there are not copied
  -h, --help            this help

The kernel cmdline of the guest must contain cgroup_no_v1=all (run-guest.sh
passes it).  Requires root (mknod for /dev/console).

EVICTD_VM_ARCH=arm64 builds an aarch64 guest's initramfs on an x86 host: the
busybox is busybox-static:arm64 (tools/vm/fetch-arm64-userland.sh), the
modules come from the arm64 kernel (fetch-kernel.sh --arch arm64) and the
libraries of arm64 ELF files are resolved by tools/cross-ldd.sh.
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }
# ldd that also reads a foreign (arm64) ELF's closure; a native one goes to ldd itself.
ldd() { "$HERE/../cross-ldd.sh" "$@"; }
VM_ARCH=${EVICTD_VM_ARCH:-amd64}

OUT=""
INIT=""
ADDS=()
MODULES=""
KDIR=""
BARE=0
USRMERGE=0
SKIPLIST=""

while [ $# -gt 0 ]; do
    case $1 in
        --init) [ $# -ge 2 ] || die "--init needs a script"; INIT=$2; shift 2 ;;
        --add) [ $# -ge 2 ] || die "--add needs HOST_PATH:GUEST_PATH"; ADDS+=("$2"); shift 2 ;;
        --modules) [ $# -ge 2 ] || die "--modules needs a list"; MODULES=${MODULES:+$MODULES,}$2; shift 2 ;;
        --kdir) [ $# -ge 2 ] || die "--kdir needs a directory"; KDIR=$2; shift 2 ;;
        --bare) BARE=1; shift ;;
        --usrmerge) USRMERGE=1; shift ;;
        --lib-skip-list) [ $# -ge 2 ] || die "--lib-skip-list needs a file"; SKIPLIST=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) [ -z "$OUT" ] || die "more than one output given ('$OUT' and '$1')"; OUT=$1; shift ;;
    esac
done
[ -n "$OUT" ] || die "no output file given (see --help)"
if [ "$BARE" = 0 ]; then
    [ -n "$INIT" ] || die "--init SCRIPT is required (see --help)"
    [ -f "$INIT" ] || die "scenario script not found: $INIT"
fi
[ -z "$SKIPLIST" ] || [ -f "$SKIPLIST" ] || die "lib skip list not found: $SKIPLIST"

# Host tools (installs qemu/busybox-static/kmod/cpio if missing) and the kernel.
if [ -n "$MODULES" ] && [ -z "$KDIR" ]; then
    KDIR=$("$HERE/fetch-kernel.sh" --print kdir) || die "fetch-kernel.sh failed"
elif [ "$BARE" = 0 ]; then
    "$HERE/fetch-kernel.sh" >/dev/null || die "fetch-kernel.sh failed"
fi
for t in cpio gzip ldd; do
    command -v "$t" >/dev/null 2>&1 || die "'$t' not found on the host"
done

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/evictd-initramfs.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT

# guest_path PATH: canonical guest path (with --usrmerge, /bin etc. go under /usr).
guest_path() {
    local p=$1
    if [ "$USRMERGE" = 1 ]; then
        case $p in
            /bin/*|/sbin/*|/lib/*|/lib64/*) p=/usr$p ;;
            /bin|/sbin|/lib|/lib64) p=/usr$p ;;
        esac
    fi
    printf '%s\n' "$p"
}

# skipped_lib GUESTPATH: true if the base image already has it.
skipped_lib() {
    [ -n "$SKIPLIST" ] && grep -qxF "$1" "$SKIPLIST"
}

# copy_libs FILE: copy the loader and shared libraries a dynamic ELF needs.
copy_libs() {
    local f=$1 out line lib g
    # ldd fails (exit 1, "not a dynamic executable") for static binaries and scripts.
    out=$(ldd "$f" 2>&1) || return 0
    case $out in *"not a dynamic executable"*|*"statically linked"*) return 0 ;; esac
    while IFS= read -r line; do
        lib=""
        case $line in
            *"=> not found"*) die "$f needs ${line%% =>*} but ldd cannot find it on the host" ;;
            *"=> "/*) lib=${line#*=> }; lib=${lib%% (*} ;;
            *linux-vdso*|*linux-gate*) ;;
            [[:space:]]/*) lib=${line#"${line%%[![:space:]]*}"}; lib=${lib%% (*} ;;
        esac
        [ -n "$lib" ] || continue
        [ -e "$lib" ] || die "$f: library $lib reported by ldd does not exist"
        g=$(guest_path "$lib")
        skipped_lib "$g" && continue
        [ -e "$STAGE$g" ] && continue
        mkdir -p "$STAGE$(dirname "$g")"
        cp -L "$lib" "$STAGE$g"
    done <<<"$out"
}

is_elf() {
    [ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]
}

add_file() {
    local host=$1 guest=$2
    mkdir -p "$STAGE$(dirname "$guest")"
    cp -L --preserve=mode "$host" "$STAGE$guest" || die "cannot copy $host to $guest"
    if is_elf "$host"; then copy_libs "$host"; fi
}

add_one() {
    local spec=$1 host guest
    case $spec in
        *:*) host=${spec%%:*}; guest=${spec#*:} ;;
        *) host=$spec; guest=$spec ;;
    esac
    [ -e "$host" ] || die "--add: host path not found: $host"
    case $guest in /*) ;; *) die "--add: guest path must be absolute: '$guest' (in '$spec')" ;; esac
    case $guest in */) guest=$guest$(basename "$host") ;; esac
    guest=$(guest_path "$guest")
    if [ -d "$host" ]; then
        local f rel
        while IFS= read -r -d '' f; do
            rel=${f#"$host"}
            if [ -d "$f" ]; then mkdir -p "$STAGE$guest$rel"; else add_file "$f" "$guest$rel"; fi
        done < <(find "$host" -mindepth 0 \( -type f -o -type d -o -type l \) -print0)
    else
        add_file "$host" "$guest"
    fi
}

# ---- base layout -----------------------------------------------------------
if [ "$BARE" = 0 ]; then
    BB=""
    BB_CANDIDATES=(/bin/busybox /usr/bin/busybox)
    if [ "$VM_ARCH" = arm64 ]; then
        BB_CANDIDATES=("$("$HERE/fetch-arm64-userland.sh")/bin/busybox") || die "fetch-arm64-userland.sh failed"
    fi
    for c in "${BB_CANDIDATES[@]}"; do
        if [ -x "$c" ] && ! ldd "$c" >/dev/null 2>&1; then BB=$c; break; fi
    done
    [ -n "$BB" ] || die "no statically linked busybox at ${BB_CANDIDATES[*]} (package busybox-static)"
    # The applet list: the host's busybox-static is the same Debian version, and an arm64
    # busybox cannot run here.
    BB_LIST=$BB
    [ "$VM_ARCH" = arm64 ] && BB_LIST=/bin/busybox
    mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root,mnt,var/tmp,var/log}
    chmod 1777 "$STAGE/tmp" "$STAGE/var/tmp"
    cp "$BB" "$STAGE/bin/busybox"
    while IFS= read -r applet; do
        [ "$applet" = bin/busybox ] && continue
        [ -e "$STAGE/$applet" ] && continue
        mkdir -p "$STAGE/$(dirname "$applet")"
        ln -s /bin/busybox "$STAGE/$applet"
    done < <("$BB_LIST" --list-full)
    mknod -m 600 "$STAGE/dev/console" c 5 1 || die "mknod $STAGE/dev/console failed (run as root)"
    mknod -m 666 "$STAGE/dev/null" c 1 3 || die "mknod $STAGE/dev/null failed (run as root)"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$STAGE/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$STAGE/etc/group"
    echo evictd-vm >"$STAGE/etc/hostname"
    ln -s /proc/mounts "$STAGE/etc/mtab"
fi

for spec in ${ADDS[@]+"${ADDS[@]}"}; do add_one "$spec"; done

# ---- kernel modules --------------------------------------------------------
if [ -n "$MODULES" ]; then
    KVER=$(basename "$(ls -d "$KDIR"/lib/modules/*/ | head -n1)")
    [ -n "$KVER" ] && [ -f "$KDIR/lib/modules/$KVER/modules.dep" ] \
        || die "no depmod'ed modules tree under $KDIR/lib/modules (run fetch-kernel.sh)"
    command -v modprobe >/dev/null 2>&1 || PATH=$PATH:/sbin:/usr/sbin
    mdir=$(guest_path "/lib/modules/$KVER")
    mkdir -p "$STAGE$mdir" "$STAGE/etc/evictd-vm" "$STAGE/etc/modules-load.d"
    : >"$STAGE/etc/evictd-vm/modules.load"
    # for systemd roots: systemd-modules-load.service loads these by name
    tr ',' '\n' <<<"$MODULES" | grep -v '^$' >"$STAGE/etc/modules-load.d/evictd-vm.conf" || true
    IFS=, read -r -a mods <<<"$MODULES"
    for m in "${mods[@]}"; do
        [ -n "$m" ] || continue
        deps=$(modprobe -d "$KDIR" -S "$KVER" --show-depends "$m" 2>&1) \
            || die "kernel $KVER has no module '$m' (modprobe --show-depends: $deps)"
        while IFS= read -r line; do
            case $line in
                builtin\ *) echo "$PROG: note: ${line#builtin } is built into $KVER" >&2 ;;
                insmod\ *)
                    p=${line#insmod }; p=${p%% *}
                    rel=${p#"$KDIR/lib/modules/$KVER/"}
                    if [ ! -e "$STAGE$mdir/$rel" ]; then
                        mkdir -p "$STAGE$mdir/$(dirname "$rel")"
                        cp "$p" "$STAGE$mdir/$rel"
                        echo "$mdir/$rel" >>"$STAGE/etc/evictd-vm/modules.load"
                    fi ;;
            esac
        done <<<"$deps"
    done
    for f in modules.order modules.builtin modules.builtin.modinfo; do
        [ -f "$KDIR/lib/modules/$KVER/$f" ] && cp "$KDIR/lib/modules/$KVER/$f" "$STAGE$mdir/"
    done
    # depmod -b wants BASE/lib/modules/KVER
    if [ "$USRMERGE" = 1 ]; then
        depmod -b "$STAGE/usr" "$KVER" || die "depmod for the guest modules failed"
    else
        depmod -b "$STAGE" "$KVER" || die "depmod for the guest modules failed"
    fi
fi

# ---- scenario helpers ------------------------------------------------------
mkdir -p "$STAGE/usr/lib/evictd-vm"
cat >"$STAGE/usr/lib/evictd-vm/vm-lib.sh" <<'EOF'
# vm-lib.sh - helpers for evictd VM scenarios:  . /usr/lib/evictd-vm/vm-lib.sh
# Markers go to stdout, which is the serial console (ttyS0) in the guest.
VM_FAILS=0
vm_pass() { echo "EVICTD-VM: PASS $1"; }
# vm_fail NAME DETAILS...
vm_fail() { _n=$1; shift; echo "EVICTD-VM: FAIL $_n: $*"; VM_FAILS=$((VM_FAILS + 1)); }
vm_info() { echo "EVICTD-VM: INFO $*"; }
# vm_check NAME CMD...: PASS if CMD succeeds, FAIL with its output otherwise.
vm_check() {
    _n=$1; shift
    if _o=$("$@" 2>&1); then vm_pass "$_n"; else vm_fail "$_n" "'$*' failed: $(echo "$_o" | tail -n 3 | tr '\n' ' ')"; fi
}
# vm_wait_for TIMEOUT_SECS CMD...: poll CMD every 0.05 s until it succeeds.
vm_wait_for() {
    _t=$1; shift
    _end=$(( $(date +%s) + ${_t%.*} + 1 ))
    while :; do
        "$@" >/dev/null 2>&1 && return 0
        [ "$(date +%s)" -ge "$_end" ] && return 1
        sleep 0.05
    done
}
# vm_uptime: seconds since boot (from /proc/uptime)
vm_uptime() { cut -d' ' -f1 /proc/uptime; }
# vm_kv FILE KEY: value of "KEY value" in a flat-keyed cgroup file
vm_kv() { awk -v k="$2" '$1 == k { print $2; f = 1 } END { exit !f }' "$1"; }
# vm_done: exit with the number of failures (0 when everything passed)
vm_done() { exit "$VM_FAILS"; }
EOF

# ---- /init -----------------------------------------------------------------
if [ "$BARE" = 0 ]; then
    cp "$INIT" "$STAGE/scenario.sh"
    chmod 755 "$STAGE/scenario.sh"
    cat >"$STAGE/init" <<'EOF'
#!/bin/sh
# generated by tools/vm/build-initramfs.sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb
m() { # m TYPE DIR [OPTS]
    mkdir -p "$2"
    mount -t "$1" ${3:+-o "$3"} "$1" "$2" || echo "EVICTD-VM: INFO init: mount -t $1 $2 failed"
}
mount -t proc proc /proc
echo "EVICTD-VM: init start uptime=$(cut -d' ' -f1 /proc/uptime)"
m sysfs /sys
m devtmpfs /dev
m devpts /dev/pts
m tmpfs /dev/shm mode=1777
m tmpfs /tmp mode=1777
m tmpfs /run mode=755
m cgroup2 /sys/fs/cgroup nsdelegate,memory_recursiveprot
m bpf /sys/fs/bpf mode=700
m tracefs /sys/kernel/tracing
m debugfs /sys/kernel/debug
hostname -F /etc/hostname 2>/dev/null || true
ip link set lo up 2>/dev/null || true
if [ -f /etc/evictd-vm/modules.load ]; then
    while read -r mod; do
        [ -n "$mod" ] || continue
        insmod "$mod" 2>/tmp/insmod.err || grep -q 'File exists' /tmp/insmod.err \
            || echo "EVICTD-VM: INFO init: insmod $mod failed: $(cat /tmp/insmod.err)"
    done </etc/evictd-vm/modules.load
fi
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null \
        || echo "EVICTD-VM: INFO init: cannot enable cgroup controller $c"
done
echo "EVICTD-VM: init ready uptime=$(cut -d' ' -f1 /proc/uptime) controllers=$(cat /sys/fs/cgroup/cgroup.subtree_control | tr ' ' ,)"
cd /
/bin/sh /scenario.sh </dev/null
rc=$?
echo "EVICTD-VM: scenario exit=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f
sleep 5
echo o >/proc/sysrq-trigger
EOF
    chmod 755 "$STAGE/init"
fi

# ---- pack ------------------------------------------------------------------
mkdir -p "$(dirname "$OUT")" || die "cannot create the directory of $OUT"
tmpout="$OUT.tmp.$$"
pack=(gzip -1)
case $OUT in *.gz) ;; *) pack=(cat) ;; esac
(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) \
    | "${pack[@]}" >"$tmpout" || { rm -f "$tmpout"; die "packing $OUT failed"; }
mv "$tmpout" "$OUT"
echo "$OUT"
