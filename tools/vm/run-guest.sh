#!/usr/bin/env bash
# run-guest.sh - boot the cached Debian kernel with an initramfs under QEMU TCG.
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)

usage() {
    cat <<EOF
Usage: $PROG --initramfs F --log LOG [--mem 1024M] [--smp 2] [--timeout 300]
             [--append "extra cmdline"] [--disk IMG]... [--kernel VMLINUZ]
             [--arch amd64|arm64] [--slots N [--exclusive]]
             [--guestfwd GUEST_IP:GUEST_PORT:HOST_PORT]... [--serial2 FILE]...

Boot the Debian kernel from fetch-kernel.sh with initramfs F under
qemu-system-x86_64 -accel tcg (no KVM), with the serial console (ttyS0)
written to LOG.  Kernel command line:
  console=ttyS0 cgroup_no_v1=all panic=-1 quiet [extra]
Each --disk IMG is attached as a raw virtio disk (/dev/vda, /dev/vdb, ... in the
guest; the guest needs the virtio_pci and virtio_blk modules).  The guest must
power itself off; -no-reboot makes a reboot or a panic (panic=-1) end qemu too.

Exit status: 0 when qemu exited before the timeout, 124 on timeout (qemu is
killed), 1 on usage/setup errors, otherwise qemu's own exit status.

  --initramfs F     initramfs (cpio, optionally compressed) to boot (required)
  --log LOG         serial console log file (required; overwritten)
  --mem SIZE        guest memory (qemu -m syntax, default 1024M)
  --smp N           virtual CPUs (default 2)
  --timeout SECS    wall-clock limit for qemu (default 300)
  --append STR      extra kernel command line (repeatable, joined with spaces)
  --disk IMG        raw disk image to attach as virtio (repeatable)
  --kernel F        vmlinuz to boot (default: fetch-kernel.sh's); an uncompressed
                    vmlinux-KVER beside a vmlinuz-KVER (fetch-kernel.sh makes it) boots
                    instead, through its PVH entry (EVICTD_VM_PVH=0: the vmlinuz)
  --arch A          amd64 (default, \$EVICTD_VM_ARCH) or arm64: qemu-system-aarch64
                    -machine virt -cpu max under TCG, the console on ttyAMA0 (PL011)
  --slots N         share the host with other guests: boot only while holding one of
                    N slots (default \$EVICTD_VM_SLOTS; unset or 0: no limit), lock files
                    slot0..slotN-1 in \$EVICTD_VM_SLOT_DIR (default /tmp/evictd-vm-slots),
                    so every run-guest.sh with --slots on this machine shares them (the
                    guest suites of tests/run-all.sh, tests/vm/run.sh's concurrent scenarios)
  --guestfwd G:P:H  a network card (virtio-net, qemu's user network with restrict=on: the
                    guest reaches nothing else) on which a TCP connection from the guest to
                    G:P reaches 127.0.0.1:H on the host, through one socat per connection
                    (G in 10.0.2.0/24, neither the gateway 10.0.2.2 nor the DNS 10.0.2.3)
                    (repeatable; the guest configures 10.0.2.15/24 itself; a real node's
                    API server: tests/cluster/test_node.sh)
  --serial2 FILE    one more serial port written to FILE (overwritten): ttyS1 for the
                    first, ttyS2 for the second... (amd64): logs apart from the console's
  --exclusive       with --slots: hold all N slots, so that no other slot-sharing guest
                    runs beside this one (a scenario that checks timings: # vm-serial: yes)
  -h, --help        this help

The wait for a slot does not count against --timeout; it is reported on stderr as
'run-guest.sh: slot wait Ns'.
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }

INITRD=""
LOG=""
MEM=1024M
SMP=2
TIMEOUT=300
APPEND=""
DISKS=()
KERNEL=""
ARCH=${EVICTD_VM_ARCH:-amd64}
SLOTS=${EVICTD_VM_SLOTS:-0}
EXCLUSIVE=0
SLOT_DIR=${EVICTD_VM_SLOT_DIR:-/tmp/evictd-vm-slots}
GUESTFWDS=()
SERIALS=()

while [ $# -gt 0 ]; do
    case $1 in
        --initramfs) [ $# -ge 2 ] || die "--initramfs needs a file"; INITRD=$2; shift 2 ;;
        --log) [ $# -ge 2 ] || die "--log needs a file"; LOG=$2; shift 2 ;;
        --mem) [ $# -ge 2 ] || die "--mem needs a size"; MEM=$2; shift 2 ;;
        --smp) [ $# -ge 2 ] || die "--smp needs a number"; SMP=$2; shift 2 ;;
        --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; TIMEOUT=$2; shift 2 ;;
        --append) [ $# -ge 2 ] || die "--append needs a string"; APPEND="${APPEND:+$APPEND }$2"; shift 2 ;;
        --disk) [ $# -ge 2 ] || die "--disk needs an image"; DISKS+=("$2"); shift 2 ;;
        --kernel) [ $# -ge 2 ] || die "--kernel needs a file"; KERNEL=$2; shift 2 ;;
        --arch) [ $# -ge 2 ] || die "--arch needs amd64 or arm64"; ARCH=$2; shift 2 ;;
        --slots) [ $# -ge 2 ] || die "--slots needs a number"; SLOTS=$2; shift 2 ;;
        --exclusive) EXCLUSIVE=1; shift ;;
        --guestfwd) [ $# -ge 2 ] || die "--guestfwd needs GUEST_IP:GUEST_PORT:HOST_PORT"; GUESTFWDS+=("$2"); shift 2 ;;
        --serial2) [ $# -ge 2 ] || die "--serial2 needs a file"; SERIALS+=("$2"); shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[ -n "$INITRD" ] || die "--initramfs is required (see --help)"
[ -n "$LOG" ] || die "--log is required (see --help)"
[ -f "$INITRD" ] || die "initramfs not found: $INITRD"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds, got '$TIMEOUT'"
[[ $SMP =~ ^[0-9]+$ ]] || die "--smp must be a number, got '$SMP'"
[[ $MEM =~ ^[0-9]+[MGmg]?$ ]] || die "--mem must look like 1024M or 2G, got '$MEM'"
[[ $SLOTS =~ ^[0-9]+$ ]] || die "--slots must be a number, got '$SLOTS'"

# The machine per architecture; the console is the board's first UART.
case $ARCH in
    amd64|x86|x86_64) ARCH=amd64; QEMU=qemu-system-x86_64; MACHINE=pc; CONSOLE=ttyS0; CPU=max ;;
    # virt: PCI (virtio_pci) and a PL011; GICv3 lets more than 8 vCPUs exist; -cpu max
    # has every feature TCG emulates (LSE atomics, PAC), as Graviton/Ampere cores do, with
    # pointer authentication's cheap implementation-defined hash (QARMA costs TCG dearly).
    arm64|aarch64) ARCH=arm64; QEMU=qemu-system-aarch64; MACHINE=virt,gic-version=3; CONSOLE=ttyAMA0
        CPU=max,pauth-impdef=on ;;
    *) die "--arch must be amd64 or arm64, got '$ARCH'" ;;
esac
if [ -z "$KERNEL" ]; then
    KERNEL=$("$HERE/fetch-kernel.sh" --arch "$ARCH") || die "fetch-kernel.sh failed"
fi
[ -f "$KERNEL" ] || die "kernel not found: $KERNEL"
# fetch-kernel.sh's uncompressed vmlinux-KVER beside vmlinuz-KVER (amd64): qemu boots it through
# its PVH entry, and the guest does not unpack the compressed kernel (XZ, zstd) under TCG at
# every boot (seconds). EVICTD_VM_PVH=0 boots the bzImage.
if [ "$ARCH" = amd64 ] && [ "${EVICTD_VM_PVH:-1}" != 0 ]; then
    case ${KERNEL##*/} in
        vmlinuz-*) [ ! -f "${KERNEL%/*}/vmlinux-${KERNEL##*/vmlinuz-}" ] || KERNEL=${KERNEL%/*}/vmlinux-${KERNEL##*/vmlinuz-} ;;
    esac
fi
command -v "$QEMU" >/dev/null 2>&1 || die "$QEMU not found (run tools/vm/fetch-kernel.sh --arch $ARCH)"

args=(
    -accel tcg
    -machine "$MACHINE"
    -cpu "$CPU"
    -m "$MEM"
    -smp "$SMP"
    -kernel "$KERNEL"
    -initrd "$INITRD"
    -append "console=$CONSOLE cgroup_no_v1=all panic=-1 quiet${APPEND:+ $APPEND}"
    -nographic
    -serial "file:$LOG"
    -monitor none
    -no-reboot
)
if [ ${#GUESTFWDS[@]} -gt 0 ]; then
    command -v socat >/dev/null 2>&1 || die "--guestfwd needs socat on the host"
    nic=user,model=virtio-net-pci,restrict=on
    for f in "${GUESTFWDS[@]}"; do
        [[ $f =~ ^([0-9.]+):([0-9]+):([0-9]+)$ ]] || die "--guestfwd must be GUEST_IP:GUEST_PORT:HOST_PORT, got '$f'"
        # cmd: qemu starts the command for each connection the guest opens (a chardev would
        # carry one connection for qemu's lifetime)
        nic+=",guestfwd=tcp:${BASH_REMATCH[1]}:${BASH_REMATCH[2]}-cmd:socat - TCP:127.0.0.1:${BASH_REMATCH[3]}"
    done
    args+=(-nic "$nic")
else
    args+=(-nic none)
fi
for f in ${SERIALS[@]+"${SERIALS[@]}"}; do
    : >"$f" || die "cannot write $f"
    args+=(-serial "file:$f")
done
for d in ${DISKS[@]+"${DISKS[@]}"}; do
    [ -f "$d" ] || die "disk image not found: $d"
    case $d in *,*) die "disk image path must not contain a comma: $d" ;; esac
    args+=(-drive "file=$d,format=raw,if=virtio,cache=unsafe")
done

mkdir -p "$(dirname "$LOG")" || die "cannot create the directory of $LOG"
: >"$LOG" || die "cannot write $LOG"

# take_slots: hold one slot (all with --exclusive) for as long as this script and its qemu
# run: flock on slot files, the locks are released when the descriptors close at exit.
# Whoever waits holds the gate: waiters are served in turn, and an exclusive waiter is not
# overtaken by guests that would keep one slot busy all the time.
take_slots() {
    local gate fd i t0=$SECONDS
    mkdir -p "$SLOT_DIR" || die "cannot create $SLOT_DIR"
    exec {gate}>>"$SLOT_DIR/gate" || die "cannot open $SLOT_DIR/gate"
    flock "$gate" || die "flock $SLOT_DIR/gate failed"
    if [ "$EXCLUSIVE" = 1 ]; then
        for ((i = 0; i < SLOTS; i++)); do
            exec {fd}>>"$SLOT_DIR/slot$i" || die "cannot open $SLOT_DIR/slot$i"
            flock "$fd" || die "flock $SLOT_DIR/slot$i failed"
        done
        echo "$PROG: slot wait $((SECONDS - t0))s (all $SLOTS slots)" >&2
    else
        while :; do
            for ((i = 0; i < SLOTS; i++)); do
                exec {fd}>>"$SLOT_DIR/slot$i" || die "cannot open $SLOT_DIR/slot$i"
                if flock -n "$fd"; then
                    echo "$PROG: slot wait $((SECONDS - t0))s (slot $i of $SLOTS)" >&2
                    break 2
                fi
                exec {fd}>&-
            done
            sleep 0.2
        done
    fi
    exec {gate}>&-
}
[ "$SLOTS" -gt 0 ] && take_slots

rc=0
timeout --kill-after=10 "$TIMEOUT" "$QEMU" "${args[@]}" </dev/null || rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "$PROG: qemu killed after the ${TIMEOUT}s timeout (log: $LOG)" >&2
    exit 124
fi
exit "$rc"
