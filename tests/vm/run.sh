#!/usr/bin/env bash
# tests/vm/run.sh - real-kernel tests for evictd: boot Debian's kernel under QEMU
# TCG once per scenario and check the markers the scenario prints on ttyS0; scenarios
# run side by side (--jobs), those that check timings alone (# vm-serial: yes).
set -euo pipefail

PROG=tests/vm/run.sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=$ROOT/tools/vm

usage() {
    cat <<EOF
Usage: $PROG [--list] [--kind busybox|systemd] [--kernel SPEC] [--jobs N] [FILTER...]

Runs every tests/vm/scenarios/*.sh (busybox guests) and every
tests/vm/systemd-scenarios/*.sh (systemd guests, named systemd/NAME), or only
those whose name contains one of the FILTERs.  For each scenario it builds an
initramfs, boots it with tools/vm/run-guest.sh and checks the serial log.

A scenario PASSes only when the guest powered off before the timeout, every
'# vm-expect:' marker appears as an 'EVICTD-VM: PASS <marker>' line, no
'EVICTD-VM: FAIL' line appears, and it printed 'EVICTD-VM: scenario exit=0'.
Output: 'PASS name (secs)' or 'FAIL name: reason' per scenario (with the last
60 lines of the serial log on failure), in the order they end, then 'N passed,
N failed'; the exit status is non-zero when anything failed.  secs is the
scenario's own time (its initramfs and its guest), without the wait for a slot.

--jobs N runs up to N scenarios at once (default \$EVICTD_VM_JOBS, else the
number of CPUs, at most 4; 1 = one after the other).  Each guest holds one of the
host's guest slots while it runs (tools/vm/run-guest.sh --slots: \$EVICTD_VM_SLOTS,
default N), which every run.sh on this machine shares: tests/run-all.sh starts
the guest suites (both kernels, arm64) at once and they keep to those slots
together.  A scenario whose header says '# vm-serial: yes' (it checks how long
something took, or races a fixed rate against evictd) holds every slot: no other
guest runs beside it.  The parallel scenarios go first, the longest first (the
times of the last run, kept in \$EVICTD_VM_CACHE/durations; without them the
'# vm-timeout:'), the serial ones last.  The systemd roots the scenarios need are
built in the background from the start (tools/vm/build-systemd-root.sh
--base-only, logged to \$EVICTD_VM_OUT/systemd-roots.log).

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
  # vm-serial: yes [WHY]     run with no other guest beside it (see --jobs)
Every guest gets build/vm-progs/* (memhog, forkbomb, mkfiles) in /usr/bin and
/usr/lib/evictd-vm/vm-lib.sh (vm_pass, vm_fail, vm_check, vm_wait_for, ...).

Environment:
  EVICTD_BIN_DIR   where the host-built binaries are (default: build/, relative
                   paths are relative to the repo root)
  EVICTD_VM_OUT    where images and serial logs go (default: build/vm/)
  EVICTD_VM_CACHE  kernel / systemd root cache, scenario times (default:
                   /var/cache/evictd-vm)
  EVICTD_VM_JOBS   scenarios at once (--jobs)
  EVICTD_VM_SLOTS  guests at once on this machine, across runs (default: --jobs)
  EVICTD_VM_KEEP   1 = keep the initramfs of passing scenarios too
  EVICTD_VM_APPEND extra kernel command line for every scenario of the run (after
                   its '# vm-append:'); a scenario may read its own keys from
                   /proc/cmdline (25-benign-ahead: evictd_vm.act_ahead=DURATION)
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
JOBS=${EVICTD_VM_JOBS:-}
KSPEC=${EVICTD_VM_KERNEL:-}
FILTERS=()
while [ $# -gt 0 ]; do
    case $1 in
        --list) LIST=1; shift ;;
        --kind) [ $# -ge 2 ] || die "--kind needs busybox or systemd"; KIND=$2; shift 2 ;;
        --kernel) [ $# -ge 2 ] || die "--kernel needs a SPEC (6.12, linux-image-...)"; KSPEC=$2; shift 2 ;;
        --jobs) [ $# -ge 2 ] || die "--jobs needs a number"; JOBS=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) FILTERS+=("$1"); shift ;;
    esac
done
case $KIND in ""|busybox|systemd) ;; *) die "--kind must be busybox or systemd" ;; esac
if [ -z "$JOBS" ]; then
    JOBS=$(nproc 2>/dev/null || echo 1)
    [ "$JOBS" -le 4 ] || JOBS=4
fi
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a number >= 1, got '$JOBS'"
# The guest slots of this machine (tools/vm/run-guest.sh --slots), shared with every other
# run.sh that runs at the same time.
export EVICTD_VM_SLOTS=${EVICTD_VM_SLOTS:-$JOBS}
CACHE=${EVICTD_VM_CACHE:-/var/cache/evictd-vm}
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
        | grep -vxE 'vm-(expect|mem|smp|timeout|bins|add|modules|disk|append|units|packages|serial)' || true
}
# is_serial FILE: its header says '# vm-serial: yes' (no other guest may run beside it)
is_serial() {
    case $(hdr "$1" serial | tail -n1) in yes|yes[\ :\;,]*) return 0 ;; *) return 1 ;; esac
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# log_value LOG ERE: the number after the first match of 'ERE' (which ends in '=') in the log
log_value() { { grep -oE "$2[0-9.]+" "$1" || true; } | head -n1 | sed 's/.*=//'; }

if [ "$LIST" = 1 ]; then
    for i in "${!SCEN_NAMES[@]}"; do
        s=""; is_serial "${SCEN_FILES[$i]}" && s=", serial"
        echo "${SCEN_NAMES[$i]}  (${SCEN_FILES[$i]#"$ROOT"/}$s)"
    done
    exit 0
fi
[ ${#SCEN_NAMES[@]} -gt 0 ] || die "no scenario matches ${FILTERS[*]:-(none found)}"

NPASS=0
NFAIL=0
# A scenario runs in a job of its own (run_one in a subshell, its output in a file): it says
# its verdict in VERDICT, which the main loop counts.
VERDICT=/dev/null
pass() { echo "PASS $1$SUFFIX ($2s)"; NPASS=$((NPASS + 1)); echo pass >"$VERDICT"; }
fail() {
    local name=$1$SUFFIX reason=$2 log=${3:-}
    echo "FAIL $name: $reason"
    echo fail >"$VERDICT"
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
elif ! mkdir -p "$PROGS_DIR" || ! timeout 300 flock "$PROGS_DIR" \
    make -s -C "$ROOT/tests/vm/progs" OUT="$PROGS_DIR" CC="$PROGS_CC" >"$OUT/progs-build.log" 2>&1; then
    # (flock: another run.sh, of the other kernel, builds the same programs at the same time)
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
    local expects=() mem smp timeout_s append modules="" adds=() disks=() units=() packages="" exclusive=""
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
    # EVICTD_VM_APPEND: the same scenario with one setting changed, for a bench (e.g.
    # tools/bench/benign-ahead.sh's evictd_vm.act_ahead=3s), without a copy of the scenario.
    append="$append${EVICTD_VM_APPEND:+ $EVICTD_VM_APPEND}"; append=${append# }
    for v in $(hdr "$file" modules | tr ',' ' '); do modules=${modules:+$modules,}$v; done
    for v in $(hdr "$file" packages | tr ',' ' '); do packages=${packages:+$packages,}$v; done
    is_serial "$file" && exclusive=--exclusive

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
    local raw="$sdir/serial.raw.log" log="$sdir/serial.log" attempt waited=0 w boot_note=""
    for attempt in 1 2 3; do
        rc=0
        "$TOOLS/run-guest.sh" --kernel "$KERNEL" --initramfs "$img_out" --mem "$mem" --smp "$smp" \
            --timeout "$timeout_s" ${append:+--append "$append"} ${disks[@]+"${disks[@]}"} \
            ${exclusive:+"$exclusive"} --log "$raw" >"$sdir/qemu.log" 2>&1 || rc=$?
        # the wait for a guest slot (other guests ran) is no part of the scenario's time
        w=$(sed -n 's/^run-guest\.sh: slot wait \([0-9]*\)s.*/\1/p' "$sdir/qemu.log" | head -n1)
        waited=$((waited + ${w:-0}))
        tr -d '\r' <"$raw" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' >"$log" || true
        # A kernel that panics before the guest's init is ready has run none of the scenario.
        # Seen on 6.12 under a loaded host: "Oops: int3" in code the kernel was patching as it
        # booted (sched_clock_cpu, enqueue_timer: text_poke_bp()'s int3 seen by the other vCPU),
        # qemu's multi-threaded TCG running stale translated code; twice in a row once. Such a
        # boot is booted again, up to three boots, each said in the output and kept
        # (serial.boot-panic.log, the last); a panic after init, or three, fail the scenario.
        # The same "Oops: int3" after init (18-refault-mglru on 6.12: a mkdir of the first
        # cgroup, kmem_cache_free at a static branch the kernel was switching on) is that race
        # too, whatever the scenario was doing: only the kernel's text_poke_bp() plants an int3
        # in kernel text (static keys, tracepoints switched on, BPF trampolines; evictd's
        # attach switches some), and one left to a vCPU after the patch is qemu's stale code,
        # not a kernel or evictd fault; booted again the same way. Any other panic after init
        # fails the scenario.
        if [ "$attempt" != 3 ] && grep -q 'Kernel panic' "$log" &&
            { ! grep -qE 'EVICTD-VM: (init|systemd) ready' "$log" || grep -q 'Oops: int3 ' "$log"; }; then
            cp "$log" "$sdir/serial.boot-panic.log"
            boot_note="boot $attempt panicked $(grep -qE 'EVICTD-VM: (init|systemd) ready' "$log" && echo 'on an int3 in kernel text (TCG)' || echo 'before init was ready') ($(grep -m1 -E 'Oops|Kernel panic' "$log" | cut -c1-120)); booted again, log ${sdir#"$ROOT"/}/serial.boot-panic.log"
            echo "  NOTE $name: $boot_note"
            continue
        fi
        break
    done
    t_end=$(now)
    t_end=$(awk -v e="$t_end" -v w="$waited" 'BEGIN { printf "%.3f", e - w }')

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
    timing="build $(secs "$t_start" "$t_built")s, qemu $(secs "$t_built" "$t_end")s${exclusive:+ (alone)}; guest uptime: ready ${ready:-?}s, scenario done ${done_at:-?}s"
    [ "$waited" = 0 ] || timing="$timing; waited ${waited}s for a guest slot"
    [ -z "$boot_note" ] || timing="$timing; booted $attempt times"
    echo "$timing" >"$sdir/timing"
    if [ ${#reasons[@]} -eq 0 ]; then
        secs "$t_start" "$t_end" >"$VERDICT.secs"
        pass "$name" "$(secs "$t_start" "$t_end")"
        echo "  $name: $timing"
        [ "${EVICTD_VM_KEEP:-0}" = 1 ] || rm -f "$img_out" "$sdir"/disk*.img
    else
        local r; r=$(printf '%s; ' "${reasons[@]}"); r=${r%; }
        fail "$name" "$r (${sdir#"$ROOT"/}/serial.log)" "$log"
        echo "  $name: $timing"
    fi
}

# ---- the run: up to JOBS scenarios at once --------------------------------------
# Each scenario is a job: run_one in a subshell, its output in JOBDIR/I.out, printed whole
# when it ends (so a FAIL's serial log tail stays with it), its verdict in JOBDIR/I.verdict.
JOBDIR=$OUT/.jobs
rm -rf "$JOBDIR"
mkdir -p "$JOBDIR" "$CACHE/durations" || die "cannot create $JOBDIR or $CACHE/durations"
# The scenarios' last times on this machine (NAME@SPEC@ARCH SECS, one a line; passes only).
DURATIONS=$CACHE/durations/scenarios

# The order: the parallel busybox scenarios, the parallel systemd ones (their roots are built
# in the background meanwhile), then the serial ones; in each group the longest first (the
# last time, else the timeout, which is larger than any time), so the last jobs are short
# ones and no slot idles long at the end.
ORDER=()
while read -r _ _ i; do ORDER+=("$i"); done < <(
    for i in "${!SCEN_NAMES[@]}"; do
        f=${SCEN_FILES[$i]}
        g=0; [ "${SCEN_KINDS[$i]}" = systemd ] && g=1
        is_serial "$f" && g=2
        est=$(awk -v n="${SCEN_NAMES[$i]}$SUFFIX" '$1 == n { v = $2 } END { print v }' "$DURATIONS" 2>/dev/null || true)
        if [ -z "$est" ]; then
            est=$(hdr "$f" timeout | tail -n1); est=$(( ${est:-300} * TIMEOUT_SCALE ))
        fi
        echo "$g $est $i"
    done | sort -k1,1n -k2,2gr -k3,3n)

# The systemd roots (one per '# vm-packages:' set), built in the background from now on in
# the order the scenarios need them, at a low priority: on a fresh machine that is minutes of
# mmdebstrap that the busybox guests hide; once cached, a second.  A scenario's own
# build-systemd-root.sh waits for the one being built (its lock), or builds it itself.
ROOTS_PID=""
roots=()
for i in "${ORDER[@]}"; do
    [ "${SCEN_KINDS[$i]}" = systemd ] || continue
    p=""
    for v in $(hdr "${SCEN_FILES[$i]}" packages | tr ',' ' '); do p=${p:+$p,}$v; done
    case " ${roots[*]-} " in *" =$p "*) ;; *) roots+=("=$p") ;; esac
done
if [ ${#roots[@]} -gt 0 ]; then
    (
        for r in "${roots[@]}"; do
            p=${r#=}
            nice -n 10 timeout 1800 "$TOOLS/build-systemd-root.sh" --base-only ${p:+--packages "$p"} \
                || echo "$PROG: the systemd root${p:+ with $p} did not build (the scenarios build it again)"
        done
    ) >"$OUT/systemd-roots.log" 2>&1 &
    ROOTS_PID=$!
fi

# kill_tree PID: PID and everything below it (a job: its subshell, run-guest.sh, qemu)
kill_tree() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
    kill "$1" 2>/dev/null || true
}
declare -A JOB_OF=()
stop_jobs() {
    local p
    for p in "${!JOB_OF[@]}" $ROOTS_PID; do kill_tree "$p"; done
}
trap 'stop_jobs; exit 130' INT
trap 'stop_jobs; exit 143' TERM

start_job() {
    local i=$1
    (
        VERDICT=$JOBDIR/$i.verdict
        run_one "${SCEN_FILES[$i]}" "${SCEN_NAMES[$i]}" "${SCEN_KINDS[$i]}"
    ) >"$JOBDIR/$i.out" 2>&1 &
    JOB_OF[$!]=$i
}

# reap_job: wait for a job to end, print its output, count its verdict
reap_job() {
    local pid="" rc=0 i verdict
    while :; do
        rc=0
        wait -n -p pid || rc=$?
        [ -n "$pid" ] || return 0
        if [ "$pid" = "$ROOTS_PID" ]; then ROOTS_PID=""; pid=""; continue; fi
        [ -n "${JOB_OF[$pid]+x}" ] && break
        pid=""
    done
    i=${JOB_OF[$pid]}
    unset "JOB_OF[$pid]"
    cat "$JOBDIR/$i.out"
    verdict=$(cat "$JOBDIR/$i.verdict" 2>/dev/null || true)
    case $verdict in
        pass) NPASS=$((NPASS + 1)) ;;
        fail) NFAIL=$((NFAIL + 1)) ;;
        *) echo "FAIL ${SCEN_NAMES[$i]}$SUFFIX: the harness's job for it ended (exit $rc) without a verdict (${JOBDIR#"$ROOT"/}/$i.out)"
           NFAIL=$((NFAIL + 1)) ;;
    esac
}

t_run=$(now)
for i in "${ORDER[@]}"; do
    while [ ${#JOB_OF[@]} -ge "$JOBS" ]; do reap_job; done
    start_job "$i"
done
while [ ${#JOB_OF[@]} -gt 0 ]; do reap_job; done
[ -z "$ROOTS_PID" ] || wait "$ROOTS_PID" || true
trap - INT TERM

# the times of the scenarios that passed, for the next run's order (other runs of other
# kernels update the same file at the same time: under its lock)
{
    flock 9
    {
        for i in "${!SCEN_NAMES[@]}"; do
            [ -f "$JOBDIR/$i.verdict.secs" ] && echo "${SCEN_NAMES[$i]}$SUFFIX $(cat "$JOBDIR/$i.verdict.secs")"
        done
        cat "$DURATIONS" 2>/dev/null || true
    } | awk '!seen[$1]++' | LC_ALL=C sort >"$DURATIONS.tmp.$$" && mv "$DURATIONS.tmp.$$" "$DURATIONS"
} 9>>"$DURATIONS.lock" || true

echo "wall time $(secs "$t_run" "$(now)")s: ${#SCEN_NAMES[@]} scenario(s), up to $JOBS at once, $EVICTD_VM_SLOTS guest slot(s)"
echo "$NPASS passed, $NFAIL failed"
[ "$NFAIL" = 0 ]
