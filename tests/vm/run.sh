#!/usr/bin/env bash
# tests/vm/run.sh - real-kernel tests for evictd: boot Debian's kernel under QEMU
# TCG once per scenario and check the markers the scenario prints on ttyS0.
set -euo pipefail

PROG=tests/vm/run.sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=$ROOT/tools/vm

usage() {
    cat <<EOF
Usage: $PROG [--list] [--kind busybox|systemd] [--kernel SPEC] [FILTER...]

Runs every tests/vm/scenarios/*.sh (busybox guests) and every
tests/vm/systemd-scenarios/*.sh (systemd guests, named systemd/NAME), or only
those whose name contains one of the FILTERs.  For each scenario it builds an
initramfs, boots it with tools/vm/run-guest.sh and checks the serial log.

A scenario PASSes only when the guest powered off before the timeout, every
'# vm-expect:' marker appears as an 'EVICTD-VM: PASS <marker>' line, no
'EVICTD-VM: FAIL' line appears, and it printed 'EVICTD-VM: scenario exit=0'.
Output: 'PASS name (secs)' or 'FAIL name: reason' per scenario (with the last
60 lines of the serial log on failure), then 'N passed, N failed'; the exit
status is non-zero when anything failed.

--kernel SPEC boots another kernel than Debian's default (6.1): a version line
(6.12: the newest linux-image-6.12*-amd64-unsigned apt knows, -arm64- under
ARCH=arm64) or a linux-image-*
package name (tools/vm/fetch-kernel.sh --help); default: \$EVICTD_VM_KERNEL, else
the default kernel.  Every tool of the run (initramfs modules, systemd overlay,
qemu) uses that kernel; names are reported as NAME@SPEC and the logs go to
\$EVICTD_VM_OUT/SPEC/.

Scenario header (comment lines at the top of the script, before any other line):
  # vm-expect: M1 M2 ...     markers that must be PASSed (repeatable; required)
  # vm-mem: 1024M            guest memory (default 1024M)
  # vm-smp: 2                guest CPUs (default 2)
  # vm-timeout: 300          qemu wall-clock limit in seconds (default 300)
  # vm-bins: evictd ...      binaries from \$EVICTD_BIN_DIR put in as /usr/bin/NAME;
                             a missing one FAILs the scenario
  # vm-add: HOST:GUEST ...   extra files/dirs (HOST relative to the repo root)
  # vm-modules: m1,m2        kernel modules to load at boot (with dependencies)
  # vm-disk: SIZE ext4|raw [mkfs.ext4 options]
                             one line per virtio disk (/dev/vda, /dev/vdb, ...),
                             made on the host; adds virtio_pci,virtio_blk(,ext4)
  # vm-append: ARGS          extra kernel command line
  # vm-units: UNIT_FILE ...  (systemd scenarios) extra units (relative to the repo root)
  # vm-packages: p1,p2       (systemd scenarios) extra Debian packages in the root
Every guest gets build/vm-progs/* (memhog, forkbomb, mkfiles) in /usr/bin and
/usr/lib/evictd-vm/vm-lib.sh (vm_pass, vm_fail, vm_check, vm_wait_for, ...).

Environment:
  EVICTD_BIN_DIR   where the host-built binaries are (default: build/, relative
                   paths are relative to the repo root)
  EVICTD_VM_OUT    where images and serial logs go (default: build/vm/)
  EVICTD_VM_CACHE  kernel / systemd root cache (default: /var/cache/evictd-vm)
  EVICTD_VM_KEEP   1 = keep the initramfs of passing scenarios too
  EVICTD_VM_KERNEL the kernel SPEC when --kernel is not given (make vmtest KERNEL=6.12)
  ARCH             x86 (default) or arm64: Debian's arm64 kernel in an aarch64
                   TCG guest (qemu-system-aarch64 -M virt), the binaries from
                   build-arm64/ (make ARCH=arm64), busybox scenarios only (the
                   systemd root is amd64), three times each '# vm-timeout:';
                   names are reported as NAME@arm64 (NAME@SPEC@arm64 with
                   --kernel), the logs go to \$EVICTD_VM_OUT[/SPEC]/arm64/
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 2; }

LIST=0
KIND=""
KSPEC=${EVICTD_VM_KERNEL:-}
FILTERS=()
while [ $# -gt 0 ]; do
    case $1 in
        --list) LIST=1; shift ;;
        --kind) [ $# -ge 2 ] || die "--kind needs busybox or systemd"; KIND=$2; shift 2 ;;
        --kernel) [ $# -ge 2 ] || die "--kernel needs a SPEC (6.12, linux-image-...)"; KSPEC=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) FILTERS+=("$1"); shift ;;
    esac
done
case $KIND in ""|busybox|systemd) ;; *) die "--kind must be busybox or systemd" ;; esac
[ "$KSPEC" != default ] || KSPEC=""
# fetch-kernel.sh (called by every tool below) reads the spec from the environment.
export EVICTD_VM_KERNEL=$KSPEC
# The guest's architecture; fetch-kernel.sh, build-initramfs.sh and run-guest.sh read it from
# the environment.
case ${ARCH:-x86} in
    x86|x86_64|amd64) VM_ARCH=amd64; ARCH_SUFFIX=""; ARCH_BUILD=build; TIMEOUT_SCALE=1 ;;
    arm64|aarch64) VM_ARCH=arm64; ARCH_SUFFIX=@arm64; ARCH_BUILD=build-arm64; TIMEOUT_SCALE=3
        [ "$KIND" != systemd ] || die "ARCH=arm64 runs the busybox scenarios only (the systemd root is amd64)"
        KIND=busybox ;;
    *) die "ARCH must be x86 or arm64, not '$ARCH'" ;;
esac
export EVICTD_VM_ARCH=$VM_ARCH
# Reported names: NAME, NAME@SPEC, NAME@arm64, NAME@SPEC@arm64.
SUFFIX=${KSPEC:+@$KSPEC}$ARCH_SUFFIX

abs() { case $1 in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
BIN_DIR=$(abs "${EVICTD_BIN_DIR:-$ARCH_BUILD}")
OUT=$(abs "${EVICTD_VM_OUT:-build/vm}")${KSPEC:+/$KSPEC}${ARCH_SUFFIX:+/${ARCH_SUFFIX#@}}
PROGS_DIR=$ROOT/$ARCH_BUILD/vm-progs
# The static test programs for the guest's architecture (Debian's cross gcc has its libc.a).
PROGS_CC=gcc
[ "$VM_ARCH" = arm64 ] && PROGS_CC=aarch64-linux-gnu-gcc

# ---- scenario list -----------------------------------------------------------
SCEN_FILES=()
SCEN_NAMES=()
SCEN_KINDS=()
want() {
    [ ${#FILTERS[@]} -eq 0 ] && return 0
    local f
    for f in "${FILTERS[@]}"; do case $1 in *"$f"*) return 0 ;; esac; done
    return 1
}
if [ "$KIND" != systemd ]; then
    for f in "$ROOT"/tests/vm/scenarios/*.sh; do
        [ -f "$f" ] || continue
        n=$(basename "$f" .sh)
        want "$n" || continue
        SCEN_FILES+=("$f"); SCEN_NAMES+=("$n"); SCEN_KINDS+=(busybox)
    done
fi
if [ "$KIND" != busybox ]; then
    for f in "$ROOT"/tests/vm/systemd-scenarios/*.sh; do
        [ -f "$f" ] || continue
        n=systemd/$(basename "$f" .sh)
        want "$n" || continue
        SCEN_FILES+=("$f"); SCEN_NAMES+=("$n"); SCEN_KINDS+=(systemd)
    done
fi
if [ "$LIST" = 1 ]; then
    for i in "${!SCEN_NAMES[@]}"; do echo "${SCEN_NAMES[$i]}  (${SCEN_FILES[$i]#"$ROOT"/})"; done
    exit 0
fi
[ ${#SCEN_NAMES[@]} -gt 0 ] || die "no scenario matches ${FILTERS[*]:-(none found)}"

# ---- helpers -----------------------------------------------------------------
# hdr FILE KEY: the values of '# vm-KEY:' lines in the leading comment block, one per line
hdr() {
    awk -v k="# vm-$2:" 'NR == 1 && /^#!/ { next }
        !/^#/ { exit }
        index($0, k) == 1 { v = substr($0, length(k) + 1); sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v); print v }' "$1"
}
# unknown_keys FILE: '# vm-xxx:' keys this harness does not know
unknown_keys() {
    awk 'NR == 1 && /^#!/ { next } !/^#/ { exit } /^# vm-[a-z]+:/ { k = $2; sub(/:$/, "", k); print k }' "$1" \
        | grep -vxE 'vm-(expect|mem|smp|timeout|bins|add|modules|disk|append|units|packages)' || true
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# log_value LOG ERE: the number after the first match of 'ERE' (which ends in '=') in the log
log_value() { { grep -oE "$2[0-9.]+" "$1" || true; } | head -n1 | sed 's/.*=//'; }

NPASS=0
NFAIL=0
pass() { echo "PASS $1$SUFFIX ($2s)"; NPASS=$((NPASS + 1)); }
fail() {
    local name=$1$SUFFIX reason=$2 log=${3:-}
    echo "FAIL $name: $reason"
    if [ -n "$log" ] && [ -s "$log" ]; then
        echo "---- last 60 lines of $log ----"
        tail -n 60 "$log"
        echo "---- end of $log ----"
    fi
    NFAIL=$((NFAIL + 1))
}

# ---- setup (shared by all scenarios) -------------------------------------------
setup_err=""
mkdir -p "$OUT" || die "cannot create $OUT"
KERNEL=$(timeout 1800 "$TOOLS/fetch-kernel.sh" 2>"$OUT/fetch-kernel.log") || KERNEL=""
if [ -z "$KERNEL" ] || [ ! -f "$KERNEL" ]; then
    setup_err="tools/vm/fetch-kernel.sh failed: $(tail -n 3 "$OUT/fetch-kernel.log" 2>/dev/null | tr '\n' ' ')"
elif ! timeout 300 make -s -C "$ROOT/tests/vm/progs" OUT="$PROGS_DIR" CC="$PROGS_CC" >"$OUT/progs-build.log" 2>&1; then
    setup_err="building tests/vm/progs failed: $(tail -n 3 "$OUT/progs-build.log" | tr '\n' ' ')"
fi
if [ -n "$setup_err" ]; then
    for n in "${SCEN_NAMES[@]}"; do fail "$n" "$setup_err"; done
    echo "$NPASS passed, $NFAIL failed"
    exit 1
fi
pvh=""
case ${KERNEL##*/} in
    vmlinuz-*) [ "$VM_ARCH" != amd64 ] || [ "${EVICTD_VM_PVH:-1}" = 0 ] \
        || [ ! -f "${KERNEL%/*}/vmlinux-${KERNEL##*/vmlinuz-}" ] || pvh=" (booted as vmlinux-${KERNEL##*/vmlinuz-}, PVH)" ;;
esac
echo "kernel: $KERNEL${KSPEC:+ (--kernel $KSPEC)}${ARCH_SUFFIX:+ ($VM_ARCH guest)}$pvh"

# ---- one scenario ----------------------------------------------------------------
run_one() {
    local file=$1 name=$2 kind=$3
    local sdir="$OUT/$name" t_start t_built t_end rc=0 v m b a h g line
    rm -rf "$sdir"
    mkdir -p "$sdir"
    t_start=$(now)

    local bad; bad=$(unknown_keys "$file" | paste -sd' ' -)
    [ -z "$bad" ] || { fail "$name" "unknown header key(s): $bad (see $PROG --help)"; return; }
    local expects=() mem smp timeout_s append modules="" adds=() disks=() units=() packages=""
    for v in $(hdr "$file" expect); do
        [[ $v =~ ^[A-Za-z0-9_.-]+$ ]] || { fail "$name" "bad marker name '$v' in '# vm-expect:'"; return; }
        expects+=("$v")
    done
    [ ${#expects[@]} -gt 0 ] || { fail "$name" "no '# vm-expect:' markers declared in ${file#"$ROOT"/}"; return; }
    mem=$(hdr "$file" mem | tail -n1); mem=${mem:-1024M}
    smp=$(hdr "$file" smp | tail -n1); smp=${smp:-2}
    timeout_s=$(hdr "$file" timeout | tail -n1); timeout_s=${timeout_s:-300}
    # aarch64 under TCG on an x86 host runs a scenario several times slower than the x86 guest
    # the headers' limits were set on.
    timeout_s=$((timeout_s * TIMEOUT_SCALE))
    append=$(hdr "$file" append | paste -sd' ' -)
    for v in $(hdr "$file" modules | tr ',' ' '); do modules=${modules:+$modules,}$v; done
    for v in $(hdr "$file" packages | tr ',' ' '); do packages=${packages:+$packages,}$v; done

    # host binaries and files
    for p in "$PROGS_DIR"/*; do adds+=(--add "$p:/usr/bin/$(basename "$p")"); done
    for b in $(hdr "$file" bins); do
        if [ ! -f "$BIN_DIR/$b" ] || [ ! -x "$BIN_DIR/$b" ]; then
            fail "$name" "needs binary '$b', but $BIN_DIR/$b is missing (build it first, or set EVICTD_BIN_DIR)"
            return
        fi
        adds+=(--add "$BIN_DIR/$b:/usr/bin/$b")
    done
    for a in $(hdr "$file" add); do
        case $a in *:*) h=${a%%:*}; g=${a#*:} ;; *) fail "$name" "'# vm-add: $a' is not HOST:GUEST"; return ;; esac
        h=$(abs "$h")
        [ -e "$h" ] || { fail "$name" "'# vm-add: $a': $h does not exist"; return; }
        # The aarch64 guest cannot run this host's x86 programs: a host ELF outside the tree
        # (05-bpf-dataplane's bpftool) comes from the arm64 userland instead.
        if [ "$VM_ARCH" = arm64 ] && [ "${h#"$ROOT"/}" = "$h" ] && [ -f "$h" ] \
            && [ "$(head -c4 "$h" | od -An -c | tr -d ' ')" = '177ELF' ]; then
            local uland; uland=$("$TOOLS/fetch-arm64-userland.sh" 2>/dev/null) || uland=""
            [ -n "$uland" ] && [ -f "$uland$h" ] \
                || { fail "$name" "'# vm-add: $a': no arm64 $h (tools/vm/fetch-arm64-userland.sh)"; return; }
            h=$uland$h
        fi
        adds+=(--add "$h:$g")
    done
    for u in $(hdr "$file" units); do
        u=$(abs "$u")
        [ -f "$u" ] || { fail "$name" "'# vm-units:': $u does not exist"; return; }
        units+=(--unit "$u")
    done

    # disks
    local i=0 size fs opts img
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        read -r size fs opts <<<"$line"
        img="$sdir/disk$i.img"
        truncate -s "$size" "$img" 2>"$sdir/mkfs.log" || { fail "$name" "'# vm-disk: $line': bad size '$size'"; return; }
        case $fs in
            ext4)
                # shellcheck disable=SC2086
                if ! timeout 120 mkfs.ext4 -q -F $opts "$img" >>"$sdir/mkfs.log" 2>&1; then
                    fail "$name" "mkfs.ext4 $opts $img failed: $(tail -n 2 "$sdir/mkfs.log" | tr '\n' ' ')"; return
                fi
                modules=${modules:+$modules,}ext4 ;;
            raw) ;;
            *) fail "$name" "'# vm-disk: $line': file system must be ext4 or raw"; return ;;
        esac
        modules=${modules:+$modules,}virtio_pci,virtio_blk
        disks+=(--disk "$img")
        i=$((i + 1))
    done < <(hdr "$file" disk)

    # the initramfs
    # uncompressed: the guest kernel has nothing to inflate (seconds under TCG)
    local img_out="$sdir/initramfs.cpio"
    if [ "$kind" = busybox ]; then
        timeout 600 "$TOOLS/build-initramfs.sh" "$img_out" --init "$file" ${adds[@]+"${adds[@]}"} \
            ${modules:+--modules "$modules"} >"$sdir/build.log" 2>&1 || rc=$?
    else
        cat >"$sdir/run-scenario.sh" <<'EOF'
#!/bin/sh
# generated by tests/vm/run.sh: runs the scenario once systemd reached multi-user.target
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
echo "EVICTD-VM: systemd ready uptime=$(cut -d' ' -f1 /proc/uptime)"
cd /
/bin/sh /usr/lib/evictd-vm/scenario.sh </dev/null
rc=$?
echo "EVICTD-VM: scenario exit=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
if [ "$rc" != 0 ]; then
    journalctl -b --no-pager -o short-monotonic 2>&1 | tail -n 60 | sed 's/^/journal: /'
fi
systemctl --no-block poweroff
EOF
        cat >"$sdir/evictd-vm-scenario.service" <<'EOF'
[Unit]
Description=evictd VM test scenario
Wants=systemd-logind.service dbus.service
After=multi-user.target systemd-logind.service dbus.service

[Service]
Type=oneshot
StandardInput=null
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStart=/bin/sh /usr/lib/evictd-vm/run-scenario.sh
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
        timeout 1800 "$TOOLS/build-systemd-root.sh" "$img_out" \
            --add "$file:/usr/lib/evictd-vm/scenario.sh" \
            --add "$sdir/run-scenario.sh:/usr/lib/evictd-vm/run-scenario.sh" \
            --unit "$sdir/evictd-vm-scenario.service" \
            ${units[@]+"${units[@]}"} ${adds[@]+"${adds[@]}"} \
            ${modules:+--modules "$modules"} ${packages:+--packages "$packages"} \
            >"$sdir/build.log" 2>&1 || rc=$?
    fi
    if [ "$rc" != 0 ]; then
        fail "$name" "building the initramfs failed (exit $rc, ${sdir#"$ROOT"/}/build.log): $(tail -n 3 "$sdir/build.log" | tr '\n' ' ')"
        return
    fi
    t_built=$(now)

    # boot
    local raw="$sdir/serial.raw.log" log="$sdir/serial.log"
    rc=0
    "$TOOLS/run-guest.sh" --kernel "$KERNEL" --initramfs "$img_out" --mem "$mem" --smp "$smp" \
        --timeout "$timeout_s" ${append:+--append "$append"} ${disks[@]+"${disks[@]}"} \
        --log "$raw" >"$sdir/qemu.log" 2>&1 || rc=$?
    t_end=$(now)
    tr -d '\r' <"$raw" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' >"$log" || true

    # verdict
    local reasons=() missing=() fails
    [ "$rc" = 124 ] && reasons+=("timed out after ${timeout_s}s")
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && reasons+=("qemu exited $rc: $(tail -n 2 "$sdir/qemu.log" | tr '\n' ' ')")
    for m in "${expects[@]}"; do
        grep -qE "EVICTD-VM: PASS ${m//./\\.}( |:|$)" "$log" || missing+=("$m")
    done
    [ ${#missing[@]} -eq 0 ] || reasons+=("missing markers: ${missing[*]}")
    fails=$(grep -c 'EVICTD-VM: FAIL' "$log" || true)
    [ "$fails" = 0 ] || reasons+=("$fails FAIL line(s), first: $(grep -m1 -o 'EVICTD-VM: FAIL.*' "$log")")
    local ex; ex=$(log_value "$log" 'EVICTD-VM: scenario exit=')
    if [ -z "$ex" ]; then
        reasons+=("no 'EVICTD-VM: scenario exit=' line (the guest died or hung)")
    elif [ "$ex" != 0 ]; then
        reasons+=("scenario exit=$ex")
    fi
    grep -q 'Kernel panic' "$log" && reasons+=("kernel panic: $(grep -m1 'Kernel panic' "$log")")
    grep -q 'reboot: Power down' "$log" || reasons+=("the guest did not power off cleanly (no 'reboot: Power down')")

    local ready done_at
    ready=$(log_value "$log" 'EVICTD-VM: (init|systemd) ready uptime=')
    done_at=$(log_value "$log" 'EVICTD-VM: scenario exit=[0-9]* uptime=')
    local timing
    timing="build $(secs "$t_start" "$t_built")s, qemu $(secs "$t_built" "$t_end")s; guest uptime: ready ${ready:-?}s, scenario done ${done_at:-?}s"
    echo "$timing" >"$sdir/timing"
    if [ ${#reasons[@]} -eq 0 ]; then
        pass "$name" "$(secs "$t_start" "$t_end")"
        echo "  $name: $timing"
        [ "${EVICTD_VM_KEEP:-0}" = 1 ] || rm -f "$img_out" "$sdir"/disk*.img
    else
        local r; r=$(printf '%s; ' "${reasons[@]}"); r=${r%; }
        fail "$name" "$r (${sdir#"$ROOT"/}/serial.log)" "$log"
        echo "  $name: $timing"
    fi
}

for i in "${!SCEN_NAMES[@]}"; do
    run_one "${SCEN_FILES[$i]}" "${SCEN_NAMES[$i]}" "${SCEN_KINDS[$i]}"
done
echo "$NPASS passed, $NFAIL failed"
[ "$NFAIL" = 0 ]
