#!/usr/bin/env bash
# host-race.sh - evictd's detection latency on this machine (no emulation): threshold crossing
# of memory.available -> cgroup.kill, with a hog in a standalone workload cgroup.
#
# Usage: tools/bench/host-race.sh [OUTDIR]     (default bench/host-race)
# Environment: HOST_RACE_RUNS (20), HOST_RACE_MODES ("1024 max"; MiB/s, max = as fast as it
#   can), HOST_RACE_HEADROOM_MI (512: the threshold is set this far below memory.available at
#   start, so the hog crosses it after ~HEADROOM MiB), HOST_RACE_CAP_MI (1024: the hog never takes
#   more, whatever happens), HOST_RACE_SAMPLE_US (250).
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
MiB=1048576
[ "$(id -u)" = 0 ] || { echo "host-race: needs root" >&2; exit 1; }
[ -x "$BUILD/evictd" ] || make -s "$BUILD/evictd"
racekit=$BUILD/bench/racekit
mkdir -p "$BUILD/bench" "$OUTDIR"
if [ ! -x "$racekit" ] || [ tools/bench/racekit.c -nt "$racekit" ]; then
	${CC:-gcc} -O2 -static -std=gnu11 -Wall -Wextra -Werror tools/bench/racekit.c -o "$racekit"
fi

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
	cp "$work/evictd.log" "$OUTDIR/evictd.log" 2>/dev/null || true
	cp "$work/events.jsonl" "$OUTDIR/events.jsonl" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$root"

# evictd is started afresh for every run, with the threshold HEADROOM below memory.available
# at that moment: the rest of the machine moves memory.available by hundreds of MiB over minutes.
start_evictd() {
	eval "$("$racekit" "${v1[@]}" avail)"
	thr=$((avail - HEADROOM * MiB))
	args=(--workload-root="$root" --eviction-hard="memory.available<$thr" --oom-guard=off
		--metrics-address=off --control-socket="$work/sock" --event-log="$work/events.jsonl"
		--bpf-pin-dir=/sys/fs/bpf/evictd-hostrace-$$ --state-dir="$work" --kube-api=off)
	: >"$work/evictd.run.log"
	"$BUILD/evictd" "${args[@]}" >"$work/evictd.out" 2>"$work/evictd.run.log" &
	epid=$!
	for _ in $(seq 1 100); do grep -q 'evictd running' "$work/evictd.run.log" && break; sleep 0.05; done
	grep -q 'evictd running' "$work/evictd.run.log" || { echo "host-race: evictd did not start: $(tail -n 3 "$work/evictd.run.log")" >&2; exit 1; }
	sleep 0.5
}
stop_evictd() {
	kill "$epid" 2>/dev/null && wait "$epid" 2>/dev/null
	epid=""
	cat "$work/evictd.run.log" >>"$work/evictd.log"
}
start_evictd
echo "# host-race: kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); memory.available $((avail / MiB)) MiB${v1:+ (cgroup v1)}; threshold HEADROOM_MI=$HEADROOM below it, set anew for every run; $RUNS runs per mode ($MODES)"
echo "# host-race: $BUILD/evictd ${args[*]}"
echo "# host-race: $(grep -m1 'evictd running' "$work/evictd.run.log" | sed 's/^[^ ]* //')"
stop_evictd
exec 3>&2 2>/dev/null	# no "Killed" job notices for the hogs

printf 'mode\trun\tfirst\tdetection_ms\tkill_ms\tovershoot_mib\trate_mibs\tinterval_max_us\n' >"$OUTDIR/runs.tsv"
k=0
for mode in $MODES; do
	rate=$mode; [ "$mode" = max ] && rate=0
	for i in $(seq 1 "$RUNS"); do
		k=$((k + 1))
		w=$root/w-$k
		mkdir "$w"
		sleep 0.3	# the last hog's memory is back
		start_evictd
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
		kill_ms=$(grep -F "kill: $w empty" "$work/evictd.run.log" | sed -n 's/.* empty \([0-9.]*\) ms after the kill.*/\1/p' | head -n1)
		[ -n "$kill_ms" ] || first=none
		awk -v mode="$mode" -v run="$i" -v first="$first" -v km="${kill_ms:-NA}" -v thr="$thr" '
			{ for (i = 1; i <= NF; i++) { n = index($i, "="); f[substr($i, 1, n - 1)] = substr($i, n + 1) + 0 } }
			END {
				det = "NA"; rate = "NA"
				if (first == "evictd" && f["t_cross"] > 0 && f["t_empty"] > 0)
					det = sprintf("%.3f", (f["t_empty"] - km * 1e6 - f["t_cross"]) / 1e6)
				if (f["t_cross"] > f["t_pop"] && f["t_pop"] > 0)
					rate = sprintf("%.0f", (f["avail_first"] - thr) / 1048576 / ((f["t_cross"] - f["t_pop"]) / 1e9))
				over = f["min_avail"] < thr ? sprintf("%.1f", (thr - f["min_avail"]) / 1048576) : "0.0"
				printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", mode, run, first, det, km, over, rate, f["interval_max_us"]
			}' "$work/sample.out" >>"$OUTDIR/runs.tsv"
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
    m = $1; if (!(m in n)) order[++nm] = m
    n[m]++; if ($3 == "evictd") won[m]++
    if ($4 != "NA") d[m, ++nd[m]] = $4 + 0
    if ($5 != "NA") kl[m, ++nk[m]] = $5 + 0
    o[m, ++no[m]] = $6 + 0
    if ($7 != "NA") r[m, ++nr[m]] = $7 + 0
}
END {
    for (x = 1; x <= nm; x++) {
        m = order[x]
        delete a; for (i = 1; i <= nd[m]; i++) a[i] = d[m, i]; dm = med(a, nd[m]); dp = p95(a, nd[m])
        delete a; for (i = 1; i <= nk[m]; i++) a[i] = kl[m, i]; km = med(a, nk[m]); kp = p95(a, nk[m])
        delete a; for (i = 1; i <= no[m]; i++) a[i] = o[m, i]; om = med(a, no[m]); op = p95(a, no[m])
        delete a; for (i = 1; i <= nr[m]; i++) a[i] = r[m, i]; rm = med(a, nr[m])
        printf "host-race %s: evictd killed %d/%d, achieved %s MiB/s; detection (crossing -> cgroup.kill) median %s ms, p95 %s ms; kill (cgroup.kill -> empty) median %s ms, p95 %s ms; overshoot median %s MiB, p95 %s MiB\n",
            m == "max" ? "as-fast-as-it-can" : m "MiBps", won[m] + 0, n[m], f0(rm), f2(dm), f2(dp), f1(km), f1(kp), f1(om), f1(op)
    }
}' "$OUTDIR/runs.tsv"
