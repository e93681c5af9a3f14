#!/usr/bin/env bash
# plot.sh OUTDIR PNG - memory.available over time per contender in the memory race, one panel per
# hog mode, from OUTDIR/runs.tsv and OUTDIR/series/SLOT.txt (tools/bench/race-analyze.sh).
# Per contender and mode the plotted run is the typical one: when the kernel OOM killer won most
# runs, the first of those; otherwise the run whose detection latency is the median of the runs
# where the contender acted first. Time 0 = the hog started;
# a circle marks the contender's kill, a cross the kernel OOM killer's choice.
set -euo pipefail
OUTDIR=${1:?usage: plot.sh OUTDIR PNG}
PNG=${2:?usage: plot.sh OUTDIR PNG}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not installed (tools/install-deps.sh bench)" >&2; exit 1; }
thr=$(sed -n 's/^guest .*threshold=\([0-9]*\).*/\1/p' "$OUTDIR/guest/runs.txt")
thr_mib=$(awk -v t="$thr" 'BEGIN { printf "%.0f", t / 1048576 }')
pdir=$OUTDIR/plot
rm -rf "$pdir"
mkdir -p "$pdir"

# Representative run per contender and mode: slot, t_pop, t_act, t_oom.
awk -F'\t' '
NR == 1 { next }
{
    key = $1 "\t" $2
    if (!(key in first)) { first[key] = $0; order[++n] = key }
    runs[key]++
    if ($6 == "kernel" && !(key in kern)) kern[key] = $0
    if ($6 == "contender" && $7 != "NA") { k = ++nd[key]; det[key, k] = $7 + 0; row[key, k] = $0 }
}
END {
    for (i = 1; i <= n; i++) {
        key = order[i]; m = nd[key]; pick = first[key]
        # the typical outcome: a kernel OOM run when the kernel won most runs
        if (key in kern && 2 * m < runs[key]) { print kern[key]; continue }
        if (m) {
            # sort indices by detection, take the middle one
            for (a = 1; a <= m; a++) idx[a] = a
            for (a = 2; a <= m; a++) { t = idx[a]; for (b = a - 1; b >= 1 && det[key, idx[b]] > det[key, t]; b--) idx[b + 1] = idx[b]; idx[b + 1] = t }
            pick = row[key, idx[int((m + 1) / 2)]]
        }
        print pick
    }
}' "$OUTDIR/runs.tsv" >"$pdir/picks.tsv"

modes=()
while IFS=$'\t' read -r c mode run slot _ first _ _ _ _ _ _ _ _ t_pop _ t_act t_oom _; do
	[[ " ${modes[*]-} " == *" $mode "* ]] || modes+=("$mode")
	series=$OUTDIR/series/$slot.txt
	[ -s "$series" ] || continue
	awk -v p="$t_pop" '{ printf "%.4f %.1f\n", ($1 * 1000 - p) / 1e9, $2 / 1024 }' "$series" >"$pdir/$mode-$c.dat"
	# markers: at the kill / OOM time, at the last value sampled before it
	for what in act oom; do
		t=$t_act; [ $what = oom ] && t=$t_oom
		[ "$t" != -1 ] || continue
		awk -v p="$t_pop" -v t="$t" '$1 * 1000 <= t { y = $2 / 1024; found = 1 }
			END { if (found) printf "%.4f %.1f\n", (t - p) / 1e9, y }' "$series" >"$pdir/$mode-$c.$what"
	done
done <"$pdir/picks.tsv"

contenders=$(cut -f1 "$pdir/picks.tsv" | awk '!s[$0]++' | tr '\n' ' ')
n=${#modes[@]}
cols=2; rows=$(( (n + 1) / 2 ))
[ "$n" -gt 1 ] || cols=1
{
	echo "set terminal pngcairo size $((cols * 800)),$((rows * 560)) font 'sans,10'"
	echo "set output '$PNG'"
	echo "set multiplot layout $rows,$cols title 'memory race: memory.available (MiB) vs time since the hog started (s); threshold memory.available<${thr_mib}Mi; o = contender kills, x = kernel OOM kill' font 'sans,12'"
	echo "set grid"
	echo "set key below horizontal"
	echo "set ylabel 'memory.available (MiB)'"
	echo "set xlabel 'seconds since the hog started'"
	for mode in "${modes[@]}"; do
		case $mode in
			max) title="hog as fast as it can" ;;
			plateau) title="plateau: hog stops below the threshold (detection only)" ;;
			*) title="hog at $mode MiB/s" ;;
		esac
		echo "set title '$title'"
		plots=("$thr_mib with lines dt 2 lc rgb 'black' title 'threshold'")
		i=0
		for c in $contenders; do
			i=$((i + 1))
			f=$pdir/$mode-$c.dat
			[ -s "$f" ] || continue
			plots+=("'$f' using 1:2 with lines lw 1.5 lc $i title '$c'")
			[ -s "$pdir/$mode-$c.act" ] && plots+=("'$pdir/$mode-$c.act' using 1:2 with points pt 6 ps 1.6 lc $i notitle")
			[ -s "$pdir/$mode-$c.oom" ] && plots+=("'$pdir/$mode-$c.oom' using 1:2 with points pt 2 ps 2 lw 2 lc $i notitle")
		done
		(IFS=,; echo "plot ${plots[*]}")
	done
	echo "unset multiplot"
} >"$pdir/plot.gp"
gnuplot "$pdir/plot.gp"
echo "plot: wrote $PNG"
