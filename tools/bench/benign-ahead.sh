#!/usr/bin/env bash
# make bench part benign-ahead (doc/DESIGN.md "Seeing ahead"): does --act-ahead kill loads that
# only come near a hard threshold? tests/vm/scenarios/25-benign-ahead.sh booted BENIGN_RUNS times
# (10): with --act-ahead=500ms and memory.available 350 MiB below rest as the hard threshold, a
# page-cache stream (900 MiB file read), an allocate-free sawtooth (3 x 250 MiB at 100 MiB/s, its
# peak ~100 MiB above the threshold) and a build (4 x 60 short processes of 16 MiB). Per phase:
# the kills over all runs (want 0) and the closest estimate each run reached (least, median).
# Then the proof that the scenario can fail: BENIGN_PROOF_RUNS (2) boots with
# --act-ahead=BENIGN_PROOF_ACT (3s, given as evictd_vm.act_ahead= on the kernel command line,
# EVICTD_VM_APPEND of tests/vm/run.sh): the sawtooth, ~1 s from the threshold at its rate, is
# within 3 s and must be killed ahead; a scenario that cannot fail proves nothing.
# Usage: tools/bench/benign-ahead.sh OUT_DIR  (each run's serial log kept there)
# Environment: BENIGN_RUNS (10), BENIGN_PROOF_RUNS (2), BENIGN_PROOF_ACT (3s), EVICTD_VM_KERNEL
# (the guest kernel, tests/vm/run.sh --kernel).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/benign-ahead}
runs=${BENIGN_RUNS:-10}
proof_runs=${BENIGN_PROOF_RUNS:-2}
proof_act=${BENIGN_PROOF_ACT:-3s}
kern=${EVICTD_VM_KERNEL:-6.1}
vmout=build/vm${EVICTD_VM_KERNEL:+/$EVICTD_VM_KERNEL}
mkdir -p "$out"
rm -f "$out"/run-*.log "$out"/proof-*.log "$out"/*.out
failed=0
boot() {	# boot NAME [APPEND]: one boot of the scenario, its serial log as OUT/NAME.log
	if ! EVICTD_VM_APPEND=${2:-} nice -n 10 bash tests/vm/run.sh --jobs 1 25-benign-ahead >"$out/$1.out" 2>&1; then
		return 1
	fi
}
for run in $(seq 1 "$runs"); do
	boot "run-$run" || failed=$((failed + 1))
	tr -d '\r' <"$vmout/25-benign-ahead/serial.log" >"$out/run-$run.log" 2>/dev/null
done
# closest: PHASE 0.52s (8 of 40 samples sure); least memory.available ...; kills K, decisions ahead A
summary() {	# summary GLOB LABEL
	local phase lines n kills ahead closest m least median
	for phase in stream sawtooth build; do
		lines=$(cat $1 2>/dev/null | grep -a "INFO closest: $phase ")
		n=$(grep -c . <<<"$lines")
		kills=$(sed -nE 's/.*; kills ([0-9]+),.*/\1/p' <<<"$lines" | awk '{ k += $1 } END { print k + 0 }')
		ahead=$(sed -nE 's/.*decisions ahead ([0-9]+).*/\1/p' <<<"$lines" | awk '{ k += $1 } END { print k + 0 }')
		closest=$(sed -nE "s/.*closest: $phase ([0-9.]+)s .*/\\1/p" <<<"$lines" | sort -g)
		m=$(grep -c . <<<"$closest")
		least="" median=""
		if [ "$m" -gt 0 ]; then
			least=$(head -n1 <<<"$closest")
			median=$(sed -n "$(( (m + 1) / 2 ))p" <<<"$closest")	# the lower median
		fi
		low=$(sed -nE 's/.*, ([0-9-]+) MiB above the threshold.*/\1/p' <<<"$lines" | sort -g | head -n1)
		echo "$2 $phase: runs $n, kills $kills, decisions ahead $ahead, closest estimate least ${least:-none}${least:+ s}, median ${median:-none}${median:+ s} ($m runs with one), least headroom ${low:-?} MiB above the threshold"
	done
}
summary "$out/run-*.log" "benign-ahead[$kern]"
echo "benign-ahead[$kern] scenario: $((runs - failed)) of $runs boots passed (markers: zero kills per phase, no OOM kill, victim alive)"
[ "$proof_runs" -gt 0 ] || exit 0
pfailed=0
for run in $(seq 1 "$proof_runs"); do
	boot "proof-$run" "evictd_vm.act_ahead=$proof_act" || pfailed=$((pfailed + 1))
	tr -d '\r' <"$vmout/25-benign-ahead/serial.log" >"$out/proof-$run.log" 2>/dev/null
done
summary "$out/proof-*.log" "benign-ahead-proof[$kern,--act-ahead=$proof_act]"
echo "benign-ahead-proof[$kern,--act-ahead=$proof_act] scenario: $pfailed of $proof_runs boots failed (want all: the sawtooth is killed ahead)"
