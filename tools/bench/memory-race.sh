#!/usr/bin/env bash
# memory-race.sh - evictd against its peers in a real 1 GiB cgroup-v2 guest (QEMU TCG, the
# Debian kernel of tools/vm): who stops a runaway BestEffort pod first, how fast, and how far
# memory.available falls meanwhile. One guest boot runs every contender in turn on the same
# hog (see tools/bench/memory-race-guest.sh for what happens inside).
#
# Usage: tools/bench/memory-race.sh [OUTDIR]      (default bench/memory-race)
# Environment (defaults in brackets):
#   RACE_GUEST [busybox]    busybox = the busybox initramfs (tools/vm/build-initramfs.sh);
#                            systemd = the Debian systemd root (tools/vm/build-systemd-root.sh)
#                            with the peers' packages (RACE_SYSTEMD_PACKAGES [systemd-oomd,nohang,
#                            earlyoom]), where the tree is
#                            made of systemd units (tools/bench/memory-race-systemd.sh)
#   RACE_RUNS [12]          runs per contender and mode
#   RACE_CONTENDERS ["evictd evictd-nobpf poll-10s poll-1s earlyoom"]; the systemd guest adds
#                            nohang, nohang-at-x, systemd-oomd, systemd-oomd-1s (see the guest
#                            script for their configuration)
#   RACE_MODES ["256 max plateau"]  hog rates in MiB/s; max = as fast as it can (under TCG
#                            about 350-400 MiB/s: a 1024 MiB/s mode would be the same as max);
#                            max2 = two hog threads as fast as they can (a hog on each vCPU);
#                            plateau = 256 MiB/s up to RACE_PLATEAU_DEPTH_MI below the threshold,
#                            then hold (no kernel OOM possible: pure detection latency)
#   RACE_CELL_RUNS [""]     per-cell run counts instead of RACE_RUNS: "CONTENDER:MODE:N ..."
#   RACE_THRESHOLD_MI [250] the hard threshold memory.available<XMi
#   RACE_PLATEAU_DEPTH_MI [32]  RACE_SAMPLE_US [1000]
#   RACE_TIMEOUT [90 + 8 s per run, + 18 s per plateau run] (qemu wall-clock limit, seconds)
# Writes OUTDIR/runs.tsv (one line per run), OUTDIR/summary.tsv (per contender and mode),
# OUTDIR/summary.md (the table), OUTDIR/commands.txt, the guest's logs, and the plot via
# tools/bench/plot.sh into OUTDIR.png. Needs root (initramfs, QEMU).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
OUTDIR=${1:-bench/memory-race}
GUEST=${RACE_GUEST:-busybox}
# the peers' Debian packages in the systemd guest's root (a root of its own in the cache: the
# key is a hash of the package list, so the tests' systemd root is not touched)
RACE_SYSTEMD_PACKAGES=${RACE_SYSTEMD_PACKAGES:-systemd-oomd,nohang,earlyoom}
RUNS=${RACE_RUNS:-12}
CONTENDERS=${RACE_CONTENDERS:-"evictd evictd-nobpf poll-10s poll-1s earlyoom"}
MODES=${RACE_MODES:-"256 max plateau"}
THRESHOLD_MI=${RACE_THRESHOLD_MI:-250}
PLATEAU_DEPTH_MI=${RACE_PLATEAU_DEPTH_MI:-32}
SAMPLE_US=${RACE_SAMPLE_US:-1000}
SLOT_BASE_MIB=64

die() { echo "memory-race: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (builds an initramfs, boots QEMU)"
[ -x "$BUILD/evictd" ] || make -s "$BUILD/evictd"
case $GUEST in
	busybox)
		EARLYOOM=$(command -v earlyoom || true)
		[ -n "$EARLYOOM" ] || die "earlyoom is not installed (tools/install-deps.sh bench)" ;;
	systemd) ;;	# the peers are Debian packages in the guest's root
	*) die "RACE_GUEST must be busybox or systemd, not '$GUEST'" ;;
esac

mkdir -p "$BUILD/bench" "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
racekit=$BUILD/bench/racekit
if [ ! -x "$racekit" ] || [ tools/bench/racekit.c -nt "$racekit" ]; then
	${CC:-gcc} -O2 -static -std=gnu11 -Wall -Wextra -Werror tools/bench/racekit.c -o "$racekit"
fi

work=$(mktemp -d /tmp/evictd-race.XXXXXX)
trap 'rm -rf "$work"' EXIT
n_total=0
n_plateau=0
CELL_RUNS=${RACE_CELL_RUNS:-}
for c in $CONTENDERS; do for m in $MODES; do
	n=$RUNS
	for cell in $CELL_RUNS; do case $cell in "$c:$m:"*) n=${cell##*:} ;; esac; done
	n_total=$((n_total + n))
	[ "$m" != plateau ] || n_plateau=$((n_plateau + n))
done; done
TIMEOUT=${RACE_TIMEOUT:-$((90 + 8 * n_total + 18 * n_plateau))}
cat >"$work/race.conf" <<EOF
GUEST=$GUEST
CONTENDERS="$CONTENDERS"
MODES="$MODES"
RUNS=$RUNS
CELL_RUNS="$CELL_RUNS"
THRESHOLD_MI=$THRESHOLD_MI
PLATEAU_DEPTH_MI=$PLATEAU_DEPTH_MI
SAMPLE_US=$SAMPLE_US
SLOT_BASE_MIB=$SLOT_BASE_MIB
SETTLE_MI=24
RACE_MAX_S=30
PLATEAU_MAX_S=16
TRACE_SYSCALLS=${RACE_TRACE_SYSCALLS:-0}
EOF

kernel=$(tools/vm/fetch-kernel.sh 2>"$work/fetch.log") || die "fetch-kernel.sh failed: $(tail -n 3 "$work/fetch.log")"
if [ "$GUEST" = busybox ]; then
	tools/vm/build-initramfs.sh "$work/initramfs.cpio.gz" --init tools/bench/memory-race-guest.sh \
		--add "$racekit:/usr/bin/racekit" --add "$BUILD/evictd:/usr/bin/evictd" \
		--add "$EARLYOOM:/usr/bin/earlyoom" --add "$work/race.conf:/etc/race.conf" \
		--modules virtio_pci,virtio_blk >"$work/build.log" 2>&1 \
		|| die "build-initramfs.sh failed: $(tail -n 5 "$work/build.log")"
else
	# The race runs as a oneshot service once multi-user.target is up, on ttyS0, then powers off
	# (as tests/vm/run.sh runs a systemd scenario). The guest script runs under busybox sh, as
	# in the busybox guest.
	cat >"$work/run-race.sh" <<'EOF'
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
echo "EVICTD-VM: systemd ready uptime=$(cut -d' ' -f1 /proc/uptime)"
cd /
/bin/busybox sh /usr/lib/evictd-vm/race.sh </dev/null
echo "EVICTD-VM: scenario exit=$? uptime=$(cut -d' ' -f1 /proc/uptime)"
systemctl --no-block poweroff
EOF
	cat >"$work/evictd-race.service" <<'EOF'
[Unit]
Description=evictd memory race (tools/bench/memory-race.sh)
After=multi-user.target

[Service]
Type=oneshot
StandardInput=null
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStart=/bin/sh /usr/lib/evictd-vm/run-race.sh
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
	tools/vm/build-systemd-root.sh "$work/initramfs.cpio.gz" --packages "$RACE_SYSTEMD_PACKAGES" \
		--add tools/bench/memory-race-guest.sh:/usr/lib/evictd-vm/race.sh \
		--add "$work/run-race.sh:/usr/lib/evictd-vm/run-race.sh" --unit "$work/evictd-race.service" \
		--add "$racekit:/usr/bin/racekit" --add "$BUILD/evictd:/usr/bin/evictd" \
		--add "$work/race.conf:/etc/race.conf" \
		--modules virtio_pci,virtio_blk >"$work/build.log" 2>&1 \
		|| die "build-systemd-root.sh failed: $(tail -n 5 "$work/build.log")"
fi
disk=$work/disk.img
rm -f "$disk"
truncate -s $(( (SLOT_BASE_MIB + n_total + 8) ))M "$disk"

echo "# memory-race ($GUEST guest): $n_total runs ($RUNS per contender and mode${CELL_RUNS:+, except $CELL_RUNS}), contenders: $CONTENDERS; modes: $MODES; threshold memory.available<${THRESHOLD_MI}Mi; host load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
rc=0
tools/vm/run-guest.sh --kernel "$kernel" --initramfs "$work/initramfs.cpio.gz" --mem 1024M --smp 2 \
	--timeout "$TIMEOUT" --disk "$disk" --log "$work/serial.raw" >"$work/qemu.log" 2>&1 || rc=$?
tr -d '\r' <"$work/serial.raw" >"$OUTDIR/serial.log"
echo "# memory-race: guest ran $(( $(date +%s) - t0 )) s (qemu exit $rc)"
grep -q 'EVICTD-VM: PASS race-done' "$OUTDIR/serial.log" \
	|| die "the guest did not finish (qemu exit $rc); see $OUTDIR/serial.log: $(tail -n 5 "$OUTDIR/serial.log" | tr '\n' '|')"

rm -rf "$OUTDIR/guest" "$OUTDIR/series"
mkdir -p "$OUTDIR/guest" "$OUTDIR/series"
tar -xf "$disk" -C "$OUTDIR/guest" || die "cannot read the results tar from the guest disk"
cp "$OUTDIR/guest/commands.txt" "$OUTDIR/commands.txt"
# The per-run series, written by the sampler at SLOT_BASE_MIB + slot MiB.
for slot in $(sed -n 's/^run .* slot=\([0-9]*\) .*/\1/p' "$OUTDIR/guest/runs.txt"); do
	dd if="$disk" bs=1M skip=$((SLOT_BASE_MIB + slot)) count=1 status=none | tr -d '\0' >"$OUTDIR/series/$slot.txt"
done

tools/bench/race-analyze.sh "$OUTDIR"
