#!/usr/bin/env bash
# host-race.sh - evictd's detection latency on this machine (no emulation): threshold crossing
# of memory.available -> cgroup.kill, with a hog in a standalone workload cgroup.
#
# Usage: tools/bench/host-race.sh [OUTDIR]     (default bench/host-race)
# Environment: HOST_RACE_RUNS (20), HOST_RACE_MODES ("1024 max"; MiB/s, max = as fast as it
#   can), HOST_RACE_HEADROOM_MI (512: the threshold is set this far below memory.available at
#   start, so the hog crosses it after ~HEADROOM MiB), HOST_RACE_CAP_MI (1024: the hog never takes
#   more, whatever happens), HOST_RACE_SAMPLE_US (250), HOST_RACE_PREV (an evictd binary of the
#   previous release: every run is then made with both, ABBA: A B, B A, A B, ..., so that the
#   machine's other load falls on both alike), HOST_RACE_CHURN_RUNS (4 per binary; 0: none),
#   HOST_RACE_CHURN_MI (64), HOST_RACE_CHURN_MARGIN_MI (4), HOST_RACE_CHURN_S (10).
#   HOST_RACE_ARGS_NEW / HOST_RACE_ARGS_PREV: more evictd arguments for either; HOST_RACE_WRAP_NEW /
#   HOST_RACE_WRAP_PREV: a command prefix (e.g. HOST_RACE_PREV=build/evictd
#   HOST_RACE_ARGS_NEW=--realtime-priority=1 HOST_RACE_WRAP_PREV="nice -n -20" compares the two).
#
# Near-threshold churn: a workload maps, touches and unmaps CHURN_MI MiB for CHURN_S s as fast as
# it can (~1 GiB/s here), CHURN_MARGIN_MI above a threshold at its peak. The other work on the
# bench host moves memory.available by hundreds of MiB within seconds, so where the memory
# controller is on cgroup v1 the threshold that is approached is allocatableMemory.available:
# the workload is also put in a v1 memory cgroup <v1>/evictd-churn-PID/kubepods (evictd:
# --cgroup-root=/evictd-churn-PID) limited to 100 MiB + CHURN_MI + CHURN_MARGIN_MI, with
# memory.available<100Mi (its allocatable copy, DESIGN.md §2) that the node never nears; the
# BPF wake-ups still count every charge on the node. Elsewhere memory.available itself, with
# the threshold set CHURN_MI + CHURN_MARGIN_MI below it at the start. Measured per binary
# (ABBA again): evictd's CPU (/proc/PID/task/*/schedstat), its evaluations per second (evictctl
# status: one per batch of wake-ups), CPU per evaluation, and false kills: a kill while the
# sampler (250 us, SCHED_FIFO) never saw the signal below the threshold. A run the other load
# takes below it anyway is a real crossing, counted apart, and ends there (the rates are over
# the time it churned).
#
# The stage table (the current build only: the previous release does not log it) comes from
# evictd's "kill: detection path" line: the kernel time of the first ring-buffer record of the
# batch that led to the kill (A ends, B starts there: records that came while the loop had no
# CPU count as waiting, B) and of its last two (their gap: the rate limit or the step), when
# the handler ran, the signals were read, evaluated, ranked and cgroup.kill was written, all
# CLOCK_MONOTONIC as the sampler's crossing time. A is negative when the batch began before the
# crossing and its read saw it.
#
# evictd runs in standalone mode (--workload-root=<v2 mount>/evictd-hostrace-PID: only cgroups
# below it can ever be killed), BPF and PSI on, default housekeeping, OOM guard off (with this
# much memory it is irrelevant). The sampler (racekit sample) records memory.available as evictd
# computes it (cgroup v1 here when the memory controller is on v1: usage_in_bytes -
# total_inactive_file) every HOST_RACE_SAMPLE_US; the kill time is "cgroup empty" (sampler) minus
# evictd's own "empty N ms after the kill". The sampler runs SCHED_FIFO: on 2 CPUs shared with
# the hog and evictd, a SCHED_OTHER sampler was late by up to 5 ms at times (interval_max_us),
# and a late "empty" sample lands in the detection time. Other load on the machine moves memory.available
# too: a run whose crossing the hog did not cause is still timed from the crossing.
# Writes OUTDIR/runs.tsv and prints "host-race MODE: ..." lines. Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUTDIR=${1:-bench/host-race}
RUNS=${HOST_RACE_RUNS:-20}
MODES=${HOST_RACE_MODES:-"1024 max"}
HEADROOM=${HOST_RACE_HEADROOM_MI:-512}
CAP=${HOST_RACE_CAP_MI:-1024}
SAMPLE_US=${HOST_RACE_SAMPLE_US:-250}
PREV=${HOST_RACE_PREV:-}
CHURN_RUNS=${HOST_RACE_CHURN_RUNS:-4}
CHURN_MI=${HOST_RACE_CHURN_MI:-64}
CHURN_MARGIN=${HOST_RACE_CHURN_MARGIN_MI:-4}
CHURN_S=${HOST_RACE_CHURN_S:-10}
MiB=1048576
[ "$(id -u)" = 0 ] || { echo "host-race: needs root" >&2; exit 1; }
[ -x "$BUILD/evictd" ] || make -s "$BUILD/evictd"
[ -x "$BUILD/evictctl" ] || make -s "$BUILD/evictctl"
[ -z "$PREV" ] || [ -x "$PREV" ] || { echo "host-race: HOST_RACE_PREV=$PREV is not an executable" >&2; exit 1; }
racekit=$BUILD/bench/racekit
mkdir -p "$BUILD/bench" "$OUTDIR"
if [ ! -x "$racekit" ] || [ tools/bench/racekit.c -nt "$racekit" ]; then
	${CC:-gcc} -O2 -static -std=gnu11 -Wall -Wextra -Werror tools/bench/racekit.c -o "$racekit"
fi
# The builds compared, in ABBA order: "new" is $BUILD/evictd.
builds=(new); [ -n "$PREV" ] && builds=(new prev)
binary_of() { if [ "$1" = prev ]; then echo "$PREV"; else echo "$BUILD/evictd"; fi; }
read -r -a args_new <<<"${HOST_RACE_ARGS_NEW:-}"; read -r -a args_prev <<<"${HOST_RACE_ARGS_PREV:-}"
read -r -a wrap_new <<<"${HOST_RACE_WRAP_NEW:-}"; read -r -a wrap_prev <<<"${HOST_RACE_WRAP_PREV:-}"
# Run i's order: A B, B A, A B, ...
order_of() { if [ ${#builds[@]} -eq 1 ] || [ $(($1 % 2)) = 1 ]; then echo "${builds[@]}"; else echo prev new; fi; }

# Where memory.available comes from (as evictd detects it) and the v2 tree for the workloads.
v1=()
if [ ! -f /sys/fs/cgroup/memory.stat ] && [ -f /sys/fs/cgroup/memory/memory.usage_in_bytes ]; then
	v1=(--v1 /sys/fs/cgroup/memory)
fi
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then mnt=/sys/fs/cgroup; else mnt=/sys/fs/cgroup/unified; fi
[ -f "$mnt/cgroup.controllers" ] || { echo "host-race: no cgroup v2 tree" >&2; exit 1; }
root=$mnt/evictd-hostrace-$$
work=$(mktemp -d /tmp/evictd-hostrace.XXXXXX)
epid=""
cleanup() {
	[ -n "$epid" ] && kill "$epid" 2>/dev/null && wait "$epid" 2>/dev/null
	if [ -d "$root" ]; then
		for d in "$root"/*/; do [ -d "$d" ] && { echo 1 >"$d/cgroup.kill"; sleep 0.2; rmdir "$d"; }; done 2>/dev/null
		rmdir "$root" 2>/dev/null || true
	fi
	[ -n "${kp:-}" ] && { rmdir "$kp" "${kp%/kubepods}" 2>/dev/null || true; }
	cp "$work/evictd.log" "$OUTDIR/evictd.log" 2>/dev/null || true
	cp "$work/events.jsonl" "$OUTDIR/events.jsonl" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$root"

# evictd is started afresh for every run, with the threshold BELOW MiB below memory.available
# at that moment: the rest of the machine moves memory.available by hundreds of MiB over minutes.
# start_evictd BUILD BELOW_MIB [ARG...]: memory.available<(now - BELOW_MIB); BELOW_MIB "-": no
# threshold of its own, the ARGs give it.
start_evictd() {
	local threshold=()
	eval "$("$racekit" "${v1[@]}" avail)"
	if [ "$2" != - ]; then thr=$((avail - $2 * MiB)); threshold=(--eviction-hard="memory.available<$thr"); fi
	args=(--workload-root="$root" "${threshold[@]}" --oom-guard=off
		--metrics-address=off --control-socket="$work/sock" --event-log="$work/events.jsonl"
		--bpf-pin-dir=/sys/fs/bpf/evictd-hostrace-$$ --state-dir="$work" --kube-api=off "${@:3}")
	if [ "$1" = prev ]; then args+=("${args_prev[@]}"); wrap=("${wrap_prev[@]}"); else args+=("${args_new[@]}"); wrap=("${wrap_new[@]}"); fi
	: >"$work/evictd.run.log"
	"${wrap[@]}" "$(binary_of "$1")" "${args[@]}" >"$work/evictd.out" 2>"$work/evictd.run.log" &
	epid=$!
	for _ in $(seq 1 100); do grep -q 'evictd running' "$work/evictd.run.log" && break; sleep 0.05; done
	grep -q 'evictd running' "$work/evictd.run.log" || { echo "host-race: evictd ($1) did not start: $(tail -n 3 "$work/evictd.run.log")" >&2; exit 1; }
	sleep 0.5
}
stop_evictd() {
	kill "$epid" 2>/dev/null && wait "$epid" 2>/dev/null
	epid=""
	cat "$work/evictd.run.log" >>"$work/evictd.log"
}
# CPU time of evictd (all its threads), ns.
cpu_ns() { cat /proc/"$epid"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'; }
evaluations() { "$BUILD/evictctl" --socket "$work/sock" --json status 2>/dev/null | sed -n 's/.*"evaluations": *\([0-9]*\).*/\1/p'; }

for b in "${builds[@]}"; do
	start_evictd "$b" "$HEADROOM"
	[ "$b" = new ] && echo "# host-race: kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); memory.available $((avail / MiB)) MiB${v1:+ (cgroup v1)}; threshold HEADROOM_MI=$HEADROOM below it, set anew for every run; $RUNS runs per mode ($MODES)${PREV:+, each with both binaries in ABBA order}"
	echo "# host-race: $b = ${wrap[*]}${wrap:+ }$(binary_of "$b") ${args[*]}"
	echo "# host-race: $b: $(grep -m1 'evictd running' "$work/evictd.run.log" | sed 's/^[^ ]* //')"
	stop_evictd
done
exec 3>&2 2>/dev/null	# no "Killed" job notices for the hogs

printf 'build\tmode\trun\tfirst\tdetection_ms\tkill_ms\tovershoot_mib\trate_mibs\tinterval_max_us\tA_us\tgap_us\tB_us\tC_us\tD_us\tE_us\tF_us\tkept\n' >"$OUTDIR/runs.tsv"
k=0
for mode in $MODES; do
	rate=$mode; [ "$mode" = max ] && rate=0
	for i in $(seq 1 "$RUNS"); do
		for b in $(order_of "$i"); do
			k=$((k + 1))
			w=$root/w-$k
			mkdir "$w"
			sleep 0.3	# the last hog's memory is back
			start_evictd "$b" "$HEADROOM"
			"$racekit" "${v1[@]}" sample --cgroup "$w" --interval-us "$SAMPLE_US" --max-s 10 --tail-ms 100 --fifo 50 \
				--thr "$thr" >"$work/sample.out" &
			sp=$!
			sleep 0.05
			"$racekit" hog --cgroup "$w" --rate "$rate" --max "$CAP" --oom-score-adj 1000 >/dev/null 2>&1 &
			hp=$!
			wait "$sp" || true
			first=evictd
			if grep -q 'populated 1' "$w/cgroup.events"; then first=none; echo 1 >"$w/cgroup.kill"; fi
			wait "$hp" 2>/dev/null || true
			stop_evictd
			kill_ms=$(grep -F "kill: $w empty" "$work/evictd.run.log" | sed -n 's/.* empty \([0-9.]*\) ms after the kill.*/\1/p' | head -n1 || true)
			stages=$(grep -m1 'kill: detection path' "$work/evictd.run.log" | sed 's/.*(CLOCK_MONOTONIC ns): //' || true)
			[ -n "$kill_ms" ] || first=none
			awk -v build="$b" -v mode="$mode" -v run="$i" -v first="$first" -v km="${kill_ms:-NA}" -v thr="$thr" -v stages="$stages" '
				{ for (i = 1; i <= NF; i++) { n = index($i, "="); f[substr($i, 1, n - 1)] = substr($i, n + 1) + 0 } }
				END {
					det = "NA"; rate = "NA"
					if (first == "evictd" && f["t_cross"] > 0 && f["t_empty"] > 0)
						det = sprintf("%.3f", (f["t_empty"] - km * 1e6 - f["t_cross"]) / 1e6)
					if (f["t_cross"] > f["t_pop"] && f["t_pop"] > 0)
						rate = sprintf("%.0f", (f["avail_first"] - thr) / 1048576 / ((f["t_cross"] - f["t_pop"]) / 1e9))
					over = f["min_avail"] < thr ? sprintf("%.1f", (thr - f["min_avail"]) / 1048576) : "0.0"
					n = split(stages, kv, " ")
					for (i = 1; i <= n; i++) { j = index(kv[i], "="); s[substr(kv[i], 1, j - 1)] = substr(kv[i], j + 1) + 0 }
					st = "NA\tNA\tNA\tNA\tNA\tNA\tNA\tNA"
					if (first == "evictd" && s["write"] > 0 && f["t_cross"] > 0)
						st = sprintf("%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d",
							(s["first_record"] - f["t_cross"]) / 1e3, (s["record"] - s["previous_record"]) / 1e3,
							(s["handler"] - s["first_record"]) / 1e3, (s["read"] - s["handler"]) / 1e3,
							(s["evaluated"] - s["read"]) / 1e3, (s["ranked"] - s["evaluated"]) / 1e3,
							(s["write"] - s["ranked"]) / 1e3, s["kept_ranking"])
					printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", build, mode, run, first, det, km, over, rate, f["interval_max_us"], st
				}' "$work/sample.out" >>"$OUTDIR/runs.tsv"
			rmdir "$w" 2>/dev/null || { sleep 0.3; rmdir "$w" 2>/dev/null || true; }
		done
	done
done

# Near-threshold churn, ABBA over the builds.
kp=""; churn_v1=()
if [ ${#v1[@]} -gt 0 ]; then
	kp=${v1[1]}/evictd-churn-$$/kubepods
	mkdir -p "$kp"
	echo $(((100 + CHURN_MI + CHURN_MARGIN) * MiB)) >"$kp/memory.limit_in_bytes"
	churn_v1=(--v1-cgroup "$kp")
fi
printf 'build\trun\tseconds\tcpu_ms\tevaluations\tkilled\tcrossed\tmin_margin_mib\tchurn_mibs\n' >"$OUTDIR/churn.tsv"
for i in $(seq 1 "$CHURN_RUNS"); do
	for b in $(order_of "$i"); do
		k=$((k + 1))
		w=$root/churn-$k
		mkdir "$w"
		sleep 0.3
		if [ -n "$kp" ]; then
			# allocatableMemory.available = limit - kubepods' working set < 100Mi, sampled
			# as MemTotal - that working set < MemTotal - limit + 100Mi.
			start_evictd "$b" - --cgroup-root=/evictd-churn-$$ --eviction-hard='memory.available<100Mi'
			eval "$("$racekit" avail)"
			sthr=$((memtotal - (CHURN_MI + CHURN_MARGIN) * MiB))
			"$racekit" --v1 "$kp" sample --cgroup "$w" --interval-us 250 --max-s $((CHURN_S + 1)) --tail-ms 100 \
				--fifo 50 --thr "$sthr" >"$work/sample.out" &
		else
			start_evictd "$b" $((CHURN_MI + CHURN_MARGIN))
			sthr=$thr
			"$racekit" "${v1[@]}" sample --cgroup "$w" --interval-us 250 --max-s $((CHURN_S + 1)) --tail-ms 100 \
				--fifo 50 --thr "$sthr" >"$work/sample.out" &
		fi
		sp=$!
		sleep 0.05
		e0=$(evaluations); c0=$(cpu_ns); t0=$(date +%s%N)
		"$racekit" churn --cgroup "$w" "${churn_v1[@]}" --size "$CHURN_MI" --seconds "$CHURN_S" >"$work/churn.out" 2>/dev/null || true
		e1=$(evaluations); c1=$(cpu_ns); t1=$(date +%s%N)
		wait "$sp" || true
		killed=0; grep -qF "kill: $w" "$work/evictd.run.log" && killed=1
		stop_evictd
		awk -v build="$b" -v run="$i" -v secs="$(( (t1 - t0) / 1000000 ))" -v cpu="$(( (c1 - c0) / 1000 ))" \
		    -v ev="$(( ${e1:-0} - ${e0:-0} ))" -v killed="$killed" -v thr="$sthr" \
		    -v churn="$(sed -n 's/.*mib_per_s=\([0-9]*\).*/\1/p' "$work/churn.out")" '
			{ for (i = 1; i <= NF; i++) { n = index($i, "="); f[substr($i, 1, n - 1)] = substr($i, n + 1) + 0 } }
			END { printf "%s\t%s\t%.3f\t%.1f\t%d\t%d\t%d\t%.3f\t%s\n", build, run, secs / 1000, cpu / 1000, ev, killed,
				f["min_avail"] < thr, (f["min_avail"] - thr) / 1048576, churn == "" ? "NA" : churn }' "$work/sample.out" >>"$OUTDIR/churn.tsv"
		rmdir "$w" 2>/dev/null || { sleep 0.3; rmdir "$w" 2>/dev/null || true; }
	done
done

exec 2>&3
awk -F'\t' '
function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
function med(a, n) { if (!n) return "NA"; sortn(a, n); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function p95(a, n,   k) { if (!n) return "NA"; sortn(a, n); k = int(0.95 * n); if (k < 0.95 * n) k++; return a[k] }
function f0(x) { return x == "NA" ? x : sprintf("%.0f", x) }
function f1(x) { return x == "NA" ? x : sprintf("%.1f", x) }
function f2(x) { return x == "NA" ? x : sprintf("%.2f", x) }
NR == 1 { next }
{
    m = $1 SUBSEP $2; if (!(m in n)) { order[++nm] = m; bo[nm] = $1; mo[nm] = $2 }
    n[m]++; if ($4 == "evictd") won[m]++
    if ($5 != "NA") d[m, ++nd[m]] = $5 + 0
    if ($6 != "NA") kl[m, ++nk[m]] = $6 + 0
    o[m, ++no[m]] = $7 + 0
    if ($8 != "NA") r[m, ++nr[m]] = $8 + 0
}
END {
    for (x = 1; x <= nm; x++) {
        m = order[x]
        delete a; for (i = 1; i <= nd[m]; i++) a[i] = d[m, i]; dm = med(a, nd[m]); dp = p95(a, nd[m])
        delete a; for (i = 1; i <= nk[m]; i++) a[i] = kl[m, i]; km = med(a, nk[m]); kp = p95(a, nk[m])
        delete a; for (i = 1; i <= no[m]; i++) a[i] = o[m, i]; om = med(a, no[m]); op = p95(a, no[m])
        delete a; for (i = 1; i <= nr[m]; i++) a[i] = r[m, i]; rm = med(a, nr[m])
        printf "host-race%s %s: evictd killed %d/%d, achieved %s MiB/s; detection (crossing -> cgroup.kill) median %s ms, p95 %s ms; kill (cgroup.kill -> empty) median %s ms, p95 %s ms; overshoot median %s MiB, p95 %s MiB\n",
            bo[x] == "prev" ? "-prev" : "", mo[x] == "max" ? "as-fast-as-it-can" : mo[x] "MiBps", won[m] + 0, n[m], f0(rm), f2(dm), f2(dp), f1(km), f1(kp), f1(om), f1(op)
    }
}' "$OUTDIR/runs.tsv"
# The stage table (the current build, all modes): "host-race-stage NAME | median | p95 | share".
awk -F'\t' '
function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
function med(a, n) { if (!n) return "NA"; sortn(a, n); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function p95(a, n,   k) { if (!n) return "NA"; sortn(a, n); k = int(0.95 * n); if (k < 0.95 * n) k++; return a[k] }
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$1 == "new" && $(col["A_us"]) != "NA" {
    runs++; kept += $(col["kept"])
    for (c = 1; c <= 7; c++) { v = $(col[name[c]]) + 0; s[c, runs] = v; sum[c] += v }
    g[runs] = $(col["gap_us"]) + 0
    t = 0; for (c = 1; c <= 7; c++) if (c != 2) t += $(col[name[c]]); tot[runs] = t; total += t
}
BEGIN { split("A_us gap_us B_us C_us D_us E_us F_us", name, " ")
        split("A. crossing -> first ring-buffer record of the batch|  (gap between the last two records)|B. that record -> handler|C. signal reads|D. evaluate|E. rank (or the kept ranking)|F. before the write", label, "|") }
END {
    if (!runs) exit
    for (c = 1; c <= 7; c++) {
        delete a; for (i = 1; i <= runs; i++) a[i] = s[c, i]
        printf "host-race-stage %s | %.0f | %.0f | %s\n", label[c], med(a, runs), p95(a, runs), c == 2 ? "" : sprintf("%.0f%%", 100 * sum[c] / total)
    }
    delete a; for (i = 1; i <= runs; i++) a[i] = tot[i]
    printf "host-race-stage total (crossing -> cgroup.kill write, exact) | %.0f | %.0f | 100%% (%d runs; the kept ranking used in %d)\n", med(a, runs), p95(a, runs), runs, kept
}' "$OUTDIR/runs.tsv"
awk -F'\t' '
NR == 1 { next }
{ b = $1; if (!(b in n)) order[++nb] = b; n[b]++; secs[b] += $3; cpu[b] += $4; ev[b] += $5
  if ($6 == 1 && $7 == 0) fk[b]++; if ($6 == 1 && $7 == 1) rk[b]++; if ($7 == 1) cross[b]++
  if (!(b in mm) || $8 < mm[b]) mm[b] = $8; if ($9 != "NA") { ch[b] += $9; nch[b]++ } }
END { for (x = 1; x <= nb; x++) { b = order[x]
    printf "host-race-churn%s: %d runs, %.1f s each on average, churn %s MiB/s; evictd CPU %.1f ms/s, %.0f evaluations/s, %.0f us CPU per evaluation; false kills %d; runs the other load took below the threshold %d (killed in %d); closest margin %.1f MiB\n",
        b == "prev" ? "-prev" : "", n[b], secs[b] / n[b], nch[b] ? sprintf("%.0f", ch[b] / nch[b]) : "NA", cpu[b] / secs[b],
        ev[b] / secs[b], ev[b] ? cpu[b] * 1000 / ev[b] : 0, fk[b] + 0, cross[b] + 0, rk[b] + 0, mm[b] } }' "$OUTDIR/churn.tsv"
