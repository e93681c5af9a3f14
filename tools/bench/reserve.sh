#!/usr/bin/env bash
# reserve.sh - make bench part reserve: the least headroom that wins. A hard threshold
# memory.available<X is memory a node keeps back from its pods; it must cover what a runaway
# allocation takes between the crossing and the kill, or the kernel OOM killer acts first
# (doc/DESIGN.md §1 and "Seeing ahead": the kubelet's own default is 100Mi, a guess). This finds,
# per hog rate and contender, the smallest X (MiB, from RESERVE_LEVELS ascending) at which the
# contender stops a BestEffort hog before the kernel OOM killer in every one of RESERVE_RUNS runs,
# in one guest boot per kernel (QEMU TCG, 1 GiB, 2 vCPUs, no swap; the memory race's guest,
# tools/bench/memory-race-guest.sh, with RESERVE_LEVELS set: it loops the search itself and prints
# a RESERVE-RUN line per run, a RESERVE-LEVEL line per level and a RESERVE-LEAST line per cell).
# Beside it, the physical floor: the kernel's min watermark (sum of "min" over /proc/zoneinfo in
# the guest: below it allocations enter direct reclaim and then the OOM killer) + the achieved
# rate x evictd's measured detection-to-kill latency (its own "kill: detection path" log line:
# the BPF wake record -> the cgroup.kill write, median over its winning runs at that rate); and the
# same floor on memory.available's scale, from the memory.available sampled when the kernel OOM
# killer chose (the runs it won): X is on that scale, the watermark is free memory.
#
# Contenders: evictd (defaults), evictd-nobpf (--no-bpf; with the guard off that is the plain
# 10 s housekeeping poller), evictd-nobpf-poll (--no-bpf with --oom-guard=1Ki: the guard on
# keeps the adaptive 100 ms memory poll that --no-bpf runs by default; at MemAvailable < 1 KiB,
# as earlyoom's -M 1, it can act before X only where X is below the rest offset, and the table
# of what the node came down to shows it), evictd-ahead (--act-ahead=1s),
# evictd-rt (--realtime-priority=1, the loop SCHED_FIFO as the shipped unit and DaemonSet), the
# others with --oom-guard=off (the guard, MemAvailable<10%, is a second reserve of ~100 MiB that would
# win for them below it: the threshold must be the only reserve measured); earlyoom-p = earlyoom
# 1.7 at its best: -M K,K (SIGKILL at once at the MemAvailable equal to memory.available<X at
# rest), -s 100,100 (no swap), -r 0, -p (niceness -20).
# Rates: RESERVE_MODES in MiB/s, max = as fast as the hog can, max2 = two hog threads as fast as
# they can (one per vCPU: the fastest this guest allocates, and no CPU left idle for the
# contender); the achieved rate is reported (under TCG one thread reaches ~350-400 MiB/s, so 1024
# and 2048 are requests it cannot meet).
#
# Usage: tools/bench/reserve.sh [OUTDIR]   (default bench/reserve; needs root)
# Environment: RESERVE_RUNS (10), RESERVE_LEVELS ("90 100 110 125 150 175 200 250 300 400 500
#   600": in the 1 GiB guest memory.available is still 75-121 MiB when the kernel OOM killer
#   chooses, the kernel's own memory being outside the root memory.stat's anon + file, so lower
#   levels never cross and only cost runs; --no-bpf needs the high ones),
#   RESERVE_CONTENDERS ("evictd evictd-rt evictd-ahead evictd-nobpf evictd-nobpf-poll
#   earlyoom-p"), RESERVE_MODES
#   ("max max2": the fastest one and two hog threads reach under TCG; 1024 or 2048 would be
#   requests the hog cannot meet), RESERVE_TIMEOUT (3600 s, the qemu limit), EVICTD_VM_KERNEL
#   (6.1, the default; 6.12);
#   --table OUTDIR prints the results.md section from OUTDIR's serial log, runs nothing;
#   --targets OUTDIR its rows of the results' targets table.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}

table() {	# table OUTDIR [targets]: the section for bench/results.md, or its rows of the targets
	local dir=$1 log=$1/serial.log
	[ -f "$log" ] || { echo "reserve: no $log" >&2; return 1; }
	awk -v targets="${2:-}" '
	function kv(line,   i, n, a) { delete f; n = split(line, a, " "); for (i = 1; i <= n; i++) { j = index(a[i], "="); if (j) f[substr(a[i], 1, j - 1)] = substr(a[i], j + 1) } }
	function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
	function med(a, n) { if (!n) return "NA"; sortn(a, n); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	# "median; least" of the values v[kk, 1..n] that are not NA, in MiB
	function medleast(v, kk, n,   a, i, k) { k = 0; for (i = 1; i <= n; i++) if (v[kk, i] != "NA") a[++k] = v[kk, i]; if (!k) return "NA"; sortn(a, k); return sprintf("%.0f; %.0f", med(a, k), a[1]) }
	function medof(v, kk, n,   a, i, k) { k = 0; for (i = 1; i <= n; i++) if (v[kk, i] != "NA") a[++k] = v[kk, i]; return k ? med(a, k) : "NA" }
	/^RESERVE-GUEST: / { kv($0); minmib = f["min_pages"] * f["pagesize"] / 1048576; kern = f["kernel"]; memtotal = f["memtotal"]; off = f["offset"] }
	/^RESERVE-RUN: / {
		kv($0); c = f["c"]; m = f["mode"]; thr = f["thr_mi"] * 1048576
		if (!((m) in seenm)) { seenm[m] = 1; modes[++nm] = m }
		if (!((c) in seenc)) { seenc[c] = 1; cons[++nc] = c }
		ct = f["c_t"] + 0; ot = f["oom_t"] + 0; pop = f["t_pop"] + 0; tc = f["t_cross"] + 0
		won = (ct > 0 && (ot < 0 || ct < ot))
		# achieved rate: from the pod populated to memory.available crossing X
		if (tc > pop && pop > 0) { r = (f["avail_first"] - thr) / 1048576 / ((tc - pop) / 1e9); rates[m, ++nr[m]] = r }
		if (won && f["own_write"] + 0 > 0 && f["own_first_record"] + 0 > 0) { own[c, m, ++no[c, m]] = (f["own_write"] - f["own_first_record"]) / 1e6 }
		if (won && tc > 0) { det[c, m, ++nd[c, m]] = (ct - tc) / 1e6 }
		if (!won && ot > 0) { oomavail[++noa] = f["min_avail"] / 1048576; if (("min_memfree" in f) && f["min_memfree"] + 0 > 0) oomfree[++nof] = f["min_memfree"] / 1048576 }
		# the runs won, per level: what the node came down to (memory.available, MemFree) and
		# the free memory at the crossing of X (the reserve X keeps, on the watermark'"'"'s scale)
		if (won) {
			kk = c SUBSEP m SUBSEP f["thr_mi"]
			wa[kk, ++nw[kk]] = f["min_avail"] / 1048576
			wf[kk, nw[kk]] = ("min_memfree" in f) && f["min_memfree"] + 0 > 0 ? f["min_memfree"] / 1048576 : "NA"
			wb[kk, nw[kk]] = ("memfree_below" in f) && f["memfree_below"] + 0 > 0 ? f["memfree_below"] / 1048576 : "NA"
		}
		nruns++
	}
	/^RESERVE-LEVEL: / { kv($0); lv[f["c"], f["mode"]] = lv[f["c"], f["mode"]] sprintf("%s%s:%s/%s", lv[f["c"], f["mode"]] == "" ? "" : " ", f["thr_mi"], f["won"], f["won"] + 0 >= f["of"] + 0 ? f["won"] : f["won"] + 1) }
	/^RESERVE-LEAST: / { kv($0); least[f["c"], f["mode"]] = f["least_mi"]; N = f["runs"] }
	/^RESERVE-LEVEL: / && N == "" { N = f["of"] }
	END {
		# per rate: the achieved rate, evictd'"'"'s own detection, the floor, evictd'"'"'s least X and the
		# free memory at its crossing (median over the runs won there)
		for (j = 1; j <= nm; j++) {
			m = modes[j]; delete a; for (k = 1; k <= nr[m]; k++) a[k] = rates[m, k]; RM[m] = med(a, nr[m])
			delete a; for (k = 1; k <= no["evictd", m]; k++) a[k] = own["evictd", m, k]; LAT[m] = med(a, no["evictd", m])
			FLOOR[m] = (LAT[m] != "NA" && RM[m] != "NA") ? minmib + RM[m] * LAT[m] / 1000 : "NA"
			E[m] = (least["evictd", m] == "" || least["evictd", m] == "none") ? "" : least["evictd", m]
			FB[m] = E[m] != "" ? medof(wb, "evictd" SUBSEP m SUBSEP E[m], nw["evictd" SUBSEP m SUBSEP E[m]]) : "NA"
		}
		if (targets != "") {
			# per kernel: evictd (defaults) against every peer (a contender not named evictd*),
			# and its reserve against the floor, each rate
			split(kern, kp, "."); kname = kp[1] "." kp[2]
			below = ""; okb = 1; within = ""; okw = 1; okf = 1
			for (j = 1; j <= nm; j++) {
				m = modes[j]; e = E[m]; floor = FLOOR[m]; fb = FB[m]
				for (i = 1; i <= nc; i++) {
					if (cons[i] ~ /^evictd/) continue
					p = least[cons[i], m]
					below = below sprintf("%s%s: evictd %s, %s %s", below == "" ? "" : "; ", m, e == "" ? "none" : e, cons[i], p == "" || p == "none" ? "none" : p)
					if (e == "" || (p != "" && p != "none" && e + 0 >= p + 0)) okb = 0
				}
				if (floor == "NA" || e == "") { okw = 0; okf = 0; within = within sprintf("%s%s: NA", within == "" ? "" : "; ", m); continue }
				within = within sprintf("%s%s: X %s MiB / floor %.1f = %.1fx, free memory at the crossing %s", within == "" ? "" : "; ", m, e, floor, e / floor, fb == "NA" ? "NA" : sprintf("%.0f MiB = %.2fx", fb, fb / floor))
				if (e / floor > 2) okw = 0
				if (fb == "NA" || fb / floor > 2) okf = 0
			}
			printf "| (reserve, %s) evictd'"'"'s least winning memory.available<X below every peer'"'"'s, at every rate | %s | %s |\n", kname, below, okb ? "met" : "**not met**"
			printf "| (reserve, %s) evictd'"'"'s reserve within 2x of the floor (min watermark + rate x detection) | %s | X on memory.available'"'"'s scale: %s; in free memory: %s |\n", kname, within, okw ? "met" : "**not met**", okf ? "met" : "**not met**"
			exit
		}
		printf "Guest kernel %s, MemTotal %.0f MiB, no swap; min watermark (sum of min over /proc/zoneinfo) %.1f MiB; memory.available - MemAvailable at rest %.0f MiB; %d runs in all, N = %s per level won; when the kernel OOM killer chose (the lowest sampled, %d runs it won): memory.available median %s MiB, MemFree median %s MiB.\n\n", kern, memtotal / 1048576, minmib, off / 1048576, nruns, N, noa, noa ? sprintf("%.0f (%.0f-%.0f)", med(oomavail, noa), oomavail[1], oomavail[noa]) : "NA", nof ? sprintf("%.0f (%.0f-%.0f)", med(oomfree, nof), oomfree[1], oomfree[nof]) : "NA"
		oa = noa ? med(oomavail, noa) : "NA"
		printf "| hog rate (achieved MiB/s, median) | evictd detection-to-kill (own log: wake record -> cgroup.kill, median ms) | physical floor: min watermark + rate x latency (MiB) | the same floor on memory.available'"'"'s scale: memory.available at the kernel'"'"'s OOM choice + rate x latency (MiB) |"
		for (i = 1; i <= nc; i++) printf " %s least winning X (MiB) |", cons[i]
		printf " evictd / floor | evictd / floor on memory.available'"'"'s scale | evictd / floor in free memory (MemFree at the crossing of its least X, median) |\n|---|---|---|---|"
		for (i = 1; i <= nc; i++) printf "---|"
		printf "---|---|---|\n"
		for (j = 1; j <= nm; j++) {
			m = modes[j]; rm = RM[m]; lat = LAT[m]; floor = FLOOR[m]; e = E[m]; fb = FB[m]
			floora = (floor != "NA" && oa != "NA") ? oa + rm * lat / 1000 : "NA"
			printf "| %s (%s) | %s | %s | %s |", (m == "max" ? "as fast as it can" : m == "max2" ? "two hog threads as fast as they can" : m " MiB/s requested"), rm == "NA" ? "NA" : sprintf("%.0f", rm), lat == "NA" ? "NA" : sprintf("%.2f", lat), floor == "NA" ? "NA" : sprintf("%.1f", floor), floora == "NA" ? "NA" : sprintf("%.1f", floora)
			for (i = 1; i <= nc; i++) { l = least[cons[i], m]; printf " %s |", l == "" ? (((cons[i], m) in lv) ? "not finished" : "not run") : (l == "none" ? "> highest level" : l) }
			printf " %s | %s | %s |\n", (floor != "NA" && e != "") ? sprintf("%.1fx", e / floor) : "NA", (floora != "NA" && e != "") ? sprintf("%.2fx", e / floora) : "NA", (floor != "NA" && fb != "NA") ? sprintf("%.2fx (%.0f MiB)", fb / floor, fb) : "NA"
		}
		printf "\nWhat each contender let the node come down to, in the runs won at its least winning X (MiB, median; least over those runs): the reserve as the node sees it, comparable across contenders whatever their threshold'"'"'s scale (earlyoom'"'"'s -M is MemAvailable):\n\n"
		printf "| contender | rate | least winning X | memory.available came down to | MemFree came down to | MemFree at the crossing of X |\n|---|---|---|---|---|---|\n"
		for (i = 1; i <= nc; i++) for (j = 1; j <= nm; j++) {
			c = cons[i]; m = modes[j]; l = least[c, m]
			if (l == "" || l == "none") continue
			kk = c SUBSEP m SUBSEP l
			printf "| %s | %s | %s | %s | %s | %s |\n", c, m, l, medleast(wa, kk, nw[kk]), medleast(wf, kk, nw[kk]), medleast(wb, kk, nw[kk])
		}
		printf "\nPer cell, each level tried (X MiB: runs won / runs done; a level ends at its first loss) and the crossing -> SIGKILL median (ftrace, the runs won):\n\n"
		for (i = 1; i <= nc; i++) for (j = 1; j <= nm; j++) {
			c = cons[i]; m = modes[j]; if (!((c, m) in lv)) continue
			delete a; for (k = 1; k <= nd[c, m]; k++) a[k] = det[c, m, k]; d = med(a, nd[c, m])
			printf "- %s, %s: %s; detection %s ms\n", c, m, lv[c, m], d == "NA" ? "NA" : sprintf("%.2f", d)
		}
	}' "$log"
}
if [ "${1:-}" = --table ]; then table "${2:-bench/reserve}"; exit; fi
if [ "${1:-}" = --targets ]; then table "${2:-bench/reserve}" targets; exit; fi
# The rest in one compound command: bash reads it whole before running it, so an edit of this
# file while a guest runs (tens of minutes) cannot change what runs after the guest.
{

OUTDIR=${1:-bench/reserve}
RUNS=${RESERVE_RUNS:-10}
LEVELS=${RESERVE_LEVELS:-"90 100 110 125 150 175 200 250 300 400 500 600"}
CONTENDERS=${RESERVE_CONTENDERS:-"evictd evictd-rt evictd-ahead evictd-nobpf evictd-nobpf-poll earlyoom-p"}
MODES=${RESERVE_MODES:-"max max2"}
TIMEOUT=${RESERVE_TIMEOUT:-3600}
die() { echo "reserve: $*" >&2; exit 1; }
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
work=$(mktemp -d /tmp/evictd-reserve.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The race guest's configuration (tools/bench/memory-race.sh's keys), the search's on top.
cat >"$work/race.conf" <<CONF
GUEST=busybox
CONTENDERS="$CONTENDERS"
MODES="$MODES"
RUNS=$RUNS
CELL_RUNS=""
THRESHOLD_MI=${LEVELS%% *}
PLATEAU_DEPTH_MI=32
SAMPLE_US=1000
SLOT_BASE_MIB=64
SETTLE_MI=24
RACE_MAX_S=30
PLATEAU_MAX_S=16
TRACE_SYSCALLS=0
RESERVE_LEVELS="$LEVELS"
EVICTD_EXTRA="--oom-guard=off"
ACT_AHEAD=1s
CONF
kernel=$(tools/vm/fetch-kernel.sh 2>"$work/fetch.log") || die "fetch-kernel.sh failed: $(tail -n 3 "$work/fetch.log")"
tools/vm/build-initramfs.sh "$work/initramfs.cpio.gz" --init tools/bench/memory-race-guest.sh \
	--add "$racekit:/usr/bin/racekit" --add "$BUILD/evictd:/usr/bin/evictd" \
	--add "$EARLYOOM:/usr/bin/earlyoom" --add "$work/race.conf:/etc/race.conf" \
	--modules virtio_pci,virtio_blk >"$work/build.log" 2>&1 \
	|| die "build-initramfs.sh failed: $(tail -n 5 "$work/build.log")"
truncate -s 256M "$work/disk.img"
echo "# reserve: kernel ${EVICTD_VM_KERNEL:-default}, contenders $CONTENDERS; modes $MODES; levels $LEVELS; N=$RUNS; host load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
rc=0
nice -n 10 tools/vm/run-guest.sh --kernel "$kernel" --initramfs "$work/initramfs.cpio.gz" --mem 1024M --smp 2 \
	--timeout "$TIMEOUT" --disk "$work/disk.img" --log "$work/serial.raw" >"$work/qemu.log" 2>&1 || rc=$?
tr -d '\r' <"$work/serial.raw" >"$OUTDIR/serial.log"
echo "# reserve: guest ran $(( $(date +%s) - t0 )) s (qemu exit $rc)$(grep -q 'EVICTD-VM: PASS race-done' "$OUTDIR/serial.log" || echo '; the guest did NOT finish: the cells below are those it reached')"
grep -a '^RESERVE-LEAST: ' "$OUTDIR/serial.log" | sed 's/^/reserve /'
table "$OUTDIR"
exit
}
