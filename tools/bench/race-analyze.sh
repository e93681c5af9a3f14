#!/usr/bin/env bash
# race-analyze.sh OUTDIR - turn the memory race's raw guest output (OUTDIR/guest/runs.txt, written
# by tools/bench/memory-race-guest.sh) into OUTDIR/runs.tsv (one line per run), OUTDIR/summary.tsv
# and OUTDIR/summary.md (per contender and mode), then plot (tools/bench/plot.sh, OUTDIR.png).
#
# Per run, every time on the guest's CLOCK_MONOTONIC (sampler and ftrace share it):
#   cross      memory.available < X, interpolated between the sampler's last sample above and first
#              below (earlyoom, nohang: their own signal, MemAvailable below their threshold (the
#              same memory state for earlyoom and nohang-at-x, nohang's default 5% for nohang);
#              detection_vs_avail_ms keeps the memory.available crossing for them too;
#              systemd-oomd's signal is PSI, so its detection counts from memory.available's crossing)
#   act        the contender's first SIGKILL/SIGTERM to the hog (ftrace signal:signal_generate,
#              sender evictd/earlyoom): the decision taking effect
#   oom        the kernel OOM killer choosing a victim (oom:mark_victim)
#   empty      the pod cgroup becoming unpopulated (cgroup:cgroup_notify_populated val=0)
#   detection = act - cross; kill = empty - act (when the contender acted first; empty_from says
#              whether the traced event or, when the trace disagrees, the sampler gave "empty");
#   overshoot = X - the lowest memory.available sampled (0 when it never went below X);
#   first = contender | kernel | none (nobody acted within the run's time limit);
#   psi_full_ms = how long every task in kubepods stalled on memory during the run (the "full"
#              total of its memory.pressure: the signal systemd-oomd watches).
# Statistics: median, and p95 by nearest rank (with 10 runs, p95 is the largest value).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=${1:?usage: race-analyze.sh OUTDIR}
runs=$OUTDIR/guest/runs.txt
[ -f "$runs" ] || { echo "race-analyze: no $runs" >&2; exit 1; }

thr=$(sed -n 's/^guest .*threshold=\([0-9]*\).*/\1/p' "$runs")
[ -n "$thr" ] || { echo "race-analyze: no threshold in $runs" >&2; exit 1; }

# ---- per run --------------------------------------------------------------------------
awk -v thr="$thr" '
function v(k) { return (k in f) ? f[k] + 0 : -1 }
function ms(a, b) { return (a < 0 || b < 0) ? "NA" : sprintf("%.2f", (a - b) / 1e6) }
BEGIN {
    OFS = "\t"
    print "contender", "mode", "run", "slot", "rate_mibs", "first", "detection_ms", "detection_vs_avail_ms",
          "kill_ms", "kernel_kill_ms", "overshoot_mib", "min_avail_mib", "min_memavail_mib", "oom_kills",
          "t_pop", "t_cross", "t_act", "t_oom", "t_empty", "acted_by", "signal", "interval_med_us", "interval_max_us", "timeout", "empty_from", "delay_ms", "psi_full_ms"
}
/^run / {
    delete f
    for (i = 2; i <= NF; i++) { n = index($i, "="); f[substr($i, 1, n - 1)] = substr($i, n + 1) }
    c = f["c"]; cross = (c ~ /^(earlyoom|nohang)/) ? v("t_cross_ma") : v("t_cross")
    act = v("c_t"); oom = v("oom_t"); empty = v("e_t"); pop = v("t_pop")
    first = "none"
    if (act >= 0 && (oom < 0 || act < oom)) first = "contender"
    else if (oom >= 0) first = "kernel"
    rate = (v("t_cross") > 0 && pop > 0 && v("t_cross") > pop) ? sprintf("%.0f", (v("avail_first") - thr) / 1048576 / ((v("t_cross") - pop) / 1e9)) : "NA"
    det = (act >= 0 && cross > 0) ? ms(act, cross) : "NA"
    detx = (act >= 0 && v("t_cross") > 0) ? ms(act, v("t_cross")) : "NA"
    # "Empty" comes from the trace (cgroup_notify_populated) unless the sampler, which polls
    # cgroup.events every ~1 ms, disagrees by more than 10 ms: in a few runs per boot the traced
    # event is stamped 20-45 ms before the sampler still saw the pod populated with its memory in
    # use (even before the SIGKILL): a clock difference between the vCPUs under TCG. Those runs
    # use what the sampler saw (empty_from = sampler).
    src = "trace"
    if (v("t_empty") > 0 && (empty <= 0 || v("t_empty") - empty > 10e6 || empty - v("t_empty") > 2e6)) { empty = v("t_empty"); src = "sampler" }
    kill = (first == "contender" && empty > 0 && empty >= act) ? ms(empty, act) : "NA"
    kkill = (first == "kernel" && empty > 0) ? ms(empty, oom) : "NA"
    over = v("min_avail") < thr ? sprintf("%.1f", (thr - v("min_avail")) / 1048576) : "0.0"
    print c, f["mode"], f["i"], f["slot"], rate, first, det, detx, kill, kkill, over,
          sprintf("%.1f", v("min_avail") / 1048576), sprintf("%.1f", v("min_memavail") / 1048576), v("oom_n"),
          sprintf("%.0f", pop), sprintf("%.0f", cross), sprintf("%.0f", act), sprintf("%.0f", oom), sprintf("%.0f", empty), f["c_by"], f["c_sig"], f["interval_med_us"], f["interval_max_us"], f["timeout"], src, ("delay_ms" in f) ? f["delay_ms"] : 0, ("psi_full_ms" in f) ? f["psi_full_ms"] : "NA"
}' "$runs" >"$OUTDIR/runs.tsv"

# ---- per contender and mode --------------------------------------------------------------
awk -F'\t' '
function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
function med(a, n) { if (!n) return "NA"; sortn(a, n); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function p95(a, n,   k) { if (!n) return "NA"; sortn(a, n); k = int(0.95 * n); if (k < 0.95 * n) k++; return a[k] }
function fmt(x, d) { return x == "NA" ? "NA" : sprintf("%." d "f", x) }
NR == 1 { next }
{
    key = $1 SUBSEP $2
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    n[key]++
    if ($6 == "contender") won[key]++
    if ($6 == "kernel") lost[key]++
    if ($6 == "none") none[key]++
    if ($7 != "NA") det[key, ++nd[key]] = $7 + 0
    if ($9 != "NA") kill[key, ++nkl[key]] = $9 + 0
    over[key, ++no[key]] = $11 + 0
    if ($5 != "NA") rate[key, ++nr[key]] = $5 + 0
    oomk[key] += $14
    if ($27 != "NA" && $27 != "") { psi[key, ++np[key]] = $27 + 0 }
}
END {
    OFS = "\t"
    print "contender", "mode", "runs", "contender_first", "kernel_first", "none", "rate_mibs_median",
          "detection_ms_median", "detection_ms_p95", "detected_runs", "kill_ms_median", "kill_ms_p95",
          "overshoot_mib_median", "overshoot_mib_p95", "oom_kills", "psi_full_ms_median", "psi_full_ms_max"
    for (k = 1; k <= nk; k++) {
        key = order[k]; split(key, kp, SUBSEP)
        delete a; for (i = 1; i <= nd[key]; i++) a[i] = det[key, i]; dm = med(a, nd[key]); dp = p95(a, nd[key])
        delete a; for (i = 1; i <= nkl[key]; i++) a[i] = kill[key, i]; km = med(a, nkl[key]); kq = p95(a, nkl[key])
        delete a; for (i = 1; i <= no[key]; i++) a[i] = over[key, i]; om = med(a, no[key]); oq = p95(a, no[key])
        delete a; for (i = 1; i <= nr[key]; i++) a[i] = rate[key, i]; rm = med(a, nr[key])
        delete a; for (i = 1; i <= np[key]; i++) a[i] = psi[key, i]; pm = med(a, np[key]); px = np[key] ? a[np[key]] : "NA"
        print kp[1], kp[2], n[key], won[key] + 0, lost[key] + 0, none[key] + 0, fmt(rm, 0),
              fmt(dm, 2), fmt(dp, 2), nd[key] + 0, fmt(km, 2), fmt(kq, 2), fmt(om, 1), fmt(oq, 1), oomk[key] + 0, fmt(pm, 0), fmt(px, 0)
    }
}' "$OUTDIR/runs.tsv" >"$OUTDIR/summary.tsv"

# ---- the table -------------------------------------------------------------------------
awk -F'\t' -v thr="$thr" '
NR == 1 { next }
{ rows[NR] = $0; if ($1 == "evictd") ev[$2] = $8 }
END {
    printf "| contender | hog (achieved MiB/s) | acted first: contender / kernel OOM / nobody | detection ms median (p95) | detection × evictd | kill ms median (p95) | overshoot MiB median (p95) |\n"
    printf "|---|---|---|---|---|---|---|\n"
    for (r = 2; r <= NR; r++) {
        split(rows[r], x, "\t")
        mode = x[2] == "plateau" ? "plateau " x[7] " MiB/s, holds below X" : (x[2] == "max" ? "as fast as it can" : x[2] " MiB/s") " (" x[7] ")"
        det = x[8] == "NA" ? "—" : x[8] " (" x[9] ")" (x[10] < x[3] ? ", " x[10] " of " x[3] " runs" : "")
        ratio = (x[8] == "NA" || !(x[2] in ev) || ev[x[2]] == "NA" || ev[x[2]] <= 0) ? "—" : sprintf("%.0f×", x[8] / ev[x[2]])
        if (x[1] == "evictd") ratio = "1×"
        kill = x[11] == "NA" ? "—" : x[11] " (" x[12] ")"
        printf "| %s | %s | %s / %s / %s of %s | %s | %s | %s | %s (%s) |\n", x[1], mode, x[4], x[5], x[6], x[3], det, ratio, kill, x[13], x[14]
    }
}' "$OUTDIR/summary.tsv" >"$OUTDIR/summary.md"
n_fb=$(awk -F'\t' 'NR > 1 && $25 == "sampler"' "$OUTDIR/runs.tsv" | wc -l)
n_all=$(awk 'END { print NR - 1 }' "$OUTDIR/runs.tsv")
printf '\n"Empty" from the trace in %d of %d runs, from the sampler in %d (the trace disagreed with it by more than 10 ms; see race-analyze.sh).\n' \
	$((n_all - n_fb)) "$n_all" "$n_fb" >>"$OUTDIR/summary.md"
cat "$OUTDIR/summary.md"

tools/bench/plot.sh "$OUTDIR" "${OUTDIR%/}.png" || echo "race-analyze: plotting failed" >&2
