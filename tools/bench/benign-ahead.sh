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
#        tools/bench/benign-ahead.sh --summary OUT_DIR  (the lines again from the kept logs)
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
summary_only=0
if [ "${1:-}" = --summary ]; then summary_only=1; out=${2:-bench/benign-ahead}; fi
failed=0
boot() {	# boot NAME [APPEND]: one boot of the scenario, its serial log as OUT/NAME.log
	if ! EVICTD_VM_APPEND=${2:-} nice -n 10 bash tests/vm/run.sh --jobs 1 25-benign-ahead >"$out/$1.out" 2>&1; then
		return 1
	fi
}
if [ $summary_only = 0 ]; then
mkdir -p "$out"
rm -f "$out"/run-*.log "$out"/proof-*.log "$out"/*.out
for run in $(seq 1 "$runs"); do
	boot "run-$run" || failed=$((failed + 1))
	tr -d '\r' <"$vmout/25-benign-ahead/serial.log" >"$out/run-$run.log" 2>/dev/null
done
for run in $(seq 1 "$proof_runs"); do
	boot "proof-$run" "evictd_vm.act_ahead=$proof_act"
	tr -d '\r' <"$vmout/25-benign-ahead/serial.log" >"$out/proof-$run.log" 2>/dev/null
done
fi
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
		per=$(for f in $(ls -v $1 2>/dev/null); do v=$(grep -a "INFO closest: $phase " "$f" 2>/dev/null | sed -nE "s/.*closest: $phase ([0-9.]+s|none) .*/\1/p"); printf '%s ' "${v:-?}"; done)
		echo "$2 $phase: runs $n, kills $kills, decisions ahead $ahead, closest estimate least ${least:-none}${least:+ s}, median ${median:-none}${median:+ s} ($m runs with one), least headroom ${low:-?} MiB above the threshold; per boot: ${per% }"
	done
}
# boots: from the kept logs (a pass has no FAIL line and says scenario exit=0)
verdicts() {	# verdicts GLOB: "P F": boots passed, failed; the FAIL markers seen, with counts
	local f p=0 n=0
	for f in $1; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		grep -aq 'EVICTD-VM: FAIL' "$f" || ! grep -aq 'scenario exit=0' "$f" || p=$((p + 1))
	done
	printf '%d of %d boots passed' "$p" "$n"
	cat $1 2>/dev/null | sed -nE 's/^EVICTD-VM: FAIL ([a-z-]+):.*/\1/p' | sort | uniq -c | awk '{ printf "%s %s x%d", NR == 1 ? "; failed markers:" : ",", $2, $1 }'
}
summary "$out/run-*.log" "benign-ahead[$kern]"
guest_s() { for f in $(ls -v $1 2>/dev/null); do sed -nE 's/.*qemu ([0-9.]+)s;.*/\1/p' "${f%.log}.out" 2>/dev/null; done | tr '\n' ' ' | sed 's/ $//'; }
echo "benign-ahead[$kern] scenario: $(verdicts "$out/run-*.log") (markers: zero kills per phase, a sure estimate in the sawtooth, no OOM kill, victim alive); qemu seconds per boot (~50 on a quiet host; more = a starved guest): $(guest_s "$out/run-*.log")"
ls "$out"/proof-*.log >/dev/null 2>&1 || exit 0
summary "$out/proof-*.log" "benign-ahead-proof[$kern,--act-ahead=$proof_act]"
killed=0 np=0
for f in "$out"/proof-*.log; do
	np=$((np + 1))
	grep -aq 'INFO closest: sawtooth .*; kills [1-9]' "$f" && killed=$((killed + 1))
done
echo "benign-ahead-proof[$kern,--act-ahead=$proof_act] the sawtooth killed ahead in $killed of $np boots (want all: the scenario can fail); $(verdicts "$out/proof-*.log"); qemu seconds per boot: $(guest_s "$out/proof-*.log")"
