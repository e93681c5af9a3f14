#!/usr/bin/env bash
# memory-race.sh - evictd against its peers in a real 1 GiB cgroup-v2 guest (QEMU TCG, the
# Debian kernel of tools/vm): who stops a runaway BestEffort pod first, how fast, and how far
# memory.available falls meanwhile. One guest boot runs every contender in turn on the same
# hog (see tools/bench/memory-race-guest.sh for what happens inside).
#
# Usage: tools/bench/memory-race.sh [OUTDIR]      (default bench/memory-race)
# Environment (defaults in brackets):
#   RACE_RUNS [12]          runs per contender and mode
#   RACE_CONTENDERS ["evictd evictd-nobpf poll-10s poll-1s earlyoom"]
#   RACE_MODES ["256 max plateau"]  hog rates in MiB/s; max = as fast as it can (under TCG
#                            about 350-400 MiB/s: a 1024 MiB/s mode would be the same as max);
#                            plateau = 256 MiB/s up to RACE_PLATEAU_DEPTH_MI below the threshold,
#                            then hold (no kernel OOM possible: pure detection latency)
#   RACE_THRESHOLD_MI [250] the hard threshold memory.available<XMi
#   RACE_PLATEAU_DEPTH_MI [32]  RACE_SAMPLE_US [1000]
#   RACE_TIMEOUT [60 + 8 s per run] (qemu wall-clock limit, seconds)
# Writes OUTDIR/runs.tsv (one line per run), OUTDIR/summary.tsv (per contender and mode),
# OUTDIR/summary.md (the table), OUTDIR/commands.txt, the guest's logs, and the plot via
# tools/bench/plot.sh into OUTDIR/../memory-race.png. Needs root (initramfs, QEMU).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
OUTDIR=${1:-bench/memory-race}
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
EARLYOOM=$(command -v earlyoom || true)
[ -n "$EARLYOOM" ] || die "earlyoom is not installed (tools/install-deps.sh bench)"

mkdir -p "$BUILD/bench" "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
racekit=$BUILD/bench/racekit
if [ ! -x "$racekit" ] || [ tools/bench/racekit.c -nt "$racekit" ]; then
	${CC:-gcc} -O2 -static -std=gnu11 -Wall -Wextra -Werror tools/bench/racekit.c -o "$racekit"
fi

work=$(mktemp -d /tmp/evictd-race.XXXXXX)
trap 'rm -rf "$work"' EXIT
n_total=0
for _ in $CONTENDERS; do for _ in $MODES; do n_total=$((n_total + RUNS)); done; done
TIMEOUT=${RACE_TIMEOUT:-$((60 + 8 * n_total))}
cat >"$work/race.conf" <<EOF
CONTENDERS="$CONTENDERS"
MODES="$MODES"
RUNS=$RUNS
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
tools/vm/build-initramfs.sh "$work/initramfs.cpio.gz" --init tools/bench/memory-race-guest.sh \
	--add "$racekit:/usr/bin/racekit" --add "$BUILD/evictd:/usr/bin/evictd" \
	--add "$EARLYOOM:/usr/bin/earlyoom" --add "$work/race.conf:/etc/race.conf" \
	--modules virtio_pci,virtio_blk >"$work/build.log" 2>&1 \
	|| die "build-initramfs.sh failed: $(tail -n 5 "$work/build.log")"
disk=$work/disk.img
rm -f "$disk"
truncate -s $(( (SLOT_BASE_MIB + n_total + 8) ))M "$disk"

echo "# memory-race: $n_total runs ($RUNS per contender and mode), contenders: $CONTENDERS; modes: $MODES; threshold memory.available<${THRESHOLD_MI}Mi; host load $(cut -d' ' -f1-3 /proc/loadavg)"
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
